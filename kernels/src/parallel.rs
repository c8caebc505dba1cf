//! The CPU kernels' threads: [`num_threads`] of them, the calling thread and a
//! pool (rayon) of the others, and the helpers every parallel kernel splits its
//! work with.
//!
//! By default there are as many threads as the machine has cores
//! (`std::thread::available_parallelism`), or the number in the environment
//! variable `AUTOGRAD_NUM_THREADS`, read once, at the first use; [`set_num_threads`]
//! changes it at any time. With one thread nothing is spawned: every kernel runs on
//! the calling thread. With more, a job's pieces are taken one by one by the
//! calling thread and the pool's threads together, so the calling thread never
//! sits idle waiting for them (nor does an idle pool thread spin on a core the
//! work needs).
//!
//! **Results never depend on the thread count.** Work is split into pieces fixed by
//! the size of the job (never by the threads), each piece computes what the serial
//! loop computes for its elements, in the same order, and whatever is combined
//! across pieces (the partial sums of a reduction) is combined in piece order on the
//! calling thread. So a result is the same bits with 1, 2 or 64 threads, and on any
//! machine with the same vector width.
//!
//! A job runs on the pool only when it is large enough to pay for the hand-off (see
//! [`MIN_PARALLEL_WORK`]): small tensors stay on the calling thread.

use crate::{KernelError, Result};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Elements (a rough count of the values a job reads and writes, or a product's
/// multiply-adds) below which a job runs on the calling thread: waking a sleeping
/// pool thread and handing it pieces costs tens of microseconds on a virtual
/// machine, about what a core takes for a tenth of this many elements, and a
/// training step is hundreds of jobs.
pub const MIN_PARALLEL_WORK: usize = 1 << 19;

/// The environment variable that sets the default thread count.
pub const ENV_VAR: &str = "AUTOGRAD_NUM_THREADS";

/// The thread count; 0 until first read.
static THREADS: AtomicUsize = AtomicUsize::new(0);
/// The work below which jobs stay serial ([`MIN_PARALLEL_WORK`]; tests lower it).
static MIN_WORK: AtomicUsize = AtomicUsize::new(MIN_PARALLEL_WORK);
/// Whether jobs are cut into their smallest pieces ([`piece_len`]; tests).
static SMALLEST_PIECES: AtomicBool = AtomicBool::new(false);
/// The pool, when there is more than one thread.
static POOL: RwLock<Option<Arc<rayon::ThreadPool>>> = RwLock::new(None);

/// The thread count `AUTOGRAD_NUM_THREADS` asks for: `Ok(None)` when it is unset,
/// an error naming the variable when it is not a positive whole number.
pub fn env_threads() -> Result<Option<usize>> {
    match std::env::var(ENV_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(bad_env(&format!("{v:?}"))),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(bad_env(&v)),
        },
    }
}

fn bad_env(v: &str) -> KernelError {
    KernelError::InvalidArgument {
        op: ENV_VAR,
        msg: format!(
            "{ENV_VAR}={v} is not a number of threads; set it to a whole number of at least \
             1 (or unset it to use every core)"
        ),
    }
}

/// The default: `AUTOGRAD_NUM_THREADS`, else the cores the process may use. (An
/// unusable variable falls back to the cores; `autograd::init` reports it.)
fn default_threads() -> usize {
    env_threads().ok().flatten().unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// The number of threads the CPU kernels use.
pub fn num_threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => {
            // First use: build the default pool (once; a race builds it twice and
            // keeps one, which is harmless).
            let n = default_threads();
            if set_num_threads(n).is_err() {
                // The pool's threads could not be spawned: run serially.
                THREADS.store(1, Ordering::Relaxed);
                return 1;
            }
            n
        }
        n => n,
    }
}

/// Sets the number of threads the CPU kernels use (at least 1; 1 runs everything on
/// the calling thread). Results are the same bits for every count. An error when
/// `n` is 0 or the threads cannot be spawned.
pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(KernelError::InvalidArgument {
            op: "set_num_threads",
            msg: "0 threads: ask for at least 1 (1 runs every kernel on the calling thread)".into(),
        });
    }
    // The calling thread computes pieces too (see `share`): `n - 1` more.
    let pool = if n > 1 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n - 1)
            .thread_name(|i| format!("autograd-{i}"))
            .build()
            .map_err(|e| KernelError::Device(format!("could not start {n} CPU threads: {e}")))?;
        Some(Arc::new(pool))
    } else {
        None
    };
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    *slot = pool;
    THREADS.store(n, Ordering::Relaxed);
    Ok(())
}

/// Lowers (or restores) the work below which jobs stay on the calling thread, so
/// that tests run the parallel paths on small tensors. Not for tuning: the results
/// are the same bits whatever it is.
#[doc(hidden)]
pub fn set_min_parallel_work(work: usize) {
    MIN_WORK.store(work, Ordering::Relaxed);
}

/// Makes every kernel cut its jobs into the smallest pieces its arithmetic allows
/// (see [`piece_len`]), so that tests split small tensors as large ones are split.
/// Not for tuning: the results are the same bits either way.
#[doc(hidden)]
pub fn set_smallest_pieces(on: bool) {
    SMALLEST_PIECES.store(on, Ordering::Relaxed);
}

/// The length of the pieces a kernel cuts a job into: `len`, its fixed choice for
/// jobs of this kind (never derived from the thread count), or `smallest` (the
/// least that leaves its arithmetic unchanged: one block of a sum, one row) while
/// a test asks for the smallest pieces ([`set_smallest_pieces`]).
#[inline]
pub fn piece_len(len: usize, smallest: usize) -> usize {
    if SMALLEST_PIECES.load(Ordering::Relaxed) {
        smallest.max(1)
    } else {
        len.max(1)
    }
}

/// The pool to run a job of `pieces` pieces and about `work` elements on: `None`
/// when it should run on the calling thread (one thread, one piece, little work, or
/// already on one of the pool's threads).
fn pool_for(pieces: usize, work: usize) -> Option<Arc<rayon::ThreadPool>> {
    if pieces < 2 || work < MIN_WORK.load(Ordering::Relaxed) || num_threads() < 2 {
        return None;
    }
    let pool = POOL.read().unwrap_or_else(|e| e.into_inner()).clone()?;
    // Nested: a piece of a parallel job that starts a job of its own runs it on
    // its own thread (the pool is busy with the outer job's pieces).
    if pool.current_thread_index().is_some() {
        return None;
    }
    Some(pool)
}

/// Whether a job of `pieces` pieces and about `work` elements would run on the pool.
pub fn is_parallel(pieces: usize, work: usize) -> bool {
    pool_for(pieces, work).is_some()
}

/// Calls `f(i)` for every `i` in `0..pieces`, on the pool when the job is large
/// enough (`work`: about how many elements it reads and writes in all), else in
/// order on the calling thread. `f` must compute each piece the same way wherever
/// it runs (nothing it does may depend on the thread).
pub fn for_each(pieces: usize, work: usize, f: impl Fn(usize) + Sync + Send) {
    match pool_for(pieces, work) {
        None => (0..pieces).for_each(f),
        Some(pool) => share(&pool, pieces, &f),
    }
}

/// How long a pool thread that finished its part of a job waits for the next one,
/// spinning, before it goes back to the pool (where it sleeps until woken): a
/// training step is hundreds of jobs with a little serial work between them, and
/// waking a sleeping thread costs tens of microseconds on a virtual machine.
const LINGER: Duration = Duration::from_micros(300);

/// A job shared between the calling thread and the pool's threads: each takes the
/// next piece not yet taken until none is left.
struct Job {
    /// The pieces' function, its lifetime erased: it is called only for a piece
    /// taken (`i < pieces`), and `share` returns only when every piece is done.
    f: *const (dyn Fn(usize) + Sync + 'static),
    pieces: usize,
    next: AtomicUsize,
    done: AtomicUsize,
    /// The first panic of a piece, raised again on the calling thread.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

// SAFETY: `f` points to a `Sync` function that outlives every call made through
// it (see `Job::f`); the rest is atomics and a mutex.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

impl Job {
    /// Takes and runs pieces until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            if i >= self.pieces {
                return;
            }
            // SAFETY: piece `i` was taken, so it is not done, and `share` (whose
            // frame holds the function) waits for every piece to be done.
            let f = unsafe { &*self.f };
            if let Err(p) = std::panic::catch_unwind(AssertUnwindSafe(|| f(i))) {
                self.panic
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(p);
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// The job the pool's threads help with, and its number.
static CURRENT: Mutex<Option<Arc<Job>>> = Mutex::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Helpers spawned on the pool that have not ended (working, or waiting for the
/// next job).
static HELPERS: AtomicUsize = AtomicUsize::new(0);

/// A pool thread's part: help with the current job, then wait up to [`LINGER`]
/// for the next and help with it too, and so on.
fn helper() {
    let mut seen = GENERATION.load(Ordering::Acquire);
    loop {
        let job = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(job) = job {
            job.work();
        }
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let g = GENERATION.load(Ordering::Acquire);
            if g != seen {
                seen = g;
                break;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) && start.elapsed() > LINGER {
                HELPERS.fetch_sub(1, Ordering::AcqRel);
                // (A job published just now, counting on this helper, is done
                // by its caller alone if no other helper takes it.)
                return;
            }
            std::hint::spin_loop();
        }
    }
}

/// Runs `f(i)` for every `i` in `0..pieces` on the calling thread and on the pool's
/// threads at once, each taking the next piece not yet taken. The calling thread
/// starts at once, so a job is never slower than on it alone while the pool's
/// threads wake up, and it waits for the last piece; with `n` threads set, the
/// pool's `n - 1` threads help it. Between jobs the pool's threads wait a little
/// for the next ([`LINGER`]), so a step's jobs find them awake.
fn share(pool: &rayon::ThreadPool, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
    // SAFETY: only the lifetime is erased; `Job::f` says why no call outlives `f`.
    let f: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
    let job = Arc::new(Job {
        f,
        pieces,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panic: Mutex::new(None),
    });
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(job.clone());
    GENERATION.fetch_add(1, Ordering::AcqRel);
    let wanted = pool.current_num_threads().min(pieces - 1);
    let mut alive = HELPERS.load(Ordering::Acquire);
    while alive < wanted {
        match HELPERS.compare_exchange(alive, alive + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                pool.spawn(helper);
                alive += 1;
            }
            Err(now) => alive = now,
        }
    }
    job.work();
    let mut spins = 0u32;
    while job.done.load(Ordering::Acquire) < pieces {
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(1024) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &job)) {
        *current = None;
    }
    drop(current);
    if let Some(p) = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
        std::panic::resume_unwind(p);
    }
}

/// `f(i)` for every `i` in `0..pieces`, in index order (computed as [`for_each`]
/// runs them): combine the results in this order, and the combination is the same
/// bits for any thread count.
pub fn map<R: Send>(pieces: usize, work: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    let Some(pool) = pool_for(pieces, work) else {
        return (0..pieces).map(f).collect();
    };
    let mut slots: Vec<Option<R>> = (0..pieces).map(|_| None).collect();
    let out = SharedMut::new(&mut slots);
    share(&pool, pieces, &|i| {
        let r = f(i);
        // SAFETY: piece `i` is taken once, by one thread, and slot `i` is in
        // `slots`, which outlives the job.
        unsafe { *out.ptr().add(i) = Some(r) };
    });
    // (`share` returned: every piece ran, so every slot is filled.)
    slots.into_iter().flatten().collect()
}

/// Splits `out` into consecutive pieces of `piece` elements (the last may be
/// shorter) and calls `f(i, piece_i)` for each, as [`for_each`] runs them: the way
/// a kernel writes disjoint parts of one output from several threads.
pub fn for_each_piece_mut<T: Send>(
    out: &mut [T],
    piece: usize,
    work: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let piece = piece.max(1);
    let (len, pieces) = (out.len(), out.len().div_ceil(piece));
    let Some(pool) = pool_for(pieces, work) else {
        return out.chunks_mut(piece).enumerate().for_each(|(i, c)| f(i, c));
    };
    let dst = SharedMut::new(out);
    share(&pool, pieces, &|i| {
        let start = i * piece;
        // SAFETY: the pieces `start..start + piece` are disjoint and within `out`,
        // which outlives the job, and piece `i` is taken by one thread.
        f(i, unsafe { dst.slice(start, piece.min(len - start)) })
    });
}

/// A shared pointer to a buffer that several pieces of one job write disjoint
/// elements of (each piece its own, as the kernel's partition says).
#[derive(Debug)]
pub struct SharedMut<T>(*mut T);

impl<T> Clone for SharedMut<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SharedMut<T> {}

// SAFETY: a `SharedMut` is only a pointer; the kernels that write through it give
// each piece of a job its own elements, and the job ends (`share`
// returns) before the buffer is read or moved.
unsafe impl<T: Send> Send for SharedMut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T> SharedMut<T> {
    /// The buffer `v`'s elements (its first `v.len()`), to be written by pieces.
    pub fn new(v: &mut [T]) -> Self {
        SharedMut(v.as_mut_ptr())
    }

    /// The pointer to element 0.
    pub fn ptr(&self) -> *mut T {
        self.0
    }

    /// Elements `start..start + len` as a slice.
    ///
    /// # Safety
    ///
    /// The range is within the buffer, and no other piece reads or writes it while
    /// the slice lives.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice(&self, start: usize, len: usize) -> &mut [T] {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

/// Serialises the tests (here and elsewhere in the crate) that change the thread
/// count or the work threshold.
#[cfg(test)]
pub(crate) static TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_job_in_order_for_any_thread_count() {
        let _g = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        set_min_parallel_work(0);
        for n in [1, 2, 3, 8] {
            set_num_threads(n).unwrap();
            assert_eq!(num_threads(), n);
            let got = map(37, usize::MAX, |i| i * i);
            assert_eq!(got, (0..37).map(|i| i * i).collect::<Vec<_>>());
            let mut out = vec![0usize; 1001];
            for_each_piece_mut(&mut out, 10, usize::MAX, |i, c| {
                for (j, o) in c.iter_mut().enumerate() {
                    *o = i * 10 + j;
                }
            });
            assert_eq!(out, (0..1001).collect::<Vec<_>>());
        }
        set_min_parallel_work(MIN_PARALLEL_WORK);
        set_num_threads(1).unwrap();
        assert!(!is_parallel(100, usize::MAX));
    }

    /// A piece that panics, on whichever thread, panics on the calling thread
    /// once the job's other pieces are done; the pool works on afterwards.
    #[test]
    fn a_panicking_piece_panics_on_the_calling_thread() {
        let _g = TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        set_min_parallel_work(0);
        set_num_threads(3).unwrap();
        let ran = AtomicUsize::new(0);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            for_each(64, usize::MAX, |i| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert_ne!(i, 37, "piece 37");
            })
        }));
        let msg = r.unwrap_err();
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("piece 37"), "{msg}");
        assert_eq!(ran.load(Ordering::Relaxed), 64);
        assert_eq!(map(40, usize::MAX, |i| i + 1), (1..=40).collect::<Vec<_>>());
        set_min_parallel_work(MIN_PARALLEL_WORK);
        set_num_threads(1).unwrap();
    }

    #[test]
    fn zero_threads_is_an_error_that_says_what_to_ask_for() {
        let e = set_num_threads(0).unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
    }
}
