//! Sampling categories: `multinomial`. Not differentiable: the result is a
//! constant `i64` tensor, drawn on the host from the library's seeded [`Rng`].

use autograd_core::random::Rng;
use autograd_core::{DType, Error, Result, Tensor, compute};

/// The position of the first cumulative weight above `u` (a category whose weight
/// is 0 is never chosen: its cumulative weight equals the one before it). Where
/// `u` rounded up to the total, the last category of positive weight.
fn pick(cumulative: &[f64], weights: &[f64], u: f64) -> usize {
    let k = cumulative.partition_point(|&c| c <= u);
    if k < weights.len() {
        return k;
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// `num_samples` category positions per row of `probs`
/// (`torch.multinomial(probs, num_samples, replacement, generator)`).
///
/// `probs` is a vector `[C]` or a matrix `[N, C]` of non-negative finite weights
/// (they need not sum to 1; each row must have a positive sum). The result is a
/// constant `i64` tensor `[num_samples]` or `[N, num_samples]` on `probs`' device.
/// With `replacement` each draw is independent; without, the draws of a row are
/// distinct, each drawn from the weights of the categories not drawn yet (as
/// PyTorch's), at most `C` of them: once every category of positive weight is
/// drawn, those of weight 0 follow in index order (PyTorch puts them last too, in
/// no documented order). Drawn from `rng` on the host, row by row, one uniform number per draw:
/// the same seed gives the same samples on every machine and device (not the same
/// as PyTorch's generator's).
///
/// Errors name `multinomial`: `probs` not of rank 1 or 2 or not floating, a
/// negative, infinite or NaN weight, a row summing to 0, `num_samples` 0, or more
/// than `C` without replacement.
///
/// ```
/// use autograd_core::{DType, Tensor, random::Rng};
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let probs = Tensor::from_slice(&[0.0f32, 0.3, 0.7], [3])?;
/// let s = autograd_ops::multinomial(&probs, 2, false, &mut Rng::new(7))?;
/// assert_eq!((s.dims(), s.dtype()), ([2].as_slice(), DType::I64));
/// let mut drawn = s.to_vec::<i64>()?;
/// drawn.sort();
/// assert_eq!(drawn, [1, 2]); // distinct, never the category of weight 0
/// # Ok(())
/// # }
/// ```
pub fn multinomial(
    probs: &Tensor,
    num_samples: usize,
    replacement: bool,
    rng: &mut Rng,
) -> Result<Tensor> {
    const OP: &str = "multinomial";
    let refuse = |msg: String| Err(Error::InvalidArgument { op: OP, msg });
    if !probs.dtype().is_float() || !(1..=2).contains(&probs.rank()) {
        return refuse(format!(
            "probs has shape {} and dtype {}; multinomial takes a floating vector [C] or \
             matrix [N, C] of weights",
            probs.shape(),
            probs.dtype()
        ));
    }
    let c = probs.dims()[probs.rank() - 1];
    if num_samples == 0 || c == 0 {
        return refuse(format!(
            "{num_samples} samples from probs of shape {}; draw at least one sample from at \
             least one category",
            probs.shape()
        ));
    }
    let weights = compute::contiguous(&compute::cast(
        &compute::to_device(probs, autograd_core::Device::Cpu)?,
        DType::F64,
    )?)?
    .to_vec::<f64>()?;
    let rows = weights.len() / c;
    let mut out: Vec<i64> = Vec::with_capacity(rows * num_samples);
    for (r, row) in weights.chunks(c).enumerate() {
        if let Some(w) = row.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return refuse(format!(
                "row {r} of probs holds the weight {w}; weights must be finite and \
                 non-negative"
            ));
        }
        let positive = row.iter().filter(|&&w| w > 0.0).count();
        if positive == 0 {
            return refuse(format!(
                "row {r} of probs sums to 0, which is no distribution; give some category a \
                 positive weight"
            ));
        }
        if !replacement && num_samples > c {
            return refuse(format!(
                "{num_samples} samples without replacement from {c} categories (probs of shape \
                 {}); draw at most {c}, or with replacement",
                probs.shape()
            ));
        }
        let mut w = row.to_vec();
        let mut drawn = vec![false; c];
        let mut cumulative = Vec::with_capacity(c);
        for s in 0..num_samples {
            if !replacement && s >= positive {
                // Every category of positive weight drawn: the others follow in
                // index order (PyTorch puts them last too, in no set order).
                let k = w.iter().zip(&drawn).position(|(_, &d)| !d).unwrap_or(0);
                drawn[k] = true;
                out.push(k as i64);
                continue;
            }
            if s == 0 || !replacement {
                cumulative.clear();
                let mut total = 0.0;
                for &v in &w {
                    total += v;
                    cumulative.push(total);
                }
            }
            let total = cumulative[c - 1];
            let k = pick(&cumulative, &w, rng.next_f64() * total);
            out.push(k as i64);
            if !replacement {
                w[k] = 0.0;
                drawn[k] = true;
            }
        }
    }
    let mut shape = probs.dims().to_vec();
    shape[probs.rank() - 1] = num_samples;
    compute::to_device(&Tensor::from_vec(out, shape)?, probs.device())
}
