//! The scheduler's failover duties (`@reboot` once per cluster, fire
//! records, a new leader's catch-up) driven through a gate whose
//! leadership and store the test flips, under tokio's paused clock.

use super::control::ControlError;
use super::pause::{PauseMark, PauseRequest, PauseWindow};
use super::ports::*;
use super::shutdown;
use super::tests::{job_set, runs, spawn_scheduler};
use crate::config::model::ClusterPolicy;
use crate::config::JobConfig;
use crate::job::Trigger;
use chrono::{DateTime, TimeZone, Utc};
use futures_util::future::BoxFuture;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

/// The store: what it holds, and every call made to it, in order.
#[derive(Default)]
struct FakeRecords {
    reboot_ran: Mutex<HashSet<String>>,
    fires: Mutex<HashMap<String, DateTime<Utc>>>,
    calls: Mutex<Vec<String>>,
    /// When set, `record_fire` waits for a permit (to observe the launch
    /// waiting for the record).
    fire_gate: Option<Arc<Semaphore>>,
    /// The recorded pauses and resumes.
    pauses: Mutex<HashMap<String, PauseMark>>,
    /// When set, reading the pauses waits for a permit (to observe the
    /// fires waiting for them).
    pause_gate: Option<Arc<Semaphore>>,
    /// When set, recording a pause fails with this store error.
    pause_write_error: Option<String>,
    /// How many times the pauses were read.
    pause_reads: AtomicU64,
}

impl LeaderRecords for Arc<FakeRecords> {
    fn reboot_ran(&self, _id: &str) -> BoxFuture<'static, Result<HashSet<String>, RecordsError>> {
        let ran = self.reboot_ran.lock().unwrap().clone();
        Box::pin(async move { Ok(ran) })
    }
    fn mark_reboot_ran(
        &self,
        _id: &str,
        job: &str,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        self.calls.lock().unwrap().push(format!("mark {job}"));
        self.reboot_ran.lock().unwrap().insert(job.to_owned());
        Box::pin(async { Ok(()) })
    }
    fn last_fires(
        &self,
    ) -> BoxFuture<'static, Result<HashMap<String, DateTime<Utc>>, RecordsError>> {
        let fires = self.fires.lock().unwrap().clone();
        Box::pin(async move { Ok(fires) })
    }
    fn record_fire(
        &self,
        job: &str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        let this = Arc::clone(self);
        let job = job.to_owned();
        Box::pin(async move {
            if let Some(gate) = &this.fire_gate {
                gate.acquire()
                    .await
                    .expect("the permit pool stays open")
                    .forget();
            }
            this.calls
                .lock()
                .unwrap()
                .push(format!("fire {job} {}", at.format("%H:%M:%S")));
            this.fires.lock().unwrap().insert(job, at);
            Ok(())
        })
    }
    fn pauses(&self) -> BoxFuture<'static, Result<HashMap<String, PauseMark>, RecordsError>> {
        let this = Arc::clone(self);
        Box::pin(async move {
            if let Some(gate) = &this.pause_gate {
                gate.acquire()
                    .await
                    .expect("the permit pool stays open")
                    .forget();
            }
            this.pause_reads.fetch_add(1, Ordering::SeqCst);
            let marks = this.pauses.lock().unwrap().clone();
            Ok(marks)
        })
    }
    fn record_pause(
        &self,
        job: &str,
        mark: PauseMark,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        if let Some(error) = &self.pause_write_error {
            return Box::pin(std::future::ready(Err(RecordsError::Store(error.clone()))));
        }
        self.calls
            .lock()
            .unwrap()
            .push(format!("record pause {job}"));
        self.pauses.lock().unwrap().insert(job.to_owned(), mark);
        Box::pin(async { Ok(()) })
    }
}

/// A lease gate the test drives: leader or follower, and a term that
/// moves when the test makes this node a new leader.
struct TestGate {
    leader: Arc<AtomicBool>,
    term: Arc<AtomicU64>,
    records: Arc<FakeRecords>,
}

impl LeaderGate for TestGate {
    fn admit(&self, job: &JobConfig, _trigger: Trigger) -> Admission {
        if job.cluster_policy == ClusterPolicy::EveryNode || self.leader.load(Ordering::SeqCst) {
            Admission::Launch
        } else {
            Admission::Skip
        }
    }
    fn records(&self) -> Option<Arc<dyn LeaderRecords>> {
        Some(Arc::new(Arc::clone(&self.records)))
    }
    fn leadership_term(&self) -> u64 {
        self.term.load(Ordering::SeqCst)
    }
    fn runner(&self, job: &JobConfig) -> Runner {
        if job.cluster_policy == ClusterPolicy::EveryNode {
            Runner::Here
        } else if self.leader.load(Ordering::SeqCst) {
            Runner::Leader
        } else {
            Runner::Elsewhere("other".into())
        }
    }
}

struct Node {
    control: super::control::ControlHandle,
    leader: Arc<AtomicBool>,
    term: Arc<AtomicU64>,
    records: Arc<FakeRecords>,
    stop: shutdown::ShutdownHandle,
    task: tokio::task::JoinHandle<()>,
    _sets: mpsc::UnboundedSender<JobSet>,
}

impl Node {
    fn calls(&self) -> Vec<String> {
        self.records.calls.lock().unwrap().clone()
    }

    /// Makes this node the leader of a new term.
    fn take_over(&self) {
        self.leader.store(true, Ordering::SeqCst);
        self.term.fetch_add(1, Ordering::SeqCst);
    }

    async fn finish(self) {
        self.stop.trigger();
        self.task.await.expect("the scheduler task ends cleanly");
    }
}

async fn start(yaml: &str, leader: bool, records: FakeRecords) -> Node {
    let term = Arc::new(AtomicU64::new(u64::from(leader)));
    let leader = Arc::new(AtomicBool::new(leader));
    let records = Arc::new(records);
    let running = spawn_scheduler(
        job_set(yaml),
        Box::new(TestGate {
            leader: Arc::clone(&leader),
            term: Arc::clone(&term),
            records: Arc::clone(&records),
        }),
        Box::new(NoSlots),
    )
    .await;
    Node {
        control: running.control,
        leader,
        term,
        records,
        stop: running.stop,
        task: running.task,
        _sets: running.sets,
    }
}

/// Lets spawned store calls and processes finish without moving the clock.
async fn settle() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap()
}

const REBOOT_JOBS: &str = "jobs:
  - name: once
    command: \"true\"
    schedule: \"@reboot\"
  - name: everywhere
    command: \"true\"
    schedule: \"@reboot\"
    clusterPolicy: EveryNode
";

#[tokio::test(start_paused = true)]
async fn the_leader_records_a_deferred_reboot_job_then_runs_it() {
    let node = start(REBOOT_JOBS, true, FakeRecords::default()).await;
    assert_eq!(runs(&node.control, "once", 1).await.len(), 1);
    assert_eq!(runs(&node.control, "everywhere", 1).await.len(), 1);
    assert_eq!(node.calls(), vec!["mark once"], "recorded before it ran");
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_reboot_job_the_cluster_already_ran_stands_down() {
    let records = FakeRecords::default();
    records.reboot_ran.lock().unwrap().insert("once".into());
    let node = start(REBOOT_JOBS, true, records).await;
    // EveryNode runs at every start; the recorded one never runs here.
    assert_eq!(runs(&node.control, "everywhere", 1).await.len(), 1);
    tokio::time::advance(Duration::from_secs(5)).await;
    settle().await;
    assert!(node.control.runs("once").await.unwrap().is_empty());
    assert!(node.calls().is_empty());
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_follower_keeps_its_reboot_job_pending_until_it_leads() {
    let node = start(REBOOT_JOBS, false, FakeRecords::default()).await;
    assert_eq!(runs(&node.control, "everywhere", 1).await.len(), 1);
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert!(node.control.runs("once").await.unwrap().is_empty());
    // The old leader died before running it: this node takes over and runs
    // it within a recheck.
    node.take_over();
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(runs(&node.control, "once", 1).await.len(), 1);
    assert_eq!(node.calls(), vec!["mark once"]);
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_follower_retires_its_reboot_job_once_the_leader_recorded_it() {
    let node = start(REBOOT_JOBS, false, FakeRecords::default()).await;
    node.records
        .reboot_ran
        .lock()
        .unwrap()
        .insert("once".into());
    // The next pass reads the store and retires it; leading later changes
    // nothing.
    tokio::time::advance(Duration::from_secs(31)).await;
    settle().await;
    node.take_over();
    tokio::time::advance(Duration::from_secs(3)).await;
    settle().await;
    assert!(node.control.runs("once").await.unwrap().is_empty());
    assert!(node.calls().is_empty());
    node.finish().await;
}

fn catch_up_job(on_missed: &str, extra: &str) -> String {
    format!(
        "jobs:
  - name: j
    command: \"true\"
    schedule: \"* * * * *\"
    onMissed: {on_missed}
{extra}"
    )
}

#[tokio::test(start_paused = true)]
async fn a_scheduled_fire_is_recorded_before_it_launches() {
    let gate = Arc::new(Semaphore::new(0));
    let node = start(
        &catch_up_job("run-once", ""),
        true,
        FakeRecords {
            fire_gate: Some(Arc::clone(&gate)),
            ..Default::default()
        },
    )
    .await;
    tokio::time::advance(Duration::from_secs(31)).await;
    settle().await;
    assert!(
        node.control.runs("j").await.unwrap().is_empty(),
        "no launch while the record is being written"
    );
    gate.add_permits(1);
    let done = runs(&node.control, "j", 1).await;
    assert_eq!(done.len(), 1);
    assert_eq!(node.calls(), vec!["fire j 12:01:00"]);
    assert_eq!(done[0].trigger, Trigger::Schedule);
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn jobs_without_catch_up_record_nothing() {
    let node = start(&catch_up_job("skip", ""), true, FakeRecords::default()).await;
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(runs(&node.control, "j", 1).await.len(), 1);
    assert!(node.calls().is_empty());
    node.finish().await;
}

/// A follower while the old leader recorded its last fire at 11:58, then
/// leader from 12:03:00's pass on: the boundaries 11:59 .. 12:02 fell in
/// the takeover window.
async fn takeover(on_missed: &str, extra: &str) -> Node {
    let records = FakeRecords::default();
    records
        .fires
        .lock()
        .unwrap()
        .insert("j".into(), at(11, 58, 0));
    let node = start(&catch_up_job(on_missed, extra), false, records).await;
    // 12:01 and 12:02 pass while another node should lead.
    tokio::time::advance(Duration::from_secs(91)).await;
    settle().await;
    assert!(node.control.runs("j").await.unwrap().is_empty());
    node.take_over();
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    node
}

#[tokio::test(start_paused = true)]
async fn a_new_leader_runs_a_run_once_job_once_for_the_window() {
    let node = takeover("run-once", "").await;
    // One catch-up launch plus 12:03's own fire.
    let done = runs(&node.control, "j", 2).await;
    settle().await;
    assert_eq!(node.control.runs("j").await.unwrap().len(), 2, "{done:?}");
    let calls = node.calls();
    assert!(calls.contains(&"fire j 12:02:00".to_owned()), "{calls:?}");
    assert!(calls.contains(&"fire j 12:03:00".to_owned()), "{calls:?}");
    assert_eq!(calls.len(), 2, "{calls:?}");
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_new_leader_replays_each_missed_fire_of_a_run_all_job() {
    let node = takeover("run-all", "").await;
    // 11:59, 12:00, 12:01, 12:02 owed, then 12:03 on schedule.
    let done = runs(&node.control, "j", 5).await;
    assert_eq!(done.len(), 5, "{done:?}");
    let backfills = node
        .calls()
        .iter()
        .filter(|c| *c == "fire j 12:02:00")
        .count();
    assert_eq!(backfills, 4, "{:?}", node.calls());
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn the_starting_deadline_bounds_the_catch_up() {
    // At 12:03:00 a 150 s deadline reaches back to 12:00:30: only 12:01
    // and 12:02 are still owed.
    let node = takeover("run-all", "    startingDeadlineSeconds: 150\n").await;
    let done = runs(&node.control, "j", 3).await;
    settle().await;
    assert_eq!(node.control.runs("j").await.unwrap().len(), 3, "{done:?}");
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_never_recorded_is_owed_nothing() {
    let node = start(&catch_up_job("run-all", ""), false, FakeRecords::default()).await;
    tokio::time::advance(Duration::from_secs(91)).await;
    settle().await;
    node.take_over();
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    // Only 12:03's own fire.
    assert_eq!(runs(&node.control, "j", 1).await.len(), 1);
    settle().await;
    assert_eq!(node.control.runs("j").await.unwrap().len(), 1);
    assert_eq!(node.calls(), vec!["fire j 12:03:00"]);
    node.finish().await;
}

fn window(since: DateTime<Utc>, until: DateTime<Utc>) -> PauseWindow {
    PauseWindow {
        since,
        until,
        note: "migration".into(),
        by: "ops".into(),
        channel: "api".into(),
    }
}

/// A follower until 12:02:00's pass, then the leader of a new term, with
/// `j` paused in the store from 11:00 until `until` by the old leader.
async fn paused_takeover(yaml: &str, until: DateTime<Utc>, records: FakeRecords) -> Node {
    records
        .pauses
        .lock()
        .unwrap()
        .insert("j".into(), PauseMark::Paused(window(at(11, 0, 0), until)));
    let node = start(yaml, false, records).await;
    tokio::time::advance(Duration::from_secs(31)).await;
    settle().await;
    assert!(node.control.runs("j").await.unwrap().is_empty());
    node.take_over();
    node
}

#[tokio::test(start_paused = true)]
async fn a_new_leader_applies_the_recorded_pause_before_its_first_fire() {
    let gate = Arc::new(Semaphore::new(0));
    let node = paused_takeover(
        &catch_up_job("skip", ""),
        at(12, 3, 30),
        FakeRecords {
            pause_gate: Some(Arc::clone(&gate)),
            ..Default::default()
        },
    )
    .await;
    // 12:02:00: the fire waits for the recorded pauses.
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    assert!(
        node.control.runs("j").await.unwrap().is_empty(),
        "nothing launched or skipped while the pauses are read"
    );
    gate.add_permits(1);
    let done = runs(&node.control, "j", 1).await;
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].skip_reason.as_deref(), Some("paused"), "{done:?}");
    assert_eq!(done[0].finished_at, at(12, 2, 0), "the held boundary");
    let shown = node.control.job("j").await.unwrap();
    assert_eq!(shown.paused, Some(window(at(11, 0, 0), at(12, 3, 30))));
    // 12:03 is still paused; 12:04 runs.
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    tokio::time::advance(Duration::from_secs(60)).await;
    let done = runs(&node.control, "j", 3).await;
    assert_eq!(done.len(), 3, "{done:?}");
    assert_eq!(done[1].skip_reason.as_deref(), Some("paused"));
    assert_eq!(done[2].skip_reason, None);
    assert_eq!(
        node.records.pause_reads.load(Ordering::SeqCst),
        1,
        "read once per term"
    );
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_paused_job_is_owed_no_catch_up_and_a_lapsed_pause_is_ignored() {
    // The catch-up answer comes first; the pause still applies before it.
    let records = FakeRecords::default();
    records
        .fires
        .lock()
        .unwrap()
        .insert("j".into(), at(11, 58, 0));
    let node = paused_takeover(&catch_up_job("run-all", ""), at(12, 10, 0), records).await;
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    let done = runs(&node.control, "j", 1).await;
    settle().await;
    let done_now = node.control.runs("j").await.unwrap();
    assert_eq!(done_now.len(), 1, "{done:?}");
    assert_eq!(done_now[0].skip_reason.as_deref(), Some("paused"));
    node.finish().await;

    // A pause that ended before the takeover changes nothing.
    let node = paused_takeover(
        &catch_up_job("skip", ""),
        at(12, 1, 0),
        FakeRecords::default(),
    )
    .await;
    tokio::time::advance(Duration::from_secs(60)).await;
    let done = runs(&node.control, "j", 1).await;
    assert_eq!(done[0].skip_reason, None, "{done:?}");
    assert_eq!(node.control.job("j").await.unwrap().paused, None);
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_recorded_resume_ends_an_older_local_pause_on_the_new_leader() {
    let node = start(&catch_up_job("skip", ""), false, FakeRecords::default()).await;
    // Paused here long ago (as an earlier leader would have been), then
    // resumed by another leader since.
    node.leader.store(true, Ordering::SeqCst);
    node.control
        .pause("j", PauseRequest::default())
        .await
        .expect("a leader takes a pause");
    node.leader.store(false, Ordering::SeqCst);
    node.records.pauses.lock().unwrap().insert(
        "j".into(),
        PauseMark::Resumed {
            at: at(12, 1, 0),
            by: "ops".into(),
        },
    );
    tokio::time::advance(Duration::from_secs(31)).await;
    settle().await;
    node.take_over();
    tokio::time::advance(Duration::from_secs(60)).await;
    // 12:01 was skipped here (paused locally), 12:02 runs as the leader.
    let done = runs(&node.control, "j", 2).await;
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(done[0].skip_reason.as_deref(), Some("paused"));
    assert_eq!(done[1].skip_reason, None, "resumed: {done:?}");
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn the_leader_records_pauses_and_resumes_and_a_follower_refuses_them() {
    let node = start(&catch_up_job("skip", ""), true, FakeRecords::default()).await;
    let window = node
        .control
        .pause("j", PauseRequest::default())
        .await
        .expect("paused");
    assert_eq!(
        node.records.pauses.lock().unwrap().get("j"),
        Some(&PauseMark::Paused(window.clone()))
    );
    node.control.resume("j", "ops").await.expect("resumed");
    match node.records.pauses.lock().unwrap().get("j") {
        Some(PauseMark::Resumed { by, at }) => {
            assert_eq!(by, "ops");
            assert!(*at >= window.since);
        }
        other => panic!("no resume recorded: {other:?}"),
    }
    // A follower: every control request names the runner; nothing changes.
    node.leader.store(false, Ordering::SeqCst);
    let elsewhere = ControlError::Elsewhere {
        job: "j".into(),
        runner: "other".into(),
    };
    assert_eq!(
        node.control.pause("j", PauseRequest::default()).await,
        Err(elsewhere.clone())
    );
    assert_eq!(
        node.control.resume("j", "api").await,
        Err(elsewhere.clone())
    );
    assert_eq!(node.control.start("j").await, Err(elsewhere.clone()));
    assert_eq!(node.control.cancel("j").await, Err(elsewhere.clone()));
    assert_eq!(node.control.job("j").await.unwrap().paused, None);
    // A bad window is refused before the routing, wherever it lands.
    let bad = PauseRequest {
        duration_seconds: Some(0),
        ..Default::default()
    };
    assert!(matches!(
        node.control.pause("j", bad).await,
        Err(ControlError::BadRequest(_))
    ));
    // `start_here` runs it on this node anyway.
    node.control.start_here("j").await.expect("started here");
    assert_eq!(
        runs(&node.control, "j", 1).await[0].trigger,
        Trigger::Manual
    );
    assert_eq!(
        node.calls(),
        vec!["record pause j", "record pause j"],
        "the follower recorded nothing"
    );
    node.finish().await;
}

#[tokio::test(start_paused = true)]
async fn a_pause_the_store_did_not_record_is_an_error_naming_why() {
    let node = start(
        &catch_up_job("skip", ""),
        true,
        FakeRecords {
            pause_write_error: Some("the lease file is gone".into()),
            ..Default::default()
        },
    )
    .await;
    let err = node
        .control
        .pause("j", PauseRequest::default())
        .await
        .expect_err("not recorded");
    assert_eq!(
        err.to_string(),
        "job 'j' was paused on this node, but the cluster's leadership store did not record it \
         (the lease file is gone), so a new leader would not know: send the request again"
    );
    // It holds here, as the message says.
    assert!(node.control.job("j").await.unwrap().paused.is_some());
    node.finish().await;
}

/// [`takeover`] with the old leader's newest pause mark of `j` recorded
/// too: a pause from 11:00 that lapsed at `until`, before the takeover.
async fn takeover_after_a_pause(on_missed: &str, until: DateTime<Utc>) -> Node {
    let records = FakeRecords::default();
    records
        .fires
        .lock()
        .unwrap()
        .insert("j".into(), at(11, 58, 0));
    records
        .pauses
        .lock()
        .unwrap()
        .insert("j".into(), PauseMark::Paused(window(at(11, 0, 0), until)));
    let node = start(&catch_up_job(on_missed, ""), false, records).await;
    tokio::time::advance(Duration::from_secs(91)).await;
    settle().await;
    node.take_over();
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    node
}

#[tokio::test(start_paused = true)]
async fn a_new_leader_owes_nothing_for_the_slots_of_a_lapsed_recorded_pause() {
    // 11:59, 12:00 and 12:01 fell inside the pause (until 12:01:30):
    // only 12:02 is replayed, then 12:03 fires on schedule.
    let node = takeover_after_a_pause("run-all", at(12, 1, 30)).await;
    let done = runs(&node.control, "j", 2).await;
    settle().await;
    let done_now = node.control.runs("j").await.unwrap();
    assert_eq!(done_now.len(), 2, "{done:?}");
    assert!(done_now.iter().all(|r| r.skip_reason.is_none()));
    assert_eq!(
        node.calls(),
        vec!["fire j 12:02:00", "fire j 12:03:00"],
        "one backfill"
    );
    node.finish().await;

    // Every slot of the window paused: a run-once job is owed nothing.
    let node = takeover_after_a_pause("run-once", at(12, 2, 30)).await;
    assert_eq!(runs(&node.control, "j", 1).await.len(), 1);
    settle().await;
    assert_eq!(node.control.runs("j").await.unwrap().len(), 1);
    assert_eq!(node.calls(), vec!["fire j 12:03:00"]);
    node.finish().await;
}
