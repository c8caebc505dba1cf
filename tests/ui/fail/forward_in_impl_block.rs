// forward and backward go directly in the module: the macro writes the impl.
use autograd::prelude::*;

#[differentiable]
mod scale {
    use autograd::prelude::*;

    pub struct Scale {
        pub factor: f64,
    }

    impl Scale {
        pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
            x * self.factor
        }

        pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
            grad * self.factor
        }
    }
}

fn main() {}
