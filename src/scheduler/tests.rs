//! The scheduler driven through its ports with fakes, under tokio's paused
//! clock: time moves only when a test advances it, so boundaries are exact
//! and nothing sleeps. Jobs are real processes (`true`).

use super::control::ControlHandle;
use super::ports::*;
use super::shutdown;
use super::{Ports, Scheduler};
use crate::config::model::{ConcurrencyPolicy, ConcurrencyScope};
use crate::config::{self, JobConfig, Source, SourceKind};
use crate::job::{RunRecord, Trigger};
use crate::report::{Hook, ReportFuture, Reporter};
use chrono::{DateTime, TimeZone, Utc};
use futures_util::future::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// Wall time that follows tokio's (paused) clock from a fixed origin.
struct PausedClock {
    origin: DateTime<Utc>,
    start: tokio::time::Instant,
}

impl Clock for PausedClock {
    fn now(&self) -> DateTime<Utc> {
        self.origin + chrono::TimeDelta::from_std(self.start.elapsed()).unwrap_or_default()
    }
    fn sleep_until(&self, at: DateTime<Utc>) -> BoxFuture<'static, ()> {
        let offset = (at - self.origin).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep_until(self.start + offset))
    }
}

/// A source fed by the test over a channel.
struct ChannelSource {
    rx: mpsc::UnboundedReceiver<JobSet>,
}

impl JobSource for ChannelSource {
    fn poll(&mut self) -> Option<JobSet> {
        self.rx.try_recv().ok()
    }
    fn next(&mut self) -> BoxFuture<'_, JobSet> {
        Box::pin(async move {
            match self.rx.recv().await {
                Some(set) => set,
                None => std::future::pending().await,
            }
        })
    }
}

/// A gate with a fixed answer that remembers every question; retries
/// first get the scripted answers in `retry_script`, in order.
struct FakeGate {
    answer: Admission,
    retry_script: Mutex<std::collections::VecDeque<Admission>>,
    asked: Arc<Mutex<Vec<(String, Trigger)>>>,
}

impl LeaderGate for FakeGate {
    fn admit(&self, job: &JobConfig, trigger: Trigger) -> Admission {
        self.asked.lock().unwrap().push((job.name.clone(), trigger));
        let scripted = match trigger {
            Trigger::Retry => self.retry_script.lock().unwrap().pop_front(),
            _ => None,
        };
        scripted.unwrap_or(self.answer)
    }
}

/// A slot lock with a fixed claim answer that logs every call; yield
/// requests are whatever the test sends on the harness's channel.
struct FakeSlots {
    claim: SlotClaim,
    calls: Arc<Mutex<Vec<String>>>,
    yields: mpsc::UnboundedReceiver<SlotYield>,
}

impl SlotLock for FakeSlots {
    fn claim(&mut self, job: &JobConfig) -> futures_util::future::BoxFuture<'static, SlotClaim> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("claim {}", job.name));
        Box::pin(std::future::ready(self.claim.clone()))
    }
    fn release(&mut self, job: &str) {
        self.calls.lock().unwrap().push(format!("release {job}"));
    }
    fn next_yield(&mut self) -> futures_util::future::BoxFuture<'_, SlotYield> {
        Box::pin(async move {
            match self.yields.recv().await {
                Some(request) => request,
                None => std::future::pending().await,
            }
        })
    }
}

/// A reporter that only remembers which hooks fired.
#[derive(Default)]
struct Hooks(Mutex<Vec<(String, Hook)>>);

impl Reporter for Hooks {
    fn report(&self, hook: Hook, job: &JobConfig, _record: &RunRecord) -> ReportFuture {
        self.0.lock().unwrap().push((job.name.clone(), hook));
        Box::pin(async {})
    }
}

pub(super) fn job_set(yaml: &str) -> JobSet {
    let loaded = config::load_sources(&[Source {
        name: "test.yaml".into(),
        text: yaml.into(),
        kind: SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("the test config loads");
    JobSet {
        job_set_id: crate::fingerprint::job_set_id(&loaded.jobs),
        jobs: loaded.jobs.into_iter().map(Arc::new).collect(),
        sources: vec!["test.yaml".into()],
        requested_at: origin(),
        suspended: Default::default(),
    }
}

fn every_minute(name: &str) -> String {
    format!("jobs:\n  - name: {name}\n    command: \"true\"\n    schedule: \"* * * * *\"\n")
}

/// Half a minute before a boundary.
fn origin() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 30).unwrap()
}

struct Harness {
    control: ControlHandle,
    sets: mpsc::UnboundedSender<JobSet>,
    asked: Arc<Mutex<Vec<(String, Trigger)>>>,
    slot_calls: Arc<Mutex<Vec<String>>>,
    yields: mpsc::UnboundedSender<SlotYield>,
    stop: shutdown::ShutdownHandle,
    task: tokio::task::JoinHandle<()>,
}

async fn start(initial: JobSet, answer: Admission, claim: SlotClaim) -> Harness {
    start_scripted(initial, answer, Vec::new(), claim).await
}

async fn start_scripted(
    initial: JobSet,
    answer: Admission,
    retry_script: Vec<Admission>,
    claim: SlotClaim,
) -> Harness {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let slot_calls = Arc::new(Mutex::new(Vec::new()));
    let (yields, yield_rx) = mpsc::unbounded_channel();
    let running = spawn_scheduler(
        initial,
        Box::new(FakeGate {
            answer,
            retry_script: Mutex::new(retry_script.into()),
            asked: Arc::clone(&asked),
        }),
        Box::new(FakeSlots {
            claim,
            calls: Arc::clone(&slot_calls),
            yields: yield_rx,
        }),
    )
    .await;
    Harness {
        control: running.control,
        sets: running.sets,
        asked,
        slot_calls,
        yields,
        stop: running.stop,
        task: running.task,
    }
}

/// A scheduler running on its own task over `gate` and `slots`, with the
/// paused clock, an in-memory store, a reporter that only remembers hooks
/// and a source the test feeds.
pub(super) struct Running {
    pub(super) control: ControlHandle,
    pub(super) sets: mpsc::UnboundedSender<JobSet>,
    pub(super) stop: shutdown::ShutdownHandle,
    pub(super) task: tokio::task::JoinHandle<()>,
}

/// Starts [`Running`] and waits until its run loop answers.
pub(super) async fn spawn_scheduler(
    initial: JobSet,
    gate: Box<dyn LeaderGate>,
    slots: Box<dyn SlotLock>,
) -> Running {
    let loads = super::sections::LiveSections::start(&Default::default(), 0.0).loads();
    spawn_following(initial, gate, slots, loads).await
}

/// [`spawn_scheduler`], following the load outcomes of `loads`.
async fn spawn_following(
    initial: JobSet,
    gate: Box<dyn LeaderGate>,
    slots: Box<dyn SlotLock>,
    loads: tokio::sync::watch::Receiver<super::sections::LoadOutcome>,
) -> Running {
    let (sets, rx) = mpsc::unbounded_channel();
    let (stop, requests) = shutdown::channel();
    let scheduler = Scheduler::new(
        initial,
        Ports {
            source: Box::new(ChannelSource { rx }),
            gate,
            slots,
            store: Box::new(MemoryStore::default()),
            durable: Box::new(super::durable::NoDurableState),
            clock: Arc::new(PausedClock {
                origin: origin(),
                start: tokio::time::Instant::now(),
            }),
            reporter: Arc::new(Hooks::default()),
            started_at: 0.0,
            loads,
            shutdown: stop.clone(),
        },
    );
    let control = scheduler.control();
    let task = tokio::spawn(scheduler.run(requests));
    // Answered from inside the run loop: once it is, the scheduler has
    // taken its start instant, so advancing the clock now crosses a
    // boundary it waits for (rather than one it starts after).
    control.job_set_id().await.expect("the scheduler runs");
    Running {
        control,
        sets,
        stop,
        task,
    }
}

/// Lets the runtime work (processes exit, events arrive) without moving
/// the paused clock, until `done` says so or ten real seconds pass.
async fn settle_until(mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() && std::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
}

/// The job's runs once there are at least `want` (or after ten real
/// seconds, whatever there is).
pub(super) async fn runs(control: &ControlHandle, job: &str, want: usize) -> Vec<RunRecord> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let runs = control.runs(job).await.expect("the job is configured");
        if runs.len() >= want || std::time::Instant::now() >= deadline {
            return runs;
        }
        tokio::task::yield_now().await;
    }
}

async fn finish(h: Harness) {
    h.stop.trigger();
    h.task.await.expect("the scheduler task ends cleanly");
}

#[tokio::test(start_paused = true)]
async fn a_boundary_fires_once_through_the_gate() {
    let h = start(
        job_set(&every_minute("j")),
        Admission::Launch,
        SlotClaim::Claimed,
    )
    .await;
    // Before the boundary nothing is due.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(runs(&h.control, "j", 0).await.is_empty());
    assert!(h.asked.lock().unwrap().is_empty());

    tokio::time::advance(Duration::from_secs(31)).await;
    let first = runs(&h.control, "j", 1).await;
    assert_eq!(first.len(), 1, "one boundary, one run");
    assert_eq!(first[0].trigger, Trigger::Schedule);
    assert_eq!(first[0].retcode, 0);
    assert_eq!(
        *h.asked.lock().unwrap(),
        vec![("j".to_owned(), Trigger::Schedule)]
    );

    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(
        runs(&h.control, "j", 2).await.len(),
        2,
        "the next boundary fires too"
    );
    // Node-scoped jobs never reach the slot lock.
    assert!(h.slot_calls.lock().unwrap().is_empty());
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn a_reload_from_the_source_swaps_the_table() {
    let h = start(
        job_set(&every_minute("old")),
        Admission::Launch,
        SlotClaim::Claimed,
    )
    .await;
    let old_id = h.control.job_set_id().await.unwrap();
    let next = job_set(&every_minute("new"));
    let new_id = next.job_set_id.clone();
    assert_ne!(old_id, new_id);
    h.sets.send(next).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while h.control.job_set_id().await.unwrap() != new_id && std::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    assert_eq!(h.control.job_set_id().await.unwrap(), new_id);
    assert!(h.control.runs("old").await.is_err(), "the old job is gone");

    tokio::time::advance(Duration::from_secs(31)).await;
    let fired = runs(&h.control, "new", 1).await;
    assert_eq!(fired.len(), 1, "the new table fires at the boundary");
    assert_eq!(
        *h.asked.lock().unwrap(),
        vec![("new".to_owned(), Trigger::Schedule)]
    );
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn a_gate_saying_no_skips_scheduled_fires_but_not_manual_starts() {
    let h = start(
        job_set(&every_minute("j")),
        Admission::Skip,
        SlotClaim::Claimed,
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    for boundary in 1..=3 {
        let asked = Arc::clone(&h.asked);
        settle_until(|| asked.lock().unwrap().len() >= boundary).await;
        assert_eq!(h.asked.lock().unwrap().len(), boundary);
        tokio::time::advance(Duration::from_secs(60)).await;
    }
    assert!(
        h.asked
            .lock()
            .unwrap()
            .iter()
            .all(|(job, trigger)| job == "j" && *trigger == Trigger::Schedule),
        "only scheduled fires ask the gate"
    );
    assert!(h.control.runs("j").await.unwrap().is_empty(), "no fire ran");

    let asked_before = h.asked.lock().unwrap().len();
    h.control
        .start("j")
        .await
        .expect("a manual start is accepted");
    let manual = runs(&h.control, "j", 1).await;
    assert_eq!(manual.len(), 1);
    assert_eq!(manual[0].trigger, Trigger::Manual);
    assert_eq!(
        h.asked.lock().unwrap().len(),
        asked_before,
        "manual starts are not gated"
    );
    finish(h).await;
}

fn cluster_forbid(name: &str) -> JobSet {
    let mut set = job_set(&every_minute(name));
    // Set here rather than in YAML: the config refuses cluster scope while
    // no state store exists, but the scheduler's gate must already work.
    for job in &mut set.jobs {
        let job = Arc::make_mut(job);
        job.concurrency_policy = ConcurrencyPolicy::Forbid;
        job.concurrency_scope = ConcurrencyScope::Cluster;
    }
    set
}

#[tokio::test(start_paused = true)]
async fn forbid_with_the_slot_held_elsewhere_skips_the_launch() {
    let h = start(
        cluster_forbid("j"),
        Admission::Launch,
        SlotClaim::HeldBy("node-b".into()),
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    let calls = Arc::clone(&h.slot_calls);
    settle_until(|| !calls.lock().unwrap().is_empty()).await;
    assert_eq!(*h.slot_calls.lock().unwrap(), vec!["claim j".to_owned()]);
    let snapshot = h.control.job("j").await.unwrap();
    assert!(
        !snapshot.running,
        "the slot holder elsewhere forbids the launch"
    );
    assert!(h.control.runs("j").await.unwrap().is_empty());
    finish(h).await;
}

/// A cluster-scoped job running `command` every minute under `policy`.
fn cluster_job(name: &str, command: &str, policy: ConcurrencyPolicy) -> JobSet {
    let yaml = format!(
        "jobs:\n  - name: {name}\n    command: \"{command}\"\n    schedule: \"* * * * *\"\n"
    );
    let mut set = job_set(&yaml);
    for job in &mut set.jobs {
        let job = Arc::make_mut(job);
        job.concurrency_policy = policy;
        job.concurrency_scope = ConcurrencyScope::Cluster;
    }
    set
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_claim_skips_when_fail_closed_and_launches_when_degraded() {
    let h = start(
        cluster_forbid("j"),
        Admission::Launch,
        SlotClaim::Unavailable {
            reason: "the store did not answer".into(),
            fail_closed: true,
        },
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    let calls = Arc::clone(&h.slot_calls);
    settle_until(|| !calls.lock().unwrap().is_empty()).await;
    // Give a wrongly launched run every chance to show up.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(!h.control.job("j").await.unwrap().running);
    assert!(
        h.control.runs("j").await.unwrap().is_empty(),
        "fail-closed skips"
    );
    finish(h).await;

    let h = start(
        cluster_forbid("j"),
        Admission::Launch,
        SlotClaim::Unavailable {
            reason: "the store did not answer".into(),
            fail_closed: false,
        },
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(runs(&h.control, "j", 1).await.len(), 1, "degrade launches");
    // Not claimed, so nothing to release.
    assert_eq!(*h.slot_calls.lock().unwrap(), vec!["claim j".to_owned()]);
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn a_yield_request_cancels_the_local_instance_without_a_report() {
    let h = start(
        cluster_job("j", "sleep 600", ConcurrencyPolicy::Replace),
        Admission::Launch,
        SlotClaim::Claimed,
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !h.control.job("j").await.unwrap().running && std::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    assert!(
        h.control.job("j").await.unwrap().running,
        "the claimed run started"
    );
    h.yields
        .send(SlotYield {
            job: "j".into(),
            by: "node-b".into(),
        })
        .unwrap();
    let calls = Arc::clone(&h.slot_calls);
    settle_until(|| calls.lock().unwrap().len() >= 2).await;
    assert_eq!(
        *h.slot_calls.lock().unwrap(),
        vec!["claim j".to_owned(), "release j".to_owned()],
        "the cancelled instance gave the slot back"
    );
    assert!(!h.control.job("j").await.unwrap().running);
    assert!(
        h.control.runs("j").await.unwrap().is_empty(),
        "a replaced instance is not a run"
    );
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn a_claimed_slot_is_released_when_the_run_ends() {
    let h = start(cluster_forbid("j"), Admission::Launch, SlotClaim::Claimed).await;
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(
        runs(&h.control, "j", 1).await.len(),
        1,
        "the claimed launch ran"
    );
    let calls = Arc::clone(&h.slot_calls);
    settle_until(|| calls.lock().unwrap().len() >= 2).await;
    assert_eq!(
        *h.slot_calls.lock().unwrap(),
        vec!["claim j".to_owned(), "release j".to_owned()]
    );
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn a_retry_asks_the_gate_again_and_waits_out_a_deferral() {
    // Fails every minute; one retry 10 s after a failure.
    let yaml = "jobs:\n  - name: j\n    command: \"false\"\n    schedule: \"* * * * *\"\n    \
                onFailure:\n      retry:\n        maximumRetries: 1\n        initialDelay: 10\n        \
                maximumDelay: 10\n        backoffMultiplier: 1\n";
    let h = start_scripted(
        job_set(yaml),
        Admission::Launch,
        vec![Admission::Defer],
        SlotClaim::Claimed,
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(
        runs(&h.control, "j", 1).await.len(),
        1,
        "the scheduled run failed"
    );
    // The retry comes due after 10 s; the gate defers it once.
    tokio::time::advance(Duration::from_secs(10)).await;
    let asked = Arc::clone(&h.asked);
    settle_until(|| asked.lock().unwrap().len() >= 2).await;
    assert_eq!(
        *h.asked.lock().unwrap(),
        vec![
            ("j".to_owned(), Trigger::Schedule),
            ("j".to_owned(), Trigger::Retry)
        ]
    );
    assert_eq!(
        h.control.runs("j").await.unwrap().len(),
        1,
        "a deferred retry waits"
    );
    assert_eq!(
        h.control.job("j").await.unwrap().retry.map(|r| r.attempt),
        Some(1),
        "the ladder survives the deferral"
    );
    // Asked again after the recheck delay, the gate says yes.
    tokio::time::advance(Duration::from_secs(5)).await;
    let retried = runs(&h.control, "j", 2).await;
    assert_eq!(retried.len(), 2);
    assert_eq!(retried[1].trigger, Trigger::Retry);
    assert_eq!(h.asked.lock().unwrap().len(), 3);
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn a_suspended_job_skips_its_fires_but_starts_by_hand_and_progress_reports_it() {
    let mut set = job_set(&format!(
        "{}{}",
        every_minute("held"),
        &every_minute("free")["jobs:\n".len()..]
    ));
    set.suspended.insert("held".to_owned());
    let h = start(set, Admission::Launch, SlotClaim::Claimed).await;
    let before = h
        .control
        .progress("", None)
        .await
        .unwrap()
        .expect("a first answer");
    assert_eq!(
        h.control.progress("", Some(before.version)).await.unwrap(),
        None,
        "nothing moved"
    );
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(runs(&h.control, "free", 1).await.len(), 1);
    assert!(runs(&h.control, "held", 0).await.is_empty(), "suspended");
    // Only the free job reached the gate.
    assert_eq!(
        *h.asked.lock().unwrap(),
        vec![("free".to_owned(), Trigger::Schedule)]
    );
    h.control.start("held").await.expect("a manual start runs");
    assert_eq!(
        runs(&h.control, "held", 1).await[0].trigger,
        Trigger::Manual
    );
    let after = h
        .control
        .progress("", Some(before.version))
        .await
        .unwrap()
        .expect("runs moved the version");
    let by_name = |name: &str| {
        after
            .jobs
            .iter()
            .find(|j| j.name == name)
            .cloned()
            .expect("the job")
    };
    let free = by_name("free");
    assert_eq!(
        free.last_scheduled,
        Some(Utc.with_ymd_and_hms(2026, 11, 30, 12, 1, 0).unwrap())
    );
    assert!(free.last_success.is_some());
    assert_eq!(free.last_run.as_ref().map(|r| r.exit_code), Some(Some(0)));
    assert_eq!(
        free.next_fire,
        Some(Utc.with_ymd_and_hms(2026, 11, 30, 12, 2, 0).unwrap())
    );
    // A manual start is not a scheduled fire.
    assert_eq!(by_name("held").last_scheduled, None);
    let only_free = h.control.progress("fr", None).await.unwrap().unwrap();
    assert_eq!(only_free.jobs.len(), 1);
    finish(h).await;
}

/// The stamp `jobs_since` hands out, and the state it stands for.
async fn jobs_now(
    control: &ControlHandle,
    since: Option<super::control::Stamp>,
) -> Option<(
    Option<super::control::Stamp>,
    Vec<super::control::JobSnapshot>,
)> {
    match control
        .jobs_since(since)
        .await
        .expect("the scheduler answers")
    {
        super::control::JobsAnswer::Unchanged => None,
        super::control::JobsAnswer::Changed { stamp, jobs } => Some((stamp, jobs)),
    }
}

/// A rendering the API keeps is reused only while nothing it shows moved:
/// a pause, a reload, a manual run and a fire that passes each void it.
#[tokio::test(start_paused = true)]
async fn a_jobs_stamp_holds_only_while_nothing_shown_changed() {
    let yaml = "jobs:\n  - name: far\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n  \
                - name: slow\n    command: \"sleep 30\"\n    schedule: \"0 * * * *\"\n";
    let h = start(job_set(yaml), Admission::Launch, SlotClaim::Claimed).await;
    let (stamp, jobs) = jobs_now(&h.control, None).await.expect("a first answer");
    let stamp = stamp.expect("an idle table is reusable");
    assert_eq!(jobs.len(), 2);
    // Reads (of any kind) change nothing.
    h.control.status().await.unwrap();
    h.control.metrics().await.unwrap();
    assert!(jobs_now(&h.control, Some(stamp)).await.is_none());

    // A pause shows up.
    let request = super::pause::PauseRequest {
        duration_seconds: Some(600),
        until: None,
        note: None,
        by: None,
        channel: None,
    };
    h.control.pause("far", request).await.unwrap();
    let (paused_stamp, jobs) = jobs_now(&h.control, Some(stamp)).await.expect("moved");
    assert!(jobs[0].paused.is_some());
    let paused_stamp = paused_stamp.expect("still reusable");

    // A new table shows up.
    h.sets
        .send(job_set(&format!("{yaml}{}", &every_minute("added")[5..])))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (table_stamp, jobs) = loop {
        if let Some(answer) = jobs_now(&h.control, Some(paused_stamp)).await {
            break answer;
        }
        assert!(std::time::Instant::now() < deadline, "the reload shows");
        tokio::task::yield_now().await;
    };
    assert_eq!(jobs.len(), 3);
    assert_eq!(jobs[2].config.name, "added");
    let table_stamp = table_stamp.expect("reusable");
    assert!(jobs_now(&h.control, Some(table_stamp)).await.is_none());

    // A manual run: while it runs nothing is reusable, and once it has
    // finished the run shows.
    h.control.start("slow").await.unwrap();
    let (running_stamp, jobs) = jobs_now(&h.control, Some(table_stamp))
        .await
        .expect("the start moved it");
    assert!(jobs[1].running);
    assert!(
        running_stamp.is_none(),
        "a running instance is never cached"
    );
    h.control.cancel("slow").await.unwrap();
    runs(&h.control, "slow", 1).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let after = loop {
        let (stamp, jobs) = jobs_now(&h.control, None).await.unwrap();
        if let Some(stamp) = stamp {
            break (stamp, jobs);
        }
        assert!(std::time::Instant::now() < deadline, "the run ends");
        tokio::task::yield_now().await;
    };
    assert!(!after.1[1].running);
    assert!(after.1[1].last_run.is_some(), "the finished run shows");

    // The stamp lasts until the earliest next fire (the minute boundary
    // of `added`), and the clock passing it voids the stamp.
    assert_eq!(Some(after.0.until), after.1[2].next_fire);
    tokio::time::advance(Duration::from_secs(31)).await;
    let (_, jobs) = jobs_now(&h.control, Some(after.0))
        .await
        .expect("a passed fire moves the next fires");
    assert!(jobs[2].next_fire.unwrap() > origin() + chrono::Duration::seconds(30));
    finish(h).await;
}

/// `/metrics` snapshots share their per-job rows while nothing changed,
/// and a recorded run gives fresh rows that encode it.
#[tokio::test(start_paused = true)]
async fn metrics_rows_are_shared_only_while_nothing_changed() {
    let yaml = "jobs:\n  - name: far\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n";
    let h = start(job_set(yaml), Admission::Launch, SlotClaim::Claimed).await;
    let first = h.control.metrics().await.unwrap();
    let second = h.control.metrics().await.unwrap();
    assert!(first.same_output(&second));
    let runs_line = |s: &crate::metrics::prometheus::Snapshot| {
        s.encode(crate::metrics::prometheus::Format::Text)
            .lines()
            .find(|l| {
                l.starts_with("cronstable_job_runs_total{job_name=\"far\",status=\"success\"}")
            })
            .unwrap_or_default()
            .to_owned()
    };
    assert!(runs_line(&second).ends_with(" 0"), "{}", runs_line(&second));
    h.control.start("far").await.unwrap();
    runs(&h.control, "far", 1).await;
    let after = h.control.metrics().await.unwrap();
    assert!(!after.same_output(&second));
    assert!(runs_line(&after).ends_with(" 1"), "{}", runs_line(&after));
    finish(h).await;
}

#[tokio::test(start_paused = true)]
async fn the_counters_follow_what_the_loads_publish() {
    let sections = |yaml: &str| {
        config::load_sources(&[Source {
            name: "c.yaml".into(),
            text: yaml.into(),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("loads")
        .sections
    };
    let live = super::sections::LiveSections::start(&sections(""), 0.0);
    let yaml = "jobs:\n  - name: far\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n";
    let running = spawn_following(
        job_set(yaml),
        Box::new(Standalone),
        Box::new(NoSlots),
        live.loads(),
    )
    .await;
    let text = |s: &crate::metrics::prometheus::Snapshot| {
        s.encode(crate::metrics::prometheus::Format::Text)
    };
    let bucket_bounds = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("cronstable_job_duration_seconds_bucket{job_name=\"far\""))
            .count()
    };
    let before = text(&running.control.metrics().await.unwrap());
    // The default bounds: nine and +Inf.
    assert_eq!(bucket_bounds(&before), 10, "{before}");
    assert!(before.contains("cronstable_config_last_reload_successful 1\n"));

    // A reload with other bounds: the next scrape has them.
    live.apply(&sections(
        "web:\n  listen:\n    - http://127.0.0.1:1\n  metrics:\n    durationBuckets: [1, 5]\n",
    ));
    let after = text(&running.control.metrics().await.unwrap());
    assert_eq!(bucket_bounds(&after), 3, "{after}");
    assert!(after.contains("le=\"5.0\""), "{after}");

    // A reload that fails: the gauge says so, the bounds stay.
    live.failed();
    let failed = text(&running.control.metrics().await.unwrap());
    assert!(
        failed.contains("cronstable_config_last_reload_successful 0\n"),
        "{failed}"
    );
    assert_eq!(bucket_bounds(&failed), 3);
    running.stop.stop(shutdown::StopCause::Request);
    let _ = running.task.await;
}
