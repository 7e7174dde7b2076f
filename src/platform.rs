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
