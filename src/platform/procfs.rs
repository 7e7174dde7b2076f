//! What `/proc` tells: the node's counters for `GET /node` and the
//! node-history sampler, the processes of a run's session for resource
//! monitoring, and the mount table.

use super::cgroup::{cgroup_cpu, cgroup_memory, cgroup_v2_dir};

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

// ---------------------------------------------------------------------
// A run's processes, for resource monitoring. One `/proc/<pid>/stat`
// read per process gives everything the sampler needs: the session it
// belongs to, its parent, its CPU times and those of the children it has
// waited for, and its resident set.
// ---------------------------------------------------------------------

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStat {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Session id (a run's child leads its own session: its pid).
    pub session: u32,
    /// Start time in clock ticks after boot: with the pid it names the
    /// process, so a reused pid reads as another process.
    pub start_ticks: u64,
    /// CPU seconds in user mode (all threads).
    pub user: f64,
    /// CPU seconds in kernel mode.
    pub system: f64,
    /// User-mode CPU seconds of the children it has waited for.
    pub children_user: f64,
    /// Kernel-mode CPU seconds of the children it has waited for.
    pub children_system: f64,
    /// Resident set size, bytes (0 for a zombie).
    pub rss_bytes: u64,
}

/// Parses one `/proc/<pid>/stat` line, `ticks` clock ticks a second and
/// `page` bytes a page. The command name may hold spaces and
/// parentheses, so fields are counted after its last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_process_stat(text: &str, ticks: f64, page: u64) -> Option<ProcessStat> {
    let open = text.find(" (")?;
    let pid: u32 = text[..open].trim().parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    // Fields 3.. of the file: state, ppid, pgrp, session, tty, tpgid,
    // flags, minflt, cminflt, majflt, cmajflt, utime (14), stime,
    // cutime, cstime, priority, nice, threads, itrealvalue, starttime
    // (22), vsize, rss (24).
    let fields: Vec<&str> = rest.split_whitespace().take(22).collect();
    if fields.len() < 22 || ticks <= 0.0 {
        return None;
    }
    let int = |i: usize| fields[i].parse::<i64>().ok();
    let secs = |i: usize| int(i).map(|t| t.max(0) as f64 / ticks);
    Some(ProcessStat {
        pid,
        ppid: fields[1].parse().ok()?,
        session: fields[3].parse().ok()?,
        start_ticks: fields[19].parse().ok()?,
        user: secs(11)?,
        system: secs(12)?,
        children_user: secs(13)?,
        children_system: secs(14)?,
        rss_bytes: u64::try_from(int(21)?.max(0)).ok()? * page,
    })
}

/// Clock ticks a second and bytes a page, as `/proc` counts them.
#[cfg(target_os = "linux")]
fn proc_units() -> (f64, u64) {
    // SAFETY: sysconf only reads configuration values.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (ticks.max(0) as f64, u64::try_from(page).unwrap_or(0))
}

/// Reads and parses `/proc/<pid>/stat` (`path` is scratch space); None
/// when the process is gone or unreadable. Three system calls: open, one
/// read into a buffer larger than any `stat` line, close (reading to the
/// end through `read_to_string` would add a size probe, a seek and a
/// second read to every file of every pass).
#[cfg(target_os = "linux")]
fn read_stat(pid: &str, path: &mut String, (ticks, page): (f64, u64)) -> Option<ProcessStat> {
    use std::io::Read;
    path.clear();
    path.push_str("/proc/");
    path.push_str(pid);
    path.push_str("/stat");
    let mut file = std::fs::File::open(&*path).ok()?;
    let mut buf = [0u8; 1024];
    let n = file.read(&mut buf).ok()?;
    if n < buf.len() {
        return parse_process_stat(&String::from_utf8_lossy(&buf[..n]), ticks, page);
    }
    // Longer than any line the kernel writes today: read the rest.
    let mut all = buf.to_vec();
    file.read_to_end(&mut all).ok()?;
    parse_process_stat(&String::from_utf8_lossy(&all), ticks, page)
}

/// Every process whose session `wanted` accepts, from one pass over
/// `/proc`; None when `/proc` cannot be listed. Processes that exit
/// during the pass are skipped.
///
/// A process's session is asked with `getsid` (one system call, which
/// Linux answers for any process) and only the processes of a wanted
/// session have their `stat` file read: opening and formatting a `stat`
/// file costs several times more, and most of a host's processes belong
/// to no run.
#[cfg(target_os = "linux")]
pub fn session_processes(wanted: impl Fn(u32) -> bool) -> Option<Vec<ProcessStat>> {
    let units = proc_units();
    let mut path = String::with_capacity(32);
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        let Ok(pid) = text.parse::<libc::pid_t>() else {
            continue;
        };
        // SAFETY: getsid takes a plain integer and touches no memory.
        let sid = unsafe { libc::getsid(pid) };
        if sid < 0 || !wanted(sid.unsigned_abs()) {
            continue;
        }
        // The file decides: a pid that exited and was reused in between
        // shows its new process's session there.
        if let Some(stat) = read_stat(text, &mut path, units) {
            if wanted(stat.session) {
                out.push(stat);
            }
        }
    }
    Some(out)
}

/// Without `/proc` there is no process table to read.
#[cfg(not(target_os = "linux"))]
pub fn session_processes(_wanted: impl Fn(u32) -> bool) -> Option<Vec<ProcessStat>> {
    None
}

/// One process's `/proc/<pid>/stat`, None when it is gone.
#[cfg(target_os = "linux")]
pub fn process_stat(pid: u32) -> Option<ProcessStat> {
    read_stat(&pid.to_string(), &mut String::new(), proc_units())
}

/// Without `/proc` no process can be read.
#[cfg(not(target_os = "linux"))]
pub fn process_stat(_pid: u32) -> Option<ProcessStat> {
    None
}

/// The filesystem type and mount options of the mount holding `path`
/// (from `/proc/mounts`), or None when it cannot be told.
#[cfg(target_os = "linux")]
pub fn mount_of(path: &std::path::Path) -> Option<(String, String)> {
    let path = std::fs::canonicalize(path).ok()?;
    let table = std::fs::read_to_string("/proc/mounts").ok()?;
    longest_mount(&table, &path)
}

/// The filesystem type and mount options of the mount holding `path`:
/// never known here (no mount table to read).
#[cfg(not(target_os = "linux"))]
pub fn mount_of(_path: &std::path::Path) -> Option<(String, String)> {
    None
}

/// The entry of a `/proc/mounts` text whose mount point is the longest
/// prefix of `path` (later entries win a tie: they are mounted on top).
fn longest_mount(table: &str, path: &std::path::Path) -> Option<(String, String)> {
    let mut best: Option<(usize, String, String)> = None;
    for line in table.lines() {
        let mut fields = line.split_whitespace();
        let (Some(_source), Some(point), Some(fstype), Some(options)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let point = unescape_mount_field(point);
        let point = std::path::Path::new(&point);
        if !path.starts_with(point) {
            continue;
        }
        let depth = point.components().count();
        if best.as_ref().is_none_or(|(d, _, _)| depth >= *d) {
            best = Some((depth, fstype.to_owned(), options.to_owned()));
        }
    }
    best.map(|(_, fstype, options)| (fstype, options))
}

/// Undoes the octal escapes (`\040` for a space) of a mount table field.
fn unescape_mount_field(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                if let Ok(value) = u8::try_from(value) {
                    out.push(value);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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
    fn reading_this_process_works_here() {
        if cfg!(target_os = "linux") {
            let r = node_reading().expect("linux has /proc");
            assert!(r.host_mem.1 > 0 && r.cpu_count > 0);
            assert!(r.proc_rss_bytes.unwrap_or(0) > 0);
        }
    }
}

#[cfg(test)]
mod process_stat_tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_times_session_and_resident_set() {
        // pid 4242, comm with a space and a parenthesis, ppid 7, session
        // 4200, utime 150 stime 50 cutime 300 cstime 100 ticks, start
        // 999, rss 25 pages.
        let line = "4242 (py (x) y) S 7 4242 4200 0 -1 4194560 10 0 0 0 150 50 300 100 20 0 1 0 999 1000000 25 18446744073709551615";
        let s = parse_process_stat(line, 100.0, 4096).expect("parses");
        assert_eq!(
            (s.pid, s.ppid, s.session, s.start_ticks),
            (4242, 7, 4200, 999)
        );
        assert_eq!((s.user, s.system), (1.5, 0.5));
        assert_eq!((s.children_user, s.children_system), (3.0, 1.0));
        assert_eq!(s.rss_bytes, 25 * 4096);
    }

    #[test]
    fn short_or_garbled_lines_are_refused() {
        assert_eq!(parse_process_stat("", 100.0, 4096), None);
        assert_eq!(parse_process_stat("12 (sh) S 1 2 3", 100.0, 4096), None);
        let bad_pid = "x (sh) S 7 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 1";
        assert_eq!(parse_process_stat(bad_pid, 100.0, 4096), None);
        let good = "12 (sh) S 7 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 1";
        assert!(parse_process_stat(good, 100.0, 4096).is_some());
        assert_eq!(parse_process_stat(good, 0.0, 4096), None, "no tick rate");
    }

    #[test]
    fn this_process_is_found_in_its_own_session() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let me = process_stat(std::process::id()).expect("linux has /proc");
        assert_eq!(me.pid, std::process::id());
        assert!(me.rss_bytes > 0);
        let mates = session_processes(|sid| sid == me.session).expect("listable");
        assert!(mates.iter().any(|p| p.pid == me.pid));
        assert!(mates.iter().all(|p| p.session == me.session));
    }
}

#[cfg(test)]
mod mount_table_tests {
    use super::*;

    #[test]
    fn the_deepest_mount_point_holding_the_path_wins() {
        let table = "/dev/sda1 / ext4 rw,relatime 0 0\n\
                     srv:/export /mnt/shared nfs4 rw,vers=4.2,local_lock=none 0 0\n\
                     tmpfs /mnt/shared\\040dir tmpfs rw 0 0\n";
        let path = std::path::Path::new("/mnt/shared/cronstable/default");
        assert_eq!(
            longest_mount(table, path),
            Some(("nfs4".to_owned(), "rw,vers=4.2,local_lock=none".to_owned()))
        );
        let spaced = std::path::Path::new("/mnt/shared dir/x");
        assert_eq!(
            longest_mount(table, spaced).map(|m| m.0),
            Some("tmpfs".to_owned())
        );
        let other = std::path::Path::new("/var/lib/x");
        assert_eq!(
            longest_mount(table, other).map(|m| m.0),
            Some("ext4".to_owned())
        );
    }
}
