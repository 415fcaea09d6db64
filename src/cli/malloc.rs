//! The C allocator's settings for a locksim process: keep big blocks instead of handing
//! them back to the kernel after every use.
//!
//! A user's Lua script that allocates without bound (`s = s .. s`) reaches the Redis
//! model's memory cap on every retry of every client, building and freeing blocks of up
//! to the cap each time. glibc serves blocks of 32 MiB and more with a fresh `mmap` and
//! unmaps them on `free`, and trims the heap's top once more than twice its mmap
//! threshold is free, so each retry faulted every page in again: measured 2026-11-29, a
//! 3-seed run of `grows.lua` spent 3.9 of its 6.4 s in the kernel (2.1 M page faults);
//! with the settings below, 2.9 s and 4 k faults. At today's 2 MiB cap, with Redis's
//! string hash (3 clients, same seeds, two alternated runs): 9.4 s with them, 9.7–9.9 s
//! without (0.4 s of it in the kernel). Histories do not depend on where blocks live
//! (the Lua collector's whole cycles do not follow addresses).

/// Blocks below this are served from the heap, and reused (bytes).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 64 << 20;
/// The heap's free top is returned to the kernel only above this (bytes).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 256 << 20;

/// Set the thresholds above for this process (glibc only; elsewhere nothing). Called
/// once, before any simulation starts; failing to set them only costs speed.
pub(super) fn keep_big_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt is thread-safe and only changes two of glibc's thresholds.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
