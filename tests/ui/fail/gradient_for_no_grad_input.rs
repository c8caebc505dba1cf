// A gradient returned for an input marked #[no_grad].
use autograd::prelude::*;

#[differentiable]
mod masked {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor, #[no_grad] mask: &Tensor) -> Result<Tensor> {
        x * mask
    }

    pub fn backward(grad: &Tensor, mask: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok(((grad * mask)?, grad.zeros_like()?))
    }
}

fn main() {
    let x = Tensor::scalar(1.0f32);
    let _ = masked(&x, &x);
}
