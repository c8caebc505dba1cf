//! Elementwise comparisons, broadcasting as NumPy does: `bool` masks, `true` where
//! the comparison holds, on the operands' device (as PyTorch's `torch.gt` and the
//! others). Operands of different dtypes are compared in their common dtype
//! (PyTorch's `result_type`: an `i64` tensor against an `f32` one compares in
//! `f32`).
//!
//! The masks are constants: the comparisons are not recorded, and their results
//! never require grad (a comparison is piecewise constant: its derivative is 0
//! wherever it exists). Use them as the condition of `where` (`autograd_ops::r#where`):
//! `where(&gt(&x, &zero)?, &x, &(&x * 0.1)?)` is a leaky ReLU, differentiable in
//! `x` through `where`; convert one to numbers with `.to_dtype(DType::F32)`.
//!
//! NaN compares unequal to everything, itself included (IEEE): every comparison
//! with a NaN gives `false`, except [`ne`], which gives `true`.

use autograd_core::{BinaryOp, DType, Result, Tensor, UnaryOp, compute};

/// `f(a, b)` as an unrecorded `bool` mask; errors name `op`.
fn compare(op: &'static str, a: &Tensor, b: &Tensor, f: BinaryOp) -> Result<Tensor> {
    let run = || compute::cast(&compute::binary(a, b, f)?, DType::Bool);
    run().map_err(|e| e.in_op(op))
}

/// `true` where `a == b`, else `false` (a constant `bool` mask). Errors name
/// `eq`: shapes that do not broadcast, devices that differ.
pub fn eq(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("eq", a, b, BinaryOp::Eq)
}

/// `true` where `a != b` (NaN included), else `false` (a constant `bool` mask).
/// Errors name `ne`.
pub fn ne(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let run = || {
        // 1 where a == b, in the operands' common dtype; equal to 0 where a != b.
        let same = compute::binary(a, b, BinaryOp::Eq)?;
        let zero = same.full_like_shape([], 0.0)?;
        compute::cast(&compute::binary(&same, &zero, BinaryOp::Eq)?, DType::Bool)
    };
    run().map_err(|e| e.in_op("ne"))
}

/// `1 - mask`: 1 where a 0/1 mask of a floating dtype is 0 and 0 where it is 1
/// (unrecorded; the masks inside backward formulas, of their operands' dtype).
pub(crate) fn complement(mask: &Tensor) -> Result<Tensor> {
    compute::unary(
        &compute::unary(mask, UnaryOp::Neg)?,
        UnaryOp::AddScalar(1.0),
    )
}

/// `true` where `a < b`, else `false` (a constant `bool` mask). Errors name `lt`.
pub fn lt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("lt", a, b, BinaryOp::Lt)
}

/// `true` where `a <= b`, else `false` (a constant `bool` mask). Errors name `le`.
pub fn le(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("le", a, b, BinaryOp::Le)
}

/// `true` where `a > b`, else `false` (a constant `bool` mask). Errors name `gt`.
pub fn gt(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("gt", a, b, BinaryOp::Gt)
}

/// `true` where `a >= b`, else `false` (a constant `bool` mask). Errors name `ge`.
pub fn ge(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    compare("ge", a, b, BinaryOp::Ge)
}
