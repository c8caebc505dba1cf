// An op computes on `Tensor` whatever its dtype: forward is not generic.
use autograd::prelude::*;

#[differentiable]
mod square {
    use autograd::prelude::*;

    pub fn forward<T: Into<f64>>(x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }
}

fn main() {}
