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

/// The account a job's process switches to before it runs (only when the
/// daemon runs as root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    /// Login name (for supplementary groups), when a user was given.
    pub user_name: Option<String>,
    /// uid to switch to, when a user was given.
    pub uid: Option<u32>,
    /// gid to switch to.
    pub gid: u32,
}

/// The account database (passwd or group) could not be read. "No such
/// entry" is not an error: the lookups return `Ok(None)` for it.
#[cfg(unix)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct LookupError(#[from] nix::errno::Errno);

/// Looks up a user by name or numeric uid.
///
/// A static build (`-C target-feature=+crt-static`, the sidecar binary)
/// reads /etc/passwd itself: a statically linked C library cannot load
/// the NSS modules an image's nsswitch.conf may name (systemd, sss, ldap),
/// and calling into them crashes the process. A normal build asks the C
/// library, so every NSS source works.
#[cfg(unix)]
pub fn lookup_user(name_or_id: &str) -> Result<Option<Account>, LookupError> {
    if cfg!(target_feature = "crt-static") {
        return Ok(account_files::user(
            &read_account_file("/etc/passwd")?,
            name_or_id,
        ));
    }
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
        .map_err(LookupError)
}

/// Looks up a group by name or numeric gid, returning its gid (a static
/// build reads /etc/group itself, see [`lookup_user`]).
#[cfg(unix)]
pub fn lookup_group(name_or_id: &str) -> Result<Option<u32>, LookupError> {
    if cfg!(target_feature = "crt-static") {
        return Ok(account_files::group(
            &read_account_file("/etc/group")?,
            name_or_id,
        ));
    }
    use nix::unistd::{Gid, Group};
    let found = match name_or_id.parse::<u32>() {
        Ok(gid) => Group::from_gid(Gid::from_raw(gid)),
        Err(_) => Group::from_name(name_or_id),
    };
    found
        .map(|g| g.map(|g| g.gid.as_raw()))
        .map_err(LookupError)
}

/// The supplementary groups of `user` (plus `gid`), computed in the
/// daemon before a job's process is created: the child then only calls
/// `setgroups`. (`initgroups` in the child would run NSS code between
/// fork and exec, which is not safe in a threaded process, and crashes a
/// static build.)
#[cfg(unix)]
fn supplementary_groups(user: &str, gid: u32) -> std::io::Result<Vec<libc::gid_t>> {
    if cfg!(target_feature = "crt-static") {
        let text = read_account_file("/etc/group").map_err(|e| std::io::Error::from(e.0))?;
        return Ok(account_files::groups_of(&text, user, gid));
    }
    let name = std::ffi::CString::new(user)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid))
        .map(|groups| groups.into_iter().map(|g| g.as_raw()).collect())
        .map_err(std::io::Error::from)
}

/// Raises this process's soft limit of open files to its hard limit and
/// returns (before, after).
///
/// Each running job holds a few descriptors in the daemon (its output
/// pipes, its pidfd), so the usual soft limit of 1,024 caps a daemon at a
/// few hundred concurrent jobs; the hard limit (often 524,288 or more) is
/// what the administrator actually allows. Jobs inherit the raised soft
/// limit, as they inherit the daemon's other limits.
#[cfg(unix)]
// rlim_t is u64 here but narrower or signed on other Unix targets.
#[allow(clippy::unnecessary_cast)]
pub fn raise_open_file_limit() -> std::io::Result<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read or write only the struct given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let before = limit.rlim_cur as u64;
    if limit.rlim_cur >= limit.rlim_max {
        return Ok((before, before));
    }
    limit.rlim_cur = limit.rlim_max;
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((before, limit.rlim_cur as u64))
}

/// Reads the regular file at `path`, at most `cap` bytes.
///
/// A config file, an include or an env_file names text a person wrote; a
/// device (`/dev/zero`), a FIFO or a socket named there instead would
/// block the load or grow the process without end. The file is opened
/// without blocking (a FIFO with no writer would otherwise hang the
/// open), checked to be a regular file on the open descriptor (no race
/// with a rename), and read up to one byte past `cap` to tell a file that
/// is too large. The error's kind is `InvalidInput` for both refusals,
/// with a message naming the cause.
#[cfg(unix)]
pub fn read_regular_file(path: &std::path::Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {what}, not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is larger than the {} MiB limit", cap >> 20),
        ));
    }
    Ok(bytes)
}

/// An account file's text; a missing file is an empty database.
#[cfg(unix)]
fn read_account_file(path: &str) -> Result<String, LookupError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(LookupError(nix::errno::Errno::from_raw(
            e.raw_os_error().unwrap_or(libc::EIO),
        ))),
    }
}

/// /etc/passwd and /etc/group read without the C library (static builds).
pub mod account_files {
    use super::Account;

    /// The `:`-separated fields of the entries of an account file
    /// (comments and NIS `+`/`-` lines skipped).
    fn entries(text: &str) -> impl Iterator<Item = Vec<&str>> {
        text.lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(['+', '-']))
            .map(|l| l.split(':').collect())
    }

    /// A user of a passwd file, by name or numeric uid.
    pub fn user(passwd: &str, name_or_id: &str) -> Option<Account> {
        let by_id = name_or_id.parse::<u32>().ok();
        entries(passwd).find_map(|f| {
            let (name, uid, gid) = (f.first()?, f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?);
            let hit = match by_id {
                Some(id) => uid == id,
                None => *name == name_or_id,
            };
            hit.then(|| Account {
                name: (*name).to_owned(),
                uid,
                gid,
            })
        })
    }

    /// A group's gid, by name or numeric gid.
    pub fn group(group: &str, name_or_id: &str) -> Option<u32> {
        let by_id = name_or_id.parse::<u32>().ok();
        entries(group).find_map(|f| {
            let gid: u32 = f.get(2)?.parse().ok()?;
            let hit = match by_id {
                Some(id) => gid == id,
                None => f.first() == Some(&name_or_id),
            };
            hit.then_some(gid)
        })
    }

    /// `gid` plus every group listing `user` as a member.
    pub fn groups_of(group: &str, user: &str, gid: u32) -> Vec<libc::gid_t> {
        let mut out = vec![gid];
        for f in entries(group) {
            let Some(id) = f.get(2).and_then(|g| g.parse::<u32>().ok()) else {
                continue;
            };
            let member = f
                .get(3)
                .is_some_and(|m| m.split(',').any(|m| m.trim() == user));
            if member && !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }
}

/// The daemon's host name: `$HOSTNAME` when set, else the system's.
#[cfg(unix)]
pub fn host_name() -> &'static str {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| {
                nix::unistd::gethostname()
                    .ok()
                    .and_then(|h| h.into_string().ok())
            })
            .unwrap_or_default()
    })
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

/// How to start one job's process.
#[derive(Debug, Clone, Default)]
pub struct JobSpawn<'a> {
    /// The program: a path, or a name looked up in `PATH`.
    pub program: std::ffi::OsString,
    /// Its arguments (without the program itself).
    pub args: Vec<std::ffi::OsString>,
    /// Variables set over the daemon's own environment, in order (a later
    /// entry wins).
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Working directory (the daemon's when None).
    pub cwd: Option<&'a std::path::Path>,
    /// Pipe stdout back to the daemon (else the daemon's stdout is shared).
    pub capture_stdout: bool,
    /// Pipe stderr back to the daemon (else the daemon's stderr is shared).
    pub capture_stderr: bool,
    /// The account to run as (needs root).
    pub run_as: Option<&'a RunAs>,
}

/// A captured output stream of a job.
pub type JobPipe = Box<dyn tokio::io::AsyncRead + Send + Unpin>;

/// A started job process. It leads a session of its own (pid == process
/// group id == session id): it has no controlling terminal, a hang-up of
/// the daemon's terminal never reaches it, and cancelling signals its
/// whole group.
pub struct JobChild {
    pid: u32,
    /// The read end of the job's stdout, when captured.
    pub stdout: Option<JobPipe>,
    /// The read end of the job's stderr, when captured.
    pub stderr: Option<JobPipe>,
    inner: ChildInner,
    /// Keeps the pid out of the PID-1 orphan reaper's hands while this
    /// handle lives (set by `spawn_job`).
    own: Option<OwnChild>,
}

enum ChildInner {
    /// Started through the runtime's process support (fork + pre-exec
    /// step): the account switch path, and the fallback.
    Runtime(tokio::process::Child),
    /// Started with posix_spawn; reaped by us.
    #[cfg(target_os = "linux")]
    Spawned(linux_spawn::Spawned),
}

impl JobChild {
    /// The process id.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Waits for the process to exit and reaps it. Cancel-safe: dropping
    /// the future loses nothing, and once reaped the status is kept.
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match &mut self.inner {
            ChildInner::Runtime(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            ChildInner::Spawned(child) => child.wait().await,
        }
    }

    /// The exit status if the process has exited (reaping it), else None.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        match &mut self.inner {
            ChildInner::Runtime(child) => child.try_wait(),
            #[cfg(target_os = "linux")]
            ChildInner::Spawned(child) => child.try_wait(),
        }
    }

    /// Sends SIGKILL to the process itself (not yet reaped only).
    pub fn start_kill(&mut self) -> std::io::Result<()> {
        match &mut self.inner {
            ChildInner::Runtime(child) => child.start_kill(),
            #[cfg(target_os = "linux")]
            ChildInner::Spawned(child) => child.kill(),
        }
    }
}

/// Starts a job's process in a new session.
///
/// Without an account switch, on Linux, this is one `posix_spawn` call
/// with `POSIX_SPAWN_SETSID` (the C library's vfork-style spawn, no copy
/// of the daemon's address space): launching stays cheap when hundreds of
/// jobs fire in the same second. The child is then waited for through a
/// pidfd. With an account switch (or where that is unavailable) the child
/// is forked and runs a pre-exec step that calls `setsid` and drops
/// privileges in the safe order: supplementary groups, gid, uid.
///
/// The pid is registered as one of the daemon's own children for as long
/// as the returned handle lives, so the PID-1 orphan reaper never takes
/// its exit status (see [`start_orphan_reaper`]).
#[cfg(unix)]
pub fn spawn_job(spec: &JobSpawn<'_>) -> std::io::Result<JobChild> {
    let (mut child, own) = spawn_own(|| spawn_job_untracked(spec), |c| Some(c.pid))?;
    child.own = Some(own);
    Ok(child)
}

#[cfg(unix)]
fn spawn_job_untracked(spec: &JobSpawn<'_>) -> std::io::Result<JobChild> {
    #[cfg(target_os = "linux")]
    if spec.run_as.is_none() && linux_spawn::available() {
        match linux_spawn::spawn(spec) {
            Err(linux_spawn::Unsupported) => {}
            Ok(result) => return result,
        }
    }
    spawn_forked(spec)
}

// ---------------------------------------------------------------------
// PID 1: reaping adopted orphans.
//
// In a container the daemon is usually PID 1 of its PID namespace, so
// every process whose parent dies before it (a job's `cmd &`, a double
// fork, a process started by `kubectl exec` whose parent was outside the
// namespace) is re-parented to the daemon. Nobody else will ever wait for
// those, so unless the daemon does, each one stays a zombie and holds a
// pid until the namespace runs out.
//
// The daemon's own children (jobs, report commands) are waited for by
// their owners, by pid, to read their exit status; a reaper that called
// `waitpid(-1)` would steal those statuses. So the reaper only waits for
// zombie children whose pid is not registered as one of ours. A spawn
// holds the registry's lock from before the fork until its pid is
// recorded, and a reaper pass holds the same lock, so a job that exits
// at once cannot be mistaken for an orphan in the window between the two.
//
// It only runs when the daemon is PID 1: anywhere else orphans go to the
// real init (or a subreaper), never to us, and there is nothing to do.
// ---------------------------------------------------------------------

/// The pids of the daemon's own live children (see the section comment).
#[cfg(unix)]
static OWN_CHILDREN: std::sync::Mutex<std::collections::BTreeSet<u32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

#[cfg(unix)]
fn own_children() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<u32>> {
    // The set stays consistent even if a holder panicked: every change is
    // one insert or one remove.
    OWN_CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks a pid as one of the daemon's own children until dropped; the
/// orphan reaper leaves registered pids to their owners.
#[cfg(unix)]
#[derive(Debug)]
pub struct OwnChild(u32);

#[cfg(unix)]
impl Drop for OwnChild {
    fn drop(&mut self) {
        own_children().remove(&self.0);
    }
}

/// Starts a child process with `spawn` and registers its pid (read with
/// `pid_of`) as the daemon's own before the orphan reaper can look at it.
/// Keep the returned [`OwnChild`] alive until the child has been waited
/// for; any process the daemon starts outside [`spawn_job`] must go
/// through here.
#[cfg(unix)]
pub fn spawn_own<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid_of: impl FnOnce(&T) -> Option<u32>,
) -> std::io::Result<(T, OwnChild)> {
    let mut own = own_children();
    let child = spawn()?;
    // A child without a pid has already been reaped by its owner: nothing
    // for the reaper to confuse it with.
    let pid = pid_of(&child).unwrap_or(0);
    if pid != 0 {
        own.insert(pid);
    }
    Ok((child, OwnChild(pid)))
}

/// When the daemon is PID 1, starts a background task that reaps adopted
/// orphans (zombie children that are not the daemon's own jobs) on every
/// SIGCHLD and, as a safety net for coalesced signals, every few seconds.
/// Returns whether the task was started. Needs a running tokio runtime.
#[cfg(target_os = "linux")]
pub fn start_orphan_reaper() -> std::io::Result<bool> {
    if std::process::id() != 1 {
        return Ok(false);
    }
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())?;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = sigchld.recv() => {}
                _ = tick.tick() => {}
            }
            reap_orphans();
        }
    });
    Ok(true)
}

/// Orphans are only adopted by PID 1 on Linux-style containers; elsewhere
/// this does nothing.
#[cfg(all(unix, not(target_os = "linux")))]
pub fn start_orphan_reaper() -> std::io::Result<bool> {
    Ok(false)
}

/// One reaper pass: waits for every zombie child of ours that is not
/// registered as our own. Returns how many it reaped.
#[cfg(target_os = "linux")]
pub fn reap_orphans() -> usize {
    let own = own_children();
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut reaped = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if own.contains(&pid) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if zombie_child_of(&stat, me) {
            let mut raw: libc::c_int = 0;
            // SAFETY: waitpid writes one int; it only ever reaps a child of
            // ours, and this pid is not one of our own jobs (checked under
            // the lock that spawns register through).
            let rc = unsafe { libc::waitpid(pid as libc::pid_t, &mut raw, libc::WNOHANG) };
            if rc > 0 {
                reaped += 1;
            }
        }
    }
    reaped
}

/// True when a `/proc/<pid>/stat` line describes a zombie whose parent is
/// `parent`. The command name in parentheses may hold spaces and
/// parentheses, so the fields are read after the last `)`.
#[cfg(target_os = "linux")]
fn zombie_child_of(stat: &str, parent: u32) -> bool {
    let Some(close) = stat.rfind(')') else {
        return false;
    };
    let mut fields = stat[close + 1..].split_whitespace();
    let state = fields.next();
    let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
    state == Some("Z") && ppid == Some(parent)
}

#[cfg(unix)]
fn spawn_forked(spec: &JobSpawn<'_>) -> std::io::Result<JobChild> {
    use std::process::Stdio;
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args);
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = spec.cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(Stdio::null());
    cmd.stdout(if spec.capture_stdout {
        Stdio::piped()
    } else {
        Stdio::inherit()
    });
    cmd.stderr(if spec.capture_stderr {
        Stdio::piped()
    } else {
        Stdio::inherit()
    });
    cmd.kill_on_drop(false);
    // Supplementary groups resolved here, in the parent: the child only
    // calls setgroups (see `supplementary_groups`).
    let groups: Vec<libc::gid_t> = match spec.run_as {
        Some(RunAs {
            user_name: Some(name),
            gid,
            ..
        }) => supplementary_groups(name, *gid)?,
        _ => Vec::new(),
    };
    let ids = spec.run_as.map(|r| (r.uid, r.gid));
    // SAFETY: the closure runs in the forked child before exec and only
    // makes raw system calls on values prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some((uid, gid)) = ids {
                let rc = libc::setgroups(groups.len(), groups.as_ptr());
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
    let mut child = cmd.spawn()?;
    let pid = child.id().unwrap_or(0);
    let stdout = child.stdout.take().map(|p| Box::new(p) as JobPipe);
    let stderr = child.stderr.take().map(|p| Box::new(p) as JobPipe);
    Ok(JobChild {
        pid,
        stdout,
        stderr,
        inner: ChildInner::Runtime(child),
        own: None,
    })
}

/// The posix_spawn + pidfd way of starting and waiting for a job.
#[cfg(target_os = "linux")]
mod linux_spawn {
    use super::{JobChild, JobPipe, JobSpawn};
    use std::ffi::{CString, OsStr, OsString};
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    use tokio::io::unix::AsyncFd;

    /// Set once the C library refused `POSIX_SPAWN_SETSID` (glibc older
    /// than 2.26): every later job takes the fork path straight away.
    static REFUSED: AtomicBool = AtomicBool::new(false);

    /// The spawn flag is not supported here; use the fork path.
    pub struct Unsupported;

    pub fn available() -> bool {
        !REFUSED.load(Ordering::Relaxed)
    }

    /// A process we started and must reap.
    pub struct Spawned {
        pid: libc::pid_t,
        /// Readable once the process exits; None on kernels without pidfds
        /// (before 5.3), where exit is polled instead.
        pidfd: Option<AsyncFd<OwnedFd>>,
        status: Option<ExitStatus>,
        /// Already the background reaper: never hand off again.
        detached: bool,
    }

    fn cstring(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a nul byte in the command or its environment",
            )
        })
    }

    fn check(rc: libc::c_int) -> io::Result<()> {
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(rc))
        }
    }

    /// The program to hand to posix_spawn: unchanged when it holds a slash;
    /// else the first executable match in the job's `PATH` (which the job
    /// environment may set, and which exec-by-name would also use).
    fn resolve(program: &OsStr, path: Option<&OsStr>) -> io::Result<OsString> {
        if program.as_bytes().contains(&b'/') {
            return Ok(program.to_owned());
        }
        let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
        let mut denied = false;
        for dir in path.as_bytes().split(|b| *b == b':') {
            let dir = if dir.is_empty() { b".".as_slice() } else { dir };
            let mut candidate = std::path::PathBuf::from(OsStr::from_bytes(dir));
            candidate.push(program);
            let Ok(meta) = std::fs::metadata(&candidate) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let c = cstring(candidate.as_os_str().as_bytes())?;
            // SAFETY: access reads a valid nul-terminated path.
            if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
                return Ok(candidate.into_os_string());
            }
            denied = true;
        }
        Err(io::Error::from_raw_os_error(if denied {
            libc::EACCES
        } else {
            libc::ENOENT
        }))
    }

    /// A pipe whose ends are closed on exec; the child's end is dup'ed
    /// onto its stdout/stderr (which clears that flag on the copy).
    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created and are ours alone.
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    /// posix_spawn's attribute and file-action objects, destroyed on drop.
    struct Plan {
        attr: libc::posix_spawnattr_t,
        actions: libc::posix_spawn_file_actions_t,
    }

    impl Plan {
        fn new() -> io::Result<Box<Plan>> {
            // SAFETY: both objects are plain C structs that init fills in;
            // they stay boxed (never moved) until destroyed in drop.
            unsafe {
                let mut plan: Box<Plan> = Box::new(std::mem::zeroed());
                check(libc::posix_spawnattr_init(&mut plan.attr))?;
                if let Err(e) = check(libc::posix_spawn_file_actions_init(&mut plan.actions)) {
                    libc::posix_spawnattr_destroy(&mut plan.attr);
                    return Err(e);
                }
                Ok(plan)
            }
        }
    }

    impl Drop for Plan {
        fn drop(&mut self) {
            // SAFETY: both were initialised in `new`.
            unsafe {
                libc::posix_spawn_file_actions_destroy(&mut self.actions);
                libc::posix_spawnattr_destroy(&mut self.attr);
            }
        }
    }

    pub fn spawn(spec: &JobSpawn<'_>) -> Result<io::Result<JobChild>, Unsupported> {
        match try_spawn(spec) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // An unknown spawn flag: this C library predates
                // POSIX_SPAWN_SETSID. Other EINVALs would fail the same
                // way on the fork path, which reports them properly.
                REFUSED.store(true, Ordering::Relaxed);
                tracing::debug!(
                    target: "cronstable::job",
                    "posix_spawn refused POSIX_SPAWN_SETSID; starting jobs by fork from now on"
                );
                Err(Unsupported)
            }
            other => Ok(other),
        }
    }

    fn try_spawn(spec: &JobSpawn<'_>) -> io::Result<JobChild> {
        // The environment: the daemon's, with the job's entries over it.
        let mut overrides: Vec<CString> = Vec::with_capacity(spec.env.len());
        for (key, value) in &spec.env {
            let mut entry = key.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            // A later entry for the same key wins.
            overrides.retain(|e| name_of(e.as_bytes()) != key.as_bytes());
            overrides.push(cstring(&entry)?);
        }
        let mut envp: Vec<*mut libc::c_char> =
            Vec::with_capacity(base_environment().len() + overrides.len() + 1);
        for entry in base_environment() {
            let name = name_of(entry.as_bytes());
            if !overrides.iter().any(|o| name_of(o.as_bytes()) == name) {
                envp.push(entry.as_ptr() as *mut _);
            }
        }
        envp.extend(overrides.iter().map(|o| o.as_ptr() as *mut _));
        envp.push(std::ptr::null_mut());
        let path_override = overrides
            .iter()
            .find(|o| name_of(o.as_bytes()) == b"PATH")
            .map(|o| OsStr::from_bytes(&o.as_bytes()[5..]).to_owned());
        let path = path_override.or_else(|| std::env::var_os("PATH"));
        let program = cstring(resolve(&spec.program, path.as_deref())?.as_bytes())?;
        let mut argv_owned = vec![cstring(spec.program.as_bytes())?];
        for arg in &spec.args {
            argv_owned.push(cstring(arg.as_bytes())?);
        }
        let cwd = match spec.cwd {
            Some(dir) => Some(cstring(dir.as_os_str().as_bytes())?),
            None => None,
        };
        let mut argv: Vec<*mut libc::c_char> =
            argv_owned.iter().map(|a| a.as_ptr() as *mut _).collect();
        argv.push(std::ptr::null_mut());

        let out = if spec.capture_stdout {
            Some(pipe()?)
        } else {
            None
        };
        let err = if spec.capture_stderr {
            Some(pipe()?)
        } else {
            None
        };

        let mut plan = Plan::new()?;
        let mut pid: libc::pid_t = 0;
        // SAFETY: every pointer handed over (paths, argv, envp, the plan)
        // lives until posix_spawn returns; the descriptors are open.
        unsafe {
            let flags = libc::POSIX_SPAWN_SETSID as libc::c_int
                | libc::POSIX_SPAWN_SETSIGMASK
                | libc::POSIX_SPAWN_SETSIGDEF;
            check(libc::posix_spawnattr_setflags(
                &mut plan.attr,
                flags as libc::c_short,
            ))?;
            // The job starts with nothing blocked, and with SIGPIPE at its
            // default action (the Rust runtime ignores it in the daemon,
            // and an ignored signal would survive exec).
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            check(libc::posix_spawnattr_setsigmask(&mut plan.attr, &set))?;
            libc::sigaddset(&mut set, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(&mut plan.attr, &set))?;
            check(libc::posix_spawn_file_actions_addopen(
                &mut plan.actions,
                0,
                c"/dev/null".as_ptr(),
                libc::O_RDONLY,
                0,
            ))?;
            if let Some((_, write)) = &out {
                check(libc::posix_spawn_file_actions_adddup2(
                    &mut plan.actions,
                    write.as_raw_fd(),
                    1,
                ))?;
            }
            if let Some((_, write)) = &err {
                check(libc::posix_spawn_file_actions_adddup2(
                    &mut plan.actions,
                    write.as_raw_fd(),
                    2,
                ))?;
            }
            if let Some(dir) = &cwd {
                check(libc::posix_spawn_file_actions_addchdir_np(
                    &mut plan.actions,
                    dir.as_ptr(),
                ))?;
            }
            check(libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                &plan.actions,
                &plan.attr,
                argv.as_ptr(),
                envp.as_ptr(),
            ))?;
        }
        drop(plan);
        // Our copies of the write ends close here, so the reads see
        // end-of-file once the job (and whatever inherited them) is done.
        let stdout = out.map(|(read, _)| receiver(read)).transpose()?;
        let stderr = err.map(|(read, _)| receiver(read)).transpose()?;
        Ok(JobChild {
            pid: pid as u32,
            stdout,
            stderr,
            inner: super::ChildInner::Spawned(Spawned {
                pid,
                pidfd: pidfd_open(pid),
                status: None,
                detached: false,
            }),
            own: None,
        })
    }

    /// The daemon's own environment as `NAME=value` strings, built once:
    /// the daemon never changes its environment, and rebuilding it for
    /// every launch would cost allocations in the busiest path.
    fn base_environment() -> &'static [CString] {
        static BASE: std::sync::OnceLock<Vec<CString>> = std::sync::OnceLock::new();
        BASE.get_or_init(|| {
            std::env::vars_os()
                .filter_map(|(k, v)| {
                    let mut entry = k.into_vec();
                    entry.push(b'=');
                    entry.extend_from_slice(v.as_bytes());
                    CString::new(entry).ok()
                })
                .collect()
        })
    }

    /// The name part of a `NAME=value` entry.
    fn name_of(entry: &[u8]) -> &[u8] {
        entry.split(|b| *b == b'=').next().unwrap_or(entry)
    }

    /// The daemon's end of a capture pipe, registered with the reactor.
    /// The descriptor comes from [`pipe`], so it is known to be a FIFO's
    /// read end with no status flags: one `fcntl` makes it non-blocking,
    /// where the checked constructor spends an `fstat` and a second
    /// `fcntl` finding that out again on every launch.
    fn receiver(fd: OwnedFd) -> io::Result<JobPipe> {
        // SAFETY: fcntl on a descriptor we own; F_SETFL changes only the
        // status flags of the daemon's own (unshared) read end.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Box::new(
            tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(fd)?,
        ))
    }

    fn pidfd_open(pid: libc::pid_t) -> Option<AsyncFd<OwnedFd>> {
        // SAFETY: pidfd_open takes plain integers and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: the descriptor was just returned to us.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        // Registering needs the runtime's reactor; without one (never the
        // case in the daemon) exit is polled instead.
        tokio::runtime::Handle::try_current().ok()?;
        // SAFETY: an OwnedFd keeps its descriptor open and unchanged until
        // the AsyncFd that owns it is dropped.
        unsafe { AsyncFd::register_with_interest(owned, tokio::io::Interest::READABLE) }.ok()
    }

    impl Spawned {
        pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
            if self.status.is_some() {
                return Ok(self.status);
            }
            let mut raw: libc::c_int = 0;
            // SAFETY: waitpid writes the status of our own child.
            let rc = unsafe { libc::waitpid(self.pid, &mut raw, libc::WNOHANG) };
            match rc {
                0 => Ok(None),
                -1 => Err(io::Error::last_os_error()),
                _ => {
                    self.status = Some(ExitStatus::from_raw(raw));
                    Ok(self.status)
                }
            }
        }

        pub async fn wait(&mut self) -> io::Result<ExitStatus> {
            loop {
                if let Some(status) = self.try_wait()? {
                    return Ok(status);
                }
                match &self.pidfd {
                    Some(fd) => {
                        let mut ready = fd.readable().await?;
                        // Readable means exited; the next try_wait reaps.
                        ready.clear_ready();
                    }
                    None => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }

        pub fn kill(&mut self) -> io::Result<()> {
            if self.status.is_some() {
                return Ok(());
            }
            // SAFETY: kill takes plain integers; the pid is our unreaped
            // child, so it cannot have been reused.
            if unsafe { libc::kill(self.pid, libc::SIGKILL) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
    }

    impl Drop for Spawned {
        fn drop(&mut self) {
            if self.detached
                || self.status.is_some()
                || matches!(self.try_wait(), Ok(Some(_)) | Err(_))
            {
                return;
            }
            // Still running (one the daemon could not kill): reap it in the
            // background so it does not linger as a zombie.
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let mut rest = Spawned {
                pid: self.pid,
                pidfd: self.pidfd.take(),
                status: None,
                detached: true,
            };
            runtime.spawn(async move {
                let _ = rest.wait().await;
            });
        }
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

// ---------------------------------------------------------------------
// Files of the shared-directory lease (`cluster.backend: filesystem`):
// private modes, advisory locks, directory syncs and the mount table.
// ---------------------------------------------------------------------

/// Creates `path` and its missing parents with mode 0700 (narrowed by the
/// umask): the shared directory may hold job state nobody else should
/// read. Directories that already exist keep their modes.
#[cfg(unix)]
pub fn create_private_dirs(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

/// Opens (creating it 0600 if needed) a file for reading and writing; the
/// lease's lock side file.
#[cfg(unix)]
pub fn open_private_rw(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Creates a new file 0600 for writing, failing if it exists (temp files
/// written before an atomic rename).
#[cfg(unix)]
pub fn create_private_new(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Takes an exclusive advisory lock (`flock`) on `file`, waiting as long
/// as another holder keeps it. The lock goes with the open file: closing
/// (dropping) `file` releases it.
#[cfg(unix)]
pub fn lock_exclusive(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this File owns for the call.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        // A signal handler interrupting the wait is not a failure.
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Tries to take an exclusive advisory lock on `file` without waiting:
/// `Ok(false)` when someone else holds it.
#[cfg(unix)]
pub fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this File owns for the call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(err)
}

/// True when two metadata describe the same file (device and inode): the
/// lock taken on an open file still guards what its path names.
#[cfg(unix)]
pub fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// Flushes a directory's entries (a rename into it survives a crash).
#[cfg(unix)]
pub fn sync_dir(path: &std::path::Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

/// The filesystem type and mount options of the mount holding `path`
/// (from `/proc/mounts`), or None when it cannot be told.
#[cfg(target_os = "linux")]
pub fn mount_of(path: &std::path::Path) -> Option<(String, String)> {
    let path = std::fs::canonicalize(path).ok()?;
    let table = std::fs::read_to_string("/proc/mounts").ok()?;
    longest_mount(&table, &path)
}

/// The filesystem type and mount options of the mount holding `path`:
/// never known here (no mount table to read).
#[cfg(not(target_os = "linux"))]
pub fn mount_of(_path: &std::path::Path) -> Option<(String, String)> {
    None
}

/// The entry of a `/proc/mounts` text whose mount point is the longest
/// prefix of `path` (later entries win a tie: they are mounted on top).
fn longest_mount(table: &str, path: &std::path::Path) -> Option<(String, String)> {
    let mut best: Option<(usize, String, String)> = None;
    for line in table.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_source), Some(point), Some(fstype), Some(options)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let point = unescape_mount_field(point);
        let point = std::path::Path::new(&point);
        if !path.starts_with(point) {
            continue;
        }
        let depth = point.components().count();
        if best.as_ref().is_none_or(|(d, _, _)| depth >= *d) {
            best = Some((depth, fstype.to_owned(), options.to_owned()));
        }
    }
    best.map(|(_, fstype, options)| (fstype, options))
}

/// Undoes the octal escapes (`\040` for a space) of a mount table field.
fn unescape_mount_field(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                if let Ok(value) = u8::try_from(value) {
                    out.push(value);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------
// Node readings for `GET /node` and the node-history sampler. Raw
// counters only; the web layer turns two readings into percentages.
// ---------------------------------------------------------------------

/// One reading of this node's counters, taken at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeReading {
    /// Host CPU time, all CPUs, in clock ticks: (busy, total).
    pub host_cpu: (u64, u64),
    /// Online logical CPUs.
    pub cpu_count: u64,
    /// Host memory in bytes: (used = total - available, total).
    pub host_mem: (u64, u64),
    /// The daemon's own CPU time (user + system), seconds.
    pub proc_cpu_seconds: Option<f64>,
    /// The daemon's own resident memory, bytes.
    pub proc_rss_bytes: Option<u64>,
    /// The cgroup v2 slice's memory (used without reclaimable page cache,
    /// lowest limit on the path), when a limit applies.
    pub cgroup_mem: Option<(u64, u64)>,
    /// The slice's CPU quota in CPUs and its cumulative usage in seconds,
    /// when a quota applies.
    pub cgroup_cpu: Option<(f64, f64)>,
}

/// Reads the node's counters; None where the platform offers no `/proc`
/// (the API then reports `resources: null`).
#[cfg(target_os = "linux")]
pub fn node_reading() -> Option<NodeReading> {
    use std::fs::read_to_string;
    let host_cpu = parse_proc_stat_cpu(&read_to_string("/proc/stat").ok()?)?;
    let host_mem = parse_meminfo(&read_to_string("/proc/meminfo").ok()?)?;
    // SAFETY: sysconf only reads configuration values.
    let (online, ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_NPROCESSORS_ONLN),
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let proc_cpu_seconds = read_to_string("/proc/self/stat")
        .ok()
        .and_then(|text| parse_self_stat_ticks(&text))
        .filter(|_| ticks > 0)
        .map(|t| t as f64 / ticks as f64);
    let proc_rss_bytes = read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1)?.parse::<u64>().ok())
        .filter(|_| page > 0)
        .map(|pages| pages * page as u64);
    let cgroup = cgroup_v2_dir(std::path::Path::new("/sys/fs/cgroup"));
    Some(NodeReading {
        host_cpu,
        cpu_count: u64::try_from(online).unwrap_or(0),
        host_mem,
        proc_cpu_seconds,
        proc_rss_bytes,
        cgroup_mem: cgroup.as_ref().and_then(cgroup_memory),
        cgroup_cpu: cgroup.as_ref().and_then(cgroup_cpu),
    })
}

/// Without `/proc` there is nothing to read.
#[cfg(not(target_os = "linux"))]
pub fn node_reading() -> Option<NodeReading> {
    None
}

/// The first `cpu` line of `/proc/stat` as (busy, total) ticks; idle and
/// iowait count as idle, guest time is already inside user/nice.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_proc_stat_cpu(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 4 {
        return None;
    }
    let total: u64 = fields.iter().sum();
    let idle = fields[3] + fields.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

/// `/proc/meminfo` as (used, total) bytes, used being what is not
/// available (page cache that can be reclaimed does not count as used).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_meminfo(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
        Some(kib * 1024)
    };
    let total = field("MemTotal:")?;
    let available = field("MemAvailable:").or_else(|| field("MemFree:"))?;
    Some((total.saturating_sub(available), total))
}

/// utime + stime (clock ticks) from `/proc/self/stat`. The command name
/// may contain spaces, so fields are counted after its closing `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_self_stat_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After ")": state is field 3 of the file; utime and stime are 14, 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The daemon's own cgroup v2 directory and the mount root, or None on a
/// v1/hybrid host or when the path is not visible under the mount.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn cgroup_v2_dir(root: &std::path::Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    if !root.join("cgroup.controllers").is_file() {
        return None;
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = root.join(rel.trim().trim_start_matches('/'));
    dir.is_dir().then(|| (dir, root.to_path_buf()))
}

/// The lowest value any directory from `dir` up to `root` gives, `read`
/// answering None for "no limit here".
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn lowest_limit<T: PartialOrd>(
    (dir, root): &(std::path::PathBuf, std::path::PathBuf),
    read: impl Fn(&std::path::Path) -> Option<T>,
) -> Option<T> {
    let mut best: Option<T> = None;
    let mut at = Some(dir.as_path());
    while let Some(path) = at {
        if let Some(limit) = read(path) {
            if best.as_ref().is_none_or(|b| limit < *b) {
                best = Some(limit);
            }
        }
        if path == root.as_path() {
            break;
        }
        at = path.parent().filter(|p| p.starts_with(root));
    }
    best
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn cgroup_memory(cg: &(std::path::PathBuf, std::path::PathBuf)) -> Option<(u64, u64)> {
    let limit = lowest_limit(cg, |p| {
        std::fs::read_to_string(p.join("memory.max"))
            .ok()?
            .trim()
            .parse::<u64>()
            .ok()
    })?;
    let current: u64 = std::fs::read_to_string(cg.0.join("memory.current"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let inactive_file = std::fs::read_to_string(cg.0.join("memory.stat"))
        .ok()
        .and_then(|s| stat_field(&s, "inactive_file"))
        .unwrap_or(0);
    Some((current.saturating_sub(inactive_file), limit))
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn cgroup_cpu(cg: &(std::path::PathBuf, std::path::PathBuf)) -> Option<(f64, f64)> {
    let quota = lowest_limit(cg, |p| {
        let text = std::fs::read_to_string(p.join("cpu.max")).ok()?;
        let mut parts = text.split_whitespace();
        let quota: f64 = parts.next()?.parse().ok()?; // "max" fails: no limit
        let period: f64 = parts.next()?.parse().ok()?;
        (period > 0.0).then_some(quota / period)
    })?;
    let usage = std::fs::read_to_string(cg.0.join("cpu.stat"))
        .ok()
        .and_then(|s| stat_field(&s, "usage_usec"))?;
    Some((quota, usage as f64 / 1e6))
}

/// One `key value` line of a cgroup stat file.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn stat_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod node_reading_tests {
    use super::*;

    #[test]
    fn zombie_children_are_told_from_stat_lines() {
        assert!(zombie_child_of("42 (sh) Z 1 42 42 0 -1", 1));
        assert!(zombie_child_of("42 (a) b) (c) Z 7 42 42 0 -1", 7));
        assert!(!zombie_child_of("42 (sh) S 1 42 42 0 -1", 1));
        assert!(!zombie_child_of("42 (sh) Z 2 42 42 0 -1", 1));
        assert!(!zombie_child_of("garbage", 1));
    }

    #[test]
    fn proc_stat_counts_idle_and_iowait_as_idle() {
        let text = "cpu  100 5 50 800 40 1 2 3 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_proc_stat_cpu(text), Some((161, 1001)));
    }

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let text = "MemTotal:       1000 kB\nMemFree:  100 kB\nMemAvailable:   250 kB\n";
        assert_eq!(parse_meminfo(text), Some((750 * 1024, 1000 * 1024)));
    }

    #[test]
    fn self_stat_survives_spaces_in_the_command_name() {
        let text = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 1000 200";
        assert_eq!(parse_self_stat_ticks(text), Some(10));
    }

    #[test]
    fn stat_fields() {
        let text = "usage_usec 1500000\nuser_usec 1000000\n";
        assert_eq!(stat_field(text, "usage_usec"), Some(1_500_000));
        assert_eq!(stat_field(text, "missing"), None);
    }

    #[test]
    fn reading_this_process_works_here() {
        if cfg!(target_os = "linux") {
            let r = node_reading().expect("linux has /proc");
            assert!(r.host_mem.1 > 0 && r.cpu_count > 0);
            assert!(r.proc_rss_bytes.unwrap_or(0) > 0);
        }
    }
}

#[cfg(test)]
mod mount_table_tests {
    use super::*;

    #[test]
    fn the_deepest_mount_point_holding_the_path_wins() {
        let table = "/dev/sda1 / ext4 rw,relatime 0 0\n\
                     srv:/export /mnt/shared nfs4 rw,vers=4.2,local_lock=none 0 0\n\
                     tmpfs /mnt/shared\\040dir tmpfs rw 0 0\n";
        let path = std::path::Path::new("/mnt/shared/cronstable/default");
        assert_eq!(
            longest_mount(table, path),
            Some(("nfs4".to_owned(), "rw,vers=4.2,local_lock=none".to_owned()))
        );
        let spaced = std::path::Path::new("/mnt/shared dir/x");
        assert_eq!(
            longest_mount(table, spaced).map(|m| m.0),
            Some("tmpfs".to_owned())
        );
        let other = std::path::Path::new("/var/lib/x");
        assert_eq!(
            longest_mount(table, other).map(|m| m.0),
            Some("ext4".to_owned())
        );
    }
}

#[cfg(test)]
mod account_file_tests {
    use super::account_files::*;

    const PASSWD: &str = "# comment\nroot:x:0:0:root:/root:/bin/sh\n+nis\n\
                          app:x:1000:1000::/home/app:/bin/sh\nbroken:x:notanumber:1\n";
    const GROUP: &str = "root:x:0:\napp:x:1000:\nwheel:x:10:root,app\nops:x:20: app \n\
                         extra:x:30:someone\n";

    #[test]
    fn users_are_found_by_name_and_by_uid() {
        let app = user(PASSWD, "app").expect("app");
        assert_eq!((app.name.as_str(), app.uid, app.gid), ("app", 1000, 1000));
        assert_eq!(user(PASSWD, "0").map(|a| a.name), Some("root".to_owned()));
        assert!(user(PASSWD, "nobody").is_none());
        assert!(user(PASSWD, "+nis").is_none(), "NIS lines are not users");
        assert!(
            user(PASSWD, "broken").is_none(),
            "a malformed line is skipped"
        );
    }

    #[test]
    fn groups_are_found_by_name_and_by_gid() {
        assert_eq!(group(GROUP, "wheel"), Some(10));
        assert_eq!(group(GROUP, "20"), Some(20));
        assert_eq!(group(GROUP, "missing"), None);
    }

    #[test]
    fn supplementary_groups_list_the_primary_gid_first_then_memberships() {
        assert_eq!(groups_of(GROUP, "app", 1000), vec![1000, 10, 20]);
        assert_eq!(groups_of(GROUP, "root", 0), vec![0, 10]);
        assert_eq!(groups_of(GROUP, "nobody", 65534), vec![65534]);
    }
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
