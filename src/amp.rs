//! Mixed-precision training: [`autocast`] scopes (as `torch.autocast`), loss
//! scaling with [`GradScaler`] (as `torch.amp.GradScaler`), and the optimizers'
//! `f32` master copies of `f16`/`bf16` parameters (see [`optim`](crate::optim)).
//!
//! Inside an autocast scope the matrix products and convolutions run in the
//! scope's dtype on converted copies of their inputs, while softmax, the losses,
//! normalizations and sums run in `f32` ([`policy`]); the conversions are recorded,
//! so `f32` parameters get `f32` gradients. With `f16`, whose range is small, a
//! [`GradScaler`] multiplies the loss before backward so that small gradients do
//! not flush to zero, skips the steps whose gradients overflowed, and adapts the
//! scale; `bf16` has `f32`'s range and usually trains without one.
//!
//! ```
//! use autograd::amp::{GradScaler, autocast};
//! use autograd::optim::{Optimizer, Sgd};
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let mut w = Tensor::from_slice(&[0.5f32, -0.5, 0.25, 1.0], [2, 2])?.with_requires_grad(true);
//! let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
//! let mut opt = Sgd::new(0.01);
//! let mut scaler = GradScaler::new();
//! let loss = autocast(DType::BF16, || {
//!     let y = x.matmul(&w)?; // bf16
//!     y.square()?.mean_all() // f32
//! })?;
//! scaler.scale(&loss)?.backward()?;
//! assert_eq!(w.grad().unwrap().dtype(), DType::F32);
//! assert!(scaler.step(&mut opt, &mut [&mut w])?); // taken: the gradients are finite
//! scaler.update()?;
//! # Ok(())
//! # }
//! ```

use crate::optim::Optimizer;
use crate::{DType, Error, ReduceOp, Result, Tensor, UnaryOp, compute, no_grad};

pub use autograd_core::autocast::{
    AutocastGuard, CastPolicy, autocast, autocast_dtype, cast, cast_inputs, disabled,
    is_autocast_enabled, policy,
};

/// Dynamic loss scaling, as `torch.amp.GradScaler`: [`scale`](GradScaler::scale)
/// the loss before backward, [`step`](GradScaler::step) through the scaler (it
/// divides the gradients by the scale as the optimizer reads them, and skips the
/// step when one of them holds an infinity or NaN), then
/// [`update`](GradScaler::update) the scale: halved (the backoff factor) after a
/// skipped step, doubled (the growth factor) after `growth_interval` steps in a
/// row without one. The defaults are PyTorch's: a scale of 2¹⁶, growth 2 every
/// 2000 good steps, backoff 0.5.
///
/// A disabled scaler ([`GradScaler::enabled`]`(false)`) passes everything
/// through, so one training loop serves both precisions.
#[derive(Debug, Clone, PartialEq)]
pub struct GradScaler {
    state: GradScalerState,
    enabled: bool,
    /// Whether the last `step` since `update` found an infinity or NaN (`None`:
    /// no step since the last update).
    found_inf: Option<bool>,
}

/// A [`GradScaler`]'s state as plain numbers, to save with a checkpoint and give
/// back to [`GradScaler::load_state`] (as `state_dict` / `load_state_dict`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradScalerState {
    /// The factor the loss is multiplied by.
    pub scale: f64,
    /// What the scale is multiplied by after `growth_interval` good steps (> 1).
    pub growth_factor: f64,
    /// What the scale is multiplied by after a skipped step (in `(0, 1)`).
    pub backoff_factor: f64,
    /// How many steps in a row without an infinity or NaN grow the scale (> 0).
    pub growth_interval: u64,
    /// Good steps in a row since the scale last changed.
    pub growth_tracker: u64,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new()
    }
}

impl GradScaler {
    /// A scaler with PyTorch's defaults: scale 2¹⁶ = 65536, growth factor 2 every
    /// 2000 good steps, backoff factor 0.5.
    pub fn new() -> GradScaler {
        GradScaler {
            state: GradScalerState {
                scale: 65536.0,
                growth_factor: 2.0,
                backoff_factor: 0.5,
                growth_interval: 2000,
                growth_tracker: 0,
            },
            enabled: true,
            found_inf: None,
        }
    }

    /// The scale to start from (default 2¹⁶).
    pub fn init_scale(mut self, scale: f64) -> GradScaler {
        self.state.scale = scale;
        self
    }

    /// The factor the scale grows by after `growth_interval` good steps (default 2).
    pub fn growth_factor(mut self, factor: f64) -> GradScaler {
        self.state.growth_factor = factor;
        self
    }

    /// The factor the scale is multiplied by after a skipped step (default 0.5).
    pub fn backoff_factor(mut self, factor: f64) -> GradScaler {
        self.state.backoff_factor = factor;
        self
    }

    /// How many good steps in a row grow the scale (default 2000).
    pub fn growth_interval(mut self, steps: u64) -> GradScaler {
        self.state.growth_interval = steps;
        self
    }

    /// Off: [`scale`](GradScaler::scale) returns the loss, [`step`](GradScaler::step)
    /// is the optimizer's step and [`update`](GradScaler::update) does nothing.
    pub fn enabled(mut self, enabled: bool) -> GradScaler {
        self.enabled = enabled;
        self
    }

    /// Whether the scaler scales (see [`GradScaler::enabled`]).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The current loss scale (1 when disabled), as `get_scale()`.
    pub fn get_scale(&self) -> f64 {
        if self.enabled { self.state.scale } else { 1.0 }
    }

    /// The state as plain numbers, to save (see [`GradScalerState`]).
    pub fn state(&self) -> GradScalerState {
        self.state
    }

    /// Restores a saved state. An error naming `GradScaler` when a number is out of
    /// its range (a scale that is not finite and above 0, a growth factor not above
    /// 1, a backoff factor outside `(0, 1)`, a growth interval of 0); the scaler is
    /// then left as it was.
    pub fn load_state(&mut self, state: GradScalerState) -> Result<()> {
        validate(&state)?;
        self.state = state;
        self.found_inf = None;
        Ok(())
    }

    /// `loss` multiplied by the scale (recorded, so backward carries the scale into
    /// every gradient); `loss` itself when disabled. An error when the settings are
    /// out of range (see [`GradScaler::load_state`]).
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        validate(&self.state)?;
        if !self.enabled {
            return Ok(loss.clone());
        }
        crate::ops::mul_scalar(loss, self.state.scale)
    }

    /// The optimizer's step on gradients divided by the scale
    /// ([`Optimizer::step_unscaled`]), unless some parameter's gradient holds an
    /// infinity or NaN: then nothing is updated (the optimizer's state neither).
    /// Returns whether the step was taken. Call [`update`](GradScaler::update)
    /// after it. When disabled, the optimizer's plain step (returns `true`).
    pub fn step<O: Optimizer + ?Sized>(
        &mut self,
        optimizer: &mut O,
        params: &mut [&mut Tensor],
    ) -> Result<bool> {
        if !self.enabled {
            optimizer.step(params)?;
            return Ok(true);
        }
        validate(&self.state)?;
        let mut found_inf = false;
        for p in params.iter() {
            if let Some(g) = p.grad()
                && !all_finite(&g)?
            {
                found_inf = true;
                break;
            }
        }
        self.found_inf = Some(found_inf || self.found_inf == Some(true));
        if found_inf {
            return Ok(false);
        }
        optimizer.step_unscaled(params, 1.0 / self.state.scale)?;
        Ok(true)
    }

    /// Adapts the scale after the steps since the last update: times the backoff
    /// factor when one of them was skipped (and the count of good steps back to 0),
    /// else one more good step, and times the growth factor when they reach the
    /// growth interval. Nothing when disabled or when no step was taken since the
    /// last update.
    pub fn update(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        validate(&self.state)?;
        let Some(found_inf) = self.found_inf.take() else {
            return Ok(());
        };
        let s = &mut self.state;
        if found_inf {
            s.scale *= s.backoff_factor;
            s.growth_tracker = 0;
        } else {
            s.growth_tracker += 1;
            if s.growth_tracker >= s.growth_interval {
                let grown = s.scale * s.growth_factor;
                // As PyTorch: a scale that would overflow stays where it is.
                if grown.is_finite() && grown <= f32::MAX as f64 {
                    s.scale = grown;
                }
                s.growth_tracker = 0;
            }
        }
        Ok(())
    }

    /// Whether the last [`step`](GradScaler::step) since the last
    /// [`update`](GradScaler::update) was skipped for an infinity or NaN (`None`
    /// when no step was taken since).
    pub fn found_inf(&self) -> Option<bool> {
        self.found_inf
    }
}

/// An error naming `GradScaler` unless every number of `s` is in its range.
fn validate(s: &GradScalerState) -> Result<()> {
    let bad = |msg: String| {
        Err(Error::InvalidArgument {
            op: "GradScaler",
            msg,
        })
    };
    if !(s.scale.is_finite() && s.scale > 0.0) {
        return bad(format!(
            "the scale is {}; it must be finite and above 0 (PyTorch starts from 65536)",
            s.scale
        ));
    }
    if !(s.growth_factor.is_finite() && s.growth_factor > 1.0) {
        return bad(format!(
            "the growth factor is {}; it must be finite and above 1 (default 2)",
            s.growth_factor
        ));
    }
    if !(s.backoff_factor > 0.0 && s.backoff_factor < 1.0) {
        return bad(format!(
            "the backoff factor is {}; it must lie in (0, 1) (default 0.5)",
            s.backoff_factor
        ));
    }
    if s.growth_interval == 0 {
        return bad("the growth interval is 0; it must be at least 1 step (default 2000)".into());
    }
    Ok(())
}

/// Whether every element of `g` is finite, in one reduction: `g · 0` is 0 where
/// `g` is finite and NaN where it is infinite or NaN, so its sum is 0 or NaN.
fn all_finite(g: &Tensor) -> Result<bool> {
    if g.numel() == 0 {
        return Ok(true);
    }
    no_grad(|| {
        let zeros = compute::unary(&g.detach(), UnaryOp::MulScalar(0.0))?;
        let axes: Vec<usize> = (0..zeros.rank()).collect();
        let sum = if axes.is_empty() {
            zeros
        } else {
            compute::reduce(&zeros, ReduceOp::Sum, &axes, false)?
        };
        let sum = compute::to_device(&compute::cast(&sum, DType::F64)?, crate::Device::Cpu)?;
        Ok(sum.to_scalar::<f64>()?.is_finite())
    })
}
