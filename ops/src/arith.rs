//! Elementwise arithmetic with NumPy broadcasting. Backward returns gradients of the
//! output's shape; the engine sums them back to each input's shape.

use crate::cases;
use crate::{log, square};
use autograd_core::{BinaryOp, CheckCase, Result, Tensor, UnaryOp, compute, grad_if};
use autograd_macros::differentiable;

/// `a + b`.
#[differentiable(crate = ::autograd_core)]
pub mod add {
    use super::*;

    /// `a + b` elementwise, broadcasting as NumPy does. An error when the shapes do not
    /// broadcast, or the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Add)
    }

    /// `grad` to both operands unchanged (the engine sums it down to each shape).
    pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.clone(), grad.clone()))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("add", add, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// `a - b`.
#[differentiable(crate = ::autograd_core)]
pub mod sub {
    use super::*;

    /// `a - b` elementwise, broadcasting. An error when the shapes do not broadcast, or
    /// the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Sub)
    }

    /// `grad` to `a`, `-grad` to `b`.
    pub fn backward(grad: &Tensor, needs: [bool; 2]) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            needs[0].then(|| grad.clone()),
            grad_if(needs[1], || neg(grad))?,
        ))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("sub", sub, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// `a * b`.
#[differentiable(crate = ::autograd_core)]
pub mod mul {
    use super::*;

    /// `a * b` elementwise, broadcasting. An error when the shapes do not broadcast, or
    /// the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Mul)
    }

    /// d/da = b, d/db = a: each operand's gradient reads the other, so both are saved.
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        // `x * x`: both gradients are `grad * x`, computed once (the engine adds them).
        // The same tensor (so the same place in the graph) with the same values: an id
        // alone does not say the values are the same.
        if needs == [true, true] && a.id() == b.id() && a.same_values_as(b) {
            let g = mul(grad, a)?;
            return Ok((Some(g.clone()), Some(g)));
        }
        Ok((
            grad_if(needs[0], || mul(grad, b))?,
            grad_if(needs[1], || mul(grad, a))?,
        ))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Also `x * x` with one tensor in both places.
    pub fn check_cases() -> Vec<CheckCase> {
        let mut cases = cases::binary("mul", mul, (-1.0, 1.0), (-1.0, 1.0));
        let x = cases::uniform(120, &[2, 3], -1.0, 1.0);
        cases.push(cases::unary("mul x * x (one tensor)", x, |x| mul(x, x)));
        cases
    }
}

/// `a / b`.
#[differentiable(crate = ::autograd_core)]
pub mod div {
    use super::*;

    /// `a / b` elementwise, broadcasting (IEEE division: `x / 0` is an infinity or NaN,
    /// not an error). An error when the shapes do not broadcast, or the dtypes or
    /// devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Div)
    }

    /// d/da = 1/b, d/db = -a/b².
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let da = grad_if(needs[0], || div(grad, b))?;
        let db = grad_if(needs[1], || neg(&div(&mul(grad, a)?, &square(b)?)?))?;
        Ok((da, db))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Divisors in `[0.5, 2)`, away from the pole at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("div", div, (-1.0, 1.0), (0.5, 2.0))
    }
}

/// `-x`.
#[differentiable(crate = ::autograd_core)]
pub mod neg {
    use super::*;

    /// `-x` elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Neg)
    }

    /// `-grad`.
    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        neg(grad)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-1, 1)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "neg",
            cases::uniform(1, &[2, 3], -1.0, 1.0),
            neg,
        )]
    }
}

/// `x + scalar`.
#[differentiable(crate = ::autograd_core)]
pub mod add_scalar {
    use super::*;

    /// The constant added.
    #[derive(Clone, Copy, Debug)]
    pub struct AddScalar {
        /// The constant (converted to the tensor's dtype).
        pub scalar: f64,
    }

    /// `x + scalar` elementwise.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::AddScalar(self.scalar))
    }

    /// `grad` unchanged: the constant has no gradient.
    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }

    /// Gradcheck input: a `[3]` tensor in `[-1, 1)`, plus 2.5.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "add_scalar",
            cases::uniform(2, &[3], -1.0, 1.0),
            |x| add_scalar(x, 2.5),
        )]
    }
}

/// `x * scalar`.
#[differentiable(crate = ::autograd_core)]
pub mod mul_scalar {
    use super::*;

    /// The constant factor.
    #[derive(Clone, Copy, Debug)]
    pub struct MulScalar {
        /// The factor (converted to the tensor's dtype).
        pub scalar: f64,
    }

    /// `x * scalar` elementwise.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::MulScalar(self.scalar))
    }

    /// `grad * scalar`.
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        mul_scalar(grad, self.scalar)
    }

    /// Gradcheck input: a `[3]` tensor in `[-1, 1)`, times -1.5.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "mul_scalar",
            cases::uniform(3, &[3], -1.0, 1.0),
            |x| mul_scalar(x, -1.5),
        )]
    }
}

/// `x / scalar`: a true division, so `x / c` gives exactly what dividing by a tensor
/// holding `c` gives (multiplying by `1/c` differs by an ulp for most `c`, and
/// overflows where `1/c` does: `1e-300 / 1e-310`).
#[differentiable(crate = ::autograd_core)]
pub mod div_scalar {
    use super::*;

    /// The constant divisor.
    #[derive(Clone, Copy, Debug)]
    pub struct DivScalar {
        /// The divisor (converted to the tensor's dtype).
        pub scalar: f64,
    }

    /// `x / scalar` elementwise.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::DivScalar(self.scalar))
    }

    /// `grad / scalar`.
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        div_scalar(grad, self.scalar)
    }

    /// Gradcheck input: a `[3]` tensor in `[-1, 1)`, divided by -1.5.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "div_scalar",
            cases::uniform(3, &[3], -1.0, 1.0),
            |x| div_scalar(x, -1.5),
        )]
    }
}

/// `a^b` elementwise, the exponent a tensor too.
///
/// d/da = b·a^(b-1); d/db = a^b·ln a, which is defined for `a > 0` only (NaN for a
/// negative base, `-inf·0` at 0), as with a real logarithm. Differentiate with
/// respect to the exponent only where the base is positive.
#[differentiable(crate = ::autograd_core)]
pub mod pow {
    use super::*;

    /// `a^b` elementwise, broadcasting (NaN for a negative base and a non-integral
    /// exponent, as `powf`). An error when the shapes do not broadcast, or the dtypes
    /// or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Pow)
    }

    /// d/da = b·a^(b-1), d/db = a^b·ln a (from the saved output).
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        output: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let da = grad_if(needs[0], || {
            mul(grad, &mul(b, &pow(a, &add_scalar(b, -1.0)?)?)?)
        })?;
        let db = grad_if(needs[1], || mul(grad, &mul(output, &log(a)?)?))?;
        Ok((da, db))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Bases in `[0.5, 2)`, where `ln a` is defined.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("pow", pow, (0.5, 2.0), (-1.5, 1.5))
    }
}

/// Masks routing the gradient of `maximum`/`minimum`: 1 where `wins(a, b)`, ½ where
/// `a == b`, 0 elsewhere (and 0 where either is NaN). Constants: their derivative is
/// zero wherever it exists.
fn tie_split_mask(a: &Tensor, b: &Tensor, wins: BinaryOp) -> Result<Tensor> {
    let strict = compute::binary(a, b, wins)?;
    let ties = compute::unary(
        &compute::binary(a, b, BinaryOp::Eq)?,
        UnaryOp::MulScalar(0.5),
    )?;
    compute::binary(&strict, &ties, BinaryOp::Add)
}

/// The larger of `a` and `b` elementwise (NaN if either is NaN).
///
/// Ties: where `a == b` the gradient is split equally, half to each operand (as in
/// PyTorch and JAX), so the result is symmetric in its operands.
#[differentiable(crate = ::autograd_core)]
pub mod maximum {
    use super::*;

    /// The larger of `a` and `b` elementwise, broadcasting. An error when the shapes do
    /// not broadcast, or the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Maximum)
    }

    /// `grad` to the larger operand, half to each where they tie.
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            grad_if(needs[0], || mul(grad, &tie_split_mask(a, b, BinaryOp::Gt)?))?,
            grad_if(needs[1], || mul(grad, &tie_split_mask(a, b, BinaryOp::Lt)?))?,
        ))
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
#[differentiable(crate = ::autograd_core)]
pub mod minimum {
    use super::*;

    /// The smaller of `a` and `b` elementwise, broadcasting. An error when the shapes
    /// do not broadcast, or the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Minimum)
    }

    /// `grad` to the smaller operand, half to each where they tie.
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            grad_if(needs[0], || mul(grad, &tie_split_mask(a, b, BinaryOp::Lt)?))?,
            grad_if(needs[1], || mul(grad, &tie_split_mask(a, b, BinaryOp::Gt)?))?,
        ))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Random values, so ties (where there is no derivative) do not occur.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("minimum", minimum, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// `x^p` for a constant exponent `p`.
#[differentiable(crate = ::autograd_core)]
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
