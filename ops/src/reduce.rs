//! Reductions. Each takes one `axis` (negative counts from the end) and `keepdim`
//! (keep the reduced axis with size 1); `sum_all` and `mean_all` reduce everything.

use crate::{broadcast_to, exp, mul, mul_scalar, reshape, sub};
use autograd_core::cases;
use autograd_core::{
    BinaryOp, CheckCase, DType, ReduceOp, Result, Shape, Tensor, UnaryOp, compute,
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

/// The reduced size of a reduction along `axis` (as f64, for a mean).
fn axis_len(shape: &Shape, axis: usize) -> f64 {
    shape[axis] as f64
}

/// The max of `x` along `axis` (kept), clamped to the finite range of the dtype: the
/// shift that keeps `exp(x - m)` from overflowing. Clamping keeps rows of `-inf`
/// (whose max would give `-inf - -inf = NaN`) and `+inf` entries well defined.
pub(crate) fn stable_max(op: &'static str, x: &Tensor, axis: usize) -> Result<Tensor> {
    let m = compute::reduce(x, ReduceOp::Max, &[axis], true).map_err(|e| e.in_op(op))?;
    let (lo, hi) = match x.dtype() {
        DType::F32 => (f32::MIN as f64, f32::MAX as f64),
        DType::F64 => (f64::MIN, f64::MAX),
    };
    crate::clamp(&m, lo, hi)
}

/// Sum of every element: a scalar.
#[differentiable(crate = ::autograd_core, method)]
pub mod sum_all {
    use super::*;

    /// The sum of every element, as a rank-0 tensor (0 for an empty tensor).
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

    /// The sum along `axis`. An error when `axis` is out of range.
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

    /// The mean of every element, as a rank-0 tensor (NaN for an empty tensor).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
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

    /// The mean along `axis`. An error when `axis` is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
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

/// The gradient of a max or min reduction: `grad` spread over the elements equal to
/// the result, split equally among ties. The weights are constants (their derivative
/// is zero wherever it exists).
fn to_extremes(
    op: &'static str,
    axis: isize,
    grad: &Tensor,
    x: &Tensor,
    output: &Tensor,
) -> Result<Tensor> {
    let axis = compute::normalize_axis(op, axis, x)?;
    let extreme = compute::reshape(output, kept_shape(x.shape(), axis))?;
    let hits = compute::binary(x, &extreme, BinaryOp::Eq)?;
    let count = compute::reduce(&hits, ReduceOp::Sum, &[axis], true)?;
    let weights = compute::binary(&hits, &count, BinaryOp::Div)?;
    mul(&spread(grad, x.shape(), axis)?, &weights)
}

/// Largest element along `axis` (negative counts from the end); `keepdim` keeps the
/// axis with size 1. NaN wins (a slice holding NaN has max NaN).
///
/// Ties: the gradient is split equally among all elements equal to the max (as in
/// JAX and PyTorch's `amax`), so `max([1, 3, 3])` sends `[0, ½, ½]` of its gradient.
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

    /// `grad` to the elements equal to the max, split equally among ties: reads `x` and
    /// the saved output to find them.
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
/// Ties: the gradient is split equally among all elements equal to the min.
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

    /// `grad` to the elements equal to the min, split equally among ties: reads `x` and
    /// the saved output to find them.
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
