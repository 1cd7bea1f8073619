//! A session's Markdown transcript: each turn's prompt, the answer, one bullet per finished tool
//! call and how the turn ended, appended under the workspace's `.tandem/transcripts/` as the
//! turn runs. Written only where a front end asks for transcripts (`HostOptions::transcripts`).

use std::io::Write;
use std::path::{Path, PathBuf};

use tracing::debug;

use crate::files::{self, Open};
use crate::protocol::{Event, StopReason, ToolCallStatus, ToolCallUpdate};
use crate::Workspace;

use super::{first_line, outcome_line};

/// Where a session's transcript goes: `started` tells this process's transcripts from earlier
/// ones in the same workspace.
pub(crate) fn transcript_path(root: &Path, started: u64, session: &str) -> PathBuf {
    root.join(".tandem")
        .join("transcripts")
        .join(format!("{started}-{session}.md"))
}

/// One turn's part of the transcript, built from its events and flushed to the file at the
/// turn's start, between tool calls and at its end.
pub(crate) struct TurnTranscript {
    root: PathBuf,
    path: PathBuf,
    answer: String,
    pending: String,
}

impl TurnTranscript {
    /// Starts a turn: its heading and prompt are written at once.
    pub(crate) fn start(root: &Path, path: &Path, prompt: &str) -> Self {
        let mut transcript = TurnTranscript {
            root: root.to_path_buf(),
            path: path.to_path_buf(),
            answer: String::new(),
            pending: format!("## You\n\n{}\n\n## Tandem\n\n", prompt.trim()),
        };
        transcript.flush();
        transcript
    }

    pub(crate) fn event(&mut self, event: &Event) {
        match event {
            Event::TextChunk { text } => self.answer.push_str(text),
            Event::Retrying { .. } => self.answer.clear(),
            Event::ToolCall(update) => self.tool_call(update),
            _ => {}
        }
    }

    fn tool_call(&mut self, update: &ToolCallUpdate) {
        let mark = match update.status {
            ToolCallStatus::Success => "✓",
            ToolCallStatus::Cancelled => "⊘",
            ToolCallStatus::Error => "✗",
            _ => return,
        };
        self.flush_answer();
        let detail = match update.status {
            ToolCallStatus::Success => String::new(),
            _ => update
                .output
                .as_deref()
                .map(|output| format!(": {}", first_line(output, 200)))
                .unwrap_or_default(),
        };
        self.pending
            .push_str(&format!("- {mark} {}{detail}\n", update.title));
    }

    /// The answer streamed so far goes into the transcript before the next tool call.
    fn flush_answer(&mut self) {
        if !self.answer.trim().is_empty() {
            self.end_tool_list();
            self.pending.push_str(self.answer.trim());
            self.pending.push_str("\n\n");
        }
        self.answer.clear();
    }

    /// Ends a run of tool bullets with a blank line, so that what follows (a paragraph, the
    /// outcome, the next turn's heading) starts a block of its own: without it Markdown reads a
    /// paragraph as the last bullet's continuation. Bullets are the only lines that end in a
    /// single newline.
    fn end_tool_list(&mut self) {
        if !self.pending.is_empty() && !self.pending.ends_with("\n\n") {
            self.pending.push('\n');
        }
    }

    /// The turn is over: the rest of the answer and, unless it ended normally, the outcome.
    pub(crate) fn finish(mut self, reason: StopReason, message: Option<&str>) {
        self.flush_answer();
        self.end_tool_list();
        if reason != StopReason::EndTurn {
            let outcome = outcome_line(reason, message);
            self.pending.push_str(&format!("_{outcome}_\n\n"));
        }
        self.flush();
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        if let Err(error) = append_file(&self.root, &self.path, &self.pending) {
            debug!(
                "cannot write the transcript {}: {error}",
                self.path.display()
            );
        }
        self.pending.clear();
    }
}

/// Appends to a file under `root`'s `.tandem/`, resolved through the sandbox and opened without
/// following symbolic links, so a `.tandem` that links out of the workspace gets nothing.
fn append_file(root: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    let workspace = Workspace::new(vec![root.to_path_buf()], Vec::new());
    let resolved = workspace
        .resolve(&path.to_string_lossy())
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::PermissionDenied, error))?;
    if let Some(dir) = resolved.parent() {
        if !dir.exists() {
            files::create_dir_all(dir, 0o777)?;
            // Transcripts are the user's, not the project's.
            match files::open(&dir.join(".gitignore"), Open::CreateNew, 0o666, 0o777) {
                Ok(mut gitignore) => gitignore.write_all(b"*\n")?,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }
    files::open(&resolved, Open::Append, 0o666, 0o777)?.write_all(text.as_bytes())
}
