// An op module may hold other items (imports, constants, helpers, docs), use
// `self::` paths without taking `&self`, and supply check cases that the registry
// hands to gradcheck.
use autograd::GradcheckOptions;
use autograd::prelude::*;

/// Smooth absolute value, sqrt(x² + ε).
#[differentiable]
pub mod smooth_abs {
    use autograd::prelude::*;
    use autograd::ops;

    /// Keeps the function differentiable at 0.
    const EPS: f64 = 1e-3;

    fn root(x: &Tensor) -> Result<Tensor> {
        ops::sqrt(&((x * x)? + EPS)?)
    }

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        self::root(x)
    }

    /// x / sqrt(x² + ε): reads the input and the output.
    pub fn backward(grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        grad * &(x / output)?
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let x = Tensor::from_vec(vec![-1.0f64, -0.01, 0.0, 0.02, 2.0], [5]).unwrap();
        vec![CheckCase::new("smooth_abs", vec![x], |x| smooth_abs(&x[0]))]
    }
}

pub fn main() -> Result<()> {
    let reg = autograd::init()?;
    let entry = reg.get("smooth_abs")?;
    assert_eq!(entry.saved_names(), vec!["x", "output"]);
    let cases = entry.check_cases.expect("check cases")();
    for case in &cases {
        case.check(&GradcheckOptions::default())?;
    }
    assert_eq!(cases.len(), 1);
    Ok(())
}
