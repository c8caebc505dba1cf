use crate::Shape;
use crate::shape::{copy_dims, same_dims};
use smallvec::SmallVec;

/// How a tensor's elements sit in its storage: element `[i0, i1, ..]` lives at
/// `offset + i0 * strides[0] + i1 * strides[1] + ..`. A stride of 0 repeats an
/// element (broadcasting) without copying it.
#[derive(Debug, Eq)]
pub struct Layout {
    shape: Shape,
    strides: SmallVec<[usize; 4]>,
    offset: usize,
    /// `is_contiguous`, computed once: every kernel asks, most views never change it.
    contiguous: bool,
}

impl Clone for Layout {
    #[inline]
    fn clone(&self) -> Self {
        Layout {
            shape: self.shape.clone(),
            strides: copy_dims(&self.strides),
            offset: self.offset,
            contiguous: self.contiguous,
        }
    }
}

impl PartialEq for Layout {
    fn eq(&self, other: &Layout) -> bool {
        self.shape == other.shape
            && same_dims(&self.strides, &other.strides)
            && self.offset == other.offset
    }
}

fn dense(shape: &Shape, strides: &[usize]) -> bool {
    let mut expected = 1;
    for (&d, &s) in shape.iter().zip(strides.iter()).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected *= d;
    }
    true
}

impl Layout {
    fn with(shape: Shape, strides: SmallVec<[usize; 4]>, offset: usize) -> Self {
        let contiguous = dense(&shape, &strides);
        Layout {
            shape,
            strides,
            offset,
            contiguous,
        }
    }

    /// A row-major layout over a fresh buffer.
    #[inline]
    pub fn contiguous(shape: Shape) -> Self {
        let strides = shape.contiguous_strides();
        Layout {
            shape,
            strides,
            offset: 0,
            contiguous: true,
        }
    }

    /// A layout with explicit strides and offset.
    pub fn new(shape: Shape, strides: &[usize], offset: usize) -> Self {
        debug_assert_eq!(shape.rank(), strides.len());
        Layout::with(shape, copy_dims(strides), offset)
    }

    /// The logical shape (what the elements look like, whatever the strides).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Elements (not bytes) to step in the buffer per index of each axis; 0 on a
    /// broadcast axis.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Index in the buffer (in elements) of the first element.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }

    /// Number of logical elements (broadcast elements counted each time).
    pub fn numel(&self) -> usize {
        self.shape.numel()
    }

    /// True when the elements are stored row-major without gaps (from `offset`).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// One past the largest storage index this layout can touch (0 when empty;
    /// `usize::MAX`, which no buffer reaches, when that index overflows).
    #[inline]
    pub fn required_len(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape
            .iter()
            .zip(self.strides.iter())
            .try_fold(self.offset, |end, (&d, &s)| {
                end.checked_add((d - 1).checked_mul(s)?)
            })
            .and_then(|end| end.checked_add(1))
            .unwrap_or(usize::MAX)
    }

    /// The same elements seen with the shape `target` under NumPy broadcasting:
    /// new leading axes and axes of size 1 get stride 0. `None` if incompatible.
    pub fn broadcast_to(&self, target: &Shape) -> Option<Layout> {
        if target.rank() < self.rank() {
            return None;
        }
        let lead = target.rank() - self.rank();
        let mut strides: SmallVec<[usize; 4]> = SmallVec::from_elem(0, target.rank());
        for i in 0..self.rank() {
            let (d, t) = (self.shape[i], target[lead + i]);
            strides[lead + i] = if d == t {
                self.strides[i]
            } else if d == 1 {
                0
            } else {
                return None;
            };
        }
        Some(Layout::with(target.clone(), strides, self.offset))
    }

    /// Swaps two axes (no copy).
    pub fn transpose(&self, a: usize, b: usize) -> Layout {
        let mut shape = self.shape.clone();
        let mut strides = copy_dims(&self.strides);
        shape.dims_mut().swap(a, b);
        strides.swap(a, b);
        Layout::with(shape, strides, self.offset)
    }

    /// Reorders the axes: axis `i` of the result is axis `perm[i]` of `self` (no copy).
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout::with(
            perm.iter().map(|&p| self.shape[p]).collect(),
            perm.iter().map(|&p| self.strides[p]).collect(),
            self.offset,
        )
    }

    /// Keeps `len` entries of axis `dim` starting at `start` (no copy).
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Layout {
        let mut shape = self.shape.clone();
        shape.dims_mut()[dim] = len;
        let mut offset = self.offset;
        if len > 0 {
            offset += start * self.strides[dim];
        }
        Layout::with(shape, copy_dims(&self.strides), offset)
    }

    /// Inserts an axis of size 1 at `dim` (no copy).
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let stride = if dim < self.rank() {
            self.strides[dim] * self.shape[dim]
        } else {
            1
        };
        let (mut shape, mut strides) = (self.shape.clone(), copy_dims(&self.strides));
        shape.insert(dim, 1);
        strides.insert(dim, stride);
        Layout::with(shape, strides, self.offset)
    }

    /// Removes axis `dim`, which must have size 1 (no copy).
    pub fn squeeze(&self, dim: usize) -> Layout {
        let (mut shape, mut strides) = (self.shape.clone(), copy_dims(&self.strides));
        shape.remove(dim);
        strides.remove(dim);
        Layout::with(shape, strides, self.offset)
    }

    /// The same storage seen with another shape of the same element count, when
    /// that is possible without a copy (the layout is contiguous).
    pub fn reshape(&self, shape: Shape) -> Option<Layout> {
        if shape.numel() != self.numel() || !self.contiguous {
            return None;
        }
        let mut out = Layout::contiguous(shape);
        out.offset = self.offset;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_gives_zero_strides() {
        let l = Layout::contiguous(Shape::from([3, 1]));
        let b = l.broadcast_to(&Shape::from([4, 3, 5])).unwrap();
        assert_eq!(b.strides(), &[0, 1, 0]);
        assert!(l.broadcast_to(&Shape::from([4, 2, 5])).is_none());
    }

    #[test]
    fn transposed_is_not_contiguous() {
        let l = Layout::contiguous(Shape::from([2, 3]));
        assert!(l.is_contiguous());
        assert!(!l.transpose(0, 1).is_contiguous());
        assert_eq!(l.transpose(0, 1).required_len(), 6);
        assert!(
            Layout::contiguous(Shape::from([1, 3]))
                .transpose(0, 1)
                .is_contiguous()
        );
    }
}
