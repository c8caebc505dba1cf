//! CUDA devices: opened once per ordinal and kept for the life of the process.
//!
//! Opening a device checks that the libraries it needs are there first: on a
//! machine without a driver or a GPU, opening a device is an error value. Looked-up
//! kernels are cached per device. The device calls themselves go through the
//! [`Driver`] trait (`super::driver`): cudarc on a GPU, the host emulator with the
//! test-only `cuda-emulator` feature.

use super::Drv;
use super::compile::{Contraction, Module};
use super::driver::Driver;
use crate::{KernelError, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One GPU: its driver handle and the kernels loaded on it so far.
pub struct CudaDevice {
    ordinal: usize,
    pub(crate) driver: Drv,
    name: String,
    compute_capability: (i32, i32),
    multiprocessors: usize,
    functions: Mutex<HashMap<String, <Drv as Driver>::Func>>,
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

/// True when the CUDA driver library (libcuda) can be loaded. Says nothing about
/// whether a GPU is present; [`device_count`] does. (On the emulated device:
/// whether the emulator library loads.)
pub fn driver_available() -> bool {
    #[cfg(not(feature = "cuda-emulator"))]
    return super::real::driver_available();
    #[cfg(feature = "cuda-emulator")]
    return Drv::check_libraries().is_ok();
}

/// True when cuBLAS can be loaded (needed for matrix products only).
pub fn cublas_available() -> bool {
    #[cfg(not(feature = "cuda-emulator"))]
    return super::real::cublas_available();
    #[cfg(feature = "cuda-emulator")]
    return Drv::check_libraries().is_ok();
}

/// Number of CUDA devices (0 without a driver, or when the driver finds none).
pub fn device_count() -> usize {
    Drv::device_count()
}

/// True when CUDA device `ordinal` can be opened (driver, NVRTC and the GPU present).
pub fn is_available(ordinal: usize) -> bool {
    device(ordinal).is_ok()
}

static DEVICES: Mutex<Vec<(usize, Arc<CudaDevice>)>> = Mutex::new(Vec::new());

/// The device with this ordinal, opened at the first call.
pub fn device(ordinal: usize) -> Result<Arc<CudaDevice>> {
    let unavailable = |reason: String| KernelError::CudaUnavailable { ordinal, reason };
    Drv::check_libraries().map_err(unavailable)?;
    let mut devices = lock(&DEVICES);
    if let Some((_, d)) = devices.iter().find(|(o, _)| *o == ordinal) {
        return Ok(d.clone());
    }
    let count = Drv::device_count();
    if ordinal >= count {
        return Err(unavailable(format!(
            "this machine has {count} CUDA device(s) (ordinals 0..{count})"
        )));
    }
    let d = CudaDevice::open(ordinal).map_err(unavailable)?;
    let d = Arc::new(d);
    devices.push((ordinal, d.clone()));
    Ok(d)
}

impl CudaDevice {
    fn open(ordinal: usize) -> std::result::Result<CudaDevice, String> {
        let driver = Drv::open(ordinal)?;
        keep_freed_memory_pooled(&driver).map_err(|e| e.to_string())?;
        Ok(CudaDevice {
            ordinal,
            name: driver.name(),
            compute_capability: driver.compute_capability(),
            multiprocessors: driver.multiprocessors().max(1),
            driver,
            functions: Mutex::new(HashMap::new()),
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

    /// Makes the device's context current on the calling thread. The driver calls
    /// that do not bind it themselves (loading a kernel, cuBLAS, a free) need it.
    pub(crate) fn bind(&self) -> Result<()> {
        self.driver.bind()
    }

    /// Waits until all work queued on this device has finished, and reports any
    /// error a kernel or an asynchronous free ran into.
    pub fn synchronize(&self) -> Result<()> {
        self.driver.synchronize()
    }

    /// Free and total device memory in bytes, as the driver sees them.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.driver.memory_info()
    }

    /// Returns the memory the device's pool keeps from freed tensors to the
    /// device (after the work queued so far), for cuBLAS, other libraries and
    /// other processes. Allocation does this by itself, once, when the device is
    /// out of memory.
    pub fn trim_memory(&self) -> Result<()> {
        self.driver.trim()
    }

    /// The kernel `name` of `module`, compiling and loading the module at its first use.
    pub(crate) fn function(&self, module: Module, name: &str) -> Result<<Drv as Driver>::Func> {
        // cuModuleGetFunction (and loading the module) need the context bound on
        // this thread, and this may be the thread's first call.
        self.bind()?;
        if let Some(f) = lock(&self.functions).get(name) {
            return Ok(f.clone());
        }
        let f = self.driver.load_function(module, name)?;
        lock(&self.functions).insert(name.to_string(), f.clone());
        Ok(f)
    }

    /// Kernel `name` of a generated program `source` (compiled with `contraction`
    /// at the first use of `key`: the op's full path for a generated op,
    /// `fused_<hash>` for a fused chain, `raw.<program>` for a raw program), for
    /// the calling thread.
    pub(crate) fn generated_function(
        &self,
        key: &str,
        source: &str,
        name: &str,
        contraction: Contraction,
    ) -> Result<<Drv as Driver>::Func> {
        self.bind()?;
        // Cached apart from the fixed kernels' names (an op may be called
        // `unary_exp`, whose f32 entry point would then be `unary_exp_f32`), and
        // per program (a raw program's entry point may share a generated op's name).
        let cached = format!("generated {key} {name}");
        if let Some(f) = lock(&self.functions).get(&cached) {
            return Ok(f.clone());
        }
        let f = self.driver.load_generated(key, source, name, contraction)?;
        lock(&self.functions).insert(cached, f.clone());
        Ok(f)
    }
}

/// Buffers come from the device's default stream-ordered memory pool
/// (`cuMemAllocAsync`). By default that pool hands freed memory back to the driver
/// at every synchronisation, so each step of a training loop would map its
/// memory afresh; with no release threshold, freed blocks stay in the pool for the
/// next allocations (as a framework's caching allocator keeps them). Kept memory
/// goes back to the device when an allocation fails (`alloc` trims and retries
/// once) and on [`CudaDevice::trim_memory`] / [`super::memory::trim`]. The live
/// and peak bytes of the autograd memory counters count tensors, not the pool.
fn keep_freed_memory_pooled(driver: &Drv) -> Result<()> {
    driver.set_pool_release_threshold(u64::MAX)
}
