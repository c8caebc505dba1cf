// forward's inputs are `&Tensor`; non-tensor parameters are fields of the op struct.
use autograd::prelude::*;

#[differentiable]
mod scale {
    use autograd::prelude::*;

    pub fn forward(x: Tensor, y: &mut Tensor, factor: f64) -> Result<Tensor> {
        let _ = y;
        x * factor
    }

    pub fn backward(grad: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
        Ok((grad.clone(), grad.clone(), grad.clone()))
    }
}

fn main() {}
