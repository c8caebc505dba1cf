//! The calls the CUDA backend makes of a device, as one small trait.
//!
//! Everything in `mod.rs`, `reduce.rs` and `matmul.rs` that reaches the device
//! (allocation, copies, memset, kernel lookup and launch, cuBLAS's gemm,
//! synchronisation, the memory pool) goes through [`Driver`]. Two
//! implementations exist, chosen at build time: `hardware::Cudarc` (cudarc: the
//! GPU), and, with the test-only feature `cuda-emulator`, `emu::Emulator`, which runs
//! the same `.cu` sources on the host (see [`super::emu`]). The launch planning
//! (grids, splits, leading dimensions) stays in the backend, so the emulated
//! device runs exactly the backend's own code.

use super::compile::{Contraction, Module};
use super::index::{Index1, Index2, RawParams, ReduceIndex};
use super::{CudaElement, CudaFloat};
use crate::Result;

/// The dynamic shared memory a kernel may launch with unless it opted in to more
/// ([`Driver::allow_dynamic_shared_memory`]): 48 KiB, on every architecture.
pub(crate) const DEFAULT_MAX_DYNAMIC_SHARED: u32 = 48 * 1024;

/// A kernel launch's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaunchCfg {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
}

/// One kernel argument, as the kernel's parameter list takes it.
pub(crate) enum KernelArg<'a, D: Driver> {
    U64(u64),
    F64(f64),
    Index1(&'a Index1),
    Index2(&'a Index2),
    Reduce(&'a ReduceIndex),
    /// The parameter struct of a raw program (`RAW_PARAMS`).
    Raw(&'a RawParams),
    /// A buffer the kernel only reads (a `const T*` parameter): bytes (`bool`
    /// and `u8`), 16-bit patterns (`f16` and `bf16`), `i32`, `i64`, `f32`, `f64`.
    InU8(&'a D::Buf<u8>),
    InU16(&'a D::Buf<u16>),
    InI32(&'a D::Buf<i32>),
    InI64(&'a D::Buf<i64>),
    InF32(&'a D::Buf<f32>),
    InF64(&'a D::Buf<f64>),
    /// A buffer the kernel writes, of the same element types.
    OutU8(&'a mut D::Buf<u8>),
    OutU16(&'a mut D::Buf<u16>),
    OutI32(&'a mut D::Buf<i32>),
    OutI64(&'a mut D::Buf<i64>),
    OutF32(&'a mut D::Buf<f32>),
    OutF64(&'a mut D::Buf<f64>),
}

/// A column-major `C = op(A) op(B)` (alpha 1, beta 0), batched with strides when
/// `batch > 1`: cuBLAS's `gemm` / `gemmStridedBatched` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GemmArgs {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub lda: i32,
    pub ldb: i32,
    pub ldc: i32,
    pub batch: i32,
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
}

/// Why an allocation failed: the driver's message, and whether the device is out
/// of memory (the caller then trims the pool and retries) or the allocator itself
/// failed (a stream-ordered pool that is unsupported or broken: the caller falls
/// back to plain allocation).
#[derive(Clone, Debug)]
pub(crate) struct AllocError {
    pub out_of_memory: bool,
    pub message: String,
}

/// A device, as the backend uses it.
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// An owned device buffer of `T`s (freed when dropped).
    type Buf<T: CudaElement>: Send + Sync;
    /// A loaded kernel.
    type Func: Clone + Send + Sync;
    /// A loaded generated program (unloaded when the last handle, and the last
    /// of its kernels, drop).
    type Program: Send + Sync;

    /// `Err(reason)` when no device can be opened on this machine at all (no
    /// driver library, no NVRTC).
    fn check_libraries() -> std::result::Result<(), String>;

    /// Number of devices (0 when there is no driver).
    fn device_count() -> usize;

    /// Opens device `ordinal` (`< device_count()`); `Err(reason)` when it fails.
    fn open(ordinal: usize) -> std::result::Result<Self, String>;

    fn name(&self) -> String;
    fn compute_capability(&self) -> (i32, i32);
    fn multiprocessors(&self) -> usize;

    /// Makes the device's context current on the calling thread.
    fn bind(&self) -> Result<()>;

    /// How many freed bytes the device's memory pool may keep across
    /// synchronisations (u64::MAX: all of them).
    fn set_pool_release_threshold(&self, bytes: u64) -> Result<()>;

    /// Returns the pool's unused memory to the device (after the stream's work).
    fn trim(&self) -> Result<()>;

    /// `None` when the device has a stream-ordered memory pool; else why not (the
    /// backend then allocates with plain `cuMemAlloc` from the start).
    fn pool_unavailable(&self) -> Option<String>;

    /// `n > 0` uninitialised elements: from the stream-ordered pool
    /// (`cuMemAllocAsync`) when `pooled`, else a plain allocation (`cuMemAlloc`,
    /// freed by `cuMemFree` after the stream's work).
    ///
    /// # Safety
    /// The caller writes every element before reading it.
    unsafe fn alloc<T: CudaElement>(
        &self,
        n: usize,
        pooled: bool,
    ) -> std::result::Result<Self::Buf<T>, AllocError>;

    /// Copies `v` into `b` (of `v.len()` elements, not empty).
    fn upload<T: CudaElement>(&self, v: &[T], b: &mut Self::Buf<T>) -> Result<()>;

    /// Copies `out.len()` elements from element `offset` of `b` into `out`.
    fn download<T: CudaElement>(
        &self,
        b: &Self::Buf<T>,
        offset: usize,
        out: &mut [T],
    ) -> Result<()>;

    /// Sets every byte of `b` to zero.
    fn memset_zero<T: CudaElement>(&self, b: &mut Self::Buf<T>) -> Result<()>;

    /// Loads kernel `name` of `module` (compiling the module at its first use).
    /// The context must be bound.
    fn load_function(&self, module: Module, name: &str) -> Result<Self::Func>;

    /// Compiles and loads a generated program (an op generated from an
    /// elementwise function, a fused chain, or a raw program: `source` is the whole
    /// program; `key` names it) with `contraction` (on the emulated device: always
    /// contracted, see `emu`). The device caches programs (`CudaDevice`); this
    /// compiles every time. The context must be bound.
    fn load_generated(
        &self,
        key: &str,
        source: &str,
        contraction: Contraction,
    ) -> Result<Self::Program>;

    /// Kernel `name` of the generated program `program` (named `key`). The
    /// context must be bound.
    fn generated_function(
        &self,
        program: &Self::Program,
        key: &str,
        name: &str,
    ) -> Result<Self::Func>;

    /// Lets `f` (the kernel `name`) launch with up to `bytes` of dynamic shared
    /// memory per block (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`):
    /// needed above [`DEFAULT_MAX_DYNAMIC_SHARED`]. `Err` naming the device's
    /// opt-in maximum when `bytes` (with the kernel's static shared memory) is
    /// more.
    fn allow_dynamic_shared_memory(&self, f: &Self::Func, name: &str, bytes: u32) -> Result<()>;

    /// Launches `f` (the kernel `name`) with `args`.
    ///
    /// # Safety
    /// `args` match the kernel's parameters, and every element the kernel reads
    /// or writes lies inside the buffers passed.
    unsafe fn launch(
        &self,
        f: &Self::Func,
        name: &str,
        cfg: LaunchCfg,
        args: &mut [KernelArg<'_, Self>],
    ) -> Result<()>;

    /// cuBLAS: `c = op(a) op(b)`, `a` and `b` read from element `a_off` and
    /// `b_off` of their buffers. The context must be bound.
    ///
    /// # Safety
    /// The arguments describe matrices inside the buffers.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm<T: CudaFloat>(
        &self,
        g: &GemmArgs,
        a: &Self::Buf<T>,
        a_off: usize,
        b: &Self::Buf<T>,
        b_off: usize,
        c: &mut Self::Buf<T>,
    ) -> Result<()>;

    /// Waits for the device's queued work (an error a kernel ran into shows
    /// here). Errors recorded by calls that could not return them are
    /// `take_recorded_error`'s.
    fn synchronize(&self) -> Result<()>;

    /// Takes the error a call that could not return one recorded (a buffer's
    /// free in its drop), if any: what it was, in words.
    fn take_recorded_error(&self) -> Option<String>;

    /// Free and total device memory in bytes.
    fn memory_info(&self) -> Result<(usize, usize)>;
}
