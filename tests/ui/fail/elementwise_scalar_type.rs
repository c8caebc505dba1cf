// An elementwise function computes on f32 (or f64) numbers: not integers, not
// tensors, and it returns one number.
use autograd::prelude::*;

#[differentiable]
mod shift {
    #[elementwise]
    pub fn forward(x: f32, n: i32) -> bool {
        x > 0.0
    }
}

fn main() {}
