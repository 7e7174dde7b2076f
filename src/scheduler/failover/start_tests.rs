//! The catch-up at start from a durable store (no leader election), with
//! pause windows the daemon slept through, driven through a fake store
//! under tokio's paused clock.

use crate::config::model::sections::OnStoreUnavailable;
use crate::config::JobConfig;
use crate::job::{RunRecord, Trigger};
use crate::report::{Hook, ReportFuture, Reporter};
use crate::scheduler::durable::{DurableError, DurableState, DurableWrite, Rehydrated};
use crate::scheduler::pause::{PauseMark, PauseWindow};
use crate::scheduler::ports::*;
use crate::scheduler::tests::{job_set, runs};
use crate::scheduler::{shutdown, Ports, Scheduler};
use chrono::{DateTime, TimeZone, Utc};
use futures_util::future::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The start instant: half a minute past 12:00 (12:00 itself is the
/// newest boundary the catch-up evaluates).
fn origin() -> DateTime<Utc> {
    at(12, 0, 30)
}

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap()
}

struct PausedClock {
    start: tokio::time::Instant,
}

impl Clock for PausedClock {
    fn now(&self) -> DateTime<Utc> {
        origin() + chrono::TimeDelta::from_std(self.start.elapsed()).unwrap_or_default()
    }
    fn sleep_until(&self, when: DateTime<Utc>) -> BoxFuture<'static, ()> {
        let offset = (when - origin()).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep_until(self.start + offset))
    }
}

/// No new job sets, ever.
struct NoSource;

impl JobSource for NoSource {
    fn poll(&mut self) -> Option<JobSet> {
        None
    }
    fn next(&mut self) -> BoxFuture<'_, JobSet> {
        Box::pin(std::future::pending())
    }
}

/// Every node admits every launch (no election: no leadership records).
struct Always;

impl LeaderGate for Always {
    fn admit(&self, _job: &JobConfig, _trigger: Trigger) -> Admission {
        Admission::Launch
    }
}

struct Quiet;

impl Reporter for Quiet {
    fn report(&self, _hook: Hook, _job: &JobConfig, _record: &RunRecord) -> ReportFuture {
        Box::pin(async {})
    }
}

/// A store that answers the start read with `read` and remembers the
/// catch-up checkpoints written.
struct FakeDurable {
    read: Option<Rehydrated>,
    checkpoints: Arc<Mutex<Vec<String>>>,
}

impl DurableState for FakeDurable {
    fn enabled(&self) -> bool {
        true
    }
    fn policy(&self) -> OnStoreUnavailable {
        OnStoreUnavailable::Degrade
    }
    fn write(&mut self, write: DurableWrite) {
        if let DurableWrite::Catchup {
            job,
            open,
            watermark,
        } = write
        {
            let kind = if open { "open" } else { "close" };
            self.checkpoints
                .lock()
                .unwrap()
                .push(format!("{kind} {job} {}", watermark.format("%H:%M:%S")));
        }
    }
    fn rehydrate(
        &mut self,
        _jobs: Arc<Vec<Arc<JobConfig>>>,
    ) -> BoxFuture<'static, Result<Rehydrated, DurableError>> {
        let read = self.read.take().unwrap_or_default();
        Box::pin(std::future::ready(Ok(read)))
    }
    fn jobs_changed(&mut self, _jobs: &Arc<Vec<Arc<JobConfig>>>) {}
}

struct Node {
    control: crate::scheduler::control::ControlHandle,
    checkpoints: Arc<Mutex<Vec<String>>>,
    stop: shutdown::ShutdownHandle,
    task: tokio::task::JoinHandle<()>,
}

impl Node {
    fn checkpoints(&self) -> Vec<String> {
        self.checkpoints.lock().unwrap().clone()
    }

    /// The runs of `j` once its catch-up is closed and nothing of it runs
    /// any more (or after ten real seconds, whatever there is).
    async fn settled_runs(&self, closed: bool) -> Vec<RunRecord> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let done = !closed || self.checkpoints().iter().any(|c| c.starts_with("close"));
            let idle = !self.control.job("j").await.unwrap().running;
            if (done && idle) || std::time::Instant::now() > deadline {
                break;
            }
            tokio::task::yield_now().await;
        }
        for _ in 0..200 {
            tokio::task::yield_now().await;
        }
        self.control.runs("j").await.unwrap()
    }

    async fn finish(self) {
        self.stop.trigger();
        self.task.await.expect("the scheduler task ends cleanly");
    }
}

fn job(on_missed: &str) -> String {
    format!(
        "jobs:
  - name: j
    command: \"true\"
    schedule: \"* * * * *\"
    onMissed: {on_missed}
"
    )
}

/// Starts a scheduler whose store holds `j`'s watermark at 11:50 and
/// `read`'s pauses.
async fn start(yaml: &str, mut read: Rehydrated) -> Node {
    read.watermarks.insert("j".into(), at(11, 50, 0));
    let checkpoints = Arc::new(Mutex::new(Vec::new()));
    let (stop, requests) = shutdown::channel();
    let scheduler = Scheduler::new(
        job_set(yaml),
        Ports {
            source: Box::new(NoSource),
            gate: Box::new(Always),
            slots: Box::new(NoSlots),
            store: Box::new(MemoryStore::default()),
            durable: Box::new(FakeDurable {
                read: Some(read),
                checkpoints: Arc::clone(&checkpoints),
            }),
            clock: Arc::new(PausedClock {
                start: tokio::time::Instant::now(),
            }),
            reporter: Arc::new(Quiet),
            started_at: 0.0,
            loads: crate::scheduler::sections::LiveSections::start(&Default::default(), 0.0)
                .loads(),
            shutdown: stop.clone(),
        },
    );
    let control = scheduler.control();
    let task = tokio::spawn(scheduler.run(requests));
    control.job_set_id().await.expect("the scheduler runs");
    Node {
        control,
        checkpoints,
        stop,
        task,
    }
}

fn paused(since: DateTime<Utc>, until: DateTime<Utc>) -> PauseMark {
    PauseMark::Paused(PauseWindow {
        since,
        until,
        note: String::new(),
        by: "ops".into(),
        channel: "api".into(),
    })
}

fn history(marks: Vec<PauseMark>) -> Rehydrated {
    let mut read = Rehydrated::default();
    if let Some(newest) = marks.last() {
        read.pauses.insert("j".into(), newest.clone());
    }
    read.pause_history.insert("j".into(), marks);
    read
}

#[tokio::test(start_paused = true)]
async fn with_no_pause_every_missed_fire_is_replayed() {
    // The control case for the tests below: 11:51 .. 12:00.
    let node = start(&job("run-all"), Rehydrated::default()).await;
    let done = node.settled_runs(true).await;
    assert_eq!(done.len(), 10, "{done:?}");
    assert_eq!(
        node.checkpoints(),
        vec!["open j 11:50:00", "close j 11:50:00"]
    );
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn run_all_replays_only_the_fires_outside_a_pause_that_lapsed_while_down() {
    // Paused 11:52:30 until 11:58, resumed at 11:55: 11:53 and 11:54
    // were held; 11:51, 11:52 and 11:55 .. 12:00 are owed.
    let read = history(vec![
        paused(at(11, 52, 30), at(11, 58, 0)),
        PauseMark::Resumed {
            at: at(11, 55, 0),
            by: "ops".into(),
        },
    ]);
    let node = start(&job("run-all"), read).await;
    let done = node.settled_runs(true).await;
    assert_eq!(done.len(), 8, "{done:?}");
    assert!(done.iter().all(|r| r.trigger == Trigger::Schedule));
    assert_eq!(
        node.checkpoints(),
        vec!["open j 11:50:00", "close j 11:50:00"]
    );
    assert_eq!(node.control.job("j").await.unwrap().paused, None);
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn run_once_owes_nothing_when_every_missed_fire_was_paused() {
    // Paused from before the watermark until just after 12:00 (lapsed
    // at the start, 12:00:30): nothing owed, no checkpoint.
    let node = start(
        &job("run-once"),
        history(vec![paused(at(11, 45, 0), at(12, 0, 10))]),
    )
    .await;
    let done = node.settled_runs(false).await;
    assert!(done.is_empty(), "{done:?}");
    assert!(node.checkpoints().is_empty(), "{:?}", node.checkpoints());
    // The schedule goes on: 12:01 runs.
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(runs(&node.control, "j", 1).await.len(), 1);
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn run_once_still_runs_for_the_fires_after_the_pause() {
    let node = start(
        &job("run-once"),
        history(vec![paused(at(11, 45, 0), at(11, 58, 0))]),
    )
    .await;
    let done = node.settled_runs(true).await;
    assert_eq!(done.len(), 1, "{done:?}");
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn the_newest_mark_alone_excuses_its_window() {
    // A store that keeps only the newest mark per job (the Kubernetes
    // facts): its lapsed pause still excuses 11:51 .. 11:59.
    let mut read = Rehydrated::default();
    read.pauses
        .insert("j".into(), paused(at(11, 45, 0), at(11, 59, 30)));
    let node = start(&job("run-all"), read).await;
    let done = node.settled_runs(true).await;
    assert_eq!(done.len(), 1, "only 12:00: {done:?}");
    node.finish().await;
}
