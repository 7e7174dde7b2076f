//! Waiting for a wall-clock instant more finely than tokio's timer.

/// Waits until the wall clock (`CLOCK_REALTIME`) reads `at`, to within the
/// kernel's timer slack (about 50 µs) instead of tokio's whole
/// milliseconds: an absolute `timerfd` polled by the runtime's reactor.
///
/// The scheduler sleeps on tokio's timer until shortly before a second
/// boundary and finishes here, because tokio rounds every deadline up to
/// the next millisecond and its reactor waits in milliseconds, which made
/// each launch about 1 ms late on its own. A clock step (`settimeofday`,
/// NTP slewing is not a step) cancels the timer: the call returns early
/// and the caller, which re-reads the clock, waits again.
#[cfg(target_os = "linux")]
pub async fn wait_for_wall_clock(at: std::time::SystemTime) -> std::io::Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let since_epoch = match at.duration_since(std::time::UNIX_EPOCH) {
        // An all-zero expiry would disarm the timer instead of firing it.
        Ok(d) if !d.is_zero() => d,
        // The epoch or before: long past, nothing to wait for.
        _ => return Ok(()),
    };
    let seconds = libc::time_t::try_from(since_epoch.as_secs())
        .map_err(|_| std::io::Error::other("wall-clock instant out of range"))?;
    // SAFETY: plain system call; the result is checked before use.
    let raw = unsafe {
        libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let due = libc::itimerspec {
        it_interval: zero,
        it_value: libc::timespec {
            tv_sec: seconds,
            // Below 10^9, so it fits any c_long.
            tv_nsec: since_epoch.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: `fd` is a timerfd and `due` a valid itimerspec; the old
    // value is not wanted (null).
    let set = unsafe {
        libc::timerfd_settime(
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME | libc::TFD_TIMER_CANCEL_ON_SET,
            &due,
            std::ptr::null_mut(),
        )
    };
    if set < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the AsyncFd owns `fd` from here on and nothing closes or
    // replaces it while registered.
    let timer = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }?;
    loop {
        let mut ready = timer.readable().await?;
        let mut expirations = [0u8; 8];
        // SAFETY: reading 8 bytes into an 8-byte buffer from our timerfd.
        let read = unsafe {
            libc::read(
                timer.get_ref().as_raw_fd(),
                expirations.as_mut_ptr().cast(),
                expirations.len(),
            )
        };
        if read == 8 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => ready.clear_ready(),
            // The clock was set: the caller re-reads it and decides.
            Some(libc::ECANCELED) => return Ok(()),
            _ => return Err(error),
        }
    }
}

/// Waits until the wall clock reads `at` (elsewhere: tokio's timer, to
/// whole milliseconds).
#[cfg(not(target_os = "linux"))]
pub async fn wait_for_wall_clock(at: std::time::SystemTime) -> std::io::Result<()> {
    if let Ok(left) = at.duration_since(std::time::SystemTime::now()) {
        tokio::time::sleep(left).await;
    }
    Ok(())
}

#[cfg(test)]
mod wall_clock_wait_tests {
    use super::wait_for_wall_clock;
    use std::time::{Duration, SystemTime};

    #[tokio::test]
    async fn the_wait_never_ends_before_the_instant() {
        for offset_ms in [0u64, 1, 7, 40] {
            let at = SystemTime::now() + Duration::from_millis(offset_ms);
            wait_for_wall_clock(at).await.expect("timer");
            assert!(
                SystemTime::now() >= at,
                "woke before the instant ({offset_ms} ms ahead)"
            );
        }
    }

    #[tokio::test]
    async fn instants_in_the_past_return_at_once() {
        let bound = Duration::from_secs(30);
        for at in [
            SystemTime::now() - Duration::from_secs(5),
            SystemTime::UNIX_EPOCH,
            SystemTime::UNIX_EPOCH - Duration::from_secs(1),
        ] {
            tokio::time::timeout(bound, wait_for_wall_clock(at))
                .await
                .expect("a past instant does not wait")
                .expect("timer");
        }
    }
}
