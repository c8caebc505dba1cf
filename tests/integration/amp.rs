//! Mixed precision: autocast scopes (which ops convert, recorded conversions,
//! nesting), the optimizers' f32 master weights for bf16 parameters, and the
//! dynamic loss scaling of `GradScaler`.

use autograd::amp::{self, AutocastGuard, GradScaler, GradScalerState, autocast};
use autograd::optim::{Adam, Optimizer, Sgd};
use autograd::prelude::*;
use autograd::{ComputationGraph, ops};

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap()
}

fn f32_leaf(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape)
        .unwrap()
        .with_requires_grad(true)
}

fn bf16_leaf(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
        .with_requires_grad(true)
}

#[test]
fn autocast_runs_matmul_in_bf16_and_grads_come_back_f32() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?;
    let w = f32_leaf(&[1.0, -1.0, 0.5, 2.0, -0.25, 1.5], &[3, 2]);
    let (y, loss) = autocast(DType::BF16, || {
        let y = x.matmul(&w)?;
        let loss = y.sum_all()?; // a reduction: in f32
        Ok((y, loss))
    })?;
    assert_eq!(y.dtype(), DType::BF16);
    assert_eq!(loss.dtype(), DType::F32);
    let names: Vec<_> = ComputationGraph::of(&[&y])
        .nodes()
        .iter()
        .map(|n| n.op_name())
        .collect();
    assert!(names.contains(&"to_dtype"), "{names:?}");
    assert!(names.contains(&"matmul"), "{names:?}");
    // The product of small integers and halves is exact in bf16.
    assert_eq!(f32s(&y), [1.25, 7.5, 5.0, 15.0]);
    loss.backward()?;
    let g = w.grad().expect("w's gradient");
    assert_eq!(g.dtype(), DType::F32);
    // d(sum(x w))/dw = xᵀ 1: the column sums of x, repeated.
    assert_eq!(g.to_vec::<f32>()?, [5.0, 5.0, 7.0, 7.0, 9.0, 9.0]);

    // Outside the scope nothing is converted.
    assert_eq!(x.matmul(&w)?.dtype(), DType::F32);
    Ok(())
}

#[test]
fn autocast_f16_and_the_f32_ops() -> Result<()> {
    crate::init();
    let logits = f32_leaf(&[0.5, -1.0, 2.0, 0.0, 1.0, -0.5], &[2, 3]);
    let w = f32_leaf(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], &[3, 3]);
    let targets = Tensor::from_slice(&[2i64, 1], [2])?;
    let loss = autocast(DType::F16, || {
        let h = logits.matmul(&w)?;
        assert_eq!(h.dtype(), DType::F16);
        assert_eq!(h.softmax(-1)?.dtype(), DType::F32);
        assert_eq!(h.log_softmax(-1)?.dtype(), DType::F32);
        assert_eq!(h.mean_all()?.dtype(), DType::F32);
        assert_eq!(h.relu()?.dtype(), DType::F16); // no policy: as it is
        h.cross_entropy(&targets)
    })?;
    assert_eq!(loss.dtype(), DType::F32);
    let plain = logits.matmul(&w)?.cross_entropy(&targets)?;
    let (got, want) = (loss.to_scalar::<f32>()?, plain.to_scalar::<f32>()?);
    assert!((got - want).abs() < 1e-3, "{got} vs {want}");
    loss.backward()?;
    assert_eq!(logits.grad().unwrap().dtype(), DType::F32);
    assert_eq!(w.grad().unwrap().dtype(), DType::F32);
    Ok(())
}

#[test]
fn autocast_runs_conv2d_and_its_bias_in_bf16() -> Result<()> {
    crate::init();
    let mut rng = Rng::new(3);
    let x = rng.normal([2, 1, 5, 5], 0.0, 1.0, DType::F32)?;
    let w = rng
        .normal([4, 1, 3, 3], 0.0, 0.3, DType::F32)?
        .with_requires_grad(true);
    let b = Tensor::zeros([4], DType::F32)?.with_requires_grad(true);
    let conv = |x: &Tensor| {
        ops::conv2d(
            x,
            &w,
            Some(&b),
            ops::Conv2dOptions {
                padding: (1, 1),
                ..Default::default()
            },
        )
    };
    let y = autocast(DType::BF16, || conv(&x))?;
    assert_eq!(y.dtype(), DType::BF16);
    let want = f32s(&conv(&x)?);
    for (g, w) in f32s(&y).iter().zip(&want) {
        assert!((g - w).abs() <= 0.02 * (1.0 + w.abs()), "{g} vs {w}");
    }
    y.sum_all()?.backward()?;
    assert_eq!(w.grad().unwrap().dtype(), DType::F32);
    assert_eq!(b.grad().unwrap().dtype(), DType::F32);
    // Each output channel has 2 · 5 · 5 positions.
    assert_eq!(b.grad().unwrap().to_vec::<f32>()?, [50.0; 4]);
    Ok(())
}

/// The other convolutions cast as conv2d does: image, weight and bias to the
/// scope's dtype, gradients back in the parameters' f32.
#[test]
fn autocast_runs_the_other_convolutions_in_bf16() -> Result<()> {
    crate::init();
    let mut rng = Rng::new(4);
    type Conv = fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>;
    let cases: [(&str, [usize; 5], [usize; 5], Conv); 3] = [
        ("conv3d", [1, 2, 4, 4, 4], [3, 2, 2, 2, 2], |x, w, b| {
            ops::conv3d(x, w, Some(b), Default::default())
        }),
        (
            "conv_transpose2d",
            [1, 2, 4, 4, 0],
            [2, 3, 3, 3, 0],
            |x, w, b| {
                let o = ops::ConvTranspose2dOptions {
                    stride: (2, 2),
                    ..Default::default()
                };
                ops::conv_transpose2d(x, w, Some(b), o)
            },
        ),
        ("conv1d", [1, 2, 6, 0, 0], [3, 2, 3, 0, 0], |x, w, b| {
            ops::conv1d(x, w, Some(b), Default::default())
        }),
    ];
    for (name, xs, ws, conv) in cases {
        let dims = |s: [usize; 5]| s.into_iter().filter(|&d| d > 0).collect::<Vec<_>>();
        let x = rng.normal(dims(xs), 0.0, 1.0, DType::F32)?;
        let w = rng
            .normal(dims(ws), 0.0, 0.3, DType::F32)?
            .with_requires_grad(true);
        let b = Tensor::zeros([3], DType::F32)?.with_requires_grad(true);
        let y = autocast(DType::BF16, || conv(&x, &w, &b))?;
        assert_eq!(y.dtype(), DType::BF16, "{name}");
        let want = f32s(&conv(&x, &w, &b)?);
        for (g, v) in f32s(&y).iter().zip(&want) {
            assert!(
                (g - v).abs() <= 0.03 * (1.0 + v.abs()),
                "{name}: {g} vs {v}"
            );
        }
        y.sum_all()?.backward()?;
        assert_eq!(w.grad().unwrap().dtype(), DType::F32, "{name}");
        assert_eq!(b.grad().unwrap().dtype(), DType::F32, "{name}");
    }
    Ok(())
}

#[test]
fn nested_scopes_guards_and_disabled_restore_the_state() -> Result<()> {
    crate::init();
    let a = Tensor::ones([2, 2], DType::F32)?;
    assert_eq!(amp::autocast_dtype(), None);
    autocast(DType::BF16, || {
        assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
        autocast(DType::F16, || {
            assert_eq!(a.matmul(&a)?.dtype(), DType::F16);
            Ok(())
        })?;
        assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
        amp::disabled(|| {
            assert!(!amp::is_autocast_enabled());
            assert_eq!(a.matmul(&a)?.dtype(), DType::F32);
            Ok::<_, Error>(())
        })?;
        assert_eq!(amp::autocast_dtype(), Some(DType::BF16));
        Ok(())
    })?;
    assert_eq!(amp::autocast_dtype(), None);

    // Restored when the closure fails or panics.
    let err = autocast(DType::BF16, || a.matmul(&Tensor::ones([3, 3], DType::F32)?));
    assert!(err.is_err());
    assert_eq!(amp::autocast_dtype(), None);
    let panicked = std::panic::catch_unwind(|| {
        autocast(DType::F16, || -> Result<()> { panic!("in the scope") })
    });
    assert!(panicked.is_err());
    assert_eq!(amp::autocast_dtype(), None);

    {
        let _g = AutocastGuard::new(DType::BF16)?;
        assert_eq!(a.matmul(&a)?.dtype(), DType::BF16);
    }
    assert_eq!(a.matmul(&a)?.dtype(), DType::F32);

    let e = autocast(DType::F32, || Ok(())).unwrap_err().to_string();
    assert!(e.contains("autocast") && e.contains("BF16"), "{e}");
    Ok(())
}

/// `steps` updates of a bf16 parameter at 1.0 whose gradient is 1 (from
/// `sum(w)`), through `opt`.
fn train_bf16(opt: &mut dyn Optimizer, steps: usize) -> Result<Tensor> {
    let mut w = bf16_leaf(&[1.0; 4], &[4]);
    for _ in 0..steps {
        w.sum_all()?.backward()?;
        assert_eq!(w.grad().unwrap().dtype(), DType::BF16);
        opt.step(&mut [&mut w])?;
        opt.zero_grad(&mut [&mut w]);
    }
    Ok(w)
}

#[test]
fn master_weights_keep_updates_below_bf16_resolution() -> Result<()> {
    crate::init();
    // Near 1, bf16's spacing is 2⁻⁷ ≈ 0.0078: a step of 1e-3 rounds back to 1.
    let (lr, steps) = (1e-3, 100);
    let mut plain = bf16_leaf(&[1.0; 4], &[4]);
    for _ in 0..steps {
        let g = Tensor::ones([4], DType::BF16)?;
        let next = no_grad(|| &plain - &(&g * lr)?)?;
        plain.set_data(&next)?;
    }
    assert_eq!(f32s(&plain), [1.0; 4], "a plain bf16 update is lost");

    let mut sgd = Sgd::new(lr);
    let w = train_bf16(&mut sgd, steps)?;
    assert_eq!(w.dtype(), DType::BF16);
    let master = sgd.master(&w).expect("an f32 master copy");
    assert_eq!(master.dtype(), DType::F32);
    for m in master.to_vec::<f32>()? {
        assert!((m - 0.9).abs() < 1e-5, "master {m}");
    }
    // The parameter is the master rounded to bf16.
    for v in f32s(&w) {
        assert!((v - 0.9).abs() <= 0.004, "parameter {v}");
    }

    // Adam: each early step moves by about lr too; its moments are f32.
    let mut adam = Adam::new(lr);
    let w = train_bf16(&mut adam, steps)?;
    let master = adam.master(&w).expect("an f32 master copy");
    for m in master.to_vec::<f32>()? {
        assert!((m - 0.9).abs() < 1e-3, "master {m}");
    }
    assert!(f32s(&w).iter().all(|&v| v < 0.91), "{:?}", f32s(&w));

    // An f32 parameter keeps no master.
    let mut p = f32_leaf(&[1.0], &[1]);
    p.sum_all()?.backward()?;
    sgd.step(&mut [&mut p])?;
    assert!(sgd.master(&p).is_none());
    Ok(())
}

#[test]
fn grad_scaler_skips_a_step_with_inf_grads_and_backs_off() -> Result<()> {
    crate::init();
    let mut w = f32_leaf(&[1.0, 2.0], &[2]);
    let mut opt = Adam::new(0.1);
    let mut scaler = GradScaler::new();
    assert_eq!(scaler.get_scale(), 65536.0);
    let loss = (&w * f64::INFINITY)?.sum_all()?;
    scaler.scale(&loss)?.backward()?;
    assert!(
        !scaler.step(&mut opt, &mut [&mut w])?,
        "the step is skipped"
    );
    assert_eq!(scaler.found_inf(), Some(true));
    assert_eq!(w.to_vec::<f32>()?, [1.0, 2.0]);
    assert_eq!(opt.state_len(), 0, "nor does the state move");
    scaler.update()?;
    assert_eq!(scaler.get_scale(), 32768.0);
    assert_eq!(scaler.state().growth_tracker, 0);

    // NaN too.
    opt.zero_grad(&mut [&mut w]);
    let loss = (&w * f64::NAN)?.sum_all()?;
    scaler.scale(&loss)?.backward()?;
    assert!(!scaler.step(&mut opt, &mut [&mut w])?);
    scaler.update()?;
    assert_eq!(scaler.get_scale(), 16384.0);
    Ok(())
}

#[test]
fn grad_scaler_unscales_and_grows_after_the_interval() -> Result<()> {
    crate::init();
    let mut scaled = f32_leaf(&[1.0, -2.0], &[2]);
    let mut reference = f32_leaf(&[1.0, -2.0], &[2]);
    let (mut opt, mut ref_opt) = (Sgd::new(0.1).momentum(0.9), Sgd::new(0.1).momentum(0.9));
    let mut scaler = GradScaler::new().init_scale(1024.0).growth_interval(3);
    for step in 1..=4 {
        let loss = scaled.square()?.sum_all()?;
        let big = scaler.scale(&loss)?;
        assert_eq!(
            big.to_scalar::<f32>()?,
            loss.to_scalar::<f32>()? * scaler.get_scale() as f32
        );
        big.backward()?;
        assert!(scaler.step(&mut opt, &mut [&mut scaled])?);
        scaler.update()?;
        opt.zero_grad(&mut [&mut scaled]);

        reference.square()?.sum_all()?.backward()?;
        ref_opt.step(&mut [&mut reference])?;
        ref_opt.zero_grad(&mut [&mut reference]);
        // Scales are powers of 2: unscaling is exact.
        assert_eq!(
            scaled.to_vec::<f32>()?,
            reference.to_vec::<f32>()?,
            "step {step}"
        );
        let want = if step >= 3 { 2048.0 } else { 1024.0 };
        assert_eq!(scaler.get_scale(), want, "step {step}");
    }
    assert_eq!(scaler.state().growth_tracker, 1);

    // The state as numbers, and back.
    let saved = scaler.state();
    let mut restored = GradScaler::new();
    restored.load_state(saved)?;
    assert_eq!(restored.state(), saved);
    let bad = GradScalerState {
        scale: f64::INFINITY,
        ..saved
    };
    let e = restored.load_state(bad).unwrap_err().to_string();
    assert!(e.contains("GradScaler") && e.contains("scale"), "{e}");
    assert_eq!(restored.state(), saved);

    // Disabled: the loss as it is and the plain step.
    let off = GradScaler::new().enabled(false);
    assert_eq!(off.get_scale(), 1.0);
    let loss = scaled.sum_all()?;
    assert_eq!(off.scale(&loss)?.id(), loss.id());
    Ok(())
}

#[test]
fn autocast_with_master_weights_and_scaler_trains() -> Result<()> {
    crate::init();
    // Least squares for y = x · [2, -1] with bf16 parameters, under autocast, with
    // the scaler: the fit gets close.
    let mut rng = Rng::new(11);
    let x = rng.normal([64, 2], 0.0, 1.0, DType::F32)?;
    let truth = Tensor::from_slice(&[2.0f32, -1.0], [2, 1])?;
    let y = x.matmul(&truth)?;
    let mut w = bf16_leaf(&[0.0, 0.0], &[2, 1]);
    let mut opt = Adam::new(0.05);
    let mut scaler = GradScaler::new();
    for _ in 0..200 {
        let loss = autocast(DType::BF16, || x.matmul(&w)?.mse_loss(&y))?;
        assert_eq!(loss.dtype(), DType::F32);
        scaler.scale(&loss)?.backward()?;
        scaler.step(&mut opt, &mut [&mut w])?;
        scaler.update()?;
        opt.zero_grad(&mut [&mut w]);
    }
    let got = f32s(&w);
    assert!(
        (got[0] - 2.0).abs() < 0.05 && (got[1] + 1.0).abs() < 0.05,
        "{got:?}"
    );
    Ok(())
}

/// A checkpointed segment recomputed in backward converts as its forward did
/// (the scope's dtype is kept with the segment), and a backward pass called
/// inside a scope computes what it computes outside: the same bits either way.
#[test]
fn checkpoints_recompute_in_their_scope_and_backward_is_never_converted() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[0.3f32, -1.2, 0.7, 2.0, -0.5, 1.1], [2, 3])?;
    let w = f32_leaf(&[1.0, -1.0, 0.5, 2.0, -0.25, 1.5], &[3, 2]);
    let segment = |v: &[Tensor]| v[0].matmul(&v[1])?.tanh()?.matmul(&v[1].t()?);
    // Plain, under autocast.
    let plain = autocast(DType::BF16, || segment(&[x.clone(), w.clone()])?.sum_all())?;
    plain.backward()?;
    let want = f32s(&w.grad().unwrap());
    w.zero_grad();
    // Checkpointed under autocast; backward outside the scope.
    let ck = autocast(DType::BF16, || {
        autograd::checkpoint(segment, &[x.clone(), w.clone()])?.sum_all()
    })?;
    ck.backward()?;
    assert_eq!(
        f32s(&w.grad().unwrap()),
        want,
        "recomputed outside its scope"
    );
    w.zero_grad();
    // The backward pass called inside a scope.
    let again = autocast(DType::BF16, || segment(&[x.clone(), w.clone()])?.sum_all())?;
    autocast(DType::BF16, || again.backward())?;
    assert_eq!(
        f32s(&w.grad().unwrap()),
        want,
        "backward converted by its scope"
    );
    Ok(())
}
