//! Report templates: the Jinja2 syntax of the original, rendered by
//! minijinja, printing values the way Python does (see [`crate::pyfmt`]).
//!
//! The default subject and body are interface texts: they are the
//! templates the original's Reporting page prints under "Default
//! templates", kept byte for byte (whitespace control, blank lines and
//! the final newline included), because mail filters and chat parsers
//! match on the text they produce. Where the original's source differs
//! from its manual (its body starts with one more newline), the manual
//! wins; docs/reporting.md lists the difference.

use crate::config::model::Report;
use crate::pyfmt;
use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

// Macros rather than constants so that the Sentry and webhook defaults can
// be assembled with `concat!` at compile time.
macro_rules! subject {
    () => {
        "Cron job '{{name}}' {% if success %}completed{% else %}failed{% endif %}"
    };
}

macro_rules! body {
    () => {
        r#"{% if fail_reason -%}
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
"#
    };
}

/// Default mail subject: `Cron job '<name>' completed` or `... failed`.
pub const DEFAULT_SUBJECT: &str = subject!();

/// Default mail body: `(job failed because <reason>)` on failure, then the
/// captured output (both streams under `STDOUT:`/`STDERR:` when both have
/// text), or `(no output was captured)`.
pub const DEFAULT_BODY: &str = body!();

/// Default Sentry message template: the subject, a newline, the body.
pub const DEFAULT_SENTRY_BODY: &str = concat!(subject!(), "\n", body!());

/// Default webhook body: the Sentry message text as Slack's
/// `{"text": ...}`, JSON-encoded by `tojson` so any output stays valid.
pub const DEFAULT_WEBHOOK_BODY: &str = concat!(
    "{\"text\": {% filter tojson %}",
    subject!(),
    "\n",
    body!(),
    "{% endfilter %}}"
);

/// Default Sentry fingerprint (groups events by host and job).
pub const DEFAULT_FINGERPRINT: [&str; 3] =
    ["cronstable", "{{ environment.HOSTNAME }}", "{{ name }}"];

/// A template that does not compile or does not render.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    /// Where the template is, relative to the `report:` block
    /// (`mail.subject`, `sentry.fingerprint[1]`, ...).
    pub key: String,
    /// What is wrong, with the line when minijinja knows it.
    pub message: String,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for TemplateError {}

fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        // Python's str() of each printed value: `None`, `True`, `['a']`.
        env.set_formatter(|out, _state, value| {
            out.write_str(&pyfmt::py_str(value))
                .map_err(|_| Error::new(ErrorKind::WriteFailure, "cannot write template output"))
        });
        env.add_filter("tojson", tojson);
        // `.upper()`, `.rstrip()`, `.items()`, ... as in Python.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env
    })
}

fn tojson(value: &Value, indent: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match kwargs.get::<Option<usize>>("indent")? {
        Some(n) => Some(n),
        None => indent,
    };
    kwargs.assert_all_used()?;
    Ok(Value::from_safe_string(pyfmt::to_json(value, indent)))
}

fn describe(err: &Error) -> String {
    let mut text = match err.detail() {
        Some(detail) => format!("{}: {detail}", err.kind()),
        None => err.kind().to_string(),
    };
    if let Some(line) = err.line() {
        text.push_str(&format!(" (line {line})"));
    }
    text
}

/// Renders `source` with `vars`; `key` names the template in the error.
pub fn render(key: &str, source: &str, vars: &Value) -> Result<String, TemplateError> {
    environment()
        .render_str(source, vars.clone())
        .map_err(|e| TemplateError {
            key: key.to_owned(),
            message: describe(&e),
        })
}

/// Compiles `source` and tries it on a sample failed and a sample
/// successful run. Syntax errors fail, and so do unknown filters and tests
/// (Jinja2 refuses those when it compiles; minijinja only notices them
/// when the line runs, hence the trial renders). Other errors of a trial
/// render are left alone: they depend on the data of a real run.
pub fn compile(key: &str, source: &str) -> Result<(), TemplateError> {
    // A template set in `defaults:` is repeated in every job of the file:
    // check each distinct source once (10,000 jobs must still validate in
    // a blink). Only sources that passed are remembered.
    static PASSED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let passed = PASSED.get_or_init(Default::default);
    if passed.lock().is_ok_and(|set| set.contains(source)) {
        return Ok(());
    }
    compile_uncached(key, source)?;
    if let Ok(mut set) = passed.lock() {
        if set.len() >= 4096 {
            set.clear();
        }
        set.insert(source.to_owned());
    }
    Ok(())
}

fn compile_uncached(key: &str, source: &str) -> Result<(), TemplateError> {
    let fail = |e: &Error| TemplateError {
        key: key.to_owned(),
        message: describe(e),
    };
    let template = environment()
        .template_from_str(source)
        .map_err(|e| fail(&e))?;
    for success in [false, true] {
        if let Err(e) = template.render(sample_vars(success)) {
            if matches!(e.kind(), ErrorKind::UnknownFilter | ErrorKind::UnknownTest) {
                return Err(fail(&e));
            }
        }
    }
    Ok(())
}

/// Every template variable with a plausible value, for trial renders.
fn sample_vars(success: bool) -> Value {
    let text = |s: &str| Value::from(s);
    let none = Value::from(());
    let pairs: [(&str, Value); 17] = [
        ("name", text("job")),
        ("success", Value::from(success)),
        (
            "fail_reason",
            if success {
                none.clone()
            } else {
                text("failsWhen=always")
            },
        ),
        ("stdout", text("out\n")),
        ("stderr", text("err\n")),
        ("exit_code", Value::from(if success { 0 } else { 1 })),
        ("command", text("true")),
        ("shell", text("/bin/sh")),
        ("environment", none.clone()),
        ("host", text("host")),
        ("schedule", text("* * * * *")),
        ("started_at", text("2026-01-01T00:00:00+00:00")),
        ("run_id", none.clone()),
        ("cpu_seconds", none.clone()),
        ("cpu_user_seconds", none.clone()),
        ("cpu_system_seconds", none.clone()),
        ("max_rss_bytes", none),
    ];
    Value::from(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<std::collections::BTreeMap<String, Value>>(),
    )
}

/// Checks every template of a report block at load time, so a broken
/// template is a configuration error rather than a failed report later.
pub fn check(report: &Report) -> Result<(), TemplateError> {
    if let Some(mail) = &report.mail {
        if let Some(s) = &mail.subject {
            compile("mail.subject", s)?;
        }
        if let Some(s) = &mail.body {
            compile("mail.body", s)?;
        }
    }
    if let Some(sentry) = &report.sentry {
        if let Some(s) = &sentry.body {
            compile("sentry.body", s)?;
        }
        if let Some(fp) = &sentry.fingerprint {
            for (i, line) in fp.0.iter().enumerate() {
                compile(&format!("sentry.fingerprint[{i}]"), line)?;
            }
        }
    }
    if let Some(s) = report.webhook.as_ref().and_then(|w| w.body.as_ref()) {
        compile("webhook.body", s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn vars(pairs: &[(&str, Value)]) -> Value {
        let map: BTreeMap<String, Value> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        Value::from(map)
    }

    fn failure(stdout: Option<&str>, stderr: Option<&str>) -> Value {
        vars(&[
            ("name", Value::from("backup")),
            ("success", Value::from(false)),
            (
                "fail_reason",
                Value::from("failsWhen=nonzeroReturn and retcode=2"),
            ),
            ("stdout", Value::from(stdout)),
            ("stderr", Value::from(stderr)),
        ])
    }

    #[test]
    fn default_subject_keeps_the_original_wording() {
        let v = failure(None, None);
        assert_eq!(
            render("s", DEFAULT_SUBJECT, &v).unwrap(),
            "Cron job 'backup' failed"
        );
        let ok = vars(&[
            ("name", Value::from("backup")),
            ("success", Value::from(true)),
        ]);
        assert_eq!(
            render("s", DEFAULT_SUBJECT, &ok).unwrap(),
            "Cron job 'backup' completed"
        );
    }

    /// The manual's default body, case by case: the reason line, both
    /// streams fenced, one stream alone, and nothing captured. (The
    /// black-box tests compare the same cases with Python's Jinja2.)
    #[test]
    fn default_body_shapes() {
        let reason = "(job failed because failsWhen=nonzeroReturn and retcode=2)\n\n";
        let both = render("b", DEFAULT_BODY, &failure(Some("out\n"), Some("err\n"))).unwrap();
        assert_eq!(
            both,
            format!("{reason}STDOUT:\n---\nout\n\n---\nSTDERR:\nerr\n\n")
        );
        let one = render("b", DEFAULT_BODY, &failure(None, Some("boom\n"))).unwrap();
        assert_eq!(one, format!("{reason}boom\n\n"));
        let none = render("b", DEFAULT_BODY, &failure(Some(""), None)).unwrap();
        assert_eq!(none, format!("{reason}(no output was captured)\n"));
        let ok = vars(&[
            ("name", Value::from("x")),
            ("success", Value::from(true)),
            ("fail_reason", Value::from(())),
            ("stdout", Value::from("hello\n")),
            ("stderr", Value::from("")),
        ]);
        assert_eq!(render("b", DEFAULT_BODY, &ok).unwrap(), "\nhello\n\n");
    }

    #[test]
    fn default_sentry_body_is_subject_newline_body() {
        let v = failure(None, None);
        assert_eq!(
            render("s", DEFAULT_SENTRY_BODY, &v).unwrap(),
            "Cron job 'backup' failed\n(job failed because failsWhen=nonzeroReturn and retcode=2)\n\n(no output was captured)\n"
        );
    }

    #[test]
    fn default_webhook_body_is_slack_json() {
        let text = render(
            "w",
            DEFAULT_WEBHOOK_BODY,
            &failure(None, Some("a \"quote\" & é\n")),
        )
        .unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            parsed["text"],
            "Cron job 'backup' failed\n(job failed because failsWhen=nonzeroReturn and retcode=2)\n\na \"quote\" & é\n\n\n"
        );
        assert!(text.is_ascii(), "{text}");
    }

    #[test]
    fn python_spellings_in_output() {
        let v = failure(None, None);
        assert_eq!(
            render("t", "{{ success }} {{ stdout }} {{ name.upper() }}", &v).unwrap(),
            "False None BACKUP"
        );
        // An attribute of a None value is empty, as in Jinja2 (the default
        // fingerprint reads environment.HOSTNAME with no environment).
        let v = vars(&[("environment", Value::from(()))]);
        assert_eq!(
            render("t", "[{{ environment.HOSTNAME }}]", &v).unwrap(),
            "[]"
        );
    }

    #[test]
    fn check_finds_syntax_errors_with_their_key() {
        let mut report = Report::default();
        report.webhook = Some(Box::new(crate::config::model::report::WebhookReport {
            body: Some("{% if x %}unclosed".into()),
            ..Default::default()
        }));
        let err = check(&report).unwrap_err();
        assert_eq!(err.key, "webhook.body");
        assert!(err.message.contains("syntax error"), "{}", err.message);
        report.webhook = None;
        report.sentry = Some(Box::new(crate::config::model::report::SentryReport {
            fingerprint: Some(crate::config::model::report::Fingerprint(vec![
                "ok".into(),
                "{{ name | nosuchfilter }}".into(),
            ])),
            ..Default::default()
        }));
        let err = check(&report).unwrap_err();
        assert_eq!(err.key, "sentry.fingerprint[1]");
    }

    #[test]
    fn defaults_compile() {
        for t in [
            DEFAULT_SUBJECT,
            DEFAULT_BODY,
            DEFAULT_SENTRY_BODY,
            DEFAULT_WEBHOOK_BODY,
        ] {
            compile("d", t).unwrap();
        }
    }
}
