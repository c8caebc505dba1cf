// An op without `fn backward`: it could never be differentiated.
use autograd::prelude::*;

#[differentiable]
mod square {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * x
    }
}

fn main() {
    // The op's function still exists, so this call reports nothing more.
    let _ = square(&Tensor::scalar(1.0f32));
}
