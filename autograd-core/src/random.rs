//! A small seeded generator for initialising parameters and making test data:
//! the same seed gives the same tensors on every machine.
//!
//! [`checkpoint`](crate::checkpoint) replays a segment's draws when it recomputes
//! the segment (see its "Random numbers" section, and `replay` below for how).

use crate::storage::Storage;
use crate::{DType, Device, Error, Result, Shape, Tensor};
use autograd_kernels::cpu::CpuStorage;
use std::sync::atomic::{AtomicU64, Ordering};

/// SplitMix64's increment.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64: fast, tiny, and good enough for weights and test inputs.
///
/// Each generator (each [`Rng::new`], each clone) is a distinct generator to
/// [`checkpoint`](crate::checkpoint), which replays the draws a segment made from
/// the generators it drew from; a clone is an independent generator that starts
/// where the original is.
#[derive(Debug)]
pub struct Rng {
    state: u64,
    /// Which generator this is (unique per `new` and `clone`), for replays.
    id: u64,
}

fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Clone for Rng {
    /// A new generator that draws what this one would draw next.
    fn clone(&self) -> Rng {
        Rng {
            state: replay::current(self.id, self.state),
            id: next_id(),
        }
    }
}

impl Rng {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: seed,
            id: next_id(),
        }
    }

    /// The generator's state: `Rng::new(self.state())` draws what this one would
    /// draw next (what a checkpoint saves).
    pub fn state(&self) -> u64 {
        replay::current(self.id, self.state)
    }

    /// The next 64 random bits.
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        let mut z = if replay::active() {
            replay::advance(self.id, &mut self.state)
        } else {
            self.state = self.state.wrapping_add(GAMMA);
            self.state
        };
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    #[inline(always)]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    #[inline(always)]
    pub fn uniform_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }

    /// Standard normal (Box-Muller).
    pub fn normal_f64(&mut self) -> f64 {
        let u1 = self.next_f64().max(f64::MIN_POSITIVE);
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// A CPU tensor with elements uniform in `[lo, hi)`, drawn in `f64` and rounded
    /// to `dtype`.
    ///
    /// An error naming the shape when its size in bytes overflows or its buffer
    /// cannot be allocated (the buffer is allocated in `dtype`, the dtype the size
    /// is checked for).
    pub fn uniform(
        &mut self,
        shape: impl Into<crate::Shape>,
        lo: f64,
        hi: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        self.fill("Rng::uniform", shape.into(), dtype, |r| {
            r.uniform_f64(lo, hi)
        })
    }

    /// A CPU tensor with normally distributed elements, drawn in `f64` and rounded
    /// to `dtype` (errors as [`Rng::uniform`]).
    pub fn normal(
        &mut self,
        shape: impl Into<crate::Shape>,
        mean: f64,
        std: f64,
        dtype: DType,
    ) -> Result<Tensor> {
        self.fill("Rng::normal", shape.into(), dtype, |r| {
            mean + std * r.normal_f64()
        })
    }

    /// A `dtype` tensor of `shape` whose elements are `draw`'s values in row-major
    /// order, built by the constructor `op`.
    fn fill(
        &mut self,
        op: &'static str,
        shape: Shape,
        dtype: DType,
        mut draw: impl FnMut(&mut Rng) -> f64,
    ) -> Result<Tensor> {
        crate::storage::check_size(op, &shape, dtype)?;
        let data = CpuStorage::from_fn(shape.numel(), dtype, |_| draw(self))
            .map_err(|e| Error::from_kernel(e, op, &shape, dtype, Device::Cpu))?;
        Ok(Tensor::from_storage(Storage::cpu(data), shape))
    }
}

/// What [`checkpoint`](crate::checkpoint) needs to draw a segment's random numbers
/// again when it recomputes the segment, as PyTorch's checkpoint stashes and
/// restores its global generator's state (`preserve_rng_state`), for generators
/// that are values the user owns.
///
/// While a segment's first forward runs, a *record* frame notes each generator's
/// state just before its first draw, in the order the generators are first drawn
/// from (each generator is told apart by its id). While the segment is recomputed,
/// a *replay* frame gives the `k`-th generator drawn from the `k`-th noted state,
/// and from then on its draws advance a copy of that state kept in the frame: the
/// generator itself never moves, so after the recomputation every generator is
/// where it was before it (PyTorch's `fork_rng`). The recomputation runs the same
/// code on the same inputs, so it draws from its generators in the same order; a
/// generator matched by order rather than by id may be a clone made afresh in the
/// segment, or a generator replaced between forward and backward. A generator
/// drawn from beyond those noted (a segment that does not repeat itself) draws
/// from a copy of its current state, and does not move either.
///
/// Frames are per thread, a stack: a segment recomputed inside another segment's
/// recomputation (nested checkpoints) has its record frame above the outer replay
/// frame, and notes the states the outer replay gives. Draws made on other threads
/// are not seen.
pub(crate) mod replay {
    use std::cell::{Cell, RefCell};

    /// The states a segment's generators had before their first draws, in order of
    /// first draw.
    #[derive(Clone, Debug, Default)]
    pub(crate) struct DrawLog(Vec<u64>);

    enum Frame {
        /// A first forward: `(generator id, state before its first draw)`.
        Record(Vec<(u64, u64)>),
        /// A recomputation: the noted states, and `(generator id, state it draws
        /// from now)` for each generator drawn from so far, in order of first draw.
        Replay {
            log: Vec<u64>,
            copies: Vec<(u64, u64)>,
        },
    }

    thread_local! {
        /// How many frames are open on this thread (the draws' fast path reads only
        /// this).
        static OPEN: Cell<usize> = const { Cell::new(0) };
        static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
    }

    /// Whether a frame is open on this thread.
    #[inline]
    pub(super) fn active() -> bool {
        OPEN.try_with(Cell::get).unwrap_or(0) > 0
    }

    /// One step of generator `id`, whose own state is `state`: returns the state to
    /// draw from, having advanced the innermost replay frame's copy or, outside any
    /// replay, the generator itself. Every open frame that has not seen the
    /// generator yet takes it in now, outermost first.
    // Out of line: the draws' fast path (no frame open) stays small enough to inline
    // into the loops that fill tensors (inline, W6's setup drew ~30% slower).
    #[cold]
    #[inline(never)]
    pub(super) fn advance(id: u64, state: &mut u64) -> u64 {
        let stepped = FRAMES.try_with(|frames| {
            let mut frames = frames.borrow_mut();
            // The state the generator draws from, as seen from each frame up.
            let mut current = *state;
            let mut innermost_replay = None;
            for (i, frame) in frames.iter_mut().enumerate() {
                match frame {
                    Frame::Record(noted) => {
                        if !noted.iter().any(|&(g, _)| g == id) {
                            noted.push((id, current));
                        }
                    }
                    Frame::Replay { log, copies } => {
                        current = match copies.iter().find(|&&(g, _)| g == id) {
                            Some(&(_, s)) => s,
                            None => {
                                let s = log.get(copies.len()).copied().unwrap_or(current);
                                copies.push((id, s));
                                s
                            }
                        };
                        innermost_replay = Some(i);
                    }
                }
            }
            let next = current.wrapping_add(super::GAMMA);
            match innermost_replay.map(|i| &mut frames[i]) {
                Some(Frame::Replay { copies, .. }) => {
                    if let Some(copy) = copies.iter_mut().find(|(g, _)| *g == id) {
                        copy.1 = next;
                    }
                    (next, false)
                }
                _ => (next, true),
            }
        });
        match stepped {
            Ok((next, false)) => next,
            Ok((next, true)) => {
                *state = next;
                next
            }
            // (The thread is going away: no frame is open.)
            Err(_) => {
                *state = state.wrapping_add(super::GAMMA);
                *state
            }
        }
    }

    /// The innermost replay copy of generator `id`'s state, if any.
    fn current_copy(id: u64) -> Option<u64> {
        FRAMES
            .try_with(|frames| {
                frames.borrow().iter().rev().find_map(|frame| match frame {
                    Frame::Replay { copies, .. } => {
                        copies.iter().find(|&&(g, _)| g == id).map(|&(_, s)| s)
                    }
                    Frame::Record(_) => None,
                })
            })
            .ok()
            .flatten()
    }

    /// The state generator `id` (own state `state`) would draw its next number
    /// from, for a clone.
    pub(super) fn current(id: u64, state: u64) -> u64 {
        if active() {
            current_copy(id).unwrap_or(state)
        } else {
            state
        }
    }

    /// An open frame, closed when dropped (also on an error or a panic in the
    /// segment).
    struct Open(usize);

    impl Open {
        fn push(frame: Frame) -> Open {
            FRAMES.with(|frames| {
                let mut frames = frames.borrow_mut();
                let depth = frames.len();
                frames.push(frame);
                OPEN.set(depth + 1);
                Open(depth)
            })
        }

        fn close(self) -> Option<Frame> {
            FRAMES
                .try_with(|frames| {
                    let mut frames = frames.borrow_mut();
                    frames.truncate(self.0 + 1);
                    frames.pop()
                })
                .ok()
                .flatten()
        }
    }

    impl Drop for Open {
        fn drop(&mut self) {
            let _ = FRAMES.try_with(|frames| frames.borrow_mut().truncate(self.0));
            let _ = OPEN.try_with(|open| open.set(self.0));
        }
    }

    /// Runs `f` (a segment's first forward), noting the generators it draws from.
    pub(crate) fn record<R>(f: impl FnOnce() -> R) -> (R, DrawLog) {
        let open = Open::push(Frame::Record(Vec::new()));
        let result = f();
        let log = match open.close() {
            Some(Frame::Record(noted)) => noted.into_iter().map(|(_, s)| s).collect(),
            _ => Vec::new(),
        };
        (result, DrawLog(log))
    }

    /// Runs `f` (a segment's recomputation) drawing what the first forward noted in
    /// `log` drew, without moving any generator.
    pub(crate) fn replay<R>(log: &DrawLog, f: impl FnOnce() -> R) -> R {
        let _open = Open::push(Frame::Replay {
            log: log.0.clone(),
            copies: Vec::new(),
        });
        f()
    }
}
