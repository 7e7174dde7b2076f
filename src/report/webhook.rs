//! The `webhook` reporter: one HTTP request per report, its body a
//! template (Slack's `{"text": ...}` by default).

use super::context::RunContext;
use super::http::{self, HttpError};
use super::secret::{self, SecretError};
use super::templates::{self, TemplateError};
use crate::config::model::report::WebhookReport;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use std::time::Duration;

/// Default total request timeout, seconds.
pub const DEFAULT_TIMEOUT: f64 = 10.0;
/// Default method.
pub const DEFAULT_METHOD: &str = "POST";
/// Default `Content-Type`.
pub const DEFAULT_CONTENT_TYPE: &str = "application/json";
/// How much of an error response is logged.
const LOGGED_RESPONSE: usize = 1024;

/// Why a webhook report was not delivered. `Display` is the text after
/// `webhook reporter: ` in the `Problem reporting ...` log line; no
/// variant quotes the URL or a header's value.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// `webhook.url` is configured but yields nothing.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The body template does not render.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The URL does not parse (the parser's reason, not the URL).
    #[error("webhook.url is not a valid URL ({0})")]
    Url(String),
    /// `webhook.method` is not a method name.
    #[error("webhook.method {0:?} is not an HTTP method")]
    Method(String),
    /// `webhook.contentType` cannot be a header value.
    #[error("webhook.contentType {0:?} is not a valid header value")]
    ContentType(String),
    /// A `webhook.headers` key cannot be a header name.
    #[error("webhook.headers: {0:?} is not a valid header name")]
    HeaderName(String),
    /// The value under this `webhook.headers` key cannot be a header value.
    #[error("webhook.headers: the value of {0:?} is not a valid header value")]
    HeaderValue(String),
    /// The request got no answer.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The receiver answered 4xx or 5xx.
    #[error("the server answered HTTP {status}: {body}")]
    Rejected {
        /// The status code.
        status: u16,
        /// Up to 1 KiB of the answer, the URL scrubbed out.
        body: String,
    },
}

/// True when a URL source is configured.
pub fn enabled(cfg: &WebhookReport) -> bool {
    secret::configured(cfg.url.as_ref())
}

/// The longest the reporter can take.
pub fn deadline(cfg: &WebhookReport) -> Duration {
    timeout(cfg) + Duration::from_secs(5)
}

fn timeout(cfg: &WebhookReport) -> Duration {
    let secs = cfg.timeout.filter(|t| *t > 0.0).unwrap_or(DEFAULT_TIMEOUT);
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::from_secs(10))
}

/// Sends the request. A 4xx/5xx answer is an error carrying up to 1 KiB of
/// the response, with the URL scrubbed from it.
pub async fn send(cfg: &WebhookReport, ctx: &RunContext) -> Result<(), WebhookError> {
    let Some(url) = secret::resolve(cfg.url.as_ref(), "webhook.url").await? else {
        return Ok(());
    };
    let url = url.expose();
    let source = cfg.body.as_deref().unwrap_or(ctx.texts().webhook_body);
    let body = templates::render("webhook.body", source, ctx.vars())?;

    let parsed = reqwest::Url::parse(url).map_err(|e| WebhookError::Url(e.to_string()))?;
    let method_name = cfg
        .method
        .as_deref()
        .unwrap_or(DEFAULT_METHOD)
        .to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method_name.as_bytes())
        .map_err(|_| WebhookError::Method(method_name.clone()))?;
    let mut headers = HeaderMap::new();
    let content_type = cfg.content_type.as_deref().unwrap_or(DEFAULT_CONTENT_TYPE);
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_str(content_type)
            .map_err(|_| WebhookError::ContentType(content_type.to_owned()))?,
    );
    // User headers go over Content-Type (names are case-insensitive, so a
    // `content-type` entry replaces it).
    for (name, value) in cfg.headers.iter().flatten() {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WebhookError::HeaderName(name.clone()))?;
        // Header values can be credentials: name the header, not the value.
        let value =
            HeaderValue::from_str(value).map_err(|_| WebhookError::HeaderValue(name.clone()))?;
        headers.insert(header, value);
    }

    let limit = timeout(cfg);
    let response = http::client()?
        .request(method, parsed)
        .headers(headers)
        .body(body)
        .timeout(limit)
        .send()
        .await
        .map_err(|e| http::describe_error(e, url, limit))?;
    let status = response.status();
    if status.is_success() {
        tracing::debug!(target: "cronstable::report", "webhook reporter of job {}: HTTP {}", ctx.name, status.as_u16());
        return Ok(());
    }
    let text = response.text().await.unwrap_or_default();
    let text = http::scrub(&text, url, &[]);
    Err(WebhookError::Rejected {
        status: status.as_u16(),
        body: http::clip(&text, LOGGED_RESPONSE).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::SecretSource;
    use crate::report::test_support::{job, record};
    use crate::report::Hook;

    /// Sends `cfg` with a URL nothing listens on; every error below is
    /// found before a connection is tried.
    fn send_blocking(mut cfg: WebhookReport) -> Result<(), WebhookError> {
        cfg.url = Some(SecretSource {
            value: Some("http://127.0.0.1:9/hook".into()),
            ..Default::default()
        });
        let job = job("j", "false");
        let ctx = RunContext::new(Hook::Failure, &job, &record("j", Some("why"), 1));
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(send(&cfg, &ctx))
    }

    /// A bad method or header is named by its key; a header's value,
    /// which can be a credential, is never quoted.
    #[test]
    fn request_parts_are_checked_by_key() {
        let err = send_blocking(WebhookReport {
            method: Some("GE T".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            matches!(&err, WebhookError::Method(m) if m == "GE T"),
            "{err:?}"
        );
        let err = send_blocking(WebhookReport {
            headers: Some([("X-Token".to_owned(), "s3cret\n".to_owned())].into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            matches!(&err, WebhookError::HeaderValue(name) if name == "X-Token"),
            "{err:?}"
        );
        assert!(!err.to_string().contains("s3cret"), "{err}");
        let err = send_blocking(WebhookReport {
            body: Some("{{ no_such_function() }}".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(matches!(err, WebhookError::Template(_)), "{err:?}");
    }
}
