//! The elementwise ops of issue 37 (trigonometric and hyperbolic functions and
//! their inverses, `atan2`, rounding and `sign`, `rsqrt` and PyTorch's activations
//! with their options): values and gradients against PyTorch, in f64 and f32, and
//! the conventions (round's ties to even, `sign` of 0 and NaN, GELU's two forms,
//! softplus's and hardtanh's options). The registry-wide tests gradient-check
//! them to second order.
//!
//! The constants were computed by PyTorch 2 in float64 with
//! `scripts/reference/ops_elementwise.py` (its inputs are closed-form: the test
//! builds the same ones with [`wave`]).

use autograd::ops;
use autograd::prelude::*;
use autograd::{BackwardOptions, ops::GeluApproximate};

/// An op of one tensor.
type UnaryOp = fn(&Tensor) -> Result<Tensor>;

/// Element `i` of a tensor of `shape` is `offset + scale · f(a · i + b)`, as the
/// script's `w`.
fn wave(shape: &[usize], a: f64, b: f64, f: fn(f64) -> f64, scale: f64, offset: f64) -> Tensor {
    let n = shape.iter().product::<usize>();
    let v: Vec<f64> = (0..n)
        .map(|i| offset + scale * f(a * i as f64 + b))
        .collect();
    Tensor::from_slice(&v, shape).unwrap()
}

fn sin(shape: &[usize], a: f64, b: f64, scale: f64) -> Tensor {
    wave(shape, a, b, f64::sin, scale, 0.0)
}

/// The halves (round's ties) and values away from every jump, as the script's.
fn halves() -> Tensor {
    Tensor::from_slice(
        &[
            -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -1.7, -0.3, 0.4, 1.3, 2.6, -2.2,
        ],
        [2, 6],
    )
    .unwrap()
}

/// Both signs, past ±3 (the script's `x`).
fn activations_input() -> Tensor {
    sin(&[2, 4], 0.77, 0.15, 4.0)
}

/// The output and the gradients of `Σ y · sin(0.5 j + 0.3)` of `f` at `inputs`, in
/// `dtype`, as f64 values.
fn run(
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    dtype: DType,
) -> Result<Vec<Vec<f64>>> {
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|t| Ok(t.to_dtype(dtype)?.detach().with_requires_grad(true)))
        .collect::<Result<_>>()?;
    let y = f(&leaves)?;
    assert_eq!(y.dtype(), dtype);
    let r = sin(y.dims(), 0.5, 0.3, 1.0).to_dtype(dtype)?;
    let loss = (&y * &r)?.sum_all()?;
    let refs: Vec<&Tensor> = leaves.iter().collect();
    let grads = grad(&loss, &refs, BackwardOptions::default())?;
    let mut out = vec![y.to_vec::<f64>()?];
    for (g, x) in grads.into_iter().zip(&leaves) {
        let g = g.expect("every input is used");
        assert_eq!(g.dims(), x.dims(), "a gradient has its input's shape");
        out.push(g.to_vec::<f64>()?);
    }
    Ok(out)
}

/// Checks `f` against PyTorch's values (output, then each gradient) in f64 and f32.
fn check(what: &str, f: &dyn Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor], want: &[&[f64]]) {
    check_within(what, f, inputs, want, 1e-12);
}

/// [`check`] with `f64_tol` for f64 (where PyTorch's own f64 result is less exact).
fn check_within(
    what: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    want: &[&[f64]],
    f64_tol: f64,
) {
    crate::init();
    for (dtype, tol) in [(DType::F64, f64_tol), (DType::F32, 2e-5)] {
        let got = run(f, inputs, dtype).unwrap();
        assert_eq!(got.len(), want.len(), "{what}");
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(g.len(), w.len(), "{what} ({dtype}): result {k}");
            for (i, (a, b)) in g.iter().zip(w.iter()).enumerate() {
                assert!(
                    (a - b).abs() <= tol * (1.0 + b.abs()),
                    "{what} ({dtype}): result {k} (0: output, then gradients), element {i}: \
                     {a}, PyTorch {b}"
                );
            }
        }
    }
}

// ----- trigonometric and hyperbolic -----

#[test]
fn trigonometric_and_hyperbolic_functions_match_pytorch() {
    let unary = |name: &str, f: UnaryOp, x: Tensor, y: &[f64], d: &[f64]| {
        check(name, &|v| f(&v[0]), &[x], &[y, d]);
    };
    unary("tan", ops::tan, sin(&[2, 3], 0.37, 0.1, 1.3), TAN_Y, TAN_D0);
    unary(
        "asin",
        ops::asin,
        sin(&[2, 3], 0.41, 0.2, 0.9),
        ASIN_Y,
        ASIN_D0,
    );
    unary(
        "acos",
        ops::acos,
        sin(&[2, 3], 0.43, 0.3, 0.9),
        ACOS_Y,
        ACOS_D0,
    );
    unary(
        "atan",
        ops::atan,
        sin(&[2, 3], 0.47, 0.4, 3.0),
        ATAN_Y,
        ATAN_D0,
    );
    unary(
        "sinh",
        ops::sinh,
        sin(&[2, 3], 0.53, 0.5, 2.0),
        SINH_Y,
        SINH_D0,
    );
    unary(
        "cosh",
        ops::cosh,
        sin(&[2, 3], 0.59, 0.6, 2.0),
        COSH_Y,
        COSH_D0,
    );
    unary(
        "asinh",
        ops::asinh,
        sin(&[2, 3], 0.61, 0.7, 3.0),
        ASINH_Y,
        ASINH_D0,
    );
    let above_one = wave(&[2, 3], 0.67, 0.8, f64::sin, 0.8, 2.0);
    unary("acosh", ops::acosh, above_one, ACOSH_Y, ACOSH_D0);
    unary(
        "atanh",
        ops::atanh,
        sin(&[2, 3], 0.71, 0.9, 0.9),
        ATANH_Y,
        ATANH_D0,
    );
}

#[test]
fn atan2_matches_pytorch_in_every_quadrant_broadcasting() {
    let y = sin(&[2, 3], 1.1, 0.2, 1.0);
    let x = wave(&[3], 2.1, 0.5, f64::cos, 1.0, 0.0);
    check(
        "atan2",
        &|v| ops::atan2(&v[0], &v[1]),
        &[y, x],
        &[ATAN2_Y, ATAN2_D0, ATAN2_D1],
    );
}

#[test]
fn the_methods_are_the_functions() -> Result<()> {
    crate::init();
    let x = sin(&[2, 3], 0.41, 0.2, 0.9);
    let same =
        |a: Tensor, b: Tensor| assert_eq!(a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
    same(x.tan()?, ops::tan(&x)?);
    same(x.asin()?, ops::asin(&x)?);
    same(x.acos()?, ops::acos(&x)?);
    same(x.atan()?, ops::atan(&x)?);
    same(x.atan2(&x.cos()?)?, ops::atan2(&x, &ops::cos(&x)?)?);
    same(x.sinh()?, ops::sinh(&x)?);
    same(x.cosh()?, ops::cosh(&x)?);
    same(x.asinh()?, ops::asinh(&x)?);
    same(x.atanh()?, ops::atanh(&x)?);
    let above_one = ops::add_scalar(&x, 2.0)?;
    same(above_one.acosh()?, ops::acosh(&above_one)?);
    same(x.floor()?, ops::floor(&x)?);
    same(x.ceil()?, ops::ceil(&x)?);
    same(x.round()?, ops::round(&x)?);
    same(x.trunc()?, ops::trunc(&x)?);
    same(x.sign()?, ops::sign(&x)?);
    same(x.exp()?.rsqrt()?, ops::rsqrt(&ops::exp(&x)?)?);
    same(x.logsigmoid()?, ops::logsigmoid(&x)?);
    same(x.softsign()?, ops::softsign(&x)?);
    same(x.selu()?, ops::selu(&x)?);
    same(x.celu(0.5)?, ops::celu(&x, 0.5)?);
    same(x.hardswish()?, ops::hardswish(&x)?);
    same(x.hardsigmoid()?, ops::hardsigmoid(&x)?);
    same(x.gelu_erf()?, ops::gelu_erf(&x)?);
    same(x.gelu_with(GeluApproximate::Tanh)?, ops::gelu(&x)?);
    same(
        x.softplus_with(2.0, 3.0)?,
        ops::softplus_with(&x, 2.0, 3.0)?,
    );
    same(
        x.hardtanh_with(-0.5, 0.5)?,
        ops::hardtanh_with(&x, -0.5, 0.5)?,
    );
    Ok(())
}

// ----- rounding and the sign -----

#[test]
fn rounding_and_sign_match_pytorch_with_zero_gradients() {
    let cases: [(&str, UnaryOp, &[f64], &[f64]); 5] = [
        ("floor", ops::floor, FLOOR_Y, FLOOR_D0),
        ("ceil", ops::ceil, CEIL_Y, CEIL_D0),
        ("round", ops::round, ROUND_Y, ROUND_D0),
        ("trunc", ops::trunc, TRUNC_Y, TRUNC_D0),
        ("sign", ops::sign, SIGN_Y, SIGN_D0),
    ];
    for (name, f, y, d) in cases {
        assert!(
            d.iter().all(|&g| g == 0.0),
            "{name}: PyTorch's gradient is 0"
        );
        check(name, &|v| f(&v[0]), &[halves()], &[y, d]);
    }
}

#[test]
fn round_takes_halves_to_even_and_sign_of_zero_and_nan_is_zero() -> Result<()> {
    crate::init();
    for dtype in [DType::F32, DType::F64] {
        let x =
            Tensor::from_slice(&[0.5, 1.5, 2.5, -0.5, -2.5, 1e300, -0.0], [7])?.to_dtype(dtype)?;
        let r = ops::round(&x)?.to_vec::<f64>()?;
        let big = if dtype == DType::F32 {
            f64::INFINITY
        } else {
            1e300
        };
        assert_eq!(&r[..5], [0.0, 2.0, 2.0, -0.0, -2.0]);
        assert_eq!(r[5], big);
        assert!(
            r[3].is_sign_negative() && r[6].is_sign_negative(),
            "-0 stays -0"
        );
        let s = Tensor::from_slice(&[f64::NAN, -0.0, 0.0, -3.0, 2.0, f64::NEG_INFINITY], [6])?
            .to_dtype(dtype)?;
        let s = ops::sign(&s)?.to_vec::<f64>()?;
        assert_eq!(s, [0.0, 0.0, 0.0, -1.0, 1.0, -1.0]);
        assert!(s[1].is_sign_positive(), "sign(-0) is +0, as PyTorch's");
    }
    // An integer tensor computes in f32, as every generated op's does.
    let i = Tensor::from_slice(&[-3i64, 0, 7], [3])?;
    let f = ops::floor(&i)?;
    assert_eq!(
        (f.dtype(), f.to_vec::<f64>()?),
        (DType::F32, vec![-3.0, 0.0, 7.0])
    );
    assert_eq!(ops::sign(&i)?.to_vec::<f64>()?, [-1.0, 0.0, 1.0]);
    Ok(())
}

// ----- activations -----

#[test]
fn activations_match_pytorch() {
    type Case<'a> = (
        &'a str,
        Box<dyn Fn(&Tensor) -> Result<Tensor>>,
        &'a [f64],
        &'a [f64],
    );
    let cases: Vec<Case> = vec![
        (
            "logsigmoid",
            Box::new(ops::logsigmoid),
            LOGSIGMOID_Y,
            LOGSIGMOID_D0,
        ),
        ("softsign", Box::new(ops::softsign), SOFTSIGN_Y, SOFTSIGN_D0),
        ("selu", Box::new(ops::selu), SELU_Y, SELU_D0),
        (
            "hardswish",
            Box::new(ops::hardswish),
            HARDSWISH_Y,
            HARDSWISH_D0,
        ),
        ("gelu_erf", Box::new(ops::gelu_erf), GELU_ERF_Y, GELU_ERF_D0),
        (
            "gelu_with default",
            Box::new(|x| ops::gelu_with(x, GeluApproximate::default())),
            GELU_ERF_Y,
            GELU_ERF_D0,
        ),
        (
            "gelu (tanh)",
            Box::new(ops::gelu),
            GELU_TANH_Y,
            GELU_TANH_D0,
        ),
        (
            "gelu_with Tanh",
            Box::new(|x| ops::gelu_with(x, GeluApproximate::Tanh)),
            GELU_TANH_Y,
            GELU_TANH_D0,
        ),
        (
            "softplus_with beta 2 threshold 3",
            Box::new(|x| ops::softplus_with(x, 2.0, 3.0)),
            SOFTPLUS_B2_T3_Y,
            SOFTPLUS_B2_T3_D0,
        ),
        (
            "hardtanh_with [-2, 0.5]",
            Box::new(|x| ops::hardtanh_with(x, -2.0, 0.5)),
            HARDTANH_M2_05_Y,
            HARDTANH_M2_05_D0,
        ),
    ];
    for (name, f, y, d) in cases {
        check(name, &|v| f(&v[0]), &[activations_input()], &[y, d]);
    }
    // PyTorch's celu backward scales by `1.0 / alpha.toFloat()` (derivatives.yaml),
    // 1/alpha rounded to f32, so its f64 gradient is ~1e-8 off; this one is the
    // exact derivative, e^(x/alpha) below 0.
    check_within(
        "celu 0.7",
        &|v| ops::celu(&v[0], 0.7),
        &[activations_input()],
        &[CELU_Y, CELU_D0],
        1e-7,
    );
    // Likewise PyTorch's hardsigmoid backward multiplies by `1.0f / 6.0f`, an f32
    // constant; this one by 1/6 in the dtype.
    check_within(
        "hardsigmoid",
        &|v| ops::hardsigmoid(&v[0]),
        &[activations_input()],
        &[HARDSIGMOID_Y, HARDSIGMOID_D0],
        1e-7,
    );
    let x = activations_input();
    let got = run(
        &|v| ops::celu(&v[0], 0.7),
        std::slice::from_ref(&x),
        DType::F64,
    )
    .unwrap();
    let r = sin(&[2, 4], 0.5, 0.3, 1.0).to_vec::<f64>().unwrap();
    for ((x, g), r) in x.to_vec::<f64>().unwrap().iter().zip(&got[1]).zip(r) {
        let want = if *x > 0.0 { r } else { r * (x / 0.7).exp() };
        assert!((g - want).abs() <= 1e-15, "celu'({x}): {g}, exact {want}");
    }
    check(
        "rsqrt",
        &|v| ops::rsqrt(&v[0]),
        &[wave(&[2, 3], 0.31, 0.1, f64::sin, 1.0, 1.5)],
        &[RSQRT_Y, RSQRT_D0],
    );
}

#[test]
fn softplus_with_pytorchs_defaults_is_linear_past_the_threshold() {
    let x = sin(&[2, 4], 0.77, 0.15, 30.0);
    check(
        "softplus_with 1 20",
        &|v| ops::softplus_with(&v[0], 1.0, 20.0),
        std::slice::from_ref(&x),
        &[SOFTPLUS_DEFAULT_Y, SOFTPLUS_DEFAULT_D0],
    );
    // `softplus(x)` is the same function without the linear piece: past the
    // threshold it differs from PyTorch's by e^-x < e^-20 (value and gradient).
    let got = run(&|v| ops::softplus(&v[0]), &[x], DType::F64).unwrap();
    for (g, w) in got.iter().zip([SOFTPLUS_DEFAULT_Y, SOFTPLUS_DEFAULT_D0]) {
        for (a, b) in g.iter().zip(w) {
            assert!(
                (a - b).abs() <= 1e-8 * (1.0 + b.abs()),
                "softplus {a}, PyTorch {b}"
            );
        }
    }
}

#[test]
fn gelu_approximate_parses_pytorchs_strings() {
    assert_eq!(
        "none".parse::<GeluApproximate>().unwrap(),
        GeluApproximate::None
    );
    assert_eq!(
        "tanh".parse::<GeluApproximate>().unwrap(),
        GeluApproximate::Tanh
    );
    assert_eq!(GeluApproximate::default(), GeluApproximate::None);
    let err = "erf".parse::<GeluApproximate>().unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.op(), Some("gelu_with"), "{msg}");
    assert!(msg.contains("\"erf\"") && msg.contains("\"tanh\""), "{msg}");
}

#[test]
fn hardtanh_with_stops_the_gradient_on_its_bounds_as_pytorch() -> Result<()> {
    crate::init();
    // On the bounds: PyTorch's hardtanh_backward passes nothing (clamp would).
    let x = Tensor::from_slice(&[-2.0f64, -1.0, 0.5, 0.7], [4])?.with_requires_grad(true);
    ops::hardtanh_with(&x, -2.0, 0.5)?.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [0.0, 1.0, 0.0, 0.0]);
    // hardswish's kinks take PyTorch's gradients: -0.5 at -3, 1.5 at 3.
    let x = Tensor::from_slice(&[-3.0f64, 3.0, -4.0, 4.0], [4])?.with_requires_grad(true);
    ops::hardswish(&x)?.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [-0.5, 1.5, 0.0, 1.0]);
    // hardsigmoid's: 0 on both.
    let x = Tensor::from_slice(&[-3.0f64, 3.0, 0.0], [3])?.with_requires_grad(true);
    ops::hardsigmoid(&x)?.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [0.0, 0.0, 1.0 / 6.0]);
    Ok(())
}

// ----- PyTorch's values -----

#[rustfmt::skip]
const TAN_Y: &[f64] = &[
    0.1305170644089538, 0.6677499167141752, 1.453072974687015, 2.7017429436553106,
    3.6013331354899463, 2.631565574878498,
];
#[rustfmt::skip]
const TAN_D0: &[f64] = &[
    0.30055430593795696, 1.0372179633152312, 2.998035240052327, 8.082365570752966,
    10.417203795092192, 2.6548271089443523,
];
#[rustfmt::skip]
const ASIN_Y: &[f64] = &[
    0.17976909854540005, 0.5416852495991703, 0.873992361778535, 1.0997503770699935,
    1.0503246102193404, 0.7757698671229893,
];
#[rustfmt::skip]
const ASIN_D0: &[f64] = &[
    0.3003605149328833, 0.8372102609836695, 1.5014074782557685, 2.1458963749790083,
    1.499539586689779, 0.46924854146925643,
];
#[rustfmt::skip]
const ACOS_Y: &[f64] = &[
    1.3015881821531585, 0.9270668590650409, 0.6003768020290151, 0.4514073693968222,
    0.6254258669706543, 0.9594282904997606,
];
#[rustfmt::skip]
const ACOS_D0: &[f64] = &[
    -0.30656201657063326, -0.8968487395757407, -1.7055533232535438, -2.232405731107654,
    -1.2737461106314523, -0.40908909809296495,
];
#[rustfmt::skip]
const ATAN_Y: &[f64] = &[
    0.862842244293014, 1.1595511456898813, 1.240896845710307, 1.2402794340525853,
    1.1569235197423822, 0.8528871783059593,
];
#[rustfmt::skip]
const ATAN_D0: &[f64] = &[
    0.12496521116298005, 0.11463412179744419, 0.10111797592485378, 0.10256661696073643,
    0.12060378919507618, 0.14495464182027218,
];
#[rustfmt::skip]
const SINH_Y: &[f64] = &[
    1.1126822528807008, 2.6872029865340665, 3.6264219126841213, 2.750443582454249,
    1.169843433632277, -0.01681528706476094,
];
#[rustfmt::skip]
const SINH_D0: &[f64] = &[
    0.44210275240647684, 2.0568314117180764, 3.624687138329975, 2.8500545469535705,
    1.1476433884757007, 0.3350355064080503,
];
#[rustfmt::skip]
const COSH_Y: &[f64] = &[
    1.708354028608812, 3.2794987678755287, 3.60756740760384, 2.1405622793761854,
    1.0659422743856863, 1.3323912140945853,
];
#[rustfmt::skip]
const COSH_D0: &[f64] = &[
    0.4093219954571897, 2.2405308281535334, 3.3398854045883866, 1.8431225788889676,
    0.275237897040246, -0.2949544215624581,
];
#[rustfmt::skip]
const ASINH_Y: &[f64] = &[
    1.4131048636760615, 1.7858689910213086, 1.7595788794376694, 1.3121808524055936,
    0.0047779405703996004, -1.3082416844141442,
];
#[rustfmt::skip]
const ASINH_D0: &[f64] = &[
    0.1358064539629241, 0.23395559603248317, 0.322146730010503, 0.4889410137317871,
    0.7456967005113935, 0.16876157077279627,
];
#[rustfmt::skip]
const ACOSH_Y: &[f64] = &[
    1.5984919277710496, 1.6876816794137854, 1.6397135599558617, 1.455739029938787,
    1.1478836393549336, 0.7837890796618836,
];
#[rustfmt::skip]
const ACOSH_D0: &[f64] = &[
    0.12460355182696228, 0.27474468618476744, 0.388558360185672, 0.4803877723364067,
    0.5262176093831358, 0.3865809864316851,
];
#[rustfmt::skip]
const ATANH_Y: &[f64] = &[
    0.8771610225024745, 1.4685917305106484, 0.7910585775312775, 0.10056269615409537,
    -0.5586761843665882, -1.3297808217814415,
];
#[rustfmt::skip]
const ATANH_D0: &[f64] = &[
    0.5875350013063424, 3.7509938248184884, 1.703278160250549, 0.9837292548113795,
    1.003699666939469, 1.3701017428691462,
];
#[rustfmt::skip]
const ATAN2_Y: &[f64] = &[
    0.22262993169071857, 2.2976662237655834, 1.5891352606570663, -0.38026097178844465,
    -2.282404713433445, -1.5932893344126773,
];
#[rustfmt::skip]
const ATAN2_D0: &[f64] = &[
    0.32032702988967726, -0.369695894456922, -0.02615489439003722, 0.9568200561430344,
    -0.3711411849620609, -0.013678132513854913,
];
#[rustfmt::skip]
const ATAN2_D1: &[f64] = &[
    0.30993923849439864, 0.014676527502690717, -0.8180316106669699,
];
#[rustfmt::skip]
const FLOOR_Y: &[f64] = &[
    -3.0, -2.0, -1.0, 0.0,
    1.0, 2.0, -2.0, -1.0,
    0.0, 1.0, 2.0, -3.0,
];
#[rustfmt::skip]
const FLOOR_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const CEIL_Y: &[f64] = &[
    -2.0, -1.0, -0.0, 1.0,
    2.0, 3.0, -1.0, -0.0,
    1.0, 2.0, 3.0, -2.0,
];
#[rustfmt::skip]
const CEIL_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const ROUND_Y: &[f64] = &[
    -2.0, -2.0, -0.0, 0.0,
    2.0, 2.0, -2.0, -0.0,
    0.0, 1.0, 3.0, -2.0,
];
#[rustfmt::skip]
const ROUND_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const TRUNC_Y: &[f64] = &[
    -2.0, -1.0, -0.0, 0.0,
    1.0, 2.0, -1.0, -0.0,
    0.0, 1.0, 2.0, -2.0,
];
#[rustfmt::skip]
const TRUNC_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const SIGN_Y: &[f64] = &[
    -1.0, -1.0, -1.0, 1.0,
    1.0, 1.0, -1.0, -1.0,
    1.0, 1.0, 1.0, -1.0,
];
#[rustfmt::skip]
const SIGN_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0,
];
#[rustfmt::skip]
const RSQRT_Y: &[f64] = &[
    0.7906105731635164, 0.7257418958184023, 0.6805107542839679, 0.651317376708812,
    0.6358364193211725, 0.632852451391395,
];
#[rustfmt::skip]
const RSQRT_D0: &[f64] = &[
    -0.07302053999460247, -0.13710439575765349, -0.15182836945769698, -0.13453615497370616,
    -0.09584586521300885, -0.04245284979310724,
];
#[rustfmt::skip]
const LOGSIGMOID_Y: &[f64] = &[
    -0.4382849052793026, -0.040648251798008676, -0.018667654630070637, -0.07737738912137444,
    -0.8852423126896126, -3.0745234631544482, -4.011633454810987, -2.771179485432958,
];
#[rustfmt::skip]
const LOGSIGMOID_D0: &[f64] = &[
    0.10486772358486474, 0.028574583257171098, 0.017820520255737837, 0.07251220886564681,
    0.4380166678958183, 0.3195077967865919, -0.15488989775075865, -0.5735628439772331,
];
#[rustfmt::skip]
const SOFTSIGN_Y: &[f64] = &[
    0.37412084707129534, 0.7609032013633404, 0.7988581015270758, 0.7159189788642164,
    -0.2609939597398853, -0.7516891335042449, -0.7997341982811862, -0.730207113260256,
];
#[rustfmt::skip]
const SOFTSIGN_D0: &[f64] = &[
    0.11576256845654305, 0.041009295875665125, 0.03898369807935814, 0.07859147738182495,
    0.4072519334929692, 0.020654795309576132, -0.006326610541206066, -0.04453603559931317,
];
#[rustfmt::skip]
const SELU_Y: &[f64] = &[
    0.6280591733542792, 3.3437576308553183, 4.172979386213807, 2.6478952200035173,
    -0.523107463745553, -1.6729183238944403, -1.7256842264458592, -1.6407163940008191,
];
#[rustfmt::skip]
const SELU_D0: &[f64] = &[
    0.3105033729225651, 0.7537267529935964, 1.0124115367922997, 1.023222667297515,
    0.9209398797507414, 0.028534631297462906, -0.005113344722000181, -0.07182168229017594,
];
#[rustfmt::skip]
const CELU_Y: &[f64] = &[
    0.5977525298943969, 3.182406480145464, 3.971614604376474, 2.520122519983569,
    -0.27734623692652177, -0.6907326761593513, -0.6976690522608826, -0.68534788490677,
];
#[rustfmt::skip]
const CELU_D0: &[f64] = &[
    0.29552020666133955, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.4502501667562845, 0.0044349192778703255, -0.0005252813423684934, -0.012807159715937743,
];
#[rustfmt::skip]
const HARDSWISH_Y: &[f64] = &[
    0.3584276127797237, 3.1824064801454646, 3.9716146043764744, 2.3185641792798397,
    -0.15579640954534946, -0.0, -0.0, -0.13237407844256596,
];
#[rustfmt::skip]
const HARDSWISH_D0: &[f64] = &[
    0.20664275371958, 0.7173560908995228, 0.963558185417193, 1.3049955973086929,
    0.28506597308773773, 0.0, 0.0, 0.24607842293365098,
];
#[rustfmt::skip]
const HARDSIGMOID_Y: &[f64] = &[
    0.5996254216490661, 1.0, 1.0, 0.9200204199972615,
    0.44113851454492825, 0.0, 0.0, 0.048908842579029166,
];
#[rustfmt::skip]
const HARDSIGMOID_D0: &[f64] = &[
    0.049253369244754666, 0.0, 0.0, 0.1623079433168527,
    0.12428420573341123, 0.0, 0.0, -0.10197631819625085,
];
#[rustfmt::skip]
const GELU_ERF_Y: &[f64] = &[
    0.43336906909380546, 3.1800824215862864, 3.9714728432658726, 2.5053402383006373,
    -0.12784040303156385, -0.0037359167068598998, -0.00013006887017002938, -0.009200496201647796,
];
#[rustfmt::skip]
const GELU_ERF_D0: &[f64] = &[
    0.27319412515197006, 0.7225892146834116, 0.9640972943707116, 1.0090347205402026,
    0.17121783019114015, -0.0037270097567116416, 8.143240717712583e-05, 0.01487464426843995,
];
#[rustfmt::skip]
const GELU_TANH_Y: &[f64] = &[
    0.4333365645368246, 3.1804195684971788, 3.9715342290352837, 2.505786632148523,
    -0.1278450938289992, -0.0033337155198640365, -7.250264657713086e-05, -0.008727306597610073,
];
#[rustfmt::skip]
const GELU_TANH_D0: &[f64] = &[
    0.2731383921616494, 0.7222694286095248, 0.9639237688211468, 1.009331931684328,
    0.17125569260720774, -0.003599526419823968, 5.442788810550787e-05, 0.014867267911624446,
];
#[rustfmt::skip]
const SOFTPLUS_B2_T3_Y: &[f64] = &[
    0.7299148964821326, 3.182406480145464, 3.971614604376474, 2.520122519983569,
    0.20054376530763124, 0.0011723561775115765, 0.00016994347399765404, 0.002223960076384445,
];
#[rustfmt::skip]
const SOFTPLUS_B2_T3_D0: &[f64] = &[
    0.22687801236876545, 0.7173560908995228, 0.963558185417193, 0.9738476308781951,
    0.2463873788362821, 0.0007845307455662664, -5.360659193522052e-05, -0.002715451511133184,
];
#[rustfmt::skip]
const SOFTPLUS_DEFAULT_Y: &[f64] = &[
    4.494378467449136, 23.86804860109098, 29.787109532823553, 18.90091890606313,
    0.06834849520750932, 1.3795758138278442e-10, 9.835152693188824e-14, 1.5283118377791572e-09,
];
#[rustfmt::skip]
const SOFTPLUS_DEFAULT_D0: &[f64] = &[
    0.2922187666237497, 0.7173560908995228, 0.963558185417193, 0.9738476248536226,
    0.04926505585215922, 4.621415498421389e-11, -1.5514529885918315e-14, -9.351096570517763e-10,
];
#[rustfmt::skip]
const HARDTANH_M2_05_Y: &[f64] = &[
    0.5, 0.5, 0.5, 0.5,
    -0.3531689127304304, -2.0, -2.0, -2.0,
];
#[rustfmt::skip]
const HARDTANH_M2_05_D0: &[f64] = &[
    0.0, 0.0, 0.0, 0.0,
    0.7457052121767203, 0.0, 0.0, 0.0,
];
