//! CUDA devices: opened once per ordinal and kept for the life of the process.
//!
//! Every library is checked for before the first cudarc call that would load it
//! (cudarc panics when a library is missing): on a machine without a driver or a
//! GPU, opening a device is an error value. Each device has one stream; every
//! kernel, copy, cuBLAS call and free of that device is ordered on it, so
//! no cross-stream synchronisation (and no per-buffer event) is needed. Compiled
//! modules and looked-up kernels are cached per device.

use super::compile::{self, Module, Output};
use crate::{KernelError, Result};
use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One GPU: its context, its stream, and the kernels loaded on it so far.
pub struct CudaDevice {
    ordinal: usize,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (i32, i32),
    multiprocessors: usize,
    modules: Mutex<HashMap<Module, Arc<CudaModule>>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// Created at the first matrix product; the lock also serialises cuBLAS calls
    /// (a handle is not to be used by two threads at once).
    blas: Mutex<Option<CudaBlas>>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaDevice({}: {}, sm_{}{})",
            self.ordinal, self.name, self.compute_capability.0, self.compute_capability.1
        )
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded maps stay consistent even if a holder panicked.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn driver_error(what: &str, e: DriverError) -> KernelError {
    KernelError::Device(format!("CUDA driver error in {what}: {e:?}"))
}

/// True when the CUDA driver library (libcuda) can be loaded. Says nothing about
/// whether a GPU is present; [`device_count`] does.
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the library under its known names.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// True when cuBLAS can be loaded (needed for matrix products only).
pub fn cublas_available() -> bool {
    // SAFETY: as above.
    unsafe { cudarc::cublas::sys::is_culib_present() }
}

/// Number of CUDA devices (0 without a driver, or when the driver finds none).
pub fn device_count() -> usize {
    if !driver_available() {
        return 0;
    }
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// True when CUDA device `ordinal` can be opened (driver, NVRTC and the GPU present).
pub fn is_available(ordinal: usize) -> bool {
    device(ordinal).is_ok()
}

static DEVICES: Mutex<Vec<(usize, Arc<CudaDevice>)>> = Mutex::new(Vec::new());

/// The device with this ordinal, opened at the first call.
pub fn device(ordinal: usize) -> Result<Arc<CudaDevice>> {
    let unavailable = |reason: String| KernelError::CudaUnavailable { ordinal, reason };
    if !driver_available() {
        return Err(unavailable(
            "the NVIDIA driver library (libcuda.so) was not found; this machine has no \
             usable NVIDIA driver"
                .into(),
        ));
    }
    if !compile::nvrtc_available() {
        return Err(unavailable(
            "the NVRTC library (libnvrtc.so) was not found; install the CUDA toolkit or \
             `pip install nvidia-cuda-nvrtc` and add its lib folder to LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let mut devices = lock(&DEVICES);
    if let Some((_, d)) = devices.iter().find(|(o, _)| *o == ordinal) {
        return Ok(d.clone());
    }
    let count = CudaContext::device_count()
        .map_err(|e| unavailable(format!("the CUDA driver did not initialise ({e:?})")))?;
    if ordinal >= count.max(0) as usize {
        return Err(unavailable(format!(
            "this machine has {count} CUDA device(s) (ordinals 0..{count})"
        )));
    }
    let d = CudaDevice::open(ordinal).map_err(|e| unavailable(e.to_string()))?;
    let d = Arc::new(d);
    devices.push((ordinal, d.clone()));
    Ok(d)
}

impl CudaDevice {
    fn open(ordinal: usize) -> Result<CudaDevice> {
        let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("cuCtx create", e))?;
        // SAFETY: set before any buffer exists. Every buffer of this device is
        // allocated, used and freed on the single stream below, in stream order, so
        // the per-buffer events cudarc would otherwise record are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| driver_error("cuStreamCreate", e))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(|e| driver_error("compute capability", e))?;
        let multiprocessors = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| driver_error("multiprocessor count", e))?
            .max(1) as usize;
        let name = ctx.name().unwrap_or_else(|_| "unknown".into());
        if ctx.has_async_alloc() {
            keep_freed_memory_pooled(&ctx)?;
        }
        Ok(CudaDevice {
            ordinal,
            ctx,
            stream,
            name,
            compute_capability,
            multiprocessors,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
        })
    }

    /// The device's CUDA index (`0` for the first GPU).
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's name as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Major and minor compute capability (`(9, 0)` for an H100/H200); kernels are
    /// compiled for this architecture.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }

    pub(crate) fn multiprocessors(&self) -> usize {
        self.multiprocessors
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits until all work queued on this device has finished, and reports any
    /// error a kernel or an asynchronous free ran into.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error("cuStreamSynchronize", e))?;
        self.ctx
            .check_err()
            .map_err(|e| driver_error("an earlier asynchronous call", e))
    }

    /// Free and total device memory in bytes, as the driver sees them.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.ctx
            .mem_get_info()
            .map_err(|e| driver_error("cuMemGetInfo", e))
    }

    /// The kernel `name` of `module`, compiling and loading the module at its first use.
    pub(crate) fn function(&self, module: Module, name: &str) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.functions).get(name) {
            return Ok(f.clone());
        }
        let m = self.module(module)?;
        let f = m.load_function(name).map_err(|e| {
            KernelError::Device(format!(
                "kernel `{name}` is not in {} ({e:?})",
                module.file()
            ))
        })?;
        lock(&self.functions).insert(name.to_string(), f.clone());
        Ok(f)
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

    /// Runs `f` with this device's cuBLAS handle, created at the first call.
    pub(crate) fn with_blas<R>(&self, f: impl FnOnce(&CudaBlas) -> Result<R>) -> Result<R> {
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
}

/// Buffers come from the device's default stream-ordered memory pool
/// (`cuMemAllocAsync`). By default that pool hands freed memory back to the driver
/// at every synchronisation, so each step of a training loop would map its
/// memory afresh; with no release threshold, freed blocks stay in the pool for the
/// next allocations (as a framework's caching allocator keeps them). The live and
/// peak bytes of the autograd memory counters count tensors, not the pool.
fn keep_freed_memory_pooled(ctx: &CudaContext) -> Result<()> {
    use cudarc::driver::sys::{self, CUmemPool_attribute};
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    let mut threshold = u64::MAX;
    // SAFETY: the driver library is loaded (checked before the context was made);
    // `pool` and `threshold` are valid for the calls, and the attribute takes a
    // pointer to a u64.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .map_err(|e| driver_error("cuDeviceGetDefaultMemPool", e))?;
        sys::cuMemPoolSetAttribute(
            pool,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
        .result()
        .map_err(|e| driver_error("cuMemPoolSetAttribute", e))?;
    }
    Ok(())
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
