//! Elementwise arithmetic with NumPy broadcasting. Backward returns gradients of the
//! output's shape; the engine sums them back to each input's shape.

use autograd_core::cases;
use autograd_core::primitives::{mul, mul_scalar};
use autograd_core::{CheckCase, Result, Tensor, UnaryOp, compute};
use autograd_macros::differentiable;

/// `a^b` elementwise, the exponent a tensor too.
///
/// d/da = b·a^(b-1); d/db = a^b·ln a, which is defined for `a > 0` only (NaN for a
/// negative base), as with a real logarithm. Differentiate with respect to the
/// exponent only where the base is not negative.
///
/// At the kinks, PyTorch's gradients (`pow_backward_self`, `pow_backward_exponent`):
/// d/da is 0 where `b == 0` (not `0·0^-1`, NaN, at `a = 0`), and d/db is 0 where
/// `a == 0 && b >= 0` (not `0·ln 0`, NaN, or `1·ln 0`, `-inf`). These are the
/// derivatives of `powf` on dual numbers, so they hold at every order.
///
/// As a method, [`TensorExt::pow`](crate::TensorExt::pow) (`x.pow(&b)`), which
/// takes a number exponent too (`x.pow(3.0)`, that is [`pow_scalar`](fn@pow_scalar)).
#[differentiable(crate = ::autograd_core)]
pub mod pow {
    use super::*;

    /// `a^b` elementwise, broadcasting (NaN for a negative base and a non-integral
    /// exponent, as `powf`). An error when the shapes do not broadcast, or the dtypes
    /// or devices differ.
    #[elementwise]
    pub fn forward(a: f32, b: f32) -> f32 {
        a.powf(b)
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Bases in `[0.5, 2)`, where `ln a` is defined.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("pow", pow, (0.5, 2.0), (-1.5, 1.5))
    }
}

/// The larger of `a` and `b` elementwise (NaN if either is NaN).
///
/// Ties: where `a == b` the gradient is split equally, half to each operand (as in
/// PyTorch and JAX), so the result is symmetric in its operands.
#[differentiable(crate = ::autograd_core, method)]
pub mod maximum {
    use super::*;

    /// The larger of `a` and `b` elementwise, broadcasting (`a + b`, a NaN, where
    /// they are unordered). An error when the shapes do not broadcast, or the dtypes
    /// or devices differ.
    /// (`+ 0.0` makes a tie of `-0` and `+0` give `+0` in either order.)
    #[elementwise]
    pub fn forward(a: f32, b: f32) -> f32 {
        if a != a || b != b {
            a + b
        } else {
            a.max(b) + 0.0
        }
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Random values, so ties (where there is no derivative) do not occur.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("maximum", maximum, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// The smaller of `a` and `b` elementwise (NaN if either is NaN).
///
/// Ties: where `a == b` the gradient is split equally, half to each operand.
#[differentiable(crate = ::autograd_core, method)]
pub mod minimum {
    use super::*;

    /// The smaller of `a` and `b` elementwise, broadcasting (a NaN where they are
    /// unordered). An error when the shapes do not broadcast, or the dtypes or
    /// devices differ.
    /// (As `-maximum(-a, -b)`: a tie of `-0` and `+0` gives `-0` in either order.)
    #[elementwise]
    pub fn forward(a: f32, b: f32) -> f32 {
        if a != a || b != b {
            a + b
        } else {
            -((-a).max(-b) + 0.0)
        }
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Random values, so ties (where there is no derivative) do not occur.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("minimum", minimum, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// `x^p` for a constant exponent `p`.
#[differentiable(crate = ::autograd_core, method)]
pub mod pow_scalar {
    use super::*;

    /// The exponent.
    #[derive(Clone, Copy, Debug)]
    pub struct PowScalar {
        /// The exponent `p` (any real; a negative base with a non-integral `p` gives
        /// NaN).
        pub exponent: f64,
    }

    /// `x^p` elementwise.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::PowScalar(self.exponent))
    }

    /// d/dx x^p = p·x^(p-1); exactly 0 for p = 0 (no `0·x^-1` at x = 0).
    pub fn backward(&self, grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let p = self.exponent;
        if p == 0.0 {
            return mul_scalar(grad, 0.0);
        }
        if p == 1.0 {
            return Ok(grad.clone());
        }
        mul_scalar(&mul(grad, &pow_scalar(x, p - 1.0)?)?, p)
    }

    /// Gradcheck inputs: non-integral exponents on positive bases, and the exponents 3,
    /// 2, 1 and 0 (the special cases of backward) on bases of either sign.
    pub fn check_cases() -> Vec<CheckCase> {
        let pos = cases::uniform(4, &[2, 3], 0.5, 2.0);
        let any = cases::uniform(5, &[2, 3], -1.5, 1.5);
        vec![
            cases::unary("pow_scalar 2.5", pos.clone(), |x| pow_scalar(x, 2.5)),
            cases::unary("pow_scalar -1.5", pos, |x| pow_scalar(x, -1.5)),
            cases::unary("pow_scalar 3 (negative base)", any.clone(), |x| {
                pow_scalar(x, 3.0)
            }),
            cases::unary("pow_scalar 2", any.clone(), |x| pow_scalar(x, 2.0)),
            cases::unary("pow_scalar 1", any.clone(), |x| pow_scalar(x, 1.0)),
            cases::unary("pow_scalar 0", any, |x| pow_scalar(x, 0.0)),
        ]
    }
}
