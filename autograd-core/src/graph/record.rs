//! Recording an op call: `apply` runs forward and records a node when some
//! differentiable input requires grad.

use super::pool::spare_node;
use super::*;
use crate::Tensor;
use crate::op::{BackwardContext, Differentiable, OpEntry, RecordedOp};
use std::cell::Cell;
use std::panic::Location;

thread_local! {
    /// What this thread's op calls did with the graph, as counters a backward run
    /// under `create_graph` reads before and after (see [`GraphUse`]).
    static CALLS: Cell<GraphUse> = const { Cell::new(GraphUse { recorded: 0, escaped: 0 }) };
}

/// Counts of this thread's op calls (see [`graph_use`]).
///
/// - `recorded`: calls made while recording is on, whether or not they recorded a
///   node (an operator that wrote its result into an operand's buffer because
///   neither operand requires grad counts too: it is a graph computation whose
///   result is a constant).
/// - `escaped`: calls made while recording is off, inside a backward run with
///   `create_graph` but outside the forward of an op being recorded, on a
///   differentiable input that requires grad: a value computed from such a tensor
///   outside the graph (`no_grad(|| x * x)` in a backward, or the ops of an inner
///   backward run without `create_graph`). Elsewhere nobody asks, and they are
///   not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GraphUse {
    pub(crate) recorded: u64,
    pub(crate) escaped: u64,
}

/// This thread's counts so far.
pub(crate) fn graph_use() -> GraphUse {
    CALLS.try_with(Cell::get).unwrap_or(GraphUse {
        recorded: 0,
        escaped: 0,
    })
}

/// Counts a call of the op `entry` on `inputs` in [`graph_use`], given
/// [`crate::grad_mode::recording`]'s answer: recorded when recording is on,
/// escaped when it is off, watched, and the call reads a tensor that requires grad.
#[inline]
pub(crate) fn count_call(entry: &OpEntry, inputs: &[&Tensor], (enabled, watched): (bool, bool)) {
    if enabled {
        let _ = CALLS.try_with(|c| {
            let mut u = c.get();
            u.recorded += 1;
            c.set(u);
        });
    } else if watched && wants_grad(entry, inputs) {
        let _ = CALLS.try_with(|c| {
            let mut u = c.get();
            u.escaped += 1;
            c.set(u);
        });
    }
}

/// For a call that can skip recording (an operator writing into an operand's
/// buffer): true when it would be recorded (the caller then records it, which
/// counts it); otherwise the call is counted here, and false.
#[inline]
pub(crate) fn records_or_count(entry: &OpEntry, inputs: &[&Tensor]) -> bool {
    let mode = crate::grad_mode::recording();
    if mode.0 && wants_grad(entry, inputs) {
        return true;
    }
    count_call(entry, inputs, mode);
    false
}

/// Runs `f` without its recorded-op calls counting in [`graph_use`]: for a
/// backward that records ops of its own (a checkpoint's recomputation) but whose
/// gradients are computed outside the graph being differentiated, so that the
/// engine marks them as not differentiable under `create_graph`.
pub(crate) fn uncounted<R>(f: impl FnOnce() -> R) -> R {
    let before = graph_use().recorded;
    let result = f();
    let _ = CALLS.try_with(|c| {
        let mut u = c.get();
        u.recorded = before;
        c.set(u);
    });
    result
}

/// The parameter of the node [`record_not_differentiable`] records.
struct NotDifferentiable {
    op: &'static str,
}

impl RecordedOp for NotDifferentiable {
    fn backward(&self, _: &mut BackwardContext<'_>) -> crate::Result<crate::op::Grads> {
        Err(crate::Error::NotDifferentiable { op: self.op })
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
    cuda_source: None,
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
    let mut node = match spare_node() {
        Some(block) => block,
        None => super::pool::fresh_node(entry, location),
    };
    // Filled in place: a released node holds nothing, a fresh one is empty.
    // SAFETY: a spare or fresh node block is its value's only handle (see
    // `unique_mut`: `retire_node` keeps a block only after `Arc::get_mut`).
    unsafe { crate::spare::unique_mut(&mut node) }.fill(entry, op, inputs, &output, location);
    output.attach(node)
}

/// True when some differentiable input of the op requires grad: with recording
/// on, a call on `inputs` is recorded.
fn wants_grad(entry: &OpEntry, inputs: &[&Tensor]) -> bool {
    entry
        .inputs
        .iter()
        .zip(inputs)
        .any(|(spec, t)| spec.differentiable && t.requires_grad())
}

/// An error unless `inputs` holds exactly the op's tensor inputs.
fn check_arity(entry: &OpEntry, inputs: &[&Tensor]) -> crate::Result<()> {
    if inputs.len() == entry.inputs.len() {
        return Ok(());
    }
    Err(crate::op::arity_error(
        entry.name,
        entry.inputs.len(),
        inputs.len(),
    ))
}

/// An error when an input that requires grad is not floating: only floating
/// tensors can carry a gradient (`with_requires_grad(true)` on an integer tensor
/// is caught at its first op).
#[inline]
fn check_float_grads(entry: &OpEntry, inputs: &[&Tensor]) -> crate::Result<()> {
    match inputs
        .iter()
        .position(|t| t.requires_grad() && !t.dtype().is_float())
    {
        None => Ok(()),
        Some(i) => Err(non_float_grad(entry.name, i, inputs[i])),
    }
}

#[cold]
#[inline(never)]
pub(crate) fn non_float_grad(op: &'static str, i: usize, t: &Tensor) -> crate::Error {
    crate::Error::InvalidArgument {
        op,
        msg: format!(
            "input {i} (tensor {}, shape {}) is {} and requires grad, but only floating tensors \
             (f16, bf16, f32, f64) can: make it with `with_requires_grad(false)`, or convert it \
             first with `.to_dtype(DType::F32)` and differentiate that",
            t.id(),
            t.shape(),
            t.dtype()
        ),
    }
}

/// Runs `op` forward on `inputs` (with recording off) and records the call in the
/// graph when some differentiable input requires grad. Every function generated by
/// `#[differentiable]` is a call of this.
#[track_caller]
pub fn apply<O: Differentiable>(op: O, inputs: &[&Tensor]) -> crate::Result<Tensor> {
    let location = Location::caller();
    let entry = O::ENTRY;
    check_arity(entry, inputs)?;
    check_float_grads(entry, inputs)?;
    // Autocast: the inputs converted as the op's policy says (recorded), the forward
    // run with autocast suspended; outside any scope, one thread-local read.
    if crate::autocast::converts() {
        return apply_autocast(op, inputs, location);
    }
    let output = {
        let _off = crate::grad_mode::ForwardGuard::new();
        op.forward(inputs).map_err(|e| e.in_op(entry.name))?
    };
    Ok(ComputationGraph::record_at(op, inputs, output, location))
}

/// [`apply`] inside an autocast scope.
#[cold]
#[inline(never)]
fn apply_autocast<O: Differentiable>(
    op: O,
    inputs: &[&Tensor],
    location: &'static Location<'static>,
) -> crate::Result<Tensor> {
    let entry = O::ENTRY;
    crate::autocast::dispatch(entry.name, inputs, |inputs| {
        let output = {
            let _off = crate::grad_mode::ForwardGuard::new();
            op.forward(inputs).map_err(|e| e.in_op(entry.name))?
        };
        Ok(ComputationGraph::record_at(op, inputs, output, location))
    })
}

impl ComputationGraph {
    /// Records a call of `op` on `inputs` that produced `output`, if some
    /// differentiable input requires grad and recording is enabled (not inside
    /// [`crate::no_grad`]); returns the output, now pointing at its node. An error
    /// when `inputs` does not hold exactly the op's tensor inputs.
    ///
    /// The functions `#[differentiable]` generates do not call this: they call
    /// `apply`, which runs forward with recording off and then records through the
    /// same path. Call it for an op whose forward you ran yourself.
    #[track_caller]
    pub fn record<O: Differentiable>(
        op: O,
        inputs: &[&Tensor],
        output: Tensor,
    ) -> crate::Result<Tensor> {
        let entry = O::ENTRY;
        check_arity(entry, inputs)?;
        check_float_grads(entry, inputs)?;
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
        let mode = crate::grad_mode::recording();
        count_call(entry, inputs, mode);
        let enabled = mode.0;
        let needed = enabled && wants_grad(entry, inputs);
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
}
