use autograd::prelude::*;

#[differentiable]
pub enum Activation {
    Relu,
    Tanh,
}

fn main() {
    // The enum is kept as written, so using it reports nothing more.
    let _ = Activation::Relu;
    let _ = Activation::Tanh;
}
