//! Where a leaf that requires grad accumulates its gradient.

use crate::{Error, Result, Tensor};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A gradient hook (see `Tensor::register_hook`): reads the gradient flowing into a
/// tensor and returns `Some(replacement)` or `None` to keep it.
pub(crate) type GradHook = dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync;

/// The hooks of one tensor, in registration order, each with its id (unique in the
/// process, so that a handle removes exactly its own hook).
#[derive(Default, Clone)]
pub(crate) struct HookList(Vec<(u64, Arc<GradHook>)>);

impl HookList {
    /// Adds a hook; returns its id.
    pub(crate) fn push(&mut self, hook: Arc<GradHook>) -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        self.0.push((id, hook));
        id
    }

    /// Removes the hook with this id; false when it is not here.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        let before = self.0.len();
        self.0.retain(|(i, _)| *i != id);
        self.0.len() != before
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Runs the hooks in order on `grad`, each seeing what the one before returned.
    /// A replacement must keep the gradient's shape, dtype and device; `what` names
    /// the tensor in the error.
    pub(crate) fn run(&self, mut grad: Tensor, what: &dyn Fn() -> String) -> Result<Tensor> {
        for (_, hook) in &self.0 {
            if let Some(new) = hook(&grad)? {
                if new.shape() != grad.shape()
                    || new.dtype() != grad.dtype()
                    || new.device() != grad.device()
                {
                    return Err(Error::InvalidArgument {
                        op: "register_hook",
                        msg: format!(
                            "a hook on {} returned a gradient of shape {} ({}, {}) in place of one \
                             of shape {} ({}, {}); return a tensor of the gradient's shape, dtype \
                             and device, or None to keep it",
                            what(),
                            new.shape(),
                            new.dtype(),
                            new.device(),
                            grad.shape(),
                            grad.dtype(),
                            grad.device()
                        ),
                    });
                }
                grad = new;
            }
        }
        Ok(grad)
    }
}

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
    /// The leaf's gradient hooks, run on the gradient a pass brings before it is
    /// accumulated; `hooked` says whether there are any without taking the lock.
    hooks: Mutex<HookList>,
    hooked: AtomicBool,
}

impl GradSlot {
    /// A slot owned by one leaf tensor.
    pub(crate) fn held() -> Arc<GradSlot> {
        Arc::new(GradSlot {
            grad: Mutex::new(None),
            orphaned: AtomicBool::new(false),
            hooks: Mutex::new(HookList::default()),
            hooked: AtomicBool::new(false),
        })
    }

    /// The tensor owning the slot is gone: the gradient goes too. The flag is set
    /// before the slot is locked, so a pass that stores a gradient with the slot
    /// locked either stores it before this clear or sees the slot orphaned.
    pub(crate) fn release(&self) {
        self.orphaned.store(true, Ordering::Release);
        self.clear();
        // A hook may hold tensors (even this leaf's graph): they go with the leaf.
        let hooks = std::mem::take(&mut *self.hooks());
        self.hooked.store(false, Ordering::Release);
        drop(hooks);
    }

    fn hooks(&self) -> MutexGuard<'_, HookList> {
        self.hooks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a gradient hook; returns its id.
    pub(crate) fn add_hook(&self, hook: Arc<GradHook>) -> u64 {
        let mut hooks = self.hooks();
        let id = hooks.push(hook);
        self.hooked.store(true, Ordering::Release);
        id
    }

    /// Removes the hook with this id; false when it is not here.
    pub(crate) fn remove_hook(&self, id: u64) -> bool {
        let mut hooks = self.hooks();
        let removed = hooks.remove(id);
        self.hooked.store(!hooks.is_empty(), Ordering::Release);
        removed
    }

    /// True when the leaf has gradient hooks (no lock taken).
    pub(crate) fn has_hooks(&self) -> bool {
        self.hooked.load(Ordering::Acquire)
    }

    /// The hooks now registered (a copy, so that they run without the lock held).
    pub(crate) fn hook_list(&self) -> HookList {
        self.hooks().clone()
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
