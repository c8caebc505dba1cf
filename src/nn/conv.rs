//! Convolution layers: [`Conv2d`], [`Conv1d`], [`ConvTranspose2d`].

use super::layers::Forward;
use crate::ops::{self, Conv1dOptions, Conv2dOptions, ConvTranspose2dOptions};
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

/// Checks a convolution layer's sizes: every one at least 1, `groups` dividing
/// both channel counts.
fn check_conv(op: &'static str, cin: usize, cout: usize, kernel: &[usize], g: usize) -> Result<()> {
    if cin == 0 || cout == 0 || kernel.contains(&0) || g == 0 {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "in_channels = {cin}, out_channels = {cout}, kernel_size = {kernel:?} and groups \
                 = {g} must all be at least 1"
            ),
        });
    }
    if !cin.is_multiple_of(g) || !cout.is_multiple_of(g) {
        return Err(Error::InvalidArgument {
            op,
            msg: format!("groups = {g} must divide in_channels = {cin} and out_channels = {cout}"),
        });
    }
    Ok(())
}

/// A weight of `shape` and an optional bias of `[n_bias]`, uniform in
/// `±1/√fan_in`, fan_in being the product of `shape`'s sizes after the first
/// (PyTorch's rule for every convolution).
fn conv_params(
    shape: &[usize],
    n_bias: usize,
    bias: bool,
    rng: &mut Rng,
) -> Result<(Tensor, Option<Tensor>)> {
    let fan_in: usize = shape[1..].iter().product();
    let bound = 1.0 / (fan_in as f64).sqrt();
    let w = rng
        .uniform(shape, -bound, bound, DType::F32)?
        .with_requires_grad(true);
    let b = if bias {
        Some(
            rng.uniform([n_bias], -bound, bound, DType::F32)?
                .with_requires_grad(true),
        )
    } else {
        None
    };
    Ok((w, b))
}

/// A 1-D convolution (`nn.Conv1d(in_channels, out_channels, kernel_size, stride,
/// padding, dilation, groups, bias)`) of `[N, C, L]` inputs: `weight` is
/// `[out_channels, in_channels / groups, k]`, `bias` `[out_channels]`.
#[derive(super::Module)]
pub struct Conv1d {
    /// `[out_channels, in_channels / groups, k]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    /// Stride, padding, dilation and groups.
    #[module(skip)]
    pub options: Conv1dOptions,
}

impl Conv1d {
    /// An f32 layer with PyTorch's default initialisation (as [`Conv2d::new`],
    /// `fan_in = in_channels / groups · k`). Errors as [`Conv2d::new`].
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        options: Conv1dOptions,
        bias: bool,
        rng: &mut Rng,
    ) -> Result<Conv1d> {
        let g = options.groups;
        check_conv("Conv1d", in_channels, out_channels, &[kernel_size], g)?;
        let (weight, bias) = conv_params(
            &[out_channels, in_channels / g, kernel_size],
            out_channels,
            bias,
            rng,
        )?;
        Ok(Conv1d {
            weight,
            bias,
            options,
        })
    }

    /// The convolution of `x` (`[N, C, L]`); errors as `ops::conv1d`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::conv1d(x, &self.weight, self.bias.as_ref(), self.options)
    }
}

impl Forward for Conv1d {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        Conv1d::forward(self, x)
    }
}

/// A 2-D transposed convolution (`nn.ConvTranspose2d(in_channels, out_channels,
/// kernel_size, stride, padding, output_padding, groups, bias, dilation)`):
/// `weight` is `[in_channels, out_channels / groups, kh, kw]` (PyTorch's layout),
/// `bias` `[out_channels]`.
#[derive(super::Module)]
pub struct ConvTranspose2d {
    /// `[in_channels, out_channels / groups, kh, kw]`.
    pub weight: Tensor,
    /// `[out_channels]`, when the layer has one.
    pub bias: Option<Tensor>,
    /// Stride, padding, output padding, dilation and groups.
    #[module(skip)]
    pub options: ConvTranspose2dOptions,
}

impl ConvTranspose2d {
    /// An f32 layer with PyTorch's default initialisation: uniform in
    /// `±1/√fan_in` with PyTorch's `fan_in` of this weight layout,
    /// `out_channels / groups · kh · kw`. Errors as [`Conv2d::new`].
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: (usize, usize),
        options: ConvTranspose2dOptions,
        bias: bool,
        rng: &mut Rng,
    ) -> Result<ConvTranspose2d> {
        let g = options.groups;
        let (kh, kw) = kernel_size;
        check_conv("ConvTranspose2d", in_channels, out_channels, &[kh, kw], g)?;
        let (weight, bias) = conv_params(
            &[in_channels, out_channels / g, kh, kw],
            out_channels,
            bias,
            rng,
        )?;
        Ok(ConvTranspose2d {
            weight,
            bias,
            options,
        })
    }

    /// The transposed convolution of `x` (`[N, C, H, W]`); errors as
    /// `ops::conv_transpose2d`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::conv_transpose2d(x, &self.weight, self.bias.as_ref(), self.options)
    }
}

impl Forward for ConvTranspose2d {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        ConvTranspose2d::forward(self, x)
    }
}
