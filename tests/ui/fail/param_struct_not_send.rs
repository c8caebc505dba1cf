// The op value lives in the graph, which threads share: its struct is Send + Sync.
// rustc says so on the struct.
use autograd::prelude::*;

#[differentiable]
mod scale {
    use autograd::prelude::*;
    use std::rc::Rc;

    pub struct Scale {
        pub factor: Rc<f64>,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x * *self.factor
    }

    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        grad * *self.factor
    }
}

fn main() {}
