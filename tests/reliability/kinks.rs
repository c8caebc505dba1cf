//! PyTorch's gradients where a function has a kink or a tie, so that a
//! ported model's gradients are the same numbers as PyTorch's. Each expected value
//! is written next to the PyTorch expression that gives it (from
//! `tools/autograd/derivatives.yaml`, `FunctionsManual.cpp` and the CPU kernels).

use autograd::prelude::*;
use autograd::{BackwardOptions, ops};

/// An f64 leaf that requires grad.
fn leaf(values: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_slice(values, shape)
        .unwrap()
        .with_requires_grad(true)
}

/// The gradient of a leaf after backward.
fn grad_of(x: &Tensor) -> Vec<f64> {
    x.grad().expect("a gradient").to_vec::<f64>().unwrap()
}

/// The same IEEE values, bit for bit (NaN matches NaN): the numbers PyTorch gives,
/// not numbers close to them.
#[track_caller]
fn assert_same(got: &[f64], want: &[f64], what: &str) {
    let same = got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
    assert!(same, "{what}: got {got:?}, PyTorch gives {want:?}");
}

/// The second derivative of `Σ f(x)`: the gradient of the sum of the first
/// gradient, recorded with `create_graph`.
fn second_derivative(x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> Vec<f64> {
    let opts = BackwardOptions::default().create_graph(true);
    let y = f(x).unwrap().sum_all().unwrap();
    let g1 = autograd::grad(&y, &[x], opts.clone()).unwrap()[0]
        .clone()
        .expect("a first derivative");
    let g2 = autograd::grad(&g1.sum_all().unwrap(), &[x], opts).unwrap()[0]
        .clone()
        .expect("a second derivative");
    g2.to_vec::<f64>().unwrap()
}

#[test]
fn clamp_passes_the_gradient_at_its_bounds_as_pytorch() -> Result<()> {
    crate::init();
    let x = leaf(&[-2.0, -1.0, -0.5, 0.0, 1.0, 2.0, f64::NAN], &[7]);
    ops::clamp(&x, -1.0, 1.0)?.sum_all()?.backward()?;
    // x.clamp(-1, 1).sum().backward(): clamp_backward is
    // where((x >= min) & (x <= max), grad, 0), so 1 on both bounds, 0 for NaN.
    assert_same(
        &grad_of(&x),
        &[0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
        "clamp(-1, 1)",
    );

    // Equal bounds: x.clamp(0.5, 0.5) passes the gradient where x == 0.5.
    let x = leaf(&[0.0, 0.5, 1.0], &[3]);
    ops::clamp(&x, 0.5, 0.5)?.sum_all()?.backward()?;
    assert_same(&grad_of(&x), &[0.0, 1.0, 0.0], "clamp(0.5, 0.5)");

    // The mask is a constant: the second derivative is 0 everywhere, bounds included.
    let x = leaf(&[-2.0, -1.0, 0.0, 1.0, 2.0], &[5]);
    let d2 = second_derivative(&x, |x| ops::clamp(x, -1.0, 1.0));
    assert_same(&d2, &[0.0; 5], "clamp's second derivative");
    Ok(())
}

#[test]
fn hardtanh_stops_the_gradient_at_its_bounds_as_pytorch() -> Result<()> {
    crate::init();
    let x = leaf(&[-2.0, -1.0, -0.5, 0.0, 1.0, 2.0], &[6]);
    ops::hardtanh(&x)?.sum_all()?.backward()?;
    // F.hardtanh(x).sum().backward(): hardtanh_backward passes the gradient only
    // where min_val < x < max_val, so 0 on both bounds.
    assert_same(&grad_of(&x), &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0], "hardtanh");
    let d2 = second_derivative(&x, ops::hardtanh);
    assert_same(&d2, &[0.0; 6], "hardtanh's second derivative");
    Ok(())
}

#[test]
fn max_pool2d_gives_a_tie_to_the_first_maximum() -> Result<()> {
    crate::init();
    // F.max_pool2d(torch.ones(1, 1, 2, 3), 2, stride=1).sum().backward(): each of
    // the two windows sends its gradient to its first maximal element in row-major
    // order, (0, 0) and (0, 1).
    let x = Tensor::ones([1, 1, 2, 3], DType::F64)?.with_requires_grad(true);
    ops::max_pool2d(&x, ops::MaxPool2dOptions::new((2, 2)).stride((1, 1)))?
        .sum_all()?
        .backward()?;
    assert_same(
        &grad_of(&x),
        &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
        "ties of ones",
    );

    // Ties among other values: windows {3, 1, 3, 2} and {1, 3, 2, 0}.
    let x = leaf(&[3.0, 1.0, 3.0, 3.0, 2.0, 0.0], &[1, 1, 2, 3]);
    ops::max_pool2d(&x, ops::MaxPool2dOptions::new((2, 2)).stride((1, 1)))?
        .sum_all()?
        .backward()?;
    assert_same(
        &grad_of(&x),
        &[1.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        "ties of threes",
    );

    // Padding ties with an input of -inf, yet never takes the gradient:
    // F.max_pool2d(torch.full((1, 1, 2, 2), -inf), 3, stride=1, padding=1) starts
    // each window at its first pixel of the input, (0, 0) for all four.
    let x = leaf(&[f64::NEG_INFINITY; 4], &[1, 1, 2, 2]);
    ops::max_pool2d(
        &x,
        ops::MaxPool2dOptions::new((3, 3))
            .stride((1, 1))
            .padding((1, 1)),
    )?
    .sum_all()?
    .backward()?;
    assert_same(&grad_of(&x), &[4.0, 0.0, 0.0, 0.0], "-inf over padding");

    // NaN: the kernel's test is `val > maxval || isnan(val)`, so every NaN replaces
    // the max found so far and the last NaN of the window takes the gradient.
    // F.max_pool2d(torch.tensor([[[[1., nan], [2., nan]]]]), 2).sum().backward().
    let x = leaf(&[1.0, f64::NAN, 2.0, f64::NAN], &[1, 1, 2, 2]);
    let y = ops::max_pool2d(&x, ops::MaxPool2dOptions::new((2, 2)))?;
    assert!(y.to_vec::<f64>()?[0].is_nan());
    y.sum_all()?.backward()?;
    assert_same(&grad_of(&x), &[0.0, 0.0, 0.0, 1.0], "NaN in a window");

    // The mask is a constant: the gradient is linear in the output's gradient, and
    // its own gradient with respect to x is 0.
    let x = Tensor::ones([1, 1, 2, 3], DType::F64)?.with_requires_grad(true);
    let d2 = second_derivative(&x, |x| {
        ops::max_pool2d(
            &x.square()?,
            ops::MaxPool2dOptions::new((2, 2)).stride((1, 1)),
        )
    });
    // d/dx Σ_windows 2·x_first = 2 at each window's first maximum.
    assert_same(&d2, &[2.0, 2.0, 0.0, 0.0, 0.0, 0.0], "second derivative");
    Ok(())
}

#[test]
fn max_and_min_along_an_axis_split_ties_as_amax_and_amin() -> Result<()> {
    crate::init();
    // torch.amax(x, dim=1) scales the gradient by the count of ties:
    // (grad / count) * mask. With a gradient of 2.5 and three ties, 2.5 / 3 =
    // 0.8333333333333334 (not 2.5 · (1/3) = 0.8333333333333333).
    let x = leaf(&[5.0, 5.0, 5.0, 1.0, 3.0, 3.0], &[2, 3]);
    ops::max(&x, 1, false)?
        .mul_scalar(2.5)?
        .sum_all()?
        .backward()?;
    assert_same(
        &grad_of(&x),
        &[2.5 / 3.0, 2.5 / 3.0, 2.5 / 3.0, 0.0, 1.25, 1.25],
        "max(x, 1) as torch.amax",
    );
    let x = leaf(&[-5.0, -5.0, -5.0, 1.0, -3.0, -3.0], &[2, 3]);
    ops::min(&x, -1, true)?
        .mul_scalar(2.5)?
        .sum_all()?
        .backward()?;
    assert_same(
        &grad_of(&x),
        &[2.5 / 3.0, 2.5 / 3.0, 2.5 / 3.0, 0.0, 1.25, 1.25],
        "min(x, -1) as torch.amin",
    );

    // A slice holding NaN: amax's mask is result == x, empty, so (grad / 0) * 0 is
    // NaN over the whole slice; the other slice is unaffected.
    let x = leaf(&[1.0, f64::NAN, 3.0, 1.0, 2.0, 0.0], &[2, 3]);
    ops::max(&x, 1, false)?.sum_all()?.backward()?;
    assert_same(
        &grad_of(&x),
        &[f64::NAN, f64::NAN, f64::NAN, 0.0, 1.0, 0.0],
        "max(x, 1) over NaN as torch.amax",
    );
    Ok(())
}

#[test]
fn max_all_and_min_all_split_ties_as_full_max_and_min() -> Result<()> {
    crate::init();
    // torch.max(x) (no dim): evenly_distribute_backward, grad / count to each tie.
    let x = leaf(&[5.0, 1.0, 5.0, 5.0], &[2, 2]);
    ops::max_all(&x)?.mul_scalar(2.5)?.backward()?;
    assert_same(
        &grad_of(&x),
        &[2.5 / 3.0, 0.0, 2.5 / 3.0, 2.5 / 3.0],
        "max_all as torch.max(x)",
    );
    let x = leaf(&[-5.0, 1.0, -5.0, -5.0], &[4]);
    ops::min_all(&x)?.mul_scalar(2.5)?.backward()?;
    assert_same(
        &grad_of(&x),
        &[2.5 / 3.0, 0.0, 2.5 / 3.0, 2.5 / 3.0],
        "min_all as torch.min(x)",
    );

    // NaN: the result is NaN and its mask is the NaN elements, which share the
    // gradient: torch.tensor([1., nan, 3., nan]).max().backward() gives
    // [0, 0.5, 0, 0.5].
    let x = leaf(&[1.0, f64::NAN, 3.0, f64::NAN], &[4]);
    ops::max_all(&x)?.backward()?;
    assert_same(&grad_of(&x), &[0.0, 0.5, 0.0, 0.5], "max_all over NaN");
    let x = leaf(&[f64::NAN, 1.0, -3.0], &[3]);
    ops::min_all(&x)?.backward()?;
    assert_same(&grad_of(&x), &[1.0, 0.0, 0.0], "min_all over NaN");
    Ok(())
}

#[test]
fn max_with_indices_is_gather_at_argmax() -> Result<()> {
    crate::init();
    // torch.max(x, dim=1).values sends the whole gradient to the returned index,
    // the first maximum: [[0, 1, 0], [1, 0, 0]]. The documented equivalent here is
    // gather(x, argmax(x, 1, keepdim), 1).
    let x = leaf(&[1.0, 3.0, 3.0, 2.0, 2.0, -1.0], &[2, 3]);
    let at = ops::argmax(&x, 1, true)?;
    ops::gather(&x, &at, 1)?.sum_all()?.backward()?;
    assert_same(
        &grad_of(&x),
        &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0],
        "gather at argmax",
    );
    Ok(())
}

#[test]
fn pow_at_zero_base_has_pytorchs_gradients() -> Result<()> {
    crate::init();
    let a = leaf(&[0.0, 0.0, 0.0, 0.0, 2.0, -2.0], &[6]);
    let b = leaf(&[0.0, 2.0, 0.5, -1.0, 0.0, 2.0], &[6]);
    ops::pow(&a, &b)?.sum_all()?.backward()?;
    // torch.pow(a, b).sum().backward():
    // a.grad = pow_backward_self = where(b == 0, 0, grad * (b * a.pow(b - 1))):
    // 0 where b == 0 (not 0 · 0⁻¹ = NaN), 0.5 · 0^-0.5 = inf, -1 · 0⁻² = -inf.
    assert_same(
        &grad_of(&a),
        &[0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 0.0, -4.0],
        "d/da",
    );
    // b.grad = pow_backward_exponent = grad * where(a == 0 & b >= 0, 0, result *
    // log(a)): 0 at a zero base with b >= 0 (not 1 · log 0 = -inf or 0 · log 0 =
    // NaN), inf · -inf = -inf for b < 0, ln 2 · 2⁰, and NaN for a negative base.
    assert_same(
        &grad_of(&b),
        &[0.0, 0.0, 0.0, f64::NEG_INFINITY, 2.0f64.ln(), f64::NAN],
        "d/db",
    );

    // Second derivatives at a zero base with a zero exponent stay finite, as
    // PyTorch's (the masks are constants).
    let a = leaf(&[0.0, 1.5], &[2]);
    let b = Tensor::from_slice(&[0.0, 0.0], [2])?;
    let d2 = second_derivative(&a, |a| ops::pow(a, &b));
    assert_same(&d2, &[0.0, 0.0], "d²/da² with b = 0");

    // pow_scalar(x, 0): pow_backward returns zeros for a zero exponent.
    let x = leaf(&[0.0, -1.0, 2.0], &[3]);
    ops::pow_scalar(&x, 0.0)?.sum_all()?.backward()?;
    assert_same(&grad_of(&x), &[0.0, 0.0, 0.0], "pow_scalar(x, 0)");
    Ok(())
}
