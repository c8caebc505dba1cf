// forward returns `Result<Tensor>`.
use autograd::prelude::*;

#[differentiable]
mod square {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Tensor {
        (x * x).unwrap()
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }
}

#[differentiable]
mod split {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok((x.clone(), x.clone()))
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }
}

fn main() {}
