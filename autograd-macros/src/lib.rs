//! The `#[differentiable]` attribute macro: define an op once, forward and backward
//! side by side, and get its registration, saved-tensor flags and typed function
//! generated. Use it through the `autograd` crate, which re-exports it.
//!
//! Stages, one per file, as in thiserror's implementation:
//!
//! - `attr`: the attribute's arguments (`name = "..."`, `crate = path`, `method`).
//! - `ast`: the op module as a typed tree whose nodes borrow their syn nodes, so that
//!   errors point at the user's tokens: `Op`, its `Params` struct, `Forward` with
//!   its `Input`s (a function of tensors, or, `#[elementwise]`, a scalar function:
//!   its `FnKind`), `Backward` with what it `Declared` (and the `Role` of each
//!   name), `CheckCases`, and the other items.
//! - `valid`: semantic checks, once per op, one `validate` per node; every error on
//!   the user's tokens, all reported together. An op that passes is a `Valid` tree,
//!   of either kind of forward; a scalar function's body is parsed there into the
//!   `ir` tree, which checks each construct once.
//! - The dispatcher (`differentiable_tokens`, below) picks the expansion by the kind
//!   of forward, and `util` puts the op's module around the items it returns (the
//!   op struct, typed function and method, which both kinds share):
//!   - `expand`: a tensor forward's items, read off the `Valid` tree;
//!   - `elementwise`: a scalar forward's kernels, printed from its `ir` tree in Rust
//!     generic over `Real` (`elementwise::rust`) and in CUDA C++
//!     (`elementwise::cuda`), its generated backward and entries.
//! - `fallback`: on error, the errors with the user's items and a stand-in function,
//!   so that nothing else breaks.
//! - `suggest`: the did-you-mean names of the messages.

#![warn(missing_docs)]

mod ast;
mod attr;
mod elementwise;
mod expand;
mod fallback;
mod ir;
mod module;
mod suggest;
#[cfg(test)]
mod tests;
mod util;
mod valid;

use ast::Op;
use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use valid::Kind;

/// `#[derive(Module)]` on a struct: its parameters, buffers and submodules, by
/// dotted name (`blocks.0.attn.q.weight`), for `autograd::nn::Module`'s
/// `named_parameters`, `state_dict`, `load_state_dict`, `to_device`, `train`/`eval`
/// and the rest.
///
/// Every field is visited as a module: a `Tensor` is a parameter; a field whose type
/// derives or implements `Module` visits its own fields under the field's name;
/// `Vec`, `Option`, arrays and `Box` of modules pass through (a `Vec`'s entries are
/// named `0`, `1`, ..); numbers, `bool` and `String` hold no tensors. A field's
/// `#[module(..)]` changes that: `buffer` (its tensors are buffers: saved, loaded
/// and moved, but not parameters), `skip` (not visited: a type that is not a
/// module), `training` (a `bool` that `train()` and `eval()` set), `rng` (an
/// `autograd::random::Rng`, such as a dropout's, whose state
/// `generator_states()` reads and `set_generator_states()` restores). The
/// struct's `#[module(crate = path)]` says where the generated code finds
/// `autograd`.
///
/// ```
/// use autograd::nn::Module;
/// use autograd::{DType, Tensor};
///
/// #[derive(Module)]
/// struct Affine {
///     weight: Tensor,
///     bias: Option<Tensor>,
///     #[module(buffer)]
///     calls: Tensor,
///     #[module(skip)]
///     label: std::path::PathBuf,
/// }
///
/// #[derive(Module)]
/// struct Net {
///     layers: Vec<Affine>,
///     #[module(training)]
///     training: bool,
/// }
///
/// # fn main() -> autograd::Result<()> {
/// let affine = || -> autograd::Result<Affine> {
///     Ok(Affine {
///         weight: Tensor::ones([2, 2], DType::F32)?.with_requires_grad(true),
///         bias: None,
///         calls: Tensor::zeros([], DType::I64)?,
///         label: "affine".into(),
///     })
/// };
/// let mut net = Net { layers: vec![affine()?, affine()?], training: true };
/// let names: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["layers.0.weight", "layers.1.weight"]);
/// assert_eq!(net.state_dict().len(), 4); // the buffers too
/// net.eval();
/// assert!(!net.training);
/// # Ok(())
/// # }
/// ```
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(item: TokenStream) -> TokenStream {
    module::derive(item.into()).into()
}

/// Defines a differentiable op from an inline module.
///
/// ```
/// use autograd::prelude::*;
///
/// /// `x * w`, summed along `axis`: two tensor inputs and one parameter.
/// #[differentiable]
/// mod weighted_sum {
///     use autograd::prelude::*;
///
///     /// The op's non-tensor parameters: trailing arguments of `weighted_sum(..)`.
///     pub struct WeightedSum {
///         pub axis: isize,
///     }
///
///     pub fn forward(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
///         (x * w)?.sum(self.axis, true)
///     }
///
///     /// Declares what it reads, by name: the graph keeps `x` and `w` and nothing else.
///     pub fn backward(
///         grad: &Tensor,
///         x: &Tensor,
///         w: &Tensor,
///         needs: [bool; 2],
///     ) -> Result<(Option<Tensor>, Option<Tensor>)> {
///         Ok((grad_if(needs[0], || grad * w)?, grad_if(needs[1], || grad * x)?))
///     }
/// }
///
/// # fn main() -> Result<()> {
/// let registry = autograd::init()?;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2])?.with_requires_grad(true);
/// let w = Tensor::from_vec(vec![0.5f64, -1.0], [2])?;
/// let y = weighted_sum(&x, &w, -1)?;
/// assert_eq!(y.to_vec::<f64>()?, vec![-1.5, -2.5]);
/// y.sum_all()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![0.5, -1.0, 0.5, -1.0]);
/// assert_eq!(registry.get("weighted_sum")?.saved_names(), vec!["x", "w"]);
/// # Ok(())
/// # }
/// ```
///
/// # The module
///
/// - `fn forward(x: &Tensor, ..) -> Result<Tensor>`: the computation, run with
///   recording off. Its parameters are the op's tensor inputs (one or more), each
///   `name: &Tensor`; mark one `#[no_grad]` when it gets no gradient (an index, a
///   mask). It takes `&self` when the op has parameters (a struct with fields),
///   which it reads as `self.<field>`: a forward without it is an error, since
///   the generated function would take the parameters and forward never see them.
/// - `fn backward(..) -> Result<..>`: its parameters are chosen **by name**, and only
///   what it declares is kept alive by the graph:
///
///   | parameter | type | what it is | kept alive |
///   |---|---|---|---|
///   | `grad` | `&Tensor` or `Tensor` | gradient of the output | - |
///   | an input's name | `&Tensor` or `Tensor` | that input | the input |
///   | `<input>_shape` | `&Shape` | that input's shape | - (every node has it) |
///   | `<input>_dtype` | `DType` | that input's dtype | - (every node has it) |
///   | `output` | `&Tensor` or `Tensor` | forward's result | the output |
///   | `needs` | `[bool; N]` | which differentiable inputs need a gradient | - |
///   | `&self` | | the op's parameters | the op value |
///
///   It returns one gradient per differentiable input, in forward's order: a
///   `Tensor`, or an `Option<Tensor>` where `None` means no gradient; a tuple when
///   there are several. A declared input or `output` that backward never reads is an
///   error, since it would be kept for nothing.
///
///   A tensor declared by value (`grad: Tensor`) is handed over by the graph
///   (`BackwardContext::take_grad`, `take_input`, `take_output`). Where nothing
///   else holds its buffer (no `retain_graph`, hook or other consumer; an input the
///   user dropped), the owned operators write into it instead of allocating:
///   `mul`'s backward is `let db = a * &grad; let da = grad * b;`, and a chain
///   `y = y * x` runs its backward without allocating. Borrowing is always
///   correct; owning only saves memory.
/// - Optionally one struct with named fields, the op's non-tensor parameters (an
///   axis, a scalar, a shape). They become trailing arguments of the generated
///   function and are read through `&self`. The struct must be `Send + Sync`.
/// - Optionally `fn check_cases() -> Vec<CheckCase>`: inputs to gradient-check the
///   op at, found through the registry.
/// - Any other items (imports, helpers, constants), kept as written. The op's items
///   are resolved inside the module, which does not see the imports around it:
///   import what they use there (`use autograd::prelude::*;`, or `use super::*;`).
///
/// # What is generated
///
/// The op struct (a unit struct named after the module when none is written), its
/// `Differentiable` impl, a registry entry (name, module, inputs with their
/// differentiable and saved flags, whether the output is saved, parameter names,
/// backward, check cases) submitted through `inventory`, and a function named after
/// the module, re-exported next to it: `fn op(x: &Tensor, .., param: T, ..) ->
/// Result<Tensor>`, which records the call when a differentiable input requires grad.
///
/// # Elementwise ops: one scalar function
///
/// A forward marked `#[elementwise]` is a function of plain numbers
/// (`fn forward(x: f32, y: f32) -> f32`, `&self` for the op's parameters,
/// `#[no_grad]` on an input that gets no gradient). The macro checks its body
/// against a subset of Rust (inputs, `self.<param>`, float literals, `+ - * /`,
/// unary `-`, comparisons, `&& || !`, `if`/`else`, `let`, parentheses, and the
/// methods `exp exp_m1 ln ln_1p sqrt tanh sin cos erf abs recip powf powi min max
/// clamp`; anything else is an error on its tokens) and generates:
///
/// - the CPU kernel, for f32 and f64, over any views with NumPy broadcasting:
///   the function made generic over `autograd::elementwise::Real` (`if`/`else`
///   becomes a select, so the loop has no branch), run in one loop per chunk;
/// - the backward, with none written: `Derivative` ops that evaluate the same
///   function on dual numbers (nested for higher orders), themselves recorded, so
///   gradients of gradients work up to the third order;
/// - the CUDA C++ source of the same function and its derivatives
///   (`<module>::CUDA_SOURCE`, also in the registry entry), compiled by NVRTC in CI;
/// - the op struct, registry entry (every input saved), typed function and method.
///
/// Where a better-conditioned formula exists, a backward may still be written, as
/// `#[elementwise] fn backward(x: f32, grad: f32) -> f32` reading forward's inputs
/// and `grad` by name and returning one gradient per differentiable input (a tuple
/// for several), linear in `grad`; its own derivatives come from dual numbers. It
/// returns gradients, not derivatives: one that never reads `grad` is an error.
///
/// A backward may also read `output`, forward's result (`fn backward(output: f32,
/// grad: f32) -> f32 { grad * output }` for `exp`), and may leave inputs unread
/// (`where`'s reads only the mask). The graph then saves exactly what the backward
/// names, as for a hand-written op: reading `output`, where the next op saves the
/// same tensor (a matmul after `tanh`), the two share one buffer. Such a backward
/// runs as one elementwise op per differentiable input over what it reads (at most
/// four values), generated from its body; recorded under `create_graph`, so
/// gradients of gradients flow through the output to the inputs. A backward
/// reading every input and not `output` runs inside the op's own kernel.
///
/// ```
/// use autograd::prelude::*;
///
/// #[differentiable(name = "doc_softplus")]
/// mod softplus {
///     #[elementwise]
///     pub fn forward(x: f32) -> f32 {
///         x.max(0.0) + (-x.abs()).exp().ln_1p()
///     }
///
///     /// σ(x), without the cancellation of differentiating the form above.
///     #[elementwise]
///     pub fn backward(x: f32, grad: f32) -> f32 {
///         grad / (1.0 + (-x).exp())
///     }
/// }
/// # fn main() -> Result<()> {
/// # autograd::init()?;
/// let x = Tensor::from_slice(&[-1.0f64, 0.5], [2])?.with_requires_grad(true);
/// softplus(&x)?.sum_all()?.backward()?;
/// let s = |v: f64| 1.0 / (1.0 + (-v).exp());
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [s(-1.0), s(0.5)]);
/// # Ok(())
/// # }
/// ```
///
/// # Arguments
///
/// - `name = "..."`: the op's short name (default: the module's name). The registry
///   lists it under the defining crate's namespace, `mycrate::name` (standard ops keep
///   their short names), and finds it by that full name, or by the short name when
///   one crate alone defines it. So a crate may define `gelu` beside the standard
///   one, and two crates may share a name; one crate defining a name twice is an
///   error when the registry is built, naming both definitions' modules.
/// - `crate = path` (or `crate = "path"`): where generated code finds autograd
///   (default `::autograd`), for crates that re-export it.
/// - `method` (or `method = name`): the op as a method of `Tensor` too, named after
///   the module (or `name`): a trait `Method` in the op's module, whose one method
///   is the generated function with its first input as `self`
///   (`use my_op::Method as _;`, then `x.my_op(&y, param)`).
///
/// Every malformed definition is a compile error on the offending tokens saying what
/// to write instead; `tests/ui/fail` holds one case per mistake.
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    differentiable_tokens(args.into(), item.into()).into()
}

/// The expansion of `#[differentiable(args)] item`: the stages in order, and the
/// one place that decides which expansion runs (tensor forward, elementwise, or the
/// fallback after an error), so that the expansions never call each other.
fn differentiable_tokens(args: TokenStream2, item: TokenStream2) -> TokenStream2 {
    // A bad argument is reported on its own tokens, and the op is still expanded with
    // the arguments that were good, so that one mistake does not turn into many.
    let (args, arg_error) = attr::parse(args);
    let arg_error = arg_error.map(|e| e.to_compile_error());
    let item: syn::Item = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#item #arg_error #e);
        }
    };
    let op = match Op::from_syn(&item) {
        Ok(op) => op,
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#item #e #arg_error);
        }
    };
    let out = match op.validate(&args) {
        Ok(valid) => {
            let (before, after) = match &valid.kind {
                Kind::Tensor { forward, backward } => {
                    expand::expand(&valid, forward, backward, &args)
                }
                Kind::Scalar(scalar) => (quote!(), elementwise::expand(&valid, scalar, &args)),
            };
            util::op_module(&valid, &args, before, after)
        }
        Err(e) => fallback::expand(&op, &args, e),
    };
    quote!(#out #arg_error)
}
