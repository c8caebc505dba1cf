//! Batched matrix products through the `gemm` crate, which reads any row and
//! column strides: transposed and broadcast operands are never copied first.

use crate::walk::Walk;
use crate::{Element, Layout, Result};

/// `dims` is `(batch, m, k, n)` from `check::matmul_dims`, which checked that the
/// two views agree (same batch axes, inner sizes) and that the result's size fits.
pub(crate) fn matmul<T: Element>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    (batch, m, k, n): (usize, usize, usize, usize),
) -> Result<Vec<T>> {
    let r = la.rank();
    let batch_shape = &la.shape()[..r - 2];
    let total = batch * m * n;
    if m == 0 || n == 0 || k == 0 {
        return super::pool::filled(total, T::ZERO);
    }
    // Not zeroed first: gemm writes every element of each block (see below).
    let mut out = super::pool::take::<T>(total)?;
    let (a_rs, a_cs) = (la.strides()[r - 2] as isize, la.strides()[r - 1] as isize);
    let (b_rs, b_cs) = (lb.strides()[r - 2] as isize, lb.strides()[r - 1] as isize);
    let walk = Walk::new(
        batch_shape,
        [&la.strides()[..r - 2], &lb.strides()[..r - 2]],
    );
    let mut dst = 0;
    walk.for_each_run([la.offset(), lb.offset()], |[ao, bo], len, [sa, sb]| {
        for j in 0..len {
            let (ao, bo) = (ao + j * sa, bo + j * sb);
            // SAFETY: the caller checked that both views fit their buffers
            // (`check_fits`) and that they agree (`matmul_dims`: b's batch axes and
            // k rows are a's), so every element gemm reads, an m x k block of a and
            // a k x n block of b at these strides, is an element of a view and in
            // bounds; `out` has room for batch * m * n elements (no overflow) and
            // `dst` steps through it one m x n block at a time with row stride n.
            // gemm supports f32/f64.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    out.as_mut_ptr().add(dst),
                    1,
                    n as isize,
                    false,
                    a.as_ptr().add(ao),
                    a_cs,
                    a_rs,
                    b.as_ptr().add(bo),
                    b_cs,
                    b_rs,
                    T::ZERO,
                    T::ONE,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            dst += m * n;
        }
    });
    debug_assert_eq!(dst, total);
    // SAFETY: `out` has capacity `total`; the walk visits every batch entry once,
    // and each gemm call wrote all m * n elements of its block (with `read_dst`
    // false it sets alpha to 0 and stores without reading the destination), so the
    // blocks initialise elements 0..total.
    unsafe { out.set_len(total) };
    Ok(out)
}
