//! The `report:` block shared by the `onSuccess`, `onFailure`,
//! `onPermanentFailure` and `onLate` hooks, and the hooks themselves.

use super::values::{Command, SecretSource};
use crate::config::lenient;
use crate::config::merge::{merge_as_leaf, merge_fields};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which reporters a hook delivers to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Report {
    /// Email over SMTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<Box<MailReport>>,
    /// An event sent to a Sentry project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentry: Option<Box<SentryReport>>,
    /// A local command run with the `CRONSTABLE_*` environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<Box<ShellReport>>,
    /// An HTTP request (Slack-compatible by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<Box<WebhookReport>>,
    /// End-to-end encrypted push to paired devices (needs the `push` section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<Box<PushReport>>,
    /// Windows Event Log records (a no-op elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eventlog: Option<Box<EventlogReport>>,
}
merge_fields!(Report {
    mail,
    sentry,
    shell,
    webhook,
    push,
    eventlog
});

/// The `mail` reporter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MailReport {
    /// Sender address (the key is required when `mail` is written).
    #[serde(deserialize_with = "lenient::opt_string")]
    pub from: Option<String>,
    /// Recipient address(es), comma separated (the key is required).
    #[serde(deserialize_with = "lenient::opt_string")]
    pub to: Option<String>,
    /// SMTP server host.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub smtp_host: Option<String>,
    /// SMTP server port (default 25).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_int"
    )]
    pub smtp_port: Option<i64>,
    /// Subject template (Jinja2 syntax).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub subject: Option<String>,
    /// Body template (Jinja2 syntax).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub body: Option<String>,
    /// SMTP login user name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub username: Option<String>,
    /// SMTP login password source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretSource>,
    /// Implicit TLS.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub tls: Option<bool>,
    /// STARTTLS upgrade.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub starttls: Option<bool>,
    /// Verify the server certificate (default true).
    #[serde(
        default,
        rename = "validate_certs",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub validate_certs: Option<bool>,
    /// Send the body as HTML.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub html: Option<bool>,
}
merge_fields!(MailReport {
    from,
    to,
    smtp_host,
    smtp_port,
    subject,
    body,
    username,
    password,
    tls,
    starttls,
    validate_certs,
    html
});

/// Sentry's grouping fingerprint: the one list that replaces, not
/// concatenates, when layers merge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Fingerprint(#[serde(deserialize_with = "fingerprint_items")] pub Vec<String>);
merge_as_leaf!(Fingerprint);

fn fingerprint_items<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(lenient::opt_string_list(d)?.unwrap_or_default())
}

/// The `sentry` reporter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SentryReport {
    /// DSN source; unset disables the reporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsn: Option<SecretSource>,
    /// Grouping fingerprint, one template per entry; replaces on merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// Event level (default `error`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub level: Option<String>,
    /// Extra structured context (values are kept as text, as the original
    /// reads them).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string_map"
    )]
    pub extra: Option<BTreeMap<String, String>>,
    /// Message template.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub body: Option<String>,
    /// Sentry environment name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub environment: Option<String>,
    /// Longest string sent before truncation (default 8192).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_int"
    )]
    pub max_string_length: Option<i64>,
}
merge_fields!(SentryReport {
    dsn,
    fingerprint,
    level,
    extra,
    body,
    environment,
    max_string_length
});

/// The `shell` reporter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShellReport {
    /// Shell for a string command (default `/bin/sh`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub shell: Option<String>,
    /// The command (the key is required; `null` disables the reporter).
    #[serde(deserialize_with = "super::values::required_nullable")]
    pub command: Option<Command>,
    /// Hard bound on the reporter command, seconds (default 60).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_float"
    )]
    pub timeout: Option<f64>,
}
merge_fields!(ShellReport {
    shell,
    command,
    timeout
});

/// The `webhook` reporter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookReport {
    /// URL source (a secret); unset disables the reporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<SecretSource>,
    /// HTTP method (default POST).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub method: Option<String>,
    /// Content-Type header (default application/json).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub content_type: Option<String>,
    /// Extra request headers, sent verbatim.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string_map"
    )]
    pub headers: Option<BTreeMap<String, String>>,
    /// Body template (default: Slack-compatible `{"text": ...}`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub body: Option<String>,
    /// Total request timeout, seconds (default 10).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_float"
    )]
    pub timeout: Option<f64>,
}
merge_fields!(WebhookReport {
    url,
    method,
    content_type,
    headers,
    body,
    timeout
});

/// Interruption level of a push notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PushPriority {
    /// Breaks through scheduled summaries.
    #[serde(rename = "time-sensitive")]
    TimeSensitive,
    /// Delivered quietly.
    #[serde(rename = "passive")]
    Passive,
}
merge_as_leaf!(PushPriority);

/// The `push` reporter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushReport {
    /// Opt this hook into push.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub enabled: Option<bool>,
    /// Interruption level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PushPriority>,
    /// Include the tail of the captured output.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub include_log_tail: Option<bool>,
}
merge_fields!(PushReport {
    enabled,
    priority,
    include_log_tail
});

/// The `eventlog` reporter (Windows only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventlogReport {
    /// Write Event Log records for this hook.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub enabled: Option<bool>,
    /// Event source name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub source: Option<String>,
    /// Carry a bounded output tail.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_bool"
    )]
    pub include_output: Option<bool>,
}
merge_fields!(EventlogReport {
    enabled,
    source,
    include_output
});

/// The retry ladder of `onFailure`. When the block is written, all four keys
/// are required, as in the original.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    /// Attempts after a failure; 0 disables, -1 retries forever.
    #[serde(deserialize_with = "lenient::int")]
    pub maximum_retries: i64,
    /// Seconds before the first retry.
    #[serde(deserialize_with = "lenient::float")]
    pub initial_delay: f64,
    /// Upper bound on the delay between retries.
    #[serde(deserialize_with = "lenient::float")]
    pub maximum_delay: f64,
    /// Factor applied to the delay after each retry.
    #[serde(deserialize_with = "lenient::float")]
    pub backoff_multiplier: f64,
}
merge_as_leaf!(Retry);

/// A hook that only reports (`onSuccess`, `onPermanentFailure`, `onLate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReportHook {
    /// Reporters to deliver to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
}
merge_fields!(ReportHook { report });

/// The `onFailure` hook: reporters plus the retry ladder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailureHook {
    /// Reporters to deliver to on every failed attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<Report>,
    /// Retry ladder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
}
merge_fields!(FailureHook { report, retry });
