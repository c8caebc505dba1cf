//! Normalisation layers: [`LayerNorm`], [`BatchNorm1d`], [`BatchNorm2d`],
//! [`GroupNorm`], [`RMSNorm`].

use super::layers::Forward;
use crate::ops;
use crate::{DType, Error, Result, Shape, Tensor};

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

/// Batch normalisation over axis 1 of `x`, shared by [`BatchNorm1d`] and
/// [`BatchNorm2d`]: in training, batch statistics (biased variance) normalise `x`
/// and update the running ones (`momentum`, unbiased variance) and the batch
/// count; in evaluation, the running statistics normalise it.
#[allow(clippy::too_many_arguments)]
fn batch_norm(
    op: &'static str,
    ranks: &[usize],
    x: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    running_mean: &mut Tensor,
    running_var: &mut Tensor,
    num_batches_tracked: &mut Tensor,
    eps: f64,
    momentum: f64,
    training: bool,
) -> Result<Tensor> {
    let c = weight.dims()[0];
    if !ranks.contains(&x.rank()) || x.dims()[1] != c {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input has shape {}; it must have rank {ranks:?} with num_features = {c} \
                 channels on axis 1",
                x.shape()
            ),
        });
    }
    // [1, C, 1, ..]: the per-channel tensors broadcast along axis 1.
    let mut bshape = vec![1; x.rank()];
    bshape[1] = c;
    let axes: Vec<isize> = (0..x.rank() as isize).filter(|&a| a != 1).collect();
    // The new running statistics are written only once the output is computed:
    // on an error the layer is unchanged.
    let (mean, var, update) = if training {
        let n = x.numel() / c;
        if n < 2 {
            return Err(Error::InvalidArgument {
                op,
                msg: format!(
                    "training needs more than one value per channel; the input {} has {n}: use \
                     a larger batch, or eval()",
                    x.shape()
                ),
            });
        }
        let mean = ops::mean_axes(x, &axes, true)?;
        let var = ops::var_axes(x, &axes, 0, true)?;
        // The running statistics: the unbiased variance, without the graph.
        let xd = x.detach();
        let bm = ops::to_dtype(&ops::mean_axes(&xd, &axes, false)?, running_mean.dtype())?;
        let bv = ops::to_dtype(&ops::var_axes(&xd, &axes, 1, false)?, running_var.dtype())?;
        let blend = |old: &Tensor, new: &Tensor| -> Result<Tensor> {
            ops::add(
                &ops::mul_scalar(&old.detach(), 1.0 - momentum)?,
                &ops::mul_scalar(new, momentum)?,
            )
        };
        let (rm, rv) = (blend(running_mean, &bm)?, blend(running_var, &bv)?);
        // Counted where the buffer is (an integer op, unrecorded): no read back
        // to the host, which on a GPU would wait for the step's kernels.
        let count = crate::compute::unary(num_batches_tracked, crate::UnaryOp::AddScalar(1.0))?;
        (mean, var, Some((rm, rv, count)))
    } else {
        (
            ops::reshape(
                &ops::to_dtype(running_mean, x.dtype())?,
                Shape::from(bshape.as_slice()),
            )?,
            ops::reshape(
                &ops::to_dtype(running_var, x.dtype())?,
                Shape::from(bshape.as_slice()),
            )?,
            None,
        )
    };
    let inv = ops::rsqrt(&ops::add_scalar(&var, eps)?)?;
    let y = ops::mul(&ops::sub(x, &mean)?, &inv)?;
    let y = ops::mul(&y, &ops::reshape(weight, Shape::from(bshape.as_slice()))?)?;
    let y = ops::add(&y, &ops::reshape(bias, Shape::from(bshape.as_slice()))?)?;
    if let Some((rm, rv, count)) = update {
        running_mean.set_data(&rm)?;
        running_var.set_data(&rv)?;
        num_batches_tracked.set_data(&count)?;
    }
    Ok(y)
}

macro_rules! batch_norm_layer {
    ($name:ident, $torch:literal, $ranks:expr, $input:literal) => {
        #[doc = concat!("Batch normalisation (`nn.", $torch, "(num_features, eps=1e-5, momentum=0.1)`, affine, tracking running statistics) of ", $input, ": per channel (axis 1), in training the batch's mean and biased variance normalise `x` and update `running_mean` and `running_var` (`(1 - momentum) · running + momentum · batch`, the variance unbiased) and `num_batches_tracked`; in evaluation the running statistics normalise it. Then `weight` (ones) and `bias` (zeros). A new layer is in training mode, as PyTorch's.")]
        #[derive(super::Module)]
        pub struct $name {
            /// `[num_features]`, initially ones.
            pub weight: Tensor,
            /// `[num_features]`, initially zeros.
            pub bias: Tensor,
            /// `[num_features]` buffer, initially zeros.
            #[module(buffer)]
            pub running_mean: Tensor,
            /// `[num_features]` buffer, initially ones.
            #[module(buffer)]
            pub running_var: Tensor,
            /// The number of training batches seen (an `i64` scalar buffer).
            #[module(buffer)]
            pub num_batches_tracked: Tensor,
            /// Added to the variance (default `1e-5`).
            pub eps: f64,
            /// The weight of a new batch in the running statistics (default `0.1`).
            pub momentum: f64,
            /// Training mode: batch statistics, updated running ones.
            #[module(training)]
            pub training: bool,
        }

        impl $name {
            /// An f32 layer over `num_features` channels with PyTorch's defaults. An
            /// error when `num_features` is 0.
            pub fn new(num_features: usize) -> Result<$name> {
                if num_features == 0 {
                    return Err(Error::InvalidArgument {
                        op: $torch,
                        msg: "num_features must be at least 1".into(),
                    });
                }
                let c = [num_features];
                Ok($name {
                    weight: Tensor::ones(c, DType::F32)?.with_requires_grad(true),
                    bias: Tensor::zeros(c, DType::F32)?.with_requires_grad(true),
                    running_mean: Tensor::zeros(c, DType::F32)?,
                    running_var: Tensor::ones(c, DType::F32)?,
                    num_batches_tracked: Tensor::zeros([], DType::I64)?,
                    eps: 1e-5,
                    momentum: 0.1,
                    training: true,
                })
            }

            /// `x` normalised (updating the running statistics in training). An
            /// error when `x`'s rank or channel count is wrong, or, in training,
            /// when a channel has a single value.
            pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
                batch_norm(
                    $torch,
                    &$ranks,
                    x,
                    &self.weight,
                    &self.bias,
                    &mut self.running_mean,
                    &mut self.running_var,
                    &mut self.num_batches_tracked,
                    self.eps,
                    self.momentum,
                    self.training,
                )
            }
        }

        impl Forward for $name {
            fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
                $name::forward(self, x)
            }
        }
    };
}

batch_norm_layer!(
    BatchNorm1d,
    "BatchNorm1d",
    [2, 3],
    "`[N, C]` or `[N, C, L]`"
);
batch_norm_layer!(BatchNorm2d, "BatchNorm2d", [4], "`[N, C, H, W]`");

/// Group normalisation (`nn.GroupNorm(num_groups, num_channels, eps=1e-5,
/// affine)`) of `[N, C, ..]`: the channels are split into `num_groups` groups, each
/// (with all its positions) normalised by its mean and biased variance plus `eps`,
/// then scaled by `weight` (ones) and shifted by `bias` (zeros), per channel.
#[derive(super::Module)]
pub struct GroupNorm {
    /// `[num_channels]`, when affine.
    pub weight: Option<Tensor>,
    /// `[num_channels]`, when affine.
    pub bias: Option<Tensor>,
    /// The number of groups (a divisor of the channel count).
    pub num_groups: usize,
    /// The number of channels.
    pub num_channels: usize,
    /// Added to the variance.
    pub eps: f64,
}

impl GroupNorm {
    /// An f32 layer with `eps = 1e-5`. An error when `num_groups` does not divide
    /// `num_channels` (or either is 0).
    pub fn new(num_groups: usize, num_channels: usize, affine: bool) -> Result<GroupNorm> {
        if num_groups == 0 || num_channels == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::InvalidArgument {
                op: "GroupNorm",
                msg: format!(
                    "num_groups = {num_groups} must divide num_channels = {num_channels} (both at \
                     least 1)"
                ),
            });
        }
        let c = [num_channels];
        let (weight, bias) = if affine {
            (
                Some(Tensor::ones(c, DType::F32)?.with_requires_grad(true)),
                Some(Tensor::zeros(c, DType::F32)?.with_requires_grad(true)),
            )
        } else {
            (None, None)
        };
        Ok(GroupNorm {
            weight,
            bias,
            num_groups,
            num_channels,
            eps: 1e-5,
        })
    }

    /// `x` (`[N, C, ..]`, `C = num_channels`) normalised per group. An error
    /// naming the expected shape otherwise.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let c = self.num_channels;
        if x.rank() < 2 || x.dims()[1] != c {
            return Err(Error::Shape {
                op: "GroupNorm",
                msg: format!(
                    "the input has shape {}; it must be [N, num_channels = {c}, ..]",
                    x.shape()
                ),
            });
        }
        let n = x.dims()[0];
        let g = self.num_groups;
        let rest = x.numel() / (n * g).max(1);
        let xg = ops::reshape(x, Shape::from([n, g, rest]))?;
        let mean = ops::mean_axes(&xg, &[2], true)?;
        let var = ops::var_axes(&xg, &[2], 0, true)?;
        let y = ops::mul(
            &ops::sub(&xg, &mean)?,
            &ops::rsqrt(&ops::add_scalar(&var, self.eps)?)?,
        )?;
        let mut y = ops::reshape(&y, x.shape().clone())?;
        let mut bshape = vec![1; x.rank()];
        bshape[1] = c;
        if let Some(w) = &self.weight {
            y = ops::mul(&y, &ops::reshape(w, Shape::from(bshape.as_slice()))?)?;
        }
        if let Some(b) = &self.bias {
            y = ops::add(&y, &ops::reshape(b, Shape::from(bshape.as_slice()))?)?;
        }
        Ok(y)
    }
}

impl Forward for GroupNorm {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        GroupNorm::forward(self, x)
    }
}

/// Root-mean-square normalisation (`nn.RMSNorm(normalized_shape, eps,
/// elementwise_affine)`) over the trailing `normalized_shape` axes:
/// `x / √(mean(x²) + eps) · weight`, `weight` (ones) of shape `normalized_shape`.
/// `eps = None` is PyTorch's default, the machine epsilon of `x`'s dtype.
#[derive(super::Module)]
pub struct RMSNorm {
    /// `normalized_shape`, when affine.
    pub weight: Option<Tensor>,
    /// The trailing sizes normalised over.
    pub normalized_shape: Vec<usize>,
    /// Added to the mean square; `None`: the dtype's machine epsilon.
    pub eps: Option<f64>,
}

impl RMSNorm {
    /// An f32 layer. An error when `normalized_shape` is empty or has a 0.
    pub fn new(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
    ) -> Result<RMSNorm> {
        if normalized_shape.is_empty() || normalized_shape.contains(&0) {
            return Err(Error::InvalidArgument {
                op: "RMSNorm",
                msg: format!(
                    "normalized_shape {normalized_shape:?} must name at least one axis, none of \
                     size 0"
                ),
            });
        }
        let weight = if elementwise_affine {
            Some(Tensor::ones(normalized_shape, DType::F32)?.with_requires_grad(true))
        } else {
            None
        };
        Ok(RMSNorm {
            weight,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }

    /// `x` normalised over its trailing `normalized_shape` axes. An error when
    /// they are not `x`'s trailing sizes.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let k = self.normalized_shape.len();
        if k > x.rank() || x.dims()[x.rank() - k..] != *self.normalized_shape {
            return Err(Error::Shape {
                op: "RMSNorm",
                msg: format!(
                    "normalized_shape {:?} must be the last axes of the input, whose shape is {}",
                    self.normalized_shape,
                    x.shape()
                ),
            });
        }
        let eps = self.eps.unwrap_or(match x.dtype() {
            DType::F64 => f64::EPSILON,
            DType::F16 => 0.0009765625,
            DType::BF16 => 0.0078125,
            _ => f32::EPSILON as f64,
        });
        let axes: Vec<isize> = (x.rank() - k..x.rank()).map(|a| a as isize).collect();
        let ms = ops::mean_axes(&ops::mul(x, x)?, &axes, true)?;
        let y = ops::mul(x, &ops::rsqrt(&ops::add_scalar(&ms, eps)?)?)?;
        match &self.weight {
            Some(w) => ops::mul(&y, w),
            None => Ok(y),
        }
    }
}

impl Forward for RMSNorm {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        RMSNorm::forward(self, x)
    }
}
