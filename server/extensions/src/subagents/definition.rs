//! What a subagent is: a name and description the parent chooses by, a system prompt, the
//! tools it may use and the model it runs on. The built-in `codebase_investigator`, and the
//! mapping from Claude Code's tool names to Tandem's for the custom agents' `tools` lists.

use std::path::PathBuf;

/// Where an agent comes from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AgentSource {
    BuiltIn,
    User,
    Project,
    /// An installed plugin's (`tandem plugins`); named `<plugin>:<agent>`.
    Plugin,
}

/// One agent the `subagent` tool offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    pub name: String,
    /// What the parent model reads to choose it.
    pub description: String,
    pub system_prompt: String,
    /// Tandem tool names; `None`: every tool of the parent but `subagent`.
    pub tools: Option<Vec<String>>,
    /// A model from the settings' `models`; `None`: the parent's.
    pub model: Option<String>,
    pub source: AgentSource,
    /// The definition's file (`None` for the built-in one).
    pub path: Option<PathBuf>,
}

/// The read-only tools the built-in investigator gets.
const INVESTIGATOR_TOOLS: &[&str] = &[
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "grep",
    "outline",
    "find_symbol",
    "references",
    "repo_map",
];

const INVESTIGATOR_PROMPT: &str = "\
You are a codebase investigator, working for another agent that gave you one task. Explore the \
workspace with your read-only tools (repo_map, grep, glob, outline, find_symbol, references, \
read_file) until you can answer it; you cannot change anything. Be efficient: search before \
reading, read only the parts that matter, and stop as soon as you know enough.

Your final message is the only thing the other agent sees. Make it a concise report: the \
answer first, then the findings that support it, each with its `path:line` reference, and \
anything you could not establish. Do not paste whole files; quote only the few lines that \
matter.";

/// The built-in read-only investigator.
pub fn codebase_investigator() -> AgentDefinition {
    AgentDefinition {
        name: "codebase_investigator".to_owned(),
        description: "Explores the codebase read-only (search, read, outline, references, repo \
                      map) to answer a question, and reports its findings with path:line \
                      references; use it for exploration that would otherwise fill your \
                      context."
            .to_owned(),
        system_prompt: INVESTIGATOR_PROMPT.to_owned(),
        tools: Some(
            INVESTIGATOR_TOOLS
                .iter()
                .map(|&tool| tool.to_owned())
                .collect(),
        ),
        model: None,
        source: AgentSource::BuiltIn,
        path: None,
    }
}

/// The Tandem tool names for one entry of a `tools` list: a Claude Code name (`Read`, with or
/// without a rule in parentheses such as `Bash(git status:*)`) is mapped, a Tandem name taken as
/// is. `None` for a Claude Code tool Tandem has no counterpart of.
pub fn tool_names(entry: &str) -> Option<Vec<&'static str>> {
    let name = entry.split('(').next().unwrap_or(entry).trim();
    let mapped: &[&'static str] = match name {
        "Read" => &["read_file", "read_many_files"],
        "Grep" => &["grep"],
        "Glob" => &["glob"],
        "LS" => &["list_directory"],
        "Bash" => &["shell"],
        "Edit" | "MultiEdit" => &["edit"],
        "Write" => &["write_file"],
        "WebFetch" => &["web_fetch"],
        "TodoWrite" => &["write_todos"],
        _ => return None,
    };
    Some(mapped.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_tool_names_map_to_tandem_tools() {
        let cases: &[(&str, Option<&[&str]>)] = &[
            ("Read", Some(&["read_file", "read_many_files"])),
            ("Grep", Some(&["grep"])),
            ("Glob", Some(&["glob"])),
            ("LS", Some(&["list_directory"])),
            ("Bash(git status:*)", Some(&["shell"])),
            ("Edit", Some(&["edit"])),
            ("MultiEdit", Some(&["edit"])),
            ("Write", Some(&["write_file"])),
            ("WebFetch", Some(&["web_fetch"])),
            ("TodoWrite", Some(&["write_todos"])),
            ("read_file", None),
            ("NotebookEdit", None),
        ];
        for (entry, expected) in cases {
            assert_eq!(tool_names(entry), expected.map(<[&str]>::to_vec), "{entry}");
        }
    }
}
