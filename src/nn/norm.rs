//! Normalisation layers: [`LayerNorm`].

use super::layers::Forward;
use crate::ops;
use crate::{DType, Error, Result, Tensor};

/// Layer normalisation over the trailing `normalized_shape` axes
/// (`nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True)`): the
/// biased variance plus `eps`, then `weight` (ones) and `bias` (zeros), each of
/// shape `normalized_shape`, where `elementwise_affine`.
#[derive(super::Module)]
pub struct LayerNorm {
    /// `normalized_shape`, when the layer is affine.
    pub weight: Option<Tensor>,
    /// `normalized_shape`, when the layer is affine.
    pub bias: Option<Tensor>,
    /// The trailing sizes normalised over.
    pub normalized_shape: Vec<usize>,
    /// Added to the variance.
    pub eps: f64,
}

impl LayerNorm {
    /// An f32 layer over `normalized_shape` with `eps = 1e-5`; with
    /// `elementwise_affine`, a weight of ones and a bias of zeros. An error when
    /// `normalized_shape` is empty or has a 0.
    pub fn new(normalized_shape: &[usize], elementwise_affine: bool) -> Result<LayerNorm> {
        if normalized_shape.is_empty() || normalized_shape.contains(&0) {
            return Err(Error::InvalidArgument {
                op: "LayerNorm",
                msg: format!(
                    "normalized_shape {normalized_shape:?} must name at least one axis, none of \
                     size 0"
                ),
            });
        }
        let (weight, bias) = if elementwise_affine {
            (
                Some(Tensor::ones(normalized_shape, DType::F32)?.with_requires_grad(true)),
                Some(Tensor::zeros(normalized_shape, DType::F32)?.with_requires_grad(true)),
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            weight,
            bias,
            normalized_shape: normalized_shape.to_vec(),
            eps: 1e-5,
        })
    }

    /// `x` normalised over its trailing `normalized_shape` axes (errors as
    /// `ops::layer_norm_shape`: `x`'s trailing sizes must be `normalized_shape`).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::layer_norm_shape(
            x,
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

impl Forward for LayerNorm {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        LayerNorm::forward(self, x)
    }
}
