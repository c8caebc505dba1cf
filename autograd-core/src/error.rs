use crate::{DType, Device, Shape};
use autograd_kernels::KernelError;

/// Every way an autograd call can fail. Messages name the op, the shapes or devices
/// involved, and what to change.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes that an elementwise op must broadcast together do not.
    #[error(
        "`{op}`: shapes {lhs} and {rhs} cannot be broadcast together (aligned from the last axis, \
         each pair of sizes must be equal or one of them 1); reshape or unsqueeze one operand"
    )]
    Broadcast {
        /// The op that failed.
        op: &'static str,
        /// The first operand's shape.
        lhs: Shape,
        /// The second operand's shape.
        rhs: Shape,
    },

    /// Shapes that do not fit the op, with the op's own explanation.
    #[error("`{op}`: {msg}")]
    Shape {
        /// The op that failed.
        op: &'static str,
        /// What is wrong with the shapes, and what the op expects.
        msg: String,
    },

    /// An axis argument outside `-rank..rank`.
    #[error("`{op}`: axis {axis} is out of range for a tensor of shape {shape} (valid axes are {lo}..={hi})", lo = -(*rank as isize), hi = *rank as isize - 1)]
    AxisOutOfRange {
        /// The op that failed.
        op: &'static str,
        /// The axis as given (negative counts from the end).
        axis: isize,
        /// Rank of the tensor the axis was meant for.
        rank: usize,
        /// Shape of that tensor.
        shape: Shape,
    },

    /// Operands of different element types.
    #[error(
        "`{op}`: dtype mismatch, {lhs} and {rhs}; give both operands one dtype (`compute::cast` \
         converts a tensor, outside the graph)"
    )]
    DTypeMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first operand's dtype.
        lhs: DType,
        /// The second operand's dtype.
        rhs: DType,
    },

    /// Operands on different devices.
    #[error(
        "`{op}`: operands live on different devices, {lhs} and {rhs}; move one with `.to_device(..)`"
    )]
    DeviceMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first operand's device.
        lhs: Device,
        /// The second operand's device.
        rhs: Device,
    },

    /// An argument that is not valid for the op (a bad index, a data length that does not match a shape).
    #[error("`{op}`: {msg}")]
    InvalidArgument {
        /// The op that failed.
        op: &'static str,
        /// Which argument is wrong, and what would be valid.
        msg: String,
    },

    /// `registry().get(name)` for a name nobody registered.
    #[error("unknown op `{name}`; registered ops are: {known}")]
    UnknownOp {
        /// The name asked for.
        name: String,
        /// The registered names, comma-separated (or a hint when there are none).
        known: String,
    },

    /// `registry().get(name)` with a short name that several crates define.
    #[error(
        "op name `{name}` is defined by several crates: {candidates}; ask for one by its full name"
    )]
    AmbiguousOp {
        /// The short name asked for.
        name: String,
        /// The full names (`crate::name`) that have it, comma-separated.
        candidates: String,
    },

    /// Two registered ops share a full name: one crate defines the name twice.
    #[error(
        "op name `{name}` is registered twice, by `{first}` and by `{second}`; rename one with #[differentiable(name = \"...\")]"
    )]
    DuplicateOp {
        /// The name registered twice.
        name: &'static str,
        /// Module path of one definition.
        first: &'static str,
        /// Module path of the other definition.
        second: &'static str,
    },

    /// The op registry holds nothing: no crate defining ops is linked.
    #[error(
        "the op registry is empty: no crate defining ops with #[differentiable] is linked; call \
         `autograd::init()` (or reference your op crate) before using the registry"
    )]
    EmptyRegistry,

    /// Standard ops are missing from the registry: the op library was not fully linked.
    #[error(
        "the op registry lacks standard ops {missing:?}: the op library was not fully linked; \
         call `autograd::init()` at start-up"
    )]
    MissingStandardOps {
        /// The names not registered.
        missing: Vec<&'static str>,
    },

    /// An op called (through the registry or `ComputationGraph::record`) with the
    /// wrong number of tensor inputs.
    #[error("`{op}` takes {expected} tensor input{s}, got {got}", s = if *expected == 1 { "" } else { "s" })]
    Arity {
        /// The op.
        op: &'static str,
        /// Its number of tensor inputs.
        expected: usize,
        /// The number given.
        got: usize,
    },

    /// An op's backward returned a number of gradients other than its inputs'.
    #[error(
        "backward of `{op}` returned {got} gradients for {expected} inputs; fix the op's backward"
    )]
    GradientCount {
        /// The op whose backward is wrong.
        op: &'static str,
        /// Its number of tensor inputs.
        expected: usize,
        /// The number of gradients returned.
        got: usize,
    },

    /// An op's backward returned a gradient of another dtype or device than its input.
    #[error(
        "backward of `{op}` returned a {got_dtype} gradient on {got_device} for input {input}, \
         which is {dtype} on {device}; fix the op's backward"
    )]
    GradientKind {
        /// The op whose backward is wrong.
        op: &'static str,
        /// Position of the input among the op's tensor inputs (from 0).
        input: usize,
        /// The input's dtype.
        dtype: DType,
        /// The input's device.
        device: Device,
        /// The gradient's dtype.
        got_dtype: DType,
        /// The gradient's device.
        got_device: Device,
    },

    /// A backward read a tensor its node did not save (a hand-written
    /// `Differentiable` impl whose entry's saved flags do not match what it reads).
    #[error(
        "backward of `{op}` reads {what}, which the graph did not save; declare it as a \
         parameter of backward (the macro then saves it)"
    )]
    NotSaved {
        /// The op whose backward read it.
        op: &'static str,
        /// `input N` or `the output`.
        what: String,
    },

    /// A backward read a tensor it had already taken (`BackwardContext::take_grad`,
    /// `take_input`, `take_output` hand each over once).
    #[error(
        "backward of `{op}` reads {what} after taking it (a `take_*` method hands it over \
         once); read it before taking it, or keep the taken tensor"
    )]
    Taken {
        /// The op whose backward read it.
        op: &'static str,
        /// `the gradient`, `input N` or `the output`.
        what: String,
    },

    /// `backward()` on a tensor with more than one element and no seed gradient.
    #[error(
        "backward from a tensor of shape {shape} needs a seed gradient of that shape: reduce it to a \
         scalar first (e.g. `.sum_all()`), or pass one with `BackwardOptions::seed`"
    )]
    NonScalarRoot {
        /// Shape of the tensor backward was called on.
        shape: Shape,
    },

    /// `backward()` on a tensor that does not require grad.
    #[error(
        "backward from a tensor that does not require grad: no input of the computation that produced it \
         requires grad (mark a leaf with `.with_requires_grad(true)`), or it was computed under `no_grad`"
    )]
    NoGradRoot,

    /// A seed gradient that does not match the root.
    #[error(
        "the seed gradient has shape {seed} ({seed_dtype}) but the tensor backward starts from has shape {root} ({root_dtype})"
    )]
    SeedMismatch {
        /// Shape of the seed gradient given.
        seed: Shape,
        /// Shape of the tensor backward starts from.
        root: Shape,
        /// Dtype of the seed gradient given.
        seed_dtype: DType,
        /// Dtype of the tensor backward starts from.
        root_dtype: DType,
    },

    /// A second backward through a graph whose saved tensors were already released.
    #[error(
        "backward through `{op}` a second time: the first backward released this graph's saved tensors; \
         pass `BackwardOptions::retain_graph(true)` to the first backward, or recompute the forward pass"
    )]
    GraphConsumed {
        /// The first op reached whose saved tensors are gone.
        op: &'static str,
    },

    /// Two threads ran backward through the same recorded node at the same time.
    #[error(
        "`{op}`: another backward pass is running through this node on another thread; a graph is differentiated by one thread at a time"
    )]
    ConcurrentBackward {
        /// The op of the node both passes reached.
        op: &'static str,
    },

    /// A backward pass started, on the same thread, from inside another backward
    /// pass through the same graph (e.g. an op's backward or a hook calling
    /// `backward()` on a tensor of the graph being differentiated).
    #[error(
        "`{op}`: backward was called again from inside a backward pass through this node (on the same \
         thread); differentiate the graph once the running pass has returned"
    )]
    ReentrantBackward {
        /// The op of the node both passes reached.
        op: &'static str,
    },

    /// An op's backward returned a gradient that does not fit its input.
    #[error(
        "backward of `{op}` returned a gradient of shape {got} for input {input} of shape {expected} \
         (the op's output has shape {output}); a gradient has its input's shape, or the output's \
         shape where the input was broadcast; fix the op's backward"
    )]
    BadGradient {
        /// The op whose backward is wrong.
        op: &'static str,
        /// Position of the input among the op's tensor inputs (from 0).
        input: usize,
        /// The input's shape, which the gradient must have or reduce to by summing
        /// over the axes broadcasting added to the output.
        expected: Shape,
        /// The shape backward returned.
        got: Shape,
        /// The shape of the op's output (boxed: keeps `Error` small).
        output: Box<Shape>,
    },

    /// A gradient recorded under `create_graph` was computed by a backward that does
    /// not record its own computation, so it cannot be differentiated again.
    #[error(
        "backward of `{op}` is not differentiable: under `create_graph` its gradient was computed \
         without recorded ops (e.g. with `compute::` functions), so the second derivative would be \
         silently wrong; write the op's backward with recorded ops (the generated op functions, \
         operators, `TensorExt` methods)"
    )]
    NotDifferentiable {
        /// The op whose backward is not recorded.
        op: &'static str,
    },

    /// A derivative of an op generated from an elementwise function was asked for
    /// beyond the order its kernels are generated for.
    #[error(
        "`{op}`: derivatives up to order {max} are generated from its elementwise function, and \
         this backward asks for one more; write an explicit backward for higher orders"
    )]
    DerivativeOrder {
        /// The generated op.
        op: &'static str,
        /// The highest order generated.
        max: usize,
    },

    /// `grad()` asked for the gradient of a tensor the output does not depend on.
    #[error(
        "grad: input {index} (shape {shape}) {why}, so the output has no gradient with respect \
         to it; pass `BackwardOptions::allow_unused(true)` to get `None` for such inputs"
    )]
    UnusedInput {
        /// Position of the input among those `grad()` was given (from 0).
        index: usize,
        /// Its shape.
        shape: Shape,
        /// Why it takes no part: it does not require grad, or the output was not
        /// computed from it.
        why: &'static str,
    },

    /// A gradient check that would compare nothing.
    #[error("gradcheck of `{what}` checks nothing: {why}")]
    NothingChecked {
        /// The label of the function checked.
        what: String,
        /// What is missing.
        why: String,
    },

    /// Gradient check found backward disagreeing with finite differences.
    #[error(
        "gradcheck of `{what}` failed at input {input}, element {index}: backward gives {analytic:.6e}, finite differences give {numeric:.6e}"
    )]
    GradcheckFailed {
        /// The label of the function checked.
        what: String,
        /// Position of the input among the function's inputs (from 0).
        input: usize,
        /// Row-major index of the element within that input.
        index: usize,
        /// The derivative backward computed.
        analytic: f64,
        /// The derivative by central finite differences.
        numeric: f64,
    },

    /// Anomaly mode found a NaN or infinity in a gradient.
    #[error(
        "anomaly: backward of `{op}` (recorded at {location}) produced {what} in the gradient of input {input}"
    )]
    Anomaly {
        /// The op whose backward produced the value.
        op: &'static str,
        /// Source location (`file:line:column`) of the op call that recorded the node.
        location: String,
        /// Position of the input among the op's tensor inputs (from 0).
        input: usize,
        /// `"NaN"` or `"infinity"`.
        what: &'static str,
    },

    /// A CUDA device was asked for where none can be used.
    #[error("CUDA device {ordinal} is unavailable: {reason}")]
    CudaUnavailable {
        /// The CUDA device index asked for.
        ordinal: usize,
        /// Why it cannot be used, as the driver or loader said.
        reason: String,
    },

    /// An error raised inside an op's forward or backward, with the op named. The
    /// error itself is its [`source`](std::error::Error::source) (and is shown too).
    #[error("in `{op}`: {source}")]
    InOp {
        /// The op in which the error happened.
        op: &'static str,
        /// The error itself.
        #[source]
        source: Box<Error>,
    },

    /// The buffer of a result could not be allocated: the machine (or the device)
    /// does not have the memory, or refused to give it.
    #[error(
        "`{op}`: out of memory: a {dtype} tensor of shape {shape} needs {bytes} bytes on \
         {device}, which could not be allocated; use smaller shapes (a smaller batch, fewer \
         or smaller axes), free tensors that are no longer needed, or use a device with more \
         memory"
    )]
    OutOfMemory {
        /// The op whose result could not be allocated.
        op: &'static str,
        /// The shape of that result.
        shape: Shape,
        /// Its element type.
        dtype: DType,
        /// The device it was to live on.
        device: Device,
        /// The bytes asked for (`usize::MAX` when that number overflows).
        bytes: usize,
    },

    /// A tensor file could not be read or written, or its contents are not what
    /// was asked for (not a safetensors file, truncated, an unsupported dtype, a
    /// missing name, or a shape or dtype other than the target's).
    #[error("`{path}`: {msg}")]
    File {
        /// The file.
        path: String,
        /// What went wrong, and what to do.
        msg: String,
    },

    /// A kernel failed (driver errors on a device).
    #[error("kernel error: {0}")]
    Kernel(#[source] KernelError),
}

/// A kernel error as an autograd error: an invalid argument of a layout or shape
/// function stays an [`Error::InvalidArgument`] naming that function; the rest is
/// [`Error::Kernel`] (calls that know the result they were building turn an
/// allocation failure into [`Error::OutOfMemory`] instead, see
/// `Error::from_kernel`).
impl From<KernelError> for Error {
    fn from(e: KernelError) -> Error {
        match e {
            KernelError::InvalidArgument { op, msg } => Error::InvalidArgument { op, msg },
            e => Error::Kernel(e),
        }
    }
}

impl Error {
    /// Wraps `self` with the name of the op it happened in, unless it already names it.
    pub fn in_op(self, op: &'static str) -> Error {
        if self.op() == Some(op) {
            return self;
        }
        Error::InOp {
            op,
            source: Box::new(self),
        }
    }

    /// The op this error names first, if any.
    pub fn op(&self) -> Option<&'static str> {
        match self {
            Error::Broadcast { op, .. }
            | Error::Shape { op, .. }
            | Error::AxisOutOfRange { op, .. }
            | Error::DTypeMismatch { op, .. }
            | Error::DeviceMismatch { op, .. }
            | Error::InvalidArgument { op, .. }
            | Error::GraphConsumed { op }
            | Error::ConcurrentBackward { op }
            | Error::ReentrantBackward { op }
            | Error::NotDifferentiable { op }
            | Error::DerivativeOrder { op, .. }
            | Error::Arity { op, .. }
            | Error::GradientCount { op, .. }
            | Error::GradientKind { op, .. }
            | Error::NotSaved { op, .. }
            | Error::Taken { op, .. }
            | Error::BadGradient { op, .. }
            | Error::Anomaly { op, .. }
            | Error::OutOfMemory { op, .. }
            | Error::InOp { op, .. } => Some(op),
            _ => None,
        }
    }

    /// `e`, from a backend call of `op` that was to produce a `dtype` tensor of
    /// `shape` on `device`: an allocation failure becomes [`Error::OutOfMemory`]
    /// naming all of them; any other error converts as `?` converts it.
    pub(crate) fn from_kernel(
        e: KernelError,
        op: &'static str,
        shape: &Shape,
        dtype: DType,
        device: Device,
    ) -> Error {
        match e {
            KernelError::OutOfMemory { bytes } => Error::OutOfMemory {
                op,
                shape: shape.clone(),
                dtype,
                device,
                bytes,
            },
            e => e.into(),
        }
    }

    /// The innermost autograd error of the [`source`](std::error::Error::source)
    /// chain (through [`Error::InOp`] wrappers).
    pub fn root_cause(&self) -> &Error {
        let mut e = self;
        while let Some(source) = std::error::Error::source(e) {
            // `InOp` holds its error boxed, and shows it as the box.
            match source.downcast_ref::<Box<Error>>() {
                Some(inner) => e = inner,
                None => match source.downcast_ref::<Error>() {
                    Some(inner) => e = inner,
                    None => break,
                },
            }
        }
        e
    }
}

/// Result of every fallible autograd call.
pub type Result<T, E = Error> = std::result::Result<T, E>;
