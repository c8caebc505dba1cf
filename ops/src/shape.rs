//! Ops that change shape. Forward passes are views of the input's storage where
//! possible; the engine's central broadcast reduction is [`sum_to_shape`](mod@sum_to_shape).

use autograd_core::cases;
use autograd_core::{CheckCase, Error, Result, Shape, Tensor, compute};
use autograd_macros::differentiable;

fn input(seed: u64, shape: &[usize]) -> Tensor {
    cases::uniform(seed, shape, -1.0, 1.0)
}

/// `x` with another shape of the same element count.
#[differentiable(crate = ::autograd_core)]
pub mod reshape {
    use super::*;

    /// The new shape.
    #[derive(Clone, Debug)]
    pub struct Reshape {
        /// The new shape; it must hold as many elements as the input.
        pub shape: Shape,
    }

    /// A view with the new shape when the layout allows it, else a copy. An error when
    /// the element counts differ.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::reshape(x, self.shape.clone())
    }

    /// `grad` reshaped back to `x`'s shape.
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        reshape(grad, x_shape.clone())
    }

    /// Gradcheck input: a `[2, 3]` tensor viewed as `[3, 2]`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "reshape [2,3] -> [3,2]",
            vec![input(21, &[2, 3])],
            |x| reshape(&x[0], Shape::from([3, 2])),
        )]
    }
}

/// Axes `d0` and `d1` swapped (a view), as `torch.transpose(x, d0, d1)`; negative
/// axes count from the end, and `d0 == d1` gives `x` back unchanged.
/// [`TensorExt::t`](crate::TensorExt::t) swaps the last two.
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// use autograd_ops::methods::*;
/// let x = autograd_core::Tensor::from_slice(&[0.0f32; 24], [2, 3, 4])?;
/// assert_eq!(x.transpose(0, 2)?.dims(), [4, 3, 2]);
/// assert_eq!(x.transpose(-1, -2)?.dims(), [2, 4, 3]);
/// assert_eq!(x.t()?.dims(), [2, 4, 3]);
/// # Ok(())
/// # }
/// ```
#[differentiable(crate = ::autograd_core, method)]
pub mod transpose {
    use super::*;

    /// The two axes swapped.
    #[derive(Clone, Copy, Debug)]
    pub struct Transpose {
        /// One axis; negative counts from the end.
        pub d0: isize,
        /// The other axis; negative counts from the end.
        pub d1: isize,
    }

    /// A view with axes `d0` and `d1` swapped. An error when either is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let a = compute::normalize_axis("transpose", self.d0, x)?;
        let b = compute::normalize_axis("transpose", self.d1, x)?;
        compute::transpose(x, a, b)
    }

    /// `grad` with the same two axes swapped back.
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        transpose(grad, self.d0, self.d1)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor (a batch of matrices) with its last two
    /// axes swapped, and with its first and last (`(0, -1)`).
    pub fn check_cases() -> Vec<CheckCase> {
        let x = input(24, &[2, 3, 4]);
        vec![
            cases::unary("transpose [2,3,4] (-2,-1)", x.clone(), |x| {
                transpose(x, -2, -1)
            }),
            cases::unary("transpose [2,3,4] (0,-1)", x, |x| transpose(x, 0, -1)),
        ]
    }
}

/// Reorders the axes: axis `i` of the result is axis `dims[i]` of `x` (a view).
#[differentiable(crate = ::autograd_core)]
pub mod permute {
    use super::*;

    /// The permutation.
    #[derive(Clone, Debug)]
    pub struct Permute {
        /// A permutation of `0..rank`: axis `i` of the result is axis `dims[i]` of `x`.
        pub dims: Vec<usize>,
    }

    /// A view with the axes reordered. An error when `dims` is not a permutation of
    /// `x`'s axes.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        compute::permute(x, &self.dims)
    }

    /// The inverse permutation puts every axis back.
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        let mut inverse = vec![0; self.dims.len()];
        for (i, &d) in self.dims.iter().enumerate() {
            inverse[d] = i;
        }
        permute(grad, inverse)
    }

    /// Gradcheck input: a `[2, 3, 4]` tensor permuted by `(2, 0, 1)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "permute [2,3,4] (2,0,1)",
            input(25, &[2, 3, 4]),
            |x| permute(x, vec![2, 0, 1]),
        )]
    }
}

/// Inserts an axis of size 1 at `axis` (`-(rank+1)..=rank`; -1 appends it; a view).
#[differentiable(crate = ::autograd_core, method)]
pub mod unsqueeze {
    use super::*;

    /// Where the new axis goes.
    #[derive(Clone, Copy, Debug)]
    pub struct Unsqueeze {
        /// Position of the new axis in the result, in `-(rank + 1)..=rank`.
        pub axis: isize,
    }

    /// A view with an axis of size 1 inserted. An error when `axis` is out of range.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let rank = x.rank() as isize + 1;
        let at = if self.axis < 0 {
            self.axis + rank
        } else {
            self.axis
        };
        if at < 0 || at >= rank {
            return Err(Error::AxisOutOfRange {
                op: "unsqueeze",
                axis: self.axis,
                rank: rank as usize,
                shape: x.shape().clone(),
            });
        }
        compute::unsqueeze(x, at as usize)
    }

    /// `grad` reshaped back to `x`'s shape (the size-1 axis dropped).
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        reshape(grad, x_shape.clone())
    }

    /// Gradcheck inputs: a `[2, 3]` tensor given a middle axis, and a last one (axis
    /// -1).
    pub fn check_cases() -> Vec<CheckCase> {
        let x = input(26, &[2, 3]);
        vec![
            cases::unary("unsqueeze 1", x.clone(), |x| unsqueeze(x, 1)),
            cases::unary("unsqueeze -1", x, |x| unsqueeze(x, -1)),
        ]
    }
}

/// Removes `axis`, which must have size 1 (a view).
#[differentiable(crate = ::autograd_core, method)]
pub mod squeeze {
    use super::*;

    /// The axis removed.
    #[derive(Clone, Copy, Debug)]
    pub struct Squeeze {
        /// The axis removed; negative counts from the end.
        pub axis: isize,
    }

    /// A view without `axis`. An error when `axis` is out of range or its size is not
    /// 1.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("squeeze", self.axis, x)?;
        compute::squeeze(x, axis)
    }

    /// `grad` reshaped back to `x`'s shape (the size-1 axis restored).
    pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        reshape(grad, x_shape.clone())
    }

    /// Gradcheck input: a `[2, 1, 3]` tensor losing its middle axis (axis -2).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary("squeeze -2", input(27, &[2, 1, 3]), |x| {
            squeeze(x, -2)
        })]
    }
}

/// Entries `start..start + len` of `axis` (a view): a slice along one axis.
#[differentiable(crate = ::autograd_core, method)]
pub mod narrow {
    use super::*;

    /// Which axis, and which range of it.
    #[derive(Clone, Copy, Debug)]
    pub struct Narrow {
        /// The axis sliced; negative counts from the end.
        pub axis: isize,
        /// First entry kept.
        pub start: usize,
        /// Number of entries kept; `start + len` must not exceed the axis' size.
        pub len: usize,
    }

    /// A view of entries `start..start + len` of `axis`. An error when `axis` is out of
    /// range or the range does not fit in it.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("narrow", self.axis, x)?;
        compute::narrow(x, axis, self.start, self.len)
    }

    /// Zeros around the gradient: [`pad`](mod@pad), whose backward is `narrow` again.
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let axis = compute::normalize_axis_of("narrow", self.axis, x_shape)?;
        let after = x_shape[axis].saturating_sub(self.start + self.len);
        pad(grad, self.axis, self.start, after)
    }

    /// Gradcheck inputs: a `[3, 5]` tensor sliced along each axis.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = input(28, &[3, 5]);
        vec![
            cases::unary("narrow axis 1 [1..4]", x.clone(), |x| narrow(x, 1, 1, 3)),
            cases::unary("narrow axis -2 [2..3]", x, |x| narrow(x, -2, 2, 1)),
        ]
    }
}

/// `x` with `before` zeros ahead of it and `after` zeros behind it along `axis`.
#[differentiable(crate = ::autograd_core, method)]
pub mod pad {
    use super::*;

    /// Which axis, and how many zeros on each side.
    #[derive(Clone, Copy, Debug)]
    pub struct Pad {
        /// The axis padded; negative counts from the end.
        pub axis: isize,
        /// Zeros inserted ahead of the first entry.
        pub before: usize,
        /// Zeros appended after the last entry.
        pub after: usize,
    }

    /// `x` copied into zeros of the padded shape. An error when `axis` is out of range
    /// or the padded size overflows `usize`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("pad", self.axis, x)?;
        let mut shape = x.shape().clone();
        let padded = x.dims()[axis]
            .checked_add(self.before)
            .and_then(|d| d.checked_add(self.after))
            .ok_or_else(|| Error::Shape {
                op: "pad",
                msg: format!(
                    "padding axis {axis} of shape {} by {} and {} overflows the size of an axis",
                    x.shape(),
                    self.before,
                    self.after
                ),
            })?;
        shape.dims_mut()[axis] = padded;
        compute::pad_narrow(x, &shape, axis, self.before)
    }

    /// The part of `grad` where `x` sits: [`narrow`](mod@narrow), whose backward is
    /// `pad` again.
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let axis = compute::normalize_axis_of("pad", self.axis, x_shape)?;
        narrow(grad, self.axis, self.before, x_shape[axis])
    }

    /// Gradcheck input: a `[2, 3]` tensor padded by 1 and 2 along its last axis.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![cases::unary(
            "pad axis -1 (1, 2)",
            input(29, &[2, 3]),
            |x| pad(x, -1, 1, 2),
        )]
    }
}

/// `a` and `b` joined along `axis`; every other axis must match.
///
/// The macro gives an op a fixed number of tensor inputs, so `concat` is binary; join
/// more tensors with [`concat_all`], which records a balanced tree of `concat`s.
#[differentiable(crate = ::autograd_core, method)]
pub mod concat {
    use super::*;

    /// The axis joined along.
    #[derive(Clone, Copy, Debug)]
    pub struct Concat {
        /// The axis joined along; negative counts from the end.
        pub axis: isize,
    }

    /// A new tensor holding `a`, then `b`, along `axis`. An error when `axis` is out of
    /// range, when the other axes differ, or when the dtypes or devices differ.
    pub fn forward(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("concat", self.axis, a)?;
        compute::concat(&[a, b], axis)
    }

    /// Each input gets its own part of the gradient back.
    pub fn backward(
        &self,
        grad: &Tensor,
        a_shape: &Shape,
        b_shape: &Shape,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let axis = compute::normalize_axis_of("concat", self.axis, a_shape)?;
        let (la, lb) = (a_shape[axis], b_shape[axis]);
        Ok((
            autograd_core::grad_if(needs[0], || narrow(grad, self.axis, 0, la))?,
            autograd_core::grad_if(needs[1], || narrow(grad, self.axis, la, lb))?,
        ))
    }

    /// Gradcheck inputs: joins along the last axis and along the first, with operands
    /// of different lengths there.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "concat [2,3] [2,2] axis -1",
                vec![input(30, &[2, 3]), input(31, &[2, 2])],
                |x| concat(&x[0], &x[1], -1),
            ),
            CheckCase::new(
                "concat [1,3] [2,3] axis 0",
                vec![input(32, &[1, 3]), input(33, &[2, 3])],
                |x| concat(&x[0], &x[1], 0),
            ),
        ]
    }
}

/// The tensors joined along `axis`, in order: `concat` applied as a balanced tree, so
/// every element is copied `⌈log₂ n⌉` times at most and the graph holds `n - 1` nodes.
/// One tensor is returned as it is; none is an error.
pub fn concat_all(xs: &[&Tensor], axis: isize) -> Result<Tensor> {
    match xs {
        [] => Err(Error::InvalidArgument {
            op: "concat",
            msg: "concat_all needs at least one tensor".into(),
        }),
        [x] => Ok((*x).clone()),
        _ => {
            let (left, right) = xs.split_at(xs.len() / 2);
            concat(&concat_all(left, axis)?, &concat_all(right, axis)?, axis)
        }
    }
}

/// Index tensor check shared by `index_select` and `index_add`: a vector of
/// integers (`i64`, `i32` or `u8`, read on the host), each a valid position along
/// `axis` of `x`.
fn read_indices(op: &'static str, index: &Tensor, x: &Tensor, axis: usize) -> Result<Vec<usize>> {
    if index.rank() != 1 {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the index must be a vector (rank 1), got shape {}",
                index.shape()
            ),
        });
    }
    let size = x.dims()[axis];
    compute::indices(op, index, size).map_err(|e| match e {
        Error::InvalidArgument { op, msg } if index.dtype().is_integer() => {
            Error::InvalidArgument {
                op,
                msg: format!("{msg}, the range of axis {axis} of shape {}", x.shape()),
            }
        }
        e => e,
    })
}

/// The entries `index` of `axis`, in that order (repeats allowed). `index` is a
/// vector of integers (`i64`, as PyTorch's; `i32` and `u8` too); it gets no
/// gradient.
#[differentiable(crate = ::autograd_core, method)]
pub mod index_select {
    use super::*;

    /// The axis indexed.
    #[derive(Clone, Copy, Debug)]
    pub struct IndexSelect {
        /// The axis indexed; negative counts from the end.
        pub axis: isize,
    }

    /// The entries `index` of `axis`, gathered into a new tensor. An error when `index`
    /// is not a vector of integers, or holds a value out of the axis' range.
    pub fn forward(&self, x: &Tensor, #[no_grad] index: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("index_select", self.axis, x)?;
        let idx = read_indices("index_select", index, x, axis)?;
        compute::index_select(x, axis, &idx)
    }

    /// The gradient rows added back at their indices (repeats add up): [`index_add`](mod@index_add)
    /// into zeros (a constant), whose backward is `index_select` again.
    pub fn backward(&self, grad: &Tensor, index: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let zeros = grad.full_like_shape(x_shape.clone(), 0.0)?;
        index_add(&zeros, index, grad, self.axis)
    }

    /// Gradcheck inputs: repeated indices along the first axis (their gradients add
    /// up), and a reordering along the last; `index` is held constant.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "index_select axis 0 (repeats)",
                vec![input(34, &[4, 3]), crate::index_values(&[2, 0, 2], &[3])],
                |x| index_select(&x[0], &x[1], 0),
            )
            .differentiable(vec![true, false]),
            CheckCase::new(
                "index_select axis -1",
                vec![input(35, &[2, 4]), crate::index_values(&[3, 1], &[2])],
                |x| index_select(&x[0], &x[1], -1),
            )
            .differentiable(vec![true, false]),
        ]
    }
}

/// `x` with entry `i` of `src` (along `axis`) added at entry `index[i]`, repeats
/// adding up. `src` has `x`'s shape except along `axis`, where it has
/// `index.len()` entries. `index` is a vector of integers (as `index_select`'s)
/// and gets no gradient.
#[differentiable(crate = ::autograd_core)]
pub mod index_add {
    use super::*;

    /// The axis indexed.
    #[derive(Clone, Copy, Debug)]
    pub struct IndexAdd {
        /// The axis indexed; negative counts from the end.
        pub axis: isize,
    }

    /// `x` plus `src` scattered along `axis` at `index`. An error when `index` is not a
    /// vector of integers, holds a value out of the axis' range, or when `src`
    /// does not have `x`'s shape with `index.len()` entries along `axis`.
    pub fn forward(&self, x: &Tensor, #[no_grad] index: &Tensor, src: &Tensor) -> Result<Tensor> {
        let axis = compute::normalize_axis("index_add", self.axis, x)?;
        let idx = read_indices("index_add", index, x, axis)?;
        let scattered = compute::index_add(src, x.shape(), axis, &idx)?;
        compute::binary(x, &scattered, autograd_core::BinaryOp::Add)
    }

    /// `grad` to `x` unchanged; to `src`, the rows of `grad` at `index`:
    /// [`index_select`](mod@index_select).
    pub fn backward(
        &self,
        grad: &Tensor,
        index: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((
            needs[0].then(|| grad.clone()),
            autograd_core::grad_if(needs[1], || index_select(grad, index, self.axis))?,
        ))
    }

    /// Gradcheck inputs: repeated indices along the first axis, gradients checked for
    /// `x` and `src` (`index` is held constant).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "index_add axis 0 (repeats)",
                vec![
                    input(36, &[3, 2]),
                    crate::index_values(&[1, 1, 0, 2], &[4]),
                    input(37, &[4, 2]),
                ],
                |x| index_add(&x[0], &x[1], &x[2], 0),
            )
            .differentiable(vec![true, false, true]),
        ]
    }
}

/// The shape `dims` asks for from a tensor of shape `from`, with at most one entry
/// `-1` standing for the size that keeps the element count (NumPy's and PyTorch's
/// `reshape` convention). Errors name `op`: a second `-1`, another negative entry,
/// an element count the known sizes do not divide (or cannot match).
pub fn infer_shape(op: &'static str, from: &Shape, dims: &[isize]) -> Result<Shape> {
    let given = || format!("{dims:?}");
    let mut unknown = None;
    let mut known: usize = 1;
    for (i, &d) in dims.iter().enumerate() {
        match d {
            -1 if unknown.is_some() => {
                return Err(Error::InvalidArgument {
                    op,
                    msg: format!(
                        "shape {} has more than one -1 (axes {} and {i}); at most one size can be \
                         inferred, give the others",
                        given(),
                        unknown.unwrap_or(0)
                    ),
                });
            }
            -1 => unknown = Some(i),
            d if d < 0 => {
                return Err(Error::InvalidArgument {
                    op,
                    msg: format!(
                        "shape {} has the size {d} at axis {i}; sizes are at least 0, or -1 for \
                         the one inferred",
                        given()
                    ),
                });
            }
            d => {
                known = known.checked_mul(d as usize).ok_or_else(|| Error::Shape {
                    op,
                    msg: format!(
                        "shape {} holds more elements than a usize can count",
                        given()
                    ),
                })?;
            }
        }
    }
    let n = from.numel();
    let mut out: Vec<usize> = dims.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(at) = unknown {
        if known == 0 || !n.is_multiple_of(known) {
            return Err(Error::Shape {
                op,
                msg: format!(
                    "cannot reshape {from} ({n} elements) into {}: the other sizes multiply to \
                     {known}, which does not divide {n}, so no size fits the -1 at axis {at}",
                    given()
                ),
            });
        }
        out[at] = n / known;
    } else if known != n {
        return Err(Error::Shape {
            op,
            msg: format!(
                "cannot reshape {from} ({n} elements) into {} ({known} elements); the element \
                 count must stay the same (write -1 for the size to infer)",
                given()
            ),
        });
    }
    Ok(Shape::from(out))
}

/// `x` reshaped to `dims`, one of which may be `-1`: that axis gets the size that
/// keeps the element count, as `torch.reshape(x, (-1, 4))` or NumPy's
/// `x.reshape(-1, 4)`. Recorded as a [`reshape`](mod@reshape) (a view where the
/// layout allows it).
///
/// Errors name `reshape_infer`: more than one `-1`, another negative size, sizes
/// that do not divide the element count (or, without `-1`, do not equal it).
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[0.0f32; 12], [2, 3, 2])?;
/// assert_eq!(autograd_ops::reshape_infer(&x, &[-1, 4])?.dims(), [3, 4]);
/// assert!(autograd_ops::reshape_infer(&x, &[-1, 5]).is_err());
/// # Ok(())
/// # }
/// ```
#[track_caller]
pub fn reshape_infer(x: &Tensor, dims: &[isize]) -> Result<Tensor> {
    const OP: &str = "reshape_infer";
    let shape = infer_shape(OP, x.shape(), dims)?;
    reshape(x, shape).map_err(|e| e.in_op(OP))
}

/// Axes `start_axis..=end_axis` of `x` merged into one (`torch.flatten`): `[2, 3,
/// 4]` flattened from 1 to -1 is `[2, 12]`, from 0 to -1 is `[24]`. Negative axes
/// count from the end; a rank-0 tensor is taken as rank 1 and gives `[1]`.
/// Recorded as a [`reshape`](mod@reshape).
///
/// Errors name `flatten`: an axis out of range, or `start_axis` after `end_axis`.
#[track_caller]
pub fn flatten(x: &Tensor, start_axis: isize, end_axis: isize) -> Result<Tensor> {
    const OP: &str = "flatten";
    // As torch: a scalar flattens like a one-element vector.
    let dims: Vec<usize> = if x.rank() == 0 {
        vec![1]
    } else {
        x.dims().to_vec()
    };
    let shape = Shape::from(dims.clone());
    let start = compute::normalize_axis_of(OP, start_axis, &shape)?;
    let end = compute::normalize_axis_of(OP, end_axis, &shape)?;
    if start > end {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "start axis {start_axis} comes after end axis {end_axis} in shape {}; flatten \
                 merges axes start..=end, so pick start <= end",
                x.shape()
            ),
        });
    }
    let merged = dims[start..=end].iter().product::<usize>();
    let out: Shape = dims[..start]
        .iter()
        .copied()
        .chain([merged])
        .chain(dims[end + 1..].iter().copied())
        .collect();
    reshape(x, out).map_err(|e| e.in_op(OP))
}

/// The tensors, all of one shape, stacked along a new axis at `axis` (in
/// `-(rank+1)..=rank`, -1 appends it), as `torch.stack`: `n` tensors of shape
/// `[a, b]` stacked at axis 1 give `[a, n, b]`. Recorded as an
/// [`unsqueeze`](mod@unsqueeze) of each and a balanced tree of
/// [`concat`](mod@concat)s ([`concat_all`]); each input gets its slice of the
/// gradient back.
///
/// Errors name `stack`: no tensor, shapes that differ, an axis out of range,
/// dtypes or devices that differ.
pub fn stack(xs: &[&Tensor], axis: isize) -> Result<Tensor> {
    const OP: &str = "stack";
    let Some(first) = xs.first() else {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: "needs at least one tensor; pass a non-empty slice".into(),
        });
    };
    if let Some((i, bad)) = xs
        .iter()
        .enumerate()
        .find(|(_, x)| x.shape() != first.shape())
    {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "tensor {i} has shape {}, tensor 0 has shape {}; stacked tensors must all have \
                 one shape",
                bad.shape(),
                first.shape()
            ),
        });
    }
    let rank = first.rank() as isize + 1;
    if axis < -rank || axis >= rank {
        return Err(Error::AxisOutOfRange {
            op: OP,
            axis,
            rank: rank as usize,
            shape: first.shape().clone(),
        });
    }
    let at = if axis < 0 { axis + rank } else { axis };
    let parts = xs
        .iter()
        .map(|x| unsqueeze(x, at))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| e.in_op(OP))?;
    let refs: Vec<&Tensor> = parts.iter().collect();
    concat_all(&refs, at).map_err(|e| e.in_op(OP))
}
