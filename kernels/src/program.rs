//! The elementwise program both devices run: a list of [`Step`]s over leaves (buffers
//! with a layout broadcast to one output shape), each an op over earlier steps and
//! leaves, and results ([`Sink`]s) that store or sum a step's values. The CPU runs it
//! block by block (`cpu::fused`), a GPU as one generated kernel (`cuda::fused`);
//! [`check_program`] validates it the same way before either runs it.

use crate::{BinaryOp, KernelError, Layout, Result, UnaryOp};
use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

/// An elementwise kernel a chain can call on one block: `out` gets `f(ins[..][i])`
/// appended for every `i` of the operands (slices of one length). The generated
/// ops implement it with their kernel.
pub trait BlockKernel: std::any::Any + Send + Sync {
    /// The op's name (shown where the chain is explained).
    fn name(&self) -> &'static str;
    /// How a fused CUDA kernel computes one element of it.
    fn cuda(&self) -> CudaCall;
    /// The computation on `f32` operands.
    fn eval_f32(&self, ins: &[&[f32]], out: &mut Vec<f32>);
    /// The computation on `f64` operands.
    fn eval_f64(&self, ins: &[&[f64]], out: &mut Vec<f64>);

    /// Whether this kernel computes a first derivative `g · ∂f/∂x_a` of the
    /// function `value` computes (then [`Self::eval_pair_f32`] computes both in one
    /// loop). The default: no.
    fn derivative_of(&self, value: &dyn BlockKernel) -> bool {
        let _ = value;
        false
    }

    /// For a first derivative `g · ∂f/∂x_a` of the function `value` computes (see
    /// [`Self::derivative_of`]): the two in one loop, `f` appended to `v` and this
    /// kernel's result to `d`, the same bits as each alone. `false`, and nothing
    /// appended, when this kernel is not such a derivative of `value` (the default).
    fn eval_pair_f32(
        &self,
        value: &dyn BlockKernel,
        ins: &[&[f32]],
        v: &mut Vec<f32>,
        d: &mut Vec<f32>,
    ) -> bool {
        let _ = (value, ins, v, d);
        false
    }

    /// [`Self::eval_pair_f32`] on `f64` operands.
    fn eval_pair_f64(
        &self,
        value: &dyn BlockKernel,
        ins: &[&[f64]],
        v: &mut Vec<f64>,
        d: &mut Vec<f64>,
    ) -> bool {
        let _ = (value, ins, v, d);
        false
    }
}

/// A generated op's per-element CUDA function, as a fused kernel calls it:
/// `<name>_at<T>(what, x0, x1, x2, x3, g, <name>_make(p0, p1, p2, p3))`, defined by
/// `source` (compiled after `generated::CUDA_PRELUDE`).
#[derive(Clone, Copy, Debug)]
pub struct CudaCall {
    /// The prefix of the functions (`<name>_at`, `<name>_make`).
    pub name: &'static str,
    /// The full path of the op whose program the functions are in
    /// (`ElementwiseKernel::program`): a chain's kernel includes each program once,
    /// in a namespace of its own, so that ops of the same name from two crates
    /// both keep their own functions.
    pub program: &'static str,
    /// The program's source.
    pub source: &'static str,
    /// What to compute (`generated::Eval::code`).
    pub what: u64,
    /// The op's parameters.
    pub params: [f64; crate::generated::MAX_PARAMS],
    /// Inputs of the op's function; a derivative reads one more operand, `g`.
    pub arity: usize,
    /// Whether it computes a derivative (then the last operand is `g`).
    pub derivative: bool,
}

/// One op of a chain.
#[derive(Clone)]
pub enum FusedOp {
    /// A fixed unary kernel (not `Fill` or `Copy`).
    Unary(UnaryOp),
    /// A fixed binary kernel.
    Binary(BinaryOp),
    /// A kernel of its own (a generated op, or one of its derivatives).
    Kernel(Arc<dyn BlockKernel>),
}

impl FusedOp {
    /// The op's name.
    pub fn name(&self) -> &'static str {
        match self {
            FusedOp::Unary(op) => op.name(),
            FusedOp::Binary(op) => op.name(),
            FusedOp::Kernel(k) => k.name(),
        }
    }
}

impl fmt::Debug for FusedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a step reads an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// Leaf `k` of the program.
    Leaf(usize),
    /// The value of an earlier step.
    Step(usize),
}

/// One op of the program and its operands.
#[derive(Clone, Debug)]
pub struct Step {
    /// What the step computes.
    pub op: FusedOp,
    /// Its operands, in the op's order.
    pub args: SmallVec<[Operand; 4]>,
}

/// What becomes of the last step's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sink {
    /// Written out: a contiguous buffer of the output's length.
    Store,
    /// Summed: a buffer of one element, the sum the reduction would compute
    /// over the stored values.
    Sum,
}

/// Checks a program of `steps` over `leaves` (buffers of any device, each with its
/// view) before it runs, on the CPU or a GPU: it has steps and results, each step
/// reads leaves it has and earlier steps, as many as its op takes, each result is
/// one of its steps, and each leaf views `n` elements. Returns how often each step
/// is read, by later steps and by results.
pub fn check_program<S>(
    steps: &[Step],
    leaves: &[(S, &Layout)],
    n: usize,
    outputs: &[(usize, Sink)],
) -> Result<Vec<usize>> {
    if steps.is_empty() || outputs.is_empty() {
        return Err(KernelError::Internal(
            "a fused chain of no steps or no results".into(),
        ));
    }
    if let Some(&(j, _)) = outputs.iter().find(|(j, _)| *j >= steps.len()) {
        return Err(KernelError::Internal(format!(
            "a fused chain of {} steps has a result at step {j}",
            steps.len()
        )));
    }
    if let Some((_, l)) = leaves.iter().find(|(_, l)| l.numel() != n) {
        return Err(KernelError::Internal(format!(
            "a fused chain over {n} elements reads a view of {}",
            l.shape()
        )));
    }
    // Steps read by later steps, or by more than one result.
    let mut read = vec![0usize; steps.len()];
    for (j, step) in steps.iter().enumerate() {
        let bad = step.args.iter().any(|a| match *a {
            Operand::Leaf(k) => k >= leaves.len(),
            Operand::Step(i) => i >= j,
        });
        let want = match &step.op {
            FusedOp::Unary(_) => Some(1),
            FusedOp::Binary(_) => Some(2),
            FusedOp::Kernel(_) => None,
        };
        if bad || want.is_some_and(|w| w != step.args.len()) {
            return Err(KernelError::Internal(format!(
                "step {j} of a fused chain ({}) reads {:?}",
                step.op.name(),
                step.args
            )));
        }
        for a in &step.args {
            if let Operand::Step(i) = *a {
                read[i] += 1;
            }
        }
    }
    for &(j, _) in outputs {
        read[j] += 1;
    }
    Ok(read)
}
