//! Raw kernels: an op that is not elementwise brings its own CPU kernel (a Rust
//! function over typed slices and their layouts) and its own CUDA program, and
//! runs them from the `forward` and `backward` of an ordinary `#[differentiable]`
//! op, so recording, saved inputs and the registry are those of every other op.
//!
//! - [`cpu`] runs a [`CpuKernel`]: the kernel gets each input as a [`View`] (the
//!   whole storage slice, `&[T]`, with the tensor's [`Layout`]: shape, strides,
//!   offset; no copy) and writes outputs of the shapes the op chose, allocated by
//!   the library and zero-filled (a buffer from the thread's pool of freed CPU
//!   buffers, zeroed: the kernel never sees uninitialised memory). One kernel
//!   serves `f32` and `f64`: [`CpuKernel::run`] is generic over [`Float`].
//! - [`cuda`] launches an entry point of a [`CudaProgram`] with the grid and
//!   block the op chose ([`LaunchConfig`]) and its scalar parameters
//!   ([`Scalar`]). The program is compiled by NVRTC at its first launch on each
//!   device and cached under its name (on the emulated device, by g++).
//!
//! Both check what the library can: at least one input, every input on one device
//! and of one dtype (an [`Error::DTypeMismatch`] or [`Error::DeviceMismatch`]
//! naming the op), the outputs' sizes; the kernels check the rest (the shapes they
//! accept) and return an [`Error`] naming the op, never a panic.
//!
//! ```
//! use autograd::prelude::*;
//! use autograd::raw::{self, CpuKernel, Float, View};
//!
//! /// Sums each row of a `[rows, cols]` tensor, reading it in place.
//! struct RowSums;
//!
//! impl CpuKernel for RowSums {
//!     fn run<T: Float>(&self, inputs: &[View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()> {
//!         let (x, sums) = (&inputs[0], &mut outputs[0]); // as `forward` passes them
//!         let (&[rows, cols], &[s0, s1]) = (x.dims(), x.strides()) else {
//!             return Err(Error::Shape { op: "row_sums", msg: format!("{} is not 2-D", x.shape()) });
//!         };
//!         for r in 0..rows {
//!             sums[r] = (0..cols).fold(T::ZERO, |a, c| a + x.data()[x.offset() + r * s0 + c * s1]);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! #[differentiable]
//! mod row_sums {
//!     use autograd::prelude::*;
//!
//!     pub fn forward(x: &Tensor) -> Result<Tensor> {
//!         let rows = x.shape().dims().first().copied().unwrap_or(0);
//!         let mut out = autograd::raw::cpu("row_sums", &super::RowSums, &[x], &[Shape::from([rows])])?;
//!         Ok(out.remove(0))
//!     }
//!
//!     /// Recorded ops: twice differentiable.
//!     pub fn backward(grad: &Tensor, x_shape: &Shape) -> Result<Tensor> {
//!         &grad.unsqueeze(1)? * &Tensor::ones(x_shape.clone(), grad.dtype())?
//!     }
//! }
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let x = Tensor::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3])?.with_requires_grad(true);
//! let xt = x.t()?; // [3, 2], read in place (strides [1, 3])
//! let s = row_sums(&xt)?;
//! assert_eq!(s.to_vec::<f64>()?, [5.0, 7.0, 9.0]);
//! s.sum_all()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [1.0; 6]);
//! # Ok(())
//! # }
//! ```
//!
//! # The CUDA calling convention
//!
//! The source is compiled after [`CUDA_PRELUDE`] (`raw.cuh`), which defines the
//! parameter struct and the parameter list every entry point takes:
//!
//! ```text
//! extern "C" __global__ void <entry>_f32(RAW_PARAMS(float)) { ... }
//! extern "C" __global__ void <entry>_f64(RAW_PARAMS(double)) { ... }
//!
//! RAW_PARAMS(T) = const RawParams p,
//!                 const T *in0, .., const T *in7,   // the inputs' storages
//!                 T *out0, .., T *out3              // the outputs
//! struct RawParams {
//!     u64 n_inputs, n_outputs, n_scalars, reserved;
//!     RawView in[8];          // { rank, offset, numel, dims[8], strides[8] }
//!     RawView out[4];         // contiguous: offset 0, row-major strides
//!     RawScalar scalar[8];    // union { u64 u; long long i; double f; }
//! };
//! ```
//!
//! The entry point is chosen by the inputs' dtype: `<entry>_f32` or
//! `<entry>_f64`. Inputs are passed **zero-copy, as they are**: `ink` points at
//! element 0 of input `k`'s storage, and `p.in[k]` is its view, so element
//! `(i, j)` of a rank-2 input is `ink[raw_at2(p.in[k], i, j)]` (`raw_at1`, and
//! `raw_at` for a row-major index of any rank, are there too): a transposed,
//! narrowed or broadcast tensor is read in place, with its offset and strides
//! (a broadcast axis has stride 0). A kernel that wants contiguous rows can
//! check `p.in[k].strides`, or the op can pass `x.contiguous()` (a copy) instead
//! of `x`. Input slots past `p.n_inputs` repeat the last input. Outputs are new,
//! contiguous and **uninitialised**: the kernel writes every element (the
//! emulated device fills new buffers with NaN, so an element left unwritten
//! shows). Output slots past `p.n_outputs` point at input 0's storage and must
//! not be written. The launch is skipped when every output is empty. At most
//! [`MAX_INPUTS`] inputs, [`MAX_OUTPUTS`] outputs, [`MAX_SCALARS`] scalars and
//! [`MAX_DIMS`] axes per tensor.
//!
//! On the emulated device (`cuda-emulator`) each CUDA thread is a fiber:
//! `__syncthreads`, `__shfl_down_sync`, static `__shared__` arrays (keep them
//! small: a few KiB) and `atomicAdd` work; dynamic shared memory does not. Every
//! launch runs under several block orders and with the grid cut to one and
//! three blocks, so kernels loop grid-stride (`for (row = blockIdx.x; row < rows;
//! row += gridDim.x)`) and must give the same result whatever the grid.
//!
//! `examples/layer_norm.rs` defines a fused row-wise layer norm this way, forward
//! and backward, on both devices.

use crate::compute::check_same_kind;
use crate::storage::{Storage, check_size};
use crate::{DType, Error, Layout, Result, Shape, Tensor};
use autograd_kernels::BackendStorage;
use autograd_kernels::cpu::CpuElement;
use smallvec::SmallVec;
use std::sync::Arc;

pub use autograd_kernels::raw::{
    CUDA_PRELUDE, CudaProgram, LaunchConfig, MAX_DIMS, MAX_INPUTS, MAX_OUTPUTS, MAX_SCALARS,
    RawLaunch, Scalar,
};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types a raw kernel computes in: `f32` and `f64`. Arithmetic, the
/// comparisons, `ZERO`, `ONE`, `from_f64`, `to_f64`, `sqrt`, `exp`, ... are those
/// of [`Element`](crate::Element).
pub trait Float: CpuElement + autograd_kernels::Element + sealed::Sealed {}
impl Float for f32 {}
impl Float for f64 {}

/// An input of a CPU kernel, zero-copy: the whole storage of the tensor and the
/// tensor's layout (shape, strides, offset, in elements) within it.
#[derive(Clone, Copy, Debug)]
pub struct View<'a, T> {
    data: &'a [T],
    layout: &'a Layout,
}

impl<'a, T: Copy> View<'a, T> {
    /// The storage, all of it: element `index` of the view is at
    /// `offset + Σ index[k] · strides[k]` ([`View::storage_index`]).
    pub fn data(&self) -> &'a [T] {
        self.data
    }

    /// The tensor's layout within [`View::data`].
    pub fn layout(&self) -> &'a Layout {
        self.layout
    }

    /// The tensor's shape.
    pub fn shape(&self) -> &'a Shape {
        self.layout.shape()
    }

    /// The dimensions (`shape().dims()`).
    pub fn dims(&self) -> &'a [usize] {
        self.layout.shape().dims()
    }

    /// Strides, in elements, one per axis (0 along a broadcast axis).
    pub fn strides(&self) -> &'a [usize] {
        self.layout.strides()
    }

    /// Where element 0 of the view lies in [`View::data`].
    pub fn offset(&self) -> usize {
        self.layout.offset()
    }

    /// The position in [`View::data`] of the element at `index` (one entry per
    /// axis), or `None` when `index` has the wrong rank or lies outside the shape.
    pub fn storage_index(&self, index: &[usize]) -> Option<usize> {
        if index.len() != self.dims().len() || index.iter().zip(self.dims()).any(|(i, d)| i >= d) {
            return None;
        }
        Some(
            self.offset()
                + index
                    .iter()
                    .zip(self.strides())
                    .map(|(i, s)| i * s)
                    .sum::<usize>(),
        )
    }

    /// The element at `index`, or `None` when `index` is not in the shape.
    pub fn get(&self, index: &[usize]) -> Option<T> {
        self.storage_index(index).map(|k| self.data[k])
    }

    /// The view's elements as one slice, when they are contiguous in row-major
    /// order (no copy); `None` for a transposed, strided or broadcast view.
    pub fn as_contiguous(&self) -> Option<&'a [T]> {
        let l = self.layout;
        l.is_contiguous()
            .then(|| &self.data[l.offset()..l.offset() + l.numel()])
    }
}

/// A CPU kernel: computes outputs from input views, for `f32` and `f64` alike.
///
/// `outputs[k]` holds `shape.numel()` zeros of the `k`-th shape passed to
/// [`cpu`], in row-major order. An error the kernel returns (an input of a shape
/// it does not take) comes back from [`cpu`] as it is: name the op in it.
pub trait CpuKernel {
    /// Runs the kernel; `inputs` are in the order given to [`cpu`].
    fn run<T: Float>(&self, inputs: &[View<'_, T>], outputs: &mut [&mut [T]]) -> Result<()>;
}

/// The dtype and device every input shares, checked; `what` says which runner.
fn common_kind(op: &'static str, inputs: &[&Tensor], what: &str) -> Result<(DType, crate::Device)> {
    let Some((first, rest)) = inputs.split_first() else {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "{what} was given no input tensor; pass at least one (its dtype chooses the \
                 kernel's element type)"
            ),
        });
    };
    for t in rest {
        check_same_kind(op, first, t)?;
    }
    Ok((first.dtype(), first.device()))
}

fn check_outputs(op: &'static str, outputs: &[Shape], dtype: DType) -> Result<()> {
    if outputs.is_empty() {
        return Err(Error::InvalidArgument {
            op,
            msg: "a raw kernel was given no output shape; pass one shape per output".into(),
        });
    }
    outputs.iter().try_for_each(|s| check_size(op, s, dtype))
}

/// Runs `kernel` on the CPU over `inputs` (zero-copy views of their storages) and
/// returns one new tensor per shape of `outputs`. Unrecorded: call it from an
/// op's `forward` or `backward`.
///
/// Errors, naming `op`: no input or no output, inputs of different dtypes, an
/// input that is not on the CPU ([`Error::DeviceMismatch`]: use [`cuda`] there),
/// an output too large to allocate, and whatever the kernel returns.
pub fn cpu<K: CpuKernel + ?Sized>(
    op: &'static str,
    kernel: &K,
    inputs: &[&Tensor],
    outputs: &[Shape],
) -> Result<Vec<Tensor>> {
    let (dtype, device) = common_kind(op, inputs, "raw::cpu")?;
    if device != crate::Device::Cpu {
        return Err(Error::InvalidArgument {
            op,
            msg: format!(
                "raw::cpu runs a CPU kernel, and the inputs are on {device}; launch the op's CUDA \
                 kernel there (raw::cuda), or move the inputs with `.to_device(Device::Cpu)`"
            ),
        });
    }
    check_outputs(op, outputs, dtype)?;
    let storages: Vec<Arc<Storage>> = inputs.iter().map(|t| t.storage_arc()).collect();
    match dtype {
        DType::F32 => run_cpu::<f32, K>(op, kernel, inputs, &storages, outputs),
        DType::F64 => run_cpu::<f64, K>(op, kernel, inputs, &storages, outputs),
        DType::F16 | DType::BF16 => in_f32(dtype, inputs, |w| cpu(op, kernel, w, outputs)),
        other => Err(Error::InvalidArgument {
            op,
            msg: format!(
                "raw::cpu kernels compute in f32 or f64, and the inputs are {other}; convert \
                 them first with `.to_dtype(DType::F32)`"
            ),
        }),
    }
}

/// A raw kernel over f16/bf16 `inputs`: `run` on them converted to f32 (raw
/// kernels compute in f32 and f64), each output rounded once back to `dtype`, as
/// the built-in kernels compute halves.
fn in_f32(
    dtype: DType,
    inputs: &[&Tensor],
    run: impl FnOnce(&[&Tensor]) -> Result<Vec<Tensor>>,
) -> Result<Vec<Tensor>> {
    let wide = inputs
        .iter()
        .map(|t| crate::compute::cast(t, DType::F32))
        .collect::<Result<Vec<_>>>()?;
    let wide: Vec<&Tensor> = wide.iter().collect();
    run(&wide)?
        .iter()
        .map(|t| crate::compute::cast(t, dtype))
        .collect()
}

fn run_cpu<T: Float, K: CpuKernel + ?Sized>(
    op: &'static str,
    kernel: &K,
    inputs: &[&Tensor],
    storages: &[Arc<Storage>],
    outputs: &[Shape],
) -> Result<Vec<Tensor>> {
    let mut views = Vec::with_capacity(inputs.len());
    for (t, s) in inputs.iter().zip(storages) {
        s.data()?;
        let data = s.as_cpu().and_then(T::slice);
        // Checked by `cpu`: every input is a CPU tensor of dtype T.
        let data = data.ok_or(Error::DTypeMismatch {
            op,
            lhs: T::DTYPE,
            rhs: t.dtype(),
        })?;
        views.push(View {
            data,
            layout: t.layout(),
        });
    }
    let mut bufs = outputs
        .iter()
        .map(|s| {
            autograd_kernels::raw::zeroed::<T>(s.numel())
                .map_err(|e| Error::from_kernel(e, op, s, T::DTYPE, crate::Device::Cpu))
        })
        .collect::<Result<Vec<Vec<T>>>>()?;
    {
        let mut outs: Vec<&mut [T]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        kernel.run(&views, &mut outs)?;
    }
    Ok(bufs
        .into_iter()
        .zip(outputs)
        .map(|(b, s)| Tensor::from_storage(Storage::cpu(T::wrap(b)), s.clone()))
        .collect())
}

/// Runs an op's kernel on its inputs' device: `cpu_kernel` ([`cpu`]) on the CPU,
/// `cuda_kernel` ([`cuda`]) on a CUDA device. What an op with both kernels calls
/// from its `forward` or `backward`; errors as those two give them.
///
/// # Safety
/// As [`cuda`]: `cuda_kernel` is launched when the inputs are on a GPU.
pub unsafe fn run<K: CpuKernel + ?Sized>(
    op: &'static str,
    cpu_kernel: &K,
    cuda_kernel: &CudaKernel<'_>,
    inputs: &[&Tensor],
    outputs: &[Shape],
) -> Result<Vec<Tensor>> {
    match inputs.first().map(|t| t.device()) {
        Some(crate::Device::Cuda(_)) => {
            // SAFETY: forwarded to the caller.
            unsafe { cuda(op, cuda_kernel, inputs, outputs) }
        }
        _ => cpu(op, cpu_kernel, inputs, outputs),
    }
}

/// A CUDA kernel of a raw program: the program, the entry point (without its
/// `_f32`/`_f64` suffix, chosen by the inputs' dtype), the launch configuration
/// (grid, block, dynamic shared memory) and the scalar parameters (`p.scalar[0..]`
/// in the kernel). The kernels' own launch description, under the name ops use.
pub type CudaKernel<'a> = RawLaunch<'a>;

/// Launches `kernel` on the CUDA device of `inputs` (passed zero-copy: their
/// storages and views, see the [module documentation](self)) and returns one new
/// tensor per shape of `outputs`. Unrecorded: call it from an op's `forward` or
/// `backward`. The program is compiled at its first launch on the device.
///
/// Errors, naming `op`: no input, no output, or more than the limits allow;
/// inputs of different dtypes or devices; inputs not on a CUDA device
/// ([`Error::InvalidArgument`]: use [`cpu`] there; without the `cuda` feature
/// every tensor is on the CPU, so this always fails that way); a compile error
/// (with the compiler's log) or a failed launch.
///
/// # Safety
/// The entry points of `kernel.program` take `RAW_PARAMS(T)` (see [`CUDA_PRELUDE`]),
/// read only inside the inputs' views as `p.in` describes them, write every
/// element of every output and nothing else, and run correctly with the launch
/// configuration given (grid-stride loops where the grid may be smaller than the
/// work). The library cannot check what the device code does: a kernel that
/// writes out of bounds corrupts device memory.
pub unsafe fn cuda(
    op: &'static str,
    kernel: &CudaKernel<'_>,
    inputs: &[&Tensor],
    outputs: &[Shape],
) -> Result<Vec<Tensor>> {
    let (dtype, device) = common_kind(op, inputs, "raw::cuda")?;
    check_outputs(op, outputs, dtype)?;
    if dtype.is_half() {
        // SAFETY: the same launch, on the same inputs widened (same views' shapes).
        return in_f32(dtype, inputs, |w| unsafe { cuda(op, kernel, w, outputs) });
    }
    if let crate::Device::Cuda(_) = device {
        let storages: Vec<Arc<Storage>> = inputs.iter().map(|t| t.storage_arc()).collect();
        let reads = storages
            .iter()
            .map(|s| &**s)
            .zip(inputs.iter().map(|t| t.layout()));
        let err = |e| Error::from_kernel(e, op, &outputs[0], dtype, device).in_op(op);
        let launch = Launch { kernel, outputs };
        let outs = Storage::run(op, &launch, reads, err)?;
        return Ok(outs
            .into_iter()
            .zip(outputs)
            .map(|(b, s)| Tensor::from_storage(Storage::new(b, device), s.clone()))
            .collect());
    }
    let _ = kernel;
    Err(Error::InvalidArgument {
        op,
        msg: format!(
            "raw::cuda launches a CUDA kernel, and the inputs are on {device}; run the op's CPU \
             kernel there (raw::cpu), or move the inputs with `.to_device(Device::Cuda(0))`"
        ),
    })
}

/// A raw kernel's launch, run on the inputs' backend (see `Storage::run`); made
/// only by [`cuda`], whose caller upholds the launch's safety contract.
struct Launch<'a> {
    kernel: &'a CudaKernel<'a>,
    outputs: &'a [Shape],
}

impl crate::storage::Program for Launch<'_> {
    fn run<B: BackendStorage>(
        &self,
        ins: &[(&B, &Layout)],
    ) -> autograd_kernels::Result<SmallVec<[B; 1]>> {
        // SAFETY: a `Launch` is made only inside `cuda`, whose caller upholds the
        // contract `run_raw` states.
        unsafe { B::run_raw(self.kernel, ins, self.outputs) }.map(SmallVec::from_vec)
    }
}
