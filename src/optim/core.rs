//! What every optimizer here shares: the parameter groups, the per-parameter
//! state keyed by [`TensorId`], the `f32` master copies of `f16`/`bf16`
//! parameters, the step loop, and the state dict by parameter name.

use super::{Group, GroupOptions, check_finite_non_negative, invalid};
use crate::nn::StateDict;
use crate::{DType, Error, Result, Tensor, TensorId, WeakTensor, compute, no_grad};
use std::collections::{HashMap, HashSet};

/// One optimization algorithm: its hyperparameters (those not per group) and
/// its update of one parameter.
pub(crate) trait Algorithm: Clone {
    /// The optimizer's name, for messages.
    const NAME: &'static str;

    /// An error naming the hyperparameter that is out of range.
    fn validate(&self) -> Result<()>;

    /// One parameter's step: its new values (of `w`'s dtype, the master's for an
    /// `f16`/`bf16` parameter) and state, from `w` (the values the step
    /// updates), the gradient `g` (already unscaled, and in `f32` for a half
    /// parameter) and the state of the last step (`None` at the first).
    fn update(
        &self,
        group: &Group,
        w: &Tensor,
        g: Tensor,
        prev: Option<&ParamState>,
    ) -> Result<(Tensor, Option<ParamState>)>;

    /// The names of the buffers a parameter's state holds, in order.
    fn buffer_names(&self) -> Vec<&'static str>;

    /// Whether the state counts the parameter's steps.
    fn counts_steps(&self) -> bool;

    /// The hyperparameters that are not per group, by name (a flag as 0 or 1).
    fn options(&self) -> Vec<(&'static str, f64)>;

    /// These hyperparameters with every value `get` gives for their names.
    fn with_options(&self, get: &mut dyn FnMut(&'static str) -> Result<f64>) -> Result<Self>;
}

/// A flag stored as 0 or 1 (an error naming it otherwise).
pub(crate) fn flag(name: &str, value: f64) -> Result<bool> {
    match value {
        0.0 => Ok(false),
        1.0 => Ok(true),
        _ => Err(invalid(format!(
            "the option `{name}` is a flag stored as 0 or 1, not {value}"
        ))),
    }
}

/// The state an optimizer keeps for one parameter: its step count (where the
/// algorithm counts steps) and named buffers, all detached.
#[derive(Debug, Clone)]
pub(crate) struct ParamState {
    pub step: i64,
    pub bufs: Vec<(&'static str, Tensor)>,
}

impl ParamState {
    /// The buffer called `name` (every state of one algorithm has the same).
    pub fn get(&self, name: &str) -> Result<&Tensor> {
        self.bufs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t)
            .ok_or_else(|| {
                invalid(format!(
                    "the optimizer state has no `{name}` buffer (was it loaded for other \
                     options?)"
                ))
            })
    }
}

/// Groups, state and masters.
#[derive(Debug, Clone)]
pub(crate) struct Core {
    /// Group 0 holds the optimizer's own settings.
    pub groups: Vec<Group>,
    /// The group of every parameter not in group 0.
    members: HashMap<TensorId, (WeakTensor, usize)>,
    state: HashMap<TensorId, (WeakTensor, ParamState)>,
    masters: Masters,
}

impl Core {
    pub fn new(lr: f64, weight_decay: f64) -> Core {
        Core {
            groups: vec![Group { lr, weight_decay }],
            members: HashMap::new(),
            state: HashMap::new(),
            masters: Masters::default(),
        }
    }

    pub fn group_of(&self, p: &Tensor) -> usize {
        self.members.get(&p.id()).map_or(0, |(_, g)| *g)
    }

    pub fn add_group<'a>(
        &mut self,
        params: impl IntoIterator<Item = &'a Tensor>,
        options: GroupOptions,
    ) -> Result<usize> {
        let lr = options.lr.unwrap_or(self.groups[0].lr);
        let weight_decay = options.weight_decay.unwrap_or(self.groups[0].weight_decay);
        check_finite_non_negative("learning rate of the new group", lr)?;
        check_finite_non_negative("weight decay of the new group", weight_decay)?;
        let index = self.groups.len();
        let mut new = Vec::new();
        let mut seen = HashSet::new();
        for p in params {
            if !p.is_leaf() {
                return Err(invalid(format!(
                    "parameter {} (shape {}) is the output of a recorded op, not a leaf; an \
                     optimizer updates leaves (parameters made with `with_requires_grad(true)`)",
                    p.id(),
                    p.shape()
                )));
            }
            if let Some((weak, g)) = self.members.get(&p.id())
                && weak.is_alive()
            {
                return Err(invalid(format!(
                    "parameter {} (shape {}) is already in parameter group {g}; a parameter \
                     belongs to one group: leave it out of one of the `add_param_group` calls",
                    p.id(),
                    p.shape()
                )));
            }
            if seen.insert(p.id()) {
                new.push((p.id(), p.downgrade()));
            }
        }
        self.groups.push(Group { lr, weight_decay });
        for (id, weak) in new {
            self.members.insert(id, (weak, index));
        }
        Ok(index)
    }

    pub fn remove(&mut self, p: &Tensor) {
        self.state.remove(&p.id());
        self.masters.remove(p);
    }

    pub fn master(&self, p: &Tensor) -> Option<Tensor> {
        self.masters.get(p)
    }

    pub fn state_len(&self) -> usize {
        self.state.len()
    }

    fn retain_alive(&mut self) {
        self.state.retain(|_, (p, _)| p.is_alive());
        self.members.retain(|_, (p, _)| p.is_alive());
        self.masters.retain_alive();
    }

    /// One step of `alg` over `params` (see [`super::Optimizer::step_unscaled`]).
    pub fn step<A: Algorithm>(
        &mut self,
        alg: &A,
        params: &mut [&mut Tensor],
        inv_scale: f64,
    ) -> Result<()> {
        alg.validate()?;
        for (i, g) in self.groups.iter().enumerate() {
            check_finite_non_negative(&format!("learning rate of parameter group {i}"), g.lr)?;
            check_finite_non_negative(
                &format!("weight decay of parameter group {i}"),
                g.weight_decay,
            )?;
        }
        check_inv_scale(inv_scale)?;
        self.retain_alive();
        let mut seen = HashSet::new();
        no_grad(|| {
            for p in params.iter_mut() {
                if !seen.insert(p.id()) {
                    continue; // listed twice: updated once
                }
                let Some(g) = gradient_of(p, inv_scale)? else {
                    continue;
                };
                let group = self.groups[self.group_of(p)];
                let w = self.masters.working(p)?;
                let prev = self.state.get(&p.id()).map(|(_, s)| s);
                let (new, state) = alg.update(&group, &w, g, prev)?;
                drop(w); // no second handle of the parameter when it is written
                // Computed now, together (one pass when fused): deferred state
                // would hold the gradients and state it is computed from.
                let mut all = vec![&new];
                if let Some(s) = &state {
                    all.extend(s.bufs.iter().map(|(_, t)| t));
                }
                crate::fusion::realize_all(&all)?;
                self.masters.write(p, new)?;
                if let Some(s) = state {
                    self.state.insert(p.id(), (p.downgrade(), s));
                }
            }
            Ok(())
        })
    }

    /// The state dict: see [`super::Optimizer::state_dict`].
    pub fn state_dict<A: Algorithm>(
        &self,
        alg: &A,
        named: &[(String, Tensor)],
    ) -> Result<StateDict> {
        let mut out: StateDict = Vec::new();
        for (i, g) in self.groups.iter().enumerate() {
            out.push((format!("param_groups.{i}.lr"), Tensor::scalar(g.lr)));
            out.push((
                format!("param_groups.{i}.weight_decay"),
                Tensor::scalar(g.weight_decay),
            ));
        }
        for (name, value) in alg.options() {
            out.push((format!("options.{name}"), Tensor::scalar(value)));
        }
        let mut named_ids = HashSet::new();
        for (name, p) in named {
            named_ids.insert(p.id());
            out.push((
                format!("state.{name}.group"),
                Tensor::scalar(self.group_of(p) as i64),
            ));
            if let Some((_, s)) = self.state.get(&p.id()) {
                if alg.counts_steps() {
                    out.push((format!("state.{name}.step"), Tensor::scalar(s.step)));
                }
                for (b, t) in &s.bufs {
                    out.push((format!("state.{name}.{b}"), t.clone()));
                }
            }
            if let Some(m) = self.masters.get(p) {
                out.push((format!("state.{name}.master"), m));
            }
        }
        let mut unnamed: Vec<String> = Vec::new();
        let ids = self
            .state
            .iter()
            .map(|(id, (w, _))| (id, w))
            .chain(self.members.iter().map(|(id, (w, _))| (id, w)))
            .chain(self.masters.map.iter().map(|(id, (w, _))| (id, w)));
        for (id, weak) in ids {
            if weak.is_alive() && !named_ids.contains(id) {
                let what = format!("{id}");
                if !unnamed.contains(&what) {
                    unnamed.push(what);
                }
            }
        }
        if !unnamed.is_empty() {
            unnamed.sort();
            return Err(invalid(format!(
                "the {} optimizer holds state or a group for parameters {} that the names \
                 given do not list, so their state would be lost; pass every parameter it \
                 trains (`model.named_parameters()`)",
                A::NAME,
                unnamed.join(", ")
            )));
        }
        Ok(out)
    }

    /// Loads a state dict (see [`super::Optimizer::load_state_dict`]): the new
    /// core and hyperparameters, every check made first.
    pub fn load_state_dict<A: Algorithm>(
        &self,
        alg: &A,
        named: &[(String, Tensor)],
        state: &[(String, Tensor)],
    ) -> Result<(Core, A)> {
        let mut dict: HashMap<&str, &Tensor> = HashMap::new();
        for (k, t) in state {
            if dict.insert(k.as_str(), t).is_some() {
                return Err(load_error(format!("the state holds `{k}` twice")));
            }
        }
        let mut used: HashSet<&str> = HashSet::new();
        let mut problems: Vec<String> = Vec::new();
        let mut groups = Vec::new();
        while dict.contains_key(format!("param_groups.{}.lr", groups.len()).as_str()) {
            let i = groups.len();
            let lr = scalar_at::<A>(&dict, &mut used, &format!("param_groups.{i}.lr"))?;
            let weight_decay =
                scalar_at::<A>(&dict, &mut used, &format!("param_groups.{i}.weight_decay"))?;
            check_finite_non_negative(&format!("learning rate of parameter group {i}"), lr)
                .map_err(|e| load_error(e.to_string()))?;
            check_finite_non_negative(
                &format!("weight decay of parameter group {i}"),
                weight_decay,
            )
            .map_err(|e| load_error(e.to_string()))?;
            groups.push(Group { lr, weight_decay });
        }
        if groups.is_empty() {
            return Err(load_error(format!(
                "the state has no `param_groups.0.lr`: it is not a state dict of an optimizer \
                 (was it written by `{}::state_dict`, under another prefix?)",
                A::NAME
            )));
        }
        let new_alg = alg.with_options(&mut |name| {
            scalar_at::<A>(&dict, &mut used, &format!("options.{name}"))
        })?;
        new_alg.validate().map_err(|e| load_error(e.to_string()))?;

        let mut core = Core {
            groups,
            members: HashMap::new(),
            state: HashMap::new(),
            masters: Masters::default(),
        };
        let mut missing = Vec::new();
        let mut done = HashSet::new();
        for (name, p) in named {
            let key = format!("state.{name}.group");
            let Some((k, t)) = dict.get_key_value(key.as_str()) else {
                missing.push(name.clone());
                continue;
            };
            used.insert(k);
            if !done.insert(p.id()) {
                continue; // a parameter under a second name: loaded once
            }
            let group = scalar_of(&key, t)?;
            if group < 0.0 || group.fract() != 0.0 || group as usize >= core.groups.len() {
                problems.push(format!(
                    "`{key}` is {group}, but the state has {} parameter groups",
                    core.groups.len()
                ));
                continue;
            }
            if group != 0.0 {
                core.members.insert(p.id(), (p.downgrade(), group as usize));
            }
            let dtype = if p.dtype().is_half() {
                DType::F32
            } else {
                p.dtype()
            };
            let names = new_alg.buffer_names();
            let bufs: Vec<(&'static str, Option<Tensor>)> = names
                .iter()
                .map(|b| (*b, take(&dict, &mut used, &mut problems, name, p, dtype, b)))
                .collect();
            let step_key = format!("state.{name}.step");
            let step = match dict.get_key_value(step_key.as_str()) {
                Some((k, t)) if new_alg.counts_steps() => {
                    used.insert(k);
                    let s = scalar_of(&step_key, t)?;
                    if s < 1.0 || s.fract() != 0.0 || s > i64::MAX as f64 {
                        problems.push(format!("`{step_key}` is {s}, not a step count >= 1"));
                    }
                    Some(s as i64)
                }
                _ => None,
            };
            let present = bufs.iter().filter(|(_, t)| t.is_some()).count();
            let complete = present == names.len() && (step.is_some() || !new_alg.counts_steps());
            let has_any = present > 0 || step.is_some();
            if complete && !names.is_empty() {
                let bufs = bufs.into_iter().map(|(b, t)| (b, t.unwrap())).collect();
                core.state.insert(
                    p.id(),
                    (
                        p.downgrade(),
                        ParamState {
                            step: step.unwrap_or(0),
                            bufs,
                        },
                    ),
                );
            } else if has_any && !complete {
                let mut want: Vec<String> = names.iter().map(|b| format!("`{b}`")).collect();
                if new_alg.counts_steps() {
                    want.push("`step`".to_string());
                }
                problems.push(format!(
                    "the state of `{name}` is incomplete: it needs {} together (for the options \
                     it was saved with), or none of them",
                    want.join(", ")
                ));
            }
            let master_key = format!("state.{name}.master");
            if dict.contains_key(master_key.as_str()) {
                if p.dtype().is_half() {
                    if let Some(m) = take(&dict, &mut used, &mut problems, name, p, dtype, "master")
                    {
                        core.masters.map.insert(p.id(), (p.downgrade(), m));
                    }
                } else {
                    problems.push(format!(
                        "`{master_key}` is an f32 master copy, but parameter `{name}` is {} and \
                         is trained without one",
                        p.dtype()
                    ));
                    used.insert(dict.get_key_value(master_key.as_str()).unwrap().0);
                }
            }
        }
        let mut unknown: Vec<&str> = dict.keys().copied().filter(|k| !used.contains(k)).collect();
        unknown.sort();
        if !missing.is_empty() {
            problems.insert(
                0,
                format!("no state for parameters {missing:?} (no `state.<name>.group`)"),
            );
        }
        if !unknown.is_empty() {
            problems.push(format!(
                "unknown entries {unknown:?} (parameters the names given do not list, or \
                 state of another optimizer)"
            ));
        }
        if !problems.is_empty() {
            return Err(load_error(problems.join("; ")));
        }
        Ok((core, new_alg))
    }
}

/// The one number under `key`, marked used; an error when it is not there.
fn scalar_at<'a, A: Algorithm>(
    dict: &HashMap<&'a str, &'a Tensor>,
    used: &mut HashSet<&'a str>,
    key: &str,
) -> Result<f64> {
    let Some((k, t)) = dict.get_key_value(key) else {
        return Err(load_error(format!(
            "the state has no `{key}` (was it written by `{}::state_dict`?)",
            A::NAME
        )));
    };
    used.insert(k);
    scalar_of(key, t)
}

/// The buffer `state.{name}.{field}` of parameter `p`, marked used, converted to
/// `dtype` on `p`'s device; `None` when absent or wrong (then a problem says why).
fn take<'a>(
    dict: &HashMap<&'a str, &'a Tensor>,
    used: &mut HashSet<&'a str>,
    problems: &mut Vec<String>,
    name: &str,
    p: &Tensor,
    dtype: DType,
    field: &str,
) -> Option<Tensor> {
    let key = format!("state.{name}.{field}");
    let (k, t) = dict.get_key_value(key.as_str())?;
    used.insert(k);
    if t.shape() != p.shape() {
        problems.push(format!(
            "`{key}` has shape {} but parameter `{name}` has shape {}",
            t.shape(),
            p.shape()
        ));
        return None;
    }
    match compute::cast(&t.detach(), dtype)
        .and_then(|c| compute::to_device(&c, p.device()))
        .and_then(|c| compute::contiguous(&c))
    {
        Ok(c) => Some(c),
        Err(e) => {
            problems.push(format!("converting `{key}`: {e}"));
            None
        }
    }
}

fn load_error(msg: String) -> Error {
    Error::InvalidArgument {
        op: "optimizer load_state_dict",
        msg: format!("nothing was loaded: {msg}"),
    }
}

/// The value of a one-element tensor of the state, as `f64`.
pub(crate) fn scalar_of(key: &str, t: &Tensor) -> Result<f64> {
    if t.numel() != 1 {
        return Err(load_error(format!(
            "`{key}` has shape {}, but it holds one number (a tensor of shape [])",
            t.shape()
        )));
    }
    t.to_scalar::<f64>()
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
        super::scale(&g, inv_scale).map(Some)
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
