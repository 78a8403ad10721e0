//! The C library's allocator, set once at start.
//!
//! glibc gives each thread that allocates while the others hold their arenas an arena of its
//! own, up to eight per core, and keeps every arena's freed memory for reuse: `hookbox serve`'s
//! blocking threads (each call's work hops between them) grew its RSS by about 25 MB over its
//! first two thousand calls, pages no later call gave back. Two arenas (the main one and one
//! shared by every other thread) keep it level at the cost of some contention between threads
//! allocating at the same instant (measured in BENCHMARKS.md, "Soak"). An operator's own
//! choice (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`) is kept.

/// How many arenas glibc may make.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENAS: libc::c_int = 2;

/// Limits the allocator's arenas to [`ARENAS`], unless the environment chose; call first in
/// `main`, before any thread starts. Nothing to do with another C library.
pub(crate) fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let chosen = std::env::var_os("MALLOC_ARENA_MAX").is_some()
            || std::env::var("GLIBC_TUNABLES")
                .is_ok_and(|tunables| tunables.contains("glibc.malloc.arena_max"));
        if !chosen {
            // SAFETY: mallopt only sets a parameter of the allocator; no thread allocates yet.
            #[expect(unsafe_code, reason = "mallopt has no safe wrapper")]
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, ARENAS);
            }
        }
    }
}
