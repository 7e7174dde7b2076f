//! Per-run cgroups in the unified (v2) hierarchy, under the daemon's
//! delegated cgroup `base`:
//!
//! ```text
//! base/                 +memory +pids, and +cpu while a run may cap CPU
//!   daemon/             the daemon and every process that was in base
//!   runs/               the same controllers as base
//!     <12 hex>-<slug>/  one per capped run (and per run while +cpu is on)
//! ```
//!
//! The cpu controller makes each cgroup below it a CPU group of its own,
//! where nice orders only the threads inside one group. So it is on only
//! while some job caps CPU (or a run with a CPU cap is still going), and
//! meanwhile every run gets a cgroup whose `cpu.weight.nice` carries the
//! run's nice: the priority weighting.

use super::fs::CgroupFs;
use super::join::CgroupJoin;
use super::run::{
    CgroupCapability, CgroupCaps, CgroupStats, Layout, LimitResource, RunCgroup, Shared,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod cpu;

/// The mechanism's name in records.
pub const MECHANISM: &str = "cgroup-v2";

/// The daemon's own leaf under `base`.
pub const DAEMON_LEAF: &str = "daemon";
/// Where run cgroups go under `base`.
pub const RUNS_DIR: &str = "runs";

/// Rounds of "move every process out, then enable the controllers": a
/// process that arrives in between, or an exiting one that cannot move,
/// makes the enable fail with EBUSY. The pause starts at 5 ms and doubles
/// up to 0.5 s, about 2 s in all.
const SETUP_ROUNDS: usize = 11;
const SETUP_PAUSE: Duration = Duration::from_millis(5);
const SETUP_PAUSE_MAX: Duration = Duration::from_millis(500);

/// `cpu.max` period, and the kernel's quota floor and ceiling.
const PERIOD_USEC: u64 = 100_000;
const MIN_QUOTA_USEC: u64 = 1000;
const MAX_QUOTA_USEC: u64 = (1 << 44) - 1;

const WEIGHT_OFF: &str = "the cpu controller is off";
const DELEGATE_HINT: &str = "Run cronstable in a delegated cgroup: Delegate= on its systemd unit \
     (the packaged unit sets Delegate=memory pids), or a container with a writable cgroup \
     namespace";
/// The hint when no v2 hierarchy is mounted.
pub const V2_HINT: &str =
    "Boot the host with the unified cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1)";
const CONTROLLER_HINT: &str = "Delegate the memory and pids controllers to cronstable's cgroup";
const CPU_HINT: &str = "Delegate the cpu controller to cronstable's cgroup, for example with \
     Delegate=yes on its systemd unit";
const CPU_NOT_DELEGATED: &str = "the cpu controller is not delegated to cronstable";

/// The controller that caps each resource.
fn controller(resource: LimitResource) -> &'static str {
    match resource {
        LimitResource::Cpu => "cpu",
        LimitResource::Memory => "memory",
        LimitResource::Processes => "pids",
    }
}

fn describe(err: &io::Error) -> String {
    super::errno_text(err)
}

fn unavailable(reason: String, hint: Option<&str>) -> CgroupCapability {
    CgroupCapability::unavailable(Some(MECHANISM), reason, hint)
}

/// How to delegate the cpu controller to the cgroup `base`: a systemd
/// unit gets the exact command.
pub(super) fn cpu_hint(base: &Path) -> String {
    let parts: Vec<String> = base
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let Some(unit) = parts.last() else {
        return CPU_HINT.into();
    };
    let Some(name) = unit.strip_suffix(".service") else {
        return CPU_HINT.into();
    };
    let user = parts[..parts.len() - 1]
        .iter()
        .any(|p| p.starts_with("user@") && p.ends_with(".service"));
    format!(
        "To cap CPU, run systemctl {}edit {name} and add Delegate=yes under [Service]; that \
         makes {name} a CPU group of its own among the {} services",
        if user { "--user " } else { "" },
        if user { "user's" } else { "system's" }
    )
}

/// A process's cgroup directory from the `0::` line of its
/// `/proc/<pid>/cgroup` text; a daemon leaf with a runs sibling stands
/// for its parent (the daemon's slice includes its runs).
pub(super) fn own_dir(fs: &dyn CgroupFs, root: &Path, proc_cgroup: &str) -> Option<PathBuf> {
    let rel = proc_cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let rel = rel.trim().trim_start_matches('/');
    if rel.split('/').any(|p| p == "..") {
        return None;
    }
    let path = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    if !fs.exists(&path) {
        return None;
    }
    match path.parent() {
        Some(parent)
            if path != root
                && path.file_name().is_some_and(|n| n == DAEMON_LEAF)
                && fs.exists(&parent.join(RUNS_DIR)) =>
        {
            Some(parent.to_path_buf())
        }
        _ => Some(path),
    }
}

/// What changes after setup, under one lock.
#[derive(Debug, Default)]
struct State {
    setup: Option<CgroupCapability>,
    base: Option<PathBuf>,
    fix_oom_adj: bool,
    scoped_pids_events: bool,
    /// base's subtree_control holds cpu.
    cpu_base: bool,
    /// Why the last attempt to turn cpu on failed.
    cpu_failure: Option<String>,
    /// The config wants cpu off; it goes off once no run caps CPU.
    cpu_unwanted: bool,
}

/// The v2 backend.
#[derive(Debug)]
pub(super) struct V2 {
    shared: Arc<Shared>,
    root: PathBuf,
    proc: PathBuf,
    state: Mutex<State>,
    /// runs/ enables cpu: every run gets a cgroup weighted by its nice.
    weighting: AtomicBool,
    /// Pauses between setup rounds (tests pass a no-op).
    pub(super) sleep: fn(Duration),
}

impl V2 {
    pub fn new(shared: Arc<Shared>, root: PathBuf, proc: PathBuf) -> V2 {
        V2 {
            shared,
            root,
            proc,
            state: Mutex::new(State::default()),
            weighting: AtomicBool::new(false),
            sleep: std::thread::sleep,
        }
    }

    fn fs(&self) -> &dyn CgroupFs {
        self.shared.fs.as_ref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn weighting(&self) -> bool {
        self.weighting.load(Ordering::SeqCst)
    }

    /// Read-only probe of what this process's cgroup allows.
    pub fn capability(&self) -> CgroupCapability {
        let state = self.lock();
        if state.setup.is_some() {
            return current(&state);
        }
        drop(state);
        self.probe().0
    }

    fn probe(&self) -> (CgroupCapability, Option<PathBuf>) {
        let fs = self.fs();
        let root = &self.root;
        let own = fs
            .read(&self.proc.join("self/cgroup"))
            .ok()
            .and_then(|text| own_dir(fs, root, &text));
        let Some(base) = own else {
            let reason = format!("cannot find this process's cgroup under {}", root.display());
            return (unavailable(reason, Some(DELEGATE_HINT)), None);
        };
        let ns_root = base == *root;
        if ns_root && !fs.exists(&base.join("cgroup.type")) {
            // The real root has no cgroup.type; a namespace root does.
            let reason = "cronstable runs in the root cgroup".to_owned();
            return (unavailable(reason, Some(DELEGATE_HINT)), None);
        }
        if let Some(gap) = self.delegation_gap(&base, ns_root) {
            return (unavailable(gap, Some(DELEGATE_HINT)), None);
        }
        (self.resources(&base), Some(base))
    }

    fn delegation_gap(&self, base: &Path, ns_root: bool) -> Option<String> {
        let fs = self.fs();
        for path in [
            base.to_path_buf(),
            base.join("cgroup.procs"),
            base.join("cgroup.subtree_control"),
        ] {
            if !fs.writable(&path) {
                return Some(format!(
                    "cgroup {} is not delegated to cronstable ({} is not writable)",
                    base.display(),
                    path.display()
                ));
            }
        }
        // SAFETY: geteuid takes nothing and cannot fail.
        if unsafe { libc::geteuid() } != 0 || ns_root {
            // Ownership is the delegation for a non-root daemon.
            return None;
        }
        let marked = ["trusted.delegate", "user.delegate"]
            .iter()
            .any(|name| fs.xattr(base, name).is_ok_and(|v| v == b"1"));
        if marked {
            return None;
        }
        // systemd strips controllers from undelegated units on reload.
        Some(format!(
            "cgroup {} is not delegated to cronstable (it has no trusted.delegate or \
             user.delegate attribute)",
            base.display()
        ))
    }

    fn resources(&self, base: &Path) -> CgroupCapability {
        let offered: BTreeSet<String> = self
            .fs()
            .read(&base.join("cgroup.controllers"))
            .map(|t| t.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        let resources: BTreeSet<LimitResource> = LimitResource::ALL
            .into_iter()
            .filter(|r| offered.contains(controller(*r)))
            .collect();
        if resources.is_empty() {
            let reason = format!(
                "cgroup {} offers none of the cpu, memory, and pids controllers",
                base.display()
            );
            return unavailable(reason, Some(CONTROLLER_HINT));
        }
        let mut reasons = Vec::new();
        let mut hints = Vec::new();
        let missing: Vec<&str> = [LimitResource::Memory, LimitResource::Processes]
            .into_iter()
            .filter(|r| !resources.contains(r))
            .map(controller)
            .collect();
        if !missing.is_empty() {
            reasons.push(format!(
                "cgroup {} does not offer the {} controller{}",
                base.display(),
                missing.join(" and "),
                if missing.len() > 1 { "s" } else { "" }
            ));
            hints.push(CONTROLLER_HINT.to_owned());
        }
        if !resources.contains(&LimitResource::Cpu) {
            reasons.push(CPU_NOT_DELEGATED.to_owned());
            hints.push(cpu_hint(base));
        }
        CgroupCapability {
            available: true,
            mechanism: Some(MECHANISM),
            resources,
            reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
            hint: (!hints.is_empty()).then(|| hints.join(". ")),
        }
    }

    /// Builds the layout once; a failed setup runs again on the next call,
    /// and `retry` repeats one that left a resource out. It enables the
    /// memory and pids controllers; [`V2::set_cpu`] turns cpu on and off.
    pub fn setup(&self, retry: bool) -> CgroupCapability {
        let mut state = self.lock();
        if let Some(done) = &state.setup {
            if !(retry && done.incomplete()) {
                return current(&state);
            }
        }
        let (cap, base) = self.probe();
        let Some(base) = base.filter(|_| cap.available) else {
            return cap;
        };
        let controllers: Vec<&str> = cap
            .resources
            .iter()
            .filter(|r| **r != LimitResource::Cpu)
            .map(|r| controller(*r))
            .collect();
        if let Err((err, stuck)) = self.build_layout(&base, &controllers) {
            let reason = format!("could not set up cgroup {}: {err}", base.display());
            return unavailable(reason, (!stuck).then_some(DELEGATE_HINT));
        }
        let runs = base.join(RUNS_DIR);
        state.cpu_base = self.enabled(&base).contains("cpu");
        self.weighting
            .store(self.enabled(&runs).contains("cpu"), Ordering::SeqCst);
        self.shared.sweep(&runs);
        state.fix_oom_adj = self
            .fs()
            .read(&self.proc.join("self/oom_score_adj"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
            == Some(-1000);
        state.scoped_pids_events = self.pids_events_scoped(&runs);
        state.base = Some(base);
        state.setup = Some(cap);
        current(&state)
    }

    fn build_layout(&self, base: &Path, controllers: &[&str]) -> Result<(), (String, bool)> {
        let daemon = base.join(DAEMON_LEAF);
        let runs = base.join(RUNS_DIR);
        for dir in [&daemon, &runs] {
            match self.fs().mkdir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err((describe(&e), false)),
            }
        }
        self.evacuate(base, &daemon, controllers)?;
        self.enable(&runs, controllers)
            .map_err(|e| (describe(&e), false))
    }

    /// Moves every process in `base` to `daemon` (a container's init and
    /// leftover jobs included), then enables `controllers` in `base`. An
    /// exiting process cannot move but counts until it is gone, so each
    /// new round waits longer.
    fn evacuate(
        &self,
        base: &Path,
        daemon: &Path,
        controllers: &[&str],
    ) -> Result<(), (String, bool)> {
        let procs = daemon.join("cgroup.procs");
        let mut pause = SETUP_PAUSE;
        let mut before: Vec<i32> = Vec::new();
        let mut left: Vec<i32> = Vec::new();
        let mut last = String::from("Device or resource busy");
        for round in 0..SETUP_ROUNDS {
            if round > 0 {
                (self.sleep)(pause);
                pause = (pause * 2).min(SETUP_PAUSE_MAX);
            }
            before = std::mem::take(&mut left);
            left = self.shared.pids(base).map_err(|e| (describe(&e), false))?;
            left.sort_unstable();
            for pid in &left {
                // A process that exited meanwhile is ESRCH: nothing to move.
                let _ = self.fs().write(&procs, &pid.to_string());
            }
            match self.enable(base, controllers) {
                Ok(()) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => last = describe(&e),
                Err(e) => return Err((describe(&e), false)),
            }
        }
        if !left.is_empty() && left == before {
            let listed: Vec<String> = left.iter().map(i32::to_string).collect();
            let many = left.len() > 1;
            return Err((
                format!(
                    "process{} {} in it could not be moved ({} may be exiting)",
                    if many { "es" } else { "" },
                    listed.join(", "),
                    if many { "they" } else { "it" }
                ),
                true,
            ));
        }
        if !left.is_empty() {
            return Err(("processes keep arriving in it".into(), false));
        }
        Err((last, false))
    }

    /// Whether `pids.events` counts only limits at or below its cgroup
    /// (Linux 6.11 scoped it and added `pids.events.local`; the
    /// `pids_localevents` mount option keeps the old counting).
    fn pids_events_scoped(&self, runs: &Path) -> bool {
        if !self.fs().exists(&runs.join("pids.events.local")) {
            return false;
        }
        let Ok(mounts) = self.fs().read(&self.proc.join("self/mountinfo")) else {
            return true;
        };
        !mounts.lines().any(|line| {
            let Some((_, rest)) = line.split_once(" - ") else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() >= 3
                && fields[0] == "cgroup2"
                && fields[2].split(',').any(|o| o == "pids_localevents")
        })
    }

    fn enabled(&self, path: &Path) -> BTreeSet<String> {
        self.fs()
            .read(&path.join("cgroup.subtree_control"))
            .map(|t| t.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Enables the missing controllers in one write: a lone threaded
    /// controller (cpu, pids) enabled on a populated cgroup would turn it
    /// into a threaded domain that can never take memory.
    fn enable(&self, path: &Path, controllers: &[&str]) -> io::Result<()> {
        let enabled = self.enabled(path);
        let missing: Vec<String> = controllers
            .iter()
            .filter(|c| !enabled.contains(**c))
            .map(|c| format!("+{c}"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        self.fs()
            .write(&path.join("cgroup.subtree_control"), &missing.join(" "))
    }

    /// Makes one run's cgroup and writes its caps. Never fails: a cap that
    /// could not be written is unenforced, and a weight that does not
    /// apply is the cgroup's `weight_problem`.
    pub fn create(&self, caps: &CgroupCaps, name: &str, nice: Option<i32>) -> RunCgroup {
        let mut state = self.lock();
        if caps.cpu.is_some() {
            self.cpu_up(&mut state, false);
        }
        let configured = caps.configured();
        let nowhere = |reason: String| {
            RunCgroup::new(
                Arc::clone(&self.shared),
                Layout::Nowhere,
                self.proc.clone(),
                BTreeSet::new(),
                configured.iter().map(|r| (*r, reason.clone())).collect(),
                configured.is_empty().then(|| reason.clone()),
            )
        };
        let Some(base) = state.base.clone() else {
            return nowhere("the cgroup layout is not set up".into());
        };
        let runs = base.join(RUNS_DIR);
        let path = runs.join(super::run_dir_name(name));
        if let Err(e) = self.fs().mkdir(&path) {
            return nowhere(format!(
                "could not create a cgroup in {}: {}",
                runs.display(),
                describe(&e)
            ));
        }
        // Before weighting is read, so a cpu_on from here on weighs it.
        self.shared.go_live(&path, nice);
        let fix_oom_adj = state.fix_oom_adj;
        let scoped = state.scoped_pids_events;
        drop(state);
        let mut unenforced = BTreeMap::new();
        for (resource, writes) in cap_writes(self.fs(), caps, &path) {
            if let Some(failure) = write_cap(self.fs(), &path, &writes) {
                unenforced.insert(resource, failure);
            }
        }
        let weight = if self.weighting() {
            self.write_weight(&path, nice)
        } else if configured.is_empty() {
            Some(WEIGHT_OFF.to_owned())
        } else {
            None
        };
        let applied: BTreeSet<LimitResource> = configured
            .iter()
            .copied()
            .filter(|r| !unenforced.contains_key(r))
            .collect();
        let oom_adj = fix_oom_adj && applied.contains(&LimitResource::Memory);
        let layout = Layout::V2 {
            path: path.clone(),
            root: self.root.clone(),
            scoped_pids_events: scoped,
        };
        let mut run = RunCgroup::new(
            Arc::clone(&self.shared),
            layout,
            self.proc.clone(),
            applied,
            unenforced,
            weight,
        );
        match self
            .fs()
            .open_write(&path.join("cgroup.procs"))
            .and_then(|fd| CgroupJoin::new(vec![fd], oom_adj))
        {
            Ok(join) => run.join = Some(join),
            Err(e) => run.lost(&format!("could not open cgroup.procs: {}", describe(&e))),
        }
        run
    }
}

/// The setup's capability, less cpu when turning it on failed.
fn current(state: &State) -> CgroupCapability {
    let Some(cap) = &state.setup else {
        return unavailable("the cgroup layout is not set up".into(), None);
    };
    let Some(failure) = &state.cpu_failure else {
        return cap.clone();
    };
    let mut cap = cap.clone();
    cap.resources.remove(&LimitResource::Cpu);
    cap.reason = Some(match cap.reason {
        None => failure.clone(),
        Some(reason) => format!("{reason}; {failure}"),
    });
    cap
}

/// The files each cap writes, in order.
fn cap_writes(
    fs: &dyn CgroupFs,
    caps: &CgroupCaps,
    path: &Path,
) -> Vec<(LimitResource, Vec<(&'static str, String)>)> {
    let mut out = Vec::new();
    if let Some(cpu) = caps.cpu {
        out.push((LimitResource::Cpu, vec![("cpu.max", cpu_max(cpu))]));
    }
    if let Some(memory) = caps.memory {
        let mut writes = vec![("memory.max", super::page_floor(memory).to_string())];
        // Absent when swap accounting is off; the cap applies anyway.
        if fs.exists(&path.join("memory.swap.max")) {
            writes.push(("memory.swap.max", "0".into()));
        }
        // The whole run ends at the cap, not one of its processes.
        writes.push(("memory.oom.group", "1".into()));
        out.push((LimitResource::Memory, writes));
    }
    if let Some(processes) = caps.processes {
        out.push((
            LimitResource::Processes,
            vec![("pids.max", processes.to_string())],
        ));
    }
    out
}

/// `cpu.max` for `cpus`: quota and period, the quota within the kernel's
/// bounds.
pub(super) fn cpu_max(cpus: f64) -> String {
    let quota = (cpus * PERIOD_USEC as f64).round() as u64;
    format!(
        "{} {PERIOD_USEC}",
        quota.clamp(MIN_QUOTA_USEC, MAX_QUOTA_USEC)
    )
}

/// Writes one resource's files; on a failure the files written before it
/// are lifted again, last first.
fn write_cap(fs: &dyn CgroupFs, path: &Path, writes: &[(&'static str, String)]) -> Option<String> {
    for (index, (file, value)) in writes.iter().enumerate() {
        if let Err(e) = fs.write(&path.join(file), value) {
            for (written, _) in writes[..index].iter().rev() {
                let lift = if *written == "memory.oom.group" {
                    "0"
                } else {
                    "max"
                };
                let _ = fs.write(&path.join(written), lift);
            }
            return Some(format!("could not set {file}: {}", describe(&e)));
        }
    }
    None
}

/// The counters of a finished run's v2 cgroup.
pub(super) fn read_stats(run: &RunCgroup) -> CgroupStats {
    let mut stats = CgroupStats::default();
    let Layout::V2 {
        path,
        scoped_pids_events,
        ..
    } = &run.layout
    else {
        return stats;
    };
    if !run.contained() {
        return stats;
    }
    let shared = &run.shared;
    let active = |r: LimitResource| run.applied.contains(&r) && !run.unenforced.contains_key(&r);
    if active(LimitResource::Memory) {
        let events = shared.keyed(&path.join("memory.events"));
        let count = |k: &str| events.get(k).copied().unwrap_or(0);
        // "oom" counts this cgroup's own limit; the kill counters also
        // count kills by a host-wide OOM.
        stats.memory_exceeded =
            count("oom") > 0 && (count("oom_kill") > 0 || count("oom_group_kill") > 0);
    }
    stats.peak_memory_bytes = shared.number(&path.join("memory.peak"));
    if active(LimitResource::Cpu) {
        stats.cpu_throttled_seconds = shared
            .keyed(&path.join("cpu.stat"))
            .get("throttled_usec")
            .map(|us| *us as f64 / 1e6);
    }
    if active(LimitResource::Processes) {
        let mut hits = shared.keyed(&path.join("pids.events")).get("max").copied();
        if hits.is_some_and(|h| h > 0) && !scoped_pids_events {
            // Before 6.11 the count includes forks a limit above the run
            // (such as TasksMax) refused: trust it only if the run reached
            // its own cap (`pids.peak`, 6.1).
            let peak = shared.number(&path.join("pids.peak"));
            let cap = shared.number(&path.join("pids.max"));
            if matches!((peak, cap), (Some(p), Some(c)) if p < c) {
                hits = Some(0);
            }
        }
        stats.process_limit_hits = hits;
    }
    stats
}
