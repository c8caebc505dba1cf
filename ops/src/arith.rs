//! Elementwise arithmetic with NumPy broadcasting. Backward returns gradients of the
//! output's shape; the engine sums them back to each input's shape.

use autograd_core::{
    BinaryOp, CheckCase, DType, Result, Tensor, UnaryOp, compute, grad_if, random::Rng,
};
use autograd_macros::differentiable;

/// Inputs for checking a binary op: same shapes, and a broadcast pair.
fn binary_cases(
    name: &str,
    f: fn(&Tensor, &Tensor) -> Result<Tensor>,
    lo: f64,
    hi: f64,
) -> Vec<CheckCase> {
    let mut rng = Rng::new(7);
    let mut t = |s: &[usize]| {
        rng.uniform(s, lo, hi, DType::F64)
            .unwrap_or_else(|_| Tensor::zeros(s, DType::F64))
    };
    vec![
        CheckCase::new(
            format!("{name} [2,3] [2,3]"),
            vec![t(&[2, 3]), t(&[2, 3])],
            move |x| f(&x[0], &x[1]),
        ),
        CheckCase::new(
            format!("{name} [2,3] [3] (broadcast)"),
            vec![t(&[2, 3]), t(&[3])],
            move |x| f(&x[0], &x[1]),
        ),
        CheckCase::new(
            format!("{name} [2,1] [1,3] (broadcast both)"),
            vec![t(&[2, 1]), t(&[1, 3])],
            move |x| f(&x[0], &x[1]),
        ),
    ]
}

/// `a + b`.
#[differentiable(crate = ::autograd_core)]
pub mod add {
    use super::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Add)
    }

    pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.clone(), grad.clone()))
    }

    pub fn check_cases() -> Vec<CheckCase> {
        binary_cases("add", add, -1.0, 1.0)
    }
}

/// `a - b`.
#[differentiable(crate = ::autograd_core)]
pub mod sub {
    use super::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Sub)
    }

    pub fn backward(grad: &Tensor, needs: [bool; 2]) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            needs[0].then(|| grad.clone()),
            grad_if(needs[1], || neg(grad))?,
        ))
    }

    pub fn check_cases() -> Vec<CheckCase> {
        binary_cases("sub", sub, -1.0, 1.0)
    }
}

/// `a * b`.
#[differentiable(crate = ::autograd_core)]
pub mod mul {
    use super::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::binary(a, b, BinaryOp::Mul)
    }

    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            grad_if(needs[0], || mul(grad, b))?,
            grad_if(needs[1], || mul(grad, a))?,
        ))
    }

    pub fn check_cases() -> Vec<CheckCase> {
        binary_cases("mul", mul, -1.0, 1.0)
    }
}

/// `a / b`.
#[differentiable(crate = ::autograd_core)]
pub mod div {
    use super::*;

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
        let db = grad_if(needs[1], || neg(&div(&mul(grad, a)?, &mul(b, b)?)?))?;
        Ok((da, db))
    }

    pub fn check_cases() -> Vec<CheckCase> {
        binary_cases("div", div, 0.5, 2.0)
    }
}

/// `-x`.
#[differentiable(crate = ::autograd_core)]
pub mod neg {
    use super::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Neg)
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        neg(grad)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "neg",
            vec![Rng::new(1).uniform([2, 3], -1.0, 1.0, DType::F64).unwrap()],
            |x| neg(&x[0]),
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
        pub scalar: f64,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::AddScalar(self.scalar))
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "add_scalar",
            vec![Rng::new(2).uniform([3], -1.0, 1.0, DType::F64).unwrap()],
            |x| add_scalar(&x[0], 2.5),
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
        pub scalar: f64,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::MulScalar(self.scalar))
    }

    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        mul_scalar(grad, self.scalar)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "mul_scalar",
            vec![Rng::new(3).uniform([3], -1.0, 1.0, DType::F64).unwrap()],
            |x| mul_scalar(&x[0], -1.5),
        )]
    }
}
