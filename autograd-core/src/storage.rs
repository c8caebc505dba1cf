//! Device storage: one buffer behind reference counting, dispatched to the backend
//! of the device it lives on, and counted in [`crate::memory`] from allocation to
//! the drop of its last handle.

use crate::accounting as memory;
use crate::{DType, Device, Error, Result, Shape};
use autograd_kernels::cpu::{self, CpuElement, CpuStorage};
#[cfg(feature = "cuda")]
use autograd_kernels::cuda::CudaStorage;
use autograd_kernels::{BackendStorage, BinaryOp, KernelError, Layout, ReduceOp, UnaryOp};

pub(crate) enum StorageData {
    Cpu(CpuStorage),
    #[cfg(feature = "cuda")]
    Cuda(CudaStorage),
}

/// A buffer on one device. Shared by every tensor that views it (`Arc<Storage>`)
/// and freed exactly once, when the last of them goes.
pub struct Storage {
    data: StorageData,
    device: Device,
    bytes: usize,
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.release();
    }
}

impl Storage {
    /// Frees the buffer now, as dropping the storage would, and leaves an empty CPU
    /// storage of 0 bytes behind (a block kept for reuse by a later tensor).
    pub(crate) fn release(&mut self) {
        memory::on_free(self.device, self.bytes);
        self.bytes = 0;
        self.device = Device::Cpu;
        let data = std::mem::replace(
            &mut self.data,
            StorageData::Cpu(CpuStorage::F32(Vec::new())),
        );
        // A CPU buffer goes to the thread's cache of freed buffers, so that the next
        // step's tensors of the same size reuse it instead of faulting in new pages.
        match data {
            StorageData::Cpu(s) => cpu::pool::recycle(s),
            #[allow(unreachable_patterns)]
            other => drop(other),
        }
    }
}

macro_rules! with_backend {
    ($self:expr, $s:ident => $body:expr) => {
        match &$self.data {
            StorageData::Cpu($s) => $body,
            #[cfg(feature = "cuda")]
            StorageData::Cuda($s) => $body,
        }
    };
}

/// A new storage on `$self`'s device from a backend call (`$body` returns the
/// backend's buffer type, the same expression for every backend).
macro_rules! map_backend {
    ($self:expr, $s:ident => $body:expr) => {
        Ok($self.like(match &$self.data {
            StorageData::Cpu($s) => StorageData::Cpu($body),
            #[cfg(feature = "cuda")]
            StorageData::Cuda($s) => StorageData::Cuda($body),
        }))
    };
}

macro_rules! with_backends {
    ($op:expr, $a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr) => {
        match (&$a.data, &$b.data) {
            (StorageData::Cpu($x), StorageData::Cpu($y)) => Ok($a.like(StorageData::Cpu($body))),
            #[cfg(feature = "cuda")]
            (StorageData::Cuda($x), StorageData::Cuda($y)) => Ok($a.like(StorageData::Cuda($body))),
            #[allow(unreachable_patterns)]
            _ => Err(Error::DeviceMismatch {
                op: $op,
                lhs: $a.device,
                rhs: $b.device,
            }),
        }
    };
}

impl Storage {
    pub(crate) fn new(data: StorageData, device: Device) -> Storage {
        let bytes = match &data {
            StorageData::Cpu(s) => s.len() * s.dtype().size_in_bytes(),
            #[cfg(feature = "cuda")]
            StorageData::Cuda(s) => s.len() * s.dtype().size_in_bytes(),
        };
        memory::on_alloc(device, bytes);
        Storage {
            data,
            device,
            bytes,
        }
    }

    pub(crate) fn cpu(data: CpuStorage) -> Storage {
        Storage::new(StorageData::Cpu(data), Device::Cpu)
    }

    fn like(&self, data: StorageData) -> Storage {
        Storage::new(data, self.device)
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Element type of the buffer.
    pub fn dtype(&self) -> DType {
        with_backend!(self, s => s.dtype())
    }

    /// Bytes of the buffer.
    pub fn size_in_bytes(&self) -> usize {
        self.bytes
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        with_backend!(self, s => s.len())
    }

    /// True for a buffer of no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CPU buffer, when the storage lives on the CPU.
    pub fn as_cpu(&self) -> Option<&CpuStorage> {
        match &self.data {
            StorageData::Cpu(s) => Some(s),
            #[cfg(feature = "cuda")]
            StorageData::Cuda(_) => None,
        }
    }

    pub(crate) fn data(&self) -> &StorageData {
        &self.data
    }

    /// `e` from a backend call of `op` building a `dtype` result of `shape` on this
    /// storage's device (see [`Error::from_kernel`]).
    fn err(
        &self,
        op: &'static str,
        shape: &Shape,
        dtype: DType,
    ) -> impl FnOnce(KernelError) -> Error {
        let device = self.device;
        move |e| Error::from_kernel(e, op, shape, dtype, device)
    }

    pub(crate) fn unary(&self, l: &Layout, op: UnaryOp) -> Result<Storage> {
        let dtype = self.dtype();
        map_backend!(self, s => s.unary(l, op).map_err(self.err(op.name(), l.shape(), dtype))?)
    }

    pub(crate) fn binary(
        &self,
        l: &Layout,
        rhs: &Storage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<Storage> {
        let err = || self.err(op.name(), l.shape(), self.dtype());
        with_backends!(op.name(), self, rhs, (a, b) => a.binary(l, b, rl, op).map_err(err())?)
    }

    pub(crate) fn binary_assign(
        &mut self,
        l: &Layout,
        rhs: &Storage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        let (device, rdevice) = (self.device, rhs.device);
        match (&mut self.data, &rhs.data) {
            (StorageData::Cpu(a), StorageData::Cpu(b)) => Ok(a.binary_assign(l, b, rl, op)?),
            #[cfg(feature = "cuda")]
            (StorageData::Cuda(a), StorageData::Cuda(b)) => Ok(a.binary_assign(l, b, rl, op)?),
            #[allow(unreachable_patterns)]
            _ => Err(Error::DeviceMismatch {
                op: op.name(),
                lhs: device,
                rhs: rdevice,
            }),
        }
    }

    pub(crate) fn reduce(&self, l: &Layout, op: ReduceOp, axes: &[usize]) -> Result<Storage> {
        let err = |e: KernelError| {
            let mut shape = l.shape().clone();
            for &a in axes {
                if let Some(d) = shape.dims_mut().get_mut(a) {
                    *d = 1;
                }
            }
            self.err(op.name(), &shape, self.dtype())(e)
        };
        map_backend!(self, s => s.reduce(l, op, axes).map_err(err)?)
    }

    pub(crate) fn matmul(&self, l: &Layout, rhs: &Storage, rl: &Layout) -> Result<Storage> {
        // `[batch.., m, k] @ [batch.., k, n]` is `[batch.., m, n]`.
        let err = || {
            move |e: KernelError| {
                let mut shape = l.shape().clone();
                if let (Some(last), Some(&n)) = (shape.dims_mut().last_mut(), rl.shape().last()) {
                    *last = n;
                }
                self.err("matmul", &shape, self.dtype())(e)
            }
        };
        with_backends!("matmul", self, rhs, (a, b) => a.matmul(l, b, rl).map_err(err())?)
    }

    pub(crate) fn copy_into(
        &self,
        l: &Layout,
        dst: &mut Storage,
        dl: &Layout,
        accumulate: bool,
    ) -> Result<()> {
        let (device, ddevice) = (self.device, dst.device);
        match (&self.data, &mut dst.data) {
            (StorageData::Cpu(s), StorageData::Cpu(d)) => Ok(s.copy_into(l, d, dl, accumulate)?),
            #[cfg(feature = "cuda")]
            (StorageData::Cuda(s), StorageData::Cuda(d)) => Ok(s.copy_into(l, d, dl, accumulate)?),
            #[allow(unreachable_patterns)]
            _ => Err(Error::DeviceMismatch {
                op: "copy",
                lhs: device,
                rhs: ddevice,
            }),
        }
    }

    pub(crate) fn cast(&self, l: &Layout, dtype: DType) -> Result<Storage> {
        map_backend!(self, s => s.cast(l, dtype).map_err(self.err("cast", l.shape(), dtype))?)
    }

    /// A fresh buffer for a tensor of `shape` (the result of `op`), every element
    /// `value`, on this storage's device.
    pub(crate) fn filled_like(
        &self,
        op: &'static str,
        shape: &Shape,
        dtype: DType,
        value: f64,
    ) -> Result<Storage> {
        let len = shape.numel();
        map_backend!(self, s => s.filled_like(len, dtype, value).map_err(self.err(op, shape, dtype))?)
    }

    /// The elements of the view `l`, in logical order, converted to `T`, on the host.
    pub(crate) fn to_vec<T: CpuElement>(&self, l: &Layout) -> Result<Vec<T>> {
        let host =
            |e: KernelError| Error::from_kernel(e, "to_vec", l.shape(), T::DTYPE, Device::Cpu);
        match &self.data {
            StorageData::Cpu(s) => s.to_vec(l).map_err(host),
            #[cfg(feature = "cuda")]
            StorageData::Cuda(s) => {
                let dense = s.to_cpu(l).map_err(host)?;
                dense
                    .to_vec(&Layout::contiguous(l.shape().clone()))
                    .map_err(host)
            }
        }
    }
}

/// Checks that a tensor of `shape` and `dtype` can exist: its size in bytes fits in
/// `isize::MAX`, as every Rust allocation must, and so does the product of its
/// non-zero sizes (an empty tensor's strides are computed from them too). Every
/// shape that comes from an argument rather than from an existing tensor is checked
/// here before anything is computed from it, so no view or result ever has a size
/// that overflows (an error, where allocating it would panic or abort).
pub fn check_size(op: &'static str, shape: &Shape, dtype: DType) -> Result<()> {
    let bytes = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d.max(1)))
        .and_then(|n| n.checked_mul(dtype.size_in_bytes()));
    match bytes {
        Some(b) if b <= isize::MAX as usize => Ok(()),
        _ => Err(Error::Shape {
            op,
            msg: format!(
                "a {dtype} tensor of shape {shape} would take more bytes than any buffer can \
                 hold ({} max); check the sizes passed to the op",
                isize::MAX
            ),
        }),
    }
}
