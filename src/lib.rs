//! Reverse-mode automatic differentiation in which every op is defined once.
//!
//! An op is an inline module under `#[differentiable]` holding its `forward` and
//! `backward` side by side. The macro generates everything else: the
//! [`Differentiable`] implementation, a typed function, the registry entry, and the
//! flags that say which inputs backward reads, so the recorded graph keeps exactly
//! those alive and nothing else.
//!
//! ```
//! use autograd::prelude::*;
//!
//! /// `x * x * x`, defined with its derivative.
//! #[differentiable]
//! mod cube {
//!     use autograd::prelude::*;
//!
//!     pub fn forward(x: &Tensor) -> Result<Tensor> {
//!         &(x * x)? * x
//!     }
//!
//!     /// d/dx x³ = 3x²: backward reads `x`, so the graph saves `x` (and nothing else).
//!     pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
//!         grad * &((x * x)? * 3.0)?
//!     }
//! }
//!
//! fn main() -> Result<()> {
//!     autograd::init()?;
//!     let x = Tensor::scalar(2.0f32).set_requires_grad(true);
//!     let y = cube(&x)?;
//!     y.backward()?;
//!     assert_eq!(y.to_scalar::<f32>()?, 8.0);
//!     assert_eq!(x.grad().unwrap().to_scalar::<f32>()?, 12.0);
//!     Ok(())
//! }
//! ```

pub use autograd_core::*;
pub use autograd_macros::differentiable;
pub use autograd_ops as ops;
pub use autograd_ops::*;

/// Links the standard op library and checks the op registry (every standard op
/// present, no name defined twice). Call it once before using tensors: programs,
/// tests and benches that skip it may find the registry empty, because a crate that
/// nothing references is not linked.
pub fn init() -> Result<&'static OpRegistry> {
    autograd_ops::init()
}

/// What most programs need: `use autograd::prelude::*;`.
pub mod prelude {
    pub use crate::differentiable;
    pub use autograd_core::{
        BackwardOptions, CheckCase, DType, Device, Error, Result, Shape, Tensor, grad, grad_if,
        no_grad, random::Rng,
    };
    pub use autograd_ops::TensorExt;
}
