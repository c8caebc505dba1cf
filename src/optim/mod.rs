//! Optimizers: [`Sgd`] (with momentum) and [`Adam`].
//!
//! An optimizer reads each parameter's accumulated gradient ([`Tensor::grad`]) and
//! writes the parameter's new values with [`Tensor::set_data`]: in place when nothing
//! else holds the parameter, and never into a buffer that a recorded graph saved.
//! The update is computed with recording off, so the parameters stay leaves that
//! require grad, with the same ids and gradient slots. A parameter is one tensor
//! however many handles hold it, so the model's handles see each update. The
//! per-parameter state (momentum, Adam's moments) is keyed by [`TensorId`], which
//! `set_data` preserves, and goes with the parameter: the state of a parameter whose
//! last handle was dropped is freed at the next step (or at once with `remove`).
//! State is always detached from any graph, even after a `create_graph` backward,
//! and computed at each step (with fusion on, together with the new parameter
//! values in one pass), so it never holds the gradients it was computed from.
//! A parameter listed more than once in one `step` is updated once.
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

use crate::{
    BinaryOp, DType, Error, Result, Tensor, TensorId, UnaryOp, WeakTensor, compute, no_grad,
};
use std::collections::{HashMap, HashSet};

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

    /// The learning rate the next step uses.
    fn learning_rate(&self) -> f64;

    /// Changes the learning rate (for a schedule).
    fn set_learning_rate(&mut self, lr: f64);

    /// Clears the gradients of `params`, before the next backward pass accumulates
    /// into them.
    fn zero_grad(&self, params: &mut [&mut Tensor]) {
        for p in params.iter() {
            p.zero_grad();
        }
    }
}

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
/// Without momentum the step is `p ← p − lr · g`.
#[derive(Debug, Clone)]
pub struct Sgd {
    lr: f64,
    momentum: f64,
    nesterov: bool,
    weight_decay: f64,
    buffers: HashMap<TensorId, (WeakTensor, Tensor)>,
    masters: Masters,
}

impl Sgd {
    /// Plain gradient descent with learning rate `lr`.
    pub fn new(lr: f64) -> Sgd {
        Sgd {
            lr,
            momentum: 0.0,
            nesterov: false,
            weight_decay: 0.0,
            buffers: HashMap::new(),
            masters: Masters::default(),
        }
    }

    /// Momentum factor in `[0, 1)` (default 0: none).
    pub fn momentum(mut self, momentum: f64) -> Sgd {
        self.momentum = momentum;
        self
    }

    /// Nesterov momentum (needs a momentum above 0).
    pub fn nesterov(mut self, nesterov: bool) -> Sgd {
        self.nesterov = nesterov;
        self
    }

    /// L2 penalty: `weight_decay · p` is added to every gradient (default 0).
    pub fn weight_decay(mut self, weight_decay: f64) -> Sgd {
        self.weight_decay = weight_decay;
        self
    }

    fn validate(&self) -> Result<()> {
        check_finite_non_negative("learning rate", self.lr)?;
        check_unit_interval("momentum", self.momentum)?;
        check_finite_non_negative("weight decay", self.weight_decay)?;
        if self.nesterov && self.momentum == 0.0 {
            return Err(invalid(
                "Nesterov momentum needs a momentum above 0; set `.momentum(..)`".to_string(),
            ));
        }
        Ok(())
    }
}

impl Sgd {
    /// Forgets the momentum (and the `f32` master copy of an `f16`/`bf16`
    /// parameter) kept for `param`; they are also forgotten once every handle of
    /// the parameter is dropped.
    pub fn remove(&mut self, param: &Tensor) {
        self.buffers.remove(&param.id());
        self.masters.remove(param);
    }

    /// The `f32` master copy kept for `param` when it is `f16` or `bf16` (after
    /// its first step), else `None`.
    pub fn master(&self, param: &Tensor) -> Option<Tensor> {
        self.masters.get(param)
    }

    /// Number of parameters with a momentum buffer.
    pub fn state_len(&self) -> usize {
        self.buffers.len()
    }
}

impl Optimizer for Sgd {
    fn step(&mut self, params: &mut [&mut Tensor]) -> Result<()> {
        self.step_unscaled(params, 1.0)
    }

    fn step_unscaled(&mut self, params: &mut [&mut Tensor], inv_scale: f64) -> Result<()> {
        self.validate()?;
        check_inv_scale(inv_scale)?;
        self.buffers.retain(|_, (p, _)| p.is_alive());
        self.masters.retain_alive();
        let mut seen = HashSet::new();
        no_grad(|| {
            for p in params.iter_mut() {
                if !seen.insert(p.id()) {
                    continue; // listed twice: updated once
                }
                let Some(g) = gradient_of(p, inv_scale)? else {
                    continue;
                };
                let w = self.masters.working(p)?;
                let g = with_weight_decay(g, &w, self.weight_decay)?;
                let direction = if self.momentum == 0.0 {
                    g
                } else {
                    let buf = match self.buffers.get(&p.id()) {
                        None => g.clone(),
                        Some((_, b)) => add(&scale(b, self.momentum)?, &g)?,
                    };
                    let direction = if self.nesterov {
                        add(&g, &scale(&buf, self.momentum)?)?
                    } else {
                        buf.clone()
                    };
                    self.buffers.insert(p.id(), (p.downgrade(), buf));
                    direction
                };
                let new = sub(&w, &scale(&direction, self.lr)?)?;
                drop(w); // no second handle of the parameter when it is written
                // Computed now, together (one pass when fused): a deferred buffer
                // would hold the gradients and buffers it is computed from.
                if let Some((_, buf)) = self.buffers.get(&p.id()) {
                    crate::fusion::realize_all(&[&new, buf])?;
                }
                self.masters.write(p, new)?;
            }
            Ok(())
        })
    }

    fn learning_rate(&self) -> f64 {
        self.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// Adam (Kingma & Ba, 2015) with bias correction and optional L2 weight decay, as
/// PyTorch's `torch.optim.Adam` computes it; each parameter counts its own steps `t`:
///
/// ```text
/// g ← grad + weight_decay · p
/// m ← β₁ · m + (1 − β₁) · g
/// v ← β₂ · v + (1 − β₂) · g²
/// p ← p − lr · (m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε)
/// ```
#[derive(Debug, Clone)]
pub struct Adam {
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    moments: HashMap<TensorId, AdamState>,
    masters: Masters,
}

#[derive(Debug, Clone)]
struct AdamState {
    param: WeakTensor,
    step: i32,
    m: Tensor,
    v: Tensor,
}

impl Adam {
    /// Adam with learning rate `lr` and the usual defaults: β₁ = 0.9, β₂ = 0.999,
    /// ε = 1e-8, no weight decay.
    pub fn new(lr: f64) -> Adam {
        Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            moments: HashMap::new(),
            masters: Masters::default(),
        }
    }

    /// Decay rates of the first and second moment estimates, each in `[0, 1)`.
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Adam {
        self.beta1 = beta1;
        self.beta2 = beta2;
        self
    }

    /// The term added to the denominator for stability (default 1e-8).
    pub fn eps(mut self, eps: f64) -> Adam {
        self.eps = eps;
        self
    }

    /// L2 penalty: `weight_decay · p` is added to every gradient (default 0).
    pub fn weight_decay(mut self, weight_decay: f64) -> Adam {
        self.weight_decay = weight_decay;
        self
    }

    fn validate(&self) -> Result<()> {
        check_finite_non_negative("learning rate", self.lr)?;
        check_unit_interval("beta1", self.beta1)?;
        check_unit_interval("beta2", self.beta2)?;
        check_finite_non_negative("eps", self.eps)?;
        check_finite_non_negative("weight decay", self.weight_decay)
    }
}

impl Adam {
    /// Forgets the moments (and the `f32` master copy of an `f16`/`bf16`
    /// parameter) kept for `param`; they are also forgotten once every handle of
    /// the parameter is dropped.
    pub fn remove(&mut self, param: &Tensor) {
        self.moments.remove(&param.id());
        self.masters.remove(param);
    }

    /// The `f32` master copy kept for `param` when it is `f16` or `bf16` (after
    /// its first step), else `None`.
    pub fn master(&self, param: &Tensor) -> Option<Tensor> {
        self.masters.get(param)
    }

    /// Number of parameters with moments.
    pub fn state_len(&self) -> usize {
        self.moments.len()
    }
}

impl Optimizer for Adam {
    fn step(&mut self, params: &mut [&mut Tensor]) -> Result<()> {
        self.step_unscaled(params, 1.0)
    }

    fn step_unscaled(&mut self, params: &mut [&mut Tensor], inv_scale: f64) -> Result<()> {
        self.validate()?;
        check_inv_scale(inv_scale)?;
        self.moments.retain(|_, s| s.param.is_alive());
        self.masters.retain_alive();
        let (b1, b2) = (self.beta1, self.beta2);
        let mut seen = HashSet::new();
        no_grad(|| {
            for p in params.iter_mut() {
                if !seen.insert(p.id()) {
                    continue; // listed twice: updated once
                }
                let Some(g) = gradient_of(p, inv_scale)? else {
                    continue;
                };
                let w = self.masters.working(p)?;
                let g = with_weight_decay(g, &w, self.weight_decay)?;
                let state = match self.moments.get(&p.id()) {
                    None => AdamState {
                        param: p.downgrade(),
                        step: 1,
                        m: scale(&g, 1.0 - b1)?,
                        v: scale(&crate::ops::square(&g)?, 1.0 - b2)?,
                    },
                    Some(s) => AdamState {
                        param: s.param.clone(),
                        step: s.step.saturating_add(1),
                        m: add(&scale(&s.m, b1)?, &scale(&g, 1.0 - b1)?)?,
                        v: add(
                            &scale(&s.v, b2)?,
                            &scale(&crate::ops::square(&g)?, 1.0 - b2)?,
                        )?,
                    },
                };
                let correction1 = 1.0 - b1.powi(state.step);
                let correction2 = 1.0 - b2.powi(state.step);
                let denom = compute::unary(
                    &crate::ops::sqrt(&scale(&state.v, 1.0 / correction2)?)?,
                    UnaryOp::AddScalar(self.eps),
                )?;
                let update = compute::binary(
                    &scale(&state.m, self.lr / correction1)?,
                    &denom,
                    BinaryOp::Div,
                )?;
                let new = sub(&w, &update)?;
                drop(w); // no second handle of the parameter when it is written
                // Computed now, together (one pass when fused): deferred moments
                // would hold the gradients and moments they are computed from.
                crate::fusion::realize_all(&[&new, &state.m, &state.v])?;
                self.masters.write(p, new)?;
                self.moments.insert(p.id(), state);
            }
            Ok(())
        })
    }

    fn learning_rate(&self) -> f64 {
        self.lr
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.lr = lr;
    }
}

/// The parameter's gradient, if it has one that fits it, cut off from any graph (a
/// `create_graph` backward leaves a recorded gradient, whose graph the optimizer's
/// state must not keep alive), in `f32` for an `f16`/`bf16` parameter, times
/// `inv_scale` (unless 1).
fn gradient_of(p: &Tensor, inv_scale: f64) -> Result<Option<Tensor>> {
    let Some(g) = p.grad() else { return Ok(None) };
    let g = if g.requires_grad() { g.detach() } else { g };
    if g.shape() != p.shape() {
        return Err(invalid(format!(
            "the gradient of parameter {} has shape {} but the parameter has shape {}",
            p.id(),
            g.shape(),
            p.shape()
        )));
    }
    let g = if p.dtype().is_half() || g.dtype().is_half() {
        compute::cast(&g, DType::F32)?
    } else {
        g
    };
    if inv_scale == 1.0 {
        Ok(Some(g))
    } else {
        scale(&g, inv_scale).map(Some)
    }
}

/// The `f32` master copies of the `f16`/`bf16` parameters an optimizer updates,
/// keyed like its state, each with a weak handle of its parameter (freed with it).
#[derive(Debug, Clone, Default)]
struct Masters {
    map: HashMap<TensorId, (WeakTensor, Tensor)>,
}

impl Masters {
    /// The values a step updates: the master copy of an `f16`/`bf16` parameter
    /// (made from its values at its first step), the parameter itself otherwise.
    fn working(&self, p: &Tensor) -> Result<Tensor> {
        if !p.dtype().is_half() {
            return Ok(p.clone());
        }
        match self.map.get(&p.id()) {
            Some((_, m)) if m.shape() == p.shape() => Ok(m.clone()),
            _ => compute::cast(&p.detach(), DType::F32),
        }
    }

    /// Writes the step's result: into the master (then rounded into the
    /// parameter) for an `f16`/`bf16` parameter, into the parameter otherwise.
    fn write(&mut self, p: &mut Tensor, new: Tensor) -> Result<()> {
        if !p.dtype().is_half() {
            return p.set_data(&new);
        }
        // Computed now: a deferred master would hold the one before it.
        let new = compute::contiguous(&new)?;
        crate::fusion::realize_all(&[&new])?;
        p.set_data(&compute::cast(&new, p.dtype())?)?;
        self.map.insert(p.id(), (p.downgrade(), new));
        Ok(())
    }

    /// The master copy of `p`, if one is kept.
    fn get(&self, p: &Tensor) -> Option<Tensor> {
        self.map.get(&p.id()).map(|(_, m)| m.clone())
    }

    fn remove(&mut self, p: &Tensor) {
        self.map.remove(&p.id());
    }

    /// Frees the copies of parameters whose last handle was dropped.
    fn retain_alive(&mut self) {
        self.map.retain(|_, (p, _)| p.is_alive());
    }
}

/// An error unless `inv_scale` (the inverse of a loss scale) is finite and above 0.
fn check_inv_scale(inv_scale: f64) -> Result<()> {
    if inv_scale.is_finite() && inv_scale > 0.0 {
        Ok(())
    } else {
        Err(invalid(format!(
            "the inverse loss scale is {inv_scale}; it must be a finite number > 0 (a loss \
             scale that is finite and above 0)"
        )))
    }
}

fn with_weight_decay(g: Tensor, p: &Tensor, weight_decay: f64) -> Result<Tensor> {
    if weight_decay == 0.0 {
        return Ok(g);
    }
    add(&g, &scale(p, weight_decay)?)
}

fn scale(x: &Tensor, s: f64) -> Result<Tensor> {
    compute::unary(x, UnaryOp::MulScalar(s))
}

fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compute::binary(a, b, BinaryOp::Add)
}

fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compute::binary(a, b, BinaryOp::Sub)
}

fn invalid(msg: String) -> Error {
    Error::InvalidArgument {
        op: "optimizer step",
        msg,
    }
}

fn check_finite_non_negative(what: &str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(format!(
            "the {what} is {value}; it must be a finite number >= 0"
        )))
    }
}

fn check_unit_interval(what: &str, value: f64) -> Result<()> {
    if (0.0..1.0).contains(&value) {
        Ok(())
    } else {
        Err(invalid(format!("{what} is {value}; it must lie in [0, 1)")))
    }
}
