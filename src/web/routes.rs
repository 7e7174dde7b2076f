//! The router: every route, the auth layer, the extra headers, and the
//! `{"error": ...}` envelope on every error (404 and 405 included).

use super::auth::{Credentials, Needed};
use super::{preview, views};
use crate::cronexpr::{paused_note, why, Probe};
use crate::metrics::prometheus::Format;
use crate::scheduler::control::{ControlError, ControlHandle};
use crate::scheduler::pause::PauseRequest;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The scheduler.
    pub control: ControlHandle,
    /// Resolved tokens and scopes.
    pub credentials: Arc<Credentials>,
    /// `web.headers`, minus any Content-Type.
    pub extra_headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    /// `web.metrics.enabled`.
    pub metrics_enabled: bool,
}

/// An error answered as `{"error": "..."}`.
#[derive(Debug)]
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({"error": self.1}))).into_response()
    }
}

impl From<ControlError> for ApiError {
    fn from(err: ControlError) -> Self {
        let status = match err {
            ControlError::NotFound(_) => StatusCode::NOT_FOUND,
            ControlError::Conflict(_) => StatusCode::CONFLICT,
            ControlError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ControlError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        };
        ApiError(status, err.to_string())
    }
}

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
        ("POST", "/jobs/{name}/start", post(start)),
        ("POST", "/jobs/{name}/cancel", post(cancel)),
        ("POST", "/jobs/{name}/pause", post(pause)),
        ("POST", "/jobs/{name}/resume", post(resume)),
        ("GET", "/job-set-id", get(job_set_id)),
        ("GET", "/metrics", get(metrics)),
        ("GET", "/schedule/preview", get(schedule_preview)),
        ("GET", "/schedule/why", get(schedule_why)),
    ]
}

/// Every route the API serves, as `(method, path)`; the OpenAPI document
/// is checked against this list.
pub fn routes() -> Vec<(&'static str, &'static str)> {
    table().into_iter().map(|(m, p, _)| (m, p)).collect()
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
async fn authorize(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let needed = if request.method() == Method::GET || request.method() == Method::HEAD {
        Needed::View
    } else {
        Needed::Control
    };
    let public = path == "/metrics" && state.credentials.metrics_public;
    if !public {
        let auth = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        match state.credentials.grant(auth) {
            Err(_) => {
                return ApiError(StatusCode::UNAUTHORIZED, "401: Unauthorized".into())
                    .into_response()
            }
            Ok(grant) if !grant.allows(needed) => {
                return ApiError(
                    StatusCode::FORBIDDEN,
                    "403: Forbidden (the credential lacks the scope this route needs)".into(),
                )
                .into_response()
            }
            Ok(_) => {}
        }
    }
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
    let mut response = next.run(request).await;
    let status = response.status();
    if status == StatusCode::OK || status == StatusCode::CONFLICT {
        for (name, value) in state.extra_headers.iter() {
            response.headers_mut().insert(name.clone(), value.clone());
        }
    }
    response
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| {
            accept
                .split(',')
                .any(|range| range.split(';').next().map(str::trim) == Some("application/json"))
        })
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

async fn version() -> Response {
    text(env!("CARGO_PKG_VERSION").to_owned())
}

async fn status(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    let jobs = state.control.jobs().await?;
    let now = Utc::now();
    if wants_json(&headers) {
        let rows: Vec<Value> = jobs.iter().map(|j| views::status_row(j, now)).collect();
        return Ok(Json(rows).into_response());
    }
    let mut body = String::with_capacity(jobs.len() * 48);
    for job in &jobs {
        body.push_str(&views::status_line(job, now));
        body.push('\n');
    }
    Ok(text(body))
}

async fn jobs(State(state): State<AppState>) -> ApiResult {
    let jobs = state.control.jobs().await?;
    let now = Utc::now();
    let list: Vec<Value> = jobs.iter().map(|j| views::job_detail(j, now)).collect();
    Ok(Json(list).into_response())
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
    let limit = match query.get("limit") {
        None => runs.len(),
        Some(text) => text.parse::<usize>().map_err(|_| {
            ApiError(
                StatusCode::BAD_REQUEST,
                format!("limit must be a positive integer, got '{text}'"),
            )
        })?,
    };
    let shown: Vec<Value> = runs
        .iter()
        .skip(runs.len().saturating_sub(limit))
        .map(views::run_entry)
        .collect();
    Ok(Json(json!({"job": name, "runs": shown, "stats": views::run_stats(&runs)})).into_response())
}

async fn start(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult {
    state.control.start(&name).await?;
    Ok(Json(json!({"started": name})).into_response())
}

async fn cancel(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult {
    let instances = state.control.cancel(&name).await?;
    Ok(Json(json!({"cancelled": name, "instances": instances})).into_response())
}

fn optional_body<T: for<'de> Deserialize<'de> + Default>(body: &Bytes) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}

async fn pause(State(state): State<AppState>, Path(name): Path<String>, body: Bytes) -> ApiResult {
    let request: PauseRequest = optional_body(&body)?;
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeRequest {
    #[allow(dead_code)]
    by: Option<String>,
}

async fn resume(State(state): State<AppState>, Path(name): Path<String>, body: Bytes) -> ApiResult {
    let _request: ResumeRequest = optional_body(&body)?;
    state.control.resume(&name).await?;
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

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> ApiResult {
    if !state.metrics_enabled {
        return Err(ApiError(StatusCode::NOT_FOUND, "404: Not Found".into()));
    }
    let format = Format::negotiate(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let body = state.control.metrics(format).await?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], body).into_response())
}

async fn schedule_preview(Query(query): Query<HashMap<String, String>>) -> ApiResult {
    preview::preview(&query, Utc::now())
        .map(|v| Json(v).into_response())
        .map_err(|message| ApiError(StatusCode::BAD_REQUEST, message))
}

/// `GET /schedule/why?job=&at=`: why one job's schedule did or did not
/// select one timestamp, column by column, with the nearest real fires
/// around it (see `cronexpr::why`).
async fn schedule_why(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let param = |key: &str| query.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
    let (Some(name), Some(at)) = (param("job"), param("at")) else {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            "both query parameters are required: job=<name> and at=<ISO-8601 timestamp>".into(),
        ));
    };
    // an unknown job is a 404 whatever the timestamp says
    let job = state.control.job(name).await?;
    let probe = Probe::parse(at).map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    let config = &job.config;
    let tz = &config.time_base;
    let mut report = why(&config.parsed_schedule, tz, &probe);
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
    // Plain-English descriptions are not produced by this version.
    payload["description"] = Value::Null;
    Ok(Json(payload).into_response())
}
