//! Reductions over any set of axes, streaming the input once in its own order.

use crate::walk::Walk;
use crate::{Element, Layout, ReduceOp};

/// Elements summed per block in `T` before the block total is added in `f64`:
/// keeps long f32 sums accurate without giving up the vectorised inner loop.
const SUM_BLOCK: usize = 1024;
const LANES: usize = 16;

fn sum_unit_stride<T: Element>(s: &[T]) -> T {
    if s.len() <= LANES {
        return s.iter().fold(T::ZERO, |a, &b| a + b);
    }
    let mut total = 0.0f64;
    for block in s.chunks(SUM_BLOCK) {
        let mut lanes = [T::ZERO; LANES];
        let chunks = block.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for i in 0..LANES {
                lanes[i] += c[i];
            }
        }
        let mut acc = rest.iter().fold(T::ZERO, |a, &b| a + b);
        for l in lanes {
            acc += l;
        }
        total += acc.to_f64();
    }
    T::from_f64(total)
}

#[inline(always)]
fn max<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || a >= b { a } else { b }
}

#[inline(always)]
fn min<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || a <= b { a } else { b }
}

fn reduce_with<T: Element>(
    a: &[T],
    l: &Layout,
    axes: &[usize],
    init: T,
    combine: impl Fn(T, T) -> T,
    run: impl Fn(&[T], usize, usize, usize) -> T,
) -> Vec<T> {
    let mut out_shape = l.shape().clone();
    for &ax in axes {
        out_shape.dims_mut()[ax] = 1;
    }
    let mut out = vec![init; out_shape.numel()];
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
    out
}

pub(crate) fn reduce<T: Element>(a: &[T], l: &Layout, op: ReduceOp, axes: &[usize]) -> Vec<T> {
    match op {
        ReduceOp::Sum => reduce_with(
            a,
            l,
            axes,
            T::ZERO,
            |x, y| x + y,
            |a, o, len, s| {
                if s == 1 {
                    sum_unit_stride(&a[o..o + len])
                } else {
                    (0..len).fold(T::ZERO, |acc, j| acc + a[o + j * s])
                }
            },
        ),
        ReduceOp::Max => reduce_with(a, l, axes, T::NEG_INFINITY, max, |a, o, len, s| {
            (0..len).fold(T::NEG_INFINITY, |acc, j| max(acc, a[o + j * s]))
        }),
        ReduceOp::Min => reduce_with(a, l, axes, T::INFINITY, min, |a, o, len, s| {
            (0..len).fold(T::INFINITY, |acc, j| min(acc, a[o + j * s]))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    #[test]
    fn long_f32_sums_stay_accurate() {
        let n = 1 << 22;
        let v = vec![0.1f32; n];
        let s = reduce(
            &v,
            &Layout::contiguous(Shape::from([n])),
            ReduceOp::Sum,
            &[0],
        );
        let exact = 0.1f32 as f64 * n as f64;
        assert!(
            ((s[0] as f64) - exact).abs() / exact < 1e-6,
            "{} vs {exact}",
            s[0]
        );
    }

    #[test]
    fn max_propagates_nan() {
        let v = [1.0f32, f32::NAN, 3.0];
        let s = reduce(
            &v,
            &Layout::contiguous(Shape::from([3])),
            ReduceOp::Max,
            &[0],
        );
        assert!(s[0].is_nan());
    }
}
