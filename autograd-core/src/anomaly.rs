//! Anomaly mode: an opt-in check of every gradient the backward pass computes.
//!
//! When on, each gradient an op's backward returns is scanned for NaN and infinity
//! (after it is reduced to its input's shape, before it is accumulated anywhere). The
//! first one found stops the pass with [`Error::Anomaly`], naming the op, the
//! input whose gradient it is, and the place in the user's code that called the op
//! (recorded with `#[track_caller]` when the graph was built). The pass then cleans
//! up as after any error: the graph holds no gradient buffers, and leaves may hold
//! gradients accumulated before the anomaly.
//!
//! It is off by default. Turn it on for the calling thread with [`enable`] (the
//! returned guard turns it back off), or for every thread with [`set_enabled`]; a
//! guard from [`enable`] or [`disable`] overrides the process-wide setting on its
//! thread. The check runs on the thread that calls `backward` (the engine does not
//! hand work to other threads), so a guard around the `backward` call covers the
//! whole pass.
//!
//! Cost: every gradient is copied to the host as `f64` and scanned, an extra
//! allocation and pass over each gradient the engine computes (and a device-to-host
//! transfer for device tensors). It is for finding where a NaN comes from, not for
//! training runs; off, it costs one thread-local read per gradient. NaN or infinity
//! in the forward pass is not reported until a backward turns it into a gradient.
//!
//! The `autograd` crate's documentation has a runnable example (section "Finding
//! where a NaN comes from").

use crate::graph::Node;
use crate::{Error, Result, Tensor};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

static PROCESS_WIDE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The calling thread's override of [`PROCESS_WIDE`], set by a guard.
    static SCOPED: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Turns anomaly checking on or off for every thread that has no [`enable`] or
/// [`disable`] guard alive.
pub fn set_enabled(on: bool) {
    PROCESS_WIDE.store(on, Ordering::Relaxed);
}

/// True when backward passes started on this thread check their gradients.
pub fn is_enabled() -> bool {
    SCOPED
        .try_with(Cell::get)
        .ok()
        .flatten()
        .unwrap_or_else(|| PROCESS_WIDE.load(Ordering::Relaxed))
}

/// Turns anomaly checking on for the calling thread until the guard is dropped.
#[must_use = "anomaly mode is on only while the guard lives"]
pub fn enable() -> AnomalyGuard {
    AnomalyGuard::set(true)
}

/// Turns anomaly checking off for the calling thread until the guard is dropped,
/// whatever [`set_enabled`] says.
#[must_use = "anomaly mode is off only while the guard lives"]
pub fn disable() -> AnomalyGuard {
    AnomalyGuard::set(false)
}

/// Restores the calling thread's previous anomaly setting when dropped. Guards nest;
/// a guard stays on the thread that made it (it is not `Send`).
pub struct AnomalyGuard {
    previous: Option<bool>,
    _thread_bound: PhantomData<*const ()>,
}

impl AnomalyGuard {
    fn set(on: bool) -> AnomalyGuard {
        AnomalyGuard {
            previous: SCOPED.with(|s| s.replace(Some(on))),
            _thread_bound: PhantomData,
        }
    }
}

impl Drop for AnomalyGuard {
    fn drop(&mut self) {
        let _ = SCOPED.try_with(|s| s.set(self.previous));
    }
}

/// Scans the gradient `node`'s backward returned for input `input`.
pub(crate) fn check(node: &Node, input: usize, grad: &Tensor) -> Result<()> {
    let values = grad.to_vec::<f64>()?;
    let what = if values.iter().any(|v| v.is_nan()) {
        "NaN"
    } else if values.iter().any(|v| v.is_infinite()) {
        "infinity"
    } else {
        return Ok(());
    };
    Err(Error::Anomaly {
        op: node.name(),
        location: node.location.to_string(),
        input,
        what,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_guards_nest_and_override_the_process_wide_setting() {
        // The only test in this crate that touches the process-wide flag.
        assert!(!is_enabled(), "anomaly mode must be off by default");
        {
            let _on = enable();
            assert!(is_enabled());
            {
                let _off = disable();
                assert!(!is_enabled());
            }
            assert!(is_enabled(), "the inner guard restores the outer setting");
        }
        assert!(!is_enabled());
        set_enabled(true);
        let seen_elsewhere = std::thread::spawn(is_enabled).join().unwrap();
        {
            let _off = disable();
            assert!(!is_enabled(), "a guard overrides the process-wide setting");
        }
        assert!(is_enabled());
        set_enabled(false);
        assert!(seen_elsewhere, "set_enabled reaches every thread");
        let _on = enable();
        let not_elsewhere = std::thread::spawn(is_enabled).join().unwrap();
        assert!(!not_elsewhere, "a guard affects its own thread only");
    }
}
