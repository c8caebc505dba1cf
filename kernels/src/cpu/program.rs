//! Running elementwise programs on the CPU, block by block: where each leaf's
//! values come from ([`Source`]), and the runner of a program of one step (an
//! unfused op, fixed or generated). A fused chain of several steps is planned and
//! run by [`super::fused`] over the same sources and blocks.

use super::{CpuElement, CpuStorage, pool};
use crate::walk::Cursor;
use crate::{KernelError, Layout, Result, Shape};
use smallvec::SmallVec;

/// Elements per block: a whole number of the sum's blocks (the 1024 elements of
/// the sum reduction's blocks), and small enough that a dozen steps' buffers stay
/// in the first two levels of cache.
pub const BLOCK: usize = 2 * super::reduce::SUM_BLOCK;

/// The elements of `s` as `T`, checked to hold the view `l` (an error naming the
/// dtypes when `s` holds another type).
pub(crate) fn operand<'a, T: CpuElement>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    let data = T::slice(s).ok_or(KernelError::DTypeMismatch {
        lhs: T::DTYPE,
        rhs: s.dtype(),
    })?;
    crate::check::check_fits(data.len(), l)?;
    Ok(data)
}

/// How a leaf is read, block by block.
pub(super) enum Source<'a, T> {
    /// Back to back from this position.
    Dense(&'a [T]),
    /// A run repeated (see [`Layout::broadcast_period`]), filled into a block once.
    Repeated(Vec<T>),
    /// Any other view: gathered into a block buffer.
    Gathered(&'a [T], Cursor, Vec<T>),
}

/// Sources of a program's leaves.
pub(super) type Sources<'a, T> = SmallVec<[Source<'a, T>; 4]>;

impl<'a, T: CpuElement> Source<'a, T> {
    /// How to read every leaf (each viewing `n` elements, checked by the caller) in
    /// blocks of `block` elements: an error when a leaf does not hold `T` or its
    /// view reaches past its buffer.
    pub(super) fn plan(
        leaves: &[(&'a CpuStorage, &'a Layout)],
        n: usize,
        block: usize,
    ) -> Result<Sources<'a, T>> {
        leaves
            .iter()
            .map(|&(s, l)| Ok(Source::of(operand::<T>(s, l)?, l, n, block)))
            .collect()
    }

    /// How to read the view `l` (of `n` elements) of `data` in blocks of `block`
    /// elements.
    pub(super) fn of(data: &'a [T], l: &Layout, n: usize, block: usize) -> Source<'a, T> {
        if l.is_contiguous() {
            Source::Dense(&data[l.offset()..l.offset() + n])
        } else if let Some(r) = l
            .broadcast_period()
            .filter(|&r| n > 0 && block.is_multiple_of(r))
        {
            // Every block starts at a multiple of the period: one block of it
            // serves all.
            let run = &data[l.offset()..l.offset() + r];
            Source::Repeated(run.iter().copied().cycle().take(block).collect())
        } else {
            Source::Gathered(data, Cursor::new(l), vec![T::ZERO; block])
        }
    }

    /// Gathers the next `len` elements of every gathered source.
    pub(super) fn advance(sources: &mut [Source<'a, T>], len: usize) {
        for source in sources {
            if let Source::Gathered(data, cursor, buf) = source {
                cursor.gather(data, &mut buf[..len]);
            }
        }
    }

    /// The block of `len` elements from `start` (after [`Self::advance`]).
    #[inline(always)]
    pub(super) fn block(&self, start: usize, len: usize) -> &[T] {
        match self {
            Source::Dense(d) => &d[start..start + len],
            Source::Repeated(b) | Source::Gathered(_, _, b) => &b[..len],
        }
    }
}

/// Most operands [`run_step`] reads in place when all are dense (a generated
/// op's derivative reads `MAX_INPUTS + 1`); more go through blocks.
const DIRECT: usize = 6;

/// A program's one step on a block: `step(ins, out)` appends its values for the
/// operands' block `ins` to `out`.
pub(crate) type StepFn<'a, T> = dyn FnMut(&[&[T]], &mut Vec<T>) + 'a;

/// Runs a program of one step over `leaves` (buffers with their views, each of
/// `n` elements and within its buffer: checked by the caller): `step(ins, out)`
/// appends the step's values for the operands' block `ins` to `out`, once over all
/// `n` elements when every leaf is dense, else once a block of [`BLOCK`] (as a
/// fused chain reads them: see [`Source`]). Returns the values appended: the
/// caller checks their count when `step` is not its own.
///
/// The step is a `dyn` call so that this runner is compiled once per element type,
/// not once per op.
pub(crate) fn run_step<T: CpuElement>(
    leaves: &[(&[T], &Layout)],
    n: usize,
    step: &mut StepFn<'_, T>,
) -> Result<Vec<T>> {
    if leaves.len() <= DIRECT && leaves.iter().all(|(_, l)| l.is_contiguous()) {
        // One block of all `n` elements, read in place: no `Source` per leaf, and
        // the operands in an array, not a collection (an op on a few elements
        // costs little more than its loop).
        let mut ins: [&[T]; DIRECT] = [&[]; DIRECT];
        for (i, &(data, l)) in ins.iter_mut().zip(leaves) {
            *i = &data[l.offset()..l.offset() + n];
        }
        let mut out: Vec<T> = pool::take(n)?;
        if n > 0 {
            step(&ins[..leaves.len()], &mut out);
        }
        return Ok(out);
    }
    let block = BLOCK.min(n.max(1));
    let mut sources: Sources<T> = leaves
        .iter()
        .map(|&(data, l)| Source::of(data, l, n, block))
        .collect();
    let mut out: Vec<T> = pool::take(n)?;
    let mut start = 0;
    while start < n {
        let len = block.min(n - start);
        Source::advance(&mut sources, len);
        let ins: SmallVec<[&[T]; 5]> = sources.iter().map(|s| s.block(start, len)).collect();
        step(&ins, &mut out);
        start += len;
    }
    Ok(out)
}

/// A generated op's program of one step (`generated::run_cpu`): the operands
/// checked (dtype, views within their buffers, each of `shape`; `name` is the op's,
/// for the errors), then [`run_step`] over them. Returns the values `step`
/// appended, not yet counted. Generic over the element type only, so that each
/// generated op adds no more than its closure.
pub(crate) fn run_checked<T: CpuElement>(
    name: &str,
    ins: &[(&CpuStorage, &Layout)],
    shape: &Shape,
    step: &mut StepFn<'_, T>,
) -> Result<Vec<T>> {
    let mut typed: SmallVec<[(&[T], &Layout); 5]> = SmallVec::with_capacity(ins.len());
    for &(s, l) in ins {
        typed.push((operand::<T>(s, l)?, l));
        if l.shape() != shape {
            return Err(KernelError::Layout(format!(
                "`{name}`: an operand of shape {} for an output of shape {shape}",
                l.shape()
            )));
        }
    }
    run_step(&typed, shape.numel(), step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;
    use crate::walk::Walk;

    /// The view's elements in row-major order, read one by one.
    fn reference(data: &[f64], l: &Layout) -> Vec<f64> {
        let mut v = vec![];
        Walk::new(l.shape(), [l.strides()]).for_each_run([l.offset()], |[o], len, [s]| {
            v.extend((0..len).map(|j| data[o + j * s]))
        });
        v
    }

    /// A program of one step reads dense, repeated and gathered leaves as the
    /// elements of their views, in and across blocks.
    #[test]
    fn one_step_reads_every_kind_of_view_in_order() {
        let rows = BLOCK / 3 + 5;
        let shape = Shape::from([rows, 8]);
        let n = rows * 8;
        let data: Vec<f64> = (0..2 * n).map(|i| i as f64 * 0.5).collect();
        let dense = Layout::new(shape.clone(), &[8, 1], 3).unwrap();
        let row = Layout::contiguous(Shape::from([8]))
            .broadcast_to(&shape)
            .unwrap();
        let transposed = Layout::contiguous(Shape::from([8, rows]))
            .transpose(0, 1)
            .unwrap();
        let column = Layout::new(shape.clone(), &[1, 0], 7).unwrap();
        // (A row of 8 divides a block: read as a repeated run.)
        assert!(matches!(
            Source::of(&data, &row, n, BLOCK),
            Source::Repeated(_)
        ));
        let views = [&dense, &row, &transposed, &column];
        let got = run_step(
            &views.map(|l| (&data[..], l)),
            n,
            &mut |ins: &[&[f64]], out: &mut Vec<f64>| {
                out.extend((0..ins[0].len()).map(|i| ins.iter().map(|s| s[i]).sum::<f64>()))
            },
        )
        .unwrap();
        let each = views.map(|l| reference(&data, l));
        let want: Vec<f64> = (0..n).map(|i| each.iter().map(|v| v[i]).sum()).collect();
        assert_eq!(got, want);
        // Each alone, and nothing for an empty view.
        for (l, want) in views.iter().zip(&each) {
            let got = run_step(&[(&data[..], *l)], n, &mut |ins, out| {
                out.extend_from_slice(ins[0])
            });
            assert_eq!(&got.unwrap(), want);
        }
        let empty = Layout::contiguous(Shape::from([0, 8]));
        let none = run_step(&[(&data[..], &empty)], 0, &mut |_, _| unreachable!());
        assert!(none.unwrap().is_empty());
    }
}
