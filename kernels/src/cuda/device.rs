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
use super::lru::Lru;
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
    /// The generated programs loaded, by key, with their kernels looked up so far.
    programs: Mutex<Lru<String, Program>>,
    /// Why buffers are plain allocations (`None`: from the pool); see
    /// [`CudaAllocator`].
    plain_allocations: Mutex<Option<String>>,
    /// The first error a call that could not return one ran into (a drop), with
    /// what failed; reported by the device's next fallible call.
    recorded: Mutex<Option<String>>,
}

/// How a device allocates its buffers ([`CudaDevice::allocator`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaAllocator {
    /// From the device's stream-ordered memory pool (`cuMemAllocAsync`, freed with
    /// `cuMemFreeAsync` on the device's stream; freed memory stays pooled).
    Pool,
    /// Plain `cuMemAlloc`, freed with `cuMemFree` after the stream's queued work
    /// (so a free waits for the device): the device has no memory pool, or an
    /// allocation from it failed for another reason than memory. `reason` says
    /// which; the choice holds for the rest of the process.
    Plain {
        /// Why: the driver's error, or the device's lack of pools.
        reason: String,
    },
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
    return super::hardware::driver_available();
    #[cfg(feature = "cuda-emulator")]
    return Drv::check_libraries().is_ok();
}

/// True when cuBLAS can be loaded (needed for matrix products only).
pub fn cublas_available() -> bool {
    #[cfg(not(feature = "cuda-emulator"))]
    return super::hardware::cublas_available();
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
            plain_allocations: Mutex::new(driver.pool_unavailable()),
            driver,
            functions: Mutex::new(HashMap::new()),
            programs: Mutex::new(Lru::new(MAX_GENERATED_PROGRAMS)),
            recorded: Mutex::new(None),
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
        let waited = self.driver.synchronize();
        let recorded = self.check_recorded();
        match (waited, recorded) {
            (Err(KernelError::Device(a)), Err(KernelError::Device(b))) => {
                Err(KernelError::Device(format!("{a}; and {b}")))
            }
            (Err(e), _) | (Ok(()), Err(e)) => Err(e),
            (Ok(()), Ok(())) => Ok(()),
        }
    }

    /// How this device allocates its buffers: from its stream-ordered memory
    /// pool, or, where the device has none or allocating from it fails for
    /// another reason than memory (the first such failure switches the device
    /// for good), plain `cuMemAlloc`.
    pub fn allocator(&self) -> CudaAllocator {
        match &*lock(&self.plain_allocations) {
            None => CudaAllocator::Pool,
            Some(reason) => CudaAllocator::Plain {
                reason: reason.clone(),
            },
        }
    }

    /// Whether buffers come from the pool (else plain allocations).
    pub(crate) fn uses_pool(&self) -> bool {
        lock(&self.plain_allocations).is_none()
    }

    /// Allocates plainly from now on, because of `reason`.
    pub(crate) fn fall_back_to_plain_allocation(&self, reason: String) {
        let mut plain = lock(&self.plain_allocations);
        if plain.is_none() {
            *plain = Some(reason);
        }
    }

    /// Records an error a call that cannot return one (a drop) ran into, `what`
    /// naming the call; the next fallible call on this device reports it (the
    /// first one, when several are recorded before).
    pub(crate) fn record_error(&self, what: String) {
        let mut r = lock(&self.recorded);
        if r.is_none() {
            *r = Some(what);
        }
    }

    /// `Err` with the error recorded since the last call, if any (this device's
    /// own record first, then the driver's), which it clears. Allocations, kernel
    /// lookups (so every launch) and `synchronize` call this, so an error a drop
    /// ran into reaches the user at the device's next fallible call instead of
    /// being lost.
    pub(crate) fn check_recorded(&self) -> Result<()> {
        let ours = lock(&self.recorded).take();
        let drivers = self.driver.take_recorded_error();
        let what = match (ours, drivers) {
            (None, None) => return Ok(()),
            (Some(a), Some(b)) => format!("{a}; and {b}"),
            (Some(a), None) | (None, Some(a)) => a,
        };
        Err(KernelError::Device(format!(
            "cuda:{}: an earlier call that could not report its error failed: {what} (the \
             device's results since may be wrong)",
            self.ordinal
        )))
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
        self.check_recorded()?;
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
    ///
    /// The device keeps at most [`MAX_GENERATED_PROGRAMS`] programs loaded (each
    /// new shape of fused chain is a program of its own): when a new one would
    /// pass that, the least recently used is dropped, and unloaded once no
    /// launch holds its kernels (compiled again if it comes back). Programs
    /// compile outside the cache's lock, so threads compiling different
    /// programs do not wait for each other.
    pub(crate) fn generated_function(
        &self,
        key: &str,
        source: &str,
        name: &str,
        contraction: Contraction,
    ) -> Result<<Drv as Driver>::Func> {
        self.bind()?;
        self.check_recorded()?;
        if let Some(p) = lock(&self.programs).get(key) {
            return p.function(&self.driver, key, name);
        }
        let program = self.driver.load_generated(key, source, contraction)?;
        let mut programs = lock(&self.programs);
        // Another thread may have loaded it meanwhile: keep the first.
        if programs.get(key).is_none() {
            let evicted = programs.insert(
                key.to_string(),
                Program {
                    program,
                    functions: HashMap::new(),
                },
            );
            // Unloaded here (when no launch holds one of its kernels).
            drop(evicted);
        }
        match programs.get(key) {
            Some(p) => p.function(&self.driver, key, name),
            None => Err(KernelError::Device(format!("program {key} missing"))),
        }
    }

    /// How many generated programs the device holds loaded (at most
    /// [`MAX_GENERATED_PROGRAMS`]).
    pub fn generated_programs(&self) -> usize {
        lock(&self.programs).len()
    }
}

/// The most generated programs (generated ops, fused chains, raw programs) a
/// device keeps loaded; the least recently used one goes first.
pub const MAX_GENERATED_PROGRAMS: usize = 512;

/// A loaded generated program and the kernels looked up in it so far.
struct Program {
    program: <Drv as Driver>::Program,
    functions: HashMap<String, <Drv as Driver>::Func>,
}

impl Program {
    fn function(&mut self, driver: &Drv, key: &str, name: &str) -> Result<<Drv as Driver>::Func> {
        if let Some(f) = self.functions.get(name) {
            return Ok(f.clone());
        }
        let f = driver.generated_function(&self.program, key, name)?;
        self.functions.insert(name.to_string(), f.clone());
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
