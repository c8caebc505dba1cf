//! Reductions.

use crate::{broadcast_to, reshape};
use autograd_core::{CheckCase, DType, ReduceOp, Result, Shape, Tensor, compute, random::Rng};
use autograd_macros::differentiable;

/// Sum of every element: a scalar.
#[differentiable(crate = ::autograd_core)]
pub mod sum_all {
    use super::*;

    pub fn forward(x: &Tensor) -> Result<Tensor> {
        let axes: Vec<usize> = (0..x.rank()).collect();
        compute::reduce(x, ReduceOp::Sum, &axes, false)
    }

    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        broadcast_to(grad, x_shape.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let x = Rng::new(31)
            .uniform([2, 3], -1.0, 1.0, DType::F64)
            .unwrap_or_else(|_| Tensor::ones([2, 3], DType::F64));
        vec![CheckCase::new("sum_all", vec![x], |x| sum_all(&x[0]))]
    }
}

/// Sum along `axis` (negative counts from the end); `keepdim` keeps it with size 1.
#[differentiable(crate = ::autograd_core)]
pub mod sum {
    use super::*;

    /// Which axis, and whether it stays.
    #[derive(Clone, Copy, Debug)]
    pub struct Sum {
        pub axis: isize,
        pub keepdim: bool,
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("sum", self.axis, x)?;
        compute::reduce(x, ReduceOp::Sum, &[axis], self.keepdim)
    }

    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let rank = x_shape.rank() as isize;
        let axis = if self.axis < 0 {
            self.axis + rank
        } else {
            self.axis
        } as usize;
        let mut kept = x_shape.clone();
        kept.dims_mut()[axis] = 1;
        broadcast_to(&reshape(grad, kept)?, x_shape.clone())
    }

    pub fn check_cases() -> Vec<CheckCase> {
        let x = Rng::new(32)
            .uniform([2, 3, 4], -1.0, 1.0, DType::F64)
            .unwrap_or_else(|_| Tensor::ones([2, 3, 4], DType::F64));
        vec![
            CheckCase::new("sum axis 1", vec![x.clone()], |x| sum(&x[0], 1, false)),
            CheckCase::new("sum axis -1 keepdim", vec![x], |x| sum(&x[0], -1, true)),
        ]
    }
}
