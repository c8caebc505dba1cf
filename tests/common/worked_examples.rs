//! The worked examples of reverse-mode accumulation (a function of two scalars,
//! broadcast addition, reductions, a residual connection, pruning of dead branches),
//! their numbers computed by hand, written once and run on every device: the integration tests call these on the CPU, the GPU tests on
//! `Device::Cuda(0)`. Every gradient must stay on the device it was computed on.

use autograd::prelude::*;
use autograd::{ComputationGraph, compute, ops};

/// A tensor moved to `d`, requiring grad when `grad` is set.
fn on(t: Tensor, d: Device, grad: bool) -> Result<Tensor> {
    Ok(compute::to_device(&t, d)?.with_requires_grad(grad))
}

fn scalar(v: f32, d: Device) -> Result<Tensor> {
    on(Tensor::scalar(v), d, true)
}

/// The gradient of `t` as a host vector, after checking it stayed on `d`.
fn grad_of<T: autograd::Element>(t: &Tensor, d: Device) -> Vec<T> {
    let g = t.grad().expect("gradient");
    assert_eq!(g.device(), d, "the gradient stays on the device");
    g.to_vec::<T>().unwrap()
}

/// w = x*y + x at x=3, y=4: w = 15, dw/dx = y + 1 = 5, dw/dy = x = 3 (the worked table of reverse-mode accumulation).
pub fn w_equals_x_times_y_plus_x(d: Device) -> Result<()> {
    let (x, y) = (scalar(3.0, d)?, scalar(4.0, d)?);
    let w = (&x * &y + &x)?;
    assert_eq!(w.device(), d);
    assert_eq!(w.to_scalar::<f32>()?, 15.0);
    w.backward()?;
    assert_eq!(grad_of::<f32>(&x, d), [5.0]);
    assert_eq!(grad_of::<f32>(&y, d), [3.0]);
    Ok(())
}

/// Self-check 1: at x=5, y=2, z = 10, w = 15, dw/dx = 3, dw/dy = 5; two nodes, mul then add.
pub fn self_check_x5_y2(d: Device) -> Result<()> {
    let (x, y) = (scalar(5.0, d)?, scalar(2.0, d)?);
    let z = (&x * &y)?;
    let w = (&z + &x)?;
    assert_eq!(z.to_scalar::<f32>()?, 10.0);
    assert_eq!(w.to_scalar::<f32>()?, 15.0);
    let graph = ComputationGraph::of(&[&w]);
    let names: Vec<_> = graph.nodes().iter().map(|n| n.op_name()).collect();
    assert_eq!(names, ["mul", "add"]);
    w.backward()?;
    assert_eq!(grad_of::<f32>(&x, d), [3.0]);
    assert_eq!(grad_of::<f32>(&y, d), [5.0]);
    Ok(())
}

/// Self-check 2: a tensor receiving contributions 2, 3 and 5 ends at 10.
pub fn contributions_2_3_5_accumulate_to_10(d: Device) -> Result<()> {
    let p = scalar(1.0, d)?;
    let total = (((&p * 2.0)? + (&p * 3.0)?)? + (&p * 5.0)?)?;
    total.backward()?;
    assert_eq!(grad_of::<f32>(&p, d), [10.0]);
    Ok(())
}

/// Ch. 12.4 / 17.2: A (2x3) + B (1x3) = [[11,22,33],[14,25,36]]; with an all-ones
/// upstream gradient, grad A is all ones and grad B is [2,2,2] (rows summed back).
pub fn broadcast_add_reduces_grad_b_to_its_shape(d: Device) -> Result<()> {
    let a = on(
        Tensor::from_slice(&[1.0f32, 2., 3., 4., 5., 6.], [2, 3])?,
        d,
        true,
    )?;
    let b = on(Tensor::from_slice(&[10.0f32, 20., 30.], [1, 3])?, d, true)?;
    let c = (&a + &b)?;
    assert_eq!(c.to_vec::<f32>()?, vec![11., 22., 33., 14., 25., 36.]);
    c.backward_with(BackwardOptions::default().seed(c.ones_like()?))?;
    assert_eq!(b.grad().unwrap().shape(), &Shape::from([1, 3]));
    assert_eq!(grad_of::<f32>(&b, d), [2., 2., 2.]);
    assert_eq!(grad_of::<f32>(&a, d), [1.0; 6]);
    Ok(())
}

/// Self-check 5: a gradient of shape [4,3,5] reduced to [3,1] sums axis 0 (leading),
/// then axis 2 (size 1 in the target): each of the 3 entries sums 4*5 values. Directly,
/// and through the engine (b [3,1] broadcast against x [4,3,5]).
pub fn gradient_4x3x5_reduces_to_3x1(d: Device) -> Result<()> {
    let g = on(
        Tensor::from_vec((0..60).map(|i| i as f64).collect(), [4, 3, 5])?,
        d,
        false,
    )?;
    let r = compute::sum_to_shape(&g, &Shape::from([3, 1]))?;
    assert_eq!((r.device(), r.shape()), (d, &Shape::from([3, 1])));
    let expected: Vec<f64> = (0..3)
        .map(|j| {
            (0..4)
                .flat_map(|i| (0..5).map(move |k| (i * 15 + j * 5 + k) as f64))
                .sum()
        })
        .collect();
    assert_eq!(r.to_vec::<f64>()?, expected);
    let b = on(Tensor::ones([3, 1], DType::F64)?, d, true)?;
    let x = on(Tensor::zeros([4, 3, 5], DType::F64)?, d, false)?;
    ops::sum_all(&(&x + &b)?)?.backward()?;
    assert_eq!(grad_of::<f64>(&b, d), [20.0; 3]);
    Ok(())
}
