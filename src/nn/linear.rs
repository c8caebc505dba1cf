//! [`Linear`] and [`Embedding`], with PyTorch's state_dict names and default
//! initialisation drawn from a seeded [`Rng`].

use super::layers::Forward;
use crate::ops::{self, EmbeddingOptions};
use crate::random::Rng;
use crate::{DType, Error, Result, Tensor};

/// `y = x Wᵀ + b` over the last axis of `x` (`nn.Linear(in_features,
/// out_features, bias)`): `weight` is `[out_features, in_features]`, `bias`
/// `[out_features]`; `x` is `[.., in_features]`, `y` `[.., out_features]`.
#[derive(super::Module)]
pub struct Linear {
    /// `[out_features, in_features]`.
    pub weight: Tensor,
    /// `[out_features]`, when the layer has one.
    pub bias: Option<Tensor>,
}

impl Linear {
    /// An f32 layer with PyTorch's default initialisation (kaiming_uniform with
    /// `a = √5`): weight and bias uniform in `[-1/√in_features, 1/√in_features)`,
    /// drawn from `rng` (weight first). An error when a size is 0.
    pub fn new(
        in_features: usize,
        out_features: usize,
        bias: bool,
        rng: &mut Rng,
    ) -> Result<Linear> {
        if in_features == 0 || out_features == 0 {
            return Err(Error::InvalidArgument {
                op: "Linear",
                msg: format!(
                    "in_features = {in_features} and out_features = {out_features}: both must be \
                     at least 1"
                ),
            });
        }
        let bound = 1.0 / (in_features as f64).sqrt();
        let weight = rng
            .uniform([out_features, in_features], -bound, bound, DType::F32)?
            .with_requires_grad(true);
        let bias = if bias {
            Some(
                rng.uniform([out_features], -bound, bound, DType::F32)?
                    .with_requires_grad(true),
            )
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    /// The number of inputs (`weight`'s second size).
    pub fn in_features(&self) -> usize {
        self.weight.dims()[1]
    }

    /// The number of outputs (`weight`'s first size).
    pub fn out_features(&self) -> usize {
        self.weight.dims()[0]
    }

    /// `x Wᵀ + b`. An error when `x` is a scalar or its last size is not
    /// `in_features`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let n = self.in_features();
        if x.rank() == 0 || x.dims()[x.rank() - 1] != n {
            return Err(Error::Shape {
                op: "Linear",
                msg: format!(
                    "the input has shape {}; its last axis must have in_features = {n} entries",
                    x.shape()
                ),
            });
        }
        let y = ops::matmul(x, &ops::transpose(&self.weight, 0, 1)?)?;
        match &self.bias {
            Some(b) => ops::add(&y, b),
            None => Ok(y),
        }
    }
}

impl Forward for Linear {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        Linear::forward(self, x)
    }
}

/// A lookup table (`nn.Embedding(num_embeddings, embedding_dim, padding_idx)`):
/// `weight` is `[num_embeddings, embedding_dim]`; the forward takes `i64` indices
/// of any shape and gives `[..indices, embedding_dim]`. The `padding_idx` row
/// starts at zero and gets no gradient.
#[derive(super::Module)]
pub struct Embedding {
    /// `[num_embeddings, embedding_dim]`.
    pub weight: Tensor,
    /// The row that gets no gradient, counted from the start.
    #[module(skip)]
    pub padding_idx: Option<usize>,
}

impl Embedding {
    /// An f32 table with PyTorch's default initialisation: `N(0, 1)` drawn from
    /// `rng`, the `padding_idx` row (negative counts from the end) zeroed. An error
    /// when a size is 0 or `padding_idx` is not a row.
    pub fn new(
        num_embeddings: usize,
        embedding_dim: usize,
        padding_idx: Option<i64>,
        rng: &mut Rng,
    ) -> Result<Embedding> {
        if num_embeddings == 0 || embedding_dim == 0 {
            return Err(Error::InvalidArgument {
                op: "Embedding",
                msg: format!(
                    "num_embeddings = {num_embeddings} and embedding_dim = {embedding_dim}: both \
                     must be at least 1"
                ),
            });
        }
        let v = num_embeddings as i64;
        let pad = padding_idx
            .map(|p| {
                let at = if p < 0 { p + v } else { p };
                usize::try_from(at)
                    .ok()
                    .filter(|&a| a < num_embeddings)
                    .ok_or_else(|| Error::InvalidArgument {
                        op: "Embedding",
                        msg: format!(
                            "padding_idx {p} is not a row of a table of {num_embeddings} rows; \
                             give one in -{v}..{v}"
                        ),
                    })
            })
            .transpose()?;
        let mut values: Vec<f32> = (0..num_embeddings * embedding_dim)
            .map(|_| rng.normal_f64() as f32)
            .collect();
        if let Some(p) = pad {
            values[p * embedding_dim..(p + 1) * embedding_dim].fill(0.0);
        }
        let weight =
            Tensor::from_slice(&values, [num_embeddings, embedding_dim])?.with_requires_grad(true);
        Ok(Embedding {
            weight,
            padding_idx: pad,
        })
    }

    /// The rows of `weight` picked by `indices` (`i64`, each in
    /// `0..num_embeddings`); errors as `ops::embedding`.
    pub fn forward(&self, indices: &Tensor) -> Result<Tensor> {
        let opts = EmbeddingOptions {
            padding_idx: self.padding_idx.map(|p| p as i64),
            ..Default::default()
        };
        // Without max_norm the weight is only read: a handle to it serves.
        let mut w = self.weight.clone();
        ops::embedding_with(&mut w, indices, &opts)
    }
}

impl Forward for Embedding {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        Embedding::forward(self, x)
    }
}
