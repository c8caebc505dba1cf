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
    if let Some(out) = super::in_f32(ins, |w| run_cpu(kernel, what, w, shape))? {
        return Ok(out);
    }
    let out = match first {
        CpuStorage::F32(_) => CpuStorage::F32(program::run_checked(name, ins, shape, &|i, o| {
            kernel.eval(what, i, o)
        })?),
        CpuStorage::F64(_) => CpuStorage::F64(program::run_checked(name, ins, shape, &|i, o| {
            kernel.eval(what, i, o)
        })?),
        other => return Err(super::needs_float(name, other.dtype())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::program::{PIECE, same_for_every_thread_count};
    use crate::generated::tests::MulAddOne;

    /// A generated kernel run in pieces on any number of threads gives the bits
    /// of one serial pass, over dense, broadcast and transposed operands.
    #[test]
    fn a_generated_kernel_in_pieces_gives_the_bits_of_one_pass() {
        let rows = (2 * PIECE + 1001) / 4;
        let shape = Shape::from([rows, 4]);
        let n = rows * 4;
        let v: Vec<f32> = (0..n).map(|i| (i as f32 * 0.31).cos()).collect();
        let a = CpuStorage::F32(v);
        let al = Layout::contiguous(shape.clone());
        let tl = Layout::contiguous(Shape::from([4, rows]))
            .transpose(0, 1)
            .unwrap();
        let b = CpuStorage::F32(vec![0.5, -1.25, 2.0, 3.5]);
        let bl = Layout::contiguous(Shape::from([4]))
            .broadcast_to(&shape)
            .unwrap();
        let bits = |s: CpuStorage| match s {
            CpuStorage::F32(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            _ => unreachable!("f32 operands"),
        };
        same_for_every_thread_count("value", || {
            bits(run_cpu(&MulAddOne, Eval::Value, &[(&a, &tl), (&b, &bl)], &shape).unwrap())
        });
        same_for_every_thread_count("derivative", || {
            let ins = [(&a, &al), (&b, &bl), (&a, &tl)];
            bits(run_cpu(&MulAddOne, Eval::Derivative(&[1]), &ins, &shape).unwrap())
        });
    }
}
