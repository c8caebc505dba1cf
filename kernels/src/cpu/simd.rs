//! Which compiled copy of the vectorized CPU loops runs.
//!
//! The loops of generated kernels ([`crate::generated::loops`]), the streamed
//! results and the fused sums are compiled more than once: for the baseline of the
//! target, for AVX2 with FMA and, the generated loops, for AVX-512. Each call runs
//! the widest copy the CPU has ([`detect`], checked once), unless the environment
//! variable `AUTOGRAD_SIMD` narrows it for the process ([`active`]): `avx2`, or
//! `baseline` (also `none`, `off`, `0`). Narrowing is for comparing the copies on one
//! machine, and for CPUs that lower their clock while running AVX-512 code. Every
//! copy computes the same values, bit for bit: Rust never contracts a product and a
//! sum into one instruction unless the code says `mul_add`, which is one rounding at
//! any width, and each lane computes its own elements.
//!
//! The generated loops gain most from AVX-512: a user-defined activation's value
//! and derivative (`exp`, `ln`, `tanh` and their derivatives, in one loop) keep
//! their constants in AVX-512's 32 registers where AVX2's 16 reload them from
//! memory. The streamed results and the fused sums, bound by memory, have no
//! AVX-512 copy.
//!
//! `by_simd!` is the one place a loop's copy is chosen: the generated
//! loops ([`crate::cpu::loops`]), the streamed maps and the block sums all call
//! their copies through it.

use std::sync::atomic::{AtomicU8, Ordering};

/// A set of vector instructions the CPU loops have a compiled copy for, narrowest
/// first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Simd {
    /// The target's baseline (SSE2 on x86-64): what every CPU of the target runs.
    Baseline,
    /// AVX2 with FMA (x86-64).
    Avx2,
    /// AVX-512: the F, VL, DQ and BW subsets, with AVX2 and FMA (x86-64).
    Avx512,
}

impl Simd {
    /// The name `AUTOGRAD_SIMD` takes for it: `baseline`, `avx2` or `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            Simd::Baseline => "baseline",
            Simd::Avx2 => "avx2",
            Simd::Avx512 => "avx512",
        }
    }

    /// The set `AUTOGRAD_SIMD=value` asks for (case and surrounding spaces
    /// ignored); `None` for any other value, which leaves the widest set.
    pub fn parse(value: &str) -> Option<Simd> {
        match value.trim().to_ascii_lowercase().as_str() {
            "avx512" | "avx-512" => Some(Simd::Avx512),
            "avx2" => Some(Simd::Avx2),
            "baseline" | "none" | "off" | "0" => Some(Simd::Baseline),
            _ => None,
        }
    }
}

/// Runs the copy of a loop compiled for the set `$simd` (narrowed to what the CPU
/// has): `return`s `$avx512(args..)` or `$avx2(args..)` from the calling function
/// (functions marked `#[target_feature]` for that set), or evaluates to `$base`
/// for [`Simd::Baseline`] and on other targets. A loop without an AVX-512 copy
/// passes its AVX2 copy for both.
macro_rules! by_simd {
    ($simd:expr, $avx512:ident, $avx2:ident, $base:expr, ($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        match $crate::cpu::simd::Simd::min($simd, $crate::cpu::simd::detect()) {
            // SAFETY (both arms): the CPU has the set (`detect`).
            $crate::cpu::simd::Simd::Avx512 => return unsafe { $avx512($($arg),*) },
            $crate::cpu::simd::Simd::Avx2 => return unsafe { $avx2($($arg),*) },
            $crate::cpu::simd::Simd::Baseline => {}
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = $simd;
        $base
    }};
}
pub(crate) use by_simd;

/// The widest set this CPU has (of those the loops are compiled for), whatever
/// `AUTOGRAD_SIMD` says. Probed once.
#[inline]
pub fn detect() -> Simd {
    match DETECTED.load(Ordering::Relaxed) {
        0 => {
            let simd = probe();
            DETECTED.store(simd as u8 + 1, Ordering::Relaxed);
            simd
        }
        n => from_code(n),
    }
}

/// [`detect`]'s answer plus one, or 0 before the first call.
static DETECTED: AtomicU8 = AtomicU8::new(0);

fn probe() -> Simd {
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        if has!("avx2") && has!("fma") {
            if has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw") {
                return Simd::Avx512;
            }
            return Simd::Avx2;
        }
    }
    Simd::Baseline
}

/// The set whose code (`simd as u8 + 1`) is `n`, for `n` in 1..=3.
fn from_code(n: u8) -> Simd {
    match n {
        3 => Simd::Avx512,
        2 => Simd::Avx2,
        _ => Simd::Baseline,
    }
}

/// [`active`]'s answer plus one, or 0 before the first call.
static ACTIVE: AtomicU8 = AtomicU8::new(0);

/// The set the CPU loops run with: [`detect`]'s, or a narrower one that
/// `AUTOGRAD_SIMD` names (a wider one than the CPU has is not taken). Decided at
/// the first call, for the process.
#[inline]
pub fn active() -> Simd {
    match ACTIVE.load(Ordering::Relaxed) {
        0 => decide(),
        n => from_code(n),
    }
}

#[cold]
fn decide() -> Simd {
    let wanted = std::env::var("AUTOGRAD_SIMD")
        .ok()
        .and_then(|v| Simd::parse(&v));
    let simd = narrowed(detect(), wanted);
    ACTIVE.store(simd as u8 + 1, Ordering::Relaxed);
    simd
}

/// What runs on a CPU with `cpu` when `wanted` is asked for.
fn narrowed(cpu: Simd, wanted: Option<Simd>) -> Simd {
    wanted.map_or(cpu, |w| w.min(cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_narrows_the_set_and_never_widens_it() {
        assert_eq!(Simd::parse(" AVX2 "), Some(Simd::Avx2));
        assert_eq!(Simd::parse("avx512"), Some(Simd::Avx512));
        assert_eq!(Simd::parse("off"), Some(Simd::Baseline));
        assert_eq!(Simd::parse("sse9"), None);
        for s in [Simd::Baseline, Simd::Avx2, Simd::Avx512] {
            assert_eq!(Simd::parse(s.name()), Some(s));
        }
        assert_eq!(narrowed(Simd::Avx512, Some(Simd::Avx2)), Simd::Avx2);
        assert_eq!(narrowed(Simd::Avx2, Some(Simd::Avx512)), Simd::Avx2);
        assert_eq!(narrowed(Simd::Avx2, None), Simd::Avx2);
        // The process's choice is within what the CPU has.
        assert!(active() <= detect());
    }
}
