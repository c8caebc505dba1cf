// Every input is #[no_grad]: nothing would receive a gradient.
use autograd::prelude::*;

#[differentiable]
mod lookup {
    use autograd::prelude::*;

    pub fn forward(#[no_grad] index: &Tensor) -> Result<Tensor> {
        Ok(index.clone())
    }

    pub fn backward(grad: &Tensor) -> Result<()> {
        let _ = grad;
        Ok(())
    }
}

fn main() {
    let _ = lookup(&Tensor::scalar(1.0f32));
}
