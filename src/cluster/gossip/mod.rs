//! The gossip backend's pure core: the `/peer` attestation payload
//! ([`payload`]), the per-peer table and the decisions drawn from it
//! ([`view`]), and the election rules ([`elect`]). Nothing here does I/O;
//! the mTLS listener and poller feed bytes and observations in and read
//! decisions back.
//!
//! [`transport`] is that I/O: the mutual-TLS `/peer` listener and the
//! poller, moving raw bodies and classified outcomes. [`manager`] joins
//! them behind the scheduler's leader gate: it serves this node's body,
//! polls the peers every `interval` and publishes the view's snapshot.
//!
//! The model: every node lists every other node, polls each one's `/peer`
//! every `interval` seconds, and compares job-set ids. A node is quorate
//! while it and the peers it mutually agrees with are a strict majority of
//! the cluster; a quorate node runs `Leader` jobs if it is the lowest
//! eligible name (single-leader) or the rendezvous owner of the job
//! (spread), unless a duplicate name, a differing cluster size or a
//! differing policy is visible, which stands `Leader` jobs down.

pub mod elect;
pub mod manager;
pub mod payload;
pub mod transport;
pub mod view;

pub use payload::{decode, encode, etag, DecodeError, PeerPayload};
pub use view::{ClusterView, GossipView, Identity, Observation, Stamp, Status};
