//! The Server-Sent Events body of `GET /jobs/{name}/logs`: the lines a run
//! has already produced, then its new lines as they come, then `end`.
//!
//! A viewer that falls more than [`LIVE_SUBSCRIBER_QUEUE`] lines behind
//! loses the oldest of the lines it has not read yet (the capture never
//! waits for a viewer); the stream then carries an SSE comment saying how
//! many were skipped, which clients ignore, and goes on with the newest.
//!
//! [`LIVE_SUBSCRIBER_QUEUE`]: crate::job::capture::LIVE_SUBSCRIBER_QUEUE

use crate::job::{LiveEvent, LiveSubscription};
use axum::body::Bytes;
use futures_util::stream::{self, Stream};
use serde_json::Value;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};

/// Quiet time after which a `: ping` comment keeps the connection alive
/// (and finds out whether the viewer is still there).
pub const PING_INTERVAL: Duration = Duration::from_secs(15);

/// The frame ending a stream normally.
const END: &[u8] = b"event: end\ndata: {}\n\n";
/// The whole body when the job has no run to show.
const NO_OUTPUT: &[u8] = b"event: end\ndata: {\"reason\": \"no-output\"}\n\n";
/// The keep-alive comment.
const PING: &[u8] = b": ping\n\n";

/// Appends one `event: line` frame.
fn push_line(out: &mut Vec<u8>, stream: &str, text: &str) {
    out.extend_from_slice(b"event: line\ndata: {\"stream\": \"");
    out.extend_from_slice(stream.as_bytes());
    out.extend_from_slice(b"\", \"line\": ");
    out.extend_from_slice(Value::from(text).to_string().as_bytes());
    out.extend_from_slice(b"}\n\n");
}

enum Phase {
    NoOutput,
    Replay(LiveSubscription),
    Follow(broadcast::Receiver<LiveEvent>),
    Done,
}

/// The SSE body for `output` (None: the job has not run yet). The stream
/// also ends, with `end`, when `draining` turns true (the listeners are
/// being stopped and must not wait for an endless tail).
pub fn sse_body(
    output: Option<LiveSubscription>,
    ping: Duration,
    draining: watch::Receiver<bool>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    let start = match output {
        None => Phase::NoOutput,
        Some(sub) => Phase::Replay(sub),
    };
    stream::unfold((start, draining), move |(phase, mut draining)| async move {
        match phase {
            Phase::Done => None,
            Phase::NoOutput => Some((Ok(Bytes::from_static(NO_OUTPUT)), (Phase::Done, draining))),
            Phase::Replay(sub) => {
                let mut out = Vec::new();
                for (stream, text) in &sub.replay {
                    push_line(&mut out, stream, text);
                }
                let next = if sub.ended {
                    out.extend_from_slice(END);
                    Phase::Done
                } else {
                    Phase::Follow(sub.feed)
                };
                Some((Ok(Bytes::from(out)), (next, draining)))
            }
            Phase::Follow(mut feed) => {
                let (chunk, more) = follow(&mut feed, ping, &mut draining).await;
                let next = if more {
                    Phase::Follow(feed)
                } else {
                    Phase::Done
                };
                Some((Ok(Bytes::from(chunk)), (next, draining)))
            }
        }
    })
}

/// Waits for the next thing to send; returns it and whether the stream
/// goes on. A burst of lines already queued goes out as one chunk.
async fn follow(
    feed: &mut broadcast::Receiver<LiveEvent>,
    ping: Duration,
    draining: &mut watch::Receiver<bool>,
) -> (Vec<u8>, bool) {
    if *draining.borrow() {
        return (END.to_vec(), false);
    }
    let first = tokio::select! {
        event = feed.recv() => event,
        _ = tokio::time::sleep(ping) => return (PING.to_vec(), true),
        _ = draining.changed() => return (END.to_vec(), false),
    };
    let mut out = Vec::new();
    let mut event = first;
    loop {
        match event {
            Ok(LiveEvent::Line { stream, text }) => push_line(&mut out, stream, &text),
            Ok(LiveEvent::End) | Err(RecvError::Closed) => {
                out.extend_from_slice(END);
                return (out, false);
            }
            Err(RecvError::Lagged(n)) => {
                out.extend_from_slice(
                    format!(": {n} lines skipped (this viewer fell behind)\n\n").as_bytes(),
                );
            }
        }
        event = match feed.try_recv() {
            Ok(next) => Ok(next),
            Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
            Err(TryRecvError::Empty) => return (out, true),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::LiveOutput;
    use futures_util::StreamExt;

    async fn text(
        s: &mut (impl Stream<Item = Result<Bytes, Infallible>> + Unpin),
    ) -> Option<String> {
        match s.next().await? {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(never) => match never {},
        }
    }

    #[tokio::test(start_paused = true)]
    async fn quiet_streams_get_a_ping_every_interval_then_the_end() {
        let out = LiveOutput::new();
        out.publish("stdout", "before\n");
        let (_stop, draining) = watch::channel(false);
        let mut body = Box::pin(sse_body(Some(out.subscribe()), PING_INTERVAL, draining));
        assert_eq!(
            text(&mut body).await.as_deref(),
            Some("event: line\ndata: {\"stream\": \"stdout\", \"line\": \"before\"}\n\n")
        );
        let quiet_from = tokio::time::Instant::now();
        assert_eq!(text(&mut body).await.as_deref(), Some(": ping\n\n"));
        assert_eq!(
            quiet_from.elapsed(),
            PING_INTERVAL,
            "the paused clock ran exactly one interval"
        );
        assert_eq!(text(&mut body).await.as_deref(), Some(": ping\n\n"));
        out.publish("stderr", "say \"hi\"\n");
        out.publish("stdout", "x");
        out.close();
        assert_eq!(
            text(&mut body).await.as_deref(),
            Some(concat!(
                "event: line\ndata: {\"stream\": \"stderr\", \"line\": \"say \\\"hi\\\"\"}\n\n",
                "event: line\ndata: {\"stream\": \"stdout\", \"line\": \"x\"}\n\n",
                "event: end\ndata: {}\n\n"
            ))
        );
        assert_eq!(text(&mut body).await, None);
    }

    #[tokio::test]
    async fn a_job_without_a_run_ends_at_once_with_no_output() {
        let (_stop, draining) = watch::channel(false);
        let mut body = Box::pin(sse_body(None, PING_INTERVAL, draining));
        assert_eq!(
            text(&mut body).await.as_deref(),
            Some("event: end\ndata: {\"reason\": \"no-output\"}\n\n")
        );
        assert_eq!(text(&mut body).await, None);
    }

    #[tokio::test]
    async fn a_finished_run_replays_then_ends() {
        let out = LiveOutput::new();
        out.publish("stdout", "a\n");
        out.close();
        let (_stop, draining) = watch::channel(false);
        let mut body = Box::pin(sse_body(Some(out.subscribe()), PING_INTERVAL, draining));
        assert_eq!(
            text(&mut body).await.as_deref(),
            Some("event: line\ndata: {\"stream\": \"stdout\", \"line\": \"a\"}\n\nevent: end\ndata: {}\n\n")
        );
        assert_eq!(text(&mut body).await, None);
    }

    #[tokio::test]
    async fn stopping_the_listeners_ends_an_open_tail() {
        let out = LiveOutput::new();
        let (stop, draining) = watch::channel(false);
        let mut body = Box::pin(sse_body(Some(out.subscribe()), PING_INTERVAL, draining));
        assert_eq!(text(&mut body).await.as_deref(), Some(""));
        stop.send_replace(true);
        assert_eq!(
            text(&mut body).await.as_deref(),
            Some("event: end\ndata: {}\n\n")
        );
        assert_eq!(text(&mut body).await, None);
    }
}
