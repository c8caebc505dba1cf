// `grad` names backward's output gradient; an input cannot take that name.
use autograd::prelude::*;

#[differentiable]
mod apply_grad {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor, grad: &Tensor) -> Result<Tensor> {
        x - grad
    }

    pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((grad.clone(), (-grad)?))
    }
}

fn main() {}
