//! Heap blocks kept by each thread for reuse: released tensors (`tensor::SPARE`)
//! and nodes (`graph::pool`). What the two kinds share: a block goes in as its
//! value's only handle and is taken out without the atomic check that proves it
//! ([`unique_mut`]), and a thread with no spare block allocates a batch of them
//! ([`stock`]).

use std::cell::RefCell;
use std::sync::Arc;
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
