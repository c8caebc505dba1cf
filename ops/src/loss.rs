//! Losses with PyTorch's options: the reduction ([`Reduction`]) of
//! `torch.nn.functional`'s losses, and [`l1_loss`], [`mse_loss_with`],
//! [`smooth_l1_loss`] and [`huber_loss`]. Each is a composition of recorded ops,
//! so it is differentiable to any order with no op of its own.

use crate::{abs, add_scalar, lt, mean_all, mul_scalar, square, sub, sum_all, r#where};
use autograd_core::{Error, Result, Tensor};

/// How a loss folds its elementwise values: PyTorch's `reduction` argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// No reduction: the loss of every element, in the inputs' shape
    /// (`reduction='none'`).
    None,
    /// The sum of every element's loss, a rank-0 tensor (`reduction='sum'`).
    Sum,
    /// The mean of every element's loss, a rank-0 tensor (`reduction='mean'`,
    /// PyTorch's default).
    #[default]
    Mean,
}

impl Reduction {
    /// `x` reduced as `self` says.
    pub fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(x.clone()),
            Reduction::Sum => sum_all(x),
            Reduction::Mean => mean_all(x),
        }
    }
}

/// `pred - target`, once the shapes are checked equal: these losses do not
/// broadcast (a `[N, 1]` prediction against a `[N]` target would compare every
/// pair).
fn difference(op: &'static str, pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    if pred.shape() != target.shape() {
        return Err(Error::Shape {
            op,
            msg: format!(
                "pred has shape {} but target has shape {}; they must match (reshape one of \
                 them: this loss does not broadcast)",
                pred.shape(),
                target.shape()
            ),
        });
    }
    sub(pred, target)
}

/// `torch.nn.functional.l1_loss(pred, target, reduction)`: `|pred - target|`,
/// reduced. An error when the shapes differ.
pub fn l1_loss(pred: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduction.apply(&abs(&difference("l1_loss", pred, target)?)?)
}

/// `torch.nn.functional.mse_loss(pred, target, reduction)`: `(pred - target)²`,
/// reduced ([`mse_loss`](mod@crate::mse_loss) is the default, `Mean`). An error when
/// the shapes differ.
pub fn mse_loss_with(pred: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduction.apply(&square(&difference("mse_loss", pred, target)?)?)
}

/// The options of [`smooth_l1_loss`], PyTorch's defaults by [`Default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmoothL1Options {
    /// How the elementwise losses are folded (default `Mean`).
    pub reduction: Reduction,
    /// Where the loss turns from quadratic to linear (default 1.0; at least 0, and
    /// 0 is the L1 loss).
    pub beta: f64,
}

impl Default for SmoothL1Options {
    fn default() -> Self {
        Self {
            reduction: Reduction::Mean,
            beta: 1.0,
        }
    }
}

/// The options of [`huber_loss`], PyTorch's defaults by [`Default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HuberOptions {
    /// How the elementwise losses are folded (default `Mean`).
    pub reduction: Reduction,
    /// Where the loss turns from quadratic to linear (default 1.0; above 0).
    pub delta: f64,
}

impl Default for HuberOptions {
    fn default() -> Self {
        Self {
            reduction: Reduction::Mean,
            delta: 1.0,
        }
    }
}

/// `0.5 d² · scale` where `d < bound`, else `slope · (d - 0.5 bound)`, for `d ≥ 0`.
fn quadratic_then_linear(d: &Tensor, bound: f64, scale: f64, slope: f64) -> Result<Tensor> {
    let inside = lt(d, &add_scalar(&d.zeros_like()?, bound)?)?;
    let quadratic = mul_scalar(&square(d)?, 0.5 * scale)?;
    let linear = mul_scalar(&add_scalar(d, -0.5 * bound)?, slope)?;
    r#where(&inside, &quadratic, &linear)
}

/// `torch.nn.functional.smooth_l1_loss(pred, target, reduction, beta)`: with
/// `d = |pred - target|`, `0.5 d² / beta` where `d < beta`, else `d - 0.5 beta`,
/// reduced (`beta = 0` is the L1 loss). An error when the shapes differ or `beta`
/// is negative or not finite.
pub fn smooth_l1_loss(pred: &Tensor, target: &Tensor, options: SmoothL1Options) -> Result<Tensor> {
    const OP: &str = "smooth_l1_loss";
    let beta = options.beta;
    if !(beta >= 0.0 && beta.is_finite()) {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "beta is {beta}; it must be finite and at least 0 (PyTorch's default is 1.0)"
            ),
        });
    }
    let d = abs(&difference(OP, pred, target)?)?;
    if beta == 0.0 {
        return options.reduction.apply(&d);
    }
    options
        .reduction
        .apply(&quadratic_then_linear(&d, beta, 1.0 / beta, 1.0)?)
}

/// `torch.nn.functional.huber_loss(pred, target, reduction, delta)`: with
/// `d = |pred - target|`, `0.5 d²` where `d < delta`, else
/// `delta · (d - 0.5 delta)`, reduced (`delta ·` the smooth L1 loss with
/// `beta = delta`). An error when the shapes differ or `delta` is not a finite
/// positive number.
pub fn huber_loss(pred: &Tensor, target: &Tensor, options: HuberOptions) -> Result<Tensor> {
    const OP: &str = "huber_loss";
    let delta = options.delta;
    if !(delta > 0.0 && delta.is_finite()) {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "delta is {delta}; it must be finite and above 0 (PyTorch's default is 1.0)"
            ),
        });
    }
    let d = abs(&difference(OP, pred, target)?)?;
    options
        .reduction
        .apply(&quadratic_then_linear(&d, delta, 1.0, delta)?)
}
