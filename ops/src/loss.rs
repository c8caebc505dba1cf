//! Losses with PyTorch's options: the reduction ([`Reduction`]) of
//! `torch.nn.functional`'s losses, and [`l1_loss`], [`mse_loss_with`],
//! [`smooth_l1_loss`], [`huber_loss`], [`cross_entropy_with`], [`nll_loss`],
//! [`binary_cross_entropy`], [`binary_cross_entropy_with_logits`] and
//! [`kl_div`]. Each is a composition of recorded ops, so it is differentiable to
//! any order with no op of its own.

use crate::{
    abs, add, add_scalar, div, eq, exp, gather, gt, index_select, log, log_softmax, log1p,
    logsigmoid, lt, maximum, mean_all, mul, mul_scalar, neg, reshape, square, sub, sum, sum_all,
    r#where,
};
use autograd_core::{DType, Error, ReduceOp, Result, Shape, Tensor, compute};

/// How a loss folds its elementwise values: PyTorch's `reduction` argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// No reduction: the loss of every element, in the inputs' shape
    /// (`reduction='none'`).
    None,
    /// The sum of every element's loss, a rank-0 tensor (`reduction='sum'`).
    Sum,
    /// The mean of every element's loss, a rank-0 tensor (`reduction='mean'`,
    /// PyTorch's default).
    #[default]
    Mean,
}

impl Reduction {
    /// `x` reduced as `self` says.
    pub fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(x.clone()),
            Reduction::Sum => sum_all(x),
            Reduction::Mean => mean_all(x),
        }
    }
}

/// `pred - target`, once the shapes are checked equal: these losses do not
/// broadcast (a `[N, 1]` prediction against a `[N]` target would compare every
/// pair).
fn difference(op: &'static str, pred: &Tensor, target: &Tensor) -> Result<Tensor> {
    if pred.shape() != target.shape() {
        return Err(Error::Shape {
            op,
            msg: format!(
                "pred has shape {} but target has shape {}; they must match (reshape one of \
                 them: this loss does not broadcast)",
                pred.shape(),
                target.shape()
            ),
        });
    }
    sub(pred, target)
}

/// `torch.nn.functional.l1_loss(pred, target, reduction)`: `|pred - target|`,
/// reduced. An error when the shapes differ.
pub fn l1_loss(pred: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduction.apply(&abs(&difference("l1_loss", pred, target)?)?)
}

/// `torch.nn.functional.mse_loss(pred, target, reduction)`: `(pred - target)²`,
/// reduced ([`mse_loss`](mod@crate::mse_loss) is the default, `Mean`). An error when
/// the shapes differ.
pub fn mse_loss_with(pred: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduction.apply(&square(&difference("mse_loss", pred, target)?)?)
}

/// The options of [`smooth_l1_loss`], PyTorch's defaults by [`Default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmoothL1Options {
    /// How the elementwise losses are folded (default `Mean`).
    pub reduction: Reduction,
    /// Where the loss turns from quadratic to linear (default 1.0; at least 0, and
    /// 0 is the L1 loss).
    pub beta: f64,
}

impl Default for SmoothL1Options {
    fn default() -> Self {
        Self {
            reduction: Reduction::Mean,
            beta: 1.0,
        }
    }
}

/// The options of [`huber_loss`], PyTorch's defaults by [`Default`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HuberOptions {
    /// How the elementwise losses are folded (default `Mean`).
    pub reduction: Reduction,
    /// Where the loss turns from quadratic to linear (default 1.0; above 0).
    pub delta: f64,
}

impl Default for HuberOptions {
    fn default() -> Self {
        Self {
            reduction: Reduction::Mean,
            delta: 1.0,
        }
    }
}

/// `0.5 d² · scale` where `d < bound`, else `slope · (d - 0.5 bound)`, for `d ≥ 0`.
fn quadratic_then_linear(d: &Tensor, bound: f64, scale: f64, slope: f64) -> Result<Tensor> {
    let inside = lt(d, &add_scalar(&d.zeros_like()?, bound)?)?;
    let quadratic = mul_scalar(&square(d)?, 0.5 * scale)?;
    let linear = mul_scalar(&add_scalar(d, -0.5 * bound)?, slope)?;
    r#where(&inside, &quadratic, &linear)
}

/// `torch.nn.functional.smooth_l1_loss(pred, target, reduction, beta)`: with
/// `d = |pred - target|`, `0.5 d² / beta` where `d < beta`, else `d - 0.5 beta`,
/// reduced (`beta = 0` is the L1 loss). An error when the shapes differ or `beta`
/// is negative or not finite.
pub fn smooth_l1_loss(pred: &Tensor, target: &Tensor, options: SmoothL1Options) -> Result<Tensor> {
    const OP: &str = "smooth_l1_loss";
    let beta = options.beta;
    if !(beta >= 0.0 && beta.is_finite()) {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "beta is {beta}; it must be finite and at least 0 (PyTorch's default is 1.0)"
            ),
        });
    }
    let d = abs(&difference(OP, pred, target)?)?;
    if beta == 0.0 {
        return options.reduction.apply(&d);
    }
    options
        .reduction
        .apply(&quadratic_then_linear(&d, beta, 1.0 / beta, 1.0)?)
}

/// `torch.nn.functional.huber_loss(pred, target, reduction, delta)`: with
/// `d = |pred - target|`, `0.5 d²` where `d < delta`, else
/// `delta · (d - 0.5 delta)`, reduced (`delta ·` the smooth L1 loss with
/// `beta = delta`). An error when the shapes differ or `delta` is not a finite
/// positive number.
pub fn huber_loss(pred: &Tensor, target: &Tensor, options: HuberOptions) -> Result<Tensor> {
    const OP: &str = "huber_loss";
    let delta = options.delta;
    if !(delta > 0.0 && delta.is_finite()) {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "delta is {delta}; it must be finite and above 0 (PyTorch's default is 1.0)"
            ),
        });
    }
    let d = abs(&difference(OP, pred, target)?)?;
    options
        .reduction
        .apply(&quadratic_then_linear(&d, delta, 1.0, delta)?)
}

// ----- Classification and divergence losses -----

/// The options of [`cross_entropy_with`], PyTorch's defaults by [`Default`].
#[derive(Clone, Debug)]
pub struct CrossEntropyOptions {
    /// A weight per class, `[C]` (default none: every class weighs 1). It scales
    /// each position's loss by its target class's weight, and the `Mean` divides
    /// by the sum of the weights of the counted targets.
    pub weight: Option<Tensor>,
    /// A class index whose positions count for nothing: loss 0, no gradient, and
    /// left out of the `Mean`'s divisor (default -100, PyTorch's). Class-index
    /// targets only.
    pub ignore_index: i64,
    /// How the per-position losses are folded (default `Mean`).
    pub reduction: Reduction,
    /// `ε` in `[0, 1]`: the target mixes `1 - ε` of itself with `ε` spread evenly
    /// over the `C` classes (default 0, no smoothing).
    pub label_smoothing: f64,
}

impl Default for CrossEntropyOptions {
    fn default() -> Self {
        Self {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
        }
    }
}

/// The options of [`nll_loss`], PyTorch's defaults by [`Default`].
#[derive(Clone, Debug)]
pub struct NllLossOptions {
    /// A weight per class, `[C]` (default none), as [`CrossEntropyOptions::weight`].
    pub weight: Option<Tensor>,
    /// A class index whose positions count for nothing (default -100), as
    /// [`CrossEntropyOptions::ignore_index`].
    pub ignore_index: i64,
    /// How the per-position losses are folded (default `Mean`: divided by the sum
    /// of the weights of the counted targets).
    pub reduction: Reduction,
}

impl Default for NllLossOptions {
    fn default() -> Self {
        Self {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
        }
    }
}

/// The options of [`binary_cross_entropy_with_logits`], PyTorch's defaults by
/// [`Default`].
#[derive(Clone, Debug, Default)]
pub struct BceWithLogitsOptions {
    /// A weight of each element's loss, broadcasting to the input's shape (default
    /// none).
    pub weight: Option<Tensor>,
    /// The weight of the positive term (`t · log σ(x)`), broadcasting to the
    /// input's shape: typically `[C]`, one per class of `[N, C]` inputs (default
    /// none, 1).
    pub pos_weight: Option<Tensor>,
    /// How the elementwise losses are folded (default `Mean`).
    pub reduction: Reduction,
}

/// How [`kl_div`] folds its elementwise values: PyTorch's `reduction` of
/// `kl_div`, which has `'batchmean'` besides the usual three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KlReduction {
    /// No reduction: the input's shape (`'none'`).
    None,
    /// The sum of every element (`'sum'`).
    Sum,
    /// The mean over every element (`'mean'`, PyTorch's default, though it is not
    /// the KL divergence: PyTorch warns and recommends `'batchmean'`).
    #[default]
    Mean,
    /// The sum divided by the size of the first axis, the batch (`'batchmean'`:
    /// the KL divergence per sample); the sum for a rank-0 input.
    BatchMean,
}

/// The options of [`kl_div`], PyTorch's defaults by [`Default`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KlDivOptions {
    /// How the elementwise values are folded (default `Mean`).
    pub reduction: KlReduction,
    /// Whether the target holds log-probabilities (default false: probabilities).
    pub log_target: bool,
}

/// An error unless `input` and `target` have one shape (these losses do not
/// broadcast them).
fn same_shape(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    if input.shape() != target.shape() {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input has shape {} but the target has shape {}; they must match \
                 (reshape one of them: this loss does not broadcast)",
                input.shape(),
                target.shape()
            ),
        });
    }
    Ok(())
}

/// `x` in `dtype`, recorded (a no-op when it already is).
fn in_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    if x.dtype() == dtype {
        Ok(x.clone())
    } else {
        crate::to_dtype(x, dtype)
    }
}

/// A rank-0 constant `value` of `like`'s dtype and device.
fn constant(like: &Tensor, value: f64) -> Result<Tensor> {
    like.full_like_shape(Shape::from(Vec::<usize>::new()), value)
}

/// The floating `what` (a weight of `op`) in `input`'s dtype, once checked to
/// broadcast to `input`'s shape without growing it.
fn elementwise_weight(
    op: &'static str,
    what: &str,
    weight: Option<&Tensor>,
    input: &Tensor,
) -> Result<Option<Tensor>> {
    let Some(w) = weight else {
        return Ok(None);
    };
    let (wd, xd) = (w.dims(), input.dims());
    let fits = wd.len() <= xd.len()
        && wd
            .iter()
            .rev()
            .zip(xd.iter().rev())
            .all(|(&a, &b)| a == 1 || a == b);
    if !fits {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the {what} has shape {} and does not broadcast to the input's shape {} (the \
                 loss has the input's shape); give it the input's shape or one that \
                 broadcasts to it (e.g. [C] for [N, C])",
                w.shape(),
                input.shape()
            ),
        });
    }
    floating(op, what, w)?;
    in_dtype(w, input.dtype()).map(Some)
}

/// An error naming `op` and `what` unless `w` is floating.
fn floating(op: &'static str, what: &str, w: &Tensor) -> Result<()> {
    if !w.dtype().is_float() {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the {what} (shape {}) is {}; it must be floating: convert it with \
                 `.to_dtype(DType::F32)`",
                w.shape(),
                w.dtype()
            ),
        });
    }
    Ok(())
}

/// The class axis: 0 of an unbatched `[C]` input, else 1 (`[N, C, d1, ..]`).
fn class_axis(input: &Tensor) -> usize {
    usize::from(input.rank() > 1)
}

/// The input's shape without its class axis: the shape of class-index targets and
/// of the unreduced loss.
fn target_shape(input: &Tensor) -> Shape {
    let mut dims = input.dims().to_vec();
    dims.remove(class_axis(input));
    Shape::from(dims)
}

/// The number of classes `C` of `input`, once checked to be floating class scores
/// (or log-probabilities) of shape `[C]`, `[N, C]` or `[N, C, d1, ..]` with `C > 0`.
fn class_count(op: &'static str, input: &Tensor) -> Result<usize> {
    if !input.dtype().is_float() {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the input (shape {}) is {}; it must be floating (a score per class): \
                 convert it with `.to_dtype(DType::F32)`",
                input.shape(),
                input.dtype()
            ),
        });
    }
    if input.rank() == 0 {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input has shape {}; it must be [C] (one sample), [N, C] or \
                 [N, C, d1, ..], with the classes on axis 1",
                input.shape()
            ),
        });
    }
    let c = input.dims()[class_axis(input)];
    if c == 0 {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input of shape {} has no class (C = 0 on axis {}); it needs at least one",
                input.shape(),
                class_axis(input)
            ),
        });
    }
    Ok(c)
}

/// The class weight of `op` in `input`'s dtype, once checked to be `[C]` and
/// floating.
fn class_weight(
    op: &'static str,
    weight: Option<&Tensor>,
    input: &Tensor,
    c: usize,
) -> Result<Option<Tensor>> {
    let Some(w) = weight else {
        return Ok(None);
    };
    if w.dims() != [c] {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the weight has shape {} but the input {} has C = {c} classes (axis {}); it \
                 must be [{c}], one weight per class",
                w.shape(),
                input.shape(),
                class_axis(input)
            ),
        });
    }
    floating(op, "weight", w)?;
    in_dtype(w, input.dtype()).map(Some)
}

/// The class weight `[C]` shaped to broadcast along `input`'s class axis
/// (`[1, C, 1, ..]`).
fn along_classes(w: &Tensor, input: &Tensor) -> Result<Tensor> {
    let mut dims = vec![1; input.rank()];
    dims[class_axis(input)] = w.numel();
    reshape(w, Shape::from(dims))
}

/// The class of each position of an integer `target` (row-major), `None` where it
/// is `ignore_index`, once the target is checked to be integer class indices of
/// `input`'s shape without its class axis, each in `0..C` or `ignore_index`.
fn class_indices(
    op: &'static str,
    input: &Tensor,
    target: &Tensor,
    ignore_index: i64,
    c: usize,
) -> Result<Vec<Option<usize>>> {
    let want = target_shape(input);
    if !target.dtype().is_integer() {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the target (shape {}) is {}, and {op} takes class indices: integers (i64, \
                 as PyTorch's) of shape {want} (the input {} without its class axis); \
                 convert them with `.to_dtype(DType::I64)`",
                target.shape(),
                target.dtype(),
                input.shape()
            ),
        });
    }
    if target.shape() != &want {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the target has shape {} but the input {} takes class indices of shape \
                 {want} (the input without its class axis {}); reshape the target",
                target.shape(),
                input.shape(),
                class_axis(input)
            ),
        });
    }
    target
        .to_vec::<i64>()?
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            if t == ignore_index {
                return Ok(None);
            }
            usize::try_from(t)
                .ok()
                .filter(|&k| k < c)
                .map(Some)
                .ok_or_else(|| Error::InvalidArgument {
                    op,
                    msg: format!(
                        "target {t} (flat position {i}) is not a class index in 0..{c} nor \
                         the ignore_index {ignore_index} (input {}, target {}); fix the \
                         target, or set ignore_index to {t} to skip such positions",
                        input.shape(),
                        target.shape()
                    ),
                })
        })
        .collect()
}

/// The positions of class-index targets, as the losses use them: their target
/// classes (0 where ignored), which count, and the weight of each target class.
struct Positions {
    /// The target's shape (the input's without its class axis).
    shape: Shape,
    /// The class of each position (0 where ignored), the input's rank with size 1
    /// on the class axis.
    index: Tensor,
    /// `bool`, the target's shape: the positions not ignored.
    counted: Tensor,
    /// How many positions are counted.
    count: usize,
    /// The weight of each position's target class, the target's shape.
    weight: Option<Tensor>,
    /// A rank-0 zero of the input's dtype.
    zero: Tensor,
}

impl Positions {
    fn new(input: &Tensor, classes: &[Option<usize>], weight: Option<&Tensor>) -> Result<Self> {
        let shape = target_shape(input);
        let device = input.device();
        let safe: Vec<i64> = classes.iter().map(|k| k.map_or(0, |k| k as i64)).collect();
        let mut index_dims = shape.dims().to_vec();
        index_dims.insert(class_axis(input), 1);
        let index = compute::to_device(&Tensor::from_slice(&safe, index_dims)?, device)?;
        let keep: Vec<bool> = classes.iter().map(Option::is_some).collect();
        let counted = compute::to_device(&Tensor::from_slice(&keep, shape.clone())?, device)?;
        let weight = match weight {
            Some(w) => {
                let flat = compute::to_device(&Tensor::from_slice(&safe, [safe.len()])?, device)?;
                Some(reshape(&index_select(w, &flat, 0)?, shape.clone())?)
            }
            None => None,
        };
        Ok(Self {
            shape,
            index,
            counted,
            count: keep.iter().filter(|&&k| k).count(),
            weight,
            zero: constant(input, 0.0)?,
        })
    }

    /// `x` (the target's shape) where counted, else 0.
    fn counted_only(&self, x: &Tensor) -> Result<Tensor> {
        r#where(&self.counted, x, &self.zero)
    }

    /// `loss` (0 where ignored) reduced as PyTorch's class losses: the `Mean`
    /// divides by the summed weights of the counted targets (their count without
    /// a weight; 0 of them gives NaN, as PyTorch).
    fn reduce(&self, loss: &Tensor, reduction: Reduction) -> Result<Tensor> {
        match (reduction, &self.weight) {
            (Reduction::None, _) => Ok(loss.clone()),
            (Reduction::Sum, _) => sum_all(loss),
            (Reduction::Mean, Some(w)) => div(&sum_all(loss)?, &sum_all(&self.counted_only(w)?)?),
            (Reduction::Mean, None) => mul_scalar(&sum_all(loss)?, 1.0 / self.count as f64),
        }
    }

    /// The negative log-likelihood of the log-probabilities `log_p` (the input's
    /// layout): `-w[t] · log_p[t]` at each counted position, 0 at ignored ones,
    /// reduced.
    fn nll(&self, log_p: &Tensor, reduction: Reduction) -> Result<Tensor> {
        let axis = class_axis(log_p) as isize;
        let picked = reshape(&gather(log_p, &self.index, axis)?, self.shape.clone())?;
        let weighted = match &self.weight {
            Some(w) => mul(&picked, w)?,
            None => picked,
        };
        self.reduce(&self.counted_only(&neg(&weighted)?)?, reduction)
    }
}

/// `torch.nn.functional.cross_entropy(input, target, weight, ignore_index,
/// reduction, label_smoothing)`: the cross-entropy of the softmax of `input`
/// (unnormalised class scores) against `target`, with PyTorch's options
/// ([`CrossEntropyOptions`]).
///
/// `input` is `[C]` (one sample), `[N, C]` or `[N, C, d1, ..]` (classes on axis
/// 1). `target` is either
/// - class indices: an integer tensor (`i64`, as PyTorch's; `i32`, `u8` too; read
///   on the host; no gradient) of `input`'s shape without the class axis (`[]`,
///   `[N]`, `[N, d1, ..]`). With `p = log_softmax(input)` and weights `w` (1
///   without), position `n` loses `ℓ_n = -w[t_n] · p[n, t_n]`, and 0 where
///   `t_n == ignore_index`. `Mean` is `Σ ℓ_n / Σ w[t_n]` over the counted
///   positions (their count without weights). With label smoothing `ε`, the loss
///   is `(1 - ε) · that + (ε / C) · s`, where `s_n = -Σ_c w[c] · p[n, c]` (0 where
///   ignored) is reduced the same way (`Mean` by the same divisor);
/// - class probabilities: a floating tensor of `input`'s shape (differentiable).
///   With `ε`, the target becomes `t · (1 - ε) + ε / C`; position `n` loses
///   `-Σ_c w[c] · t[n, c] · p[n, c]`, and `Mean` divides the sum by the number of
///   positions (`numel / C`), whatever the weights. `ignore_index` must stay
///   negative.
///
/// `None` gives the target's shape without the class axis; `Sum` and `Mean` a
/// rank-0 tensor. The defaults on `[N, C]` with no target ignored are the
/// registered [`cross_entropy`](mod@crate::cross_entropy) op. Errors name
/// `cross_entropy`: an input of rank 0, not floating or with no class; a weight
/// not `[C]`; class indices of the wrong shape, or one outside `0..C` other than
/// `ignore_index`; a floating target not of the input's shape; `ignore_index ≥ 0`
/// with probabilities; `label_smoothing` outside `[0, 1]`.
///
/// ```
/// use autograd_core::Tensor;
/// use autograd_ops::{CrossEntropyOptions, Reduction, cross_entropy_with};
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let logits = Tensor::from_slice(&[0.0f64, 0.0, 5.0, 1.0], [2, 2])?;
/// let target = Tensor::from_slice(&[1i64, -100], [2])?; // the second is ignored
/// let opts = CrossEntropyOptions { reduction: Reduction::None, ..Default::default() };
/// let loss = cross_entropy_with(&logits, &target, &opts)?.to_vec::<f64>()?;
/// assert!((loss[0] - 2f64.ln()).abs() < 1e-12 && loss[1] == 0.0);
/// # Ok(())
/// # }
/// ```
pub fn cross_entropy_with(
    input: &Tensor,
    target: &Tensor,
    options: &CrossEntropyOptions,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    let c = class_count(OP, input)?;
    let eps = options.label_smoothing;
    if !(0.0..=1.0).contains(&eps) {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "label_smoothing is {eps} (input {}, target {}); it must be in [0, 1] (0, \
                 PyTorch's default, is no smoothing)",
                input.shape(),
                target.shape()
            ),
        });
    }
    let weight = class_weight(OP, options.weight.as_ref(), input, c)?;
    if target.dtype().is_float() {
        return probability_cross_entropy(input, target, weight.as_ref(), options, c);
    }
    let classes = class_indices(OP, input, target, options.ignore_index, c)?;
    let plain = input.rank() == 2
        && weight.is_none()
        && eps == 0.0
        && options.reduction == Reduction::Mean
        && classes.iter().all(Option::is_some);
    if plain {
        return crate::cross_entropy(input, target);
    }
    let run = || {
        let axis = class_axis(input);
        let log_p = log_softmax(input, axis as isize)?;
        let at = Positions::new(input, &classes, weight.as_ref())?;
        let nll = at.nll(&log_p, options.reduction)?;
        if eps == 0.0 {
            return Ok(nll);
        }
        let per_class = match &weight {
            Some(w) => mul(&log_p, &along_classes(w, input)?)?,
            None => log_p,
        };
        let smooth = at.counted_only(&neg(&sum(&per_class, axis as isize, false)?)?)?;
        let smooth = at.reduce(&smooth, options.reduction)?;
        add(
            &mul_scalar(&nll, 1.0 - eps)?,
            &mul_scalar(&smooth, eps / c as f64)?,
        )
    };
    run().map_err(|e| e.in_op(OP))
}

/// [`cross_entropy_with`] against class probabilities (a floating `target`).
fn probability_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    options: &CrossEntropyOptions,
    c: usize,
) -> Result<Tensor> {
    const OP: &str = "cross_entropy";
    if target.shape() != input.shape() {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the target (shape {}) is floating, so it holds class probabilities and must \
                 have the input's shape {}; for class indices pass integers of shape {} \
                 (convert them with `.to_dtype(DType::I64)`)",
                target.shape(),
                input.shape(),
                target_shape(input)
            ),
        });
    }
    if options.ignore_index >= 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "ignore_index is {} but the target (shape {}, input {}) holds class \
                 probabilities, which ignore nothing; leave ignore_index negative (PyTorch's \
                 default is -100), or pass class indices",
                options.ignore_index,
                target.shape(),
                input.shape()
            ),
        });
    }
    let eps = options.label_smoothing;
    let run = || {
        let axis = class_axis(input);
        let log_p = log_softmax(input, axis as isize)?;
        let mut t = in_dtype(target, input.dtype())?;
        if eps > 0.0 {
            t = add_scalar(&mul_scalar(&t, 1.0 - eps)?, eps / c as f64)?;
        }
        let mut product = mul(&log_p, &t)?;
        if let Some(w) = weight {
            product = mul(&product, &along_classes(w, input)?)?;
        }
        match options.reduction {
            Reduction::None => neg(&sum(&product, axis as isize, false)?),
            Reduction::Sum => neg(&sum_all(&product)?),
            Reduction::Mean => {
                let positions = input.numel() / c;
                mul_scalar(&sum_all(&product)?, -1.0 / positions as f64)
            }
        }
    };
    run().map_err(|e| e.in_op(OP))
}

/// `torch.nn.functional.nll_loss(input, target, weight, ignore_index,
/// reduction)`: the negative log-likelihood of class-index targets under the
/// log-probabilities `input`.
///
/// `input` is `[C]`, `[N, C]` or `[N, C, d1, ..]` (classes on axis 1, e.g. the
/// output of [`log_softmax`](mod@crate::log_softmax) along it); `target` holds
/// class indices (integers, `i64` as PyTorch's; read on the host; no gradient) of
/// `input`'s shape without the class axis. Position `n` loses
/// `-w[t_n] · input[n, t_n]` (`w` the [`NllLossOptions::weight`], 1 without), 0
/// where `t_n == ignore_index`; `Mean` divides the sum by the summed weights of
/// the counted targets (their count without weights; NaN when none counts, as
/// PyTorch). `None` gives the target's shape.
///
/// Errors name `nll_loss`: an input of rank 0, not floating or with no class; a
/// weight not `[C]`; a target not integer or not of the input's shape without
/// its class axis; a target outside `0..C` other than `ignore_index`.
pub fn nll_loss(input: &Tensor, target: &Tensor, options: &NllLossOptions) -> Result<Tensor> {
    const OP: &str = "nll_loss";
    let c = class_count(OP, input)?;
    let weight = class_weight(OP, options.weight.as_ref(), input, c)?;
    let classes = class_indices(OP, input, target, options.ignore_index, c)?;
    let run = || Positions::new(input, &classes, weight.as_ref())?.nll(input, options.reduction);
    run().map_err(|e| e.in_op(OP))
}

/// An error naming `op` unless every element of `input` is in `[0, 1]` (a NaN is
/// not): two reductions and two numbers read back.
fn check_probabilities(op: &'static str, input: &Tensor) -> Result<()> {
    if input.numel() == 0 {
        return Ok(());
    }
    let flat = compute::reshape(&input.detach(), [input.numel()])?;
    let extreme = |how| compute::reduce(&flat, how, &[0], false)?.to_scalar::<f64>();
    let (lo, hi) = (extreme(ReduceOp::Min)?, extreme(ReduceOp::Max)?);
    if !(lo >= 0.0 && hi <= 1.0) {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the input (shape {}) holds values from {lo} to {hi}, and {op} takes \
                 probabilities in [0, 1]; apply sigmoid first, or pass the scores to \
                 binary_cross_entropy_with_logits (more stable)",
                input.shape()
            ),
        });
    }
    Ok(())
}

/// `max(log(x), -100)`, 0 gradient where clamped (and no NaN where `x` is 0):
/// PyTorch's clamp of the log terms of the binary cross-entropy. `log` is `log`
/// or `log1p` and `x` its argument.
fn clamped_log(x: &Tensor, one_minus: bool) -> Result<Tensor> {
    let floor = constant(x, -100.0)?;
    // Where the log is finite: x > 0, or x < 1 for log(1 - x).
    let (finite, safe) = if one_minus {
        let finite = lt(x, &constant(x, 1.0)?)?;
        let safe = r#where(&finite, x, &constant(x, 0.0)?)?;
        (finite, log1p(&neg(&safe)?)?)
    } else {
        let finite = gt(x, &constant(x, 0.0)?)?;
        let safe = r#where(&finite, x, &constant(x, 1.0)?)?;
        (finite, log(&safe)?)
    };
    r#where(&finite, &maximum(&safe, &floor)?, &floor)
}

/// `torch.nn.functional.binary_cross_entropy(input, target, weight, reduction)`:
/// `-w · (t · log x + (1 - t) · log(1 - x))` elementwise, reduced, for
/// probabilities `x` (`input`) and targets `t` (`target`, differentiable too),
/// each log clamped to at least -100 as PyTorch does (so `x = 0` or `1` gives a
/// finite loss).
///
/// `input` and `target` have one shape (no broadcasting); `weight` broadcasts to
/// it. Where a log is clamped its gradient is 0 (PyTorch's backward formula
/// divides by `max(x (1 - x), 1e-12)` instead, and gives ±1e12 at 0 and 1).
/// Errors name `binary_cross_entropy`: shapes that differ, a weight that does not
/// broadcast to the input, an input value outside `[0, 1]` or NaN (as PyTorch;
/// the check reads the input's min and max back from its device).
pub fn binary_cross_entropy(
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy";
    same_shape(OP, input, target)?;
    let weight = elementwise_weight(OP, "weight", weight, input)?;
    check_probabilities(OP, input)?;
    let run = || {
        let t = in_dtype(target, input.dtype())?;
        let log_x = clamped_log(input, false)?;
        let log_1mx = clamped_log(input, true)?;
        let mut loss = sub(&mul(&add_scalar(&t, -1.0)?, &log_1mx)?, &mul(&t, &log_x)?)?;
        if let Some(w) = &weight {
            loss = mul(&loss, w)?;
        }
        reduction.apply(&loss)
    };
    run().map_err(|e| e.in_op(OP))
}

/// `torch.nn.functional.binary_cross_entropy_with_logits(input, target, weight,
/// reduction, pos_weight)`: the binary cross-entropy of `sigmoid(input)` against
/// `target` (differentiable too), computed from the logits without overflow:
/// `(1 - t) · x - l · log σ(x)` with `l = 1 + (pos_weight - 1) · t` (`l = 1`
/// without `pos_weight`: `max(x, 0) - x · t + log(1 + e^(-|x|))`), times `weight`,
/// reduced. `log σ` is [`logsigmoid`](mod@crate::logsigmoid), finite at any `x`.
///
/// `input` and `target` have one shape (no broadcasting); `weight` and
/// `pos_weight` broadcast to it (`pos_weight` typically `[C]` for `[N, C]`).
/// Errors name `binary_cross_entropy_with_logits`: shapes that differ, a weight or
/// pos_weight that does not broadcast to the input.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    options: &BceWithLogitsOptions,
) -> Result<Tensor> {
    const OP: &str = "binary_cross_entropy_with_logits";
    same_shape(OP, input, target)?;
    let weight = elementwise_weight(OP, "weight", options.weight.as_ref(), input)?;
    let pos_weight = elementwise_weight(OP, "pos_weight", options.pos_weight.as_ref(), input)?;
    let run = || {
        let t = in_dtype(target, input.dtype())?;
        let log_sig = logsigmoid(input)?;
        let negative = mul(&add_scalar(&neg(&t)?, 1.0)?, input)?;
        let positive = match &pos_weight {
            Some(p) => mul(
                &add_scalar(&mul(&add_scalar(p, -1.0)?, &t)?, 1.0)?,
                &log_sig,
            )?,
            None => log_sig,
        };
        let mut loss = sub(&negative, &positive)?;
        if let Some(w) = &weight {
            loss = mul(&loss, w)?;
        }
        options.reduction.apply(&loss)
    };
    run().map_err(|e| e.in_op(OP))
}

/// `torch.nn.functional.kl_div(input, target, reduction, log_target)`: the
/// Kullback-Leibler divergence terms of `target` from `input`, where `input`
/// holds log-probabilities. Elementwise, `t · (log t - x)` for probabilities
/// `t` (`xlogy(t, t) - t · x`: 0 where `t` is 0, as PyTorch's `xlogy`), or
/// `e^t · (t - x)` for log-probabilities (`log_target`), reduced by
/// [`KlReduction`] (`BatchMean`, the divergence per sample, divides the sum by
/// the first axis' size).
///
/// Both inputs are differentiable. Where a probability target is 0 its gradient
/// is 0 here (PyTorch's `xlogy` backward gives NaN there). `input` and `target`
/// must have one shape (PyTorch broadcasts them; here that is an error naming
/// `kl_div` and both shapes).
pub fn kl_div(input: &Tensor, target: &Tensor, options: &KlDivOptions) -> Result<Tensor> {
    const OP: &str = "kl_div";
    same_shape(OP, input, target)?;
    let run = || {
        let t = in_dtype(target, input.dtype())?;
        let loss = if options.log_target {
            mul(&exp(&t)?, &sub(&t, input)?)?
        } else {
            let zero = constant(input, 0.0)?;
            let is_zero = eq(&t, &zero)?;
            let safe = r#where(&is_zero, &constant(input, 1.0)?, &t)?;
            let t_log_t = r#where(&is_zero, &zero, &mul(&t, &log(&safe)?)?)?;
            sub(&t_log_t, &mul(&t, input)?)?
        };
        match options.reduction {
            KlReduction::None => Ok(loss),
            KlReduction::Sum => sum_all(&loss),
            KlReduction::Mean => mean_all(&loss),
            KlReduction::BatchMean if input.rank() == 0 => sum_all(&loss),
            KlReduction::BatchMean => mul_scalar(&sum_all(&loss)?, 1.0 / input.dims()[0] as f64),
        }
    };
    run().map_err(|e| e.in_op(OP))
}
