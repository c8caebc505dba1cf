//! The calls the CUDA backend makes of a device, as one small trait.
//!
//! Everything in `mod.rs`, `reduce.rs` and `matmul.rs` that reaches the device
//! (allocation, copies, memset, kernel lookup and launch, cuBLAS's gemm,
//! synchronisation, the memory pool) goes through [`Driver`]. Two
//! implementations exist, chosen at build time: `real::Cudarc` (cudarc: the GPU),
//! and, with the test-only feature `cuda-emulator`, `emu::Emulator`, which runs
//! the same `.cu` sources on the host (see [`super::emu`]). The launch planning
//! (grids, splits, leading dimensions) stays in the backend, so the emulated
//! device runs exactly the backend's own code.

use super::CudaElement;
use super::compile::{Contraction, Module};
use super::index::{Index1, Index2, ReduceIndex};
use super::raw::RawParams;
use crate::Result;

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
    /// A buffer the kernel only reads (a `const T*` parameter).
    InF32(&'a D::Buf<f32>),
    InF64(&'a D::Buf<f64>),
    /// A buffer the kernel writes.
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

/// A device, as the backend uses it.
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// An owned device buffer of `T`s (freed when dropped).
    type Buf<T: CudaElement>: Send + Sync;
    /// A loaded kernel.
    type Func: Clone + Send + Sync;

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

    /// `n > 0` uninitialised elements; `Err` with the driver's message.
    ///
    /// # Safety
    /// The caller writes every element before reading it.
    unsafe fn alloc<T: CudaElement>(&self, n: usize) -> std::result::Result<Self::Buf<T>, String>;

    /// A buffer holding a copy of `v` (not empty).
    fn upload<T: CudaElement>(&self, v: &[T]) -> Result<Self::Buf<T>>;

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

    /// Loads kernel `name` of a generated program (an op generated from an
    /// elementwise function, a fused chain, or a raw program: `source` is the whole
    /// program), compiling it at the first use of `key` with `contraction` (on the
    /// emulated device: always contracted, see `emu`). The context must be bound.
    fn load_generated(
        &self,
        key: &str,
        source: &str,
        name: &str,
        contraction: Contraction,
    ) -> Result<Self::Func>;

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
    unsafe fn gemm<T: CudaElement>(
        &self,
        g: &GemmArgs,
        a: &Self::Buf<T>,
        a_off: usize,
        b: &Self::Buf<T>,
        b_off: usize,
        c: &mut Self::Buf<T>,
    ) -> Result<()>;

    /// Waits for the device's queued work; reports an error any earlier
    /// asynchronous call recorded.
    fn synchronize(&self) -> Result<()>;

    /// Free and total device memory in bytes.
    fn memory_info(&self) -> Result<(usize, usize)>;
}
