//! Running elementwise programs on the CPU, block by block: where each leaf's
//! values come from ([`Source`]), and the runner of a program of one step (an
//! unfused op, fixed or generated). A fused chain of several steps is planned and
//! run by [`super::fused`] over the same sources and blocks.

use super::{CpuElement, CpuStorage, pool, stream};
use crate::parallel::{self, SharedMut};
use crate::walk::Cursor;
use crate::{DType, KernelError, Layout, Result, Shape};
use smallvec::SmallVec;
use std::mem::MaybeUninit;

/// Elements per block: a whole number of the sum's blocks (the 1024 elements of
/// the sum reduction's blocks), and small enough that a dozen steps' buffers stay
/// in the first two levels of cache. (A fused program of f32 or f64 runs in
/// blocks of half this: see `fused::SHORT_BLOCK`.)
pub const BLOCK: usize = 2 * super::reduce::SUM_BLOCK;

/// Elements per piece of a program run on several threads: a whole number of
/// blocks (so every piece starts at a multiple of [`BLOCK`], where a repeated
/// leaf's block and the sum's blocks line up as in one serial pass), fixed, never
/// derived from the thread count, so the pieces and the results are the same for
/// any number of threads.
pub const PIECE: usize = 16 * BLOCK;

/// Whether a program over `n` elements with `arrays` leaves and results runs in
/// pieces of [`PIECE`] on the pool; a short one (the tiny tensors of a long
/// graph) is settled by the first comparison, before any look at the pool.
#[inline(always)]
pub(super) fn in_pieces(n: usize, arrays: usize) -> bool {
    n > BLOCK && n > piece() && parallel::is_parallel(n.div_ceil(piece()), n.saturating_mul(arrays))
}

/// This run's piece length: [`PIECE`], or one [`BLOCK`] while a test asks for the
/// smallest pieces (`parallel::piece_len`).
#[inline]
pub(crate) fn piece() -> usize {
    parallel::piece_len(PIECE, BLOCK)
}

/// The elements `p * piece()..` of `n` in piece `p`.
#[inline(always)]
pub(super) fn piece_range(p: usize, n: usize) -> std::ops::Range<usize> {
    let start = p * piece();
    start..(start + piece()).min(n)
}

/// The elements of `s` as `T`, checked to hold the view `l` (an error naming the
/// dtypes when `s` holds another type).
pub(crate) fn operand<'a, T: CpuElement + crate::Element>(
    s: &'a CpuStorage,
    l: &Layout,
) -> Result<&'a [T]> {
    let data = T::slice(s).ok_or(KernelError::DTypeMismatch {
        lhs: T::DTYPE,
        rhs: s.dtype(),
    })?;
    crate::check::check_fits(data.len(), l)?;
    Ok(data)
}

/// How a leaf is read, block by block.
pub(super) enum Source<'a, T> {
    /// Back to back from this position.
    Dense(&'a [T]),
    /// A run repeated (see [`Layout::broadcast_period`]), filled into a block once.
    Repeated(Vec<T>),
    /// Any other view: gathered into a block buffer.
    Gathered(&'a [T], Cursor, Vec<T>),
    /// A repeated source's block, borrowed by a piece of a parallel run (pieces
    /// start at multiples of the block, where the block is valid).
    Shared(&'a [T]),
    /// An f16 or bf16 leaf of an `f32` program, widened block by block into the
    /// buffer (a fused chain of halves: see `fused`).
    Widened(Widen<'a>, Vec<T>),
}

/// An f16 or bf16 leaf (its bits) read block by block: back to back from `pos`,
/// or through a cursor into `scratch`.
pub(super) struct Widen<'a> {
    bits: &'a [u16],
    kind: DType,
    cursor: Option<Cursor>,
    /// The dense view's first element (a piece starts from here).
    base: usize,
    pos: usize,
    scratch: Vec<u16>,
}

/// The bits of an f16 or bf16 buffer, with its dtype.
pub(super) fn half_bits(s: &CpuStorage) -> Option<(&[u16], DType)> {
    use half::slice::HalfFloatSliceExt;
    match s {
        CpuStorage::F16(v) => Some((v.reinterpret_cast(), DType::F16)),
        CpuStorage::BF16(v) => Some((v.reinterpret_cast(), DType::BF16)),
        _ => None,
    }
}

/// `v` as `f32`s, when `T` is `f32` (a program of halves computes in `f32`).
pub(super) fn as_f32_mut<T: 'static>(v: &mut [T]) -> Option<&mut [f32]> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (same type id).
    Some(unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<f32>(), v.len()) })
}

/// `v` as `f32`s, when `T` is `f32`.
pub(super) fn as_f32<T: 'static>(v: &[T]) -> Option<&[f32]> {
    if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (same type id).
    Some(unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<f32>(), v.len()) })
}

/// `bits` (of `kind`, f16 or bf16) widened into `out` (exact).
pub(super) fn widen(kind: DType, bits: &[u16], out: &mut [f32]) {
    if kind == DType::F16 {
        f16_loops::widen(bits, out);
    } else {
        bf16_loops::widen(bits, out);
    }
}

/// `src` rounded to nearest (even) `kind` (f16 or bf16), as bits, into `out`.
pub(super) fn narrow(kind: DType, src: &[f32], out: &mut [u16]) {
    if kind == DType::F16 {
        f16_loops::narrow(src, out);
    } else {
        bf16_loops::narrow(src, out);
    }
}

/// Every value of `v` rounded to nearest (even) `kind` (f16 or bf16), kept as
/// `f32`: what a half op one by one stores and the next one reads. The bits of
/// `half`'s conversions there and back (a test checks): bf16 by rounding the
/// bits as integers (NaNs made quiet, as `bf16::from_f32`), f16 through the
/// slice conversions.
pub(super) fn round_to(kind: DType, v: &mut [f32]) {
    if kind == DType::BF16 {
        bf16_loops::round(v);
        return;
    }
    let mut bits = [0u16; 512];
    for chunk in v.chunks_mut(512) {
        let bits = &mut bits[..chunk.len()];
        narrow(kind, chunk, bits);
        widen(kind, bits, chunk);
    }
}

/// The f16 conversions with the CPU's conversion instructions (F16C, AVX-512)
/// sixteen or eight at a time where it has them, else `half`'s: the same IEEE
/// conversions (round to nearest even), so the same bits.
mod f16_loops {
    use half::f16;
    use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};

    /// Whether the CPU converts f16 itself (F16C, with AVX2 and FMA for the
    /// loops' copies).
    #[cfg(target_arch = "x86_64")]
    fn has_f16c() -> bool {
        std::is_x86_feature_detected!("f16c")
            && crate::cpu::simd::active() >= crate::cpu::simd::Simd::Avx2
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")]
    fn widen_avx512(bits: &[u16], out: &mut [f32]) {
        use std::arch::x86_64::*;
        let n = bits.len().min(out.len());
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: 16 elements from `i` are within both slices.
            unsafe {
                let h = _mm256_loadu_si256(bits.as_ptr().add(i).cast());
                _mm512_storeu_ps(out.as_mut_ptr().add(i), _mm512_cvtph_ps(h));
            }
            i += 16;
        }
        tail_widen(&bits[i..n], &mut out[i..n]);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn widen_avx2(bits: &[u16], out: &mut [f32]) {
        use std::arch::x86_64::*;
        let n = bits.len().min(out.len());
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: 8 elements from `i` are within both slices.
            unsafe {
                let h = _mm_loadu_si128(bits.as_ptr().add(i).cast());
                _mm256_storeu_ps(out.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
            i += 8;
        }
        tail_widen(&bits[i..n], &mut out[i..n]);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")]
    fn narrow_avx512(src: &[f32], out: &mut [u16]) {
        use std::arch::x86_64::*;
        let n = src.len().min(out.len());
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: 16 elements from `i` are within both slices.
            unsafe {
                let f = _mm512_loadu_ps(src.as_ptr().add(i));
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(f);
                _mm256_storeu_si256(out.as_mut_ptr().add(i).cast(), h);
            }
            i += 16;
        }
        tail_narrow(&src[i..n], &mut out[i..n]);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn narrow_avx2(src: &[f32], out: &mut [u16]) {
        use std::arch::x86_64::*;
        let n = src.len().min(out.len());
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: 8 elements from `i` are within both slices.
            unsafe {
                let f = _mm256_loadu_ps(src.as_ptr().add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(f);
                _mm_storeu_si128(out.as_mut_ptr().add(i).cast(), h);
            }
            i += 8;
        }
        tail_narrow(&src[i..n], &mut out[i..n]);
    }

    fn tail_widen(bits: &[u16], out: &mut [f32]) {
        bits.reinterpret_cast::<f16>().convert_to_f32_slice(out);
    }

    fn tail_narrow(src: &[f32], out: &mut [u16]) {
        out.reinterpret_cast_mut::<f16>()
            .convert_from_f32_slice(src);
    }

    /// f16 `bits` widened into `out` (exact).
    pub(super) fn widen(bits: &[u16], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            // SAFETY (both): the CPU has F16C and the set (`has_f16c`, `detect`).
            return match crate::cpu::simd::Simd::min(
                crate::cpu::simd::active(),
                crate::cpu::simd::detect(),
            ) {
                crate::cpu::simd::Simd::Avx512 => unsafe { widen_avx512(bits, out) },
                _ => unsafe { widen_avx2(bits, out) },
            };
        }
        tail_widen(bits, out)
    }

    /// `src` rounded to nearest even f16, as bits, into `out`.
    pub(super) fn narrow(src: &[f32], out: &mut [u16]) {
        #[cfg(target_arch = "x86_64")]
        if has_f16c() {
            // SAFETY (both): as in `widen`.
            return match crate::cpu::simd::Simd::min(
                crate::cpu::simd::active(),
                crate::cpu::simd::detect(),
            ) {
                crate::cpu::simd::Simd::Avx512 => unsafe { narrow_avx512(src, out) },
                _ => unsafe { narrow_avx2(src, out) },
            };
        }
        tail_narrow(src, out)
    }
}

/// The bf16 conversions as loops over bits, compiled for the baseline, AVX2
/// and AVX-512 (`simd::by_simd`): each lane converts its own element, so every
/// copy gives the same bits.
mod bf16_loops {
    use crate::cpu::simd::{active, by_simd};

    /// `f32` bits rounded to nearest even bf16, in the upper half (quiet NaNs).
    #[inline(always)]
    fn rounded(x: f32) -> u32 {
        let b = x.to_bits();
        if x.is_nan() {
            (b | 0x0040_0000) & 0xffff_0000
        } else {
            b.wrapping_add(0x7fff + ((b >> 16) & 1)) & 0xffff_0000
        }
    }

    /// `$name(args)`: `$body` compiled for the baseline, AVX2 and AVX-512, the
    /// copy chosen by `by_simd`.
    macro_rules! copies {
        ($(#[$doc:meta])* $name:ident, $avx512:ident, $avx2:ident, ($($a:ident: $t:ty),*), $body:block) => {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
            fn $avx512($($a: $t),*) $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn $avx2($($a: $t),*) $body
            $(#[$doc])*
            pub(super) fn $name($($a: $t),*) {
                by_simd!(active(), $avx512, $avx2, $body, ($($a),*))
            }
        };
    }

    copies!(
        /// bf16 `bits` widened into `out` (exact).
        widen, widen_avx512, widen_avx2, (bits: &[u16], out: &mut [f32]), {
            for (o, &b) in out.iter_mut().zip(bits) {
                *o = f32::from_bits((b as u32) << 16);
            }
        }
    );

    copies!(
        /// `src` rounded to nearest even bf16, as bits, into `out`.
        narrow, narrow_avx512, narrow_avx2, (src: &[f32], out: &mut [u16]), {
            for (o, &x) in out.iter_mut().zip(src) {
                *o = (rounded(x) >> 16) as u16;
            }
        }
    );

    copies!(
        /// Every value of `v` rounded to nearest even bf16, kept as `f32`.
        round, round_avx512, round_avx2, (v: &mut [f32]), {
            for x in v.iter_mut() {
                *x = f32::from_bits(rounded(*x));
            }
        }
    );
}

impl Widen<'_> {
    /// The next `len` values widened into `out` (an `f32` buffer: the only
    /// type a half leaf is read as).
    fn next<T: 'static>(&mut self, len: usize, out: &mut [T]) {
        let Some(out) = as_f32_mut(out) else {
            return;
        };
        match &mut self.cursor {
            None => {
                widen(
                    self.kind,
                    &self.bits[self.pos..self.pos + len],
                    &mut out[..len],
                );
                self.pos += len;
            }
            Some(cursor) => {
                cursor.gather(self.bits, &mut self.scratch[..len]);
                widen(self.kind, &self.scratch[..len], &mut out[..len]);
            }
        }
    }
}

/// Sources of a program's leaves.
pub(super) type Sources<'a, T> = SmallVec<[Source<'a, T>; 4]>;

impl<'a, T: CpuElement + crate::Element> Source<'a, T> {
    /// How to read every leaf (each viewing `n` elements, checked by the caller) in
    /// blocks of `block` elements: an error when a leaf does not hold `T` or its
    /// view reaches past its buffer.
    pub(super) fn plan(
        leaves: &[(&'a CpuStorage, &'a Layout)],
        n: usize,
        block: usize,
    ) -> Result<Sources<'a, T>> {
        leaves
            .iter()
            .map(|&(s, l)| match half_bits(s) {
                Some((bits, kind)) if T::DTYPE == DType::F32 => {
                    crate::check::check_fits(bits.len(), l)?;
                    Ok(Source::widened(bits, kind, l, n, block))
                }
                _ => Ok(Source::of(operand::<T>(s, l)?, l, n, block)),
            })
            .collect()
    }

    /// How to read the view `l` (of `n` elements) of the f16 or bf16 `bits` as
    /// `f32` in blocks of `block` elements.
    fn widened(bits: &'a [u16], kind: DType, l: &Layout, n: usize, block: usize) -> Self {
        let mut widen = Widen {
            bits,
            kind,
            cursor: None,
            base: l.offset(),
            pos: l.offset(),
            scratch: Vec::new(),
        };
        if l.is_contiguous() {
            return Source::Widened(widen, vec![T::ZERO; block]);
        }
        if let Some(r) = l
            .broadcast_period()
            .filter(|&r| n > 0 && block.is_multiple_of(r))
        {
            let mut run = vec![T::ZERO; r];
            widen.next(r, &mut run);
            return Source::Repeated(run.iter().copied().cycle().take(block).collect());
        }
        widen.cursor = Some(Cursor::new(l));
        widen.scratch = vec![0; block];
        Source::Widened(widen, vec![T::ZERO; block])
    }

    /// How to read the view `l` (of `n` elements) of `data` in blocks of `block`
    /// elements.
    pub(super) fn of(data: &'a [T], l: &Layout, n: usize, block: usize) -> Source<'a, T> {
        if l.is_contiguous() {
            Source::Dense(&data[l.offset()..l.offset() + n])
        } else if let Some(r) = l
            .broadcast_period()
            .filter(|&r| n > 0 && block.is_multiple_of(r))
        {
            // Every block starts at a multiple of the period: one block of it
            // serves all.
            let run = &data[l.offset()..l.offset() + r];
            Source::Repeated(run.iter().copied().cycle().take(block).collect())
        } else {
            Source::Gathered(data, Cursor::new(l), vec![T::ZERO; block])
        }
    }

    /// This source as a piece of a parallel run reads it from element `start` (a
    /// multiple of `block`): dense and repeated ones borrowed, a gathered one
    /// with its own cursor, started there, and its own block buffer.
    pub(super) fn piece(&self, start: usize, block: usize) -> Source<'_, T> {
        match self {
            Source::Dense(d) => Source::Dense(d),
            Source::Repeated(b) => Source::Shared(b),
            Source::Shared(b) => Source::Shared(b),
            Source::Gathered(data, cursor, _) => {
                Source::Gathered(data, cursor.at(start), vec![T::ZERO; block])
            }
            Source::Widened(w, _) => Source::Widened(
                Widen {
                    bits: w.bits,
                    kind: w.kind,
                    cursor: w.cursor.as_ref().map(|c| c.at(start)),
                    base: w.base,
                    pos: w.base + start,
                    scratch: vec![0; if w.cursor.is_some() { block } else { 0 }],
                },
                vec![T::ZERO; block],
            ),
        }
    }

    /// Gathers the next `len` elements of every gathered source.
    pub(super) fn advance(sources: &mut [Source<'a, T>], len: usize) {
        for source in sources {
            match source {
                Source::Gathered(data, cursor, buf) => cursor.gather(data, &mut buf[..len]),
                Source::Widened(w, buf) => w.next(len, buf),
                _ => {}
            }
        }
    }

    /// Asks the CPU to start loading part `part` of `parts` of the dense
    /// sources' elements `range` (a block ahead) into cache, so that their
    /// memory traffic overlaps the work on this block. A fused block reads its
    /// leaves once and then computes from cache for as long; the hardware
    /// prefetchers, which run only a little ahead of the loads they see, stop with
    /// the loads, so without this the memory waits and the computing take turns.
    /// In parts, between the block's steps: a whole block's lines at once would
    /// queue behind the few misses a core keeps in flight, and stall the steps.
    /// (A hint: no value changes.)
    #[inline]
    pub(super) fn prefetch(
        sources: &[Source<'a, T>],
        range: std::ops::Range<usize>,
        part: usize,
        parts: usize,
    ) {
        #[cfg(target_arch = "x86_64")]
        for source in sources {
            if let Source::Dense(d) = source
                && let Some(next) = d.get(range.clone())
            {
                let line = (64 / std::mem::size_of::<T>()).max(1);
                let lines = next.len().div_ceil(line);
                // (A part past the count, from a block that ran a loop more
                // than planned, asks for nothing: no address past `next`.)
                let share = |p: usize| lines * p.min(parts) / parts;
                for l in share(part)..share(part + 1) {
                    // SAFETY: `l < lines`, so the address is within `next`; a
                    // prefetch reads nothing into the program and cannot fault.
                    unsafe {
                        use std::arch::x86_64::*;
                        let p = next.as_ptr().add(l * line).cast::<i8>();
                        _mm_prefetch::<_MM_HINT_T0>(p);
                    }
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (sources, range, part, parts);
    }

    /// The block of `len` elements from `start` (after [`Self::advance`]).
    #[inline(always)]
    pub(super) fn block(&self, start: usize, len: usize) -> &[T] {
        match self {
            Source::Dense(d) => &d[start..start + len],
            Source::Repeated(b) | Source::Gathered(_, _, b) | Source::Widened(_, b) => &b[..len],
            Source::Shared(b) => &b[..len],
        }
    }
}

/// Most operands [`run_step`] reads in place when all are dense (a generated
/// op's derivative reads `MAX_INPUTS + 1`); more go through blocks.
const DIRECT: usize = 6;

/// A program's one step on a block: `step(ins, out)` appends its values for the
/// operands' block `ins` to `out`. Shared by the pieces of a parallel run: it must
/// compute the same values wherever it runs.
pub(crate) type StepFn<'a, T> = dyn Fn(&[&[T]], &mut Vec<T>) + Sync + 'a;

/// Runs a program of one step over `leaves` (buffers with their views, each of
/// `n` elements and within its buffer: checked by the caller): `step(ins, out)`
/// appends the step's values for the operands' block `ins` to `out`, once over all
/// `n` elements when every leaf is dense, else once a block of [`BLOCK`] (as a
/// fused chain reads them: see [`Source`]). Returns the values appended: the
/// caller checks their count when `step` is not its own.
///
/// The step is a `dyn` call so that this runner is compiled once per element type,
/// not once per op.
///
/// A long program runs in pieces of [`PIECE`] on the pool (see [`in_pieces`]):
/// each piece runs the step on its blocks and copies them into its part of the
/// result. The step computes each element alone, so the values are the bits of
/// one pass.
pub(crate) fn run_step<T: CpuElement + crate::Element>(
    leaves: &[(&[T], &Layout)],
    n: usize,
    step: &StepFn<'_, T>,
) -> Result<Vec<T>> {
    if in_pieces(n, leaves.len() + 1) {
        return run_step_pieces(leaves, n, step);
    }
    if leaves.len() <= DIRECT && leaves.iter().all(|(_, l)| l.is_contiguous()) {
        // One block of all `n` elements, read in place: no `Source` per leaf, and
        // the operands in an array, not a collection (an op on a few elements
        // costs little more than its loop).
        let mut ins: [&[T]; DIRECT] = [&[]; DIRECT];
        for (i, &(data, l)) in ins.iter_mut().zip(leaves) {
            *i = &data[l.offset()..l.offset() + n];
        }
        let mut out: Vec<T> = pool::take(n)?;
        if n > 0 {
            step(&ins[..leaves.len()], &mut out);
        }
        return Ok(out);
    }
    let block = BLOCK.min(n.max(1));
    let mut sources: Sources<T> = leaves
        .iter()
        .map(|&(data, l)| Source::of(data, l, n, block))
        .collect();
    let mut out: Vec<T> = pool::take(n)?;
    let mut start = 0;
    while start < n {
        let len = block.min(n - start);
        Source::advance(&mut sources, len);
        let ins: SmallVec<[&[T]; 5]> = sources.iter().map(|s| s.block(start, len)).collect();
        step(&ins, &mut out);
        start += len;
    }
    Ok(out)
}

/// [`run_step`] in pieces of [`PIECE`] on the pool: the result allocated here (the
/// buffer cache is the calling thread's), each piece writing its own region of it.
fn run_step_pieces<T: CpuElement + crate::Element>(
    leaves: &[(&[T], &Layout)],
    n: usize,
    step: &StepFn<'_, T>,
) -> Result<Vec<T>> {
    let sources: Sources<T> = leaves
        .iter()
        .map(|&(data, l)| Source::of(data, l, n, BLOCK))
        .collect();
    let mut out: Vec<T> = pool::take(n)?;
    let region = SharedMut::new(&mut out.spare_capacity_mut()[..n]);
    let pieces = n.div_ceil(piece());
    let done = parallel::map(pieces, n * (leaves.len() + 1), |p| -> Result<()> {
        let range = piece_range(p, n);
        // SAFETY: the pieces' ranges are disjoint and within the `n` elements of
        // spare capacity, which nothing else touches until the job ends.
        let region: &mut [MaybeUninit<T>] = unsafe { region.slice(range.start, range.len()) };
        let mut sources: Sources<T> = sources
            .iter()
            .map(|s| s.piece(range.start, BLOCK))
            .collect();
        let mut buf: Vec<T> = Vec::with_capacity(BLOCK);
        let mut at = range.start;
        while at < range.end {
            let len = BLOCK.min(range.end - at);
            Source::advance(&mut sources, len);
            let ins: SmallVec<[&[T]; 5]> = sources.iter().map(|s| s.block(at, len)).collect();
            buf.clear();
            step(&ins, &mut buf);
            if buf.len() != len {
                return Err(KernelError::Layout(format!(
                    "an elementwise step wrote {} values for a block of {len}",
                    buf.len()
                )));
            }
            let from = at - range.start;
            stream::write_plain(&mut region[from..from + len], &buf);
            at += len;
        }
        Ok(())
    });
    done.into_iter().collect::<Result<()>>()?;
    // SAFETY: every piece succeeded, so each wrote every element of its range (a
    // block of `len` values per block), and the ranges cover `0..n`.
    unsafe { out.set_len(n) };
    Ok(out)
}

/// A generated op's program of one step (`generated::run_cpu`): the operands
/// checked (dtype, views within their buffers, each of `shape`; `name` is the op's,
/// for the errors), then [`run_step`] over them. Returns the values `step`
/// appended, not yet counted. Generic over the element type only, so that each
/// generated op adds no more than its closure.
pub(crate) fn run_checked<T: CpuElement + crate::Element>(
    name: &str,
    ins: &[(&CpuStorage, &Layout)],
    shape: &Shape,
    step: &StepFn<'_, T>,
) -> Result<Vec<T>> {
    let mut typed: SmallVec<[(&[T], &Layout); 5]> = SmallVec::with_capacity(ins.len());
    for &(s, l) in ins {
        typed.push((operand::<T>(s, l)?, l));
        if l.shape() != shape {
            return Err(KernelError::Layout(format!(
                "`{name}`: an operand of shape {} for an output of shape {shape}",
                l.shape()
            )));
        }
    }
    run_step(&typed, shape.numel(), step)
}

/// Runs `f` serially (one thread), then on the pool with 2, 3 and 8 threads and
/// every job split (`set_min_parallel_work(0)`), asserting the same result each
/// time (compare bits: `f` returns them); the thread count and work threshold are
/// restored after.
#[cfg(test)]
pub(crate) fn same_for_every_thread_count<R: PartialEq + std::fmt::Debug>(
    what: &str,
    f: impl Fn() -> R,
) {
    let _g = parallel::TEST_LOCK
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let threads = parallel::num_threads();
    parallel::set_num_threads(1).expect("one thread");
    let serial = f();
    parallel::set_min_parallel_work(0);
    for t in [1, 2, 3, 8] {
        parallel::set_num_threads(t).expect("the pool");
        let got = f();
        assert!(
            got == serial,
            "{what}: {t} threads differ from the serial run"
        );
    }
    parallel::set_min_parallel_work(parallel::MIN_PARALLEL_WORK);
    parallel::set_num_threads(threads).expect("the pool");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;
    use crate::walk::Walk;

    /// The view's elements in row-major order, read one by one.
    fn reference(data: &[f64], l: &Layout) -> Vec<f64> {
        let mut v = vec![];
        Walk::new(l.shape(), [l.strides()]).for_each_run([l.offset()], |[o], len, [s]| {
            v.extend((0..len).map(|j| data[o + j * s]))
        });
        v
    }

    /// A program of one step reads dense, repeated and gathered leaves as the
    /// elements of their views, in and across blocks.
    /// The fast rounding of [`round_to`] gives `half`'s bits for every bf16
    /// rounding case and a sweep of f16 ones.
    #[test]
    fn rounding_to_halves_matches_the_half_crate() {
        let mut v: Vec<f32> = (0..200_000u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761)))
            .collect();
        v.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            65504.0,
            65520.0,
            1.0 + 1.0 / 256.0,
            1.0 + 3.0 / 256.0,
            f32::MIN_POSITIVE,
            1e-8,
        ]);
        for kind in [DType::F16, DType::BF16] {
            let mut got = v.clone();
            round_to(kind, &mut got);
            for (x, g) in v.iter().zip(&got) {
                let want = if kind == DType::F16 {
                    half::f16::from_f32(*x).to_f32()
                } else {
                    half::bf16::from_f32(*x).to_f32()
                };
                assert!(
                    want.to_bits() == g.to_bits() || (want.is_nan() && g.is_nan()),
                    "{kind} {x:e}: {g:e}, want {want:e}"
                );
            }
        }
    }

    #[test]
    fn one_step_reads_every_kind_of_view_in_order() {
        let rows = BLOCK / 3 + 5;
        let shape = Shape::from([rows, 8]);
        let n = rows * 8;
        let data: Vec<f64> = (0..2 * n).map(|i| i as f64 * 0.5).collect();
        let dense = Layout::new(shape.clone(), &[8, 1], 3).unwrap();
        let row = Layout::contiguous(Shape::from([8]))
            .broadcast_to(&shape)
            .unwrap();
        let transposed = Layout::contiguous(Shape::from([8, rows]))
            .transpose(0, 1)
            .unwrap();
        let column = Layout::new(shape.clone(), &[1, 0], 7).unwrap();
        // (A row of 8 divides a block: read as a repeated run.)
        assert!(matches!(
            Source::of(&data, &row, n, BLOCK),
            Source::Repeated(_)
        ));
        let views = [&dense, &row, &transposed, &column];
        let got = run_step(
            &views.map(|l| (&data[..], l)),
            n,
            &|ins: &[&[f64]], out: &mut Vec<f64>| {
                out.extend((0..ins[0].len()).map(|i| ins.iter().map(|s| s[i]).sum::<f64>()))
            },
        )
        .unwrap();
        let each = views.map(|l| reference(&data, l));
        let want: Vec<f64> = (0..n).map(|i| each.iter().map(|v| v[i]).sum()).collect();
        assert_eq!(got, want);
        // Each alone, and nothing for an empty view.
        for (l, want) in views.iter().zip(&each) {
            let got = run_step(&[(&data[..], *l)], n, &|ins, out| {
                out.extend_from_slice(ins[0])
            });
            assert_eq!(&got.unwrap(), want);
        }
        let empty = Layout::contiguous(Shape::from([0, 8]));
        let none = run_step(&[(&data[..], &empty)], 0, &|_, _| unreachable!());
        assert!(none.unwrap().is_empty());
    }

    /// The bits of `v`.
    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// In pieces on any number of threads, a one-step program over dense,
    /// repeated (a broadcast row) and gathered (transposed) leaves gives the bits
    /// of one serial pass, at a length that is no whole number of pieces or
    /// blocks.
    #[test]
    fn one_step_in_pieces_gives_the_bits_of_one_pass() {
        let rows = (3 * PIECE + BLOCK / 2 + 1).div_ceil(8);
        let shape = Shape::from([rows, 8]);
        let n = rows * 8;
        let data: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.37).sin()).collect();
        let dense = Layout::new(shape.clone(), &[8, 1], 5).unwrap();
        let row = Layout::contiguous(Shape::from([8]))
            .broadcast_to(&shape)
            .unwrap();
        let transposed = Layout::contiguous(Shape::from([8, rows]))
            .transpose(0, 1)
            .unwrap();
        let views = [&dense, &row, &transposed];
        let step = |ins: &[&[f64]], out: &mut Vec<f64>| {
            out.extend((0..ins[0].len()).map(|i| ins.iter().fold(0.5, |a, s| a * 1.5 + s[i])))
        };
        same_for_every_thread_count("three leaves", || {
            bits(&run_step(&views.map(|l| (&data[..], l)), n, &step).unwrap())
        });
        for l in views {
            same_for_every_thread_count("one leaf", || {
                bits(&run_step(&[(&data[..], l)], n, &step).unwrap())
            });
        }
        // The values are the views' own, too.
        let got = run_step(&[(&data[..], &transposed)], n, &|ins, out| {
            out.extend_from_slice(ins[0])
        })
        .unwrap();
        assert_eq!(got, reference(&data, &transposed));
        // A step that writes too few values is an error, not a short result.
        let _g = parallel::TEST_LOCK
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let threads = parallel::num_threads();
        parallel::set_num_threads(2).unwrap();
        parallel::set_min_parallel_work(0);
        let short = run_step(&[(&data[..], &dense)], n, &|ins, out| {
            out.extend_from_slice(&ins[0][1..])
        });
        parallel::set_min_parallel_work(parallel::MIN_PARALLEL_WORK);
        parallel::set_num_threads(threads).unwrap();
        assert!(short.is_err());
    }
}
