//! Method forms of the standard ops.

use crate::*;
use autograd_core::{Device, Result, Shape, Tensor};

macro_rules! methods {
    ($($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) => $op:ident($($call:expr),*);)*) => {
        /// The standard ops as methods: `x.matmul(&w)?.relu()?.sum_all()?`.
        ///
        /// `+ - * /` and unary `-` are operators on tensors; everything else is here.
        ///
        /// ```
        /// use autograd_core::Tensor;
        /// use autograd_ops::TensorExt;
        /// # fn main() -> autograd_core::Result<()> {
        /// autograd_ops::init()?;
        /// let x = Tensor::from_slice(&[1.0f32, 2.0], [1, 2])?;
        /// let w = Tensor::from_slice(&[1.0f32, -1.0, 1.0, -0.5], [2, 2])?;
        /// let h = x.matmul(&w)?.relu()?; // [[3, -2]] -> [[3, 0]]
        /// assert_eq!(h.to_vec::<f32>()?, [3.0, 0.0]);
        /// assert_eq!(h.sum_all()?.to_scalar::<f32>()?, 3.0);
        /// # Ok(())
        /// # }
        /// ```
        pub trait TensorExt {
            $($(#[$doc])* fn $name(&self $(, $arg: $ty)*) -> Result<Tensor>;)*
        }

        impl TensorExt for Tensor {
            $(
                #[track_caller]
                fn $name(&self $(, $arg: $ty)*) -> Result<Tensor> {
                    $op(self $(, $call)*)
                }
            )*
        }
    };
}

methods! {
    /// `a^b` elementwise (broadcasting).
    fn pow(&self, exponent: &Tensor) => pow(exponent);
    /// The larger of the two elementwise (broadcasting); ties split the gradient.
    fn maximum(&self, rhs: &Tensor) => maximum(rhs);
    /// The smaller of the two elementwise (broadcasting); ties split the gradient.
    fn minimum(&self, rhs: &Tensor) => minimum(rhs);
    /// `self + scalar`.
    fn add_scalar(&self, scalar: f64) => add_scalar(scalar);
    /// `self * scalar`.
    fn mul_scalar(&self, scalar: f64) => mul_scalar(scalar);
    /// `self / scalar` (a true division).
    fn div_scalar(&self, scalar: f64) => div_scalar(scalar);
    /// `self^p` for a constant `p`.
    fn pow_scalar(&self, p: f64) => pow_scalar(p);
    /// `e^x` elementwise.
    fn exp(&self) => exp();
    /// The natural logarithm elementwise.
    fn log(&self) => log();
    /// The square root elementwise.
    fn sqrt(&self) => sqrt();
    /// `x²` elementwise.
    fn square(&self) => square();
    /// `|x|` elementwise (gradient 0 at 0).
    fn abs(&self) => abs();
    /// The hyperbolic tangent elementwise.
    fn tanh(&self) => tanh();
    /// The logistic function `1 / (1 + e^-x)` elementwise.
    fn sigmoid(&self) => sigmoid();
    /// `max(x, 0)` elementwise (gradient 0 at 0).
    fn relu(&self) => relu();
    /// Gaussian error linear unit (tanh approximation).
    fn gelu(&self) => gelu();
    /// The sine elementwise (radians).
    fn sin(&self) => sin();
    /// The cosine elementwise (radians).
    fn cos(&self) => cos();
    /// Matrix product over the last two axes, batch axes broadcast.
    fn matmul(&self, rhs: &Tensor) => matmul(rhs);
    /// Transpose of the last two axes.
    fn t(&self) => transpose();
    /// Sum of all elements.
    fn sum_all(&self) => sum_all();
    /// Sum along `axis` (negative counts from the end).
    fn sum(&self, axis: isize, keepdim: bool) => sum(axis, keepdim);
    /// Mean of all elements.
    fn mean_all(&self) => mean_all();
    /// Mean along `axis` (negative counts from the end).
    fn mean(&self, axis: isize, keepdim: bool) => mean(axis, keepdim);
    /// Max along `axis`; ties split the gradient equally.
    fn max(&self, axis: isize, keepdim: bool) => max(axis, keepdim);
    /// Min along `axis`; ties split the gradient equally.
    fn min(&self, axis: isize, keepdim: bool) => min(axis, keepdim);
    /// `log Σ exp` along `axis`, computed stably.
    fn logsumexp(&self, axis: isize, keepdim: bool) => logsumexp(axis, keepdim);
    /// Another shape of the same element count.
    fn reshape(&self, shape: impl Into<Shape>) => reshape(shape.into());
    /// Repeated along new leading axes and axes of size 1, to `shape`.
    fn broadcast_to(&self, shape: impl Into<Shape>) => broadcast_to(shape.into());
    /// Axis `i` of the result is axis `dims[i]` of `self`.
    fn permute(&self, dims: &[usize]) => permute(dims.to_vec());
    /// An axis of size 1 inserted at `axis` (-1 appends it).
    fn unsqueeze(&self, axis: isize) => unsqueeze(axis);
    /// Without `axis`, which must have size 1.
    fn squeeze(&self, axis: isize) => squeeze(axis);
    /// Entries `start..start + len` of `axis`.
    fn narrow(&self, axis: isize, start: usize, len: usize) => narrow(axis, start, len);
    /// Zeros before and after along `axis`.
    fn pad(&self, axis: isize, before: usize, after: usize) => pad(axis, before, after);
    /// `self` and `rhs` joined along `axis`.
    fn concat(&self, rhs: &Tensor, axis: isize) => concat(rhs, axis);
    /// The entries `index` (integral floats) of `axis`.
    fn index_select(&self, index: &Tensor, axis: isize) => index_select(index, axis);
    /// Softmax along `axis`, computed stably.
    fn softmax(&self, axis: isize) => softmax(axis);
    /// Log-softmax along `axis`, computed stably.
    fn log_softmax(&self, axis: isize) => log_softmax(axis);
    /// Mean cross-entropy of these `[N, C]` logits against `[N]` class indices.
    fn cross_entropy(&self, targets: &Tensor) => cross_entropy(targets);
    /// Mean squared error against `target` (same shape).
    fn mse_loss(&self, target: &Tensor) => mse_loss(target);
    /// This tensor on `device`, recorded: the gradient flows back to this tensor's
    /// device. `Error::CudaUnavailable` where that GPU is not.
    fn to_device(&self, device: Device) => to_device(device);
    /// Short form of [`TensorExt::to_device`]: `x.to(Device::Cuda(0))`.
    fn to(&self, device: Device) => to_device(device);
}
