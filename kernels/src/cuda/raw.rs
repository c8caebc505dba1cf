//! Raw CUDA programs (`crate::raw`): an op's own source, compiled by NVRTC at its
//! first launch (by g++ on the emulated device), launched with the op's grid over
//! its inputs' storages, zero-copy, and fresh outputs.

use super::compile::Contraction;
use super::driver::{DEFAULT_MAX_DYNAMIC_SHARED, Driver, KernelArg, LaunchCfg};
use super::index::{RawParams, RawView};
use super::{CudaElement, CudaStorage, alloc};
use crate::raw::{CUDA_PRELUDE, MAX_DIMS, MAX_INPUTS, MAX_OUTPUTS, MAX_SCALARS, RawLaunch};
use crate::{BackendStorage, DType, KernelError, Layout, Result, Shape};

fn layout_error(what: String) -> KernelError {
    KernelError::Layout(what)
}

impl CudaStorage {
    /// Launches a raw program's entry point for the inputs' dtype over `ins`
    /// (storages and views, passed as they are) and returns one new contiguous
    /// buffer per shape of `outs`. Checks the counts against the limits of
    /// [`crate::raw`], the ranks, that every view fits its storage, and that the
    /// inputs share a device and a dtype; the launch is skipped when every output
    /// is empty.
    ///
    /// # Safety
    /// The entry point takes `RAW_PARAMS(T)`, reads only inside the inputs' views
    /// (as `RawParams` describes them), writes every element of every output and
    /// nothing else, within the launch configuration given.
    pub unsafe fn run_raw(
        launch: &RawLaunch<'_>,
        ins: &[(&CudaStorage, &Layout)],
        outs: &[Shape],
    ) -> Result<Vec<CudaStorage>> {
        let name = launch.program.name;
        let Some(&(first, _)) = ins.first() else {
            return Err(layout_error(format!(
                "raw program `{name}`: a launch needs at least one input tensor"
            )));
        };
        if ins.len() > MAX_INPUTS || outs.is_empty() || outs.len() > MAX_OUTPUTS {
            return Err(layout_error(format!(
                "raw program `{name}`: {} inputs and {} outputs; a launch takes 1 to \
                 {MAX_INPUTS} inputs and 1 to {MAX_OUTPUTS} outputs",
                ins.len(),
                outs.len()
            )));
        }
        if launch.scalars.len() > MAX_SCALARS {
            return Err(layout_error(format!(
                "raw program `{name}`: {} scalar parameters; at most {MAX_SCALARS}",
                launch.scalars.len()
            )));
        }
        for &(s, l) in ins {
            first.same_kind(s)?;
            crate::check::check_fits(s.len(), l)?;
        }
        let shapes = ins.iter().map(|(_, l)| l.shape()).chain(outs);
        if let Some(big) = shapes.into_iter().find(|s| s.rank() > MAX_DIMS) {
            return Err(layout_error(format!(
                "raw program `{name}`: a tensor of shape {big} has more than {MAX_DIMS} axes; \
                 reshape it first"
            )));
        }
        // SAFETY: forwarded to the caller.
        with_dtype!(first.dtype(), "raw program", T => unsafe { launch_program::<T>(launch, ins, outs) })
    }
}

/// # Safety
/// As [`CudaStorage::run_raw`], whose checks have passed.
unsafe fn launch_program<T: CudaElement>(
    launch: &RawLaunch<'_>,
    ins: &[(&CudaStorage, &Layout)],
    outs: &[Shape],
) -> Result<Vec<CudaStorage>> {
    let dev = ins[0].0.device().clone();
    let mut bufs = Vec::with_capacity(outs.len());
    for s in outs {
        // SAFETY: the kernel writes every element (the caller's contract); an
        // empty output is never read.
        bufs.push(unsafe { alloc::<T>(&dev, s.numel())? });
    }
    if outs.iter().any(|s| s.numel() > 0) {
        let mut p = RawParams {
            n_inputs: ins.len() as u64,
            n_outputs: outs.len() as u64,
            n_scalars: launch.scalars.len() as u64,
            ..RawParams::default()
        };
        for (k, (_, l)) in ins.iter().enumerate() {
            p.inputs[k] = RawView::of(l);
        }
        for (k, s) in outs.iter().enumerate() {
            p.outputs[k] = RawView::of(&Layout::contiguous(s.clone()));
        }
        for (k, s) in launch.scalars.iter().enumerate() {
            p.scalars[k] = s.bits();
        }
        let entry = format!("{}_{}", launch.entry, T::DTYPE);
        let source = format!("{CUDA_PRELUDE}\n{}", launch.program.source);
        let key = format!("raw.{}", launch.program.name);
        // The user's source compiles as nvcc compiles it, contraction on (see
        // `Contraction`).
        let f = dev.generated_function(&key, &source, &entry, Contraction::On)?;
        let inputs = (0..MAX_INPUTS)
            .map(|k| ins[k.min(ins.len() - 1)].0.slice::<T>())
            .collect::<Result<Vec<_>>>()?;
        let spare = MAX_OUTPUTS - outs.len();
        let mut args = vec![KernelArg::Raw(&p)];
        args.extend(inputs.iter().map(|&b| T::input(b)));
        args.extend(bufs.iter_mut().map(|b| T::output(b)));
        // Unused output slots: input 0's storage, read-only (never written).
        args.extend((0..spare).map(|_| T::input(inputs[0])));
        let c = launch.config;
        let cfg = LaunchCfg {
            grid: c.grid,
            block: c.block,
            shared_mem_bytes: c.shared_mem_bytes,
        };
        // Past 48 KiB, a kernel launches only after opting in (on the kernel, so
        // each launch that needs it sets it: a kernel's functions are cached).
        if c.shared_mem_bytes > DEFAULT_MAX_DYNAMIC_SHARED {
            dev.driver
                .allow_dynamic_shared_memory(&f, &entry, c.shared_mem_bytes)
                .map_err(|e| {
                    KernelError::Device(format!("raw program `{}`: {e}", launch.program.name))
                })?;
        }
        // SAFETY: the arguments are RAW_PARAMS(T) (the struct, 8 input and 4 output
        // pointers); what the kernel touches is the caller's contract.
        unsafe { dev.driver.launch(&f, &entry, cfg, &mut args)? };
    }
    Ok(bufs
        .into_iter()
        .zip(outs)
        .map(|(b, s)| CudaStorage::new(b, s.numel(), dev.clone()))
        .collect())
}

#[cfg(test)]
mod tests {
    /// The size the PTX of a raw program shows for its first parameter
    /// (tests/integration/raw.rs checks it there): 4 counts, 12 views of 19 u64,
    /// 8 scalars.
    #[test]
    fn raw_params_have_the_size_of_their_c_twin() {
        assert_eq!(std::mem::size_of::<super::RawParams>(), 1920);
        assert_eq!(std::mem::align_of::<super::RawParams>(), 8);
    }
}
