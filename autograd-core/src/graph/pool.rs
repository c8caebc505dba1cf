//! Releasing nodes: a queue instead of recursion (a chain of 10^6 nodes is freed in
//! a loop, at thread exit too), and released node blocks kept for reuse.

use super::*;
use crate::op::OpEntry;
use crate::spare;
use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::sync::Arc;

/// Released nodes kept by each thread for the next ones recorded: recording a
/// node then reuses a block instead of allocating one.
const SPARE_NODES_MAX: usize = 16384;

/// Nodes whose last handle went, waiting to be released by the loop in
/// [`drop_node`], and whether that loop is running.
struct DropQueue {
    pending: Vec<Arc<Node>>,
    draining: bool,
}

thread_local! {
    static QUEUE: RefCell<DropQueue> = const {
        RefCell::new(DropQueue { pending: Vec::new(), draining: false })
    };
    static SPARE_NODES: RefCell<Vec<Arc<Node>>> = const { RefCell::new(Vec::new()) };
}

/// Drops a node handle without recursion: a chain of 10^6 nodes is released in a
/// loop, not in 10^6 nested drop calls, whatever the state of the thread's
/// thread-locals. The last handle's block is kept for reuse.
pub(crate) fn drop_node(node: Arc<Node>) {
    if Arc::strong_count(&node) > 1 {
        return; // not the last handle: dropping it cannot cascade
    }
    let mut node = Some(node);
    let queued = QUEUE.try_with(|q| match q.try_borrow_mut() {
        Ok(mut q) => {
            q.pending.extend(node.take());
            !std::mem::replace(&mut q.draining, true)
        }
        Err(_) => false, // unreachable: the queue is never borrowed across a drop
    });
    match (queued, node) {
        (Ok(true), _) => drain_thread_queue(),
        (_, None) => {} // an outer call is draining the queue
        (_, Some(node)) => drain_at_exit(node),
    }
}

/// Resets the thread's `draining` flag however the loop ends: a node whose release
/// panics (an op parameter's `Drop`, caught by the caller) must not leave the flag
/// set, or every later graph dropped on this thread would stay queued forever.
struct Draining;

impl Drop for Draining {
    fn drop(&mut self) {
        let _ = QUEUE.try_with(|q| {
            if let Ok(mut q) = q.try_borrow_mut() {
                q.draining = false;
            }
        });
    }
}

fn drain_thread_queue() {
    let _draining = Draining;
    loop {
        let next = QUEUE
            .try_with(|q| q.try_borrow_mut().ok().and_then(|mut q| q.pending.pop()))
            .ok()
            .flatten();
        match next {
            Some(node) => retire_node(node),
            None => break,
        }
    }
}

thread_local! {
    /// While [`drain_at_exit`] runs on this thread: the queue on its stack. A plain
    /// pointer, so that this thread-local has no destructor and is there to the end
    /// of the thread, after `QUEUE` is gone.
    static EXIT_QUEUE: Cell<*mut Vec<Arc<Node>>> = const { Cell::new(std::ptr::null_mut()) };
}

/// [`drop_node`] once the thread's `QUEUE` is gone (its thread-locals are being
/// destroyed at thread exit, in an order nobody controls, e.g. after a user's
/// `thread_local!` that holds a deep graph): the outermost call drains a queue on
/// its own stack, and the calls nested in it (a released node dropping its inputs)
/// add to that queue. The thread that drops a graph frees it before returning.
fn drain_at_exit(node: Arc<Node>) {
    let outer = EXIT_QUEUE.with(Cell::get);
    if !outer.is_null() {
        // SAFETY: `outer` points at the queue of the outermost `drain_at_exit` on this
        // thread, which is running further up this stack (it clears the pointer
        // before its queue goes), and no reference into that queue is live here: the
        // outer loop holds none while a node is released.
        unsafe { (*outer).push(node) };
        return;
    }
    let mut pending = vec![node];
    let queue: *mut Vec<Arc<Node>> = &mut pending;
    EXIT_QUEUE.with(|q| q.set(queue));
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            EXIT_QUEUE.with(|q| q.set(std::ptr::null_mut()));
        }
    }
    let clear = Clear;
    loop {
        // SAFETY: `queue` points at `pending`, alive until after this loop and not
        // used directly meanwhile; the `&mut` taken here ends before `retire_node`
        // runs (which may push through the pointer).
        let next = unsafe { (*queue).pop() };
        match next {
            Some(node) => retire_node(node),
            None => break,
        }
    }
    drop(clear);
}

/// Frees the calling thread's spare node blocks.
pub(crate) fn clear_spare_nodes() {
    let spares = SPARE_NODES
        .try_with(|spare| spare.try_borrow_mut().map(|mut s| std::mem::take(&mut *s)))
        .ok()
        .and_then(|r| r.ok());
    drop(spares);
}

fn retire_node(mut node: Arc<Node>) {
    let Some(n) = spare::unique(&mut node) else {
        return; // another handle appeared (a `NodeRef` cloned meanwhile): just drop ours
    };
    n.release();
    let rejected = SPARE_NODES
        .try_with(|spare| match spare.try_borrow_mut() {
            Ok(mut spare) if spare.len() < SPARE_NODES_MAX => {
                spare.push(node);
                None
            }
            _ => Some(node),
        })
        .unwrap_or(None);
    drop(rejected);
}

/// A new node block, for a thread with no spare one: the first of a batch (see
/// `spare::BATCH`), the others kept as the thread's spares.
pub(super) fn fresh_node(
    entry: &'static OpEntry,
    location: &'static Location<'static>,
) -> Arc<Node> {
    let first = Arc::new(Node::empty(entry, location));
    spare::stock(&SPARE_NODES, SPARE_NODES_MAX, || {
        Arc::new(Node::empty(entry, location))
    });
    first
}

/// A released node block of this thread's, to record the next node into.
pub(super) fn spare_node() -> Option<Arc<Node>> {
    SPARE_NODES
        .try_with(|spare| spare.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tensor;

    fn spare_nodes() -> usize {
        spare::count(&SPARE_NODES)
    }

    #[test]
    fn a_thread_without_spares_allocates_a_batch_and_records_into_it_in_order() {
        spare::on_fresh_thread(|| {
            assert_eq!(spare_nodes(), 0);
            let a = Tensor::from_slice(&[2.0f32], [1])?.with_requires_grad(true);
            let y = (&a * &a)?;
            assert_eq!(spare_nodes(), spare::BATCH - 1);
            let z = (&y * &a)?;
            assert_eq!(spare_nodes(), spare::BATCH - 2);
            // Handed out in the order allocated: the second node's block follows the
            // first's batch-mate, not some older block.
            let node = |t: &Tensor| t.autograd().node().map(|n| n as *const Node);
            let (first, second) = (node(&y).unwrap(), node(&z).unwrap());
            // (Within a few blocks: the allocator may pad or interleave, but not
            // by the rest of the batch, which the other order would put between.)
            let block = std::mem::size_of::<Node>() + 64;
            let gap = (second as usize).wrapping_sub(first as usize);
            assert!(gap > 0 && gap < 4 * block, "{first:?} then {second:?}");
            drop((y, z));
            // Both released blocks are back.
            assert_eq!(spare_nodes(), spare::BATCH);
            Ok(())
        });
    }
}
