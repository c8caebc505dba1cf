//! Mixed precision as `torch.autocast`: inside an [`autocast`] scope, the ops that
//! gain from a narrow dtype (matrix products and convolutions) convert their
//! floating inputs to the scope's dtype (`f16` or `bf16`), and the ops that need
//! range or precision (softmax, losses, normalizations, sums and means) convert
//! `f16`/`bf16` inputs to `f32`. Everything else runs in its inputs' dtypes (mixed
//! dtypes promote as usual).
//!
//! The conversions are recorded ([`to_dtype`](fn@crate::primitives::to_dtype)), so the
//! gradients flow back in each input's own dtype: a parameter kept in `f32` gets an
//! `f32` gradient, while the product itself ran on `bf16` copies. Outside any scope
//! nothing changes, and the cost of an op call is one thread-local read.
//!
//! The state is per thread and nestable: a scope (or a [`AutocastGuard`]) sets the
//! dtype until it ends, then restores what was there, also when its closure
//! panics. [`disabled`] turns autocast off inside a scope (as
//! `torch.autocast(enabled=False)`), and an op's own forward always runs with it
//! off: only the op calls made by the program are converted, not those an op makes
//! to compute its result.
//!
//! Which op does what is [`policy`]: by registered name, so an op defined elsewhere
//! under one of these names follows the same rule. Call `backward` after the scope
//! (as PyTorch recommends): the backward of each op then runs in the dtypes its
//! forward used.
//!
//! ```
//! # use autograd_core::{autocast::{autocast, cast, CastPolicy}, DType, Tensor};
//! # fn main() -> autograd_core::Result<()> {
//! let w = Tensor::ones([2, 3], DType::F32)?.with_requires_grad(true);
//! let w16 = autocast(DType::BF16, || cast(&w, CastPolicy::Lower))?;
//! assert_eq!(w16.dtype(), DType::BF16); // a recorded conversion
//! assert_eq!(w16.grad_fn().unwrap().op_name(), "to_dtype");
//! assert_eq!(autograd_core::autocast::autocast_dtype(), None); // restored
//! # Ok(())
//! # }
//! ```

use crate::{DType, Error, Result, Tensor};
use std::cell::Cell;
use std::marker::PhantomData;

/// The thread's autocast state: the scope's dtype (`None`: off) and whether it is
/// suspended (inside [`disabled`] or an op's forward). Read once per op call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct State {
    dtype: Option<DType>,
    suspended: bool,
}

const OFF: State = State {
    dtype: None,
    suspended: false,
};

thread_local! {
    static STATE: Cell<State> = const { Cell::new(OFF) };
}

/// Whether an op called now is converted: inside a scope, not suspended.
#[inline]
pub(crate) fn converts() -> bool {
    let now = state();
    now.dtype.is_some() && !now.suspended
}

/// The state now; off when the thread-local is gone (thread exit).
#[inline]
fn state() -> State {
    STATE.try_with(Cell::get).unwrap_or(OFF)
}

/// Sets the state and returns what it was.
fn replace(new: State) -> State {
    STATE.try_with(|s| s.replace(new)).unwrap_or(OFF)
}

/// The dtype ops are converted to on this thread now: `Some(F16 | BF16)` inside an
/// [`autocast`] scope, `None` outside any or inside [`disabled`].
#[inline]
pub fn autocast_dtype() -> Option<DType> {
    let s = state();
    if s.suspended { None } else { s.dtype }
}

/// True inside an [`autocast`] scope on this thread (and not inside [`disabled`]).
#[inline]
pub fn is_autocast_enabled() -> bool {
    autocast_dtype().is_some()
}

/// An error unless `dtype` is one autocast converts to (`f16`, `bf16`).
fn check_dtype(dtype: DType) -> Result<()> {
    if dtype.is_half() {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "autocast",
            msg: format!(
                "autocast converts to a 16-bit float, got {dtype}; pass DType::BF16 or \
                 DType::F16 (for f32 everywhere, run without autocast or inside \
                 autocast::disabled)"
            ),
        })
    }
}

/// Restores the state it was made with when dropped (also on unwinding).
struct Restore(State);

impl Drop for Restore {
    fn drop(&mut self) {
        replace(self.0);
    }
}

/// Runs `f` with autocast to `dtype` (`DType::BF16` or `DType::F16`) on this
/// thread, as `with torch.autocast(..)`: inside, [`policy`] decides which ops run in
/// `dtype` and which in `f32`. Nestable (an inner scope's dtype wins until it ends);
/// the state is restored when `f` returns or panics. An error naming `autocast`
/// for any other dtype (then `f` does not run).
///
/// ```
/// # use autograd_core::{autocast::autocast, DType};
/// # fn main() -> autograd_core::Result<()> {
/// let inner = autocast(DType::BF16, || {
///     autocast(DType::F16, || Ok(autograd_core::autocast::autocast_dtype()))
/// })?;
/// assert_eq!(inner, Some(DType::F16));
/// assert!(autocast(DType::F32, || Ok(())).is_err());
/// # Ok(())
/// # }
/// ```
pub fn autocast<R>(dtype: DType, f: impl FnOnce() -> Result<R>) -> Result<R> {
    check_dtype(dtype)?;
    let _restore = Restore(replace(State {
        dtype: Some(dtype),
        suspended: false,
    }));
    f()
}

/// Runs `f` with autocast off on this thread (as `torch.autocast(enabled=False)`
/// inside a scope): every op runs in its inputs' dtypes. Restored after, also when
/// `f` panics.
pub fn disabled<R>(f: impl FnOnce() -> R) -> R {
    let now = state();
    if now.dtype.is_none() || now.suspended {
        return f();
    }
    let _restore = Restore(replace(State {
        suspended: true,
        ..now
    }));
    f()
}

/// Autocast to a dtype on this thread until dropped: the guard form of
/// [`autocast`], for code that cannot be a closure. Dropping it restores the
/// state it found, so drop nested guards in the reverse order of their making (a
/// scope does it by construction). It stays on the thread that made it (it is not
/// `Send`).
///
/// ```compile_fail
/// let guard = autograd_core::autocast::AutocastGuard::new(autograd_core::DType::BF16).unwrap();
/// std::thread::spawn(move || drop(guard));
/// ```
pub struct AutocastGuard {
    previous: State,
    _thread_bound: PhantomData<*const ()>,
}

impl AutocastGuard {
    /// Turns autocast to `dtype` on now (`DType::BF16` or `DType::F16`; an error
    /// naming `autocast` for any other).
    pub fn new(dtype: DType) -> Result<AutocastGuard> {
        check_dtype(dtype)?;
        let previous = replace(State {
            dtype: Some(dtype),
            suspended: false,
        });
        Ok(AutocastGuard {
            previous,
            _thread_bound: PhantomData,
        })
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        replace(self.previous);
    }
}

impl std::fmt::Debug for AutocastGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutocastGuard")
            .field("previous", &self.previous.dtype)
            .finish()
    }
}

/// What autocast does to an op's floating inputs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CastPolicy {
    /// Converted to the scope's dtype (`f16`/`bf16`): the products (`matmul`,
    /// `conv2d`).
    Lower,
    /// `f16`/`bf16` inputs converted to `f32` (wider ones kept): reductions,
    /// normalizations and losses.
    F32,
}

/// The ops converted to the scope's dtype.
const LOWER: &[&str] = &["matmul", "conv2d", "linear", "scaled_dot_product_attention"];

/// The ops that run in `f32` (as PyTorch's autocast "float32" list).
const F32: &[&str] = &[
    "softmax",
    "log_softmax",
    "cross_entropy",
    "mse_loss",
    "layer_norm",
    "sum_all",
    "sum",
    "mean_all",
    "mean",
    "logsumexp",
    "var",
    "std_dev",
    "cumsum",
    "prod",
    "cumprod",
];

/// What autocast does to the op registered as `op`: [`CastPolicy::Lower`] for
/// `matmul`, `conv2d`, `linear` and `scaled_dot_product_attention`; [`CastPolicy::F32`] for `softmax`,
/// `log_softmax`, `cross_entropy`, `mse_loss`, `layer_norm`, `sum_all`, `sum`,
/// `mean_all`, `mean`, `logsumexp`, `var`, `std_dev`, `cumsum`, `prod` and
/// `cumprod` (PyTorch's float32 list has the last two too); `None` (inputs as they
/// are) for every other op.
pub fn policy(op: &str) -> Option<CastPolicy> {
    if LOWER.contains(&op) {
        Some(CastPolicy::Lower)
    } else if F32.contains(&op) {
        Some(CastPolicy::F32)
    } else {
        None
    }
}

/// The dtype `x` is converted to under `policy` with the scope's `dtype`, if any:
/// only floating tensors are converted, and only when that changes their dtype.
fn target(x: &Tensor, policy: CastPolicy, dtype: DType) -> Option<DType> {
    let from = x.dtype();
    let to = match policy {
        CastPolicy::Lower if from.is_float() => dtype,
        CastPolicy::F32 if from.is_half() => DType::F32,
        _ => return None,
    };
    (to != from).then_some(to)
}

/// `x` converted (recorded, so its gradient comes back in `x`'s dtype) as
/// `policy` says under the current scope; `x` itself outside any scope, for a
/// tensor that is not floating, or when it has that dtype already. For
/// hand-written functions made of several ops (a bias added after a product),
/// which convert their other inputs the way the op does.
pub fn cast(x: &Tensor, policy: CastPolicy) -> Result<Tensor> {
    match autocast_dtype().and_then(|d| target(x, policy, d)) {
        Some(to) => crate::primitives::to_dtype(x, to),
        None => Ok(x.clone()),
    }
}

/// The inputs of the op registered as `op` converted as its [`policy`] says under
/// the current scope (recorded); `None` when nothing is to be converted (autocast
/// off, an op without a policy, inputs already in the right dtypes).
pub fn cast_inputs(op: &str, inputs: &[&Tensor]) -> Result<Option<Vec<Tensor>>> {
    let Some(dtype) = autocast_dtype() else {
        return Ok(None);
    };
    let Some(policy) = policy(op) else {
        return Ok(None);
    };
    if inputs.iter().all(|x| target(x, policy, dtype).is_none()) {
        return Ok(None);
    }
    inputs
        .iter()
        .map(|x| match target(x, policy, dtype) {
            Some(to) => crate::primitives::to_dtype(x, to).map_err(|e| e.in_op(op_name(op))),
            None => Ok((*x).clone()),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// `op` as a `'static` name for an error (the policy lists hold them).
fn op_name(op: &str) -> &'static str {
    LOWER
        .iter()
        .chain(F32)
        .find(|n| **n == op)
        .copied()
        .unwrap_or("autocast")
}

/// The call of the op registered as `op` on `inputs`, under autocast: `run` gets
/// the inputs converted as [`policy`] says (or `inputs` themselves) and runs with
/// autocast suspended, so that the ops it calls to compute its result are not
/// converted again. Outside any scope this is `run(inputs)` after one thread-local
/// read. This is what the op-calling path of the graph (`apply`) goes through.
#[inline]
pub fn dispatch<R>(
    op: &str,
    inputs: &[&Tensor],
    run: impl FnOnce(&[&Tensor]) -> Result<R>,
) -> Result<R> {
    if !converts() {
        return run(inputs);
    }
    dispatch_on(op, inputs, run)
}

/// [`dispatch`] inside a scope.
#[cold]
#[inline(never)]
fn dispatch_on<R>(
    op: &str,
    inputs: &[&Tensor],
    run: impl FnOnce(&[&Tensor]) -> Result<R>,
) -> Result<R> {
    let cast = cast_inputs(op, inputs)?;
    let refs: Vec<&Tensor>;
    let inputs = match &cast {
        Some(cast) => {
            refs = cast.iter().collect();
            &refs[..]
        }
        None => inputs,
    };
    disabled(|| run(inputs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(autocast_dtype(), None);
        autocast(DType::BF16, || {
            assert_eq!(autocast_dtype(), Some(DType::BF16));
            autocast(DType::F16, || {
                assert_eq!(autocast_dtype(), Some(DType::F16));
                disabled(|| assert_eq!(autocast_dtype(), None));
                Ok(())
            })?;
            assert_eq!(autocast_dtype(), Some(DType::BF16));
            Ok(())
        })
        .unwrap();
        assert_eq!(autocast_dtype(), None);
    }

    #[test]
    fn restored_after_a_panic() {
        let r = std::panic::catch_unwind(|| {
            autocast(DType::BF16, || -> Result<()> { panic!("inside") })
        });
        assert!(r.is_err());
        assert_eq!(autocast_dtype(), None);
    }

    #[test]
    fn guard_and_bad_dtype() {
        {
            let _g = AutocastGuard::new(DType::F16).unwrap();
            assert!(is_autocast_enabled());
        }
        assert!(!is_autocast_enabled());
        let e = AutocastGuard::new(DType::F64).unwrap_err().to_string();
        assert!(e.contains("autocast") && e.contains("BF16"), "{e}");
    }

    #[test]
    fn policies() {
        assert_eq!(policy("matmul"), Some(CastPolicy::Lower));
        assert_eq!(policy("cross_entropy"), Some(CastPolicy::F32));
        assert_eq!(policy("relu"), None);
        let x = Tensor::ones([2], DType::F32).unwrap();
        assert_eq!(cast(&x, CastPolicy::Lower).unwrap().dtype(), DType::F32);
        autocast(DType::BF16, || {
            assert_eq!(cast(&x, CastPolicy::Lower)?.dtype(), DType::BF16);
            assert_eq!(cast(&x, CastPolicy::F32)?.dtype(), DType::F32);
            let casted = cast_inputs("matmul", &[&x, &x])?.unwrap();
            assert!(casted.iter().all(|t| t.dtype() == DType::BF16));
            assert!(cast_inputs("relu", &[&x])?.is_none());
            Ok(())
        })
        .unwrap();
    }
}
