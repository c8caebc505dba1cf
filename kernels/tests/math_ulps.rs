//! Accuracy of `autograd_kernels::math` in ulps against `std` (and the `libm` crate
//! for `erf`), and exact agreement on the special values.
//!
//! Each function is swept over samples drawn from several generators in turn:
//! random bit patterns (every float is equally likely), log-uniform magnitudes, and
//! dense sampling of its hard regions. `f32` results are compared with `std`'s `f64`
//! function rounded to `f32` (nearly exact); `f64` results with `std`'s `f64` function.
//! An infinity, a NaN or the sign of a zero must match exactly; otherwise the
//! distance in ulps is the number of floats between the two results.
//!
//! The sample count is smaller in debug builds (`cargo test`) than in release ones
//! (`cargo test --release`), where it is 10^6 a function.

use autograd_kernels::math;

const N: usize = if cfg!(debug_assertions) {
    1_000_000
} else {
    4_000_000
};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[a, b)`.
    fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
    /// `±10^u`, `u` uniform in `[lo, hi)`, the sign random when `signed`.
    fn log_uniform(&mut self, lo: f64, hi: f64, signed: bool) -> f64 {
        let m = 10f64.powf(self.uniform(lo, hi));
        if signed && self.next() & 1 == 1 {
            -m
        } else {
            m
        }
    }
    fn int(&mut self, n: u64) -> i64 {
        (self.next() % n) as i64
    }
}

fn ord32(x: f32) -> i64 {
    let b = x.to_bits() as i64;
    if b & 0x8000_0000 != 0 {
        -(b & 0x7FFF_FFFF)
    } else {
        b
    }
}

fn ord64(x: f64) -> i128 {
    let b = x.to_bits() as i128;
    if b & (1 << 63) != 0 {
        -(b & 0x7FFF_FFFF_FFFF_FFFF)
    } else {
        b
    }
}

/// `x` moved by `k` floats (across zero as the order of the reals does).
fn step32(x: f32, k: i64) -> f32 {
    let o = ord32(x) + k;
    if o < 0 {
        f32::from_bits((-o) as u32 | 0x8000_0000)
    } else {
        f32::from_bits(o as u32)
    }
}

fn step64(x: f64, k: i64) -> f64 {
    let o = ord64(x) + k as i128;
    if o < 0 {
        f64::from_bits((-o) as u64 | (1 << 63))
    } else {
        f64::from_bits(o as u64)
    }
}

/// Distance in ulps; infinite when a NaN, an infinity or the sign of a zero differs.
fn ulps32(got: f32, want: f32) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() || got.is_infinite() || (want == 0.0 && got == 0.0) {
        return if got.to_bits() == want.to_bits() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    (ord32(got) - ord32(want)).abs() as f64
}

fn ulps64(got: f64, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() || got.is_infinite() || (want == 0.0 && got == 0.0) {
        return if got.to_bits() == want.to_bits() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    (ord64(got) - ord64(want)).abs() as f64
}

/// The same result bit for bit (any NaN matches any NaN).
fn same32(got: f32, want: f32) -> bool {
    (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
}

fn same64(got: f64, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
}

type Gen32 = fn(&mut Rng) -> f32;
type Gen64 = fn(&mut Rng) -> f64;

/// Sweeps `f` against `reference` with the generators in turn; returns the max ulp.
fn sweep32(name: &str, f: fn(f32) -> f32, reference: fn(f32) -> f32, gens: &[Gen32], bound: f64) {
    let mut rng = Rng(0x5EED ^ name.len() as u64);
    let (mut worst, mut at, mut count) = (0.0f64, 0.0f32, 0usize);
    for i in 0..N {
        let x = gens[i % gens.len()](&mut rng);
        let u = ulps32(f(x), reference(x));
        count += 1;
        if u > worst || (u.is_nan() && !worst.is_nan()) {
            worst = u;
            at = x;
        }
    }
    eprintln!(
        "f32 {name}: max {worst} ulp at x = {at:e} (got {:e}, want {:e}), {count} samples",
        f(at),
        reference(at)
    );
    assert!(
        worst <= bound,
        "f32 {name}: {worst} ulp > {bound} at x = {at:e}"
    );
}

fn sweep64(name: &str, f: fn(f64) -> f64, reference: fn(f64) -> f64, gens: &[Gen64], bound: f64) {
    let mut rng = Rng(0xF64 ^ name.len() as u64);
    let (mut worst, mut at, mut count) = (0.0f64, 0.0f64, 0usize);
    for i in 0..N {
        let x = gens[i % gens.len()](&mut rng);
        let u = ulps64(f(x), reference(x));
        count += 1;
        if u > worst {
            worst = u;
            at = x;
        }
    }
    eprintln!(
        "f64 {name}: max {worst} ulp at x = {at:e} (got {:e}, want {:e}), {count} samples",
        f(at),
        reference(at)
    );
    assert!(
        worst <= bound,
        "f64 {name}: {worst} ulp > {bound} at x = {at:e}"
    );
}

const SPECIAL32: [f32; 18] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    1e-40,
    -1e-40,
    f32::MAX,
    f32::MIN,
    1.0,
    -1.0,
    0.5,
    1e30,
    -1e30,
];

const SPECIAL64: [f64; 18] = [
    0.0,
    -0.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MIN_POSITIVE,
    -f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    1e-310,
    -1e-310,
    f64::MAX,
    f64::MIN,
    1.0,
    -1.0,
    0.5,
    1e300,
    -1e300,
];

/// The special values (±0, ±∞, NaN, the smallest normal, subnormals, the largest
/// finite) give exactly what `reference` gives, and so does every other listed value
/// where `reference` gives ±0, ±∞, NaN or ±1; the rest are within `bound` ulps.
fn specials32(name: &str, f: fn(f32) -> f32, reference: fn(f32) -> f32, bound: f64, extra: &[f32]) {
    let xs: Vec<f32> = SPECIAL32.iter().chain(extra).copied().collect();
    values32(name, f, reference, bound, &xs);
}

fn values32(name: &str, f: fn(f32) -> f32, reference: fn(f32) -> f32, bound: f64, xs: &[f32]) {
    for &x in xs {
        let (got, want) = (f(x), reference(x));
        let special =
            x == 0.0 || !x.is_finite() || x.abs() <= f32::MIN_POSITIVE || x.abs() == f32::MAX;
        if special || !want.is_finite() || want == 0.0 || want.abs() == 1.0 {
            assert!(
                same32(got, want),
                "f32 {name}({x:e}) = {got:e}, std gives {want:e}"
            );
        } else {
            assert!(
                ulps32(got, want) <= bound,
                "f32 {name}({x:e}) = {got:e}, std gives {want:e}"
            );
        }
    }
}

fn specials64(name: &str, f: fn(f64) -> f64, reference: fn(f64) -> f64, bound: f64, extra: &[f64]) {
    let xs: Vec<f64> = SPECIAL64.iter().chain(extra).copied().collect();
    values64(name, f, reference, bound, &xs);
}

fn values64(name: &str, f: fn(f64) -> f64, reference: fn(f64) -> f64, bound: f64, xs: &[f64]) {
    for &x in xs {
        let (got, want) = (f(x), reference(x));
        let special =
            x == 0.0 || !x.is_finite() || x.abs() <= f64::MIN_POSITIVE || x.abs() == f64::MAX;
        if special || !want.is_finite() || want == 0.0 || want.abs() == 1.0 {
            assert!(
                same64(got, want),
                "f64 {name}({x:e}) = {got:e}, std gives {want:e}"
            );
        } else {
            assert!(
                ulps64(got, want) <= bound,
                "f64 {name}({x:e}) = {got:e}, std gives {want:e}"
            );
        }
    }
}

/// The float where `reference` switches between being and not being `pred`, found by
/// bisection between `a` (not `pred`) and `b` (`pred`); `f` must agree on which side
/// each of the 8 floats around it falls, and be within `bound` ulps of `reference`.
fn threshold32(
    name: &str,
    f: fn(f32) -> f32,
    reference: fn(f32) -> f32,
    pred: fn(f32) -> bool,
    a: f32,
    b: f32,
    bound: f64,
) {
    let (mut lo, mut hi) = (ord32(a), ord32(b));
    assert!(!pred(reference(a)) && pred(reference(b)));
    while (hi - lo).abs() > 1 {
        let mid = (lo + hi) / 2;
        let x = step32(0.0, mid);
        if pred(reference(x)) {
            hi = mid
        } else {
            lo = mid
        }
    }
    for k in -4..4 {
        let x = step32(0.0, hi + k);
        let (got, want) = (f(x), reference(x));
        assert!(
            pred(got) == pred(want),
            "f32 {name}({x:e}) = {got:e} on the other side of {want:e}"
        );
        assert!(
            ulps32(got, want) <= bound,
            "f32 {name}({x:e}) = {got:e}, std gives {want:e}"
        );
    }
}

fn threshold64(
    name: &str,
    f: fn(f64) -> f64,
    reference: fn(f64) -> f64,
    pred: fn(f64) -> bool,
    a: f64,
    b: f64,
    bound: f64,
) {
    let (mut lo, mut hi) = (ord64(a), ord64(b));
    assert!(!pred(reference(a)) && pred(reference(b)));
    while (hi - lo).abs() > 1 {
        let mid = (lo + hi) / 2;
        let x = step64(0.0, mid as i64);
        if pred(reference(x)) {
            hi = mid
        } else {
            lo = mid
        }
    }
    for k in -4..4 {
        let x = step64(0.0, hi as i64 + k);
        let (got, want) = (f(x), reference(x));
        assert!(
            pred(got) == pred(want),
            "f64 {name}({x:e}) = {got:e} on the other side of {want:e}"
        );
        assert!(
            ulps64(got, want) <= bound,
            "f64 {name}({x:e}) = {got:e}, std gives {want:e}"
        );
    }
}

// ---- generators shared by several functions ----

fn any32(r: &mut Rng) -> f32 {
    f32::from_bits(r.next() as u32)
}
fn any64(r: &mut Rng) -> f64 {
    f64::from_bits(r.next())
}
fn positive32(r: &mut Rng) -> f32 {
    f32::from_bits(r.next() as u32 & 0x7F7F_FFFF)
}
fn positive64(r: &mut Rng) -> f64 {
    f64::from_bits(r.next() & 0x7FEF_FFFF_FFFF_FFFF)
}
fn mag32(r: &mut Rng) -> f32 {
    r.log_uniform(-45.0, 38.5, true) as f32
}
fn mag64(r: &mut Rng) -> f64 {
    r.log_uniform(-323.0, 308.2, true)
}
fn small32(r: &mut Rng) -> f32 {
    r.log_uniform(-12.0, 0.0, true) as f32
}
fn small64(r: &mut Rng) -> f64 {
    r.log_uniform(-20.0, 0.0, true)
}
fn unit32(r: &mut Rng) -> f32 {
    r.uniform(-1.0, 1.0) as f32
}
fn unit64(r: &mut Rng) -> f64 {
    r.uniform(-1.0, 1.0)
}

// ---- exp ----

fn exp_ref32(x: f32) -> f32 {
    (x as f64).exp() as f32
}

#[test]
fn exp_f32() {
    let gens: [Gen32; 5] = [
        any32,
        mag32,
        small32,
        |r| r.uniform(-104.0, 89.0) as f32,
        |r| {
            // Around the overflow, subnormal and underflow thresholds.
            let c = [88.722_83f32, -87.336_55, -103.972_08][r.int(3) as usize];
            step32(c, r.int(2000) - 1000)
        },
    ];
    sweep32("exp", math::f32::exp, exp_ref32, &gens, 1.0);
    specials32(
        "exp",
        math::f32::exp,
        f32::exp,
        1.0,
        &[100.0, -110.0, 88.0, -87.0, -100.0],
    );
    threshold32(
        "exp",
        math::f32::exp,
        f32::exp,
        |y| y.is_infinite(),
        88.0,
        89.0,
        1.0,
    );
    threshold32(
        "exp",
        math::f32::exp,
        f32::exp,
        |y| y == 0.0,
        -100.0,
        -105.0,
        1.0,
    );
}

#[test]
fn exp_f64() {
    let gens: [Gen64; 5] = [
        any64,
        mag64,
        small64,
        |r| r.uniform(-746.0, 710.0),
        |r| {
            let c = [
                709.782_712_893_384,
                -708.396_418_532_264_1,
                -745.133_219_101_941_1,
            ][r.int(3) as usize];
            step64(c, r.int(2000) - 1000)
        },
    ];
    sweep64("exp", math::f64::exp, f64::exp, &gens, 1.0);
    specials64(
        "exp",
        math::f64::exp,
        f64::exp,
        1.0,
        &[1000.0, -1000.0, 709.0, -708.0, -740.0],
    );
    threshold64(
        "exp",
        math::f64::exp,
        f64::exp,
        |y| y.is_infinite(),
        709.0,
        710.0,
        1.0,
    );
    threshold64(
        "exp",
        math::f64::exp,
        f64::exp,
        |y| y == 0.0,
        -740.0,
        -746.0,
        1.0,
    );
}

// ---- exp_m1 ----

#[test]
fn exp_m1_f32() {
    let gens: [Gen32; 5] = [any32, mag32, small32, unit32, |r| {
        r.uniform(-20.0, 89.0) as f32
    }];
    sweep32(
        "exp_m1",
        math::f32::exp_m1,
        |x| (x as f64).exp_m1() as f32,
        &gens,
        2.0,
    );
    specials32(
        "exp_m1",
        math::f32::exp_m1,
        f32::exp_m1,
        2.0,
        &[100.0, -100.0, -17.0, -20.0],
    );
    threshold32(
        "exp_m1",
        math::f32::exp_m1,
        f32::exp_m1,
        |y| y.is_infinite(),
        88.0,
        89.0,
        2.0,
    );
}

#[test]
fn exp_m1_f64() {
    let gens: [Gen64; 5] = [any64, mag64, small64, unit64, |r| r.uniform(-40.0, 710.0)];
    sweep64("exp_m1", math::f64::exp_m1, f64::exp_m1, &gens, 2.0);
    specials64(
        "exp_m1",
        math::f64::exp_m1,
        f64::exp_m1,
        2.0,
        &[1000.0, -1000.0, -38.0, -40.0],
    );
    threshold64(
        "exp_m1",
        math::f64::exp_m1,
        f64::exp_m1,
        |y| y.is_infinite(),
        709.0,
        710.0,
        2.0,
    );
}

// ---- ln ----

#[test]
fn ln_f32() {
    let gens: [Gen32; 5] = [
        any32,
        positive32,
        |r| r.log_uniform(-45.0, 38.5, false) as f32,
        |r| step32(1.0, r.int(20_000) - 10_000),
        |r| r.uniform(0.5, 2.0) as f32,
    ];
    sweep32("ln", math::f32::ln, |x| (x as f64).ln() as f32, &gens, 1.0);
    specials32("ln", math::f32::ln, f32::ln, 1.0, &[2.0, 1e-42]);
}

#[test]
fn ln_f64() {
    let gens: [Gen64; 5] = [
        any64,
        positive64,
        |r| r.log_uniform(-323.0, 308.2, false),
        |r| step64(1.0, r.int(20_000) - 10_000),
        |r| r.uniform(0.5, 2.0),
    ];
    sweep64("ln", math::f64::ln, f64::ln, &gens, 1.0);
    specials64("ln", math::f64::ln, f64::ln, 1.0, &[2.0, 1e-320]);
}

// ---- ln_1p ----

#[test]
fn ln_1p_f32() {
    let gens: [Gen32; 6] = [
        any32,
        mag32,
        small32,
        unit32,
        |r| (-1.0 + r.log_uniform(-7.5, 0.0, false)) as f32,
        |r| r.log_uniform(-45.0, 38.5, false) as f32,
    ];
    sweep32(
        "ln_1p",
        math::f32::ln_1p,
        |x| (x as f64).ln_1p() as f32,
        &gens,
        2.0,
    );
    specials32(
        "ln_1p",
        math::f32::ln_1p,
        f32::ln_1p,
        2.0,
        &[-2.0, f32::EPSILON, -0.999_999_94],
    );
}

#[test]
fn ln_1p_f64() {
    let gens: [Gen64; 6] = [
        any64,
        mag64,
        small64,
        unit64,
        |r| -1.0 + r.log_uniform(-16.0, 0.0, false),
        |r| r.log_uniform(-323.0, 308.2, false),
    ];
    sweep64("ln_1p", math::f64::ln_1p, f64::ln_1p, &gens, 2.0);
    specials64(
        "ln_1p",
        math::f64::ln_1p,
        f64::ln_1p,
        2.0,
        &[-2.0, f64::EPSILON],
    );
}

// ---- tanh ----

#[test]
fn tanh_f32() {
    let gens: [Gen32; 5] = [any32, mag32, small32, unit32, |r| {
        r.uniform(-10.0, 10.0) as f32
    }];
    sweep32(
        "tanh",
        math::f32::tanh,
        |x| (x as f64).tanh() as f32,
        &gens,
        2.0,
    );
    specials32(
        "tanh",
        math::f32::tanh,
        f32::tanh,
        2.0,
        &[10.0, -10.0, 9.1, 30.0],
    );
}

// Double-double arithmetic for an `f64` `tanh` reference more exact than glibc's
// (whose own error reaches 2 ulp).
type Dd = (f64, f64);

fn fast_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    (s, b - (s - a))
}

fn dd_add(a: Dd, b: Dd) -> Dd {
    let s = a.0 + b.0;
    let bb = s - a.0;
    let e = (a.0 - (s - bb)) + (b.0 - bb);
    fast_two_sum(s, e + a.1 + b.1)
}

fn dd_mul(a: Dd, b: Dd) -> Dd {
    let p = a.0 * b.0;
    let e = a.0.mul_add(b.0, -p) + (a.0 * b.1 + a.1 * b.0);
    fast_two_sum(p, e)
}

fn dd_div(a: Dd, b: Dd) -> Dd {
    let q1 = a.0 / b.0;
    let r = dd_add(a, dd_mul(b, (-q1, 0.0)));
    fast_two_sum(q1, r.0 / b.0)
}

/// `tanh` within about 0.5 ulp: `sinh / cosh` from their Taylor series in
/// double-double for `|x| < 2`, `1 - 2e/(1 + e)` with `e = e^{-2|x|}` beyond.
fn tanh_ref64(x: f64) -> f64 {
    let a = x.abs();
    if a >= 2.0 || a.is_nan() {
        let e = (-2.0 * a).exp();
        return (1.0 - 2.0 * e / (1.0 + e)).copysign(x);
    }
    let x2 = dd_mul((a, 0.0), (a, 0.0));
    let (mut sh, mut ch) = ((a, 0.0), (1.0, 0.0));
    let (mut ts, mut tc) = ((a, 0.0), (1.0, 0.0));
    for k in 1..=24 {
        let k = k as f64;
        ts = dd_div(dd_mul(ts, x2), ((2.0 * k) * (2.0 * k + 1.0), 0.0));
        tc = dd_div(dd_mul(tc, x2), ((2.0 * k - 1.0) * (2.0 * k), 0.0));
        sh = dd_add(sh, ts);
        ch = dd_add(ch, tc);
    }
    dd_div(sh, ch).0.copysign(x)
}

#[test]
fn tanh_f64() {
    let gens: [Gen64; 5] = [any64, mag64, small64, unit64, |r| r.uniform(-20.0, 20.0)];
    sweep64("tanh", math::f64::tanh, tanh_ref64, &gens, 2.0);
    // glibc's tanh, for the record (not asserted on: it is itself up to 2 ulp off).
    sweep64("tanh (vs glibc)", math::f64::tanh, f64::tanh, &gens, 4.0);
    specials64(
        "tanh",
        math::f64::tanh,
        f64::tanh,
        2.0,
        &[20.0, -20.0, 19.1, 30.0],
    );
}

// ---- sigmoid ----

fn sigmoid_ref32(x: f32) -> f32 {
    let x = x as f64;
    let e = (-x.abs()).exp();
    (if x < 0.0 { e } else { 1.0 } / (1.0 + e)) as f32
}

/// `std`'s `exp`, then `num / (1 + e)` with its rounding errors compensated.
fn sigmoid_ref64(x: f64) -> f64 {
    let e = (-x.abs()).exp();
    let s = 1.0 + e;
    let s_err = e - (s - 1.0);
    let num = if x < 0.0 { e } else { 1.0 };
    let q = num / s;
    let rem = (-q).mul_add(s, num) - q * s_err;
    q + rem / s
}

#[test]
fn sigmoid_f32() {
    let gens: [Gen32; 5] = [
        any32,
        mag32,
        small32,
        |r| r.uniform(-20.0, 20.0) as f32,
        |r| r.uniform(-110.0, 110.0) as f32,
    ];
    sweep32("sigmoid", math::f32::sigmoid, sigmoid_ref32, &gens, 2.0);
    specials32(
        "sigmoid",
        math::f32::sigmoid,
        sigmoid_ref32,
        2.0,
        &[100.0, -100.0, 17.0, -104.0, -105.0],
    );
}

#[test]
fn sigmoid_f64() {
    let gens: [Gen64; 5] = [
        any64,
        mag64,
        small64,
        |r| r.uniform(-40.0, 40.0),
        |r| r.uniform(-750.0, 750.0),
    ];
    sweep64("sigmoid", math::f64::sigmoid, sigmoid_ref64, &gens, 2.0);
    specials64(
        "sigmoid",
        math::f64::sigmoid,
        sigmoid_ref64,
        2.0,
        &[1000.0, -1000.0, 37.0, -745.0, -746.0],
    );
}

// ---- sin, cos ----

/// Where the `f32` reduction is exact (`2^13 · π/2`).
const TRIG32: f64 = 12_867.0;
/// Where the `f64` reduction is exact (`2^20 · π/2`).
const TRIG64: f64 = 1_647_099.0;

fn trig_gens32() -> [Gen32; 5] {
    [
        |r| loop {
            let x = any32(r);
            if x.is_nan() || (x.abs() as f64) <= TRIG32 {
                return x;
            }
        },
        |r| r.log_uniform(-45.0, TRIG32.log10(), true) as f32,
        |r| r.uniform(-TRIG32, TRIG32) as f32,
        |r| r.uniform(-10.0, 10.0) as f32,
        // Next to multiples of π/2, where the reduction cancels most.
        |r| {
            let k = r.int(8192) as f64;
            step32((k * std::f64::consts::FRAC_PI_2) as f32, r.int(7) - 3)
        },
    ]
}

fn trig_gens64() -> [Gen64; 5] {
    [
        |r| loop {
            let x = any64(r);
            if x.is_nan() || x.abs() <= TRIG64 {
                return x;
            }
        },
        |r| r.log_uniform(-323.0, TRIG64.log10(), true),
        |r| r.uniform(-TRIG64, TRIG64),
        |r| r.uniform(-10.0, 10.0),
        |r| {
            // The nearest doubles to multiples of π/2: k·π/2 in double-double.
            let k = r.int(1 << 20) as f64;
            let x = k * std::f64::consts::FRAC_PI_2 + k * 6.123_233_995_736_766e-17;
            step64(x, r.int(7) - 3)
        },
    ]
}

/// The special values without those beyond the accurate range.
fn trig_specials32(extra: &[f32]) -> Vec<f32> {
    SPECIAL32
        .iter()
        .chain(extra)
        .copied()
        .filter(|x| x.is_nan() || x.is_infinite() || (x.abs() as f64) <= TRIG32)
        .collect()
}

fn trig_specials64(extra: &[f64]) -> Vec<f64> {
    SPECIAL64
        .iter()
        .chain(extra)
        .copied()
        .filter(|x| x.is_nan() || x.is_infinite() || x.abs() <= TRIG64)
        .collect()
}

/// Beyond the accurate range the result is still in [-1, 1] (NaN for ±∞).
const FAR32: [f32; 7] = [f32::MAX, f32::MIN, 1e30, -1e30, 1e10, 16_777_216.0, 1e5];
const FAR64: [f64; 7] = [f64::MAX, f64::MIN, 1e300, -1e300, 1e20, 1e16, 1e10];

/// Beyond the accurate range: the absolute error by decade of `|x|`, printed for the
/// documentation (not asserted on, but the result must stay in [-1, 1]).
#[test]
fn trig_beyond_range() {
    let mut rng = Rng(0x7A16);
    for lo in [4.1f64, 5.0, 6.0, 7.0, 8.0, 10.0] {
        let (mut e32, mut e64) = (0.0f64, 0.0f64);
        for _ in 0..20_000 {
            let x = rng.log_uniform(lo, lo + 1.0, true);
            let x32 = x as f32;
            for (got, want) in [
                (math::f32::sin(x32), (x32 as f64).sin()),
                (math::f32::cos(x32), (x32 as f64).cos()),
            ] {
                assert!(got.abs() <= 1.0, "{x32:e}");
                e32 = e32.max((got as f64 - want).abs());
            }
            let x64 = x * 1e3;
            for (got, want) in [
                (math::f64::sin(x64), x64.sin()),
                (math::f64::cos(x64), x64.cos()),
            ] {
                assert!(got.abs() <= 1.0, "{x64:e}");
                e64 = e64.max((got - want).abs());
            }
        }
        eprintln!(
            "beyond range: f32 |x| in [1e{lo}, 1e{}]: max abs error {e32:e}; f64 |x| in [1e{}, 1e{}]: {e64:e}",
            lo + 1.0,
            lo + 3.0,
            lo + 4.0
        );
    }
}

#[test]
fn sin_f32() {
    sweep32(
        "sin",
        math::f32::sin,
        |x| (x as f64).sin() as f32,
        &trig_gens32(),
        2.0,
    );
    values32(
        "sin",
        math::f32::sin,
        f32::sin,
        2.0,
        &trig_specials32(&[1e4, -1e4, std::f32::consts::PI]),
    );
    for x in FAR32 {
        assert!(math::f32::sin(x).abs() <= 1.0, "sin({x:e})");
    }
}

#[test]
fn cos_f32() {
    sweep32(
        "cos",
        math::f32::cos,
        |x| (x as f64).cos() as f32,
        &trig_gens32(),
        2.0,
    );
    values32(
        "cos",
        math::f32::cos,
        f32::cos,
        2.0,
        &trig_specials32(&[1e4, -1e4, std::f32::consts::PI]),
    );
    for x in FAR32 {
        assert!(math::f32::cos(x).abs() <= 1.0, "cos({x:e})");
    }
}

#[test]
fn sin_f64() {
    sweep64("sin", math::f64::sin, f64::sin, &trig_gens64(), 2.0);
    values64(
        "sin",
        math::f64::sin,
        f64::sin,
        2.0,
        &trig_specials64(&[1e6, -1e6, std::f64::consts::PI]),
    );
    for x in FAR64 {
        assert!(math::f64::sin(x).abs() <= 1.0, "sin({x:e})");
    }
}

#[test]
fn cos_f64() {
    sweep64("cos", math::f64::cos, f64::cos, &trig_gens64(), 2.0);
    values64(
        "cos",
        math::f64::cos,
        f64::cos,
        2.0,
        &trig_specials64(&[1e6, -1e6, std::f64::consts::PI]),
    );
    for x in FAR64 {
        assert!(math::f64::cos(x).abs() <= 1.0, "cos({x:e})");
    }
}

// ---- erf ----

#[test]
fn erf_f32() {
    let gens: [Gen32; 6] = [
        any32,
        mag32,
        small32,
        |r| r.uniform(-5.0, 5.0) as f32,
        |r| r.uniform(0.9, 1.1) as f32,
        |r| r.uniform(3.7, 4.0) as f32,
    ];
    sweep32(
        "erf",
        math::f32::erf,
        |x| libm::erf(x as f64) as f32,
        &gens,
        2.0,
    );
    specials32(
        "erf",
        math::f32::erf,
        libm::erff,
        2.0,
        &[4.0, -4.0, 3.92, 10.0],
    );
}

#[test]
fn erf_f64() {
    let gens: [Gen64; 6] = [
        any64,
        mag64,
        small64,
        |r| r.uniform(-6.5, 6.5),
        |r| r.uniform(0.9, 1.1),
        |r| r.uniform(5.5, 6.5),
    ];
    sweep64("erf", math::f64::erf, libm::erf, &gens, 2.0);
    specials64(
        "erf",
        math::f64::erf,
        libm::erf,
        2.0,
        &[6.0, -6.0, 5.93, 10.0],
    );
}

// ---- powf ----

type Gen2_64 = fn(&mut Rng) -> (f64, f64);

/// Pairs `(x, y)`: the generators are written in `f64` and rounded for `f32`.
fn pow_gens() -> Vec<Gen2_64> {
    vec![
        |r| (any64(r), any64(r)),
        |r| (r.log_uniform(-37.0, 38.0, false), r.uniform(-10.0, 10.0)),
        |r| (r.uniform(0.0, 4.0), r.uniform(-100.0, 100.0)),
        // x near 1, |y| large: the result is in range only if ln x is accurate.
        |r| (1.0 + r.uniform(-1e-3, 1e-3), r.log_uniform(0.0, 5.0, true)),
        // Negative x with an integral y (signed result) or not (NaN).
        |r| (-r.log_uniform(-5.0, 5.0, false), r.int(81) as f64 - 40.0),
        |r| (-r.log_uniform(-5.0, 5.0, false), r.uniform(-40.0, 40.0)),
        |r| (r.log_uniform(-300.0, 300.0, false), r.uniform(-2.0, 2.0)),
    ]
}

const POW_SPECIAL32: [f32; 27] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    -3.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    16_777_215.0,
    -16_777_215.0,
    16_777_216.0,
    8_388_609.0,
    -8_388_609.0,
    0.999_999_94,
    1.000_000_1,
];

#[test]
fn powf_f32() {
    let gens = pow_gens();
    let mut rng = Rng(0x9047);
    let (mut worst, mut at) = (0.0f64, (0.0f32, 0.0f32));
    for i in 0..N {
        let (x, y) = gens[i % gens.len()](&mut rng);
        let (x, y) = (x as f32, y as f32);
        let u = ulps32(math::f32::powf(x, y), (x as f64).powf(y as f64) as f32);
        if u > worst {
            worst = u;
            at = (x, y);
        }
    }
    eprintln!("f32 powf: max {worst} ulp at (x, y) = {at:?}, {N} samples");
    assert!(worst <= 1.0, "f32 powf: {worst} ulp at {at:?}");
    // Exact where std gives ±0, ±∞, NaN or ±1; within the bound elsewhere.
    for x in POW_SPECIAL32 {
        for y in POW_SPECIAL32 {
            let (got, want) = (math::f32::powf(x, y), x.powf(y));
            if !want.is_finite() || want == 0.0 || want.abs() == 1.0 {
                assert!(
                    same32(got, want),
                    "f32 powf({x:e}, {y:e}) = {got:e}, std gives {want:e}"
                );
            } else {
                assert!(
                    ulps32(got, want) <= 1.0,
                    "f32 powf({x:e}, {y:e}) = {got:e}, std gives {want:e}"
                );
            }
        }
    }
}

const POW_SPECIAL64: [f64; 27] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    -3.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MAX,
    f64::MIN,
    f64::MIN_POSITIVE,
    5e-324,
    -5e-324,
    9_007_199_254_740_991.0,
    -9_007_199_254_740_991.0,
    9_007_199_254_740_992.0,
    4_503_599_627_370_497.0,
    -4_503_599_627_370_497.0,
    0.999_999_999_999_999_9,
    1.000_000_000_000_000_2,
];

#[test]
fn powf_f64() {
    let mut gens = pow_gens();
    // x near 1 and y up to 1e15: |y·ln x| up to ~700 with ln x tiny.
    gens.push(|r| {
        (
            1.0 + r.uniform(-1e-12, 1e-12),
            r.log_uniform(10.0, 14.8, true),
        )
    });
    // Results near the overflow and underflow thresholds.
    gens.push(|r| {
        let x = r.log_uniform(0.1, 300.0, false);
        let t = if r.next() & 1 == 1 { 709.7 } else { -745.0 };
        (x, t / x.ln() * (1.0 + r.uniform(-1e-4, 1e-4)))
    });
    let mut rng = Rng(0x9064);
    let (mut worst, mut at) = (0.0f64, (0.0f64, 0.0f64));
    for i in 0..N {
        let (x, y) = gens[i % gens.len()](&mut rng);
        let u = ulps64(math::f64::powf(x, y), x.powf(y));
        if u > worst {
            worst = u;
            at = (x, y);
        }
    }
    eprintln!("f64 powf: max {worst} ulp at (x, y) = {at:?}, {N} samples");
    assert!(worst <= 1.0, "f64 powf: {worst} ulp at {at:?}");
    for x in POW_SPECIAL64 {
        for y in POW_SPECIAL64 {
            let (got, want) = (math::f64::powf(x, y), x.powf(y));
            if !want.is_finite() || want == 0.0 || want.abs() == 1.0 {
                assert!(
                    same64(got, want),
                    "f64 powf({x:e}, {y:e}) = {got:e}, std gives {want:e}"
                );
            } else {
                assert!(
                    ulps64(got, want) <= 1.0,
                    "f64 powf({x:e}, {y:e}) = {got:e}, std gives {want:e}"
                );
            }
        }
    }
}

// ---- round_ties_even ----

#[test]
fn round_ties_even() {
    let mut rng = Rng(7);
    for i in 0..N {
        let x = match i % 3 {
            0 => any32(&mut rng),
            1 => rng.uniform(-1e7, 1e7) as f32,
            _ => (rng.int(4001) as f32 - 2000.0) * 0.5,
        };
        assert!(
            same32(math::f32::round_ties_even(x), x.round_ties_even()),
            "{x:e}"
        );
        let y = match i % 3 {
            0 => any64(&mut rng),
            1 => rng.uniform(-1e16, 1e16),
            _ => (rng.int(4001) as f64 - 2000.0) * 0.5,
        };
        assert!(
            same64(math::f64::round_ties_even(y), y.round_ties_even()),
            "{y:e}"
        );
    }
    for x in SPECIAL32 {
        assert!(
            same32(math::f32::round_ties_even(x), x.round_ties_even()),
            "{x:e}"
        );
    }
    for x in SPECIAL64 {
        assert!(
            same64(math::f64::round_ties_even(x), x.round_ties_even()),
            "{x:e}"
        );
    }
}
