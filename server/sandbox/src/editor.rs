//! Where the tools read and write files. A headless front end (`tandem ask`) uses the disk
//! ([`DiskEditor`]); the language server overlays the editor's open buffers, so that reads see
//! what the user sees (unsaved text included) and writes arrive as versioned workspace edits the
//! user can undo. The agent core knows only this trait, never the protocol behind it.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The text of a file the editor has open, as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferText {
    pub text: String,
    /// The editor's version of the buffer; it grows with every change.
    pub version: i32,
}

/// A whole-file change a tool wants made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    /// Canonical, inside the workspace (the tool resolved it).
    pub path: PathBuf,
    /// The text the change was computed from; `None` when the file is created.
    pub old_text: Option<String>,
    pub new_text: String,
    /// The buffer version `old_text` came from, when it came from an open buffer. The change is
    /// refused if the buffer has moved on since.
    pub version: Option<i32>,
}

/// Where a write landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// On disk.
    Disk,
    /// In the editor's open buffer, unsaved (the user saves or undoes it).
    Buffer,
    /// Held back, to be proposed to the user as one edit when the turn ends (inline chat).
    Proposed,
}

impl Written {
    /// What the model is told about where its change went; empty for the disk.
    pub fn note(self) -> &'static str {
        match self {
            Written::Disk => "",
            Written::Buffer => {
                " The change is in the editor's open buffer and is not saved yet; the user \
                 reviews and saves it. Before a shell command or an MCP tool runs, Tandem has \
                 the editor save it where it can, and says so when it could not."
            }
            Written::Proposed => {
                " The change is proposed to the user, who accepts or rejects it when you are \
                 done; later reads show it as if accepted."
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The buffer changed after the tool read it (the user is typing): nothing was written.
    /// By the time an editor returns it, `buffer` shows the text that made the write stale (a
    /// front end waits briefly for the editor's pending change), so the tool can work its
    /// change out again on that text (`tools::user_edits`).
    #[error("the file changed in the editor since you read it (the user may be typing in it); nothing was written. Read it again with read_file and redo the change on the current text")]
    Stale,
    /// The editor or the user refused the change, or it is outside what this turn may change.
    #[error("{0}")]
    Refused(String),
    /// Writing failed (a disk error, the editor went away).
    #[error("{0}")]
    Failed(String),
}

/// What [`Editor::sync_to_disk`] could not put on disk of the agent's changes that sat unsaved
/// in open buffers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskSync {
    /// Still unsaved: what reads the disk sees the file without the agent's change.
    pub unsaved: Vec<PathBuf>,
}

impl DiskSync {
    /// What the model is told after a call that read the disk, when some of its changes were
    /// not there; empty when they all were.
    pub fn note(&self) -> String {
        if self.unsaved.is_empty() {
            return String::new();
        }
        let files: Vec<String> = self
            .unsaved
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        format!(
            "\n\nNote: your changes to {} are in the editor's open buffer, not saved, so this \
             read the file as it is on disk, without them. The user saves them.",
            files.join(", ")
        )
    }
}

/// Reads and writes files on the tools' behalf.
pub trait Editor: Send + Sync {
    /// The open buffer for `path` (canonical), if the editor has one.
    fn buffer(&self, path: &Path) -> Option<BufferText>;

    /// Makes the change, or refuses it without touching anything.
    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>>;

    /// Puts the agent's changes that sit unsaved in open buffers on disk, as far as the editor
    /// can, before a tool that reads the disk (a shell command, an MCP tool) runs, so that it
    /// sees them. No default: an editor that wraps another must pass it on.
    fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync>;

    /// Why `write` would refuse any change to `path` (with `new_text`, that very text),
    /// whatever the model has read: the file tools ask before their own checks, so the model
    /// hears the real reason first rather than being sent to read lines it may not change.
    /// `None` when it may be written. An editor that wraps another must pass it on.
    fn refusal(&self, _path: &Path, _new_text: Option<&str>) -> Option<String> {
        None
    }

    /// Deletes a file (restoring a checkpoint takes back a file the agent created). The default
    /// removes it from disk, and refuses when the editor has it open.
    fn delete<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<(), WriteError>> {
        Box::pin(async move {
            if self.buffer(path).is_some() {
                return Err(WriteError::Refused(format!(
                    "{} is open in the editor; close it to delete it",
                    path.display()
                )));
            }
            tokio::fs::remove_file(path).await.map_err(|error| {
                WriteError::Failed(format!("cannot delete {}: {error}", path.display()))
            })
        })
    }
}

/// No editor: reads come from and writes go to the disk.
#[derive(Debug, Default, Clone, Copy)]
pub struct DiskEditor;

impl Editor for DiskEditor {
    fn buffer(&self, _path: &Path) -> Option<BufferText> {
        None
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        Box::pin(async move { write_to_disk(&write.path, write.new_text.as_bytes()).await })
    }

    /// Nothing to do: every write went to the disk.
    fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync> {
        Box::pin(async { DiskSync::default() })
    }
}

/// Writes `bytes` to `path` in place (keeping its permissions, owner and links), creating the
/// missing parent directories. `path` is canonical (the sandbox resolved it); a symbolic link
/// that appears in it afterwards is refused, not followed (`files`).
pub async fn write_to_disk(path: &Path, bytes: &[u8]) -> Result<Written, WriteError> {
    let owned = (path.to_path_buf(), bytes.to_vec());
    let written = tokio::task::spawn_blocking(move || crate::files::write(&owned.0, &owned.1))
        .await
        .map_err(|error| {
            WriteError::Failed(format!("writing {} failed: {error}", path.display()))
        })?;
    written
        .map_err(|error| WriteError::Failed(format!("cannot write {}: {error}", path.display())))?;
    Ok(Written::Disk)
}

/// A file's current content: the open buffer's text, else the bytes on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentText {
    pub bytes: Vec<u8>,
    /// `Some` when it came from an open buffer.
    pub version: Option<i32>,
}

/// What `path` holds now, as the user sees it. `Ok(None)` when it exists nowhere.
pub fn current_text(editor: &dyn Editor, path: &Path) -> std::io::Result<Option<CurrentText>> {
    if let Some(buffer) = editor.buffer(path) {
        return Ok(Some(CurrentText {
            bytes: buffer.text.into_bytes(),
            version: Some(buffer.version),
        }));
    }
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(CurrentText {
            bytes,
            version: None,
        })),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Where writes to files the editor does not have open go (the `edits` settings key). Without
/// an editor (`tandem ask`) every write goes to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct EditSettings {
    /// A change to an existing file the editor does not have open.
    pub closed_files: ClosedFiles,
    /// A file the agent creates.
    pub new_files: NewFiles,
    /// Before a shell command, a search or an MCP tool runs, have the editor save the open
    /// files the agent changed, so that it sees the changes (editors that can be asked: the
    /// Neovim plugin and the VS Code extension). `false` leaves every buffer unsaved until you
    /// save it.
    pub save_before_commands: bool,
}

impl Default for EditSettings {
    fn default() -> Self {
        EditSettings {
            closed_files: ClosedFiles::default(),
            new_files: NewFiles::default(),
            save_before_commands: true,
        }
    }
}

/// Where a write to a file the editor does not have open goes (`edits.closedFiles`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClosedFiles {
    /// Straight to the disk, as the headless agent does.
    #[default]
    Disk,
    /// A workspace edit without a version: the editor opens the file and the change stays
    /// unsaved until the user saves it.
    Editor,
}

/// Where a new file goes (`edits.newFiles`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NewFiles {
    /// Created through the editor when it supports resource operations (else on the disk).
    #[default]
    Editor,
    /// Written to the disk.
    Disk,
}
