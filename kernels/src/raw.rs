//! Raw kernels: an op's own CPU loop or CUDA program, outside the fixed kernel set.
//! This module holds what is independent of autograd (the CUDA prelude, the
//! limits, the launch description and its scalar parameters, zeroed CPU output
//! buffers); `autograd_core::raw` is the API ops use, and the CUDA launch is
//! `cuda::CudaStorage::run_raw`.

use crate::Result;
use crate::cpu::pool;
use crate::cpu::storage::CpuElement;

/// The prelude of every raw CUDA program (`raw.cuh`): the parameter struct
/// `RawParams`, the `RAW_PARAMS(T)` parameter list and the `raw_at*` index helpers.
pub const CUDA_PRELUDE: &str = include_str!("raw.cuh");

/// At most this many input tensors per CUDA launch (`RAW_MAX_INPUTS`).
pub const MAX_INPUTS: usize = 8;
/// At most this many outputs per CUDA launch (`RAW_MAX_OUTPUTS`).
pub const MAX_OUTPUTS: usize = 4;
/// At most this many scalar parameters per CUDA launch (`RAW_MAX_SCALARS`).
pub const MAX_SCALARS: usize = 8;
/// At most this many axes per tensor passed to a CUDA launch (`RAW_MAX_DIMS`).
pub const MAX_DIMS: usize = 8;

/// A scalar parameter of a CUDA launch: `p.scalar[k].u`, `.i` or `.f` in the
/// kernel (one 8-byte union per parameter).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// An unsigned integer (`p.scalar[k].u`, a `u64`).
    U64(u64),
    /// A signed integer (`p.scalar[k].i`, a `long long`).
    I64(i64),
    /// A float (`p.scalar[k].f`, a `double`, also for the `_f32` entry point).
    F64(f64),
}

impl Scalar {
    /// The 8 bytes of the union, as a `u64`.
    pub fn bits(self) -> u64 {
        match self {
            Scalar::U64(v) => v,
            Scalar::I64(v) => v as u64,
            Scalar::F64(v) => v.to_bits(),
        }
    }
}

/// A raw CUDA program: its source, compiled by NVRTC after [`CUDA_PRELUDE`] at the
/// first launch on each device and cached under `name` (so give each program a
/// name of its own).
///
/// It is compiled as nvcc compiles a source by default, with contraction on
/// (`--fmad=true`): `a * b + c` may become one fused multiply-add, rounded once.
/// (The library's own programs are compiled with `--fmad=false`, so that fused
/// and unfused ops give the same bits: `cuda::compile::Contraction`.) Where a
/// kernel needs each product and sum rounded, as its CPU kernel computes them, it
/// writes `__fmul_rn(a, b)`, `__fadd_rn(x, y)` (`__dmul_rn`, .. for `double`),
/// which no compiler contracts; the emulated device, which contracts whatever it
/// can, has them too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaProgram {
    /// The program's name: the cache key (and the file name in compiler messages).
    pub name: &'static str,
    /// The CUDA C++ source: entry points `extern "C" __global__ void
    /// <entry>_f32(RAW_PARAMS(float))` and `<entry>_f64(RAW_PARAMS(double))`.
    pub source: &'static str,
}

/// A launch's grid and block (`(x, y, z)`, as `cuLaunchKernel` takes them) and
/// its dynamic shared memory in bytes (0 when the kernel only uses static
/// `__shared__` arrays). Past 48 KiB the launch opts the kernel in
/// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), up to the device's
/// opt-in maximum per block (227 KiB on an H100 or H200, 163 KiB on an A100, 99 KiB on compute capability 8.6 and 8.9),
/// static shared memory included; more is an error. The emulated device
/// provides it for `extern __shared__ T name[];` declared in a function body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks along x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads per block along x, y, z (at most 1024 in all).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block (`extern __shared__`), in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A one-dimensional grid of `grid` blocks of `block` threads, no dynamic
    /// shared memory.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

/// One launch of a raw CUDA program: which entry point (`<entry>_f32` or
/// `<entry>_f64`, by the inputs' dtype), with which grid, and the scalars.
#[derive(Clone, Copy, Debug)]
pub struct RawLaunch<'a> {
    /// The program.
    pub program: CudaProgram,
    /// The entry point's name without its dtype suffix.
    pub entry: &'a str,
    /// Grid, block and dynamic shared memory.
    pub config: LaunchConfig,
    /// The scalar parameters (at most [`MAX_SCALARS`]).
    pub scalars: &'a [Scalar],
}

/// `n` zeros in a buffer from the thread's pool of freed CPU buffers: the output
/// buffers of a raw CPU kernel (zeroed, so a kernel never sees uninitialised memory).
pub fn zeroed<T: CpuElement + crate::Element>(n: usize) -> Result<Vec<T>> {
    pool::filled(n, T::ZERO)
}
