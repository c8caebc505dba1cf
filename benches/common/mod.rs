//! The workloads W1–W6 of `benches/WORKLOADS.md`, shared by the criterion benches
//! (`benches/workloads.rs`) and the one-shot report (`examples/workloads.rs`), so both
//! measure exactly the same graphs. Each workload has its inputs (built once, outside
//! the timed region), a `step` that runs forward and backward and reads the gradients
//! the workload names, and a correctness check run before anything is timed.

#![allow(dead_code)] // each including target uses a different part

use autograd::prelude::*;
use autograd::{Device, Error, fusion, memory, ops};
use std::hint::black_box;

/// Fixed seed of every generated input.
pub const SEED: u64 = 2026;

fn uniform(rng: &mut Rng, shape: &[usize]) -> Result<Tensor> {
    rng.uniform(shape, -1.0, 1.0, DType::F32)
}

fn fail(workload: &str, msg: String) -> Error {
    Error::InvalidArgument {
        op: "workload check",
        msg: format!("{workload}: {msg}"),
    }
}

/// `|got - want| <= tol * max(|want|, floor)` for every element.
fn check_close(workload: &str, what: &str, got: &[f32], want: &[f64], tol: f64) -> Result<()> {
    if got.len() != want.len() {
        return Err(fail(
            workload,
            format!("{what}: {} values, expected {}", got.len(), want.len()),
        ));
    }
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        // NaN fails the comparison, and so the check.
        let within = err <= tol * w.abs().max(1e-3 * scale);
        if !within {
            return Err(fail(
                workload,
                format!("{what}[{i}] = {g}, reference {w} (tolerance {tol} relative)"),
            ));
        }
    }
    Ok(())
}

/// Backward from `loss`, then the loss's value and the gradients of `params`
/// computed (returned in order). A workload's step includes the loss's value, as
/// the peers' `value_and_grad` and eager forward do, although `backward` never
/// reads it: with fusion, loss and gradients are deferred chains over the same
/// inputs until here, and `fusion::realize_all` runs them in one pass (reading the
/// values in any order would also compute them, in one pass each).
fn value_and_grads<const N: usize>(
    workload: &str,
    loss: &Tensor,
    params: [(&str, &Tensor); N],
) -> Result<[Tensor; N]> {
    loss.backward()?;
    let mut grads = Vec::with_capacity(N);
    for (name, t) in params {
        let g = t
            .grad()
            .ok_or_else(|| fail(workload, format!("no gradient reached {name}")))?;
        grads.push(g);
    }
    let mut all: Vec<&Tensor> = grads.iter().collect();
    all.push(loss);
    fusion::realize_all(&all)?;
    grads
        .try_into()
        .map_err(|_| fail(workload, "a gradient went missing".into()))
}

// ---------------------------------------------------------------------------- W1

/// W1 chain-overhead: `y = y * a + b` 5000 times on shape [1], then `sum`.
pub struct W1 {
    pub a: Tensor,
    pub b: Tensor,
    pub y0: Tensor,
}

pub const W1_STEPS: usize = 5000;
/// Recorded nodes per W1 step: a mul and an add per step, and the final sum.
pub const W1_NODES: usize = 2 * W1_STEPS + 1;

impl W1 {
    pub fn new() -> Result<W1> {
        Ok(W1 {
            a: Tensor::from_vec(vec![0.999f32], [1])?.with_requires_grad(true),
            b: Tensor::from_vec(vec![0.001f32], [1])?.with_requires_grad(true),
            y0: Tensor::from_vec(vec![1.0f32], [1])?,
        })
    }

    /// Forward and backward; returns the gradients of `a` and `b`.
    pub fn step(&self) -> Result<(Tensor, Tensor)> {
        self.a.zero_grad();
        self.b.zero_grad();
        let mut y = self.y0.clone();
        for _ in 0..W1_STEPS {
            y = (&y * &self.a + &self.b)?;
        }
        let loss = ops::sum_all(&y)?;
        let [ga, gb] = value_and_grads("W1", &loss, [("a", &self.a), ("b", &self.b)])?;
        Ok((ga, gb))
    }

    /// Gradients against a float64 recurrence, within 1e-3 relative.
    pub fn check(&self) -> Result<()> {
        let (ga, gb) = self.step()?;
        let (a, b) = (0.999f64, 0.001f64);
        let (mut y, mut da, mut db) = (1.0f64, 0.0f64, 0.0f64);
        for _ in 0..W1_STEPS {
            da = y + a * da;
            db = 1.0 + a * db;
            y = y * a + b;
        }
        check_close("W1", "grad a", &ga.to_vec::<f32>()?, &[da], 1e-3)?;
        check_close("W1", "grad b", &gb.to_vec::<f32>()?, &[db], 1e-3)
    }
}

// ---------------------------------------------------------------------------- W2

/// W2 mlp-step: `relu(X @ W1 + b1) @ W2 + b2`, mean-squared error summed over the batch.
pub struct W2 {
    pub x: Tensor,
    pub t: Tensor,
    pub w1: Tensor,
    pub b1: Tensor,
    pub w2: Tensor,
    pub b2: Tensor,
}

const W2_BATCH: usize = 64;
const W2_IN: usize = 784;
const W2_HIDDEN: usize = 256;
const W2_OUT: usize = 10;

impl W2 {
    pub fn new() -> Result<W2> {
        let mut rng = Rng::new(SEED);
        Ok(W2 {
            x: uniform(&mut rng, &[W2_BATCH, W2_IN])?,
            t: uniform(&mut rng, &[W2_BATCH, W2_OUT])?,
            w1: uniform(&mut rng, &[W2_IN, W2_HIDDEN])?.with_requires_grad(true),
            b1: uniform(&mut rng, &[W2_HIDDEN])?.with_requires_grad(true),
            w2: uniform(&mut rng, &[W2_HIDDEN, W2_OUT])?.with_requires_grad(true),
            b2: uniform(&mut rng, &[W2_OUT])?.with_requires_grad(true),
        })
    }

    fn params(&self) -> [&Tensor; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }

    /// One training step's forward and backward; returns the loss and the gradients
    /// of W1, b1, W2, b2.
    pub fn step(&self) -> Result<(Tensor, [Tensor; 4])> {
        autograd::zero_grad(&self.params());
        let h = ops::relu(&(ops::matmul(&self.x, &self.w1)? + &self.b1)?)?;
        let o = (ops::matmul(&h, &self.w2)? + &self.b2)?;
        let d = (&o - &self.t)?;
        let loss = ops::mul_scalar(&ops::sum_all(&(&d * &d)?)?, 1.0 / W2_BATCH as f64)?;
        let [w1, b1, w2, b2] = self.params();
        let grads = value_and_grads(
            "W2",
            &loss,
            [("W1", w1), ("b1", b1), ("W2", w2), ("b2", b2)],
        )?;
        Ok((loss, grads))
    }

    /// The step's five matrix products alone, unrecorded, on operands of the step's
    /// shapes (forward `X W1` and `h W2`; backward `G W2ᵀ`, `hᵀ G` and `Xᵀ G`; `X`
    /// is a constant, so `G W1ᵀ` is not among them): the floor under a step that
    /// does what it must with `gemm`. What the step takes beyond it is everything
    /// else (bias, relu, loss, recording, backward's bookkeeping).
    pub fn products(&self) -> Result<[Tensor; 5]> {
        no_grad(|| {
            let h = ops::matmul(&self.x, &self.w1)?;
            let o = ops::matmul(&h, &self.w2)?;
            let dh = ops::matmul(&o, &ops::transpose(&self.w2)?)?;
            let dw2 = ops::matmul(&ops::transpose(&h)?, &o)?;
            let dw1 = ops::matmul(&ops::transpose(&self.x)?, &dh)?;
            Ok([h, o, dh, dw2, dw1])
        })
    }

    /// Loss and gradients against a float64 implementation of the same step.
    pub fn check(&self) -> Result<()> {
        let (loss, grads) = self.step()?;
        let f = |t: &Tensor| t.to_vec::<f64>();
        let (x, t, w1, b1, w2, b2) = (
            f(&self.x)?,
            f(&self.t)?,
            f(&self.w1)?,
            f(&self.b1)?,
            f(&self.w2)?,
            f(&self.b2)?,
        );
        let (n, k, h, m) = (W2_BATCH, W2_IN, W2_HIDDEN, W2_OUT);
        // Forward.
        let mut pre = vec![0.0; n * h];
        for i in 0..n {
            for j in 0..h {
                pre[i * h + j] = b1[j] + (0..k).map(|p| x[i * k + p] * w1[p * h + j]).sum::<f64>();
            }
        }
        let act: Vec<f64> = pre.iter().map(|&v| v.max(0.0)).collect();
        let mut dout = vec![0.0; n * m];
        let mut want_loss = 0.0;
        for i in 0..n {
            for j in 0..m {
                let o = b2[j] + (0..h).map(|p| act[i * h + p] * w2[p * m + j]).sum::<f64>();
                let d = o - t[i * m + j];
                want_loss += d * d / n as f64;
                dout[i * m + j] = 2.0 * d / n as f64;
            }
        }
        // Backward.
        let mut gw2 = vec![0.0; h * m];
        let mut gb2 = vec![0.0; m];
        let mut dpre = vec![0.0; n * h];
        for i in 0..n {
            for j in 0..m {
                gb2[j] += dout[i * m + j];
                for p in 0..h {
                    gw2[p * m + j] += act[i * h + p] * dout[i * m + j];
                }
            }
            for p in 0..h {
                if pre[i * h + p] > 0.0 {
                    dpre[i * h + p] = (0..m).map(|j| dout[i * m + j] * w2[p * m + j]).sum();
                }
            }
        }
        let mut gw1 = vec![0.0; k * h];
        let mut gb1 = vec![0.0; h];
        for i in 0..n {
            for p in 0..h {
                let d = dpre[i * h + p];
                gb1[p] += d;
                if d != 0.0 {
                    for q in 0..k {
                        gw1[q * h + p] += x[i * k + q] * d;
                    }
                }
            }
        }
        check_close("W2", "loss", &loss.to_vec::<f32>()?, &[want_loss], 1e-3)?;
        for (name, got, want) in [
            ("grad W1", &grads[0], gw1),
            ("grad b1", &grads[1], gb1),
            ("grad W2", &grads[2], gw2),
            ("grad b2", &grads[3], gb2),
        ] {
            check_close("W2", name, &got.to_vec::<f32>()?, &want, 1e-3)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------- W3

/// W3 elementwise-bandwidth: `sum((x * a + x) * x)` over 4 Mi elements.
pub struct W3 {
    pub x: Tensor,
    pub a: Tensor,
}

pub const W3_LEN: usize = 4_194_304;

impl W3 {
    pub fn new() -> Result<W3> {
        let mut rng = Rng::new(SEED);
        Ok(W3 {
            x: uniform(&mut rng, &[W3_LEN])?.with_requires_grad(true),
            a: uniform(&mut rng, &[W3_LEN])?,
        })
    }

    pub fn step(&self) -> Result<Tensor> {
        self.x.zero_grad();
        let y = ((&self.x * &self.a + &self.x)? * &self.x)?;
        let [gx] = value_and_grads("W3", &ops::sum_all(&y)?, [("x", &self.x)])?;
        Ok(gx)
    }

    /// grad x = 2 (a + 1) x.
    pub fn check(&self) -> Result<()> {
        let g = self.step()?.to_vec::<f32>()?;
        let (x, a) = (self.x.to_vec::<f64>()?, self.a.to_vec::<f64>()?);
        let want: Vec<f64> = x.iter().zip(&a).map(|(x, a)| 2.0 * (a + 1.0) * x).collect();
        check_close("W3", "grad x", &g, &want, 1e-4)
    }
}

// ---------------------------------------------------------------------------- W4

/// W4 broadcast-reduce: `sum(x * x + b)` with `b` broadcast over 2048 rows.
pub struct W4 {
    pub x: Tensor,
    pub b: Tensor,
}

pub const W4_ROWS: usize = 2048;
pub const W4_COLS: usize = 1024;

impl W4 {
    pub fn new() -> Result<W4> {
        let mut rng = Rng::new(SEED);
        Ok(W4 {
            x: uniform(&mut rng, &[W4_ROWS, W4_COLS])?.with_requires_grad(true),
            b: uniform(&mut rng, &[W4_COLS])?.with_requires_grad(true),
        })
    }

    pub fn step(&self) -> Result<(Tensor, Tensor)> {
        self.x.zero_grad();
        self.b.zero_grad();
        let y = (&self.x * &self.x + &self.b)?;
        let loss = ops::sum_all(&y)?;
        let [gx, gb] = value_and_grads("W4", &loss, [("x", &self.x), ("b", &self.b)])?;
        Ok((gx, gb))
    }

    /// Every element of grad b is exactly 2048; grad x = 2x.
    pub fn check(&self) -> Result<()> {
        let (gx, gb) = self.step()?;
        let gb = gb.to_vec::<f32>()?;
        if let Some((i, v)) = gb.iter().enumerate().find(|(_, v)| **v != W4_ROWS as f32) {
            return Err(fail(
                "W4",
                format!("grad b[{i}] = {v}, expected exactly 2048"),
            ));
        }
        let want: Vec<f64> = self.x.to_vec::<f64>()?.iter().map(|x| 2.0 * x).collect();
        check_close("W4", "grad x", &gx.to_vec::<f32>()?, &want, 1e-6)
    }
}

// ---------------------------------------------------------------------------- W5

/// W5 saved-tensor memory: 50 adds or 50 muls chained on one 4 MiB input.
pub struct W5 {
    pub x: Tensor,
}

pub const W5_LEN: usize = 1_048_576;
pub const W5_STEPS: usize = 50;
/// Checkpointed segments of the W5 mul chain: ≈ √50.
pub const W5_SEGMENTS: usize = 7;
/// Bytes of one W5 tensor.
pub const W5_TENSOR_BYTES: usize = W5_LEN * 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chain {
    Add,
    Mul,
}

impl W5 {
    pub fn new() -> Result<W5> {
        Ok(W5 {
            x: uniform(&mut Rng::new(SEED), &[W5_LEN])?.with_requires_grad(true),
        })
    }

    /// Forward and backward of one chain; returns the gradient of `x`.
    pub fn step(&self, chain: Chain) -> Result<Tensor> {
        self.x.zero_grad();
        let mut y = self.x.clone();
        for _ in 0..W5_STEPS {
            y = match chain {
                Chain::Add => (&y + &self.x)?,
                Chain::Mul => (&y * &self.x)?,
            };
        }
        let loss = ops::sum_all(&y)?;
        let [gx] = value_and_grads("W5", &loss, [("x", &self.x)])?;
        black_box(&y);
        Ok(gx)
    }

    /// The mul chain cut into `segments` checkpointed segments
    /// (`autograd::checkpoint`): each segment's products are recomputed in backward
    /// instead of kept. Returns the gradient of `x`.
    pub fn step_checkpointed(&self, segments: usize) -> Result<Tensor> {
        self.x.zero_grad();
        let mut y = self.x.clone();
        for s in 0..segments {
            let len = W5_STEPS * (s + 1) / segments - W5_STEPS * s / segments;
            let segment = move |xs: &[Tensor]| {
                let mut y = xs[0].clone();
                for _ in 0..len {
                    y = (&y * &xs[1])?;
                }
                Ok(y)
            };
            y = autograd::checkpoint(segment, &[y, self.x.clone()])?;
        }
        let loss = ops::sum_all(&y)?;
        let [gx] = value_and_grads("W5", &loss, [("x", &self.x)])?;
        black_box(&y);
        Ok(gx)
    }

    /// Peak bytes of live tensor storage during forward and backward, beyond what
    /// was live before (the input), from the library's own accounting.
    pub fn peak_bytes(&self, chain: Chain) -> Result<usize> {
        self.peak_bytes_of(|| self.step(chain))
    }

    /// [`W5::peak_bytes`] of the mul chain in `segments` checkpointed segments.
    pub fn peak_bytes_checkpointed(&self, segments: usize) -> Result<usize> {
        self.peak_bytes_of(|| self.step_checkpointed(segments))
    }

    fn peak_bytes_of(&self, step: impl FnOnce() -> Result<Tensor>) -> Result<usize> {
        self.x.zero_grad();
        let before = memory::thread_stats(Device::Cpu).live_bytes;
        memory::reset_thread_peak(Device::Cpu);
        let g = step()?;
        let peak = memory::thread_stats(Device::Cpu).peak_bytes;
        drop(g);
        self.x.zero_grad();
        Ok((peak - before).max(0) as usize)
    }

    /// The checkpointed mul chain's gradient: 51 x^50, as the plain chain's.
    pub fn check_checkpointed(&self, segments: usize) -> Result<()> {
        let g = self.step_checkpointed(segments)?.to_vec::<f32>()?;
        let want: Vec<f64> = self
            .x
            .to_vec::<f64>()?
            .iter()
            .map(|x| 51.0 * x.powi(50))
            .collect();
        check_close("W5 checkpointed mul chain", "grad x", &g, &want, 1e-3)?;
        self.x.zero_grad();
        Ok(())
    }

    /// Add chain: grad x is 51 everywhere. Mul chain: grad x = 51 x^50.
    pub fn check(&self) -> Result<()> {
        let g = self.step(Chain::Add)?.to_vec::<f32>()?;
        if let Some((i, v)) = g.iter().enumerate().find(|(_, v)| **v != 51.0) {
            return Err(fail(
                "W5",
                format!("add chain: grad x[{i}] = {v}, expected 51"),
            ));
        }
        let g = self.step(Chain::Mul)?.to_vec::<f32>()?;
        let want: Vec<f64> = self
            .x
            .to_vec::<f64>()?
            .iter()
            .map(|x| 51.0 * x.powi(50))
            .collect();
        check_close("W5 mul chain", "grad x", &g, &want, 1e-3)?;
        self.x.zero_grad();
        Ok(())
    }
}

// ---------------------------------------------------------------------------- W6

/// W6's activation as a user defines it: one scalar function, from which the macro
/// generates the kernels and the derivative. (Registered under another name than
/// the standard library's own `mish`.)
#[autograd::differentiable(name = "w6_mish")]
pub mod mish {
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x * (1.0 + x.exp()).ln().tanh()
    }
}

/// The inputs the peers use: counter-based splitmix64 to f32 in `[-1, 1)`
/// (`benches/peers/common.py`'s `uniform(n, seed)`, bit for bit).
fn shared_uniform(n: usize, seed: u64) -> Result<Tensor> {
    let base = seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let v: Vec<f32> = (1..=n as u64)
        .map(|i| {
            let mut z = base.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let u = (z >> 40) as f32 * (1.0 / 16_777_216.0);
            2.0 * u - 1.0
        })
        .collect();
    Tensor::from_vec(v, [n])
}

/// W6 user-defined activation: `sum(mish(x) * a)` with `mish` one generated op
/// (`step`), or composed of the standard ops as before kernels could be generated
/// (`step_composed`).
pub struct W6 {
    pub x: Tensor,
    pub a: Tensor,
}

impl W6 {
    pub fn new() -> Result<W6> {
        Ok(W6 {
            x: shared_uniform(W3_LEN, 61)?.with_requires_grad(true),
            a: shared_uniform(W3_LEN, 62)?,
        })
    }

    pub fn step(&self) -> Result<Tensor> {
        self.x.zero_grad();
        let y = (mish(&self.x)? * &self.a)?;
        let [gx] = value_and_grads("W6", &ops::sum_all(&y)?, [("x", &self.x)])?;
        Ok(gx)
    }

    pub fn step_composed(&self) -> Result<Tensor> {
        self.x.zero_grad();
        let m = (&self.x * &self.x.exp()?.add_scalar(1.0)?.log()?.tanh()?)?;
        let loss = ops::sum_all(&(m * &self.a)?)?;
        let [gx] = value_and_grads("W6 composed", &loss, [("x", &self.x)])?;
        Ok(gx)
    }

    /// grad x = a (t + x (1 - t²) σ(x)), t = tanh(ln(1 + e^x)), within 1e-4.
    pub fn check(&self) -> Result<()> {
        let (x, a) = (self.x.to_vec::<f64>()?, self.a.to_vec::<f64>()?);
        let want: Vec<f64> = x
            .iter()
            .zip(&a)
            .map(|(&x, &a)| {
                let t = (1.0 + x.exp()).ln().tanh();
                let s = 1.0 / (1.0 + (-x).exp());
                a * (t + x * (1.0 - t * t) * s)
            })
            .collect();
        for (what, g) in [
            ("grad x", self.step()?),
            ("grad x (composed)", self.step_composed()?),
        ] {
            let got = g.to_vec::<f32>()?;
            if let Some((i, (g, w))) = got
                .iter()
                .zip(&want)
                .enumerate()
                .find(|(_, (g, w))| (**g as f64 - **w).abs() > 1e-4)
            {
                return Err(fail(
                    "W6",
                    format!("{what}[{i}] = {g}, expected {w} (within 1e-4)"),
                ));
            }
        }
        self.x.zero_grad();
        Ok(())
    }
}
