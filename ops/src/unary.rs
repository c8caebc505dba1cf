//! Elementwise functions of one tensor.

use crate::mul;
use autograd_core::{CheckCase, DType, Result, Tensor, UnaryOp, compute, random::Rng};
use autograd_macros::differentiable;

fn unary_case(
    name: &'static str,
    f: fn(&Tensor) -> Result<Tensor>,
    lo: f64,
    hi: f64,
) -> Vec<CheckCase> {
    let x = Rng::new(11)
        .uniform([2, 3], lo, hi, DType::F64)
        .unwrap_or_else(|_| Tensor::ones([2, 3], DType::F64));
    vec![CheckCase::new(name, vec![x], move |x| f(&x[0]))]
}

/// `e^x`.
#[differentiable(crate = ::autograd_core)]
pub mod exp {
    use super::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Exp)
    }

    /// d/dx e^x = e^x: the output, saved instead of the input.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        mul(grad, output)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("exp", exp, -1.0, 1.0)
    }
}

/// Natural logarithm.
#[differentiable(crate = ::autograd_core)]
pub mod log {
    use super::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Log)
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        crate::div(grad, x)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("log", log, 0.5, 2.0)
    }
}

/// `max(x, 0)`.
#[differentiable(crate = ::autograd_core)]
pub mod relu {
    use super::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Relu)
    }

    /// The gradient passes where the output is positive. The output is saved (not
    /// the input): the next op usually saves it too, so the two share one buffer.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        mul(grad, &relu_mask(output)?)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        // Away from 0, where relu has no derivative.
        let x = Tensor::from_vec(vec![-1.5, -0.3, 0.4, 1.2, -0.7, 2.0], [2, 3])
            .unwrap_or_else(|_| Tensor::ones([2, 3], DType::F64));
        vec![CheckCase::new("relu", vec![x], |x| relu(&x[0]))]
    }
}

/// 1 where `x > 0`, else 0: a constant (its derivative is zero almost everywhere).
pub fn relu_mask(x: &Tensor) -> Result<Tensor> {
    compute::unary(x, UnaryOp::Step)
}
