//! Accounting of tensor storage, so that what the graph keeps alive is measured,
//! not assumed.
//!
//! Every storage buffer adds its size when it is allocated and subtracts it when its
//! last handle goes. Two views are kept per device: process-wide counters
//! ([`stats`]) and counters of the calling thread ([`thread_stats`]), which count
//! what this thread allocated and freed, so that tests running in parallel threads
//! can each observe their own graphs exactly.

use crate::Device;
use crate::device::MAX_CUDA_DEVICES;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

const SLOTS: usize = 1 + MAX_CUDA_DEVICES;

/// Live and peak bytes of tensor storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MemoryStats {
    /// Bytes of storage alive now.
    pub live_bytes: usize,
    /// Highest `live_bytes` since the counters started or [`reset_peak`] was called.
    pub peak_bytes: usize,
}

/// Storage bytes allocated minus freed by the calling thread, and the peak of that.
/// Negative when this thread freed buffers that another thread allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ThreadMemoryStats {
    /// Bytes allocated minus bytes freed by this thread so far.
    pub live_bytes: isize,
    /// Highest `live_bytes` since the thread started or [`reset_thread_peak`] was
    /// called.
    pub peak_bytes: isize,
}

struct Counter {
    live: AtomicUsize,
    peak: AtomicUsize,
}

static GLOBAL: [Counter; SLOTS] = [const {
    Counter {
        live: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
    }
}; SLOTS];

thread_local! {
    static LOCAL: [(Cell<isize>, Cell<isize>); SLOTS] = const { [const { (Cell::new(0), Cell::new(0)) }; SLOTS] };
}

pub(crate) fn on_alloc(device: Device, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let slot = device.slot();
    let g = &GLOBAL[slot];
    let live = g.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
    // A plain load first: in a steady state the peak is not exceeded, and the
    // read-modify-write (a locked instruction) is skipped.
    if live > g.peak.load(Ordering::Relaxed) {
        g.peak.fetch_max(live, Ordering::Relaxed);
    }
    let _ = LOCAL.try_with(|l| {
        let (live, peak) = &l[slot];
        let now = live.get() + bytes as isize;
        live.set(now);
        if now > peak.get() {
            peak.set(now);
        }
    });
}

pub(crate) fn on_free(device: Device, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let slot = device.slot();
    GLOBAL[slot].live.fetch_sub(bytes, Ordering::Relaxed);
    let _ = LOCAL.try_with(|l| {
        let (live, _) = &l[slot];
        live.set(live.get() - bytes as isize);
    });
}

/// Process-wide live and peak storage bytes on `device`.
pub fn stats(device: Device) -> MemoryStats {
    let g = &GLOBAL[device.slot()];
    MemoryStats {
        live_bytes: g.live.load(Ordering::Relaxed),
        peak_bytes: g.peak.load(Ordering::Relaxed),
    }
}

/// Sets the process-wide peak of `device` to its current live bytes.
pub fn reset_peak(device: Device) {
    let g = &GLOBAL[device.slot()];
    g.peak
        .store(g.live.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// The calling thread's live and peak storage bytes on `device`.
pub fn thread_stats(device: Device) -> ThreadMemoryStats {
    LOCAL.with(|l| {
        let (live, peak) = &l[device.slot()];
        ThreadMemoryStats {
            live_bytes: live.get(),
            peak_bytes: peak.get(),
        }
    })
}

/// Sets the calling thread's peak on `device` to its current live bytes.
pub fn reset_thread_peak(device: Device) {
    LOCAL.with(|l| {
        let (live, peak) = &l[device.slot()];
        peak.set(live.get());
    });
}
