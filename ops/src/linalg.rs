//! Linear algebra.

use crate::transpose;
use autograd_core::{CheckCase, DType, Result, Tensor, compute, grad_if, random::Rng};
use autograd_macros::differentiable;

/// Matrix product over the last two axes, batch axes broadcast:
/// `[.., m, k] @ [.., k, n] -> [.., m, n]`.
#[differentiable(crate = ::autograd_core, method)]
pub mod matmul {
    use super::*;

    /// The matrix product (`gemm` on the CPU, cuBLAS on a GPU). An error when an
    /// operand has rank below 2, the inner sizes differ, the batch axes do not
    /// broadcast, or the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        compute::matmul(a, b)
    }

    /// dA = G Bᵀ, dB = Aᵀ G (the engine sums broadcast batch axes away).
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let da = grad_if(needs[0], || matmul(grad, &transpose(b)?))?;
        let db = grad_if(needs[1], || matmul(&transpose(a)?, grad))?;
        Ok((da, db))
    }

    /// Gradcheck inputs: a plain `[2, 3] @ [3, 4]` product and a batch broadcast
    /// against a single matrix.
    pub fn check_cases() -> Vec<CheckCase> {
        let mut rng = Rng::new(41);
        let mut t = |s: &[usize]| {
            rng.uniform(s, -1.0, 1.0, DType::F64)
                .unwrap_or_else(|_| autograd_core::cases::fallback(s, 0.0))
        };
        vec![
            CheckCase::new("matmul [2,3] @ [3,4]", vec![t(&[2, 3]), t(&[3, 4])], |x| {
                matmul(&x[0], &x[1])
            }),
            CheckCase::new(
                "matmul [2,2,3] @ [3,2] (broadcast batch)",
                vec![t(&[2, 2, 3]), t(&[3, 2])],
                |x| matmul(&x[0], &x[1]),
            ),
        ]
    }
}
