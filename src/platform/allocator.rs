//! The C library's allocator: handing freed memory back, and tuning it
//! for a process that loads once and exits.

/// Returns freed heap memory to the OS. Loading a large config allocates
/// far more transiently (the YAML event stream) than the job table keeps;
/// without this the daemon's resident size stays at the load-time peak.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() {
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Returns freed heap memory to the OS (a no-op where the allocator has no
/// trim call).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}

/// Tunes the allocator for a process that loads one config and exits
/// (`-v`, `--job-set-id`): large blocks come from the heap instead of
/// fresh mappings, and freed space is kept rather than handed back, so
/// the load does not pay the kernel to zero the same memory again and
/// again as its vectors grow (a fifth of `-v` on 10,000 jobs was the
/// kernel clearing pages). Not for the daemon, whose memory must go back
/// after a load.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn tune_allocator_for_one_shot() {
    const BIG: libc::c_int = 64 << 20;
    // SAFETY: mallopt only sets the allocator's own parameters; a value it
    // refuses leaves the default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, BIG);
        libc::mallopt(libc::M_TRIM_THRESHOLD, BIG);
    }
}

/// Tunes the allocator for a one-shot load: nothing to tune here.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune_allocator_for_one_shot() {}
