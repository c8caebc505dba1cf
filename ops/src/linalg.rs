//! Linear algebra.

use crate::{squeeze, sum_to_shape, transpose, unsqueeze};
use autograd_core::{CheckCase, DType, Error, Result, Tensor, compute, grad_if, random::Rng};
use autograd_macros::differentiable;

/// The inner sizes of `a @ b` with NumPy's rules for vectors (a vector on the left
/// is a row, on the right a column), checked: rank 0 and unequal inner sizes are
/// errors naming `matmul` with the shapes as given.
fn check_inner(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.rank() == 0 || b.rank() == 0 {
        return Err(Error::Shape {
            op: "matmul",
            msg: format!(
                "operands need at least 1 axis, got {} @ {}; multiply by a scalar with `*` or \
                 mul_scalar",
                a.shape(),
                b.shape()
            ),
        });
    }
    let k = a.dims()[a.rank() - 1];
    let k2 = if b.rank() == 1 {
        b.dims()[0]
    } else {
        b.dims()[b.rank() - 2]
    };
    if k != k2 {
        let which = if b.rank() == 1 {
            "the length of the right vector"
        } else {
            "the second-to-last axis of the right operand"
        };
        return Err(Error::Shape {
            op: "matmul",
            msg: format!(
                "{} @ {}: the last axis of the left operand ({k}) must equal {which} ({k2})",
                a.shape(),
                b.shape()
            ),
        });
    }
    Ok(())
}

/// Matrix product over the last two axes, batch axes broadcast:
/// `[.., m, k] @ [.., k, n] -> [.., m, n]`. Vectors as NumPy's `matmul` takes
/// them: a 1-D left operand `[k]` is a row (its axis removed from the result), a
/// 1-D right operand `[k]` a column (likewise): `[k] @ [k]` is a scalar,
/// `[m, k] @ [k]` is `[m]`, `[k] @ [.., k, n]` is `[.., n]`.
#[differentiable(crate = ::autograd_core, method)]
pub mod matmul {
    use super::*;

    /// The matrix product (`gemm` on the CPU, cuBLAS on a GPU). An error when an
    /// operand has rank 0, the inner sizes differ, the batch axes do not broadcast,
    /// or the dtypes or devices differ.
    pub fn forward(a: &Tensor, b: &Tensor) -> Result<Tensor> {
        check_inner(a, b)?;
        let (a_vec, b_vec) = (a.rank() == 1, b.rank() == 1);
        let a2 = if a_vec {
            compute::unsqueeze(a, 0)?
        } else {
            a.clone()
        };
        let b2 = if b_vec {
            compute::unsqueeze(b, 1)?
        } else {
            b.clone()
        };
        let mut out = compute::matmul(&a2, &b2)?;
        if b_vec {
            out = compute::squeeze(&out, out.rank() - 1)?;
        }
        if a_vec {
            out = compute::squeeze(&out, out.rank() - 1 - usize::from(!b_vec))?;
        }
        Ok(out)
    }

    /// dA = G Bᵀ, dB = Aᵀ G (the engine sums broadcast batch axes away). A vector
    /// operand is taken as a matrix (and the gradient as the matrix product's),
    /// and its gradient summed over the batch axes back to its own shape.
    pub fn backward(
        grad: &Tensor,
        a: &Tensor,
        b: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (a_vec, b_vec) = (a.rank() == 1, b.rank() == 1);
        if !a_vec && !b_vec {
            let da = grad_if(needs[0], || matmul(grad, &transpose(b, -2, -1)?))?;
            let db = grad_if(needs[1], || matmul(&transpose(a, -2, -1)?, grad))?;
            return Ok((da, db));
        }
        let a2 = if a_vec { unsqueeze(a, 0)? } else { a.clone() };
        let b2 = if b_vec { unsqueeze(b, -1)? } else { b.clone() };
        // The gradient of the product of the promoted operands: the removed axes back.
        let mut g2 = grad.clone();
        if a_vec {
            g2 = unsqueeze(&g2, if b_vec { g2.rank() as isize } else { -2 })?;
        }
        if b_vec {
            g2 = unsqueeze(&g2, -1)?;
        }
        let da = grad_if(needs[0], || {
            let d = matmul(&g2, &transpose(&b2, -2, -1)?)?;
            if a_vec {
                sum_to_shape(&squeeze(&d, -2)?, a.shape().clone())
            } else {
                Ok(d)
            }
        })?;
        let db = grad_if(needs[1], || {
            let d = matmul(&transpose(&a2, -2, -1)?, &g2)?;
            if b_vec {
                sum_to_shape(&squeeze(&d, -1)?, b.shape().clone())
            } else {
                Ok(d)
            }
        })?;
        Ok((da, db))
    }

    /// Gradcheck inputs: a plain `[2, 3] @ [3, 4]` product, a batch broadcast
    /// against a single matrix, and vectors: `[3] @ [3]`, `[2, 3] @ [3]`,
    /// `[3] @ [2, 3, 4]`.
    pub fn check_cases() -> Vec<CheckCase> {
        let mut rng = Rng::new(41);
        let mut t = |s: &[usize]| {
            rng.uniform(s, -1.0, 1.0, DType::F64)
                .unwrap_or_else(|_| autograd_core::cases::fallback(s, 0.0))
        };
        let case = |label: &str, a: Tensor, b: Tensor| {
            CheckCase::new(label, vec![a, b], |x| matmul(&x[0], &x[1]))
        };
        vec![
            case("matmul [2,3] @ [3,4]", t(&[2, 3]), t(&[3, 4])),
            case(
                "matmul [2,2,3] @ [3,2] (broadcast batch)",
                t(&[2, 2, 3]),
                t(&[3, 2]),
            ),
            case("matmul [3] @ [3] (dot)", t(&[3]), t(&[3])),
            case("matmul [2,3] @ [3] (matrix-vector)", t(&[2, 3]), t(&[3])),
            case(
                "matmul [3] @ [2,3,4] (vector-batch)",
                t(&[3]),
                t(&[2, 3, 4]),
            ),
        ]
    }
}

/// The dot product of two vectors of one length, a rank-0 tensor: [`matmul`](mod@matmul)
/// of two vectors, recorded as such. Errors name `dot`: an operand that is not a
/// vector, lengths that differ, dtypes or devices that differ.
#[track_caller]
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.rank() != 1 || b.rank() != 1 || a.dims() != b.dims() {
        return Err(Error::Shape {
            op: "dot",
            msg: format!(
                "takes two vectors of one length, got shapes {} and {}; use matmul for \
                 matrices",
                a.shape(),
                b.shape()
            ),
        });
    }
    matmul(a, b).map_err(|e| e.in_op("dot"))
}
