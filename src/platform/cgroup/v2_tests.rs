//! The v2 backend against a model of the kernel's cgroupfs in a temporary
//! directory: `mkdir` makes a cgroup with the interface files its parent's
//! controllers give it, `cgroup.procs` moves a pid, `subtree_control`
//! refuses a populated cgroup (the no-internal-processes rule), and
//! `rmdir` refuses a busy one.

use super::fs::CgroupFs;
use super::run::NOT_MOVED;
use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
struct Model {
    read_only: BTreeSet<PathBuf>,
    /// File name -> errno its writes fail with.
    failing: BTreeMap<String, i32>,
    /// Pids that never leave their cgroup (an exiting process).
    stuck: BTreeSet<i32>,
    killed: Vec<i32>,
    writes: Vec<(PathBuf, String)>,
    /// systemd did not mark the cgroup delegated (`trusted.delegate`).
    undelegated: bool,
    /// Cgroups made a moment ago.
    young: BTreeSet<PathBuf>,
}

#[derive(Debug)]
struct ModelFs {
    root: PathBuf,
    model: Mutex<Model>,
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

impl ModelFs {
    fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().unwrap()
    }

    fn put(&self, path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    /// Every cgroup directory under the mount.
    fn cgroups(&self, dir: &Path, out: &mut Vec<PathBuf>) {
        out.push(dir.to_path_buf());
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                self.cgroups(&entry.path(), out);
            }
        }
    }

    fn procs(&self, dir: &Path) -> Vec<i32> {
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    fn set_procs(&self, dir: &Path, pids: &[i32]) {
        let text: String = pids.iter().map(|p| format!("{p}\n")).collect();
        self.put(&dir.join("cgroup.procs"), &text);
    }

    fn enabled(&self, dir: &Path) -> BTreeSet<String> {
        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

impl CgroupFs for ModelFs {
    fn read(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn write(&self, path: &Path, data: &str) -> io::Result<()> {
        if !path.is_file() {
            return Err(errno(libc::ENOENT));
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(code) = self.model().failing.get(&name) {
            return Err(errno(*code));
        }
        self.model()
            .writes
            .push((path.to_path_buf(), data.to_owned()));
        let dir = path.parent().unwrap();
        match name.as_str() {
            "cgroup.procs" => {
                let pid: i32 = data.trim().parse().map_err(|_| errno(libc::EINVAL))?;
                if self.model().stuck.contains(&pid) {
                    return Ok(());
                }
                let mut all = Vec::new();
                self.cgroups(&self.root, &mut all);
                for cg in all {
                    let left: Vec<i32> =
                        self.procs(&cg).into_iter().filter(|p| *p != pid).collect();
                    self.set_procs(&cg, &left);
                }
                let mut here = self.procs(dir);
                here.push(pid);
                self.set_procs(dir, &here);
            }
            "cgroup.subtree_control" => {
                let mut enabled = self.enabled(dir);
                for word in data.split_whitespace() {
                    if let Some(c) = word.strip_prefix('+') {
                        if dir != self.root && !self.procs(dir).is_empty() {
                            return Err(errno(libc::EBUSY));
                        }
                        enabled.insert(c.to_owned());
                    } else if let Some(c) = word.strip_prefix('-') {
                        enabled.remove(c);
                    }
                }
                let text: Vec<String> = enabled.into_iter().collect();
                self.put(path, &text.join(" "));
            }
            _ => self.put(path, data),
        }
        Ok(())
    }

    fn mkdir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)?;
        let parent = path.parent().unwrap();
        let offered = self.enabled(parent);
        let mut files = vec![
            ("cgroup.procs", String::new()),
            ("cgroup.subtree_control", String::new()),
            ("cgroup.type", "domain\n".into()),
            ("cgroup.kill", String::new()),
            (
                "cgroup.controllers",
                offered.iter().cloned().collect::<Vec<_>>().join(" "),
            ),
        ];
        if offered.contains("memory") {
            files.push(("memory.max", "max\n".into()));
            files.push(("memory.swap.max", "max\n".into()));
            files.push(("memory.oom.group", "0\n".into()));
            files.push((
                "memory.events",
                "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n".into(),
            ));
            files.push(("memory.peak", "0\n".into()));
        }
        if offered.contains("cpu") {
            files.push(("cpu.max", "max 100000\n".into()));
            files.push(("cpu.weight.nice", "0\n".into()));
            files.push(("cpu.stat", "usage_usec 0\nthrottled_usec 0\n".into()));
        }
        if offered.contains("pids") {
            files.push(("pids.max", "max\n".into()));
            files.push(("pids.events", "max 0\n".into()));
        }
        for (name, text) in files {
            self.put(&path.join(name), &text);
        }
        Ok(())
    }

    fn rmdir(&self, path: &Path) -> io::Result<()> {
        if !path.is_dir() {
            return Err(errno(libc::ENOENT));
        }
        let busy = !self.procs(path).is_empty()
            || std::fs::read_dir(path)?
                .flatten()
                .any(|e| e.file_type().is_ok_and(|t| t.is_dir()));
        if busy {
            return Err(errno(libc::EBUSY));
        }
        std::fs::remove_dir_all(path)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn writable(&self, path: &Path) -> bool {
        !self.model().read_only.contains(path)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        Ok(std::fs::read_dir(path)?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect())
    }

    fn xattr(&self, _path: &Path, name: &str) -> io::Result<Vec<u8>> {
        if name == "trusted.delegate" && !self.model().undelegated {
            return Ok(b"1".to_vec());
        }
        Err(errno(libc::ENODATA))
    }

    fn open_write(&self, path: &Path) -> io::Result<OwnedFd> {
        Ok(std::fs::OpenOptions::new().write(true).open(path)?.into())
    }

    fn kill(&self, pid: i32) -> io::Result<()> {
        self.model().killed.push(pid);
        Ok(())
    }

    fn age(&self, path: &Path) -> Option<std::time::Duration> {
        let young = self.model().young.contains(path);
        Some(std::time::Duration::from_secs(if young { 1 } else { 3600 }))
    }
}

/// A v2 mount with the daemon (pid 100) and a sidecar (101) in `/svc`,
/// the memory, pids and cpu controllers offered to it.
struct Host {
    _dir: tempfile::TempDir,
    root: PathBuf,
    proc: PathBuf,
    fs: Arc<ModelFs>,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cgroup");
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        let fs = Arc::new(ModelFs {
            root: root.clone(),
            model: Mutex::new(Model::default()),
        });
        fs.put(&root.join("cgroup.controllers"), "cpu memory pids io");
        fs.put(&root.join("cgroup.subtree_control"), "cpu memory pids");
        fs.put(&root.join("cgroup.procs"), "1\n");
        fs.mkdir(&root.join("svc")).unwrap();
        fs.set_procs(&root.join("svc"), &[100, 101]);
        fs.put(&proc.join("self/cgroup"), "0::/svc\n");
        fs.put(&proc.join("self/oom_score_adj"), "-1000\n");
        Host {
            _dir: dir,
            root,
            proc,
            fs,
        }
    }

    fn backend(&self) -> CgroupBackend {
        CgroupBackend::new(
            Arc::clone(&self.fs) as Arc<dyn CgroupFs>,
            self.root.clone(),
            self.proc.clone(),
        )
    }

    fn base(&self) -> PathBuf {
        self.root.join("svc")
    }

    fn read(&self, path: &Path) -> String {
        std::fs::read_to_string(path).unwrap().trim().to_owned()
    }
}

/// The setup rounds pause between tries; not in tests.
fn quick(backend: &mut CgroupBackend) {
    if let Kind::V2(v2) = &mut backend.kind {
        v2.sleep = |_| {};
    }
}

const ALL: [LimitResource; 3] = LimitResource::ALL;

#[test]
fn a_root_without_a_v2_mount_or_v1_hierarchies_caps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let backend = CgroupBackend::new(
        Arc::new(RealCgroupFs),
        dir.path().to_path_buf(),
        PathBuf::from("/proc"),
    );
    let cap = backend.setup(true);
    assert!(!cap.available);
    assert_eq!(
        cap.reason.unwrap(),
        format!(
            "no cgroup v2 hierarchy is mounted at {}",
            dir.path().display()
        )
    );
    let run = backend.create(
        &CgroupCaps {
            memory: Some(1 << 20),
            ..Default::default()
        },
        "j",
        None,
    );
    assert!(run.applied.is_empty());
    assert_eq!(run.unenforced.len(), 1);
    assert!(run.join_step(false).is_none());
}

#[test]
fn the_probe_says_why_a_cgroup_is_not_usable() {
    // In the root cgroup itself.
    let host = Host::new();
    host.fs.put(&host.proc.join("self/cgroup"), "0::/\n");
    let cap = host.backend().capability();
    assert_eq!(
        cap.reason.as_deref(),
        Some("cronstable runs in the root cgroup")
    );
    // Read-only, as a Kubernetes container's cgroup usually is.
    let host = Host::new();
    host.fs.model().read_only.insert(host.base());
    let cap = host.backend().setup(true);
    assert!(!cap.available);
    assert_eq!(
        cap.reason.unwrap(),
        format!(
            "cgroup {0} is not delegated to cronstable ({0} is not writable)",
            host.base().display()
        )
    );
    assert!(cap.hint.unwrap().contains("writable cgroup namespace"));
    // A root daemon in a cgroup systemd did not delegate to it (only as
    // root: for another user, owning the files is the delegation).
    if unsafe { libc::geteuid() } == 0 {
        let host = Host::new();
        host.fs.model().undelegated = true;
        assert_eq!(
            host.backend().capability().reason.unwrap(),
            format!(
                "cgroup {} is not delegated to cronstable (it has no trusted.delegate or \
                 user.delegate attribute)",
                host.base().display()
            )
        );
    }
    // No controller offered at all, then only some.
    let host = Host::new();
    host.fs.put(&host.base().join("cgroup.controllers"), "io");
    let cap = host.backend().capability();
    assert_eq!(
        cap.reason.unwrap(),
        format!(
            "cgroup {} offers none of the cpu, memory, and pids controllers",
            host.base().display()
        )
    );
    host.fs
        .put(&host.base().join("cgroup.controllers"), "memory");
    let cap = host.backend().capability();
    assert!(cap.available);
    assert_eq!(cap.resources, BTreeSet::from([LimitResource::Memory]));
    assert_eq!(
        cap.reason.unwrap(),
        format!(
            "cgroup {} does not offer the pids controller; the cpu controller is not delegated \
             to cronstable",
            host.base().display()
        )
    );
}

#[test]
fn the_cpu_hint_names_the_systemd_unit() {
    assert!(
        v2::cpu_hint(Path::new("/sys/fs/cgroup/system.slice/cron.service")).starts_with(
            "To cap CPU, run systemctl edit cron and add Delegate=yes under [Service]"
        )
    );
    assert!(v2::cpu_hint(Path::new(
        "/sys/fs/cgroup/user.slice/user@1000.service/app.slice/cron.service"
    ))
    .contains("systemctl --user edit cron"));
    assert!(v2::cpu_hint(Path::new("/sys/fs/cgroup/kubepods/pod1")).starts_with("Delegate"));
}

#[test]
fn setup_moves_the_daemon_into_its_leaf_and_enables_memory_and_pids() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    let cap = backend.setup(false);
    assert!(cap.available, "{cap:?}");
    assert_eq!(cap.resources, ALL.into_iter().collect());
    let base = host.base();
    assert_eq!(host.fs.procs(&base), Vec::<i32>::new());
    assert_eq!(host.fs.procs(&base.join("daemon")), vec![100, 101]);
    let on = |dir: &Path| host.fs.enabled(dir);
    assert_eq!(on(&base), BTreeSet::from(["memory".into(), "pids".into()]));
    assert_eq!(on(&base.join("runs")), on(&base));
    assert!(!backend.weighting(), "cpu stays off until a job caps CPU");
    // The daemon's slice (for /node) is the base, runs included.
    let own = v2::own_dir(host.fs.as_ref(), &host.root, "0::/svc/daemon\n");
    assert_eq!(own, Some(base.clone()));
    // A second setup is the first one's result.
    let writes = host.fs.model().writes.len();
    backend.setup(false);
    assert_eq!(host.fs.model().writes.len(), writes);
}

#[test]
fn a_process_that_cannot_move_fails_the_setup_by_name() {
    let host = Host::new();
    host.fs.model().stuck.insert(101);
    let mut backend = host.backend();
    quick(&mut backend);
    let cap = backend.setup(false);
    assert!(!cap.available);
    assert_eq!(
        cap.reason.unwrap(),
        format!(
            "could not set up cgroup {}: process 101 in it could not be moved (it may be exiting)",
            host.base().display()
        )
    );
    assert_eq!(
        cap.hint, None,
        "a process that cannot move is no delegation problem"
    );
}

#[test]
fn a_capped_run_gets_a_cgroup_of_its_own_with_its_caps() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    backend.set_cpu(true);
    assert!(backend.weighting());
    let caps = CgroupCaps {
        cpu: Some(0.5),
        memory: Some((64 << 20) + 100),
        processes: Some(10),
    };
    let run = backend.create(&caps, "nightly backup/2", Some(10));
    let Some(CgroupPlace::V2(path)) = run.place() else {
        panic!("no v2 place: {run:?}");
    };
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(path.parent(), Some(host.base().join("runs").as_path()));
    let (hex, slug) = name.split_at(12);
    assert!(hex.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    assert_eq!(slug, "-nightly_backup_2");
    assert_eq!(host.read(&path.join("cpu.max")), "50000 100000");
    assert_eq!(
        host.read(&path.join("memory.max")),
        (64u64 << 20).to_string()
    );
    assert_eq!(host.read(&path.join("memory.swap.max")), "0");
    assert_eq!(host.read(&path.join("memory.oom.group")), "1");
    assert_eq!(host.read(&path.join("pids.max")), "10");
    assert_eq!(host.read(&path.join("cpu.weight.nice")), "10");
    assert_eq!(run.applied, ALL.into_iter().collect());
    assert!(run.unenforced.is_empty());
    assert!(run.join_step(true).is_some());
    // The quota stays within the kernel's bounds.
    assert_eq!(v2::cpu_max(0.001), "1000 100000");
    assert_eq!(v2::cpu_max(2.0), "200000 100000");
}

#[test]
fn a_cap_that_cannot_be_written_is_lifted_again_and_left_unenforced() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    host.fs
        .model()
        .failing
        .insert("memory.swap.max".into(), libc::EACCES);
    let caps = CgroupCaps {
        memory: Some(64 << 20),
        processes: Some(5),
        ..Default::default()
    };
    let run = backend.create(&caps, "j", None);
    assert_eq!(
        run.unenforced,
        BTreeMap::from([(
            LimitResource::Memory,
            "could not set memory.swap.max: Permission denied".to_owned()
        )])
    );
    assert_eq!(run.applied, BTreeSet::from([LimitResource::Processes]));
    let Some(CgroupPlace::V2(path)) = run.place() else {
        panic!()
    };
    assert_eq!(host.read(&path.join("memory.max")), "max", "rolled back");
    // Without cpu control, an uncapped cgroup would have no weight to hold.
    let bare = backend.create(&CgroupCaps::default(), "j", None);
    assert_eq!(
        bare.weight_problem.as_deref(),
        Some("the cpu controller is off")
    );
}

#[test]
fn attach_confirms_the_child_is_inside_and_a_required_run_outside_is_killed() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    let caps = CgroupCaps {
        memory: Some(64 << 20),
        ..Default::default()
    };
    let mut run = backend.create(&caps, "j", None);
    let Some(CgroupPlace::V2(path)) = run.place() else {
        panic!()
    };
    let rel = path.strip_prefix(&host.root).unwrap().display().to_string();
    std::fs::create_dir_all(host.proc.join("77")).unwrap();
    host.fs.put(&host.proc.join("77/stat"), "77 (sh) S 1 77 77");
    host.fs
        .put(&host.proc.join("77/cgroup"), &format!("0::/{rel}/sub\n"));
    assert_eq!(
        run.attach(77, true),
        None,
        "a child cgroup of the run's counts"
    );
    assert!(run.unenforced.is_empty());

    let mut outside = backend.create(&caps, "j", None);
    host.fs
        .put(&host.proc.join("77/cgroup"), "0::/svc/daemon\n");
    assert_eq!(outside.attach(77, true).as_deref(), Some(NOT_MOVED));
    assert_eq!(host.fs.model().killed, vec![77]);
    assert_eq!(outside.unenforced[&LimitResource::Memory], NOT_MOVED);
    assert!(outside.place().is_none());
    // An exited child shows no cgroup: the marker is trusted.
    let mut exited = backend.create(&caps, "j", None);
    host.fs.put(&host.proc.join("77/stat"), "77 (sh) Z 1 77 77");
    assert_eq!(exited.attach(77, true), None);
}

#[test]
fn kill_uses_cgroup_kill_and_lists_processes_where_the_kernel_has_none() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    let caps = CgroupCaps {
        processes: Some(5),
        ..Default::default()
    };
    let mut run = backend.create(&caps, "j", None);
    assert_eq!(run.attach(4242, false), None, "no /proc entry: trusted");
    let Some(CgroupPlace::V2(path)) = run.place() else {
        panic!()
    };
    assert!(run.kill());
    assert_eq!(host.read(&path.join("cgroup.kill")), "1");
    assert!(host.fs.model().killed.is_empty());
    // Before Linux 5.14: every listed process gets SIGKILL, and the caller
    // signals the group as well.
    std::fs::remove_file(path.join("cgroup.kill")).unwrap();
    host.fs.set_procs(&path, &[501, 502]);
    host.fs
        .model()
        .failing
        .insert("cgroup.procs".into(), libc::EPERM);
    assert!(!run.kill());
    let killed = host.fs.model().killed.clone();
    assert!(killed.starts_with(&[501, 502]), "{killed:?}");
}

#[test]
fn finish_reads_the_counters_then_removes_the_cgroup_or_queues_it() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    backend.set_cpu(true);
    let caps = CgroupCaps {
        cpu: Some(1.0),
        memory: Some(64 << 20),
        processes: Some(10),
    };
    let mut run = backend.create(&caps, "j", None);
    run.attach(4242, false);
    let Some(CgroupPlace::V2(path)) = run.place() else {
        panic!()
    };
    host.fs
        .put(&path.join("memory.events"), "max 9\noom 1\noom_kill 1\n");
    host.fs.put(&path.join("memory.peak"), "67108864\n");
    host.fs.put(
        &path.join("cpu.stat"),
        "usage_usec 9\nthrottled_usec 250000\n",
    );
    host.fs.put(&path.join("pids.events"), "max 3\n");
    host.fs.set_procs(&path, &[600]);
    let stats = run.finish();
    assert_eq!(
        stats,
        CgroupStats {
            memory_exceeded: true,
            process_limit_hits: Some(3),
            peak_memory_bytes: Some(64 << 20),
            cpu_throttled_seconds: Some(0.25),
        }
    );
    assert_eq!(run.finish(), stats, "idempotent");
    // A process still inside keeps the cgroup until it leaves.
    assert!(path.exists());
    assert_eq!(backend.pending(), vec![path.clone()]);
    host.fs.set_procs(&path, &[]);
    backend.collect();
    assert!(!path.exists());
    assert!(backend.pending().is_empty());
    // The config no longer caps CPU and no run has a CPU cap: cpu goes off.
    backend.set_cpu(false);
    assert!(!backend.weighting());
    assert!(!host.fs.enabled(&host.base()).contains("cpu"));
}

#[test]
fn a_host_wide_oom_is_not_the_runs_cap() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    let caps = CgroupCaps {
        memory: Some(64 << 20),
        ..Default::default()
    };
    let mut run = backend.create(&caps, "j", None);
    run.attach(4242, false);
    let Some(CgroupPlace::V2(path)) = run.place() else {
        panic!()
    };
    // oom_kill without oom: the kernel's global OOM killer chose it.
    host.fs
        .put(&path.join("memory.events"), "oom 0\noom_kill 1\n");
    assert!(!run.finish().memory_exceeded);
}

#[test]
fn cpu_stays_on_while_a_run_has_a_cpu_cap() {
    let host = Host::new();
    let mut backend = host.backend();
    quick(&mut backend);
    backend.setup(false);
    let caps = CgroupCaps {
        cpu: Some(0.5),
        ..Default::default()
    };
    // A run with a CPU cap turns cpu on by itself.
    let mut run = backend.create(&caps, "j", Some(5));
    assert!(backend.weighting());
    backend.set_cpu(false);
    assert!(backend.weighting(), "the live run keeps its cap");
    // While cpu is on, an uncapped run gets a cgroup for its weight.
    let weight = backend.create(&CgroupCaps::default(), "k", Some(19));
    assert_eq!(weight.weight_problem, None);
    let Some(CgroupPlace::V2(path)) = weight.place() else {
        panic!()
    };
    assert_eq!(host.read(&path.join("cpu.weight.nice")), "19");
    run.finish();
    backend.collect();
    assert!(!backend.weighting(), "the last CPU cap ended");
}

#[test]
fn setup_removes_old_empty_run_cgroups_only() {
    let host = Host::new();
    let runs = host.base().join("runs");
    host.fs.mkdir(&runs).unwrap();
    for name in ["old-empty", "old-busy", "young-empty"] {
        host.fs.mkdir(&runs.join(name)).unwrap();
    }
    host.fs.set_procs(&runs.join("old-busy"), &[300]);
    host.fs.model().young.insert(runs.join("young-empty"));
    let mut backend = host.backend();
    quick(&mut backend);
    assert!(backend.setup(false).available);
    assert!(!runs.join("old-empty").exists());
    assert!(runs.join("old-busy").exists(), "another daemon's run");
    assert!(
        runs.join("young-empty").exists(),
        "another daemon's child may join it yet"
    );
}
