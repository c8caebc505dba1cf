//! The CPU kernels on several threads give the same bits as on one: matrix
//! products, convolution, pooling and indexing, forward and backward, on 1, 2, 3
//! and 8 threads, with every job large enough to split (the work threshold lowered
//! to 0) and tensors large enough to make several pieces.

use autograd_core::random::Rng;
use autograd_core::{DType, Result, Tensor, compute, parallel};
use autograd_ops as ops;
use std::sync::Mutex;

/// Serialises the tests of this binary: the thread count is global.
static LOCK: Mutex<()> = Mutex::new(());

fn bits(t: &Tensor) -> Vec<u64> {
    t.to_vec::<f64>()
        .expect("readable tensor")
        .into_iter()
        .map(f64::to_bits)
        .collect()
}

/// Runs `f` on 1, 2, 3 and 8 threads (every job on the pool) and checks that the
/// tensors it returns are the same bits each time.
fn same_bits(name: &str, f: impl Fn(DType) -> Result<Vec<Tensor>>) {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    parallel::set_min_parallel_work(0);
    for dtype in [DType::F32, DType::F64] {
        parallel::set_num_threads(1).unwrap();
        let want: Vec<_> = f(dtype).unwrap().iter().map(bits).collect();
        for threads in [2, 3, 8] {
            parallel::set_num_threads(threads).unwrap();
            let got: Vec<_> = f(dtype).unwrap().iter().map(bits).collect();
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    g == w,
                    "{name} {dtype:?}: output {k} differs on {threads} threads"
                );
            }
        }
    }
    parallel::set_min_parallel_work(parallel::MIN_PARALLEL_WORK);
    parallel::set_num_threads(1).unwrap();
}

fn uniform(seed: u64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Rng::new(seed).uniform(shape.to_vec(), -1.0, 1.0, dtype)
}

/// A leaf that wants its gradient.
fn leaf(seed: u64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Ok(uniform(seed, shape, dtype)?.with_requires_grad(true))
}

/// Positions in 0..n (`i64`) with repeats, of shape `shape`.
fn values(seed: u64, shape: &[usize], n: usize) -> Result<Tensor> {
    let mut rng = Rng::new(seed);
    let len = shape.iter().product();
    let v: Vec<i64> = (0..len)
        .map(|_| (rng.uniform_f64(0.0, n as f64) as usize).min(n - 1) as i64)
        .collect();
    Tensor::from_vec(v, shape.to_vec())
}

/// `y`, then the gradients of `sum(y * r)` (r a fixed random tensor of `y`'s shape)
/// for each of `wrt`.
fn with_grads(y: Tensor, wrt: &[&Tensor], seed: u64) -> Result<Vec<Tensor>> {
    let r = uniform(seed, y.dims(), y.dtype())?;
    let loss = ops::sum_all(&ops::mul(&y, &r)?)?;
    loss.backward()?;
    let mut out = vec![y.detach()];
    for t in wrt {
        out.push(t.grad().expect("a gradient"));
    }
    Ok(out)
}

#[test]
fn matrix_products() {
    same_bits("matmul", |dt| {
        let mut out = Vec::new();
        // Plain, and large enough for gemm's own threads.
        let (a, b) = (leaf(1, &[70, 130], dt)?, leaf(2, &[130, 90], dt)?);
        out.extend(with_grads(ops::matmul(&a, &b)?, &[&a, &b], 3)?);
        let (a, b) = (leaf(4, &[64, 784], dt)?, leaf(5, &[784, 256], dt)?);
        out.extend(with_grads(ops::matmul(&a, &b)?, &[&a, &b], 6)?);
        // Batched: many small products (attention-like).
        let (a, b) = (leaf(7, &[32, 33, 17], dt)?, leaf(8, &[32, 17, 29], dt)?);
        out.extend(with_grads(ops::matmul(&a, &b)?, &[&a, &b], 9)?);
        // A batch axis broadcast, and a transposed operand.
        let (a, b) = (leaf(10, &[4, 3, 20, 30], dt)?, leaf(11, &[3, 25, 30], dt)?);
        let y = ops::matmul(&a, &ops::transpose(&b, -2, -1)?)?;
        out.extend(with_grads(y, &[&a, &b], 12)?);
        let (a, b) = (leaf(13, &[150, 61], dt)?, leaf(14, &[150, 77], dt)?);
        out.extend(with_grads(
            ops::matmul(&ops::transpose(&a, -2, -1)?, &b)?,
            &[&a, &b],
            15,
        )?);
        Ok(out)
    });
}

#[test]
fn convolution_forward_and_backward() {
    same_bits("conv2d", |dt| {
        let mut out = Vec::new();
        for (i, (stride, padding, dilation, groups)) in [
            ((1, 1), (0, 0), (1, 1), 1),
            ((2, 1), (1, 2), (1, 1), 1),
            ((1, 2), (2, 1), (2, 2), 2),
            ((3, 3), (1, 1), (1, 1), 4),
        ]
        .into_iter()
        .enumerate()
        {
            let s = 10 * i as u64;
            let x = leaf(s + 1, &[3, 4, 40, 44], dt)?;
            let w = leaf(s + 2, &[8, 4 / groups, 3, 3], dt)?;
            let b = leaf(s + 3, &[8], dt)?;
            let y = ops::conv2d(
                &x,
                &w,
                Some(&b),
                ops::Conv2dOptions {
                    stride,
                    padding,
                    dilation,
                    groups,
                },
            )?;
            out.extend(with_grads(y, &[&x, &w, &b], s + 4)?);
        }
        Ok(out)
    });
}

#[test]
fn pooling_forward_and_backward() {
    same_bits("pool2d", |dt| {
        let mut out = Vec::new();
        for (i, (kernel, stride, padding)) in [
            ((3, 3), (2, 2), (1, 1)),
            ((2, 2), (2, 2), (0, 0)),
            ((3, 2), (1, 2), (1, 1)),
        ]
        .into_iter()
        .enumerate()
        {
            let s = 10 * i as u64;
            // Values on a grid of 1/4: windows hold ties.
            let x = compute::cast(&values(s + 1, &[2, 5, 40, 44], 8)?, dt)?;
            let x = ops::mul_scalar(&x, 0.25)?.detach().with_requires_grad(true);
            out.extend(with_grads(
                ops::max_pool2d(
                    &x,
                    ops::MaxPool2dOptions::new(kernel)
                        .stride(stride)
                        .padding(padding),
                )?,
                &[&x],
                s + 2,
            )?);
            let x = leaf(s + 3, &[2, 5, 40, 44], dt)?;
            out.extend(with_grads(
                ops::avg_pool2d(
                    &x,
                    ops::AvgPool2dOptions::new(kernel)
                        .stride(stride)
                        .padding(padding),
                )?,
                &[&x],
                s + 4,
            )?);
        }
        Ok(out)
    });
}

#[test]
fn gather_scatter_add_and_embedding_with_repeated_indices() {
    same_bits("indexing", |dt| {
        let mut out = Vec::new();
        // Along the first axis (one outer line, many inner), the last (many outer
        // lines, one inner), the middle, and a vector (one line).
        for (i, (x_shape, ix_shape, axis)) in [
            (vec![50, 300], vec![200, 300], 0),
            (vec![200, 50], vec![200, 80], -1),
            (vec![6, 40, 70], vec![6, 90, 70], 1),
            (vec![1000], vec![20000], 0),
        ]
        .into_iter()
        .enumerate()
        {
            let s = 10 * i as u64;
            let ax = if axis < 0 {
                x_shape.len() - 1
            } else {
                axis as usize
            };
            let index = values(s + 1, &ix_shape, x_shape[ax])?;
            let x = leaf(s + 2, &x_shape, dt)?;
            out.extend(with_grads(
                ops::gather(&x, &index, axis as isize)?,
                &[&x],
                s + 3,
            )?);
            let x = leaf(s + 4, &x_shape, dt)?;
            let src = leaf(s + 5, &ix_shape, dt)?;
            out.extend(with_grads(
                ops::scatter_add(&x, &index, &src, axis as isize)?,
                &[&x, &src],
                s + 6,
            )?);
        }
        let w = leaf(50, &[100, 64], dt)?;
        let idx = values(51, &[30, 20], 100)?;
        out.extend(with_grads(ops::embedding(&w, &idx)?, &[&w], 52)?);
        Ok(out)
    });
}
