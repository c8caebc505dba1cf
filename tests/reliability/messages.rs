//! What calls mean and what errors say: `x.pow(3.0)` compiles and is
//! `x.pow_scalar(3.0)`, tensor ÷ scalar is a true division, a non-scalar root
//! recommends `.sum_all()`, and huge axes and ranges are reported as given.

use autograd::prelude::*;

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// The value and the gradient of `f(x)` summed, at a fresh leaf of `xs`.
fn value_and_grad(xs: &[f64], f: impl Fn(&Tensor) -> Result<Tensor>) -> (Vec<f64>, Vec<f64>) {
    let x = Tensor::from_slice(xs, [xs.len()])
        .unwrap()
        .with_requires_grad(true);
    let y = f(&x).unwrap();
    y.sum_all().unwrap().backward().unwrap();
    (values(&y), values(&x.grad().expect("x gets a gradient")))
}

// ----- `pow` with a number exponent is `pow_scalar` -----

/// `x.pow(3.0)` records `pow_scalar`: the same values and gradient, bit for bit,
/// as `x.pow_scalar(3.0)` (and 3x² as the gradient), bases of either sign.
#[test]
fn pow_with_a_number_exponent_is_pow_scalar() {
    crate::init();
    let xs = [-1.5, -0.5, 0.0, 0.5, 2.0];
    let (value, grad) = value_and_grad(&xs, |x| x.pow(3.0));
    let (scalar_value, scalar_grad) = value_and_grad(&xs, |x| x.pow_scalar(3.0));
    assert_eq!(value, scalar_value);
    assert_eq!(grad, scalar_grad);
    for ((v, g), x) in value.iter().zip(&grad).zip(xs) {
        assert!((v - x * x * x).abs() < 1e-12, "{value:?}");
        assert!((g - 3.0 * x * x).abs() < 1e-12, "{grad:?}");
    }
}

/// Every number type is an exponent (an integer one too, so `x.pow(2)` compiles),
/// each the same as `pow_scalar` of its value as an `f64`; the gradient of a
/// non-integral exponent is `p·x^(p-1)`.
#[test]
fn pow_takes_every_number_type() {
    crate::init();
    let xs = [0.5, 1.5, 3.0];
    let want = |p: f64| value_and_grad(&xs, |x| x.pow_scalar(p));
    assert_eq!(value_and_grad(&xs, |x| x.pow(2)), want(2.0));
    assert_eq!(value_and_grad(&xs, |x| x.pow(2.5f32)), want(2.5));
    assert_eq!(value_and_grad(&xs, |x| x.pow(-1i64)), want(-1.0));
    assert_eq!(value_and_grad(&xs, |x| x.pow(3u32)), want(3.0));
    assert_eq!(value_and_grad(&xs, |x| x.pow(2usize)), want(2.0));
    let (_, grad) = value_and_grad(&xs, |x| x.pow(1.5));
    for (g, x) in grad.iter().zip(xs) {
        assert!((g - 1.5 * x.sqrt()).abs() < 1e-12, "{grad:?}");
    }
}

/// A tensor exponent, borrowed or owned, is still the `pow` op: differentiable in
/// the exponent too, and equal to a number exponent of the same value.
#[test]
fn pow_with_a_tensor_exponent_is_still_the_pow_op() {
    crate::init();
    let a = Tensor::from_slice(&[0.5f64, 1.5, 3.0], [3])
        .unwrap()
        .with_requires_grad(true);
    let b = a.detach().full_like(2.0).unwrap().with_requires_grad(true);
    let y = a.pow(&b).unwrap();
    assert_eq!(values(&y), values(&a.pow(2.0).unwrap()));
    y.sum_all().unwrap().backward().unwrap();
    // d/db a^b = a^b · ln a.
    for ((g, x), y) in values(&b.grad().unwrap())
        .iter()
        .zip([0.5f64, 1.5, 3.0])
        .zip(values(&y))
    {
        assert!((g - y * x.ln()).abs() < 1e-12);
    }
    let owned = a.detach().full_like(2.0).unwrap();
    assert_eq!(values(&a.pow(owned).unwrap()), values(&y));
}

// ----- messages that say what happened -----

#[test]
fn non_scalar_root_recommends_sum_all() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    let err = x.exp()?.backward().unwrap_err();
    assert!(err.to_string().contains(".sum_all()"), "{err}");
    Ok(())
}

// ----- tensor ÷ scalar divides -----

#[test]
fn dividing_by_a_scalar_is_a_true_division() -> Result<()> {
    crate::init();
    let tiny = Tensor::scalar(1e-300f64);
    assert_eq!((&tiny / 1e-310)?.to_scalar::<f64>()?, 1e-300 / 1e-310);
    let values: Vec<f32> = (1..2000).map(|k| k as f32 * 0.37).collect();
    let x = Tensor::from_slice(&values, [values.len()])?;
    let by_scalar = (&x / 10.0)?.to_vec::<f32>()?;
    let by_tensor = (&x / &Tensor::scalar(10.0f32))?.to_vec::<f32>()?;
    assert_eq!(by_scalar, by_tensor);
    let want: Vec<f32> = values.iter().map(|v| v / 10.0).collect();
    assert_eq!(by_scalar, want);
    // Recorded, with the gradient 1/c.
    let w = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
    (&w / 4.0)?.sum_all()?.backward()?;
    assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [0.25, 0.25]);
    assert_eq!(
        w.div_scalar(4.0)?.grad_fn().unwrap().op_name(),
        "div_scalar"
    );
    Ok(())
}

#[test]
fn huge_axes_and_ranges_are_reported_as_given() -> Result<()> {
    crate::init();
    let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0], [2, 2])?;
    let err = autograd::compute::unsqueeze(&x, usize::MAX).unwrap_err();
    let msg = err.to_string();
    assert!(!msg.contains("axis -1"), "{msg}");
    assert!(msg.contains(&isize::MAX.to_string()), "{msg}");
    let err = x.narrow(1, usize::MAX, 2).unwrap_err().to_string();
    assert!(
        err.contains("length 2") && err.contains(&usize::MAX.to_string()),
        "{err}"
    );
    Ok(())
}
