//! Optimizers and the parameters they update: a parameter is one tensor however many
//! handles hold it, optimizer state is detached from any graph, goes with its
//! parameter, and costs the same with fusion on as off.

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

fn live() -> isize {
    thread_stats(Device::Cpu).live_bytes
}

// ----- a parameter is one tensor however many handles hold it -----

#[test]
fn an_update_is_seen_through_every_clone_of_a_parameter() -> Result<()> {
    use autograd::optim::{Optimizer, Sgd};
    crate::init();
    let w = Tensor::from_slice(&[3.0f64, -2.0], [2])?.with_requires_grad(true);
    let mut params = [w.clone()];
    let mut opt = Sgd::new(0.1);
    for _ in 0..10 {
        w.square()?.sum_all()?.backward()?;
        let mut p: Vec<&mut Tensor> = params.iter_mut().collect();
        opt.step(&mut p)?;
        opt.zero_grad(&mut p);
    }
    // w ← 0.8 w at each step: the model's handle trains.
    let want = [3.0 * 0.8f64.powi(10), -2.0 * 0.8f64.powi(10)];
    for (got, want) in w.to_vec::<f64>()?.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    assert_eq!(w.to_vec::<f64>()?, params[0].to_vec::<f64>()?);
    assert_eq!(w.id(), params[0].id());
    Ok(())
}

/// `w * w_prev` where `w_prev` is a clone taken before an update: one tensor, so
/// the product is `w²` and its gradient `2w` at the new value.
#[test]
fn a_product_with_an_earlier_clone_has_the_right_gradient() -> Result<()> {
    crate::init();
    let mut w = Tensor::scalar(3.0f64).with_requires_grad(true);
    let w_prev = w.clone();
    w.set_data(&Tensor::scalar(5.0f64))?;
    assert_eq!(w_prev.to_scalar::<f64>()?, 5.0, "a clone sees the update");
    (&w * &w_prev)?.backward()?;
    assert_eq!(w.grad().unwrap().to_scalar::<f64>()?, 10.0);

    // Two tensors with the same values but different ids are two inputs: the
    // gradient of `a * b` is b for a and a for b.
    let a = Tensor::scalar(3.0f64).with_requires_grad(true);
    let b = a.detach().with_requires_grad(true); // same buffer, new id
    assert!(a.same_values_as(&b) && a.id() != b.id());
    (&a * &b)?.backward()?;
    assert_eq!(a.grad().unwrap().to_scalar::<f64>()?, 3.0);
    assert_eq!(b.grad().unwrap().to_scalar::<f64>()?, 3.0);
    Ok(())
}

/// A graph recorded before an update keeps the values it saved.
#[test]
fn a_graph_recorded_before_an_update_keeps_its_saved_values() -> Result<()> {
    crate::init();
    let mut w = Tensor::from_slice(&[1.0f64, -2.0], [2])?.with_requires_grad(true);
    let model = w.clone();
    let y = (&model * &model)?.sum_all()?; // mul saves w
    w.set_data(&Tensor::from_slice(&[100.0f64, 100.0], [2])?)?;
    y.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [2.0, -4.0]);
    assert_eq!(model.to_vec::<f64>()?, [100.0, 100.0]);
    Ok(())
}

/// SGD with momentum (and Adam), the same parameter listed twice: updated once per
/// step, as if listed once.
#[test]
fn a_parameter_listed_twice_in_one_step_is_updated_once() -> Result<()> {
    use autograd::optim::{Adam, Optimizer, Sgd};
    crate::init();
    fn run(twice: bool, adam: bool) -> Result<Vec<f64>> {
        let w = Tensor::from_slice(&[1.0f64, -1.0], [2])?.with_requires_grad(true);
        let mut sgd = Sgd::new(0.1).momentum(0.9);
        let mut adam_opt = Adam::new(0.1);
        for _ in 0..3 {
            w.square()?.sum_all()?.backward()?;
            let (mut a, mut b) = (w.clone(), w.clone());
            let mut list: Vec<&mut Tensor> = vec![&mut a];
            if twice {
                list.push(&mut b);
            }
            if adam {
                adam_opt.step(&mut list)?;
            } else {
                sgd.step(&mut list)?;
            }
            w.zero_grad();
        }
        w.to_vec::<f64>()
    }
    for adam in [false, true] {
        assert_eq!(run(true, adam)?, run(false, adam)?, "adam: {adam}");
    }
    Ok(())
}

// ----- optimizer state is detached from any graph -----

#[test]
fn sgd_momentum_does_not_keep_a_create_graph_gradient_graph() -> Result<()> {
    use autograd::optim::{Optimizer, Sgd};
    crate::init();
    let mut w = Tensor::from_slice(&[1.0f64; 1000], [1000])?.with_requires_grad(true);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let y = w.pow_scalar(3.0)?.sum_all()?;
    y.backward_with(BackwardOptions::default().create_graph(true))?;
    drop(y);
    assert!(w.grad().unwrap().requires_grad(), "a recorded gradient");
    opt.step(&mut [&mut w])?;
    opt.zero_grad(&mut [&mut w]);
    let before = live();
    drop(opt); // frees exactly the momentum buffer: 1000 f64
    assert_eq!(before - live(), 8000, "the state held more than its buffer");
    Ok(())
}

// ----- optimizer state goes with its parameter -----

#[test]
fn adam_frees_the_moments_of_dropped_parameters() -> Result<()> {
    use autograd::optim::{Adam, Optimizer};
    crate::init();
    let baseline = live();
    let mut opt = Adam::new(0.01);
    for _ in 0..100 {
        let mut p = Tensor::from_slice(&[1.0f64; 1000], [1000])?.with_requires_grad(true);
        p.square()?.sum_all()?.backward()?;
        opt.step(&mut [&mut p])?;
    } // each parameter dropped here
    let mut last = Tensor::from_slice(&[1.0f64; 10], [10])?.with_requires_grad(true);
    last.square()?.sum_all()?.backward()?;
    opt.step(&mut [&mut last])?;
    assert_eq!(opt.state_len(), 1, "moments of dropped parameters are kept");
    opt.remove(&last);
    assert_eq!(opt.state_len(), 0);
    drop(last);
    assert_eq!(live() - baseline, 0);
    Ok(())
}
