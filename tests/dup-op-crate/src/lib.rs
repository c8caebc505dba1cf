//! Test fixture: a downstream crate that defines ops under the names of standard
//! ops (`mul`, `gelu`). They are registered in this crate's namespace
//! (`dup_op_crate::mul`), so a program linking it has both definitions of each name
//! (`tests/duplicate_op.rs`). Nothing else links this crate.

/// `a * b` again, named `mul` like the standard op.
#[autograd::differentiable(name = "mul")]
pub mod my_mul {
    use autograd::prelude::*;

    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        autograd::ops::mul(a, b)
    }

    pub fn backward(grad: &Tensor, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
        Ok(((grad * b)?, (grad * a)?))
    }
}

/// A user's own `gelu` (the exact one, with `erf`), named like the standard `gelu`
/// (the tanh approximation): the case that once made `autograd::init()` fail.
#[autograd::differentiable]
pub mod gelu {
    use autograd::prelude::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        let cdf = ((autograd::ops::erf(&(x / std::f64::consts::SQRT_2)?)? + 1.0)? * 0.5)?;
        x * &cdf
    }

    pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
        let cdf = ((autograd::ops::erf(&(x / std::f64::consts::SQRT_2)?)? + 1.0)? * 0.5)?;
        let pdf = ((x.square()? * -0.5)?.exp()?
            * (0.5 * std::f64::consts::FRAC_2_SQRT_PI / std::f64::consts::SQRT_2))?;
        grad * (&cdf + (x * &pdf)?)?
    }
}
