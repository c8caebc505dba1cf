// An elementwise function may call the supported methods only; a misspelled one
// gets a suggestion.
use autograd::prelude::*;

#[differentiable]
mod rounded {
    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.cbrt() + x.tnah()
    }
}

fn main() {}
