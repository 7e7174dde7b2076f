//! The gossip backend's pure core: the `/peer` attestation payload
//! ([`payload`]), the per-peer table and the decisions drawn from it
//! ([`view`]), the election rules ([`elect`]) and the fleet view built
//! from the job summaries peers send ([`fleet`]). Nothing here does I/O:
//! the backend in `cluster::gossip` (the mutual-TLS transport and the
//! manager behind the leader gate) feeds bytes and observations in and
//! reads decisions back. It sits low in the layers so the state the
//! manager publishes (a snapshot of the view) can be held by the metrics
//! and read by the gate and `GET /cluster` alike.
//!
//! The model: every node lists every other node, polls each one's `/peer`
//! every `interval` seconds, and compares job-set ids. A node is quorate
//! while it and the peers it mutually agrees with are a strict majority of
//! the cluster; a quorate node runs `Leader` jobs if it is the lowest
//! eligible name (single-leader) or the rendezvous owner of the job
//! (spread), unless a duplicate name, a differing cluster size or a
//! differing policy is visible, which stands `Leader` jobs down.

pub mod elect;
pub mod fleet;
pub mod payload;
pub mod view;

pub use payload::{decode, encode, etag, DecodeError, PeerPayload};
pub use view::{ClusterView, GossipView, Identity, Observation, Stamp, Status};
