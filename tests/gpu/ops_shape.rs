//! Issue 37's shape compositions on the GPU against the CPU: `transpose(d0, d1)`,
//! `split`/`chunk`, `flip`, `roll`, `repeat`, `tile`, `expand`, `outer`, `einsum`,
//! `interpolate` (whose bilinear weights are constants moved to the device),
//! `embedding_with` (`padding_idx`, `max_norm` rescaling a device tensor in place)
//! and `layer_norm_shape`. None is one registered op, so `ops_parity` (driven by
//! the registry) does not see them.

use crate::gpu;
use autograd::ops::{self, EmbeddingOptions, InterpolateMode, InterpolateSize};
use autograd::prelude::*;

type Op = Box<dyn Fn(&[Tensor]) -> Result<Tensor>>;

/// The output and the gradient of `Σ y · r` for every input marked in `grads`,
/// on `device`, on the host.
fn run(f: &Op, inputs: &[Tensor], grads: &[bool], device: Device) -> Vec<Vec<f64>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .zip(grads)
        .map(|(t, &g)| t.to(device).unwrap().detach().with_requires_grad(g))
        .collect();
    let y = f(&leaves).unwrap();
    assert_eq!(y.device(), device);
    let refs: Vec<&Tensor> = leaves.iter().filter(|t| t.requires_grad()).collect();
    let mut out = crate::output_and_grads(&y, &refs);
    // What `max_norm` left in the weight (an input rescaled in place).
    out.push(leaves[0].to_vec::<f64>().unwrap());
    out
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn shape_compositions_on_the_gpu_match_the_cpu() {
    let dev = gpu();
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
        let mut rng = Rng::new(37);
        let mut u = |s: &[usize]| rng.uniform(s, -1.0, 1.0, dtype).unwrap();
        let idx = Tensor::from_slice(&[3i64, 0, 7, 3, 9, 1], [2, 3]).unwrap();
        let cases: Vec<(&str, Vec<Tensor>, Vec<bool>, Op)> = vec![
            (
                "transpose, split, chunk, flip, roll",
                vec![u(&[6, 5, 40])],
                vec![true],
                Box::new(|v| {
                    let x = v[0].transpose(0, -1)?.flip(&[1])?.roll(&[3, -2], &[0, 2])?;
                    let parts = x.split(7, 0)?;
                    let halves = parts[1].chunk(2, -1)?;
                    ops::concat(&halves[0], &halves[1].mul_scalar(2.0)?, 1)
                }),
            ),
            (
                "repeat, tile, expand, outer",
                vec![u(&[3, 1, 50]), u(&[20]), u(&[30])],
                vec![true, true, true],
                Box::new(|v| {
                    let a = v[0].repeat(&[2, 1, 4, 1])?.tile(&[1, 1, 1, 2])?; // [2, 3, 4, 100]
                    let b = v[0].expand(&[2, 3, 4, -1])?; // [2, 3, 4, 50]
                    let o = v[1].outer(&v[2])?.sum_all()?;
                    (a.sum(-1, false)? * b.sum(-1, false)?)? * o
                }),
            ),
            (
                "einsum attention",
                vec![u(&[2, 3, 40, 16]), u(&[2, 3, 50, 16]), u(&[2, 3, 50, 16])],
                vec![true, true, true],
                Box::new(|v| {
                    let s = ops::einsum("bhqd,bhkd->bhqk", &[&v[0], &v[1]])?;
                    let p = ops::softmax(&s, -1)?;
                    ops::einsum("bhqk,bhkd->bhqd", &[&p, &v[2]])
                }),
            ),
            (
                "interpolate nearest and bilinear",
                vec![u(&[2, 3, 17, 23])],
                vec![true],
                Box::new(|v| {
                    let n = ops::interpolate(
                        &v[0],
                        InterpolateSize::ScaleFactor(1.7, 0.6),
                        InterpolateMode::Nearest,
                    )?; // [2, 3, 28, 13]
                    let b = ops::interpolate(
                        &v[0],
                        InterpolateSize::Size(28, 13),
                        InterpolateMode::Bilinear {
                            align_corners: false,
                        },
                    )?;
                    let c = ops::interpolate(
                        &v[0],
                        InterpolateSize::Size(28, 13),
                        InterpolateMode::Bilinear {
                            align_corners: true,
                        },
                    )?;
                    (n + b)? + c
                }),
            ),
            (
                "embedding padding_idx and max_norm",
                vec![u(&[10, 6])],
                vec![true],
                Box::new(move |v| {
                    let opts = EmbeddingOptions {
                        padding_idx: Some(3),
                        max_norm: Some(0.8),
                        ..Default::default()
                    };
                    ops::embedding_with(&mut v[0].clone(), &idx, &opts)
                }),
            ),
            (
                "layer_norm over two axes",
                vec![u(&[5, 6, 70]), u(&[6, 70]), u(&[6, 70])],
                vec![true, true, true],
                Box::new(|v| {
                    ops::layer_norm_shape(&v[0], &[6, 70], Some(&v[1]), Some(&v[2]), 1e-5)
                }),
            ),
        ];
        for (name, inputs, grads, f) in &cases {
            let cpu = run(f, inputs, grads, Device::Cpu);
            let gpu = run(f, inputs, grads, dev);
            assert_eq!(cpu.len(), gpu.len(), "{name}");
            for (i, (c, g)) in cpu.iter().zip(&gpu).enumerate() {
                let what = format!("{name} {dtype}, result {i} (0: output, then gradients)");
                crate::compare(&what, c, g, (tol, tol)).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
