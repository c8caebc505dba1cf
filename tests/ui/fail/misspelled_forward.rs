// `forwrad` is taken for a misspelling of `forward`.
use autograd::prelude::*;

#[differentiable]
mod square {
    use autograd::prelude::*;

    pub fn forwrad(x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }
}

fn main() {}
