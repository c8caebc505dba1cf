// A body that is not a function of each element on its own: indexing, macros,
// references, statements other than `let`, an `if` without `else`, a written
// backward (it is generated).
use autograd::prelude::*;

#[differentiable]
mod not_elementwise {
    use autograd::prelude::*;

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        let v = [x, x];
        println!("{x}");
        if x > 0.0 { x }
        v[0]
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        Ok(grad.clone())
    }
}

fn main() {}
