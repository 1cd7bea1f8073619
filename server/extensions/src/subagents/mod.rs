//! Subagents: child sessions the `subagent` tool runs for the parent, each with its own
//! history, system prompt, restricted tools, turn limit and deadline, answering with one report.
//! `definition` says what an agent is (the built-in `codebase_investigator` and Claude Code's
//! tool names), `load` finds the custom agents' Markdown files. Running one is the session's
//! (`tandem-session`'s `subagent` module).
//! See docs/subagents.md.

mod definition;
mod load;

pub use definition::{codebase_investigator, tool_names, AgentDefinition, AgentSource};
pub use load::{AgentDirs, AgentSet, MAX_AGENT_FILE_BYTES};
