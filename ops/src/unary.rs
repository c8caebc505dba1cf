//! Elementwise functions of one tensor.

use crate::{add, add_scalar, div, mul, mul_scalar, neg};
use autograd_core::cases;
use autograd_core::{CheckCase, Result, Tensor, UnaryOp, compute, is_grad_enabled};
use autograd_macros::differentiable;

fn unary_case(
    name: &'static str,
    f: fn(&Tensor) -> Result<Tensor>,
    lo: f64,
    hi: f64,
) -> Vec<CheckCase> {
    vec![cases::unary(name, cases::uniform(11, &[2, 3], lo, hi), f)]
}

/// Values for checking ops with a kink at 0 (relu, abs): both signs, none near 0.
fn away_from_zero() -> Tensor {
    cases::values(&[-1.5, -0.3, 0.4, 1.2, -0.7, 2.0], &[2, 3])
}

/// `e^x`.
#[differentiable(crate = ::autograd_core, method)]
pub mod exp {
    use super::*;

    /// `e^x` elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Exp)
    }

    /// d/dx e^x = e^x: the output, saved instead of the input.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        mul(grad, output)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-1, 1)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("exp", exp, -1.0, 1.0)
    }
}

/// Natural logarithm.
#[differentiable(crate = ::autograd_core, method)]
pub mod log {
    use super::*;

    /// The natural logarithm elementwise (NaN below 0, `-inf` at 0).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Log)
    }

    /// d/dx ln x = 1/x.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        crate::div(grad, x)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[0.5, 2)`, away from the pole at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("log", log, 0.5, 2.0)
    }
}

/// `max(x, 0)`. The gradient at exactly 0 is 0.
#[differentiable(crate = ::autograd_core, method)]
pub mod relu {
    use super::*;

    /// `max(x, 0)` elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Relu)
    }

    /// The gradient passes where the output is positive. The output is saved (not
    /// the input): the next op usually saves it too, so the two share one buffer.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        mul(grad, &relu_mask(output)?)
    }

    /// Gradcheck input: fixed values of both signs, none near the kink at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        // Away from 0, where relu has no derivative.
        vec![cases::unary("relu", away_from_zero(), relu)]
    }
}

/// 1 where `x > 0`, else 0: a constant (its derivative is zero almost everywhere).
pub fn relu_mask(x: &Tensor) -> Result<Tensor> {
    compute::unary(x, UnaryOp::Step)
}

/// Square root.
#[differentiable(crate = ::autograd_core, method)]
pub mod sqrt {
    use super::*;

    /// The square root elementwise (NaN below 0).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Sqrt)
    }

    /// d/dx √x = 1 / (2√x): the output, saved instead of the input.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        div(grad, &mul_scalar(output, 2.0)?)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[0.5, 2)`, away from the infinite slope
    /// at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("sqrt", sqrt, 0.5, 2.0)
    }
}

/// `x²`.
#[differentiable(crate = ::autograd_core, method)]
pub mod square {
    use super::*;

    /// `x²` elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Square)
    }

    /// d/dx x² = 2x.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        mul(grad, &mul_scalar(x, 2.0)?)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-1, 1)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("square", square, -1.0, 1.0)
    }
}

/// `|x|`. The gradient at exactly 0 is 0 (the sign of 0).
#[differentiable(crate = ::autograd_core, method)]
pub mod abs {
    use super::*;

    /// `|x|` elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Abs)
    }

    /// The sign of `x` is a constant: its derivative is zero wherever it exists.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        mul(grad, &compute::unary(x, UnaryOp::Sign)?)
    }

    /// Gradcheck input: fixed values of both signs, none near the kink at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("abs", away_from_zero(), abs)]
    }
}

/// Hyperbolic tangent.
#[differentiable(crate = ::autograd_core, method)]
pub mod tanh {
    use super::*;

    /// The hyperbolic tangent elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Tanh)
    }

    /// d/dx tanh x = 1 - tanh² x: from the saved output.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        mul(
            grad,
            &add_scalar(&mul_scalar(&square(output)?, -1.0)?, 1.0)?,
        )
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-2, 2)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("tanh", tanh, -2.0, 2.0)
    }
}

/// The logistic function `1 / (1 + e^-x)`, computed without overflow.
#[differentiable(crate = ::autograd_core, method)]
pub mod sigmoid {
    use super::*;

    /// The logistic function elementwise.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Sigmoid)
    }

    /// d/dx σ(x) = σ(x)(1 - σ(x)): from the saved output.
    pub fn backward(grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        let one_minus = add_scalar(&neg(output)?, 1.0)?;
        mul(grad, &mul(output, &one_minus)?)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("sigmoid", sigmoid, -3.0, 3.0)
    }
}

/// √(2/π).
const GELU_C: f64 = 0.797_884_560_802_865_4;
const GELU_A: f64 = 0.044_715;

/// d/dx gelu(x) written with differentiable ops, `t = tanh(c(x + a x³))`:
/// `½(1 + t) + ½ x (1 - t²) c (1 + 3a x²)`.
fn gelu_derivative(x: &Tensor) -> Result<Tensor> {
    let x2 = square(x)?;
    let t = tanh(&mul_scalar(
        &mul(x, &add_scalar(&mul_scalar(&x2, GELU_A)?, 1.0)?)?,
        GELU_C,
    )?)?;
    let left = mul_scalar(&add_scalar(&t, 1.0)?, 0.5)?;
    let sech2 = add_scalar(&neg(&square(&t)?)?, 1.0)?;
    let poly = add_scalar(&mul_scalar(&x2, 3.0 * GELU_A)?, 1.0)?;
    let right = mul_scalar(&mul(&mul(x, &sech2)?, &poly)?, 0.5 * GELU_C)?;
    add(&left, &right)
}

/// Gaussian error linear unit, tanh approximation (as `jax.nn.gelu` by default and
/// PyTorch's `gelu(approximate="tanh")`): `½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
#[differentiable(crate = ::autograd_core, method)]
pub mod gelu {
    use super::*;

    /// GELU (tanh approximation) elementwise, in one fused kernel.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Gelu)
    }

    /// When the backward pass is not recorded (the usual case), one fused kernel
    /// computes the derivative: nothing could be recorded from it anyway. When it is
    /// recorded (`create_graph`), the derivative is built from differentiable ops so
    /// that gradients of gradients are exact.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let d = if is_grad_enabled() {
            gelu_derivative(x)?
        } else {
            compute::unary(x, UnaryOp::GeluGrad)?
        };
        mul(grad, &d)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("gelu", gelu, -3.0, 3.0)
    }
}

/// Sine.
#[differentiable(crate = ::autograd_core, method)]
pub mod sin {
    use super::*;

    /// The sine elementwise (radians).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Sin)
    }

    /// d/dx sin x = cos x.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        mul(grad, &cos(x)?)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("sin", sin, -3.0, 3.0)
    }
}

/// Cosine.
#[differentiable(crate = ::autograd_core, method)]
pub mod cos {
    use super::*;

    /// The cosine elementwise (radians).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        compute::unary(x, UnaryOp::Cos)
    }

    /// d/dx cos x = -sin x.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        neg(&mul(grad, &sin(x)?)?)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("cos", cos, -3.0, 3.0)
    }
}
