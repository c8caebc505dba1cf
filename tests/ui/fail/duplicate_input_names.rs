// Two inputs called `x`.
use autograd::prelude::*;

#[differentiable]
mod twice {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor, x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.clone(), grad.clone()))
    }
}

fn main() {}
