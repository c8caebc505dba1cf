//! Elementwise math written so that loops over slices vectorise.
//!
//! `std`'s `f32::exp`, `f64::ln` and the like are calls into the C math library:
//! a loop `for i in 0..n { out[i] = f(x[i]) }` that calls one of them runs one
//! element at a time. The functions here compute the same values with arithmetic,
//! comparisons, selects and integer operations on the bits only (no call, no branch
//! that depends on the value, no table lookup), so that LLVM's loop vectoriser turns
//! such a loop into packed SSE2 instructions on the baseline x86-64 target, and into
//! AVX2 ones in a copy of the loop compiled with `#[target_feature(enable = "avx2")]`.
//! Every function is `#[inline(always)]`: it is meant to be inlined into the loop.
//!
//! The two modules [`f32`](mod@self::f32) and [`f64`](mod@self::f64) hold the same functions for each precision.
//! Each method follows Cephes / fdlibm / SLEEF: an exact (Cody-Waite) range reduction
//! and a polynomial fitted on the reduced range (the coefficients are Chebyshev fits
//! computed with `mpmath`; `exp` and `exp_m1` share one polynomial). Each function's
//! documentation states its measured maximum error in ulps against `std` (or the
//! `libm` crate for `erf`, which `std` lacks) and the domain it was measured on; the
//! test `kernels/tests/math_ulps.rs` checks these bounds and that the special values
//! (±0, ±∞, NaN, subnormals, overflow and underflow thresholds) give exactly what
//! `std` gives.
//!
//! What is avoided and why:
//!
//! * `mul_add`: on baseline x86-64 it is a call to `fma`/`fmaf`. Polynomials are
//!   evaluated with Horner's rule as `a * b + c` (LLVM does not fuse these, so the
//!   results are the same with and without the `fma` target feature).
//! * `round`, `floor`, `trunc`: calls without SSE4.1. Rounding to an integer uses the
//!   magic-number trick `(x + 1.5·2^23) - 1.5·2^23` ([`round_ties_even`](self::f32::round_ties_even)).
//! * float ↔ 64-bit integer conversions: no packed instruction below AVX-512. The
//!   `f64` code reads an integer out of the bits of `x + 1.5·2^52` and builds
//!   `2^n` from integer bits; 64-bit integer comparisons (SSE4.2) are avoided too.

/// `c[0] + x * (c[1] + x * (...))`, written as `a * b + c` (never `mul_add`).
///
/// The coefficients are listed from the highest degree down to the constant term.
macro_rules! horner {
    ($x:expr; $c:expr) => { $c };
    ($x:expr; $c:expr, $($rest:expr),+) => { horner!(@acc $x; $c; $($rest),+) };
    (@acc $x:expr; $acc:expr; $c:expr) => { $acc * $x + $c };
    (@acc $x:expr; $acc:expr; $c:expr, $($rest:expr),+) => {
        horner!(@acc $x; $acc * $x + $c; $($rest),+)
    };
}

pub mod f32;
pub mod f64;
