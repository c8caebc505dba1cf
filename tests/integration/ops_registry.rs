//! Registry-wide checks of the standard ops beyond first-order gradcheck: second
//! order, f32 against f64, broadcasting cases for every elementwise binary op.

use autograd::prelude::*;
use autograd::{BackwardOptions, GradcheckOptions, ops, registry};

/// Ops whose second derivative is not checked, with the reason. No standard op is
/// here: ops with kinks (relu, abs, max, maximum, ...) are checked away from them,
/// where their second derivative exists (and is 0).
const NO_SECOND_ORDER: &[(&str, &str)] = &[
    (
        "test_exp_unrecorded_backward",
        "wrong second order on purpose: shows that gradgradcheck catches it",
    ),
    (
        "fused_layer_norm",
        "the raw-kernel example (tests/integration/raw.rs): its backward is raw kernels, and a \
         second derivative is an error (tested there)",
    ),
];

/// Ops that must be covered by the second-order check whatever the list above says.
const SECOND_ORDER_REQUIRED: &[&str] = &["mul", "exp", "tanh", "matmul", "softmax"];

#[test]
fn every_registered_op_passes_gradgradcheck() {
    crate::init();
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    for entry in registry().unwrap() {
        if NO_SECOND_ORDER.iter().any(|(n, _)| *n == entry.name) {
            continue;
        }
        let Some(cases) = entry.check_cases else {
            failures.push(format!("`{}` supplies no check cases", entry.name));
            continue;
        };
        for case in cases() {
            match case.check_second_order(&GradcheckOptions::default()) {
                Ok(_) => checked.push(entry.name),
                Err(e) => failures.push(e.to_string()),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for name in SECOND_ORDER_REQUIRED {
        assert!(
            checked.contains(name),
            "`{name}` was not second-order checked"
        );
    }
    for name in ops::STANDARD_OPS {
        assert!(
            checked.contains(name) || NO_SECOND_ORDER.iter().any(|(n, _)| n == name),
            "`{name}` was not second-order checked"
        );
    }
}

/// The output of a check case and the gradient of each differentiable input.
struct Evaluated {
    output: Vec<f64>,
    grads: Vec<Option<Vec<f64>>>,
}

/// Output and input gradients of a check case, computed in `dtype`.
fn run_case(case: &CheckCase, dtype: DType) -> Result<Evaluated> {
    run_case_with(case, dtype, false)
}

/// Like [`run_case`], recording the backward pass when `create_graph` is set.
fn run_case_with(case: &CheckCase, dtype: DType, create_graph: bool) -> Result<Evaluated> {
    let xs = crate::cases::case_inputs(case, dtype, Device::Cpu)?;
    let y = (case.run)(&xs)?;
    assert_eq!(y.dtype(), dtype, "{}: output dtype", case.label);
    let seed = y.ones_like()?;
    let wrt: Vec<&Tensor> = xs.iter().filter(|x| x.requires_grad()).collect();
    let opts = BackwardOptions::default()
        .seed(seed)
        .create_graph(create_graph);
    let grads = grad(&y, &wrt, opts)?;
    let grads = grads
        .into_iter()
        .map(|g| {
            g.map(|g| {
                assert_eq!(g.dtype(), dtype, "{}: gradient dtype", case.label);
                g.to_vec::<f64>()
            })
            .transpose()
        })
        .collect::<Result<_>>()?;
    Ok(Evaluated {
        output: y.to_vec::<f64>()?,
        grads,
    })
}

fn assert_close(what: &str, f32s: &[f64], f64s: &[f64]) {
    assert_eq!(f32s.len(), f64s.len(), "{what}: lengths");
    for (i, (a, b)) in f32s.iter().zip(f64s).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 + 1e-4 * b.abs(),
            "{what}: element {i}: f32 gives {a}, f64 gives {b}"
        );
    }
}

#[test]
fn every_standard_op_computes_in_f32_as_in_f64() -> Result<()> {
    crate::init();
    for name in ops::STANDARD_OPS {
        let entry = registry()?.get(name)?;
        for case in (entry.check_cases.expect("check cases"))() {
            let (e32, e64) = (run_case(&case, DType::F32)?, run_case(&case, DType::F64)?);
            assert_close(&format!("{}: output", case.label), &e32.output, &e64.output);
            for (k, (a, b)) in e32.grads.iter().zip(&e64.grads).enumerate() {
                match (a, b) {
                    (Some(a), Some(b)) => {
                        assert_close(&format!("{}: gradient {k}", case.label), a, b)
                    }
                    (None, None) => {}
                    _ => panic!("{}: gradient {k} present in one dtype only", case.label),
                }
            }
        }
    }
    Ok(())
}

/// gradgradcheck differentiates the gradient a *recorded* backward computes, and
/// gradcheck checks the gradient an unrecorded one computes; an op whose backward
/// takes another path when recorded (gelu's fused kernel) must give the same values
/// on both, or a wrong recorded formula would go unseen.
#[test]
fn recorded_and_unrecorded_backward_give_the_same_gradients() -> Result<()> {
    crate::init();
    for entry in registry()? {
        let Some(cases) = entry.check_cases else {
            continue;
        };
        for case in cases() {
            let plain = run_case_with(&case, DType::F64, false)?.grads;
            let recorded = run_case_with(&case, DType::F64, true)?.grads;
            for (k, (a, b)) in plain.iter().zip(&recorded).enumerate() {
                let (a, b) = (a.clone().unwrap_or_default(), b.clone().unwrap_or_default());
                assert_eq!(a.len(), b.len(), "{}: gradient {k}", case.label);
                for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                    assert!(
                        (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
                        "{}: gradient {k}, element {i}: {x} unrecorded, {y} recorded",
                        case.label
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn every_elementwise_binary_op_is_checked_on_broadcast_shapes() {
    crate::init();
    for name in ["add", "sub", "mul", "div", "pow", "maximum", "minimum"] {
        let entry = registry().unwrap().get(name).unwrap();
        let cases = (entry.check_cases.expect("check cases"))();
        let broadcast = |c: &CheckCase| c.inputs[0].shape() != c.inputs[1].shape();
        assert!(
            cases.iter().any(broadcast),
            "`{name}` has no broadcasting check case"
        );
        assert!(
            cases
                .iter()
                .any(|c| { broadcast(c) && c.inputs[0].numel() < c.inputs[1].numel() })
                && cases
                    .iter()
                    .any(|c| broadcast(c) && c.inputs[0].numel() > c.inputs[1].numel()),
            "`{name}` must be checked with each operand broadcast"
        );
    }
}

/// `e^x` whose backward multiplies by an unrecorded copy of the output: first-order
/// right, second-order silently wrong without a check. The second-order check must
/// catch such a backward.
#[autograd::differentiable]
mod test_exp_unrecorded_backward {
    use autograd::ops;
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        ops::exp(x)
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        ops::mul(grad, &autograd::no_grad(|| ops::exp(x))?)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let x = Rng::new(3).uniform([4], -1.0, 1.0, DType::F64).unwrap();
        vec![CheckCase::new("unrecorded exp", vec![x], |x| {
            test_exp_unrecorded_backward(&x[0])
        })]
    }
}

#[test]
fn gradgradcheck_catches_a_backward_written_with_unrecorded_computation() -> Result<()> {
    crate::init();
    let entry = registry()?.get("test_exp_unrecorded_backward")?;
    let case = (entry.check_cases.expect("check cases"))().remove(0);
    case.check(&GradcheckOptions::default())?;
    let err = case
        .check_second_order(&GradcheckOptions::default())
        .unwrap_err();
    // The engine sees the backward leave the graph (an op called with recording
    // off on `x`, which requires grad) and names the op, before any comparison.
    assert!(
        matches!(
            err.root_cause(),
            autograd::Error::NotDifferentiable {
                op: "test_exp_unrecorded_backward"
            }
        ),
        "{err}"
    );
    Ok(())
}
