//! The argument checks every backend makes before a kernel touches memory. The
//! autograd core validates shapes before it calls a backend, but the backends are
//! public API in their own right, and their unsafe code (gemm's raw pointers, device
//! launches) is sound only for views that fit their buffers and each other.

use crate::{KernelError, Layout, Result};

/// `Ok` when every element of the view `l` lies inside a buffer of `len` elements.
#[inline]
pub(crate) fn check_fits(len: usize, l: &Layout) -> Result<()> {
    let fits = if l.is_contiguous() {
        // The common case, kept short: `offset + numel`, where the element count
        // is checked too (a contiguous layout's size can wrap around as well).
        // (`numel` saturates: `usize::MAX` may be an overflow, which the general
        // test below sees.)
        match l.numel() {
            0 => true,
            usize::MAX => l.required_len() <= len,
            n => l.offset().checked_add(n).is_some_and(|end| end <= len),
        }
    } else {
        l.required_len() <= len
    };
    if fits {
        Ok(())
    } else {
        Err(past_the_end(len, l))
    }
}

#[cold]
#[inline(never)]
fn past_the_end(len: usize, l: &Layout) -> KernelError {
    KernelError::Layout(format!(
        "view {:?} (strides {:?}, offset {}) reaches past a buffer of {len} elements",
        l.shape(),
        l.strides(),
        l.offset()
    ))
}

/// `Ok` when the two views of one elementwise kernel (`what`) have the same shape.
#[inline]
pub(crate) fn check_same_shape(what: &str, a: &Layout, b: &Layout) -> Result<()> {
    if a.shape() == b.shape() {
        Ok(())
    } else {
        Err(KernelError::Layout(format!(
            "{what} between views of shapes {:?} and {:?}",
            a.shape(),
            b.shape()
        )))
    }
}

/// `Ok` unless a copy that does not accumulate (`accumulate` false) would write
/// some element of the destination view `dl` more than once: an axis of size > 1
/// with stride 0 (a broadcast view). Which write wins would be a race on a GPU
/// and an accident of the loop order on the CPU, so both backends refuse it;
/// accumulating copies add every write up and are fine.
pub(crate) fn check_writes_once(dl: &Layout, accumulate: bool) -> Result<()> {
    if accumulate || !dl.has_repeated_elements() || dl.shape().contains(&0) {
        return Ok(());
    }
    Err(KernelError::Layout(format!(
        "copy_into without accumulation into a view with repeated elements (shape {:?}, \
         strides {:?}): the copies would race for them; accumulate, or copy into a view \
         without stride-0 axes",
        dl.shape(),
        dl.strides()
    )))
}

/// `Ok` when every reduced axis is an axis of `l`.
pub(crate) fn check_axes(l: &Layout, axes: &[usize]) -> Result<()> {
    match axes.iter().find(|&&a| a >= l.rank()) {
        None => Ok(()),
        Some(&bad) => Err(KernelError::Layout(format!(
            "reduce over axis {bad} of a view of rank {}",
            l.rank()
        ))),
    }
}

/// `Ok` when the element count of the view `l` does not overflow `usize`: a
/// broadcast view (stride 0) can fit a one-element buffer whatever its shape, and a
/// kernel that walks it (`what`) must be able to count its elements.
pub(crate) fn check_numel(what: &str, l: &Layout) -> Result<()> {
    match l.shape().checked_numel() {
        Some(_) => Ok(()),
        None => Err(KernelError::Layout(format!(
            "{what} over a view of shape {:?}, whose element count overflows usize",
            l.shape()
        ))),
    }
}

/// The sizes of the batched product of `la` (`[batch.., m, k]`) and `lb`
/// (`[batch.., k, n]`): `(batch, m, k, n)`, where `batch` is the product of the
/// batch axes. An error when the views do not fit together (ranks, batch axes or
/// inner sizes differ) or when the result's element count overflows.
pub(crate) fn matmul_dims(la: &Layout, lb: &Layout) -> Result<(usize, usize, usize, usize)> {
    let (sa, sb) = (la.shape(), lb.shape());
    let r = sa.rank();
    let bad = |why: &str| {
        KernelError::Layout(format!(
            "matmul of views of shapes {sa:?} and {sb:?}: {why}"
        ))
    };
    if r < 2 || sb.rank() != r || sa[..r - 2] != sb[..r - 2] || sa[r - 1] != sb[r - 2] {
        return Err(bad(
            "expected [batch.., m, k] and [batch.., k, n] with the same batch axes",
        ));
    }
    let (m, k, n) = (sa[r - 2], sa[r - 1], sb[r - 1]);
    let batch = sa[..r - 2]
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad("the batch size overflows"))?;
    batch
        .checked_mul(m)
        .and_then(|x| x.checked_mul(n))
        .ok_or_else(|| bad("the result's size overflows"))?;
    Ok((batch, m, k, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    #[test]
    fn a_view_whose_extent_overflows_fits_no_buffer() {
        // (3 - 1) * 2^63 wraps to 0: a wrapping sum would say one element is enough.
        let l = Layout::new(Shape::from([3, 1]), &[1 << 63, 1], 0).unwrap();
        assert_eq!(l.required_len(), usize::MAX);
        assert!(check_fits(8, &l).is_err());
        // Empty views touch nothing, whatever their strides.
        let empty = Layout::new(Shape::from([0, 1 << 40]), &[1 << 60, 1 << 60], 5).unwrap();
        assert_eq!(empty.required_len(), 0);
        assert!(check_fits(0, &empty).is_ok());
    }

    #[test]
    fn matmul_views_must_agree() {
        let c = |d: &[usize]| Layout::contiguous(Shape::from(d));
        assert_eq!(
            matmul_dims(&c(&[2, 5, 7]), &c(&[2, 7, 3])).unwrap(),
            (2, 5, 7, 3)
        );
        for (a, b) in [
            (c(&[5, 7]), c(&[6, 3])),       // inner sizes
            (c(&[4, 5, 7]), c(&[1, 7, 3])), // batch axes (not broadcast yet)
            (c(&[5, 7]), c(&[1, 7, 3])),    // ranks
            (c(&[7]), c(&[7])),             // vectors
        ] {
            assert!(matmul_dims(&a, &b).is_err(), "{a:?} @ {b:?}");
        }
        // Broadcast operands whose product has more elements than a usize counts.
        let huge = 1usize << 32;
        let a = Layout::new(Shape::from([huge, 1]), &[0, 0], 0).unwrap();
        let b = Layout::new(Shape::from([1, huge]), &[0, 0], 0).unwrap();
        let e = matmul_dims(&a, &b).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }
}
