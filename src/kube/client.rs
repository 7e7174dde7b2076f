//! Reaching the API server: which credentials, which namespace, and the
//! User-Agent every request carries. Every client the daemon builds (the
//! Kubernetes mode's, and the Lease backend's and slot store's own) comes
//! from [`connect_to`]. Nothing here talks to the server; a client built while the API server is down
//! simply fails its first requests, which the watchers retry.

use super::options::KubeOptions;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::Path;

/// Where the service account's files are mounted in a pod.
const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Why no client could be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig named by `--kubeconfig` cannot be used.
    #[error("cannot use the kubeconfig {path}: {reason}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// Neither a pod's service account nor a kubeconfig was found.
    #[error(
        "no Kubernetes credentials: not in a pod (KUBERNETES_SERVICE_HOST is unset) and no \
         usable kubeconfig ({0}); pass --kubeconfig PATH or set KUBECONFIG"
    )]
    NoCredentials(String),
    /// The pod's service account files are unusable.
    #[error("cannot use the pod's service account: {0}")]
    InCluster(String),
    /// The client could not be built from a valid configuration.
    #[error("cannot build the Kubernetes client: {0}")]
    Build(String),
}

/// A connected-to-be client and the namespace it works in.
pub struct Connection {
    /// The client (no automatic retries: every caller bounds and retries
    /// its own calls, so an outage is seen, counted and logged).
    pub client: kube::Client,
    /// The scheduler's namespace.
    pub namespace: String,
    /// Where the credentials came from, for the start-up log line.
    pub origin: String,
}

/// Builds the client: `--kubeconfig` when given, else the pod's service
/// account when running in a pod, else `$KUBECONFIG` or `~/.kube/config`.
/// The namespace is `--namespace`, else the pod's, else the kubeconfig
/// context's, else `default`.
pub async fn connect(options: &KubeOptions) -> Result<Connection, ClientError> {
    connect_to(options, None).await
}

/// [`connect`], with the API server's URL replaced by `api_server` when
/// given (`cluster.kubernetes.apiServer`).
pub async fn connect_to(
    options: &KubeOptions,
    api_server: Option<&str>,
) -> Result<Connection, ClientError> {
    let in_pod = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let (mut config, origin) = if let Some(path) = &options.kubeconfig {
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| ClientError::Kubeconfig {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| ClientError::Kubeconfig {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
        (config, format!("kubeconfig {}", path.display()))
    } else if in_pod {
        let config =
            kube::Config::incluster().map_err(|e| ClientError::InCluster(e.to_string()))?;
        (config, "the pod's service account".to_owned())
    } else {
        let config = kube::Config::from_kubeconfig(&KubeConfigOptions::default())
            .await
            .map_err(|e| ClientError::NoCredentials(e.to_string()))?;
        let origin = match std::env::var_os("KUBECONFIG") {
            Some(path) => format!("kubeconfig {}", path.to_string_lossy()),
            None => "kubeconfig ~/.kube/config".to_owned(),
        };
        (config, origin)
    };
    if let Some(server) = api_server {
        config.cluster_url = server
            .parse()
            .map_err(|e| ClientError::Build(format!("apiServer '{server}': {e}")))?;
    }
    // The default client retries 429/503/504 inside a call for minutes;
    // the watchers and the status writer have their own bounded backoff.
    config.default_retry = false;
    identify(&mut config);
    let namespace = options
        .namespace
        .clone()
        .or_else(pod_namespace)
        .unwrap_or_else(|| config.default_namespace.clone());
    let namespace = if namespace.is_empty() {
        "default".to_owned()
    } else {
        namespace
    };
    let client = kube::Client::try_from(config).map_err(|e| ClientError::Build(e.to_string()))?;
    Ok(Connection {
        client,
        namespace,
        origin,
    })
}

/// The User-Agent of every request the daemon makes: the API server's
/// audit log and request metrics name the client by it, and it names the
/// field manager of writes that give none (`cronstable`, the part before
/// the slash).
pub const USER_AGENT: &str = concat!("cronstable/", env!("CARGO_PKG_VERSION"));

/// Makes every request of a client built from `config` carry
/// [`USER_AGENT`] (kube sends none of its own; `Config::headers` go on
/// every request, watches included).
fn identify(config: &mut kube::Config) {
    config
        .headers
        .retain(|(name, _)| name != http::header::USER_AGENT);
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
}

/// The pod's namespace from its service-account mount, when in a pod.
fn pod_namespace() -> Option<String> {
    let text = std::fs::read_to_string(Path::new(SERVICE_ACCOUNT_DIR).join("namespace")).ok()?;
    let namespace = text.trim();
    (!namespace.is_empty()).then(|| namespace.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_agent_names_the_crate_and_version_and_replaces_any_other() {
        assert_eq!(
            USER_AGENT,
            format!("cronstable/{}", env!("CARGO_PKG_VERSION"))
        );
        let mut config = kube::Config::new("https://127.0.0.1:6443".parse().expect("a URL"));
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static("someone-else/1"),
        ));
        identify(&mut config);
        let agents: Vec<&http::HeaderValue> = config
            .headers
            .iter()
            .filter(|(name, _)| name == http::header::USER_AGENT)
            .map(|(_, value)| value)
            .collect();
        assert_eq!(agents, [USER_AGENT]);
    }
}
