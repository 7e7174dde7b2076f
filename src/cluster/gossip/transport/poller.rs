//! The client side: one bounded `GET /peer` against a peer.
//!
//! Every poll is bounded by the connect timeout (TCP and TLS) and a
//! whole-request deadline that covers reading the body, so a peer that
//! accepts and never answers, or dribbles its answer, costs one timeout and
//! never wedges the caller. Redirects are not followed (a peer never has a
//! reason to send one, and following it would leave the mutual-TLS
//! boundary), proxies from the environment are not used, and the body is
//! capped before and after gzip.

use super::wire::{self, GunzipError};
use super::{PollOutcome, TlsMaterial, TransportError, MAX_PEER_ETAG_LEN, MAX_PEER_RESPONSE_BYTES};
use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an idle kept-alive connection to a peer is reused; shorter than
/// the listener's idle timeout, so a reused connection is never one the
/// peer is closing.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// The poller's time bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollTimeouts {
    /// TCP connect plus the TLS handshake.
    pub connect: Duration,
    /// The whole request, from connecting to the last body byte.
    pub request: Duration,
}

/// Polls peers' `/peer` with this node's client certificate. One poller
/// serves every peer (it keeps one idle connection per peer for reuse).
pub struct PeerPoller {
    tls: Arc<TlsMaterial>,
    timeouts: PollTimeouts,
    /// The HTTP client and the TLS generation it was built from.
    client: Mutex<(u64, reqwest::Client)>,
}

impl std::fmt::Debug for PeerPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerPoller")
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl PeerPoller {
    /// A poller presenting `tls`'s certificate and trusting only its CA.
    pub fn new(
        tls: Arc<TlsMaterial>,
        timeouts: PollTimeouts,
    ) -> Result<PeerPoller, TransportError> {
        let (generation, config) = tls.client_config();
        let client = build_client(&config, timeouts)?;
        Ok(PeerPoller {
            tls,
            timeouts,
            client: Mutex::new((generation, client)),
        })
    }

    /// Polls `https://<host>/peer` once. `host` is `host:port` as
    /// configured (an IPv6 address in brackets); the peer's certificate
    /// must name that host. `if_none_match` is the ETag of the body the
    /// caller holds for this peer: an unchanged peer answers
    /// [`PollOutcome::NotModified`].
    pub async fn poll(&self, host: &str, if_none_match: Option<&str>) -> PollOutcome {
        let client = match self.client() {
            Ok(client) => client,
            Err(err) => return PollOutcome::Unreachable(err.to_string()),
        };
        let url = match reqwest::Url::parse(&format!("https://{host}/peer")) {
            Ok(url) if url.host().is_some() => url,
            Ok(_) => return PollOutcome::Unreachable(format!("bad peer address {host}")),
            Err(err) => return PollOutcome::Unreachable(format!("bad peer address {host}: {err}")),
        };
        // A tag we could not send as a header is as good as none.
        let if_none_match = if_none_match.filter(|t| wire::is_strong_etag(t));
        let mut request = client
            .get(url)
            .header(reqwest::header::ACCEPT_ENCODING, "gzip");
        if let Some(tag) = if_none_match {
            request = request.header(reqwest::header::IF_NONE_MATCH, tag);
        }
        let exchange = async {
            let response = match request.send().await {
                Ok(response) => response,
                Err(err) => return classify(host, &err),
            };
            read_response(host, response, if_none_match.is_some()).await
        };
        // reqwest applies the same deadline; this one also covers anything
        // between its pieces.
        match tokio::time::timeout(self.timeouts.request, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => PollOutcome::Unreachable(format!(
                "timed out polling {host} after {}",
                seconds(self.timeouts.request)
            )),
        }
    }

    /// The client for this poll, rebuilt when the TLS material changed
    /// (its pooled connections were made with the old certificates).
    fn client(&self) -> Result<reqwest::Client, TransportError> {
        let (generation, config) = self.tls.client_config();
        let mut slot = self
            .client
            .lock()
            // Replaced whole under the lock: a poisoned value is coherent.
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.0 != generation {
            *slot = (generation, build_client(&config, self.timeouts)?);
        }
        Ok(slot.1.clone())
    }
}

fn build_client(
    config: &Arc<rustls::ClientConfig>,
    timeouts: PollTimeouts,
) -> Result<reqwest::Client, TransportError> {
    reqwest::Client::builder()
        .use_preconfigured_tls(rustls::ClientConfig::clone(config))
        .connect_timeout(timeouts.connect)
        .timeout(timeouts.request)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .http1_only()
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(1)
        .user_agent(concat!("cronstable/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(TransportError::HttpClient)
}

async fn read_response(
    host: &str,
    mut response: reqwest::Response,
    conditional: bool,
) -> PollOutcome {
    let status = response.status().as_u16();
    if status == 304 {
        if conditional {
            return PollOutcome::NotModified;
        }
        // A 304 answers a conditional request and we sent none: there is
        // no body of ours it could refer to.
        return PollOutcome::Invalid("unsolicited 304 to an unconditional /peer poll".to_owned());
    }
    if status != 200 {
        return PollOutcome::Invalid(format!("unexpected HTTP status {status} from /peer"));
    }
    let oversized = || {
        PollOutcome::Invalid(format!(
            "oversized /peer response (> {MAX_PEER_RESPONSE_BYTES} bytes)"
        ))
    };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_PEER_RESPONSE_BYTES as u64)
    {
        return oversized();
    }
    let etag = response
        .headers()
        .get(reqwest::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .filter(|t| t.len() <= MAX_PEER_ETAG_LEN && wire::is_strong_etag(t))
        .map(str::to_owned);
    let encoding = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase());
    let mut raw = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if raw.len() + chunk.len() > MAX_PEER_RESPONSE_BYTES {
                    return oversized();
                }
                raw.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(err) => return classify(host, &err),
        }
    }
    let bytes = match encoding.as_deref() {
        None | Some("identity") => raw,
        Some("gzip") | Some("x-gzip") => match wire::gunzip_capped(&raw, MAX_PEER_RESPONSE_BYTES) {
            Ok(bytes) => bytes,
            Err(GunzipError::TooLarge) => return oversized(),
            Err(GunzipError::Bad(why)) => {
                return PollOutcome::Invalid(format!("bad gzip in /peer response: {why}"))
            }
        },
        Some(other) => {
            let other: String = other.chars().take(32).collect();
            return PollOutcome::Invalid(format!(
                "unsupported Content-Encoding {other:?} in /peer response"
            ));
        }
    };
    PollOutcome::Body { bytes, etag }
}

/// Sorts a failed exchange: any TLS error (the peer's certificate, or the
/// peer refusing ours) is `Untrusted`; everything else that kept us from an
/// answer is `Unreachable`.
fn classify(host: &str, err: &reqwest::Error) -> PollOutcome {
    if let Some(tls) = find_tls_error(err) {
        return PollOutcome::Untrusted(format!(
            "TLS/certificate verification failed for {host}: {tls}"
        ));
    }
    if err.is_timeout() {
        return PollOutcome::Unreachable(format!("timed out polling {host}"));
    }
    PollOutcome::Unreachable(format!(
        "Cannot connect to host {host}: {}",
        chain_text(err)
    ))
}

/// The rustls error somewhere in `err`'s chain. An `io::Error` wrapping
/// another error reports that error's source rather than the error itself
/// (and connectors nest them: an `io::Error` around an `io::Error` around
/// the rustls error), so the wrapped errors are looked into explicitly.
fn find_tls_error<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut pending: Vec<&'a (dyn StdError + 'static)> = vec![err];
    // Chains are short; the bound only guards against a pathological one.
    let mut budget = 64;
    while let Some(e) = pending.pop() {
        budget -= 1;
        if budget == 0 {
            break;
        }
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if let Some(inner) = io.get_ref() {
                pending.push(inner);
            }
        }
        if let Some(source) = e.source() {
            pending.push(source);
        }
    }
    None
}

/// The error and its causes, innermost last, without repeats.
fn chain_text(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(err);
    while let Some(e) = current {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}
