//! See `mod.rs`. Item 11: `x.pow(3.0)` compiles and is `x.pow_scalar(3.0)`.

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

// ----- 11. `pow` with a number exponent is `pow_scalar` -----

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
