// An elementwise backward reads forward's inputs, `output` and `grad`, by name.
use autograd::prelude::*;

#[differentiable]
mod unknown_name {
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.exp()
    }

    #[elementwise]
    pub fn backward(y: f32, grad: f32) -> f32 {
        grad * y
    }
}

#[differentiable]
mod output_is_taken {
    #[elementwise]
    pub fn forward(x: f32, output: f32) -> f32 {
        x * output
    }

    #[elementwise]
    pub fn backward(x: f32, output: f32, grad: f32) -> (f32, f32) {
        (grad * output, grad * x)
    }
}

fn main() {}
