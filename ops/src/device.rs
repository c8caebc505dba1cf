//! Moving tensors between devices, differentiably.

use autograd_core::{CheckCase, DType, Device, Error, Result, Tensor, compute, random::Rng};
use autograd_macros::differentiable;

/// `x` copied from device `from` (where it lives) to device `to`; the gradient
/// goes back to `from`. Call it through [`to_device`], which fills in `from`.
#[differentiable(name = "to_device", crate = ::autograd_core)]
pub mod transfer {
    use super::*;

    /// The two devices.
    #[derive(Clone, Copy, Debug)]
    pub struct Transfer {
        /// The device the result lives on.
        pub to: Device,
        /// The device `x` lives on (checked); the gradient goes back there.
        pub from: Device,
    }

    /// `x`'s values copied to `to` (`x` itself when it is already there). An error when
    /// `x` does not live on `from`, or `Error::CudaUnavailable` when `to` is a GPU that
    /// cannot be used.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.device() != self.from {
            return Err(Error::InvalidArgument {
                op: "to_device",
                msg: format!(
                    "asked to move a tensor from {}, but it lives on {}",
                    self.from,
                    x.device()
                ),
            });
        }
        compute::to_device(x, self.to)
    }

    /// The gradient arrives on `to` and goes back to `from`.
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        transfer(grad, self.from, self.to)
    }

    /// Gradcheck input: a `[2, 3]` tensor moved onto the device it already lives on, so
    /// that the case runs on any machine.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = Rng::new(51)
            .uniform([2, 3], -1.0, 1.0, DType::F64)
            .unwrap_or_else(|_| autograd_core::cases::fallback(&[2, 3], 1.0));
        // Onto the device the input already lives on (whichever that is), so the
        // case runs anywhere; the GPU tests cover the moves between devices.
        vec![CheckCase::new("to_device (same device)", vec![x], |x| {
            to_device(&x[0], x[0].device())
        })]
    }
}

/// `x` on `device`, recorded: the gradient flows back to `x`'s device. `x` itself
/// (as a new graph node) when it is already there. On a machine without a GPU,
/// asking for `Device::Cuda(..)` is `Error::CudaUnavailable`.
///
/// ```
/// use autograd_core::{Device, Error, Result, Tensor};
/// use autograd_ops::methods::*;
/// # fn main() -> Result<()> {
/// autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0], [2])?.with_requires_grad(true);
/// match x.to_device(Device::Cuda(0)) {
///     Ok(on_gpu) => {
///         on_gpu.sum_all()?.backward()?;
///         assert_eq!(x.grad().unwrap().device(), Device::Cpu);
///     }
///     Err(Error::CudaUnavailable { .. }) => {} // no GPU here
///     Err(e) => return Err(e),
/// }
/// # Ok(())
/// # }
/// ```
pub fn to_device(x: &Tensor, device: Device) -> Result<Tensor> {
    transfer(x, device, x.device()).map_err(|e| match e.root_cause() {
        // Says all there is to say on its own; easier to match without the wrapper.
        unavailable @ Error::CudaUnavailable { .. } => unavailable.clone(),
        _ => e,
    })
}
