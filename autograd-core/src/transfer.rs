//! Moving tensors between devices, and waiting for a device.

#[cfg(feature = "cuda")]
use crate::Layout;
#[cfg(feature = "cuda")]
use crate::storage::cuda_device;
#[cfg(not(feature = "cuda"))]
use crate::storage::not_compiled;
use crate::storage::{Storage, StorageData};
use crate::{Device, Error, Result, Tensor};
use autograd_kernels::BackendStorage;
#[cfg(feature = "cuda")]
use autograd_kernels::cuda::CudaStorage;

impl Device {
    /// Waits until the work queued on this device has finished, reporting any
    /// error a kernel ran into. Ops on a GPU return before their kernels finish;
    /// reading a tensor waits anyway, so this is for timing. Nothing to wait for on
    /// the CPU.
    pub fn synchronize(self) -> Result<()> {
        match self {
            Device::Cpu => Ok(()),
            #[cfg(feature = "cuda")]
            Device::Cuda(n) => Ok(cuda_device(n)?.synchronize()?),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(n) => Err(not_compiled(n)),
        }
    }
}

/// `x`'s values on `device`, as a new tensor outside any graph (unrecorded: the
/// differentiable form is the standard op `to_device`). `x` itself when it already
/// lives there. A strided view arrives contiguous. Between two GPUs the copy goes
/// through the host.
pub fn to_device(x: &Tensor, device: Device) -> Result<Tensor> {
    if x.device() == device {
        return Ok(x.clone());
    }
    // A buffer that cannot be allocated (on the host or the device) is named with
    // the tensor it was for.
    let err = |on: Device| move |e| Error::from_kernel(e, "to_device", x.shape(), x.dtype(), on);
    let storage = match (x.storage().data()?, device) {
        (StorageData::Cpu(s), Device::Cpu) => {
            // Unreachable (same device), but cheap to handle.
            Storage::cpu(s.cast(x.layout(), x.dtype()).map_err(err(Device::Cpu))?)
        }
        #[cfg(feature = "cuda")]
        (StorageData::Cpu(s), Device::Cuda(n)) => {
            let dev = cuda_device(n)?;
            let data = CudaStorage::from_cpu(&dev, s, x.layout()).map_err(err(device))?;
            Storage::new(StorageData::Cuda(data), device)
        }
        #[cfg(feature = "cuda")]
        (StorageData::Cuda(s), Device::Cpu) => {
            Storage::cpu(s.to_cpu(x.layout()).map_err(err(Device::Cpu))?)
        }
        #[cfg(feature = "cuda")]
        (StorageData::Cuda(s), Device::Cuda(n)) => {
            let dev = cuda_device(n)?;
            let host = s.to_cpu(x.layout()).map_err(err(Device::Cpu))?;
            let dense = Layout::contiguous(x.shape().clone());
            Storage::new(
                StorageData::Cuda(CudaStorage::from_cpu(&dev, &host, &dense).map_err(err(device))?),
                device,
            )
        }
        #[cfg(not(feature = "cuda"))]
        (_, Device::Cuda(n)) => return Err(not_compiled(n)),
    };
    Ok(Tensor::from_storage(storage, x.shape().clone()))
}
