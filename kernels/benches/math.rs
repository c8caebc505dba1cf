//! `std`'s math functions (calls into libm, one element at a time) against
//! `autograd_kernels::math` (inlined, vectorised) in the loop the library runs:
//! `for i in 0..n { out[i] = f(x[i]) }` over 2^20 `f32` or `f64` values.
//!
//! Each function is timed three ways: `std`, `ours` (the baseline x86-64 build: SSE2)
//! and, where the CPU has them, `ours-avx2` (the same loop in a function compiled with
//! `#[target_feature(enable = "avx2,fma")]`, as a run-time dispatch would pick it).
//! `mish` is `x * tanh(ln_1p(exp(x)))` composed from each side's functions.
//!
//! `cargo bench -p autograd-kernels --bench math`; criterion's throughput is in
//! elements per second.

// Element functions are passed as closures on purpose (see `map`).
#![allow(clippy::redundant_closure)]

use autograd_kernels::math;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1 << 20;

/// `n` values spread over `[lo, hi]` (a fixed scramble, no RNG dependency).
fn inputs(lo: f64, hi: f64) -> Vec<f64> {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    (0..N)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// The loop. Its element function is always passed as a closure, never as a
/// function item (`math::f64::erf`): a closure has this one caller and is inlined,
/// while a function item goes through its `Fn::call` shim, which LLVM may leave out
/// of line when the function is large and called from several loops. It did so for
/// `f64` `erf` here, and the loop then ran scalar, one call per element.
#[inline(always)]
fn map<T: Copy>(x: &[T], out: &mut [T], f: impl Fn(T) -> T) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f(v);
    }
}

#[inline(always)]
fn map2<T: Copy>(x: &[T], y: &[T], out: &mut [T], f: impl Fn(T, T) -> T) {
    for ((o, &a), &b) in out.iter_mut().zip(x).zip(y) {
        *o = f(a, b);
    }
}

/// Defines, for one precision, a function timing each math function three ways.
macro_rules! bench_precision {
    ($name:ident, $t:ident) => {
        fn $name(c: &mut Criterion) {
            mod avx2 {
                use autograd_kernels::math::$t as m;
                macro_rules! avx2_fn {
                    ($f:ident) => {
                        /// # Safety
                        /// The CPU must have AVX2 and FMA.
                        #[target_feature(enable = "avx2,fma")]
                        pub unsafe fn $f(x: &[$t], out: &mut [$t]) {
                            super::map(x, out, |v| m::$f(v))
                        }
                    };
                }
                avx2_fn!(exp);
                avx2_fn!(exp_m1);
                avx2_fn!(ln);
                avx2_fn!(ln_1p);
                avx2_fn!(tanh);
                avx2_fn!(sigmoid);
                avx2_fn!(sin);
                avx2_fn!(cos);
                avx2_fn!(erf);
                /// # Safety
                /// The CPU must have AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                pub unsafe fn mish(x: &[$t], out: &mut [$t]) {
                    super::map(x, out, |v| v * m::tanh(m::ln_1p(m::exp(v))))
                }
                /// # Safety
                /// The CPU must have AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                pub unsafe fn powf(x: &[$t], y: &[$t], out: &mut [$t]) {
                    super::map2(x, y, out, |a, b| m::powf(a, b))
                }
            }
            let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            type Unary = (
                &'static str,
                fn(&[$t], &mut [$t]),
                fn(&[$t], &mut [$t]),
                unsafe fn(&[$t], &mut [$t]),
                f64,
                f64,
            );
            // Each loop is a whole function: the element function is inlined into it (for
            // `std`, that leaves a call into libm per element).
            let cases: [Unary; 10] = [
                (
                    "exp",
                    |x, o| map(x, o, |v| <$t>::exp(v)),
                    |x, o| map(x, o, |v| math::$t::exp(v)),
                    avx2::exp,
                    -80.0,
                    80.0,
                ),
                (
                    "exp_m1",
                    |x, o| map(x, o, |v| <$t>::exp_m1(v)),
                    |x, o| map(x, o, |v| math::$t::exp_m1(v)),
                    avx2::exp_m1,
                    -10.0,
                    10.0,
                ),
                (
                    "ln",
                    |x, o| map(x, o, |v| <$t>::ln(v)),
                    |x, o| map(x, o, |v| math::$t::ln(v)),
                    avx2::ln,
                    1e-3,
                    1e3,
                ),
                (
                    "ln_1p",
                    |x, o| map(x, o, |v| <$t>::ln_1p(v)),
                    |x, o| map(x, o, |v| math::$t::ln_1p(v)),
                    avx2::ln_1p,
                    -0.9,
                    10.0,
                ),
                (
                    "tanh",
                    |x, o| map(x, o, |v| <$t>::tanh(v)),
                    |x, o| map(x, o, |v| math::$t::tanh(v)),
                    avx2::tanh,
                    -5.0,
                    5.0,
                ),
                (
                    "sigmoid",
                    |x, o| map(x, o, |v: $t| 1.0 / (1.0 + (-v).exp())),
                    |x, o| map(x, o, |v| math::$t::sigmoid(v)),
                    avx2::sigmoid,
                    -10.0,
                    10.0,
                ),
                (
                    "sin",
                    |x, o| map(x, o, |v| <$t>::sin(v)),
                    |x, o| map(x, o, |v| math::$t::sin(v)),
                    avx2::sin,
                    -100.0,
                    100.0,
                ),
                (
                    "cos",
                    |x, o| map(x, o, |v| <$t>::cos(v)),
                    |x, o| map(x, o, |v| math::$t::cos(v)),
                    avx2::cos,
                    -100.0,
                    100.0,
                ),
                (
                    "erf",
                    |x, o| map(x, o, libm_erf::<$t>),
                    |x, o| map(x, o, |v| math::$t::erf(v)),
                    avx2::erf,
                    -4.0,
                    4.0,
                ),
                (
                    "mish",
                    |x, o| map(x, o, |v: $t| v * v.exp().ln_1p().tanh()),
                    |x, o| {
                        map(x, o, |v| {
                            v * math::$t::tanh(math::$t::ln_1p(math::$t::exp(v)))
                        })
                    },
                    avx2::mish,
                    -10.0,
                    10.0,
                ),
            ];
            for (name, std_f, ours, ours_avx2, lo, hi) in cases {
                let x: Vec<$t> = inputs(lo, hi).into_iter().map(|v| v as $t).collect();
                let mut out = vec![0.0 as $t; N];
                let mut g = c.benchmark_group(format!("{}/{name}", stringify!($t)));
                g.throughput(Throughput::Elements(N as u64));
                g.bench_function(BenchmarkId::from_parameter("std"), |b| {
                    b.iter(|| std_f(black_box(&x), black_box(&mut out)))
                });
                g.bench_function(BenchmarkId::from_parameter("ours"), |b| {
                    b.iter(|| ours(black_box(&x), black_box(&mut out)))
                });
                if avx2 {
                    g.bench_function(BenchmarkId::from_parameter("ours-avx2"), |b| {
                        // SAFETY: the CPU has AVX2 and FMA (checked above).
                        b.iter(|| unsafe { ours_avx2(black_box(&x), black_box(&mut out)) })
                    });
                }
                g.finish();
            }
            let x: Vec<$t> = inputs(0.0, 10.0).into_iter().map(|v| v as $t).collect();
            let y: Vec<$t> = inputs(-5.0, 5.0)
                .into_iter()
                .rev()
                .map(|v| v as $t)
                .collect();
            let mut out = vec![0.0 as $t; N];
            let mut g = c.benchmark_group(format!("{}/powf", stringify!($t)));
            g.throughput(Throughput::Elements(N as u64));
            g.bench_function(BenchmarkId::from_parameter("std"), |b| {
                b.iter(|| {
                    map2(black_box(&x), black_box(&y), black_box(&mut out), |a, b| {
                        <$t>::powf(a, b)
                    })
                })
            });
            g.bench_function(BenchmarkId::from_parameter("ours"), |b| {
                b.iter(|| {
                    map2(black_box(&x), black_box(&y), black_box(&mut out), |a, b| {
                        math::$t::powf(a, b)
                    })
                })
            });
            if avx2 {
                g.bench_function(BenchmarkId::from_parameter("ours-avx2"), |b| {
                    // SAFETY: the CPU has AVX2 and FMA (checked above).
                    b.iter(|| unsafe {
                        avx2::powf(black_box(&x), black_box(&y), black_box(&mut out))
                    })
                });
            }
            g.finish();
        }
    };
}

/// `erf` has no `std` version: the `libm` crate's (a scalar port of musl's) stands in.
trait LibmErf {
    fn erf_libm(self) -> Self;
}
impl LibmErf for f32 {
    fn erf_libm(self) -> f32 {
        libm::erff(self)
    }
}
impl LibmErf for f64 {
    fn erf_libm(self) -> f64 {
        libm::erf(self)
    }
}
fn libm_erf<T: LibmErf>(v: T) -> T {
    v.erf_libm()
}

bench_precision!(bench_f32, f32);
bench_precision!(bench_f64, f64);

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10);
    targets = bench_f32, bench_f64
}
criterion_main!(benches);
