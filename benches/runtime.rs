//! Runtime benchmarks: capturing a 100 MB output stream the way a job's
//! reader does (64 KiB reads, split into lines, each line echoed behind the
//! stream prefix and retained under `saveLimit`), and formatting the prefix.
//!
//! Run with `cargo bench --bench runtime`. The echo goes to a reused
//! in-memory buffer instead of the daemon's stdout, so the number is the
//! daemon's own CPU cost per captured byte, not the terminal's.

use cronstable::job::capture::{format_prefix, LineSplitter, Piece, Retention};
use divan::counter::BytesCount;
use divan::{black_box, Bencher};

#[cfg_attr(test, allow(dead_code))]
fn main() {
    divan::main();
}

const STREAM_BYTES: usize = 100 * 1024 * 1024;
const READ_SIZE: usize = 64 * 1024;
/// The defaults: `saveLimit: 4096`, `maxLineLength: 16 MiB`.
const SAVE_LIMIT: usize = 4096;
const MAX_LINE_LENGTH: usize = 16 * 1024 * 1024;

/// 100 MB of log-like lines of varied length (20..=219 bytes), the last
/// one without a newline.
fn stream(line_lengths: impl Fn(usize) -> usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(STREAM_BYTES);
    let mut i = 0usize;
    while out.len() < STREAM_BYTES {
        let len = line_lengths(i).min(STREAM_BYTES - out.len());
        let stamp = format!("2026-11-30T12:00:00Z line {i} ");
        let body = stamp.bytes().chain(std::iter::repeat(b'x')).take(len);
        out.extend(body);
        if out.len() < STREAM_BYTES {
            out.push(b'\n');
        }
        i += 1;
    }
    out
}

/// One reader's work over `data`: what `job::run` does per chunk.
fn capture(data: &[u8], save_limit: usize, max_line_length: usize) -> (usize, u64) {
    let prefix = format_prefix("[{job_name} {stream_name}] ", "bench-job", "stdout");
    let mut splitter = LineSplitter::new(max_line_length);
    let mut retention = Retention::new(save_limit);
    let mut pieces = Vec::new();
    let mut echo = String::new();
    let mut echoed = 0usize;
    let mut deliver = |pieces: &mut Vec<Piece>, retention: &mut Retention| {
        echo.clear();
        for piece in pieces.drain(..) {
            if let Piece::Line(line) = piece {
                echo.push_str(&prefix);
                echo.push_str(&line);
                if !line.ends_with('\n') {
                    echo.push('\n');
                }
                retention.push(line);
            }
        }
        echoed += black_box(echo.len());
    };
    for chunk in data.chunks(READ_SIZE) {
        splitter.feed(chunk, &mut pieces);
        deliver(&mut pieces, &mut retention);
    }
    splitter.finish(&mut pieces);
    deliver(&mut pieces, &mut retention);
    let kept = retention.text().len();
    (echoed + kept, retention.discarded())
}

/// Short log lines (the common case): about 880,000 lines.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn capture_100mb_log_lines(bencher: Bencher) {
    let data = stream(|i| 20 + (i * 37) % 200);
    bencher
        .counter(BytesCount::new(data.len()))
        .bench_local(|| capture(black_box(&data), SAVE_LIMIT, MAX_LINE_LENGTH));
}

/// Long lines, every fourth one over a 64 KiB `maxLineLength` (skipped).
#[divan::bench(sample_count = 10, sample_size = 1)]
fn capture_100mb_long_lines(bencher: Bencher) {
    let data = stream(|i| if i % 4 == 0 { 100_000 } else { 30_000 });
    bencher
        .counter(BytesCount::new(data.len()))
        .bench_local(|| capture(black_box(&data), SAVE_LIMIT, 64 * 1024));
}

/// `saveLimit: 0`: lines are echoed but nothing is kept.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn capture_100mb_keep_nothing(bencher: Bencher) {
    let data = stream(|i| 20 + (i * 37) % 200);
    bencher
        .counter(BytesCount::new(data.len()))
        .bench_local(|| capture(black_box(&data), 0, MAX_LINE_LENGTH));
}

#[divan::bench]
fn stream_prefix() -> String {
    format_prefix(
        black_box("[{job_name} {stream_name}] "),
        black_box("nightly-backup"),
        black_box("stderr"),
    )
}
