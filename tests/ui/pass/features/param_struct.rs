// Non-tensor parameters (an axis, a scalar, a shape) are fields of the op's struct:
// trailing arguments of the generated function, read through `&self`.
use autograd::prelude::*;

/// `scale * sum(x, axis)`.
#[differentiable]
mod scaled_sum {
    use autograd::prelude::*;
    use autograd::{ReduceOp, compute};

    pub struct ScaledSum {
        pub axis: usize,
        pub scale: f64,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        &compute::reduce(x, ReduceOp::Sum, &[self.axis], false)? * self.scale
    }

    /// Reads only the input's shape: nothing is saved.
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let mut kept = x_shape.clone();
        kept.dims_mut()[self.axis] = 1;
        (grad * self.scale)?
            .reshape(kept)?
            .broadcast_to(x_shape.clone())
    }
}

/// `x` viewed with another shape.
#[differentiable]
mod view_as {
    use autograd::prelude::*;

    #[derive(Clone, Debug)]
    pub struct ViewAs {
        pub shape: Shape,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.reshape(self.shape.clone())
    }

    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        grad.reshape(x_shape.clone())
    }
}

pub fn main() -> Result<()> {
    let reg = autograd::init()?;
    let x =
        Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?.with_requires_grad(true);

    let y = scaled_sum(&x, 1, 0.5)?;
    assert_eq!(y.to_vec::<f64>()?, vec![3.0, 7.5]);
    let z = view_as(&y, Shape::from([2, 1]))?;
    assert_eq!(z.dims(), &[2, 1]);
    z.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![0.5; 6]);

    let entry = reg.get("scaled_sum")?;
    assert_eq!(entry.params, &["axis", "scale"]);
    assert!(entry.saved_names().is_empty());
    assert_eq!(reg.get("view_as")?.params, &["shape"]);

    // The op value is a plain struct: the Differentiable impl is on it.
    use autograd::Differentiable;
    assert_eq!(
        <scaled_sum::ScaledSum as Differentiable>::ENTRY.name,
        "scaled_sum"
    );
    Ok(())
}
