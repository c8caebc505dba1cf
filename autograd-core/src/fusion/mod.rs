//! Fused elementwise chains: elementwise ops whose arithmetic is deferred until
//! their values are read, then run as one pass over memory.
//!
//! An elementwise op (the arithmetic primitives, their scalar forms, and every op
//! generated from a scalar function, with its derivatives) over at least
//! [`FusionConfig::min_elements`] elements does not compute its output. It checks
//! everything it would check and returns a tensor whose storage is *deferred*: the
//! op and the storages it reads. The program stays eager in all it can observe:
//! shapes, dtypes and every error are known at the call that causes them, and the
//! values are there whenever something reads them. What is deferred is only the
//! moment the arithmetic runs.
//!
//! The first read of a deferred storage (a matmul, a copy, `to_vec`, a view's
//! kernel, a write) plans the chain: the deferred ops it reads directly
//! (contiguous, whole), and the ones those read, down to storages that hold values.
//! The chain runs as one loop over cache-sized blocks
//! (`autograd_kernels::cpu::fused`): each leaf is read once and one result is
//! written. A sum over all of a deferred storage's elements is deferred as well:
//! when read, it runs the chain with the sum at its end and writes nothing (a loss
//! nobody reads, as in `loss.backward()`, is never computed).
//!
//! Several deferred values over the same elements can run as one pass
//! ([`realize_all`]): a loss and its gradients read the inputs they share once.
//! Backward arranges it by itself: the loss it started from and the gradients it
//! left in the leaves, when deferred, are computed together when the first of
//! them is read (the loss, printed; or a gradient, read by an optimizer step).
//!
//! Each step computes what the op's own kernel computes, element by element, so a
//! fused result is the same bits as the unfused one (and a fused sum adds in the
//! unfused sum's order). A deferred op that reads another one deferred, which is
//! in turn saved for backward, computes it again when it is read: what is held is
//! the recipe, not the values, so nothing is allocated for it in between.
//!
//! Chains are bounded ([`MAX_DEPTH`] ops deep, [`MAX_STEPS`] ops in all): an op
//! that would make a longer one first computes the deferred storages it reads.
//! Outputs over [`MAX_ELEMENTS`] are computed at the call: the one error a deferred
//! op could otherwise raise late is a buffer too large to allocate.
//!
//! On a GPU a chain runs as one CUDA kernel generated from its steps, compiled by
//! NVRTC at the first use of the chain's shape and cached (`cuda_kernel`, with the
//! `cuda` feature, shows its source). A sum of a deferred GPU chain is deferred
//! too: its kernel is laid out as the sum reduction is, each thread adding the
//! elements that reduction's thread would, in its order, so the sum is the bits
//! of the chain stored, then summed. Chains over the same elements realized
//! together (a loss and its gradients) run as one kernel with several results.
//! Values are the same bits as the ops' own kernels give (checked on the emulated
//! device; no real GPU has run it yet).
//!
//! Fusion is on by default. `AUTOGRAD_FUSION=0` (or `off`) turns it off for the
//! process, `AUTOGRAD_FUSION_MIN=<elements>` sets the size from which ops defer,
//! and [`with_config`] changes both for one thread for the length of a call.

mod deferred;
mod plan;
mod realize;

use crate::storage::Storage;
use crate::{DType, Device, Shape};
use autograd_kernels::program::FusedOp;
use autograd_kernels::{Layout, UnaryOp};
use deferred::Pending;
use smallvec::SmallVec;
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

pub use autograd_kernels::program::BlockKernel;
pub use deferred::Fusion;
pub(crate) use deferred::Mark;

/// Most deferred ops on one path of a chain.
pub const MAX_DEPTH: u32 = 16;

/// Most deferred ops in one chain (counted with repeats: a bound, not the count).
pub const MAX_STEPS: u32 = 64;

/// When elementwise ops defer their arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusionConfig {
    /// Whether they do at all.
    pub enabled: bool,
    /// The fewest output elements for which they do: below it an op runs at once
    /// (its data is in cache anyway, and a chain costs more to plan than it saves).
    pub min_elements: usize,
}

impl FusionConfig {
    /// The default fewest elements: 16 KiB of `f32`.
    pub const DEFAULT_MIN_ELEMENTS: usize = 4096;

    /// Fusion off: every op computes its output when called.
    pub const OFF: FusionConfig = FusionConfig {
        enabled: false,
        min_elements: FusionConfig::DEFAULT_MIN_ELEMENTS,
    };

    /// The process's settings: on, from [`Self::DEFAULT_MIN_ELEMENTS`], unless
    /// `AUTOGRAD_FUSION` is `0`, `off` or `false`, or `AUTOGRAD_FUSION_MIN` gives
    /// another size (a number of elements).
    pub fn from_env() -> FusionConfig {
        let off = std::env::var("AUTOGRAD_FUSION")
            .map(|v| {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "0" | "off" | "false"
                )
            })
            .unwrap_or(false);
        let min_elements = std::env::var("AUTOGRAD_FUSION_MIN")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(FusionConfig::DEFAULT_MIN_ELEMENTS);
        FusionConfig {
            enabled: !off,
            min_elements,
        }
    }
}

thread_local! {
    static LOCAL: Cell<Option<FusionConfig>> = const { Cell::new(None) };
}

/// The settings elementwise ops called on this thread use now.
pub fn config() -> FusionConfig {
    static PROCESS: OnceLock<FusionConfig> = OnceLock::new();
    LOCAL
        .try_with(Cell::get)
        .ok()
        .flatten()
        .unwrap_or_else(|| *PROCESS.get_or_init(FusionConfig::from_env))
}

/// Runs `f` with `config` for the ops this thread calls (the previous settings
/// come back afterwards, also if `f` panics). Values computed inside are the same
/// either way: this changes when arithmetic runs, not what it computes.
///
/// ```
/// use autograd_core::fusion::{FusionConfig, with_config};
/// # use autograd_core::Tensor;
/// let x = Tensor::from_vec(vec![1.0f32; 8192], [8192]).unwrap();
/// let y = with_config(FusionConfig::OFF, || (&x * &x).unwrap());
/// assert!(!y.storage().is_deferred());
/// ```
pub fn with_config<R>(config: FusionConfig, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<FusionConfig>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = LOCAL.try_with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(LOCAL.try_with(|c| c.replace(Some(config))).ok().flatten());
    f()
}

/// Most output elements of a deferred op. A larger output (over 1 GiB of `f32`)
/// is computed at the call, so that a buffer the machine cannot hold is an error
/// there, not at a later read.
pub const MAX_ELEMENTS: usize = 1 << 28;

/// An elementwise op, as the decision to defer it (see [`defers`]) sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Elementwise {
    /// A fixed unary op.
    Unary(UnaryOp),
    /// A fixed binary op.
    Binary,
    /// An op generated from a scalar function (its value or a derivative).
    Generated,
}

/// The decision the compute layer asks for every elementwise op it is about to
/// run: whether `op`, with `n` output elements, defers its arithmetic (the caller
/// then checks what the op checks and calls [`defer`]) or runs now. It defers
/// when fusion is on for this thread, `n` is at least the configured size and at
/// most [`MAX_ELEMENTS`]; a fill or a copy never does. Inlined: an op too small to
/// defer pays a comparison and no call.
#[inline]
pub(crate) fn defers(op: Elementwise, n: usize) -> bool {
    if let Elementwise::Unary(UnaryOp::Fill(_) | UnaryOp::Copy) = op {
        return false;
    }
    if n == 0 || n > MAX_ELEMENTS {
        return false;
    }
    let c = config();
    c.enabled && n >= c.min_elements
}

/// `op` over `inputs` (each storage with its layout broadcast to `shape`; all on
/// one device, of `dtype`) as a deferred storage. The caller checked everything the
/// op checks and that [`defers`] holds. `None` when a deferred input could not be
/// computed where the chain had to be cut: the caller runs the op at once, which
/// reports it.
pub(crate) fn defer(
    op: FusedOp,
    inputs: SmallVec<[(Arc<Storage>, Layout); 2]>,
    shape: &Shape,
    dtype: DType,
) -> Option<Storage> {
    let device = inputs.first()?.0.device();
    // Floating chains; f16 and bf16 ones on the CPU only, whose programs round
    // every step's values to the dtype as the ops one by one do.
    let fuses = match dtype {
        DType::F32 | DType::F64 => true,
        DType::F16 | DType::BF16 => device == Device::Cpu,
        _ => false,
    };
    if !fuses {
        return None;
    }
    let chain = |inputs: &[(Arc<Storage>, Layout)]| {
        inputs.iter().fold((1u32, 1u32), |(depth, steps), (s, _)| {
            let (d, n) = deferred::chain(s);
            (depth.max(d + 1), steps.saturating_add(n))
        })
    };
    let (mut depth, mut steps) = chain(&inputs);
    if depth > MAX_DEPTH || steps > MAX_STEPS {
        // Cut the chain here: what this op reads is computed now.
        for (s, _) in &inputs {
            s.data().ok()?;
        }
        (depth, steps) = chain(&inputs);
    }
    let pending = Pending {
        op,
        mark: Arc::default(),
        inputs,
        depth,
        steps,
        sum_of: None,
    };
    Some(deferred::storage(pending, device, dtype, shape.numel()))
}

/// Computes the values of all of `tensors` that are deferred, together: chains
/// over the same number of elements (and dtype) run as one pass on the CPU, each
/// leaf they share read once and each step they share computed once. A deferred
/// sum counts the elements it sums.
///
/// This is how to get a loss and its gradients in one pass, as `value_and_grad`
/// does in JAX: backward never reads the loss, so after it both the loss and the
/// gradients are still deferred chains over the same inputs, and realizing them
/// one by one would read those inputs twice. (`Tensor::backward` groups the loss
/// with the gradients it leaves in the leaves, so that the first read of any of
/// them computes them all this way; `realize_all` says so explicitly, for any
/// set of tensors.)
///
/// ```
/// use autograd_core::{Shape, Tensor, fusion, primitives::sum_to_shape};
/// let x = Tensor::from_vec(vec![0.5f32; 8192], [8192]).unwrap().with_requires_grad(true);
/// let loss = sum_to_shape(&(&x * &x).unwrap(), Shape::from([])).unwrap();
/// loss.backward().unwrap();
/// let g = x.grad().unwrap();
/// assert!(loss.is_deferred() && g.is_deferred());
/// fusion::realize_all(&[&loss, &g]).unwrap();
/// assert!(!loss.is_deferred() && !g.is_deferred());
/// assert_eq!(loss.to_scalar::<f32>().unwrap(), 2048.0);
/// assert_eq!(g.to_vec::<f32>().unwrap(), vec![1.0; 8192]);
/// ```
///
/// Values not deferred are left as they are. On a GPU the chains run as one CUDA
/// kernel with a result per tensor, up to four; more are split into kernels that
/// fit. The only error is a buffer that cannot be allocated.
pub fn realize_all(tensors: &[&crate::Tensor]) -> crate::Result<()> {
    let held: SmallVec<[Arc<Storage>; 8]> = tensors.iter().map(|t| t.storage_arc()).collect();
    let storages: SmallVec<[&Storage; 8]> = held.iter().map(|s| &**s).collect();
    realize::realize(&storages)
}

/// Makes the deferred values of `storages` a group that is computed together,
/// as [`realize_all`] would, when the first of them is read. Backward groups the
/// loss with the gradients it leaves, so that whichever is read first (the loss,
/// printed, or a gradient, read by an optimizer) runs the loss and the gradients
/// as one pass over their inputs. Fewer than two deferred values make no group;
/// a storage joins one group at most.
pub(crate) fn read_together(storages: &[Arc<Storage>]) {
    realize::read_together(storages)
}

/// The sum of all the values of `s`, where they are deferred: itself deferred, it
/// runs the chain with the sum at its end when read, and nothing is stored.
/// `None` when the values are not deferred (or are a deferred sum already).
pub(crate) fn sum_all(s: &Storage) -> Option<Storage> {
    let p = deferred::pending(s)?;
    let sum = deferred::sum(&p, s.len())?;
    Some(deferred::storage(sum, s.device(), s.dtype(), 1))
}

/// Where the deferred op computing `s` records the kernel it runs in (`None`
/// when the values were not deferred, or are computed already).
pub(crate) fn mark(s: &Storage) -> Option<Arc<Mark>> {
    deferred::with_pending(s, |p| p.mark.clone())
}

/// The CUDA kernel that the deferred chain ending in `t` runs as on a GPU, as
/// `(name, source)`: the generated C++ NVRTC compiles (the same on any device:
/// inspect a CPU chain to see the kernel its GPU twin would run). `None` when `t`'s
/// values are not deferred. Nothing is computed, except values the chain reads
/// through a view (a broadcast of a deferred tensor), as running it would.
#[cfg(feature = "cuda")]
pub fn cuda_kernel(t: &crate::Tensor) -> Option<crate::Result<(String, String)>> {
    let s = t.storage();
    let p = deferred::pending(&s)?;
    Some(realize::cuda_source(&p, s.len(), s.dtype()))
}
