//! Devices: where a tensor's buffer lives.

use std::fmt;

/// CUDA devices the process keeps separate memory counts for (higher ordinals share
/// the last count).
pub(crate) const MAX_CUDA_DEVICES: usize = 16;

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
            Device::Cuda(n) => 1 + n.min(MAX_CUDA_DEVICES - 1),
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
}
