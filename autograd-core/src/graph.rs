//! The recorded graph: one [`Node`] per op call that has an input requiring grad.
//!
//! There is no central graph object to reset: each op output points at the node that
//! produced it, each node at the nodes (or leaf gradient slots) of its inputs, so a
//! graph lives exactly as long as some tensor computed from it — like a tape that
//! forgets what nothing can reach any more. [`ComputationGraph`] collects the nodes
//! behind some tensors for inspection and export.

use crate::op::{BackwardContext, Differentiable, OpEntry, RecordedOp};
use crate::storage::Storage;
use crate::tensor::{Autograd, TensorId};
use crate::{DType, Device, Layout, Shape, Tensor};
use smallvec::SmallVec;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// What a node holds until backward has run through it.
pub(crate) struct NodeState {
    /// Saved inputs, by input position; only those the op's backward reads.
    pub(crate) saved: SmallVec<[Option<Tensor>; 2]>,
    /// Boxed: few ops save their output, and the node stays small for the rest.
    pub(crate) saved_output: Option<Box<SavedOutput>>,
    /// Gradient of the node's output accumulated during a backward pass.
    pub(crate) grad: Option<Tensor>,
    /// Backward has run and released the saved tensors.
    pub(crate) consumed: bool,
}

impl NodeState {
    /// The storage buffers this node keeps alive for its backward (a buffer saved
    /// twice, as in `x * x`, appears twice).
    fn saved_storages(&self) -> impl Iterator<Item = Arc<Storage>> + '_ {
        let inputs = self.saved.iter().flatten().map(|t| t.storage_arc());
        inputs.chain(self.saved_output.as_ref().map(|s| s.storage.clone()))
    }
}

/// A recorded op call: its op, an edge per input, what it saved for backward.
pub(crate) struct Node {
    /// Creation order: a node's inputs always have smaller numbers, so visiting in
    /// decreasing order visits every node after all of its consumers.
    pub(crate) seq: u64,
    pub(crate) entry: &'static OpEntry,
    /// The op value itself (its non-tensor parameters), which runs the backward.
    pub(crate) op: Box<dyn RecordedOp>,
    pub(crate) inputs: SmallVec<[NodeInput; 2]>,
    pub(crate) output_id: TensorId,
    pub(crate) output_shape: Shape,
    pub(crate) location: &'static Location<'static>,
    pub(crate) state: Mutex<NodeState>,
    /// Id of the one backward pass currently running through this node (0: none).
    pub(crate) claimed: AtomicU64,
}

impl Node {
    pub(crate) fn lock(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn name(&self) -> &'static str {
        self.entry.name
    }
}

impl Node {
    /// Lets go of everything the node holds (edges, saved tensors, gradient, op
    /// parameters), as dropping it would, leaving an empty block to reuse.
    fn release(&mut self) {
        for input in self.inputs.drain(..) {
            if let Edge::Node(node) = input.edge {
                drop_node(node);
            }
        }
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        let (saved, output, grad) = (
            std::mem::take(&mut state.saved),
            state.saved_output.take(),
            state.grad.take(),
        );
        drop((saved, output, grad));
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

/// Released nodes kept by each thread for the next ones recorded. It pays: without
/// it W1 (per-op overhead) takes 18% longer and W4 13% (`cargo run --release --example workloads`, medians of 5 interleaved runs, 2-vCPU VM, 2026-12-01).
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
    let Some(n) = Arc::get_mut(&mut node) else {
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

static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Calls of recorded ops on this thread (recorded or not): tells whether an op's
    /// backward computed with recorded ops at all.
    static RECORDED_CALLS: Cell<u64> = const { Cell::new(0) };
}

/// How many recorded-op calls this thread has made (see `RECORDED_CALLS`).
pub(crate) fn recorded_calls() -> u64 {
    RECORDED_CALLS.try_with(Cell::get).unwrap_or(0)
}

/// The parameter of the node [`record_not_differentiable`] records.
struct NotDifferentiable {
    op: &'static str,
}

impl RecordedOp for NotDifferentiable {
    fn backward(&self, _: &BackwardContext<'_>) -> crate::Result<crate::op::Grads> {
        Err(crate::Error::NotDifferentiable { op: self.op })
    }
}

/// What a released node holds in place of its op.
struct Released;

impl RecordedOp for Released {
    fn backward(&self, ctx: &BackwardContext<'_>) -> crate::Result<crate::op::Grads> {
        // Unreachable: a released node is in no graph (its block waits for reuse).
        Err(crate::Error::GraphConsumed { op: ctx.op })
    }
}

/// Not registered: only the engine records it.
static NOT_DIFFERENTIABLE: OpEntry = OpEntry {
    name: "not_differentiable",
    module_path: module_path!(),
    inputs: &[crate::op::InputSpec {
        name: "anchor",
        differentiable: true,
        saved: false,
    }],
    saves_output: false,
    params: &["op"],
    check_cases: None,
};

/// `grad`, computed by the backward of `node` without recorded ops although
/// `anchor` (one of the tensors that backward read) requires grad, as a tensor whose
/// own backward fails with [`crate::Error::NotDifferentiable`] naming the op.
pub(crate) fn record_not_differentiable(node: &Node, anchor: &Tensor, grad: Tensor) -> Tensor {
    let op = Box::new(NotDifferentiable { op: node.name() });
    record_node(&NOT_DIFFERENTIABLE, op, &[anchor], grad, node.location)
}

/// Records one op call: the node keeps an edge per input, the inputs the op's
/// backward declares it reads (and its output, if declared), and nothing else.
/// The caller has checked that some differentiable input requires grad.
pub(crate) fn record_node(
    entry: &'static OpEntry,
    op: Box<dyn RecordedOp>,
    inputs: &[&Tensor],
    output: Tensor,
    location: &'static Location<'static>,
) -> Tensor {
    let output = output.into_fresh();
    let spare = SPARE_NODES
        .try_with(|spare| spare.try_borrow_mut().ok()?.pop())
        .ok()
        .flatten();
    let mut node = match spare {
        Some(block) => block,
        None => Arc::new(Node::empty(entry, location)),
    };
    // Filled in place: a released node holds nothing, a fresh one is empty.
    match Arc::get_mut(&mut node) {
        Some(n) => n.fill(entry, op, inputs, &output, location),
        None => {
            // Unreachable in practice (spare and fresh nodes have one handle); build
            // the node afresh rather than fail.
            let mut fresh = Node::empty(entry, location);
            fresh.fill(entry, op, inputs, &output, location);
            node = Arc::new(fresh);
        }
    }
    output.attach(node)
}

impl Node {
    fn empty(entry: &'static OpEntry, location: &'static Location<'static>) -> Node {
        Node {
            seq: 0,
            entry,
            op: Box::new(Released),
            inputs: SmallVec::new(),
            output_id: TensorId::NONE,
            output_shape: Shape::scalar(),
            location,
            state: Mutex::new(NodeState {
                saved: SmallVec::new(),
                saved_output: None,
                grad: None,
                consumed: false,
            }),
            claimed: AtomicU64::new(0),
        }
    }

    /// Records one op call into an empty node.
    fn fill(
        &mut self,
        entry: &'static OpEntry,
        op: Box<dyn RecordedOp>,
        inputs: &[&Tensor],
        output: &Tensor,
        location: &'static Location<'static>,
    ) {
        self.seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed);
        self.entry = entry;
        self.op = op;
        self.output_id = output.id();
        self.output_shape = output.shape().clone();
        self.location = location;
        *self.claimed.get_mut() = 0;
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        state.grad = None;
        state.consumed = false;
        state.saved.clear();
        self.inputs.clear();
        for (spec, t) in entry.inputs.iter().zip(inputs) {
            let edge = if spec.differentiable {
                t.edge()
            } else {
                Edge::None
            };
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
    }
}

/// Runs `op` forward on `inputs` (with recording off) and records the call in the
/// graph when some differentiable input requires grad. Every function generated by
/// `#[differentiable]` is a call of this.
#[track_caller]
pub fn apply<O: Differentiable>(op: O, inputs: &[&Tensor]) -> crate::Result<Tensor> {
    let location = Location::caller();
    let entry = O::ENTRY;
    if inputs.len() != entry.inputs.len() {
        return Err(crate::op::arity_error(
            entry.name,
            entry.inputs.len(),
            inputs.len(),
        ));
    }
    let output = {
        let _off = crate::grad_mode::NoGradGuard::new();
        op.forward(inputs).map_err(|e| e.in_op(entry.name))?
    };
    Ok(ComputationGraph::record_at(op, inputs, output, location))
}

impl crate::op::InputShapes for SmallVec<[NodeInput; 2]> {
    fn shape(&self, i: usize) -> Option<&Shape> {
        self.get(i).map(|n| &n.shape)
    }

    fn len(&self) -> usize {
        SmallVec::len(self)
    }
}

/// A recorded node seen from outside: what op it was, what it keeps alive.
#[derive(Clone)]
pub struct NodeRef(pub(crate) Arc<Node>);

/// One input of a recorded node.
pub enum NodeInputRef {
    /// An input that gets no gradient (a constant or a non-differentiable input).
    Constant {
        /// The input's shape.
        shape: Shape,
    },
    /// A leaf that requires grad.
    Leaf {
        /// The leaf's shape.
        shape: Shape,
    },
    /// The output of another node.
    Node(NodeRef),
}

impl NodeRef {
    /// The op's registered name.
    pub fn op_name(&self) -> &'static str {
        self.0.name()
    }

    /// The op's registry entry.
    pub fn entry(&self) -> &'static OpEntry {
        self.0.entry
    }

    /// Id of the tensor this node produced.
    pub fn output_id(&self) -> TensorId {
        self.0.output_id
    }

    /// Shape of the tensor this node produced (kept after the output is dropped).
    pub fn output_shape(&self) -> &Shape {
        &self.0.output_shape
    }

    /// The source location of the op call that recorded this node.
    pub fn location(&self) -> &'static Location<'static> {
        self.0.location
    }

    /// Order of recording (smaller numbers were recorded earlier).
    pub fn sequence_number(&self) -> u64 {
        self.0.seq
    }

    /// How many tensors (inputs and output) the node holds for its backward.
    pub fn saved_tensor_count(&self) -> usize {
        let st = self.0.lock();
        st.saved.iter().flatten().count() + usize::from(st.saved_output.is_some())
    }

    /// Bytes of storage the node keeps alive for its backward (each buffer once).
    pub fn saved_bytes(&self) -> usize {
        let st = self.0.lock();
        let mut seen: SmallVec<[*const Storage; 4]> = SmallVec::new();
        let mut bytes = 0;
        for s in st.saved_storages() {
            let p = Arc::as_ptr(&s);
            if !seen.contains(&p) {
                seen.push(p);
                bytes += s.size_in_bytes();
            }
        }
        bytes
    }

    /// True once a backward pass (without `retain_graph`) has run through the node
    /// and released what it saved.
    pub fn is_consumed(&self) -> bool {
        self.0.lock().consumed
    }

    /// The node's inputs, in the op's order.
    pub fn inputs(&self) -> Vec<NodeInputRef> {
        self.0
            .inputs
            .iter()
            .map(|i| match &i.edge {
                Edge::None => NodeInputRef::Constant {
                    shape: i.shape.clone(),
                },
                Edge::Leaf(_) => NodeInputRef::Leaf {
                    shape: i.shape.clone(),
                },
                Edge::Node(n) => NodeInputRef::Node(NodeRef(n.clone())),
            })
            .collect()
    }

    /// True when both refer to the same node.
    pub fn ptr_eq(&self, other: &NodeRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Node#{}({} -> {}, saved {} B)",
            self.0.seq,
            self.op_name(),
            self.output_shape(),
            self.saved_bytes()
        )
    }
}

/// The recorded nodes behind some tensors, in recording order.
///
/// Recording itself happens in [`ComputationGraph::record`] (called by every op the
/// macro generates): a node is created only when some differentiable input requires
/// grad, and the output then remembers it as its producer.
pub struct ComputationGraph {
    nodes: Vec<NodeRef>,
}

impl ComputationGraph {
    /// Collects every node that `roots` were computed through.
    pub fn of(roots: &[&Tensor]) -> ComputationGraph {
        let mut seen: HashSet<*const Node> = HashSet::new();
        let mut stack: Vec<Arc<Node>> = roots
            .iter()
            .filter_map(|t| match t.autograd() {
                Autograd::Interior(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let mut nodes = Vec::new();
        while let Some(n) = stack.pop() {
            if !seen.insert(Arc::as_ptr(&n)) {
                continue;
            }
            for i in &n.inputs {
                if let Edge::Node(m) = &i.edge {
                    stack.push(m.clone());
                }
            }
            nodes.push(NodeRef(n));
        }
        nodes.sort_by_key(|n| n.0.seq);
        ComputationGraph { nodes }
    }

    /// Records a call of `op` on `inputs` that produced `output`, if some
    /// differentiable input requires grad and recording is enabled (not inside
    /// [`crate::no_grad`]); returns the output, now pointing at its node. An error
    /// when `inputs` does not hold exactly the op's tensor inputs.
    #[track_caller]
    pub fn record<O: Differentiable>(
        op: O,
        inputs: &[&Tensor],
        output: Tensor,
    ) -> crate::Result<Tensor> {
        let entry = O::ENTRY;
        if inputs.len() != entry.inputs.len() {
            return Err(crate::op::arity_error(
                entry.name,
                entry.inputs.len(),
                inputs.len(),
            ));
        }
        Ok(Self::record_at(op, inputs, output, Location::caller()))
    }

    /// [`ComputationGraph::record`] with the call site given; the caller has checked
    /// the number of inputs.
    pub(crate) fn record_at<O: Differentiable>(
        op: O,
        inputs: &[&Tensor],
        output: Tensor,
        location: &'static Location<'static>,
    ) -> Tensor {
        let entry = O::ENTRY;
        let _ = RECORDED_CALLS.try_with(|c| c.set(c.get() + 1));
        let needed = crate::is_grad_enabled()
            && entry
                .inputs
                .iter()
                .zip(inputs)
                .any(|(spec, t)| spec.differentiable && t.requires_grad());
        if !needed {
            // Dropped here, not after the return value is made: a parameter whose
            // `Drop` panics would otherwise leak the output (rustc drops a finished
            // return value only on some unwinding paths).
            drop(op);
            return output;
        }
        let mut op = op;
        op.prepare_record();
        record_node(entry, Box::new(op), inputs, output, location)
    }

    /// The nodes, earliest first.
    pub fn nodes(&self) -> &[NodeRef] {
        &self.nodes
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when nothing was recorded (the tensors are leaves or constants).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Bytes the graph keeps alive for backward, counting each buffer once.
    pub fn saved_bytes(&self) -> usize {
        let mut seen: HashSet<*const Storage> = HashSet::new();
        let mut bytes = 0;
        for n in &self.nodes {
            for s in n.0.lock().saved_storages() {
                if seen.insert(Arc::as_ptr(&s)) {
                    bytes += s.size_in_bytes();
                }
            }
        }
        bytes
    }
}
