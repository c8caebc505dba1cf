//! The training toolkit against PyTorch: AdamW, RMSprop and parameter groups
//! (for all four optimizers) step by step, the learning-rate schedules for two
//! groups over 25 steps, and gradient clipping, all compared in f64 to 1e-12
//! with what `scripts/reference/optim.py` wrote to
//! `tests/data/optim_reference.safetensors`. Then: resuming from one
//! safetensors file (model, AdamW with groups, warm-up then cosine, clipping)
//! gives the same bits as training straight through, in f32, f16 and bf16; and
//! the errors of `set_grad`, `add_param_group` and `load_state_dict`, which
//! leave everything unchanged.

use autograd::nn::{self, Linear, Module};
use autograd::optim::lr_scheduler::{
    Anneal, ChainedScheduler, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LrScheduler,
    OneCycleLR, Schedule, SequentialLR, StepLR,
};
use autograd::optim::{Adam, AdamW, GroupOptions, Optimizer, RMSprop, Sgd};
use autograd::prelude::*;
use autograd::random::Rng;
use autograd::{Error, ops};

const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/optim_reference.safetensors"
);

const STEPS: usize = 6;
const SCHED_STEPS: usize = 25;

fn reference(key: &str) -> Vec<f64> {
    let data = autograd::load(DATA).unwrap();
    let (_, t) = data
        .iter()
        .find(|(n, _)| n == key)
        .unwrap_or_else(|| panic!("{key} is not in {DATA}; run scripts/reference/optim.py"));
    t.to_vec::<f64>().unwrap()
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{what}, element {i}: {g} against PyTorch's {w}"
        );
    }
}

/// Element i is f(a·i + b), as `wave` in scripts/reference/common.py.
fn wave(n: usize, a: f64, b: f64, f: fn(f64) -> f64) -> Vec<f64> {
    (0..n).map(|i| f(i as f64 * a + b)).collect()
}

fn start() -> (Tensor, Tensor) {
    (
        crate::leaf(&wave(12, 0.37, -0.5, f64::sin), &[3, 4]),
        crate::leaf(&wave(4, 0.61, 0.2, f64::sin), &[4]),
    )
}

/// Σ sin(p0)·c0 + Σ sin(p1)·c1, backward.
fn backward(p0: &Tensor, p1: &Tensor) -> Result<()> {
    let c0 = Tensor::from_slice(&wave(12, 0.5, 0.3, f64::cos), [3, 4])?;
    let c1 = Tensor::from_slice(&wave(4, 0.7, -0.2, f64::cos), [4])?;
    let l0 = ops::sum_all(&ops::mul(&ops::sin(p0)?, &c0)?)?;
    let l1 = ops::sum_all(&ops::mul(&ops::sin(p1)?, &c1)?)?;
    ops::add(&l0, &l1)?.backward()
}

/// The optimizer `make` builds on the two parameters, stepped `STEPS` times,
/// against PyTorch's trajectory `case`.
fn check_trajectory(case: &str, make: impl Fn(&Tensor, &Tensor) -> Box<dyn Optimizer>) {
    crate::init();
    let (mut p0, mut p1) = start();
    let mut opt = make(&p0, &p1);
    let (mut got0, mut got1) = (p0.to_vec::<f64>().unwrap(), p1.to_vec::<f64>().unwrap());
    for _ in 0..STEPS {
        opt.zero_grad(&mut [&mut p0, &mut p1]);
        backward(&p0, &p1).unwrap();
        opt.step(&mut [&mut p0, &mut p1]).unwrap();
        got0.extend(p0.to_vec::<f64>().unwrap());
        got1.extend(p1.to_vec::<f64>().unwrap());
    }
    assert_close(
        &format!("{case}.p0"),
        &got0,
        &reference(&format!("{case}.p0")),
    );
    assert_close(
        &format!("{case}.p1"),
        &got1,
        &reference(&format!("{case}.p1")),
    );
}

#[test]
fn adamw_matches_pytorch() {
    check_trajectory("adamw", |_, _| Box::new(AdamW::new(0.05).weight_decay(0.1)));
    check_trajectory("adamw_defaults", |_, _| Box::new(AdamW::new(1e-3)));
}

#[test]
fn rmsprop_matches_pytorch() {
    check_trajectory("rmsprop", |_, _| Box::new(RMSprop::new(0.01)));
    check_trajectory("rmsprop_centered", |_, _| {
        Box::new(RMSprop::new(0.01).alpha(0.9).momentum(0.5).centered(true))
    });
    check_trajectory("rmsprop_wd", |_, _| {
        Box::new(RMSprop::new(0.01).weight_decay(0.1).momentum(0.9))
    });
}

#[test]
fn parameter_groups_match_pytorch_for_every_optimizer() {
    check_trajectory("adamw_groups", |_, p1| {
        let mut opt = AdamW::new(0.05)
            .weight_decay(0.1)
            .betas(0.8, 0.99)
            .eps(1e-6);
        let g = opt
            .add_param_group(
                &[p1],
                GroupOptions {
                    lr: Some(0.02),
                    weight_decay: Some(0.0),
                },
            )
            .unwrap();
        assert_eq!(g, 1);
        assert_eq!(opt.group_of(p1), 1);
        assert_eq!(opt.group_weight_decay(1), Some(0.0));
        Box::new(opt)
    });
    check_trajectory("adam_groups", |p0, p1| {
        // Group 0 keeps the optimizer's own settings; here both differ.
        let mut opt = Adam::new(0.05);
        opt.add_param_group(&[p0], GroupOptions::weight_decay(0.1))
            .unwrap();
        opt.add_param_group(&[p1], GroupOptions::lr(0.02)).unwrap();
        assert_eq!(opt.num_groups(), 3);
        Box::new(opt)
    });
    check_trajectory("sgd_groups", |_, p1| {
        let mut opt = Sgd::new(0.1)
            .momentum(0.9)
            .nesterov(true)
            .weight_decay(0.05);
        opt.add_param_group(
            &[p1],
            GroupOptions {
                lr: Some(0.3),
                weight_decay: Some(0.0),
            },
        )
        .unwrap();
        Box::new(opt)
    });
    check_trajectory("rmsprop_groups", |_, p1| {
        let mut opt = RMSprop::new(0.01).centered(true);
        opt.add_param_group(
            &[p1],
            GroupOptions {
                lr: Some(0.003),
                weight_decay: Some(0.2),
            },
        )
        .unwrap();
        Box::new(opt)
    });
}

/// The learning rates of two groups (0.1 and 0.02) at steps 0..=25 under
/// `schedule`, against PyTorch's.
fn check_schedule(case: &str, schedule: impl Schedule + 'static) {
    crate::init();
    let a = Tensor::zeros([1], DType::F64)
        .unwrap()
        .with_requires_grad(true);
    let b = Tensor::zeros([1], DType::F64)
        .unwrap()
        .with_requires_grad(true);
    let mut opt = Sgd::new(0.1);
    opt.add_param_group(&[&b], GroupOptions::lr(0.02)).unwrap();
    let _ = &a;
    let mut sched = LrScheduler::new(&mut opt, schedule).unwrap();
    assert_eq!(sched.base_lrs(), [0.1, 0.02]);
    let mut got = Vec::new();
    for step in 0..=SCHED_STEPS {
        if step > 0 {
            sched.step(&mut opt).unwrap();
        }
        assert_eq!(sched.step_count(), step);
        let lrs = sched.last_lr().to_vec();
        assert_eq!(opt.group_learning_rate(0), Some(lrs[0]), "{case}");
        assert_eq!(opt.group_learning_rate(1), Some(lrs[1]), "{case}");
        assert_eq!(opt.learning_rate(), lrs[0]);
        got.extend(lrs);
    }
    assert_close(
        &format!("sched.{case}"),
        &got,
        &reference(&format!("sched.{case}")),
    );
}

#[test]
fn schedules_match_pytorch_for_two_groups() {
    check_schedule("step", StepLR::new(4, 0.5));
    check_schedule("exponential", ExponentialLR::new(0.9));
    check_schedule("cosine", CosineAnnealingLR::new(10, 0.001));
    check_schedule("linear", LinearLR::new(0.2, 1.0, 6));
    check_schedule("lambda", LambdaLR::new(|t| 1.0 / (1.0 + t as f64)));
    check_schedule("onecycle_cos", OneCycleLR::new(SCHED_STEPS));
    check_schedule(
        "onecycle_linear",
        OneCycleLR::new(SCHED_STEPS)
            .pct_start(0.25)
            .anneal(Anneal::Linear)
            .div_factor(10.0)
            .final_div_factor(100.0),
    );
    check_schedule(
        "onecycle_three",
        OneCycleLR::new(SCHED_STEPS).three_phase(true),
    );
    check_schedule(
        "sequential",
        SequentialLR::new(
            vec![
                Box::new(LinearLR::new(0.1, 1.0, 5)),
                Box::new(CosineAnnealingLR::new(20, 0.0)),
            ],
            vec![5],
        ),
    );
    check_schedule(
        "chained",
        ChainedScheduler::new(vec![
            Box::new(LinearLR::new(0.5, 1.0, 8)),
            Box::new(StepLR::new(5, 0.7)),
        ]),
    );
}

#[test]
fn schedule_errors_change_nothing() -> Result<()> {
    crate::init();
    let mut opt = Sgd::new(0.1);
    // A step past OneCycleLR's total is an error, as in PyTorch.
    let mut sched = LrScheduler::new(&mut opt, OneCycleLR::new(10))?;
    for _ in 0..10 {
        sched.step(&mut opt)?;
    }
    let lr = opt.learning_rate();
    let err = sched.step(&mut opt).unwrap_err();
    assert!(err.to_string().contains("total_steps of 10"), "{err}");
    assert_eq!((sched.step_count(), opt.learning_rate()), (10, lr));
    // A cycle too short for its phases.
    assert!(LrScheduler::new(&mut opt, OneCycleLR::new(2)).is_err());

    // Settings out of range, at construction.
    let bad: Vec<Box<dyn Schedule>> = vec![
        Box::new(StepLR::new(0, 0.5)),
        Box::new(CosineAnnealingLR::new(0, 0.0)),
        Box::new(LinearLR::new(0.0, 1.0, 3)),
        Box::new(OneCycleLR::new(10).pct_start(1.5)),
        Box::new(SequentialLR::new(
            vec![Box::new(StepLR::new(1, 0.5))],
            vec![3],
        )),
    ];
    for s in bad {
        let mut opt = Sgd::new(0.1);
        assert!(LrScheduler::new(&mut opt, s).is_err());
        assert_eq!(opt.learning_rate(), 0.1);
    }

    // A group added after the scheduler was built.
    let b = Tensor::zeros([1], DType::F32)?.with_requires_grad(true);
    let mut opt = Sgd::new(0.1);
    let mut sched = LrScheduler::new(&mut opt, StepLR::new(1, 0.5))?;
    opt.add_param_group(&[&b], GroupOptions::default())?;
    let err = sched.step(&mut opt).unwrap_err();
    assert!(err.to_string().contains("2 parameter groups"), "{err}");
    assert_eq!(sched.step_count(), 0);
    Ok(())
}

#[test]
fn clipping_matches_pytorch() -> Result<()> {
    crate::init();
    for (case, norm_type, max_norm) in [
        ("norm2", 2.0, 0.5),
        ("norm1", 1.0, 0.5),
        ("norminf", f64::INFINITY, 0.5),
        ("norm3", 3.0, 0.5),
        ("norm2_large", 2.0, 100.0),
    ] {
        let (p0, p1) = start();
        backward(&p0, &p1)?;
        // What `model.parameters()` returns: a Vec<Tensor>.
        let params = vec![p0.clone(), p1.clone()];
        let total = nn::clip_grad_norm(&params, max_norm, norm_type)?;
        assert_close(
            &format!("clip.{case}.total"),
            &[total],
            &reference(&format!("clip.{case}.total")),
        );
        for (i, p) in [&p0, &p1].iter().enumerate() {
            assert_close(
                &format!("clip.{case}.g{i}"),
                &crate::grad_vec(p),
                &reference(&format!("clip.{case}.g{i}")),
            );
            assert!(p.grad().unwrap().grad_fn().is_none());
        }
    }
    let (p0, p1) = start();
    backward(&p0, &p1)?;
    nn::clip_grad_value(&[&p0, &p1], 0.3)?;
    assert_close(
        "clip.value.g0",
        &crate::grad_vec(&p0),
        &reference("clip.value.g0"),
    );
    assert_close(
        "clip.value.g1",
        &crate::grad_vec(&p1),
        &reference("clip.value.g1"),
    );

    // A NaN gradient: refused with error_if_nonfinite, nothing scaled.
    let w = crate::leaf(&[1.0, 2.0], &[2]);
    w.set_grad(Some(Tensor::from_slice(&[f64::NAN, 1.0], [2])?))?;
    let err = nn::clip_grad_norm_with(&[&w], 1.0, 2.0, true).unwrap_err();
    assert!(err.to_string().contains("NaN"), "{err}");
    assert_eq!(crate::grad_vec(&w)[1], 1.0);
    Ok(())
}

#[test]
fn clipping_adds_nothing_to_a_graph_and_accumulation_goes_on() -> Result<()> {
    crate::init();
    let w = crate::leaf(&[3.0, 4.0], &[2]);
    ops::sum_all(&ops::mul(&w, &w)?)?.backward()?; // 2w = [6, 8], norm 10
    let before = w.grad().unwrap();
    let total = nn::clip_grad_norm(&[&w], 5.0, 2.0)?;
    assert!((total - 10.0).abs() < 1e-12);
    let coef = 5.0 / (10.0 + 1e-6);
    assert_close("clipped", &crate::grad_vec(&w), &[6.0 * coef, 8.0 * coef]);
    assert_eq!(
        before.to_vec::<f64>()?,
        [6.0, 8.0],
        "the old handle is a snapshot"
    );
    // The next backward adds to the clipped gradient.
    ops::sum_all(&w)?.backward()?;
    assert_close(
        "accumulated",
        &crate::grad_vec(&w),
        &[6.0 * coef + 1.0, 8.0 * coef + 1.0],
    );
    Ok(())
}

#[test]
fn set_grad_checks_shape_dtype_and_leafness() -> Result<()> {
    crate::init();
    let w = crate::leaf(&[1.0, 2.0], &[2]);
    w.set_grad(Some(Tensor::from_slice(&[0.5f64, 0.25], [2])?))?;
    let err = w
        .set_grad(Some(Tensor::zeros([3], DType::F64)?))
        .unwrap_err();
    assert!(matches!(err, Error::Shape { op: "set_grad", .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("[3]") && msg.contains("[2]"), "{msg}");
    let err = w
        .set_grad(Some(Tensor::zeros([2], DType::F32)?))
        .unwrap_err();
    assert!(err.to_string().contains("f32"), "{err}");
    assert_eq!(
        crate::grad_vec(&w),
        [0.5, 0.25],
        "a refused gradient changes nothing"
    );

    let out = ops::mul_scalar(&w, 2.0)?;
    let err = out
        .set_grad(Some(Tensor::zeros([2], DType::F64)?))
        .unwrap_err();
    assert!(err.to_string().contains("mul_scalar"), "{err}");
    let constant = Tensor::zeros([2], DType::F64)?;
    assert!(
        constant
            .set_grad(Some(Tensor::zeros([2], DType::F64)?))
            .is_err()
    );

    w.set_grad(None)?;
    assert!(w.grad().is_none());
    Ok(())
}

#[test]
fn adamw_and_rmsprop_follow_the_shared_conventions() -> Result<()> {
    crate::init();
    let make: [fn() -> Box<dyn Optimizer>; 2] = [
        || Box::new(AdamW::new(0.1)),
        || Box::new(RMSprop::new(0.1).momentum(0.5).centered(true)),
    ];
    for make in make {
        // Listed twice: updated once, as when listed once.
        let (mut a, mut b) = (
            crate::leaf(&[1.0, -2.0], &[2]),
            crate::leaf(&[1.0, -2.0], &[2]),
        );
        let mut a2 = a.clone();
        let (mut once, mut twice) = (make(), make());
        for _ in 0..3 {
            ops::sum_all(&ops::square(&a)?)?.backward()?;
            ops::sum_all(&ops::square(&b)?)?.backward()?;
            twice.step(&mut [&mut a, &mut a2])?;
            once.step(&mut [&mut b])?;
            once.zero_grad(&mut [&mut a, &mut b]);
        }
        assert_eq!(a.to_vec::<f64>()?, b.to_vec::<f64>()?);

        // Loss scaling: gradients 1024 times too large, unscaled by the step.
        let (mut s, mut u) = (
            crate::leaf(&[0.5, 3.0], &[2]),
            crate::leaf(&[0.5, 3.0], &[2]),
        );
        let (mut scaled, mut plain) = (make(), make());
        for _ in 0..3 {
            (ops::sum_all(&ops::square(&s)?)? * 1024.0)?.backward()?;
            ops::sum_all(&ops::square(&u)?)?.backward()?;
            scaled.step_unscaled(&mut [&mut s], 1.0 / 1024.0)?;
            plain.step(&mut [&mut u])?;
            plain.zero_grad(&mut [&mut s, &mut u]);
        }
        assert_eq!(s.to_vec::<f64>()?, u.to_vec::<f64>()?);
    }

    // State goes with the parameter.
    let mut opt = RMSprop::new(0.1);
    let mut keep = crate::leaf(&[1.0], &[1]);
    {
        let mut gone = crate::leaf(&[1.0], &[1]);
        ops::sum_all(&ops::square(&gone)?)?.backward()?;
        ops::sum_all(&ops::square(&keep)?)?.backward()?;
        opt.step(&mut [&mut gone, &mut keep])?;
        assert_eq!(opt.state_len(), 2);
    }
    opt.step(&mut [&mut keep])?;
    assert_eq!(opt.state_len(), 1);

    // Hyperparameters out of range, per optimizer and per group.
    let mut w = crate::leaf(&[1.0], &[1]);
    ops::sum_all(&w)?.backward()?;
    let mut with_bad_group = AdamW::new(0.1);
    with_bad_group.add_param_group(&[&w], GroupOptions::default())?;
    with_bad_group.set_group_learning_rate(1, -1.0)?;
    let bad: Vec<Box<dyn Optimizer>> = vec![
        Box::new(AdamW::new(0.1).betas(1.0, 0.999)),
        Box::new(AdamW::new(0.1).weight_decay(f64::NAN)),
        Box::new(RMSprop::new(0.1).alpha(1.5)),
        Box::new(RMSprop::new(0.1).momentum(-0.5)),
        Box::new(RMSprop::new(-0.1)),
        Box::new(with_bad_group),
    ];
    for mut opt in bad {
        let err = opt.step(&mut [&mut w]).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    }
    assert_eq!(w.to_vec::<f64>()?, [1.0]);
    Ok(())
}

#[test]
fn group_errors_name_the_problem() -> Result<()> {
    crate::init();
    let w = crate::leaf(&[1.0], &[1]);
    let mut opt = AdamW::new(0.1);
    opt.add_param_group(&[&w], GroupOptions::lr(0.01))?;
    let err = opt
        .add_param_group(&[&w], GroupOptions::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("already in parameter group 1"),
        "{err}"
    );
    assert_eq!(opt.num_groups(), 2, "nothing added");
    let err = opt
        .add_param_group(&[&w], GroupOptions::lr(f64::INFINITY))
        .unwrap_err();
    assert!(err.to_string().contains("learning rate"), "{err}");
    let err = opt.set_group_learning_rate(2, 0.1).unwrap_err();
    assert!(err.to_string().contains("no parameter group 2"), "{err}");
    assert_eq!(opt.group_learning_rate(2), None);
    Ok(())
}

#[derive(Module)]
struct Mlp {
    fc1: Linear,
    fc2: Linear,
}

impl Mlp {
    fn new(seed: u64, dtype: DType) -> Result<Mlp> {
        let mut rng = Rng::new(seed);
        let mut m = Mlp {
            fc1: Linear::new(3, 5, true, &mut rng)?,
            fc2: Linear::new(5, 2, true, &mut rng)?,
        };
        if dtype != DType::F32 {
            m.to_dtype(dtype)?;
        }
        Ok(m)
    }

    fn loss(&self, dtype: DType) -> Result<Tensor> {
        let x = Tensor::from_slice(&wave(12, 0.9, 0.1, f64::sin), [4, 3])?;
        let t = Tensor::from_slice(&wave(8, 0.4, -1.0, f64::cos), [4, 2])?;
        let x = autograd::compute::cast(&x, dtype)?;
        let t = autograd::compute::cast(&t, dtype)?;
        let h = ops::tanh(&self.fc1.forward(&x)?)?;
        let y = self.fc2.forward(&h)?;
        ops::mean_all(&ops::square(&ops::sub(&y, &t)?)?)
    }

    fn biases(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .filter(|(n, _)| n.ends_with("bias"))
            .map(|(_, t)| t)
            .collect()
    }
}

fn schedule() -> SequentialLR {
    SequentialLR::new(
        vec![
            Box::new(LinearLR::new(0.1, 1.0, 3)),
            Box::new(CosineAnnealingLR::new(7, 1e-4)),
        ],
        vec![3],
    )
}

/// A model, AdamW with the biases in a group of their own (no decay, half the
/// learning rate), and a warm-up then cosine schedule.
fn setup(seed: u64, dtype: DType) -> Result<(Mlp, AdamW, LrScheduler)> {
    let model = Mlp::new(seed, dtype)?;
    let mut opt = AdamW::new(0.05).weight_decay(0.1);
    opt.add_param_group(
        &model.biases(),
        GroupOptions {
            lr: Some(0.025),
            weight_decay: Some(0.0),
        },
    )?;
    let sched = LrScheduler::new(&mut opt, schedule())?;
    Ok((model, opt, sched))
}

fn train(model: &mut Mlp, opt: &mut AdamW, sched: &mut LrScheduler, dtype: DType) -> Result<()> {
    model.loss(dtype)?.backward()?;
    nn::clip_grad_norm(&model.parameters(), 0.5, 2.0)?;
    opt.step(&mut model.parameters_mut())?;
    model.zero_grad();
    sched.step(opt)
}

/// Every parameter's bits (through f32, exact for every float dtype here but f64).
fn bits(model: &Mlp) -> Vec<(String, Vec<u32>)> {
    model
        .named_parameters()
        .into_iter()
        .map(|(n, t)| {
            let v = t.to_vec::<f32>().unwrap();
            (n, v.iter().map(|x| x.to_bits()).collect())
        })
        .collect()
}

fn save_all(path: &std::path::Path, model: &Mlp, opt: &AdamW, sched: &LrScheduler) -> Result<()> {
    let mut state = nn::add_prefix("model.", model.state_dict());
    state.extend(nn::add_prefix(
        "optimizer.",
        opt.state_dict(&model.named_parameters())?,
    ));
    state.extend(nn::add_prefix("scheduler.", sched.state_dict()));
    let refs: Vec<(&str, &Tensor)> = state.iter().map(|(k, t)| (k.as_str(), t)).collect();
    autograd::save(path, &refs)
}

fn temp_path(what: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "autograd-training-{what}-{}.safetensors",
        std::process::id()
    ))
}

#[test]
fn resuming_from_a_checkpoint_gives_the_same_bits() -> Result<()> {
    crate::init();
    let dtype = DType::F32;
    let (mut m, mut opt, mut sched) = setup(1, dtype)?;
    for _ in 0..10 {
        train(&mut m, &mut opt, &mut sched, dtype)?;
    }

    let path = temp_path("f32");
    let (mut m1, mut opt1, mut sched1) = setup(1, dtype)?;
    for _ in 0..5 {
        train(&mut m1, &mut opt1, &mut sched1, dtype)?;
    }
    save_all(&path, &m1, &opt1, &sched1)?;
    drop((m1, opt1, sched1));

    // Fresh, from another seed: everything that matters comes from the file.
    let (mut m2, mut opt2, mut sched2) = setup(7, dtype)?;
    assert_ne!(bits(&m2), bits(&m));
    let loaded = autograd::load(&path)?;
    std::fs::remove_file(&path).ok();
    m2.load_state_dict(&nn::strip_prefix("model.", &loaded), true)?;
    opt2.load_state_dict(
        &m2.named_parameters(),
        &nn::strip_prefix("optimizer.", &loaded),
    )?;
    sched2.load_state_dict(&mut opt2, &nn::strip_prefix("scheduler.", &loaded))?;
    assert_eq!(sched2.step_count(), 5);
    assert_eq!(opt2.state_len(), 4);
    for _ in 0..5 {
        train(&mut m2, &mut opt2, &mut sched2, dtype)?;
    }
    assert_eq!(bits(&m2), bits(&m));
    assert_eq!(sched2.last_lr(), sched.last_lr());
    assert_eq!(opt2.group_learning_rate(1), opt.group_learning_rate(1));
    Ok(())
}

#[test]
fn resuming_half_parameters_restores_their_masters() -> Result<()> {
    crate::init();
    for dtype in [DType::F16, DType::BF16] {
        let (mut m, mut opt, mut sched) = setup(3, dtype)?;
        for _ in 0..10 {
            train(&mut m, &mut opt, &mut sched, dtype)?;
        }

        let path = temp_path(&format!("{dtype}"));
        let (mut m1, mut opt1, mut sched1) = setup(3, dtype)?;
        for _ in 0..5 {
            train(&mut m1, &mut opt1, &mut sched1, dtype)?;
        }
        save_all(&path, &m1, &opt1, &sched1)?;
        let state = opt1.state_dict(&m1.named_parameters())?;
        let (_, master) = state
            .iter()
            .find(|(k, _)| k == "state.fc1.weight.master")
            .expect("a half parameter's master is saved");
        assert_eq!(master.dtype(), DType::F32);
        drop((m1, opt1, sched1, state));

        // Fresh: no groups added by hand (the state says which), and the
        // scheduler built after the optimizer was loaded.
        let mut m2 = Mlp::new(11, dtype)?;
        let loaded = autograd::load(&path)?;
        std::fs::remove_file(&path).ok();
        m2.load_state_dict(&nn::strip_prefix("model.", &loaded), true)?;
        let mut opt2 = AdamW::new(0.5);
        opt2.load_state_dict(
            &m2.named_parameters(),
            &nn::strip_prefix("optimizer.", &loaded),
        )?;
        assert_eq!(opt2.num_groups(), 2);
        assert_eq!(opt2.group_weight_decay(0), Some(0.1));
        assert_eq!(opt2.group_of(&m2.fc2.bias.clone().unwrap()), 1);
        let w = m2.fc1.weight.clone();
        assert_eq!(opt2.master(&w).unwrap().dtype(), DType::F32);
        // Built now, the scheduler sets step-0 learning rates from the loaded
        // ones; its state puts back its step and base rates, and the learning
        // rates of that step.
        let mut sched2 = LrScheduler::new(&mut opt2, schedule())?;
        sched2.load_state_dict(&mut opt2, &nn::strip_prefix("scheduler.", &loaded))?;
        assert_eq!(opt2.group_learning_rate(1), Some(sched2.last_lr()[1]));
        for _ in 0..5 {
            train(&mut m2, &mut opt2, &mut sched2, dtype)?;
        }
        assert_eq!(bits(&m2), bits(&m), "{dtype}");
        let masters = |o: &AdamW, m: &Mlp| -> Vec<Vec<f32>> {
            m.parameters()
                .iter()
                .map(|p| o.master(p).unwrap().to_vec::<f32>().unwrap())
                .collect()
        };
        assert_eq!(masters(&opt2, &m2), masters(&opt, &m), "{dtype}");
    }
    Ok(())
}

/// Every entry's values (as f64) by name: to see that a state is unchanged.
fn snapshot(state: &[(String, Tensor)]) -> Vec<(String, Vec<f64>)> {
    state
        .iter()
        .map(|(k, t)| (k.clone(), t.to_vec::<f64>().unwrap()))
        .collect()
}

#[test]
fn a_state_that_does_not_fit_loads_nothing() -> Result<()> {
    crate::init();
    let dtype = DType::F32;
    let (mut m, mut opt, mut sched) = setup(5, dtype)?;
    for _ in 0..2 {
        train(&mut m, &mut opt, &mut sched, dtype)?;
    }
    let named = m.named_parameters();
    let good = opt.state_dict(&named)?;
    let (mut other_m, mut other, mut other_sched) = setup(6, dtype)?;
    train(&mut other_m, &mut other, &mut other_sched, dtype)?;
    other.set_group_learning_rate(1, 0.123)?;
    let other_named = other_m.named_parameters();
    let before = snapshot(&other.state_dict(&other_named)?);

    // A parameter the state does not know.
    let missing: Vec<(String, Tensor)> = good
        .iter()
        .filter(|(k, _)| !k.starts_with("state.fc2.bias."))
        .cloned()
        .collect();
    let err = other.load_state_dict(&other_named, &missing).unwrap_err();
    assert!(err.to_string().contains("fc2.bias"), "{err}");

    // A buffer of the wrong shape.
    let mut wrong = good.clone();
    for (k, t) in wrong.iter_mut() {
        if k == "state.fc1.weight.exp_avg" {
            *t = Tensor::zeros([3, 5], DType::F32)?;
        }
    }
    let err = other.load_state_dict(&other_named, &wrong).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("state.fc1.weight.exp_avg")
            && msg.contains("[3, 5]")
            && msg.contains("[5, 3]"),
        "{msg}"
    );

    // An entry no parameter explains.
    let mut unknown = good.clone();
    unknown.push((
        "state.fc3.weight.exp_avg".to_string(),
        Tensor::zeros([1], DType::F32)?,
    ));
    let err = other.load_state_dict(&other_named, &unknown).unwrap_err();
    assert!(
        err.to_string().contains("state.fc3.weight.exp_avg"),
        "{err}"
    );

    // Another optimizer's state.
    let rms = RMSprop::new(0.1).state_dict(&named)?;
    assert!(other.load_state_dict(&other_named, &rms).is_err());
    let adam = Adam::new(0.1).state_dict(&named)?;
    let err = other.load_state_dict(&other_named, &adam).unwrap_err();
    assert!(err.to_string().contains("AdamW"), "{err}");

    assert_eq!(snapshot(&other.state_dict(&other_named)?), before);
    assert_eq!(other.group_learning_rate(1), Some(0.123));

    // Names that leave out a parameter with state: refused when saving.
    let err = opt.state_dict(&named[..2]).unwrap_err();
    assert!(err.to_string().contains("do not list"), "{err}");

    // The scheduler: another number of groups, loads nothing.
    let mut one_group = Sgd::new(0.1);
    let mut s1 = LrScheduler::new(&mut one_group, schedule())?;
    let err = s1
        .load_state_dict(&mut one_group, &sched.state_dict())
        .unwrap_err();
    assert!(err.to_string().contains("2 base learning rates"), "{err}");
    assert_eq!(s1.step_count(), 0);
    assert_eq!(one_group.learning_rate(), s1.last_lr()[0]);
    Ok(())
}
