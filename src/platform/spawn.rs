//! Starting a job's process (posix_spawn, or fork with an account
//! switch) and waiting for it.

use super::accounts::{supplementary_groups, RunAs};
use super::reaper::{spawn_own, OwnChild};

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
    /// The run's cgroup, joined between fork and exec, before the account
    /// switch (see [`super::RunCgroup::join_step`]).
    pub cgroup: Option<super::JoinStep>,
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
    // posix_spawn has no step between fork and exec: a job that joins a
    // cgroup is forked, so it never runs outside its caps.
    if spec.run_as.is_none() && spec.cgroup.is_none() && linux_spawn::available() {
        match linux_spawn::spawn(spec) {
            Err(linux_spawn::Unsupported) => {}
            Ok(result) => return result,
        }
    }
    spawn_forked(spec)
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
    let join = spec.cgroup;
    // SAFETY: the closure runs in the forked child before exec and only
    // makes raw system calls on values prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(join) = &join {
                join.enter()?;
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
mod linux_spawn;
