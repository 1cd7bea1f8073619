//! Running subagents: the `subagent` tool (`tool`) hands a task to a child session (`child`)
//! and returns its report. What an agent is and where custom ones are found is
//! `tandem-extensions`' `subagents`. See docs/subagents.md.

mod child;
mod tool;

pub use child::{run_child, ChildReport, SubagentSettings};
pub use tool::Subagent;
