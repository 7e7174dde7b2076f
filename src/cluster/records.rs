//! What the leadership store remembers besides who leads: the `@reboot`
//! jobs that already ran in the cluster (scoped to the job-set id) and the
//! last scheduled fire each job launched. This module holds the formats
//! (pure, unit-tested) and the handle the scheduler calls; each backend
//! reads and writes them in its own store, on the driver's task, so a
//! record write never races the backend's own renewal of the same object.
//!
//! Formats:
//! - the `@reboot`-ran set: compact JSON `{"jobSetId":"v1:..","jobs":[..]}`
//!   with the jobs sorted (the original's format; a set recorded for
//!   another job-set id counts as empty and is replaced);
//! - the last fires (ours): a compact JSON object `{job: RFC 3339 UTC with
//!   seconds}`, capped at [`LAST_FIRES_MAX`] entries and
//!   [`LAST_FIRES_MAX_BYTES`] bytes (the oldest fires dropped first), so it
//!   always fits a Kubernetes annotation;
//! - the filesystem backend's record files: `{"data":{..},
//!   "schemaVersion":"v1"}` named `<epoch %020.6f>-<instance>-<seq %012d>`
//!   (the original's records format, so both daemons can share a mount).

use crate::scheduler::pause::PauseMark;
use crate::scheduler::ports::{LeaderRecords, RecordsError};
use chrono::{DateTime, SecondsFormat, Utc};
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

pub use crate::state::format::{
    ascii_json, decode_record, encode_record, record_stem, stem_epoch, SCHEMA_VERSION,
};

/// Most jobs the last-fires record keeps (the oldest fires dropped).
pub const LAST_FIRES_MAX: usize = 1000;

/// Most bytes the encoded last-fires record may take (a Kubernetes
/// object's annotations share a 256 KiB budget with the `@reboot` set).
pub const LAST_FIRES_MAX_BYTES: usize = 128 * 1024;

/// How many of the newest `@reboot`-ran records the filesystem backend
/// reads (and keeps: the stream is pruned to this many).
pub const REBOOT_RAN_WINDOW: usize = 512;

/// Attempts of a compare-and-swap write before giving up.
pub const CAS_ATTEMPTS: usize = 3;

/// The Kubernetes annotation holding the `@reboot`-ran set.
pub const REBOOT_RAN_ANNOTATION: &str = "cronstable.io/reboot-ran";

/// The Kubernetes annotation holding the last fires.
pub const LAST_FIRES_ANNOTATION: &str = "cronstable.io/last-fires";

/// The filesystem record stream of the `@reboot`-ran set.
pub const REBOOT_RAN_STREAM: &str = "cluster/reboot-ran";

/// The filesystem record stream of the last fires.
pub const LAST_FIRES_STREAM: &str = "cluster/last-fires";

/// One request to a backend's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordsOp {
    /// The `@reboot` jobs recorded as run for this job-set id.
    RebootRan {
        /// The live job-set id.
        job_set_id: String,
    },
    /// Record that `job` of `job_set_id` is about to run its `@reboot`.
    MarkRebootRan {
        /// The live job-set id.
        job_set_id: String,
        /// The job.
        job: String,
    },
    /// The last fire recorded per job.
    LastFires,
    /// Record that `job`'s fire scheduled for `at` is about to launch.
    RecordFire {
        /// The job.
        job: String,
        /// The scheduled instant of the fire.
        at: DateTime<Utc>,
    },
    /// The newest pause or resume recorded per job (see [`super::pauses`]).
    Pauses,
    /// Record a pause or resume of `job` the leader accepted.
    RecordPause {
        /// The job.
        job: String,
        /// The pause or resume.
        mark: PauseMark,
    },
}

/// A backend's answer to a [`RecordsOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordsAnswer {
    /// The `@reboot` jobs recorded for the asked job-set id.
    Jobs(HashSet<String>),
    /// The last fire per job.
    Fires(HashMap<String, DateTime<Utc>>),
    /// The newest pause or resume per job.
    Pauses(HashMap<String, PauseMark>),
    /// The write landed (or had nothing to change).
    Done,
}

/// What a backend answers with.
pub type RecordsResult = Result<RecordsAnswer, RecordsError>;

/// The `@reboot`-ran set as stored: its job-set id (None when missing or
/// not a string) and its jobs. Junk reads as an empty set with no id: a
/// record someone else wrote badly must never stop the scheduler.
pub fn decode_reboot_ran(raw: Option<&str>) -> (Option<String>, BTreeSet<String>) {
    let Some(Value::Object(map)) = raw.and_then(|r| serde_json::from_str::<Value>(r).ok()) else {
        return (None, BTreeSet::new());
    };
    let id = map
        .get("jobSetId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let jobs = map
        .get("jobs")
        .and_then(Value::as_array)
        .map(|jobs| {
            jobs.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    (id, jobs)
}

/// The stored set's text for `job_set_id` and `jobs` (sorted, compact).
pub fn encode_reboot_ran(job_set_id: &str, jobs: &BTreeSet<String>) -> String {
    ascii_json(&json!({"jobSetId": job_set_id, "jobs": jobs}))
}

/// The jobs of `raw` that count for `job_set_id` (none when it was
/// recorded for another job set).
pub fn reboot_jobs_for(raw: Option<&str>, job_set_id: &str) -> HashSet<String> {
    match decode_reboot_ran(raw) {
        (Some(id), jobs) if id == job_set_id => jobs.into_iter().collect(),
        _ => HashSet::new(),
    }
}

/// The new text after marking `job` as run for `job_set_id`, or None
/// when `raw` already records it (no write needed). A set of another
/// job-set id is replaced, not merged.
pub fn with_reboot_job(raw: Option<&str>, job_set_id: &str, job: &str) -> Option<String> {
    let mut jobs = match decode_reboot_ran(raw) {
        (Some(id), jobs) if id == job_set_id => jobs,
        _ => BTreeSet::new(),
    };
    if !jobs.insert(job.to_owned()) {
        return None;
    }
    Some(encode_reboot_ran(job_set_id, &jobs))
}

/// An instant as the last-fires record writes it: RFC 3339, UTC, whole
/// seconds (`2026-06-23T19:00:00Z`; schedules have no finer grain).
pub fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Reads one RFC 3339 instant (any offset) as UTC.
pub fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The last-fires record as stored; entries that do not read are
/// skipped (the rest still count).
pub fn decode_fires(raw: Option<&str>) -> BTreeMap<String, DateTime<Utc>> {
    let Some(Value::Object(map)) = raw.and_then(|r| serde_json::from_str::<Value>(r).ok()) else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(job, at)| Some((job.clone(), parse_instant(at.as_str()?)?)))
        .collect()
}

/// The record's text, capped: past [`LAST_FIRES_MAX`] entries or
/// [`LAST_FIRES_MAX_BYTES`] bytes the oldest fires go first (a job that
/// has not fired for that long has nothing to catch up that matters
/// more than the recent ones).
pub fn encode_fires(fires: &BTreeMap<String, DateTime<Utc>>) -> String {
    let mut kept = fires.clone();
    let mut by_age: Vec<(DateTime<Utc>, String)> =
        fires.iter().map(|(job, at)| (*at, job.clone())).collect();
    by_age.sort();
    let mut oldest = by_age.into_iter();
    while kept.len() > LAST_FIRES_MAX {
        match oldest.next() {
            Some((_, job)) => kept.remove(&job),
            None => break,
        };
    }
    loop {
        let object: Map<String, Value> = kept
            .iter()
            .map(|(job, at)| (job.clone(), Value::String(rfc3339(*at))))
            .collect();
        let text = ascii_json(&Value::Object(object));
        if text.len() <= LAST_FIRES_MAX_BYTES || kept.is_empty() {
            return text;
        }
        match oldest.next() {
            Some((_, job)) => kept.remove(&job),
            None => return text,
        };
    }
}

/// The new text after recording `job`'s fire at `at`, or None when the
/// record already holds that fire or a later one (a late write from a
/// backfill never moves a job's last fire backwards).
pub fn with_fire(raw: Option<&str>, job: &str, at: DateTime<Utc>) -> Option<String> {
    let mut fires = decode_fires(raw);
    if fires.get(job).is_some_and(|seen| *seen >= at) {
        return None;
    }
    fires.insert(job.to_owned(), at);
    Some(encode_fires(&fires))
}

/// The `@reboot` jobs of `job_set_id` among record bodies (any order).
pub fn reboot_jobs_in(records: &[Map<String, Value>], job_set_id: &str) -> HashSet<String> {
    records
        .iter()
        .filter(|r| r.get("jobSetId").and_then(Value::as_str) == Some(job_set_id))
        .filter_map(|r| r.get("job").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The last fire per job among `(file name, body)` records: the latest
/// `at` wins, whatever order the files were written in.
pub fn fires_in(records: &[(String, Map<String, Value>)]) -> BTreeMap<String, DateTime<Utc>> {
    let mut fires = BTreeMap::new();
    for (_, body) in records {
        let (Some(job), Some(at)) = (
            body.get("job").and_then(Value::as_str),
            body.get("at")
                .and_then(Value::as_str)
                .and_then(parse_instant),
        ) else {
            continue;
        };
        let entry = fires.entry(job.to_owned()).or_insert(at);
        if at > *entry {
            *entry = at;
        }
    }
    fires
}

/// The last-fires record files a prune deletes: every file but the one
/// holding each job's latest fire, then the files of the oldest jobs past
/// [`LAST_FIRES_MAX`]. Files that do not read are left alone.
pub fn fires_to_prune(records: &[(String, Map<String, Value>)]) -> Vec<String> {
    // job -> (at, name) of the record to keep.
    let mut keep: BTreeMap<String, (DateTime<Utc>, String)> = BTreeMap::new();
    let mut prune = Vec::new();
    for (name, body) in records {
        let (Some(job), Some(at)) = (
            body.get("job").and_then(Value::as_str),
            body.get("at")
                .and_then(Value::as_str)
                .and_then(parse_instant),
        ) else {
            continue;
        };
        match keep.get_mut(job) {
            Some(best) if (at, name.clone()) > *best => {
                prune.push(std::mem::replace(best, (at, name.clone())).1);
            }
            Some(_) => prune.push(name.clone()),
            None => {
                keep.insert(job.to_owned(), (at, name.clone()));
            }
        }
    }
    if keep.len() > LAST_FIRES_MAX {
        let mut by_age: Vec<(DateTime<Utc>, String)> = keep.into_values().collect();
        by_age.sort();
        let excess = by_age.len() - LAST_FIRES_MAX;
        prune.extend(by_age.into_iter().take(excess).map(|(_, name)| name));
    }
    prune
}

/// One request on its way to the driver task.
pub struct Request {
    /// What is asked.
    pub op: RecordsOp,
    /// Where the answer goes (dropped unanswered: the backend stopped).
    pub reply: oneshot::Sender<RecordsResult>,
}

/// The way to the running backend's driver, and how long to wait for it.
#[derive(Clone)]
struct Route {
    tx: mpsc::Sender<Request>,
    bound: Duration,
}

/// State shared by the supervisor, the driver of the running backend and
/// the scheduler's gate: the leadership term and the route to whichever
/// backend runs now (none between a reload's stop and start).
#[derive(Default)]
pub struct RecordsLink {
    term: AtomicU64,
    route: Mutex<Option<Route>>,
}

impl RecordsLink {
    /// A link with no backend and term 0.
    pub fn new() -> Arc<RecordsLink> {
        Arc::new(RecordsLink::default())
    }

    /// The current leadership term (0: this node never led).
    pub fn term(&self) -> u64 {
        self.term.load(Ordering::Relaxed)
    }

    /// This node just gained leadership.
    pub fn bump_term(&self) {
        self.term.fetch_add(1, Ordering::Relaxed);
    }

    fn route(&self) -> Option<Route> {
        self.route
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Routes requests to a driver from now on; `bound` is how long a
    /// caller waits for its answer (queueing behind a round included).
    pub fn connect(&self, tx: mpsc::Sender<Request>, bound: Duration) {
        *self
            .route
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Route { tx, bound });
    }

    /// Stops routing to the driver owning `tx` (a newer one is left in
    /// place).
    pub fn disconnect(&self, tx: &mpsc::Sender<Request>) {
        let mut route = self
            .route
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if route.as_ref().is_some_and(|r| r.tx.same_channel(tx)) {
            *route = None;
        }
    }

    /// Sends `op` to the running backend and waits, bounded, for its
    /// answer.
    pub async fn ask(&self, op: RecordsOp) -> RecordsResult {
        let Some(route) = self.route() else {
            return Err(RecordsError::NoBackend);
        };
        let (reply, answer) = oneshot::channel();
        let exchange = async {
            route
                .tx
                .send(Request { op, reply })
                .await
                .map_err(|_| RecordsError::NoBackend)?;
            answer.await.map_err(|_| RecordsError::NoBackend)?
        };
        tokio::time::timeout(route.bound, exchange)
            .await
            .unwrap_or_else(|_| Err(RecordsError::NoAnswer))
    }
}

/// The scheduler's [`LeaderRecords`] over a [`RecordsLink`].
pub struct RecordsHandle {
    link: Arc<RecordsLink>,
}

impl RecordsHandle {
    /// A handle on `link`.
    pub fn new(link: Arc<RecordsLink>) -> RecordsHandle {
        RecordsHandle { link }
    }
}

fn unexpected(answer: RecordsAnswer) -> RecordsError {
    RecordsError::Store(format!("the backend answered out of turn: {answer:?}"))
}

impl LeaderRecords for RecordsHandle {
    fn reboot_ran(
        &self,
        job_set_id: &str,
    ) -> BoxFuture<'static, Result<HashSet<String>, RecordsError>> {
        let link = Arc::clone(&self.link);
        let op = RecordsOp::RebootRan {
            job_set_id: job_set_id.to_owned(),
        };
        Box::pin(async move {
            match link.ask(op).await? {
                RecordsAnswer::Jobs(jobs) => Ok(jobs),
                other => Err(unexpected(other)),
            }
        })
    }

    fn mark_reboot_ran(
        &self,
        job_set_id: &str,
        job: &str,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        let link = Arc::clone(&self.link);
        let op = RecordsOp::MarkRebootRan {
            job_set_id: job_set_id.to_owned(),
            job: job.to_owned(),
        };
        Box::pin(async move {
            match link.ask(op).await? {
                RecordsAnswer::Done => Ok(()),
                other => Err(unexpected(other)),
            }
        })
    }

    fn last_fires(
        &self,
    ) -> BoxFuture<'static, Result<HashMap<String, DateTime<Utc>>, RecordsError>> {
        let link = Arc::clone(&self.link);
        Box::pin(async move {
            match link.ask(RecordsOp::LastFires).await? {
                RecordsAnswer::Fires(fires) => Ok(fires),
                other => Err(unexpected(other)),
            }
        })
    }

    fn record_fire(
        &self,
        job: &str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        let link = Arc::clone(&self.link);
        let op = RecordsOp::RecordFire {
            job: job.to_owned(),
            at,
        };
        Box::pin(async move {
            match link.ask(op).await? {
                RecordsAnswer::Done => Ok(()),
                other => Err(unexpected(other)),
            }
        })
    }

    fn pauses(&self) -> BoxFuture<'static, Result<HashMap<String, PauseMark>, RecordsError>> {
        let link = Arc::clone(&self.link);
        Box::pin(async move {
            match link.ask(RecordsOp::Pauses).await? {
                RecordsAnswer::Pauses(marks) => Ok(marks),
                other => Err(unexpected(other)),
            }
        })
    }

    fn record_pause(
        &self,
        job: &str,
        mark: PauseMark,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        let link = Arc::clone(&self.link);
        let op = RecordsOp::RecordPause {
            job: job.to_owned(),
            mark,
        };
        Box::pin(async move {
            match link.ask(op).await? {
                RecordsAnswer::Done => Ok(()),
                other => Err(unexpected(other)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_782_241_200 + secs, 0)
            .single()
            .expect("valid")
    }

    #[test]
    fn the_reboot_set_is_the_originals_compact_sorted_json() {
        let jobs: BTreeSet<String> = ["b", "a"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(
            encode_reboot_ran("v1:abc", &jobs),
            r#"{"jobSetId":"v1:abc","jobs":["a","b"]}"#
        );
        let (id, read) =
            decode_reboot_ran(Some(r#"{"jobSetId": "v1:abc", "jobs": ["b", "a", 3]}"#));
        assert_eq!(id.as_deref(), Some("v1:abc"));
        assert_eq!(
            read, jobs,
            "python's spacing reads; non-strings are dropped"
        );
        assert_eq!(
            encode_reboot_ran("v1:x", &BTreeSet::from(["é".to_owned()])),
            r#"{"jobSetId":"v1:x","jobs":["\u00e9"]}"#,
            "non-ASCII escaped as Python does"
        );
        for junk in [
            None,
            Some(""),
            Some("[1]"),
            Some("{"),
            Some(r#"{"jobs":"a"}"#),
        ] {
            let (id, jobs) = decode_reboot_ran(junk);
            assert!(id.is_none() || jobs.is_empty(), "{junk:?}");
            assert!(jobs.is_empty(), "{junk:?}");
        }
    }

    #[test]
    fn the_reboot_set_counts_only_for_its_own_job_set_id() {
        let raw = r#"{"jobSetId":"v1:old","jobs":["a"]}"#;
        assert!(reboot_jobs_for(Some(raw), "v1:new").is_empty());
        assert_eq!(
            reboot_jobs_for(Some(raw), "v1:old"),
            HashSet::from(["a".to_owned()])
        );
        // Marking under a new id replaces the old set.
        assert_eq!(
            with_reboot_job(Some(raw), "v1:new", "b").as_deref(),
            Some(r#"{"jobSetId":"v1:new","jobs":["b"]}"#)
        );
        // Under the same id it adds; an already-recorded job needs no write.
        assert_eq!(
            with_reboot_job(Some(raw), "v1:old", "b").as_deref(),
            Some(r#"{"jobSetId":"v1:old","jobs":["a","b"]}"#)
        );
        assert_eq!(with_reboot_job(Some(raw), "v1:old", "a"), None);
        assert_eq!(
            with_reboot_job(None, "v1:x", "a").as_deref(),
            Some(r#"{"jobSetId":"v1:x","jobs":["a"]}"#)
        );
    }

    #[test]
    fn last_fires_are_rfc3339_seconds_and_never_move_backwards() {
        let first = with_fire(None, "tick", at(0)).expect("written");
        assert_eq!(first, r#"{"tick":"2026-06-23T19:00:00Z"}"#);
        assert_eq!(with_fire(Some(&first), "tick", at(0)), None);
        assert_eq!(with_fire(Some(&first), "tick", at(-60)), None);
        let second = with_fire(Some(&first), "tock", at(60)).expect("written");
        assert_eq!(
            second,
            r#"{"tick":"2026-06-23T19:00:00Z","tock":"2026-06-23T19:01:00Z"}"#
        );
        let fires = decode_fires(Some(
            r#"{"a":"2026-06-23T21:00:00+02:00","b":"soon","c":3}"#,
        ));
        assert_eq!(fires, BTreeMap::from([("a".to_owned(), at(0))]));
        assert!(decode_fires(Some("[]")).is_empty());
    }

    #[test]
    fn last_fires_are_capped_dropping_the_oldest() {
        let mut fires = BTreeMap::new();
        for i in 0..(LAST_FIRES_MAX as i64 + 5) {
            fires.insert(format!("job-{i:05}"), at(i));
        }
        let kept = decode_fires(Some(&encode_fires(&fires)));
        assert_eq!(kept.len(), LAST_FIRES_MAX);
        assert!(!kept.contains_key("job-00004"), "the oldest went");
        assert!(kept.contains_key("job-00005"));
        // Long names hit the byte cap before the entry cap.
        let mut long = BTreeMap::new();
        for i in 0..600i64 {
            long.insert(format!("{i:05}-{}", "x".repeat(240)), at(i));
        }
        let text = encode_fires(&long);
        assert!(text.len() <= LAST_FIRES_MAX_BYTES, "{}", text.len());
        let kept = decode_fires(Some(&text));
        assert!(kept.len() < 600 && kept.len() > 400, "{}", kept.len());
        assert!(kept.keys().all(|k| k.as_str() >= "00100"), "oldest first");
    }

    #[test]
    fn record_files_use_the_originals_names_and_envelope() {
        let stem = record_stem(1750000015.123456, "0a1b2c3d4e5f", 7);
        assert_eq!(stem, "0001750000015.123456-0a1b2c3d4e5f-000000000007");
        assert_eq!(stem_epoch(&stem), Some(1750000015.123456));
        assert_eq!(stem_epoch("junk-1-2"), None);
        let bytes = encode_record(&json!({"jobSetId": "v1:a", "job": "boot"}));
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"{"data":{"job":"boot","jobSetId":"v1:a"},"schemaVersion":"v1"}"#
        );
        let data = decode_record(&bytes).expect("reads back");
        assert_eq!(data.get("job"), Some(&json!("boot")));
        assert_eq!(decode_record(br#"{"data":{},"schemaVersion":"v2"}"#), None);
        assert_eq!(decode_record(br#"{"data":[],"schemaVersion":"v1"}"#), None);
        assert_eq!(decode_record(b"{"), None);
    }

    fn body(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn record_streams_union_by_id_and_keep_the_latest_fire_per_job() {
        let reboot = vec![
            body(json!({"jobSetId": "v1:a", "job": "x"})),
            body(json!({"jobSetId": "v1:b", "job": "y"})),
            body(json!({"jobSetId": "v1:a", "job": "z"})),
            body(json!({"jobSetId": "v1:a"})),
        ];
        assert_eq!(
            reboot_jobs_in(&reboot, "v1:a"),
            HashSet::from(["x".to_owned(), "z".to_owned()])
        );
        let fires = vec![
            (
                "1".to_owned(),
                body(json!({"job": "t", "at": rfc3339(at(60))})),
            ),
            (
                "2".to_owned(),
                body(json!({"job": "t", "at": rfc3339(at(0))})),
            ),
            (
                "3".to_owned(),
                body(json!({"job": "u", "at": rfc3339(at(5))})),
            ),
            ("4".to_owned(), body(json!({"job": "u", "at": "bad"}))),
        ];
        assert_eq!(
            fires_in(&fires),
            BTreeMap::from([("t".to_owned(), at(60)), ("u".to_owned(), at(5))])
        );
        assert_eq!(fires_to_prune(&fires), vec!["2".to_owned()]);
    }

    #[test]
    fn pruning_last_fire_records_caps_the_jobs() {
        let fires: Vec<(String, Map<String, Value>)> = (0..(LAST_FIRES_MAX as i64 + 2))
            .map(|i| {
                (
                    format!("{i:05}"),
                    body(json!({"job": format!("j{i}"), "at": rfc3339(at(i))})),
                )
            })
            .collect();
        assert_eq!(
            fires_to_prune(&fires),
            vec!["00000".to_owned(), "00001".to_owned()]
        );
    }

    #[tokio::test]
    async fn a_link_without_a_backend_answers_no_backend_and_a_silent_one_times_out() {
        let link = RecordsLink::new();
        let handle = RecordsHandle::new(Arc::clone(&link));
        assert_eq!(
            handle.reboot_ran("v1:a").await,
            Err(RecordsError::NoBackend)
        );
        let (tx, mut rx) = mpsc::channel(4);
        link.connect(tx.clone(), Duration::from_millis(200));
        // A driver that takes requests but never answers.
        let keeper = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Some(request) = rx.recv().await {
                held.push(request);
            }
        });
        assert_eq!(handle.last_fires().await, Err(RecordsError::NoAnswer));
        link.disconnect(&tx);
        assert_eq!(
            handle.record_fire("a", at(0)).await,
            Err(RecordsError::NoBackend)
        );
        keeper.abort();
        assert_eq!(link.term(), 0);
        link.bump_term();
        assert_eq!(link.term(), 1);
    }
}
