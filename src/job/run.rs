//! One run of a job: spawn it in a session (and process group) of its own,
//! capture its output, bound it by `executionTimeout`, cancel it with the
//! SIGTERM, `killTimeout`, SIGKILL sequence, and produce its [`RunRecord`].

use super::capture::LiveOutput;
use super::contain::{self, RunLimits};
use super::outcome::{fail_reason, RunRecord, Trigger, START_FAILED_RETCODE, TIMEOUT_RETCODE};
use super::verify;
use output::{start_reader, wait_readers, Reader};

mod output;
use crate::config::model::Command;
use crate::config::JobConfig;
use crate::platform::host_name;
use crate::platform::{self, GroupSignal, JobChild, StopSignal};
use chrono::Utc;
use std::ffi::OsString;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long a killed run waits for its output pipes to close. Fixed, and
/// independent of `killTimeout` (which may legitimately be 0): a descendant
/// that escaped the process group must not keep the run alive forever.
pub const EOF_BOUND: Duration = Duration::from_secs(30);

/// Which process of a run [`drive`] watches: the job's command, or its
/// `verify` check (other stream names, its own timeout, and the end of
/// the instance left to the caller).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// The job's own command, bounded by `executionTimeout`.
    Command,
    /// The `verify` check, bounded by `verify.timeout` seconds.
    Verify(f64),
}

impl Phase {
    /// The names of the captured streams: `stdout`, `stderr`, and the
    /// name of both together in the cancel warning.
    fn streams(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Phase::Command => ("stdout", "stderr", "output"),
            Phase::Verify(_) => ("verify.stdout", "verify.stderr", "verify.output"),
        }
    }
}

/// What every process of one run (its command, then its check) is
/// watched with: the run's cancel, the end of its instance, its live
/// output and the values masked in it.
struct RunWatch<'a> {
    cancel: &'a CancelSignal,
    ended: &'a watch::Sender<bool>,
    live: &'a Arc<LiveOutput>,
    masks: &'a Arc<[String]>,
}

/// Why a run is being cancelled from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelKind {
    /// `concurrencyPolicy: Replace` makes way for a newer instance.
    Replace,
    /// An operator asked for it (API), or the daemon is stopping.
    Operator,
    /// The run's resource pool claim could not be renewed: it ends as a
    /// failure with exit code -100 (the seeds' lost pool lease).
    PoolLease,
}

const NO_CANCEL: u8 = 0;
const CANCEL_REPLACE: u8 = 1;
const CANCEL_OPERATOR: u8 = 2;
const CANCEL_POOL_LEASE: u8 = 3;

/// Shared between a run and whoever may cancel it.
#[derive(Debug, Default)]
struct CancelSignal {
    kind: AtomicU8,
    notify: Notify,
}

impl CancelSignal {
    fn request(&self, kind: CancelKind) {
        let code = match kind {
            CancelKind::Replace => CANCEL_REPLACE,
            CancelKind::Operator => CANCEL_OPERATOR,
            CancelKind::PoolLease => CANCEL_POOL_LEASE,
        };
        // The first request decides the kind; later ones only re-notify.
        let _ = self
            .kind
            .compare_exchange(NO_CANCEL, code, Ordering::SeqCst, Ordering::SeqCst);
        self.notify.notify_one();
    }

    fn requested(&self) -> Option<CancelKind> {
        match self.kind.load(Ordering::SeqCst) {
            CANCEL_REPLACE => Some(CancelKind::Replace),
            CANCEL_OPERATOR => Some(CancelKind::Operator),
            CANCEL_POOL_LEASE => Some(CancelKind::PoolLease),
            _ => None,
        }
    }

    async fn wait(&self) -> CancelKind {
        loop {
            if let Some(kind) = self.requested() {
                return kind;
            }
            self.notify.notified().await;
        }
    }
}

/// The scheduler's handle on a running instance.
#[derive(Debug, Clone)]
pub struct RunHandle {
    /// Daemon-unique run number.
    pub run_id: u64,
    pid: Option<u32>,
    /// What launched it.
    pub trigger: Trigger,
    /// When it started.
    pub started_at: chrono::DateTime<Utc>,
    cancel: Arc<CancelSignal>,
    replaced: Arc<AtomicBool>,
    ended: watch::Receiver<bool>,
    output: Arc<LiveOutput>,
    verifying: Arc<AtomicBool>,
    monitor: Option<Arc<super::sampler::Monitor>>,
    cgroup: Option<Arc<platform::CgroupPlace>>,
}

impl RunHandle {
    /// The run's resource sampler, when the job has `monitorResources`
    /// on and its command started.
    pub fn monitor(&self) -> Option<&Arc<super::sampler::Monitor>> {
        self.monitor.as_ref()
    }

    /// Where the run's cgroup is (a run with resource limits, or any run
    /// while CPU weighting is on), for readers of its usage.
    pub fn cgroup(&self) -> Option<&platform::CgroupPlace> {
        self.cgroup.as_deref()
    }

    /// Whether the run's `verify` check is running now.
    pub fn verifying(&self) -> bool {
        self.verifying.load(Ordering::SeqCst)
    }

    /// The process id, once the command has started.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Marks the run as replaced (not a failure, never reported or retried)
    /// and cancels it.
    pub fn replace(&self) {
        self.replaced.store(true, Ordering::SeqCst);
        self.cancel.request(CancelKind::Replace);
    }

    /// Cancels the run (an operator cancel, or shutdown's second signal).
    pub fn cancel(&self) {
        self.cancel.request(CancelKind::Operator);
    }

    /// Cancels the run because its resource pool claim was lost: recorded
    /// as a failure with exit code -100, whatever the process exited with.
    pub fn lose_pool_lease(&self) {
        self.cancel.request(CancelKind::PoolLease);
    }

    /// True once the instance has ended: its process exited and its output
    /// closed, or the cancel sequence finished. An ended instance no longer
    /// counts for concurrency even before its record is collected.
    pub fn has_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// The run's live output (what `GET /jobs/{name}/logs` follows).
    pub fn output(&self) -> Arc<LiveOutput> {
        Arc::clone(&self.output)
    }

    /// Waits until the instance has ended.
    pub async fn wait_ended(&self) {
        let mut ended = self.ended.clone();
        // An error means the run task is gone, which also means it ended.
        let _ = ended.wait_for(|done| *done).await;
    }
}

/// Hears when a run's command starts and when the run is over. The job
/// layer defines it so that what listens (the statsd sender, in the
/// metrics layer above) is passed in rather than imported.
pub trait RunObserver: std::fmt::Debug + Send + Sync {
    /// The command of a run of `job` was spawned.
    fn started(&self, job: &JobConfig);
    /// A run of `job` whose command was spawned has ended; `record` is
    /// final (fail reason included).
    fn finished(&self, job: &JobConfig, record: &RunRecord);
}

/// Everything needed to start one run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The job.
    pub job: Arc<JobConfig>,
    /// What launched it.
    pub trigger: Trigger,
    /// Retry number (0 for a first attempt).
    pub attempt: u32,
    /// Daemon-unique run number.
    pub run_id: u64,
    /// Told when the command starts and when the run ends.
    pub observer: Option<Arc<dyn RunObserver>>,
    /// Set in the run's environment after the job's own `environment`
    /// (the job endpoint's `CRONSTABLE_*` variables).
    pub extra_env: Vec<(String, String)>,
    /// Values masked in every output line before it is echoed, shown or
    /// kept (the run's staged secrets).
    pub masks: Vec<String>,
}

/// Starts a run: spawns the command now and returns the handle plus the
/// task that resolves to the run's record once it is over.
pub fn start(request: RunRequest) -> (RunHandle, JoinHandle<RunRecord>) {
    let cancel = Arc::new(CancelSignal::default());
    let replaced = Arc::new(AtomicBool::new(false));
    let verifying = Arc::new(AtomicBool::new(false));
    let (ended_tx, ended_rx) = watch::channel(false);
    let output = Arc::new(LiveOutput::new());
    let started_at = Utc::now();
    let job = Arc::clone(&request.job);
    let observer = request.observer.clone();

    // Spawning returns once the child has exec'd (posix_spawn): the pid is
    // known before the scheduler records the instance, so the API never
    // shows a running instance without its pid.
    let mut contained = contain::manager().prepare(&job);
    let spawned = spawn_contained(&job, &request.extra_env, contained.as_mut());
    let pid = spawned.as_ref().ok().map(JobChild::id);
    let cgroup = contained.as_ref().and_then(RunLimits::place).map(Arc::new);
    let monitor = super::sampler::for_run(job.monitor.as_ref(), pid, cgroup.as_ref());
    let handle = RunHandle {
        run_id: request.run_id,
        pid,
        trigger: request.trigger,
        started_at,
        cancel: Arc::clone(&cancel),
        replaced: Arc::clone(&replaced),
        ended: ended_rx,
        output: Arc::clone(&output),
        verifying: Arc::clone(&verifying),
        monitor: monitor.clone(),
        cgroup,
    };
    let masks: Arc<[String]> = request.masks.into();
    let task = tokio::spawn(async move {
        let base = RunRecord {
            pid,
            ..RunRecord::begun(
                request.run_id,
                job.name.clone(),
                request.trigger,
                request.attempt,
                started_at,
            )
        };
        let watch = RunWatch {
            cancel: &cancel,
            ended: &ended_tx,
            live: &output,
            masks: &masks,
        };
        let mut record = match spawned {
            Err(reason) => {
                // A refused run was explained when its caps were found
                // unenforceable; it is no launch error.
                if !contained.as_ref().is_some_and(RunLimits::refused) {
                    tracing::error!(
                        target: "cronstable::job",
                        "Job {}: could not start its command: {reason}",
                        job.name
                    );
                }
                let _ = ended_tx.send(true);
                RunRecord {
                    retcode: START_FAILED_RETCODE,
                    start_error: Some(reason),
                    finished_at: Utc::now(),
                    ..base
                }
            }
            Ok(child) => {
                // The original's line carries no pid; alerts anchored on
                // "spawned" at the end keep matching. The pid is at DEBUG.
                tracing::info!(target: "cronstable::job", "Job {} spawned", job.name);
                tracing::debug!(
                    target: "cronstable::job",
                    "Job {}: pid {}",
                    job.name,
                    pid.unwrap_or_default()
                );
                if let Some(observer) = &observer {
                    observer.started(&job);
                }
                let phase = Phase::Command;
                let mut record = drive(&job, child, &watch, base, phase, contained.as_ref()).await;
                record.resources = monitor.as_ref().and_then(|m| m.finish());
                record.replaced = replaced.load(Ordering::SeqCst);
                record
            }
        };
        // The caps' record is final before the check: a run its memory
        // cap ended is a failure, and its check is skipped.
        record.limits = contain::finish(contained).await;
        record.fail_reason = record
            .limits
            .as_ref()
            .and_then(super::limits::LimitsRecord::failure)
            .or_else(|| {
                fail_reason(
                    &job.fails_when,
                    record.retcode,
                    &record.stdout,
                    &record.stderr,
                )
            });
        if let Some(check) = &job.verify {
            let after_check = RunAfter {
                run_id: request.run_id,
                trigger: request.trigger,
                attempt: request.attempt,
                extra_env: &request.extra_env,
                verifying: &verifying,
            };
            run_check(&job, check, &after_check, &watch, &mut record).await;
        }
        let _ = ended_tx.send(true);
        // Every reader has finished or been stopped: live viewers get the
        // end of the stream.
        output.close();
        if let (Some(observer), true) = (&observer, record.start_error.is_none()) {
            observer.finished(&job, &record);
        }
        record
    });
    (handle, task)
}

/// Who a run's check belongs to (its record carries the run's identity)
/// and the run's job-endpoint variables, which the check gets too.
struct RunAfter<'a> {
    run_id: u64,
    trigger: Trigger,
    attempt: u32,
    extra_env: &'a [(String, String)],
    /// Set while the check runs (`GET /jobs` shows it).
    verifying: &'a AtomicBool,
}

/// Runs the `verify` check of the run that ended as `record`, when
/// [`verify::precondition`] says so, and records its outcome on it.
async fn run_check(
    job: &JobConfig,
    check: &crate::config::job::Verify,
    run: &RunAfter<'_>,
    watch: &RunWatch<'_>,
    record: &mut RunRecord,
) {
    match verify::precondition(record, watch.cancel.requested().is_some()) {
        verify::Precondition::Nothing => {}
        verify::Precondition::Skip(skipped) => record.verification = Some(skipped),
        verify::Precondition::Run => {
            run.verifying.store(true, Ordering::SeqCst);
            let check_job = verify::check_job(job, check);
            let started = Utc::now();
            // The check has caps of its own (the job's), in a cgroup of its own.
            let mut contained = contain::manager().prepare(&check_job);
            let spawned = spawn_contained(&check_job, run.extra_env, contained.as_mut());
            let mut checked = match spawned {
                Err(reason) => {
                    tracing::error!(
                        target: "cronstable::job",
                        "Job {}: could not start its verify check: {reason}",
                        job.name
                    );
                    None
                }
                Ok(child) => {
                    let base = RunRecord::begun(
                        run.run_id,
                        job.name.clone(),
                        run.trigger,
                        run.attempt,
                        started,
                    );
                    let phase = Phase::Verify(check.timeout);
                    let limits = contained.as_ref();
                    Some(drive(&check_job, child, watch, base, phase, limits).await)
                }
            };
            let limits = contain::finish(contained).await;
            if let Some(checked) = checked.as_mut() {
                checked.limits = limits;
            }
            run.verifying.store(false, Ordering::SeqCst);
            verify::apply(record, checked.as_ref(), Utc::now());
        }
    }
}

/// Spawns the command, in the run's container when it has one. A refused
/// run never spawns: its error is the refusal. A child its required
/// container could not take is killed (the run is then refused too).
fn spawn_contained(
    job: &JobConfig,
    extra_env: &[(String, String)],
    contained: Option<&mut RunLimits>,
) -> Result<JobChild, String> {
    let Some(limits) = contained else {
        return spawn_command(job, extra_env, None);
    };
    let refusal = |limits: &RunLimits| {
        limits
            .record()
            .and_then(|r| r.failure())
            .unwrap_or_else(|| "resource limits could not be enforced".into())
    };
    if limits.refused() {
        return Err(refusal(limits));
    }
    let spawned = spawn_command(job, extra_env, limits.join_step());
    match &spawned {
        Ok(child) => limits.attach(child.id()),
        Err(_) => {
            limits.spawn_failed();
            if limits.refused() {
                return Err(refusal(limits));
            }
        }
    }
    spawned
}

/// Builds and spawns the job's process in a session of its own.
fn spawn_command(
    job: &JobConfig,
    extra_env: &[(String, String)],
    cgroup: Option<platform::JoinStep>,
) -> Result<JobChild, String> {
    let (program, args): (OsString, Vec<OsString>) = match &job.command {
        Command::Shell(text) => (job.shell.clone().into(), vec!["-c".into(), text.into()]),
        Command::Argv(argv) => {
            let Some((program, args)) = argv.split_first() else {
                return Err("the command list is empty".into());
            };
            (program.into(), args.iter().map(OsString::from).collect())
        }
    };
    if let Some(dir) = &job.working_directory {
        if !dir.is_dir() {
            return Err(format!(
                "working directory {} does not exist or is not a directory",
                dir.display()
            ));
        }
    }
    // Every job sees HOSTNAME, as under the original (which puts the host
    // name in its own environment at start when it is missing); the job's
    // own `environment` still wins.
    let mut env: Vec<(OsString, OsString)> = Vec::with_capacity(job.environment.len() + 1);
    if std::env::var_os("HOSTNAME").is_none() {
        env.push(("HOSTNAME".into(), host_name().into()));
    }
    env.extend(
        job.environment
            .iter()
            .chain(extra_env.iter())
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let spec = platform::JobSpawn {
        program: program.clone(),
        args,
        env,
        cwd: job.working_directory.as_deref(),
        capture_stdout: job.capture_stdout,
        capture_stderr: job.capture_stderr,
        run_as: job.run_as.as_ref(),
        cgroup,
    };
    let child =
        platform::spawn_job(&spec).map_err(|e| format!("{}: {e}", program.to_string_lossy()))?;
    if let Some(nice) = job.priority.nice() {
        if let Err(err) = platform::renice_group(child.id(), nice) {
            tracing::debug!(
                target: "cronstable::job",
                "Job {}: could not set priority {:?} (nice {nice}): {err}",
                job.name,
                job.priority
            );
        }
    }
    Ok(child)
}

/// How the main wait ended.
enum Stop {
    Finished,
    TimedOut,
    Cancelled,
}

/// Runs the started child to its end and builds the record.
async fn drive(
    job: &JobConfig,
    mut child: JobChild,
    watch: &RunWatch<'_>,
    base: RunRecord,
    phase: Phase,
    contained: Option<&RunLimits>,
) -> RunRecord {
    let RunWatch {
        cancel,
        ended,
        live,
        masks,
    } = *watch;
    let pid = child.id();
    let (stdout_name, stderr_name, output_name) = phase.streams();
    let mut readers: Vec<Reader> = Vec::new();
    if let Some(err) = child.stderr.take() {
        readers.push(start_reader(
            job,
            stderr_name,
            err,
            Arc::clone(live),
            Arc::clone(masks),
        ));
    }
    if let Some(out) = child.stdout.take() {
        readers.push(start_reader(
            job,
            stdout_name,
            out,
            Arc::clone(live),
            Arc::clone(masks),
        ));
    }
    let limit = match phase {
        Phase::Command => job.execution_timeout,
        Phase::Verify(timeout) => Some(timeout),
    };
    let deadline = limit.map(|secs| Instant::now() + Duration::from_secs_f64(secs));
    let mut status: Option<ExitStatus> = None;
    let mut oom_seen = false;

    let stop = loop {
        if status.is_some() && readers.iter().all(|r| r.task.is_finished()) {
            break Stop::Finished;
        }
        tokio::select! {
            exit = child.wait(), if status.is_none() => match exit {
                Ok(exit) => status = Some(exit),
                Err(err) => {
                    // Waiting on our own child cannot normally fail; if it
                    // does, the run ends as a failure rather than hanging.
                    tracing::error!(target: "cronstable::job", "Job {}: cannot wait for its process: {err}", job.name);
                    status = Some(std::os::unix::process::ExitStatusExt::from_raw(1 << 8));
                }
            },
            _ = wait_readers(&mut readers), if status.is_some() => {}
            // cgroup v1: the memory cap was hit; the whole run ends now,
            // with no graceful step (v2's kernel does this by itself).
            _ = oom_wait(contained), if !oom_seen => {
                oom_seen = true;
                if let Some(limits) = contained {
                    limits.oom_kill();
                }
            }
            _ = sleep_until_opt(deadline) => break Stop::TimedOut,
            _ = cancel.wait() => break Stop::Cancelled,
        }
    };

    let mut record = base;
    match stop {
        Stop::Finished => {}
        Stop::TimedOut => {
            // INFO, seconds with one decimal: the original's line.
            match phase {
                Phase::Command => tracing::info!(
                    target: "cronstable::job",
                    "Job {} exceeded its executionTimeout of {:.1} seconds, cancelling it...",
                    job.name,
                    limit.unwrap_or_default()
                ),
                Phase::Verify(_) => tracing::info!(
                    target: "cronstable::job",
                    "Job {}: its verify check exceeded its timeout of {:.1} seconds, cancelling it...",
                    job.name,
                    limit.unwrap_or_default()
                ),
            }
            record.timed_out = true;
            cancel_sequence(job, &mut child, pid, &mut status, contained).await;
        }
        Stop::Cancelled => {
            record.cancelled = cancel.requested() == Some(CancelKind::Operator);
            cancel_sequence(job, &mut child, pid, &mut status, contained).await;
        }
    }
    record.finished_at = Utc::now();
    // A cancel, or the command's own timeout, ends the instance here:
    // concurrency gates no longer count it, even while its output is
    // still being drained below. Otherwise the caller ends it (after the
    // `verify` check, if one follows; a timed-out check ends its run once
    // its streams are drained).
    let ends_here = matches!(
        (phase, &stop),
        (_, Stop::Cancelled) | (Phase::Command, Stop::TimedOut)
    );
    if ends_here {
        let _ = ended.send(true);
    }

    match stop {
        Stop::Finished => {}
        Stop::TimedOut => {
            for reader in &mut readers {
                if tokio::time::timeout(EOF_BOUND, &mut reader.task)
                    .await
                    .is_err()
                {
                    reader.task.abort();
                    tracing::warn!(
                        target: "cronstable::job",
                        "job {}: {} did not reach end-of-file within {:.1} seconds of the job being killed",
                        job.name,
                        reader.name,
                        EOF_BOUND.as_secs_f64()
                    );
                }
            }
        }
        Stop::Cancelled => {
            if tokio::time::timeout(EOF_BOUND, wait_readers(&mut readers))
                .await
                .is_err()
            {
                for reader in &readers {
                    reader.task.abort();
                }
                tracing::warn!(
                    target: "cronstable::job",
                    "job {}: {output_name} did not reach end-of-file within {:.1} seconds of the job being killed",
                    job.name,
                    EOF_BOUND.as_secs_f64()
                );
            }
        }
    }
    for reader in &readers {
        if reader.name == stdout_name {
            record.stdout = reader.output();
        } else {
            record.stderr = reader.output();
        }
    }
    record.retcode = match (&stop, status) {
        (Stop::TimedOut, _) => TIMEOUT_RETCODE,
        (Stop::Cancelled, _) if cancel.requested() == Some(CancelKind::PoolLease) => {
            TIMEOUT_RETCODE
        }
        (_, Some(status)) => platform::exit_code(status),
        // The process outlived a refused kill: no exit code to report.
        (_, None) => -1,
    };
    record
}

async fn oom_wait(contained: Option<&RunLimits>) {
    match contained {
        Some(limits) => limits.oom_fired().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// SIGTERM to the group, up to `killTimeout` for the job's own process to
/// exit, then SIGKILL to the group unconditionally (descendants may still
/// hold the output pipes).
async fn cancel_sequence(
    job: &JobConfig,
    child: &mut JobChild,
    pid: u32,
    status: &mut Option<ExitStatus>,
    contained: Option<&RunLimits>,
) {
    send_stop(job, child, pid, status.is_some(), StopSignal::Terminate);
    if status.is_none() {
        let grace = Duration::from_secs_f64(job.kill_timeout.max(0.0));
        let waited = if grace.is_zero() {
            // Let the event loop run once so an instant exit is seen.
            tokio::task::yield_now().await;
            child.try_wait().ok().flatten()
        } else {
            tokio::time::timeout(grace, child.wait())
                .await
                .ok()
                .and_then(Result::ok)
        };
        match waited {
            Some(exit) => *status = Some(exit),
            None => tracing::warn!(
                target: "cronstable::job",
                "Job {} did not gracefully terminate after {:.1} seconds, killing it...",
                job.name,
                job.kill_timeout
            ),
        }
    }
    // A run in a cgroup: its kill first reaches every process in it, one
    // that called setsid included; the group SIGKILL then follows for a
    // process that left the cgroup but kept the group.
    if let Some(limits) = contained {
        limits.kill();
    }
    send_stop(job, child, pid, status.is_some(), StopSignal::Kill);
    if status.is_none() {
        // SIGKILL cannot be caught; give the kernel a moment to reap. A
        // process the daemon may not signal keeps running and is left be.
        if let Ok(Ok(exit)) = tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
            *status = Some(exit);
        }
    }
}

/// Sends one step of the cancel sequence to the group, falling back to the
/// job's own process when the group cannot be signalled.
fn send_stop(job: &JobConfig, child: &mut JobChild, pid: u32, reaped: bool, sig: StopSignal) {
    if pid == 0 {
        return;
    }
    match platform::signal_group(pid, sig, reaped) {
        GroupSignal::Sent => return,
        GroupSignal::Empty if reaped => return,
        GroupSignal::Empty => {}
        GroupSignal::Failed(reason) => {
            tracing::warn!(
                target: "cronstable::job",
                "could not signal the process group of pid {pid} ({reason}); falling back to signalling that process alone"
            );
        }
    }
    if reaped {
        return;
    }
    let result = match sig {
        StopSignal::Terminate => platform::signal_process(pid, sig),
        StopSignal::Kill => child.start_kill().map(|_| true),
    };
    if let Err(err) = result {
        tracing::warn!(
            target: "cronstable::job",
            "Job {}: could not signal its process (pid {pid}): {err}",
            job.name
        );
    }
}
