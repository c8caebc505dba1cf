use crate::shape::{copy_dims, same_dims};
use crate::{KernelError, Result, Shape};
use smallvec::SmallVec;

/// How a tensor's elements sit in its storage: element `[i0, i1, ..]` lives at
/// `offset + i0 * strides[0] + i1 * strides[1] + ..`. A stride of 0 repeats an
/// element (broadcasting) without copying it.
#[derive(Debug, Eq)]
pub struct Layout {
    shape: Shape,
    strides: SmallVec<[usize; 4]>,
    offset: usize,
    /// `numel`, computed once (saturating): kernels ask it several times per op, and
    /// for the one-element tensors of a long scalar chain (W1) the product over the
    /// sizes was a visible part of each op.
    numel: usize,
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
            numel: self.numel,
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
    let mut expected: usize = 1;
    for (&d, &s) in shape.iter().zip(strides.iter()).rev() {
        if d != 1 && s != expected {
            return false;
        }
        expected = expected.saturating_mul(d);
    }
    true
}

/// The error of a layout function (`op`) given an argument that does not fit.
#[cold]
#[inline(never)]
fn invalid(op: &'static str, msg: String) -> KernelError {
    KernelError::InvalidArgument { op, msg }
}

impl Layout {
    fn with(shape: Shape, strides: SmallVec<[usize; 4]>, offset: usize) -> Self {
        let contiguous = dense(&shape, &strides);
        Layout {
            numel: shape.numel(),
            shape,
            strides,
            offset,
            contiguous,
        }
    }

    /// An error naming `op`, `what` and this layout when axis `axis` is not one of
    /// its axes.
    fn check_axis(&self, op: &'static str, what: &str, axis: usize) -> Result<()> {
        if axis < self.rank() {
            return Ok(());
        }
        Err(invalid(
            op,
            format!(
                "{what} {axis} is out of range for a layout of shape {} (rank {}); valid axes \
                 are 0..{}",
                self.shape,
                self.rank(),
                self.rank()
            ),
        ))
    }

    /// A row-major layout over a fresh buffer.
    #[inline]
    pub fn contiguous(shape: Shape) -> Self {
        let strides = shape.contiguous_strides();
        Layout {
            numel: shape.numel(),
            shape,
            strides,
            offset: 0,
            contiguous: true,
        }
    }

    /// A layout with explicit strides and offset: one stride per axis of `shape`,
    /// else an error. Any strides and offset are accepted (kernels check that a view
    /// fits its buffer before they read it: see [`Layout::required_len`]).
    pub fn new(shape: Shape, strides: &[usize], offset: usize) -> Result<Self> {
        if strides.len() != shape.rank() {
            return Err(invalid(
                "Layout::new",
                format!(
                    "{} strides {strides:?} for shape {shape} of rank {}; pass one stride per \
                     axis",
                    strides.len(),
                    shape.rank()
                ),
            ));
        }
        Ok(Layout::with(shape, copy_dims(strides), offset))
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

    /// Number of logical elements (broadcast elements counted each time), saturating
    /// at `usize::MAX` as [`Shape::numel`] does.
    #[inline]
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// True when the elements are stored row-major without gaps (from `offset`).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// The length `r` of the run this view repeats, when it is `r` contiguous
    /// elements from `offset` broadcast over leading axes (a bias row over a
    /// batch; `r = 1` for one value everywhere, `r` = every element for a
    /// contiguous view): element `i` of the view is element `offset + i % r` of the
    /// storage. `None` for any other view.
    pub fn broadcast_period(&self) -> Option<usize> {
        let (dims, strides) = (self.shape().dims(), self.strides());
        let lead = strides.iter().position(|&s| s != 0).unwrap_or(dims.len());
        let mut run = 1;
        for (&d, &s) in dims[lead..].iter().zip(&strides[lead..]).rev() {
            if d != 1 && s != run {
                return None;
            }
            run *= d;
        }
        Some(run)
    }

    /// True when some storage element is viewed more than once: an axis of size > 1
    /// with stride 0 (a broadcast view).
    pub fn has_repeated_elements(&self) -> bool {
        self.shape()
            .iter()
            .zip(self.strides())
            .any(|(&d, &s)| d > 1 && s == 0)
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

    /// Swaps two axes (no copy); an error when either is not an axis.
    pub fn transpose(&self, a: usize, b: usize) -> Result<Layout> {
        self.check_axis("Layout::transpose", "axis", a)?;
        self.check_axis("Layout::transpose", "axis", b)?;
        let mut shape = self.shape.clone();
        let mut strides = copy_dims(&self.strides);
        shape.dims_mut().swap(a, b);
        strides.swap(a, b);
        Ok(Layout::with(shape, strides, self.offset))
    }

    /// Reorders the axes: axis `i` of the result is axis `perm[i]` of `self` (no
    /// copy); an error when `perm` is not a permutation of `0..rank`.
    pub fn permute(&self, perm: &[usize]) -> Result<Layout> {
        let mut seen: SmallVec<[bool; 8]> = SmallVec::from_elem(false, self.rank());
        let valid = perm.len() == self.rank()
            && perm
                .iter()
                .all(|&p| p < self.rank() && !std::mem::replace(&mut seen[p], true));
        if !valid {
            return Err(invalid(
                "Layout::permute",
                format!(
                    "{perm:?} is not a permutation of the {} axes of a layout of shape {}",
                    self.rank(),
                    self.shape
                ),
            ));
        }
        Ok(Layout::with(
            perm.iter().map(|&p| self.shape[p]).collect(),
            perm.iter().map(|&p| self.strides[p]).collect(),
            self.offset,
        ))
    }

    /// Keeps `len` entries of axis `dim` starting at `start` (no copy); an error when
    /// `dim` is not an axis or `start..start + len` is not inside it.
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Layout> {
        const OP: &str = "Layout::narrow";
        self.check_axis(OP, "axis", dim)?;
        let size = self.shape[dim];
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(invalid(
                OP,
                format!(
                    "range {start}..{} is outside axis {dim} of size {size} (shape {})",
                    start.saturating_add(len),
                    self.shape
                ),
            ));
        }
        let mut shape = self.shape.clone();
        shape.dims_mut()[dim] = len;
        let mut offset = self.offset;
        if len > 0 {
            offset = start
                .checked_mul(self.strides[dim])
                .and_then(|o| o.checked_add(offset))
                .ok_or_else(|| {
                    invalid(
                        OP,
                        format!(
                            "the offset of entry {start} of axis {dim} (stride {}, offset {}) \
                             overflows usize",
                            self.strides[dim], self.offset
                        ),
                    )
                })?;
        }
        Ok(Layout::with(shape, copy_dims(&self.strides), offset))
    }

    /// Inserts an axis of size 1 at `dim` (`0..=rank`; no copy); an error past that.
    pub fn unsqueeze(&self, dim: usize) -> Result<Layout> {
        let stride = if dim < self.rank() {
            self.strides[dim].saturating_mul(self.shape[dim])
        } else {
            1
        };
        let (mut shape, mut strides) = (self.shape.clone(), copy_dims(&self.strides));
        shape.insert(dim, 1).map_err(|_| {
            invalid(
                "Layout::unsqueeze",
                format!(
                    "axis {dim} is past the end of a layout of shape {} (rank {}); valid \
                     positions are 0..={}",
                    self.shape,
                    self.rank(),
                    self.rank()
                ),
            )
        })?;
        strides.insert(dim, stride);
        Ok(Layout::with(shape, strides, self.offset))
    }

    /// Removes axis `dim`, which must have size 1 (no copy); an error when it is not
    /// an axis or its size is not 1.
    pub fn squeeze(&self, dim: usize) -> Result<Layout> {
        const OP: &str = "Layout::squeeze";
        self.check_axis(OP, "axis", dim)?;
        if self.shape[dim] != 1 {
            return Err(invalid(
                OP,
                format!(
                    "axis {dim} of shape {} has size {}, not 1",
                    self.shape, self.shape[dim]
                ),
            ));
        }
        let (mut shape, mut strides) = (self.shape.clone(), copy_dims(&self.strides));
        shape.remove(dim)?;
        strides.remove(dim);
        Ok(Layout::with(shape, strides, self.offset))
    }

    /// The same storage seen with another shape of the same element count, when
    /// that is possible without a copy (the layout is contiguous).
    pub fn reshape(&self, shape: Shape) -> Option<Layout> {
        let same_count = matches!(
            (shape.checked_numel(), self.shape.checked_numel()),
            (Some(a), Some(b)) if a == b
        );
        if !same_count || !self.contiguous {
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
        assert!(!l.transpose(0, 1).unwrap().is_contiguous());
        assert_eq!(l.transpose(0, 1).unwrap().required_len(), 6);
        assert!(
            Layout::contiguous(Shape::from([1, 3]))
                .transpose(0, 1)
                .unwrap()
                .is_contiguous()
        );
    }

    fn op_of(e: KernelError) -> &'static str {
        match e {
            KernelError::InvalidArgument { op, .. } => op,
            e => panic!("expected InvalidArgument, got {e:?}"),
        }
    }

    /// `Layout::new` checked its strides with a `debug_assert`
    /// (a panic in debug builds, a layout that kernels index out of bounds in
    /// release builds).
    #[test]
    fn layout_new_wrong_strides_is_an_error() {
        let e = Layout::new(Shape::from([2, 3]), &[3], 0).unwrap_err();
        assert!(e.to_string().contains("[2, 3]"), "{e}");
        assert_eq!(op_of(e), "Layout::new");
        assert!(Layout::new(Shape::scalar(), &[1], 0).is_err());
        let l = Layout::new(Shape::from([2, 3]), &[1, 2], 4).unwrap();
        assert_eq!((l.strides(), l.offset()), (&[1, 2][..], 4));
    }

    /// `transpose` and `narrow` (and `permute`, `unsqueeze`,
    /// `squeeze`) indexed the shape with their arguments and panicked out of range.
    #[test]
    fn layout_views_out_of_range_are_errors() {
        let l = Layout::contiguous(Shape::from([2, 3]));
        let e = l.transpose(0, 2).unwrap_err();
        assert!(e.to_string().contains("axis 2"), "{e}");
        assert_eq!(op_of(e), "Layout::transpose");
        assert_eq!(op_of(l.narrow(2, 0, 1).unwrap_err()), "Layout::narrow");
        let e = l.narrow(1, 2, 2).unwrap_err();
        assert!(e.to_string().contains("2..4"), "{e}");
        assert!(l.narrow(1, usize::MAX, 2).is_err());
        assert_eq!(op_of(l.permute(&[0, 0]).unwrap_err()), "Layout::permute");
        assert!(l.permute(&[0, 2]).is_err());
        assert!(l.permute(&[1]).is_err());
        assert_eq!(op_of(l.unsqueeze(3).unwrap_err()), "Layout::unsqueeze");
        assert_eq!(op_of(l.squeeze(2).unwrap_err()), "Layout::squeeze");
        assert!(l.squeeze(0).is_err()); // size 2, not 1
        // In range, they are the views they were.
        assert_eq!(l.narrow(1, 1, 2).unwrap().offset(), 1);
        assert_eq!(l.narrow(1, 3, 0).unwrap().shape(), &Shape::from([2, 0]));
        assert_eq!(l.permute(&[1, 0]).unwrap(), l.transpose(1, 0).unwrap());
        let u = l.unsqueeze(2).unwrap();
        assert_eq!(
            (u.shape(), u.strides()),
            (&Shape::from([2, 3, 1]), &[3, 1, 1][..])
        );
        assert_eq!(u.squeeze(2).unwrap(), l);
        // Shapes whose element counts overflow are not "the same count".
        let huge = Layout::contiguous(Shape::from([1 << 40, 1 << 40]));
        assert!(huge.reshape(Shape::from([1 << 41, 1 << 39])).is_none());
        // An offset that overflows is an error too.
        let far = Layout::new(Shape::from([3]), &[1 << 63], 0).unwrap();
        assert!(far.narrow(0, 2, 1).is_err());
    }
}
