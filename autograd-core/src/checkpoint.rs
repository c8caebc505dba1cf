//! Gradient checkpointing: a segment of computation whose intermediate results are
//! not kept for backward but recomputed when backward reaches it.

use crate::graph::{record_node, uncounted};
use crate::op::{BackwardContext, Grads, InputSpec, OpEntry, RecordedOp};
use crate::random::replay::{self, DrawLog};
use crate::{BackwardOptions, Error, Result, Tensor};
use std::panic::Location;
use std::sync::Arc;

/// The most tensor inputs a checkpointed segment takes.
pub const MAX_CHECKPOINT_INPUTS: usize = 32;

const INPUT: InputSpec = InputSpec {
    name: "input",
    differentiable: true,
    // The recomputation reads every input.
    saved: true,
};

static INPUTS: [InputSpec; MAX_CHECKPOINT_INPUTS] = [INPUT; MAX_CHECKPOINT_INPUTS];

const fn entry(arity: usize) -> OpEntry {
    OpEntry {
        name: "checkpoint",
        module_path: module_path!(),
        inputs: INPUTS.split_at(arity).0,
        saves_output: false,
        params: &["f"],
        check_cases: None,
        cuda_source: None,
    }
}

/// One (unregistered) entry per number of inputs: a node's entry lists its inputs.
static ENTRIES: [OpEntry; MAX_CHECKPOINT_INPUTS + 1] = {
    let mut entries = [const { entry(0) }; MAX_CHECKPOINT_INPUTS + 1];
    let mut arity = 1;
    while arity <= MAX_CHECKPOINT_INPUTS {
        entries[arity] = entry(arity);
        arity += 1;
    }
    entries
};

type SegmentFn = dyn Fn(&[Tensor]) -> Result<Tensor> + Send + Sync;

/// The recorded node of a checkpointed segment: the function, to run again, and
/// (with `preserve_rng_state`) the states of the generators its forward drew from.
struct Checkpoint {
    f: Arc<SegmentFn>,
    draws: Option<DrawLog>,
    /// The autocast dtype the forward ran under, re-entered to recompute it (so
    /// the recomputation converts as the forward did).
    autocast: Option<crate::DType>,
}

/// How [`checkpoint_with`] runs a segment.
#[derive(Clone, Debug)]
pub struct CheckpointOptions {
    /// Recompute with the random numbers the forward drew (as PyTorch's
    /// `preserve_rng_state`, also on by default): see [`checkpoint`].
    pub preserve_rng_state: bool,
}

impl Default for CheckpointOptions {
    fn default() -> Self {
        CheckpointOptions {
            preserve_rng_state: true,
        }
    }
}

impl CheckpointOptions {
    /// Sets [`preserve_rng_state`](CheckpointOptions::preserve_rng_state). Off, the
    /// recomputation draws afresh from the generators (and moves them on): only for
    /// segments that draw no random numbers, or whose gradients may use other ones.
    pub fn preserve_rng_state(mut self, preserve: bool) -> Self {
        self.preserve_rng_state = preserve;
        self
    }
}

impl RecordedOp for Checkpoint {
    fn backward(&self, ctx: &mut BackwardContext<'_>) -> Result<Grads> {
        let n = ctx.needs.len();
        // The recomputation's own recorded ops are not this backward's way of
        // computing its gradients: they come out of an inner, unrecorded pass. Not
        // counting them lets the engine mark them under create_graph, so that a
        // second derivative through the segment is an error naming `checkpoint`,
        // never a silent zero.
        uncounted(|| {
            let leaves = (0..n)
                .map(|i| Ok(ctx.input(i)?.detach().with_requires_grad(ctx.needs(i))))
                .collect::<Result<Vec<Tensor>>>()?;
            let recompute = || {
                crate::enable_grad(|| match &self.draws {
                    Some(draws) => replay::replay(draws, || (self.f)(&leaves)),
                    None => (self.f)(&leaves),
                })
            };
            let output = match self.autocast {
                Some(dtype) => crate::autocast::autocast(dtype, recompute)?,
                None => crate::autocast::disabled(recompute)?,
            };
            let grad = ctx.grad()?;
            if output.shape() != grad.shape() || output.dtype() != grad.dtype() {
                return Err(Error::InvalidArgument {
                    op: "checkpoint",
                    msg: format!(
                        "recomputing the segment gave shape {} ({}), but its forward gave {} \
                         ({}); the function must compute the same thing every time it is called \
                         (no state of its own; random numbers from `Rng`s, drawn on this thread)",
                        output.shape(),
                        output.dtype(),
                        grad.shape(),
                        grad.dtype()
                    ),
                });
            }
            if output.requires_grad() {
                let opts = BackwardOptions::default().seed(grad.clone());
                crate::backward(&output, opts)?;
            }
            Ok(leaves.iter().map(Tensor::grad).collect())
        })
    }
}

/// Runs `f(inputs)` as one checkpointed segment, as PyTorch's
/// `torch.utils.checkpoint.checkpoint` (the reentrant variant): the forward runs
/// without recording (none of the segment's intermediate results is kept for
/// backward), and one node is recorded that saves `inputs` only. When backward
/// reaches it, `f` runs again on the saved inputs with recording on, and an inner
/// backward pass through that recomputed graph, seeded with the segment output's
/// gradient, gives the inputs' gradients.
///
/// Memory for time: a chain of `N` ops that each save a tensor keeps `N` tensors
/// for backward; cut into `k` checkpointed segments it keeps `k` (the segments'
/// inputs) plus, while one segment is being differentiated, that segment's `N/k`:
/// about `2√N` for `k = √N`, at the cost of a second forward pass. The gradients
/// are those of the plain computation, bit for bit where each input's gradient has
/// one contribution; a parameter used in several segments sums its contributions
/// per segment first, so its gradient may differ in the last bits.
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::from_slice(&[0.5f64, -1.0], [2])?.with_requires_grad(true);
/// let w = Tensor::from_slice(&[2.0f64, 3.0], [2])?.with_requires_grad(true);
/// let segment = |xs: &[Tensor]| (&xs[0] * &xs[1])?.tanh();
/// let y = autograd::checkpoint(segment, &[x.clone(), w.clone()])?;
/// assert_eq!(y.grad_fn().unwrap().op_name(), "checkpoint"); // one node
/// y.sum_all()?.backward()?;
///
/// let (x2, w2) = (x.detach().with_requires_grad(true), w.detach().with_requires_grad(true));
/// segment(&[x2.clone(), w2.clone()])?.sum_all()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, x2.grad().unwrap().to_vec::<f64>()?);
/// assert_eq!(w.grad().unwrap().to_vec::<f64>()?, w2.grad().unwrap().to_vec::<f64>()?);
/// # Ok(())
/// # }
/// ```
///
/// # What `f` must be
///
/// - **Deterministic**: it runs twice and must compute the same thing both times.
///   A recomputation of another shape or dtype is an error. Random numbers are
///   fine when they come from [`Rng`](crate::random::Rng)s drawn on the calling
///   thread (dropout, say): see below.
/// - **Its tensors through `inputs`**: the output requires grad only when some
///   input does, and gradients reach the inputs. A leaf parameter that `f` captures
///   instead still gets its gradient accumulated into `.grad()` by the inner pass
///   (with [`grad`](crate::grad), which must leave `.grad()` alone, pass it in
///   `inputs`); a captured op output that requires grad would let the inner pass
///   run into the outer graph, which is an error when the two passes meet.
///
/// # Random numbers
///
/// The recomputation draws the random numbers the forward drew, so that dropout in
/// a segment gets the plain computation's gradients, bit for bit (PyTorch's
/// `preserve_rng_state`, on by default). PyTorch stashes its global generator's
/// state in forward and restores it to recompute; here generators are values the
/// user owns, so the forward notes the state of each [`Rng`](crate::random::Rng)
/// that `f` draws from, just before its first draw, in the order they are first
/// drawn from, and the recomputation gives the `k`-th generator it draws from the
/// `k`-th noted state. It draws from copies: no generator moves, so after backward
/// every generator is where it would be without the checkpoint (as PyTorch
/// restores its generators after recomputing). Matched by order, a generator
/// cloned afresh in `f`, or replaced between forward and backward, is replayed
/// too; draws that `f` makes on other threads are not. [`checkpoint_with`] and
/// [`CheckpointOptions::preserve_rng_state()`]`(false)` turn this off: the
/// recomputation then draws afresh and moves the generators on.
///
/// # Higher order
///
/// The inner pass is not recorded. Under
/// [`create_graph`](BackwardOptions::create_graph) the segment's first-order
/// gradients are computed as usual but marked, so that differentiating them again
/// fails with [`Error::NotDifferentiable`] naming `checkpoint` (never a silent zero):
/// leave segments that must be differentiated twice unchecked.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for no inputs or more than
/// [`MAX_CHECKPOINT_INPUTS`]; whatever `f` returns, in the forward and in the
/// recomputation (then from the backward pass).
#[track_caller]
pub fn checkpoint<F>(f: F, inputs: &[Tensor]) -> Result<Tensor>
where
    F: Fn(&[Tensor]) -> Result<Tensor> + Send + Sync + 'static,
{
    checkpoint_with(f, inputs, CheckpointOptions::default())
}

/// [`checkpoint`] with options: whether the recomputation draws the random numbers
/// the forward drew ([`CheckpointOptions::preserve_rng_state()`], on by default).
///
/// # Errors
///
/// As [`checkpoint`].
#[track_caller]
pub fn checkpoint_with<F>(f: F, inputs: &[Tensor], opts: CheckpointOptions) -> Result<Tensor>
where
    F: Fn(&[Tensor]) -> Result<Tensor> + Send + Sync + 'static,
{
    let location = Location::caller();
    if inputs.is_empty() || inputs.len() > MAX_CHECKPOINT_INPUTS {
        return Err(Error::InvalidArgument {
            op: "checkpoint",
            msg: format!(
                "takes 1 to {MAX_CHECKPOINT_INPUTS} tensor inputs, got {}; pass the tensors the \
                 segment reads (concatenate them if there are more)",
                inputs.len()
            ),
        });
    }
    if !crate::is_grad_enabled() || !inputs.iter().any(Tensor::requires_grad) {
        return crate::no_grad(|| f(inputs));
    }
    let forward = || crate::no_grad(|| f(inputs));
    let (output, draws) = if opts.preserve_rng_state {
        let (output, draws) = replay::record(forward);
        (output?, Some(draws))
    } else {
        (forward()?, None)
    };
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let op = Box::new(Checkpoint {
        f: Arc::new(f),
        draws,
        autocast: crate::autocast::autocast_dtype(),
    });
    Ok(record_node(
        &ENTRIES[inputs.len()],
        op,
        &refs,
        output,
        location,
    ))
}
