//! Reverse-mode automatic differentiation in which every op is defined once.
//!
//! An op is an inline module under `#[differentiable]` holding its `forward` and
//! `backward` side by side. The macro generates everything else: the
//! [`Differentiable`] implementation, a typed function, the registry entry, and the
//! flags that say which inputs backward reads, so that the recorded graph keeps
//! exactly those alive and nothing else.
//!
//! This crate is the one to depend on: it re-exports the core ([`Tensor`], the
//! engine, [`gradcheck`], [`memory`]), the [`differentiable`] macro, the standard
//! op library ([`ops`], also re-exported at the root), and adds [`optim`].
//! Call [`init`] once at start-up; `use autograd::prelude::*` brings in what most
//! programs need.
//!
//! # Defining an op
//!
//! `forward` computes the result with the unrecorded [`compute`] functions or with
//! other ops; `backward` receives the gradient of the output and returns one gradient
//! per differentiable input. Its parameters are chosen by name: `grad` (the output's
//! gradient), any input of `forward` (which the graph then saves), `<input>_shape:
//! &Shape` (only the shape, which costs nothing), `output` (the saved result) and
//! `needs: [bool; N]` (which inputs need a gradient). Writing backward with
//! differentiable ops, as here, makes the op twice differentiable.
//!
//! ```
//! use autograd::prelude::*;
//!
//! /// `x * x * x`, defined with its derivative.
//! #[differentiable]
//! mod cube {
//!     use autograd::prelude::*;
//!
//!     pub fn forward(x: &Tensor) -> Result<Tensor> {
//!         &(x * x)? * x
//!     }
//!
//!     /// d/dx x³ = 3x²: backward reads `x`, so the graph saves `x` (and nothing else).
//!     pub fn backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
//!         grad * &((x * x)? * 3.0)?
//!     }
//! }
//!
//! fn main() -> Result<()> {
//!     autograd::init()?;
//!     let x = Tensor::scalar(2.0f32).with_requires_grad(true);
//!     let y = cube(&x)?;
//!     y.backward()?;
//!     assert_eq!(y.to_scalar::<f32>()?, 8.0);
//!     assert_eq!(x.grad().unwrap().to_scalar::<f32>()?, 12.0);
//!
//!     // The entry the macro registered, and a finite-difference check of backward.
//!     assert_eq!(autograd::registry()?.get("cube")?.saved_names(), ["x"]);
//!     let x = Tensor::from_slice(&[0.5f64, -1.5, 2.0], [3])?;
//!     let report = autograd::gradcheck(
//!         "cube",
//!         &|xs| cube(&xs[0]),
//!         &[x],
//!         &[true],
//!         &autograd::GradcheckOptions::default(),
//!     )?;
//!     assert!(report.max_abs_error < 1e-6);
//!     Ok(())
//! }
//! ```
//!
//! Non-tensor parameters (an axis, a constant) are the fields of a struct in the
//! module, read through `&self`; they become trailing arguments of the generated
//! function. An input marked `#[no_grad]` (an index, a mask) gets no gradient slot.
//!
//! ```
//! use autograd::prelude::*;
//!
//! /// `x` scaled by a constant `by`.
//! #[differentiable]
//! mod scale_by {
//!     use autograd::prelude::*;
//!
//!     pub struct ScaleBy {
//!         pub by: f64,
//!     }
//!
//!     pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
//!         x * self.by
//!     }
//!
//!     /// Reads neither `x` nor the output: the graph saves nothing for this op.
//!     pub fn backward(&self, grad: &Tensor) -> Result<Tensor> {
//!         grad * self.by
//!     }
//! }
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let x = Tensor::from_slice(&[1.0f32, 2.0], [2])?.with_requires_grad(true);
//! let y = scale_by(&x, 3.0)?;
//! assert_eq!(y.grad_fn().unwrap().saved_bytes(), 0);
//! y.sum_all()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, [3.0, 3.0]);
//! # Ok(())
//! # }
//! ```
//!
//! # Recording
//!
//! A call records a node only when some differentiable input requires grad (a leaf
//! marked with [`Tensor::with_requires_grad`], or a result computed from one) and
//! recording is on; inside [`no_grad`] nothing is recorded. Each result points at
//! the node that produced it ([`Tensor::grad_fn`]), each node at its inputs' nodes,
//! so a graph lives exactly as long as some tensor computed from it.
//! [`ComputationGraph::of`] collects the nodes behind some tensors for inspection,
//! and [`ComputationGraph::to_dot`] draws them with Graphviz.
//!
//! ```
//! use autograd::prelude::*;
//! use autograd::ComputationGraph;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let w = Tensor::ones([2, 3], DType::F32)?.with_requires_grad(true);
//! let x = Tensor::ones([4, 2], DType::F32)?; // a constant: no gradient, no node
//!
//! let y = x.matmul(&w)?.relu()?;
//! assert!(y.requires_grad() && !y.is_leaf());
//! assert_eq!(y.grad_fn().unwrap().op_name(), "relu");
//!
//! let graph = ComputationGraph::of(&[&y]);
//! let names: Vec<_> = graph.nodes().iter().map(|n| n.op_name()).collect();
//! assert_eq!(names, ["matmul", "relu"]);
//! let dot = graph.to_dot_labeled(&[("w", &w)]); // write it out, then `dot -Tsvg`
//! assert!(dot.contains("matmul") && dot.contains("w\\n[2, 3] f32"));
//!
//! let z = no_grad(|| x.matmul(&w))?;
//! assert!(z.grad_fn().is_none() && !z.requires_grad());
//! # Ok(())
//! # }
//! ```
//!
//! # Backward
//!
//! [`Tensor::backward`] on a scalar visits exactly the recorded ancestors of that
//! tensor, each after all its consumers, and accumulates into every leaf that
//! requires grad: gradients add up across uses and across calls until
//! [`Tensor::zero_grad`]. Broadcasting is undone centrally (each gradient is summed
//! to its input's shape). Backward consumes the graph: a second pass through it is
//! an error unless the first passed [`BackwardOptions::retain_graph`].
//!
//! [`grad`] is the functional form: the gradients of an output with respect to
//! chosen tensors, leaving every `.grad()` untouched. With
//! [`BackwardOptions::create_graph`] the backward pass is itself recorded, so a
//! gradient can be differentiated again; here a Hessian-vector product:
//!
//! ```
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let x = Tensor::from_slice(&[1.0f64, 2.0], [2])?.with_requires_grad(true);
//! let y = x.pow_scalar(3.0)?.sum_all()?; // y = Σ x³
//!
//! let keep = BackwardOptions::default().create_graph(true);
//! let g = grad(&y, &[&x], keep)?.remove(0).unwrap(); // 3x², itself recorded
//! assert_eq!(g.to_vec::<f64>()?, [3.0, 12.0]);
//!
//! let v = Tensor::from_slice(&[1.0f64, -1.0], [2])?;
//! let gv = (&g * &v)?.sum_all()?;
//! let hv = grad(&gv, &[&x], BackwardOptions::default())?.remove(0).unwrap();
//! assert_eq!(hv.to_vec::<f64>()?, [6.0, -12.0]); // H v = diag(6x) v
//!
//! y.backward()?; // the first graph was kept by create_graph
//! assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [3.0, 12.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Parameters are updated with [`optim`] (or by hand with [`Tensor::set_data`]).
//! A parameter (a leaf made with `with_requires_grad(true)`) is one tensor however
//! many handles hold it, as in PyTorch: an update through one handle is seen through
//! every clone (a model and its optimizer can each keep one), with the same id and
//! gradient slot. A graph recorded before the update keeps the values it saved: the
//! update never writes into a buffer a recorded graph holds. A handle returned by
//! [`Tensor::grad`] is a snapshot: later backward passes accumulate into a new
//! tensor, so call `grad()` again to read the sum.
//!
//! [`backward_many`] and [`grad_many`] run one pass from several roots, each with
//! its seed. [`Tensor::register_hook`] reads or replaces a tensor's gradient as it
//! flows, and [`Tensor::retain_grad`] keeps an op output's gradient in its
//! `.grad()`. [`functional`] differentiates whole functions ([`functional::vjp`],
//! [`functional::jvp`], [`functional::jacobian`], [`functional::hessian`],
//! [`functional::hvp`]), and [`checkpoint`] trades memory for a second forward pass
//! by recomputing a segment in backward instead of keeping its intermediate results.
//!
//! # Memory
//!
//! A node keeps only what its op's backward declared it reads, only when some input
//! needs a gradient, and only until its backward has run: backward releases each
//! node's saved tensors as soon as it is done with them. Every storage buffer is
//! counted from allocation to its last drop, per device, process-wide
//! ([`memory::stats`]) and per thread ([`memory::thread_stats`]), so what a graph
//! keeps alive is measured: [`NodeRef::saved_bytes`],
//! [`ComputationGraph::saved_bytes`].
//!
//! ```
//! use autograd::prelude::*;
//! use autograd::{ComputationGraph, memory};
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let x = Tensor::ones([1000], DType::F32)?.with_requires_grad(true);
//! let before = memory::thread_stats(Device::Cpu).live_bytes;
//! let loss = {
//!     let y = (&x * &x)?; // mul's backward reads both inputs: saves x (4000 bytes, once)
//!     let z = y.exp()?;   // exp's backward reads its output: saves z (4000 bytes)
//!     z.sum_all()?        // sum_all needs only x's shape: saves nothing
//! };
//! let graph = ComputationGraph::of(&[&loss]);
//! assert_eq!(graph.saved_bytes(), 8000);
//! // Alive beyond x: z (exp's node holds it) and the loss; nothing saved y, so it is gone.
//! assert_eq!(memory::thread_stats(Device::Cpu).live_bytes - before, 4000 + 4);
//!
//! loss.backward()?;
//! assert_eq!(graph.saved_bytes(), 0); // released node by node during backward
//! # Ok(())
//! # }
//! ```
//!
//! # Devices
//!
//! A tensor's storage lives on a [`Device`]: `Device::Cpu`, or `Device::Cuda(n)` for
//! the GPU with ordinal `n`. Constructors ([`Tensor::from_vec`], [`Tensor::zeros`],
//! [`random::Rng`]) create CPU tensors; results live where their inputs live, and
//! ops given inputs on different devices return [`Error::DeviceMismatch`] naming the
//! op rather than copying silently. Memory is counted per device
//! ([`memory::stats`]`(device)`). The CPU backend runs every op (strided loops,
//! `gemm` for matrix products); a CUDA backend plugs in behind the same
//! `BackendStorage` interface of `autograd_kernels`, and asking for a GPU where none
//! is usable is [`Error::CudaUnavailable`], never a crash.
//!
//! ```
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let x = Tensor::zeros([2, 2], DType::F32)?;
//! assert_eq!(x.device(), Device::Cpu);
//! assert_eq!(x.exp()?.device(), Device::Cpu); // results stay where the inputs are
//! assert_eq!(Device::Cuda(0).to_string(), "cuda:0");
//! # Ok(())
//! # }
//! ```
//!
//! # Threads
//!
//! [`Tensor`] is `Send + Sync`: a graph can be built on one thread and differentiated
//! on another, and independent graphs can be built and differentiated on many
//! threads at once. A backward pass claims each recorded node while it holds a
//! pending gradient for it or runs its backward; a second pass that reaches a node
//! claimed by a pass running on another thread fails with
//! [`Error::ConcurrentBackward`] instead of waiting (waiting could deadlock two passes
//! that claimed nodes in opposite orders) and instead of mixing its gradients into
//! the other pass. The failed pass leaves no claim or gradient buffer in the graph,
//! but leaves that it reached before the conflict keep what they accumulated: zero
//! them before trying again. So differentiate a graph, or graphs that share recorded
//! nodes, from one thread at a time (graphs that share only leaves are independent;
//! concurrent passes then accumulate into the shared leaves' `.grad()` in an
//! unspecified order). Forward computation never claims anything: any number of
//! threads can compute with the same tensors.
//!
//! # Finding where a NaN comes from
//!
//! [`anomaly`] mode checks every gradient a backward pass computes and stops at the
//! first NaN or infinity, naming the op and the line of your code that called it:
//!
//! ```
//! use autograd::prelude::*;
//!
//! # fn main() -> Result<()> {
//! autograd::init()?;
//! let x = Tensor::from_slice(&[0.0f64, 4.0], [2])?.with_requires_grad(true);
//! let y = x.sqrt()?.sum_all()?; // d sqrt(x)/dx = 1 / (2 sqrt(x)) is infinite at 0
//! let _anomaly = autograd::anomaly::enable(); // this thread, until dropped
//! let err = y.backward().unwrap_err();
//! assert!(matches!(err, Error::Anomaly { op: "sqrt", .. }));
//! assert!(err.to_string().contains(file!()), "{err}");
//! # Ok(())
//! # }
//! ```
//!
//! # Errors
//!
//! Every fallible call returns [`Result`]; library code does not panic on bad input.
//! An [`Error`] names the op, the shapes, dtypes or devices involved, and what to
//! change. The tensor operators `+ - * /` return `Result<Tensor>` too.
//!
//! # Arithmetic operators
//!
//! `+ - * /` take tensors (`Tensor` or `&Tensor`) and scalars on either side, and a
//! `Result<Tensor>` beside a tensor, so `&a * &b + &c` needs one `?` at the end:
//!
//! | left \ right | `&Tensor`, `Tensor` | `Result<Tensor>` | scalar |
//! |---|---|---|---|
//! | `&Tensor`, `Tensor` | `+ - * /` | `+ - * /` | `+ - * /` |
//! | `Result<Tensor>` | `+ - * /`, `+= -= *= /=` | — | — |
//! | scalar | `+ - * /` | — | |
//!
//! A scalar on the right is any [`Scalar`] (`f64 f32 i32 i64 u32 u64 usize`), on the
//! left an `f64` or an `i32`; it takes the tensor's dtype. Unary `-` applies to
//! tensors. The cells marked — cannot exist: `Result` and the number types belong
//! to `std`, and Rust's orphan rule (E0117) forbids implementing `std`'s operator
//! traits between two foreign types. There, take the `Result` apart first:
//!
//! ```
//! # use autograd::prelude::*;
//! # fn main() -> Result<()> {
//! # autograd::init()?;
//! let x = Tensor::scalar(-4.0f64);
//! let z = ((2.0 * &x)? + 2.0 + &x)?; // micrograd's `2 * x + 2 + x`
//! let mut c = &z * 2; // a Result<Tensor>
//! c += &x; // compound assignment on the Result: keeps the first error
//! assert_eq!(c?.to_scalar::<f64>()?, -24.0);
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

// `#[derive(Module)]` refers to `::autograd`: this lets the layers of `nn` use it too.
extern crate self as autograd;

pub mod amp;
pub mod functional;
pub mod nn;
pub mod optim;

pub use amp::{GradScaler, autocast};

mod io;
pub use io::{LoadOptions, load, load_into, load_into_with, save};

// The crate root shows what a user needs; the ops are under `ops`, and the machinery
// the macro's generated code refers to under the hidden `__private`.
pub use autograd_core::parallel::{num_threads, set_num_threads};
pub use autograd_core::{
    BackwardContext, BackwardOptions, BinaryOp, CheckCase, CheckFn, CheckpointOptions,
    ComputationGraph, DType, Device, Differentiable, Element, Error, GradcheckOptions,
    GradcheckReport, Grads, HookHandle, HostElement, InputSpec, Layout, MAX_CHECKPOINT_INPUTS,
    NoGradGuard, NodeInputRef, NodeRef, OpEntry, OpRegistry, ReduceOp, Result, Scalar, Shape,
    Storage, StorageRef, Tensor, TensorId, UnaryOp, WeakTensor, backward, backward_many, bf16,
    checkpoint, checkpoint_with, enable_grad, f16, grad, grad_if, grad_many, gradcheck,
    gradgradcheck, is_grad_enabled, no_grad, registry, zero_grad,
};
pub use autograd_core::{anomaly, cases, compute, elementwise, fusion, parallel, random, raw};

/// Accounting of tensor storage ([`stats`](memory::stats),
/// [`thread_stats`](memory::thread_stats)) and the thread caches for reuse
/// ([`clear_cpu_cache`](memory::clear_cpu_cache)); see
/// [`autograd_core::memory`]. With the `cuda` feature, also [`trim`](memory::trim).
pub mod memory {
    pub use autograd_core::memory::*;

    /// Returns the memory a CUDA device's pool keeps from freed tensors to the
    /// device (after the work queued so far), for cuBLAS, other libraries and other
    /// processes; an allocation that fails does this by itself, then retries once.
    /// Nothing to do on the CPU (its reuse caches are
    /// [`clear_cpu_cache`]'s). A GPU that is not there is [`Error::CudaUnavailable`](crate::Error::CudaUnavailable).
    #[cfg(feature = "cuda")]
    pub fn trim(device: crate::Device) -> crate::Result<()> {
        use autograd_kernels::KernelError;
        let crate::Device::Cuda(ordinal) = device else {
            return Ok(());
        };
        let dev = autograd_kernels::cuda::device(ordinal).map_err(|e| match e {
            KernelError::CudaUnavailable { ordinal, reason } => {
                crate::Error::CudaUnavailable { ordinal, reason }
            }
            e => crate::Error::from(e),
        })?;
        Ok(autograd_kernels::cuda::memory::trim(&dev)?)
    }
}
pub use autograd_macros::differentiable;
pub use autograd_ops as ops;

#[doc(hidden)]
pub use autograd_core::__private;

/// The code blocks of README.md, compiled and run as doctests so the tour stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// Links the standard op library and checks the op registry (every standard op
/// present, no crate defining a name twice). Call it once before using tensors: programs,
/// tests and benches that skip it may find the registry empty, because a crate that
/// nothing references is not linked.
///
/// Also an error when `AUTOGRAD_NUM_THREADS` is set to something other than a
/// positive whole number.
pub fn init() -> Result<&'static OpRegistry> {
    autograd_core::parallel::check_env()?;
    autograd_ops::init()
}

/// What most programs need: `use autograd::prelude::*;` brings in [`Tensor`], its
/// op methods ([`ops::methods`]), the [`differentiable`] macro, [`Result`] and
/// [`Error`], [`grad`] and [`no_grad`], dtypes, shapes and devices, the
/// random generator [`Rng`](random::Rng), and the optimizers.
pub mod prelude {
    pub use crate::differentiable;
    pub use crate::optim::{Adam, Optimizer, Sgd};
    pub use autograd_core::{
        BackwardOptions, CheckCase, DType, Device, Error, Result, Shape, Tensor, grad, grad_if,
        no_grad, random::Rng,
    };
    pub use autograd_ops::methods::*;
}
