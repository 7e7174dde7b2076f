//! A run's captured output: each stream read in the background into its
//! retention (head and tail), split into lines, masked for the run's
//! staged secrets, echoed to the daemon's own stream and published live.

use crate::config::JobConfig;
use crate::job::capture::{format_prefix, LineSplitter, LiveOutput, Piece, Retention};
use crate::job::outcome::StreamOutput;
use std::io::Write;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

/// What a masked value is replaced with in a job's output.
pub const MASK: &str = "***REDACTED***";

/// The shortest value masked: a shorter secret would garble ordinary
/// output wherever its characters occur.
pub const MASK_MIN_CHARS: usize = 4;

/// `line` with every occurrence of each of `masks` replaced by [`MASK`].
pub fn mask_line(line: String, masks: &[String]) -> String {
    let mut line = line;
    for secret in masks {
        if secret.chars().count() >= MASK_MIN_CHARS && line.contains(secret.as_str()) {
            line = line.replace(secret.as_str(), MASK);
        }
    }
    line
}

/// A captured stream being read in the background. The retained lines live
/// outside the task, so stopping the reader keeps what it read.
pub(super) struct Reader {
    pub(super) name: &'static str,
    retention: Arc<Mutex<Retention>>,
    pub(super) task: JoinHandle<()>,
}

impl Reader {
    pub(super) fn output(&self) -> StreamOutput {
        match self.retention.lock() {
            Ok(r) => StreamOutput {
                text: r.text(),
                discarded: r.discarded(),
            },
            Err(_) => StreamOutput::default(),
        }
    }
}

pub(super) fn start_reader<R>(
    job: &JobConfig,
    name: &'static str,
    pipe: R,
    live: Arc<LiveOutput>,
    masks: Arc<[String]>,
) -> Reader
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let retention = Arc::new(Mutex::new(Retention::new(job.save_limit)));
    let prefix = format_prefix(&job.stream_prefix, &job.name, name);
    let job_name = job.name.clone();
    let max = job.max_line_length;
    let shared = Arc::clone(&retention);
    let task = tokio::spawn(async move {
        let mut pipe = pipe;
        let mut splitter = LineSplitter::new(max);
        // Reads land in spare capacity, never zeroed. The buffer starts
        // small and doubles each time a read fills it: most jobs print a
        // few lines, and a 64 KiB allocation per stream for each of
        // hundreds of jobs launched in the same second cost the launch
        // path a large-chunk malloc and free apiece; a chatty job reaches
        // the full read size after a few reads.
        let mut buf: Vec<u8> = Vec::with_capacity(FIRST_READ_BYTES);
        let mut pieces = Vec::new();
        loop {
            buf.clear();
            let n = match pipe.read_buf(&mut buf).await {
                Ok(0) | Err(_) => 0,
                Ok(n) => n,
            };
            let wanted = next_read_capacity(buf.capacity(), n);
            if wanted > buf.capacity() {
                buf.reserve_exact(wanted - buf.len());
            }
            if n == 0 {
                splitter.finish(&mut pieces);
            } else {
                splitter.feed(&buf[..n], &mut pieces);
            }
            deliver(
                &job_name,
                name,
                &prefix,
                &shared,
                &live,
                &masks,
                &mut pieces,
            );
            if n == 0 {
                return;
            }
        }
    });
    Reader {
        name,
        retention,
        task,
    }
}

/// The first read buffer of a job's output stream.
const FIRST_READ_BYTES: usize = 4 * 1024;

/// The largest read buffer of a job's output stream.
const MAX_READ_BYTES: usize = 64 * 1024;

/// The read buffer for the next read of an output stream, given the
/// current one and how many bytes the last read returned: doubled when
/// that read filled it (more is probably waiting), up to
/// [`MAX_READ_BYTES`]; else unchanged.
fn next_read_capacity(capacity: usize, last_read: usize) -> usize {
    if last_read >= capacity && capacity < MAX_READ_BYTES {
        (capacity * 2).min(MAX_READ_BYTES)
    } else {
        capacity
    }
}

/// Echoes complete lines to the daemon's own stream and retains them.
fn deliver(
    job_name: &str,
    stream: &'static str,
    prefix: &str,
    retention: &Mutex<Retention>,
    live: &LiveOutput,
    masks: &[String],
    pieces: &mut Vec<Piece>,
) {
    if pieces.is_empty() {
        return;
    }
    let mut echo = String::new();
    let Ok(mut kept) = retention.lock() else {
        pieces.clear();
        return;
    };
    for piece in pieces.drain(..) {
        match piece {
            Piece::Line(line) => {
                let line = if masks.is_empty() {
                    line
                } else {
                    mask_line(line, masks)
                };
                echo.push_str(prefix);
                echo.push_str(&line);
                if !line.ends_with('\n') {
                    echo.push('\n');
                }
                live.publish(stream, &line);
                kept.push(line);
            }
            Piece::TooLong => {
                tracing::warn!(target: "cronstable::job", "job {job_name}: ignored a very long line");
            }
        }
    }
    drop(kept);
    // Echo failures (a closed daemon stdout) must not stop the capture.
    let _ = if stream == "stdout" {
        std::io::stdout().lock().write_all(echo.as_bytes())
    } else {
        std::io::stderr().lock().write_all(echo.as_bytes())
    };
}

/// Waits until every reader has reached end-of-file.
pub(super) async fn wait_readers(readers: &mut [Reader]) {
    for reader in readers.iter_mut() {
        if !reader.task.is_finished() {
            let _ = (&mut reader.task).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{next_read_capacity, FIRST_READ_BYTES, MAX_READ_BYTES};

    #[test]
    fn a_read_that_fills_the_buffer_doubles_it() {
        assert_eq!(
            next_read_capacity(FIRST_READ_BYTES, FIRST_READ_BYTES),
            2 * FIRST_READ_BYTES
        );
        assert_eq!(next_read_capacity(8192, 9000), 16384);
    }

    #[test]
    fn a_partial_read_keeps_the_buffer() {
        assert_eq!(next_read_capacity(FIRST_READ_BYTES, 10), FIRST_READ_BYTES);
        assert_eq!(next_read_capacity(16384, 0), 16384);
    }

    #[test]
    fn the_buffer_grows_to_the_read_size_and_stops() {
        let mut capacity = FIRST_READ_BYTES;
        let mut steps = 0;
        while capacity < MAX_READ_BYTES {
            capacity = next_read_capacity(capacity, capacity);
            steps += 1;
        }
        assert_eq!(capacity, MAX_READ_BYTES);
        assert_eq!(steps, 4, "4 KiB to 64 KiB in four doublings");
        assert_eq!(
            next_read_capacity(MAX_READ_BYTES, MAX_READ_BYTES),
            MAX_READ_BYTES
        );
        // A capacity the allocator rounded up never shrinks.
        assert_eq!(next_read_capacity(70_000, 70_000), 70_000);
    }
}

#[cfg(test)]
mod mask_tests {
    use super::*;

    #[test]
    fn secrets_are_masked_wherever_they_occur_and_short_values_are_left() {
        let masks = vec!["s3cr3t".to_owned(), "abc".to_owned()];
        assert_eq!(
            mask_line("key=s3cr3t and s3cr3t again abc".into(), &masks),
            "key=***REDACTED*** and ***REDACTED*** again abc"
        );
        assert_eq!(mask_line("nothing here".into(), &masks), "nothing here");
        assert_eq!(mask_line("x".into(), &[]), "x");
    }
}
