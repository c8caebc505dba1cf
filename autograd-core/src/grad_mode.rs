//! Whether ops are recorded: on by default, off inside [`no_grad`].

use std::cell::Cell;
use std::marker::PhantomData;

/// The thread's recording mode: `base` is set by scoped calls ([`enable_grad`],
/// [`no_grad`] and the engine), and every live [`NoGradGuard`] counts in `guards`.
/// Recording is on when `base` is and no guard is live. Counting (rather than each
/// guard restoring what it saw) makes guards correct whatever order they are
/// dropped in. `forwards` counts the live [`ForwardGuard`]s among the guards: the
/// forwards of op calls that are being recorded as one node. `watch` is on inside
/// a backward run with `create_graph` (and whatever runs inside it): only there is
/// it asked whether an op was called with recording off (see [`recording`]).
#[derive(Clone, Copy)]
struct Mode {
    base: bool,
    guards: u32,
    forwards: u32,
    watch: bool,
}

thread_local! {
    static MODE: Cell<Mode> = const {
        Cell::new(Mode {
            base: true,
            guards: 0,
            forwards: 0,
            watch: false,
        })
    };
}

/// In one read of the mode: whether ops called now are recorded, and whether a
/// call with recording off on a tensor that requires grad is to be counted as
/// leaving the graph (inside a `create_graph` backward, outside any op's forward).
#[inline]
pub(crate) fn recording() -> (bool, bool) {
    MODE.try_with(|m| {
        let m = m.get();
        let enabled = m.base && m.guards == 0;
        (enabled, !enabled && m.watch && m.forwards == 0)
    })
    .unwrap_or((false, false))
}

/// True when ops called on this thread now are recorded for backward.
pub fn is_grad_enabled() -> bool {
    MODE.with(|m| {
        let m = m.get();
        m.base && m.guards == 0
    })
}

/// Turns recording off on this thread until dropped. Guards may be dropped in any
/// order: recording is off while any of them lives (and comes back on when the last
/// one goes, unless a scope around them turned it off).
///
/// The guard stays on the thread that made it (it is not `Send`): dropped on another
/// thread, it would change the wrong thread's mode.
///
/// ```compile_fail
/// let guard = autograd_core::NoGradGuard::new();
/// std::thread::spawn(move || drop(guard));
/// ```
pub struct NoGradGuard {
    _thread_bound: PhantomData<*const ()>,
}

impl NoGradGuard {
    /// Turns recording off now; hold the guard for as long as it should stay off.
    /// Prefer [`no_grad`], which cannot outlive its closure.
    #[allow(clippy::new_without_default)]
    pub fn new() -> NoGradGuard {
        MODE.with(|m| {
            let mut mode = m.get();
            mode.guards = mode.guards.saturating_add(1);
            m.set(mode);
        });
        NoGradGuard {
            _thread_bound: PhantomData,
        }
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        let _ = MODE.try_with(|m| {
            let mut mode = m.get();
            mode.guards = mode.guards.saturating_sub(1);
            m.set(mode);
        });
    }
}

/// Recording off while an op's forward runs (`apply`): the op call is recorded as
/// one node afterwards, so what its forward computes from tensors that require
/// grad has not left the graph (see [`recording`]).
pub(crate) struct ForwardGuard {
    _thread_bound: PhantomData<*const ()>,
}

impl ForwardGuard {
    /// One guard among [`NoGradGuard`]'s, counted as a forward too (one update of
    /// the mode: this runs once per op call).
    #[inline]
    pub(crate) fn new() -> ForwardGuard {
        MODE.with(|m| {
            let mut mode = m.get();
            mode.guards = mode.guards.saturating_add(1);
            mode.forwards = mode.forwards.saturating_add(1);
            m.set(mode);
        });
        ForwardGuard {
            _thread_bound: PhantomData,
        }
    }
}

impl Drop for ForwardGuard {
    #[inline]
    fn drop(&mut self) {
        let _ = MODE.try_with(|m| {
            let mut mode = m.get();
            mode.guards = mode.guards.saturating_sub(1);
            mode.forwards = mode.forwards.saturating_sub(1);
            m.set(mode);
        });
    }
}

/// Runs `f` with recording off: nothing computed inside is part of any graph.
/// Scoped: the mode is back as it was when `f` returns.
///
/// ```
/// # use autograd_core::{no_grad, Tensor};
/// let x = Tensor::scalar(2.0f32).with_requires_grad(true);
/// let y = no_grad(|| x.detach());
/// assert!(!y.requires_grad());
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    with_grad_mode(false, f)
}

/// Runs `f` with recording on, even inside [`no_grad`].
pub fn enable_grad<R>(f: impl FnOnce() -> R) -> R {
    with_grad_mode(true, f)
}

/// Runs `f` with recording set to `enabled` (whatever guards are live outside),
/// restoring the previous mode after.
pub(crate) fn with_grad_mode<R>(enabled: bool, f: impl FnOnce() -> R) -> R {
    with_mode(enabled, false, f)
}

/// The mode a backward pass runs its ops in: recording as `create_graph` says, and
/// watched for ops that leave the graph when `create_graph` is on (or a backward
/// around this one has it on: an inner pass, as a checkpoint runs, is part of
/// the outer backward's computation).
pub(crate) fn with_backward_mode<R>(create_graph: bool, f: impl FnOnce() -> R) -> R {
    with_mode(create_graph, create_graph, f)
}

/// [`with_grad_mode`], watched from here on when `watch` (or already).
fn with_mode<R>(enabled: bool, watch: bool, f: impl FnOnce() -> R) -> R {
    // The forwards stay counted: `no_grad` inside an op's forward is still part of
    // that op's node. So does the watch: a `no_grad` inside a backward is watched.
    let previous = MODE.with(|m| {
        let now = m.get();
        m.replace(Mode {
            base: enabled,
            guards: 0,
            forwards: now.forwards,
            watch: now.watch || watch,
        })
    });
    struct Restore(Mode);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = MODE.try_with(|m| m.set(self.0));
        }
    }
    let _restore = Restore(previous);
    f()
}
