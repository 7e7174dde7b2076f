//! Schedule intelligence of the built daemon over HTTP: plain-English
//! descriptions, `/schedule/pressure`, `/schedule/duplicates`,
//! `/schedule/suggest`, the calendar feeds (parsed back as iCalendar with
//! Python's `icalendar`), `/whoami`, and the rule that a `?token=`
//! authenticates the `.ics` feeds and nothing else. `utc: false` jobs are
//! checked on a daemon whose host zone (`TZ`) has DST. The last tests run
//! the original daemon (cronstable 1.2.72) on the same jobs (and the same
//! host zone) and compare the answers.

mod support;

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::daemon::Daemon;
use support::http::{free_port, get, request, wait_listening, Reply};

/// A fleet with duplicates (by spelling and by meaning), zones, an `H`
/// job, a seconds job, a disabled job and an `@reboot` job.
const JOBS: &str = r#"  - name: billing-export
    command: "true"
    schedule: "0 0 * * *"
  - name: cleanup-tmp
    command: "true"
    schedule: "@daily"
  - name: rotate-logs
    command: "true"
    schedule: "0 0 * * *"
  - name: poller
    command: "true"
    schedule: "*/5 * * * *"
  - name: poller-b
    command: "true"
    schedule: "0-59/5 * * * *"
  - name: berlin-nightly
    command: "true"
    schedule: "0 0 * * *"
    timezone: Europe/Berlin
  - name: weekday-report
    command: "true"
    schedule: "0 9 * * mon,fri"
  - name: payroll
    command: "true"
    schedule: "0 7 L-3 * *"
  - name: hashed
    command: "true"
    schedule: "H H * * *"
  - name: fast
    command: "true"
    schedule: "*/20 * * * * * *"
  - name: off
    command: "true"
    schedule: "@hourly"
    enabled: false
  - name: boot
    command: "true"
    schedule: "@reboot"
"#;

/// The enabled cron jobs of [`JOBS`].
const ANALYZED: usize = 10;

fn with_token(port: u16, path: &str, token: &str) -> Reply {
    let header = format!("Bearer {token}");
    request(port, "GET", path, &[("Authorization", &header)], "")
}

#[test]
fn descriptions_in_preview_why_and_jobs() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let preview = get(port, "/schedule/preview?expr=0%200%20L-3%20*%20*").json();
    assert_eq!(
        preview["description"],
        "At 00:00, on 3 days before the last day of the month"
    );
    let preview = get(port, "/schedule/preview?expr=H%20*%20*%20*%20*&seed=job").json();
    assert!(
        preview["description"]
            .as_str()
            .unwrap()
            .ends_with(" (H slots hashed from the job name)"),
        "{preview}"
    );
    let reboot = get(port, "/schedule/preview?expr=@reboot").json();
    assert_eq!(
        reboot["description"],
        "Once, when cronstable starts (@reboot)"
    );

    let why = get(port, "/schedule/why?job=weekday-report&at=2026-07-14T09:00").json();
    assert_eq!(why["description"], "At 09:00, on Monday and Friday");

    let jobs = get(port, "/jobs").json();
    let described = |name: &str| {
        jobs.as_array()
            .unwrap()
            .iter()
            .find(|j| j["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {jobs}"))["description"]
            .clone()
    };
    assert_eq!(described("cleanup-tmp"), "Every day at midnight");
    assert_eq!(described("poller"), "Every 5 minutes, every day");
    assert_eq!(described("boot"), "Once, when cronstable starts (@reboot)");
    assert_eq!(described("fast"), "Every 20 seconds");
    let one = get(port, "/jobs/payroll").json();
    assert_eq!(
        one["description"],
        "At 07:00, on 3 days before the last day of the month"
    );
}

#[test]
fn pressure_duplicates_and_suggest_in_the_manuals_shapes() {
    let (_d, port) = Daemon::start_with_web("", JOBS);

    let reply = get(port, "/schedule/pressure");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let p = reply.json();
    let keys: BTreeSet<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = [
        "start",
        "hours",
        "timezone",
        "jobs",
        "total_fires",
        "grid",
        "by_minute_fires",
        "by_minute_jobs",
        "by_hour",
        "busiest_minute",
        "empty_minutes",
        "top_cells",
        "excluded",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys, want);
    assert_eq!(p["hours"], 24);
    assert_eq!(p["timezone"], "UTC");
    assert_eq!(p["jobs"], ANALYZED);
    assert_eq!(p["excluded"], json!({"disabled": 1, "reboot": 1}));
    let grid = p["grid"].as_array().unwrap();
    assert_eq!(grid.len(), 24);
    assert!(grid.iter().all(|row| row.as_array().unwrap().len() == 60));
    let total: u64 = grid
        .iter()
        .flat_map(|row| row.as_array().unwrap())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(p["total_fires"], total);
    // the seconds job alone fires three times in each of the day's minutes
    assert!(total >= 3 * 1439, "{total}");
    assert_eq!(p["by_minute_jobs"].as_array().unwrap().len(), 60);
    // every minute carries the seconds job, :00 also both pollers and
    // the daily jobs' hour
    assert_eq!(p["busiest_minute"]["minute"], 0);
    assert_eq!(p["empty_minutes"], json!([]));
    let top = p["top_cells"].as_array().unwrap();
    assert_eq!(top.len(), 6);
    assert!(top[0]["jobs"].as_array().unwrap().len() <= 10);

    let week = get(port, "/schedule/pressure?hours=999&tz=Europe/London").json();
    assert_eq!(week["hours"], 168);
    assert_eq!(week["timezone"], "Europe/London");
    assert!(
        week["start"].as_str().unwrap().ends_with("+01:00")
            || week["start"].as_str().unwrap().ends_with("+00:00")
    );
    assert_eq!(
        get(port, "/schedule/pressure?hours=oops").json()["hours"],
        24
    );
    assert_eq!(get(port, "/schedule/pressure?hours=0").json()["hours"], 1);
    let bad = get(port, "/schedule/pressure?tz=Nowhere/Land");
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json(),
        json!({"error": "unknown timezone: Nowhere/Land"})
    );

    let d = get(port, "/schedule/duplicates").json();
    assert_eq!(d["jobs"], ANALYZED);
    assert_eq!(
        d["groups"],
        json!([
            {"expression": "0 0 * * *", "description": "At 00:00, every day", "timezone": "UTC",
             "count": 3, "jobs": ["billing-export", "cleanup-tmp", "rotate-logs"]},
            {"expression": "*/5 * * * *", "description": "Every 5 minutes, every day",
             "timezone": "UTC", "count": 2, "jobs": ["poller", "poller-b"]},
        ])
    );

    let s = get(port, "/schedule/suggest").json();
    assert_eq!(s["period"], "hourly");
    assert_eq!(s["hash_hint"], "H * * * *");
    assert_eq!(s["based_on"]["jobs"], ANALYZED);
    assert_eq!(s["based_on"]["hours"], 24);
    let minute = s["minute"].as_u64().unwrap();
    assert_eq!(s["expression"], format!("{minute} * * * *"));
    // the pollers own every fifth minute
    assert_ne!(minute % 5, 0, "{s}");
    assert_eq!(s["alternatives"].as_array().unwrap().len(), 2);
    assert!(
        s["busiest"]["fires_in_window"].as_u64().unwrap() >= s["fires_in_window"].as_u64().unwrap()
    );
    let daily = get(port, "/schedule/suggest?period=daily&tz=Europe/Berlin").json();
    assert_eq!(daily["period"], "daily");
    assert_eq!(daily["timezone"], "Europe/Berlin");
    assert_eq!(daily["hash_hint"], "H H * * *");
    assert_eq!(
        daily["expression"],
        format!("{} {} * * *", daily["minute"], daily["hour"])
    );
    assert!(daily["busiest"]["hour"].is_u64());
    let bad = get(port, "/schedule/suggest?period=weekly");
    assert_eq!(bad.status, 400);
    assert_eq!(
        bad.json(),
        json!({"error": "period must be 'hourly' or 'daily', got 'weekly'"})
    );
    // the zone is checked before the period
    let bad = get(port, "/schedule/suggest?period=weekly&tz=Nowhere/Land");
    assert_eq!(
        bad.json(),
        json!({"error": "unknown timezone: Nowhere/Land"})
    );
}

/// What `scripts`-style Python makes of a feed: exit 77 when the
/// `icalendar` module is missing, else a JSON summary of the events after
/// strict checks.
/// `GET /schedule/week`: the fleet's fires over a window, one group per
/// distinct schedule and clock, frequent schedules without their fires,
/// tagged for a 304.
#[test]
fn the_week_groups_fires_by_schedule() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let path = "/schedule/week?start=2026-03-02T00:00:00Z&days=7";
    let reply = get(port, path);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let week = reply.json();
    assert_eq!(week["start"], "2026-03-02T00:00:00+00:00");
    assert_eq!(week["end"], "2026-03-09T00:00:00+00:00");
    assert_eq!(week["max"], json!(56));
    assert_eq!(week["jobs"], json!(ANALYZED));
    assert_eq!(week["excluded"], json!({"disabled": 1, "reboot": 1}));
    let groups = week["groups"].as_array().expect("groups");
    let group_of = |job: &str| {
        groups
            .iter()
            .find(|g| g["jobs"].as_array().unwrap().contains(&json!(job)))
            .unwrap_or_else(|| panic!("{job} in no group: {week}"))
    };
    // @daily and "0 0 * * *" in UTC share one walk; Berlin's is its own.
    let midnights: Vec<i64> = (0..7).map(|d| 1_772_409_600 + d * 86_400).collect();
    assert_eq!(
        group_of("billing-export"),
        &json!({"jobs": ["billing-export", "cleanup-tmp", "rotate-logs"],
                "fires": midnights, "frequent": false})
    );
    let berlin = group_of("berlin-nightly");
    assert_eq!(berlin["jobs"], json!(["berlin-nightly"]));
    assert_eq!(berlin["fires"][0], json!(1_772_409_600 + 23 * 3600));
    // Mondays and Fridays at nine: the 2nd and the 6th.
    assert_eq!(
        group_of("weekday-report")["fires"],
        json!([
            1_772_409_600 + 9 * 3600,
            1_772_409_600 + 4 * 86_400 + 9 * 3600
        ])
    );
    let pollers = group_of("poller");
    assert_eq!(pollers["jobs"], json!(["poller", "poller-b"]));
    assert_eq!(
        (pollers["frequent"].clone(), pollers["fires"].clone()),
        (json!(true), json!([]))
    );
    assert_eq!(group_of("fast")["frequent"], json!(true));
    assert_eq!(groups.len(), 7, "{week}");
    // A higher cap lists the pollers' fires (288 a day).
    let one_day = get(
        port,
        "/schedule/week?start=2026-03-02T00:00:00Z&days=1&max=500",
    )
    .json();
    let pollers = one_day["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["jobs"][0] == "poller")
        .unwrap()
        .clone();
    assert_eq!(pollers["fires"].as_array().unwrap().len(), 288);
    // The same window again: 304 on the tag.
    let etag = reply.header("etag").expect("an ETag").to_owned();
    assert_eq!(
        request(port, "GET", path, &[("If-None-Match", &etag)], "").status,
        304
    );
    let bad = get(port, "/schedule/week?start=yesterday");
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().unwrap().contains("ISO 8601"));
    // Without a start, the window begins now.
    assert_eq!(get(port, "/schedule/week").status, 200);
}

const ICS_CHECK: &str = r#"
import json, sys
try:
    import icalendar
except ImportError:
    sys.exit(77)
import datetime
data = sys.stdin.buffer.read()
assert data.endswith(b"\r\n"), "the feed does not end with CRLF"
lines = data.split(b"\r\n")[:-1]
for line in lines:
    assert b"\n" not in line and b"\r" not in line, "a bare line break: %r" % line
    assert len(line) <= 75, "a line over 75 octets: %r" % line
cal = icalendar.Calendar.from_ical(data)
assert cal.name == "VCALENDAR"
assert str(cal["VERSION"]) == "2.0"
assert str(cal["PRODID"]).startswith("-//cronstable//")
for component in cal.walk():
    assert not component.errors, component.errors
events = []
for event in cal.walk("VEVENT"):
    for key in ("UID", "DTSTAMP", "DTSTART", "DURATION", "SUMMARY", "DESCRIPTION"):
        assert key in event, "an event without %s" % key
    start = event.decoded("DTSTART")
    assert isinstance(start, datetime.datetime) and start.utcoffset() == datetime.timedelta(0)
    length = event.decoded("DURATION")
    assert datetime.timedelta(minutes=5) <= length <= datetime.timedelta(hours=24)
    assert str(event["TRANSP"]) == "TRANSPARENT"
    events.append({
        "uid": str(event["UID"]),
        "start": start.isoformat(),
        "summary": str(event["SUMMARY"]),
        "description": str(event["DESCRIPTION"]),
    })
uids = [e["uid"] for e in events]
assert len(uids) == len(set(uids)), "repeated UIDs"
print(json.dumps({"name": str(cal.get("X-WR-CALNAME")), "events": events}))
"#;

/// The feed checked by Python's `icalendar`, or `None` when that module
/// is missing (then the test says so; under CI it fails).
fn parse_ics(body: &str) -> Option<Value> {
    let mut child = Command::new("python3")
        .args(["-c", ICS_CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(77) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python's icalendar is missing (scripts/test.sh installs it)"
        );
        eprintln!("skipping the icalendar parse: the module is missing");
        return None;
    }
    assert!(
        out.status.success(),
        "the feed is not valid iCalendar: {}\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the summary"))
}

/// Checks that need no parser: CRLF lines within 75 octets, balanced
/// components, the headers.
fn strict_shape(reply: &Reply) {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.header("content-type"),
        Some("text/calendar; charset=utf-8")
    );
    assert_eq!(
        reply.header("content-disposition"),
        Some("inline; filename=\"cronstable.ics\"")
    );
    let body = &reply.body;
    assert!(
        body.starts_with("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"),
        "{body}"
    );
    assert!(body.ends_with("END:VCALENDAR\r\n"));
    for line in body.split("\r\n") {
        assert!(!line.contains('\n'), "{line:?}");
        assert!(line.len() <= 75, "{line:?}");
    }
    assert_eq!(
        body.matches("BEGIN:VEVENT").count(),
        body.matches("END:VEVENT").count()
    );
}

#[test]
fn calendar_feeds_are_valid_icalendar() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let fleet = get(port, "/calendar.ics?days=3&limit=5");
    strict_shape(&fleet);
    let body = &fleet.body;
    // the pollers and the seconds job are capped at five events and say so
    assert!(
        body.contains("X-CRONSTABLE-TRUNCATED;CAP=5:poller\r\n"),
        "{body}"
    );
    assert!(body.contains("X-CRONSTABLE-TRUNCATED;CAP=5:fast\r\n"));
    assert!(!body.contains("SUMMARY:off\r\n") && !body.contains("SUMMARY:boot\r\n"));
    // no command line ever reaches a feed
    assert!(!body.contains("true\r\n") && !body.contains("\"true\""));
    if let Some(parsed) = parse_ics(body) {
        assert_eq!(parsed["name"], "cronstable");
        let events = parsed["events"].as_array().unwrap();
        let count = |job: &str| events.iter().filter(|e| e["summary"] == job).count();
        assert_eq!(count("poller"), 5);
        assert_eq!(count("billing-export"), 3);
        assert_eq!(count("berlin-nightly"), 3);
        let export = events
            .iter()
            .find(|e| e["summary"] == "billing-export")
            .unwrap();
        assert!(export["start"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:00+00:00"));
        assert_eq!(
            export["description"],
            "Schedule: 0 0 * * *\nAt 00:00, every day\nTimezone: UTC"
        );
        // summaries come in name order
        let names: Vec<&str> = events
            .iter()
            .map(|e| e["summary"].as_str().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
    }

    let one = get(port, "/jobs/payroll/calendar.ics?days=60");
    strict_shape(&one);
    assert!(one.body.contains("X-WR-CALNAME:cronstable: payroll\r\n"));
    if let Some(parsed) = parse_ics(&one.body) {
        let events = parsed["events"].as_array().unwrap();
        // two month ends are within 60 days, whatever today is
        assert!((1..=3).contains(&events.len()), "{parsed}");
        assert!(events.iter().all(|e| e["summary"] == "payroll"));
    }
    // clamped, not refused
    let clamped = get(port, "/jobs/poller/calendar.ics?days=500&per_job=2000");
    strict_shape(&clamped);
    assert_eq!(clamped.body.matches("BEGIN:VEVENT").count(), 1000);
    assert!(clamped
        .body
        .contains("X-CRONSTABLE-TRUNCATED;CAP=1000:poller"));
    // a disabled or @reboot job is a valid, empty calendar
    for name in ["off", "boot"] {
        let empty = get(port, &format!("/jobs/{name}/calendar.ics"));
        strict_shape(&empty);
        assert!(!empty.body.contains("VEVENT"));
        if let Some(parsed) = parse_ics(&empty.body) {
            assert_eq!(parsed["events"], json!([]));
        }
    }
    let missing = get(port, "/jobs/nope/calendar.ics");
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.json(),
        json!({"error": "no job or DAG schedule named 'nope'"})
    );
}

#[test]
fn a_query_token_authenticates_the_calendar_feeds_and_nothing_else() {
    let (_d, port) = Daemon::start_with_web("  authToken:\n    value: s3cret\n", JOBS);
    for path in ["/calendar.ics", "/jobs/poller/calendar.ics"] {
        assert_eq!(
            get(port, &format!("{path}?token=s3cret")).status,
            200,
            "{path}"
        );
        assert_eq!(
            get(port, &format!("{path}?days=2&token=s3cret")).status,
            200
        );
        assert_eq!(get(port, &format!("{path}?token=wrong")).status, 401);
        assert_eq!(get(port, &format!("{path}?token=")).status, 401);
        assert_eq!(get(port, path).status, 401);
        assert_eq!(with_token(port, path, "s3cret").status, 200);
        // a header of another scheme leaves the query token in play
        let basic = request(
            port,
            "GET",
            &format!("{path}?token=s3cret"),
            &[("Authorization", "Basic czNjcmV0")],
            "",
        );
        assert_eq!(basic.status, 200);
    }
    // Everywhere else a query token is no credential at all.
    for path in [
        "/jobs",
        "/jobs/poller",
        "/status",
        "/whoami",
        "/schedule/pressure",
        "/schedule/duplicates",
        "/schedule/suggest",
        "/schedule/preview?expr=*%20*%20*%20*%20*",
        "/metrics",
    ] {
        let sep = if path.contains('?') { '&' } else { '?' };
        let reply = get(port, &format!("{path}{sep}token=s3cret"));
        assert_eq!(reply.status, 401, "{path}: {}", reply.body);
        assert_eq!(reply.json(), json!({"error": "401: Unauthorized"}));
        assert_eq!(with_token(port, path, "s3cret").status, 200, "{path}");
    }
}

#[test]
fn a_query_token_is_a_credential_even_beside_an_anonymous_grant() {
    let web = "  authToken:\n    value: s3cret\n  anonymousScopes: [view]\n";
    let (_d, port) = Daemon::start_with_web(web, JOBS);
    assert_eq!(get(port, "/jobs").status, 200);
    assert_eq!(get(port, "/calendar.ics").status, 200);
    // presented where it does not count: refused, not read as anonymous
    assert_eq!(get(port, "/jobs?token=s3cret").status, 401);
    assert_eq!(get(port, "/calendar.ics?token=s3cret").status, 200);
    assert_eq!(get(port, "/calendar.ics?token=wrong").status, 401);
    assert_eq!(
        get(port, "/whoami").json(),
        json!({"authenticated": false, "label": "anonymous", "scopes": ["view"],
               "allScopes": false, "pairLinkBase": "https://relay.cronstable.com/pair",
               "sealableSuites": []})
    );
}

#[test]
fn whoami_names_the_caller() {
    let (_open, port) = Daemon::start_with_web("", JOBS);
    assert_eq!(
        get(port, "/whoami").json(),
        json!({"authenticated": false, "label": null, "scopes": ["approve", "control", "view"],
               "allScopes": true, "pairLinkBase": "https://relay.cronstable.com/pair",
               "sealableSuites": []})
    );
    let web = "  authToken:\n    value: s3cret\n  authTokens:\n    - label: board\n      scopes: [view]\n      value: reader\n";
    let (_d, port) = Daemon::start_with_web(web, JOBS);
    let all = with_token(port, "/whoami", "s3cret").json();
    assert_eq!(
        (
            &all["authenticated"],
            &all["label"],
            &all["scopes"],
            &all["allScopes"]
        ),
        (
            &json!(true),
            &json!("authToken"),
            &json!(["approve", "control", "view"]),
            &json!(true)
        )
    );
    let board = with_token(port, "/whoami", "reader").json();
    assert_eq!(
        (
            &board["authenticated"],
            &board["label"],
            &board["scopes"],
            &board["allScopes"]
        ),
        (
            &json!(true),
            &json!("board"),
            &json!(["view"]),
            &json!(false)
        )
    );
    assert_eq!(get(port, "/whoami").status, 401);
}

// ---------------------------------------------------------------------------
// `utc: false`: the host's zone
// ---------------------------------------------------------------------------

/// The host zone the `utc: false` tests give the daemons (`TZ`): one with
/// DST, so a schedule read in UTC by mistake cannot pass for local time.
const HOST_ZONE: &str = "America/New_York";

/// Jobs on the host's clock beside one on UTC with the same spelling.
const LOCAL_JOBS: &str = r#"  - name: local-nightly
    command: "true"
    schedule: "30 2 * * *"
    utc: false
  - name: utc-nightly
    command: "true"
    schedule: "30 2 * * *"
  - name: local-morning
    command: "true"
    schedule: "0 9 * * mon-fri"
    utc: false
"#;

/// Our daemon on [`LOCAL_JOBS`] with `TZ` set to [`HOST_ZONE`].
fn local_daemon() -> (Daemon, u16) {
    let port = free_port();
    let config = format!("web:\n  listen:\n    - http://127.0.0.1:{port}\njobs:\n{LOCAL_JOBS}");
    let daemon = Daemon::start_with_vars(&config, &[], &[("TZ", HOST_ZONE)]);
    wait_listening(port, Duration::from_secs(20));
    (daemon, port)
}

/// The (hour, minute) cells of a pressure answer that list `job`.
fn cells_of(pressure: &Value, job: &str) -> Vec<(u64, u64)> {
    pressure["top_cells"]
        .as_array()
        .expect("top_cells")
        .iter()
        .filter(|c| c["jobs"].as_array().unwrap().contains(&json!(job)))
        .map(|c| (c["hour"].as_u64().unwrap(), c["minute"].as_u64().unwrap()))
        .collect()
}

#[test]
fn utc_false_schedules_run_in_the_host_zone() {
    let (_d, port) = local_daemon();
    const MAR_2: i64 = 1_772_409_600; // 2026-03-02T00:00Z, a Monday (EST)
    let week = get(port, "/schedule/week?start=2026-03-02T00:00:00Z&days=7").json();
    let fires = |job: &str| {
        week["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["jobs"].as_array().unwrap().contains(&json!(job)))
            .map(|g| g["fires"].clone())
            .unwrap_or_else(|| panic!("{job}: {week}"))
    };
    // 02:30 EST is 07:30 UTC; the UTC twin is its own group at 02:30 UTC.
    let day = |d: i64, seconds: i64| MAR_2 + d * 86_400 + seconds;
    let half_past_seven: Vec<i64> = (0..7).map(|d| day(d, 7 * 3600 + 1800)).collect();
    assert_eq!(fires("local-nightly"), json!(half_past_seven));
    let half_past_two: Vec<i64> = (0..7).map(|d| day(d, 2 * 3600 + 1800)).collect();
    assert_eq!(fires("utc-nightly"), json!(half_past_two));
    // Weekdays at 09:00 EST, 14:00 UTC.
    let nine: Vec<i64> = (0..5).map(|d| day(d, 14 * 3600)).collect();
    assert_eq!(fires("local-morning"), json!(nine));
    // Across the spring change (2026-03-08, 02:00 EST becomes 03:00 EDT):
    // 07:30 UTC the day before, 06:30 UTC (02:30 EDT) the day after. (Where
    // the 02:30 that does not exist goes is left out: this version runs it
    // at 03:30 EDT, as it does in an IANA zone; the original's analyses put
    // a host-clock gap fire at 01:30 EST.)
    let spring = get(port, "/schedule/week?start=2026-03-07T00:00:00Z&days=3").json();
    let nightly = spring["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["jobs"][0] == "local-nightly")
        .unwrap()["fires"]
        .clone();
    let nightly = nightly.as_array().unwrap();
    assert_eq!(nightly.len(), 3, "{nightly:?}");
    assert_eq!(nightly[0], json!(day(5, 27_000)));
    assert_eq!(nightly[2], json!(day(7, 23_400)));

    // The calendar feed: each local fire at 02:30 New York time, which is
    // 06:30 or 07:30 UTC with DST or without; the UTC job at 02:30 UTC.
    let feed = get(port, "/calendar.ics?days=3&limit=5").body;
    let starts = |job: &str| -> Vec<String> {
        feed.split("BEGIN:VEVENT")
            .skip(1)
            .filter(|e| e.contains(&format!("SUMMARY:{job}\r\n")))
            .filter_map(|e| e.split("DTSTART:").nth(1))
            .map(|rest| rest[..16].to_owned())
            .collect()
    };
    let local = starts("local-nightly");
    assert!(local.len() >= 2, "{feed}");
    for start in &local {
        assert!(
            start.ends_with("T063000Z") || start.ends_with("T073000Z"),
            "{start}"
        );
    }
    let utc = starts("utc-nightly");
    assert!(
        utc.len() >= 2 && utc.iter().all(|s| s.ends_with("T023000Z")),
        "{utc:?}"
    );
    assert!(feed.contains("Timezone: local"), "{feed}");

    // Pressure over two days: drawn in New York the local job sits at
    // 02:30 (03:30 on the spring day), the UTC one at 21:30 or 22:30; in
    // UTC the local job moves to 06:30 or 07:30.
    let ny = get(port, "/schedule/pressure?hours=48&tz=America/New_York").json();
    let local = cells_of(&ny, "local-nightly");
    assert!(!local.is_empty(), "{ny}");
    assert!(
        local.iter().all(|c| *c == (2, 30) || *c == (3, 30)),
        "{local:?}"
    );
    let utc = cells_of(&ny, "utc-nightly");
    assert!(
        !utc.is_empty() && utc.iter().all(|c| *c == (21, 30) || *c == (22, 30)),
        "{utc:?}"
    );
    assert!(cells_of(&ny, "local-morning").iter().all(|c| *c == (9, 0)));
    let in_utc = get(port, "/schedule/pressure?hours=48").json();
    let local = cells_of(&in_utc, "local-nightly");
    assert!(
        !local.is_empty() && local.iter().all(|c| *c == (6, 30) || *c == (7, 30)),
        "{local:?}"
    );
    assert!(cells_of(&in_utc, "utc-nightly")
        .iter()
        .all(|c| *c == (2, 30)));

    // A daily suggestion in New York avoids every cell the jobs occupy
    // there, and names the New York zone.
    let pick = get(port, "/schedule/suggest?period=daily&tz=America/New_York").json();
    assert_eq!(pick["timezone"], HOST_ZONE);
    let slot = (
        pick["hour"].as_u64().unwrap(),
        pick["minute"].as_u64().unwrap(),
    );
    assert!(
        ![(2, 30), (3, 30), (9, 0), (21, 30), (22, 30)].contains(&slot),
        "{pick}"
    );
    assert_eq!(pick["fires_in_window"], json!(0), "{pick}");
}

// ---------------------------------------------------------------------------
// Side by side with the original
// ---------------------------------------------------------------------------

/// The original daemon on `jobs`, listening on a free port; stopped when
/// dropped.
struct Original {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Original {
    fn start(exe: &Path, jobs: &str) -> Original {
        Original::start_with(exe, jobs, &[])
    }

    /// [`Original::start`] with `vars` set in its environment.
    fn start_with(exe: &Path, jobs: &str, vars: &[(&str, &str)]) -> Original {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = format!("web:\n  listen:\n    - http://127.0.0.1:{port}\njobs:\n{jobs}");
        std::fs::write(dir.path().join("py.yaml"), config).unwrap();
        let child = Command::new(exe)
            .args(["-c", "py.yaml"])
            .envs(vars.iter().copied())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("py.log")).unwrap())
            .spawn()
            .expect("start the original");
        wait_listening(port, Duration::from_secs(60));
        Original {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for Original {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asks both daemons for `path` until their answers agree after `strip`
/// (the two requests are a moment apart, and a fire can fall between
/// them); at most three tries.
fn agree(ours: u16, theirs: u16, path: &str, strip: impl Fn(&str) -> Value) {
    let mut last = None;
    for _ in 0..3 {
        let a = get(ours, path);
        let b = get(theirs, path);
        assert_eq!(a.status, b.status, "{path}: {} vs {}", a.body, b.body);
        let (a, b) = (strip(&a.body), strip(&b.body));
        if a == b {
            return;
        }
        last = Some((a, b));
    }
    let (a, b) = last.unwrap();
    panic!("{path}: the answers differ\nours:   {a}\ntheirs: {b}");
}

/// A JSON answer without the members that name the moment of asking.
fn without(keys: &'static [&'static str]) -> impl Fn(&str) -> Value {
    move |body: &str| {
        let mut v: Value = serde_json::from_str(body).expect("JSON");
        if let Some(map) = v.as_object_mut() {
            for key in keys {
                map.remove(*key);
            }
            if let Some(Value::Object(based)) = map.get_mut("based_on") {
                based.remove("start");
            }
        }
        v
    }
}

/// A feed's events without the lines that name the moment or the build
/// (`DTSTAMP`, `PRODID`), and without the typical run time (the jobs run
/// while the two daemons are asked, each on its own clock).
fn events_of(body: &str) -> Value {
    let unfolded = body.replace("\r\n ", "");
    let lines: Vec<&str> = unfolded
        .split("\r\n")
        .filter(|l| !l.starts_with("DTSTAMP:") && !l.starts_with("PRODID:"))
        .map(|l| l.split("\\nTypical runtime: ").next().unwrap_or(l))
        .collect();
    json!(lines)
}

#[test]
fn the_originals_answers_on_the_same_jobs() {
    let Some(exe) = support::original::original() else {
        return;
    };
    let theirs = Original::start(&exe, JOBS);
    let (_ours, ours) = Daemon::start_with_web("", JOBS);

    agree(ours, theirs.port, "/schedule/duplicates", without(&[]));
    agree(
        ours,
        theirs.port,
        "/schedule/pressure",
        without(&["start", "excluded"]),
    );
    agree(
        ours,
        theirs.port,
        "/schedule/pressure?hours=168&tz=America/New_York",
        without(&["start", "excluded"]),
    );
    agree(ours, theirs.port, "/schedule/suggest", without(&[]));
    agree(
        ours,
        theirs.port,
        "/schedule/suggest?period=daily&tz=Asia/Kolkata",
        without(&[]),
    );
    for bad in [
        "/schedule/suggest?period=weekly",
        "/schedule/pressure?tz=Nowhere/Land",
    ] {
        agree(ours, theirs.port, bad, without(&[]));
    }
    // the excluded counts are the original's too
    assert_eq!(
        get(ours, "/schedule/pressure").json()["excluded"],
        get(theirs.port, "/schedule/pressure").json()["excluded"]
    );
    agree(ours, theirs.port, "/calendar.ics?days=3&limit=7", |b| {
        events_of(b)
    });
    agree(ours, theirs.port, "/jobs/hashed/calendar.ics", |b| {
        events_of(b)
    });

    // whoami: the documented members agree
    let a = get(ours, "/whoami").json();
    let b = get(theirs.port, "/whoami").json();
    for key in [
        "authenticated",
        "label",
        "scopes",
        "allScopes",
        "pairLinkBase",
    ] {
        assert_eq!(a[key], b[key], "whoami {key}");
    }

    // descriptions, through the preview and the why explainer
    for expr in [
        "0%209%20*%20*%20mon,fri",
        "*/7%20*%20*%20*%20*",
        "0%200%20L-3%20*%20*",
        "30%201%20LW%20*%20*",
        "0%206%20*%20*%205%233",
        "*/5%20*%20*%20*%20*%20*%20*",
        "0%200%201%201%20*%202027",
        "@weekly",
        "@reboot",
        "0%200%20*%20*%20L",
    ] {
        let path = format!("/schedule/preview?expr={expr}");
        let (a, b) = (get(ours, &path).json(), get(theirs.port, &path).json());
        assert_eq!(a["description"], b["description"], "{expr}");
    }
    for job in ["hashed", "fast", "payroll", "cleanup-tmp", "boot"] {
        let path = format!("/schedule/why?job={job}&at=2026-07-14T09:00");
        let (a, b) = (get(ours, &path).json(), get(theirs.port, &path).json());
        assert_eq!(a["description"], b["description"], "{job}");
    }
}

/// `utc: false` jobs with `TZ` set to a zone with DST: the pressure grid,
/// the suggestions, the duplicates and the feeds are the original's.
#[test]
fn utc_false_answers_agree_with_the_original() {
    let Some(exe) = support::original::original() else {
        return;
    };
    let theirs = Original::start_with(&exe, LOCAL_JOBS, &[("TZ", HOST_ZONE)]);
    let (_ours, ours) = local_daemon();
    for path in [
        "/schedule/pressure",
        "/schedule/pressure?hours=168&tz=America/New_York",
        "/schedule/pressure?hours=72&tz=Europe/London",
    ] {
        agree(ours, theirs.port, path, without(&["start"]));
    }
    agree(ours, theirs.port, "/schedule/suggest", without(&[]));
    agree(
        ours,
        theirs.port,
        "/schedule/suggest?period=daily&tz=America/New_York",
        without(&[]),
    );
    agree(ours, theirs.port, "/schedule/duplicates", without(&[]));
    agree(ours, theirs.port, "/calendar.ics?days=10&limit=20", |b| {
        events_of(b)
    });
    agree(ours, theirs.port, "/jobs/local-nightly/calendar.ics", |b| {
        events_of(b)
    });
    // Why, in winter and in summer time (not at a transition: see
    // utc_false_schedules_run_in_the_host_zone).
    for (job, at) in [
        ("local-nightly", "2026-01-14T02:30"),
        ("local-nightly", "2026-07-14T09:00"),
        ("local-morning", "2026-07-14T09:00"),
        ("local-morning", "2026-01-17T09:00"),
    ] {
        let path = format!("/schedule/why?job={job}&at={at}");
        let (a, b) = (get(ours, &path).json(), get(theirs.port, &path).json());
        for key in [
            "matches",
            "failed",
            "at_in_zone",
            "previous_fire",
            "next_fire",
            "timezone",
            "description",
        ] {
            assert_eq!(a[key], b[key], "{job} {key}: {a} vs {b}");
        }
    }
}
