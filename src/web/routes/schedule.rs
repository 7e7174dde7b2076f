//! The schedule routes: one expression previewed (`/schedule/preview`),
//! one job's schedule explained at one instant (`/schedule/why`), the
//! fleet's load (`/schedule/pressure`), its duplicate schedules
//! (`/schedule/duplicates`), a quiet slot for a new job
//! (`/schedule/suggest`), the fleet's fires over the coming days grouped
//! by schedule (`/schedule/week`, the dashboard's week card), the
//! calendar feeds (`/calendar.ics`, `/jobs/{name}/calendar.ics`), and
//! `/whoami`.
//!
//! The answers are computed by the engine's pure analyses
//! ([`crate::cronexpr`]) from one snapshot of the job table; here the
//! query is read, the snapshot taken, and the work kept off the reactor.

use super::{request, ApiError, ApiResult, AppState};
use crate::cronexpr::{
    duplicates, fires_by_schedule, paused_note, pressure, python_iso, suggest, why, write_calendar,
    CalendarEntry, CalendarWindow, Excluded, FleetEntry, Period, Probe, TimeBase, MAX_WEEK_FIRES,
};
use crate::pyfmt::py_repr;
use crate::scheduler::control::{ControlError, JobSnapshot};
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::collections::HashMap;

use super::Grant;

/// `GET /schedule/preview`: one expression parsed, described, previewed
/// and linted with the scheduler's engine.
pub(super) async fn preview(Query(query): Query<HashMap<String, String>>) -> ApiResult {
    request::preview(&query, Utc::now())
        .map(|v| Json(v).into_response())
        .map_err(|message| ApiError(StatusCode::BAD_REQUEST, message))
}

/// A job lookup's refusal: for an unknown name the 404 of the routes that
/// name a job's schedule (the manual's words; this version has no DAGs,
/// so only jobs are found).
fn no_schedule(name: &str) -> impl FnOnce(ControlError) -> ApiError + '_ {
    move |err| match err {
        ControlError::NotFound(_) => ApiError(
            StatusCode::NOT_FOUND,
            format!(
                "no job or DAG schedule named {}",
                py_repr(&minijinja::Value::from(name))
            ),
        ),
        other => ApiError::from(other),
    }
}

/// `GET /schedule/why?job=&at=`: why one job's schedule did or did not
/// select one timestamp, column by column, with the nearest real fires
/// around it (see `cronexpr::why`).
pub(super) async fn explain(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let (name, at) = request::why_params(&query)
        .map_err(|message| ApiError(StatusCode::BAD_REQUEST, message))?;
    // an unknown job is a 404 whatever the timestamp says
    let job = state.control.job(name).await.map_err(no_schedule(name))?;
    let probe = Probe::parse(at).map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    let config = &job.config;
    let tz = &config.schedule.time_base;
    let mut report = why(&config.schedule.parsed, tz, &probe);
    if let Some(pause) = &job.paused {
        report
            .notes
            .push(paused_note(tz, pause.until, &pause.by, &pause.note));
    }
    let mut payload = serde_json::to_value(&report).map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer: {e}"),
        )
    })?;
    payload["job"] = json!(config.name);
    payload["enabled"] = json!(config.enabled);
    payload["timezone"] = json!(tz.name().unwrap_or("local"));
    payload["at"] = json!(at);
    payload["description"] = json!(config.schedule.parsed.description());
    Ok(Json(payload).into_response())
}

/// The display clock of `?tz=`: UTC when absent or empty, else an IANA
/// zone; the error is the 400 message.
fn display_zone(query: &HashMap<String, String>) -> Result<TimeBase, ApiError> {
    match query
        .get("tz")
        .map(String::as_str)
        .filter(|t| !t.is_empty())
    {
        None => Ok(TimeBase::Utc),
        Some(name) => name
            .parse()
            .map(TimeBase::Zone)
            .map_err(|_| ApiError(StatusCode::BAD_REQUEST, format!("unknown timezone: {name}"))),
    }
}

/// The jobs the fleet analyses see (enabled, cron-scheduled), and how
/// many were left out as disabled or `@reboot`.
fn fleet(jobs: &[JobSnapshot]) -> (Vec<FleetEntry<'_>>, Excluded) {
    let mut excluded = Excluded::default();
    let mut entries = Vec::with_capacity(jobs.len());
    for job in jobs {
        let config = &job.config;
        match (config.enabled, config.schedule.parsed.cron()) {
            (false, _) => excluded.disabled += 1,
            (true, None) => excluded.reboot += 1,
            (true, Some(expr)) => entries.push(FleetEntry {
                name: &config.name,
                expr,
                tz: &config.schedule.time_base,
            }),
        }
    }
    (entries, excluded)
}

/// Runs `work` on the blocking pool: a walk of 10,000 schedules takes long
/// enough that it must not hold a reactor thread.
async fn off_reactor<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the analysis failed: {e}"),
        )
    })
}

fn json_of<T: serde::Serialize>(value: &T) -> ApiResult {
    serde_json::to_vec(value)
        .map(|body| ([(header::CONTENT_TYPE, "application/json")], body).into_response())
        .map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot encode the answer: {e}"),
            )
        })
}

/// `GET /schedule/pressure?hours=&tz=`: every enabled schedule's fires
/// over the next `hours` (1 to 168, default 24) as an hour-by-minute grid
/// in `tz` (default UTC).
pub(super) async fn schedule_pressure(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let hours = request::clamped(&query, &["hours"], 24, 1, 168) as u32;
    let display = display_zone(&query)?;
    let jobs = state.control.jobs().await?;
    let now = Utc::now();
    off_reactor(move || {
        let (entries, excluded) = fleet(&jobs);
        json_of(&pressure(&entries, now, hours, &display, excluded))
    })
    .await?
}

/// `GET /schedule/duplicates`: the groups of jobs whose schedules fire on
/// identical instants.
pub(super) async fn schedule_duplicates(State(state): State<AppState>) -> ApiResult {
    let jobs = state.control.jobs().await?;
    off_reactor(move || {
        let (entries, _) = fleet(&jobs);
        json_of(&json!({"jobs": entries.len(), "groups": duplicates(&entries)}))
    })
    .await?
}

/// `GET /schedule/suggest?period=&tz=`: the least-loaded minute
/// (`hourly`, the default) or time of day (`daily`) over the next day.
pub(super) async fn schedule_suggest(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    // the zone is checked first, as the original checks it
    let display = display_zone(&query)?;
    let period = query
        .get("period")
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .unwrap_or("hourly");
    let period =
        Period::parse(period).map_err(|message| ApiError(StatusCode::BAD_REQUEST, message))?;
    let jobs = state.control.jobs().await?;
    let now = Utc::now();
    off_reactor(move || {
        let (entries, _) = fleet(&jobs);
        json_of(&suggest(&entries, period, now, &display))
    })
    .await?
}

/// `GET /schedule/week?start=&days=&max=`: every enabled job's fires
/// from `start` (an ISO 8601 instant, default now) over `days` (1 to 14,
/// default 7), grouped by distinct schedule and clock; a schedule firing
/// more than `max` times (1 to 500, default 56) is marked frequent and
/// lists no fires. Tagged and gzipped like `/jobs`: a calendar that asks
/// again for the same window gets a `304` while the job table is the
/// same.
pub(super) async fn schedule_week(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> ApiResult {
    let start = match query
        .get("start")
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
    {
        None => Utc::now(),
        Some(text) => DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                ApiError(
                    StatusCode::BAD_REQUEST,
                    format!("start must be an ISO 8601 instant with an offset, not {text:?}"),
                )
            })?,
    };
    let days = request::clamped(&query, &["days"], 7, 1, 14) as i64;
    let max = request::clamped(&query, &["max"], 56, 1, MAX_WEEK_FIRES);
    let end = start + chrono::Duration::days(days);
    let jobs = state.control.jobs().await?;
    let body = off_reactor(move || {
        let (entries, excluded) = fleet(&jobs);
        let groups = fires_by_schedule(&entries, start, end, max);
        serde_json::to_vec(&json!({
            "start": python_iso(&TimeBase::Utc, start),
            "end": python_iso(&TimeBase::Utc, end),
            "max": max,
            "jobs": entries.len(),
            "excluded": excluded,
            "groups": groups,
        }))
    })
    .await?
    .map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode the answer: {e}"),
        )
    })?;
    use sha2::Digest;
    let etag = super::conditional::etag_of(&sha2::Sha256::digest(&body));
    Ok(super::conditional::json(&headers, &etag, body).await)
}

/// Mean of the durations a job's retained runs recorded, or `None`.
fn mean(durations: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = durations.fold((0.0, 0usize), |(s, n), d| (s + d, n + 1));
    (count > 0).then(|| sum / count as f64)
}

/// The feed's window from `?days=` (1 to 60, default 14) and `?limit=`
/// (events per job, 1 to 1000, default 100; `per_job` is the older
/// spelling). Out-of-range or unreadable values are clamped or defaulted,
/// never refused.
fn window_of(query: &HashMap<String, String>) -> (u32, usize) {
    let days = request::clamped(query, &["days"], 14, 1, 60) as u32;
    let per_job = request::clamped(query, &["limit", "per_job"], 100, 1, 1000);
    (days, per_job)
}

/// The feed over `jobs` (with their mean run times), as a `text/calendar`
/// response written while it is sent: the text is made on the blocking
/// pool in pieces of about 64 KiB, at most a few of them waiting for the
/// client, so a feed of hundreds of megabytes is never held whole, and a
/// client that goes away stops the work.
fn feed(
    jobs: Vec<JobSnapshot>,
    averages: Vec<Option<f64>>,
    name: String,
    query: &HashMap<String, String>,
) -> Response {
    let (days, per_job) = window_of(query);
    let now: DateTime<Utc> = Utc::now();
    let (pieces, receiver) = tokio::sync::mpsc::channel::<String>(PIECES_IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let (entries, _) = fleet(&jobs);
        let by_name: HashMap<&str, Option<f64>> = jobs
            .iter()
            .map(|j| j.config.name.as_str())
            .zip(averages.iter().copied())
            .collect();
        let mut rows: Vec<CalendarEntry<'_>> = entries
            .into_iter()
            .map(|job| CalendarEntry {
                job,
                avg_duration: by_name.get(job.name).copied().flatten(),
            })
            .collect();
        rows.sort_by(|a, b| a.job.name.cmp(b.job.name));
        let window = CalendarWindow {
            start: now,
            days,
            per_job,
            name: &name,
            now,
            version: env!("CARGO_PKG_VERSION"),
        };
        write_calendar(&rows, &window, |piece| pieces.blocking_send(piece).is_ok());
    });
    let body = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let piece = receiver.recv().await?;
        Some((
            Ok::<_, std::convert::Infallible>(Bytes::from(piece)),
            receiver,
        ))
    });
    (
        [
            (header::CONTENT_TYPE, "text/calendar; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "inline; filename=\"cronstable.ics\"",
            ),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// Pieces of a feed made ahead of the client, at most.
const PIECES_IN_FLIGHT: usize = 4;

/// `GET /calendar.ics?days=&limit=`: every enabled, cron-scheduled job's
/// upcoming fires as an iCalendar feed.
pub(super) async fn calendar(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let jobs = state.control.jobs().await?;
    // One pass over the retained runs of every job for the mean run
    // times, rather than a question per job.
    let activity: HashMap<String, Option<f64>> = state
        .control
        .activity()
        .await?
        .into_iter()
        .map(|(name, runs)| {
            let durations = runs.iter().filter_map(|r| {
                let started = r.started_at?;
                Some((r.finished_at - started).num_microseconds()?.max(0) as f64 / 1e6)
            });
            (name, mean(durations))
        })
        .collect();
    let averages = jobs
        .iter()
        .map(|j| activity.get(&j.config.name).copied().flatten())
        .collect();
    Ok(feed(jobs, averages, "cronstable".to_owned(), &query))
}

/// `GET /jobs/{name}/calendar.ics?days=&limit=`: one job's upcoming fires
/// as an iCalendar feed; 404 for an unknown job, an empty calendar for a
/// disabled or `@reboot` one.
pub(super) async fn job_calendar(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let job = state.control.job(&name).await.map_err(no_schedule(&name))?;
    let runs = state.control.runs(&name).await.unwrap_or_default();
    let average = mean(runs.iter().filter_map(|r| r.duration_seconds()));
    let title = format!("cronstable: {name}");
    Ok(feed(vec![job], vec![average], title, &query))
}

/// `GET /whoami`: the credential that authenticated this request, its
/// scopes, and the pairing facts a companion app reads. This version
/// seals no push alerts, so it offers no sealing suite.
pub(super) async fn whoami(
    State(state): State<AppState>,
    grant: Option<Extension<Grant>>,
) -> Response {
    let grant = grant.map(|Extension(g)| g).unwrap_or_default();
    let mut body: Value =
        serde_json::to_value(state.credentials.whoami(&grant)).unwrap_or_else(|_| json!({}));
    body["pairLinkBase"] = json!(PAIR_LINK_BASE);
    body["sealableSuites"] = json!([]);
    Json(body).into_response()
}

/// The base of the pairing QR's deep link while no `push:` section is in
/// force (this version has none): the hosted landing page.
const PAIR_LINK_BASE: &str = "https://relay.cronstable.com/pair";
