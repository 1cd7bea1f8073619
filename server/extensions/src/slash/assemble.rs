//! Putting a custom command's prompt together from its pieces once the caller has run the
//! shell pieces and read the file pieces. Pure: the caller hands in the outcomes through
//! [`Injections`] (run them first, then answer from what was collected — the runs are async
//! and need the user's approval, assembling is not and does not).
//!
//! Nothing is dropped without a word: a refused, failed or unsuccessful command and an
//! unreadable file leave a bracketed line in the prompt saying so, and output past the caps
//! is cut with a notice. A command's output loses its final line breaks, since it usually
//! stands inside a sentence (`on branch !{git branch --show-current}.`).

use super::template::Piece;
use crate::mentions::{Found, Mention};

/// Bytes of a command's standard output put in the prompt at most; its standard error gets a
/// quarter of that.
pub const MAX_SHELL_BYTES: usize = 16 * 1024;
/// Bytes of a file piece's content put in the prompt at most (`read_file`'s cap).
pub const MAX_FILE_BYTES: usize = 64 * 1024;

/// What came of a shell piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellOutcome {
    /// It ran to the end; `exit_code` is `None` when a signal ended it.
    Ran {
        exit_code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// It was not run; `reason` says why, for the model (e.g. "the user refused it").
    Refused { reason: String },
    /// It could not be run or did not finish (did not start, timed out, was cancelled).
    Failed { error: String },
}

/// What came of a file piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// What goes in its place: a file's text, a directory's files.
    Content(String),
    /// It could not be read (outside the workspace, missing, binary); `error` says why.
    Failed { error: String },
}

/// The outcomes of the pieces that needed running or reading, as the caller collected them.
pub trait Injections {
    fn shell(&mut self, command: &str) -> ShellOutcome;
    fn file(&mut self, path: &str) -> FileOutcome;
}

/// The prompt's text, and the mentions in it (with their places in that text) for
/// `mentions::Resolver::resolve_found`.
pub fn assemble(pieces: &[Piece], injections: &mut dyn Injections) -> Found {
    let mut found = Found::default();
    for piece in pieces {
        match piece {
            Piece::Text(text) => found.text.push_str(text),
            Piece::Mention(mention) => {
                let start = found.text.len();
                found.text.push_str(&mention.written());
                found.mentions.push(Mention {
                    range: start..found.text.len(),
                    ..mention.clone()
                });
            }
            Piece::Shell { command } => {
                let outcome = injections.shell(command);
                found.text.push_str(&shell_text(command, outcome));
            }
            Piece::File { path } => match injections.file(path) {
                FileOutcome::Content(content) => found.text.push_str(&capped(
                    content.trim_end_matches(['\n', '\r']),
                    MAX_FILE_BYTES,
                    &format!("read the rest of {path} with read_file"),
                )),
                FileOutcome::Failed { error } => found
                    .text
                    .push_str(&format!("[@{{{path}}} was not included: {error}]")),
            },
        }
    }
    found
}

/// What a command's outcome puts in the prompt.
fn shell_text(command: &str, outcome: ShellOutcome) -> String {
    let (exit_code, stdout, stderr) = match outcome {
        ShellOutcome::Refused { reason } => return format!("[`{command}` was not run: {reason}]"),
        ShellOutcome::Failed { error } => {
            return format!("[`{command}` could not be run: {error}]")
        }
        ShellOutcome::Ran {
            exit_code,
            stdout,
            stderr,
        } => (exit_code, stdout, stderr),
    };
    let more = format!("run `{command}` with the shell tool for all of it");
    let stdout = capped(
        stdout.trim_end_matches(['\n', '\r']),
        MAX_SHELL_BYTES,
        &more,
    );
    let stderr = capped(stderr.trim_end(), MAX_SHELL_BYTES / 4, &more);
    let status = match exit_code {
        Some(0) if stderr.is_empty() => None,
        Some(0) => Some(format!("[`{command}` wrote to stderr:\n{stderr}]")),
        Some(code) if stderr.is_empty() => Some(format!("[`{command}` exited with code {code}]")),
        Some(code) => Some(format!("[`{command}` exited with code {code}:\n{stderr}]")),
        None if stderr.is_empty() => Some(format!("[`{command}` was ended by a signal]")),
        None => Some(format!("[`{command}` was ended by a signal:\n{stderr}]")),
    };
    match status {
        None => stdout,
        Some(status) if stdout.is_empty() => status,
        Some(status) => format!("{stdout}\n{status}"),
    }
}

/// `text`, or its first `limit` bytes (ending at a line break when one is in the second half)
/// and a notice saying how much was left out and `how` to get it.
fn capped(text: &str, limit: usize, how: &str) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut cut = limit;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    if let Some(line_end) = text[..cut].rfind('\n').filter(|&at| at >= limit / 2) {
        cut = line_end;
    }
    format!(
        "{}\n[cut: {} of {} bytes shown; {how}]",
        &text[..cut],
        cut,
        text.len()
    )
}

#[cfg(test)]
mod tests;
