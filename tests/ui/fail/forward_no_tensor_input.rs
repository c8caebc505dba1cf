// forward takes no tensor: there would be nothing to differentiate.
use autograd::prelude::*;

#[differentiable]
mod constant {
    use autograd::prelude::*;

    pub fn forward() -> Result<Tensor> {
        Ok(Tensor::scalar(1.0f32))
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }
}

fn main() {
    let _ = constant();
}
