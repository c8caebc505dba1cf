//! [`MultiheadAttention`] and [`TransformerEncoderLayer`], with PyTorch's
//! parameter names, batch-first.

use super::layers::{Dropout, Forward};
use super::linear::Linear;
use super::norm::LayerNorm;
use crate::ops::{self, AttentionOptions};
use crate::random::Rng;
use crate::{DType, Error, Result, Shape, Tensor};

/// The masks of an attention call, with PyTorch's meaning.
#[derive(Clone, Copy, Debug, Default)]
pub struct MhaMasks<'a> {
    /// `[L, S]`: `bool` (`true` = the query may NOT attend to the key, as
    /// PyTorch's `attn_mask`), or float, added to the scores.
    pub attn_mask: Option<&'a Tensor>,
    /// `[N, S]` `bool`: `true` = that key is padding, hidden from every query.
    pub key_padding_mask: Option<&'a Tensor>,
    /// Hides key `j` from query `i` where `j > i` (the mask
    /// `nn.Transformer.generate_square_subsequent_mask` gives PyTorch).
    pub is_causal: bool,
}

/// Multi-head attention (`nn.MultiheadAttention(embed_dim, num_heads, dropout,
/// batch_first=True)`): `query [N, L, E]`, `key [N, S, E]`, `value [N, S, E]`
/// projected by `in_proj_weight` (`[3E, E]`: q, k, v rows) and `in_proj_bias`,
/// split into `num_heads` heads, attended through
/// `ops::scaled_dot_product_attention`, and projected by `out_proj`. The output is
/// `[N, L, E]` (PyTorch's first result; the averaged weights are not computed).
#[derive(super::Module)]
pub struct MultiheadAttention {
    /// `[3 embed_dim, embed_dim]`.
    pub in_proj_weight: Tensor,
    /// `[3 embed_dim]`.
    pub in_proj_bias: Tensor,
    /// The output projection (`out_proj.weight`, `out_proj.bias`).
    pub out_proj: Linear,
    /// The number of heads (a divisor of `embed_dim`).
    pub num_heads: usize,
    /// The chance of dropping an attention weight in training.
    pub dropout: f64,
    /// Training mode: whether attention weights are dropped.
    #[module(training)]
    pub training: bool,
    #[module(rng)]
    rng: Rng,
}

impl MultiheadAttention {
    /// An f32 layer with PyTorch's initialisation: `in_proj_weight` Xavier-uniform,
    /// the biases 0, `out_proj.weight` as a `Linear`'s, drawn from `rng` (which
    /// also seeds the dropout). An error when `num_heads` does not divide
    /// `embed_dim` or `dropout` is not a probability.
    pub fn new(embed_dim: usize, num_heads: usize, dropout: f64, rng: &mut Rng) -> Result<Self> {
        if embed_dim == 0 || num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::InvalidArgument {
                op: "MultiheadAttention",
                msg: format!(
                    "num_heads = {num_heads} must divide embed_dim = {embed_dim} (both at least 1)"
                ),
            });
        }
        if !(0.0..=1.0).contains(&dropout) {
            return Err(Error::InvalidArgument {
                op: "MultiheadAttention",
                msg: format!("dropout = {dropout} is not a probability; give a value in [0, 1]"),
            });
        }
        let e = embed_dim;
        let bound = (6.0 / (e + 3 * e) as f64).sqrt();
        let in_proj_weight = rng
            .uniform([3 * e, e], -bound, bound, DType::F32)?
            .with_requires_grad(true);
        let mut out_proj = Linear::new(e, e, true, rng)?;
        out_proj.bias = Some(Tensor::zeros([e], DType::F32)?.with_requires_grad(true));
        Ok(MultiheadAttention {
            in_proj_weight,
            in_proj_bias: Tensor::zeros([3 * e], DType::F32)?.with_requires_grad(true),
            out_proj,
            num_heads,
            dropout,
            training: true,
            rng: Rng::new(rng.next_u64()),
        })
    }

    /// Attention of `query` to `key`/`value` under `masks` (shapes in the type's
    /// doc). Errors name `MultiheadAttention`: inputs not of rank 3 with
    /// `embed_dim` features, batch or key counts that differ, masks of the wrong
    /// shape or dtype.
    pub fn forward(
        &mut self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        masks: MhaMasks<'_>,
    ) -> Result<Tensor> {
        const OP: &str = "MultiheadAttention";
        let e = self.in_proj_weight.dims()[1];
        for (name, t) in [("query", query), ("key", key), ("value", value)] {
            if t.rank() != 3 || t.dims()[2] != e {
                return Err(Error::Shape {
                    op: OP,
                    msg: format!(
                        "the {name} has shape {}; it must be [N, length, embed_dim = {e}] \
                         (batch first)",
                        t.shape()
                    ),
                });
            }
        }
        let (n, l, s) = (query.dims()[0], query.dims()[1], key.dims()[1]);
        if key.dims()[0] != n || value.dims()[..2] != key.dims()[..2] {
            return Err(Error::Shape {
                op: OP,
                msg: format!(
                    "query {}, key {} and value {} must share the batch size, and key and value \
                     the length",
                    query.shape(),
                    key.shape(),
                    value.shape()
                ),
            });
        }
        let h = self.num_heads;
        let d = e / h;
        let project = |x: &Tensor, i: usize, len: usize| -> Result<Tensor> {
            let w = ops::narrow(&self.in_proj_weight, 0, i * e, e)?;
            let b = ops::narrow(&self.in_proj_bias, 0, i * e, e)?;
            let y = ops::add(&ops::matmul(x, &ops::transpose(&w, 0, 1)?)?, &b)?;
            // [N, len, E] -> [N, H, len, D]
            ops::transpose(&ops::reshape(&y, Shape::from([n, len, h, d]))?, 1, 2)
        };
        let (q, k, v) = (
            project(query, 0, l)?,
            project(key, 1, s)?,
            project(value, 2, s)?,
        );
        let mask = self.mask(query, masks, n, l, s)?;
        let train_drop = self.training && self.dropout > 0.0;
        let opts = AttentionOptions {
            attn_mask: mask.as_ref(),
            is_causal: masks.is_causal,
            scale: None,
            dropout_p: if train_drop { self.dropout } else { 0.0 },
            rng: if train_drop {
                Some(&mut self.rng)
            } else {
                None
            },
        };
        let y = ops::scaled_dot_product_attention(&q, &k, &v, opts)?;
        // [N, H, L, D] -> [N, L, E]
        let y = ops::reshape(&ops::transpose(&y, 1, 2)?, Shape::from([n, l, e]))?;
        self.out_proj.forward(&y)
    }

    /// The additive float mask `[N, 1, L, S]` (or `[L, S]`) of PyTorch's masks.
    fn mask(
        &self,
        query: &Tensor,
        masks: MhaMasks<'_>,
        n: usize,
        l: usize,
        s: usize,
    ) -> Result<Option<Tensor>> {
        const OP: &str = "MultiheadAttention";
        if masks.attn_mask.is_none() && masks.key_padding_mask.is_none() {
            return Ok(None);
        }
        let mut m = Tensor::zeros([l, s], query.dtype())?;
        if let Some(a) = masks.attn_mask {
            if a.dims() != [l, s] {
                return Err(Error::Shape {
                    op: OP,
                    msg: format!(
                        "attn_mask has shape {}; it must be [L, S] = [{l}, {s}]",
                        a.shape()
                    ),
                });
            }
            m = if a.dtype() == DType::Bool {
                ops::masked_fill(&m, a, f64::NEG_INFINITY)?
            } else if a.dtype() == query.dtype() {
                ops::add(&m, a)?
            } else {
                return Err(Error::InvalidArgument {
                    op: OP,
                    msg: format!(
                        "attn_mask is {}; it must be bool (true hides) or the query's {}",
                        a.dtype(),
                        query.dtype()
                    ),
                });
            };
        }
        if let Some(p) = masks.key_padding_mask {
            if p.dims() != [n, s] || p.dtype() != DType::Bool {
                return Err(Error::Shape {
                    op: OP,
                    msg: format!(
                        "key_padding_mask is {} of shape {}; it must be bool [N, S] = [{n}, {s}] \
                         (true: padding)",
                        p.dtype(),
                        p.shape()
                    ),
                });
            }
            let full = ops::add(
                &Tensor::zeros([n, 1, l, s], query.dtype())?,
                &ops::reshape(&m, Shape::from([1, 1, l, s]))?,
            )?;
            m = ops::masked_fill(
                &full,
                &ops::reshape(p, Shape::from([n, 1, 1, s]))?,
                f64::NEG_INFINITY,
            )?;
        }
        Ok(Some(m))
    }
}

impl Forward for MultiheadAttention {
    /// Self-attention of `x` without masks.
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        MultiheadAttention::forward(self, x, x, x, MhaMasks::default())
    }
}

/// The feed-forward activation of a [`TransformerEncoderLayer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Activation {
    /// `relu` (PyTorch's default).
    #[default]
    Relu,
    /// `gelu` (exact).
    Gelu,
}

/// A Transformer encoder layer (`nn.TransformerEncoderLayer(d_model, nhead,
/// dim_feedforward, dropout, activation, layer_norm_eps=1e-5, batch_first=True,
/// norm_first)`): self-attention and a feed-forward block, each with dropout and
/// a residual connection, layer-normalised after (or, with `norm_first`, before)
/// each block. PyTorch's names: `self_attn`, `linear1`, `dropout`, `linear2`,
/// `norm1`, `norm2`, `dropout1`, `dropout2`.
#[derive(super::Module)]
pub struct TransformerEncoderLayer {
    /// The self-attention.
    pub self_attn: MultiheadAttention,
    /// `d_model -> dim_feedforward`.
    pub linear1: Linear,
    /// After the activation.
    pub dropout: Dropout,
    /// `dim_feedforward -> d_model`.
    pub linear2: Linear,
    /// Around the attention block.
    pub norm1: LayerNorm,
    /// Around the feed-forward block.
    pub norm2: LayerNorm,
    /// After the attention.
    pub dropout1: Dropout,
    /// After the feed-forward block.
    pub dropout2: Dropout,
    /// The feed-forward activation.
    #[module(skip)]
    pub activation: Activation,
    /// Normalise before each block instead of after.
    pub norm_first: bool,
}

impl TransformerEncoderLayer {
    /// An f32 layer with PyTorch's initialisation of each part, drawn from `rng`
    /// (which also seeds the dropouts). Errors as its parts'.
    pub fn new(
        d_model: usize,
        nhead: usize,
        dim_feedforward: usize,
        dropout: f64,
        activation: Activation,
        norm_first: bool,
        rng: &mut Rng,
    ) -> Result<Self> {
        let self_attn = MultiheadAttention::new(d_model, nhead, dropout, rng)?;
        let linear1 = Linear::new(d_model, dim_feedforward, true, rng)?;
        let drop = Dropout::new(dropout, rng.next_u64())?;
        let linear2 = Linear::new(dim_feedforward, d_model, true, rng)?;
        Ok(TransformerEncoderLayer {
            self_attn,
            linear1,
            dropout: drop,
            linear2,
            norm1: LayerNorm::new(&[d_model], true)?,
            norm2: LayerNorm::new(&[d_model], true)?,
            dropout1: Dropout::new(dropout, rng.next_u64())?,
            dropout2: Dropout::new(dropout, rng.next_u64())?,
            activation,
            norm_first,
        })
    }

    /// The layer applied to `src` (`[N, L, d_model]`) with `masks` on its
    /// self-attention (`src_mask`, `src_key_padding_mask`, `is_causal`).
    pub fn forward(&mut self, src: &Tensor, masks: MhaMasks<'_>) -> Result<Tensor> {
        let mut x = src.clone();
        if self.norm_first {
            let a = self.attention(&self.norm1.forward(&x)?, masks)?;
            x = ops::add(&x, &a)?;
            let f = self.feed_forward(&self.norm2.forward(&x)?)?;
            ops::add(&x, &f)
        } else {
            let a = self.attention(&x, masks)?;
            x = self.norm1.forward(&ops::add(&x, &a)?)?;
            let f = self.feed_forward(&x)?;
            self.norm2.forward(&ops::add(&x, &f)?)
        }
    }

    fn attention(&mut self, x: &Tensor, masks: MhaMasks<'_>) -> Result<Tensor> {
        let a = self.self_attn.forward(x, x, x, masks)?;
        self.dropout1.forward(&a)
    }

    fn feed_forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let h = self.linear1.forward(x)?;
        let h = match self.activation {
            Activation::Relu => ops::relu(&h)?,
            Activation::Gelu => ops::gelu_erf(&h)?,
        };
        let h = self.linear2.forward(&self.dropout.forward(&h)?)?;
        self.dropout2.forward(&h)
    }
}

impl Forward for TransformerEncoderLayer {
    /// The layer without masks.
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        TransformerEncoderLayer::forward(self, x, MhaMasks::default())
    }
}
