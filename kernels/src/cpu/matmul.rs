//! Batched matrix products through the `gemm` crate, which reads any row and
//! column strides: transposed and broadcast operands are never copied first.
//!
//! On more than one thread (see [`crate::parallel`]), a batch of many products
//! runs its entries as pieces, and a large product is computed in pieces of rows
//! or columns of its result, each piece one serial `gemm` call. How a product is
//! cut depends on its size alone (with one thread the same pieces run in turn),
//! so the result is the same bits for any thread count. (`gemm`'s own threads are
//! not used: they would leave the calling thread waiting, where here it computes
//! pieces too.)

use crate::parallel::{self, SharedMut};
use crate::walk::Walk;
use crate::{Element, Layout, Result};
use smallvec::SmallVec;
use std::mem::MaybeUninit;

/// Batch entries from which a batch runs its entries as pieces, whatever the size
/// of each: enough entries to share between the threads evenly.
const MANY: usize = 16;

/// Multiply-adds of one product from which it is computed in pieces of [`SPLIT`]
/// rows (or columns, when it has more columns than rows) of its result, each one
/// `gemm` call: so a large product shares out between the threads. Decided by the
/// size alone: a product is cut the same way whatever the thread count (and with
/// one thread its pieces run in turn), so its bits never depend on the threads.
const SPLIT_FROM: usize = 1 << 18;

/// Rows (or columns) of the result per piece of a split product: a whole number of
/// gemm's register tiles, and few enough that a product of a few hundred rows
/// has pieces for several threads. (Each piece packs its own copy of the operand
/// it shares with the others: a small cost beside its multiply-adds.)
const SPLIT: usize = 64;

/// How a product of `(m, n, k)` is cut: `(pieces, rows per piece or columns,
/// along_rows)`.
fn split((m, n, k): (usize, usize, usize)) -> (usize, usize, bool) {
    if m.saturating_mul(n).saturating_mul(k) < SPLIT_FROM {
        (1, m, true)
    } else if m >= n {
        (m.div_ceil(SPLIT), SPLIT, true)
    } else {
        (n.div_ceil(SPLIT), SPLIT, false)
    }
}

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
    let strides = Strides {
        a_rs: la.strides()[r - 2] as isize,
        a_cs: la.strides()[r - 1] as isize,
        b_rs: lb.strides()[r - 2] as isize,
        b_cs: lb.strides()[r - 1] as isize,
    };
    let walk = Walk::new(
        batch_shape,
        [&la.strides()[..r - 2], &lb.strides()[..r - 2]],
    );
    // The multiply-adds: what a thread spends its time on.
    let entry = m.saturating_mul(n).saturating_mul(k);
    let work = entry.saturating_mul(batch);
    let (pieces, size, rows) = split((m, n, k));
    // Written through by the pieces, each its own elements.
    let dst = SharedMut::<MaybeUninit<T>>::new(&mut out.spare_capacity_mut()[..total]);
    // (Inline for the common few entries: a single product allocates nothing.)
    let mut offsets: SmallVec<[(usize, usize); 4]> = SmallVec::with_capacity(batch);
    walk.for_each_run([la.offset(), lb.offset()], |[ao, bo], len, [sa, sb]| {
        offsets.extend((0..len).map(|j| (ao + j * sa, bo + j * sb)));
    });
    debug_assert_eq!(offsets.len(), batch);
    // Piece `p` of batch entry `i`.
    let piece = |i: usize, p: usize| {
        let (ao, bo) = offsets[i];
        let first = p * size;
        let (shape, at, ao, bo) = if rows {
            let len = size.min(m - first);
            let a_at = ao as isize + first as isize * strides.a_rs;
            ((len, n, k), first * n, a_at, bo as isize)
        } else {
            let len = size.min(n - first);
            let b_at = bo as isize + first as isize * strides.b_cs;
            ((m, len, k), first, ao as isize, b_at)
        };
        // SAFETY: the caller checked that both views fit their buffers
        // (`check_fits`) and that they agree (`matmul_dims`: b's batch axes and k
        // rows are a's), so every element gemm reads, rows `first..` of entry i's
        // m x k block of a (or columns `first..` of its k x n block of b), at these
        // strides, is an element of a view and in bounds; the piece writes rows (or
        // columns) `first..first + len` of entry i's m x n block of `out` (row
        // stride n), which has room for batch * m * n elements, and no other piece
        // writes them.
        let block = unsafe {
            let block = dst.ptr().cast::<T>().add(i * m * n + at);
            product(
                shape,
                n,
                block,
                a.as_ptr().offset(ao),
                b.as_ptr().offset(bo),
                &strides,
            );
            block
        };
        // A zero result is +0 whatever path gemm took: its kernels differ by
        // layout (a contiguous operand or a strided view of the same values) in
        // whether a sum of -0 products starts from +0, so without this a fused
        // run (operands realized contiguous) and an unfused one (views) could
        // differ in the sign of a zero. `x + 0` is `x` for every other value.
        // Here, by the piece, on the rows it just wrote while they are in cache.
        for r in 0..shape.0 {
            // SAFETY: row r of the piece's rows x columns block (row stride n),
            // which gemm just initialised and which only this piece touches.
            let row = unsafe { std::slice::from_raw_parts_mut(block.add(r * n), shape.1) };
            for v in row {
                *v += T::ZERO;
            }
        }
    };
    if batch > 1 && (pieces == 1 || batch >= MANY) {
        // Pieces: one batch entry each (its own pieces in turn).
        parallel::for_each(batch, work, |i| (0..pieces).for_each(|p| piece(i, p)));
    } else {
        for i in 0..batch {
            parallel::for_each(pieces, entry, |p| piece(i, p));
        }
    }
    // SAFETY: `out` has capacity `total`; every piece of every batch entry ran
    // once, and each gemm call wrote all the elements of its rows or columns
    // (with `read_dst` false it sets alpha to 0 and stores without reading the
    // destination), so the pieces initialise elements 0..total.
    unsafe { out.set_len(total) };
    Ok(out)
}

/// The row and column strides of the two operands of one product, in elements.
struct Strides {
    a_rs: isize,
    a_cs: isize,
    b_rs: isize,
    b_cs: isize,
}

/// One `m x k` by `k x n` product into a row-major `m x n` block at `dst` whose
/// rows are `dst_rs` elements apart, on the calling thread.
///
/// # Safety
///
/// `a` and `b` at `s`'s strides hold an `m x k` and a `k x n` matrix in bounds of
/// their buffers, `dst` at row stride `dst_rs` has room for `m x n` elements that
/// nothing else reads or writes during the call, and `T` is `f32` or `f64`
/// (gemm's element types).
unsafe fn product<T: Element>(
    (m, n, k): (usize, usize, usize),
    dst_rs: usize,
    dst: *mut T,
    a: *const T,
    b: *const T,
    s: &Strides,
) {
    // SAFETY: the caller's promise; `read_dst` false makes gemm store without
    // reading the destination.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            false,
            a,
            s.a_cs,
            s.a_rs,
            b,
            s.b_cs,
            s.b_rs,
            T::ZERO,
            T::ONE,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;
    use crate::parallel::{MIN_PARALLEL_WORK, TEST_LOCK};

    /// Values in [-1, 1) from a fixed seed (xorshift), with many distinct bits.
    fn values<T: Element>(seed: u64, len: usize) -> Vec<T> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                T::from_f64((s >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
            })
            .collect()
    }

    fn bits<T: Element>(v: &[T]) -> Vec<u64> {
        v.iter().map(|x| x.to_f64().to_bits()).collect()
    }

    /// Small, edge-tile (not multiples of 8, 16 or 48), single-row/column (gemv),
    /// several-`kc`-block and large shapes, `(m, n, k)`: the large ones computed in
    /// pieces of rows (more rows than columns) or of columns.
    const SHAPES: &[(usize, usize, usize)] = &[
        (1, 1, 1),
        (1, 37, 53),
        (29, 1, 31),
        (7, 9, 5),
        (200, 30, 20),
        (20, 200, 30),
        (15, 17, 49),
        (47, 49, 1031),
        (65, 63, 100),
        (100, 300, 129),
        (131, 70, 777),
        (513, 97, 60),
        (33, 1000, 17),
    ];

    /// Each shape, `a` and `b` stored row-major or transposed: the product within
    /// rounding of a plain f64 sum, and the same bits on 1, 2, 3 and 8 threads.
    fn products_in_pieces<T: Element>() {
        for (s, &(m, n, k)) in SHAPES.iter().enumerate() {
            let a = values::<T>(2 * s as u64, m * k);
            let b = values::<T>(2 * s as u64 + 1, k * n);
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let la = if ta {
                    Layout::new(Shape::from([m, k]), &[1, m], 0).unwrap()
                } else {
                    Layout::contiguous(Shape::from([m, k]))
                };
                let lb = if tb {
                    Layout::new(Shape::from([k, n]), &[1, k], 0).unwrap()
                } else {
                    Layout::contiguous(Shape::from([k, n]))
                };
                let at = |i: usize, j: usize, l: &Layout, v: &[T]| {
                    v[i * l.strides()[0] + j * l.strides()[1]].to_f64()
                };
                parallel::set_num_threads(1).unwrap();
                let want = matmul(&a, &la, &b, &lb, (1, m, k, n)).unwrap();
                // (Every 7th row and column, and the last: each piece is checked,
                // at a cost that stays small under memcheck.)
                let some = |len: usize| (0..len).filter(move |&i| i % 7 == 0 || i + 1 == len);
                for i in some(m) {
                    for j in some(n) {
                        let exact: f64 =
                            (0..k).map(|p| at(i, p, &la, &a) * at(p, j, &lb, &b)).sum();
                        let got = want[i * n + j].to_f64();
                        let tol = if std::mem::size_of::<T>() == 4 {
                            1e-4
                        } else {
                            1e-12
                        };
                        assert!(
                            (got - exact).abs() <= tol * (k as f64).sqrt(),
                            "{:?} transposed {:?}: [{i}, {j}] = {got}, not {exact}",
                            (m, n, k),
                            (ta, tb)
                        );
                    }
                }
                for threads in [2, 3, 8] {
                    parallel::set_num_threads(threads).unwrap();
                    let got = matmul(&a, &la, &b, &lb, (1, m, k, n)).unwrap();
                    assert!(
                        bits(&got) == bits(&want),
                        "{} {:?} transposed {:?}: {threads} threads differ",
                        std::any::type_name::<T>(),
                        (m, n, k),
                        (ta, tb)
                    );
                }
            }
        }
    }

    #[test]
    fn products_in_pieces_are_right_and_the_same_on_any_number_of_threads() {
        let _g = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        parallel::set_min_parallel_work(0);
        products_in_pieces::<f32>();
        products_in_pieces::<f64>();
        parallel::set_min_parallel_work(MIN_PARALLEL_WORK);
        parallel::set_num_threads(1).unwrap();
    }

    /// `matmul` of `[batch.., m, k]` by `[batch.., k, n]` views, `b` broadcast over
    /// the first batch axis and transposed: the same bits on 1, 2, 3 and 8 threads,
    /// as pieces (many entries) and in pieces of rows or columns (few large ones).
    #[test]
    fn batched_products_give_the_same_bits_on_any_number_of_threads() {
        let _g = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        parallel::set_min_parallel_work(0);
        for (batch, m, n, k) in [
            (12, 9, 13, 17),
            (2, 3, 40, 8),
            (20, 33, 7, 65),
            (2, 140, 130, 120),
        ] {
            let (b0, b1) = (batch / 2, 2);
            let a = values::<f32>(7, batch * m * k);
            let la = Layout::contiguous(Shape::from([b0, b1, m, k]));
            // b: [b1, n, k] stored, viewed as [b0 (broadcast), b1, k, n].
            let b = values::<f32>(8, b1 * n * k);
            let lb = Layout::new(Shape::from([b0, b1, k, n]), &[0, n * k, 1, k], 0).unwrap();
            let dims = (batch, m, k, n);
            parallel::set_num_threads(1).unwrap();
            let want = bits(&matmul(&a, &la, &b, &lb, dims).unwrap());
            for threads in [2, 3, 8] {
                parallel::set_num_threads(threads).unwrap();
                let got = matmul(&a, &la, &b, &lb, dims).unwrap();
                assert!(bits(&got) == want, "{dims:?}: {threads} threads differ");
            }
        }
        parallel::set_min_parallel_work(MIN_PARALLEL_WORK);
        parallel::set_num_threads(1).unwrap();
    }
}
