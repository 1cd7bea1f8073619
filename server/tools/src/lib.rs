//! The agent's built-in tools, one module each with its argument struct, schema, handler and
//! tests, and their registry (`all`). What a tool is and what it gets is `tool.rs`; beside the
//! tools, what they share: the symbol index's upkeep (`symbols`), parsed files kept between
//! edits (`syntax_cache`), the language servers an edit's errors come from
//! (`language_servers`) and three-way merges of the user's edits (`merge`).
//!
//! Below the extensions and the session: it may use `tandem-protocol`, `tandem-sandbox`,
//! `tandem-syntax` and `tandem-providers`; nothing of sessions, MCP, skills or front ends. The
//! tools that need those live with what they need: `activate_skill` in `tandem-extensions`,
//! `subagent` in `tandem-session`. The tools import their interface from `tool.rs`, never
//! through this file, which imports them all.

use std::sync::Arc;

pub mod diagnostics;
pub mod edit;
pub mod find_symbol;
pub mod glob;
pub mod grep;
pub mod list_directory;
pub mod outline;
pub mod read_file;
pub mod read_many_files;
pub mod references;
pub mod repo_map;
pub mod save_memory;
pub mod shell;
mod tool;
mod user_edits;
pub mod view_image;
pub mod web_fetch;
pub mod write_file;
pub mod write_todos;

pub mod language_servers;
pub mod merge;
pub mod symbols;
mod syntax_cache;

// Data the front ends see; defined with the protocol, named here too where tools use them.
pub use tandem_protocol::{FileDiff, Location, Todo, TodoStatus, ToolKind};
pub use tool::*;
pub use user_edits::MAX_STALE_RETRIES;

/// Every tool, in the order they are declared to the model.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile),
        Arc::new(read_many_files::ReadManyFiles),
        Arc::new(list_directory::ListDirectory),
        Arc::new(glob::Glob),
        Arc::new(grep::Grep),
        Arc::new(outline::Outline),
        Arc::new(find_symbol::FindSymbol),
        Arc::new(references::References),
        Arc::new(repo_map::RepoMap),
        Arc::new(edit::Edit),
        Arc::new(write_file::WriteFile),
        Arc::new(diagnostics::Diagnostics),
        Arc::new(shell::Shell),
        Arc::new(write_todos::WriteTodos),
        Arc::new(save_memory::SaveMemory),
        Arc::new(web_fetch::WebFetch),
        Arc::new(view_image::ViewImage),
    ]
}

#[cfg(any(test, feature = "test-support"))]
#[allow(dead_code)] // Until every tool's tests use all of it.
#[allow(clippy::unwrap_used, clippy::expect_used)] // Test code, also outside `cfg(test)`.
pub mod testing;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn every_tool_has_a_unique_name_an_object_schema_and_a_description() {
        let tools = all();
        let mut names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for tool in tools {
            assert_eq!(tool.parameters()["type"], "object", "{}", tool.name());
            assert!(tool.description().len() > 40, "{}", tool.name());
            assert!(!tool.title(&Value::Null).is_empty(), "{}", tool.name());
        }
    }
}
