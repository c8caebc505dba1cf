//! Anomaly mode: an opt-in check of every gradient the backward pass computes.
//!
//! When on, each gradient an op's backward produces is scanned for NaN and infinity;
//! the first one found stops the pass with [`crate::Error::Anomaly`], naming the op
//! and the place in the user's code that recorded it. It reads every gradient back
//! to the host, so it is for debugging, not for training runs.

use crate::graph::Node;
use crate::{Error, Result, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns anomaly checking on or off for the whole process.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// True when anomaly checking is on.
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

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
