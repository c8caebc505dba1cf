// backward's parameters have fixed types, and a gradient is a tensor.
use autograd::prelude::*;

#[differentiable]
mod total {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        Ok(x.clone())
    }

    pub fn backward(grad: &mut Tensor, output: f32, x_shape: Shape) -> Result<f32> {
        let _ = (grad, output, x_shape);
        Ok(0.0)
    }
}

fn main() {}
