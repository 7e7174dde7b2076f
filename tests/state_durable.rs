//! The durable store of the `state` section, black-box: the built daemon
//! on a store directory that outlives it, restarted, killed with -9, and
//! run two at a time on one store. What each test proves is in its name.

mod support;

use nix::sys::signal::Signal;
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::daemon::{read_lines, Daemon};
use support::http;

const LONG: Duration = Duration::from_secs(30);

/// A store and a place for the jobs' files that outlive each daemon.
struct Shared {
    dir: tempfile::TempDir,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The `state` section (plus `extra` state keys) over this store.
    fn state(&self, extra: &str) -> String {
        format!("state:\n  path: {}\n{extra}", self.path("store").display())
    }

    /// Starts a daemon with a web listener on this store; `jobs` may use
    /// `{shared}` for this directory.
    fn daemon(&self, state_extra: &str, jobs: &str) -> (Daemon, u16) {
        let jobs = jobs.replace("{shared}", &self.dir.path().display().to_string());
        Daemon::start_with_web(&self.state(state_extra), &jobs)
    }

    /// The store's namespace directory.
    fn base(&self) -> PathBuf {
        self.path("store").join("default")
    }

    /// The `data` of every record of `stream`, oldest first.
    fn records(&self, stream: &str) -> Vec<Value> {
        let token: String = stream
            .bytes()
            .map(|b| {
                if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-' {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let dir = self.base().join("records").join(token);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        names.sort();
        names
            .into_iter()
            .filter_map(|n| std::fs::read(dir.join(n)).ok())
            .filter_map(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| v["data"].clone())
            .collect()
    }
}

fn runs(port: u16, job: &str) -> Vec<Value> {
    let reply = http::get(port, &format!("/jobs/{job}/runs"));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let body = reply.json();
    body["runs"]
        .as_array()
        .or_else(|| body.as_array())
        .cloned()
        .unwrap_or_default()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stop(mut daemon: Daemon) {
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit(LONG);
}

fn pid_of(log: &str, job: &str) -> i32 {
    let needle = format!("Job {job}: pid ");
    let at = log.rfind(&needle).expect("the pid line");
    log[at + needle.len()..]
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a pid")
}

#[test]
fn a_run_killed_with_its_daemon_is_an_unknown_row_after_the_restart() {
    let shared = Shared::new();
    let jobs = "  - name: slow\n    command: 'sleep 300'\n    schedule: '@reboot'\n";
    let (first, _) = shared.daemon("", jobs);
    first.wait_for_log("Job slow spawned", 1, LONG);
    // The in-flight record is written behind the launch.
    wait_until("the open in-flight record", LONG, || {
        shared
            .records("inflight/slow")
            .iter()
            .any(|r| r["kind"] == "open")
    });
    let pid = pid_of(&first.log(), "slow");
    first.signal(Signal::SIGKILL);
    drop(first);
    // Its job is gone too (node loss): kill its group.
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    std::thread::sleep(Duration::from_millis(300));

    let (second, port) = shared.daemon("", jobs);
    second.wait_for_log("reconciled an interrupted run (reconciled-crash)", 1, LONG);
    let rows = runs(port, "slow");
    let unknown: Vec<_> = rows.iter().filter(|r| r["outcome"] == "unknown").collect();
    assert_eq!(unknown.len(), 1, "{rows:?}");
    assert!(unknown[0]["fail_reason"]
        .as_str()
        .unwrap()
        .starts_with("run interrupted: no completion was recorded for the run started at"));
    assert_eq!(unknown[0]["exit_code"], Value::Null);
    // @reboot ran during this boot already: not again after the restart.
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !second.log().contains("Job slow spawned"),
        "the @reboot job ran twice in one boot:\n{}",
        second.log()
    );
    assert!(second.log().contains("already ran during this OS boot"));
    let ledger = shared.records("runs/slow");
    assert_eq!(
        ledger.iter().filter(|r| r["outcome"] == "unknown").count(),
        1
    );
    stop(second);
}

#[test]
fn a_run_that_outlives_its_daemon_is_left_open_and_not_relaunched() {
    let shared = Shared::new();
    let jobs = "  - name: slow\n    command: 'sleep 300'\n    schedule: '@reboot'\n";
    let (first, _) = shared.daemon("", jobs);
    first.wait_for_log("Job slow spawned", 1, LONG);
    wait_until("the open in-flight record", LONG, || {
        !shared.records("inflight/slow").is_empty()
    });
    let pid = pid_of(&first.log(), "slow");
    first.signal(Signal::SIGKILL);
    drop(first);
    let (second, port) = shared.daemon("", jobs);
    second.wait_for_log("still appears to be running", 1, LONG);
    assert!(runs(port, "slow").iter().all(|r| r["outcome"] != "unknown"));
    stop(second);
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
}

#[test]
fn history_pauses_and_outcomes_come_back_after_a_restart() {
    let shared = Shared::new();
    let jobs =
        "  - name: tick\n    command: 'echo x >> {shared}/tick'\n    schedule: '* * * * * * *'\n";
    let (first, port) = shared.daemon("", jobs);
    wait_until("three runs", LONG, || {
        read_lines(&shared.path("tick")).len() >= 3
    });
    let reply = http::request(
        port,
        "POST",
        "/jobs/tick/pause",
        &[("content-type", "application/json")],
        r#"{"durationSeconds": 3600, "note": "incident 42", "by": "ops"}"#,
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    std::thread::sleep(Duration::from_millis(1500));
    let before = runs(port, "tick");
    stop(first);
    let ran = read_lines(&shared.path("tick")).len();

    let (second, port) = shared.daemon("", jobs);
    let jobs_view = http::get(port, "/jobs").json();
    let tick = jobs_view["jobs"]
        .as_array()
        .or_else(|| jobs_view.as_array())
        .and_then(|all| all.iter().find(|j| j["name"] == "tick").cloned())
        .expect("the job");
    assert_eq!(tick["paused"]["note"], "incident 42", "{tick}");
    assert_eq!(tick["paused"]["by"], "ops");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        read_lines(&shared.path("tick")).len(),
        ran,
        "a paused job ran after the restart"
    );
    let after = runs(port, "tick");
    let successes = |rows: &[Value]| rows.iter().filter(|r| r["outcome"] == "success").count();
    assert!(
        successes(&after) >= successes(&before) && successes(&before) >= 3,
        "history before {before:?}\nafter {after:?}"
    );
    assert!(after.iter().any(|r| r["outcome"] == "skipped"), "{after:?}");
    stop(second);
}

#[test]
fn a_pending_retry_fires_at_its_deadline_across_a_restart() {
    let shared = Shared::new();
    let jobs = "  - name: flaky\n    command: 'date +%s.%N >> {shared}/tries; exit 1'\n    \
                schedule: '@reboot'\n    onFailure:\n      retry:\n        maximumRetries: 1\n        \
                initialDelay: 10\n        maximumDelay: 60\n        backoffMultiplier: 2\n";
    let (first, _) = shared.daemon("", jobs);
    first.wait_for_log("scheduled to be retried (#1) in 10.0 seconds", 1, LONG);
    wait_until("the pending retry record", LONG, || {
        shared
            .records("retries/flaky")
            .iter()
            .any(|r| r["kind"] == "pending")
    });
    std::thread::sleep(Duration::from_secs(3));
    stop(first);
    let (second, port) = shared.daemon("", jobs);
    second.wait_for_log("re-armed pending retry #1 from the durable ledger", 1, LONG);
    let tries = {
        let start = Instant::now();
        loop {
            let lines = read_lines(&shared.path("tries"));
            if lines.len() >= 2 || start.elapsed() > LONG {
                break lines;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    assert_eq!(
        tries.len(),
        2,
        "the boot run and one retry, no boot rerun: {tries:?}"
    );
    let first_try: f64 = tries[0].parse().unwrap();
    let retry: f64 = tries[1].parse().unwrap();
    // At the absolute deadline (10 s after the failure), not 10 s after
    // the restart (which came 3+ s later).
    assert!(retry - first_try >= 9.5, "too early: {}", retry - first_try);
    assert!(
        retry - first_try < 12.8,
        "from the restart, not the deadline: {}",
        retry - first_try
    );
    wait_until("the retry's row", LONG, || runs(port, "flaky").len() >= 2);
    let settled = shared.records("retries/flaky");
    assert_eq!(settled.last().unwrap()["kind"], "settled", "{settled:?}");
    stop(second);
}

#[test]
fn an_edited_job_drops_its_pending_retry() {
    let shared = Shared::new();
    let jobs = |cmd: &str| {
        format!(
            "  - name: flaky\n    command: '{cmd}'\n    schedule: '@reboot'\n    onFailure:\n      \
             retry:\n        maximumRetries: 3\n        initialDelay: 5\n        maximumDelay: 60\n        \
             backoffMultiplier: 2\n"
        )
    };
    let (first, _) = shared.daemon("", &jobs("exit 1"));
    first.wait_for_log("scheduled to be retried (#1)", 1, LONG);
    wait_until("the pending retry record", LONG, || {
        !shared.records("retries/flaky").is_empty()
    });
    stop(first);
    let (second, _) = shared.daemon("", &jobs("exit 2"));
    second.wait_for_log("not re-armed (config-changed)", 1, LONG);
    // Settled, not re-armed (the edited @reboot job then runs again this
    // boot, as a new definition, and arms a ladder of its own).
    wait_until("the settle record", LONG, || {
        shared
            .records("retries/flaky")
            .iter()
            .any(|r| r["kind"] == "settled" && r["reason"] == "config-changed")
    });
    assert!(
        !second.log().contains("re-armed pending retry"),
        "{}",
        second.log()
    );
    stop(second);
}

#[test]
fn missed_fires_are_caught_up_at_start_once_all_or_within_the_deadline() {
    for (policy, extra, expect) in [
        (
            "run-once",
            "",
            "catch-up: replaying 1 missed run(s) for job",
        ),
        ("run-all", "", "catch-up: replaying"),
        (
            "run-all",
            "    startingDeadlineSeconds: 2\n",
            "catch-up: replaying",
        ),
    ] {
        let shared = Shared::new();
        let jobs = format!(
            "  - name: job\n    command: 'echo x >> {{shared}}/ran'\n    schedule: '*/1 * * * * * *'\n    \
             onMissed: {policy}\n{extra}"
        );
        let (first, _) = shared.daemon("", &jobs);
        wait_until("two runs", LONG, || {
            read_lines(&shared.path("ran")).len() >= 2
        });
        stop(first);
        std::thread::sleep(Duration::from_secs(6));
        let (second, _) = shared.daemon("", &jobs);
        second.wait_for_log(expect, 1, LONG);
        let line = second
            .log()
            .lines()
            .find(|l| l.contains("catch-up: replaying"))
            .map(str::to_owned)
            .unwrap();
        let count: u32 = line
            .split("replaying ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("a count");
        match (policy, extra.is_empty()) {
            ("run-once", _) => assert_eq!(count, 1, "{line}"),
            (_, true) => assert!((5..=9).contains(&count), "about six missed seconds: {line}"),
            (_, false) => assert!(
                (1..=3).contains(&count),
                "bounded by the 2 s deadline: {line}"
            ),
        }
        let checkpoints = shared.records("catchup/job");
        assert_eq!(
            checkpoints.first().map(|c| c["kind"].clone()),
            Some("open".into())
        );
        stop(second);
    }
}

#[test]
fn a_first_start_owes_nothing() {
    let shared = Shared::new();
    let jobs = "  - name: job\n    command: 'true'\n    schedule: '*/1 * * * * * *'\n    onMissed: run-all\n";
    let (first, _) = shared.daemon("", jobs);
    first.wait_for_log("Job job spawned", 2, LONG);
    assert!(
        !first.log().contains("catch-up: replaying"),
        "{}",
        first.log()
    );
    stop(first);
}

/// An instant of the store's records (`py_isoformat`, always with an
/// offset).
fn instant(value: &Value) -> chrono::DateTime<chrono::Utc> {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("an instant: {value}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .with_timezone(&chrono::Utc)
}

/// How many whole seconds `s` lie in `(after, upto]` outside `[since, until)`
/// (the per-second job's slots a catch-up owes), and how many inside.
fn owed_seconds(
    after: chrono::DateTime<chrono::Utc>,
    upto: i64,
    since: chrono::DateTime<chrono::Utc>,
    until: chrono::DateTime<chrono::Utc>,
) -> (u32, u32) {
    let (mut owed, mut paused) = (0, 0);
    for s in after.timestamp() + 1..=upto {
        let slot = chrono::DateTime::from_timestamp(s, 0).expect("a valid second");
        if since <= slot && slot < until {
            paused += 1;
        } else {
            owed += 1;
        }
    }
    (owed, paused)
}

/// The `N` of the daemon's "catch-up: replaying N missed run(s) for job".
fn replayed(log: &str, job: &str) -> Option<u32> {
    let tail = format!(" missed run(s) for {job}");
    log.lines()
        .filter_map(|l| l.find(&tail).map(|end| &l[..end]))
        .find_map(|head| head.rsplit("catch-up: replaying ").next()?.parse().ok())
}

#[test]
fn catch_up_owes_nothing_for_a_pause_window_the_daemon_slept_through() {
    // `all` (run-all, each second) is paused for 4 s and `once` (run-once,
    // every 10 s) for 11 s, right after a run of `once` at second S; the
    // daemon stops at once and a second one starts at about S + 12.5, after
    // both pauses lapsed and before `once`'s next slot after the window
    // (S + 20). `all` is owed only the seconds after its window; every
    // missed slot of `once` (S + 10) was paused, so it is owed nothing.
    let shared = Shared::new();
    let jobs = "  - name: all\n    command: 'echo x >> {shared}/all'\n    schedule: '* * * * * * *'\n    \
                onMissed: run-all\n  \
                - name: once\n    command: 'echo x >> {shared}/once'\n    schedule: '*/10 * * * * * *'\n    \
                onMissed: run-once\n";
    let (first, port) = shared.daemon("", jobs);
    // The first run of `once` lands at its slot S (polled every 100 ms).
    wait_until("a first run of once", Duration::from_secs(15), || {
        !read_lines(&shared.path("once")).is_empty()
    });
    let ran_at = Instant::now();
    let slot = chrono::Utc::now().timestamp();
    for (job, seconds) in [("once", 11), ("all", 4)] {
        let reply = http::request(
            port,
            "POST",
            &format!("/jobs/{job}/pause"),
            &[("content-type", "application/json")],
            &format!(r#"{{"durationSeconds": {seconds}, "note": "maintenance"}}"#),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    wait_until("both pause records", LONG, || {
        !shared.records("paused/all").is_empty() && !shared.records("paused/once").is_empty()
    });
    stop(first);
    let window = |job: &str| {
        let record = shared
            .records(&format!("paused/{job}"))
            .pop()
            .expect("a pause record");
        assert_eq!(record["kind"], "paused", "{record}");
        (instant(&record["since"]), instant(&record["until"]))
    };
    let (all_since, all_until) = window("all");
    let (_, once_until) = window("once");
    let watermark = shared
        .records("runs/all")
        .iter()
        .filter(|r| r.get("finished_at").is_some_and(|f| !f.is_null()))
        .map(|r| instant(&r["finished_at"]))
        .max()
        .expect("runs of all before the stop");

    std::thread::sleep(
        (ran_at + Duration::from_millis(12_500)).saturating_duration_since(Instant::now()),
    );
    let launched = chrono::Utc::now();
    assert!(
        launched > once_until,
        "the restart came after both pauses lapsed"
    );
    let (second, _) = shared.daemon("", jobs);
    second.wait_for_log("missed run(s) for all", 1, LONG);
    let seen_at = chrono::Utc::now().timestamp();
    assert!(
        seen_at < slot + 20,
        "the second daemon took too long to start (premise: before once's slot at S + 20)"
    );
    let log = second.log();
    let count = replayed(&log, "all").expect("a replay count for all");
    let (least, paused_least) = owed_seconds(watermark, launched.timestamp(), all_since, all_until);
    let (most, _) = owed_seconds(watermark, seen_at, all_since, all_until);
    assert!(
        paused_least >= 3,
        "the window of all covered missed seconds ({paused_least})"
    );
    assert!(
        (least..=most).contains(&count),
        "all replays only the seconds outside its pause window: {count} not in {least}..={most} \
         (watermark {watermark}, window {all_since} .. {all_until}); log:\n{log}"
    );
    assert_eq!(
        replayed(&log, "once"),
        None,
        "every missed slot of once was paused; log:\n{log}"
    );
    // The backfills of all really run.
    let before = read_lines(&shared.path("all")).len();
    wait_until("the backfills of all", LONG, || {
        read_lines(&shared.path("all")).len() >= before + count as usize
    });
    stop(second);
}

#[test]
fn a_pause_sent_to_one_daemon_holds_on_another_sharing_the_store() {
    let shared = Shared::new();
    let jobs =
        "  - name: both\n    command: 'echo x >> {shared}/both'\n    schedule: '* * * * * * *'\n";
    let (a, port_a) = shared.daemon("", jobs);
    let (b, port_b) = shared.daemon("", jobs);
    let paused = |port: u16| {
        let view = http::get(port, "/jobs").json();
        view["jobs"]
            .as_array()
            .or_else(|| view.as_array())
            .and_then(|all| all.iter().find(|j| j["name"] == "both").cloned())
            .is_some_and(|j| !j["paused"].is_null())
    };
    let reply = http::request(port_a, "POST", "/jobs/both/pause", &[], "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let sent = Instant::now();
    wait_until(
        "the pause on the other daemon",
        Duration::from_secs(10),
        || paused(port_b),
    );
    assert!(
        sent.elapsed() < Duration::from_millis(2500),
        "the pause took {:?} to reach the other node",
        sent.elapsed()
    );
    let reply = http::request(port_b, "POST", "/jobs/both/resume", &[], "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    wait_until(
        "the resume on the first daemon",
        Duration::from_secs(10),
        || !paused(port_a),
    );
    stop(a);
    stop(b);
}

#[test]
fn a_corrupt_record_is_quarantined_and_the_rest_still_read() {
    let shared = Shared::new();
    let jobs = "  - name: j\n    command: 'true'\n    schedule: '@reboot'\n";
    let (first, port) = shared.daemon("", jobs);
    wait_until("a ledger row", LONG, || {
        !shared.records("runs/j").is_empty()
    });
    wait_until("the row in the API", LONG, || !runs(port, "j").is_empty());
    stop(first);
    let dir = shared.base().join("records").join("runs%2Fj");
    std::fs::write(
        dir.join("0000000001.000000-deadbeef0000-000000000001.json"),
        b"{\"data\": {tru",
    )
    .unwrap();
    let (second, port) = shared.daemon("", jobs);
    second.wait_for_log("state: quarantined corrupt record", 1, LONG);
    assert_eq!(runs(port, "j").len(), 1, "the good row still reads");
    let quarantined = std::fs::read_dir(shared.base().join("quarantine"))
        .unwrap()
        .count();
    assert_eq!(quarantined, 1);
    stop(second);
}

#[test]
fn an_unwritable_store_never_stops_scheduled_fires() {
    let shared = Shared::new();
    let jobs =
        "  - name: tick\n    command: 'echo x >> {shared}/tick'\n    schedule: '* * * * * * *'\n";
    // The store's path is a plain file: nothing can be created under it.
    std::fs::write(shared.path("store"), b"not a directory").unwrap();
    let (daemon, _) = shared.daemon("", jobs);
    daemon.wait_for_log("state: failed to start", 1, LONG);
    wait_until("fires without the store", LONG, || {
        read_lines(&shared.path("tick")).len() >= 2
    });
    assert!(daemon.running());
    stop(daemon);
}

/// Takes the store's records away under a running daemon (a volume
/// that went away: every write fails, every read fails).
fn break_store(shared: &Shared) {
    let records = shared.base().join("records");
    std::fs::rename(&records, shared.base().join("records.gone")).unwrap();
    std::fs::write(&records, b"not a directory").unwrap();
}

#[test]
fn a_store_that_goes_away_degrades_or_fails_closed_and_plain_fires_go_on() {
    for policy in ["degrade", "fail-closed"] {
        let shared = Shared::new();
        let jobs = "  - name: plain\n    command: 'echo x >> {shared}/plain'\n    schedule: '* * * * * * *'\n  \
                    - name: gated\n    command: 'echo x >> {shared}/gated'\n    schedule: '* * * * * * *'\n    \
                    onlyIfLastSucceeded: true\n";
        let (daemon, port) = shared.daemon(&format!("  onStoreUnavailable: {policy}\n"), jobs);
        wait_until("ledger rows", LONG, || {
            !shared.records("runs/plain").is_empty()
        });
        break_store(&shared);
        daemon.wait_for_log("cannot be read", 1, LONG);
        daemon.wait_for_log("state: failed to persist run record for plain", 1, LONG);
        let (plain, gated) = (
            read_lines(&shared.path("plain")).len(),
            read_lines(&shared.path("gated")).len(),
        );
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            read_lines(&shared.path("plain")).len() >= plain + 2,
            "{policy}: a plain fire waited on the store"
        );
        let gated_after = read_lines(&shared.path("gated")).len();
        if policy == "degrade" {
            assert!(
                gated_after >= gated + 2,
                "degrade runs the gated job from memory"
            );
        } else {
            assert!(
                gated_after <= gated + 1,
                "fail-closed holds the gated job back"
            );
            assert!(daemon
                .log()
                .contains("Job gated skipped: onlyIfLastSucceeded cannot read the state store"));
        }
        let metrics = http::get(port, "/metrics").body;
        assert!(
            metrics.contains("cronstable_state_dropped_writes_total{kind=\"run-record\"}"),
            "{metrics}"
        );
        assert!(daemon.running());
        stop(daemon);
    }
}

#[test]
fn archived_output_is_kept_with_its_secrets_redacted() {
    let shared = Shared::new();
    std::fs::write(
        shared.path("out.sh"),
        "echo 'connecting as PASSWORD=hunter2-very-secret'\n\
         echo '-----BEGIN RSA PRIVATE KEY-----'\n\
         echo 'MIIEowIBAAKCAQEAkeyline'\n\
         echo '-----END RSA PRIVATE KEY-----'\n\
         echo 'plain line stays' >&2\n",
    )
    .unwrap();
    let jobs = "  - name: noisy\n    command: 'sh {shared}/out.sh'\n    schedule: '@reboot'\n    \
                captureStdout: true\n    archiveOutput: true\n  \
                - name: raw\n    command: 'echo PASSWORD=kept-on-purpose'\n    schedule: '@reboot'\n    \
                captureStdout: true\n    archiveOutput: true\n    redactArchivedSecrets: false\n";
    let (daemon, _) = shared.daemon("", jobs);
    wait_until("the archived outputs", LONG, || {
        !shared.records("logs/noisy").is_empty() && !shared.records("logs/raw").is_empty()
    });
    let noisy = &shared.records("logs/noisy")[0];
    assert_eq!(noisy["redacted"], true);
    let text = noisy["lines"].to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("MIIEowIBAAKCAQEAkeyline"), "{text}");
    assert!(text.contains("***REDACTED***"), "{text}");
    assert!(text.contains("plain line stays"), "{text}");
    let streams: Vec<_> = noisy["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["stream"].as_str().unwrap().to_owned())
        .collect();
    assert!(streams.contains(&"stderr".to_owned()), "{streams:?}");
    let raw = &shared.records("logs/raw")[0];
    assert_eq!(raw["redacted"], false);
    assert!(raw["lines"].to_string().contains("kept-on-purpose"));
    // Archive records are owner-only.
    use std::os::unix::fs::PermissionsExt;
    let dir = shared.base().join("records").join("logs%2Fnoisy");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    stop(daemon);
}

#[test]
fn a_slot_taken_over_from_a_dead_holder_shows_its_run_as_unknown() {
    let shared = Shared::new();
    let jobs = "  - name: guarded\n    command: 'sleep 300'\n    schedule: '* * * * * * *'\n    \
                concurrencyPolicy: Forbid\n    concurrencyScope: cluster\n";
    let (a, _) = shared.daemon("  slotTtlSeconds: 5\n", jobs);
    a.wait_for_log("Job guarded spawned", 1, LONG);
    let (b, port_b) = shared.daemon("  slotTtlSeconds: 5\n", jobs);
    // B sees the slot held by A's run.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !b.log().contains("Job guarded spawned"),
        "two holders:\n{}",
        b.log()
    );
    let pid = pid_of(&a.log(), "guarded");
    a.signal(Signal::SIGKILL);
    drop(a);
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
    b.wait_for_log(
        "reconciled an interrupted run (reconciled-takeover)",
        1,
        LONG,
    );
    b.wait_for_log("Job guarded spawned", 1, LONG);
    wait_until("the unknown row in B's history", LONG, || {
        runs(port_b, "guarded")
            .iter()
            .any(|r| r["outcome"] == "unknown")
    });
    let closed: Vec<_> = shared
        .records("inflight/guarded")
        .into_iter()
        .filter(|r| r["reason"] == "reconciled-takeover")
        .collect();
    assert_eq!(closed.len(), 1, "{closed:?}");
    let pid_b = pid_of(&b.log(), "guarded");
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid_b), Signal::SIGKILL);
    stop(b);
}

/// A fleet member for the cross-node retry tests: the filesystem election
/// and the durable store share one directory, which says it is shared.
fn fleet_node(shared: &Shared, node: &str, jobs: &str) -> (Daemon, u16) {
    let port = http::free_port();
    let dir = shared.dir.path().display();
    let jobs = jobs.replace("{shared}", &dir.to_string());
    let config = format!(
        "web:\n  listen:\n    - http://127.0.0.1:{port}\n\
         state:\n  path: {dir}/store\n  topology: shared\n\
         cluster:\n  backend: filesystem\n  nodeName: {node}\n  filesystem:\n    \
         path: {dir}/store\n    ttl: 3\n\
         jobs:\n{jobs}"
    );
    let daemon = Daemon::start(&config);
    http::wait_listening(port, Duration::from_secs(20));
    (daemon, port)
}

/// A job that fails once, `lead` seconds from now (a one-shot schedule
/// with its year), retried once after `delay` seconds.
fn one_shot_failure(lead: i64, delay: u32) -> String {
    let at = chrono::Utc::now() + chrono::TimeDelta::seconds(lead);
    format!(
        "  - name: flaky\n    command: 'echo $(date +%s) >> {{shared}}/tries; exit 1'\n    \
         schedule: '{}'\n    timezone: UTC\n    onFailure:\n      retry:\n        \
         maximumRetries: 1\n        initialDelay: {delay}\n        maximumDelay: 60\n        \
         backoffMultiplier: 2\n",
        at.format("%S %M %H %d %m * %Y")
    )
}

fn is_leader(port: u16) -> bool {
    http::get(port, "/metrics")
        .body
        .lines()
        .any(|l| l.trim() == "cronstable_cluster_is_leader 1")
}

#[test]
fn a_retry_stranded_by_a_dead_leader_is_claimed_and_run_once_by_the_new_one() {
    let shared = Shared::new();
    let jobs = one_shot_failure(8, 4);
    let (a, port_a) = fleet_node(&shared, "node-a", &jobs);
    wait_until("node-a leads", LONG, || is_leader(port_a));
    let (b, port_b) = fleet_node(&shared, "node-b", &jobs);
    a.wait_for_log("scheduled to be retried (#1) in 4.0 seconds", 1, LONG);
    wait_until("node-a's pending record", LONG, || {
        shared
            .records("retries/flaky")
            .last()
            .is_some_and(|r| r["kind"] == "pending" && r["host"] == "node-a")
    });
    // The leader dies with its retry pending: no settle, no hand-off.
    a.signal(Signal::SIGKILL);
    drop(a);
    wait_until("node-b leads", LONG, || is_leader(port_b));
    // 30 s past the deadline, node-b's scan claims it and runs it at once.
    b.wait_for_log(
        "Job flaky: claimed pending retry #1 from host node-a (cross-node retry resume)",
        1,
        Duration::from_secs(90),
    );
    wait_until("the retry's run", LONG, || {
        read_lines(&shared.path("tries")).len() >= 2
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        read_lines(&shared.path("tries")).len(),
        2,
        "one retry, once"
    );
    let ladder = shared.records("retries/flaky");
    let claim = ladder
        .iter()
        .find(|r| r["kind"] == "pending" && r["host"] == "node-b")
        .unwrap_or_else(|| panic!("no claim record: {ladder:?}"));
    assert_eq!(claim["claimedFrom"], "node-a");
    let newest = ladder.last().expect("records");
    assert_eq!(
        (
            newest["kind"].as_str(),
            newest["reason"].as_str(),
            newest["host"].as_str()
        ),
        (Some("settled"), Some("launched"), Some("node-b")),
        "{ladder:?}"
    );
    stop(b);
}

#[test]
fn a_leader_that_loses_the_job_mid_ladder_hands_its_retry_to_the_new_leader() {
    let shared = Shared::new();
    let jobs = one_shot_failure(8, 15);
    let (a, port_a) = fleet_node(&shared, "node-a", &jobs);
    wait_until("node-a leads", LONG, || is_leader(port_a));
    let (b, port_b) = fleet_node(&shared, "node-b", &jobs);
    a.wait_for_log("scheduled to be retried (#1) in 15.0 seconds", 1, LONG);
    // Frozen past its lease, node-a wakes up a follower with its retry
    // still armed.
    a.signal(Signal::SIGSTOP);
    wait_until("node-b leads", LONG, || is_leader(port_b));
    a.signal(Signal::SIGCONT);
    wait_until("node-a follows", LONG, || !is_leader(port_a));
    a.wait_for_log("Cron job flaky retry (#1) handed off", 1, LONG);
    b.wait_for_log(
        "Job flaky: claimed pending retry #1 from host node-a (cross-node retry resume)",
        1,
        LONG,
    );
    wait_until("the retry's run", LONG, || {
        read_lines(&shared.path("tries")).len() >= 2
    });
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        read_lines(&shared.path("tries")).len(),
        2,
        "one retry, once"
    );
    let ladder = shared.records("retries/flaky");
    assert!(
        ladder
            .iter()
            .any(|r| r["kind"] == "handoff" && r["fromHost"] == "node-a" && r["attempt"] == 1),
        "{ladder:?}"
    );
    assert!(
        !ladder.iter().any(|r| r["reason"] == "owner-moved"),
        "handed off, not ended: {ladder:?}"
    );
    stop(a);
    stop(b);
}

#[test]
fn a_due_retry_waits_out_a_dead_store_under_fail_closed_and_runs_when_it_is_back() {
    let shared = Shared::new();
    let jobs = "  - name: flaky\n    command: 'date +%s >> {shared}/tries; exit 1'\n    \
                schedule: '@reboot'\n    onFailure:\n      retry:\n        maximumRetries: 1\n        \
                initialDelay: 3\n        maximumDelay: 60\n        backoffMultiplier: 2\n";
    let (daemon, _) = shared.daemon("  onStoreUnavailable: fail-closed\n", jobs);
    daemon.wait_for_log("scheduled to be retried (#1) in 3.0 seconds", 1, LONG);
    wait_until("the pending record", LONG, || {
        shared
            .records("retries/flaky")
            .iter()
            .any(|r| r["kind"] == "pending")
    });
    break_store(&shared);
    daemon.wait_for_log(
        "Cron job flaky retry (#1) deferred: cannot settle its durable record",
        1,
        LONG,
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        read_lines(&shared.path("tries")).len(),
        1,
        "the retry ran without its settle"
    );
    // The volume comes back: the next re-check settles and launches it.
    let records = shared.base().join("records");
    std::fs::remove_file(&records).unwrap();
    std::fs::rename(shared.base().join("records.gone"), &records).unwrap();
    wait_until("the retry's run", LONG, || {
        read_lines(&shared.path("tries")).len() >= 2
    });
    let ladder = shared.records("retries/flaky");
    assert_eq!(ladder.last().unwrap()["reason"], "launched", "{ladder:?}");
    stop(daemon);
}
