// Only the methods of the subset (also as `f32::exp(x)`) may be called; not other
// functions.
use autograd::prelude::*;

fn helper(x: f32) -> f32 {
    x * 2.0
}

#[differentiable]
mod twice {
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        super::helper(x) + f32::exp(x) + i32::abs(3) as f32
    }
}

fn main() {}
