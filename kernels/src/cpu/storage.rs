//! The CPU's storage: a buffer of `f32` or `f64` elements, and the conversion
//! between it and typed `Vec`s. Apart from the kernels (the rest of `cpu`), so
//! that what names the type (the generated ops' interface) does not depend on
//! them.

use crate::{DType, Element};

/// A CPU buffer of one element type.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
}

/// Conversion between a typed `Vec` and [`CpuStorage`].
pub trait CpuElement: Element {
    /// Moves `v` into a storage of this element type (no copy).
    fn wrap(v: Vec<Self>) -> CpuStorage;
    /// The elements, or `None` when `s` holds another element type.
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    /// The element vector, mutably, or `None` when `s` holds another element type.
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut Vec<Self>>;
}

impl CpuElement for f32 {
    fn wrap(v: Vec<Self>) -> CpuStorage {
        CpuStorage::F32(v)
    }
    fn slice(s: &CpuStorage) -> Option<&[Self]> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut Vec<Self>> {
        match s {
            CpuStorage::F32(v) => Some(v),
            _ => None,
        }
    }
}

impl CpuElement for f64 {
    fn wrap(v: Vec<Self>) -> CpuStorage {
        CpuStorage::F64(v)
    }
    fn slice(s: &CpuStorage) -> Option<&[Self]> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut Vec<Self>> {
        match s {
            CpuStorage::F64(v) => Some(v),
            _ => None,
        }
    }
}

impl CpuStorage {
    /// Element type of the buffer.
    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
        }
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        match self {
            CpuStorage::F32(v) => v.len(),
            CpuStorage::F64(v) => v.len(),
        }
    }

    /// True when the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer as a typed slice, if it holds `T`.
    pub fn as_slice<T: CpuElement>(&self) -> Option<&[T]> {
        T::slice(self)
    }
}
