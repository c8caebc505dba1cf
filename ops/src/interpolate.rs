//! `interpolate`: resizing `[N, C, H, W]` images by nearest neighbour or bilinear
//! interpolation, as `torch.nn.functional.interpolate`. Built from registered ops
//! (`index_select` of the source rows and columns, then weights that are
//! constants), so differentiable to any order on every device.

use crate::{add, index_select, mul};
use autograd_core::{Error, Result, Tensor, compute};

const OP: &str = "interpolate";

/// How [`interpolate`] fills the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpolateMode {
    /// Each output pixel copies the input pixel `floor(dst · scale)` along each
    /// axis (PyTorch's `"nearest"`, with `scale` = input / output size, or
    /// `1 / scale_factor` when a scale factor is given).
    Nearest,
    /// Bilinear interpolation of the four nearest input pixels (PyTorch's
    /// `"bilinear"`).
    Bilinear {
        /// `true`: the corner pixels of input and output are aligned (`src = dst ·
        /// (in - 1) / (out - 1)`); `false` (PyTorch's default): pixel centres are
        /// (`src = (dst + 0.5) · scale - 0.5`, clamped at 0).
        align_corners: bool,
    },
}

/// The output size of [`interpolate`]: given (PyTorch's `size`) or as a factor of
/// the input's (`scale_factor`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InterpolateSize {
    /// The output height and width.
    Size(usize, usize),
    /// Factors of the input height and width: the output has `floor(in · factor)`
    /// pixels, and the factors themselves (not the rounded sizes' ratio) place the
    /// source pixels, as PyTorch does with `recompute_scale_factor` unset.
    ScaleFactor(f64, f64),
}

/// Where one output axis reads: for each output position, the two source
/// positions and the weight of the second (the first gets `1 - weight`).
struct AxisPlan {
    lo: Vec<i64>,
    hi: Vec<i64>,
    weight: Vec<f64>,
}

/// PyTorch's `area_pixel_compute_scale`: the source step per output step, for
/// bilinear interpolation.
fn step(input: usize, output: usize, factor: Option<f64>, align_corners: bool) -> f64 {
    if align_corners {
        if output > 1 {
            (input as f64 - 1.0) / (output as f64 - 1.0)
        } else {
            0.0
        }
    } else {
        match factor {
            Some(f) => 1.0 / f,
            None => input as f64 / output as f64,
        }
    }
}

fn plan(mode: InterpolateMode, input: usize, output: usize, factor: Option<f64>) -> AxisPlan {
    let last = input as i64 - 1;
    let mut p = AxisPlan {
        lo: Vec::with_capacity(output),
        hi: Vec::with_capacity(output),
        weight: Vec::with_capacity(output),
    };
    match mode {
        InterpolateMode::Nearest => {
            // PyTorch's `nearest_idx`: the same size and twice the size are special
            // cases, otherwise the scale and the product are f32.
            let scale = match factor {
                Some(f) => (1.0 / f) as f32,
                None => input as f32 / output as f32,
            };
            for dst in 0..output {
                let src = if output == input {
                    dst as i64
                } else if output == 2 * input {
                    dst as i64 >> 1
                } else {
                    ((dst as f32 * scale).floor() as i64).min(last)
                };
                p.lo.push(src);
            }
        }
        InterpolateMode::Bilinear { align_corners } => {
            let scale = step(input, output, factor, align_corners);
            for dst in 0..output {
                let src = if align_corners {
                    scale * dst as f64
                } else {
                    ((dst as f64 + 0.5) * scale - 0.5).max(0.0)
                };
                let lo = (src.floor() as i64).min(last);
                let hi = (lo + 1).min(last);
                p.lo.push(lo);
                p.hi.push(hi);
                p.weight.push((src - lo as f64).clamp(0.0, 1.0));
            }
        }
    }
    p
}

/// `x` (`[N, C, H, W]`) resized to the height and width `size` asks for, as
/// `torch.nn.functional.interpolate(x, size | scale_factor, mode, align_corners)`
/// with `mode` `"nearest"` or `"bilinear"`.
///
/// Recorded as an [`index_select`](mod@index_select) of the source rows and one of
/// the source columns (nearest), or two of each weighed by constants and added
/// (bilinear, columns first): the gradient of each input pixel sums what the
/// output pixels drew from it.
///
/// Errors name `interpolate`: `x` not of rank 4, an empty input axis resized to a
/// non-empty one, an output size of 0, a scale factor that is not finite and
/// positive or whose output size is 0.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// use autograd_ops::{InterpolateMode, InterpolateSize, interpolate};
/// let x = autograd_core::Tensor::from_slice(&[1.0f32, 2.0], [1, 1, 1, 2])?;
/// let y = interpolate(&x, InterpolateSize::ScaleFactor(1.0, 2.0), InterpolateMode::Nearest)?;
/// assert_eq!(y.to_vec::<f32>()?, [1.0, 1.0, 2.0, 2.0]);
/// let mode = InterpolateMode::Bilinear { align_corners: true };
/// let y = interpolate(&x, InterpolateSize::Size(1, 3), mode)?;
/// assert_eq!(y.to_vec::<f32>()?, [1.0, 1.5, 2.0]);
/// # Ok(())
/// # }
/// ```
pub fn interpolate(x: &Tensor, size: InterpolateSize, mode: InterpolateMode) -> Result<Tensor> {
    if x.rank() != 4 {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "takes [N, C, H, W] images, got shape {}; add the missing axes with `unsqueeze`",
                x.shape()
            ),
        });
    }
    let (h, w) = (x.dims()[2], x.dims()[3]);
    let (oh, ow, fh, fw) = match size {
        InterpolateSize::Size(oh, ow) => (oh, ow, None, None),
        InterpolateSize::ScaleFactor(fh, fw) => {
            for f in [fh, fw] {
                if !(f.is_finite() && f > 0.0) {
                    return Err(Error::InvalidArgument {
                        op: OP,
                        msg: format!(
                            "scale factor {f} (of ({fh}, {fw})); factors must be finite and \
                             positive"
                        ),
                    });
                }
            }
            let out = |n: usize, f: f64| (n as f64 * f).floor() as usize;
            (out(h, fh), out(w, fw), Some(fh), Some(fw))
        }
    };
    if oh == 0 || ow == 0 || h == 0 || w == 0 {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "resizes the input {} (H {h}, W {w}) to H {oh}, W {ow}; the input and output \
                 heights and widths must be at least 1",
                x.shape()
            ),
        });
    }
    let run = || {
        let rows = plan(mode, h, oh, fh);
        let cols = plan(mode, w, ow, fw);
        match mode {
            InterpolateMode::Nearest => {
                let y = select(x, &cols.lo, 3)?;
                select(&y, &rows.lo, 2)
            }
            InterpolateMode::Bilinear { .. } => {
                let y = lerp(x, &cols, 3, [1, 1, 1, ow])?;
                lerp(&y, &rows, 2, [1, 1, oh, 1])
            }
        }
    };
    run().map_err(|e| e.in_op(OP))
}

/// The entries `at` of `axis` of `x`.
fn select(x: &Tensor, at: &[i64], axis: isize) -> Result<Tensor> {
    let index = Tensor::from_slice(at, [at.len()])?;
    index_select(x, &index, axis)
}

/// `lo · (1 - w) + hi · w` along `axis`, the weights a constant of `shape` in
/// `x`'s dtype and on its device.
fn lerp(x: &Tensor, p: &AxisPlan, axis: isize, shape: [usize; 4]) -> Result<Tensor> {
    let constant = |v: Vec<f64>| -> Result<Tensor> {
        let t = compute::cast(&Tensor::from_vec(v, shape)?, x.dtype())?;
        compute::to_device(&t, x.device())
    };
    let w_hi = constant(p.weight.clone())?;
    let w_lo = constant(p.weight.iter().map(|w| 1.0 - w).collect())?;
    add(
        &mul(&select(x, &p.lo, axis)?, &w_lo)?,
        &mul(&select(x, &p.hi, axis)?, &w_hi)?,
    )
}
