//! Parses arbitrary text as a schedule and, when it parses, walks it from a
//! fuzzer-chosen instant in a few clocks. Nothing may panic and every call
//! must return (libFuzzer's `-timeout` turns an endless search into a
//! crash).
//!
//! Input: `expression [\0 hash-key [\0 instant(8 bytes LE) clock(1 byte)]]`,
//! so a plain-text seed is a valid input on its own.
#![no_main]

use std::sync::Once;

use chrono::{DateTime, TimeZone, Utc};
use cronstable::cronexpr::{CronExpr, ObjectForm, Schedule, TimeBase};
use libfuzzer_sys::fuzz_target;

/// 1900-01-01 to 2200-01-01: past both ends of the engine's 1970..=2099
/// range on purpose, so the edges are exercised too.
const FIRST: i64 = -2_208_988_800;
const SPAN: i64 = 7_258_118_400 - FIRST;

static LOCAL_ZONE: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    // The local clock is a zone with a 30-minute DST shift, so `Local`
    // differs from both UTC and Berlin. Set once, before any clock is read.
    LOCAL_ZONE.call_once(|| std::env::set_var("TZ", "Australia/Lord_Howe"));

    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let expr = parts.next().unwrap_or_default();
    let key = parts.next().unwrap_or("job");
    let tail = parts.next().map(str::as_bytes).unwrap_or_default();
    let (instant, clock) = pick_instant(tail);

    object_form(expr);

    let Ok(schedule) = Schedule::parse(expr, key) else {
        return;
    };
    let _ = schedule.canonical();
    let Some(cron) = schedule.cron() else {
        return;
    };
    walk(cron, instant, &clock);
});

/// The instant and clock the input's tail selects (a fixed default when the
/// tail is short: a Berlin spring-forward night).
fn pick_instant(tail: &[u8]) -> (DateTime<Utc>, TimeBase) {
    let default = Utc.with_ymd_and_hms(2026, 3, 29, 0, 30, 0).single();
    let Some(default) = default else {
        unreachable!("a fixed, valid date")
    };
    if tail.len() < 9 {
        return (default, TimeBase::Zone(chrono_tz::Europe::Berlin));
    }
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&tail[..8]);
    let secs = FIRST + i64::from_le_bytes(raw).rem_euclid(SPAN);
    let instant = DateTime::from_timestamp(secs, 0).unwrap_or(default);
    let clock = match tail[8] % 4 {
        0 => TimeBase::Utc,
        1 => TimeBase::Zone(chrono_tz::Europe::Berlin),
        2 => TimeBase::Local,
        _ => TimeBase::Zone(chrono_tz::America::Sao_Paulo),
    };
    (instant, clock)
}

/// Every public way of walking an expression, with the invariants the API
/// promises (strictly after / strictly before / increasing).
fn walk(cron: &CronExpr, at: DateTime<Utc>, clock: &TimeBase) {
    let _ = (cron.normal_form(), cron.resolved(), cron.is_hashed());
    let _ = cron.matches(at, clock);
    let _ = cron.seconds_until_next(at, clock);
    if let Some(next) = cron.next_after(at, clock) {
        assert!(next > at, "next_after({at}) = {next} is not after");
        if *clock == TimeBase::Utc {
            assert!(cron.matches(next, clock), "UTC fire {next} does not match");
        }
    }
    if let Some(prev) = cron.prev_before(at, clock) {
        assert!(prev < at, "prev_before({at}) = {prev} is not before");
    }
    let mut last = at;
    for fire in cron.occurrences(at, clock).take(8) {
        assert!(fire > last, "occurrences went back: {fire} after {last}");
        last = fire;
    }
}

/// The object form: `second|minute|hour|dom|month|dow|year`, an empty
/// column meaning "not given"; what it lowers to is parsed in turn.
fn object_form(expr: &str) {
    let cols: Vec<&str> = expr.split('|').collect();
    if cols.len() != 7 {
        return;
    }
    let col = |i: usize| Some(cols[i]).filter(|c| !c.is_empty());
    let form = ObjectForm {
        second: col(0),
        minute: col(1),
        hour: col(2),
        day_of_month: col(3),
        month: col(4),
        day_of_week: col(5),
        year: col(6),
    };
    if let Ok(text) = form.to_expression() {
        let _ = CronExpr::parse(&text, Some("job"));
    }
}
