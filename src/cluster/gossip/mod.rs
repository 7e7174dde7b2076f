//! The gossip backend: [`transport`] is its I/O (the mutual-TLS `/peer`
//! listener and the poller, moving raw bodies and classified outcomes)
//! and [`manager`] joins it to the pure core in `crate::gossip` behind the
//! scheduler's leader gate: it serves this node's body, polls the peers
//! every `interval` and publishes the view's snapshot.

pub mod manager;
pub mod transport;
