//! MCP servers: their settings (`config.rs`, the `mcpServers` key).

pub mod config;

pub use config::{Endpoint, McpServerSettings, McpTransport};
