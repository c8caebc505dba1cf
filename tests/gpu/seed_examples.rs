//! The seed chapters' worked numbers, computed on the GPU.

use autograd::prelude::*;
use autograd::{compute, ops};

fn leaf(v: f32, d: Device) -> Tensor {
    compute::to_device(&Tensor::scalar(v), d)
        .expect("to the GPU")
        .set_requires_grad(true)
}

fn grad_of(t: &Tensor, d: Device) -> f32 {
    let g = t.grad().expect("gradient");
    assert_eq!(g.device(), d, "the gradient stays on the device");
    g.to_scalar::<f32>().unwrap()
}

/// w = x*y + x at x=3, y=4: w = 15, dw/dx = 5, dw/dy = 3.
#[test]
#[ignore = "needs a CUDA GPU"]
fn w_equals_x_times_y_plus_x_on_the_gpu() -> Result<()> {
    let d = crate::gpu();
    let (x, y) = (leaf(3.0, d), leaf(4.0, d));
    let w = (&x * &y + &x)?;
    assert_eq!(w.device(), d);
    assert_eq!(w.to_scalar::<f32>()?, 15.0);
    w.backward()?;
    assert_eq!(grad_of(&x, d), 5.0);
    assert_eq!(grad_of(&y, d), 3.0);
    Ok(())
}

/// Self-check 1: x=5, y=2: z = 10, w = 15, dw/dx = 3, dw/dy = 5.
#[test]
#[ignore = "needs a CUDA GPU"]
fn self_check_x5_y2_on_the_gpu() -> Result<()> {
    let d = crate::gpu();
    let (x, y) = (leaf(5.0, d), leaf(2.0, d));
    let z = (&x * &y)?;
    let w = (&z + &x)?;
    assert_eq!((z.to_scalar::<f32>()?, w.to_scalar::<f32>()?), (10.0, 15.0));
    w.backward()?;
    assert_eq!((grad_of(&x, d), grad_of(&y, d)), (3.0, 5.0));
    Ok(())
}

/// Self-check 2: contributions 2, 3 and 5 accumulate to 10.
#[test]
#[ignore = "needs a CUDA GPU"]
fn contributions_accumulate_to_10_on_the_gpu() -> Result<()> {
    let d = crate::gpu();
    let p = leaf(1.0, d);
    let total = (((&p * 2.0)? + (&p * 3.0)?)? + (&p * 5.0)?)?;
    total.backward()?;
    assert_eq!(grad_of(&p, d), 10.0);
    Ok(())
}

/// A (2x3) + B (1x3): [[11,22,33],[14,25,36]]; grad B = [2,2,2], grad A all ones.
#[test]
#[ignore = "needs a CUDA GPU"]
fn broadcast_add_reduces_grad_b_on_the_gpu() -> Result<()> {
    let d = crate::gpu();
    let on = |t: Tensor| compute::to_device(&t, d).map(|t| t.set_requires_grad(true));
    let a = on(Tensor::from_slice(&[1.0f32, 2., 3., 4., 5., 6.], [2, 3])?)?;
    let b = on(Tensor::from_slice(&[10.0f32, 20., 30.], [1, 3])?)?;
    let c = (&a + &b)?;
    assert_eq!(c.to_vec::<f32>()?, vec![11., 22., 33., 14., 25., 36.]);
    c.backward_with(BackwardOptions::default().seed(c.ones_like()?))?;
    let gb = b.grad().unwrap();
    assert_eq!((gb.device(), gb.shape()), (d, &Shape::from([1, 3])));
    assert_eq!(gb.to_vec::<f32>()?, vec![2., 2., 2.]);
    assert_eq!(a.grad().unwrap().to_vec::<f32>()?, vec![1.0; 6]);
    Ok(())
}

/// Self-check 5: [4,3,5] reduced to [3,1], on the GPU, directly and through the engine.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gradient_4x3x5_reduces_to_3x1_on_the_gpu() -> Result<()> {
    let d = crate::gpu();
    let g = compute::to_device(
        &Tensor::from_vec((0..60).map(|i| i as f64).collect(), [4, 3, 5])?,
        d,
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
    let b = compute::to_device(&Tensor::ones([3, 1], DType::F64), d)?.set_requires_grad(true);
    let x = compute::to_device(&Tensor::zeros([4, 3, 5], DType::F64), d)?;
    ops::sum_all(&(&x + &b)?)?.backward()?;
    assert_eq!(b.grad().unwrap().to_vec::<f64>()?, vec![20.0; 3]);
    Ok(())
}
