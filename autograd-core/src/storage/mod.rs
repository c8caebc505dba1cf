//! Device storage: one buffer behind reference counting, dispatched to the backend
//! of the device it lives on, and counted in [`crate::memory`] from allocation to
//! the drop of its last handle.

use crate::accounting as memory;
pub(crate) mod deferred;

use crate::{DType, Device, Error, Result, Shape};
use autograd_kernels::cpu::{self, CpuElement, CpuStorage};
#[cfg(feature = "cuda")]
use autograd_kernels::cuda::CudaStorage;
use autograd_kernels::{BackendStorage, BinaryOp, KernelError, Layout, ReduceOp, UnaryOp};
use deferred::Pending;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub(crate) enum StorageData {
    Cpu(CpuStorage),
    #[cfg(feature = "cuda")]
    Cuda(CudaStorage),
}

/// A buffer on one device. Shared by every tensor that views it (`Arc<Storage>`)
/// and freed exactly once, when the last of them goes.
///
/// A storage may be *deferred* (see [`crate::fusion`]): its values are an
/// elementwise op of other storages that has not run yet. Everything known without
/// the values (device, dtype, length) is known at once; the first read of the
/// values runs the op, with the deferred ops it reads fused into one pass, and
/// keeps the result. Until then it holds no buffer (0 bytes).
pub struct Storage {
    /// The values (for a deferred storage, an empty placeholder until they are
    /// computed and moved here by a write).
    data: StorageData,
    /// Set while the values are deferred, or were computed from a deferred op and
    /// not yet moved to `data`. `None` for every storage computed at its op's call:
    /// those pay one pointer test per read.
    deferred: Option<Box<Deferred>>,
    device: Device,
    dtype: DType,
    len: usize,
    bytes: AtomicUsize,
}

/// A deferred storage's op, and its values once computed.
struct Deferred {
    /// The op to run, until it has run.
    pending: Mutex<Option<Pending>>,
    values: OnceLock<StorageData>,
    /// The storages computed with this one when the first of them is read (see
    /// [`Storage::read_together`]).
    group: OnceLock<Arc<Group>>,
}

/// Deferred storages that are computed together, in one pass where they can be
/// (`Storage::realize_all`), when the first of them is read: a loss and the
/// gradients its backward left in the leaves.
struct Group(Mutex<Vec<Weak<Storage>>>);

impl Drop for Storage {
    fn drop(&mut self) {
        self.release();
    }
}

impl Storage {
    /// An empty CPU storage of 0 bytes: what [`Storage::release`] leaves, for a
    /// block kept for reuse.
    pub(crate) fn empty() -> Storage {
        Storage::new(StorageData::Cpu(CpuStorage::F32(Vec::new())), Device::Cpu)
    }

    /// Frees the buffer now, as dropping the storage would, and leaves an empty CPU
    /// storage of 0 bytes behind (a block kept for reuse by a later tensor).
    #[inline]
    pub(crate) fn release(&mut self) {
        memory::on_free(self.device, *self.bytes.get_mut());
        *self.bytes.get_mut() = 0;
        self.device = Device::Cpu;
        self.dtype = DType::F32;
        self.len = 0;
        if let Some(d) = self.deferred.take()
            && let Some(values) = d.values.into_inner()
        {
            recycle(values);
        }
        recycle(std::mem::replace(
            &mut self.data,
            StorageData::Cpu(CpuStorage::F32(Vec::new())),
        ));
    }
}

/// Frees a buffer: a CPU one goes to the thread's cache of freed buffers, so that
/// the next step's tensors of the same size reuse it instead of faulting in new
/// pages.
#[inline]
fn recycle(data: StorageData) {
    match data {
        StorageData::Cpu(s) => cpu::pool::recycle(s),
        #[allow(unreachable_patterns)]
        other => drop(other),
    }
}

macro_rules! map_backend {
    ($self:expr, $s:ident => $body:expr) => {
        Ok($self.like(match $self.data()? {
            StorageData::Cpu($s) => StorageData::Cpu($body),
            #[cfg(feature = "cuda")]
            StorageData::Cuda($s) => StorageData::Cuda($body),
        }))
    };
}

macro_rules! with_backends {
    ($op:expr, $a:expr, $b:expr, ($x:ident, $y:ident) => $body:expr) => {
        match ($a.data()?, $b.data()?) {
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
        let (dtype, len) = match &data {
            StorageData::Cpu(s) => (s.dtype(), s.len()),
            #[cfg(feature = "cuda")]
            StorageData::Cuda(s) => (s.dtype(), s.len()),
        };
        let bytes = len * dtype.size_in_bytes();
        memory::on_alloc(device, bytes);
        Storage {
            data,
            deferred: None,
            device,
            dtype,
            len,
            bytes: AtomicUsize::new(bytes),
        }
    }

    /// A storage of `len` elements of `dtype` on `device` whose values `pending`
    /// computes when first read.
    pub(crate) fn deferred(pending: Pending, device: Device, dtype: DType, len: usize) -> Storage {
        Storage {
            data: StorageData::Cpu(CpuStorage::F32(Vec::new())),
            deferred: Some(Box::new(Deferred {
                pending: Mutex::new(Some(pending)),
                values: OnceLock::new(),
                group: OnceLock::new(),
            })),
            device,
            dtype,
            len,
            bytes: AtomicUsize::new(0),
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
        self.dtype
    }

    /// Bytes of the buffer (0 while the values are deferred).
    pub fn size_in_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a buffer of no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True while the values are deferred: an elementwise op not run yet.
    #[inline]
    pub fn is_deferred(&self) -> bool {
        self.deferred
            .as_ref()
            .is_some_and(|d| d.values.get().is_none())
    }

    /// The CPU buffer, when the storage lives on the CPU (computed first if it was
    /// deferred; `None` if that fails, which only running out of memory does).
    pub fn as_cpu(&self) -> Option<&CpuStorage> {
        match self.data().ok()? {
            StorageData::Cpu(s) => Some(s),
            #[cfg(feature = "cuda")]
            StorageData::Cuda(_) => None,
        }
    }

    /// The values, computed first if they were deferred.
    #[inline(always)]
    pub(crate) fn data(&self) -> Result<&StorageData> {
        match &self.deferred {
            None => Ok(&self.data),
            Some(d) => match d.values.get() {
                Some(v) => Ok(v),
                None => self.force(d),
            },
        }
    }

    /// The values, mutably (computed first if they were deferred, and then kept as
    /// an ordinary storage's).
    #[inline(always)]
    fn data_mut(&mut self) -> Result<&mut StorageData> {
        if self.deferred.is_some() {
            self.data()?;
            if let Some(values) = self.deferred.take().and_then(|d| d.values.into_inner()) {
                self.data = values;
            }
        }
        Ok(&mut self.data)
    }

    /// The deferred op, if the values are still deferred: what a chain being
    /// planned reads through this storage.
    pub(crate) fn pending(&self) -> Option<Pending> {
        self.with_pending(Pending::clone)
    }

    /// The deferred op's depth and size (see `fusion::defer`); zeros when the values
    /// are there.
    pub(crate) fn chain(&self) -> (u32, u32) {
        self.with_pending(Pending::chain).unwrap_or((0, 0))
    }

    /// `f` of the deferred op, while the values are deferred (under its lock: no
    /// copy of the op and what it reads).
    fn with_pending<R>(&self, f: impl FnOnce(&Pending) -> R) -> Option<R> {
        let d = self.deferred.as_ref()?;
        if d.values.get().is_some() {
            return None;
        }
        d.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(f)
    }

    /// Where the deferred op records the kernel it runs in (`None` when the values
    /// were not deferred, or are computed already).
    pub(crate) fn fusion_mark(&self) -> Option<Arc<deferred::Mark>> {
        self.with_pending(|p| p.mark.clone())
    }

    /// Runs the deferred op (with the deferred ops it reads, fused) and keeps the
    /// values. Another thread may be computing the same values: the first to finish
    /// keeps them.
    #[cold]
    fn force<'a>(&'a self, d: &'a Deferred) -> Result<&'a StorageData> {
        // The first member of a group to be read computes the whole group (the
        // members are taken out first: a member read while the group is computed
        // is computed on its own).
        if let Some(group) = d.group.get() {
            let members: Vec<Arc<Storage>> =
                std::mem::take(&mut *group.0.lock().unwrap_or_else(|e| e.into_inner()))
                    .iter()
                    .filter_map(Weak::upgrade)
                    .collect();
            if members.len() > 1 {
                let mut all: Vec<&Storage> = members.iter().map(|m| &**m).collect();
                if !all.iter().any(|m| std::ptr::eq(*m, self)) {
                    all.push(self);
                }
                Storage::realize_all(&all)?;
            }
        }
        let pending = d.pending.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(p) = pending {
            let data = deferred::evaluate(&p, self.len, self.dtype)?;
            self.settle(d, data);
        }
        d.values
            .get()
            .ok_or_else(|| deferred::lost(self.len, self.dtype))
    }

    /// Computes the deferred values of all of `storages` (those not deferred, or
    /// computed already, are left as they are). Deferred storages over the same
    /// number of elements, dtype and device run in one pass, reading the leaves
    /// they share once (on a GPU, one kernel with several results, as many as fit
    /// one: see `deferred::evaluate_many`). The deferred sums they read are among
    /// them (a loss `sum(y) / n` reads its sum, which runs with the rest), and
    /// longer chains run first, so what a short one reads is there when it runs.
    pub(crate) fn realize_all(storages: &[&Storage]) -> Result<()> {
        let mut sums = Vec::new();
        for s in storages {
            s.with_pending(|p| deferred::sums_read(p, &mut sums));
        }
        // Deferred storages by (elements, dtype, device), with their ops: one pass
        // each.
        type Pass<'a> = ((usize, DType, Device), Vec<(&'a Storage, Pending)>);
        let mut passes: Vec<Pass> = Vec::new();
        for s in storages.iter().copied().chain(sums.iter().map(|s| &**s)) {
            let Some(p) = s.pending() else { continue };
            let len = p.sum_of.as_ref().map_or(s.len, |(n, _)| *n);
            let key = (len, s.dtype, s.device);
            match passes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => {
                    if !g.iter().any(|(t, _)| std::ptr::eq(*t, s)) {
                        g.push((s, p));
                    }
                }
                None => passes.push((key, vec![(s, p)])),
            }
        }
        passes.sort_by_key(|((len, _, _), _)| std::cmp::Reverse(*len));
        for ((len, dtype, _), group) in passes {
            if let [(s, _)] = group[..] {
                s.data()?;
                continue;
            }
            let roots: Vec<(*const Storage, &Pending)> = group
                .iter()
                .map(|(s, p)| (*s as *const Storage, p))
                .collect();
            let values = deferred::evaluate_many(&roots, len, dtype)?;
            for ((s, _), data) in group.iter().zip(values) {
                if let Some(d) = &s.deferred {
                    s.settle(d, data);
                }
            }
        }
        Ok(())
    }

    /// Makes the deferred storages of `storages` a group: the first of them to
    /// be read computes them all, with [`Storage::realize_all`]. Backward groups
    /// the loss with the gradients it leaves, so that whichever is read first (the
    /// loss, printed, or a gradient, read by an optimizer) runs the loss and the
    /// gradients as one pass over their inputs, as `fusion::realize_all` would.
    /// Fewer than two deferred storages make no group; a storage joins one group
    /// at most.
    pub(crate) fn read_together(storages: &[Arc<Storage>]) {
        let members: Vec<&Arc<Storage>> = storages
            .iter()
            .filter(|s| {
                s.is_deferred() && s.deferred.as_ref().is_some_and(|d| d.group.get().is_none())
            })
            .collect();
        if members.len() < 2 {
            return;
        }
        let group = Arc::new(Group(Mutex::new(
            members.iter().map(|s| Arc::downgrade(s)).collect(),
        )));
        for s in members {
            if let Some(d) = &s.deferred {
                let _ = d.group.set(group.clone());
            }
        }
    }

    /// Keeps `data`, the deferred values computed, unless another thread kept its
    /// own first; then the op is no longer pending.
    fn settle(&self, d: &Deferred, data: StorageData) {
        let bytes = self.len * self.dtype.size_in_bytes();
        if d.values.set(data).is_ok() {
            memory::on_alloc(self.device, bytes);
            self.bytes.store(bytes, Ordering::Relaxed);
            *d.pending.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// The CUDA kernel the deferred chain ending here runs as on a GPU (its name and
    /// source); `None` when the values are not deferred.
    #[cfg(feature = "cuda")]
    pub(crate) fn fused_cuda_source(&self) -> Option<Result<(String, String)>> {
        let p = self.pending()?;
        Some(deferred::cuda_source(&p, self.len, self.dtype))
    }

    /// The sum of all the values, where they are deferred: itself deferred, it runs
    /// the chain with the sum at its end when read, and nothing is stored. `None`
    /// when the values are not deferred.
    pub(crate) fn fused_sum(&self) -> Option<Storage> {
        let p = self.pending()?;
        let sum = deferred::sum(&p, self.len)?;
        Some(Storage::deferred(sum, self.device, self.dtype, 1))
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

    #[inline]
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

    #[inline]
    pub(crate) fn binary_assign(
        &mut self,
        l: &Layout,
        rhs: &Storage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        let (device, rdevice) = (self.device, rhs.device);
        match (self.data_mut()?, rhs.data()?) {
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
        match (self.data()?, dst.data_mut()?) {
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
        let err = self.err(op, shape, dtype);
        // A fill needs the device, never the values: a deferred storage stays
        // deferred (backward's seed for a deferred loss).
        match self.device {
            Device::Cpu => {
                let data = CpuStorage::F32(Vec::new())
                    .filled_like(len, dtype, value)
                    .map_err(err)?;
                Ok(Storage::cpu(data))
            }
            #[cfg(feature = "cuda")]
            Device::Cuda(n) => {
                let dev = crate::transfer::cuda_device(n)?;
                let data = CudaStorage::filled(&dev, len, dtype, value).map_err(err)?;
                Ok(Storage::new(StorageData::Cuda(data), self.device))
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(n) => Err(crate::transfer::not_compiled(n)),
        }
    }

    /// The elements of the view `l`, in logical order, converted to `T`, on the host.
    pub(crate) fn to_vec<T: CpuElement>(&self, l: &Layout) -> Result<Vec<T>> {
        let host =
            |e: KernelError| Error::from_kernel(e, "to_vec", l.shape(), T::DTYPE, Device::Cpu);
        match self.data()? {
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
