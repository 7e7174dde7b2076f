//! The `cluster` section resolved: defaults filled in and the load-time
//! rules of the Clustering page checked, with its messages. Pure (the
//! etcd password is resolved when the backend starts, not here). The
//! leadership backends start from a [`ClusterSettings`]; the loader calls
//! [`resolve`] so a bad section is a load error naming the key.

use super::model::sections::{ClusterBackend, ClusterConfig, Distribution, Topology};
use super::model::SecretSource;

/// The resolved section.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSettings {
    /// This node's name (`nodeName`, else the host name).
    pub node_name: String,
    /// `connectTimeout`, seconds: every store request's cap.
    pub connect_timeout: u64,
    /// The backend and its block.
    pub backend: Backend,
}

/// A lease backend with its settings.
#[derive(Debug, Clone, PartialEq)]
pub enum Backend {
    /// One coordination.k8s.io/v1 Lease.
    Kubernetes(KubernetesSettings),
    /// An etcd lease and a create-if-absent key.
    Etcd(EtcdSettings),
    /// A lease file in a shared directory.
    Filesystem(FilesystemSettings),
}

impl Backend {
    /// The backend's name as the API and metrics spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Kubernetes(_) => "kubernetes",
            Backend::Etcd(_) => "etcd",
            Backend::Filesystem(_) => "filesystem",
        }
    }
}

/// `cluster.kubernetes`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesSettings {
    /// The Lease's name.
    pub lease_name: String,
    /// Its namespace (None: the pod's, else the Kubernetes mode's, else
    /// the kubeconfig context's).
    pub lease_namespace: Option<String>,
    /// Seconds a record is valid after its last renewal.
    pub lease_duration_seconds: u64,
    /// Seconds a holder keeps leading after its last renewal.
    pub renew_deadline_seconds: u64,
    /// Seconds between rounds.
    pub retry_period_seconds: u64,
    /// The holder identity before the per-process token (default: the
    /// node name).
    pub identity: String,
    /// A kubeconfig for out-of-cluster use.
    pub kubeconfig: Option<String>,
    /// An API server URL overriding the kubeconfig's.
    pub api_server: Option<String>,
}

/// `cluster.etcd`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct EtcdSettings {
    /// Client URLs, tried in order.
    pub endpoints: Vec<String>,
    /// The contended key.
    pub election_name: String,
    /// Lease TTL, seconds (>= 3).
    pub ttl: u64,
    /// Auth user.
    pub username: Option<String>,
    /// Auth password source (resolved at start).
    pub password: Option<SecretSource>,
    /// CA file.
    pub ca: Option<String>,
    /// Client certificate file.
    pub cert: Option<String>,
    /// Client key file.
    pub key: Option<String>,
}

/// `cluster.filesystem`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesystemSettings {
    /// The directory (normally a shared mount).
    pub path: String,
    /// The lease's name.
    pub election_name: String,
    /// Lease TTL, seconds (>= 3).
    pub ttl: f64,
    /// Namespace inside the directory (`default`).
    pub deployment_id: String,
    /// Lock trust across hosts.
    pub topology: Topology,
}

/// Resolves and checks a `cluster` section; `host_name` is the default
/// node name. Errors are the Clustering page's messages. Gossip is not
/// built: it is refused here with the "not supported yet" wording the
/// caller adds.
pub fn resolve(cluster: &ClusterConfig, host_name: &str) -> Result<Resolved, String> {
    let backend = cluster.backend.unwrap_or(ClusterBackend::Gossip);
    let backend_name = match backend {
        ClusterBackend::Gossip => "gossip",
        ClusterBackend::Kubernetes => "kubernetes",
        ClusterBackend::Etcd => "etcd",
        ClusterBackend::Filesystem => "filesystem",
    };
    if let Some(timeout) = cluster.connect_timeout {
        if timeout <= 0 {
            return Err("cluster.connectTimeout must be > 0".to_owned());
        }
    }
    if let Some(interval) = cluster.interval {
        if interval <= 0 {
            return Err("cluster.interval must be > 0".to_owned());
        }
    }
    if let Some(drift) = cluster.drift_after {
        if drift < 1 {
            return Err("cluster.driftAfter must be >= 1".to_owned());
        }
    }
    // A store block for another backend would be silently ignored.
    for (key, present, owner) in [
        (
            "kubernetes",
            cluster.kubernetes.is_some(),
            ClusterBackend::Kubernetes,
        ),
        ("etcd", cluster.etcd.is_some(), ClusterBackend::Etcd),
        (
            "filesystem",
            cluster.filesystem.is_some(),
            ClusterBackend::Filesystem,
        ),
    ] {
        if present && backend != owner {
            return Err(format!(
                "cluster.{key} is configured but cluster.backend is '{backend_name}'; that store \
                 block would be silently ignored. Set backend: {key} to use it, or remove the \
                 cluster.{key} block."
            ));
        }
    }
    if backend == ClusterBackend::Gossip {
        return Ok(Resolved::Gossip);
    }
    if cluster.distribution == Some(Distribution::Spread) {
        return Err(format!(
            "cluster.distribution: spread is not supported with the '{backend_name}' backend (a \
             single lease holder cannot fan jobs out per-node); use distribution: single-leader, \
             or the gossip backend"
        ));
    }
    let node_name = cluster
        .node_name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| host_name.to_owned());
    let connect_timeout = cluster.connect_timeout.unwrap_or(10) as u64;
    let mut advisories = Vec::new();
    let ignored: Vec<&str> = [
        ("listen", cluster.listen.is_some()),
        ("tls", cluster.tls.is_some()),
        ("peers", cluster.peers.is_some()),
        ("interval", cluster.interval.is_some()),
        ("driftAfter", cluster.drift_after.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if !ignored.is_empty() {
        let mut line = format!(
            "cluster.{} configured but ignored by the '{backend_name}' backend (those keys apply \
             only to backend: gossip)",
            ignored.join(", cluster.")
        );
        if ignored.contains(&"tls") {
            line.push_str(&format!(
                "; note cluster.tls does NOT secure the lease store -- the {backend_name} store's \
                 TLS is configured under cluster.{backend_name}"
            ));
        }
        advisories.push(line);
    }
    if cluster.elect_leader == Some(false) {
        advisories.push(format!(
            "cluster.electLeader: false is ignored by the '{backend_name}' backend; a lease \
             backend always enables leader election"
        ));
    }
    let backend = match backend {
        ClusterBackend::Kubernetes => Backend::Kubernetes(kubernetes(cluster, &node_name)?),
        ClusterBackend::Etcd => {
            let (settings, advisory) = etcd(cluster)?;
            advisories.extend(advisory);
            Backend::Etcd(settings)
        }
        ClusterBackend::Filesystem => Backend::Filesystem(filesystem(cluster)?),
        ClusterBackend::Gossip => unreachable!("gossip returned above"),
    };
    Ok(Resolved::Lease {
        settings: Box::new(ClusterSettings {
            node_name,
            connect_timeout,
            backend,
        }),
        advisories,
    })
}

/// What [`resolve`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The gossip backend (not built yet).
    Gossip,
    /// A lease backend, with the one-line advisories to log when it
    /// starts (keys it ignores).
    Lease {
        /// The settings.
        settings: Box<ClusterSettings>,
        /// WARNING lines.
        advisories: Vec<String>,
    },
}

fn is_dns_subdomain(name: &str) -> bool {
    let bytes = name.as_bytes();
    !name.is_empty()
        && name.len() <= 253
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'.')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !name.is_empty()
        && name.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// A URL for an error message, with any `user:password@` removed.
fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let hidden = if authority.contains('@') { "***@" } else { "" };
            format!("{scheme}://{hidden}{host}{path}")
        }
        None => url.to_owned(),
    }
}

fn kubernetes(cluster: &ClusterConfig, node_name: &str) -> Result<KubernetesSettings, String> {
    let k = cluster.kubernetes.clone().unwrap_or_default();
    let lease_name = k
        .lease_name
        .unwrap_or_else(|| "cronstable-leader".to_owned());
    if !is_dns_subdomain(&lease_name) {
        return Err(format!(
            "cluster.kubernetes.leaseName must be a valid RFC1123 name (lowercase alphanumeric, \
             '-' or '.', <= 253 chars); got '{lease_name}'"
        ));
    }
    if let Some(ns) = &k.lease_namespace {
        if !is_dns_label(ns) {
            return Err(format!(
                "cluster.kubernetes.leaseNamespace must be a valid RFC1123 label (lowercase \
                 alphanumeric or '-', <= 63 chars); got '{ns}'"
            ));
        }
    }
    if let Some(server) = &k.api_server {
        if !server.starts_with("https://") {
            return Err(format!(
                "cluster.kubernetes.apiServer must be an https:// URL so the ServiceAccount \
                 bearer token is not sent in cleartext; got '{}'",
                redact(server)
            ));
        }
    }
    let duration = k.lease_duration_seconds.unwrap_or(15);
    let renew = k.renew_deadline_seconds.unwrap_or(10);
    let retry = k.retry_period_seconds.unwrap_or(2);
    if renew <= 0 {
        return Err("cluster.kubernetes.renewDeadlineSeconds must be > 0".to_owned());
    }
    if duration <= renew {
        return Err(format!(
            "cluster.kubernetes.leaseDurationSeconds ({duration}) must be greater than \
             renewDeadlineSeconds ({renew})"
        ));
    }
    if retry <= 0 {
        return Err("cluster.kubernetes.retryPeriodSeconds must be > 0".to_owned());
    }
    if retry >= renew {
        return Err(format!(
            "cluster.kubernetes.retryPeriodSeconds ({retry}) must be less than \
             renewDeadlineSeconds ({renew}): a holder must be able to renew within the renew \
             window before the next retry, or it lapses out of the lease every cycle and no \
             Leader job runs stably"
        ));
    }
    if renew + retry >= duration {
        return Err(format!(
            "cluster.kubernetes: renewDeadlineSeconds ({renew}) + retryPeriodSeconds ({retry}) \
             must be less than leaseDurationSeconds ({duration}); otherwise the worst-case gap \
             between lease renewals exceeds the lease lifetime and the holder lapses out of the \
             lease every cycle, so no Leader job runs stably"
        ));
    }
    Ok(KubernetesSettings {
        lease_name,
        lease_namespace: k.lease_namespace,
        lease_duration_seconds: duration as u64,
        renew_deadline_seconds: renew as u64,
        retry_period_seconds: retry as u64,
        identity: k
            .identity
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| node_name.to_owned()),
        kubeconfig: k.kubeconfig,
        api_server: k.api_server,
    })
}

fn ttl_floor(what: &str, ttl: f64) -> Result<(), String> {
    if ttl.is_finite() && ttl >= 3.0 {
        return Ok(());
    }
    Err(format!(
        "{what} must be >= 3 seconds (the leader holds the lease only until ttl minus a \
         clock-skew margin and renews every max(1s, ttl/3); a smaller ttl makes a node that wins \
         the election immediately treat its own lease as expired, so no Leader job ever runs); \
         got {}",
        crate::pyfmt::py_float(ttl)
    ))
}

fn etcd(cluster: &ClusterConfig) -> Result<(EtcdSettings, Option<String>), String> {
    let e = cluster.etcd.clone().unwrap_or_default();
    let ttl = e.ttl.unwrap_or(15);
    ttl_floor("cluster.etcd.ttl", ttl as f64)?;
    let endpoints = e
        .endpoints
        .unwrap_or_else(|| vec!["http://127.0.0.1:2379".to_owned()]);
    if endpoints.is_empty() {
        return Err("cluster.etcd.endpoints must list at least one URL".to_owned());
    }
    for endpoint in &endpoints {
        let authority = endpoint
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or_default())
            .unwrap_or_default();
        if authority.contains('@') {
            return Err(format!(
                "cluster.etcd.endpoints must not embed credentials in the URL (userinfo@host); \
                 use cluster.etcd.username/password instead, got '{}'",
                redact(endpoint)
            ));
        }
        let scheme_ok = endpoint.starts_with("http://") || endpoint.starts_with("https://");
        let port_ok = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                port.parse::<u16>().is_ok_and(|p| p > 0)
            }
            _ => true,
        };
        if !scheme_ok || authority.is_empty() || !port_ok {
            return Err(format!(
                "cluster.etcd.endpoints must be http(s)://host[:port], got '{}'",
                redact(endpoint)
            ));
        }
    }
    let tls = e.tls.clone().unwrap_or_default();
    if tls.cert.is_some() != tls.key.is_some() {
        return Err(format!(
            "cluster.etcd.tls.cert and cluster.etcd.tls.key must be set together (a client \
             certificate needs its private key); got cert={}, key={}",
            if tls.cert.is_some() { "True" } else { "False" },
            if tls.key.is_some() { "True" } else { "False" }
        ));
    }
    let any_https = endpoints.iter().any(|u| u.starts_with("https://"));
    if (tls.ca.is_some() || tls.cert.is_some() || tls.key.is_some()) && !any_https {
        return Err(
            "cluster.etcd.tls is configured but no endpoint is https:// , so the TLS material \
             would be ignored and traffic sent in cleartext; use https:// endpoints or remove \
             cluster.etcd.tls"
                .to_owned(),
        );
    }
    let password = e.password.clone().filter(SecretSource::is_configured);
    if e.username.is_some() && password.is_none() {
        return Err(
            "cluster.etcd.username is set but no password is configured; set \
             cluster.etcd.password (value/fromFile/fromEnvVar)"
                .to_owned(),
        );
    }
    if e.username.is_some() || password.is_some() {
        let plain: Vec<String> = endpoints
            .iter()
            .filter(|u| !u.starts_with("https://"))
            .map(|u| redact(u))
            .collect();
        if !plain.is_empty() {
            return Err(format!(
                "cluster.etcd: authentication (username/password) requires https:// endpoints \
                 so credentials are not sent in cleartext, but these endpoints are plaintext: {}",
                plain.join(", ")
            ));
        }
    }
    let renew = (ttl as f64 / 3.0).max(1.0);
    let budget = (ttl as f64 - renew - 1.0) / 5.0;
    let advisory = (budget < 1.0).then(|| {
        format!(
            "cluster.etcd.ttl={ttl}s leaves only a ~{budget:.1}s per-request timeout for each \
             renew POST to etcd; if a single round-trip is slower than that (e.g. a \
             cross-AZ/region endpoint) every renew round will time out and this node will treat \
             a reachable etcd as unreachable, so Leader jobs fail closed. Raise cluster.etcd.ttl \
             unless etcd is local and low-latency."
        )
    });
    Ok((
        EtcdSettings {
            endpoints,
            election_name: e
                .election_name
                .unwrap_or_else(|| "cronstable/leader".to_owned()),
            ttl: ttl as u64,
            username: e.username,
            password,
            ca: tls.ca,
            cert: tls.cert,
            key: tls.key,
        },
        advisory,
    ))
}

fn filesystem(cluster: &ClusterConfig) -> Result<FilesystemSettings, String> {
    let f = cluster.filesystem.clone().unwrap_or_default();
    let path = f.path.unwrap_or_default();
    if path.trim().is_empty() {
        return Err("cluster.filesystem.path is required and must be non-empty".to_owned());
    }
    let election_name = f
        .election_name
        .unwrap_or_else(|| "cluster/leader".to_owned());
    if election_name.trim().is_empty() {
        return Err("cluster.filesystem.electionName must be non-empty".to_owned());
    }
    let ttl = f.ttl.unwrap_or(15.0);
    ttl_floor("cluster.filesystem.ttl", ttl)?;
    Ok(FilesystemSettings {
        path,
        election_name,
        ttl,
        deployment_id: f
            .deployment_id
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "default".to_owned()),
        topology: f.topology.unwrap_or(Topology::Auto),
    })
}
