//! cgroups: the daemon's own v2 slice (its memory and CPU limits and
//! usage, for `/node`), and a cgroup per run with resource limits, in the
//! unified hierarchy ([`v2`]) or the v1 hierarchies ([`v1`]).

mod fs;
mod join;
mod run;
mod usage;
mod v1;
mod v2;
#[cfg(test)]
mod v2_tests;

pub use fs::{CgroupFs, RealCgroupFs};
pub use join::JoinStep;
pub use run::{CgroupCapability, CgroupCaps, CgroupPlace, CgroupStats, LimitResource, RunCgroup};
pub use usage::CgroupUsage;

use std::path::PathBuf;
use std::sync::Arc;

/// Where cgroup hierarchies are mounted on every mainstream distribution.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The variable that points the per-run backend at another cgroupfs root
/// (tests use an unusable one to see runs refused).
pub const CGROUP_ROOT_ENV: &str = "CRONSTABLE_CGROUP_ROOT";

/// The per-run backend of this host: cgroup v2 when the root is a v2
/// mount, else the v1 hierarchies, else none.
#[derive(Debug)]
pub struct CgroupBackend {
    kind: Kind,
    shared: Arc<run::Shared>,
}

#[derive(Debug)]
enum Kind {
    V2(v2::V2),
    V1(v1::V1),
    Off(CgroupCapability),
}

impl CgroupBackend {
    /// The backend over the kernel's cgroupfs at [`CGROUP_ROOT`] (or the
    /// directory [`CGROUP_ROOT_ENV`] names).
    pub fn system() -> CgroupBackend {
        let root = std::env::var_os(CGROUP_ROOT_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(CGROUP_ROOT));
        CgroupBackend::new(Arc::new(RealCgroupFs), root, PathBuf::from("/proc"))
    }

    /// The backend over `fs`, with hierarchies under `root` and the
    /// process information under `proc`.
    pub fn new(fs: Arc<dyn CgroupFs>, root: PathBuf, proc: PathBuf) -> CgroupBackend {
        let shared = Arc::new(run::Shared::new(Arc::clone(&fs)));
        let kind = if !cfg!(target_os = "linux") {
            Kind::Off(CgroupCapability::unavailable(
                None,
                "this platform has no cgroups".into(),
                None,
            ))
        } else if fs.exists(&root.join("cgroup.controllers")) {
            Kind::V2(v2::V2::new(Arc::clone(&shared), root, proc))
        } else if v1::detect(fs.as_ref(), &root) {
            Kind::V1(v1::V1::new(Arc::clone(&shared), root, proc))
        } else {
            Kind::Off(CgroupCapability::unavailable(
                Some(v2::MECHANISM),
                format!("no cgroup v2 hierarchy is mounted at {}", root.display()),
                Some(v2::V2_HINT),
            ))
        };
        CgroupBackend { kind, shared }
    }

    /// `cgroup-v2`, `cgroup-v1`, or none.
    pub fn mechanism(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::V2(_) => Some(v2::MECHANISM),
            Kind::V1(_) => Some(v1::MECHANISM),
            Kind::Off(cap) => cap.mechanism,
        }
    }

    /// What can be capped: the setup's result, or a read-only probe before.
    pub fn capability(&self) -> CgroupCapability {
        match &self.kind {
            Kind::V2(b) => b.capability(),
            Kind::V1(b) => b.capability(),
            Kind::Off(cap) => cap.clone(),
        }
    }

    /// Builds the layout once (again with `retry` when a resource was left
    /// out) and says what can be capped. Blocking file work.
    pub fn setup(&self, retry: bool) -> CgroupCapability {
        match &self.kind {
            Kind::V2(b) => b.setup(retry),
            Kind::V1(b) => b.setup(retry),
            Kind::Off(cap) => cap.clone(),
        }
    }

    /// Turns CPU control on while some job caps CPU (v2; the cpu
    /// controller makes every run a CPU group of its own).
    pub fn set_cpu(&self, want: bool) {
        if let Kind::V2(b) = &self.kind {
            b.set_cpu(want);
        }
    }

    /// Whether every run, uncapped ones too, needs a cgroup for its CPU
    /// weight (v2 while the cpu controller is on).
    pub fn weighting(&self) -> bool {
        matches!(&self.kind, Kind::V2(b) if b.weighting())
    }

    /// Makes one run's cgroup with `caps` (after [`CgroupBackend::setup`]).
    /// `nice` is the run's absolute nice, which its CPU weight follows
    /// (`None`: the daemon's own).
    pub fn create(&self, caps: &CgroupCaps, name: &str, nice: Option<i32>) -> RunCgroup {
        match &self.kind {
            Kind::V2(b) => b.create(caps, name, nice),
            Kind::V1(b) => b.create(caps, name, nice),
            Kind::Off(cap) => {
                let reason = cap.reason.clone().unwrap_or_default();
                RunCgroup::new(
                    Arc::clone(&self.shared),
                    run::Layout::Nowhere,
                    PathBuf::from("/proc"),
                    Default::default(),
                    caps.configured()
                        .into_iter()
                        .map(|r| (r, reason.clone()))
                        .collect(),
                    None,
                )
            }
        }
    }

    /// Retries the removal of run cgroups that were busy at their run's
    /// end; then CPU control goes off if no job wants it and no run has a
    /// CPU cap any more. Blocking file work.
    pub fn collect(&self) {
        self.shared.collect();
        if let Kind::V2(b) = &self.kind {
            b.settle_cpu();
        }
    }

    /// The run cgroups waiting for removal.
    pub fn pending(&self) -> Vec<PathBuf> {
        self.shared.pending().into_iter().collect()
    }
}

/// An OS error's text without the "(os error N)" suffix Rust adds.
fn errno_text(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// This process's nice value; 0 where it cannot be read.
fn own_nice() -> i32 {
    // SAFETY: getpriority takes plain integers; -1 with errno set is an
    // error, read as 0.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if nice == -1 && *libc::__errno_location() != 0 {
            0
        } else {
            nice
        }
    }
}

/// `bytes` rounded down to whole pages (the kernel does the same; the
/// record keeps the configured figure).
fn page_floor(bytes: u64) -> u64 {
    // SAFETY: sysconf takes a plain integer.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = u64::try_from(page).ok().filter(|p| *p > 0).unwrap_or(4096);
    bytes - bytes % page
}

/// A new run cgroup's name: 12 random hex digits, then the job name with
/// everything but `[A-Za-z0-9._-]` as `_`, at most 48 characters of it.
fn run_dir_name(job: &str) -> String {
    let slug: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let hex = super::random::random_hex(6).unwrap_or_else(|_| {
        // The kernel's generator failing is near impossible; time and pid
        // still make the name unique enough to retry on a clash.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!(
            "{:06x}{:06x}",
            std::process::id() & 0xff_ffff,
            nanos & 0xff_ffff
        )
    });
    format!("{hex}-{slug}")
}

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
    // In the per-run layout the daemon sits in a leaf next to its runs:
    // its slice is the parent, runs included.
    let dir = match dir.parent() {
        Some(parent)
            if dir.file_name().is_some_and(|n| n == v2::DAEMON_LEAF)
                && parent.join(v2::RUNS_DIR).is_dir() =>
        {
            parent.to_path_buf()
        }
        _ => dir,
    };
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
