//! `POST /mcp` (with `GET` and `OPTIONS` on the same path) and the MCP
//! server's [`Backend`] over this router's state: each tool asks the REST
//! route it mirrors, in process, and reads the JSON that route serves, so
//! a tool never shows something the route would not.

use super::super::auth::Grant;
use super::{state, status_of, AppState};
use crate::metrics::prometheus::{Format, Sample};
use crate::scheduler::control::ControlError;
use crate::web::mcp::{Answer, Backend, Caller, Inbound, JobQuery, Refusal};
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, MethodRouter};
use axum::{Extension, Json};
use chrono::Utc;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The methods of `/mcp`.
pub(super) fn route() -> MethodRouter<AppState> {
    post(post_mcp).get(get_mcp).options(options_mcp)
}

/// Whether a request to `/mcp` is a CORS preflight, which browsers send
/// without credentials: it passes the token check (and carries only the
/// CORS policy back).
pub(super) fn preflight(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::OPTIONS && headers.contains_key("access-control-request-method")
}

/// `/mcp` serves agents, which carry a token: the anonymous grant
/// (`web.anonymousScopes`) does not reach it.
pub(super) fn anonymous_refusal(state: &AppState, grant: &Grant) -> Option<Response> {
    if grant.token.is_some() || state.credentials.is_open() {
        return None;
    }
    Some(
        (
            StatusCode::FORBIDDEN,
            Json(json!({"error": "MCP access requires a bearer token with the 'view' permission"})),
        )
            .into_response(),
    )
}

fn disabled() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": "the MCP server is off: set mcp.enabled to true to serve it"})),
    )
        .into_response()
}

fn caller_of(state: &AppState, grant: Option<Extension<Grant>>) -> Caller {
    if state.credentials.is_open() {
        return Caller::open();
    }
    let grant = grant.map(|Extension(g)| g).unwrap_or_default();
    Caller {
        label: Some(state.credentials.label(&grant).to_owned()),
        grant,
    }
}

async fn post_mcp(
    State(state): State<AppState>,
    grant: Option<Extension<Grant>>,
    request: Request,
) -> Response {
    let Some(server) = state.mcp.clone() else {
        return disabled();
    };
    let (parts, body) = request.into_parts();
    let inbound = Inbound::of(&parts.headers);
    if let Some(refusal) = server.screen(&inbound) {
        return refusal;
    }
    let body = match server.read_body(&inbound, body).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let caller = caller_of(&state, grant);
    server.answer(&inbound, &body, &caller, &state).await
}

async fn get_mcp(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match &state.mcp {
        Some(server) => server.answer_get(&Inbound::of(&headers)),
        None => disabled(),
    }
}

async fn options_mcp(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match &state.mcp {
        Some(server) => server.answer_options(&Inbound::of(&headers)),
        None => disabled(),
    }
}

/// A refused control request as the REST route states it.
fn refusal(err: ControlError) -> Refusal {
    Refusal::new(status_of(&err).as_u16(), err.to_string())
}

/// A route's answer read back: the JSON body, or the refusal (its
/// status and `error` text).
async fn json_of<E: IntoResponse>(answer: Result<Response, E>) -> Answer {
    let response = answer.unwrap_or_else(IntoResponse::into_response);
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(|e| Refusal::new(500, format!("cannot read the answer: {e}")))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Refusal::new(500, format!("the answer is not JSON: {e}")))?;
    if status.is_success() {
        return Ok(value);
    }
    let message = value["error"]
        .as_str()
        .map_or_else(|| format!("HTTP {status}"), str::to_owned);
    Err(Refusal::new(status.as_u16(), message))
}

fn query(pairs: &[(&str, String)]) -> Query<HashMap<String, String>> {
    Query(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

fn accept_json() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    headers
}

fn path(name: &str) -> Path<String> {
    Path(name.to_owned())
}

impl Backend for AppState {
    async fn status_rows(&self) -> Answer {
        json_of(super::status(State(self.clone()), accept_json()).await).await
    }

    async fn jobs(&self, query: &JobQuery) -> Answer<(usize, Vec<Value>)> {
        let rendered = self
            .jobs_cache
            .current(&self.control)
            .await
            .map_err(|e| Refusal::new(503, e.to_string()))?;
        let selected: Vec<usize> = rendered
            .jobs()
            .iter()
            .enumerate()
            .filter(|(_, j)| query.selects(&j.config.name, j.config.enabled, j.running))
            .map(|(i, _)| i)
            .collect();
        let now = Utc::now();
        let page = selected
            .iter()
            .skip(query.offset)
            .take(query.limit)
            .filter_map(|i| rendered.entry_at(*i, now))
            .filter_map(|entry| serde_json::from_slice(&entry).ok())
            .collect();
        Ok((selected.len(), page))
    }

    async fn job_names(&self) -> Answer<Vec<String>> {
        let rendered = self
            .jobs_cache
            .current(&self.control)
            .await
            .map_err(|e| Refusal::new(503, e.to_string()))?;
        Ok(rendered
            .jobs()
            .iter()
            .map(|j| j.config.name.clone())
            .collect())
    }

    async fn job(&self, name: &str) -> Answer {
        json_of(super::job(State(self.clone()), path(name)).await).await
    }

    async fn runs(&self, name: &str) -> Answer {
        json_of(super::runs(State(self.clone()), path(name), query(&[])).await).await
    }

    async fn trends(&self, name: &str) -> Answer {
        json_of(state::trends(State(self.clone()), path(name)).await).await
    }

    async fn resources(&self, name: &str, runs: usize) -> Answer {
        let limit = query(&[("limit", runs.to_string())]);
        json_of(super::resources::job_resources(State(self.clone()), path(name), limit).await).await
    }

    async fn cluster(&self) -> Answer {
        json_of(super::cluster(State(self.clone())).await).await
    }

    async fn fleet(&self) -> Answer {
        json_of(super::fleet(State(self.clone())).await).await
    }

    async fn node(&self, history: bool) -> Answer {
        let node = super::node(State(self.clone())).await;
        let mut body = json_of(Ok::<_, Response>(node)).await?;
        if history {
            let ring = super::node_history(State(self.clone())).await;
            body["history"] = json_of(Ok::<_, Response>(ring)).await?;
        }
        Ok(body)
    }

    async fn metric_samples(
        &self,
        wanted: &(dyn Fn(&str) -> bool + Sync),
        limit: usize,
    ) -> Answer<(Vec<Sample>, usize)> {
        if !self.metrics_enabled {
            return Err(Refusal::new(404, "404: Not Found"));
        }
        let snapshot = super::metrics_snapshot(self).await.map_err(refusal)?;
        // The query writes only the per-job lines it keeps: no need to
        // encode (or take from the cache) the whole exposition.
        Ok(snapshot.samples(Format::Text, wanted, limit))
    }

    async fn job_set(&self) -> Answer<(String, usize)> {
        let body = json_of(super::job_set_id(State(self.clone()), accept_json()).await).await?;
        let id = body["job_set_id"].as_str().unwrap_or("").to_owned();
        Ok((id, body["jobs"].as_u64().unwrap_or(0) as usize))
    }

    async fn log_lines(&self, name: &str) -> Answer<(bool, Vec<(String, String)>)> {
        let job = self.control.job(name).await.map_err(refusal)?;
        let output = self.control.logs(name).await.map_err(refusal)?;
        let lines = output
            .map(|o| o.lines())
            .unwrap_or_default()
            .into_iter()
            .map(|(stream, text)| (stream.to_owned(), text.to_string()))
            .collect();
        Ok((job.running, lines))
    }

    async fn pressure(&self, hours: i64, tz: Option<&str>) -> Answer {
        let mut params = vec![("hours", hours.to_string())];
        params.extend(tz.map(|tz| ("tz", tz.to_owned())));
        json_of(super::schedule::schedule_pressure(State(self.clone()), query(&params)).await).await
    }

    async fn duplicates(&self) -> Answer {
        json_of(super::schedule::schedule_duplicates(State(self.clone())).await).await
    }

    async fn suggest(&self, period: &str, tz: Option<&str>) -> Answer {
        let mut params = vec![("period", period.to_owned())];
        params.extend(tz.map(|tz| ("tz", tz.to_owned())));
        json_of(super::schedule::schedule_suggest(State(self.clone()), query(&params)).await).await
    }

    async fn why(&self, name: &str, at: &str) -> Answer {
        let params = query(&[("job", name.to_owned()), ("at", at.to_owned())]);
        json_of(super::schedule::explain(State(self.clone()), params).await).await
    }

    async fn pools(&self) -> Answer {
        json_of(super::pools::list(State(self.clone())).await).await
    }

    async fn state_overview(&self) -> Answer {
        json_of(state::inventory(State(self.clone())).await).await
    }

    async fn state_documents(&self, ns: &str) -> Answer {
        let params = query(&[("ns", ns.to_owned())]);
        json_of(state::documents(State(self.clone()), params).await).await
    }

    async fn state_records(&self, stream: &str, limit: usize) -> Answer {
        let params = query(&[("stream", stream.to_owned()), ("limit", limit.to_string())]);
        json_of(state::records(State(self.clone()), params).await).await
    }

    async fn start(&self, name: &str) -> Answer {
        json_of(super::start(State(self.clone()), path(name), query(&[])).await).await
    }

    async fn cancel(&self, name: &str) -> Answer {
        json_of(super::cancel(State(self.clone()), path(name)).await).await
    }

    async fn pause(&self, name: &str, seconds: Option<i64>, note: &str, by: &str) -> Answer {
        let request = super::request::PauseRequest {
            duration_seconds: seconds,
            until: None,
            note: Some(note.to_owned()),
            by: Some(by.to_owned()),
            channel: Some("mcp"),
        };
        let window = self.control.pause(name, request).await.map_err(refusal)?;
        Ok(json!({"paused": {
            "since": super::views::iso(window.since),
            "until": super::views::iso(window.until),
            "note": window.note,
            "by": window.by,
            "channel": window.channel,
        }}))
    }

    async fn resume(&self, name: &str, by: &str) -> Answer {
        let body = Bytes::from(json!({"by": by}).to_string());
        json_of(super::resume(State(self.clone()), path(name), body).await).await
    }

    async fn pool_cancel(&self, pool: &str, id: &str) -> Answer {
        let target = Path((pool.to_owned(), id.to_owned()));
        json_of(super::pools::cancel(State(self.clone()), target).await).await
    }
}
