//! Indexing and composed ops on the GPU against the CPU: `gather` and
//! `scatter_add` (raw CUDA kernels, `ops/src/index.cu`) at sizes past one block of
//! threads and on strided views, and the functions that are not one registered op
//! (which `ops_parity`, driven by the registry, does not see): the comparisons,
//! `argmax`/`argmin`, `stack`, `flatten`, `reshape_infer`, `dot`, `embedding`,
//! `dropout` (the same seed gives the same mask on both devices) and `layer_norm`
//! with its weight and bias.

use crate::gpu;
use autograd::ops;
use autograd::prelude::*;

type Op = Box<dyn Fn(&[Tensor]) -> Result<Tensor>>;

/// The output and (when it requires grad) the gradient of `Σ y · r` for every
/// input marked in `grads`, on `device`, on the host.
fn run(f: &Op, inputs: &[Tensor], grads: &[bool], device: Device) -> Vec<Vec<f64>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .zip(grads)
        .map(|(t, &g)| t.to(device).unwrap().detach().with_requires_grad(g))
        .collect();
    let y = f(&leaves).unwrap();
    assert_eq!(y.device(), device);
    let refs: Vec<&Tensor> = if y.requires_grad() {
        leaves.iter().filter(|t| t.requires_grad()).collect()
    } else {
        Vec::new()
    };
    crate::output_and_grads(&y, &refs)
}

/// Index values (`i64`, moved to the device with the data, as PyTorch's):
/// `n` positions below `size`, a fixed scramble with repeats.
fn positions(shape: &[usize], size: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n).map(|i| ((i * 7919 + 13) % size) as i64).collect();
    Tensor::from_slice(&v, shape).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn new_ops_on_the_gpu_match_the_cpu() {
    let dev = gpu();
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
        let mut rng = Rng::new(9);
        let mut u = |s: &[usize]| rng.uniform(s, -1.0, 1.0, dtype).unwrap();
        let cases: Vec<(&str, Vec<Tensor>, Vec<bool>, Op)> = vec![
            (
                "gather axis 1 of a transposed x",
                vec![u(&[40, 300]), positions(&[300, 30], 40)],
                vec![true, false],
                Box::new(|v| ops::gather(&v[0].t()?, &v[1], 1)),
            ),
            (
                "gather axis 0, index smaller off the axis",
                vec![u(&[7, 5, 90]), positions(&[20, 4, 90], 7)],
                vec![true, false],
                Box::new(|v| ops::gather(&v[0], &v[1], 0)),
            ),
            (
                "scatter_add axis 1, src larger than the index",
                vec![u(&[300, 6]), positions(&[300, 9], 6), u(&[301, 10])],
                vec![true, false, true],
                Box::new(|v| ops::scatter_add(&v[0], &v[1], &v[2], 1)),
            ),
            (
                "scatter_add axis 0 of a strided index",
                vec![u(&[5, 600]), positions(&[600, 8], 5), u(&[8, 600])],
                vec![true, false, true],
                Box::new(|v| ops::scatter_add(&v[0], &v[1].t()?, &v[2], 0)),
            ),
            (
                "cumsum, both ways",
                vec![u(&[3, 300, 2])],
                vec![true],
                Box::new(|v| ops::cumsum(&v[0], 1, false)? + ops::cumsum(&v[0], 1, true)?),
            ),
            (
                "var and std_dev",
                vec![u(&[5, 40])],
                vec![true],
                Box::new(|v| ops::var(&v[0], 1, 1, false)? + ops::std_dev(&v[0], 1, 0, false)?),
            ),
            (
                "max_all times min_all",
                vec![u(&[30, 20])],
                vec![true],
                Box::new(|v| ops::max_all(&v[0])? * ops::min_all(&v[0])?),
            ),
            (
                "comparisons",
                vec![u(&[30, 20]), u(&[20])],
                vec![false, false],
                Box::new(|v| {
                    // bool masks on the device, as numbers of the operands' dtype.
                    let (a, b) = (&v[0], &v[1]);
                    let n = |m: Tensor| m.to_dtype(a.dtype());
                    let s = (n(ops::eq(a, a)?)? + n(ops::ne(a, b)?)?.mul_scalar(2.0)?)?;
                    let s = (s + n(ops::lt(a, b)?)?.mul_scalar(4.0)?)?;
                    let s = (s + n(ops::le(a, b)?)?.mul_scalar(8.0)?)?;
                    (s + n(ops::gt(a, b)?)?.mul_scalar(16.0)?)?
                        + n(ops::ge(a, b)?)?.mul_scalar(32.0)?
                }),
            ),
            (
                "argmax and argmin",
                vec![u(&[25, 25])],
                vec![false],
                Box::new(|v| ops::argmax(&v[0], 1, false)? + ops::argmin(&v[0], 0, false)?),
            ),
            (
                "stack, flatten, reshape_infer, dot",
                vec![u(&[4, 6]), u(&[4, 6]), u(&[24])],
                vec![true, true, true],
                Box::new(|v| {
                    let s = ops::stack(&[&v[0], &v[1]], 1)?;
                    let f = ops::flatten(&s, 0, -1)?;
                    ops::dot(&ops::reshape_infer(&f, &[2, -1])?.sum(0, false)?, &v[2])
                }),
            ),
            (
                "matmul with vectors",
                vec![u(&[3, 70, 50]), u(&[50]), u(&[70])],
                vec![true, true, true],
                Box::new(|v| ops::matmul(&v[2], &ops::matmul(&v[0], &v[1])?.t()?)),
            ),
            (
                "embedding",
                vec![u(&[50, 8]), positions(&[6, 70], 50)],
                vec![true, false],
                Box::new(|v| ops::embedding(&v[0], &v[1])),
            ),
            (
                "dropout",
                vec![u(&[40, 30])],
                vec![true],
                Box::new(|v| ops::dropout(&v[0], 0.4, true, &mut Rng::new(3))),
            ),
            (
                "layer_norm with weight and bias",
                vec![u(&[20, 300]), u(&[300]), u(&[300])],
                vec![true, true, true],
                Box::new(|v| ops::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5)),
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
