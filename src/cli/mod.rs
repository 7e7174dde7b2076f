//! Clients of a running daemon's web listener, over the connection flags
//! every such client shares ([`webclient`]). They need no configuration
//! file and none of the daemon's modules.

pub mod webclient;
