// An op parameter is read through `self`, not declared in backward.
use autograd::prelude::*;

#[differentiable]
mod scale {
    use autograd::prelude::*;

    pub struct Scale {
        pub factor: f64,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x * self.factor
    }

    pub fn backward(grad: &Tensor, factor: f64) -> Result<Tensor> {
        grad * factor
    }
}

fn main() {
    let _ = scale(&Tensor::scalar(1.0f32), 2.0);
}
