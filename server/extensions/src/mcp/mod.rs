//! MCP (Model Context Protocol) servers: the tools, prompts and resources of the servers the
//! user configured (`mcpServers`), for the agent and the front ends.
//!
//! - `config.rs` — the settings of one server (`McpServerSettings`), as Gemini CLI and Claude
//!   Code write them; `expand.rs` replaces `$VAR`/`${VAR:-default}` in them at start;
//!   `imported.rs` reads the servers Claude Code's and Gemini CLI's own files configure.
//! - `manager.rs` — `McpManager`, one per session host: `apply` starts, stops and restarts
//!   servers in the background to match the settings; `statuses`, `wait_settled`, `shutdown`;
//!   a server whose connection drops is marked failed and restarted on its next use.
//!   `start.rs` is the task that starts one server.
//! - `requests.rs` — what the manager offers while servers run: `tools()` (the servers' tools
//!   as `Tool`s, and the two resource tools), `prompts`/`get_prompt`, `resources`/
//!   `read_resource`; every request bounded by the server's `timeout`, cancellable, with
//!   progress.
//! - `connect.rs` — one connection by transport: `process.rs` (a program over stdio, in its own
//!   process group, with its stderr kept), rmcp's streamable HTTP, and `sse.rs` (the older
//!   HTTP+SSE, which rmcp has no client for); `client.rs` is Tandem's side of the protocol
//!   (roots, progress, list changes).
//! - `tool.rs` — `McpTool`; `names.rs` — `mcp__<server>__<tool>` names; `content.rs` — results
//!   as text; `list_resources.rs` and `read_resource.rs` — the resource tools.
//! - `types.rs` — the plain data of the API; `error.rs` — `McpError`.
//!
//! Provider-specific schema rules (Gemini's subset of JSON Schema) live in `tandem-providers`'
//! `schema.rs`; a tool's schema here is only made safe for every provider.

mod client;
pub mod config;
mod connect;
mod content;
mod error;
mod expand;
pub mod imported;
pub mod list_resources;
mod manager;
pub mod names;
mod process;
pub mod read_resource;
mod requests;
mod sse;
mod start;
mod tool;
mod types;

pub use config::{Endpoint, McpServerSettings, McpTransport};
pub use error::{McpError, Result};
pub use manager::{McpManager, StartWait, DEFAULT_TIMEOUT, START_LIMIT};
pub use tool::McpTool;
pub use types::{
    McpPrompt, McpPromptArgument, McpPromptMessage, McpResource, McpResourceTemplate, McpRole,
    McpServerState, McpServerStatus, McpStartContext, McpToolStatus,
};
