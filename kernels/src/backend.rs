use crate::generated::{ElementwiseKernel, Eval};
use crate::program::{Sink, Step};
use crate::raw::RawLaunch;
use crate::{BinaryOp, DType, Layout, ReduceOp, Result, Shape, UnaryOp};

/// The interface every device backend implements, over its own buffer type.
///
/// Operands come with their layouts; callers (the autograd core) validate shapes and
/// broadcast both operands of a binary op to one shape before calling, so a backend
/// only maps layouts to memory. Results are fresh, contiguous buffers unless the
/// method says it writes into `self` or `dst`.
pub trait BackendStorage: Sized + Send + Sync {
    /// Element type of the buffer.
    fn dtype(&self) -> DType;

    /// Number of elements in the buffer.
    fn len(&self) -> usize;

    /// True when the buffer holds no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `op(x)` for every element of the view `l`, written contiguously.
    fn unary(&self, l: &Layout, op: UnaryOp) -> Result<Self>;

    /// `op(a, b)` elementwise; `l` and `rl` have the same shape (broadcast already).
    fn binary(&self, l: &Layout, rhs: &Self, rl: &Layout, op: BinaryOp) -> Result<Self>;

    /// `self[i] = op(self[i], rhs[i])` in place; `l` is contiguous and `rl` has its shape.
    fn binary_assign(&mut self, l: &Layout, rhs: &Self, rl: &Layout, op: BinaryOp) -> Result<()>;

    /// Reduces the axes listed in `axes` (sorted, unique); the result has the input's
    /// rank with those axes of size 1.
    fn reduce(&self, l: &Layout, op: ReduceOp, axes: &[usize]) -> Result<Self>;

    /// Batched matrix product: `l` is `[batch.., m, k]`, `rl` is `[batch.., k, n]`
    /// (batch axes already broadcast to one shape); the result is `[batch.., m, n]`.
    fn matmul(&self, l: &Layout, rhs: &Self, rl: &Layout) -> Result<Self>;

    /// Copies the view `l` of `self` into the view `dl` of `dst` (same shape), adding
    /// to what is there when `accumulate` is set (duplicate destinations add up).
    fn copy_into(&self, l: &Layout, dst: &mut Self, dl: &Layout, accumulate: bool) -> Result<()>;

    /// A contiguous copy of the view `l` converted to `dtype`.
    fn cast(&self, l: &Layout, dtype: DType) -> Result<Self>;

    /// A fresh buffer of `len` elements, all `value`, on the same device as `self`.
    fn filled_like(&self, len: usize, dtype: DType, value: f64) -> Result<Self>;

    /// Runs a generated elementwise op's `kernel` (its value or a derivative, as
    /// `what` says) over `ins`, each operand's buffer with its layout broadcast to
    /// `shape`; the result is contiguous.
    fn run_elementwise<K: ElementwiseKernel>(
        kernel: &K,
        what: Eval<'_>,
        ins: &[(&Self, &Layout)],
        shape: &Shape,
    ) -> Result<Self>;

    /// Runs the elementwise program `steps` (in dependency order) over `n` elements
    /// of `dtype` in one pass: `leaves[k]` is leaf `k`'s buffer with its layout
    /// broadcast to the output's shape, and result `k` is step `outputs[k].0`'s
    /// values, stored or summed as `outputs[k].1` says.
    fn run_fused(
        steps: &[Step],
        leaves: &[(&Self, &Layout)],
        n: usize,
        dtype: DType,
        outputs: &[(usize, Sink)],
    ) -> Result<Vec<Self>>;

    /// Whether this device runs a program of `steps` over `leaves` leaves with
    /// `results` results as one pass ([`Self::run_fused`]). The default, for a
    /// device whose loop takes any program: yes.
    fn fused_fits(steps: &[Step], leaves: usize, results: usize) -> bool {
        let _ = (steps, leaves, results);
        true
    }

    /// Launches a raw CUDA program's entry point over `ins` (zero-copy: each
    /// buffer with its view) and returns one new buffer per shape of `outs`. A
    /// device that runs no CUDA program (the CPU) returns an error saying so.
    ///
    /// # Safety
    /// As `CudaStorage::run_raw`: the entry points read only inside the inputs'
    /// views, write every element of every output and nothing else, and run
    /// correctly with the launch configuration given.
    unsafe fn run_raw(
        launch: &RawLaunch<'_>,
        ins: &[(&Self, &Layout)],
        outs: &[Shape],
    ) -> Result<Vec<Self>>;
}
