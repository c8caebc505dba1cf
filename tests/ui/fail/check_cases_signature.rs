// `check_cases` takes nothing and returns `Vec<CheckCase>`.
use autograd::prelude::*;

#[differentiable]
mod square {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }

    pub fn check_cases(x: Tensor) -> CheckCase {
        CheckCase::new("square", vec![x], |x| square(&x[0]))
    }
}

fn main() {}
