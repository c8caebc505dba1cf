//! Learning-rate schedules, as PyTorch's `torch.optim.lr_scheduler`: a
//! [`Schedule`] gives the learning rate of one parameter group as a closed-form
//! function of the group's base learning rate and the step count, and an
//! [`LrScheduler`] applies it to every group of an [`Optimizer`].
//!
//! The base learning rates are the groups' learning rates when the
//! [`LrScheduler`] is built (PyTorch's `initial_lr`): add the parameter groups
//! first. Building it sets the learning rates of step 0; each
//! [`LrScheduler::step`], called after the optimizer's step as in PyTorch, sets
//! those of the next step. PyTorch computes most schedules recursively (each
//! learning rate from the last); the closed forms here agree with it to rounding
//! (the tests compare them to PyTorch's values to 1e-12).
//!
//! Schedules compose: [`SequentialLR`] runs one schedule after another (a
//! warm-up, then a decay), [`ChainedScheduler`] multiplies their factors.
//!
//! A model, its AdamW optimizer with two parameter groups, a linear warm-up
//! followed by cosine annealing, gradient clipping, and a checkpoint in one
//! safetensors file:
//!
//! ```
//! use autograd::nn::{self, Linear, Module};
//! use autograd::optim::lr_scheduler::{CosineAnnealingLR, LinearLR, LrScheduler, SequentialLR};
//! use autograd::optim::{AdamW, GroupOptions, Optimizer};
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let mut rng = Rng::new(0);
//! let mut model = Linear::new(3, 2, true, &mut rng)?;
//! let mut opt = AdamW::new(1e-2).weight_decay(0.1);
//! opt.add_param_group(&[&model.bias.clone().unwrap()], GroupOptions::weight_decay(0.0))?;
//! let warmup = LinearLR::new(0.1, 1.0, 3);
//! let cosine = CosineAnnealingLR::new(7, 0.0);
//! let schedule = SequentialLR::new(vec![Box::new(warmup), Box::new(cosine)], vec![3]);
//! let mut sched = LrScheduler::new(&mut opt, schedule)?;
//!
//! let x = Tensor::ones([4, 3], DType::F32)?;
//! for _ in 0..5 {
//!     model.forward(&x)?.square()?.sum_all()?.backward()?;
//!     nn::clip_grad_norm(&model.parameters(), 1.0, 2.0)?;
//!     opt.step(&mut model.parameters_mut())?;
//!     model.zero_grad();
//!     sched.step(&mut opt)?;
//! }
//!
//! // Save model, optimizer and schedule together...
//! let named = model.named_parameters();
//! let mut state = nn::add_prefix("model.", model.state_dict());
//! state.extend(nn::add_prefix("optimizer.", opt.state_dict(&named)?));
//! state.extend(nn::add_prefix("scheduler.", sched.state_dict()));
//! let path = std::env::temp_dir().join(format!("ckpt-{}.safetensors", std::process::id()));
//! let refs: Vec<(&str, &Tensor)> = state.iter().map(|(k, t)| (k.as_str(), t)).collect();
//! autograd::save(&path, &refs)?;
//!
//! // ...and restore them into fresh ones.
//! let loaded = autograd::load(&path)?;
//! model.load_state_dict(&nn::strip_prefix("model.", &loaded), true)?;
//! let mut opt2 = AdamW::new(1e-2);
//! opt2.load_state_dict(&model.named_parameters(), &nn::strip_prefix("optimizer.", &loaded))?;
//! let mut sched2 = LrScheduler::new(&mut opt2, schedule_again())?;
//! sched2.load_state_dict(&mut opt2, &nn::strip_prefix("scheduler.", &loaded))?;
//! assert_eq!(sched2.last_lr(), sched.last_lr());
//! assert_eq!(opt2.group_learning_rate(1), opt.group_learning_rate(1));
//! # std::fs::remove_file(&path).ok();
//! # Ok(())
//! # }
//! # fn schedule_again() -> SequentialLR {
//! #     SequentialLR::new(
//! #         vec![Box::new(LinearLR::new(0.1, 1.0, 3)), Box::new(CosineAnnealingLR::new(7, 0.0))],
//! #         vec![3],
//! #     )
//! # }
//! ```

use super::Optimizer;
use crate::nn::StateDict;
use crate::{Error, Result, Tensor};
use std::f64::consts::PI;

/// The learning rate of one parameter group as a function of its base learning
/// rate and the step count (0 before the first [`LrScheduler::step`]).
pub trait Schedule: Send {
    /// The learning rate at `step` of a group whose base learning rate is
    /// `base_lr`; an error for a step the schedule does not reach (past
    /// [`OneCycleLR`]'s total) or settings out of range.
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64>;

    /// An error naming the setting out of range (checked when an
    /// [`LrScheduler`] is built). The default: none.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
}

impl<S: Schedule + ?Sized> Schedule for Box<S> {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        (**self).lr(base_lr, step)
    }

    fn validate(&self) -> Result<()> {
        (**self).validate()
    }
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument {
        op: "lr_scheduler",
        msg,
    }
}

fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<()> {
    if ok { Ok(()) } else { Err(invalid(msg())) }
}

/// The base learning rate times `gamma` every `step_size` steps:
/// `base · gamma^⌊step / step_size⌋` (PyTorch's `StepLR`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepLR {
    step_size: usize,
    gamma: f64,
}

impl StepLR {
    /// Decays by `gamma` every `step_size` steps (PyTorch's default `gamma` is 0.1).
    pub fn new(step_size: usize, gamma: f64) -> StepLR {
        StepLR { step_size, gamma }
    }
}

impl Schedule for StepLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.validate()?;
        let k = step / self.step_size;
        Ok(base_lr * self.gamma.powi(i32::try_from(k).unwrap_or(i32::MAX)))
    }

    fn validate(&self) -> Result<()> {
        check(self.step_size > 0, || {
            "StepLR's step_size is 0; it must be at least 1".to_string()
        })?;
        check(self.gamma.is_finite(), || {
            format!("StepLR's gamma is {}; it must be finite", self.gamma)
        })
    }
}

/// The base learning rate times `gamma` every step: `base · gamma^step`
/// (PyTorch's `ExponentialLR`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExponentialLR {
    gamma: f64,
}

impl ExponentialLR {
    /// Decays by `gamma` every step.
    pub fn new(gamma: f64) -> ExponentialLR {
        ExponentialLR { gamma }
    }
}

impl Schedule for ExponentialLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.validate()?;
        Ok(base_lr * self.gamma.powi(i32::try_from(step).unwrap_or(i32::MAX)))
    }

    fn validate(&self) -> Result<()> {
        check(self.gamma.is_finite(), || {
            format!("ExponentialLR's gamma is {}; it must be finite", self.gamma)
        })
    }
}

/// Cosine annealing from the base learning rate down to `eta_min` over `t_max`
/// steps, and back up over the next `t_max` (periodic, as PyTorch's
/// `CosineAnnealingLR` without restarts):
/// `eta_min + (base − eta_min) · (1 + cos(π · step / t_max)) / 2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CosineAnnealingLR {
    t_max: usize,
    eta_min: f64,
}

impl CosineAnnealingLR {
    /// Anneals to `eta_min` (PyTorch's default 0) in `t_max` steps.
    pub fn new(t_max: usize, eta_min: f64) -> CosineAnnealingLR {
        CosineAnnealingLR { t_max, eta_min }
    }
}

impl Schedule for CosineAnnealingLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.validate()?;
        let cos = (PI * step as f64 / self.t_max as f64).cos();
        Ok(self.eta_min + (base_lr - self.eta_min) * (1.0 + cos) / 2.0)
    }

    fn validate(&self) -> Result<()> {
        check(self.t_max > 0, || {
            "CosineAnnealingLR's t_max is 0; it must be at least 1".to_string()
        })?;
        check(self.eta_min.is_finite(), || {
            format!(
                "CosineAnnealingLR's eta_min is {}; it must be finite",
                self.eta_min
            )
        })
    }
}

/// The base learning rate times a factor going linearly from `start_factor` to
/// `end_factor` over `total_iters` steps, then staying there (PyTorch's
/// `LinearLR`; with `end_factor` 1, the usual linear warm-up):
/// `base · (start + (end − start) · min(step, total_iters) / total_iters)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearLR {
    start_factor: f64,
    end_factor: f64,
    total_iters: usize,
}

impl LinearLR {
    /// PyTorch's defaults are `start_factor` 1/3, `end_factor` 1, `total_iters` 5.
    pub fn new(start_factor: f64, end_factor: f64, total_iters: usize) -> LinearLR {
        LinearLR {
            start_factor,
            end_factor,
            total_iters,
        }
    }
}

impl Schedule for LinearLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.validate()?;
        if self.total_iters == 0 {
            return Ok(base_lr * self.end_factor);
        }
        let t = step.min(self.total_iters) as f64;
        Ok(base_lr
            * (self.start_factor
                + (self.end_factor - self.start_factor) * t / self.total_iters as f64))
    }

    fn validate(&self) -> Result<()> {
        check(self.start_factor > 0.0 && self.start_factor <= 1.0, || {
            format!(
                "LinearLR's start_factor is {}; it must lie in (0, 1] (as PyTorch's)",
                self.start_factor
            )
        })?;
        check((0.0..=1.0).contains(&self.end_factor), || {
            format!(
                "LinearLR's end_factor is {}; it must lie in [0, 1] (as PyTorch's)",
                self.end_factor
            )
        })
    }
}

/// How [`OneCycleLR`] moves between two learning rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Anneal {
    /// Half a cosine (PyTorch's `anneal_strategy='cos'`, the default).
    #[default]
    Cos,
    /// A straight line (`'linear'`).
    Linear,
}

impl Anneal {
    fn at(self, start: f64, end: f64, pct: f64) -> f64 {
        match self {
            Anneal::Cos => end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0),
            Anneal::Linear => (end - start) * pct + start,
        }
    }
}

/// The 1cycle policy (Smith & Topin, 2018), as PyTorch's `OneCycleLR` with
/// `cycle_momentum=False`: the learning rate only (the momentum, or Adam's β₁,
/// is not cycled). It rises from `max_lr / div_factor` to `max_lr` over the
/// first `pct_start` of `total_steps`, then falls to
/// `max_lr / div_factor / final_div_factor`; with `three_phase`, it first falls
/// back to `max_lr / div_factor` over as many steps as it rose, then to the
/// minimum. A step past `total_steps` is an error, as in PyTorch.
///
/// `max_lr` is each group's base learning rate (the learning rates the
/// optimizer has when the [`LrScheduler`] is built: PyTorch's `max_lr` given as
/// a list of the groups' lrs) unless [`OneCycleLR::max_lr`] sets one for all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OneCycleLR {
    total_steps: usize,
    max_lr: Option<f64>,
    pct_start: f64,
    anneal: Anneal,
    div_factor: f64,
    final_div_factor: f64,
    three_phase: bool,
}

impl OneCycleLR {
    /// A cycle of `total_steps` steps with PyTorch's defaults: `pct_start` 0.3,
    /// cosine annealing, `div_factor` 25, `final_div_factor` 1e4, two phases.
    pub fn new(total_steps: usize) -> OneCycleLR {
        OneCycleLR {
            total_steps,
            max_lr: None,
            pct_start: 0.3,
            anneal: Anneal::Cos,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
        }
    }

    /// One peak learning rate for every group (default: each group's base lr).
    pub fn max_lr(mut self, max_lr: f64) -> OneCycleLR {
        self.max_lr = Some(max_lr);
        self
    }

    /// The fraction of the cycle spent rising (default 0.3).
    pub fn pct_start(mut self, pct_start: f64) -> OneCycleLR {
        self.pct_start = pct_start;
        self
    }

    /// The shape of each phase (default [`Anneal::Cos`]).
    pub fn anneal(mut self, anneal: Anneal) -> OneCycleLR {
        self.anneal = anneal;
        self
    }

    /// The initial learning rate is `max_lr / div_factor` (default 25).
    pub fn div_factor(mut self, div_factor: f64) -> OneCycleLR {
        self.div_factor = div_factor;
        self
    }

    /// The final learning rate is the initial one over `final_div_factor`
    /// (default 1e4).
    pub fn final_div_factor(mut self, final_div_factor: f64) -> OneCycleLR {
        self.final_div_factor = final_div_factor;
        self
    }

    /// Three phases: up, back down to the initial learning rate, then down to
    /// the final one (default false).
    pub fn three_phase(mut self, three_phase: bool) -> OneCycleLR {
        self.three_phase = three_phase;
        self
    }

    /// The phases' (end step, from, to), as PyTorch's `_schedule_phases`.
    fn phases(&self, max_lr: f64) -> Vec<(f64, f64, f64)> {
        let initial = max_lr / self.div_factor;
        let min = initial / self.final_div_factor;
        let up_end = self.pct_start * self.total_steps as f64 - 1.0;
        let last = self.total_steps as f64 - 1.0;
        if self.three_phase {
            vec![
                (up_end, initial, max_lr),
                (
                    2.0 * self.pct_start * self.total_steps as f64 - 2.0,
                    max_lr,
                    initial,
                ),
                (last, initial, min),
            ]
        } else {
            vec![(up_end, initial, max_lr), (last, max_lr, min)]
        }
    }
}

impl Schedule for OneCycleLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.validate()?;
        if step > self.total_steps {
            return Err(invalid(format!(
                "OneCycleLR was stepped {step} times, past its total_steps of {}; build it \
                 with more steps",
                self.total_steps
            )));
        }
        let phases = self.phases(self.max_lr.unwrap_or(base_lr));
        let step = step as f64;
        let mut start_step = 0.0;
        for (i, &(end_step, from, to)) in phases.iter().enumerate() {
            if step <= end_step || i == phases.len() - 1 {
                let pct = (step - start_step) / (end_step - start_step);
                return Ok(self.anneal.at(from, to, pct));
            }
            start_step = end_step;
        }
        unreachable!("the last phase always answers")
    }

    fn validate(&self) -> Result<()> {
        check(self.total_steps > 0, || {
            "OneCycleLR's total_steps is 0; it must be at least 1".to_string()
        })?;
        check((0.0..=1.0).contains(&self.pct_start), || {
            format!(
                "OneCycleLR's pct_start is {}; it must lie in [0, 1]",
                self.pct_start
            )
        })?;
        for (what, v) in [
            ("div_factor", self.div_factor),
            ("final_div_factor", self.final_div_factor),
        ] {
            check(v.is_finite() && v > 0.0, || {
                format!("OneCycleLR's {what} is {v}; it must be a finite number > 0")
            })?;
        }
        if let Some(m) = self.max_lr {
            check(m.is_finite() && m >= 0.0, || {
                format!("OneCycleLR's max_lr is {m}; it must be a finite number >= 0")
            })?;
        }
        // Each phase must last at least one step (PyTorch divides by zero else).
        let mut start = 0.0;
        for (end, _, _) in self.phases(1.0) {
            check(end > start, || {
                format!(
                    "OneCycleLR with total_steps {} and pct_start {} has a phase of no \
                     steps (ending at step {end}, after step {start}); use more steps or \
                     another pct_start",
                    self.total_steps, self.pct_start
                )
            })?;
            start = end;
        }
        Ok(())
    }
}

/// The base learning rate times `f(step)` (PyTorch's `LambdaLR`).
pub struct LambdaLR {
    f: Box<dyn Fn(usize) -> f64 + Send>,
}

impl LambdaLR {
    /// The factor of each step.
    pub fn new(f: impl Fn(usize) -> f64 + Send + 'static) -> LambdaLR {
        LambdaLR { f: Box::new(f) }
    }
}

impl std::fmt::Debug for LambdaLR {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LambdaLR")
    }
}

impl Schedule for LambdaLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        Ok(base_lr * (self.f)(step))
    }
}

/// One schedule after another (PyTorch's `SequentialLR`): schedule `i` runs from
/// milestone `i − 1` (step 0 for the first), counting its steps from there, so
/// `milestones` has one step fewer than `schedules`. A warm-up, then a decay:
///
/// ```
/// use autograd::optim::lr_scheduler::{CosineAnnealingLR, LinearLR, Schedule, SequentialLR};
///
/// # fn main() -> autograd::Result<()> {
/// let s = SequentialLR::new(
///     vec![Box::new(LinearLR::new(0.25, 1.0, 4)), Box::new(CosineAnnealingLR::new(10, 0.0))],
///     vec![4],
/// );
/// assert_eq!(s.lr(1.0, 0)?, 0.25);
/// assert_eq!(s.lr(1.0, 4)?, 1.0); // the cosine's step 0
/// assert!((s.lr(1.0, 14)? - 0.0).abs() < 1e-15);
/// # Ok(())
/// # }
/// ```
pub struct SequentialLR {
    schedules: Vec<Box<dyn Schedule>>,
    milestones: Vec<usize>,
}

impl SequentialLR {
    /// `schedules[i]` from `milestones[i − 1]` on (checked when used: one
    /// milestone fewer than schedules, in increasing order).
    pub fn new(schedules: Vec<Box<dyn Schedule>>, milestones: Vec<usize>) -> SequentialLR {
        SequentialLR {
            schedules,
            milestones,
        }
    }
}

impl std::fmt::Debug for SequentialLR {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequentialLR")
            .field("schedules", &self.schedules.len())
            .field("milestones", &self.milestones)
            .finish()
    }
}

impl Schedule for SequentialLR {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.validate()?;
        let i = self.milestones.partition_point(|&m| m <= step);
        let local = if i == 0 {
            step
        } else {
            step - self.milestones[i - 1]
        };
        self.schedules[i].lr(base_lr, local)
    }

    fn validate(&self) -> Result<()> {
        check(!self.schedules.is_empty(), || {
            "SequentialLR has no schedules; give it at least one".to_string()
        })?;
        check(self.milestones.len() + 1 == self.schedules.len(), || {
            format!(
                "SequentialLR has {} schedules and {} milestones; it needs one milestone \
                 fewer than schedules (where each schedule after the first starts)",
                self.schedules.len(),
                self.milestones.len()
            )
        })?;
        check(self.milestones.windows(2).all(|w| w[0] < w[1]), || {
            format!(
                "SequentialLR's milestones {:?} are not increasing",
                self.milestones
            )
        })?;
        self.schedules.iter().try_for_each(|s| s.validate())
    }
}

/// Several schedules at once, each scaling what the one before gave (PyTorch's
/// `ChainedScheduler`): `s_n(…s_2(s_1(base, t), t)…, t)`, the base learning
/// rate times the product of their factors. PyTorch applies each schedule to
/// the learning rate the others left; the results agree for schedules that
/// scale the base learning rate ([`StepLR`], [`ExponentialLR`], [`LinearLR`],
/// [`LambdaLR`], and [`CosineAnnealingLR`] with `eta_min` 0 within its first
/// `t_max` steps).
pub struct ChainedScheduler {
    schedules: Vec<Box<dyn Schedule>>,
}

impl ChainedScheduler {
    /// The schedules, applied in order.
    pub fn new(schedules: Vec<Box<dyn Schedule>>) -> ChainedScheduler {
        ChainedScheduler { schedules }
    }
}

impl std::fmt::Debug for ChainedScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainedScheduler")
            .field("schedules", &self.schedules.len())
            .finish()
    }
}

impl Schedule for ChainedScheduler {
    fn lr(&self, base_lr: f64, step: usize) -> Result<f64> {
        self.schedules
            .iter()
            .try_fold(base_lr, |lr, s| s.lr(lr, step))
    }

    fn validate(&self) -> Result<()> {
        self.schedules.iter().try_for_each(|s| s.validate())
    }
}

/// A [`Schedule`] applied to every parameter group of an optimizer: holds the
/// groups' base learning rates and the step count (PyTorch's `last_epoch`).
pub struct LrScheduler {
    schedule: Box<dyn Schedule>,
    base_lrs: Vec<f64>,
    step: usize,
    last_lrs: Vec<f64>,
}

impl std::fmt::Debug for LrScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LrScheduler")
            .field("base_lrs", &self.base_lrs)
            .field("step", &self.step)
            .field("last_lrs", &self.last_lrs)
            .finish()
    }
}

impl LrScheduler {
    /// Takes every group's learning rate as its base learning rate, and sets
    /// the learning rates of step 0 (PyTorch's scheduler constructor). An error
    /// (nothing changed) for a schedule whose settings are out of range.
    pub fn new<O: Optimizer + ?Sized>(
        opt: &mut O,
        schedule: impl Schedule + 'static,
    ) -> Result<LrScheduler> {
        schedule.validate()?;
        let base_lrs: Vec<f64> = (0..opt.num_groups())
            .map(|i| {
                opt.group_learning_rate(i).ok_or_else(|| {
                    invalid(format!(
                        "the optimizer says it has {} groups but has no learning rate for \
                         group {i}",
                        opt.num_groups()
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let mut s = LrScheduler {
            schedule: Box::new(schedule),
            base_lrs,
            step: 0,
            last_lrs: Vec::new(),
        };
        s.last_lrs = s.lrs_at(0)?;
        s.apply(opt)?;
        Ok(s)
    }

    fn lrs_at(&self, step: usize) -> Result<Vec<f64>> {
        self.base_lrs
            .iter()
            .map(|&b| self.schedule.lr(b, step))
            .collect()
    }

    /// Writes [`LrScheduler::last_lr`] into the optimizer's groups (what `new`,
    /// `step` and `load_state_dict` do).
    pub fn apply<O: Optimizer + ?Sized>(&self, opt: &mut O) -> Result<()> {
        if opt.num_groups() != self.base_lrs.len() {
            return Err(invalid(format!(
                "the optimizer has {} parameter groups, but the schedule was built for {}; \
                 add every group before building the LrScheduler",
                opt.num_groups(),
                self.base_lrs.len()
            )));
        }
        for (i, &lr) in self.last_lrs.iter().enumerate() {
            opt.set_group_learning_rate(i, lr)?;
        }
        Ok(())
    }

    /// Advances one step and sets every group's learning rate for it. Call it
    /// after the optimizer's step, as in PyTorch. On an error (a step past the
    /// schedule's end, a group added since) nothing changes.
    pub fn step<O: Optimizer + ?Sized>(&mut self, opt: &mut O) -> Result<()> {
        let lrs = self.lrs_at(self.step + 1)?;
        let before = std::mem::replace(&mut self.last_lrs, lrs);
        if let Err(e) = self.apply(opt) {
            self.last_lrs = before;
            return Err(e);
        }
        self.step += 1;
        Ok(())
    }

    /// The learning rates set last, one per group (PyTorch's `get_last_lr()`).
    pub fn last_lr(&self) -> &[f64] {
        &self.last_lrs
    }

    /// The groups' base learning rates.
    pub fn base_lrs(&self) -> &[f64] {
        &self.base_lrs
    }

    /// The number of steps taken (PyTorch's `last_epoch`).
    pub fn step_count(&self) -> usize {
        self.step
    }

    /// The step count (`step`, an `i64` scalar) and the base learning rates
    /// (`base_lrs.{i}`, `f64` scalars). The schedule itself is code: build the
    /// same one to load into (its learning rates are a function of these).
    pub fn state_dict(&self) -> StateDict {
        let mut out = vec![("step".to_string(), Tensor::scalar(self.step as i64))];
        for (i, &b) in self.base_lrs.iter().enumerate() {
            out.push((format!("base_lrs.{i}"), Tensor::scalar(b)));
        }
        out
    }

    /// Takes the step count and base learning rates of `state` (written by
    /// [`LrScheduler::state_dict`]), and sets `opt`'s learning rates to those
    /// of that step, so that it does not matter whether the optimizer's own
    /// state was loaded before or after, or whether this scheduler was built
    /// before or after loading it. Everything is checked first: a missing or
    /// unknown entry, another number of groups (than the state's, this
    /// scheduler's or `opt`'s), a step the schedule does not reach; on an error
    /// nothing changes.
    pub fn load_state_dict<O: Optimizer + ?Sized>(
        &mut self,
        opt: &mut O,
        state: &[(String, Tensor)],
    ) -> Result<()> {
        let fail = |msg: String| Error::InvalidArgument {
            op: "LrScheduler::load_state_dict",
            msg: format!("nothing was loaded: {msg}"),
        };
        let get = |key: &str| -> Result<f64> {
            let t = state
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, t)| t)
                .ok_or_else(|| {
                    fail(format!(
                        "the state has no `{key}` (was it written by `LrScheduler::state_dict`, \
                         under another prefix?)"
                    ))
                })?;
            if t.numel() != 1 {
                return Err(fail(format!(
                    "`{key}` has shape {}, but it holds one number",
                    t.shape()
                )));
            }
            t.to_scalar::<f64>()
        };
        let step = get("step")?;
        if step < 0.0 || step.fract() != 0.0 {
            return Err(fail(format!("`step` is {step}, not a step count")));
        }
        let n = state
            .iter()
            .filter(|(k, _)| k.starts_with("base_lrs."))
            .count();
        if n != self.base_lrs.len() || n != opt.num_groups() {
            return Err(fail(format!(
                "the state has {n} base learning rates, but this scheduler was built for {} \
                 parameter groups and the optimizer has {}; add the same groups before \
                 building the scheduler",
                self.base_lrs.len(),
                opt.num_groups()
            )));
        }
        let base_lrs = (0..n)
            .map(|i| get(&format!("base_lrs.{i}")))
            .collect::<Result<Vec<f64>>>()?;
        if let Some((k, _)) = state
            .iter()
            .find(|(k, _)| k != "step" && !k.starts_with("base_lrs."))
        {
            return Err(fail(format!("unknown entry `{k}`")));
        }
        let step = step as usize;
        let lrs = base_lrs
            .iter()
            .map(|&b| self.schedule.lr(b, step))
            .collect::<Result<Vec<f64>>>()
            .map_err(|e| fail(e.to_string()))?;
        self.base_lrs = base_lrs;
        self.step = step;
        self.last_lrs = lrs;
        self.apply(opt)
    }
}
