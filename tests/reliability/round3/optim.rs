//! Item 8: optimizer state costs the same with fusion on as off.

use autograd::fusion::{FusionConfig, with_config};
use autograd::memory::thread_stats;
use autograd::optim::{Adam, Optimizer, Sgd};
use autograd::prelude::*;

/// Bytes this thread holds after each of `steps` steps of `opt` on a parameter
/// large enough to fuse (8,192 `f32`), once the step's loss and gradient are gone.
fn held_after_steps(config: FusionConfig, opt: &mut dyn Optimizer, steps: usize) -> Vec<isize> {
    with_config(config, || {
        let base = thread_stats(Device::Cpu).live_bytes;
        let mut w = Tensor::from_vec(vec![0.5f32; 8192], [8192])
            .unwrap()
            .with_requires_grad(true);
        let mut held = Vec::new();
        for _ in 0..steps {
            let loss = (&w * &w).unwrap().sum_all().unwrap();
            loss.backward().unwrap();
            drop(loss);
            opt.step(&mut [&mut w]).unwrap();
            opt.zero_grad(&mut [&mut w]);
            held.push(thread_stats(Device::Cpu).live_bytes - base);
        }
        assert!(w.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite()));
        held
    })
}

fn fused() -> FusionConfig {
    FusionConfig {
        enabled: true,
        min_elements: 1,
    }
}

/// One buffer of momentum, one parameter: 2 × 32 KiB however many steps, as with
/// fusion off (a deferred buffer held up to 8 earlier gradients and buffers).
#[test]
fn sgd_momentum_holds_one_buffer_with_fusion_on() {
    crate::init();
    let on = held_after_steps(fused(), &mut Sgd::new(0.01).momentum(0.9), 40);
    let off = held_after_steps(FusionConfig::OFF, &mut Sgd::new(0.01).momentum(0.9), 40);
    assert_eq!(on, off, "fused and unfused steps hold the same bytes");
    assert!(on.iter().all(|&b| b == 2 * 8192 * 4), "{on:?}");
}

/// Adam's two moments and the parameter: 3 × 32 KiB at every step.
#[test]
fn adam_state_holds_its_two_moments_with_fusion_on() {
    crate::init();
    let on = held_after_steps(fused(), &mut Adam::new(0.01), 40);
    let off = held_after_steps(FusionConfig::OFF, &mut Adam::new(0.01), 40);
    assert_eq!(on, off, "fused and unfused steps hold the same bytes");
    assert!(on.iter().all(|&b| b == 3 * 8192 * 4), "{on:?}");
}
