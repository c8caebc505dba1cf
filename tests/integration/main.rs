//! Integration tests of the whole stack: the worked examples of reverse-mode accumulation, the
//! engine's semantics, pruning, gradient checks through the registry.

mod checkpoint;
mod conv;
mod elementwise;
mod engine;
mod functional;
mod graph_dot;
mod io;
mod operators;
mod ops_batch;
mod ops_errors;
mod ops_reference;
mod ops_registry;
mod ops_semantics;
mod optim;
mod pruning;
mod raw;
mod registry;
mod reuse;
mod round2_sizes;
mod saved_flags;
mod worked_examples;

/// Every test calls this first: links the op library and checks the registry.
pub fn init() {
    autograd::init().expect("op registry");
}

/// An f64 leaf that requires grad.
pub fn leaf(v: &[f64], shape: &[usize]) -> autograd::Tensor {
    autograd::Tensor::from_slice(v, shape)
        .unwrap()
        .with_requires_grad(true)
}

/// The gradient accumulated into `t`, as f64 values.
pub fn grad_vec(t: &autograd::Tensor) -> Vec<f64> {
    t.grad().expect("gradient").to_vec::<f64>().unwrap()
}
