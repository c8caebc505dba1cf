//! Optimizers: [`Sgd`] (with momentum), [`Adam`], [`AdamW`] (decoupled weight
//! decay) and [`RMSprop`], with parameter groups ([`GroupOptions`]), state
//! dicts by parameter name for resuming training bit for bit, and the
//! learning-rate schedules of [`lr_scheduler`].
//!
//! An optimizer reads each parameter's accumulated gradient ([`Tensor::grad`]) and
//! writes the parameter's new values with [`Tensor::set_data`]: in place when nothing
//! else holds the parameter, and never into a buffer that a recorded graph saved.
//! The update is computed with recording off, so the parameters stay leaves that
//! require grad, with the same ids and gradient slots. A parameter is one tensor
//! however many handles hold it, so the model's handles see each update. The
//! per-parameter state (momentum, Adam's moments) is keyed by [`TensorId`](crate::TensorId), which
//! `set_data` preserves, and goes with the parameter: the state of a parameter whose
//! last handle was dropped is freed at the next step (or at once with `remove`).
//! State is always detached from any graph, even after a `create_graph` backward,
//! and computed at each step (with fusion on, together with the new parameter
//! values in one pass), so it never holds the gradients it was computed from.
//! A parameter listed more than once in one `step` is updated once.
//!
//! # Parameter groups
//!
//! Every parameter is in group 0, which has the optimizer's own learning rate
//! and weight decay, unless it was added to a group of its own with
//! `add_param_group` (each optimizer has it), which may set another learning
//! rate and weight decay ([`GroupOptions`]; what it leaves `None` is taken from
//! group 0 at the call). A step takes every parameter as before; each is updated
//! with its group's settings. [`Optimizer::num_groups`],
//! [`Optimizer::group_learning_rate`] and [`Optimizer::set_group_learning_rate`]
//! are what a schedule ([`lr_scheduler::LrScheduler`]) drives;
//! [`Optimizer::learning_rate`] is group 0's.
//!
//! # Saving and resuming
//!
//! [`Optimizer::state_dict`] lists everything a step depends on by the
//! parameters' names (`model.named_parameters()`): the groups'
//! `param_groups.{i}.lr` and `param_groups.{i}.weight_decay`, the other
//! hyperparameters as `options.{name}` (all `f64` scalars, so exact), and per
//! parameter `state.{name}.group`, `state.{name}.step` (an `i64` scalar) and its
//! buffers (`state.{name}.exp_avg`, ..., `state.{name}.master` for the `f32`
//! master of an `f16`/`bf16` parameter). [`Optimizer::load_state_dict`] checks
//! all of it against the parameters before changing anything. With
//! [`crate::nn::add_prefix`] and [`crate::nn::strip_prefix`] a model, its
//! optimizer and its schedule share one safetensors file (see
//! [`lr_scheduler`]'s example).
//!
//! # Mixed precision
//!
//! A parameter held in `f16` or `bf16` is trained through an `f32` master copy
//! that the optimizer keeps: each step converts the gradient to `f32`, updates the
//! master (and the state, always `f32` for such a parameter) and writes the master
//! back to the parameter rounded to its dtype. So an update smaller than half a
//! unit in the last place of `bf16` is not lost: it accumulates in the master
//! until it shows in the parameter. The master is made from the parameter's
//! values at its first step; after changing a parameter's values by other means,
//! call `remove` so that the next step starts again from them.
//! [`Optimizer::step_unscaled`] is the step of a loss-scaled backward
//! ([`GradScaler`](crate::amp::GradScaler)): every gradient is multiplied by the
//! inverse scale in `f32` before use.
//!
//! One training step:
//!
//! ```
//! use autograd::optim::{Adam, Optimizer};
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let mut w = Tensor::from_slice(&[3.0f32, -2.0], [2])?.with_requires_grad(true);
//! let mut opt = Adam::new(0.1);
//! for _ in 0..100 {
//!     let loss = w.square()?.sum_all()?; // minimum at w = 0
//!     loss.backward()?;
//!     opt.step(&mut [&mut w])?;
//!     opt.zero_grad(&mut [&mut w]);
//! }
//! assert!(w.to_vec::<f32>()?.iter().all(|v| v.abs() < 0.1));
//! assert!(w.requires_grad() && w.is_leaf());
//! # Ok(())
//! # }
//! ```

use crate::nn::StateDict;
use crate::{BinaryOp, Error, Result, Tensor, UnaryOp, compute};

mod adam;
mod core;
pub mod lr_scheduler;
mod rmsprop;
mod sgd;

pub use adam::{Adam, AdamW};
pub use lr_scheduler::{
    Anneal, ChainedScheduler, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LrScheduler,
    OneCycleLR, Schedule, SequentialLR, StepLR,
};
pub use rmsprop::RMSprop;
pub use sgd::Sgd;

/// Something that updates parameters from their gradients.
pub trait Optimizer {
    /// Updates every parameter in `params` that has a gradient; the others (no
    /// gradient accumulated since the last [`Optimizer::zero_grad`], or not requiring
    /// grad) are left as they are. Gradients are not cleared.
    fn step(&mut self, params: &mut [&mut Tensor]) -> Result<()>;

    /// [`Optimizer::step`] with every gradient multiplied by `inv_scale` first (in
    /// `f32` for an `f16`/`bf16` gradient): the step after a backward pass of a
    /// loss multiplied by `1 / inv_scale`, as [`GradScaler`](crate::amp::GradScaler)
    /// takes it. The gradients themselves are left as they are. The default
    /// handles `inv_scale == 1` only (it is `step`), and is an error otherwise: an
    /// optimizer meant for loss scaling implements it ([`Sgd`] and [`Adam`] do).
    fn step_unscaled(&mut self, params: &mut [&mut Tensor], inv_scale: f64) -> Result<()> {
        if inv_scale == 1.0 {
            return self.step(params);
        }
        Err(invalid(format!(
            "this optimizer does not implement `step_unscaled`, so it cannot take gradients \
             scaled by {}; implement `Optimizer::step_unscaled`, or train without a GradScaler",
            1.0 / inv_scale
        )))
    }

    /// The learning rate the next step uses (group 0's, with parameter groups).
    fn learning_rate(&self) -> f64;

    /// Changes the learning rate (group 0's, with parameter groups).
    fn set_learning_rate(&mut self, lr: f64);

    /// The number of parameter groups (at least 1: group 0 holds every parameter
    /// not added to another). The default: 1.
    fn num_groups(&self) -> usize {
        1
    }

    /// The learning rate of parameter group `group`, `None` past the last group.
    /// The default knows group 0 only ([`Optimizer::learning_rate`]).
    fn group_learning_rate(&self, group: usize) -> Option<f64> {
        (group == 0).then(|| self.learning_rate())
    }

    /// Changes the learning rate of parameter group `group` (for a schedule); an
    /// error naming the number of groups past the last one. The default knows
    /// group 0 only ([`Optimizer::set_learning_rate`]).
    fn set_group_learning_rate(&mut self, group: usize, lr: f64) -> Result<()> {
        if group == 0 {
            self.set_learning_rate(lr);
            return Ok(());
        }
        Err(no_group(group, self.num_groups()))
    }

    /// Everything the next steps depend on (hyperparameters, groups, and each
    /// parameter's state and `f32` master), keyed by the names of `named`
    /// (`model.named_parameters()`, which must list every parameter the
    /// optimizer holds state for); see the [module docs](self) for the keys. The
    /// tensors are handles of the optimizer's own (it never writes into them).
    /// The default is an error: an optimizer that can be saved implements it.
    fn state_dict(&self, named: &[(String, Tensor)]) -> Result<StateDict> {
        let _ = named;
        Err(invalid(
            "this optimizer does not implement `state_dict`; implement \
             `Optimizer::state_dict` and `Optimizer::load_state_dict` to save it"
                .to_string(),
        ))
    }

    /// Replaces the optimizer's hyperparameters, groups and state with those of
    /// `state` (written by [`Optimizer::state_dict`]), matched to the parameters
    /// by the names of `named`. Everything is checked first: a parameter of
    /// `named` the state does not know, an entry of the state that no name of
    /// `named` or no option explains, a buffer whose shape is not its
    /// parameter's, an incomplete state: the error lists every problem and the
    /// optimizer is left unchanged. Buffers are converted to the parameter's
    /// dtype (`f32` for a half one) and device. The default is an error.
    fn load_state_dict(
        &mut self,
        named: &[(String, Tensor)],
        state: &[(String, Tensor)],
    ) -> Result<()> {
        let _ = (named, state);
        Err(invalid(
            "this optimizer does not implement `load_state_dict`; implement \
             `Optimizer::state_dict` and `Optimizer::load_state_dict` to load it"
                .to_string(),
        ))
    }

    /// Clears the gradients of `params`, before the next backward pass accumulates
    /// into them.
    fn zero_grad(&self, params: &mut [&mut Tensor]) {
        for p in params.iter() {
            p.zero_grad();
        }
    }
}

/// The settings of a parameter group that differ from the optimizer's own: what
/// is `None` is taken from group 0 when the group is added.
///
/// ```
/// use autograd::optim::{AdamW, GroupOptions, Optimizer};
/// use autograd::prelude::*;
///
/// # fn main() -> Result<()> {
/// let bias = Tensor::zeros([4], DType::F32)?.with_requires_grad(true);
/// let mut opt = AdamW::new(1e-3).weight_decay(0.1);
/// // No weight decay on biases and norm weights.
/// let g = opt.add_param_group(&[&bias], GroupOptions::weight_decay(0.0))?;
/// assert_eq!((g, opt.num_groups()), (1, 2));
/// assert_eq!(opt.group_learning_rate(1), Some(1e-3));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupOptions {
    /// The group's learning rate (default: group 0's).
    pub lr: Option<f64>,
    /// The group's weight decay (default: group 0's).
    pub weight_decay: Option<f64>,
}

impl GroupOptions {
    /// A group with its own learning rate.
    pub fn lr(lr: f64) -> GroupOptions {
        GroupOptions {
            lr: Some(lr),
            weight_decay: None,
        }
    }

    /// A group with its own weight decay.
    pub fn weight_decay(weight_decay: f64) -> GroupOptions {
        GroupOptions {
            lr: None,
            weight_decay: Some(weight_decay),
        }
    }
}

/// The settings of one parameter group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Group {
    pub lr: f64,
    pub weight_decay: f64,
}

/// The inherent methods every optimizer here shares (through its `core`), and
/// its [`Optimizer`] implementation (through its `cfg`, an `Algorithm`).
macro_rules! optimizer_common {
    ($ty:ident) => {
        impl $ty {
            /// Adds a parameter group holding `params` (a slice of tensors or of
            /// references, as `&model.parameters()` or `&[&w, &b]`) with its own
            /// settings; returns its index (1 for the first added). What
            /// `options` leaves `None` is taken from group 0 now. A parameter
            /// belongs to one group: adding one that is in another added group is
            /// an error (nothing added), and so are a parameter that is not a
            /// leaf and a learning rate or weight decay that is not a finite
            /// number `>= 0`. Add the groups before building a schedule on the
            /// optimizer, which reads every group's learning rate.
            pub fn add_param_group<T: $crate::nn::AsTensor>(
                &mut self,
                params: &[T],
                options: $crate::optim::GroupOptions,
            ) -> $crate::Result<usize> {
                self.core
                    .add_group(params.iter().map(|p| p.as_tensor()), options)
            }

            /// The weight decay of parameter group `group` (`None` past the last).
            pub fn group_weight_decay(&self, group: usize) -> Option<f64> {
                self.core.groups.get(group).map(|g| g.weight_decay)
            }

            /// Changes the weight decay of parameter group `group`.
            pub fn set_group_weight_decay(
                &mut self,
                group: usize,
                weight_decay: f64,
            ) -> $crate::Result<()> {
                let n = self.core.groups.len();
                match self.core.groups.get_mut(group) {
                    Some(g) => {
                        g.weight_decay = weight_decay;
                        Ok(())
                    }
                    None => Err($crate::optim::no_group(group, n)),
                }
            }

            /// The parameter group of `param` (0 unless it was added to another).
            pub fn group_of(&self, param: &$crate::Tensor) -> usize {
                self.core.group_of(param)
            }

            /// Forgets the state (and the `f32` master copy of an `f16`/`bf16`
            /// parameter) kept for `param`; they are also forgotten once every
            /// handle of the parameter is dropped.
            pub fn remove(&mut self, param: &$crate::Tensor) {
                self.core.remove(param);
            }

            /// The `f32` master copy kept for `param` when it is `f16` or `bf16`
            /// (after its first step), else `None`.
            pub fn master(&self, param: &$crate::Tensor) -> Option<$crate::Tensor> {
                self.core.master(param)
            }

            /// Number of parameters with state.
            pub fn state_len(&self) -> usize {
                self.core.state_len()
            }
        }

        impl $crate::optim::Optimizer for $ty {
            fn step(&mut self, params: &mut [&mut $crate::Tensor]) -> $crate::Result<()> {
                self.core.step(&self.cfg, params, 1.0)
            }

            fn step_unscaled(
                &mut self,
                params: &mut [&mut $crate::Tensor],
                inv_scale: f64,
            ) -> $crate::Result<()> {
                self.core.step(&self.cfg, params, inv_scale)
            }

            fn learning_rate(&self) -> f64 {
                self.core.groups[0].lr
            }

            fn set_learning_rate(&mut self, lr: f64) {
                self.core.groups[0].lr = lr;
            }

            fn num_groups(&self) -> usize {
                self.core.groups.len()
            }

            fn group_learning_rate(&self, group: usize) -> Option<f64> {
                self.core.groups.get(group).map(|g| g.lr)
            }

            fn set_group_learning_rate(&mut self, group: usize, lr: f64) -> $crate::Result<()> {
                let n = self.core.groups.len();
                match self.core.groups.get_mut(group) {
                    Some(g) => {
                        g.lr = lr;
                        Ok(())
                    }
                    None => Err($crate::optim::no_group(group, n)),
                }
            }

            fn state_dict(
                &self,
                named: &[(String, $crate::Tensor)],
            ) -> $crate::Result<$crate::nn::StateDict> {
                self.core.state_dict(&self.cfg, named)
            }

            fn load_state_dict(
                &mut self,
                named: &[(String, $crate::Tensor)],
                state: &[(String, $crate::Tensor)],
            ) -> $crate::Result<()> {
                let (core, cfg) = self.core.load_state_dict(&self.cfg, named, state)?;
                self.core = core;
                self.cfg = cfg;
                Ok(())
            }
        }
    };
}
pub(crate) use optimizer_common;

pub(crate) fn no_group(group: usize, groups: usize) -> Error {
    invalid(format!(
        "there is no parameter group {group}: the optimizer has {groups} (0 to {}); add \
         groups with `add_param_group`",
        groups - 1
    ))
}

/// `g + weight_decay · p` (L2 weight decay, added to the gradient).
pub(crate) fn with_weight_decay(g: Tensor, p: &Tensor, weight_decay: f64) -> Result<Tensor> {
    if weight_decay == 0.0 {
        return Ok(g);
    }
    add(&g, &scale(p, weight_decay)?)
}

pub(crate) fn scale(x: &Tensor, s: f64) -> Result<Tensor> {
    compute::unary(x, UnaryOp::MulScalar(s))
}

pub(crate) fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compute::binary(a, b, BinaryOp::Add)
}

pub(crate) fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compute::binary(a, b, BinaryOp::Sub)
}

pub(crate) fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compute::binary(a, b, BinaryOp::Mul)
}

pub(crate) fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compute::binary(a, b, BinaryOp::Div)
}

pub(crate) fn add_scalar(x: &Tensor, s: f64) -> Result<Tensor> {
    compute::unary(x, UnaryOp::AddScalar(s))
}

pub(crate) fn invalid(msg: String) -> Error {
    Error::InvalidArgument {
        op: "optimizer step",
        msg,
    }
}

pub(crate) fn check_finite_non_negative(what: &str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(format!(
            "the {what} is {value}; it must be a finite number >= 0"
        )))
    }
}

pub(crate) fn check_unit_interval(what: &str, value: f64) -> Result<()> {
    if (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err(invalid(format!("{what} is {value}; it must lie in [0, 1)")))
    }
}
