use smallvec::SmallVec;
use std::fmt;
use std::ops::Deref;

/// The dimensions of a tensor, outermost first. A scalar has rank 0 and one element.
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

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }

    /// The dimensions as a slice.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Mutable access to the dimensions.
    pub fn dims_mut(&mut self) -> &mut [usize] {
        &mut self.0
    }

    /// Row-major (C order) strides for this shape, in elements.
    pub fn contiguous_strides(&self) -> SmallVec<[usize; 4]> {
        let dims = self.dims();
        if dims.len() <= 4 {
            let mut buf = [0usize; 4];
            let mut acc = 1;
            for (s, &d) in buf[..dims.len()].iter_mut().zip(dims).rev() {
                *s = acc;
                acc *= d;
            }
            return SmallVec::from_buf_and_len(buf, dims.len());
        }
        let mut strides: SmallVec<[usize; 4]> = SmallVec::from_elem(0, self.rank());
        let mut acc = 1;
        for (s, &d) in strides.iter_mut().zip(dims).rev() {
            *s = acc;
            acc *= d;
        }
        strides
    }

    /// Inserts a dimension of size `size` at position `at`.
    pub fn insert(&mut self, at: usize, size: usize) {
        self.0.insert(at, size);
    }

    /// Removes and returns the dimension at position `at`.
    pub fn remove(&mut self, at: usize) -> usize {
        self.0.remove(at)
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
}
