//! The host the daemon runs on: its name, the user's home, the default
//! paths, and the process's own open-file limit.

/// Shell used for string commands when a job sets none.
#[cfg(unix)]
pub const DEFAULT_SHELL: &str = "/bin/sh";

/// Config path used when `-c` is not given.
#[cfg(unix)]
pub const DEFAULT_CONFIG_PATH: &str = "/etc/cronstable.d";

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
