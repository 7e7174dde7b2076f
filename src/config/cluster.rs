//! The `cluster` section resolved: defaults filled in and the load-time
//! rules of the Clustering page checked, with its messages. Pure (the
//! etcd password is resolved when the backend starts, not here). The
//! leadership backends start from a [`ClusterSettings`]; the loader calls
//! [`resolve`] so a bad section is a load error naming the key.

use super::model::sections::{ClusterBackend, ClusterConfig, Distribution, Topology};
use super::model::sections::{Observability, PeerTls};
use super::model::SecretSource;
use std::net::IpAddr;

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
/// node name. Errors are the Clustering page's messages. A gossip section
/// resolves fully (the loader still refuses it while the backend's
/// transport is not wired in).
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
        let (settings, advisories) = gossip(cluster, host_name)?;
        return Ok(Resolved::Gossip {
            settings: Box::new(settings),
            advisories,
        });
    }
    if let Some(obs) = &cluster.observability {
        lease_observability(obs, backend_name)?;
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
    /// The gossip backend, with the one-line advisories to log when it
    /// starts.
    Gossip {
        /// The settings.
        settings: Box<GossipSettings>,
        /// WARNING lines.
        advisories: Vec<String>,
    },
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

/// `backend: gossip`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct GossipSettings {
    /// This node's name (`nodeName`, else the host name).
    pub node_name: String,
    /// The mTLS `/peer` listener, `host:port` (IPv6 bracketed).
    pub listen: String,
    /// Every other member's `host:port`, duplicates and unambiguous
    /// self-listings dropped (first occurrence kept).
    pub peers: Vec<String>,
    /// The declared cluster size: the peers plus this node.
    pub cluster_size: usize,
    /// `electLeader`.
    pub elect_leader: bool,
    /// `distribution`.
    pub distribution: Distribution,
    /// `interval`: seconds between poll rounds.
    pub interval: u64,
    /// `driftAfter`: mismatched rounds before a peer is drifted.
    pub drift_after: u32,
    /// `connectTimeout`: seconds per peer request.
    pub connect_timeout: u64,
    /// The cluster CA, this node's certificate and key.
    pub tls: GossipTls,
    /// `cluster.observability` is present and `shareNodeStats` is not
    /// false: node CPU/memory ride the election mesh.
    pub share_node_stats: bool,
}

/// `cluster.tls`, resolved (all three files are required).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GossipTls {
    /// Trust anchor for peer certificates.
    pub ca: String,
    /// This node's certificate (served and presented as a client).
    pub cert: String,
    /// Its private key.
    pub key: String,
}

fn py_repr(s: &str) -> String {
    crate::pyfmt::py_repr(&minijinja::Value::from(s))
}

/// A port as the original accepts it: 1 to 5 ASCII digits, 1-65535.
fn is_port(port: &str) -> bool {
    !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// Checks `addr` is `host:port` or `[ipv6]:port`; `what` names the key.
fn require_host_port(addr: &str, what: &str) -> Result<(), String> {
    if addr.starts_with('[') {
        let ok = addr
            .rsplit_once("]:")
            .is_some_and(|(bracket, port)| bracket.len() > 1 && is_port(port));
        return if ok {
            Ok(())
        } else {
            Err(format!(
                "cluster.{what} must be [ipv6]:port, got {}",
                py_repr(addr)
            ))
        };
    }
    let (host, port) = addr.rsplit_once(':').unwrap_or(("", addr));
    if host.contains(':') {
        return Err(format!(
            "cluster.{what} looks like a bare IPv6 address; write it as [ipv6]:port, got {}",
            py_repr(addr)
        ));
    }
    if host.is_empty() || !is_port(port) {
        return Err(format!(
            "cluster.{what} must be host:port, got {}",
            py_repr(addr)
        ));
    }
    Ok(())
}

/// Splits at the last colon, as the original does (`rpartition`).
fn split_last_colon(addr: &str) -> (&str, &str) {
    addr.rsplit_once(':').unwrap_or(("", addr))
}

const WILDCARD_V4: [&str; 3] = ["0.0.0.0", "*", ""];
const WILDCARD_V6: [&str; 4] = ["::", "[::]", "*", ""];

fn is_wildcard(host: &str) -> bool {
    WILDCARD_V4.contains(&host) || WILDCARD_V6.contains(&host)
}

/// 4 or 6 for a literal loopback address (brackets allowed), else None.
/// Literal parsing only: no name is resolved.
fn loopback_version(host: &str) -> Option<u8> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) if ip.is_loopback() => Some(4),
        Ok(IpAddr::V6(ip)) if ip.is_loopback() => Some(6),
        _ => None,
    }
}

/// Whether a peer entry can only be this node: our exact listen address;
/// under a wildcard listen, our exact node name or a loopback literal of
/// the bound family on our port. Anything fuzzier could drop a real
/// member and shrink this node's cluster size below everyone else's.
fn is_self_listed(peer: &str, listen: &str, node_name: &str) -> bool {
    if peer == listen {
        return true;
    }
    let (listen_host, listen_port) = split_last_colon(listen);
    if !is_wildcard(listen_host) {
        return false;
    }
    let (peer_host, peer_port) = split_last_colon(peer);
    if peer_port != listen_port {
        return false;
    }
    if peer_host == node_name {
        return true;
    }
    match loopback_version(peer_host) {
        Some(4) => WILDCARD_V4.contains(&listen_host),
        Some(6) => WILDCARD_V6.contains(&listen_host),
        _ => false,
    }
}

/// A peer on our port under a wildcard listen whose first DNS label is our
/// node name (diagnostics only: never dropped).
fn likely_self_fqdn(peer: &str, listen: &str, node_name: &str) -> bool {
    if is_self_listed(peer, listen, node_name) {
        return false;
    }
    let (listen_host, listen_port) = split_last_colon(listen);
    let (peer_host, peer_port) = split_last_colon(peer);
    is_wildcard(listen_host)
        && peer_port == listen_port
        && peer_host != node_name
        && peer_host.split('.').next() == Some(node_name)
}

/// A loopback-looking peer on our own port (diagnostics only).
fn likely_self_loopback(peer: &str, listen: &str) -> bool {
    let (_, listen_port) = split_last_colon(listen);
    let (peer_host, peer_port) = split_last_colon(peer);
    peer_port == listen_port && (peer_host == "localhost" || loopback_version(peer_host).is_some())
}

fn gossip_tls(tls: &PeerTls) -> Result<GossipTls, String> {
    let get = |value: &Option<String>, key: &str| {
        value
            .clone()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("cluster.tls requires cluster.tls.{key}"))
    };
    Ok(GossipTls {
        ca: get(&tls.ca, "ca")?,
        cert: get(&tls.cert, "cert")?,
        key: get(&tls.key, "key")?,
    })
}

/// Builds the gossip settings from the section's keys (also used for the
/// observability overlay of a lease backend).
fn gossip(
    cluster: &ClusterConfig,
    host_name: &str,
) -> Result<(GossipSettings, Vec<String>), String> {
    let node_name = cluster
        .node_name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host_name.to_owned());
    let (Some(listen), Some(tls), Some(peers)) = (&cluster.listen, &cluster.tls, &cluster.peers)
    else {
        let missing = [
            ("listen", cluster.listen.is_none()),
            ("tls", cluster.tls.is_none()),
            ("peers", cluster.peers.is_none()),
        ]
        .into_iter()
        .find_map(|(k, absent)| absent.then_some(k))
        .unwrap_or("listen");
        return Err(format!("cluster.backend gossip requires cluster.{missing}"));
    };
    let tls = gossip_tls(tls)?;
    require_host_port(listen, "listen")?;
    for peer in peers {
        require_host_port(&peer.host, "peers[].host")?;
    }
    let mut kept: Vec<String> = Vec::new();
    for peer in peers {
        if !is_self_listed(&peer.host, listen, &node_name) && !kept.contains(&peer.host) {
            kept.push(peer.host.clone());
        }
    }
    let elect_leader = cluster.elect_leader.unwrap_or(false);
    let distribution = cluster.distribution.unwrap_or(Distribution::SingleLeader);
    let size = kept.len() + 1;
    if elect_leader && size == 2 {
        return Err(
            "cluster.electLeader needs a fault-tolerant cluster, but this config declares \
                    only 2 nodes (1 peer). A quorum of 2 requires both nodes up for either to \
                    run, so it is strictly worse than a single replica. Use 3 or more nodes (an \
                    odd count is best), or run a single replica without electLeader."
                .to_owned(),
        );
    }
    let share_node_stats = match &cluster.observability {
        None => false,
        Some(obs) => {
            if obs.listen.is_some() || obs.tls.is_some() || obs.peers.is_some() {
                return Err(
                    "cluster.observability.{listen,tls,peers} is redundant with backend: \
                            gossip (the election mesh already carries fleet data); drop them -- \
                            an empty `observability:` block, or just `shareNodeStats`, is enough \
                            to share node CPU/memory"
                        .to_owned(),
                );
            }
            for (key, set) in [
                ("nodeName", obs.node_name.is_some()),
                ("interval", obs.interval.is_some()),
                ("driftAfter", obs.drift_after.is_some()),
                ("connectTimeout", obs.connect_timeout.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "cluster.observability.{key} only applies to the overlay mesh a lease \
                         backend (kubernetes/etcd/filesystem) stands up; with backend: gossip \
                         node stats ride the election mesh, so set cluster.{key} instead"
                    ));
                }
            }
            obs.share_node_stats != Some(false)
        }
    };
    let mut advisories = Vec::new();
    if elect_leader {
        if size > 2 && size.is_multiple_of(2) {
            advisories.push(format!(
                "cluster.electLeader: an even cluster size ({size} nodes) tolerates no more \
                 failures than {} (the next-lower odd size); shrink to {} for the same tolerance \
                 with one fewer node, or grow to {} to tolerate one more failure; prefer an odd \
                 size.",
                size - 1,
                size - 1,
                size + 1
            ));
        }
        let fqdn: Vec<&str> = kept
            .iter()
            .filter(|p| likely_self_fqdn(p, listen, &node_name))
            .map(String::as_str)
            .collect();
        if !fqdn.is_empty() && size - fqdn.len() <= 2 {
            advisories.push(format!(
                "cluster.electLeader: {} peer(s) look like this node listed by FQDN ({}) while \
                 nodeName is {}; if so the real cluster is only {} node(s) and leader election \
                 will be degenerate or refused at runtime. List the peer by its exact nodeName, \
                 or fix the addresses.",
                fqdn.len(),
                fqdn.join(", "),
                py_repr(&node_name),
                size - fqdn.len()
            ));
        }
        let loopback: Vec<&str> = kept
            .iter()
            .filter(|p| likely_self_loopback(p, listen))
            .map(String::as_str)
            .collect();
        if !loopback.is_empty() && size - loopback.len() <= 2 {
            advisories.push(format!(
                "cluster.electLeader: {} peer(s) are loopback addresses on this node's own port \
                 ({}); a loopback entry never reaches another host, so at best it is this node \
                 itself and the real cluster is only {} node(s) -- leader election will be \
                 degenerate or refused at runtime. List each peer by an address the other nodes \
                 are reached at.",
                loopback.len(),
                loopback.join(", "),
                size - loopback.len()
            ));
        }
    } else if distribution != Distribution::SingleLeader {
        advisories.push(
            "cluster.distribution='spread' has no effect without electLeader; without leader \
             election every node runs every job."
                .to_owned(),
        );
    }
    Ok((
        GossipSettings {
            node_name,
            listen: listen.clone(),
            peers: kept,
            cluster_size: size,
            elect_leader,
            distribution,
            interval: cluster.interval.unwrap_or(30) as u64,
            drift_after: cluster
                .drift_after
                .unwrap_or(3)
                .clamp(1, i64::from(u32::MAX)) as u32,
            connect_timeout: cluster.connect_timeout.unwrap_or(10) as u64,
            tls,
            share_node_stats,
        },
        advisories,
    ))
}

/// A lease backend's `observability` block stands up its own
/// election-inert gossip mesh, so it needs the whole transport.
fn lease_observability(obs: &Observability, backend_name: &str) -> Result<(), String> {
    for (key, absent) in [
        ("listen", obs.listen.is_none()),
        ("tls", obs.tls.is_none()),
        ("peers", obs.peers.is_none()),
    ] {
        if absent {
            return Err(format!(
                "cluster.observability requires cluster.observability.{key} when backend is \
                 '{backend_name}' (the overlay stands up its own gossip mesh to carry fleet \
                 data)"
            ));
        }
    }
    for (key, value) in [
        ("connectTimeout", obs.connect_timeout),
        ("interval", obs.interval),
    ] {
        if value.is_some_and(|v| v <= 0) {
            return Err(format!("cluster.{key} must be > 0"));
        }
    }
    if obs.drift_after.is_some_and(|v| v < 1) {
        return Err("cluster.driftAfter must be >= 1".to_owned());
    }
    let mesh = ClusterConfig {
        backend: Some(ClusterBackend::Gossip),
        listen: obs.listen.clone(),
        tls: obs.tls.clone(),
        peers: obs.peers.clone(),
        node_name: obs.node_name.clone(),
        elect_leader: Some(false),
        ..ClusterConfig::default()
    };
    gossip(&mesh, "").map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "listen: '0.0.0.0:8443'\ntls: {ca: /c/ca.pem, cert: /c/a.pem, key: /c/a.key}\nnodeName: node-a\n";

    fn section(extra: &str) -> ClusterConfig {
        serde_yaml::from_str(extra).unwrap_or_else(|e| panic!("{extra}: {e}"))
    }

    fn with_peers(peers: &[&str], extra: &str) -> ClusterConfig {
        let list: String = peers.iter().map(|p| format!("  - host: '{p}'\n")).collect();
        section(&format!("{BASE}peers:\n{list}{extra}"))
    }

    fn gossip_ok(c: &ClusterConfig) -> (GossipSettings, Vec<String>) {
        match resolve(c, "the-host") {
            Ok(Resolved::Gossip {
                settings,
                advisories,
            }) => (*settings, advisories),
            other => panic!("{other:?}"),
        }
    }

    fn err(c: &ClusterConfig) -> String {
        resolve(c, "the-host").expect_err("should be refused")
    }

    #[test]
    fn defaults_fill_every_documented_key() {
        let c = with_peers(&["b.internal:8443", "c.internal:8443"], "");
        let (s, advisories) = gossip_ok(&c);
        assert_eq!(
            s,
            GossipSettings {
                node_name: "node-a".into(),
                listen: "0.0.0.0:8443".into(),
                peers: vec!["b.internal:8443".into(), "c.internal:8443".into()],
                cluster_size: 3,
                elect_leader: false,
                distribution: Distribution::SingleLeader,
                interval: 30,
                drift_after: 3,
                connect_timeout: 10,
                tls: GossipTls {
                    ca: "/c/ca.pem".into(),
                    cert: "/c/a.pem".into(),
                    key: "/c/a.key".into(),
                },
                share_node_stats: false,
            }
        );
        assert!(advisories.is_empty());
        let c = section(
            "listen: 'h:1'\ntls: {ca: a, cert: b, key: c}\npeers: [{host: 'x:2'}, {host: 'y:2'}]\n\
             interval: 5\ndriftAfter: 1\nconnectTimeout: 2\nelectLeader: true\ndistribution: spread\n\
             observability: {}\n",
        );
        let (s, _) = gossip_ok(&c);
        assert_eq!(s.node_name, "the-host");
        assert_eq!((s.interval, s.drift_after, s.connect_timeout), (5, 1, 2));
        assert!(s.elect_leader && s.share_node_stats);
        assert_eq!(s.distribution, Distribution::Spread);
    }

    #[test]
    fn missing_transport_keys_are_named() {
        assert_eq!(
            err(&section("nodeName: a\n")),
            "cluster.backend gossip requires cluster.listen"
        );
        assert_eq!(
            err(&section("listen: 'h:1'\n")),
            "cluster.backend gossip requires cluster.tls"
        );
        assert_eq!(
            err(&section("listen: 'h:1'\ntls: {ca: a, cert: b, key: c}\n")),
            "cluster.backend gossip requires cluster.peers"
        );
        assert_eq!(
            err(&section("listen: 'h:1'\ntls: {ca: a, key: c}\npeers: []\n")),
            "cluster.tls requires cluster.tls.cert"
        );
    }

    #[test]
    fn numeric_rules_use_the_originals_messages() {
        for (extra, says) in [
            ("interval: 0\n", "cluster.interval must be > 0"),
            ("driftAfter: 0\n", "cluster.driftAfter must be >= 1"),
            ("connectTimeout: -1\n", "cluster.connectTimeout must be > 0"),
        ] {
            assert_eq!(err(&with_peers(&["b:1"], extra)), says);
        }
        assert_eq!(
            err(&with_peers(&["b:1"], "etcd: {}\n")),
            "cluster.etcd is configured but cluster.backend is 'gossip'; that store block would \
             be silently ignored. Set backend: etcd to use it, or remove the cluster.etcd block."
        );
    }

    #[test]
    fn addresses_must_be_host_port() {
        for (peer, says) in [
            (
                "b.internal",
                "cluster.peers[].host must be host:port, got 'b.internal'",
            ),
            ("b:0", "cluster.peers[].host must be host:port, got 'b:0'"),
            (
                "b:65536",
                "cluster.peers[].host must be host:port, got 'b:65536'",
            ),
            ("b:८०", "cluster.peers[].host must be host:port, got 'b:८०'"),
            (":80", "cluster.peers[].host must be host:port, got ':80'"),
            (
                "2001:db8::1",
                "cluster.peers[].host looks like a bare IPv6 address; write it as [ipv6]:port, \
                 got '2001:db8::1'",
            ),
            (
                "[2001:db8::1]",
                "cluster.peers[].host must be [ipv6]:port, got '[2001:db8::1]'",
            ),
            (
                "[]:80",
                "cluster.peers[].host must be [ipv6]:port, got '[]:80'",
            ),
        ] {
            assert_eq!(err(&with_peers(&[peer], "")), says, "{peer}");
        }
        let c = with_peers(&["[2001:db8::1]:8443", "b:65535"], "");
        assert_eq!(gossip_ok(&c).0.peers.len(), 2);
        let c = section("listen: '8443'\ntls: {ca: a, cert: b, key: c}\npeers: []\n");
        assert_eq!(err(&c), "cluster.listen must be host:port, got '8443'");
    }

    #[test]
    fn duplicate_and_self_listed_peers_are_dropped() {
        let c = with_peers(
            &[
                "b:8443",
                "b:8443",
                "node-a:8443",
                "127.0.0.1:8443",
                "[::1]:8443",
                "127.0.0.1:9999",
                "localhost:8443",
                "c:8443",
            ],
            "",
        );
        let (s, _) = gossip_ok(&c);
        // [::1] stays: a 0.0.0.0 bind does not hold the IPv6 loopback.
        assert_eq!(
            s.peers,
            [
                "b:8443",
                "[::1]:8443",
                "127.0.0.1:9999",
                "localhost:8443",
                "c:8443"
            ]
        );
        assert_eq!(s.cluster_size, 6);
        // An exact match of a specific listen address.
        let c = section(
            "listen: '10.0.0.1:8443'\ntls: {ca: a, cert: b, key: c}\nnodeName: node-a\n\
             peers: [{host: '10.0.0.1:8443'}, {host: 'node-a:8443'}, {host: '10.0.0.2:8443'}]\n",
        );
        assert_eq!(gossip_ok(&c).0.peers, ["node-a:8443", "10.0.0.2:8443"]);
    }

    #[test]
    fn election_sizes() {
        let two = with_peers(&["b:1"], "electLeader: true\n");
        assert_eq!(
            err(&two),
            "cluster.electLeader needs a fault-tolerant cluster, but this config declares only 2 \
             nodes (1 peer). A quorum of 2 requires both nodes up for either to run, so it is \
             strictly worse than a single replica. Use 3 or more nodes (an odd count is best), \
             or run a single replica without electLeader."
        );
        // A self entry does not count toward the two.
        let self_listed = with_peers(&["b:1", "node-a:8443"], "electLeader: true\n");
        assert!(err(&self_listed).starts_with("cluster.electLeader needs"));
        // Without election two nodes are fine.
        gossip_ok(&with_peers(&["b:1"], ""));
        let (_, advisories) = gossip_ok(&with_peers(&["b:1", "c:1", "d:1"], "electLeader: true\n"));
        assert_eq!(
            advisories,
            ["cluster.electLeader: an even cluster size (4 nodes) tolerates no more failures than \
              3 (the next-lower odd size); shrink to 3 for the same tolerance with one fewer \
              node, or grow to 5 to tolerate one more failure; prefer an odd size."]
        );
        let (_, advisories) = gossip_ok(&with_peers(&["b:1", "c:1"], "distribution: spread\n"));
        assert_eq!(
            advisories,
            [
                "cluster.distribution='spread' has no effect without electLeader; without leader \
              election every node runs every job."
            ]
        );
        let (_, advisories) = gossip_ok(&with_peers(
            &["node-a.example.com:8443", "c:1"],
            "electLeader: true\n",
        ));
        assert_eq!(
            advisories,
            [
                "cluster.electLeader: 1 peer(s) look like this node listed by FQDN \
              (node-a.example.com:8443) while nodeName is 'node-a'; if so the real cluster is \
              only 2 node(s) and leader election will be degenerate or refused at runtime. List \
              the peer by its exact nodeName, or fix the addresses."
            ]
        );
        let (_, advisories) = gossip_ok(&with_peers(
            &["localhost:8443", "c:1"],
            "electLeader: true\n",
        ));
        assert_eq!(advisories.len(), 1);
        assert!(advisories[0].starts_with(
            "cluster.electLeader: 1 peer(s) are loopback addresses on this node's own port \
             (localhost:8443);"
        ));
    }

    #[test]
    fn observability_rules() {
        assert_eq!(
            err(&with_peers(&["b:1"], "observability: {listen: 'h:2'}\n")),
            "cluster.observability.{listen,tls,peers} is redundant with backend: gossip (the \
             election mesh already carries fleet data); drop them -- an empty `observability:` \
             block, or just `shareNodeStats`, is enough to share node CPU/memory"
        );
        assert_eq!(
            err(&with_peers(&["b:1"], "observability: {interval: 5}\n")),
            "cluster.observability.interval only applies to the overlay mesh a lease backend \
             (kubernetes/etcd/filesystem) stands up; with backend: gossip node stats ride the \
             election mesh, so set cluster.interval instead"
        );
        let (s, _) = gossip_ok(&with_peers(
            &["b:1"],
            "observability: {shareNodeStats: false}\n",
        ));
        assert!(!s.share_node_stats);
        let lease = section(
            "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}}\n",
        );
        assert_eq!(
            err(&lease),
            "cluster.observability requires cluster.observability.peers when backend is \
             'filesystem' (the overlay stands up its own gossip mesh to carry fleet data)"
        );
        let lease = section(
            "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}, peers: [{host: 'bad'}]}\n",
        );
        assert_eq!(
            err(&lease),
            "cluster.peers[].host must be host:port, got 'bad'"
        );
        let lease = section(
            "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}, peers: [{host: 'p:2'}]}\n",
        );
        assert!(matches!(resolve(&lease, "h"), Ok(Resolved::Lease { .. })));
    }
}
