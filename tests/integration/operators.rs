//! The operator matrix (`autograd_core::operators`): every generated pair, checked
//! against the op it calls; errors through every kind of operand; and micrograd's
//! `test_sanity_check` and `test_more_ops` written line for line, against the numbers
//! PyTorch computes for them.

use autograd::prelude::*;

fn t(v: &[f64]) -> Tensor {
    Tensor::from_slice(v, [v.len()]).unwrap()
}

fn vals(r: Result<Tensor>) -> Vec<f64> {
    r.expect("operator").to_vec::<f64>().unwrap()
}

fn ok(v: &[f64]) -> Result<Tensor> {
    Ok(t(v))
}

fn shape_error() -> Result<Tensor> {
    &t(&[1.0, 2.0]) + &t(&[1.0, 2.0, 3.0])
}

/// One operator over every pair of tensor operand kinds, each compared with the
/// values of the plain function, and each `Result` operand's error passed through.
macro_rules! tensor_pairs {
    ($name:ident, $op:tt, $f:expr) => {
        #[test]
        fn $name() {
            crate::init();
            let (a, b) = ([1.5, -2.0, 4.0], [0.5, 3.0, -8.0]);
            let want: Vec<f64> = a.iter().zip(&b).map(|(&x, &y)| $f(x, y)).collect();
            let (x, y) = (t(&a), t(&b));
            assert_eq!(vals(&x $op &y), want, "&T op &T");
            assert_eq!(vals(&x $op y.clone()), want, "&T op T");
            assert_eq!(vals(&x $op ok(&b)), want, "&T op Result");
            assert_eq!(vals(x.clone() $op &y), want, "T op &T");
            assert_eq!(vals(x.clone() $op y.clone()), want, "T op T");
            assert_eq!(vals(x.clone() $op ok(&b)), want, "T op Result");
            assert_eq!(vals(ok(&a) $op &y), want, "Result op &T");
            assert_eq!(vals(ok(&a) $op y.clone()), want, "Result op T");
            for r in [
                &x $op shape_error(),
                x.clone() $op shape_error(),
                shape_error() $op &y,
                shape_error() $op y.clone(),
            ] {
                assert!(matches!(r, Err(Error::Broadcast { .. })), "{r:?}");
            }
        }
    };
}

tensor_pairs!(add_over_tensor_pairs, +, |x: f64, y: f64| x + y);
tensor_pairs!(sub_over_tensor_pairs, -, |x: f64, y: f64| x - y);
tensor_pairs!(mul_over_tensor_pairs, *, |x: f64, y: f64| x * y);
tensor_pairs!(div_over_tensor_pairs, /, |x: f64, y: f64| x / y);

/// One operator with a scalar of each type on the right (and `f64`, `i32` on the
/// left), on `&Tensor` and `Tensor`, in f64 and f32.
macro_rules! scalar_pairs {
    ($name:ident, $op:tt, $f:expr) => {
        #[test]
        fn $name() -> Result<()> {
            crate::init();
            let a = [1.5, -2.0, 4.0];
            let right = |s: f64| -> Vec<f64> { a.iter().map(|&x| $f(x, s)).collect() };
            let left = |s: f64| -> Vec<f64> { a.iter().map(|&x| $f(s, x)).collect() };
            let x = t(&a);
            assert_eq!(vals(&x $op 2.0), right(2.0));
            assert_eq!(vals(&x $op 2.0f32), right(2.0));
            assert_eq!(vals(&x $op 2), right(2.0));
            assert_eq!(vals(&x $op 2i64), right(2.0));
            assert_eq!(vals(&x $op 2u32), right(2.0));
            assert_eq!(vals(&x $op 2u64), right(2.0));
            assert_eq!(vals(&x $op 2usize), right(2.0));
            assert_eq!(vals(x.clone() $op 2.0), right(2.0));
            assert_eq!(vals(x.clone() $op 2), right(2.0));
            assert_eq!(vals(2.0 $op &x), left(2.0));
            assert_eq!(vals(2 $op &x), left(2.0));
            assert_eq!(vals(2.0 $op x.clone()), left(2.0));
            assert_eq!(vals(2 $op x.clone()), left(2.0));
            // The `?` right after a scalar operator needs no annotation.
            let chained = ((&x $op 2.0)? $op 2.0)?;
            assert_eq!(chained.to_vec::<f64>()?, a.iter().map(|&v| $f($f(v, 2.0), 2.0)).collect::<Vec<_>>());
            // An f32 tensor with an f32 scalar stays f32.
            let x32 = x.to_dtype(DType::F32)?;
            let y32 = (&x32 $op 2.0f32)?;
            assert_eq!(y32.dtype(), DType::F32);
            let want32: Vec<f32> = a.iter().map(|&v| $f(v as f32, 2.0f32)).collect();
            assert_eq!(y32.to_vec::<f32>()?, want32);
            let l32 = (2.0 $op &x32)?;
            assert_eq!(l32.dtype(), DType::F32);
            let want32: Vec<f32> = a.iter().map(|&v| $f(2.0f32, v as f32)).collect();
            assert_eq!(l32.to_vec::<f32>()?, want32);
            Ok(())
        }
    };
}

scalar_pairs!(add_with_scalars, +, |x, y| x + y);
scalar_pairs!(sub_with_scalars, -, |x, y| x - y);
scalar_pairs!(mul_with_scalars, *, |x, y| x * y);
scalar_pairs!(div_with_scalars, /, |x, y| x / y);

/// `Result<Tensor> op= Tensor` and `op= &Tensor` for each operator; after an error
/// the target keeps the first error.
macro_rules! compound {
    ($name:ident, $op:tt, $f:expr) => {
        #[test]
        fn $name() {
            crate::init();
            let (a, b) = ([1.5, -2.0, 4.0], [0.5, 3.0, -8.0]);
            let once: Vec<f64> = a.iter().zip(&b).map(|(&x, &y)| $f(x, y)).collect();
            let twice: Vec<f64> = once.iter().zip(&b).map(|(&x, &y)| $f(x, y)).collect();
            let y = t(&b);
            let mut c = ok(&a);
            c $op &y;
            c $op y.clone();
            assert_eq!(vals(c), twice);
            let mut bad = ok(&a);
            bad $op &t(&[1.0, 2.0]);
            bad $op &y;
            assert!(matches!(bad, Err(Error::Broadcast { .. })), "{bad:?}");
        }
    };
}

compound!(add_assign, +=, |x: f64, y: f64| x + y);
compound!(sub_assign, -=, |x: f64, y: f64| x - y);
compound!(mul_assign, *=, |x: f64, y: f64| x * y);
compound!(div_assign, /=, |x: f64, y: f64| x / y);

#[test]
fn negation_of_tensors_and_references() -> Result<()> {
    crate::init();
    let x = t(&[1.5, -2.0]);
    assert_eq!((-&x)?.to_vec::<f64>()?, [-1.5, 2.0]);
    assert_eq!((-x)?.to_vec::<f64>()?, [-1.5, 2.0]);
    Ok(())
}

#[test]
fn scalar_on_the_left_records_one_op_and_differentiates() -> Result<()> {
    crate::init();
    let x = t(&[2.0, -4.0]).with_requires_grad(true);
    let y = (10.0 / &x)?;
    assert_eq!(y.to_vec::<f64>()?, [5.0, -2.5]);
    let g = (1 - &y)?;
    g.sum_all()?.backward()?;
    // d/dx (1 - 10/x) = 10/x²
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [2.5, 0.625]);
    Ok(())
}

/// micrograd's `test_sanity_check`, line for line. Rust needs a `?` wherever a
/// `Result` meets a scalar or another `Result` (see the operator matrix); the
/// reference numbers are PyTorch's (f64): `y = -20`, `dy/dx = 46`.
#[test]
fn micrograd_sanity_check() -> Result<()> {
    crate::init();
    let x = Tensor::scalar(-4.0f64).with_requires_grad(true);
    let z = ((2.0 * &x)? + 2.0 + &x)?;
    let q = (z.relu()? + &z * &x)?;
    let h = (&z * &z)?.relu()?;
    let y = (&h + &q + (&q * &x)?)?;
    y.backward()?;
    let (xmg, ymg) = (x, y);

    // PyTorch: torch.Tensor([-4.0]).double(), the same program.
    assert_eq!(ymg.to_scalar::<f64>()?, -20.0);
    assert_eq!(xmg.grad().unwrap().to_scalar::<f64>()?, 46.0);
    Ok(())
}

/// micrograd's `test_more_ops`, line for line, with PyTorch's numbers (f64):
/// `g = 24.70408163265306`, `dg/da = 138.83381924198252`, `dg/db = 645.5772594752186`.
#[test]
fn micrograd_more_ops() -> Result<()> {
    crate::init();
    let a = Tensor::scalar(-4.0f64).with_requires_grad(true);
    let b = Tensor::scalar(2.0f64).with_requires_grad(true);
    let c = (&a + &b)?;
    let d = (&a * &b + b.pow_scalar(3.0)?)?;
    let c = (&c + (&c + 1))?; // c += c + 1
    let c = (&c + (1 + &c + (-&a)?))?; // c += 1 + c + (-a)
    let d = (&d + (&d * 2 + (&b + &a)?.relu()?))?; // d += d * 2 + (b + a).relu()
    let d = (&d + (3 * &d + (&b - &a)?.relu()?))?; // d += 3 * d + (b - a).relu()
    let e = (&c - &d)?;
    let f = e.pow_scalar(2.0)?;
    let mut g = &f / 2.0;
    g += (10.0 / &f)?;
    let g = g?;
    g.backward()?;
    let (amg, bmg, gmg) = (a, b, g);

    let tol = 1e-6;
    let close = |got: f64, want: f64| (got - want).abs() < tol;
    let (ga, gb) = (
        amg.grad().unwrap().to_scalar::<f64>()?,
        bmg.grad().unwrap().to_scalar::<f64>()?,
    );
    assert!(close(gmg.to_scalar::<f64>()?, 24.70408163265306));
    assert!(close(ga, 138.83381924198252), "{ga}");
    assert!(close(gb, 645.5772594752186), "{gb}");
    Ok(())
}
