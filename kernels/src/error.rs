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
