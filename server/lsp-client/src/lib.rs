//! A language-server client: starts a server (pyright, clangd, typescript-language-server…) as a
//! child process speaking LSP over stdio, keeps documents open in it, and answers "what problems
//! does this text have" with the diagnostics the server publishes for exactly that version of
//! the document. This is what lets the agent see the errors its edits cause where no editor
//! reports them (`tandem ask`, ACP, plain clients).
//!
//! LSP is spoken here with the few message shapes it needs (`serde_json` values), not through
//! `lsp-types`: only the editor front end (`tandem-lsp`) knows those, and the agent core knows
//! neither.

mod framing;
mod server;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use server::{LanguageServer, ServerCommand};

/// Where `program` is on `PATH`: the first absolute entry holding it, skipping entries inside
/// `outside` (a workspace, whose own binaries are its code to run, not ours).
pub fn find_program(program: &str, outside: Option<&Path>) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .filter(|dir| dir.is_absolute() && !outside.is_some_and(|root| dir.starts_with(root)))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("the language server {0} stopped")]
    Stopped(String),
    #[error("the language server {server} answered {method} with an error: {message}")]
    Request {
        server: String,
        method: String,
        message: String,
    },
    #[error("the language server {server} published no diagnostics for {path} within {after:?}")]
    Timeout {
        server: String,
        path: String,
        after: Duration,
    },
    #[error("{0} is not a file path")]
    NotAFile(String),
}

/// How bad a problem is, as LSP grades it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    fn from_lsp(value: Option<u64>) -> Severity {
        match value {
            Some(2) => Severity::Warning,
            Some(3) => Severity::Information,
            Some(4) => Severity::Hint,
            // LSP leaves a missing severity to the client; an error is the safe reading.
            _ => Severity::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic, as the agent is told it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Problem {
    /// 1-based.
    pub line: u32,
    /// 1-based, in the server's units (UTF-16 code units unless negotiated otherwise).
    pub column: u32,
    pub severity: Severity,
    /// Who reported it (`Pyright`, `clang`…), when the server says.
    pub source: Option<String>,
    pub code: Option<String>,
    pub message: String,
}

impl Problem {
    /// What makes two problems the same one wherever the edit moved it: not its position.
    fn identity(&self) -> (Severity, Option<&str>, Option<&str>, &str) {
        (
            self.severity,
            self.source.as_deref(),
            self.code.as_deref(),
            self.message.as_str(),
        )
    }
}

/// The problems of `after` that `before` did not have: compared by severity, source, code and
/// message, not by position (an edit above a problem moves it without causing it), and counted
/// (a second identical error is new). In `after`'s order.
pub fn new_problems(before: &[Problem], after: &[Problem]) -> Vec<Problem> {
    let mut unmatched: Vec<&Problem> = before.iter().collect();
    after
        .iter()
        .filter(|problem| {
            match unmatched
                .iter()
                .position(|old| old.identity() == problem.identity())
            {
                Some(index) => {
                    unmatched.swap_remove(index);
                    false
                }
                None => true,
            }
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(line: u32, message: &str) -> Problem {
        Problem {
            line,
            column: 1,
            severity: Severity::Error,
            source: Some("Pyright".into()),
            code: None,
            message: message.into(),
        }
    }

    #[test]
    fn new_problems_ignore_positions_and_count_duplicates() {
        let before = [problem(3, "\"x\" is not defined"), problem(9, "bad")];
        // The old error moved down two lines; a second copy of it and another one are new.
        let after = [
            problem(5, "\"x\" is not defined"),
            problem(6, "\"x\" is not defined"),
            problem(8, "Expected 1 argument"),
        ];
        assert_eq!(
            new_problems(&before, &after),
            vec![
                problem(6, "\"x\" is not defined"),
                problem(8, "Expected 1 argument")
            ]
        );
        assert!(new_problems(&after, &before[..1]).is_empty());
        assert_eq!(Severity::from_lsp(None), Severity::Error);
        assert_eq!(Severity::from_lsp(Some(2)).as_str(), "warning");
    }
}
