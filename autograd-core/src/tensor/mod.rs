//! [`Tensor`]: a cheap handle over shared storage with a stable id.

mod slot;

pub(crate) use slot::{GradHook, GradSlot, HookList};

use crate::spare;
use crate::storage::Storage;
use crate::{DType, Device, Element, Error, Layout, Result, Shape};
use autograd_kernels::cpu::CpuStorage;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};

/// Identity of a tensor. Every handle cloned from one tensor carries the same id;
/// every op output, `detach` and fresh constructor gets a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    /// Never given to a tensor: the id of an empty node block.
    pub(crate) const NONE: TensorId = TensorId(0);

    /// A fresh id. Threads take ids from the global counter in blocks, so that an
    /// op output costs no atomic read-modify-write; ids stay unique process-wide.
    #[inline]
    pub(crate) fn next() -> TensorId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        TensorId(next_in_block(&NEXT, &RANGE, 0))
    }

    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// The next number of a process-wide sequence (`counter`) that threads take in
/// blocks of 1024 (the calling thread's rest of a block in `range`: `(next,
/// end)`), so that a number costs no locked instruction: unique process-wide,
/// larger than every number this thread took before, and at least `floor`. A new
/// block is taken when the thread's is used up or `floor` is past its next number
/// (a number from a later block, another thread's: every new block starts past
/// every block handed out so far).
#[inline]
pub(crate) fn next_in_block(
    counter: &'static AtomicU64,
    range: &'static std::thread::LocalKey<Cell<(u64, u64)>>,
    floor: u64,
) -> u64 {
    const BLOCK: u64 = 1024;
    let from_block = range.try_with(|r| {
        let (mut next, mut end) = r.get();
        if next == end || floor > next {
            next = counter.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
        }
        r.set((next + 1, end));
        next
    });
    // During thread teardown the block is gone: take a single number.
    from_block.unwrap_or_else(|_| counter.fetch_add(1, Ordering::Relaxed))
}

impl fmt::Display for TensorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// How a tensor takes part in differentiation.
#[derive(Default)]
pub(crate) enum Autograd {
    /// A constant: no gradient flows to it.
    #[default]
    None,
    /// A leaf that requires grad; gradients accumulate in the slot.
    Leaf(Arc<GradSlot>),
    /// The output of a recorded op: the node that produced it.
    Interior(Arc<dyn GradFn>),
}

/// The recorded op call that produced a tensor, as the tensor sees it.
///
/// The graph's node (`graph::Node`, the only implementation) holds the tensors it
/// saved, and a tensor holds the node that produced it. The tensor holds it through
/// this interface, so that the data layer never names the graph above it (as
/// PyTorch's `TensorImpl` holds its autograd metadata through an interface). The
/// graph gets its node back with a type check (`Autograd::node`).
pub(crate) trait GradFn: Any + Send + Sync {
    /// Lets the node go as the last tensor holding it goes: long chains (a recurrent
    /// loop of 10^5 ops) would otherwise drop node after node recursively.
    fn release(self: Arc<Self>);

    /// The gradient kept for this op output by `Tensor::retain_grad`, if any.
    fn retained_grad(&self) -> Option<Tensor>;

    /// Clears the gradient kept by `Tensor::retain_grad`.
    fn clear_retained_grad(&self);
}

/// Where a tensor's values live.
pub(crate) enum StorageSlot {
    /// Every tensor's but a parameter's: the same buffer for the tensor's whole life.
    Fixed(Arc<Storage>),
    /// A parameter's (a leaf made with `with_requires_grad(true)`): every handle of the
    /// tensor shares this slot, so [`Tensor::set_data`] updates the values seen
    /// through all of them. Copies saved by recorded graphs hold the buffer itself
    /// (a `Fixed` slot), so they keep the values they saved.
    Param(Box<ParamCell>),
}

/// A parameter's buffer, replaced by `set_data`, with what never changes about it
/// kept beside the lock: reading a parameter's dtype or device (every op does, for
/// each input) takes no lock. Boxed, so that the tensors that are not parameters
/// stay small.
pub(crate) struct ParamCell {
    pub(crate) current: RwLock<ParamBuffer>,
    dtype: DType,
    device: Device,
}

/// A parameter's buffer now, and the copy of the parameter that recorded nodes
/// saved last, under one lock (a node saving the parameter takes one read lock).
pub(crate) struct ParamBuffer {
    pub(crate) storage: Arc<Storage>,
    /// The copy of the parameter that recorded nodes last saved (see
    /// [`Tensor::for_saving`]), while some node still holds it: the next node to
    /// save the parameter shares it instead of building its own (a loop recording
    /// `y * w` many times made one copy per node). Weak, so that it holds neither
    /// the copy nor the buffer: when the graphs go, `set_data` writes in place again.
    /// (A weak handle also keeps the copy out of the spare blocks `retire` reuses.)
    saved: Weak<TensorInner>,
}

impl StorageSlot {
    /// The current buffer.
    #[inline]
    fn get(&self) -> StorageRef<'_> {
        match self {
            StorageSlot::Fixed(s) => StorageRef(Ref::Borrowed(s)),
            StorageSlot::Param(p) => StorageRef(Ref::Owned(
                p.current
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .storage
                    .clone(),
            )),
        }
    }

    /// The buffer's element type (no lock for a parameter).
    #[inline]
    fn dtype(&self) -> DType {
        match self {
            StorageSlot::Fixed(s) => s.dtype(),
            StorageSlot::Param(p) => p.dtype,
        }
    }

    /// The buffer's device (no lock for a parameter).
    #[inline]
    fn device(&self) -> Device {
        match self {
            StorageSlot::Fixed(s) => s.device(),
            StorageSlot::Param(p) => p.device,
        }
    }

    /// The buffer, when no other handle can reach it through this slot.
    pub(crate) fn get_mut(&mut self) -> &mut Arc<Storage> {
        match self {
            StorageSlot::Fixed(s) => s,
            StorageSlot::Param(p) => {
                &mut p
                    .current
                    .get_mut()
                    .unwrap_or_else(|e| e.into_inner())
                    .storage
            }
        }
    }

    /// Makes this a fixed slot holding the current buffer.
    fn make_fixed(&mut self) {
        if let StorageSlot::Param(_) = self {
            *self = StorageSlot::Fixed(self.get_mut().clone());
        }
    }

    /// Makes this a parameter's slot holding the current buffer.
    fn make_param(&mut self) {
        if let StorageSlot::Fixed(s) = self {
            *self = StorageSlot::Param(Box::new(ParamCell {
                current: RwLock::new(ParamBuffer {
                    storage: s.clone(),
                    saved: Weak::new(),
                }),
                dtype: s.dtype(),
                device: s.device(),
            }));
        }
    }
}

/// A tensor's storage, borrowed for as long as this value lives (see
/// [`Tensor::storage`]). Dereferences to [`Storage`].
pub struct StorageRef<'a>(Ref<'a>);

enum Ref<'a> {
    Borrowed(&'a Arc<Storage>),
    /// A parameter's buffer at the time of the call: a later `set_data` does not
    /// change what this reference reads.
    Owned(Arc<Storage>),
}

impl StorageRef<'_> {
    /// The buffer as a shared handle.
    pub(crate) fn arc(&self) -> &Arc<Storage> {
        match &self.0 {
            Ref::Borrowed(s) => s,
            Ref::Owned(s) => s,
        }
    }
}

impl Deref for StorageRef<'_> {
    type Target = Storage;

    fn deref(&self) -> &Storage {
        self.arc()
    }
}

pub(crate) struct TensorInner {
    pub(crate) id: TensorId,
    pub(crate) storage: StorageSlot,
    pub(crate) layout: Layout,
    pub(crate) autograd: Autograd,
    /// The leaf owning its gradient slot (see `GradSlot`; false for the copies of
    /// a leaf that nodes save: see [`Tensor::for_saving`]).
    pub(crate) holds_slot: bool,
    /// Set as a weak handle of the tensor is made (`spare::downgrade`: by
    /// `Tensor::downgrade`, and for the saved copy `ParamCell` tracks), and cleared when `Arc::get_mut` finds none
    /// left: while it is clear, one strong handle proves itself the only handle
    /// without `Arc::get_mut`'s locked instruction (see [`spare::unique`]).
    pub(crate) weak_made: AtomicBool,
}

impl spare::WeakMarked for TensorInner {
    fn weak_flag(&self) -> &AtomicBool {
        &self.weak_made
    }
}

impl TensorInner {
    /// Lets go of the tensor's place in the graph, as its last handle goes.
    fn release_autograd(&mut self) {
        release_autograd(&mut self.autograd, &mut self.holds_slot);
    }
}

/// [`TensorInner::release_autograd`] over the two fields it changes (so that a
/// caller may hold the storage meanwhile).
fn release_autograd(autograd: &mut Autograd, holds_slot: &mut bool) {
    match std::mem::take(autograd) {
        Autograd::Interior(node) => node.release(),
        // The last leaf the user holds lets the gradient go (see GradSlot::release).
        Autograd::Leaf(slot) if *holds_slot => slot.release(),
        Autograd::Leaf(_) | Autograd::None => {}
    }
    *holds_slot = false;
}

impl Drop for TensorInner {
    fn drop(&mut self) {
        self.release_autograd();
    }
}

/// An n-dimensional array of `f32` or `f64` on a device, and a handle in the
/// computation graph.
///
/// Cloning a `Tensor` is cheap (a reference count) and the clone *is* the same
/// tensor: same id, same storage, same gradient. Ops never modify their inputs.
///
/// ```
/// use autograd_core::{Tensor, Shape};
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2]).unwrap();
/// assert_eq!(x.shape(), &Shape::from([2, 2]));
/// assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
/// ```
// The handle is `ManuallyDrop` so that `Drop for Tensor` can keep the blocks of a
// released tensor for reuse. Never assign to `.0` (that would leak the old handle):
// assign a whole new tensor instead, e.g. `*t = Tensor::from_inner(..)`.
pub struct Tensor(pub(crate) ManuallyDrop<Arc<TensorInner>>);

impl Clone for Tensor {
    #[inline]
    fn clone(&self) -> Tensor {
        Tensor(ManuallyDrop::new(Arc::clone(&self.0)))
    }
}

impl Drop for Tensor {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the handle is taken out exactly once, here, as the tensor goes;
        // nothing reads `self.0` after.
        let inner = unsafe { ManuallyDrop::take(&mut self.0) };
        if Arc::strong_count(&inner) == 1 {
            retire(inner);
        }
    }
}

/// Retired tensors kept by each thread, each with its (emptied) storage block, so
/// that the next op output reuses both heap blocks instead of two allocations
/// (the `ManuallyDrop` in `Tensor` lets `Drop` keep the block).
const SPARE_MAX: usize = 16384;

thread_local! {
    static SPARE: RefCell<Vec<Arc<TensorInner>>> = const { RefCell::new(Vec::new()) };
}

/// Frees the calling thread's spare tensor blocks.
pub(crate) fn clear_spares() {
    let spares = SPARE
        .try_with(|spare| spare.try_borrow_mut().map(|mut s| std::mem::take(&mut *s)))
        .ok()
        .and_then(|r| r.ok());
    drop(spares);
}

/// A tensor over `storage`, for a thread with no spare block: the first of a batch
/// of blocks (see `spare::BATCH`; the tensor's and its storage's), the others kept
/// as the thread's spares, empty.
#[cold]
fn fresh_tensor(storage: Storage, shape: Shape) -> Tensor {
    let first = Tensor::from_parts(Arc::new(storage), Layout::contiguous(shape));
    spare::stock(&SPARE, SPARE_MAX, || {
        let storage = Arc::new(Storage::empty());
        Arc::new(TensorInner {
            id: TensorId::next(),
            storage: StorageSlot::Fixed(storage),
            layout: Layout::contiguous(Shape::scalar()),
            autograd: Autograd::None,
            holds_slot: false,
            weak_made: AtomicBool::new(false),
        })
    });
    first
}

/// The last handle of a tensor is going: release what it holds (its place in the
/// graph, its buffer) exactly as dropping would, and keep the two heap blocks for
/// reuse when the storage was its own.
fn retire(mut arc: Arc<TensorInner>) {
    let Some(inner) = spare::unique(&mut arc) else {
        return;
    };
    inner.release_autograd();
    let StorageSlot::Fixed(storage) = &mut inner.storage else {
        return; // a parameter's slot: not kept
    };
    let Some(storage) = spare::unique(storage) else {
        return; // another view still holds the storage: nothing to keep
    };
    storage.release();
    let rejected = SPARE
        .try_with(|spare| match spare.try_borrow_mut() {
            Ok(mut spare) if spare.len() < SPARE_MAX => {
                spare.push(arc);
                None
            }
            _ => Some(arc),
        })
        .unwrap_or(None);
    drop(rejected);
}

impl Tensor {
    pub(crate) fn from_inner(inner: TensorInner) -> Tensor {
        Tensor(ManuallyDrop::new(Arc::new(inner)))
    }

    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout) -> Tensor {
        Tensor::from_inner(TensorInner {
            id: TensorId::next(),
            storage: StorageSlot::Fixed(storage),
            layout,
            autograd: Autograd::None,
            holds_slot: false,
            weak_made: AtomicBool::new(false),
        })
    }

    /// A tensor over a fresh, contiguous storage.
    pub(crate) fn from_storage(storage: Storage, shape: Shape) -> Tensor {
        let spare = SPARE
            .try_with(|spare| spare.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        if let Some(mut arc) = spare {
            // SAFETY: a spare block is its value's only handle (see `unique_mut`).
            let inner = unsafe { spare::unique_mut(&mut arc) };
            let StorageSlot::Fixed(block) = &mut inner.storage else {
                // (Spares hold their own storage block: not reached.)
                return fresh_tensor(storage, shape);
            };
            // SAFETY: as the tensor's: its storage block went in as the only handle
            // too, and only the spare reaches it.
            let block = unsafe { spare::unique_mut(block) };
            // The spare's storage is empty (released): nothing to drop.
            std::mem::forget(std::mem::replace(block, storage));
            // Steps repeat shapes: the old layout is often the one wanted.
            let l = &inner.layout;
            if !(l.is_contiguous() && l.offset() == 0 && l.shape() == &shape) {
                inner.layout = Layout::contiguous(shape);
            }
            inner.id = TensorId::next();
            return Tensor(ManuallyDrop::new(arc));
        }
        fresh_tensor(storage, shape)
    }

    /// A tensor of the given shape holding `data` in row-major order, on the CPU.
    /// Its dtype is `T`'s. An error when `data` does not hold exactly as many elements
    /// as the shape.
    ///
    /// ```
    /// use autograd_core::{DType, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?;
    /// assert_eq!(x.dims(), &[2, 3]);
    /// assert_eq!(x.dtype(), DType::F32);
    /// assert!(Tensor::from_vec(vec![1.0f32, 2.0], [2, 3]).is_err());
    ///
    /// let s = Tensor::scalar(0.5f64); // rank 0
    /// assert_eq!((s.rank(), s.to_scalar::<f64>()?), (0, 0.5));
    /// # Ok::<(), autograd_core::Error>(())
    /// ```
    pub fn from_vec<T: Element>(data: Vec<T>, shape: impl Into<Shape>) -> Result<Tensor> {
        let shape = shape.into();
        crate::storage::check_size("from_vec", &shape, T::DTYPE)?;
        if data.len() != shape.numel() {
            return Err(Error::InvalidArgument {
                op: "from_vec",
                msg: format!(
                    "{} values cannot fill shape {shape}, which holds {}; pass exactly that many",
                    data.len(),
                    shape.numel()
                ),
            });
        }
        Ok(Tensor::from_storage(Storage::cpu(T::wrap(data)), shape))
    }

    /// Like [`Tensor::from_vec`], copying from a slice.
    pub fn from_slice<T: Element>(data: &[T], shape: impl Into<Shape>) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape)
    }

    /// A rank-0 tensor holding `value`.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Tensor::from_storage(Storage::cpu(T::wrap(vec![value])), Shape::scalar())
    }

    /// A CPU tensor with every element `value`.
    ///
    /// ```
    /// use autograd_core::{DType, Tensor};
    /// let h = Tensor::full([3], 0.5, DType::F32)?;
    /// assert_eq!(h.to_vec::<f32>()?, [0.5; 3]);
    /// let z = Tensor::zeros([2, 2], DType::F64)?;
    /// assert_eq!(z.to_vec::<f64>()?, [0.0; 4]);
    /// assert_eq!(Tensor::arange(4, DType::F32)?.to_vec::<f32>()?, [0.0, 1.0, 2.0, 3.0]);
    /// // 2^50 elements: an error, not an abort.
    /// assert!(Tensor::zeros([1 << 50], DType::F32).is_err());
    /// # Ok::<(), autograd_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Shape`] when the shape's size in bytes overflows `isize::MAX` (no
    /// buffer can be that large), and [`Error::OutOfMemory`] when the buffer cannot
    /// be allocated; both name the constructor, the shape and the dtype. The same
    /// holds for [`Tensor::zeros`], [`Tensor::ones`] and [`Tensor::arange`].
    pub fn full(shape: impl Into<Shape>, value: f64, dtype: DType) -> Result<Tensor> {
        Tensor::filled("Tensor::full", shape.into(), value, dtype)
    }

    /// A CPU tensor of zeros (errors as [`Tensor::full`]).
    pub fn zeros(shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        Tensor::filled("Tensor::zeros", shape.into(), 0.0, dtype)
    }

    /// A CPU tensor of ones (errors as [`Tensor::full`]).
    pub fn ones(shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        Tensor::filled("Tensor::ones", shape.into(), 1.0, dtype)
    }

    /// A CPU tensor of `shape`, every element `value`, made by the constructor `op`.
    fn filled(op: &'static str, shape: Shape, value: f64, dtype: DType) -> Result<Tensor> {
        crate::storage::check_size(op, &shape, dtype)?;
        let data = CpuStorage::filled(shape.numel(), dtype, value)
            .map_err(|e| Error::from_kernel(e, op, &shape, dtype, Device::Cpu))?;
        Ok(Tensor::from_storage(Storage::cpu(data), shape))
    }

    /// A tensor of `shape` filled with `value`, with this tensor's dtype and device.
    pub fn full_like_shape(&self, shape: impl Into<Shape>, value: f64) -> Result<Tensor> {
        let shape = shape.into();
        crate::storage::check_size("full_like_shape", &shape, self.dtype())?;
        let storage = self
            .storage()
            .filled_like("full_like_shape", &shape, self.dtype(), value)?;
        Ok(Tensor::from_storage(storage, shape))
    }

    /// A tensor of this shape, dtype and device filled with `value`.
    pub fn full_like(&self, value: f64) -> Result<Tensor> {
        self.full_like_shape(self.shape().clone(), value)
    }

    /// Zeros of this shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        self.full_like(0.0)
    }

    /// Ones of this shape, dtype and device.
    pub fn ones_like(&self) -> Result<Tensor> {
        self.full_like(1.0)
    }

    /// `0, 1, .., n-1` as a CPU tensor (errors as [`Tensor::full`]).
    pub fn arange(n: usize, dtype: DType) -> Result<Tensor> {
        const OP: &str = "Tensor::arange";
        let shape = Shape::from([n]);
        crate::storage::check_size(OP, &shape, dtype)?;
        // Built in `dtype` directly; each value goes through f64 as it always has.
        let data = CpuStorage::from_fn(n, dtype, |i| i as f64)
            .map_err(|e| Error::from_kernel(e, OP, &shape, dtype, Device::Cpu))?;
        Ok(Tensor::from_storage(Storage::cpu(data), shape))
    }

    /// Stable identity of this tensor.
    pub fn id(&self) -> TensorId {
        self.0.id
    }

    /// The logical shape (a view's, not its storage's).
    pub fn shape(&self) -> &Shape {
        self.0.layout.shape()
    }

    /// The dimensions as a slice.
    pub fn dims(&self) -> &[usize] {
        self.0.layout.shape().dims()
    }

    /// Number of axes (0 for a scalar).
    pub fn rank(&self) -> usize {
        self.0.layout.rank()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }

    /// Element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.0.storage.dtype()
    }

    /// Where the storage lives.
    #[inline]
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }

    /// How the elements sit in the storage (strides and offset).
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// True when the elements are row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }

    /// The storage this tensor views (shared with other views of it). For a
    /// parameter, the buffer it holds now: a later [`Tensor::set_data`] does not
    /// change what the returned reference reads.
    #[inline]
    pub fn storage(&self) -> StorageRef<'_> {
        self.0.storage.get()
    }

    /// Computes the values now if their arithmetic was deferred (see
    /// [`crate::fusion`]), and returns the tensor. Nothing needs it: every read of
    /// the values computes them. It chooses the moment: to time the work, or to
    /// compute where it should happen (before handing the tensor to another
    /// thread). The only error is a buffer that cannot be allocated.
    pub fn realize(&self) -> Result<&Tensor> {
        self.storage().data()?;
        Ok(self)
    }

    /// True while the values are deferred: the elementwise op computing them has
    /// not run yet (see [`crate::fusion`]).
    #[inline]
    pub fn is_deferred(&self) -> bool {
        self.storage().is_deferred()
    }

    pub(crate) fn storage_arc(&self) -> Arc<Storage> {
        self.storage().arc().clone()
    }

    /// True when `self` and `other` view the same storage buffer now.
    pub fn shares_storage_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(self.storage().arc(), other.storage().arc())
    }

    /// True when `self` and `other` read the same values from the same buffer now
    /// (the same storage and layout): what an op may rely on to treat two operands
    /// as one. Ids do not say it: a graph's saved copy of a parameter keeps its id
    /// and the values it saved while the parameter itself is updated.
    pub fn same_values_as(&self, other: &Tensor) -> bool {
        self.shares_storage_with(other) && self.layout() == other.layout()
    }

    /// The elements in row-major order, converted to `T`, copied to the host.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.storage().to_vec(&self.0.layout)
    }

    /// The single element of a one-element tensor.
    pub fn to_scalar<T: Element>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::InvalidArgument {
                op: "to_scalar",
                msg: format!(
                    "a tensor of shape {} has {} elements, not one; index or reduce it first",
                    self.shape(),
                    self.numel()
                ),
            });
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// A view of the same storage with a new layout (and a new id, no autograd).
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor::from_parts(self.storage_arc(), layout)
    }

    // ----- autograd -----

    /// True for a leaf marked with [`Tensor::with_requires_grad`] and for every op
    /// output computed (outside `no_grad`) from such tensors.
    pub fn requires_grad(&self) -> bool {
        !matches!(self.0.autograd, Autograd::None)
    }

    /// True when no recorded op produced this tensor.
    pub fn is_leaf(&self) -> bool {
        !matches!(self.0.autograd, Autograd::Interior(_))
    }

    /// This tensor, consumed, as a leaf that requires (or not) a gradient: with `true`,
    /// a parameter (see [`Tensor::set_data`]). The id stays when this is the only
    /// handle; otherwise the result is a new leaf over the same storage. On an op
    /// output, `true` changes nothing and `false` is [`Tensor::detach`].
    ///
    /// (A builder, not a setter: it takes the tensor and returns it, as in
    /// `Tensor::from_vec(..)?.with_requires_grad(true)`.)
    pub fn with_requires_grad(self, requires: bool) -> Tensor {
        match (&self.0.autograd, requires) {
            (Autograd::Interior(_), true) | (Autograd::Leaf(_), true) | (Autograd::None, false) => {
                self
            }
            (Autograd::Interior(_), false) => self.detach(),
            (Autograd::Leaf(_), false) | (Autograd::None, true) => {
                let mut t = self;
                if Arc::get_mut(&mut t.0).is_none() {
                    t = t.detach();
                }
                if let Some(inner) = Arc::get_mut(&mut t.0) {
                    inner.release_autograd();
                    if requires {
                        inner.storage.make_param();
                        inner.autograd = Autograd::Leaf(GradSlot::held());
                        inner.holds_slot = true;
                    } else {
                        inner.storage.make_fixed();
                    }
                }
                t
            }
        }
    }

    /// The same values as a new tensor cut off from the graph (shares storage).
    pub fn detach(&self) -> Tensor {
        self.with_layout(self.0.layout.clone())
    }

    /// The gradient accumulated in this leaf by `backward` calls, if any; for an op
    /// output, the gradient kept by [`Tensor::retain_grad`] (`None` unless it was
    /// called before the backward pass).
    ///
    /// The handle returned is a snapshot: a later backward accumulates into a new
    /// tensor (or in place into a buffer nobody else holds), never into the buffer
    /// this handle reads, so its values stay as they were when it was taken. Call
    /// `grad()` again to read the accumulated sum.
    pub fn grad(&self) -> Option<Tensor> {
        match &self.0.autograd {
            Autograd::Leaf(slot) => slot.get(),
            Autograd::Interior(node) => node.retained_grad(),
            Autograd::None => None,
        }
    }

    /// Clears the gradient accumulated in this leaf (or kept by
    /// [`Tensor::retain_grad`] for an op output).
    pub fn zero_grad(&self) {
        match &self.0.autograd {
            Autograd::Leaf(slot) => slot.clear(),
            Autograd::Interior(node) => node.clear_retained_grad(),
            Autograd::None => {}
        }
    }

    /// Replaces the gradient accumulated in this leaf (PyTorch's `p.grad = g`):
    /// what gradient clipping and other in-between steps write. `None` clears
    /// it (as [`Tensor::zero_grad`]). The gradient is stored detached from any
    /// graph, and never written into: a later backward accumulates into a new
    /// buffer while `grad` (or a tensor sharing its buffer) is held elsewhere.
    ///
    /// Errors (the gradient unchanged) when `grad`'s shape, dtype or device is
    /// not this tensor's, and when this tensor is not a leaf that requires grad
    /// (an op output keeps no gradient of its own; a constant has no slot).
    ///
    /// ```
    /// # use autograd_core::{DType, Tensor};
    /// let w = Tensor::zeros([2], DType::F32)?.with_requires_grad(true);
    /// w.set_grad(Some(Tensor::from_slice(&[1.0f32, -1.0], [2])?))?;
    /// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, [1.0, -1.0]);
    /// assert!(w.set_grad(Some(Tensor::zeros([3], DType::F32)?)).is_err());
    /// w.set_grad(None)?;
    /// assert!(w.grad().is_none());
    /// # Ok::<(), autograd_core::Error>(())
    /// ```
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        const OP: &str = "set_grad";
        let slot = match &self.0.autograd {
            Autograd::Leaf(slot) => slot,
            Autograd::Interior(_) => {
                let op = self.grad_fn().map_or("op", |n| n.op_name());
                return Err(Error::InvalidArgument {
                    op: OP,
                    msg: format!(
                        "this tensor (shape {}) is the output of a recorded `{op}`, not a leaf: \
                         only a leaf that requires grad holds a gradient to set; set the \
                         gradient of the leaf it was computed from",
                        self.shape(),
                    ),
                });
            }
            Autograd::None => {
                return Err(Error::InvalidArgument {
                    op: OP,
                    msg: format!(
                        "this tensor (shape {}) does not require grad, so it has no gradient \
                         to set; make it a parameter with `.with_requires_grad(true)` first",
                        self.shape()
                    ),
                });
            }
        };
        let Some(grad) = grad else {
            slot.clear();
            return Ok(());
        };
        if grad.shape() != self.shape() {
            return Err(Error::Shape {
                op: OP,
                msg: format!(
                    "the gradient has shape {} but the tensor has shape {}; pass a gradient of \
                     the tensor's shape",
                    grad.shape(),
                    self.shape()
                ),
            });
        }
        if grad.dtype() != self.dtype() {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "the gradient (shape {}) is {} but the tensor (shape {}) is {}; convert the \
                     gradient to {} first",
                    grad.shape(),
                    grad.dtype(),
                    self.shape(),
                    self.dtype(),
                    self.dtype()
                ),
            });
        }
        if grad.device() != self.device() {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "the gradient (shape {}) is on {} but the tensor (shape {}) is on {}; move \
                     the gradient to {} first",
                    grad.shape(),
                    grad.device(),
                    self.shape(),
                    self.device(),
                    self.device()
                ),
            });
        }
        // A handle of its own, outside any graph: a stored leaf or recorded
        // gradient would keep a graph (or the user's tensor) alive from the slot.
        let grad = grad.detach();
        let old = slot.lock().replace(grad);
        drop(old);
        Ok(())
    }

    /// The handle a node saves for its backward: the tensor itself, except for a
    /// leaf that requires grad, which is saved as a second handle (same id, storage
    /// and gradient slot) so that the graph never keeps the user's leaf alive: a
    /// gradient recorded into the leaf (`create_graph`) would otherwise hold the
    /// leaf that holds it.
    ///
    /// A parameter's copy is shared by the nodes that save it while its buffer stays
    /// the same (see `ParamCell::saved`).
    pub(crate) fn for_saving(&self) -> Tensor {
        let Autograd::Leaf(slot) = &self.0.autograd else {
            return self.clone();
        };
        let copy = |storage: Arc<Storage>| {
            Tensor::from_inner(TensorInner {
                id: self.0.id,
                storage: StorageSlot::Fixed(storage),
                layout: self.0.layout.clone(),
                autograd: Autograd::Leaf(slot.clone()),
                holds_slot: false,
                weak_made: AtomicBool::new(false),
            })
        };
        let StorageSlot::Param(cell) = &self.0.storage else {
            return copy(self.storage_arc());
        };
        // The cell belongs to this one `TensorInner` (never shared), whose id, layout
        // and slot stay while it is a parameter's: only the buffer can change
        // (`set_data`), so the copy is current when it holds the same buffer.
        let current = |b: &ParamBuffer| {
            let inner = b.saved.upgrade()?;
            let same =
                matches!(&inner.storage, StorageSlot::Fixed(s) if Arc::ptr_eq(s, &b.storage));
            debug_assert!(
                !same
                    || (inner.id == self.0.id
                        && inner.layout == self.0.layout
                        && matches!(&inner.autograd, Autograd::Leaf(s) if Arc::ptr_eq(s, slot)))
            );
            same.then(|| Tensor(ManuallyDrop::new(inner)))
        };
        if let Some(t) = current(&cell.current.read().unwrap_or_else(|e| e.into_inner())) {
            return t;
        }
        let mut buffer = cell.current.write().unwrap_or_else(|e| e.into_inner());
        // (Another thread may have saved it meanwhile.)
        if let Some(t) = current(&buffer) {
            return t;
        }
        let t = copy(buffer.storage.clone());
        buffer.saved = spare::downgrade(&t.0);
        t
    }

    pub(crate) fn autograd(&self) -> &Autograd {
        &self.0.autograd
    }

    /// This tensor as a fresh op output: itself when this is its only handle and it
    /// is outside any graph, else a new handle (new id) over the same storage. An op
    /// may return one of its inputs; its output must still be a tensor of its own.
    pub(crate) fn into_fresh(self) -> Tensor {
        let fresh = Arc::strong_count(&self.0) == 1 && matches!(self.0.autograd, Autograd::None);
        if fresh { self } else { self.detach() }
    }

    /// Makes a fresh op output (see [`Tensor::into_fresh`]) point at its node.
    pub(crate) fn attach(mut self, node: Arc<dyn GradFn>) -> Tensor {
        match spare::unique(&mut self.0) {
            Some(inner) => inner.autograd = Autograd::Interior(node),
            None => debug_assert!(false, "attach on a shared handle"),
        }
        self
    }

    /// The buffer, to write a new value into, when nobody else can see it: this
    /// handle is the tensor's only one (no clone, weak handle or graph holds it),
    /// no other tensor or view holds the buffer, and it is not a parameter's. The
    /// tensor then leaves its graph (a saved input that backward took still links
    /// to the node that produced it) and gets a new id, as the value written is a
    /// new one. `None`, changing nothing, otherwise.
    pub(crate) fn writable_storage(&mut self) -> Option<(&mut Storage, &Layout)> {
        let TensorInner {
            id,
            storage: StorageSlot::Fixed(storage),
            layout,
            autograd,
            holds_slot,
            ..
        } = spare::unique(&mut self.0)?
        else {
            return None;
        };
        let storage = spare::unique(storage)?;
        release_autograd(autograd, holds_slot);
        *id = TensorId::next();
        Some((storage, layout))
    }
}

/// A reference to a tensor that does not keep it alive (see [`Tensor::downgrade`]):
/// optimizers key their per-parameter state with it, so the state goes with the
/// parameter.
#[derive(Clone)]
pub struct WeakTensor(std::sync::Weak<TensorInner>);

impl WeakTensor {
    /// The tensor, while some handle of it is alive.
    pub fn upgrade(&self) -> Option<Tensor> {
        self.0.upgrade().map(|a| Tensor(ManuallyDrop::new(a)))
    }

    /// True while some handle of the tensor is alive.
    pub fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl fmt::Debug for WeakTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WeakTensor(alive: {})", self.is_alive())
    }
}

impl Tensor {
    /// A reference to this tensor (every handle of it) that does not keep it alive.
    pub fn downgrade(&self) -> WeakTensor {
        WeakTensor(spare::downgrade(&self.0))
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor({}, shape={}, {}, {}",
            self.id(),
            self.shape(),
            self.dtype(),
            self.device()
        )?;
        if self.requires_grad() {
            f.write_str(", requires_grad")?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Tensor {
    /// Shape, dtype and up to 16 values (read from the view: a huge tensor or
    /// broadcast view is never copied whole).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 16;
        match self.leading_values(SHOWN) {
            Ok(v) => {
                write!(f, "Tensor{} {} [", self.shape(), self.dtype())?;
                for (i, x) in v.iter().take(SHOWN).enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                let numel = self.numel();
                if numel > SHOWN {
                    write!(f, ", .. ({} more)", numel - SHOWN)?;
                }
                f.write_str("]")
            }
            Err(e) => write!(f, "Tensor{} <unreadable: {e}>", self.shape()),
        }
    }
}

impl Tensor {
    /// The first `k` elements in row-major order (all of them when there are no
    /// more than `k`), as `f64`. Only a view of fewer than `2k` elements is read:
    /// the leading entry of the outer axes and the first entries of one axis `p`,
    /// with every axis after `p`, where those trailing axes hold fewer than `k`
    /// elements and, with axis `p`, at least `k`.
    fn leading_values(&self, k: usize) -> Result<Vec<f64>> {
        if self.numel() <= k {
            return self.to_vec();
        }
        let dims = self.dims();
        let (mut p, mut inner) = (dims.len(), 1usize);
        while p > 0 {
            p -= 1;
            if inner.saturating_mul(dims[p]) >= k {
                break;
            }
            inner *= dims[p];
        }
        let mut view = self.layout().clone();
        for axis in 0..p {
            view = view.narrow(axis, 0, 1)?;
        }
        view = view.narrow(p, 0, k.div_ceil(inner))?;
        let mut v = self.storage().to_vec::<f64>(&view)?;
        v.truncate(k);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spares() -> usize {
        spare::count(&SPARE)
    }

    #[test]
    fn a_thread_without_spares_allocates_a_batch_of_tensor_blocks() {
        spare::on_fresh_thread(|| {
            assert_eq!(spares(), 0);
            let a = Tensor::from_slice(&[1.0f32, 2.0], [2])?;
            // The spare blocks of the batch count no bytes: only `a`'s 8.
            let live = || crate::accounting::thread_stats(Device::Cpu).live_bytes;
            assert_eq!(live(), 8);
            let b = (&a + &a)?;
            // The first tensor allocated a batch; the second took the next block.
            assert_eq!(spares(), spare::BATCH - 2);
            assert_eq!(b.to_vec::<f32>()?, [2.0, 4.0]);
            // A tensor made in a spare block has its own id, shape and values.
            let c = (&b * &a)?;
            assert_ne!(c.id(), b.id());
            assert_eq!((c.dims(), c.to_vec::<f32>()?), (&[2][..], vec![2.0, 8.0]));
            drop((a, b, c));
            assert_eq!(spares(), spare::BATCH);
            Ok(())
        });
    }
}
