// Two differentiable inputs, one gradient.
use autograd::prelude::*;

#[differentiable]
mod times {
    use autograd::prelude::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a * b
    }

    pub fn backward(grad: &Tensor, b: &Tensor) -> Result<Tensor> {
        grad * b
    }
}

fn main() {
    let x = Tensor::scalar(1.0f32);
    let _ = times(&x, &x);
}
