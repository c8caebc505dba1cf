//! Reductions on the device: choosing a kernel and a split for the view's layout.
//!
//! Three kernels per op (see reduce.cu): `rows` gives each output a block whose
//! threads stride over the reduced elements, `cols` gives each output a thread,
//! `few` gives a handful of adjacent outputs one block whose threads split between
//! them. Adjacent threads should read adjacent elements, so the reduced axes being
//! innermost in memory picks `rows` (summing the rows of a matrix), the kept axes
//! being innermost picks `cols` (the bias gradient: summing a matrix's columns), or
//! `few` when there are so few columns that `cols` would leave most of a block's
//! threads idle. When there are too few outputs to fill the device, the reduced
//! elements are split into chunks reduced in parallel, and a second pass reduces
//! the chunks' partial results (kept in f64 for sums: `compile::partial_dtype`).
//!
//! [`plan_launch`] is the one place these choices are made; the tests call it.

use super::compile::{self, Module, ReduceKind};
use super::driver::{KernelArg, LaunchCfg};
use super::index::ReducePlan;
use super::{BLOCK, CudaElement, CudaStorage, alloc, launch};
use crate::{BackendStorage, DType, Layout, ReduceOp, Result, Shape};

/// Reduced elements per block (rows) or per thread (cols, few) below which a
/// reduction is not split.
const ROWS_CHUNK_MIN: usize = 4096;
const COLS_CHUNK_MIN: usize = 64;
const MAX_SPLITS: usize = 65535;
/// Threads of a `few` block: `REDUCE_SCRATCH` in reduce.cu, the shared memory
/// that holds one accumulator per thread.
const FEW_BLOCK: u32 = 128;
/// Adjacent outputs at most this many take the `few` kernel (each output then
/// gets at least two of its block's threads).
const FEW_MAX: usize = FEW_BLOCK as usize / 2;

/// How one pass of a reduction is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    pub kind: ReduceKind,
    /// Chunks the reduced elements are split into (grid y); 1: no second pass.
    pub splits: usize,
    /// Reduced elements per chunk.
    pub chunk: usize,
    /// Grid x.
    pub blocks_x: usize,
    /// Threads per block.
    pub block: u32,
}

/// The kernel, split and grid for a reduction of `plan` on a device with
/// `multiprocessors` SMs (`plan.out_n > 0`).
pub(crate) fn plan_launch(multiprocessors: usize, plan: &ReducePlan) -> Launch {
    let (out_n, red_n) = (plan.out_n, plan.red_n);
    let kind = match (plan.kept_inner_stride, plan.red_inner_stride) {
        // One output: all threads on it.
        (None, _) => ReduceKind::Rows,
        // Nothing reduced (a copy): a thread per output.
        (Some(_), None) => ReduceKind::Cols,
        // Reduced elements adjacent: a block per output, unless each output has so
        // few that most of a block would idle.
        (Some(_), Some(1)) if red_n < 64 && out_n >= 4096 => ReduceKind::Cols,
        (Some(_), Some(1)) => ReduceKind::Rows,
        // Outputs adjacent: a thread per output, or, for a few outputs, a block
        // shared between all of them.
        (Some(1), Some(_)) if out_n <= FEW_MAX => ReduceKind::Few,
        (Some(1), Some(_)) => ReduceKind::Cols,
        // Neither order is coalesced: many outputs favour a thread each.
        (Some(_), Some(_)) if out_n < 8192 => ReduceKind::Rows,
        (Some(_), Some(_)) => ReduceKind::Cols,
    };
    let fill_target = multiprocessors * 4;
    let splits = match kind {
        ReduceKind::Rows => {
            if out_n >= fill_target || red_n <= ROWS_CHUNK_MIN {
                1
            } else {
                fill_target
                    .div_ceil(out_n)
                    .min(red_n.div_ceil(ROWS_CHUNK_MIN))
            }
        }
        ReduceKind::Cols => {
            let threads = fill_target * BLOCK as usize;
            if out_n >= threads || red_n <= COLS_CHUNK_MIN {
                1
            } else {
                threads.div_ceil(out_n).min(red_n.div_ceil(COLS_CHUNK_MIN))
            }
        }
        ReduceKind::Few => {
            // A block per chunk (of half the usual size, so twice as many); each
            // of its threads takes COLS_CHUNK_MIN elements at least.
            let per_block = (FEW_BLOCK as usize / out_n) * COLS_CHUNK_MIN;
            if red_n <= per_block {
                1
            } else {
                (2 * fill_target).min(red_n.div_ceil(per_block))
            }
        }
    }
    .clamp(1, MAX_SPLITS);
    let chunk = red_n.div_ceil(splits).max(1);
    let splits = red_n.div_ceil(chunk).max(1);
    let blocks_x = match kind {
        ReduceKind::Rows => out_n.min(1 << 20),
        ReduceKind::Cols => out_n.div_ceil(BLOCK as usize).min(multiprocessors * 32),
        ReduceKind::Few => 1,
    };
    let block = match kind {
        ReduceKind::Few => FEW_BLOCK,
        ReduceKind::Rows | ReduceKind::Cols => BLOCK,
    };
    Launch {
        kind,
        splits,
        chunk,
        blocks_x,
        block,
    }
}

pub(super) fn reduce<T: CudaElement>(
    x: &CudaStorage,
    l: &Layout,
    op: ReduceOp,
    axes: &[usize],
) -> Result<CudaStorage> {
    pass::<T, T>(x, l, op, axes)
}

/// Reduces the view `l` of `x` (elements `In`) to a result of `Out`s: one pass,
/// or, when the launch is split, a pass writing partial results in
/// `partial_dtype` and this again over them.
pub(super) fn pass<In: CudaElement, Out: CudaElement>(
    x: &CudaStorage,
    l: &Layout,
    op: ReduceOp,
    axes: &[usize],
) -> Result<CudaStorage> {
    let plan = ReducePlan::new(l, axes)?;
    let dev = &x.device;
    if plan.out_n == 0 {
        // SAFETY: nothing to write or read.
        let out = unsafe { alloc::<Out>(dev, 0)? };
        return Ok(CudaStorage::new(out, 0, dev.clone()));
    }
    let lc = plan_launch(dev.multiprocessors(), &plan);
    if lc.splits == 1 {
        return launch_pass::<In, Out>(x, &plan, op, lc);
    }
    let partial = match compile::partial_dtype(op, Out::DTYPE) {
        DType::F32 => launch_pass::<In, f32>(x, &plan, op, lc)?,
        DType::F64 => launch_pass::<In, f64>(x, &plan, op, lc)?,
        DType::I64 => launch_pass::<In, i64>(x, &plan, op, lc)?,
        other => return Err(no_partials(other)),
    };
    // The chunks' results, [splits, out_n], reduced over the first axis.
    let pl = Layout::contiguous(Shape::from([lc.splits, plan.out_n]));
    match partial.dtype() {
        DType::F32 => pass::<f32, Out>(&partial, &pl, op, &[0]),
        DType::F64 => pass::<f64, Out>(&partial, &pl, op, &[0]),
        DType::I64 => pass::<i64, Out>(&partial, &pl, op, &[0]),
        other => Err(no_partials(other)),
    }
}

/// The error for partial results of a dtype the reductions do not write (the
/// backend reduces f32, f64 and i64 only).
fn no_partials(dtype: DType) -> crate::KernelError {
    crate::KernelError::Internal(format!(
        "a CUDA reduction's partial results in {dtype}: the reductions compute in f32, f64 \
         and i64"
    ))
}

/// Launches one pass: `lc.splits * out_n` results of type `P`.
fn launch_pass<In: CudaElement, P: CudaElement>(
    x: &CudaStorage,
    plan: &ReducePlan,
    op: ReduceOp,
    lc: Launch,
) -> Result<CudaStorage> {
    let dev = &x.device;
    let (out_n, red_n) = (plan.out_n, plan.red_n);
    let name = compile::reduce_kernel(op, lc.kind, In::DTYPE, P::DTYPE);
    let len = lc.splits * out_n;
    // SAFETY: block (o, s) writes out[s * out_n + o] for every o and s < splits.
    let mut out = unsafe { alloc::<P>(dev, len)? };
    let cfg = LaunchCfg {
        grid: (lc.blocks_x as u32, lc.splits as u32, 1),
        block: (lc.block, 1, 1),
        shared_mem_bytes: 0,
    };
    let (out_n64, red_n64, chunk64) = (out_n as u64, red_n as u64, lc.chunk as u64);
    let src = x.slice::<In>()?;
    let mut args = [
        KernelArg::U64(out_n64),
        KernelArg::U64(red_n64),
        KernelArg::U64(chunk64),
        KernelArg::Reduce(&plan.index),
        In::input(src),
        P::output(&mut out),
    ];
    // SAFETY: matches reduce.cu's (out_n, red_n, chunk, ReduceIndex, const In*,
    // P*); the view fits the input (checked by the caller) and `out` holds
    // splits * out_n elements.
    unsafe { launch(dev, Module::Reduce, &name, cfg, &mut args)? };
    Ok(CudaStorage::new(out, len, dev.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch_for(dims: &[usize], axes: &[usize]) -> Launch {
        let l = Layout::contiguous(Shape::from(dims));
        plan_launch(4, &ReducePlan::new(&l, axes).unwrap())
    }

    #[test]
    fn few_adjacent_outputs_share_a_block_and_split_across_blocks() {
        // Summing the columns of a tall, narrow matrix: `few`, split into chunks
        // that fill the (4-SM) device.
        let lc = launch_for(&[1 << 20, 3], &[0]);
        assert_eq!(lc.kind, ReduceKind::Few);
        assert_eq!((lc.blocks_x, lc.splits, lc.block), (1, 32, FEW_BLOCK));
        assert_eq!(lc.chunk * lc.splits, 1 << 20);
        // Its second pass, over the [32, 3] partial results: one block.
        let lc = launch_for(&[32, 3], &[0]);
        assert_eq!((lc.kind, lc.splits), (ReduceKind::Few, 1));
        // Many columns stay a thread each; rows stay a block each.
        assert_eq!(launch_for(&[4096, 1024], &[0]).kind, ReduceKind::Cols);
        assert_eq!(launch_for(&[3, 1 << 20], &[1]).kind, ReduceKind::Rows);
        assert_eq!(launch_for(&[1 << 20], &[0]).kind, ReduceKind::Rows);
    }
}
