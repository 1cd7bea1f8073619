//! A session's Markdown transcript: each turn's prompt, the answer, one bullet per finished tool
//! call and how the turn ended, appended under the workspace's `.tandem/transcripts/` as the
//! turn runs. Written only where a front end asks for transcripts (`HostOptions::transcripts`).
//! They hold the conversation and what commands printed, so, like saved sessions, they are the
//! user's alone: the folder `0700`, the files `0600` (tightened when an earlier version left
//! them wider).

use std::io::Write;
use std::path::{Path, PathBuf};

use tracing::debug;

use crate::files::{self, Open};
use crate::protocol::{Event, StopReason, ToolCallStatus, ToolCallUpdate};
use crate::Workspace;

use super::text::{first_line, outcome_line};

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
/// following symbolic links, so a `.tandem` that links out of the workspace gets nothing. The
/// folder and the file are made private first, whenever they were made; one that cannot be
/// gets nothing either.
fn append_file(root: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    let workspace = Workspace::new(vec![root.to_path_buf()], Vec::new());
    let resolved = workspace
        .resolve(&path.to_string_lossy())
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::PermissionDenied, error))?;
    if let Some(dir) = resolved.parent() {
        let created = !dir.exists();
        files::create_private_subdir(dir)?;
        if created {
            // Transcripts are the user's, not the project's.
            match files::open(&dir.join(".gitignore"), Open::CreateNew, 0o600, 0o700) {
                Ok(mut gitignore) => gitignore.write_all(b"*\n")?,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }
    let mut file = files::open(&resolved, Open::Append, 0o600, 0o700)?;
    files::make_private(&file)?;
    file.write_all(text.as_bytes())
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::files::mode;

    /// Issue 35, finding 5: transcripts, which hold prompts, answers and what commands printed,
    /// were created `0644` in a `0755` folder while the saved session was `0600`. New ones
    /// are private, and one an earlier version left readable is tightened when appended to.
    #[test]
    fn transcripts_are_private_and_earlier_ones_are_tightened() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let path = transcript_path(&root, 1, "s1");
        let dir = path.parent().unwrap().to_path_buf();
        TurnTranscript::start(&root, &path, "print the environment")
            .finish(StopReason::EndTurn, None);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "## You\n\nprint the environment\n\n## Tandem\n\n"
        );
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(".gitignore")), 0o600);

        // As an earlier version left them.
        let earlier = transcript_path(&root, 0, "s0");
        std::fs::write(&earlier, "## You\n\nolder\n\n").unwrap();
        std::fs::set_permissions(&earlier, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        TurnTranscript::start(&root, &earlier, "again").finish(StopReason::EndTurn, None);
        assert!(std::fs::read_to_string(&earlier)
            .unwrap()
            .ends_with("## You\n\nagain\n\n## Tandem\n\n"));
        assert_eq!(mode(&earlier), 0o600);
        assert_eq!(mode(&dir), 0o700);
    }
}
