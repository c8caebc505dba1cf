// The op's parameters have names.
use autograd::prelude::*;

#[differentiable]
mod scale {
    use autograd::prelude::*;

    pub struct Scale(pub f64);

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x * self.0
    }

    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        grad * self.0
    }
}

fn main() {}
