// `self` is the op's parameter struct, and these ops have none.
use autograd::prelude::*;

#[differentiable]
mod double {
    use autograd::prelude::*;

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x * 2.0
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad * 2.0
    }
}

#[differentiable]
mod triple {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * 3.0
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad * self.factor
    }
}

fn main() {
    let _ = double(&Tensor::scalar(1.0f32));
    let _ = triple(&Tensor::scalar(1.0f32));
}
