//! Gradient clipping, as PyTorch's `torch.nn.utils.clip_grad_norm_` and
//! `clip_grad_value_`: the gradients are read and written back
//! ([`Tensor::set_grad`]) with recording off, so a clip adds nothing to any
//! graph and needs no second backward pass.

use crate::{Error, Result, Tensor, UnaryOp, compute, no_grad};
use std::collections::HashSet;

/// Something that is, or refers to, a tensor: what the clipping functions and
/// `add_param_group` take slices of, so that `&model.parameters()`,
/// `&model.named_parameters()`, `&[&w, &b]` and `&model.parameters_mut()` all
/// fit.
pub trait AsTensor {
    /// The tensor.
    fn as_tensor(&self) -> &Tensor;
}

impl AsTensor for Tensor {
    fn as_tensor(&self) -> &Tensor {
        self
    }
}

impl<T: AsTensor + ?Sized> AsTensor for &T {
    fn as_tensor(&self) -> &Tensor {
        (**self).as_tensor()
    }
}

impl<T: AsTensor + ?Sized> AsTensor for &mut T {
    fn as_tensor(&self) -> &Tensor {
        (**self).as_tensor()
    }
}

impl AsTensor for (String, Tensor) {
    fn as_tensor(&self) -> &Tensor {
        &self.1
    }
}

fn invalid(op: &'static str, msg: String) -> Error {
    Error::InvalidArgument { op, msg }
}

/// The gradients of `params`, each once (a parameter listed twice is one), as
/// (parameter, detached gradient).
fn grads<T: AsTensor>(params: &[T]) -> Vec<(&Tensor, Tensor)> {
    let mut seen = HashSet::new();
    params
        .iter()
        .map(|p| p.as_tensor())
        .filter(|p| seen.insert(p.id()))
        .filter_map(|p| p.grad().map(|g| (p, g.detach())))
        .collect()
}

/// Scales the gradients of `params` so that their total norm is at most
/// `max_norm`, and returns the total norm before clipping: PyTorch's
/// `clip_grad_norm_`. The norm of order `norm_type` (`2.0`, `1.0`,
/// `f64::INFINITY`, or any finite order above 0) is taken over all the
/// gradients together, as if concatenated; each is then multiplied by
/// `max_norm / (total + 1e-6)` when that is below 1 (else left as it is).
/// Parameters without a gradient are skipped (and a parameter listed twice is
/// one). A non-finite total norm scales the gradients by NaN, as PyTorch's
/// default does; [`clip_grad_norm_with`] can refuse it instead.
///
/// ```
/// use autograd::prelude::*;
///
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let w = Tensor::from_slice(&[3.0f64, 4.0], [2])?.with_requires_grad(true);
/// (w.sum_all()? * 10.0)?.backward()?; // gradient [10, 10]
/// let total = autograd::nn::clip_grad_norm(&[&w], 1.0, 2.0)?;
/// assert!((total - 200f64.sqrt()).abs() < 1e-12);
/// let g = w.grad().unwrap().to_vec::<f64>()?;
/// assert!((g[0] - 10.0 / (200f64.sqrt() + 1e-6)).abs() < 1e-12);
/// # Ok(())
/// # }
/// ```
pub fn clip_grad_norm<T: AsTensor>(params: &[T], max_norm: f64, norm_type: f64) -> Result<f64> {
    clip_grad_norm_with(params, max_norm, norm_type, false)
}

/// [`clip_grad_norm`] with PyTorch's `error_if_nonfinite`: when it is true and
/// the total norm is NaN or infinite, an error (no gradient changed).
pub fn clip_grad_norm_with<T: AsTensor>(
    params: &[T],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<f64> {
    const OP: &str = "clip_grad_norm";
    if max_norm.is_nan() || max_norm < 0.0 {
        return Err(invalid(
            OP,
            format!("max_norm is {max_norm}; it must be a number >= 0"),
        ));
    }
    if norm_type.is_nan() || norm_type <= 0.0 {
        return Err(invalid(
            OP,
            format!(
                "norm_type is {norm_type}; use 2.0 (Euclidean), 1.0, f64::INFINITY (largest \
                 magnitude) or another order above 0"
            ),
        ));
    }
    let grads = grads(params);
    no_grad(|| {
        let mut acc = 0.0f64;
        for (p, g) in &grads {
            if !g.dtype().is_float() {
                return Err(invalid(
                    OP,
                    format!(
                        "the gradient of parameter {} (shape {}) is {}, not floating",
                        p.id(),
                        g.shape(),
                        g.dtype()
                    ),
                ));
            }
            if g.numel() == 0 {
                continue;
            }
            // In f32 at least: a half gradient's sum of squares overflows early.
            let g = if g.dtype().is_half() {
                compute::cast(g, crate::DType::F32)?
            } else {
                g.clone()
            };
            let a = crate::ops::abs(&g)?;
            if norm_type == f64::INFINITY {
                acc = acc.max(crate::ops::max_all(&a)?.to_scalar::<f64>()?);
            } else if norm_type == 1.0 {
                acc += crate::ops::sum_all(&a)?.to_scalar::<f64>()?;
            } else if norm_type == 2.0 {
                acc += crate::ops::sum_all(&crate::ops::square(&g)?)?.to_scalar::<f64>()?;
            } else {
                let powed = compute::unary(&a, UnaryOp::PowScalar(norm_type))?;
                acc += crate::ops::sum_all(&powed)?.to_scalar::<f64>()?;
            }
        }
        let total = if norm_type == f64::INFINITY || norm_type == 1.0 {
            acc
        } else if norm_type == 2.0 {
            acc.sqrt()
        } else {
            acc.powf(1.0 / norm_type)
        };
        if error_if_nonfinite && !total.is_finite() {
            return Err(invalid(
                OP,
                format!(
                    "the total norm of order {norm_type} of the gradients is {total}, so they \
                     were not clipped; look for a NaN or infinite gradient (or pass \
                     error_if_nonfinite = false)"
                ),
            ));
        }
        let coef = max_norm / (total + 1e-6);
        if coef < 1.0 || coef.is_nan() {
            for (p, g) in &grads {
                p.set_grad(Some(compute::unary(g, UnaryOp::MulScalar(coef))?))?;
            }
        }
        Ok(total)
    })
}

/// Limits every gradient element of `params` to `[-clip_value, clip_value]`
/// (PyTorch's `clip_grad_value_`). Parameters without a gradient are skipped.
///
/// ```
/// use autograd::prelude::*;
///
/// # fn main() -> Result<()> {
/// autograd::init()?;
/// let w = Tensor::from_slice(&[1.0f64, -2.0, 3.0], [3])?.with_requires_grad(true);
/// (w.square()?.sum_all()?).backward()?; // gradient [2, -4, 6]
/// autograd::nn::clip_grad_value(&[&w], 3.0)?;
/// assert_eq!(w.grad().unwrap().to_vec::<f64>()?, [2.0, -3.0, 3.0]);
/// # Ok(())
/// # }
/// ```
pub fn clip_grad_value<T: AsTensor>(params: &[T], clip_value: f64) -> Result<()> {
    if clip_value.is_nan() || clip_value < 0.0 {
        return Err(invalid(
            "clip_grad_value",
            format!("clip_value is {clip_value}; it must be a number >= 0"),
        ));
    }
    let grads = grads(params);
    no_grad(|| {
        for (p, g) in &grads {
            p.set_grad(Some(crate::ops::clamp(g, -clip_value, clip_value)?))?;
        }
        Ok(())
    })
}
