//! Strided traversal shared by the CPU kernels.
//!
//! Every elementwise kernel, reduction and copy walks a logical shape in row-major
//! order over K operands, each with its own strides. Adjacent axes that are laid out
//! back to back in every operand are merged first, so a contiguous tensor (or a
//! contiguous tensor plus a broadcast row) is walked as a few long runs whose inner
//! loops the compiler vectorises.
//!
//! [`Walk::for_each_run`] hands each run to a closure (copies, reductions, the
//! in-place kernels); a [`Cursor`] walks one view the same way in pieces of any
//! length, gathering its next elements into a buffer (the blocks of the CPU
//! program runner).

use crate::Layout;
use smallvec::SmallVec;

/// Axes of one traversal after merging: shape plus one stride list per operand.
#[derive(Clone, Debug)]
pub(crate) struct Walk<const K: usize> {
    pub shape: SmallVec<[usize; 4]>,
    pub strides: [SmallVec<[usize; 4]>; K],
}

impl<const K: usize> Walk<K> {
    /// Drops axes of size 1 and merges axes that are contiguous in all operands.
    pub fn new(shape: &[usize], strides: [&[usize]; K]) -> Self {
        let mut out_shape: SmallVec<[usize; 4]> = SmallVec::new();
        let mut out_strides: [SmallVec<[usize; 4]>; K] = std::array::from_fn(|_| SmallVec::new());
        for (axis, &d) in shape.iter().enumerate() {
            if d == 1 {
                continue;
            }
            let mergeable = match out_shape.last() {
                Some(_) => (0..K).all(|k| {
                    let prev = *out_strides[k].last().unwrap();
                    // Checked: an empty view's strides can be anything.
                    strides[k][axis].checked_mul(d) == Some(prev)
                }),
                None => false,
            };
            if mergeable {
                *out_shape.last_mut().unwrap() *= d;
                for k in 0..K {
                    *out_strides[k].last_mut().unwrap() = strides[k][axis];
                }
            } else {
                out_shape.push(d);
                for k in 0..K {
                    out_strides[k].push(strides[k][axis]);
                }
            }
        }
        Walk {
            shape: out_shape,
            strides: out_strides,
        }
    }

    /// The part of this walk whose index along merged axis `axis` is in `range`
    /// (within the axis), and how far each operand's first element of it lies from
    /// the whole walk's: its runs are the whole walk's runs (or, along the
    /// innermost axis, their parts) in the same order, so a piece of a parallel
    /// kernel that walks it visits its elements as the whole walk does.
    pub fn restrict(&self, axis: usize, range: std::ops::Range<usize>) -> (Self, [usize; K]) {
        let mut part = self.clone();
        part.shape[axis] = range.len();
        let delta = std::array::from_fn(|k| range.start * self.strides[k][axis]);
        (part, delta)
    }

    /// Calls `f(offsets, len, inner_strides)` for every run along the innermost
    /// merged axis, in row-major order. A scalar or all-size-1 shape is one run of
    /// length 1; an empty shape (some axis 0) has no runs.
    pub fn for_each_run(
        &self,
        offsets: [usize; K],
        mut f: impl FnMut([usize; K], usize, [usize; K]),
    ) {
        let rank = self.shape.len();
        if rank == 0 {
            f(offsets, 1, [0; K]);
            return;
        }
        if self.shape.contains(&0) {
            return;
        }
        let inner = self.shape[rank - 1];
        let inner_strides: [usize; K] = std::array::from_fn(|k| self.strides[k][rank - 1]);
        let outer_rank = rank - 1;
        let mut index: SmallVec<[usize; 4]> = SmallVec::from_elem(0, outer_rank);
        let mut pos = offsets;
        loop {
            f(pos, inner, inner_strides);
            // Advance the outer multi-index with carry.
            let mut axis = outer_rank;
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                index[axis] += 1;
                for (p, s) in pos.iter_mut().zip(&self.strides) {
                    *p += s[axis];
                }
                if index[axis] < self.shape[axis] {
                    break;
                }
                for (p, s) in pos.iter_mut().zip(&self.strides) {
                    *p -= s[axis] * self.shape[axis];
                }
                index[axis] = 0;
            }
        }
    }
}

/// A position in a view, walked in row-major order over its merged axes (see
/// [`Walk`]): each [`Self::gather`] copies the next elements out.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    walk: Walk<1>,
    /// The multi-index over the merged axes.
    index: SmallVec<[usize; 4]>,
    offset: usize,
    /// The offset of the view's first element.
    base: usize,
}

impl Cursor {
    /// A cursor at the first element of the view `l`.
    pub(crate) fn new(l: &Layout) -> Cursor {
        let walk = Walk::new(l.shape(), [l.strides()]);
        Cursor {
            index: SmallVec::from_elem(0, walk.shape.len()),
            walk,
            offset: l.offset(),
            base: l.offset(),
        }
    }

    /// A cursor over the same view at its element `i` (in row-major order; at most
    /// the view's element count), wherever this one is: where a piece of a
    /// parallel run starts gathering.
    pub(crate) fn at(&self, i: usize) -> Cursor {
        let dims = &self.walk.shape;
        let strides = &self.walk.strides[0];
        let mut index: SmallVec<[usize; 4]> = SmallVec::from_elem(0, dims.len());
        let mut offset = self.base;
        let mut rest = i;
        for axis in (0..dims.len()).rev() {
            let d = dims[axis].max(1);
            // The outermost axis takes what is left: `i` equal to the element count
            // is the position one past the last row.
            let k = if axis == 0 { rest } else { rest % d };
            rest /= d;
            index[axis] = k;
            offset += k * strides[axis];
        }
        Cursor {
            walk: self.walk.clone(),
            index,
            offset,
            base: self.base,
        }
    }

    /// Copies the next `out.len()` elements of the view (which has that many left)
    /// out of its buffer `data` into `out`, a run of the innermost merged axis at a
    /// time: filled from one element (a broadcast axis), copied as a slice
    /// (unit stride), or read element by element.
    pub(crate) fn gather<T: Copy>(&mut self, data: &[T], out: &mut [T]) {
        let dims = &self.walk.shape;
        let strides = &self.walk.strides[0];
        let rank = dims.len();
        if rank == 0 {
            // A single element (every axis of size 1).
            out.fill(data[self.offset]);
            return;
        }
        let inner = rank - 1;
        let mut k = 0;
        while k < out.len() {
            // The rest of the innermost axis in one run.
            let run = (dims[inner] - self.index[inner]).min(out.len() - k);
            let s = strides[inner];
            let o = self.offset;
            match s {
                0 => out[k..k + run].fill(data[o]),
                1 => out[k..k + run].copy_from_slice(&data[o..o + run]),
                _ => {
                    for (j, x) in out[k..k + run].iter_mut().enumerate() {
                        *x = data[o + j * s];
                    }
                }
            }
            k += run;
            self.index[inner] += run;
            self.offset += run * s;
            // Carry into the outer axes.
            let mut axis = inner;
            while self.index[axis] == dims[axis] && axis > 0 {
                self.offset -= dims[axis] * strides[axis];
                self.index[axis] = 0;
                axis -= 1;
                self.index[axis] += 1;
                self.offset += strides[axis];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_operands_merge_into_one_run() {
        let w = Walk::new(&[2, 3, 4], [&[12, 4, 1], &[12, 4, 1]]);
        assert_eq!(w.shape.as_slice(), &[24]);
    }

    #[test]
    fn broadcast_row_keeps_two_axes() {
        let w = Walk::new(&[2048, 1024], [&[1024, 1], &[0, 1]]);
        assert_eq!(w.shape.as_slice(), &[2048, 1024]);
        let mut runs = 0;
        w.for_each_run([0, 0], |[a, b], len, [sa, sb]| {
            assert_eq!((len, sa, sb, b), (1024, 1, 1, 0));
            assert_eq!(a, runs * 1024);
            runs += 1;
        });
        assert_eq!(runs, 2048);
    }

    #[test]
    fn transposed_walk_visits_in_logical_order() {
        // [2,3] stored column-major: logical (i,j) at j*2 + i.
        let w = Walk::new(&[2, 3], [&[1, 2]]);
        let mut seen = vec![];
        w.for_each_run([0], |[o], len, [s]| {
            for j in 0..len {
                seen.push(o + j * s);
            }
        });
        assert_eq!(seen, vec![0, 2, 4, 1, 3, 5]);
    }

    #[test]
    fn a_cursor_gathers_a_view_in_pieces_of_any_length() {
        use crate::Shape;
        // [3, 4, 5] transposed to [5, 4, 3], and a [4, 1] column broadcast over 5
        // rows and 3 columns: pieces cross runs and axes anywhere.
        let data: Vec<u32> = (0..60).collect();
        let t = Layout::contiguous(Shape::from([3, 4, 5]))
            .transpose(0, 2)
            .unwrap();
        let b = Layout::contiguous(Shape::from([4, 1]))
            .broadcast_to(&Shape::from([5, 4, 3]))
            .unwrap();
        for l in [t, b] {
            let mut want = vec![];
            Walk::new(l.shape(), [l.strides()]).for_each_run([l.offset()], |[o], len, [s]| {
                want.extend((0..len).map(|j| data[o + j * s]))
            });
            for piece in [1, 2, 7, 12, 60] {
                let mut cursor = Cursor::new(&l);
                let mut got = vec![0; 60];
                for chunk in got.chunks_mut(piece) {
                    cursor.gather(&data, chunk);
                }
                assert_eq!(got, want, "{piece}");
                // A cursor started at any element gathers the rest in order.
                for start in (0..60).step_by(piece) {
                    let mut at = cursor.at(start);
                    let mut rest = vec![0; 60 - start];
                    at.gather(&data, &mut rest);
                    assert_eq!(rest, want[start..], "{piece} {start}");
                }
            }
        }
    }

    #[test]
    fn empty_views_with_huge_strides_merge_without_overflow() {
        let w = Walk::new(&[0, 1 << 40], [&[1 << 60, 1 << 60]]);
        assert!(w.shape.contains(&0));
        let mut runs = 0;
        w.for_each_run([0], |_, _, _| runs += 1);
        assert_eq!(runs, 0);
    }
}
