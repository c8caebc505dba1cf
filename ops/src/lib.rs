//! The standard op library. Every op here is defined once with `#[differentiable]`:
//! forward and backward side by side, nothing else written by hand. Backward
//! formulas are written with these same ops, so a recorded backward pass can be
//! differentiated again.
//!
//! Each op comes as a function (`mul(&a, &b)`), and most as a method of
//! [`TensorExt`] (`a.matmul(&b)`); `+ - * /` and unary `-` on tensors call them too.

mod arith;
mod cases;
mod ext;
mod linalg;
mod nn;
mod reduce;
mod shape;
mod unary;

pub use arith::*;
pub use ext::TensorExt;
pub use linalg::*;
pub use nn::*;
pub use reduce::*;
pub use shape::*;
pub use unary::*;

use autograd_core::{Error, OpRegistry, Result, StdOps, registry};

autograd_core::__private::inventory::submit! {
    StdOps {
        add,
        sub,
        mul,
        div,
        neg,
        add_scalar,
        mul_scalar,
        sum_to_shape: |x, shape| sum_to_shape(x, shape.clone()),
    }
}

/// Every op this crate defines. [`init`] checks that all of them reached the
/// registry; a test checks this list against the registry.
pub const STANDARD_OPS: &[&str] = &[
    "abs",
    "add",
    "add_scalar",
    "broadcast_to",
    "concat",
    "cos",
    "cross_entropy",
    "div",
    "exp",
    "gelu",
    "index_add",
    "index_select",
    "log",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "mean_all",
    "min",
    "minimum",
    "mse_loss",
    "mul",
    "mul_scalar",
    "narrow",
    "neg",
    "pad",
    "permute",
    "pow",
    "pow_scalar",
    "relu",
    "reshape",
    "sigmoid",
    "sin",
    "softmax",
    "sqrt",
    "square",
    "squeeze",
    "sub",
    "sum",
    "sum_all",
    "sum_to_shape",
    "tanh",
    "transpose",
    "unsqueeze",
];

/// Links the standard op library into the program and checks that every one of its
/// ops is registered. Call it once at start-up (tests, benches and examples do):
/// a crate nobody references is not linked, and its registrations would vanish.
pub fn init() -> Result<&'static OpRegistry> {
    let reg = registry()?;
    autograd_core::std_ops()?;
    let missing: Vec<&str> = STANDARD_OPS
        .iter()
        .copied()
        .filter(|n| !reg.contains(n))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Registry(format!(
            "the op registry lacks standard ops {missing:?}: the op library was not fully linked"
        )));
    }
    Ok(reg)
}
