//! HTTP side of the fake: one handler that logs the request, honours the
//! outage switch, and routes Kubernetes REST paths to the store; watches are
//! chunked streams of JSON lines.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::select::{FieldSelector, LabelSelector};
use super::status::{self, bad_request, ApiError, Cause};
use super::store::{expired_status, filter_change, Feed, FieldValidation, ResourceType, Written};
use super::{RequestRecord, Shared};

/// The router: everything goes through [`handle`].
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

fn respond(code: u16, body: &Value, warnings: &[String]) -> Response {
    let mut resp = (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    for w in warnings {
        // RFC 7234 warning form the API server uses: 299 - "text".
        let text = format!("299 - {:?}", w);
        if let Ok(v) = header::HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

fn fail(e: &ApiError) -> Response {
    respond(e.code, &e.body(), &[])
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(kv), String::new()),
        })
        .collect()
}

/// Where a resource path points.
struct Route {
    rt: ResourceType,
    /// Namespace from the path; None for all-namespaces or cluster-scoped.
    ns: Option<String>,
    name: Option<String>,
    status: bool,
}

async fn handle(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or_default().to_string();
    {
        let mut store = shared.lock();
        store.record(RequestRecord {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            user_agent: headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        });
        if store.unavailable() {
            return fail(&status::unavailable());
        }
    }
    let params = parse_query(&query);
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    if let Some(refused) = refused(&shared, &method, &segs, &params) {
        return fail(&refused);
    }
    match segs.as_slice() {
        ["version"] => {
            return respond(
                200,
                &json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "platform": "linux/amd64"}),
                &[],
            )
        }
        ["api"] => {
            return respond(
                200,
                &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
                &[],
            )
        }
        ["apis"] => return respond(200, &discovery_groups(&shared), &[]),
        ["api", "v1"] => return respond(200, &discovery_resources(&shared, "", "v1"), &[]),
        ["apis", g, v] => {
            let list = discovery_resources(&shared, g, v);
            if list["resources"].as_array().is_some_and(|r| r.is_empty()) {
                return fail(&status::no_route(&path));
            }
            return respond(200, &list, &[]);
        }
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return fail(&status::no_route(&path)),
    };
    let route = {
        let store = shared.lock();
        let find = |plural: &str| store.find_type(group, version, plural);
        let r = match rest {
            ["namespaces", ns, plural, tail @ ..] => find(plural)
                .filter(|t| t.namespaced)
                .map(|rt| (rt, Some(ns.to_string()), tail)),
            [plural, tail @ ..] => find(plural).map(|rt| (rt, None, tail)),
            _ => None,
        };
        match r {
            Some((rt, ns, tail)) => {
                let (name, status) = match tail {
                    [] => (None, false),
                    [name] => (Some(name.to_string()), false),
                    [name, "status"] if rt.status_sub => (Some(name.to_string()), true),
                    _ => return fail(&status::no_route(&path)),
                };
                if rt.namespaced && ns.is_none() && name.is_some() {
                    return fail(&status::no_route(&path));
                }
                Route {
                    rt,
                    ns,
                    name,
                    status,
                }
            }
            None => return fail(&status::no_route(&path)),
        }
    };
    match dispatch(&shared, route, &method, &params, &headers, &body).await {
        Ok(resp) => resp,
        Err(e) => fail(&e),
    }
}

/// The 403 of a resource the test denied (`FakeApiServer::deny`), if any.
fn refused(
    shared: &Shared,
    method: &Method,
    segs: &[&str],
    params: &HashMap<String, String>,
) -> Option<ApiError> {
    let denials = shared.denials.lock().unwrap_or_else(|p| p.into_inner());
    super::deny::check(&denials, method.as_str(), segs, params)
}

fn field_validation(params: &HashMap<String, String>) -> Result<FieldValidation, ApiError> {
    match params.get("fieldValidation").map(String::as_str) {
        None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some(other) => Err(bad_request(format!(
            "fieldValidation parameter unsupported: {other}"
        ))),
    }
}

fn parse_body(body: &Bytes) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("error decoding request body: {e}")))
}

async fn dispatch(
    shared: &Arc<Shared>,
    route: Route,
    method: &Method,
    params: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let rt = &route.rt;
    let ns = route.ns.clone().unwrap_or_default();
    let fv = field_validation(params)?;
    // Writing for real on a dry run would be worse than refusing it.
    if params.get("dryRun").is_some_and(|d| !d.is_empty()) {
        return Err(bad_request(
            "dryRun is not implemented by the fake API server",
        ));
    }
    let written = |w: Written, code: u16| respond(code, &w.object, &w.warnings);
    match (route.name.as_deref(), method.as_str()) {
        (None, "GET") => {
            let labels = LabelSelector::parse(
                params
                    .get("labelSelector")
                    .map(String::as_str)
                    .unwrap_or(""),
            )?;
            let fields = FieldSelector::parse(
                params
                    .get("fieldSelector")
                    .map(String::as_str)
                    .unwrap_or(""),
                &rt.fields,
            )?;
            let scope = route.ns.as_deref();
            let watching = matches!(
                params.get("watch").map(String::as_str),
                Some("true") | Some("1")
            );
            if watching {
                return watch(
                    shared,
                    rt.clone(),
                    scope.map(str::to_string),
                    labels,
                    fields,
                    params,
                );
            }
            let rv = params
                .get("resourceVersion")
                .map(String::as_str)
                .unwrap_or("");
            let cont = params
                .get("continue")
                .map(String::as_str)
                .filter(|c| !c.is_empty());
            if cont.is_some() && !rv.is_empty() {
                return Err(bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            // A list from the watch cache (resourceVersion=0) ignores limit.
            let limit = if rv == "0" {
                None
            } else {
                params.get("limit").and_then(|l| l.parse().ok())
            };
            let list = shared
                .lock()
                .list(rt, scope, &labels, &fields, limit, cont)?;
            Ok(respond(200, &list, &[]))
        }
        (None, "POST") => {
            if rt.namespaced && route.ns.is_none() {
                return Err(status::method_not_allowed(format!(
                    "create is not supported on all-namespaces {}",
                    rt.plural
                )));
            }
            let obj = parse_body(body)?;
            let w = shared.lock().create(rt, &ns, obj, fv)?;
            Ok(written(w, 201))
        }
        (None, _) => Err(status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} {})",
            rt.plural
        ))),
        (Some(name), "GET") => Ok(respond(200, &shared.lock().get(rt, &ns, name)?, &[])),
        (Some(name), "PUT") => {
            let obj = parse_body(body)?;
            let w = shared.lock().update(rt, &ns, name, obj, route.status, fv)?;
            Ok(written(w, 200))
        }
        (Some(name), "PATCH") => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let apply = ct == "application/apply-patch+yaml";
            check_patch_options(params, apply)?;
            if apply {
                return server_side_apply(shared, &route, name, params, body, fv);
            }
            let mut store = shared.lock();
            let current = store.current(rt, &ns, name)?;
            let patched = apply_patch(rt, &ct, current, body)?;
            let w = store.update(rt, &ns, name, patched, route.status, fv)?;
            Ok(written(w, 200))
        }
        (Some(name), "DELETE") => {
            let options = if body.is_empty() {
                json!({})
            } else {
                parse_body(body)?
            };
            let out = shared.lock().delete(rt, &ns, name, &options)?;
            Ok(respond(200, &out, &[]))
        }
        (Some(_), _) => Err(status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method})"
        ))),
    }
}

/// The PatchOptions checks the real server makes before anything else: an
/// apply must name its field manager, and only an apply may force.
fn check_patch_options(params: &HashMap<String, String>, apply: bool) -> Result<(), ApiError> {
    let given = |key: &str| params.get(key).is_some_and(|v| !v.is_empty());
    let cause = if apply && !given("fieldManager") {
        Cause {
            reason: "FieldValueRequired",
            field: "fieldManager".into(),
            detail: "Required value: is required for apply patch".into(),
        }
    } else if !apply && given("force") {
        Cause {
            reason: "FieldValueForbidden",
            field: "force".into(),
            detail: "Forbidden: may not be specified for non-apply patch".into(),
        }
    } else {
        return Ok(());
    };
    let mut error = status::invalid("PatchOptions", "meta.k8s.io", "", &[cause]);
    // The real Status leaves the empty name out of its details.
    if let Some(details) = error.details.as_mut().and_then(Value::as_object_mut) {
        details.remove("name");
    }
    Err(error)
}

/// Server-side apply (`application/apply-patch+yaml`, `fieldManager` set),
/// on the status subresource only: the applied object's identity is
/// checked as the real server checks it, its `status` replaces the stored
/// one whole (the fake keeps no per-field ownership, so this is what a
/// forced apply by the only manager of status does), and the manager's
/// managedFields entry (operation Apply, subresource status) is recorded.
fn server_side_apply(
    shared: &Arc<Shared>,
    route: &Route,
    name: &str,
    params: &HashMap<String, String>,
    body: &Bytes,
    fv: FieldValidation,
) -> Result<Response, ApiError> {
    let rt = &route.rt;
    if !route.status {
        return Err(ApiError {
            code: 415,
            reason: "UnsupportedMediaType",
            message: "server-side apply is implemented by the fake API server on the status \
                      subresource only"
                .into(),
            details: None,
        });
    }
    // JSON is YAML, so one parser reads both.
    let applied: Value = serde_yaml::from_slice(body).map_err(|e| {
        bad_request(format!(
            "error decoding YAML: error converting YAML to JSON: {e}"
        ))
    })?;
    let Some(applied) = applied.as_object() else {
        return Err(bad_request(
            "error decoding YAML: the applied configuration is not an object",
        ));
    };
    let text = |key: &str| applied.get(key).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version != rt.api_version() || kind != rt.kind {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        return Err(bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    if let Some(named) = applied
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|n| *n != name)
    {
        return Err(bad_request(format!(
            "the name of the object ({named}) does not match the name on the URL ({name})"
        )));
    }
    let manager = params.get("fieldManager").cloned().unwrap_or_default();
    let entry = super::managed::apply_entry(
        &manager,
        &rt.api_version(),
        Some("status"),
        &applied
            .iter()
            .filter(|(k, _)| k.as_str() == "status")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        rt.schema.as_ref(),
    );
    let ns = route.ns.clone().unwrap_or_default();
    let written =
        shared
            .lock()
            .apply_status(rt, &ns, name, applied.get("status").cloned(), entry, fv)?;
    Ok(respond(200, &written.object, &written.warnings))
}

/// Apply a PATCH body to the stored object by its content type.
fn apply_patch(
    rt: &ResourceType,
    content_type: &str,
    mut current: Value,
    body: &Bytes,
) -> Result<Value, ApiError> {
    let mut accepted = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if rt.builtin {
        accepted.push("application/strategic-merge-patch+json");
    }
    match content_type {
        "application/merge-patch+json" => {
            let patch = parse_body(body)?;
            json_patch::merge(&mut current, &patch);
            Ok(current)
        }
        // Built-in kinds here (ConfigMap, Lease, Event, CRD) have no list
        // whose merge key matters to the tests, so a strategic merge is
        // a merge patch for them.
        "application/strategic-merge-patch+json" if rt.builtin => {
            let patch = parse_body(body)?;
            json_patch::merge(&mut current, &patch);
            Ok(current)
        }
        "application/json-patch+json" => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(&mut current, &patch).map_err(|e| ApiError {
                code: 422,
                reason: "Invalid",
                message: format!(
                    "the server rejected our request due to an error in our request: {e}"
                ),
                details: None,
            })?;
            Ok(current)
        }
        _ => Err(status::unsupported_media_type(&accepted)),
    }
}

/// State of one open watch stream.
struct WatchState {
    first: std::collections::VecDeque<Value>,
    rx: broadcast::Receiver<Feed>,
    rt: ResourceType,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    /// Highest resourceVersion this watch has passed, for bookmarks.
    rv: u64,
    bookmarks: Option<Duration>,
    deadline: Option<tokio::time::Instant>,
    done: bool,
    shared: Arc<Shared>,
}

fn line(v: &Value) -> Result<Bytes, std::convert::Infallible> {
    let mut s = v.to_string();
    s.push('\n');
    Ok(Bytes::from(s))
}

fn watch(
    shared: &Arc<Shared>,
    rt: ResourceType,
    ns: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    params: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let from = params.get("resourceVersion").map(String::as_str);
    let initial_events = params.get("sendInitialEvents").map(String::as_str) == Some("true");
    let allow_bookmarks = params.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok());
    let (first, rx, rv, interval) = {
        let store = shared.lock();
        let (first, rx, rv) =
            store.watch(&rt, ns.as_deref(), &labels, &fields, from, initial_events)?;
        (first, rx, rv, store.settings().bookmark_interval)
    };
    // The initial-events-end bookmark is only sent to clients that asked
    // for bookmarks, as the real server requires.
    let first: std::collections::VecDeque<Value> = first
        .into_iter()
        .filter(|e| allow_bookmarks || e["type"] != "BOOKMARK")
        .collect();
    let ended_by_error = first.iter().any(|e| e["type"] == "ERROR");
    let state = WatchState {
        first,
        rx,
        rt,
        ns,
        labels,
        fields,
        rv,
        bookmarks: allow_bookmarks.then_some(interval),
        deadline: timeout.map(|t| tokio::time::Instant::now() + Duration::from_secs(t)),
        done: false,
        shared: shared.clone(),
    };
    let mut state = state;
    if ended_by_error {
        state.done = true;
    }
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        if let Some(ev) = st.first.pop_front() {
            return Some((line(&ev), st));
        }
        if st.done {
            return None;
        }
        loop {
            let bookmark = async {
                match st.bookmarks {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let deadline = async {
                match st.deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                feed = st.rx.recv() => match feed {
                    Ok(Feed::Change(c)) => {
                        st.rv = st.rv.max(c.rv);
                        if let Some(ev) = filter_change(&st.rt, st.ns.as_deref(), &st.labels, &st.fields, &c) {
                            return Some((line(&ev), st));
                        }
                    }
                    Ok(Feed::Expired) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        st.done = true;
                        let ev = json!({"type": "ERROR", "object": expired_status("The resourceVersion for the provided watch is too old.")});
                        return Some((line(&ev), st));
                    }
                    Ok(Feed::Cut) | Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = bookmark => {
                    let rv = st.shared.lock().rv().max(st.rv);
                    let ev = json!({"type": "BOOKMARK", "object": {"kind": st.rt.kind, "apiVersion": st.rt.api_version(), "metadata": {"resourceVersion": rv.to_string()}}});
                    return Some((line(&ev), st));
                }
                _ = deadline => return None,
            }
        }
    });
    Ok(Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| fail(&status::internal("could not build the watch response"))))
}

fn discovery_groups(shared: &Arc<Shared>) -> Value {
    let store = shared.lock();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for t in store.types().iter().filter(|t| !t.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == t.group) {
            Some((_, vs)) if !vs.contains(&t.version) => vs.push(t.version.clone()),
            Some(_) => {}
            None => groups.push((t.group.clone(), vec![t.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn discovery_resources(shared: &Arc<Shared>, group: &str, version: &str) -> Value {
    let store = shared.lock();
    let mut resources = Vec::new();
    for t in store
        .types()
        .iter()
        .filter(|t| t.group == group && t.version == version)
    {
        resources.push(json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind,
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        }));
        if t.status_sub {
            resources.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": ["get", "patch", "update"]}));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}
