//! `f64` math that vectorises (see the [module documentation](super)).
//!
//! Errors are in ulps, measured by `kernels/tests/math_ulps.rs` against `std`'s
//! `f64` functions (`erf`: the `libm` crate's; `sigmoid`: `std`'s `exp` with
//! compensated arithmetic; `tanh`: a double-double evaluation, since glibc's `tanh` is
//! itself up to 2 ulp off). Those references are within about half an ulp to an ulp
//! of the exact result, so a bound here is the distance to the reference.

use core::f64::consts::{FRAC_2_PI, LOG2_E};

/// `1.5 · 2^52`: `(x + MAGIC) - MAGIC` rounds `|x| < 2^51` to an integer, ties to
/// even, and the low bits of `(x + MAGIC).to_bits()` hold that integer.
const MAGIC: f64 = 6_755_399_441_055_744.0;
const MAGIC_BITS: u64 = 0x4338_0000_0000_0000;
/// `2^52`.
const TWO52: f64 = 4_503_599_627_370_496.0;
/// `ln 2` in two parts (fdlibm): `n * LN2_HI` is exact for `|n| < 2^21`.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `x` clamped to `[lo, hi]`, NaN kept (a compare-and-select each side).
#[inline(always)]
fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    let x = if x > hi { hi } else { x };
    if x < lo { lo } else { x }
}

/// `x` with the sign of `s` (bit operations).
#[inline(always)]
fn with_sign_of(x: f64, s: f64) -> f64 {
    const SIGN: u64 = 0x8000_0000_0000_0000;
    f64::from_bits((x.to_bits() & !SIGN) | (s.to_bits() & SIGN))
}

/// `2^n` for an integer `-1022 <= n <= 1023` held in a `u64` (two's complement).
#[inline(always)]
fn pow2i(n: u64) -> f64 {
    f64::from_bits(n.wrapping_add(1023) << 52)
}

/// `y · 2^n` for `-1076 <= n <= 1025`, in two factors so that the ends are reached
/// (and a subnormal result is rounded once). No 64-bit arithmetic shift (none below
/// AVX-512): `n` is offset to be non-negative first.
#[inline(always)]
fn scale(y: f64, n: u64) -> f64 {
    let n1 = (n.wrapping_add(2048) >> 1).wrapping_sub(1024);
    y * pow2i(n1) * pow2i(n.wrapping_sub(n1))
}

/// Rounds to the nearest integer, ties to even, like [`f64::round_ties_even`], without
/// the SSE4.1 `roundpd` (the magic-number trick on `|x|`). Exact for every input:
/// ±0, ±∞ and NaN come back unchanged, and a zero result has the sign of `x`.
#[inline(always)]
pub fn round_ties_even(x: f64) -> f64 {
    let a = x.abs();
    // |x| >= 2^52 is an integer already; below, a + 2^52 has an ulp of 1.
    let r = if a < TWO52 { (a + TWO52) - TWO52 } else { a };
    with_sign_of(r, x)
}

/// `expm1(r)` for `|r| <= ln2/2` (and a little more): `r + r²/2 + r³·P(r)`.
#[inline(always)]
fn expm1_poly(r: f64) -> f64 {
    let p = horner!(r;
        2.091_192_857_100_670_3e-9, 2.510_135_443_993_923e-8, 2.755_728_150_025_374_7e-7,
        2.755_726_640_250_482_3e-6, 2.480_158_731_809_961_6e-5, 1.984_126_986_439_108_7e-4,
        1.388_888_888_888_635_9e-3, 8.333_333_333_329_791e-3, 4.166_666_666_666_666_4e-2,
        1.666_666_666_666_666_9e-1);
    r + r * r * (0.5 + r * p)
}

/// The range reduction shared by `exp` and `exp_m1`: `x = n·ln2 + r`, with `n` as
/// an integer (two's complement in a `u64`), its value as an `f64`, and `r`
/// (`|r| <= ln2/2`). `x` must be clamped to a finite range or NaN.
#[inline(always)]
fn reduce_ln2(x: f64) -> (u64, f64, f64) {
    let t = x * LOG2_E + MAGIC;
    let n = t - MAGIC;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    (t.to_bits().wrapping_sub(MAGIC_BITS), n, r)
}

/// `e^x`.
///
/// Max error 1 ulp over all finite `x`; overflows to `+∞` above
/// 709.782712893384 and underflows through the subnormals to `+0` below
/// -745.1332191019412, as `std`.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    let xc = clamp(x, -746.0, 710.0);
    let (n, _, r) = reduce_ln2(xc);
    scale(1.0 + expm1_poly(r), n)
}

/// `e^x - 1`, accurate near 0.
///
/// Max error 2 ulp over all finite `x`.
#[inline(always)]
pub fn exp_m1(x: f64) -> f64 {
    let xc = clamp(x, -40.0, 710.0);
    let (n, nf, r) = reduce_ln2(xc);
    let p = expm1_poly(r);
    // e^x - 1 = 2^n·(p + 1 - 2^-n); 1 - 2^-n is exact for |n| <= 53 and rounds to 1
    // beyond, where it no longer matters.
    let m = if nf < 60.0 { n } else { 60 };
    let u = 1.0 - pow2i(0u64.wrapping_sub(m));
    let y = scale(p + u, n);
    if x == 0.0 { x } else { y }
}

/// `(x = 2^k·m, k as f64, m)` with `m` in `[sqrt(1/2), sqrt(2))`, for finite
/// `x > 0` (subnormals included).
#[inline(always)]
fn split_exponent(x: f64) -> (f64, f64) {
    let tiny = x < f64::MIN_POSITIVE;
    let xs = if tiny {
        x * 18_014_398_509_481_984.0
    } else {
        x
    };
    let kadj = if tiny { -54.0 } else { 0.0 };
    const SQRT_HALF_BITS: u64 = 0x3FE6_A09E_667F_3BCD;
    let ix = xs
        .to_bits()
        .wrapping_add(0x3FF0_0000_0000_0000 - SQRT_HALF_BITS);
    // The biased exponent (0..=2047) as an f64, without a 64-bit conversion.
    let kb = f64::from_bits(0x4330_0000_0000_0000 | (ix >> 52)) - (TWO52 + 1023.0);
    let m = f64::from_bits((ix & 0x000F_FFFF_FFFF_FFFF).wrapping_add(SQRT_HALF_BITS));
    (kb + kadj, m)
}

/// `ln(x)` for finite `x > 0` (subnormals included), without the special values.
#[inline(always)]
fn ln_core(x: f64) -> f64 {
    let (dk, m) = split_exponent(x);
    let f = m - 1.0;
    // ln(1+f) = f - f²/2 + s·(f²/2 + R), s = f/(2+f), R = 2s²/3 + 2s⁴/5 + ... (fdlibm).
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner!(z;
        1.464_362_860_190_979_7e-1, 1.532_950_075_420_417_8e-1, 1.818_295_660_806_345_8e-1,
        2.222_221_019_926_421e-1, 2.857_142_863_176_433_4e-1, 3.999_999_999_988_661_5e-1,
        6.666_666_666_666_67e-1);
    let hfsq = 0.5 * f * f;
    s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI
}

/// `ln(x)`.
///
/// Max error 1 ulp over all `x > 0` (subnormals included); `ln(±0) = -∞`,
/// `ln(+∞) = +∞`, NaN for `x < 0`, as `std`.
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    let y = ln_core(x);
    let y = if x == f64::INFINITY { x } else { y };
    let y = if x == 0.0 { f64::NEG_INFINITY } else { y };
    if x.is_nan() || x < 0.0 { f64::NAN } else { y }
}

/// `ln(1 + x)`, accurate near 0.
///
/// Max error 2 ulp over all `x > -1`; `-∞` at -1, NaN below, as `std`.
#[inline(always)]
pub fn ln_1p(x: f64) -> f64 {
    let u = 1.0 + x;
    // ln(1+x) = ln(u) + (x - (u-1))/u: the second term corrects the rounding of u.
    let c = (x - (u - 1.0)) / u;
    let y = ln_core(u) + c;
    let y = if x == f64::INFINITY { x } else { y };
    let y = if x == -1.0 { f64::NEG_INFINITY } else { y };
    let y = if x.is_nan() || x < -1.0 { f64::NAN } else { y };
    // ln_1p(±0) = ±0.
    if x == 0.0 { x } else { y }
}

/// `tanh(x)`, as `t / (t + 2)` with `t = e^{2|x|} - 1`.
///
/// Max error 2 ulp over all `x` (3 ulp from glibc's `tanh`, which is itself up to 2
/// ulp from the exact result).
#[inline(always)]
pub fn tanh(x: f64) -> f64 {
    // tanh(|x|) rounds to 1 for |x| > 19.07.
    let a = clamp(x.abs(), 0.0, 20.0);
    let (n, _, r) = reduce_ln2(a + a);
    let p = expm1_poly(r);
    // 0 <= n <= 58.
    let t = (p + (1.0 - pow2i(0u64.wrapping_sub(n)))) * pow2i(n);
    with_sign_of(t / (t + 2.0), x)
}

/// The logistic sigmoid `1 / (1 + e^-x)`, accurate for large `|x|` (below 0 it is
/// computed as `e^x / (1 + e^x)`, so it underflows gradually like `e^x`).
///
/// Max error 2 ulp over all `x`.
#[inline(always)]
pub fn sigmoid(x: f64) -> f64 {
    let e = exp(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    let d = 1.0 + e;
    // d + d_err = 1 + e exactly; the second division takes out the rounding of d.
    let d_err = e - (d - 1.0);
    let q = num / d;
    q - q * d_err / d
}

/// `π/2` in four parts of at most 33 significant bits (the last is the rest), so
/// that `j · PIO2_k` is exact for `|j| < 2^20`.
const PIO2: [f64; 4] = [
    1.570_796_326_734_125_6,
    6.077_100_506_303_966e-11,
    2.022_266_248_711_166_5e-21,
    8.478_427_660_368_9e-32,
];

/// `(sin r, cos r, j)` with `x = j·π/2 + r`, `|r| <= π/4`.
#[inline(always)]
fn sincos_reduced(x: f64) -> (f64, f64, u64) {
    let t = x * FRAC_2_PI + MAGIC;
    let j = t - MAGIC;
    let r = x - j * PIO2[0];
    let r = r - j * PIO2[1];
    let r = r - j * PIO2[2];
    let r = r - j * PIO2[3];
    // A huge finite x (far beyond the accurate range) can leave a huge r: use 0, so
    // that the result stays in [-1, 1]. NaN (from ±∞ or NaN) stays NaN.
    let r = if r.abs() > 1.0 { 0.0 } else { r };
    let z = r * r;
    let s = r + r
        * z
        * horner!(z;
        1.591_672_619_388_933_6e-10, -2.505_111_227_257_324_3e-8, 2.755_731_600_817_155e-6,
        -1.984_126_983_657_571e-4, 8.333_333_333_330_827e-3, -1.666_666_666_666_666_6e-1);
    // cos r = 1 - z/2 + z²·C(z), summed as fdlibm does to keep the last bit.
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let c = w
        + (((1.0 - w) - hz)
            + z * z
                * horner!(z;
            -1.138_175_465_366_293_7e-11, 2.087_613_402_409_014_5e-9, -2.755_731_721_268_659e-7,
            2.480_158_729_865_129_2e-5, -1.388_888_888_888_732_2e-3, 4.166_666_666_666_666_4e-2));
    (s, c, t.to_bits())
}

/// Picks `±sin r` or `±cos r` by the quadrant `q` (its low two bits).
#[inline(always)]
fn quadrant(s: f64, c: f64, q: u64) -> f64 {
    let odd = 0u64.wrapping_sub(q & 1);
    let v = (c.to_bits() & odd) | (s.to_bits() & !odd);
    f64::from_bits(v ^ ((q & 2) << 62))
}

/// `sin(x)`.
///
/// Max error 2 ulp for `|x| <= 1647099` (`2^20 · π/2`, where the Cody-Waite reduction
/// is exact). Beyond, the reduction loses bits: the absolute error is about
/// `|x| · 2^-53` (measured: 7e-9 at 1e8, 8e-3 at 1e14), and the result stays in
/// `[-1, 1]`. NaN for ±∞ and NaN, `sin(±0) = ±0`.
#[inline(always)]
pub fn sin(x: f64) -> f64 {
    let (s, c, q) = sincos_reduced(x);
    let y = quadrant(s, c, q);
    if x == 0.0 { x } else { y }
}

/// `cos(x)`.
///
/// Max error 2 ulp for `|x| <= 1647099`; beyond, as [`sin`]. NaN for ±∞ and NaN.
#[inline(always)]
pub fn cos(x: f64) -> f64 {
    let (s, c, q) = sincos_reduced(x);
    quadrant(s, c, q.wrapping_add(1))
}

/// The error function.
///
/// `x·P(x²)` for `|x| < 1`; on `[1, 6]`, `1 - e^{-x²}·Q(1/x)` with `Q` fitted to
/// `erfc(x)·e^{x²}`; `±1` beyond. Max error 2 ulp over all `x`.
#[inline(always)]
pub fn erf(x: f64) -> f64 {
    let a = x.abs();
    let z = a * a;
    // erf(x) = x + x·y with y = erf(x)/x - 1 small: x is exact, y's rounding shrinks.
    let y = horner!(z;
        -7.795_898_827_002_142e-10, 1.372_006_454_677_768_6e-8, -1.620_848_380_187_170_5e-7,
        1.644_742_470_331_736_2e-6, -1.492_473_690_741_966e-5, 1.205_529_490_483_970_7e-4,
        -8.548_325_975_389_692e-4, 5.223_977_607_116_422_5e-3, -2.686_617_064_323_777e-2,
        1.128_379_167_094_500_6e-1, -3.761_263_890_318_354_3e-1, ERF_C0 - 1.0);
    let small = a + a * y;
    let ac = clamp(a, 1.0, 6.0);
    let u = 1.0 / ac - 7.0 / 12.0;
    let q = horner!(u;
        3.139_211_173_476_436e-1, -1.286_006_131_098_294_5e-1, -3.697_393_076_864_341_5e-1,
        2.728_470_659_944_177e-1, 1.812_075_977_106_418e-2, -4.687_222_710_542_634e-2,
        1.617_289_278_514_662_6e-2, -4.241_452_398_708_074e-2, 6.035_200_458_679_404e-2,
        -4.958_365_180_272_039e-2, 2.626_995_481_518_747e-2, 2.892_742_771_922_662e-4,
        -2.420_522_676_050_891e-2, 3.929_633_576_968_863e-2, -4.120_105_700_199_521_6e-2,
        2.875_024_719_117_392_4e-2, -4.454_305_661_896_798e-3, -2.535_700_162_229_279_4e-2,
        5.075_799_510_166_678e-2, -5.879_495_991_483_6e-2, 3.431_997_863_296_222e-2,
        3.899_932_735_583_922_6e-2, -1.775_868_509_285_576_7e-1, 3.968_704_560_302_756e-1,
        2.897_221_163_234_642_3e-1);
    let big = 1.0 - exp(-(ac * ac)) * q;
    let y = if a < 1.0 { small } else { big };
    with_sign_of(y, x)
}
/// `2/√π`, the slope of `erf` at 0.
const ERF_C0: f64 = core::f64::consts::FRAC_2_SQRT_PI;

/// `(hi, lo)` with `hi + lo = a·b` (Dekker's product; no FMA). The operands are
/// split by masking their low 27 bits, which cannot overflow.
#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    const MASK: u64 = 0xFFFF_FFFF_F800_0000;
    let p = a * b;
    let ah = f64::from_bits(a.to_bits() & MASK);
    let al = a - ah;
    let bh = f64::from_bits(b.to_bits() & MASK);
    let bl = b - bh;
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// `(s, e)` with `s + e = a + b` exactly (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `ln(x)` as a double-double `hi + lo` (about 2^-100 relative), for finite `x > 0`.
#[inline(always)]
fn ln_dd(x: f64) -> (f64, f64) {
    const TWO_THIRDS_LO: f64 = 3.700_743_415_417_188e-17;
    let (dk, m) = split_exponent(x);
    let f = m - 1.0;
    // s = f/(2+f) as s + s_lo.
    let d = 2.0 + f;
    let d_lo = f - (d - 2.0);
    let s = f / d;
    let (p, pe) = two_prod(s, d);
    let s_lo = (((f - p) - pe) - s * d_lo) / d;
    // ln(1+f) = 2 atanh(s) = 2s + 2s³/3 + s⁵·R(s²); 2s³/3 in double-double.
    let (s2, s2l) = two_prod(s, s);
    let s2l = s2l + 2.0 * s * s_lo;
    let (s3, s3l) = two_prod(s2, s);
    let s3l = s3l + (s2l * s + s2 * s_lo);
    let (t, tl) = two_prod(s3, 2.0 / 3.0);
    let tl = tl + (s3l * (2.0 / 3.0) + s3 * TWO_THIRDS_LO);
    let tail = s3
        * s2
        * horner!(s2;
            1.293_784_517_795_974_8e-1, 1.328_397_767_038_712_6e-1, 1.538_563_495_620_664_5e-1,
            1.818_180_741_350_265_1e-1, 2.222_222_227_626_338_4e-1, 2.857_142_857_132_701e-1,
            4.000_000_000_000_003e-1);
    let (h1, e1) = two_sum(dk * LN2_HI, s + s);
    let (h2, e2) = two_sum(h1, t);
    let lo = (e1 + e2) + ((s_lo + s_lo) + tl + tail + dk * LN2_LO);
    let hi = h2 + lo;
    (hi, lo - (hi - h2))
}

/// `e^{hi + lo}` for `|lo|` within an ulp or so of `hi`.
#[inline(always)]
fn exp_dd(hi: f64, lo: f64) -> f64 {
    // Out of range, lo may be NaN (from a product that overflowed) and is not needed.
    let lo = if (hi > -746.0) & (hi < 710.0) {
        lo
    } else {
        0.0
    };
    let xc = clamp(hi, -746.0, 710.0);
    let (n, _, r) = reduce_ln2(xc);
    scale(1.0 + expm1_poly(r + lo), n)
}

/// Applies C's special cases of `pow` to `r = e^{y·ln|x|}` (computed with
/// `ln 0 = -∞`, `ln ∞ = ∞`): the sign for a negative `x` and an odd integral `y`,
/// NaN for a finite negative `x` and a finite non-integral `y`, and the 1s.
#[inline(always)]
fn pow_special(x: f64, y: f64, r: f64) -> f64 {
    let ay = y.abs();
    let small = ay < TWO52;
    let t = ay + TWO52;
    // NaN y counts as integral here; it makes a NaN anyway.
    let is_int = if small { t - TWO52 == ay } else { true };
    // The parity of an integral y is the last bit of t (or of y in [2^52, 2^53)).
    let pbits = if small { t.to_bits() } else { ay.to_bits() };
    let odd_neg = if is_int & (ay < 2.0 * TWO52) {
        (pbits << 63) & x.to_bits()
    } else {
        0
    };
    let r = f64::from_bits(r.to_bits() ^ odd_neg);
    let r = if (x < 0.0) & (x > f64::NEG_INFINITY) & (ay < f64::INFINITY) & !is_int {
        f64::NAN
    } else {
        r
    };
    let r = if (x == 1.0) | (y == 0.0) { 1.0 } else { r };
    if (x == -1.0) & (ay == f64::INFINITY) {
        1.0
    } else {
        r
    }
}

/// `f32` `powf` computed in `f64`: `e^{y·ln|x|}` with polynomials of lower degree than
/// this module's `ln` and `exp`, enough for a result that is then rounded to `f32`
/// (relative error about 2^-36 before that rounding).
#[inline(always)]
pub(super) fn pow_f32_in_f64(x: f64, y: f64) -> f64 {
    let ax = x.abs();
    let (dk, m) = split_exponent(ax);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner!(z;
        1.938_729_901_124_342_2e-1, 2.219_011_972_118_275e-1, 2.857_177_491_632_499_3e-1,
        3.999_999_869_651_572e-1, 6.666_666_666_744_985e-1);
    let hfsq = 0.5 * f * f;
    let l = s * (hfsq + r) - hfsq + f + dk * core::f64::consts::LN_2;
    let l = if ax == 0.0 { f64::NEG_INFINITY } else { l };
    let l = if ax.is_nan() | (ax == f64::INFINITY) {
        ax
    } else {
        l
    };
    // Beyond [-120, 100] the f32 result is 0 or ∞ whatever the f64 one is.
    let p = clamp(y * l, -120.0, 100.0);
    let (n, _, r) = reduce_ln2(p);
    let e = 1.0
        + (r + r
            * r
            * (0.5
                + r * horner!(r;
        2.485_229_591_718_249e-5, 1.989_198_905_262_853_2e-4, 1.388_886_557_892_215_3e-3,
        8.333_310_017_113_927e-3, 4.166_666_668_253_72e-2, 1.666_666_668_254_161_7e-1)));
    pow_special(x, y, e * pow2i(n))
}

/// `x^y` with the special cases of `std`'s `powf` (C's `pow`): `x^±0 = 1` and
/// `1^y = 1` for every `x`, `y` (NaN included); a negative `x` gives the signed
/// result for an integral `y` and NaN for a finite non-integral `y`; zeros and
/// infinities as in C.
///
/// Computed as `e^{y·ln|x|}` with `ln|x|` and the product in double-double
/// arithmetic (Dekker's product without FMA), so large `|y·ln x|` keep their
/// accuracy. Max error 1 ulp over all `x`, `y`.
#[inline(always)]
pub fn powf(x: f64, y: f64) -> f64 {
    let ax = x.abs();
    let (h, l) = ln_dd(ax);
    let h = if ax == 0.0 { f64::NEG_INFINITY } else { h };
    let h = if ax.is_nan() | (ax == f64::INFINITY) {
        ax
    } else {
        h
    };
    let (ph, pl) = two_prod(y, h);
    let pl = pl + y * l;
    pow_special(x, y, exp_dd(ph, pl))
}
