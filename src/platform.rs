//! Every per-OS difference lives here.

/// Shell used for string commands when a job sets none.
#[cfg(unix)]
pub const DEFAULT_SHELL: &str = "/bin/sh";

/// Config path used when `-c` is not given.
#[cfg(unix)]
pub const DEFAULT_CONFIG_PATH: &str = "/etc/cronstable.d";

/// True when the daemon runs with root privileges (euid 0), which switching
/// a job's user or group requires.
#[cfg(unix)]
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A user account as the passwd database knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Login name.
    pub name: String,
    /// Numeric uid.
    pub uid: u32,
    /// Primary gid.
    pub gid: u32,
}

/// Looks up a user by name or numeric uid.
#[cfg(unix)]
pub fn lookup_user(name_or_id: &str) -> Result<Option<Account>, String> {
    use nix::unistd::{Uid, User};
    let found = match name_or_id.parse::<u32>() {
        Ok(uid) => User::from_uid(Uid::from_raw(uid)),
        Err(_) => User::from_name(name_or_id),
    };
    found
        .map(|u| {
            u.map(|u| Account {
                name: u.name,
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            })
        })
        .map_err(|e| e.to_string())
}

/// Looks up a group by name or numeric gid, returning its gid.
#[cfg(unix)]
pub fn lookup_group(name_or_id: &str) -> Result<Option<u32>, String> {
    use nix::unistd::{Gid, Group};
    let found = match name_or_id.parse::<u32>() {
        Ok(gid) => Group::from_gid(Gid::from_raw(gid)),
        Err(_) => Group::from_name(name_or_id),
    };
    found
        .map(|g| g.map(|g| g.gid.as_raw()))
        .map_err(|e| e.to_string())
}

/// The user's home directory, for `~` expansion.
pub fn home_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(std::path::PathBuf::from)
}

/// True when built for Windows (data-level switches that are not worth a
/// `cfg` of their own, such as the crontab lowering's Windows checks).
pub const IS_WINDOWS: bool = cfg!(windows);

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
pub fn signal_process(pid: u32, sig: StopSignal) -> Result<bool, String> {
    use nix::errno::Errno;
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let raw = i32::try_from(pid).map_err(|_| format!("pid {pid} out of range"))?;
    match kill(Pid::from_raw(raw), nix_signal(sig)) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.desc().to_owned()),
    }
}

/// Sets the nice value of every process in the group led by `pgid`.
#[cfg(unix)]
pub fn renice_group(pgid: u32, nice: i32) -> Result<(), String> {
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PGRP, pgid as libc::id_t, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// The exit code the original reports: the process's own code, or minus
/// the signal number when a signal ended it.
#[cfg(unix)]
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| -s))
        .unwrap_or(-1)
}

/// Puts a job's process in its own process group (which cancellation
/// signals as a unit) and, when `run_as` is given, drops privileges in the
/// child in the safe order: supplementary groups, then gid, then uid.
///
/// Without an account switch only a process group is requested, which lets
/// the standard library use `posix_spawn` (no fork of the daemon's address
/// space): launching is several times faster, which is what keeps launch
/// lateness low when hundreds of jobs fire in the same second. With an
/// account switch the child runs a pre-exec step, so it also starts a new
/// session there, detaching from any controlling terminal.
#[cfg(unix)]
pub fn prepare_job_command(
    cmd: &mut tokio::process::Command,
    run_as: Option<&crate::config::job::RunAs>,
) -> Result<(), String> {
    let Some(run_as) = run_as else {
        cmd.process_group(0);
        return Ok(());
    };
    let run_as = Some(run_as);
    let user = match run_as.and_then(|r| r.user_name.as_deref()) {
        Some(name) => Some(std::ffi::CString::new(name).map_err(|e| e.to_string())?),
        None => None,
    };
    let ids = run_as.map(|r| (r.uid, r.gid));
    // SAFETY: the closure runs in the forked child before exec and only
    // makes raw system calls on values prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((uid, gid)) = ids {
                let rc = match &user {
                    Some(name) => libc::initgroups(name.as_ptr(), gid as _),
                    None => libc::setgroups(0, std::ptr::null()),
                };
                if rc != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::setgid(gid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(uid) = uid {
                    if libc::setuid(uid) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        });
    }
    Ok(())
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

/// A stream of SIGHUP deliveries (reload requests).
#[cfg(unix)]
pub fn reload_signals() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
}

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
