//! The errors an edit causes, as language servers see them: after `edit` or `write_file`
//! changes a file, its result tells the model the errors that the change added (not those the
//! file already had), so it can fix a wrong name or type before it runs anything; the
//! `diagnostics` tool shows a file's (or every known file's) current problems. The core only
//! knows the `LanguageServers` trait: the editor front end implements it with the diagnostics
//! the editor forwards, the binary with `tandem-lsp-client`, which starts the servers itself;
//! so the core knows no LSP.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Problems shown after one edit, at most.
const MAX_SHOWN: usize = 10;

/// One error (or warning) a language server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Not an error but a warning.
    pub warning: bool,
    /// 1-based.
    pub line: u32,
    /// 1-based.
    pub column: u32,
    /// Who reported it (`Pyright`, `clang`…), when the server says.
    pub source: Option<String>,
    /// The server's code for it (`reportUndefinedVariable`), when it gives one.
    pub code: Option<String>,
    pub message: String,
}

/// What a language server said about an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditProblems {
    /// The server's name (`pyright`).
    pub server: String,
    /// The errors (and warnings, when asked for) the edit added.
    pub added: Vec<Problem>,
}

/// The problems of one file, as a language server reported them last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblems {
    pub path: PathBuf,
    /// Who checked it (`pyright`, or `the editor` for the editor's own diagnostics).
    pub server: String,
    /// Its errors and warnings (information and hints left out), errors first.
    pub problems: Vec<Problem>,
}

/// The language servers of a session's workspace.
pub trait LanguageServers: Send + Sync + std::fmt::Debug {
    /// Whether anything can answer: an editor that forwards its diagnostics, or servers Tandem
    /// may start. Without, the `diagnostics` tool is not offered (its declaration would only
    /// take room in the model's window).
    fn available(&self) -> bool {
        true
    }

    /// The errors (and, with `settings.warnings`, the warnings) that `after` has and `before`
    /// (the file's text before the edit; `None` for a new file) did not, as the content of
    /// `path`, waiting for them at most `settings.settle()` once a server runs. `None` when no
    /// server takes this file or none answered in time (logged).
    fn edit_problems<'a>(
        &'a self,
        path: &'a Path,
        before: Option<&'a str>,
        after: &'a str,
        settings: &'a DiagnosticsSettings,
    ) -> BoxFuture<'a, Option<EditProblems>>;

    /// The current problems of `file` (its path and current text), or, for `None`, of every
    /// file whose problems are known (the editor's, or those checked in this process). Empty
    /// when no server checks the file.
    fn problems<'a>(
        &'a self,
        file: Option<(&'a Path, &'a str)>,
        settings: &'a DiagnosticsSettings,
    ) -> BoxFuture<'a, Vec<FileProblems>>;
}

/// The paragraph an edit's result ends with: the problems it added, capped; empty when there
/// are none or nobody could say.
pub fn note(shown_path: &str, problems: Option<&EditProblems>) -> String {
    let Some(problems) = problems.filter(|problems| !problems.added.is_empty()) else {
        return String::new();
    };
    let warnings = problems
        .added
        .iter()
        .filter(|problem| problem.warning)
        .count();
    let errors = problems.added.len() - warnings;
    let count = |count: usize, what: &str| match count {
        0 => None,
        1 => Some(format!("a new {what}")),
        count => Some(format!("{count} new {what}s")),
    };
    let what: Vec<String> = [count(errors, "error"), count(warnings, "warning")]
        .into_iter()
        .flatten()
        .collect();
    let mut note = format!(
        "\n\n{} reports {} in {shown_path} since this change:",
        problems.server,
        what.join(" and ")
    );
    for problem in problems.added.iter().take(MAX_SHOWN) {
        note.push_str(&format!(
            "\n  line {}, column {}: {}{}",
            problem.line,
            problem.column,
            if problem.warning { "warning: " } else { "" },
            problem.message.replace('\n', " ")
        ));
    }
    if problems.added.len() > MAX_SHOWN {
        note.push_str(&format!(
            "\n  … and {} more",
            problems.added.len() - MAX_SHOWN
        ));
    }
    note
}

/// The errors an edit added, from language servers (the `diagnostics` settings key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DiagnosticsSettings {
    /// Tell the model the errors each edit added, and offer it the `diagnostics` tool; `false`
    /// starts no language server and waits for no editor.
    pub enabled: bool,
    /// Report the warnings an edit added too, not only its errors.
    pub warnings: bool,
    /// The most milliseconds an edit's result waits for the diagnostics of the edited text,
    /// once the language server runs (a server's first start may take up to 30 s more).
    #[schemars(range(min = 1, max = 60000))]
    pub settle_ms: u64,
    /// Language servers to start for files Tandem checks itself (`tandem ask`, `tandem acp`,
    /// editors that do not forward their diagnostics), before the built-in ones (pyright or
    /// basedpyright, typescript-language-server, rust-analyzer, gopls, clangd, found on PATH).
    /// Only the user's own settings may name them: a workspace's settings file cannot.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<LanguageServerSettings>,
    /// Whether a server binary inside the workspace (`node_modules/.bin`, `.venv/bin`) may
    /// run: only in a trusted folder (set from `trustedFolders`, not a setting).
    #[serde(skip)]
    pub workspace_binaries: bool,
}

impl Default for DiagnosticsSettings {
    fn default() -> Self {
        DiagnosticsSettings {
            enabled: true,
            warnings: false,
            settle_ms: 2000,
            servers: Vec::new(),
            workspace_binaries: false,
        }
    }
}

impl DiagnosticsSettings {
    /// `settle_ms` as a duration.
    pub fn settle(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.settle_ms.clamp(1, 60_000))
    }
}

/// A language server Tandem may start to check files (`diagnostics.servers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LanguageServerSettings {
    /// The program and its arguments, e.g. `["rust-analyzer"]` or `["pylsp"]`. A bare name is
    /// looked up on PATH (outside the workspace unless it is trusted).
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// The file extensions it checks, without the dot (`["rs"]`).
    #[schemars(length(min = 1))]
    pub extensions: Vec<String>,
    /// The LSP `languageId` of its documents (`rust`); the file's extension when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(count: usize) -> EditProblems {
        EditProblems {
            server: "pyright".into(),
            added: (1..=count)
                .map(|line| Problem {
                    warning: line == 12,
                    line: line as u32,
                    column: 9,
                    source: Some("Pyright".into()),
                    code: None,
                    message: format!("\"name{line}\" is not defined\n  detail"),
                })
                .collect(),
        }
    }

    #[test]
    fn the_note_lists_the_new_errors_capped() {
        assert_eq!(note("calc.py", None), "");
        assert_eq!(note("calc.py", Some(&problems(0))), "");
        assert_eq!(
            note("calc.py", Some(&problems(1))),
            "\n\npyright reports a new error in calc.py since this change:\n  line 1, column 9: \"name1\" is not defined   detail"
        );
        let many = note("calc.py", Some(&problems(12)));
        assert!(
            many.starts_with("\n\npyright reports 11 new errors and a new warning in calc.py"),
            "{many}"
        );
        assert!(many.ends_with("\n  … and 2 more"), "{many}");
    }
}
