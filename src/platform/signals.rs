//! Signals: stopping a job's process group or one process, and the
//! daemon's own shutdown (SIGINT, SIGTERM) and reload (SIGHUP) streams.

/// What happened when a signal was sent to a job's process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupSignal {
    /// The signal was delivered to the group.
    Sent,
    /// No process is left in the group (or the id now belongs to another
    /// process, so the group must be empty): nothing to signal.
    Empty,
    /// The group could not be signalled (e.g. EPERM); the text says why.
    Failed(String),
}

/// The signals the cancel sequence uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// The graceful request (SIGTERM).
    Terminate,
    /// The forced stop (SIGKILL).
    Kill,
}

#[cfg(unix)]
fn nix_signal(sig: StopSignal) -> nix::sys::signal::Signal {
    match sig {
        StopSignal::Terminate => nix::sys::signal::Signal::SIGTERM,
        StopSignal::Kill => nix::sys::signal::Signal::SIGKILL,
    }
}

/// Signals the process group led by `pid`. Once the leader has been reaped
/// (`leader_reaped`) its id may have been reused, which POSIX allows only
/// after the group emptied: if any process now answers to `pid`, the group
/// is left alone.
#[cfg(unix)]
pub fn signal_group(pid: u32, sig: StopSignal, leader_reaped: bool) -> GroupSignal {
    use nix::errno::Errno;
    use nix::sys::signal::{kill, killpg};
    use nix::unistd::Pid;
    let Ok(raw) = i32::try_from(pid) else {
        return GroupSignal::Failed(format!("pid {pid} out of range"));
    };
    let target = Pid::from_raw(raw);
    if leader_reaped {
        match kill(target, None) {
            Ok(()) | Err(Errno::EPERM) => return GroupSignal::Empty,
            Err(_) => {}
        }
    }
    match killpg(target, nix_signal(sig)) {
        Ok(()) => GroupSignal::Sent,
        Err(Errno::ESRCH) => GroupSignal::Empty,
        Err(e) => GroupSignal::Failed(e.desc().to_owned()),
    }
}

/// Signals one process (the fallback when its group cannot be signalled).
/// `Ok(false)` means it no longer exists.
#[cfg(unix)]
pub fn signal_process(pid: u32, sig: StopSignal) -> std::io::Result<bool> {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let raw = i32::try_from(pid).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("pid {pid} out of range"),
        )
    })?;
    match kill(Pid::from_raw(raw), nix_signal(sig)) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The SIGINT and SIGTERM deliveries, as a stream. Once created, the
/// signals no longer end the process on their own: every delivery, the
/// first and any later one, is only reported here.
#[cfg(unix)]
pub struct ShutdownSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl ShutdownSignals {
    /// Starts listening for SIGINT and SIGTERM.
    pub fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(ShutdownSignals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Waits for the next SIGINT or SIGTERM; returns which one arrived.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// The SIGHUP deliveries (reload requests), as a stream.
#[cfg(unix)]
pub type ReloadSignals = tokio::signal::unix::Signal;

/// A stream of SIGHUP deliveries (reload requests).
#[cfg(unix)]
pub fn reload_signals() -> std::io::Result<ReloadSignals> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}
