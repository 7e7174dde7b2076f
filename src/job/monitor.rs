//! Resource monitoring's arithmetic, with no I/O: how readings of a run's
//! processes fold into its CPU and memory totals, the live readings, the
//! self-downsampling chart series, and the `resources` record in the
//! shapes the API, the ledger and the reporters use. The sampler
//! (`super::sampler`) takes the readings and feeds them in.

use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The most points a series read back from a ledger record may bring: a
/// foreign or hand-edited record cannot balloon the history.
pub const MAX_SERIES_POINTS: usize = 4096;

/// One chart point: when (Unix seconds), CPU% since the previous sample
/// (over 100 with several cores busy) and the resident set in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Unix time of the (last) sample in the point.
    pub t: f64,
    /// CPU percent (mean over the samples in the point).
    pub cpu_percent: f64,
    /// Resident bytes (peak over the samples in the point).
    pub rss: u64,
}

impl Point {
    /// `[t, cpu_percent, rss_bytes]`, as every surface writes a point.
    pub fn to_json(self) -> Value {
        json!([self.t, self.cpu_percent, self.rss])
    }
}

/// Rounds to two decimals: the points are for charts, and two decimals
/// keep a long series' JSON short.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A bounded chart series that downsamples itself. Samples go into
/// buckets of `stride` samples (1 at first); a full bucket becomes one
/// point (its last time, its mean CPU%, its peak RSS: an averaged RSS
/// would hide the spikes memory is watched for). When the points reach
/// the cap, neighbours merge pairwise the same way and the stride
/// doubles, so a run of any length keeps at most `cap` points of equal
/// width.
#[derive(Debug, Clone)]
pub struct SeriesRecorder {
    cap: usize,
    points: Vec<Point>,
    stride: usize,
    /// The bucket being filled: samples, CPU% sum, peak RSS, last time.
    count: usize,
    cpu_sum: f64,
    rss_max: u64,
    last_t: f64,
}

impl SeriesRecorder {
    /// A recorder keeping at most `cap` points (at least 2).
    pub fn new(cap: usize) -> SeriesRecorder {
        SeriesRecorder {
            cap: cap.max(2),
            points: Vec::new(),
            stride: 1,
            count: 0,
            cpu_sum: 0.0,
            rss_max: 0,
            last_t: 0.0,
        }
    }

    fn bucket(&self) -> Point {
        Point {
            t: round2(self.last_t),
            cpu_percent: round2(self.cpu_sum / self.count.max(1) as f64),
            rss: self.rss_max,
        }
    }

    /// Adds one sample.
    pub fn add(&mut self, t: f64, cpu_percent: f64, rss: u64) {
        self.count += 1;
        self.cpu_sum += cpu_percent;
        self.rss_max = self.rss_max.max(rss);
        self.last_t = t;
        if self.count < self.stride {
            return;
        }
        self.points.push(self.bucket());
        self.count = 0;
        self.cpu_sum = 0.0;
        self.rss_max = 0;
        if self.points.len() >= self.cap {
            self.compact();
        }
    }

    /// Merges neighbouring points and doubles the stride.
    fn compact(&mut self) {
        let mut merged = Vec::with_capacity(self.points.len() / 2 + 1);
        for pair in self.points.chunks(2) {
            match pair {
                [a, b] => merged.push(Point {
                    t: b.t,
                    cpu_percent: round2((a.cpu_percent + b.cpu_percent) / 2.0),
                    rss: a.rss.max(b.rss),
                }),
                // An odd newest point stays as it is.
                [a] => merged.push(*a),
                _ => {}
            }
        }
        self.points = merged;
        self.stride *= 2;
    }

    /// The points, oldest first, with the bucket being filled as a last
    /// provisional point (a live chart shows the newest reading rather
    /// than lagging a whole, possibly wide, bucket behind).
    pub fn points(&self) -> Vec<Point> {
        let mut out = self.points.clone();
        if self.count > 0 {
            out.push(self.bucket());
        }
        out
    }
}

/// A finished run's sampled usage: the `resources` record.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceUsage {
    /// User-mode CPU seconds of the run's processes.
    pub cpu_user_seconds: f64,
    /// Kernel-mode CPU seconds.
    pub cpu_system_seconds: f64,
    /// Highest resident-set sum seen in a sample, bytes.
    pub max_rss_bytes: u64,
    /// How many samples read the run's processes.
    pub samples: u64,
    /// The chart series (None with `history: 0` or nothing recorded).
    pub series: Option<Vec<Point>>,
}

impl serde::Serialize for ResourceUsage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json(true).serialize(serializer)
    }
}

impl ResourceUsage {
    /// User plus system CPU seconds.
    pub fn cpu_total_seconds(&self) -> f64 {
        self.cpu_user_seconds + self.cpu_system_seconds
    }

    /// The record as JSON: the summary (`cpu_user_seconds`,
    /// `cpu_system_seconds`, `cpu_total_seconds`, `max_rss_bytes`,
    /// `samples`), plus `series` when `with_series` and there is one (the
    /// ledger and `GET /jobs/{name}/resources` carry it; the polled
    /// payloads do not).
    pub fn to_json(&self, with_series: bool) -> Value {
        let mut data = json!({
            "cpu_user_seconds": self.cpu_user_seconds,
            "cpu_system_seconds": self.cpu_system_seconds,
            "cpu_total_seconds": self.cpu_total_seconds(),
            "max_rss_bytes": self.max_rss_bytes,
            "samples": self.samples,
        });
        if let (true, Some(series)) = (with_series, &self.series) {
            if !series.is_empty() {
                data["series"] = Value::Array(series.iter().map(|p| p.to_json()).collect());
            }
        }
        data
    }

    /// A record read back from JSON (a ledger row, ours or the
    /// original's), None when it is not an object with finite CPU numbers
    /// and a byte count. `samples` defaults to 0; a malformed series is
    /// dropped point by point and capped at [`MAX_SERIES_POINTS`].
    pub fn from_json(data: &Value) -> Option<ResourceUsage> {
        let data = data.as_object()?;
        let seconds = |key: &str| data.get(key)?.as_f64().filter(|v| v.is_finite());
        let max_rss_bytes = match data.get("max_rss_bytes")? {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            })?,
            _ => return None,
        };
        Some(ResourceUsage {
            cpu_user_seconds: seconds("cpu_user_seconds")?,
            cpu_system_seconds: seconds("cpu_system_seconds")?,
            max_rss_bytes,
            samples: data.get("samples").and_then(Value::as_u64).unwrap_or(0),
            series: data.get("series").and_then(parse_series),
        })
    }
}

/// A `series` from a record: `[t, cpu%, rss]` triples of finite numbers,
/// others dropped; None when nothing usable is left.
fn parse_series(raw: &Value) -> Option<Vec<Point>> {
    let points: Vec<Point> = raw
        .as_array()?
        .iter()
        .take(MAX_SERIES_POINTS)
        .filter_map(|entry| {
            let [t, cpu, rss] = entry.as_array()?.as_slice() else {
                return None;
            };
            let (t, cpu, rss) = (t.as_f64()?, cpu.as_f64()?, rss.as_f64()?);
            (t.is_finite() && cpu.is_finite() && rss.is_finite()).then_some(Point {
                t,
                cpu_percent: cpu.max(0.0),
                rss: rss.max(0.0) as u64,
            })
        })
        .collect();
    (!points.is_empty()).then_some(points)
}

/// A running instance's readings now: `cpu_seconds` so far, `cpu_percent`
/// since the previous sample, `rss_bytes` of its processes now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveReading {
    /// Cumulative CPU seconds.
    pub cpu_seconds: f64,
    /// CPU percent since the previous sample.
    pub cpu_percent: f64,
    /// Resident bytes now.
    pub rss_bytes: u64,
}

impl LiveReading {
    /// `{cpu_seconds, cpu_percent, rss_bytes}`.
    pub fn to_json(self) -> Value {
        json!({
            "cpu_seconds": self.cpu_seconds,
            "cpu_percent": self.cpu_percent,
            "rss_bytes": self.rss_bytes,
        })
    }
}

/// The live readings of a job's running instances added up:
/// `running_resources` of `GET /jobs`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveTotal {
    /// Summed CPU percent.
    pub cpu_percent: f64,
    /// Summed CPU seconds.
    pub cpu_seconds: f64,
    /// Summed resident bytes.
    pub rss_bytes: u64,
    /// Instances with a reading.
    pub instances: usize,
}

impl LiveTotal {
    /// The sum of `readings`, None when there are none.
    pub fn of(readings: impl IntoIterator<Item = LiveReading>) -> Option<LiveTotal> {
        readings.into_iter().fold(None, |total, r| {
            let t = total.unwrap_or(LiveTotal {
                cpu_percent: 0.0,
                cpu_seconds: 0.0,
                rss_bytes: 0,
                instances: 0,
            });
            Some(LiveTotal {
                cpu_percent: t.cpu_percent + r.cpu_percent,
                cpu_seconds: t.cpu_seconds + r.cpu_seconds,
                rss_bytes: t.rss_bytes.saturating_add(r.rss_bytes),
                instances: t.instances + 1,
            })
        })
    }
}

/// One process of a run as one sample read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemberReading {
    /// Process id.
    pub pid: u32,
    /// Its start time (any unit): a reused pid is another process.
    pub start: u64,
    /// Parent process id.
    pub ppid: u32,
    /// Its own (user, system) CPU seconds.
    pub own: (f64, f64),
    /// (user, system) CPU seconds of the children it has waited for.
    pub children: (f64, f64),
    /// Resident bytes.
    pub rss: u64,
}

/// What one sample of a run read.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    /// The run's processes, one reading each (the `/proc` source).
    Members(Vec<MemberReading>),
    /// The processes listed in the run's own cgroup, with the cgroup's
    /// CPU totals where the hierarchy keeps them: the members give the
    /// resident memory, and the totals (which never miss a process
    /// reaped between two samples) floor the CPU counted from them.
    Contained {
        /// The cgroup's processes, read as for [`Reading::Members`].
        members: Vec<MemberReading>,
        /// (user, system) CPU seconds of everything that ran there.
        cpu: Option<(f64, f64)>,
    },
}

/// What a member last contributed: its parent and its CPU counters.
#[derive(Debug, Clone, Copy)]
struct Member {
    ppid: u32,
    cpu: (f64, f64),
}

/// One run's totals, folded from its readings.
///
/// CPU is counted per process as its own time plus the time of the
/// children it has waited for (the kernel adds a child's whole time to its
/// parent's when the parent reaps it). A process that disappears is
/// banked at its last reading, unless its parent is still one of the
/// run's processes: then its time, to its very end, is already in (or
/// just arrived in) that parent's children counters, and banking it
/// would count it twice. So a child that starts and exits between two
/// samples still counts, through its parent; what escapes is the tail of
/// a process reaped outside the run (the run's first process, which the
/// daemon reaps, and orphans) after its last sample. Totals never go
/// backwards.
#[derive(Debug, Clone)]
pub struct Account {
    members: HashMap<(u32, u64), Member>,
    banked: (f64, f64),
    cpu: (f64, f64),
    max_rss: u64,
    samples: u64,
    live: Option<LiveReading>,
    /// CPU total and the monotonic instant (seconds) of the last sample.
    previous: Option<(f64, f64)>,
    recorder: Option<SeriesRecorder>,
}

impl Account {
    /// An empty account keeping `history` chart points (0: none).
    pub fn new(history: usize) -> Account {
        Account {
            members: HashMap::new(),
            banked: (0.0, 0.0),
            cpu: (0.0, 0.0),
            max_rss: 0,
            samples: 0,
            live: None,
            previous: None,
            recorder: (history > 0).then(|| SeriesRecorder::new(history)),
        }
    }

    /// Folds one sample taken at `mono` (monotonic seconds) and `wall`
    /// (Unix seconds). A reading that found no process counts no sample.
    pub fn fold(&mut self, reading: &Reading, mono: f64, wall: f64) {
        let (user, system, rss) = match reading {
            Reading::Members(members) => match self.fold_members(members) {
                Some(totals) => totals,
                None => return,
            },
            Reading::Contained { members, cpu } => match self.fold_members(members) {
                Some((user, system, rss)) => {
                    let (whole_user, whole_system) = cpu.unwrap_or((0.0, 0.0));
                    (user.max(whole_user), system.max(whole_system), rss)
                }
                None => return,
            },
        };
        if !(user.is_finite() && system.is_finite()) {
            return;
        }
        self.samples += 1;
        self.cpu = (self.cpu.0.max(user), self.cpu.1.max(system));
        self.max_rss = self.max_rss.max(rss);
        let total = self.cpu.0 + self.cpu.1;
        let cpu_percent = match self.previous {
            Some((before, at)) if mono > at => ((total - before) / (mono - at) * 100.0).max(0.0),
            Some(_) => self.live.map_or(0.0, |l| l.cpu_percent),
            None => 0.0,
        };
        self.previous = Some((total, mono));
        self.live = Some(LiveReading {
            cpu_seconds: total,
            cpu_percent,
            rss_bytes: rss,
        });
        if let Some(recorder) = &mut self.recorder {
            recorder.add(wall, cpu_percent, rss);
        }
    }

    /// The (user, system, rss) totals of one reading of the run's
    /// processes, banking the ones gone since the last; None when it
    /// found no process.
    fn fold_members(&mut self, members: &[MemberReading]) -> Option<(f64, f64, u64)> {
        self.bank_departed(members);
        if members.is_empty() {
            return None;
        }
        let (mut user, mut system) = self.banked;
        let mut rss = 0u64;
        for m in members {
            user += m.own.0 + m.children.0;
            system += m.own.1 + m.children.1;
            rss = rss.saturating_add(m.rss);
        }
        Some((user, system, rss))
    }

    /// Banks the members missing from `now` whose time did not pass to a
    /// parent still in the run, and makes `now` the member set.
    fn bank_departed(&mut self, now: &[MemberReading]) {
        let present: std::collections::HashSet<u32> = now.iter().map(|m| m.pid).collect();
        let mut next = HashMap::with_capacity(now.len());
        for m in now {
            let cpu = (m.own.0 + m.children.0, m.own.1 + m.children.1);
            next.insert((m.pid, m.start), Member { ppid: m.ppid, cpu });
        }
        for (key, gone) in &self.members {
            if next.contains_key(key) || present.contains(&gone.ppid) {
                continue;
            }
            self.banked.0 += gone.cpu.0;
            self.banked.1 += gone.cpu.1;
        }
        self.members = next;
    }

    /// The live readings, None before the first sample.
    pub fn live(&self) -> Option<LiveReading> {
        self.live
    }

    /// The series so far, None when none is kept or nothing was sampled.
    pub fn series(&self) -> Option<Vec<Point>> {
        let points = self.recorder.as_ref()?.points();
        (!points.is_empty()).then_some(points)
    }

    /// The processes the last sample read, as (pid, start) pairs.
    pub fn members(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.members.keys().copied()
    }

    /// The run's usage, None when no sample read anything.
    pub fn usage(&self) -> Option<ResourceUsage> {
        (self.samples > 0).then(|| ResourceUsage {
            cpu_user_seconds: self.cpu.0,
            cpu_system_seconds: self.cpu.1,
            max_rss_bytes: self.max_rss,
            samples: self.samples,
            series: self.series(),
        })
    }
}

/// The CPU and RSS aggregates of `GET /jobs/{name}/runs`' `stats` over
/// the monitored runs in `usages` (oldest first) and the usage of the
/// newest run by finish time (`last`): `avg_cpu_seconds`,
/// `max_cpu_seconds`, `last_cpu_seconds`, `avg_rss_bytes`,
/// `max_rss_bytes`, `last_rss_bytes`, each null without data.
pub fn run_stats<'a>(
    usages: impl Iterator<Item = &'a ResourceUsage>,
    last: Option<&ResourceUsage>,
) -> Map<String, Value> {
    let (mut cpu, mut rss): (Vec<f64>, Vec<u64>) = (Vec::new(), Vec::new());
    for u in usages {
        cpu.push(u.cpu_total_seconds());
        rss.push(u.max_rss_bytes);
    }
    let avg = |sum: f64, n: usize| (n > 0).then(|| sum / n as f64);
    let mut out = Map::new();
    out.insert(
        "avg_cpu_seconds".into(),
        json!(avg(cpu.iter().sum(), cpu.len())),
    );
    out.insert(
        "max_cpu_seconds".into(),
        json!(cpu.iter().copied().reduce(f64::max)),
    );
    out.insert(
        "last_cpu_seconds".into(),
        json!(last.map(ResourceUsage::cpu_total_seconds)),
    );
    let rss_sum: f64 = rss.iter().map(|r| *r as f64).sum();
    out.insert("avg_rss_bytes".into(), json!(avg(rss_sum, rss.len())));
    out.insert("max_rss_bytes".into(), json!(rss.iter().copied().max()));
    out.insert(
        "last_rss_bytes".into(),
        json!(last.map(|u| u.max_rss_bytes)),
    );
    out
}

#[cfg(test)]
mod tests;
