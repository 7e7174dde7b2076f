//! The `webhook` reporter: one HTTP request per report, its body a
//! template (Slack's `{"text": ...}` by default).

use super::context::RunContext;
use super::{http, secret, templates};
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
pub async fn send(cfg: &WebhookReport, ctx: &RunContext) -> Result<(), String> {
    let Some(url) = secret::resolve(cfg.url.as_ref(), "webhook.url").await? else {
        return Ok(());
    };
    let url = url.expose();
    let source = cfg
        .body
        .as_deref()
        .unwrap_or(templates::DEFAULT_WEBHOOK_BODY);
    let body = templates::render("webhook.body", source, ctx.vars()).map_err(|e| e.to_string())?;

    let parsed =
        reqwest::Url::parse(url).map_err(|e| format!("webhook.url is not a valid URL ({e})"))?;
    let method_name = cfg
        .method
        .as_deref()
        .unwrap_or(DEFAULT_METHOD)
        .to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method_name.as_bytes())
        .map_err(|_| format!("webhook.method {method_name:?} is not an HTTP method"))?;
    let mut headers = HeaderMap::new();
    let content_type = cfg.content_type.as_deref().unwrap_or(DEFAULT_CONTENT_TYPE);
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_str(content_type).map_err(|_| {
            format!("webhook.contentType {content_type:?} is not a valid header value")
        })?,
    );
    // User headers go over Content-Type (names are case-insensitive, so a
    // `content-type` entry replaces it).
    for (name, value) in cfg.headers.iter().flatten() {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("webhook.headers: {name:?} is not a valid header name"))?;
        // Header values can be credentials: name the header, not the value.
        let value = HeaderValue::from_str(value).map_err(|_| {
            format!("webhook.headers: the value of {name:?} is not a valid header value")
        })?;
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
    Err(format!(
        "the server answered HTTP {}: {}",
        status.as_u16(),
        http::clip(&text, LOGGED_RESPONSE)
    ))
}
