//! Elementwise functions defined by one scalar function each (`#[elementwise]`):
//! the kernels and every derivative are generated from it.

use autograd_core::cases;
use autograd_core::{BinaryOp, CheckCase, DType, Error, Result, Tensor, compute};
use autograd_macros::differentiable;

/// Values away from the kinks at 0 (and at ±1 for the clamps), both signs.
fn away_from_kinks() -> Tensor {
    cases::values(&[-1.5, -0.3, 0.4, 1.3, -0.7, 2.1], &[2, 3])
}

/// The error function.
#[differentiable(crate = ::autograd_core, method)]
pub mod erf {
    use super::*;

    /// `erf(x) = 2/√π ∫₀ˣ e^(-t²) dt`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.erf()
    }

    /// Gradcheck input: `[2, 3]` in `[-2, 2)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "erf",
            cases::uniform(31, &[2, 3], -2.0, 2.0),
            erf,
        )]
    }
}

/// `ln(1 + eˣ)`, computed without overflow.
#[differentiable(crate = ::autograd_core, method)]
pub mod softplus {
    use super::*;

    /// `max(x, 0) + ln(1 + e^(-|x|))`: the same value, never overflowing.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.max(0.0) + (-x.abs()).exp().ln_1p()
    }

    /// Gradcheck input: away from 0, where `max` and `abs` have kinks that cancel.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("softplus", away_from_kinks(), softplus)]
    }
}

/// `x · σ(x)` (the sigmoid-weighted linear unit, or swish).
#[differentiable(crate = ::autograd_core, method)]
pub mod silu {
    use super::*;

    /// `x / (1 + e^(-x))`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x / (1.0 + (-x).exp())
    }

    /// Gradcheck input: `[2, 3]` in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "silu",
            cases::uniform(32, &[2, 3], -3.0, 3.0),
            silu,
        )]
    }
}

/// `x · tanh(softplus(x))`.
#[differentiable(crate = ::autograd_core, method)]
pub mod mish {
    use super::*;

    /// `x · tanh(ln(1 + eˣ))`, the softplus computed without overflow.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x * (x.max(0.0) + (-x.abs()).exp().ln_1p()).tanh()
    }

    /// Gradcheck input: away from 0 (see `softplus`).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("mish", away_from_kinks(), mish)]
    }
}

/// `ln(1 + x)`, accurate near 0.
#[differentiable(crate = ::autograd_core, method)]
pub mod log1p {
    use super::*;

    /// `ln(1 + x)`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.ln_1p()
    }

    /// Gradcheck input: `[2, 3]` in `[-0.5, 2)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "log1p",
            cases::uniform(33, &[2, 3], -0.5, 2.0),
            log1p,
        )]
    }
}

/// `eˣ - 1`, accurate near 0.
#[differentiable(crate = ::autograd_core, method)]
pub mod expm1 {
    use super::*;

    /// `eˣ - 1`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.exp_m1()
    }

    /// Gradcheck input: `[2, 3]` in `[-1, 1)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "expm1",
            cases::uniform(34, &[2, 3], -1.0, 1.0),
            expm1,
        )]
    }
}

/// `x` where positive, `slope · x` elsewhere.
#[differentiable(crate = ::autograd_core, method)]
pub mod leaky_relu {
    use super::*;

    /// The slope for negative inputs (PyTorch's default is 0.01).
    #[derive(Clone, Copy, Debug)]
    pub struct LeakyRelu {
        /// The slope for negative inputs.
        pub slope: f64,
    }

    /// `x` if `x > 0`, else `slope · x` (gradient `slope` at 0).
    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { self.slope * x }
    }

    /// Gradcheck input: away from the kink at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("leaky_relu", away_from_kinks(), |x| {
            leaky_relu(x, 0.1)
        })]
    }
}

/// The exponential linear unit.
#[differentiable(crate = ::autograd_core, method)]
pub mod elu {
    use super::*;

    /// The scale of the negative part (PyTorch's default is 1).
    #[derive(Clone, Copy, Debug)]
    pub struct Elu {
        /// `alpha` in `alpha · (eˣ - 1)` for `x ≤ 0`.
        pub alpha: f64,
    }

    /// `x` if `x > 0`, else `alpha · (eˣ - 1)`.
    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { self.alpha * x.exp_m1() }
    }

    /// Gradcheck input: away from the kink at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("elu", away_from_kinks(), |x| elu(x, 0.7))]
    }
}

/// `1 / x`.
#[differentiable(crate = ::autograd_core, method)]
pub mod recip {
    use super::*;

    /// `1 / x`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.recip()
    }

    /// Gradcheck input: away from 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("recip", away_from_kinks(), recip)]
    }
}

/// `x` limited to `[min, max]` (`torch.clamp(x, min, max)`).
///
/// The gradient is 1 where `min <= x <= max`, on the bounds too, as PyTorch's
/// (whereas [`hardtanh`](mod@hardtanh) stops it on its bounds, as PyTorch's does).
#[differentiable(crate = ::autograd_core, method)]
pub mod clamp {
    use super::*;

    /// The bounds.
    #[derive(Clone, Copy, Debug)]
    pub struct Clamp {
        /// The lower bound.
        pub min: f64,
        /// The upper bound (at least `min`).
        pub max: f64,
    }

    /// `min(max(x, min), max)`.
    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        x.clamp(self.min, self.max)
    }

    /// The gradient passes where `min <= x <= max`, bounds included, and is 0
    /// elsewhere and at a NaN `x`: PyTorch's `clamp_backward`,
    /// `where((x >= min) & (x <= max), grad, 0)`. A NaN bound, which the forward
    /// ignores, stops nothing. The mask is a constant, so the second derivative is 0.
    #[elementwise]
    pub fn backward(&self, x: f32, grad: f32) -> f32 {
        if x < self.min || x > self.max || x != x {
            0.0
        } else {
            grad
        }
    }

    /// Gradcheck input: inside and outside `[-1, 1]`, none on a bound.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("clamp", away_from_kinks(), |x| {
            clamp(x, -1.0, 1.0)
        })]
    }
}

/// `x` limited to `[-1, 1]` (`torch.nn.functional.hardtanh(x)`).
///
/// The gradient is 1 where `-1 < x < 1` and 0 on the bounds, as PyTorch's (whereas
/// [`clamp`](mod@clamp) passes it on its bounds, as PyTorch's does).
#[differentiable(crate = ::autograd_core, method)]
pub mod hardtanh {
    use super::*;

    /// `min(max(x, -1), 1)`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.clamp(-1.0, 1.0)
    }

    /// The gradient passes where `-1 < x < 1`, bounds excluded, and is 0 elsewhere
    /// (NaN included): PyTorch's `hardtanh_backward`. The mask is a constant, so the
    /// second derivative is 0.
    #[elementwise]
    pub fn backward(x: f32, grad: f32) -> f32 {
        if x > -1.0 && x < 1.0 { grad } else { 0.0 }
    }

    /// Gradcheck input: inside and outside `[-1, 1]`, none on a bound.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("hardtanh", away_from_kinks(), hardtanh)]
    }
}

/// `a` where `mask` is nonzero, else `b`, over values of one floating dtype: the
/// recorded op of `r#where` (the function, which checks the condition is `bool`
/// and converts it to the values' dtype), registered as `where`.
#[differentiable(crate = ::autograd_core, name = "where")]
pub mod where_op {
    use super::*;

    /// `a` where `mask ≠ 0`, else `b`, all three broadcast to one shape; the mask
    /// gets no gradient.
    #[elementwise]
    pub fn forward(#[no_grad] mask: f32, a: f32, b: f32) -> f32 {
        if mask != 0.0 { a } else { b }
    }

    /// The gradient goes to `a` where the mask is set, to `b` elsewhere: it reads
    /// only the mask, so the graph saves only the mask.
    #[elementwise]
    pub fn backward(mask: f32, grad: f32) -> (f32, f32) {
        let set = mask != 0.0;
        (if set { grad } else { 0.0 }, if set { 0.0 } else { grad })
    }

    /// Gradcheck input: a `[2, 3]` `bool` mask of both values, `a` and `b`
    /// broadcast.
    pub fn check_cases() -> Vec<CheckCase> {
        let mask = Tensor::from_slice(&[true, false, false, true, true, false], [2, 3])
            .unwrap_or_else(|_| cases::fallback(&[2, 3], 0.0));
        let a = cases::uniform(35, &[2, 3], -1.0, 1.0);
        let b = cases::uniform(36, &[3], -1.0, 1.0);
        vec![
            CheckCase::new("where", vec![mask, a, b], |v| {
                super::r#where(&v[0], &v[1], &v[2])
            })
            .differentiable(vec![false, true, true]),
        ]
    }
}

/// `a` where `condition` is `true`, else `b` (NumPy's and PyTorch's `where`), all
/// three broadcast to one shape.
///
/// `condition` is a `bool` tensor (the comparisons give one: `where(&gt(&x,
/// &zero)?, &x, &y)`); it gets no gradient. `a` and `b` meet in their common dtype
/// (PyTorch's `result_type`). Floating values are recorded ([`where_op`](mod@where_op),
/// registered as `where`: the gradient goes to `a` where the condition holds, to
/// `b` elsewhere); integer and boolean values are selected exactly, unrecorded. The
/// condition is converted to the values' dtype on their device, so a `bool`
/// condition on the host selects among values on a GPU too.
///
/// Errors name `where`: a condition that is not `bool` (convert a 0/1 mask with
/// `.to_dtype(DType::Bool)`, "not zero"), shapes that do not broadcast, values on
/// different devices.
///
/// ```
/// use autograd_core::{DType, Tensor};
/// use autograd_ops::{gt, r#where};
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let x = Tensor::from_slice(&[-1.0f32, 2.0], [2])?;
/// let y = r#where(&gt(&x, &x.zeros_like()?)?, &x, &x.zeros_like()?)?; // relu
/// assert_eq!(y.to_vec::<f32>()?, [0.0, 2.0]);
/// let i = Tensor::from_slice(&[7i64, 8], [2])?;
/// let picked = r#where(&gt(&x, &x.zeros_like()?)?, &i, &Tensor::zeros([2], DType::I64)?)?;
/// assert_eq!((picked.dtype(), picked.to_vec::<i64>()?), (DType::I64, vec![0, 8]));
/// # Ok(())
/// # }
/// ```
#[track_caller]
pub fn r#where(condition: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    const OP: &str = "where";
    if condition.dtype() != DType::Bool {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "the condition (shape {}) is {}, and `where` takes a bool condition (as \
                 PyTorch's); make one with a comparison (`gt`, `ne`, ..) or convert a 0/1 \
                 mask with `.to_dtype(DType::Bool)`",
                condition.shape(),
                condition.dtype()
            ),
        });
    }
    let common = DType::promote(a.dtype(), b.dtype());
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch {
            op: OP,
            lhs: a.device(),
            rhs: b.device(),
        });
    }
    let device = a.device();
    if common.is_float() {
        let mask = (|| compute::to_device(&compute::cast(condition, common)?, device))()
            .map_err(|e| e.in_op(OP))?;
        return where_op(&mask, a, b);
    }
    // Integers (booleans as u8): `b + mask · (a - b)` in wrapping arithmetic, which
    // is `a` exactly where the mask is 1 (the differences wrap back) and `b` where
    // it is 0.
    let run = || {
        let d = if common == DType::Bool {
            DType::U8
        } else {
            common
        };
        let mask = compute::to_device(&compute::cast(condition, d)?, device)?;
        let (a, b) = (compute::cast(a, d)?, compute::cast(b, d)?);
        let diff = compute::binary(&a, &b, BinaryOp::Sub)?;
        let picked = compute::binary(&mask, &diff, BinaryOp::Mul)?;
        compute::cast(&compute::binary(&b, &picked, BinaryOp::Add)?, common)
    };
    run().map_err(|e| e.in_op(OP))
}
