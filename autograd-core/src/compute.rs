//! Unrecorded computation on tensors: the layer op definitions are written in.
//!
//! Nothing here touches the graph. An op's `forward` calls these functions to
//! compute its output; the recording happens around it. They validate shapes,
//! dtypes and devices (returning errors that name the op), then call the backend of
//! the device the operands live on. View functions (`reshape` of a contiguous
//! tensor, `transpose`, `broadcast_to`, `narrow`, ...) share the input's storage.

use crate::fusion::{self, Elementwise};
pub use crate::transfer::to_device;
use crate::{DType, Error, Result, Shape, Tensor};
use autograd_kernels::program::FusedOp;
use autograd_kernels::{BinaryOp, Layout, ReduceOp, UnaryOp, broadcast_shapes};
use smallvec::smallvec;
use std::borrow::Cow;

/// Resolves a possibly negative axis against `x`'s rank (`-1` is the last axis).
pub fn normalize_axis(op: &'static str, axis: isize, x: &Tensor) -> Result<usize> {
    normalize_axis_of(op, axis, x.shape())
}

/// Resolves a possibly negative axis against the rank of `shape`.
pub fn normalize_axis_of(op: &'static str, axis: isize, shape: &Shape) -> Result<usize> {
    let rank = shape.rank() as isize;
    let a = if axis < 0 { axis + rank } else { axis };
    if a < 0 || a >= rank {
        return Err(Error::AxisOutOfRange {
            op,
            axis,
            rank: shape.rank(),
            shape: shape.clone(),
        });
    }
    Ok(a as usize)
}

/// An axis given as `usize`, as the signed number errors report (saturated: a
/// `usize` beyond `isize::MAX` must not wrap around to a negative axis).
fn given_axis(dim: usize) -> isize {
    isize::try_from(dim).unwrap_or(isize::MAX)
}

pub use crate::storage::check_size;

pub(crate) fn check_same_kind(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    check_same_device(op, a, b)?;
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: a.dtype(),
            rhs: b.dtype(),
        });
    }
    Ok(())
}

pub(crate) fn check_same_device(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() != b.device() {
        return Err(Error::DeviceMismatch {
            op,
            lhs: a.device(),
            rhs: b.device(),
        });
    }
    Ok(())
}

/// `a` and `b` converted to their common dtype (PyTorch's `result_type`, see
/// [`DType::promote`]); a division of two integer or boolean tensors divides in
/// `f32`, as PyTorch's true division does.
#[cold]
#[inline(never)]
fn promoted(a: &Tensor, b: &Tensor, op: BinaryOp) -> Result<(Tensor, Tensor)> {
    let mut d = DType::promote(a.dtype(), b.dtype());
    if op == BinaryOp::Div && !d.is_float() {
        d = DType::F32;
    }
    Ok((cast(a, d)?, cast(b, d)?))
}

/// True when `op` over a non-floating tensor needs a floating result (a
/// fraction, a division, a power): the tensor is then computed in `f32`.
fn wants_float(op: UnaryOp) -> bool {
    match op {
        UnaryOp::Neg | UnaryOp::Copy | UnaryOp::Fill(_) => false,
        UnaryOp::AddScalar(s) | UnaryOp::MulScalar(s) => s.fract() != 0.0 || !s.is_finite(),
        _ => true,
    }
}

/// `op(x)` elementwise.
pub fn unary(x: &Tensor, op: UnaryOp) -> Result<Tensor> {
    if !x.dtype().is_float() && wants_float(op) {
        return unary(&cast(x, DType::F32)?, op);
    }
    if fusion::defers(Elementwise::Unary(op), x.numel()) {
        let inputs = smallvec![(x.storage_arc(), x.layout().clone())];
        if let Some(s) = fusion::defer(FusedOp::Unary(op), inputs, x.shape(), x.dtype()) {
            return Ok(Tensor::from_storage(s, x.shape().clone()));
        }
    }
    let storage = x.storage().unary(x.layout(), op)?;
    Ok(Tensor::from_storage(storage, x.shape().clone()))
}

/// `op(a, b)` elementwise with NumPy broadcasting.
pub fn binary(a: &Tensor, b: &Tensor, op: BinaryOp) -> Result<Tensor> {
    check_same_device(op.name(), a, b)?;
    if a.dtype() != b.dtype() || (op == BinaryOp::Div && !a.dtype().is_float()) {
        let (a, b) = promoted(a, b, op)?;
        return binary(&a, &b, op);
    }
    if a.shape() == b.shape() {
        if fusion::defers(Elementwise::Binary, a.numel())
            && let Some(t) = defer_binary(a, a.layout(), b, b.layout(), a.shape(), op)
        {
            return Ok(t);
        }
        let storage = a
            .storage()
            .binary(a.layout(), &b.storage(), b.layout(), op)?;
        return Ok(Tensor::from_storage(storage, a.shape().clone()));
    }
    let shape = broadcast_shapes(a.shape(), b.shape()).ok_or_else(|| Error::Broadcast {
        op: op.name(),
        lhs: a.shape().clone(),
        rhs: b.shape().clone(),
    })?;
    check_size(op.name(), &shape, a.dtype())?;
    let la = broadcast_layout(a, &shape)?;
    let lb = broadcast_layout(b, &shape)?;
    if fusion::defers(Elementwise::Binary, shape.numel())
        && let Some(t) = defer_binary(a, &la, b, &lb, &shape, op)
    {
        return Ok(t);
    }
    let storage = a.storage().binary(&la, &b.storage(), &lb, op)?;
    Ok(Tensor::from_storage(storage, shape))
}

/// `op(a, b)` over `a` and `b` viewed as `la` and `lb` (of `shape`), deferred,
/// once [`fusion::defers`] said so (the callers ask inline, so small tensors pay
/// a comparison and no call).
#[inline(never)]
fn defer_binary(
    a: &Tensor,
    la: &Layout,
    b: &Tensor,
    lb: &Layout,
    shape: &Shape,
    op: BinaryOp,
) -> Option<Tensor> {
    let inputs = smallvec![(a.storage_arc(), la.clone()), (b.storage_arc(), lb.clone())];
    let s = fusion::defer(FusedOp::Binary(op), inputs, shape, a.dtype())?;
    Some(Tensor::from_storage(s, shape.clone()))
}

/// `op(a, b)` written into `a`'s buffer, when `a` can take it: `b` has its dtype
/// and device and broadcasts to its shape, `a` is contiguous, and nobody else can
/// see its buffer (see `Tensor::writable_storage`; `a` then leaves any graph and
/// gets a new id). Unrecorded: the caller checks that the op would not be
/// recorded. `Err(a)`, unchanged, when `a` cannot take it.
pub(crate) fn binary_in_place(
    mut a: Tensor,
    b: &Tensor,
    op: BinaryOp,
) -> std::result::Result<Result<Tensor>, Tensor> {
    if a.dtype() != b.dtype() || a.device() != b.device() || !a.layout().is_contiguous() {
        return Err(a);
    }
    // A deferred `a` would be computed here only to be written over: the op
    // defers instead, and fuses with its chain. A deferred `b` is computed first
    // (its recipe may read `a`'s buffer, which is then free to write).
    if a.storage().is_deferred() {
        return Err(a);
    }
    let bs = b.storage();
    if let Err(e) = bs.data() {
        return Ok(Err(e));
    }
    // (The layout as it is for equal shapes: gradient accumulation, on every
    // backward's hot path, needs no new one.)
    let lb = if a.shape() == b.shape() {
        Cow::Borrowed(b.layout())
    } else {
        match b.layout().broadcast_to(a.shape()) {
            Some(l) => Cow::Owned(l),
            None => return Err(a),
        }
    };
    let Some((storage, la)) = a.writable_storage() else {
        return Err(a);
    };
    let done = storage.binary_assign(la, &bs, &lb, op);
    drop(bs);
    Ok(done.map(|()| a))
}

pub(crate) fn broadcast_layout(x: &Tensor, shape: &Shape) -> Result<Layout> {
    x.layout()
        .broadcast_to(shape)
        .ok_or_else(|| Error::Broadcast {
            op: "broadcast_to",
            lhs: x.shape().clone(),
            rhs: shape.clone(),
        })
}

/// Reduces `axes` (each in `0..rank`, any order, no repeats) with `op`; with
/// `keepdim` the reduced axes stay as size 1, else they are removed.
pub fn reduce(x: &Tensor, op: ReduceOp, axes: &[usize], keepdim: bool) -> Result<Tensor> {
    let mut sorted: Vec<usize> = axes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if let Some(&bad) = sorted.iter().find(|&&a| a >= x.rank()) {
        return Err(Error::AxisOutOfRange {
            op: op.name(),
            axis: given_axis(bad),
            rank: x.rank(),
            shape: x.shape().clone(),
        });
    }
    if op != ReduceOp::Sum && sorted.iter().any(|&a| x.dims()[a] == 0) {
        return Err(Error::InvalidArgument {
            op: op.name(),
            msg: format!(
                "cannot take the {} over an empty axis of shape {}",
                op.name(),
                x.shape()
            ),
        });
    }
    // A sum of every element of a deferred chain is deferred too: when read, it
    // runs the chain with the sum at its end (nothing stored).
    let whole =
        x.layout().is_contiguous() && x.layout().offset() == 0 && x.numel() == x.storage().len();
    let fused = (op == ReduceOp::Sum && sorted.len() == x.rank() && whole)
        .then(|| fusion::sum_all(&x.storage()))
        .flatten();
    let storage = match fused {
        Some(s) => s,
        None => x.storage().reduce(x.layout(), op, &sorted)?,
    };
    let mut shape = x.shape().clone();
    for &a in &sorted {
        shape.dims_mut()[a] = 1;
    }
    let out = Tensor::from_storage(storage, shape);
    if keepdim {
        return Ok(out);
    }
    let kept: Shape = x
        .dims()
        .iter()
        .enumerate()
        .filter(|(i, _)| !sorted.contains(i))
        .map(|(_, &d)| d)
        .collect();
    reshape(&out, kept)
}

/// Sums a gradient of a broadcast result back to the shape of the operand that was
/// broadcast: first the leading axes the operand did not have, then the axes where
/// it had size 1 (`[4,3,5] -> [3,1]` sums axis 0, then axis 2).
pub fn sum_to_shape(x: &Tensor, target: &Shape) -> Result<Tensor> {
    if x.shape() == target {
        return Ok(x.clone());
    }
    let axes = sum_to_shape_axes(x.shape(), target).ok_or_else(|| Error::Shape {
        op: "sum_to_shape",
        msg: format!("a tensor of shape {} cannot be summed to shape {target}, which does not broadcast to it", x.shape()),
    })?;
    let summed = reduce(x, ReduceOp::Sum, &axes, true)?;
    reshape(&summed, target.clone())
}

/// The axes of `from` that [`sum_to_shape`] sums to reach `to`, or `None` if `to`
/// does not broadcast to `from`.
pub fn sum_to_shape_axes(from: &Shape, to: &Shape) -> Option<Vec<usize>> {
    if to.rank() > from.rank() {
        return None;
    }
    let lead = from.rank() - to.rank();
    let mut axes: Vec<usize> = (0..lead).collect();
    for (i, &t) in to.iter().enumerate() {
        let f = from[lead + i];
        if t == f {
            continue;
        }
        if t != 1 {
            return None;
        }
        axes.push(lead + i);
    }
    Some(axes)
}

/// Matrix product over the last two axes, broadcasting the leading (batch) axes:
/// `[.., m, k] @ [.., k, n] -> [.., m, n]`.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_kind("matmul", a, b)?;
    if a.rank() < 2 || b.rank() < 2 {
        return Err(Error::Shape {
            op: "matmul",
            msg: format!(
                "operands need at least 2 axes, got {} @ {}; unsqueeze a vector into a [1, n] or [n, 1] matrix",
                a.shape(),
                b.shape()
            ),
        });
    }
    let (ra, rb) = (a.rank(), b.rank());
    let (m, k) = (a.dims()[ra - 2], a.dims()[ra - 1]);
    let (k2, n) = (b.dims()[rb - 2], b.dims()[rb - 1]);
    if k != k2 {
        return Err(Error::Shape {
            op: "matmul",
            msg: format!(
                "{} @ {}: the last axis of the left operand ({k}) must equal the second-to-last axis of the right operand ({k2})",
                a.shape(),
                b.shape()
            ),
        });
    }
    let batch_a: Shape = a.dims()[..ra - 2].into();
    let batch_b: Shape = b.dims()[..rb - 2].into();
    let batch = broadcast_shapes(&batch_a, &batch_b).ok_or_else(|| Error::Shape {
        op: "matmul",
        msg: format!(
            "{} @ {}: batch axes {batch_a} and {batch_b} cannot be broadcast together",
            a.shape(),
            b.shape()
        ),
    })?;
    let with = |mut s: Shape, x: usize, y: usize| {
        s.push(x);
        s.push(y);
        s
    };
    check_size("matmul", &with(batch.clone(), m, k), a.dtype())?;
    check_size("matmul", &with(batch.clone(), k, n), a.dtype())?;
    check_size("matmul", &with(batch.clone(), m, n), a.dtype())?;
    let la = broadcast_layout(a, &with(batch.clone(), m, k))?;
    let lb = broadcast_layout(b, &with(batch.clone(), k, n))?;
    let storage = a.storage().matmul(&la, &b.storage(), &lb)?;
    Ok(Tensor::from_storage(storage, with(batch, m, n)))
}

/// A contiguous copy of `x` (or `x` itself when it already is contiguous).
pub fn contiguous(x: &Tensor) -> Result<Tensor> {
    if x.is_contiguous() {
        return Ok(x.clone());
    }
    unary(x, UnaryOp::Copy)
}

/// `x` with another shape of the same element count (a view when `x` is contiguous).
pub fn reshape(x: &Tensor, shape: impl Into<Shape>) -> Result<Tensor> {
    let shape = shape.into();
    check_size("reshape", &shape, x.dtype())?;
    if shape.numel() != x.numel() {
        return Err(Error::Shape {
            op: "reshape",
            msg: format!(
                "cannot reshape {} ({} elements) into {shape} ({} elements); the element count must stay the same",
                x.shape(),
                x.numel(),
                shape.numel()
            ),
        });
    }
    if let Some(l) = x.layout().reshape(shape.clone()) {
        return Ok(x.with_layout(l));
    }
    let c = contiguous(x)?;
    Ok(c.with_layout(Layout::contiguous(shape)))
}

/// Swaps axes `a` and `b` (a view).
pub fn transpose(x: &Tensor, a: usize, b: usize) -> Result<Tensor> {
    if a >= x.rank() || b >= x.rank() {
        return Err(Error::AxisOutOfRange {
            op: "transpose",
            axis: given_axis(a.max(b)),
            rank: x.rank(),
            shape: x.shape().clone(),
        });
    }
    Ok(x.with_layout(x.layout().transpose(a, b)?))
}

/// Reorders the axes: axis `i` of the result is axis `perm[i]` of `x` (a view).
pub fn permute(x: &Tensor, perm: &[usize]) -> Result<Tensor> {
    let mut seen = vec![false; x.rank()];
    let valid = perm.len() == x.rank()
        && perm
            .iter()
            .all(|&p| p < x.rank() && !std::mem::replace(&mut seen[p], true));
    if !valid {
        return Err(Error::InvalidArgument {
            op: "permute",
            msg: format!(
                "{perm:?} is not a permutation of the {} axes of a tensor of shape {}",
                x.rank(),
                x.shape()
            ),
        });
    }
    Ok(x.with_layout(x.layout().permute(perm)?))
}

/// `x` seen with the larger shape `shape` under broadcasting (a view).
pub fn broadcast_to(x: &Tensor, shape: impl Into<Shape>) -> Result<Tensor> {
    let shape = shape.into();
    check_size("broadcast_to", &shape, x.dtype())?;
    Ok(x.with_layout(broadcast_layout(x, &shape)?))
}

/// Entries `start..start + len` of axis `dim` (a view).
pub fn narrow(x: &Tensor, dim: usize, start: usize, len: usize) -> Result<Tensor> {
    if dim >= x.rank() {
        return Err(Error::AxisOutOfRange {
            op: "narrow",
            axis: given_axis(dim),
            rank: x.rank(),
            shape: x.shape().clone(),
        });
    }
    let size = x.dims()[dim];
    if start.checked_add(len).is_none_or(|end| end > size) {
        return Err(Error::InvalidArgument {
            op: "narrow",
            msg: format!(
                "start {start} with length {len} reaches past the end of axis {dim}, of size \
                 {size} (shape {}); pick start + length <= {size}",
                x.shape()
            ),
        });
    }
    Ok(x.with_layout(x.layout().narrow(dim, start, len)?))
}

/// Inserts an axis of size 1 at `dim` (`0..=rank`; a view).
pub fn unsqueeze(x: &Tensor, dim: usize) -> Result<Tensor> {
    if dim > x.rank() {
        return Err(Error::AxisOutOfRange {
            op: "unsqueeze",
            axis: given_axis(dim),
            rank: x.rank() + 1,
            shape: x.shape().clone(),
        });
    }
    Ok(x.with_layout(x.layout().unsqueeze(dim)?))
}

/// Removes axis `dim`, which must have size 1 (a view).
pub fn squeeze(x: &Tensor, dim: usize) -> Result<Tensor> {
    if dim >= x.rank() {
        return Err(Error::AxisOutOfRange {
            op: "squeeze",
            axis: given_axis(dim),
            rank: x.rank(),
            shape: x.shape().clone(),
        });
    }
    if x.dims()[dim] != 1 {
        return Err(Error::Shape {
            op: "squeeze",
            msg: format!(
                "axis {dim} of shape {} has size {}, not 1",
                x.shape(),
                x.dims()[dim]
            ),
        });
    }
    Ok(x.with_layout(x.layout().squeeze(dim)?))
}

/// `x` converted to `dtype` (a copy; `x` itself when it already has that dtype).
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    let storage = x.storage().cast(x.layout(), dtype)?;
    Ok(Tensor::from_storage(storage, x.shape().clone()))
}

/// Tensors joined along axis `dim`; all other axes must match.
pub fn concat(xs: &[&Tensor], dim: usize) -> Result<Tensor> {
    let first = *xs.first().ok_or_else(|| Error::InvalidArgument {
        op: "concat",
        msg: "needs at least one tensor".into(),
    })?;
    if dim >= first.rank() {
        return Err(Error::AxisOutOfRange {
            op: "concat",
            axis: given_axis(dim),
            rank: first.rank(),
            shape: first.shape().clone(),
        });
    }
    // Tensors of several dtypes join in their common one, as PyTorch's `cat`.
    let common = xs
        .iter()
        .fold(first.dtype(), |d, x| DType::promote(d, x.dtype()));
    if xs.iter().any(|x| x.dtype() != common) {
        let cast = xs
            .iter()
            .map(|x| cast(x, common))
            .collect::<Result<Vec<_>>>()?;
        return concat(&cast.iter().collect::<Vec<_>>(), dim);
    }
    let mut shape = first.shape().clone();
    shape.dims_mut()[dim] = 0;
    for x in xs {
        check_same_kind("concat", first, x)?;
        let same_rest = x.rank() == first.rank()
            && (0..x.rank()).all(|i| i == dim || x.dims()[i] == first.dims()[i]);
        if !same_rest {
            return Err(Error::Shape {
                op: "concat",
                msg: format!(
                    "shapes {} and {} differ outside axis {dim}",
                    first.shape(),
                    x.shape()
                ),
            });
        }
        shape.dims_mut()[dim] =
            shape[dim]
                .checked_add(x.dims()[dim])
                .ok_or_else(|| Error::Shape {
                    op: "concat",
                    msg: format!("the sizes of axis {dim} add up past usize::MAX"),
                })?;
    }
    check_size("concat", &shape, first.dtype())?;
    let mut storage = first
        .storage()
        .filled_like("concat", &shape, first.dtype(), 0.0)?;
    let full = Layout::contiguous(shape.clone());
    let mut start = 0;
    for x in xs {
        let len = x.dims()[dim];
        x.storage().copy_into(
            x.layout(),
            &mut storage,
            &full.narrow(dim, start, len)?,
            false,
        )?;
        start += len;
    }
    Ok(Tensor::from_storage(storage, shape))
}

/// A zero tensor of `shape` with `x` written at entries `start..` of axis `dim`:
/// the gradient of [`narrow`].
///
/// `x` must have `shape`'s rank and sizes, except along `dim`, where its entries
/// must fit from `start` on; anything else is an [`Error::Shape`] naming both shapes.
pub fn pad_narrow(x: &Tensor, shape: &Shape, dim: usize, start: usize) -> Result<Tensor> {
    check_size("pad_narrow", shape, x.dtype())?;
    // Checked in this order: `x.dims()[dim]` is read only once `dim` is an axis of x.
    let fits = dim < shape.rank()
        && x.rank() == shape.rank()
        && (0..shape.rank()).all(|i| i == dim || x.dims()[i] == shape[i])
        && start
            .checked_add(x.dims()[dim])
            .is_some_and(|end| end <= shape[dim]);
    if !fits {
        return Err(Error::Shape {
            op: "pad_narrow",
            msg: format!(
                "{} does not fit into {shape} at offset {start} of axis {dim}: x needs the \
                 result's rank and sizes except along axis {dim}, where it must fit from \
                 entry {start}",
                x.shape()
            ),
        });
    }
    let mut storage = x
        .storage()
        .filled_like("pad_narrow", shape, x.dtype(), 0.0)?;
    let full = Layout::contiguous(shape.clone());
    x.storage().copy_into(
        x.layout(),
        &mut storage,
        &full.narrow(dim, start, x.dims()[dim])?,
        false,
    )?;
    Ok(Tensor::from_storage(storage, shape.clone()))
}

/// Reads an index tensor (`i64`, `i32` or `u8`, as PyTorch's indexing ops take)
/// into positions along an axis of size `size`. A floating or boolean index
/// tensor is an error that says how to convert it.
pub fn indices(op: &'static str, index: &Tensor, size: usize) -> Result<Vec<usize>> {
    if !index.dtype().is_integer() {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "indices must be an integer tensor (i64, as PyTorch's), but this one (shape {}) \
                 is {}; convert it with `.to_dtype(DType::I64)`, or build it with \
                 `Tensor::from_vec(vec![..i64 values..], shape)`",
                index.shape(),
                index.dtype()
            ),
        });
    }
    let values = index.to_vec::<i64>()?;
    values
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .ok()
                .filter(|&i| i < size)
                .ok_or_else(|| Error::InvalidArgument {
                    op,
                    msg: format!("index {v} is out of range 0..{size}"),
                })
        })
        .collect()
}

/// The entries `indices` of axis `dim`, in that order (repeats allowed).
pub fn index_select(x: &Tensor, dim: usize, indices: &[usize]) -> Result<Tensor> {
    if dim >= x.rank() {
        return Err(Error::AxisOutOfRange {
            op: "index_select",
            axis: given_axis(dim),
            rank: x.rank(),
            shape: x.shape().clone(),
        });
    }
    let size = x.dims()[dim];
    if let Some(bad) = indices.iter().find(|&&i| i >= size) {
        return Err(Error::InvalidArgument {
            op: "index_select",
            msg: format!("index {bad} is out of range for axis {dim} of size {size}"),
        });
    }
    let mut shape = x.shape().clone();
    shape.dims_mut()[dim] = indices.len();
    check_size("index_select", &shape, x.dtype())?;
    let mut storage = x
        .storage()
        .filled_like("index_select", &shape, x.dtype(), 0.0)?;
    let full = Layout::contiguous(shape.clone());
    for (pos, &i) in indices.iter().enumerate() {
        x.storage().copy_into(
            &x.layout().narrow(dim, i, 1)?,
            &mut storage,
            &full.narrow(dim, pos, 1)?,
            false,
        )?;
    }
    Ok(Tensor::from_storage(storage, shape))
}

/// A zero tensor of `shape` with entry `pos` of `src` (along `dim`) added at entry
/// `indices[pos]`: the gradient of [`index_select`] (repeated indices add up). `src`
/// has `shape` except along `dim`, where it has `indices.len()` entries; each index
/// is below `shape[dim]`.
pub fn index_add(src: &Tensor, shape: &Shape, dim: usize, indices: &[usize]) -> Result<Tensor> {
    if dim >= shape.rank() {
        return Err(Error::AxisOutOfRange {
            op: "index_add",
            axis: given_axis(dim),
            rank: shape.rank(),
            shape: shape.clone(),
        });
    }
    let fits = src.rank() == shape.rank()
        && (0..shape.rank())
            .all(|i| src.dims()[i] == if i == dim { indices.len() } else { shape[i] });
    if !fits {
        return Err(Error::Shape {
            op: "index_add",
            msg: format!(
                "src of shape {} does not fit the result's shape {shape} with {} indices along \
                 axis {dim}: src must have that shape with {} entries along that axis",
                src.shape(),
                indices.len(),
                indices.len()
            ),
        });
    }
    let size = shape[dim];
    if let Some(bad) = indices.iter().find(|&&i| i >= size) {
        return Err(Error::InvalidArgument {
            op: "index_add",
            msg: format!("index {bad} is out of range for axis {dim} of size {size}"),
        });
    }
    check_size("index_add", shape, src.dtype())?;
    let mut storage = src
        .storage()
        .filled_like("index_add", shape, src.dtype(), 0.0)?;
    let full = Layout::contiguous(shape.clone());
    for (pos, &i) in indices.iter().enumerate() {
        src.storage().copy_into(
            &src.layout().narrow(dim, pos, 1)?,
            &mut storage,
            &full.narrow(dim, i, 1)?,
            true,
        )?;
    }
    Ok(Tensor::from_storage(storage, shape.clone()))
}

/// A `[classes.len(), num_classes]` tensor of `like`'s dtype and device holding 1 at
/// `(i, classes[i])` and 0 elsewhere. Each class must be below `num_classes`.
pub fn one_hot(like: &Tensor, classes: &[usize], num_classes: usize) -> Result<Tensor> {
    if let Some(bad) = classes.iter().find(|&&c| c >= num_classes) {
        return Err(Error::InvalidArgument {
            op: "one_hot",
            msg: format!("class {bad} is out of range for {num_classes} classes"),
        });
    }
    let n = classes.len();
    let shape = Shape::from([n, num_classes]);
    check_size("one_hot", &shape, like.dtype())?;
    // Built on `like`'s device: ones scattered into the flattened zero matrix.
    let ones = like.full_like_shape([n], 1.0)?;
    let flat: Vec<usize> = classes
        .iter()
        .enumerate()
        .map(|(i, &c)| i * num_classes + c)
        .collect();
    let hot = index_add(&ones, &Shape::from([shape.numel()]), 0, &flat)?;
    reshape(&hot, shape)
}

/// `acc + g` for gradient accumulation (unrecorded), written into `acc`'s (or
/// `g`'s) buffer when nobody else can see it (see `binary_in_place`), so no other
/// gradient aliasing it can see the change; otherwise into a fresh buffer.
pub fn accumulate(acc: Tensor, g: Tensor) -> Result<Tensor> {
    match binary_in_place(acc, &g, BinaryOp::Add) {
        Ok(sum) => sum,
        Err(acc) => match binary_in_place(g, &acc, BinaryOp::Add) {
            Ok(sum) => sum,
            Err(g) => binary(&acc, &g, BinaryOp::Add),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_add_checks_its_arguments() -> Result<()> {
        let src = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?;
        let shape = Shape::from([4, 3]);
        let sum = index_add(&src, &shape, 0, &[3, 3])?;
        assert_eq!(sum.to_vec::<f32>()?[9..], [5.0, 7.0, 9.0]);
        // An axis the shape does not have (was a panic).
        assert!(matches!(
            index_add(&src, &shape, 2, &[0, 1]),
            Err(Error::AxisOutOfRange { .. })
        ));
        // Fewer indices than rows of src (was a result without src's last row).
        let err = index_add(&src, &shape, 0, &[0]).unwrap_err().to_string();
        assert!(err.contains("[2, 3]") && err.contains("[4, 3]"), "{err}");
        // Another shape off the indexed axis.
        assert!(index_add(&src, &Shape::from([4, 2]), 0, &[0, 1]).is_err());
        let err = index_add(&src, &shape, 0, &[0, 4]).unwrap_err().to_string();
        assert!(err.contains("index 4 is out of range"), "{err}");
        Ok(())
    }

    #[test]
    fn one_hot_refuses_a_size_that_overflows() -> Result<()> {
        let like = Tensor::zeros([1], DType::F32)?;
        let hot = one_hot(&like, &[2, 0], 3)?;
        assert_eq!(hot.to_vec::<f32>()?, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
        // 2 * usize::MAX elements (was an arithmetic overflow).
        assert!(one_hot(&like, &[0, 1], usize::MAX).is_err());
        Ok(())
    }
}
