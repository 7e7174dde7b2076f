use super::*;

fn d(text: &str) -> String {
    describe(text, None)
}

/// The manual's examples, word for word.
#[test]
fn the_manuals_sentences() {
    assert_eq!(d("0 9 * * mon,fri"), "At 09:00, on Monday and Friday");
    assert_eq!(
        d("0 0 L-3 * *"),
        "At 00:00, on 3 days before the last day of the month"
    );
    assert_eq!(
        d("*/7 * * * *"),
        "At minutes 00, 07, 14, 21, 28, 35, 42, 49, 56 past every hour, every day"
    );
    assert_eq!(d("0 0 * * *"), "At 00:00, every day");
}

#[test]
fn every_form_has_its_sentence() {
    let cases = [
        ("* * * * *", "Every minute, every day"),
        ("*/15 * * * *", "Every 15 minutes, every day"),
        ("* */6 * * *", "Every minute, every 6 hours, every day"),
        ("5 * * * *", "Every hour at :05, every day"),
        ("30 */2 * * *", "At :30 every 2 hours, every day"),
        ("0,30 9 * * *", "At minutes 00, 30 past hour 09, every day"),
        (
            "0 9-11 * * *",
            "At minute 00 past hours 09, 10, 11, every day",
        ),
        ("0 9 1,15 * *", "At 09:00, on the 1st and 15th of the month"),
        (
            "0 9 * jan-mar *",
            "At 09:00, in January, February and March",
        ),
        ("0 9 13 * 5", "At 09:00, on the 13th, and only on Friday"),
        ("0 9 L * *", "At 09:00, on the last day of the month"),
        (
            "0 9 L-1 * *",
            "At 09:00, on the day before the last day of the month",
        ),
        ("0 9 15W * *", "At 09:00, on the weekday nearest the 15th"),
        ("0 9 LW * *", "At 09:00, on the last weekday of the month"),
        (
            "0 9 1,L * *",
            "At 09:00, on the 1st and the last day of the month",
        ),
        ("0 9 * * 5#3", "At 09:00, on the 3rd Friday of the month"),
        ("0 9 * * fri#3", "At 09:00, on the 3rd Friday of the month"),
        ("0 9 * * L5", "At 09:00, on the last Friday of the month"),
        (
            "0 9 * * mon#1,L5",
            "At 09:00, on the 1st Monday of the month and the last Friday of the month",
        ),
        ("0 9 * * 7", "At 09:00, on Sunday"),
        (
            "0 9 1 1 * 2026",
            "At 09:00, on the 1st of the month, in January, in 2026",
        ),
        ("*/5 * * * * * *", "Every 5 seconds"),
        ("* * * * * * *", "Every second"),
        (
            "*/7 * * * * * *",
            "At seconds 00, 07, 14, 21, 28, 35, 42, 49, 56",
        ),
        ("30 0 9 * * * *", "At 09:00, every day, at second 30"),
        ("* 0 9 * * * *", "At 09:00, every day, every second"),
        ("0 0 9 * * * *", "At 09:00, every day"),
        ("@hourly", "Every hour, on the hour"),
        ("@daily", "Every day at midnight"),
        ("@weekly", "At midnight every Sunday"),
        ("@monthly", "At midnight on the 1st of every month"),
        ("@yearly", "Once a year, at midnight on 1 January"),
        ("@annually", "Once a year, at midnight on 1 January"),
        ("@reboot", "Once, when cronstable starts (@reboot)"),
    ];
    for (text, want) in cases {
        assert_eq!(d(text), want, "{text}");
    }
}

#[test]
fn what_the_engine_refuses_or_the_wording_cannot_say_is_custom() {
    for text in [
        "61 * * * *",
        "@midnight",
        "H * * * *",
        "* * * *",
        "0 9 *,L * *",
        "0 9 * * L",
        "",
    ] {
        assert_eq!(d(text), format!("Custom schedule: {text}"), "{text}");
    }
}

#[test]
fn hashed_slots_are_described_resolved_and_marked() {
    let expr = CronExpr::parse("H * * * *", Some("job")).unwrap();
    let want = format!("{} (H slots hashed from the job name)", d(expr.resolved()));
    assert_eq!(describe("H * * * *", Some("job")), want);
    assert_eq!(describe_parsed("H * * * *", &expr), want);
}

#[test]
fn the_parsed_entry_point_agrees_with_the_text_one() {
    for text in [
        "0 9 * * mon,fri",
        "*/5 * * * * * *",
        "@hourly",
        "0 0 LW * *",
    ] {
        let expr = CronExpr::parse(text, None).unwrap();
        assert_eq!(describe_parsed(text, &expr), d(text), "{text}");
    }
}

#[test]
fn ordinals_and_lists() {
    let ordinals: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31, 101, 111]
        .into_iter()
        .map(ordinal)
        .collect();
    assert_eq!(
        ordinals,
        [
            "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st",
            "101st", "111th"
        ]
    );
    let items = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>();
    assert_eq!(join_list(&items(0)), "");
    assert_eq!(join_list(&items(1)), "0");
    assert_eq!(join_list(&items(2)), "0 and 1");
    assert_eq!(join_list(&items(4)), "0, 1, 2 and 3");
}

/// Every case the original's describer answered in
/// `tests/fixtures/describe_golden.jsonl` (recorded by
/// `scripts/describe_goldens.py`), answered the same here.
#[test]
fn the_originals_recorded_sentences() {
    let text = include_str!("../../tests/fixtures/describe_golden.jsonl");
    let mut wrong = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let expr = case["expr"].as_str().expect("expr");
        let key = case["key"].as_str();
        let want = case["want"].as_str().expect("want");
        let got = describe(expr, key);
        if got != want {
            wrong.push(format!(
                "{expr:?} key {key:?}\n  want {want:?}\n  got  {got:?}"
            ));
        }
        // The entry point for an expression the caller parsed already.
        if let Ok(parsed) = CronExpr::parse(expr, key) {
            let got = describe_parsed(expr, &parsed);
            if got != want {
                wrong.push(format!(
                    "parsed {expr:?} key {key:?}\n  want {want:?}\n  got  {got:?}"
                ));
            }
        }
        count += 1;
    }
    assert!(count > 1000, "only {count} recorded cases");
    assert!(
        wrong.is_empty(),
        "{} of {count} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
