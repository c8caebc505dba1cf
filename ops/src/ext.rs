//! The standard ops as methods of `Tensor`.
//!
//! Most ops bring their own method: defined with `#[differentiable(method)]`, each
//! has a `Method` trait in its module, and [`methods`] imports them all. The few
//! methods that are not the op's function with `self` first (a shape taken as
//! `impl Into<Shape>`, an alias) are written here, in [`TensorExt`].

use crate::*;
use autograd_core::random::Rng;
use autograd_core::{Device, Result, Scalar, Shape, Tensor};

/// Every op method of the standard library: `use autograd_ops::methods::*;` (the
/// prelude does it) and write `x.matmul(&w)?.relu()?.sum_all()?`.
///
/// `+ - * /` and unary `-` are operators on tensors; everything else is a method.
///
/// ```
/// use autograd_core::Tensor;
/// use autograd_ops::methods::*;
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0], [1, 2])?;
/// let w = Tensor::from_slice(&[1.0f32, -1.0, 1.0, -0.5], [2, 2])?;
/// let h = x.matmul(&w)?.relu()?; // [[3, -2]] -> [[3, 0]]
/// assert_eq!(h.to_vec::<f32>()?, [3.0, 0.0]);
/// assert_eq!(h.sum_all()?.to_scalar::<f32>()?, 3.0);
/// assert_eq!(h.reshape([2])?.t().is_err(), true); // `t` needs two axes
/// # Ok(())
/// # }
/// ```
pub mod methods {
    pub use super::TensorExt;
    pub use autograd_core::primitives::methods::*;
    include!(concat!(env!("OUT_DIR"), "/methods.rs"));
}

/// The op methods that are not an op's function with `self` first: shapes taken as
/// `impl Into<Shape>`, the moves between devices (`to_device` fills in the
/// source device of the `to_device` op), and the functions that are not one op
/// (compositions such as [`flatten`], constants such as [`argmax`] and the
/// comparisons). (The others come with their op: import [`methods`]`::*` for all
/// of them.)
pub trait TensorExt {
    /// Another shape of the same element count.
    fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor>;
    /// Repeated along new leading axes and axes of size 1, to `shape`.
    fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor>;
    /// Axis `i` of the result is axis `dims[i]` of `self`.
    fn permute(&self, dims: &[usize]) -> Result<Tensor>;
    /// This tensor on `device`, recorded: the gradient flows back to this tensor's
    /// device. `Error::CudaUnavailable` where that GPU is not.
    fn to_device(&self, device: Device) -> Result<Tensor>;
    /// Short form of [`TensorExt::to_device`]: `x.to(Device::Cuda(0))`.
    fn to(&self, device: Device) -> Result<Tensor>;
    /// Another shape of the same element count, one size of which may be `-1`
    /// (inferred): [`reshape_infer`].
    fn reshape_infer(&self, dims: &[isize]) -> Result<Tensor>;
    /// Axes `start_axis..=end_axis` merged into one: [`flatten`].
    fn flatten(&self, start_axis: isize, end_axis: isize) -> Result<Tensor>;
    /// The dot product with another vector: [`dot`].
    fn dot(&self, other: &Tensor) -> Result<Tensor>;
    /// Positions of the largest elements along `axis` (a constant `i64` tensor):
    /// [`argmax`].
    fn argmax(&self, axis: isize, keepdim: bool) -> Result<Tensor>;
    /// Positions of the smallest elements along `axis` (a constant `i64` tensor):
    /// [`argmin`].
    fn argmin(&self, axis: isize, keepdim: bool) -> Result<Tensor>;
    /// The `bool` mask `self == other` (a constant): [`eq`].
    fn eq(&self, other: &Tensor) -> Result<Tensor>;
    /// The `bool` mask `self != other` (a constant): [`ne`].
    fn ne(&self, other: &Tensor) -> Result<Tensor>;
    /// The `bool` mask `self < other` (a constant): [`lt`].
    fn lt(&self, other: &Tensor) -> Result<Tensor>;
    /// The `bool` mask `self <= other` (a constant): [`le`].
    fn le(&self, other: &Tensor) -> Result<Tensor>;
    /// The `bool` mask `self > other` (a constant): [`gt`].
    fn gt(&self, other: &Tensor) -> Result<Tensor>;
    /// The `bool` mask `self >= other` (a constant): [`ge`].
    fn ge(&self, other: &Tensor) -> Result<Tensor>;
    /// GELU in the form PyTorch's `approximate` chooses (the exact form by
    /// default, as PyTorch's): [`gelu_with`].
    fn gelu_with(&self, approximate: GeluApproximate) -> Result<Tensor>;
    /// Dropout with probability `p` in training, the identity otherwise: [`dropout`].
    fn dropout(&self, p: f64, train: bool, rng: &mut Rng) -> Result<Tensor>;
    /// `self` to the power `exponent` elementwise: a tensor exponent (`x.pow(&b)`,
    /// broadcasting: [`pow`](fn@pow)) or a number (`x.pow(3.0)`, the same as
    /// `x.pow_scalar(3.0)`: [`pow_scalar`](fn@pow_scalar)). See [`Exponent`].
    fn pow(&self, exponent: impl Exponent) -> Result<Tensor>;
    /// Pieces of `size` entries along `axis`, the last shorter (views): [`split`].
    fn split(&self, size: usize, axis: isize) -> Result<Vec<Tensor>>;
    /// Pieces of the given sizes along `axis` (views): [`split_sizes`].
    fn split_sizes(&self, sizes: &[usize], axis: isize) -> Result<Vec<Tensor>>;
    /// At most `chunks` pieces along `axis` (views): [`chunk`].
    fn chunk(&self, chunks: usize, axis: isize) -> Result<Vec<Tensor>>;
    /// The entries in reverse order along each of `axes`: [`flip`].
    fn flip(&self, axes: &[isize]) -> Result<Tensor>;
    /// The entries rolled by `shifts` along `axes` (flat with none): [`roll`].
    fn roll(&self, shifts: &[isize], axes: &[isize]) -> Result<Tensor>;
    /// The whole tensor laid out `repeats[k]` times along each axis: [`repeat`].
    fn repeat(&self, repeats: &[usize]) -> Result<Tensor>;
    /// [`repeat`] with fewer `reps` than axes allowed: [`tile`].
    fn tile(&self, reps: &[usize]) -> Result<Tensor>;
    /// Axes of size 1 repeated to `sizes` (`-1` keeps an axis; a view): [`expand`].
    fn expand(&self, sizes: &[isize]) -> Result<Tensor>;
    /// The outer product with another vector: [`outer`].
    fn outer(&self, other: &Tensor) -> Result<Tensor>;
    /// The last two axes swapped: [`transpose`](fn@transpose)`(self, -2, -1)` (a
    /// view). PyTorch's `t` takes tensors of rank 2 at most; this one takes a batch
    /// of matrices too. An error for a tensor of rank below 2.
    fn t(&self) -> Result<Tensor>;
    /// Layer normalisation over the last axis: [`layer_norm`].
    fn layer_norm(
        &self,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor>;
    /// `self` where the `bool` `condition` holds, else `other` (PyTorch's
    /// `x.where(condition, y)`): the function `where` (`autograd_ops::r#where`) with `(condition, self, other)`.
    fn r#where(&self, condition: &Tensor, other: &Tensor) -> Result<Tensor>;
    /// The rows of `self`, a `[V, D]` weight, picked by the integer `indices`:
    /// [`embedding`]`(self, indices)`.
    fn embedding(&self, indices: &Tensor) -> Result<Tensor>;
    /// Scaled dot-product attention with `self` as the queries:
    /// [`scaled_dot_product_attention`]`(self, k, v, options)`.
    fn scaled_dot_product_attention(
        &self,
        k: &Tensor,
        v: &Tensor,
        options: AttentionOptions<'_>,
    ) -> Result<Tensor>;
    /// The product of every element, rank 0: [`prod_all`].
    fn prod_all(&self) -> Result<Tensor>;
    /// The mean over several axes (none: all): [`mean_axes`].
    fn mean_axes(&self, axes: &[isize], keepdim: bool) -> Result<Tensor>;
    /// The variance over several axes (none: all): [`var_axes`].
    fn var_axes(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor>;
    /// The standard deviation over several axes (none: all): [`std_dev_axes`].
    fn std_dev_axes(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor>;
    /// The flat position of the largest element (a constant `i64`): [`argmax_all`].
    fn argmax_all(&self) -> Result<Tensor>;
    /// The flat position of the smallest element (a constant `i64`): [`argmin_all`].
    fn argmin_all(&self) -> Result<Tensor>;
    /// The largest elements along `axis` and their positions: [`max_with_indices`].
    fn max_with_indices(&self, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)>;
    /// The smallest elements along `axis` and their positions: [`min_with_indices`].
    fn min_with_indices(&self, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)>;
    /// Sorted along `axis` (stable), with the positions: [`sort`].
    fn sort(&self, axis: isize, descending: bool) -> Result<(Tensor, Tensor)>;
    /// The positions that sort along `axis` (stable, a constant): [`argsort`].
    fn argsort(&self, axis: isize, descending: bool) -> Result<Tensor>;
    /// `value` where the `bool` mask is true: [`masked_fill`].
    fn masked_fill(&self, mask: &Tensor, value: f64) -> Result<Tensor>;
    /// The lower triangle of the last two axes: [`tril`].
    fn tril(&self, diagonal: i64) -> Result<Tensor>;
    /// The upper triangle of the last two axes: [`triu`].
    fn triu(&self, diagonal: i64) -> Result<Tensor>;
    /// The vector norm over several axes (none: all): [`norm`].
    fn norm(&self, ord: NormOrd, axes: &[isize], keepdim: bool) -> Result<Tensor>;
    /// `src` written at the positions `index` holds along `axis`: [`scatter`].
    fn scatter(&self, index: &Tensor, src: &Tensor, axis: isize) -> Result<Tensor>;
    /// `src` combined by `reduce` at the positions `index` holds: [`scatter_reduce`].
    fn scatter_reduce(
        &self,
        index: &Tensor,
        src: &Tensor,
        axis: isize,
        reduce: ScatterReduce,
        include_self: bool,
    ) -> Result<Tensor>;
    /// `values` put at the positions of the index tensors: [`index_put`].
    fn index_put(&self, indices: &[&Tensor], values: &Tensor, accumulate: bool) -> Result<Tensor>;
    /// Categories drawn from the rows of weights `self`: [`multinomial`].
    fn multinomial(&self, num_samples: usize, replacement: bool, rng: &mut Rng) -> Result<Tensor>;
    /// The `k` largest or smallest along `axis`, with the positions: [`topk`].
    fn topk(&self, k: usize, axis: isize, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)>;
}

impl TensorExt for Tensor {
    #[track_caller]
    fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        reshape(self, shape.into())
    }

    #[track_caller]
    fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        broadcast_to(self, shape.into())
    }

    #[track_caller]
    fn permute(&self, dims: &[usize]) -> Result<Tensor> {
        permute(self, dims.to_vec())
    }

    #[track_caller]
    fn to_device(&self, device: Device) -> Result<Tensor> {
        to_device(self, device)
    }

    #[track_caller]
    fn to(&self, device: Device) -> Result<Tensor> {
        to_device(self, device)
    }

    #[track_caller]
    fn reshape_infer(&self, dims: &[isize]) -> Result<Tensor> {
        reshape_infer(self, dims)
    }

    #[track_caller]
    fn flatten(&self, start_axis: isize, end_axis: isize) -> Result<Tensor> {
        flatten(self, start_axis, end_axis)
    }

    #[track_caller]
    fn dot(&self, other: &Tensor) -> Result<Tensor> {
        dot(self, other)
    }

    fn argmax(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        argmax(self, axis, keepdim)
    }

    fn argmin(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        argmin(self, axis, keepdim)
    }

    fn eq(&self, other: &Tensor) -> Result<Tensor> {
        eq(self, other)
    }

    fn ne(&self, other: &Tensor) -> Result<Tensor> {
        ne(self, other)
    }

    fn lt(&self, other: &Tensor) -> Result<Tensor> {
        lt(self, other)
    }

    fn le(&self, other: &Tensor) -> Result<Tensor> {
        le(self, other)
    }

    fn gt(&self, other: &Tensor) -> Result<Tensor> {
        gt(self, other)
    }

    fn ge(&self, other: &Tensor) -> Result<Tensor> {
        ge(self, other)
    }

    #[track_caller]
    fn gelu_with(&self, approximate: GeluApproximate) -> Result<Tensor> {
        gelu_with(self, approximate)
    }

    #[track_caller]
    fn dropout(&self, p: f64, train: bool, rng: &mut Rng) -> Result<Tensor> {
        dropout(self, p, train, rng)
    }

    #[track_caller]
    fn pow(&self, exponent: impl Exponent) -> Result<Tensor> {
        exponent.pow_of(self)
    }

    #[track_caller]
    fn split(&self, size: usize, axis: isize) -> Result<Vec<Tensor>> {
        split(self, size, axis)
    }

    #[track_caller]
    fn split_sizes(&self, sizes: &[usize], axis: isize) -> Result<Vec<Tensor>> {
        split_sizes(self, sizes, axis)
    }

    #[track_caller]
    fn chunk(&self, chunks: usize, axis: isize) -> Result<Vec<Tensor>> {
        chunk(self, chunks, axis)
    }

    #[track_caller]
    fn flip(&self, axes: &[isize]) -> Result<Tensor> {
        flip(self, axes)
    }

    #[track_caller]
    fn roll(&self, shifts: &[isize], axes: &[isize]) -> Result<Tensor> {
        roll(self, shifts, axes)
    }

    #[track_caller]
    fn repeat(&self, repeats: &[usize]) -> Result<Tensor> {
        repeat(self, repeats)
    }

    #[track_caller]
    fn tile(&self, reps: &[usize]) -> Result<Tensor> {
        tile(self, reps)
    }

    #[track_caller]
    fn expand(&self, sizes: &[isize]) -> Result<Tensor> {
        expand(self, sizes)
    }

    #[track_caller]
    fn outer(&self, other: &Tensor) -> Result<Tensor> {
        outer(self, other)
    }

    #[track_caller]
    fn t(&self) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(autograd_core::Error::Shape {
                op: "transpose",
                msg: format!(
                    "`t` swaps the last two axes, but shape {} has fewer than two; use \
                     `transpose(d0, d1)` with axes it has, or `unsqueeze` first",
                    self.shape()
                ),
            });
        }
        transpose(self, -2, -1)
    }

    #[track_caller]
    fn layer_norm(
        &self,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        layer_norm(self, weight, bias, eps)
    }

    #[track_caller]
    fn r#where(&self, condition: &Tensor, other: &Tensor) -> Result<Tensor> {
        crate::r#where(condition, self, other)
    }

    #[track_caller]
    fn embedding(&self, indices: &Tensor) -> Result<Tensor> {
        embedding(self, indices)
    }

    #[track_caller]
    fn scaled_dot_product_attention(
        &self,
        k: &Tensor,
        v: &Tensor,
        options: AttentionOptions<'_>,
    ) -> Result<Tensor> {
        scaled_dot_product_attention(self, k, v, options)
    }

    #[track_caller]
    fn prod_all(&self) -> Result<Tensor> {
        prod_all(self)
    }

    #[track_caller]
    fn mean_axes(&self, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        mean_axes(self, axes, keepdim)
    }

    #[track_caller]
    fn var_axes(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor> {
        var_axes(self, axes, correction, keepdim)
    }

    #[track_caller]
    fn std_dev_axes(&self, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor> {
        std_dev_axes(self, axes, correction, keepdim)
    }

    fn argmax_all(&self) -> Result<Tensor> {
        argmax_all(self)
    }

    fn argmin_all(&self) -> Result<Tensor> {
        argmin_all(self)
    }

    #[track_caller]
    fn max_with_indices(&self, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        max_with_indices(self, axis, keepdim)
    }

    #[track_caller]
    fn min_with_indices(&self, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        min_with_indices(self, axis, keepdim)
    }

    #[track_caller]
    fn sort(&self, axis: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        sort(self, axis, descending)
    }

    fn argsort(&self, axis: isize, descending: bool) -> Result<Tensor> {
        argsort(self, axis, descending)
    }

    #[track_caller]
    fn masked_fill(&self, mask: &Tensor, value: f64) -> Result<Tensor> {
        masked_fill(self, mask, value)
    }

    #[track_caller]
    fn tril(&self, diagonal: i64) -> Result<Tensor> {
        tril(self, diagonal)
    }

    #[track_caller]
    fn triu(&self, diagonal: i64) -> Result<Tensor> {
        triu(self, diagonal)
    }

    #[track_caller]
    fn norm(&self, ord: NormOrd, axes: &[isize], keepdim: bool) -> Result<Tensor> {
        norm(self, ord, axes, keepdim)
    }

    #[track_caller]
    fn scatter(&self, index: &Tensor, src: &Tensor, axis: isize) -> Result<Tensor> {
        scatter(self, index, src, axis)
    }

    #[track_caller]
    fn scatter_reduce(
        &self,
        index: &Tensor,
        src: &Tensor,
        axis: isize,
        reduce: ScatterReduce,
        include_self: bool,
    ) -> Result<Tensor> {
        scatter_reduce(self, index, src, axis, reduce, include_self)
    }

    #[track_caller]
    fn index_put(&self, indices: &[&Tensor], values: &Tensor, accumulate: bool) -> Result<Tensor> {
        index_put(self, indices, values, accumulate)
    }

    fn multinomial(&self, num_samples: usize, replacement: bool, rng: &mut Rng) -> Result<Tensor> {
        multinomial(self, num_samples, replacement, rng)
    }

    #[track_caller]
    fn topk(&self, k: usize, axis: isize, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
        topk(self, k, axis, largest, sorted)
    }
}

/// What [`TensorExt::pow`] raises a tensor to: a tensor (`&b` or `b`, the [`pow`](fn@pow)
/// op, broadcasting, differentiable in both) or a number (`3.0`, `2`, any
/// [`Scalar`]: the [`pow_scalar`](fn@pow_scalar) op).
///
/// ```
/// use autograd_core::Tensor;
/// use autograd_ops::methods::*;
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0], [3])?;
/// assert_eq!(x.pow(2.0)?.to_vec::<f64>()?, [1.0, 4.0, 9.0]);
/// assert_eq!(x.pow(&x)?.to_vec::<f64>()?, [1.0, 4.0, 27.0]);
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an exponent: `x.pow(..)` takes a tensor (`&Tensor`) or a number",
    label = "write a tensor (`x.pow(&b)`) or a number (`x.pow(3.0)`, the same as `x.pow_scalar(3.0)`)"
)]
pub trait Exponent: sealed::Sealed {
    /// `base` to the power `self`.
    fn pow_of(self, base: &Tensor) -> Result<Tensor>;
}

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for &Tensor {}
impl Exponent for &Tensor {
    #[track_caller]
    fn pow_of(self, base: &Tensor) -> Result<Tensor> {
        pow(base, self)
    }
}

impl sealed::Sealed for Tensor {}
impl Exponent for Tensor {
    #[track_caller]
    fn pow_of(self, base: &Tensor) -> Result<Tensor> {
        pow(base, &self)
    }
}

/// A number exponent, one impl per [`Scalar`] type (a blanket impl over `Scalar`
/// would overlap the tensor impls as far as coherence can tell).
macro_rules! scalar_exponents {
    ($($s:ty)*) => {
        $(
            impl sealed::Sealed for $s {}
            impl Exponent for $s {
                #[track_caller]
                fn pow_of(self, base: &Tensor) -> Result<Tensor> {
                    pow_scalar(base, Scalar::to_f64(self))
                }
            }
        )*
    };
}

scalar_exponents!(f64 f32 i32 i64 u32 u64 usize);
