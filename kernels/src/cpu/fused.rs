//! Fused elementwise chains on the CPU: a small program of elementwise ops over one
//! output shape, run in one pass over memory.
//!
//! The program is a list of [`Step`]s in dependency order, each an op over earlier
//! steps and over leaves (buffers with a layout broadcast to the output's shape).
//! It runs over blocks of up to [`BLOCK`] elements: every step of the block is computed
//! into a buffer of its own that stays in cache, then the last step's block is
//! appended to the output (or added to a running sum). So a chain of k ops reads
//! each leaf once and writes one result, where k separate kernels would write and
//! read back k − 1 intermediates.
//!
//! Scheduling and execution are apart: a `Plan`, made before any block runs,
//! decides which steps share a loop and which write their results directly; the
//! block loop (`run_program`) then runs each step of each block as planned, over
//! the leaves' sources (`program::Source`, which the one-step programs of the
//! unfused ops read too) and the block loops of the fixed ops
//! (`elementwise::unary_block`, ..), which an unfused op runs as well.
//!
//! Each step computes the formula the unfused kernel of its op computes, per
//! element and in the same order, so a fused value is the same bits as the unfused
//! one; a trailing sum adds in the same blocks as the sum reduction. Two steps run
//! in one loop where they can: a generated op's value and its derivative, and an
//! arithmetic step with the one arithmetic step that alone reads it (its value then
//! never goes through a block buffer).

use super::elementwise::{Dest, Fold, binary_block, binary2_block, unary_block};
use super::stream::{STREAM_BYTES, append_streaming, fence, write_plain, write_streaming};
use super::{CpuElement, CpuStorage, pool, reduce};
use crate::parallel::{self, SharedMut};
use crate::program::{BlockKernel, FusedOp, Operand, Sink, Step, check_program};
use crate::{BinaryOp, DType, KernelError, Layout, Result};
use smallvec::SmallVec;
use std::mem::MaybeUninit;

pub use super::program::{BLOCK, PIECE};
use super::program::{
    Source, Sources, as_f32, as_f32_mut, in_pieces, narrow, piece, piece_range, round_to,
};

/// Bytes per array (elements times the element's size) from which a program's
/// blocks prefetch their dense leaves: below it the arrays stay in the caches
/// between passes, and the prefetch instructions would only cost (the threshold
/// and the distance were measured: see the CHANGELOG).
const PREFETCH_BYTES: usize = 8 << 20;

/// Elements per block of a program computed in its own dtype (f32 or f64): half
/// a [`BLOCK`], one block of the sum, so that the block buffers, the leaves' blocks
/// and the blocks being prefetched stay in the first level of cache, which the
/// steps' loops are bound by. A program of halves keeps whole `BLOCK`s, which
/// measured faster for it (see the CHANGELOG): each of its blocks makes more
/// passes (widening, rounding, narrowing), none of them prefetched. (Pieces start
/// at multiples of `BLOCK`, so at multiples of this too.)
const SHORT_BLOCK: usize = BLOCK / 2;
const _: () =
    assert!(SHORT_BLOCK.is_multiple_of(reduce::SUM_BLOCK) && BLOCK.is_multiple_of(SHORT_BLOCK));

/// How many blocks ahead of the one computing the prefetches reach: far enough
/// that the lines arrive before the block that reads them starts.
const PREFETCH_AHEAD: usize = 2;

/// Runs `steps` (in dependency order; the last is the result) over `n` elements.
/// `leaves[k]` is leaf `k`'s buffer with its layout, already broadcast to the
/// output's shape (`n` elements); all hold `dtype`.
pub fn run(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    dtype: DType,
    sink: Sink,
) -> Result<CpuStorage> {
    let last = steps.len().saturating_sub(1);
    let mut outs = run_many(steps, leaves, n, dtype, &[(last, sink)])?;
    outs.pop()
        .ok_or_else(|| KernelError::Layout("a fused chain returned no result".into()))
}

/// Runs `steps` over `n` elements as [`run`] does, in one pass, with several
/// results: `outputs[k] = (j, sink)` makes result `k` the values of step `j`,
/// stored or summed. So chains over the same elements that read the same leaves
/// (a loss and its gradient) read each leaf once between them.
pub fn run_many(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    dtype: DType,
    outputs: &[(usize, Sink)],
) -> Result<Vec<CpuStorage>> {
    match dtype {
        DType::F32 => run_program::<f32>(
            steps,
            leaves,
            n,
            outputs,
            &|k, i, o| k.eval_f32(i, o),
            &|k, value, i, v, d| k.eval_pair_f32(value, i, v, d),
            None,
        ),
        DType::F64 => run_program::<f64>(
            steps,
            leaves,
            n,
            outputs,
            &|k, i, o| k.eval_f64(i, o),
            &|k, value, i, v, d| k.eval_pair_f64(value, i, v, d),
            None,
        ),
        // Halves compute in f32, leaves widened block by block, every step's
        // values rounded to the dtype (as the ops one by one store them), stored
        // results narrowed as they are written.
        DType::F16 | DType::BF16 => run_program::<f32>(
            steps,
            leaves,
            n,
            outputs,
            &|k, i, o| k.eval_f32(i, o),
            &|k, value, i, v, d| k.eval_pair_f32(value, i, v, d),
            Some(dtype),
        ),
        other => Err(super::needs_float("fused program", other)),
    }
}

/// `k`'s step, when it is a kernel's.
fn kernel_of(step: &Step) -> Option<&dyn BlockKernel> {
    match &step.op {
        FusedOp::Kernel(k) => Some(&**k),
        _ => None,
    }
}

/// Distinct elements `i` and `k` of `v`, mutably.
fn two_mut<T>(v: &mut [T], i: usize, k: usize) -> (&mut T, &mut T) {
    if i < k {
        let (lo, hi) = v.split_at_mut(k);
        (&mut lo[i], &mut hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(i);
        (&mut hi[0], &mut lo[k])
    }
}

/// Where a result of [`run_many`] goes while the blocks run.
enum Out<'r, T> {
    /// Stored: the values so far.
    Store(Vec<T>),
    /// Summed: the running sum of the blocks (and the plain fold of a sum too short
    /// for blocks, as the reduction computes it).
    Sum(f64, Option<T>),
    /// Stored, by a piece of a parallel run: its region of the result, and how
    /// many elements of it the blocks so far wrote.
    Region(&'r mut [MaybeUninit<T>], usize),
    /// Summed, by a piece of a parallel run: the totals of its sum's blocks, in
    /// order (the calling thread adds every piece's, in order).
    Partials(Vec<f64>),
    /// Stored in f16 or bf16 (a program of halves): the bits so far.
    Bits(Vec<u16>),
    /// Stored in f16 or bf16 by a piece of a parallel run: its region, and how
    /// many elements of it the blocks so far wrote.
    BitsRegion(&'r mut [MaybeUninit<u16>], usize),
}

/// A generated kernel's computation on one block (`BlockKernel::eval_f32`, ..).
type KernelFn<'a, T> = &'a (dyn Fn(&dyn BlockKernel, &[&[T]], &mut Vec<T>) + Sync);

/// A generated op's value and its derivative in one loop
/// (`BlockKernel::eval_pair_f32`, ..): `false` when the kernels have none.
type PairFn<'a, T> = &'a (
        dyn Fn(&dyn BlockKernel, &dyn BlockKernel, &[&[T]], &mut Vec<T>, &mut Vec<T>) -> bool + Sync
    );

/// The schedule of a program, decided before its blocks run: which steps run in
/// one loop, and which write their results directly.
struct Plan {
    /// Elements per block.
    block: usize,
    /// Whether stored results are written past the caches (see `stream`).
    stream: bool,
    /// Whether the blocks ask for their dense leaves' next values ahead (see
    /// `Source::prefetch`): when the arrays are larger than the caches.
    prefetch: bool,
    /// `pairs[p] = (value, derivative)`: a generated op's value and its first
    /// derivative over the same operands, in one loop at step `p`, the first of
    /// the two.
    pairs: Vec<Option<(usize, usize)>>,
    /// The steps of `pairs`.
    in_pair: Vec<bool>,
    /// `folds[k] = (j, how k reads j)`: arithmetic step `j`, read only by step
    /// `k`, computed in `k`'s loop, its value never stored.
    folds: Vec<Option<(usize, Fold)>>,
    /// The steps `folds` computes in the loop of their reader.
    folded: Vec<bool>,
    /// `own[j] = Some(k)`: step `j`'s loop writes (or sums) result `k` directly.
    own: Vec<Option<usize>>,
    /// How many loops a block runs (steps neither folded nor the second of a
    /// pair): the parts its prefetching is spread over.
    loops: usize,
    /// Whether the blocks run in pieces on the pool: a generated op's step then
    /// writes no result directly (its kernel appends to a `Vec`, not a region).
    pieces: bool,
    /// For a program of halves (f16 or bf16, computed in f32): every step's
    /// values are rounded to it in their block buffer, as the ops one by one
    /// store them; no step is folded into another's loop or writes a result
    /// directly (both would skip the rounding).
    round: Option<DType>,
}

impl Plan {
    /// The schedule of `steps` over `n` elements of `size` bytes with results
    /// `outputs`, run in pieces or not; `read[j]` is how often step `j` is read
    /// (`check_program`).
    fn new(
        steps: &[Step],
        n: usize,
        outputs: &[(usize, Sink)],
        read: &[usize],
        size: usize,
        pieces: bool,
        round: Option<DType>,
    ) -> Plan {
        let len = steps.len();
        let mut plan = Plan {
            block: match round {
                None => SHORT_BLOCK,
                Some(_) => BLOCK,
            }
            .min(n.max(1)),
            stream: n * size >= STREAM_BYTES,
            prefetch: n * size >= PREFETCH_BYTES,
            pairs: vec![None; len],
            in_pair: vec![false; len],
            folds: vec![None; len],
            folded: vec![false; len],
            own: Vec::new(),
            loops: len,
            pieces,
            round,
        };
        if len > 1 {
            plan.pair(steps);
            if round.is_none() {
                plan.fold(steps, read);
            }
        }
        // (A folded step runs in its reader's loop, the second of a pair in the
        // first's.)
        let second_of_pair = |j: usize| plan.in_pair[j] && plan.pairs[j].is_none();
        plan.loops = (0..len)
            .filter(|&j| !plan.folded[j] && !second_of_pair(j))
            .count()
            .max(1);
        plan.own = (0..len)
            .map(|j| match round {
                None => plan.owner(steps, j, n, outputs, read),
                Some(_) => None,
            })
            .collect();
        plan
    }

    /// Pairs each generated op's first derivative with its value over the same
    /// operands, when every step the derivative reads comes before the first of
    /// the two.
    fn pair(&mut self, steps: &[Step]) {
        for (d, sd) in steps.iter().enumerate() {
            let Some(kd) = kernel_of(sd).filter(|_| sd.args.len() >= 2 && !self.in_pair[d]) else {
                continue;
            };
            let arity = sd.args.len() - 1;
            let in_pair = &self.in_pair;
            let value = steps.iter().enumerate().position(|(v, sv)| {
                let p = v.min(d);
                v != d
                    && !in_pair[v]
                    && sv.args[..] == sd.args[..arity]
                    && sd
                        .args
                        .iter()
                        .all(|a| !matches!(*a, Operand::Step(i) if i >= p))
                    && kernel_of(sv).is_some_and(|kv| kd.derivative_of(kv))
            });
            if let Some(v) = value {
                self.pairs[v.min(d)] = Some((v, d));
                self.in_pair[v] = true;
                self.in_pair[d] = true;
            }
        }
    }

    /// Folds an arithmetic step read only by one later arithmetic step into that
    /// step's loop: a chain `x * x + b` is one loop, not two. One level deep: a
    /// folded step folds nothing itself.
    fn fold(&mut self, steps: &[Step], read: &[usize]) {
        let in_pair = &self.in_pair;
        let arith = |j: usize| {
            !in_pair[j]
                && matches!(
                    steps[j].op,
                    FusedOp::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div)
                )
        };
        for (k, step) in steps.iter().enumerate() {
            if !arith(k) {
                continue;
            }
            let folds = &self.folds;
            let inner = |a: Operand| match a {
                Operand::Step(j) if arith(j) && folds[j].is_none() => Some(j),
                _ => None,
            };
            let fold = match (inner(step.args[0]), inner(step.args[1])) {
                (Some(j), Some(i)) if i == j && read[j] == 2 => Some((j, Fold::Both)),
                (Some(j), _) if read[j] == 1 => Some((j, Fold::Left)),
                (_, Some(j)) if read[j] == 1 => Some((j, Fold::Right)),
                _ => None,
            };
            if let Some((j, _)) = fold {
                self.folded[j] = true;
            }
            self.folds[k] = fold;
        }
    }

    /// The output step `j`'s own loop writes, when nothing else reads the step: a
    /// stored result is appended to its output directly, and a binary step that
    /// only a sum reads is summed in its loop, its values never stored (the block
    /// sum's lanes take them as they are computed, in the order they would read
    /// them from a buffer). Every other step computes into a block buffer of its
    /// own, stored results then copied out of it, summed ones added up from it.
    /// Results larger than the caches are written past them (see `stream`): from
    /// the loop of an arithmetic or unary step, which streams its values as it
    /// computes them, else copied out of the block buffer.
    fn owner(
        &self,
        steps: &[Step],
        j: usize,
        n: usize,
        outputs: &[(usize, Sink)],
        read: &[usize],
    ) -> Option<usize> {
        // (Read once: by its one output and no step.)
        let k = outputs.iter().position(|&(i, _)| i == j)?;
        let fits = match outputs[k].1 {
            Sink::Store => {
                !(self.stream || self.pieces)
                    || matches!(steps[j].op, FusedOp::Unary(_) | FusedOp::Binary(_))
            }
            Sink::Sum => n > reduce::LANES && matches!(steps[j].op, FusedOp::Binary(_)),
        };
        (read[j] == 1 && !self.in_pair[j] && fits).then_some(k)
    }

    /// A block buffer for every step that computes into one.
    fn buffers<T>(&self) -> Vec<Vec<T>> {
        self.own
            .iter()
            .zip(&self.folded)
            .map(|(own, &folded)| match own {
                None if !folded => Vec::with_capacity(self.block),
                _ => Vec::new(),
            })
            .collect()
    }
}

/// The leaves' values for the block of `len` elements from `start`.
struct Block<'s, 'a, T> {
    sources: &'s [Source<'a, T>],
    start: usize,
    len: usize,
}

impl<'s, T: CpuElement + crate::Element> Block<'s, '_, T> {
    #[inline(always)]
    fn leaf(&self, k: usize) -> &'s [T] {
        self.sources[k].block(self.start, self.len)
    }
}

/// Runs a program (checked, then planned: see [`Plan`]) block by block, on `T`
/// operands; `kernel` and `pair` run the generated ops' steps.
fn run_program<T: CpuElement + crate::Element>(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    outputs: &[(usize, Sink)],
    kernel: KernelFn<T>,
    pair: PairFn<T>,
    half: Option<DType>,
) -> Result<Vec<CpuStorage>> {
    let read = check_program(steps, leaves, n, outputs)?;
    if in_pieces(n, leaves.len() + outputs.len()) {
        return run_pieces(steps, leaves, n, outputs, &read, kernel, pair, half);
    }
    let plan = Plan::new(
        steps,
        n,
        outputs,
        &read,
        stored_size::<T>(half),
        false,
        half,
    );
    let mut sources: Sources<T> = Source::plan(leaves, n, plan.block)?;
    let mut bufs = plan.buffers::<T>();
    let mut outs = outputs
        .iter()
        .map(|&(_, sink)| {
            Ok(match (sink, half) {
                (Sink::Store, None) => Out::Store(pool::take(n)?),
                (Sink::Store, Some(_)) => Out::Bits(pool::alloc(n)?),
                (Sink::Sum, _) => Out::Sum(0.0, None),
            })
        })
        .collect::<Result<SmallVec<[Out<T>; 4]>>>()?;
    run_blocks(
        steps,
        &plan,
        outputs,
        &mut sources,
        &mut bufs,
        &mut outs,
        0..n,
        n,
        kernel,
        pair,
    )?;
    if plan.stream {
        fence();
    }
    finish(steps, outputs, outs, n, half)
}

/// Bytes per stored element: the half's 2 for a program of halves.
fn stored_size<T>(half: Option<DType>) -> usize {
    half.map_or(std::mem::size_of::<T>(), DType::size_in_bytes)
}

/// [`run_program`] in pieces of [`PIECE`] elements on the pool. The stored results
/// are allocated here (the buffer cache is the calling thread's) and each piece
/// writes its own region of them, from the same loops as one pass (streamed ones
/// fenced by the thread that streamed them); each piece records its sums' block
/// totals, which are added here in order from `0.0`: the bits of one pass.
#[allow(clippy::too_many_arguments)]
fn run_pieces<T: CpuElement + crate::Element>(
    steps: &[Step],
    leaves: &[(&CpuStorage, &Layout)],
    n: usize,
    outputs: &[(usize, Sink)],
    read: &[usize],
    kernel: KernelFn<T>,
    pair: PairFn<T>,
    half: Option<DType>,
) -> Result<Vec<CpuStorage>> {
    let plan = Plan::new(steps, n, outputs, read, stored_size::<T>(half), true, half);
    let sources: Sources<T> = Source::plan(leaves, n, plan.block)?;
    // The stored results: of `T`, or the bits of halves in a program of halves.
    let store = |sink: Sink, halves: bool| sink == Sink::Store && half.is_some() == halves;
    let mut stored = stored_results(outputs, |s| store(s, false), pool::take::<T>, n)?;
    let mut stored_bits = stored_results(outputs, |s| store(s, true), pool::alloc::<u16>, n)?;
    let regions = spare_regions(&mut stored, n);
    let bit_regions = spare_regions(&mut stored_bits, n);
    let pieces = n.div_ceil(piece());
    let work = n * (leaves.len() + outputs.len());
    let partials = parallel::map(pieces, work, |p| -> Result<SmallVec<[Vec<f64>; 4]>> {
        let range = piece_range(p, n);
        let mut outs = regions
            .iter()
            .zip(&bit_regions)
            .map(|(r, b)| match (r, b) {
                // SAFETY: the pieces' ranges are disjoint and within the `n`
                // elements of spare capacity, which nothing else touches until
                // the job ends.
                (Some(r), _) => Out::Region(unsafe { r.slice(range.start, range.len()) }, 0),
                // SAFETY: as above.
                (None, Some(b)) => Out::BitsRegion(unsafe { b.slice(range.start, range.len()) }, 0),
                (None, None) => {
                    Out::Partials(Vec::with_capacity(piece().div_ceil(reduce::SUM_BLOCK)))
                }
            })
            .collect::<SmallVec<[Out<T>; 4]>>();
        let mut sources: Sources<T> = sources
            .iter()
            .map(|s| s.piece(range.start, plan.block))
            .collect();
        let mut bufs = plan.buffers::<T>();
        run_blocks(
            steps,
            &plan,
            outputs,
            &mut sources,
            &mut bufs,
            &mut outs,
            range,
            n,
            kernel,
            pair,
        )?;
        if plan.stream {
            // (On the thread that issued this piece's streaming stores.)
            fence();
        }
        Ok(outs
            .into_iter()
            .map(|o| match o {
                Out::Partials(t) => t,
                _ => Vec::new(),
            })
            .collect())
    });
    let partials = partials.into_iter().collect::<Result<Vec<_>>>()?;
    let outs = stored
        .into_iter()
        .zip(stored_bits)
        .enumerate()
        .map(|(k, v)| match v {
            (Some(mut v), _) => {
                // SAFETY: every piece succeeded, so each wrote every element of
                // its range (each block's values, written by its step's loop or
                // copied, checked, from its block buffer), and the ranges cover
                // `0..n`.
                unsafe { v.set_len(n) };
                Out::Store(v)
            }
            (None, Some(mut v)) => {
                // SAFETY: as above (each block narrowed into its range).
                unsafe { v.set_len(n) };
                Out::Bits(v)
            }
            (None, None) => {
                let total = partials.iter().flat_map(|p| &p[k]).fold(0.0, |t, &b| t + b);
                Out::Sum(total, None)
            }
        })
        .collect();
    finish(steps, outputs, outs, n, half)
}

/// A buffer with room for `n` elements (from `alloc`) for each output `stores`
/// says is stored this way, `None` for the others.
fn stored_results<U>(
    outputs: &[(usize, Sink)],
    stores: impl Fn(Sink) -> bool,
    alloc: impl Fn(usize) -> Result<Vec<U>>,
    n: usize,
) -> Result<SmallVec<[Option<Vec<U>>; 4]>> {
    outputs
        .iter()
        .map(|&(_, sink)| stores(sink).then(|| alloc(n)).transpose())
        .collect()
}

/// The `n` elements of spare capacity of each buffer, shared by the pieces
/// (each writes its own range).
fn spare_regions<U>(
    stored: &mut [Option<Vec<U>>],
    n: usize,
) -> SmallVec<[Option<SharedMut<MaybeUninit<U>>>; 4]> {
    stored
        .iter_mut()
        .map(|v| {
            v.as_mut()
                .map(|v| SharedMut::new(&mut v.spare_capacity_mut()[..n]))
        })
        .collect()
}

/// Runs every step of `plan` on each block of `range` (of the program's `n`
/// elements; from a multiple of the block), into the block buffers `bufs` and
/// the results `outs`; `kernel` and `pair` run the generated ops' steps.
#[allow(clippy::too_many_arguments)]
fn run_blocks<T: CpuElement + crate::Element>(
    steps: &[Step],
    plan: &Plan,
    outputs: &[(usize, Sink)],
    sources: &mut [Source<'_, T>],
    bufs: &mut [Vec<T>],
    outs: &mut [Out<'_, T>],
    range: std::ops::Range<usize>,
    n: usize,
    kernel: KernelFn<T>,
    pair: PairFn<T>,
) -> Result<()> {
    let mut with_value = vec![false; steps.len()];
    let mut bits = match plan.round {
        Some(_) => vec![0u16; plan.block],
        None => Vec::new(),
    };
    let mut start = range.start;
    while start < range.end {
        let len = plan.block.min(range.end - start);
        Source::advance(sources, len);
        let block = Block {
            sources,
            start,
            len,
        };
        with_value.fill(false);
        // The block `PREFETCH_AHEAD` blocks on, asked for part by part, one part
        // before each loop of this block.
        let ahead = (start + PREFETCH_AHEAD * len).min(range.end)
            ..(start + (PREFETCH_AHEAD + 1) * len).min(range.end);
        let mut part = 0;
        for j in 0..steps.len() {
            if with_value[j] || plan.folded[j] {
                continue; // computed with its pair, or in the loop of the step reading it
            }
            if plan.prefetch {
                Source::prefetch(block.sources, ahead.clone(), part, plan.loops);
                part += 1;
            }
            if let Some((v, d)) = plan.pairs[j]
                && pair_block(steps, j, (v, d), bufs, &block, pair)
            {
                with_value[v] = true;
                with_value[d] = true;
                if let Some(kind) = plan.round {
                    round_to_f32(kind, &mut bufs[v]);
                    round_to_f32(kind, &mut bufs[d]);
                }
                continue;
            }
            step_block(steps, plan, j, bufs, outs, &block, kernel)?;
            if let Some(kind) = plan.round {
                round_to_f32(kind, &mut bufs[j]);
            }
        }
        store_block(plan, outputs, outs, bufs, n, len, &mut bits)?;
        start += len;
    }
    Ok(())
}

/// Computes the pair `(v, d)` planned at step `j` in one loop, into their block
/// buffers; `false`, the buffers left empty, when the kernels have no such loop.
fn pair_block<T: CpuElement + crate::Element>(
    steps: &[Step],
    j: usize,
    (v, d): (usize, usize),
    bufs: &mut [Vec<T>],
    block: &Block<'_, '_, T>,
    pair: PairFn<T>,
) -> bool {
    let (Some(kv), Some(kd)) = (kernel_of(&steps[v]), kernel_of(&steps[d])) else {
        return false;
    };
    let (done, rest) = bufs.split_at_mut(j);
    let (bv, bd) = two_mut(rest, v - j, d - j);
    bv.clear();
    bd.clear();
    let ins: SmallVec<[&[T]; 5]> = steps[d]
        .args
        .iter()
        .map(|&a| match a {
            Operand::Leaf(k) => block.leaf(k),
            Operand::Step(i) => &done[i][..],
        })
        .collect();
    if pair(kd, kv, &ins, bv, bd) {
        return true;
    }
    bv.clear();
    bd.clear();
    false
}

/// Computes step `j` on one block: into its block buffer, or into the result it
/// owns (see [`Plan::owner`]), with the step it folds (see [`Plan::fold`]).
fn step_block<T: CpuElement + crate::Element>(
    steps: &[Step],
    plan: &Plan,
    j: usize,
    bufs: &mut [Vec<T>],
    outs: &mut [Out<T>],
    block: &Block<'_, '_, T>,
    kernel: KernelFn<T>,
) -> Result<()> {
    let step = &steps[j];
    let (done, rest) = bufs.split_at_mut(j);
    let len = block.len;
    let dest = match plan.own[j].map(|k| &mut outs[k]) {
        Some(Out::Sum(total, _)) => Dest::Sum(total),
        Some(Out::Partials(totals)) => Dest::Partials(totals),
        Some(Out::Region(r, at)) if plan.stream => Dest::StreamInto(&mut r[*at..*at + len]),
        Some(Out::Region(r, at)) => Dest::Into(&mut r[*at..*at + len]),
        Some(Out::Store(out)) if plan.stream => Dest::Stream(out),
        Some(Out::Store(out)) => Dest::Append(out),
        // (A program of halves owns no result: `Plan::new`.)
        Some(Out::Bits(_) | Out::BitsRegion(..)) | None => {
            let b = &mut rest[0];
            b.clear();
            Dest::Append(b)
        }
    };
    let arg = |a: Operand| -> &[T] {
        match a {
            Operand::Leaf(k) => block.leaf(k),
            Operand::Step(i) => &done[i],
        }
    };
    match (&step.op, dest) {
        (FusedOp::Unary(op), dest) => unary_block(arg(step.args[0]), dest, *op),
        (FusedOp::Binary(op), dest) => match plan.folds[j] {
            None => binary_block(arg(step.args[0]), arg(step.args[1]), dest, *op),
            Some((i, fold)) => {
                let inner = &steps[i];
                let (a, b) = (arg(inner.args[0]), arg(inner.args[1]));
                let c = match fold {
                    Fold::Left => arg(step.args[1]),
                    Fold::Right => arg(step.args[0]),
                    Fold::Both => a,
                };
                let two = match inner.op {
                    FusedOp::Binary(f) => binary2_block([a, b, c], dest, f, *op, fold),
                    _ => false,
                };
                if !two {
                    // (Only arithmetic steps are folded: not reached.)
                    return Err(KernelError::Layout(format!(
                        "step {j} of a fused chain ({}) cannot compute step {i} ({})",
                        step.op.name(),
                        inner.op.name()
                    )));
                }
            }
        },
        (FusedOp::Kernel(k), Dest::Append(target)) => {
            let ins: SmallVec<[&[T]; 5]> = step.args.iter().map(|&a| arg(a)).collect();
            kernel(&**k, &ins, target);
        }
        // (Only binary steps are summed in their loop, and only unary and
        // binary steps stream or write a piece's region: not reached.)
        (
            FusedOp::Kernel(_),
            Dest::Sum(_)
            | Dest::Stream(_)
            | Dest::Into(_)
            | Dest::StreamInto(_)
            | Dest::Partials(_),
        ) => {
            return Err(KernelError::Layout(format!(
                "step {j} of a fused chain ({}) cannot be summed or streamed in its loop",
                step.op.name()
            )));
        }
    }
    Ok(())
}

/// Adds a block (of `len` elements) of values to the results their steps' loops
/// did not write; an error when a step's block buffer does not hold `len` values
/// (a generated kernel that wrote too few or too many).
fn store_block<T: CpuElement + crate::Element>(
    plan: &Plan,
    outputs: &[(usize, Sink)],
    outs: &mut [Out<T>],
    bufs: &[Vec<T>],
    n: usize,
    len: usize,
    bits: &mut [u16],
) -> Result<()> {
    for (k, (&(j, _), out)) in outputs.iter().zip(outs).enumerate() {
        let own = plan.own[j] == Some(k);
        if let (Out::Bits(_) | Out::BitsRegion(..), Some(kind)) = (&*out, plan.round) {
            let b = &bufs[j];
            if b.len() != len {
                return Err(KernelError::Layout(format!(
                    "step {j} of a fused chain wrote {} values for a block of {len}",
                    b.len()
                )));
            }
            let bits = &mut bits[..len];
            narrow_f32(kind, b, bits);
            match out {
                Out::Bits(out) if plan.stream => append_streaming(out, bits),
                Out::Bits(out) => out.extend_from_slice(bits),
                Out::BitsRegion(r, at) => {
                    let to = &mut r[*at..*at + len];
                    if plan.stream {
                        write_streaming(to, bits);
                    } else {
                        write_plain(to, bits);
                    }
                    *at += len;
                }
                _ => {}
            }
            continue;
        }
        match out {
            Out::Region(r, at) => {
                if !own {
                    let b = &bufs[j];
                    if b.len() != len {
                        return Err(KernelError::Layout(format!(
                            "step {j} of a fused chain wrote {} values for a block of {len}",
                            b.len()
                        )));
                    }
                    let to = &mut r[*at..*at + len];
                    if plan.stream {
                        write_streaming(to, b);
                    } else {
                        write_plain(to, b);
                    }
                }
                *at += len;
            }
            _ if own => {} // written or summed by its loop
            Out::Partials(totals) => reduce::sum_blocks_each(&bufs[j], |t| totals.push(t)),
            Out::Store(out) if plan.stream => append_streaming(out, &bufs[j]),
            Out::Store(out) => out.extend_from_slice(&bufs[j]),
            // (A sum this short is a plain fold, as the reduction does it.)
            Out::Sum(_, small) if n <= reduce::LANES => {
                *small = Some(bufs[j].iter().fold(T::ZERO, |a, &b| a + b));
            }
            Out::Sum(total, _) => reduce::sum_blocks_into(&bufs[j], total),
            // (Handled above: a program of halves has `round`.)
            Out::Bits(_) | Out::BitsRegion(..) => {
                return Err(KernelError::Internal(
                    "a fused chain stores halves without rounding".into(),
                ));
            }
        }
    }
    Ok(())
}

/// `v` (values of type `T`, which is `f32` in a program of halves) rounded to
/// `kind` in place.
fn round_to_f32<T: 'static>(kind: DType, v: &mut [T]) {
    if let Some(v) = as_f32_mut(v) {
        round_to(kind, v);
    }
}

/// `v` (values of type `T`, which is `f32` in a program of halves) narrowed to
/// `kind`'s bits into `out`.
fn narrow_f32<T: 'static>(kind: DType, v: &[T], out: &mut [u16]) {
    if let Some(v) = as_f32(v) {
        narrow(kind, v, out);
    }
}

/// The results, once every block ran: stored values checked complete, sums as
/// buffers of one element.
fn finish<T: CpuElement + crate::Element>(
    steps: &[Step],
    outputs: &[(usize, Sink)],
    outs: SmallVec<[Out<'_, T>; 4]>,
    n: usize,
    half: Option<DType>,
) -> Result<Vec<CpuStorage>> {
    use half::vec::HalfBitsVecExt;
    let results = outputs.iter().zip(outs).map(|(&(j, _), out)| match out {
        Out::Bits(v) if v.len() == n => Ok(match half {
            Some(DType::F16) => CpuStorage::F16(v.reinterpret_into()),
            _ => CpuStorage::BF16(v.reinterpret_into()),
        }),
        Out::Bits(v) => Err(KernelError::Layout(format!(
            "a fused chain ending in `{}` wrote {} of {n} elements",
            steps[j].op.name(),
            v.len()
        ))),
        out => finish_one(steps, j, out, n),
    });
    match half {
        // A sum of halves (computed in f32) rounded once to the dtype.
        Some(kind) => results
            .map(|r| match r? {
                s @ (CpuStorage::F16(_) | CpuStorage::BF16(_)) => Ok(s),
                s => crate::BackendStorage::cast(
                    &s,
                    &Layout::contiguous(crate::Shape::from([s.len()])),
                    kind,
                ),
            })
            .collect(),
        None => results.collect(),
    }
}

/// One result of [`finish`] in the program's element type.
fn finish_one<T: CpuElement + crate::Element>(
    steps: &[Step],
    j: usize,
    out: Out<'_, T>,
    n: usize,
) -> Result<CpuStorage> {
    match out {
        Out::Store(out) if out.len() == n => Ok(T::wrap(out)),
        Out::Store(out) => Err(KernelError::Layout(format!(
            "a fused chain ending in `{}` wrote {} of {n} elements",
            steps[j].op.name(),
            out.len()
        ))),
        Out::Sum(total, small) => {
            let mut one = pool::take(1)?;
            one.push(T::ZERO + small.unwrap_or_else(|| T::from_f64(total)));
            Ok(T::wrap(one))
        }
        // (Only the pieces of a parallel run hold these, and `finish` takes
        // the halves: not reached.)
        Out::Region(..) | Out::Partials(_) | Out::BitsRegion(..) | Out::Bits(_) => Err(
            KernelError::Layout("a fused chain's piece was returned as a result".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::program::same_for_every_thread_count;
    use crate::{BackendStorage, Shape, UnaryOp};
    use std::sync::Arc;

    fn leaf(v: Vec<f32>) -> CpuStorage {
        CpuStorage::F32(v)
    }

    /// A binary step over two operands.
    fn step(op: BinaryOp, a: Operand, b: Operand) -> Step {
        Step {
            op: FusedOp::Binary(op),
            args: [a, b].into_iter().collect(),
        }
    }

    const L0: Operand = Operand::Leaf(0);
    const L1: Operand = Operand::Leaf(1);
    const L2: Operand = Operand::Leaf(2);
    const S0: Operand = Operand::Step(0);

    /// `len` values `sin(i * seed) + shift` of `dtype`.
    fn data(dtype: DType, seed: f64, shift: f64, len: usize) -> CpuStorage {
        let v: Vec<f64> = (0..len).map(|i| (i as f64 * seed).sin() + shift).collect();
        CpuStorage::F64(v)
            .cast(&Layout::contiguous(Shape::from([len])), dtype)
            .unwrap()
    }

    /// The bits of every value (as `f64`, exact for both dtypes).
    fn bits(s: &CpuStorage) -> Vec<u64> {
        let all = Layout::contiguous(Shape::from([s.len()]));
        let v = s.to_vec::<f64>(&all).unwrap();
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// An arithmetic step read once by the next computes in that step's loop
    /// (left, right, or both operands), for every pair of `+ - * /` and both dtypes,
    /// with the bits of the two steps stored one after the other: the inner step
    /// made a result too is not folded, which gives those bits.
    #[test]
    fn two_arithmetic_steps_in_one_loop_give_the_bits_of_each_in_turn() {
        let n = 2 * BLOCK + 333;
        let l = Layout::contiguous(Shape::from([n]));
        let arith = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div];
        let mut compared = 0;
        for dtype in [DType::F32, DType::F64] {
            let data = |seed: f64, len: usize| data(dtype, seed, 1.5, len);
            // The third leaf one value repeated (a scalar broadcast).
            let (x, a, b) = (data(0.37, n), data(0.11, n), data(0.5, 1));
            let b_view = Layout::new(Shape::from([n]), &[0], 0).unwrap();
            let leaves = [(&x, &l), (&a, &l), (&b, &b_view)];
            for inner in arith {
                for outer in arith {
                    for steps in [
                        vec![step(inner, L0, L1), step(outer, S0, L2)],
                        vec![step(inner, L0, L1), step(outer, L2, S0)],
                        vec![step(inner, L1, L0), step(outer, S0, S0)],
                    ] {
                        for sink in [Sink::Store, Sink::Sum] {
                            let folded = run_many(&steps, &leaves, n, dtype, &[(1, sink)]);
                            let apart =
                                run_many(&steps, &leaves, n, dtype, &[(1, sink), (0, Sink::Store)]);
                            let (folded, apart) = (folded.unwrap(), apart.unwrap());
                            let same = bits(&folded[0]) == bits(&apart[0]);
                            assert!(same, "{inner:?} {outer:?} {steps:?} {sink:?}");
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(compared, 2 * 4 * 4 * 3 * 2);
    }

    /// A binary step that only a sum reads is summed in its own loop, never stored:
    /// the bits of storing it and summing that, alone or with a step folded into it
    /// (left, right, both operands), a comparison too, at lengths around the lanes
    /// and the blocks, for both dtypes and a broadcast operand.
    #[test]
    fn a_step_summed_in_its_loop_gives_the_bits_of_summing_it_stored() {
        let mut compared = 0;
        for dtype in [DType::F32, DType::F64] {
            for n in [
                reduce::LANES + 1,
                1000,
                reduce::SUM_BLOCK,
                BLOCK + 7,
                3 * BLOCK + 333,
            ] {
                let l = Layout::contiguous(Shape::from([n]));
                let data = |seed: f64, len: usize| data(dtype, seed, 0.25, len);
                let (x, a, b) = (data(0.37, n), data(0.11, n), data(0.5, 1));
                let b_view = Layout::new(Shape::from([n]), &[0], 0).unwrap();
                let leaves = [(&x, &l), (&a, &l), (&b, &b_view)];
                for steps in [
                    vec![step(BinaryOp::Mul, L0, L1)],
                    vec![step(BinaryOp::Mul, L0, L0), step(BinaryOp::Add, S0, L2)],
                    vec![step(BinaryOp::Sub, L0, L1), step(BinaryOp::Div, L2, S0)],
                    vec![step(BinaryOp::Mul, L0, L1), step(BinaryOp::Add, S0, S0)],
                    vec![step(BinaryOp::Gt, L0, L1)],
                ] {
                    let last = steps.len() - 1;
                    let summed = run_many(&steps, &leaves, n, dtype, &[(last, Sink::Sum)]);
                    let stored = run_many(&steps, &leaves, n, dtype, &[(last, Sink::Store)]);
                    let stored = &stored.unwrap()[0];
                    let want = stored.reduce(&l, crate::ReduceOp::Sum, &[0]).unwrap();
                    let summed = &summed.unwrap()[0];
                    assert_eq!(bits(summed), bits(&want), "{dtype:?} {n} {steps:?}");
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 2 * 5 * 5);
    }

    /// A chain of halves (f16, bf16) gives the bits of its ops one by one, each
    /// computing in f32 and rounding its result to the dtype: stored and summed
    /// results, dense, broadcast and transposed leaves, serial and in pieces on
    /// any number of threads.
    #[test]
    fn a_chain_of_halves_gives_the_bits_of_its_ops_one_by_one() {
        use crate::cpu::program::same_for_every_thread_count;
        for dtype in [DType::F16, DType::BF16] {
            let (rows, cols) = (3 * BLOCK / 64 + 5, 64);
            let n = rows * cols;
            let shape = Shape::from([rows, cols]);
            let l = Layout::contiguous(shape.clone());
            let x = data(dtype, 0.37, 0.5, n);
            let a = data(dtype, 0.11, -0.25, n);
            // A row broadcast over the rows, and a transposed view.
            let b = data(dtype, 0.5, 1.0, cols);
            let bl = Layout::contiguous(Shape::from([1, cols]))
                .broadcast_to(&shape)
                .unwrap();
            let t = data(dtype, 0.23, 0.0, n);
            let tl = Layout::contiguous(Shape::from([cols, rows]))
                .transpose(0, 1)
                .unwrap();
            let leaves = [(&x, &l), (&a, &l), (&b, &bl), (&t, &tl)];
            // ((x * a + x) * b - t) / x, its value stored and summed, and x * a.
            let steps = vec![
                step(BinaryOp::Mul, L0, L1),
                step(BinaryOp::Add, S0, L0),
                step(BinaryOp::Mul, Operand::Step(1), L2),
                step(BinaryOp::Sub, Operand::Step(2), Operand::Leaf(3)),
                step(BinaryOp::Div, Operand::Step(3), L0),
            ];
            let outputs = [(4, Sink::Store), (4, Sink::Sum), (0, Sink::Store)];
            // One by one, each op a kernel of its own (widen, compute, round).
            let op = |p: &CpuStorage, pl: &Layout, q: &CpuStorage, ql: &Layout, f| {
                p.binary(pl, q, ql, f).unwrap()
            };
            let s0 = op(&x, &l, &a, &l, BinaryOp::Mul);
            let s1 = op(&s0, &l, &x, &l, BinaryOp::Add);
            let s2 = op(&s1, &l, &b, &bl, BinaryOp::Mul);
            let s3 = op(&s2, &l, &t, &tl, BinaryOp::Sub);
            let s4 = op(&s3, &l, &x, &l, BinaryOp::Div);
            let sum = s4.reduce(&l, crate::ReduceOp::Sum, &[0, 1]).unwrap();
            let want = [bits(&s4), bits(&sum), bits(&s0)];
            same_for_every_thread_count(&format!("a chain of {dtype}"), || {
                let got = run_many(&steps, &leaves, n, dtype, &outputs).unwrap();
                assert!(got.iter().all(|g| g.dtype() == dtype));
                let got: Vec<Vec<u64>> = got.iter().map(bits).collect();
                assert_eq!(got[0], want[0], "{dtype} stored");
                assert_eq!(got[1], want[1], "{dtype} summed");
                assert_eq!(got[2], want[2], "{dtype} first step");
                got
            });
        }
    }

    #[test]
    fn a_chain_computes_what_its_kernels_compute_one_by_one() {
        let n = 5000;
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
        let (sx, sa) = (leaf(x.clone()), leaf(a.clone()));
        let l = Layout::contiguous(Shape::from([n]));
        // (x * a + x) * x, then the same summed.
        let steps = vec![
            Step {
                op: FusedOp::Binary(BinaryOp::Mul),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Binary(BinaryOp::Add),
                args: [Operand::Step(0), Operand::Leaf(0)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Binary(BinaryOp::Mul),
                args: [Operand::Step(1), Operand::Leaf(0)].into_iter().collect(),
            },
        ];
        let leaves = [(&sx, &l), (&sa, &l)];
        let fused = run(&steps, &leaves, n, DType::F32, Sink::Store).unwrap();
        let t = sx.binary(&l, &sa, &l, BinaryOp::Mul).unwrap();
        let t = t.binary(&l, &sx, &l, BinaryOp::Add).unwrap();
        let y = t.binary(&l, &sx, &l, BinaryOp::Mul).unwrap();
        assert_eq!(fused, y);
        let sum = run(&steps, &leaves, n, DType::F32, Sink::Sum).unwrap();
        let all = Layout::contiguous(Shape::from([n]));
        assert_eq!(sum, y.reduce(&all, crate::ReduceOp::Sum, &[0]).unwrap());
    }

    #[test]
    fn several_results_come_from_one_pass_with_the_bits_of_separate_runs() {
        // Past `STREAM_BYTES` (stored results are streamed) and `PREFETCH_BYTES`
        // (the blocks prefetch their leaves), and a length that leaves a partial
        // block and an unaligned tail.
        let n = (STREAM_BYTES.max(PREFETCH_BYTES) / 4) + 2 * BLOCK + 3;
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
        let (sx, sa) = (leaf(x), leaf(a));
        let l = Layout::contiguous(Shape::from([n]));
        let leaves = [(&sx, &l), (&sa, &l)];
        // t = x * a + x; y = t * x (summed); g = t + a (stored, reads t); -x.
        // Steps 3 and 4 stream from their own loops (nothing else reads them), 1
        // and 2 are copied out of their block buffers.
        let mut steps = vec![
            step(BinaryOp::Mul, L0, L1),
            step(BinaryOp::Add, S0, L0),
            step(BinaryOp::Mul, Operand::Step(1), L0),
            step(BinaryOp::Add, Operand::Step(1), L1),
        ];
        steps.push(Step {
            op: FusedOp::Unary(UnaryOp::Neg),
            args: [Operand::Leaf(0)].into_iter().collect(),
        });
        let outputs = [
            (2, Sink::Sum),
            (3, Sink::Store),
            (1, Sink::Store),
            (2, Sink::Store),
            (4, Sink::Store),
        ];
        let many = run_many(&steps, &leaves, n, DType::F32, &outputs).unwrap();
        for (&(j, sink), got) in outputs.iter().zip(&many) {
            let alone = run(&steps[..=j], &leaves, n, DType::F32, sink).unwrap();
            assert_eq!(*got, alone, "result of step {j}, {sink:?}");
        }
        let t = sx.binary(&l, &sa, &l, BinaryOp::Mul).unwrap();
        let t = t.binary(&l, &sx, &l, BinaryOp::Add).unwrap();
        assert_eq!(many[1], t.binary(&l, &sa, &l, BinaryOp::Add).unwrap());
        assert_eq!(many[2], t);
        assert_eq!(many[4], sx.unary(&l, UnaryOp::Neg).unwrap());
        assert!(run_many(&steps, &leaves, n, DType::F32, &[(5, Sink::Store)]).is_err());
        assert!(run_many(&steps, &leaves, n, DType::F32, &[]).is_err());
    }

    #[test]
    fn leaves_may_be_broadcast_or_strided() {
        // [3, 4]: x transposed from [4, 3], b a broadcast row, s a broadcast scalar.
        let x = leaf((0..12).map(|i| i as f32).collect());
        let lx = Layout::contiguous(Shape::from([4, 3]))
            .transpose(0, 1)
            .unwrap();
        let b = leaf(vec![1.0, 2.0, 3.0, 4.0]);
        let lb = Layout::contiguous(Shape::from([4]))
            .broadcast_to(&Shape::from([3, 4]))
            .unwrap();
        let s = leaf(vec![10.0]);
        let ls = Layout::contiguous(Shape::from([1]))
            .broadcast_to(&Shape::from([3, 4]))
            .unwrap();
        let steps = vec![
            Step {
                op: FusedOp::Binary(BinaryOp::Add),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Binary(BinaryOp::Mul),
                args: [Operand::Step(0), Operand::Leaf(2)].into_iter().collect(),
            },
            Step {
                op: FusedOp::Unary(UnaryOp::Neg),
                args: [Operand::Step(1)].into_iter().collect(),
            },
        ];
        let out = run(
            &steps,
            &[(&x, &lx), (&b, &lb), (&s, &ls)],
            12,
            DType::F32,
            Sink::Store,
        )
        .unwrap();
        let want: Vec<f32> = (0..3)
            .flat_map(|r| (0..4).map(move |c| -((c * 3 + r) as f32 + (c + 1) as f32) * 10.0))
            .collect();
        assert_eq!(out, CpuStorage::F32(want));
    }

    #[test]
    fn a_broadcast_run_is_read_as_the_op_reads_it_whether_or_not_it_divides_a_block() {
        let layout = |dims: &[usize], to: &[usize]| {
            Layout::contiguous(Shape::from(dims))
                .broadcast_to(&Shape::from(to))
                .unwrap()
        };
        let period = |dims: &[usize], to: &[usize]| layout(dims, to).broadcast_period();
        assert_eq!(period(&[1024], &[6, 1024]), Some(1024));
        assert_eq!(period(&[1], &[6, 5]), Some(1));
        assert_eq!(period(&[4, 1], &[4, 3]), None);
        assert_eq!(period(&[2, 1, 3], &[5, 2, 1, 3]), Some(6));
        assert_eq!(period(&[2, 3], &[2, 3]), Some(6));
        // Rows of 1024 (blocks hold two), of 3 (a block holds no whole number), and
        // a [2, 3] run under a stretched axis.
        for (row, to) in [
            (vec![1024], vec![6, 1024]),
            (vec![3], vec![5000, 3]),
            (vec![2, 1, 3], vec![700, 2, 4, 3]),
        ] {
            let n: usize = to.iter().product();
            let m: usize = row.iter().product();
            let x = leaf((0..n).map(|i| (i as f32 * 0.37).sin()).collect());
            let b = leaf((0..m).map(|i| i as f32 - 0.5).collect());
            let (lx, lb) = (Layout::contiguous(Shape::from(&to[..])), layout(&row, &to));
            let steps = vec![Step {
                op: FusedOp::Binary(BinaryOp::Sub),
                args: [Operand::Leaf(0), Operand::Leaf(1)].into_iter().collect(),
            }];
            let fused = run(&steps, &[(&x, &lx), (&b, &lb)], n, DType::F32, Sink::Store).unwrap();
            assert_eq!(
                fused,
                x.binary(&lx, &b, &lb, BinaryOp::Sub).unwrap(),
                "{to:?}"
            );
        }
    }

    #[test]
    fn a_malformed_program_is_an_error() {
        let x = leaf(vec![1.0; 4]);
        let l = Layout::contiguous(Shape::from([4]));
        let forward_ref = vec![Step {
            op: FusedOp::Unary(UnaryOp::Neg),
            args: [Operand::Step(0)].into_iter().collect(),
        }];
        assert!(run(&forward_ref, &[(&x, &l)], 4, DType::F32, Sink::Store).is_err());
        assert!(run(&[], &[(&x, &l)], 4, DType::F32, Sink::Store).is_err());
        let neg = vec![Step {
            op: FusedOp::Unary(UnaryOp::Neg),
            args: [Operand::Leaf(0)].into_iter().collect(),
        }];
        assert!(run(&neg, &[(&x, &l)], 4, DType::F64, Sink::Store).is_err());
        assert!(run(&neg, &[(&x, &l)], 5, DType::F32, Sink::Store).is_err());
    }

    /// `x * x + 0.25`, a generated op's kernel as a chain calls it.
    struct Square;
    /// `g * 2x`: [`Square`]'s derivative, computed in one loop with it.
    struct DSquare;

    fn call(name: &'static str, arity: usize, derivative: bool) -> crate::program::CudaCall {
        crate::program::CudaCall {
            name,
            program: module_path!(),
            source: "",
            what: 0,
            params: [0.0; crate::generated::MAX_PARAMS],
            arity,
            derivative,
        }
    }

    impl BlockKernel for Square {
        fn name(&self) -> &'static str {
            "square"
        }
        fn cuda(&self) -> crate::program::CudaCall {
            call("square", 1, false)
        }
        fn eval_f32(&self, ins: &[&[f32]], out: &mut Vec<f32>) {
            super::super::loops::map1(ins, out, |[x]| x * x + 0.25)
        }
        fn eval_f64(&self, ins: &[&[f64]], out: &mut Vec<f64>) {
            super::super::loops::map1(ins, out, |[x]| x * x + 0.25)
        }
    }

    impl BlockKernel for DSquare {
        fn name(&self) -> &'static str {
            "d_square"
        }
        fn cuda(&self) -> crate::program::CudaCall {
            call("square", 1, true)
        }
        fn eval_f32(&self, ins: &[&[f32]], out: &mut Vec<f32>) {
            super::super::loops::map2(ins, out, |[x, g]| g * (2.0 * x))
        }
        fn eval_f64(&self, ins: &[&[f64]], out: &mut Vec<f64>) {
            super::super::loops::map2(ins, out, |[x, g]| g * (2.0 * x))
        }
        fn derivative_of(&self, value: &dyn BlockKernel) -> bool {
            value.name() == "square"
        }
        fn eval_pair_f32(
            &self,
            _: &dyn BlockKernel,
            ins: &[&[f32]],
            v: &mut Vec<f32>,
            d: &mut Vec<f32>,
        ) -> bool {
            super::super::loops::pair2(ins, v, d, |[x, g]| (x * x + 0.25, g * (2.0 * x)));
            true
        }
        fn eval_pair_f64(
            &self,
            _: &dyn BlockKernel,
            ins: &[&[f64]],
            v: &mut Vec<f64>,
            d: &mut Vec<f64>,
        ) -> bool {
            super::super::loops::pair2(ins, v, d, |[x, g]| (x * x + 0.25, g * (2.0 * x)));
            true
        }
    }

    /// In pieces on any number of threads, a chain with stored, summed and
    /// streamed results (written by their steps' loops or copied out of block
    /// buffers, a generated op's value and derivative in one loop, a folded
    /// step) over dense, gathered and repeated leaves gives the bits of one
    /// serial pass, at lengths that are no whole number of pieces, blocks or sum
    /// blocks, below and past the sizes from which results stream and leaves are
    /// prefetched, for both dtypes.
    #[test]
    fn a_chain_in_pieces_gives_the_bits_of_one_pass() {
        let kernel = |k: Arc<dyn BlockKernel>, args: &[Operand]| Step {
            op: FusedOp::Kernel(k),
            args: args.iter().copied().collect(),
        };
        let sq: Arc<dyn BlockKernel> = Arc::new(Square);
        let dsq: Arc<dyn BlockKernel> = Arc::new(DSquare);
        let steps = vec![
            step(BinaryOp::Mul, L0, L1),
            step(BinaryOp::Add, S0, L0),
            kernel(sq.clone(), &[Operand::Step(1)]),
            kernel(dsq, &[Operand::Step(1), L2]),
            step(BinaryOp::Mul, Operand::Step(2), L2),
            Step {
                op: FusedOp::Unary(UnaryOp::Neg),
                args: [Operand::Step(3)].into_iter().collect(),
            },
            kernel(sq, &[L1]),
        ];
        let outputs = [
            (4, Sink::Sum),
            (5, Sink::Store),
            (2, Sink::Store),
            (3, Sink::Store),
            (2, Sink::Sum),
            (6, Sink::Store),
            (6, Sink::Sum),
        ];
        for (dtype, size) in [(DType::F32, 4), (DType::F64, 8)] {
            for total in [
                3 * PIECE + reduce::SUM_BLOCK / 2 + 5,
                STREAM_BYTES.max(PREFETCH_BYTES) / size + BLOCK + 3,
            ] {
                let rows = total / 8;
                let n = rows * 8;
                let shape = Shape::from([rows, 8]);
                let (x, a, b) = (
                    data(dtype, 0.37, 0.5, n),
                    data(dtype, 0.11, -0.25, n),
                    data(dtype, 0.5, 1.0, 8),
                );
                let lx = Layout::contiguous(shape.clone());
                let la = Layout::contiguous(Shape::from([8, rows]))
                    .transpose(0, 1)
                    .unwrap();
                let lb = Layout::contiguous(Shape::from([8]))
                    .broadcast_to(&shape)
                    .unwrap();
                let leaves = [(&x, &lx), (&a, &la), (&b, &lb)];
                same_for_every_thread_count(&format!("{dtype:?} {n}"), || {
                    let outs = run_many(&steps, &leaves, n, dtype, &outputs).unwrap();
                    outs.iter().map(bits).collect::<Vec<_>>()
                });
                // The stored results are the unfused kernels' values.
                let outs = run_many(&steps, &leaves, n, dtype, &outputs).unwrap();
                let neg = CpuStorage::F64(
                    outs[3]
                        .to_vec::<f64>(&Layout::contiguous(Shape::from([n])))
                        .unwrap(),
                )
                .cast(&Layout::contiguous(Shape::from([n])), dtype)
                .unwrap()
                .unary(&Layout::contiguous(Shape::from([n])), UnaryOp::Neg)
                .unwrap();
                assert_eq!(outs[1], neg);
            }
        }
    }
}
