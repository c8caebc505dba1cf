//! PyTorch's rearranging ops, each a composition of the registered shape ops (so
//! differentiable to any order, on every device, with no kernel of its own):
//! [`split`], [`split_sizes`] and [`chunk`] (views made by `narrow`), [`flip`],
//! [`roll`], [`repeat`], [`tile`], [`expand`] and [`outer`].

use crate::{broadcast_to, concat, index_select, mul, narrow, reshape, unsqueeze};
use autograd_core::{Error, Result, Shape, Tensor, compute};

/// `x` cut along `axis` into pieces of `size` entries, the last one shorter when
/// `size` does not divide the axis (`torch.split(x, size, dim)`). Each piece is a
/// [`narrow`](mod@narrow) view; its gradient goes back to its own part of `x`.
///
/// Errors name `split`: `axis` out of range, `size` 0 on a non-empty axis.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[0.0f32; 10], [2, 5])?;
/// let parts = autograd_ops::split(&x, 2, -1)?;
/// let dims: Vec<&[usize]> = parts.iter().map(|p| p.dims()).collect();
/// assert_eq!(dims, [[2, 2], [2, 2], [2, 1]]);
/// # Ok(())
/// # }
/// ```
pub fn split(x: &Tensor, size: usize, axis: isize) -> Result<Vec<Tensor>> {
    const OP: &str = "split";
    let a = compute::normalize_axis(OP, axis, x)?;
    let n = x.dims()[a];
    if size == 0 && n > 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "pieces of size 0 cannot cover axis {axis} (of {n} entries) of shape {}; give a \
                 size of at least 1",
                x.shape()
            ),
        });
    }
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < n {
        sizes.push(size.min(n - start));
        start += size;
    }
    if n == 0 {
        // As torch: an empty axis splits into one empty piece.
        sizes.push(0);
    }
    pieces(OP, x, axis, &sizes)
}

/// `x` cut along `axis` into consecutive pieces of the given `sizes`, which must
/// add up to the axis' length (`torch.split(x, [s0, s1, ..], dim)`). Each piece is
/// a [`narrow`](mod@narrow) view.
///
/// Errors name `split`: `axis` out of range, sizes that do not add up to the axis.
pub fn split_sizes(x: &Tensor, sizes: &[usize], axis: isize) -> Result<Vec<Tensor>> {
    const OP: &str = "split";
    let a = compute::normalize_axis(OP, axis, x)?;
    let n = x.dims()[a];
    let total = sizes.iter().try_fold(0usize, |s, &d| s.checked_add(d));
    if total != Some(n) {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the sizes {sizes:?} add up to {}, but axis {axis} of shape {} has {n} entries; \
                 give sizes that add up to {n}",
                total.map_or_else(|| "more than a usize holds".into(), |t| t.to_string()),
                x.shape()
            ),
        });
    }
    pieces(OP, x, axis, sizes)
}

/// The narrow views of `sizes` consecutive entries of `axis`.
fn pieces(op: &'static str, x: &Tensor, axis: isize, sizes: &[usize]) -> Result<Vec<Tensor>> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&len| {
            let piece = narrow(x, axis, start, len).map_err(|e| e.in_op(op));
            start += len;
            piece
        })
        .collect()
}

/// `x` cut along `axis` into at most `chunks` pieces of `⌈n / chunks⌉` entries
/// (the last one shorter), as `torch.chunk`: like PyTorch, fewer pieces come back
/// when the rounded-up size covers the axis sooner (`chunk` of 6 entries into 4
/// gives 3 pieces of 2). Each piece is a [`narrow`](mod@narrow) view.
///
/// Errors name `chunk`: `axis` out of range, `chunks` 0.
pub fn chunk(x: &Tensor, chunks: usize, axis: isize) -> Result<Vec<Tensor>> {
    const OP: &str = "chunk";
    let a = compute::normalize_axis(OP, axis, x)?;
    if chunks == 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "0 chunks asked of axis {axis} of shape {}; ask for at least 1",
                x.shape()
            ),
        });
    }
    let n = x.dims()[a];
    split(x, n.div_ceil(chunks).max(1), axis).map_err(|e| e.in_op(OP))
}

/// The axes given, each resolved (negative counts from the end) and checked to
/// appear once.
fn distinct_axes(op: &'static str, axes: &[isize], shape: &Shape) -> Result<Vec<usize>> {
    let mut seen = Vec::with_capacity(axes.len());
    for &axis in axes {
        let a = compute::normalize_axis_of(op, axis, shape)?;
        if seen.contains(&a) {
            return Err(Error::InvalidArgument {
                op,
                msg: format!(
                    "axis {a} appears twice in {axes:?} (shape {shape}); name each axis once"
                ),
            });
        }
        seen.push(a);
    }
    Ok(seen)
}

/// `x` with the order of its entries reversed along each of `axes` (`torch.flip`;
/// negative axes count from the end). Recorded as an
/// [`index_select`](mod@index_select) per axis with the reversed positions (a
/// copy, as PyTorch's); the gradient is flipped back.
///
/// Errors name `flip`: an axis out of range or given twice.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
/// assert_eq!(autograd_ops::flip(&x, &[1])?.to_vec::<f32>()?, [2.0, 1.0, 4.0, 3.0]);
/// # Ok(())
/// # }
/// ```
pub fn flip(x: &Tensor, axes: &[isize]) -> Result<Tensor> {
    const OP: &str = "flip";
    let axes = distinct_axes(OP, axes, x.shape())?;
    let mut y = x.clone();
    for a in axes {
        let n = x.dims()[a];
        if n < 2 {
            continue;
        }
        let reversed: Vec<i64> = (0..n as i64).rev().collect();
        let index = Tensor::from_vec(reversed, [n])?;
        y = index_select(&y, &index, a as isize).map_err(|e| e.in_op(OP))?;
    }
    Ok(y)
}

/// `x` rolled along `axes`: entry `i` of axis `axes[k]` moves to `(i + shifts[k])
/// mod n`, entries pushed off one end coming back at the other (`torch.roll`;
/// negative shifts roll the other way). With no axes, `x` is rolled as one flat
/// vector and given its shape back, as PyTorch does. Recorded as two
/// [`narrow`](mod@narrow)s and a [`concat`](mod@concat) per axis.
///
/// Errors name `roll`: `shifts` and `axes` of different lengths (with axes
/// given), more than one shift without axes, an axis out of range.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [4])?;
/// assert_eq!(autograd_ops::roll(&x, &[1], &[0])?.to_vec::<f32>()?, [4.0, 1.0, 2.0, 3.0]);
/// # Ok(())
/// # }
/// ```
pub fn roll(x: &Tensor, shifts: &[isize], axes: &[isize]) -> Result<Tensor> {
    const OP: &str = "roll";
    if axes.is_empty() {
        let [shift] = shifts else {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "without axes, roll takes one shift (the tensor rolled flat), got shifts \
                     {shifts:?}; give one axis per shift"
                ),
            });
        };
        let flat = reshape(x, Shape::from([x.numel()])).map_err(|e| e.in_op(OP))?;
        let rolled = roll(&flat, &[*shift], &[0])?;
        return reshape(&rolled, x.shape().clone()).map_err(|e| e.in_op(OP));
    }
    if shifts.len() != axes.len() {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "{} shifts {shifts:?} for {} axes {axes:?}; give one shift per axis",
                shifts.len(),
                axes.len()
            ),
        });
    }
    let mut y = x.clone();
    for (&shift, &axis) in shifts.iter().zip(axes) {
        let a = compute::normalize_axis(OP, axis, x)?;
        let n = x.dims()[a];
        if n == 0 {
            continue;
        }
        let s = shift.rem_euclid(n as isize) as usize;
        if s == 0 {
            continue;
        }
        let run = || {
            let tail = narrow(&y, axis, n - s, s)?;
            let head = narrow(&y, axis, 0, n - s)?;
            concat(&tail, &head, axis)
        };
        y = run().map_err(|e| e.in_op(OP))?;
    }
    Ok(y)
}

/// `x` repeated `repeats[k]` times along each axis (PyTorch's `Tensor.repeat`):
/// `repeats` has at least `x`'s rank, and `x` is first given leading axes of size 1
/// up to that rank; axis `k` of the result has `repeats[k] · dims[k]` entries, the
/// whole of `x` laid out again and again (not each entry repeated: that is
/// `repeat_interleave`). Recorded as a [`reshape`](mod@reshape), a
/// [`broadcast_to`](mod@broadcast_to) and a reshape: the gradient sums the copies.
///
/// Errors name `repeat`: fewer repeats than `x` has axes, a size that overflows.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[1.0f32, 2.0], [2])?;
/// let y = autograd_ops::repeat(&x, &[2, 2])?;
/// assert_eq!(y.dims(), [2, 4]);
/// assert_eq!(y.to_vec::<f32>()?, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
/// # Ok(())
/// # }
/// ```
pub fn repeat(x: &Tensor, repeats: &[usize]) -> Result<Tensor> {
    const OP: &str = "repeat";
    if repeats.len() < x.rank() {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "{} repeats {repeats:?} for shape {} of rank {}; give at least one per axis \
                 (more add leading axes)",
                repeats.len(),
                x.shape(),
                x.rank()
            ),
        });
    }
    let lead = repeats.len() - x.rank();
    let dims: Vec<usize> = std::iter::repeat_n(1, lead)
        .chain(x.dims().iter().copied())
        .collect();
    // [1, d0, 1, d1, ..] broadcast to [r0, d0, r1, d1, ..], merged to [r0·d0, ..].
    let spread: Vec<usize> = dims.iter().flat_map(|&d| [1, d]).collect();
    let wide: Vec<usize> = dims
        .iter()
        .zip(repeats)
        .flat_map(|(&d, &r)| [r, d])
        .collect();
    let out = dims
        .iter()
        .zip(repeats)
        .map(|(&d, &r)| d.checked_mul(r))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| Error::Shape {
            op: OP,
            msg: format!(
                "shape {} repeated {repeats:?} times has an axis larger than a usize counts",
                x.shape()
            ),
        })?;
    let run = || {
        let y = reshape(x, Shape::from(spread))?;
        let y = broadcast_to(&y, Shape::from(wide))?;
        reshape(&y, Shape::from(out))
    };
    run().map_err(|e| e.in_op(OP))
}

/// `x` repeated `reps[k]` times along each axis, as `torch.tile`: the same as
/// [`repeat`], except that fewer `reps` than axes is allowed (`reps` is given
/// leading 1s up to `x`'s rank).
///
/// Errors name `tile`: a size that overflows.
pub fn tile(x: &Tensor, reps: &[usize]) -> Result<Tensor> {
    let lead = x.rank().saturating_sub(reps.len());
    let full: Vec<usize> = std::iter::repeat_n(1, lead)
        .chain(reps.iter().copied())
        .collect();
    repeat(x, &full).map_err(|e| e.in_op("tile"))
}

/// `x` viewed with its axes of size 1 repeated to `sizes` (PyTorch's
/// `Tensor.expand`): `sizes` has at least `x`'s rank; a size `-1` keeps the axis as
/// it is; new leading axes may be added (their size given, not `-1`). A view
/// (stride 0, nothing copied), recorded as a [`broadcast_to`](mod@broadcast_to):
/// the gradient sums the copies.
///
/// Errors name `expand`: fewer sizes than axes, a `-1` for a new axis, a negative
/// size other than `-1`, a size other than the axis' own for an axis not of size 1.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[1.0f32, 2.0], [2, 1])?;
/// assert_eq!(autograd_ops::expand(&x, &[3, -1, 4])?.dims(), [3, 2, 4]);
/// # Ok(())
/// # }
/// ```
pub fn expand(x: &Tensor, sizes: &[isize]) -> Result<Tensor> {
    const OP: &str = "expand";
    let bad = |msg: String| Error::Shape { op: OP, msg };
    if sizes.len() < x.rank() {
        return Err(bad(format!(
            "{} sizes {sizes:?} for shape {} of rank {}; give one per axis (more add leading \
             axes)",
            sizes.len(),
            x.shape(),
            x.rank()
        )));
    }
    let lead = sizes.len() - x.rank();
    let mut out = Vec::with_capacity(sizes.len());
    for (k, &s) in sizes.iter().enumerate() {
        let own = k.checked_sub(lead).map(|i| x.dims()[i]);
        let size = match (s, own) {
            (-1, Some(d)) => d,
            (-1, None) => {
                return Err(bad(format!(
                    "size -1 at axis {k} of {sizes:?}: that axis is new (shape {} has rank {}), \
                     so there is no size to keep; give its size",
                    x.shape(),
                    x.rank()
                )));
            }
            (s, _) if s < 0 => {
                return Err(bad(format!(
                    "size {s} at axis {k} of {sizes:?}; sizes are at least 0, or -1 to keep the \
                     axis"
                )));
            }
            (s, Some(d)) if d != 1 && s as usize != d => {
                return Err(bad(format!(
                    "axis {} of shape {} has {d} entries and cannot expand to {s} (only axes of \
                     size 1 expand); give {d} or -1 there",
                    k - lead,
                    x.shape()
                )));
            }
            (s, _) => s as usize,
        };
        out.push(size);
    }
    broadcast_to(x, Shape::from(out)).map_err(|e| e.in_op(OP))
}

/// The outer product of two vectors (`torch.outer`): `out[i, j] = a[i] · b[j]`, of
/// shape `[len a, len b]`. Recorded as an [`unsqueeze`](mod@unsqueeze) of each and
/// a broadcasting [`mul`](mod@mul).
///
/// Errors name `outer`: an operand that is not a vector, dtypes or devices that
/// differ.
pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    const OP: &str = "outer";
    if a.rank() != 1 || b.rank() != 1 {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "takes two vectors, got shapes {} and {}; flatten them first (`flatten(0, -1)`)",
                a.shape(),
                b.shape()
            ),
        });
    }
    let run = || mul(&unsqueeze(a, 1)?, &unsqueeze(b, 0)?);
    run().map_err(|e| e.in_op(OP))
}
