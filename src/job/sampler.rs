//! The resource sampler: one thread for the whole daemon that wakes when
//! the earliest monitored run is due, reads `/proc` once for every run due
//! at that instant, and folds each run's processes into its [`Account`].
//!
//! Samples fall on a grid: every run with interval `i` is due at the
//! multiples of `i` since the sampler's clock began, whenever it started,
//! so all the runs of one interval share each pass over `/proc` (runs
//! that start a few milliseconds apart would otherwise each cost a pass
//! of their own). A run's first reading, as it starts, reads its first
//! process alone: one small file, not a pass.
//!
//! A run is watched through a [`Source`]. A run with a cgroup of its own
//! (resource limits) is read from it: the cgroup lists every process of
//! the run, one that called `setsid` included, and (v2, or a v1
//! `cpu,cpuacct` hierarchy) keeps CPU totals that also count processes
//! that lived and were reaped between two samples. Such runs cost no pass
//! over `/proc`. Any other run is read through its session: the run's
//! first process leads a session of its own (session id = its pid) and
//! every process it starts stays in it unless it calls `setsid`.

use super::monitor::{Account, LiveReading, MemberReading, Point, Reading, ResourceUsage};
use crate::platform::{self, CgroupPlace, ProcessStat};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where a run's usage is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The processes of session `sid` (the run's first process's pid),
    /// read from `/proc`.
    Session(u32),
    /// The processes of the run's own cgroup.
    Cgroup(Arc<CgroupPlace>),
}

/// One monitored run: its source, its account and when it is next due.
#[derive(Debug)]
pub struct Monitor {
    source: Source,
    interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    account: Account,
    /// The next grid instant to sample at; None until the first reading.
    due: Option<Instant>,
    stopped: bool,
}

/// The longest wait between samples. The config accepts any interval
/// from 0.1 up, infinity included; beyond this, a run is in effect read
/// at its start and at its end only.
const FAR: Duration = Duration::from_secs(86_400 * 365);

impl Monitor {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while folding leaves plain numbers behind: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live readings, None before the first sample.
    pub fn live(&self) -> Option<LiveReading> {
        self.lock().account.live()
    }

    /// The run-so-far chart series, None when none is kept or nothing
    /// was sampled yet.
    pub fn series(&self) -> Option<Vec<Point>> {
        self.lock().account.series()
    }

    /// Stops sampling, takes a last reading of the processes the run
    /// still has, and returns its usage (None when nothing was ever
    /// read). Idempotent.
    pub fn finish(self: &Arc<Self>) -> Option<ResourceUsage> {
        ticker().forget(self);
        let mut state = self.lock();
        if !state.stopped {
            state.stopped = true;
            match &self.source {
                // Only the processes already known are read again: a
                // whole pass over /proc for each ending run would cost
                // more than the samples themselves. A process started
                // since the last sample is missed, as it would be between
                // samples anyway.
                Source::Session(sid) => {
                    let known: Vec<(u32, u64)> = state.account.members().collect();
                    let still: Vec<ProcessStat> = known
                        .into_iter()
                        .filter_map(|(pid, start)| {
                            platform::process_stat(pid)
                                .filter(|p| p.start_ticks == start && p.session == *sid)
                        })
                        .collect();
                    fold(&mut state.account, Reading::Members(readings(&still)));
                }
                // The cgroup is still there (it is released after this):
                // its listing and totals are one small read.
                Source::Cgroup(place) => {
                    if let Some(reading) = contained(place) {
                        fold(&mut state.account, reading);
                    }
                }
            }
        }
        state.account.usage()
    }

    /// Folds this sample of the run (its session from one pass over the
    /// process table, or its cgroup) and schedules the next.
    fn sample(&self, table: &HashMap<u32, Vec<ProcessStat>>, now: Instant) {
        let reading = match &self.source {
            Source::Session(sid) => Some(Reading::Members(readings(
                table.get(sid).map(Vec::as_slice).unwrap_or_default(),
            ))),
            Source::Cgroup(place) => contained(place),
        };
        self.fold_and_schedule(reading, now);
    }

    /// The first reading, as the run starts: a session's first process
    /// alone (a process it starts meanwhile is seen at the next pass, and
    /// its time reaches the first process's count of reaped children if
    /// it ends before that), or the whole cgroup.
    fn first_reading(&self, now: Instant) {
        let reading = match &self.source {
            Source::Session(sid) => {
                let root: Vec<ProcessStat> = platform::process_stat(*sid)
                    .filter(|p| p.session == *sid)
                    .into_iter()
                    .collect();
                Some(Reading::Members(readings(&root)))
            }
            Source::Cgroup(place) => contained(place),
        };
        self.fold_and_schedule(reading, now);
    }

    /// Folds `reading` (None: the cgroup did not read this time) and
    /// schedules the next sample.
    fn fold_and_schedule(&self, reading: Option<Reading>, now: Instant) {
        let mut state = self.lock();
        if state.stopped {
            return;
        }
        if let Some(reading) = reading {
            fold(&mut state.account, reading);
        }
        state.due = Some(next_tick(now, self.interval));
    }

    /// Whether the run waits for its first reading.
    fn fresh(&self) -> bool {
        let state = self.lock();
        state.due.is_none() && !state.stopped
    }
}

/// The first grid instant after `now` for `interval`: the next multiple
/// of `interval` since the sampler's clock began.
fn next_tick(now: Instant, interval: Duration) -> Instant {
    let origin = clock_origin();
    let step = interval.as_secs_f64();
    let elapsed = now.saturating_duration_since(origin).as_secs_f64();
    let ticks = (elapsed / step).floor() + 1.0;
    Duration::try_from_secs_f64(ticks * step)
        .ok()
        .and_then(|offset| origin.checked_add(offset))
        .unwrap_or_else(|| now.checked_add(FAR).unwrap_or(now))
}

/// The instant the sampler's clock began (its first use).
fn clock_origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The account's view of the processes one sample read.
fn readings(processes: &[ProcessStat]) -> Vec<MemberReading> {
    processes
        .iter()
        .map(|p| MemberReading {
            pid: p.pid,
            start: p.start_ticks,
            ppid: p.ppid,
            own: (p.user, p.system),
            children: (p.children_user, p.children_system),
            rss: p.rss_bytes,
        })
        .collect()
}

/// One reading of a run's cgroup: its processes, each read from `/proc`,
/// and its CPU totals. None when the cgroup does not list.
fn contained(place: &CgroupPlace) -> Option<Reading> {
    let usage = place.usage()?;
    let processes: Vec<ProcessStat> = usage
        .pids
        .iter()
        .filter_map(|pid| platform::process_stat(*pid))
        .collect();
    Some(Reading::Contained {
        members: readings(&processes),
        cpu: usage.cpu,
    })
}

/// Folds one sample's reading into `account`, stamped now.
fn fold(account: &mut Account, reading: Reading) {
    let mono = monotonic_seconds();
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    account.fold(&reading, mono, wall);
}

/// Seconds on a monotonic clock (since the sampler's clock began).
fn monotonic_seconds() -> f64 {
    clock_origin().elapsed().as_secs_f64()
}

/// Starts sampling a run from `source` every `interval` seconds, keeping
/// `history` chart points; the first sample is taken at once.
pub fn watch(source: Source, interval: f64, history: usize) -> Arc<Monitor> {
    // At least a millisecond (the config's floor is 0.1 s), at most FAR.
    let interval = Duration::try_from_secs_f64(interval)
        .unwrap_or(FAR)
        .clamp(Duration::from_millis(1), FAR);
    let monitor = Arc::new(Monitor {
        source,
        interval,
        state: Mutex::new(State {
            account: Account::new(history),
            due: None,
            stopped: false,
        }),
    });
    ticker().add(&monitor);
    monitor
}

/// The sampler of a run whose command started as `pid`, when the job
/// has `monitorResources` on (`monitor`): from the run's cgroup when it
/// has one that lists (`cgroup`), else from its session.
pub fn for_run(
    monitor: Option<&crate::config::job::Monitor>,
    pid: Option<u32>,
    cgroup: Option<&Arc<CgroupPlace>>,
) -> Option<Arc<Monitor>> {
    let (m, pid) = (monitor?, pid?);
    let source = match cgroup {
        Some(place) if place.usage().is_some() => Source::Cgroup(Arc::clone(place)),
        _ => Source::Session(pid),
    };
    Some(watch(source, m.interval, m.history))
}

/// The daemon's one sampling thread and the runs it watches. It holds
/// them weakly: a run whose handle and task are gone (never finished, as
/// when its task was aborted) drops out by itself.
struct Ticker {
    runs: Mutex<Vec<Weak<Monitor>>>,
    wake: Condvar,
}

fn ticker() -> &'static Ticker {
    static TICKER: OnceLock<&'static Ticker> = OnceLock::new();
    TICKER.get_or_init(|| {
        let ticker: &'static Ticker = Box::leak(Box::new(Ticker {
            runs: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        }));
        let spawned = std::thread::Builder::new()
            .name("cronstable-sampler".into())
            .spawn(move || ticker.run());
        if let Err(err) = spawned {
            // Monitoring is observability only: runs go on unsampled.
            tracing::warn!(
                target: "cronstable::job",
                "resource monitoring is unavailable: cannot start its sampling thread: {err}"
            );
        }
        ticker
    })
}

impl Ticker {
    fn runs(&self) -> MutexGuard<'_, Vec<Weak<Monitor>>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, monitor: &Arc<Monitor>) {
        self.runs().push(Arc::downgrade(monitor));
        self.wake.notify_one();
    }

    fn forget(&self, monitor: &Arc<Monitor>) {
        self.runs()
            .retain(|m| m.strong_count() > 0 && !std::ptr::eq(m.as_ptr(), Arc::as_ptr(monitor)));
    }

    /// Sleeps until the earliest run is due (or a run is added), then
    /// samples every run due, with one pass over the process table; a
    /// run just added gets its first reading at once.
    fn run(&self) {
        let mut list = self.runs();
        loop {
            list.retain(|m| m.strong_count() > 0);
            let runs: Vec<Arc<Monitor>> = list.iter().filter_map(Weak::upgrade).collect();
            let fresh: Vec<&Arc<Monitor>> = runs.iter().filter(|m| m.fresh()).collect();
            if !fresh.is_empty() {
                drop(list);
                let now = Instant::now();
                for monitor in fresh {
                    monitor.first_reading(now);
                }
                list = self.runs();
                continue;
            }
            let now = Instant::now();
            // A run stopped before its first reading has no due instant:
            // it is about to leave the list.
            let earliest = runs.iter().filter_map(|m| m.lock().due).min();
            match earliest {
                None => {
                    drop(runs);
                    list = self.wake.wait(list).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                Some(at) if at > now => {
                    drop(runs);
                    list = self
                        .wake
                        .wait_timeout(list, at - now)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|e| e.into_inner().0);
                    continue;
                }
                Some(_) => {}
            }
            let due: Vec<Arc<Monitor>> = runs
                .into_iter()
                .filter(|m| m.lock().due.is_some_and(|at| at <= now))
                .collect();
            // The pass over /proc happens without the list locked, so a
            // run starting or ending meanwhile is not held up.
            drop(list);
            let sessions: HashSet<u32> = due
                .iter()
                .filter_map(|m| match m.source {
                    Source::Session(sid) => Some(sid),
                    Source::Cgroup(_) => None,
                })
                .collect();
            let mut table: HashMap<u32, Vec<ProcessStat>> = HashMap::new();
            // Runs read from their cgroups need no pass over /proc.
            if !sessions.is_empty() {
                let processes = platform::session_processes(|sid| sessions.contains(&sid));
                for p in processes.into_iter().flatten() {
                    table.entry(p.session).or_default().push(p);
                }
            }
            let now = Instant::now();
            for monitor in &due {
                monitor.sample(&table, now);
            }
            drop(due);
            list = self.runs();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_one_interval_fall_on_the_same_ticks() {
        let second = Duration::from_secs(1);
        let origin = clock_origin();
        let a = next_tick(origin + Duration::from_millis(10), second);
        let b = next_tick(origin + Duration::from_millis(990), second);
        assert_eq!(a, b, "started 980 ms apart, sampled together");
        assert_eq!(a, origin + second);
        assert_eq!(
            next_tick(origin + second, second),
            origin + 2 * second,
            "strictly after"
        );
        let half = Duration::from_millis(500);
        assert_eq!(
            next_tick(origin + Duration::from_millis(1200), half),
            origin + 3 * half
        );
        let far = next_tick(origin, FAR);
        assert!(far > origin + Duration::from_secs(86_400));
    }

    #[test]
    fn this_test_process_session_is_sampled_and_finished() {
        if !cfg!(target_os = "linux") {
            return;
        }
        // This process's own session: the monitor must see at least it.
        let sid = platform::process_stat(std::process::id())
            .map(|p| p.session)
            .expect("linux has /proc");
        let monitor = watch(Source::Session(sid), 0.1, 10);
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(350) {
            std::hint::black_box(spin.elapsed());
        }
        let live = monitor.live().expect("sampled by now");
        assert!(live.rss_bytes > 0);
        let usage = monitor.finish().expect("a usage");
        assert!(usage.samples >= 2, "{usage:?}");
        assert!(usage.cpu_total_seconds() > 0.0);
        assert!(monitor.series().is_some());
        let again = monitor.finish().expect("idempotent");
        assert_eq!(again.samples, usage.samples);
    }
}
