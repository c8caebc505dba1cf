//! The standard op library. Every op here is defined once with `#[differentiable]`:
//! forward and backward side by side, nothing else written by hand. Backward
//! formulas are written with these same ops, so a recorded backward pass can be
//! differentiated again.
//!
//! Each op comes as a function (`mul(&a, &b)`), and most as a method too
//! (`a.matmul(&b)`, with [`methods`]`::*` imported); `+ - * /` and unary `-` on
//! tensors call them too.
//!
//! | kind | ops |
//! |------|-----|
//! | elementwise, broadcasting as NumPy does | [`add`](mod@add), [`sub`](mod@sub), [`mul`](mod@mul), [`div`](mod@div), [`pow`](mod@pow), [`maximum`](mod@maximum), [`minimum`](mod@minimum) |
//! | with a constant | [`add_scalar`](mod@add_scalar), [`mul_scalar`](mod@mul_scalar), [`div_scalar`](mod@div_scalar), [`pow_scalar`](mod@pow_scalar) |
//! | unary | [`neg`](mod@neg), [`exp`](mod@exp), [`log`](mod@log), [`sqrt`](mod@sqrt), [`square`](mod@square), [`abs`](mod@abs), [`tanh`](mod@tanh), [`sigmoid`](mod@sigmoid), [`relu`](mod@relu), [`gelu`](mod@gelu), [`sin`](mod@sin), [`cos`](mod@cos) |
//! | reductions (`axis` may be negative; `keepdim`) | [`sum`](mod@sum), [`mean`](mod@mean), [`max`](mod@max), [`min`](mod@min), [`logsumexp`](mod@logsumexp), [`var`](mod@var) and [`std_dev`](mod@std_dev) (with torch's `correction`), [`cumsum`](mod@cumsum) (running sums, or reversed); [`sum_all`](mod@sum_all), [`mean_all`](mod@mean_all), [`max_all`](mod@max_all), [`min_all`](mod@min_all) |
//! | shape | [`reshape`](mod@reshape) (and [`reshape_infer`], one size `-1`), [`flatten`], [`transpose`](mod@transpose) (any two axes; [`TensorExt::t`] the last two), [`permute`](mod@permute), [`broadcast_to`](mod@broadcast_to), [`sum_to_shape`](mod@sum_to_shape), [`unsqueeze`](mod@unsqueeze), [`squeeze`](mod@squeeze), [`narrow`](mod@narrow), [`pad`](mod@pad), [`concat`](mod@concat) (and [`concat_all`]), [`stack`], [`index_select`](mod@index_select), [`index_add`](mod@index_add) |
//! | shape, as PyTorch's (compositions) | [`split`], [`split_sizes`], [`chunk`], [`flip`], [`roll`], [`repeat`], [`tile`], [`expand`], [`outer`], [`einsum`] |
//! | products and scans | [`prod`](mod@prod) (and [`prod_all`]), [`cumprod`](mod@cumprod), [`logcumsumexp`](mod@logcumsumexp) (gradients exact with zeros) |
//! | over several axes, positions, selections | [`mean_axes`], [`var_axes`], [`std_dev_axes`]; [`argmax_all`], [`argmin_all`]; [`max_with_indices`], [`min_with_indices`], [`sort`], [`argsort`], [`topk`] |
//! | norms and masking | [`norm`] ([`NormOrd`]), [`masked_fill`], [`tril`], [`triu`] |
//! | writing by position | [`scatter`], [`scatter_value`], [`scatter_reduce`] ([`ScatterReduce`]), [`index_put`] |
//! | sampling (constants) | [`multinomial`] (from the library's seeded `Rng`) |
//! | indexing with an index tensor of the data's rank (`torch.gather`, `scatter_add`) | [`gather`](mod@gather), [`scatter_add`](mod@scatter_add) (raw kernels: a CPU kernel and a CUDA program, [`INDEX_PROGRAM`]) |
//! | linear algebra | [`matmul`](mod@matmul) (2-D, batched, batch axes broadcast, 1-D operands as NumPy takes them), [`dot`] |
//! | neural networks | [`softmax`](mod@softmax), [`log_softmax`](mod@log_softmax), [`cross_entropy`](mod@cross_entropy), [`mse_loss`](mod@mse_loss), [`l1_loss`], [`mse_loss_with`], [`smooth_l1_loss`] and [`huber_loss`] (with a [`Reduction`]), [`cross_entropy_with`] and [`nll_loss`] (weights, `ignore_index`, label smoothing, `[N, C, d..]`, class probabilities), [`binary_cross_entropy`], [`binary_cross_entropy_with_logits`], [`kl_div`] (with PyTorch's options), [`dropout`] (the op [`dropout_op`](mod@dropout_op), registered as `dropout`), [`layer_norm`] (the op [`layer_norm_op`](mod@layer_norm_op), registered as `layer_norm`, plus the weight and bias), [`embedding`], [`one_hot`] (a constant) |
//! | constants: not recorded, no gradient | [`eq`], [`ne`], [`lt`], [`le`], [`gt`], [`ge`] (`bool` masks, broadcasting: the condition of `where`), [`argmax`], [`argmin`] (`i64` positions) |
//! | convolution and pooling (`[N, C, H, W]`, `torch.nn.functional` semantics; options structs with PyTorch's defaults) | [`conv2d`] ([`Conv2dOptions`]; the op [`conv2d_op`](mod@conv2d_op), registered as `conv2d`, plus the bias), [`conv1d`], [`conv3d`], [`conv_transpose2d`], [`conv_transpose1d`] (compositions), [`max_pool2d`](mod@max_pool2d) ([`MaxPool2dOptions`]; [`max_pool2d_with_indices`]), [`avg_pool2d`](mod@avg_pool2d) ([`AvgPool2dOptions`]), [`adaptive_avg_pool2d`], [`adaptive_max_pool2d`] (compositions), [`im2col`](mod@im2col) (torch's `unfold`), [`col2im`](mod@col2im) (`fold`) |
//! | resizing and options (compositions) | [`interpolate`] (nearest, bilinear), [`embedding_with`] (`padding_idx`, `max_norm`), [`embedding_renorm`], [`layer_norm_shape`] (several trailing axes) |
//! | trigonometric and hyperbolic, generated | [`tan`](mod@tan), [`asin`](mod@asin), [`acos`](mod@acos), [`atan`](mod@atan), [`atan2`](mod@atan2) (`atan2(y, x)`, broadcasting), [`sinh`](mod@sinh), [`cosh`](mod@cosh), [`asinh`](mod@asinh), [`acosh`](mod@acosh), [`atanh`](mod@atanh) |
//! | rounding, generated (gradient 0) | [`floor`](mod@floor), [`ceil`](mod@ceil), [`round`](mod@round) (halves to even), [`trunc`](mod@trunc), [`sign`](mod@sign) |
//! | PyTorch's activations, generated | [`rsqrt`](mod@rsqrt), [`logsigmoid`](mod@logsigmoid), [`softsign`](mod@softsign), [`selu`](mod@selu), [`celu`](mod@celu), [`hardswish`](mod@hardswish), [`hardsigmoid`](mod@hardsigmoid), [`gelu_erf`](mod@gelu_erf) (and [`gelu_with`], PyTorch's `approximate`), [`softplus_with`](mod@softplus_with), [`hardtanh_with`](mod@hardtanh_with) |
//! | devices | [`to_device`] (the op [`transfer`](mod@transfer), registered as `to_device`) |
//! | generated from one scalar function (`#[elementwise]`) | [`erf`](mod@erf), [`softplus`](mod@softplus), [`silu`](mod@silu), [`mish`](mod@mish), [`log1p`](mod@log1p), [`expm1`](mod@expm1), [`leaky_relu`](mod@leaky_relu), [`elu`](mod@elu), [`recip`](mod@recip), [`clamp`](mod@clamp), [`hardtanh`](mod@hardtanh), [`where_op`](mod@where_op) (behind [`r#where`](fn.where.html), registered as `where`) |
//!
//! Conventions worth knowing:
//! - Ties: [`max`](mod@max)/[`min`](mod@min) (and [`max_all`](mod@max_all)/[`min_all`](mod@min_all))
//!   split the gradient equally among all elements equal to the result; [`maximum`](mod@maximum)/[`minimum`](mod@minimum) give half to each operand where they are
//!   equal; [`relu`](mod@relu) and [`abs`](mod@abs) have gradient 0 at 0.
//! - [`max_pool2d`](mod@max_pool2d) gives a window's gradient to the first element
//!   equal to its max, as PyTorch; [`avg_pool2d`](mod@avg_pool2d) by default
//!   divides every window by `kh·kw`, padding included (`count_include_pad = True`).
//!   Pools take padding of at most half the kernel, as PyTorch does.
//! - [`gelu`](mod@gelu) is the tanh approximation, as `jax.nn.gelu` by default;
//!   PyTorch's default, the exact form, is [`gelu_erf`](mod@gelu_erf), and
//!   [`gelu_with`] takes PyTorch's `approximate` ([`GeluApproximate`], default `None`).
//! - [`cross_entropy`](mod@cross_entropy) takes `[N, C]` logits and `[N]` integer class targets
//!   (`i64`, no gradient); it returns the mean over the batch. [`cross_entropy_with`]
//!   takes PyTorch's options and shapes (and is that op for its defaults).
//! - Index inputs are integer tensors (`i64`, as PyTorch's; `i32` and `u8` are
//!   taken too), read on the host: [`index_select`](mod@index_select) and
//!   [`index_add`](mod@index_add) take vectors; [`gather`](mod@gather) and
//!   [`scatter_add`](mod@scatter_add) take an index of the data's rank,
//!   [`embedding`] and [`one_hot`] one of any shape. Index inputs get no gradient;
//!   a floating index is an error that says to convert it
//!   (`.to_dtype(DType::I64)`), and so is a value out of range.
//!   [`argmax`]/[`argmin`] return `i64` positions.
//! - Comparisons return `bool` masks; [`r#where`](fn.where.html) takes a `bool`
//!   condition and promotes its two values to their common dtype.
//! - Functions listed without `mod@` are not one registered op: they check their
//!   arguments (errors name them) and record the ops they are made of, or (the
//!   constants) nothing.
//! - Every differentiable op works in f32 and f64, and its output has its inputs'
//!   dtype (operands of several dtypes meet in their common one, as PyTorch's).

#![warn(missing_docs)]

mod activation;
mod arith;
mod arrange;
mod attention;
mod compare;
mod conv;
mod conv_variants;
mod device;
mod einsum;
mod ext;
mod index;
mod interpolate;
mod linalg;
mod loss;
mod mask;
mod nn;
mod nonlinear;
mod pool;
mod product;
mod reduce;
mod rounding;
mod sample;
mod scatter;
mod select;
mod shape;
mod standard;
mod trig;
mod unary;

pub use activation::*;
pub use arith::*;
pub use arrange::*;
pub use attention::*;
pub use autograd_core::primitives::*;
pub use compare::*;
pub use conv::*;
pub use conv_variants::*;
pub use device::*;
pub use einsum::*;
pub use ext::{Exponent, TensorExt, methods};
pub use index::*;
pub use interpolate::*;
pub use linalg::*;
pub use loss::*;
pub use mask::*;
pub use nn::*;
pub use nonlinear::*;
pub use pool::*;
pub use product::*;
pub use reduce::*;
pub use rounding::*;
pub use sample::*;
pub use scatter::*;
pub use select::*;
pub use shape::*;
pub use standard::STANDARD_OPS;
pub use trig::*;
pub use unary::*;

use autograd_core::{Error, OpRegistry, Result, Tensor, registry};

/// An `i64` tensor of `values` (an index or class targets of a check case); the
/// f64 fallback of `autograd_core::cases` if it cannot be built (out of memory
/// only), which the op then refuses: an error, never a panic.
pub(crate) fn index_values(values: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape).unwrap_or_else(|_| autograd_core::cases::fallback(shape, 0.0))
}

/// Links the standard op library into the program and checks that every one of its
/// ops is registered. Call it once at start-up (tests, benches and examples do):
/// a crate nobody references is not linked, and its registrations would vanish.
pub fn init() -> Result<&'static OpRegistry> {
    let reg = registry()?;
    let missing: Vec<&'static str> = STANDARD_OPS
        .iter()
        .copied()
        .filter(|n| !reg.contains(n))
        .collect();
    if !missing.is_empty() {
        return Err(Error::MissingStandardOps { missing });
    }
    Ok(reg)
}

/// The dtype of an f16 or bf16 tensor, `None` for any other: the ops that keep
/// f32 internally (softmax, log_softmax, cross_entropy, layer_norm, logsumexp,
/// var, std_dev, cumsum) compute such a tensor in f32, forward and backward, and
/// round each result once, as PyTorch does.
pub(crate) fn half(x: &autograd_core::Tensor) -> Option<autograd_core::DType> {
    let d = x.dtype();
    d.is_half().then_some(d)
}

/// `x` in f32, recorded (a backward computing in f32 stays differentiable).
pub(crate) fn wide(x: &autograd_core::Tensor) -> autograd_core::Result<autograd_core::Tensor> {
    to_dtype(x, autograd_core::DType::F32)
}
