//! The `mail` reporter: one message over SMTP per report.

use super::context::{host_name, RunContext};
use super::secret::{self, SecretError};
use super::templates::{self, TemplateError};
use crate::config::model::report::MailReport;
use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Body, Mailbox, Mailboxes};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// Default SMTP port.
pub const DEFAULT_PORT: i64 = 25;
/// Host used when `smtpHost` is not set.
pub const DEFAULT_HOST: &str = "localhost";
/// Bound on the whole SMTP conversation.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Why a mail report was not sent. `Display` is the text after
/// `mail reporter: ` in the `Problem reporting ...` log line.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// `mail.password` is configured but yields nothing.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The subject or body template does not render.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// `mail.from` is not one address.
    #[error("mail.from {text:?} is not an address: {source}")]
    From {
        /// The value as configured, trimmed.
        text: String,
        /// What the parser found wrong.
        source: lettre::address::AddressError,
    },
    /// `mail.to` is not a list of addresses.
    #[error("mail.to {text:?} is not a list of addresses: {source}")]
    To {
        /// The value as configured, trimmed.
        text: String,
        /// What the parser found wrong.
        source: lettre::address::AddressError,
    },
    /// The message could not be assembled.
    #[error("cannot build the message: {0}")]
    Build(#[source] lettre::error::Error),
    /// `mail.smtpPort` is outside 0-65535.
    #[error("mail.smtpPort {0} is not a port")]
    Port(i64),
    /// The TLS parameters could not be built.
    #[error("cannot set up TLS: {0}")]
    Tls(#[source] lettre::transport::smtp::Error),
    /// The SMTP server refused the message, or the conversation broke.
    #[error("SMTP delivery through {host}:{port} failed: {source}")]
    Delivery {
        /// The server.
        host: String,
        /// Its port.
        port: u16,
        /// The SMTP client's error.
        source: lettre::transport::smtp::Error,
    },
    /// The conversation took longer than its bound.
    #[error("SMTP delivery through {host}:{port} did not complete within {seconds} seconds")]
    Timeout {
        /// The server.
        host: String,
        /// Its port.
        port: u16,
        /// The bound, seconds.
        seconds: u64,
    },
}

/// True when both `from` and `to` are set and non-empty.
pub fn enabled(cfg: &MailReport) -> bool {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|v| !v.trim().is_empty());
    set(&cfg.from) && set(&cfg.to)
}

/// The longest the reporter can take.
pub fn deadline() -> Duration {
    TIMEOUT + Duration::from_secs(5)
}

/// Builds the message (pure: no I/O). `Ok(None)` when a success report
/// renders an empty body: such a message is not sent.
pub fn message(cfg: &MailReport, ctx: &RunContext) -> Result<Option<Message>, MailError> {
    let body_source = cfg.body.as_deref().unwrap_or(ctx.texts().body);
    let body = templates::render("mail.body", body_source, ctx.vars())?;
    if ctx.success && body.trim().is_empty() {
        return Ok(None);
    }
    let subject_source = cfg.subject.as_deref().unwrap_or(ctx.texts().subject);
    let subject = templates::render("mail.subject", subject_source, ctx.vars())?;

    let from_text = cfg.from.as_deref().unwrap_or_default().trim();
    let from: Mailbox = from_text.parse().map_err(|source| MailError::From {
        text: from_text.to_owned(),
        source,
    })?;
    let to_text = cfg.to.as_deref().unwrap_or_default().trim();
    let to: Mailboxes = to_text.parse().map_err(|source| MailError::To {
        text: to_text.to_owned(),
        source,
    })?;
    let mut builder = Message::builder()
        .from(from)
        .subject(subject.trim())
        .date_now();
    for mailbox in to {
        builder = builder.to(mailbox);
    }
    let content_type = if cfg.html == Some(true) {
        ContentType::TEXT_HTML
    } else {
        ContentType::TEXT_PLAIN
    };
    builder
        .header(content_type)
        .body(wire_body(body))
        .map(Some)
        .map_err(MailError::Build)
}

/// The body as it goes on the wire, so that the receiver decodes exactly
/// the rendered text.
///
/// The SMTP client ends the data with CRLF `.` CRLF even when the message
/// already ends with a line break, which would add an empty line to every
/// body ending in one (the default body always does). For the encodings
/// that carry lines as lines (7bit, quoted-printable) one final line break
/// is therefore left to that terminator. A base64 body encodes its final
/// newline itself, and the terminator adds nothing to what it decodes to.
fn wire_body(text: String) -> Body {
    let natural = Body::new(text.clone());
    let encoding = natural.encoding();
    if encoding == ContentTransferEncoding::Base64 {
        return natural;
    }
    match text.strip_suffix('\n') {
        Some(rest) => {
            let rest = rest.strip_suffix('\r').unwrap_or(rest);
            Body::new_with_encoding(rest.to_owned(), encoding).unwrap_or(natural)
        }
        None => natural,
    }
}

/// Sends the report.
pub async fn send(cfg: &MailReport, ctx: &RunContext) -> Result<(), MailError> {
    // The password is resolved first: a broken source skips the report
    // even when the body would be empty, as the original does.
    let password = secret::resolve(cfg.password.as_ref(), "mail.password").await?;
    let Some(message) = message(cfg, ctx)? else {
        tracing::debug!(target: "cronstable::report", "mail reporter of job {}: empty body, not sending", ctx.name);
        return Ok(());
    };
    let host = cfg
        .smtp_host
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| DEFAULT_HOST.to_owned());
    let port = cfg.smtp_port.unwrap_or(DEFAULT_PORT);
    let port = u16::try_from(port).map_err(|_| MailError::Port(port))?;
    let validate = cfg.validate_certs.unwrap_or(true);
    let tls_parameters = || {
        TlsParameters::builder(host.clone())
            .dangerous_accept_invalid_certs(!validate)
            .dangerous_accept_invalid_hostnames(!validate)
            .build()
            .map_err(MailError::Tls)
    };
    let tls = if cfg.tls == Some(true) {
        Tls::Wrapper(tls_parameters()?)
    } else if cfg.starttls == Some(true) {
        Tls::Required(tls_parameters()?)
    } else {
        Tls::None
    };
    let hello = match host_name() {
        "" => ClientId::default(),
        name => ClientId::Domain(name.to_owned()),
    };
    let mut transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host.as_str())
        .port(port)
        .tls(tls)
        .hello_name(hello)
        .timeout(Some(TIMEOUT));
    // A login happens only with both a user name and a password.
    if let (Some(user), Some(password)) =
        (cfg.username.as_ref().filter(|u| !u.is_empty()), password)
    {
        transport =
            transport.credentials(Credentials::new(user.clone(), password.expose().to_owned()));
    }
    let transport = transport.build();
    match tokio::time::timeout(TIMEOUT, transport.send(message)).await {
        Ok(Ok(_)) => {
            tracing::debug!(target: "cronstable::report", "mail reporter of job {}: sent through {host}:{port}", ctx.name);
            Ok(())
        }
        Ok(Err(source)) => Err(MailError::Delivery { host, port, source }),
        Err(_) => Err(MailError::Timeout {
            host,
            port,
            seconds: TIMEOUT.as_secs(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::{job, record};
    use crate::report::Hook;

    fn block(from: &str, to: &str) -> MailReport {
        MailReport {
            from: Some(from.into()),
            to: Some(to.into()),
            ..Default::default()
        }
    }

    fn failure() -> RunContext {
        let job = job("j", "false");
        RunContext::new(Hook::Failure, &job, &record("j", Some("why"), 1))
    }

    /// A bad sender or recipient is named by its key and its text.
    #[test]
    fn bad_addresses_are_their_own_errors() {
        let err = message(&block("not an address", "ops@example.com"), &failure()).unwrap_err();
        assert!(
            matches!(&err, MailError::From { text, .. } if text == "not an address"),
            "{err:?}"
        );
        assert!(err
            .to_string()
            .starts_with("mail.from \"not an address\" is not an address: "));
        let err = message(&block("cron@example.com", "a@@b"), &failure()).unwrap_err();
        assert!(
            matches!(&err, MailError::To { text, .. } if text == "a@@b"),
            "{err:?}"
        );
    }

    /// A template that does not render keeps the template error whole.
    #[test]
    fn a_broken_template_is_a_template_error() {
        let mut cfg = block("cron@example.com", "ops@example.com");
        cfg.subject = Some("{{ no_such_function() }}".into());
        let err = message(&cfg, &failure()).unwrap_err();
        assert!(
            matches!(&err, MailError::Template(t) if t.key == "mail.subject"),
            "{err:?}"
        );
    }

    /// The port is checked before anything is sent.
    #[test]
    fn a_port_out_of_range_is_refused() {
        let mut cfg = block("cron@example.com", "ops@example.com");
        cfg.smtp_port = Some(70_000);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let err = runtime.block_on(send(&cfg, &failure())).unwrap_err();
        assert!(matches!(err, MailError::Port(70_000)), "{err:?}");
        assert_eq!(err.to_string(), "mail.smtpPort 70000 is not a port");
    }
}
