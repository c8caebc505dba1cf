// The op has a parameter, but forward does not take `&self`: `scale(&x, 3.0)` would
// take the factor and never use it. Also for an elementwise forward.
use autograd::prelude::*;

#[differentiable]
mod scale {
    use autograd::prelude::*;

    pub struct Scale {
        pub factor: f64,
    }

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x * 2.0
    }

    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        grad * self.factor
    }
}

#[differentiable]
mod shifted_relu {
    pub struct ShiftedRelu {
        pub shift: f64,
        pub slope: f64,
    }

    #[elementwise]
    pub fn forward(x: f32) -> f32 {
        x.max(0.0)
    }
}

fn main() {
    let x = Tensor::scalar(1.0f32);
    let _ = scale(&x, 3.0);
    let _ = shifted_relu(&x, 0.5, 0.1);
}
