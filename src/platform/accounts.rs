//! User and group accounts: lookups by name or id, the account a job
//! switches to, and the supplementary groups computed before a spawn.

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
pub(super) fn supplementary_groups(user: &str, gid: u32) -> std::io::Result<Vec<libc::gid_t>> {
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
