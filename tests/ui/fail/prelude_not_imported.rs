// An op module that forgot `use autograd::prelude::*;`: the op's items are
// resolved inside the module, which the file's imports do not reach. One error
// saying what to add, not one per unresolved `Tensor` and `Result`.
use autograd::prelude::*;

#[differentiable]
mod softsign {
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x / &(x.abs()? + 1.0)?
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let d = (x.abs()? + 1.0)?;
        grad / &(&d * &d)?
    }
}

fn main() {
    // The op's function still exists, so this call reports nothing more.
    let _ = softsign(&Tensor::scalar(1.0f32));
}
