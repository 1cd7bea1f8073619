//! Which hooks an event runs: a group's `matcher` is a regular expression the whole subject
//! must match (a tool's name, a compression's trigger, a session start's source). A tool also
//! answers to its Claude Code and Gemini CLI names (`dialect.rs`), so that hooks written for
//! those tools match Tandem's calls unchanged.

use regex::Regex;

/// The names a tool answers to: its own, then the other agents' (`dialect.rs`).
pub fn tool_names(tool: &str) -> Vec<String> {
    super::dialect::Dialect::all_names(tool)
}

/// The matcher as a regular expression that must match a whole name.
pub fn compile(matcher: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!("^(?:{matcher})$"))
}

/// Whether a group with `matcher` runs for `names` (a subject and its aliases). No matcher,
/// an empty one or `*` match everything; an invalid one (refused by the settings check)
/// matches nothing.
pub fn matches(matcher: Option<&str>, names: &[String]) -> bool {
    match matcher.map(str::trim) {
        None | Some("" | "*") => true,
        Some(matcher) => {
            compile(matcher).is_ok_and(|regex| names.iter().any(|name| regex.is_match(name)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_match_whole_names_and_aliases() {
        let cases: &[(Option<&str>, &str, bool)] = &[
            (None, "shell", true),
            (Some(""), "edit", true),
            (Some("*"), "mcp__github__create_issue", true),
            (Some("edit|write_file"), "edit", true),
            (Some("edit|write_file"), "write_file", true),
            (Some("edit|write_file"), "read_file", false),
            (Some("edit"), "edit_notes", false),
            (Some("Bash"), "shell", true),
            (Some("run_shell_command"), "shell", true),
            (Some("Edit|MultiEdit|Write"), "write_file", true),
            (Some("replace"), "edit", true),
            (Some("Read"), "read_file", true),
            (Some("search_file_content"), "grep", true),
            (Some("Task"), "subagent", true),
            (Some("mcp__github__.*"), "mcp__github__create_issue", true),
            (Some("mcp__github__.*"), "mcp__gitlab__create_issue", false),
            (Some("mcp_github_.*"), "mcp__github__create_issue", true),
            (Some("grep_search"), "grep", true),
            (Some("("), "shell", false),
            (Some("manual"), "manual", true),
            (Some("manual"), "auto", false),
        ];
        for &(matcher, tool, expected) in cases {
            assert_eq!(
                matches(matcher, &tool_names(tool)),
                expected,
                "{matcher:?} on {tool}"
            );
        }
    }
}
