//! `GET /jobs/{name}/resources`: the chart-grade CPU and memory series of
//! a resource-monitored job, fetched when a chart is opened (never on the
//! poll loop, which carries the summary numbers only).

use super::{request, ApiResult, AppState};
use crate::job::RunRecord;
use axum::extract::{Path, Query, State};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;

/// `GET /jobs/{name}/resources`: the chart series of the job's running
/// monitored instances (`live`, with their current readings) and of its
/// newest monitored or capped finished runs (`runs`, in the ledger's
/// record shape, at most `limit`, default 20; `runs` is the older
/// spelling), and the job's caps (`limits`, null without any).
pub(super) async fn job_resources(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult {
    let (config, running) = state.control.running(&name).await?;
    let history = state.control.runs(&name).await?;
    use crate::scheduler::history::RUN_HISTORY_LIMIT;
    let limit = request::clamped(&query, &["limit", "runs"], 20, 0, RUN_HISTORY_LIMIT);
    let live: Vec<Value> = running
        .iter()
        .filter_map(|run| {
            let monitor = run.monitor()?;
            let (current, series) = (monitor.live(), monitor.series());
            if current.is_none() && series.is_none() {
                return None; // not sampled yet
            }
            Some(json!({
                "started_at": crate::state::format::py_isoformat(run.started_at),
                "pid": run.pid(),
                "current": current.map(|c| c.to_json()),
                "series": series.unwrap_or_default().into_iter().map(|p| p.to_json()).collect::<Vec<_>>(),
            }))
        })
        .collect();
    // Capped runs count too, monitored or not, so their limits show.
    let monitored: Vec<&RunRecord> = history
        .iter()
        .filter(|r| r.resources.is_some() || r.limits.is_some())
        .collect();
    let runs: Vec<Value> = monitored[monitored.len().saturating_sub(limit)..]
        .iter()
        .map(|r| crate::state::records::run_data(r))
        .collect();
    Ok(Json(json!({
        "name": config.name,
        "monitored": config.monitor.is_some(),
        "interval": config.monitor.map_or(crate::config::job::MONITOR_DEFAULT_INTERVAL, |m| m.interval),
        "limits": config.resource_limits.as_ref().map(|caps| caps.payload()),
        "live": live,
        "runs": runs,
    }))
    .into_response())
}
