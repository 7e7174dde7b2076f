//! The connection flags of a web-listener client (`--url`, `--token`,
//! `--token-env`, `--cacert`, `--client-cert`, `--client-key`,
//! `--insecure`, each TLS flag with a `CRONSTABLE_WEB_*` variable behind
//! it) and the HTTP client they make: no proxy (the daemon is usually on
//! loopback, and a proxy would see the token), no redirects (a redirect
//! would carry the token to an address nobody named).

use std::time::Duration;

/// The default `--url`.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";
/// The variable the token is read from without `--token`/`--token-env`.
pub const ENV_TOKEN: &str = "CRONSTABLE_WEB_TOKEN";
/// `--cacert` when not given.
pub const ENV_CACERT: &str = "CRONSTABLE_WEB_CACERT";
/// `--client-cert` when not given.
pub const ENV_CLIENT_CERT: &str = "CRONSTABLE_WEB_CLIENT_CERT";
/// `--client-key` when not given.
pub const ENV_CLIENT_KEY: &str = "CRONSTABLE_WEB_CLIENT_KEY";
/// `--insecure` when set to 1, true or yes.
pub const ENV_INSECURE: &str = "CRONSTABLE_WEB_INSECURE";

/// The shared connection flags.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectArgs {
    /// The daemon's web URL.
    #[arg(long = "url", value_name = "URL", default_value = DEFAULT_URL)]
    pub url: String,
    /// Bearer token for the web API (prefer --token-env: a flag shows in
    /// the process list).
    #[arg(long = "token", value_name = "TOKEN")]
    pub token: Option<String>,
    /// Environment variable holding the bearer token [default:
    /// CRONSTABLE_WEB_TOKEN if set].
    #[arg(long = "token-env", value_name = "VAR")]
    pub token_env: Option<String>,
    /// Trust this CA file instead of the system's for the server's
    /// certificate [default: CRONSTABLE_WEB_CACERT if set].
    #[arg(long = "cacert", value_name = "PATH")]
    pub cacert: Option<String>,
    /// Client certificate for a listener with web.tls.clientCa [default:
    /// CRONSTABLE_WEB_CLIENT_CERT if set].
    #[arg(long = "client-cert", value_name = "PATH")]
    pub client_cert: Option<String>,
    /// Private key of --client-cert [default: CRONSTABLE_WEB_CLIENT_KEY if
    /// set].
    #[arg(long = "client-key", value_name = "PATH")]
    pub client_key: Option<String>,
    /// Do not verify the server's certificate (the token then goes to
    /// whoever answers; same as CRONSTABLE_WEB_INSECURE=1).
    #[arg(long = "insecure")]
    pub insecure: bool,
}

/// Why a client cannot connect.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// Reads an environment variable, as the client flags fall back to it.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

impl ConnectArgs {
    /// The bearer token: `--token`, else the `--token-env` variable (by
    /// default `CRONSTABLE_WEB_TOKEN`); `None` when empty. A token that no
    /// header can carry (a line break, a control character) is refused,
    /// naming where it came from and not the token.
    pub fn token(&self, env: Env) -> Result<Option<String>, ClientError> {
        let (token, source) = match &self.token {
            Some(token) if !token.is_empty() => (token.clone(), "--token".to_owned()),
            _ => {
                let name = self.token_env.as_deref().unwrap_or(ENV_TOKEN);
                (
                    env(name).unwrap_or_default(),
                    format!("the {name} environment variable"),
                )
            }
        };
        if token.chars().any(|c| c.is_control() && c != '\t') {
            return Err(ClientError(format!(
                "the access token from {source} holds a line break or another character an \
                 HTTP header cannot carry (look for a trailing newline)"
            )));
        }
        Ok(Some(token).filter(|t| !t.is_empty()))
    }

    /// The HTTP client for these flags (TLS material read once, here).
    pub fn client(&self, env: Env, timeout: Duration) -> Result<reqwest::Client, ClientError> {
        let pick = |flag: &Option<String>, var: &str| {
            flag.clone()
                .filter(|v| !v.is_empty())
                .or_else(|| env(var).filter(|v| !v.is_empty()))
        };
        let cacert = pick(&self.cacert, ENV_CACERT);
        let cert = pick(&self.client_cert, ENV_CLIENT_CERT);
        let key = pick(&self.client_key, ENV_CLIENT_KEY);
        let insecure = self.insecure
            || env(ENV_INSECURE)
                .is_some_and(|v| matches!(v.to_lowercase().as_str(), "1" | "true" | "yes"));
        let given: Vec<String> = [
            ("--cacert", &cacert),
            ("--client-cert", &cert),
            ("--client-key", &key),
        ]
        .iter()
        .filter_map(|(flag, path)| path.as_ref().map(|p| format!("{flag}={p}")))
        .collect();
        let material = |detail: String| {
            let named = if given.is_empty() {
                String::new()
            } else {
                format!(" ({})", given.join(", "))
            };
            ClientError(format!(
                "cannot use the given TLS material{named}: {detail}"
            ))
        };
        let read = |path: &str| std::fs::read(path).map_err(|e| material(format!("{path}: {e}")));
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .user_agent(concat!("cronstable/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &cacert {
            let certs = reqwest::Certificate::from_pem_bundle(&read(path)?)
                .map_err(|e| material(e.to_string()))?;
            if certs.is_empty() {
                return Err(material(format!("{path}: no PEM certificate in the file")));
            }
            builder = builder.tls_built_in_root_certs(false);
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        match (&cert, &key) {
            (Some(cert), key) => {
                let mut pem = read(cert)?;
                if let Some(key) = key {
                    pem.push(b'\n');
                    pem.extend(read(key)?);
                }
                let identity =
                    reqwest::Identity::from_pem(&pem).map_err(|e| material(e.to_string()))?;
                builder = builder.identity(identity);
            }
            (None, Some(_)) => {
                return Err(material("--client-key needs --client-cert".to_owned()));
            }
            (None, None) => {}
        }
        if insecure {
            eprintln!(
                "warning: --insecure disables TLS certificate verification; this can expose \
                 the bearer token to an untrusted server"
            );
            builder = builder.danger_accept_invalid_certs(true);
        }
        builder
            .build()
            .map_err(|e| ClientError(format!("cannot set up the HTTP client: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_token_comes_from_the_flag_then_the_variable() {
        let env = env_of(&[("CRONSTABLE_WEB_TOKEN", "from-env"), ("MINE", "mine")]);
        let args = ConnectArgs::default();
        assert_eq!(args.token(&env), Ok(Some("from-env".into())));
        let named = ConnectArgs {
            token_env: Some("MINE".into()),
            ..Default::default()
        };
        assert_eq!(named.token(&env), Ok(Some("mine".into())));
        let flag = ConnectArgs {
            token: Some("flag".into()),
            token_env: Some("MINE".into()),
            ..Default::default()
        };
        assert_eq!(flag.token(&env), Ok(Some("flag".into())));
        let none = ConnectArgs {
            token_env: Some("UNSET".into()),
            ..Default::default()
        };
        assert_eq!(none.token(&env), Ok(None));
        let broken = env_of(&[("CRONSTABLE_WEB_TOKEN", "abc\n")]);
        let err = args.token(&broken).expect_err("a newline cannot travel");
        assert!(
            err.0
                .contains("the CRONSTABLE_WEB_TOKEN environment variable"),
            "{err}"
        );
        assert!(!err.0.contains("abc"), "the token is never shown: {err}");
    }

    #[test]
    fn bad_tls_material_names_the_paths() {
        let env = env_of(&[]);
        let args = ConnectArgs {
            cacert: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        };
        let err = args
            .client(&env, Duration::from_secs(1))
            .expect_err("no such file");
        assert!(
            err.0
                .starts_with("cannot use the given TLS material (--cacert=/nonexistent/ca.pem): "),
            "{err}"
        );
        let key_only = ConnectArgs {
            client_key: Some("/k.pem".into()),
            ..Default::default()
        };
        let err = key_only
            .client(&env, Duration::from_secs(1))
            .expect_err("a key alone");
        assert!(err.0.contains("--client-key needs --client-cert"), "{err}");
        assert!(ConnectArgs::default()
            .client(&env, Duration::from_secs(1))
            .is_ok());
    }
}
