//! The `web:` section: listeners, auth and the metrics endpoint.

use super::values::{bool_or_map, SecretSource};
use crate::compat::lenient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a bearer token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Read-only routes.
    View,
    /// Start, cancel, pause and resume (implies view).
    Control,
    /// Approval gates (implies view).
    Approve,
}

/// A scope granted to anonymous callers: only `view` exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnonymousScope {
    /// Read-only routes.
    View,
}

/// One named bearer token with scopes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthToken {
    /// Inline token.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub value: Option<String>,
    /// File holding the token.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub from_file: Option<String>,
    /// Environment variable holding the token.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub from_env_var: Option<String>,
    /// Granted scopes.
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
    /// Name used in logs.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub label: Option<String>,
}

/// Listener certificate material.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebTls {
    /// Certificate chain served by `https://` listeners.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub cert: Option<String>,
    /// Private key for `cert`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub key: Option<String>,
    /// CA that client certificates must chain to (mutual TLS).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub client_ca: Option<String>,
}

/// `web.metrics` in its map form (`false` reads as `enabled: false`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebMetrics {
    /// Serve `GET /metrics` (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Exempt `/metrics` from token auth (default false).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub public: Option<bool>,
    /// Duration histogram bounds, seconds.
    #[serde(default)]
    pub duration_buckets: Option<Vec<f64>>,
}

impl From<bool> for WebMetrics {
    fn from(enabled: bool) -> Self {
        WebMetrics {
            enabled: Some(enabled),
            ..Default::default()
        }
    }
}

/// `web.nodeHistory` in its map form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeHistory {
    /// Sample node CPU/memory (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Seconds between samples (default 5.0, at least 1.0).
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub interval: Option<f64>,
    /// Ring size (default 720, 10..=50000).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub points: Option<i64>,
}

impl From<bool> for NodeHistory {
    fn from(enabled: bool) -> Self {
        NodeHistory {
            enabled: Some(enabled),
            ..Default::default()
        }
    }
}

/// `web.bonjour` in its map form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Bonjour {
    /// Advertise over mDNS (default false).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Advertised instance name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub name: Option<String>,
}

impl From<bool> for Bonjour {
    fn from(enabled: bool) -> Self {
        Bonjour {
            enabled: Some(enabled),
            ..Default::default()
        }
    }
}

/// The HTTP control API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebConfig {
    /// Listen URLs: `http://`, `https://`, `unix://`.
    #[serde(deserialize_with = "listen_list")]
    pub listen: Vec<String>,
    /// Extra response headers.
    #[serde(default, deserialize_with = "lenient::opt_string_map")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Browser origins allowed on mutating routes.
    #[serde(default, deserialize_with = "lenient::opt_string_list")]
    pub allowed_origins: Option<Vec<String>>,
    /// The single bearer token (all scopes).
    #[serde(default)]
    pub auth_token: Option<SecretSource>,
    /// Named tokens with scopes.
    #[serde(default)]
    pub auth_tokens: Option<Vec<AuthToken>>,
    /// Scopes for callers with no credential.
    #[serde(default)]
    pub anonymous_scopes: Option<Vec<AnonymousScope>>,
    /// Octal mode for unix sockets.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub socket_mode: Option<String>,
    /// TLS material for `https://` listeners.
    #[serde(default)]
    pub tls: Option<WebTls>,
    /// Serve the dashboard page (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub ui: Option<bool>,
    /// Prometheus endpoint.
    #[serde(default, deserialize_with = "bool_or_map")]
    pub metrics: Option<WebMetrics>,
    /// Node CPU/memory history sampling.
    #[serde(default, deserialize_with = "bool_or_map")]
    pub node_history: Option<NodeHistory>,
    /// mDNS advertisement.
    #[serde(default, deserialize_with = "bool_or_map")]
    pub bonjour: Option<Bonjour>,
}

fn listen_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(lenient::opt_string_list(d)?.unwrap_or_default())
}
