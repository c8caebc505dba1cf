//! The CPU's storage: a buffer of one element type per [`DType`], and the
//! conversion between it and typed `Vec`s. Apart from the kernels (the rest of
//! `cpu`), so that what names the type (the generated ops' interface) does not
//! depend on them.

use crate::{DType, HostElement};
use half::{bf16, f16};

/// A CPU buffer of one element type.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    /// `bool` elements.
    Bool(Vec<bool>),
    /// `u8` elements.
    U8(Vec<u8>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `f16` elements.
    F16(Vec<f16>),
    /// `bf16` elements.
    BF16(Vec<bf16>),
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
}

/// Conversion between a typed `Vec` and [`CpuStorage`]: every [`HostElement`].
pub trait CpuElement: HostElement {
    /// Moves `v` into a storage of this element type (no copy).
    fn wrap(v: Vec<Self>) -> CpuStorage;
    /// The elements, or `None` when `s` holds another element type.
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    /// The element vector, mutably, or `None` when `s` holds another element type.
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut Vec<Self>>;
}

macro_rules! impl_cpu_element {
    ($($t:ty => $v:ident),*) => {$(
        impl CpuElement for $t {
            fn wrap(v: Vec<Self>) -> CpuStorage {
                CpuStorage::$v(v)
            }
            fn slice(s: &CpuStorage) -> Option<&[Self]> {
                match s {
                    CpuStorage::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(s: &mut CpuStorage) -> Option<&mut Vec<Self>> {
                match s {
                    CpuStorage::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}
impl_cpu_element!(bool => Bool, u8 => U8, i32 => I32, i64 => I64, f16 => F16, bf16 => BF16,
    f32 => F32, f64 => F64);

/// `$body` with `$v` bound to the typed `Vec` of `$s` (a `CpuStorage`, by
/// reference) whatever its element type: one monomorphic copy per dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_cpu_vec {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            $crate::cpu::CpuStorage::Bool($v) => $body,
            $crate::cpu::CpuStorage::U8($v) => $body,
            $crate::cpu::CpuStorage::I32($v) => $body,
            $crate::cpu::CpuStorage::I64($v) => $body,
            $crate::cpu::CpuStorage::F16($v) => $body,
            $crate::cpu::CpuStorage::BF16($v) => $body,
            $crate::cpu::CpuStorage::F32($v) => $body,
            $crate::cpu::CpuStorage::F64($v) => $body,
        }
    };
}

/// `$body` with the type `$T` bound to `$dtype`'s Rust type.
#[macro_export]
#[doc(hidden)]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::F16 => {
                type $T = $crate::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $T = $crate::bf16;
                $body
            }
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

impl CpuStorage {
    /// Element type of the buffer.
    pub fn dtype(&self) -> DType {
        match self {
            CpuStorage::Bool(_) => DType::Bool,
            CpuStorage::U8(_) => DType::U8,
            CpuStorage::I32(_) => DType::I32,
            CpuStorage::I64(_) => DType::I64,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
        }
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        crate::with_cpu_vec!(self, v => v.len())
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
