//! `tandem-agent`'s integration tests, one binary (each module was a test binary of its own; one
//! binary links once): the loop driven by replay scripts and scripted tools (`agent_loop`),
//! slash commands (`commands`), what each request carries (`context`), MCP against the reference
//! server (`mcp`), and switching models mid-session (`model_switch`).

mod agent_loop;
mod commands;
mod context;
mod mcp;
mod model_switch;
