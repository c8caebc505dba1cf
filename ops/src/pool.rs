//! Pooling over `[N, C, H, W]` images, with `torch.nn.functional` semantics and
//! options: [`max_pool2d`](mod@max_pool2d) and [`avg_pool2d`](mod@avg_pool2d)
//! (registered ops: `im2col` and a max or a mean over each window, backwards
//! written with recorded ops), and the adaptive pools (compositions).

use crate::conv::{Geometry, check_counts, geometry, unfold};
use crate::{broadcast_to, col2im, div, mul, mul_scalar, narrow, reshape};
use autograd_core::cases;
use autograd_core::{
    BinaryOp, CheckCase, DType, Error, ReduceOp, Result, Shape, Tensor, UnaryOp, compute,
};
use autograd_macros::differentiable;

/// The options of [`max_pool2d`](mod@max_pool2d), as
/// `torch.nn.functional.max_pool2d`'s arguments (all `(height, width)` pairs).
/// The kernel has no default: start from [`MaxPool2dOptions::new`], which gives
/// PyTorch's defaults for the rest.
///
/// ```
/// use autograd_ops::MaxPool2dOptions;
/// let o = MaxPool2dOptions { padding: (1, 1), ..MaxPool2dOptions::new((3, 3)) };
/// assert_eq!(o.stride, None); // the kernel's
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxPool2dOptions {
    /// Window size, each at least 1.
    pub kernel: (usize, usize),
    /// Step between windows, each at least 1; `None` (the default) is the kernel.
    pub stride: Option<(usize, usize)>,
    /// `-inf` added on each side, at most half the kernel (default 0).
    pub padding: (usize, usize),
    /// Step between the window's taps, each at least 1 (default 1).
    pub dilation: (usize, usize),
    /// Round the window count up (PyTorch's rule: the last window must start
    /// inside the input or its left padding). Default false: round down.
    pub ceil_mode: bool,
}

impl MaxPool2dOptions {
    /// `kernel`, and PyTorch's defaults for the rest: stride the kernel, no
    /// padding, no dilation, no `ceil_mode`.
    pub fn new(kernel: (usize, usize)) -> Self {
        MaxPool2dOptions {
            kernel,
            stride: None,
            padding: (0, 0),
            dilation: (1, 1),
            ceil_mode: false,
        }
    }

    /// These options with `stride` set.
    pub fn stride(self, stride: (usize, usize)) -> Self {
        MaxPool2dOptions {
            stride: Some(stride),
            ..self
        }
    }

    /// These options with `padding` set.
    pub fn padding(self, padding: (usize, usize)) -> Self {
        MaxPool2dOptions { padding, ..self }
    }

    /// These options with `dilation` set.
    pub fn dilation(self, dilation: (usize, usize)) -> Self {
        MaxPool2dOptions { dilation, ..self }
    }

    /// These options with `ceil_mode` set.
    pub fn ceil_mode(self, ceil_mode: bool) -> Self {
        MaxPool2dOptions { ceil_mode, ..self }
    }
}

/// The options of [`avg_pool2d`](mod@avg_pool2d), as
/// `torch.nn.functional.avg_pool2d`'s arguments (all `(height, width)` pairs).
/// Start from [`AvgPool2dOptions::new`], which gives PyTorch's defaults.
///
/// ```
/// use autograd_ops::AvgPool2dOptions;
/// let o = AvgPool2dOptions { count_include_pad: false, ..AvgPool2dOptions::new((2, 2)) };
/// assert_eq!(o.divisor_override, None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AvgPool2dOptions {
    /// Window size, each at least 1.
    pub kernel: (usize, usize),
    /// Step between windows, each at least 1; `None` (the default) is the kernel.
    pub stride: Option<(usize, usize)>,
    /// Zeros added on each side, at most half the kernel (default 0).
    pub padding: (usize, usize),
    /// Round the window count up, as [`MaxPool2dOptions::ceil_mode`] (default false).
    pub ceil_mode: bool,
    /// Count the padding's zeros in each window's divisor (default true). Either
    /// way a window's part past the padding (`ceil_mode`) is not counted.
    pub count_include_pad: bool,
    /// Divide every window's sum by this instead (at least 1; default `None`).
    pub divisor_override: Option<usize>,
}

impl AvgPool2dOptions {
    /// `kernel`, and PyTorch's defaults for the rest: stride the kernel, no
    /// padding, no `ceil_mode`, padding counted, no divisor override.
    pub fn new(kernel: (usize, usize)) -> Self {
        AvgPool2dOptions {
            kernel,
            stride: None,
            padding: (0, 0),
            ceil_mode: false,
            count_include_pad: true,
            divisor_override: None,
        }
    }

    /// These options with `stride` set.
    pub fn stride(self, stride: (usize, usize)) -> Self {
        AvgPool2dOptions {
            stride: Some(stride),
            ..self
        }
    }

    /// These options with `padding` set.
    pub fn padding(self, padding: (usize, usize)) -> Self {
        AvgPool2dOptions { padding, ..self }
    }

    /// These options with `ceil_mode` set.
    pub fn ceil_mode(self, ceil_mode: bool) -> Self {
        AvgPool2dOptions { ceil_mode, ..self }
    }

    /// These options with `count_include_pad` set.
    pub fn count_include_pad(self, count_include_pad: bool) -> Self {
        AvgPool2dOptions {
            count_include_pad,
            ..self
        }
    }

    /// These options with `divisor_override` set.
    pub fn divisor_override(self, divisor_override: usize) -> Self {
        AvgPool2dOptions {
            divisor_override: Some(divisor_override),
            ..self
        }
    }
}

/// The geometry of a pool: as `im2col`'s (with `ceil_mode`), and padding at most
/// half the kernel (as in PyTorch), so that every window holds a pixel of the
/// input.
fn pool_geometry(
    op: &'static str,
    x: &[usize],
    kernel: (usize, usize),
    stride: Option<(usize, usize)>,
    padding: (usize, usize),
    dilation: (usize, usize),
    ceil_mode: bool,
) -> Result<Geometry> {
    let stride = stride.unwrap_or(kernel);
    let g = geometry(op, x, kernel, stride, padding, dilation, ceil_mode)?;
    if padding.0 > kernel.0 / 2 || padding.1 > kernel.1 / 2 {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "padding {padding:?} is more than half the kernel {kernel:?} (input {}); a \
                 window would hold padding only. Use padding at most {:?}",
                Shape::from(x),
                (kernel.0 / 2, kernel.1 / 2)
            ),
        });
    }
    check_counts(op, &g)?;
    Ok(g)
}

/// The columns of a pool as `[N, C, kh·kw, L]` (unrecorded), `pad` outside.
fn pool_windows(op: &'static str, x: &Tensor, g: &Geometry, pad: f64) -> Result<Tensor> {
    let cols = unfold(op, x, g, pad)?;
    compute::reshape(&cols, [g.n, g.c, g.window(), g.windows()])
}

/// The gradient of a pool, `[N, C, kh·kw, L]` per window position, folded back
/// into an image (recorded). With `ceil_mode` the last windows reach past the
/// padding, where `col2im` (which counts windows as `im2col` does, rounding down)
/// has none: the columns are folded into an image just large enough to hold them,
/// and its part past the input (what those windows read there) dropped.
fn pool_fold(d: &Tensor, g: &Geometry) -> Result<Tensor> {
    // The image size whose padded extent the last window just fills, if larger.
    let reach = |o: usize, s: usize, k: usize, dil: usize, p: usize, size: usize| {
        ((o - 1) * s + dil * (k - 1) + 1)
            .saturating_sub(2 * p)
            .max(size)
    };
    let (h, w) = (
        reach(g.oh, g.s.0, g.k.0, g.d.0, g.p.0, g.h),
        reach(g.ow, g.s.1, g.k.1, g.d.1, g.p.1, g.w),
    );
    let image = col2im(&reshape(d, g.cols_shape())?, (h, w), g.k, g.s, g.p, g.d)?;
    let image = if h > g.h {
        narrow(&image, 2, 0, g.h)?
    } else {
        image
    };
    if w > g.w {
        narrow(&image, 3, 0, g.w)
    } else {
        Ok(image)
    }
}

/// Where each window of a max pool sends its gradient, as PyTorch's kernels choose
/// the index they return: they scan the window in row-major order (`kh`, then `kw`)
/// from its first pixel inside the image, keeping `val` where `val > max ||
/// isnan(val)`. So the whole gradient goes to the first element equal to the max,
/// or, where the max is NaN, to the last NaN; never to the padding. `cols` is
/// `[N, C, K, L]` (padding `-inf`), `m` the max `[N, C, 1, L]`; the result is a
/// constant of 0 and 1 of `cols`' shape, one 1 per window.
fn max_pool_mask(x: &Tensor, g: &Geometry, cols: &Tensor, m: &Tensor) -> Result<Tensor> {
    let k = g.window();
    let on = |t: &Tensor| compute::to_device(t, x.device());
    let mut hit = compute::binary(cols, m, BinaryOp::Eq)?;
    let (th, tw) = (
        (g.oh - 1) * g.s.0 + (g.k.0 - 1) * g.d.0 + 1,
        (g.ow - 1) * g.s.1 + (g.k.1 - 1) * g.d.1 + 1,
    );
    if g.p != (0, 0) || th > g.h || tw > g.w {
        // Not on the padding (a tie where the window's input is all -inf), nor past
        // it (`ceil_mode`): 1 at the positions of the windows inside the image,
        // [1, 1, K, L], from one channel of ones.
        let one = Geometry { n: 1, c: 1, ..*g };
        let ones = on(&Tensor::ones([1, 1, g.h, g.w], x.dtype())?)?;
        let inside = pool_windows("max_pool2d", &ones, &one, 0.0)?;
        hit = compute::binary(&hit, &inside, BinaryOp::Mul)?;
    }
    // Each candidate's score, distinct within a window: K - k for the k-th position
    // equal to the max (the first scores highest), K + 1 + k for the k-th NaN (the
    // last scores highest, above every other), 0 elsewhere.
    let pos = on(&compute::reshape(
        &Tensor::arange(k, x.dtype())?,
        [1, 1, k, 1],
    )?)?;
    let down = compute::unary(
        &compute::unary(&pos, UnaryOp::Neg)?,
        UnaryOp::AddScalar(k as f64),
    )?;
    let up = compute::unary(&pos, UnaryOp::AddScalar(k as f64 + 1.0))?;
    let nan = crate::compare::complement(&compute::binary(cols, cols, BinaryOp::Eq)?)?;
    let score = compute::binary(
        &compute::binary(&hit, &down, BinaryOp::Mul)?,
        &compute::binary(&nan, &up, BinaryOp::Mul)?,
        BinaryOp::Add,
    )?;
    // Every window has a candidate (it holds a pixel, and the max is one of its
    // values or NaN), so its best score is positive and held by one position.
    let best = compute::reduce(&score, ReduceOp::Max, &[2], true)?;
    compute::binary(&score, &best, BinaryOp::Eq)
}

/// The largest value of each window of `x` `[N, C, H, W]` (as
/// `torch.nn.functional.max_pool2d(x, kernel, stride, padding, dilation,
/// ceil_mode)`): `[N, C, oh, ow]`, the padding read as `-inf` (never the max),
/// padding at most half the kernel. NaN wins, as in [`max`](mod@crate::max).
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::{MaxPool2dOptions, max_pool2d};
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 5.0, 2.0, 3.0, 4.0, 0.0], [1, 1, 2, 3])?;
/// let o = MaxPool2dOptions { ceil_mode: true, ..MaxPool2dOptions::new((2, 2)) };
/// assert_eq!(max_pool2d(&x, o)?.to_vec::<f32>()?, [5.0, 2.0]);
/// # Ok(())
/// # }
/// ```
///
/// Ties: as PyTorch's, the gradient of a window goes whole to its first element
/// equal to the max, in row-major order over the window (and where the max is NaN,
/// to the window's last NaN); the padding never gets it. A pixel in several windows
/// gets the sum of what they send it.
#[differentiable(crate = ::autograd_core, method)]
pub mod max_pool2d {
    use super::*;

    /// The windows.
    #[derive(Clone, Copy, Debug)]
    pub struct MaxPool2d {
        /// Kernel, stride, padding, dilation, `ceil_mode`.
        pub options: MaxPool2dOptions,
    }

    impl MaxPool2d {
        fn geometry(&self, x: &[usize]) -> Result<Geometry> {
            let o = &self.options;
            pool_geometry(
                "max_pool2d",
                x,
                o.kernel,
                o.stride,
                o.padding,
                o.dilation,
                o.ceil_mode,
            )
        }
    }

    /// `im2col` with `-inf` padding and a max over each window. An error naming the
    /// op when `x` is not `[N, C, H, W]`, `H` or `W` is 0, a kernel size, stride or
    /// dilation is 0, the padding is more than half the kernel, or the kernel does
    /// not fit.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let g = self.geometry(x.dims())?;
        let cols = pool_windows("max_pool2d", x, &g, f64::NEG_INFINITY)?;
        let m = compute::reduce(&cols, ReduceOp::Max, &[2], false)?;
        compute::reshape(&m, [g.n, g.c, g.oh, g.ow])
    }

    /// `grad` to the element of each window PyTorch's kernels pick (the first max;
    /// a constant mask found from `x` and the saved output), folded back with
    /// [`col2im`](mod@col2im): recorded, linear in `grad`.
    pub fn backward(&self, grad: &Tensor, x: &Tensor, output: &Tensor) -> Result<Tensor> {
        let g = self.geometry(x.dims())?;
        let cols = pool_windows("max_pool2d", x, &g, f64::NEG_INFINITY)?;
        let m = compute::reshape(output, [g.n, g.c, 1, g.windows()])?;
        let picked = max_pool_mask(x, &g, &cols, &m)?;
        let gr = reshape(grad, Shape::from([g.n, g.c, 1, g.windows()]))?;
        pool_fold(&mul(&gr, &picked)?, &g)
    }

    /// Gradcheck inputs (no ties): overlapping `(3, 2)` windows with padding,
    /// `(2, 2)` windows with stride 2, and dilated windows with `ceil_mode`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            cases::unary(
                "max_pool2d [2,2,5,4] k(3,2) s(1,2) p(1,1)",
                cases::uniform(69, &[2, 2, 5, 4], -1.0, 1.0),
                |x| {
                    let o = MaxPool2dOptions {
                        stride: Some((1, 2)),
                        padding: (1, 1),
                        ..MaxPool2dOptions::new((3, 2))
                    };
                    max_pool2d(x, o)
                },
            ),
            cases::unary(
                "max_pool2d [1,3,4,4] k(2,2) s(2,2)",
                cases::uniform(70, &[1, 3, 4, 4], -1.0, 1.0),
                |x| max_pool2d(x, MaxPool2dOptions::new((2, 2))),
            ),
            cases::unary(
                "max_pool2d [1,2,6,7] k(2,3) s(2,2) p(1,1) d(2,1) ceil",
                cases::uniform(73, &[1, 2, 6, 7], -1.0, 1.0),
                |x| {
                    let o = MaxPool2dOptions {
                        stride: Some((2, 2)),
                        padding: (1, 1),
                        dilation: (2, 1),
                        ceil_mode: true,
                        ..MaxPool2dOptions::new((2, 3))
                    };
                    max_pool2d(x, o)
                },
            ),
        ]
    }
}

/// [`max_pool2d`](mod@max_pool2d) and the positions of the maxima (as
/// `torch.nn.functional.max_pool2d(.., return_indices=True)`): the `i64` index
/// `h·W + w` within each `[H, W]` plane of the element each window's gradient
/// goes to (its first maximum; where the max is NaN, its last NaN), a constant of
/// the output's shape on `x`'s device.
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::{MaxPool2dOptions, max_pool2d_with_indices};
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 5.0, 2.0, 3.0, 4.0, 0.0], [1, 1, 2, 3])?;
/// let (y, i) = max_pool2d_with_indices(&x, MaxPool2dOptions::new((2, 2)).ceil_mode(true))?;
/// assert_eq!(y.to_vec::<f32>()?, [5.0, 2.0]);
/// assert_eq!(i.to_vec::<i64>()?, [1, 2]);
/// # Ok(())
/// # }
/// ```
pub fn max_pool2d_with_indices(x: &Tensor, options: MaxPool2dOptions) -> Result<(Tensor, Tensor)> {
    let y = max_pool2d(x, options)?;
    let o = &options;
    let g = pool_geometry(
        "max_pool2d",
        x.dims(),
        o.kernel,
        o.stride,
        o.padding,
        o.dilation,
        o.ceil_mode,
    )?;
    let cols = pool_windows("max_pool2d", x, &g, f64::NEG_INFINITY)?;
    let m = compute::reshape(&y, [g.n, g.c, 1, g.windows()])?;
    let picked = max_pool_mask(x, &g, &cols, &m)?;
    // The one position each window picked (K of them), on the host.
    let k = crate::argmax(&picked, 2, false)?;
    let k = compute::to_device(&k, autograd_core::Device::Cpu)?.to_vec::<i64>()?;
    let at: Vec<i64> = k
        .iter()
        .enumerate()
        .map(|(e, &k)| {
            let (l, k) = (e % g.windows(), k as usize);
            let (oy, ox, ki, kj) = (l / g.ow, l % g.ow, k / g.k.1, k % g.k.1);
            // The tap along one axis; in a window of padding only (possible with
            // dilation: every tap picked, the first taken), PyTorch's index: the
            // first tap at or past 0.
            let tap = |o: usize, s: usize, k: usize, d: usize, p: usize, size: usize| {
                let at = (o * s + k * d) as i64 - p as i64;
                if (0..size as i64).contains(&at) {
                    at
                } else {
                    let start = (o * s) as i64 - p as i64;
                    start + (((-start).max(0) as usize).div_ceil(d) * d) as i64
                }
            };
            let iy = tap(oy, g.s.0, ki, g.d.0, g.p.0, g.h);
            let ix = tap(ox, g.s.1, kj, g.d.1, g.p.1, g.w);
            iy * g.w as i64 + ix
        })
        .collect();
    let indices = Tensor::from_slice(&at, [g.n, g.c, g.oh, g.ow])?;
    Ok((y, compute::to_device(&indices, x.device())?))
}

/// What each window's sum is divided by, following PyTorch's avg_pool2d: the
/// override, or the window's size clipped to the padded input
/// (`count_include_pad`), or the count of its pixels inside the input: the first
/// window's, and `None` when every window has that one (then the pool multiplies
/// by its reciprocal, as it always did), else every window's, in window order.
fn avg_divisors(g: &Geometry, o: &AvgPool2dOptions) -> (f64, Option<Vec<f64>>) {
    if let Some(d) = o.divisor_override {
        return (d as f64, None);
    }
    // Along one axis: (the window clipped to the padded input, clipped to the input).
    let axis = |i: usize, s: usize, k: usize, p: usize, size: usize| {
        let start = (i * s) as isize - p as isize;
        let end = (start + k as isize).min((size + p) as isize);
        let (a, b) = (start.max(0), end.min(size as isize));
        ((end - start) as f64, (b - a).max(0) as f64)
    };
    let mut divisors = Vec::with_capacity(g.windows());
    for oy in 0..g.oh {
        let (ph, ih) = axis(oy, g.s.0, g.k.0, g.p.0, g.h);
        for ox in 0..g.ow {
            let (pw, iw) = axis(ox, g.s.1, g.k.1, g.p.1, g.w);
            divisors.push(if o.count_include_pad {
                ph * pw
            } else {
                ih * iw
            });
        }
    }
    let first = divisors[0];
    if divisors.iter().all(|&d| d == first) {
        (first, None)
    } else {
        (first, Some(divisors))
    }
}

/// The divisors as a constant `[1, 1, 1, L]` on `like`'s device, in its dtype
/// (integers: exact up to 256 in bf16, 2048 in f16, a window of 16 x 16 or
/// 45 x 45 pixels).
fn divisor_tensor(v: &[f64], like: &Tensor) -> Result<Tensor> {
    let t = Tensor::from_slice(v, [1, 1, 1, v.len()])?;
    let t = if like.dtype() == DType::F64 {
        t
    } else {
        compute::cast(&t, like.dtype())?
    };
    compute::to_device(&t, like.device())
}

/// The mean of each window of `x` `[N, C, H, W]` (as
/// `torch.nn.functional.avg_pool2d(x, kernel, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)`): `[N, C, oh, ow]`. With PyTorch's
/// defaults ([`AvgPool2dOptions::new`]) every window is divided by `kh·kw`, the
/// padding's zeros counted. Padding at most half the kernel.
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::{AvgPool2dOptions, avg_pool2d};
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], [1, 1, 2, 2])?;
/// let o = AvgPool2dOptions { stride: Some((1, 1)), padding: (1, 1), count_include_pad: false,
///     ..AvgPool2dOptions::new((2, 2)) };
/// assert_eq!(avg_pool2d(&x, o)?.to_vec::<f32>()?, [1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]);
/// # Ok(())
/// # }
/// ```
#[differentiable(crate = ::autograd_core, method)]
pub mod avg_pool2d {
    use super::*;

    /// The windows and their divisors.
    #[derive(Clone, Copy, Debug)]
    pub struct AvgPool2d {
        /// Kernel, stride, padding, `ceil_mode`, `count_include_pad`,
        /// `divisor_override`.
        pub options: AvgPool2dOptions,
    }

    impl AvgPool2d {
        fn geometry(&self, x: &[usize]) -> Result<Geometry> {
            let o = &self.options;
            let g = pool_geometry(
                "avg_pool2d",
                x,
                o.kernel,
                o.stride,
                o.padding,
                (1, 1),
                o.ceil_mode,
            )?;
            if o.divisor_override == Some(0) {
                return Err(Error::InvalidArgument {
                    op: "avg_pool2d",
                    msg: format!(
                        "divisor_override is 0 (input {}); it must be at least 1, or None to \
                         divide by the window's size",
                        Shape::from(x)
                    ),
                });
            }
            Ok(g)
        }
    }

    /// `im2col` and a sum over each window, divided by its divisor. Errors as
    /// [`max_pool2d`](mod@max_pool2d), and a `divisor_override` of 0.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let g = self.geometry(x.dims())?;
        let cols = pool_windows("avg_pool2d", x, &g, 0.0)?;
        let s = compute::reduce(&cols, ReduceOp::Sum, &[2], true)?;
        let m = match avg_divisors(&g, &self.options) {
            (d, None) => compute::unary(&s, UnaryOp::MulScalar(1.0 / d))?,
            (_, Some(v)) => compute::binary(&s, &divisor_tensor(&v, x)?, BinaryOp::Div)?,
        };
        compute::reshape(&m, [g.n, g.c, g.oh, g.ow])
    }

    /// `grad` divided by each window's divisor to every position of the window,
    /// folded back with [`col2im`](mod@col2im): recorded, linear.
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let g = self.geometry(x_shape.dims())?;
        let gr = reshape(grad, Shape::from([g.n, g.c, 1, g.windows()]))?;
        let scaled = match avg_divisors(&g, &self.options) {
            (d, None) => mul_scalar(&gr, 1.0 / d)?,
            (_, Some(v)) => div(&gr, &divisor_tensor(&v, grad)?)?,
        };
        let spread = broadcast_to(&scaled, Shape::from([g.n, g.c, g.window(), g.windows()]))?;
        pool_fold(&spread, &g)
    }

    /// Gradcheck inputs: overlapping `(3, 3)` windows with padding, `(2, 3)`
    /// windows with stride `(2, 1)`, and `ceil_mode` without the padding counted.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            cases::unary(
                "avg_pool2d [2,2,5,4] k(3,3) s(2,1) p(1,1)",
                cases::uniform(71, &[2, 2, 5, 4], -1.0, 1.0),
                |x| {
                    let o = AvgPool2dOptions {
                        stride: Some((2, 1)),
                        padding: (1, 1),
                        ..AvgPool2dOptions::new((3, 3))
                    };
                    avg_pool2d(x, o)
                },
            ),
            cases::unary(
                "avg_pool2d [1,2,4,6] k(2,3) s(2,1)",
                cases::uniform(72, &[1, 2, 4, 6], -1.0, 1.0),
                |x| {
                    let o = AvgPool2dOptions {
                        stride: Some((2, 1)),
                        ..AvgPool2dOptions::new((2, 3))
                    };
                    avg_pool2d(x, o)
                },
            ),
            cases::unary(
                "avg_pool2d [1,2,5,6] k(3,2) s(2,2) p(1,1) ceil no-pad-count",
                cases::uniform(74, &[1, 2, 5, 6], -1.0, 1.0),
                |x| {
                    let o = AvgPool2dOptions {
                        stride: Some((2, 2)),
                        padding: (1, 1),
                        ceil_mode: true,
                        count_include_pad: false,
                        ..AvgPool2dOptions::new((3, 2))
                    };
                    avg_pool2d(x, o)
                },
            ),
        ]
    }
}

/// PyTorch's adaptive windows along an axis of `size` cut into `out`: window `i`
/// is `⌊i·size/out⌋ .. ⌈(i+1)·size/out⌉`.
fn adaptive_windows(size: usize, out: usize) -> Vec<(usize, usize)> {
    (0..out)
        .map(|i| (i * size / out, ((i + 1) * size).div_ceil(out)))
        .collect()
}

/// Checks an adaptive pool's input `[N, C, H, W]` and output size.
fn adaptive_check(op: &'static str, x: &Tensor, out: (usize, usize)) -> Result<[usize; 4]> {
    let &[n, c, h, w] = x.dims() else {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input has shape {} (rank {}); it must be [N, C, H, W] (rank 4)",
                x.shape(),
                x.dims().len()
            ),
        });
    };
    if h == 0 || w == 0 || out.0 == 0 || out.1 == 0 {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the input {} and the output size {out:?} must have no zero spatial size",
                x.shape()
            ),
        });
    }
    let limit = u32::MAX as usize;
    let count = [n, c, out.0, out.1]
        .into_iter()
        .try_fold(1usize, |a, b| a.checked_mul(b));
    if out.0 > limit || out.1 > limit || count.is_none() {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "the output size {out:?} is too large (at most {limit} per axis and usize::MAX \
                 elements; input {})",
                x.shape()
            ),
        });
    }
    Ok([n, c, h, w])
}

/// The mean over PyTorch's adaptive windows of `x` `[N, C, H, W]` (as
/// `torch.nn.functional.adaptive_avg_pool2d(x, output_size)`): `[N, C, oh, ow]`,
/// window `(i, j)` rows `⌊i·H/oh⌋ .. ⌈(i+1)·H/oh⌉` and the same for columns.
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::adaptive_avg_pool2d;
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 1, 2, 3])?;
/// let y = adaptive_avg_pool2d(&x, (1, 2))?; // columns 0..2 and 1..3
/// assert_eq!(y.to_vec::<f64>()?, [3.0, 4.0]);
/// # Ok(())
/// # }
/// ```
///
/// The windows are rectangles, so the mean is a mean over rows then over columns:
/// two `matmul`s with constant averaging matrices (in `x`'s dtype: a half input
/// reads each `1/len` rounded to it). Recorded, differentiable to any order.
pub fn adaptive_avg_pool2d(x: &Tensor, output_size: (usize, usize)) -> Result<Tensor> {
    const OP: &str = "adaptive_avg_pool2d";
    let [_, _, h, w] = adaptive_check(OP, x, output_size)?;
    // averaging[i, j] = 1 / len(window i) for j in window i: [out, size].
    let averaging = |size: usize, out: usize| -> Result<Tensor> {
        let mut m = vec![0.0f64; out * size];
        for (i, (a, b)) in adaptive_windows(size, out).into_iter().enumerate() {
            m[i * size + a..i * size + b].fill(1.0 / (b - a) as f64);
        }
        let t = Tensor::from_slice(&m, [out, size])?;
        let t = if x.dtype() == DType::F64 {
            t
        } else {
            compute::cast(&t, x.dtype())?
        };
        compute::to_device(&t, x.device())
    };
    let rows = averaging(h, output_size.0)?;
    let cols = crate::permute(&averaging(w, output_size.1)?, vec![1, 0])?;
    crate::matmul(&crate::matmul(&rows, x)?, &cols)
}

/// The largest value over PyTorch's adaptive windows of `x` `[N, C, H, W]` (as
/// `torch.nn.functional.adaptive_max_pool2d(x, output_size, return_indices)`):
/// `[N, C, oh, ow]`, windows as [`adaptive_avg_pool2d`]'s, and with
/// `return_indices` the `i64` positions of the maxima within each `[H, W]` plane
/// (`h·W + w`, PyTorch's), a constant.
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::adaptive_max_pool2d;
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::from_slice(&[1.0f64, 6.0, 3.0, 4.0, 5.0, 2.0], [1, 1, 2, 3])?;
/// let (y, i) = adaptive_max_pool2d(&x, (1, 2), true)?;
/// assert_eq!(y.to_vec::<f64>()?, [6.0, 6.0]);
/// assert_eq!(i.unwrap().to_vec::<i64>()?, [1, 1]);
/// # Ok(())
/// # }
/// ```
///
/// The windows are rectangles, so the max is a max over each row's columns, then
/// over the rows: each an `index_select` of the windows (a short window padded by
/// repeating its last position), an [`argmax`](crate::argmax) and a
/// [`gather`](mod@crate::gather). The gradient of a window goes whole to its
/// first maximum in row-major order (PyTorch's choice; among NaNs, the first).
/// Recorded, differentiable to any order.
pub fn adaptive_max_pool2d(
    x: &Tensor,
    output_size: (usize, usize),
    return_indices: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    const OP: &str = "adaptive_max_pool2d";
    let [n, c, h, w] = adaptive_check(OP, x, output_size)?;
    let (oh, ow) = output_size;
    // The max along `axis` (2 or 3) of `t`, size `size` cut into `out` windows:
    // the values, and the position each window's max came from.
    let stage = |t: &Tensor, axis: usize, size: usize, out: usize| -> Result<(Tensor, Vec<i64>)> {
        let windows = adaptive_windows(size, out);
        let len = windows.iter().map(|(a, b)| b - a).max().unwrap_or(1);
        let at: Vec<i64> = windows
            .iter()
            .flat_map(|&(a, b)| (0..len).map(move |k| (a + k).min(b - 1) as i64))
            .collect();
        let index = compute::to_device(&Tensor::from_slice(&at, [out * len])?, x.device())?;
        let picked = crate::index_select(t, &index, axis as isize)?;
        // [.., out·len, ..] -> [.., out, len, ..]: the windows on their own axis.
        let mut dims = picked.dims().to_vec();
        dims.splice(axis..=axis, [out, len]);
        let picked = reshape(&picked, Shape::from(dims))?;
        let best = crate::argmax(&picked, axis as isize + 1, true)?;
        let v = crate::squeeze(
            &crate::gather(&picked, &best, axis as isize + 1)?,
            axis as isize + 1,
        )?;
        // Each window's max position along the axis, in `v`'s layout.
        let b = compute::to_device(&best, autograd_core::Device::Cpu)?.to_vec::<i64>()?;
        let (inner, outer) = (
            v.dims()[axis + 1..].iter().product::<usize>(),
            v.dims()[axis],
        );
        let pos = b
            .iter()
            .enumerate()
            .map(|(e, &k)| at[(e / inner % outer) * len + k as usize])
            .collect();
        Ok((v, pos))
    };
    let (v1, cols) = stage(x, 3, w, ow)?; // [N, C, H, ow]
    let (v2, rows) = stage(&v1, 2, h, oh)?; // [N, C, oh, ow]
    let indices = return_indices
        .then(|| {
            // Window (i, j) of plane p: the row `rows` found, and the column found
            // in that row.
            let at: Vec<i64> = rows
                .iter()
                .enumerate()
                .map(|(e, &r)| {
                    let (p, j) = (e / (oh * ow), e % ow);
                    r * w as i64 + cols[(p * h + r as usize) * ow + j]
                })
                .collect();
            let t = Tensor::from_slice(&at, [n, c, oh, ow])?;
            compute::to_device(&t, x.device())
        })
        .transpose()?;
    Ok((v2, indices))
}
