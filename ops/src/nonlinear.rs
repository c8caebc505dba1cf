//! PyTorch's activation functions beyond those of `activation.rs`, each one
//! `#[elementwise]` scalar function (the CPU loops, the CUDA kernels and every
//! derivative generated from it): `rsqrt`, `logsigmoid`, `softsign`, `selu`,
//! `celu`, `hardswish`, `hardsigmoid`, GELU's exact (erf) form beside the tanh
//! form of [`gelu`](mod@crate::gelu) (chosen by [`gelu_with`] as PyTorch's
//! `approximate`), and `softplus` and `hardtanh` with PyTorch's options.
//!
//! Each computes what `torch.nn.functional`'s function of the same name computes,
//! in the same order of operations where that decides the last bit.

use crate::gelu;
use autograd_core::cases;
use autograd_core::{CheckCase, Error, Result, Tensor};
use autograd_macros::differentiable;

/// Values of both signs away from the kinks at 0 and ±3 and the bounds ±1.
fn away_from_kinks() -> Tensor {
    cases::values(&[-3.6, -1.5, -0.3, 0.4, 1.3, 3.4], &[2, 3])
}

fn uniform_case(
    name: &'static str,
    f: fn(&Tensor) -> Result<Tensor>,
    seed: u64,
    lo: f64,
    hi: f64,
) -> Vec<CheckCase> {
    vec![cases::unary(name, cases::uniform(seed, &[2, 3], lo, hi), f)]
}

/// `1 / √x` (`torch.rsqrt`).
#[differentiable(crate = ::autograd_core, method)]
pub mod rsqrt {
    use super::*;

    /// `1 / √x` elementwise (`inf` at 0, NaN below).
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.sqrt().recip()
    }

    /// d/dx x^(-1/2) = -½ x^(-3/2) = -½ rsqrt(x)³: from the saved output
    /// (PyTorch's formula).
    #[elementwise]
    pub fn backward(output: f32, grad: f32) -> f32 {
        -0.5 * grad * (output * output * output)
    }

    /// Gradcheck input: `[2, 3]` in `[0.5, 2)`, away from the pole at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        uniform_case("rsqrt", rsqrt, 61, 0.5, 2.0)
    }
}

/// `ln σ(x) = -softplus(-x)` (`torch.nn.functional.logsigmoid`), computed without
/// overflow.
#[differentiable(crate = ::autograd_core, method)]
pub mod logsigmoid {
    use super::*;

    /// `min(x, 0) - ln(1 + e^(-|x|))`: the same value, never overflowing.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.min(0.0) - (-x.abs()).exp().ln_1p()
    }

    /// Gradcheck input: away from 0, where `min` and `abs` have kinks that cancel.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("logsigmoid", away_from_kinks(), logsigmoid)]
    }
}

/// `x / (1 + |x|)` (`torch.nn.functional.softsign`).
#[differentiable(crate = ::autograd_core, method)]
pub mod softsign {
    use super::*;

    /// `x / (1 + |x|)` elementwise.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x / (1.0 + x.abs())
    }

    /// Gradcheck input: away from 0, where the second derivative jumps.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("softsign", away_from_kinks(), softsign)]
    }
}

/// The scaled exponential linear unit (`torch.nn.functional.selu`):
/// `scale · x` above 0, `scale · alpha · (eˣ - 1)` elsewhere, with PyTorch's
/// constants `alpha = 1.6732632423543772` and `scale = 1.0507009873554805`.
#[differentiable(crate = ::autograd_core, method)]
pub mod selu {
    use super::*;

    /// `scale · x` if `x > 0`, else `scale · alpha · (eˣ - 1)`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        if x > 0.0 {
            1.0507009873554805 * x
        } else {
            1.0507009873554805 * (1.6732632423543772 * x.exp_m1())
        }
    }

    /// Gradcheck input: away from the kink at 0.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("selu", away_from_kinks(), selu)]
    }
}

/// The continuously differentiable exponential linear unit
/// (`torch.nn.functional.celu(x, alpha)`): `x` above 0, `alpha · (e^(x/alpha) - 1)`
/// elsewhere. PyTorch's default `alpha` is 1.
#[differentiable(crate = ::autograd_core, method)]
pub mod celu {
    use super::*;

    /// The scale of the negative part.
    #[derive(Clone, Copy, Debug)]
    pub struct Celu {
        /// `alpha` in `alpha · (e^(x/alpha) - 1)` for `x ≤ 0` (not 0).
        pub alpha: f64,
    }

    /// `x` if `x > 0`, else `alpha · (e^(x/alpha) - 1)`.
    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        if x > 0.0 {
            x
        } else {
            self.alpha * (x / self.alpha).exp_m1()
        }
    }

    /// Gradcheck input: away from the kink at 0 (where the second derivative
    /// jumps), `alpha` 0.7.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("celu", away_from_kinks(), |x| celu(x, 0.7))]
    }
}

/// `x · relu6(x + 3) / 6` (`torch.nn.functional.hardswish`): 0 below -3, `x`
/// above 3, `x (x + 3) / 6` between.
///
/// The gradient at the kinks is PyTorch's: `-0.5` at -3, `1.5` at 3.
#[differentiable(crate = ::autograd_core, method)]
pub mod hardswish {
    use super::*;

    /// 0 if `x < -3`, `x` if `x > 3`, else `x (x + 3) / 6`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        if x < -3.0 {
            0.0
        } else if x <= 3.0 {
            x * (x + 3.0) / 6.0
        } else {
            x
        }
    }

    /// Gradcheck input: all three pieces, away from the kinks at ±3.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("hardswish", away_from_kinks(), hardswish)]
    }
}

/// `relu6(x + 3) / 6` (`torch.nn.functional.hardsigmoid`): 0 below -3, 1 above
/// 3, `(x + 3) / 6` between.
///
/// The gradient is `1/6` strictly between -3 and 3 and 0 elsewhere, on the kinks
/// too, as PyTorch's.
#[differentiable(crate = ::autograd_core, method)]
pub mod hardsigmoid {
    use super::*;

    /// 0 if `x ≤ -3`, 1 if `x ≥ 3`, else `(x + 3) / 6`.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        if x <= -3.0 {
            0.0
        } else if x >= 3.0 {
            1.0
        } else {
            (x + 3.0) / 6.0
        }
    }

    /// Gradcheck input: all three pieces, away from the kinks at ±3.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("hardsigmoid", away_from_kinks(), hardsigmoid)]
    }
}

/// The Gaussian error linear unit, exact form: `x Φ(x) = ½ x (1 + erf(x / √2))`
/// (PyTorch's `gelu(x)`, `approximate="none"`, its default).
///
/// This library's [`gelu`](mod@crate::gelu) is the tanh approximation (PyTorch's
/// `approximate="tanh"`); [`gelu_with`] chooses between the two as PyTorch's
/// `approximate` does.
#[differentiable(crate = ::autograd_core, method)]
pub mod gelu_erf {
    use super::*;

    /// `x · ½ · (1 + erf(x · (1/√2)))` elementwise, in PyTorch's order.
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x * 0.5 * (1.0 + (x * 0.7071067811865476).erf())
    }

    /// Gradcheck input: `[2, 3]` in `[-3, 3)`.
    pub fn check_cases() -> Vec<CheckCase> {
        uniform_case("gelu_erf", gelu_erf, 62, -3.0, 3.0)
    }
}

/// Which form of GELU [`gelu_with`] computes: PyTorch's `approximate` argument.
///
/// The default is [`GeluApproximate::None`], the exact form, as PyTorch's default.
/// Parses from PyTorch's strings, `"none"` and `"tanh"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GeluApproximate {
    /// The exact form `x Φ(x)` with the error function ([`gelu_erf`](mod@gelu_erf)).
    #[default]
    None,
    /// The tanh approximation ([`gelu`](mod@crate::gelu)).
    Tanh,
}

impl std::str::FromStr for GeluApproximate {
    type Err = Error;

    /// `"none"` or `"tanh"`, as PyTorch spells them; anything else is an error
    /// naming `gelu_with`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(GeluApproximate::None),
            "tanh" => Ok(GeluApproximate::Tanh),
            other => Err(Error::InvalidArgument {
                op: "gelu_with",
                msg: format!(
                    "approximate is {other:?}, and GELU's approximate is \"none\" (the exact \
                     form, PyTorch's default) or \"tanh\""
                ),
            }),
        }
    }
}

/// GELU in the form PyTorch's `torch.nn.functional.gelu(x, approximate=..)`
/// computes: the exact (erf) form for [`GeluApproximate::None`] (PyTorch's default,
/// and `GeluApproximate::default()`), the tanh approximation for
/// [`GeluApproximate::Tanh`].
///
/// Not an op of its own: it records [`gelu_erf`](mod@gelu_erf) or
/// [`gelu`](mod@crate::gelu) (which stays the tanh form, as it always was).
///
/// ```
/// use autograd_core::Tensor;
/// use autograd_ops::{GeluApproximate, gelu_with};
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f64], [1])?;
/// let exact = gelu_with(&x, GeluApproximate::default())?.to_vec::<f64>()?[0];
/// let tanh = gelu_with(&x, "tanh".parse()?)?.to_vec::<f64>()?[0];
/// assert!((exact - 0.8413447460685429).abs() < 1e-15);
/// assert!((tanh - 0.8411919906082768).abs() < 1e-15);
/// # Ok(())
/// # }
/// ```
#[track_caller]
pub fn gelu_with(x: &Tensor, approximate: GeluApproximate) -> Result<Tensor> {
    match approximate {
        GeluApproximate::None => gelu_erf(x),
        GeluApproximate::Tanh => gelu(x),
    }
}

/// `(1/beta) · ln(1 + e^(beta·x))`, and `x` itself where `beta · x > threshold`
/// (`torch.nn.functional.softplus(x, beta, threshold)`; PyTorch's defaults, 1
/// and 20, are what [`softplus`](mod@crate::softplus) computes, up to its linear
/// piece).
///
/// The gradient is `σ(beta · x)`, and 1 on the linear piece, as PyTorch's.
#[differentiable(crate = ::autograd_core, method)]
pub mod softplus_with {
    use super::*;

    /// PyTorch's options.
    #[derive(Clone, Copy, Debug)]
    pub struct SoftplusWith {
        /// The sharpness (not 0; PyTorch's default is 1).
        pub beta: f64,
        /// Above this value of `beta · x` the function is `x` (PyTorch's default
        /// is 20).
        pub threshold: f64,
    }

    /// `x` if `beta · x > threshold`, else `softplus(beta · x) / beta`, the softplus
    /// computed without overflow.
    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        let z = x * self.beta;
        if z > self.threshold {
            x
        } else {
            (z.max(0.0) + (-z.abs()).exp().ln_1p()) / self.beta
        }
    }

    /// Gradcheck inputs: away from 0 (where `max` and `abs` have kinks that cancel)
    /// and from the threshold, with `beta` 2 and threshold 3 so that both pieces
    /// are checked.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("softplus_with", away_from_kinks(), |x| {
            softplus_with(x, 2.0, 3.0)
        })]
    }
}

/// `x` limited to `[min_val, max_val]` (`torch.nn.functional.hardtanh(x, min_val,
/// max_val)`; PyTorch's defaults, -1 and 1, are what
/// [`hardtanh`](mod@crate::hardtanh) computes).
///
/// The gradient is 1 strictly inside the bounds and 0 on them and outside, as
/// PyTorch's.
#[differentiable(crate = ::autograd_core, method)]
pub mod hardtanh_with {
    use super::*;

    /// The bounds.
    #[derive(Clone, Copy, Debug)]
    pub struct HardtanhWith {
        /// The lower bound.
        pub min_val: f64,
        /// The upper bound (at least `min_val`).
        pub max_val: f64,
    }

    /// `min(max(x, min_val), max_val)`.
    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        x.clamp(self.min_val, self.max_val)
    }

    /// The gradient passes where `min_val < x < max_val`, bounds excluded, and is
    /// 0 elsewhere (NaN included): PyTorch's `hardtanh_backward`. A NaN bound is
    /// ignored, as the forward's clamp ignores it (no bound on that side), so the
    /// gradient is the forward's. The mask is a constant, so the second derivative
    /// is 0.
    #[elementwise]
    pub fn backward(&self, x: f32, grad: f32) -> f32 {
        if x == x && !(x <= self.min_val) && !(x >= self.max_val) {
            grad
        } else {
            0.0
        }
    }

    /// Gradcheck input: inside and outside `[-2, 0.5]`, none on a bound.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("hardtanh_with", away_from_kinks(), |x| {
            hardtanh_with(x, -2.0, 0.5)
        })]
    }
}
