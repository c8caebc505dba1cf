//! A per-thread cache of freed CPU buffers.
//!
//! A training step frees the buffers of the previous step and allocates buffers of
//! the same sizes again. Through the system allocator that costs twice: small
//! buffers go through `malloc`/`free` in bursts that overflow its per-thread caches,
//! and large buffers (megabytes) are handed back to the kernel and page-faulted in
//! again, page by page, zeroed by the kernel, on the next step. Buffers returned
//! here ([`recycle`]) are kept by exact capacity and handed out again when the CPU
//! backend next allocates a buffer of that capacity, up to a byte limit per thread
//! ([`set_cache_limit`]); beyond it they are freed.
//!
//! Cached buffers are not tensor storage: the memory accounting of the autograd
//! core counts a buffer from the allocation of its storage to the drop of its last
//! handle, whether the bytes came from here or from the allocator. [`cached_bytes`]
//! says how much the calling thread holds; [`clear_cache`] frees it.

use super::CpuStorage;
use crate::{KernelError, Result};
use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Default limit on the bytes one thread keeps cached (what the cache saves is in
/// `benches/README.md`).
pub const DEFAULT_CACHE_LIMIT: usize = 256 << 20;

/// Distinct capacities kept per element type; more sizes than this are freed.
const MAX_BUCKETS: usize = 64;

/// Bytes a cached buffer is charged: its capacity, and at least an allocator chunk,
/// so that millions of one-element buffers cannot pile up under the byte limit.
fn charge(bytes: usize) -> usize {
    bytes.max(64)
}

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_CACHE_LIMIT);

/// Buffers of one element type, grouped by capacity (most recently used first).
struct Buckets<T> {
    lists: Vec<(usize, Vec<Vec<T>>)>,
}

impl<T> Buckets<T> {
    const fn new() -> Self {
        Buckets { lists: Vec::new() }
    }

    fn take(&mut self, len: usize) -> Option<Vec<T>> {
        let i = self.lists.iter().position(|(cap, _)| *cap == len)?;
        let v = self.lists[i].1.pop()?;
        if i > 0 {
            self.lists.swap(i - 1, i); // drift towards the front: hot sizes are found first
        }
        Some(v)
    }

    /// Keeps `v`, or hands it back when there is no room for another capacity.
    fn put(&mut self, v: Vec<T>) -> std::result::Result<(), Vec<T>> {
        let cap = v.capacity();
        if let Some((_, list)) = self.lists.iter_mut().find(|(c, _)| *c == cap) {
            list.push(v);
            return Ok(());
        }
        if self.lists.len() >= MAX_BUCKETS {
            // Reuse the slot of a size nothing is cached for, if there is one.
            match self.lists.iter().rposition(|(_, list)| list.is_empty()) {
                Some(i) => {
                    self.lists[i] = (cap, vec![v]);
                    return Ok(());
                }
                None => return Err(v),
            }
        }
        self.lists.push((cap, vec![v]));
        Ok(())
    }

    fn clear(&mut self) {
        self.lists.clear();
    }
}

struct Cache {
    f32: Buckets<f32>,
    f64: Buckets<f64>,
    bytes: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache { f32: Buckets::new(), f64: Buckets::new(), bytes: 0 })
    };
}

/// An empty vector with room for `len` elements: a cached buffer of exactly that
/// capacity when the thread has one, else a fresh allocation ([`alloc`]); an error
/// when the allocator cannot provide one.
#[inline]
pub(crate) fn take<T: crate::HostElement>(len: usize) -> Result<Vec<T>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let mut slot: Option<Vec<T>> = None;
    let _ = CACHE.try_with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else {
            return;
        };
        // `T` is f32 or f64; the type test is resolved at compile time.
        let any: &mut dyn Any = &mut slot;
        if let Some(s) = any.downcast_mut::<Option<Vec<f32>>>() {
            *s = c.f32.take(len);
        } else if let Some(s) = any.downcast_mut::<Option<Vec<f64>>>() {
            *s = c.f64.take(len);
        }
        if slot.is_some() {
            c.bytes -= charge(len * size_of::<T>());
        }
    });
    match slot {
        Some(mut v) => {
            v.clear();
            Ok(v)
        }
        None => alloc(len),
    }
}

/// A fresh, empty vector with room for `len` elements, allocated fallibly: an
/// allocation the system refuses (or a size in bytes past `isize::MAX`) is
/// [`KernelError::OutOfMemory`], not an abort. Every CPU output buffer comes from
/// here (through [`take`]).
pub(crate) fn alloc<T>(len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    match v.try_reserve_exact(len) {
        Ok(()) => Ok(v),
        Err(_) => Err(out_of_memory::<T>(len)),
    }
}

#[cold]
#[inline(never)]
fn out_of_memory<T>(len: usize) -> KernelError {
    KernelError::OutOfMemory {
        bytes: len.saturating_mul(size_of::<T>()),
    }
}

/// `len` copies of `value` in a buffer from [`take`].
pub(crate) fn filled<T: crate::HostElement>(len: usize, value: T) -> Result<Vec<T>> {
    let mut v = take(len)?;
    v.resize(len, value);
    Ok(v)
}

fn keep<T>(v: Vec<T>, buckets: impl FnOnce(&mut Cache) -> &mut Buckets<T>) {
    let bytes = charge(v.capacity() * size_of::<T>());
    if v.capacity() == 0 || bytes > LIMIT.load(Ordering::Relaxed) {
        return;
    }
    // If the thread's cache is gone (thread exit) or busy, the buffer is just freed.
    let _ = CACHE.try_with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else {
            return;
        };
        if c.bytes + bytes > LIMIT.load(Ordering::Relaxed) {
            return;
        }
        if buckets(&mut c).put(v).is_ok() {
            c.bytes += bytes;
        }
    });
}

/// Returns the buffer of a storage that is being dropped to the calling thread's
/// cache (or frees it when the cache is full).
pub fn recycle(storage: CpuStorage) {
    // Only f32 and f64 buffers (what compute makes, most of it) are kept.
    match storage {
        CpuStorage::F32(v) => keep(v, |c| &mut c.f32),
        CpuStorage::F64(v) => keep(v, |c| &mut c.f64),
        _ => {}
    }
}

/// Bytes of freed buffers the calling thread keeps for reuse.
pub fn cached_bytes() -> usize {
    CACHE
        .try_with(|c| c.try_borrow().map(|c| c.bytes).unwrap_or(0))
        .unwrap_or(0)
}

/// Frees every buffer the calling thread keeps for reuse.
pub fn clear_cache() {
    let _ = CACHE.try_with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.f32.clear();
            c.f64.clear();
            c.bytes = 0;
        }
    });
}

/// Sets how many bytes of freed buffers each thread may keep (0 turns caching off);
/// buffers already cached beyond a lower limit are freed as they would be reused.
pub fn set_cache_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The per-thread limit set by [`set_cache_limit`].
pub fn cache_limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_buffer_is_handed_out_again_for_the_same_size() {
        clear_cache();
        let v: Vec<f32> = filled(1000, 1.5).unwrap();
        let p = v.as_ptr();
        recycle(CpuStorage::F32(v));
        assert_eq!(cached_bytes(), 4000);
        let w: Vec<f32> = take(1000).unwrap();
        assert_eq!((w.as_ptr(), w.len(), w.capacity()), (p, 0, 1000));
        assert_eq!(cached_bytes(), 0);
        // Another size or element type does not get it.
        recycle(CpuStorage::F32(w));
        let (other_len, other_type) = (take::<f32>(999).unwrap(), take::<f64>(1000).unwrap());
        assert_ne!(other_len.as_ptr(), p);
        assert_ne!(other_type.as_ptr() as *const f32, p);
        assert_eq!(cached_bytes(), 4000);
        clear_cache();
        assert_eq!(cached_bytes(), 0);
    }

    #[test]
    fn filled_buffers_never_show_old_values() {
        clear_cache();
        recycle(CpuStorage::F64(vec![7.0; 64]));
        assert_eq!(filled(64, 0.0f64).unwrap(), vec![0.0; 64]);
    }

    #[test]
    fn the_cache_stays_under_its_limit() {
        clear_cache();
        let limit = cache_limit();
        let big = limit / 4 + 1;
        for _ in 0..8 {
            recycle(CpuStorage::F32(vec![0.0; big / 4 + 1]));
        }
        assert!(cached_bytes() <= limit);
        assert!(cached_bytes() >= 2 * big);
        clear_cache();
    }

    /// buffers were allocated with `Vec::with_capacity`, which
    /// aborts the process when the allocator refuses; now the refusal is an error.
    #[test]
    fn an_allocation_the_system_refuses_is_an_error() {
        // 2^46 f32 = 256 TiB: more than this machine (or any test machine) has.
        let e = take::<f32>(1 << 46).unwrap_err();
        assert_eq!(e, KernelError::OutOfMemory { bytes: 1 << 48 });
        assert!(e.to_string().contains("281474976710656 bytes"), "{e}");
        assert!(filled::<f64>(1 << 45, 0.0).is_err());
        // A size in bytes past isize::MAX is refused the same way (was a panic).
        let e = alloc::<f64>(usize::MAX / 4).unwrap_err();
        assert_eq!(e, KernelError::OutOfMemory { bytes: usize::MAX });
    }
}
