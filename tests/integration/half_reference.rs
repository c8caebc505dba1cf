//! The registered ops in f16 and bf16 against PyTorch: values and gradients.
//!
//! Every case builds closed-form inputs (element `i` is `offset + scale · f(a·i + b)`,
//! `f` sin or cos, computed in f64), rounds them to the dtype with `to_dtype`
//! (checked bit for bit against the rounded inputs PyTorch used), runs one op and
//! differentiates `Σ y · w` with `w_j = sin(0.5 j + 0.3)` rounded to `y`'s dtype (as
//! `ops_batch.rs`). The output and every gradient are compared with PyTorch's, run on
//! the CPU in float16 and bfloat16, with `torch.testing.assert_close`'s tolerances
//! for the dtype (`|got - want| ≤ atol + rtol · |want|`; see [`Tol`]), or no farther
//! from the exact result (the op in f64 on the same rounded inputs, also in the
//! data) than PyTorch's own half result is, loosened only
//! for the cases marked [`Tol::Accumulates`], each saying what it accumulates and how
//! far apart the two are (sums, means, `logsumexp`, `std_dev` and the losses match
//! with the tight tolerances).
//!
//! The data is committed (`tests/data/half_grads.json`, PyTorch 2.15), so this test
//! needs no Python. Regenerate it with
//!
//! ```text
//! ~/.cache/peer-venvs/torch/bin/python scripts/reference/half_grads.py
//! ```
//!
//! The cases here mirror the script's by name and order: change both together.

use autograd::prelude::*;
use autograd::{Shape, ops};
use serde_json::Value;

const DATA: &str = include_str!("../data/half_grads.json");

/// How close a result must be to PyTorch's.
#[derive(Clone, Copy, Debug)]
enum Tol {
    /// `torch.testing.assert_close`'s defaults: f16 `rtol 1e-3, atol 1e-5`, bf16
    /// `rtol 1.6e-2, atol 1e-5` (about one rounding of the result). For ops that
    /// compute each element from a few values in f32 and round it once, as
    /// PyTorch's CPU kernels for halves do.
    Exact,
    /// f16 `rtol 1e-2, atol 1e-3`, bf16 `rtol 5e-2, atol 1e-2`: for ops that
    /// accumulate (sums, means, matmul, convolution, softmax, norms), whose
    /// results PyTorch's CPU kernels may sum in another order, or round at other
    /// intermediate steps, than ours.
    Accumulates,
}

impl Tol {
    /// `(rtol, atol)` for `dtype`.
    fn rtol_atol(self, dtype: DType) -> (f64, f64) {
        match (self, dtype) {
            (Tol::Exact, DType::F16) => (1e-3, 1e-5),
            (Tol::Exact, _) => (1.6e-2, 1e-5),
            (Tol::Accumulates, DType::F16) => (1e-2, 1e-3),
            (Tol::Accumulates, _) => (5e-2, 1e-2),
        }
    }
}

/// One case: its name in the JSON, its tolerance, and the op applied to the inputs.
struct Case {
    name: &'static str,
    tol: Tol,
    run: fn(&[Tensor]) -> Result<Tensor>,
}

/// A case compared with [`Tol::Exact`].
fn exact(name: &'static str, run: fn(&[Tensor]) -> Result<Tensor>) -> Case {
    Case {
        name,
        tol: Tol::Exact,
        run,
    }
}

/// A case compared with [`Tol::Accumulates`]; `_why` says what it accumulates.
fn accumulates(name: &'static str, _why: &str, run: fn(&[Tensor]) -> Result<Tensor>) -> Case {
    Case {
        name,
        tol: Tol::Accumulates,
        run,
    }
}

/// The cases, in the script's order.
fn cases() -> Vec<Case> {
    vec![
        // ----- primitives -----
        // The gradient of b sums 2 values: one rounding, as PyTorch's.
        exact("add [2,3]+[3]", |v| ops::add(&v[0], &v[1])),
        exact("sub [2,3]-[2,1]", |v| ops::sub(&v[0], &v[1])),
        exact("mul [2,3]*[2,3]", |v| ops::mul(&v[0], &v[1])),
        exact("div [2,3]/[3]", |v| ops::div(&v[0], &v[1])),
        exact("neg", |v| ops::neg(&v[0])),
        exact("add_scalar 2.5", |v| ops::add_scalar(&v[0], 2.5)),
        exact("mul_scalar -1.5", |v| ops::mul_scalar(&v[0], -1.5)),
        exact("div_scalar 3", |v| ops::div_scalar(&v[0], 3.0)),
        exact("broadcast_to [3]->[2,3]", |v| {
            ops::broadcast_to(&v[0], Shape::from([2, 3]))
        }),
        exact("sum_to_shape [2,3,4]->[3,1]", |v| {
            ops::sum_to_shape(&v[0], Shape::from([3, 1]))
        }),
        exact("to_dtype ->f32", |v| ops::to_dtype(&v[0], DType::F32)),
        // ----- elementwise -----
        exact("abs", |v| ops::abs(&v[0])),
        exact("cos", |v| ops::cos(&v[0])),
        exact("sin", |v| ops::sin(&v[0])),
        exact("exp", |v| ops::exp(&v[0])),
        exact("expm1", |v| ops::expm1(&v[0])),
        exact("log", |v| ops::log(&v[0])),
        exact("log1p", |v| ops::log1p(&v[0])),
        exact("sqrt", |v| ops::sqrt(&v[0])),
        exact("square", |v| ops::square(&v[0])),
        exact("recip", |v| ops::recip(&v[0])),
        exact("tanh", |v| ops::tanh(&v[0])),
        exact("sigmoid", |v| ops::sigmoid(&v[0])),
        exact("relu", |v| ops::relu(&v[0])),
        exact("gelu (tanh)", |v| ops::gelu(&v[0])),
        exact("erf", |v| ops::erf(&v[0])),
        exact("softplus", |v| ops::softplus(&v[0])),
        exact("silu", |v| ops::silu(&v[0])),
        exact("mish", |v| ops::mish(&v[0])),
        exact("leaky_relu 0.1", |v| ops::leaky_relu(&v[0], 0.1)),
        exact("elu 0.7", |v| ops::elu(&v[0], 0.7)),
        exact("clamp [-0.5,0.5]", |v| ops::clamp(&v[0], -0.5, 0.5)),
        exact("hardtanh", |v| ops::hardtanh(&v[0])),
        exact("pow_scalar 1.5", |v| ops::pow_scalar(&v[0], 1.5)),
        exact("pow_scalar 3", |v| ops::pow_scalar(&v[0], 3.0)),
        exact("pow [2,3]^[2,3]", |v| ops::pow(&v[0], &v[1])),
        exact("maximum [2,3],[3]", |v| ops::maximum(&v[0], &v[1])),
        exact("minimum [2,3],[3]", |v| ops::minimum(&v[0], &v[1])),
        exact("where [2,3],[2,3],[3]", |v| {
            ops::r#where(&v[0], &v[1], &v[2])
        }),
        exact("dropout [2,3]", |v| ops::dropout_op(&v[0], &v[1])),
        // ----- reductions -----
        exact("sum axis 1", |v| ops::sum(&v[0], 1, false)),
        exact("sum_all", |v| ops::sum_all(&v[0])),
        exact("mean axis -1 keepdim", |v| ops::mean(&v[0], -1, true)),
        exact("mean_all", |v| ops::mean_all(&v[0])),
        exact("max axis 1", |v| ops::max(&v[0], 1, false)),
        exact("min axis -1 keepdim", |v| ops::min(&v[0], -1, true)),
        exact("max_all", |v| ops::max_all(&v[0])),
        exact("min_all", |v| ops::min_all(&v[0])),
        exact("logsumexp axis -1", |v| ops::logsumexp(&v[0], -1, false)),
        exact("var axis 1 correction 1", |v| ops::var(&v[0], 1, 1, false)),
        exact("std_dev axis -1 correction 0 keepdim", |v| {
            ops::std_dev(&v[0], -1, 0, true)
        }),
        exact("cumsum axis 1", |v| ops::cumsum(&v[0], 1, false)),
        exact("cumsum axis -1 reverse", |v| ops::cumsum(&v[0], -1, true)),
        // ----- neural-network ops -----
        exact("softmax axis -1", |v| ops::softmax(&v[0], -1)),
        exact("softmax axis 1", |v| ops::softmax(&v[0], 1)),
        exact("log_softmax axis -1", |v| ops::log_softmax(&v[0], -1)),
        exact("cross_entropy [3,4]", |v| ops::cross_entropy(&v[0], &v[1])),
        exact("mse_loss [2,3]", |v| ops::mse_loss(&v[0], &v[1])),
        exact("layer_norm [3,5]", |v| {
            ops::layer_norm(&v[0], None, None, 1e-5)
        }),
        exact("layer_norm [2,2,4] affine", |v| {
            ops::layer_norm(&v[0], Some(&v[1]), Some(&v[2]), 1e-5)
        }),
        exact("embedding [5,3] by [2,2]", |v| ops::embedding(&v[0], &v[1])),
        // ----- shapes and indexing -----
        exact("reshape [2,3,4]->[4,6]", |v| {
            ops::reshape(&v[0], Shape::from([4, 6]))
        }),
        exact("transpose [2,3,4]", |v| ops::transpose(&v[0], -1, -2)),
        exact("permute [2,0,1]", |v| ops::permute(&v[0], vec![2, 0, 1])),
        exact("unsqueeze 1", |v| ops::unsqueeze(&v[0], 1)),
        exact("squeeze -2", |v| ops::squeeze(&v[0], -2)),
        exact("narrow axis 1 [1..3]", |v| ops::narrow(&v[0], 1, 1, 2)),
        exact("pad axis -1 (1,2)", |v| ops::pad(&v[0], -1, 1, 2)),
        exact("concat axis -1", |v| ops::concat(&v[0], &v[1], -1)),
        exact("index_select axis 0", |v| {
            ops::index_select(&v[0], &v[1], 0)
        }),
        exact("index_add axis 0", |v| {
            ops::index_add(&v[0], &v[1], &v[2], 0)
        }),
        exact("gather axis -1", |v| ops::gather(&v[0], &v[1], -1)),
        exact("scatter_add axis 0", |v| {
            ops::scatter_add(&v[0], &v[1], &v[2], 0)
        }),
        exact("to_device cpu", |v| ops::to_device(&v[0], Device::Cpu)),
        // ----- linear algebra -----
        exact("matmul [2,3]@[3,4]", |v| ops::matmul(&v[0], &v[1])),
        accumulates(
            "matmul [2,2,3]@[3,4]",
            "a matrix product; b's gradient, a product per batch entry rounded to the dtype \
             and then summed over the batch, is 3 f16 ulps from PyTorch's",
            |v| ops::matmul(&v[0], &v[1]),
        ),
        // ----- convolution and pooling -----
        accumulates(
            "conv2d bias s(2,1) p(1,1)",
            "a convolution: im2col, a matrix product and the bias, each rounded to the \
             dtype (PyTorch's rounds once): up to 4 f16 ulps from PyTorch",
            |v| {
                ops::conv2d(
                    &v[0],
                    &v[1],
                    Some(&v[2]),
                    ops::Conv2dOptions {
                        stride: (2, 1),
                        padding: (1, 1),
                        ..Default::default()
                    },
                )
            },
        ),
        accumulates(
            "conv2d groups 2 d(2,1) p(0,1)",
            "a grouped convolution: a matrix product per group, each rounded to the dtype, \
             then joined; 1 bf16 ulp from PyTorch at one gradient element",
            |v| {
                ops::conv2d(
                    &v[0],
                    &v[1],
                    None,
                    ops::Conv2dOptions {
                        padding: (0, 1),
                        dilation: (2, 1),
                        groups: 2,
                        ..Default::default()
                    },
                )
            },
        ),
        exact("max_pool2d k(3,2) s(1,2) p(1,1)", |v| {
            ops::max_pool2d(
                &v[0],
                ops::MaxPool2dOptions::new((3, 2))
                    .stride((1, 2))
                    .padding((1, 1)),
            )
        }),
        exact("avg_pool2d k(3,3) s(2,1) p(1,1)", |v| {
            ops::avg_pool2d(
                &v[0],
                ops::AvgPool2dOptions::new((3, 3))
                    .stride((2, 1))
                    .padding((1, 1)),
            )
        }),
        exact("im2col k(2,3) s(1,2) p(1,0)", |v| {
            ops::im2col(&v[0], (2, 3), (1, 2), (1, 0), (1, 1))
        }),
        exact("col2im (4,5) k(2,2) s(1,2) p(1,1) d(2,1)", |v| {
            ops::col2im(&v[0], (4, 5), (2, 2), (1, 2), (1, 1), (2, 1))
        }),
        // ----- issue 37: attention -----
        exact("scaled_dot_product_attention causal", |v| {
            let causal = ops::AttentionOptions {
                is_causal: true,
                ..Default::default()
            };
            ops::scaled_dot_product_attention(&v[0], &v[1], &v[2], causal)
        }),
        // ----- issue 37: shape -----
        exact("transpose [2,3,4] (0,2)", |v| ops::transpose(&v[0], 0, 2)),
        // ----- issue 37: convolution family -----
        exact("max_pool2d k(2,3) s(2,2) p(1,1) d(2,1) ceil", |v| {
            let o = ops::MaxPool2dOptions::new((2, 3))
                .stride((2, 2))
                .padding((1, 1))
                .dilation((2, 1))
                .ceil_mode(true);
            ops::max_pool2d(&v[0], o)
        }),
        exact("avg_pool2d k(3,2) s(2,2) p(1,1) ceil no-pad-count", |v| {
            let o = ops::AvgPool2dOptions::new((3, 2))
                .stride((2, 2))
                .padding((1, 1))
                .ceil_mode(true)
                .count_include_pad(false);
            ops::avg_pool2d(&v[0], o)
        }),
        accumulates(
            "avg_pool2d k(3,3) s(1,2) p(1,1) divisor 5",
            "each window's gradient times 1/5 is rounded to the dtype before the \
             overlapping windows are summed (PyTorch's rounds the sum once): where they \
             cancel, 8 f16 ulps from PyTorch at one gradient element",
            |v| {
                let o = ops::AvgPool2dOptions::new((3, 3))
                    .stride((1, 2))
                    .padding((1, 1))
                    .divisor_override(5);
                ops::avg_pool2d(&v[0], o)
            },
        ),
        // ----- issue 37: reductions -----
        exact("prod axis 1", |v| ops::prod(&v[0], 1, false)),
        exact("cumprod axis -1", |v| ops::cumprod(&v[0], -1, false)),
        exact("logcumsumexp axis 1", |v| {
            ops::logcumsumexp(&v[0], 1, false)
        }),
        // ----- issue 37: elementwise -----
        exact("tan", |v| ops::tan(&v[0])),
        exact("asin", |v| ops::asin(&v[0])),
        exact("acos", |v| ops::acos(&v[0])),
        exact("atan", |v| ops::atan(&v[0])),
        exact("atan2 [2,3],[3]", |v| ops::atan2(&v[0], &v[1])),
        exact("sinh", |v| ops::sinh(&v[0])),
        exact("cosh", |v| ops::cosh(&v[0])),
        exact("asinh", |v| ops::asinh(&v[0])),
        exact("acosh", |v| ops::acosh(&v[0])),
        exact("atanh", |v| ops::atanh(&v[0])),
        exact("floor", |v| ops::floor(&v[0])),
        exact("ceil", |v| ops::ceil(&v[0])),
        exact("round", |v| ops::round(&v[0])),
        exact("trunc", |v| ops::trunc(&v[0])),
        exact("sign", |v| ops::sign(&v[0])),
        exact("rsqrt", |v| ops::rsqrt(&v[0])),
        exact("logsigmoid", |v| ops::logsigmoid(&v[0])),
        exact("softsign", |v| ops::softsign(&v[0])),
        exact("selu", |v| ops::selu(&v[0])),
        exact("celu 0.7", |v| ops::celu(&v[0], 0.7)),
        exact("hardswish", |v| ops::hardswish(&v[0])),
        exact("hardsigmoid", |v| ops::hardsigmoid(&v[0])),
        exact("gelu (erf)", |v| ops::gelu_erf(&v[0])),
        exact("softplus_with beta 2 threshold 3", |v| {
            ops::softplus_with(&v[0], 2.0, 3.0)
        }),
        exact("hardtanh_with [-2,0.5]", |v| {
            ops::hardtanh_with(&v[0], -2.0, 0.5)
        }),
    ]
}

/// `v` as a list of numbers.
fn numbers(v: &Value, what: &str) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("{what}: not a list"))
        .iter()
        .map(|x| {
            x.as_f64()
                .unwrap_or_else(|| panic!("{what}: {x} is not a number"))
        })
        .collect()
}

/// `v` as a shape.
fn shape_of(v: &Value, what: &str) -> Vec<usize> {
    numbers(v, what).into_iter().map(|d| d as usize).collect()
}

/// The input of `spec` in `dtype` (index tensors stay i64), as a leaf that requires
/// grad where the spec says so; `rounded`, for a float input, the values PyTorch
/// used, which the rounding by `to_dtype` must reproduce bit for bit.
fn build_input(spec: &Value, rounded: &Value, dtype: DType, what: &str) -> Result<Tensor> {
    let shape = shape_of(&spec["shape"], what);
    let requires_grad = spec["grad"].as_bool().expect("grad flag");
    let values: Vec<f64> = if let Some(w) = spec["wave"].as_array() {
        let (a, b) = (w[0].as_f64().expect("a"), w[1].as_f64().expect("b"));
        let f: fn(f64) -> f64 = match w[2].as_str() {
            Some("sin") => f64::sin,
            Some("cos") => f64::cos,
            other => panic!("{what}: unknown wave function {other:?}"),
        };
        let (scale, offset) = (
            w[3].as_f64().expect("scale"),
            w[4].as_f64().expect("offset"),
        );
        let n = shape.iter().product::<usize>();
        (0..n)
            .map(|i| offset + scale * f(a * i as f64 + b))
            .collect()
    } else if spec["dtype"].as_str() == Some("int64") {
        let ids: Vec<i64> = numbers(&spec["values"], what)
            .into_iter()
            .map(|x| x as i64)
            .collect();
        return Tensor::from_slice(&ids, shape);
    } else if spec["dtype"].as_str() == Some("bool") {
        let set: Vec<bool> = numbers(&spec["values"], what)
            .into_iter()
            .map(|x| x != 0.0)
            .collect();
        return Tensor::from_slice(&set, shape);
    } else {
        numbers(&spec["values"], what)
    };
    let t = Tensor::from_slice(&values, shape)?
        .to_dtype(dtype)?
        .detach();
    let want = numbers(rounded, what);
    let got = t.to_vec::<f64>()?;
    assert_eq!(
        got, want,
        "{what}: to_dtype({dtype}) rounds the inputs unlike the reference (round to nearest, \
         ties to even, from f64)"
    );
    Ok(t.with_requires_grad(requires_grad))
}

/// Compares `got` with PyTorch's `want`, pushing a message per element out of
/// tolerance (naming `what`: case, op, dtype and tensor) onto `failures`.
fn compare(
    what: &str,
    got: &[f64],
    want: &[f64],
    exact: &[f64],
    tol: Tol,
    dtype: DType,
    failures: &mut Vec<String>,
) {
    if got.len() != want.len() || exact.len() != want.len() {
        failures.push(format!(
            "{what}: {} elements, PyTorch {}, exact {}",
            got.len(),
            want.len(),
            exact.len()
        ));
        return;
    }
    let (rtol, atol) = tol.rtol_atol(dtype);
    for (i, ((a, b), e)) in got.iter().zip(want).zip(exact).enumerate() {
        let bound = atol + rtol * b.abs();
        // Written so that a NaN on either side fails. Where PyTorch's own half
        // result is farther from the exact one (f64 from the same rounded inputs)
        // than the tolerance, a value no farther from it than PyTorch's passes:
        // computing in f32 and rounding once is what PyTorch's kernels approximate.
        let close = (a - b).abs() <= bound || (a - e).abs() <= (b - e).abs();
        if !close {
            failures.push(format!(
                "{what}, element {i}: {a}, PyTorch {b}, exact {e} (|diff| {:.3e} > {bound:.3e}, \
                 {tol:?}: rtol {rtol}, atol {atol})",
                (a - b).abs()
            ));
        }
    }
}

/// Runs `case` in `dtype` against the reference `doc` (one case of the JSON),
/// pushing every mismatch onto `failures`.
fn check_case(case: &Case, doc: &Value, dtype: DType, failures: &mut Vec<String>) {
    let op = doc["op"].as_str().expect("op");
    let key = match dtype {
        DType::F16 => "float16",
        _ => "bfloat16",
    };
    let what = format!("`{op}` case \"{}\" ({dtype})", case.name);
    let want = &doc["results"][key];
    let specs = doc["inputs"].as_array().expect("inputs");
    let rounded = want["inputs"].as_array().expect("rounded inputs");
    let run = || -> Result<(Tensor, Vec<Option<Tensor>>, Vec<Tensor>)> {
        let inputs: Vec<Tensor> = specs
            .iter()
            .zip(rounded)
            .enumerate()
            .map(|(k, (s, r))| build_input(s, r, dtype, &format!("{what}: input {k}")))
            .collect::<Result<_>>()?;
        let y = (case.run)(&inputs)?;
        let n = y.numel();
        let w: Vec<f64> = (0..n).map(|j| (0.5 * j as f64 + 0.3).sin()).collect();
        let w = Tensor::from_slice(&w, y.shape().clone())?.to_dtype(y.dtype())?;
        let loss = (&y * &w)?.sum_all()?;
        let wrt: Vec<&Tensor> = inputs.iter().filter(|t| t.requires_grad()).collect();
        let grads = grad(&loss, &wrt, BackwardOptions::default())?;
        Ok((y, grads, inputs.clone()))
    };
    let (y, grads, inputs) = match run() {
        Ok(r) => r,
        Err(e) => {
            failures.push(format!("{what}: error {e}"));
            return;
        }
    };
    let out = &want["output"];
    if y.dims() != shape_of(&out["shape"], &what).as_slice() {
        failures.push(format!(
            "{what}: output shape {:?}, PyTorch {}",
            y.dims(),
            out["shape"]
        ));
        return;
    }
    let values = y.to_vec::<f64>().expect("output values");
    let exact = &want["exact"];
    compare(
        &format!("{what}: output"),
        &values,
        &numbers(&out["data"], &what),
        &numbers(&exact["output"], &what),
        case.tol,
        dtype,
        failures,
    );
    let mut grads = grads.into_iter();
    let exact_grads = exact["grads"].as_array().expect("exact grads");
    for (k, (x, g_want)) in inputs
        .iter()
        .zip(want["grads"].as_array().expect("grads"))
        .enumerate()
    {
        if !x.requires_grad() {
            continue;
        }
        let label = format!("{what}: gradient of input {k}");
        let Some(g) = grads.next().flatten() else {
            failures.push(format!("{label}: none"));
            continue;
        };
        if g.dtype() != x.dtype() || g.dims() != x.dims() {
            failures.push(format!(
                "{label}: {} {:?}, the input is {} {:?}",
                g.dtype(),
                g.dims(),
                x.dtype(),
                x.dims()
            ));
            continue;
        }
        compare(
            &label,
            &g.to_vec::<f64>().expect("gradient values"),
            &numbers(g_want, &label),
            &numbers(&exact_grads[k], &label),
            case.tol,
            dtype,
            failures,
        );
    }
}

/// Every case in `dtype`, all mismatches reported together.
fn replay(dtype: DType) {
    crate::init();
    let doc: Value = serde_json::from_str(DATA).expect("half_grads.json parses");
    let docs = doc["cases"].as_array().expect("cases");
    let cases = cases();
    let names: Vec<&str> = docs
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    let ours: Vec<&str> = cases.iter().map(|c| c.name).collect();
    assert_eq!(
        ours, names,
        "the Rust cases must mirror scripts/reference/half_grads.py, name by name"
    );
    let mut failures = Vec::new();
    for (case, d) in cases.iter().zip(docs) {
        check_case(case, d, dtype, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} mismatches against PyTorch in {dtype}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn registered_ops_match_pytorch_in_f16() {
    replay(DType::F16);
}

#[test]
fn registered_ops_match_pytorch_in_bf16() {
    replay(DType::BF16);
}

/// Every standard op (the registered ops of the library, `ops::STANDARD_OPS`: not
/// the generated derivative ops `<op>'`, nor the ops the tests register) has a
/// case. All of them have a PyTorch equivalent and take floats, so none is excused.
#[test]
fn every_standard_op_has_a_case() {
    crate::init();
    let doc: Value = serde_json::from_str(DATA).expect("half_grads.json parses");
    let covered: Vec<&str> = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["op"].as_str().expect("op"))
        .collect();
    let missing: Vec<&str> = ops::STANDARD_OPS
        .iter()
        .copied()
        .filter(|n| !covered.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "registered ops without a f16/bf16 case against PyTorch: {missing:?}; add one to \
         scripts/reference/half_grads.py and half_reference.rs"
    );
}
