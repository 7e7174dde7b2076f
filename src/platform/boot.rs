//! Boot identity and process start times: what `@reboot` once per OS
//! boot and crash reconciliation's pid guard need. Linux reads `/proc`;
//! elsewhere these answer None, and the callers fall back to the
//! stateless behaviour (each daemon start counts as a boot; a recorded
//! pid is never taken for a survivor).

/// This boot's identity (`/proc/sys/kernel/random/boot_id`).
#[cfg(target_os = "linux")]
pub fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// This boot's identity: not known on this platform.
#[cfg(not(target_os = "linux"))]
pub fn boot_id() -> Option<String> {
    None
}

/// When this boot began, Unix seconds (now minus `/proc/uptime`).
#[cfg(target_os = "linux")]
pub fn boot_time() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let uptime: f64 = text.split_whitespace().next()?.parse().ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    Some(now - uptime)
}

/// When this boot began: not known on this platform.
#[cfg(not(target_os = "linux"))]
pub fn boot_time() -> Option<f64> {
    None
}

/// When process `pid` started, Unix seconds, or None when it does not
/// exist, has ended (a zombie nobody reaped yet), or this platform cannot
/// tell.
#[cfg(target_os = "linux")]
pub fn process_started_at(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    if ended(&stat) {
        return None;
    }
    let ticks = start_ticks(&stat)?;
    // SAFETY: sysconf only reads a configuration value.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if per_second <= 0 {
        return None;
    }
    let btime = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse::<f64>()
        .ok()?;
    Some(btime + ticks as f64 / per_second as f64)
}

/// When process `pid` started: not known on this platform.
#[cfg(not(target_os = "linux"))]
pub fn process_started_at(_pid: u32) -> Option<f64> {
    None
}

/// Whether a `/proc/<pid>/stat` text is of a process that has ended
/// (state `Z` zombie or `X` dead).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn ended(stat: &str) -> bool {
    let state = stat
        .rfind(')')
        .and_then(|at| stat[at + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X"))
}

/// The start time (clock ticks after boot, field 22) of a `/proc/<pid>/stat`
/// text; the command name may hold spaces and parentheses, so fields are
/// counted after its last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ")": the state is field 3; starttime is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_are_read_after_the_command_name() {
        let stat =
            "123 (a (b) c) S 1 123 123 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 98765 1000 10";
        assert_eq!(start_ticks(stat), Some(98765));
        assert_eq!(start_ticks("garbage"), None);
        assert!(!ended(stat));
        assert!(ended("9 (sh) Z 1 9 9"));
        assert!(ended("9 (a) b) X 1"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_started_after_boot_and_before_now() {
        let started = process_started_at(std::process::id()).expect("readable");
        let boot = boot_time().expect("readable");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            boot - 2.0 <= started && started <= now + 1.0,
            "{boot} {started} {now}"
        );
        assert!(boot_id().is_some_and(|id| id.len() >= 32));
        assert_eq!(process_started_at(u32::MAX), None);
    }
}
