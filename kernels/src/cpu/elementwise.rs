//! Elementwise kernels: every variant of [`UnaryOp`] and [`BinaryOp`] becomes one
//! monomorphised block loop ([`unary_block`], [`binary_block`]), which an unfused
//! op runs as a program of one step (`program::run_step`) and a fused chain runs
//! as its steps. Two direct paths stay outside the programs: the in-place
//! [`binary_assign`] (it writes into its left operand, which a program never
//! does), and [`map`], a conversion between element types.

use super::CpuElement;
use super::{loops, pool, program, reduce, stream};
use crate::op::{dispatch_arith, dispatch_binary, dispatch_unary};
use crate::parallel;
use crate::walk::Walk;
use crate::{BinaryOp, Element, Layout, Result, UnaryOp};
use std::mem::MaybeUninit;
use std::ops::Range;

/// Up to this many elements a plain loop beats the set-up of a vectorised one.
const SMALL: usize = 8;

/// The storage range of a view whose elements sit back to back in row-major order:
/// the case every kernel handles as plain slices, without walking strides.
#[inline]
pub(crate) fn dense(l: &Layout) -> Option<Range<usize>> {
    l.is_contiguous()
        .then(|| l.offset()..l.offset() + l.numel())
}

/// `f(x)` over the view `l` of `a`, written contiguously (an error when the output
/// buffer cannot be allocated). A long dense view is converted in pieces of
/// [`program::PIECE`] on the pool, each writing its own part of the result.
pub(crate) fn map<T: crate::HostElement, U: crate::HostElement>(
    a: &[T],
    l: &Layout,
    f: impl Fn(T) -> U + Sync,
) -> Result<Vec<U>> {
    let mut out = pool::take(l.numel())?;
    if let Some(r) = dense(l) {
        let a = &a[r];
        let n = a.len();
        if n <= SMALL {
            a.iter().for_each(|&x| out.push(f(x)));
        } else if program::in_pieces(n, 2) {
            let region = &mut out.spare_capacity_mut()[..n];
            let piece = program::piece();
            parallel::for_each_piece_mut(region, piece, 2 * n, |p, part| {
                let from = &a[p * piece..][..part.len()];
                for (o, &x) in part.iter_mut().zip(from) {
                    o.write(f(x));
                }
            });
            // SAFETY: the pieces cover the `n` elements of spare capacity, each
            // writing every element of its part (its source has as many).
            unsafe { out.set_len(n) };
        } else {
            out.extend(a.iter().map(|&x| f(x)));
        }
        return Ok(out);
    }
    let walk = Walk::new(l.shape(), [l.strides()]);
    walk.for_each_run([l.offset()], |[o], len, [s]| {
        if s == 1 {
            out.extend(a[o..o + len].iter().map(|&x| f(x)));
        } else {
            out.extend((0..len).map(|j| f(a[o + j * s])));
        }
    });
    Ok(out)
}

/// `a[i] = f(a[i], b[i])` where `la` is contiguous.
fn zip_assign<T: Element>(a: &mut [T], la: &Layout, b: &[T], lb: &Layout, f: impl Fn(T, T) -> T) {
    if let (Some(ra), Some(rb)) = (dense(la), dense(lb)) {
        let (a, b) = (&mut a[ra], &b[rb]);
        if a.len() <= SMALL {
            for (x, &y) in a.iter_mut().zip(b) {
                *x = f(*x, y);
            }
        } else {
            a.iter_mut().zip(b).for_each(|(x, &y)| *x = f(*x, y));
        }
        return;
    }
    let walk = Walk::new(la.shape(), [la.strides(), lb.strides()]);
    walk.for_each_run(
        [la.offset(), lb.offset()],
        |[oa, ob], len, [sa, sb]| match (sa, sb) {
            (1, 1) => a[oa..oa + len]
                .iter_mut()
                .zip(&b[ob..ob + len])
                .for_each(|(x, &y)| *x = f(*x, y)),
            (1, 0) => {
                let y = b[ob];
                a[oa..oa + len].iter_mut().for_each(|x| *x = f(*x, y));
            }
            _ => (0..len).for_each(|j| {
                let x = &mut a[oa + j * sa];
                *x = f(*x, b[ob + j * sb]);
            }),
        },
    );
}

/// `f(ins[0][i], ..)` for the few elements (at most [`SMALL`]) of dense operands:
/// the direct path of [`unary`] and [`binary`] for the smallest tensors (a scalar
/// recurrence), where the one-step program's fixed cost (the operands gathered
/// for a `dyn` call of the step, the op chosen inside it, the loop's vector copy
/// picked) is most of an op's time. The formula [`unary_block`] and
/// [`binary_block`] compute: the same bits.
fn small<T: Element>(a: &[T], f: impl Fn(T) -> T) -> Result<Vec<T>> {
    let mut out = pool::take(a.len())?;
    a.iter().for_each(|&x| out.push(f(x)));
    Ok(out)
}

/// [`small`] for a binary op: `f(a[i], b[i])`.
fn small2<T: Element>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> Result<Vec<T>> {
    let mut out = pool::take(a.len())?;
    a.iter().zip(b).for_each(|(&x, &y)| out.push(f(x, y)));
    Ok(out)
}

/// `op(a)` over the view `l` of `a` (within it), written contiguously: a program
/// of one step, except `Fill`, which reads nothing (a direct fill), and a few
/// dense elements ([`small`], [`small2`]).
pub(crate) fn unary<T: CpuElement + crate::Element>(
    a: &[T],
    l: &Layout,
    op: UnaryOp,
) -> Result<Vec<T>> {
    match op {
        UnaryOp::Fill(v) => pool::filled(l.numel(), T::from_f64(v)),
        _ if l.numel() <= SMALL && l.is_contiguous() => {
            dispatch_unary!(op, T, small, &a[l.offset()..l.offset() + l.numel()])
        }
        _ => program::run_step(&[(a, l)], l.numel(), &|ins, out| {
            unary_block(ins[0], Dest::Append(out), op)
        }),
    }
}

/// `op(a[i])` for every `i` (the block loop of a fused chain: the formula
/// [`unary`] computes, so the values are the same bits), into `dest`. `Fill` and
/// `Copy` give `a` unchanged: a chain never holds them.
pub(crate) fn unary_block<T: Element>(a: &[T], dest: Dest<'_, T>, op: UnaryOp) {
    fn each<T: Element>(a: &[T], dest: Dest<'_, T>, f: impl Fn(T) -> T) {
        dest.map1([a], |[x]| f(x));
    }
    dispatch_unary!(op, T, each, a, dest)
}

/// Where a fused step's block of values goes: appended to a buffer; appended to
/// a result larger than the caches with streaming stores from the loop computing
/// them (see `stream::map2`); or added into a running sum as
/// `reduce::sum_blocks_into` adds them (the same bits), never stored (a step that
/// only the chain's sum reads). The `*Into` and `Partials` forms are what a piece
/// of a parallel run writes: a region of the result (of the block's length), and
/// the totals of the sum's blocks in order (added up by the calling thread).
pub(crate) enum Dest<'a, T> {
    Append(&'a mut Vec<T>),
    Stream(&'a mut Vec<T>),
    Sum(&'a mut f64),
    Into(&'a mut [MaybeUninit<T>]),
    StreamInto(&'a mut [MaybeUninit<T>]),
    Partials(&'a mut Vec<f64>),
}

/// `Dest::$name`: the generated loop of that name over `$n` operands, streamed, or
/// summed.
macro_rules! dest_map {
    ($name:ident, $into:ident, $n:literal) => {
        #[inline(always)]
        fn $name(self, ins: [&[T]; $n], f: impl Fn([T; $n]) -> T) {
            match self {
                // A few elements: a plain loop costs less than picking the
                // loop's vector copy (`simd`) and calling it.
                Dest::Append(out) if ins[0].len() <= SMALL => {
                    let n = ins[0].len();
                    out.extend((0..n).map(|i| f(std::array::from_fn(|k| ins[k][i]))));
                }
                Dest::Append(out) => loops::$name(&ins, out, f),
                Dest::Stream(out) => {
                    if !stream::$name(ins, out, &f) {
                        loops::$name(&ins, out, f)
                    }
                }
                Dest::Sum(total) => reduce::map_sum_blocks_into(ins, total, f),
                Dest::Into(out) => loops::$into(&ins, out, f),
                Dest::StreamInto(out) => {
                    if !stream::$into(ins, out, &f) {
                        loops::$into(&ins, out, f)
                    }
                }
                Dest::Partials(totals) => reduce::map_sum_blocks_each(ins, |t| totals.push(t), f),
            }
        }
    };
}

impl<T: Element> Dest<'_, T> {
    dest_map!(map1, map1_into, 1);
    dest_map!(map2, map2_into, 2);
    dest_map!(map3, map3_into, 3);
}

/// `op(a[i], b[i])` for every `i` (slices of one length; the formula [`binary`]
/// computes), into `dest`.
pub(crate) fn binary_block<T: Element>(a: &[T], b: &[T], dest: Dest<'_, T>, op: BinaryOp) {
    fn each<T: Element>(a: &[T], b: &[T], dest: Dest<'_, T>, f: impl Fn(T, T) -> T) {
        dest.map2([a, b], |[x, y]| f(x, y));
    }
    dispatch_binary!(op, each, a, b, dest)
}

/// Where a chain's step reads the step computed in its loop (see
/// [`binary2_block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fold {
    /// `outer(inner(a, b), c)`.
    Left,
    /// `outer(c, inner(a, b))`.
    Right,
    /// `outer(t, t)` with `t = inner(a, b)`.
    Both,
}

/// Two arithmetic steps of a chain in one loop, the inner one's value never
/// stored: `outer(inner(a[i], b[i]), c[i])` for every `i` into `dest`
/// (`Fold::Left`; `Right` puts `c` first, `Both` reads the inner value twice and
/// no `c`). Each op is the formula [`binary`] computes, so the values are the bits
/// of the two steps run one after the other. `false`, nothing written, when an op
/// is not `+ - * /`.
pub(crate) fn binary2_block<T: Element>(
    [a, b, c]: [&[T]; 3],
    dest: Dest<'_, T>,
    inner: BinaryOp,
    outer: BinaryOp,
    fold: Fold,
) -> bool {
    dispatch_arith!(inner, T, f => dispatch_arith!(outer, T, g => {
        match fold {
            Fold::Left => dest.map3([a, b, c], |[x, y, z]| g(f(x, y), z)),
            Fold::Right => dest.map3([a, b, c], |[x, y, z]| g(z, f(x, y))),
            Fold::Both => dest.map2([a, b], |[x, y]| {
                let t = f(x, y);
                g(t, t)
            }),
        }
        true
    }, false), false)
}

/// `op(a, b)` over two views of one shape (each within its buffer), written
/// contiguously: a program of one step, except a few dense elements ([`small`], [`small2`]).
pub(crate) fn binary<T: CpuElement + crate::Element>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    op: BinaryOp,
) -> Result<Vec<T>> {
    if la.numel() <= SMALL
        && let (Some(ra), Some(rb)) = (dense(la), dense(lb))
    {
        return dispatch_binary!(op, small2, &a[ra], &b[rb]);
    }
    program::run_step(&[(a, la), (b, lb)], la.numel(), &|ins, out| {
        binary_block(ins[0], ins[1], Dest::Append(out), op)
    })
}

pub(crate) fn binary_assign<T: Element>(
    a: &mut [T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    op: BinaryOp,
) {
    dispatch_binary!(op, zip_assign, a, la, b, lb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    #[test]
    fn unary_ops_compute_their_formula() {
        let l = Layout::contiguous(Shape::from([3]));
        let x = [-1.0f64, 0.5, 2.0];
        assert_eq!(unary(&x, &l, UnaryOp::Neg).unwrap(), vec![1.0, -0.5, -2.0]);
        assert_eq!(
            unary(&x, &l, UnaryOp::PowScalar(3.0)).unwrap(),
            vec![-1.0, 0.125, 8.0]
        );
        assert_eq!(
            unary(&x, &l, UnaryOp::DivScalar(4.0)).unwrap(),
            vec![-0.25, 0.125, 0.5]
        );
    }

    /// A long conversion in pieces on any number of threads gives the values of
    /// one pass.
    #[test]
    fn a_conversion_in_pieces_gives_the_values_of_one_pass() {
        let n = 2 * program::PIECE + 77;
        let v: Vec<f64> = (0..n + 3).map(|i| (i as f64 * 0.37).sin() / 3.0).collect();
        let l = Layout::new(Shape::from([n]), &[1], 3).unwrap();
        program::same_for_every_thread_count("f64 to f32", || {
            let got = map(&v, &l, |x| x as f32).unwrap();
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        });
        let got = map(&v, &l, |x| x as f32).unwrap();
        assert!(got.iter().zip(&v[3..]).all(|(&g, &x)| g == x as f32));
    }
}
