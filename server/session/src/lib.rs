//! The agent loop and what it keeps. `session` runs turns: it calls the model, schedules the
//! tool calls (read-only ones in parallel, approvals where the policy says), runs hooks, slash
//! commands and compression, and records the conversation. Around it: `compress` (summarising
//! a long history), `memory` (the memory files in the system prompt), `store` (saved sessions),
//! `checkpoint` (undoing the agent's file changes), `ide` (the editor's state each turn hears
//! of), `prompt` and `environment` (the system prompt and the first message), `next_speaker`,
//! `tokens` (estimates), `date`, and `subagent` (the `subagent` tool and its child sessions).
//!
//! Above the tools and extensions, below the host: it may use `tandem-protocol`,
//! `tandem-sandbox`, `tandem-tools`, `tandem-extensions` and `tandem-providers`; nothing of front
//! ends, completions or the settings file (each setting it takes comes as a value).

pub mod checkpoint;
pub mod compress;
pub mod environment;
pub mod ide;
mod images;
pub mod memory;
pub mod next_speaker;
pub mod prompt;
pub mod session;
pub mod store;
pub mod subagent;
pub mod tokens;

pub use ide::IdeState;
pub use session::{AgentConfig, Prompt, Session, TurnIo};
/// Dates live below, with the hooks that stamp them too.
pub use tandem_extensions::date;
