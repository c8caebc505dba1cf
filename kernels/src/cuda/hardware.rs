//! [`Driver`] on a GPU, through cudarc.
//!
//! Every library is checked for before the first cudarc call that would load it
//! (cudarc panics when a library is missing). Each device has one stream; every
//! kernel, copy, cuBLAS call and free of that device is ordered on it, so no
//! cross-stream synchronisation (and no per-buffer event) is needed. The fixed
//! modules are cached per device, machine code per architecture; generated
//! programs are cached by the device (`CudaDevice`, bounded). Buffers come from
//! the device's stream-ordered pool, or are plain allocations where it has none
//! or it fails (`DevBuf`).

use super::CudaElement;
use super::compile::{self, Contraction, Module, Output};
use super::driver::{AllocError, Driver, GemmArgs, KernelArg, LaunchCfg};
use crate::{KernelError, Result};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::driver::sys::{self, CUdevice_attribute, CUmemPool_attribute};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, DeviceRepr,
    DriverError, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What an element type needs for cudarc: a device representation.
pub(crate) trait DriverElement: DeviceRepr + ValidAsZeroBits + Unpin + Sized {}
impl<T: DeviceRepr + ValidAsZeroBits + Unpin + Sized> DriverElement for T {}

/// What a floating element type needs for cuBLAS.
pub(crate) trait BlasElement: DriverElement {
    /// `CudaBlas::gemm` or `gemm_strided_batched` for this type.
    ///
    /// # Safety
    /// As cuBLAS's: the arguments describe matrices inside the buffers.
    unsafe fn gemm(
        blas: &CudaBlas,
        g: &GemmArgs,
        a: &CudaView<'_, Self>,
        b: &CudaView<'_, Self>,
        c: &mut CudaSlice<Self>,
    ) -> std::result::Result<(), cudarc::cublas::result::CublasError>;
}

fn op(transpose: bool) -> cublasOperation_t {
    if transpose {
        cublasOperation_t::CUBLAS_OP_T
    } else {
        cublasOperation_t::CUBLAS_OP_N
    }
}

macro_rules! driver_element {
    ($t:ty) => {
        impl BlasElement for $t {
            unsafe fn gemm(
                blas: &CudaBlas,
                g: &GemmArgs,
                a: &CudaView<'_, Self>,
                b: &CudaView<'_, Self>,
                c: &mut CudaSlice<Self>,
            ) -> std::result::Result<(), cudarc::cublas::result::CublasError> {
                let gemm = GemmConfig {
                    transa: op(g.trans_a),
                    transb: op(g.trans_b),
                    m: g.m,
                    n: g.n,
                    k: g.k,
                    alpha: 1.0,
                    lda: g.lda,
                    ldb: g.ldb,
                    beta: 0.0,
                    ldc: g.ldc,
                };
                // SAFETY: forwarded to the caller.
                unsafe {
                    if g.batch == 1 {
                        Gemm::<$t>::gemm(blas, gemm, a, b, c)
                    } else {
                        let cfg = StridedBatchedConfig {
                            gemm,
                            batch_size: g.batch,
                            stride_a: g.stride_a,
                            stride_b: g.stride_b,
                            stride_c: g.stride_c,
                        };
                        Gemm::<$t>::gemm_strided_batched(blas, cfg, a, b, c)
                    }
                }
            }
        }
    };
}

driver_element!(f32);
driver_element!(f64);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded maps stay consistent even if a holder panicked.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn driver_error(what: &str, e: DriverError) -> KernelError {
    KernelError::Device(format!("CUDA driver error in {what}: {e:?}"))
}

/// True when the CUDA driver library (libcuda) can be loaded.
pub(crate) fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library under its known names.
    unsafe { sys::is_culib_present() }
}

/// True when cuBLAS can be loaded (needed for matrix products only).
pub(crate) fn cublas_available() -> bool {
    // SAFETY: as above.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// One GPU through cudarc: its context, its stream, its modules and cuBLAS.
pub(crate) struct Cudarc {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (i32, i32),
    multiprocessors: usize,
    /// The device's default memory pool (`cuMemAllocAsync`), when it has one.
    pool: Option<MemPool>,
    /// Why `pool` is `None`.
    no_pool: Option<String>,
    modules: Mutex<HashMap<Module, Arc<CudaModule>>>,
    /// Created at the first matrix product; the lock also serialises cuBLAS calls
    /// (a handle is not to be used by two threads at once).
    blas: Mutex<Option<CudaBlas>>,
}

/// A buffer: a cudarc slice from the stream-ordered pool (freed by cudarc's drop,
/// `cuMemFreeAsync`), or a plain allocation (`cuMemAlloc`, the fallback when the
/// pool fails), which cudarc's drop would also free with `cuMemFreeAsync` on a
/// device with pools: this drop frees it with `cuMemFree` after the stream's work.
pub(crate) struct DevBuf<T> {
    slice: ManuallyDrop<CudaSlice<T>>,
    plain: bool,
}

impl<T> DevBuf<T> {
    fn s(&self) -> &CudaSlice<T> {
        &self.slice
    }
    fn s_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> Drop for DevBuf<T> {
    fn drop(&mut self) {
        // SAFETY: the slice is taken once, here, and not used after.
        let slice = unsafe { ManuallyDrop::take(&mut self.slice) };
        if !self.plain {
            drop(slice);
            return;
        }
        let stream = slice.stream().clone();
        let ctx = slice.context().clone();
        let ptr = slice.leak();
        // As cudarc frees a plain allocation: after the stream's work, errors
        // recorded in the context (reported by the device's next call).
        ctx.record_err(stream.synchronize());
        // SAFETY: `ptr` came from `malloc_sync` (`alloc` with `pooled` false) and
        // nothing uses it any more.
        ctx.record_err(unsafe { cudarc::driver::result::free_sync(ptr) });
    }
}

/// A `CUmemoryPool` handle (a pointer the driver owns, valid for the process).
struct MemPool(sys::CUmemoryPool);
// SAFETY: the handle is an opaque driver object; the driver's pool calls are
// thread-safe.
unsafe impl Send for MemPool {}
unsafe impl Sync for MemPool {}

impl Cudarc {
    fn with_blas<R>(&self, f: impl FnOnce(&CudaBlas) -> Result<R>) -> Result<R> {
        let mut blas = lock(&self.blas);
        if blas.is_none() {
            if !cublas_available() {
                return Err(KernelError::Device(
                    "matmul on CUDA needs cuBLAS, and libcublas.so was not found; install the \
                     CUDA toolkit or `pip install nvidia-cublas` and add its lib folder to \
                     LD_LIBRARY_PATH"
                        .into(),
                ));
            }
            let handle = CudaBlas::new(self.stream.clone())
                .map_err(|e| KernelError::Device(format!("cublasCreate: {e:?}")))?;
            *blas = Some(handle);
        }
        match blas.as_ref() {
            Some(b) => f(b),
            None => Err(KernelError::Device("cuBLAS handle missing".into())),
        }
    }

    fn module(&self, module: Module) -> Result<Arc<CudaModule>> {
        let mut modules = lock(&self.modules);
        if let Some(m) = modules.get(&module) {
            return Ok(m.clone());
        }
        let (major, minor) = self.compute_capability;
        let cubin = cached_cubin(module, &format!("sm_{major}{minor}"))?;
        let m = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin.to_vec()))
            .map_err(|e| driver_error(&format!("loading {}", module.file()), e))?;
        modules.insert(module, m.clone());
        Ok(m)
    }
}

impl Driver for Cudarc {
    type Buf<T: CudaElement> = DevBuf<T>;
    type Func = CudaFunction;
    type Program = Arc<CudaModule>;

    fn check_libraries() -> std::result::Result<(), String> {
        if !driver_available() {
            return Err(
                "the NVIDIA driver library (libcuda.so) was not found; this machine has \
                        no usable NVIDIA driver"
                    .into(),
            );
        }
        if !compile::nvrtc_available() {
            return Err(
                "the NVRTC library (libnvrtc.so) was not found; install the CUDA \
                        toolkit or `pip install nvidia-cuda-nvrtc` and add its lib folder to \
                        LD_LIBRARY_PATH"
                    .into(),
            );
        }
        Ok(())
    }

    fn device_count() -> usize {
        if !driver_available() {
            return 0;
        }
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .unwrap_or(0)
    }

    fn open(ordinal: usize) -> std::result::Result<Self, String> {
        let err = |what: &str, e: DriverError| driver_error(what, e).to_string();
        let ctx = CudaContext::new(ordinal).map_err(|e| err("cuCtx create", e))?;
        // SAFETY: set before any buffer exists. Every buffer of this device is
        // allocated, used and freed on the single stream below, in stream order, so
        // the per-buffer events cudarc would otherwise record are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(|e| err("cuStreamCreate", e))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(|e| err("compute capability", e))?;
        let multiprocessors = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| err("multiprocessor count", e))?
            .max(1) as usize;
        let name = ctx.name().unwrap_or_else(|_| "unknown".into());
        let (pool, no_pool) = if ctx.has_async_alloc() {
            let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
            // SAFETY: the driver library is loaded (the context exists); `pool` is
            // valid for the call.
            match unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) }.result() {
                Ok(()) => (Some(MemPool(pool)), None),
                Err(e) => (None, Some(err("cuDeviceGetDefaultMemPool", e))),
            }
        } else {
            (
                None,
                Some(
                    "the device or driver has no stream-ordered memory pools \
                     (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)"
                        .into(),
                ),
            )
        };
        Ok(Cudarc {
            ctx,
            stream,
            name,
            compute_capability,
            multiprocessors,
            pool,
            no_pool,
            modules: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
        })
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    fn multiprocessors(&self) -> usize {
        self.multiprocessors
    }

    fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))
    }

    fn set_pool_release_threshold(&self, bytes: u64) -> Result<()> {
        let Some(pool) = &self.pool else {
            return Ok(());
        };
        let mut threshold = bytes;
        // SAFETY: `pool` is the device's default pool; the attribute takes a
        // pointer to a u64.
        unsafe {
            sys::cuMemPoolSetAttribute(
                pool.0,
                CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            )
        }
        .result()
        .map_err(|e| driver_error("cuMemPoolSetAttribute", e))
    }

    fn trim(&self) -> Result<()> {
        let Some(pool) = &self.pool else {
            return Ok(());
        };
        // Frees queued on the stream reach the pool when the stream gets there.
        self.synchronize()?;
        // SAFETY: `pool` is the device's default pool.
        unsafe { sys::cuMemPoolTrimTo(pool.0, 0) }
            .result()
            .map_err(|e| driver_error("cuMemPoolTrimTo", e))
    }

    fn pool_unavailable(&self) -> Option<String> {
        self.no_pool.clone()
    }

    unsafe fn alloc<T: CudaElement>(
        &self,
        n: usize,
        pooled: bool,
    ) -> std::result::Result<DevBuf<T>, AllocError> {
        let fail = |e: DriverError| AllocError {
            out_of_memory: e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY,
            message: format!("{e:?}"),
        };
        if pooled && self.pool.is_some() {
            // cudarc allocates from the pool (`cuMemAllocAsync`) where the context
            // has pools, which it has when `pool` is set.
            // SAFETY: forwarded to the caller.
            let slice = unsafe { self.stream.alloc::<T>(n) }.map_err(fail)?;
            return Ok(DevBuf {
                slice: ManuallyDrop::new(slice),
                plain: false,
            });
        }
        self.bind().map_err(|e| AllocError {
            out_of_memory: false,
            message: e.to_string(),
        })?;
        let bytes = n * std::mem::size_of::<T>();
        // SAFETY: a plain allocation of `bytes` (> 0); the caller writes before
        // reading.
        let ptr = unsafe { cudarc::driver::result::malloc_sync(bytes) }.map_err(fail)?;
        // SAFETY: `ptr` holds `n` elements of `T`; event tracking is off, so this
        // creates no event. `DevBuf`'s drop frees it with `cuMemFree`.
        let slice = unsafe { self.stream.upgrade_device_ptr::<T>(ptr, n) };
        Ok(DevBuf {
            slice: ManuallyDrop::new(slice),
            plain: true,
        })
    }

    fn upload<T: CudaElement>(&self, v: &[T], b: &mut DevBuf<T>) -> Result<()> {
        self.stream
            .memcpy_htod(v, b.s_mut())
            .map_err(|e| driver_error("copy to the device", e))
    }

    fn download<T: CudaElement>(&self, b: &DevBuf<T>, offset: usize, out: &mut [T]) -> Result<()> {
        let view = b.s().slice(offset..offset + out.len());
        self.stream
            .memcpy_dtoh(&view, out)
            .map_err(|e| driver_error("copy to the host", e))
    }

    fn memset_zero<T: CudaElement>(&self, b: &mut DevBuf<T>) -> Result<()> {
        self.stream
            .memset_zeros(b.s_mut())
            .map_err(|e| driver_error("cuMemsetD8", e))
    }

    fn load_function(&self, module: Module, name: &str) -> Result<CudaFunction> {
        let m = self.module(module)?;
        m.load_function(name).map_err(|e| {
            KernelError::Device(format!(
                "kernel `{name}` is not in {} ({e:?})",
                module.file()
            ))
        })
    }

    fn load_generated(
        &self,
        key: &str,
        source: &str,
        contraction: Contraction,
    ) -> Result<Arc<CudaModule>> {
        let (major, minor) = self.compute_capability;
        let file = format!("{key}.cu");
        let cubin = compile::compile_source_with(
            &file,
            source,
            &format!("sm_{major}{minor}"),
            Output::Cubin,
            contraction,
        )?;
        self.ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| driver_error(&format!("loading {file}"), e))
    }

    fn generated_function(
        &self,
        program: &Arc<CudaModule>,
        key: &str,
        name: &str,
    ) -> Result<CudaFunction> {
        program
            .load_function(name)
            .map_err(|e| KernelError::Device(format!("kernel `{name}` is not in {key}.cu ({e:?})")))
    }

    fn allow_dynamic_shared_memory(&self, f: &CudaFunction, name: &str, bytes: u32) -> Result<()> {
        use cudarc::driver::sys::CUfunction_attribute;
        let opt_in = self
            .ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(|e| driver_error("the opt-in shared memory maximum", e))?
            .max(0) as u64;
        let fixed = f
            .shared_size_bytes()
            .map_err(|e| driver_error(&format!("the static shared memory of `{name}`"), e))?
            .max(0) as u64;
        if bytes as u64 + fixed > opt_in {
            return Err(KernelError::Device(format!(
                "kernel `{name}`: {bytes} bytes of dynamic shared memory (and {fixed} of static) \
                 per block; this device ({}) allows at most {opt_in} in all per block",
                self.name
            )));
        }
        f.set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(|e| {
            driver_error(
                &format!("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {bytes}) of `{name}`"),
                e,
            )
        })
    }

    unsafe fn launch(
        &self,
        f: &CudaFunction,
        name: &str,
        cfg: LaunchCfg,
        args: &mut [KernelArg<'_, Self>],
    ) -> Result<()> {
        let mut b = self.stream.launch_builder(f);
        for a in args.iter_mut() {
            match a {
                KernelArg::U64(v) => b.arg(&*v),
                KernelArg::F64(v) => b.arg(&*v),
                KernelArg::Index1(v) => b.arg(*v),
                KernelArg::Index2(v) => b.arg(*v),
                KernelArg::Reduce(v) => b.arg(*v),
                KernelArg::Raw(v) => b.arg(*v),
                KernelArg::InU8(s) => b.arg(s.s()),
                KernelArg::InU16(s) => b.arg(s.s()),
                KernelArg::InI32(s) => b.arg(s.s()),
                KernelArg::InI64(s) => b.arg(s.s()),
                KernelArg::InF32(s) => b.arg(s.s()),
                KernelArg::InF64(s) => b.arg(s.s()),
                KernelArg::OutU8(s) => b.arg(s.s_mut()),
                KernelArg::OutU16(s) => b.arg(s.s_mut()),
                KernelArg::OutI32(s) => b.arg(s.s_mut()),
                KernelArg::OutI64(s) => b.arg(s.s_mut()),
                KernelArg::OutF32(s) => b.arg(s.s_mut()),
                KernelArg::OutF64(s) => b.arg(s.s_mut()),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: cfg.grid,
            block_dim: cfg.block,
            shared_mem_bytes: cfg.shared_mem_bytes,
        };
        // SAFETY: forwarded to the caller.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(|e| {
            KernelError::Device(format!("launching CUDA kernel `{name}` failed: {e:?}"))
        })
    }

    unsafe fn gemm<T: super::CudaFloat>(
        &self,
        g: &GemmArgs,
        a: &DevBuf<T>,
        a_off: usize,
        b: &DevBuf<T>,
        b_off: usize,
        c: &mut DevBuf<T>,
    ) -> Result<()> {
        // cuBLAS calls do not bind the context themselves.
        self.bind()?;
        let (av, bv) = (a.s().slice(a_off..), b.s().slice(b_off..));
        let c = c.s_mut();
        self.with_blas(|blas| {
            // SAFETY: forwarded to the caller.
            unsafe { T::gemm(blas, g, &av, &bv, c) }
                .map_err(|e| KernelError::Device(format!("cuBLAS gemm failed: {e:?}")))
        })
    }

    fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error("cuStreamSynchronize", e))
    }

    fn take_recorded_error(&self) -> Option<String> {
        // cudarc records the errors of the calls its drops make (a buffer's
        // `cuMemFreeAsync`, or the stream's synchronisation and `cuMemFree` of a
        // plain allocation, a module's unload, the wait after a copy): the code
        // only, the last one.
        self.ctx.check_err().err().map(|e| {
            format!(
                "a call made in a drop (a buffer's free, cuMemFreeAsync or cuMemFree, most \
                 likely; or a module's unload) failed: {e:?}"
            )
        })
    }

    fn memory_info(&self) -> Result<(usize, usize)> {
        self.ctx
            .mem_get_info()
            .map_err(|e| driver_error("cuMemGetInfo", e))
    }
}

/// Machine code of each module per architecture, compiled once per process and
/// shared by every device of that architecture.
fn cached_cubin(module: Module, arch: &str) -> Result<Arc<Vec<u8>>> {
    type Cache = Mutex<Vec<((Module, String), Arc<Vec<u8>>)>>;
    static CUBINS: Cache = Mutex::new(Vec::new());
    let key = (module, arch.to_string());
    if let Some((_, c)) = lock(&CUBINS).iter().find(|(k, _)| *k == key) {
        return Ok(c.clone());
    }
    let cubin = Arc::new(compile::compile(module, arch, Output::Cubin)?);
    lock(&CUBINS).push((key, cubin.clone()));
    Ok(cubin)
}
