//! Derivatives of whole functions, as PyTorch's `torch.autograd.functional` (and
//! JAX's `vjp`, `jvp`, `jacobian`, `hessian`): each helper takes a function of some
//! tensors, `Fn(&[Tensor]) -> Result<O>` where `O` is a [`Tensor`] or a
//! `Vec<Tensor>` ([`FunctionOutput`]), and the point to differentiate it at.
//!
//! The function is called on fresh leaves holding the inputs' values (recording is
//! on, even inside [`no_grad`]), so the inputs' own graphs and
//! `.grad()` are left alone. With `create_graph = false` the results are constants;
//! with `create_graph = true` they are recorded, as functions of the inputs (an input
//! that requires grad is passed through a recorded identity, so gradients flow back
//! to it), and can be differentiated again.
//!
//! An output that does not depend on an input gets zeros there (PyTorch's
//! `strict=False`).
//!
//! | helper | computes | how |
//! |---|---|---|
//! | [`vjp`] | `vᵀ J` per input | one backward pass seeded with `v` |
//! | [`jvp`] | `J v` per output | two backward passes (the double-vjp trick: `J v = ∂(uᵀJ)v/∂u`) |
//! | [`jacobian`] | `J`, one block per (output, input) | one backward pass per output element |
//! | [`hessian`] | `∇²f` of a scalar `f`, one block per pair of inputs | the Jacobian of the recorded gradient |
//! | [`hvp`] | `H v` of a scalar `f` | two backward passes |
//!
//! ```
//! use autograd::prelude::*;
//! use autograd::functional;
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! // f(x) = Σ x³: gradient 3x², Hessian diag(6x).
//! let f = |xs: &[Tensor]| xs[0].pow_scalar(3.0)?.sum_all();
//! let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?;
//! let h = functional::hessian(f, &[x.clone()], false)?;
//! assert_eq!(h[0][0].to_vec::<f64>()?, [6.0, 0.0, 0.0, 12.0]);
//! let v = Tensor::from_slice(&[1.0f64, -1.0], [2])?;
//! let (y, hv) = functional::hvp(f, &[x], &[v], false)?;
//! assert_eq!((y.to_scalar::<f64>()?, hv[0].to_vec::<f64>()?), (9.0, vec![6.0, -12.0]));
//! # Ok(())
//! # }
//! ```

use crate::{BackwardOptions, DType, Device, Error, Result, Shape, Tensor, enable_grad, no_grad};
use autograd_core::grad_many;

/// What a differentiated function returns: one tensor, or several.
pub trait FunctionOutput: Sized {
    /// The outputs, in order.
    fn into_tensors(self) -> Vec<Tensor>;
    /// Back from the outputs (as many as [`FunctionOutput::into_tensors`] gave).
    fn from_tensors(tensors: Vec<Tensor>) -> Self;
}

impl FunctionOutput for Tensor {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self]
    }
    fn from_tensors(mut tensors: Vec<Tensor>) -> Self {
        tensors.swap_remove(0)
    }
}

impl FunctionOutput for Vec<Tensor> {
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Self {
        tensors
    }
}

fn invalid(op: &'static str, msg: String) -> Error {
    Error::InvalidArgument { op, msg }
}

/// The inputs as the function sees them: fresh leaves, or with `create_graph` a
/// recorded identity of an input that requires grad (so gradients reach it).
fn prepare(op: &'static str, inputs: &[Tensor], create_graph: bool) -> Result<Vec<Tensor>> {
    if inputs.is_empty() {
        return Err(invalid(
            op,
            "no inputs; pass the tensors to differentiate with respect to".into(),
        ));
    }
    enable_grad(|| {
        inputs
            .iter()
            .map(|x| {
                if create_graph && x.requires_grad() {
                    crate::ops::reshape(x, x.shape().clone())
                } else {
                    Ok(x.detach().with_requires_grad(true))
                }
            })
            .collect()
    })
}

/// A result as the caller gets it: a constant unless `create_graph`.
fn finish(t: Tensor, create_graph: bool) -> Tensor {
    if create_graph { t } else { t.detach() }
}

/// `v` checked against `like` (one tensor each, of the same shape, dtype, device).
fn check_vectors(op: &'static str, what: &str, v: &[Tensor], like: &[Tensor]) -> Result<()> {
    if v.len() != like.len() {
        return Err(invalid(
            op,
            format!(
                "{} tensors in v for {} {what}s; pass one per {what}",
                v.len(),
                like.len()
            ),
        ));
    }
    for (i, (v, t)) in v.iter().zip(like).enumerate() {
        if v.shape() != t.shape() || v.dtype() != t.dtype() || v.device() != t.device() {
            return Err(invalid(
                op,
                format!(
                    "v[{i}] has shape {} ({}, {}) but {what} {i} has shape {} ({}, {}); pass v \
                     of the {what}'s shape, dtype and device",
                    v.shape(),
                    v.dtype(),
                    v.device(),
                    t.shape(),
                    t.dtype(),
                    t.device()
                ),
            ));
        }
    }
    Ok(())
}

/// `Σᵢ seedsᵢ · ∂outputsᵢ/∂inputs`, zeros for an input nothing reaches. Outputs that
/// do not require grad contribute nothing.
fn pullback(
    outputs: &[Tensor],
    seeds: &[Tensor],
    inputs: &[Tensor],
    create_graph: bool,
) -> Result<Vec<Tensor>> {
    let (roots, seeds): (Vec<&Tensor>, Vec<Option<Tensor>>) = outputs
        .iter()
        .zip(seeds)
        .filter(|(o, _)| o.requires_grad())
        .map(|(o, s)| (o, Some(s.clone())))
        .unzip();
    let grads = if roots.is_empty() {
        vec![None; inputs.len()]
    } else {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let opts = BackwardOptions::default()
            .retain_graph(true)
            .create_graph(create_graph)
            .allow_unused(true);
        grad_many(&roots, &seeds, &refs, opts)?
    };
    grads
        .into_iter()
        .zip(inputs)
        .map(|(g, x)| match g {
            Some(g) => Ok(finish(g, create_graph)),
            None => x.zeros_like(),
        })
        .collect()
}

/// The vector-Jacobian product `vᵀ J` of `f` at `inputs`, as PyTorch's
/// `torch.autograd.functional.vjp`: returns `f(inputs)` and, per input, `Σᵢ vᵢ ·
/// ∂fᵢ/∂input` (of the input's shape).
///
/// `v` holds one tensor per output, of its shape; it may be empty when every output
/// has one element (then 1 each).
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?;
/// let v = Tensor::from_slice(&[1.0f64, 10.0], [2])?;
/// let (y, g) = autograd::functional::vjp(|xs| &xs[0] * &xs[0], &[x], &[v], false)?;
/// assert_eq!(y.to_vec::<f64>()?, [1.0, 4.0]);
/// assert_eq!(g[0].to_vec::<f64>()?, [2.0, 40.0]); // v ⊙ 2x
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] when there are no inputs, or `v` does not match the
/// outputs; whatever `f` returns.
pub fn vjp<F, O>(
    f: F,
    inputs: &[Tensor],
    v: &[Tensor],
    create_graph: bool,
) -> Result<(O, Vec<Tensor>)>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: FunctionOutput,
{
    let xs = prepare("vjp", inputs, create_graph)?;
    let outputs = enable_grad(|| f(&xs))?.into_tensors();
    let seeds = if v.is_empty() && outputs.iter().all(|o| o.numel() == 1) {
        outputs
            .iter()
            .map(Tensor::ones_like)
            .collect::<Result<Vec<_>>>()?
    } else {
        check_vectors("vjp", "output", v, &outputs)?;
        v.to_vec()
    };
    let grads = pullback(&outputs, &seeds, &xs, create_graph)?;
    let outputs = outputs
        .into_iter()
        .map(|o| finish(o, create_graph))
        .collect();
    Ok((O::from_tensors(outputs), grads))
}

/// The Jacobian-vector product `J v` of `f` at `inputs`, as PyTorch's
/// `torch.autograd.functional.jvp`: returns `f(inputs)` and, per output, `Σⱼ
/// ∂output/∂inputⱼ · vⱼ` (of the output's shape).
///
/// `v` holds one tensor per input, of its shape. Computed in reverse mode with the
/// double-vjp trick: `g(u) = uᵀJ` is recorded (linear in a dummy `u`), and `J v` is
/// its vector-Jacobian product with `v` with respect to `u`, so every op on the way
/// must be twice differentiable (an op whose backward is not recorded is
/// [`Error::NotDifferentiable`]).
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?;
/// let v = Tensor::from_slice(&[1.0f64, 10.0], [2])?;
/// let (_, jv) = autograd::functional::jvp(|xs| &xs[0] * &xs[0], &[x], &[v], false)?;
/// assert_eq!(jv.to_vec::<f64>()?, [2.0, 40.0]); // 2x ⊙ v
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] when there are no inputs, or `v` does not match them;
/// whatever `f` returns.
pub fn jvp<F, O>(f: F, inputs: &[Tensor], v: &[Tensor], create_graph: bool) -> Result<(O, O)>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: FunctionOutput,
{
    check_vectors("jvp", "input", v, inputs)?;
    let xs = prepare("jvp", inputs, create_graph)?;
    let outputs = enable_grad(|| f(&xs))?.into_tensors();
    // g = uᵀ J, recorded, for dummy u (zeros: the values do not matter, g is linear).
    let dummies = outputs
        .iter()
        .map(|o| Ok(o.zeros_like()?.with_requires_grad(true)))
        .collect::<Result<Vec<_>>>()?;
    let g = pullback(&outputs, &dummies, &xs, true)?;
    let jv = pullback(&g, v, &dummies, create_graph)?;
    let outputs = outputs
        .into_iter()
        .map(|o| finish(o, create_graph))
        .collect();
    Ok((O::from_tensors(outputs), O::from_tensors(jv)))
}

/// A one-hot tensor of `shape`, dtype and device: 1 at row-major position `k`.
fn one_hot(shape: &Shape, k: usize, dtype: DType, device: Device) -> Result<Tensor> {
    let n = shape.numel();
    let t = autograd_core::with_dtype!(dtype, T => {
        let mut v = vec![<T as autograd_core::HostElement>::from_f64(0.0); n];
        v[k] = <T as autograd_core::HostElement>::from_f64(1.0);
        Tensor::from_vec(v, shape.clone())?
    });
    if device == Device::Cpu {
        Ok(t)
    } else {
        crate::ops::to_device(&t, device)
    }
}

/// `shape` of `a` followed by that of `b`.
fn joined(a: &Shape, b: &Shape) -> Shape {
    Shape::from(
        a.dims()
            .iter()
            .chain(b.dims())
            .copied()
            .collect::<Vec<usize>>(),
    )
}

/// The Jacobian of `f` at `inputs`, as PyTorch's `torch.autograd.functional.jacobian`
/// (and JAX's `jacrev`): `J[i][j]` is `∂outputᵢ/∂inputⱼ`, of shape `outputᵢ.shape ++
/// inputⱼ.shape`, element `[a.., b..]` being `∂outputᵢ[a..]/∂inputⱼ[b..]`.
///
/// One backward pass per output element, each giving one row of every block.
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?;
/// let j = autograd::functional::jacobian(|xs| &xs[0] * &xs[0], &[x], false)?;
/// assert_eq!(j[0][0].dims(), [2, 2]);
/// assert_eq!(j[0][0].to_vec::<f64>()?, [2.0, 0.0, 0.0, 4.0]); // diag(2x)
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] when there are no inputs; whatever `f` returns.
pub fn jacobian<F, O>(f: F, inputs: &[Tensor], create_graph: bool) -> Result<Vec<Vec<Tensor>>>
where
    F: Fn(&[Tensor]) -> Result<O>,
    O: FunctionOutput,
{
    let xs = prepare("jacobian", inputs, create_graph)?;
    let outputs = enable_grad(|| f(&xs))?.into_tensors();
    outputs
        .iter()
        .map(|out| {
            let m = out.numel();
            // rows[j][k]: row k of block (i, j), flattened to [1, numel(x_j)].
            let mut rows: Vec<Vec<Tensor>> = vec![Vec::with_capacity(m); xs.len()];
            for k in 0..m {
                let seed = one_hot(out.shape(), k, out.dtype(), out.device())?;
                let grads = pullback(std::slice::from_ref(out), &[seed], &xs, create_graph)?;
                for (j, g) in grads.into_iter().enumerate() {
                    rows[j].push(crate::ops::reshape(&g, Shape::from([1, g.numel()]))?);
                }
            }
            rows.into_iter()
                .zip(&xs)
                .map(|(rows, x)| {
                    let shape = joined(out.shape(), x.shape());
                    if rows.is_empty() || x.numel() == 0 {
                        return x.full_like_shape(shape, 0.0);
                    }
                    let refs: Vec<&Tensor> = rows.iter().collect();
                    let stack = |refs: &[&Tensor]| {
                        crate::ops::reshape(&crate::ops::concat_all(refs, 0)?, shape.clone())
                    };
                    if create_graph {
                        stack(&refs)
                    } else {
                        no_grad(|| stack(&refs))
                    }
                })
                .collect()
        })
        .collect()
}

/// The gradient of a scalar `f`, recorded, zeros for inputs it does not reach.
fn recorded_gradient<F>(op: &'static str, f: &F, xs: &[Tensor]) -> Result<(Tensor, Vec<Tensor>)>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    let y = enable_grad(|| f(xs))?;
    if y.numel() != 1 {
        return Err(invalid(
            op,
            format!(
                "the function returned shape {}; it must return one element (a scalar loss)",
                y.shape()
            ),
        ));
    }
    let one = y.ones_like()?;
    let g = pullback(std::slice::from_ref(&y), &[one], xs, true)?;
    Ok((y, g))
}

/// The Hessian of a scalar `f` at `inputs`, as PyTorch's
/// `torch.autograd.functional.hessian`: `H[i][j]` is `∂²f/∂inputᵢ∂inputⱼ`, of shape
/// `inputᵢ.shape ++ inputⱼ.shape`. The Jacobian of the recorded gradient: every op
/// on the way must be twice differentiable.
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let (x, y) = (Tensor::scalar(2.0f64), Tensor::scalar(3.0f64));
/// // f = x² y: H = [[2y, 2x], [2x, 0]]
/// let h = autograd::functional::hessian(|v| &(&v[0] * &v[0])? * &v[1], &[x, y], false)?;
/// assert_eq!(h[0][0].to_scalar::<f64>()?, 6.0);
/// assert_eq!(h[0][1].to_scalar::<f64>()?, 4.0);
/// assert_eq!(h[1][1].to_scalar::<f64>()?, 0.0);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::InvalidArgument`] when there are no inputs or `f` does not return one
/// element; [`Error::NotDifferentiable`] for an op on the way whose backward is not
/// recorded; whatever `f` returns.
pub fn hessian<F>(f: F, inputs: &[Tensor], create_graph: bool) -> Result<Vec<Vec<Tensor>>>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    jacobian(
        |xs| Ok(recorded_gradient("hessian", &f, xs)?.1),
        inputs,
        create_graph,
    )
}

/// The Hessian-vector product `H v` of a scalar `f` at `inputs`, as PyTorch's
/// `torch.autograd.functional.hvp`: returns `f(inputs)` and, per input,
/// `Σⱼ ∂²f/∂input∂inputⱼ · vⱼ` (of the input's shape), from two backward passes and
/// without forming `H`. (Computed as `vᵀH`, which is `H v` since the Hessian of a
/// twice continuously differentiable function is symmetric.)
///
/// # Errors
///
/// [`Error::InvalidArgument`] when there are no inputs, `v` does not match them or
/// `f` does not return one element; [`Error::NotDifferentiable`] for an op whose
/// backward is not recorded; whatever `f` returns.
pub fn hvp<F>(
    f: F,
    inputs: &[Tensor],
    v: &[Tensor],
    create_graph: bool,
) -> Result<(Tensor, Vec<Tensor>)>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    check_vectors("hvp", "input", v, inputs)?;
    let xs = prepare("hvp", inputs, create_graph)?;
    let (y, g) = recorded_gradient("hvp", &f, &xs)?;
    let hv = pullback(&g, v, &xs, create_graph)?;
    Ok((finish(y, create_graph), hv))
}
