//! Computing deferred values: a chain alone, several in one pass, a group when
//! the first of its members is read.

use super::deferred::{Deferred, Group, Pending, deferred, pending, sums_read, with_pending};
use super::plan::Plan;
use crate::storage::{Recipe, Storage, StorageData};
use crate::{DType, Device, Result};
use autograd_kernels::program::Sink;
use std::any::Any;
use std::sync::{Arc, Mutex, Weak};

impl Recipe for Deferred {
    /// Runs the deferred op (with the deferred ops it reads, fused) and keeps the
    /// values. Another thread may be computing the same values: the first to
    /// finish keeps them.
    fn compute(&self, s: &Storage) -> Result<()> {
        // The first member of a group to be read computes the whole group (the
        // members are taken out first: a member read while the group is computed
        // is computed on its own).
        if let Some(group) = self.group.get() {
            let members: Vec<Arc<Storage>> =
                std::mem::take(&mut *group.0.lock().unwrap_or_else(|e| e.into_inner()))
                    .iter()
                    .filter_map(Weak::upgrade)
                    .collect();
            if members.len() > 1 {
                let mut all: Vec<&Storage> = members.iter().map(|m| &**m).collect();
                if !all.iter().any(|m| std::ptr::eq(*m, s)) {
                    all.push(s);
                }
                realize(&all)?;
            }
        }
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(p) = pending {
            let data = evaluate(&p, s.len(), s.dtype())?;
            settle(s, self, data);
        }
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Computes the deferred values of all of `storages` (those not deferred, or
/// computed already, are left as they are). Deferred storages over the same
/// number of elements, dtype and device run in one pass, reading the leaves
/// they share once (on a GPU, one kernel with several results, as many as fit
/// one: see [`evaluate_many`]). The deferred sums they read are among them (a
/// loss `sum(y) / n` reads its sum, which runs with the rest), and longer
/// chains run first, so what a short one reads is there when it runs.
pub(super) fn realize(storages: &[&Storage]) -> Result<()> {
    let mut sums = Vec::new();
    for s in storages {
        with_pending(s, |p| sums_read(p, &mut sums));
    }
    // Deferred storages by (elements, dtype, device), with their ops: one pass
    // each.
    type Pass<'a> = ((usize, DType, Device), Vec<(&'a Storage, Pending)>);
    let mut passes: Vec<Pass> = Vec::new();
    for s in storages.iter().copied().chain(sums.iter().map(|s| &**s)) {
        let Some(p) = pending(s) else { continue };
        let len = p.sum_of.as_ref().map_or(s.len(), |(n, _)| *n);
        let key = (len, s.dtype(), s.device());
        match passes.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => {
                if !g.iter().any(|(t, _)| std::ptr::eq(*t, s)) {
                    g.push((s, p));
                }
            }
            None => passes.push((key, vec![(s, p)])),
        }
    }
    passes.sort_by_key(|((len, _, _), _)| std::cmp::Reverse(*len));
    for ((len, dtype, _), group) in passes {
        if let [(s, _)] = group[..] {
            s.data()?;
            continue;
        }
        let roots: Vec<(*const Storage, &Pending)> = group
            .iter()
            .map(|(s, p)| (*s as *const Storage, p))
            .collect();
        let values = evaluate_many(&roots, len, dtype)?;
        for ((s, _), data) in group.iter().zip(values) {
            if let Some(d) = deferred(s) {
                settle(s, d, data);
            }
        }
    }
    Ok(())
}

/// Makes the deferred storages of `storages` a group: the first of them to be
/// read computes them all, with [`realize`]. Fewer than two deferred storages
/// make no group; a storage joins one group at most.
pub(super) fn read_together(storages: &[Arc<Storage>]) {
    let members: Vec<&Arc<Storage>> = storages
        .iter()
        .filter(|s| deferred(s).is_some_and(|d| d.group.get().is_none()))
        .collect();
    if members.len() < 2 {
        return;
    }
    let group = Arc::new(Group(Mutex::new(
        members.iter().map(|s| crate::spare::downgrade(s)).collect(),
    )));
    for s in members {
        if let Some(d) = deferred(s) {
            let _ = d.group.set(group.clone());
        }
    }
}

/// Keeps `data`, the deferred values of `s` computed, unless another thread kept
/// its own first; then the op is no longer pending.
pub(super) fn settle(s: &Storage, d: &Deferred, data: StorageData) {
    if s.settle(data) {
        *d.pending.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The values of the deferred op `p` (`len` elements of `dtype`), with the
/// deferred ops it reads fused into one pass. A chain too large for one CUDA
/// kernel computes what its last op reads first, each in its own chain.
pub(super) fn evaluate(p: &Pending, len: usize, dtype: DType) -> Result<StorageData> {
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
pub(super) fn evaluate_many(
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

/// The CUDA program the chain ending in `p` runs as on a GPU: the kernel's name and
/// its source (for inspection; planning reads deferred storages it would fuse, and
/// computes those it reads through views).
#[cfg(feature = "cuda")]
pub(super) fn cuda_source(p: &Pending, len: usize, dtype: DType) -> Result<(String, String)> {
    let len = p.sum_of.as_ref().map_or(len, |(n, _)| *n);
    let mut plan = Plan::of(p, len)?;
    if !autograd_kernels::cuda::fused::fits(&plan.steps, plan.leaves.len()) {
        // As `evaluate` runs it: what the last op reads is computed first (by
        // kernels of its own), and read as buffers.
        plan = Plan::shallow(p);
    }
    let layouts: Vec<&autograd_kernels::Layout> = plan.leaves.iter().map(|(_, l)| l).collect();
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
