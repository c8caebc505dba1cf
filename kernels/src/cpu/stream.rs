//! Writing results larger than the caches past them, with non-temporal stores.
//!
//! A fused chain's result of megabytes, written with plain stores, is read into the
//! caches line by line before each line is written, and pushes the chain's own
//! operands out of them. Streaming stores write whole lines to memory directly. A
//! step whose values nothing else in its chain reads streams them from the loop
//! that computes them ([`map1`] and its kin); any other stored result is computed into a block
//! buffer and copied out with streaming stores ([`append_streaming`]). Either way
//! the caller ends the pass with [`fence`].

use std::mem::MaybeUninit;

/// Bytes from which a stored result is written with streaming stores.
pub(super) const STREAM_BYTES: usize = 4 << 20;

/// Appends `src` to `out` with non-temporal stores where the target allows (see
/// [`map1`]; a plain copy elsewhere): a result larger than the caches would
/// otherwise be read into them before each line is written, and push the chain's
/// own operands out.
#[inline]
pub(super) fn append_streaming<T: Copy>(out: &mut Vec<T>, src: &[T]) {
    if !map1([src], out, |[x]| x) {
        out.extend_from_slice(src);
    }
}

/// Writes `src` to `out` (of its length) with non-temporal stores where the
/// target allows, else with a plain copy: [`append_streaming`] into a region of a
/// result (a piece of a parallel job).
#[inline]
pub(super) fn write_streaming<T: Copy>(out: &mut [MaybeUninit<T>], src: &[T]) {
    if !map1_into([src], out, |[x]| x) {
        write_plain(out, src);
    }
}

/// Copies `src` into `out` (of its length), initialising every element.
#[inline]
pub(super) fn write_plain<T: Copy>(out: &mut [MaybeUninit<T>], src: &[T]) {
    for (o, &x) in out.iter_mut().zip(src) {
        o.write(x);
    }
}

/// Orders the streaming stores before what follows (another thread may read the
/// result next).
pub(super) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// Values computed together and written as whole lines by the streamed maps: 64
/// bytes of `f32`, 128 of `f64`.
#[cfg(target_arch = "x86_64")]
const CHUNK: usize = 16;

macro_rules! stream_map {
    ($name:ident, $into:ident, $avx:ident, $n:literal, $($k:literal),+) => {
        /// Appends `f(ins[0][i], ..)` for every `i` of the operands (slices of one
        /// length) to `out`, which has the capacity, with streaming stores from the
        /// loop that computes the values (the slice form `*_into`); `false`, nothing
        /// written, where that does not stream or `out` lacks the room.
        #[inline(always)]
        pub(crate) fn $name<T: Copy>(
            ins: [&[T]; $n],
            out: &mut Vec<T>,
            f: impl Fn([T; $n]) -> T,
        ) -> bool {
            let n = ins[0].len();
            let start = out.len();
            if out.capacity() - start < n || !$into(ins, &mut out.spare_capacity_mut()[..n], f) {
                return false;
            }
            // SAFETY: `$into` returned `true`: it wrote all `n` elements after the
            // old length, within the capacity (checked above).
            unsafe { out.set_len(start + n) };
            true
        }

        /// Writes `f(ins[0][i], ..)` to `out[i]` for every `i` (each operand has
        /// `out.len()` elements) with streaming stores from the loop that computes
        /// the values: they never go through a buffer. On x86-64 with AVX2 and FMA
        /// (unless `AUTOGRAD_SIMD` narrows the loops below it: see
        /// `simd::active`), for elements of 2, 4 or 8 bytes: `true`, every element
        /// written; `false`, nothing written, elsewhere or when an operand's length
        /// differs.
        ///
        /// Sixteen values at a time are computed into registers and written out in
        /// whole cache lines, never through a block buffer (one loop computing the
        /// block and another streaming it out of the buffer costs a second pass).
        #[inline(always)]
        pub(crate) fn $into<T: Copy>(
            ins: [&[T]; $n],
            out: &mut [MaybeUninit<T>],
            f: impl Fn([T; $n]) -> T,
        ) -> bool {
            let n = out.len();
            if matches!(std::mem::size_of::<T>(), 2 | 4 | 8) && ins.iter().all(|s| s.len() == n) {
                // SAFETY (of the copies `by_simd` calls): `out` and every operand
                // have `n` elements, and `T` is 2, 4 or 8 bytes (checked above). No
                // AVX-512 copy: the stores are bound by memory.
                super::simd::by_simd!(super::simd::active(), $avx, $avx, {}, (ins, out, f));
            }
            let _ = (ins, out, f);
            false
        }

        /// The slice form compiled for AVX2 and FMA: the values are the bits of any other
        /// copy of the loops (see `simd`). Always `true` (all written).
        ///
        /// # Safety
        /// The CPU has AVX2 and FMA; every operand has `out.len()` elements; `T`
        /// is 2, 4 or 8 bytes.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $avx<T: Copy>(
            ins: [&[T]; $n],
            out: &mut [MaybeUninit<T>],
            f: impl Fn([T; $n]) -> T,
        ) -> bool {
            use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256};
            let n = out.len();
            // SAFETY: every index read or written is below `n` (the operands' and
            // `out`'s length: the caller's contract); the streamed chunks start on a
            // 64-byte boundary (the head before it is written plainly), so each
            // 32-byte store is aligned, and a chunk is 32, 64 or 128 bytes (16
            // elements of 2, 4 or 8 bytes). Every element is written once.
            unsafe {
                let dst = out.as_mut_ptr().cast::<T>();
                // The chunk of values from element `i` (`i + CHUNK <= n`).
                let chunk = |i: usize| {
                    let run = [$(ins[$k].as_ptr().add(i)),+];
                    let mut vals = [MaybeUninit::<T>::uninit(); CHUNK];
                    for (j, v) in vals.iter_mut().enumerate() {
                        v.write(f([$(*run[$k].add(j)),+]));
                    }
                    vals
                };
                let head = dst.align_offset(64).min(n);
                // A head or tail short of a line, from a whole chunk computed in
                // registers (element by element it took a tenth of the loop's time
                // when each block of a result started off a line), copied plainly:
                // only its own elements, the lines beside it are streamed.
                if head > 0 && head <= CHUNK && n >= CHUNK {
                    let vals = chunk(0);
                    std::ptr::copy_nonoverlapping(vals.as_ptr().cast::<T>(), dst, head);
                } else {
                    for i in 0..head {
                        dst.add(i).write(f([$(*ins[$k].get_unchecked(i)),+]));
                    }
                }
                let chunks = (n - head) / CHUNK;
                let bytes = CHUNK * std::mem::size_of::<T>();
                for c in 0..chunks {
                    let i = head + c * CHUNK;
                    let vals = chunk(i);
                    let from = vals.as_ptr().cast::<u8>();
                    let to = dst.add(i).cast::<u8>();
                    for q in 0..bytes / 32 {
                        let v = _mm256_loadu_si256(from.add(32 * q).cast::<__m256i>());
                        _mm256_stream_si256(to.add(32 * q).cast::<__m256i>(), v);
                    }
                }
                let done = head + chunks * CHUNK;
                if done < n && n >= CHUNK {
                    let vals = chunk(n - CHUNK);
                    let skip = CHUNK - (n - done);
                    std::ptr::copy_nonoverlapping(
                        vals.as_ptr().cast::<T>().add(skip),
                        dst.add(done),
                        n - done,
                    );
                } else {
                    for i in done..n {
                        dst.add(i).write(f([$(*ins[$k].get_unchecked(i)),+]));
                    }
                }
            }
            true
        }
    };
}

stream_map!(map1, map1_into, map1_avx, 1, 0);
stream_map!(map2, map2_into, map2_avx, 2, 0, 1);
stream_map!(map3, map3_into, map3_avx, 3, 0, 1, 2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_append_writes_every_element_at_any_alignment() {
        for start in 0..17 {
            for len in [0, 1, 3, 4, 5, 16, 17, 33, 1000] {
                let src: Vec<f32> = (0..len).map(|i| i as f32 + 0.5).collect();
                let mut out: Vec<f32> = Vec::with_capacity(start + len);
                out.extend((0..start).map(|i| -(i as f32)));
                append_streaming(&mut out, &src);
                fence();
                assert_eq!(
                    out[..start],
                    (0..start).map(|i| -(i as f32)).collect::<Vec<_>>()
                );
                assert_eq!(out[start..], src[..]);
            }
        }
        let mut short: Vec<f64> = Vec::new();
        append_streaming(&mut short, &[1.0, 2.0]);
        assert_eq!(short, [1.0, 2.0]);
    }

    #[test]
    fn a_streamed_map_writes_every_value_at_any_alignment() {
        fn check<T: Copy + PartialEq + std::fmt::Debug + From<u16>>() {
            for start in 0..19 {
                for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 100, 1000] {
                    let a: Vec<T> = (0..len).map(|i| T::from(i as u16)).collect();
                    let b: Vec<T> = (0..len).map(|i| T::from(3 * i as u16 + 1)).collect();
                    let mut out: Vec<T> = Vec::with_capacity(start + len + 1);
                    out.extend((0..start).map(|_| T::from(7)));
                    let mut plain = out.clone();
                    let f = |[x, y]: [T; 2]| if x == y { x } else { y };
                    let streamed = map2([&a[..], &b[..]], &mut out, f);
                    fence();
                    plain.extend(a.iter().zip(&b).map(|(&x, &y)| f([x, y])));
                    if streamed {
                        assert_eq!(out, plain, "{start} {len}");
                    } else {
                        assert_eq!(out.len(), start, "nothing written when not streamed");
                    }
                }
            }
        }
        check::<u16>();
        check::<f32>();
        check::<f64>();
        // Full capacity is required: without it nothing is written.
        let mut tight: Vec<f32> = Vec::new();
        assert!(!map1([&[1.0f32, 2.0][..]], &mut tight, |[x]| x));
        // Operands of different lengths are refused, not read past.
        let mut room: Vec<f32> = Vec::with_capacity(8);
        assert!(!map2(
            [&[1.0f32, 2.0][..], &[1.0][..]],
            &mut room,
            |[x, _]| x
        ));
        assert!(tight.is_empty());
    }
}
