use smallvec::SmallVec;
use std::fmt;
use std::ops::Deref;

/// The dimensions of a tensor, outermost first. A scalar has rank 0 and one element.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Shape(SmallVec<[usize; 4]>);

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
        let mut strides: SmallVec<[usize; 4]> = SmallVec::from_elem(0, self.rank());
        let mut acc = 1;
        for (s, &d) in strides.iter_mut().zip(self.0.iter()).rev() {
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
