// An elementwise backward returns gradients, `grad` times the derivative: one that
// never reads `grad` (declared and unread, or not declared) returns the derivative
// alone, wrong for every output gradient but ones.
use autograd::prelude::*;

#[differentiable]
mod sine {
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.sin()
    }

    #[elementwise]
    pub fn backward(x: f32, grad: f32) -> f32 {
        x.cos()
    }
}

#[differentiable]
mod product {
    #[elementwise]
    pub fn forward(a: f32, b: f32) -> f32 {
        a * b
    }

    #[elementwise]
    pub fn backward(a: f32, b: f32) -> (f32, f32) {
        (b, a)
    }
}

fn main() {}
