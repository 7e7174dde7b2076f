//! The daemon's own cgroup v2 slice: its memory and CPU limits and usage.

/// The daemon's own cgroup v2 directory and the mount root, or None on a
/// v1/hybrid host or when the path is not visible under the mount.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn cgroup_v2_dir(
    root: &std::path::Path,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
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
pub(super) fn cgroup_memory(cg: &(std::path::PathBuf, std::path::PathBuf)) -> Option<(u64, u64)> {
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
pub(super) fn cgroup_cpu(cg: &(std::path::PathBuf, std::path::PathBuf)) -> Option<(f64, f64)> {
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
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let text = "usage_usec 1500000\nuser_usec 1000000\n";
        assert_eq!(stat_field(text, "usage_usec"), Some(1_500_000));
        assert_eq!(stat_field(text, "missing"), None);
    }
}
