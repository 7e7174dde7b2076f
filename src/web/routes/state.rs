//! The routes over the durable store: `GET /jobs/{name}/trends` (the run
//! statistics per time window over the ledger) and the state inspector
//! (`GET /state`, `/state/documents`, `/state/records`), metadata only.
//!
//! Every store read is blocking file I/O: it runs on the runtime's
//! blocking pool, never on the scheduler's thread nor on this thread's
//! reactor, and the answer is awaited for [`STORE_READ_LIMIT`] at most. A
//! read that outlives its bound cannot be cancelled (the thread is in a
//! system call), so at most [`MAX_STORE_READS`] run at once: on a hung
//! mount, polls fail fast instead of piling up threads.

use super::{ApiError, ApiResult, AppState};
use crate::job::RunRecord;
use crate::pyjson::{Dumps, PyDict, PyJson};
use crate::state::inspect;
use crate::state::jobstate;
use crate::state::records::{run_from_data, stream};
use crate::state::store::Store;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a store read is awaited (the original's bound on reads).
pub const STORE_READ_LIMIT: Duration = Duration::from_secs(10);

/// Store reads running at once at most.
pub const MAX_STORE_READS: usize = 4;

/// Ledger records a trends request reads at most (the newest).
pub const TREND_SCAN_LIMIT: usize = 5000;

/// How long a job's trends are served again without reading the ledger,
/// unless a run of it finished here meanwhile.
pub const TRENDS_CACHE_TTL: Duration = Duration::from_secs(5);

/// The trend windows: label and length in seconds (`all` follows).
pub const TREND_WINDOWS: [(&str, i64); 4] = [
    ("1h", 3600),
    ("24h", 86_400),
    ("7d", 604_800),
    ("30d", 2_592_000),
];

/// The answer `/state/documents` and `/state/records` give without a store.
const NOT_CONFIGURED: &str = "state store is not configured";

/// The open store as the API sees it, with what the API keeps about it.
#[derive(Debug)]
pub struct StoreView {
    store: Arc<Store>,
    /// Reads on the blocking pool now (see [`MAX_STORE_READS`]).
    reads: Arc<AtomicUsize>,
    /// Per job: when the trends were built, the newest local run then,
    /// and the body.
    trends: Mutex<HashMap<String, CachedTrends>>,
}

/// A trends body, and what tells it is still current.
#[derive(Debug, Clone)]
struct CachedTrends {
    built: Instant,
    newest_local: Option<(DateTime<Utc>, usize)>,
    body: String,
}

/// Decrements the running-read count when a read ends, however it ends.
struct ReadSlot(Arc<AtomicUsize>);

impl Drop for ReadSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl StoreView {
    /// The API's view of `store`.
    pub fn new(store: Arc<Store>) -> StoreView {
        StoreView {
            store,
            reads: Arc::new(AtomicUsize::new(0)),
            trends: Mutex::new(HashMap::new()),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Runs `work` on the blocking pool and awaits it for
    /// [`STORE_READ_LIMIT`]; the error says why there is no answer.
    async fn read<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let running = self.reads.fetch_add(1, Ordering::AcqRel);
        let slot = ReadSlot(Arc::clone(&self.reads));
        if running >= MAX_STORE_READS {
            return Err(format!(
                "{running} earlier reads of the store are still running"
            ));
        }
        let store = Arc::clone(&self.store);
        let task = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work(&store)
        });
        match tokio::time::timeout(STORE_READ_LIMIT, task).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(e))) => Err(e.to_string()),
            Ok(Err(e)) => Err(format!("the store read stopped: {e}")),
            Err(_) => Err(format!(
                "the store did not answer within {} seconds",
                STORE_READ_LIMIT.as_secs()
            )),
        }
    }

    fn cached_trends(
        &self,
        job: &str,
        newest_local: Option<(DateTime<Utc>, usize)>,
    ) -> Option<String> {
        let cache = self.trends.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(job)
            .filter(|c| c.built.elapsed() < TRENDS_CACHE_TTL && c.newest_local == newest_local)
            .map(|c| c.body.clone())
    }

    fn keep_trends(&self, job: &str, newest_local: Option<(DateTime<Utc>, usize)>, body: &str) {
        let mut cache = self.trends.lock().unwrap_or_else(PoisonError::into_inner);
        // Entries of removed jobs (and stale ones) go when the map grows.
        if cache.len() >= 1024 {
            cache.retain(|_, c| c.built.elapsed() < TRENDS_CACHE_TTL);
        }
        cache.insert(
            job.to_owned(),
            CachedTrends {
                built: Instant::now(),
                newest_local,
                body: body.to_owned(),
            },
        );
    }
}

/// The runs that finished within each window at `now` (a run finishing
/// in the future falls in every window), then every run: the `windows`
/// object of `GET /jobs/{name}/trends`, in the original's key order.
pub fn trend_windows(runs: &[RunRecord], now: DateTime<Utc>) -> Vec<(&'static str, Value)> {
    let mut windows: Vec<(&'static str, Value)> = TREND_WINDOWS
        .iter()
        .map(|(label, seconds)| {
            let inside: Vec<RunRecord> = runs
                .iter()
                .filter(|r| {
                    (now - r.finished_at).num_microseconds().unwrap_or(i64::MAX)
                        <= seconds * 1_000_000
                })
                .cloned()
                .collect();
            (*label, super::views::run_stats(&inside))
        })
        .collect();
    windows.push(("all", super::views::run_stats(runs)));
    windows
}

/// The `GET /jobs/{name}/trends` body, keys in the original's order.
pub fn trends_body(name: &str, source: &str, runs: &[RunRecord], now: DateTime<Utc>) -> String {
    let windows: Vec<String> = trend_windows(runs, now)
        .into_iter()
        .map(|(label, stats)| format!("{}:{stats}", Value::from(label)))
        .collect();
    format!(
        "{{\"name\":{},\"source\":{},\"generated_at\":{},\"windows\":{{{}}}}}",
        Value::from(name),
        Value::from(source),
        Value::from(crate::state::format::py_isoformat(now)),
        windows.join(",")
    )
}

fn json_body(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `GET /jobs/{name}/trends`: the run statistics per window over the
/// newest [`TREND_SCAN_LIMIT`] ledger records (`source: durable`), or
/// over the in-memory history without a store or when it cannot be read
/// (`source: memory`, with a warning).
pub(super) async fn trends(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult {
    // The in-memory history: the fallback, and the 404 of an unknown job.
    let memory = state.control.runs(&name).await?;
    let Some(view) = &state.store else {
        return Ok(json_body(trends_body(&name, "memory", &memory, Utc::now())));
    };
    let newest_local = memory.last().map(|r| (r.finished_at, memory.len()));
    if let Some(body) = view.cached_trends(&name, newest_local) {
        return Ok(json_body(body));
    }
    let job = name.clone();
    let read = view
        .read(move |store| {
            let records = store.read_newest(&format!("{}{job}", stream::RUNS), TREND_SCAN_LIMIT)?;
            Ok(records
                .iter()
                .filter_map(|(_, data)| run_from_data(&job, data))
                .collect::<Vec<RunRecord>>())
        })
        .await;
    let body = match read {
        Ok(ledger) => trends_body(&name, "durable", &ledger, Utc::now()),
        Err(err) => {
            tracing::warn!(
                target: "cronstable::state",
                "state: cannot read the run ledger for trends on {name} ({err}); serving the \
                 in-memory history"
            );
            trends_body(&name, "memory", &memory, Utc::now())
        }
    };
    view.keep_trends(&name, newest_local, &body);
    Ok(json_body(body))
}

/// The store's counters in the `stats` member of `GET /state`.
fn stats_json(view: &StoreView) -> Value {
    let store = view.store();
    let facts =
        crate::metrics::prometheus::StateFacts::read(&store.stats(), store.topology().as_str());
    let ops: Map<String, Value> = facts
        .ops
        .iter()
        .map(|o| {
            (
                o.op.to_owned(),
                json!({"count": o.count, "errors": o.errors, "seconds": o.seconds}),
            )
        })
        .collect();
    let (throttled, waited) = facts.throttled;
    json!({
        "ops": ops,
        // The store takes no advisory locks for its records.
        "lock": {"acquisitions": 0, "wait_seconds": 0.0},
        "throttle": {"count": throttled, "wait_seconds": waited},
    })
}

/// `GET /state`: the store's inventory, facts and counters
/// (`{"enabled": false}` without a store).
pub(super) async fn inventory(State(state): State<AppState>) -> ApiResult {
    let Some(view) = &state.store else {
        return Ok(Json(json!({"enabled": false})).into_response());
    };
    let job_set_id = state.control.job_set_id().await?;
    let now = crate::state::format::wall_now();
    let mut body = match view
        .read(move |store| Ok(inspect::inventory(store, now)))
        .await
    {
        Ok(inventory) => {
            let mut body = inventory.to_json();
            body.insert("enumerable".into(), true.into());
            body
        }
        Err(err) => {
            tracing::warn!(target: "cronstable::state", "state: inventory failed ({err})");
            let mut body = inspect::Inventory::default().to_json();
            body.insert("enumerable".into(), false.into());
            body
        }
    };
    let store = view.store();
    body.insert(
        "view".into(),
        json!({
            "backend": "filesystem",
            "path": store.base().display().to_string(),
            "namespace": store.deployment_id(),
            "topology": store.topology().as_str(),
            "shared_locking": true,
            "job_set_id": job_set_id,
        }),
    );
    body.insert("stats".into(), stats_json(view));
    body.insert("enabled".into(), true.into());
    // This node's retry ladders and held slots are not listed here yet
    // (GET /jobs shows both per job).
    body.insert(
        "node".into(),
        json!({"host": crate::platform::host_name(), "retries": [], "slots": []}),
    );
    Ok(Json(Value::Object(body)).into_response())
}

/// `GET /state/documents?ns=`: the documents of one `kv/`, `cursor/` or
/// `idem/` namespace (for example `kv/backup`), in file-name order, KV
/// values summarized ([`inspected_document`]).
pub(super) async fn documents(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let Some(view) = &state.store else {
        return Err(ApiError(StatusCode::NOT_FOUND, NOT_CONFIGURED.into()));
    };
    let ns = query.get("ns").map_or("", String::as_str);
    if !["kv/", "cursor/", "idem/"]
        .iter()
        .any(|p| ns.starts_with(p))
    {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "ns must be a kv/, cursor/ or idem/ namespace".into(),
        ));
    }
    let namespace = ns.to_owned();
    // As the original: a store that fails to list answers an empty list.
    let documents = view
        .read(move |store| {
            jobstate::docs::list_documents(store, &namespace)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })
        .await
        .unwrap_or_default();
    let redact = ns.starts_with(jobstate::KV_NS_PREFIX);
    let documents = documents
        .into_iter()
        .map(|doc| inspected_document(doc, redact))
        .collect();
    let body = PyJson::object([
        ("namespace", PyJson::from(ns)),
        ("documents", PyJson::List(documents)),
    ]);
    Ok(json_text(&body))
}

/// A document as the inspector shows it: a KV document's `value` becomes
/// its `valueSize` (bytes of Python's default `json.dumps`) and
/// `valueType` (the Python type name), since a job's value may be
/// sensitive; cursor and idempotency documents (progress marks and claim
/// times) are shown as stored.
fn inspected_document(mut doc: PyDict, redact: bool) -> PyJson {
    if redact {
        if let Some(value) = doc.remove("value") {
            let size = i128::try_from(value.dumps(Dumps::SPACED).len()).unwrap_or(i128::MAX);
            doc.insert("valueSize", PyJson::Int(size));
            doc.insert("valueType", PyJson::from(value.type_name()));
        }
    }
    PyJson::Dict(doc)
}

/// A JSON response of a Python value: compact, or, when it holds a value
/// the fleet's encoders write differently (a NaN another node stored),
/// Python's spaced `json.dumps`, which can write it.
fn json_text(value: &PyJson) -> Response {
    let text = if jobstate::rules::portability_error(value).is_some() {
        value.dumps(Dumps::SPACED)
    } else {
        value.dumps(Dumps::COMPACT)
    };
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

/// Why a stream may not be listed by `/state/records`, if it may not.
pub fn refused_stream(name: &str) -> Option<(StatusCode, &'static str)> {
    if name.is_empty() {
        Some((StatusCode::BAD_REQUEST, "a stream is required"))
    } else if name == "logs" || name.starts_with(stream::LOGS) {
        Some((
            StatusCode::FORBIDDEN,
            "log streams carry raw output and are not inspectable",
        ))
    } else {
        None
    }
}

/// `GET /state/records?stream=&limit=`: the newest records of a stream,
/// newest first (`limit` 1..500, 100 by default); archived output is
/// refused.
pub(super) async fn records(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let Some(view) = &state.store else {
        return Err(ApiError(StatusCode::NOT_FOUND, NOT_CONFIGURED.into()));
    };
    let name = query.get("stream").cloned().unwrap_or_default();
    if let Some((status, message)) = refused_stream(&name) {
        return Err(ApiError(status, message.into()));
    }
    let limit = super::request::clamped(&query, &["limit"], 100, 1, 500);
    let wanted = name.clone();
    let records = view
        .read(move |store| inspect::newest_first(store, &wanted, limit))
        .await
        .unwrap_or_default();
    Ok(Json(json!({"stream": name, "records": records})).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Trigger;

    fn run(finished: DateTime<Utc>, outcome: &str, duration: f64) -> RunRecord {
        let started = finished - chrono::Duration::microseconds((duration * 1e6) as i64);
        let mut run = RunRecord {
            finished_at: finished,
            ..RunRecord::begun(0, "j".into(), Trigger::Schedule, 0, started)
        };
        match outcome {
            "failure" => {
                run.retcode = 1;
                run.fail_reason = Some("exit 1".into());
            }
            "unknown" => run.interrupted = true,
            "cancelled" => run.cancelled = true,
            _ => {}
        }
        run
    }

    fn at(seconds_ago: i64, now: DateTime<Utc>) -> DateTime<Utc> {
        now - chrono::Duration::seconds(seconds_ago)
    }

    #[test]
    fn runs_fall_in_every_window_they_finished_within() {
        let now = Utc::now();
        let runs = vec![
            run(at(40 * 86_400, now), "success", 1.0),
            run(at(10 * 86_400, now), "failure", 2.0),
            run(at(3 * 86_400, now), "success", 3.0),
            run(at(7200, now), "unknown", 0.0),
            // exactly on the hour's edge: inside
            run(at(3600, now), "success", 4.0),
            run(at(60, now), "cancelled", 5.0),
            // a clock ahead on another node: in every window
            run(now + chrono::Duration::seconds(30), "success", 6.0),
        ];
        let windows = trend_windows(&runs, now);
        let labels: Vec<&str> = windows.iter().map(|(l, _)| *l).collect();
        assert_eq!(labels, ["1h", "24h", "7d", "30d", "all"]);
        let totals: Vec<(u64, u64, u64, u64, u64)> = windows
            .iter()
            .map(|(_, s)| {
                let n = |k: &str| s[k].as_u64().expect(k);
                (
                    n("total"),
                    n("success"),
                    n("failure"),
                    n("cancelled"),
                    n("unknown"),
                )
            })
            .collect();
        assert_eq!(
            totals,
            [
                (3, 2, 0, 1, 0),
                (4, 2, 0, 1, 1),
                (5, 3, 0, 1, 1),
                (6, 3, 1, 1, 1),
                (7, 4, 1, 1, 1),
            ]
        );
        assert_eq!(windows[3].1["success_rate"], json!(0.75));
        assert_eq!(windows[0].1["success_rate"], json!(1.0));
        // the window's own newest run
        assert_eq!(windows[0].1["last_duration"], json!(6.0));
        assert_eq!(windows[4].1["max_duration"], json!(6.0));
    }

    #[test]
    fn an_empty_history_gives_empty_windows() {
        let body: Value =
            serde_json::from_str(&trends_body("j", "memory", &[], Utc::now())).expect("JSON");
        for label in ["1h", "24h", "7d", "30d", "all"] {
            assert_eq!(body["windows"][label]["total"], 0, "{label}");
            assert_eq!(
                body["windows"][label]["success_rate"],
                Value::Null,
                "{label}"
            );
        }
    }

    #[test]
    fn the_trends_body_keeps_the_originals_key_order_and_escapes() {
        let now = DateTime::parse_from_rfc3339("2026-07-04T12:00:00Z")
            .expect("a time")
            .with_timezone(&Utc);
        let body = trends_body("a\"b", "durable", &[], now);
        assert!(
            body.starts_with(
                "{\"name\":\"a\\\"b\",\"source\":\"durable\",\"generated_at\":\"2026-07-04T12:00:00+00:00\",\"windows\":{\"1h\":{"
            ),
            "{body}"
        );
        let keys: Vec<usize> = ["\"1h\"", "\"24h\"", "\"7d\"", "\"30d\"", "\"all\""]
            .iter()
            .map(|k| body.find(k).expect(k))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{body}");
        let parsed: Value = serde_json::from_str(&body).expect("valid JSON");
        assert_eq!(parsed["name"], "a\"b");
    }

    #[test]
    fn log_streams_and_empty_names_are_refused() {
        assert_eq!(
            refused_stream(""),
            Some((StatusCode::BAD_REQUEST, "a stream is required"))
        );
        for name in ["logs", "logs/backup", "logs/"] {
            assert_eq!(
                refused_stream(name),
                Some((
                    StatusCode::FORBIDDEN,
                    "log streams carry raw output and are not inspectable"
                )),
                "{name}"
            );
        }
        for name in ["runs/backup", "logsx", "meta", "catalogs/x"] {
            assert_eq!(refused_stream(name), None, "{name}");
        }
    }
}
