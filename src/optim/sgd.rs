//! Stochastic gradient descent.

use super::core::{Algorithm, Core, ParamState, flag};
use super::{
    Group, add, check_unit_interval, invalid, optimizer_common, scale, sub, with_weight_decay,
};
use crate::{Result, Tensor};

/// Stochastic gradient descent with optional momentum, Nesterov momentum and L2
/// weight decay, with PyTorch's conventions:
///
/// ```text
/// g ← grad + weight_decay · p
/// b ← g                      (first step)
/// b ← momentum · b + g       (later steps)
/// p ← p − lr · b             (or p − lr · (g + momentum · b) with nesterov)
/// ```
///
/// Without momentum the step is `p ← p − lr · g`. The state of a parameter is
/// its `momentum_buffer` (none without momentum).
#[derive(Debug, Clone)]
pub struct Sgd {
    cfg: SgdConfig,
    core: Core,
}

#[derive(Debug, Clone, Copy)]
struct SgdConfig {
    momentum: f64,
    nesterov: bool,
}

impl Sgd {
    /// Plain gradient descent with learning rate `lr`.
    pub fn new(lr: f64) -> Sgd {
        Sgd {
            cfg: SgdConfig {
                momentum: 0.0,
                nesterov: false,
            },
            core: Core::new(lr, 0.0),
        }
    }

    /// Momentum factor in `[0, 1)` (default 0: none).
    pub fn momentum(mut self, momentum: f64) -> Sgd {
        self.cfg.momentum = momentum;
        self
    }

    /// Nesterov momentum (needs a momentum above 0).
    pub fn nesterov(mut self, nesterov: bool) -> Sgd {
        self.cfg.nesterov = nesterov;
        self
    }

    /// L2 penalty: `weight_decay · p` is added to every gradient (default 0;
    /// group 0's, with parameter groups).
    pub fn weight_decay(mut self, weight_decay: f64) -> Sgd {
        self.core.groups[0].weight_decay = weight_decay;
        self
    }
}

optimizer_common!(Sgd);

impl Algorithm for SgdConfig {
    const NAME: &'static str = "Sgd";

    fn validate(&self) -> Result<()> {
        check_unit_interval("momentum", self.momentum)?;
        if self.nesterov && self.momentum == 0.0 {
            return Err(invalid(
                "Nesterov momentum needs a momentum above 0; set `.momentum(..)`".to_string(),
            ));
        }
        Ok(())
    }

    fn update(
        &self,
        group: &Group,
        w: &Tensor,
        g: Tensor,
        prev: Option<&ParamState>,
    ) -> Result<(Tensor, Option<ParamState>)> {
        let g = with_weight_decay(g, w, group.weight_decay)?;
        if self.momentum == 0.0 {
            return Ok((sub(w, &scale(&g, group.lr)?)?, None));
        }
        let buf = match prev {
            None => g.clone(),
            Some(s) => add(&scale(s.get("momentum_buffer")?, self.momentum)?, &g)?,
        };
        let direction = if self.nesterov {
            add(&g, &scale(&buf, self.momentum)?)?
        } else {
            buf.clone()
        };
        let new = sub(w, &scale(&direction, group.lr)?)?;
        let state = ParamState {
            step: 0,
            bufs: vec![("momentum_buffer", buf)],
        };
        Ok((new, Some(state)))
    }

    fn buffer_names(&self) -> Vec<&'static str> {
        if self.momentum == 0.0 {
            Vec::new()
        } else {
            vec!["momentum_buffer"]
        }
    }

    fn counts_steps(&self) -> bool {
        false
    }

    fn options(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("momentum", self.momentum),
            ("nesterov", f64::from(u8::from(self.nesterov))),
        ]
    }

    fn with_options(&self, get: &mut dyn FnMut(&'static str) -> Result<f64>) -> Result<Self> {
        Ok(SgdConfig {
            momentum: get("momentum")?,
            nesterov: flag("nesterov", get("nesterov")?)?,
        })
    }
}
