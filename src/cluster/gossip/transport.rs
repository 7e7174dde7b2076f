//! The gossip backend's transport: the mutual-TLS `GET /peer` listener
//! ([`PeerListener`]) and the client that polls the peers
//! ([`PeerPoller`]). It moves opaque payload bytes with their strong ETag;
//! what the bytes mean belongs to the payload and view modules.
//!
//! The trust boundary is the cluster CA: the listener refuses a handshake
//! without a client certificate that chains to it, and the poller accepts a
//! peer only when its certificate chains to the same CA and names the host
//! the peer was reached at (a DNS name, or an IP address SAN for an IP
//! host). Everything a peer sends is still untrusted input, so both sides
//! bound what they hold: per-connection time, concurrent connections and
//! request size on the listener; connect and whole-request timeouts and the
//! response size (compressed and decompressed) on the poller.
//!
//! Both sides read their CA, certificate and key through one
//! [`TlsMaterial`], which notices an in-place renewal of the files and
//! switches to the new material without a restart (see [`material`]).

pub mod listener;
pub mod material;
pub mod poller;
mod wire;

pub use listener::{ListenerLimits, PeerListener, PeerProvider};
pub use material::{TlsMaterial, TlsPaths};
pub use poller::{PeerPoller, PollTimeouts};

use std::path::PathBuf;
use std::sync::Arc;

/// Why the gossip transport could not start (the manager then does not
/// start either). `Display` is the text of the `cluster: failed to start:`
/// line and of the TLS re-read warnings: it names the config key and the
/// file.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A TLS file could not be read.
    #[error("cannot read cluster.tls.{key} {}: {source}", .path.display())]
    Read {
        /// `ca`, `cert` or `key`.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A TLS file was read but its contents are refused.
    #[error("cluster.tls.{key} {}: {reason}", .path.display())]
    Material {
        /// `ca`, `cert` or `key`.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The certificate and the key do not make a TLS identity together.
    #[error("cluster.tls.cert/cluster.tls.key: {0}")]
    CertAndKey(rustls::Error),
    /// The TLS library refused its own protocol settings.
    #[error("{0}")]
    Protocols(rustls::Error),
    /// The HTTP client that polls the peers could not be built.
    #[error("cannot build the cluster HTTP client: {0}")]
    HttpClient(reqwest::Error),
    /// `cluster.listen` could not be bound.
    #[error("cannot listen on cluster.listen {listen}: {source}")]
    Bind {
        /// `cluster.listen` as configured.
        listen: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The bound socket's address could not be read.
    #[error("cluster.listen {listen}: {source}")]
    LocalAddr {
        /// `cluster.listen` as configured.
        listen: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// The most a `/peer` body may weigh, before and after gzip: what the
/// poller accepts from a peer (and so what a node should keep its own body
/// under, or its peers drop it from their quorum).
pub const MAX_PEER_RESPONSE_BYTES: usize = 256 * 1024;

/// Bodies at least this large are gzip-compressed for a client that
/// accepts it; below it the CPU spent outweighs the bytes saved.
pub const MIN_COMPRESS_BYTES: usize = 1024;

/// The longest ETag the poller keeps from a peer (it is echoed back every
/// round, so a hostile peer must not choose how much we store and send).
pub const MAX_PEER_ETAG_LEN: usize = 128;

/// What the listener serves for one `GET /peer`: the payload bytes
/// (JSON, uncompressed) and their strong, quoted ETag (for example
/// `"3f2a…"`), a hash of the change-relevant content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerBody {
    /// The payload, uncompressed.
    pub bytes: Arc<[u8]>,
    /// The strong ETag, with its quotes. One that is not a valid strong
    /// tag is not sent (and then no request is answered `304`).
    pub etag: String,
}

/// What one poll of a peer found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollOutcome {
    /// A full body (decompressed) with the peer's ETag, when it sent a
    /// usable one.
    Body {
        /// The payload bytes, at most [`MAX_PEER_RESPONSE_BYTES`].
        bytes: Vec<u8>,
        /// The peer's ETag (at most [`MAX_PEER_ETAG_LEN`] bytes), to send
        /// back as `If-None-Match` next round.
        etag: Option<String>,
    },
    /// `304 Not Modified` to the `If-None-Match` we sent: the peer's
    /// payload is the one cached under that tag. A fresh, mutually
    /// authenticated round trip all the same.
    NotModified,
    /// The peer could not be contacted: refused, reset, name resolution,
    /// or a timeout (connect or whole request).
    Unreachable(String),
    /// TLS or certificate verification failed (the peer's certificate does
    /// not chain to the CA or does not name the host, or it refused ours).
    Untrusted(String),
    /// The peer answered, but not with something usable: an oversized
    /// body, an unexpected status, bad gzip, an unsolicited `304`.
    Invalid(String),
}
