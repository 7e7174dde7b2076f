//! What the failover benchmarks share: replicas (the built binary, started,
//! `kill -9`ed and restarted), the shared file each Leader fire appends
//! `<node> <epoch second>` to, and the kill loop that measures takeovers,
//! double runs and missed seconds from that file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One replica: the daemon on `config`, run from `dir`.
pub struct Replica {
    /// Its node name (what it writes to the fires file).
    pub name: &'static str,
    /// The config file it runs.
    pub config: PathBuf,
    /// Its working directory.
    pub dir: PathBuf,
    child: Option<Child>,
}

impl Replica {
    /// A replica not started yet.
    pub fn new(name: &'static str, config: PathBuf, dir: PathBuf) -> Replica {
        Replica {
            name,
            config,
            dir,
            child: None,
        }
    }

    /// Starts the daemon (warnings and errors only, to /dev/null).
    pub fn start(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_cronstable"))
            .arg("-c")
            .arg(&self.config)
            .args(["-l", "WARNING"])
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the daemon starts");
        self.child = Some(child);
    }

    /// `kill -9`, and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runners per second, from a fires file (`<node> <second>` lines).
pub fn fires(file: &Path) -> BTreeMap<u64, Vec<String>> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(node), Some(Ok(second))) = (parts.next(), parts.next().map(str::parse)) {
            out.entry(second).or_default().push(node.to_owned());
        }
    }
    out
}

/// The newest second in the file and the node that ran it.
pub fn last_fire(file: &Path) -> Option<(u64, String)> {
    fires(file)
        .into_iter()
        .next_back()
        .and_then(|(s, nodes)| nodes.into_iter().next().map(|n| (s, n)))
}

/// What the kill loop saw.
pub struct KillRun {
    /// The first second fired, before the first kill.
    pub first_second: u64,
    /// The newest second fired when counting.
    pub last_second: u64,
    /// Leaders killed.
    pub kills: usize,
    /// Seconds between kills.
    pub period: u64,
    /// Seconds from each kill to the first fire after it (any replica).
    pub takeovers: Vec<f64>,
    /// Seconds with a fire.
    pub seconds_run: usize,
    /// Seconds with more than one runner.
    pub doubles: usize,
    /// Seconds in the window without a fire.
    pub missed: usize,
}

impl KillRun {
    /// The benchmark table's rows for these results.
    pub fn rows(&self, takeover_label: &str) -> Vec<(String, String)> {
        let mut rows = vec![(
            format!(
                "fires over {} s, leader killed every {} s ({} kills)",
                self.last_second - self.first_second + 1,
                self.period,
                self.kills
            ),
            format!(
                "{} seconds run, {} run twice, {} not run",
                self.seconds_run, self.doubles, self.missed
            ),
        )];
        let mut takeovers = self.takeovers.clone();
        if !takeovers.is_empty() {
            takeovers.sort_by(f64::total_cmp);
            rows.push((
                takeover_label.to_owned(),
                format!(
                    "min {:.1} s, median {:.1} s, max {:.1} s",
                    takeovers[0],
                    takeovers[takeovers.len() / 2],
                    takeovers[takeovers.len() - 1]
                ),
            ));
        }
        rows
    }
}

fn epoch_second() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Waits for the first fire in `file`, then for `seconds` kills the
/// replica that ran the newest fire every `period` and restarts it at once,
/// timing each takeover to the first fire after the kill's second (by any
/// replica: the restarted one is a new process and may lead again). Waits
/// `settle` before counting (for a last catch-up). Async, so a fake API
/// server on the same runtime keeps answering.
pub async fn kill_the_leader_every(
    replicas: &mut [Replica],
    file: &Path,
    seconds: u64,
    period: Duration,
    settle: Duration,
) -> Option<KillRun> {
    let begin = Instant::now();
    while last_fire(file).is_none() && begin.elapsed() < Duration::from_secs(180) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (first_second, _) = last_fire(file)?;
    let start = Instant::now();
    let mut kills = 0;
    let mut takeovers = Vec::new();
    while start.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(period).await;
        let Some((_, leader)) = last_fire(file) else {
            continue;
        };
        let Some(replica) = replicas.iter_mut().find(|r| r.name == leader) else {
            continue;
        };
        let killed = Instant::now();
        let killed_second = epoch_second();
        replica.kill();
        kills += 1;
        replica.start();
        let deadline = Instant::now() + period.max(Duration::from_secs(60));
        while Instant::now() < deadline {
            if last_fire(file).is_some_and(|(second, _)| second > killed_second) {
                takeovers.push(killed.elapsed().as_secs_f64());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tokio::time::sleep(settle).await;
    let observed = fires(file);
    let last_second = observed.keys().next_back().copied().unwrap_or(first_second);
    Some(KillRun {
        first_second,
        last_second,
        kills,
        period: period.as_secs(),
        takeovers,
        seconds_run: observed.len(),
        doubles: observed.values().filter(|n| n.len() > 1).count(),
        missed: (first_second..=last_second)
            .filter(|s| !observed.contains_key(s))
            .count(),
    })
}
