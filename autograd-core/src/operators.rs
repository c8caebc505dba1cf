//! Arithmetic operators on tensors (`&a * &b`, `x + 1.0`, `-x`).
//!
//! Each calls its primitive op ([`crate::primitives`]) directly, so the op records
//! the line where the user wrote the operator (`#[track_caller]` all the way down).
//! Operators return `Result<Tensor>` (shapes may not broadcast), and accept a
//! `Result<Tensor>` on the left so that `&a * &b + &c` chains, with one `?` at the end.

use crate::primitives::{add, add_scalar, div, div_scalar, mul, mul_scalar, neg, sub};
use crate::{Result, Tensor};
use std::ops::{Add, Div, Mul, Neg, Sub};

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:ident, |$x:ident, $s:ident| $scalar:expr) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                $op(self, rhs)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                $op(self, &rhs)
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                $op(&self, rhs)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                $op(&self, &rhs)
            }
        }
        impl $trait<&Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                $op(&self?, rhs)
            }
        }
        impl $trait<Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                $op(&self?, &rhs)
            }
        }
        impl $trait<Result<Tensor>> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Result<Tensor>) -> Result<Tensor> {
                $op(self, &rhs?)
            }
        }
        impl $trait<Result<Tensor>> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, rhs: Result<Tensor>) -> Result<Tensor> {
                $op(&self, &rhs?)
            }
        }
        impl $trait<f64> for &Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, $s: f64) -> Result<Tensor> {
                let $x = self;
                $scalar
            }
        }
        impl $trait<f64> for Tensor {
            type Output = Result<Tensor>;
            #[track_caller]
            fn $method(self, $s: f64) -> Result<Tensor> {
                let $x = &self;
                $scalar
            }
        }
    };
}

binary_operator!(Add, add, add, |x, s| add_scalar(x, s));
binary_operator!(Sub, sub, sub, |x, s| add_scalar(x, -s));
binary_operator!(Mul, mul, mul, |x, s| mul_scalar(x, s));
binary_operator!(Div, div, div, |x, s| div_scalar(x, s));

impl Add<&Tensor> for f64 {
    type Output = Result<Tensor>;
    #[track_caller]
    fn add(self, rhs: &Tensor) -> Result<Tensor> {
        add_scalar(rhs, self)
    }
}

impl Mul<&Tensor> for f64 {
    type Output = Result<Tensor>;
    #[track_caller]
    fn mul(self, rhs: &Tensor) -> Result<Tensor> {
        mul_scalar(rhs, self)
    }
}

impl Sub<&Tensor> for f64 {
    type Output = Result<Tensor>;
    #[track_caller]
    fn sub(self, rhs: &Tensor) -> Result<Tensor> {
        add_scalar(&neg(rhs)?, self)
    }
}

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    #[track_caller]
    fn neg(self) -> Result<Tensor> {
        neg(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    #[track_caller]
    fn neg(self) -> Result<Tensor> {
        neg(&self)
    }
}
