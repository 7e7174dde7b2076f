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
        if self.detached || self.status.is_some() || matches!(self.try_wait(), Ok(Some(_)) | Err(_))
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
