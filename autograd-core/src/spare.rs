//! Heap blocks kept by each thread for reuse: released tensors (`tensor::SPARE`)
//! and nodes (`graph::pool`). What the two kinds share: a block goes in as its
//! value's only handle and is taken out without the atomic check that proves it
//! ([`unique_mut`]), and a thread with no spare block allocates a batch of them
//! ([`stock`]).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Weak};
use std::thread::LocalKey;

/// Blocks allocated together when a thread has no spare one. A chain recorded on
/// a fresh thread then has its nodes and tensors side by side in memory, not
/// interleaved with one another and with buffers, and keeps them so (released
/// blocks are reused in the order they were released): backward and the graph's
/// release walk the chain through a few contiguous runs of memory instead of a
/// cache miss per node.
pub(crate) const BATCH: usize = 32;

/// Keeps [`BATCH`]` - 1` new blocks from `make` as this thread's spares in `spares`
/// (a stack: they are handed out in the order allocated), unless that would take
/// it past `max`. The caller allocates the batch's first block, the one it uses,
/// just before.
pub(crate) fn stock<T>(
    spares: &'static LocalKey<RefCell<Vec<Arc<T>>>>,
    max: usize,
    make: impl FnMut() -> Arc<T>,
) {
    let mut batch: Vec<Arc<T>> = std::iter::repeat_with(make).take(BATCH - 1).collect();
    batch.reverse();
    let _ = spares.try_with(|spare| {
        if let Ok(mut spare) = spare.try_borrow_mut()
            && spare.len() + batch.len() <= max
        {
            spare.append(&mut batch);
        }
    });
}

/// How many spare blocks this thread holds in `spares` (for tests).
#[cfg(test)]
pub(crate) fn count<T>(spares: &'static LocalKey<RefCell<Vec<Arc<T>>>>) -> usize {
    spares.with(|s| s.borrow().len())
}

/// Runs `test` on a new thread, which holds no spare blocks yet, and fails if it
/// fails (for tests).
#[cfg(test)]
pub(crate) fn on_fresh_thread(test: impl FnOnce() -> crate::Result<()> + Send + 'static) {
    std::thread::spawn(test).join().unwrap().unwrap();
}

/// `&mut` to the value behind `arc`, which the caller knows to be its only handle:
/// no other `Arc` or `Weak` of it exists, and none can be made meanwhile (a block
/// taken from this thread's spare tensors or nodes: each went in as the only handle
/// of its value, checked by `Arc::get_mut`, or freshly allocated, and the spares
/// never hand out a copy). `Arc::get_mut` without its atomic read-modify-write, a
/// locked instruction, on every op output.
///
/// # Safety
/// `arc` is the only handle of its value, as above.
#[inline(always)]
pub(crate) unsafe fn unique_mut<T>(arc: &mut Arc<T>) -> &mut T {
    debug_assert!(
        Arc::get_mut(arc).is_some(),
        "a spare block with another handle"
    );
    // SAFETY: no other handle reads or writes the value (the caller's contract) and
    // `&mut arc` excludes other uses of this one; the pointer comes from the
    // allocation, not from a shared reference (as `Arc::get_mut` takes it).
    unsafe { &mut *Arc::as_ptr(arc).cast_mut() }
}

/// A value that records whether a weak handle of it may exist, in the flag
/// `weak_flag` returns: set by [`downgrade`], the only way its weak handles are
/// made, and cleared only by its only handle, when `Arc::get_mut` found no weak
/// one left ([`unique`]).
pub(crate) trait WeakMarked {
    /// The value's flag: whether a weak handle of it may exist.
    fn weak_flag(&self) -> &AtomicBool;
}

/// A weak handle of the value behind `arc`, its flag set first (see [`unique`]):
/// every weak handle of a `WeakMarked` value is made here.
pub(crate) fn downgrade<T: WeakMarked>(arc: &Arc<T>) -> Weak<T> {
    arc.weak_flag().store(true, Ordering::Relaxed);
    Arc::downgrade(arc)
}

/// `&mut` to the value behind `arc` when `arc` is its only handle, as
/// `Arc::get_mut` gives it, without `get_mut`'s locked instruction when no weak
/// handle of the value was made (every op output checked as it is recorded,
/// written in place, retired: a recurrent loop of tiny ops paid a locked
/// instruction for each of those).
#[inline]
pub(crate) fn unique<T: WeakMarked>(arc: &mut Arc<T>) -> Option<&mut T> {
    if Arc::strong_count(arc) != 1 {
        return None;
    }
    // Pairs with the `Release` of the other handles' drops: what their holders did
    // (a weak handle made included) comes before what follows.
    fence(Ordering::Acquire);
    if !arc.weak_flag().load(Ordering::Relaxed) {
        // SAFETY: `arc` is the only strong handle, and no weak handle exists: one is
        // made only from a strong handle, by `downgrade`, which sets the flag first, and
        // a holder of another strong handle that made one set the flag before
        // dropping that handle (seen through the fence above). No handle can be made
        // meanwhile: only `arc` exists, and the caller has it by `&mut`.
        return Some(unsafe { unique_mut(arc) });
    }
    let value = Arc::get_mut(arc)?;
    // No weak handle is left, and only `arc` could make a new one.
    value.weak_flag().store(false, Ordering::Relaxed);
    Some(value)
}
