// `name = "..."` registers the op under another name; the function keeps the
// module's name. (`method.rs` registers an op named `squash`: this one is
// `squish`, so that the two share a program.)
use autograd::prelude::*;

#[differentiable(name = "mylib.squish")]
mod squish {
    use autograd::prelude::*;
    use autograd::ops;

    /// x / (1 + |x|).
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x / &(ops::abs(x)? + 1.0)?
    }

    /// 1 / (1 + |x|)².
    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let d = (ops::abs(x)? + 1.0)?;
        grad / &(&d * &d)?
    }
}

pub fn main() -> Result<()> {
    let reg = autograd::init()?;
    assert!(reg.contains("mylib.squish"));
    assert!(!reg.contains("squish"));
    let entry = reg.get("mylib.squish")?;
    assert!(
        entry.module_path.ends_with("::squish"),
        "{}",
        entry.module_path
    );

    let x = Tensor::scalar(1.0f64).with_requires_grad(true);
    let y = squish(&x)?;
    assert_eq!(y.grad_fn().unwrap().op_name(), "mylib.squish");
    assert_eq!(y.to_scalar::<f64>()?, 0.5);
    y.backward()?;
    assert_eq!(x.grad().unwrap().to_scalar::<f64>()?, 0.25);
    Ok(())
}
