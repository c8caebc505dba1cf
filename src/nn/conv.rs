//! Convolution layers: [`Conv2d`].

use super::layers::Forward;
use crate::ops::{self, Conv2dOptions};
use crate::random::Rng;
use crate::{DType, Error, Result, Tensor};

/// A 2-D convolution (`nn.Conv2d(in_channels, out_channels, kernel_size, stride,
/// padding, dilation, groups, bias)`) of `[N, C, H, W]` images: `weight` is
/// `[out_channels, in_channels / groups, kh, kw]`, `bias` `[out_channels]`.
#[derive(super::Module)]
pub struct Conv2d {
    /// `[out_channels, in_channels / groups, kh, kw]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation and groups (PyTorch's defaults in `Default`).
    #[module(skip)]
    pub options: Conv2dOptions,
}

impl Conv2d {
    /// An f32 layer with PyTorch's default initialisation: weight and bias uniform
    /// in `±1/√fan_in`, `fan_in = in_channels / groups · kh · kw`, drawn from `rng`
    /// (weight first). An error when a size is 0 or `groups` does not divide both
    /// channel counts.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: (usize, usize),
        options: Conv2dOptions,
        bias: bool,
        rng: &mut Rng,
    ) -> Result<Conv2d> {
        let (kh, kw) = kernel_size;
        let g = options.groups;
        if in_channels == 0 || out_channels == 0 || kh == 0 || kw == 0 || g == 0 {
            return Err(Error::InvalidArgument {
                op: "Conv2d",
                msg: format!(
                    "in_channels = {in_channels}, out_channels = {out_channels}, kernel_size = \
                     {kernel_size:?} and groups = {g} must all be at least 1"
                ),
            });
        }
        if !in_channels.is_multiple_of(g) || !out_channels.is_multiple_of(g) {
            return Err(Error::InvalidArgument {
                op: "Conv2d",
                msg: format!(
                    "groups = {g} must divide in_channels = {in_channels} and out_channels = \
                     {out_channels}"
                ),
            });
        }
        let fan_in = in_channels / g * kh * kw;
        let bound = 1.0 / (fan_in as f64).sqrt();
        let weight = rng
            .uniform(
                [out_channels, in_channels / g, kh, kw],
                -bound,
                bound,
                DType::F32,
            )?
            .with_requires_grad(true);
        let bias = if bias {
            Some(
                rng.uniform([out_channels], -bound, bound, DType::F32)?
                    .with_requires_grad(true),
            )
        } else {
            None
        };
        Ok(Conv2d {
            weight,
            bias,
            options,
        })
    }

    /// The convolution of `x` (`[N, C, H, W]`); errors as `ops::conv2d`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::conv2d(x, &self.weight, self.bias.as_ref(), self.options)
    }
}

impl Forward for Conv2d {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        Conv2d::forward(self, x)
    }
}
