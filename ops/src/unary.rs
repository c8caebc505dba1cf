//! Elementwise functions of one tensor, each written once as a scalar function
//! (`#[elementwise]`): the CPU loops, the CUDA kernels and every derivative are
//! generated from it.

use autograd_core::cases;
use autograd_core::{CheckCase, Result, Tensor};
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.exp()
    }

    /// d/dx e^x = e^x: the output, saved instead of the input.
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        grad * output
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.ln()
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[0.5, 2)`, away from the pole at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("log", log, 0.5, 2.0)
    }
}

/// `max(x, 0)`. The gradient at exactly 0 is 0; NaN stays NaN.
#[differentiable(crate = ::autograd_core, method)]
pub mod relu {
    use super::*;

    /// `x` where positive (or NaN), else 0.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        if x > 0.0 || x != x { x } else { 0.0 }
    }

    /// The gradient passes where the output is positive. The output is saved (not
    /// the input): the next op usually saves it too, so the two share one buffer.
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        if output > 0.0 { grad } else { 0.0 }
    }

    /// Gradcheck input: fixed values of both signs, none near the kink at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("relu", away_from_zero(), relu)]
    }
}

/// Square root.
#[differentiable(crate = ::autograd_core, method)]
pub mod sqrt {
    use super::*;

    /// The square root elementwise (NaN below 0).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.sqrt()
    }

    /// d/dx √x = 1 / (2√x): the output, saved instead of the input.
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        grad / (2.0 * output)
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x * x
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.abs()
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.tanh()
    }

    /// d/dx tanh x = 1 - tanh² x: from the saved output.
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        grad * (1.0 - output * output)
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

    /// With `e = e^-|x|` (never above 1): `1 / (1 + e)` for `x ≥ 0`, `e / (1 + e)`
    /// below.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        let e = (-x.abs()).exp();
        let s = 1.0 / (1.0 + e);
        if x >= 0.0 { s } else { e * s }
    }

    /// d/dx σ(x) = σ(x)(1 - σ(x)): from the saved output.
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        grad * output * (1.0 - output)
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("sigmoid", sigmoid, -3.0, 3.0)
    }
}

/// Gaussian error linear unit, tanh approximation (as `jax.nn.gelu` by default and
/// PyTorch's `gelu(approximate="tanh")`): `½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
///
/// Not PyTorch's default: `torch.nn.functional.gelu(x)` is the exact form,
/// [`gelu_erf`](mod@crate::gelu_erf) here; [`gelu_with`](crate::gelu_with) chooses
/// between the two as PyTorch's `approximate` does.
#[differentiable(crate = ::autograd_core, method)]
pub mod gelu {
    use super::*;

    /// GELU (tanh approximation) elementwise; `0.797..` is `√(2/π)`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        0.5 * x * (1.0 + (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh())
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.sin()
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
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.cos()
    }

    /// Gradcheck input: a `[2, 3]` tensor in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("cos", cos, -3.0, 3.0)
    }
}
