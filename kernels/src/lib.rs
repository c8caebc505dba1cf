//! Compute kernels behind one backend interface.
//!
//! This crate knows nothing about autograd: it moves numbers. A tensor here is a
//! storage (a flat buffer on some device) plus a [`Layout`] (shape, strides and
//! offset), and every kernel takes its operands' layouts so that views
//! (transposes, broadcasts, slices) never need a copy before they are read.
//!
//! [`BackendStorage`] is the interface each device implements; [`cpu::CpuStorage`]
//! is the CPU backend (strided loops with contiguous fast paths that the compiler
//! vectorises, and the `gemm` crate for matrix products).

#![warn(missing_docs)]

mod backend;
mod check;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod dtype;
mod error;
pub mod generated;
mod layout;
pub mod math;
mod op;
pub mod parallel;
pub mod program;
pub mod raw;
pub mod real;
mod shape;
mod walk;

pub use backend::BackendStorage;
pub use dtype::{DType, Element, HostElement};
pub use error::{KernelError, Result};
pub use half::{bf16, f16};
pub use layout::Layout;
pub use op::{BinaryOp, ReduceOp, UnaryOp};
pub use shape::{Shape, broadcast_shapes};
