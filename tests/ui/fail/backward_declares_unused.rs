// backward declares `x` and `output` but reads neither: the graph would keep both
// alive for nothing.
use autograd::prelude::*;

#[differentiable]
mod shift {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x + 1.0
    }

    pub fn backward(grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }
}

fn main() {
    let _ = shift(&Tensor::scalar(1.0f32));
}
