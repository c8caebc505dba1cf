//! W2 (mlp-step) and W3 (elementwise-bandwidth) of `benches/WORKLOADS.md`, on any
//! device and at any size. Shared by the GPU tests and the `gpu_workloads` example
//! (which includes this file by path).

#![allow(dead_code)]

use autograd::prelude::*;
use autograd::{BackwardOptions, compute, ops};

/// W2: `h = relu(X @ W1 + b1)`, `o = h @ W2 + b2`, `loss = sum((o - T)^2) / batch`.
pub struct W2 {
    pub x: Tensor,
    pub t: Tensor,
    pub w1: Tensor,
    pub b1: Tensor,
    pub w2: Tensor,
    pub b2: Tensor,
}

impl W2 {
    /// The CPU sizes of WORKLOADS.md: batch 64, 784 -> 256 -> 10.
    pub const CPU_SIZES: [usize; 4] = [64, 784, 256, 10];
    /// The GPU sizes: batch 4096, 4096 -> 4096 -> 4096.
    pub const GPU_SIZES: [usize; 4] = [4096, 4096, 4096, 4096];

    /// f32 inputs uniform in [-1, 1] from a fixed seed, on the CPU.
    pub fn new([batch, input, hidden, output]: [usize; 4], seed: u64) -> Result<W2> {
        let mut rng = Rng::new(seed);
        let mut u = |s: &[usize]| rng.uniform(s, -1.0, 1.0, DType::F32);
        Ok(W2 {
            x: u(&[batch, input])?,
            t: u(&[batch, output])?,
            w1: u(&[input, hidden])?,
            b1: u(&[hidden])?,
            w2: u(&[hidden, output])?,
            b2: u(&[output])?,
        })
    }

    /// The same values on `device`; the four parameters require grad there.
    pub fn to(&self, device: Device) -> Result<W2> {
        let c = |t: &Tensor| compute::to_device(t, device);
        let p = |t: &Tensor| -> Result<Tensor> {
            Ok(compute::to_device(t, device)?
                .detach()
                .with_requires_grad(true))
        };
        Ok(W2 {
            x: c(&self.x)?,
            t: c(&self.t)?,
            w1: p(&self.w1)?,
            b1: p(&self.b1)?,
            w2: p(&self.w2)?,
            b2: p(&self.b2)?,
        })
    }

    /// One forward and backward: the loss and the gradients of W1, b1, W2, b2
    /// (left on the device), computed: with fusion on, the elementwise parts would
    /// otherwise be deferred until read, and a timed step would time nothing of
    /// them.
    pub fn step(&self) -> Result<(Tensor, Vec<Tensor>)> {
        let batch = self.x.dims()[0] as f64;
        let h = ops::relu(&(ops::matmul(&self.x, &self.w1)? + &self.b1)?)?;
        let o = (ops::matmul(&h, &self.w2)? + &self.b2)?;
        let d = (&o - &self.t)?;
        let loss = ops::mul_scalar(&ops::sum_all(&(&d * &d)?)?, 1.0 / batch)?;
        let params = [&self.w1, &self.b1, &self.w2, &self.b2];
        let grads = autograd::grad(&loss, &params, BackwardOptions::default())?;
        let grads = grads
            .into_iter()
            .map(|g| {
                g.ok_or_else(|| Error::InvalidArgument {
                    op: "W2",
                    msg: "a parameter got no gradient".into(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut all: Vec<&Tensor> = grads.iter().collect();
        all.push(&loss);
        autograd::fusion::realize_all(&all)?;
        Ok((loss, grads))
    }
}

/// W3: `y = (x * a + x) * x`, `loss = sum(y)`; the gradient of `x` is `2x(a + 1)`.
pub struct W3 {
    pub x: Tensor,
    pub a: Tensor,
}

impl W3 {
    pub const CPU_SIZE: usize = 4_194_304;
    pub const GPU_SIZE: usize = 268_435_456;

    pub fn new(n: usize, seed: u64) -> Result<W3> {
        let mut rng = Rng::new(seed);
        Ok(W3 {
            x: rng.uniform([n], -1.0, 1.0, DType::F32)?,
            a: rng.uniform([n], -1.0, 1.0, DType::F32)?,
        })
    }

    pub fn to(&self, device: Device) -> Result<W3> {
        Ok(W3 {
            x: compute::to_device(&self.x, device)?
                .detach()
                .with_requires_grad(true),
            a: compute::to_device(&self.a, device)?,
        })
    }

    /// The loss and the gradient of `x` (left on the device), computed (one fused
    /// pass where fusion is on; deferred and dropped unread, they would never be).
    pub fn step(&self) -> Result<(Tensor, Tensor)> {
        let y = (&(&(&self.x * &self.a)? + &self.x)? * &self.x)?;
        let loss = ops::sum_all(&y)?;
        let mut g = autograd::grad(&loss, &[&self.x], BackwardOptions::default())?;
        let gx = g.pop().flatten().ok_or_else(|| Error::InvalidArgument {
            op: "W3",
            msg: "x got no gradient".into(),
        })?;
        autograd::fusion::realize_all(&[&loss, &gx])?;
        Ok((loss, gx))
    }
}
