//! Ops generated from one scalar function (`#[elementwise] fn forward(x: f32) -> f32`):
//! the CPU kernel against a plain scalar reference over contiguous, permuted, offset
//! and broadcast views in f32 and f64; first, second and third derivatives; several
//! inputs with broadcasting, `#[no_grad]` inputs and op parameters; the registry
//! entry; the errors. (Every op here also passes gradcheck and gradgradcheck through
//! the registry, in `ops_registry`.)

use autograd::prelude::*;
use autograd::{BackwardOptions, Error, GradcheckOptions, compute, registry};
use my_mish::Method as _;

/// `x · tanh(ln(1 + eˣ))`.
#[differentiable(method)]
mod my_mish {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x * (1.0 + x.exp()).ln().tanh()
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "my_mish",
            vec![Tensor::from_vec(vec![-3.0f64, -0.7, 0.2, 1.3, 4.0], [5]).unwrap()],
            |x| my_mish(&x[0]),
        )]
    }
}

/// `x` where positive, `slope · x` elsewhere.
#[differentiable]
mod leaky {
    use autograd::prelude::*;

    pub struct Leaky {
        pub slope: f64,
    }

    #[elementwise]
    pub fn forward(&self, x: f32) -> f32 {
        if x > 0.0 { x } else { self.slope * x }
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "leaky (away from the kink)",
            vec![Tensor::from_vec(vec![-2.0f64, -0.5, 0.4, 3.0], [4]).unwrap()],
            |x| leaky(&x[0], 0.1),
        )]
    }
}

/// Two inputs, broadcasting, and most of the supported subset at once.
#[differentiable]
mod blend {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32, y: f32) -> f32 {
        let s = x * y;
        let big = s.abs() > 2.0 && !(x < -10.0);
        let t = if big {
            s.min(2.5).max(-2.5)
        } else {
            s.sin() * x.cos()
        };
        t + y.powi(2) - (x * x + 1.0).sqrt().ln_1p() + (x / 4.0).erf() + y.exp_m1() * 0.5
            - (y * y + 0.5).recip()
            + (x * x + 0.25).powf(y * 0.5)
            + x.clamp(-1.0, 1.0) * 0.25
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "blend, y broadcast over rows",
            vec![
                Tensor::from_vec(vec![-1.5f64, -0.3, 0.6, 1.1, 0.45, -0.8], [2, 3]).unwrap(),
                Tensor::from_vec(vec![0.7f64, -0.4, 1.2], [3]).unwrap(),
            ],
            |v| blend(&v[0], &v[1]),
        )]
    }
}

/// `x³ · mask`: a `#[no_grad]` input.
#[differentiable]
mod masked_cube {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32, #[no_grad] mask: f32) -> f32 {
        x * x * x * mask
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "masked_cube",
                vec![
                    Tensor::from_vec(vec![-1.2f64, 0.5, 2.0], [3]).unwrap(),
                    Tensor::from_vec(vec![1.0f64, 0.0, 1.0], [3]).unwrap(),
                ],
                |v| masked_cube(&v[0], &v[1]),
            )
            .differentiable(vec![true, false]),
        ]
    }
}

/// `|x|` with an explicit backward whose gradient at 0 is 1 (the generated one
/// gives 0 there): shows the explicit formula is the one used.
#[differentiable]
mod abs_right {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.abs()
    }

    #[elementwise]
    pub fn backward(x: f32, grad: f32) -> f32 {
        if x >= 0.0 { grad } else { -grad }
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "abs_right",
            vec![Tensor::from_vec(vec![-1.5f64, -0.2, 0.3, 2.0], [4]).unwrap()],
            |x| abs_right(&x[0]),
        )]
    }
}

/// `√(a² + b²)`, its two gradients written out (a tuple), with a `let`.
#[differentiable]
mod hypot {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(a: f32, b: f32) -> f32 {
        (a * a + b * b).sqrt()
    }

    #[elementwise]
    pub fn backward(a: f32, b: f32, grad: f32) -> (f32, f32) {
        let r = (a * a + b * b).sqrt();
        (grad * a / r, grad * b / r)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "hypot, b broadcast",
            vec![
                Tensor::from_vec(vec![-1.5f64, 0.7, 2.0, 0.4], [2, 2]).unwrap(),
                Tensor::from_vec(vec![0.9f64, -1.1], [2]).unwrap(),
            ],
            |v| hypot(&v[0], &v[1]),
        )]
    }
}

/// `a · eᵇ`, whose backward reads `b` and the output (not `a`): the graph saves
/// those two, and each gradient runs as an op of its own.
#[differentiable]
mod scaled_exp {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(a: f32, b: f32) -> f32 {
        a * b.exp()
    }

    /// ∂/∂a = eᵇ, ∂/∂b = the output.
    #[elementwise]
    pub fn backward(b: f32, output: f32, grad: f32) -> (f32, f32) {
        (grad * b.exp(), grad * output)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "scaled_exp, a broadcast",
            vec![
                Tensor::from_vec(vec![-1.5f64, 0.7], [2]).unwrap(),
                Tensor::from_vec(vec![0.9f64, -1.1, 0.3, 0.2], [2, 2]).unwrap(),
            ],
            |v| scaled_exp(&v[0], &v[1]),
        )]
    }
}

/// The scalar reference: the same formulas in plain f64.
fn mish_ref(x: f64) -> f64 {
    x * (1.0 + x.exp()).ln().tanh()
}

#[allow(clippy::neg_cmp_op_on_partial_ord)] // as written in the op
fn blend_ref(x: f64, y: f64) -> f64 {
    let s = x * y;
    let t = if s.abs() > 2.0 && !(x < -10.0) {
        s.clamp(-2.5, 2.5)
    } else {
        s.sin() * x.cos()
    };
    t + y.powi(2) - (x * x + 1.0).sqrt().ln_1p() + erf_ref(x / 4.0) + y.exp_m1() * 0.5
        - 1.0 / (y * y + 0.5)
        + (x * x + 0.25).powf(y * 0.5)
        + x.clamp(-1.0, 1.0) * 0.25
}

/// erf by its series (converges fast for the small arguments used here).
fn erf_ref(x: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = x;
    for n in 0..60 {
        sum += term / (2 * n + 1) as f64;
        term *= -x * x / (n + 1) as f64;
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.uniform_f64(-3.0, 3.0)).collect()
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn the_kernel_matches_the_scalar_reference_over_every_kind_of_view() {
    crate::init();
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-13 } else { 2e-6 };
        let base = Tensor::from_vec(values(4 * 6, 1), [4, 6]).unwrap();
        let base = compute::cast(&base, dtype).unwrap();
        let x = base.to_vec::<f64>().unwrap();
        // Contiguous.
        let got = my_mish(&base).unwrap().to_vec::<f64>().unwrap();
        let want: Vec<f64> = x.iter().map(|&v| mish_ref(v)).collect();
        close(&got, &want, tol, "contiguous");
        // Permuted (the transpose).
        let t = base.t().unwrap();
        let got = t.my_mish().unwrap().to_vec::<f64>().unwrap();
        let want: Vec<f64> = t
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|&v| mish_ref(v))
            .collect();
        close(&got, &want, tol, "permuted");
        // Offset (a narrowed view), and a single column (strided).
        let n = base.narrow(1, 2, 3).unwrap();
        let got = my_mish(&n).unwrap().to_vec::<f64>().unwrap();
        let want: Vec<f64> = n
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|&v| mish_ref(v))
            .collect();
        close(&got, &want, tol, "offset");
        // Broadcast: y a [6] row against x [4, 6], and a [4, 1] column.
        let y = compute::cast(&Tensor::from_vec(values(6, 2), [6]).unwrap(), dtype).unwrap();
        let yv = y.to_vec::<f64>().unwrap();
        let got = blend(&base, &y).unwrap();
        assert_eq!(got.dims(), &[4, 6]);
        let want: Vec<f64> = (0..24).map(|i| blend_ref(x[i], yv[i % 6])).collect();
        close(
            &got.to_vec::<f64>().unwrap(),
            &want,
            tol * 10.0,
            "broadcast row",
        );
        let col = compute::cast(&Tensor::from_vec(values(4, 3), [4, 1]).unwrap(), dtype).unwrap();
        let cv = col.to_vec::<f64>().unwrap();
        let got = blend(&col, &base.t().unwrap().t().unwrap()).unwrap();
        let want: Vec<f64> = (0..24).map(|i| blend_ref(cv[i / 6], x[i])).collect();
        close(
            &got.to_vec::<f64>().unwrap(),
            &want,
            tol * 10.0,
            "broadcast column",
        );
        assert_eq!(got.dtype(), dtype);
    }
}

#[test]
fn long_inputs_cross_the_gather_chunks() {
    crate::init();
    let n = 5000;
    let x = Tensor::from_vec(values(2 * n, 4), [2, n]).unwrap();
    let t = x.t().unwrap(); // [n, 2], strided
    let got = t.my_mish().unwrap().to_vec::<f64>().unwrap();
    let want: Vec<f64> = t
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .map(|&v| mish_ref(v))
        .collect();
    close(&got, &want, 1e-13, "strided, long");
}

#[test]
fn gradients_of_every_order_match_the_formulas() {
    crate::init();
    let xs = [-2.0f64, -0.4, 0.3, 1.7];
    let x = Tensor::from_vec(xs.to_vec(), [4])
        .unwrap()
        .with_requires_grad(true);
    let opts = BackwardOptions::default().create_graph(true);
    let y = my_mish(&x).unwrap().sum_all().unwrap();
    let g1 = autograd::grad(&y, &[&x], opts.clone()).unwrap()[0]
        .clone()
        .unwrap();
    let d1 = |x: f64| {
        let t = (1.0 + x.exp()).ln().tanh();
        let s = 1.0 / (1.0 + (-x).exp());
        t + x * (1.0 - t * t) * s
    };
    close(
        &g1.to_vec::<f64>().unwrap(),
        &xs.map(d1),
        1e-12,
        "first derivative",
    );
    // The second: the derivative of the first, against a central difference of d1.
    let g2 = autograd::grad(&g1.sum_all().unwrap(), &[&x], opts.clone()).unwrap()[0]
        .clone()
        .unwrap();
    let h = 1e-6;
    let d2 = |x: f64| (d1(x + h) - d1(x - h)) / (2.0 * h);
    close(
        &g2.to_vec::<f64>().unwrap(),
        &xs.map(d2),
        1e-7,
        "second derivative",
    );

    // x³ · mask: the third derivative of x³ is 6, where the mask is 1.
    let x = Tensor::from_vec(vec![0.5f64, -1.5, 2.0], [3])
        .unwrap()
        .with_requires_grad(true);
    let mask = Tensor::from_vec(vec![1.0f64, 1.0, 0.0], [3]).unwrap();
    let mut g = masked_cube(&x, &mask).unwrap();
    for _ in 0..3 {
        g = autograd::grad(&g.sum_all().unwrap(), &[&x], opts.clone()).unwrap()[0]
            .clone()
            .unwrap();
    }
    assert_eq!(g.to_vec::<f64>().unwrap(), vec![6.0, 6.0, 0.0]);
    // A fourth is beyond the generated orders: a clear error.
    let err = autograd::grad(&g.sum_all().unwrap(), &[&x], opts).unwrap_err();
    assert!(
        matches!(
            err.root_cause(),
            Error::DerivativeOrder {
                op: "masked_cube",
                max: 3
            }
        ),
        "{err}"
    );
}

#[test]
fn broadcast_inputs_get_gradients_of_their_own_shape() {
    crate::init();
    let x = Tensor::from_vec(values(6, 5), [2, 3])
        .unwrap()
        .with_requires_grad(true);
    let y = Tensor::from_vec(vec![0.3f64, -0.2, 0.9], [3])
        .unwrap()
        .with_requires_grad(true);
    blend(&x, &y)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(x.grad().unwrap().dims(), &[2, 3]);
    assert_eq!(y.grad().unwrap().dims(), &[3]);
    let report = autograd::gradcheck(
        "blend",
        &|v| blend(&v[0], &v[1]),
        &[x.detach(), y.detach()],
        &[true, true],
        &GradcheckOptions::default(),
    );
    assert!(report.is_ok(), "{report:?}");
    // The mask gets no gradient, and the parameter travels with the op.
    let m = Tensor::from_vec(vec![1.0f64, 0.0, 1.0], [3])
        .unwrap()
        .with_requires_grad(true);
    let x = Tensor::from_vec(vec![1.0f64, 2.0, -1.0], [3])
        .unwrap()
        .with_requires_grad(true);
    masked_cube(&x, &m)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![3.0, 0.0, 3.0]
    );
    assert!(m.grad().is_none());
    let l = leaky(&x.detach().with_requires_grad(true), 0.25).unwrap();
    assert_eq!(l.to_vec::<f64>().unwrap(), vec![1.0, 2.0, -0.25]);
}

#[test]
fn the_registry_describes_generated_ops() {
    crate::init();
    let reg = registry().unwrap();
    let entry = reg.get("masked_cube").unwrap();
    assert_eq!(entry.arity(), 2);
    assert_eq!(entry.differentiable_arity(), 1);
    assert!(entry.inputs.iter().all(|i| i.saved));
    let source = entry.cuda_source.expect("a CUDA source");
    assert!(source.contains("masked_cube_f32") && source.contains("masked_cube_f64"));
    assert!(source.contains("ew_seed3"));
    assert_eq!(reg.get("leaky").unwrap().params, &["slope"]);
    // A derivative op is not registered by itself (it is found through its op).
    assert!(reg.get("my_mish'").is_err());
    assert!(reg.get("matmul").unwrap().cuda_source.is_none());
}

#[test]
fn bad_inputs_are_errors_naming_the_op() {
    crate::init();
    let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], [3]).unwrap();
    let b = Tensor::from_vec(vec![1.0f64, 2.0], [2]).unwrap();
    let err = blend(&a, &b).unwrap_err();
    assert!(matches!(err, Error::Broadcast { op: "blend", .. }), "{err}");
    // Mixed dtypes meet in the wider one (promotion, as PyTorch's), and each
    // gradient comes back in its input's dtype.
    let f = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3]).unwrap();
    let (ag, fg) = (
        a.detach().with_requires_grad(true),
        f.detach().with_requires_grad(true),
    );
    let mixed = blend(&ag, &fg).unwrap();
    assert_eq!(mixed.dtype(), DType::F64);
    let same = blend(&a, &compute::cast(&f, DType::F64).unwrap()).unwrap();
    assert_eq!(
        mixed.to_vec::<f64>().unwrap(),
        same.to_vec::<f64>().unwrap()
    );
    mixed.sum_all().unwrap().backward().unwrap();
    assert_eq!(ag.grad().unwrap().dtype(), DType::F64);
    assert_eq!(fg.grad().unwrap().dtype(), DType::F32);
    // An integer operand computes in the float one's dtype.
    let i = Tensor::from_vec(vec![1i64, 2, 3], [3]).unwrap();
    assert_eq!(
        blend(&a, &i).unwrap().to_vec::<f64>().unwrap(),
        blend(&a, &compute::cast(&i, DType::F64).unwrap())
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
    );
    // Empty tensors and scalars work.
    let e = Tensor::from_vec(Vec::<f64>::new(), [0, 3]).unwrap();
    assert_eq!(my_mish(&e).unwrap().dims(), &[0, 3]);
    let s = Tensor::from_vec(vec![0.5f64], []).unwrap();
    close(
        &[my_mish(&s).unwrap().to_scalar::<f64>().unwrap()],
        &[mish_ref(0.5)],
        1e-15,
        "scalar",
    );
}

/// The check cases above run through the registry in `ops_registry`; this makes
/// sure the generated ops are among the ops checked there.
#[test]
fn generated_ops_supply_check_cases() {
    crate::init();
    for name in [
        "my_mish",
        "leaky",
        "blend",
        "masked_cube",
        "abs_right",
        "hypot",
    ] {
        let entry = registry().unwrap().get(name).unwrap();
        let cases = (entry.check_cases.expect("check cases"))();
        for case in cases {
            case.check(&GradcheckOptions::default()).unwrap();
            case.check_second_order(&GradcheckOptions::default())
                .unwrap();
        }
    }
}

/// Every generated op's CUDA source compiles with NVRTC (for the H200's `sm_90`, and
/// to PTX, where its kernels are found by name). Needs the NVRTC library, not a GPU:
/// skipped loudly without it, a failure with `AUTOGRAD_REQUIRE_NVRTC=1` (CI).
#[cfg(feature = "cuda")]
#[test]
fn every_generated_cuda_source_compiles_with_nvrtc() {
    use autograd::elementwise::CUDA_PRELUDE;
    use autograd_kernels::cuda::compile::{Output, compile_source};
    crate::init();
    if !crate::nvrtc_or_skip("the generated CUDA sources") {
        return;
    }
    let mut compiled = Vec::new();
    for entry in registry().unwrap() {
        let Some(source) = entry.cuda_source else {
            continue;
        };
        let program = format!("{CUDA_PRELUDE}\n{source}");
        let file = format!("{}.cu", entry.name);
        compile_source(&file, &program, "sm_90", Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
        let ptx = compile_source(&file, &program, "compute_90", Output::Ptx)
            .unwrap_or_else(|e| panic!("{e}"));
        let ptx = String::from_utf8_lossy(&ptx);
        // The op's entry points, and those of its gradient ops (a backward reading
        // `output`) in the same program.
        let declared: Vec<&str> = source
            .split("__global__ void ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .collect();
        for suffix in ["f32", "f64"] {
            let own = format!("{}_{suffix}", entry.name);
            assert!(declared.contains(&own.as_str()), "{file}: no `{own}`");
        }
        for kernel in declared {
            let kernel = format!(".entry {kernel}(");
            assert!(
                ptx.contains(&kernel),
                "{file}: no kernel `{kernel}` in the PTX"
            );
        }
        compiled.push(entry.name);
    }
    for name in [
        "my_mish",
        "leaky",
        "blend",
        "masked_cube",
        "scaled_exp",
        "exp",
    ] {
        assert!(
            compiled.contains(&name),
            "{name} not compiled: {compiled:?}"
        );
    }
}

#[test]
fn an_explicit_backward_is_the_one_used_and_differentiates_further() {
    crate::init();
    let x = Tensor::from_vec(vec![0.0f64, -2.0, 3.0], [3])
        .unwrap()
        .with_requires_grad(true);
    abs_right(&x)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f64>().unwrap(),
        vec![1.0, -1.0, 1.0]
    );

    // hypot: first and second derivatives from the written gradients.
    let a = Tensor::from_vec(vec![3.0f64], [1])
        .unwrap()
        .with_requires_grad(true);
    let b = Tensor::from_vec(vec![4.0f64], [1])
        .unwrap()
        .with_requires_grad(true);
    let opts = BackwardOptions::default().create_graph(true);
    let h = hypot(&a, &b).unwrap();
    assert_eq!(h.to_vec::<f64>().unwrap(), vec![5.0]);
    let g = autograd::grad(&h.sum_all().unwrap(), &[&a, &b], opts.clone()).unwrap();
    let (ga, gb) = (g[0].clone().unwrap(), g[1].clone().unwrap());
    assert_eq!(ga.to_vec::<f64>().unwrap(), vec![0.6]);
    assert_eq!(gb.to_vec::<f64>().unwrap(), vec![0.8]);
    // ∂²h/∂a² = b²/r³ = 16/125, ∂²h/∂a∂b = -ab/r³ = -12/125.
    let g2 = autograd::grad(&ga.sum_all().unwrap(), &[&a, &b], opts).unwrap();
    close(
        &g2[0].clone().unwrap().to_vec::<f64>().unwrap(),
        &[16.0 / 125.0],
        1e-15,
        "d2/da2",
    );
    close(
        &g2[1].clone().unwrap().to_vec::<f64>().unwrap(),
        &[-12.0 / 125.0],
        1e-15,
        "d2/dadb",
    );
}

/// A backward reading `output`: the graph saves the output and the inputs named,
/// nothing else; the gradients and their derivatives are right (through the
/// output, reconnected to its node under `create_graph`).
#[test]
fn a_backward_reading_the_output_saves_it_and_differentiates_through_it() {
    crate::init();
    let entry = registry().unwrap().get("scaled_exp").unwrap();
    assert!(entry.saves_output);
    assert_eq!(entry.saved_names(), ["b", "output"]);
    let a = Tensor::from_vec(vec![2.0f64], [1])
        .unwrap()
        .with_requires_grad(true);
    let b = Tensor::from_vec(vec![0.5f64], [1])
        .unwrap()
        .with_requires_grad(true);
    let y = scaled_exp(&a, &b).unwrap();
    assert_eq!(y.grad_fn().unwrap().saved_tensor_count(), 2);
    let e = 0.5f64.exp();
    let opts = BackwardOptions::default().create_graph(true);
    let g = autograd::grad(&y.sum_all().unwrap(), &[&a, &b], opts.clone()).unwrap();
    let (ga, gb) = (g[0].clone().unwrap(), g[1].clone().unwrap());
    close(&ga.to_vec::<f64>().unwrap(), &[e], 1e-15, "d/da");
    close(&gb.to_vec::<f64>().unwrap(), &[2.0 * e], 1e-15, "d/db");
    // ∂²/∂b² = a eᵇ, ∂²/∂b∂a = eᵇ: the second through the output's node.
    let g2 = autograd::grad(&gb.sum_all().unwrap(), &[&a, &b], opts.clone()).unwrap();
    close(
        &g2[0].clone().unwrap().to_vec::<f64>().unwrap(),
        &[e],
        1e-15,
        "d2/dbda",
    );
    close(
        &g2[1].clone().unwrap().to_vec::<f64>().unwrap(),
        &[2.0 * e],
        1e-15,
        "d2/db2",
    );
    // Third order: ∂³/∂b³ = a eᵇ.
    let g3 = autograd::grad(&g2[1].clone().unwrap().sum_all().unwrap(), &[&b], opts).unwrap();
    close(
        &g3[0].clone().unwrap().to_vec::<f64>().unwrap(),
        &[2.0 * e],
        1e-15,
        "d3/db3",
    );
    // The standard ops that read their output save it alone.
    for name in ["exp", "tanh", "sigmoid", "sqrt", "relu"] {
        let entry = registry().unwrap().get(name).unwrap();
        assert_eq!(entry.saved_names(), ["output"], "{name}");
    }
    let opts = GradcheckOptions::default();
    let x = [
        Tensor::from_vec(vec![-1.5f64, 0.7], [2]).unwrap(),
        Tensor::from_vec(vec![0.9f64, -1.1, 0.3, 0.2], [2, 2]).unwrap(),
    ];
    let f = |v: &[Tensor]| scaled_exp(&v[0], &v[1]);
    autograd::gradgradcheck("scaled_exp", &f, &x, &[true, true], &opts).unwrap();
}

/// Every standard op generated from an elementwise function against a plain f64
/// reference, over contiguous, permuted, offset and broadcast views, in f32 and f64.
#[test]
fn every_standard_generated_op_matches_its_scalar_reference_over_views() {
    use autograd::ops;
    crate::init();
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    let softplus = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
    type Case<'a> = (
        &'a str,
        &'a dyn Fn(&Tensor) -> Result<Tensor>,
        &'a dyn Fn(f64) -> f64,
    );
    let gelu =
        |x: f64| 0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh());
    let cases: [Case<'_>; 22] = [
        ("exp", &|x| ops::exp(x), &|x| x.exp()),
        ("log", &|x| ops::log(&x.abs()?), &|x| x.abs().ln()),
        ("sqrt", &|x| ops::sqrt(&x.abs()?), &|x| x.abs().sqrt()),
        ("square", &|x| ops::square(x), &|x| x * x),
        ("abs", &|x| ops::abs(x), &|x| x.abs()),
        ("tanh", &|x| ops::tanh(x), &|x| x.tanh()),
        ("sigmoid", &|x| ops::sigmoid(x), &sigmoid),
        ("relu", &|x| ops::relu(x), &|x| x.max(0.0)),
        ("gelu", &|x| ops::gelu(x), &gelu),
        ("sin", &|x| ops::sin(x), &|x| x.sin()),
        ("cos", &|x| ops::cos(x), &|x| x.cos()),
        ("erf", &|x| ops::erf(x), &erf_ref),
        ("softplus", &|x| ops::softplus(x), &softplus),
        ("silu", &|x| ops::silu(x), &|x| x * sigmoid(x)),
        ("mish", &|x| ops::mish(x), &|x| x * softplus(x).tanh()),
        ("log1p", &|x| ops::log1p(&x.abs()?), &|x| x.abs().ln_1p()),
        ("expm1", &|x| ops::expm1(x), &|x| x.exp_m1()),
        ("leaky_relu", &|x| ops::leaky_relu(x, 0.2), &|x| {
            if x > 0.0 { x } else { 0.2 * x }
        }),
        ("elu", &|x| ops::elu(x, 1.5), &|x| {
            if x > 0.0 { x } else { 1.5 * x.exp_m1() }
        }),
        ("recip", &|x| ops::recip(x), &|x| 1.0 / x),
        ("clamp", &|x| ops::clamp(x, -0.5, 1.0), &|x| {
            x.clamp(-0.5, 1.0)
        }),
        ("hardtanh", &|x| ops::hardtanh(x), &|x| x.clamp(-1.0, 1.0)),
    ];
    for dtype in [DType::F64, DType::F32] {
        let tol = if dtype == DType::F64 { 1e-12 } else { 1e-6 }; // the reference erf is a series, good to ~1e-13 near |x| = 3;
        let base =
            compute::cast(&Tensor::from_vec(values(5 * 6, 9), [5, 6]).unwrap(), dtype).unwrap();
        let views = [
            ("contiguous", base.clone()),
            ("permuted", base.t().unwrap()),
            ("offset", base.narrow(1, 1, 4).unwrap()),
            (
                "broadcast",
                base.narrow(0, 2, 1).unwrap().broadcast_to([3, 6]).unwrap(),
            ),
        ];
        for (name, f, reference) in cases {
            for (view, x) in &views {
                let got = f(x).unwrap();
                assert_eq!(got.dtype(), dtype);
                let want: Vec<f64> = x
                    .to_vec::<f64>()
                    .unwrap()
                    .iter()
                    .map(|&v| reference(v))
                    .collect();
                close(
                    &got.to_vec::<f64>().unwrap(),
                    &want,
                    tol,
                    &format!("{name} {view} {dtype}"),
                );
            }
        }
        // where: three operands broadcast to one shape.
        let mask = Tensor::from_vec(vec![true, false, false, true, true, false], [6]).unwrap();
        let b = base.narrow(1, 0, 1).unwrap();
        let got = ops::r#where(&mask, &base, &b).unwrap();
        let (m, x, bv) = (
            mask.to_vec::<f64>().unwrap(),
            base.to_vec::<f64>().unwrap(),
            b.to_vec::<f64>().unwrap(),
        );
        let want: Vec<f64> = (0..30)
            .map(|i| if m[i % 6] != 0.0 { x[i] } else { bv[i / 6] })
            .collect();
        close(
            &got.to_vec::<f64>().unwrap(),
            &want,
            0.0,
            &format!("where {dtype}"),
        );
    }
}
