//! Products and running scans: `prod`, `cumprod`, `logcumsumexp`.
//!
//! Their gradients are written without dividing by the input, so zeros (and, for
//! `logcumsumexp`, widely spread values) get the exact gradient PyTorch's gives:
//! the product of the *other* factors is built from running products, and the sums
//! a scan's backward needs from a first-order linear recurrence
//! (`s_i = g_i + a_i · s_(i±1)`, [`linear_scan`]) whose coefficients are factors of
//! the input (`cumprod`) or ratios `exp(y_i - y_(i+1)) ≤ 1` (`logcumsumexp`). Every
//! step is a recorded op, so each backward is differentiable again.

use crate::reduce::kept_shape;
use crate::{add, broadcast_to, concat, exp, mul, narrow, reshape, sub};
use autograd_core::cases;
use autograd_core::{BinaryOp, CheckCase, DType, Error, Result, Shape, Tensor, compute};
use autograd_macros::differentiable;

/// `x` moved `by` places along `axis`, the places left empty filled with `fill`:
/// entry `i` is `x[i - by]` when `up`, else `x[i + by]`. Recorded (a `narrow`
/// joined to a constant), so it differentiates.
fn shifted(x: &Tensor, axis: usize, by: usize, up: bool, fill: f64) -> Result<Tensor> {
    let n = x.dims()[axis];
    let by = by.min(n);
    let mut gap = x.shape().clone();
    gap.dims_mut()[axis] = by;
    let filler = x.full_like_shape(gap, fill)?;
    if by == n {
        return Ok(filler);
    }
    let a = axis as isize;
    let part = narrow(x, a, if up { 0 } else { by }, n - by)?;
    if up {
        concat(&filler, &part, a)
    } else {
        concat(&part, &filler, a)
    }
}

/// The solution of `s_i = b_i + a_i · s_(i-1)` (`up`) or `s_i = b_i + a_i · s_(i+1)`
/// (not `up`) along `axis`, a missing neighbour counting as 0: `s_i` is the sum over
/// `j` on that side of `i` (`i` included) of `b_j` times the coefficients between.
/// Computed in `⌈log₂ n⌉` recorded steps (a Hillis–Steele scan of affine maps),
/// multiplying coefficients only, never dividing by them.
pub(crate) fn linear_scan(a: &Tensor, b: &Tensor, axis: usize, up: bool) -> Result<Tensor> {
    let n = b.dims()[axis];
    let (mut coef, mut sum) = (a.clone(), b.clone());
    let mut shift = 1;
    while shift < n {
        sum = add(&sum, &mul(&coef, &shifted(&sum, axis, shift, up, 0.0)?)?)?;
        if 2 * shift < n {
            coef = mul(&coef, &shifted(&coef, axis, shift, up, 0.0)?)?;
        }
        shift *= 2;
    }
    Ok(sum)
}

/// `x` itself if floating, else `x` in `i64` (products of integers and booleans are
/// `i64`, as PyTorch's).
fn widened_integers(x: &Tensor) -> Result<Tensor> {
    if x.dtype().is_float() {
        Ok(x.clone())
    } else {
        compute::cast(x, DType::I64)
    }
}

/// The product of every entry of `x` along `axis` (kept with size 1): pairwise, in
/// `⌈log₂ n⌉` halvings; 1 along an empty axis. Unrecorded.
fn product_along(x: &Tensor, axis: usize) -> Result<Tensor> {
    let mut y = x.clone();
    let mut n = x.dims()[axis];
    if n == 0 {
        return x.full_like_shape(kept_shape(x.shape(), axis), 1.0);
    }
    while n > 1 {
        let half = n / 2;
        let lo = compute::narrow(&y, axis, 0, half)?;
        let hi = compute::narrow(&y, axis, half, half)?;
        let mut p = compute::binary(&lo, &hi, BinaryOp::Mul)?;
        if n % 2 == 1 {
            let last = compute::narrow(&y, axis, 2 * half, 1)?;
            p = compute::concat(&[&p, &last], axis)?;
        }
        y = p;
        n = y.dims()[axis];
    }
    Ok(y)
}

/// Product along `axis` (negative counts from the end); `keepdim` keeps it with
/// size 1. As `torch.prod(x, axis, keepdim)`: 1 along an empty axis, `i64` for an
/// integer or boolean `x`.
///
/// The gradient is `grad` times the product of the *other* entries along the axis
/// (a running product from each side), so zeros get PyTorch's gradient: with one
/// zero, the zero's entry gets the product of the rest and the others 0; with two
/// or more, all 0. Not `grad · prod / x`, which would be `0 / 0` there.
#[differentiable(crate = ::autograd_core, method)]
pub mod prod {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Prod {
        /// The reduced axis; negative counts from the end.
        pub axis: isize,
        /// True to keep the reduced axis with size 1.
        pub keepdim: bool,
    }

    /// The product along `axis`. An error when `axis` is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let axis = compute::normalize_axis("prod", self.axis, x)?;
        let p = product_along(&widened_integers(x)?, axis)?;
        if self.keepdim {
            Ok(p)
        } else {
            compute::squeeze(&p, axis)
        }
    }

    /// `grad` times the product of the entries before and of those after each one
    /// (running products shifted by one): exact with zeros, and recorded.
    pub fn backward(&self, grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let g = self.backward(&crate::wide(grad)?, &crate::wide(x)?)?;
            return crate::to_dtype(&g, d);
        }
        let axis = compute::normalize_axis("prod", self.axis, x)?;
        let a = axis as isize;
        let before = shifted(&cumprod(x, a, false)?, axis, 1, true, 1.0)?;
        let after = shifted(&cumprod(x, a, true)?, axis, 1, false, 1.0)?;
        let spread = broadcast_to(
            &reshape(grad, kept_shape(x.shape(), axis))?,
            x.shape().clone(),
        )?;
        mul(&spread, &mul(&before, &after)?)
    }

    /// Gradcheck inputs: a random `[2, 3, 4]` tensor along a middle axis and along the
    /// last with `keepdim`; rows holding one zero and two zeros.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(60, &[2, 3, 4], 0.5, 1.5);
        let zeros = cases::values(
            &[
                0.7, 0.0, -1.2, 0.9, 0.0, 1.1, 0.0, -0.8, 1.3, 0.6, -0.5, 0.4,
            ],
            &[3, 4],
        );
        vec![
            cases::unary("prod axis 1", x.clone(), |x| prod(x, 1, false)),
            cases::unary("prod axis -1 keepdim", x, |x| prod(x, -1, true)),
            cases::unary("prod axis -1 with zeros", zeros, |x| prod(x, -1, false)),
        ]
    }
}

/// The product of every element, rank 0 (`torch.prod(x)`): [`prod`](mod@prod) of
/// `x` flattened, with its gradient (exact with zeros).
pub fn prod_all(x: &Tensor) -> Result<Tensor> {
    let flat = reshape(x, Shape::from(vec![x.numel()]))?;
    prod(&flat, 0, false).map_err(|e| e.in_op("prod_all"))
}

/// Running products along `axis` (negative counts from the end): entry `i` is the
/// product of entries `0..=i` (`torch.cumprod`), or with `reverse` of entries `i..`.
/// Integers and booleans give `i64`, as PyTorch's.
///
/// Computed in `⌈log₂ n⌉` shifted products (a Hillis–Steele scan). The gradient
/// never divides by `x`, so zeros get PyTorch's gradient (PyTorch takes a slower
/// path for inputs with zeros; here there is one path): entry `i` gets the product
/// of the entries before it times `Σ_(k ≥ i) grad_k · x_(i+1) ⋯ x_k`, the sum as a
/// linear recurrence with coefficients `x`.
#[differentiable(crate = ::autograd_core, method)]
pub mod cumprod {
    use super::*;

    /// Which axis, and which way.
    #[derive(Clone, Copy, Debug)]
    pub struct Cumprod {
        /// The axis multiplied along; negative counts from the end.
        pub axis: isize,
        /// False: products of the entries up to each one; true: from each one to the
        /// end.
        pub reverse: bool,
    }

    /// The running products. An error when `axis` is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let axis = compute::normalize_axis("cumprod", self.axis, x)?;
        let n = x.dims()[axis];
        let mut y = widened_integers(x)?;
        let mut shift = 1;
        while shift < n {
            let moved = shifted(&y, axis, shift, !self.reverse, 1.0)?;
            y = compute::binary(&y, &moved, BinaryOp::Mul)?;
            shift *= 2;
        }
        Ok(y)
    }

    /// The product of the entries before each one (the output shifted by one) times
    /// the sum of the later gradients weighted by the factors between, a linear
    /// recurrence run against the scan: no division, recorded.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let (g, x, y) = (crate::wide(grad)?, crate::wide(x)?, crate::wide(output)?);
            return crate::to_dtype(&self.backward(&g, &x, &y)?, d);
        }
        let axis = compute::normalize_axis("cumprod", self.axis, x)?;
        let up = !self.reverse;
        let before = shifted(output, axis, 1, up, 1.0)?;
        let next = shifted(x, axis, 1, !up, 0.0)?;
        mul(&before, &linear_scan(&next, grad, axis, !up)?)
    }

    /// Gradcheck inputs: a random `[2, 5, 3]` tensor along the middle axis, backwards
    /// along the last, and rows holding one and two zeros.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(61, &[2, 5, 3], 0.5, 1.5);
        let zeros = cases::values(
            &[
                0.7, 0.0, -1.2, 0.9, 0.5, 1.1, 0.0, -0.8, 0.0, 0.6, -0.5, 0.4, 1.2, 0.8, 0.0,
            ],
            &[3, 5],
        );
        vec![
            cases::unary("cumprod axis 1", x.clone(), |x| cumprod(x, 1, false)),
            cases::unary("cumprod axis -1 reverse", x, |x| cumprod(x, -1, true)),
            cases::unary("cumprod with zeros", zeros.clone(), |x| {
                cumprod(x, -1, false)
            }),
            cases::unary("cumprod reverse with zeros", zeros, |x| cumprod(x, 1, true)),
        ]
    }
}

/// `log(exp(a) + exp(b))` elementwise, unrecorded: `max + log1p(exp(min - max))`,
/// the max clamped to the finite range in the exponent so that two `-inf` give
/// `-inf` and an `inf` gives `inf` (no `inf - inf`).
fn log_add_exp(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let hi = crate::maximum(a, b)?;
    let lo = crate::minimum(a, b)?;
    let (min, max) = hi.dtype().finite_range();
    let shift = crate::clamp(&hi, min, max)?;
    let e = crate::exp(&compute::binary(&lo, &shift, BinaryOp::Sub)?)?;
    compute::binary(&hi, &crate::log1p(&e)?, BinaryOp::Add)
}

/// Running `log Σ exp` along `axis` (negative counts from the end): entry `i` is
/// `log Σ_(j ≤ i) exp(x_j)` (`torch.logcumsumexp`), or with `reverse` over `j ≥ i`.
/// Floating tensors only, as PyTorch's.
///
/// Computed in `⌈log₂ n⌉` steps of `logaddexp` (a Hillis–Steele scan), each
/// shifted by its max, so it neither overflows nor underflows; `-inf` entries add
/// nothing. The gradient `Σ_(k ≥ i) grad_k · exp(x_i - y_k)` is computed as
/// `exp(x_i - y_i) · s_i` with `s_i = grad_i + exp(y_i - y_(i+1)) · s_(i+1)`: every
/// exponent is at most 0, so no step overflows however far apart the inputs are.
/// A leading run of `-inf` inputs (whose outputs are `-inf`) gets NaN gradients.
#[differentiable(crate = ::autograd_core, method)]
pub mod logcumsumexp {
    use super::*;

    /// Which axis, and which way.
    #[derive(Clone, Copy, Debug)]
    pub struct Logcumsumexp {
        /// The axis accumulated along; negative counts from the end.
        pub axis: isize,
        /// False: over the entries up to each one; true: from each one to the end.
        pub reverse: bool,
    }

    /// The running `log Σ exp`. An error when `axis` is out of range or `x` is not
    /// floating.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        if !x.dtype().is_float() {
            return Err(Error::InvalidArgument {
                op: "logcumsumexp",
                msg: format!(
                    "the tensor (shape {}) is {}, and logcumsumexp takes a floating tensor \
                     (as PyTorch's); convert it first with `.to_dtype(DType::F32)`",
                    x.shape(),
                    x.dtype()
                ),
            });
        }
        let axis = compute::normalize_axis("logcumsumexp", self.axis, x)?;
        let n = x.dims()[axis];
        let mut y = x.clone();
        let mut shift = 1;
        while shift < n {
            let moved = shifted(&y, axis, shift, !self.reverse, f64::NEG_INFINITY)?;
            y = log_add_exp(&y, &moved)?;
            shift *= 2;
        }
        Ok(y)
    }

    /// `exp(x - y)` times a linear recurrence against the scan whose coefficients
    /// are `exp(y_i - y_next) ≤ 1`: recorded, from `x` and the saved output. For
    /// f16 and bf16, `y` is computed again in f32 (recorded): the output rounded to
    /// the half dtype would put its rounding error into every `exp(x - y)`.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let (g, x) = (crate::wide(grad)?, crate::wide(x)?);
            let y = logcumsumexp(&x, self.axis, self.reverse)?;
            return crate::to_dtype(&self.backward(&g, &x, &y)?, d);
        }
        let axis = compute::normalize_axis("logcumsumexp", self.axis, x)?;
        let n = x.dims()[axis];
        if n < 2 {
            return mul(grad, &exp(&sub(x, output)?)?);
        }
        let a = axis as isize;
        // The coefficient of entry i: exp(y_i - y_j), j its neighbour against the
        // scan (later in it); 0 at the scan's last entry, which has none.
        let first = narrow(output, a, 0, n - 1)?;
        let rest = narrow(output, a, 1, n - 1)?;
        let mut edge = x.shape().clone();
        edge.dims_mut()[axis] = 1;
        let zero = x.full_like_shape(edge, 0.0)?;
        let coef = if self.reverse {
            concat(&zero, &exp(&sub(&rest, &first)?)?, a)?
        } else {
            concat(&exp(&sub(&first, &rest)?)?, &zero, a)?
        };
        let s = linear_scan(&coef, grad, axis, self.reverse)?;
        mul(&s, &exp(&sub(x, output)?)?)
    }

    /// Gradcheck inputs: a `[2, 5, 3]` tensor in `[-2, 2)` along the middle axis, and
    /// backwards along the last; a row of far-apart values (±30).
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(62, &[2, 5, 3], -2.0, 2.0);
        let spread = cases::values(&[-30.0, 2.0, 30.0, -1.0, 29.5, 0.5], &[2, 3]);
        vec![
            cases::unary("logcumsumexp axis 1", x.clone(), |x| {
                logcumsumexp(x, 1, false)
            }),
            cases::unary("logcumsumexp axis -1 reverse", x, |x| {
                logcumsumexp(x, -1, true)
            }),
            cases::unary("logcumsumexp far apart", spread, |x| {
                logcumsumexp(x, -1, false)
            }),
        ]
    }
}
