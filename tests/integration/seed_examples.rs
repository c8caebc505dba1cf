//! The numbers worked by hand in the seed chapters (15 and 17).

use autograd::prelude::*;
use autograd::{compute, ops};

fn scalar(v: f32) -> Tensor {
    Tensor::scalar(v).set_requires_grad(true)
}

fn grad_of(t: &Tensor) -> f32 {
    t.grad().expect("gradient").to_scalar::<f32>().unwrap()
}

/// w = x*y + x at x=3, y=4: w = 15, dw/dx = y + 1 = 5, dw/dy = x = 3 (Ch. 17 table).
#[test]
fn w_equals_x_times_y_plus_x() -> Result<()> {
    crate::init();
    let (x, y) = (scalar(3.0), scalar(4.0));
    let w = (&x * &y + &x)?;
    assert_eq!(w.to_scalar::<f32>()?, 15.0);
    w.backward()?;
    assert_eq!(grad_of(&x), 5.0);
    assert_eq!(grad_of(&y), 3.0);
    Ok(())
}

/// Self-check 1: at x=5, y=2, z = 10, w = 15, dw/dx = 3, dw/dy = 5.
#[test]
fn self_check_x5_y2() -> Result<()> {
    crate::init();
    let (x, y) = (scalar(5.0), scalar(2.0));
    let z = (&x * &y)?;
    let w = (&z + &x)?;
    assert_eq!(z.to_scalar::<f32>()?, 10.0);
    assert_eq!(w.to_scalar::<f32>()?, 15.0);
    // The graph records two nodes: mul then add.
    let graph = autograd::ComputationGraph::of(&[&w]);
    let names: Vec<_> = graph.nodes().iter().map(|n| n.op_name()).collect();
    assert_eq!(names, ["mul", "add"]);
    w.backward()?;
    assert_eq!(grad_of(&x), 3.0);
    assert_eq!(grad_of(&y), 5.0);
    Ok(())
}

/// Self-check 2: a tensor receiving contributions 2, 3 and 5 ends at 10.
#[test]
fn contributions_2_3_5_accumulate_to_10() -> Result<()> {
    crate::init();
    let p = scalar(1.0);
    let total = ((&p * 2.0)? + (&p * 3.0)?)? + (&p * 5.0)?;
    total?.backward()?;
    assert_eq!(grad_of(&p), 10.0);
    Ok(())
}

/// Ch. 12.4 / 17.2: A (2x3) + B (1x3) = [[11,22,33],[14,25,36]]; with an all-ones
/// upstream gradient, grad A is all ones and grad B is [2,2,2] (rows summed back).
#[test]
fn broadcast_add_reduces_grad_b_to_its_shape() -> Result<()> {
    crate::init();
    let a = Tensor::from_slice(&[1.0f32, 2., 3., 4., 5., 6.], [2, 3])?.set_requires_grad(true);
    let b = Tensor::from_slice(&[10.0f32, 20., 30.], [1, 3])?.set_requires_grad(true);
    let c = (&a + &b)?;
    assert_eq!(c.to_vec::<f32>()?, vec![11., 22., 33., 14., 25., 36.]);
    c.backward_with(BackwardOptions::default().seed(Tensor::ones([2, 3], DType::F32)))?;
    let gb = b.grad().unwrap();
    assert_eq!(gb.shape(), &Shape::from([1, 3]));
    assert_eq!(gb.to_vec::<f32>()?, vec![2., 2., 2.]);
    assert_eq!(a.grad().unwrap().to_vec::<f32>()?, vec![1.0; 6]);
    Ok(())
}

/// Self-check 5: a gradient of shape [4,3,5] reduced to [3,1] sums axis 0 (leading),
/// then axis 2 (size 1 in the target): each of the 3 entries sums 4*5 values.
#[test]
fn gradient_4x3x5_reduces_to_3x1() -> Result<()> {
    crate::init();
    let g = Tensor::from_vec((0..60).map(|i| i as f64).collect(), [4, 3, 5])?;
    let r = compute::sum_to_shape(&g, &Shape::from([3, 1]))?;
    assert_eq!(r.shape(), &Shape::from([3, 1]));
    let expected: Vec<f64> = (0..3)
        .map(|j| {
            (0..4)
                .flat_map(|i| (0..5).map(move |k| (i * 15 + j * 5 + k) as f64))
                .sum()
        })
        .collect();
    assert_eq!(r.to_vec::<f64>()?, expected);
    // Through the engine: b [3,1] broadcast against x [4,3,5].
    let b = Tensor::ones([3, 1], DType::F64).set_requires_grad(true);
    let x = Tensor::zeros([4, 3, 5], DType::F64);
    ops::sum_all(&(&x + &b)?)?.backward()?;
    assert_eq!(b.grad().unwrap().to_vec::<f64>()?, vec![20.0; 3]);
    Ok(())
}

/// Finite differences confirm the hand-worked gradients (Worked Example 17.2.3).
#[test]
fn finite_differences_confirm_5_and_3() -> Result<()> {
    crate::init();
    let f = |xs: &[Tensor]| &xs[0] * &xs[1] + &xs[0];
    let report = autograd::gradcheck(
        "x*y + x",
        &f,
        &[Tensor::scalar(3.0f64), Tensor::scalar(4.0f64)],
        &[true, true],
        &Default::default(),
    )?;
    assert_eq!(report.elements, 2);
    Ok(())
}
