//! Rounding and the sign, as PyTorch's `floor`, `ceil`, `round`, `trunc` and
//! `sign`: piecewise constant, so their gradient is 0 everywhere (PyTorch's is 0
//! too, at the jumps included), and a gradient flowing through them stops. Their
//! backward reads nothing, so the graph saves nothing for them.
//!
//! An integer or boolean input computes in `f32`, as every generated op's does;
//! PyTorch keeps an integer dtype here (its rounding of an integer is the integer
//! itself). Convert back with `.to_dtype(..)` where that matters.

use autograd_core::cases;
use autograd_core::{CheckCase, Tensor};
use autograd_macros::differentiable;

/// Values of both signs away from every jump of these functions (the integers,
/// the halves, 0).
fn away_from_jumps() -> Tensor {
    cases::values(&[-1.7, -0.3, 0.4, 1.3, 2.6, -2.2], &[2, 3])
}

/// Rounds down to an integer (`torch.floor`).
///
/// The gradient is 0 (PyTorch's).
#[differentiable(crate = ::autograd_core, method)]
pub mod floor {
    use super::*;

    /// The largest integer not above `x`, elementwise (±0, ±inf and NaN unchanged).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.floor()
    }

    /// The gradient is 0 wherever it is defined, and PyTorch's is 0 at the jumps
    /// too: `0 · grad`, which reads no input, so the graph saves nothing. (A
    /// non-finite `grad` gives NaN here, where PyTorch's `zeros_like` gives 0.)
    #[elementwise]
    pub fn backward(grad: f32) -> f32 {
        grad * 0.0
    }

    /// Gradcheck input: both signs, away from the jumps.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("floor", away_from_jumps(), floor)]
    }
}

/// Rounds up to an integer (`torch.ceil`).
///
/// The gradient is 0 (PyTorch's).
#[differentiable(crate = ::autograd_core, method)]
pub mod ceil {
    use super::*;

    /// The smallest integer not below `x`, elementwise (±0, ±inf and NaN unchanged).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.ceil()
    }

    /// The gradient is 0 wherever it is defined, and PyTorch's is 0 at the jumps
    /// too: `0 · grad`, which reads no input, so the graph saves nothing. (A
    /// non-finite `grad` gives NaN here, where PyTorch's `zeros_like` gives 0.)
    #[elementwise]
    pub fn backward(grad: f32) -> f32 {
        grad * 0.0
    }

    /// Gradcheck input: both signs, away from the jumps.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("ceil", away_from_jumps(), ceil)]
    }
}

/// Rounds to the nearest integer, halves to the even one (`torch.round`: `round(2.5) = 2`, `round(-0.5) = -0`), not away from zero as `f32::round` does.
///
/// The gradient is 0 (PyTorch's).
#[differentiable(crate = ::autograd_core, method)]
pub mod round {
    use super::*;

    /// The nearest integer to `x`, ties to even, elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.round_ties_even()
    }

    /// The gradient is 0 wherever it is defined, and PyTorch's is 0 at the jumps
    /// too: `0 · grad`, which reads no input, so the graph saves nothing. (A
    /// non-finite `grad` gives NaN here, where PyTorch's `zeros_like` gives 0.)
    #[elementwise]
    pub fn backward(grad: f32) -> f32 {
        grad * 0.0
    }

    /// Gradcheck input: both signs, away from the jumps.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("round", away_from_jumps(), round)]
    }
}

/// Rounds towards zero (`torch.trunc`).
///
/// The gradient is 0 (PyTorch's).
#[differentiable(crate = ::autograd_core, method)]
pub mod trunc {
    use super::*;

    /// The integer part of `x` (towards 0), elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.trunc()
    }

    /// The gradient is 0 wherever it is defined, and PyTorch's is 0 at the jumps
    /// too: `0 · grad`, which reads no input, so the graph saves nothing. (A
    /// non-finite `grad` gives NaN here, where PyTorch's `zeros_like` gives 0.)
    #[elementwise]
    pub fn backward(grad: f32) -> f32 {
        grad * 0.0
    }

    /// Gradcheck input: both signs, away from the jumps.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("trunc", away_from_jumps(), trunc)]
    }
}

/// The sign of `x`: -1, 0 or 1 (`torch.sign`).
///
/// As PyTorch's: `sign(-0) = 0` and `sign(NaN) = 0`; the gradient is 0.
#[differentiable(crate = ::autograd_core, method)]
pub mod sign {
    use super::*;

    /// 1 above 0, -1 below, 0 elsewhere (0, -0 and NaN), elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        if x > 0.0 {
            1.0
        } else if x < 0.0 {
            -1.0
        } else {
            0.0
        }
    }

    /// The gradient is 0 wherever it is defined, and PyTorch's is 0 at the jumps
    /// too: `0 · grad`, which reads no input, so the graph saves nothing. (A
    /// non-finite `grad` gives NaN here, where PyTorch's `zeros_like` gives 0.)
    #[elementwise]
    pub fn backward(grad: f32) -> f32 {
        grad * 0.0
    }

    /// Gradcheck input: both signs, away from 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("sign", away_from_jumps(), sign)]
    }
}
