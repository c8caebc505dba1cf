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
    /// Layer normalisation over the last axis: [`layer_norm`].
    fn layer_norm(
        &self,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor>;
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
    fn layer_norm(
        &self,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        layer_norm(self, weight, bias, eps)
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
