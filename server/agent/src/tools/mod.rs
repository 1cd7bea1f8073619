//! The agent's tools: the built-in ones (the `tandem-tools` crate, named here as before) and
//! the two that need what only the agent has: `activate_skill` (the session's skills) and
//! `subagent` (a child session).

pub use tandem_tools::*;

pub mod activate_skill;
pub mod subagent;
