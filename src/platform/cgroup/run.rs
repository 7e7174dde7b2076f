//! The types the per-run backends share: what can be capped, what a host
//! can cap, a run's cgroup with its kill and counters, and the removal
//! queue for cgroups that were still busy when their run ended.

use super::fs::CgroupFs;
use super::join::CgroupJoin;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A resource a run can be capped on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LimitResource {
    /// CPU time per period.
    Cpu,
    /// Memory, swap off.
    Memory,
    /// Processes and threads at once.
    Processes,
}

impl LimitResource {
    /// Every resource, in record order.
    pub const ALL: [LimitResource; 3] = [
        LimitResource::Cpu,
        LimitResource::Memory,
        LimitResource::Processes,
    ];

    /// The resource's name in records and messages.
    pub fn name(self) -> &'static str {
        match self {
            LimitResource::Cpu => "cpu",
            LimitResource::Memory => "memory",
            LimitResource::Processes => "processes",
        }
    }
}

/// The caps one run's cgroup gets; `None` is uncapped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgroupCaps {
    /// CPUs.
    pub cpu: Option<f64>,
    /// Bytes.
    pub memory: Option<u64>,
    /// Processes and threads.
    pub processes: Option<u64>,
}

impl CgroupCaps {
    /// Whether `resource` is capped.
    pub fn has(&self, resource: LimitResource) -> bool {
        match resource {
            LimitResource::Cpu => self.cpu.is_some(),
            LimitResource::Memory => self.memory.is_some(),
            LimitResource::Processes => self.processes.is_some(),
        }
    }

    /// The capped resources, in record order.
    pub fn configured(&self) -> Vec<LimitResource> {
        LimitResource::ALL
            .into_iter()
            .filter(|r| self.has(*r))
            .collect()
    }
}

/// What this host can cap, and why not (or why only partly).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CgroupCapability {
    /// Some cap can apply.
    pub available: bool,
    /// `cgroup-v2` or `cgroup-v1`, when a hierarchy was found.
    pub mechanism: Option<&'static str>,
    /// The resources that can be capped.
    pub resources: BTreeSet<LimitResource>,
    /// Why some or all caps cannot apply.
    pub reason: Option<String>,
    /// What an operator can do about it.
    pub hint: Option<String>,
}

impl CgroupCapability {
    /// Nothing can be capped, for `reason`.
    pub fn unavailable(
        mechanism: Option<&'static str>,
        reason: String,
        hint: Option<&str>,
    ) -> CgroupCapability {
        CgroupCapability {
            available: false,
            mechanism,
            resources: BTreeSet::new(),
            reason: Some(reason),
            hint: hint.map(str::to_owned),
        }
    }

    /// Whether some resource cannot be capped.
    pub fn incomplete(&self) -> bool {
        !self.available || self.resources.len() < LimitResource::ALL.len()
    }
}

/// What the kernel recorded about a run's caps when it ended.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgroupStats {
    /// The memory cap ended the run (its processes were OOM-killed).
    pub memory_exceeded: bool,
    /// Forks the process cap refused.
    pub process_limit_hits: Option<u64>,
    /// The highest memory use the cap was measured on, bytes.
    pub peak_memory_bytes: Option<u64>,
    /// Time the CPU cap held the run back, seconds.
    pub cpu_throttled_seconds: Option<f64>,
}

/// Where a run's cgroup is, for readers of its usage (sampling).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupPlace {
    /// One directory in the unified hierarchy.
    V2(PathBuf),
    /// One directory per v1 hierarchy, by controller name (`memory`,
    /// `cpu`, `pids`).
    V1(Vec<(&'static str, PathBuf)>),
}

/// Cgroups to remove later and the runs in progress, shared by a backend
/// and the cgroups it made.
#[derive(Debug)]
pub(super) struct Shared {
    pub fs: Arc<dyn CgroupFs>,
    /// Run cgroups that were busy when their run ended.
    pending: Mutex<BTreeSet<PathBuf>>,
    /// This daemon's run cgroups whose runs are going, with each run's
    /// nice (v2 weighs them while the cpu controller is on).
    live: Mutex<BTreeMap<PathBuf, Option<i32>>>,
}

impl Shared {
    pub fn new(fs: Arc<dyn CgroupFs>) -> Shared {
        Shared {
            fs,
            pending: Mutex::new(BTreeSet::new()),
            live: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn go_live(&self, path: &Path, nice: Option<i32>) {
        if let Ok(mut live) = self.live.lock() {
            live.insert(path.to_path_buf(), nice);
        }
    }

    pub fn live(&self) -> Vec<(PathBuf, Option<i32>)> {
        self.live
            .lock()
            .map(|l| l.iter().map(|(p, n)| (p.clone(), *n)).collect())
            .unwrap_or_default()
    }

    pub fn pending(&self) -> BTreeSet<PathBuf> {
        self.pending.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Drops a run cgroup from the live runs once its run is over.
    fn forget(&self, path: &Path) {
        if let Ok(mut live) = self.live.lock() {
            live.remove(path);
        }
    }

    fn defer(&self, path: &Path) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(path.to_path_buf());
        }
    }

    /// Removes `path` and its child cgroups; false while one is busy.
    pub fn remove(&self, path: &Path) -> bool {
        match self.fs.rmdir(path) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::ENOTEMPTY)) => {}
            Err(_) => return false,
        }
        let Ok(children) = self.fs.subdirs(path) else {
            return false;
        };
        if children.is_empty() {
            return false;
        }
        children.iter().all(|c| self.remove(&path.join(c))) && self.remove(path)
    }

    /// Removes `path`, or queues it for [`Shared::collect`].
    fn remove_or_defer(&self, path: &Path) {
        if !self.remove(path) {
            self.defer(path);
        }
    }

    /// Removes the queued cgroups that no longer hold processes.
    pub fn collect(&self) {
        for path in self.pending() {
            if self.remove(&path) {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.remove(&path);
                }
            }
        }
    }

    /// Removes the empty run cgroups an earlier daemon left in `runs`. One
    /// with processes stays (it may be another cronstable's that shares
    /// this cgroup), and so does a young one: another daemon may have just
    /// made it for a child that has yet to join.
    pub fn sweep(&self, runs: &Path) {
        let Ok(names) = self.fs.subdirs(runs) else {
            return;
        };
        for name in names {
            let path = runs.join(name);
            let old = self.fs.age(&path).is_some_and(|age| age >= SWEEP_AGE);
            if old && self.tree_pids(&path).is_ok_and(|p| p.is_empty()) {
                self.remove(&path);
            }
        }
    }

    /// The pids listed in `path`'s `cgroup.procs`.
    pub fn pids(&self, path: &Path) -> io::Result<Vec<i32>> {
        let text = self.fs.read(&path.join("cgroup.procs"))?;
        Ok(text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect())
    }

    /// Pids in `path` and its child cgroups.
    pub fn tree_pids(&self, path: &Path) -> io::Result<Vec<i32>> {
        let mut pids = self.pids(path)?;
        for name in self.fs.subdirs(path)? {
            pids.extend(self.tree_pids(&path.join(name))?);
        }
        Ok(pids)
    }

    /// A flat keyed file (`key value` lines); empty when unreadable.
    pub fn keyed(&self, path: &Path) -> BTreeMap<String, u64> {
        let Ok(text) = self.fs.read(path) else {
            return BTreeMap::new();
        };
        text.lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let (key, value) = (parts.next()?, parts.next()?);
                if parts.next().is_some() {
                    return None;
                }
                Some((key.to_owned(), value.parse().ok()?))
            })
            .collect()
    }

    /// A file holding one number.
    pub fn number(&self, path: &Path) -> Option<u64> {
        self.fs.read(path).ok()?.trim().parse().ok()
    }

    /// Sends SIGKILL to every process listed in `path` (and its child
    /// cgroups), a few rounds in case some forked meanwhile.
    pub fn kill_listed(&self, path: &Path) {
        for _ in 0..KILL_ROUNDS {
            let pids = self.tree_pids(path).unwrap_or_default();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                let _ = self.fs.kill(pid);
            }
        }
    }
}

/// How old an empty run cgroup must be before a starting daemon removes
/// it as left over.
const SWEEP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Rounds of "kill every listed process" where the kernel has no
/// `cgroup.kill`: a process that forked between the read and its kill
/// leaves a child the next round finds.
const KILL_ROUNDS: usize = 8;

/// How a cgroup is laid out, per hierarchy version.
#[derive(Debug)]
pub(super) enum Layout {
    /// No cgroup could be made; every configured cap is unenforced.
    Nowhere,
    /// One unified-hierarchy directory.
    V2 {
        path: PathBuf,
        /// The hierarchy's mount, which `/proc/<pid>/cgroup` paths are
        /// relative to.
        root: PathBuf,
        /// `pids.events` counts only this cgroup's own limit.
        scoped_pids_events: bool,
    },
    /// One directory per v1 hierarchy (controller name, directory, its
    /// path as `/proc/<pid>/cgroup` shows it); the first holds every
    /// process of the run and is the one killed and listed.
    V1 {
        dirs: Vec<(&'static str, PathBuf, String)>,
        /// Readable on an OOM in the memory cgroup (the kernel's own
        /// OOM kill is off there: the daemon kills the whole run, as v2's
        /// `memory.oom.group` does).
        oom: Option<super::v1::OomWatch>,
    },
}

/// One run's cgroup: its caps (or only its CPU weight), the join for its
/// child, its kill, and what the kernel counted.
#[derive(Debug)]
pub struct RunCgroup {
    pub(super) shared: Arc<Shared>,
    pub(super) layout: Layout,
    pub(super) proc: PathBuf,
    /// The resources whose cap is in place.
    pub applied: BTreeSet<LimitResource>,
    /// The configured resources whose cap did not apply, and why.
    pub unenforced: BTreeMap<LimitResource, String>,
    /// Why the run's CPU weight does not apply, if it does not.
    pub weight_problem: Option<String>,
    /// No caps: the cgroup is there for the CPU weight alone.
    weight_only: bool,
    pub(super) join: Option<CgroupJoin>,
    /// Whether the child is inside: unknown until [`RunCgroup::attach`].
    member: Option<bool>,
    /// The daemon ended the run for its memory cap (v1).
    pub(super) oom_killed: AtomicBool,
    stats: Option<CgroupStats>,
}

/// Why a child outside its cgroup has no caps.
pub const NOT_MOVED: &str = "could not move the job into its cgroup";

impl RunCgroup {
    pub(super) fn new(
        shared: Arc<Shared>,
        layout: Layout,
        proc: PathBuf,
        applied: BTreeSet<LimitResource>,
        unenforced: BTreeMap<LimitResource, String>,
        weight_problem: Option<String>,
    ) -> RunCgroup {
        let weight_only = applied.is_empty() && unenforced.is_empty();
        RunCgroup {
            shared,
            layout,
            proc,
            applied,
            unenforced,
            weight_problem,
            weight_only,
            join: None,
            member: None,
            oom_killed: AtomicBool::new(false),
            stats: None,
        }
    }

    /// Records that the job is outside the cgroup: nothing there applies.
    pub(super) fn lost(&mut self, reason: &str) {
        for resource in &self.applied {
            self.unenforced
                .entry(*resource)
                .or_insert_with(|| reason.to_owned());
        }
        if self.weight_only && self.weight_problem.is_none() {
            self.weight_problem = Some(reason.to_owned());
        }
    }

    /// What the child runs before exec to join, when it can.
    pub fn join_step(&self, required: bool) -> Option<super::join::JoinStep> {
        self.join.as_ref().map(|j| j.step(required))
    }

    /// Where the cgroup is, while the job is in it.
    pub fn place(&self) -> Option<CgroupPlace> {
        if self.member == Some(false) {
            return None;
        }
        match &self.layout {
            Layout::Nowhere => None,
            Layout::V2 { path, .. } => Some(CgroupPlace::V2(path.clone())),
            Layout::V1 { dirs, .. } => Some(CgroupPlace::V1(
                dirs.iter().map(|(c, p, _)| (*c, p.clone())).collect(),
            )),
        }
    }

    /// The directory that holds every process of the run.
    fn tracked(&self) -> Option<&Path> {
        match &self.layout {
            Layout::Nowhere => None,
            Layout::V2 { path, .. } => Some(path),
            Layout::V1 { dirs, .. } => dirs.first().map(|(_, p, _)| p.as_path()),
        }
    }

    /// After the spawn: confirms the child joined. `Ok(Some(reason))`
    /// refuses a required run (its child is killed first); a child outside
    /// an optional run's cgroup leaves every cap unenforced.
    pub fn attach(&mut self, pid: u32, required: bool) -> Option<String> {
        let joined = self.join.as_mut().is_some_and(CgroupJoin::settle);
        let member = joined && self.is_member(pid);
        self.member = Some(member);
        if member {
            return None;
        }
        if required {
            let _ = self.shared.fs.kill(pid as i32);
            self.lost(NOT_MOVED);
            return Some(NOT_MOVED.into());
        }
        self.lost(NOT_MOVED);
        None
    }

    /// Whether `/proc/<pid>/cgroup` puts the process in this cgroup (or a
    /// child cgroup of it). A process already gone counts as joined: its
    /// marker said so.
    fn is_member(&self, pid: u32) -> bool {
        let dir = self.proc.join(pid.to_string());
        // An exited (zombie) process no longer shows its cgroup: trust the
        // marker, as for one already gone.
        let zombie = self.shared.fs.read(&dir.join("stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .is_none_or(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
        });
        if zombie {
            return true;
        }
        let Ok(text) = self.shared.fs.read(&dir.join("cgroup")) else {
            return true;
        };
        let inside = |rel: &str, want: &str| {
            let rel = rel.trim().trim_end_matches('/');
            rel == want || rel.starts_with(&format!("{want}/"))
        };
        match &self.layout {
            Layout::Nowhere => false,
            Layout::V2 { path, root, .. } => text.lines().any(|line| {
                line.strip_prefix("0::").is_some_and(|rel| {
                    // Component-wise: a child cgroup the job made counts.
                    root.join(rel.trim().trim_start_matches('/'))
                        .starts_with(path)
                })
            }),
            Layout::V1 { dirs, .. } => dirs.iter().all(|(controller, _, want)| {
                text.lines().any(|line| {
                    let mut fields = line.splitn(3, ':');
                    let (_, names, rel) = (fields.next(), fields.next(), fields.next());
                    names.is_some_and(|n| n.split(',').any(|c| c == *controller))
                        // v1 shows an exiting process at "/": the
                        // marker is the word then.
                        && rel.is_some_and(|r| r.trim() == "/" || inside(r, want))
                })
            }),
        }
    }

    /// The pids in the run's cgroup, while the job is in it.
    pub fn members(&self) -> Option<Vec<u32>> {
        if self.member != Some(true) {
            return None;
        }
        let pids = self.shared.tree_pids(self.tracked()?).ok()?;
        Some(
            pids.into_iter()
                .filter_map(|p| u32::try_from(p).ok())
                .collect(),
        )
    }

    /// SIGKILL to everything in the cgroup. True when `cgroup.kill` did
    /// it; false where each listed process got SIGKILL instead (before
    /// Linux 5.14, and on v1) or the job was not inside: the caller then
    /// signals the process group as well.
    pub fn kill(&self) -> bool {
        if self.member == Some(false) {
            return false;
        }
        let Some(path) = self.tracked() else {
            return false;
        };
        if matches!(self.layout, Layout::V2 { .. }) {
            match self.shared.fs.write(&path.join("cgroup.kill"), "1") {
                Ok(()) => return self.member == Some(true),
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return true,
                Err(e) if e.kind() == io::ErrorKind::NotFound && !self.shared.fs.exists(path) => {
                    return true
                }
                Err(_) => {}
            }
        }
        self.shared.kill_listed(path);
        false
    }

    /// The memory watch of a v1 cgroup (see [`RunCgroup::oom_fired`]).
    pub fn has_oom_watch(&self) -> bool {
        matches!(&self.layout, Layout::V1 { oom: Some(_), .. })
    }

    /// Resolves when the run's processes hit the memory cap (v1 only;
    /// never elsewhere). The caller then calls [`RunCgroup::oom_kill`].
    pub async fn oom_fired(&self) {
        match &self.layout {
            Layout::V1 {
                oom: Some(watch),
                dirs,
            } => {
                let memory = dirs.iter().find(|(c, _, _)| *c == "memory");
                match memory {
                    Some((_, dir, _)) => watch.fired(&self.shared, dir).await,
                    None => std::future::pending().await,
                }
            }
            _ => std::future::pending().await,
        }
    }

    /// Ends every process of a run that hit its memory cap (v1), and
    /// remembers why for [`RunCgroup::finish`].
    pub fn oom_kill(&self) {
        self.oom_killed.store(true, Ordering::SeqCst);
        if let Some(path) = self.tracked() {
            self.shared.kill_listed(path);
        }
    }

    /// Whether the job joined and attach did not find it elsewhere.
    pub(super) fn contained(&self) -> bool {
        self.member == Some(true)
    }

    /// Reads the run's counters, then removes the cgroup (or queues it
    /// when still busy). Idempotent. May block briefly (`rmdir`).
    pub fn finish(&mut self) -> CgroupStats {
        if let Some(stats) = self.stats {
            return stats;
        }
        if let Some(join) = self.join.as_mut() {
            join.settle();
        }
        let stats = match &self.layout {
            Layout::Nowhere => CgroupStats::default(),
            Layout::V2 { .. } => super::v2::read_stats(self),
            Layout::V1 { .. } => super::v1::read_stats(self),
        };
        self.stats = Some(stats);
        self.release();
        stats
    }

    /// Releases the cgroup of a run that never spawned (or whose spawn
    /// failed): a child that failed its join leaves every applied cap
    /// unenforced.
    pub fn abort(&mut self) {
        if let Some(join) = self.join.as_mut() {
            if !join.settle() {
                self.lost(NOT_MOVED);
            }
        }
        if self.stats.is_none() {
            self.stats = Some(CgroupStats::default());
            self.release();
        }
    }

    fn release(&mut self) {
        let dirs: Vec<PathBuf> = match &self.layout {
            Layout::Nowhere => Vec::new(),
            Layout::V2 { path, .. } => vec![path.clone()],
            Layout::V1 { dirs, .. } => dirs.iter().map(|(_, p, _)| p.clone()).collect(),
        };
        if let Layout::V1 { oom, dirs } = &mut self.layout {
            if oom.take().is_some() {
                // Nobody watches the event any more: a process the run
                // left behind that reaches the cap must meet the kernel's
                // OOM killer, not wait for a kill that never comes.
                if let Some((_, memory, _)) = dirs.iter().find(|(c, _, _)| *c == "memory") {
                    let _ = self
                        .shared
                        .fs
                        .write(&memory.join("memory.oom_control"), "0");
                }
            }
        }
        for dir in dirs {
            self.shared.forget(&dir);
            self.shared.remove_or_defer(&dir);
        }
    }
}
