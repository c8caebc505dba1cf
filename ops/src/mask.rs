//! Masking: `masked_fill`, `tril`, `triu`. Compositions of [`r#where`](fn@crate::r#where)
//! with a constant `bool` mask, so the gradient reaches `x` exactly where it is
//! kept (as PyTorch's), and a masked infinity or NaN becomes the fill value, never
//! `inf · 0`.

use autograd_core::{DType, Error, Result, Shape, Tensor};

/// `x` with `value` where `mask` is true (`Tensor.masked_fill(mask, value)`).
///
/// `mask` is `bool` and broadcasts to `x`'s shape (the result has `x`'s shape and
/// dtype); the gradient reaches `x` where the mask is false, and nothing where it is
/// true. Errors name `masked_fill`: a mask that is not `bool`, or whose shape does
/// not broadcast to `x`'s.
///
/// ```
/// use autograd_core::Tensor;
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
/// let mask = Tensor::from_slice(&[true, false], [2])?;
/// let y = autograd_ops::masked_fill(&x, &mask, -1.0)?;
/// assert_eq!(y.to_vec::<f32>()?, [-1.0, 2.0, -1.0, 4.0]);
/// # Ok(())
/// # }
/// ```
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: f64) -> Result<Tensor> {
    const OP: &str = "masked_fill";
    if mask.dtype() != DType::Bool {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "the mask (shape {}) is {}, and masked_fill takes a bool mask (as PyTorch's); \
                 make one with a comparison (`gt`, `eq`, ..) or convert a 0/1 mask with \
                 `.to_dtype(DType::Bool)`",
                mask.shape(),
                mask.dtype()
            ),
        });
    }
    let (m, d) = (mask.dims(), x.dims());
    let fits = m.len() <= d.len()
        && m.iter()
            .rev()
            .zip(d.iter().rev())
            .all(|(&a, &b)| a == 1 || a == b);
    if !fits {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the mask of shape {} does not broadcast to the tensor's shape {} (the \
                 result has the tensor's shape); reshape or expand the mask",
                mask.shape(),
                x.shape()
            ),
        });
    }
    let fill = x
        .full_like_shape(Shape::from(Vec::<usize>::new()), value)
        .map_err(|e| e.in_op(OP))?;
    crate::r#where(mask, &fill, x).map_err(|e| e.in_op(OP))
}

/// The `bool` mask `[rows, cols]` of the entries kept: `j - i ≤ diagonal` (`lower`)
/// or `j - i ≥ diagonal`.
fn triangle(rows: usize, cols: usize, diagonal: i64, lower: bool) -> Result<Tensor> {
    let keep: Vec<bool> = (0..rows * cols)
        .map(|k| {
            let d = (k % cols) as i64 - (k / cols) as i64;
            if lower { d <= diagonal } else { d >= diagonal }
        })
        .collect();
    Tensor::from_slice(&keep, [rows, cols])
}

/// The lower or upper triangle of the last two axes of `x`; errors name `op`.
fn triangular(op: &'static str, x: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    if x.rank() < 2 {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the tensor of shape {} has fewer than two axes, and {op} keeps a triangle \
                 of the last two; reshape it to a matrix first",
                x.shape()
            ),
        });
    }
    let run = || {
        let (rows, cols) = (x.dims()[x.rank() - 2], x.dims()[x.rank() - 1]);
        let keep = triangle(rows, cols, diagonal, lower)?;
        let zero = x.full_like_shape(Shape::from(Vec::<usize>::new()), 0.0)?;
        crate::r#where(&keep, x, &zero)
    };
    run().map_err(|e| e.in_op(op))
}

/// The lower triangle of the last two axes of `x` (a batch of matrices), the rest
/// 0: `torch.tril(x, diagonal)`. Entry `(i, j)` is kept where `j - i ≤ diagonal`
/// (0: the main diagonal and below; 1 one more diagonal above; -1 strictly below).
/// The gradient reaches the kept entries only. An error naming `tril` for fewer
/// than two axes.
pub fn tril(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangular("tril", x, diagonal, true)
}

/// The upper triangle of the last two axes of `x`, the rest 0: `torch.triu(x,
/// diagonal)`, entry `(i, j)` kept where `j - i ≥ diagonal`. As [`tril`] otherwise.
pub fn triu(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangular("triu", x, diagonal, false)
}
