//! What each tool does: read its arguments, ask the [`Backend`], and
//! shape the result (a one-line summary for the model, then the data as
//! `structuredContent` and again as JSON text for clients that pass only
//! `content` on). A bad argument or a refused request is a result with
//! `isError: true`, which the model can read and correct, never a
//! JSON-RPC error.

use super::catalog::Tool;
use super::{Backend, Caller, JobQuery, JobState, Refusal, Server};
use chrono::Utc;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// A tool's arguments.
pub(super) type Args = Map<String, Value>;

/// A tool that could not do what was asked: the text the model reads.
#[derive(Debug)]
pub(super) struct ToolError(pub String);

impl From<Refusal> for ToolError {
    fn from(refusal: Refusal) -> Self {
        ToolError(refusal.message)
    }
}

type Outcome = Result<Value, ToolError>;

/// A successful result: the summary, then the data.
pub(super) fn result(structured: Value, summary: String) -> Value {
    let text = structured.to_string();
    json!({
        "content": [
            {"type": "text", "text": summary},
            {"type": "text", "text": text},
        ],
        "structuredContent": structured,
    })
}

/// A failed result the model can read.
pub(super) fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

fn quoted(text: &str) -> String {
    format!("'{text}'")
}

/// A required, non-empty string argument.
pub(super) fn req_str<'a>(args: &'a Args, key: &str) -> Result<&'a str, ToolError> {
    match args.get(key) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text),
        _ => Err(ToolError(format!(
            "the argument {} is required and must be a non-empty string",
            quoted(key)
        ))),
    }
}

/// An optional string argument (null and absent are none).
fn opt_str<'a>(args: &'a Args, key: &str, what: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text).filter(|t| !t.is_empty()).map(|t| t.as_str())),
        Some(_) => Err(ToolError(format!("{} must be {what}", quoted(key)))),
    }
}

/// An integer argument read leniently: a number (a fraction is cut) or a
/// decimal string; anything else (null, a boolean, text) is none, and
/// the caller applies its default.
pub(super) fn opt_int(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64)),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// `confirm: true` (exactly the boolean) or the refusal naming the act.
fn require_confirm(args: &Args, act: &str) -> Result<(), ToolError> {
    if args.get("confirm") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    Err(ToolError(format!(
        "{act} changes the scheduler's state: call the tool again with confirm=true to go \
         ahead"
    )))
}

impl Server {
    /// A list tool's `limit`: the default and the ceiling are `maxRows`.
    pub(super) fn clamp_limit(&self, requested: Option<&Value>) -> usize {
        let max = self.settings.max_rows;
        match opt_int(requested) {
            None => max,
            Some(n) => n.clamp(1, max as i64) as usize,
        }
    }

    /// The `page` block of a paged answer.
    fn page_meta(offset: usize, limit: usize, total: usize, returned: usize) -> Value {
        let next = offset + returned;
        json!({
            "offset": offset,
            "limit": limit,
            "total": total,
            "returned": returned,
            "nextOffset": if next < total { Some(next) } else { None },
        })
    }

    /// Runs `tool` with `args` for `caller`: the result object of
    /// `tools/call`.
    pub(super) async fn run_tool<B: Backend>(
        &self,
        tool: &Tool,
        args: &Args,
        caller: &Caller,
        backend: &B,
    ) -> Value {
        match self.dispatch(tool, args, caller, backend).await {
            Ok(value) => value,
            Err(ToolError(message)) => tool_error(&message),
        }
    }

    async fn dispatch<B: Backend>(
        &self,
        tool: &Tool,
        args: &Args,
        caller: &Caller,
        backend: &B,
    ) -> Outcome {
        match tool.name {
            "cron_get_status" => self.status(args, backend).await,
            "cron_list_jobs" => self.list_jobs(args, backend).await,
            "cron_get_job" => {
                let name = req_str(args, "name")?;
                let job = backend.job(name).await.map_err(|r| unknown_job(name, r))?;
                Ok(result(job, format!("job {}", quoted(name))))
            }
            "cron_list_runs" => self.list_runs(args, backend).await,
            "cron_get_job_trends" => {
                let name = req_str(args, "name")?;
                let trends = backend
                    .trends(name)
                    .await
                    .map_err(|r| unknown_job(name, r))?;
                Ok(result(
                    trends,
                    format!("run trends of job {}", quoted(name)),
                ))
            }
            "cron_get_job_resources" => {
                let name = req_str(args, "name")?;
                let runs = self.clamp_limit(args.get("runs"));
                let body = backend
                    .resources(name, runs)
                    .await
                    .map_err(|r| unknown_job(name, r))?;
                Ok(result(
                    body,
                    format!("resource use of job {}", quoted(name)),
                ))
            }
            "cron_get_cluster" => {
                let body = backend.cluster().await?;
                let summary = format!("cluster enabled: {}", body["enabled"]);
                Ok(result(body, summary))
            }
            "cron_get_fleet" => {
                let body = backend.fleet().await?;
                let summary = format!("fleet enabled: {}", body["enabled"]);
                Ok(result(body, summary))
            }
            "cron_get_node" => {
                let history = args.get("history") == Some(&Value::Bool(true));
                let body = backend.node(history).await?;
                let summary = format!("node {}", body["node_name"].as_str().unwrap_or("?"));
                Ok(result(body, summary))
            }
            "cron_query_metrics" => self.metrics(args, backend).await,
            "cron_get_version" => {
                let (job_set_id, jobs) = backend.job_set().await?;
                let version = env!("CARGO_PKG_VERSION");
                Ok(result(
                    json!({"version": version, "job_set_id": job_set_id, "jobs": jobs}),
                    format!("cronstable {version}, {jobs} job(s)"),
                ))
            }
            "cron_tail_job_logs" => self.tail(args, backend).await,
            "cron_validate_schedule" => self.preview(args, Some(1)),
            "cron_explain_schedule" => {
                let count = opt_int(args.get("count")).map_or(5, |n| n.clamp(1, 60));
                self.preview(args, Some(count as usize))
            }
            "cron_why_no_run" => {
                let name = req_str(args, "name")?;
                let at = req_str(args, "at")?;
                let report = backend.why(name, at).await.map_err(|r| {
                    if r.status == 404 {
                        ToolError(format!(
                            "there is no job named {}: cron_list_jobs lists them",
                            quoted(name)
                        ))
                    } else {
                        ToolError(r.message)
                    }
                })?;
                let summary = why_summary(&report);
                Ok(result(report, summary))
            }
            "cron_schedule_pressure" => {
                let hours = opt_int(args.get("hours")).unwrap_or(24);
                let tz = opt_str(args, "tz", "an IANA time zone name")?;
                let load = backend
                    .pressure(hours, tz)
                    .await
                    .map_err(|r| ToolError(r.message))?;
                let empty = load["empty_minutes"].as_array().map_or(0, Vec::len);
                let summary = format!(
                    "{} scheduled runs from {} jobs in the next {}h; busiest minute :{:02} ({} \
                     jobs); {empty} of 60 minute positions have no scheduled runs",
                    load["total_fires"],
                    load["jobs"],
                    load["hours"],
                    load["busiest_minute"]["minute"].as_u64().unwrap_or(0),
                    load["busiest_minute"]["jobs"],
                );
                Ok(result(load, summary))
            }
            "cron_schedule_duplicates" => {
                let found = backend.duplicates().await?;
                let groups = found["groups"].as_array().cloned().unwrap_or_default();
                let biggest = groups.first().map_or(String::new(), |g| {
                    format!(
                        "; biggest: {} job(s) sharing '{}'",
                        g["count"],
                        g["expression"].as_str().unwrap_or_default()
                    )
                });
                let summary = format!(
                    "{} duplicate group(s) across {} scheduled job(s){biggest}",
                    groups.len(),
                    found["jobs"]
                );
                Ok(result(found, summary))
            }
            "cron_suggest_slot" => {
                let period = opt_str(args, "period", "hourly or daily")?.unwrap_or("hourly");
                let tz = opt_str(args, "tz", "an IANA time zone name")?;
                let slot = backend
                    .suggest(period, tz)
                    .await
                    .map_err(|r| ToolError(r.message))?;
                let summary = format!(
                    "suggested {} schedule: '{}' ({} runs already scheduled at this time in 24h)",
                    slot["period"].as_str().unwrap_or(period),
                    slot["expression"].as_str().unwrap_or_default(),
                    slot["fires_in_window"]
                );
                Ok(result(slot, summary))
            }
            "cron_list_pools" => {
                let pools = backend.pools().await?;
                let count = pools.as_array().map_or(0, Vec::len);
                Ok(result(
                    json!({"pools": pools}),
                    format!("{count} resource pool(s)"),
                ))
            }
            "cron_inspect_state" => self.inspect_state(args, backend).await,
            _ => self.act(tool, args, caller, backend).await,
        }
    }

    async fn status<B: Backend>(&self, args: &Args, backend: &B) -> Outcome {
        let rows = backend.status_rows().await?;
        let rows = rows.as_array().cloned().unwrap_or_default();
        let offset = opt_int(args.get("offset")).map_or(0, |n| n.max(0) as usize);
        let limit = self.clamp_limit(args.get("limit"));
        let page: Vec<Value> = rows.iter().skip(offset).take(limit).cloned().collect();
        let running = page.iter().filter(|r| r["status"] == "running").count();
        let meta = Self::page_meta(offset, limit, rows.len(), page.len());
        Ok(result(
            json!({"status": page, "page": meta}),
            format!(
                "{} job(s); {running} of the {} shown are running",
                rows.len(),
                page.len()
            ),
        ))
    }

    async fn list_jobs<B: Backend>(&self, args: &Args, backend: &B) -> Outcome {
        let filter = opt_str(args, "filter", "a string")?.map(str::to_lowercase);
        let state = match opt_str(args, "state", "a string")? {
            None => None,
            Some("running") => Some(JobState::Running),
            Some("disabled") => Some(JobState::Disabled),
            Some("scheduled") => Some(JobState::Scheduled),
            Some(other) => {
                return Err(ToolError(format!(
                    "state must be running, disabled or scheduled, not {}",
                    quoted(other)
                )))
            }
        };
        let query = JobQuery {
            filter,
            state,
            offset: opt_int(args.get("offset")).map_or(0, |n| n.max(0) as usize),
            limit: self.clamp_limit(args.get("limit")),
        };
        let (total, jobs) = backend.jobs(&query).await?;
        let meta = Self::page_meta(query.offset, query.limit, total, jobs.len());
        let summary = format!("{total} job(s) match; {} returned", jobs.len());
        Ok(result(json!({"jobs": jobs, "page": meta}), summary))
    }

    async fn list_runs<B: Backend>(&self, args: &Args, backend: &B) -> Outcome {
        let name = req_str(args, "name")?;
        let mut body = backend.runs(name).await.map_err(|r| unknown_job(name, r))?;
        let limit = self.clamp_limit(args.get("limit"));
        let all = body["runs"].as_array().cloned().unwrap_or_default();
        let kept: Vec<Value> = all[all.len().saturating_sub(limit)..].to_vec();
        let summary = format!(
            "job {}: {} run(s) kept, the newest {} returned",
            quoted(name),
            all.len(),
            kept.len()
        );
        body["totalRuns"] = json!(all.len());
        body["returnedRuns"] = json!(kept.len());
        body["runs"] = Value::Array(kept);
        Ok(result(body, summary))
    }

    async fn metrics<B: Backend>(&self, args: &Args, backend: &B) -> Outcome {
        let needle = opt_str(args, "match", "a string")?;
        let limit = self.clamp_limit(args.get("limit"));
        // The name filter: a case-insensitive substring.
        let needle_lower = needle.map(str::to_lowercase);
        let wanted = |name: &str| {
            needle_lower
                .as_deref()
                .is_none_or(|n| name.to_lowercase().contains(n))
        };
        let (found, total) = backend.metric_samples(&wanted, limit).await?;
        let samples: Vec<Value> = found
            .into_iter()
            .map(|s| json!({"name": s.name, "labels": s.labels, "value": s.value}))
            .collect();
        let returned = samples.len();
        Ok(result(
            json!({
                "samples": samples,
                "totalMatched": total,
                "returned": returned,
                "match": needle,
            }),
            format!("{total} sample(s) match; {returned} returned"),
        ))
    }

    async fn tail<B: Backend>(&self, args: &Args, backend: &B) -> Outcome {
        let name = req_str(args, "name")?;
        let tail = self.clamp_limit(args.get("tail"));
        let cursor = opt_int(args.get("cursor"));
        let (running, lines) = backend
            .log_lines(name)
            .await
            .map_err(|r| unknown_job(name, r))?;
        let mut body = tail_payload(&lines, tail, cursor);
        body["name"] = json!(name);
        body["running"] = json!(running);
        let summary = format!(
            "job {}: {} line(s), cursor {}",
            quoted(name),
            body["lines"].as_array().map_or(0, Vec::len),
            body["cursor"]
        );
        Ok(result(body, summary))
    }

    fn preview(&self, args: &Args, count: Option<usize>) -> Outcome {
        let expression = req_str(args, "expression")?;
        let tz = opt_str(args, "tz", "an IANA time zone name")?;
        let seed = opt_str(args, "seed", "a string (the job's name)")?;
        let mut query = HashMap::new();
        query.insert("expr".to_owned(), expression.to_owned());
        if let Some(tz) = tz {
            query.insert("tz".to_owned(), tz.to_owned());
        }
        if let Some(seed) = seed {
            query.insert("seed".to_owned(), seed.to_owned());
        }
        if let Some(count) = count {
            query.insert("count".to_owned(), count.to_string());
        }
        let payload = super::super::preview::preview(&query, Utc::now()).map_err(ToolError)?;
        let summary = preview_summary(&payload);
        Ok(result(payload, summary))
    }

    async fn inspect_state<B: Backend>(&self, args: &Args, backend: &B) -> Outcome {
        let ns = opt_str(args, "ns", "a string")?;
        let stream = opt_str(args, "stream", "a string")?;
        match (ns, stream) {
            (Some(_), Some(_)) => Err(ToolError("pass `ns` or `stream`, not both".into())),
            (Some(ns), None) => {
                let body = backend.state_documents(ns).await?;
                Ok(result(body, format!("documents of {}", quoted(ns))))
            }
            (None, Some(stream)) => {
                let limit = self.clamp_limit(args.get("limit"));
                let body = backend.state_records(stream, limit).await?;
                Ok(result(
                    body,
                    format!("newest records of {}", quoted(stream)),
                ))
            }
            (None, None) => {
                let body = backend.state_overview().await?;
                let summary = format!("state store enabled: {}", body["enabled"]);
                Ok(result(body, summary))
            }
        }
    }

    async fn act<B: Backend>(
        &self,
        tool: &Tool,
        args: &Args,
        caller: &Caller,
        backend: &B,
    ) -> Outcome {
        let by = caller.label.as_deref().unwrap_or("mcp");
        match tool.name {
            "cron_run_job" => {
                let name = req_str(args, "name")?;
                require_confirm(args, "Running a job")?;
                let body = backend.start(name).await?;
                if let Some(id) = body.get("queueId") {
                    return Ok(result(
                        json!({"queued": name, "queueId": id, "pool": body["pool"]}),
                        format!("job {} is queued in its pool", quoted(name)),
                    ));
                }
                Ok(result(
                    json!({"started": name}),
                    format!("job {} started", quoted(name)),
                ))
            }
            "cron_cancel_job" => {
                let name = req_str(args, "name")?;
                require_confirm(args, "Cancelling a job")?;
                let body = backend.cancel(name).await?;
                let instances = body["instances"].as_u64().unwrap_or(0);
                Ok(result(
                    json!({"cancelled": name, "instances": instances}),
                    format!("{instances} instance(s) of job {} cancelled", quoted(name)),
                ))
            }
            "cron_pause_job" => {
                let name = req_str(args, "name")?;
                require_confirm(args, "Pausing a job")?;
                let seconds =
                    match args.get("durationSeconds") {
                        None | Some(Value::Null) => None,
                        Some(value) => Some(opt_int(Some(value)).ok_or_else(|| {
                            ToolError("durationSeconds must be an integer".into())
                        })?),
                    };
                let note = opt_str(args, "note", "a string")?.unwrap_or("");
                let body = backend.pause(name, seconds, note, by).await?;
                let until = body["paused"]["until"].clone();
                let summary = format!(
                    "job {} paused until {}",
                    quoted(name),
                    until.as_str().unwrap_or("?")
                );
                Ok(result(json!({"paused": name, "until": until}), summary))
            }
            "cron_resume_job" => {
                let name = req_str(args, "name")?;
                require_confirm(args, "Resuming a job")?;
                backend.resume(name, by).await?;
                Ok(result(
                    json!({"resumed": name}),
                    format!("job {} resumed", quoted(name)),
                ))
            }
            "cron_cancel_queued" => {
                let pool = req_str(args, "pool")?;
                let id = req_str(args, "id")?;
                require_confirm(args, "Cancelling waiting work")?;
                let body = backend.pool_cancel(pool, id).await?;
                let summary = format!("entry {} of pool {} cancelled", quoted(id), quoted(pool));
                Ok(result(body, summary))
            }
            other => Err(ToolError(format!(
                "the tool {} has no handler",
                quoted(other)
            ))),
        }
    }
}

/// A refusal of a job route: a 404 names the tool that lists the jobs.
fn unknown_job(name: &str, refusal: Refusal) -> ToolError {
    if refusal.status == 404 {
        ToolError(format!(
            "there is no job named {}: cron_list_jobs lists them",
            quoted(name)
        ))
    } else {
        ToolError(refusal.message)
    }
}

/// The poll form of a job's output: without a `cursor`, the last `tail`
/// lines; with one, the lines after that position (at most `tail`). The
/// returned `cursor` is where the next poll starts; `truncated` says
/// older lines exist above a cursor-less tail. The retained lines are a
/// bounded ring, so after it turns over a cursor only skips ahead.
pub(super) fn tail_payload(lines: &[(String, String)], tail: usize, cursor: Option<i64>) -> Value {
    let total = lines.len();
    let start = match cursor {
        None => total.saturating_sub(tail),
        Some(at) => (at.max(0) as usize).min(total),
    };
    let stop = (start + tail).min(total);
    let shown: Vec<Value> = lines[start..stop]
        .iter()
        .map(|(stream, line)| json!({"stream": stream, "line": line}))
        .collect();
    json!({
        "lines": shown,
        "cursor": stop.max(start),
        "truncated": cursor.is_none() && start > 0,
    })
}

/// The one-line verdict of a schedule preview.
pub(super) fn preview_summary(payload: &Value) -> String {
    if payload["valid"] != Value::Bool(true) {
        return format!(
            "not valid: {}",
            payload["error"].as_str().unwrap_or("unknown error")
        );
    }
    if payload["reboot"] == Value::Bool(true) {
        return "valid: @reboot runs once when the daemon starts, not on a timetable".into();
    }
    let shown = payload["description"]
        .as_str()
        .or_else(|| payload["normalized"].as_str())
        .unwrap_or("");
    let mut parts = vec![format!("valid: {shown}")];
    if payload["never_fires"] == Value::Bool(true) {
        parts.push("warning: it never runs".into());
    } else {
        let lint = payload["lint"].as_array().cloned().unwrap_or_default();
        let warnings = lint.iter().filter(|f| f["level"] == "warning").count();
        if !lint.is_empty() {
            parts.push(format!(
                "{warnings} lint warning(s), {} note(s)",
                lint.len() - warnings
            ));
        }
        if let Some(first) = payload["fires"].get(0).and_then(Value::as_str) {
            parts.push(format!("first run {first}"));
        }
    }
    parts.join("; ")
}

/// The one-line verdict of a why report.
pub(super) fn why_summary(report: &Value) -> String {
    let name = report["job"].as_str().unwrap_or("?");
    let disabled = report["enabled"] == Value::Bool(false);
    if report["reboot"] == Value::Bool(true) {
        return format!(
            "job {} runs @reboot: at the daemon's start, never at a given time",
            quoted(name)
        );
    }
    let notes = report["notes"].as_array().cloned().unwrap_or_default();
    if report["matches"] == Value::Bool(true) {
        let mut text = format!(
            "yes: job {}'s schedule selects {}",
            name,
            report["at_in_zone"]
                .as_str()
                .or_else(|| report["at"].as_str())
                .unwrap_or("?")
        );
        for note in &notes {
            let code = note["code"].as_str().unwrap_or("");
            if code.starts_with("dst-") || code == "paused" {
                text.push_str("; ");
                text.push_str(note["message"].as_str().unwrap_or(""));
            }
        }
        if disabled {
            text.push_str(", but the job is disabled, so nothing ran");
        } else {
            text.push_str(
                "; when no run is recorded (cron_list_runs), look for downtime, the \
                 concurrencyPolicy or the cluster's leadership at that moment",
            );
        }
        return text;
    }
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    let matched: Vec<&str> = checks
        .iter()
        .filter(|c| c["matched"] == Value::Bool(true))
        .filter_map(|c| c["field"].as_str())
        .collect();
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c["matched"] == Value::Bool(false))
        .map(|c| {
            format!(
                "{} {} is not in {}",
                c["field"].as_str().unwrap_or("?"),
                c["label"].as_str().unwrap_or("?"),
                c["allowed"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let mut text = "no".to_owned();
    if !matched.is_empty() {
        text.push_str(&format!(": {} matched", matched.join(", ")));
    }
    text.push_str("; ");
    text.push_str(&failed.join("; "));
    if disabled {
        text.push_str(" (and the job is disabled)");
    }
    text
}
