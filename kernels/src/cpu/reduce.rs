//! Reductions over any set of axes, streaming the input once in its own order.

use super::pool;
use crate::parallel;
use crate::walk::Walk;
use crate::{Element, Layout, ReduceOp, Result, Shape};

/// Elements summed per block in `T` before the block total is added in `f64`:
/// keeps long f32 sums accurate without giving up the vectorised inner loop.
pub(crate) const SUM_BLOCK: usize = 1024;
/// Partial sums per block, each over every `LANES`-th element: enough independent
/// additions in flight to keep a core's adders busy (4 AVX vectors of `f32`).
pub(crate) const LANES: usize = 32;

/// Elements a piece of a parallel reduction reads: a whole number of
/// [`SUM_BLOCK`]s (a long run's pieces are whole blocks of its sum), fixed by the
/// job, never by the thread count.
const PIECE: usize = 32 * SUM_BLOCK;

/// This job's piece of a long run: [`PIECE`], or one block of the sum while a test
/// asks for the smallest pieces (`parallel::piece_len`).
fn run_piece() -> usize {
    parallel::piece_len(PIECE, SUM_BLOCK)
}

fn sum_unit_stride<T: Element>(s: &[T]) -> T {
    if s.len() <= LANES {
        return s.iter().fold(T::ZERO, |a, &b| a + b);
    }
    let piece = run_piece();
    let pieces = s.len().div_ceil(piece);
    if s.len() > piece && parallel::is_parallel(pieces, s.len()) {
        // Each piece records its blocks' totals; added here in order from 0.0, as
        // one pass adds them.
        let parts = parallel::map(pieces, s.len(), |p| {
            let piece = &s[p * piece..((p + 1) * piece).min(s.len())];
            let mut totals = Vec::with_capacity(piece.len().div_ceil(SUM_BLOCK));
            sum_blocks_each(piece, |t| totals.push(t));
            totals
        });
        let total = parts.iter().flatten().fold(0.0f64, |t, &b| t + b);
        return T::from_f64(total);
    }
    let mut total = 0.0f64;
    sum_blocks_into(s, &mut total);
    T::from_f64(total)
}

/// Adds the total of each [`SUM_BLOCK`] of `s` to `total`, in order: a sum over
/// more than [`LANES`] elements, fed in pieces that are whole blocks, is the same
/// bits as one call over all of them (a fused chain's trailing sum relies on it).
pub(crate) fn sum_blocks_into<T: Element>(s: &[T], total: &mut f64) {
    map_sum_blocks_into([s], total, |[x]| x)
}

/// Adds to `total`, block by block as [`sum_blocks_into`] adds the values, the sum
/// of `f(ins[0][i], .., ins[N-1][i])` over the operands (slices of one length): the
/// values are added as they are computed, never stored, with the bits of storing
/// them and summing that (a fused chain's trailing sum runs in the loop of the step
/// it sums).
#[inline(always)]
pub(crate) fn map_sum_blocks_into<T: Element, const N: usize>(
    ins: [&[T]; N],
    total: &mut f64,
    f: impl Fn([T; N]) -> T,
) {
    map_sum_blocks_each(ins, |t| *total += t, f)
}

/// [`map_sum_blocks_into`] handing each [`SUM_BLOCK`]'s total to `add` in order
/// instead of adding it: a piece of a parallel sum records its blocks' totals, and
/// the calling thread adds all of them in order from `0.0`, the bits of one serial
/// pass.
pub(crate) fn map_sum_blocks_each<T: Element, const N: usize>(
    ins: [&[T]; N],
    add: impl FnMut(f64),
    f: impl Fn([T; N]) -> T,
) {
    // (No AVX-512 copy: the sum is bound by memory.)
    super::simd::by_simd!(
        super::simd::active(),
        map_sum_avx2,
        map_sum_avx2,
        map_sum(ins, add, f),
        (ins, add, f)
    )
}

/// [`sum_blocks_into`] handing each block's total to `add` (see
/// [`map_sum_blocks_each`]).
pub(crate) fn sum_blocks_each<T: Element>(s: &[T], add: impl FnMut(f64)) {
    map_sum_blocks_each([s], add, |[x]| x)
}

/// [`map_sum`] compiled for AVX2 and FMA (which Rust never contracts into): each
/// lane adds the same values in the same order at any vector width, so the bits
/// are the same.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_sum_avx2<T: Element, const N: usize>(
    ins: [&[T]; N],
    add: impl FnMut(f64),
    f: impl Fn([T; N]) -> T,
) {
    map_sum(ins, add, f)
}

#[inline(always)]
fn map_sum<T: Element, const N: usize>(
    ins: [&[T]; N],
    mut add: impl FnMut(f64),
    f: impl Fn([T; N]) -> T,
) {
    let n = ins.first().map_or(0, |s| s.len());
    let ins: [&[T]; N] = std::array::from_fn(|k| &ins[k][..n]);
    let mut start = 0;
    while start < n {
        let len = SUM_BLOCK.min(n - start);
        let block: [&[T]; N] = std::array::from_fn(|k| &ins[k][start..start + len]);
        let full = len - len % LANES;
        let mut lanes = [T::ZERO; LANES];
        for at in (0..full).step_by(LANES) {
            let rows: [&[T; LANES]; N] = std::array::from_fn(|k| {
                block[k][at..at + LANES]
                    .try_into()
                    .expect("a whole group of lanes")
            });
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane += f(std::array::from_fn(|k| rows[k][i]));
            }
        }
        // The lanes are folded as a tree (the upper half added into the lower one)
        // down to 8, then in order: a chain of `LANES` dependent additions would
        // take longer than the loop above.
        let mut width = LANES;
        while width > 8 {
            width /= 2;
            for i in 0..width {
                lanes[i] += lanes[i + width];
            }
        }
        let mut acc = (full..len).fold(T::ZERO, |acc, i| {
            acc + f(std::array::from_fn(|k| block[k][i]))
        });
        for l in &lanes[..8] {
            acc += *l;
        }
        add(acc.to_f64());
        start += len;
    }
}

/// NaN-propagating maximum; of two equal values the positive zero (max(-0, +0)
/// is +0 in either order), so the result never depends on the order the backends
/// combine in: the CUDA kernels follow the same rule (common.cuh, `m_max`).
#[inline(always)]
fn max<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// NaN-propagating minimum; of two equal values the negative zero.
#[inline(always)]
fn min<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// `fold(init, a[o], a[o + s], ..)` over the `len` elements of a run with
/// `combine`, which must be exact and associative (max, min: the first NaN, else
/// the extreme value, whatever the grouping): a long run is folded in pieces on the
/// pool, and the pieces' results folded in order.
fn fold_run<T: Element>(
    a: &[T],
    (o, len, s): (usize, usize, usize),
    init: T,
    combine: impl Fn(T, T) -> T + Sync,
) -> T {
    let fold = |from: usize, to: usize| (from..to).fold(init, |acc, j| combine(acc, a[o + j * s]));
    let piece = run_piece();
    let pieces = len.div_ceil(piece);
    if len > piece && parallel::is_parallel(pieces, len) {
        let parts = parallel::map(pieces, len, |p| fold(p * piece, ((p + 1) * piece).min(len)));
        return parts.into_iter().fold(init, &combine);
    }
    fold(0, len)
}

/// Combines the run of `len` input elements at `ia` (stride `sa`) into the
/// output elements of `out` at `io` (stride `so`; 0: all into one).
#[inline(always)]
fn combine_run<T: Element>(
    out: &mut [T],
    a: &[T],
    (ia, io, len, sa, so): (usize, usize, usize, usize, usize),
    combine: &impl Fn(T, T) -> T,
    run: &impl Fn(&[T], usize, usize, usize) -> T,
) {
    if so == 0 {
        out[io] = combine(out[io], run(a, ia, len, sa));
    } else if sa == 1 && so == 1 {
        out[io..io + len]
            .iter_mut()
            .zip(&a[ia..ia + len])
            .for_each(|(o, &x)| *o = combine(*o, x));
    } else {
        for j in 0..len {
            let o = &mut out[io + j * so];
            *o = combine(*o, a[ia + j * sa]);
        }
    }
}

/// Reduces the view `l` of `a` over `axes`: the output filled with `init`, then
/// each run of the input walked in order combined into it (`run` reduces a run
/// into one output element). A large reduction that keeps an axis runs in pieces
/// on the pool: the outermost kept axis of the walk split into pieces of rows
/// (fixed by the sizes), each piece the same walk over its rows and its own
/// part of the output, so every output element combines the same values in the
/// same order as one pass.
fn reduce_with<T: Element>(
    a: &[T],
    l: &Layout,
    axes: &[usize],
    init: T,
    combine: impl Fn(T, T) -> T + Sync,
    run: impl Fn(&[T], usize, usize, usize) -> T + Sync,
) -> Result<Vec<T>> {
    let mut out_shape = l.shape().clone();
    for &ax in axes {
        out_shape.dims_mut()[ax] = 1;
    }
    let mut out = pool::filled(out_shape.numel(), init)?;
    let mut out_strides = out_shape.contiguous_strides();
    for &ax in axes {
        out_strides[ax] = 0;
    }
    let walk = Walk::new(l.shape(), [l.strides(), &out_strides]);
    let elements: usize = walk.shape.iter().product();
    // The first merged axis the output keeps: the axes before it are all reduced,
    // so its rows' output elements are consecutive, `so` to a row.
    let kept = walk.strides[1].iter().position(|&so| so != 0);
    // (Pieces of whole rows: one row while a test asks for the smallest pieces.)
    let piece = parallel::piece_len(PIECE, 1);
    if elements > piece
        && let Some(m) = kept
    {
        let (rows, so) = (walk.shape[m], walk.strides[1][m]);
        let per_piece = (piece / (elements / rows).max(1)).max(1);
        let pieces = rows.div_ceil(per_piece);
        let work = elements + out.len();
        if rows * so == out.len() && parallel::is_parallel(pieces, work) {
            parallel::for_each_piece_mut(&mut out, per_piece * so, work, |p, part| {
                let first = p * per_piece;
                let (walk, [da, _]) = walk.restrict(m, first..(first + per_piece).min(rows));
                walk.for_each_run([l.offset() + da, 0], |[ia, io], len, [sa, so]| {
                    combine_run(part, a, (ia, io, len, sa, so), &combine, &run)
                });
            });
            return Ok(out);
        }
    }
    walk.for_each_run([l.offset(), 0], |[ia, io], len, [sa, so]| {
        combine_run(&mut out, a, (ia, io, len, sa, so), &combine, &run)
    });
    Ok(out)
}

/// The caller checked that the view fits its buffer, that every axis is one of its
/// axes, and that its element count does not overflow.
pub(crate) fn reduce<T: Element>(
    a: &[T],
    l: &Layout,
    op: ReduceOp,
    axes: &[usize],
) -> Result<Vec<T>> {
    match op {
        ReduceOp::Sum => {
            // Summing over an axis the input repeats (stride 0, a broadcast gradient)
            // adds the same values `n` times: sum the rest once and scale by `n`.
            // (Saturating: with an axis of size 0 elsewhere the product of the
            // others may overflow, and the sum is empty anyway.)
            let repeated: usize = axes
                .iter()
                .filter(|&&ax| l.strides()[ax] == 0)
                .fold(1, |n, &ax| n.saturating_mul(l.shape()[ax]));
            if repeated > 1 {
                let shape: Shape = (0..l.rank())
                    .map(|ax| {
                        if axes.contains(&ax) && l.strides()[ax] == 0 {
                            1
                        } else {
                            l.shape()[ax]
                        }
                    })
                    .collect();
                let rest = Layout::new(shape, l.strides(), l.offset())?;
                let mut out = sum(a, &rest, axes)?;
                let n = T::from_f64(repeated as f64);
                out.iter_mut().for_each(|o| *o = *o * n);
                return Ok(out);
            }
            sum(a, l, axes)
        }
        ReduceOp::Max => reduce_with(a, l, axes, T::NEG_INFINITY, max, |a, o, len, s| {
            fold_run(a, (o, len, s), T::NEG_INFINITY, max)
        }),
        ReduceOp::Min => reduce_with(a, l, axes, T::INFINITY, min, |a, o, len, s| {
            fold_run(a, (o, len, s), T::INFINITY, min)
        }),
    }
}

fn sum<T: Element>(a: &[T], l: &Layout, axes: &[usize]) -> Result<Vec<T>> {
    reduce_with(
        a,
        l,
        axes,
        T::ZERO,
        |x, y| x + y,
        |a, o, len, s| match s {
            1 => sum_unit_stride(&a[o..o + len]),
            0 => a[o] * T::from_f64(len as f64),
            _ => (0..len).fold(T::ZERO, |acc, j| acc + a[o + j * s]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    /// The AVX2 copy of the block sum gives the bits of the baseline one (the
    /// same additions per lane), for both dtypes and lengths around the blocks.
    #[test]
    fn the_avx2_block_sum_gives_the_bits_of_the_baseline_one() {
        fn check<T: Element>(v: &[T]) {
            let mut want = 0.0f64;
            map_sum([v], |t| want += t, |[x]| x);
            let mut got = 0.0f64;
            sum_blocks_into(v, &mut got);
            assert_eq!(want.to_bits(), got.to_bits(), "{} elements", v.len());
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::simd::detect() >= crate::cpu::simd::Simd::Avx2 {
                let mut avx = 0.0f64;
                // SAFETY: the CPU has AVX2 and FMA.
                unsafe { map_sum_avx2([v], |t| avx += t, |[x]| x) };
                assert_eq!(want.to_bits(), avx.to_bits(), "{} elements", v.len());
            }
        }
        for n in [17, 1023, 1024, 1025, 3000, 5 * SUM_BLOCK + 7] {
            let v: Vec<f64> = (0..n)
                .map(|i| (i as f64 * 0.731).sin() * 1e3 + 0.1)
                .collect();
            check(&v);
            check(&v.iter().map(|&x| x as f32).collect::<Vec<f32>>());
        }
    }

    #[test]
    fn long_f32_sums_stay_accurate() {
        let n = 1 << 22;
        let v = vec![0.1f32; n];
        let s = reduce(
            &v,
            &Layout::contiguous(Shape::from([n])),
            ReduceOp::Sum,
            &[0],
        )
        .unwrap();
        let exact = 0.1f32 as f64 * n as f64;
        assert!(
            ((s[0] as f64) - exact).abs() / exact < 1e-6,
            "{} vs {exact}",
            s[0]
        );
    }

    #[test]
    fn sums_over_broadcast_axes_scale_instead_of_adding() {
        // [3] broadcast to [2048, 3] and summed over the rows: every entry times 2048.
        let v = [1.0f32, 0.5, -2.0];
        let l = Layout::contiguous(Shape::from([1, 3]))
            .broadcast_to(&Shape::from([2048, 3]))
            .unwrap();
        assert_eq!(
            reduce(&v, &l, ReduceOp::Sum, &[0]).unwrap(),
            vec![2048.0, 1024.0, -4096.0]
        );
        // A scalar broadcast to [4, 5] and summed over everything, or over one axis.
        let l = Layout::new(Shape::from([4, 5]), &[0, 0], 1).unwrap();
        assert_eq!(reduce(&v, &l, ReduceOp::Sum, &[0, 1]).unwrap(), vec![10.0]);
        assert_eq!(reduce(&v, &l, ReduceOp::Sum, &[1]).unwrap(), vec![2.5; 4]);
        // Max over a broadcast axis is unaffected.
        assert_eq!(reduce(&v, &l, ReduceOp::Max, &[0]).unwrap(), vec![0.5; 5]);
    }

    #[test]
    fn nan_propagates_through_maximum() {
        assert!(max(f32::NAN, 1.0).is_nan());
        assert!(max(1.0, f32::NAN).is_nan());
        assert!(min(f64::NAN, 1.0).is_nan());
    }

    #[test]
    fn max_propagates_nan() {
        let v = [1.0f32, f32::NAN, 3.0];
        let s = reduce(
            &v,
            &Layout::contiguous(Shape::from([3])),
            ReduceOp::Max,
            &[0],
        )
        .unwrap();
        assert!(s[0].is_nan());
    }

    /// In pieces on any number of threads, sums, maxima and minima over the
    /// first, a middle, the last and all axes of strided views (a transposed
    /// one, and one with a gap between rows) give the bits of one serial pass,
    /// for both dtypes.
    #[test]
    fn reductions_in_pieces_give_the_bits_of_one_pass() {
        use crate::cpu::program::same_for_every_thread_count;
        fn check<T: Element + std::fmt::Debug>(data: &[T], bits: impl Fn(&[T]) -> Vec<u64> + Copy) {
            // [37, 29, 61] (not a whole number of pieces or sum blocks); a
            // transpose of it; and rows of 61 read from rows of 64.
            let dims = [37, 29, 61];
            let dense = Layout::contiguous(Shape::from(dims));
            let transposed = Layout::contiguous(Shape::from([61, 29, 37]))
                .transpose(0, 2)
                .unwrap();
            let gapped = Layout::new(Shape::from(dims), &[29 * 64, 64, 1], 3).unwrap();
            let all: &[usize] = &[0, 1, 2];
            for l in [&dense, &transposed, &gapped] {
                for axes in [&[0][..], &[1], &[2], &[0, 2], all] {
                    for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                        same_for_every_thread_count(&format!("{op:?} {axes:?} {l:?}"), || {
                            bits(&reduce(data, l, op, axes).unwrap())
                        });
                    }
                }
            }
            // One long run summed (more than a piece), and its maximum.
            let long = Layout::contiguous(Shape::from([data.len() - 5]));
            for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
                same_for_every_thread_count(&format!("{op:?} long"), || {
                    bits(&reduce(data, &long, op, &[0]).unwrap())
                });
            }
        }
        let n = 37 * 29 * 64 + 8;
        let v: Vec<f64> = (0..n)
            .map(|i| (i as f64 * 0.731).sin() * 1e3 + 0.1)
            .collect();
        check(&v, |r| r.iter().map(|x| x.to_bits()).collect());
        let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        check(&v, |r| r.iter().map(|x| x.to_bits() as u64).collect());
    }
}
