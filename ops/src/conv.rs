//! Convolution and pooling over `[N, C, H, W]` images (NCHW), with
//! `torch.nn.functional` semantics.
//!
//! Everything is built on one pair of linear ops with their own kernels (a CPU
//! kernel and a CUDA program, `conv.cu`, through `autograd_core::raw`):
//! [`im2col`](mod@im2col) (torch's `unfold`: every window of the input as a column)
//! and [`col2im`](mod@col2im) (torch's `fold`: columns summed back into an image).
//! Each is the other's backward, so both are differentiable to any order.
//! [`conv2d`] is `im2col` and a matrix product (`gemm` on the CPU, cuBLAS on a
//! GPU); the pools (`pool.rs`) are `im2col` and a max or a mean over each window,
//! and the other convolutions (`conv_variants.rs`) are built from `conv2d`'s op
//! and `col2im`. Their backwards are written with recorded ops (`matmul`,
//! `col2im`, `im2col`, `mul`, ...), so gradients of gradients work.

use crate::{add, matmul, reshape, sum, transpose};
use autograd_core::raw::{self, CpuKernel, CudaKernel, CudaProgram, Float, LaunchConfig, Scalar};
use autograd_core::{CheckCase, Error, Result, Shape, Tensor, compute};
use autograd_core::{cases, parallel};
use autograd_macros::differentiable;

/// The CUDA program of `im2col` and `col2im`: entry points `conv_im2col_{f32,f64}`
/// and `conv_col2im_{f32,f64}` (compiled after `raw::CUDA_PRELUDE`).
pub const CONV_PROGRAM: CudaProgram = CudaProgram {
    name: "conv",
    source: include_str!("conv.cu"),
};

/// Threads per block of the CUDA kernels.
const BLOCK: u32 = 256;

/// The sizes of one sliding-window operation over `[n, c, h, w]`: kernel
/// `(kh, kw)`, stride, padding, dilation, and the output grid `(oh, ow)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Geometry {
    pub(crate) n: usize,
    pub(crate) c: usize,
    pub(crate) h: usize,
    pub(crate) w: usize,
    pub(crate) k: (usize, usize),
    pub(crate) s: (usize, usize),
    pub(crate) p: (usize, usize),
    pub(crate) d: (usize, usize),
    pub(crate) oh: usize,
    pub(crate) ow: usize,
}

impl Geometry {
    /// Positions per window, `kh * kw`.
    pub(crate) fn window(&self) -> usize {
        self.k.0 * self.k.1
    }

    /// Windows per image, `oh * ow`.
    pub(crate) fn windows(&self) -> usize {
        self.oh * self.ow
    }

    /// The shape of the columns: `[n, c * kh * kw, oh * ow]`.
    pub(crate) fn cols_shape(&self) -> Shape {
        Shape::from([self.n, self.c * self.window(), self.windows()])
    }

    /// The windows `lo..hi` of a line of the columns at kernel column `kj` that
    /// read inside the image (those before and after read the padding), and the
    /// image column window `lo` reads (meaningless when `lo == hi`):
    /// `(lo, hi, first)`. Window `ox` reads column `ox * s + kj * d - p`.
    fn inside(&self, kj: usize) -> (usize, usize, usize) {
        let (s, shift, p) = (self.s.1, kj * self.d.1, self.p.1);
        let lo = p.saturating_sub(shift).div_ceil(s).min(self.ow);
        let hi = (self.w + p)
            .saturating_sub(shift)
            .div_ceil(s)
            .clamp(lo, self.ow);
        (lo, hi, (lo * s + shift).saturating_sub(p))
    }

    /// The image shape `[n, c, h, w]`.
    fn image_shape(&self) -> Shape {
        Shape::from([self.n, self.c, self.h, self.w])
    }

    /// The CUDA kernels' scalars (see `conv.cu`).
    fn scalars(&self, pad: f64) -> [Scalar; 6] {
        let pair = |(a, b): (usize, usize)| Scalar::U64(((a as u64) << 32) | b as u64);
        [
            pair(self.k),
            pair(self.s),
            pair(self.p),
            pair(self.d),
            pair((self.oh, self.ow)),
            Scalar::F64(pad),
        ]
    }
}

/// Checks the arguments of a sliding-window op on an input of dims `x` and returns
/// its geometry; every error names `op`, the shapes and what to change. With
/// `ceil_mode`, the window count along an axis rounds up as PyTorch's pools do.
pub(crate) fn geometry(
    op: &'static str,
    x: &[usize],
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    ceil_mode: bool,
) -> Result<Geometry> {
    let shape = || Shape::from(x);
    let &[n, c, h, w] = x else {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input has shape {} (rank {}); it must be [N, C, H, W] (rank 4): a batch \
                 of images with channels first (unsqueeze a single image to [1, C, H, W])",
                shape(),
                x.len()
            ),
        });
    };
    let invalid = |msg: String| Err(Error::InvalidArgument { op, msg });
    for (name, (a, b)) in [
        ("kernel size", kernel),
        ("stride", stride),
        ("dilation", dilation),
    ] {
        if a == 0 || b == 0 {
            return invalid(format!(
                "{name} {:?} has a zero; every {name} must be at least 1 (input {})",
                (a, b),
                shape()
            ));
        }
    }
    let limit = u32::MAX as usize;
    for (name, (a, b)) in [
        ("kernel size", kernel),
        ("stride", stride),
        ("padding", padding),
        ("dilation", dilation),
    ] {
        if a > limit || b > limit {
            return invalid(format!(
                "{name} {:?} is too large (at most {limit} per axis; input {})",
                (a, b),
                shape()
            ));
        }
    }
    if h == 0 || w == 0 {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the input {} has an empty spatial axis (H = {h}, W = {w}); images must have \
                 at least one pixel",
                shape()
            ),
        });
    }
    // Windows along one axis; with `ceil_mode`, PyTorch's rule: the count rounded
    // up, but the last window must start inside the input or its left padding.
    let out = |size: usize, k: usize, s: usize, p: usize, d: usize| -> Option<usize> {
        let padded = size.checked_add(p.checked_mul(2)?)?;
        let span = d.checked_mul(k - 1)?.checked_add(1)?;
        if !ceil_mode {
            return (span <= padded).then(|| (padded - span) / s + 1);
        }
        let reach = padded.checked_add(s - 1)?;
        let o = (span <= reach).then(|| (reach - span) / s + 1)?;
        Some(if (o - 1) * s >= size + p { o - 1 } else { o })
    };
    match (
        out(h, kernel.0, stride.0, padding.0, dilation.0),
        out(w, kernel.1, stride.1, padding.1, dilation.1),
    ) {
        (Some(oh), Some(ow)) if oh <= limit && ow <= limit => Ok(Geometry {
            n,
            c,
            h,
            w,
            k: kernel,
            s: stride,
            p: padding,
            d: dilation,
            oh,
            ow,
        }),
        _ => Err(Error::Shape {
            op,
            msg: format!(
                "kernel {kernel:?} with dilation {dilation:?} spans {:?} pixels, more than the \
                 input {} padded by {padding:?} holds ({:?}); use a smaller kernel or dilation, \
                 or more padding",
                (
                    dilation.0.saturating_mul(kernel.0 - 1).saturating_add(1),
                    dilation.1.saturating_mul(kernel.1 - 1).saturating_add(1)
                ),
                shape(),
                (
                    h.saturating_add(padding.0.saturating_mul(2)),
                    w.saturating_add(padding.1.saturating_mul(2))
                ),
            ),
        }),
    }
}

/// The element counts of a geometry's columns and image, checked for overflow.
pub(crate) fn check_counts(op: &'static str, g: &Geometry) -> Result<()> {
    let cols =
        g.c.checked_mul(g.window())
            .and_then(|r| r.checked_mul(g.windows()))
            .and_then(|r| r.checked_mul(g.n));
    if cols.is_none() {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the columns of input {} under kernel {:?} would hold more than usize::MAX \
                 elements; use a smaller batch, kernel or image",
                g.image_shape(),
                g.k
            ),
        });
    }
    Ok(())
}

/// A kernel error: the kernel was called with inputs it does not take.
fn kernel_error(op: &'static str, msg: String) -> Error {
    Error::Shape { op, msg }
}

/// The CPU kernel of `im2col`: `x [n, c, h, w]` (any view) to columns, `pad` read
/// outside the input.
struct Unfold {
    op: &'static str,
    g: Geometry,
    pad: f64,
}

impl CpuKernel for Unfold {
    fn run<T: Float>(&self, inputs: &[raw::View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        let g = &self.g;
        let ([x], [out]) = (inputs, outputs) else {
            return Err(kernel_error(
                self.op,
                "the im2col kernel takes 1 input and 1 output".into(),
            ));
        };
        if x.dims() != [g.n, g.c, g.h, g.w] || out.len() != g.cols_shape().numel() {
            return Err(kernel_error(
                self.op,
                format!(
                    "the im2col kernel was given an input {} for geometry {g:?}",
                    x.shape()
                ),
            ));
        }
        let (data, st, off) = (x.data(), x.strides(), x.offset());
        let pad = T::from_f64(self.pad);
        // Rows of the columns, one per (image, channel, kernel offset): each holds
        // the oh * ow windows' values at that offset. Pieces of whole rows, each
        // row computed as the serial loop computes it.
        let row = g.windows();
        let (kh, kw) = g.k;
        parallel::for_each_piece_mut(out, rows_per_piece(row) * row, 2 * out.len(), |i, piece| {
            let first = i * rows_per_piece(row);
            for (r, line) in piece.chunks_mut(row).enumerate() {
                let r = first + r;
                let (kj, ki) = (r % kw, r / kw % kh);
                let (c, n) = (r / (kw * kh) % g.c, r / (kw * kh * g.c));
                let base = off + n * st[0] + c * st[1];
                // The windows `lo..hi` of a line read inside the image; those
                // before and after read the padding.
                let (lo, hi, first) = g.inside(kj);
                let s1 = g.s.1;
                for (oy, out) in line.chunks_mut(g.ow).enumerate() {
                    let iy = (oy * g.s.0 + ki * g.d.0).wrapping_sub(g.p.0);
                    // Below 0 wraps to a huge value: outside too.
                    if iy >= g.h {
                        out.fill(pad);
                        continue;
                    }
                    out[..lo].fill(pad);
                    out[hi..].fill(pad);
                    if lo == hi {
                        continue;
                    }
                    let at = base + iy * st[2];
                    if s1 == 1 && st[3] == 1 {
                        out[lo..hi].copy_from_slice(&data[at + first..at + first + hi - lo]);
                    } else {
                        for (j, o) in out[lo..hi].iter_mut().enumerate() {
                            *o = data[at + (first + j * s1) * st[3]];
                        }
                    }
                }
            }
        });
        Ok(())
    }
}

/// Rows of `row` elements per piece of a parallel kernel: about [`PIECE`] elements,
/// at least one row.
fn rows_per_piece(row: usize) -> usize {
    (parallel::piece_len(PIECE, 1) / row.max(1)).max(1)
}

/// Elements per piece of the parallel CPU kernels: enough that handing a piece to a
/// thread costs little beside it, few enough that a mid-sized job has pieces for
/// every thread.
const PIECE: usize = 1 << 13;

/// The CPU kernel of `col2im`: columns `[n, c*kh*kw, oh*ow]` (any view) summed into
/// an image, each output element gathering the columns that read it (`ki`, then
/// `kj`, ascending: the CUDA kernel's order, so both give the same sums).
struct Fold {
    op: &'static str,
    g: Geometry,
}

impl CpuKernel for Fold {
    fn run<T: Float>(&self, inputs: &[raw::View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        let g = &self.g;
        let ([cols], [out]) = (inputs, outputs) else {
            return Err(kernel_error(
                self.op,
                "the col2im kernel takes 1 input and 1 output".into(),
            ));
        };
        if cols.dims() != g.cols_shape().dims() || out.len() != g.image_shape().numel() {
            return Err(kernel_error(
                self.op,
                format!(
                    "the col2im kernel was given columns {} for geometry {g:?}",
                    cols.shape()
                ),
            ));
        }
        let (data, st, off) = (cols.data(), cols.strides(), cols.offset());
        // The window position (output index along one axis) that reads input
        // position `i` at kernel offset `k`, if any.
        let source = |i: usize, k: usize, s: usize, p: usize, d: usize, o: usize| {
            let t = (i + p).checked_sub(k * d)?;
            (t % s == 0 && t / s < o).then_some(t / s)
        };
        // Each output element sums its own sources, so pieces of whole image rows
        // (one per image, channel and y) compute each element as the serial loop
        // would; the work counts the columns read. Within a row, the loops run
        // over `ki`, then `kj`, then the windows `ox` inside the image (each of
        // which adds to its own `ix` at that offset), adding into the row: every
        // element still gets its terms in (`ki`, `kj`) order, from 0.
        let row = g.w;
        let work = cols.dims().iter().product::<usize>() + out.len();
        parallel::for_each_piece_mut(out, rows_per_piece(row) * row, work, |i, piece| {
            let first = i * rows_per_piece(row);
            for (r, line) in piece.chunks_mut(row).enumerate() {
                let r = first + r;
                let (iy, c, n) = (r % g.h, r / g.h % g.c, r / (g.h * g.c));
                line.fill(T::ZERO);
                for ki in 0..g.k.0 {
                    let Some(oy) = source(iy, ki, g.s.0, g.p.0, g.d.0, g.oh) else {
                        continue;
                    };
                    for kj in 0..g.k.1 {
                        let row = (c * g.k.0 + ki) * g.k.1 + kj;
                        let base = off + n * st[0] + row * st[1] + oy * g.ow * st[2];
                        // The windows `lo..hi` read inside the image (as im2col
                        // finds them); each adds to its own `ix`.
                        let (lo, hi, first) = g.inside(kj);
                        let s1 = g.s.1;
                        if lo == hi {
                            continue;
                        }
                        let src = base + lo * st[2];
                        if s1 == 1 && st[2] == 1 {
                            let len = hi - lo;
                            let to = &mut line[first..first + len];
                            for (o, &v) in to.iter_mut().zip(&data[src..src + len]) {
                                *o += v;
                            }
                        } else {
                            for j in 0..hi - lo {
                                line[first + j * s1] += data[src + j * st[2]];
                            }
                        }
                    }
                }
            }
        });
        Ok(())
    }
}

/// Runs one of the two kernels on `x`'s device: the CPU kernel, or the CUDA entry
/// point `entry` of [`CONV_PROGRAM`], one thread per output element.
fn launch(
    op: &'static str,
    cpu: &impl CpuKernel,
    entry: &str,
    scalars: &[Scalar],
    x: &Tensor,
    out: Shape,
) -> Result<Tensor> {
    let blocks = out.numel().div_ceil(BLOCK as usize).clamp(1, 65535) as u32;
    let kernel = CudaKernel {
        program: CONV_PROGRAM,
        entry,
        config: LaunchConfig::linear(blocks, BLOCK),
        scalars,
    };
    // SAFETY: conv.cu's entry points take RAW_PARAMS; they read their one input
    // through its view in `p.in[0]` at indices inside its dims (the geometry was
    // checked against them: im2col reads x [n, c, h, w] only where 0 <= iy < h and
    // 0 <= ix < w; col2im reads the columns [n, c*kh*kw, oh*ow] at rows below
    // c*kh*kw and windows below oh*ow), write each element of their one output
    // exactly once (a grid-stride loop over p.out[0].numel) and nothing else, and
    // take any grid.
    let mut outs = unsafe { raw::run(op, cpu, &kernel, &[x], &[out])? };
    Ok(outs.remove(0))
}

/// The columns of `x` under geometry `g`, `pad` read outside the input
/// (unrecorded: the kernel of `im2col`, and of the pools' forward).
pub(crate) fn unfold(op: &'static str, x: &Tensor, g: &Geometry, pad: f64) -> Result<Tensor> {
    check_counts(op, g)?;
    let kernel = Unfold { op, g: *g, pad };
    launch(
        op,
        &kernel,
        "conv_im2col",
        &g.scalars(pad),
        x,
        g.cols_shape(),
    )
}

/// Every sliding window of `x` (`[N, C, H, W]`) as a column:
/// `[N, C·kh·kw, L]` with `L = oh·ow` windows, zeros read outside the input. Row
/// `(c·kh + i)·kw + j` holds channel `c` at kernel offset `(i, j)`; column
/// `y·ow + x` is the window at output position `(y, x)`. This is
/// `torch.nn.functional.unfold(x, kernel, dilation, padding, stride)`, and
/// `oh = ⌊(H + 2·ph - dh·(kh - 1) - 1) / sh⌋ + 1` (the same for `ow`).
///
/// Linear; its backward is [`col2im`](mod@col2im), whose backward is `im2col`
/// again. A CPU kernel and a CUDA program (`conv.cu`), reading `x` in place
/// (any view).
#[differentiable(crate = ::autograd_core)]
pub mod im2col {
    use super::*;

    /// The windows: `(height, width)` pairs.
    #[derive(Clone, Copy, Debug)]
    pub struct Im2col {
        /// Kernel size `(kh, kw)`, each at least 1.
        pub kernel: (usize, usize),
        /// Step between windows, each at least 1.
        pub stride: (usize, usize),
        /// Zeros added on each side of each spatial axis.
        pub padding: (usize, usize),
        /// Step between kernel taps, each at least 1 (1: adjacent pixels).
        pub dilation: (usize, usize),
    }

    /// The columns. An error naming the op when `x` is not `[N, C, H, W]`, when `H`
    /// or `W` is 0, when a kernel size, stride or dilation is 0, or when the
    /// (dilated) kernel does not fit in the padded input.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let g = geometry(
            "im2col",
            x.dims(),
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            false,
        )?;
        unfold("im2col", x, &g, 0.0)
    }

    /// The columns summed back into an image of `x`'s shape: [`col2im`](mod@col2im).
    pub fn backward(&self, grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let d = x_shape.dims();
        let size = (
            d.get(2).copied().unwrap_or(0),
            d.get(3).copied().unwrap_or(0),
        );
        col2im(
            grad,
            size,
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
        )
    }

    /// Gradcheck inputs: a `[2, 2, 4, 5]` input under a `(2, 3)` kernel with stride
    /// `(1, 2)` and padding `(1, 0)`, and a `[1, 1, 5, 5]` one dilated by `(2, 1)`.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            cases::unary(
                "im2col [2,2,4,5] k(2,3) s(1,2) p(1,0)",
                cases::uniform(60, &[2, 2, 4, 5], -1.0, 1.0),
                |x| im2col(x, (2, 3), (1, 2), (1, 0), (1, 1)),
            ),
            cases::unary(
                "im2col [1,1,5,5] k(2,2) d(2,1) p(1,1)",
                cases::uniform(61, &[1, 1, 5, 5], -1.0, 1.0),
                |x| im2col(x, (2, 2), (1, 1), (1, 1), (2, 1)),
            ),
        ]
    }
}

/// Columns `[N, C·kh·kw, L]` summed back into an image `[N, C, H, W]` of
/// `output_size = (H, W)`: each column is added into the window it was read from
/// ([`im2col`](mod@im2col)'s layout), overlaps adding up and entries falling in
/// the padding dropped. This is `torch.nn.functional.fold(cols, output_size,
/// kernel, dilation, padding, stride)`, the adjoint of `im2col`.
///
/// Linear; its backward is `im2col`. A CPU kernel and a CUDA program (`conv.cu`),
/// each output element gathering its columns in a fixed order (no atomics: the
/// same sums on both devices).
#[differentiable(crate = ::autograd_core)]
pub mod col2im {
    use super::*;

    /// The image size and the windows.
    #[derive(Clone, Copy, Debug)]
    pub struct Col2im {
        /// The image's `(H, W)`.
        pub output_size: (usize, usize),
        /// Kernel size `(kh, kw)`, each at least 1.
        pub kernel: (usize, usize),
        /// Step between windows, each at least 1.
        pub stride: (usize, usize),
        /// Padding on each side of each spatial axis (dropped).
        pub padding: (usize, usize),
        /// Step between kernel taps, each at least 1.
        pub dilation: (usize, usize),
    }

    /// The image. An error naming the op when `cols` is not `[N, C·kh·kw, L]` with
    /// `L` the number of windows `im2col` makes of an `output_size` image, or when
    /// the geometry is invalid (as for `im2col`).
    pub fn forward(&self, cols: &Tensor) -> Result<Tensor> {
        let &[n, rows, l] = cols.dims() else {
            return Err(Error::Shape {
                op: "col2im",
                msg: format!(
                    "the columns have shape {}; they must be [N, C * kh * kw, L] (rank 3), as \
                     im2col makes them",
                    cols.shape()
                ),
            });
        };
        let window = self.kernel.0.saturating_mul(self.kernel.1).max(1);
        let (h, w) = self.output_size;
        let g = geometry(
            "col2im",
            &[n, rows / window, h, w],
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
            false,
        )?;
        if rows % window != 0 || l != g.windows() {
            return Err(Error::Shape {
                op: "col2im",
                msg: format!(
                    "the columns have shape {}, but kernel {:?} over an image of size \
                     {:?} (stride {:?}, padding {:?}, dilation {:?}) makes [N, C * {window}, \
                     {}]: the rows must be a multiple of {window} and there must be {} \
                     columns ({} x {} windows)",
                    cols.shape(),
                    self.kernel,
                    self.output_size,
                    self.stride,
                    self.padding,
                    self.dilation,
                    g.windows(),
                    g.windows(),
                    g.oh,
                    g.ow
                ),
            });
        }
        check_counts("col2im", &g)?;
        let kernel = Fold { op: "col2im", g };
        launch(
            "col2im",
            &kernel,
            "conv_col2im",
            &g.scalars(0.0),
            cols,
            g.image_shape(),
        )
    }

    /// Every window of the gradient as a column: [`im2col`](mod@im2col).
    pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
        im2col(grad, self.kernel, self.stride, self.padding, self.dilation)
    }

    /// Gradcheck inputs: columns folded into a `[3, 4]` image under a `(2, 2)`
    /// kernel (overlapping windows), and into a `[4, 5]` one with stride 2 and
    /// padding 1.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            cases::unary(
                "col2im [2,8,6] -> (3,4) k(2,2)",
                cases::uniform(62, &[2, 8, 6], -1.0, 1.0),
                |c| col2im(c, (3, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
            ),
            cases::unary(
                "col2im [1,6,9] -> (4,5) k(2,3) s(2,2) p(1,1)",
                cases::uniform(63, &[1, 6, 9], -1.0, 1.0),
                |c| col2im(c, (4, 5), (2, 3), (2, 2), (1, 1), (1, 1)),
            ),
        ]
    }
}

/// The geometry of `conv2d(x, w, ..)`, checking `w` against `x` and `groups`.
fn conv_geometry(
    x: &Tensor,
    w: &Tensor,
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    groups: usize,
) -> Result<Geometry> {
    let op = "conv2d";
    let &[o, cg, kh, kw] = w.dims() else {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the weight has shape {}; it must be [out_channels, in_channels / groups, kh, \
                 kw] (rank 4)",
                w.shape()
            ),
        });
    };
    let g = geometry(op, x.dims(), (kh, kw), stride, padding, dilation, false)?;
    if groups == 0 {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "groups is 0; it must be at least 1 (input {}, weight {})",
                x.shape(),
                w.shape()
            ),
        });
    }
    if g.c % groups != 0 || o % groups != 0 {
        return Err(Error::Shape {
            op,
            msg: format!(
                "input channels ({}, input {}) and output channels ({o}, weight {}) must both \
                 be divisible by groups ({groups}); choose groups dividing both",
                g.c,
                x.shape(),
                w.shape()
            ),
        });
    }
    if cg != g.c / groups {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the weight {} has {cg} input channels per group, but the input {} has {} \
                 channels in {groups} group(s), {} per group; the weight must be [{o}, {}, \
                 {kh}, {kw}]",
                w.shape(),
                x.shape(),
                g.c,
                g.c / groups,
                g.c / groups
            ),
        });
    }
    check_counts(op, &g)?;
    Ok(g)
}

/// The op behind [`conv2d`] without its bias: registered as `conv2d`. Call
/// [`conv2d`], which adds the bias.
#[differentiable(crate = ::autograd_core, name = "conv2d")]
pub mod conv2d_op {
    use super::*;

    /// Stride, padding, dilation (`(height, width)` pairs) and groups.
    #[derive(Clone, Copy, Debug)]
    pub struct Conv2dOp {
        /// Step between windows, each at least 1.
        pub stride: (usize, usize),
        /// Zeros added on each side of each spatial axis.
        pub padding: (usize, usize),
        /// Step between kernel taps, each at least 1.
        pub dilation: (usize, usize),
        /// Channel groups: input and output channels are split into `groups`
        /// parts, and part `k` of the output sees part `k` of the input only.
        pub groups: usize,
    }

    /// `im2col(x)` as `[N, groups, C/groups·kh·kw, L]`, multiplied by the weight
    /// as `[groups, O/groups, C/groups·kh·kw]` (one batched matmul, the weight
    /// broadcast over the batch), reshaped to `[N, O, oh, ow]`.
    pub fn forward(&self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        let g = conv_geometry(x, w, self.stride, self.padding, self.dilation, self.groups)?;
        let (groups, o) = (self.groups, w.dims()[0]);
        let k = g.c / groups * g.window();
        let cols = unfold("conv2d", x, &g, 0.0)?;
        let cols = compute::reshape(&cols, [g.n, groups, k, g.windows()])?;
        let wr = compute::reshape(w, [groups, o / groups, k])?;
        let y = compute::matmul(&wr, &cols)?;
        compute::reshape(&y, [g.n, o, g.oh, g.ow])
    }

    /// With `G` the gradient as `[N, groups, O/groups, L]` and `W` the weight as
    /// `[groups, O/groups, K]`: `dx = col2im(Wᵀ G)`, `dw = Σ_n G im2col(x)ᵀ`;
    /// recorded ops, so differentiable again.
    pub fn backward(
        &self,
        grad: &Tensor,
        x: &Tensor,
        w: &Tensor,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let g = conv_geometry(x, w, self.stride, self.padding, self.dilation, self.groups)?;
        let (groups, o) = (self.groups, w.dims()[0]);
        let k = g.c / groups * g.window();
        let gr = reshape(grad, Shape::from([g.n, groups, o / groups, g.windows()]))?;
        let dx = autograd_core::grad_if(needs[0], || {
            let wr = reshape(w, Shape::from([groups, o / groups, k]))?;
            let dcols = matmul(&transpose(&wr, -2, -1)?, &gr)?;
            col2im(
                &reshape(&dcols, g.cols_shape())?,
                (g.h, g.w),
                g.k,
                g.s,
                g.p,
                g.d,
            )
        })?;
        let dw = autograd_core::grad_if(needs[1], || {
            let cols = im2col(x, g.k, g.s, g.p, g.d)?;
            let cols = reshape(&cols, Shape::from([g.n, groups, k, g.windows()]))?;
            let per_sample = matmul(&gr, &transpose(&cols, -2, -1)?)?;
            reshape(&sum(&per_sample, 0, false)?, w.shape().clone())
        })?;
        Ok((dx, dw))
    }

    /// Gradcheck inputs: a padded, strided convolution with bias; a dilated one in
    /// two groups.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "conv2d [2,2,5,4] * [3,2,3,2] + bias, s(2,1) p(1,1)",
                vec![
                    cases::uniform(64, &[2, 2, 5, 4], -1.0, 1.0),
                    cases::uniform(65, &[3, 2, 3, 2], -1.0, 1.0),
                    cases::uniform(66, &[3], -1.0, 1.0),
                ],
                |x| {
                    let o = Conv2dOptions {
                        stride: (2, 1),
                        padding: (1, 1),
                        ..Default::default()
                    };
                    conv2d(&x[0], &x[1], Some(&x[2]), o)
                },
            ),
            CheckCase::new(
                "conv2d [1,4,5,5] * [2,2,2,2] groups 2, d(2,1)",
                vec![
                    cases::uniform(67, &[1, 4, 5, 5], -1.0, 1.0),
                    cases::uniform(68, &[2, 2, 2, 2], -1.0, 1.0),
                ],
                |x| {
                    let o = Conv2dOptions {
                        padding: (0, 1),
                        dilation: (2, 1),
                        groups: 2,
                        ..Default::default()
                    };
                    conv2d(&x[0], &x[1], None, o)
                },
            ),
        ]
    }
}

/// The options of [`conv2d`], as `torch.nn.functional.conv2d`'s arguments
/// (`(height, width)` pairs); `Default` is PyTorch's defaults.
///
/// ```
/// use autograd_ops::Conv2dOptions;
/// let same = Conv2dOptions { padding: (1, 1), ..Default::default() };
/// assert_eq!((same.stride, same.dilation, same.groups), ((1, 1), (1, 1), 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dOptions {
    /// Step between windows, each at least 1 (default 1).
    pub stride: (usize, usize),
    /// Zeros added on each side of each spatial axis (default 0).
    pub padding: (usize, usize),
    /// Step between kernel taps, each at least 1 (default 1).
    pub dilation: (usize, usize),
    /// Channel groups, at least 1 (default 1): input and output channels are
    /// split into `groups` parts, part `k` of the output seeing part `k` of the
    /// input only (`groups = C = O` is a depthwise convolution).
    pub groups: usize,
}

impl Default for Conv2dOptions {
    fn default() -> Self {
        Conv2dOptions {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        }
    }
}

/// 2-D convolution (cross-correlation, as `torch.nn.functional.conv2d`) of `x`
/// `[N, C, H, W]` with `w` `[O, C/groups, kh, kw]`, plus `bias` `[O]` when given:
/// `[N, O, oh, ow]` with `oh = ⌊(H + 2·ph - dh·(kh - 1) - 1) / sh⌋ + 1` (the same
/// for `ow`). Stride, padding (zeros), dilation and groups are the
/// [`Conv2dOptions`]; `Conv2dOptions::default()` is PyTorch's defaults.
///
/// ```
/// # use autograd_core::Tensor;
/// # use autograd_ops::{Conv2dOptions, conv2d};
/// # fn main() -> autograd_core::Result<()> {
/// # autograd_ops::init()?;
/// let x = Tensor::ones([1, 1, 3, 3], autograd_core::DType::F32)?;
/// let w = Tensor::ones([1, 1, 3, 3], autograd_core::DType::F32)?;
/// let same = Conv2dOptions { padding: (1, 1), ..Default::default() };
/// let y = conv2d(&x, &w, None, same)?; // [1, 1, 3, 3]: pixels in each window
/// assert_eq!(y.to_vec::<f32>()?, [4.0, 6.0, 4.0, 6.0, 9.0, 6.0, 4.0, 6.0, 4.0]);
/// # Ok(())
/// # }
/// ```
///
/// Computed as [`im2col`](mod@im2col) and one matrix product (`gemm` on the CPU,
/// cuBLAS on a GPU); recorded as one `conv2d` node saving `x` and `w` (the columns
/// are recomputed in backward), then an `add` for the bias. Differentiable to any
/// order. Errors name `conv2d`: `x` or `w` not of rank 4, channels not divisible
/// by `groups` or not matching the weight, a zero stride, dilation or `groups`, a
/// kernel larger than the padded input, a bias not of shape `[O]`, mixed dtypes or
/// devices.
pub fn conv2d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    options: Conv2dOptions,
) -> Result<Tensor> {
    // Autocast: the image, the weight and the bias in the scope's dtype (recorded).
    use autograd_core::autocast::{CastPolicy::Lower, cast};
    let (x, w) = (&cast(x, Lower)?, &cast(w, Lower)?);
    let bias = bias.map(|b| cast(b, Lower)).transpose()?;
    let Conv2dOptions {
        stride,
        padding,
        dilation,
        groups,
    } = options;
    let y = conv2d_op(x, w, stride, padding, dilation, groups)?;
    add_bias("conv2d", y, bias.as_ref(), w.dims()[0], w)
}

/// `y` `[N, O, ...]` plus `bias` `[O]` on its channels (recorded), when given; an
/// error naming `op` when the bias is not `[O]`.
pub(crate) fn add_bias(
    op: &'static str,
    y: Tensor,
    bias: Option<&Tensor>,
    o: usize,
    w: &Tensor,
) -> Result<Tensor> {
    let Some(b) = bias else { return Ok(y) };
    if b.dims() != [o] {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the bias has shape {}; it must be [{o}], one value per output channel of the \
                 weight {}",
                b.shape(),
                w.shape()
            ),
        });
    }
    let mut dims = vec![1; y.dims().len()];
    dims[1] = o;
    add(&y, &reshape(b, Shape::from(dims))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `col2im` as each output element's sum over `ki`, then `kj`, from 0 (the
    /// CUDA kernel's order), computed element by element.
    fn fold_reference(cols: &[f64], g: &Geometry) -> Vec<f64> {
        let source = |i: usize, k: usize, s: usize, p: usize, d: usize, o: usize| {
            let t = (i + p).checked_sub(k * d)?;
            (t % s == 0 && t / s < o).then_some(t / s)
        };
        let rows = g.c * g.window();
        let mut out = Vec::new();
        for n in 0..g.n {
            for c in 0..g.c {
                for iy in 0..g.h {
                    for ix in 0..g.w {
                        let mut s = 0.0;
                        for ki in 0..g.k.0 {
                            let Some(oy) = source(iy, ki, g.s.0, g.p.0, g.d.0, g.oh) else {
                                continue;
                            };
                            for kj in 0..g.k.1 {
                                let Some(ox) = source(ix, kj, g.s.1, g.p.1, g.d.1, g.ow) else {
                                    continue;
                                };
                                let row = (c * g.k.0 + ki) * g.k.1 + kj;
                                s += cols[(n * rows + row) * g.windows() + oy * g.ow + ox];
                            }
                        }
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    /// Images `[n, c, h, w]` with kernel, stride, padding and dilation: strides,
    /// dilations, a 1 x 1 kernel, and padding wider than the kernel.
    #[allow(clippy::type_complexity)]
    const GEOMETRIES: &[(
        [usize; 4],
        (usize, usize),
        (usize, usize),
        (usize, usize),
        (usize, usize),
    )] = &[
        ([2, 3, 7, 9], (3, 3), (1, 1), (1, 1), (1, 1)),
        ([1, 2, 8, 5], (2, 3), (2, 1), (0, 2), (1, 2)),
        ([2, 1, 9, 11], (3, 2), (3, 2), (2, 1), (2, 1)),
        ([1, 4, 6, 6], (1, 1), (2, 2), (0, 0), (1, 1)),
        ([1, 2, 3, 4], (2, 2), (1, 3), (4, 5), (1, 1)),
    ];

    /// im2col by its definition: element by element, padding outside the image.
    fn unfold_reference(x: &[f64], g: &Geometry, pad: f64) -> Vec<f64> {
        let mut out = Vec::new();
        for n in 0..g.n {
            for c in 0..g.c {
                for ki in 0..g.k.0 {
                    for kj in 0..g.k.1 {
                        for oy in 0..g.oh {
                            for ox in 0..g.ow {
                                let iy = (oy * g.s.0 + ki * g.d.0) as isize - g.p.0 as isize;
                                let ix = (ox * g.s.1 + kj * g.d.1) as isize - g.p.1 as isize;
                                let inside = (0..g.h as isize).contains(&iy)
                                    && (0..g.w as isize).contains(&ix);
                                out.push(if inside {
                                    x[((n * g.c + c) * g.h + iy as usize) * g.w + ix as usize]
                                } else {
                                    pad
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The copy of each line's inside windows and the padding around them give
    /// the definition's values, with strides, padding wider than the kernel and
    /// dilation, on a contiguous and on a transposed image.
    #[test]
    fn im2col_reads_each_window_as_defined() {
        for (i, &(image, k, s, p, d)) in GEOMETRIES.iter().enumerate() {
            let g = geometry("test", &image, k, s, p, d, false).unwrap();
            let x = cases::uniform(90 + i as u64, &image, -1.0, 1.0);
            let want = unfold_reference(&x.to_vec::<f64>().unwrap(), &g, 0.0);
            let got = im2col(&x, k, s, p, d).unwrap();
            assert_eq!(got.to_vec::<f64>().unwrap(), want, "{g:?}");
            // The same image stored transposed (last two axes swapped), read in place.
            let [n, c, h, w] = image;
            let stored = cases::uniform(90 + i as u64, &[n, c, w, h], -1.0, 1.0);
            let xt = autograd_core::compute::transpose(&stored, 2, 3).unwrap();
            let want = unfold_reference(&xt.to_vec::<f64>().unwrap(), &g, 0.0);
            let got = im2col(&xt, k, s, p, d).unwrap();
            assert_eq!(got.to_vec::<f64>().unwrap(), want, "{g:?} transposed");
        }
    }

    #[test]
    fn col2im_sums_each_element_in_the_reference_order() {
        for (i, &(image, k, s, p, d)) in GEOMETRIES.iter().enumerate() {
            let g = geometry("test", &image, k, s, p, d, false).unwrap();
            let cols = cases::uniform(80 + i as u64, g.cols_shape().dims(), -1.0, 1.0);
            let got = col2im(&cols, (g.h, g.w), k, s, p, d).unwrap();
            let want = fold_reference(&cols.to_vec::<f64>().unwrap(), &g);
            let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
            assert_eq!(bits(got.to_vec::<f64>().unwrap()), bits(want), "{g:?}");
        }
    }
}
