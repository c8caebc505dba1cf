// An elementwise input is a number, not a reference (nor a tensor).
use autograd::prelude::*;

#[differentiable]
mod square_it {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: &f32, y: &Tensor) -> f32 {
        x * x
    }
}

fn main() {}
