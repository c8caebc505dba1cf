//! Test fixture: a downstream crate that defines an op under the name of a standard
//! op (`mul`). A program linking it has two definitions of `mul`, and its registry
//! must refuse to build, naming both (`tests/duplicate_op.rs`). Nothing else links
//! this crate.

/// `a * b` again, registered as `mul`: the collision under test.
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
