//! Matrix products through cuBLAS.
//!
//! cuBLAS is column-major; a row-major `C = A B` is the column-major
//! `Cᵀ = Bᵀ Aᵀ`, so B goes first and m and n swap. Each operand is described to
//! cuBLAS as it lies in memory (row-major, or column-major for a transposed view,
//! which becomes cuBLAS's transpose flag), and the batch axes as one stride (0 for
//! a broadcast operand). Only a view that fits none of these (a matrix with
//! neither stride 1, a broadcast inside a matrix, batch axes that do not merge) is
//! copied to a contiguous buffer first, on the device; where the two operands'
//! batch axes merge only apart (one broadcast over some batch axes and not others),
//! only the operand whose own batch axes do not merge is copied ([`to_copy`]).

use super::driver::{Driver, GemmArgs};
use super::{CudaFloat, CudaStorage, alloc};
use crate::walk::Walk;
use crate::{BackendStorage, KernelError, Layout, Result, UnaryOp};

/// How cuBLAS reads the transpose of a `rows x cols` matrix stored with strides
/// `(rs, cs)`: the operation and the leading dimension, or `None` when it cannot.
fn transposed_operand(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<(bool, usize)> {
    // As stored row-major (unit column stride): its transpose is column-major, as is.
    if (cols == 1 || cs == 1) && (rows == 1 || rs >= cols.max(1)) {
        let ld = if rows == 1 { cols.max(1) } else { rs };
        return Some((false, ld));
    }
    // Column-major (a transposed view): cuBLAS transposes it.
    if (rows == 1 || rs == 1) && (cols == 1 || cs >= rows.max(1)) {
        let ld = if cols == 1 { rows.max(1) } else { cs };
        return Some((true, ld));
    }
    None
}

fn dim(what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        KernelError::Layout(format!(
            "matmul {what} of {v} exceeds cuBLAS's 32-bit limit; split the product"
        ))
    })
}

fn contiguous(x: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Layout)> {
    Ok((
        x.unary(l, UnaryOp::Copy)?,
        Layout::contiguous(l.shape().clone()),
    ))
}

/// Which operands' batch axes (`shape`, with strides `a` and `b`) must be copied
/// to a contiguous buffer for one batch stride per operand to describe them: none
/// when they merge into one axis in both together; else each operand whose own
/// batch axes do not merge into one (a copy's do, and so do both together then).
fn to_copy(shape: &[usize], a: &[usize], b: &[usize]) -> (bool, bool) {
    if Walk::new(shape, [a, b]).shape.len() <= 1 {
        return (false, false);
    }
    let merges = |s: &[usize]| Walk::new(shape, [s]).shape.len() <= 1;
    (!merges(a), !merges(b))
}

/// `dims` is `(batch, m, k, n)` from `check::matmul_dims`, which checked that the
/// two views agree (same batch axes, inner sizes) and that the result's size fits.
pub(super) fn matmul<T: CudaFloat>(
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    dims: (usize, usize, usize, usize),
) -> Result<CudaStorage> {
    let (batch, m, k, n) = dims;
    let r = la.rank();
    let batch_shape = &la.shape()[..r - 2];
    let dev = &a.device;
    let len = batch * m * n;
    if len == 0 || k == 0 {
        return CudaStorage::filled(dev, len, T::DTYPE, 0.0);
    }
    let (sa, sb) = (&la.strides()[..r - 2], &lb.strides()[..r - 2]);
    match to_copy(batch_shape, sa, sb) {
        (false, false) => {}
        (true, false) => {
            let (a2, la2) = contiguous(a, la)?;
            return matmul::<T>(&a2, &la2, b, lb, dims);
        }
        (false, true) => {
            let (b2, lb2) = contiguous(b, lb)?;
            return matmul::<T>(a, la, &b2, &lb2, dims);
        }
        (true, true) => {
            let (a2, la2) = contiguous(a, la)?;
            let (b2, lb2) = contiguous(b, lb)?;
            return matmul::<T>(&a2, &la2, &b2, &lb2, dims);
        }
    }
    let w = Walk::new(batch_shape, [sa, sb]);
    let (stride_a, stride_b) = match w.shape.len() {
        1 => (w.strides[0][0], w.strides[1][0]),
        _ => (0, 0),
    };
    let Some((trans_a, ld_a)) = transposed_operand(m, k, la.strides()[r - 2], la.strides()[r - 1])
    else {
        let (a2, la2) = contiguous(a, la)?;
        return matmul::<T>(&a2, &la2, b, lb, dims);
    };
    let Some((trans_b, ld_b)) = transposed_operand(k, n, lb.strides()[r - 2], lb.strides()[r - 1])
    else {
        let (b2, lb2) = contiguous(b, lb)?;
        return matmul::<T>(a, la, &b2, &lb2, dims);
    };

    // Column-major Cᵀ (n x m, ld n) = Bᵀ (n x k) · Aᵀ (k x m).
    let gemm = GemmArgs {
        trans_a: trans_b,
        trans_b: trans_a,
        m: dim("n", n)?,
        n: dim("m", m)?,
        k: dim("k", k)?,
        lda: dim("leading dimension", ld_b)?,
        ldb: dim("leading dimension", ld_a)?,
        ldc: dim("n", n)?,
        batch: dim("batch", batch)?,
        stride_a: stride_b as i64,
        stride_b: stride_a as i64,
        stride_c: (m * n) as i64,
    };
    // SAFETY: cuBLAS writes all batch * m * n elements (beta = 0).
    let mut out = unsafe { alloc::<T>(dev, len)? };
    let (av, bv) = (a.slice::<T>()?, b.slice::<T>()?);
    // SAFETY: the layouts were checked to fit their buffers (check_fits) and each
    // other (matmul_dims: b's batch axes and k rows are a's), the leading
    // dimensions and batch strides describe exactly those views (see
    // `transposed_operand`), and `out` holds batch * m * n elements.
    unsafe {
        dev.driver
            .gemm::<T>(&gemm, bv, lb.offset(), av, la.offset(), &mut out)?
    };
    Ok(CudaStorage::new(out, len, dev.clone()))
}

#[cfg(test)]
mod tests {
    use super::{to_copy, transposed_operand};

    #[test]
    fn only_the_operand_whose_batch_axes_do_not_merge_is_copied() {
        // [2, 3] batch: a contiguous (strides 3*35, 35), b [3, 7, 4] broadcast over
        // the first batch axis (0, 28): b alone is copied.
        assert_eq!(to_copy(&[2, 3], &[105, 35], &[0, 28]), (false, true));
        // And the other way round.
        assert_eq!(to_copy(&[2, 3], &[0, 35], &[84, 28]), (true, false));
        // a's batch axes swapped (they never merge), b one matrix for all: a.
        assert_eq!(to_copy(&[2, 3], &[35, 70], &[0, 0]), (true, false));
        // Each broadcast over a different axis: both.
        assert_eq!(to_copy(&[2, 3], &[0, 35], &[28, 0]), (true, true));
        // Merging together (contiguous, or one broadcast over all): neither.
        assert_eq!(to_copy(&[2, 3], &[105, 35], &[84, 28]), (false, false));
        assert_eq!(to_copy(&[2, 3], &[105, 35], &[0, 0]), (false, false));
        assert_eq!(
            to_copy(&[2, 1, 3], &[105, 7, 35], &[0, 9, 0]),
            (false, false)
        );
    }

    #[test]
    fn operands_are_described_as_they_lie() {
        // A row-major [2, 3] matrix: not transposed, leading dimension 3.
        assert_eq!(transposed_operand(2, 3, 3, 1), Some((false, 3)));
        // Its transposed view, [3, 2] with strides (1, 3): cuBLAS transposes.
        assert_eq!(transposed_operand(3, 2, 1, 3), Some((true, 3)));
        // A row of a wider matrix (leading dimension larger than the row).
        assert_eq!(transposed_operand(2, 3, 8, 1), Some((false, 8)));
        // Vectors, whatever their unused stride.
        assert_eq!(transposed_operand(1, 4, 0, 1), Some((false, 4)));
        assert_eq!(transposed_operand(4, 1, 1, 0), Some((false, 1)));
        assert_eq!(transposed_operand(1, 4, 7, 5), Some((true, 5)));
        // A broadcast inside a matrix, and a strided one: copied first.
        assert_eq!(transposed_operand(3, 4, 0, 1), None);
        assert_eq!(transposed_operand(3, 4, 8, 2), None);
    }
}
