//! Device storage: one buffer behind reference counting, dispatched to the backend
//! of the device it lives on, and counted in [`crate::memory`] from allocation to
//! the drop of its last handle.

use crate::accounting as memory;

use crate::{DType, Device, Error, Result, Shape};
use autograd_kernels::cpu::{self, CpuElement, CpuStorage};
#[cfg(feature = "cuda")]
use autograd_kernels::cuda::CudaStorage;
use autograd_kernels::program::Step;
use autograd_kernels::{BackendStorage, BinaryOp, KernelError, Layout, ReduceOp, UnaryOp};
use smallvec::SmallVec;
use std::any::Any;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
    deferred: Option<Box<Lazy>>,
    device: Device,
    dtype: DType,
    len: usize,
    bytes: AtomicUsize,
    /// Set as a weak handle of the storage is made (`spare::downgrade`: a fused
    /// group's member, `fusion::read_together`), cleared when `Arc::get_mut` finds none left (see
    /// `spare::unique`).
    weak_made: AtomicBool,
}

/// Values computed at their first read: what computes them (a deferred
/// elementwise chain: see [`crate::fusion`]), and the values once computed.
pub(crate) struct Lazy {
    values: OnceLock<StorageData>,
    recipe: Box<dyn Recipe>,
}

/// What computes a lazy storage's values (made by [`crate::fusion`]).
pub(crate) trait Recipe: Send + Sync {
    /// Computes the values of `storage`, whose recipe this is, and keeps them
    /// ([`Storage::settle`]).
    fn compute(&self, storage: &Storage) -> Result<()>;

    /// The recipe, for the module that made it to see its own type.
    fn as_any(&self) -> &dyn Any;
}

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

impl crate::spare::WeakMarked for Storage {
    fn weak_flag(&self) -> &AtomicBool {
        &self.weak_made
    }
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
            weak_made: AtomicBool::new(false),
        }
    }

    /// A storage of `len` elements of `dtype` on `device` whose values `recipe`
    /// computes when first read; 0 bytes until then.
    pub(crate) fn lazy(
        recipe: Box<dyn Recipe>,
        device: Device,
        dtype: DType,
        len: usize,
    ) -> Storage {
        Storage {
            data: StorageData::Cpu(CpuStorage::F32(Vec::new())),
            deferred: Some(Box::new(Lazy {
                values: OnceLock::new(),
                recipe,
            })),
            device,
            dtype,
            len,
            bytes: AtomicUsize::new(0),
            weak_made: AtomicBool::new(false),
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

    /// The recipe of the values, while they are deferred.
    pub(crate) fn recipe(&self) -> Option<&dyn Recipe> {
        let d = self.deferred.as_ref()?;
        d.values.get().is_none().then_some(&*d.recipe)
    }

    /// Runs the recipe, which keeps the values.
    #[cold]
    fn force<'a>(&'a self, d: &'a Lazy) -> Result<&'a StorageData> {
        d.recipe.compute(self)?;
        d.values.get().ok_or_else(|| lost(self.len, self.dtype))
    }

    /// Keeps `data`, the deferred values computed, unless values were kept first
    /// (by another thread computing them too): `true` when these were kept.
    pub(crate) fn settle(&self, data: StorageData) -> bool {
        let Some(d) = &self.deferred else {
            return false;
        };
        let bytes = self.len * self.dtype.size_in_bytes();
        let kept = d.values.set(data).is_ok();
        if kept {
            memory::on_alloc(self.device, bytes);
            self.bytes.store(bytes, Ordering::Relaxed);
        }
        kept
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
                let dev = cuda_device(n)?;
                let data = CudaStorage::filled(&dev, len, dtype, value).map_err(err)?;
                Ok(Storage::new(StorageData::Cuda(data), self.device))
            }
            #[cfg(not(feature = "cuda"))]
            Device::Cuda(n) => Err(not_compiled(n)),
        }
    }

    /// Runs `program` on the device of `inputs` (each storage with the layout the
    /// program reads it through), computing deferred inputs first, and returns its
    /// results' buffers. Every input must be on the first one's device (else
    /// [`Error::DeviceMismatch`] naming `op`); a backend error goes through `err`.
    /// With no input the program runs on the CPU. The one place a program meets a
    /// device's buffers.
    pub(crate) fn run<'a, P: Program>(
        op: &'static str,
        program: &P,
        inputs: impl IntoIterator<Item = (&'a Storage, &'a Layout)>,
        err: impl FnOnce(KernelError) -> Error,
    ) -> Result<SmallVec<[StorageData; 1]>> {
        let mut inputs = inputs.into_iter();
        let Some((first, layout)) = inputs.next() else {
            let outs = program.run::<CpuStorage>(&[]).map_err(err)?;
            return Ok(outs.into_iter().map(StorageData::Cpu).collect());
        };
        let device = first.device;
        match first.data()? {
            StorageData::Cpu(c) => {
                let ins = operands(op, device, (c, layout), inputs, |d| match d {
                    StorageData::Cpu(c) => Some(c),
                    #[cfg(feature = "cuda")]
                    StorageData::Cuda(_) => None,
                })?;
                let outs = program.run(&ins).map_err(err)?;
                Ok(outs.into_iter().map(StorageData::Cpu).collect())
            }
            #[cfg(feature = "cuda")]
            StorageData::Cuda(c) => {
                let ins = operands(op, device, (c, layout), inputs, |d| match d {
                    StorageData::Cuda(c) => Some(c),
                    StorageData::Cpu(_) => None,
                })?;
                let outs = program.run(&ins).map_err(err)?;
                Ok(outs.into_iter().map(StorageData::Cuda).collect())
            }
        }
    }

    /// Whether `device` runs a program of `steps` over `leaves` leaves with
    /// `results` results as one pass (see `BackendStorage::fused_fits`).
    pub(crate) fn fused_fits(
        device: Device,
        steps: &[Step],
        leaves: usize,
        results: usize,
    ) -> bool {
        match device {
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => CudaStorage::fused_fits(steps, leaves, results),
            _ => CpuStorage::fused_fits(steps, leaves, results),
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

#[cfg(not(feature = "cuda"))]
pub(crate) fn not_compiled(ordinal: usize) -> Error {
    Error::CudaUnavailable {
        ordinal,
        reason: "this build has no CUDA support (the `cuda` feature of the autograd crates is off)"
            .into(),
    }
}

/// The CUDA device `ordinal`, opened at the first call; its absence is
/// [`Error::CudaUnavailable`].
#[cfg(feature = "cuda")]
pub(crate) fn cuda_device(
    ordinal: usize,
) -> Result<std::sync::Arc<autograd_kernels::cuda::CudaDevice>> {
    autograd_kernels::cuda::device(ordinal).map_err(|e| match e {
        KernelError::CudaUnavailable { ordinal, reason } => {
            Error::CudaUnavailable { ordinal, reason }
        }
        e => Error::Kernel(e),
    })
}

/// A program a backend runs over buffers of its own (see [`Storage::run`]): a
/// generated elementwise op, a fused chain, a raw CUDA launch.
pub(crate) trait Program {
    /// Runs on `ins`, buffers of one backend, each with its layout.
    fn run<B: BackendStorage>(
        &self,
        ins: &[(&B, &Layout)],
    ) -> autograd_kernels::Result<SmallVec<[B; 1]>>;
}

/// The backend buffers of `first` and `rest` (computed first if deferred), which
/// `pick` finds in the values of a storage on `device`; a storage elsewhere is a
/// device mismatch naming `op`.
fn operands<'a, B>(
    op: &'static str,
    device: Device,
    first: (&'a B, &'a Layout),
    rest: impl Iterator<Item = (&'a Storage, &'a Layout)>,
    pick: impl Fn(&'a StorageData) -> Option<&'a B>,
) -> Result<SmallVec<[(&'a B, &'a Layout); 4]>> {
    let mut ins = SmallVec::new();
    ins.push(first);
    for (s, l) in rest {
        match pick(s.data()?) {
            Some(b) => ins.push((b, l)),
            None => {
                return Err(Error::DeviceMismatch {
                    op,
                    lhs: device,
                    rhs: s.device,
                });
            }
        }
    }
    Ok(ins)
}

/// The error for a storage that has neither values nor a recipe to compute them
/// (nothing does: a bug if seen).
pub(crate) fn lost(len: usize, dtype: DType) -> Error {
    Error::Kernel(KernelError::Layout(format!(
        "a deferred storage of {len} {dtype} elements has neither values nor the op computing them"
    )))
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
