//! `GET /schedule/preview`: parse, preview and lint one expression with the
//! scheduler's own engine. Pure apart from "now", which is an argument.

use crate::cronexpr::{describe_parsed, CronExpr, Linter, TimeBase, REBOOT_DESCRIPTION};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use std::collections::HashMap;

/// Default number of fires returned.
pub const DEFAULT_LIMIT: usize = 12;
/// Most fires returned.
pub const MAX_LIMIT: usize = 60;

/// Builds the preview payload, or the reason the query is a 400.
pub fn preview(query: &HashMap<String, String>, now: DateTime<Utc>) -> Result<Value, String> {
    let expr = query
        .get("expr")
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .ok_or("expr is required")?;
    let tz_name = query.get("tz").map(String::as_str).unwrap_or("UTC");
    let zone: chrono_tz::Tz = tz_name
        .parse()
        .map_err(|_| format!("unknown timezone '{tz_name}'"))?;
    let limit_text = query.get("limit").or_else(|| query.get("count"));
    let limit = match limit_text {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| format!("limit must be an integer, got '{text}'"))?
            .clamp(1, MAX_LIMIT),
    };
    let seed = query.get("seed").map(String::as_str);
    let mut payload = json!({"expression": expr, "timezone": tz_name});
    // The preview reads `@reboot` in any case, as the original's does.
    if expr.eq_ignore_ascii_case("@reboot") {
        payload["valid"] = json!(true);
        payload["reboot"] = json!(true);
        payload["description"] = json!(REBOOT_DESCRIPTION);
        payload["fires"] = json!([]);
        payload["never_fires"] = json!(false);
        payload["lint"] = json!([]);
        if let Some(seed) = seed {
            payload["seed"] = json!(seed);
        }
        return Ok(payload);
    }
    let parsed = match CronExpr::parse(expr, seed) {
        Ok(parsed) => parsed,
        Err(err) => {
            payload["valid"] = json!(false);
            payload["error"] = json!(err.to_string());
            return Ok(payload);
        }
    };
    let base = TimeBase::Zone(zone);
    let mut fires = Vec::with_capacity(limit);
    let mut cursor = now;
    while fires.len() < limit {
        match parsed.next_after(cursor, &base) {
            Some(next) => {
                fires.push(
                    next.with_timezone(&zone)
                        .to_rfc3339_opts(SecondsFormat::Secs, false),
                );
                cursor = next;
            }
            None => break,
        }
    }
    payload["valid"] = json!(true);
    payload["reboot"] = json!(false);
    payload["normalized"] = json!(parsed.canonical());
    payload["description"] = json!(describe_parsed(expr, &parsed));
    payload["never_fires"] = json!(fires.is_empty());
    payload["fires"] = json!(fires);
    payload["lint"] = json!(Linter::new(now).lint(&parsed, &base));
    if let Some(seed) = seed {
        payload["seed"] = json!(seed);
        if parsed.is_hashed() {
            payload["resolved"] = json!(parsed.resolved());
        }
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 18, 15, 40, 0).unwrap()
    }

    #[test]
    fn fires_in_the_requested_frame() {
        let v = preview(&q(&[("expr", "*/7 * * * *"), ("count", "2")]), now()).unwrap();
        assert_eq!(v["valid"], true);
        assert_eq!(
            v["fires"],
            json!(["2026-07-18T15:42:00+00:00", "2026-07-18T15:49:00+00:00"])
        );
        assert_eq!(v["lint"][0]["code"], "uneven-step");
        assert_eq!(
            v["description"],
            "At minutes 00, 07, 14, 21, 28, 35, 42, 49, 56 past every hour, every day"
        );
        let v = preview(
            &q(&[
                ("expr", "0 9 * * *"),
                ("tz", "Europe/Berlin"),
                ("limit", "1"),
            ]),
            now(),
        )
        .unwrap();
        assert_eq!(v["fires"], json!(["2026-07-19T09:00:00+02:00"]));
    }

    #[test]
    fn errors_and_special_cases() {
        assert!(preview(&q(&[]), now()).unwrap_err().contains("expr"));
        assert!(
            preview(&q(&[("expr", "* * * * *"), ("tz", "Nowhere/X")]), now())
                .unwrap_err()
                .contains("Nowhere/X")
        );
        let bad = preview(&q(&[("expr", "61 * * * *")]), now()).unwrap();
        assert_eq!(bad["valid"], false);
        assert!(bad["error"].as_str().unwrap().contains("61"));
        let reboot = preview(&q(&[("expr", "@reboot")]), now()).unwrap();
        assert_eq!(reboot["reboot"], true);
        assert_eq!(
            reboot["description"],
            "Once, when cronstable starts (@reboot)"
        );
        assert_eq!(reboot["lint"], json!([]));
        let upper = preview(&q(&[("expr", "@REBOOT")]), now()).unwrap();
        assert_eq!(upper["reboot"], true);
        let never = preview(&q(&[("expr", "0 0 30 2 *")]), now()).unwrap();
        assert_eq!(never["never_fires"], true);
    }

    #[test]
    fn hashed_expressions_need_a_seed() {
        let unseeded = preview(&q(&[("expr", "H * * * *")]), now()).unwrap();
        assert_eq!(unseeded["valid"], false);
        let seeded = preview(&q(&[("expr", "H * * * *"), ("seed", "backup")]), now()).unwrap();
        assert_eq!(seeded["valid"], true);
        assert_eq!(seeded["seed"], "backup");
        assert!(seeded["resolved"].as_str().is_some());
        assert!(seeded["description"]
            .as_str()
            .unwrap()
            .ends_with(" (H slots hashed from the job name)"));
    }
}
