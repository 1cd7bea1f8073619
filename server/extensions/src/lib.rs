//! What extends the agent beyond its built-in tools, each read from files the user (or, in a
//! trusted folder, the repository) wrote: MCP servers' tools, resources and prompts (`mcp`),
//! hooks that run around the loop's steps (`hooks`), skills and their `activate_skill` tool
//! (`skills`), slash commands (`slash`), `@`-mentions that attach files to a prompt
//! (`mentions`), the definitions of subagents (`subagents`; running one is the session's),
//! plugins that bundle all of these (`plugins`: Claude Code plugins, Gemini CLI extensions),
//! and dates without a date crate (`date`).
//!
//! Above the built-in tools and below the session: it may use `tandem-protocol`,
//! `tandem-sandbox`, `tandem-tools` and `tandem-providers`; nothing of sessions or front ends.

pub mod date;
pub mod hooks;
pub mod mcp;
pub mod mentions;
pub mod plugins;
pub mod skills;
pub mod slash;
pub mod subagents;
