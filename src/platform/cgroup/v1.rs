//! Per-run cgroups in the v1 hierarchies (older nodes, and hosts that
//! mount v2 only as an empty `unified` hierarchy). Each controller has a
//! hierarchy of its own; a run gets a directory in each one it needs,
//! under the daemon's own cgroup there:
//!
//! ```text
//! <root>/memory/<own>/cronstable/<12 hex>-<slug>/   memory.limit_in_bytes ...
//! <root>/cpu/<own>/cronstable/<12 hex>-<slug>/      cpu.cfs_quota_us, cpu.shares
//! <root>/pids/<own>/cronstable/<12 hex>-<slug>/     pids.max; every run joins it
//! ```
//!
//! v1 has neither `cgroup.kill` nor `memory.oom.group`. The kill is
//! SIGKILL to each listed process. For the memory cap the kernel's own OOM
//! killer is switched off in the run's cgroup and an eventfd reports the
//! OOM instead: the daemon then kills every process of the run, so the
//! run ends as a whole with SIGKILL, as under v2.

use super::fs::CgroupFs;
use super::join::CgroupJoin;
use super::run::{
    CgroupCapability, CgroupCaps, CgroupStats, Layout, LimitResource, RunCgroup, Shared,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The mechanism's name in records.
pub const MECHANISM: &str = "cgroup-v1";

/// The directory under the daemon's own cgroup that holds run cgroups.
pub const RUNS_DIR: &str = "cronstable";

const V1_HINT: &str = "Give cronstable writable memory, cpu and pids cgroup hierarchies (run it \
     as root on the host, or in a container with a writable cgroup mount), or boot the host \
     with the unified cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1)";

/// The v1 controller that caps each resource.
fn controller(resource: LimitResource) -> &'static str {
    match resource {
        LimitResource::Cpu => "cpu",
        LimitResource::Memory => "memory",
        LimitResource::Processes => "pids",
    }
}

/// Whether `root` holds v1 hierarchies (and is no v2 mount).
pub(super) fn detect(fs: &dyn CgroupFs, root: &Path) -> bool {
    !fs.exists(&root.join("cgroup.controllers"))
        && LimitResource::ALL
            .iter()
            .any(|r| fs.exists(&root.join(controller(*r)).join("cgroup.procs")))
}

/// One usable hierarchy: where the daemon's cgroup is in it.
#[derive(Debug, Clone)]
struct Hierarchy {
    controller: &'static str,
    /// The daemon's cgroup directory.
    own: PathBuf,
    /// Its path as `/proc/<pid>/cgroup` shows it.
    own_rel: String,
}

#[derive(Debug, Default)]
struct State {
    setup: Option<CgroupCapability>,
    hierarchies: Vec<Hierarchy>,
    fix_oom_adj: bool,
}

/// The v1 backend.
#[derive(Debug)]
pub(super) struct V1 {
    shared: Arc<Shared>,
    root: PathBuf,
    proc: PathBuf,
    state: Mutex<State>,
}

impl V1 {
    pub fn new(shared: Arc<Shared>, root: PathBuf, proc: PathBuf) -> V1 {
        V1 {
            shared,
            root,
            proc,
            state: Mutex::new(State::default()),
        }
    }

    fn fs(&self) -> &dyn CgroupFs {
        self.shared.fs.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read-only probe (or the setup's result once set up).
    pub fn capability(&self) -> CgroupCapability {
        if let Some(cap) = &self.lock().setup {
            return cap.clone();
        }
        self.probe().0
    }

    fn probe(&self) -> (CgroupCapability, Vec<Hierarchy>) {
        let own = self
            .fs()
            .read(&self.proc.join("self/cgroup"))
            .unwrap_or_default();
        let mut found = Vec::new();
        let mut reasons = Vec::new();
        for resource in LimitResource::ALL {
            match self.hierarchy(resource, &own) {
                Ok(h) => found.push((resource, h)),
                Err(reason) => reasons.push(reason),
            }
        }
        let resources: BTreeSet<LimitResource> = found.iter().map(|(r, _)| *r).collect();
        let cap = CgroupCapability {
            available: !resources.is_empty(),
            mechanism: Some(MECHANISM),
            resources,
            reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
            hint: (!reasons.is_empty()).then(|| V1_HINT.to_owned()),
        };
        (cap, found.into_iter().map(|(_, h)| h).collect())
    }

    /// The daemon's cgroup in `resource`'s hierarchy, or why it is unusable.
    fn hierarchy(&self, resource: LimitResource, own: &str) -> Result<Hierarchy, String> {
        let fs = self.fs();
        let name = controller(resource);
        let mount = self.root.join(name);
        if !fs.exists(&mount.join("cgroup.procs")) {
            return Err(format!(
                "no cgroup v1 hierarchy for the {name} controller is mounted at {}",
                mount.display()
            ));
        }
        let rel = own
            .lines()
            .find_map(|line| {
                let mut fields = line.splitn(3, ':');
                let (_, names, rel) = (fields.next()?, fields.next()?, fields.next()?);
                names
                    .split(',')
                    .any(|c| c == name)
                    .then(|| rel.trim().to_owned())
            })
            .ok_or_else(|| format!("cannot find this process's {name} cgroup"))?;
        if rel.split('/').any(|p| p == "..") {
            return Err(format!("cannot find this process's {name} cgroup"));
        }
        // Without a cgroup namespace a container sees its own cgroup as
        // the mount's root while /proc names the host's path.
        let nested = mount.join(rel.trim_start_matches('/'));
        let dir = if fs.exists(&nested) { nested } else { mount };
        if !fs.writable(&dir) {
            return Err(format!(
                "cgroup {} is not writable (a read-only cgroup mount, or not delegated to \
                 cronstable)",
                dir.display()
            ));
        }
        Ok(Hierarchy {
            controller: name,
            own: dir,
            own_rel: rel.trim_end_matches('/').to_owned(),
        })
    }

    /// Makes the runs directory in each usable hierarchy, once (again with
    /// `retry` when a resource was left out), and removes the empty run
    /// cgroups an earlier daemon left.
    pub fn setup(&self, retry: bool) -> CgroupCapability {
        let mut state = self.lock();
        if let Some(done) = &state.setup {
            if !(retry && done.incomplete()) {
                return done.clone();
            }
        }
        let (mut cap, found) = self.probe();
        if !cap.available {
            return cap;
        }
        let mut usable = Vec::new();
        let mut reasons: Vec<String> = cap.reason.iter().cloned().collect();
        for h in found {
            let runs = h.own.join(RUNS_DIR);
            match self.fs().mkdir(&runs) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    reasons.push(format!(
                        "could not create cgroup {}: {}",
                        runs.display(),
                        super::errno_text(&e)
                    ));
                    let resource = LimitResource::ALL
                        .into_iter()
                        .find(|r| controller(*r) == h.controller);
                    if let Some(r) = resource {
                        cap.resources.remove(&r);
                    }
                    continue;
                }
            }
            self.shared.sweep(&runs);
            usable.push(h);
        }
        cap.available = !cap.resources.is_empty();
        cap.reason = (!reasons.is_empty()).then(|| reasons.join("; "));
        cap.hint = cap.reason.as_ref().map(|_| V1_HINT.to_owned());
        // pids first: it holds every process of a run (the one killed and
        // listed), then memory, then cpu.
        usable.sort_by_key(|h| match h.controller {
            "pids" => 0,
            "memory" => 1,
            _ => 2,
        });
        state.hierarchies = usable;
        state.fix_oom_adj = self
            .fs()
            .read(&self.proc.join("self/oom_score_adj"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
            == Some(-1000);
        state.setup = Some(cap.clone());
        cap
    }

    /// Makes one run's cgroups and writes its caps. Never fails: what
    /// could not be made or written is unenforced.
    pub fn create(&self, caps: &CgroupCaps, name: &str, nice: Option<i32>) -> RunCgroup {
        let state = self.lock();
        let hierarchies = state.hierarchies.clone();
        let fix_oom_adj = state.fix_oom_adj;
        drop(state);
        let configured = caps.configured();
        let mut unenforced: BTreeMap<LimitResource, String> = BTreeMap::new();
        let id = super::run_dir_name(name);
        let mut dirs: Vec<(&'static str, PathBuf, String)> = Vec::new();
        for h in &hierarchies {
            // A hierarchy no cap needs still tracks the run when it is the
            // first (pids): the kill and the member list read it.
            let needed = configured.iter().any(|r| controller(*r) == h.controller);
            if !(needed || dirs.is_empty() && h.controller == "pids") {
                continue;
            }
            let path = h.own.join(RUNS_DIR).join(&id);
            match self.fs().mkdir(&path) {
                Ok(()) => dirs.push((h.controller, path, format!("{}/{RUNS_DIR}/{id}", h.own_rel))),
                Err(e) => {
                    let reason = format!(
                        "could not create a cgroup in {}: {}",
                        h.own.join(RUNS_DIR).display(),
                        super::errno_text(&e)
                    );
                    for r in configured
                        .iter()
                        .filter(|r| controller(**r) == h.controller)
                    {
                        unenforced.insert(*r, reason.clone());
                    }
                }
            }
        }
        for r in &configured {
            if !dirs.iter().any(|(c, _, _)| *c == controller(*r)) {
                unenforced.entry(*r).or_insert_with(|| {
                    "no usable cgroup v1 hierarchy for the {} controller"
                        .replace("{}", controller(*r))
                });
            }
        }
        let mut oom = None;
        for (ctl, path, _) in &dirs {
            let resource = match *ctl {
                "cpu" => LimitResource::Cpu,
                "memory" => LimitResource::Memory,
                _ => LimitResource::Processes,
            };
            if !caps.has(resource) {
                continue;
            }
            let result = match resource {
                LimitResource::Cpu => self.write_cpu(path, caps.cpu.unwrap_or(1.0), nice),
                LimitResource::Memory => self
                    .write_memory(path, caps.memory.unwrap_or(u64::MAX))
                    .map(|watch| oom = watch),
                LimitResource::Processes => self
                    .fs()
                    .write(
                        &path.join("pids.max"),
                        &caps.processes.unwrap_or(0).to_string(),
                    )
                    .map_err(|e| format!("could not set pids.max: {}", super::errno_text(&e))),
            };
            if let Err(reason) = result {
                unenforced.insert(resource, reason);
            }
        }
        let applied: BTreeSet<LimitResource> = configured
            .iter()
            .copied()
            .filter(|r| !unenforced.contains_key(r))
            .collect();
        let oom_adj = fix_oom_adj && applied.contains(&LimitResource::Memory);
        let procs: io::Result<Vec<_>> = dirs
            .iter()
            .map(|(_, p, _)| self.fs().open_write(&p.join("cgroup.procs")))
            .collect();
        let layout = if dirs.is_empty() {
            Layout::Nowhere
        } else {
            Layout::V1 { dirs, oom }
        };
        let nowhere = matches!(layout, Layout::Nowhere);
        let mut run = RunCgroup::new(
            Arc::clone(&self.shared),
            layout,
            self.proc.clone(),
            applied,
            unenforced,
            None,
        );
        if !nowhere {
            match procs.and_then(|fds| CgroupJoin::new(fds, oom_adj)) {
                Ok(join) => run.join = Some(join),
                Err(e) => run.lost(&format!(
                    "could not open cgroup.procs: {}",
                    super::errno_text(&e)
                )),
            }
        }
        run
    }

    fn write_cpu(&self, path: &Path, cpus: f64, nice: Option<i32>) -> Result<(), String> {
        let max = super::v2::cpu_max(cpus);
        let mut parts = max.split_whitespace();
        let (quota, period) = (
            parts.next().unwrap_or("max"),
            parts.next().unwrap_or("100000"),
        );
        for (file, value) in [("cpu.cfs_period_us", period), ("cpu.cfs_quota_us", quota)] {
            if let Err(e) = self.fs().write(&path.join(file), value) {
                let _ = self.fs().write(&path.join("cpu.cfs_quota_us"), "-1");
                return Err(format!("could not set {file}: {}", super::errno_text(&e)));
            }
        }
        // The run's cgroup is a CPU group of its own: its share follows
        // the run's nice, as the kernel weighs a thread of that nice.
        let nice = nice.unwrap_or_else(super::own_nice);
        let _ = self
            .fs()
            .write(&path.join("cpu.shares"), &nice_weight(nice).to_string());
        Ok(())
    }

    /// Writes the memory cap with swap off, and swaps the kernel's OOM
    /// kill for the daemon's whole-run kill where the OOM event can be
    /// watched.
    fn write_memory(&self, path: &Path, bytes: u64) -> Result<Option<OomWatch>, String> {
        let limit = super::page_floor(bytes).to_string();
        let mut files = vec!["memory.limit_in_bytes"];
        // Present with swap accounting; it must not go below the limit.
        if self.fs().exists(&path.join("memory.memsw.limit_in_bytes")) {
            files.push("memory.memsw.limit_in_bytes");
        }
        for (index, file) in files.iter().enumerate() {
            if let Err(e) = self.fs().write(&path.join(file), &limit) {
                for written in files[..index].iter().rev() {
                    let _ = self.fs().write(&path.join(written), "-1");
                }
                return Err(format!("could not set {file}: {}", super::errno_text(&e)));
            }
        }
        let Ok(watch) = OomWatch::register(self.fs(), path) else {
            // The kernel's killer stays on: it ends the largest process.
            return Ok(None);
        };
        match self.fs().write(&path.join("memory.oom_control"), "1") {
            Ok(()) => Ok(Some(watch)),
            Err(_) => Ok(None),
        }
    }
}

/// The kernel's weight of a thread at `nice` (its `sched_prio_to_weight`
/// table): v2's `cpu.weight.nice` uses it, and v1's `cpu.shares` takes
/// the weight itself (1024 at nice 0).
pub(super) fn nice_weight(nice: i32) -> u32 {
    const WEIGHTS: [u32; 40] = [
        88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100,
        4904, 3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172,
        137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
    ];
    WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// An eventfd the kernel signals when the run's memory cgroup is out of
/// memory (`cgroup.event_control` on `memory.oom_control`), registered
/// with the runtime's reactor.
#[derive(Debug)]
pub(super) struct OomWatch {
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
}

impl OomWatch {
    #[cfg(target_os = "linux")]
    fn register(fs: &dyn CgroupFs, memory: &Path) -> io::Result<OomWatch> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // Registration needs the runtime's reactor (the daemon has one).
        tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::from(io::ErrorKind::Unsupported))?;
        // SAFETY: eventfd takes plain integers and returns a new fd.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just returned to us.
        let event = unsafe { OwnedFd::from_raw_fd(raw) };
        let control = std::fs::File::open(memory.join("memory.oom_control"))?;
        fs.write(
            &memory.join("cgroup.event_control"),
            &format!("{} {}", event.as_raw_fd(), control.as_raw_fd()),
        )?;
        // The kernel holds its own reference to the watched file now.
        drop(control);
        // SAFETY: an OwnedFd keeps its descriptor open and unchanged until
        // the AsyncFd that owns it is dropped.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(event, tokio::io::Interest::READABLE)
        }?;
        Ok(OomWatch { fd })
    }

    #[cfg(not(target_os = "linux"))]
    fn register(_fs: &dyn CgroupFs, _memory: &Path) -> io::Result<OomWatch> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    /// Resolves once the cgroup at `memory` is under OOM. The event also
    /// fires when the cgroup is removed; that one never resolves.
    pub async fn fired(&self, shared: &Shared, memory: &Path) {
        use std::os::fd::AsRawFd;
        loop {
            let Ok(mut ready) = self.fd.readable().await else {
                return std::future::pending().await;
            };
            let mut count = [0u8; 8];
            // SAFETY: a non-blocking read of the eventfd's 8-byte counter.
            unsafe { libc::read(self.fd.get_ref().as_raw_fd(), count.as_mut_ptr().cast(), 8) };
            ready.clear_ready();
            let control = shared.keyed(&memory.join("memory.oom_control"));
            if control.get("under_oom").copied() == Some(1) {
                return;
            }
            if !shared.fs.exists(memory) {
                return std::future::pending().await;
            }
        }
    }
}

/// The counters of a finished run's v1 cgroups.
pub(super) fn read_stats(run: &RunCgroup) -> CgroupStats {
    let mut stats = CgroupStats::default();
    let Layout::V1 { dirs, .. } = &run.layout else {
        return stats;
    };
    if !run.contained() {
        return stats;
    }
    let shared = &run.shared;
    let dir = |name: &str| dirs.iter().find(|(c, _, _)| *c == name).map(|(_, p, _)| p);
    let active = |r: LimitResource| run.applied.contains(&r) && !run.unenforced.contains_key(&r);
    if let Some(memory) = dir("memory") {
        if active(LimitResource::Memory) {
            let control = shared.keyed(&memory.join("memory.oom_control"));
            stats.memory_exceeded = run.oom_killed.load(Ordering::SeqCst)
                || control.get("oom_kill").is_some_and(|n| *n > 0);
        }
        stats.peak_memory_bytes = shared.number(&memory.join("memory.max_usage_in_bytes"));
    }
    if let (Some(cpu), true) = (dir("cpu"), active(LimitResource::Cpu)) {
        stats.cpu_throttled_seconds = shared
            .keyed(&cpu.join("cpu.stat"))
            .get("throttled_time")
            .map(|ns| *ns as f64 / 1e9);
    }
    if let (Some(pids), true) = (dir("pids"), active(LimitResource::Processes)) {
        stats.process_limit_hits = shared.keyed(&pids.join("pids.events")).get("max").copied();
    }
    stats
}
