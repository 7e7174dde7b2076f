//! The per-job families, written straight into the exposition text.
//!
//! They are nearly all of the bytes (about 1.6 KB a job, 16 MB with
//! 10,000 jobs), and going through the crate's encoders cost a scrape
//! most of its time: a call chain per sample, each label value scanned
//! for escapes on every line, and then the pass that respells the bucket
//! bounds. Here each job's name is escaped once, each bound is spelled
//! once per scrape, and the lines go into one buffer. Every byte is the
//! one the crate (plus the respelling) writes: the tests compare both
//! encodings on awkward inputs.
//!
//! A job's lines of one family are contiguous in the text, so
//! [`write_families`] records where each starts: the next encoding copies
//! the lines of every job whose row did not change and writes only the
//! others (see `Encoder` in the parent module).

use super::{bucket_bound, outcome_index, Format, JobRow, OUTCOMES};
use std::borrow::Cow;
use std::sync::Arc;

/// The shape of a family: decides its `# TYPE`, whether the 0.0.4
/// format names it with `_total`, and how a job's samples are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One per-job family, in exposition order (see [`FAMILIES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    Runs,
    Duration,
    Retries,
    PermanentFailures,
    StartFailures,
    LastSuccess,
    LastFailure,
    CpuSeconds,
    PeakRss,
    Info,
    Enabled,
    Running,
    NextRun,
    LastRun,
    LastRunDuration,
    LastRunExitCode,
    LastRunSuccess,
    LastRunCpu,
    LastRunMaxRss,
    Paused,
}

/// The per-job families in the order they appear: the cumulative
/// counters first, then the state gauges (the order the crate-based
/// collectors had, which scrapers and golden files may rely on).
pub(super) const FAMILIES: [Family; 20] = [
    Family::Runs,
    Family::Duration,
    Family::Retries,
    Family::PermanentFailures,
    Family::StartFailures,
    Family::LastSuccess,
    Family::LastFailure,
    Family::CpuSeconds,
    Family::PeakRss,
    Family::Info,
    Family::Enabled,
    Family::Running,
    Family::NextRun,
    Family::LastRun,
    Family::LastRunDuration,
    Family::LastRunExitCode,
    Family::LastRunSuccess,
    Family::LastRunCpu,
    Family::LastRunMaxRss,
    Family::Paused,
];

/// How many per-job families there are: the stride of the offsets that
/// [`write_families`] records.
pub(super) const FAMILY_COUNT: usize = FAMILIES.len();

impl Family {
    /// Name (without the `_total` a counter's samples carry), help and
    /// kind.
    fn describe(self) -> (&'static str, &'static str, Kind) {
        match self {
            Family::Runs => (
                "cronstable_job_runs",
                "Finished runs by outcome.",
                Kind::Counter,
            ),
            Family::Duration => (
                "cronstable_job_duration_seconds",
                "Duration of finished runs.",
                Kind::Histogram,
            ),
            Family::Retries => (
                "cronstable_job_retries",
                "Retry attempts launched.",
                Kind::Counter,
            ),
            Family::PermanentFailures => (
                "cronstable_job_permanent_failures",
                "Failures with no retry remaining.",
                Kind::Counter,
            ),
            Family::StartFailures => (
                "cronstable_job_start_failures",
                "Runs whose command could not be started.",
                Kind::Counter,
            ),
            Family::LastSuccess => (
                "cronstable_job_last_success_timestamp_seconds",
                "Unix time of the last successful finish.",
                Kind::Gauge,
            ),
            Family::LastFailure => (
                "cronstable_job_last_failure_timestamp_seconds",
                "Unix time of the last failed finish.",
                Kind::Gauge,
            ),
            Family::CpuSeconds => (
                "cronstable_job_cpu_seconds",
                "CPU time of resource-monitored runs, by mode.",
                Kind::Counter,
            ),
            Family::PeakRss => (
                "cronstable_job_peak_rss_bytes",
                "Highest resident set of any resource-monitored run.",
                Kind::Gauge,
            ),
            Family::Info => (
                "cronstable_job_info",
                "Static job configuration.",
                Kind::Gauge,
            ),
            Family::Enabled => (
                "cronstable_job_enabled",
                "1 if the job is enabled.",
                Kind::Gauge,
            ),
            Family::Running => ("cronstable_job_running", "Running instances.", Kind::Gauge),
            Family::NextRun => (
                "cronstable_job_next_run_timestamp_seconds",
                "Unix time of the next scheduled run.",
                Kind::Gauge,
            ),
            Family::LastRun => (
                "cronstable_job_last_run_timestamp_seconds",
                "Unix time the most recent run finished.",
                Kind::Gauge,
            ),
            Family::LastRunDuration => (
                "cronstable_job_last_run_duration_seconds",
                "Duration of the most recent run.",
                Kind::Gauge,
            ),
            Family::LastRunExitCode => (
                "cronstable_job_last_run_exit_code",
                "Exit code of the most recent run.",
                Kind::Gauge,
            ),
            Family::LastRunSuccess => (
                "cronstable_job_last_run_success",
                "1 if the most recent run succeeded.",
                Kind::Gauge,
            ),
            Family::LastRunCpu => (
                "cronstable_job_last_run_cpu_seconds",
                "CPU time of the most recent run, when it was monitored.",
                Kind::Gauge,
            ),
            Family::LastRunMaxRss => (
                "cronstable_job_last_run_max_rss_bytes",
                "Peak resident set of the most recent run, when it was monitored.",
                Kind::Gauge,
            ),
            Family::Paused => (
                "cronstable_job_paused",
                "1 while the job is paused.",
                Kind::Gauge,
            ),
        }
    }

    /// The `# HELP` and `# TYPE` lines. The 0.0.4 format names a counter
    /// family with its `_total`, OpenMetrics without (its samples have it
    /// in both).
    fn write_header(self, out: &mut String, format: Format) {
        let (name, help, kind) = self.describe();
        let total = if kind == Kind::Counter && format == Format::Text {
            "_total"
        } else {
            ""
        };
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        for (what, tail) in [("# HELP ", help), ("# TYPE ", kind)] {
            out.push_str(what);
            out.push_str(name);
            out.push_str(total);
            out.push(' ');
            out.push_str(tail);
            out.push('\n');
        }
    }
}

/// A gauge value: integers print without a fraction, times and durations
/// as floats.
#[derive(Debug, Clone, Copy)]
enum Value {
    Int(i64),
    Float(f64),
}

/// A byte count as a gauge value (past `i64::MAX`, which no resident set
/// reaches, it saturates).
fn rss_value(bytes: u64) -> Value {
    Value::Int(i64::try_from(bytes).unwrap_or(i64::MAX))
}

impl From<bool> for Value {
    fn from(value: bool) -> Value {
        Value::Int(i64::from(value))
    }
}

/// A label value escaped as the exposition formats want it: backslash,
/// double quote and newline get a backslash (`\n` for the newline).
pub(super) fn escape(value: &str) -> Cow<'_, str> {
    if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The `le` spelling of a bucket bound in `format`: Python's repr, what
/// the respelling pass makes of the crate's spelling. The crate writes a
/// 0.0.4 bound as Go does, whole numbers below a million as integers, so
/// `-0.0` comes out as `0` and is read back as `0.0`; every other
/// spelling of either format reads back as the bound itself.
fn bound_spelling(bound: f64, format: Format) -> String {
    let read_back = match format {
        Format::Text if bound.fract() == 0.0 && bound.abs() < 1e6 => bound as i64 as f64,
        _ => bound,
    };
    bucket_bound(read_back)
}

/// What writing the lines of many jobs shares: the format, number
/// buffers, and the spelled bucket bounds (every job's histogram has the
/// configured bounds, so they are spelled once, not once a job).
pub(super) struct Writer {
    format: Format,
    bounds: Vec<u64>,
    spelled: Vec<String>,
    ints: itoa::Buffer,
    floats: dtoa::Buffer,
}

impl Writer {
    /// A writer of `format`.
    pub(super) fn new(format: Format) -> Writer {
        Writer {
            format,
            bounds: Vec::new(),
            spelled: Vec::new(),
            ints: itoa::Buffer::new(),
            floats: dtoa::Buffer::new(),
        }
    }

    /// Makes `self.spelled` the spellings of `bounds`.
    fn spell_bounds(&mut self, bounds: &[f64]) {
        let same = self.bounds.len() == bounds.len()
            && self
                .bounds
                .iter()
                .zip(bounds)
                .all(|(a, b)| *a == b.to_bits());
        if !same {
            self.bounds = bounds.iter().map(|b| b.to_bits()).collect();
            self.spelled = bounds
                .iter()
                .map(|b| bound_spelling(*b, self.format))
                .collect();
        }
    }

    fn int(&mut self, out: &mut String, value: impl itoa::Integer) {
        out.push_str(self.ints.format(value));
    }

    /// A float sample value as each of the crate's encoders writes it:
    /// the shortest round-trip digits, non-finite values as `NaN`, `inf`
    /// and `-inf` in OpenMetrics but `NaN`, `+Inf` and `-Inf` in 0.0.4.
    fn float(&mut self, out: &mut String, value: f64) {
        match self.format {
            Format::OpenMetrics => out.push_str(self.floats.format(value)),
            Format::Text if value.is_finite() => out.push_str(self.floats.format_finite(value)),
            Format::Text if value.is_nan() => out.push_str("NaN"),
            Format::Text if value > 0.0 => out.push_str("+Inf"),
            Format::Text => out.push_str("-Inf"),
        }
    }

    fn value(&mut self, out: &mut String, value: Value) {
        match value {
            Value::Int(v) => self.int(out, v),
            Value::Float(v) => self.float(out, v),
        }
    }

    /// `{name}{job_name="{job}"} {value}` and a newline.
    fn sample(&mut self, out: &mut String, name: &str, job: &str, value: Value) {
        out.push_str(name);
        out.push_str("{job_name=\"");
        out.push_str(job);
        out.push_str("\"} ");
        self.value(out, value);
        out.push('\n');
    }

    /// One job's lines of `family`; `job` is its name escaped.
    fn write_job(&mut self, out: &mut String, family: Family, row: &JobRow, job: &str) {
        let counters = &row.counters;
        let gauge = match family {
            Family::Runs => {
                for outcome in OUTCOMES {
                    out.push_str("cronstable_job_runs_total{job_name=\"");
                    out.push_str(job);
                    out.push_str("\",status=\"");
                    out.push_str(outcome.as_str());
                    out.push_str("\"} ");
                    self.int(out, counters.runs[outcome_index(outcome)]);
                    out.push('\n');
                }
                return;
            }
            Family::Duration => return self.write_histogram(out, row, job),
            Family::Retries | Family::PermanentFailures | Family::StartFailures => {
                let (name, count) = match family {
                    Family::Retries => ("cronstable_job_retries_total", counters.retries),
                    Family::PermanentFailures => (
                        "cronstable_job_permanent_failures_total",
                        counters.permanent_failures,
                    ),
                    _ => (
                        "cronstable_job_start_failures_total",
                        counters.start_failures,
                    ),
                };
                out.push_str(name);
                out.push_str("{job_name=\"");
                out.push_str(job);
                out.push_str("\"} ");
                self.int(out, count);
                out.push('\n');
                return;
            }
            Family::CpuSeconds => {
                // Only once the job has a monitored run: an unmonitored
                // job exports no frozen zeros.
                if counters.cpu_count > 0 {
                    for (mode, value) in
                        [("user", counters.cpu_user), ("system", counters.cpu_system)]
                    {
                        out.push_str("cronstable_job_cpu_seconds_total{job_name=\"");
                        out.push_str(job);
                        out.push_str("\",mode=\"");
                        out.push_str(mode);
                        out.push_str("\"} ");
                        self.float(out, value);
                        out.push('\n');
                    }
                }
                return;
            }
            Family::Info => {
                out.push_str("cronstable_job_info{job_name=\"");
                out.push_str(job);
                out.push_str("\",schedule=\"");
                out.push_str(&escape(&row.schedule));
                out.push_str("\",cluster_policy=\"");
                out.push_str(&escape(&row.cluster_policy));
                out.push_str("\"} 1\n");
                return;
            }
            _ => gauge(family, row),
        };
        if let Some(value) = gauge {
            self.sample(out, family.describe().0, job, value);
        }
    }

    /// The duration histogram of one job. The bucket counts written are
    /// what the crate makes of the per-bucket counts the collectors gave
    /// it (summed again), so they stay the crate's even for bounds that
    /// are out of order.
    fn write_histogram(&mut self, out: &mut String, row: &JobRow, job: &str) {
        const NAME: &str = "cronstable_job_duration_seconds";
        let h = &row.counters.duration;
        self.spell_bounds(&h.bounds);
        let sum_and_count = |w: &mut Writer, out: &mut String| {
            out.push_str(NAME);
            out.push_str("_sum{job_name=\"");
            out.push_str(job);
            out.push_str("\"} ");
            w.float(out, h.sum);
            out.push('\n');
            out.push_str(NAME);
            out.push_str("_count{job_name=\"");
            out.push_str(job);
            out.push_str("\"} ");
            w.int(out, h.count);
            out.push('\n');
        };
        if self.format == Format::OpenMetrics {
            sum_and_count(self, out);
        }
        let mut below = 0u64;
        let mut cumulative = 0u64;
        let finite = h.bounds.len().min(h.counts.len());
        for index in 0..=finite {
            let count = if index < finite {
                h.counts[index]
            } else {
                h.count
            };
            cumulative = cumulative.wrapping_add(count.saturating_sub(below));
            below = count;
            let le = if index < finite {
                self.spelled[index].as_str()
            } else {
                "+Inf"
            };
            out.push_str(NAME);
            match self.format {
                Format::OpenMetrics => {
                    out.push_str("_bucket{le=\"");
                    out.push_str(le);
                    out.push_str("\",job_name=\"");
                    out.push_str(job);
                }
                Format::Text => {
                    out.push_str("_bucket{job_name=\"");
                    out.push_str(job);
                    out.push_str("\",le=\"");
                    out.push_str(le);
                }
            }
            out.push_str("\"} ");
            self.int(out, cumulative);
            out.push('\n');
        }
        if self.format == Format::Text {
            sum_and_count(self, out);
        }
    }
}

/// The value of a one-line gauge family for `row` (None: no line);
/// None too for the families with lines of their own shape.
fn gauge(family: Family, row: &JobRow) -> Option<Value> {
    let counters = &row.counters;
    let last = row.last_run.as_ref();
    match family {
        Family::LastSuccess => counters.last_success.map(Value::Float),
        Family::LastFailure => counters.last_failure.map(Value::Float),
        Family::PeakRss => (counters.max_rss > 0).then(|| rss_value(counters.max_rss)),
        Family::Enabled => Some(row.enabled.into()),
        Family::Running => Some(Value::Int(i64::try_from(row.running).unwrap_or(i64::MAX))),
        Family::NextRun => row.next_run.map(Value::Float),
        Family::LastRun => last.map(|r| Value::Float(r.finished)),
        Family::LastRunDuration => last.and_then(|r| r.duration).map(Value::Float),
        Family::LastRunExitCode => last.map(|r| Value::Int(i64::from(r.retcode))),
        Family::LastRunSuccess => last.map(|r| r.success.into()),
        Family::LastRunCpu => last
            .and_then(|r| r.resources)
            .map(|(cpu, _)| Value::Float(cpu)),
        Family::LastRunMaxRss => last
            .and_then(|r| r.resources)
            .map(|(_, rss)| rss_value(rss)),
        Family::Paused => Some(row.paused.into()),
        Family::Runs
        | Family::Duration
        | Family::Retries
        | Family::PermanentFailures
        | Family::StartFailures
        | Family::CpuSeconds
        | Family::Info => None,
    }
}

/// The sample names a job's lines of `family` can carry (in either
/// format): a query that wants none of them skips the family.
pub(super) fn sample_names(family: Family) -> &'static [&'static str] {
    match family {
        Family::Runs => &["cronstable_job_runs_total"],
        Family::Duration => &[
            "cronstable_job_duration_seconds_bucket",
            "cronstable_job_duration_seconds_sum",
            "cronstable_job_duration_seconds_count",
        ],
        Family::Retries => &["cronstable_job_retries_total"],
        Family::PermanentFailures => &["cronstable_job_permanent_failures_total"],
        Family::StartFailures => &["cronstable_job_start_failures_total"],
        Family::CpuSeconds => &["cronstable_job_cpu_seconds_total"],
        Family::LastSuccess => &["cronstable_job_last_success_timestamp_seconds"],
        Family::LastFailure => &["cronstable_job_last_failure_timestamp_seconds"],
        Family::PeakRss => &["cronstable_job_peak_rss_bytes"],
        Family::Info => &["cronstable_job_info"],
        Family::Enabled => &["cronstable_job_enabled"],
        Family::Running => &["cronstable_job_running"],
        Family::NextRun => &["cronstable_job_next_run_timestamp_seconds"],
        Family::LastRun => &["cronstable_job_last_run_timestamp_seconds"],
        Family::LastRunDuration => &["cronstable_job_last_run_duration_seconds"],
        Family::LastRunExitCode => &["cronstable_job_last_run_exit_code"],
        Family::LastRunSuccess => &["cronstable_job_last_run_success"],
        Family::LastRunCpu => &["cronstable_job_last_run_cpu_seconds"],
        Family::LastRunMaxRss => &["cronstable_job_last_run_max_rss_bytes"],
        Family::Paused => &["cronstable_job_paused"],
    }
}

/// How many lines of each of [`sample_names`]`(family)` (same order)
/// `row` has: what [`Writer`] would write, counted without writing it.
pub(super) fn sample_counts(family: Family, row: &JobRow) -> [usize; 3] {
    let counters = &row.counters;
    match family {
        Family::Runs => [OUTCOMES.len(), 0, 0],
        Family::Duration => {
            let h = &counters.duration;
            [h.bounds.len().min(h.counts.len()) + 1, 1, 1]
        }
        Family::Retries | Family::PermanentFailures | Family::StartFailures | Family::Info => {
            [1, 0, 0]
        }
        Family::CpuSeconds => [if counters.cpu_count > 0 { 2 } else { 0 }, 0, 0],
        _ => [usize::from(gauge(family, row).is_some()), 0, 0],
    }
}

impl Writer {
    /// Appends one job's lines of `family` to `out`, as an encoding
    /// writes them.
    pub(super) fn write_lines(&mut self, out: &mut String, family: Family, row: &JobRow) {
        let job = escape(&row.name);
        self.write_job(out, family, row, &job);
    }
}

/// Where each job's lines of each family went: for family `f` of `n`
/// jobs, `starts[f * (n + 1) + j]` is where job `j`'s lines begin, and
/// `starts[f * (n + 1) + n]` where the family's lines end, so job `j`'s
/// lines are `starts[i]..starts[i + 1]`.
pub(super) type Starts = Vec<usize>;

/// Lines of jobs of an earlier encoding that can be copied: the text
/// and its [`Starts`], for `jobs` jobs.
pub(super) struct Earlier<'a> {
    pub(super) text: &'a str,
    pub(super) starts: &'a [usize],
    pub(super) jobs: usize,
}

/// Writes the per-job families of `rows` to `out`, each job's lines
/// copied from `earlier` where `reuse[i]` names the earlier job `i` is
/// (with an identical row), written afresh otherwise. Returns the
/// [`Starts`] of what it wrote (offsets into `out`).
pub(super) fn write_families(
    out: &mut String,
    format: Format,
    rows: &[Arc<JobRow>],
    reuse: &[Option<usize>],
    earlier: Option<&Earlier<'_>>,
) -> Starts {
    let n = rows.len();
    let mut writer = Writer::new(format);
    // Escaped once a job, for the jobs written afresh only.
    let names: Vec<Option<Cow<'_, str>>> = rows
        .iter()
        .zip(reuse)
        .map(|(row, reused)| match (reused, earlier) {
            (Some(_), Some(_)) => None,
            _ => Some(escape(&row.name)),
        })
        .collect();
    let mut starts = vec![0; FAMILY_COUNT * (n + 1)];
    for (f, family) in FAMILIES.into_iter().enumerate() {
        family.write_header(out, format);
        let base = f * (n + 1);
        let mut i = 0;
        while i < n {
            starts[base + i] = out.len();
            if let (Some(from), Some(earlier)) = (reuse[i], earlier) {
                // A run of jobs that were consecutive before too is one
                // copy.
                let old = |j: usize| earlier.starts[f * (earlier.jobs + 1) + j];
                let mut run = 1;
                while i + run < n && reuse[i + run] == Some(from + run) {
                    starts[base + i + run] = out.len() + (old(from + run) - old(from));
                    run += 1;
                }
                out.push_str(&earlier.text[old(from)..old(from + run)]);
                i += run;
            } else {
                let name = names[i].as_deref().unwrap_or_default();
                writer.write_job(out, family, &rows[i], name);
                i += 1;
            }
        }
        starts[base + n] = out.len();
    }
    starts
}
