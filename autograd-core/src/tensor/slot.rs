//! Where a leaf that requires grad accumulates its gradient.

use crate::Tensor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where a leaf that requires grad accumulates its gradient. Shared by the leaf and
/// by the nodes that consume it (and the copies of the leaf they save).
///
/// Ownership: the slot belongs to the one tensor the user holds. Every handle of a
/// parameter is a clone of one `TensorInner` (the only one with
/// `TensorInner::holds_slot`), so when that inner goes, nobody can read the
/// gradient any more: the slot is orphaned and lets its gradient go. That also
/// breaks the cycle a `create_graph` backward leaves (slot -> recorded gradient ->
/// its nodes -> saved copies -> slot), which no reference count could.
pub(crate) struct GradSlot {
    grad: Mutex<Option<Tensor>>,
    /// Set once the tensor owning the slot is gone.
    orphaned: AtomicBool,
}

impl GradSlot {
    /// A slot owned by one leaf tensor.
    pub(crate) fn held() -> Arc<GradSlot> {
        Arc::new(GradSlot {
            grad: Mutex::new(None),
            orphaned: AtomicBool::new(false),
        })
    }

    /// The tensor owning the slot is gone: the gradient goes too. The flag is set
    /// before the slot is locked, so a pass that stores a gradient with the slot
    /// locked either stores it before this clear or sees the slot orphaned.
    pub(crate) fn release(&self) {
        self.orphaned.store(true, Ordering::Release);
        self.clear();
    }

    /// True once the tensor owning the slot is gone: a gradient stored here could
    /// never be read. Read it with the slot locked (see `release`).
    pub(crate) fn is_orphaned(&self) -> bool {
        self.orphaned.load(Ordering::Acquire)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<Tensor>> {
        self.grad.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn get(&self) -> Option<Tensor> {
        self.lock().clone()
    }

    pub(crate) fn clear(&self) {
        let old = self.lock().take();
        drop(old);
    }
}
