use super::*;
use crate::tui::model::{LastRun, Live, Pause, Sla};

fn job(name: &str) -> Job {
    Job {
        name: name.to_owned(),
        enabled: true,
        paused: Some(None),
        ..Job::default()
    }
}

fn finished(name: &str, outcome: &str, at: &str, duration: f64) -> Job {
    Job {
        last_run: Some(LastRun {
            outcome: outcome.to_owned(),
            finished_at: Some(at.to_owned()),
            duration: Some(duration),
            ..LastRun::default()
        }),
        ..job(name)
    }
}

#[test]
fn health_follows_the_web_pages_ladder() {
    assert_eq!(health(&job("a")), (Health::Pending, "Pending"));
    let t = "2026-01-01T00:00:00+00:00";
    assert_eq!(health(&finished("a", "success", t, 1.0)).0, Health::Ok);
    assert_eq!(health(&finished("a", "failure", t, 1.0)).0, Health::Fail);
    assert_eq!(
        health(&finished("a", "cancelled", t, 1.0)).0,
        Health::Cancelled
    );
    assert_eq!(health(&finished("a", "unknown", t, 1.0)).0, Health::Unknown);
    assert_eq!(
        health(&finished("a", "skipped", t, 1.0)),
        (Health::Pending, "Skipped")
    );
    let running = Job {
        running: true,
        ..finished("a", "failure", t, 1.0)
    };
    assert_eq!(health(&running).0, Health::Run);
    let paused = Job {
        paused: Some(Some(Pause::default())),
        ..job("a")
    };
    assert_eq!(health(&paused).0, Health::Paused);
    // a run in progress outranks the pause; disabled outranks everything
    let both = Job {
        running: true,
        ..paused.clone()
    };
    assert_eq!(health(&both).0, Health::Run);
    let off = Job {
        enabled: false,
        ..both
    };
    assert_eq!(health(&off), (Health::Disabled, "Disabled"));
}

#[test]
fn glyphs_have_ascii_twins() {
    assert_eq!(glyph(Health::Paused, false), "⏸");
    assert_eq!(glyph(Health::Paused, true), "p");
    assert_eq!(glyph(Health::Fail, true), "x");
    assert_eq!(outcome_glyph(Outcome::Skipped, false), "⊘");
    for h in [
        Health::Ok,
        Health::Fail,
        Health::Run,
        Health::Pending,
        Health::Disabled,
        Health::Paused,
        Health::Cancelled,
        Health::Unknown,
    ] {
        assert!(glyph(h, true).is_ascii());
    }
}

#[test]
fn segments_and_sort_keys_cycle() {
    let mut s = Segment::All;
    let mut seen = vec![];
    for _ in 0..5 {
        seen.push(s.name());
        s = s.next();
    }
    assert_eq!(seen, ["all", "ok", "fail", "run", "off"]);
    assert_eq!(s, Segment::All);
    assert!(Segment::Off.admits(Health::Disabled));
    assert!(!Segment::Ok.admits(Health::Paused));
    assert!(Segment::All.admits(Health::Paused));
    assert_eq!(SortKey::Duration.next(), SortKey::Name);
}

fn names(jobs: &[Job], rows: &[usize]) -> Vec<String> {
    rows.iter().map(|&i| jobs[i].name.clone()).collect()
}

#[test]
fn the_view_filters_and_sorts() {
    let jobs = vec![
        finished("zeta", "success", "2026-01-01T00:00:10+00:00", 5.0),
        finished("Backup", "failure", "2026-01-01T00:00:30+00:00", 1.0),
        Job {
            running: true,
            command: "rsync /srv".into(),
            ..job("apple")
        },
        Job {
            enabled: false,
            ..job("backup")
        },
        Job {
            scheduled_in: Some(5.0),
            ..finished("mid", "success", "2026-01-01T00:00:20+00:00", 9.0)
        },
    ];
    let facts = Facts::of(&jobs);
    let view = |needle: &str, seg, key, desc| {
        names(&jobs, &compute_view(&jobs, &facts, needle, seg, key, desc))
    };
    assert_eq!(
        view("", Segment::All, SortKey::Name, false),
        ["apple", "backup", "Backup", "mid", "zeta"]
    );
    assert_eq!(
        view("", Segment::All, SortKey::Name, true),
        ["zeta", "mid", "Backup", "backup", "apple"]
    );
    assert_eq!(
        view("", Segment::All, SortKey::Status, false),
        ["apple", "Backup", "mid", "zeta", "backup"]
    );
    assert_eq!(
        view("", Segment::All, SortKey::Last, false),
        ["Backup", "mid", "zeta", "apple", "backup"]
    );
    assert_eq!(view("", Segment::All, SortKey::Next, false)[0], "mid");
    assert_eq!(
        view("", Segment::All, SortKey::Duration, false)[..3],
        ["mid", "zeta", "Backup"]
    );
    // the needle matches the name or the command, any case, trimmed
    assert_eq!(
        view(" BACK ", Segment::All, SortKey::Name, false),
        ["backup", "Backup"]
    );
    assert_eq!(view("rsync", Segment::All, SortKey::Name, false), ["apple"]);
    assert_eq!(view("", Segment::Ok, SortKey::Name, false), ["mid", "zeta"]);
    assert_eq!(view("", Segment::Off, SortKey::Name, false), ["backup"]);
    assert_eq!(view("", Segment::Run, SortKey::Name, false), ["apple"]);
    assert!(view("nothing", Segment::All, SortKey::Name, false).is_empty());
}

#[test]
fn facts_count_and_flag() {
    let jobs = vec![
        Job {
            running_resources: Some(Live::default()),
            running: true,
            ..job("a")
        },
        Job {
            sla: Some(Sla {
                state: "late".into(),
            }),
            ..job("b")
        },
        Job {
            cluster_owner: Some(None),
            paused: Some(Some(Pause::default())),
            ..job("c")
        },
    ];
    let f = Facts::of(&jobs);
    assert_eq!(f.count(Health::Run), 1);
    assert_eq!(f.count(Health::Pending), 1);
    assert_eq!(f.count(Health::Paused), 1);
    assert!(f.monitored && f.overdue && f.spread && f.paused);
    let plain = Facts::of(&[job("x")]);
    assert!(!plain.monitored && !plain.overdue && !plain.spread && !plain.paused);
}

#[test]
fn columns_fit_the_width() {
    let facts = Facts::default();
    let wide = columns(160, &facts);
    let kinds: Vec<Column> = wide.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        kinds,
        [
            Column::Status,
            Column::Name,
            Column::Schedule,
            Column::Last,
            Column::Next,
            Column::Duration,
            Column::Spark,
            Column::Command
        ]
    );
    let used = 1 + wide.iter().map(|(_, w)| w + 1).sum::<usize>();
    assert!(
        (159..=160).contains(&used),
        "the slack goes to name and command: {used}"
    );
    let narrow = columns(80, &facts);
    let kinds: Vec<Column> = narrow.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        kinds,
        [
            Column::Status,
            Column::Name,
            Column::Last,
            Column::Next,
            Column::Command
        ]
    );
    assert!(narrow.iter().map(|(_, w)| w + 1).sum::<usize>() < 80);
    let tiny = columns(40, &facts);
    assert_eq!(1 + tiny.iter().map(|(_, w)| w + 1).sum::<usize>(), 40);
    let flagged = Facts {
        monitored: true,
        spread: true,
        overdue: true,
        paused: true,
        ..Facts::default()
    };
    let cols = columns(200, &flagged);
    let width_of = |c: Column| cols.iter().find(|(k, _)| *k == c).map(|(_, w)| *w);
    assert_eq!(width_of(Column::Status), Some(19));
    assert_eq!(width_of(Column::Next), Some(12));
    assert_eq!(width_of(Column::Resources), Some(15));
    assert_eq!(width_of(Column::Owner), Some(12));
}

#[test]
fn the_sparkline_scales_to_the_longest_run() {
    let run = |outcome: &str, d: Option<f64>| HistoryEntry {
        outcome: outcome.into(),
        duration: d,
    };
    let history = vec![
        run("success", Some(100.0)),
        run("success", Some(1.0)),
        run("failure", Some(4.0)),
        run("skipped", None),
        run("success", Some(8.0)),
    ];
    let bars = sparkline(&history, 4);
    assert_eq!(
        bars,
        vec![
            ("▂", Outcome::Ok),
            ("▅", Outcome::Fail),
            ("▁", Outcome::Skipped),
            ("█", Outcome::Ok)
        ]
    );
    assert!(sparkline(&[], 10).is_empty());
    assert_eq!(
        sparkline(&[run("success", Some(0.0))], 10),
        vec![("▁", Outcome::Ok)]
    );
}

#[test]
fn the_window_follows_the_cursor() {
    assert_eq!(scroll_window(5, 10, 3, 7), 0);
    assert_eq!(scroll_window(100, 10, 0, 0), 0);
    assert_eq!(scroll_window(100, 10, 10, 0), 1);
    assert_eq!(scroll_window(100, 10, 55, 50), 50);
    assert_eq!(scroll_window(100, 10, 40, 50), 40);
    assert_eq!(scroll_window(100, 10, 99, 0), 90);
    assert_eq!(
        scroll_window(100, 10, 5, 95),
        5,
        "an offset past the end is clamped first"
    );
}

#[test]
fn compact_density_drops_the_schedule_and_sparkline_and_keeps_the_width() {
    let facts = Facts::default();
    let compact = columns_at(160, &facts, true);
    let kinds: Vec<Column> = compact.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        kinds,
        [
            Column::Status,
            Column::Name,
            Column::Last,
            Column::Next,
            Column::Duration,
            Column::Command
        ]
    );
    let used = 1 + compact.iter().map(|(_, w)| w + 1).sum::<usize>();
    assert!((159..=160).contains(&used), "{used}");
    // at a width where the full board still fits the schedule
    assert!(columns(110, &facts)
        .iter()
        .any(|(c, _)| *c == Column::Schedule));
    assert!(!columns_at(110, &facts, true)
        .iter()
        .any(|(c, _)| *c == Column::Schedule));
    assert_eq!(columns_at(160, &facts, false), columns(160, &facts));
}
