//! The workloads W1–W8 of `benches/WORKLOADS.md`, shared by the criterion benches
//! (`benches/workloads.rs`) and the one-shot report (`examples/workloads.rs`), so both
//! measure exactly the same graphs. Each workload has its inputs (built once, outside
//! the timed region), a `step` that runs forward and backward and reads the gradients
//! the workload names, and a correctness check run before anything is timed.

#![allow(dead_code)] // each including target uses a different part

use autograd::prelude::*;
use autograd::{Device, Error, compute, fusion, memory, ops};
use std::hint::black_box;

/// Fixed seed of every generated input.
pub const SEED: u64 = 2026;

fn uniform(rng: &mut Rng, shape: &[usize]) -> Result<Tensor> {
    rng.uniform(shape, -1.0, 1.0, DType::F32)
}

/// `x` rounded to `dtype` (a leaf: no graph).
fn in_dtype(x: Tensor, dtype: DType) -> Result<Tensor> {
    Ok(compute::cast(&x, dtype)?.detach())
}

/// A check's relative tolerance: `f32` in f32 and f64. In f16 and bf16, whose
/// every step rounds to 11 or 8 bits (and W3's gradient sums two rounded terms
/// that cancel where `a` is near -1, so a small element can be far from its
/// value), the tolerance is relative to the largest reference value instead: a
/// check that the step computes the right function, not of its precision.
fn tolerance(dtype: DType, f32: f64) -> Tolerance {
    match dtype {
        DType::F16 => Tolerance::OfLargest(1.0 / 256.0),
        DType::BF16 => Tolerance::OfLargest(1.0 / 32.0),
        _ => Tolerance::Relative(f32),
    }
}

/// How far a checked value may be from its reference.
#[derive(Clone, Copy, Debug)]
enum Tolerance {
    /// This much relative to the value (or to a thousandth of the largest).
    Relative(f64),
    /// This much relative to the largest reference value.
    OfLargest(f64),
}

fn fail(workload: &str, msg: String) -> Error {
    Error::InvalidArgument {
        op: "workload check",
        msg: format!("{workload}: {msg}"),
    }
}

/// `|got - want| <= tol * max(|want|, floor)` for every element.
fn check_close(
    workload: &str,
    what: &str,
    got: &[f32],
    want: &[f64],
    tol: impl Into<Tolerance>,
) -> Result<()> {
    if got.len() != want.len() {
        return Err(fail(
            workload,
            format!("{what}: {} values, expected {}", got.len(), want.len()),
        ));
    }
    let tol = tol.into();
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        // NaN fails the comparison, and so the check.
        let within = match tol {
            Tolerance::Relative(t) => err <= t * w.abs().max(1e-3 * scale),
            Tolerance::OfLargest(t) => err <= t * scale,
        };
        if !within {
            return Err(fail(
                workload,
                format!("{what}[{i}] = {g}, reference {w} (tolerance {tol:?})"),
            ));
        }
    }
    Ok(())
}

impl From<f64> for Tolerance {
    fn from(t: f64) -> Tolerance {
        Tolerance::Relative(t)
    }
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
            let dh = ops::matmul(&o, &ops::transpose(&self.w2, -2, -1)?)?;
            let dw2 = ops::matmul(&ops::transpose(&h, -2, -1)?, &o)?;
            let dw1 = ops::matmul(&ops::transpose(&self.x, -2, -1)?, &dh)?;
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
        W3::in_dtype(DType::F32)
    }

    /// W3 on the same values rounded to `dtype` (f16, bf16: half the bytes).
    pub fn in_dtype(dtype: DType) -> Result<W3> {
        let mut rng = Rng::new(SEED);
        Ok(W3 {
            x: in_dtype(uniform(&mut rng, &[W3_LEN])?, dtype)?.with_requires_grad(true),
            a: in_dtype(uniform(&mut rng, &[W3_LEN])?, dtype)?,
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
        check_close("W3", "grad x", &g, &want, tolerance(self.x.dtype(), 1e-4))
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
        W4::in_dtype(DType::F32)
    }

    /// W4 on the same values rounded to `dtype` (f16, bf16: half the bytes).
    pub fn in_dtype(dtype: DType) -> Result<W4> {
        let mut rng = Rng::new(SEED);
        Ok(W4 {
            x: in_dtype(uniform(&mut rng, &[W4_ROWS, W4_COLS])?, dtype)?.with_requires_grad(true),
            b: in_dtype(uniform(&mut rng, &[W4_COLS])?, dtype)?.with_requires_grad(true),
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
        let tol = tolerance(self.x.dtype(), 1e-6);
        check_close("W4", "grad x", &gx.to_vec::<f32>()?, &want, tol)
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
        W5::in_dtype(DType::F32)
    }

    /// W5 on the same values rounded to `dtype`.
    pub fn in_dtype(dtype: DType) -> Result<W5> {
        let x = in_dtype(uniform(&mut Rng::new(SEED), &[W5_LEN])?, dtype)?;
        Ok(W5 {
            x: x.with_requires_grad(true),
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

/// The values the peers use: counter-based splitmix64 to f32 in `[-1, 1)`
/// (`benches/peers/common.py`'s `uniform(n, seed)`, bit for bit).
fn shared_values(n: usize, seed: u64) -> Vec<f32> {
    let base = seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    (1..=n as u64)
        .map(|i| {
            let mut z = base.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let u = (z >> 40) as f32 * (1.0 / 16_777_216.0);
            2.0 * u - 1.0
        })
        .collect()
}

/// [`shared_values`] as a tensor of shape `[n]`.
fn shared_uniform(n: usize, seed: u64) -> Result<Tensor> {
    Tensor::from_vec(shared_values(n, seed), [n])
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

// ------------------------------------------------------------------- W7 and W8

/// A parameter as W7 and W8 define it: the shared generator's values (`seed`)
/// divided by `√fan_in` in f32 (as the peers' `scaled`), of `shape`, requiring grad.
fn scaled(seed: u64, fan_in: usize, shape: &[usize]) -> Result<Tensor> {
    let n = shape.iter().product();
    let s = (fan_in as f64).sqrt() as f32;
    let v: Vec<f32> = shared_values(n, seed).into_iter().map(|v| v / s).collect();
    Ok(Tensor::from_vec(v, shape.to_vec())?.with_requires_grad(true))
}

/// `n` class indices in `0..k` (`i64`, as `cross_entropy` and `embedding` take
/// them): `floor((v + 1) / 2 * k)` of the shared generator's values (`seed`), as
/// the peers' `classes`.
fn class_indices(n: usize, seed: u64, k: usize) -> Vec<i64> {
    shared_values(n, seed)
        .into_iter()
        .map(|v| {
            ((v as f64 + 1.0) / 2.0 * k as f64)
                .floor()
                .min(k as f64 - 1.0) as i64
        })
        .collect()
}

/// The shared part of W7's and W8's checks: the loss within 1e-4 relative of the
/// float64 reference, every gradient finite and of its parameter's shape.
fn check_step(
    workload: &str,
    loss: &Tensor,
    want_loss: f64,
    params: &[(&str, &Tensor)],
    grads: &[Tensor],
) -> Result<()> {
    let got = loss.to_vec::<f32>()?;
    let rel = match got.as_slice() {
        [l] => (*l as f64 - want_loss).abs() / want_loss.abs(),
        _ => {
            return Err(fail(
                workload,
                format!("loss has {} values, not 1", got.len()),
            ));
        }
    };
    // A NaN loss is not within the tolerance, so it fails the check.
    if rel.is_nan() || rel > 1e-4 {
        return Err(fail(
            workload,
            format!(
                "loss = {}, float64 reference {want_loss} (relative error {rel:.1e}, over 1e-4)",
                got[0]
            ),
        ));
    }
    for ((name, p), g) in params.iter().zip(grads) {
        if g.dims() != p.dims() {
            return Err(fail(
                workload,
                format!(
                    "grad {name} has shape {}, its parameter {}",
                    g.shape(),
                    p.shape()
                ),
            ));
        }
        if let Some((i, v)) = g
            .to_vec::<f32>()?
            .into_iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite())
        {
            return Err(fail(
                workload,
                format!("grad {name}[{i}] = {v}, not finite"),
            ));
        }
    }
    Ok(())
}

/// The loss then each gradient by name, as f32 values: what a determinism test
/// compares bit for bit across thread counts.
fn named_outputs(
    loss: &Tensor,
    params: &[(&str, &Tensor)],
    grads: &[Tensor],
) -> Result<Vec<(String, Vec<f32>)>> {
    let mut out = vec![("loss".to_string(), loss.to_vec::<f32>()?)];
    for ((name, _), g) in params.iter().zip(grads) {
        out.push((format!("grad {name}"), g.to_vec::<f32>()?));
    }
    Ok(out)
}

/// W7 cnn-step: two 3×3 convolutions (each with relu and a 2×2 max-pool), a
/// linear layer and the mean cross-entropy over a batch of 32 images.
pub struct W7 {
    /// Images `[32, 3, 32, 32]`, constant.
    pub x: Tensor,
    /// Class indices `[32]` in `0..10` (`i64`).
    pub t: Tensor,
    pub conv1: Tensor,
    pub b1: Tensor,
    pub conv2: Tensor,
    pub b2: Tensor,
    pub w: Tensor,
    pub b: Tensor,
}

pub const W7_BATCH: usize = 32;
pub const W7_CLASSES: usize = 10;
/// PyTorch's float64 evaluation of W7's loss (`benches/peers/torch_peer.py w7`).
pub const W7_LOSS_F64: f64 = 2.315604;

impl W7 {
    pub fn new() -> Result<W7> {
        let (n, k) = (W7_BATCH, W7_CLASSES);
        Ok(W7 {
            x: Tensor::from_vec(shared_values(n * 3 * 32 * 32, 71), [n, 3, 32, 32])?,
            t: Tensor::from_vec(class_indices(n, 72, k), [n])?,
            conv1: scaled(73, 3 * 9, &[32, 3, 3, 3])?,
            b1: scaled(74, 3 * 9, &[32])?,
            conv2: scaled(75, 32 * 9, &[64, 32, 3, 3])?,
            b2: scaled(76, 32 * 9, &[64])?,
            w: scaled(77, 4096, &[4096, k])?,
            b: scaled(78, 4096, &[k])?,
        })
    }

    /// The parameters by name, in the peers' order.
    pub fn params(&self) -> [(&'static str, &Tensor); 6] {
        [
            ("conv1", &self.conv1),
            ("b1", &self.b1),
            ("conv2", &self.conv2),
            ("b2", &self.b2),
            ("W", &self.w),
            ("b", &self.b),
        ]
    }

    /// One training step's forward and backward; returns the loss and the gradients
    /// of the parameters (in [`W7::params`]'s order).
    pub fn step(&self) -> Result<(Tensor, [Tensor; 6])> {
        let params = self.params();
        autograd::zero_grad(&params.map(|(_, p)| p));
        let same = ops::Conv2dOptions {
            padding: (1, 1),
            ..Default::default()
        };
        let pool = |h: Tensor| h.relu()?.max_pool2d(ops::MaxPool2dOptions::new((2, 2)));
        let h = pool(ops::conv2d(&self.x, &self.conv1, Some(&self.b1), same)?)?; // [32, 32, 16, 16]
        let h = pool(ops::conv2d(&h, &self.conv2, Some(&self.b2), same)?)?; // [32, 64, 8, 8]
        let flat = ops::reshape(&h, Shape::from([W7_BATCH, 64 * 8 * 8]))?;
        let logits = (ops::matmul(&flat, &self.w)? + &self.b)?;
        let loss = ops::cross_entropy(&logits, &self.t)?;
        let grads = value_and_grads("W7", &loss, params)?;
        Ok((loss, grads))
    }

    /// The loss within 1e-4 relative of PyTorch's float64 evaluation; every gradient
    /// finite and of its parameter's shape.
    pub fn check(&self) -> Result<()> {
        let (loss, grads) = self.step()?;
        check_step("W7", &loss, W7_LOSS_F64, &self.params(), &grads)
    }

    /// The loss, then every gradient by name ([`W7::params`]'s order), from one step.
    pub fn outputs(&self) -> Result<Vec<(String, Vec<f32>)>> {
        let (loss, grads) = self.step()?;
        named_outputs(&loss, &self.params(), &grads)
    }
}

/// W8 transformer-block-step: embedding, one pre-norm block (causal attention with
/// 4 heads, a gelu MLP), a final layer norm and tied output, mean cross-entropy of
/// the next token.
pub struct W8 {
    /// Tokens `[8, 128]` in `0..256` (`i64`).
    pub tokens: Tensor,
    /// The next token of each position `[1024]` (a row's last position predicts the
    /// row's first token).
    pub targets: Tensor,
    /// `0` on and below the diagonal, `-inf` above: `[128, 128]`, constant.
    pub mask: Tensor,
    pub emb: Tensor,
    pub pos: Tensor,
    pub wq: Tensor,
    pub wk: Tensor,
    pub wv: Tensor,
    pub wo: Tensor,
    pub w1: Tensor,
    pub b1: Tensor,
    pub w2: Tensor,
    pub b2: Tensor,
    /// The three layer norms' weights (ones) and biases (zeros): before attention,
    /// before the MLP, before the output.
    pub ln: [(Tensor, Tensor); 3],
}

pub const W8_BATCH: usize = 8;
pub const W8_SEQ: usize = 128;
pub const W8_DIM: usize = 128;
pub const W8_HEADS: usize = 4;
pub const W8_FF: usize = 512;
pub const W8_VOCAB: usize = 256;
/// PyTorch's default layer-norm stabiliser.
const W8_EPS: f64 = 1e-5;
/// PyTorch's float64 evaluation of W8's loss (`benches/peers/torch_peer.py w8`).
pub const W8_LOSS_F64: f64 = 5.715756;

impl W8 {
    pub fn new() -> Result<W8> {
        let (b, s, d, f, v) = (W8_BATCH, W8_SEQ, W8_DIM, W8_FF, W8_VOCAB);
        let tok = class_indices(b * s, 81, v);
        let targets: Vec<i64> = (0..b * s)
            .map(|i| tok[i - i % s + (i % s + 1) % s])
            .collect();
        let mask: Vec<f32> = (0..s * s)
            .map(|i| {
                if i % s > i / s {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let norm = || -> Result<(Tensor, Tensor)> {
            Ok((
                Tensor::from_vec(vec![1.0f32; d], [d])?.with_requires_grad(true),
                Tensor::from_vec(vec![0.0f32; d], [d])?.with_requires_grad(true),
            ))
        };
        Ok(W8 {
            tokens: Tensor::from_vec(tok, [b, s])?,
            targets: Tensor::from_vec(targets, [b * s])?,
            mask: Tensor::from_vec(mask, [s, s])?,
            emb: scaled(82, d, &[v, d])?,
            pos: scaled(83, d, &[s, d])?,
            wq: scaled(84, d, &[d, d])?,
            wk: scaled(85, d, &[d, d])?,
            wv: scaled(86, d, &[d, d])?,
            wo: scaled(87, d, &[d, d])?,
            w1: scaled(88, d, &[d, f])?,
            b1: scaled(89, d, &[f])?,
            w2: scaled(90, f, &[f, d])?,
            b2: scaled(91, f, &[d])?,
            ln: [norm()?, norm()?, norm()?],
        })
    }

    /// The parameters by name, in the peers' order.
    pub fn params(&self) -> [(&'static str, &Tensor); 16] {
        let [(g1, c1), (g2, c2), (gf, cf)] = &self.ln;
        [
            ("emb", &self.emb),
            ("pos", &self.pos),
            ("Wq", &self.wq),
            ("Wk", &self.wk),
            ("Wv", &self.wv),
            ("Wo", &self.wo),
            ("W1", &self.w1),
            ("b1", &self.b1),
            ("W2", &self.w2),
            ("b2", &self.b2),
            ("ln1 weight", g1),
            ("ln1 bias", c1),
            ("ln2 weight", g2),
            ("ln2 bias", c2),
            ("ln_f weight", gf),
            ("ln_f bias", cf),
        ]
    }

    /// `[8, 128, 128]` rows split into heads: `[8, 4, 128, 32]`.
    fn heads(x: &Tensor) -> Result<Tensor> {
        let (b, s, h) = (W8_BATCH, W8_SEQ, W8_HEADS);
        let x = ops::reshape(x, Shape::from([b, s, h, W8_DIM / h]))?;
        ops::permute(&x, vec![0, 2, 1, 3])
    }

    /// One training step's forward and backward; returns the loss and the gradients
    /// of the parameters (in [`W8::params`]'s order).
    pub fn step(&self) -> Result<(Tensor, [Tensor; 16])> {
        let params = self.params();
        autograd::zero_grad(&params.map(|(_, p)| p));
        let (b, s, d) = (W8_BATCH, W8_SEQ, W8_DIM);
        let norm = |x: &Tensor, i: usize| {
            let (g, c) = &self.ln[i];
            ops::layer_norm(x, Some(g), Some(c), W8_EPS)
        };
        let x = (ops::embedding(&self.emb, &self.tokens)? + &self.pos)?; // [8, 128, 128]
        // Attention.
        let h = norm(&x, 0)?;
        let q = Self::heads(&ops::matmul(&h, &self.wq)?)?;
        let k = Self::heads(&ops::matmul(&h, &self.wk)?)?;
        let v = Self::heads(&ops::matmul(&h, &self.wv)?)?;
        let scale = 1.0 / ((d / W8_HEADS) as f64).sqrt();
        let scores = (ops::mul_scalar(&ops::matmul(&q, &ops::transpose(&k, -2, -1)?)?, scale)?
            + &self.mask)?; // [8, 4, 128, 128]
        let att = ops::softmax(&scores, -1)?;
        let o = ops::permute(&ops::matmul(&att, &v)?, vec![0, 2, 1, 3])?; // [8, 128, 4, 32]
        let o = ops::reshape(&o, Shape::from([b, s, d]))?;
        let x = (&x + &ops::matmul(&o, &self.wo)?)?;
        // MLP.
        let f = ops::gelu(&(ops::matmul(&norm(&x, 1)?, &self.w1)? + &self.b1)?)?;
        let x = (&x + &(ops::matmul(&f, &self.w2)? + &self.b2)?)?;
        // Tied output.
        let logits = ops::matmul(&norm(&x, 2)?, &ops::transpose(&self.emb, -2, -1)?)?; // [8, 128, 256]
        let logits = ops::reshape(&logits, Shape::from([b * s, W8_VOCAB]))?;
        let loss = ops::cross_entropy(&logits, &self.targets)?;
        let grads = value_and_grads("W8", &loss, params)?;
        Ok((loss, grads))
    }

    /// The loss within 1e-4 relative of PyTorch's float64 evaluation; every gradient
    /// finite and of its parameter's shape.
    pub fn check(&self) -> Result<()> {
        let (loss, grads) = self.step()?;
        check_step("W8", &loss, W8_LOSS_F64, &self.params(), &grads)
    }

    /// The loss, then every gradient by name ([`W8::params`]'s order), from one step.
    pub fn outputs(&self) -> Result<Vec<(String, Vec<f32>)>> {
        let (loss, grads) = self.step()?;
        named_outputs(&loss, &self.params(), &grads)
    }
}
