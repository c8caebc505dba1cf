//! Ops that change shape. Forward passes are views of the input's storage where
//! possible; the engine's central broadcast reduction is [`sum_to_shape`].

use autograd_core::{CheckCase, DType, Error, Result, Shape, Tensor, compute, random::Rng};
use autograd_macros::differentiable;

fn input(seed: u64, shape: &[usize]) -> Tensor {
    Rng::new(seed)
        .uniform(shape, -1.0, 1.0, DType::F64)
        .unwrap_or_else(|_| Tensor::zeros(shape, DType::F64))
}

/// `x` with another shape of the same element count.
#[differentiable(crate = ::autograd_core)]
pub mod reshape {
    use super::*;

    /// The new shape.
    #[derive(Clone, Debug)]
    pub struct Reshape {
        pub shape: Shape,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::reshape(x, self.shape.clone())
    }

    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        reshape(grad, x_shape.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "reshape [2,3] -> [3,2]",
            vec![input(21, &[2, 3])],
            |x| reshape(&x[0], Shape::from([3, 2])),
        )]
    }
}

/// `x` repeated along new leading axes and axes of size 1, to `shape`.
#[differentiable(crate = ::autograd_core)]
pub mod broadcast_to {
    use super::*;

    /// The target shape.
    #[derive(Clone, Debug)]
    pub struct BroadcastTo {
        pub shape: Shape,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::broadcast_to(x, self.shape.clone())
    }

    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        sum_to_shape(grad, x_shape.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "broadcast_to [3,1] -> [2,3,4]",
            vec![input(22, &[3, 1])],
            |x| broadcast_to(&x[0], Shape::from([2, 3, 4])),
        )]
    }
}

/// Sums `x` down to `shape`, which must broadcast to `x`'s shape: the reduction the
/// engine applies to every gradient of a broadcast input.
#[differentiable(crate = ::autograd_core)]
pub mod sum_to_shape {
    use super::*;

    /// The target shape.
    #[derive(Clone, Debug)]
    pub struct SumToShape {
        pub shape: Shape,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::sum_to_shape(x, &self.shape)
    }

    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        broadcast_to(grad, x_shape.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "sum_to_shape [4,3,5] -> [3,1]",
            vec![input(23, &[4, 3, 5])],
            |x| sum_to_shape(&x[0], Shape::from([3, 1])),
        )]
    }
}

/// Swaps the last two axes.
#[differentiable(crate = ::autograd_core)]
pub mod transpose {
    use super::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        if x.rank() < 2 {
            return Err(Error::Shape {
                op: "transpose",
                msg: format!(
                    "swaps the last two axes, but shape {} has fewer than two",
                    x.shape()
                ),
            });
        }
        compute::transpose(x, x.rank() - 2, x.rank() - 1)
    }

    pub fn backward(grad: &Tensor) -> Result<Tensor> {
        transpose(grad)
    }

    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "transpose [2,3,4]",
            vec![input(24, &[2, 3, 4])],
            |x| transpose(&x[0]),
        )]
    }
}
