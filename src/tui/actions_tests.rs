use super::*;
use crate::tui::model::LastRun;

fn job(name: &str, enabled: bool, running: bool) -> Job {
    Job {
        name: name.to_owned(),
        enabled,
        running,
        ..Job::default()
    }
}

fn failed(name: &str, exit: Option<f64>, reason: Option<&str>, at: &str) -> Job {
    Job {
        last_run: Some(LastRun {
            outcome: "failure".to_owned(),
            exit_code: exit,
            fail_reason: reason.map(str::to_owned),
            finished_at: Some(at.to_owned()),
            duration: Some(1.0),
        }),
        ..job(name, true, false)
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn texts(a: &Actions) -> Vec<&str> {
    a.log.iter().map(|(_, t)| t.as_str()).collect()
}

#[test]
fn a_start_takes_the_enabled_idle_jobs_and_a_cancel_the_running_ones() {
    let jobs = [
        job("idle", true, false),
        job("off", false, false),
        job("busy", true, true),
        job("off-busy", false, true),
    ];
    let lookup = |n: &str| jobs.iter().find(|j| j.name == n);
    let set = names(&["busy", "gone", "off", "idle", "off-busy"]);
    assert_eq!(eligible(Action::Start, &set, lookup), names(&["idle"]));
    assert_eq!(
        eligible(Action::Cancel, &set, lookup),
        names(&["busy", "off-busy"])
    );
    assert!(eligible(Action::Start, &[], lookup).is_empty());
}

#[test]
fn a_sweep_logs_each_send_and_a_tally() {
    let mut a = Actions::default();
    assert!(a.open(names(&["a", "b", "c", "d"]), "failing jobs"));
    let (id, jobs) = a
        .begin(Action::Start, names(&["a", "b", "c", "d"]))
        .expect("a sweep");
    assert_eq!(jobs.len(), 4);
    assert!(a.running());
    a.answered(id, "a", &Sent::Answered(200, None));
    a.answered(id, "b", &Sent::Answered(202, None));
    a.answered(
        id,
        "c",
        &Sent::Answered(409, Some("job 'c' is disabled".into())),
    );
    a.answered(id, "d", &Sent::Failed("connection refused".into()));
    // an earlier sweep's straggler changes nothing
    a.answered(id + 7, "x", &Sent::Answered(200, None));
    a.ended(id + 7, 1, false);
    assert!(a.running());
    a.ended(id, 4, false);
    assert!(!a.running());
    assert_eq!(
        texts(&a),
        [
            "starting 4 jobs, one every 300 ms",
            "✓ start a: HTTP 200",
            "✓ start b: HTTP 202 (queued in its pool)",
            "✕ start c: HTTP 409 job 'c' is disabled",
            "✕ start d: connection refused",
            "done: 2 ok, 2 failed",
        ]
    );
    assert_eq!(a.log[1].0, Mark::Ok);
    assert_eq!(a.log[3].0, Mark::Fail);
    assert_eq!(a.log[5].0, Mark::Fail);
}

#[test]
fn stop_sending_ends_the_sweep_part_way_and_says_how_far_it_got() {
    let mut a = Actions::default();
    a.open(names(&["a", "b", "c"]), "incident set");
    let (id, _) = a
        .begin(Action::Cancel, names(&["a", "b", "c"]))
        .expect("a sweep");
    assert_eq!(texts(&a)[0], "cancelling 3 jobs, one every 300 ms");
    a.answered(id, "a", &Sent::Answered(200, None));
    assert!(a.stop(), "the worker is told");
    assert!(!a.stop(), "once");
    // s while it stops: refused
    assert_eq!(a.begin(Action::Start, names(&["b"])), None);
    // reopening during a sweep keeps the sweep's set
    assert!(!a.open(names(&["z"]), "failing jobs"));
    assert_eq!(a.label, "incident set");
    a.ended(id, 1, true);
    assert_eq!(
        &texts(&a)[2..],
        [
            "stop sending: nothing more goes out",
            "still sending the last sweep (a stops it)",
            "aborted (1/3 sent)",
            "done: 1 ok, 0 failed",
        ]
    );
    assert!(!a.stop(), "nothing left to stop");
    // a new sweep gets a new id
    let (next, _) = a.begin(Action::Start, names(&["b"])).expect("a sweep");
    assert_ne!(next, id);
}

#[test]
fn a_401_says_to_set_a_token() {
    let mut a = Actions::default();
    let (id, _) = a.begin(Action::Start, names(&["a", "b"])).expect("sweep");
    a.answered(id, "a", &Sent::Unauthorized);
    a.ended(id, 1, false);
    assert_eq!(
        &texts(&a)[1..],
        [
            "✕ start a: HTTP 401: set a token, then send again",
            "done: 0 ok, 1 failed",
        ]
    );
    assert_eq!(a.log[1].0, Mark::Warn);
}

#[test]
fn nothing_eligible_sends_nothing_and_says_why() {
    let mut a = Actions::default();
    assert_eq!(a.begin(Action::Start, Vec::new()), None);
    assert_eq!(a.begin(Action::Cancel, Vec::new()), None);
    assert!(!a.running());
    assert_eq!(
        texts(&a),
        [
            "nothing to start: no job of the set is enabled and idle",
            "nothing to cancel: no job of the set is running",
        ]
    );
}

#[test]
fn the_log_keeps_its_last_lines() {
    let mut a = Actions::default();
    for _ in 0..600 {
        a.begin(Action::Start, Vec::new());
    }
    assert!(a.log.len() <= 500 && a.log.len() > 300, "{}", a.log.len());
}

#[test]
fn the_writeup_names_each_job_with_its_exit_reason_and_age() {
    let jobs = [
        failed(
            "one",
            Some(69.0),
            Some("exit code 69"),
            "2026-01-01T00:00:00+00:00",
        ),
        failed("two\x1b[2J`x", None, None, "2026-01-01T00:01:00+00:00"),
        job("never", true, false),
    ];
    let lookup = |n: &str| jobs.iter().find(|j| j.name == n);
    let set = names(&["one", "two\x1b[2J`x", "never", "gone"]);
    let verdict = Verdict {
        critical: true,
        head: "MULTIPLE FAILURES — 2 jobs failing".to_owned(),
        sub: "no two share an exit code and reason".to_owned(),
        ago: None,
    };
    // 2026-01-01 00:05:00 UTC
    let now = 1_767_225_900.0;
    let text = writeup("failing jobs", &set, lookup, Some(&verdict), now);
    assert_eq!(
        text,
        "# cronstable incident: failing jobs\n\
         \n\
         As of 2026-01-01 00:05:00 UTC, 4 jobs:\n\
         \n\
         - `one`: exit code 69, reason: exit code 69, finished 5m ago\n\
         - `two'x`: exit code ?, finished 4m ago\n\
         - `never`: no finished run\n\
         - `gone`: not in the daemon's job list\n\
         \n\
         Verdict: MULTIPLE FAILURES — 2 jobs failing\n\
         \n\
         > no two share an exit code and reason\n"
    );
    let without = writeup("incident set", &set[..1], lookup, None, now);
    assert!(without.starts_with("# cronstable incident: incident set\n"));
    assert!(without.contains("1 job:"), "{without}");
    assert!(!without.contains("Verdict"), "{without}");
}
