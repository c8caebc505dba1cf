/// What a kernel can fail with. Shapes are validated by the caller before a kernel
/// runs, so on the CPU these are rare; device backends report driver errors here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// The operands of one kernel call have different element types.
    #[error("dtype mismatch: {lhs:?} and {rhs:?}")]
    DTypeMismatch {
        /// The first operand's element type.
        lhs: crate::DType,
        /// The second operand's element type.
        rhs: crate::DType,
    },
    /// The kernel was handed layouts that do not fit together or the buffer.
    #[error("invalid layout: {0}")]
    Layout(String),
    /// A broken internal invariant: a program or launch the library built itself is
    /// malformed. Never the caller's mistake; please report it.
    #[error("internal error (a bug in autograd; please report it): {0}")]
    Internal(String),
    /// An argument of a layout or shape function that does not fit the layout or
    /// shape (an axis out of range, strides of another rank, a range past the end).
    #[error("`{op}`: {msg}")]
    InvalidArgument {
        /// The function that refused the argument (`Layout::transpose`, ...).
        op: &'static str,
        /// What is wrong, and what would be valid.
        msg: String,
    },
    /// The allocator could not provide a buffer (or its size in bytes overflows).
    #[error(
        "out of memory: a buffer of {bytes} bytes could not be allocated; use smaller tensors \
         or free some"
    )]
    OutOfMemory {
        /// Bytes asked for (`usize::MAX` when the size in bytes overflows).
        bytes: usize,
    },
    /// A device runtime (driver, compiler, BLAS) reported an error.
    #[error("{0}")]
    Device(String),
    /// A CUDA device was asked for where none can be used (no driver, no GPU, no
    /// such ordinal, a missing CUDA library, or CUDA support not compiled in).
    #[error("CUDA device {ordinal} is unavailable: {reason}")]
    CudaUnavailable {
        /// The CUDA device index asked for.
        ordinal: usize,
        /// Why it cannot be used, as the driver or loader said.
        reason: String,
    },
}

/// Result of a kernel call.
pub type Result<T> = std::result::Result<T, KernelError>;
