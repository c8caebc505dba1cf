use crate::{KernelError, Result};
use smallvec::SmallVec;
use std::fmt;
use std::ops::Deref;

/// The dimensions of a tensor, outermost first. A scalar has rank 0 and one element.
///
/// Any list of sizes is a `Shape` (`Shape::from([2, 3])`), including lists whose
/// element count overflows `usize`: no method panics on such a shape.
/// [`Shape::numel`] saturates at `usize::MAX` there and [`Shape::checked_numel`]
/// says `None`. A tensor never has such a shape: the autograd core refuses every
/// shape whose size in bytes does not fit `isize::MAX` before it builds anything.
#[derive(Eq, Default)]
pub struct Shape(SmallVec<[usize; 4]>);

/// A copy of a short list of sizes or strides without a call into the allocator or
/// `memcpy`: shapes are cloned and compared for every op a graph records, so these
/// stay a few instructions for the common rank <= 4.
#[inline]
pub(crate) fn copy_dims(d: &[usize]) -> SmallVec<[usize; 4]> {
    let mut buf = [0usize; 4];
    match *d {
        [] => {}
        [a] => buf[0] = a,
        [a, b] => buf[..2].copy_from_slice(&[a, b]),
        [a, b, c] => buf[..3].copy_from_slice(&[a, b, c]),
        [a, b, c, e] => buf = [a, b, c, e],
        _ => return SmallVec::from_slice(d),
    }
    SmallVec::from_buf_and_len(buf, d.len())
}

/// `a == b` for short lists, element by element (no `memcmp` call).
#[inline]
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Clone for Shape {
    #[inline]
    fn clone(&self) -> Self {
        Shape(copy_dims(&self.0))
    }
}

impl std::hash::Hash for Shape {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.dims().hash(state);
    }
}

impl PartialEq for Shape {
    #[inline]
    fn eq(&self, other: &Shape) -> bool {
        same_dims(&self.0, &other.0)
    }
}

impl Shape {
    /// The shape of a scalar: rank 0, one element.
    pub fn scalar() -> Self {
        Shape(SmallVec::new())
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// Number of elements (1 for a scalar), saturating at `usize::MAX` when the
    /// product of the sizes overflows (never a panic; see [`Shape::checked_numel`]).
    /// 0 whenever some size is 0, even if the product of the others overflows.
    #[inline]
    pub fn numel(&self) -> usize {
        // Once 0, the product stays 0; `usize::MAX * 0` is 0 too.
        self.0.iter().fold(1, |n: usize, &d| n.saturating_mul(d))
    }

    /// Number of elements, or `None` when it overflows `usize` (0 whenever some
    /// size is 0, whatever the others).
    pub fn checked_numel(&self) -> Option<usize> {
        if self.0.contains(&0) {
            return Some(0);
        }
        self.0.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }

    /// The dimensions as a slice.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Mutable access to the dimensions.
    pub fn dims_mut(&mut self) -> &mut [usize] {
        &mut self.0
    }

    /// Row-major (C order) strides for this shape, in elements (saturating at
    /// `usize::MAX` where a product of sizes overflows).
    pub fn contiguous_strides(&self) -> SmallVec<[usize; 4]> {
        let dims = self.dims();
        if dims.len() <= 4 {
            let mut buf = [0usize; 4];
            let mut acc = 1;
            for (s, &d) in buf[..dims.len()].iter_mut().zip(dims).rev() {
                *s = acc;
                acc = acc.saturating_mul(d);
            }
            return SmallVec::from_buf_and_len(buf, dims.len());
        }
        let mut strides: SmallVec<[usize; 4]> = SmallVec::from_elem(0, self.rank());
        let mut acc = 1;
        for (s, &d) in strides.iter_mut().zip(dims).rev() {
            *s = acc;
            acc = acc.saturating_mul(d);
        }
        strides
    }

    /// Inserts a dimension of size `size` at position `at` (`0..=rank`); an error
    /// naming the position and the shape when `at` is past the end.
    pub fn insert(&mut self, at: usize, size: usize) -> Result<()> {
        if at > self.rank() {
            return Err(KernelError::InvalidArgument {
                op: "Shape::insert",
                msg: format!(
                    "position {at} is past the end of shape {self} (rank {}); insert at 0..={}",
                    self.rank(),
                    self.rank()
                ),
            });
        }
        self.0.insert(at, size);
        Ok(())
    }

    /// Removes and returns the dimension at position `at` (`0..rank`); an error
    /// naming the position and the shape when there is none.
    pub fn remove(&mut self, at: usize) -> Result<usize> {
        if at >= self.rank() {
            return Err(KernelError::InvalidArgument {
                op: "Shape::remove",
                msg: format!(
                    "position {at} is out of range for shape {self} (rank {}); valid positions \
                     are 0..{}",
                    self.rank(),
                    self.rank()
                ),
            });
        }
        Ok(self.0.remove(at))
    }

    /// Appends a dimension.
    pub fn push(&mut self, size: usize) {
        self.0.push(size);
    }
}

impl Deref for Shape {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.0
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl From<&[usize]> for Shape {
    fn from(dims: &[usize]) -> Self {
        Shape(SmallVec::from_slice(dims))
    }
}

impl From<&Shape> for Shape {
    fn from(s: &Shape) -> Self {
        s.clone()
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Self {
        Shape(SmallVec::from_vec(dims))
    }
}

impl From<&Vec<usize>> for Shape {
    fn from(dims: &Vec<usize>) -> Self {
        Shape(SmallVec::from_slice(dims))
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(dims: [usize; N]) -> Self {
        Shape(SmallVec::from_slice(&dims))
    }
}

impl<const N: usize> From<&[usize; N]> for Shape {
    fn from(dims: &[usize; N]) -> Self {
        Shape(SmallVec::from_slice(dims))
    }
}

impl From<()> for Shape {
    fn from(_: ()) -> Self {
        Shape::scalar()
    }
}

impl FromIterator<usize> for Shape {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        Shape(iter.into_iter().collect())
    }
}

/// The NumPy broadcast of two shapes: align from the last axis; each pair of
/// sizes must be equal or one of them 1. `None` when they are incompatible.
pub fn broadcast_shapes(a: &Shape, b: &Shape) -> Option<Shape> {
    let rank = a.rank().max(b.rank());
    let mut out: SmallVec<[usize; 4]> = SmallVec::from_elem(1, rank);
    for i in 0..rank {
        let da = if i < a.rank() { a[a.rank() - 1 - i] } else { 1 };
        let db = if i < b.rank() { b[b.rank() - 1 - i] } else { 1 };
        out[rank - 1 - i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(Shape(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let s = |d: &[usize]| Shape::from(d);
        assert_eq!(broadcast_shapes(&s(&[2, 3]), &s(&[1, 3])), Some(s(&[2, 3])));
        assert_eq!(
            broadcast_shapes(&s(&[4, 3, 5]), &s(&[3, 1])),
            Some(s(&[4, 3, 5]))
        );
        assert_eq!(broadcast_shapes(&s(&[]), &s(&[7])), Some(s(&[7])));
        assert_eq!(broadcast_shapes(&s(&[2, 3]), &s(&[3, 2])), None);
        assert_eq!(broadcast_shapes(&s(&[0]), &s(&[1])), Some(s(&[0])));
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(
            Shape::from([2, 3, 4]).contiguous_strides().as_slice(),
            &[12, 4, 1]
        );
        assert!(Shape::scalar().contiguous_strides().is_empty());
        assert_eq!(Shape::scalar().numel(), 1);
    }

    /// `numel` multiplied the sizes with `product()`, which
    /// panics on overflow in debug builds (and wraps in release).
    #[test]
    fn shape_numel_overflow_is_not_a_panic() {
        let huge = Shape::from([1 << 32, 1 << 32]);
        assert_eq!(huge.numel(), usize::MAX);
        assert_eq!(huge.checked_numel(), None);
        // An empty axis makes the count 0, wherever it is.
        for s in [[0, 1 << 40, 1 << 40], [1 << 40, 1 << 40, 0]] {
            assert_eq!(Shape::from(s).numel(), 0);
            assert_eq!(Shape::from(s).checked_numel(), Some(0));
        }
        assert_eq!(Shape::from([2, 3]).checked_numel(), Some(6));
        assert_eq!(Shape::scalar().checked_numel(), Some(1));
        // Strides of such a shape saturate too (was a panic on the last product).
        let strides = Shape::from([1 << 40, 1 << 40, 1 << 40]).contiguous_strides();
        assert_eq!(strides.as_slice(), &[usize::MAX, 1 << 40, 1]);
    }

    /// `Shape::remove` (and `insert`) out of range panicked.
    #[test]
    fn shape_remove_out_of_range_is_an_error() {
        let mut s = Shape::from([2, 3]);
        let e = s.remove(2).unwrap_err();
        assert!(
            matches!(
                e,
                KernelError::InvalidArgument {
                    op: "Shape::remove",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("position 2") && e.to_string().contains("[2, 3]"));
        assert!(s.insert(3, 1).is_err());
        assert_eq!(s, Shape::from([2, 3]));
        assert_eq!(s.remove(0), Ok(2));
        assert_eq!(s.insert(1, 7), Ok(()));
        assert_eq!(s, Shape::from([3, 7]));
    }
}
