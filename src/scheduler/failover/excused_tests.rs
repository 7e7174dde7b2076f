//! The pause windows a catch-up excuses, from a job's pause marks.

use super::excused::{covering, pause_windows, Excused, PauseLog, MARKS_KEPT};
use crate::scheduler::pause::{PauseMark, PauseWindow};
use chrono::{DateTime, TimeZone, Utc};

fn at(m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 10, m, 0).unwrap()
}

fn paused(since: u32, until: u32) -> PauseMark {
    PauseMark::Paused(PauseWindow {
        since: at(since),
        until: at(until),
        note: String::new(),
        by: "ops".into(),
        channel: "api".into(),
    })
}

fn resumed(m: u32) -> PauseMark {
    PauseMark::Resumed {
        at: at(m),
        by: "ops".into(),
    }
}

fn span(since: u32, until: u32) -> Excused {
    Excused {
        since: at(since),
        until: at(until),
    }
}

#[test]
fn each_mark_sequence_gives_its_windows() {
    let cases: Vec<(&str, Vec<PauseMark>, Vec<Excused>)> = vec![
        ("no marks", vec![], vec![]),
        ("one pause", vec![paused(10, 20)], vec![span(10, 20)]),
        (
            "a lapsed pause still counts",
            vec![paused(1, 2)],
            vec![span(1, 2)],
        ),
        ("only a resume", vec![resumed(15)], vec![]),
        (
            "a resume ends the window early",
            vec![paused(10, 20), resumed(15)],
            vec![span(10, 15)],
        ),
        (
            "a resume after the window changes nothing",
            vec![paused(10, 20), resumed(25)],
            vec![span(10, 20)],
        ),
        (
            "a resume before the pause changes nothing",
            vec![resumed(5), paused(10, 20)],
            vec![span(10, 20)],
        ),
        (
            "a resume at the pause's own instant wins",
            vec![paused(10, 20), resumed(10)],
            vec![],
        ),
        (
            "an overwrite that shortens the pause",
            vec![paused(10, 40), paused(15, 20)],
            vec![span(10, 15), span(15, 20)],
        ),
        (
            "an overwrite that extends the pause",
            vec![paused(10, 20), paused(15, 40)],
            vec![span(10, 15), span(15, 40)],
        ),
        (
            "two separate pauses",
            vec![paused(10, 12), paused(30, 35)],
            vec![span(10, 12), span(30, 35)],
        ),
        (
            "pause, resume, pause again, resume",
            vec![paused(10, 40), resumed(12), paused(20, 40), resumed(22)],
            vec![span(10, 12), span(20, 22)],
        ),
        ("an empty window is dropped", vec![paused(10, 10)], vec![]),
    ];
    for (what, marks, want) in cases {
        assert_eq!(pause_windows(&marks), want, "{what}");
        // The order the marks arrive in does not matter (a peer's append
        // can land after a newer local one), nor do repeats.
        let mut reversed = marks.clone();
        reversed.reverse();
        assert_eq!(pause_windows(&reversed), want, "{what}, reversed");
        let doubled: Vec<PauseMark> = marks.iter().chain(marks.iter()).cloned().collect();
        assert_eq!(pause_windows(&doubled), want, "{what}, repeated");
    }
}

#[test]
fn every_ordering_of_four_marks_gives_the_same_windows() {
    let marks = vec![paused(10, 40), resumed(12), paused(20, 50), resumed(45)];
    let want = vec![span(10, 12), span(20, 45)];
    // All 24 permutations (Heap's algorithm).
    let mut perm = marks.clone();
    let mut c = [0usize; 4];
    assert_eq!(pause_windows(&perm), want);
    let mut i = 0;
    let mut seen = 1;
    while i < 4 {
        if c[i] < i {
            if i % 2 == 0 {
                perm.swap(0, i);
            } else {
                perm.swap(c[i], i);
            }
            assert_eq!(pause_windows(&perm), want, "{perm:?}");
            seen += 1;
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    assert_eq!(seen, 24);
}

#[test]
fn a_window_is_half_open() {
    let w = span(10, 20);
    assert!(!w.covers(at(10) - chrono::TimeDelta::nanoseconds(1)));
    assert!(w.covers(at(10)));
    assert!(w.covers(at(20) - chrono::TimeDelta::nanoseconds(1)));
    assert!(!w.covers(at(20)), "a slot exactly on until is owed");
    // The covering window that ends last is the one the walk jumps over.
    let windows = [span(10, 20), span(15, 30), span(40, 50)];
    assert_eq!(covering(&windows, at(17)), Some(span(15, 30)));
    assert_eq!(covering(&windows, at(12)), Some(span(10, 20)));
    assert_eq!(covering(&windows, at(35)), None);
}

#[test]
fn the_log_keeps_the_newest_marks_of_each_job_once() {
    let mut log = PauseLog::default();
    assert!(log.windows("j").is_empty());
    log.note("j", paused(10, 20));
    log.note("j", paused(10, 20));
    log.note("j", resumed(15));
    log.note("k", paused(0, 5));
    assert_eq!(log.windows("j"), vec![span(10, 15)]);
    assert_eq!(log.windows("k"), vec![span(0, 5)]);
    // Past the bound, the oldest marks go first.
    let mut log = PauseLog::default();
    let total = u32::try_from(MARKS_KEPT).unwrap() + 4;
    for m in 0..total {
        log.note("j", paused(2 * m, 2 * m + 1));
    }
    let windows = log.windows("j");
    assert_eq!(windows.len(), MARKS_KEPT);
    assert_eq!(windows[0], span(8, 9), "the four oldest were dropped");
    assert_eq!(
        windows.last(),
        Some(&span(2 * (total - 1), 2 * (total - 1) + 1))
    );
    // A late-arriving old mark older than everything kept is dropped
    // again at once; it cannot evict a newer one.
    log.note("j", paused(0, 1));
    assert_eq!(log.windows("j")[0], span(8, 9));
}
