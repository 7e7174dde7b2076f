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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn zombie_children_are_told_from_stat_lines() {
        assert!(zombie_child_of("42 (sh) Z 1 42 42 0 -1", 1));
        assert!(zombie_child_of("42 (a) b) (c) Z 7 42 42 0 -1", 7));
        assert!(!zombie_child_of("42 (sh) S 1 42 42 0 -1", 1));
        assert!(!zombie_child_of("42 (sh) Z 2 42 42 0 -1", 1));
        assert!(!zombie_child_of("garbage", 1));
    }
}
