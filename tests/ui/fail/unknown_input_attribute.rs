// The one attribute on an input is #[no_grad].
use autograd::prelude::*;

#[differentiable]
mod pick {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor, #[nograd] index: &Tensor) -> Result<Tensor> {
        x * index
    }

    pub fn backward(grad: &Tensor, index: &Tensor) -> Result<Tensor> {
        grad * index
    }
}

fn main() {
    let x = Tensor::scalar(1.0f32);
    let _ = pick(&x, &x);
}
