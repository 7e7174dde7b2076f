//! The resource pool routes: `GET /pools` (every configured pool with its
//! entries, the original's body) and
//! `POST /pools/{name}/queue/{key}/cancel` (cancel waiting work), plus
//! the `202` a manual start of a pooled job answers. The store is read
//! on the scheduler's pool port, awaited here; while it cannot be read
//! or written these answer `503` with `pool state is unavailable`, and a
//! refusal of the pool itself is `409` with the pool's own message.

use super::{AppState, ControlResult};
use crate::scheduler::control::QueuedStart;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// `GET /pools`.
pub(super) async fn list(State(state): State<AppState>) -> ControlResult {
    let pools = state.control.pools().await?;
    Ok(Json(pools).into_response())
}

/// `POST /pools/{name}/queue/{key}/cancel`: `{"id", "state"}` of the
/// entry.
pub(super) async fn cancel(
    State(state): State<AppState>,
    Path((name, key)): Path<(String, String)>,
) -> ControlResult {
    let entry = state.control.pool_cancel(&name, &key).await?;
    Ok(Json(json!({"id": entry.id, "state": entry.state.as_str()})).into_response())
}

/// The answer to a manual start of a pooled job: `202` with the job's
/// name as `queued`, the entry's `queueId` and the `pool`.
pub(super) fn queued_start(name: &str, queued: &QueuedStart) -> Response {
    (
        StatusCode::ACCEPTED,
        Json(json!({"queued": name, "queueId": queued.queue_id, "pool": queued.pool})),
    )
        .into_response()
}
