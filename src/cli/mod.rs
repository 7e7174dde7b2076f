//! Clients of a running daemon's web listener: `cronstable mcp`, the MCP
//! stdio bridge, over the connection flags every such client shares
//! ([`webclient`]). They need no configuration file and none of the
//! daemon's modules.

pub mod mcp;
pub mod webclient;
