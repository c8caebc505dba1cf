// `nmae` is not an argument of #[differentiable]; the op still expands, so the
// call below reports nothing more.
use autograd::prelude::*;

#[differentiable(nmae = "my_square")]
mod square {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * x
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &(x * 2.0)?
    }
}

#[differentiable(name = my_cube, saves = "x")]
mod cube {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        &(x * x)? * x
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        grad * &((x * x)? * 3.0)?
    }
}

fn main() {
    let _ = square(&Tensor::scalar(1.0f32));
    let _ = cube(&Tensor::scalar(1.0f32));
}
