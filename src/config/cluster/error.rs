//! Why a `cluster` section is refused. One variant per rule of the
//! Clustering page; `Display` is the page's message word for word, because
//! the loader shows it to the user after the file and line (and the
//! black-box tests compare it).

use crate::pyfmt::py_float;

/// A `cluster` section that breaks a load-time rule. The loader wraps it
/// in a config error located at the section.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClusterConfigError {
    /// A count of seconds that must be positive (`connectTimeout`,
    /// `interval`, also under `observability`) is zero or negative.
    #[error("cluster.{key} must be > 0")]
    NotPositive {
        /// The key, without the `cluster.` prefix.
        key: &'static str,
    },
    /// `driftAfter` (or `observability.driftAfter`) is below 1.
    #[error("cluster.driftAfter must be >= 1")]
    DriftAfterBelowOne,
    /// A store block for a backend other than the chosen one.
    #[error(
        "cluster.{block} is configured but cluster.backend is '{backend}'; that store \
         block would be silently ignored. Set backend: {block} to use it, or remove the \
         cluster.{block} block."
    )]
    ForeignStoreBlock {
        /// The block present (`kubernetes`, `etcd`, `filesystem`).
        block: &'static str,
        /// The backend chosen.
        backend: &'static str,
    },
    /// `distribution: spread` with a lease backend.
    #[error(
        "cluster.distribution: spread is not supported with the '{backend}' backend (a \
         single lease holder cannot fan jobs out per-node); use distribution: single-leader, \
         or the gossip backend"
    )]
    SpreadWithLease {
        /// The lease backend chosen.
        backend: &'static str,
    },

    /// A gossip transport key is missing.
    #[error("cluster.backend gossip requires cluster.{key}")]
    GossipRequires {
        /// `listen`, `tls` or `peers`.
        key: &'static str,
    },
    /// A file of `cluster.tls` is missing.
    #[error("cluster.tls requires cluster.tls.{key}")]
    TlsRequires {
        /// `ca`, `cert` or `key`.
        key: &'static str,
    },
    /// An address starting with `[` is not `[ipv6]:port`.
    #[error("cluster.{key} must be [ipv6]:port, got {}", py_repr(.value))]
    BracketedAddress {
        /// `listen` or `peers[].host`.
        key: &'static str,
        /// The address as written.
        value: String,
    },
    /// An unbracketed IPv6 address, where the port cannot be told apart.
    #[error(
        "cluster.{key} looks like a bare IPv6 address; write it as [ipv6]:port, got {}",
        py_repr(.value)
    )]
    BareIpv6 {
        /// `listen` or `peers[].host`.
        key: &'static str,
        /// The address as written.
        value: String,
    },
    /// An address that is not `host:port` with a port of 1-65535.
    #[error("cluster.{key} must be host:port, got {}", py_repr(.value))]
    HostPort {
        /// `listen` or `peers[].host`.
        key: &'static str,
        /// The address as written.
        value: String,
    },
    /// `electLeader` with exactly two nodes.
    #[error(
        "cluster.electLeader needs a fault-tolerant cluster, but this config declares \
         only 2 nodes (1 peer). A quorum of 2 requires both nodes up for either to \
         run, so it is strictly worse than a single replica. Use 3 or more nodes (an \
         odd count is best), or run a single replica without electLeader."
    )]
    TwoNodeElection,
    /// `observability` repeats the transport under `backend: gossip`.
    #[error(
        "cluster.observability.{{listen,tls,peers}} is redundant with backend: \
         gossip (the election mesh already carries fleet data); drop them -- \
         an empty `observability:` block, or just `shareNodeStats`, is enough \
         to share node CPU/memory"
    )]
    RedundantObservabilityMesh,
    /// An overlay-mesh key under `observability` with `backend: gossip`.
    #[error(
        "cluster.observability.{key} only applies to the overlay mesh a lease \
         backend (kubernetes/etcd/filesystem) stands up; with backend: gossip \
         node stats ride the election mesh, so set cluster.{key} instead"
    )]
    OverlayKeyWithGossip {
        /// `nodeName`, `interval`, `driftAfter` or `connectTimeout`.
        key: &'static str,
    },
    /// A lease backend's `observability` block lacks a transport key.
    #[error(
        "cluster.observability requires cluster.observability.{key} when backend is \
         '{backend}' (the overlay stands up its own gossip mesh to carry fleet \
         data)"
    )]
    ObservabilityRequires {
        /// `listen`, `tls` or `peers`.
        key: &'static str,
        /// The lease backend chosen.
        backend: &'static str,
    },

    /// `kubernetes.leaseName` is not an RFC 1123 subdomain.
    #[error(
        "cluster.kubernetes.leaseName must be a valid RFC1123 name (lowercase alphanumeric, \
         '-' or '.', <= 253 chars); got '{0}'"
    )]
    LeaseName(String),
    /// `kubernetes.leaseNamespace` is not an RFC 1123 label.
    #[error(
        "cluster.kubernetes.leaseNamespace must be a valid RFC1123 label (lowercase \
         alphanumeric or '-', <= 63 chars); got '{0}'"
    )]
    LeaseNamespace(String),
    /// `kubernetes.apiServer` is not https (the URL shown without its
    /// user information).
    #[error(
        "cluster.kubernetes.apiServer must be an https:// URL so the ServiceAccount \
         bearer token is not sent in cleartext; got '{0}'"
    )]
    ApiServerNotHttps(String),
    /// `kubernetes.renewDeadlineSeconds` is zero or negative.
    #[error("cluster.kubernetes.renewDeadlineSeconds must be > 0")]
    RenewDeadlineNotPositive,
    /// The lease would expire before its holder's renew deadline.
    #[error(
        "cluster.kubernetes.leaseDurationSeconds ({duration}) must be greater than \
         renewDeadlineSeconds ({renew})"
    )]
    DurationNotAboveRenew {
        /// `leaseDurationSeconds`.
        duration: i64,
        /// `renewDeadlineSeconds`.
        renew: i64,
    },
    /// `kubernetes.retryPeriodSeconds` is zero or negative.
    #[error("cluster.kubernetes.retryPeriodSeconds must be > 0")]
    RetryNotPositive,
    /// A holder could not renew within its renew window.
    #[error(
        "cluster.kubernetes.retryPeriodSeconds ({retry}) must be less than \
         renewDeadlineSeconds ({renew}): a holder must be able to renew within the renew \
         window before the next retry, or it lapses out of the lease every cycle and no \
         Leader job runs stably"
    )]
    RetryNotBelowRenew {
        /// `retryPeriodSeconds`.
        retry: i64,
        /// `renewDeadlineSeconds`.
        renew: i64,
    },
    /// The worst-case gap between renewals outlives the lease.
    #[error(
        "cluster.kubernetes: renewDeadlineSeconds ({renew}) + retryPeriodSeconds ({retry}) \
         must be less than leaseDurationSeconds ({duration}); otherwise the worst-case gap \
         between lease renewals exceeds the lease lifetime and the holder lapses out of the \
         lease every cycle, so no Leader job runs stably"
    )]
    RenewalGapOutlivesLease {
        /// `renewDeadlineSeconds`.
        renew: i64,
        /// `retryPeriodSeconds`.
        retry: i64,
        /// `leaseDurationSeconds`.
        duration: i64,
    },

    /// An etcd or filesystem `ttl` under 3 seconds (or not finite).
    #[error(
        "{key} must be >= 3 seconds (the leader holds the lease only until ttl minus a \
         clock-skew margin and renews every max(1s, ttl/3); a smaller ttl makes a node that wins \
         the election immediately treat its own lease as expired, so no Leader job ever runs); \
         got {}",
        py_float(*.ttl)
    )]
    TtlTooShort {
        /// The full key (`cluster.etcd.ttl`, `cluster.filesystem.ttl`).
        key: &'static str,
        /// The value given.
        ttl: f64,
    },
    /// `etcd.endpoints: []`.
    #[error("cluster.etcd.endpoints must list at least one URL")]
    NoEtcdEndpoints,
    /// An endpoint URL carries `user@` (shown redacted).
    #[error(
        "cluster.etcd.endpoints must not embed credentials in the URL (userinfo@host); \
         use cluster.etcd.username/password instead, got '{0}'"
    )]
    EndpointCredentials(String),
    /// An endpoint is not `http(s)://host[:port]` (shown redacted).
    #[error("cluster.etcd.endpoints must be http(s)://host[:port], got '{0}'")]
    EndpointShape(String),
    /// Only one of `etcd.tls.cert` and `etcd.tls.key`.
    #[error(
        "cluster.etcd.tls.cert and cluster.etcd.tls.key must be set together (a client \
         certificate needs its private key); got cert={}, key={}",
        py_bool(*.cert),
        py_bool(*.key)
    )]
    CertWithoutKey {
        /// `cert` is set.
        cert: bool,
        /// `key` is set.
        key: bool,
    },
    /// TLS files with only plain-HTTP endpoints.
    #[error(
        "cluster.etcd.tls is configured but no endpoint is https:// , so the TLS material \
         would be ignored and traffic sent in cleartext; use https:// endpoints or remove \
         cluster.etcd.tls"
    )]
    TlsWithoutHttps,
    /// `etcd.username` with no password source.
    #[error(
        "cluster.etcd.username is set but no password is configured; set \
         cluster.etcd.password (value/fromFile/fromEnvVar)"
    )]
    UsernameWithoutPassword,
    /// Credentials with plain-HTTP endpoints (listed redacted).
    #[error(
        "cluster.etcd: authentication (username/password) requires https:// endpoints \
         so credentials are not sent in cleartext, but these endpoints are plaintext: {}",
        .0.join(", ")
    )]
    CredentialsInCleartext(Vec<String>),

    /// `filesystem.path` is missing or blank.
    #[error("cluster.filesystem.path is required and must be non-empty")]
    FilesystemPath,
    /// `filesystem.electionName` is blank.
    #[error("cluster.filesystem.electionName must be non-empty")]
    FilesystemElectionName,
}

/// Python's `repr` of a string (quotes and escapes as the original's
/// f-string `{addr!r}` prints them); the advisories use it too.
pub(super) fn py_repr(text: &str) -> String {
    crate::pyfmt::py_repr(&minijinja::Value::from(text))
}

/// Python's spelling of a boolean, as the original's message prints it.
fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}
