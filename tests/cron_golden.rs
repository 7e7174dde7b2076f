//! Replays the original engine's recorded answers
//! (`../shared/data/cron_golden.json`, seen from the project root) against
//! ours: parse ok/error, `next` delays from fixed naive and zone-aware
//! instants, `test` matches, and equality of spellings.
//!
//! The file is read at test time, never copied into the repository. When it
//! is missing the test is skipped with a message, except under `CI=true`,
//! where a missing file is a failure.

use std::path::PathBuf;

use chrono::{DateTime, NaiveDateTime, Utc};
use cronstable::cronexpr::{CronExpr, Fold, TimeBase};
use serde_json::Value;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/cron_golden.json")
}

fn load() -> Option<Value> {
    let path = golden_path();
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).expect("golden file is valid JSON")),
        Err(err) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("golden vectors missing at {}: {err}", path.display());
            }
            eprintln!(
                "skipping: golden vectors not found at {} ({err})",
                path.display()
            );
            None
        }
    }
}

fn naive(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .unwrap_or_else(|e| panic!("bad instant {s:?} in golden file: {e}"))
}

/// A recorded delay (seconds as a float, or null for "never").
fn delay(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Seconds between two instants, exact to the microsecond.
fn seconds_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    let us = (to - from)
        .num_microseconds()
        .expect("delay fits in microseconds");
    us as f64 / 1e6
}

/// Whether two delays agree: both absent, or within a nanosecond (the
/// recorded floats came from another arithmetic path).
fn same(got: Option<f64>, want: Option<f64>) -> bool {
    match (got, want) {
        (None, None) => true,
        (Some(g), Some(w)) => (g - w).abs() < 1e-9,
        _ => false,
    }
}

struct Instants {
    naive_nows: Vec<String>,
    aware_nows: Vec<(String, TimeBase, DateTime<Utc>)>,
    test_dts: Vec<String>,
}

fn instants(g: &Value) -> Instants {
    let strings = |key: &str| -> Vec<String> {
        g[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} missing"))
            .iter()
            .map(|v| v.as_str().expect("string").to_owned())
            .collect()
    };
    let aware_nows = g["aware_next_nows"]
        .as_array()
        .expect("aware_next_nows missing")
        .iter()
        .map(|spec| {
            let zone_name = spec["tz"].as_str().expect("tz");
            let zone: chrono_tz::Tz = zone_name.parse().expect("known zone");
            let base = TimeBase::Zone(zone);
            let fold = match spec["fold"].as_i64() {
                Some(1) => Fold::After,
                _ => Fold::Before,
            };
            let dt = spec["dt"].as_str().expect("dt");
            let instant = base.resolve(naive(dt), fold);
            (
                format!("{zone_name} {dt} fold={}", spec["fold"]),
                base,
                instant,
            )
        })
        .collect();
    Instants {
        naive_nows: strings("naive_next_nows"),
        aware_nows,
        test_dts: strings("test_dts"),
    }
}

/// Checks one expression's vectors, pushing a line per mismatch; returns
/// how many vectors were checked.
fn check_expr(text: &str, entry: &Value, at: &Instants, failures: &mut Vec<String>) -> usize {
    let parsed = CronExpr::parse(text, None);
    let ok = entry["ok"].as_bool().expect("ok flag");
    let expr = match (ok, parsed) {
        (false, Err(_)) => return 1,
        (false, Ok(e)) => {
            failures.push(format!(
                "{text:?}: expected a parse error, parsed as {}",
                e.normal_form()
            ));
            return 1;
        }
        (true, Err(e)) => {
            failures.push(format!("{text:?}: expected to parse, got error: {e}"));
            return 1;
        }
        (true, Ok(e)) => e,
    };
    let mut checked = 1;
    let column = |key: &str| entry[key].as_array().cloned().unwrap_or_default();
    let next = column("next");
    assert_eq!(
        next.len(),
        at.naive_nows.len(),
        "{text:?}: next vector length"
    );
    for (now, want) in at.naive_nows.iter().zip(&next) {
        let from = naive(now).and_utc();
        let got = expr
            .next_after(from, &TimeBase::Utc)
            .map(|t| seconds_between(from, t));
        if !same(got, delay(want)) {
            failures.push(format!(
                "{text:?}: next from {now} (naive): expected {want}, got {got:?}"
            ));
        }
        checked += 1;
    }
    let aware = column("aware_next");
    assert_eq!(
        aware.len(),
        at.aware_nows.len(),
        "{text:?}: aware vector length"
    );
    for ((label, base, from), want) in at.aware_nows.iter().zip(&aware) {
        let got = expr
            .next_after(*from, base)
            .map(|t| seconds_between(*from, t));
        if !same(got, delay(want)) {
            failures.push(format!(
                "{text:?}: next from {label}: expected {want}, got {got:?}"
            ));
        }
        checked += 1;
    }
    let tests = column("test");
    assert_eq!(
        tests.len(),
        at.test_dts.len(),
        "{text:?}: test vector length"
    );
    for (dt, want) in at.test_dts.iter().zip(&tests) {
        let got = expr.matches(naive(dt).and_utc(), &TimeBase::Utc);
        if Some(got) != want.as_bool() {
            failures.push(format!("{text:?}: test({dt}): expected {want}, got {got}"));
        }
        checked += 1;
    }
    checked
}

#[test]
fn every_golden_vector_matches_the_original_engine() {
    let Some(g) = load() else { return };
    let at = instants(&g);
    let exprs = g["exprs"].as_object().expect("exprs missing");
    assert!(
        exprs.len() > 200,
        "suspiciously few expressions: {}",
        exprs.len()
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for (text, entry) in exprs {
        checked += check_expr(text, entry, &at, &mut failures);
    }
    for pair in g["equality"].as_array().expect("equality missing") {
        let (a, b) = (
            pair["a"].as_str().expect("a"),
            pair["b"].as_str().expect("b"),
        );
        let want = pair["equal"].as_bool().expect("equal");
        let ea = CronExpr::parse(a, None).expect("equality operand parses");
        let eb = CronExpr::parse(b, None).expect("equality operand parses");
        if (ea == eb) != want {
            failures.push(format!("{a:?} == {b:?}: expected {want}, got {}", ea == eb));
        }
        // the normal form is the grouping key: it must agree with ==
        if (ea.normal_form() == eb.normal_form()) != want {
            failures.push(format!("normal forms of {a:?} and {b:?} disagree with =="));
        }
        checked += 1;
    }
    eprintln!(
        "golden: {checked} vectors checked, {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} golden vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
