//! A crate that denies missing docs can define ops: what `#[differentiable]`
//! generates (the op's function, the unit struct of an op without parameters, its
//! registration) carries docs, so only what the user writes needs them.
#![deny(missing_docs)]

use autograd::prelude::*;

/// `2x`, without parameters: the macro generates the op's struct.
#[differentiable]
pub mod double {
    use autograd::prelude::*;

    /// `x + x`.
    pub fn forward(x: &Tensor) -> Result<Tensor> {
        x + x
    }

    /// d/dx 2x = 2: reads nothing, so nothing is saved.
    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        grad * 2.0
    }

    /// One point to gradient-check.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = Tensor::from_vec(vec![-1.0f64, 0.5, 2.0], [3]).unwrap();
        vec![CheckCase::new("double", vec![x], |x| double(&x[0]))]
    }
}

/// `x * by`: a parameter struct and a `#[no_grad]` input.
#[differentiable]
pub mod masked_scale {
    use autograd::prelude::*;

    /// The op's parameter.
    pub struct MaskedScale {
        /// The factor.
        pub by: f64,
    }

    /// `x * mask * by`.
    pub fn forward(&self, x: &Tensor, #[no_grad] mask: &Tensor) -> Result<Tensor> {
        (x * mask)? * self.by
    }

    /// `grad * mask * by`.
    pub fn backward(&self, grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
        (grad * mask)? * self.by
    }
}

fn main() -> Result<()> {
    let registry = autograd::init()?;
    let x = Tensor::from_vec(vec![1.0f64, 2.0], [2])?.with_requires_grad(true);
    let mask = Tensor::from_vec(vec![1.0f64, 0.0], [2])?;
    let y = masked_scale(&double(&x)?, &mask, 0.5)?;
    y.sum_all()?.backward()?;
    assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![1.0, 0.0]);
    assert!(registry.get("double")?.check_cases.is_some());
    assert_eq!(registry.get("masked_scale")?.params, &["by"]);
    Ok(())
}
