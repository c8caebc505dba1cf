// forward and backward fail with autograd's `Error`.
use autograd::prelude::*;

#[differentiable]
mod identity {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> std::result::Result<Tensor, String> {
        Ok(x.clone())
    }

    pub fn backward(grad: &Tensor) -> std::result::Result<Tensor, Box<dyn std::error::Error>> {
        Ok(grad.clone())
    }
}

fn main() {
    let _ = identity(&Tensor::scalar(1.0f32));
}
