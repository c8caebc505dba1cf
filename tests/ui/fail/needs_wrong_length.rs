// `needs` has one flag per differentiable input: here 2.
use autograd::prelude::*;

#[differentiable]
mod times {
    use autograd::prelude::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        a * b
    }

    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 3],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            grad_if(needs[0], || grad * b)?,
            grad_if(needs[1], || grad * a)?,
        ))
    }
}

fn main() {}
