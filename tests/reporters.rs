//! The reporters end to end: the built daemon runs real jobs and reports
//! them to real receivers started here — an aiosmtpd SMTP server, HTTP
//! receivers for webhooks and Sentry envelopes, and shell commands writing
//! their environment to files.

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::receivers::{HttpReceiver, Reply, SmtpSink};

const LONG: Duration = Duration::from_secs(20);

/// Fills `@NAME@` placeholders (no braces, so Jinja templates stay as
/// written).
fn config(text: &str, vars: &[(&str, String)]) -> String {
    let mut out = text.to_owned();
    for (k, v) in vars {
        out = out.replace(&format!("@{k}@"), v);
    }
    out
}

/// The NUL-separated `env -0` output of a shell reporter, as a map.
fn read_env(path: &std::path::Path, limit: Duration) -> HashMap<String, String> {
    let start = Instant::now();
    loop {
        if let Ok(bytes) = std::fs::read(path) {
            if bytes.ends_with(b"\0") {
                return String::from_utf8_lossy(&bytes)
                    .split('\0')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
            }
        }
        assert!(
            start.elapsed() < limit,
            "no environment file {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn shell_reporter_gets_the_cronstable_environment() {
    let d = Daemon::start(
        r#"
jobs:
  - name: talk
    command: "echo out; echo 'err line' >&2; exit 3"
    captureStdout: true
    schedule: "@reboot"
    onFailure:
      report:
        shell:
          command: ["sh", "-c", "env -0 > {dir}/failure.env"]
"#,
    );
    let env = read_env(&d.path("failure.env"), LONG);
    let get = |k: &str| {
        env.get(k)
            .cloned()
            .unwrap_or_else(|| panic!("{k} missing: {env:?}"))
    };
    assert_eq!(get("CRONSTABLE_JOB_NAME"), "talk");
    assert_eq!(get("CRONSTABLE_FAILED"), "1");
    assert_eq!(get("CRONSTABLE_RETCODE"), "3");
    assert_eq!(
        get("CRONSTABLE_FAIL_REASON"),
        "failsWhen=nonzeroReturn and retcode=3"
    );
    assert_eq!(get("CRONSTABLE_STDOUT"), "out\n");
    assert_eq!(get("CRONSTABLE_STDERR"), "err line\n");
    assert_eq!(get("CRONSTABLE_STDOUT_TRUNCATED"), "0");
    assert_eq!(get("CRONSTABLE_STDERR_TRUNCATED"), "0");
    assert_eq!(
        get("CRONSTABLE_JOB_COMMAND"),
        "echo out; echo 'err line' >&2; exit 3"
    );
    assert_eq!(get("CRONSTABLE_JOB_SCHEDULE"), "@reboot");
    assert!(!get("CRONSTABLE_HOST").is_empty());
    let started = get("CRONSTABLE_STARTED_AT");
    assert!(
        started.ends_with("+00:00") && started.contains('T'),
        "{started}"
    );
    for empty in [
        "CRONSTABLE_RUN_ID",
        "CRONSTABLE_CPU_SECONDS",
        "CRONSTABLE_MAX_RSS_BYTES",
        "CRONSTABLE_SLA_CHECK",
        "CRONSTABLE_SLA_THRESHOLD_SECONDS",
        "CRONSTABLE_SLA_OBSERVED_SECONDS",
        "CRONSTABLE_LAST_SUCCESS_AT",
        "CRONSTABLE_LIMITS_ENFORCED",
        "CRONSTABLE_MEMORY_LIMIT_EXCEEDED",
    ] {
        assert_eq!(get(empty), "", "{empty}");
    }
    // The daemon's own environment is inherited.
    assert!(env.contains_key("PATH"));
}

#[test]
fn shell_reporter_truncates_long_output_and_runs_string_commands_in_its_shell() {
    let d = Daemon::start(
        r#"
jobs:
  - name: loud
    command: "head -c 20000 /dev/zero | tr '\\0' 'x'; echo"
    captureStdout: true
    schedule: "@reboot"
    onSuccess:
      report:
        shell:
          shell: /bin/bash
          command: 'echo "$BASH_VERSION" > {dir}/bash; env -0 > {dir}/success.env'
"#,
    );
    let env = read_env(&d.path("success.env"), LONG);
    assert_eq!(env["CRONSTABLE_FAILED"], "0");
    assert_eq!(env["CRONSTABLE_FAIL_REASON"], "");
    assert_eq!(env["CRONSTABLE_STDOUT"].len(), 16 * 1024);
    assert_eq!(env["CRONSTABLE_STDOUT_TRUNCATED"], "1");
    assert_eq!(env["CRONSTABLE_STDERR_TRUNCATED"], "0");
    let bash = std::fs::read_to_string(d.path("bash")).unwrap_or_default();
    assert!(!bash.trim().is_empty(), "the command ran under bash");
}

#[test]
fn shell_reporter_is_killed_at_its_timeout() {
    let d = Daemon::start(
        r#"
jobs:
  - name: hang
    command: "exit 1"
    schedule: "@reboot"
    onFailure:
      report:
        shell:
          command: "echo $$ > {dir}/pgid; sleep 60 & sleep 60"
          timeout: 1
"#,
    );
    d.wait_for_log(
        "Problem reporting job hang failure: shell reporter: the command did not finish within 1 seconds; killed it",
        1,
        LONG,
    );
    let pgid: i32 = support::daemon::read_lines(&d.path("pgid"))[0]
        .parse()
        .unwrap();
    assert!(
        !support::daemon::group_alive(pgid),
        "the reporter's group was killed"
    );
}

#[test]
fn webhook_default_body_is_slack_json_with_headers() {
    let rx = HttpReceiver::start();
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: backup
    command: "echo 'disk \"full\" <99%>' >&2; exit 2"
    schedule: "@reboot"
    onFailure:
      report:
        webhook:
          url:
            value: "@URL@"
          headers:
            Authorization: Bearer abc
            X-Extra: "yes"
"#,
        &[("URL", rx.url("/hook/slack"))],
    ));
    let req = &rx.wait_for("/hook/slack", 1, LONG)[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), Some("Bearer abc"));
    assert_eq!(req.header("x-extra"), Some("yes"));
    let body = req.json();
    assert_eq!(
        body["text"],
        "Cron job 'backup' failed\n(job failed because failsWhen=nonzeroReturn and retcode=2)\n\ndisk \"full\" <99%>\n\n\n"
    );
    // Jinja2's tojson output: ASCII, HTML-sensitive characters escaped.
    assert!(req.text().contains("\\u003c99%\\u003e"), "{}", req.text());
    drop(d);
}

#[test]
fn webhook_error_status_is_logged_without_the_url() {
    // The receiver echoes the request target, as many error pages do.
    let rx = HttpReceiver::with(|r| Reply {
        status: 404,
        body: format!("Cannot POST {}", r.target),
        delay: Duration::ZERO,
    });
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("url");
    std::fs::write(
        &secret,
        format!("{}\n", rx.url("/services/T0KEN-SECRET?sig=zz9")),
    )
    .unwrap();
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: ok-job
    command: "true"
    schedule: "@reboot"
    onSuccess:
      report:
        webhook:
          url:
            fromFile: "@FILE@"
          method: put
          contentType: text/plain
          body: "{{ name }} {{ success }} {{ fail_reason }} {{ exit_code }}"
"#,
        &[("FILE", secret.display().to_string())],
    ));
    let req = &rx.wait_for("/services/", 1, LONG)[0];
    assert_eq!(req.method, "PUT");
    assert_eq!(req.header("content-type"), Some("text/plain"));
    // Python spellings, as Jinja2 prints them.
    assert_eq!(req.text(), "ok-job True None 0");
    d.wait_for_log(
        "webhook reporter: the server answered HTTP 404: Cannot POST <redacted>",
        1,
        LONG,
    );
    let log = d.log();
    assert!(
        !log.contains("T0KEN-SECRET") && !log.contains("zz9"),
        "{log}"
    );
}

#[test]
fn webhook_timeout_is_logged() {
    let rx = HttpReceiver::with(|_| Reply {
        status: 200,
        body: String::new(),
        delay: Duration::from_secs(30),
    });
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: slowhook
    command: "true"
    schedule: "@reboot"
    onSuccess:
      report:
        webhook:
          url:
            value: "@URL@"
          timeout: 1
"#,
        &[("URL", rx.url("/slow"))],
    ));
    d.wait_for_log(
        "Problem reporting job slowhook success: webhook reporter: no response within 1 seconds",
        1,
        LONG,
    );
}

#[test]
fn sentry_envelope_carries_the_original_fields() {
    let rx = HttpReceiver::start();
    let dir = tempfile::tempdir().unwrap();
    let dsn = dir.path().join("dsn");
    std::fs::write(&dsn, format!("http://publickey@127.0.0.1:{}/42", rx.port)).unwrap();
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: ingest
    command: "echo boom >&2; exit 4"
    schedule: "@reboot"
    environment:
      - key: SHARD
        value: "3"
    onFailure:
      report:
        sentry:
          dsn:
            fromFile: "@DSN@"
          level: warning
          environment: staging
          extra:
            datacenter: dc1
            shard: 3
          maxStringLength: 40
"#,
        &[("DSN", dsn.display().to_string())],
    ));
    let req = &rx.wait_for("/api/42/envelope/", 1, LONG)[0];
    assert_eq!(req.method, "POST");
    let auth = req.header("x-sentry-auth").unwrap_or_default();
    assert!(
        auth.contains("sentry_key=publickey") && auth.contains("sentry_version=7"),
        "{auth}"
    );
    let text = req.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let header: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let item: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    let event: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(item["type"], "event");
    assert_eq!(item["length"], lines[2].len());
    assert_eq!(header["event_id"], event["event_id"]);
    assert_eq!(event["event_id"].as_str().unwrap().len(), 32);
    assert_eq!(event["level"], "warning");
    assert_eq!(event["environment"], "staging");
    // The default message: subject, newline, body, cut at 40 characters.
    assert_eq!(
        event["message"],
        "Cron job 'ingest' failed\n(job failed ..."
    );
    // The default fingerprint: the host comes from the job's environment.
    let fp: Vec<String> = serde_json::from_value(event["fingerprint"].clone()).unwrap();
    assert_eq!(fp.len(), 3);
    assert_eq!(fp[0], "cronstable");
    assert!(!fp[1].is_empty(), "{fp:?}");
    assert_eq!(fp[2], "ingest");
    let extra = &event["extra"];
    assert_eq!(extra["job"], "ingest");
    assert_eq!(extra["exit_code"], 4);
    assert_eq!(extra["command"], "echo boom >&2; exit 4");
    assert_eq!(extra["shell"], "/bin/sh");
    assert_eq!(extra["success"], false);
    assert_eq!(extra["datacenter"], "dc1");
    // Typed as written (the Reporting page's str/int/bool column).
    assert_eq!(extra["shard"], 3);
    assert_eq!(event["tags"]["job"], "ingest");
    assert!(event["server_name"].as_str().is_some_and(|s| !s.is_empty()));
    let log = d.log();
    assert!(!log.contains("publickey"), "the DSN key leaked: {log}");
}

#[test]
fn mail_is_delivered_through_smtp_with_login() {
    let smtp = SmtpSink::start();
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("pw");
    std::fs::write(&password, "s3cret\n").unwrap();
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: backup
    command: "echo 'tar: error' >&2; exit 1"
    schedule: "@reboot"
    onFailure:
      report:
        mail:
          from: cron@example.com
          to: ops@example.com, oncall@example.com
          smtpHost: 127.0.0.1
          smtpPort: @PORT@
          username: cron
          password:
            fromFile: "@PW@"
"#,
        &[
            ("PORT", smtp.port.to_string()),
            ("PW", password.display().to_string()),
        ],
    ));
    let mail = &smtp.wait_for(1, LONG)[0];
    assert_eq!(mail.mail_from, "cron@example.com");
    assert_eq!(mail.rcpt_tos, ["ops@example.com", "oncall@example.com"]);
    assert_eq!(mail.auth_user.as_deref(), Some("cron"));
    assert_eq!(mail.auth_password.as_deref(), Some("s3cret"));
    assert_eq!(
        mail.header("Subject").as_deref(),
        Some("Cron job 'backup' failed")
    );
    assert_eq!(mail.header("From").as_deref(), Some("cron@example.com"));
    let to = mail.header("To").unwrap_or_default();
    assert!(
        to.contains("ops@example.com") && to.contains("oncall@example.com"),
        "{to}"
    );
    assert!(
        mail.header("Date").is_some_and(|d| d.ends_with("+0000")),
        "{:?}",
        mail.header("Date")
    );
    assert!(mail
        .header("Content-Type")
        .is_some_and(|c| c.starts_with("text/plain")));
    assert_eq!(
        mail.body().trim_end(),
        "(job failed because failsWhen=nonzeroReturn and retcode=1)\n\ntar: error"
    );
    assert!(!d.log().contains("s3cret"));
}

#[test]
fn html_success_mail_over_starttls() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = support::receivers::self_signed(certs.path());
    let smtp = SmtpSink::start_tls(&cert, &key);
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: report-build
    command: "echo '<h1>Build ok – naïve</h1>'"
    schedule: "@reboot"
    captureStdout: true
    onSuccess:
      report:
        mail:
          from: cron@example.com
          to: team@example.com
          smtpHost: 127.0.0.1
          smtpPort: @PORT@
          starttls: true
          validate_certs: false
          html: true
          subject: "Build report for {{ name }}"
          body: "{{ stdout }}"
"#,
        &[("PORT", smtp.port.to_string())],
    ));
    let mail = &smtp.wait_for(1, LONG)[0];
    assert!(mail.tls, "the session used STARTTLS");
    assert_eq!(
        mail.header("Subject").as_deref(),
        Some("Build report for report-build")
    );
    assert!(mail
        .header("Content-Type")
        .is_some_and(|c| c.starts_with("text/html")));
    assert_eq!(mail.body().trim_end(), "<h1>Build ok – naïve</h1>");
    drop(d);
}

#[test]
fn mail_over_implicit_tls() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = support::receivers::self_signed(certs.path());
    let smtp = SmtpSink::start_implicit_tls(&cert, &key);
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: smtps
    command: "exit 6"
    schedule: "@reboot"
    onPermanentFailure:
      report:
        mail:
          from: cron@example.com
          to: team@example.com
          smtpHost: 127.0.0.1
          smtpPort: @PORT@
          tls: true
          validate_certs: false
"#,
        &[("PORT", smtp.port.to_string())],
    ));
    let mail = &smtp.wait_for(1, LONG)[0];
    assert!(mail.tls, "the session used TLS");
    assert_eq!(
        mail.header("Subject").as_deref(),
        Some("Cron job 'smtps' failed")
    );
    drop(d);
}

#[test]
fn starttls_with_certificate_validation_refuses_a_self_signed_server() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = support::receivers::self_signed(certs.path());
    let smtp = SmtpSink::start_tls(&cert, &key);
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: strict
    command: "exit 1"
    schedule: "@reboot"
    onFailure:
      report:
        mail:
          from: cron@example.com
          to: team@example.com
          smtpHost: 127.0.0.1
          smtpPort: @PORT@
          starttls: true
"#,
        &[("PORT", smtp.port.to_string())],
    ));
    d.wait_for_log(
        "Problem reporting job strict failure: mail reporter: SMTP delivery",
        1,
        LONG,
    );
    assert!(smtp.mails().is_empty());
}

#[test]
fn each_hook_reports_and_permanent_failure_comes_after_the_retries() {
    let rx = HttpReceiver::start();
    let d = Daemon::start(&config(
        r#"
defaults:
  onSuccess:
    report:
      webhook:
        url:
          value: "@BASE@/success"
        body: "{{ name }}"
  onFailure:
    report:
      webhook:
        url:
          value: "@BASE@/failure"
        body: "{{ name }} {{ exit_code }}"
  onPermanentFailure:
    report:
      webhook:
        url:
          value: "@BASE@/permanent"
        body: "{{ name }} {{ fail_reason }}"
jobs:
  - name: good
    command: "true"
    schedule: "@reboot"
  - name: flaky
    command: "exit 5"
    schedule: "@reboot"
    onFailure:
      retry:
        maximumRetries: 2
        initialDelay: 0.2
        maximumDelay: 1
        backoffMultiplier: 1
"#,
        &[("BASE", rx.url(""))],
    ));
    let permanent = rx.wait_for("/permanent", 1, LONG);
    assert_eq!(
        permanent[0].text(),
        "flaky failsWhen=nonzeroReturn and retcode=5"
    );
    std::thread::sleep(Duration::from_millis(500));
    let failures: Vec<String> = rx
        .wait_for("/failure", 3, LONG)
        .iter()
        .map(|r| r.text())
        .collect();
    assert_eq!(failures, ["flaky 5", "flaky 5", "flaky 5"]);
    assert_eq!(rx.wait_for("/success", 1, LONG)[0].text(), "good");
    assert_eq!(rx.wait_for("/permanent", 1, LONG).len(), 1);
    d.wait_for_log("Cron job flaky: reporting permanent failure", 1, LONG);
}

#[test]
fn a_broken_reporter_does_not_block_the_others() {
    // The webhook receiver never answers in time, the mail server does not
    // exist, and the Sentry body fails to render; the shell reporter must
    // still run at once, and the scheduler must keep firing.
    let hang = HttpReceiver::with(|_| Reply {
        status: 200,
        body: String::new(),
        delay: Duration::from_secs(60),
    });
    let closed = support::receivers::free_port();
    let d = Daemon::start(&config(
        r#"
jobs:
  - name: broken
    command: "exit 1"
    schedule: "@reboot"
    onFailure:
      report:
        webhook:
          url:
            value: "@URL@"
          timeout: 8
        mail:
          from: a@example.com
          to: b@example.com
          smtpHost: 127.0.0.1
          smtpPort: @CLOSED@
        sentry:
          dsn:
            value: "http://k@127.0.0.1:@CLOSED@/1"
          body: "{{ fail_reason.nosuchmethod() }}"
        shell:
          command: "date +%s.%N > {dir}/shell-ran"
  - name: ticker
    command: "date +%s >> {dir}/ticks"
    schedule:
      second: "*"
"#,
        &[("URL", hang.url("/hang")), ("CLOSED", closed.to_string())],
    ));
    let started = Instant::now();
    d.wait_for_lines("shell-ran", 1, LONG);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "the shell reporter waited for the others"
    );
    d.wait_for_log(
        "Problem reporting job broken failure: mail reporter:",
        1,
        LONG,
    );
    d.wait_for_log(
        "Problem reporting job broken failure: sentry reporter: sentry.body:",
        1,
        LONG,
    );
    hang.wait_for("/hang", 1, LONG);
    let ticks_before = support::daemon::read_lines(&d.path("ticks")).len();
    d.wait_for_lines("ticks", ticks_before + 2, LONG);
    d.wait_for_log(
        "Problem reporting job broken failure: webhook reporter: no response within 8 seconds",
        1,
        LONG,
    );
}

#[test]
fn a_broken_template_is_a_load_error_naming_the_key() {
    let dir = support::cli::write_tree(&[(
        "jobs.yaml",
        r#"
jobs:
  - name: bad
    command: "true"
    schedule: "@daily"
    onPermanentFailure:
      report:
        webhook:
          url:
            value: http://127.0.0.1:1/x
          body: "{% if success %}unclosed"
  - name: bad-filter
    command: "true"
    schedule: "@daily"
"#,
    )]);
    let run = support::cli::cronstable(&["-c", "jobs.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("onPermanentFailure.report.webhook.body: invalid template: syntax error"),
        "{}",
        run.stderr
    );

    let dir = support::cli::write_tree(&[(
        "jobs.yaml",
        r#"
defaults:
  onFailure:
    report:
      sentry:
        fingerprint: ["a", "{{ name | nosuchfilter }}"]
jobs:
  - name: bad-filter
    command: "true"
    schedule: "@daily"
"#,
    )]);
    let run = support::cli::cronstable(&["-c", "jobs.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("onFailure.report.sentry.fingerprint[1]: invalid template: unknown filter"),
        "{}",
        run.stderr
    );
}

/// A template value from JSON (null, bool, number, string, list, map).
fn to_value(v: &serde_json::Value) -> minijinja::Value {
    use minijinja::Value;
    match v {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or_default()),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(a) => Value::from(a.iter().map(to_value).collect::<Vec<_>>()),
        serde_json::Value::Object(m) => Value::from(
            m.iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect::<std::collections::BTreeMap<String, Value>>(),
        ),
    }
}

/// Our renderer and Python's Jinja2 print the same text for the
/// original's default templates, our defaults, the Reporting page's
/// examples and a spread of expressions, over failed, successful and
/// uncaptured runs.
#[test]
fn templates_render_exactly_like_jinja2() {
    let legacy: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/fingerprint/legacy_report_defaults.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut templates: Vec<String> = vec![
        legacy["mail"]["subject"].as_str().unwrap().into(),
        legacy["mail"]["body"].as_str().unwrap().into(),
        legacy["sentry"]["body"].as_str().unwrap().into(),
        legacy["webhook"]["body"].as_str().unwrap().into(),
    ];
    for line in legacy["sentry"]["fingerprint"].as_array().unwrap() {
        templates.push(line.as_str().unwrap().into());
    }
    use cronstable::report::templates as t;
    for ours in [
        t::DEFAULT_SUBJECT,
        t::DEFAULT_BODY,
        t::DEFAULT_SENTRY_BODY,
        t::DEFAULT_WEBHOOK_BODY,
    ] {
        templates.push(ours.into());
    }
    for extra in [
        // The Reporting page's Discord and ntfy bodies.
        "{\"content\": {% filter tojson %}Cron job '{{ name }}' {% if success %}completed{% else %}failed: {{ fail_reason }}{% endif %}{% endfilter %}}",
        "Cron job '{{ name }}' failed: {{ fail_reason }}",
        "{{ success }} {{ fail_reason }} {{ exit_code }} {{ stdout }} {{ run_id }}",
        "{{ command }} | {{ environment }} | {{ environment.HOSTNAME }}",
        "{{ stdout | tojson }} {{ stderr | tojson }} {{ command | tojson }}",
        "{{ {'b': 1, 'a': [1, 2.5, none, true], 'c': 'é<>&\\''} | tojson }}",
        "{{ {'k': [1, 2]} | tojson(indent=2) }}",
        "{{ name.upper() }} {{ name | title }} {{ (stdout or '').splitlines() }}",
        "{{ exit_code + 1 }} {{ 1 / 4 }} {{ 10 // 3 }} {{ 2 ** 70 }} {{ 0.1 + 0.2 }} {{ 1e20 * 10 }}",
        "{% for line in (stderr or '').splitlines() %}[{{ loop.index }}:{{ line }}]{% endfor %}",
        "{{ name ~ '!' }} {{ '{}-{}'.format(name, exit_code) }} {{ [1, 'a'] }}",
        "{% if stdout and stderr %}both{% elif stdout %}out{% else %}none{% endif %}\n",
        "{{ schedule }} {{ host }} {{ started_at }} {{ shell }}",
        "{{ (stdout or '') | length }} {{ stdout | default('n/a', true) }}",
    ] {
        templates.push(extra.into());
    }
    let base = serde_json::json!({
        "name": "backup",
        "command": ["tar", "czf", "/tmp/x.tgz", "/srv"],
        "shell": "/bin/sh",
        "host": "node-1",
        "schedule": "0 3 * * *",
        "started_at": "2026-06-18T12:34:56.001500+00:00",
        "run_id": null, "cpu_seconds": null, "cpu_user_seconds": null,
        "cpu_system_seconds": null, "max_rss_bytes": null,
    });
    let runs = [
        serde_json::json!({"success": false, "fail_reason": "failsWhen=nonzeroReturn and retcode=2",
            "stdout": "line one\nline \"two\" <b>\n", "stderr": "tar: é error\n", "exit_code": 2,
            "environment": {"HOSTNAME": "node-1", "A": "1"}}),
        serde_json::json!({"success": true, "fail_reason": null, "stdout": "done\n", "stderr": "",
            "exit_code": 0, "environment": null}),
        serde_json::json!({"success": false, "fail_reason": "failsWhen=always", "stdout": null,
            "stderr": null, "exit_code": -100, "environment": null}),
    ];
    let contexts: Vec<serde_json::Value> = runs
        .iter()
        .map(|run| {
            let mut ctx = base.clone();
            for (k, v) in run.as_object().unwrap() {
                ctx[k] = v.clone();
            }
            ctx
        })
        .collect();

    let script = "import json, sys, jinja2\n\
        job = json.load(sys.stdin)\n\
        out = [[jinja2.Template(t).render(c) for c in job['contexts']] for t in job['templates']]\n\
        json.dump(out, sys.stdout)";
    let input = serde_json::json!({"templates": templates, "contexts": contexts}).to_string();
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Jinja2 failed (is jinja2 installed? scripts/test.sh installs it)"
    );
    let expected: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(expected.len(), templates.len());

    let mut differences = Vec::new();
    for (template, want_all) in templates.iter().zip(&expected) {
        for (ctx, want) in contexts.iter().zip(want_all) {
            let got = t::render("test", template, &to_value(ctx));
            if got.as_ref() != Ok(want) {
                differences.push(format!(
                    "{template:?}\n  jinja2: {want:?}\n  ours:   {got:?}"
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// The examples of the original's Reporting page, as written there except
/// for where they deliver (hosts, ports and URLs of the receivers here),
/// the commands (made to fail or print), `@reboot` schedules, the shell
/// example's output redirected to a file, and `validate_certs: false` on
/// the STARTTLS example (the test server's certificate is self-signed).
#[test]
fn the_reporting_page_examples_load_and_send_the_same_messages() {
    let plain = SmtpSink::start();
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = support::receivers::self_signed(certs.path());
    let tls = SmtpSink::start_tls(&cert, &key);
    let http = HttpReceiver::start();
    let secrets = tempfile::tempdir().unwrap();
    let discord = secrets.path().join("discord-webhook");
    std::fs::write(&discord, http.url("/api/webhooks/123/discord-token")).unwrap();
    // Names as on the page; nothing else in this test binary reads them.
    std::env::set_var("SMTP_PASSWORD", "s3cret");
    std::env::set_var(
        "SENTRY_DSN",
        format!("http://pk@127.0.0.1:{}/42", http.port),
    );
    std::env::set_var("SLACK_WEBHOOK_URL", http.url("/services/T00/B00/slack"));
    let text = config(
        r#"
jobs:
  - name: backup
    command: "echo 'backup.sh: disk full' >&2; exit 1"
    schedule: "@reboot"
    captureStderr: true
    onFailure:
      report:
        mail:
          from: cron@example.com
          to: ops@example.com, oncall@example.com
          smtpHost: 127.0.0.1
          smtpPort: @PLAIN@
          starttls: false
          validate_certs: false
        webhook:
          url:
            fromEnvVar: SLACK_WEBHOOK_URL
  - name: report-build
    command: "echo '<p>report</p>'"
    schedule: "@reboot"
    captureStdout: true
    onSuccess:
      report:
        mail:
          from: cron@example.com
          to: team@example.com
          smtpHost: 127.0.0.1
          smtpPort: @TLS@
          starttls: true
          validate_certs: false
          username: cron
          password:
            fromEnvVar: SMTP_PASSWORD
          html: true
          subject: "Build report for {{ name }}"
          body: "{{ stdout }}"
  - name: ingest
    command: "echo 'ingest: timeout' >&2; exit 1"
    schedule: "@reboot"
    captureStderr: true
    onFailure:
      report:
        sentry:
          dsn:
            fromEnvVar: SENTRY_DSN
          level: warning
          environment: production
          fingerprint:
            - ingest-job
            - "{{ name }}"
          extra:
            datacenter: dc1
            shard: 3
  - name: ping-job
    command: "exit 1"
    shell: /bin/bash
    schedule: "@reboot"
    onFailure:
      report:
        shell:
          shell: /bin/bash
          command: echo "job $CRONSTABLE_JOB_NAME failed with code $CRONSTABLE_RETCODE" > {dir}/ping
  - name: discord-demo
    command: "exit 7"
    schedule: "@reboot"
    onFailure:
      report:
        webhook:
          url:
            fromFile: "@DISCORD@"
          body: >-
            {"content": {% filter tojson %}Cron job '{{ name }}'
            {% if success %}completed{% else %}failed:
            {{ fail_reason }}{% endif %}{% endfilter %}}
  - name: ntfy-demo
    command: "exit 8"
    schedule: "@reboot"
    onFailure:
      report:
        webhook:
          url:
            value: "@NTFY@"
          contentType: text/plain
          headers:
            Title: cronstable job failure
            Priority: high
          body: "Cron job '{{ name }}' failed: {{ fail_reason }}"
"#,
        &[
            ("PLAIN", plain.port.to_string()),
            ("TLS", tls.port.to_string()),
            ("DISCORD", discord.display().to_string()),
            ("NTFY", http.url("/my-alerts")),
        ],
    );
    let d = Daemon::start(&text);

    let backup = &plain.wait_for(1, LONG)[0];
    assert_eq!(
        backup.header("Subject").as_deref(),
        Some("Cron job 'backup' failed")
    );
    assert_eq!(backup.rcpt_tos, ["ops@example.com", "oncall@example.com"]);
    assert_eq!(
        backup.body().trim_end(),
        "(job failed because failsWhen=nonzeroReturn and retcode=1)\n\nbackup.sh: disk full"
    );
    let slack = &http.wait_for("/services/T00/B00/slack", 1, LONG)[0];
    assert_eq!(
        slack.json()["text"],
        "Cron job 'backup' failed\n(job failed because failsWhen=nonzeroReturn and retcode=1)\n\nbackup.sh: disk full\n\n\n"
    );

    let build = &tls.wait_for(1, LONG)[0];
    assert!(build.tls);
    assert_eq!(build.auth_user.as_deref(), Some("cron"));
    assert_eq!(
        build.header("Subject").as_deref(),
        Some("Build report for report-build")
    );
    assert!(build
        .header("Content-Type")
        .is_some_and(|c| c.starts_with("text/html")));
    assert_eq!(build.body().trim_end(), "<p>report</p>");

    let envelope = http.wait_for("/api/42/envelope/", 1, LONG)[0].text();
    let event: serde_json::Value = serde_json::from_str(envelope.lines().nth(2).unwrap()).unwrap();
    assert_eq!(event["level"], "warning");
    assert_eq!(event["environment"], "production");
    assert_eq!(
        event["fingerprint"],
        serde_json::json!(["ingest-job", "ingest"])
    );
    assert_eq!(event["extra"]["datacenter"], "dc1");
    assert_eq!(event["extra"]["shard"], 3);
    assert_eq!(
        event["message"],
        "Cron job 'ingest' failed\n(job failed because failsWhen=nonzeroReturn and retcode=1)\n\ningest: timeout\n\n"
    );

    assert_eq!(
        d.wait_for_lines("ping", 1, LONG),
        ["job ping-job failed with code 1"]
    );

    let discord = &http.wait_for("/api/webhooks/123/", 1, LONG)[0];
    assert_eq!(
        discord.json()["content"],
        "Cron job 'discord-demo' failed: failsWhen=nonzeroReturn and retcode=7"
    );
    let ntfy = &http.wait_for("/my-alerts", 1, LONG)[0];
    assert_eq!(ntfy.header("content-type"), Some("text/plain"));
    assert_eq!(ntfy.header("title"), Some("cronstable job failure"));
    assert_eq!(ntfy.header("priority"), Some("high"));
    assert_eq!(
        ntfy.text(),
        "Cron job 'ntfy-demo' failed: failsWhen=nonzeroReturn and retcode=8"
    );
    let log = d.log();
    for secret in ["discord-token", "slack", "pk@"] {
        assert!(!log.contains(secret), "{secret} leaked: {log}");
    }
}

/// The default templates as the Reporting page prints them under "Default
/// templates" (interface texts, kept byte for byte): what a reporter
/// without its own `subject`/`body` must render.
const MANUAL_SUBJECT: &str =
    "Cron job '{{name}}' {% if success %}completed{% else %}failed{% endif %}";
const MANUAL_BODY: &str = "{% if fail_reason -%}
(job failed because {{fail_reason}})
{% endif %}
{% if stdout and stderr -%}
STDOUT:
---
{{stdout}}
---
STDERR:
{{stderr}}
{% elif stdout -%}
{{stdout}}
{% elif stderr -%}
{{stderr}}
{% else -%}
(no output was captured)
{% endif %}
";

/// The page's Sentry default: subject, a newline, body.
fn manual_sentry_body() -> String {
    format!("{MANUAL_SUBJECT}\n{MANUAL_BODY}")
}

/// The page's webhook default: the Sentry text inside `tojson`.
fn manual_webhook_body() -> String {
    format!(
        "{{\"text\": {{% filter tojson %}}{}{{% endfilter %}}}}",
        manual_sentry_body()
    )
}

/// Renders `template` with `context` in Python's Jinja2.
fn jinja2(template: &str, context: &serde_json::Value) -> String {
    let script = "import json, sys, jinja2\n\
        job = json.load(sys.stdin)\n\
        sys.stdout.write(jinja2.Template(job['template']).render(job['context']))";
    let input = serde_json::json!({"template": template, "context": context}).to_string();
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "Jinja2 failed (is jinja2 installed? scripts/test.sh installs it)"
    );
    String::from_utf8(out.stdout).expect("Jinja2 prints UTF-8")
}

/// The template variables the default templates read, for one run.
fn run_vars(
    name: &str,
    fail_reason: Option<&str>,
    stdout: Option<&str>,
    stderr: Option<&str>,
) -> serde_json::Value {
    serde_json::json!({
        "name": name,
        "success": fail_reason.is_none(),
        "fail_reason": fail_reason,
        "stdout": stdout,
        "stderr": stderr,
    })
}

/// A mail reporter with no `subject`/`body` sends exactly what Jinja2
/// renders from the page's default templates, for every shape of run:
/// success and failure, both streams, one stream, no output.
#[test]
fn default_mail_is_the_manuals_template_rendered() {
    let smtp = SmtpSink::start();
    let mail = "
      report:
        mail:
          from: cron@example.com
          to: ops@example.com
          smtpHost: 127.0.0.1
          smtpPort: @PORT@";
    let text = config(
        &format!(
            r#"
jobs:
  - name: ok-both
    command: "echo out; echo err >&2"
    schedule: "@reboot"
    captureStdout: true
    failsWhen:
      producesStdout: false
      producesStderr: false
    onSuccess:{mail}
  - name: ok-stdout
    command: "echo héllo; echo hidden >&2"
    schedule: "@reboot"
    captureStdout: true
    captureStderr: false
    onSuccess:{mail}
  - name: ok-silent
    command: "true"
    schedule: "@reboot"
    onSuccess:{mail}
  - name: ok-long-line
    command: "printf '%090d\\n' 7"
    schedule: "@reboot"
    captureStdout: true
    onSuccess:{mail}
  - name: ok-accents
    command: "echo 'ééé àà ü'"
    schedule: "@reboot"
    captureStdout: true
    onSuccess:{mail}
  - name: fail-both
    command: "echo partial; echo 'disk \"full\"' >&2; exit 2"
    schedule: "@reboot"
    captureStdout: true
    onFailure:{mail}
  - name: fail-stderr
    command: "echo 'tar: error' >&2; exit 1"
    schedule: "@reboot"
    onFailure:{mail}
  - name: fail-silent
    command: "exit 3"
    schedule: "@reboot"
    onFailure:{mail}
"#
        ),
        &[("PORT", smtp.port.to_string())],
    );
    let d = Daemon::start(&text);
    let start = Instant::now();
    while smtp.mails().len() < 8 && start.elapsed() < LONG {
        std::thread::sleep(Duration::from_millis(50));
    }
    let mails = smtp.mails();
    let subjects: Vec<_> = mails.iter().map(|m| m.header("Subject")).collect();
    assert_eq!(mails.len(), 8, "mails: {subjects:?}\nlog:\n{}", d.log());
    let reason = |code: i32| format!("failsWhen=nonzeroReturn and retcode={code}");
    let cases = [
        run_vars("ok-both", None, Some("out\n"), Some("err\n")),
        run_vars("ok-stdout", None, Some("héllo\n"), None),
        run_vars("ok-silent", None, None, Some("")),
        run_vars("ok-accents", None, Some("ééé àà ü\n"), Some("")),
        run_vars(
            "ok-long-line",
            None,
            Some(&format!("{:090}\n", 7)),
            Some(""),
        ),
        run_vars(
            "fail-both",
            Some(&reason(2)),
            Some("partial\n"),
            Some("disk \"full\"\n"),
        ),
        run_vars("fail-stderr", Some(&reason(1)), None, Some("tar: error\n")),
        run_vars("fail-silent", Some(&reason(3)), None, Some("")),
    ];
    for vars in &cases {
        let subject = jinja2(MANUAL_SUBJECT, vars);
        let found: Vec<_> = mails
            .iter()
            .filter(|m| m.header("Subject").as_deref() == Some(subject.as_str()))
            .collect();
        assert_eq!(found.len(), 1, "one mail titled {subject:?}");
        let want = jinja2(MANUAL_BODY, vars);
        assert_eq!(
            found[0].body(),
            want,
            "body of {subject:?}: {:?}",
            found[0].data
        );
    }
    // Every transfer encoding the mail reporter picks was on the wire, so
    // each one was checked above to decode to the rendered text exactly.
    let encodings: std::collections::BTreeSet<String> = mails
        .iter()
        .filter_map(|m| m.header("Content-Transfer-Encoding"))
        .map(|e| e.to_ascii_lowercase())
        .collect();
    assert_eq!(
        encodings,
        ["7bit", "base64", "quoted-printable"]
            .map(str::to_owned)
            .into(),
        "{encodings:?}"
    );
    // The documented lines are there, spelled as the page spells them.
    let all: String = mails.iter().map(|m| m.body()).collect();
    for line in [
        "(job failed because failsWhen=nonzeroReturn and retcode=2)",
        "STDOUT:\n---\npartial\n\n---\nSTDERR:\ndisk \"full\"\n",
        "(no output was captured)",
    ] {
        assert!(all.contains(line), "{line:?} in {all:?}");
    }
    drop(d);
}

/// The default webhook body is byte for byte what Jinja2 renders from the
/// page's template, and the default Sentry message is the page's subject,
/// a newline and body.
#[test]
fn default_webhook_and_sentry_texts_are_the_manuals_templates_rendered() {
    let rx = HttpReceiver::start();
    let text = config(
        r#"
jobs:
  - name: noisy
    command: "echo 'line \"one\" <b>'; echo 'tar: é error' >&2; exit 4"
    schedule: "@reboot"
    captureStdout: true
    onFailure:
      report:
        webhook:
          url:
            value: "@HOOK@"
        sentry:
          dsn:
            value: "http://pk@127.0.0.1:@PORT@/5"
          maxStringLength: 100000
  - name: quiet
    command: "true"
    schedule: "@reboot"
    onSuccess:
      report:
        webhook:
          url:
            value: "@HOOK2@"
        sentry:
          dsn:
            value: "http://pk@127.0.0.1:@PORT@/6"
"#,
        &[
            ("HOOK", rx.url("/hook/noisy")),
            ("HOOK2", rx.url("/hook/quiet")),
            ("PORT", rx.port.to_string()),
        ],
    );
    let d = Daemon::start(&text);
    let cases = [
        (
            "noisy",
            "/5/",
            run_vars(
                "noisy",
                Some("failsWhen=nonzeroReturn and retcode=4"),
                Some("line \"one\" <b>\n"),
                Some("tar: é error\n"),
            ),
        ),
        ("quiet", "/6/", run_vars("quiet", None, None, Some(""))),
    ];
    for (name, project, vars) in &cases {
        let hook = &rx.wait_for(&format!("/hook/{name}"), 1, LONG)[0];
        assert_eq!(hook.text(), jinja2(&manual_webhook_body(), vars), "{name}");
        let envelope = rx.wait_for(&format!("/api{project}envelope/"), 1, LONG)[0].text();
        let event: serde_json::Value =
            serde_json::from_str(envelope.lines().nth(2).expect("an event line")).unwrap();
        assert_eq!(
            event["message"].as_str(),
            Some(jinja2(&manual_sentry_body(), vars).as_str()),
            "{name}"
        );
    }
    drop(d);
}

/// `extra` values reach the Sentry event with their YAML type: integers
/// and floats as JSON numbers, booleans as JSON booleans, strings (quoted
/// numbers included) as strings; an empty value is an empty string, as
/// the original reads it. The fixed context keeps its types too.
#[test]
fn sentry_extra_values_keep_their_yaml_types() {
    let rx = HttpReceiver::start();
    let d = Daemon::start(&config(
        r#"
defaults:
  onFailure:
    report:
      sentry:
        extra:
          region: eu-west
          shard: 7
jobs:
  - name: typed
    command: "exit 1"
    schedule: "@reboot"
    onFailure:
      report:
        sentry:
          dsn:
            value: "http://pk@127.0.0.1:@PORT@/9"
          extra:
            shard: 3
            ratio: 0.25
            negative: -12
            enabled: true
            disabled: false
            datacenter: dc1
            quoted_number: "42"
            quoted_bool: "true"
            empty:
"#,
        &[("PORT", rx.port.to_string())],
    ));
    let envelope = rx.wait_for("/api/9/envelope/", 1, LONG)[0].text();
    let event: serde_json::Value =
        serde_json::from_str(envelope.lines().nth(2).expect("an event line")).unwrap();
    let extra = event["extra"].as_object().expect("extra is a map");
    let want = serde_json::json!({
        "shard": 3,
        "ratio": 0.25,
        "negative": -12,
        "enabled": true,
        "disabled": false,
        "datacenter": "dc1",
        "quoted_number": "42",
        "quoted_bool": "true",
        "empty": "",
        // From `defaults:`, merged under the job's own map.
        "region": "eu-west",
        "job": "typed",
        "exit_code": 1,
        "command": "exit 1",
        "shell": "/bin/sh",
        "success": false,
    });
    for (key, value) in want.as_object().unwrap() {
        assert_eq!(extra.get(key), Some(value), "extra[{key:?}] in {extra:?}");
    }
    assert_eq!(extra.len(), want.as_object().unwrap().len(), "{extra:?}");
    drop(d);
}
