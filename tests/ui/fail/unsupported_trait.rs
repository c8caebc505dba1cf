use autograd::prelude::*;

#[differentiable]
pub trait Op {
    fn forward(&self, x: &Tensor) -> Result<Tensor>;
    fn backward(&self, grad: &Tensor, x: &Tensor) -> Result<Tensor>;
}

fn main() {}
