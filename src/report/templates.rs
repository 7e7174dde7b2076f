//! Report templates: the default texts, and the engine's render and compile
//! entry points re-exported (the engine itself is `crate::jinja`, shared with
//! the config loader's compile check).
//!
//! The default subject and body are interface texts: they are the
//! templates the original's Reporting page prints under "Default
//! templates", kept byte for byte (whitespace control, blank lines and
//! the final newline included), because mail filters and chat parsers
//! match on the text they produce. Where the original's source differs
//! from its manual (its body starts with one more newline), the manual
//! wins; docs/reporting.md lists the difference.

pub use crate::jinja::{render, TemplateError};

/// The load-time check of a template (what the config loader runs on every
/// report template), re-exported beside [`render`] so a caller outside the
/// crate (the `template_render` fuzz target) can compile and render as the
/// daemon does.
pub use crate::jinja::compile;

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

macro_rules! late_subject {
    () => {
        "Cron job '{{name}}' is overdue ({{sla_check}})"
    };
}

macro_rules! late_body {
    () => {
        r#"
SLA check: {{sla_check}}
Threshold: {{threshold_seconds}} seconds
Observed: {{observed_seconds}} seconds
{% if last_success_at -%}
Last success: {{last_success_at}}
{% else -%}
Last success: (none recorded)
{% endif %}
"#
    };
}

/// Default `onLate` mail subject: `Cron job '<name>' is overdue (<check>)`.
pub const LATE_SUBJECT: &str = late_subject!();

/// Default `onLate` mail body: the check, its threshold, the observed
/// seconds and the last success (or `(none recorded)`).
pub const LATE_BODY: &str = late_body!();

/// Default `onLate` webhook body: the late subject and body as Slack's
/// `{"text": ...}`.
pub const LATE_WEBHOOK_BODY: &str = concat!(
    "{\"text\": {% filter tojson %}",
    late_subject!(),
    "\n",
    late_body!(),
    "{% endfilter %}}"
);

/// Default `onLate` Sentry fingerprint: breaches group as one issue per
/// job, apart from its run failures.
pub const LATE_FINGERPRINT: [&str; 3] = ["cronstable", "sla", "{{ name }}"];

macro_rules! event_subject {
    () => {
        "cronstable {{ event }}: {{ subject }}"
    };
}

macro_rules! event_body {
    () => {
        "{{ message }}\n"
    };
}

/// Default `notify` mail subject: `cronstable <event>: <subject>`.
pub const EVENT_SUBJECT: &str = event_subject!();

/// Default `notify` mail body: the event's message.
pub const EVENT_BODY: &str = event_body!();

/// Default `notify` Sentry message: the subject, a newline, the body.
pub const EVENT_SENTRY_BODY: &str = concat!(event_subject!(), "\n", event_body!());

/// Default `notify` webhook body: the subject and body as `{"text": ...}`.
pub const EVENT_WEBHOOK_BODY: &str = concat!(
    "{\"text\": {% filter tojson %}",
    event_subject!(),
    "\n",
    event_body!(),
    "{% endfilter %}}"
);

/// Default `notify` Sentry fingerprint: one issue per event and node.
pub const EVENT_FINGERPRINT: [&str; 3] = ["cronstable", "{{ event }}", "{{ name }}"];

/// The templates a reporter falls back on when its block leaves one unset;
/// they differ by what is reported (a run, or an SLA breach).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultTexts {
    /// Mail subject.
    pub subject: &'static str,
    /// Mail body.
    pub body: &'static str,
    /// Sentry message.
    pub sentry_body: &'static str,
    /// Sentry fingerprint lines.
    pub fingerprint: &'static [&'static str],
    /// Webhook body.
    pub webhook_body: &'static str,
}

/// The defaults of the run hooks (`onSuccess`, `onFailure`,
/// `onPermanentFailure`).
pub const RUN_TEXTS: DefaultTexts = DefaultTexts {
    subject: DEFAULT_SUBJECT,
    body: DEFAULT_BODY,
    sentry_body: DEFAULT_SENTRY_BODY,
    fingerprint: &DEFAULT_FINGERPRINT,
    webhook_body: DEFAULT_WEBHOOK_BODY,
};

/// The defaults of the `notify` block.
pub const EVENT_TEXTS: DefaultTexts = DefaultTexts {
    subject: EVENT_SUBJECT,
    body: EVENT_BODY,
    sentry_body: EVENT_SENTRY_BODY,
    fingerprint: &EVENT_FINGERPRINT,
    webhook_body: EVENT_WEBHOOK_BODY,
};

/// The defaults of `onLate`. The Sentry message keeps the run wording, as
/// the original's does; only its fingerprint is the breach's own.
pub const LATE_TEXTS: DefaultTexts = DefaultTexts {
    subject: LATE_SUBJECT,
    body: LATE_BODY,
    sentry_body: DEFAULT_SENTRY_BODY,
    fingerprint: &LATE_FINGERPRINT,
    webhook_body: LATE_WEBHOOK_BODY,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jinja::compile;
    use minijinja::value::Value;
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
