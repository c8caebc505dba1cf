//! Devices, and moving tensors between them.

#[cfg(feature = "cuda")]
use crate::Layout;
use crate::storage::{Storage, StorageData};
use crate::{Error, Result, Tensor};
use autograd_kernels::BackendStorage;
#[cfg(feature = "cuda")]
use autograd_kernels::KernelError;
#[cfg(feature = "cuda")]
use autograd_kernels::cuda::{CudaDevice, CudaStorage};
use std::fmt;
#[cfg(feature = "cuda")]
use std::sync::Arc;

/// Where a tensor's storage lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// The host's memory, computed on by the CPU backend.
    #[default]
    Cpu,
    /// A CUDA GPU, by ordinal.
    Cuda(usize),
}

impl Device {
    /// True for [`Device::Cpu`].
    pub fn is_cpu(self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// True for any [`Device::Cuda`], available or not.
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// Index of the device's slot in the memory counters.
    pub(crate) fn slot(self) -> usize {
        match self {
            Device::Cpu => 0,
            Device::Cuda(n) => 1 + n.min(crate::memory::MAX_CUDA_DEVICES - 1),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl Device {
    /// True when tensors can live on this device: always for the CPU; for a CUDA
    /// device, when the driver, NVRTC and the GPU are there (it is opened to check).
    pub fn is_available(self) -> bool {
        match self {
            Device::Cpu => true,
            #[cfg(feature = "cuda")]
            Device::Cuda(n) => autograd_kernels::cuda::is_available(n),
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(_) => false,
        }
    }

    /// Number of CUDA devices this machine has (0 without a driver or a GPU, and
    /// when CUDA support is not compiled in).
    pub fn cuda_device_count() -> usize {
        #[cfg(feature = "cuda")]
        return autograd_kernels::cuda::device_count();
        #[cfg(not(feature = "cuda"))]
        0
    }

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

#[cfg(not(feature = "cuda"))]
fn not_compiled(ordinal: usize) -> Error {
    Error::CudaUnavailable {
        ordinal,
        reason: "this build has no CUDA support (the `cuda` feature of the autograd crates is off)"
            .into(),
    }
}

/// The CUDA device `ordinal`, opened at the first call; its absence is
/// [`Error::CudaUnavailable`].
#[cfg(feature = "cuda")]
fn cuda_device(ordinal: usize) -> Result<Arc<CudaDevice>> {
    autograd_kernels::cuda::device(ordinal).map_err(|e| match e {
        KernelError::CudaUnavailable { ordinal, reason } => {
            Error::CudaUnavailable { ordinal, reason }
        }
        e => Error::Kernel(e),
    })
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
    let storage = match (x.storage().data(), device) {
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
