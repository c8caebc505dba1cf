//! Trigonometric and hyperbolic functions and their inverses, each one
//! `#[elementwise]` scalar function (the CPU loops, the CUDA kernels and every
//! derivative generated from it), as PyTorch's `torch.tan`, `torch.atan2`, ...
//!
//! An integer or boolean input computes in `f32`, as every generated op's does
//! (PyTorch's give a float too).

use autograd_core::cases;
use autograd_core::{CheckCase, Result, Tensor};
use autograd_macros::differentiable;

fn unary_case(
    name: &'static str,
    f: fn(&Tensor) -> Result<Tensor>,
    seed: u64,
    lo: f64,
    hi: f64,
) -> Vec<CheckCase> {
    vec![cases::unary(name, cases::uniform(seed, &[2, 3], lo, hi), f)]
}

/// Tangent (`torch.tan`).
#[differentiable(crate = ::autograd_core, method)]
pub mod tan {
    use super::*;

    /// The tangent elementwise (radians).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.tan()
    }

    /// d/dx tan x = 1 + tan² x: from the saved output (PyTorch's formula).
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        grad * (1.0 + output * output)
    }

    /// Gradcheck input: `[2, 3]` in `[-1.2, 1.2)`, away from the poles at ±π/2.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("tan", tan, 41, -1.2, 1.2)
    }
}

/// Arcsine (`torch.asin`).
#[differentiable(crate = ::autograd_core, method)]
pub mod asin {
    use super::*;

    /// The arcsine elementwise, in `[-π/2, π/2]` (NaN outside `[-1, 1]`).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.asin()
    }

    /// Gradcheck input: `[2, 3]` in `[-0.9, 0.9)`, inside the domain and away from its ends, where the slope is infinite.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("asin", asin, 42, -0.9, 0.9)
    }
}

/// Arccosine (`torch.acos`).
#[differentiable(crate = ::autograd_core, method)]
pub mod acos {
    use super::*;

    /// The arccosine elementwise, in `[0, π]` (NaN outside `[-1, 1]`).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.acos()
    }

    /// Gradcheck input: `[2, 3]` in `[-0.9, 0.9)`, inside the domain and away from its ends, where the slope is infinite.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("acos", acos, 43, -0.9, 0.9)
    }
}

/// Arctangent (`torch.atan`).
#[differentiable(crate = ::autograd_core, method)]
pub mod atan {
    use super::*;

    /// The arctangent elementwise, in `(-π/2, π/2)`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.atan()
    }

    /// Gradcheck input: `[2, 3]` in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("atan", atan, 44, -3.0, 3.0)
    }
}

/// Hyperbolic sine (`torch.sinh`).
#[differentiable(crate = ::autograd_core, method)]
pub mod sinh {
    use super::*;

    /// The hyperbolic sine elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.sinh()
    }

    /// Gradcheck input: `[2, 3]` in `[-2, 2)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("sinh", sinh, 45, -2.0, 2.0)
    }
}

/// Hyperbolic cosine (`torch.cosh`).
#[differentiable(crate = ::autograd_core, method)]
pub mod cosh {
    use super::*;

    /// The hyperbolic cosine elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.cosh()
    }

    /// Gradcheck input: `[2, 3]` in `[-2, 2)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("cosh", cosh, 46, -2.0, 2.0)
    }
}

/// Inverse hyperbolic sine (`torch.asinh`).
#[differentiable(crate = ::autograd_core, method)]
pub mod asinh {
    use super::*;

    /// The inverse hyperbolic sine elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.asinh()
    }

    /// Gradcheck input: `[2, 3]` in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("asinh", asinh, 47, -3.0, 3.0)
    }
}

/// Inverse hyperbolic cosine (`torch.acosh`).
#[differentiable(crate = ::autograd_core, method)]
pub mod acosh {
    use super::*;

    /// The inverse hyperbolic cosine elementwise (NaN below 1).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.acosh()
    }

    /// Gradcheck input: `[2, 3]` in `[1.2, 3)`, inside the domain and away from 1, where the slope is infinite.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("acosh", acosh, 48, 1.2, 3.0)
    }
}

/// Inverse hyperbolic tangent (`torch.atanh`).
#[differentiable(crate = ::autograd_core, method)]
pub mod atanh {
    use super::*;

    /// The inverse hyperbolic tangent elementwise (`±inf` at ±1, NaN beyond).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.atanh()
    }

    /// Gradcheck input: `[2, 3]` in `[-0.8, 0.8)`, inside the domain and away from the poles at ±1.
    pub fn check_cases() -> Vec<CheckCase> {
        unary_case("atanh", atanh, 49, -0.8, 0.8)
    }
}

/// The angle of the point `(x, y)` (`torch.atan2(y, x)`), in `[-π, π]`, `y` and
/// `x` broadcasting as NumPy's.
///
/// Its gradients are `x / (x² + y²)` for `y` and `-y / (x² + y²)` for `x`: NaN at
/// the origin, where PyTorch's are NaN too.
#[differentiable(crate = ::autograd_core, method)]
pub mod atan2 {
    use super::*;

    /// `atan2(y, x)` elementwise, broadcasting; the signs of both give the
    /// quadrant. An error when the shapes do not broadcast, or the devices differ.
    #[elementwise]
    pub fn forward(y: f32, x: f32) -> f32 {
        y.atan2(x)
    }

    /// Gradcheck inputs: equal shapes, and each operand broadcast against the
    /// other, in all four quadrants and away from the origin.
    pub fn check_cases() -> Vec<CheckCase> {
        cases::binary("atan2", atan2, (-1.0, 1.0), (0.3, 1.5))
            .into_iter()
            .chain([CheckCase::new(
                "atan2 left half-plane",
                vec![
                    cases::uniform(50, &[2, 3], -1.0, 1.0),
                    cases::uniform(51, &[2, 3], -1.5, -0.3),
                ],
                |v| atan2(&v[0], &v[1]),
            )])
            .collect()
    }
}
