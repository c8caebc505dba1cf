use std::fmt;

/// Element type of a tensor.
///
/// Floating types (`F16`, `BF16`, `F32`, `F64`) compute and can require grad;
/// integer and boolean types hold indices, targets, masks and counts. `F16` and
/// `BF16` compute in `f32` and round once per result (see [`DType::compute`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Booleans, one byte each (`bool`).
    Bool,
    /// Unsigned 8-bit integers (`u8`).
    U8,
    /// Signed 32-bit integers (`i32`).
    I32,
    /// Signed 64-bit integers (`i64`): indices, class targets, `argmax` results.
    I64,
    /// IEEE 754 half precision (`half::f16`).
    F16,
    /// bfloat16 (`half::bf16`): `f32`'s exponent range with 8 bits of mantissa.
    BF16,
    /// 32-bit IEEE 754 float (`f32`).
    F32,
    /// 64-bit IEEE 754 float (`f64`).
    F64,
}

impl DType {
    /// Every dtype, from booleans to `f64`.
    pub const ALL: [DType; 8] = [
        DType::Bool,
        DType::U8,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// The Rust name of the element type (`bool`, `u8`, `i32`, `i64`, `f16`,
    /// `bf16`, `f32`, `f64`).
    pub const fn as_str(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// True for the floating types, the only ones that can require grad.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the 16-bit floats (`f16`, `bf16`), which compute in `f32`.
    pub const fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// True for the integer types (`u8`, `i32`, `i64`; not `bool`).
    pub const fn is_integer(self) -> bool {
        matches!(self, DType::U8 | DType::I32 | DType::I64)
    }

    /// The dtype kernels compute in: `f32` for `f16` and `bf16` (each result is
    /// rounded once to the storage type), the dtype itself otherwise.
    pub const fn compute(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        }
    }

    /// The lowest and highest finite values of the dtype, as `f64`.
    pub fn finite_range(self) -> (f64, f64) {
        match self {
            DType::Bool => (0.0, 1.0),
            DType::U8 => (0.0, u8::MAX as f64),
            DType::I32 => (i32::MIN as f64, i32::MAX as f64),
            DType::I64 => (i64::MIN as f64, i64::MAX as f64),
            DType::F16 => (half::f16::MIN.to_f64(), half::f16::MAX.to_f64()),
            DType::BF16 => (half::bf16::MIN.to_f64(), half::bf16::MAX.to_f64()),
            DType::F32 => (f32::MIN as f64, f32::MAX as f64),
            DType::F64 => (f64::MIN, f64::MAX),
        }
    }

    /// The dtype of `a op b` for operands of dtypes `a` and `b`, by PyTorch's
    /// rules for tensors (`torch.result_type`): booleans < integers < floats;
    /// within a kind the wider type wins; `f16` with `bf16` gives `f32`.
    pub const fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        match (a, b) {
            _ if a as u8 == b as u8 => a,
            (F16, BF16) | (BF16, F16) => F32,
            // Kinds: the float wins over any integer or bool, an integer over bool.
            _ if a.is_float() && !b.is_float() => a,
            _ if b.is_float() && !a.is_float() => b,
            _ if (a as u8) > (b as u8) => a,
            _ => b,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An element type a tensor can hold on the host: any [`DType`]'s Rust type.
/// Conversions between them follow Rust's `as` (and PyTorch): float to integer
/// truncates toward zero and saturates, integer to integer wraps, anything to
/// `bool` is "not zero".
pub trait HostElement:
    Copy + Send + Sync + Default + PartialEq + PartialOrd + fmt::Debug + fmt::Display + 'static
{
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Converts from `f64`, rounding to nearest for the narrower floats (scalars
    /// travel as `f64`).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (exact for every type but `i64` beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts from `i64` directly (one rounding for the floats).
    fn from_i64(v: i64) -> Self;
    /// Converts to `i64` (exact for the integer types and `bool`).
    fn to_i64(self) -> i64;
    /// `self + other`: wrapping for the integers, "or" for `bool`, rounded once
    /// for the floats (what an accumulating copy does).
    fn add(self, other: Self) -> Self;
    /// `other` converted to this type, as [`DType`] conversions do.
    #[inline(always)]
    fn convert<S: HostElement>(other: S) -> Self {
        if S::DTYPE.is_float() {
            Self::from_f64(other.to_f64())
        } else {
            Self::from_i64(other.to_i64())
        }
    }
}

/// `HostElement` for a primitive number type: the conversions are `as`, the
/// addition `$add` (wrapping for the integers).
macro_rules! impl_host_as {
    ($t:ty, $dtype:expr, $add:path) => {
        impl HostElement for $t {
            const DTYPE: DType = $dtype;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                $add(self, other)
            }
        }
    };
}
impl_host_as!(u8, DType::U8, u8::wrapping_add);
impl_host_as!(i32, DType::I32, i32::wrapping_add);
impl_host_as!(i64, DType::I64, i64::wrapping_add);
impl_host_as!(f32, DType::F32, std::ops::Add::add);
impl_host_as!(f64, DType::F64, std::ops::Add::add);

impl HostElement for bool {
    const DTYPE: DType = DType::Bool;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        if self { 1.0 } else { 0.0 }
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self | other
    }
}

/// `v` rounded to `f32` by round-to-odd (toward zero, the last bit set when
/// inexact): rounding that to a narrower type (f16, bf16, with at least two
/// bits fewer) gives the correctly rounded result of `v` itself, where rounding
/// to nearest twice could not.
fn f32_odd(v: f64) -> f32 {
    let f = v as f32;
    if f as f64 == v || v.is_nan() || f.is_infinite() {
        return f;
    }
    let mut bits = f.to_bits();
    if (f as f64).abs() > v.abs() {
        bits -= 1; // one step toward zero (sign and magnitude)
    }
    f32::from_bits(bits | 1)
}

/// `v` rounded to `f32` by round-to-odd (see [`f32_odd`]), exactly from the
/// integer.
fn f32_odd_i64(v: i64) -> f32 {
    let m = v.unsigned_abs();
    let significant = 64 - m.leading_zeros();
    let f = if significant <= 24 {
        m as f32
    } else {
        let shift = significant - 24;
        let sticky = m & ((1u64 << shift) - 1) != 0;
        // 24 bits or fewer, scaled by a power of two: exact.
        ((m >> shift) | sticky as u64) as f32 * (shift as f32).exp2()
    };
    if v < 0 { -f } else { f }
}

macro_rules! impl_host_half {
    ($t:ty, $dtype:expr) => {
        impl HostElement for $t {
            const DTYPE: DType = $dtype;
            /// Correctly rounded (to nearest, ties to even): through `f32` by
            /// round-to-odd, never rounding twice.
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f32(f32_odd(v))
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f32(f32_odd_i64(v))
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                <$t>::to_f64(self) as i64
            }
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                <$t>::from_f32(self.to_f32() + other.to_f32())
            }
        }
    };
}
impl_host_half!(half::f16, DType::F16);
impl_host_half!(half::bf16, DType::BF16);

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// Conversions to f16 and bf16 round the exact value once, from f64 and
    /// from i64 (the `half` crate's own `from_f64` rounds twice or drops bits).
    #[test]
    fn halves_round_the_exact_value_once() {
        // f32 1 + 2^-8 + 2^-23: above the bf16 tie, so it rounds up.
        let v = 1.0 + 2f64.powi(-8) + 2f64.powi(-23);
        assert_eq!(<bf16 as HostElement>::from_f64(v).to_bits(), 0x3f81);
        // 1 + 2^-11 + 2^-40: above the f16 tie.
        let v = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(<f16 as HostElement>::from_f64(v).to_bits(), 0x3c01);
        // Exact ties still go to even.
        assert_eq!(
            <bf16 as HostElement>::from_f64(1.0 + 2f64.powi(-8)).to_bits(),
            0x3f80
        );
        assert_eq!(
            <f16 as HostElement>::from_f64(1.0 + 2f64.powi(-11)).to_bits(),
            0x3c00
        );
        // From i64: 2^40 + 2^32 + 1 is above the bf16 tie between 2^40 and 2^40 + 2^33.
        let i = (1i64 << 40) + (1 << 32) + 1;
        let want = bf16::from_f32(2f32.powi(40) + 2f32.powi(33));
        assert_eq!(<bf16 as HostElement>::from_i64(i), want);
        assert_eq!(<bf16 as HostElement>::from_i64(-i), -want);
        assert_eq!(
            <bf16 as HostElement>::from_i64(1 << 40),
            bf16::from_f32(2f32.powi(40))
        );
        assert!(<f16 as HostElement>::from_i64(1 << 40).is_infinite());
        // Values an f32 holds convert as `from_f32` does.
        for x in [
            0.1f32,
            -3.75,
            65504.0,
            65520.0,
            1e-7,
            f32::MAX,
            f32::INFINITY,
        ] {
            assert_eq!(<f16 as HostElement>::from_f64(x as f64), f16::from_f32(x));
            assert_eq!(<bf16 as HostElement>::from_f64(x as f64), bf16::from_f32(x));
        }
        assert!(<bf16 as HostElement>::from_f64(f64::NAN).is_nan());
        assert_eq!(<bf16 as HostElement>::from_f64(1e300), bf16::INFINITY);
        assert_eq!(<f16 as HostElement>::from_f64(-1e-300).to_bits(), 0x8000);
    }
}

/// A floating-point element type that kernels compute with (`f32` or `f64`;
/// `f16` and `bf16` compute in `f32`).
pub trait Element:
    HostElement
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
{
    /// 0, the identity of addition (and the start of a sum).
    const ZERO: Self;
    /// 1, the identity of multiplication.
    const ONE: Self;
    /// +inf, the start of a min reduction.
    const INFINITY: Self;
    /// -inf, the start of a max reduction.
    const NEG_INFINITY: Self;
    /// e^self.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Sine (radians).
    fn sin(self) -> Self;
    /// Cosine (radians).
    fn cos(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// self^e.
    fn powf(self, e: Self) -> Self;
    /// True for NaN, which max/min reductions propagate.
    fn is_nan(self) -> bool;
    /// True for negative values, -0 included (the sign bit).
    fn is_sign_negative(self) -> bool {
        self.to_f64().is_sign_negative()
    }
}

macro_rules! impl_element {
    ($t:ty) => {
        impl Element for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const INFINITY: Self = <$t>::INFINITY;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}

impl_element!(f32);
impl_element!(f64);
