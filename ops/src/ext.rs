//! Method forms of the standard ops.

use crate::*;
use autograd_core::{Result, Shape, Tensor};

/// The standard ops as methods: `x.matmul(&w)?.relu()?.sum_all()?`.
pub trait TensorExt {
    fn exp(&self) -> Result<Tensor>;
    fn log(&self) -> Result<Tensor>;
    fn relu(&self) -> Result<Tensor>;
    fn matmul(&self, rhs: &Tensor) -> Result<Tensor>;
    /// Transpose of the last two axes.
    fn t(&self) -> Result<Tensor>;
    /// Sum of all elements.
    fn sum_all(&self) -> Result<Tensor>;
    /// Sum along `axis` (negative counts from the end).
    fn sum(&self, axis: isize, keepdim: bool) -> Result<Tensor>;
    fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor>;
    fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor>;
}

impl TensorExt for Tensor {
    #[track_caller]
    fn exp(&self) -> Result<Tensor> {
        exp(self)
    }
    #[track_caller]
    fn log(&self) -> Result<Tensor> {
        log(self)
    }
    #[track_caller]
    fn relu(&self) -> Result<Tensor> {
        relu(self)
    }
    #[track_caller]
    fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        matmul(self, rhs)
    }
    #[track_caller]
    fn t(&self) -> Result<Tensor> {
        transpose(self)
    }
    #[track_caller]
    fn sum_all(&self) -> Result<Tensor> {
        sum_all(self)
    }
    #[track_caller]
    fn sum(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        sum(self, axis, keepdim)
    }
    #[track_caller]
    fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        reshape(self, shape.into())
    }
    #[track_caller]
    fn broadcast_to(&self, shape: impl Into<Shape>) -> Result<Tensor> {
        broadcast_to(self, shape.into())
    }
}
