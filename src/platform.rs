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

/// Waits for SIGINT or SIGTERM; returns which one arrived.
#[cfg(unix)]
pub async fn shutdown_signal() -> std::io::Result<&'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
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
