//! The Kubernetes mode's routes. `GET /kube`: its state (watch health,
//! sets, status writes). `GET /kube/sets`: every CronJobSet it selected,
//! as the source last concluded (accepted or refused with the loader's
//! message, suspended, the generation running, the jobs it put in the
//! table), each with the Events this scheduler raised on it; the
//! dashboard's CronJobSet card reads it and joins the jobs with
//! `GET /jobs` for the last and next schedule. Without `--kube` both
//! answer `{"enabled": false}`.

use super::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// `GET /kube`: the Kubernetes mode's state, or `{"enabled": false}`
/// without `--kube` (the shape of `GET /cluster` without a cluster).
pub(super) async fn state(State(state): State<AppState>) -> Response {
    let body = match &state.published.kube {
        Some(kube) => kube.snapshot().to_json(),
        None => json!({"enabled": false}),
    };
    Json(body).into_response()
}

/// `GET /kube/sets`.
pub(super) async fn sets(State(state): State<AppState>) -> Response {
    let Some(kube) = &state.published.kube else {
        return Json(json!({"enabled": false})).into_response();
    };
    let views = kube.set_views();
    let events = kube.events();
    let on = |namespace: &str, name: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e.kind == "CronJobSet" && e.namespace == namespace && e.name == name)
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect()
    };
    let sets: Vec<Value> = views
        .iter()
        .filter_map(|set| {
            let mut value = serde_json::to_value(set).ok()?;
            value["events"] = Value::from(on(&set.namespace, &set.name));
            Some(value)
        })
        .collect();
    // Events about the ConfigMap and this scheduler's pod.
    let other: Vec<Value> = events
        .iter()
        .filter(|e| e.kind != "CronJobSet")
        .filter_map(|e| serde_json::to_value(e).ok())
        .collect();
    Json(json!({"enabled": true, "sets": sets, "events": other})).into_response()
}
