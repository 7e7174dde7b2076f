//! The `mcp` section resolved and checked: its defaults applied (what the
//! MCP endpoint serves is decided here, once per load) and the
//! fail-closed rule that needs the `web` section beside it. Pure: the
//! listen addresses are judged as written (no DNS, no bind).

use super::model::sections::{McpConfig, McpToolset};
use super::model::WebConfig;

/// `maxRows` when the section does not set it.
pub const DEFAULT_MAX_ROWS: usize = 200;
/// `maxBodyBytes` when the section does not set it (1 MiB).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1_048_576;

/// The `mcp` section with its defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// Mutating tools are stripped (default true).
    pub read_only: bool,
    /// The tool groups served, each once, in the order written (default
    /// `[observe]`).
    pub toolsets: Vec<McpToolset>,
    /// Browser origins allowed on `/mcp` (exact match).
    pub allowed_origins: Vec<String>,
    /// Resources are served (default true).
    pub resources: bool,
    /// Prompts are served (default true).
    pub prompts: bool,
    /// The operator's `instructions` text, when set and not empty.
    pub instructions: Option<String>,
    /// The ceiling on any list tool's `limit`.
    pub max_rows: usize,
    /// The largest request body taken.
    pub max_body_bytes: usize,
}

impl McpSettings {
    /// The settings of an enabled section; `None` when the server is off
    /// (no section, or `enabled` not true). Bounds were checked at load
    /// ([`check`]); a value out of range here falls back to the default.
    pub fn of(config: Option<&McpConfig>) -> Option<McpSettings> {
        let config = config.filter(|c| c.enabled == Some(true))?;
        let mut toolsets = Vec::new();
        for set in config
            .toolsets
            .clone()
            .unwrap_or_else(|| vec![McpToolset::Observe])
        {
            if !toolsets.contains(&set) {
                toolsets.push(set);
            }
        }
        let positive = |value: Option<i64>, default: usize| {
            value
                .and_then(|v| usize::try_from(v).ok())
                .filter(|v| *v >= 1)
                .unwrap_or(default)
        };
        Some(McpSettings {
            read_only: config.read_only.unwrap_or(true),
            toolsets,
            allowed_origins: config.allowed_origins.clone().unwrap_or_default(),
            resources: config.resources.unwrap_or(true),
            prompts: config.prompts.unwrap_or(true),
            instructions: config.instructions.clone().filter(|t| !t.is_empty()),
            max_rows: positive(config.max_rows, DEFAULT_MAX_ROWS),
            max_body_bytes: positive(config.max_body_bytes, DEFAULT_MAX_BODY_BYTES),
        })
    }
}

/// Checks the `mcp` section against the `web` section it is served on:
/// the bounds, a `web` section with a listener, and the fail-closed rule
/// (no token on a routable listener is refused unless
/// `allowUnauthenticated`). `Ok` carries the warnings (the original's
/// texts).
pub fn check(mcp: &McpConfig, web: Option<&WebConfig>) -> Result<Vec<String>, String> {
    if mcp.max_rows.is_some_and(|v| v < 1) {
        return Err("mcp.maxRows must be >= 1".into());
    }
    if mcp.max_body_bytes.is_some_and(|v| v < 1) {
        return Err("mcp.maxBodyBytes must be >= 1".into());
    }
    if mcp.enabled != Some(true) {
        return Ok(Vec::new());
    }
    let Some(web) = web.filter(|w| !w.listen.is_empty()) else {
        return Err(
            "mcp.enabled requires a `web` section with at least one `listen` address: \
                    the MCP endpoint (POST /mcp) is served on the web listeners"
                .into(),
        );
    };
    let mut warnings = Vec::new();
    let acts = mcp
        .toolsets
        .as_ref()
        .is_some_and(|sets| sets.contains(&McpToolset::Act));
    if acts && mcp.read_only.unwrap_or(true) {
        warnings.push(
            "mcp.toolsets includes 'act' but mcp.readOnly is true; mutating tools stay \
             suppressed until readOnly is set false"
                .to_owned(),
        );
    }
    if mcp.allow_unauthenticated == Some(true) {
        return Ok(warnings);
    }
    let open = open_routable_listeners(web);
    if !open.is_empty() {
        return Err(format!(
            "mcp.enabled is set but no web.authToken/authTokens is set, and the web API listens \
             on non-loopback address(es) {}: /mcp would be served without authentication (with \
             no token the web app installs no auth middleware at all). Set web.authToken or a \
             web.authTokens entry, restrict web.listen to loopback/unix-socket addresses, set \
             web.tls.clientCa so the listener authenticates callers by certificate, or set \
             mcp.allowUnauthenticated: true when the endpoint is protected by other means (an \
             mTLS-terminating proxy, a network policy).",
            open.join(", ")
        ));
    }
    Ok(warnings)
}

/// The listeners a stranger could reach with no credential: none when a
/// token is configured; else every listener that is neither loopback nor
/// a unix socket, except `https://` ones when `tls.clientCa` makes them
/// authenticate callers by certificate (plain `https://` still counts:
/// encryption is not caller authentication).
pub fn open_routable_listeners(web: &WebConfig) -> Vec<String> {
    let has_token = web.auth_token.as_ref().is_some_and(|t| t.is_configured())
        || web.auth_tokens.as_ref().is_some_and(|t| !t.is_empty());
    if has_token {
        return Vec::new();
    }
    let mtls = web
        .tls
        .as_ref()
        .is_some_and(|t| t.client_ca.as_deref().is_some_and(|ca| !ca.is_empty()));
    web.listen
        .iter()
        .filter(|url| {
            let certified = mtls && url.starts_with("https://");
            !(is_local_listener(url) || certified)
        })
        .cloned()
        .collect()
}

/// Whether a listen address is reachable from this host only: a unix
/// socket, `localhost`, or a loopback IP literal (127.0.0.0/8, `::1`).
pub fn is_local_listener(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if scheme.eq_ignore_ascii_case("unix") {
        return true;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split_once(']').map_or(bracketed, |(h, _)| h)
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    let host = host.to_ascii_lowercase();
    if host == "localhost" {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(yaml: &str) -> McpConfig {
        serde_yaml::from_str(yaml).expect("an mcp section")
    }

    fn web(yaml: &str) -> WebConfig {
        serde_yaml::from_str(yaml).expect("a web section")
    }

    #[test]
    fn settings_apply_the_defaults_and_dedupe_toolsets() {
        assert_eq!(McpSettings::of(None), None);
        assert_eq!(McpSettings::of(Some(&mcp("enabled: false"))), None);
        assert_eq!(McpSettings::of(Some(&mcp("readOnly: false"))), None);
        let on = McpSettings::of(Some(&mcp("enabled: true"))).expect("enabled");
        assert_eq!(
            on,
            McpSettings {
                read_only: true,
                toolsets: vec![McpToolset::Observe],
                allowed_origins: vec![],
                resources: true,
                prompts: true,
                instructions: None,
                max_rows: 200,
                max_body_bytes: 1_048_576,
            }
        );
        let set = McpSettings::of(Some(&mcp(
            "enabled: true\nreadOnly: false\ntoolsets: [act, observe, act]\n\
             allowedOrigins: ['https://a.example']\nresources: false\nprompts: false\n\
             instructions: be careful\nmaxRows: 5\nmaxBodyBytes: 100\n",
        )))
        .expect("enabled");
        assert!(!set.read_only);
        assert_eq!(set.toolsets, vec![McpToolset::Act, McpToolset::Observe]);
        assert_eq!(set.allowed_origins, vec!["https://a.example".to_owned()]);
        assert!(!set.resources && !set.prompts);
        assert_eq!(set.instructions.as_deref(), Some("be careful"));
        assert_eq!((set.max_rows, set.max_body_bytes), (5, 100));
        // An empty instructions text is none at all.
        let blank = McpSettings::of(Some(&mcp("enabled: true\ninstructions: ''\n")));
        assert_eq!(blank.and_then(|s| s.instructions), None);
    }

    #[test]
    fn local_listeners() {
        for url in [
            "http://127.0.0.1:8080",
            "http://127.9.9.9:1",
            "http://localhost:8080",
            "http://LOCALHOST:1",
            "http://[::1]:8080",
            "https://127.0.0.1:8443",
            "unix:///run/cronstable.sock",
        ] {
            assert!(is_local_listener(url), "{url}");
        }
        for url in [
            "http://0.0.0.0:8080",
            "http://[::]:8080",
            "http://10.0.0.5:8080",
            "http://example.com:8080",
            "https://0.0.0.0:8443",
            "http://127.0.0.1.example.com:1",
            "nonsense",
        ] {
            assert!(!is_local_listener(url), "{url}");
        }
    }

    #[test]
    fn the_gate_fails_closed_on_routable_tokenless_listeners() {
        let on = mcp("enabled: true");
        // Loopback and sockets need no token.
        let local = web("listen: ['http://127.0.0.1:8080', 'unix:///tmp/c.sock']");
        assert_eq!(check(&on, Some(&local)), Ok(vec![]));
        // A routable listener without a token is refused, naming it.
        let open = web("listen: ['http://127.0.0.1:8080', 'http://0.0.0.0:9090']");
        let err = check(&on, Some(&open)).expect_err("refused");
        assert!(
            err.starts_with(
                "mcp.enabled is set but no web.authToken/authTokens is set, and the web API \
                 listens on non-loopback address(es) http://0.0.0.0:9090: /mcp would be served \
                 without authentication"
            ),
            "{err}"
        );
        // ...unless a token, the override, or mutual TLS covers it.
        let token = web("listen: ['http://0.0.0.0:9090']\nauthToken: {value: t}");
        assert_eq!(check(&on, Some(&token)), Ok(vec![]));
        let scoped = web("listen: ['http://0.0.0.0:9090']\nauthTokens: [{value: t}]");
        assert_eq!(check(&on, Some(&scoped)), Ok(vec![]));
        let waived = mcp("enabled: true\nallowUnauthenticated: true");
        assert_eq!(check(&waived, Some(&open)), Ok(vec![]));
        let mtls = web(
            "listen: ['https://0.0.0.0:8443']\ntls: {cert: c.pem, key: k.pem, clientCa: ca.pem}",
        );
        assert_eq!(check(&on, Some(&mtls)), Ok(vec![]));
        // Plain https is encryption, not caller authentication.
        let tls = web("listen: ['https://0.0.0.0:8443']\ntls: {cert: c.pem, key: k.pem}");
        assert!(check(&on, Some(&tls)).is_err());
        // mTLS exempts the https listener only, not a plain one beside it.
        let mixed = web("listen: ['https://0.0.0.0:8443', 'http://0.0.0.0:8080']\n\
             tls: {cert: c.pem, key: k.pem, clientCa: ca.pem}");
        let err = check(&on, Some(&mixed)).expect_err("the http listener is open");
        assert!(err.contains("address(es) http://0.0.0.0:8080:"), "{err}");
    }

    #[test]
    fn the_other_rules() {
        let on = mcp("enabled: true");
        assert_eq!(
            check(&on, None),
            Err(
                "mcp.enabled requires a `web` section with at least one `listen` address: the \
                 MCP endpoint (POST /mcp) is served on the web listeners"
                    .into()
            )
        );
        // The bounds hold even while the server is off.
        assert_eq!(
            check(&mcp("maxRows: 0"), None),
            Err("mcp.maxRows must be >= 1".into())
        );
        assert_eq!(
            check(&mcp("maxBodyBytes: -1"), None),
            Err("mcp.maxBodyBytes must be >= 1".into())
        );
        assert_eq!(check(&mcp("enabled: false"), None), Ok(vec![]));
        // `act` under readOnly loads with a warning.
        let local = web("listen: ['http://127.0.0.1:8080']");
        let warned = check(
            &mcp("enabled: true\ntoolsets: [observe, act]"),
            Some(&local),
        );
        assert_eq!(
            warned,
            Ok(vec![
                "mcp.toolsets includes 'act' but mcp.readOnly is true; mutating tools \
                     stay suppressed until readOnly is set false"
                    .to_owned()
            ])
        );
        let writable = mcp("enabled: true\nreadOnly: false\ntoolsets: [observe, act]");
        assert_eq!(check(&writable, Some(&local)), Ok(vec![]));
    }
}
