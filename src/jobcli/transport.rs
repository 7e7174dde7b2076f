//! The HTTP/1.1 transport to the job API (the original's `_http` over
//! `webclient.send`): the endpoint from `CRONSTABLE_STATE_URL` and
//! `CRONSTABLE_STATE_TOKEN`, a bearer token, no proxy, no redirects, a
//! 30-second deadline, and for https the CA of `CRONSTABLE_STATE_CACERT`
//! as the only trust anchor (the built-in roots without it). Failures read
//! as the original's (`cannot reach ...`, `TLS verification failed ...`).

use super::model::{
    Body, CliError, Method, Reply, Request, Transport, ENV_CACERT, ENV_TOKEN, ENV_URL,
};
use super::verbs::os_error_text;
use super::wire;
use crate::pyjson::{Dumps, PyString};
use std::error::Error as StdError;
use std::time::Duration;

/// The longest socket timeout the original uses (about 24.9 days).
const LONGEST_TIMEOUT: f64 = 2_147_483.0;

/// What the job's environment says about the endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// `CRONSTABLE_STATE_URL`.
    pub url: Option<PyString>,
    /// `CRONSTABLE_STATE_TOKEN`.
    pub token: Option<PyString>,
    /// `CRONSTABLE_STATE_CACERT`.
    pub cacert: Option<PyString>,
}

impl Endpoint {
    /// Reads the three variables.
    pub fn from_env() -> Endpoint {
        let var = |name: &str| std::env::var_os(name).map(|v| PyString::from_os(&v));
        Endpoint {
            url: var(ENV_URL),
            token: var(ENV_TOKEN),
            cacert: var(ENV_CACERT),
        }
    }

    /// The URL and token, both set and non-empty, or the original's
    /// message (which names the URL variable either way).
    pub fn require(&self) -> Result<(&PyString, &PyString), CliError> {
        match (&self.url, &self.token) {
            (Some(url), Some(token)) if !url.is_empty() && !token.is_empty() => Ok((url, token)),
            _ => Err(CliError(format!(
                "job state connection is unavailable: {ENV_URL} is not set. Run this command \
                 inside a cronstable job and configure a `state` section with \
                 state.jobApi.enabled set to true."
            ))),
        }
    }
}

/// Sends requests with reqwest on a current-thread runtime.
pub struct HttpTransport<'rt> {
    runtime: &'rt tokio::runtime::Runtime,
    endpoint: Endpoint,
    client: Option<reqwest::Client>,
}

impl<'rt> HttpTransport<'rt> {
    /// A transport for `endpoint`, running on `runtime`.
    pub fn new(runtime: &'rt tokio::runtime::Runtime, endpoint: Endpoint) -> HttpTransport<'rt> {
        HttpTransport {
            runtime,
            endpoint,
            client: None,
        }
    }

    /// The client, built on first use (`lock run` sends two requests and
    /// reads the CA once).
    fn client(&mut self) -> Result<reqwest::Client, CliError> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .http1_only()
            .user_agent(concat!("cronstable/", env!("CARGO_PKG_VERSION")));
        if let Some(cacert) = self.endpoint.cacert.as_ref().filter(|c| !c.is_empty()) {
            // Only this CA: nothing in a job's environment can fall back
            // to (or switch off) verification of the channel that carries
            // the job's secrets.
            builder = builder.tls_built_in_root_certs(false);
            for cert in load_ca(cacert)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .build()
            .map_err(|e| CliError(format!("cannot set up the HTTP client: {e}")))?;
        self.client = Some(client.clone());
        Ok(client)
    }
}

/// The certificates of the CA file, or the original's message.
fn load_ca(path: &PyString) -> Result<Vec<reqwest::Certificate>, CliError> {
    let fail = |detail: String| {
        CliError(format!(
            "cannot load the CA bundle {ENV_CACERT} points at ({}): {detail}",
            path.backslashreplace()
        ))
    };
    let file = crate::platform::os_string_from_bytes(path.to_os_bytes());
    let pem = std::fs::read(&file).map_err(|e| fail(os_error_text(&e, None)))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| fail(e.to_string()))?;
    if certs.is_empty() {
        return Err(fail("no PEM certificate found in the file".to_owned()));
    }
    Ok(certs)
}

impl Transport for HttpTransport<'_> {
    fn send(&mut self, request: Request) -> Result<Reply, CliError> {
        let (url, token) = self.endpoint.require()?;
        let (url, token) = (url.clone(), token.clone());
        let base = url.backslashreplace();
        let what = format!("the cronstable state endpoint at {base}");
        let full = wire::request_url(&base, request.path, &request.query)?;
        let client = self.client()?;
        let authorization = wire::authorization(&token, &what)?;
        let target = wire::target(&full, &what)?;
        let timeout = Duration::from_secs_f64(request.timeout.clamp(0.001, LONGEST_TIMEOUT));
        let method = match request.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
        };
        let header = reqwest::header::HeaderValue::from_bytes(&authorization).map_err(|_| {
            CliError(format!(
                "cannot send a request to {what}: the Authorization header holds a character \
                 that HTTP does not allow"
            ))
        })?;
        let mut builder = client
            .request(method, target.url())
            .timeout(timeout)
            .header(reqwest::header::AUTHORIZATION, header);
        builder = match request.body {
            Body::Empty => builder,
            Body::Json(value) => builder
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(value.dumps(Dumps::SPACED)),
            Body::Raw(bytes) => builder
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .body(bytes),
        };
        let (status, location, body) = self.runtime.block_on(async {
            let response = builder.send().await.map_err(|e| describe(&e, &what))?;
            let status = response.status().as_u16();
            // http.client reads header values as Latin-1.
            let location = response.headers().get(reqwest::header::LOCATION).map(|v| {
                v.as_bytes()
                    .iter()
                    .map(|&b| char::from(b))
                    .collect::<String>()
            });
            let body = response
                .bytes()
                .await
                .map_err(|e| describe_body(&e, &what))?;
            Ok::<_, CliError>((status, location, body.to_vec()))
        })?;
        if let Some(err) = wire::redirect_error(&what, status, &full, location.as_deref()) {
            return Err(err);
        }
        Ok(Reply { status, body })
    }
}

/// Every error in `err`'s chain, the error inside an `io::Error`
/// included (its `source()` skips it).
fn chain<'a>(err: &'a (dyn StdError + 'static)) -> Vec<&'a (dyn StdError + 'static)> {
    let mut out = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        out.push(e);
        next = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    out
}

/// A failed request as the original words it.
fn describe(err: &reqwest::Error, what: &str) -> CliError {
    let errors = chain(err);
    if let Some(tls) = errors
        .iter()
        .find_map(|e| e.downcast_ref::<rustls::Error>())
    {
        return CliError(format!(
            "TLS verification failed for {what}: {tls} (does {ENV_CACERT} point at the CA that \
             signed the daemon's certificate?)"
        ));
    }
    if err.is_timeout() {
        return CliError(format!("cannot reach {what}: timed out"));
    }
    if let Some(io) = errors
        .iter()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .find(|io| io.raw_os_error().is_some())
    {
        return CliError(format!("cannot reach {what}: {}", os_error_text(io, None)));
    }
    let texts: Vec<String> = errors.iter().skip(1).map(|e| e.to_string()).collect();
    if let Some(dns) = texts
        .iter()
        .find_map(|t| t.strip_prefix("failed to lookup address information: "))
    {
        return CliError(format!("cannot reach {what}: {}", gai_error(dns)));
    }
    if err.is_connect() {
        let detail = texts.last().cloned().unwrap_or_else(|| err.to_string());
        return CliError(format!("cannot reach {what}: {detail}"));
    }
    // The connection was made but what came back was not an HTTP reply
    // (closed early, or not HTTP at all).
    let detail = if texts
        .iter()
        .any(|t| t.contains("connection closed before message completed"))
    {
        "RemoteDisconnected('Remote end closed connection without response')".to_owned()
    } else {
        texts.last().cloned().unwrap_or_else(|| err.to_string())
    };
    CliError(format!("no HTTP reply from {what}: {detail}"))
}

/// A reply whose body could not be read to its end.
fn describe_body(err: &reqwest::Error, what: &str) -> CliError {
    if err.is_timeout() {
        return CliError(format!("cannot reach {what}: timed out"));
    }
    let detail = chain(err)
        .last()
        .map_or_else(|| err.to_string(), |e| e.to_string());
    CliError(format!("no HTTP reply from {what}: {detail}"))
}

/// A resolver failure as Python's `socket.gaierror` prints it
/// (`[Errno -2] Name or service not known`).
fn gai_error(text: &str) -> String {
    let code = match text {
        "Name or service not known" => Some(-2),
        "Temporary failure in name resolution" => Some(-3),
        "Non-recoverable failure in name resolution" => Some(-4),
        "No address associated with hostname" => Some(-5),
        "Servname not supported for ai_socktype" => Some(-8),
        _ => None,
    };
    match code {
        Some(code) => format!("[Errno {code}] {text}"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_needs_both_variables() {
        let message = "job state connection is unavailable: CRONSTABLE_STATE_URL is not set. Run \
                       this command inside a cronstable job and configure a `state` section \
                       with state.jobApi.enabled set to true.";
        let cases = [
            (None, None),
            (Some(""), Some("t")),
            (Some("http://h:1"), None),
            (Some("http://h:1"), Some("")),
        ];
        for (url, token) in cases {
            let endpoint = Endpoint {
                url: url.map(PyString::from),
                token: token.map(PyString::from),
                cacert: None,
            };
            assert_eq!(endpoint.require(), Err(CliError(message.to_owned())));
        }
        let endpoint = Endpoint {
            url: Some("http://h:1".into()),
            token: Some("t".into()),
            cacert: None,
        };
        assert!(endpoint.require().is_ok());
    }

    #[test]
    fn the_chain_reaches_errors_nested_in_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let outer = std::io::Error::other(inner);
        let errors = chain(&outer);
        assert_eq!(errors.len(), 3);
        assert!(errors
            .iter()
            .any(|e| e.downcast_ref::<rustls::Error>().is_some()));
    }

    #[test]
    fn resolver_errors_read_like_gaierror() {
        assert_eq!(
            gai_error("Name or service not known"),
            "[Errno -2] Name or service not known"
        );
        assert_eq!(
            gai_error("Temporary failure in name resolution"),
            "[Errno -3] Temporary failure in name resolution"
        );
        assert_eq!(gai_error("something else"), "something else");
    }

    #[test]
    fn an_unloadable_ca_names_the_variable_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let path = PyString::from(missing.to_string_lossy().into_owned());
        let err = load_ca(&path).err().unwrap();
        assert_eq!(
            err.0,
            format!(
                "cannot load the CA bundle CRONSTABLE_STATE_CACERT points at ({}): [Errno 2] No \
                 such file or directory",
                missing.display()
            )
        );
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let err = load_ca(&PyString::from(junk.to_string_lossy().into_owned()))
            .err()
            .unwrap();
        assert!(
            err.0.starts_with(&format!(
                "cannot load the CA bundle CRONSTABLE_STATE_CACERT points at ({}): ",
                junk.display()
            )),
            "{}",
            err.0
        );
    }
}
