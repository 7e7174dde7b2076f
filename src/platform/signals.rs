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

/// A signal the job CLI's `lock run` passes on to the command it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarded {
    /// SIGTERM.
    Terminate,
    /// SIGINT.
    Interrupt,
    /// SIGHUP.
    Hangup,
}

#[cfg(unix)]
impl Forwarded {
    fn signal(self) -> nix::sys::signal::Signal {
        use nix::sys::signal::Signal;
        match self {
            Forwarded::Terminate => Signal::SIGTERM,
            Forwarded::Interrupt => Signal::SIGINT,
            Forwarded::Hangup => Signal::SIGHUP,
        }
    }

    fn kind(self) -> tokio::signal::unix::SignalKind {
        use tokio::signal::unix::SignalKind;
        match self {
            Forwarded::Terminate => SignalKind::terminate(),
            Forwarded::Interrupt => SignalKind::interrupt(),
            Forwarded::Hangup => SignalKind::hangup(),
        }
    }
}

/// Whether `sig` is ignored (SIG_IGN) in this process right now.
#[cfg(unix)]
fn is_ignored(sig: nix::sys::signal::Signal) -> bool {
    // SAFETY: a null new action makes sigaction(2) only read the current
    // disposition into `old`, which is a valid, writable sigaction.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig as libc::c_int, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// SIGTERM, SIGINT and SIGHUP caught for forwarding: while this exists,
/// those signals no longer end the process; each delivery is reported by
/// [`ForwardedSignals::recv`]. A signal that is ignored when this is
/// created (a `nohup`ed SIGHUP, a background job's SIGINT) is left
/// ignored, for this process and for the command it starts, as it would
/// be without forwarding.
#[cfg(unix)]
pub struct ForwardedSignals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

/// The next delivery on `stream`, or never when the signal is not caught.
#[cfg(unix)]
async fn delivery(stream: &mut Option<tokio::signal::unix::Signal>) {
    match stream {
        Some(stream) => {
            stream.recv().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(unix)]
impl ForwardedSignals {
    /// Starts catching the signals (needs a tokio runtime).
    pub fn new() -> std::io::Result<ForwardedSignals> {
        let catch = |sig: Forwarded| -> std::io::Result<Option<tokio::signal::unix::Signal>> {
            if is_ignored(sig.signal()) {
                return Ok(None);
            }
            tokio::signal::unix::signal(sig.kind()).map(Some)
        };
        Ok(ForwardedSignals {
            term: catch(Forwarded::Terminate)?,
            int: catch(Forwarded::Interrupt)?,
            hup: catch(Forwarded::Hangup)?,
        })
    }

    /// Waits for the next delivery of a caught signal (forever when none
    /// is caught).
    pub async fn recv(&mut self) -> Forwarded {
        tokio::select! {
            _ = delivery(&mut self.term) => Forwarded::Terminate,
            _ = delivery(&mut self.int) => Forwarded::Interrupt,
            _ = delivery(&mut self.hup) => Forwarded::Hangup,
        }
    }

    /// Gives the caught signals back their default action (end the
    /// process), once there is no command left to forward them to.
    pub fn restore_defaults(self) {
        use nix::sys::signal::{signal, SigHandler};
        let caught = [
            (Forwarded::Terminate, self.term.is_some()),
            (Forwarded::Interrupt, self.int.is_some()),
            (Forwarded::Hangup, self.hup.is_some()),
        ];
        for (sig, _) in caught.iter().filter(|(_, on)| *on) {
            // SAFETY: installing SIG_DFL runs no handler code in this
            // process; tokio's handler simply stops being called.
            let _ = unsafe { signal(sig.signal(), SigHandler::SigDfl) };
        }
    }
}

/// Sends `sig` to the process `pid` (the command `lock run` started, not
/// yet reaped, so the pid cannot have been reused).
#[cfg(unix)]
pub fn forward_signal(pid: u32, sig: Forwarded) -> std::io::Result<()> {
    let raw = i32::try_from(pid).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("pid {pid} out of range"),
        )
    })?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), sig.signal())?;
    Ok(())
}
