//! RMSprop.

use super::core::{Algorithm, Core, ParamState, flag};
use super::{
    Group, add, add_scalar, check_finite_non_negative, check_unit_interval, div, invalid, mul,
    optimizer_common, scale, sub, with_weight_decay,
};
use crate::{Result, Tensor};

/// RMSprop (Hinton), as PyTorch's `torch.optim.RMSprop` computes it, with its
/// optional L2 weight decay, momentum and centering:
///
/// ```text
/// g ← grad + weight_decay · p
/// s ← α · s + (1 − α) · g²                    (s starts at 0)
/// a ← α · a + (1 − α) · g                     (centered only; a starts at 0)
/// d ← √(s − a²) + ε    (centered)    or    √s + ε
/// b ← momentum · b + g / d;  p ← p − lr · b   (momentum > 0; b starts at 0)
/// p ← p − lr · g / d                          (no momentum)
/// ```
///
/// Defaults as PyTorch's: `lr` 1e-2 (pass it to `new`), α = 0.99, ε = 1e-8, no
/// weight decay, no momentum, not centered. The state of a parameter is its
/// `step`, `square_avg` (s), and `momentum_buffer` (b) with momentum, `grad_avg`
/// (a) when centered.
///
/// ```
/// use autograd::optim::{Optimizer, RMSprop};
/// use autograd::prelude::*;
///
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let mut w = Tensor::from_slice(&[3.0f64, -2.0], [2])?.with_requires_grad(true);
/// let mut opt = RMSprop::new(0.01).momentum(0.9).centered(true);
/// for _ in 0..200 {
///     w.square()?.sum_all()?.backward()?;
///     opt.step(&mut [&mut w])?;
///     opt.zero_grad(&mut [&mut w]);
/// }
/// assert!(w.to_vec::<f64>()?.iter().all(|v| v.abs() < 0.1));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RMSprop {
    cfg: RmspropConfig,
    core: Core,
}

#[derive(Debug, Clone, Copy)]
struct RmspropConfig {
    alpha: f64,
    eps: f64,
    momentum: f64,
    centered: bool,
}

impl RMSprop {
    /// RMSprop with learning rate `lr` and PyTorch's defaults: α = 0.99,
    /// ε = 1e-8, no weight decay, no momentum, not centered.
    pub fn new(lr: f64) -> RMSprop {
        RMSprop {
            cfg: RmspropConfig {
                alpha: 0.99,
                eps: 1e-8,
                momentum: 0.0,
                centered: false,
            },
            core: Core::new(lr, 0.0),
        }
    }

    /// The smoothing constant α of the averages, in `[0, 1]` (default 0.99).
    pub fn alpha(mut self, alpha: f64) -> RMSprop {
        self.cfg.alpha = alpha;
        self
    }

    /// The term added to the denominator for stability (default 1e-8).
    pub fn eps(mut self, eps: f64) -> RMSprop {
        self.cfg.eps = eps;
        self
    }

    /// Momentum factor in `[0, 1)` (default 0: none).
    pub fn momentum(mut self, momentum: f64) -> RMSprop {
        self.cfg.momentum = momentum;
        self
    }

    /// Centered RMSprop: the gradient's variance (not its second moment)
    /// normalizes it (default false).
    pub fn centered(mut self, centered: bool) -> RMSprop {
        self.cfg.centered = centered;
        self
    }

    /// L2 penalty: `weight_decay · p` is added to every gradient (default 0;
    /// group 0's, with parameter groups).
    pub fn weight_decay(mut self, weight_decay: f64) -> RMSprop {
        self.core.groups[0].weight_decay = weight_decay;
        self
    }
}

optimizer_common!(RMSprop);

impl Algorithm for RmspropConfig {
    const NAME: &'static str = "RMSprop";

    fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(invalid(format!(
                "alpha is {}; it must lie in [0, 1]",
                self.alpha
            )));
        }
        check_finite_non_negative("eps", self.eps)?;
        check_unit_interval("momentum", self.momentum)
    }

    fn update(
        &self,
        group: &Group,
        w: &Tensor,
        g: Tensor,
        prev: Option<&ParamState>,
    ) -> Result<(Tensor, Option<ParamState>)> {
        let alpha = self.alpha;
        let g = with_weight_decay(g, w, group.weight_decay)?;
        let g2 = scale(&crate::ops::square(&g)?, 1.0 - alpha)?;
        let square_avg = match prev {
            None => g2,
            Some(s) => add(&scale(s.get("square_avg")?, alpha)?, &g2)?,
        };
        let mut bufs = Vec::with_capacity(3);
        let avg = if self.centered {
            let ga = scale(&g, 1.0 - alpha)?;
            let grad_avg = match prev {
                None => ga,
                Some(s) => add(&scale(s.get("grad_avg")?, alpha)?, &ga)?,
            };
            let var = sub(&square_avg, &mul(&grad_avg, &grad_avg)?)?;
            bufs.push(("grad_avg", grad_avg));
            crate::ops::sqrt(&var)?
        } else {
            crate::ops::sqrt(&square_avg)?
        };
        let avg = add_scalar(&avg, self.eps)?;
        let new = if self.momentum > 0.0 {
            let step = div(&g, &avg)?;
            let buf = match prev {
                None => step,
                Some(s) => add(&scale(s.get("momentum_buffer")?, self.momentum)?, &step)?,
            };
            let new = sub(w, &scale(&buf, group.lr)?)?;
            bufs.push(("momentum_buffer", buf));
            new
        } else {
            sub(w, &scale(&div(&g, &avg)?, group.lr)?)?
        };
        bufs.insert(0, ("square_avg", square_avg));
        let step = prev.map_or(1, |s| s.step.saturating_add(1));
        Ok((new, Some(ParamState { step, bufs })))
    }

    fn buffer_names(&self) -> Vec<&'static str> {
        let mut names = vec!["square_avg"];
        if self.centered {
            names.push("grad_avg");
        }
        if self.momentum > 0.0 {
            names.push("momentum_buffer");
        }
        names
    }

    fn counts_steps(&self) -> bool {
        true
    }

    fn options(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("alpha", self.alpha),
            ("eps", self.eps),
            ("momentum", self.momentum),
            ("centered", f64::from(u8::from(self.centered))),
        ]
    }

    fn with_options(&self, get: &mut dyn FnMut(&'static str) -> Result<f64>) -> Result<Self> {
        Ok(RmspropConfig {
            alpha: get("alpha")?,
            eps: get("eps")?,
            momentum: get("momentum")?,
            centered: flag("centered", get("centered")?)?,
        })
    }
}
