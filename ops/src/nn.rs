//! Neural-network ops: softmax, log-softmax, the usual losses, dropout, layer
//! normalisation and embeddings.

use crate::reduce::stable_max;
use crate::{add, add_scalar, exp, log, mul, mul_scalar, neg, square, sub, sum};
use autograd_core::cases;
use autograd_core::random::Rng;
use autograd_core::{
    BinaryOp, CheckCase, DType, Error, ReduceOp, Result, Tensor, UnaryOp, compute, grad_if,
};
use autograd_macros::differentiable;

/// `x - m - log Σ exp(x - m)` along `axis` with `m` the (clamped) max: log-softmax
/// without overflow.
fn log_softmax_forward(op: &'static str, x: &Tensor, axis: usize) -> Result<Tensor> {
    let shifted = compute::binary(x, &stable_max(op, x, axis)?, BinaryOp::Sub)?;
    let e = exp(&shifted)?;
    let log_sum = log(&compute::reduce(&e, ReduceOp::Sum, &[axis], true)?)?;
    compute::binary(&shifted, &log_sum, BinaryOp::Sub)
}

/// `exp(x_i) / Σ_j exp(x_j)` along `axis` (negative counts from the end), computed
/// after subtracting the max so that large inputs do not overflow.
#[differentiable(crate = ::autograd_core, method)]
pub mod softmax {
    use super::*;

    /// The axis normalised over.
    #[derive(Clone, Copy, Debug)]
    pub struct Softmax {
        /// The axis normalised over; negative counts from the end.
        pub axis: isize,
    }

    /// The softmax along `axis`, shifted by the max. An error when `axis` is out of
    /// range or has length 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let axis = compute::normalize_axis("softmax", self.axis, x)?;
        let m = stable_max("softmax", x, axis)?;
        let e = exp(&compute::binary(x, &m, BinaryOp::Sub)?)?;
        let s = compute::reduce(&e, ReduceOp::Sum, &[axis], true)?;
        compute::binary(&e, &s, BinaryOp::Div)
    }

    /// `y ⊙ (g - Σ g ⊙ y)` from the saved output `y`.
    pub fn backward(&self, grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(grad) {
            let g = self.backward(&crate::wide(grad)?, &crate::wide(output)?)?;
            return crate::to_dtype(&g, d);
        }
        let dot = sum(&mul(grad, output)?, self.axis, true)?;
        mul(output, &sub(grad, &dot)?)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor in `[-2, 2)`, normalised over the last
    /// axis and over a middle one.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(51, &[2, 3, 4], -2.0, 2.0);
        vec![
            cases::unary("softmax axis -1", x.clone(), |x| softmax(x, -1)),
            cases::unary("softmax axis 1", x, |x| softmax(x, 1)),
        ]
    }
}

/// `log softmax(x)` along `axis`, computed directly (`x - m - log Σ exp(x - m)`), so
/// it stays finite where `softmax` underflows to 0.
#[differentiable(crate = ::autograd_core, method)]
pub mod log_softmax {
    use super::*;

    /// The axis normalised over.
    #[derive(Clone, Copy, Debug)]
    pub struct LogSoftmax {
        /// The axis normalised over; negative counts from the end.
        pub axis: isize,
    }

    /// The log-softmax along `axis`. An error when `axis` is out of range or has
    /// length 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let axis = compute::normalize_axis("log_softmax", self.axis, x)?;
        log_softmax_forward("log_softmax", x, axis)
    }

    /// `g - exp(y) Σ g` from the saved output `y`.
    pub fn backward(&self, grad: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(grad) {
            let g = self.backward(&crate::wide(grad)?, &crate::wide(output)?)?;
            return crate::to_dtype(&g, d);
        }
        sub(grad, &mul(&exp(output)?, &sum(grad, self.axis, true)?)?)
    }

    /// Gradcheck inputs: a `[2, 3, 4]` tensor in `[-2, 2)`, normalised over the last
    /// axis and over the first.
    pub fn check_cases() -> Vec<CheckCase> {
        let x = cases::uniform(52, &[2, 3, 4], -2.0, 2.0);
        vec![
            cases::unary("log_softmax axis -1", x.clone(), |x| log_softmax(x, -1)),
            cases::unary("log_softmax axis 0", x, |x| log_softmax(x, 0)),
        ]
    }
}

/// Reads and checks cross_entropy's targets: one integer class index per row (an
/// integer tensor, read on the host).
fn class_targets(logits: &Tensor, targets: &Tensor) -> Result<Vec<usize>> {
    if logits.rank() != 2 {
        return Err(Error::Shape {
            op: "cross_entropy",
            msg: format!(
                "logits must be [N, C] (a row of class scores per sample), got shape {}",
                logits.shape()
            ),
        });
    }
    let (n, c) = (logits.dims()[0], logits.dims()[1]);
    if targets.dims() != [n] {
        return Err(Error::Shape {
            op: "cross_entropy",
            msg: format!(
                "targets must be [N] = [{n}] (one class index per row of logits {}), got shape {}",
                logits.shape(),
                targets.shape()
            ),
        });
    }
    if n == 0 || c == 0 {
        return Err(Error::Shape {
            op: "cross_entropy",
            msg: format!(
                "logits of shape {} hold no sample or no class; the mean loss is undefined",
                logits.shape()
            ),
        });
    }
    if !targets.dtype().is_integer() {
        return Err(Error::InvalidArgument {
            op: "cross_entropy",
            msg: format!(
                "the targets (shape {}) are {}, and cross_entropy takes integer class indices \
                 (i64, as PyTorch's); convert them with `.to_dtype(DType::I64)`, or build them \
                 with `Tensor::from_vec(vec![..i64 classes..], [{n}])`",
                targets.shape(),
                targets.dtype()
            ),
        });
    }
    targets
        .to_vec::<i64>()?
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            usize::try_from(t)
                .ok()
                .filter(|&k| k < c)
                .ok_or_else(|| Error::InvalidArgument {
                    op: "cross_entropy",
                    msg: format!(
                        "target {t} (row {i}) is not a class index in 0..{c} (logits {}, \
                         targets {})",
                        logits.shape(),
                        targets.shape()
                    ),
                })
        })
        .collect()
}

/// Mean cross-entropy of `logits` (`[N, C]`, unnormalised class scores) against
/// integer class `targets` (`[N]`): `-(1/N) Σ_i log_softmax(logits)[i, targets[i]]`,
/// a scalar.
///
/// `targets` holds class indices as integers (`i64`, as PyTorch's; `i32` and `u8`
/// too; read on the host) and gets no gradient; a floating `targets` or a value
/// outside `0..C` is an error naming the op. The log-softmax is computed stably (max subtracted first).
#[differentiable(crate = ::autograd_core, method)]
pub mod cross_entropy {
    use super::*;

    /// The mean loss over the batch, a rank-0 tensor. An error when `logits` is not
    /// `[N, C]` with `N, C > 0`, when `targets` is not `[N]` integers, or when a
    /// target is not a class index in `0..C`.
    pub fn forward(logits: &Tensor, #[no_grad] targets: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(logits) {
            return compute::cast(&forward(&compute::cast(logits, DType::F32)?, targets)?, d);
        }
        let classes = class_targets(logits, targets)?;
        let (n, c) = (logits.dims()[0], logits.dims()[1]);
        let log_p = log_softmax_forward("cross_entropy", logits, 1)?;
        let flat: Vec<usize> = classes
            .iter()
            .enumerate()
            .map(|(i, &k)| i * c + k)
            .collect();
        let picked = compute::index_select(&compute::reshape(&log_p, [n * c])?, 0, &flat)?;
        let total = compute::reduce(&picked, ReduceOp::Sum, &[0], false)?;
        compute::unary(&total, UnaryOp::MulScalar(-1.0 / n as f64))
    }

    /// `g (softmax(logits) - onehot(targets)) / N`; softmax is the recorded op, so the
    /// gradient can be differentiated again; the one-hot matrix is a constant.
    pub fn backward(grad: &Tensor, logits: &Tensor, targets: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(logits) {
            let g = backward(&crate::wide(grad)?, &crate::wide(logits)?, targets)?;
            return crate::to_dtype(&g, d);
        }
        let classes = class_targets(logits, targets)?;
        let (n, c) = (logits.dims()[0], logits.dims()[1]);
        let hot = compute::one_hot(logits, &classes, c)?;
        let diff = sub(&softmax(logits, 1)?, &hot)?;
        mul(grad, &mul_scalar(&diff, 1.0 / n as f64)?)
    }

    /// Gradcheck inputs: `[3, 4]` logits against fixed classes (the targets held
    /// constant).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "cross_entropy [3,4]",
                vec![
                    cases::uniform(53, &[3, 4], -2.0, 2.0),
                    crate::index_values(&[0, 3, 1], &[3]),
                ],
                |x| cross_entropy(&x[0], &x[1]),
            )
            .differentiable(vec![true, false]),
        ]
    }
}

/// Mean squared error `mean((pred - target)²)`, a scalar; both inputs are
/// differentiable.
///
/// `pred` and `target` must have the same shape: unlike the elementwise ops this
/// loss does not broadcast, because a `[N, 1]` prediction against a `[N]` target
/// would silently compare every pair (`[N, N]`).
#[differentiable(crate = ::autograd_core, method)]
pub mod mse_loss {
    use super::*;

    /// The mean over every element of `(pred - target)²`, a rank-0 tensor. An error
    /// when the shapes differ.
    pub fn forward(pred: &Tensor, target: &Tensor) -> Result<Tensor> {
        if pred.shape() != target.shape() {
            return Err(Error::Shape {
                op: "mse_loss",
                msg: format!(
                    "pred has shape {} but target has shape {}; they must match (reshape one \
                     of them: this loss does not broadcast)",
                    pred.shape(),
                    target.shape()
                ),
            });
        }
        let diff = compute::binary(pred, target, BinaryOp::Sub)?;
        let sq = square(&diff)?;
        let axes: Vec<usize> = (0..sq.rank()).collect();
        let total = compute::reduce(&sq, ReduceOp::Sum, &axes, false)?;
        compute::unary(&total, UnaryOp::MulScalar(1.0 / pred.numel() as f64))
    }

    /// `±2 g (pred - target) / n`.
    pub fn backward(
        grad: &Tensor,
        pred: &Tensor,
        target: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let scale = 2.0 / pred.numel() as f64;
        let d_pred = mul_scalar(&mul(grad, &sub(pred, target)?)?, scale)?;
        let d_target = grad_if(needs[1], || neg(&d_pred))?;
        Ok((needs[0].then_some(d_pred), d_target))
    }

    /// Gradcheck inputs: two `[2, 3]` tensors, both differentiated.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![CheckCase::new(
            "mse_loss [2,3]",
            vec![
                cases::uniform(54, &[2, 3], -1.0, 1.0),
                cases::uniform(55, &[2, 3], -1.0, 1.0),
            ],
            |x| mse_loss(&x[0], &x[1]),
        )]
    }
}

/// `x` times a fixed `mask` of the same shape: the recorded op of [`dropout`],
/// registered as `dropout`. The mask (already scaled) gets no gradient, and the
/// graph keeps the mask alone: the backward is `grad · mask`.
#[differentiable(crate = ::autograd_core, name = "dropout")]
pub mod dropout_op {
    use super::*;

    /// `x · mask`. An error when the shapes, dtypes or devices differ.
    pub fn forward(x: &Tensor, #[no_grad] mask: &Tensor) -> Result<Tensor> {
        if x.shape() != mask.shape() {
            return Err(Error::Shape {
                op: "dropout",
                msg: format!(
                    "the mask has shape {}, x has shape {}; they must match",
                    mask.shape(),
                    x.shape()
                ),
            });
        }
        compute::binary(x, mask, BinaryOp::Mul).map_err(|e| e.in_op("dropout"))
    }

    /// `grad · mask`, the same mask.
    pub fn backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
        mul(grad, mask)
    }

    /// Gradcheck input: a `[2, 3]` tensor and a fixed mask of `p = ½` (kept
    /// entries scaled by 2), held constant.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "dropout [2,3]",
                vec![
                    cases::uniform(56, &[2, 3], -1.0, 1.0),
                    cases::values(&[0.0, 2.0, 2.0, 0.0, 2.0, 0.0], &[2, 3]),
                ],
                |x| dropout_op(&x[0], &x[1]),
            )
            .differentiable(vec![true, false]),
        ]
    }
}

/// Dropout: in training (`train`), each element of `x` is zeroed with probability
/// `p` and the others scaled by `1 / (1 - p)`, so the mean is preserved; in
/// evaluation it is `x` itself (no node recorded). `p = 0` is the identity too;
/// `p = 1` zeroes everything.
///
/// The mask is drawn from `rng` on the host (one draw per element, row-major:
/// the same seed gives the same mask on every machine and device), moved to `x`'s
/// device, and recorded with `x` as one `dropout` node that keeps the mask, not
/// `x`: the gradient is `grad · mask`, the same mask, `0` or `1 / (1 - p)`.
///
/// Errors name `dropout`: `p` outside `[0, 1]` (or NaN).
#[track_caller]
pub fn dropout(x: &Tensor, p: f64, train: bool, rng: &mut Rng) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::InvalidArgument {
            op: "dropout",
            msg: format!(
                "p = {p} is not a probability; the chance of zeroing an element must be in \
                 [0, 1]"
            ),
        });
    }
    if !train || p == 0.0 {
        return Ok(x.clone());
    }
    let keep = if p < 1.0 { 1.0 / (1.0 - p) } else { 0.0 };
    let values: Vec<f64> = (0..x.numel())
        .map(|_| if rng.next_f64() < p { 0.0 } else { keep })
        .collect();
    let build = || {
        let mask = Tensor::from_vec(values, x.shape().clone())?;
        compute::to_device(&compute::cast(&mask, x.dtype())?, x.device())
    };
    let mask = build().map_err(|e| e.in_op("dropout"))?;
    dropout_op(x, &mask)
}

/// Layer normalisation over the last axis without the affine part:
/// `(x - mean) / √(var + eps)`, mean and (biased) variance over the last axis. The
/// op behind [`layer_norm`], registered as `layer_norm`.
#[differentiable(crate = ::autograd_core, name = "layer_norm")]
pub mod layer_norm_op {
    use super::*;

    /// The stabiliser.
    #[derive(Clone, Copy, Debug)]
    pub struct LayerNormOp {
        /// Added to the variance before the square root (PyTorch's default is
        /// `1e-5`); at least 0.
        pub eps: f64,
    }

    /// The normalised rows, computed in one pass of unrecorded kernels. An error
    /// naming `layer_norm` for a rank-0 `x`, an empty last axis, or `eps` negative
    /// or NaN.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            return compute::cast(&self.forward(&compute::cast(x, DType::F32)?)?, d);
        }
        let a = check_layer_norm(x, self.eps)?;
        let (d, ss) = crate::reduce::deviations(x, a)?;
        let var = compute::unary(&ss, UnaryOp::DivScalar(x.dims()[a] as f64))?;
        let sd = crate::sqrt(&compute::unary(&var, UnaryOp::AddScalar(self.eps))?)?;
        compute::binary(&d, &sd, BinaryOp::Div)
    }

    /// `r (g - mean(g) - y · mean(g · y))` with `y` the saved output and
    /// `r = 1/√(var(x) + eps)`, every mean over the last axis; recorded (the
    /// variance as a [`var`](mod@crate::var) of `x`), so twice differentiable.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        if let Some(d) = crate::half(x) {
            let (g, x, y) = (crate::wide(grad)?, crate::wide(x)?, crate::wide(output)?);
            return crate::to_dtype(&self.backward(&g, &x, &y)?, d);
        }
        let r = crate::pow_scalar(&add_scalar(&crate::var(x, -1, 0, true)?, self.eps)?, -0.5)?;
        let g_mean = crate::mean(grad, -1, true)?;
        let gy_mean = crate::mean(&mul(grad, output)?, -1, true)?;
        mul(&r, &sub(&sub(grad, &g_mean)?, &mul(output, &gy_mean)?)?)
    }

    /// Gradcheck inputs: `[3, 5]` rows, and a `[2, 2, 4]` batch, with eps `1e-5`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            cases::unary(
                "layer_norm [3,5]",
                cases::uniform(57, &[3, 5], -2.0, 2.0),
                |x| layer_norm_op(x, 1e-5),
            ),
            cases::unary(
                "layer_norm [2,2,4]",
                cases::uniform(58, &[2, 2, 4], -1.0, 1.0),
                |x| layer_norm_op(x, 1e-5),
            ),
        ]
    }
}

/// The last axis of `x`, checked for a layer norm with `eps`.
fn check_layer_norm(x: &Tensor, eps: f64) -> Result<usize> {
    if x.rank() == 0 || x.dims()[x.rank() - 1] == 0 {
        return Err(Error::Shape {
            op: "layer_norm",
            msg: format!(
                "normalises over the last axis, and x of shape {} has {}; give x at least one \
                 axis with at least one element",
                x.shape(),
                if x.rank() == 0 {
                    "none"
                } else {
                    "an empty one"
                }
            ),
        });
    }
    if eps.is_nan() || eps < 0.0 {
        return Err(Error::InvalidArgument {
            op: "layer_norm",
            msg: format!("eps = {eps}; it must be at least 0 (PyTorch's default is 1e-5)"),
        });
    }
    Ok(x.rank() - 1)
}

/// Layer normalisation over the last axis (`torch.nn.functional.layer_norm(x,
/// (D,), weight, bias, eps)` for `x` of shape `[.., D]`): each row is shifted to
/// mean 0 and scaled to variance 1 (the biased variance, plus `eps`), then
/// multiplied by `weight` and shifted by `bias` where given (each of shape `[D]`).
///
/// Recorded as one `layer_norm` node (saving `x` and its output; the backward is
/// written with recorded ops, so twice differentiable), then a `mul` and an `add`
/// for the affine part. Errors name `layer_norm`: `x` of rank 0 or with an empty
/// last axis, `weight` or `bias` not of shape `[D]`, `eps` negative or NaN, mixed
/// dtypes or devices.
#[track_caller]
pub fn layer_norm(
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let axis = check_layer_norm(x, eps)?;
    let d = x.dims()[axis];
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t
            && t.dims() != [d]
        {
            return Err(Error::Shape {
                op: "layer_norm",
                msg: format!(
                    "the {name} has shape {}; it must be [{d}], one value per entry of the last \
                     axis of x {}",
                    t.shape(),
                    x.shape()
                ),
            });
        }
    }
    if let Some(h) = crate::half(x) {
        // Halves: the norm and its affine part in f32 (recorded conversions), the
        // result rounded once, as PyTorch's fused kernel.
        let (w, b) = (
            weight.map(crate::wide).transpose()?,
            bias.map(crate::wide).transpose()?,
        );
        let y = layer_norm(&crate::wide(x)?, w.as_ref(), b.as_ref(), eps)?;
        return crate::to_dtype(&y, h);
    }
    let mut y = layer_norm_op(x, eps)?;
    if let Some(w) = weight {
        y = mul(&y, w).map_err(|e| e.in_op("layer_norm"))?;
    }
    if let Some(b) = bias {
        y = add(&y, b).map_err(|e| e.in_op("layer_norm"))?;
    }
    Ok(y)
}

/// Rows of `weight` (`[V, D]`, one row per entry of a vocabulary) picked by
/// `indices` (any shape, integers in `0..V`: `i64`, as PyTorch's): the result
/// has shape `[..indices, D]` (`torch.nn.functional.embedding`).
///
/// Recorded as an [`index_select`](mod@crate::index_select) of the rows and a
/// [`reshape`](mod@crate::reshape): the gradient of `weight` adds each output
/// row's gradient into the row it came from (repeated indices add up); `indices`
/// gets none. Errors name `embedding`: `weight` not of rank 2, a floating
/// `indices` (convert it with `.to_dtype(DType::I64)`), an index out of `0..V`.
pub fn embedding(weight: &Tensor, indices: &Tensor) -> Result<Tensor> {
    const OP: &str = "embedding";
    if weight.rank() != 2 {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the weight has shape {}; it must be [V, D], one row of D values per index",
                weight.shape()
            ),
        });
    }
    let run = || {
        let flat = compute::reshape(&indices.detach(), [indices.numel()])?;
        let rows = crate::index_select(weight, &flat, 0)?;
        let mut shape = indices.shape().clone();
        shape.push(weight.dims()[1]);
        crate::reshape(&rows, shape)
    };
    run().map_err(|e| e.in_op(OP))
}

/// The classes of `indices` as one-hot rows (`torch.nn.functional.one_hot(indices,
/// num_classes)`): an `i64` tensor of shape `[..indices, num_classes]` on
/// `indices`' device, 1 at each index's class and 0 elsewhere.
///
/// `indices` is an integer tensor (`i64`, as PyTorch's; `i32` and `u8` too; read
/// on the host) of any shape; the result is a constant (not recorded; convert it
/// with `.to_dtype(DType::F32)` to weigh or mix it with floats). Errors name
/// `one_hot`: a floating `indices` (convert it with `.to_dtype(DType::I64)`), a
/// value outside `0..num_classes`.
///
/// ```
/// use autograd_core::{DType, Tensor};
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let hot = autograd_ops::one_hot(&Tensor::from_slice(&[2i64, 0], [2])?, 3)?;
/// assert_eq!((hot.dims(), hot.dtype()), ([2, 3].as_slice(), DType::I64));
/// assert_eq!(hot.to_vec::<i64>()?, [0, 0, 1, 1, 0, 0]);
/// # Ok(())
/// # }
/// ```
pub fn one_hot(indices: &Tensor, num_classes: usize) -> Result<Tensor> {
    const OP: &str = "one_hot";
    let run = || {
        let classes = compute::indices(OP, indices, num_classes)?;
        let like = compute::to_device(&Tensor::zeros([], DType::I64)?, indices.device())?;
        let hot = compute::one_hot(&like, &classes, num_classes)?;
        let mut shape = indices.shape().clone();
        shape.push(num_classes);
        compute::reshape(&hot, shape)
    };
    run().map_err(|e| e.in_op(OP))
}

/// The options of [`embedding_with`], PyTorch's defaults by [`Default`]: no
/// padding row, no renormalisation, `norm_type` 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmbeddingOptions {
    /// The row that gets no gradient (PyTorch's `padding_idx`; negative counts from
    /// the end): its lookups still read it, but its gradient stays 0.
    pub padding_idx: Option<i64>,
    /// Rows looked up whose `norm_type`-norm exceeds this are first scaled down to
    /// it, in place in `weight` (PyTorch's `max_norm`).
    pub max_norm: Option<f64>,
    /// The `p` of the norm `max_norm` bounds (`f64::INFINITY` for the largest
    /// magnitude); PyTorch's default is 2.
    pub norm_type: f64,
}

impl Default for EmbeddingOptions {
    fn default() -> Self {
        EmbeddingOptions {
            padding_idx: None,
            max_norm: None,
            norm_type: 2.0,
        }
    }
}

/// `weight`'s rows picked by `indices`, with PyTorch's options
/// (`torch.nn.functional.embedding(indices, weight, padding_idx, max_norm,
/// norm_type)`): [`embedding`] after [`embedding_renorm`] when `max_norm` is
/// given, with the `padding_idx` row held constant (its values are read, its
/// gradient is 0, as PyTorch's).
///
/// `weight` is `&mut` because `max_norm` rescales its rows in place, not
/// recorded, as PyTorch does: a parameter (a leaf that requires grad) is updated
/// for every handle, as an optimizer step would.
///
/// Errors name `embedding`: those of [`embedding`], a `padding_idx` outside
/// `-V..V`, and those of [`embedding_renorm`].
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// use autograd_core::Tensor;
/// use autograd_ops::{EmbeddingOptions, embedding_with};
/// let mut w = Tensor::from_slice(&[3.0f64, 4.0, 0.6, 0.8], [2, 2])?.with_requires_grad(true);
/// let i = Tensor::from_slice(&[0i64, 1], [2])?;
/// let opts = EmbeddingOptions { max_norm: Some(1.0), padding_idx: Some(1), ..Default::default() };
/// let y = embedding_with(&mut w, &i, &opts)?;
/// let v = w.to_vec::<f64>()?; // row 0 (norm 5) scaled to norm 1, in place
/// assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
/// autograd_ops::sum_all(&y)?.backward()?;
/// assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [1.0, 1.0, 0.0, 0.0]); // row 1 pads
/// # Ok(())
/// # }
/// ```
pub fn embedding_with(
    weight: &mut Tensor,
    indices: &Tensor,
    opts: &EmbeddingOptions,
) -> Result<Tensor> {
    const OP: &str = "embedding";
    if weight.rank() != 2 {
        // The message of the plain lookup.
        return embedding(weight, indices);
    }
    let v = weight.dims()[0];
    let pad = opts
        .padding_idx
        .map(|p| {
            let at = if p < 0 { p + v as i64 } else { p };
            usize::try_from(at)
                .ok()
                .filter(|&a| a < v)
                .ok_or_else(|| Error::InvalidArgument {
                    op: OP,
                    msg: format!(
                        "padding_idx {p} is not a row of the weight {} (rows -{v}..{v})",
                        weight.shape()
                    ),
                })
        })
        .transpose()?;
    if let Some(max_norm) = opts.max_norm {
        embedding_renorm(weight, indices, max_norm, opts.norm_type)?;
    }
    let Some(pad) = pad else {
        return embedding(weight, indices);
    };
    let run = || {
        let rows: Vec<bool> = (0..v).map(|r| r == pad).collect();
        let mask = compute::to_device(&Tensor::from_vec(rows, [v, 1])?, weight.device())?;
        let held = crate::r#where(&mask, &weight.detach(), weight)?;
        embedding(&held, indices)
    };
    run().map_err(|e| e.in_op(OP))
}

/// Scales down, in place, each row of `weight` (`[V, D]`) that `indices` picks and
/// whose `norm_type`-norm exceeds `max_norm`, to norm `max_norm` (by `max_norm /
/// (norm + 1e-7)`, as `torch.embedding_renorm_`); other rows are untouched. Not
/// recorded (no gradient flows through the rescaling), as PyTorch's; a parameter
/// is updated for every handle ([`Tensor::set_data`]).
///
/// Errors name `embedding`: `weight` not `[V, D]` or not a leaf, `indices` not
/// integers in `0..V`, `max_norm` negative or NaN, `norm_type` not positive.
pub fn embedding_renorm(
    weight: &mut Tensor,
    indices: &Tensor,
    max_norm: f64,
    norm_type: f64,
) -> Result<()> {
    const OP: &str = "embedding";
    if weight.rank() != 2 {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the weight has shape {}; it must be [V, D], one row of D values per index",
                weight.shape()
            ),
        });
    }
    if max_norm.is_nan() || max_norm < 0.0 || norm_type.is_nan() || norm_type <= 0.0 {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "max_norm = {max_norm}, norm_type = {norm_type}; max_norm must be at least 0 and \
                 norm_type positive (PyTorch's default is 2)"
            ),
        });
    }
    let (v, d) = (weight.dims()[0], weight.dims()[1]);
    let mut rows = compute::indices(OP, indices, v)?;
    rows.sort_unstable();
    rows.dedup();
    let mut values = weight.to_vec::<f64>()?;
    let mut changed = false;
    for r in rows {
        let row = &mut values[r * d..(r + 1) * d];
        let norm = if norm_type.is_infinite() {
            row.iter().fold(0.0f64, |m, x| m.max(x.abs()))
        } else {
            row.iter()
                .map(|x| x.abs().powf(norm_type))
                .sum::<f64>()
                .powf(1.0 / norm_type)
        };
        if norm > max_norm {
            let scale = max_norm / (norm + 1e-7);
            row.iter_mut().for_each(|x| *x *= scale);
            changed = true;
        }
    }
    if changed {
        let run = || {
            let new = compute::cast(&Tensor::from_vec(values, [v, d])?, weight.dtype())?;
            weight.set_data(&compute::to_device(&new, weight.device())?)
        };
        run().map_err(|e| e.in_op(OP))?;
    }
    Ok(())
}

/// Layer normalisation over the trailing axes `normalized_shape`
/// (`torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps)`): the
/// last `k` axes of `x` must be `normalized_shape`, and each block of those axes
/// is shifted to mean 0 and scaled to variance 1 (biased, plus `eps`), then
/// multiplied by `weight` and shifted by `bias` where given (each of shape
/// `normalized_shape`). [`layer_norm`] is the case of one axis.
///
/// Recorded as a [`reshape`](mod@crate::reshape) merging the trailing axes, the
/// [`layer_norm`] of the merged axis, and a reshape back. Errors name
/// `layer_norm`: an empty `normalized_shape`, one that is not `x`'s trailing
/// axes, `weight` or `bias` not of that shape, and those of [`layer_norm`].
///
/// ```
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = autograd_core::Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 2, 3])?;
/// let y = autograd_ops::layer_norm_shape(&x, &[2, 3], None, None, 1e-5)?;
/// let s: f64 = y.to_vec::<f64>()?.iter().sum();
/// assert!(s.abs() < 1e-12 && y.dims() == [1, 2, 3]);
/// # Ok(())
/// # }
/// ```
#[track_caller]
pub fn layer_norm_shape(
    x: &Tensor,
    normalized_shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    const OP: &str = "layer_norm";
    let k = normalized_shape.len();
    if k == 0 || k > x.rank() || x.dims()[x.rank() - k..] != *normalized_shape {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "normalized_shape {normalized_shape:?} must be the last axes of x, whose shape is \
                 {}; give x's trailing sizes (at least one)",
                x.shape()
            ),
        });
    }
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t
            && t.dims() != normalized_shape
        {
            return Err(Error::Shape {
                op: OP,
                msg: format!(
                    "the {name} has shape {}; it must be normalized_shape {normalized_shape:?}",
                    t.shape()
                ),
            });
        }
    }
    let lead = x.rank() - k;
    let n: usize = normalized_shape.iter().product();
    let merged: autograd_core::Shape = x.dims()[..lead].iter().copied().chain([n]).collect();
    let flat = |t: &Tensor| crate::reshape(t, autograd_core::Shape::from([n]));
    let run = || {
        let w = weight.map(flat).transpose()?;
        let b = bias.map(flat).transpose()?;
        let y = layer_norm(&crate::reshape(x, merged)?, w.as_ref(), b.as_ref(), eps)?;
        crate::reshape(&y, x.shape().clone())
    };
    run().map_err(|e| e.in_op(OP))
}
