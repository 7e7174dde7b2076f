//! The `/v1/*` routes of the job endpoint, in the original's wire format:
//! every call authenticates with its run's bearer token, names a scope the
//! run may use, and gets JSON back (`{"error": "..."}` on failure, with
//! the original's texts and statuses). Store work runs on the blocking
//! pool of this endpoint's own thread, never on the scheduler's.

use super::locks::{self, AcquireRequest, Acquired, LockManager};
use super::registry::{bearer, Registry, RunContext};
use crate::config::job_api::JobApiSettings;
use crate::pyjson::{self, Dumps, PyDict, PyJson, PyString};
use crate::state::jobstate::{self, JobStateError};
use crate::state::store::Store;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
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

    /// The body the original writes for this error.
    fn body(&self) -> String {
        let style = if self.spaced {
            Dumps::SPACED
        } else {
            Dumps::COMPACT
        };
        PyJson::object([("error", PyJson::from(self.message.as_str()))]).dumps(style)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
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

/// The text of a success body: compact, as the original's encoder writes
/// it; a body echoing a stored value the fleet encoders disagree on (a
/// foreign node's NaN, a huge integer) falls back to Python's spaced
/// `json.dumps`, as the original does, rather than failing.
fn success_text(value: &PyJson) -> String {
    if jobstate::rules::portability_error(value).is_some() {
        value.dumps(Dumps::SPACED)
    } else {
        value.dumps(Dumps::COMPACT)
    }
}

fn ok<K: Into<PyString>>(
    fields: impl IntoIterator<Item = (K, PyJson)>,
) -> Result<Response, ApiError> {
    let value = PyJson::object(fields);
    Ok(json_response(
        StatusCode::OK,
        success_text(&value).into_bytes(),
    ))
}

fn store_error(path: &str, err: JobStateError) -> ApiError {
    if let Some(detail) = err.log_detail() {
        if err.status() == 503 {
            tracing::warn!(
                target: "cronstable::jobapi",
                "state job API: backend error serving {path}: {detail}"
            );
        } else {
            tracing::error!(
                target: "cronstable::jobapi",
                "state job API: internal error serving {path}: {detail}"
            );
        }
    }
    ApiError::new(err.status(), err.message())
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
    token_of(headers)
        .and_then(|token| app.registry.lookup(&token))
        .ok_or_else(ApiError::unauthorized)
}

fn token_of(headers: &HeaderMap) -> Option<String> {
    bearer(
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
    )
    .map(str::to_owned)
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

/// A JSON object body, read as Python's `json.loads` reads it (an empty
/// body is an empty object).
async fn json_body(app: &App, body: Body) -> Result<PyDict, ApiError> {
    let bytes = read_body(app, body).await?;
    if bytes.is_empty() {
        return Ok(PyDict::new());
    }
    let parsed = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| pyjson::loads(text).ok());
    match parsed {
        Some(PyJson::Dict(dict)) => Ok(dict),
        Some(_) => Err(ApiError::bad("request body must be a JSON object")),
        None => Err(ApiError::bad("request body is not valid JSON")),
    }
}

/// The scope a request names (a query parameter or a body field): none,
/// or a falsy one, is the run's default; a name must be the run's own,
/// `global` or one of its `stateAllowedScopes`; anything else (a number,
/// a text no job is named) is the original's 403.
fn scope_of(run: &RunContext, given: Option<&PyJson>) -> Result<String, ApiError> {
    let given = given.filter(|value| value.is_truthy());
    let text = match given {
        None => None,
        Some(PyJson::Str(s)) if s.as_str().is_some() => s.as_str(),
        Some(other) => {
            return Err(ApiError::new(
                403,
                format!(
                    "scope {} is not permitted for job {}; add it to stateAllowedScopes to allow \
                     this job to use it",
                    other.repr(),
                    PyString::new(&run.job_name).repr()
                ),
            ));
        }
    };
    run.scope(text)
        .map_err(|message| ApiError::new(403, message))
}

/// A required string field (`what`: `key`, `name`, `token`): a value of
/// another type is 400 `{what} must be a string`, none or an empty one
/// 400 `{what} is required`.
fn required(value: Option<&PyJson>, what: &str) -> Result<PyString, ApiError> {
    match value {
        None | Some(PyJson::Null) => Err(ApiError::bad(format!("{what} is required"))),
        Some(PyJson::Str(s)) if s.is_empty() => Err(ApiError::bad(format!("{what} is required"))),
        Some(PyJson::Str(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::bad(format!("{what} must be a string"))),
    }
}

fn query_value(params: &HashMap<String, String>, key: &str) -> Option<PyJson> {
    params.get(key).map(|v| PyJson::from(v.as_str()))
}

/// Runs store work for `path` on the blocking pool, off this thread's
/// event loop; a store error becomes the route's error answer.
async fn on_store<T: Send + 'static>(
    app: &App,
    path: &str,
    work: impl FnOnce(&Store) -> Result<T, JobStateError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = Arc::clone(&app.store);
    match tokio::task::spawn_blocking(move || work(&store)).await {
        Ok(result) => result.map_err(|e| store_error(path, e)),
        Err(err) => Err(store_error(
            path,
            JobStateError::Internal(format!("the store task failed: {err}")),
        )),
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

fn text(s: &str) -> PyJson {
    PyJson::from(s)
}

async fn run_info(State(app): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    ok([
        ("runId", text(&run.run_id)),
        ("job", text(&run.job_name)),
        ("attempt", PyJson::Int(i128::from(run.attempt))),
        (
            "scheduledAt",
            run.scheduled_at.as_deref().map_or(PyJson::Null, text),
        ),
        ("host", text(&run.host)),
        ("defaultScope", text(&run.default_scope)),
    ])
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
    let stored = on_store(&app, "/v1/kv/get", move |store| {
        jobstate::kv_get(store, &scope, &key)
    })
    .await?;
    ok([("value", stored.value), ("updatedAt", stored.updated_at)])
}

async fn kv_set(State(app): Shared, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let mut payload = json_body(&app, body).await?;
    let scope = scope_of(&run, payload.get("scope"))?;
    let key = required(payload.get("key"), "key")?;
    let value = payload.remove("value").unwrap_or(PyJson::Null);
    let max = app.settings.max_value_bytes;
    let updated_at = on_store(&app, "/v1/kv/set", move |store| {
        jobstate::kv_set(store, &scope, &key, &value, max)
    })
    .await?;
    ok([
        ("ok", PyJson::Bool(true)),
        ("updatedAt", PyJson::Float(updated_at)),
    ])
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
    let existed = on_store(&app, "/v1/kv/delete", move |store| {
        jobstate::kv_delete(store, &scope, &key)
    })
    .await?;
    ok([("existed", PyJson::Bool(existed))])
}

async fn kv_list(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let _permit = admit(&app)?;
    let scope = scope_of(&run, query_value(&params, "scope").as_ref())?;
    let s = scope.clone();
    let entries = on_store(&app, "/v1/kv/list", move |store| {
        jobstate::kv_list(store, &s)
    })
    .await?;
    let keys = entries
        .into_iter()
        .map(|e| {
            PyJson::object([
                ("key", e.key),
                ("value", e.value),
                ("updatedAt", e.updated_at),
            ])
        })
        .collect();
    ok([("scope", text(&scope)), ("keys", PyJson::List(keys))])
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
    let stored = on_store(&app, "/v1/cursor/get", move |store| {
        jobstate::cursor_get(store, &scope, &name)
    })
    .await?;
    ok([("value", stored.value), ("updatedAt", stored.updated_at)])
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
    let force = payload.get("force").is_some_and(PyJson::is_truthy);
    let max = app.settings.max_value_bytes;
    let (value, advanced) = on_store(&app, "/v1/cursor/advance", move |store| {
        jobstate::cursor_advance(store, &scope, &name, &value, force, max)
    })
    .await?;
    ok([("value", value), ("advanced", PyJson::Bool(advanced))])
}

/// Python's `float(x or 0.0)` of an optional field.
fn float_or_zero(value: Option<&PyJson>) -> Result<f64, ()> {
    match value.filter(|v| v.is_truthy()) {
        None => Ok(0.0),
        Some(v) => v.to_py_float().map_err(|_| ()),
    }
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
    let ttl =
        float_or_zero(payload.get("ttl")).map_err(|()| ApiError::bad("ttl must be a number"))?;
    if !ttl.is_finite() {
        return Err(ApiError::bad("ttl must be a finite number"));
    }
    let claim = on_store(&app, "/v1/idempotency/claim", move |store| {
        jobstate::idempotency_claim(store, &scope, &key, ttl)
    })
    .await?;
    ok([
        ("fresh", PyJson::Bool(claim.fresh)),
        ("claimedAt", claim.claimed_at),
    ])
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
    let released = on_store(&app, "/v1/idempotency/release", move |store| {
        jobstate::idempotency_release(store, &scope, &key)
    })
    .await?;
    ok([("released", PyJson::Bool(released))])
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
    let max = app.settings.max_artifact_bytes;
    let published = on_store(&app, "/v1/artifact/put", move |store| {
        jobstate::artifact_put(store, &scope, &name, &data, max)
    })
    .await?;
    ok([
        ("sha256", text(&published.sha256)),
        ("size", PyJson::Int(i128::from(published.size))),
    ])
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
    let got = on_store(&app, "/v1/artifact/get", move |store| {
        jobstate::artifact_get(store, &scope, &name)
    })
    .await?;
    let mut response = Response::new(Body::from(got.data));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(sha) = HeaderValue::from_str(&got.sha256) {
        headers.insert("X-Cronstable-Sha256", sha);
    }
    if let Ok(size) = HeaderValue::from_str(&got.size) {
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
    let s = scope.clone();
    let entries = on_store(&app, "/v1/artifact/list", move |store| {
        jobstate::artifact_list(store, &s)
    })
    .await?;
    let artifacts = entries
        .into_iter()
        .map(|a| {
            PyJson::object([
                ("name", text(&a.name)),
                ("sha256", a.sha256),
                ("size", a.size),
                ("at", a.at),
            ])
        })
        .collect();
    ok([
        ("scope", text(&scope)),
        ("artifacts", PyJson::List(artifacts)),
    ])
}

/// The checked fields of a lock acquire, in the original's order of
/// checks (permits, then the numbers, then their finiteness, then the
/// permit bounds).
fn acquire_fields(payload: &PyDict) -> Result<(u32, Option<f64>, f64), ApiError> {
    let permits = match payload.get("permits") {
        None => 1,
        Some(given) => given
            .to_py_int()
            .map_err(|_| ApiError::bad("permits must be an integer"))?,
    };
    let numbers = || ApiError::bad("ttl and blockSeconds must be numbers");
    let ttl = match payload.get("ttl") {
        None | Some(PyJson::Null) => None,
        Some(given) => Some(given.to_py_float().map_err(|_| numbers())?),
    };
    let block = float_or_zero(payload.get("blockSeconds")).map_err(|()| numbers())?;
    if ttl.is_some_and(|t| !t.is_finite()) {
        return Err(ApiError::bad("ttl must be a finite number"));
    }
    if !block.is_finite() {
        return Err(ApiError::bad("blockSeconds must be a finite number"));
    }
    if permits < 1 {
        return Err(ApiError::bad("permits must be >= 1"));
    }
    if permits > i128::from(locks::MAX_PERMITS) {
        return Err(ApiError::bad(format!(
            "permits must be <= {}",
            locks::MAX_PERMITS
        )));
    }
    // In range: 1..=1024.
    Ok((permits as u32, ttl, block))
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
    let (permits, ttl, block) = acquire_fields(&payload)?;
    let wait = payload
        .get("wait")
        .is_some_and(PyJson::is_truthy)
        .then(|| std::time::Duration::from_secs_f64(block.clamp(0.0, locks::TTL_BOUNDS.1)));
    let request = AcquireRequest {
        scope,
        // A name with a lone surrogate has no UTF-8 form: its lossy text
        // names the lease (a coarser lock, never a looser one).
        name: name.to_string_lossy(),
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
        } => ok([
            ("acquired", PyJson::Bool(true)),
            ("token", text(&token)),
            ("slot", PyJson::Int(i128::from(slot))),
            ("fence", PyJson::Int(i128::from(fence))),
            ("ttl", PyJson::Float(ttl)),
        ]),
        Acquired::NotAcquired => ok([("acquired", PyJson::Bool(false))]),
        Acquired::RunEnded => ok([
            ("acquired", PyJson::Bool(false)),
            ("runEnded", PyJson::Bool(true)),
        ]),
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
    let released = app.locks.release(&token, &hold.to_string_lossy()).await;
    ok([("released", PyJson::Bool(released))])
}

async fn secret_get(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let name = required(query_value(&params, "name").as_ref(), "name")?;
    match run.secrets.get(&name.to_string_lossy()) {
        Some(value) => ok([("value", text(value))]),
        None => Err(ApiError::new(
            404,
            format!("secret {} is not staged for this run", name.repr()),
        )),
    }
}

async fn secret_list(State(app): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    let run = authorize(&app, &headers)?;
    let names = run.secrets.keys().map(|n| text(n)).collect();
    ok([("names", PyJson::List(names))])
}

#[cfg(test)]
mod tests {
    use super::super::registry::tests::run;
    use super::*;

    fn dict(text: &str) -> PyDict {
        match pyjson::loads(text) {
            Ok(PyJson::Dict(d)) => d,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn scopes_resolve_as_the_original_resolves_them() {
        let run = run();
        let d = dict(
            r#"{"a": null, "b": "", "c": 0, "d": "global", "e": "shared", "f": 5, "g": "other", "h": "\ud800"}"#,
        );
        assert_eq!(scope_of(&run, None), Ok("backup".into()));
        for falsy in ["a", "b", "c"] {
            assert_eq!(scope_of(&run, d.get(falsy)), Ok("backup".into()), "{falsy}");
        }
        assert_eq!(scope_of(&run, d.get("d")), Ok("global".into()));
        assert_eq!(scope_of(&run, d.get("e")), Ok("shared".into()));
        let refused = |key: &str| scope_of(&run, d.get(key)).unwrap_err();
        assert_eq!(refused("f").status, StatusCode::FORBIDDEN);
        assert_eq!(
            refused("f").message,
            "scope 5 is not permitted for job 'backup'; add it to stateAllowedScopes to allow \
             this job to use it"
        );
        assert!(refused("g")
            .message
            .starts_with("scope 'other' is not permitted"));
        assert!(refused("h")
            .message
            .starts_with("scope '\\ud800' is not permitted"));
    }

    #[test]
    fn required_fields_name_what_is_wrong() {
        let d = dict(r#"{"a": null, "b": "", "c": 0, "d": [], "e": "k"}"#);
        let message = |key: &str| required(d.get(key), "key").unwrap_err().message;
        assert_eq!(message("a"), "key is required");
        assert_eq!(message("b"), "key is required");
        assert_eq!(message("missing"), "key is required");
        assert_eq!(message("c"), "key must be a string");
        assert_eq!(message("d"), "key must be a string");
        assert_eq!(required(d.get("e"), "key"), Ok(PyString::new("k")));
    }

    #[test]
    fn lock_fields_are_checked_in_the_originals_order() {
        let fields = |text: &str| acquire_fields(&dict(text));
        assert_eq!(fields("{}"), Ok((1, None, 0.0)));
        assert_eq!(
            fields(r#"{"permits": "3", "ttl": "60", "blockSeconds": 2}"#),
            Ok((3, Some(60.0), 2.0))
        );
        assert_eq!(
            fields(r#"{"permits": 2.9, "ttl": true}"#),
            Ok((2, Some(1.0), 0.0))
        );
        let message = |text: &str| fields(text).unwrap_err().message;
        assert_eq!(
            message(r#"{"permits": null}"#),
            "permits must be an integer"
        );
        assert_eq!(message(r#"{"permits": "x"}"#), "permits must be an integer");
        assert_eq!(
            message(r#"{"permits": Infinity}"#),
            "permits must be an integer"
        );
        assert_eq!(
            message(r#"{"ttl": "x"}"#),
            "ttl and blockSeconds must be numbers"
        );
        assert_eq!(
            message(r#"{"blockSeconds": [1]}"#),
            "ttl and blockSeconds must be numbers"
        );
        assert_eq!(message(r#"{"ttl": NaN}"#), "ttl must be a finite number");
        assert_eq!(
            message(r#"{"blockSeconds": "inf"}"#),
            "blockSeconds must be a finite number"
        );
        assert_eq!(message(r#"{"permits": 0}"#), "permits must be >= 1");
        assert_eq!(message(r#"{"permits": 1025}"#), "permits must be <= 1024");
        // The type check comes before the bounds: a bad ttl wins over 0 permits.
        assert_eq!(
            message(r#"{"permits": 0, "ttl": "x"}"#),
            "ttl and blockSeconds must be numbers"
        );
    }

    #[test]
    fn a_ttl_is_pythons_float_of_the_value_or_zero() {
        let d =
            dict(r#"{"a": "5", "b": true, "c": "", "d": [], "e": "x", "f": [1], "g": " 1_0.5 "}"#);
        assert_eq!(float_or_zero(d.get("a")), Ok(5.0));
        assert_eq!(float_or_zero(d.get("b")), Ok(1.0));
        assert_eq!(float_or_zero(d.get("c")), Ok(0.0));
        assert_eq!(float_or_zero(d.get("d")), Ok(0.0));
        assert_eq!(float_or_zero(None), Ok(0.0));
        assert_eq!(float_or_zero(d.get("e")), Err(()));
        assert_eq!(float_or_zero(d.get("f")), Err(()));
        assert_eq!(float_or_zero(d.get("g")), Ok(10.5));
    }

    #[test]
    fn framework_errors_are_spaced_and_handler_errors_compact() {
        assert_eq!(
            ApiError::unauthorized().body(),
            r#"{"error": "401: Unauthorized"}"#
        );
        assert_eq!(
            ApiError::bad("key is required").body(),
            r#"{"error":"key is required"}"#
        );
        assert_eq!(
            ApiError::bad("caf\u{e9}").body(),
            r#"{"error":"caf\u00e9"}"#
        );
    }

    #[test]
    fn success_bodies_fall_back_to_spaced_when_a_value_is_not_portable() {
        let fine = PyJson::object([("value", PyJson::Int(1)), ("updatedAt", PyJson::Float(2.5))]);
        assert_eq!(success_text(&fine), r#"{"value":1,"updatedAt":2.5}"#);
        let nan = PyJson::object([("value", PyJson::Float(f64::NAN))]);
        assert_eq!(success_text(&nan), r#"{"value": NaN}"#);
    }
}
