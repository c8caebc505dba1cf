// A loop has no elementwise translation.
use autograd::prelude::*;

#[differentiable]
mod series {
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        let mut s = 0.0;
        for k in 0..4 {
            s = s + x;
        }
        s
    }
}

fn main() {}
