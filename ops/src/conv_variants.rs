//! The other convolutions, composed of recorded ops (so differentiable to any
//! order, on every device): [`conv1d`] and [`conv3d`] through [`conv2d`]'s op,
//! and the transposed convolutions [`conv_transpose2d`] and [`conv_transpose1d`]
//! as `col2im` of `wᵀ·x` (the gradient of `conv2d` with respect to its input).

use crate::conv::add_bias;
use crate::{
    Conv2dOptions, col2im, conv2d, conv2d_op, index_select, matmul, narrow, pad, permute, reshape,
    squeeze, unsqueeze,
};
use autograd_core::{Error, Result, Shape, Tensor, compute};

/// The options of [`conv1d`], as `torch.nn.functional.conv1d`'s arguments;
/// `Default` is PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv1dOptions {
    /// Step between windows, at least 1 (default 1).
    pub stride: usize,
    /// Zeros added on each side (default 0).
    pub padding: usize,
    /// Step between kernel taps, at least 1 (default 1).
    pub dilation: usize,
    /// Channel groups, at least 1 (default 1), as [`Conv2dOptions::groups`].
    pub groups: usize,
}

impl Default for Conv1dOptions {
    fn default() -> Self {
        Conv1dOptions {
            stride: 1,
            padding: 0,
            dilation: 1,
            groups: 1,
        }
    }
}

/// The options of [`conv3d`], as `torch.nn.functional.conv3d`'s arguments
/// (`(depth, height, width)` triples); `Default` is PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv3dOptions {
    /// Step between windows, each at least 1 (default 1).
    pub stride: (usize, usize, usize),
    /// Zeros added on each side of each spatial axis (default 0).
    pub padding: (usize, usize, usize),
    /// Step between kernel taps, each at least 1 (default 1).
    pub dilation: (usize, usize, usize),
    /// Channel groups, at least 1 (default 1), as [`Conv2dOptions::groups`].
    pub groups: usize,
}

impl Default for Conv3dOptions {
    fn default() -> Self {
        Conv3dOptions {
            stride: (1, 1, 1),
            padding: (0, 0, 0),
            dilation: (1, 1, 1),
            groups: 1,
        }
    }
}

/// The options of [`conv_transpose2d`], as
/// `torch.nn.functional.conv_transpose2d`'s arguments (`(height, width)` pairs);
/// `Default` is PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvTranspose2dOptions {
    /// The stride of the convolution this transposes, each at least 1 (default 1).
    pub stride: (usize, usize),
    /// The padding of that convolution: `dilation·(k - 1) - padding` is added to
    /// each side of the input (default 0).
    pub padding: (usize, usize),
    /// Added to one side of the output: picks among the sizes the convolution
    /// maps to the same shape; each smaller than the stride or the dilation
    /// (default 0).
    pub output_padding: (usize, usize),
    /// Step between kernel taps, each at least 1 (default 1).
    pub dilation: (usize, usize),
    /// Channel groups, at least 1 (default 1).
    pub groups: usize,
}

impl Default for ConvTranspose2dOptions {
    fn default() -> Self {
        ConvTranspose2dOptions {
            stride: (1, 1),
            padding: (0, 0),
            output_padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

/// The options of [`conv_transpose1d`], as
/// `torch.nn.functional.conv_transpose1d`'s arguments (see
/// [`ConvTranspose2dOptions`]); `Default` is PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvTranspose1dOptions {
    /// The stride of the convolution this transposes, at least 1 (default 1).
    pub stride: usize,
    /// The padding of that convolution (default 0).
    pub padding: usize,
    /// Added to the end of the output, smaller than the stride or the dilation
    /// (default 0).
    pub output_padding: usize,
    /// Step between kernel taps, at least 1 (default 1).
    pub dilation: usize,
    /// Channel groups, at least 1 (default 1).
    pub groups: usize,
}

impl Default for ConvTranspose1dOptions {
    fn default() -> Self {
        ConvTranspose1dOptions {
            stride: 1,
            padding: 0,
            output_padding: 0,
            dilation: 1,
            groups: 1,
        }
    }
}

/// An error unless `t` (the argument `what` of `op`) has rank `rank`.
fn check_rank(op: &'static str, what: &str, t: &Tensor, rank: usize, form: &str) -> Result<()> {
    if t.dims().len() == rank {
        return Ok(());
    }
    Err(Error::Shape {
        op,
        msg: format!(
            "the {what} has shape {} (rank {}); it must be {form} (rank {rank})",
            t.shape(),
            t.dims().len()
        ),
    })
}

/// 1-D convolution (cross-correlation, as `torch.nn.functional.conv1d`) of `x`
/// `[N, C, L]` with `w` `[O, C/groups, k]`, plus `bias` `[O]` when given:
/// `[N, O, ol]` with `ol = ⌊(L + 2·p - d·(k - 1) - 1) / s⌋ + 1`.
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::{Conv1dOptions, conv1d};
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [1, 1, 4])?;
/// let w = Tensor::from_slice(&[1.0f32, -1.0], [1, 1, 2])?;
/// let y = conv1d(&x, &w, None, Conv1dOptions { stride: 2, ..Default::default() })?;
/// assert_eq!(y.to_vec::<f32>()?, [-1.0, -1.0]);
/// # Ok(())
/// # }
/// ```
///
/// [`conv2d`] on `[N, C, 1, L]` with a `[O, C/groups, 1, k]` weight (recorded: an
/// `unsqueeze` of each, the `conv2d` node, a `squeeze`), so its errors past the
/// ranks name `conv2d` and those shapes.
pub fn conv1d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    options: Conv1dOptions,
) -> Result<Tensor> {
    check_rank("conv1d", "input", x, 3, "[N, C, L]")?;
    check_rank(
        "conv1d",
        "weight",
        w,
        3,
        "[out_channels, in_channels / groups, k]",
    )?;
    let o = Conv2dOptions {
        stride: (1, options.stride),
        padding: (0, options.padding),
        dilation: (1, options.dilation),
        groups: options.groups,
    };
    let y = conv2d(&unsqueeze(x, 2)?, &unsqueeze(w, 2)?, bias, o)?;
    squeeze(&y, 2)
}

/// 3-D convolution (cross-correlation, as `torch.nn.functional.conv3d`) of `x`
/// `[N, C, D, H, W]` with `w` `[O, C/groups, kd, kh, kw]`, plus `bias` `[O]` when
/// given: `[N, O, od, oh, ow]`, each size as [`conv2d`]'s.
///
/// Built from `kd` 2-D convolutions: the input padded in depth, and for each
/// depth tap `a` the slices `a·dd + i·sd` (an `index_select`) stacked into the
/// batch and convolved with the weight's slice `a`; the results summed. Recorded
/// ops, so differentiable to any order; the 2-D convolutions' errors name
/// `conv2d` (with the slices' shapes).
pub fn conv3d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    options: Conv3dOptions,
) -> Result<Tensor> {
    const OP: &str = "conv3d";
    use autograd_core::autocast::{CastPolicy::Lower, cast};
    check_rank(OP, "input", x, 5, "[N, C, D, H, W]")?;
    check_rank(
        OP,
        "weight",
        w,
        5,
        "[out_channels, in_channels / groups, kd, kh, kw]",
    )?;
    let (x, w) = (&cast(x, Lower)?, &cast(w, Lower)?);
    let bias = bias.map(|b| cast(b, Lower)).transpose()?;
    let &[n, c, d, h, wd] = x.dims() else {
        unreachable!("rank checked")
    };
    let &[o, cg, kd, kh, kw] = w.dims() else {
        unreachable!("rank checked")
    };
    let Conv3dOptions {
        stride: (sd, sh, sw),
        padding: (pd, ph, pw),
        dilation: (dd, dh, dw),
        groups,
    } = options;
    if sd == 0 || dd == 0 || kd == 0 || d == 0 {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "the depth stride ({sd}), depth dilation ({dd}), kernel depth ({kd}) and input \
                 depth (input {}) must each be at least 1 (weight {})",
                x.shape(),
                w.shape()
            ),
        });
    }
    let padded = pd.checked_mul(2).and_then(|p| p.checked_add(d));
    let span = dd.checked_mul(kd - 1).and_then(|s| s.checked_add(1));
    let (Some(padded), Some(span)) = (padded, span) else {
        return Err(Error::InvalidArgument {
            op: OP,
            msg: format!(
                "the depth padding ({pd}) or dilation ({dd}) is too large for the input {} \
                 (weight {})",
                x.shape(),
                w.shape()
            ),
        });
    };
    if span > padded {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the kernel depth {kd} with dilation {dd} spans {span} slices, more than the \
                 input {} padded by {pd} holds ({padded}); use a smaller kernel or dilation, or \
                 more padding",
                x.shape()
            ),
        });
    }
    let od = (padded - span) / sd + 1;
    let xp = if pd > 0 {
        pad(x, 2, pd, pd)?
    } else {
        x.clone()
    };
    let o2 = Conv2dOptions {
        stride: (sh, sw),
        padding: (ph, pw),
        dilation: (dh, dw),
        groups,
    };
    let mut sum: Option<Tensor> = None;
    for a in 0..kd {
        let at: Vec<i64> = (0..od).map(|i| (a * dd + i * sd) as i64).collect();
        let index = compute::to_device(&Tensor::from_slice(&at, [od])?, x.device())?;
        // [N, C, od, H, W] -> [N·od, C, H, W]: each output depth an image.
        let slices = index_select(&xp, &index, 2)?;
        let images = reshape(
            &permute(&slices, vec![0, 2, 1, 3, 4])?,
            Shape::from([n * od, c, h, wd]),
        )?;
        let wa = reshape(&narrow(w, 2, a, 1)?, Shape::from([o, cg, kh, kw]))?;
        let y = conv2d_op(&images, &wa, o2.stride, o2.padding, o2.dilation, groups)?;
        sum = Some(match sum {
            None => y,
            Some(s) => crate::add(&s, &y)?,
        });
    }
    let y = sum.expect("kd is at least 1");
    let (oh, ow) = (y.dims()[2], y.dims()[3]);
    let y = permute(
        &reshape(&y, Shape::from([n, od, o, oh, ow]))?,
        vec![0, 2, 1, 3, 4],
    )?;
    add_bias(OP, y, bias.as_ref(), o, w)
}

/// 2-D transposed convolution (as `torch.nn.functional.conv_transpose2d`, the
/// gradient of [`conv2d`] with respect to its input) of `x` `[N, C, H, W]` with
/// `w` `[C, O/groups, kh, kw]`, plus `bias` `[O]` when given: `[N, O, oh, ow]`
/// with `oh = (H - 1)·sh - 2·ph + dh·(kh - 1) + oph + 1` (the same for `ow`).
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::{ConvTranspose2dOptions, conv_transpose2d};
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0], [1, 1, 1, 2])?;
/// let w = Tensor::from_slice(&[1.0f32, 10.0], [1, 1, 1, 2])?;
/// let o = ConvTranspose2dOptions { stride: (1, 2), ..Default::default() };
/// let y = conv_transpose2d(&x, &w, None, o)?; // each input pixel stamps the kernel
/// assert_eq!(y.to_vec::<f32>()?, [1.0, 10.0, 2.0, 20.0]);
/// # Ok(())
/// # }
/// ```
///
/// Built as the columns `wᵀ·x` (one batched `matmul` per group) folded by
/// [`col2im`](mod@col2im) into the output; recorded ops, so differentiable to any
/// order. Errors name `conv_transpose2d`.
pub fn conv_transpose2d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    options: ConvTranspose2dOptions,
) -> Result<Tensor> {
    const OP: &str = "conv_transpose2d";
    use autograd_core::autocast::{CastPolicy::Lower, cast};
    check_rank(OP, "input", x, 4, "[N, C, H, W]")?;
    check_rank(
        OP,
        "weight",
        w,
        4,
        "[in_channels, out_channels / groups, kh, kw]",
    )?;
    let (x, w) = (&cast(x, Lower)?, &cast(w, Lower)?);
    let bias = bias.map(|b| cast(b, Lower)).transpose()?;
    let &[n, c, h, wd] = x.dims() else {
        unreachable!("rank checked")
    };
    let &[wc, og, kh, kw] = w.dims() else {
        unreachable!("rank checked")
    };
    let ConvTranspose2dOptions {
        stride,
        padding,
        output_padding,
        dilation,
        groups,
    } = options;
    let invalid = |msg: String| Err(Error::InvalidArgument { op: OP, msg });
    if h == 0 || wd == 0 {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the input {} has an empty spatial axis (H = {h}, W = {wd}); images must have \
                 at least one pixel",
                x.shape()
            ),
        });
    }
    if groups == 0 || c % groups != 0 || wc != c {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the input {} has {c} channels and the weight {} must be [{c}, out_channels / \
                 groups, kh, kw] with {c} divisible by groups ({groups}, at least 1)",
                x.shape(),
                w.shape()
            ),
        });
    }
    for (name, (a, b)) in [
        ("kernel size", (kh, kw)),
        ("stride", stride),
        ("dilation", dilation),
    ] {
        if a == 0 || b == 0 {
            return invalid(format!(
                "{name} {:?} has a zero; every {name} must be at least 1 (input {}, weight {})",
                (a, b),
                x.shape(),
                w.shape()
            ));
        }
    }
    let bad = |op: usize, s: usize, d: usize| op >= s && op >= d;
    if bad(output_padding.0, stride.0, dilation.0) || bad(output_padding.1, stride.1, dilation.1) {
        return invalid(format!(
            "output_padding {output_padding:?} must be smaller than the stride {stride:?} or the \
             dilation {dilation:?} along each axis (input {})",
            x.shape()
        ));
    }
    // The output size along one axis, if positive and at most u32::MAX (as
    // conv2d's windows).
    let size = |i: usize, s: usize, p: usize, d: usize, k: usize, op: usize| {
        (i - 1)
            .checked_mul(s)?
            .checked_add(d.checked_mul(k - 1)?)?
            .checked_add(op)?
            .checked_add(1)?
            .checked_sub(p.checked_mul(2)?)
            .filter(|&o| o > 0 && o <= u32::MAX as usize)
    };
    let (Some(oh), Some(ow)) = (
        size(h, stride.0, padding.0, dilation.0, kh, output_padding.0),
        size(wd, stride.1, padding.1, dilation.1, kw, output_padding.1),
    ) else {
        return Err(Error::Shape {
            op: OP,
            msg: format!(
                "the input {} with weight {}, stride {stride:?}, padding {padding:?}, \
                 output_padding {output_padding:?} and dilation {dilation:?} gives an empty \
                 output (or one past u32::MAX); use less padding",
                x.shape(),
                w.shape()
            ),
        });
    };
    // Columns [N, O·kh·kw, H·W]: for each group, the weight as [C/g, O/g·kh·kw],
    // transposed, times the group's input [C/g, H·W].
    let k = og * kh * kw;
    let wt = permute(
        &reshape(w, Shape::from([groups, c / groups, k]))?,
        vec![0, 2, 1],
    )?;
    let xs = reshape(x, Shape::from([n, groups, c / groups, h * wd]))?;
    let cols = reshape(&matmul(&wt, &xs)?, Shape::from([n, groups * k, h, wd]))?;
    // With output_padding at least the stride, the output has windows that no
    // input pixel reaches: zero columns.
    let windows =
        |o: usize, s: usize, p: usize, d: usize, k: usize| (o + 2 * p - d * (k - 1) - 1) / s + 1;
    let (wh, ww) = (
        windows(oh, stride.0, padding.0, dilation.0, kh),
        windows(ow, stride.1, padding.1, dilation.1, kw),
    );
    let cols = if wh > h {
        pad(&cols, 2, 0, wh - h)?
    } else {
        cols
    };
    let cols = if ww > wd {
        pad(&cols, 3, 0, ww - wd)?
    } else {
        cols
    };
    let cols = reshape(&cols, Shape::from([n, groups * k, wh * ww]))?;
    let y = col2im(&cols, (oh, ow), (kh, kw), stride, padding, dilation)?;
    add_bias(OP, y, bias.as_ref(), groups * og, w)
}

/// 1-D transposed convolution (as `torch.nn.functional.conv_transpose1d`) of `x`
/// `[N, C, L]` with `w` `[C, O/groups, k]`, plus `bias` `[O]` when given:
/// `[N, O, (L - 1)·s - 2·p + d·(k - 1) + output_padding + 1]`.
///
/// [`conv_transpose2d`] on `[N, C, 1, L]` with a `[C, O/groups, 1, k]` weight.
pub fn conv_transpose1d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    options: ConvTranspose1dOptions,
) -> Result<Tensor> {
    const OP: &str = "conv_transpose1d";
    check_rank(OP, "input", x, 3, "[N, C, L]")?;
    check_rank(
        OP,
        "weight",
        w,
        3,
        "[in_channels, out_channels / groups, k]",
    )?;
    let o = ConvTranspose2dOptions {
        stride: (1, options.stride),
        padding: (0, options.padding),
        output_padding: (0, options.output_padding),
        dilation: (1, options.dilation),
        groups: options.groups,
    };
    let y = conv_transpose2d(&unsqueeze(x, 2)?, &unsqueeze(w, 2)?, bias, o)?;
    squeeze(&y, 2)
}
