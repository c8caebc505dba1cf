//! The fused layer norm op of `examples/layer_norm.rs`, with raw kernels: a CPU
//! kernel ([`Forward`], [`Backward`]) and a CUDA program (`layer_norm.cu`) for
//! each direction. The tests use this file too (`#[path]`), so the op is written
//! once.
//!
//! `fused_layer_norm(x, gamma, beta, eps)` normalises each row of `x` `[rows, cols]`:
//! `y = (x - mean) · rstd · gamma + beta`, `rstd = 1 / sqrt(var + eps)` (the
//! biased variance of the row), `gamma` and `beta` of shape `[cols]`.
//! Backward, with `g = dy · gamma` and `xhat = (x - mean) · rstd`:
//! `dx = rstd · (g - mean(g) - xhat · mean(g · xhat))` per row,
//! `dgamma = Σ_rows dy · xhat`, `dbeta = Σ_rows dy`. The backward is raw kernels
//! too, so it is not differentiable again: a second derivative through it is an
//! `Error::NotDifferentiable` naming `fused_layer_norm` (the engine's check).

use autograd::parallel;
use autograd::prelude::*;
use autograd::raw::{self, CpuKernel, CudaKernel, CudaProgram, Float, LaunchConfig, Scalar, View};

/// The CUDA program: entry points `layer_norm_forward_{f32,f64}` and
/// `layer_norm_backward_{f32,f64}`.
pub const PROGRAM: CudaProgram = CudaProgram {
    name: "fused_layer_norm",
    source: include_str!("layer_norm.cu"),
};

/// Threads per block on the GPU (a multiple of 32: the block sums go by warps).
const BLOCK: u32 = 128;

/// `(rows, cols)` of `x`, checking that `x` is `[rows, cols]` and that `gamma`
/// and `beta` are `[cols]`.
fn dims(x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Result<(usize, usize)> {
    let &[rows, cols] = x.shape().dims() else {
        return Err(Error::Shape {
            op: "fused_layer_norm",
            msg: format!(
                "x has shape {}; fused_layer_norm normalises the rows of a [rows, cols] tensor \
                 (reshape a batch of rows to two axes first)",
                x.shape()
            ),
        });
    };
    for (name, t) in [("gamma", gamma), ("beta", beta)] {
        if t.shape().dims() != [cols] {
            return Err(Error::Shape {
                op: "fused_layer_norm",
                msg: format!(
                    "{name} has shape {}, and x has shape {}; {name} must be [{cols}], one \
                     value per column",
                    t.shape(),
                    x.shape()
                ),
            });
        }
    }
    Ok((rows, cols))
}

/// Runs a direction of the op on the device of `inputs`: the CPU kernel, or the
/// CUDA entry point `entry` with one block per row (at most 65535 blocks: the
/// kernels loop over the rest).
fn run(
    cpu: &impl CpuKernel,
    entry: &str,
    eps: f64,
    rows: usize,
    inputs: &[&Tensor],
    outputs: &[Shape],
) -> Result<Vec<Tensor>> {
    let kernel = CudaKernel {
        program: PROGRAM,
        entry,
        config: LaunchConfig::linear(rows.clamp(1, 65535) as u32, BLOCK),
        scalars: &[Scalar::F64(eps)],
    };
    // SAFETY: layer_norm.cu's entry points take RAW_PARAMS; they read x and dy
    // ([rows, cols]) and gamma and beta ([cols], checked by `dims`) through their
    // views in `p.in`, write every element of their [rows, cols] outputs and
    // nothing else, loop grid-stride over the rows and take any block of a multiple
    // of 32 threads (BLOCK).
    unsafe { raw::run("fused_layer_norm", cpu, &kernel, inputs, outputs) }
}

/// The checks the CPU kernels make of what they are given (the op checked the
/// shapes already; a kernel called another way gets an error, not a panic): `x`
/// is `[rows, cols]`, the second input `[cols]`, the third `[cols]` (`beta`) or,
/// for the backward kernel, `[rows, cols]` (`dy`).
fn kernel_dims<T: Float>(
    inputs: &[View<'_, T>],
    outputs: &[&mut [T]],
    backward: bool,
) -> Result<(usize, usize)> {
    let bad = |msg: String| Error::Shape {
        op: "fused_layer_norm",
        msg,
    };
    let [x, a, b] = inputs else {
        return Err(bad(format!(
            "the kernel takes 3 inputs, got {}",
            inputs.len()
        )));
    };
    let &[rows, cols] = x.dims() else {
        return Err(bad(format!("x has shape {}, not [rows, cols]", x.shape())));
    };
    let third: &[usize] = if backward { &[rows, cols] } else { &[cols] };
    if a.dims() != [cols] || b.dims() != third {
        return Err(bad(format!(
            "inputs of shapes {} and {} for x of shape {}; they must be [{cols}] and {third:?}",
            a.shape(),
            b.shape(),
            x.shape()
        )));
    }
    if let Some(o) = outputs.iter().find(|o| o.len() != rows * cols) {
        return Err(bad(format!(
            "an output of {} elements for x of shape {}; outputs are [{rows}, {cols}]",
            o.len(),
            x.shape()
        )));
    }
    Ok((rows, cols))
}

/// Element `(r, c)` of a rank-2 view, in f64 (read in place: any strides).
fn at<T: Float>(v: &View<'_, T>, r: usize, c: usize) -> f64 {
    let s = v.strides();
    v.data()[v.offset() + r * s[0] + c * s[1]].to_f64()
}

/// Element `c` of a rank-1 view, in f64.
fn at1<T: Float>(v: &View<'_, T>, c: usize) -> f64 {
    v.data()[v.offset() + c * v.strides()[0]].to_f64()
}

/// The mean and rstd of row `r` of `x` (in f64, two passes, as the CUDA kernel).
fn row_stats<T: Float>(x: &View<'_, T>, r: usize, cols: usize, eps: f64) -> (f64, f64) {
    let mean = (0..cols).map(|c| at(x, r, c)).sum::<f64>() / cols as f64;
    let var = (0..cols).map(|c| (at(x, r, c) - mean).powi(2)).sum::<f64>() / cols as f64;
    (mean, 1.0 / (var + eps).sqrt())
}

/// Rows per piece when a kernel's rows are shared between the CPU threads
/// (`autograd::parallel`): about 4096 elements, at least one row.
fn rows_per_piece(cols: usize) -> usize {
    (4096 / cols.max(1)).max(1)
}

/// The forward CPU kernel: inputs `x, gamma, beta`, output `y`.
pub struct Forward {
    /// Added to the variance.
    pub eps: f64,
}

impl CpuKernel for Forward {
    fn run<T: Float>(&self, inputs: &[View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        let (rows, cols) = kernel_dims(inputs, outputs, false)?;
        let (x, gamma, beta) = (&inputs[0], &inputs[1], &inputs[2]);
        let [y] = outputs else {
            return Err(Error::Shape {
                op: "fused_layer_norm",
                msg: format!("the forward kernel writes 1 output, not {}", outputs.len()),
            });
        };
        // Every row is computed alone, so whole rows can go to different threads:
        // pieces of `per` rows (fixed by the size), each row as the serial loop
        // computes it, give the same bits on any number of threads.
        let per = rows_per_piece(cols);
        parallel::for_each_piece_mut(y, per * cols, 3 * rows * cols, |i, piece| {
            for (k, y_row) in piece.chunks_mut(cols).enumerate() {
                let r = i * per + k;
                let (mean, rstd) = row_stats(x, r, cols, self.eps);
                for (c, y) in y_row.iter_mut().enumerate() {
                    let xhat = (at(x, r, c) - mean) * rstd;
                    *y = T::from_f64(xhat * at1(gamma, c) + at1(beta, c));
                }
            }
        });
        Ok(())
    }
}

/// The backward CPU kernel: inputs `x, gamma, dy`, outputs `dx` and `dy · xhat`.
pub struct Backward {
    /// Added to the variance.
    pub eps: f64,
}

impl CpuKernel for Backward {
    fn run<T: Float>(&self, inputs: &[View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        let (rows, cols) = kernel_dims(inputs, outputs, true)?;
        let (x, gamma, dy) = (&inputs[0], &inputs[1], &inputs[2]);
        let [dx, dy_xhat] = outputs else {
            return Err(Error::Shape {
                op: "fused_layer_norm",
                msg: format!(
                    "the backward kernel writes 2 outputs, not {}",
                    outputs.len()
                ),
            });
        };
        // Pieces of whole rows, as in the forward; the second output's rows are
        // written through a shared pointer, each by the piece holding that row of
        // the first.
        let per = rows_per_piece(cols);
        let dy_xhat = parallel::SharedMut::new(dy_xhat);
        parallel::for_each_piece_mut(dx, per * cols, 4 * rows * cols, |i, piece| {
            for (k, dx_row) in piece.chunks_mut(cols).enumerate() {
                let r = i * per + k;
                // SAFETY: `dy_xhat` has rows * cols elements (`kernel_dims`), r is a
                // row (dx_row is row r of dx, of the same shape), and only this
                // piece writes row r.
                let dyx_row = unsafe { dy_xhat.slice(r * cols, cols) };
                let (mean, rstd) = row_stats(x, r, cols, self.eps);
                let xhat = |c| (at(x, r, c) - mean) * rstd;
                let g = |c| at(dy, r, c) * at1(gamma, c);
                let mg = (0..cols).map(g).sum::<f64>() / cols as f64;
                let mgx = (0..cols).map(|c| g(c) * xhat(c)).sum::<f64>() / cols as f64;
                for (c, (dx, dyx)) in dx_row.iter_mut().zip(dyx_row.iter_mut()).enumerate() {
                    *dx = T::from_f64(rstd * (g(c) - mg - xhat(c) * mgx));
                    *dyx = T::from_f64(at(dy, r, c) * xhat(c));
                }
            }
        });
        Ok(())
    }
}

/// The op: `fused_layer_norm(x, gamma, beta, eps)`.
#[differentiable]
pub mod fused_layer_norm {
    use autograd::prelude::*;

    /// The op's parameter.
    pub struct LayerNorm {
        /// Added to each row's variance (1e-5 is usual).
        pub eps: f64,
    }

    /// One raw kernel: `y` in one pass over each row (three reads of it).
    pub fn forward(&self, x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Result<Tensor> {
        let (rows, _) = super::dims(x, gamma, beta)?;
        let fwd = super::Forward { eps: self.eps };
        let mut out = super::run(
            &fwd,
            "fused_layer_norm_forward",
            self.eps,
            rows,
            &[x, gamma, beta],
            &[x.shape().clone()],
        )?;
        Ok(out.remove(0))
    }

    /// One raw kernel for `dx` and `dy · xhat`, then two column sums. Reads `x`
    /// and `gamma` (saved by the graph), not `beta`. Everything here is unrecorded
    /// (`no_grad`), so under `create_graph` the engine marks these gradients as
    /// not differentiable again, and a second derivative is an error naming the op.
    pub fn backward(
        &self,
        grad: &Tensor,
        x: &Tensor,
        gamma: &Tensor,
        needs: [bool; 3],
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        no_grad(|| {
            let rows = x.shape().dims().first().copied().unwrap_or(0);
            let bwd = super::Backward { eps: self.eps };
            let mut outs = super::run(
                &bwd,
                "fused_layer_norm_backward",
                self.eps,
                rows,
                &[x, gamma, grad],
                &[x.shape().clone(), x.shape().clone()],
            )?;
            let dy_xhat = outs.pop();
            let dx = outs.pop();
            let dgamma = match dy_xhat {
                Some(t) if needs[1] => Some(t.sum(0, false)?),
                _ => None,
            };
            let dbeta = if needs[2] {
                Some(grad.sum(0, false)?)
            } else {
                None
            };
            Ok((dx.filter(|_| needs[0]), dgamma, dbeta))
        })
    }

    /// Finite-difference checks of the gradients (f64).
    pub fn check_cases() -> Vec<CheckCase> {
        let x = Rng::new(7).uniform([3, 5], -2.0, 2.0, DType::F64).unwrap();
        let gamma = Rng::new(8).uniform([5], 0.5, 1.5, DType::F64).unwrap();
        let beta = Rng::new(9).uniform([5], -1.0, 1.0, DType::F64).unwrap();
        vec![CheckCase::new(
            "fused_layer_norm of 3 rows of 5",
            vec![x, gamma, beta],
            |v| fused_layer_norm(&v[0], &v[1], &v[2], 1e-5),
        )]
    }
}

/// The same layer norm composed of standard ops (the reference the example and the
/// tests compare with).
pub fn layer_norm_composed(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f64) -> Result<Tensor> {
    let xc = (x - &x.mean(1, true)?)?;
    let var = (&xc * &xc)?.mean(1, true)?;
    let xhat = (&xc / &(var + eps)?.sqrt()?)?;
    &(&xhat * gamma)? + beta
}
