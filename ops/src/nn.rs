//! Neural-network ops: softmax, log-softmax and the usual losses.

use crate::reduce::stable_max;
use crate::{exp, log, mul, mul_scalar, neg, square, sub, sum};
use autograd_core::cases;
use autograd_core::{
    BinaryOp, CheckCase, Error, ReduceOp, Result, Tensor, UnaryOp, compute, grad_if,
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
        let axis = compute::normalize_axis("softmax", self.axis, x)?;
        let m = stable_max("softmax", x, axis)?;
        let e = exp(&compute::binary(x, &m, BinaryOp::Sub)?)?;
        let s = compute::reduce(&e, ReduceOp::Sum, &[axis], true)?;
        compute::binary(&e, &s, BinaryOp::Div)
    }

    /// `y ⊙ (g - Σ g ⊙ y)` from the saved output `y`.
    pub fn backward(&self, grad: &Tensor, output: &Tensor) -> Result<Tensor> {
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
        let axis = compute::normalize_axis("log_softmax", self.axis, x)?;
        log_softmax_forward("log_softmax", x, axis)
    }

    /// `g - exp(y) Σ g` from the saved output `y`.
    pub fn backward(&self, grad: &Tensor, output: &Tensor) -> Result<Tensor> {
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

/// Reads and checks cross_entropy's targets: one integral class index per row.
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
    targets
        .to_vec::<f64>()?
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            if t.fract() == 0.0 && t >= 0.0 && t < c as f64 {
                Ok(t as usize)
            } else {
                Err(Error::InvalidArgument {
                    op: "cross_entropy",
                    msg: format!(
                        "target {t} (row {i}) is not an integer class index in 0..{c} \
                         (logits {}, targets {}); targets hold class indices stored as floats",
                        logits.shape(),
                        targets.shape()
                    ),
                })
            }
        })
        .collect()
}

/// Mean cross-entropy of `logits` (`[N, C]`, unnormalised class scores) against
/// integer class `targets` (`[N]`): `-(1/N) Σ_i log_softmax(logits)[i, targets[i]]`,
/// a scalar.
///
/// `targets` holds class indices stored as floats (any float dtype, on the logits'
/// device) and gets no gradient; a value that is not an integer in `0..C` is an
/// error naming the op. The log-softmax is computed stably (max subtracted first).
#[differentiable(crate = ::autograd_core, method)]
pub mod cross_entropy {
    use super::*;

    /// The mean loss over the batch, a rank-0 tensor. An error when `logits` is not
    /// `[N, C]` with `N, C > 0`, when `targets` is not `[N]`, or when a target is not
    /// an integer class index in `0..C`.
    pub fn forward(logits: &Tensor, #[no_grad] targets: &Tensor) -> Result<Tensor> {
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
                    cases::values(&[0.0, 3.0, 1.0], &[3]),
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
