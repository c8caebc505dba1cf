//! Parameter updates: `Tensor::set_data` (in place when nothing else sees the
//! buffer, a new buffer under the same identity otherwise) and the optimizers built
//! on it, checked step by step against hand-computed values.

use autograd::optim::{Adam, Optimizer, Sgd};
use autograd::prelude::*;
use autograd::{Error, Storage, ops};

fn f64s(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// The buffer a tensor holds now (the reference is dropped before this returns, so
/// it does not itself hold the buffer).
fn buffer(t: &Tensor) -> *const Storage {
    &*t.storage() as *const Storage
}

fn param(values: &[f64]) -> Tensor {
    Tensor::from_slice(values, [values.len()])
        .unwrap()
        .with_requires_grad(true)
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "got {got:?}, want {want:?}");
    }
}

/// Accumulates the gradient of `Σ w²/2`, which is `w` itself.
fn half_square_backward(w: &Tensor) -> Result<()> {
    (ops::sum_all(&ops::square(w)?)? * 0.5)?.backward()
}

#[test]
fn set_data_writes_in_place_when_the_handle_is_the_only_user() -> Result<()> {
    crate::init();
    let mut w = param(&[1.0, 2.0, 3.0]);
    let id = w.id();
    let before = buffer(&w);
    w.set_data(&Tensor::from_slice(&[4.0f64, 5.0, 6.0], [3])?)?;
    assert_eq!(f64s(&w), [4.0, 5.0, 6.0]);
    assert_eq!(buffer(&w), before, "same buffer: no allocation");
    assert_eq!(w.id(), id);
    assert!(w.requires_grad() && w.is_leaf());
    Ok(())
}

#[test]
fn set_data_updates_every_handle_of_a_parameter_and_no_view() -> Result<()> {
    crate::init();
    let mut w = param(&[1.0, 2.0]);
    let before = w.clone();
    let view = w.detach().reshape([2, 1])?;
    w.set_data(&Tensor::from_slice(&[7.0f64, 8.0], [2])?)?;

    assert_eq!(f64s(&w), [7.0, 8.0]);
    assert_eq!(f64s(&before), [7.0, 8.0], "a clone is the same parameter");
    assert_eq!(
        f64s(&view),
        [1.0, 2.0],
        "a view taken before is a tensor of its own"
    );
    assert!(w.shares_storage_with(&before));
    assert_eq!(w.id(), before.id());

    // Both handles share the gradient slot: a gradient through one handle is read
    // through the other.
    (ops::sum_all(&before)? * 3.0)?.backward()?;
    assert_eq!(f64s(&w.grad().unwrap()), [3.0, 3.0]);
    Ok(())
}

#[test]
fn set_data_never_changes_what_a_recorded_graph_saved() -> Result<()> {
    crate::init();
    let mut w = param(&[1.0, -2.0]);
    let y = ops::sum_all(&ops::mul(&w, &w)?)?; // mul saves w
    w.set_data(&Tensor::from_slice(&[100.0f64, 100.0], [2])?)?;
    assert_eq!(f64s(&y), [5.0]);
    y.backward()?;
    // d/dw Σ w² = 2w, at the values the forward pass saw.
    assert_eq!(f64s(&w.grad().unwrap()), [2.0, -4.0]);
    assert_eq!(f64s(&w), [100.0, 100.0]);
    Ok(())
}

#[test]
fn nodes_recorded_after_set_data_save_the_new_values() -> Result<()> {
    crate::init();
    let mut w = param(&[2.0]);
    let x = param(&[1.0]);
    // Two nodes saving the same parameter share one saved copy of it...
    let y1 = ops::mul(&x, &w)?;
    let y2 = ops::mul(&w, &x)?;
    // ...which must not outlive the values it saved: the graph holds the buffer, so
    // set_data gives the parameter a new one, and the next node saves that.
    w.set_data(&Tensor::from_slice(&[3.0f64], [1])?)?;
    let y3 = ops::mul(&x, &w)?;
    ops::sum_all(&(&(&y1 + &y2)? + &y3)?)?.backward()?;
    assert_eq!(f64s(&x.grad().unwrap()), [7.0], "2 + 2 + 3");
    assert_eq!(f64s(&w.grad().unwrap()), [3.0], "x each time");
    Ok(())
}

#[test]
fn set_data_works_on_constants_and_takes_only_the_values() -> Result<()> {
    crate::init();
    let mut c = Tensor::zeros([2], DType::F32)?;
    let source = Tensor::ones([2], DType::F32)?.with_requires_grad(true);
    let recorded = ops::mul_scalar(&source, 2.0)?;
    c.set_data(&recorded)?;
    assert_eq!(c.to_vec::<f32>()?, [2.0, 2.0]);
    assert!(!c.requires_grad(), "the value's graph does not come along");
    Ok(())
}

#[test]
fn set_data_rejects_op_outputs_and_mismatched_values() -> Result<()> {
    crate::init();
    let w = param(&[1.0, 2.0]);
    let mut out = ops::mul_scalar(&w, 2.0)?;
    let err = out.set_data(&Tensor::zeros([2], DType::F64)?).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { op: "set_data", msg } if msg.contains("mul_scalar")),
        "{err}"
    );

    let mut w = w;
    let err = w.set_data(&Tensor::zeros([3], DType::F64)?).unwrap_err();
    assert!(matches!(err, Error::Shape { op: "set_data", .. }), "{err}");
    let err = w.set_data(&Tensor::zeros([2], DType::F32)?).unwrap_err();
    assert!(
        matches!(err, Error::DTypeMismatch { op: "set_data", .. }),
        "{err}"
    );
    assert_eq!(f64s(&w), [1.0, 2.0], "a failed update changes nothing");
    Ok(())
}

#[test]
fn sgd_takes_plain_gradient_steps() -> Result<()> {
    crate::init();
    let mut w = param(&[1.0, -2.0]);
    let mut opt = Sgd::new(0.1);
    for expected in [[0.9, -1.8], [0.81, -1.62]] {
        half_square_backward(&w)?;
        opt.step(&mut [&mut w])?;
        opt.zero_grad(&mut [&mut w]);
        assert_close(&f64s(&w), &expected);
    }
    assert!(w.grad().is_none());
    Ok(())
}

#[test]
fn sgd_momentum_matches_hand_computed_steps() -> Result<()> {
    crate::init();
    // f = w²/2, g = w, lr 0.1, momentum 0.9:
    // b1 = 1,            w1 = 1 - 0.1 * 1 = 0.9
    // b2 = 0.9 + 0.9,    w2 = 0.9 - 0.1 * 1.8 = 0.72
    // b3 = 1.62 + 0.72,  w3 = 0.72 - 0.1 * 2.34 = 0.486
    let mut w = param(&[1.0]);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    for expected in [0.9, 0.72, 0.486] {
        half_square_backward(&w)?;
        opt.step(&mut [&mut w])?;
        opt.zero_grad(&mut [&mut w]);
        assert_close(&f64s(&w), &[expected]);
    }

    // Nesterov: direction g + 0.9 b. Step 1: b = 1, d = 1.9, w = 0.81.
    // Step 2: g = 0.81, b = 0.9 + 0.81 = 1.71, d = 0.81 + 1.539 = 2.349, w = 0.5751.
    let mut w = param(&[1.0]);
    let mut opt = Sgd::new(0.1).momentum(0.9).nesterov(true);
    for expected in [0.81, 0.5751] {
        half_square_backward(&w)?;
        opt.step(&mut [&mut w])?;
        opt.zero_grad(&mut [&mut w]);
        assert_close(&f64s(&w), &[expected]);
    }
    Ok(())
}

#[test]
fn adam_matches_hand_computed_steps() -> Result<()> {
    crate::init();
    let (lr, b1, b2, eps) = (0.1, 0.9, 0.999, 1e-8);
    let start = [1.0, -0.5];
    let mut w = param(&start);
    let mut opt = Adam::new(lr);

    // The reference: the same recurrence in plain f64 arithmetic.
    let mut want = start;
    let (mut m, mut v) = ([0.0; 2], [0.0; 2]);
    for t in 1..=3 {
        half_square_backward(&w)?;
        opt.step(&mut [&mut w])?;
        opt.zero_grad(&mut [&mut w]);
        for i in 0..2 {
            let g = want[i];
            m[i] = b1 * m[i] + (1.0 - b1) * g;
            v[i] = b2 * v[i] + (1.0 - b2) * g * g;
            let m_hat = m[i] / (1.0 - b1.powi(t));
            let v_hat = v[i] / (1.0 - b2.powi(t));
            want[i] -= lr * m_hat / (v_hat.sqrt() + eps);
        }
        assert_close(&f64s(&w), &want);
    }
    Ok(())
}

#[test]
fn adam_first_step_is_lr_times_the_sign_of_the_gradient() -> Result<()> {
    crate::init();
    let mut w = param(&[3.0, -0.001]);
    half_square_backward(&w)?;
    Adam::new(0.01).step(&mut [&mut w])?;
    let got = f64s(&w);
    assert!((got[0] - 2.99).abs() < 1e-7, "{got:?}");
    assert!((got[1] - (-0.001 + 0.01)).abs() < 1e-7, "{got:?}");
    Ok(())
}

#[test]
fn weight_decay_adds_the_l2_gradient() -> Result<()> {
    crate::init();
    // g = w + 0.5 w = 1.5 w; w1 = 2 - 0.1 * 3 = 1.7.
    let mut w = param(&[2.0]);
    half_square_backward(&w)?;
    Sgd::new(0.1).weight_decay(0.5).step(&mut [&mut w])?;
    assert_close(&f64s(&w), &[1.7]);
    Ok(())
}

#[test]
fn a_step_keeps_parameters_as_leaves_and_records_nothing() -> Result<()> {
    crate::init();
    let mut w = param(&[1.0, 2.0]);
    let id = w.id();
    half_square_backward(&w)?;
    Adam::new(0.1).step(&mut [&mut w])?;
    assert!(w.is_leaf() && w.requires_grad() && w.grad_fn().is_none());
    assert_eq!(w.id(), id);
    // The gradient is still there until zero_grad: steps do not clear it.
    assert!(w.grad().is_some());
    Ok(())
}

#[test]
fn parameters_without_a_gradient_are_left_alone() -> Result<()> {
    crate::init();
    let mut used = param(&[1.0]);
    let mut unused = param(&[5.0]);
    let mut constant = Tensor::from_slice(&[9.0f64], [1])?;
    half_square_backward(&used)?;
    let mut opt = Sgd::new(0.5).momentum(0.5);
    opt.step(&mut [&mut used, &mut unused, &mut constant])?;
    assert_close(&f64s(&used), &[0.5]);
    assert_eq!(f64s(&unused), [5.0]);
    assert_eq!(f64s(&constant), [9.0]);
    Ok(())
}

#[test]
fn optimizer_state_follows_each_parameter_by_id() -> Result<()> {
    crate::init();
    // Two parameters, passed in a different order on the second step: each keeps
    // its own momentum buffer.
    let mut a = param(&[1.0]);
    let mut b = param(&[10.0]);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    half_square_backward(&a)?;
    half_square_backward(&b)?;
    opt.step(&mut [&mut a, &mut b])?;
    opt.zero_grad(&mut [&mut a, &mut b]);
    half_square_backward(&a)?;
    half_square_backward(&b)?;
    opt.step(&mut [&mut b, &mut a])?;
    assert_close(&f64s(&a), &[0.72]);
    assert_close(&f64s(&b), &[7.2]);
    Ok(())
}

#[test]
fn invalid_hyperparameters_are_errors() -> Result<()> {
    crate::init();
    let mut w = param(&[1.0]);
    half_square_backward(&w)?;
    let bad: Vec<Box<dyn Optimizer>> = vec![
        Box::new(Sgd::new(-0.1)),
        Box::new(Sgd::new(f64::NAN)),
        Box::new(Sgd::new(0.1).momentum(1.0)),
        Box::new(Sgd::new(0.1).nesterov(true)),
        Box::new(Adam::new(0.1).betas(0.9, 1.0)),
        Box::new(Adam::new(0.1).eps(-1.0)),
    ];
    for mut opt in bad {
        let err = opt.step(&mut [&mut w]).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { .. }),
            "expected an argument error, got {err}"
        );
    }
    assert_eq!(f64s(&w), [1.0]);
    Ok(())
}

#[test]
fn learning_rate_can_be_scheduled() {
    let mut opt = Adam::new(0.1);
    opt.set_learning_rate(0.01);
    assert_eq!(opt.learning_rate(), 0.01);
}

#[test]
fn training_steps_update_parameters_in_their_own_buffers() -> Result<()> {
    crate::init();
    // Once backward has released the graph, nothing else holds the parameters: every
    // step writes into the buffers they already have.
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [3, 2])?;
    let targets = Tensor::from_slice(&[0i64, 1, 1], [3])?;
    let mut w = Tensor::from_slice(&[0.1f32, -0.2, 0.3, 0.4], [2, 2])?.with_requires_grad(true);
    let mut b = Tensor::zeros([2], DType::F32)?.with_requires_grad(true);
    let buffers = [buffer(&w), buffer(&b)];
    let mut opt = Adam::new(0.05);
    let mut losses = Vec::new();
    for _ in 0..5 {
        let loss = (x.matmul(&w)? + &b)?.cross_entropy(&targets)?;
        loss.backward()?;
        opt.step(&mut [&mut w, &mut b])?;
        opt.zero_grad(&mut [&mut w, &mut b]);
        losses.push(loss.to_scalar::<f32>()?);
        assert_eq!([buffer(&w), buffer(&b)], buffers);
    }
    assert!(losses[4] < losses[0], "{losses:?}");
    Ok(())
}
