// An op without `fn forward`.
use autograd::prelude::*;

#[differentiable]
mod square {
    use autograd::prelude::*;

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }
}

fn main() {}
