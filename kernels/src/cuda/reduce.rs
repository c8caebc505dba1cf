//! Reductions on the device: choosing a kernel and a split for the view's layout.
//!
//! Two kernels per op (see reduce.cu): `rows` gives each output a block whose
//! threads stride over the reduced elements, `cols` gives each output a thread.
//! Adjacent threads should read adjacent elements, so the reduced axes being
//! innermost in memory picks `rows` (summing the rows of a matrix), the kept axes
//! being innermost picks `cols` (the bias gradient: summing a matrix's columns).
//! When there are too few outputs to fill the device, the reduced elements are
//! split into chunks reduced in parallel, and a second pass reduces the chunks.

use super::compile::{self, Module};
use super::driver::{KernelArg, LaunchCfg};
use super::index::ReducePlan;
use super::{BLOCK, CudaElement, CudaStorage, alloc, launch};
use crate::{Layout, ReduceOp, Result, Shape};

/// Reduced elements per block (rows) or per thread (cols) below which a
/// reduction is not split.
const ROWS_CHUNK_MIN: usize = 4096;
const COLS_CHUNK_MIN: usize = 64;
const MAX_SPLITS: usize = 65535;

pub(super) fn reduce<T: CudaElement>(
    x: &CudaStorage,
    l: &Layout,
    op: ReduceOp,
    axes: &[usize],
) -> Result<CudaStorage> {
    let plan = ReducePlan::new(l, axes)?;
    let dev = &x.device;
    let (out_n, red_n) = (plan.out_n, plan.red_n);
    if out_n == 0 {
        // SAFETY: nothing to write or read.
        let out = unsafe { alloc::<T>(dev, 0)? };
        return Ok(CudaStorage::new(out, 0, dev.clone()));
    }
    let rows = match (plan.kept_inner_stride, plan.red_inner_stride) {
        // One output: all threads on it.
        (None, _) => true,
        // Nothing reduced (a copy): a thread per output.
        (Some(_), None) => false,
        // Reduced elements adjacent: a block per output, unless each output has so
        // few that most of a block would idle.
        (Some(_), Some(1)) => !(red_n < 64 && out_n >= 4096),
        // Outputs adjacent: a thread per output.
        (Some(1), Some(_)) => false,
        // Neither order is coalesced: many outputs favour a thread each.
        (Some(_), Some(_)) => out_n < 8192,
    };
    let fill_target = dev.multiprocessors() * 4;
    let splits = if rows {
        if out_n >= fill_target || red_n <= ROWS_CHUNK_MIN {
            1
        } else {
            fill_target
                .div_ceil(out_n)
                .min(red_n.div_ceil(ROWS_CHUNK_MIN))
        }
    } else {
        let threads = fill_target * BLOCK as usize;
        if out_n >= threads || red_n <= COLS_CHUNK_MIN {
            1
        } else {
            threads.div_ceil(out_n).min(red_n.div_ceil(COLS_CHUNK_MIN))
        }
    }
    .clamp(1, MAX_SPLITS);
    let chunk = red_n.div_ceil(splits).max(1);
    let splits = red_n.div_ceil(chunk).max(1);

    let name = compile::reduce_kernel(op, rows, T::DTYPE);
    // SAFETY: block (o, s) writes out[s * out_n + o] for every o and s < splits.
    let mut out = unsafe { alloc::<T>(dev, splits * out_n)? };
    let blocks_x = if rows {
        out_n.min(1 << 20)
    } else {
        out_n
            .div_ceil(BLOCK as usize)
            .min(dev.multiprocessors() * 32)
    };
    let cfg = LaunchCfg {
        grid: (blocks_x as u32, splits as u32, 1),
        block: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let (out_n64, red_n64, chunk64) = (out_n as u64, red_n as u64, chunk as u64);
    let src = x.slice::<T>()?;
    let mut args = [
        KernelArg::U64(out_n64),
        KernelArg::U64(red_n64),
        KernelArg::U64(chunk64),
        KernelArg::Reduce(&plan.index),
        T::input(src),
        T::output(&mut out),
    ];
    // SAFETY: matches reduce.cu's (out_n, red_n, chunk, ReduceIndex, const T*, T*);
    // the view fits the input (checked by the caller) and `out` holds
    // splits * out_n elements.
    unsafe { launch(dev, Module::Reduce, &name, cfg, &mut args)? };
    let partial = CudaStorage::new(out, splits * out_n, dev.clone());
    if splits == 1 {
        return Ok(partial);
    }
    // The chunks' results, [splits, out_n], reduced over the first axis.
    let pl = Layout::contiguous(Shape::from([splits, out_n]));
    reduce::<T>(&partial, &pl, op, &[0])
}
