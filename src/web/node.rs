//! This node's CPU and memory for `GET /node`, and the background ring of
//! samples behind `GET /node/history`. Raw counters come from
//! [`platform::node_reading`]; percentages are deltas between two readings.

use crate::config::model::WebConfig;
use crate::platform::{self, NodeReading};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Readers within this long of each other share one snapshot, so two
/// close requests do not shrink each other's CPU measurement window.
const SNAPSHOT_TTL: Duration = Duration::from_secs(1);

/// `web.nodeHistory` defaults: a point every 5 seconds, an hour kept.
pub const DEFAULT_INTERVAL: f64 = 5.0;
/// Default ring size (an hour at the default interval).
pub const DEFAULT_POINTS: usize = 720;

/// The resolved `web.nodeHistory` settings; None when sampling is off.
pub fn history_settings(web: &WebConfig) -> Option<(f64, usize)> {
    let cfg = web.node_history.clone().unwrap_or_default();
    if cfg.enabled == Some(false) {
        return None;
    }
    let interval = cfg.interval.unwrap_or(DEFAULT_INTERVAL).max(1.0);
    let points = cfg
        .points
        .and_then(|p| usize::try_from(p).ok())
        .unwrap_or(DEFAULT_POINTS)
        .max(1);
    Some((interval, points))
}

#[derive(Debug, Default)]
struct Readings {
    previous: Option<(Instant, NodeReading)>,
    cached: Option<(Instant, Option<Value>)>,
}

#[derive(Debug)]
struct Ring {
    interval: f64,
    capacity: usize,
    points: VecDeque<[f64; 3]>,
}

/// One per daemon: live snapshots plus the retained history ring (kept
/// across web restarts, so a reload does not blank the chart).
#[derive(Debug, Default)]
pub struct NodeSampler {
    readings: Mutex<Readings>,
    ring: Mutex<Option<Ring>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is a single assignment or push, so
    // a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The `resources` object from two readings `elapsed` apart (None for
/// the first: CPU fields then read 0).
fn resources(now: &NodeReading, before: Option<(&NodeReading, Duration)>) -> Value {
    let mut cpu_percent = 0.0;
    let mut proc_cpu_percent = 0.0;
    let mut cpu_count = now.cpu_count as f64;
    if let Some((prev, elapsed)) = before {
        let busy = now.host_cpu.0.saturating_sub(prev.host_cpu.0) as f64;
        let total = now.host_cpu.1.saturating_sub(prev.host_cpu.1) as f64;
        if total > 0.0 {
            cpu_percent = round1((busy * 100.0 / total).min(100.0));
        }
        if let (Some(a), Some(b), true) = (
            now.proc_cpu_seconds,
            prev.proc_cpu_seconds,
            elapsed.as_secs_f64() > 0.0,
        ) {
            // One process across several cores may exceed 100.
            proc_cpu_percent = round1(((a - b).max(0.0)) * 100.0 / elapsed.as_secs_f64());
        }
    }
    let (mut mem_used, mut mem_total) = now.host_mem;
    // Under a cgroup v2 limit the slice's own numbers replace the host's,
    // memory and CPU independently.
    if let Some((used, limit)) = now.cgroup_mem {
        mem_used = used;
        mem_total = limit;
    }
    if let Some((quota, usage)) = now.cgroup_cpu {
        cpu_count = quota.ceil().max(1.0);
        cpu_percent = 0.0;
        if let Some((Some((_, before_usage)), elapsed)) =
            before.map(|(prev, elapsed)| (prev.cgroup_cpu, elapsed))
        {
            let secs = elapsed.as_secs_f64();
            if secs > 0.0 && quota > 0.0 {
                let delta = (usage - before_usage).max(0.0);
                cpu_percent = round1((delta * 100.0 / secs / quota).min(100.0));
            }
        }
    }
    let mem_percent = if mem_total > 0 {
        round1((mem_used as f64 * 100.0 / mem_total as f64).min(100.0))
    } else {
        0.0
    };
    let mut value = json!({
        "cpu_percent": cpu_percent,
        "cpu_count": cpu_count as u64,
        "mem_percent": mem_percent,
        "mem_used_bytes": mem_used,
        "mem_total_bytes": mem_total,
    });
    if let (Some(rss), Some(map)) = (now.proc_rss_bytes, value.as_object_mut()) {
        map.insert("proc_rss_bytes".into(), json!(rss));
        map.insert("proc_cpu_percent".into(), json!(proc_cpu_percent));
    }
    value
}

impl NodeSampler {
    /// A sampler primed with a first reading, so the first snapshot
    /// already measures CPU over a real window.
    pub fn new() -> Self {
        let sampler = NodeSampler::default();
        lock(&sampler.readings).previous = platform::node_reading().map(|r| (Instant::now(), r));
        sampler
    }

    /// The `resources` object of `GET /node`, or None when this platform
    /// cannot be read.
    pub fn snapshot(&self) -> Option<Value> {
        let now = Instant::now();
        let mut readings = lock(&self.readings);
        if let Some((at, value)) = &readings.cached {
            if now.duration_since(*at) < SNAPSHOT_TTL {
                return value.clone();
            }
        }
        let value = platform::node_reading().map(|reading| {
            let before = readings
                .previous
                .as_ref()
                .map(|(at, prev)| (prev, now.duration_since(*at)));
            let value = resources(&reading, before);
            readings.previous = Some((now, reading));
            value
        });
        readings.cached = Some((now, value.clone()));
        value
    }

    /// The `GET /node/history` fields other than `node_name`.
    pub fn history(&self) -> Value {
        match &*lock(&self.ring) {
            Some(ring) => json!({
                "enabled": true,
                "interval": ring.interval,
                "points": ring.points.iter().collect::<Vec<_>>(),
            }),
            None => json!({"enabled": false, "interval": null, "points": []}),
        }
    }

    /// Starts background sampling with these settings (None: off, and
    /// the ring is dropped). Points already retained are kept, up to the
    /// new capacity. The caller aborts the returned task on a restart.
    pub fn start_history(
        self: &Arc<Self>,
        settings: Option<(f64, usize)>,
    ) -> Option<JoinHandle<()>> {
        let mut ring = lock(&self.ring);
        let Some((interval, capacity)) = settings else {
            *ring = None;
            return None;
        };
        if platform::node_reading().is_none() {
            // Nothing can be sampled here: report the sampler as off.
            *ring = None;
            return None;
        }
        let mut points = ring.take().map(|r| r.points).unwrap_or_default();
        while points.len() > capacity {
            points.pop_front();
        }
        *ring = Some(Ring {
            interval,
            capacity,
            points,
        });
        drop(ring);
        let sampler = Arc::clone(self);
        Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(interval));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                sampler.sample_once();
            }
        }))
    }

    /// Appends one `[t, cpu%, mem%]` point to the ring.
    fn sample_once(&self) {
        let Some(snap) = self.snapshot() else {
            return;
        };
        let field = |key: &str| round2(snap.get(key).and_then(Value::as_f64).unwrap_or(0.0));
        let t = round2(chrono::Utc::now().timestamp_micros() as f64 / 1e6);
        let point = [t, field("cpu_percent"), field("mem_percent")];
        if let Some(ring) = lock(&self.ring).as_mut() {
            if ring.points.len() >= ring.capacity {
                ring.points.pop_front();
            }
            ring.points.push_back(point);
        }
    }
}

/// This node's name: the host name (this version has no cluster).
pub fn node_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading() -> NodeReading {
        NodeReading {
            host_cpu: (100, 1000),
            cpu_count: 4,
            host_mem: (300, 1000),
            proc_cpu_seconds: Some(1.0),
            proc_rss_bytes: Some(4096),
            cgroup_mem: None,
            cgroup_cpu: None,
        }
    }

    #[test]
    fn host_numbers_from_two_readings() {
        let before = reading();
        let mut now = reading();
        now.host_cpu = (150, 1200);
        now.proc_cpu_seconds = Some(1.5);
        let v = resources(&now, Some((&before, Duration::from_secs(2))));
        assert_eq!(v["cpu_percent"], json!(25.0));
        assert_eq!(v["proc_cpu_percent"], json!(25.0));
        assert_eq!(v["mem_percent"], json!(30.0));
        assert_eq!(v["cpu_count"], json!(4));
        assert_eq!(v["proc_rss_bytes"], json!(4096));
    }

    #[test]
    fn the_first_reading_primes_cpu_at_zero() {
        let v = resources(&reading(), None);
        assert_eq!(v["cpu_percent"], json!(0.0));
    }

    #[test]
    fn a_cgroup_limit_replaces_the_host_numbers() {
        let mut before = reading();
        before.cgroup_cpu = Some((1.5, 10.0));
        let mut now = reading();
        now.cgroup_mem = Some((50, 200));
        now.cgroup_cpu = Some((1.5, 10.75));
        let v = resources(&now, Some((&before, Duration::from_secs(1))));
        assert_eq!(v["mem_total_bytes"], json!(200));
        assert_eq!(v["mem_percent"], json!(25.0));
        assert_eq!(v["cpu_count"], json!(2));
        assert_eq!(v["cpu_percent"], json!(50.0));
    }

    #[test]
    fn history_is_off_when_disabled() {
        let sampler = Arc::new(NodeSampler::default());
        assert!(sampler.start_history(None).is_none());
        assert_eq!(sampler.history()["enabled"], json!(false));
    }
}
