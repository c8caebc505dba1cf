//! `f32` math that vectorises (see the [module documentation](super)).
//!
//! Errors are in ulps of the exact result, measured by `kernels/tests/math_ulps.rs`
//! against `std`'s `f64` functions rounded to `f32` (`erf`: the `libm` crate's `erf`
//! in `f64`, rounded).

use core::f32::consts::{FRAC_2_PI, LOG2_E};

/// `1.5 · 2^23`: `(x + MAGIC) - MAGIC` rounds `|x| < 2^22` to an integer, ties to
/// even, and the low bits of `(x + MAGIC).to_bits()` hold that integer.
const MAGIC: f32 = 12_582_912.0;
const MAGIC_BITS: i32 = 0x4B40_0000;
/// `ln 2` in two parts; `n * LN2_HI` is exact for `|n| < 2^15`.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// `x` clamped to `[lo, hi]`, NaN kept (a compare-and-select each side).
#[inline(always)]
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x > hi { hi } else { x };
    if x < lo { lo } else { x }
}

/// `x` with the sign of `s` (bit operations).
#[inline(always)]
fn with_sign_of(x: f32, s: f32) -> f32 {
    f32::from_bits((x.to_bits() & 0x7FFF_FFFF) | (s.to_bits() & 0x8000_0000))
}

/// `2^n` for an integer `-126 <= n <= 127`.
#[inline(always)]
fn pow2i(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// Rounds to the nearest integer, ties to even, like [`f32::round_ties_even`], without
/// the SSE4.1 `roundps` (the magic-number trick on `|x|`). Exact for every input:
/// ±0, ±∞ and NaN come back unchanged, and a zero result has the sign of `x`.
#[inline(always)]
pub fn round_ties_even(x: f32) -> f32 {
    const TWO23: f32 = 8_388_608.0;
    let a = x.abs();
    // |x| >= 2^23 is an integer already; below, a + 2^23 has an ulp of 1.
    let r = if a < TWO23 { (a + TWO23) - TWO23 } else { a };
    with_sign_of(r, x)
}

/// `expm1(r)` for `|r| <= ln2/2` (and a little more): `r + r²/2 + r³·P(r)`.
#[inline(always)]
fn expm1_poly(r: f32) -> f32 {
    let p = horner!(r; 1.988_353e-4, 1.392_693_3e-3, 8.333_321e-3, 4.166_655e-2, 1.666_666_7e-1);
    r + r * r * (0.5 + r * p)
}

/// The range reduction shared by `exp` and `exp_m1`: `x = n·ln2 + r`, with `n` as
/// an integer and `r` (`|r| <= ln2/2`). `x` must be clamped to a finite range or NaN.
#[inline(always)]
fn reduce_ln2(x: f32) -> (i32, f32) {
    let t = x * LOG2_E + MAGIC;
    let n = t - MAGIC;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let ni = (t.to_bits() as i32).wrapping_sub(MAGIC_BITS);
    (ni, r)
}

/// `e^x`.
///
/// Max error 1 ulp over all finite `x`; overflows to `+∞` above
/// 88.72283 and underflows through the subnormals to `+0` below -103.97208, as `std`.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let xc = clamp(x, -104.0, 89.0);
    let (n, r) = reduce_ln2(xc);
    let e = 1.0 + expm1_poly(r);
    // 2^n in two factors, so that n = 128 and subnormal results are reached.
    let n1 = n >> 1;
    e * pow2i(n1) * pow2i(n.wrapping_sub(n1))
}

/// `e^x - 1`, accurate near 0.
///
/// Max error 2 ulp over all finite `x`.
#[inline(always)]
pub fn exp_m1(x: f32) -> f32 {
    let xc = clamp(x, -20.0, 89.0);
    let (n, r) = reduce_ln2(xc);
    let p = expm1_poly(r);
    // e^x - 1 = 2^n·(p + 1 - 2^-n); 1 - 2^-n is exact for |n| <= 24 and rounds to 1
    // beyond, where it no longer matters.
    let m = if n < 30 { n } else { 30 };
    let u = 1.0 - pow2i(-m);
    let n1 = n >> 1;
    let y = (p + u) * pow2i(n1) * pow2i(n.wrapping_sub(n1));
    if x == 0.0 { x } else { y }
}

/// `ln 2` in two parts for `ln` (musl's `logf` constants).
const LN2_HI_LOG: f32 = 6.931_381e-1;
const LN2_LO_LOG: f32 = 9.058_001e-6;

/// `ln(x)` for finite `x > 0` (subnormals included), without the special values.
#[inline(always)]
fn ln_core(x: f32) -> f32 {
    // Subnormals: scale into the normal range first.
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 33_554_432.0 } else { x };
    let kadj = if tiny { -25.0 } else { 0.0 };
    // x = 2^k·m with m in [sqrt(1/2), sqrt(2)).
    let ix = xs.to_bits().wrapping_add(0x3F80_0000 - 0x3F35_04F3);
    let k = ((ix >> 23) as i32).wrapping_sub(127);
    let m = f32::from_bits((ix & 0x007F_FFFF).wrapping_add(0x3F35_04F3));
    let f = m - 1.0;
    // ln(1+f) = f - f²/2 + s·(f²/2 + R), s = f/(2+f), R = 2s²/3 + 2s⁴/5 + ... (fdlibm).
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner!(z; 2.335_342_8e-1, 2.854_997e-1, 4.000_013e-1, 6.666_667e-1);
    let hfsq = 0.5 * f * f;
    let dk = k as f32 + kadj;
    s * (hfsq + r) + dk * LN2_LO_LOG - hfsq + f + dk * LN2_HI_LOG
}

/// `ln(x)`.
///
/// Max error 1 ulp over all `x > 0` (subnormals included); `ln(±0) = -∞`,
/// `ln(+∞) = +∞`, NaN for `x < 0`, as `std`.
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    let y = ln_core(x);
    let y = if x == f32::INFINITY { x } else { y };
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    if x.is_nan() || x < 0.0 { f32::NAN } else { y }
}

/// `ln(1 + x)`, accurate near 0.
///
/// Max error 2 ulp over all `x > -1`; `-∞` at -1, NaN below, as `std`.
#[inline(always)]
pub fn ln_1p(x: f32) -> f32 {
    let u = 1.0 + x;
    // ln(1+x) = ln(u) + (x - (u-1))/u: the second term corrects the rounding of u.
    let c = (x - (u - 1.0)) / u;
    let y = ln_core(u) + c;
    let y = if x == f32::INFINITY { x } else { y };
    let y = if x == -1.0 { f32::NEG_INFINITY } else { y };
    let y = if x.is_nan() || x < -1.0 { f32::NAN } else { y };
    // ln_1p(±0) = ±0.
    if x == 0.0 { x } else { y }
}

/// `tanh(x)`, as `t / (t + 2)` with `t = e^{2|x|} - 1`.
///
/// Max error 2 ulp over all `x`.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    // tanh(|x|) rounds to 1 for |x| > 9.01.
    let a = clamp(x.abs(), 0.0, 10.0);
    let (n, r) = reduce_ln2(a + a);
    let p = expm1_poly(r);
    // 0 <= n <= 29.
    let t = (p + (1.0 - pow2i(-n))) * pow2i(n);
    with_sign_of(t / (t + 2.0), x)
}

/// The logistic sigmoid `1 / (1 + e^-x)`, accurate for large `|x|` (below 0 it is
/// computed as `e^x / (1 + e^x)`, so it underflows gradually like `e^x`).
///
/// Max error 2 ulp over all `x`.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    let e = exp(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    let d = 1.0 + e;
    // d + d_err = 1 + e exactly; the second division takes out the rounding of d.
    let d_err = e - (d - 1.0);
    let q = num / d;
    q - q * d_err / d
}

/// `π/2` in five parts of at most 11 significant bits (the last is the rest), so
/// that `j · PIO2_k` is exact for `|j| < 2^13`.
const PIO2: [f32; 5] = [
    1.570_312_5,
    4.837_513e-4,
    7.549_533_6e-8,
    2.563_283e-12,
    6.123_234e-17,
];

/// `(sin r, cos r, j)` with `x = j·π/2 + r`, `|r| <= π/4`.
#[inline(always)]
fn sincos_reduced(x: f32) -> (f32, f32, u32) {
    let t = x * FRAC_2_PI + MAGIC;
    let j = t - MAGIC;
    let r = x - j * PIO2[0];
    let r = r - j * PIO2[1];
    let r = r - j * PIO2[2];
    let r = r - j * PIO2[3];
    let r = r - j * PIO2[4];
    // A huge finite x (far beyond the accurate range) can leave a huge r: use 0, so
    // that the result stays in [-1, 1]. NaN (from ±∞ or NaN) stays NaN.
    let r = if r.abs() > 1.0 { 0.0 } else { r };
    let z = r * r;
    let s = r + r * z * horner!(z; 2.724_687e-6, -1.984_006_4e-4, 8.333_332e-3, -1.666_666_7e-1);
    // cos r = 1 - z/2 + z²·C(z), summed as fdlibm does to keep the last bit.
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let c =
        w + (((1.0 - w) - hz) + z * z * horner!(z; 2.454_542e-5, -1.388_829_1e-3, 4.166_666_4e-2));
    (s, c, t.to_bits())
}

/// Picks `±sin r` or `±cos r` by the quadrant `q` (its low two bits).
#[inline(always)]
fn quadrant(s: f32, c: f32, q: u32) -> f32 {
    let odd = 0u32.wrapping_sub(q & 1);
    let v = (c.to_bits() & odd) | (s.to_bits() & !odd);
    f32::from_bits(v ^ ((q & 2) << 30))
}

/// `sin(x)`.
///
/// Max error 2 ulp for `|x| <= 12867` (`8192 · π/2`, where the Cody-Waite reduction is
/// exact). Beyond, the reduction loses bits: the absolute error measured is below
/// 2e-6 up to `|x| = 1.2e5` and 0.03 up to 1e6, and past about 1e6 the result is
/// meaningless, but it stays in `[-1, 1]`. NaN for ±∞ and NaN, `sin(±0) = ±0`.
#[inline(always)]
pub fn sin(x: f32) -> f32 {
    let (s, c, q) = sincos_reduced(x);
    let y = quadrant(s, c, q);
    if x == 0.0 { x } else { y }
}

/// `cos(x)`.
///
/// Max error 2 ulp for `|x| <= 12867`; beyond, as [`sin`]. NaN for ±∞ and NaN.
#[inline(always)]
pub fn cos(x: f32) -> f32 {
    let (s, c, q) = sincos_reduced(x);
    quadrant(s, c, q.wrapping_add(1))
}

/// The error function.
///
/// `x·P(x²)` for `|x| < 1`, a polynomial in `|x| - 2.5` on `[1, 3.92]`, and `±1`
/// beyond (where `erf` rounds to ±1). Max error 2 ulp over all `x`.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    // erf(x) = x + x·y with y = erf(x)/x - 1 small: x is exact, y's rounding shrinks.
    let y = horner!(z;
        7.875_875e-5, -8.016_864_3e-4, 5.189_087_2e-3, -2.685_421_1e-2,
        1.128_359_4e-1, -3.761_262_6e-1, 1.283_791_7e-1);
    let small = a + a * y;
    let t = clamp(a, 1.0, 4.0) - 2.5;
    let big = horner!(t;
        8.837_966_4e-7, 4.879_900_6e-7, -1.566_748_5e-5, 1.783_762_5e-5,
        8.093_342e-5, -2.708_36e-4, 2.589_991_2e-4, 5.606_544e-4,
        -2.797_779e-3, 6.108_916_4e-3, -8.622_514e-3, 8.351_824e-3,
        -5.445_702_5e-3, 2.178_180_3e-3, 9.995_93e-1);
    let y = if a < 1.0 { small } else { big };
    let y = if a >= 3.919_206 { 1.0 } else { y };
    with_sign_of(y, x)
}

/// `x^y` with the special cases of `std`'s `powf` (C's `pow`): `x^±0 = 1` and
/// `1^y = 1` for every `x`, `y` (NaN included); a negative `x` gives the signed
/// result for an integral `y` and NaN for a finite non-integral `y`; zeros and
/// infinities as in C.
///
/// Computed as `e^{y·ln|x|}` in `f64` (two lanes a 128-bit register where `f32` has
/// four, but no double-`f32` arithmetic to get `ln|x|` exact enough), so the result is
/// an `f64` value within about 2^-36 rounded once: max error 1 ulp over all `x`, `y`.
#[inline(always)]
pub fn powf(x: f32, y: f32) -> f32 {
    super::f64::pow_f32_in_f64(x as f64, y as f64) as f32
}
