//! Nice values: of the calling thread alone, and of a job's process group.

/// Raises the nice value of the calling thread alone by `by` (Linux keeps
/// a nice value per thread, and threads it starts inherit it). Elsewhere
/// nice is per process, so this does nothing and says so.
#[cfg(target_os = "linux")]
pub fn lower_this_thread_priority(by: i32) -> std::io::Result<()> {
    // SAFETY: gettid, getpriority and setpriority take and return plain
    // integers; errno is this thread's own.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        // -1 is a valid priority: only errno tells an error apart.
        *libc::__errno_location() = 0;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        if current == -1 && *libc::__errno_location() != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let wanted = current.saturating_add(by).min(19);
        if libc::setpriority(libc::PRIO_PROCESS, tid, wanted) == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// Raises the nice value of the calling thread alone: not available here.
#[cfg(not(target_os = "linux"))]
pub fn lower_this_thread_priority(_by: i32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "a nice value per thread is Linux's",
    ))
}

/// Sets the nice value of every process in the group led by `pgid`.
#[cfg(unix)]
pub fn renice_group(pgid: u32, nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PGRP, pgid as libc::id_t, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod thread_priority_tests {
    use super::*;

    /// The nice value of the calling thread, from its own stat line (the
    /// 19th field; the command name may hold spaces and parentheses).
    fn this_threads_nice() -> i64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("thread stat");
        let after_name = stat.rsplit_once(')').expect("a name").1;
        after_name
            .split_whitespace()
            .nth(16)
            .expect("nice")
            .parse()
            .expect("a number")
    }

    #[test]
    fn only_the_calling_thread_becomes_nicer() {
        let before = this_threads_nice();
        let (inside, after) = std::thread::spawn(move || {
            lower_this_thread_priority(3).expect("raising nice needs no privilege");
            let once = this_threads_nice();
            // Never past 19, however far asked.
            lower_this_thread_priority(40).expect("capped");
            (once, this_threads_nice())
        })
        .join()
        .expect("the thread ends");
        assert_eq!(inside, (before + 3).min(19));
        assert_eq!(after, 19);
        assert_eq!(
            this_threads_nice(),
            before,
            "the caller's thread is untouched"
        );
    }
}
