//! An emulated CUDA device (feature `cuda-emulator`, for tests only): with it,
//! `Device::Cuda(0)` runs the backend's own launch code against the project's own
//! `.cu` sources, compiled as host C++, on the CPU. CI runs the GPU tests this
//! way on every run (`.ci/run`); a real GPU is still needed for what emulation
//! cannot see (below).
//!
//! How it works (`build.rs`, `shim.h`, `runtime.cpp`):
//! - **Sources.** Each module's source, byte for byte what `compile.rs` hands
//!   NVRTC (checked by a test here), is compiled by g++ behind a shim header that
//!   defines `__global__`, the builtin indices, `__shared__`, `__syncthreads`,
//!   `__shfl_down_sync`, `atomicAdd` and the round-to-nearest arithmetic
//!   intrinsics (`__fadd_rn`, ..). The kernels are found by name in the
//!   resulting library, as `cuModuleGetFunction` finds them in a module.
//!   The programs of ops generated from an elementwise function, and raw programs
//!   (an op's own CUDA source, `crate::raw`), exist only at run time: each is
//!   compiled the same way when first loaded (g++, or `$CXX`, into a library in
//!   the system's temporary folder), and binds to the runtime's symbols.
//! - **Contraction.** Everything is compiled with contraction on
//!   (`-ffp-contract=fast`, and `-mfma` on an x86-64 machine that has fused
//!   multiply-adds: [`contracts`]): g++ fuses `a * b + c` wherever it can, as
//!   NVRTC does by default. The library compiles its own programs with
//!   `--fmad=false` on a GPU (`compile::Contraction`) and writes their arithmetic
//!   with the round-to-nearest intrinsics (`__fmul_rn`, `__fadd_rn`, ..; the shim
//!   has them, opaque to g++), so a result that still depends on contraction (a
//!   fused chain and the ops one by one giving other bits) fails here, not first
//!   on a GPU. Raw programs are contracted on both, as nvcc compiles them.
//! - **Threads.** Each CUDA thread is a fiber; a block's fibers run until they
//!   finish or wait at a barrier. `__syncthreads` is a block barrier and
//!   `__shfl_down_sync` a warp barrier (the exchange happens when the warp's 32
//!   lanes are there). A barrier some threads never reach (they exited, or wait
//!   at another one) is reported as a deadlock or a divergent barrier.
//! - **Memory.** Buffers are sized exactly and fenced by inaccessible pages; an
//!   out-of-bounds read or write faults and the launch fails naming the kernel,
//!   the block and thread and where the address lies (past the end of a buffer,
//!   before its start, in a freed one). Inputs are read-only during a launch; new
//!   buffers are filled with NaN bytes, so an element left unwritten shows.
//! - **Schedules.** Every launch runs under six schedules from the same memory:
//!   blocks forward, reversed and shuffled (seeded), fibers swept forward,
//!   backward, at random, and warp-greedy (the lowest runnable thread first, so a
//!   warp runs ahead of the others to the next `__syncthreads`), and with the
//!   grid cut to one block and to three (the grid-stride loops do the rest).
//!   Their outputs must agree (to 1e-5 relative in f32, 1e-12 in f64, for the
//!   order of atomic additions; bit for bit for integers, bytes and the 16-bit
//!   patterns of f16 and bf16): a race between blocks, a missing barrier or a
//!   loop that is not grid-stride makes the launch fail.
//! - **Launch limits.** Grid and block sizes are checked as `cuLaunchKernel`
//!   checks them (grid y and z at most 65535, at most 1024 threads per block).
//! - **cuBLAS.** `gemm` and `gemmStridedBatched` by their documented column-major
//!   semantics and argument checks (lda, ldb and ldc against m, n, k and the
//!   transposes; strides, 0 included), reading the buffers through the same
//!   fenced pages; batches whose results overlap are refused (a race on a GPU).
//! - **Context and pool.** Which host threads have the context bound is tracked
//!   as the driver does: loading a kernel or calling cuBLAS on an unbound thread
//!   fails, and a free there fails and is reported by the next `synchronize`, as
//!   cudarc records it (the backend reports it at the device's next fallible
//!   call). The device has a memory capacity and a stream-ordered pool that
//!   keeps freed memory up to its release threshold. Switches make the pool's
//!   allocations fail ([`fail_pool_allocations`]: the backend falls back to
//!   plain ones) and the next free fail ([`fail_next_free`]), as paths a GPU
//!   rarely takes.
//! - **Shared memory.** A launch's dynamic shared memory (`extern __shared__`)
//!   is a buffer sized exactly, fenced by an inaccessible page after it and
//!   filled with NaN bytes for each block; past 48 KiB a launch fails unless the
//!   kernel opted in, as `cuLaunchKernel` refuses it.
//!
//! What it cannot see, and stays for a real GPU (`scripts/gpu-check.sh`):
//! - lost updates between threads that run at once: fibers switch only at
//!   barriers, so a non-atomic read-modify-write of one address by two threads of
//!   a block, or two blocks, is never interleaved (races between *blocks* still
//!   show as order-dependent results, races inside a block mostly do not);
//! - the memory model: caching, visibility and ordering without fences;
//! - CUDA's math functions' accuracy (the host's libm runs instead; libdevice's
//!   functions use fused multiply-adds of their own), where exactly NVRTC would
//!   contract (g++ contracts where it sees fit: what it cannot see is a
//!   contraction that only NVRTC would make), and anything depending on the real
//!   number of SMs or on warp scheduling;
//! - sizes of 2^31 elements and beyond (the emulated suite uses small sizes; its
//!   views all fit the kernels' 32-bit index path, and [`with_64_bit_indices`]
//!   runs them through the 64-bit path, but a 64-bit offset truncated somewhere
//!   on that path only shows at those sizes),
//!   real cuBLAS's algorithms and workspaces, the driver's and NVRTC's own
//!   behaviour (the NVRTC compile check, `kernels/tests/nvrtc.rs`, covers the
//!   sources' compilation for the GPU);
//! - infinite loops: a kernel that never finishes hangs the test.

use super::CudaElement;
use super::compile::{Contraction, Module};
use super::driver::{
    AllocError, DEFAULT_MAX_DYNAMIC_SHARED, Driver, GemmArgs, KernelArg, LaunchCfg,
};
use crate::{KernelError, Result};
use std::cell::Cell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Nothing more is needed of an element type on the emulated device.
pub(crate) trait DriverElement {}
impl DriverElement for u8 {}
impl DriverElement for u16 {}
impl DriverElement for i32 {}
impl DriverElement for i64 {}
impl DriverElement for f32 {}
impl DriverElement for f64 {}

/// What the emulated cuBLAS needs of an element type: nothing more either.
pub(crate) trait BlasElement {}
impl BlasElement for f32 {}
impl BlasElement for f64 {}

/// Marks a buffer argument's element size (`EmuArg::elem`) as integer bits (or
/// 16-bit float patterns), compared exactly between schedules rather than as
/// floats within a tolerance.
const EXACT: u32 = 0x100;

const LIBRARY: &str = concat!(env!("OUT_DIR"), "/libautograd_cuda_emu.so");

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;
/// The runtime's symbols (the fiber scheduler, the running thread's indices) are
/// global, so that generated programs compiled at run time bind to them.
const RTLD_GLOBAL: c_int = 0x100;

/// The shim header, for programs compiled at run time (generated ops).
const SHIM: &str = include_str!("shim.h");

#[repr(C)]
struct EmuArg {
    kind: u32,
    elem: u32,
    value: *const c_void,
}

type LaunchFn = unsafe extern "C" fn(
    *const c_char,
    *mut c_void,
    *const EmuArg,
    u32,
    *const u32,
    *const u32,
    u32,
    u32,
    u64,
    *mut c_char,
    usize,
) -> c_int;

type GemmFn = unsafe extern "C" fn(
    u32,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f64,
    u64,
    c_int,
    i64,
    u64,
    c_int,
    i64,
    f64,
    u64,
    c_int,
    i64,
    c_int,
    *mut c_char,
    usize,
) -> c_int;

/// The runtime's entry points (runtime.cpp).
struct Api {
    handle: usize,
    alloc: unsafe extern "C" fn(u64) -> u64,
    free: unsafe extern "C" fn(u64) -> c_int,
    trim: unsafe extern "C" fn(u64),
    set_release_threshold: unsafe extern "C" fn(u64),
    set_capacity: unsafe extern "C" fn(u64),
    mem_info: unsafe extern "C" fn(*mut u64, *mut u64, *mut u64),
    htod: unsafe extern "C" fn(u64, *const c_void, u64) -> c_int,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, u64) -> c_int,
    memset: unsafe extern "C" fn(u64, u8, u64) -> c_int,
    schedule_count: unsafe extern "C" fn() -> u32,
    launch: LaunchFn,
    gemm: GemmFn,
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string.
    unsafe {
        let e = dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

fn symbol(handle: *mut c_void, name: &str) -> std::result::Result<*mut c_void, String> {
    let c = CString::new(name).map_err(|_| format!("bad symbol name {name:?}"))?;
    // SAFETY: `handle` is a live dlopen handle and `c` a C string.
    let p = unsafe { dlsym(handle, c.as_ptr()) };
    if p.is_null() {
        Err(format!("`{name}` is not in {LIBRARY}: {}", dl_error()))
    } else {
        Ok(p)
    }
}

// The transmutes' target types are the fields of `Api` they initialise.
#[allow(clippy::missing_transmute_annotations)]
fn api() -> std::result::Result<&'static Api, String> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let path = CString::new(LIBRARY).map_err(|_| "bad library path".to_string())?;
        // SAFETY: loading the emulator library built by build.rs; its initialisers
        // are the C++ runtime's.
        let h = unsafe { dlopen(path.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
        if h.is_null() {
            return Err(format!("loading the CUDA emulator failed: {}", dl_error()));
        }
        // SAFETY: each symbol is the runtime.cpp function of exactly this type.
        unsafe {
            macro_rules! f {
                ($name:literal) => {
                    std::mem::transmute::<*mut c_void, _>(symbol(h, $name)?)
                };
            }
            Ok(Api {
                handle: h as usize,
                alloc: f!("emu_alloc"),
                free: f!("emu_free"),
                trim: f!("emu_trim"),
                set_release_threshold: f!("emu_set_release_threshold"),
                set_capacity: f!("emu_set_capacity"),
                mem_info: f!("emu_mem_info"),
                htod: f!("emu_memcpy_htod"),
                dtoh: f!("emu_memcpy_dtoh"),
                memset: f!("emu_memset_d8"),
                schedule_count: f!("emu_schedule_count"),
                launch: f!("emu_launch"),
                gemm: f!("emu_gemm"),
            })
        }
    })
    .as_ref()
    .map_err(|e| e.clone())
}

fn api_or_err() -> Result<&'static Api> {
    api().map_err(KernelError::Device)
}

thread_local! {
    /// Whether this host thread has the (one) emulated context bound.
    static BOUND: Cell<bool> = const { Cell::new(false) };
}

/// An error recorded by an asynchronous call (a free), reported by the device's
/// next fallible call (`take_recorded_error`), as cudarc records them in the
/// context.
static RECORDED: Mutex<Option<String>> = Mutex::new(None);

fn record(e: String) {
    let mut r = RECORDED.lock().unwrap_or_else(PoisonError::into_inner);
    if r.is_none() {
        *r = Some(e);
    }
}

/// The error allocations from the pool fail with, when set
/// ([`fail_pool_allocations`]).
static POOL_FAILURE: Mutex<Option<String>> = Mutex::new(None);

/// How many plain (not pooled) allocations the device has made.
static PLAIN_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Whether the next free fails ([`fail_next_free`]).
static FAIL_NEXT_FREE: AtomicBool = AtomicBool::new(false);

/// Makes every allocation from the emulated device's stream-ordered pool fail
/// with `error` (a driver's message; not out of memory), as on a device or driver
/// whose pools are unsupported or broken, until called with `None`. The backend
/// then falls back to plain allocations (`cuda::CudaAllocator::Plain`, for the
/// rest of the process); on the emulated device these come from the same memory
/// as pooled ones.
pub fn fail_pool_allocations(error: Option<&str>) {
    *POOL_FAILURE.lock().unwrap_or_else(PoisonError::into_inner) = error.map(str::to_string);
}

/// How many plain allocations (`cuMemAlloc`, not from the pool) the emulated
/// device has made.
pub fn plain_allocations() -> u64 {
    PLAIN_ALLOCATIONS.load(Ordering::Relaxed)
}

/// Makes the next buffer free fail as a free after a kernel fault does on a GPU
/// (`CUDA_ERROR_ILLEGAL_ADDRESS`): the error is recorded, as cudarc records the
/// errors of its drops, for the device's next fallible call (the buffer is still
/// freed).
pub fn fail_next_free() {
    FAIL_NEXT_FREE.store(true, Ordering::Relaxed);
}

const INVALID_CONTEXT: &str = "DriverError(CUDA_ERROR_INVALID_CONTEXT, \"invalid device context\")";

fn require_bound(what: &str) -> Result<()> {
    if BOUND.with(Cell::get) {
        Ok(())
    } else {
        Err(KernelError::Device(format!(
            "CUDA driver error in {what}: {INVALID_CONTEXT} (emulated: the context is not bound \
             to this thread)"
        )))
    }
}

fn bind_thread() {
    BOUND.with(|b| b.set(true));
}

/// A buffer of the emulated device.
pub(crate) struct EmuBuf<T> {
    addr: u64,
    len: usize,
    _t: PhantomData<T>,
}

impl<T> Drop for EmuBuf<T> {
    fn drop(&mut self) {
        if FAIL_NEXT_FREE.swap(false, Ordering::Relaxed) {
            record(
                "CUDA driver error in cuMemFreeAsync: DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, \
                 \"an illegal memory access was encountered\") (emulated: fail_next_free)"
                    .into(),
            );
        }
        // cudarc's CudaSlice drop frees without binding the context first.
        if !BOUND.with(Cell::get) {
            record(format!(
                "CUDA driver error in cuMemFreeAsync: {INVALID_CONTEXT} (emulated: a buffer \
                 was freed on a thread without the context bound)"
            ));
            return;
        }
        if let Ok(api) = api() {
            // SAFETY: `addr` is a live buffer of the emulator, freed once.
            match unsafe { (api.free)(self.addr) } {
                0 => {}
                -2 => record(
                    "emulated device: a kernel wrote before the start of a buffer (its canary \
                     was overwritten)"
                        .into(),
                ),
                _ => record("emulated device: freeing a buffer that is not live".into()),
            }
        }
    }
}

/// The emulated device (one, ordinal 0).
pub(crate) struct Emulator {
    api: &'static Api,
}

/// A kernel of the emulator library.
#[derive(Clone)]
pub(crate) struct EmuFunc {
    ptr: usize,
    name: CString,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: an attribute of the
    /// kernel, so shared by every handle to it.
    max_dynamic_shared: Arc<AtomicU32>,
}

/// The dynamic shared memory a block may opt in to on the emulated device
/// (compute capability 9.0's `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`:
/// 227 KiB).
pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: u32 = 227 * 1024;

/// How many SMs the emulated device reports: few, so that the launch planning's
/// grid caps and reduction splits are exercised at test sizes.
pub const MULTIPROCESSORS: usize = 4;

/// Emulated device memory (64 GiB of address space unless set).
const DEFAULT_CAPACITY: u64 = 64 << 30;

/// Sets the emulated device's memory capacity in bytes (`None`: the default).
/// Buffers take whole pages, plus two guard pages each.
pub fn set_memory_capacity(bytes: Option<u64>) -> Result<()> {
    let api = api_or_err()?;
    // SAFETY: plain setter.
    unsafe { (api.set_capacity)(bytes.unwrap_or(DEFAULT_CAPACITY)) };
    Ok(())
}

/// The emulated device's memory: live and pooled bytes (whole mappings, guard
/// pages included) and the capacity.
pub fn memory_stats() -> Result<(u64, u64, u64)> {
    let api = api_or_err()?;
    let (mut l, mut p, mut c) = (0, 0, 0);
    // SAFETY: three valid out-pointers.
    unsafe { (api.mem_info)(&mut l, &mut p, &mut c) };
    Ok((l, p, c))
}

/// Runs `f` with every launch this thread plans taking the kernels' 64-bit index
/// path (`index32` = 0), as views of 2^32 elements or offsets would: the emulated
/// suite's sizes all fit in 32 bits, so without this only the 32-bit path runs.
pub fn with_64_bit_indices<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            super::index::FORCE_64_BIT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(super::index::FORCE_64_BIT.with(|c| c.replace(true)));
    f()
}

/// Bit mask of the schedules each launch runs under (all of them unless
/// `AUTOGRAD_CUDA_EMULATOR_SCHEDULES=1` asks for the first only).
fn schedules(api: &Api) -> u32 {
    // SAFETY: plain getter.
    let n = unsafe { (api.schedule_count)() };
    let all = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
    match std::env::var("AUTOGRAD_CUDA_EMULATOR_SCHEDULES") {
        Ok(v) => match v.parse::<u32>() {
            Ok(k) if k >= 1 && k < n => (1u32 << k) - 1,
            _ => all,
        },
        Err(_) => all,
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

fn elem<T: CudaElement>() -> u32 {
    std::mem::size_of::<T>() as u32
}

fn bytes<T: CudaElement>(n: usize) -> u64 {
    (n * std::mem::size_of::<T>()) as u64
}

impl Emulator {
    fn addr<T: CudaElement>(b: &EmuBuf<T>, offset: usize) -> u64 {
        b.addr + bytes::<T>(offset)
    }
}

/// Whether the emulator's code was compiled with fused multiply-adds (build.rs:
/// `-mfma` on an x86-64 machine that has them; always on AArch64).
const BUILT_WITH_FMA: bool = matches!(env!("AUTOGRAD_CUDA_EMU_FMA").as_bytes(), b"1");

/// Whether this CPU has fused multiply-add instructions.
fn cpu_has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("fma");
    // AArch64 has them in its base instruction set (g++ contracts there without a
    // flag); elsewhere, assume not.
    #[cfg(not(target_arch = "x86_64"))]
    return cfg!(target_arch = "aarch64");
}

/// Whether the emulated device contracts products and sums into fused
/// multiply-adds, as NVRTC does by default: where the CPU has them (every x86-64
/// CPU since 2013, every AArch64 one). Elsewhere it cannot, and the emulated suite
/// does not see results that depend on contraction.
pub fn contracts() -> bool {
    BUILT_WITH_FMA
}

/// The flag that lets g++ emit fused multiply-adds on x86-64, for the programs
/// compiled at run time: as the emulator's own code was compiled (`open` checks
/// that this CPU has them then).
fn fma_flag() -> &'static [&'static str] {
    if BUILT_WITH_FMA && cfg!(target_arch = "x86_64") {
        &["-mfma"]
    } else {
        &[]
    }
}

/// A generated program compiled as host C++ behind the shim, as build.rs compiles
/// the fixed sources, but at run time: g++ (or `$CXX`) into a shared library in a
/// temporary folder, loaded once per key. Returns the library's handle.
fn generated_library(key: &str, source: &str) -> Result<usize> {
    static LIBRARIES: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());
    let mut libs = LIBRARIES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, h)) = libs.iter().find(|(k, _)| k == key) {
        return Ok(*h);
    }
    api_or_err()?; // the runtime first: the program binds to its symbols
    let fail = |what: String| KernelError::Device(format!("emulated CUDA: {key}.cu: {what}"));
    let dir = std::env::temp_dir().join(format!("autograd-emu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
    std::fs::write(dir.join("shim.h"), SHIM).map_err(|e| fail(format!("writing shim.h: {e}")))?;
    let stem: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // The key's hash too: keys that differ only in characters replaced above
    // (`raw.x` and `raw_x`) must not share a library file.
    let stem = format!("{stem}_{:016x}", fnv(key));
    let unit = dir.join(format!("{stem}.cpp"));
    let lib = dir.join(format!("lib{stem}.so"));
    let source = dynamic_shared(source).map_err(fail)?;
    std::fs::write(
        &unit,
        format!("#include \"shim.h\"\n#line 1 \"{key}.cu\"\n{source}"),
    )
    .map_err(|e| fail(format!("writing {}: {e}", unit.display())))?;
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let out = std::process::Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-fPIC", "-shared", "-w"])
        // Contracted as the fixed kernels are (build.rs). At -O1, g++ forms fused
        // multiply-adds only with -fexpensive-optimizations (on from -O2).
        .args(["-ffp-contract=fast", "-fexpensive-optimizations"])
        .args(fma_flag())
        .arg("-I")
        .arg(&dir)
        .arg("-o")
        .arg(&lib)
        .arg(&unit)
        .output()
        .map_err(|e| fail(format!("running {cxx}: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "{cxx} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let path =
        CString::new(lib.to_string_lossy().as_bytes()).map_err(|_| fail("bad path".into()))?;
    // SAFETY: loading the library just built from the generated source; it has no
    // initialisers of its own beyond the C++ runtime's.
    let h = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
    if h.is_null() {
        return Err(fail(format!("loading it failed: {}", dl_error())));
    }
    libs.push((key.to_string(), h as usize));
    Ok(h as usize)
}

/// `source` with each `extern __shared__ T name[];` (the launch's dynamic shared
/// memory) declared as `T* const name = (T*)emu_dynamic_shared();`: the block's
/// buffer, sized exactly by the launch and fenced by an inaccessible page after
/// it. Supported inside function bodies, as CUDA code declares it.
fn dynamic_shared(source: &str) -> std::result::Result<String, String> {
    const DECL: &str = "extern __shared__";
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find(DECL) {
        out.push_str(&rest[..at]);
        let after = &rest[at + DECL.len()..];
        let end = after
            .find(';')
            .ok_or_else(|| "`extern __shared__` without a `;`".to_string())?;
        let decl = &after[..end];
        // Drop `__align__(n)`.
        let mut d = decl.to_string();
        while let Some(a) = d.find("__align__") {
            let close = d[a..]
                .find(')')
                .ok_or_else(|| format!("bad `__align__` in `{DECL}{decl};`"))?;
            d.replace_range(a..a + close + 1, " ");
        }
        let d = d.trim();
        let unsupported = || format!("`{DECL}{decl};`: the emulator takes `{DECL} T name[];`");
        let body = d.strip_suffix(']').ok_or_else(unsupported)?.trim_end();
        let body = body.strip_suffix('[').ok_or_else(unsupported)?.trim_end();
        let split = body
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(unsupported)?;
        let (ty, name) = (body[..=split].trim(), &body[split + 1..]);
        if ty.is_empty() || name.is_empty() {
            return Err(unsupported());
        }
        out.push_str(&format!(
            "{ty}* const {name} = reinterpret_cast<{ty}*>(emu_dynamic_shared());"
        ));
        // The same lines, for the compiler's messages.
        out.extend(decl.chars().filter(|&c| c == '\n'));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Driver for Emulator {
    type Buf<T: CudaElement> = EmuBuf<T>;
    type Func = EmuFunc;
    /// The program's library (loaded once per key for the process: the
    /// emulator never unloads one, so the device's cache bound only bounds the
    /// cache itself here).
    type Program = usize;

    fn check_libraries() -> std::result::Result<(), String> {
        api().map(|_| ())
    }

    fn device_count() -> usize {
        usize::from(api().is_ok())
    }

    fn open(ordinal: usize) -> std::result::Result<Self, String> {
        let api = api()?;
        if ordinal != 0 {
            return Err(format!("the emulator has one device, not {ordinal}"));
        }
        if BUILT_WITH_FMA && !cpu_has_fma() {
            return Err(
                "the emulator was built with fused multiply-adds (-mfma) on a machine that \
                 has them, and this CPU has not: rebuild it here (cargo clean -p \
                 autograd-kernels)"
                    .into(),
            );
        }
        // The sources the library was built from are the ones NVRTC compiles.
        for (m, built) in BUILT_SOURCES {
            if m.source() != built {
                return Err(format!(
                    "the emulator was built from another {} than compile.rs hands NVRTC",
                    m.file()
                ));
            }
        }
        bind_thread();
        Ok(Emulator { api })
    }

    fn name(&self) -> String {
        "CUDA emulator (host)".into()
    }

    fn compute_capability(&self) -> (i32, i32) {
        (9, 0)
    }

    fn multiprocessors(&self) -> usize {
        MULTIPROCESSORS
    }

    fn bind(&self) -> Result<()> {
        bind_thread();
        Ok(())
    }

    fn set_pool_release_threshold(&self, bytes: u64) -> Result<()> {
        // SAFETY: plain setter.
        unsafe { (self.api.set_release_threshold)(bytes) };
        Ok(())
    }

    fn trim(&self) -> Result<()> {
        self.synchronize()?;
        // SAFETY: plain call.
        unsafe { (self.api.trim)(0) };
        Ok(())
    }

    fn pool_unavailable(&self) -> Option<String> {
        None
    }

    unsafe fn alloc<T: CudaElement>(
        &self,
        n: usize,
        pooled: bool,
    ) -> std::result::Result<EmuBuf<T>, AllocError> {
        bind_thread();
        if pooled {
            let failure = POOL_FAILURE
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(message) = failure {
                return Err(AllocError {
                    out_of_memory: false,
                    message: format!("{message} (emulated: fail_pool_allocations)"),
                });
            }
        } else {
            PLAIN_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: plain call; 0 means failure.
        let addr = unsafe { (self.api.alloc)(bytes::<T>(n)) };
        if addr == 0 {
            return Err(AllocError {
                out_of_memory: true,
                message: "DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\") (emulated)"
                    .into(),
            });
        }
        Ok(EmuBuf {
            addr,
            len: n,
            _t: PhantomData,
        })
    }

    fn upload<T: CudaElement>(&self, v: &[T], b: &mut EmuBuf<T>) -> Result<()> {
        bind_thread();
        if v.len() > b.len {
            return Err(KernelError::Device(format!(
                "CUDA driver error in copy to the device: {} elements into a buffer of {}",
                v.len(),
                b.len
            )));
        }
        // SAFETY: `v` holds the bytes copied; the runtime checks the range.
        let r = unsafe { (self.api.htod)(b.addr, v.as_ptr().cast(), bytes::<T>(v.len())) };
        if r != 0 {
            return Err(KernelError::Device(
                "emulated copy to the device failed".into(),
            ));
        }
        Ok(())
    }

    fn download<T: CudaElement>(&self, b: &EmuBuf<T>, offset: usize, out: &mut [T]) -> Result<()> {
        bind_thread();
        if offset + out.len() > b.len {
            return Err(KernelError::Device(format!(
                "CUDA driver error in copy to the host: elements {offset}..{} of a buffer of {}",
                offset + out.len(),
                b.len
            )));
        }
        // SAFETY: `out` has room for the bytes; the runtime checks the range.
        let r = unsafe {
            (self.api.dtoh)(
                out.as_mut_ptr().cast(),
                Self::addr(b, offset),
                bytes::<T>(out.len()),
            )
        };
        if r != 0 {
            return Err(KernelError::Device(
                "emulated copy to the host failed".into(),
            ));
        }
        Ok(())
    }

    fn memset_zero<T: CudaElement>(&self, b: &mut EmuBuf<T>) -> Result<()> {
        bind_thread();
        // SAFETY: the whole buffer; the runtime checks the range.
        let r = unsafe { (self.api.memset)(b.addr, 0, bytes::<T>(b.len)) };
        if r != 0 {
            return Err(KernelError::Device("emulated memset failed".into()));
        }
        Ok(())
    }

    fn load_function(&self, module: Module, name: &str) -> Result<EmuFunc> {
        require_bound("cuModuleGetFunction")?;
        let in_module = super::compile::kernel_names()
            .iter()
            .any(|(m, n)| *m == module && n == name);
        let ptr = symbol(self.api.handle as *mut c_void, name)
            .ok()
            .filter(|_| in_module);
        match ptr {
            Some(p) => Ok(EmuFunc {
                ptr: p as usize,
                name: CString::new(name).unwrap_or_default(),
                max_dynamic_shared: Arc::new(AtomicU32::new(DEFAULT_MAX_DYNAMIC_SHARED)),
            }),
            None => Err(KernelError::Device(format!(
                "kernel `{name}` is not in {} (emulated: no such symbol)",
                module.file()
            ))),
        }
    }

    fn load_generated(
        &self,
        key: &str,
        source: &str,
        // Every program is contracted here (see the module's doc).
        _contraction: Contraction,
    ) -> Result<usize> {
        require_bound("cuModuleLoadData")?;
        generated_library(key, source)
    }

    fn generated_function(&self, handle: &usize, key: &str, name: &str) -> Result<EmuFunc> {
        require_bound("cuModuleGetFunction")?;
        let ptr = symbol(*handle as *mut c_void, name).map_err(|e| {
            KernelError::Device(format!(
                "kernel `{name}` is not in {key}.cu (emulated: {e})"
            ))
        })?;
        Ok(EmuFunc {
            ptr: ptr as usize,
            name: CString::new(name).unwrap_or_default(),
            max_dynamic_shared: Arc::new(AtomicU32::new(DEFAULT_MAX_DYNAMIC_SHARED)),
        })
    }

    fn allow_dynamic_shared_memory(&self, f: &EmuFunc, name: &str, bytes: u32) -> Result<()> {
        require_bound("cuFuncSetAttribute")?;
        // Static `__shared__` arrays are host thread-locals here: not counted.
        if bytes > MAX_SHARED_MEMORY_PER_BLOCK_OPTIN {
            return Err(KernelError::Device(format!(
                "kernel `{name}`: {bytes} bytes of dynamic shared memory (and 0 of static) per \
                 block; this device (CUDA emulator (host)) allows at most \
                 {MAX_SHARED_MEMORY_PER_BLOCK_OPTIN} in all per block"
            )));
        }
        f.max_dynamic_shared.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    unsafe fn launch(
        &self,
        f: &EmuFunc,
        name: &str,
        cfg: LaunchCfg,
        args: &mut [KernelArg<'_, Self>],
    ) -> Result<()> {
        bind_thread();
        // As cuLaunchKernel refuses it on a GPU.
        let allowed = f.max_dynamic_shared.load(Ordering::Relaxed);
        if cfg.shared_mem_bytes > allowed {
            return Err(KernelError::Device(format!(
                "launching CUDA kernel `{name}` failed: DriverError(CUDA_ERROR_INVALID_VALUE, \
                 \"invalid argument\") (emulated: {} bytes of dynamic shared memory, more than \
                 the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, {allowed})",
                cfg.shared_mem_bytes
            )));
        }
        // Values the argument list points at: the device addresses of the buffers.
        let addrs: Vec<u64> = args
            .iter()
            .map(|a| match a {
                KernelArg::InU8(b) => b.addr,
                KernelArg::InU16(b) => b.addr,
                KernelArg::InI32(b) => b.addr,
                KernelArg::InI64(b) => b.addr,
                KernelArg::InF32(b) => b.addr,
                KernelArg::InF64(b) => b.addr,
                KernelArg::OutU8(b) => b.addr,
                KernelArg::OutU16(b) => b.addr,
                KernelArg::OutI32(b) => b.addr,
                KernelArg::OutI64(b) => b.addr,
                KernelArg::OutF32(b) => b.addr,
                KernelArg::OutF64(b) => b.addr,
                _ => 0,
            })
            .collect();
        let list: Vec<EmuArg> = args
            .iter()
            .zip(&addrs)
            .map(|(a, addr)| {
                let p = |v: *const c_void, kind, elem| EmuArg {
                    kind,
                    elem,
                    value: v,
                };
                let addr = (addr as *const u64).cast();
                match a {
                    KernelArg::U64(v) => p((v as *const u64).cast(), 0, 8),
                    KernelArg::F64(v) => p((v as *const f64).cast(), 1, 8),
                    KernelArg::Index1(v) => p(*v as *const _ as *const c_void, 2, 0),
                    KernelArg::Index2(v) => p(*v as *const _ as *const c_void, 3, 0),
                    KernelArg::Reduce(v) => p(*v as *const _ as *const c_void, 4, 0),
                    KernelArg::Raw(v) => p(*v as *const _ as *const c_void, 7, 0),
                    KernelArg::InU8(_) => p(addr, 5, 1 | EXACT),
                    KernelArg::InU16(_) => p(addr, 5, 2 | EXACT),
                    KernelArg::InI32(_) => p(addr, 5, 4 | EXACT),
                    KernelArg::InI64(_) => p(addr, 5, 8 | EXACT),
                    KernelArg::InF32(_) => p(addr, 5, 4),
                    KernelArg::InF64(_) => p(addr, 5, 8),
                    KernelArg::OutU8(_) => p(addr, 6, 1 | EXACT),
                    KernelArg::OutU16(_) => p(addr, 6, 2 | EXACT),
                    KernelArg::OutI32(_) => p(addr, 6, 4 | EXACT),
                    KernelArg::OutI64(_) => p(addr, 6, 8 | EXACT),
                    KernelArg::OutF32(_) => p(addr, 6, 4),
                    KernelArg::OutF64(_) => p(addr, 6, 8),
                }
            })
            .collect();
        let grid = [cfg.grid.0, cfg.grid.1, cfg.grid.2];
        let block = [cfg.block.0, cfg.block.1, cfg.block.2];
        let mut err = vec![0 as c_char; 2048];
        let seed = fnv(name) ^ seed();
        // SAFETY: `list` points at values that outlive the call; the kernel
        // pointer came from the library; the caller vouches for the arguments
        // (and the runtime fences every buffer).
        let r = unsafe {
            (self.api.launch)(
                f.name.as_ptr(),
                f.ptr as *mut c_void,
                list.as_ptr(),
                list.len() as u32,
                grid.as_ptr(),
                block.as_ptr(),
                cfg.shared_mem_bytes,
                schedules(self.api),
                seed,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if r != 0 {
            return Err(KernelError::Device(c_message(&err)));
        }
        Ok(())
    }

    unsafe fn gemm<T: super::CudaFloat>(
        &self,
        g: &GemmArgs,
        a: &EmuBuf<T>,
        a_off: usize,
        b: &EmuBuf<T>,
        b_off: usize,
        c: &mut EmuBuf<T>,
    ) -> Result<()> {
        require_bound("cublasGemmEx")?;
        let mut err = vec![0 as c_char; 1024];
        // SAFETY: the runtime reads and writes only inside fenced buffers and
        // reports a fault as an error.
        let r = unsafe {
            (self.api.gemm)(
                elem::<T>(),
                g.trans_a as c_int,
                g.trans_b as c_int,
                g.m,
                g.n,
                g.k,
                1.0,
                Self::addr(a, a_off),
                g.lda,
                g.stride_a,
                Self::addr(b, b_off),
                g.ldb,
                g.stride_b,
                0.0,
                c.addr,
                g.ldc,
                g.stride_c,
                g.batch,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if r != 0 {
            return Err(KernelError::Device(format!(
                "cuBLAS gemm failed ({} emulated): {}",
                T::DTYPE,
                c_message(&err)
            )));
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        bind_thread();
        Ok(())
    }

    fn take_recorded_error(&self) -> Option<String> {
        RECORDED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn memory_info(&self) -> Result<(usize, usize)> {
        let (live, pooled, cap) = memory_stats()?;
        Ok(((cap.saturating_sub(live + pooled)) as usize, cap as usize))
    }
}

fn c_message(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The schedules' seed: `AUTOGRAD_CUDA_EMULATOR_SEED`, or a fixed one.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        std::env::var("AUTOGRAD_CUDA_EMULATOR_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed)
    })
}

/// The module sources the emulator library was compiled from (build.rs).
const BUILT_SOURCES: [(Module, &str); 4] = [
    (
        Module::Unary,
        include_str!(concat!(env!("OUT_DIR"), "/unary.source")),
    ),
    (
        Module::Binary,
        include_str!(concat!(env!("OUT_DIR"), "/binary.source")),
    ),
    (
        Module::Reduce,
        include_str!(concat!(env!("OUT_DIR"), "/reduce.source")),
    ),
    (
        Module::Copy,
        include_str!(concat!(env!("OUT_DIR"), "/copy.source")),
    ),
];

#[cfg(test)]
mod tests {
    use super::dynamic_shared;

    #[test]
    fn extern_shared_declarations_become_the_launch_buffer() {
        let src = "__global__ void k() {\n    extern __shared__ __align__(16) unsigned char s[];\n    \
                   extern __shared__ float t [ ];\n}\n";
        let out = dynamic_shared(src).unwrap();
        assert_eq!(
            out,
            "__global__ void k() {\n    unsigned char* const s = reinterpret_cast<unsigned \
             char*>(emu_dynamic_shared());\n    float* const t = \
             reinterpret_cast<float*>(emu_dynamic_shared());\n}\n"
        );
        // Line numbers are kept for the compiler's messages.
        let multi = dynamic_shared("extern __shared__\n double d[];\nx").unwrap();
        assert_eq!(multi.lines().count(), 3, "{multi}");
        assert!(dynamic_shared("extern __shared__ float s[4];").is_err());
        assert!(dynamic_shared("extern __shared__ float s[]").is_err());
        assert_eq!(dynamic_shared("no shared").unwrap(), "no shared");
    }
}
