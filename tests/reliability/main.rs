//! Reliability: memory is reclaimed on every path, threads are safe, bad input gives
//! a typed error and never a panic (property tests against naive references, random
//! op programs, the fuzzer's regressions), fused chains observe what ops run one by
//! one observe (the random programs again, fused and not), and anomaly mode reports
//! NaN gradients.

mod anomaly;
mod memory;
mod program;
mod programs;
mod props;
mod reference;
mod round2;
mod round3;
mod threads;

/// Every test calls this first: links the op library and checks the registry.
pub fn init() {
    autograd::init().expect("op registry");
}
