//! Models as trees of modules: [`Module`] (derived with `#[derive(Module)]`) names
//! every parameter and buffer by its dotted path (`blocks.0.attn.q.weight`), and
//! gives the whole tree's `parameters()`, `state_dict()`, strict
//! `load_state_dict()`, `save`/`load` through safetensors, `to_device`,
//! `to_dtype`, `train()`/`eval()`, `zero_grad()` and `num_parameters()`.

use crate::random::Rng;
use crate::{DType, Device, Error, Result, Shape, Tensor};
use std::path::Path;

pub use autograd_macros::Module;

mod attention;
mod clip;
mod conv;
mod layers;
mod linear;
mod norm;

pub use attention::{Activation, MhaMasks, MultiheadAttention, TransformerEncoderLayer};
pub use clip::{AsTensor, clip_grad_norm, clip_grad_norm_with, clip_grad_value};
pub use conv::{Conv1d, Conv2d, ConvTranspose2d};
pub use layers::{Dropout, Forward, GELU, ReLU, Sequential, SiLU, Sigmoid, Tanh};
pub use linear::{Embedding, Linear};
pub use norm::{BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm};

/// What a tensor of a module is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    /// Trained: `parameters()` lists it, the optimizer updates it.
    Parameter,
    /// State that is saved, loaded and moved with the model but not trained (a
    /// batch norm's running statistics).
    Buffer,
}

/// `prefix.name`, or `name` at the top.
pub fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// The tensors `state_dict` lists and `load_state_dict` writes, by dotted name.
pub type StateDict = Vec<(String, Tensor)>;

/// `state` with every name prefixed by `prefix` (as `"optimizer."`): to keep
/// several state dicts (a model's, its optimizer's, its schedule's) in one file.
pub fn add_prefix(prefix: &str, state: StateDict) -> StateDict {
    state
        .into_iter()
        .map(|(n, t)| (format!("{prefix}{n}"), t))
        .collect()
}

/// The entries of `state` whose names start with `prefix`, with it removed: the
/// inverse of [`add_prefix`] (handles of the same tensors).
pub fn strip_prefix(prefix: &str, state: &[(String, Tensor)]) -> StateDict {
    state
        .iter()
        .filter_map(|(n, t)| n.strip_prefix(prefix).map(|s| (s.to_string(), t.clone())))
        .collect()
}

/// What [`Module::load_state_dict`] found: the module's names the state lacked, the
/// state's names the module lacks, and the names whose shapes differ (the module's
/// shape, then the state's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The module's tensors the state did not hold (left as they were).
    pub missing: Vec<String>,
    /// The state's tensors the module has no place for (ignored).
    pub unexpected: Vec<String>,
    /// Names in both whose shapes differ: (name, the module's, the state's).
    pub mismatched: Vec<(String, Shape, Shape)>,
}

impl LoadReport {
    /// No name missing, unexpected or mis-shaped.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.unexpected.is_empty() && self.mismatched.is_empty()
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.missing.is_empty() {
            parts.push(format!("missing {:?}", self.missing));
        }
        if !self.unexpected.is_empty() {
            parts.push(format!("unexpected {:?}", self.unexpected));
        }
        for (name, mine, theirs) in &self.mismatched {
            parts.push(format!(
                "`{name}` is {mine} in the module but {theirs} in the state"
            ));
        }
        if parts.is_empty() {
            write!(f, "every name matched")
        } else {
            write!(f, "{}", parts.join("; "))
        }
    }
}

/// The walk over a module's tensors that [`Module`] is built on: implemented for
/// `Tensor` (one tensor, named by its path), `Vec`, arrays, `Option`, `Box` and
/// pairs of walkable things, the plain types that hold no tensors (numbers, `bool`,
/// `String`, `DType`, `Device`), and every `#[derive(Module)]` struct. Implement it
/// by hand (with an empty `impl Module for MyLayer {}`) for a layer whose walk the
/// derive cannot write.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a module: it has no parameters or buffers to visit",
    label = "a field of a `#[derive(Module)]` struct must be a tensor, a module, or a container of them",
    note = "mark the field `#[module(skip)]` if it holds no tensors, or derive `Module` for its type"
)]
pub trait Visit {
    /// Pushes every tensor under this value onto `out`, with its dotted name under
    /// `prefix` and its kind (`kind` is what the parent says this value's tensors
    /// are; a derived module passes each field's own kind on instead).
    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    );

    /// [`Visit::visit`] with mutable tensors: what `load_state_dict`, `to_device`
    /// and `to_dtype` write through.
    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    );

    /// Sets training mode here and in everything below (dropout drops, batch norm
    /// uses and updates batch statistics).
    fn set_training(&mut self, training: bool);

    /// Pushes every random generator under this value (a dropout's) onto `out`,
    /// with its dotted name: what [`Module::generator_states`] reads and
    /// [`Module::set_generator_states`] writes, so that a resumed run draws the
    /// masks it would have drawn. A derived module visits its `#[module(rng)]`
    /// fields and its submodules; the default has none.
    fn visit_rngs<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Rng)>) {
        let _ = (prefix, out);
    }
}

/// A model, a layer, or a part of one: a tree of tensors by name, with PyTorch's
/// `nn.Module` conveniences. Derive it (`#[derive(Module)]`, which also writes the
/// [`Visit`] walk over the fields in order).
pub trait Module: Visit {
    /// Training mode ([`Visit::set_training`]`(true)`), as PyTorch's `train()`.
    fn train(&mut self) {
        self.set_training(true);
    }

    /// Evaluation mode ([`Visit::set_training`]`(false)`), as PyTorch's `eval()`.
    fn eval(&mut self) {
        self.set_training(false);
    }

    /// Every tensor with its name and kind, in field order.
    fn named_tensors(&self) -> Vec<(String, TensorKind, &Tensor)> {
        let mut out = Vec::new();
        self.visit("", TensorKind::Parameter, &mut out);
        out
    }

    /// The parameters with their dotted names, in field order (handles sharing
    /// the module's storage: an optimizer given them updates the module).
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.named_tensors()
            .into_iter()
            .filter(|(_, k, _)| *k == TensorKind::Parameter)
            .map(|(n, _, t)| (n, t.clone()))
            .collect()
    }

    /// The parameters, in field order: what an optimizer takes.
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    /// The parameters as the module's own tensors, for an optimizer's step:
    /// `opt.step(&mut model.parameters_mut())`.
    fn parameters_mut(&mut self) -> Vec<&mut Tensor> {
        let mut out = Vec::new();
        self.visit_mut("", TensorKind::Parameter, &mut out);
        out.into_iter()
            .filter(|(_, k, _)| *k == TensorKind::Parameter)
            .map(|(_, _, t)| t)
            .collect()
    }

    /// The buffers with their dotted names.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.named_tensors()
            .into_iter()
            .filter(|(_, k, _)| *k == TensorKind::Buffer)
            .map(|(n, _, t)| (n, t.clone()))
            .collect()
    }

    /// Every parameter and buffer by name (detached handles): what `save` writes.
    fn state_dict(&self) -> StateDict {
        self.named_tensors()
            .into_iter()
            .map(|(n, _, t)| (n, t.detach()))
            .collect()
    }

    /// The number of parameter elements.
    fn num_parameters(&self) -> usize {
        self.named_tensors()
            .into_iter()
            .filter(|(_, k, _)| *k == TensorKind::Parameter)
            .map(|(_, _, t)| t.numel())
            .sum()
    }

    /// The state of every random generator in the tree (a dropout's), by dotted
    /// name: with the parameters, buffers and the optimizer's state, what a
    /// checkpoint needs for a resumed run to draw the same masks.
    fn generator_states(&mut self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        self.visit_rngs("", &mut out);
        out.into_iter().map(|(n, r)| (n, r.state())).collect()
    }

    /// Sets the generators named in `states` (from [`Module::generator_states`])
    /// to their saved states. Every generator of the tree must be named, and every
    /// name must be one of them: otherwise an error, and no generator has changed.
    fn set_generator_states(&mut self, states: &[(String, u64)]) -> Result<()> {
        let mut rngs = Vec::new();
        self.visit_rngs("", &mut rngs);
        let missing: Vec<&str> = rngs
            .iter()
            .filter(|(n, _)| !states.iter().any(|(s, _)| s == n))
            .map(|(n, _)| n.as_str())
            .collect();
        let unexpected: Vec<&str> = states
            .iter()
            .filter(|(s, _)| !rngs.iter().any(|(n, _)| n == s))
            .map(|(s, _)| s.as_str())
            .collect();
        if !missing.is_empty() || !unexpected.is_empty() {
            return Err(Error::InvalidArgument {
                op: "set_generator_states",
                msg: format!(
                    "no generator was set: missing {missing:?}, unexpected {unexpected:?} (the \
                     names come from `generator_states()` of a module of the same structure)"
                ),
            });
        }
        for (name, rng) in rngs {
            let (_, state) = states
                .iter()
                .find(|(s, _)| *s == name)
                .expect("checked above");
            *rng = Rng::new(*state);
        }
        Ok(())
    }

    /// Clears every parameter's gradient.
    fn zero_grad(&self) {
        for (_, kind, t) in self.named_tensors() {
            if kind == TensorKind::Parameter {
                t.zero_grad();
            }
        }
    }

    /// Every tensor moved to `device` (a parameter stays a leaf that requires grad
    /// where it did; gradients are dropped). Every copy is made before any tensor
    /// is replaced: on an error the module is unchanged. Handles taken before
    /// (an optimizer's) still point at the old tensors: build the optimizer after.
    fn to_device(&mut self, device: Device) -> Result<()> {
        replace_all(self, |t| crate::compute::to_device(&t.detach(), device))
    }

    /// Every floating-point tensor converted to the floating `dtype` (integer and
    /// `bool` buffers, such as a batch count, are kept), as `to_device`.
    fn to_dtype(&mut self, dtype: DType) -> Result<()> {
        if !dtype.is_float() {
            return Err(Error::InvalidArgument {
                op: "to_dtype",
                msg: format!(
                    "a module converts its floating-point tensors to a floating dtype; {dtype} \
                     is not one"
                ),
            });
        }
        replace_all(self, |t| {
            if t.dtype().is_float() {
                crate::compute::cast(&t.detach(), dtype)
            } else {
                Ok(t.detach())
            }
        })
    }

    /// Writes `state`'s tensors into this module by name, each converted to its
    /// target's dtype and device. `strict`: every name of the module must be in
    /// `state` and every name of `state` in the module (PyTorch's default);
    /// otherwise the missing and unexpected names are only reported. A shape that
    /// differs is an error either way. Every check and conversion is made before
    /// any tensor is written: on an error nothing has changed, and the error lists
    /// every problem.
    fn load_state_dict(&mut self, state: &[(String, Tensor)], strict: bool) -> Result<LoadReport> {
        let mut targets = Vec::new();
        self.visit_mut("", TensorKind::Parameter, &mut targets);
        let mut report = LoadReport::default();
        let mut values = Vec::with_capacity(targets.len());
        for (name, _, target) in &targets {
            match state.iter().find(|(n, _)| n == name) {
                None => {
                    report.missing.push(name.clone());
                    values.push(None);
                }
                Some((_, t)) if t.shape() != target.shape() => {
                    report.mismatched.push((
                        name.clone(),
                        target.shape().clone(),
                        t.shape().clone(),
                    ));
                    values.push(None);
                }
                Some((_, t)) => values.push(Some(t)),
            }
        }
        for (name, _) in state {
            if !targets.iter().any(|(n, _, _)| n == name) {
                report.unexpected.push(name.clone());
            }
        }
        let refused = !report.mismatched.is_empty()
            || (strict && !(report.missing.is_empty() && report.unexpected.is_empty()));
        if refused {
            return Err(Error::InvalidArgument {
                op: "load_state_dict",
                msg: format!(
                    "nothing was loaded: {report}{}",
                    if strict && report.mismatched.is_empty() {
                        " (load with strict = false to take the names that match)"
                    } else {
                        ""
                    }
                ),
            });
        }
        // Every value converted to its target's dtype and device first.
        let mut converted = Vec::with_capacity(values.len());
        for ((name, _, target), value) in targets.iter().zip(values) {
            converted.push(match value {
                None => None,
                Some(v) => {
                    let c = crate::compute::cast(&v.detach(), target.dtype())
                        .and_then(|c| crate::compute::to_device(&c, target.device()))
                        .map_err(|e| Error::InvalidArgument {
                            op: "load_state_dict",
                            msg: format!("nothing was loaded: converting `{name}`: {e}"),
                        })?;
                    Some(c)
                }
            });
        }
        for ((_, _, target), value) in targets.into_iter().zip(converted) {
            if let Some(v) = value {
                target.set_data(&v)?;
            }
        }
        Ok(report)
    }

    /// The state dict written to a safetensors file (`crate::save`).
    fn save(&self, path: impl AsRef<Path>) -> Result<()>
    where
        Self: Sized,
    {
        let state = self.state_dict();
        let named: Vec<(&str, &Tensor)> = state.iter().map(|(n, t)| (n.as_str(), t)).collect();
        crate::save(path, &named)
    }

    /// A safetensors file (this library's `save`, or PyTorch's
    /// `safetensors.torch.save_file(model.state_dict(), path)`) loaded by name,
    /// strictly: [`Module::load_state_dict`]`(.., true)`.
    fn load(&mut self, path: impl AsRef<Path>) -> Result<LoadReport>
    where
        Self: Sized,
    {
        let state = crate::load(path)?;
        self.load_state_dict(&state, true)
    }
}

/// Every tensor of `module` replaced by `f` of it (a leaf that required grad still
/// does), all computed before any is written.
fn replace_all<M: Visit + ?Sized>(
    module: &mut M,
    f: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    let mut targets = Vec::new();
    module.visit_mut("", TensorKind::Parameter, &mut targets);
    let mut new = Vec::with_capacity(targets.len());
    for (_, _, t) in &targets {
        new.push(f(t)?.with_requires_grad(t.requires_grad()));
    }
    for ((_, _, t), n) in targets.into_iter().zip(new) {
        *t = n;
    }
    Ok(())
}

impl Visit for Tensor {
    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        out.push((prefix.to_string(), kind, self));
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        out.push((prefix.to_string(), kind, self));
    }

    fn set_training(&mut self, _training: bool) {}
}

impl<M: Visit> Visit for Vec<M> {
    fn visit_rngs<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Rng)>) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_rngs(&join(prefix, &i.to_string()), out);
        }
    }

    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        for (i, m) in self.iter().enumerate() {
            m.visit(&join(prefix, &i.to_string()), kind, out);
        }
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_mut(&join(prefix, &i.to_string()), kind, out);
        }
    }

    fn set_training(&mut self, training: bool) {
        for m in self {
            m.set_training(training);
        }
    }
}

impl<M: Visit, const N: usize> Visit for [M; N] {
    fn visit_rngs<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Rng)>) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_rngs(&join(prefix, &i.to_string()), out);
        }
    }

    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        for (i, m) in self.iter().enumerate() {
            m.visit(&join(prefix, &i.to_string()), kind, out);
        }
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        for (i, m) in self.iter_mut().enumerate() {
            m.visit_mut(&join(prefix, &i.to_string()), kind, out);
        }
    }

    fn set_training(&mut self, training: bool) {
        for m in self {
            m.set_training(training);
        }
    }
}

impl<M: Visit> Visit for Option<M> {
    fn visit_rngs<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Rng)>) {
        if let Some(m) = self {
            m.visit_rngs(prefix, out);
        }
    }

    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        if let Some(m) = self {
            m.visit(prefix, kind, out);
        }
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        if let Some(m) = self {
            m.visit_mut(prefix, kind, out);
        }
    }

    fn set_training(&mut self, training: bool) {
        if let Some(m) = self {
            m.set_training(training);
        }
    }
}

impl<M: Visit + ?Sized> Visit for Box<M> {
    fn visit_rngs<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Rng)>) {
        (**self).visit_rngs(prefix, out);
    }

    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        (**self).visit(prefix, kind, out);
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        (**self).visit_mut(prefix, kind, out);
    }

    fn set_training(&mut self, training: bool) {
        (**self).set_training(training);
    }
}

/// Types that hold no tensors (a layer's configuration): nothing to visit, so that a derived module's plain fields need no attribute.
macro_rules! no_tensors {
    ($($t:ty),* $(,)?) => {$(
        impl Visit for $t {
            fn visit<'a>(&'a self, _: &str, _: TensorKind, _: &mut Vec<(String, TensorKind, &'a Tensor)>) {}
            fn visit_mut<'a>(
                &'a mut self,
                _: &str,
                _: TensorKind,
                _: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
            ) {
            }
            fn set_training(&mut self, _: bool) {}
        }
    )*};
}
pub(crate) use no_tensors;

no_tensors!(
    bool, u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, String, DType, Device
);

impl<A: Visit, B: Visit> Visit for (A, B) {
    fn visit_rngs<'a>(&'a mut self, prefix: &str, out: &mut Vec<(String, &'a mut Rng)>) {
        self.0.visit_rngs(&join(prefix, "0"), out);
        self.1.visit_rngs(&join(prefix, "1"), out);
    }

    fn visit<'a>(
        &'a self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a Tensor)>,
    ) {
        self.0.visit(&join(prefix, "0"), kind, out);
        self.1.visit(&join(prefix, "1"), kind, out);
    }

    fn visit_mut<'a>(
        &'a mut self,
        prefix: &str,
        kind: TensorKind,
        out: &mut Vec<(String, TensorKind, &'a mut Tensor)>,
    ) {
        self.0.visit_mut(&join(prefix, "0"), kind, out);
        self.1.visit_mut(&join(prefix, "1"), kind, out);
    }

    fn set_training(&mut self, training: bool) {
        self.0.set_training(training);
        self.1.set_training(training);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The derive works inside this crate too (`extern crate self as autograd`).
    #[derive(Module)]
    struct Inner {
        w: Tensor,
        #[module(buffer)]
        n: Tensor,
    }

    #[test]
    fn the_derive_names_fields_inside_the_facade() -> Result<()> {
        let m = Inner {
            w: Tensor::zeros([2], DType::F32)?,
            n: Tensor::zeros([], DType::I64)?,
        };
        let names: Vec<String> = m.state_dict().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["w", "n"]);
        assert_eq!(m.num_parameters(), 2);
        Ok(())
    }
}
