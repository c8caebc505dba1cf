//! The primitive ops: the arithmetic behind the operators (`+ - * /`, unary `-`,
//! with a tensor or a constant) and the two shape ops of broadcasting, which the
//! engine itself records when it reduces a gradient to its input's shape under
//! `create_graph`. They are defined here, with the same macro as every other op, so
//! that the operators and the engine call them directly.

use crate::cases;
use crate::{BinaryOp, CheckCase, DType, Result, Shape, Tensor, UnaryOp, compute, grad_if};
use autograd_macros::differentiable;

/// The registered names of the ops in this module (the standard op list of
/// `autograd-ops` includes them; a test checks this list against the registry).
pub const PRIMITIVE_OPS: [&str; 11] = [
    "add",
    "add_scalar",
    "broadcast_to",
    "div",
    "div_scalar",
    "mul",
    "mul_scalar",
    "neg",
    "sub",
    "sum_to_shape",
    "to_dtype",
];

/// The method traits of the primitives that have one (`x.mul_scalar(2.0)`); the
/// operators cover the rest.
pub mod methods {
    pub use super::add_scalar::Method as _;
    pub use super::div_scalar::Method as _;
    pub use super::mul_scalar::Method as _;
    pub use super::to_dtype::Method as _;
}

/// `a + b`.
#[differentiable(crate = crate)]
pub mod add {
    use super::*;

    /// `a + b` elementwise, broadcasting as NumPy does. An error when the shapes do not
    /// broadcast, or the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Add)
    }

    /// `grad` to both operands unchanged (the engine sums it down to each shape).
    pub fn backward(grad: Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.clone(), grad))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("add", add, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// `a - b`.
#[differentiable(crate = crate)]
pub mod sub {
    use super::*;

    /// `a - b` elementwise, broadcasting. An error when the shapes do not broadcast, or
    /// the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Sub)
    }

    /// `grad` to `a`, `-grad` to `b`.
    pub fn backward(grad: Tensor, needs: [bool; 2]) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let db = grad_if(needs[1], || neg(&grad))?;
        Ok((needs[0].then_some(grad), db))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("sub", sub, (-1.0, 1.0), (-1.0, 1.0))
    }
}

/// `a * b`.
#[differentiable(crate = crate)]
pub mod mul {
    use super::*;

    /// `a * b` elementwise, broadcasting. An error when the shapes do not broadcast, or
    /// the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Mul)
    }

    /// d/da = b, d/db = a: each operand's gradient reads the other, so both are saved.
    /// `grad` and `a` are owned: `grad · a` goes into `a`'s buffer and `grad · b`
    /// into `grad`'s, where nothing else holds them (a chain `y = y * x` whose
    /// intermediate products the user dropped), so the backward allocates nothing.
    pub fn backward(
        grad: Tensor,
        a: Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        // `x * x`: both gradients are `grad * x`, computed once (the engine adds them).
        // The same tensor (so the same place in the graph) with the same values: an id
        // alone does not say the values are the same.
        if needs == [true, true] && a.id() == b.id() && a.same_values_as(b) {
            let g = (grad * &a)?;
            return Ok((Some(g.clone()), Some(g)));
        }
        let db = grad_if(needs[1], || a * &grad)?;
        let da = grad_if(needs[0], || grad * b)?;
        Ok((da, db))
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
#[differentiable(crate = crate)]
pub mod div {
    use super::*;

    /// `a / b` elementwise, broadcasting (IEEE division: `x / 0` is an infinity or NaN,
    /// not an error). An error when the shapes do not broadcast, or the dtypes or
    /// devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Div)
    }

    /// d/da = 1/b, d/db = -a/b².
    /// (`grad` and `a` owned, written into as `mul`'s backward does.)
    pub fn backward(
        grad: Tensor,
        a: Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let db = grad_if(needs[1], || neg(&((a * &grad)? / mul(b, b)?)?))?;
        let da = grad_if(needs[0], || grad / b)?;
        Ok((da, db))
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the other.
    /// Divisors in `[0.5, 2)`, away from the pole at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("div", div, (-1.0, 1.0), (0.5, 2.0))
    }
}

/// `-x`.
#[differentiable(crate = crate)]
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
#[differentiable(crate = crate, method)]
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
    pub fn backward(grad: Tensor) -> Result<Tensor> {
        Ok(grad)
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
#[differentiable(crate = crate, method)]
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
#[differentiable(crate = crate, method)]
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

/// `x` repeated along new leading axes and axes of size 1, to `shape`.
#[differentiable(crate = crate)]
pub mod broadcast_to {
    use super::*;

    /// The target shape.
    #[derive(Clone, Debug)]
    pub struct BroadcastTo {
        /// The target shape; `x`'s shape must broadcast to it.
        pub shape: Shape,
    }

    /// A view with stride 0 on the repeated axes (nothing is copied). An error when
    /// `x`'s shape does not broadcast to `shape`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::broadcast_to(x, self.shape.clone())
    }

    /// `grad` summed over the repeated axes, back to `x`'s shape.
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        sum_to_shape(grad, x_shape.clone())
    }

    /// Gradcheck input: a `[3, 1]` tensor broadcast to `[2, 3, 4]` (a new leading axis
    /// and a stretched one).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "broadcast_to [3,1] -> [2,3,4]",
            vec![cases::uniform(22, &[3, 1], -1.0, 1.0)],
            |x| broadcast_to(&x[0], Shape::from([2, 3, 4])),
        )]
    }
}

/// Sums `x` down to `shape`, which must broadcast to `x`'s shape: the reduction the
/// engine applies to every gradient of a broadcast input.
#[differentiable(crate = crate)]
pub mod sum_to_shape {
    use super::*;

    /// The target shape.
    #[derive(Clone, Debug)]
    pub struct SumToShape {
        /// The target shape; it must broadcast to `x`'s shape.
        pub shape: Shape,
    }

    /// `x` summed over the axes that `shape` lacks or has as 1. An error when `shape`
    /// does not broadcast to `x`'s shape.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::sum_to_shape(x, &self.shape)
    }

    /// `grad` broadcast back to `x`'s shape.
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        broadcast_to(grad, x_shape.clone())
    }

    /// Gradcheck input: a `[4, 3, 5]` tensor summed to `[3, 1]`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "sum_to_shape [4,3,5] -> [3,1]",
            vec![cases::uniform(23, &[4, 3, 5], -1.0, 1.0)],
            |x| sum_to_shape(&x[0], Shape::from([3, 1])),
        )]
    }
}

/// `x` converted to another element type, recorded: the gradient is converted back
/// to `x`'s dtype (unlike `compute::cast`, which records nothing).
#[differentiable(crate = crate, method)]
pub mod to_dtype {
    use super::*;

    /// The element type of the result.
    #[derive(Clone, Copy, Debug)]
    pub struct ToDtype {
        /// The element type of the result.
        pub dtype: DType,
    }

    /// `x`'s values as `dtype` (rounded to nearest going to f32); `x` itself when it
    /// has that dtype already.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::cast(x, self.dtype)
    }

    /// The gradient, converted back to the input's dtype (no tensor is saved).
    pub fn backward(grad: &Tensor, x_dtype: DType) -> Result<Tensor> {
        to_dtype(grad, x_dtype)
    }

    /// Gradcheck input: a tensor kept in its own dtype (a round trip through f32
    /// rounds away what finite differences measure; the integration tests check
    /// the conversions).
    pub fn check_cases() -> Vec<CheckCase> {
        let x = crate::random::Rng::new(52)
            .uniform([2, 3], -1.0, 1.0, DType::F64)
            .unwrap_or_else(|_| cases::fallback(&[2, 3], 1.0));
        vec![CheckCase::new(
            "to_dtype (to its own dtype)",
            vec![x],
            |x| to_dtype(&x[0], x[0].dtype()),
        )]
    }
}
