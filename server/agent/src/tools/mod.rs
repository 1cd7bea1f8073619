//! The agent's tools: what a tool is (`Tool`), what it gets (`ToolContext`), what it returns
//! (`ToolOutput` for the model and the UI, or a `ToolError`), and the registry of all of them.
//! Each tool lives in its own module with its argument struct, schema, handler and tests.
//!
//! Output for the model is compact plain text with hard caps; every cut says how to get more.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::editor::Editor;
use crate::workspace::Workspace;

pub mod edit;
pub mod glob;
pub mod grep;
pub mod list_directory;
pub mod read_file;
pub mod read_many_files;
pub mod save_memory;
pub mod shell;
pub mod write_file;
pub mod write_todos;

/// What a tool does, for the UI (icons, grouping) and for approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolKind {
    Read,
    Search,
    Edit,
    Execute,
    Think,
    Other,
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    /// What the model reads about the tool: when to use it, what it returns, its limits.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object (`schema_for::<Args>()`).
    fn parameters(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// Whether the tool changes anything (files, processes, memory). Read-only tools may run in
    /// parallel; mutating ones run one at a time, in the order the model gave.
    fn mutates(&self) -> bool;
    /// A short human title for the call, e.g. "Read src/lib.rs (lines 1-200)". `args` may be
    /// invalid; fall back to the tool's name then.
    fn title(&self, args: &Value) -> String;
    /// Runs the call. Errors the model can act on are `ToolError::Respond`.
    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A tool's result: the text the model reads, and what a UI shows beside it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    /// Files (and lines) the call touched, for "follow the agent" in the editor.
    pub locations: Vec<Location>,
    /// The change an edit or write made.
    pub diff: Option<FileDiff>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            ..ToolOutput::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    pub path: PathBuf,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: PathBuf,
    /// `None` for a new file.
    pub old_text: Option<String>,
    pub new_text: String,
}

/// How a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can act on it (bad arguments, no match, outside the workspace, timeout): it
    /// goes back to the model as the call's result, marked as an error.
    #[error("{0}")]
    Respond(String),
    /// A bug or an environment failure the model cannot fix: the turn ends with an error.
    #[error("internal error: {0}")]
    Fatal(String),
}

impl From<crate::workspace::SandboxError> for ToolError {
    fn from(error: crate::workspace::SandboxError) -> Self {
        ToolError::Respond(error.to_string())
    }
}

/// Everything a tool call may use. Shared by the calls of one session.
#[derive(Clone)]
pub struct ToolContext {
    pub workspace: Arc<Workspace>,
    /// Cancelled when the user cancels the turn; long-running tools check it.
    pub cancel: CancellationToken,
    pub session: Arc<SessionState>,
    /// The user's global memory file (`~/.config/tandem/AGENTS.md` or as configured).
    pub user_memory_file: Option<PathBuf>,
    /// Where file contents are read from and written to: open editor buffers or the disk.
    pub editor: Arc<dyn Editor>,
}

/// State the tools of one session share.
#[derive(Debug, Default)]
pub struct SessionState {
    seen: Mutex<HashMap<PathBuf, Seen>>,
    /// Files already reported as changed by someone else, with the content hash reported, so
    /// that one change is reported once.
    reported: Mutex<HashMap<PathBuf, u64>>,
    todos: Mutex<Vec<Todo>>,
}

/// What a file looked like on disk at some moment: a cheap way to tell it has not changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub modified: Option<SystemTime>,
    pub len: u64,
}

impl FileStamp {
    /// The file's stamp now, if it exists.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            modified: metadata.modified().ok(),
            len: metadata.len(),
        })
    }
}

/// What the model last saw of a file (by reading it, or by writing it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Hash of the whole content seen.
    pub hash: u64,
    /// The buffer version, when it was seen in an open buffer.
    pub version: Option<i32>,
    /// The disk stamp, when it was seen on disk.
    pub stamp: Option<FileStamp>,
}

/// Whether the model's view of a file is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The model has not read it in this session.
    Unseen,
    /// It is exactly what the model last saw.
    Current,
    /// Someone (the user, a command) changed it since, or it is gone.
    Changed,
}

pub fn content_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

impl SessionState {
    /// Notes that the model has seen `path` with exactly `content` (from the buffer at
    /// `version`, or from disk when `version` is `None`).
    pub fn mark_seen(&self, path: &Path, content: &[u8], version: Option<i32>) {
        let seen = Seen {
            hash: content_hash(content),
            version,
            stamp: if version.is_none() {
                FileStamp::of(path)
            } else {
                None
            },
        };
        lock(&self.seen).insert(path.to_owned(), seen);
        lock(&self.reported).remove(path);
    }

    /// Notes that the model has seen `path` as it is on disk now (reads it to know).
    pub fn mark_read(&self, path: &Path) {
        if let Ok(bytes) = std::fs::read(path) {
            self.mark_seen(path, &bytes, None);
        }
    }

    /// What the model last saw of `path`, if it has.
    pub fn last_seen(&self, path: &Path) -> Option<Seen> {
        lock(&self.seen).get(path).copied()
    }

    /// Whether the model's view of `path` is what the user sees now (the open buffer, else the
    /// disk).
    pub fn freshness(&self, path: &Path, editor: &dyn Editor) -> Freshness {
        let Some(seen) = self.last_seen(path) else {
            return Freshness::Unseen;
        };
        match self.current_hash(path, &seen, editor) {
            Some(hash) if hash == seen.hash => Freshness::Current,
            _ => Freshness::Changed,
        }
    }

    /// The hash of what `path` holds now, skipping the read when a version or stamp proves it
    /// unchanged. `None` when it is gone.
    fn current_hash(&self, path: &Path, seen: &Seen, editor: &dyn Editor) -> Option<u64> {
        if let Some(buffer) = editor.buffer(path) {
            if seen.version == Some(buffer.version) {
                return Some(seen.hash);
            }
            return Some(content_hash(buffer.text.as_bytes()));
        }
        if seen.stamp.is_some() && seen.stamp == FileStamp::of(path) {
            return Some(seen.hash);
        }
        std::fs::read(path).ok().map(|bytes| content_hash(&bytes))
    }

    /// Files the model has seen that changed since, not reported before, sorted. Each change
    /// is reported once: the same file is listed again only after it changes again.
    pub fn take_changed_files(&self, editor: &dyn Editor) -> Vec<PathBuf> {
        let seen: Vec<(PathBuf, Seen)> = lock(&self.seen)
            .iter()
            .map(|(path, seen)| (path.clone(), *seen))
            .collect();
        let mut changed = Vec::new();
        for (path, seen) in seen {
            // A vanished file hashes as 0: reported once, like any other change.
            let hash = self.current_hash(&path, &seen, editor).unwrap_or(0);
            if hash == seen.hash {
                continue;
            }
            let mut reported = lock(&self.reported);
            if reported.get(&path) != Some(&hash) {
                reported.insert(path.clone(), hash);
                changed.push(path);
            }
        }
        changed.sort();
        changed
    }

    pub fn todos(&self) -> Vec<Todo> {
        lock(&self.todos).clone()
    }

    pub fn set_todos(&self, todos: Vec<Todo>) {
        *lock(&self.todos) = todos;
    }
}

/// A poisoned lock still holds consistent data here: every critical section is one map update.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One item of the agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Todo {
    /// What to do, in a few words.
    pub description: String,
    /// `pending`, `in_progress` (at most one item), `completed` or `cancelled`.
    pub status: TodoStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

/// Parses a call's arguments into the tool's argument struct, with an error the model can fix
/// ("invalid arguments for read_file: missing field `path`").
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|error| ToolError::Respond(format!("invalid arguments for {tool}: {error}")))
}

/// Checks a call's arguments against the tool's JSON Schema. `Err` is the message for the model
/// ("invalid arguments for read_file: \"path\" is a required property").
pub fn check_args(tool: &dyn Tool, args: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(&tool.parameters())
        .map_err(|error| format!("the {} tool's schema is invalid: {error}", tool.name()))?;
    let problems: Vec<String> = validator
        .iter_errors(args)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("{at}: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid arguments for {}: {}",
            tool.name(),
            problems.join("; ")
        ))
    }
}

/// The JSON Schema of an argument struct, inlined and without the meta fields some providers
/// refuse (`$schema`, `title`).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(fields) = &mut schema {
        fields.remove("$schema");
        fields.remove("title");
    }
    schema
}

/// Cuts `text` to at most `max_bytes` (on a character boundary) and says so.
pub fn cap(text: &str, max_bytes: usize, how_to_get_more: &str) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output truncated: showing {end} of {} bytes. {how_to_get_more}]",
        &text[..end],
        text.len()
    )
}

/// Every tool, in the order they are declared to the model.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read_file::ReadFile),
        Arc::new(read_many_files::ReadManyFiles),
        Arc::new(list_directory::ListDirectory),
        Arc::new(glob::Glob),
        Arc::new(grep::Grep),
        Arc::new(edit::Edit),
        Arc::new(write_file::WriteFile),
        Arc::new(shell::Shell),
        Arc::new(write_todos::WriteTodos),
        Arc::new(save_memory::SaveMemory),
    ]
}

/// Test helpers shared by the tool modules.
#[cfg(test)]
#[allow(dead_code)] // Until every tool's tests use all of it.
pub(crate) mod testing {
    use super::*;

    /// A temporary workspace with files, and a context for calls in it.
    pub(crate) struct TestWorkspace {
        pub temp: tempfile::TempDir,
        pub root: PathBuf,
        pub ctx: ToolContext,
    }

    impl TestWorkspace {
        /// `files` are `(relative path, content)` pairs.
        pub(crate) fn new(files: &[(&str, &str)]) -> Self {
            let temp = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(temp.path()).unwrap().join("ws");
            std::fs::create_dir_all(&root).unwrap();
            for (path, content) in files {
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, content).unwrap();
            }
            let ctx = ToolContext {
                workspace: Arc::new(Workspace::new(vec![root.clone()], Vec::new())),
                cancel: CancellationToken::new(),
                session: Arc::new(SessionState::default()),
                user_memory_file: Some(root.parent().unwrap().join("user/AGENTS.md")),
                editor: Arc::new(crate::editor::DiskEditor),
            };
            TestWorkspace { temp, root, ctx }
        }

        /// Runs `tool` with `args` and renders the result as the model would see it (errors
        /// prefixed with `error: `).
        pub(crate) async fn call(&self, tool: &dyn Tool, args: Value) -> String {
            match tool.run(args, &self.ctx).await {
                Ok(output) => output.text,
                Err(error) => format!("error: {error}"),
            }
        }

        pub(crate) fn read(&self, path: &str) -> String {
            std::fs::read_to_string(self.root.join(path)).unwrap()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_unique_name_an_object_schema_and_a_description() {
        let tools = all();
        let mut names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for tool in tools {
            assert_eq!(tool.parameters()["type"], "object", "{}", tool.name());
            assert!(tool.description().len() > 40, "{}", tool.name());
            assert!(!tool.title(&Value::Null).is_empty(), "{}", tool.name());
        }
    }

    #[test]
    fn cap_cuts_on_a_char_boundary_and_says_how_to_get_more() {
        assert_eq!(cap("short", 10, "x"), "short");
        let capped = cap("ééééé", 5, "Ask for less.");
        assert_eq!(
            capped,
            "éé\n[output truncated: showing 4 of 10 bytes. Ask for less.]"
        );
    }
}
