//! Reductions over several axes, whole-tensor positions, and selections by
//! position: `mean_axes`, `var_axes`, `std_dev_axes`, `norm`,
//! `argmax_all`/`argmin_all`, `max_with_indices`/`min_with_indices`,
//! `sort`/`argsort` and `topk`.
//!
//! None is a registered op of its own. The reductions move the reduced axes last,
//! merge them into one and reduce that with [`mean`](mod@crate::mean),
//! [`var`](mod@crate::var) or [`std_dev`](mod@crate::std_dev) (recorded, so their
//! gradients and second derivatives are those ops'). The selections compute `i64`
//! positions (constants, on the host for sorting, as PyTorch's CPU kernels do)
//! and take the values with [`gather`](mod@crate::gather), whose gradient sends
//! each output's gradient whole to the position it came from, as PyTorch's
//! `torch.max(x, dim)`, `sort` and `topk` do.

use crate::{gather, permute, reshape, squeeze};
use autograd_core::{Device, Error, Result, Shape, Tensor, compute};

/// The axes `axes` of `x` normalised (none: every axis, as PyTorch's `dim=None`),
/// or an error naming `op` for one out of range or given twice.
fn reduced_axes(op: &'static str, x: &Tensor, axes: &[isize]) -> Result<Vec<usize>> {
    if axes.is_empty() {
        return Ok((0..x.rank()).collect());
    }
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let axis = compute::normalize_axis(op, a, x)?;
        if out.contains(&axis) {
            return Err(Error::InvalidArgument {
                op,
                msg: format!(
                    "axis {axis} appears twice in the axes {axes:?} of shape {}; name each \
                     reduced axis once",
                    x.shape()
                ),
            });
        }
        out.push(axis);
    }
    out.sort_unstable();
    Ok(out)
}

/// `x` with the `axes` moved last and merged into one (recorded: `permute` and
/// `reshape`), the shape the result has with `keepdim`, and the one it has without.
fn merged(x: &Tensor, axes: &[usize]) -> Result<(Tensor, Shape, Shape)> {
    let dims = x.dims();
    let kept_axes: Vec<usize> = (0..x.rank()).filter(|a| !axes.contains(a)).collect();
    let perm: Vec<usize> = kept_axes.iter().chain(axes).copied().collect();
    let mut flat: Vec<usize> = kept_axes.iter().map(|&a| dims[a]).collect();
    let dropped = Shape::from(flat.clone());
    flat.push(axes.iter().map(|&a| dims[a]).product());
    let mut kept = x.shape().clone();
    for &a in axes {
        kept.dims_mut()[a] = 1;
    }
    let moved = if perm.iter().enumerate().all(|(i, &p)| i == p) {
        x.clone()
    } else {
        permute(x, perm)?
    };
    Ok((reshape(&moved, Shape::from(flat))?, kept, dropped))
}

/// `reduce` of `x` over `axes` (merged into the last axis), shaped as `keepdim`
/// says; errors name `op`.
fn over_axes(
    op: &'static str,
    x: &Tensor,
    axes: &[isize],
    keepdim: bool,
    reduce: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let run = || {
        let axes = reduced_axes(op, x, axes)?;
        let (flat, kept, dropped) = merged(x, &axes)?;
        let y = reduce(&flat)?;
        reshape(&y, if keepdim { kept } else { dropped })
    };
    run().map_err(|e| e.in_op(op))
}

/// The mean over the axes `axes` (negative count from the end; none: every axis),
/// as `torch.mean(x, dim=axes, keepdim=keepdim)`. Recorded through
/// [`mean`](mod@crate::mean). Errors name `mean_axes`: an axis out of range or
/// repeated, a tensor that is not floating.
pub fn mean_axes(x: &Tensor, axes: &[isize], keepdim: bool) -> Result<Tensor> {
    over_axes("mean_axes", x, axes, keepdim, |f| crate::mean(f, -1, false))
}

/// The variance over the axes `axes` (none: every axis): `Σ (x - x̄)² / max(0, n -
/// correction)` with `n` the number of elements reduced, as `torch.var(x,
/// dim=axes, correction=.., keepdim=..)`. Recorded through [`var`](mod@crate::var).
pub fn var_axes(x: &Tensor, axes: &[isize], correction: usize, keepdim: bool) -> Result<Tensor> {
    over_axes("var_axes", x, axes, keepdim, |f| {
        crate::var(f, -1, correction, false)
    })
}

/// The standard deviation over the axes `axes` (none: every axis), as
/// `torch.std(x, dim=axes, correction=.., keepdim=..)`; its gradient is 0 where it
/// is 0, as [`std_dev`](mod@crate::std_dev)'s (and PyTorch's).
pub fn std_dev_axes(
    x: &Tensor,
    axes: &[isize],
    correction: usize,
    keepdim: bool,
) -> Result<Tensor> {
    over_axes("std_dev_axes", x, axes, keepdim, |f| {
        crate::std_dev(f, -1, correction, false)
    })
}

/// `x` flattened (a constant view), or an error naming `op` for an empty tensor.
fn flat_nonempty(op: &'static str, x: &Tensor) -> Result<Tensor> {
    if x.numel() == 0 {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the tensor of shape {} is empty, so it has no position of an extreme; \
                 check the shape first",
                x.shape()
            ),
        });
    }
    compute::reshape(x, Shape::from(vec![x.numel()]))
}

/// The flat position (row-major, `i64`, rank 0) of the largest element of `x`, the
/// first among ties, NaN counting as the largest: `torch.argmax(x)` without an
/// axis. A constant; an error naming `argmax_all` for an empty tensor.
pub fn argmax_all(x: &Tensor) -> Result<Tensor> {
    crate::argmax(&flat_nonempty("argmax_all", x)?, 0, false)
}

/// The flat position of the smallest element of `x`, the first among ties, NaN
/// counting as the smallest: `torch.argmin(x)` without an axis. As
/// [`argmax_all`] otherwise.
pub fn argmin_all(x: &Tensor) -> Result<Tensor> {
    crate::argmin(&flat_nonempty("argmin_all", x)?, 0, false)
}

/// The values at `index` (kept along `axis`) and the index, squeezed unless
/// `keepdim`.
fn take(x: &Tensor, index: Tensor, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let values = gather(x, &index, axis)?;
    if keepdim {
        return Ok((values, index));
    }
    let a = compute::normalize_axis("gather", axis, x)?;
    Ok((squeeze(&values, axis)?, compute::squeeze(&index, a)?))
}

/// The largest element along `axis` and its position: `torch.max(x, dim, keepdim)`
/// (values, `i64` indices). The position is the first maximum, NaN counting as the
/// largest; the values' gradient goes whole to that position (as PyTorch's; for the
/// gradient split among ties, use [`max`](mod@crate::max), `torch.amax`).
pub fn max_with_indices(x: &Tensor, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let index = crate::argmax(x, axis, true).map_err(|e| e.in_op("max_with_indices"))?;
    take(x, index, axis, keepdim)
}

/// The smallest element along `axis` and its position: `torch.min(x, dim,
/// keepdim)`. As [`max_with_indices`] otherwise (NaN counting as the smallest).
pub fn min_with_indices(x: &Tensor, axis: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let index = crate::argmin(x, axis, true).map_err(|e| e.in_op("min_with_indices"))?;
    take(x, index, axis, keepdim)
}

/// Orders `a` before `b` ascending, NaN after every number (PyTorch's order: NaN
/// is the largest), equal values (`-0` and `+0` too) left in place by the stable
/// sort.
fn ascending(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
    }
}

/// The positions along `axis` of the first `k` elements of each line of `x` in
/// stable order (descending or ascending, NaN the largest), in that order or, when
/// not `ordered`, by position. An `i64` tensor on `x`'s device, `k` long on `axis`.
fn ordering(x: &Tensor, axis: usize, descending: bool, k: usize, ordered: bool) -> Result<Tensor> {
    let last = x.rank() - 1;
    let moved = compute::transpose(x, axis, last)?;
    let host = compute::to_device(&moved, Device::Cpu)?;
    let n = x.dims()[axis];
    let values: Vec<f64> = compute::contiguous(&host)?.to_vec::<f64>()?;
    let rows = values.len().checked_div(n).unwrap_or(0);
    let mut out: Vec<i64> = Vec::with_capacity(rows * k);
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for row in 0..rows {
        let line = &values[row * n..(row + 1) * n];
        order.clear();
        order.extend(0..n);
        if descending {
            order.sort_by(|&a, &b| ascending(line[b], line[a]));
        } else {
            order.sort_by(|&a, &b| ascending(line[a], line[b]));
        }
        let chosen = &mut order[..k];
        if !ordered {
            chosen.sort_unstable();
        }
        out.extend(chosen.iter().map(|&i| i as i64));
    }
    let mut dims = moved.dims().to_vec();
    dims[last] = k;
    let index = Tensor::from_slice(&out, dims)?;
    let back = compute::contiguous(&compute::transpose(&index, axis, last)?)?;
    compute::to_device(&back, x.device())
}

/// `axis` of `x` normalised, or an error naming `op`; a rank-0 `x` is refused.
fn line_axis(op: &'static str, x: &Tensor, axis: isize) -> Result<usize> {
    if x.rank() == 0 {
        return Err(Error::InvalidArgument {
            op,
            msg: "a rank-0 tensor has no axis to order along; reshape it to [1] first".into(),
        });
    }
    compute::normalize_axis(op, axis, x)
}

/// The positions that sort `x` along `axis` (`torch.argsort(x, dim, descending,
/// stable=True)`): an `i64` constant. Stable (equal elements keep their order, in
/// either direction); NaN sorts as the largest (last ascending, first
/// descending), as PyTorch's. Computed on the host.
pub fn argsort(x: &Tensor, axis: isize, descending: bool) -> Result<Tensor> {
    let run = || {
        let a = line_axis("argsort", x, axis)?;
        ordering(x, a, descending, x.dims()[a], true)
    };
    run().map_err(|e| e.in_op("argsort"))
}

/// `x` sorted along `axis`, and the positions the values came from:
/// `torch.sort(x, dim, descending, stable=True)`. Stable, NaN the largest, as
/// [`argsort`]; the values are recorded ([`gather`](mod@crate::gather)), each
/// value's gradient going back to its position.
pub fn sort(x: &Tensor, axis: isize, descending: bool) -> Result<(Tensor, Tensor)> {
    let index = argsort(x, axis, descending).map_err(|e| e.in_op("sort"))?;
    let values = gather(x, &index, axis)?;
    Ok((values, index))
}

/// The `k` largest (`largest`) or smallest elements along `axis`, and their
/// positions: `torch.topk(x, k, dim, largest, sorted)`. With `sorted` they come
/// largest first (smallest first when not `largest`); without, in the order of
/// their positions. Among equal values the earlier position wins and comes first
/// (PyTorch leaves ties unspecified); NaN counts as the largest, as PyTorch's.
/// The values are recorded; an error naming `topk` when `k` exceeds the axis.
pub fn topk(
    x: &Tensor,
    k: usize,
    axis: isize,
    largest: bool,
    sorted: bool,
) -> Result<(Tensor, Tensor)> {
    let run = || {
        let a = line_axis("topk", x, axis)?;
        let n = x.dims()[a];
        if k > n {
            return Err(Error::InvalidArgument {
                op: "topk",
                msg: format!(
                    "k = {k} is larger than axis {a} of shape {} ({n} elements); take k at \
                     most {n}",
                    x.shape()
                ),
            });
        }
        let index = ordering(x, a, largest, k, sorted)?;
        let values = gather(x, &index, axis)?;
        Ok((values, index))
    };
    run().map_err(|e| e.in_op("topk"))
}

/// Which norm [`norm`] computes (PyTorch's `ord`/`p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormOrd {
    /// `Σ |x|` (`ord=1`).
    L1,
    /// `√(Σ x²)` (`ord=2`, PyTorch's default).
    L2,
    /// `max |x|` (`ord=inf`).
    Inf,
    /// `√(Σ x²)` over the axes (`p='fro'`): [`NormOrd::L2`] under its matrix name.
    Frobenius,
}

/// The vector norm of `x` over the axes `axes` (none: every axis):
/// `torch.linalg.vector_norm(x, ord, dim=axes, keepdim=keepdim)`, and for
/// [`NormOrd::Frobenius`] `torch.norm(x, p='fro', dim=axes)`.
///
/// Gradients as PyTorch's: `sign(x)` for L1 (0 at 0); `x / ‖x‖` for L2, and 0
/// where the norm is 0 (not `0 / 0`); for ∞ the gradient is split equally among
/// the elements whose `|x|` equals the max, with `x`'s sign. Recorded through
/// `abs`, `square`, `sum`, `sqrt`, `max` and `where`, so twice differentiable.
/// Errors name `norm`: an axis out of range or repeated, a tensor that is not
/// floating (as PyTorch's).
pub fn norm(x: &Tensor, ord: NormOrd, axes: &[isize], keepdim: bool) -> Result<Tensor> {
    const OP: &str = "norm";
    if !x.dtype().is_float() {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "the tensor (shape {}) is {}, and norm takes a floating tensor (as \
                 PyTorch's); convert it first with `.to_dtype(DType::F32)`",
                x.shape(),
                x.dtype()
            ),
        });
    }
    over_axes(OP, x, axes, keepdim, |flat| match ord {
        NormOrd::L1 => crate::sum(&crate::abs(flat)?, -1, false),
        NormOrd::Inf => crate::max(&crate::abs(flat)?, -1, false),
        NormOrd::L2 | NormOrd::Frobenius => {
            let ss = crate::sum(&crate::square(flat)?, -1, false)?;
            // Where Σ x² is 0, take √1 and then 0 (constant masks), so the
            // gradient there is 0, not √'(0) · 0 = NaN: PyTorch's convention.
            let zero = crate::eq(&ss, &ss.zeros_like()?)?;
            let one = ss.full_like_shape(Shape::from(Vec::<usize>::new()), 1.0)?;
            let nought = ss.full_like_shape(Shape::from(Vec::<usize>::new()), 0.0)?;
            let safe = crate::r#where(&zero, &one, &ss)?;
            crate::r#where(&zero, &nought, &crate::sqrt(&safe)?)
        }
    })
}
