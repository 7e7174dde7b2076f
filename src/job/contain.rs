//! A run's container: the cgroup a run with `resourceLimits` spawns into,
//! and the process-wide manager that sets the host's cgroups up once,
//! says (once per change) whether caps can be enforced, and logs each
//! distinct per-run failure once. The decisions are [`super::limits`]'s;
//! the file work is `platform::cgroup`'s.

use super::limits::{self, Action, LimitsRecord, Report, Unenforced};
use crate::config::limits::ResourceLimits;
use crate::config::JobConfig;
use crate::platform::{CgroupBackend, CgroupCapability, CgroupPlace, JoinStep, RunCgroup};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A prepare repeats a setup that left a resource out at most this often.
const SETUP_RETRY: Duration = Duration::from_secs(30);

/// Distinct per-run failures remembered for the once-only warning; the
/// set starts over when full.
const WARNED_MAX: usize = 256;

/// The process-wide view of the host's cgroups.
#[derive(Debug)]
pub struct Manager {
    backend: CgroupBackend,
    state: Mutex<State>,
    warned: Mutex<HashSet<String>>,
}

#[derive(Debug, Default)]
struct State {
    /// The setup's result and when it ran.
    setup: Option<(CgroupCapability, Instant)>,
    /// A read-only probe before any setup.
    probed: Option<CgroupCapability>,
    /// What the last converge report was about.
    logged: Option<(CgroupCapability, Vec<(String, String)>)>,
}

/// The manager over the host's cgroups, built on first use.
pub fn manager() -> &'static Manager {
    static MANAGER: OnceLock<Manager> = OnceLock::new();
    MANAGER.get_or_init(|| Manager::new(CgroupBackend::system()))
}

impl Manager {
    /// A manager over `backend`.
    pub fn new(backend: CgroupBackend) -> Manager {
        Manager {
            backend,
            state: Mutex::new(State::default()),
            warned: Mutex::new(HashSet::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What this host can cap (`GET /node`): the setup's result, or a
    /// cached read-only probe before any setup.
    pub fn capability(&self) -> CgroupCapability {
        let mut state = self.lock();
        if state.setup.is_some() {
            // Turning cpu on can fail after setup; ask the backend.
            return self.backend.capability();
        }
        state
            .probed
            .get_or_insert_with(|| self.backend.capability())
            .clone()
    }

    /// Sets the host up for the capped jobs of the config just applied
    /// and logs whether their caps can be enforced, once per change.
    /// Without capped jobs it only turns CPU control off, and before any
    /// setup it does nothing. Blocking file work: call it off the reactor.
    pub fn converge(&self, capped: &[(String, ResourceLimits)]) {
        let mut state = self.lock();
        if capped.is_empty() && state.setup.is_none() {
            return;
        }
        let want_cpu = capped.iter().any(|(_, caps)| caps.cpu.is_some());
        if capped.is_empty() {
            self.backend.set_cpu(false);
            return;
        }
        let cap = self.backend.setup(true);
        state.setup = Some((cap.clone(), Instant::now()));
        if cap.available {
            self.backend.set_cpu(want_cpu);
        }
        let cap = self.backend.capability();
        let key = (
            cap.clone(),
            capped
                .iter()
                .map(|(n, c)| (n.clone(), format!("{c:?}")))
                .collect::<Vec<_>>(),
        );
        if state.logged.as_ref() == Some(&key) {
            return;
        }
        state.logged = Some(key);
        match limits::converge_report(&cap, capped) {
            Report::Enforced(text) => tracing::info!(target: "cronstable::limits", "{text}"),
            Report::Unenforced(text) => tracing::warn!(target: "cronstable::limits", "{text}"),
        }
    }

    /// The capability for one run: sets the host up on first use and
    /// repeats a setup that left a resource out at most every
    /// [`SETUP_RETRY`].
    fn ready(&self) -> CgroupCapability {
        let mut state = self.lock();
        let retry = match &state.setup {
            None => true,
            Some((cap, at)) => cap.incomplete() && at.elapsed() >= SETUP_RETRY,
        };
        if retry {
            let cap = self.backend.setup(true);
            state.setup = Some((cap, Instant::now()));
        }
        self.backend.capability()
    }

    /// Logs `reason` the first time it comes up for any run.
    fn note_failure(&self, name: &str, reason: &str) {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.contains(reason) {
            return;
        }
        if warned.len() >= WARNED_MAX {
            warned.clear();
        }
        warned.insert(reason.to_owned());
        tracing::warn!(
            target: "cronstable::limits",
            "resource limits could not be applied to a run of {name}: {reason} (each distinct \
             failure is logged once)"
        );
    }

    /// The container of one run of `job`, or `None` when it needs none (no
    /// caps, and no CPU weighting). A refused run must not spawn.
    pub fn prepare(&'static self, job: &JobConfig) -> Option<RunLimits> {
        let name = format!("job {}", job.name);
        let nice = job.priority.nice();
        let Some(caps) = job.resource_limits else {
            if !self.backend.weighting() {
                return None;
            }
            // A cgroup for the run's CPU weight alone; where it cannot be
            // made the run goes ahead in the daemon's cgroup.
            let mut cgroup =
                self.backend
                    .create(&crate::platform::CgroupCaps::default(), &job.name, nice);
            if let Some(problem) = cgroup.weight_problem.clone() {
                tracing::debug!(
                    target: "cronstable::limits",
                    "the cpu weight of a run of {name} does not apply: {problem}"
                );
                cgroup.abort();
                self.backend.collect();
                return None;
            }
            return Some(RunLimits::new(
                None,
                name,
                Unenforced::new(),
                Some(cgroup),
                self,
            ));
        };
        let capability = self.ready();
        let plan = limits::plan(&caps, &capability, self.backend.weighting());
        let mut unenforced = plan.unenforced;
        let cgroup = match plan.action {
            Action::Refuse => {
                let mut run = RunLimits::new(Some(caps), name, unenforced, None, self);
                run.refused = true;
                return Some(run);
            }
            Action::RunBare => None,
            Action::Contain(applicable) => {
                let mut cgroup = self.backend.create(&applicable, &job.name, nice);
                for (resource, reason) in &cgroup.unenforced {
                    self.note_failure(&name, reason);
                    unenforced
                        .entry(*resource)
                        .or_insert_with(|| reason.clone());
                }
                let failed = !cgroup.unenforced.is_empty();
                if caps.required && failed {
                    cgroup.abort();
                    self.backend.collect();
                    let mut run = RunLimits::new(Some(caps), name, unenforced, None, self);
                    run.refused = true;
                    return Some(run);
                }
                if cgroup.applied.is_empty() && cgroup.weight_problem.is_some() {
                    // It was there for the weight alone, which failed too.
                    cgroup.abort();
                    self.backend.collect();
                    None
                } else {
                    Some(cgroup)
                }
            }
        };
        Some(RunLimits::new(Some(caps), name, unenforced, cgroup, self))
    }
}

/// One run's container, if any, and the record of its caps.
#[derive(Debug)]
pub struct RunLimits {
    /// `None` for a run without caps whose cgroup holds only its CPU
    /// weight: it has no limits record.
    caps: Option<ResourceLimits>,
    name: String,
    unenforced: Unenforced,
    cgroup: Option<RunCgroup>,
    mechanism: Option<&'static str>,
    refused: bool,
    final_record: Option<LimitsRecord>,
    manager: &'static Manager,
}

impl RunLimits {
    fn new(
        caps: Option<ResourceLimits>,
        name: String,
        unenforced: Unenforced,
        cgroup: Option<RunCgroup>,
        manager: &'static Manager,
    ) -> RunLimits {
        RunLimits {
            caps,
            name,
            unenforced,
            mechanism: cgroup.as_ref().and(manager.backend.mechanism()),
            cgroup,
            refused: false,
            final_record: None,
            manager,
        }
    }

    /// A required run whose caps cannot apply: it must not spawn (or, after
    /// [`RunLimits::attach`], its child was killed).
    pub fn refused(&self) -> bool {
        self.refused
    }

    /// What the child runs between fork and exec to join its cgroup.
    pub fn join_step(&self) -> Option<JoinStep> {
        let required = self.caps.is_some_and(|c| c.required);
        self.cgroup.as_ref()?.join_step(required)
    }

    /// Where the run's cgroup is, while the job is in it (for sampling).
    pub fn place(&self) -> Option<CgroupPlace> {
        self.cgroup.as_ref()?.place()
    }

    /// After the spawn: confirms the child joined. A required run whose
    /// child is outside is refused (the child is killed).
    pub fn attach(&mut self, pid: u32) {
        let required = self.caps.is_some_and(|c| c.required);
        let Some(cgroup) = self.cgroup.as_mut() else {
            return;
        };
        let refusal = cgroup.attach(pid, required);
        let failures: Vec<(crate::platform::LimitResource, String)> = cgroup
            .unenforced
            .iter()
            .map(|(r, s)| (*r, s.clone()))
            .collect();
        if self.caps.is_some() {
            for (resource, reason) in failures {
                self.manager.note_failure(&self.name, &reason);
                self.unenforced.entry(resource).or_insert(reason);
            }
        }
        if refusal.is_some() {
            self.refused = true;
        }
    }

    /// After a failed spawn: releases the cgroup. A required run whose
    /// child could not join (that fails the spawn) is refused.
    pub fn spawn_failed(&mut self) {
        let Some(cgroup) = self.cgroup.as_mut() else {
            return;
        };
        cgroup.abort();
        for (resource, reason) in &cgroup.unenforced {
            self.unenforced
                .entry(*resource)
                .or_insert_with(|| reason.clone());
        }
        if let Some(caps) = self.caps {
            let lost = limits::configured(&caps)
                .iter()
                .any(|r| self.unenforced.contains_key(r));
            if caps.required && lost {
                self.refused = true;
                let reasons: Vec<String> = cgroup.unenforced.values().cloned().collect();
                for reason in reasons {
                    self.manager.note_failure(&self.name, &reason);
                }
            }
        }
        self.manager.backend.collect();
    }

    /// SIGKILL to everything in the cgroup (the forced step of a cancel).
    /// True when that reached the whole run; the caller signals the
    /// process group as well either way.
    pub fn kill(&self) -> bool {
        self.cgroup.as_ref().is_some_and(RunCgroup::kill)
    }

    /// Resolves when the run's memory cap is hit and the daemon, not the
    /// kernel, is to end the run (cgroup v1); never otherwise.
    pub async fn oom_fired(&self) {
        match &self.cgroup {
            Some(cgroup) if cgroup.has_oom_watch() => cgroup.oom_fired().await,
            _ => std::future::pending().await,
        }
    }

    /// Ends every process of a run that hit its memory cap, at once and
    /// with no graceful step.
    pub fn oom_kill(&self) {
        if let Some(cgroup) = &self.cgroup {
            tracing::debug!(
                target: "cronstable::limits",
                "a run of {} reached its memory cap; killing it",
                self.name
            );
            cgroup.oom_kill();
        }
    }

    /// The record so far (final once the run is refused or finished);
    /// `None` for a run without caps.
    pub fn record(&self) -> Option<LimitsRecord> {
        if let Some(done) = &self.final_record {
            return Some(done.clone());
        }
        let caps = self.caps?;
        let contained = self.cgroup.is_some();
        Some(limits::record(
            &caps,
            &self.unenforced,
            contained,
            self.mechanism,
            self.refused,
            &Default::default(),
        ))
    }

    /// Reads the kernel's counters, releases the cgroup and returns the
    /// final record (`None` without caps). Blocking file work (rmdir).
    pub fn finish(&mut self) -> Option<LimitsRecord> {
        if self.final_record.is_some() {
            return self.final_record.clone();
        }
        let stats = match self.cgroup.as_mut() {
            Some(cgroup) => {
                let stats = cgroup.finish();
                self.manager.backend.collect();
                stats
            }
            None => Default::default(),
        };
        let caps = self.caps?;
        let record = limits::record(
            &caps,
            &self.unenforced,
            self.cgroup.is_some(),
            self.mechanism,
            self.refused,
            &stats,
        );
        self.final_record = Some(record.clone());
        Some(record)
    }
}

/// Hands the caps of the job table just installed to the manager, off
/// the reactor: it sets the host up for them and logs (once per change)
/// whether they can be enforced. Nothing happens for a table without caps
/// before any run had caps.
pub fn converge_soon(jobs: &[std::sync::Arc<JobConfig>]) {
    let capped: Vec<(String, ResourceLimits)> = jobs
        .iter()
        .filter_map(|j| Some((format!("job {}", j.name), j.resource_limits?)))
        .collect();
    let manager = manager();
    if capped.is_empty() && manager.lock().setup.is_none() {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn_blocking(move || manager.converge(&capped));
        }
        Err(_) => manager.converge(&capped),
    }
}

/// [`RunLimits::finish`] off the reactor (rmdir can block), on the one
/// thread that finishes every run's cgroup: a blocking-pool thread per
/// run would leave a hundred idle threads behind a burst of runs, and each
/// makes every later fork of the daemon dearer.
pub async fn finish(limits: Option<RunLimits>) -> Option<LimitsRecord> {
    let mut limits = limits?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let work: Finish = Box::new(move || {
        let _ = tx.send(limits.finish());
    });
    if let Err(std::sync::mpsc::SendError(work)) = finisher().send(work) {
        // The thread is gone (it could not be started): finish here.
        work();
    }
    match rx.await {
        Ok(record) => record,
        Err(_) => {
            tracing::warn!(
                target: "cronstable::limits",
                "could not read the resource limits of a run: its finisher stopped"
            );
            None
        }
    }
}

type Finish = Box<dyn FnOnce() + Send>;

/// The queue of the thread that finishes runs' cgroups, started on first
/// use.
fn finisher() -> std::sync::mpsc::Sender<Finish> {
    static QUEUE: OnceLock<Mutex<std::sync::mpsc::Sender<Finish>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Finish>();
        let started = std::thread::Builder::new()
            .name("cronstable-cgroups".into())
            .spawn(move || {
                for work in rx {
                    work();
                }
            });
        if let Err(err) = started {
            tracing::warn!(
                target: "cronstable::limits",
                "could not start the cgroup finisher thread ({err}); finishing runs inline"
            );
        }
        Mutex::new(tx)
    });
    queue.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
