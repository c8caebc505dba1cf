//! Adam and AdamW: one algorithm, with the weight decay added to the gradient
//! (L2, `Adam`) or applied to the parameter (decoupled, `AdamW`).

use super::core::{Algorithm, Core, ParamState, flag};
use super::{
    Group, add, add_scalar, check_finite_non_negative, check_unit_interval, div, optimizer_common,
    scale, sub, with_weight_decay,
};
use crate::{Result, Tensor};

/// Adam (Kingma & Ba, 2015) with bias correction and optional L2 weight decay, as
/// PyTorch's `torch.optim.Adam` computes it; each parameter counts its own steps `t`:
///
/// ```text
/// g ← grad + weight_decay · p
/// m ← β₁ · m + (1 − β₁) · g
/// v ← β₂ · v + (1 − β₂) · g²
/// p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
/// ```
///
/// The state of a parameter is its `step`, `exp_avg` (m) and `exp_avg_sq` (v).
#[derive(Debug, Clone)]
pub struct Adam {
    cfg: AdamConfig,
    core: Core,
}

/// AdamW (Loshchilov & Hutter, 2019): Adam with decoupled weight decay, as
/// PyTorch's `torch.optim.AdamW` computes it. The decay shrinks the parameter
/// itself, before the Adam update (which sees no decay in its gradient):
///
/// ```text
/// p ← p · (1 − lr · weight_decay)
/// m ← β₁ · m + (1 − β₁) · grad
/// v ← β₂ · v + (1 − β₂) · grad²
/// p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
/// ```
///
/// Defaults as PyTorch's: β = (0.9, 0.999), ε = 1e-8, weight decay 1e-2.
///
/// ```
/// use autograd::optim::{AdamW, GroupOptions, Optimizer};
/// use autograd::prelude::*;
///
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let mut w = Tensor::from_slice(&[3.0f32, -2.0], [2])?.with_requires_grad(true);
/// let mut b = Tensor::from_slice(&[1.0f32], [1])?.with_requires_grad(true);
/// let mut opt = AdamW::new(0.1);
/// opt.add_param_group(&[&b], GroupOptions::weight_decay(0.0))?;
/// for _ in 0..100 {
///     let loss = (w.square()?.sum_all()? + b.square()?.sum_all()?)?;
///     loss.backward()?;
///     opt.step(&mut [&mut w, &mut b])?;
///     opt.zero_grad(&mut [&mut w, &mut b]);
/// }
/// assert!(w.to_vec::<f32>()?.iter().all(|v| v.abs() < 0.1));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AdamW {
    cfg: AdamConfig,
    core: Core,
}

/// What Adam and AdamW share: everything but where the weight decay goes.
#[derive(Debug, Clone, Copy)]
struct AdamConfig {
    beta1: f64,
    beta2: f64,
    eps: f64,
    /// AdamW's decoupled weight decay, else Adam's L2.
    decoupled: bool,
}

macro_rules! adam_builders {
    ($ty:ident, $decoupled:expr, $default_wd:expr, $new_doc:literal) => {
        impl $ty {
            #[doc = $new_doc]
            pub fn new(lr: f64) -> $ty {
                $ty {
                    cfg: AdamConfig {
                        beta1: 0.9,
                        beta2: 0.999,
                        eps: 1e-8,
                        decoupled: $decoupled,
                    },
                    core: Core::new(lr, $default_wd),
                }
            }

            /// Decay rates of the first and second moment estimates, each in `[0, 1)`.
            pub fn betas(mut self, beta1: f64, beta2: f64) -> $ty {
                self.cfg.beta1 = beta1;
                self.cfg.beta2 = beta2;
                self
            }

            /// The term added to the denominator for stability (default 1e-8).
            pub fn eps(mut self, eps: f64) -> $ty {
                self.cfg.eps = eps;
                self
            }

            /// The weight decay (group 0's, with parameter groups); see the
            /// formula above for where it applies.
            pub fn weight_decay(mut self, weight_decay: f64) -> $ty {
                self.core.groups[0].weight_decay = weight_decay;
                self
            }
        }

        optimizer_common!($ty);
    };
}

adam_builders!(
    Adam,
    false,
    0.0,
    "Adam with learning rate `lr` and the usual defaults: β₁ = 0.9, β₂ = 0.999, \
     ε = 1e-8, no weight decay."
);
adam_builders!(
    AdamW,
    true,
    1e-2,
    "AdamW with learning rate `lr` (PyTorch's default is 1e-3) and PyTorch's \
     defaults: β₁ = 0.9, β₂ = 0.999, ε = 1e-8, weight decay 1e-2."
);

impl Algorithm for AdamConfig {
    const NAME: &'static str = "Adam";

    fn validate(&self) -> Result<()> {
        check_unit_interval("beta1", self.beta1)?;
        check_unit_interval("beta2", self.beta2)?;
        check_finite_non_negative("eps", self.eps)
    }

    fn update(
        &self,
        group: &Group,
        w: &Tensor,
        g: Tensor,
        prev: Option<&ParamState>,
    ) -> Result<(Tensor, Option<ParamState>)> {
        let (b1, b2) = (self.beta1, self.beta2);
        let (w, g) = if self.decoupled {
            let w = if group.weight_decay == 0.0 {
                w.clone()
            } else {
                scale(w, 1.0 - group.lr * group.weight_decay)?
            };
            (w, g)
        } else {
            let g = with_weight_decay(g, w, group.weight_decay)?;
            (w.clone(), g)
        };
        let g2 = crate::ops::square(&g)?;
        let (step, m, v) = match prev {
            None => (1, scale(&g, 1.0 - b1)?, scale(&g2, 1.0 - b2)?),
            Some(s) => (
                s.step.saturating_add(1),
                add(&scale(s.get("exp_avg")?, b1)?, &scale(&g, 1.0 - b1)?)?,
                add(&scale(s.get("exp_avg_sq")?, b2)?, &scale(&g2, 1.0 - b2)?)?,
            ),
        };
        let t = i32::try_from(step).unwrap_or(i32::MAX);
        let correction1 = 1.0 - b1.powi(t);
        let correction2 = 1.0 - b2.powi(t);
        let denom = add_scalar(&crate::ops::sqrt(&scale(&v, 1.0 / correction2)?)?, self.eps)?;
        let update = div(&scale(&m, group.lr / correction1)?, &denom)?;
        let new = sub(&w, &update)?;
        let state = ParamState {
            step,
            bufs: vec![("exp_avg", m), ("exp_avg_sq", v)],
        };
        Ok((new, Some(state)))
    }

    fn buffer_names(&self) -> Vec<&'static str> {
        vec!["exp_avg", "exp_avg_sq"]
    }

    fn counts_steps(&self) -> bool {
        true
    }

    fn options(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("beta1", self.beta1),
            ("beta2", self.beta2),
            ("eps", self.eps),
            (
                "decoupled_weight_decay",
                f64::from(u8::from(self.decoupled)),
            ),
        ]
    }

    fn with_options(&self, get: &mut dyn FnMut(&'static str) -> Result<f64>) -> Result<Self> {
        let decoupled = flag("decoupled_weight_decay", get("decoupled_weight_decay")?)?;
        if decoupled != self.decoupled {
            let (this, that) = if self.decoupled {
                ("AdamW", "Adam")
            } else {
                ("Adam", "AdamW")
            };
            return Err(super::invalid(format!(
                "nothing was loaded: the state is {that}'s (`options.decoupled_weight_decay` \
                 is {}), and this optimizer is {this}; load it into an {that}",
                u8::from(decoupled)
            )));
        }
        Ok(AdamConfig {
            beta1: get("beta1")?,
            beta2: get("beta2")?,
            eps: get("eps")?,
            decoupled,
        })
    }
}
