//! The gossip backend (issue 15).

pub mod transport;
