//! What a run's cgroup says about its usage, for the resource sampler:
//! every process in it (a process that called `setsid` and left the
//! run's session is still listed) and, where the hierarchy keeps them,
//! the CPU totals of everything that ever ran there, processes already
//! reaped included.

use super::run::CgroupPlace;
use std::fs;
use std::path::Path;

/// One reading of a run's cgroup.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupUsage {
    /// The processes in the cgroup and its child cgroups.
    pub pids: Vec<u32>,
    /// (user, system) CPU seconds of everything that ran in the cgroup:
    /// v2's `cpu.stat`; on v1, the `cpuacct` counters where the run's cpu
    /// directory sits in a hierarchy that has them. None elsewhere.
    pub cpu: Option<(f64, f64)>,
}

impl CgroupPlace {
    /// Reads the cgroup's processes and CPU totals. None when the cgroup
    /// cannot be listed (removed, or never made): the caller reads the
    /// run another way.
    pub fn usage(&self) -> Option<CgroupUsage> {
        match self {
            CgroupPlace::V2(path) => Some(CgroupUsage {
                pids: tree_pids(path)?,
                cpu: v2_cpu(path),
            }),
            CgroupPlace::V1(dirs) => {
                // The first directory holds every process of the run.
                let (_, tracked) = dirs.first()?;
                let cpu = dirs
                    .iter()
                    .find(|(controller, _)| *controller == "cpu")
                    .and_then(|(_, dir)| v1_cpu(dir));
                Some(CgroupUsage {
                    pids: tree_pids(tracked)?,
                    cpu,
                })
            }
        }
    }
}

/// The pids in `dir`'s `cgroup.procs` and in those of its descendants (a
/// job may make child cgroups where it was delegated the right).
fn tree_pids(dir: &Path) -> Option<Vec<u32>> {
    let mut pids = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut root = true;
    while let Some(next) = pending.pop() {
        match fs::read_to_string(next.join("cgroup.procs")) {
            Ok(text) => pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            ),
            // The run's own directory must read; a child cgroup removed
            // meanwhile is skipped.
            Err(_) if root => return None,
            Err(_) => {}
        }
        root = false;
        if let Ok(entries) = fs::read_dir(&next) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    pending.push(entry.path());
                }
            }
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Some(pids)
}

/// `user_usec` and `system_usec` of a v2 `cpu.stat` (kept by the kernel
/// for every cgroup, with or without the cpu controller).
fn v2_cpu(dir: &Path) -> Option<(f64, f64)> {
    let text = fs::read_to_string(dir.join("cpu.stat")).ok()?;
    let user = keyed(&text, "user_usec")?;
    let system = keyed(&text, "system_usec")?;
    Some((user as f64 / 1e6, system as f64 / 1e6))
}

/// v1's `cpuacct.usage_user` and `cpuacct.usage_sys` (nanoseconds), found
/// beside the cpu controller's files when the two share a hierarchy (the
/// usual `cpu,cpuacct` mount).
fn v1_cpu(dir: &Path) -> Option<(f64, f64)> {
    let read = |name: &str| -> Option<u64> {
        fs::read_to_string(dir.join(name)).ok()?.trim().parse().ok()
    };
    let user = read("cpuacct.usage_user")?;
    let system = read("cpuacct.usage_sys")?;
    Some((user as f64 / 1e9, system as f64 / 1e9))
}

/// The value of `key` in a flat-keyed cgroup file (`key value` lines).
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "cronstable-cgusage-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn v2_lists_the_tree_and_reads_cpu_stat() {
        let run = temp_dir("v2");
        fs::write(run.join("cgroup.procs"), "41\n42\n").unwrap();
        fs::write(
            run.join("cpu.stat"),
            "usage_usec 3500000\nuser_usec 2500000\nsystem_usec 1000000\n",
        )
        .unwrap();
        let child = run.join("worker");
        fs::create_dir(&child).unwrap();
        fs::write(child.join("cgroup.procs"), "77\n42\n").unwrap();
        let usage = CgroupPlace::V2(run.clone()).usage().expect("readable");
        assert_eq!(usage.pids, vec![41, 42, 77]);
        assert_eq!(usage.cpu, Some((2.5, 1.0)));
        fs::remove_dir_all(&run).unwrap();
        assert_eq!(
            CgroupPlace::V2(run).usage(),
            None,
            "a removed cgroup reads as none"
        );
    }

    #[test]
    fn v1_lists_the_first_hierarchy_and_reads_cpuacct_where_it_is() {
        let memory = temp_dir("v1mem");
        let cpu = temp_dir("v1cpu");
        fs::write(memory.join("cgroup.procs"), "10\n11\n").unwrap();
        // A cpu hierarchy without cpuacct (separate mounts): no totals.
        fs::write(cpu.join("cgroup.procs"), "10\n").unwrap();
        let place = CgroupPlace::V1(vec![("memory", memory.clone()), ("cpu", cpu.clone())]);
        let usage = place.usage().expect("readable");
        assert_eq!(usage.pids, vec![10, 11]);
        assert_eq!(usage.cpu, None);
        // A combined cpu,cpuacct mount keeps them beside the cpu files.
        fs::write(cpu.join("cpuacct.usage_user"), "1500000000\n").unwrap();
        fs::write(cpu.join("cpuacct.usage_sys"), "250000000\n").unwrap();
        assert_eq!(place.usage().expect("readable").cpu, Some((1.5, 0.25)));
        // A cpu.stat without the split keys gives no totals either.
        let odd = temp_dir("v2odd");
        fs::write(odd.join("cgroup.procs"), "").unwrap();
        fs::write(odd.join("cpu.stat"), "usage_usec 9\n").unwrap();
        let usage = CgroupPlace::V2(odd.clone()).usage().expect("readable");
        assert_eq!((usage.pids.len(), usage.cpu), (0, None));
        for dir in [memory, cpu, odd] {
            fs::remove_dir_all(dir).unwrap();
        }
    }
}
