//! Late-run detection, black-box: one daemon whose jobs breach each of the
//! three checks for real (a run that outlives `maxRuntime`, a job with no
//! success for longer than `maxTimeSinceSuccess`, a slot that
//! `onlyIfLastSucceeded` held back past `lateAfter`), a paused job that is
//! exempt, the `onLate` deliveries (webhook with the default body, shell
//! with the breach variables), `sla` in `GET /jobs`, the two metric
//! families, the log lines, and the recovery of every check. The monitor
//! evaluates once a wall-clock minute, so the test aligns itself with the
//! minute: it starts early in one, breaches at the next boundary and
//! recovers at the one after.

mod support;

use chrono::Timelike;
use serde_json::Value;
use std::time::Duration;
use support::cli::{cronstable, write_tree};
use support::daemon::Daemon;
use support::http;
use support::receivers::HttpReceiver;

/// Sleeps until the wall clock's second is within `from..=to`.
fn wait_for_second(from: u32, to: u32) {
    loop {
        let second = chrono::Utc::now().second();
        if (from..=to).contains(&second) {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn entry(port: u16, name: &str) -> Value {
    let jobs = http::get(port, "/jobs").json();
    jobs.as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["name"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The value of one sample line of the exposition, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The `CRONSTABLE_*` variables a shell reporter wrote to `file`.
fn env_file(daemon: &Daemon, file: &str) -> std::collections::BTreeMap<String, String> {
    std::fs::read_to_string(daemon.path(file))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

const SHELL_REPORT: &str = "    onLate:\n      report:\n        shell:\n          command: \
     env | grep '^CRONSTABLE_' > {dir}/late-$CRONSTABLE_JOB_NAME-$CRONSTABLE_SLA_CHECK.env\n";

#[test]
fn each_check_breaches_reports_once_shows_and_recovers() {
    let hook = HttpReceiver::start();
    let webhook = format!(
        "    onLate:\n      report:\n        webhook:\n          url:\n            value: \"{}\"\n",
        hook.url("/late")
    );
    let jobs = format!(
        "  - name: overrun\n    command: sleep 300\n    schedule: '@reboot'\n    sla:\n      \
         maxRuntimeSeconds: 5\n{webhook}\
         \x20 - name: stale\n    command: 'true'\n    schedule: '0 0 1 1 *'\n    sla:\n      \
         maxTimeSinceSuccessSeconds: 40\n{SHELL_REPORT}\
         \x20 - name: held\n    command: test -e {{dir}}/held.ok\n    schedule: '30 * * * * * *'\n    \
         onlyIfLastSucceeded: true\n    sla:\n      lateAfterSeconds: 10\n{SHELL_REPORT}\
         \x20 - name: paused\n    command: sleep 300\n    schedule: '@reboot'\n    sla:\n      \
         maxRuntimeSeconds: 5\n{SHELL_REPORT}\
         \x20 - name: plain\n    command: 'true'\n    schedule: '0 0 1 1 *'\n"
    );
    // Early in a minute: the 30th second's slot comes before the next
    // boundary, and every check has passed its threshold by then.
    wait_for_second(2, 12);
    // A durable store: the breach counts survive a restart (checked last).
    let store = tempfile::tempdir().expect("temp dir");
    let state = format!("state:\n  path: {}\n", store.path().display());
    let (mut daemon, port) = Daemon::start_with_web(&state, &jobs);
    let pause = http::request(
        port,
        "POST",
        "/jobs/paused/pause",
        &[],
        "{\"durationSeconds\": 3600}",
    );
    assert_eq!(pause.status, 200, "{}", pause.body);
    // A failed run holds the 30th second's slot back (onlyIfLastSucceeded).
    assert_eq!(http::post(port, "/jobs/held/start").status, 200);

    // The first boundary: every check of the three jobs breaches.
    let long = Duration::from_secs(80);
    daemon.wait_for_log("SLA check maxRuntime breached", 1, long);
    daemon.wait_for_log("SLA check maxTimeSinceSuccess breached", 1, long);
    daemon.wait_for_log("SLA check lateAfter breached", 1, long);
    let log = daemon.log();
    let line = log
        .lines()
        .find(|l| l.contains("Job overrun: SLA check maxRuntime breached"))
        .unwrap_or_default();
    assert!(
        line.contains("WARNING") && line.contains("exceeds the threshold of 5s"),
        "{line}"
    );
    assert!(
        !log.contains("Job paused: SLA check"),
        "a paused job is exempt:\n{log}"
    );

    // onLate: the default webhook body (the original's bytes: the body's
    // last newline sits inside the tojson filter, so the text ends with
    // two), once.
    let got = hook.wait_for("/late", 1, Duration::from_secs(20));
    let text = got[0].json()["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let observed_text = text
        .lines()
        .find_map(|l| l.strip_prefix("Observed: ")?.strip_suffix(" seconds"))
        .unwrap_or_default();
    let observed = observed_text.parse::<f64>().unwrap_or(-1.0);
    assert!(observed > 5.0 && observed < 120.0, "{text}");
    let expected = format!(
        "Cron job 'overrun' is overdue (maxRuntime)\n\nSLA check: maxRuntime\nThreshold: 5 \
         seconds\nObserved: {} seconds\nLast success: (none recorded)\n\n",
        observed_text
    );
    assert_eq!(text, expected);
    // The shell reporter gets the breach in its environment.
    let held = loop {
        let vars = env_file(&daemon, "late-held-lateAfter.env");
        if vars.contains_key("CRONSTABLE_LAST_SUCCESS_AT") {
            break vars;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(held["CRONSTABLE_SLA_CHECK"], "lateAfter");
    assert_eq!(held["CRONSTABLE_SLA_THRESHOLD_SECONDS"], "10");
    let late_by: f64 = held["CRONSTABLE_SLA_OBSERVED_SECONDS"]
        .parse()
        .unwrap_or(-1.0);
    assert!((10.0..60.0).contains(&late_by), "{held:?}");
    assert_eq!(held["CRONSTABLE_FAILED"], "1");
    assert_eq!(held["CRONSTABLE_FAIL_REASON"], "sla: lateAfter breached");
    assert_eq!(held["CRONSTABLE_RETCODE"], "None");
    assert_eq!(held["CRONSTABLE_LAST_SUCCESS_AT"], "");
    assert_eq!(held["CRONSTABLE_JOB_NAME"], "held");

    // GET /jobs: the sla object of each job with checks, and only those.
    let overrun = entry(port, "overrun");
    assert_eq!(overrun["sla"]["state"], "late", "{overrun}");
    assert_eq!(
        overrun["sla"]["thresholds"],
        serde_json::json!({"maxRuntimeSeconds": 5})
    );
    let breach = &overrun["sla"]["breaches"][0];
    assert_eq!(breach["check"], "maxRuntime");
    assert_eq!(breach["threshold_seconds"], 5);
    assert!(breach["observed_seconds"].as_f64().unwrap_or(0.0) > 5.0);
    assert!(breach["since"].as_str().is_some(), "{breach}");
    assert_eq!(entry(port, "paused")["sla"]["state"], "ok");
    assert!(entry(port, "plain").get("sla").is_none());

    // The metric families.
    // The first evaluation may come a moment after the listener answers.
    let start = std::time::Instant::now();
    let metrics = loop {
        let metrics = http::get(port, "/metrics").body;
        if metrics.contains("cronstable_job_sla_breaches_total{job_name=\"stale\"")
            || start.elapsed() > Duration::from_secs(10)
        {
            break metrics;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    for (job, check) in [
        ("overrun", "maxRuntime"),
        ("stale", "maxTimeSinceSuccess"),
        ("held", "lateAfter"),
    ] {
        let labels = format!("{{job_name=\"{job}\",check=\"{check}\"}}");
        assert_eq!(
            sample(&metrics, &format!("cronstable_job_late{labels}")),
            Some(1.0),
            "{job}:\n{metrics}"
        );
        assert_eq!(
            sample(
                &metrics,
                &format!("cronstable_job_sla_breaches_total{labels}")
            ),
            Some(1.0),
            "{job}"
        );
    }
    // The paused job was evaluated once at start (before its pause), so
    // its series exist; they stay at 0.
    let labels = "{job_name=\"paused\",check=\"maxRuntime\"}";
    assert_eq!(
        sample(&metrics, &format!("cronstable_job_late{labels}")),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &metrics,
            &format!("cronstable_job_sla_breaches_total{labels}")
        ),
        Some(0.0)
    );
    assert!(!metrics.contains("job_name=\"plain\",check"));

    // Recover every check before the next boundary: the overrun ends, the
    // stale job succeeds, the held job runs (and now succeeds).
    wait_for_second(25, 45);
    assert_eq!(http::post(port, "/jobs/overrun/cancel").status, 200);
    assert_eq!(http::post(port, "/jobs/stale/start").status, 200);
    std::fs::write(daemon.path("held.ok"), "").expect("write held.ok");
    assert_eq!(http::post(port, "/jobs/held/start").status, 200);
    daemon.wait_for_log("recovered (observed", 3, long);
    let log = daemon.log();
    for check in ["maxRuntime", "maxTimeSinceSuccess", "lateAfter"] {
        assert!(
            log.contains(&format!("SLA check {check} recovered (observed")),
            "{check}:\n{log}"
        );
    }
    let metrics = http::get(port, "/metrics").body;
    let labels = "{job_name=\"overrun\",check=\"maxRuntime\"}";
    assert_eq!(
        sample(&metrics, &format!("cronstable_job_late{labels}")),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &metrics,
            &format!("cronstable_job_sla_breaches_total{labels}")
        ),
        Some(1.0)
    );
    assert_eq!(entry(port, "stale")["sla"]["state"], "ok");
    // Each breach was reported once: no re-fire while it lasted.
    assert_eq!(hook.requests().len(), 1);
    assert_eq!(daemon.log().matches("reporting SLA breach").count(), 3);

    // A restart (a rollout) keeps the counts: the snapshot the clean stop
    // wrote carries them, and the new process shows them at its first
    // evaluation, without a breach of its own.
    // (The paused job's run would hold the stop until it ends.)
    let cancel = http::post(port, "/jobs/paused/cancel");
    assert!(
        cancel.status == 200 || cancel.body.contains("is not running"),
        "{}\n{}",
        cancel.body,
        daemon.log()
    );
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit(long), Some(0), "{}", daemon.log());
    let (again, port) = Daemon::start_with_web(&state, &jobs);
    let metrics = http::get(port, "/metrics").body;
    for (job, check) in [
        ("overrun", "maxRuntime"),
        ("stale", "maxTimeSinceSuccess"),
        ("held", "lateAfter"),
    ] {
        let series =
            format!("cronstable_job_sla_breaches_total{{job_name=\"{job}\",check=\"{check}\"}}");
        assert_eq!(
            sample(&metrics, &series),
            Some(1.0),
            "{series}\n{metrics}\n{}",
            again.log()
        );
    }
}

#[test]
fn load_rules_and_the_job_set_id() {
    let with_sla =
        "jobs:\n  - name: a\n    command: 'true'\n    schedule: '@daily'\n    sla:\n      \
                    lateAfterSeconds: 60\n    onLate:\n      report:\n        shell:\n          \
                    command: echo late\n";
    let without = "jobs:\n  - name: a\n    command: 'true'\n    schedule: '@daily'\n";
    let dir = write_tree(&[("with.yaml", with_sla), ("without.yaml", without)]);
    let a = cronstable(&["-c", "with.yaml", "--job-set-id"], dir.path());
    let b = cronstable(&["-c", "without.yaml", "--job-set-id"], dir.path());
    assert_eq!(a.code, Some(0), "{}", a.stderr);
    assert_eq!(a.stdout, b.stdout, "sla and onLate are not part of the id");

    let cases = [
        (
            "    onLate:\n      report:\n        shell:\n          command: echo late\n",
            "onLate requires sla",
        ),
        (
            "    sla:\n      lateAfterSeconds: 0\n",
            "must be > 0 when set",
        ),
        (
            "    sla:\n      maxRuntimeSeconds: 10\n    onLate:\n      report:\n        mail:\n          \
             from: a@example.com\n          to: b@example.com\n          subject: '{{ name'\n",
            "onLate.report.mail.subject",
        ),
    ];
    for (extra, needle) in cases {
        let text = format!("{without}{extra}");
        let dir = write_tree(&[("c.yaml", &text)]);
        let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(1), "{text}\n{}", run.stderr);
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
}
