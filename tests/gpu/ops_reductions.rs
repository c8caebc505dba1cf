//! The reductions, selections, masks, scatters and sampling of issue 37 that are
//! not one registered op (`ops_parity`, driven by the registry, sees `prod`,
//! `cumprod` and `logcumsumexp`) on the GPU against the CPU: values, positions and
//! gradients. Their positions are computed on the host, so the GPU must give the
//! CPU's exactly; the values move through the device's own kernels.

use crate::gpu;
use autograd::ops;
use autograd::ops::{NormOrd, ScatterReduce};
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

/// Index values (`i64`): `n` positions below `size`, a fixed scramble with repeats.
fn positions(shape: &[usize], size: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n).map(|i| ((i * 7919 + 13) % size) as i64).collect();
    Tensor::from_slice(&v, shape).unwrap()
}

/// Positions as values of `like`'s dtype, to add to a result.
fn as_values(index: &Tensor, like: &Tensor) -> Result<Tensor> {
    index.to_dtype(like.dtype())
}

#[test]
#[ignore = "needs a CUDA GPU (or the emulated device)"]
fn reductions_selections_and_scatters_on_the_gpu_match_the_cpu() {
    let dev = gpu();
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
        let mut rng = Rng::new(37);
        let mut u = |s: &[usize]| rng.uniform(s, 0.5, 1.5, dtype).unwrap();
        let cases: Vec<(&str, Vec<Tensor>, Vec<bool>, Op)> = vec![
            (
                "prod_all, mean_axes, var_axes, std_dev_axes",
                vec![u(&[3, 4, 5])],
                vec![true],
                Box::new(|v| {
                    let x = &v[0];
                    let a = ops::mean_axes(x, &[0, 2], false)?;
                    let b = ops::var_axes(x, &[2, 0], 1, false)?;
                    let c = ops::std_dev_axes(x, &[], 0, false)?;
                    (a + b)?.sum_all()? + (c * ops::prod_all(&x.narrow(2, 0, 2)?)?)?
                }),
            ),
            (
                "argmax_all, max_with_indices, min_with_indices",
                vec![u(&[30, 20])],
                vec![true],
                Box::new(|v| {
                    let x = &v[0];
                    let (mx, i) = ops::max_with_indices(x, 1, false)?;
                    let (mn, j) = ops::min_with_indices(x, 0, true)?;
                    let pos = (as_values(&i, x)?.sum_all()? + as_values(&j, x)?.sum_all()?)?;
                    let pos = (pos + as_values(&ops::argmax_all(x)?, x)?)?;
                    (mx.sum_all()? * mn.sum_all()?)? + pos
                }),
            ),
            (
                "sort, argsort, topk",
                vec![u(&[7, 40])],
                vec![true],
                Box::new(|v| {
                    let x = &v[0];
                    let (s, i) = ops::sort(x, 1, true)?;
                    let (t, j) = ops::topk(x, 5, 0, false, true)?;
                    let a = ops::argsort(x, 0, false)?;
                    let pos = (as_values(&i, x)?.sum_all()? + as_values(&j, x)?.sum_all()?)?;
                    let pos = (pos + as_values(&a, x)?.sum_all()?)?;
                    (s.narrow(1, 0, 5)?.t()? * t.narrow(1, 0, 7)?)?.sum_all()? + pos
                }),
            ),
            (
                "norms",
                vec![u(&[6, 30])],
                vec![true],
                Box::new(|v| {
                    let x = &v[0];
                    let mut y = ops::norm(x, NormOrd::L1, &[1], false)?;
                    for ord in [NormOrd::L2, NormOrd::Inf, NormOrd::Frobenius] {
                        y = (y + ops::norm(x, ord, &[1], false)?)?;
                    }
                    Ok(y)
                }),
            ),
            (
                "masked_fill, tril, triu",
                vec![u(&[3, 20, 30])],
                vec![true],
                Box::new(|v| {
                    let x = &v[0];
                    let m = ops::gt(&x.narrow(0, 0, 1)?, &x.narrow(0, 1, 1)?)?;
                    let y = ops::masked_fill(x, &m, -0.5)?;
                    ops::tril(&y, 2)? + ops::triu(&y, -3)?
                }),
            ),
            (
                "scatter, scatter_value",
                vec![u(&[40, 6]), positions(&[30, 6], 40), u(&[31, 7])],
                vec![true, false, true],
                Box::new(|v| {
                    let s = ops::scatter(&v[0], &v[1], &v[2], 0)?;
                    ops::scatter_value(&s, &v[1].narrow(0, 0, 3)?, 2.5, 0)
                }),
            ),
            (
                "scatter_reduce, every reduction",
                vec![u(&[9, 5]), positions(&[40, 5], 9), u(&[40, 5])],
                vec![true, false, true],
                Box::new(|v| {
                    let mut y = v[0].clone();
                    for (k, reduce) in [
                        ScatterReduce::Sum,
                        ScatterReduce::Prod,
                        ScatterReduce::Mean,
                        ScatterReduce::Amax,
                        ScatterReduce::Amin,
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        let r = ops::scatter_reduce(&v[0], &v[1], &v[2], 0, reduce, k % 2 == 0)?;
                        y = (y + r)?;
                    }
                    Ok(y)
                }),
            ),
            (
                "index_put, both ways",
                vec![
                    u(&[8, 5, 3]),
                    positions(&[12], 8),
                    positions(&[12], 5),
                    u(&[3]),
                ],
                vec![true, false, false, true],
                Box::new(|v| {
                    let a = ops::index_put(&v[0], &[&v[1], &v[2]], &v[3], false)?;
                    ops::index_put(&a, &[&v[2]], &v[3], true)
                }),
            ),
            (
                "multinomial, the same samples for a seed",
                vec![u(&[6, 9])],
                vec![false],
                Box::new(|v| {
                    let a = ops::multinomial(&v[0], 20, true, &mut Rng::new(4))?;
                    let b = ops::multinomial(&v[0], 9, false, &mut Rng::new(5))?;
                    as_values(&a, &v[0])?.sum(1, false)? + as_values(&b, &v[0])?.sum(1, false)?
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
