//! Deferred values: the op a deferred storage computes (its recipe, held in the
//! storage: see `Storage::lazy`), and the groups of storages computed together.

use crate::storage::Storage;
use crate::{DType, Device};
use autograd_kernels::Layout;
use autograd_kernels::program::FusedOp;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

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
    /// Records that the op runs in kernel `kernel`, unless it ran in one already.
    pub(super) fn set(&self, kernel: u64) {
        let _ = self
            .0
            .compare_exchange(0, kernel, Ordering::Relaxed, Ordering::Relaxed);
    }

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
    /// Its depth and size, as [`super::defer`] counts them.
    pub(crate) fn chain(&self) -> (u32, u32) {
        (self.depth, self.steps)
    }
}

/// A deferred storage's recipe: its op until it has run, and the group it is
/// computed with.
pub(super) struct Deferred {
    /// The op to run, until it has run.
    pub(super) pending: Mutex<Option<Pending>>,
    /// The storages computed with this one when the first of them is read (see
    /// `realize::read_together`).
    pub(super) group: OnceLock<Arc<Group>>,
}

/// Deferred storages that are computed together, in one pass where they can be
/// (`realize::realize`), when the first of them is read: a loss and the
/// gradients its backward left in the leaves.
pub(super) struct Group(pub(super) Mutex<Vec<Weak<Storage>>>);

/// A storage of `len` elements of `dtype` on `device` whose values `pending`
/// computes when first read.
pub(super) fn storage(pending: Pending, device: Device, dtype: DType, len: usize) -> Storage {
    let recipe = Deferred {
        pending: Mutex::new(Some(pending)),
        group: OnceLock::new(),
    };
    Storage::lazy(Box::new(recipe), device, dtype, len)
}

/// The recipe of `s`, while its values are deferred.
pub(super) fn deferred(s: &Storage) -> Option<&Deferred> {
    s.recipe()?.as_any().downcast_ref()
}

/// `f` of the deferred op of `s`, while its values are deferred (under its lock:
/// no copy of the op and what it reads).
pub(super) fn with_pending<R>(s: &Storage, f: impl FnOnce(&Pending) -> R) -> Option<R> {
    deferred(s)?
        .pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(f)
}

/// The deferred op of `s`, if its values are still deferred: what a chain being
/// planned reads through it.
pub(super) fn pending(s: &Storage) -> Option<Pending> {
    with_pending(s, Pending::clone)
}

/// The deferred op's depth and size (see `fusion::defer`); zeros when the values
/// are there.
pub(super) fn chain(s: &Storage) -> (u32, u32) {
    with_pending(s, Pending::chain).unwrap_or((0, 0))
}

/// The deferred sum of the values of the deferred op `p` (`len` elements): the
/// chain runs with the sum at its end when the sum is read, and nothing is stored
/// (on a GPU, a fused kernel laid out as the sum reduction: see
/// `CudaStorage::run_fused_many`).
pub(super) fn sum(p: &Pending, len: usize) -> Option<Pending> {
    if p.sum_of.is_some() {
        return None;
    }
    Some(Pending {
        mark: Arc::default(),
        sum_of: Some((len, p.mark.clone())),
        ..p.clone()
    })
}

/// Appends to `out` the deferred sums `p` reads, directly or through other
/// deferred ops (each once).
pub(super) fn sums_read(p: &Pending, out: &mut Vec<Arc<Storage>>) {
    for (s, _) in &p.inputs {
        let sum = with_pending(s, |q| {
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
