//! The `sentry` reporter: one event per report, posted as an envelope to
//! the project the DSN names (Sentry's ingestion protocol, version 7).
//!
//! The event carries what the original's Python SDK call sends: the
//! rendered `body` as the message, the rendered fingerprint, the level
//! (`error` by default), the environment, and as extra data `job`,
//! `exit_code`, `command`, `shell` and `success`, with the block's `extra`
//! map over them (its values typed as written: numbers, booleans, text). `server_name` is the host, and the job name is also set
//! as the `job` tag so events can be filtered by job.

use super::context::RunContext;
use super::http::{self, HttpError};
use super::secret::{self, SecretError};
use super::templates::{self, TemplateError};
use crate::config::model::report::SentryReport;
use crate::config::model::Command;
use serde_json::{json, Map, Value as Json};
use std::time::Duration;

/// Default longest string sent, characters.
pub const DEFAULT_MAX_STRING_LENGTH: i64 = 8192;
/// Default level.
pub const DEFAULT_LEVEL: &str = "error";
/// Bound on one delivery.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How much of an error response is logged.
const LOGGED_RESPONSE: usize = 1024;

/// True when a DSN source is configured.
pub fn enabled(cfg: &SentryReport) -> bool {
    secret::configured(cfg.dsn.as_ref())
}

/// The longest the reporter can take.
pub fn deadline() -> Duration {
    TIMEOUT + Duration::from_secs(5)
}

/// Why a DSN cannot be used. `Display` never quotes the DSN: it holds the
/// project's key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DsnError {
    /// Not a URL (the parser's reason).
    #[error("sentry.dsn is not a valid DSN ({0})")]
    Invalid(String),
    /// No user part, so no key to authenticate with.
    #[error("sentry.dsn has no public key")]
    NoPublicKey,
    /// No host to send to.
    #[error("sentry.dsn has no host")]
    NoHost,
    /// No last path segment naming the project.
    #[error("sentry.dsn has no project id")]
    NoProject,
}

/// Why a Sentry report was not delivered. `Display` is the text after
/// `sentry reporter: ` in the `Problem reporting ...` log line.
#[derive(Debug, thiserror::Error)]
pub enum SentryError {
    /// `sentry.dsn` is configured but yields nothing.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The DSN cannot be used.
    #[error(transparent)]
    Dsn(#[from] DsnError),
    /// The body or a fingerprint template does not render.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The request got no answer.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// Sentry answered 4xx or 5xx.
    #[error("Sentry answered HTTP {status}: {body}")]
    Rejected {
        /// The status code.
        status: u16,
        /// Up to 1 KiB of the answer, URL and keys scrubbed out.
        body: String,
    },
}

/// Where events for one DSN go, and how they authenticate.
#[derive(Debug, Clone, PartialEq)]
pub struct Dsn {
    /// The envelope endpoint, `.../api/<project>/envelope/`.
    pub envelope_url: String,
    /// The project's public key.
    pub public_key: String,
    /// The legacy secret key, when the DSN has one.
    pub secret_key: Option<String>,
}

impl Dsn {
    /// Parses `scheme://key[:secret]@host[:port][/path]/project`. Errors
    /// never quote the DSN.
    pub fn parse(text: &str) -> Result<Dsn, DsnError> {
        let url = reqwest::Url::parse(text).map_err(|e| DsnError::Invalid(e.to_string()))?;
        if url.username().is_empty() {
            return Err(DsnError::NoPublicKey);
        }
        let host = url.host_str().ok_or(DsnError::NoHost)?;
        let path = url.path().trim_end_matches('/');
        let (prefix, project) = path.rsplit_once('/').unwrap_or(("", path));
        if project.is_empty() {
            return Err(DsnError::NoProject);
        }
        let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
        Ok(Dsn {
            envelope_url: format!(
                "{}://{host}{port}{prefix}/api/{project}/envelope/",
                url.scheme()
            ),
            public_key: url.username().to_owned(),
            secret_key: url.password().map(str::to_owned),
        })
    }

    fn auth_header(&self) -> String {
        let mut auth = format!(
            "Sentry sentry_version=7, sentry_client=cronstable/{}, sentry_key={}",
            env!("CARGO_PKG_VERSION"),
            self.public_key
        );
        if let Some(secret) = &self.secret_key {
            auth.push_str(&format!(", sentry_secret={secret}"));
        }
        auth
    }
}

/// Builds the event for `ctx` (pure: no I/O).
pub fn event(cfg: &SentryReport, ctx: &RunContext, event_id: &str) -> Result<Json, TemplateError> {
    let source = cfg.body.as_deref().unwrap_or(ctx.texts().sentry_body);
    let message = templates::render("sentry.body", source, ctx.vars())?;
    let fingerprint: Vec<String> = match &cfg.fingerprint {
        Some(lines) => lines
            .0
            .iter()
            .enumerate()
            .map(|(i, line)| {
                templates::render(&format!("sentry.fingerprint[{i}]"), line, ctx.vars())
            })
            .collect::<Result<_, _>>(),
        None => ctx
            .texts()
            .fingerprint
            .iter()
            .map(|line| templates::render("sentry.fingerprint", line, ctx.vars()))
            .collect::<Result<_, _>>(),
    }?;
    let max = cfg
        .max_string_length
        .filter(|m| *m > 0)
        .unwrap_or(DEFAULT_MAX_STRING_LENGTH);
    let max = usize::try_from(max).unwrap_or(usize::MAX);

    let mut extra = Map::new();
    extra.insert("job".into(), json!(ctx.name));
    extra.insert("exit_code".into(), json!(ctx.retcode));
    extra.insert(
        "command".into(),
        match &ctx.command {
            Command::Shell(s) => json!(s),
            Command::Argv(args) => json!(args),
        },
    );
    extra.insert("shell".into(), json!(ctx.shell));
    extra.insert("success".into(), json!(ctx.success));
    // Each value keeps the type it was written with (the Reporting page's
    // str/int/bool), so Sentry can filter on numbers and booleans.
    for (k, v) in cfg.extra.iter().flatten() {
        extra.insert(k.clone(), v.to_json());
    }
    for value in extra.values_mut() {
        trim_strings(value, max);
    }

    let environment = cfg
        .environment
        .clone()
        .filter(|e| !e.is_empty())
        .or_else(|| {
            std::env::var("SENTRY_ENVIRONMENT")
                .ok()
                .filter(|e| !e.is_empty())
        })
        .unwrap_or_else(|| "production".into());
    let mut event = json!({
        "event_id": event_id,
        "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "platform": "other",
        "level": cfg.level.clone().unwrap_or_else(|| DEFAULT_LEVEL.into()),
        "server_name": ctx.host,
        "environment": environment,
        "message": trim(&message, max),
        "fingerprint": fingerprint,
        "extra": extra,
        "tags": {"job": ctx.name},
        "sdk": {"name": "cronstable", "version": env!("CARGO_PKG_VERSION")},
    });
    if let Some(release) = std::env::var("SENTRY_RELEASE")
        .ok()
        .filter(|r| !r.is_empty())
    {
        event["release"] = json!(release);
    }
    Ok(event)
}

/// Sentry's rule for long strings: cut to `max` characters, the last three
/// of them `...`.
fn trim(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let keep = max.saturating_sub(3);
    let mut out: String = s.chars().take(keep).collect();
    out.push_str("...");
    out
}

fn trim_strings(value: &mut Json, max: usize) {
    match value {
        Json::String(s) => *s = trim(s, max),
        Json::Array(items) => items.iter_mut().for_each(|v| trim_strings(v, max)),
        Json::Object(map) => map.values_mut().for_each(|v| trim_strings(v, max)),
        _ => {}
    }
}

/// The envelope body: a header line, an item header line, the event.
pub fn envelope(event: &Json, event_id: &str) -> String {
    let payload = event.to_string();
    let header = json!({
        "event_id": event_id,
        "sent_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    });
    let item =
        json!({"type": "event", "length": payload.len(), "content_type": "application/json"});
    format!("{header}\n{item}\n{payload}\n")
}

/// A random 32-hex-digit event id.
fn event_id() -> String {
    let mut bytes = [0u8; 16];
    let random = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if random.is_err() {
        // No /dev/urandom (a bare chroot): time and pid are unique enough
        // for an event id, which only has to be unique per project.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos ^ (u128::from(std::process::id()) << 96)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Resolves the DSN and posts the event.
pub async fn send(cfg: &SentryReport, ctx: &RunContext) -> Result<(), SentryError> {
    let Some(dsn_text) = secret::resolve(cfg.dsn.as_ref(), "sentry.dsn").await? else {
        return Ok(());
    };
    let dsn = Dsn::parse(dsn_text.expose())?;
    let id = event_id();
    let event = event(cfg, ctx, &id)?;
    tracing::debug!(target: "cronstable::report", "sentry reporter of job {}: event {id}, fingerprint {}", ctx.name, event["fingerprint"]);
    let body = envelope(&event, &id);
    let response = http::client()?
        .post(&dsn.envelope_url)
        .header("X-Sentry-Auth", dsn.auth_header())
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-sentry-envelope",
        )
        .body(body)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| http::describe_error(e, &dsn.envelope_url, TIMEOUT))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let text = response.text().await.unwrap_or_default();
    let mut secrets = vec![dsn.public_key.as_str()];
    secrets.extend(dsn.secret_key.as_deref());
    let text = http::scrub(&text, &dsn.envelope_url, &secrets);
    Err(SentryError::Rejected {
        status: status.as_u16(),
        body: http::clip(&text, LOGGED_RESPONSE).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsn_forms() {
        let d = Dsn::parse("https://abc@o1.ingest.sentry.io/42").unwrap();
        assert_eq!(
            d.envelope_url,
            "https://o1.ingest.sentry.io/api/42/envelope/"
        );
        assert_eq!(d.public_key, "abc");
        let d = Dsn::parse("http://k:s@127.0.0.1:9000/sub/path/7").unwrap();
        assert_eq!(
            d.envelope_url,
            "http://127.0.0.1:9000/sub/path/api/7/envelope/"
        );
        assert_eq!(d.secret_key.as_deref(), Some("s"));
        let err = Dsn::parse("http://127.0.0.1/7").unwrap_err();
        assert_eq!(err, DsnError::NoPublicKey);
        assert!(matches!(Dsn::parse("not a dsn"), Err(DsnError::Invalid(_))));
        assert_eq!(
            Dsn::parse("https://key@o1.ingest.sentry.io/"),
            Err(DsnError::NoProject)
        );
        // The parser's reason is quoted, never the DSN with its key.
        let err = Dsn::parse("https://k3y@[::1/7").unwrap_err();
        assert!(matches!(&err, DsnError::Invalid(_)), "{err:?}");
        assert!(!err.to_string().contains("k3y"), "{err}");
    }

    #[test]
    fn trimming_follows_sentry() {
        assert_eq!(trim("abcdef", 5), "ab...");
        assert_eq!(trim("abc", 5), "abc");
    }

    /// `extra` values reach the event with the type they were written
    /// with; a quoted number stays a string, an empty value is `""`.
    #[test]
    fn extra_values_keep_their_yaml_type() {
        let block: SentryReport = serde_yaml::from_str(
            "extra: {count: 3, ratio: 0.5, on: true, dc: dc1, quoted: '7', empty: , big: 1.0e300}",
        )
        .expect("the block parses");
        let job = crate::report::test_support::job("j", "true");
        let record = crate::report::test_support::record("j", Some("why"), 1);
        let ctx = RunContext::new(crate::report::Hook::Failure, &job, &record);
        let event = event(&block, &ctx, "00").expect("the event renders");
        let extra = &event["extra"];
        assert_eq!(extra["count"], json!(3));
        assert_eq!(extra["ratio"], json!(0.5));
        assert_eq!(extra["on"], json!(true));
        assert_eq!(extra["dc"], json!("dc1"));
        assert_eq!(extra["quoted"], json!("7"));
        assert_eq!(extra["empty"], json!(""));
        assert_eq!(extra["big"], json!(1.0e300));
        // The fixed context is still there, typed as before.
        assert_eq!(extra["exit_code"], json!(1));
        assert_eq!(extra["success"], json!(false));
        // A list is not a valid value, as in the original's schema.
        assert!(serde_yaml::from_str::<SentryReport>("extra: {a: [1, 2]}").is_err());
    }

    #[test]
    fn envelope_lengths_match() {
        let e = json!({"message": "é"});
        let text = envelope(&e, "00");
        let lines: Vec<&str> = text.lines().collect();
        let item: Json = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(item["length"], lines[2].len());
    }
}
