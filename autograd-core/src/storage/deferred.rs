//! Deferred values: the op a deferred storage computes, and the planning of the
//! chain that runs it (see `crate::fusion`, which decides when ops defer).

use super::{Storage, StorageData};
use crate::{DType, Device, Error, Result, Shape};
use autograd_kernels::cpu::fused;
use autograd_kernels::program::{FusedOp, Operand, Sink, Step};
use autograd_kernels::{KernelError, Layout};
use smallvec::SmallVec;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How an op's arithmetic ran, as the graph inspection shows it
/// ([`crate::NodeRef::fusion`], the DOT picture).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fusion {
    /// Deferred, and not run yet: nothing has read the values.
    Deferred,
    /// Run as a step of fused kernel number `n` (numbered in the order kernels were
    /// planned, from 1, process-wide). Ops with the same number ran in one pass.
    Kernel(u64),
}

/// Where a deferred op records the kernel it ran in (shared with the graph node
/// that recorded the op).
#[derive(Debug, Default)]
pub(crate) struct Mark(AtomicU64);

impl Mark {
    /// What the op's arithmetic has become so far.
    pub(crate) fn fusion(&self) -> Fusion {
        match self.0.load(Ordering::Relaxed) {
            0 => Fusion::Deferred,
            k => Fusion::Kernel(k),
        }
    }
}

/// A deferred op: what a deferred storage computes, and what it reads.
#[derive(Clone)]
pub(crate) struct Pending {
    pub(crate) op: FusedOp,
    /// Set to the kernel the op runs in, when it runs.
    pub(crate) mark: Arc<Mark>,
    /// The storages read, each with its layout broadcast to the output's shape.
    pub(crate) inputs: SmallVec<[(Arc<Storage>, Layout); 2]>,
    /// Deferred ops on the longest path through this one (itself included).
    pub(crate) depth: u32,
    /// Deferred ops in the chain this one ends (a bound: shared ones are counted
    /// once per use).
    pub(crate) steps: u32,
    /// For a deferred sum: the length of the chain summed (the storage itself holds
    /// one element, the sum of the chain's values), and the mark of the chain's
    /// last op.
    pub(crate) sum_of: Option<(usize, Arc<Mark>)>,
}

impl Pending {
    /// Its depth and size, as [`defer`] counts them.
    pub(crate) fn chain(&self) -> (u32, u32) {
        (self.depth, self.steps)
    }
}

/// A new kernel number (see [`Fusion::Kernel`]).
fn next_kernel() -> u64 {
    static KERNELS: AtomicU64 = AtomicU64::new(1);
    KERNELS.fetch_add(1, Ordering::Relaxed)
}

/// The chain a deferred op ends, planned: its steps, and the storages read.
struct Plan {
    /// The kernel's number (see [`Fusion::Kernel`]).
    kernel: u64,
    steps: Vec<Step>,
    leaves: Vec<(Arc<Storage>, Layout)>,
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

    fn of(root: &Pending, len: usize) -> Result<Plan> {
        let mut plan = Plan::new(next_kernel());
        plan.step(root, len)?;
        Ok(plan)
    }

    /// One program for all of `roots` (see [`evaluate_many`]), and its results.
    fn many(
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
    fn shallow(p: &Pending) -> Plan {
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
            if let Some(p) = s.pending().filter(|p| p.sum_of.is_none()) {
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

    fn run(&self, len: usize, dtype: DType, sink: Sink) -> Result<StorageData> {
        let last = self.steps.len().saturating_sub(1);
        let mut outs = self.run_many(len, dtype, &[(last, sink)])?;
        outs.pop().ok_or_else(|| lost(len, dtype))
    }

    /// Runs the plan once, with a result for each `(step, sink)` of `outputs` (on
    /// a GPU at most `cuda::fused::MAX_RESULTS`).
    fn run_many(
        &self,
        len: usize,
        dtype: DType,
        outputs: &[(usize, Sink)],
    ) -> Result<Vec<StorageData>> {
        for mark in &self.marks {
            let _ = mark
                .0
                .compare_exchange(0, self.kernel, Ordering::Relaxed, Ordering::Relaxed);
        }
        let name = self.steps.last().map_or("fused", |s| s.op.name());
        let shape = Shape::from([len]);
        let device = self.leaves.first().map_or(Device::Cpu, |(s, _)| s.device());
        let err = |e| Error::from_kernel(e, name, &shape, dtype, device);
        #[cfg(feature = "cuda")]
        let mismatch = |s: &Storage| Error::DeviceMismatch {
            op: name,
            lhs: device,
            rhs: s.device(),
        };
        #[cfg(feature = "cuda")]
        if let Device::Cuda(_) = device {
            let mut leaves = Vec::with_capacity(self.leaves.len());
            for (s, l) in &self.leaves {
                match s.data()? {
                    StorageData::Cuda(c) => leaves.push((c, l)),
                    StorageData::Cpu(_) => return Err(mismatch(s)),
                }
            }
            let outs = autograd_kernels::cuda::CudaStorage::run_fused_many(
                &self.steps,
                &leaves,
                len,
                dtype,
                outputs,
            )
            .map_err(err)?;
            return Ok(outs.into_iter().map(StorageData::Cuda).collect());
        }
        let mut leaves = Vec::with_capacity(self.leaves.len());
        for (s, l) in &self.leaves {
            match s.data()? {
                StorageData::Cpu(c) => leaves.push((c, l)),
                #[cfg(feature = "cuda")]
                StorageData::Cuda(_) => return Err(mismatch(s)),
            }
        }
        let outs = fused::run_many(&self.steps, &leaves, len, dtype, outputs).map_err(err)?;
        Ok(outs.into_iter().map(StorageData::Cpu).collect())
    }

    /// Whether the device's fused kernel can run this plan with one result (a CUDA
    /// kernel takes a bounded number of buffers and scalars; the CPU loop takes
    /// any).
    fn fits(&self) -> bool {
        self.fits_results(1)
    }

    /// Whether the device's fused kernel can run this plan with `results` results
    /// (a CUDA kernel also writes a bounded number of them).
    fn fits_results(&self, results: usize) -> bool {
        #[cfg(feature = "cuda")]
        if let Some((s, _)) = self.leaves.first()
            && let Device::Cuda(_) = s.device()
        {
            return autograd_kernels::cuda::fused::fits_many(
                &self.steps,
                self.leaves.len(),
                results,
            );
        }
        let _ = results;
        true
    }
}

/// The values of the deferred op `p` (`len` elements of `dtype`), with the
/// deferred ops it reads fused into one pass. A chain too large for one CUDA
/// kernel computes what its last op reads first, each in its own chain.
pub(crate) fn evaluate(p: &Pending, len: usize, dtype: DType) -> Result<StorageData> {
    let (len, sink) = match &p.sum_of {
        Some((n, _)) => (*n, Sink::Sum),
        None => (len, Sink::Store),
    };
    let plan = Plan::of(p, len)?;
    if plan.fits() {
        return plan.run(len, dtype, sink);
    }
    for (s, _) in &p.inputs {
        s.data()?;
    }
    Plan::of(p, len)?.run(len, dtype, sink)
}

/// The values of several deferred ops over `len` elements each (a deferred sum
/// counts the elements it sums), all of `dtype` on one device, computed in one
/// pass: steps and leaves they share are computed and read once. `roots[k]` is the
/// storage (its address, to find it where another root reads it) and its op. On a
/// GPU, roots too many for one kernel (results, buffers or scalars) are split in
/// halves, each one pass, down to a single root computed as `evaluate` does.
pub(crate) fn evaluate_many(
    roots: &[(*const Storage, &Pending)],
    len: usize,
    dtype: DType,
) -> Result<Vec<StorageData>> {
    let (plan, outputs) = Plan::many(roots, len)?;
    if plan.fits_results(outputs.len()) {
        return plan.run_many(len, dtype, &outputs);
    }
    if let [(_, p)] = roots {
        return Ok(vec![evaluate(p, len, dtype)?]);
    }
    let (a, b) = roots.split_at(roots.len() / 2);
    let mut values = evaluate_many(a, len, dtype)?;
    values.extend(evaluate_many(b, len, dtype)?);
    Ok(values)
}

/// Appends to `out` the deferred sums `p` reads, directly or through other
/// deferred ops (each once).
pub(crate) fn sums_read(p: &Pending, out: &mut Vec<Arc<Storage>>) {
    for (s, _) in &p.inputs {
        let sum = s.with_pending(|q| {
            if q.sum_of.is_none() {
                sums_read(q, out);
            }
            q.sum_of.is_some()
        });
        if sum == Some(true) && !out.iter().any(|t| Arc::ptr_eq(t, s)) {
            out.push(s.clone());
        }
    }
}

/// The CUDA program the chain ending in `p` runs as on a GPU: the kernel's name and
/// its source (for inspection; planning reads deferred storages it would fuse, and
/// computes those it reads through views).
#[cfg(feature = "cuda")]
pub(crate) fn cuda_source(p: &Pending, len: usize, dtype: DType) -> Result<(String, String)> {
    let len = p.sum_of.as_ref().map_or(len, |(n, _)| *n);
    let mut plan = Plan::of(p, len)?;
    if !autograd_kernels::cuda::fused::fits(&plan.steps, plan.leaves.len()) {
        // As `evaluate` runs it: what the last op reads is computed first (by
        // kernels of its own), and read as buffers.
        plan = Plan::shallow(p);
    }
    let layouts: Vec<&Layout> = plan.leaves.iter().map(|(_, l)| l).collect();
    // A sum's kernel sums its last step (as it runs over at most one block: over
    // more, the partial sums are written in double).
    let sink = if p.sum_of.is_some() {
        Sink::Sum
    } else {
        Sink::Store
    };
    let last = plan.steps.len().saturating_sub(1);
    let (_, name, source) = autograd_kernels::cuda::fused::kernel_source_many(
        &plan.steps,
        &layouts,
        dtype,
        &[(last, sink)],
    );
    Ok((name, source))
}

/// The deferred sum of the values of the deferred op `p` (`len` elements): the
/// chain runs with the sum at its end when the sum is read, and nothing is stored
/// (on a GPU, a fused kernel laid out as the sum reduction: see
/// `CudaStorage::run_fused_many`).
pub(crate) fn sum(p: &Pending, len: usize) -> Option<Pending> {
    if p.sum_of.is_some() {
        return None;
    }
    Some(Pending {
        mark: Arc::default(),
        sum_of: Some((len, p.mark.clone())),
        ..p.clone()
    })
}

/// The error for a storage that has neither values nor an op to compute them
/// (nothing does: a bug if seen).
pub(crate) fn lost(len: usize, dtype: DType) -> Error {
    Error::Kernel(KernelError::Layout(format!(
        "a deferred storage of {len} {dtype} elements has neither values nor the op computing them"
    )))
}
