//! How the process's allocator gives memory back.
//!
//! glibc's malloc serves a large allocation from its own mapping, returned to the system
//! when freed, but it raises that threshold to the size of every such block freed, up to
//! 32 MiB. A conversion frees blocks of several MiB at every window (a window's sample
//! columns, its table batches, its chunk), so after the first window they come from the heap
//! instead, which keeps what it has grown to: a 240 s trace converted window by window then
//! peaked 1.33× as high as a 60 s one (77.7 vs 58.3 MB) though its heap in use peaked only
//! 1.10× as high. With the threshold held at 1 MiB it peaks 1.14× as high, at the same CPU.

/// Allocations of this many bytes or more get mappings of their own.
const LARGE_BLOCK_BYTES: i32 = 1 << 20;

/// Holds glibc's mapping threshold at 1 MiB, so large blocks freed by one
/// window go back to the system before the next. Binaries call it first thing; elsewhere
/// than on glibc it does nothing.
pub fn return_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` changes a tunable of the allocator under the allocator's own lock;
    // it touches no memory of ours.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES);
    }
}
