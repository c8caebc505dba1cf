//! The losses of issue 38 with PyTorch's options (`l1_loss`, `mse_loss` with a
//! reduction, `smooth_l1_loss` and `huber_loss`): values and gradients (of the
//! prediction and of the target) against PyTorch in f64 and f32, for every
//! reduction and for betas and deltas either side of the differences; and the
//! errors for mismatched shapes and bad options.
//!
//! The constants were computed by PyTorch 2 in float64 with
//! `scripts/reference/losses.py` (its inputs are closed-form: the test builds the
//! same ones).

use autograd::BackwardOptions;
use autograd::ops::{self, HuberOptions, Reduction, SmoothL1Options};
use autograd::prelude::*;

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
