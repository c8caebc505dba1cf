//! The losses of issue 38 with PyTorch's options (`l1_loss`, `mse_loss` with a
//! reduction, `smooth_l1_loss` and `huber_loss`): values and gradients (of the
//! prediction and of the target) against PyTorch in f64 and f32, for every
//! reduction and for betas and deltas either side of the differences; and the
//! errors for mismatched shapes and bad options.
//!
//! Then `cross_entropy_with` (class indices with ignored positions, class
//! weights, label smoothing, `[N, C, d]` and unbatched `[C]` inputs, class
//! probabilities), `nll_loss`, `binary_cross_entropy` (weights, the clamped logs),
//! `binary_cross_entropy_with_logits` (`pos_weight`, weights, logits of ±50) and
//! `kl_div` (every reduction, both kinds of target, a 0 in the target): values
//! and gradients of the input and of floating targets against PyTorch in f64 and
//! f32, gradcheck and gradgradcheck of each, and their errors.
//!
//! The constants were computed by PyTorch 2 in float64 with
//! `scripts/reference/losses.py` (its inputs are closed-form: the test builds the
//! same ones).

use autograd::ops::{
    self, BceWithLogitsOptions, CrossEntropyOptions, HuberOptions, KlDivOptions, KlReduction,
    NllLossOptions, Reduction, SmoothL1Options,
};
use autograd::prelude::*;
use autograd::{BackwardOptions, GradcheckOptions};

/// Element `i` is `scale · f(a · i + b)`, as the script's `wave` times a scale.
fn wave(shape: &[usize], a: f64, b: f64, f: fn(f64) -> f64, scale: f64) -> Tensor {
    let n = shape.iter().product::<usize>();
    let v: Vec<f64> = (0..n).map(|i| scale * f(a * i as f64 + b)).collect();
    Tensor::from_slice(&v, shape).unwrap()
}

/// The script's prediction and target, both `[3, 4]`.
fn inputs() -> [Tensor; 2] {
    [
        wave(&[3, 4], 0.7, 0.1, f64::sin, 2.0),
        wave(&[3, 4], 0.45, 0.2, f64::cos, 1.5),
    ]
}

/// PyTorch's output and two gradients of one case.
type Want = [&'static [f64]; 3];
/// PyTorch's output and the gradient of the input (class-index targets get none).
type Want2 = [&'static [f64]; 2];
/// PyTorch's output and the gradients of the input and the (floating) target.
type Want3 = [&'static [f64]; 3];

/// The output and the gradients of `Σ y · sin(0.5 j + 0.3)` of `f` at `inputs`, in
/// `dtype`, as f64 values.
fn run(f: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>, dtype: DType) -> Result<Vec<Vec<f64>>> {
    let leaves: Vec<Tensor> = inputs()
        .iter()
        .map(|t| Ok(t.to_dtype(dtype)?.detach().with_requires_grad(true)))
        .collect::<Result<_>>()?;
    let y = f(&leaves[0], &leaves[1])?;
    assert_eq!(y.dtype(), dtype);
    let r = wave(y.dims(), 0.5, 0.3, f64::sin, 1.0).to_dtype(dtype)?;
    let loss = (&y * &r)?.sum_all()?;
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = grad(&loss, &refs, BackwardOptions::default())?;
    let mut out = vec![y.to_vec::<f64>()?];
    for g in grads {
        out.push(g.expect("both inputs are used").to_vec::<f64>()?);
    }
    Ok(out)
}

/// Checks `f` against PyTorch's output and two gradients, in f64 and f32.
fn check(what: &str, f: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>, want: [&[f64]; 3]) {
    crate::init();
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        let got = run(f, dtype).unwrap();
        assert_eq!(got.len(), 3, "{what}");
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.len(), w.len(), "{what} ({dtype}): result {k}");
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                assert!(
                    (a - b).abs() <= tol * (1.0 + b.abs()),
                    "{what} ({dtype}): result {k} (0: output, then gradients), element {i}: \
                     {a}, PyTorch {b}"
                );
            }
        }
    }
}

#[test]
fn l1_and_mse_losses_match_pytorch_for_every_reduction() {
    let cases: [(Reduction, Want, Want); 3] = [
        (
            Reduction::None,
            [L1_NONE_Y, L1_NONE_D0, L1_NONE_D1],
            [MSE_NONE_Y, MSE_NONE_D0, MSE_NONE_D1],
        ),
        (
            Reduction::Sum,
            [L1_SUM_Y, L1_SUM_D0, L1_SUM_D1],
            [MSE_SUM_Y, MSE_SUM_D0, MSE_SUM_D1],
        ),
        (
            Reduction::Mean,
            [L1_MEAN_Y, L1_MEAN_D0, L1_MEAN_D1],
            [MSE_MEAN_Y, MSE_MEAN_D0, MSE_MEAN_D1],
        ),
    ];
    for (red, l1, mse) in cases {
        check(
            &format!("l1_loss {red:?}"),
            &|p, t| ops::l1_loss(p, t, red),
            l1,
        );
        check(
            &format!("mse_loss_with {red:?}"),
            &|p, t| ops::mse_loss_with(p, t, red),
            mse,
        );
    }
    // The default reduction is PyTorch's, and the old `mse_loss` is its mean.
    assert_eq!(Reduction::default(), Reduction::Mean);
    check(
        "mse_loss",
        &|p, t| ops::mse_loss(p, t),
        [MSE_MEAN_Y, MSE_MEAN_D0, MSE_MEAN_D1],
    );
}

#[test]
fn smooth_l1_loss_matches_pytorch_for_its_betas() {
    assert_eq!(
        SmoothL1Options::default(),
        SmoothL1Options {
            reduction: Reduction::Mean,
            beta: 1.0
        }
    );
    let cases: [(SmoothL1Options, Want); 3] = [
        (
            SmoothL1Options::default(),
            [
                SMOOTH_L1_DEFAULT_Y,
                SMOOTH_L1_DEFAULT_D0,
                SMOOTH_L1_DEFAULT_D1,
            ],
        ),
        (
            SmoothL1Options {
                reduction: Reduction::None,
                beta: 0.5,
            },
            [
                SMOOTH_L1_HALF_NONE_Y,
                SMOOTH_L1_HALF_NONE_D0,
                SMOOTH_L1_HALF_NONE_D1,
            ],
        ),
        (
            SmoothL1Options {
                reduction: Reduction::Sum,
                beta: 0.0,
            },
            [
                SMOOTH_L1_ZERO_SUM_Y,
                SMOOTH_L1_ZERO_SUM_D0,
                SMOOTH_L1_ZERO_SUM_D1,
            ],
        ),
    ];
    for (o, want) in cases {
        check(
            &format!("smooth_l1_loss {o:?}"),
            &|p, t| ops::smooth_l1_loss(p, t, o),
            want,
        );
    }
}

#[test]
fn huber_loss_matches_pytorch_for_its_deltas() {
    assert_eq!(
        HuberOptions::default(),
        HuberOptions {
            reduction: Reduction::Mean,
            delta: 1.0
        }
    );
    let cases: [(HuberOptions, Want); 3] = [
        (
            HuberOptions::default(),
            [HUBER_DEFAULT_Y, HUBER_DEFAULT_D0, HUBER_DEFAULT_D1],
        ),
        (
            HuberOptions {
                reduction: Reduction::None,
                delta: 0.5,
            },
            [HUBER_HALF_NONE_Y, HUBER_HALF_NONE_D0, HUBER_HALF_NONE_D1],
        ),
        (
            HuberOptions {
                reduction: Reduction::Sum,
                delta: 2.0,
            },
            [HUBER_TWO_SUM_Y, HUBER_TWO_SUM_D0, HUBER_TWO_SUM_D1],
        ),
    ];
    for (o, want) in cases {
        check(
            &format!("huber_loss {o:?}"),
            &|p, t| ops::huber_loss(p, t, o),
            want,
        );
    }
}

#[test]
fn losses_reject_mismatched_shapes_and_bad_options_naming_the_fix() {
    crate::init();
    let p = Tensor::zeros([3, 1], DType::F32).unwrap();
    let t = Tensor::zeros([3], DType::F32).unwrap();
    let shape_errors = [
        ops::l1_loss(&p, &t, Reduction::Mean),
        ops::mse_loss_with(&p, &t, Reduction::Sum),
        ops::smooth_l1_loss(&p, &t, SmoothL1Options::default()),
        ops::huber_loss(&p, &t, HuberOptions::default()),
    ];
    for r in shape_errors {
        match r {
            Err(Error::Shape { msg, .. }) => {
                assert!(msg.contains("[3, 1]") || msg.contains("3, 1"), "{msg}");
                assert!(msg.contains("must match"), "{msg}");
            }
            other => panic!("expected a shape error, got {other:?}"),
        }
    }
    let q = Tensor::zeros([3], DType::F32).unwrap();
    for beta in [-1.0, f64::NAN] {
        let o = SmoothL1Options {
            beta,
            ..Default::default()
        };
        match ops::smooth_l1_loss(&q, &q, o) {
            Err(Error::InvalidArgument { op, msg }) => {
                assert_eq!(op, "smooth_l1_loss");
                assert!(msg.contains("at least 0"), "{msg}");
            }
            other => panic!("beta {beta}: expected an error, got {other:?}"),
        }
    }
    for delta in [0.0, -2.0, f64::INFINITY] {
        let o = HuberOptions {
            delta,
            ..Default::default()
        };
        match ops::huber_loss(&q, &q, o) {
            Err(Error::InvalidArgument { op, msg }) => {
                assert_eq!(op, "huber_loss");
                assert!(msg.contains("above 0"), "{msg}");
            }
            other => panic!("delta {delta}: expected an error, got {other:?}"),
        }
    }
}

// ----- cross_entropy_with, nll_loss, binary_cross_entropy(_with_logits), kl_div -----

/// A tensor of `shape` whose flat element `i` is `f(i)`.
fn from_fn(shape: &[usize], f: impl Fn(usize) -> f64) -> Tensor {
    let n = shape.iter().product::<usize>();
    let v: Vec<f64> = (0..n).map(f).collect();
    Tensor::from_slice(&v, shape).unwrap()
}

/// An `i64` tensor (class targets).
fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// A tensor of `v` (weights).
fn floats(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).unwrap()
}

/// `softmax(x)` along `axis`, a constant (the script's probability targets).
fn probabilities(x: Tensor, axis: isize) -> Tensor {
    crate::init();
    ops::softmax(&x, axis).unwrap().detach()
}

/// The script's class-loss inputs.
fn logits() -> Tensor {
    wave(&[4, 3], 0.7, 0.1, f64::sin, 2.0)
}
fn classes() -> Tensor {
    ints(&[2, 0, -100, 1], &[4])
}
fn class_weight() -> Tensor {
    floats(&[0.5, 2.0, 1.25], &[3])
}
fn logits_nd() -> Tensor {
    wave(&[2, 3, 4], 0.37, 0.2, f64::sin, 2.0)
}
fn classes_nd() -> Tensor {
    ints(&[0, 2, 1, -100, 2, 2, 0, 1], &[2, 4])
}
fn logits_1d() -> Tensor {
    wave(&[5], 0.9, 0.4, f64::sin, 1.5)
}
fn probs() -> Tensor {
    probabilities(wave(&[4, 3], 0.45, 0.2, f64::cos, 1.5), 1)
}
fn probs_nd() -> Tensor {
    probabilities(wave(&[2, 3, 4], 0.3, 0.5, f64::cos, 1.5), 1)
}

/// The script's binary inputs: probabilities in (0.05, 0.95), targets in [0, 1],
/// a weight `[4]`.
fn bce_input() -> Tensor {
    from_fn(&[3, 4], |i| 0.5 + 0.45 * (0.7 * i as f64 + 0.1).sin())
}
fn bce_target() -> Tensor {
    from_fn(&[3, 4], |i| 0.5 + 0.5 * (0.45 * i as f64 + 0.2).cos())
}
fn bce_weight() -> Tensor {
    from_fn(&[4], |i| 0.5 + (0.8 * i as f64 + 0.3).sin().abs())
}

/// The script's logits, ±50 at flat positions 0, 1, 4, 5 (targets 0, 1, 0, 1
/// there).
fn bcel_inputs() -> [Tensor; 2] {
    let big = |i: usize| match i {
        0 | 5 => Some(50.0),
        1 | 4 => Some(-50.0),
        _ => None,
    };
    let x = from_fn(&[3, 4], |i| {
        big(i).unwrap_or(3.0 * (0.7 * i as f64 + 0.1).sin())
    });
    let t = from_fn(&[3, 4], |i| match i {
        0 | 4 => 0.0,
        1 | 5 => 1.0,
        _ => 0.5 + 0.5 * (0.45 * i as f64 + 0.2).cos(),
    });
    [x, t]
}

/// The script's kl_div inputs: log-probabilities, probabilities with a 0 at flat
/// position 5, and log-probabilities.
fn kl_inputs() -> [Tensor; 3] {
    crate::init();
    let x = ops::log_softmax(&wave(&[3, 4], 0.7, 0.1, f64::sin, 1.0), 1)
        .unwrap()
        .detach();
    let t = from_fn(&[3, 4], |i| {
        if i == 5 {
            0.0
        } else {
            0.5 + 0.4 * (0.45 * i as f64 + 0.2).cos()
        }
    });
    let log_t = from_fn(&[3, 4], |i| -1.0 - 0.5 * (0.45 * i as f64 + 0.2).cos());
    [x, t, log_t]
}

/// The output and the gradients of `Σ y · sin(0.5 j + 0.3)` of `f` with respect to
/// the floating `inputs` (cast to `dtype`; integer ones, class targets, are kept and
/// not differentiated), as f64 values.
fn run_some(
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    dtype: DType,
) -> Result<Vec<Vec<f64>>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|t| match t.dtype().is_float() {
            true => Ok(t.to_dtype(dtype)?.detach().with_requires_grad(true)),
            false => Ok(t.clone()),
        })
        .collect::<Result<_>>()?;
    let y = f(&leaves)?;
    assert_eq!(y.dtype(), dtype);
    let r = wave(y.dims(), 0.5, 0.3, f64::sin, 1.0).to_dtype(dtype)?;
    let loss = (&y * &r)?.sum_all()?;
    let wrt: Vec<&Tensor> = leaves.iter().filter(|t| t.requires_grad()).collect();
    let grads = grad(&loss, &wrt, BackwardOptions::default())?;
    let mut out = vec![y.to_vec::<f64>()?];
    for (g, x) in grads.into_iter().zip(wrt) {
        let g = g.expect("every floating input is used");
        assert_eq!(g.dims(), x.dims(), "a gradient has its input's shape");
        out.push(g.to_vec::<f64>()?);
    }
    Ok(out)
}

/// Checks `f` against PyTorch's output and gradients of the floating inputs, in
/// f64 (1e-12) and f32 (2e-5). A NaN in `want` is a gradient PyTorch gives as NaN
/// where this library gives a finite one (the documented deviation of `kl_div`'s
/// target gradient at a target of 0): there the result must be finite (the test
/// checks its value itself).
fn check_some(
    what: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    want: &[&[f64]],
) {
    crate::init();
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 2e-5)] {
        let got = run_some(f, inputs, dtype).unwrap();
        assert_eq!(got.len(), want.len(), "{what}: results");
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.len(), w.len(), "{what} ({dtype}): result {k}");
            for (i, (a, b)) in g.iter().zip(w.iter()).enumerate() {
                let ok = match b.is_nan() {
                    true => a.is_finite(),
                    false => (a - b).abs() <= tol * (1.0 + b.abs()),
                };
                assert!(
                    ok,
                    "{what} ({dtype}): result {k} (0: output, then gradients), element {i}: \
                     {a}, PyTorch {b}"
                );
            }
        }
    }
}

/// Gradcheck and gradgradcheck (f64, against finite differences) of `f` with
/// respect to the inputs marked in `diff`.
fn gradchecks(
    what: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    diff: &[bool],
) {
    crate::init();
    let opts = GradcheckOptions::default();
    autograd::gradcheck(what, f, inputs, diff, &opts).unwrap();
    autograd::gradgradcheck(what, f, inputs, diff, &opts).unwrap();
}

const REDUCTIONS: [Reduction; 3] = [Reduction::None, Reduction::Sum, Reduction::Mean];

#[test]
fn cross_entropy_with_matches_pytorch_for_class_indices() {
    let d = CrossEntropyOptions::default();
    assert_eq!(
        (
            d.weight.is_none(),
            d.ignore_index,
            d.reduction,
            d.label_smoothing
        ),
        (true, -100, Reduction::Mean, 0.0)
    );
    let want: [[Want2; 4]; 3] = [
        [
            [CE_NONE_Y, CE_NONE_D0],
            [CE_W_NONE_Y, CE_W_NONE_D0],
            [CE_LS_NONE_Y, CE_LS_NONE_D0],
            [CE_LS_W_NONE_Y, CE_LS_W_NONE_D0],
        ],
        [
            [CE_SUM_Y, CE_SUM_D0],
            [CE_W_SUM_Y, CE_W_SUM_D0],
            [CE_LS_SUM_Y, CE_LS_SUM_D0],
            [CE_LS_W_SUM_Y, CE_LS_W_SUM_D0],
        ],
        [
            [CE_MEAN_Y, CE_MEAN_D0],
            [CE_W_MEAN_Y, CE_W_MEAN_D0],
            [CE_LS_MEAN_Y, CE_LS_MEAN_D0],
            [CE_LS_W_MEAN_Y, CE_LS_W_MEAN_D0],
        ],
    ];
    let xs = [logits(), classes()];
    for (reduction, want) in REDUCTIONS.into_iter().zip(want) {
        let variants = [(None, 0.0), (Some(class_weight()), 0.0), (None, 0.2)];
        let variants = variants.into_iter().chain([(Some(class_weight()), 0.2)]);
        for ((weight, label_smoothing), w) in variants.zip(want) {
            let o = CrossEntropyOptions {
                weight,
                reduction,
                label_smoothing,
                ..Default::default()
            };
            let what = format!("cross_entropy_with {o:?}");
            check_some(
                &what,
                &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
                &xs,
                &w,
            );
        }
    }
    // The defaults with no target ignored: the registered op's values.
    let all = ints(&[2, 0, 1, 1], &[4]);
    let xs = [logits(), all.clone()];
    let d = CrossEntropyOptions::default();
    check_some(
        "cross_entropy_with defaults",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &d),
        &xs,
        &[CE_PLAIN_Y, CE_PLAIN_D0],
    );
    check_some(
        "cross_entropy (the op)",
        &|x| ops::cross_entropy(&x[0], &x[1]),
        &xs,
        &[CE_PLAIN_Y, CE_PLAIN_D0],
    );
    // A class index as ignore_index.
    let o = CrossEntropyOptions {
        ignore_index: 1,
        reduction: Reduction::Sum,
        ..Default::default()
    };
    check_some(
        "cross_entropy_with ignore_index 1",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
        &xs,
        &[CE_IGNORE1_SUM_Y, CE_IGNORE1_SUM_D0],
    );
    // [N, C, d]: weights, smoothing and an ignored position; then ignore_index 2.
    let o = CrossEntropyOptions {
        weight: Some(class_weight()),
        label_smoothing: 0.1,
        ..Default::default()
    };
    check_some(
        "cross_entropy_with [2, 3, 4] weighted, smoothed",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
        &[logits_nd(), classes_nd()],
        &[CE_ND_W_LS_MEAN_Y, CE_ND_W_LS_MEAN_D0],
    );
    let o = CrossEntropyOptions {
        ignore_index: 2,
        reduction: Reduction::None,
        ..Default::default()
    };
    let t = ints(&[0, 2, 1, 0, 2, 2, 0, 1], &[2, 4]);
    check_some(
        "cross_entropy_with [2, 3, 4] ignore_index 2",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
        &[logits_nd(), t],
        &[CE_ND_IGNORE2_NONE_Y, CE_ND_IGNORE2_NONE_D0],
    );
    // Unbatched [C] against a rank-0 class.
    let one = [logits_1d(), ints(&[3], &[])];
    check_some(
        "cross_entropy_with [5]",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &CrossEntropyOptions::default()),
        &one,
        &[CE_1D_MEAN_Y, CE_1D_MEAN_D0],
    );
    let o = CrossEntropyOptions {
        weight: Some(floats(&[1.0, 0.5, 1.5, 2.0, 0.75], &[5])),
        label_smoothing: 0.3,
        reduction: Reduction::Sum,
        ..Default::default()
    };
    check_some(
        "cross_entropy_with [5] weighted, smoothed",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
        &one,
        &[CE_1D_W_LS_SUM_Y, CE_1D_W_LS_SUM_D0],
    );
}

#[test]
fn cross_entropy_with_matches_pytorch_for_class_probabilities() {
    let want: [Want3; 3] = [
        [CE_PROB_NONE_Y, CE_PROB_NONE_D0, CE_PROB_NONE_D1],
        [CE_PROB_SUM_Y, CE_PROB_SUM_D0, CE_PROB_SUM_D1],
        [CE_PROB_MEAN_Y, CE_PROB_MEAN_D0, CE_PROB_MEAN_D1],
    ];
    let xs = [logits(), probs()];
    for (reduction, w) in REDUCTIONS.into_iter().zip(want) {
        let o = CrossEntropyOptions {
            reduction,
            ..Default::default()
        };
        let what = format!("cross_entropy_with probabilities {reduction:?}");
        check_some(
            &what,
            &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
            &xs,
            &w,
        );
    }
    let cases = [
        (
            "weighted, smoothed, mean",
            Some(class_weight()),
            Reduction::Mean,
            [
                CE_PROB_LS_W_MEAN_Y,
                CE_PROB_LS_W_MEAN_D0,
                CE_PROB_LS_W_MEAN_D1,
            ],
        ),
        (
            "smoothed, sum",
            None,
            Reduction::Sum,
            [CE_PROB_LS_SUM_Y, CE_PROB_LS_SUM_D0, CE_PROB_LS_SUM_D1],
        ),
    ];
    for (what, weight, reduction, w) in cases {
        let o = CrossEntropyOptions {
            weight,
            reduction,
            label_smoothing: 0.3,
            ..Default::default()
        };
        let what = format!("cross_entropy_with probabilities {what}");
        check_some(
            &what,
            &|x| ops::cross_entropy_with(&x[0], &x[1], &o),
            &xs,
            &w,
        );
    }
    let none = CrossEntropyOptions {
        reduction: Reduction::None,
        ..Default::default()
    };
    check_some(
        "cross_entropy_with probabilities [2, 3, 4]",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &none),
        &[logits_nd(), probs_nd()],
        &[CE_PROB_ND_NONE_Y, CE_PROB_ND_NONE_D0, CE_PROB_ND_NONE_D1],
    );
    let t = probabilities(wave(&[5], 0.6, 0.1, f64::sin, 1.0), 0);
    check_some(
        "cross_entropy_with probabilities [5]",
        &|x| ops::cross_entropy_with(&x[0], &x[1], &none),
        &[logits_1d(), t],
        &[CE_1D_PROB_NONE_Y, CE_1D_PROB_NONE_D0, CE_1D_PROB_NONE_D1],
    );
}

#[test]
fn nll_loss_matches_pytorch() {
    let d = NllLossOptions::default();
    assert_eq!(
        (d.weight.is_none(), d.ignore_index, d.reduction),
        (true, -100, Reduction::Mean)
    );
    let want: [[Want2; 2]; 3] = [
        [[NLL_NONE_Y, NLL_NONE_D0], [NLL_W_NONE_Y, NLL_W_NONE_D0]],
        [[NLL_SUM_Y, NLL_SUM_D0], [NLL_W_SUM_Y, NLL_W_SUM_D0]],
        [[NLL_MEAN_Y, NLL_MEAN_D0], [NLL_W_MEAN_Y, NLL_W_MEAN_D0]],
    ];
    let xs = [logits(), classes()];
    for (reduction, want) in REDUCTIONS.into_iter().zip(want) {
        for (weight, w) in [None, Some(class_weight())].into_iter().zip(want) {
            let o = NllLossOptions {
                weight,
                reduction,
                ..Default::default()
            };
            let what = format!("nll_loss {o:?}");
            check_some(&what, &|x| ops::nll_loss(&x[0], &x[1], &o), &xs, &w);
        }
    }
    let o = NllLossOptions {
        weight: Some(class_weight()),
        ..Default::default()
    };
    check_some(
        "nll_loss [2, 3, 4] weighted",
        &|x| ops::nll_loss(&x[0], &x[1], &o),
        &[logits_nd(), classes_nd()],
        &[NLL_ND_W_MEAN_Y, NLL_ND_W_MEAN_D0],
    );
    let o = NllLossOptions {
        reduction: Reduction::None,
        ..Default::default()
    };
    check_some(
        "nll_loss [5]",
        &|x| ops::nll_loss(&x[0], &x[1], &o),
        &[logits_1d(), ints(&[3], &[])],
        &[NLL_1D_NONE_Y, NLL_1D_NONE_D0],
    );
}

#[test]
fn binary_cross_entropy_matches_pytorch_and_clamps_its_logs() {
    let want: [[Want3; 2]; 3] = [
        [
            [BCE_NONE_Y, BCE_NONE_D0, BCE_NONE_D1],
            [BCE_W_NONE_Y, BCE_W_NONE_D0, BCE_W_NONE_D1],
        ],
        [
            [BCE_SUM_Y, BCE_SUM_D0, BCE_SUM_D1],
            [BCE_W_SUM_Y, BCE_W_SUM_D0, BCE_W_SUM_D1],
        ],
        [
            [BCE_MEAN_Y, BCE_MEAN_D0, BCE_MEAN_D1],
            [BCE_W_MEAN_Y, BCE_W_MEAN_D0, BCE_W_MEAN_D1],
        ],
    ];
    let xs = [bce_input(), bce_target()];
    let weight = bce_weight();
    for (reduction, want) in REDUCTIONS.into_iter().zip(want) {
        for (w, want) in [None, Some(&weight)].into_iter().zip(want) {
            let what = format!("binary_cross_entropy {reduction:?} weight {}", w.is_some());
            let f = |x: &[Tensor]| ops::binary_cross_entropy(&x[0], &x[1], w, reduction);
            check_some(&what, &f, &xs, &want);
        }
    }
    // At 0 and 1 (and below e^-100) PyTorch clamps each log to -100.
    crate::init();
    let p = floats(&[0.0, 1.0, 0.0, 1.0, 0.3, 1e-50], &[6]);
    let t = floats(&[1.0, 0.0, 0.0, 1.0, 0.25, 1.0], &[6]);
    let p = p.with_requires_grad(true);
    let y = ops::binary_cross_entropy(&p, &t, None, Reduction::None).unwrap();
    let got = y.to_vec::<f64>().unwrap();
    for (i, (a, b)) in got.iter().zip(BCE_CLAMP_NONE_Y).enumerate() {
        assert!(
            (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
            "element {i}: {a}, PyTorch {b}"
        );
    }
    // The gradient is finite (0 where a log is clamped), never NaN.
    y.sum_all().unwrap().backward().unwrap();
    let g = p.grad().unwrap().to_vec::<f64>().unwrap();
    assert!(g.iter().all(|v| v.is_finite()), "{g:?}");
}

#[test]
fn binary_cross_entropy_with_logits_matches_pytorch_at_any_logit() {
    let want: [[Want3; 2]; 3] = [
        [
            [BCEL_NONE_Y, BCEL_NONE_D0, BCEL_NONE_D1],
            [BCEL_PW_W_NONE_Y, BCEL_PW_W_NONE_D0, BCEL_PW_W_NONE_D1],
        ],
        [
            [BCEL_SUM_Y, BCEL_SUM_D0, BCEL_SUM_D1],
            [BCEL_PW_W_SUM_Y, BCEL_PW_W_SUM_D0, BCEL_PW_W_SUM_D1],
        ],
        [
            [BCEL_MEAN_Y, BCEL_MEAN_D0, BCEL_MEAN_D1],
            [BCEL_PW_W_MEAN_Y, BCEL_PW_W_MEAN_D0, BCEL_PW_W_MEAN_D1],
        ],
    ];
    assert!(BceWithLogitsOptions::default().weight.is_none());
    assert!(BceWithLogitsOptions::default().pos_weight.is_none());
    assert_eq!(BceWithLogitsOptions::default().reduction, Reduction::Mean);
    let xs = bcel_inputs();
    let pos_weight = floats(&[0.5, 1.0, 2.0, 3.0], &[4]);
    let weight = floats(&[0.5, 1.0, 2.0], &[3, 1]);
    for (reduction, [plain, weighted]) in REDUCTIONS.into_iter().zip(want) {
        let o = BceWithLogitsOptions {
            reduction,
            ..Default::default()
        };
        let f = |x: &[Tensor]| ops::binary_cross_entropy_with_logits(&x[0], &x[1], &o);
        check_some(&format!("bce_with_logits {reduction:?}"), &f, &xs, &plain);
        let o = BceWithLogitsOptions {
            weight: Some(weight.clone()),
            pos_weight: Some(pos_weight.clone()),
            reduction,
        };
        let f = |x: &[Tensor]| ops::binary_cross_entropy_with_logits(&x[0], &x[1], &o);
        check_some(&format!("bce_with_logits {o:?}"), &f, &xs, &weighted);
    }
    let o = BceWithLogitsOptions {
        pos_weight: Some(pos_weight),
        reduction: Reduction::Sum,
        ..Default::default()
    };
    check_some(
        "bce_with_logits pos_weight",
        &|x| ops::binary_cross_entropy_with_logits(&x[0], &x[1], &o),
        &xs,
        &[BCEL_PW_SUM_Y, BCEL_PW_SUM_D0, BCEL_PW_SUM_D1],
    );
    // ±50 where the target agrees costs (almost) nothing, and 50 where it
    // disagrees: exact, not overflowed (f32 included).
    assert_eq!(&BCEL_NONE_Y[..2], &[50.0, 50.0]);
    assert!(BCEL_NONE_Y[4].abs() < 1e-20 && BCEL_NONE_Y[5].abs() < 1e-20);
}

#[test]
fn kl_div_matches_pytorch_for_each_reduction_and_target_kind() {
    assert_eq!(
        KlDivOptions::default(),
        KlDivOptions {
            reduction: KlReduction::Mean,
            log_target: false
        }
    );
    let want: [(KlReduction, Want3, Want3); 4] = [
        (
            KlReduction::None,
            [KL_NONE_Y, KL_NONE_D0, KL_NONE_D1],
            [KL_LOG_NONE_Y, KL_LOG_NONE_D0, KL_LOG_NONE_D1],
        ),
        (
            KlReduction::Sum,
            [KL_SUM_Y, KL_SUM_D0, KL_SUM_D1],
            [KL_LOG_SUM_Y, KL_LOG_SUM_D0, KL_LOG_SUM_D1],
        ),
        (
            KlReduction::Mean,
            [KL_MEAN_Y, KL_MEAN_D0, KL_MEAN_D1],
            [KL_LOG_MEAN_Y, KL_LOG_MEAN_D0, KL_LOG_MEAN_D1],
        ),
        (
            KlReduction::BatchMean,
            [KL_BATCHMEAN_Y, KL_BATCHMEAN_D0, KL_BATCHMEAN_D1],
            [KL_LOG_BATCHMEAN_Y, KL_LOG_BATCHMEAN_D0, KL_LOG_BATCHMEAN_D1],
        ),
    ];
    let [x, t, log_t] = kl_inputs();
    // The target's 0 gives 0 loss there (xlogy). PyTorch's target gradient there is
    // NaN (its xlogy backward takes 0/0); here the xlogy term adds 0, so it is the
    // gradient of `-t · x` alone, `-x · r` for the projection's `r`.
    assert_eq!(KL_NONE_Y[5], 0.0);
    assert!(KL_NONE_D1[5].is_nan());
    crate::init();
    let tl = t.clone().with_requires_grad(true);
    let y = ops::kl_div(&x, &tl, &KlDivOptions::default()).unwrap();
    let g = grad(&y, &[&tl], BackwardOptions::default()).unwrap()[0]
        .clone()
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    let x5 = x.to_vec::<f64>().unwrap()[5];
    assert!(
        (g[5] + x5 / 12.0).abs() < 1e-15,
        "{} vs {}",
        g[5],
        -x5 / 12.0
    );
    for (reduction, probs, logs) in want {
        for (log_target, target, w) in [(false, &t, probs), (true, &log_t, logs)] {
            let o = KlDivOptions {
                reduction,
                log_target,
            };
            let f = |xs: &[Tensor]| ops::kl_div(&xs[0], &xs[1], &o);
            check_some(
                &format!("kl_div {o:?}"),
                &f,
                &[x.clone(), target.clone()],
                &w,
            );
        }
    }
}

#[test]
fn classification_and_divergence_losses_pass_gradcheck_and_gradgradcheck() {
    type Case = (
        &'static str,
        Box<dyn Fn(&[Tensor]) -> Result<Tensor>>,
        Vec<Tensor>,
        Vec<bool>,
    );
    let smoothed = CrossEntropyOptions {
        weight: Some(class_weight()),
        label_smoothing: 0.2,
        ..Default::default()
    };
    let none = CrossEntropyOptions {
        reduction: Reduction::None,
        label_smoothing: 0.1,
        ..Default::default()
    };
    let [bx, bt] = bcel_inputs();
    let [kx, kt, klt] = kl_inputs();
    let cases: Vec<Case> = vec![
        (
            "cross_entropy_with weighted, smoothed, ignored",
            Box::new(move |x| ops::cross_entropy_with(&x[0], &x[1], &smoothed)),
            vec![logits(), classes()],
            vec![true, false],
        ),
        (
            "cross_entropy_with [2, 3, 4] none",
            Box::new(move |x| ops::cross_entropy_with(&x[0], &x[1], &none)),
            vec![logits_nd(), classes_nd()],
            vec![true, false],
        ),
        (
            "cross_entropy_with [5]",
            Box::new(|x| ops::cross_entropy_with(&x[0], &x[1], &Default::default())),
            vec![logits_1d(), ints(&[3], &[])],
            vec![true, false],
        ),
        (
            "cross_entropy_with probabilities, weighted, smoothed",
            Box::new(|x| {
                let o = CrossEntropyOptions {
                    weight: Some(class_weight()),
                    label_smoothing: 0.3,
                    ..Default::default()
                };
                ops::cross_entropy_with(&x[0], &x[1], &o)
            }),
            vec![logits(), probs()],
            vec![true, true],
        ),
        (
            "nll_loss weighted",
            Box::new(|x| {
                let o = NllLossOptions {
                    weight: Some(class_weight()),
                    ..Default::default()
                };
                ops::nll_loss(&x[0], &x[1], &o)
            }),
            vec![logits_nd(), classes_nd()],
            vec![true, false],
        ),
        (
            "binary_cross_entropy weighted",
            Box::new(|x| {
                ops::binary_cross_entropy(&x[0], &x[1], Some(&bce_weight()), Reduction::Mean)
            }),
            vec![bce_input(), bce_target()],
            vec![true, true],
        ),
        (
            "binary_cross_entropy_with_logits pos_weight, weight",
            Box::new(|x| {
                let o = BceWithLogitsOptions {
                    weight: Some(floats(&[0.5, 1.0, 2.0], &[3, 1])),
                    pos_weight: Some(floats(&[0.5, 1.0, 2.0, 3.0], &[4])),
                    reduction: Reduction::Sum,
                };
                ops::binary_cross_entropy_with_logits(&x[0], &x[1], &o)
            }),
            vec![bx, bt],
            vec![true, true],
        ),
        (
            "kl_div batchmean (a 0 in the target, held constant)",
            Box::new(|x| {
                let o = KlDivOptions {
                    reduction: KlReduction::BatchMean,
                    log_target: false,
                };
                ops::kl_div(&x[0], &x[1], &o)
            }),
            vec![kx.clone(), kt],
            vec![true, false],
        ),
        (
            "kl_div none (positive target)",
            Box::new(|x| ops::kl_div(&x[0], &x[1], &KlDivOptions::default())),
            vec![kx.clone(), bce_input()],
            vec![true, true],
        ),
        (
            "kl_div log_target sum",
            Box::new(|x| {
                let o = KlDivOptions {
                    reduction: KlReduction::Sum,
                    log_target: true,
                };
                ops::kl_div(&x[0], &x[1], &o)
            }),
            vec![kx, klt],
            vec![true, true],
        ),
    ];
    for (what, f, inputs, diff) in &cases {
        gradchecks(what, f.as_ref(), inputs, diff);
    }
}

#[test]
fn classification_losses_reject_bad_targets_shapes_and_options() {
    use crate::ops_batch::expect_error;
    crate::init();
    let x = logits();
    let ce = |t: &Tensor, o: &CrossEntropyOptions| ops::cross_entropy_with(&x, t, o);
    let d = CrossEntropyOptions::default();
    // Class indices out of range (not the ignore_index), of the wrong shape.
    let out = ints(&[2, 0, 3, 1], &[4]);
    expect_error(
        ce(&out, &d),
        "cross_entropy",
        &["target 3", "0..3", "[4, 3]", "[4]"],
    );
    let neg = ints(&[2, -1, 0, 1], &[4]);
    expect_error(
        ce(&neg, &d),
        "cross_entropy",
        &["target -1", "ignore_index -100"],
    );
    expect_error(
        ce(&ints(&[0, 1, 2], &[3]), &d),
        "cross_entropy",
        &["[3]", "[4, 3]", "[4]"],
    );
    expect_error(
        ops::cross_entropy_with(&logits_nd(), &ints(&[0; 8], &[4, 2]), &d),
        "cross_entropy",
        &["[4, 2]", "[2, 3, 4]", "[2, 4]"],
    );
    // A floating target (probabilities) must have the input's shape.
    let p = Tensor::zeros([4], DType::F64).unwrap();
    expect_error(
        ce(&p, &d),
        "cross_entropy",
        &["[4]", "[4, 3]", "probabilities"],
    );
    let o = CrossEntropyOptions {
        ignore_index: 0,
        ..Default::default()
    };
    expect_error(
        ce(&probs(), &o),
        "cross_entropy",
        &["ignore_index is 0", "[4, 3]"],
    );
    // label_smoothing outside [0, 1]; a weight that is not [C].
    for eps in [-0.1, 1.5, f64::NAN] {
        let o = CrossEntropyOptions {
            label_smoothing: eps,
            ..Default::default()
        };
        expect_error(
            ce(&classes(), &o),
            "cross_entropy",
            &["label_smoothing", "[0, 1]", "[4, 3]"],
        );
    }
    let o = CrossEntropyOptions {
        weight: Some(floats(&[1.0, 2.0], &[2])),
        ..Default::default()
    };
    expect_error(
        ce(&classes(), &o),
        "cross_entropy",
        &["[2]", "[4, 3]", "must be [3]"],
    );
    // An input of rank 0.
    let s = Tensor::scalar(1.0f64);
    expect_error(
        ops::cross_entropy_with(&s, &ints(&[0], &[]), &d),
        "cross_entropy",
        &["[]", "[N, C]"],
    );

    // nll_loss: floating targets, out of range, weight shape.
    let n = NllLossOptions::default();
    expect_error(
        ops::nll_loss(&x, &probs(), &n),
        "nll_loss",
        &["[4, 3]", "i64"],
    );
    expect_error(
        ops::nll_loss(&x, &out, &n),
        "nll_loss",
        &["target 3", "[4, 3]"],
    );
    let o = NllLossOptions {
        weight: Some(floats(&[1.0; 4], &[4])),
        ..Default::default()
    };
    expect_error(
        ops::nll_loss(&x, &classes(), &o),
        "nll_loss",
        &["[4]", "[4, 3]"],
    );
    expect_error(
        ops::nll_loss(&logits_1d(), &ints(&[0], &[1]), &n),
        "nll_loss",
        &["[1]", "[5]", "shape []"],
    );

    // binary_cross_entropy: shapes, values outside [0, 1] (NaN too), weight.
    let bce = "binary_cross_entropy";
    let (p, t) = (bce_input(), bce_target());
    let t3 = Tensor::zeros([3], DType::F64).unwrap();
    expect_error(
        ops::binary_cross_entropy(&p, &t3, None, Reduction::Mean),
        bce,
        &["[3, 4]", "[3]"],
    );
    for bad in [1.5, -0.5, f64::NAN] {
        let q = floats(&[0.5, bad], &[2]);
        let r = ops::binary_cross_entropy(&q, &q.detach(), None, Reduction::Mean);
        expect_error(r, bce, &["[2]", "[0, 1]", "with_logits"]);
    }
    let w = floats(&[1.0; 3], &[3]);
    expect_error(
        ops::binary_cross_entropy(&p, &t, Some(&w), Reduction::Sum),
        bce,
        &["weight", "[3]", "[3, 4]"],
    );

    // binary_cross_entropy_with_logits: shapes, weights that do not broadcast.
    let bcel = "binary_cross_entropy_with_logits";
    let o = BceWithLogitsOptions::default();
    expect_error(
        ops::binary_cross_entropy_with_logits(&p, &t3, &o),
        bcel,
        &["[3, 4]", "[3]"],
    );
    let o = BceWithLogitsOptions {
        pos_weight: Some(w.clone()),
        ..Default::default()
    };
    expect_error(
        ops::binary_cross_entropy_with_logits(&p, &t, &o),
        bcel,
        &["pos_weight", "[3]", "[3, 4]"],
    );
    let o = BceWithLogitsOptions {
        weight: Some(Tensor::ones([2, 3, 4], DType::F64).unwrap()),
        ..Default::default()
    };
    expect_error(
        ops::binary_cross_entropy_with_logits(&p, &t, &o),
        bcel,
        &["weight", "[2, 3, 4]", "[3, 4]"],
    );

    // kl_div: shapes.
    let o = KlDivOptions::default();
    expect_error(
        ops::kl_div(&p, &t3, &o),
        "kl_div",
        &["[3, 4]", "[3]", "must match"],
    );
}

// ----- PyTorch's values (scripts/reference/losses.py) -----

#[rustfmt::skip]
const L1_NONE_Y: &[f64] = &[
    1.2704330334682061, 0.24058648397546145, 1.3145957910697428, 1.585800565934542,
    1.1027189132486785, 0.27030599448125614, 0.37589462577452304, 0.4503060314533762,
    0.08508048267634805, 0.9022296445716748, 1.4765210754460878, 1.3614214642300675,
];
#[rustfmt::skip]
const L1_NONE_D0: &[f64] = &[
    -0.29552020666133955, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.3349881501559051, 0.1577456941432482, 0.6118578909427189,
    -0.9161659367494549, -0.9961646088358407, -0.8322674422239013, -0.46460217941375737,
];
#[rustfmt::skip]
const L1_NONE_D1: &[f64] = &[
    0.29552020666133955, -0.7173560908995228, -0.963558185417193, -0.9738476308781951,
    -0.7457052121767203, -0.3349881501559051, -0.1577456941432482, -0.6118578909427189,
    0.9161659367494549, 0.9961646088358407, 0.8322674422239013, 0.46460217941375737,
];
#[rustfmt::skip]
const MSE_NONE_Y: &[f64] = &[
    1.6140000925272282, 0.05788185627167497, 1.728162093898283, 2.5147634349183137,
    1.2159890016363466, 0.07306533065250087, 0.14129676968616872, 0.20277552196328905,
    0.00723868853244036, 0.8140183315439306, 2.1801144862364716, 1.8534684032663409,
];
#[rustfmt::skip]
const MSE_NONE_D0: &[f64] = &[
    -0.7508772651998336, 0.34517235933579543, 2.5333790700004815, 3.0886562483613096,
    1.6446064823507764, 0.18109861013465658, 0.11859151733503731, 0.5510465973676969,
    -0.15589568022054434, -1.797538481929684, -2.4577208377023987, -1.2650387587639162,
];
#[rustfmt::skip]
const MSE_NONE_D1: &[f64] = &[
    0.7508772651998336, -0.34517235933579543, -2.5333790700004815, -3.0886562483613096,
    -1.6446064823507764, -0.18109861013465658, -0.11859151733503731, -0.5510465973676969,
    0.15589568022054434, 1.797538481929684, 2.4577208377023987, 1.2650387587639162,
];
#[rustfmt::skip]
const L1_SUM_Y: &[f64] = &[
    10.435894106329965,
];
#[rustfmt::skip]
const L1_SUM_D0: &[f64] = &[
    -0.29552020666133955, 0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
    0.29552020666133955, 0.29552020666133955, -0.29552020666133955, -0.29552020666133955,
    0.29552020666133955, 0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
];
#[rustfmt::skip]
const L1_SUM_D1: &[f64] = &[
    0.29552020666133955, -0.29552020666133955, -0.29552020666133955, -0.29552020666133955,
    -0.29552020666133955, -0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
    -0.29552020666133955, -0.29552020666133955, -0.29552020666133955, -0.29552020666133955,
];
#[rustfmt::skip]
const MSE_SUM_Y: &[f64] = &[
    12.402774011132989,
];
#[rustfmt::skip]
const MSE_SUM_D0: &[f64] = &[
    -0.7508772651998336, 0.14219633492870684, 0.776979239706115, 0.9372722219372901,
    0.6517514422652345, 0.15976176670179945, -0.22216891498354788, -0.26614906295189883,
    0.05028600364672179, 0.5332541820396165, 0.8726836267113024, 0.8046551049249061,
];
#[rustfmt::skip]
const MSE_SUM_D1: &[f64] = &[
    0.7508772651998336, -0.14219633492870684, -0.776979239706115, -0.9372722219372901,
    -0.6517514422652345, -0.15976176670179945, 0.22216891498354788, 0.26614906295189883,
    -0.05028600364672179, -0.5332541820396165, -0.8726836267113024, -0.8046551049249061,
];
#[rustfmt::skip]
const L1_MEAN_Y: &[f64] = &[
    0.8696578421941638,
];
#[rustfmt::skip]
const L1_MEAN_D0: &[f64] = &[
    -0.024626683888444963, 0.024626683888444963, 0.024626683888444963, 0.024626683888444963,
    0.024626683888444963, 0.024626683888444963, -0.024626683888444963, -0.024626683888444963,
    0.024626683888444963, 0.024626683888444963, 0.024626683888444963, 0.024626683888444963,
];
#[rustfmt::skip]
const L1_MEAN_D1: &[f64] = &[
    0.024626683888444963, -0.024626683888444963, -0.024626683888444963, -0.024626683888444963,
    -0.024626683888444963, -0.024626683888444963, 0.024626683888444963, 0.024626683888444963,
    -0.024626683888444963, -0.024626683888444963, -0.024626683888444963, -0.024626683888444963,
];
#[rustfmt::skip]
const MSE_MEAN_Y: &[f64] = &[
    1.033564500927749,
];
#[rustfmt::skip]
const MSE_MEAN_D0: &[f64] = &[
    -0.06257310543331947, 0.011849694577392237, 0.06474826997550959, 0.07810601849477417,
    0.054312620188769534, 0.013313480558483286, -0.01851407624862899, -0.0221790885793249,
    0.004190500303893482, 0.04443784850330137, 0.07272363555927519, 0.06705459207707551,
];
#[rustfmt::skip]
const MSE_MEAN_D1: &[f64] = &[
    0.06257310543331947, -0.011849694577392237, -0.06474826997550959, -0.07810601849477417,
    -0.054312620188769534, -0.013313480558483286, 0.01851407624862899, 0.0221790885793249,
    -0.004190500303893482, -0.04443784850330137, -0.07272363555927519, -0.06705459207707551,
];
#[rustfmt::skip]
const SMOOTH_L1_DEFAULT_Y: &[f64] = &[
    0.4799690910601939,
];
#[rustfmt::skip]
const SMOOTH_L1_DEFAULT_D0: &[f64] = &[
    -0.02462668388844496, 0.005924847288696119, 0.02462668388844496, 0.02462668388844496,
    0.02462668388844496, 0.006656740279241643, -0.009257038124314495, -0.01108954428966245,
    0.002095250151946741, 0.022218924251650684, 0.02462668388844496, 0.02462668388844496,
];
#[rustfmt::skip]
const SMOOTH_L1_DEFAULT_D1: &[f64] = &[
    0.02462668388844496, -0.005924847288696119, -0.02462668388844496, -0.02462668388844496,
    -0.02462668388844496, -0.006656740279241643, 0.009257038124314495, 0.01108954428966245,
    -0.002095250151946741, -0.022218924251650684, -0.02462668388844496, -0.02462668388844496,
];
#[rustfmt::skip]
const SMOOTH_L1_HALF_NONE_Y: &[f64] = &[
    1.0204330334682061, 0.05788185627167497, 1.0645957910697428, 1.335800565934542,
    0.8527189132486785, 0.07306533065250087, 0.14129676968616872, 0.20277552196328905,
    0.00723868853244036, 0.6522296445716748, 1.2265210754460878, 1.1114214642300675,
];
#[rustfmt::skip]
const SMOOTH_L1_HALF_NONE_D0: &[f64] = &[
    -0.29552020666133955, 0.34517235933579543, 0.963558185417193, 0.9738476308781951,
    0.7457052121767203, 0.18109861013465658, 0.11859151733503731, 0.5510465973676969,
    -0.15589568022054434, -0.9961646088358407, -0.8322674422239013, -0.46460217941375737,
];
#[rustfmt::skip]
const SMOOTH_L1_HALF_NONE_D1: &[f64] = &[
    0.29552020666133955, -0.34517235933579543, -0.963558185417193, -0.9738476308781951,
    -0.7457052121767203, -0.18109861013465658, -0.11859151733503731, -0.5510465973676969,
    0.15589568022054434, 0.9961646088358407, 0.8322674422239013, 0.46460217941375737,
];
#[rustfmt::skip]
const SMOOTH_L1_ZERO_SUM_Y: &[f64] = &[
    10.435894106329965,
];
#[rustfmt::skip]
const SMOOTH_L1_ZERO_SUM_D0: &[f64] = &[
    -0.29552020666133955, 0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
    0.29552020666133955, 0.29552020666133955, -0.29552020666133955, -0.29552020666133955,
    0.29552020666133955, 0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
];
#[rustfmt::skip]
const SMOOTH_L1_ZERO_SUM_D1: &[f64] = &[
    0.29552020666133955, -0.29552020666133955, -0.29552020666133955, -0.29552020666133955,
    -0.29552020666133955, -0.29552020666133955, 0.29552020666133955, 0.29552020666133955,
    -0.29552020666133955, -0.29552020666133955, -0.29552020666133955, -0.29552020666133955,
];
#[rustfmt::skip]
const HUBER_DEFAULT_Y: &[f64] = &[
    0.4799690910601939,
];
#[rustfmt::skip]
const HUBER_DEFAULT_D0: &[f64] = &[
    -0.02462668388844496, 0.005924847288696119, 0.02462668388844496, 0.02462668388844496,
    0.02462668388844496, 0.006656740279241643, -0.009257038124314495, -0.01108954428966245,
    0.002095250151946741, 0.022218924251650684, 0.02462668388844496, 0.02462668388844496,
];
#[rustfmt::skip]
const HUBER_DEFAULT_D1: &[f64] = &[
    0.02462668388844496, -0.005924847288696119, -0.02462668388844496, -0.02462668388844496,
    -0.02462668388844496, -0.006656740279241643, 0.009257038124314495, 0.01108954428966245,
    -0.002095250151946741, -0.022218924251650684, -0.02462668388844496, -0.02462668388844496,
];
#[rustfmt::skip]
const HUBER_HALF_NONE_Y: &[f64] = &[
    0.5102165167341031, 0.028940928135837485, 0.5322978955348714, 0.667900282967271,
    0.4263594566243393, 0.036532665326250435, 0.07064838484308436, 0.10138776098164452,
    0.00361934426622018, 0.3261148222858374, 0.6132605377230439, 0.5557107321150337,
];
#[rustfmt::skip]
const HUBER_HALF_NONE_D0: &[f64] = &[
    -0.14776010333066977, 0.17258617966789772, 0.4817790927085965, 0.4869238154390976,
    0.37285260608836013, 0.09054930506732829, 0.059295758667518655, 0.27552329868384845,
    -0.07794784011027217, -0.49808230441792034, -0.4161337211119506, -0.23230108970687868,
];
#[rustfmt::skip]
const HUBER_HALF_NONE_D1: &[f64] = &[
    0.14776010333066977, -0.17258617966789772, -0.4817790927085965, -0.4869238154390976,
    -0.37285260608836013, -0.09054930506732829, -0.059295758667518655, -0.27552329868384845,
    0.07794784011027217, 0.49808230441792034, 0.4161337211119506, 0.23230108970687868,
];
#[rustfmt::skip]
const HUBER_TWO_SUM_Y: &[f64] = &[
    6.201387005566494,
];
#[rustfmt::skip]
const HUBER_TWO_SUM_D0: &[f64] = &[
    -0.3754386325999168, 0.07109816746435342, 0.3884896198530575, 0.46863611096864505,
    0.32587572113261726, 0.07988088335089973, -0.11108445749177394, -0.13307453147594941,
    0.025143001823360895, 0.26662709101980825, 0.4363418133556512, 0.40232755246245305,
];
#[rustfmt::skip]
const HUBER_TWO_SUM_D1: &[f64] = &[
    0.3754386325999168, -0.07109816746435342, -0.3884896198530575, -0.46863611096864505,
    -0.32587572113261726, -0.07988088335089973, 0.11108445749177394, 0.13307453147594941,
    -0.025143001823360895, -0.26662709101980825, -0.4363418133556512, -0.40232755246245305,
];
#[rustfmt::skip]
const CE_NONE_Y: &[f64] = &[
    0.5522309801116012, 0.3380561364482103, 0.0, 1.1013921864444147,
];
#[rustfmt::skip]
const CE_NONE_D0: &[f64] = &[
    0.028252532391133695, 0.0971473059144361, -0.12539983830556975, -0.20576982656678025,
    0.1638615840371825, 0.04190824252959787, 0.0, 0.0,
    0.0, 0.09510894252016734, -0.6501328997463433, 0.5550239572261759,
];
#[rustfmt::skip]
const CE_W_NONE_Y: &[f64] = &[
    0.6902887251395016, 0.16902806822410515, 0.0, 2.2027843728888294,
];
#[rustfmt::skip]
const CE_W_NONE_D0: &[f64] = &[
    0.03531566548891712, 0.12143413239304512, -0.1567497978819622, -0.10288491328339013,
    0.08193079201859126, 0.020954121264798935, 0.0, 0.0,
    0.0, 0.19021788504033468, -1.3002657994926865, 1.1100479144523518,
];
#[rustfmt::skip]
const CE_LS_NONE_Y: &[f64] = &[
    0.7092710421998356, 0.5807579926775503, 0.0, 1.147104923781302,
];
#[rustfmt::skip]
const CE_LS_NONE_D0: &[f64] = &[
    0.008551185280377727, 0.07744595880368013, -0.08599714408405781, -0.11012234778017722,
    0.116037844643881, -0.0059154968637036435, 0.0, 0.0,
    0.0, 0.030185767128287654, -0.5202865489625839, 0.4901007818342962,
];
#[rustfmt::skip]
const CE_LS_W_NONE_Y: &[f64] = &[
    0.8248365353245253, 0.5800385164385726, 0.0, 2.033474483065738,
];
#[rustfmt::skip]
const CE_LS_W_NONE_D0: &[f64] = &[
    0.025464991933539138, 0.08203143817153319, -0.10749643010507226, 0.02167676575982277,
    0.010862550837565597, -0.03253931659738828, 0.0, 0.0,
    0.0, 0.14348995596636974, -1.0891303075949457, 0.9456403516285757,
];
#[rustfmt::skip]
const CE_PROB_NONE_Y: &[f64] = &[
    1.5556968137705247, 1.080695640055489, 1.1204545350415505, 0.9858527465016291,
];
#[rustfmt::skip]
const CE_PROB_NONE_D0: &[f64] = &[
    -0.10529715499374825, -0.0041945415060398545, 0.10949169649978815, 0.11840753201911423,
    -0.04028775937561961, -0.07811977264349446, -0.05090031963930596, -0.06744256652769168,
    0.11834288616699758, -0.052364855471767814, 0.04106773403972664, 0.011297121432041219,
];
#[rustfmt::skip]
const CE_PROB_NONE_D1: &[f64] = &[
    0.6937496786987785, 0.3287688220723398, 0.16319541336737448, 0.24250662854708382,
    1.0592123409372194, 2.0373557387380092, 1.3345973593252851, 1.4169976523084145,
    0.6302741085363163, 2.2653953828081415, 1.0725881714366488, 0.5475395744124284,
];
#[rustfmt::skip]
const NLL_NONE_Y: &[f64] = &[
    -1.994989973208109, -1.6169928076391806, 0.0, -1.4579380802517519,
];
#[rustfmt::skip]
const NLL_NONE_D0: &[f64] = &[
    0.0, 0.0, -0.29552020666133955, -0.7173560908995228,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, -0.9738476308781951, 0.0,
];
#[rustfmt::skip]
const NLL_W_NONE_Y: &[f64] = &[
    -2.493737466510136, -0.8084964038195903, 0.0, -2.9158761605035037,
];
#[rustfmt::skip]
const NLL_W_NONE_D0: &[f64] = &[
    0.0, 0.0, -0.36940025832667445, -0.3586780454497614,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, -1.9476952617563903, 0.0,
];
#[rustfmt::skip]
const CE_SUM_Y: &[f64] = &[
    1.9916793030042264,
];
#[rustfmt::skip]
const CE_SUM_D0: &[f64] = &[
    0.028252532391133695, 0.0971473059144361, -0.12539983830556975, -0.08476841898063732,
    0.06750400504413538, 0.01726441393650198, 0.0, 0.0,
    0.0, 0.02886140855890913, -0.19728692949339402, 0.1684255209344849,
];
#[rustfmt::skip]
const CE_W_SUM_Y: &[f64] = &[
    3.062101166252436,
];
#[rustfmt::skip]
const CE_W_SUM_D0: &[f64] = &[
    0.03531566548891712, 0.12143413239304512, -0.1567497978819622, -0.04238420949031866,
    0.03375200252206769, 0.00863220696825099, 0.0, 0.0,
    0.0, 0.05772281711781826, -0.39457385898678804, 0.3368510418689698,
];
#[rustfmt::skip]
const CE_LS_SUM_Y: &[f64] = &[
    2.437133958658688,
];
#[rustfmt::skip]
const CE_LS_SUM_D0: &[f64] = &[
    0.008551185280377727, 0.07744595880368013, -0.08599714408405781, -0.04536572475912534,
    0.047802657933379435, -0.0024369331742539854, 0.0, 0.0,
    0.0, 0.009160061448153164, -0.15788423527188208, 0.148724173823729,
];
#[rustfmt::skip]
const CE_LS_W_SUM_Y: &[f64] = &[
    3.4383495348288355,
];
#[rustfmt::skip]
const CE_LS_W_SUM_D0: &[f64] = &[
    0.025464991933539138, 0.08203143817153319, -0.10749643010507226, 0.008929905772542643,
    0.004474909057176066, -0.013404814829718673, 0.0, 0.0,
    0.0, 0.043542932278603896, -0.33050346211895604, 0.2869605298403521,
];
#[rustfmt::skip]
const CE_PROB_SUM_Y: &[f64] = &[
    4.742699735369194,
];
#[rustfmt::skip]
const CE_PROB_SUM_D0: &[f64] = &[
    -0.10529715499374825, -0.0041945415060398545, 0.10949169649978815, 0.04877886837019825,
    -0.016596843781832526, -0.0321820245883657, -0.01561096486604299, -0.020684418958472336,
    0.0362953838245153, -0.015890445712593754, 0.01246226295132909, 0.0034281827612646777,
];
#[rustfmt::skip]
const CE_PROB_SUM_D1: &[f64] = &[
    0.6937496786987785, 0.3287688220723398, 0.16319541336737448, 0.09990241930630911,
    0.4363504455639335, 0.8393039336984642, 0.40931673188653594, 0.4345886376000307,
    0.19330304866571088, 0.6874485191214076, 0.3254836465532381, 0.1661543377578552,
];
#[rustfmt::skip]
const NLL_SUM_Y: &[f64] = &[
    -5.069920861099042,
];
#[rustfmt::skip]
const NLL_SUM_D0: &[f64] = &[
    0.0, 0.0, -0.29552020666133955, -0.29552020666133955,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, -0.29552020666133955, 0.0,
];
#[rustfmt::skip]
const NLL_W_SUM_Y: &[f64] = &[
    -6.21811003083323,
];
#[rustfmt::skip]
const NLL_W_SUM_D0: &[f64] = &[
    0.0, 0.0, -0.36940025832667445, -0.14776010333066977,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, -0.5910404133226791, 0.0,
];
#[rustfmt::skip]
const CE_MEAN_Y: &[f64] = &[
    0.6638931010014087,
];
#[rustfmt::skip]
const CE_MEAN_D0: &[f64] = &[
    0.009417510797044566, 0.03238243530481204, -0.04179994610185658, -0.028256139660212443,
    0.022501335014711795, 0.00575480464550066, 0.0, 0.0,
    0.0, 0.009620469519636377, -0.06576230983113135, 0.056141840311494974,
];
#[rustfmt::skip]
const CE_W_MEAN_Y: &[f64] = &[
    0.8165603110006496,
];
#[rustfmt::skip]
const CE_W_MEAN_D0: &[f64] = &[
    0.009417510797044566, 0.03238243530481204, -0.04179994610185658, -0.011302455864084977,
    0.009000534005884719, 0.002301921858200264, 0.0, 0.0,
    0.0, 0.015392751231418202, -0.10521969572981016, 0.08982694449839196,
];
#[rustfmt::skip]
const CE_LS_MEAN_Y: &[f64] = &[
    0.8123779862195627,
];
#[rustfmt::skip]
const CE_LS_MEAN_D0: &[f64] = &[
    0.0028503950934592424, 0.02581531960122671, -0.028665714694685946, -0.01512190825304179,
    0.015934219311126478, -0.0008123110580846621, 0.0, 0.0,
    0.0, 0.003053353816051055, -0.0526280784239607, 0.04957472460790966,
];
#[rustfmt::skip]
const CE_LS_W_MEAN_Y: &[f64] = &[
    0.9168932092876896,
];
#[rustfmt::skip]
const CE_LS_W_MEAN_D0: &[f64] = &[
    0.0067906645156104355, 0.021875050179075515, -0.02866571469468594, 0.0023813082060113663,
    0.0011933090819136157, -0.0035746172879249794, 0.0, 0.0,
    0.0, 0.011611448607627707, -0.08813425656505493, 0.07652280795742723,
];
#[rustfmt::skip]
const CE_PROB_MEAN_Y: &[f64] = &[
    1.1856749338422985,
];
#[rustfmt::skip]
const CE_PROB_MEAN_D0: &[f64] = &[
    -0.026324288748437064, -0.0010486353765099636, 0.02737292412494704, 0.012194717092549563,
    -0.0041492109454581315, -0.008045506147091425, -0.0039027412165107476, -0.005171104739618084,
    0.009073845956128824, -0.003972611428148439, 0.0031155657378322725, 0.0008570456903161694,
];
#[rustfmt::skip]
const CE_PROB_MEAN_D1: &[f64] = &[
    0.17343741967469462, 0.08219220551808495, 0.04079885334184362, 0.024975604826577277,
    0.10908761139098337, 0.20982598342461606, 0.10232918297163399, 0.10864715940000767,
    0.04832576216642772, 0.1718621297803519, 0.08137091163830952, 0.0415385844394638,
];
#[rustfmt::skip]
const NLL_MEAN_Y: &[f64] = &[
    -1.6899736203663471,
];
#[rustfmt::skip]
const NLL_MEAN_D0: &[f64] = &[
    0.0, 0.0, -0.09850673555377985, -0.09850673555377985,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, -0.09850673555377985, 0.0,
];
#[rustfmt::skip]
const NLL_W_MEAN_Y: &[f64] = &[
    -1.6581626748888614,
];
#[rustfmt::skip]
const NLL_W_MEAN_D0: &[f64] = &[
    0.0, 0.0, -0.09850673555377985, -0.03940269422151194,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, -0.15761077688604777, 0.0,
];
#[rustfmt::skip]
const CE_PLAIN_Y: &[f64] = &[
    0.8655669678110078,
];
#[rustfmt::skip]
const CE_PLAIN_D0: &[f64] = &[
    0.007063133097783424, 0.024286826478609025, -0.03134995957639244, -0.02119210474515933,
    0.016876001261033845, 0.004316103484125495, 0.018492605735844023, -0.05690313995269139,
    0.03841053421684736, 0.007215352139727282, -0.049321732373348505, 0.042106380233621225,
];
#[rustfmt::skip]
const CE_IGNORE1_SUM_Y: &[f64] = &[
    0.8902871165598115,
];
#[rustfmt::skip]
const CE_IGNORE1_SUM_D0: &[f64] = &[
    0.028252532391133695, 0.0971473059144361, -0.12539983830556975, -0.08476841898063732,
    0.06750400504413538, 0.01726441393650198, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const CE_ND_W_LS_MEAN_Y: &[f64] = &[
    1.1614134690079216,
];
#[rustfmt::skip]
const CE_ND_W_LS_MEAN_D0: &[f64] = &[
    -0.012798573632044693, 0.01278018191378099, 0.03564543875788836, 0.0,
    0.01228666036882056, 0.024496381364638522, -0.03605784354635479, 0.0,
    0.0005119132632241336, -0.03727656327841951, 0.00041240478846642334, 0.0,
    0.00017453622077537575, 0.00013446056956184965, -0.01531470722195306, 0.0020108638342309706,
    0.001665145015503471, 0.004864145835989623, 0.004138284217582462, -0.02698940644353358,
    -0.0018396812362788447, -0.004998606405551471, 0.011176423004370602, 0.024978542609302597,
];
#[rustfmt::skip]
const CE_ND_IGNORE2_NONE_Y: &[f64] = &[
    1.8802634014473063, 0.0, 0.8792739572969237, 0.2716344633340303,
    0.0, 0.0, 3.7729043062485634, 0.5895665867462044,
];
#[rustfmt::skip]
const CE_ND_IGNORE2_NONE_D0: &[f64] = &[
    -0.250438623191947, 0.0, 0.5366320781734873, -0.2316464114615038,
    0.22123413102249717, 0.0, -0.563600434679725, 0.21401314168777988,
    0.029204492169449824, 0.0, 0.026968356506237585, 0.017633269773723967,
    0.0, 0.0, 0.1541198762109402, -0.02422192525622823,
    0.0, 0.0, -0.051904180850383945, 0.2725413351857651,
    0.0, 0.0, -0.10221569536055629, -0.24831940992953688,
];
#[rustfmt::skip]
const CE_1D_MEAN_Y: &[f64] = &[
    2.3157967558465753,
];
#[rustfmt::skip]
const CE_1D_MEAN_D0: &[f64] = &[
    0.04914116033874735, 0.11626903167418076, 0.09214045263794153, -0.2663560495260381,
    0.00880540487516844,
];
#[rustfmt::skip]
const CE_1D_W_LS_SUM_Y: &[f64] = &[
    3.9186281972895975,
];
#[rustfmt::skip]
const CE_1D_W_LS_SUM_D0: &[f64] = &[
    0.06802011239143374, 0.19402385407160522, 0.13418827125368737, -0.39829925992413506,
    0.0020670222074086445,
];
#[rustfmt::skip]
const CE_1D_PROB_NONE_Y: &[f64] = &[
    1.9121723815841225,
];
#[rustfmt::skip]
const CE_1D_PROB_NONE_D0: &[f64] = &[
    0.01657120531965422, 0.06013318936701506, 0.014885192411618751, -0.046769263288260025,
    -0.04482032381002801,
];
#[rustfmt::skip]
const CE_1D_PROB_NONE_D1: &[f64] = &[
    0.5301751413113888, 0.2756702536794705, 0.3444060882939691, 0.6843647358734396,
    1.0382722695293662,
];
#[rustfmt::skip]
const CE_PROB_LS_W_MEAN_Y: &[f64] = &[
    1.459640825188093,
];
#[rustfmt::skip]
const CE_PROB_LS_W_MEAN_D0: &[f64] = &[
    -0.006954823181869132, -0.02127677082222174, 0.028231594004090872, 0.040704348137813005,
    -0.025450964502999662, -0.015253383634813331, 0.011550881316874982, -0.024591931640858905,
    0.013041050323983918, 0.0019351952978517474, -0.01230835979046293, 0.010373164492611183,
];
#[rustfmt::skip]
const CE_PROB_LS_W_MEAN_D1: &[f64] = &[
    0.06070309688614311, 0.11506908772531893, 0.035698996674113165, 0.008741461689302047,
    0.15272265594737672, 0.18359773549653904, 0.035815214040071895, 0.15210602316001073,
    0.04228504189562425, 0.06015174542312316, 0.11391927629363333, 0.03634626138453083,
];
#[rustfmt::skip]
const CE_PROB_LS_SUM_Y: &[f64] = &[
    4.936552745617501,
];
#[rustfmt::skip]
const CE_PROB_LS_SUM_D0: &[f64] = &[
    -0.09478426944441762, -0.0033440079460310274, 0.09812827739044869, 0.0678187234972155,
    -0.020918609800176107, -0.04690011369703935, -0.01828856918935123, -0.023658819881892387,
    0.04194738907124359, -0.03201691009727685, 0.00864154655018004, 0.023375363547096777,
];
#[rustfmt::skip]
const CE_PROB_LS_SUM_D1: &[f64] = &[
    0.48562477508914487, 0.23013817545063786, 0.11423678935716212, 0.06993169351441637,
    0.30544531189475344, 0.587512753588925, 0.28652171232057516, 0.30421204632002147,
    0.1353121340659976, 0.4812139633849853, 0.22783855258726665, 0.11630803643049864,
];
#[rustfmt::skip]
const CE_PROB_ND_NONE_Y: &[f64] = &[
    1.6275044244187986, 1.1624672352093823, 0.9107363695191688, 1.0651701354917664,
    1.089298577975035, 1.2028975815265701, 1.203982961119801, 1.1757673341737611,
];
#[rustfmt::skip]
const CE_PROB_ND_NONE_D0: &[f64] = &[
    -0.18516839635476598, -0.33943539620301355, -0.19851176975635082, 0.07100617889553193,
    0.17035132826126417, 0.3478476207262758, 0.2629197894034761, 0.07016244663870275,
    0.01481706809350184, -0.008412224523262282, -0.06440801964712518, -0.14116862553423468,
    -0.03165822779299186, -0.022576104072412066, 0.01624218979565583, 0.09401307353609906,
    -0.17390152468679407, -0.08619655923860878, 0.029458070882274666, 0.00514897395542312,
    0.2055597524797859, 0.10877266331102081, -0.04570026067793052, -0.09916204749152219,
];
#[rustfmt::skip]
const CE_PROB_ND_NONE_D1: &[f64] = &[
    0.5556558289734612, 0.8262718015248082, 0.5639900303375962, 0.2645305785827154,
    0.08555772727336393, 0.3273788755842513, 0.8472316187776182, 1.4755909064601438,
    0.6839563036185705, 2.1438353184435623, 3.4456538906975354, 3.906558032853049,
    3.0181737373905295, 1.3745521921491146, -0.59515940872523, -1.9758370929349172,
    1.7729667679746395, 0.596452923690252, -0.17534772577999871, -0.36073096833683016,
    0.08710373611676912, 0.0685558868823702, -0.06844569336946056, -0.5517637728633926,
];
#[rustfmt::skip]
const NLL_ND_W_MEAN_Y: &[f64] = &[
    -1.0580721012989056,
];
#[rustfmt::skip]
const NLL_ND_W_MEAN_D0: &[f64] = &[
    -0.016886868952076545, 0.0, 0.0, 0.0,
    0.0, 0.0, -0.06754747580830618, 0.0,
    0.0, -0.04221717238019136, 0.0, 0.0,
    0.0, 0.0, -0.016886868952076545, 0.0,
    0.0, 0.0, 0.0, -0.06754747580830618,
    -0.04221717238019136, -0.04221717238019136, 0.0, 0.0,
];
#[rustfmt::skip]
const NLL_1D_NONE_Y: &[f64] = &[
    -0.06237099364993574,
];
#[rustfmt::skip]
const NLL_1D_NONE_D0: &[f64] = &[
    0.0, 0.0, 0.0, -0.29552020666133955,
    0.0,
];
#[rustfmt::skip]
const BCE_NONE_Y: &[f64] = &[
    0.6089029022786574, 0.35158678312727487, 0.8504916885478012, 1.0508864162993052,
    0.8079153811580386, 0.454780588203883, 0.12581823387481683, 0.09918229792004335,
    0.40421303519729945, 0.7456438598773021, 0.9843206205347091, 0.8963590949729388,
];
#[rustfmt::skip]
const BCE_NONE_D0: &[f64] = &[
    -0.530436159998244, -0.3701665057507064, 4.410791607628581, 2.925916767740359,
    0.9875711147357343, 0.2961867663705065, -0.14429262828743766, -0.5530728508774898,
    -0.7173999389226839, -1.109949653438124, -1.953539661942609, -2.2941096193828,
];
#[rustfmt::skip]
const BCE_NONE_D1: &[f64] = &[
    -0.05324862794409403, -1.1015034056255144, -2.8145119819621227, -1.7991013263102673,
    -0.32624299104384674, 0.2824547697033242, -0.3693978959574513, -1.5970788260706597,
    -0.9958340579797113, 0.2097555178999478, 1.308134626471076, 1.3616207790137735,
];
#[rustfmt::skip]
const BCE_W_NONE_Y: &[f64] = &[
    0.484394562657407, 0.4891301203869885, 1.2300662037241021, 0.9745709188870083,
    0.6427130109837178, 0.6326941015223109, 0.1819709226858232, 0.09197966756640583,
    0.321559637295363, 1.0373452258459204, 1.4236229997918801, 0.831265390142508,
];
#[rustfmt::skip]
const BCE_W_NONE_D0: &[f64] = &[
    -0.4219726836224505, -0.5149783672486065, 6.379328288884129, 2.7134363416412084,
    0.7856327772873409, 0.4120572093274455, -0.2086904409447686, -0.5129086342073493,
    -0.5707061476706059, -1.5441701271607575, -2.825404584368438, -2.127511104066498,
];
#[rustfmt::skip]
const BCE_W_NONE_D1: &[f64] = &[
    -0.042360359506518466, -1.5324196450389524, -4.070628926309097, -1.66845037252214,
    -0.25953289165701454, 0.39295315449572243, -0.5342602093148083, -1.4810987704453937,
    -0.7922061156044203, 0.29181342031590557, 1.8919552249720606, 1.2627397149656874,
];
#[rustfmt::skip]
const BCE_SUM_Y: &[f64] = &[
    7.380100901992071,
];
#[rustfmt::skip]
const BCE_SUM_D0: &[f64] = &[
    -0.530436159998244, -0.15249286047238253, 1.3527756467162717, 0.8878878999754516,
    0.3913707657581861, 0.261290360173724, 0.2703172822738918, 0.26712771970345217,
    0.23140587278485722, 0.3292754511235304, 0.6936597724834368, 1.4592177541638478,
];
#[rustfmt::skip]
const BCE_SUM_D1: &[f64] = &[
    -0.05324862794409403, -0.4537725659517891, -0.8632018025980871, -0.5459486462748293,
    -0.1292888859575829, 0.24917625258194834, 0.6920286677015611, 0.7713703978021195,
    0.3212181055963493, -0.06222565372061296, -0.4644903735782405, -0.8660881757297444,
];
#[rustfmt::skip]
const BCE_W_SUM_Y: &[f64] = &[
    8.341312761489435,
];
#[rustfmt::skip]
const BCE_W_SUM_D0: &[f64] = &[
    -0.4219726836224505, -0.21214918984600012, 1.9565195364671428, 0.8234093743403009,
    0.31134335245715894, 0.3635090721867882, 0.3909599090561533, 0.24772887270572352,
    0.18408804774045728, 0.45809043109060493, 1.0032401897680268, 1.3532491860915472,
];
#[rustfmt::skip]
const BCE_W_SUM_D1: &[f64] = &[
    -0.042360359506518466, -0.6312917335460921, -1.2484488427895477, -0.5063017901961727,
    -0.10285192127599072, 0.3466558365445338, 1.0008811227789725, 0.7153533871296511,
    0.2555354937473718, -0.08656878744075099, -0.6717924680361692, -0.8031927486801864,
];
#[rustfmt::skip]
const BCE_MEAN_Y: &[f64] = &[
    0.6150084084993392,
];
#[rustfmt::skip]
const BCE_MEAN_D0: &[f64] = &[
    -0.044203013333187, -0.012707738372698544, 0.11273130389302265, 0.07399065833128764,
    0.03261423047984884, 0.021774196681143665, 0.022526440189490984, 0.022260643308621014,
    0.019283822732071434, 0.027439620926960867, 0.0578049810402864, 0.12160147951365398,
];
#[rustfmt::skip]
const BCE_MEAN_D1: &[f64] = &[
    -0.004437385662007836, -0.03781438049598242, -0.0719334835498406, -0.04549572052290244,
    -0.010774073829798574, 0.02076468771516236, 0.05766905564179676, 0.06428086648350996,
    0.02676817546636244, -0.005185471143384413, -0.03870753113152004, -0.07217401464414537,
];
#[rustfmt::skip]
const BCE_W_MEAN_Y: &[f64] = &[
    0.6951093967907863,
];
#[rustfmt::skip]
const BCE_W_MEAN_D0: &[f64] = &[
    -0.03516439030187087, -0.017679099153833342, 0.16304329470559523, 0.06861744786169174,
    0.025945279371429913, 0.03029242268223235, 0.032579992421346106, 0.02064407272547696,
    0.015340670645038107, 0.03817420259088374, 0.08360334914733557, 0.11277076550762893,
];
#[rustfmt::skip]
const BCE_W_MEAN_D1: &[f64] = &[
    -0.003530029958876539, -0.05260764446217434, -0.10403740356579565, -0.04219181584968106,
    -0.008570993439665893, 0.02888798637871115, 0.08340676023158104, 0.05961278226080426,
    0.021294624478947647, -0.007214065620062582, -0.05598270566968077, -0.0669327290566822,
];
#[rustfmt::skip]
const BCE_CLAMP_NONE_Y: &[f64] = &[
    100.0, 100.0, 0.0, -0.0,
    0.5684994090355333, 100.0,
];
#[rustfmt::skip]
const BCEL_NONE_Y: &[f64] = &[
    50.0, 50.0, 0.866497731816667, 1.2722665328915372,
    0.0, 1.9287498479639178e-22, 0.10196862404876761, 0.08591185135724233,
    0.3480099704452335, 0.7863383610656118, 1.2133970531573426, 0.9118707690906901,
];
#[rustfmt::skip]
const BCEL_NONE_D0: &[f64] = &[
    0.29552020666133955, -0.7173560908995228, 0.2172201294540741, 0.3976736334128581,
    1.4382788146117504e-22, 0.0, -0.007201189823622531, -0.026000669336193504,
    -0.051593921472538315, -0.30838852416197116, -0.3372863022821651, -0.11173120557948601,
];
#[rustfmt::skip]
const BCEL_NONE_D1: &[f64] = &[
    -14.776010333066978, 35.86780454497614, -2.8834333777648498, -2.362056922299746,
    37.28526060883601, -16.749407507795254, -0.43356369492882585, -1.7601761528074937,
    -1.5135580079650415, 0.3483065791800582, 1.8200915954579255, 1.3917762435004368,
];
#[rustfmt::skip]
const BCEL_PW_W_NONE_Y: &[f64] = &[
    25.0, 25.0, 0.4510354450795603, 0.6793847222226147,
    0.0, 1.9287498479639178e-22, 0.1427804716439116, 0.14934589771857176,
    0.5050271382464984, 1.5726767221312237, 2.531873053684501, 1.962688011376552,
];
#[rustfmt::skip]
const BCEL_PW_W_NONE_D0: &[f64] = &[
    0.14776010333066977, -0.3586780454497614, 0.09188432076480393, 0.15845178203981367,
    1.4382788146117504e-22, 0.0, -0.005048407298171339, -0.01346694358890172,
    -0.1835417236795407, -0.6167770483239423, -0.5916105270249855, -0.16045724696271452,
];
#[rustfmt::skip]
const BCEL_PW_W_NONE_D1: &[f64] = &[
    -7.388005166533489, 17.93390227248807, -1.4181359931191497, -1.098503889917544,
    18.642630304418006, -16.749407507795254, -0.8769167586264285, -5.34757288943247,
    -1.3529143741715293, 0.6966131583601164, 3.4630815649549787, 2.692871372563924,
];
#[rustfmt::skip]
const BCEL_SUM_Y: &[f64] = &[
    105.58626089387309,
];
#[rustfmt::skip]
const BCEL_SUM_D0: &[f64] = &[
    0.29552020666133955, -0.29552020666133955, 0.06662071737730837, 0.12067657260094788,
    5.699845536683243e-23, 0.0, 0.013490682686729627, 0.01255801925464486,
    0.01664223229050599, 0.0914859246995689, 0.11976308659644694, 0.07106903589008993,
];
#[rustfmt::skip]
const BCEL_SUM_D1: &[f64] = &[
    -14.776010333066978, 14.776010333066978, -0.8843397737546408, -0.7167810730251456,
    14.776010333066978, -14.776010333066978, 0.8122366408928358, 0.8501444994630777,
    0.4882161160615979, -0.10332793531089726, -0.6462752441631514, -0.8852692073562257,
];
#[rustfmt::skip]
const BCEL_PW_W_SUM_Y: &[f64] = &[
    57.994811462103435,
];
#[rustfmt::skip]
const BCEL_PW_W_SUM_D0: &[f64] = &[
    0.14776010333066977, -0.14776010333066977, 0.028180626631898634, 0.04808319278041148,
    5.699845536683243e-23, 0.0, 0.009457667774509362, 0.006504376279853217,
    0.05920356339071085, 0.1829718493991378, 0.21006812995384866, 0.1020622822789257,
];
#[rustfmt::skip]
const BCEL_PW_W_SUM_D1: &[f64] = &[
    -7.388005166533489, 7.388005166533489, -0.4349377630775895, -0.3333479348036956,
    7.388005166533489, -14.776010333066978, 1.6428126494454052, 2.582815174593551,
    0.4363986035857222, -0.20665587062179452, -1.2296655231711526, -1.7128587419384187,
];
#[rustfmt::skip]
const BCEL_MEAN_Y: &[f64] = &[
    8.798855074489424,
];
#[rustfmt::skip]
const BCEL_MEAN_D0: &[f64] = &[
    0.024626683888444963, -0.024626683888444963, 0.0055517264481090315, 0.010056381050078991,
    4.7498712805693694e-24, 0.0, 0.001124223557227469, 0.0010465016045537383,
    0.0013868526908754992, 0.007623827058297408, 0.009980257216370579, 0.005922419657507495,
];
#[rustfmt::skip]
const BCEL_MEAN_D1: &[f64] = &[
    -1.2313341944222482, 1.2313341944222482, -0.07369498114622007, -0.0597317560854288,
    1.2313341944222482, -1.2313341944222482, 0.06768638674106965, 0.07084537495525647,
    0.040684676338466494, -0.008610661275908106, -0.05385627034692928, -0.07377243394635215,
];
#[rustfmt::skip]
const BCEL_PW_W_MEAN_Y: &[f64] = &[
    4.832900955175286,
];
#[rustfmt::skip]
const BCEL_PW_W_MEAN_D0: &[f64] = &[
    0.012313341944222482, -0.012313341944222482, 0.0023483855526582197, 0.004006932731700957,
    4.7498712805693694e-24, 0.0, 0.0007881389812091135, 0.0005420313566544347,
    0.004933630282559238, 0.015247654116594817, 0.017505677496154056, 0.008505190189910476,
];
#[rustfmt::skip]
const BCEL_PW_W_MEAN_D1: &[f64] = &[
    -0.6156670972111241, 0.6156670972111241, -0.03624481358979913, -0.027778994566974635,
    0.6156670972111241, -1.2313341944222482, 0.13690105412045042, 0.2152345978827959,
    0.03636655029881018, -0.01722132255181621, -0.10247212693092939, -0.14273822849486822,
];
#[rustfmt::skip]
const BCEL_PW_SUM_Y: &[f64] = &[
    105.83909916668621,
];
#[rustfmt::skip]
const BCEL_PW_SUM_D0: &[f64] = &[
    0.29552020666133955, -0.29552020666133955, 0.05636125326379727, 0.09616638556082296,
    5.699845536683243e-23, 0.0, 0.009457667774509362, 0.006504376279853217,
    0.029601781695355427, 0.0914859246995689, 0.10503406497692433, 0.05103114113946285,
];
#[rustfmt::skip]
const BCEL_PW_SUM_D1: &[f64] = &[
    -14.776010333066978, 14.776010333066978, -0.869875526155179, -0.6666958696073912,
    7.388005166533489, -14.776010333066978, 1.6428126494454052, 2.582815174593551,
    0.2181993017928611, -0.10332793531089726, -0.6148327615855763, -0.8564293709692093,
];
#[rustfmt::skip]
const KL_NONE_Y: &[f64] = &[
    1.6761234215105063, 0.9619700153311024, 0.48522124894730323, 0.3090340001409184,
    -0.11522002449424623, 0.0, -0.0317800665446569, -0.029212726730253546,
    0.1332345382863288, 0.1989723384088003, 0.21672584080298363, 0.31474753671953026,
];
#[rustfmt::skip]
const KL_NONE_D0: &[f64] = &[
    -0.26361189438087596, -0.587108270151999, -0.6566055949778389, -0.49502421295532223,
    -0.24872346007073703, -0.0, 0.017607059173393374, 0.06648162017683125,
    0.1682198984848697, 0.32033167645930616, 0.41200944861081756, 0.3110561429384342,
];
#[rustfmt::skip]
const KL_NONE_D1: &[f64] = &[
    0.850804457854174, 1.5605217645755327, 1.6496640356851084, 1.565902347960891,
    0.48810538351891863, f64::NAN, -0.1128315627219417, -0.44735572062531903,
    -1.580960923642171, -1.61255382772889, -1.1966263000168849, -0.6830189808361629,
];
#[rustfmt::skip]
const KL_LOG_NONE_Y: &[f64] = &[
    0.11341096477970396, -0.005509705153951518, -0.03847010392092691, 0.09983095524511511,
    -0.01783913244485616, 0.44306832626283243, 0.8329792721547914, 0.8639447099202971,
    0.9921710881854215, 0.4489344487674435, 0.054448528104043915, -0.10136383064474605,
];
#[rustfmt::skip]
const KL_LOG_NONE_D0: &[f64] = &[
    -0.06659995666325727, -0.1772445572067091, -0.28254414813404377, -0.3545528581395839,
    -0.3377830354574059, -0.18112923564194744, 0.0942983119071731, 0.3671171072567383,
    0.5005369178042245, 0.4580398819430866, 0.3080765114371404, 0.13828172676550765,
];
#[rustfmt::skip]
const KL_LOG_NONE_D1: &[f64] = &[
    0.1001151884126173, 0.17329213665546148, 0.2454759646071846, 0.4517729973933464,
    0.32448030141256584, 0.3295518746494067, -0.2256972054001683, -0.8957284953596903,
    -1.4095302722273473, -0.9052524914924407, -0.35339224865514923, -0.09118787013423163,
];
#[rustfmt::skip]
const KL_SUM_Y: &[f64] = &[
    4.1198161223783165,
];
#[rustfmt::skip]
const KL_SUM_D0: &[f64] = &[
    -0.26361189438087596, -0.24186364279745426, -0.20137883114845725, -0.15021822005461252,
    -0.09856818367552009, -0.0, -0.032985000280860925, -0.03210984515304247,
    -0.05426132665571167, -0.09502895644732486, -0.14629566317594528, -0.19785394842623355,
];
#[rustfmt::skip]
const KL_SUM_D1: &[f64] = &[
    0.850804457854174, 0.6428686118613766, 0.5059466715405103, 0.47518294526585847,
    0.19343435107416074, f64::NAN, 0.21137823707080433, 0.2160675819782854,
    0.5099577272386673, 0.4783770033547796, 0.4248961734372989, 0.4344489098716946,
];
#[rustfmt::skip]
const KL_LOG_SUM_Y: &[f64] = &[
    3.685605521255168,
];
#[rustfmt::skip]
const KL_LOG_SUM_D0: &[f64] = &[
    -0.06659995666325727, -0.07301722093088195, -0.0866553845021541, -0.10759130133662932,
    -0.1338621627086214, -0.15978878394476606, -0.1766581127553142, -0.1773132699788637,
    -0.16145412905870335, -0.1358811981175921, -0.10939132027576708, -0.08795706581229104,
];
#[rustfmt::skip]
const KL_LOG_SUM_D1: &[f64] = &[
    0.1001151884126173, 0.07138899172514315, 0.07528669144115857, 0.13709336586186469,
    0.12859033860185848, 0.2907244272870521, 0.42282031940711035, 0.43262638919848095,
    0.4546607340826653, 0.26855039919474155, 0.12548196055347988, 0.058002005632170665,
];
#[rustfmt::skip]
const KL_MEAN_Y: &[f64] = &[
    0.343318010198193,
];
#[rustfmt::skip]
const KL_MEAN_D0: &[f64] = &[
    -0.021967657865073, -0.02015530356645452, -0.016781569262371437, -0.012518185004551045,
    -0.008214015306293341, -0.0, -0.0027487500234050772, -0.002675820429420206,
    -0.004521777221309306, -0.007919079703943739, -0.012191305264662108, -0.01648782903551946,
];
#[rustfmt::skip]
const KL_MEAN_D1: &[f64] = &[
    0.07090037148784785, 0.05357238432178138, 0.04216222262837586, 0.03959857877215488,
    0.016119529256180064, f64::NAN, 0.017614853089233686, 0.018005631831523785,
    0.04249647726988895, 0.039864750279564966, 0.03540801445310825, 0.03620407582264122,
];
#[rustfmt::skip]
const KL_LOG_MEAN_Y: &[f64] = &[
    0.3071337934379307,
];
#[rustfmt::skip]
const KL_LOG_MEAN_D0: &[f64] = &[
    -0.005549996388604772, -0.006084768410906829, -0.007221282041846175, -0.008965941778052443,
    -0.011155180225718452, -0.013315731995397173, -0.014721509396276184, -0.014776105831571976,
    -0.013454510754891945, -0.01132343317646601, -0.009115943356313924, -0.007329755484357587,
];
#[rustfmt::skip]
const KL_LOG_MEAN_D1: &[f64] = &[
    0.008342932367718107, 0.00594908264376193, 0.006273890953429881, 0.01142444715515539,
    0.010715861550154877, 0.024227035607254345, 0.0352350266172592, 0.036052199099873415,
    0.03788839450688877, 0.02237919993289513, 0.010456830046123324, 0.004833500469347557,
];
#[rustfmt::skip]
const KL_BATCHMEAN_Y: &[f64] = &[
    1.373272040792772,
];
#[rustfmt::skip]
const KL_BATCHMEAN_D0: &[f64] = &[
    -0.087870631460292, -0.08062121426581809, -0.06712627704948575, -0.05007274001820418,
    -0.032856061225173365, -0.0, -0.010995000093620309, -0.010703281717680825,
    -0.018087108885237225, -0.031676318815774956, -0.04876522105864843, -0.06595131614207785,
];
#[rustfmt::skip]
const KL_BATCHMEAN_D1: &[f64] = &[
    0.2836014859513914, 0.21428953728712552, 0.16864889051350343, 0.1583943150886195,
    0.06447811702472026, f64::NAN, 0.07045941235693474, 0.07202252732609514,
    0.1699859090795558, 0.15945900111825986, 0.141632057812433, 0.14481630329056489,
];
#[rustfmt::skip]
const KL_LOG_BATCHMEAN_Y: &[f64] = &[
    1.2285351737517227,
];
#[rustfmt::skip]
const KL_LOG_BATCHMEAN_D0: &[f64] = &[
    -0.02219998555441909, -0.024339073643627317, -0.0288851281673847, -0.035863767112209774,
    -0.044620720902873806, -0.053262927981588694, -0.05888603758510474, -0.0591044233262879,
    -0.05381804301956778, -0.04529373270586404, -0.0364637734252557, -0.02931902193743035,
];
#[rustfmt::skip]
const KL_LOG_BATCHMEAN_D1: &[f64] = &[
    0.03337172947087243, 0.02379633057504772, 0.025095563813719524, 0.04569778862062156,
    0.04286344620061951, 0.09690814242901738, 0.1409401064690368, 0.14420879639949366,
    0.1515535780275551, 0.08951679973158053, 0.0418273201844933, 0.019334001877390226,
];
