use crate::{BinaryOp, DType, Layout, ReduceOp, Result, UnaryOp};

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
}
