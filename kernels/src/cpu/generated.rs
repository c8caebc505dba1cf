//! A generated elementwise op on the CPU: a program of one step
//! (`cpu::program::run_checked`) whose block loop is the op's own kernel.

use super::program;
use super::storage::CpuStorage;
use crate::generated::{ElementwiseKernel, Eval, check};
use crate::{KernelError, Layout, Result, Shape};

/// Runs `kernel` over views of `shape` on the CPU: `ins[k]` is operand `k`'s
/// storage with its layout, already broadcast to `shape`. The result is contiguous.
pub fn run_cpu<K: ElementwiseKernel>(
    kernel: &K,
    what: Eval<'_>,
    ins: &[(&CpuStorage, &Layout)],
    shape: &Shape,
) -> Result<CpuStorage> {
    check(kernel, what, ins.len())?;
    let Some(&(first, _)) = ins.first() else {
        return Err(KernelError::Layout(format!(
            "`{}`: an elementwise kernel needs at least one operand",
            kernel.name()
        )));
    };
    let name = kernel.name();
    let out = match first {
        CpuStorage::F32(_) => {
            CpuStorage::F32(program::run_checked(name, ins, shape, &mut |i, o| {
                kernel.eval(what, i, o)
            })?)
        }
        CpuStorage::F64(_) => {
            CpuStorage::F64(program::run_checked(name, ins, shape, &mut |i, o| {
                kernel.eval(what, i, o)
            })?)
        }
    };
    if out.len() == shape.numel() {
        Ok(out)
    } else {
        Err(KernelError::Layout(format!(
            "`{}`: the kernel wrote {} of {} elements",
            kernel.name(),
            out.len(),
            shape.numel()
        )))
    }
}
