//! Clients of a running daemon's web listener: `cronstable mcp`, the MCP
//! stdio bridge, and what every such client shares (the connection flags
//! and the HTTP client of [`webclient`]). They need no configuration file
//! and none of the daemon's modules.

pub mod mcp;
pub mod webclient;
