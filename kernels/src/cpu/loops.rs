//! The loops generated kernels run: `out[i] = f(ins[0][i], ..)` over slices of one
//! length. Separate functions per arity so that the compiler sees plain slices and
//! vectorizes. Each loop is compiled three times, for the target's baseline, for
//! AVX2 with FMA and for AVX-512 (on x86-64), and runs in the widest copy the CPU
//! has, or the one `AUTOGRAD_SIMD` narrows it to (see [`super::simd`], whose `by_simd!` picks the copy); the
//! copies compute the same bits. The macro marks the closures it passes
//! `#[inline(always)]`: a closure left as a call (which the compiler may choose for
//! a large one) runs one element at a time.
//!
//! Each loop has a form that appends to a `Vec` (what generated kernels call) and
//! one that writes a slice of uninitialised elements (`*_into`: a piece of a
//! parallel job writing its own region of one output); the `Vec` form reserves
//! room and runs the slice form in its spare capacity, so both compute the same
//! bits in the same loop.

use super::simd::{self, Simd, by_simd};
use std::mem::MaybeUninit;

macro_rules! map_n {
    ($name:ident, $within:ident, $into:ident, $into_with:ident, $avx2:ident, $avx512:ident, $n:literal) => {
        /// Appends `f(ins[0][i], .., ins[N-1][i])` to `out` for every `i` of the
        /// operands (slices of one length).
        #[inline(always)]
        pub fn $name<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut Vec<T>, f: F) {
            $within(simd::active(), ins, out, f)
        }

        /// This loop in the copy for `simd`, or in the widest the CPU has if
        /// narrower (the tests compare the copies).
        #[inline(always)]
        pub(crate) fn $within<T: Copy, F: Fn([T; $n]) -> T>(
            simd: Simd,
            ins: &[&[T]],
            out: &mut Vec<T>,
            f: F,
        ) {
            let n = ins.first().map_or(0, |s| s.len());
            out.reserve(n);
            let start = out.len();
            $into_with(simd, ins, &mut out.spare_capacity_mut()[..n], f);
            // SAFETY: the slice form wrote all `n` elements after the old length
            // (it writes every element of its target), within the capacity
            // reserved above.
            unsafe { out.set_len(start + n) };
        }

        /// Writes `f(ins[0][i], .., ins[N-1][i])` to `out[i]` for every `i` of
        /// `out` (each operand has at least as many elements): every element of
        /// `out` is initialised when it returns.
        #[inline(always)]
        pub fn $into<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut [MaybeUninit<T>], f: F) {
            $into_with(simd::active(), ins, out, f)
        }

        /// The slice form in the copy for `simd`, or in the widest the CPU has if
        /// narrower.
        #[inline(always)]
        pub(crate) fn $into_with<T: Copy, F: Fn([T; $n]) -> T>(
            simd: Simd,
            ins: &[&[T]],
            out: &mut [MaybeUninit<T>],
            f: F,
        ) {
            by_simd!(
                simd,
                $avx512,
                $avx2,
                body::<T, F, $n>(ins, out, f),
                (ins, out, f)
            )
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn $avx512<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut [MaybeUninit<T>], f: F) {
            body::<T, F, $n>(ins, out, f)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $avx2<T: Copy, F: Fn([T; $n]) -> T>(ins: &[&[T]], out: &mut [MaybeUninit<T>], f: F) {
            body::<T, F, $n>(ins, out, f)
        }
    };
}

/// Every element of `out` written, in place: no pass initialises it first (an
/// `extend` over an iterator of `f` does not vectorize; this loop does).
#[inline(always)]
fn body<T: Copy, F: Fn([T; N]) -> T, const N: usize>(
    ins: &[&[T]],
    out: &mut [MaybeUninit<T>],
    f: F,
) {
    let n = out.len();
    let ins: [&[T]; N] = std::array::from_fn(|k| &ins[k][..n]);
    for (i, o) in out.iter_mut().enumerate() {
        o.write(f(std::array::from_fn(|k| ins[k][i])));
    }
}

macro_rules! pair_n {
    ($name:ident, $within:ident, $into_with:ident, $avx2:ident, $avx512:ident, $n:literal) => {
        /// Appends `f(ins[0][i], .., ins[N-1][i])`, a pair of values, to `a` and
        /// `b` for every `i` of the operands (slices of one length).
        #[inline(always)]
        pub fn $name<T: Copy, F: Fn([T; $n]) -> (T, T)>(
            ins: &[&[T]],
            a: &mut Vec<T>,
            b: &mut Vec<T>,
            f: F,
        ) {
            $within(simd::active(), ins, a, b, f)
        }

        /// This loop in the copy for `simd`, or in the widest the CPU has if
        /// narrower (the tests compare the copies).
        #[inline(always)]
        pub(crate) fn $within<T: Copy, F: Fn([T; $n]) -> (T, T)>(
            simd: Simd,
            ins: &[&[T]],
            a: &mut Vec<T>,
            b: &mut Vec<T>,
            f: F,
        ) {
            let n = ins.first().map_or(0, |s| s.len());
            a.reserve(n);
            b.reserve(n);
            let (sa, sb) = (a.len(), b.len());
            $into_with(
                simd,
                ins,
                &mut a.spare_capacity_mut()[..n],
                &mut b.spare_capacity_mut()[..n],
                f,
            );
            // SAFETY: the slice form wrote all `n` elements after each old
            // length, within the capacity reserved above.
            unsafe {
                a.set_len(sa + n);
                b.set_len(sb + n);
            }
        }

        /// The slice form in the copy for `simd`, or in the widest the CPU has if
        /// narrower.
        #[inline(always)]
        pub(crate) fn $into_with<T: Copy, F: Fn([T; $n]) -> (T, T)>(
            simd: Simd,
            ins: &[&[T]],
            a: &mut [MaybeUninit<T>],
            b: &mut [MaybeUninit<T>],
            f: F,
        ) {
            by_simd!(
                simd,
                $avx512,
                $avx2,
                pair_body::<T, F, $n>(ins, a, b, f),
                (ins, a, b, f)
            )
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn $avx512<T: Copy, F: Fn([T; $n]) -> (T, T)>(
            ins: &[&[T]],
            a: &mut [MaybeUninit<T>],
            b: &mut [MaybeUninit<T>],
            f: F,
        ) {
            pair_body::<T, F, $n>(ins, a, b, f)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn $avx2<T: Copy, F: Fn([T; $n]) -> (T, T)>(
            ins: &[&[T]],
            a: &mut [MaybeUninit<T>],
            b: &mut [MaybeUninit<T>],
            f: F,
        ) {
            pair_body::<T, F, $n>(ins, a, b, f)
        }
    };
}

#[inline(always)]
fn pair_body<T: Copy, F: Fn([T; N]) -> (T, T), const N: usize>(
    ins: &[&[T]],
    a: &mut [MaybeUninit<T>],
    b: &mut [MaybeUninit<T>],
    f: F,
) {
    let n = a.len();
    let ins: [&[T]; N] = std::array::from_fn(|k| &ins[k][..n]);
    for (i, (oa, ob)) in a.iter_mut().zip(&mut b[..n]).enumerate() {
        let (x, y) = f(std::array::from_fn(|k| ins[k][i]));
        oa.write(x);
        ob.write(y);
    }
}

pair_n!(
    pair2,
    pair2_with,
    pair2_into_with,
    pair2_avx2,
    pair2_avx512,
    2
);
pair_n!(
    pair3,
    pair3_with,
    pair3_into_with,
    pair3_avx2,
    pair3_avx512,
    3
);
pair_n!(
    pair4,
    pair4_with,
    pair4_into_with,
    pair4_avx2,
    pair4_avx512,
    4
);
pair_n!(
    pair5,
    pair5_with,
    pair5_into_with,
    pair5_avx2,
    pair5_avx512,
    5
);

map_n!(
    map1,
    map1_with,
    map1_into,
    map1_into_with,
    map1_avx2,
    map1_avx512,
    1
);
map_n!(
    map2,
    map2_with,
    map2_into,
    map2_into_with,
    map2_avx2,
    map2_avx512,
    2
);
map_n!(
    map3,
    map3_with,
    map3_into,
    map3_into_with,
    map3_avx2,
    map3_avx512,
    3
);
map_n!(
    map4,
    map4_with,
    map4_into,
    map4_into_with,
    map4_avx2,
    map4_avx512,
    4
);
map_n!(
    map5,
    map5_with,
    map5_into,
    map5_into_with,
    map5_avx2,
    map5_avx512,
    5
);
