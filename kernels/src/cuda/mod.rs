//! The CUDA backend: [`CudaStorage`] implements [`BackendStorage`] on a GPU.
//!
//! Kernels are the `.cu` files of this directory, compiled by NVRTC at first use on
//! each device ([`compile`]); matrix products go through cuBLAS. Views are passed
//! to kernels with their strides (see `index.rs`), so transposed and broadcast operands
//! are read in place and nothing goes through the host between ops. Buffers are
//! stream-ordered allocations (`cuMemAllocAsync` where the device supports memory
//! pools), freed on the device's stream when the last handle goes.
//!
//! Every call that reaches the device goes through one small trait
//! (`driver::Driver`): cudarc on a GPU (`hardware.rs`), and with the test-only feature
//! `cuda-emulator` a host emulator (`cuda::emu`) that runs the same `.cu` sources, so
//! that CI tests this backend's own launch code without a GPU.
//!
//! cudarc loads the driver, NVRTC and cuBLAS at run time; [`device`] checks that
//! they are there before the first call that needs them and returns
//! [`KernelError::CudaUnavailable`] where they (or the GPU) are not.

pub mod compile;
mod device;
mod driver;
#[cfg(feature = "cuda-emulator")]
pub mod emu;
#[cfg(not(feature = "cuda-emulator"))]
mod hardware;
mod index;
mod lru;
mod matmul;
mod reduce;
mod sources;

pub use device::{
    CudaAllocator, CudaDevice, MAX_GENERATED_PROGRAMS, cublas_available, device, device_count,
    driver_available, is_available,
};

use crate::check::{check_axes, check_fits, check_same_shape, check_writes_once, matmul_dims};
use crate::cpu::CpuStorage;
use crate::{BackendStorage, BinaryOp, DType, KernelError, Layout, ReduceOp, Result, UnaryOp};
use compile::Module;
use driver::{AllocError, Driver, KernelArg, LaunchCfg};
#[cfg(feature = "cuda-emulator")]
use emu::DriverElement;
#[cfg(not(feature = "cuda-emulator"))]
use hardware::DriverElement;
use index::{Index1, Index2};
use std::sync::Arc;

/// The device implementation: cudarc, or the host emulator in tests.
#[cfg(not(feature = "cuda-emulator"))]
pub(crate) type Drv = hardware::Cudarc;
/// The device implementation: cudarc, or the host emulator in tests.
#[cfg(feature = "cuda-emulator")]
pub(crate) type Drv = emu::Emulator;

type Buf<T> = <Drv as Driver>::Buf<T>;

/// The device's memory pool.
pub mod memory {
    use super::CudaDevice;
    use crate::Result;

    /// Returns the memory `device`'s pool keeps from freed tensors to the device
    /// (after the work queued so far), for cuBLAS, other libraries and other
    /// processes. An allocation that fails does this by itself, then retries once.
    pub fn trim(device: &CudaDevice) -> Result<()> {
        device.trim_memory()
    }
}

/// A buffer on a CUDA device.
pub struct CudaStorage {
    data: CudaData,
    /// Logical length: the allocation holds at least one element, even for an
    /// empty tensor (a zero-byte allocation is an error for the driver).
    len: usize,
    device: Arc<CudaDevice>,
}

/// The device buffer, boxed: a tensor on the GPU pays one small host allocation,
/// and every CPU storage stays small. (`Storage` holds a CPU or a CUDA storage in
/// one enum; with the buffer inline, the CUDA one made every CPU storage 88 bytes
/// and moving one a `memcpy` call.)
pub(crate) enum CudaData {
    F32(Box<Buf<f32>>),
    F64(Box<Buf<f64>>),
}

impl Drop for CudaStorage {
    fn drop(&mut self) {
        // The buffer's free (cuMemFreeAsync, in cudarc's drop of the slice, after
        // this) does not bind the context, and this thread may never have: a free
        // failing there would be recorded and reported by the next, unrelated,
        // synchronize. Bind first; the fields drop after this. If binding fails,
        // the free will too: the device's next call reports it.
        if let Err(e) = self.device.bind() {
            self.device.record_error(format!(
                "binding the context to free a buffer of {} {} elements failed: {e}",
                self.len,
                self.dtype()
            ));
        }
    }
}

impl std::fmt::Debug for CudaStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaStorage({}, {} elements, cuda:{})",
            self.dtype(),
            self.len,
            self.device.ordinal()
        )
    }
}

/// An element type the CUDA kernels compute with.
pub(crate) trait CudaElement:
    crate::Element + DriverElement + Send + Sync + 'static
{
    fn wrap(s: Buf<Self>) -> CudaData;
    fn get(d: &CudaData) -> Option<&Buf<Self>>;
    fn get_mut(d: &mut CudaData) -> Option<&mut Buf<Self>>;
    fn cpu(v: Vec<Self>) -> CpuStorage;
    /// The buffer as a kernel's `const T*` argument.
    fn input(b: &Buf<Self>) -> KernelArg<'_, Drv>;
    /// The buffer as a kernel's `T*` argument.
    fn output(b: &mut Buf<Self>) -> KernelArg<'_, Drv>;
}

macro_rules! cuda_element {
    ($t:ty, $variant:ident, $in:ident, $out:ident) => {
        impl CudaElement for $t {
            fn wrap(s: Buf<Self>) -> CudaData {
                CudaData::$variant(Box::new(s))
            }
            fn get(d: &CudaData) -> Option<&Buf<Self>> {
                match d {
                    CudaData::$variant(s) => Some(s),
                    _ => None,
                }
            }
            fn get_mut(d: &mut CudaData) -> Option<&mut Buf<Self>> {
                match d {
                    CudaData::$variant(s) => Some(s),
                    _ => None,
                }
            }
            fn cpu(v: Vec<Self>) -> CpuStorage {
                CpuStorage::$variant(v)
            }
            fn input(b: &Buf<Self>) -> KernelArg<'_, Drv> {
                KernelArg::$in(b)
            }
            fn output(b: &mut Buf<Self>) -> KernelArg<'_, Drv> {
                KernelArg::$out(b)
            }
        }
    };
}

cuda_element!(f32, F32, InF32, OutF32);
cuda_element!(f64, F64, InF64, OutF64);

/// Calls `$body` with `$T` bound to the element type of `$dtype`.
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => return Err($crate::cuda::not_on_cuda(other)),
        }
    };
}

/// The error for a dtype the CUDA backend does not hold yet.
pub(crate) fn not_on_cuda(dtype: DType) -> KernelError {
    KernelError::Device(format!(
        "tensors of dtype {dtype} cannot live on a CUDA device yet (the CUDA backend holds \
         f32 and f64); keep this tensor on the CPU, or convert it first with \
         `.to_dtype(DType::F32)`"
    ))
}

const BLOCK: u32 = 256;

/// A grid-stride launch over `n` elements: enough blocks to fill the device a few
/// times over, each thread looping over the rest.
fn launch_config(dev: &CudaDevice, n: usize) -> LaunchCfg {
    let wanted = n.div_ceil(BLOCK as usize).max(1);
    let cap = dev.multiprocessors() * 32;
    LaunchCfg {
        grid: (wanted.min(cap) as u32, 1, 1),
        block: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `n` uninitialised elements (at least one is allocated). When the device is out
/// of memory, the memory its pool keeps is returned to it and the allocation
/// retried once. When allocating from the pool fails for another reason (a device
/// or driver whose pools are unsupported or broken), the buffer is allocated
/// plainly (`cuMemAlloc`), and so is every later one on the device
/// ([`CudaDevice::allocator`]). An error a drop recorded on the device is reported
/// here first.
///
/// # Safety
/// The caller writes every element it later reads.
unsafe fn alloc<T: CudaElement>(dev: &CudaDevice, n: usize) -> Result<Buf<T>> {
    dev.check_recorded()?;
    let n1 = n.max(1);
    let attempt = || {
        let pooled = dev.uses_pool();
        // SAFETY: forwarded to the caller.
        match unsafe { dev.driver.alloc::<T>(n1, pooled) } {
            Err(e) if pooled && !e.out_of_memory => {
                // SAFETY: as above.
                match unsafe { dev.driver.alloc::<T>(n1, false) } {
                    Ok(b) => {
                        dev.fall_back_to_plain_allocation(format!(
                            "allocating from the stream-ordered memory pool \
                             (cuMemAllocAsync) failed: {}",
                            e.message
                        ));
                        Ok(b)
                    }
                    Err(p) => Err(AllocError {
                        out_of_memory: p.out_of_memory,
                        message: format!(
                            "{} from the memory pool (cuMemAllocAsync), then {} as a plain \
                             allocation (cuMemAlloc)",
                            e.message, p.message
                        ),
                    }),
                }
            }
            r => r,
        }
    };
    let e = match attempt() {
        Ok(b) => return Ok(b),
        Err(e) if e.out_of_memory => {
            dev.trim_memory()?;
            match attempt() {
                Ok(b) => return Ok(b),
                Err(e) => e,
            }
        }
        Err(e) => {
            return Err(KernelError::Device(format!(
                "allocating {n} {} elements on cuda:{} failed ({})",
                T::DTYPE,
                dev.ordinal(),
                e.message
            )));
        }
    };
    Err(KernelError::Device(format!(
        "allocating {n} {} elements on cuda:{} failed ({}), even after returning the \
         memory pool's unused memory to the device; free some tensors or use smaller ones",
        T::DTYPE,
        dev.ordinal(),
        e.message
    )))
}

/// Launches kernel `name` of `module` with `args`.
///
/// # Safety
/// `args` match the kernel's parameters, and every element the kernel touches
/// lies inside the buffers passed.
unsafe fn launch(
    dev: &CudaDevice,
    module: Module,
    name: &str,
    cfg: LaunchCfg,
    args: &mut [KernelArg<'_, Drv>],
) -> Result<()> {
    let f = dev.function(module, name)?;
    // SAFETY: forwarded to the caller.
    unsafe { dev.driver.launch(&f, name, cfg, args) }
}

impl CudaStorage {
    fn new<T: CudaElement>(s: Buf<T>, len: usize, device: Arc<CudaDevice>) -> Self {
        CudaStorage {
            data: T::wrap(s),
            len,
            device,
        }
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> &Arc<CudaDevice> {
        &self.device
    }

    fn slice<T: CudaElement>(&self) -> Result<&Buf<T>> {
        T::get(&self.data).ok_or(KernelError::DTypeMismatch {
            lhs: self.dtype(),
            rhs: T::DTYPE,
        })
    }

    fn same_device(&self, other: &CudaStorage) -> Result<()> {
        if self.device.ordinal() != other.device.ordinal() {
            return Err(KernelError::Device(format!(
                "operands live on cuda:{} and cuda:{}; move one to the other's device",
                self.device.ordinal(),
                other.device.ordinal()
            )));
        }
        Ok(())
    }

    /// `other` is on this storage's device and of its dtype: what a kernel reading
    /// both as one element type needs.
    pub(crate) fn same_kind(&self, other: &CudaStorage) -> Result<()> {
        self.same_device(other)?;
        if other.dtype() != self.dtype() {
            return Err(KernelError::DTypeMismatch {
                lhs: self.dtype(),
                rhs: other.dtype(),
            });
        }
        Ok(())
    }

    /// Copies the view `l` of a CPU buffer to `device` (contiguous there).
    pub fn from_cpu(device: &Arc<CudaDevice>, src: &CpuStorage, l: &Layout) -> Result<Self> {
        check_fits(src.len(), l)?;
        if !l.is_contiguous() {
            let dense = src.cast(l, src.dtype())?;
            return Self::from_cpu(device, &dense, &Layout::contiguous(l.shape().clone()));
        }
        let (off, n) = (l.offset(), l.numel());
        fn upload<T: CudaElement>(dev: &Arc<CudaDevice>, v: &[T]) -> Result<CudaStorage> {
            let s = if v.is_empty() {
                unsafe { alloc::<T>(dev, 0)? }
            } else {
                // SAFETY: every element is written by the copy.
                let mut b = unsafe { alloc::<T>(dev, v.len())? };
                dev.driver.upload(v, &mut b)?;
                b
            };
            Ok(CudaStorage::new(s, v.len(), dev.clone()))
        }
        match src {
            CpuStorage::F32(v) => upload(device, &v[off..off + n]),
            CpuStorage::F64(v) => upload(device, &v[off..off + n]),
            other => Err(not_on_cuda(other.dtype())),
        }
    }

    /// `n` elements from element `offset` of the buffer, on the host.
    fn download<T: CudaElement>(&self, offset: usize, n: usize) -> Result<Vec<T>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let s = self.slice::<T>()?;
        // The host buffer is allocated fallibly (`clone_dtoh` would abort when the
        // host cannot hold it), then filled as `clone_dtoh` does.
        let mut v = crate::cpu::pool::alloc::<T>(n)?;
        // SAFETY: `v` has capacity n; the copy below writes all n elements before
        // anything reads them (an error drops `v` without reading), exactly as
        // cudarc's own `clone_dtoh` does.
        #[allow(clippy::uninit_vec)]
        unsafe {
            v.set_len(n)
        };
        self.device.driver.download(s, offset, &mut v)?;
        Ok(v)
    }

    /// The view `l`, in logical order, copied into a contiguous CPU buffer. Waits
    /// for the device to finish the work queued before it. Any view works: one the
    /// kernels cannot index (more unmergeable axes than they take) is gathered on
    /// the host from the span of the buffer it covers.
    pub fn to_cpu(&self, l: &Layout) -> Result<CpuStorage> {
        check_fits(self.len, l)?;
        let n = l.numel();
        match Index1::new(l) {
            Ok(ix) if ix.is_dense() => {}
            Ok(_) => {
                let dense = self.unary(l, UnaryOp::Copy)?;
                return dense.to_cpu(&Layout::contiguous(l.shape().clone()));
            }
            Err(_) if n == 0 => {}
            Err(_) => {
                // The span [offset, offset + required_len) holds every element.
                let span = l.required_len() - l.offset();
                let host =
                    with_dtype!(self.dtype(), T => T::cpu(self.download::<T>(l.offset(), span)?));
                self.device.synchronize()?;
                let shifted = Layout::new(l.shape().clone(), l.strides(), 0)?;
                return host.cast(&shifted, self.dtype());
            }
        }
        with_dtype!(self.dtype(), T => {
            let v: Vec<T> = self.download(l.offset(), n)?;
            self.device.synchronize()?;
            Ok(T::cpu(v))
        })
    }

    fn unary_typed<T: CudaElement>(&self, l: &Layout, op: UnaryOp) -> Result<CudaStorage> {
        let n = l.numel();
        let dev = &self.device;
        // SAFETY: the kernel writes all n elements.
        let mut out = unsafe { alloc::<T>(dev, n)? };
        if n > 0 {
            let name = compile::unary_kernel(op, T::DTYPE);
            let (ix, n64, scalar) = (Index1::new(l)?, n as u64, op.scalar());
            let src = self.slice::<T>()?;
            let mut args = [
                KernelArg::U64(n64),
                KernelArg::Index1(&ix),
                T::input(src),
                T::output(&mut out),
                KernelArg::F64(scalar),
            ];
            // SAFETY: the arguments match the kernel's signature in unary.cu
            // (n, Index1, const T*, T*, double); the view fits `src` (checked) and
            // `out` holds n elements.
            unsafe { launch(dev, Module::Unary, name, launch_config(dev, n), &mut args)? };
        }
        Ok(CudaStorage::new(out, n, dev.clone()))
    }

    fn binary_typed<T: CudaElement>(
        &self,
        l: &Layout,
        rhs: &CudaStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<CudaStorage> {
        let n = l.numel();
        let dev = &self.device;
        // SAFETY: the kernel writes all n elements.
        let mut out = unsafe { alloc::<T>(dev, n)? };
        if n > 0 {
            let name = compile::binary_kernel(op, T::DTYPE, false);
            let (ix, n64) = (Index2::new(l, rl)?, n as u64);
            let (a, b) = (self.slice::<T>()?, rhs.slice::<T>()?);
            let mut args = [
                KernelArg::U64(n64),
                KernelArg::Index2(&ix),
                T::input(a),
                T::input(b),
                T::output(&mut out),
            ];
            // SAFETY: matches binary.cu's (n, Index2, const T*, const T*, T*); both
            // views fit their buffers (checked) and `out` holds n elements.
            unsafe { launch(dev, Module::Binary, name, launch_config(dev, n), &mut args)? };
        }
        Ok(CudaStorage::new(out, n, dev.clone()))
    }

    fn binary_assign_typed<T: CudaElement>(
        &mut self,
        l: &Layout,
        rhs: &CudaStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<()> {
        let n = l.numel();
        if n == 0 {
            return Ok(());
        }
        let name = compile::binary_kernel(op, T::DTYPE, true);
        let (ix, n64) = (Index2::new(l, rl)?, n as u64);
        let dev = self.device.clone();
        let b = rhs.slice::<T>()?;
        let a = T::get_mut(&mut self.data).ok_or(KernelError::DTypeMismatch {
            lhs: rhs.dtype(),
            rhs: T::DTYPE,
        })?;
        let mut args = [
            KernelArg::U64(n64),
            KernelArg::Index2(&ix),
            T::output(a),
            T::input(b),
        ];
        // SAFETY: matches binary.cu's binary_assign (n, Index2, T*, const T*); both
        // views fit (checked); `a` and `b` are different buffers (one is borrowed
        // mutably), and the destination view is contiguous, so no element is
        // written twice.
        unsafe {
            launch(
                &dev,
                Module::Binary,
                name,
                launch_config(&dev, n),
                &mut args,
            )
        }
    }

    fn copy_into_typed<T: CudaElement>(
        &self,
        l: &Layout,
        dst: &mut CudaStorage,
        dl: &Layout,
        accumulate: bool,
    ) -> Result<()> {
        let n = l.numel();
        if n == 0 {
            return Ok(());
        }
        let ix = Index2::new(l, dl)?;
        let repeats = ix.b_has_zero_stride();
        let kind = match (accumulate, repeats) {
            (false, false) => "copy",
            // Refused by check_writes_once before: the writes would race.
            (false, true) => {
                return Err(KernelError::Internal(
                    "copy into a view with repeated elements".into(),
                ));
            }
            (true, false) => "copy_add",
            (true, true) => "copy_atomic_add",
        };
        let name = compile::copy_kernel(kind, T::DTYPE);
        let n64 = n as u64;
        let dev = self.device.clone();
        let src = self.slice::<T>()?;
        let mismatch = KernelError::DTypeMismatch {
            lhs: self.dtype(),
            rhs: dst.dtype(),
        };
        let d = T::get_mut(&mut dst.data).ok_or(mismatch)?;
        let mut args = [
            KernelArg::U64(n64),
            KernelArg::Index2(&ix),
            T::input(src),
            T::output(d),
        ];
        // SAFETY: matches copy.cu's (n, Index2, const T*, T*); both views fit their
        // buffers (checked); repeated destinations go through the atomic kernel.
        unsafe { launch(&dev, Module::Copy, &name, launch_config(&dev, n), &mut args) }
    }

    fn cast_typed<F: CudaElement, T: CudaElement>(&self, l: &Layout) -> Result<CudaStorage> {
        let n = l.numel();
        let dev = &self.device;
        // SAFETY: the kernel writes all n elements.
        let mut out = unsafe { alloc::<T>(dev, n)? };
        if n > 0 {
            let name = compile::cast_kernel(F::DTYPE, T::DTYPE);
            let (ix, n64) = (Index1::new(l)?, n as u64);
            let src = self.slice::<F>()?;
            let mut args = [
                KernelArg::U64(n64),
                KernelArg::Index1(&ix),
                F::input(src),
                T::output(&mut out),
            ];
            // SAFETY: matches copy.cu's cast (n, Index1, const F*, T*); the view fits.
            unsafe { launch(dev, Module::Copy, &name, launch_config(dev, n), &mut args)? };
        }
        Ok(CudaStorage::new(out, n, dev.clone()))
    }

    fn filled_typed<T: CudaElement>(dev: &Arc<CudaDevice>, n: usize, value: f64) -> Result<Self> {
        // SAFETY: the fill kernel (or the memset) writes every element.
        let mut out = unsafe { alloc::<T>(dev, n)? };
        if value.to_bits() == 0 {
            dev.driver.memset_zero(&mut out)?;
        } else {
            let name = compile::fill_kernel(T::DTYPE);
            let n_alloc = n.max(1) as u64;
            let mut args = [
                KernelArg::U64(n_alloc),
                T::output(&mut out),
                KernelArg::F64(value),
            ];
            // SAFETY: matches copy.cu's fill (n, T*, double); `out` holds n_alloc elements.
            unsafe { launch(dev, Module::Copy, &name, launch_config(dev, n), &mut args)? };
        }
        Ok(CudaStorage::new(out, n, dev.clone()))
    }

    /// A buffer of `len` elements on `device`, all `value`.
    pub fn filled(device: &Arc<CudaDevice>, len: usize, dtype: DType, value: f64) -> Result<Self> {
        with_dtype!(dtype, T => Self::filled_typed::<T>(device, len, value))
    }
}

impl BackendStorage for CudaStorage {
    fn dtype(&self) -> DType {
        match self.data {
            CudaData::F32(_) => DType::F32,
            CudaData::F64(_) => DType::F64,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn unary(&self, l: &Layout, op: UnaryOp) -> Result<Self> {
        check_fits(self.len, l)?;
        with_dtype!(self.dtype(), T => self.unary_typed::<T>(l, op))
    }

    fn binary(&self, l: &Layout, rhs: &Self, rl: &Layout, op: BinaryOp) -> Result<Self> {
        check_fits(self.len, l)?;
        check_fits(rhs.len, rl)?;
        self.same_device(rhs)?;
        if self.dtype() != rhs.dtype() {
            return Err(KernelError::DTypeMismatch {
                lhs: self.dtype(),
                rhs: rhs.dtype(),
            });
        }
        with_dtype!(self.dtype(), T => self.binary_typed::<T>(l, rhs, rl, op))
    }

    fn binary_assign(&mut self, l: &Layout, rhs: &Self, rl: &Layout, op: BinaryOp) -> Result<()> {
        check_fits(self.len, l)?;
        check_fits(rhs.len, rl)?;
        self.same_device(rhs)?;
        if !l.is_contiguous() {
            return Err(KernelError::Layout(
                "binary_assign needs a contiguous destination".into(),
            ));
        }
        if self.dtype() != rhs.dtype() {
            return Err(KernelError::DTypeMismatch {
                lhs: self.dtype(),
                rhs: rhs.dtype(),
            });
        }
        with_dtype!(self.dtype(), T => self.binary_assign_typed::<T>(l, rhs, rl, op))
    }

    fn reduce(&self, l: &Layout, op: ReduceOp, axes: &[usize]) -> Result<Self> {
        check_fits(self.len, l)?;
        check_axes(l, axes)?;
        with_dtype!(self.dtype(), T => reduce::reduce::<T>(self, l, op, axes))
    }

    fn matmul(&self, l: &Layout, rhs: &Self, rl: &Layout) -> Result<Self> {
        check_fits(self.len, l)?;
        check_fits(rhs.len, rl)?;
        let dims = matmul_dims(l, rl)?;
        self.same_device(rhs)?;
        if self.dtype() != rhs.dtype() {
            return Err(KernelError::DTypeMismatch {
                lhs: self.dtype(),
                rhs: rhs.dtype(),
            });
        }
        match self.dtype() {
            DType::F32 => matmul::matmul::<f32>(self, l, rhs, rl, dims),
            DType::F64 => matmul::matmul::<f64>(self, l, rhs, rl, dims),
            other => Err(not_on_cuda(other)),
        }
    }

    fn copy_into(&self, l: &Layout, dst: &mut Self, dl: &Layout, accumulate: bool) -> Result<()> {
        check_fits(self.len, l)?;
        check_fits(dst.len, dl)?;
        self.same_device(dst)?;
        check_same_shape("copy", l, dl)?;
        check_writes_once(dl, accumulate)?;
        if self.dtype() != dst.dtype() {
            return Err(KernelError::DTypeMismatch {
                lhs: self.dtype(),
                rhs: dst.dtype(),
            });
        }
        with_dtype!(self.dtype(), T => self.copy_into_typed::<T>(l, dst, dl, accumulate))
    }

    fn cast(&self, l: &Layout, dtype: DType) -> Result<Self> {
        check_fits(self.len, l)?;
        match (self.dtype(), dtype) {
            (DType::F32, DType::F64) => self.cast_typed::<f32, f64>(l),
            (DType::F64, DType::F32) => self.cast_typed::<f64, f32>(l),
            (DType::F32, DType::F32) | (DType::F64, DType::F64) => self.unary(l, UnaryOp::Copy),
            (DType::F32 | DType::F64, other) | (other, _) => Err(not_on_cuda(other)),
        }
    }

    fn filled_like(&self, len: usize, dtype: DType, value: f64) -> Result<Self> {
        Self::filled(&self.device, len, dtype, value)
    }

    fn run_elementwise<K: crate::generated::ElementwiseKernel>(
        kernel: &K,
        what: crate::generated::Eval<'_>,
        ins: &[(&Self, &Layout)],
        shape: &crate::Shape,
    ) -> Result<Self> {
        Self::run_generated(kernel, what, ins, shape)
    }

    fn run_fused(
        steps: &[crate::program::Step],
        leaves: &[(&Self, &Layout)],
        n: usize,
        dtype: DType,
        outputs: &[(usize, crate::program::Sink)],
    ) -> Result<Vec<Self>> {
        Self::run_fused_many(steps, leaves, n, dtype, outputs)
    }

    fn fused_fits(steps: &[crate::program::Step], leaves: usize, results: usize) -> bool {
        fused::fits_many(steps, leaves, results)
    }

    unsafe fn run_raw(
        launch: &crate::raw::RawLaunch<'_>,
        ins: &[(&Self, &Layout)],
        outs: &[crate::Shape],
    ) -> Result<Vec<Self>> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::run_raw(launch, ins, outs) }
    }
}

// After the macros above, which they use.
pub mod fused;
mod generated;
mod raw;
