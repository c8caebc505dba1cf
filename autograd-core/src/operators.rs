//! Arithmetic operators on tensors (`&a * &b`, `x + 1.0`, `-x`).
//!
//! The ops behind them are defined in the standard op library, which depends on
//! this crate; it registers them here through `inventory` as one [`StdOps`] table.
//! Operators return `Result<Tensor>` (shapes may not broadcast), and accept a
//! `Result<Tensor>` on the left so that `&a * &b + &c` chains, with one `?` at the end.

use crate::op::CallerGuard;
use crate::{Error, Result, Shape, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::panic::Location;
use std::sync::OnceLock;

/// The standard ops the operators and the engine need, registered once by the
/// standard op library.
pub struct StdOps {
    /// Recorded `add` (broadcasting): `a + b`.
    pub add: fn(&Tensor, &Tensor) -> Result<Tensor>,
    /// Recorded `sub` (broadcasting): `a - b`.
    pub sub: fn(&Tensor, &Tensor) -> Result<Tensor>,
    /// Recorded `mul` (broadcasting): `a * b`.
    pub mul: fn(&Tensor, &Tensor) -> Result<Tensor>,
    /// Recorded `div` (broadcasting): `a / b`.
    pub div: fn(&Tensor, &Tensor) -> Result<Tensor>,
    /// Recorded `neg`: `-a`.
    pub neg: fn(&Tensor) -> Result<Tensor>,
    /// Recorded `add_scalar`: `a + c` and `a - c` with a constant.
    pub add_scalar: fn(&Tensor, f64) -> Result<Tensor>,
    /// Recorded `mul_scalar`: `a * c` with a constant.
    pub mul_scalar: fn(&Tensor, f64) -> Result<Tensor>,
    /// Recorded `div_scalar`: `a / c` with a constant.
    pub div_scalar: fn(&Tensor, f64) -> Result<Tensor>,
    /// Recorded `sum_to_shape`, used by the engine when the backward pass is recorded.
    pub sum_to_shape: fn(&Tensor, &Shape) -> Result<Tensor>,
}

inventory::collect!(StdOps);

/// The registered standard ops, or an error saying how to link them.
pub fn std_ops() -> Result<&'static StdOps> {
    static OPS: OnceLock<Option<&'static StdOps>> = OnceLock::new();
    OPS.get_or_init(|| {
        let mut it = inventory::iter::<StdOps>.into_iter();
        let first = it.next();
        if it.next().is_some() {
            return None;
        }
        first
    })
    .ok_or_else(|| {
        Error::Registry(
            "the standard op library is not linked (or linked twice): depend on the `autograd` crate \
             and call `autograd::init()` before using tensor operators"
                .into(),
        )
    })
}

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $field:ident, $scalar:expr) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(self, rhs)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(self, &rhs)
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(&self, rhs)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(&self, &rhs)
            }
        }
        impl $trait<&Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(&self?, rhs)
            }
        }
        impl $trait<Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(&self?, &rhs)
            }
        }
        impl $trait<Result<Tensor>> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Result<Tensor>) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(self, &rhs?)
            }
        }
        impl $trait<Result<Tensor>> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Result<Tensor>) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                (std_ops()?.$field)(&self, &rhs?)
            }
        }
        impl $trait<f64> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: f64) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                let f: fn(&Tensor, f64) -> Result<Tensor> = $scalar;
                f(self, rhs)
            }
        }
        impl $trait<f64> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: f64) -> Result<Tensor> {
                let _at = CallerGuard::set(Location::caller());
                let f: fn(&Tensor, f64) -> Result<Tensor> = $scalar;
                f(&self, rhs)
            }
        }
    };
}

binary_operator!(Add, add, add, |x, s| (std_ops()?.add_scalar)(x, s));
binary_operator!(Sub, sub, sub, |x, s| (std_ops()?.add_scalar)(x, -s));
binary_operator!(Mul, mul, mul, |x, s| (std_ops()?.mul_scalar)(x, s));
binary_operator!(Div, div, div, |x, s| (std_ops()?.div_scalar)(x, s));

impl Add<&Tensor> for f64 {
    type Output = Result<Tensor>;
    #[track_caller]
    fn add(self, rhs: &Tensor) -> Result<Tensor> {
        let _at = CallerGuard::set(Location::caller());
        (std_ops()?.add_scalar)(rhs, self)
    }
}

impl Mul<&Tensor> for f64 {
    type Output = Result<Tensor>;
    #[track_caller]
    fn mul(self, rhs: &Tensor) -> Result<Tensor> {
        let _at = CallerGuard::set(Location::caller());
        (std_ops()?.mul_scalar)(rhs, self)
    }
}

impl Sub<&Tensor> for f64 {
    type Output = Result<Tensor>;
    #[track_caller]
    fn sub(self, rhs: &Tensor) -> Result<Tensor> {
        let ops = std_ops()?;
        let negated = {
            let _at = CallerGuard::set(Location::caller());
            (ops.neg)(rhs)?
        };
        let _at = CallerGuard::set(Location::caller());
        (ops.add_scalar)(&negated, self)
    }
}

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    #[track_caller]
    fn neg(self) -> Result<Tensor> {
        let _at = CallerGuard::set(Location::caller());
        (std_ops()?.neg)(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    #[track_caller]
    fn neg(self) -> Result<Tensor> {
        let _at = CallerGuard::set(Location::caller());
        (std_ops()?.neg)(&self)
    }
}
