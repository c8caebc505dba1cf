//! The caches each thread keeps for reuse (freed CPU buffers, the blocks of released
//! tensors and graph nodes), and how to free or bound them.

/// Bytes of freed CPU buffers the calling thread keeps for reuse. They are not
/// tensor storage (not in [`stats`](crate::memory::stats) or [`thread_stats`](crate::memory::thread_stats)); a later tensor of the same
/// size takes one instead of asking the system allocator for fresh pages.
pub fn cpu_cache_bytes() -> usize {
    autograd_kernels::cpu::pool::cached_bytes()
}

/// Frees what the calling thread keeps for reuse: cached CPU buffers and the spare
/// blocks of released tensors and graph nodes.
pub fn clear_cpu_cache() {
    autograd_kernels::cpu::pool::clear_cache();
    crate::tensor::clear_spares();
    crate::graph::clear_spare_nodes();
}

/// Sets how many bytes of freed CPU buffers each thread may keep for reuse (default
/// 256 MiB; 0 turns the cache off).
pub fn set_cpu_cache_limit(bytes: usize) {
    autograd_kernels::cpu::pool::set_cache_limit(bytes);
}
