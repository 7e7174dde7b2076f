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

/// The directory for the user's own settings files: `%APPDATA%` on
/// Windows; elsewhere `$XDG_CONFIG_HOME`, else `~/.config`. None when
/// the variables it rests on are unset.
pub fn user_config_dir() -> Option<std::path::PathBuf> {
    config_dir_from(IS_WINDOWS, &|name| std::env::var_os(name))
}

/// [`user_config_dir`]'s choice for a system (`windows`) and its
/// environment (`var`), apart from the reading, so that both systems'
/// branches are tested anywhere. An empty variable counts as unset.
pub fn config_dir_from(
    windows: bool,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Option<std::path::PathBuf> {
    let set = |name: &str| {
        var(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
    };
    if windows {
        // The roaming application-data folder, where APPDATA points;
        // from the profile when the variable is missing.
        return set("APPDATA")
            .or_else(|| set("USERPROFILE").map(|p| p.join("AppData").join("Roaming")));
    }
    set("XDG_CONFIG_HOME").or_else(|| set("HOME").map(|h| h.join(".config")))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::path::PathBuf;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn windows_reads_appdata_and_others_xdg_then_home() {
        let all = [
            ("APPDATA", r"C:\Users\u\AppData\Roaming"),
            ("USERPROFILE", r"C:\Users\u"),
            ("XDG_CONFIG_HOME", "/x"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(
            config_dir_from(true, &env(&all)),
            Some(PathBuf::from(r"C:\Users\u\AppData\Roaming"))
        );
        assert_eq!(
            config_dir_from(true, &env(&all[1..])),
            Some(PathBuf::from(r"C:\Users\u").join("AppData").join("Roaming"))
        );
        assert_eq!(config_dir_from(true, &env(&all[2..])), None);
        assert_eq!(
            config_dir_from(false, &env(&all)),
            Some(PathBuf::from("/x"))
        );
        let no_xdg = [("XDG_CONFIG_HOME", ""), ("HOME", "/home/u")];
        assert_eq!(
            config_dir_from(false, &env(&no_xdg)),
            Some(PathBuf::from("/home/u/.config"))
        );
        assert_eq!(config_dir_from(false, &env(&[])), None);
    }
}
