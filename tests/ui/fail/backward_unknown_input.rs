// backward declares `weigth`, which forward does not have.
use autograd::prelude::*;

#[differentiable]
mod scale_by {
    use autograd::prelude::*;

    pub fn forward(input: &Tensor, weight: &Tensor) -> Result<Tensor> {
        input * weight
    }

    pub fn backward(grad: &Tensor, input: &Tensor, weigth: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok(((grad * weigth)?, (grad * input)?))
    }
}

fn main() {
    let x = Tensor::scalar(1.0f32);
    let _ = scale_by(&x, &x);
}
