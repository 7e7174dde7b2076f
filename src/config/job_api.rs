//! `state.jobApi` resolved and checked: the loopback endpoint jobs reach
//! their state through. Pure: the listen address is parsed here (no DNS,
//! no bind) with the original's rules and texts, so the load refuses what
//! the endpoint could not serve safely, and the endpoint binds what this
//! module decided.

use super::model::sections::{JobApi, StateConfig};

/// The largest value a job may store (`maxValueBytes`), by default.
pub const DEFAULT_MAX_VALUE_BYTES: u64 = 1_048_576;
/// The largest artifact (`maxArtifactBytes`), by default.
pub const DEFAULT_MAX_ARTIFACT_BYTES: u64 = 67_108_864;
/// A job lock's lease when the job names none (`lockTtlSeconds`).
pub const DEFAULT_LOCK_TTL_SECONDS: f64 = 30.0;

/// Where the endpoint binds and what it tells jobs to dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobApiListen {
    /// `https` when TLS is served.
    pub https: bool,
    /// The host to bind (an IP literal or `localhost`, without brackets).
    pub bind_host: String,
    /// The port to bind (0: one the OS picks).
    pub port: u16,
    /// The host jobs are told to dial, when the configured one is not a
    /// wildcard (else the bound address is advertised).
    pub advertise_host: Option<String>,
    /// The host as written, lowercased and without brackets (empty for
    /// `http://:8080`): what the loopback rule judges.
    pub written_host: String,
}

/// `state.jobApi` with its defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct JobApiSettings {
    /// Where it binds.
    pub listen: JobApiListen,
    /// `maxValueBytes` (0: no limit).
    pub max_value_bytes: u64,
    /// `maxArtifactBytes` (0: no limit).
    pub max_artifact_bytes: u64,
    /// `lockTtlSeconds`.
    pub lock_ttl_seconds: f64,
    /// `tls.cert` and `tls.key`, for an `https://` listen.
    pub tls: Option<(String, String)>,
    /// `tls.ca`, handed to jobs as `CRONSTABLE_STATE_CACERT`.
    pub ca: Option<String>,
}

impl JobApiSettings {
    /// The request body cap of the transport: room for the largest
    /// artifact or the largest value in its JSON envelope; None (no cap)
    /// when either limit is off, as in the original.
    pub fn body_limit(&self) -> Option<usize> {
        if self.max_value_bytes == 0 || self.max_artifact_bytes == 0 {
            return None;
        }
        let larger = self
            .max_artifact_bytes
            .max(self.max_value_bytes.saturating_mul(6));
        usize::try_from(larger.saturating_add(65_536)).ok()
    }
}

/// Whether the endpoint is served for `state` (a `state` section whose
/// `jobApi.enabled` is not false).
pub fn enabled(state: &StateConfig) -> bool {
    state
        .job_api
        .as_ref()
        .and_then(|api| api.enabled)
        .unwrap_or(true)
}

/// Resolves `state.jobApi` (absent: every default) or says what is wrong,
/// in the original's words. Also returns the warnings to log.
pub fn resolve(api: Option<&JobApi>) -> Result<(JobApiSettings, Vec<String>), String> {
    let default = JobApi::default();
    let api = api.unwrap_or(&default);
    let lock_ttl = api.lock_ttl_seconds.unwrap_or(DEFAULT_LOCK_TTL_SECONDS);
    if !(lock_ttl.is_finite() && lock_ttl >= 5.0) {
        return Err("state.jobApi.lockTtlSeconds must be >= 5 and finite".into());
    }
    let max_value = api
        .max_value_bytes
        .unwrap_or(DEFAULT_MAX_VALUE_BYTES as i64);
    if max_value < 0 {
        return Err("state.jobApi.maxValueBytes must be >= 0".into());
    }
    let max_artifact = api
        .max_artifact_bytes
        .unwrap_or(DEFAULT_MAX_ARTIFACT_BYTES as i64);
    if max_artifact < 0 {
        return Err("state.jobApi.maxArtifactBytes must be >= 0".into());
    }
    let tls = api.tls.clone().unwrap_or_default();
    let nonempty = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
    let (cert, key, ca) = (nonempty(&tls.cert), nonempty(&tls.key), nonempty(&tls.ca));
    let listen_text = api.listen.clone().filter(|s| !s.is_empty());
    let mut warnings = Vec::new();
    let listen = match &listen_text {
        None => JobApiListen {
            https: false,
            bind_host: "127.0.0.1".into(),
            port: 0,
            advertise_host: None,
            written_host: "127.0.0.1".into(),
        },
        Some(text) => parse_listen(text)?,
    };
    let is_https = listen_text
        .as_deref()
        .is_some_and(|t| t.starts_with("https://"));
    if cert.is_some() != key.is_some() {
        return Err(format!(
            "state.jobApi.tls.cert and state.jobApi.tls.key must be set together (a server \
             certificate needs its private key); got cert={}, key={}",
            py_bool(cert.is_some()),
            py_bool(key.is_some())
        ));
    }
    if (cert.is_some() || ca.is_some()) && !is_https {
        return Err(
            "state.jobApi.tls is configured but state.jobApi.listen is not an https:// \
                    URL, so the TLS material would be ignored and per-run bearer tokens sent in \
                    cleartext; use an https:// listen address or remove state.jobApi.tls"
                .into(),
        );
    }
    if is_https && cert.is_none() {
        return Err(
            "state.jobApi.listen is https:// but state.jobApi.tls.cert and \
                    state.jobApi.tls.key are not set, so the endpoint has no certificate to serve"
                .into(),
        );
    }
    if is_https && is_wildcard(&listen.written_host) {
        return Err(
            "state.jobApi.listen cannot bind a wildcard host over https:// : jobs dial \
                    the address they are given, and no certificate covers an unspecified \
                    address; name the interface explicitly, e.g. https://10.0.0.5:9000"
                .into(),
        );
    }
    let allow_off_host = api.allow_non_loopback_bind.unwrap_or(false);
    if let Some(text) = &listen_text {
        if allow_off_host {
            if !is_https && !is_loopback(&listen.written_host) {
                warnings.push(format!(
                    "state.jobApi.listen binds {} off-host without TLS, so per-run bearer \
                     tokens and staged job secrets cross the network in cleartext; set an \
                     https:// listen address with state.jobApi.tls, or terminate TLS in front \
                     of it",
                    py_repr(text)
                ));
            }
        } else if !is_loopback(&listen.written_host) {
            return Err(format!(
                "state.jobApi.listen host {} is not loopback; this endpoint serves per-run \
                 bearer tokens and staged job secrets, so binding it beyond this host needs \
                 state.jobApi.allowNonLoopbackBind: true",
                py_repr(&listen.written_host)
            ));
        }
    }
    Ok((
        JobApiSettings {
            listen,
            max_value_bytes: max_value.unsigned_abs(),
            max_artifact_bytes: max_artifact.unsigned_abs(),
            lock_ttl_seconds: lock_ttl,
            tls: cert.zip(key),
            ca,
        },
        warnings,
    ))
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn py_repr(s: &str) -> String {
    crate::pyfmt::repr_str(s)
}

/// Parses a `listen` value: a bare `host:port`, or an `http://` or
/// `https://` URL (no DNS; the host is kept as written, lowercased).
pub fn parse_listen(text: &str) -> Result<JobApiListen, String> {
    if text.contains("://") && !(text.starts_with("http://") || text.starts_with("https://")) {
        return Err(
            "state.jobApi.listen must be an http:// or https:// URL or a bare \
                    host:port (the job CLI reaches the endpoint over TCP only)"
                .into(),
        );
    }
    let url = if text.contains("://") {
        text.to_owned()
    } else {
        format!("http://{text}")
    };
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", &url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let invalid = || {
        // Credentials in the URL are not echoed back.
        let shown = match authority.rfind('@') {
            Some(at) => text.replacen(&authority[..at], "***", 1),
            None => text.to_owned(),
        };
        format!(
            "state.jobApi.listen is not a valid URL: {}",
            py_repr(&shown)
        )
    };
    let (host, port_text) = if let Some(inner) = hostport.strip_prefix('[') {
        let Some((host, after)) = inner.split_once(']') else {
            return Err(invalid());
        };
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(invalid)?),
        };
        (host.to_owned(), port)
    } else if hostport.contains(']') {
        return Err(invalid());
    } else {
        match hostport.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (hostport.to_owned(), None),
        }
    };
    let bad_port = || {
        format!(
            "state.jobApi.listen has an invalid port in {}: the port must be an integer in \
             0-65535 (0 or omitted binds an OS-assigned ephemeral port)",
            py_repr(text)
        )
    };
    let port = match port_text {
        None | Some("") => 0,
        Some(p) => {
            if !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad_port());
            }
            p.parse::<u16>().map_err(|_| bad_port())?
        }
    };
    let host = host.to_ascii_lowercase();
    let advertise_host = (!host.is_empty() && !is_wildcard(&host)).then(|| host.clone());
    Ok(JobApiListen {
        https: scheme == "https",
        written_host: host.clone(),
        bind_host: if host.is_empty() {
            "127.0.0.1".into()
        } else {
            host
        },
        port,
        advertise_host,
    })
}

/// Whether `host` is an unspecified address (`0.0.0.0`, `::`).
pub fn is_wildcard(host: &str) -> bool {
    host.is_empty() || ip_literal(host).is_some_and(|ip| ip.is_unspecified())
}

/// Whether `host` is `localhost` or a loopback IP literal.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost" || ip_literal(host).is_some_and(|ip| ip.is_loopback())
}

/// An IP literal, with the short and hex IPv4 forms the C library's
/// `inet_aton` accepts (`127.1`, `0x7f.0.0.1`), never a DNS lookup.
fn ip_literal(host: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Some(ip);
    }
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        let value = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            u32::from_str_radix(hex, 16).ok()?
        } else if part.len() > 1 && part.starts_with('0') {
            u32::from_str_radix(&part[1..], 8).ok()?
        } else {
            part.parse::<u32>().ok()?
        };
        numbers.push(value);
    }
    let last = *numbers.last()?;
    let head = &numbers[..numbers.len() - 1];
    if head.iter().any(|n| *n > 255) {
        return None;
    }
    let room = 8 * (4 - head.len() as u32);
    if room < 32 && last >= (1u32 << room) {
        return None;
    }
    let mut value: u32 = 0;
    for (i, n) in head.iter().enumerate() {
        value |= n << (24 - 8 * i as u32);
    }
    value |= last;
    Some(std::net::IpAddr::V4(std::net::Ipv4Addr::from(value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::sections::JobApiTls;

    fn api(listen: &str) -> JobApi {
        JobApi {
            listen: Some(listen.into()),
            ..JobApi::default()
        }
    }

    #[test]
    fn the_defaults_bind_an_ephemeral_loopback_port() {
        let (s, warnings) = resolve(None).expect("defaults");
        assert!(warnings.is_empty());
        assert_eq!(s.listen.bind_host, "127.0.0.1");
        assert_eq!(s.listen.port, 0);
        assert!(!s.listen.https);
        assert_eq!(s.max_value_bytes, 1_048_576);
        assert_eq!(s.max_artifact_bytes, 67_108_864);
        assert_eq!(s.lock_ttl_seconds, 30.0);
        assert_eq!(s.body_limit(), Some(67_174_400));
    }

    #[test]
    fn limits_and_the_lock_ttl_are_checked_with_the_originals_texts() {
        let mut a = JobApi {
            lock_ttl_seconds: Some(4.0),
            ..JobApi::default()
        };
        assert_eq!(
            resolve(Some(&a)).unwrap_err(),
            "state.jobApi.lockTtlSeconds must be >= 5 and finite"
        );
        a.lock_ttl_seconds = Some(f64::INFINITY);
        assert!(resolve(Some(&a)).is_err());
        a.lock_ttl_seconds = None;
        a.max_value_bytes = Some(-1);
        assert_eq!(
            resolve(Some(&a)).unwrap_err(),
            "state.jobApi.maxValueBytes must be >= 0"
        );
        a.max_value_bytes = Some(0);
        a.max_artifact_bytes = Some(-5);
        assert_eq!(
            resolve(Some(&a)).unwrap_err(),
            "state.jobApi.maxArtifactBytes must be >= 0"
        );
        a.max_artifact_bytes = Some(10);
        let (s, _) = resolve(Some(&a)).expect("0 means no limit");
        assert_eq!(s.body_limit(), None);
    }

    #[test]
    fn listen_forms() {
        let l = parse_listen("127.0.0.1:9000").unwrap();
        assert_eq!(
            (l.bind_host.as_str(), l.port, l.https),
            ("127.0.0.1", 9000, false)
        );
        assert_eq!(l.advertise_host.as_deref(), Some("127.0.0.1"));
        let l = parse_listen("https://[::1]:8443").unwrap();
        assert_eq!((l.bind_host.as_str(), l.port, l.https), ("::1", 8443, true));
        let l = parse_listen("http://LOCALHOST").unwrap();
        assert_eq!((l.bind_host.as_str(), l.port), ("localhost", 0));
        let l = parse_listen("http://0.0.0.0:7000").unwrap();
        assert_eq!(l.advertise_host, None);
        assert_eq!(
            parse_listen("unix:///x").unwrap_err(),
            "state.jobApi.listen must be an http:// or https:// URL or a bare host:port (the job \
             CLI reaches the endpoint over TCP only)"
        );
        assert_eq!(
            parse_listen("http://[::1:80").unwrap_err(),
            "state.jobApi.listen is not a valid URL: 'http://[::1:80'"
        );
        assert_eq!(
            parse_listen("127.0.0.1:99999").unwrap_err(),
            "state.jobApi.listen has an invalid port in '127.0.0.1:99999': the port must be an \
             integer in 0-65535 (0 or omitted binds an OS-assigned ephemeral port)"
        );
        assert!(parse_listen("127.0.0.1:x").is_err());
    }

    #[test]
    fn only_loopback_binds_without_the_opt_in() {
        for ok in [
            "127.0.0.1:1",
            "localhost:1",
            "[::1]:1",
            "127.1:1",
            "0x7f.0.0.1:1",
        ] {
            assert!(resolve(Some(&api(ok))).is_ok(), "{ok}");
        }
        assert_eq!(
            resolve(Some(&api("10.0.0.5:9000"))).unwrap_err(),
            "state.jobApi.listen host '10.0.0.5' is not loopback; this endpoint serves per-run \
             bearer tokens and staged job secrets, so binding it beyond this host needs \
             state.jobApi.allowNonLoopbackBind: true"
        );
        assert!(resolve(Some(&api("http://:8080"))).is_err());
        assert!(resolve(Some(&api("db.example:1"))).is_err(), "no DNS");
        let mut open = api("http://0.0.0.0:9000");
        open.allow_non_loopback_bind = Some(true);
        let (_, warnings) = resolve(Some(&open)).expect("opted in");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0]
            .starts_with("state.jobApi.listen binds 'http://0.0.0.0:9000' off-host without TLS"));
    }

    #[test]
    fn tls_is_all_or_nothing_and_only_over_https() {
        let with = |listen: &str, cert: Option<&str>, key: Option<&str>, ca: Option<&str>| JobApi {
            listen: Some(listen.into()),
            tls: Some(JobApiTls {
                cert: cert.map(Into::into),
                key: key.map(Into::into),
                ca: ca.map(Into::into),
            }),
            ..JobApi::default()
        };
        assert_eq!(
            resolve(Some(&with("https://127.0.0.1:1", Some("c"), None, None))).unwrap_err(),
            "state.jobApi.tls.cert and state.jobApi.tls.key must be set together (a server \
             certificate needs its private key); got cert=True, key=False"
        );
        assert!(resolve(Some(&with(
            "http://127.0.0.1:1",
            Some("c"),
            Some("k"),
            None
        )))
        .unwrap_err()
        .starts_with("state.jobApi.tls is configured but state.jobApi.listen is not an https://"));
        assert!(
            resolve(Some(&with("https://127.0.0.1:1", None, None, None)))
                .unwrap_err()
                .starts_with("state.jobApi.listen is https:// but state.jobApi.tls.cert")
        );
        let mut wild = with("https://0.0.0.0:1", Some("c"), Some("k"), None);
        wild.allow_non_loopback_bind = Some(true);
        assert!(resolve(Some(&wild))
            .unwrap_err()
            .starts_with("state.jobApi.listen cannot bind a wildcard host over https://"));
        let (s, _) = resolve(Some(&with(
            "https://127.0.0.1:1",
            Some("c"),
            Some("k"),
            Some("ca"),
        )))
        .expect("complete");
        assert_eq!(s.tls, Some(("c".into(), "k".into())));
        assert_eq!(s.ca.as_deref(), Some("ca"));
    }
}
