//! Reliability: memory is reclaimed on every path, threads are safe, bad input gives
//! a typed error and never a panic (property tests against naive references, random
//! op programs, the fuzzer's regressions), fused chains observe what ops run one by
//! one observe (the random programs again, fused and not), anomaly mode reports
//! NaN gradients, and the semantics at the edges hold: graphs released on every path
//! (`release`), the engine's rules and refusals (`engine`), higher-order gradients
//! (`gradients`), PyTorch's conventions at kinks and ties (`kinks`), `save`/`load`
//! (`io`), optimizers' parameters and state (`optim`), and what calls and errors say
//! (`messages`).

mod anomaly;
mod engine;
mod gradients;
mod io;
mod kinks;
mod memory;
mod messages;
mod optim;
mod program;
mod programs;
mod props;
mod reference;
mod release;
mod threads;

/// Every test calls this first: links the op library and checks the registry.
pub fn init() {
    autograd::init().expect("op registry");
}
