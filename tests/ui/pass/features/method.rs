// `method` makes the op a method of `Tensor` too: the generated function with its
// first input as `self`, in a trait named `Method` inside the op's module.
use autograd::prelude::*;
use scaled_diff::Method as _;
use squash::Method as _;

/// `x / (1 + |x|)`.
#[differentiable(method)]
mod squash {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x / &(x.abs()? + 1.0)?
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad / &(x.abs()? + 1.0)?.square()?
    }
}

/// `scale * (a - b)`, as the method `a.diff_by(&b, scale)`.
#[differentiable(method = diff_by)]
mod scaled_diff {
    use autograd::prelude::*;

    pub struct ScaledDiff {
        pub scale: f64,
    }

    pub fn forward(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        (a - b)? * self.scale
    }

    pub fn backward(&self, grad: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.mul_scalar(self.scale)?, grad.mul_scalar(-self.scale)?))
    }
}

pub fn main() -> Result<()> {
    autograd::init()?;
    let x = Tensor::from_vec(vec![-1.0f64, 0.0, 3.0], [3])?.with_requires_grad(true);
    let y = x.squash()?;
    assert_eq!(y.to_vec::<f64>()?, squash(&x)?.to_vec::<f64>()?);
    assert_eq!(y.to_vec::<f64>()?, vec![-0.5, 0.0, 0.75]);

    let b = Tensor::from_vec(vec![1.0f64, 1.0, 1.0], [3])?;
    let d = x.diff_by(&b, 2.0)?;
    assert_eq!(d.to_vec::<f64>()?, vec![-4.0, -2.0, 4.0]);
    d.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0; 3]);
    Ok(())
}
