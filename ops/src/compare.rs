//! Elementwise comparisons, broadcasting as NumPy does: masks of `1.0` where the
//! comparison holds and `0.0` elsewhere, in the operands' dtype, on their device.
//!
//! The masks are constants: the comparisons are not recorded, and their results
//! never require grad (a comparison is piecewise constant: its derivative is 0
//! wherever it exists). Use them as the condition of `where` (`autograd_ops::r#where`):
//! `where(&gt(&x, &zero)?, &x, &(&x * 0.1)?)` is a leaky ReLU, differentiable in
//! `x` through `where`.
//!
//! NaN compares unequal to everything, itself included (IEEE): every comparison
//! with a NaN gives 0, except [`ne`], which gives 1.

use autograd_core::{BinaryOp, Result, Tensor, UnaryOp, compute};

/// `f(a, b)` as an unrecorded mask; errors name `op`.
fn compare(op: &'static str, a: &Tensor, b: &Tensor, f: BinaryOp) -> Result<Tensor> {
    compute::binary(a, b, f).map_err(|e| e.in_op(op))
}

/// `1.0` where `a == b`, else `0.0` (a constant mask). Errors name `eq`: shapes
/// that do not broadcast, dtypes or devices that differ.
pub fn eq(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("eq", a, b, BinaryOp::Eq)
}

/// `1.0` where `a != b` (NaN included), else `0.0` (a constant mask). Errors name
/// `ne`.
pub fn ne(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let run = || complement(&compute::binary(a, b, BinaryOp::Eq)?);
    run().map_err(|e| e.in_op("ne"))
}

/// `1 - mask`: 1 where a 0/1 mask is 0 and 0 where it is 1 (unrecorded).
pub(crate) fn complement(mask: &Tensor) -> Result<Tensor> {
    compute::unary(
        &compute::unary(mask, UnaryOp::Neg)?,
        UnaryOp::AddScalar(1.0),
    )
}

/// `1.0` where `a < b`, else `0.0` (a constant mask). Errors name `lt`.
pub fn lt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("lt", a, b, BinaryOp::Lt)
}

/// `1.0` where `a <= b`, else `0.0` (a constant mask). Errors name `le`.
pub fn le(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("le", a, b, BinaryOp::Le)
}

/// `1.0` where `a > b`, else `0.0` (a constant mask). Errors name `gt`.
pub fn gt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("gt", a, b, BinaryOp::Gt)
}

/// `1.0` where `a >= b`, else `0.0` (a constant mask). Errors name `ge`.
pub fn ge(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("ge", a, b, BinaryOp::Ge)
}
