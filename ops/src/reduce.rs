//! Reductions. Each takes one `axis` (negative counts from the end) and `keepdim`
//! (keep the reduced axis with size 1); `sum_all` and `mean_all` reduce everything.

use crate::{add, broadcast_to, exp, mul, mul_scalar, reshape, sub};
use autograd_core::cases;
use autograd_core::{
    BinaryOp, CheckCase, DType, Device, Error, ReduceOp, Result, Shape, Tensor, UnaryOp, compute,
};
use autograd_macros::differentiable;

/// `shape` with `axis` set to 1: the shape of a `keepdim` reduction.
pub(crate) fn kept_shape(shape: &Shape, axis: usize) -> Shape {
    let mut kept = shape.clone();
    kept.dims_mut()[axis] = 1;
    kept
}

/// The gradient of a reduction along `axis` (with or without keepdim) spread back
/// over `x_shape`: a view, recorded, so the backward stays differentiable.
pub(crate) fn spread(grad: &Tensor, x_shape: &Shape, axis: usize) -> Result<Tensor> {
    broadcast_to(&reshape(grad, kept_shape(x_shape, axis))?, x_shape.clone())
}

/// An error naming `op` when `x` is not floating: a mean or a variance of
/// integers or booleans has no dtype to be computed in (PyTorch refuses it too).
fn float_only(op: &'static str, x: &Tensor) -> Result<()> {
    if x.dtype().is_float() {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        op,
        msg: format!(
            "the tensor (shape {}) is {}, and {op} takes a floating tensor (as PyTorch's); \
             convert it first with `.to_dtype(DType::F32)`, or sum it (`sum` of integers and \
             booleans gives i64)",
            x.shape(),
            x.dtype()
        ),
    })
}

/// The reduced size of a reduction along `axis` (as f64, for a mean).
fn axis_len(shape: &Shape, axis: usize) -> f64 {
    shape[axis] as f64
}

/// The max of `x` along `axis` (kept), clamped to the finite range of the dtype: the
/// shift that keeps `exp(x - m)` from overflowing. Clamping keeps rows of `-inf`
/// (whose max would give `-inf - -inf = NaN`) and `+inf` entries well defined.
pub(crate) fn stable_max(op: &'static str, x: &Tensor, axis: usize) -> Result<Tensor> {
    let m = compute::reduce(x, ReduceOp::Max, &[axis], true).map_err(|e| e.in_op(op))?;
    let (lo, hi) = x.dtype().finite_range();
    crate::clamp(&m, lo, hi)
}

/// Sum of every element: a scalar.
#[differentiable(crate = ::autograd_core, method)]
pub mod sum_all {
    use super::*;

    /// The sum of every element, as a rank-0 tensor (0 for an empty tensor; `i64`
    /// for an integer or boolean `x`, as PyTorch's).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        let axes: Vec<usize> = (0..x.rank()).collect();
        compute::reduce(x, ReduceOp::Sum, &axes, false)
    }

    /// `grad` broadcast back over `x`'s shape: every element contributed once.
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        broadcast_to(grad, x_shape.clone())
    }

    /// Gradcheck input: a `[2, 3]` tensor.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "sum_all",
            cases::uniform(31, &[2, 3], -1.0, 1.0),
            sum_all,
        )]
    }
}

/// Sum along `axis` (negative counts from the end); `keepdim` keeps it with size 1.
#[differentiable(crate = ::autograd_core, method)]
pub mod sum {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Sum {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// True to keep the reduced axis with size 1, so that the result broadcasts
        /// against `x`.
        pub keepdim: bool,
    }

    /// The sum along `axis` (`i64` for an integer or boolean `x`, as PyTorch's). An
    /// error when `axis` is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("sum", self.axis, x)?;
        compute::reduce(x, ReduceOp::Sum, &[axis], self.keepdim)
    }

    /// `grad` spread back along the reduced axis (only `x`'s shape is kept).
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let axis = compute::normalize_axis_of("sum", self.axis, x_shape)?;
        spread(grad, x_shape, axis)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor, summed along a middle axis, and along
    /// the last with `keepdim`.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(32, &[2, 3, 4], -1.0, 1.0);
        vec![
            cases::unary("sum axis 1", x.clone(), |x| sum(x, 1, false)),
            cases::unary("sum axis -1 keepdim", x, |x| sum(x, -1, true)),
        ]
    }
}

/// Mean of every element: a scalar.
#[differentiable(crate = ::autograd_core, method)]
pub mod mean_all {
    use super::*;

    /// The mean of every element, as a rank-0 tensor (NaN for an empty tensor). An
    /// error for an integer or boolean tensor (convert it to a float first).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        float_only("mean_all", x)?;
        let axes: Vec<usize> = (0..x.rank()).collect();
        let total = compute::reduce(x, ReduceOp::Sum, &axes, false)?;
        compute::unary(&total, UnaryOp::MulScalar(1.0 / x.numel() as f64))
    }

    /// `grad / n` broadcast back over `x`'s shape, `n` its element count.
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        broadcast_to(
            &mul_scalar(grad, 1.0 / x_shape.numel() as f64)?,
            x_shape.clone(),
        )
    }

    /// Gradcheck input: a `[2, 3]` tensor.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "mean_all",
            cases::uniform(33, &[2, 3], -1.0, 1.0),
            mean_all,
        )]
    }
}

/// Mean along `axis` (negative counts from the end); `keepdim` keeps it with size 1.
#[differentiable(crate = ::autograd_core, method)]
pub mod mean {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Mean {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// True to keep the reduced axis with size 1, so that the result broadcasts
        /// against `x`.
        pub keepdim: bool,
    }

    /// The mean along `axis`. An error when `axis` is out of range, or `x` is an
    /// integer or boolean tensor (convert it to a float first).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        float_only("mean", x)?;
        let axis = compute::normalize_axis("mean", self.axis, x)?;
        let total = compute::reduce(x, ReduceOp::Sum, &[axis], self.keepdim)?;
        compute::unary(&total, UnaryOp::MulScalar(1.0 / axis_len(x.shape(), axis)))
    }

    /// `grad / n` spread back along the reduced axis, `n` its length.
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let axis = compute::normalize_axis_of("mean", self.axis, x_shape)?;
        mul_scalar(&spread(grad, x_shape, axis)?, 1.0 / axis_len(x_shape, axis))
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor, averaged along the first axis, and along
    /// the second with a negative axis and `keepdim`.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(34, &[2, 3, 4], -1.0, 1.0);
        vec![
            cases::unary("mean axis 0", x.clone(), |x| mean(x, 0, false)),
            cases::unary("mean axis -2 keepdim", x, |x| mean(x, -2, true)),
        ]
    }
}

/// The ties of a max or min: 1 where `x` equals `extreme` (broadcast against it),
/// else 0, and their number over `axes` (kept with `keepdim`). With `nan_ties`, a
/// NaN extreme is tied with the NaN elements (NaN equals nothing otherwise).
/// Constants (their derivative is zero wherever it exists).
fn ties(
    x: &Tensor,
    extreme: &Tensor,
    axes: &[usize],
    keepdim: bool,
    nan_ties: bool,
) -> Result<(Tensor, Tensor)> {
    let mut hits = compute::binary(x, extreme, BinaryOp::Eq)?;
    if nan_ties {
        let nan = |t: &Tensor| crate::compare::complement(&compute::binary(t, t, BinaryOp::Eq)?);
        let both = compute::binary(&nan(x)?, &nan(extreme)?, BinaryOp::Mul)?;
        hits = compute::binary(&hits, &both, BinaryOp::Add)?;
    }
    let count = compute::reduce(&hits, ReduceOp::Sum, axes, keepdim)?;
    Ok((hits, count))
}

/// The gradient of a max or min along `axis`, as PyTorch's `amax`/`amin`:
/// `(grad / count) * hits`, the gradient divided by the number of ties first (so
/// the same numbers as PyTorch's, `2.5 / 3` and not `2.5 · (1/3)`), then sent to
/// each tie. A slice whose max is NaN has no hits: its gradient is `(g / 0) · 0`,
/// NaN, as PyTorch's. Recorded (`div`, `mul` by constants): linear in `grad`.
fn to_extremes(
    op: &'static str,
    axis: isize,
    grad: &Tensor,
    x: &Tensor,
    output: &Tensor,
) -> Result<Tensor> {
    let axis = compute::normalize_axis(op, axis, x)?;
    let kept = kept_shape(x.shape(), axis);
    let extreme = compute::reshape(output, kept.clone())?;
    let (hits, count) = ties(x, &extreme, &[axis], true, false)?;
    let share = crate::div(&reshape(grad, kept)?, &count)?;
    mul(&broadcast_to(&share, x.shape().clone())?, &hits)
}

/// Largest element along `axis` (negative counts from the end); `keepdim` keeps the
/// axis with size 1. NaN wins (a slice holding NaN has max NaN).
///
/// PyTorch's `torch.amax(x, axis, keepdim)`, gradient included: ties split the
/// gradient equally, `grad / count` to each element equal to the max (as in JAX),
/// so `max([1, 3, 3])` sends `[0, ½, ½]` of its gradient; a slice whose max is NaN
/// gets a NaN gradient, as from `amax`. For the values of `torch.max(x, axis)`,
/// whose gradient goes whole to the returned index (the first maximum), write
/// `gather(x, &argmax(x, axis, true)?, axis)` ([`argmax`],
/// [`gather`](mod@crate::gather)).
#[differentiable(crate = ::autograd_core, method)]
pub mod max {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Max {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// True to keep the reduced axis with size 1, so that the result broadcasts
        /// against `x`.
        pub keepdim: bool,
    }

    /// The largest element along `axis`. An error when `axis` is out of range or has
    /// length 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("max", self.axis, x)?;
        compute::reduce(x, ReduceOp::Max, &[axis], self.keepdim)
    }

    /// `grad / count` to each of the `count` elements equal to the max (`amax`'s
    /// backward): reads `x` and the saved output to find them.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        to_extremes("max", self.axis, grad, x, output)
    }

    /// Gradcheck inputs: a random `[2, 3, 4]` tensor (no ties), reduced along a middle
    /// axis, and along the last with `keepdim`.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(35, &[2, 3, 4], -1.0, 1.0);
        vec![
            cases::unary("max axis 1", x.clone(), |x| max(x, 1, false)),
            cases::unary("max axis -1 keepdim", x, |x| max(x, -1, true)),
        ]
    }
}

/// Smallest element along `axis` (negative counts from the end); `keepdim` keeps the
/// axis with size 1. NaN wins.
///
/// PyTorch's `torch.amin(x, axis, keepdim)`, gradient included: ties split the
/// gradient equally, `grad / count` to each element equal to the min; a slice whose
/// min is NaN gets a NaN gradient. For the values of `torch.min(x, axis)` (the
/// whole gradient to the first minimum), write `gather(x, &argmin(x, axis, true)?,
/// axis)`.
#[differentiable(crate = ::autograd_core, method)]
pub mod min {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Min {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// True to keep the reduced axis with size 1, so that the result broadcasts
        /// against `x`.
        pub keepdim: bool,
    }

    /// The smallest element along `axis`. An error when `axis` is out of range or has
    /// length 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("min", self.axis, x)?;
        compute::reduce(x, ReduceOp::Min, &[axis], self.keepdim)
    }

    /// `grad / count` to each of the `count` elements equal to the min (`amin`'s
    /// backward): reads `x` and the saved output to find them.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        to_extremes("min", self.axis, grad, x, output)
    }

    /// Gradcheck inputs: a random `[2, 3, 4]` tensor (no ties), reduced along the first
    /// axis, and along the second with a negative axis and `keepdim`.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(36, &[2, 3, 4], -1.0, 1.0);
        vec![
            cases::unary("min axis 0", x.clone(), |x| min(x, 0, false)),
            cases::unary("min axis -2 keepdim", x, |x| min(x, -2, true)),
        ]
    }
}

/// `log Σ exp(x)` along `axis`, computed as `m + log Σ exp(x - m)` with `m` the max,
/// so it neither overflows nor underflows to `-inf` for large inputs.
#[differentiable(crate = ::autograd_core, method)]
pub mod logsumexp {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Logsumexp {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// True to keep the reduced axis with size 1, so that the result broadcasts
        /// against `x`.
        pub keepdim: bool,
    }

    /// `log Σ exp(x)` along `axis`, shifted by the max. An error when `axis` is out of
    /// range or has length 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let axis = compute::normalize_axis("logsumexp", self.axis, x)?;
        let m = stable_max("logsumexp", x, axis)?;
        let e = crate::exp(&compute::binary(x, &m, BinaryOp::Sub)?)?;
        let s = compute::reduce(&e, ReduceOp::Sum, &[axis], true)?;
        let out = compute::binary(&crate::log(&s)?, &m, BinaryOp::Add)?;
        if self.keepdim {
            Ok(out)
        } else {
            compute::squeeze(&out, axis)
        }
    }

    /// d/dx = softmax(x) = exp(x - logsumexp(x)), from `x` and the saved output.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let (g, x, y) = (crate::wide(grad)?, crate::wide(x)?, crate::wide(output)?);
            return crate::to_dtype(&self.backward(&g, &x, &y)?, d);
        }
        let axis = compute::normalize_axis("logsumexp", self.axis, x)?;
        let kept = kept_shape(x.shape(), axis);
        let p = exp(&sub(x, &reshape(output, kept)?)?)?;
        mul(&spread(grad, x.shape(), axis)?, &p)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor in `[-2, 2)`, reduced along the last
    /// axis, and along a middle one with `keepdim`.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(37, &[2, 3, 4], -2.0, 2.0);
        vec![
            cases::unary("logsumexp axis -1", x.clone(), |x| logsumexp(x, -1, false)),
            cases::unary("logsumexp axis 1 keepdim", x, |x| logsumexp(x, 1, true)),
        ]
    }
}

/// The gradient of a whole-tensor max or min, as PyTorch's
/// `evenly_distribute_backward` (the backward of `torch.max(x)` and `torch.min(x)`
/// without an axis): `(grad / count) * hits` over the elements equal to the result,
/// a NaN result tied with the NaN elements. Recorded (`div`, `mul` by constants).
fn to_extremes_all(grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
    let axes: Vec<usize> = (0..x.rank()).collect();
    let (hits, count) = ties(x, output, &axes, false, true)?;
    let share = crate::div(grad, &count)?;
    mul(&broadcast_to(&share, x.shape().clone())?, &hits)
}

/// The largest or smallest element of a whole tensor, rank 0; an error naming `op`
/// for an empty tensor.
fn extreme_all(op: &'static str, x: &Tensor, reduce: ReduceOp) -> Result<Tensor> {
    if x.numel() == 0 {
        return Err(autograd_core::Error::InvalidArgument {
            op,
            msg: format!(
                "the tensor of shape {} is empty, and an empty tensor has no {}; check the \
                 shape before reducing",
                x.shape(),
                if reduce == ReduceOp::Max {
                    "largest element"
                } else {
                    "smallest element"
                }
            ),
        });
    }
    let axes: Vec<usize> = (0..x.rank()).collect();
    compute::reduce(x, reduce, &axes, false).map_err(|e| e.in_op(op))
}

/// The largest element of the whole tensor, rank 0 (NaN if any element is NaN).
///
/// PyTorch's `torch.max(x)` without an axis, gradient included: ties split the
/// gradient equally, `grad / count` to each element equal to the max; where the max
/// is NaN, to each NaN element.
#[differentiable(crate = ::autograd_core, method)]
pub mod max_all {
    use super::*;

    /// The largest element. An error for an empty tensor.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        extreme_all("max_all", x, ReduceOp::Max)
    }

    /// `grad / count` to each of the `count` elements equal to the max (or NaN).
    pub fn backward(grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        to_extremes_all(grad, x, output)
    }

    /// Gradcheck inputs: a random `[2, 3, 2]` tensor (no ties), and a rank-0 one.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            cases::unary(
                "max_all [2,3,2]",
                cases::uniform(38, &[2, 3, 2], -1.0, 1.0),
                max_all,
            ),
            cases::unary("max_all rank 0", cases::values(&[0.3], &[]), max_all),
        ]
    }
}

/// The smallest element of the whole tensor, rank 0 (NaN if any element is NaN).
///
/// PyTorch's `torch.min(x)` without an axis, gradient included: ties split the
/// gradient equally, `grad / count` to each element equal to the min; where the min
/// is NaN, to each NaN element.
#[differentiable(crate = ::autograd_core, method)]
pub mod min_all {
    use super::*;

    /// The smallest element. An error for an empty tensor.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        extreme_all("min_all", x, ReduceOp::Min)
    }

    /// `grad / count` to each of the `count` elements equal to the min (or NaN).
    pub fn backward(grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        to_extremes_all(grad, x, output)
    }

    /// Gradcheck input: a random `[3, 4]` tensor (no ties).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "min_all [3,4]",
            cases::uniform(39, &[3, 4], -1.0, 1.0),
            min_all,
        )]
    }
}

/// The first position of the extreme along `axis` (NaN counting as the extreme, as
/// in PyTorch), as a constant `i64` tensor on `x`'s device.
fn arg_extreme(
    op: &'static str,
    x: &Tensor,
    axis: isize,
    keepdim: bool,
    reduce: ReduceOp,
) -> Result<Tensor> {
    let axis = compute::normalize_axis(op, axis, x)?;
    let size = x.dims()[axis];
    if size == 0 {
        return Err(autograd_core::Error::InvalidArgument {
            op,
            msg: format!(
                "axis {axis} of shape {} is empty, so it has no position of an extreme",
                x.shape()
            ),
        });
    }
    // The positions are computed in i64 on the CPU (exact at any size); on a GPU
    // in f64 (exact below 2^53, where the CUDA backend's arithmetic is), and
    // converted to i64 at the end.
    let work = if x.device() == Device::Cpu {
        DType::I64
    } else {
        DType::F64
    };
    let run = || -> Result<Tensor> {
        let m = compute::reduce(x, reduce, &[axis], true)?;
        // Where x equals the extreme; where the extreme is NaN, where x is NaN (the
        // two cases exclude each other: NaN equals nothing). An integer x has no
        // NaN.
        let mut hit = compute::binary(x, &m, BinaryOp::Eq)?;
        if x.dtype().is_float() {
            let not_nan = compute::binary(x, x, BinaryOp::Eq)?;
            let nan = crate::compare::complement(&not_nan)?;
            hit = compute::binary(&hit, &nan, BinaryOp::Add)?;
        }
        let hit = compute::cast(&hit, work)?;
        // Position where hit, `size` elsewhere; the min is the first hit.
        let mut at = Shape::from(vec![1; x.rank()]);
        at.dims_mut()[axis] = size;
        let positions = compute::to_device(
            &compute::reshape(&Tensor::arange(size, work)?, at)?,
            x.device(),
        )?;
        let shifted = compute::unary(&positions, UnaryOp::AddScalar(-(size as f64)))?;
        let candidates = compute::unary(
            &compute::binary(&hit, &shifted, BinaryOp::Mul)?,
            UnaryOp::AddScalar(size as f64),
        )?;
        let first = compute::reduce(&candidates, ReduceOp::Min, &[axis], keepdim)?;
        compute::cast(&first, DType::I64)
    };
    run().map_err(|e| e.in_op(op))
}

/// The position of the largest element along `axis` (negative counts from the
/// end), the first one among ties; NaN counts as the largest (as in PyTorch).
/// `keepdim` keeps the axis with size 1.
///
/// The positions are an `i64` tensor (as PyTorch's, and what
/// [`gather`](mod@crate::gather) and [`index_select`](mod@crate::index_select)
/// take), on `x`'s device, a constant: not recorded, no gradient. Errors name
/// `argmax`: the axis out of range or empty.
pub fn argmax(x: &Tensor, axis: isize, keepdim: bool) -> Result<Tensor> {
    arg_extreme("argmax", x, axis, keepdim, ReduceOp::Max)
}

/// The position of the smallest element along `axis`, the first one among ties;
/// NaN counts as the smallest (as in PyTorch). As [`argmax`] otherwise: a
/// constant `i64` tensor, errors naming `argmin`.
pub fn argmin(x: &Tensor, axis: isize, keepdim: bool) -> Result<Tensor> {
    arg_extreme("argmin", x, axis, keepdim, ReduceOp::Min)
}

/// `max(0, n - correction)`: the divisor of a variance over `n` elements.
fn divisor(n: usize, correction: usize) -> f64 {
    n.saturating_sub(correction) as f64
}

/// `x - mean(x)` along `axis`, and the sum of its squares along `axis` (kept):
/// the moments a variance and a layer normalisation start from. Unrecorded.
pub(crate) fn deviations(x: &Tensor, axis: usize) -> Result<(Tensor, Tensor)> {
    let n = x.dims()[axis];
    let total = compute::reduce(x, ReduceOp::Sum, &[axis], true)?;
    let mean = compute::unary(&total, UnaryOp::DivScalar(n as f64))?;
    let d = compute::binary(x, &mean, BinaryOp::Sub)?;
    let sq = compute::binary(&d, &d, BinaryOp::Mul)?;
    let ss = compute::reduce(&sq, ReduceOp::Sum, &[axis], true)?;
    Ok((d, ss))
}

/// The variance along `axis` of `x`: `Σ (x - mean)² / (n - correction)`.
fn variance(
    op: &'static str,
    x: &Tensor,
    axis: isize,
    correction: usize,
    keepdim: bool,
) -> Result<Tensor> {
    float_only(op, x)?;
    let axis = compute::normalize_axis(op, axis, x)?;
    let (_, ss) = deviations(x, axis)?;
    let ss = if keepdim {
        ss
    } else {
        compute::squeeze(&ss, axis)?
    };
    compute::unary(&ss, UnaryOp::DivScalar(divisor(x.dims()[axis], correction)))
}

/// `x - mean(x)` along `axis` (kept), recorded: the shared part of the variance's
/// and the standard deviation's gradients.
fn centered(op: &'static str, x: &Tensor, axis: isize) -> Result<(usize, Tensor)> {
    let a = compute::normalize_axis(op, axis, x)?;
    Ok((a, sub(x, &mean(x, axis, true)?)?))
}

/// The variance along `axis`: `Σ (x - x̄)² / max(0, n - correction)` with `n` the
/// axis' length, as `torch.var(x, axis, correction=.., keepdim=..)`: `correction`
/// 1 is the unbiased sample variance, 0 the population variance. An axis shorter
/// than or as long as `correction` divides by 0 (an infinity or NaN, as in
/// PyTorch).
#[differentiable(crate = ::autograd_core, method)]
pub mod var {
    use super::*;

    /// Which axis, the correction, and whether the axis stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Var {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// Subtracted from the axis' length in the divisor (Bessel's correction: 1).
        pub correction: usize,
        /// True to keep the reduced axis with size 1.
        pub keepdim: bool,
    }

    /// The variance along `axis`. An error when `axis` is out of range, or `x` is
    /// not floating.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        variance("var", x, self.axis, self.correction, self.keepdim)
    }

    /// `2 (x - x̄) / (n - correction)` times the spread gradient; recorded (the mean
    /// too), so twice differentiable.
    pub fn backward(&self, grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let g = self.backward(&crate::wide(grad)?, &crate::wide(x)?)?;
            return crate::to_dtype(&g, d);
        }
        let (axis, d) = centered("var", x, self.axis)?;
        let scale = 2.0 / divisor(x.dims()[axis], self.correction);
        mul_scalar(&mul(&spread(grad, x.shape(), axis)?, &d)?, scale)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor, the unbiased variance along a middle
    /// axis, and the population variance along the last with `keepdim`.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(40, &[2, 3, 4], -1.0, 1.0);
        vec![
            cases::unary("var axis 1 correction 1", x.clone(), |x| {
                var(x, 1, 1, false)
            }),
            cases::unary("var axis -1 correction 0 keepdim", x, |x| {
                var(x, -1, 0, true)
            }),
        ]
    }
}

/// The standard deviation along `axis`: the square root of [`var`](mod@var), with
/// the same `correction` (`torch.std(x, axis, correction=.., keepdim=..)`). Where
/// it is 0 (all elements along the axis equal) its gradient is 0, as PyTorch's
/// (`std_backward` masks those entries), not the `0 / 0` of the formula.
#[differentiable(crate = ::autograd_core, method)]
pub mod std_dev {
    use super::*;

    /// Which axis, the correction, and whether the axis stays.
    #[derive(Clone, Copy, Debug)]
    pub struct StdDev {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// Subtracted from the axis' length in the divisor (Bessel's correction: 1).
        pub correction: usize,
        /// True to keep the reduced axis with size 1.
        pub keepdim: bool,
    }

    /// `√var` along `axis`. An error when `axis` is out of range, or `x` is not
    /// floating.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let v = variance("std_dev", x, self.axis, self.correction, self.keepdim)?;
        crate::sqrt(&v)
    }

    /// `(x - x̄) / ((n - correction) σ)` times the spread gradient, from `x` and the
    /// saved output `σ`, and 0 where `σ` is 0 (as PyTorch: there `x - x̄` is 0 or
    /// a rounding error, and the quotient would be NaN or huge); recorded, so twice
    /// differentiable (the mask of zeros is a constant).
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let (g, x, y) = (crate::wide(grad)?, crate::wide(x)?, crate::wide(output)?);
            return crate::to_dtype(&self.backward(&g, &x, &y)?, d);
        }
        let (axis, d) = centered("std_dev", x, self.axis)?;
        let n = divisor(x.dims()[axis], self.correction);
        // Constants: 1 where σ is 0, and 1 where it is not.
        let zero = compute::binary(output, &output.zeros_like()?, BinaryOp::Eq)?;
        let nonzero = crate::compare::complement(&zero)?;
        // σ with its zeros replaced by 1, and the gradient with those entries 0.
        let sigma = mul_scalar(&spread(&add(output, &zero)?, x.shape(), axis)?, n)?;
        let grad = spread(&mul(grad, &nonzero)?, x.shape(), axis)?;
        crate::div(&mul(&grad, &d)?, &sigma)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor, along the last axis (unbiased) and
    /// along the first with `keepdim` (population).
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(41, &[2, 3, 4], -1.0, 1.0);
        vec![
            cases::unary("std_dev axis -1 correction 1", x.clone(), |x| {
                std_dev(x, -1, 1, false)
            }),
            cases::unary("std_dev axis 0 correction 0 keepdim", x, |x| {
                std_dev(x, 0, 0, true)
            }),
        ]
    }
}

/// Running sums along `axis` (negative counts from the end): entry `i` is the sum
/// of entries `0..=i` (`torch.cumsum`), or with `reverse` of entries `i..` (as
/// `jax.lax.cumsum(x, axis, reverse=True)`).
///
/// Computed in `⌈log₂ n⌉` shifted additions (a Hillis–Steele scan), so sums are
/// added in another order than a loop would (the same values up to rounding, and
/// the same infinities and NaNs). The backward is the running sum the other way.
#[differentiable(crate = ::autograd_core, method)]
pub mod cumsum {
    use super::*;

    /// Which axis, and which way.
    #[derive(Clone, Copy, Debug)]
    pub struct Cumsum {
        /// The axis summed along; negative counts from the end.
        pub axis: isize,
        /// False: sums of the entries up to each one; true: from each one to the end.
        pub reverse: bool,
    }

    /// The running sums. An error when `axis` is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let axis = compute::normalize_axis("cumsum", self.axis, x)?;
        let n = x.dims()[axis];
        let mut y = x.clone();
        let mut shift = 1;
        while shift < n {
            let part = compute::narrow(&y, axis, if self.reverse { shift } else { 0 }, n - shift)?;
            let at = if self.reverse { 0 } else { shift };
            let moved = compute::pad_narrow(&part, x.shape(), axis, at)?;
            y = compute::binary(&y, &moved, BinaryOp::Add)?;
            shift *= 2;
        }
        Ok(y)
    }

    /// The running sum of the gradient the other way.
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        cumsum(grad, self.axis, !self.reverse)
    }

    /// Gradcheck inputs: a `[2, 5, 3]` tensor summed along the middle axis, and
    /// backwards along the last.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(42, &[2, 5, 3], -1.0, 1.0);
        vec![
            cases::unary("cumsum axis 1", x.clone(), |x| cumsum(x, 1, false)),
            cases::unary("cumsum axis -1 reverse", x, |x| cumsum(x, -1, true)),
        ]
    }
}
