//! The log tail of a drawer or of the live-logs panel: attach to the
//! job's SSE stream, read it to its `end`, and while following, attach
//! again after a pause (a longer one each time the same finished run
//! comes back; at once when kicked).

use super::{
    describe, error_text, path_segment, Failure, LogEvent, Shared, Update, REQUEST_TIMEOUT,
};
use crate::tui::sse::{self, Frame};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A log stream with nothing on it for this long is dead (the daemon
/// pings every 15 seconds).
const STREAM_IDLE: Duration = Duration::from_secs(60);
/// The pause before a log tail re-attaches, and its longest backoff when
/// every attach replays the same finished run.
const TAIL_RETRY: Duration = Duration::from_secs(5);
const TAIL_RETRY_MAX: Duration = Duration::from_secs(30);

/// How one attach of a log stream went.
enum Attach {
    /// It ended with `end`; the fingerprint of the lines it carried.
    Ended(u64),
    Failed(Failure),
}

/// Tails one job's log: attach, read to the end, and while following,
/// attach again after a pause (longer each time the same finished run
/// comes back; at once when kicked).
pub(super) async fn tail_loop(
    shared: Arc<Shared>,
    job: String,
    generation: u64,
    follow: Arc<AtomicBool>,
    kick: Arc<Notify>,
) {
    let path = format!("/jobs/{}/logs", path_segment(&job));
    let job_path = format!("/jobs/{}", path_segment(&job));
    let mut retry = TAIL_RETRY;
    let mut last: Option<u64> = None;
    let mut before: Option<RunState> = None;
    loop {
        let state = run_state(&shared, &job_path).await;
        let new_run = match (&before, &state) {
            (_, Some(now)) if now.running => true,
            // What the last attach followed has finished since: the
            // replay is that run.
            (Some(prev), Some(_)) if prev.running => false,
            (Some(prev), Some(now)) => prev.finished != now.finished,
            _ => false,
        };
        before = state;
        shared.send(Update::Log(generation, LogEvent::Attach(new_run)));
        match attach_once(&shared, &path, generation).await {
            Attach::Ended(print) => {
                retry = if last == Some(print) {
                    (retry * 2).min(TAIL_RETRY_MAX)
                } else {
                    TAIL_RETRY
                };
                last = Some(print);
            }
            Attach::Failed(Failure::Unauthorized) => {
                shared.send(Update::Log(
                    generation,
                    LogEvent::Failed("unauthorized".to_owned()),
                ));
                shared.send(Update::Unauthorized);
                // A saved token re-attaches (the screen opens a new tail).
                return;
            }
            Attach::Failed(Failure::Other(why)) => {
                shared.send(Update::Log(generation, LogEvent::Failed(why)));
                retry = TAIL_RETRY;
                last = None;
            }
        }
        if follow.load(Ordering::Relaxed) {
            tokio::select! {
                _ = tokio::time::sleep(retry) => {}
                _ = kick.notified() => {}
            }
        } else {
            kick.notified().await;
        }
    }
}

/// Whether a job runs, and when its last run finished.
struct RunState {
    running: bool,
    finished: Option<String>,
}

/// `GET /jobs/{name}` read for [`RunState`]; None when it cannot be read.
async fn run_state(shared: &Shared, path: &str) -> Option<RunState> {
    let job = shared.get_json(path).await.ok()?;
    Some(RunState {
        running: job.get("running").and_then(Value::as_bool).unwrap_or(false),
        finished: job
            .get("last_run")
            .and_then(|r| r.get("finished_at"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

async fn attach_once(shared: &Shared, path: &str, generation: u64) -> Attach {
    use std::hash::{Hash, Hasher};
    let builder = shared
        .request_for(reqwest::Method::GET, path, "text/event-stream")
        // No deadline for the whole stream; silence is caught below.
        .timeout(Duration::from_secs(365 * 86_400));
    let mut response = match tokio::time::timeout(REQUEST_TIMEOUT, builder.send()).await {
        Err(_) => return Attach::Failed(Failure::Other("timed out".to_owned())),
        Ok(Err(e)) => return Attach::Failed(Failure::Other(describe(&e))),
        Ok(Ok(r)) => r,
    };
    match response.status().as_u16() {
        200 => {}
        401 => return Attach::Failed(Failure::Unauthorized),
        status => {
            let body = response.bytes().await.unwrap_or_default();
            return Attach::Failed(Failure::Other(error_text(status, &body)));
        }
    }
    let mut parser = sse::Parser::new();
    let mut print = std::collections::hash_map::DefaultHasher::new();
    loop {
        let chunk = match tokio::time::timeout(STREAM_IDLE, response.chunk()).await {
            Err(_) => {
                return Attach::Failed(Failure::Other("the log stream went silent".to_owned()))
            }
            Ok(Err(e)) => return Attach::Failed(Failure::Other(describe(&e))),
            Ok(Ok(None)) => {
                return Attach::Failed(Failure::Other("the log stream closed".to_owned()))
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        for frame in parser.feed(&chunk) {
            match frame {
                Frame::Event { event, data } if event == "line" => {
                    let value: Value = serde_json::from_str(&data).unwrap_or(Value::String(data));
                    let (stream, line) = match &value {
                        Value::Object(map) => (
                            map.get("stream")
                                .and_then(Value::as_str)
                                .unwrap_or("stdout")
                                .to_owned(),
                            map.get("line")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                        ),
                        Value::String(s) => ("stdout".to_owned(), s.clone()),
                        other => ("stdout".to_owned(), other.to_string()),
                    };
                    (&stream, &line).hash(&mut print);
                    shared.send(Update::Log(generation, LogEvent::Line(stream, line)));
                }
                Frame::Event { event, data } if event == "end" => {
                    let reason = serde_json::from_str::<Value>(&data)
                        .ok()
                        .and_then(|v| v.get("reason").and_then(Value::as_str).map(str::to_owned));
                    shared.send(Update::Log(generation, LogEvent::End(reason)));
                    return Attach::Ended(print.finish());
                }
                Frame::Comment(text) => {
                    if let Some(n) = sse::skipped_lines(&text) {
                        shared.send(Update::Log(generation, LogEvent::Skipped(n)));
                    }
                }
                Frame::Event { .. } => {}
            }
        }
    }
}
