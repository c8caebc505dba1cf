//! Ops generated from an elementwise function, on the GPU: the op's program
//! (`CUDA_PRELUDE` and its source) compiled by NVRTC at the op's first use, one
//! launch over contiguous operands.

use super::compile::Contraction;
use super::driver::{Driver, KernelArg};
use super::{CudaElement, CudaStorage, alloc, launch_config};
use crate::generated::{CUDA_PRELUDE, ElementwiseKernel, Eval, MAX_INPUTS, check};
use crate::{BackendStorage, DType, KernelError, Layout, Result, Shape};

impl CudaStorage {
    /// Runs `kernel` over views of `shape` on the GPU: `ins[k]` is operand `k`'s
    /// storage with its layout, already broadcast to `shape`. Operands that are not
    /// contiguous from their first element are copied so first (broadcast ones
    /// included). The result is contiguous.
    pub fn run_generated<K: ElementwiseKernel>(
        kernel: &K,
        what: Eval<'_>,
        ins: &[(&CudaStorage, &Layout)],
        shape: &Shape,
    ) -> Result<CudaStorage> {
        check(kernel, what, ins.len())?;
        let Some(&(first, _)) = ins.first() else {
            return Err(KernelError::Internal(format!(
                "`{}`: an elementwise kernel needs at least one operand",
                kernel.name()
            )));
        };
        for &(s, l) in ins {
            first.same_kind(s)?;
            if l.shape() != shape {
                return Err(KernelError::Internal(format!(
                    "`{}`: an operand of shape {} for an output of shape {shape}",
                    kernel.name(),
                    l.shape()
                )));
            }
            crate::check::check_fits(s.len(), l)?;
        }
        with_dtype!(first.dtype(), kernel.name(), T => launch_kernel::<T, K>(kernel, what, ins, shape))
    }
}

fn launch_kernel<T: CudaElement, K: ElementwiseKernel>(
    kernel: &K,
    what: Eval<'_>,
    ins: &[(&CudaStorage, &Layout)],
    shape: &Shape,
) -> Result<CudaStorage> {
    let dev = ins[0].0.device().clone();
    let n = shape.numel();
    // SAFETY: the kernel writes all n elements.
    let mut out = unsafe { alloc::<T>(&dev, n)? };
    if n > 0 {
        // Contiguous operands from element 0, as the kernel indexes them.
        let copies: Vec<Option<CudaStorage>> = ins
            .iter()
            .map(|&(s, l)| {
                if l.is_contiguous() && l.offset() == 0 {
                    Ok(None)
                } else {
                    s.cast(l, T::DTYPE).map(Some)
                }
            })
            .collect::<Result<_>>()?;
        let operands: Vec<&CudaStorage> = copies
            .iter()
            .zip(ins)
            .map(|(c, &(s, _))| c.as_ref().unwrap_or(s))
            .collect();
        let name = format!("{}_{}", kernel.name(), T::DTYPE);
        let source = format!("{CUDA_PRELUDE}\n{}", kernel.cuda_source());
        let f = dev.generated_function(kernel.program(), &source, &name, Contraction::Off)?;
        let arity = kernel.arity();
        let buf = |k: usize| operands[k.min(operands.len() - 1)].slice::<T>();
        // The function's inputs in x0..x3 (unused slots repeat the last operand),
        // the incoming gradient of a derivative in g (the first operand for a value).
        let xs = (0..MAX_INPUTS)
            .map(|k| buf(k.min(arity - 1)))
            .collect::<Result<Vec<_>>>()?;
        let g = match what {
            Eval::Value => buf(0)?,
            Eval::Derivative(_) => buf(arity)?,
        };
        let p = kernel.cuda_params();
        let mut args = vec![KernelArg::U64(n as u64), KernelArg::U64(what.code())];
        args.extend(xs.into_iter().map(T::input));
        args.push(T::input(g));
        args.push(T::output(&mut out));
        args.extend(p.iter().map(|&v| KernelArg::F64(v)));
        // SAFETY: the arguments match the generated entry point's parameters
        // (n, what, 4 inputs, g, out, 4 doubles); every operand holds n contiguous
        // elements (checked, or copied so), and `out` holds n.
        unsafe {
            dev.driver
                .launch(&f, &name, launch_config(&dev, n), &mut args)?
        };
    }
    Ok(CudaStorage::new(out, n, dev))
}
