//! Scaled dot-product attention as one op whose backward recomputes the attention
//! weights instead of keeping them.

use crate::{matmul, mul, mul_scalar, permute, softmax, sub, sum};
use attention_op::ScaledDotProductAttention;
use autograd_core::random::Rng;
use autograd_core::{CheckCase, DType, Error, Result, Tensor, cases, compute, grad_if};
use autograd_macros::differentiable;

const OP: &str = "scaled_dot_product_attention";

/// `x` with its last two axes swapped (a view, recorded).
fn swap_last(x: &Tensor) -> Result<Tensor> {
    let r = x.rank();
    let mut dims: Vec<usize> = (0..r).collect();
    dims.swap(r - 2, r - 1);
    permute(x, dims)
}

/// The dropout mask of the attention weights of shape `dims`: element `i` (row-major)
/// is 0 with probability `p`, else `1 / (1 - p)`, drawn from `Rng::new(seed)`: the
/// forward pass and the backward pass draw the same mask, so it is never stored.
fn dropout_mask(p: f64, seed: u64, like: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let keep = if p < 1.0 { 1.0 / (1.0 - p) } else { 0.0 };
    let mut rng = Rng::new(seed);
    let n: usize = dims.iter().product();
    let values: Vec<f64> = (0..n)
        .map(|_| if rng.next_f64() < p { 0.0 } else { keep })
        .collect();
    let mask = Tensor::from_vec(values, dims)?;
    compute::to_device(&compute::cast(&mask, like.dtype())?, like.device())
}

/// The `bool` `[l, s]` matrix of the keys each query sees under PyTorch's
/// `is_causal` (aligned at the top left): key `j` is hidden from query `i` where
/// `j > i`.
fn causal_keep(l: usize, s: usize, like: &Tensor) -> Result<Tensor> {
    let keep: Vec<bool> = (0..l * s).map(|k| k % s <= k / s).collect();
    compute::to_device(&Tensor::from_vec(keep, [l, s])?, like.device())
}

/// `[.., L, D] @ [.., S, D]ᵀ · scale`, with the hidden keys' scores replaced by
/// `-inf` (the causal mask and a `bool` mask: a hidden key's score never reaches
/// the result, not even a NaN) and a float mask added, then the softmax over the
/// keys. A row every key of which is hidden (`-inf`) gets weights 0, as PyTorch's:
/// its output and its gradients are 0. Recorded where the caller records, so the
/// backward is differentiable again.
fn weights(
    op: &ScaledDotProductAttention,
    q: &Tensor,
    k: &Tensor,
    mask: &Tensor,
) -> Result<Tensor> {
    let mut s = mul_scalar(&matmul(q, &swap_last(k)?)?, op.scale)?;
    let (l, n) = (s.dims()[s.rank() - 2], s.dims()[s.rank() - 1]);
    let hidden = compute::to_device(&Tensor::full([], f64::NEG_INFINITY, s.dtype())?, s.device())?;
    if op.causal {
        s = crate::r#where(&causal_keep(l, n, q)?, &s, &hidden)?;
    }
    if !op.masked {
        return softmax(&s, -1);
    }
    s = if mask.dtype() == DType::Bool {
        crate::r#where(mask, &s, &hidden)?
    } else {
        crate::add(&s, mask)?
    };
    // Rows with a key left: the others (every score -inf) take scores 0 (a finite
    // softmax), then weights 0. The row mask is a constant.
    let last = s.rank() - 1;
    let top = compute::reduce(&s.detach(), autograd_core::ReduceOp::Max, &[last], true)?;
    let live = crate::ne(&top, &hidden)?;
    let zero = compute::to_device(&Tensor::zeros([], s.dtype())?, s.device())?;
    let p = softmax(&crate::r#where(&live, &s, &zero)?, -1)?;
    mul(&p, &compute::cast(&live, s.dtype())?)
}

/// Scaled dot-product attention, `softmax(q kᵀ · scale, masked) v`, as one recorded
/// node: the public entry is [`scaled_dot_product_attention`], which builds the
/// mask from its options.
#[differentiable(crate = ::autograd_core, name = "scaled_dot_product_attention")]
pub mod attention_op {
    use super::*;

    /// What the op needs beyond its inputs.
    #[derive(Clone, Copy, Debug)]
    pub struct ScaledDotProductAttention {
        /// Multiplies `q kᵀ` (PyTorch's default `1/√D`).
        pub scale: f64,
        /// Hides key `j` from query `i` where `j > i`.
        pub causal: bool,
        /// Applies the `mask` input (otherwise it is ignored: pass a scalar 0).
        pub masked: bool,
        /// The chance of dropping an attention weight (0: no dropout).
        pub dropout_p: f64,
        /// The seed the dropout mask is drawn from, in the forward and again in the
        /// backward.
        pub seed: u64,
    }

    /// `q [.., L, D]`, `k [.., S, D]`, `v [.., S, Dv]` (batch axes broadcast) give
    /// `[.., L, Dv]`. `mask` broadcasts to `[.., L, S]`: `bool` (`false` hides a key:
    /// its score is replaced by `-inf`) or of the queries' float dtype (added to the
    /// scores); it gets no gradient. Half-precision inputs compute in f32 and round
    /// the output once.
    pub fn forward(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        #[no_grad] mask: &Tensor,
    ) -> Result<Tensor> {
        if let Some(d) = crate::half(q) {
            let w = |t: &Tensor| compute::cast(t, DType::F32);
            let b = if mask.dtype().is_float() {
                w(mask)?
            } else {
                mask.clone()
            };
            let out = self.forward(&w(q)?, &w(k)?, &w(v)?, &b)?;
            return compute::cast(&out, d);
        }
        let mut p = weights(self, q, k, mask)?;
        if self.dropout_p > 0.0 {
            p = mul(&p, &dropout_mask(self.dropout_p, self.seed, &p, p.dims())?)?;
        }
        matmul(&p, v)
    }

    /// The weights `P` recomputed from `q` and `k` (nothing of size `L × S` is
    /// kept between the passes), then `dV = P'ᵀ G`, `dP = (G Vᵀ) ⊙ M` for the
    /// dropout mask `M` (`P' = P ⊙ M`), `dS = P ⊙ (dP - Σ dP ⊙ P)`,
    /// `dQ = dS K · scale`, `dK = dSᵀ Q · scale`. Recorded, so twice
    /// differentiable.
    pub fn backward(
        &self,
        grad: &Tensor,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: &Tensor,
        needs: [bool; 3],
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        if let Some(d) = crate::half(q) {
            let w = crate::wide;
            let b = if mask.dtype().is_float() {
                w(mask)?
            } else {
                mask.clone()
            };
            let (dq, dk, dv) = self.backward(&w(grad)?, &w(q)?, &w(k)?, &w(v)?, &b, needs)?;
            let back = |t: Option<Tensor>| t.map(|t| crate::to_dtype(&t, d)).transpose();
            return Ok((back(dq)?, back(dk)?, back(dv)?));
        }
        let p = weights(self, q, k, mask)?;
        let mask = if self.dropout_p > 0.0 {
            Some(dropout_mask(self.dropout_p, self.seed, &p, p.dims())?)
        } else {
            None
        };
        let dv = grad_if(needs[2], || {
            let kept = match &mask {
                Some(m) => mul(&p, m)?,
                None => p.clone(),
            };
            matmul(&swap_last(&kept)?, grad)
        })?;
        if !needs[0] && !needs[1] {
            return Ok((None, None, dv));
        }
        let mut dp = matmul(grad, &swap_last(v)?)?;
        if let Some(m) = &mask {
            dp = mul(&dp, m)?;
        }
        let ds = mul(&p, &sub(&dp, &sum(&mul(&dp, &p)?, -1, true)?)?)?;
        let dq = grad_if(needs[0], || mul_scalar(&matmul(&ds, k)?, self.scale))?;
        let dk = grad_if(needs[1], || {
            mul_scalar(&matmul(&swap_last(&ds)?, q)?, self.scale)
        })?;
        Ok((dq, dk, dv))
    }

    /// Gradcheck inputs: plain attention over a batch of 2, causal attention with
    /// more keys than queries, a float mask with `-inf` (one query row fully
    /// masked), and dropout with a fixed seed.
    pub fn check_cases() -> Vec<CheckCase> {
        let q = cases::uniform(71, &[2, 3, 4], -1.0, 1.0);
        let k = cases::uniform(72, &[2, 5, 4], -1.0, 1.0);
        let v = cases::uniform(73, &[2, 5, 3], -1.0, 1.0);
        let zero = cases::values(&[0.0], &[]);
        let inf = f64::NEG_INFINITY;
        let mask = cases::values(
            &[
                0.0, inf, 0.0, 0.0, inf, //
                inf, inf, inf, inf, inf, //
                0.0, 0.0, 0.0, inf, 0.0,
            ],
            &[3, 5],
        );
        let case = |label: &str, op: ScaledDotProductAttention, mask: &Tensor| {
            CheckCase::new(
                label,
                vec![q.clone(), k.clone(), v.clone(), mask.clone()],
                move |x| {
                    attention_op(
                        &x[0],
                        &x[1],
                        &x[2],
                        &x[3],
                        op.scale,
                        op.causal,
                        op.masked,
                        op.dropout_p,
                        op.seed,
                    )
                },
            )
            .differentiable(vec![true, true, true, false])
        };
        let plain = ScaledDotProductAttention {
            scale: 0.5,
            causal: false,
            masked: false,
            dropout_p: 0.0,
            seed: 0,
        };
        vec![
            case("scaled_dot_product_attention [2,3,4]", plain, &zero),
            case(
                "scaled_dot_product_attention causal",
                ScaledDotProductAttention {
                    causal: true,
                    ..plain
                },
                &zero,
            ),
            case(
                "scaled_dot_product_attention masked (a row fully masked)",
                ScaledDotProductAttention {
                    masked: true,
                    ..plain
                },
                &mask,
            ),
            case(
                "scaled_dot_product_attention dropout 0.3",
                ScaledDotProductAttention {
                    dropout_p: 0.3,
                    seed: 9,
                    ..plain
                },
                &zero,
            ),
        ]
    }
}

/// The options of [`scaled_dot_product_attention`], with PyTorch's defaults
/// (`AttentionOptions::default()`: no mask, not causal, no dropout, scale `1/√D`).
#[derive(Debug, Default)]
pub struct AttentionOptions<'a> {
    /// A mask broadcasting to `[.., L, S]`: boolean (`true` = the query may attend
    /// to the key, as PyTorch's), or of the queries' float dtype, added to the
    /// scores (`-inf` hides a key).
    pub attn_mask: Option<&'a Tensor>,
    /// Hides key `j` from query `i` where `j > i` (top-left aligned, as PyTorch's
    /// `is_causal`); combines with `attn_mask`.
    pub is_causal: bool,
    /// The scale of `q kᵀ`; `None` is `1/√D` with `D` the queries' last axis.
    pub scale: Option<f64>,
    /// The chance of dropping an attention weight (kept ones are scaled by
    /// `1/(1-p)`); needs `rng`.
    pub dropout_p: f64,
    /// The generator the dropout mask's seed is drawn from (one `u64` per call).
    pub rng: Option<&'a mut Rng>,
}

/// Scaled dot-product attention, as `torch.nn.functional.scaled_dot_product_attention`:
/// `softmax(q kᵀ · scale + mask) v` for `q [.., L, D]`, `k [.., S, D]`,
/// `v [.., S, Dv]`, batch axes broadcast, giving `[.., L, Dv]`.
///
/// Recorded as one `scaled_dot_product_attention` node that keeps `q`, `k`, `v` (and
/// the mask), not the `L × S` weights: its backward recomputes them, so
/// the memory held for backward grows with `L + S`, not `L · S`. With dropout only
/// the seed of the mask is kept, and the mask is drawn again in the backward.
///
/// A query row whose keys are all masked gets output 0 and gradient 0 (PyTorch's
/// too). Errors name the op: ranks below 2, `q` and `k` with different last axes,
/// `k` and `v` with different key counts, no keys, mixed dtypes, a mask that is neither
/// boolean nor the queries' dtype, `dropout_p` outside `[0, 1]` or without a
/// generator.
///
/// ```
/// use autograd_core::Tensor;
/// use autograd_ops::{AttentionOptions, scaled_dot_product_attention};
/// # fn main() -> autograd_core::Result<()> {
/// autograd_ops::init()?;
/// let q = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 1.0], [2, 2])?;
/// let k = q.clone();
/// let v = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [2, 2])?;
/// let causal = AttentionOptions { is_causal: true, ..Default::default() };
/// let out = scaled_dot_product_attention(&q, &k, &v, causal)?;
/// // The first query sees only the first key.
/// assert_eq!(out.to_vec::<f32>()?[..2], [1.0, 2.0]);
/// # Ok(())
/// # }
/// ```
#[track_caller]
pub fn scaled_dot_product_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    options: AttentionOptions<'_>,
) -> Result<Tensor> {
    let shape_err = |msg: String| Err(Error::Shape { op: OP, msg });
    if q.rank() < 2 || k.rank() < 2 || v.rank() < 2 {
        return shape_err(format!(
            "q {}, k {} and v {} need at least 2 axes each ([.., L, D], [.., S, D], [.., S, Dv])",
            q.shape(),
            k.shape(),
            v.shape()
        ));
    }
    let d = q.dims()[q.rank() - 1];
    if k.dims()[k.rank() - 1] != d {
        return shape_err(format!(
            "q {} and k {} must have the same last axis (D, the size of a query and a key)",
            q.shape(),
            k.shape()
        ));
    }
    if k.dims()[k.rank() - 2] != v.dims()[v.rank() - 2] {
        return shape_err(format!(
            "k {} and v {} must have the same second-to-last axis (S, the number of keys)",
            k.shape(),
            v.shape()
        ));
    }
    if k.dims()[k.rank() - 2] == 0 {
        return shape_err(format!(
            "k {} holds no keys (S = 0): every query would attend to nothing; give at least \
             one key",
            k.shape()
        ));
    }
    if k.dtype() != q.dtype() || v.dtype() != q.dtype() || !q.dtype().is_float() {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "q, k and v are {}, {} and {}; they must be one floating dtype (convert with \
                 .to_dtype)",
                q.dtype(),
                k.dtype(),
                v.dtype()
            ),
        });
    }
    let p = options.dropout_p;
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!("dropout_p = {p} is not a probability; it must be in [0, 1]"),
        });
    }
    let seed = match (p > 0.0, options.rng) {
        (false, _) => 0,
        (true, Some(rng)) => rng.next_u64(),
        (true, None) => {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "dropout_p = {p} needs a generator to draw the mask from: set `rng: \
                     Some(&mut rng)` in the options (or dropout_p: 0.0 in evaluation)"
                ),
            });
        }
    };
    let scale = options.scale.unwrap_or(1.0 / (d as f64).sqrt());
    let on_q = |t: Tensor| compute::to_device(&t, q.device());
    let (masked, mask) = match options.attn_mask {
        None => (false, on_q(Tensor::zeros([], q.dtype())?)?),
        Some(m) if m.dtype() == DType::Bool => (true, m.detach()),
        Some(m) if m.dtype() == q.dtype() => (true, m.detach()),
        Some(m) => {
            return Err(Error::InvalidArgument {
                op: OP,
                msg: format!(
                    "the mask is {}; it must be bool (true = attend) or the queries' dtype {} \
                     (added to the scores)",
                    m.dtype(),
                    q.dtype()
                ),
            });
        }
    };
    attention_op(q, k, v, &mask, scale, options.is_causal, masked, p, seed)
}
