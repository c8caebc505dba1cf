//! The whole stack on a CUDA GPU: every registered op forward and backward
//! against the CPU, the worked examples of reverse-mode accumulation, the engine's device rules, memory
//! accounting, and workloads W2 and W3.
//!
//! Everything that needs a GPU is `#[ignore]`d: run it with
//! `cargo test --release --test gpu -- --ignored` on a machine with a GPU, or with
//! `scripts/gpu-check.sh`. The one test that runs everywhere checks that asking
//! for a GPU where there is none is an error, not a crash.
//!
//! CI runs all of them on the emulated device: `cargo test --features
//! cuda-emulator --test gpu -- --include-ignored` (`Device::Cuda(0)` is then a host
//! emulation running the backend's own launch code and .cu kernels; the W2/W3
//! "GPU sizes" are cut there). What emulation cannot see (lost updates between
//! threads running at once, the memory model, CUDA's math accuracy, where exactly
//! NVRTC contracts a product and a sum (the emulated device contracts wherever g++
//! can), sizes of 2^31 and beyond) is listed in
//! `kernels/src/cuda/emu/mod.rs` and still needs a real GPU.

mod availability;
#[path = "../common/cases.rs"]
mod cases;
mod conv;
mod device_paths;
mod elementwise;
mod engine;
mod functional;
mod fusion;
mod modules;
mod op_names;
mod ops_batch;
mod ops_parity;
mod ops_reductions;
mod ops_shape;
mod raw;
mod seed_examples;
mod workloads;
mod workloads_parity;

use autograd::prelude::*;

/// The element-wise comparison the kernel tests use too.
#[path = "../../kernels/tests/support/compare.rs"]
mod support;
pub use support::compare;

/// Links the op library and checks the registry.
pub fn init() {
    autograd::init().expect("op registry");
}

/// The GPU the ignored tests run on.
pub fn gpu() -> Device {
    init();
    let d = Device::Cuda(0);
    if let Err(e) = autograd::compute::to_device(&Tensor::scalar(0.0f32), d) {
        panic!("this test needs a CUDA GPU (it is #[ignore]d by default): {e}");
    }
    d
}

/// On the host: `y`, then the gradient of `Σ y · r` (`r` fixed, uniform in
/// [-1, 1], on `y`'s device) for each of `leaves`, which must all receive one
/// (none: `y` alone).
pub fn output_and_grads(y: &Tensor, leaves: &[&Tensor]) -> Vec<Vec<f64>> {
    let host = |t: &Tensor| t.to(Device::Cpu).unwrap().to_vec::<f64>().unwrap();
    let mut out = vec![host(y)];
    if leaves.is_empty() {
        return out;
    }
    let r = autograd::random::Rng::new(5)
        .uniform(y.shape().clone(), -1.0, 1.0, y.dtype())
        .unwrap()
        .to(y.device())
        .unwrap();
    let loss = (y * &r).unwrap().sum_all().unwrap();
    let grads = autograd::grad(&loss, leaves, autograd::BackwardOptions::default()).unwrap();
    out.extend(grads.iter().map(|g| host(g.as_ref().unwrap())));
    out
}
