// backward reads `self.factor` without taking `&self`.
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

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad * self.factor
    }
}

fn main() {
    let _ = scale(&Tensor::scalar(1.0f32), 2.0);
}
