//! Planning a deferred chain: the deferred ops it reads become steps of one
//! program, everything else a leaf; and running the program on the leaves'
//! device.

use super::deferred::{Mark, Pending, pending};
use crate::storage::{Storage, StorageData, lost};
use crate::{DType, Device, Error, Result, Shape};
use autograd_kernels::program::{Operand, Sink, Step};
use autograd_kernels::{BackendStorage, Layout};
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A new kernel number (see [`super::Fusion::Kernel`]).
pub(super) fn next_kernel() -> u64 {
    static KERNELS: AtomicU64 = AtomicU64::new(1);
    KERNELS.fetch_add(1, Ordering::Relaxed)
}

/// The chain a deferred op ends, planned: its steps, and the storages read.
pub(super) struct Plan {
    /// The kernel's number (see [`super::Fusion::Kernel`]).
    kernel: u64,
    pub(super) steps: Vec<Step>,
    pub(super) leaves: Vec<(Arc<Storage>, Layout)>,
    /// The deferred storages planned as steps, with their step's index.
    planned: Vec<(*const Storage, usize)>,
    /// Where each step's op records the kernel it ran in.
    marks: Vec<Arc<Mark>>,
}

impl Plan {
    /// No steps yet, for kernel number `kernel`.
    fn new(kernel: u64) -> Plan {
        Plan {
            kernel,
            steps: Vec::new(),
            leaves: Vec::new(),
            planned: Vec::new(),
            marks: Vec::new(),
        }
    }

    pub(super) fn of(root: &Pending, len: usize) -> Result<Plan> {
        let mut plan = Plan::new(next_kernel());
        plan.step(root, len)?;
        Ok(plan)
    }

    /// One program for all of `roots` (see [`super::realize::evaluate_many`]), and its results.
    pub(super) fn many(
        roots: &[(*const Storage, &Pending)],
        len: usize,
    ) -> Result<(Plan, Vec<(usize, Sink)>)> {
        let mut plan = Plan::new(next_kernel());
        let mut outputs = Vec::with_capacity(roots.len());
        for &(key, p) in roots {
            if p.sum_of.is_some() {
                outputs.push((plan.step(p, len)?, Sink::Sum));
                continue;
            }
            let j = match plan.planned(key) {
                Some(j) => j,
                None => plan.storage_step(key, p, len)?,
            };
            outputs.push((j, Sink::Store));
        }
        Ok((plan, outputs))
    }

    /// `p` alone, every storage it reads a leaf (deferred or not).
    #[cfg(feature = "cuda")]
    pub(super) fn shallow(p: &Pending) -> Plan {
        let mut plan = Plan::new(0);
        let args = p.inputs.iter().map(|(s, l)| plan.leaf(s, l)).collect();
        plan.steps.push(Step {
            op: p.op.clone(),
            args,
        });
        plan
    }

    /// Plans `p` (after what it reads) and returns its step's index.
    fn step(&mut self, p: &Pending, len: usize) -> Result<usize> {
        let args = p
            .inputs
            .iter()
            .map(|(s, l)| self.operand(s, l, len))
            .collect::<Result<_>>()?;
        self.steps.push(Step {
            op: p.op.clone(),
            args,
        });
        self.marks.push(p.mark.clone());
        if let Some((_, chain)) = &p.sum_of {
            self.marks.push(chain.clone());
        }
        Ok(self.steps.len() - 1)
    }

    fn operand(&mut self, s: &Arc<Storage>, l: &Layout, len: usize) -> Result<Operand> {
        let whole = l.is_contiguous() && l.offset() == 0 && s.len() == len && l.numel() == len;
        if whole {
            let key = Arc::as_ptr(s);
            if let Some(j) = self.planned(key) {
                return Ok(Operand::Step(j));
            }
            if let Some(p) = pending(s).filter(|p| p.sum_of.is_none()) {
                return Ok(Operand::Step(self.storage_step(key, &p, len)?));
            }
        }
        // Read through a view (broadcast, strided, part of it), or a deferred sum:
        // its values are computed on their own, then read as a leaf.
        s.data()?;
        Ok(self.leaf(s, l))
    }

    /// The step of the deferred storage at `key`, if it is planned.
    fn planned(&self, key: *const Storage) -> Option<usize> {
        self.planned
            .iter()
            .find(|(p, _)| *p == key)
            .map(|&(_, j)| j)
    }

    /// Plans `p`, the op of the deferred storage at `key`, as a step that later
    /// reads of that storage reuse.
    fn storage_step(&mut self, key: *const Storage, p: &Pending, len: usize) -> Result<usize> {
        let j = self.step(p, len)?;
        self.planned.push((key, j));
        Ok(j)
    }

    /// `s` viewed as `l`, read as a leaf (once, however often it is read).
    fn leaf(&mut self, s: &Arc<Storage>, l: &Layout) -> Operand {
        if let Some(k) = self
            .leaves
            .iter()
            .position(|(t, m)| Arc::ptr_eq(t, s) && m == l)
        {
            return Operand::Leaf(k);
        }
        self.leaves.push((s.clone(), l.clone()));
        Operand::Leaf(self.leaves.len() - 1)
    }

    pub(super) fn run(&self, len: usize, dtype: DType, sink: Sink) -> Result<StorageData> {
        let last = self.steps.len().saturating_sub(1);
        let mut outs = self.run_many(len, dtype, &[(last, sink)])?;
        outs.pop().ok_or_else(|| lost(len, dtype))
    }

    /// Runs the plan once, with a result for each `(step, sink)` of `outputs` (on
    /// a GPU at most `cuda::fused::MAX_RESULTS`).
    pub(super) fn run_many(
        &self,
        len: usize,
        dtype: DType,
        outputs: &[(usize, Sink)],
    ) -> Result<Vec<StorageData>> {
        for mark in &self.marks {
            mark.set(self.kernel);
        }
        let name = self.steps.last().map_or("fused", |s| s.op.name());
        let shape = Shape::from([len]);
        let device = self.device();
        let err = |e| Error::from_kernel(e, name, &shape, dtype, device);
        let program = FusedProgram {
            steps: &self.steps,
            len,
            dtype,
            outputs,
        };
        let reads = self.leaves.iter().map(|(s, l)| (&**s, l));
        Ok(Storage::run(name, &program, reads, err)?.into_vec())
    }

    /// The device the plan runs on: its leaves' (the CPU for none).
    fn device(&self) -> Device {
        self.leaves.first().map_or(Device::Cpu, |(s, _)| s.device())
    }

    /// Whether the device's fused kernel can run this plan with one result (a CUDA
    /// kernel takes a bounded number of buffers and scalars; the CPU loop takes
    /// any).
    pub(super) fn fits(&self) -> bool {
        self.fits_results(1)
    }

    /// Whether the device's fused kernel can run this plan with `results` results
    /// (a CUDA kernel also writes a bounded number of them).
    pub(super) fn fits_results(&self, results: usize) -> bool {
        Storage::fused_fits(self.device(), &self.steps, self.leaves.len(), results)
    }
}

/// A plan's program with its results, run over the leaves' buffers (see
/// [`Storage::run`]).
struct FusedProgram<'a> {
    steps: &'a [Step],
    len: usize,
    dtype: DType,
    outputs: &'a [(usize, Sink)],
}

impl crate::storage::Program for FusedProgram<'_> {
    fn run<B: BackendStorage>(
        &self,
        ins: &[(&B, &Layout)],
    ) -> autograd_kernels::Result<SmallVec<[B; 1]>> {
        B::run_fused(self.steps, ins, self.len, self.dtype, self.outputs).map(SmallVec::from_vec)
    }
}
