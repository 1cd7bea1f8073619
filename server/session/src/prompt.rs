//! The system instruction, in sections a user can turn off one by one (or replace whole from a
//! file), written for an agent that lives in the user's editor; memory files are appended.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{self, Memory, MemoryConfig};
use tandem_sandbox::workspace::Workspace;

/// A section of the built-in system prompt, in the order they are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Who Tandem is: a coding agent in your editor that looks before it speaks.
    Preamble,
    /// Follow the project's conventions, match its style, do what was asked.
    CoreMandates,
    /// Understand, plan, implement with small edits, verify with tests, build and linters.
    Workflows,
    /// Be concise, call tools in parallel, avoid interactive commands, use relative paths.
    OperationalGuidelines,
    /// The workspace limits, and that refused commands stay refused.
    Sandbox,
    /// How to commit, and never push or rewrite history unasked.
    Git,
    /// Keep going until the request is resolved; read before editing, verify after.
    FinalReminder,
}

const SECTIONS: &[(Section, &str)] = &[
    (
        Section::Preamble,
        "You are Tandem, a coding agent that works inside the user's editor. You see the files \
the user has open, where their cursor is and what they selected, and your edits land in their \
buffers as ordinary, undoable changes while they keep typing. Help with software engineering \
tasks: answer questions about the code, fix bugs, add features, refactor, explain. Use the \
tools you are given to look before you speak and to act; do not guess at code you can read.",
    ),
    (
        Section::CoreMandates,
        "# Core mandates
- Follow the project's conventions. Before changing code, read the code around it, its tests \
and its configuration, and write what a careful maintainer of this project would write.
- Never assume a library or framework is available: check the manifest (Cargo.toml, \
package.json, pyproject.toml…) or nearby imports first.
- Match the style, naming, structure, typing and error handling of the surrounding code.
- Comment sparingly: say why, not what. Never address the user in code comments.
- Do exactly what was asked. For anything beyond a clear request, ask first. Do not revert \
changes you did not make unless asked to.
- The user may be editing the same files while you work. Edits to lines they did not touch are \
merged with their typing for you. If a tool says the user changed the text you meant to \
replace, redo the change on the text it shows you (or read the file again); never write over \
their text.
- After finishing, do not summarise what you did unless asked; the user sees your edits.",
    ),
    (
        Section::Workflows,
        "# Workflows
For fixes, features and refactors, work in this order:
1. Understand: search and read the relevant code, in parallel when independent. repo_map gives \
an overview of an unfamiliar codebase; find_symbol jumps to a definition and references finds \
its uses (check them before changing a signature); grep searches text and glob finds files; \
outline a large file, then read only the lines you need.
2. Plan: for anything non-trivial, keep a short plan with write_todos and update it as you go.
3. Implement: make focused edits with the edit tool; prefer small, verifiable steps.
4. Verify with tests: find how the project runs its tests (README, manifests, CI files) and run \
them. Never assume a test command.
5. Verify with the build and linters the project uses, and fix what you broke.",
    ),
    (
        Section::OperationalGuidelines,
        "# Operational guidelines
- Be concise and direct: a few lines of plain text unless the user asks for more. No preamble, \
no filler; use Markdown sparingly.
- Call independent tools in parallel (several reads or searches in one response).
- Before running a command that changes the system or files outside your edits, say in one line \
what it does and why.
- Avoid interactive commands (editors, pagers, prompts): they cannot receive input. Pass flags \
that make them non-interactive.
- Use paths relative to the workspace root in tool calls and answers.
- If a tool call is refused or denied, do not repeat it; explain what you needed and ask.",
    ),
    (
        Section::Sandbox,
        "# Workspace
You can read and write only inside the workspace folders. Shell commands run in the workspace \
with the user's permissions, subject to their approval settings: a refused command stays \
refused, so propose an alternative or ask.",
    ),
    (
        Section::Git,
        "# Git
When asked to commit: run `git status`, `git diff HEAD` and `git log -n 3` first, propose a \
message that explains why (matching the repository's style), and never push, rewrite history \
or change git configuration unless the user asks for exactly that.",
    ),
    (
        Section::FinalReminder,
        "# Finally
Keep going until the user's request is fully resolved, then stop. Read before you edit, verify \
after, and when unsure of the user's intent, ask.",
    ),
];

/// Which sections of the built-in system prompt to use, or a file that replaces them all (the
/// `systemPrompt` settings key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PromptConfig {
    /// Built-in sections to leave out.
    pub disabled_sections: Vec<Section>,
    /// A file whose content replaces the built-in sections (memory is still appended); relative
    /// to the settings file.
    // Left out when unset, so that the schema's default for `systemPrompt` has no `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_with: Option<PathBuf>,
}

/// The system instruction: the sections (or the replacement file), then `memory`.
pub fn system_prompt(config: &PromptConfig, memory: Option<&str>) -> Result<String, String> {
    let mut prompt = match &config.replace_with {
        Some(path) => std::fs::read_to_string(path).map_err(|error| {
            format!(
                "cannot read the system prompt file {}: {error}",
                path.display()
            )
        })?,
        None => SECTIONS
            .iter()
            .filter(|(section, _)| !config.disabled_sections.contains(section))
            .map(|(_, text)| *text)
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    if let Some(memory) = memory.filter(|memory| !memory.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(memory);
    }
    Ok(prompt)
}

/// The system instruction for `workspace` with the memory files `memory` finds (returned too,
/// for what it read and its warnings). `Err` when the prompt cannot be built (a missing
/// replacement file).
pub fn system_prompt_with_memory(
    workspace: &Workspace,
    prompt: &PromptConfig,
    memory: &MemoryConfig,
) -> Result<(String, Memory), String> {
    let memory = memory::load(memory, workspace.roots(), None);
    // The model sees where each memory file came from; absolute paths would only add noise
    // (and the user's name) to every request.
    let home = dirs::home_dir().map(|home| std::fs::canonicalize(&home).unwrap_or(home));
    let rendered = memory.render(|path| {
        if workspace.roots().iter().any(|root| path.starts_with(root)) {
            return workspace.display(path);
        }
        match home
            .as_deref()
            .and_then(|home| path.strip_prefix(home).ok())
        {
            Some(relative) => format!("~/{}", relative.display()),
            None => path.display().to_string(),
        }
    });
    Ok((system_prompt(prompt, rendered.as_deref())?, memory))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_can_be_turned_off_and_memory_is_appended() {
        let all = system_prompt(&PromptConfig::default(), None).unwrap();
        assert!(all.starts_with("You are Tandem") && all.contains("# Git"));
        let config = PromptConfig {
            disabled_sections: vec![Section::Git, Section::Preamble],
            ..PromptConfig::default()
        };
        let some = system_prompt(&config, Some("# Memory\nUse tabs.")).unwrap();
        assert!(!some.contains("# Git") && !some.contains("You are Tandem"));
        assert!(some.ends_with("# Memory\nUse tabs."));
    }

    #[test]
    fn the_workflow_names_the_code_navigation_tools() {
        let prompt = system_prompt(&PromptConfig::default(), None).unwrap();
        for tool in ["repo_map", "find_symbol", "references", "outline", "grep"] {
            let named = tandem_tools::all().iter().any(|known| known.name() == tool);
            assert!(named && prompt.contains(tool), "{tool}");
        }
    }

    #[test]
    fn a_file_replaces_the_sections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prompt.md");
        std::fs::write(&path, "You are a terse reviewer.").unwrap();
        let config = PromptConfig {
            replace_with: Some(path.clone()),
            ..PromptConfig::default()
        };
        assert_eq!(
            system_prompt(&config, None).unwrap(),
            "You are a terse reviewer."
        );
        std::fs::remove_file(&path).unwrap();
        assert!(system_prompt(&config, None)
            .unwrap_err()
            .starts_with("cannot read the system prompt file"));
    }
}
