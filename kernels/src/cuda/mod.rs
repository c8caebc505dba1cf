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
//! Every dtype lives on the device (`bool` as bytes 0 and 1, `f16` and `bf16` as
//! their 16-bit patterns) and converts to every other there (copy.cu's `cast_*`
//! kernels, with the CPU's conversions). They compute as on the CPU: `f16` and
//! `bf16` are converted to `f32`, computed there and rounded once; the integer
//! and `bool` dtypes take the CPU's few operations (`cpu/integer.rs`: copies,
//! fills, `+ - *`, comparisons, sums to `i64`, max and min), computed in `i64`
//! and converted back; anything else is the CPU's error that asks for a float.
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
use crate::{
    BackendStorage, BinaryOp, DType, KernelError, Layout, ReduceOp, Result, Shape, UnaryOp,
};
use compile::Module;
use driver::{AllocError, Driver, KernelArg, LaunchCfg};
#[cfg(feature = "cuda-emulator")]
use emu::{BlasElement, DriverElement};
#[cfg(not(feature = "cuda-emulator"))]
use hardware::{BlasElement, DriverElement};
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
/// and moving one a `memcpy` call.) `bool` is stored as bytes 0 and 1, `f16` and
/// `bf16` as their 16-bit patterns.
pub(crate) enum CudaData {
    Bool(Box<Buf<u8>>),
    U8(Box<Buf<u8>>),
    I32(Box<Buf<i32>>),
    I64(Box<Buf<i64>>),
    F16(Box<Buf<u16>>),
    BF16(Box<Buf<u16>>),
    F32(Box<Buf<f32>>),
    F64(Box<Buf<f64>>),
}

impl CudaData {
    /// The dtype the buffer holds.
    fn dtype(&self) -> DType {
        match self {
            CudaData::Bool(_) => DType::Bool,
            CudaData::U8(_) => DType::U8,
            CudaData::I32(_) => DType::I32,
            CudaData::I64(_) => DType::I64,
            CudaData::F16(_) => DType::F16,
            CudaData::BF16(_) => DType::BF16,
            CudaData::F32(_) => DType::F32,
            CudaData::F64(_) => DType::F64,
        }
    }
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

/// An element type a device buffer holds: `u8` (for `bool` and `u8`), `u16`
/// (the bits of `f16` and `bf16`), `i32`, `i64`, `f32`, `f64`.
pub(crate) trait CudaElement: DriverElement + Copy + Send + Sync + 'static {
    /// The dtype this element type stands for in kernel names and messages (`u8`
    /// for bytes, `f16` for 16-bit patterns).
    const DTYPE: DType;
    /// The buffer as a [`CudaData`] of `dtype` (one this element type stores).
    fn wrap(s: Buf<Self>, dtype: DType) -> CudaData;
    /// The buffer, when `d` holds a dtype this element type stores.
    fn get(d: &CudaData) -> Option<&Buf<Self>>;
    /// The buffer, mutably, when `d` holds a dtype this element type stores.
    fn get_mut(d: &mut CudaData) -> Option<&mut Buf<Self>>;
    /// The buffer as a kernel's `const T*` argument.
    fn input(b: &Buf<Self>) -> KernelArg<'_, Drv>;
    /// The buffer as a kernel's `T*` argument.
    fn output(b: &mut Buf<Self>) -> KernelArg<'_, Drv>;
}

/// A floating element type the kernels and cuBLAS compute with (`f32`, `f64`).
pub(crate) trait CudaFloat: CudaElement + BlasElement {}
impl CudaFloat for f32 {}
impl CudaFloat for f64 {}

macro_rules! cuda_element {
    ($t:ty, $dtype:ident, [$($variant:ident),+], $in:ident, $out:ident) => {
        impl CudaElement for $t {
            const DTYPE: DType = DType::$dtype;
            fn wrap(s: Buf<Self>, dtype: DType) -> CudaData {
                match dtype {
                    $(DType::$variant => CudaData::$variant(Box::new(s)),)+
                    _ => CudaData::$dtype(Box::new(s)),
                }
            }
            fn get(d: &CudaData) -> Option<&Buf<Self>> {
                match d {
                    $(CudaData::$variant(s) => Some(s),)+
                    _ => None,
                }
            }
            fn get_mut(d: &mut CudaData) -> Option<&mut Buf<Self>> {
                match d {
                    $(CudaData::$variant(s) => Some(s),)+
                    _ => None,
                }
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

cuda_element!(u8, U8, [U8, Bool], InU8, OutU8);
cuda_element!(u16, F16, [F16, BF16], InU16, OutU16);
cuda_element!(i32, I32, [I32], InI32, OutI32);
cuda_element!(i64, I64, [I64], InI64, OutI64);
cuda_element!(f32, F32, [F32], InF32, OutF32);
cuda_element!(f64, F64, [F64], InF64, OutF64);

/// Calls `$body` with `$T` bound to the element type of `$dtype`, a dtype the
/// floating kernels compute in (`f32`, `f64`); any other is the error that `$op`
/// needs a floating dtype.
macro_rules! with_dtype {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => return Err($crate::cpu::needs_float($op, other)),
        }
    };
}

/// Calls `$body` with `$T` bound to the element type that stores `$dtype` on the
/// device (`u8` for `bool` and `u8`, `u16` for `f16` and `bf16`).
macro_rules! with_stored {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Bool | DType::U8 => {
                type $T = u8;
                $body
            }
            DType::F16 | DType::BF16 => {
                type $T = u16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
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
        Self::new_as(s, len, device, T::DTYPE)
    }

    /// A storage of `dtype` (one `T` stores: `bool` in bytes, `bf16` in 16-bit
    /// patterns) over the buffer `s`.
    fn new_as<T: CudaElement>(
        s: Buf<T>,
        len: usize,
        device: Arc<CudaDevice>,
        dtype: DType,
    ) -> Self {
        CudaStorage {
            data: T::wrap(s, dtype),
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
        fn upload<T: CudaElement>(
            dev: &Arc<CudaDevice>,
            v: &[T],
            dtype: DType,
        ) -> Result<CudaStorage> {
            let s = if v.is_empty() {
                unsafe { alloc::<T>(dev, 0)? }
            } else {
                // SAFETY: every element is written by the copy.
                let mut b = unsafe { alloc::<T>(dev, v.len())? };
                dev.driver.upload(v, &mut b)?;
                b
            };
            Ok(CudaStorage::new_as(s, v.len(), dev.clone(), dtype))
        }
        /// The elements of `v` as the `U`s that store them on the device.
        ///
        /// # Safety
        /// `T` and `U` have one size and alignment, and every `T` is a valid `U`.
        unsafe fn stored<T, U>(v: &[T]) -> &[U] {
            // SAFETY: forwarded to the caller; the slice covers the same bytes.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<U>(), v.len()) }
        }
        let dtype = src.dtype();
        match src {
            // SAFETY: a bool is one byte, 0 or 1: a valid u8.
            CpuStorage::Bool(v) => upload(
                device,
                unsafe { stored::<bool, u8>(&v[off..off + n]) },
                dtype,
            ),
            CpuStorage::U8(v) => upload(device, &v[off..off + n], dtype),
            CpuStorage::I32(v) => upload(device, &v[off..off + n], dtype),
            CpuStorage::I64(v) => upload(device, &v[off..off + n], dtype),
            // SAFETY: `f16` and `bf16` are `repr(transparent)` over their u16 bits.
            CpuStorage::F16(v) => upload(
                device,
                unsafe { stored::<crate::f16, u16>(&v[off..off + n]) },
                dtype,
            ),
            CpuStorage::BF16(v) => upload(
                device,
                unsafe { stored::<crate::bf16, u16>(&v[off..off + n]) },
                dtype,
            ),
            CpuStorage::F32(v) => upload(device, &v[off..off + n], dtype),
            CpuStorage::F64(v) => upload(device, &v[off..off + n], dtype),
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

    /// `n` elements from element `offset` of the buffer, on the host, as a CPU
    /// storage of this dtype.
    fn download_cpu(&self, offset: usize, n: usize) -> Result<CpuStorage> {
        // The conversions from the stored bits reuse the downloaded vector (an
        // element of the same size and alignment).
        Ok(match self.dtype() {
            DType::Bool => CpuStorage::Bool(
                self.download::<u8>(offset, n)?
                    .into_iter()
                    .map(|b| b != 0)
                    .collect(),
            ),
            DType::U8 => CpuStorage::U8(self.download(offset, n)?),
            DType::I32 => CpuStorage::I32(self.download(offset, n)?),
            DType::I64 => CpuStorage::I64(self.download(offset, n)?),
            DType::F16 => CpuStorage::F16(
                self.download::<u16>(offset, n)?
                    .into_iter()
                    .map(crate::f16::from_bits)
                    .collect(),
            ),
            DType::BF16 => CpuStorage::BF16(
                self.download::<u16>(offset, n)?
                    .into_iter()
                    .map(crate::bf16::from_bits)
                    .collect(),
            ),
            DType::F32 => CpuStorage::F32(self.download(offset, n)?),
            DType::F64 => CpuStorage::F64(self.download(offset, n)?),
        })
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
                let dense = self.contiguous(l)?;
                return dense.to_cpu(&Layout::contiguous(l.shape().clone()));
            }
            Err(_) if n == 0 => {}
            Err(_) => {
                // The span [offset, offset + required_len) holds every element.
                let span = l.required_len() - l.offset();
                let host = self.download_cpu(l.offset(), span)?;
                self.device.synchronize()?;
                let shifted = Layout::new(l.shape().clone(), l.strides(), 0)?;
                return host.cast(&shifted, self.dtype());
            }
        }
        let v = self.download_cpu(l.offset(), n)?;
        self.device.synchronize()?;
        Ok(v)
    }

    /// A contiguous copy of the view `l` in the same dtype, bit for bit.
    fn contiguous(&self, l: &Layout) -> Result<CudaStorage> {
        let dtype = self.dtype();
        if matches!(dtype, DType::F32 | DType::F64) {
            return self.unary(l, UnaryOp::Copy);
        }
        let n = l.numel();
        let dev = &self.device;
        with_stored!(dtype, T => {
            // SAFETY: the copy below writes all n elements.
            let buf = unsafe { alloc::<T>(dev, n)? };
            let mut out = CudaStorage::new_as(buf, n, dev.clone(), dtype);
            self.copy_into(l, &mut out, &Layout::contiguous(l.shape().clone()), false)?;
            Ok(out)
        })
    }

    /// The view `l` converted to `f32` (contiguous), for a computation on `f16`
    /// or `bf16`, with its layout.
    fn widened(&self, l: &Layout) -> Result<(CudaStorage, Layout)> {
        Ok((
            self.cast(l, DType::F32)?,
            Layout::contiguous(l.shape().clone()),
        ))
    }

    /// A contiguous result converted (rounded once) to `dtype`.
    fn narrowed(self, dtype: DType) -> Result<CudaStorage> {
        if self.dtype() == dtype {
            return Ok(self);
        }
        let all = Layout::contiguous(Shape::from([self.len]));
        self.cast(&all, dtype)
    }

    /// The view `l` as `i64`, which the integer dtypes compute in: `None` when it
    /// is `i64` already (then read in place), else a contiguous converted copy.
    fn as_i64(&self, l: &Layout) -> Result<Option<CudaStorage>> {
        if self.dtype() == DType::I64 {
            Ok(None)
        } else {
            Ok(Some(self.cast(l, DType::I64)?))
        }
    }

    /// `op` over an integer or bool view, as the CPU computes it
    /// (`cpu/integer.rs`): in `i64`, converted back.
    fn int_unary(&self, l: &Layout, op: UnaryOp) -> Result<CudaStorage> {
        let dtype = self.dtype();
        let (name, scalar) = match op {
            UnaryOp::Copy => return self.contiguous(l),
            UnaryOp::Fill(v) => return Self::filled(&self.device, l.numel(), dtype, v),
            UnaryOp::Neg if dtype != DType::Bool => ("neg", 0.0),
            UnaryOp::AddScalar(c) if dtype != DType::Bool => {
                ("add_scalar", integral(op.name(), dtype, c)?)
            }
            UnaryOp::MulScalar(c) if dtype != DType::Bool => {
                ("mul_scalar", integral(op.name(), dtype, c)?)
            }
            _ => return Err(crate::cpu::needs_float(op.name(), dtype)),
        };
        let wide = self.as_i64(l)?;
        let dense = Layout::contiguous(l.shape().clone());
        let (x, xl) = match &wide {
            Some(w) => (w, &dense),
            None => (self, l),
        };
        let n = l.numel();
        let dev = &self.device;
        // SAFETY: the kernel writes all n elements.
        let mut out = unsafe { alloc::<i64>(dev, n)? };
        if n > 0 {
            let name = compile::int_unary_kernel(name);
            let ix = Index1::new(xl)?;
            let src = x.slice::<i64>()?;
            let mut args = [
                KernelArg::U64(n as u64),
                KernelArg::Index1(&ix),
                i64::input(src),
                i64::output(&mut out),
                KernelArg::F64(scalar),
            ];
            // SAFETY: matches copy.cu's iunary (n, Index1, const i64*, i64*, double);
            // the view fits `x` (checked, or converted contiguously) and `out` holds
            // n elements.
            unsafe { launch(dev, Module::Copy, &name, launch_config(dev, n), &mut args)? };
        }
        CudaStorage::new(out, n, dev.clone()).narrowed(dtype)
    }

    /// `op` between two integer or bool views of one dtype, as the CPU computes it
    /// (`cpu/integer.rs`): in `i64`, converted back (comparisons give masks of 0
    /// and 1 in the dtype).
    fn int_binary(
        &self,
        l: &Layout,
        rhs: &CudaStorage,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<CudaStorage> {
        let dtype = self.dtype();
        let name = match op {
            BinaryOp::Add => "add",
            BinaryOp::Mul => "mul",
            BinaryOp::Sub if dtype != DType::Bool => "sub",
            BinaryOp::Eq => "eq",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Sub => {
                return Err(KernelError::InvalidArgument {
                    op: op.name(),
                    msg: "subtracting booleans is not defined; use `logical_xor`, or convert \
                          the operands to an integer or float dtype first"
                        .into(),
                });
            }
            BinaryOp::Div => return Err(crate::cpu::needs_float(op.name(), dtype)),
        };
        let (wa, wb) = (self.as_i64(l)?, rhs.as_i64(rl)?);
        let (da, db) = (
            Layout::contiguous(l.shape().clone()),
            Layout::contiguous(rl.shape().clone()),
        );
        let (a, al) = match &wa {
            Some(w) => (w, &da),
            None => (self, l),
        };
        let (b, bl) = match &wb {
            Some(w) => (w, &db),
            None => (rhs, rl),
        };
        let n = l.numel();
        let dev = &self.device;
        // SAFETY: the kernel writes all n elements.
        let mut out = unsafe { alloc::<i64>(dev, n)? };
        if n > 0 {
            let name = compile::int_binary_kernel(name);
            let ix = Index2::new(al, bl)?;
            let (x, y) = (a.slice::<i64>()?, b.slice::<i64>()?);
            let mut args = [
                KernelArg::U64(n as u64),
                KernelArg::Index2(&ix),
                i64::input(x),
                i64::input(y),
                i64::output(&mut out),
            ];
            // SAFETY: matches copy.cu's ibinary (n, Index2, const i64*, const i64*,
            // i64*); both views fit their buffers and `out` holds n elements.
            unsafe { launch(dev, Module::Copy, &name, launch_config(dev, n), &mut args)? };
        }
        CudaStorage::new(out, n, dev.clone()).narrowed(dtype)
    }

    /// A reduction of an integer or bool view, as the CPU computes it
    /// (`cpu/integer.rs`): in `i64`; sums give `i64`, max and min the dtype.
    fn int_reduce(&self, l: &Layout, op: ReduceOp, axes: &[usize]) -> Result<CudaStorage> {
        let wide = self.as_i64(l)?;
        let dense = Layout::contiguous(l.shape().clone());
        let (x, xl) = match &wide {
            Some(w) => (w, &dense),
            None => (self, l),
        };
        let out = reduce::pass::<i64, i64>(x, xl, op, axes)?;
        match op {
            ReduceOp::Sum => Ok(out),
            ReduceOp::Max | ReduceOp::Min => out.narrowed(self.dtype()),
        }
    }

    /// `dst`'s view `dl` += this view `l` where destinations repeat, for a dtype
    /// with no atomic addition (`u8`, `f16`, `bf16`): the destination buffer is
    /// converted to `i32` or `f32`, the sums made there atomically, and the buffer
    /// converted back. For `u8` the result is the CPU's bit for bit (wrapping sums
    /// are modular); for `f16` and `bf16` each destination's sum is rounded once,
    /// where the CPU rounds after each addition.
    fn accumulate_widened(&self, l: &Layout, dst: &mut CudaStorage, dl: &Layout) -> Result<()> {
        let dtype = dst.dtype();
        let wide = if dtype.is_float() {
            DType::F32
        } else {
            DType::I32
        };
        let src = self.cast(l, wide)?;
        let all = Layout::contiguous(Shape::from([dst.len]));
        let mut acc = dst.cast(&all, wide)?;
        src.copy_into(&Layout::contiguous(l.shape().clone()), &mut acc, dl, true)?;
        let mut back = acc.cast(&all, dtype)?;
        std::mem::swap(&mut dst.data, &mut back.data);
        Ok(())
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
        let name = compile::copy_kernel(kind, self.dtype());
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

    fn cast_typed<F: CudaElement, T: CudaElement>(
        &self,
        l: &Layout,
        dtype: DType,
    ) -> Result<CudaStorage> {
        let n = l.numel();
        let dev = &self.device;
        // SAFETY: the kernel writes all n elements.
        let mut out = unsafe { alloc::<T>(dev, n)? };
        if n > 0 {
            let name = compile::cast_kernel(self.dtype(), dtype);
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
        Ok(CudaStorage::new_as(out, n, dev.clone(), dtype))
    }

    fn filled_typed<T: CudaElement>(
        dev: &Arc<CudaDevice>,
        n: usize,
        dtype: DType,
        value: f64,
    ) -> Result<Self> {
        // SAFETY: the fill kernel (or the memset) writes every element.
        let mut out = unsafe { alloc::<T>(dev, n)? };
        if value.to_bits() == 0 {
            dev.driver.memset_zero(&mut out)?;
        } else {
            let name = compile::fill_kernel(dtype);
            let n_alloc = n.max(1) as u64;
            let mut args = [
                KernelArg::U64(n_alloc),
                T::output(&mut out),
                KernelArg::F64(value),
            ];
            // SAFETY: matches copy.cu's fill (n, T*, double); `out` holds n_alloc elements.
            unsafe { launch(dev, Module::Copy, &name, launch_config(dev, n), &mut args)? };
        }
        Ok(CudaStorage::new_as(out, n, dev.clone(), dtype))
    }

    /// A buffer of `len` elements on `device`, all `value` (converted to `dtype`
    /// as the CPU converts it: rounded to nearest for `f16` and `bf16`, truncated
    /// and saturated for the integers, "not zero" for `bool`).
    pub fn filled(device: &Arc<CudaDevice>, len: usize, dtype: DType, value: f64) -> Result<Self> {
        with_stored!(dtype, T => Self::filled_typed::<T>(device, len, dtype, value))
    }
}

/// The integral value of a scalar parameter for an integer dtype, as `f64`, or
/// the CPU's error that says to convert.
fn integral(op: &'static str, dtype: DType, s: f64) -> Result<f64> {
    crate::cpu::integer::integral(op, dtype, s).map(|i| i as f64)
}

impl BackendStorage for CudaStorage {
    fn dtype(&self) -> DType {
        self.data.dtype()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn unary(&self, l: &Layout, op: UnaryOp) -> Result<Self> {
        check_fits(self.len, l)?;
        match self.dtype() {
            DType::F32 => self.unary_typed::<f32>(l, op),
            DType::F64 => self.unary_typed::<f64>(l, op),
            d if d.is_half() => {
                // Computed in f32, rounded once.
                let (w, wl) = self.widened(l)?;
                w.unary(&wl, op)?.narrowed(d)
            }
            _ => self.int_unary(l, op),
        }
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
        match self.dtype() {
            DType::F32 => self.binary_typed::<f32>(l, rhs, rl, op),
            DType::F64 => self.binary_typed::<f64>(l, rhs, rl, op),
            d if d.is_half() => {
                let ((a, al), (b, bl)) = (self.widened(l)?, rhs.widened(rl)?);
                a.binary(&al, &b, &bl, op)?.narrowed(d)
            }
            _ => self.int_binary(l, rhs, rl, op),
        }
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
        match self.dtype() {
            DType::F32 => self.binary_assign_typed::<f32>(l, rhs, rl, op),
            DType::F64 => self.binary_assign_typed::<f64>(l, rhs, rl, op),
            _ => {
                // Other dtypes: computed into a new buffer and written back.
                let out = self.binary(l, rhs, rl, op)?;
                let ol = Layout::contiguous(l.shape().clone());
                out.copy_into(&ol, self, l, false)
            }
        }
    }

    fn reduce(&self, l: &Layout, op: ReduceOp, axes: &[usize]) -> Result<Self> {
        check_fits(self.len, l)?;
        check_axes(l, axes)?;
        match self.dtype() {
            DType::F32 => reduce::reduce::<f32>(self, l, op, axes),
            DType::F64 => reduce::reduce::<f64>(self, l, op, axes),
            d if d.is_half() => {
                // Accumulated as f32 reduces (sums in f64), rounded once to f32,
                // then to the dtype.
                let (w, wl) = self.widened(l)?;
                w.reduce(&wl, op, axes)?.narrowed(d)
            }
            _ => self.int_reduce(l, op, axes),
        }
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
            d if d.is_half() => {
                // Products accumulated in f32, each result rounded once.
                let ((a, al), (b, bl)) = (self.widened(l)?, rhs.widened(rl)?);
                a.matmul(&al, &b, &bl)?.narrowed(d)
            }
            other => Err(crate::cpu::needs_float("matmul", other)),
        }
    }

    fn copy_into(&self, l: &Layout, dst: &mut Self, dl: &Layout, accumulate: bool) -> Result<()> {
        check_fits(self.len, l)?;
        check_fits(dst.len, dl)?;
        self.same_device(dst)?;
        check_same_shape("copy", l, dl)?;
        check_writes_once(dl, accumulate)?;
        let dtype = self.dtype();
        if dtype != dst.dtype() {
            return Err(KernelError::DTypeMismatch {
                lhs: dtype,
                rhs: dst.dtype(),
            });
        }
        if l.numel() == 0 {
            return Ok(());
        }
        if accumulate
            && !compile::ATOMIC_ADD_DTYPES.contains(&dtype)
            && Index2::new(l, dl)?.b_has_zero_stride()
        {
            return self.accumulate_widened(l, dst, dl);
        }
        with_stored!(dtype, T => self.copy_into_typed::<T>(l, dst, dl, accumulate))
    }

    fn cast(&self, l: &Layout, dtype: DType) -> Result<Self> {
        check_fits(self.len, l)?;
        if dtype == self.dtype() {
            return self.contiguous(l);
        }
        with_stored!(self.dtype(), F => {
            with_stored!(dtype, T => self.cast_typed::<F, T>(l, dtype))
        })
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
        let Some(half) = ins.iter().map(|(s, _)| s.dtype()).find(|d| d.is_half()) else {
            return Self::run_generated(kernel, what, ins, shape);
        };
        // As the CPU: the f16 and bf16 operands converted to f32, the op computed
        // there, its result rounded once.
        let mut wide = Vec::with_capacity(ins.len());
        for &(s, l) in ins {
            let (w, wl) = if s.dtype().is_half() {
                let (w, wl) = s.widened(l)?;
                (Some(w), wl)
            } else {
                (None, l.clone())
            };
            wide.push((w, wl));
        }
        let ins: Vec<(&Self, &Layout)> = ins
            .iter()
            .zip(&wide)
            .map(|(&(s, _), (w, wl))| (w.as_ref().unwrap_or(s), wl))
            .collect();
        Self::run_generated(kernel, what, &ins, shape)?.narrowed(half)
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
