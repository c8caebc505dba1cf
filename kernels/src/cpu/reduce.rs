//! Reductions over any set of axes, streaming the input once in its own order.

use super::pool;
use crate::walk::Walk;
use crate::{Element, Layout, ReduceOp, Result, Shape};

/// Elements summed per block in `T` before the block total is added in `f64`:
/// keeps long f32 sums accurate without giving up the vectorised inner loop.
pub(crate) const SUM_BLOCK: usize = 1024;
/// Partial sums per block, each over every `LANES`-th element: enough independent
/// additions in flight to keep a core's adders busy (4 AVX vectors of `f32`).
pub(crate) const LANES: usize = 32;

fn sum_unit_stride<T: Element>(s: &[T]) -> T {
    if s.len() <= LANES {
        return s.iter().fold(T::ZERO, |a, &b| a + b);
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
pub(crate) fn map_sum_blocks_into<T: Element, const N: usize>(
    ins: [&[T]; N],
    total: &mut f64,
    f: impl Fn([T; N]) -> T,
) {
    // (No AVX-512 copy: the sum is bound by memory.)
    super::simd::by_simd!(
        super::simd::active(),
        map_sum_avx2,
        map_sum_avx2,
        map_sum(ins, total, f),
        (ins, total, f)
    )
}

/// [`map_sum`] compiled for AVX2 and FMA (which Rust never contracts into): each
/// lane adds the same values in the same order at any vector width, so the bits
/// are the same.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_sum_avx2<T: Element, const N: usize>(
    ins: [&[T]; N],
    total: &mut f64,
    f: impl Fn([T; N]) -> T,
) {
    map_sum(ins, total, f)
}

#[inline(always)]
fn map_sum<T: Element, const N: usize>(ins: [&[T]; N], total: &mut f64, f: impl Fn([T; N]) -> T) {
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
        *total += acc.to_f64();
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

fn reduce_with<T: Element>(
    a: &[T],
    l: &Layout,
    axes: &[usize],
    init: T,
    combine: impl Fn(T, T) -> T,
    run: impl Fn(&[T], usize, usize, usize) -> T,
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
    walk.for_each_run([l.offset(), 0], |[ia, io], len, [sa, so]| {
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
            (0..len).fold(T::NEG_INFINITY, |acc, j| max(acc, a[o + j * s]))
        }),
        ReduceOp::Min => reduce_with(a, l, axes, T::INFINITY, min, |a, o, len, s| {
            (0..len).fold(T::INFINITY, |acc, j| min(acc, a[o + j * s]))
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
            map_sum([v], &mut want, |[x]| x);
            let mut got = 0.0f64;
            sum_blocks_into(v, &mut got);
            assert_eq!(want.to_bits(), got.to_bits(), "{} elements", v.len());
            #[cfg(target_arch = "x86_64")]
            if crate::cpu::simd::detect() >= crate::cpu::simd::Simd::Avx2 {
                let mut avx = 0.0f64;
                // SAFETY: the CPU has AVX2 and FMA.
                unsafe { map_sum_avx2([v], &mut avx, |[x]| x) };
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
}
