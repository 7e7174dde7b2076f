//! The `report:` block shared by the `onSuccess`, `onFailure`,
//! `onPermanentFailure` and `onLate` hooks, and the hooks themselves.

use super::values::{Command, SecretSource};
use crate::compat::lenient;
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
    /// Extra structured context; each value keeps its YAML type (see
    /// [`ExtraValue`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<BTreeMap<String, ExtraValue>>,
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

/// One value of a Sentry `extra` map: a string, an integer or a boolean,
/// as the Reporting page's type column has it, plus floats. The event
/// carries it with the type it was written with (`shard: 3` is the JSON
/// number 3, `"3"` the string), so Sentry can filter and sort on it.
///
/// It serializes as its text, the way the original's schema reads every
/// value: the job-set id hashes the serialized configuration and must not
/// change with this typing.
#[derive(Debug, Clone, PartialEq)]
pub enum ExtraValue {
    /// A string (an empty value is the empty string, as in the original).
    Text(String),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
}

impl ExtraValue {
    /// The value for the event's JSON. A float JSON cannot hold (`.nan`,
    /// `.inf`) goes as its text rather than as `null`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            ExtraValue::Text(s) => serde_json::Value::from(s.as_str()),
            ExtraValue::Int(i) => serde_json::Value::from(*i),
            ExtraValue::Bool(b) => serde_json::Value::from(*b),
            ExtraValue::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or_else(|| serde_json::Value::from(self.text())),
        }
    }

    /// The value as text, as the original's schema reads it.
    pub fn text(&self) -> String {
        match self {
            ExtraValue::Text(s) => s.clone(),
            ExtraValue::Int(i) => i.to_string(),
            ExtraValue::Bool(b) => b.to_string(),
            // The spelling the lenient string reader gives a float (so the
            // text, and the job-set id, are what they were before typing).
            ExtraValue::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 => {
                format!("{f:.1}")
            }
            ExtraValue::Float(f) => f.to_string(),
        }
    }
}

impl Serialize for ExtraValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for ExtraValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ExtraValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string, a number or a boolean")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Text(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Text(v))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Bool(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExtraValue, E> {
                // Beyond i64 only as a float would lose digits: keep the text.
                Ok(i64::try_from(v)
                    .map(ExtraValue::Int)
                    .unwrap_or_else(|_| ExtraValue::Text(v.to_string())))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Float(v))
            }
            // `key:` with nothing after it: the original's schema reads an
            // empty string.
            fn visit_unit<E: serde::de::Error>(self) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Text(String::new()))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<ExtraValue, E> {
                Ok(ExtraValue::Text(String::new()))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for ExtraValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExtraValue".into()
    }
    fn json_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "integer", "number", "boolean", "null"]
        })
    }
}

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
