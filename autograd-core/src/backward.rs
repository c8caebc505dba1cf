//! The backward engine.
//!
//! From the tensor `backward` is called on, it visits exactly the recorded ancestors
//! of that tensor, each after all of its consumers: nodes wait in a max-heap keyed by
//! their creation number, and every consumer of a node was created after it. A node
//! enters the heap when its first gradient contribution arrives and accumulates the
//! rest in place until it is popped, so each node runs its backward once with the
//! sum of all contributions. Gradients are reduced to each input's shape here, once,
//! for every op (broadcasting is undone centrally), and an op's saved tensors are
//! released as soon as its backward has run.

use crate::graph::{Edge, GraphUse, Node};
use crate::op::{BackwardContext, Grads};
use crate::storage::Storage;
use crate::tensor::{Autograd, GradSlot, HookList, TensorId};
use crate::{DType, Error, Result, Shape, Tensor, compute, grad_mode};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

/// How a backward pass runs.
#[derive(Clone, Default)]
pub struct BackwardOptions {
    /// Keep the saved tensors so the graph can be differentiated again.
    pub retain_graph: bool,
    /// Record the backward pass itself, so gradients can be differentiated again
    /// (higher-order gradients). Implies `retain_graph`.
    pub create_graph: bool,
    /// Gradient of the final result with respect to the tensor backward starts from;
    /// required when that tensor has more than one element (defaults to 1 for a scalar).
    pub seed: Option<Tensor>,
    /// For [`grad`]: give `None` for an input the output does not depend on, instead
    /// of an error (as PyTorch's `allow_unused`).
    pub allow_unused: bool,
    /// For [`grad`]: give zeros of the input's shape for an input the output does
    /// not depend on (as PyTorch's `materialize_grads`); implies `allow_unused`.
    pub materialize_grads: bool,
}

impl BackwardOptions {
    /// Sets [`retain_graph`](BackwardOptions::retain_graph): keep the saved tensors
    /// so that a second backward through the same graph works.
    pub fn retain_graph(mut self, retain: bool) -> Self {
        self.retain_graph = retain;
        self
    }

    /// Sets [`create_graph`](BackwardOptions::create_graph): record the backward
    /// pass, so that the gradients it produces can be differentiated again.
    pub fn create_graph(mut self, create: bool) -> Self {
        self.create_graph = create;
        self
    }

    /// Sets the [`seed`](BackwardOptions::seed) gradient, of the root's shape, dtype
    /// and device.
    pub fn seed(mut self, seed: Tensor) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets [`allow_unused`](BackwardOptions::allow_unused): [`grad`] gives `None`
    /// for an input the output does not depend on, instead of an error.
    pub fn allow_unused(mut self, allow: bool) -> Self {
        self.allow_unused = allow;
        self
    }

    /// Sets [`materialize_grads`](BackwardOptions::materialize_grads): [`grad`]
    /// gives zeros for an input the output does not depend on.
    pub fn materialize_grads(mut self, materialize: bool) -> Self {
        self.materialize_grads = materialize;
        self
    }

    fn retains(&self) -> bool {
        self.retain_graph || self.create_graph
    }
}

/// Where the gradients a pass computes go: those that reach leaves, and those of
/// op outputs (kept when they were asked for: `grad()` of an interior tensor).
trait GradDestination {
    fn leaf(&mut self, slot: &Arc<GradSlot>, grad: Tensor, create_graph: bool) -> Result<()>;
    fn node_output(&mut self, node: &Arc<Node>, grad: &Tensor);
}

/// `backward()`: leaves accumulate into their `.grad()`.
#[derive(Default)]
struct AccumulateIntoLeaves {
    /// The leaves that got a gradient.
    reached: Vec<Arc<GradSlot>>,
}

impl AccumulateIntoLeaves {
    /// After the pass: the roots' values and the gradients left in the leaves, when
    /// deferred, are computed together when the first of them is read (one pass
    /// over their common inputs: see `fusion::read_together`).
    fn read_together(self, roots: &[(&Tensor, Tensor)]) {
        let mut storages: Vec<Arc<Storage>> = roots.iter().map(|(r, _)| r.storage_arc()).collect();
        for slot in &self.reached {
            if let Some(g) = slot.lock().as_ref() {
                storages.push(g.storage_arc());
            }
        }
        crate::fusion::read_together(&storages);
    }
}

impl GradDestination for AccumulateIntoLeaves {
    fn leaf(&mut self, slot: &Arc<GradSlot>, grad: Tensor, create_graph: bool) -> Result<()> {
        let mut current = slot.lock();
        if slot.is_orphaned() {
            // The leaf was dropped: nobody can read this gradient, and a recorded one
            // (create_graph) would hold the graph that holds this slot.
            return Ok(());
        }
        // A gradient that passed through unchanged from a seed may be a tensor the user
        // holds (even this leaf itself). Unrecorded, it is stored as a constant; recorded,
        // a leaf is stored as the copy nodes save, which does not keep the user's leaf
        // alive (else slot -> leaf -> slot would never be freed).
        let grad = match grad.autograd() {
            Autograd::None => grad,
            _ if !create_graph => grad.detach(),
            Autograd::Leaf(_) => grad.for_saving(),
            Autograd::Interior(_) => grad,
        };
        *current = Some(match current.take() {
            None => {
                self.reached.push(slot.clone());
                grad
            }
            Some(acc) => add(acc, grad, create_graph)?,
        });
        Ok(())
    }

    fn node_output(&mut self, _: &Arc<Node>, _: &Tensor) {}
}

enum Target {
    Leaf(Arc<GradSlot>),
    Node(Arc<Node>),
    Unreachable,
}

/// `grad()`: only the requested tensors' gradients are kept; leaves are untouched.
struct Capture {
    targets: Vec<(Target, Option<Tensor>)>,
}

impl GradDestination for Capture {
    fn leaf(&mut self, slot: &Arc<GradSlot>, grad: Tensor, create_graph: bool) -> Result<()> {
        for (target, acc) in &mut self.targets {
            if let Target::Leaf(s) = target
                && Arc::ptr_eq(s, slot)
            {
                *acc = Some(match acc.take() {
                    None => grad.clone(),
                    Some(a) => add(a, grad.clone(), create_graph)?,
                });
            }
        }
        Ok(())
    }

    fn node_output(&mut self, node: &Arc<Node>, grad: &Tensor) {
        for (target, acc) in &mut self.targets {
            if let Target::Node(n) = target
                && Arc::ptr_eq(n, node)
            {
                *acc = Some(grad.clone());
            }
        }
    }
}

/// Every leaf gets one gradient per pass, the sum of its contributions, as an op's
/// node does (and as PyTorch's `AccumulateGrad` gets its input buffer's sum): the
/// contributions wait here, summed as they come, until the pass has run every node;
/// then each leaf's sum goes through the leaf's hooks, if it has any, into the dest.
/// A contribution so takes no lock (the leaf's gradient is locked once per pass, not
/// once per contribution: a recurrent loop of tiny ops paid two locked instructions
/// per use of each weight), and a pass that fails writes no leaf's gradient.
struct LeafSums<'a> {
    dest: &'a mut dyn GradDestination,
    held: Vec<(Arc<GradSlot>, Option<Tensor>)>,
    /// Position in `held` by slot, once `held` is longer than [`LeafSums::SCAN`] (a
    /// model's hundreds of parameters); shorter lists are searched.
    index: HashMap<*const GradSlot, usize>,
}

impl LeafSums<'_> {
    /// Leaves searched for in order before `index` is used.
    const SCAN: usize = 32;

    /// Runs the held leaves' hooks and hands their gradients to the dest.
    fn flush(&mut self, create_graph: bool) -> Result<()> {
        self.index.clear();
        for (slot, grad) in std::mem::take(&mut self.held) {
            let Some(grad) = grad else { continue };
            let grad = if slot.has_hooks() {
                slot.hook_list().run(grad, &|| "a leaf".to_string())?
            } else {
                grad
            };
            self.dest.leaf(&slot, grad, create_graph)?;
        }
        Ok(())
    }

    /// Where `slot`'s contributions are held, if it has had one in this pass.
    #[inline]
    fn position(&mut self, slot: &Arc<GradSlot>) -> Option<usize> {
        if self.held.len() <= Self::SCAN {
            return self.held.iter().position(|(s, _)| Arc::ptr_eq(s, slot));
        }
        if self.index.len() < self.held.len() {
            let from = self.index.len();
            for (i, (s, _)) in self.held.iter().enumerate().skip(from) {
                self.index.insert(Arc::as_ptr(s), i);
            }
        }
        self.index.get(&Arc::as_ptr(slot)).copied()
    }
}

impl GradDestination for LeafSums<'_> {
    #[inline]
    fn leaf(&mut self, slot: &Arc<GradSlot>, grad: Tensor, create_graph: bool) -> Result<()> {
        match self.position(slot) {
            Some(i) => {
                let acc = &mut self.held[i].1;
                *acc = Some(match acc.take() {
                    Some(a) => add(a, grad, create_graph)?,
                    None => grad,
                });
            }
            None => self.held.push((slot.clone(), Some(grad))),
        }
        Ok(())
    }

    #[inline]
    fn node_output(&mut self, node: &Arc<Node>, grad: &Tensor) {
        self.dest.node_output(node, grad)
    }
}

/// Sum of two gradient contributions: recorded when the backward pass is, else in
/// place when a buffer is not shared.
fn add(acc: Tensor, grad: Tensor, create_graph: bool) -> Result<Tensor> {
    if create_graph {
        crate::primitives::add(&acc, &grad)
    } else {
        compute::accumulate(acc, grad)
    }
}

/// Heap entry: nodes pop in decreasing creation order. Borrowed, not held: every
/// node a pass reaches is an input, through edges, of a root's node, and the roots
/// are borrowed for the whole pass (their nodes' handles kept by the pass), so no
/// node is released while the pass runs. (A handle per entry cost two locked
/// instructions per node.)
struct Ready<'r>(&'r Arc<Node>);

impl PartialEq for Ready<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.seq == other.0.seq
    }
}
impl Eq for Ready<'_> {}
impl PartialOrd for Ready<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.seq.cmp(&other.0.seq)
    }
}

/// One run of the engine. Nodes are claimed by the pass that holds their pending
/// gradient, so that a second pass reaching them at the same time fails instead of
/// adding its gradients into the first one's.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Pass(u64);

impl Pass {
    fn start() -> Pass {
        static NEXT: AtomicU64 = AtomicU64::new(1); // 0 marks an unclaimed node
        Pass(NEXT.fetch_add(1, AtomicOrdering::Relaxed))
    }
}

/// Whether `claim` took the node now or this pass already held it.
enum Claim {
    New,
    Held,
}

thread_local! {
    /// The passes running on this thread, innermost last (a pass started from inside
    /// another one's backward nests).
    static RUNNING: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Marks a pass as running on this thread until dropped.
struct OnThisThread(Pass);

impl OnThisThread {
    fn enter(pass: Pass) -> OnThisThread {
        let _ = RUNNING.try_with(|r| r.borrow_mut().push(pass.0));
        OnThisThread(pass)
    }
}

impl Drop for OnThisThread {
    fn drop(&mut self) {
        let _ = RUNNING.try_with(|r| r.borrow_mut().retain(|&p| p != self.0.0));
    }
}

fn claim(node: &Node, pass: Pass) -> Result<Claim> {
    match node
        .claimed
        .compare_exchange(0, pass.0, AtomicOrdering::Acquire, AtomicOrdering::Relaxed)
    {
        Ok(_) => Ok(Claim::New),
        Err(owner) if owner == pass.0 => Ok(Claim::Held),
        Err(owner) => {
            let here = RUNNING
                .try_with(|r| r.borrow().contains(&owner))
                .unwrap_or(false);
            let op = node.name();
            Err(if here {
                Error::ReentrantBackward { op }
            } else {
                Error::ConcurrentBackward { op }
            })
        }
    }
}

fn release(node: &Node) {
    node.claimed.store(0, AtomicOrdering::Release);
}

fn seed_for(root: &Tensor, seed: Option<&Tensor>) -> Result<Tensor> {
    match seed {
        Some(seed) => {
            if seed.shape() != root.shape() || seed.dtype() != root.dtype() {
                return Err(Error::SeedMismatch {
                    seed: seed.shape().clone(),
                    root: root.shape().clone(),
                    seed_dtype: seed.dtype(),
                    root_dtype: root.dtype(),
                });
            }
            if seed.device() != root.device() {
                return Err(Error::DeviceMismatch {
                    op: "backward",
                    lhs: seed.device(),
                    rhs: root.device(),
                });
            }
            Ok(seed.clone())
        }
        None if root.numel() == 1 => root.ones_like(),
        None => Err(Error::NonScalarRoot {
            shape: root.shape().clone(),
        }),
    }
}

/// Runs the backward pass from `root`, accumulating gradients into every leaf that
/// requires grad (read them with [`Tensor::grad`]).
///
/// # Errors
///
/// A pass that fails half-way (an op's backward returns an error, anomaly mode finds
/// a NaN, another thread's pass holds a node) releases every node it claimed and
/// every pending gradient buffer, so dropping the tensors frees the graph as usual.
/// Leaves it reached before the error keep what they accumulated.
///
/// # Threads
///
/// The pass runs on the calling thread, which need not be the thread that built the
/// graph. Two passes that reach the same recorded node at the same time do not wait
/// for each other: the later one fails with [`Error::ConcurrentBackward`] (it never
/// adds its gradients into the other pass). Differentiate a graph from one thread at
/// a time; independent graphs can be differentiated on many threads at once.
pub fn backward(root: &Tensor, opts: BackwardOptions) -> Result<()> {
    let seed = seed_for(root, opts.seed.as_ref())?;
    let roots = [(root, seed)];
    let mut dest = AccumulateIntoLeaves::default();
    run(&roots, &opts, &mut dest)?;
    dest.read_together(&roots);
    Ok(())
}

/// Runs one backward pass from several roots at once, each with its seed (as
/// PyTorch's `torch.autograd.backward(tensors, grad_tensors)`): every leaf that
/// requires grad accumulates the sum of the gradients flowing from all roots, and a
/// node the roots share runs its backward once.
///
/// `seeds` holds one entry per root (`None`: 1 for a one-element root), or is empty
/// when every root has one element. [`BackwardOptions::seed`] must be unset (the
/// seeds are given here). The same tensor may appear twice: its seeds add up.
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
/// let a = (&x * &x)?;         // x²
/// let b = (&x * 3.0)?.sum_all()?; // 3 Σx
/// let seed_a = Tensor::from_slice(&[1.0f64, 10.0], [2])?;
/// autograd::backward_many(&[&a, &b], &[Some(seed_a), None], BackwardOptions::default())?;
/// // 2x ⊙ seed_a + 3
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [5.0, 43.0]);
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// As [`backward`], and [`Error::InvalidArgument`] when `seeds` is neither empty nor
/// one per root, or the options carry a seed; [`Error::NoGradRoot`] for a root that
/// does not require grad; [`Error::SeedMismatch`] for a seed of the wrong shape or
/// dtype. No gradient is computed when any root or seed is wrong.
pub fn backward_many(
    roots: &[&Tensor],
    seeds: &[Option<Tensor>],
    opts: BackwardOptions,
) -> Result<()> {
    let roots = seeded("backward_many", roots, seeds, &opts)?;
    let mut dest = AccumulateIntoLeaves::default();
    run(&roots, &opts, &mut dest)?;
    dest.read_together(&roots);
    Ok(())
}

/// Gradients of several outputs at once, each with its seed, with respect to each of
/// `inputs`, without touching any leaf's `.grad()` (as PyTorch's
/// `torch.autograd.grad(outputs, inputs, grad_outputs)`): each input's gradient is
/// the sum over the outputs of `seedᵢ · ∂outputᵢ/∂input`, from one backward pass.
///
/// `seeds` as in [`backward_many`]; unused inputs, `create_graph` and the other
/// options as in [`grad`].
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::scalar(2.0f64).with_requires_grad(true);
/// let (a, b) = ((&x * &x)?, (&x * 5.0)?); // x², 5x
/// let seeds = [Some(Tensor::scalar(1.0f64)), Some(Tensor::scalar(-1.0f64))];
/// let g = autograd::grad_many(&[&a, &b], &seeds, &[&x], BackwardOptions::default())?;
/// assert_eq!(g[0].as_ref().unwrap().to_scalar::<f64>()?, -1.0); // 2x - 5
/// # Ok(())
/// # }
/// ```
pub fn grad_many(
    outputs: &[&Tensor],
    seeds: &[Option<Tensor>],
    inputs: &[&Tensor],
    opts: BackwardOptions,
) -> Result<Vec<Option<Tensor>>> {
    let roots = seeded("grad_many", outputs, seeds, &opts)?;
    capture(&roots, inputs, &opts)
}

/// Each root with its seed, checked (see [`backward_many`]).
fn seeded<'a>(
    op: &'static str,
    roots: &[&'a Tensor],
    seeds: &[Option<Tensor>],
    opts: &BackwardOptions,
) -> Result<Vec<(&'a Tensor, Tensor)>> {
    if opts.seed.is_some() {
        return Err(Error::InvalidArgument {
            op,
            msg: "the options carry a seed; pass one seed per root in `seeds` instead of \
                  `BackwardOptions::seed`"
                .into(),
        });
    }
    if !seeds.is_empty() && seeds.len() != roots.len() {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "{} seeds for {} roots; pass one seed (or None) per root, or no seeds when \
                 every root has one element",
                seeds.len(),
                roots.len()
            ),
        });
    }
    roots
        .iter()
        .enumerate()
        .map(|(i, &root)| {
            let seed = seed_for(root, seeds.get(i).and_then(Option::as_ref)).map_err(|e| {
                if roots.len() > 1 {
                    Error::InvalidArgument {
                        op,
                        msg: format!("root {i}: {e}"),
                    }
                } else {
                    e
                }
            })?;
            Ok((root, seed))
        })
        .collect()
}

/// Gradients of `output` with respect to each of `inputs` (leaves or intermediate
/// results), without touching any leaf's `.grad()`.
///
/// An input `output` does not depend on (it does not require grad, or `output` was
/// not computed from it) is an error ([`Error::UnusedInput`]), as in PyTorch: it is
/// usually a mistake. With [`BackwardOptions::allow_unused`] such an input gets
/// `None` instead, with [`BackwardOptions::materialize_grads`] zeros. The error
/// comes before any gradient is computed (the recorded graph is walked, not run),
/// so the graph is left as it was for a retry with `allow_unused`. (An input the
/// graph does reach but that gets no gradient, because an op's backward gives
/// its path none, is only found by running the pass, and is refused after it.)
///
/// With [`BackwardOptions::create_graph`] the gradients are themselves recorded, so
/// they can be differentiated again:
///
/// ```
/// use autograd::prelude::*;
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let x = Tensor::scalar(3.0f64).with_requires_grad(true);
/// let y = ((&x * &x) * &x)?; // x³
/// let opts = BackwardOptions::default().create_graph(true);
/// let dy = grad(&y, &[&x], opts)?.remove(0).expect("y depends on x");
/// assert_eq!(dy.to_scalar::<f64>()?, 27.0); // 3x²
/// let d2y = grad(&dy, &[&x], BackwardOptions::default())?.remove(0).unwrap();
/// assert_eq!(d2y.to_scalar::<f64>()?, 18.0); // 6x
/// assert!(x.grad().is_none()); // no leaf was written to
/// # Ok(())
/// # }
/// ```
pub fn grad(
    output: &Tensor,
    inputs: &[&Tensor],
    opts: BackwardOptions,
) -> Result<Vec<Option<Tensor>>> {
    let seed = seed_for(output, opts.seed.as_ref())?;
    capture(&[(output, seed)], inputs, &opts)
}

/// The gradients of `inputs` from one pass from `roots` (see [`grad`]).
fn capture(
    roots: &[(&Tensor, Tensor)],
    inputs: &[&Tensor],
    opts: &BackwardOptions,
) -> Result<Vec<Option<Tensor>>> {
    let targets: Vec<(Target, Option<Tensor>)> = inputs
        .iter()
        .map(|t| {
            let target = match t.autograd() {
                Autograd::Leaf(slot) => Target::Leaf(slot.clone()),
                a => a.node_arc().map_or(Target::Unreachable, Target::Node),
            };
            (target, None)
        })
        .collect();
    if !opts.allow_unused && !opts.materialize_grads {
        // Refused before the pass runs: a pass would consume the graph that the
        // retry the error advises needs.
        if roots.iter().any(|(root, _)| !root.requires_grad()) {
            return Err(Error::NoGradRoot);
        }
        let reached = reached(roots, &targets);
        if let Some(index) = reached.iter().position(|r| !r) {
            return Err(Error::UnusedInput {
                index,
                shape: inputs[index].shape().clone(),
                why: match targets[index].0 {
                    Target::Unreachable => "does not require grad",
                    _ => "is not among the tensors the output was computed from",
                },
            });
        }
    }
    let mut dest = Capture { targets };
    run(roots, opts, &mut dest)?;
    dest.targets
        .into_iter()
        .enumerate()
        .map(|(index, (target, g))| match (g, opts.allow_unused) {
            (Some(g), _) => Ok(Some(g)),
            (None, _) if opts.materialize_grads => inputs[index].zeros_like().map(Some),
            (None, true) => Ok(None),
            (None, false) => Err(Error::UnusedInput {
                index,
                shape: inputs[index].shape().clone(),
                why: match target {
                    Target::Unreachable => "does not require grad",
                    // (Reached by the graph: refused only now, see `grad`.)
                    _ => "gets no gradient from the ops between the output and it",
                },
            }),
        })
        .collect()
}

/// Which of `targets` a pass from `roots` would reach, found by walking the
/// recorded graph from the roots (no backward runs, nothing is consumed).
fn reached(roots: &[(&Tensor, Tensor)], targets: &[(Target, Option<Tensor>)]) -> Vec<bool> {
    let mut reached = vec![false; targets.len()];
    let mut left = targets.len();
    let mut mark = |reached: &mut [bool], hit: &dyn Fn(&Target) -> bool| {
        for ((target, _), r) in targets.iter().zip(reached.iter_mut()) {
            if !*r && hit(target) {
                *r = true;
                left -= 1;
            }
        }
        left == 0
    };
    let leaf = |slot: &Arc<GradSlot>| {
        let slot = Arc::as_ptr(slot);
        move |t: &Target| matches!(t, Target::Leaf(s) if Arc::as_ptr(s) == slot)
    };
    let mut seen: HashSet<*const Node> = HashSet::new();
    let mut stack: Vec<&Node> = Vec::new();
    for (root, _) in roots {
        match root.autograd() {
            Autograd::Leaf(slot) => {
                mark(&mut reached, &leaf(slot));
            }
            a => {
                if let Some(node) = a.node()
                    && seen.insert(node)
                {
                    stack.push(node);
                }
            }
        }
    }
    while let Some(node) = stack.pop() {
        let this: *const Node = node;
        if mark(
            &mut reached,
            &|t| matches!(t, Target::Node(n) if Arc::as_ptr(n) == this),
        ) {
            break;
        }
        for input in &node.inputs {
            match &input.edge {
                Edge::None => {}
                Edge::Leaf(slot) => {
                    if mark(&mut reached, &leaf(slot)) {
                        return reached;
                    }
                }
                Edge::Node(next) => {
                    // A node that only this edge holds (no other consumer, no
                    // tensor) has no other way in: it needs no entry in `seen`
                    // (the chain of a loop whose intermediates were dropped walks
                    // without hashing). At worst a race visits a node twice.
                    if Arc::strong_count(next) == 1 || seen.insert(Arc::as_ptr(next)) {
                        stack.push(next);
                    }
                }
            }
        }
    }
    reached
}

fn run(
    roots: &[(&Tensor, Tensor)],
    opts: &BackwardOptions,
    dest: &mut dyn GradDestination,
) -> Result<()> {
    // Every root is checked before any gradient moves.
    if roots.iter().any(|(root, _)| !root.requires_grad()) {
        return Err(Error::NoGradRoot);
    }
    // Backward formulas run in the dtypes their forward chose (a node's saved
    // tensors are already converted), never converted again by an autocast scope
    // the pass is called in (as PyTorch recommends).
    crate::autocast::disabled(|| run_unconverted(roots, opts, dest))
}

/// [`run`] with autocast off.
fn run_unconverted(
    roots: &[(&Tensor, Tensor)],
    opts: &BackwardOptions,
    dest: &mut dyn GradDestination,
) -> Result<()> {
    grad_mode::with_backward_mode(opts.create_graph, || {
        let mut dest = LeafSums {
            dest,
            held: Vec::new(),
            index: HashMap::new(),
        };
        let pass = Pass::start();
        let _running = OnThisThread::enter(pass);
        // (Outlive the queue, which borrows them and the nodes they reach.)
        let root_nodes: Vec<Option<Arc<Node>>> =
            roots.iter().map(|(r, _)| r.autograd().node_arc()).collect();
        let mut ready = Queue(BinaryHeap::new());
        for ((root, seed), node) in roots.iter().zip(&root_nodes) {
            match root.autograd() {
                Autograd::None => return Err(Error::NoGradRoot),
                Autograd::Leaf(slot) => dest.leaf(slot, seed.clone(), opts.create_graph)?,
                Autograd::Interior(_) => {
                    let node = node.as_ref().ok_or(Error::NoGradRoot)?;
                    // Queued as soon as it is claimed: on an error the queue's drop
                    // releases it.
                    if let Claim::New = claim(node, pass)? {
                        ready.0.push(Ready(node));
                    }
                    // SAFETY: this pass holds the node's claim.
                    let grad = unsafe { node.grad.get() };
                    *grad = Some(match grad.take() {
                        Some(acc) => add(acc, seed.clone(), opts.create_graph)?,
                        None => seed.clone(),
                    });
                }
            }
        }
        drain(&mut ready, pass, opts, &mut dest)?;
        dest.flush(opts.create_graph)
    })
}

/// The nodes a pass has claimed and not run yet. Whatever is left when it goes (after
/// an error, or a panic in an op's backward) is released: no gradient buffer or claim
/// outlives the pass, so the graph stays usable (e.g. with `retain_graph`).
struct Queue<'r>(BinaryHeap<Ready<'r>>);

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        for Ready(node) in self.0.drain() {
            // SAFETY: the pass holds the claim of every node in its queue.
            let grad = unsafe { node.grad.get() }.take();
            drop(grad);
            release(node);
        }
    }
}

/// Releases a popped node's claim however its backward ends (returns or unwinds).
struct Running<'a>(&'a Node);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        release(self.0);
    }
}

fn drain<'r>(
    ready: &mut Queue<'r>,
    pass: Pass,
    opts: &BackwardOptions,
    dest: &mut LeafSums<'_>,
) -> Result<()> {
    while let Some(Ready(node)) = ready.0.pop() {
        let step = {
            let _running = Running(node);
            run_node(node, opts, dest)
        };
        // (Taken from a slice of the gradients: a smallvec's by-value iterator asks
        // where its elements live at every step.)
        let mut grads = step?;
        for (input, grad) in node.inputs.iter().zip(grads.iter_mut()) {
            let Some(grad) = grad.take() else { continue };
            match &input.edge {
                Edge::None => {}
                Edge::Leaf(slot) => dest.leaf(slot, grad, opts.create_graph)?,
                Edge::Node(next) => {
                    // Claimed first: a node another pass holds is not touched. A node
                    // this pass claims is queued at once, so that on an error below
                    // the queue's drop releases it.
                    if let Claim::New = claim(next, pass)? {
                        ready.0.push(Ready(next));
                    }
                    // SAFETY: claimed by this pass just above.
                    let pending = unsafe { next.grad.get() };
                    *pending = Some(match pending.take() {
                        Some(acc) => add(acc, grad, opts.create_graph)?,
                        None => grad,
                    });
                }
            }
        }
    }
    Ok(())
}

/// What a node holds for its backward, taken out of it for one run.
struct Taken {
    /// The gradient of the node's output (summed over its uses).
    grad: Tensor,
    /// The inputs the op saved.
    saved: SmallVec<[Option<Tensor>; 2]>,
    /// The output, when the op saved it.
    output: Option<Tensor>,
    /// The output's hooks (a copy, run without the lock) and whether it retains
    /// its gradient.
    extras: Option<(Option<HookList>, bool)>,
}

/// Runs one node's backward and returns one checked gradient per input.
fn run_node(node: &Arc<Node>, opts: &BackwardOptions, dest: &mut LeafSums<'_>) -> Result<Grads> {
    let name = node.name();
    let Some(Taken {
        grad,
        mut saved,
        output,
        extras,
    }) = take_for_backward(node, opts)?
    else {
        return Ok(Grads::new());
    };
    let grad_out = match extras {
        None => grad,
        Some((hooks, retains)) => hook_node_output(node, grad, hooks, retains)?,
    };
    dest.node_output(node, &grad_out);
    // Which inputs want a gradient, on the stack for the usual small arity.
    let mut needs_buf = [false; 8];
    let needs_vec: Vec<bool>;
    let needs: &[bool] = if node.inputs.len() <= needs_buf.len() {
        for (n, i) in needs_buf.iter_mut().zip(&node.inputs) {
            *n = i.edge.needs_grad();
        }
        &needs_buf[..node.inputs.len()]
    } else {
        needs_vec = node.inputs.iter().map(|i| i.edge.needs_grad()).collect();
        &needs_vec
    };
    let anchor = opts
        .create_graph
        .then(|| anchor_candidate(&grad_out, &saved, output.as_ref()))
        .flatten();
    let grad_out_id = grad_out.id();
    // The context owns the gradient and the saved tensors: a backward that takes
    // them (`grad: Tensor` in the macro) may write its results into their buffers.
    // Whatever it leaves goes when the context does: without retain_graph the node
    // no longer holds anything, and these were the last handles unless the caller
    // keeps the tensors.
    let mut ctx = BackwardContext {
        op: name,
        grad: Some(grad_out),
        saved: &mut saved[..],
        output,
        needs,
        inputs: &node.inputs,
        taken: 0,
        output_taken: false,
    };
    let before = anchor.as_ref().map(|_| crate::graph::graph_use());
    let result = node.op.backward(&mut ctx);
    drop(ctx);
    drop(saved);
    let mut grads = result.map_err(|e| match e {
        Error::NotDifferentiable { .. } => e,
        e => e.in_op(name),
    })?;
    if let Some((anchor, before)) = anchor.zip(before) {
        mark_left_graph(node, anchor, before, grad_out_id, &mut grads);
    }
    check_grads(node, opts, &mut grads)?;
    Ok(grads)
}

/// Takes the node's gradient, saved tensors, output and the output's hooks for a
/// run of its backward (leaving copies when the graph is retained); `None` when
/// no gradient reached it. A node that saved something and was run already
/// without `retain_graph` is [`Error::GraphConsumed`] (one that saved nothing
/// lost nothing: a second pass through it works).
#[inline]
fn take_for_backward(node: &Arc<Node>, opts: &BackwardOptions) -> Result<Option<Taken>> {
    // SAFETY: the node was popped from this pass's queue: the pass holds its claim.
    let grad = unsafe { node.grad.get() }.take();
    let entry = node.entry;
    // (Read and written by the pass holding the claim.)
    let consumed = || node.consumed.store(true, AtomicOrdering::Relaxed);
    if !entry.saves_any() && !node.has_extras.load(AtomicOrdering::Acquire) {
        // Nothing under the lock to take: no saved tensor, hook or kept gradient.
        let Some(grad) = grad else {
            return Ok(None);
        };
        if !opts.retains() {
            consumed();
        }
        return Ok(Some(Taken {
            grad,
            saved: node.inputs.iter().map(|_| None).collect(),
            output: None,
            extras: None,
        }));
    }
    let mut state = node.lock();
    if node.consumed.load(AtomicOrdering::Relaxed) && entry.saves_any() {
        return Err(Error::GraphConsumed { op: node.name() });
    }
    let Some(grad) = grad else {
        return Ok(None);
    };
    let producer = opts.create_graph.then_some(node);
    let output = state.saved_output.as_ref().map(|s| s.to_tensor(producer));
    let extras = state.extras.as_ref().map(|e| {
        let hooks = (!e.hooks.is_empty()).then(|| e.hooks.clone());
        (hooks, e.retains_grad)
    });
    let saved = if opts.retains() {
        state.saved.clone()
    } else {
        consumed();
        state.saved_output = None;
        std::mem::take(&mut state.saved)
    };
    Ok(Some(Taken {
        grad,
        saved,
        output,
        extras,
    }))
}

/// Under create_graph, a backward that was given tensors requiring grad may
/// still return gradients that do not: their second derivative is then zero.
/// That is true when they were computed in the graph from constants (relu's
/// `grad * mask` or div's `grad / c` with a constant seed, written in place or
/// not), and false when the backward left the graph: it called an op with
/// recording off on a tensor that requires grad (`no_grad(|| x * x)`), or called
/// no op with recording on at all (raw kernels, `compute`, host values). Such
/// gradients get a node that fails the next backward through them, naming the
/// op. This picks the candidate anchor of that node, before backward runs, as
/// backward may take the tensors.
fn anchor_candidate(
    grad: &Tensor,
    saved: &[Option<Tensor>],
    output: Option<&Tensor>,
) -> Option<Tensor> {
    std::iter::once(grad)
        .chain(saved.iter().flatten())
        .chain(output)
        .find(|t| t.requires_grad())
        .cloned()
}

/// After a backward under create_graph (see [`anchor_candidate`]): when it left
/// the graph (recorded nothing, or something escaped recording since `before`),
/// each gradient that does not require grad gets a node over `anchor` that fails
/// the next backward through it. (A backward may pass its incoming gradient,
/// `grad_out_id`, through unchanged: the identity has no second derivative to
/// lose.)
#[cold]
fn mark_left_graph(
    node: &Arc<Node>,
    anchor: Tensor,
    before: GraphUse,
    grad_out_id: TensorId,
    grads: &mut Grads,
) {
    let after = crate::graph::graph_use();
    let left = after.escaped != before.escaped || after.recorded == before.recorded;
    if !left {
        return;
    }
    for grad in grads.iter_mut().flatten() {
        if !grad.requires_grad() && grad.id() != grad_out_id {
            *grad = crate::graph::record_not_differentiable(node, &anchor, grad.clone());
        }
    }
}

/// Checks a backward's gradients against the node's inputs: one per input, each
/// of its input's dtype and device, and of its shape or one that broadcasting the
/// input to the output explains (summed back to the input's shape here).
/// Gradients for inputs that need none are dropped; with anomaly mode on, each
/// is checked for NaN and infinity.
#[inline]
fn check_grads(node: &Node, opts: &BackwardOptions, grads: &mut Grads) -> Result<()> {
    let name = node.name();
    if grads.len() != node.inputs.len() {
        return Err(Error::GradientCount {
            op: name,
            expected: node.inputs.len(),
            got: grads.len(),
        });
    }
    for (i, (input, slot)) in node.inputs.iter().zip(grads.iter_mut()).enumerate() {
        if !input.edge.needs_grad() {
            *slot = None;
        }
        let Some(grad) = slot else { continue };
        if grad.dtype() != input.dtype
            && grad.device() == input.device
            && grad.dtype().is_float()
            && input.dtype.is_float()
        {
            // An op whose operands had several dtypes computed in their common one
            // (promotion): each gradient goes back to its input's dtype.
            *grad = cast_grad(grad, input.dtype, opts)?;
        }
        if grad.dtype() != input.dtype || grad.device() != input.device {
            return Err(Error::GradientKind {
                op: name,
                input: i,
                dtype: input.dtype,
                device: input.device,
                got_dtype: grad.dtype(),
                got_device: grad.device(),
            });
        }
        if grad.shape() != &input.shape {
            *grad = reduce_grad(node, opts, i, grad)?;
        }
        if crate::anomaly::is_enabled() {
            crate::anomaly::check(node, i, grad)?;
        }
    }
    Ok(())
}

/// `grad` converted to `dtype`: recorded (`to_dtype`) when the backward pass is.
#[cold]
fn cast_grad(grad: &Tensor, dtype: DType, opts: &BackwardOptions) -> Result<Tensor> {
    if opts.create_graph {
        crate::primitives::to_dtype(grad, dtype)
    } else {
        compute::cast(grad, dtype)
    }
}

/// Input `i`'s gradient `grad`, of another shape than the input's, summed back to
/// it, when broadcasting explains the difference; else [`Error::BadGradient`].
#[cold]
fn reduce_grad(node: &Node, opts: &BackwardOptions, i: usize, grad: &Tensor) -> Result<Tensor> {
    let input = &node.inputs[i];
    let bad = || Error::BadGradient {
        op: node.name(),
        input: i,
        expected: input.shape.clone(),
        got: grad.shape().clone(),
        output: Box::new(node.output_shape.clone()),
    };
    if !reduces_to(grad.shape(), &input.shape, &node.output_shape) {
        return Err(bad());
    }
    let reduced = if opts.create_graph {
        crate::primitives::sum_to_shape(grad, input.shape.clone())
    } else {
        compute::sum_to_shape(grad, &input.shape)
    };
    reduced.map_err(|_| bad())
}

/// The gradient of a node's output after the output's hooks (see
/// `Tensor::register_hook`), kept in the node when the output retains its gradient
/// (`Tensor::retain_grad`).
fn hook_node_output(
    node: &Node,
    grad: Tensor,
    hooks: Option<HookList>,
    retains: bool,
) -> Result<Tensor> {
    let grad = match hooks {
        Some(hooks) => hooks.run(grad, &|| {
            format!("the output of `{}` ({})", node.name(), node.output_id)
        })?,
        None => grad,
    };
    if retains {
        // A constant: a recorded gradient kept in the node would hold the graph
        // that holds the node.
        let kept = grad.detach();
        let old = node.with_extras(|e| e.retained.take());
        let sum = match old {
            None => kept,
            Some(acc) => compute::accumulate(acc, kept)?,
        };
        node.with_extras(|e| e.retained = Some(sum));
    }
    Ok(grad)
}

/// True when a gradient of shape `grad` for an input of shape `input` differs from
/// it only by what broadcasting the input to the op's `output` added: leading axes,
/// and axes where the input has size 1, each of the output's size there (axes of
/// size 1 are harmless and allowed anywhere). The engine sums those axes away;
/// any other shape is a wrong backward, not something to sum silently.
fn reduces_to(grad: &Shape, input: &Shape, output: &Shape) -> bool {
    let (g, i, o) = (grad.dims(), input.dims(), output.dims());
    if g.len() < i.len() {
        return false;
    }
    (0..g.len()).all(|k| {
        let gd = g[g.len() - 1 - k];
        let id = (k < i.len()).then(|| i[i.len() - 1 - k]);
        let od = (k < o.len()).then(|| o[o.len() - 1 - k]);
        match id {
            Some(d) if d == gd => true,
            Some(1) | None => gd == 1 || od == Some(gd),
            Some(_) => false,
        }
    })
}

impl Tensor {
    /// Runs backward from this scalar tensor: every leaf that requires grad and that
    /// this tensor depends on accumulates its gradient (read it with [`Tensor::grad`]).
    /// The graph's saved tensors are released; a second backward through it is an error.
    ///
    /// ```
    /// use autograd::prelude::*;
    /// # fn main() -> Result<()> {
    /// autograd::init()?;
    /// let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0], [3])?.with_requires_grad(true);
    /// let y = x.square()?.sum_all()?; // y = Σ x²
    /// y.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [2.0, 4.0, 6.0]); // dy/dx = 2x
    ///
    /// // Gradients accumulate across passes until cleared.
    /// x.square()?.sum_all()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [4.0, 8.0, 12.0]);
    /// x.zero_grad();
    /// assert!(x.grad().is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn backward(&self) -> Result<()> {
        backward(self, BackwardOptions::default())
    }

    /// [`Tensor::backward`] with options: a seed for a non-scalar tensor, keeping the
    /// graph, recording the backward pass.
    pub fn backward_with(&self, opts: BackwardOptions) -> Result<()> {
        backward(self, opts)
    }
}

/// Clears the gradients accumulated in `params`.
pub fn zero_grad(params: &[&Tensor]) {
    for p in params {
        p.zero_grad();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Device, memory};

    /// A leaf seeded with itself: the seed reaches the leaf's slot unchanged.
    fn seed_a_leaf_with_itself(create_graph: bool) -> Result<isize> {
        let before = memory::thread_stats(Device::Cpu).live_bytes;
        {
            let z = Tensor::full([1000], 1.5, DType::F64)?.with_requires_grad(true);
            let opts = BackwardOptions::default()
                .create_graph(create_graph)
                .seed(z.clone());
            z.backward_with(opts)?;
            let g = z.grad().expect("the root leaf gets its seed");
            assert_eq!(g.to_vec::<f64>()?, vec![1.5; 1000]);
            assert_eq!(
                g.requires_grad(),
                create_graph,
                "an unrecorded gradient is a constant"
            );
        }
        Ok(memory::thread_stats(Device::Cpu).live_bytes - before)
    }

    #[test]
    fn a_seed_stored_in_a_leaf_does_not_keep_the_leaf_alive() -> Result<()> {
        assert_eq!(seed_a_leaf_with_itself(false)?, 0, "leaked (unrecorded)");
        assert_eq!(seed_a_leaf_with_itself(true)?, 0, "leaked (create_graph)");
        Ok(())
    }
}
