//! Gradient checking: backward against central finite differences, in f64.

use crate::backward::{BackwardOptions, grad};
use crate::{CheckCase, DType, Error, Result, Tensor, compute, enable_grad, no_grad};

/// Running a case (the case itself belongs to the op contract, in `op.rs`).
impl CheckCase {
    /// Runs [`gradcheck`] on this case.
    pub fn check(&self, opts: &GradcheckOptions) -> Result<GradcheckReport> {
        gradcheck(&self.label, &*self.run, &self.inputs, &self.mask(), opts)
    }

    /// Runs [`gradgradcheck`] on this case.
    pub fn check_second_order(&self, opts: &GradcheckOptions) -> Result<GradcheckReport> {
        gradgradcheck(&self.label, &*self.run, &self.inputs, &self.mask(), opts)
    }
}

/// Step and tolerances of a gradient check.
#[derive(Clone, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-6,
            atol: 1e-5,
            rtol: 1e-3,
        }
    }
}

/// What a passing check compared.
#[derive(Clone, Debug, Default)]
pub struct GradcheckReport {
    /// Input elements perturbed.
    pub elements: usize,
    /// Largest |backward - finite difference| seen.
    pub max_abs_error: f64,
}

/// A fixed, varied projection of the output: checking `r · f(x)` for one such `r`
/// compares every output element's gradient without one backward per element.
fn projection(like: &Tensor) -> Result<Tensor> {
    let v: Vec<f64> = (0..like.numel())
        .map(|k| 0.5 + ((k as f64 + 1.0) * 0.618_033_988_749_895).fract())
        .collect();
    Tensor::from_vec(v, like.shape().clone())
}

fn dot(a: &Tensor, b: &Tensor) -> Result<f64> {
    let (a, b) = (a.to_vec::<f64>()?, b.to_vec::<f64>()?);
    Ok(a.iter().zip(&b).map(|(x, y)| x * y).sum())
}

/// Checks the gradients backward computes for `f` at `inputs` against central finite
/// differences. Inputs are converted to f64; those with `differentiable[i]` set are
/// perturbed one element at a time by ±`eps`. A check that would compare nothing
/// (no input marked differentiable, or only empty ones) is an error
/// ([`Error::NothingChecked`]), never a pass.
pub fn gradcheck(
    what: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    differentiable: &[bool],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    let xs: Vec<Tensor> = inputs
        .iter()
        .zip(differentiable.iter().chain(std::iter::repeat(&false)))
        .map(|(x, &d)| {
            // Floating inputs are checked in f64; integer and boolean ones (indices,
            // targets, masks) keep their dtype.
            let x = x.detach();
            let x = if x.dtype().is_float() {
                compute::cast(&x, DType::F64)?
            } else {
                x
            };
            Ok(x.with_requires_grad(d))
        })
        .collect::<Result<_>>()?;
    let y = enable_grad(|| f(&xs))?;
    let r = projection(&y)?;
    let wrt: Vec<&Tensor> = xs.iter().filter(|x| x.requires_grad()).collect();
    let analytic = if y.requires_grad() {
        grad(
            &y,
            &wrt,
            BackwardOptions::default()
                .seed(compute::cast(&r, y.dtype())?)
                .allow_unused(true),
        )?
    } else {
        vec![None; wrt.len()]
    };
    let mut report = GradcheckReport::default();
    let mut k = 0;
    for (i, x) in xs.iter().enumerate() {
        if !x.requires_grad() {
            continue;
        }
        let a = match &analytic[k] {
            Some(g) => g.to_vec::<f64>()?,
            None => vec![0.0; x.numel()],
        };
        k += 1;
        let base = x.to_vec::<f64>()?;
        for j in 0..base.len() {
            let eval = |delta: f64| -> Result<f64> {
                let mut v = base.clone();
                v[j] += delta;
                let xj = Tensor::from_vec(v, x.shape().clone())?;
                let mut args = xs.clone();
                args[i] = xj;
                let out = no_grad(|| f(&args))?;
                dot(&compute::cast(&out, DType::F64)?, &r)
            };
            let numeric = (eval(opts.eps)? - eval(-opts.eps)?) / (2.0 * opts.eps);
            let err = (a[j] - numeric).abs();
            let ok =
                err <= opts.atol + opts.rtol * numeric.abs() || (a[j].is_nan() && numeric.is_nan());
            if !ok {
                return Err(Error::GradcheckFailed {
                    what: what.to_string(),
                    input: i,
                    index: j,
                    analytic: a[j],
                    numeric,
                });
            }
            report.max_abs_error = report.max_abs_error.max(err);
            report.elements += 1;
        }
    }
    if report.elements == 0 {
        return Err(nothing_checked(what, inputs, differentiable));
    }
    Ok(report)
}

/// The error for a check whose mask selects no input element.
fn nothing_checked(what: &str, inputs: &[Tensor], differentiable: &[bool]) -> Error {
    let why = if !differentiable.iter().take(inputs.len()).any(|&d| d) {
        format!(
            "no input is marked differentiable (mask {differentiable:?} for {} inputs); mark \
             at least one input `true`",
            inputs.len()
        )
    } else {
        "the inputs marked differentiable have no elements; check at a point with at least \
         one element"
            .to_string()
    };
    Error::NothingChecked {
        what: what.to_string(),
        why,
    }
}

/// Checks second-order gradients: for each differentiable input `i`, the gradient of
/// `x -> d(r · f(x))/dx_i` (computed by a recorded backward pass) against finite
/// differences of that first-order gradient.
pub fn gradgradcheck(
    what: &str,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    differentiable: &[bool],
    opts: &GradcheckOptions,
) -> Result<GradcheckReport> {
    let mut total = GradcheckReport::default();
    for i in (0..inputs.len()).filter(|&i| differentiable.get(i).copied().unwrap_or(false)) {
        let first_order = |xs: &[Tensor]| -> Result<Tensor> {
            enable_grad(|| {
                let xs: Vec<Tensor> = xs
                    .iter()
                    .enumerate()
                    .map(|(j, x)| {
                        if differentiable.get(j).copied().unwrap_or(false) && !x.requires_grad() {
                            x.detach().with_requires_grad(true)
                        } else {
                            x.clone()
                        }
                    })
                    .collect();
                let y = f(&xs)?;
                let zero = || xs[i].zeros_like();
                if !y.requires_grad() {
                    return zero();
                }
                let seed = compute::cast(&projection(&y)?, y.dtype())?;
                let g = grad(
                    &y,
                    &[&xs[i]],
                    BackwardOptions::default()
                        .create_graph(true)
                        .seed(seed)
                        .allow_unused(true),
                )?;
                g.into_iter().next().flatten().map_or_else(zero, Ok)
            })
        };
        let report = gradcheck(
            &format!("{what} (second order, input {i})"),
            &first_order,
            inputs,
            differentiable,
            opts,
        )?;
        total.elements += report.elements;
        total.max_abs_error = total.max_abs_error.max(report.max_abs_error);
    }
    if total.elements == 0 {
        return Err(nothing_checked(what, inputs, differentiable));
    }
    Ok(total)
}
