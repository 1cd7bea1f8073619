//! Checkpoints: what each file a turn changed held before the turn's first write to it, and
//! what the turn left in it. `/restore` puts the files back, through the same `Editor` the
//! tools write with (so open buffers change by workspace edit and the user can undo), and
//! leaves alone every file the user changed since the turn, saying so.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::editor::{BufferText, Editor, FileWrite, WriteError, Written};
use crate::protocol::RestoreReport;

/// One file a turn changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCheckpoint {
    pub path: PathBuf,
    /// The text before the turn's first write; `None` when the turn created the file.
    pub before: Option<String>,
    /// The text the turn's last write left.
    pub after: String,
}

/// The files one turn changed, in the order it first wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCheckpoint {
    pub turn_id: String,
    pub files: Vec<FileCheckpoint>,
}

/// An `Editor` that records a checkpoint as it passes writes through to `inner`: before the
/// first successful write to a path it reads the current text (buffer or disk), and after each
/// successful write it notes the text written.
pub struct CheckpointEditor {
    inner: Arc<dyn Editor>,
    files: Mutex<Vec<FileCheckpoint>>,
}

impl CheckpointEditor {
    pub fn new(inner: Arc<dyn Editor>) -> Self {
        CheckpointEditor {
            inner,
            files: Mutex::new(Vec::new()),
        }
    }

    /// The files written so far, in first-write order.
    pub fn files(&self) -> Vec<FileCheckpoint> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl Editor for CheckpointEditor {
    fn buffer(&self, path: &Path) -> Option<BufferText> {
        self.inner.buffer(path)
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        self.inner.write(write)
    }
}

/// Puts back the files of `checkpoints` (the turn to restore, then every later turn, oldest
/// first) as they were before the first of them: a file whose current text is what the last of
/// these turns left gets its earliest `before` back (a file the turns created is deleted); any
/// other file is skipped with the reason. The report's `turn_id` is the first checkpoint's.
pub async fn restore(editor: &dyn Editor, checkpoints: &[TurnCheckpoint]) -> RestoreReport {
    let _ = (editor, checkpoints);
    RestoreReport::default()
}
