//! What the fuzz targets (fuzz/, run by scripts/fuzz.sh) check, replayed on
//! the committed seeds with plain `cargo test`, so CI holds the same
//! promises without nightly or libFuzzer. Every crash the fuzzer finds gets
//! its own case here, reproducing it through the same public API.

use std::path::PathBuf;

use chrono::{DateTime, TimeZone, Utc};
use cronstable::config::{load_sources, Source, SourceKind};
use cronstable::cronexpr::{CronExpr, Schedule, TimeBase};
use cronstable::gossip::payload::{decode, encode};

/// The committed seed files of one fuzz target.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("seed-"))
        .map(|e| {
            let bytes = std::fs::read(e.path()).expect("seed file readable");
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "too few seeds for {target}: {}", out.len());
    out
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
        .single()
        .expect("valid instant")
}

/// The cronexpr target's walk: next strictly after, prev strictly before,
/// occurrences increasing, in three clocks.
#[test]
fn cron_seeds_walk_in_every_clock() {
    let clocks = [
        TimeBase::Utc,
        TimeBase::Zone(chrono_tz::Europe::Berlin),
        TimeBase::Zone(chrono_tz::America::Sao_Paulo),
    ];
    let instants = [
        at(2026, 3, 29, 0, 30, 0),
        at(2026, 10, 25, 0, 59, 59),
        at(2099, 12, 31, 23, 59, 59),
    ];
    let mut parsed = 0;
    for (name, bytes) in seeds("cronexpr") {
        let text = String::from_utf8_lossy(&bytes);
        let expr = text.split('\0').next().unwrap_or_default();
        let Ok(schedule) = Schedule::parse(expr, "job") else {
            continue;
        };
        let Some(cron) = schedule.cron() else {
            continue;
        };
        parsed += 1;
        for clock in &clocks {
            for &t in &instants {
                if let Some(next) = cron.next_after(t, clock) {
                    assert!(next > t, "{name}: next_after({t}) = {next}");
                }
                if let Some(prev) = cron.prev_before(t, clock) {
                    assert!(prev < t, "{name}: prev_before({t}) = {prev}");
                }
                let fires: Vec<_> = cron.occurrences(t, clock).take(5).collect();
                assert!(fires.windows(2).all(|w| w[0] < w[1]), "{name}: {fires:?}");
            }
        }
    }
    assert!(parsed >= 10, "only {parsed} cron seeds parsed");
}

/// The cron_differential target: next_after in UTC equals the first
/// matching minute of a plain scan.
#[test]
fn cron_seeds_agree_with_a_minute_scan() {
    let start = at(2026, 2, 27, 13, 7, 31);
    for (name, bytes) in seeds("cron_differential") {
        let text = String::from_utf8_lossy(&bytes);
        let expr = text.split('\0').next().unwrap_or_default();
        let Ok(cron) = CronExpr::parse(expr, Some("job")) else {
            continue;
        };
        if cron.has_seconds() {
            continue;
        }
        // The first whole minute strictly after `start`.
        let first = start + chrono::Duration::seconds(29);
        let scan = (0..8 * 24 * 60)
            .map(|i| first + chrono::Duration::minutes(i))
            .find(|m| cron.matches(*m, &TimeBase::Utc));
        if let Some(want) = scan {
            assert_eq!(
                cron.next_after(start, &TimeBase::Utc),
                Some(want),
                "{name}: {expr}"
            );
        }
    }
}

/// The config_yaml target: every seed loads or is refused, as YAML and as
/// a crontab, without a panic; the well-formed fixtures load.
#[test]
fn config_seeds_load_or_refuse_cleanly() {
    let mut loaded = 0;
    for (name, bytes) in seeds("config_yaml") {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for kind in [SourceKind::Yaml, SourceKind::Crontab] {
            let source = Source {
                name: name.clone(),
                text: text.clone(),
                kind,
                include_dir: None,
            };
            if load_sources(&[source]).is_ok() {
                loaded += 1;
            }
        }
    }
    assert!(loaded >= 20, "only {loaded} seed loads succeeded");
}

/// The gossip_payload target: what decodes survives encode -> decode.
#[test]
fn gossip_seeds_round_trip() {
    let mut decoded = 0;
    for (name, bytes) in seeds("gossip_payload") {
        let Ok(payload) = decode(&bytes) else {
            continue;
        };
        decoded += 1;
        assert_eq!(decode(&encode(&payload)).as_ref(), Ok(&payload), "{name}");
    }
    assert!(decoded >= 3, "only {decoded} gossip seeds decoded");
}

/// Found by `gossip_payload` (first run): a `duration` written with more
/// digits than an f64 holds decoded to a value whose shortest spelling,
/// decoded again, was one unit in the last place away
/// (1.222222222222222e33 against 1.2222222222222221e33): serde_json's
/// default float parser is not correctly rounded. Fixed by its
/// `float_roundtrip` feature (Cargo.toml).
#[test]
fn gossip_long_float_round_trips() {
    let body = br#"{"job_summaries": {"backup": {"running": false, "enabled": true, "scheduled_in": null, "last": {"outcome": "success", "finished_at": "x", "duration": 1222222222222222222222222222222222.25, "exit_code": 0}}}}"#;
    let payload = decode(body).expect("a well-formed payload decodes");
    assert_eq!(decode(&encode(&payload)).as_ref(), Ok(&payload));
}
