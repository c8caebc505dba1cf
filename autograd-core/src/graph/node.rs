//! A recorded op call: its op, an edge per input, what it saved for backward.

use super::*;
use crate::op::{BackwardContext, OpEntry, RecordedOp};
use crate::storage::Storage;
use crate::tensor::{Autograd, GradFn, GradSlot, HookList, TensorId};
use crate::{DType, Device, Layout, Shape, Tensor};
use smallvec::SmallVec;
use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where the gradient of one input of a node goes.
pub(crate) enum Edge {
    /// The input needs no gradient (a constant, or a non-differentiable input).
    None,
    /// A leaf that requires grad.
    Leaf(Arc<GradSlot>),
    /// The output of another recorded node.
    Node(Arc<Node>),
}

impl Edge {
    pub(crate) fn needs_grad(&self) -> bool {
        !matches!(self, Edge::None)
    }
}

impl GradFn for Node {
    fn release(self: Arc<Self>) {
        drop_node(self)
    }

    fn retained_grad(&self) -> Option<Tensor> {
        self.lock().extras.as_ref()?.retained.clone()
    }

    fn clear_retained_grad(&self) {
        let old = self.lock().extras.as_mut().and_then(|e| e.retained.take());
        drop(old);
    }
}

impl Autograd {
    /// The node that produced an op output (`None` for leaves and constants).
    pub(crate) fn node(&self) -> Option<&Node> {
        match self {
            Autograd::Interior(f) => (&**f as &dyn Any).downcast_ref::<Node>(),
            _ => None,
        }
    }

    /// A handle of the node that produced an op output.
    pub(crate) fn node_arc(&self) -> Option<Arc<Node>> {
        match self {
            Autograd::Interior(f) => node_of(f),
            _ => None,
        }
    }
}

/// The node behind a tensor's producer link (`Node` is the only `GradFn`).
fn node_of(f: &Arc<dyn GradFn>) -> Option<Arc<Node>> {
    let any: Arc<dyn Any + Send + Sync> = f.clone();
    any.downcast::<Node>().ok()
}

impl Tensor {
    /// Where this tensor's gradient goes, as the input of a node.
    pub(crate) fn edge(&self) -> Edge {
        match self.autograd() {
            Autograd::None => Edge::None,
            Autograd::Leaf(slot) => Edge::Leaf(slot.clone()),
            Autograd::Interior(f) => node_of(f).map_or(Edge::None, Edge::Node),
        }
    }
}

/// One input of a node: where its gradient goes and the shape it must have.
pub(crate) struct NodeInput {
    pub(crate) edge: Edge,
    pub(crate) shape: Shape,
    pub(crate) dtype: DType,
    pub(crate) device: Device,
}

/// The output of an op saved for its own backward, held without the node pointer
/// (which would be a cycle: node -> output -> node).
pub(crate) struct SavedOutput {
    storage: Arc<Storage>,
    layout: Layout,
    id: TensorId,
}

impl SavedOutput {
    fn of(t: &Tensor) -> SavedOutput {
        SavedOutput {
            storage: t.storage_arc(),
            layout: t.layout().clone(),
            id: t.id(),
        }
    }

    /// The output as a tensor: the node's own output (same id) when the backward pass
    /// is recorded, so that gradients of gradients flow through it; a constant otherwise.
    pub(crate) fn to_tensor(&self, producer: Option<&Arc<Node>>) -> Tensor {
        let mut t = Tensor::from_parts(self.storage.clone(), self.layout.clone());
        if let Some(inner) = Arc::get_mut(&mut t.0) {
            inner.id = self.id;
            if let Some(node) = producer {
                inner.autograd = Autograd::Interior(node.clone());
            }
        }
        t
    }
}

/// The gradient of a node's output summed during a backward pass. Only the pass
/// that holds the node's claim (`Node::claimed`) reads or writes it: the claim is
/// taken with `Acquire` and given back with `Release`, so each pass sees the last
/// one's writes as it would under a lock, without the lock's two locked
/// instructions per gradient added to the node.
pub(crate) struct PassGrad(UnsafeCell<Option<Tensor>>);

// SAFETY: the value is reached only through `PassGrad::get`, by the one pass that
// holds the node's claim, or through `&mut`.
unsafe impl Sync for PassGrad {}

impl PassGrad {
    /// The gradient, to read or write.
    ///
    /// # Safety
    /// The calling pass holds the node's claim, and uses no other reference this
    /// method returned while it uses this one.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(crate) unsafe fn get(&self) -> &mut Option<Tensor> {
        // SAFETY: the caller's contract: no other access meanwhile.
        unsafe { &mut *self.0.get() }
    }

    /// The gradient, through exclusive access to the node.
    pub(crate) fn get_mut(&mut self) -> &mut Option<Tensor> {
        self.0.get_mut()
    }
}

/// What a node holds until backward has run through it.
pub(crate) struct NodeState {
    /// Saved inputs, by input position; only those the op's backward reads.
    pub(crate) saved: SmallVec<[Option<Tensor>; 2]>,
    /// Boxed: few ops save their output, and the node stays small for the rest.
    pub(crate) saved_output: Option<Box<SavedOutput>>,
    /// The output's gradient hooks and retained gradient; boxed, as few nodes have
    /// any.
    pub(crate) extras: Option<Box<NodeExtras>>,
}

/// What `Tensor::register_hook` and `Tensor::retain_grad` add to the node of an op
/// output.
#[derive(Default)]
pub(crate) struct NodeExtras {
    /// Run on the output's gradient (the sum of every contribution in a pass)
    /// before the op's backward reads it.
    pub(crate) hooks: HookList,
    /// Set by `retain_grad`: every pass stores the output's gradient (after the
    /// hooks) in `retained`, as a constant, accumulating across passes.
    pub(crate) retains_grad: bool,
    pub(crate) retained: Option<Tensor>,
}

impl NodeState {
    /// The node's extras, made when first needed.
    pub(crate) fn extras_mut(&mut self) -> &mut NodeExtras {
        self.extras.get_or_insert_with(Default::default)
    }
}

impl NodeState {
    /// The storage buffers this node keeps alive for its backward (a buffer saved
    /// twice, as in `x * x`, appears twice).
    pub(super) fn saved_storages(&self) -> impl Iterator<Item = Arc<Storage>> + '_ {
        let inputs = self.saved.iter().flatten().map(|t| t.storage_arc());
        inputs.chain(self.saved_output.as_ref().map(|s| s.storage.clone()))
    }
}

/// A recorded op call: its op, an edge per input, what it saved for backward.
pub(crate) struct Node {
    /// Creation order: a node's inputs always have smaller numbers, so visiting in
    /// decreasing order visits every node after all of its consumers. Unique
    /// process-wide and increasing on each thread; nodes recorded on different
    /// threads are numbered from different blocks (see `tensor::next_in_block`).
    pub(crate) seq: u64,
    pub(crate) entry: &'static OpEntry,
    /// The op value itself (its non-tensor parameters), which runs the backward.
    pub(crate) op: Box<dyn RecordedOp>,
    pub(crate) inputs: SmallVec<[NodeInput; 2]>,
    pub(crate) output_id: TensorId,
    pub(crate) output_shape: Shape,
    /// Where the output's deferred arithmetic records the kernel it ran in (`None`:
    /// computed when the op was called).
    pub(crate) fusion: Option<Arc<crate::fusion::Mark>>,
    pub(crate) location: &'static Location<'static>,
    pub(crate) state: Mutex<NodeState>,
    /// Gradient of the node's output accumulated during a backward pass (outside
    /// `state`: the claim guards it).
    pub(crate) grad: PassGrad,
    /// Backward has run and released the saved tensors (written by the pass that
    /// holds the claim).
    pub(crate) consumed: AtomicBool,
    /// Whether the node has `extras` (set with them, under the lock): a backward
    /// through a node that saved nothing and has none takes no lock.
    pub(crate) has_extras: AtomicBool,
    /// Set as a weak handle of the node is made (`spare::downgrade`: a gradient
    /// hook's handle); see `spare::unique`.
    pub(crate) weak_made: AtomicBool,
    /// Id of the one backward pass currently running through this node (0: none).
    pub(crate) claimed: AtomicU64,
}

impl crate::spare::WeakMarked for Node {
    fn weak_flag(&self) -> &AtomicBool {
        &self.weak_made
    }
}

impl Node {
    pub(crate) fn lock(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn name(&self) -> &'static str {
        self.entry.name
    }

    /// Runs `f` on the node's extras (made when first needed), under the lock.
    pub(crate) fn with_extras<R>(&self, f: impl FnOnce(&mut NodeExtras) -> R) -> R {
        let mut state = self.lock();
        let r = f(state.extras_mut());
        self.has_extras.store(true, Ordering::Release);
        r
    }
}

impl Node {
    /// Lets go of everything the node holds (edges, saved tensors, gradient, op
    /// parameters), as dropping it would, leaving an empty block to reuse.
    pub(super) fn release(&mut self) {
        self.fusion = None;
        for input in self.inputs.drain(..) {
            if let Edge::Node(node) = input.edge {
                drop_node(node);
            }
        }
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        let (saved, output, grad, extras) = (
            std::mem::take(&mut state.saved),
            state.saved_output.take(),
            self.grad.get_mut().take(),
            state.extras.take(),
        );
        drop((saved, output, grad, extras));
        self.op = Box::new(Released);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        for input in self.inputs.drain(..) {
            if let Edge::Node(node) = input.edge {
                drop_node(node);
            }
        }
    }
}

/// Creation numbers of nodes (see [`Node::seq`]), handed to threads in blocks, as
/// tensor ids are (`tensor::next_in_block`): a recorded op takes no locked
/// instruction for its number.
static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The rest of this thread's block of creation numbers: `(next, end)`.
    static SEQ: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// What a released node holds in place of its op.
pub(super) struct Released;

impl RecordedOp for Released {
    fn backward(&self, ctx: &mut BackwardContext<'_>) -> crate::Result<crate::op::Grads> {
        // Unreachable: a released node is in no graph (its block waits for reuse).
        Err(crate::Error::GraphConsumed { op: ctx.op })
    }
}

impl Node {
    pub(super) fn empty(entry: &'static OpEntry, location: &'static Location<'static>) -> Node {
        Node {
            seq: 0,
            entry,
            op: Box::new(Released),
            inputs: SmallVec::new(),
            output_id: TensorId::NONE,
            output_shape: Shape::scalar(),
            fusion: None,
            location,
            state: Mutex::new(NodeState {
                saved: SmallVec::new(),
                saved_output: None,
                extras: None,
            }),
            grad: PassGrad(UnsafeCell::new(None)),
            consumed: AtomicBool::new(false),
            has_extras: AtomicBool::new(false),
            weak_made: AtomicBool::new(false),
            claimed: AtomicU64::new(0),
        }
    }

    /// Records one op call into an empty node.
    pub(super) fn fill(
        &mut self,
        entry: &'static OpEntry,
        op: Box<dyn RecordedOp>,
        inputs: &[&Tensor],
        output: &Tensor,
        location: &'static Location<'static>,
    ) {
        self.entry = entry;
        self.op = op;
        self.output_id = output.id();
        self.output_shape = output.shape().clone();
        self.fusion = crate::fusion::mark(&output.storage());
        self.location = location;
        *self.claimed.get_mut() = 0;
        *self.consumed.get_mut() = false;
        *self.has_extras.get_mut() = false;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        // (A released block holds none of these: tested, not dropped, as the drop
        // is a call.)
        let grad = self.grad.get_mut();
        if grad.is_some() {
            *grad = None;
        }
        if state.extras.is_some() {
            state.extras = None;
        }
        state.saved.clear();
        self.inputs.clear();
        // (Above every input node's number: see `Node::seq`.)
        let mut floor = 0;
        for (spec, t) in entry.inputs.iter().zip(inputs) {
            let edge = if spec.differentiable {
                t.edge()
            } else {
                Edge::None
            };
            if let Edge::Node(n) = &edge {
                floor = floor.max(n.seq + 1);
            }
            self.inputs.push(NodeInput {
                edge,
                shape: t.shape().clone(),
                dtype: t.dtype(),
                device: t.device(),
            });
            state.saved.push(spec.saved.then(|| t.for_saving()));
        }
        state.saved_output = entry
            .saves_output
            .then(|| Box::new(SavedOutput::of(output)));
        self.seq = crate::tensor::next_in_block(&NEXT_SEQ, &SEQ, floor);
    }
}

impl crate::op::InputShapes for SmallVec<[NodeInput; 2]> {
    fn shape(&self, i: usize) -> Option<&Shape> {
        self.get(i).map(|n| &n.shape)
    }

    fn dtype(&self, i: usize) -> Option<DType> {
        self.get(i).map(|n| n.dtype)
    }

    fn len(&self) -> usize {
        SmallVec::len(self)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Result, Tensor};

    /// A node recorded on a thread whose block of creation numbers is older than
    /// the one its input's node was numbered from (another thread's, taken later)
    /// is still numbered above that input, and backward runs through both.
    #[test]
    fn a_node_is_numbered_above_an_input_recorded_on_another_thread() -> Result<()> {
        let w = Tensor::from_slice(&[3.0f64], [1])?.with_requires_grad(true);
        // This thread's block is taken before the other thread's.
        let square = (&w * &w)?;
        let shared = w.clone();
        let double = std::thread::spawn(move || &shared + &shared)
            .join()
            .expect("the recording thread")?;
        let cube2 = (&double * &square)?;
        let seq = |t: &Tensor| t.grad_fn().map(|n| n.sequence_number());
        assert!(
            seq(&cube2) > seq(&double),
            "{:?} {:?}",
            seq(&cube2),
            seq(&double)
        );
        assert!(seq(&cube2) > seq(&square));
        cube2.backward()?;
        // d(2 w^3)/dw = 6 w^2.
        assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [54.0]);
        Ok(())
    }
}
