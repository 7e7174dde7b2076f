//! The `mail` reporter: one message over SMTP per report.

use super::context::{host_name, RunContext};
use super::{secret, templates};
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
pub fn message(cfg: &MailReport, ctx: &RunContext) -> Result<Option<Message>, String> {
    let body_source = cfg.body.as_deref().unwrap_or(templates::DEFAULT_BODY);
    let body =
        templates::render("mail.body", body_source, ctx.vars()).map_err(|e| e.to_string())?;
    if ctx.success && body.trim().is_empty() {
        return Ok(None);
    }
    let subject_source = cfg.subject.as_deref().unwrap_or(templates::DEFAULT_SUBJECT);
    let subject =
        templates::render("mail.subject", subject_source, ctx.vars()).map_err(|e| e.to_string())?;

    let from_text = cfg.from.as_deref().unwrap_or_default().trim();
    let from: Mailbox = from_text
        .parse()
        .map_err(|e| format!("mail.from {from_text:?} is not an address: {e}"))?;
    let to_text = cfg.to.as_deref().unwrap_or_default().trim();
    let to: Mailboxes = to_text
        .parse()
        .map_err(|e| format!("mail.to {to_text:?} is not a list of addresses: {e}"))?;
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
        .map_err(|e| format!("cannot build the message: {e}"))
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
pub async fn send(cfg: &MailReport, ctx: &RunContext) -> Result<(), String> {
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
    let port = u16::try_from(port).map_err(|_| format!("mail.smtpPort {port} is not a port"))?;
    let validate = cfg.validate_certs.unwrap_or(true);
    let tls_parameters = || {
        TlsParameters::builder(host.clone())
            .dangerous_accept_invalid_certs(!validate)
            .dangerous_accept_invalid_hostnames(!validate)
            .build()
            .map_err(|e| format!("cannot set up TLS: {e}"))
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
        Ok(Err(e)) => Err(format!("SMTP delivery through {host}:{port} failed: {e}")),
        Err(_) => Err(format!(
            "SMTP delivery through {host}:{port} did not complete within {} seconds",
            TIMEOUT.as_secs()
        )),
    }
}
