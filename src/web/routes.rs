//! The router: every route, the auth layer, the extra headers, and the
//! `{"error": ...}` envelope on every error (404 and 405 included).

use super::auth::{Credentials, Grant, Needed};
use super::node::{node_name, NodeSampler};
use super::request::{self, PauseRequest};
use super::{conditional, logs, views};
use crate::metrics::prometheus::Format;
use crate::pyfmt::py_repr;
use crate::scheduler::control::{ControlError, ControlHandle};
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::{Extension, Json, Router};
use chrono::Utc;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

mod dashboard;
mod kubernetes;
mod mcp;
pub mod pools;
mod resources;
mod schedule;
pub mod state;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The scheduler.
    pub control: ControlHandle,
    /// What the cluster and the Kubernetes mode publish (read only).
    pub published: crate::status::Published,
    /// Resolved tokens and scopes.
    pub credentials: Arc<Credentials>,
    /// `web.headers`, minus any Content-Type.
    pub extra_headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    /// `web.metrics.enabled`.
    pub metrics_enabled: bool,
    /// Node CPU/memory readings and history.
    pub node: Arc<NodeSampler>,
    /// True once the listeners are stopping (ends open log streams).
    pub draining: watch::Receiver<bool>,
    /// The last `/metrics` bodies, served again while nothing changed.
    pub metrics_cache: Arc<super::cache::MetricsCache>,
    /// The last `/jobs` rendering, served again while nothing changed.
    pub jobs_cache: Arc<super::cache::JobsCache>,
    /// The escaped job names `/status` writes, kept per job table.
    pub status_cache: Arc<super::cache::StatusCache>,
    /// The durable store, when a `state` section opened one (read only).
    pub store: Option<Arc<state::StoreView>>,
    /// `web.ui`: whether `/` serves the dashboard.
    pub ui: bool,
    /// The MCP server, when `mcp.enabled` is set (`POST /mcp`).
    pub mcp: Option<Arc<super::mcp::Server>>,
}

/// An error answered as `{"error": "..."}`.
#[derive(Debug)]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

/// A refused control request: the `{"error": ...}` envelope, and for a
/// request that belongs to another node, that node's name beside it
/// (`clusterOwner`, the member `GET /jobs` names it with), so a client
/// behind a Service can send it there.
#[derive(Debug)]
pub struct ControlRefusal(ControlError);

/// The status a refused control request answers with.
fn status_of(err: &ControlError) -> StatusCode {
    match err {
        ControlError::NotFound(_) => StatusCode::NOT_FOUND,
        ControlError::Conflict(_) | ControlError::Elsewhere { .. } => StatusCode::CONFLICT,
        ControlError::BadRequest(_) => StatusCode::BAD_REQUEST,
        ControlError::Unavailable
        | ControlError::NoRunner { .. }
        | ControlError::NotRecorded { .. } => StatusCode::SERVICE_UNAVAILABLE,
        ControlError::Pool(err) if err.unavailable() => StatusCode::SERVICE_UNAVAILABLE,
        ControlError::Pool(_) => StatusCode::CONFLICT,
    }
}

impl IntoResponse for ControlRefusal {
    fn into_response(self) -> Response {
        let status = status_of(&self.0);
        let mut body = json!({"error": self.0.to_string()});
        if let ControlError::Elsewhere { runner, .. } = &self.0 {
            body["clusterOwner"] = json!(runner);
        }
        (status, Json(body)).into_response()
    }
}

impl From<ControlError> for ControlRefusal {
    fn from(err: ControlError) -> Self {
        ControlRefusal(err)
    }
}

impl From<ControlError> for ApiError {
    fn from(err: ControlError) -> Self {
        ApiError(status_of(&err), err.to_string())
    }
}

/// What the control routes answer.
type ControlResult = Result<Response, ControlRefusal>;

type ApiResult = Result<Response, ApiError>;

/// Every route: method, path and handler. The router is built from this one
/// table, and [`routes`] lists it for the OpenAPI check.
fn table() -> Vec<(&'static str, &'static str, MethodRouter<AppState>)> {
    vec![
        ("GET", "/version", get(version)),
        ("GET", "/status", get(status)),
        ("GET", "/jobs", get(jobs)),
        ("GET", "/jobs/{name}", get(job)),
        ("GET", "/jobs/{name}/runs", get(runs)),
        ("GET", "/jobs/{name}/logs", get(job_logs)),
        (
            "GET",
            "/jobs/{name}/resources",
            get(resources::job_resources),
        ),
        ("GET", "/jobs/{name}/trends", get(state::trends)),
        ("GET", "/summary", get(summary)),
        ("GET", "/activity", get(activity)),
        ("GET", "/node", get(node)),
        ("GET", "/node/history", get(node_history)),
        ("POST", "/jobs/{name}/start", post(start)),
        ("POST", "/jobs/{name}/cancel", post(cancel)),
        ("POST", "/jobs/{name}/pause", post(pause)),
        ("POST", "/jobs/{name}/resume", post(resume)),
        ("POST", "/shutdown", post(shutdown)),
        ("GET", "/pools", get(pools::list)),
        (
            "POST",
            "/pools/{name}/queue/{key}/cancel",
            post(pools::cancel),
        ),
        ("GET", "/job-set-id", get(job_set_id)),
        ("GET", "/kube", get(kubernetes::state)),
        ("GET", "/kube/sets", get(kubernetes::sets)),
        ("GET", "/livez", get(livez)),
        ("GET", "/readyz", get(readyz)),
        ("GET", "/cluster", get(cluster)),
        ("GET", "/fleet", get(fleet)),
        ("GET", "/metrics", get(metrics)),
        ("GET", "/schedule/preview", get(schedule::preview)),
        ("GET", "/schedule/why", get(schedule::explain)),
        (
            "GET",
            "/schedule/pressure",
            get(schedule::schedule_pressure),
        ),
        (
            "GET",
            "/schedule/duplicates",
            get(schedule::schedule_duplicates),
        ),
        ("GET", "/schedule/suggest", get(schedule::schedule_suggest)),
        ("GET", "/schedule/week", get(schedule::schedule_week)),
        ("GET", "/calendar.ics", get(schedule::calendar)),
        (
            "GET",
            "/jobs/{name}/calendar.ics",
            get(schedule::job_calendar),
        ),
        ("GET", "/whoami", get(schedule::whoami)),
        ("GET", "/state", get(state::inventory)),
        ("GET", "/state/documents", get(state::documents)),
        ("GET", "/state/records", get(state::records)),
        ("GET", "/", get(dashboard::index)),
        ("GET", "/ui/{file}", get(dashboard::file)),
        // GET (405) and OPTIONS (the CORS preflight) share the entry.
        ("POST", "/mcp", mcp::route()),
    ]
}

/// Every route the API serves, as `(method, path)`; the OpenAPI document
/// is checked against this list.
pub fn routes() -> Vec<(&'static str, &'static str)> {
    table().into_iter().map(|(m, p, _)| (m, p)).collect()
}

/// The largest request body read (a pause or resume body is under 1 KiB);
/// a longer one is answered `413 Payload Too Large` without reading it.
pub const MAX_REQUEST_BODY_BYTES: usize = 64 * 1024;

/// The router of `--probe-listen` while no `web` section is in force:
/// `/livez` and `/readyz` only (they need no token; everything else would,
/// and no credentials are configured yet).
pub fn probe_router(state: AppState) -> Router {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Builds the router for one web configuration.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for (_, path, handler) in table() {
        router = router.route(path, handler);
    }
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), authorize))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BODY_BYTES))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError(StatusCode::NOT_FOUND, "404: Not Found".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError(
        StatusCode::METHOD_NOT_ALLOWED,
        "405: Method Not Allowed".into(),
    )
}

/// Auth, the cross-site check, and the extra headers on success.
async fn authorize(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    // `/mcp` opens to `view`, checks its own Origin list, and each tool
    // then asks for its REST twin's scope.
    let is_mcp = path == "/mcp";
    let needed = match is_mcp {
        true => Needed::View,
        false => request::needed(request.method()),
    };
    // Probes reveal nothing but health, and a kubelet cannot be given a
    // token without putting it in the pod spec: they never need one.
    let public = (path == "/metrics" && state.credentials.metrics_public)
        || path == "/livez"
        || path == "/readyz"
        || super::ui::is_ui_path(&path)
        || (is_mcp && mcp::preflight(request.method(), request.headers()));
    let grant = if !public {
        let auth = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        // A `token` query parameter counts as a credential everywhere and
        // authenticates on the calendar feeds only (see Credentials).
        let query_token = request
            .uri()
            .query()
            .filter(|q| q.contains("token"))
            .and_then(|_| {
                Query::<HashMap<String, String>>::try_from_uri(request.uri())
                    .ok()
                    .and_then(|Query(mut q)| q.remove("token"))
            });
        let calendar = path.ends_with(".ics");
        match state
            .credentials
            .grant_for(auth, query_token.as_deref(), calendar)
        {
            Err(_) => {
                return ApiError(StatusCode::UNAUTHORIZED, "401: Unauthorized".into())
                    .into_response()
            }
            Ok(grant) if !grant.allows(needed) => {
                // The original's body: the token's label and the scope,
                // both in Python's repr quoting.
                let label = minijinja::Value::from(state.credentials.label(&grant));
                let scope = minijinja::Value::from(needed.scope_name());
                return ApiError(
                    StatusCode::FORBIDDEN,
                    format!(
                        "token {} lacks the {} scope required for this endpoint",
                        py_repr(&label),
                        py_repr(&scope)
                    ),
                )
                .into_response();
            }
            Ok(grant) => match is_mcp.then(|| mcp::anonymous_refusal(&state, &grant)) {
                Some(Some(refusal)) => return refusal,
                _ => grant,
            },
        }
    } else {
        Grant::default()
    };
    if needed == Needed::Control {
        let header_str = |name: header::HeaderName| {
            request
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let origin = header_str(header::ORIGIN);
        let host = header_str(header::HOST);
        if !state
            .credentials
            .origin_allowed(origin.as_deref(), host.as_deref())
        {
            return ApiError(
                StatusCode::FORBIDDEN,
                "403: cross-site request refused (Origin not allowed)".into(),
            )
            .into_response();
        }
    }
    // Handlers that care who asked (POST /shutdown) read the grant back.
    request.extensions_mut().insert(grant);
    let mut response = next.run(request).await;
    let status = response.status();
    // An event stream's framing headers are its contract: web.headers
    // must not turn caching or proxy buffering back on.
    let event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    // Also on a dashboard 304 (a browser refreshes the stored headers).
    let page = super::ui::is_ui_path(&path);
    if status == StatusCode::OK
        || status == StatusCode::CONFLICT
        || (page && status == StatusCode::NOT_MODIFIED)
    {
        for (name, value) in state.extra_headers.iter() {
            if event_stream
                && (name == header::CACHE_CONTROL || name.as_str() == "x-accel-buffering")
            {
                continue;
            }
            if page && super::ui::keeps_own(name) {
                continue;
            }
            response.headers_mut().insert(name.clone(), value.clone());
        }
    }
    response
}

fn wants_json(headers: &HeaderMap) -> bool {
    request::wants_json(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()))
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// `POST /shutdown`: the graceful drain SIGTERM starts. Unlike every other
/// route it needs a configured token even when the API is open, so an
/// unauthenticated listener is not a stop switch for the scheduler.
async fn shutdown(State(state): State<AppState>, grant: Option<Extension<Grant>>) -> ApiResult {
    let grant = grant.map(|Extension(g)| g).unwrap_or_default();
    if grant.token.is_none() {
        return Err(ApiError(
            StatusCode::FORBIDDEN,
            "POST /shutdown requires bearer-token authentication: configure web.authToken \
             (or a web.authTokens entry whose scopes include `control`) and present it on \
             this request"
                .into(),
        ));
    }
    let label = minijinja::Value::from(state.credentials.label(&grant));
    tracing::info!(
        target: "cronstable",
        "shutdown requested via POST /shutdown (token {})",
        py_repr(&label)
    );
    state.control.shutdown();
    Ok(Json(json!({"shuttingDown": true})).into_response())
}

async fn version() -> Response {
    text(env!("CARGO_PKG_VERSION").to_owned())
}

/// `GET /status`: one row or line per job, written straight into one
/// buffer from the scheduler's [`crate::scheduler::control::StatusTable`]
/// and the names kept for its job table ([`super::cache::StatusCache`]).
async fn status(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    let table = state.control.status().await?;
    let names = state.status_cache.names(&table);
    let now = Utc::now();
    if wants_json(&headers) {
        let body = views::status_json(&names, &table, now);
        return Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response());
    }
    let body = views::status_text(&names, &table, now);
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response())
}

/// `GET /jobs`: every job, with an ETag that ignores the countdowns (see
/// [`views::RenderedJobs`]), 304 for a client that has it, gzip on
/// request. The rendering is shared between requests while the scheduler
/// says nothing it shows changed ([`super::cache::JobsCache`]).
async fn jobs(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    let rendered = state
        .jobs_cache
        .current(&state.control)
        .await
        .map_err(|err| match err {
            super::cache::JobsError::Control(err) => ApiError::from(err),
            err @ super::cache::JobsError::Encode(_) => {
                ApiError(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
            }
        })?;
    let etag = rendered.etag();
    if conditional::not_modified(&headers, etag) {
        return Ok(conditional::json(&headers, etag, Vec::new()).await);
    }
    let body = rendered.body_at(Utc::now());
    Ok(conditional::json(&headers, etag, body).await)
}

async fn job(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult {
    let job = state.control.job(&name).await?;
    Ok(Json(views::job_detail(&job, Utc::now())).into_response())
}

async fn runs(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let runs = state.control.runs(&name).await?;
    let limit = request::runs_limit(&query)
        .map_err(|message| ApiError(StatusCode::BAD_REQUEST, message))?
        .unwrap_or(runs.len());
    let shown: Vec<Value> = runs
        .iter()
        .skip(runs.len().saturating_sub(limit))
        .map(views::run_entry)
        .collect();
    Ok(Json(json!({"job": name, "runs": shown, "stats": views::run_stats(&runs)})).into_response())
}

/// `POST /jobs/{name}/start`: on the node that runs the job, or with
/// `?local=true` on this node whichever node runs it.
async fn start(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ControlResult {
    let here = request::local_flag(&query).map_err(ControlError::BadRequest)?;
    let queued = if here {
        state.control.start_here(&name).await?
    } else {
        state.control.start(&name).await?
    };
    if let Some(queued) = queued {
        return Ok(pools::queued_start(&name, &queued));
    }
    Ok(Json(json!({"started": name})).into_response())
}

async fn cancel(State(state): State<AppState>, Path(name): Path<String>) -> ControlResult {
    let instances = state.control.cancel(&name).await?;
    Ok(Json(json!({"cancelled": name, "instances": instances})).into_response())
}

async fn pause(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> ControlResult {
    let request: PauseRequest = request::pause_body(&body).map_err(ControlError::BadRequest)?;
    let window = state.control.pause(&name, request).await?;
    Ok(Json(json!({"paused": {
        "since": views::iso(window.since),
        "until": views::iso(window.until),
        "note": window.note,
        "by": window.by,
        "channel": window.channel,
    }}))
    .into_response())
}

async fn resume(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> ControlResult {
    let by = request::resume_body(&body).map_err(ControlError::BadRequest)?;
    state.control.resume(&name, &by).await?;
    Ok(Json(json!({"paused": null})).into_response())
}

async fn job_set_id(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    let id = state.control.job_set_id().await?;
    if wants_json(&headers) {
        let count = state.control.jobs().await?.len();
        return Ok(Json(json!({"job_set_id": id, "jobs": count})).into_response());
    }
    Ok(text(id))
}

/// How long a probe waits for the scheduler before calling it stuck.
const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /livez`: 200 while the scheduler task answers (within 2 s), 503
/// when it does not. Needs no token.
async fn livez(State(state): State<AppState>) -> Response {
    match tokio::time::timeout(PROBE_DEADLINE, state.control.job_set_id()).await {
        Ok(Ok(_)) => (StatusCode::OK, Json(json!({"live": true}))).into_response(),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"live": false, "reason": "the scheduler does not answer"})),
        )
            .into_response(),
    }
}

/// `GET /readyz`: 200 once the configuration is loaded and, in
/// Kubernetes mode, the first sync with the API server is done and the
/// ConfigMap of `--configmap` was found; 503 with the reason before that
/// (a watch the API server refuses is named), or while the scheduler does
/// not answer, or drains. Needs no token.
async fn readyz(State(state): State<AppState>) -> Response {
    let not_ready = |reason: &str| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"ready": false, "reason": reason})),
        )
            .into_response()
    };
    if *state.draining.borrow() {
        return not_ready("shutting down");
    }
    // The scheduler must answer (a wedged loop is not ready)...
    if !matches!(
        tokio::time::timeout(PROBE_DEADLINE, state.control.job_set_id()).await,
        Ok(Ok(_))
    ) {
        return not_ready("the scheduler does not answer");
    }
    // ...and in Kubernetes mode the watches must have listed once (a
    // refused watch is named), and the ConfigMap must have been found.
    match state
        .published
        .kube
        .as_ref()
        .and_then(|kube| kube.not_ready_reason())
    {
        Some(reason) => not_ready(&reason),
        None => (StatusCode::OK, Json(json!({"ready": true}))).into_response(),
    }
}

/// `GET /cluster`: the leadership backend's view (the Clustering page's
/// shape), or `{"enabled": false, "peers": []}` without one.
async fn cluster(State(state): State<AppState>) -> ApiResult {
    // The job-set id is the scheduler's; the rest is the backend's own.
    let job_set_id = state.control.job_set_id().await?;
    let now = std::time::Instant::now();
    let body = state
        .published
        .leadership
        .with(|s| s.map(|s| s.to_json(&job_set_id, now)))
        .unwrap_or_else(|| json!({"enabled": false, "peers": []}));
    Ok(Json(body).into_response())
}

/// `GET /fleet`: every gossip node's jobs in one view (this node's live,
/// each peer's as its last poll brought them), or `{"enabled": false,
/// "nodes": []}` without a running gossip backend (a lease backend has no
/// channel between the nodes to carry them). Built here, on the API's
/// thread, from what the scheduler hands over.
async fn fleet(State(state): State<AppState>) -> ApiResult {
    let gossip = state.published.leadership.with(|s| {
        s.filter(|s| s.running && !s.stepped_down)
            .and_then(|s| s.gossip.clone())
    });
    let Some(gossip) = gossip else {
        return Ok(Json(json!({"enabled": false, "nodes": []})).into_response());
    };
    let own = state.control.fleet().await?;
    let view = crate::gossip::fleet::fleet_view(
        &gossip.view,
        &own,
        gossip.interval,
        chrono::Utc::now(),
        gossip.origin.elapsed(),
    );
    Ok(Json(view).into_response())
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    if !state.metrics_enabled {
        return Err(ApiError(StatusCode::NOT_FOUND, "404: Not Found".into()));
    }
    let format = Format::negotiate(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let snapshot = metrics_snapshot(&state).await?;
    let body = state.metrics_cache.body(snapshot, format).await;
    Ok(([(header::CONTENT_TYPE, format.content_type())], body).into_response())
}

/// What `GET /metrics` encodes: the scheduler's values, then what the
/// cluster and the Kubernetes mode publish and the store's counters,
/// read here.
async fn metrics_snapshot(
    state: &AppState,
) -> Result<crate::metrics::prometheus::Snapshot, ControlError> {
    Ok(state
        .control
        .metrics()
        .await?
        .with_published(
            state.published.leadership.snapshot(),
            state.published.kube.as_ref().map(|k| k.snapshot()),
        )
        .with_state(state.store.as_ref().map(|view| {
            let store = view.store();
            crate::metrics::prometheus::StateFacts::read(&store.stats(), store.topology().as_str())
        })))
}

/// `GET /jobs/{name}/logs`: the Server-Sent Events tail of the job's
/// newest running instance, else of its last finished run.
async fn job_logs(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult {
    // Resolved before the stream starts, so an unknown job is still a
    // plain 404 with the JSON envelope.
    let output = state.control.logs(&name).await?;
    let subscription = output.map(|o| o.subscribe());
    let body = logs::sse_body(subscription, logs::PING_INTERVAL, state.draining.clone());
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

/// `GET /summary`: fleet counts and the next fire, from one snapshot.
async fn summary(State(state): State<AppState>) -> ApiResult {
    let jobs = state.control.jobs().await?;
    let now = Utc::now();
    let count = |f: &dyn Fn(&crate::scheduler::control::JobSnapshot) -> bool| {
        jobs.iter().filter(|j| f(j)).count()
    };
    let enabled = count(&|j| j.config.enabled);
    let mut soonest: Option<(&str, chrono::DateTime<Utc>)> = None;
    for job in &jobs {
        let reboot = job.config.schedule.parsed.cron().is_none();
        if !job.config.enabled || job.running || reboot {
            continue;
        }
        let Some(at) = job.next_fire else { continue };
        // A fire inside an active pause is skipped at the gate.
        if job.paused.as_ref().is_some_and(|p| at < p.until) {
            continue;
        }
        if soonest.is_none_or(|(_, best)| at < best) {
            soonest = Some((&job.config.name, at));
        }
    }
    let next_fire = soonest.map(|(job, at)| {
        json!({
            "job": job,
            "in": ((at - now).num_milliseconds().max(0) as f64) / 1000.0,
            "at": views::iso(at),
        })
    });
    Ok(Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "node_name": identity(&state),
        "generated_at": views::iso(now),
        "jobs": {
            "total": jobs.len(),
            "enabled": enabled,
            "disabled": jobs.len() - enabled,
            "running": count(&|j| j.running),
            "paused": count(&|j| j.paused.is_some()),
            "failing": count(&|j| j.last_run.as_ref().is_some_and(|r| r.outcome == crate::job::outcome::Outcome::Failure)),
            "never_fires": count(&|j| j.never_fires),
        },
        "next_fire": next_fire,
        "cluster": cluster_summary(&state),
    }))
    .into_response())
}

/// This node's name as the API reports it: the cluster's node name when
/// a `cluster` section is in force, else the host name.
fn identity(state: &AppState) -> String {
    state
        .published
        .leadership
        .with(|s| s.map(|s| s.node_name.clone()))
        .unwrap_or_else(node_name)
}

/// The compact leadership view of `GET /summary`: `{"enabled": false}`
/// without a `cluster` section, else whether the backend runs, the
/// distribution, quorum and leader as `GET /cluster` tells them.
fn cluster_summary(state: &AppState) -> Value {
    let now = std::time::Instant::now();
    state.published.leadership.with(|s| match s {
        None => json!({"enabled": false}),
        Some(s) => json!({
            "enabled": s.running && !s.stepped_down,
            "distribution": s.distribution(),
            "quorate": s.is_quorate(now),
            "is_leader": s.is_leader(now),
            "leader": s.leader(now),
        }),
    })
}

/// `GET /activity`: every job's retained runs reduced to the three
/// fields the heatmap plots, with an ETag so an unchanged feed costs a
/// 304.
async fn activity(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    use crate::scheduler::history::RUN_HISTORY_LIMIT;
    let limit = request::clamped(&query, &["limit"], RUN_HISTORY_LIMIT, 1, RUN_HISTORY_LIMIT);
    let rows = state.control.activity().await?;
    let mut jobs = serde_json::Map::new();
    for (name, runs) in rows {
        let shown: Vec<Value> = runs
            .iter()
            .skip(runs.len().saturating_sub(limit))
            .map(|r| {
                json!({
                    "started_at": r.started_at.map(views::iso),
                    "finished_at": views::iso(r.finished_at),
                    "outcome": r.outcome.as_str(),
                })
            })
            .collect();
        jobs.insert(name, Value::from(shown));
    }
    let body = json!({"jobs": jobs}).to_string().into_bytes();
    let etag = {
        use sha2::Digest;
        conditional::etag_of(&sha2::Sha256::digest(&body))
    };
    Ok(conditional::json(&headers, &etag, body).await)
}

/// `GET /node`: this node's live CPU and memory plus the daemon's own.
async fn node(State(state): State<AppState>) -> Response {
    let sampler = Arc::clone(&state.node);
    // The reading is a few small file reads; keep them off the reactor.
    let resources = tokio::task::spawn_blocking(move || sampler.snapshot())
        .await
        .ok()
        .flatten();
    // Whether this host can enforce `resourceLimits`: a cached read-only
    // probe before the first capped run, the setup's result after.
    let limits = tokio::task::spawn_blocking(|| {
        crate::job::limits::capability_json(&crate::job::contain::manager().capability())
    })
    .await
    .unwrap_or(Value::Null);
    Json(json!({"node_name": identity(&state), "resources": resources, "limits": limits}))
        .into_response()
}

/// `GET /node/history`: the background-sampled ring.
async fn node_history(State(state): State<AppState>) -> Response {
    let mut body = state.node.history();
    if let Some(map) = body.as_object_mut() {
        map.insert("node_name".into(), Value::from(identity(&state)));
    }
    Json(body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::ports::RecordsError;

    async fn answer(err: ControlError) -> (StatusCode, Value) {
        let response = ControlRefusal::from(err).into_response();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024)
            .await
            .expect("a small body");
        (status, serde_json::from_slice(&bytes).expect("a JSON body"))
    }

    /// Every refusal of a control request: its status, and the error
    /// envelope, with the runner's name beside it when the request
    /// belongs to another node.
    #[tokio::test]
    async fn control_refusals_keep_the_error_envelope_and_name_the_runner() {
        let cases = [
            (
                ControlError::NotFound("j".into()),
                StatusCode::NOT_FOUND,
                json!({"error": "job 'j' not found"}),
            ),
            (
                ControlError::Conflict("job 'j' is disabled".into()),
                StatusCode::CONFLICT,
                json!({"error": "job 'j' is disabled"}),
            ),
            (
                ControlError::BadRequest("bad".into()),
                StatusCode::BAD_REQUEST,
                json!({"error": "bad"}),
            ),
            (
                ControlError::Unavailable,
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "the scheduler is not running"}),
            ),
            (
                ControlError::Elsewhere {
                    job: "j".into(),
                    runner: "sched-b".into(),
                },
                StatusCode::CONFLICT,
                json!({
                    "error": "job 'j' runs on node 'sched-b', not on this node: send the request to 'sched-b'",
                    "clusterOwner": "sched-b",
                }),
            ),
            (
                ControlError::NoRunner { job: "j".into() },
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "job 'j' runs on the cluster's leader, and no leader is known right now: try again once one is elected"}),
            ),
            (
                ControlError::NotRecorded {
                    job: "j".into(),
                    action: "resumed",
                    reason: RecordsError::NoAnswer,
                },
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": "job 'j' was resumed on this node, but the cluster's leadership store did not record it (the store did not answer), so a new leader would not know: send the request again"}),
            ),
        ];
        for (err, status, body) in cases {
            let shown = format!("{err:?}");
            assert_eq!(answer(err.clone()).await, (status, body), "{shown}");
            // Routes that are not control routes answer the same status.
            assert_eq!(ApiError::from(err).0, status, "{shown}");
        }
    }
}
