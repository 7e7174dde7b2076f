use super::*;
use crate::tui::model::LastRun;
use serde_json::json;

fn failed(name: &str, exit: Option<f64>, reason: Option<&str>, at: &str) -> Job {
    ran(name, "failure", exit, reason, at)
}

fn ran(name: &str, outcome: &str, exit: Option<f64>, reason: Option<&str>, at: &str) -> Job {
    Job {
        name: name.to_owned(),
        enabled: true,
        last_run: Some(LastRun {
            outcome: outcome.to_owned(),
            exit_code: exit,
            fail_reason: reason.map(str::to_owned),
            finished_at: Some(at.to_owned()),
            duration: Some(2.0),
        }),
        ..Job::default()
    }
}

const T0: &str = "2026-01-01T00:00:00+00:00";
const T20: &str = "2026-01-01T00:00:20+00:00";
const T300: &str = "2026-01-01T00:05:00+00:00";

#[test]
fn nothing_failing_means_no_verdict() {
    let jobs = vec![ran("a", "success", Some(0.0), None, T0)];
    assert_eq!(verdict(&jobs, None), None);
    assert!(incident(&jobs).is_empty());
}

#[test]
fn one_failing_job_is_a_warning_naming_it() {
    let jobs = vec![
        failed("backup", Some(3.0), Some("timeout"), T0),
        ran("ok", "success", Some(0.0), None, T0),
    ];
    let v = verdict(&jobs, None).expect("a verdict");
    assert!(!v.critical);
    assert_eq!(v.head, "JOB FAILING — backup");
    assert_eq!(v.sub, "exit 3 · timeout");
    assert_eq!(v.ago.as_deref(), Some(T0));
}

#[test]
fn failures_sharing_an_exit_code_may_share_a_cause() {
    let jobs = vec![
        failed("a", Some(69.0), None, T0),
        failed("b", Some(69.0), None, T20),
        failed("c", Some(69.0), None, T0),
        failed("d", Some(69.0), None, T0),
        failed("e", Some(1.0), None, T0),
    ];
    let v = verdict(&jobs, None).expect("a verdict");
    assert!(v.critical);
    assert_eq!(v.head, "MULTIPLE FAILURES — 5 jobs failing");
    assert_eq!(
        v.sub,
        "×4 share exit code 69 within 20s — may share a cause"
    );
    assert_eq!(incident(&jobs), ["a", "b", "c", "d"]);
}

#[test]
fn a_spread_out_group_names_its_reason_and_no_window() {
    let jobs = vec![
        failed("a", None, Some("killed"), T0),
        failed("b", None, Some("killed"), T300),
    ];
    let v = verdict(&jobs, None).expect("a verdict");
    assert_eq!(v.sub, "×2 share exit code ? (killed) — may share a cause");
}

#[test]
fn a_different_reason_splits_a_group() {
    let jobs = vec![
        failed("a", Some(1.0), Some("x"), T0),
        failed("b", Some(1.0), Some("y"), T0),
    ];
    let v = verdict(&jobs, None).expect("a verdict");
    assert_eq!(v.sub, "no two share an exit code and reason");
    assert_eq!(incident(&jobs), ["a", "b"]);
}

#[test]
fn the_largest_group_wins_and_the_first_on_a_tie() {
    let a = failed("a", Some(2.0), None, T0);
    let b = failed("b", Some(2.0), None, T0);
    let c = failed("c", Some(5.0), None, T0);
    let d = failed("d", Some(5.0), None, T0);
    let e = failed("e", Some(5.0), None, T0);
    let c1 = correlate(&[&a, &b, &c, &d, &e]).expect("a group");
    assert_eq!((c1.n, c1.exit), (3, Some(5.0)));
    let c2 = correlate(&[&a, &c, &b, &d]).expect("a group");
    assert_eq!(c2.jobs, ["a", "b"]);
    assert_eq!(correlate(&[&a, &c]), None);
}

#[test]
fn a_cluster_alert_comes_first() {
    let cluster = json!({"enabled": true, "elect_leader": true, "quorate": false,
        "backend": "gossip", "node_name": "n1"});
    let alert = cluster_alert(Some(&cluster));
    assert_eq!(
        alert,
        Some((
            "no quorum — Leader jobs paused".to_owned(),
            Some("n1".to_owned())
        ))
    );
    let jobs = vec![failed("a", Some(1.0), None, T0)];
    let v = verdict(&jobs, alert.as_ref()).expect("a verdict");
    assert_eq!(v.head, "CLUSTER ALERT — NO QUORUM — LEADER JOBS PAUSED");
    assert_eq!(v.sub, "this node: n1 · 1 job also failing");
    let fine = json!({"enabled": true, "elect_leader": true, "quorate": true});
    assert_eq!(cluster_alert(Some(&fine)), None);
    let lease =
        json!({"enabled": true, "elect_leader": true, "quorate": false, "backend": "redis"});
    assert!(cluster_alert(Some(&lease)).is_some_and(|(w, _)| w.starts_with("lease store")));
    let dup = json!({"enabled": true, "elect_leader": true, "conflict": true,
        "conflict_names": ["n1"]});
    assert!(cluster_alert(Some(&dup)).is_some_and(|(w, _)| w.starts_with("duplicate nodeName")));
    assert_eq!(cluster_alert(None), None);
}

#[test]
fn the_alarm_rises_on_a_new_failure_and_a_acknowledges_it() {
    let mut alarm = Alarm::default();
    // The first poll's failures are old news but still raise the alarm.
    assert!(alarm
        .observe(&[failed("a", Some(1.0), None, T0)])
        .is_empty());
    assert!(alarm.raised());
    assert!(alarm.ack());
    assert!(!alarm.raised());
    assert!(!alarm.ack(), "nothing left to acknowledge");
    // The same failure polled again stays acknowledged.
    alarm.observe(&[failed("a", Some(1.0), None, T0)]);
    assert!(!alarm.raised());
    // A new failure raises it again.
    assert_eq!(alarm.observe(&[failed("a", Some(1.0), None, T20)]), ["a"]);
    assert!(alarm.raised());
    // A recovery clears it; a success is never news.
    assert!(alarm
        .observe(&[ran("a", "success", Some(0.0), None, T300)])
        .is_empty());
    assert!(!alarm.raised());
    assert!(!alarm.ack());
}

#[test]
fn a_first_run_that_fails_is_news_but_a_job_new_to_the_poll_is_not() {
    let never_ran = |name: &str| Job {
        name: name.to_owned(),
        enabled: true,
        ..Job::default()
    };
    let mut alarm = Alarm::default();
    assert!(alarm.observe(&[never_ran("a")]).is_empty());
    assert!(!alarm.raised());
    // a's first run failed: it was listed before without a finish
    assert_eq!(alarm.observe(&[failed("a", Some(1.0), None, T0)]), ["a"]);
    assert!(alarm.raised());
    // b arrives (a reload) with a failure already behind it: old news
    let both = [
        failed("a", Some(1.0), None, T0),
        failed("b", Some(2.0), None, T0),
    ];
    assert!(alarm.observe(&both).is_empty());
    // and its next failure is news again
    let later = [
        failed("a", Some(1.0), None, T0),
        failed("b", Some(2.0), None, T20),
    ];
    assert_eq!(alarm.observe(&later), ["b"]);
}

#[test]
fn the_timeline_is_newest_first_and_can_show_only_failures() {
    let jobs = vec![
        failed("old", Some(1.0), None, T0),
        ran("new", "success", Some(0.0), None, T300),
        failed("mid", Some(1.0), None, T20),
        Job {
            name: "never".to_owned(),
            ..Job::default()
        },
    ];
    let names = |v: Vec<Entry>| v.into_iter().map(|e| e.name).collect::<Vec<_>>();
    assert_eq!(names(timeline(&jobs, false)), ["new", "mid", "old"]);
    assert_eq!(names(timeline(&jobs, true)), ["mid", "old"]);
}

#[test]
fn the_timeline_panel_marks_the_incident() {
    let jobs = vec![
        failed("a", Some(69.0), None, T0),
        failed("b", Some(69.0), None, T0),
        ran("c", "success", Some(0.0), None, T20),
    ];
    let p = crate::tui::theme::Theme::named("standard")
        .expect("a theme")
        .palette();
    let shown = |fail_only, sel, rows| Shown {
        fail_only,
        ascii: false,
        sel,
        rows,
    };
    let text: Vec<String> = body(&jobs, shown(false, 0, 40), &p, 1.8e9)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert_eq!(text.len(), 3);
    assert!(text[0].contains("c") && !text[0].contains("incident"));
    assert!(text[1].contains("exit 69") && text[1].contains("◉ incident"));
    assert!(text[0].starts_with('▎'), "the selection: {text:?}");
    assert!(text[1].starts_with(' '));
    // two rows fit: the window follows the selection down
    let text: Vec<String> = body(&jobs, shown(false, 2, 2), &p, 1.8e9)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert_eq!(text.len(), 2);
    assert!(
        text[1].starts_with('▎') && text[1].contains(" b "),
        "{text:?}"
    );
    let none = body(&jobs[2..], shown(true, 5, 40), &p, 1.8e9);
    assert!(none[0].spans[0].content.contains("nothing failing"));
}
