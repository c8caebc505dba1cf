//! Indexing along one axis with an index tensor of the data's rank, as
//! `torch.gather` and `torch.Tensor.scatter_add`: [`gather`](mod@gather) picks,
//! [`scatter_add`](mod@scatter_add) adds back; each is the other's backward, so
//! both are differentiable to any order.
//!
//! Both run their own kernels (a CPU kernel and a CUDA program, `index.cu`,
//! through `autograd_core::raw`) over rank-3 views `[outer, size, inner]` of their
//! tensors (the indexed axis in the middle), reading the inputs in place where
//! their layout allows it. The index is an integer tensor, read on the host: the
//! CPU kernels take its positions as integers (exact at any size); the CUDA
//! kernels, which compute in f32 and f64, take them uploaded as a tensor of the
//! data's dtype (exact below 2^24 in f32, 2^53 in f64; a longer f32 axis on a GPU
//! is refused).

use crate::pad;
use autograd_core::cases;
use autograd_core::parallel::{self, SharedMut};
use autograd_core::raw::{self, CpuKernel, CudaKernel, CudaProgram, Float, LaunchConfig, Scalar};
use autograd_core::{CheckCase, DType, Device, Error, Result, Shape, Tensor, compute};
use autograd_macros::differentiable;

/// The CUDA program of `gather` and `scatter_add`: entry points
/// `index_gather_{f32,f64}` and `index_scatter_{f32,f64}` (compiled after
/// `raw::CUDA_PRELUDE`).
pub const INDEX_PROGRAM: CudaProgram = CudaProgram {
    name: "index",
    source: include_str!("index.cu"),
};

/// Threads per block of the CUDA kernels.
const BLOCK: u32 = 256;

/// The checked arguments of an indexing op: the axis, and the index's positions
/// in the row-major order of its rank-3 view `[outer, L, inner]`.
struct Indexing {
    axis: usize,
    /// The size of the indexed axis of the data.
    size: usize,
    /// The index's shape with the indexed axis set to `size`: the part of the data
    /// the index reaches.
    reach: Shape,
    /// `[outer, L, inner]`.
    dims3: [usize; 3],
    /// The index's values, each checked to be in `0..size`, read on the host in
    /// row-major order (the order of `[outer, L, inner]`).
    positions: Vec<usize>,
}

/// `[outer, middle, inner]` of `dims` around `axis`.
fn three(dims: &[usize], axis: usize, middle: usize) -> [usize; 3] {
    let outer = dims[..axis].iter().product();
    let inner = dims[axis + 1..].iter().product();
    [outer, middle, inner]
}

/// Checks `index` against data of shape `data` (the op's `x`): an integer tensor
/// (`i64`, `i32` or `u8`, on any device: it is read on the host) of the same
/// rank, at most `data`'s sizes off `axis`, values in `0..data[axis]`. Errors name
/// `op`, the shapes, and the offending value.
fn indexing(op: &'static str, data: &Shape, index: &Tensor, axis: isize) -> Result<Indexing> {
    let axis = compute::normalize_axis_of(op, axis, data)?;
    if index.rank() != data.rank() {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the index has shape {} (rank {}), the tensor {} (rank {}); they must have \
                 one rank (unsqueeze the index)",
                index.shape(),
                index.rank(),
                data,
                data.rank()
            ),
        });
    }
    if let Some(d) = (0..data.rank()).find(|&d| d != axis && index.dims()[d] > data[d]) {
        return Err(Error::Shape {
            op,
            msg: format!(
                "the index {} is larger than the tensor {} along axis {d} ({} > {}); off the \
                 indexed axis {axis} it must be at most the tensor's size",
                index.shape(),
                data,
                index.dims()[d],
                data[d]
            ),
        });
    }
    let size = data[axis];
    let positions = compute::indices(op, index, size).map_err(|e| match e {
        Error::InvalidArgument { op, msg } if index.dtype().is_integer() => {
            Error::InvalidArgument {
                op,
                msg: format!(
                    "{msg} (the index {}, along axis {axis} of shape {data})",
                    index.shape()
                ),
            }
        }
        e => e,
    })?;
    let mut reach = index.shape().clone();
    reach.dims_mut()[axis] = size;
    let dims3 = three(index.dims(), axis, index.dims()[axis]);
    Ok(Indexing {
        axis,
        size,
        reach,
        dims3,
        positions,
    })
}

/// The positions of `ix` as a tensor of `dtype` on `device`, shape `[outer, L,
/// inner]`: the index the CUDA kernels read (the CUDA backend computes in f32 and
/// f64). Positions are exact in f32 below 2^24 and in f64 below 2^53, so an f32
/// axis longer than 2^24 is refused here; the CPU kernels read the integer
/// positions themselves and have no such limit.
fn device_positions(
    op: &'static str,
    ix: &Indexing,
    data: &Shape,
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    let exact: usize = if dtype == DType::F32 {
        1 << 24
    } else {
        1 << 53
    };
    if ix.size > exact {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "axis {} of the {dtype} tensor {data} on {device} has {} entries, more than the \
                 CUDA kernel's {dtype} positions hold exactly (2^24 in f32); compute in f64 \
                 there (`.to_dtype(DType::F64)`), or on the CPU, which reads integer positions",
                ix.axis, ix.size
            ),
        });
    }
    let host = Tensor::from_vec(
        ix.positions.iter().map(|&p| p as f64).collect::<Vec<f64>>(),
        ix.dims3,
    )?;
    compute::to_device(&compute::cast(&host, dtype)?, device)
}

/// `t` narrowed to the first `to[d]` entries of every axis (a view).
fn narrow_to(t: &Tensor, to: &[usize]) -> Result<Tensor> {
    let mut v = t.clone();
    for (d, &n) in to.iter().enumerate() {
        if v.dims()[d] != n {
            v = compute::narrow(&v, d, 0, n)?;
        }
    }
    Ok(v)
}

/// A kernel error: the kernel was called with inputs it does not take.
fn kernel_error(op: &'static str, msg: String) -> Error {
    Error::Shape { op, msg }
}

/// Position `k` of `positions` (row-major over `[outer, L, inner]`), checked below
/// `size` (the host checked them all already; the kernels never read or write
/// outside their buffers even so).
fn position(op: &'static str, positions: &[usize], k: usize, size: usize) -> Result<usize> {
    match positions.get(k) {
        Some(&p) if p < size => Ok(p),
        other => Err(kernel_error(
            op,
            format!("index {other:?} (element {k}) out of 0..{size} reached the kernel"),
        )),
    }
}

/// The element at `(a, b, c)` of a rank-3 view.
fn at3<T: Float>(v: &raw::View<'_, T>, a: usize, b: usize, c: usize) -> T {
    let s = v.strides();
    v.data()[v.offset() + a * s[0] + b * s[1] + c * s[2]]
}

/// The CPU kernel of `gather`: `x [outer, S, inner]` and the positions of an index
/// `[outer, L, inner]` (integers, read on the host, so exact at any size) to
/// `[outer, L, inner]`.
struct GatherKernel<'a> {
    op: &'static str,
    /// The index's positions, row-major over `[outer, L, inner]`.
    positions: &'a [usize],
    /// `L`, the index's length along the indexed axis.
    l: usize,
}

impl CpuKernel for GatherKernel<'_> {
    fn run<T: Float>(&self, inputs: &[raw::View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        let ([x], [out]) = (inputs, outputs) else {
            return Err(kernel_error(
                self.op,
                "the gather kernel takes 1 input and 1 output".into(),
            ));
        };
        let &[outer, size, inner] = x.dims() else {
            return Err(kernel_error(
                self.op,
                "the gather kernel takes a rank-3 view".into(),
            ));
        };
        let l = self.l;
        if out.len() != outer * l * inner || self.positions.len() != out.len() {
            return Err(kernel_error(
                self.op,
                format!(
                    "the gather kernel was given x {} and {} positions for [{outer}, {l}, {inner}]",
                    x.shape(),
                    self.positions.len()
                ),
            ));
        }
        // Pieces of whole output rows, one row per (o, j), piece i starting at row
        // i * rows: each element is one read.
        let row = inner.max(1);
        let rows = (parallel::piece_len(PIECE, 1) / row).max(1);
        pieces_mut(out, rows * row, 3 * out.len(), |i, piece| {
            for (r, line) in piece.chunks_mut(row).enumerate() {
                let (o, j) = ((i * rows + r) / l, (i * rows + r) % l);
                for (n, v) in line.iter_mut().enumerate() {
                    let k = (o * l + j) * inner + n;
                    let p = position(self.op, self.positions, k, size)?;
                    *v = at3(x, o, p, n);
                }
            }
            Ok(())
        })
    }
}

/// The CPU kernel of `scatter_add`'s scatter: the positions of an index `[outer,
/// L, inner]` and `src [outer, L, inner]` to `[outer, S, inner]`, each output the
/// sum of the sources sent to it (in ascending `L` order, as the CUDA kernel).
struct ScatterKernel<'a> {
    op: &'static str,
    size: usize,
    /// The index's positions, row-major over `[outer, L, inner]`.
    positions: &'a [usize],
}

impl CpuKernel for ScatterKernel<'_> {
    fn run<T: Float>(&self, inputs: &[raw::View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
        let ([src], [out]) = (inputs, outputs) else {
            return Err(kernel_error(
                self.op,
                "the scatter kernel takes 1 input and 1 output".into(),
            ));
        };
        let &[outer, l, inner] = src.dims() else {
            return Err(kernel_error(
                self.op,
                "the scatter kernel takes a rank-3 view".into(),
            ));
        };
        if self.positions.len() != outer * l * inner || out.len() != outer * self.size * inner {
            return Err(kernel_error(
                self.op,
                format!(
                    "the scatter kernel was given {} positions and src {}",
                    self.positions.len(),
                    src.shape()
                ),
            ));
        }
        let (size, positions) = (self.size, self.positions);
        let work = 2 * outer * l * inner + out.len();
        if !parallel::is_parallel(2, work) {
            for o in 0..outer {
                for j in 0..l {
                    for n in 0..inner {
                        let p = position(self.op, positions, (o * l + j) * inner + n, size)?;
                        out[(o * size + p) * inner + n] += at3(src, o, j, n);
                    }
                }
            }
            return Ok(());
        }
        // Pieces partition the destination, and each adds what lands in its part in
        // ascending `j`, as the serial loop does: every output element gets its
        // additions in the serial order, on one thread, without atomics.
        let dst = SharedMut::new(out);
        let results = if outer * inner >= 2 {
            // The lines (o, n) are independent (line (o, n) of the output gets the
            // sources of line (o, n) only): pieces of `chunk` lines of one `o`.
            let chunk = (parallel::piece_len(PIECE, 1) / l.max(1)).clamp(1, inner.max(1));
            let per_o = inner.div_ceil(chunk);
            parallel::map(outer * per_o, work, |i| {
                let (o, n0) = (i / per_o, i % per_o * chunk);
                for j in 0..l {
                    for n in n0..(n0 + chunk).min(inner) {
                        let p = position(self.op, positions, (o * l + j) * inner + n, size)?;
                        // SAFETY: element (o, p, n) is in the output (p < size,
                        // n < inner, o < outer), and only the piece holding line
                        // (o, n) writes it.
                        unsafe { *dst.ptr().add((o * size + p) * inner + n) += at3(src, o, j, n) };
                    }
                }
                Ok(())
            })
        } else {
            // One line: ranges of destination positions, every piece scanning the
            // whole index. Any partition of the destination gives every element the
            // same additions in the same order, so the number of ranges follows the
            // threads (each range costs a scan of the index).
            let pieces = parallel::num_threads().clamp(1, size.max(1));
            parallel::map(pieces, work, |i| {
                let range = i * size / pieces..(i + 1) * size / pieces;
                for j in 0..l {
                    let p = position(self.op, positions, j, size)?;
                    if range.contains(&p) {
                        // SAFETY: p < size = the output's length; only the piece
                        // whose range holds p writes it.
                        unsafe { *dst.ptr().add(p) += at3(src, 0, j, 0) };
                    }
                }
                Ok(())
            })
        };
        results.into_iter().collect()
    }
}

/// Elements per piece of the parallel CPU kernels: enough that handing a piece to a
/// thread costs little beside it, few enough that a mid-sized job has pieces for
/// every thread.
const PIECE: usize = 1 << 13;

/// Calls `f(i, piece_i)` for consecutive pieces of `piece` elements of `out` (the
/// last may be shorter) on the pool, as [`parallel::for_each_piece_mut`] does, and
/// returns the first error in piece order. A job too small for the pool runs on
/// the calling thread as `f(0, out)`: `f` takes a piece 0 of any length.
fn pieces_mut<T: Float>(
    out: &mut [T],
    piece: usize,
    work: usize,
    f: impl Fn(usize, &mut [T]) -> Result<()> + Sync + Send,
) -> Result<()> {
    let (len, piece) = (out.len(), piece.max(1));
    let pieces = len.div_ceil(piece);
    if !parallel::is_parallel(pieces, work) {
        return f(0, out);
    }
    let dst = SharedMut::new(out);
    let results = parallel::map(pieces, work, |i| {
        let start = i * piece;
        // SAFETY: pieces `start..start + n` are disjoint and inside `out`, which
        // outlives the job.
        f(i, unsafe { dst.slice(start, piece.min(len - start)) })
    });
    results.into_iter().collect()
}

/// Runs one of the two kernels on the data's device (f16 and bf16 data widened
/// to f32, the result rounded back): on the CPU, `cpu` over `data` alone (the kernel holds the integer positions); on a CUDA device, the
/// entry point `entry` of [`INDEX_PROGRAM`] over `threads` threads, with the
/// positions uploaded as a tensor of the data's dtype ([`device_positions`]),
/// `index_first` saying whether they come before `data` among its inputs.
#[allow(clippy::too_many_arguments)]
fn launch(
    op: &'static str,
    cpu: &impl CpuKernel,
    (entry, scalars, index_first): (&str, &[Scalar], bool),
    ix: &Indexing,
    data: &Tensor,
    data_shape: &Shape,
    threads: usize,
    out: Shape,
) -> Result<Tensor> {
    if data.dtype().compute() != data.dtype() {
        // f16 and bf16 compute in f32 and round once, as the other kernels do.
        let wide = compute::cast(data, data.dtype().compute())?;
        let result = launch(
            op,
            cpu,
            (entry, scalars, index_first),
            ix,
            &wide,
            data_shape,
            threads,
            out,
        )?;
        return compute::cast(&result, data.dtype());
    }
    let mut outs = if let Device::Cuda(_) = data.device() {
        let index3 = device_positions(op, ix, data_shape, data.dtype(), data.device())?;
        let inputs = if index_first {
            [&index3, data]
        } else {
            [data, &index3]
        };
        let blocks = threads.div_ceil(BLOCK as usize).clamp(1, 65535) as u32;
        let kernel = CudaKernel {
            program: INDEX_PROGRAM,
            entry,
            config: LaunchConfig::linear(blocks, BLOCK),
            scalars,
        };
        // SAFETY: index.cu's entry points take RAW_PARAMS; they read their two
        // rank-3 inputs through their views in `p.in` at indices inside their dims
        // (index values outside the axis are skipped, and were refused on the
        // host), write each element of their one output (a grid-stride loop over
        // its elements, or over lines each owning its elements) and nothing else,
        // and take any grid.
        unsafe { raw::cuda(op, &kernel, &inputs, &[out])? }
    } else {
        raw::cpu(op, cpu, &[data], &[out])?
    };
    Ok(outs.remove(0))
}

/// Entries of `x` picked along `axis` by `index` (`torch.gather(x, axis, index)`):
/// for `axis = 1` of a rank-3 `x`, `out[i][j][k] = x[i][index[i][j][k]][k]`. The
/// result has the index's shape.
///
/// `index` has `x`'s rank and at most its sizes off `axis` (any size along it),
/// and holds positions in `0..x.dims()[axis]`: an integer tensor (`i64`, as
/// PyTorch's; `i32` and `u8` too), read on the host, so exact at any size; it
/// gets no gradient. The gradient of `x` adds the output's
/// gradient back where each entry came from ([`scatter_add`](mod@scatter_add)
/// into zeros), repeats adding up.
#[differentiable(crate = ::autograd_core, method)]
pub mod gather {
    use super::*;

    /// The axis indexed.
    #[derive(Clone, Copy, Debug)]
    pub struct Gather {
        /// The axis indexed; negative counts from the end.
        pub axis: isize,
    }

    /// The picked entries. An error naming `gather` when `axis` is out of range, the
    /// index has another rank or a larger size off `axis`, or holds a value that is
    /// not an integer in the axis' range.
    pub fn forward(&self, x: &Tensor, #[no_grad] index: &Tensor) -> Result<Tensor> {
        const OP: &str = "gather";
        let ix = indexing(OP, x.shape(), index, self.axis)?;
        let [outer, l, inner] = ix.dims3;
        let x3 = compute::reshape(&narrow_to(x, ix.reach.dims())?, [outer, ix.size, inner])?;
        let kernel = super::GatherKernel {
            op: OP,
            positions: &ix.positions,
            l,
        };
        let out = launch(
            OP,
            &kernel,
            ("index_gather", &[], false),
            &ix,
            &x3,
            x.shape(),
            ix.dims3.iter().product(),
            Shape::from(ix.dims3),
        )?;
        compute::reshape(&out, index.shape().clone())
    }

    /// The gradient added back at the positions read: [`scatter_add`](mod@scatter_add)
    /// into zeros of `x`'s shape (a constant), whose backward is `gather` again.
    pub fn backward(&self, grad: &Tensor, index: &Tensor, x_shape: &Shape) -> Result<Tensor> {
        let zeros = grad.full_like_shape(x_shape.clone(), 0.0)?;
        scatter_add(&zeros, index, grad, self.axis)
    }

    /// Gradcheck inputs: picks along the last axis (repeats included), and along the
    /// first with an index smaller than `x` off that axis; `index` held constant.
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "gather axis -1 (repeats)",
                vec![
                    cases::uniform(71, &[2, 4], -1.0, 1.0),
                    crate::index_values(&[3, 0, 3, 1, 1, 2], &[2, 3]),
                ],
                |x| gather(&x[0], &x[1], -1),
            )
            .differentiable(vec![true, false]),
            CheckCase::new(
                "gather axis 0 (index [3,2] into [2,3])",
                vec![
                    cases::uniform(72, &[2, 3], -1.0, 1.0),
                    crate::index_values(&[1, 0, 0, 0, 1, 1], &[3, 2]),
                ],
                |x| gather(&x[0], &x[1], 0),
            )
            .differentiable(vec![true, false]),
        ]
    }
}

/// `x` with each entry of `src` added along `axis` at the position `index` holds
/// for it (`torch.Tensor.scatter_add(axis, index, src)`): for `axis = 1` of rank 3,
/// `out[i][index[i][j][k]][k] += src[i][j][k]`, repeats adding up.
///
/// `index` has `x`'s rank, at most `x`'s sizes off `axis`, and at most `src`'s
/// sizes on every axis (only that part of `src` is read); it holds integral
/// positions in `0..x.dims()[axis]` (an integer tensor, as `gather`'s) and gets no
/// gradient. The
/// gradient of `x` is the output's; of `src`, the output's gradient at the
/// positions each entry went to ([`gather`](mod@gather)), zero where `src` was not
/// read.
#[differentiable(crate = ::autograd_core)]
pub mod scatter_add {
    use super::*;

    /// The axis indexed.
    #[derive(Clone, Copy, Debug)]
    pub struct ScatterAdd {
        /// The axis indexed; negative counts from the end.
        pub axis: isize,
    }

    /// `x` plus the scattered `src`. An error naming `scatter_add` when `axis` is out
    /// of range, the index has another rank, is larger than `x` off `axis` or than
    /// `src` anywhere, or holds a value that is not an integer in the axis' range,
    /// or the dtypes or devices differ.
    pub fn forward(&self, x: &Tensor, #[no_grad] index: &Tensor, src: &Tensor) -> Result<Tensor> {
        const OP: &str = "scatter_add";
        let ix = indexing(OP, x.shape(), index, self.axis)?;
        if src.rank() != index.rank() || src.dims().iter().zip(index.dims()).any(|(s, i)| i > s) {
            return Err(Error::Shape {
                op: OP,
                msg: format!(
                    "src has shape {}, the index {}; src must have the index's rank and at least \
                     its size on every axis",
                    src.shape(),
                    index.shape()
                ),
            });
        }
        let src3 = compute::reshape(&narrow_to(src, index.dims())?, ix.dims3)?;
        let [outer, _, inner] = ix.dims3;
        let kernel = super::ScatterKernel {
            op: OP,
            size: ix.size,
            positions: &ix.positions,
        };
        let scattered = launch(
            OP,
            &kernel,
            ("index_scatter", &[Scalar::U64(ix.size as u64)], true),
            &ix,
            &src3,
            x.shape(),
            outer * inner,
            Shape::from([outer, ix.size, inner]),
        )?;
        // Into x's shape: zeros where the index does not reach.
        let mut full = compute::reshape(&scattered, ix.reach.clone())?;
        for d in (0..x.rank()).filter(|&d| d != ix.axis) {
            if full.dims()[d] != x.dims()[d] {
                let mut shape = full.shape().clone();
                shape.dims_mut()[d] = x.dims()[d];
                full = compute::pad_narrow(&full, &shape, d, 0)?;
            }
        }
        compute::binary(x, &full, autograd_core::BinaryOp::Add).map_err(|e| e.in_op(OP))
    }

    /// `grad` to `x` unchanged; to `src`, `grad` at the positions each entry went to
    /// ([`gather`](mod@gather)), padded with zeros to `src`'s shape.
    pub fn backward(
        &self,
        grad: &Tensor,
        index: &Tensor,
        src_shape: &Shape,
        needs: [bool; 2],
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let dsrc = autograd_core::grad_if(needs[1], || {
            let mut g = gather(grad, index, self.axis)?;
            for d in 0..src_shape.rank() {
                let missing = src_shape[d] - g.dims()[d];
                if missing > 0 {
                    g = pad(&g, d as isize, 0, missing)?;
                }
            }
            Ok(g)
        })?;
        Ok((needs[0].then(|| grad.clone()), dsrc))
    }

    /// Gradcheck inputs: repeated positions along the first axis, and along the last
    /// with `src` larger than the index; gradients for `x` and `src` (`index` held
    /// constant).
    pub fn check_cases() -> Vec<CheckCase> {
        vec![
            CheckCase::new(
                "scatter_add axis 0 (repeats)",
                vec![
                    cases::uniform(73, &[3, 2], -1.0, 1.0),
                    crate::index_values(&[2, 0, 2, 2], &[2, 2]),
                    cases::uniform(74, &[2, 2], -1.0, 1.0),
                ],
                |x| scatter_add(&x[0], &x[1], &x[2], 0),
            )
            .differentiable(vec![true, false, true]),
            CheckCase::new(
                "scatter_add axis -1 (src [2,3] larger than index [1,2])",
                vec![
                    cases::uniform(75, &[2, 4], -1.0, 1.0),
                    crate::index_values(&[3, 1], &[1, 2]),
                    cases::uniform(76, &[2, 3], -1.0, 1.0),
                ],
                |x| scatter_add(&x[0], &x[1], &x[2], -1),
            )
            .differentiable(vec![true, false, true]),
        ]
    }
}
