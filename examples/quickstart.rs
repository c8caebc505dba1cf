//! Quickstart: define a new op with `#[differentiable]`, check its gradient against
//! finite differences, and train a small network that uses it.
//!
//! Run with `cargo run --release --example quickstart`.

use autograd::prelude::*;
use autograd::{GradcheckOptions, ops};

/// softplus(x) = ln(1 + e^x), a smooth relu. Forward and backward side by side:
/// that is the whole definition. The macro sees that backward reads `x`, so the
/// graph saves `x` for this op and nothing else.
#[differentiable]
mod softplus {
    use autograd::ops;
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        // max(x, 0) + ln(1 + e^-|x|): never overflows. Forward runs with recording
        // off, so the ops it calls leave no nodes; the macro records the op as one
        // node around it.
        let tail = ops::log1p(&ops::exp(&(-ops::abs(x)?)?)?)?;
        ops::relu(x)? + tail
    }

    /// d/dx softplus(x) = sigmoid(x) = 1 / (1 + e^-x), written with differentiable
    /// ops so that the gradient itself can be differentiated.
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let sigmoid = ops::div(&x.ones_like()?, &((ops::exp(&(-x)?)?) + 1.0)?)?;
        grad * &sigmoid
    }
}

fn main() -> Result<()> {
    autograd::init()?;

    // 1. The new op is registered like every standard op.
    let entry = autograd::registry()?.get("softplus")?;
    println!(
        "registered `{}`: {} input, saves {:?}",
        entry.name,
        entry.arity(),
        entry.saved_names()
    );

    // 2. Its backward agrees with central finite differences (in f64).
    let x = Rng::new(0).uniform([8], -3.0, 3.0, DType::F64)?;
    let report = autograd::gradcheck(
        "softplus",
        &|xs| softplus(&xs[0]),
        &[x],
        &[true],
        &GradcheckOptions::default(),
    )?;
    println!(
        "gradcheck: {} elements, max error {:.2e}",
        report.elements, report.max_abs_error
    );

    // 3. Train a 1-32-1 network with the new activation to fit sin(3x) on [-1, 1].
    let n = 128;
    let xs: Vec<f32> = (0..n)
        .map(|i| -1.0 + 2.0 * i as f32 / (n - 1) as f32)
        .collect();
    let ts: Vec<f32> = xs.iter().map(|x| (3.0 * x).sin()).collect();
    let input = Tensor::from_vec(xs, [n, 1])?;
    let target = Tensor::from_vec(ts, [n, 1])?;

    let mut rng = Rng::new(42);
    let hidden = 32;
    let mut w1 = rng
        .normal([1, hidden], 0.0, 1.5, DType::F32)?
        .with_requires_grad(true);
    let mut b1 = rng
        .normal([hidden], 0.0, 0.5, DType::F32)?
        .with_requires_grad(true);
    let mut w2 = rng
        .normal([hidden, 1], 0.0, 0.3, DType::F32)?
        .with_requires_grad(true);
    let mut b2 = Tensor::zeros([1], DType::F32)?.with_requires_grad(true);

    let mut opt = Sgd::new(0.05);
    let mut first_loss = None;
    let mut loss_value = 0.0;
    for step in 0..=3000 {
        let h = softplus(&(input.matmul(&w1)? + &b1)?)?;
        let out = (h.matmul(&w2)? + &b2)?;
        let err = (&out - &target)?;
        let loss = (ops::sum_all(&(&err * &err)?)? * (1.0 / n as f64))?;
        loss.backward()?;
        loss_value = loss.to_scalar::<f32>()?;
        first_loss.get_or_insert(loss_value);
        if step % 500 == 0 {
            println!("step {step:4}  loss {loss_value:.5}");
        }
        // Plain gradient descent: the optimizer updates the parameters in place
        // (nothing is recorded), then the gradients are cleared for the next step.
        let mut params = [&mut w1, &mut b1, &mut w2, &mut b2];
        opt.step(&mut params)?;
        opt.zero_grad(&mut params);
    }
    let first = first_loss.unwrap_or(loss_value);
    println!(
        "loss {first:.4} -> {loss_value:.5} ({:.0}x lower)",
        first / loss_value
    );

    let probe = Tensor::from_slice(&[0.5f32], [1, 1])?;
    let fit = no_grad(|| -> Result<Tensor> {
        softplus(&(probe.matmul(&w1)? + &b1)?)?.matmul(&w2)? + &b2
    })?;
    println!(
        "fit at x = 0.5: {:.4} (sin(1.5) = {:.4})",
        fit.to_scalar::<f32>()?,
        1.5f32.sin()
    );
    Ok(())
}
