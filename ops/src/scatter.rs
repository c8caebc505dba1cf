//! Writing by position: `scatter` (a tensor or a value), `scatter_reduce` (sum,
//! prod, mean, amax, amin) and `index_put` (replacing or accumulating).
//!
//! Compositions: the positions are read on the host (as the other indexing ops
//! read theirs), and the values move with recorded
//! [`index_select`](mod@crate::index_select), [`index_add`](mod@crate::index_add)
//! and [`r#where`](fn@crate::r#where). For `scatter_reduce`, the elements meeting
//! at each written position (`x`'s own when included, then the `src` entries in
//! index order) are laid out as the rows of a matrix padded with the reduction's
//! identity, and reduced with [`sum`](mod@crate::sum), [`prod`](mod@crate::prod),
//! [`max`](mod@crate::max) or [`min`](mod@crate::min): so the gradients are those
//! ops' (exact with zeros for prod, split equally among ties for amax and amin, as
//! PyTorch's), twice differentiable. That matrix has one row per written position
//! and as many columns as the most elements meeting at one position.

use crate::{concat, index_add, index_select, narrow, reshape};
use autograd_core::{DType, Device, Error, Result, Shape, Tensor, compute};

/// The reduction of [`scatter_reduce`] (PyTorch's `reduce` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    /// `"sum"`.
    Sum,
    /// `"prod"`.
    Prod,
    /// `"mean"`: the sum divided by the number of elements meeting.
    Mean,
    /// `"amax"`.
    Amax,
    /// `"amin"`.
    Amin,
}

/// Where each entry of `index` writes in `x` (flat, row-major positions), after the
/// checks of PyTorch's `scatter`: the same rank as `x`, at most `x`'s sizes off
/// `axis` and at most `src`'s everywhere (`src` `None` for a value), positions in
/// range. Also the normalised axis.
fn targets(
    op: &'static str,
    x: &Tensor,
    index: &Tensor,
    src: Option<&Tensor>,
    axis: isize,
) -> Result<(usize, Vec<usize>)> {
    let a = compute::normalize_axis(op, axis, x)?;
    let (xd, id) = (x.dims(), index.dims());
    let fits = index.rank() == x.rank()
        && (0..x.rank()).all(|d| d == a || id[d] <= xd[d])
        && src.is_none_or(|s| {
            s.rank() == index.rank() && id.iter().zip(s.dims()).all(|(i, s)| i <= s)
        });
    if !fits {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the index has shape {}, the tensor {}{}; the index must have the tensor's rank, \
                 at most its sizes off axis {a}{}",
                index.shape(),
                x.shape(),
                src.map(|s| format!(", src {}", s.shape()))
                    .unwrap_or_default(),
                if src.is_some() {
                    " and at most src's sizes on every axis"
                } else {
                    ""
                }
            ),
        });
    }
    let positions = compute::indices(op, index, xd[a])?;
    let mut strides = vec![1usize; x.rank()];
    for d in (0..x.rank().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * xd[d + 1];
    }
    let mut out = Vec::with_capacity(positions.len());
    let mut at = vec![0usize; index.rank()];
    for &p in &positions {
        let flat: usize = (0..x.rank())
            .map(|d| if d == a { p } else { at[d] } * strides[d])
            .sum();
        out.push(flat);
        for d in (0..at.len()).rev() {
            at[d] += 1;
            if at[d] < id[d] {
                break;
            }
            at[d] = 0;
        }
    }
    Ok((a, out))
}

/// `src` cut down to `dims` (its leading part on every axis), recorded.
fn leading(src: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let mut s = src.clone();
    for (d, &n) in dims.iter().enumerate() {
        if s.dims()[d] != n {
            s = narrow(&s, d as isize, 0, n)?;
        }
    }
    Ok(s)
}

/// An `i64` vector on `device`.
fn positions_on(v: &[usize], device: Device) -> Result<Tensor> {
    let v: Vec<i64> = v.iter().map(|&p| p as i64).collect();
    let n = v.len();
    compute::to_device(&Tensor::from_vec(v, [n])?, device)
}

/// The `bool` mask of `x`'s shape, true at the positions `written`.
fn written_mask(x: &Tensor, written: &[usize]) -> Result<Tensor> {
    let mut hit = vec![false; x.numel()];
    for &p in written {
        hit[p] = true;
    }
    Tensor::from_vec(hit, x.shape().clone())
}

/// `x` with `rows` (one per written position, in `written`'s order, `[H]`) at those
/// positions: recorded (`index_select` from the rows and a 0, then `where`).
fn place(x: &Tensor, rows: &Tensor, written: &[usize]) -> Result<Tensor> {
    let h = written.len();
    let mut slot = vec![h; x.numel()];
    for (k, &p) in written.iter().enumerate() {
        slot[p] = k;
    }
    let padded = concat(rows, &rows.full_like_shape([1], 0.0)?, 0)?;
    let full = index_select(&padded, &positions_on(&slot, x.device())?, 0)?;
    let full = reshape(&full, x.shape().clone())?;
    crate::r#where(&written_mask(x, written)?, &full, x)
}

/// The last entry writing to each position: the positions written, ascending,
/// and for each the number of the index entry that wins there (PyTorch's CPU
/// `scatter` writes in index order, so the last write stays).
fn last_writes(targets: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut last = std::collections::BTreeMap::new();
    for (k, &p) in targets.iter().enumerate() {
        last.insert(p, k);
    }
    last.into_iter().unzip()
}

/// `x` with the entries of `src` written along `axis` at the positions `index`
/// holds (`Tensor.scatter(axis, index, src)`): for `axis = 0` of rank 2,
/// `out[index[i][j]][j] = src[i][j]`.
///
/// `index` (an integer tensor, read on the host) has `x`'s rank, at most `x`'s
/// sizes off `axis` and at most `src`'s everywhere (only that part of `src` is
/// read). The gradient reaches `x` where nothing was written, and each `src` entry
/// at the position it was written to, as PyTorch's. Where several entries write
/// one position the last one (in index order) stays, as on PyTorch's CPU, and it
/// alone gets the gradient there (PyTorch gives it to every one of them). Errors
/// name `scatter`.
pub fn scatter(x: &Tensor, index: &Tensor, src: &Tensor, axis: isize) -> Result<Tensor> {
    const OP: &str = "scatter";
    let run = || {
        let (_, t) = targets(OP, x, index, Some(src), axis)?;
        let (written, winners) = last_writes(&t);
        let src = reshape(&leading(src, index.dims())?, Shape::from(vec![t.len()]))?;
        let rows = index_select(&src, &positions_on(&winners, x.device())?, 0)?;
        place(x, &rows, &written)
    };
    run().map_err(|e| e.in_op(OP))
}

/// `x` with `value` written along `axis` at the positions `index` holds
/// (`Tensor.scatter(axis, index, value)`); the gradient reaches `x` where nothing
/// was written. As [`scatter`] otherwise; errors name `scatter_value`.
pub fn scatter_value(x: &Tensor, index: &Tensor, value: f64, axis: isize) -> Result<Tensor> {
    const OP: &str = "scatter_value";
    let run = || {
        let (_, t) = targets(OP, x, index, None, axis)?;
        crate::masked_fill(
            x,
            &compute::to_device(&written_mask(x, &t)?, x.device())?,
            value,
        )
    };
    run().map_err(|e| e.in_op(OP))
}

/// `x` with the entries of `src` combined by `reduce` at the positions `index`
/// holds along `axis`: `Tensor.scatter_reduce(axis, index, src, reduce,
/// include_self)`. With `include_self` (PyTorch's default) `x`'s own element takes
/// part in the reduction; without, a written position holds the reduction of the
/// `src` entries alone. Positions nothing is written to keep `x`'s element.
///
/// Gradients as PyTorch's: `sum` and `mean` spread the gradient (divided by the
/// count for `mean`); `prod` gives each element the product of the others (exact
/// with zeros); `amax` and `amin` split it equally among the elements equal to the
/// result. `index` and `src` as in [`scatter`]; errors name `scatter_reduce`.
pub fn scatter_reduce(
    x: &Tensor,
    index: &Tensor,
    src: &Tensor,
    axis: isize,
    reduce: ScatterReduce,
    include_self: bool,
) -> Result<Tensor> {
    const OP: &str = "scatter_reduce";
    let run = || {
        let (_, t) = targets(OP, x, index, Some(src), axis)?;
        if t.is_empty() {
            return Ok(x.clone());
        }
        // The members of each written position: slots in [x, src, identity].
        let n = x.numel();
        let mut groups: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for (k, &p) in t.iter().enumerate() {
            groups
                .entry(p)
                .or_insert_with(|| if include_self { vec![p] } else { vec![] })
                .push(n + k);
        }
        let width = groups.values().map(Vec::len).max().unwrap_or(1);
        let identity_slot = n + t.len();
        let mut slots = Vec::with_capacity(groups.len() * width);
        let mut counts = Vec::with_capacity(groups.len());
        for g in groups.values() {
            slots.extend(g);
            slots.extend(std::iter::repeat_n(identity_slot, width - g.len()));
            counts.push(g.len() as f64);
        }
        let identity = match reduce {
            ScatterReduce::Sum | ScatterReduce::Mean => 0.0,
            ScatterReduce::Prod => 1.0,
            ScatterReduce::Amax => f64::NEG_INFINITY,
            ScatterReduce::Amin => f64::INFINITY,
        };
        let flat_x = reshape(x, Shape::from(vec![n]))?;
        let flat_src = reshape(&leading(src, index.dims())?, Shape::from(vec![t.len()]))?;
        let all = concat(
            &concat(&flat_x, &flat_src, 0)?,
            &x.full_like_shape([1], identity)?,
            0,
        )?;
        let h = groups.len();
        let table = reshape(
            &index_select(&all, &positions_on(&slots, x.device())?, 0)?,
            Shape::from(vec![h, width]),
        )?;
        let rows = match reduce {
            ScatterReduce::Sum => crate::sum(&table, 1, false)?,
            ScatterReduce::Prod => crate::prod(&table, 1, false)?,
            ScatterReduce::Amax => crate::max(&table, 1, false)?,
            ScatterReduce::Amin => crate::min(&table, 1, false)?,
            ScatterReduce::Mean => {
                let count = compute::cast(&Tensor::from_vec(counts, [h])?, x.dtype())?;
                let count = compute::to_device(&count, x.device())?;
                crate::div(&crate::sum(&table, 1, false)?, &count)?
            }
        };
        let written: Vec<usize> = groups.keys().copied().collect();
        place(x, &rows, &written)
    };
    run().map_err(|e| e.in_op(OP))
}

/// `x` with `values` put at the positions the index tensors `indices` give for its
/// leading axes (`Tensor.index_put((i0, i1, ..), values, accumulate)`, as
/// `x[i0, i1, ..] = values`, or `+=` with `accumulate`).
///
/// The index tensors (integers; negative positions count from the end, as
/// PyTorch's) broadcast together to one shape `B`; they index the first
/// `indices.len()` axes of `x`, and `values` broadcasts to `B` followed by `x`'s
/// remaining axes. With `accumulate` repeated positions add up; without, the last
/// one stays (as on PyTorch's CPU) and alone gets the gradient. The gradient
/// reaches `x` where nothing was put (everywhere with `accumulate`). Errors name
/// `index_put`.
pub fn index_put(
    x: &Tensor,
    indices: &[&Tensor],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    const OP: &str = "index_put";
    let run = || {
        let k = indices.len();
        if k == 0 || k > x.rank() {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "{k} index tensors for a tensor of shape {}; give between 1 and {} (one per \
                     leading axis indexed)",
                    x.shape(),
                    x.rank()
                ),
            });
        }
        // The index tensors broadcast together, read on the host.
        let mut b: Vec<usize> = vec![];
        for i in indices {
            if !i.dtype().is_integer() {
                // The conversion advice of the other indexing ops.
                compute::indices(OP, i, 0)?;
            }
            let (long, short) = if i.rank() > b.len() {
                (i.dims(), &b[..])
            } else {
                (&b[..], i.dims())
            };
            let mut out = long.to_vec();
            let off = long.len() - short.len();
            for (j, &s) in short.iter().enumerate() {
                let l = long[off + j];
                out[off + j] = if s == l || s == 1 {
                    l
                } else if l == 1 {
                    s
                } else {
                    return Err(Error::Shape {
                        op: OP,
                        msg: format!(
                            "the index tensors' shapes do not broadcast together ({:?} against \
                             {:?}); give index tensors of one shape",
                            i.dims(),
                            b
                        ),
                    });
                };
            }
            b = out;
        }
        let count: usize = b.iter().product();
        let lead: usize = x.dims()[..k].iter().product();
        let rest: Vec<usize> = x.dims()[k..].to_vec();
        let mut flat = vec![0usize; count];
        let mut stride = 1usize;
        for (d, i) in indices.iter().enumerate().rev() {
            let size = x.dims()[d];
            let read = compute::cast(&compute::broadcast_to(i, b.clone())?, DType::I64)?;
            let v = compute::contiguous(&read)?.to_vec::<i64>()?;
            for (f, &p) in flat.iter_mut().zip(&v) {
                let q = if p < 0 { p + size as i64 } else { p };
                if q < 0 || q >= size as i64 {
                    return Err(Error::InvalidArgument {
                        op: OP,
                        msg: format!("index {p} is out of range for axis {d} of size {size}"),
                    });
                }
                *f += q as usize * stride;
            }
            stride *= size;
        }
        let mut vshape = b.clone();
        vshape.extend(&rest);
        let values = crate::broadcast_to(values, Shape::from(vshape)).map_err(|e| e.in_op(OP))?;
        let mut rows_shape = vec![count];
        rows_shape.extend(&rest);
        let rows = reshape(&values, Shape::from(rows_shape))?;
        let mut lead_shape = vec![lead];
        lead_shape.extend(&rest);
        let x2 = reshape(x, Shape::from(lead_shape))?;
        let out = if accumulate {
            index_add(&x2, &positions_on(&flat, x.device())?, &rows, 0)?
        } else {
            let (written, winners) = last_writes(&flat);
            let rows = index_select(&rows, &positions_on(&winners, x.device())?, 0)?;
            let mut slot = vec![written.len(); lead];
            for (j, &p) in written.iter().enumerate() {
                slot[p] = j;
            }
            let mut zero_shape = vec![1];
            zero_shape.extend(&rest);
            let padded = concat(
                &rows,
                &rows.full_like_shape(Shape::from(zero_shape), 0.0)?,
                0,
            )?;
            let full = index_select(&padded, &positions_on(&slot, x.device())?, 0)?;
            let mut hit = vec![false; lead];
            for &p in &written {
                hit[p] = true;
            }
            let mut hit_shape = vec![lead];
            hit_shape.extend(std::iter::repeat_n(1, rest.len()));
            let hit = Tensor::from_vec(hit, Shape::from(hit_shape))?;
            crate::r#where(&hit, &full, &x2)?
        };
        reshape(&out, x.shape().clone())
    };
    run().map_err(|e| e.in_op(OP))
}
