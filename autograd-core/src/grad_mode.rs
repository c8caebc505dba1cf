//! Whether ops are recorded: on by default, off inside [`no_grad`].

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// True when ops called on this thread now are recorded for backward.
pub fn is_grad_enabled() -> bool {
    ENABLED.with(Cell::get)
}

/// Turns recording off on this thread until dropped (then restores what it was).
///
/// The guard stays on the thread that made it (it is not `Send`): dropped on another
/// thread, it would restore the wrong thread's mode.
///
/// ```compile_fail
/// let guard = autograd_core::NoGradGuard::new();
/// std::thread::spawn(move || drop(guard));
/// ```
pub struct NoGradGuard {
    previous: bool,
    _thread_bound: PhantomData<*const ()>,
}

impl NoGradGuard {
    /// Turns recording off now; hold the guard for as long as it should stay off.
    /// Prefer [`no_grad`], which cannot outlive its closure.
    #[allow(clippy::new_without_default)]
    pub fn new() -> NoGradGuard {
        NoGradGuard {
            previous: ENABLED.with(|e| e.replace(false)),
            _thread_bound: PhantomData,
        }
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        ENABLED.with(|e| e.set(self.previous));
    }
}

/// Runs `f` with recording off: nothing computed inside is part of any graph.
///
/// ```
/// # use autograd_core::{no_grad, Tensor};
/// let x = Tensor::scalar(2.0f32).set_requires_grad(true);
/// let y = no_grad(|| x.detach());
/// assert!(!y.requires_grad());
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NoGradGuard::new();
    f()
}

/// Runs `f` with recording on, even inside [`no_grad`].
pub fn enable_grad<R>(f: impl FnOnce() -> R) -> R {
    with_grad_mode(true, f)
}

/// Runs `f` with recording set to `enabled`, restoring the previous mode after.
pub(crate) fn with_grad_mode<R>(enabled: bool, f: impl FnOnce() -> R) -> R {
    let previous = ENABLED.with(|e| e.replace(enabled));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ENABLED.with(|e| e.set(self.0));
        }
    }
    let _restore = Restore(previous);
    f()
}
