//! The `/v1/*` routes of the job endpoint, in the original's wire format:
//! every call authenticates with its run's bearer token, names a scope the
//! run may use, and gets JSON back (`{"error": "..."}` on failure, with
//! the original's texts and statuses). Store work runs on the blocking
//! pool of this endpoint's own thread, never on the scheduler's.

use super::locks::{self, AcquireRequest, Acquired, LockManager};
use super::registry::{bearer, Registry, RunContext};
use crate::config::job_api::JobApiSettings;
use crate::state::jobstate::{self, JobStateError};
use crate::state::store::Store;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// What every handler reads.
pub struct App {
    /// The live runs.
    pub registry: Arc<Registry>,
    /// The job locks held by this daemon's runs.
    pub locks: Arc<LockManager>,
    /// The store.
    pub store: Arc<Store>,
    /// `state.jobApi`.
    pub settings: JobApiSettings,
    /// Requests in flight, bounded so a job that floods the endpoint
    /// cannot pile up unbounded work.
    pub in_flight: Arc<tokio::sync::Semaphore>,
}

type Shared = State<Arc<App>>;
type Params = Query<HashMap<String, String>>;

/// A failed call: its status, its `error` text, and whether the body is
/// spaced like the framework's own errors in the original (401, 404, 405
/// and the transport's 413) or compact like its handlers'.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    spaced: bool,
}

impl ApiError {
    fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            message: message.into(),
            spaced: false,
        }
    }

    fn framework(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            spaced: true,
        }
    }

    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }

    fn unauthorized() -> ApiError {
        ApiError::framework(StatusCode::UNAUTHORIZED, "401: Unauthorized")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = if self.spaced {
            let mut text = String::from("{\"error\": ");
            crate::pyfmt::write_json_string(&mut text, &self.message, false);
            text.push('}');
            text
        } else {
            json!({ "error": self.message }).to_string()
        };
        json_response(self.status, body.into_bytes())
    }
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn ok(value: Value) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, value.to_string().into_bytes()))
}

fn store_error(path: &str, err: JobStateError) -> ApiError {
    if err.status() == 503 {
        tracing::warn!(
            target: "cronstable::jobapi",
            "state job API: backend error serving {path}: {}",
            err.detail()
        );
    }
    ApiError::new(err.status(), err.to_string())
}

/// The endpoint's routes.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/v1/run", get(run_info))
        .route("/v1/kv/get", get(kv_get))
        .route("/v1/kv/set", post(kv_set))
        .route("/v1/kv/delete", post(kv_delete))
        .route("/v1/kv/list", get(kv_list))
        .route("/v1/cursor/get", get(cursor_get))
        .route("/v1/cursor/advance", post(cursor_advance))
        .route("/v1/idempotency/claim", post(idem_claim))
        .route("/v1/idempotency/release", post(idem_release))
        .route("/v1/artifact/put", post(artifact_put))
        .route("/v1/artifact/get", get(artifact_get))
        .route("/v1/artifact/list", get(artifact_list))
        .route("/v1/lock/acquire", post(lock_acquire))
        .route("/v1/lock/release", post(lock_release))
        .route("/v1/secret/get", get(secret_get))
        .route("/v1/secret/list", get(secret_list))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(app)
}

async fn not_found() -> ApiError {
    ApiError::framework(StatusCode::NOT_FOUND, "404: Not Found")
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    tracing::debug!(target: "cronstable::jobapi", "state job API: {method} {uri} not allowed");
    ApiError::framework(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed")
}

/// The run the request's token belongs to.
fn authorize(app: &App, headers: &HeaderMap) -> Result<Arc<RunContext>, ApiError> {
    let header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    bearer(header)
        .and_then(|token| app.registry.lookup(token))
        .ok_or_else(ApiError::unauthorized)
}

fn token_of(headers: &HeaderMap) -> Option<String> {
    bearer(headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())).map(str::to_owned)
}

/// Reads the whole body under the transport's cap.
async fn read_body(app: &App, body: Body) -> Result<Bytes, ApiError> {
    let limit = app.settings.body_limit();
    match axum::body::to_bytes(body, limit.unwrap_or(usize::MAX)).await {
        Ok(bytes) => Ok(bytes),
        Err(_) => Err(ApiError::framework(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Maximum request body size {} exceeded.",
                limit.unwrap_or(usize::MAX)
            ),
        )),
    }
}

/// A JSON object body (an empty body is an empty object).
async fn json_body(app: &App, body: Body) -> Result<Map<String, Value>, ApiError> {
    let bytes = read_body(app, body).await?;
    if bytes.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad("request body must be a JSON object")),
        Err(_) => Err(ApiError::bad("request body is not valid JSON")),
    }
}

/// The scope a request names (a query parameter or a body field).
fn scope_of(run: &RunContext, given: Option<&Value>) -> Result<String, ApiError> {
    let given = match given {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(false)) => None,
        Some(other) => {
            // Not a name: never permitted (the original compares it as is).
            return Err(ApiError::new(
                403,
                format!(
                    "scope {} is not permitted for job {}; add it to stateAllowedScopes to allow \
                     this job to use it",
                    crate::pyfmt::py_repr(other),
                    crate::pyfmt::py_repr(&Value::String(run.job_name.clone()))
                ),
            ));
        }
    };
    run.scope(given.as_deref())
        .map_err(|message| ApiError::new(403, message))
}

/// A required string field (`what`: `key`, `name`, `token`).
fn required(value: Option<&Value>, what: &str) -> Result<String, ApiError> {
    match value {
        None | Some(Value::Null) => Err(ApiError::bad(format!("{what} is required"))),
        Some(Value::String(s)) if s.is_empty() => {
            Err(ApiError::bad(format!("{what} is required")))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::bad(format!("{what} must be a string"))),
    }
}

fn query_value(params: &HashMap<String, String>, key: &str) -> Option<Value> {
    params.get(key).map(|v| Value::String(v.clone()))
}

/// Runs blocking store work off this thread's event loop.
async fn blocking<T: Send + 'static>(
    path: &str,
    work: impl FnOnce() -> Result<T, JobStateError> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(|e| store_error(path, e)),
        Err(err) => {
            tracing::error!(
                target: "cronstable::jobapi",
                "state job API: internal error serving {path}: {err}"
            );
            Err(ApiError::new(
                500,
                "internal error; the reason is in the cronstable log",
            ))
        }
    }
}

/// Holds one in-flight permit for the request's life.
fn admit(app: &App) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    Arc::clone(&app.in_flight).try_acquire_owned().map_err(|_| {
        ApiError::new(
            503,
            "the state endpoint is busy (too many requests in flight); try again",
        )
    })
}

async fn run_info(State(app): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    ok(json!({
        "runId": run.run_id,
        "job": run.job_name,
        "attempt": run.attempt,
        "scheduledAt": run.scheduled_at,
        "host": run.host,
        "defaultScope": run.default_scope,
    }))
}

async fn kv_get(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let key = required(query_value(&params, "key").as_ref(), "key")?;
    let store = Arc::clone(&app.store);
    let (s, k) = (scope.clone(), key.clone());
    match blocking("/v1/kv/get", move || jobstate::kv_get(&store, &s, &k)).await? {
        Some((value, updated_at)) => ok(json!({ "value": value, "updatedAt": updated_at })),
        None => Err(ApiError::new(
            404,
            format!(
                "key {} is not set in scope {}",
                py_str(&key),
                py_str(&scope)
            ),
        )),
    }
}

fn py_str(s: &str) -> String {
    crate::pyfmt::py_repr(&Value::String(s.to_owned()))
}

async fn kv_set(State(app): Shared, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let mut payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let key = required(payload.get("key"), "key")?;
    let value = payload.remove("value").unwrap_or(Value::Null);
    let store = Arc::clone(&app.store);
    let max = app.settings.max_value_bytes;
    let updated_at = blocking("/v1/kv/set", move || {
        jobstate::kv_set(&store, &scope, &key, value, max)
    })
    .await?;
    ok(json!({ "ok": true, "updatedAt": updated_at }))
}

async fn kv_delete(
    State(app): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let key = required(payload.get("key"), "key")?;
    let store = Arc::clone(&app.store);
    let existed =
        blocking("/v1/kv/delete", move || jobstate::kv_delete(&store, &scope, &key)).await?;
    ok(json!({ "existed": existed }))
}

async fn kv_list(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let store = Arc::clone(&app.store);
    let s = scope.clone();
    let entries = blocking("/v1/kv/list", move || jobstate::kv_list(&store, &s)).await?;
    let keys: Vec<Value> = entries
        .into_iter()
        .map(|e| json!({ "key": e.key, "value": e.value, "updatedAt": e.updated_at }))
        .collect();
    ok(json!({ "scope": scope, "keys": keys }))
}

async fn cursor_get(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let name = required(query_value(&params, "name").as_ref(), "name")?;
    let store = Arc::clone(&app.store);
    let (s, n) = (scope.clone(), name.clone());
    match blocking("/v1/cursor/get", move || jobstate::cursor_get(&store, &s, &n)).await? {
        Some((value, updated_at)) => ok(json!({ "value": value, "updatedAt": updated_at })),
        None => Err(ApiError::new(
            404,
            format!(
                "cursor {} is not set in scope {}",
                py_str(&name),
                py_str(&scope)
            ),
        )),
    }
}

/// Python truthiness of a JSON value.
fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Bool(true)) => true,
    }
}

async fn cursor_advance(
    State(app): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let mut payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let name = required(payload.get("name"), "name")?;
    let Some(value) = payload.remove("value") else {
        return Err(ApiError::bad("value is required"));
    };
    let force = truthy(payload.get("force"));
    let store = Arc::clone(&app.store);
    let max = app.settings.max_value_bytes;
    let (value, advanced) = blocking("/v1/cursor/advance", move || {
        jobstate::cursor_advance(&store, &scope, &name, value, force, max)
    })
    .await?;
    ok(json!({ "value": value, "advanced": advanced }))
}

/// Python's `float(x or 0.0)` of a JSON value, for a `ttl`.
fn float_of(value: Option<&Value>) -> Result<f64, ()> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(0.0),
        Some(Value::Bool(true)) => Ok(1.0),
        Some(Value::Number(n)) => n.as_f64().ok_or(()),
        Some(Value::String(s)) if s.is_empty() => Ok(0.0),
        Some(Value::String(s)) => parse_py_float(s).ok_or(()),
        Some(Value::Array(a)) if a.is_empty() => Ok(0.0),
        Some(Value::Object(o)) if o.is_empty() => Ok(0.0),
        Some(_) => Err(()),
    }
}

/// Python's `float()` of a string: surrounding whitespace, `inf`, `nan`,
/// and `_` between digits.
fn parse_py_float(text: &str) -> Option<f64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        let negative = lower.starts_with('-');
        let v = if unsigned == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Some(if negative { -v } else { v });
    }
    if t.contains("__") || t.starts_with('_') || t.ends_with('_') {
        return None;
    }
    t.replace('_', "").parse::<f64>().ok()
}

async fn idem_claim(
    State(app): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let key = required(payload.get("key"), "key")?;
    let ttl = float_of(payload.get("ttl")).map_err(|()| ApiError::bad("ttl must be a number"))?;
    if !ttl.is_finite() {
        return Err(ApiError::bad("ttl must be a finite number"));
    }
    let store = Arc::clone(&app.store);
    let (fresh, claimed_at) = blocking("/v1/idempotency/claim", move || {
        jobstate::idempotency_claim(&store, &scope, &key, ttl)
    })
    .await?;
    ok(json!({ "fresh": fresh, "claimedAt": claimed_at }))
}

async fn idem_release(
    State(app): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let key = required(payload.get("key"), "key")?;
    let store = Arc::clone(&app.store);
    let released = blocking("/v1/idempotency/release", move || {
        jobstate::idempotency_release(&store, &scope, &key)
    })
    .await?;
    ok(json!({ "released": released }))
}

async fn artifact_put(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
    body: Body,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let name = required(query_value(&params, "name").as_ref(), "name")?;
    let data = read_body(&app, body).await?;
    let store = Arc::clone(&app.store);
    let max = app.settings.max_artifact_bytes;
    let (sha256, size) = blocking("/v1/artifact/put", move || {
        jobstate::artifact_put(&store, &scope, &name, &data, max)
    })
    .await?;
    ok(json!({ "sha256": sha256, "size": size }))
}

async fn artifact_get(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let name = required(query_value(&params, "name").as_ref(), "name")?;
    let store = Arc::clone(&app.store);
    let got = blocking("/v1/artifact/get", move || {
        jobstate::artifact_get(&store, &scope, &name)
    })
    .await?;
    let size = got.size.to_string();
    let mut response = Response::new(Body::from(got.data));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(sha) = HeaderValue::from_str(&got.sha256) {
        headers.insert("X-Cronstable-Sha256", sha);
    }
    if let Ok(size) = HeaderValue::from_str(&size) {
        headers.insert("X-Cronstable-Size", size);
    }
    Ok(response)
}

async fn artifact_list(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let store = Arc::clone(&app.store);
    let s = scope.clone();
    let entries = blocking("/v1/artifact/list", move || jobstate::artifact_list(&store, &s)).await?;
    let artifacts: Vec<Value> = entries
        .into_iter()
        .map(|a| json!({ "name": a.name, "sha256": a.sha256, "size": a.size, "at": a.at }))
        .collect();
    ok(json!({ "scope": scope, "artifacts": artifacts }))
}

/// Python's `int()` of a JSON value, for `permits`.
fn int_of(value: Option<&Value>) -> Option<i64> {
    match value {
        None => Some(1),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        Some(Value::Number(n)) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && f.abs() < 9.2e18)
                .map(|f| f.trunc() as i64)
        }),
        Some(Value::String(s)) => s.trim().replace('_', "").parse::<i64>().ok(),
        _ => None,
    }
}

async fn lock_acquire(
    State(app): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let token = token_of(&headers).unwrap_or_default();
    let payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let name = required(payload.get("name"), "name")?;
    let permits =
        int_of(payload.get("permits")).ok_or_else(|| ApiError::bad("permits must be an integer"))?;
    let ttl = match payload.get("ttl") {
        None | Some(Value::Null) => None,
        given => Some(float_of(given).map_err(|()| {
            ApiError::bad("ttl and blockSeconds must be numbers")
        })?),
    };
    let block = float_of(payload.get("blockSeconds"))
        .map_err(|()| ApiError::bad("ttl and blockSeconds must be numbers"))?;
    if ttl.is_some_and(|t| !t.is_finite()) {
        return Err(ApiError::bad("ttl must be a finite number"));
    }
    if !block.is_finite() {
        return Err(ApiError::bad("blockSeconds must be a finite number"));
    }
    if permits < 1 {
        return Err(ApiError::bad("permits must be >= 1"));
    }
    if permits > locks::MAX_PERMITS {
        return Err(ApiError::bad("permits must be <= 1024"));
    }
    let wait = truthy(payload.get("wait"))
        .then(|| std::time::Duration::from_secs_f64(block.clamp(0.0, 2_592_000.0)));
    let request = AcquireRequest {
        scope,
        name,
        permits,
        ttl: locks::effective_ttl(ttl, app.locks.default_ttl()),
        wait,
    };
    let registry = Arc::clone(&app.registry);
    let alive_token = token.clone();
    let acquired = app
        .locks
        .acquire(&token, request, move || {
            registry.lookup(&alive_token).is_some()
        })
        .await
        .map_err(|err| store_error("/v1/lock/acquire", JobStateError::from(err)))?;
    match acquired {
        Acquired::Held {
            token,
            slot,
            fence,
            ttl,
        } => ok(json!({
            "acquired": true,
            "token": token,
            "slot": slot,
            "fence": fence,
            "ttl": ttl,
        })),
        Acquired::NotAcquired => ok(json!({ "acquired": false })),
        Acquired::RunEnded => ok(json!({ "acquired": false, "runEnded": true })),
    }
}

async fn lock_release(
    State(app): Shared,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    authorize(&app, &headers)?;
    let token = token_of(&headers).unwrap_or_default();
    let payload = json_body(&app, body).await?;
    let hold = required(payload.get("token"), "token")?;
    let released = app.locks.release(&token, &hold).await;
    ok(json!({ "released": released }))
}

async fn secret_get(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let name = required(query_value(&params, "name").as_ref(), "name")?;
    match run.secrets.get(&name) {
        Some(value) => ok(json!({ "value": value })),
        None => Err(ApiError::new(
            404,
            format!("secret {} is not staged for this run", py_str(&name)),
        )),
    }
}

async fn secret_list(State(app): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let names: Vec<&String> = run.secrets.keys().collect();
    ok(json!({ "names": names }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_truthiness_and_numbers() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&json!(0))));
        assert!(!truthy(Some(&json!(""))));
        assert!(!truthy(Some(&json!([]))));
        assert!(truthy(Some(&json!("no"))));
        assert!(truthy(Some(&json!(0.5))));
        assert_eq!(float_of(Some(&json!("5"))), Ok(5.0));
        assert_eq!(float_of(Some(&json!(" 1_0.5 "))), Ok(10.5));
        assert_eq!(float_of(Some(&json!(true))), Ok(1.0));
        assert_eq!(float_of(None), Ok(0.0));
        assert!(float_of(Some(&json!("x"))).is_err());
        assert!(float_of(Some(&json!([1]))).is_err());
        assert!(float_of(Some(&json!("inf"))).is_ok_and(f64::is_infinite));
        assert_eq!(int_of(None), Some(1));
        assert_eq!(int_of(Some(&json!(2.9))), Some(2));
        assert_eq!(int_of(Some(&json!("3"))), Some(3));
        assert_eq!(int_of(Some(&json!(true))), Some(1));
        assert_eq!(int_of(Some(&json!(null))), None);
        assert_eq!(int_of(Some(&json!("x"))), None);
    }

    #[test]
    fn framework_errors_are_spaced_and_handler_errors_compact() {
        let spaced = ApiError::unauthorized().into_response();
        assert_eq!(spaced.status(), StatusCode::UNAUTHORIZED);
        let compact = ApiError::bad("key is required");
        assert!(!compact.spaced);
    }
}
