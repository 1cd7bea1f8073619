//! Test helpers shared by the tool modules, and by the tests of the crates above (the
//! `test-support` feature): a temporary workspace with a context for calls in it, and an
//! in-memory editor.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::tool::*;
use tandem_sandbox::editor::{write_to_disk, BufferText, Editor, FileWrite, WriteError, Written};

/// A temporary workspace with files, and a context for calls in it.
pub struct TestWorkspace {
    pub temp: tempfile::TempDir,
    pub root: PathBuf,
    pub ctx: ToolContext,
}

impl TestWorkspace {
    /// `files` are `(relative path, content)` pairs.
    pub fn new(files: &[(&str, &str)]) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let ctx = ToolContext {
            user_memory_file: Some(root.parent().unwrap().join("user/AGENTS.md")),
            ..ToolContext::on_disk(vec![root.clone()])
        };
        TestWorkspace { temp, root, ctx }
    }

    /// Runs `tool` with `args` and renders the result as the model would see it (errors
    /// prefixed with `error: `).
    pub async fn call(&self, tool: &dyn Tool, args: Value) -> String {
        match tool.run(args, &self.ctx).await {
            Ok(output) => output.text,
            Err(error) => format!("error: {error}"),
        }
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap()
    }

    /// Puts a [`MemoryEditor`] in front of the disk for the calls that follow.
    pub fn memory_editor(&mut self) -> Arc<MemoryEditor> {
        let editor = Arc::new(MemoryEditor::default());
        self.ctx.editor = editor.clone();
        editor
    }
}

/// An editor with buffers in memory, standing in for the language server's: writes to an
/// open buffer need the version the tool read (else `Stale`), other writes go to the disk.
#[derive(Default)]
pub struct MemoryEditor {
    buffers: Mutex<HashMap<PathBuf, BufferText>>,
    /// Text the user types into a buffer just before the next write arrives.
    typed_before_write: Mutex<Option<(PathBuf, String)>>,
    writes: Mutex<Vec<FileWrite>>,
}

impl MemoryEditor {
    /// Opens (or replaces) a buffer.
    pub fn set(&self, path: &Path, text: &str, version: i32) {
        let buffer = BufferText {
            text: text.to_owned(),
            version,
        };
        self.buffers.lock().unwrap().insert(path.to_owned(), buffer);
    }

    /// The user replaces the buffer's text, which bumps its version.
    pub fn type_text(&self, path: &Path, text: &str) {
        let mut buffers = self.buffers.lock().unwrap();
        let buffer = buffers.get_mut(path).unwrap();
        buffer.text = text.to_owned();
        buffer.version += 1;
    }

    /// Makes the user type `text` into `path`'s buffer between the tool's read and its
    /// write, the race a version check exists for.
    pub fn type_before_next_write(&self, path: &Path, text: &str) {
        *self.typed_before_write.lock().unwrap() = Some((path.to_owned(), text.to_owned()));
    }

    pub fn text(&self, path: &Path) -> Option<String> {
        self.buffer(path).map(|buffer| buffer.text)
    }

    /// Every write asked for, refused ones included.
    pub fn writes(&self) -> Vec<FileWrite> {
        self.writes.lock().unwrap().clone()
    }
}

impl Editor for MemoryEditor {
    fn buffer(&self, path: &Path) -> Option<BufferText> {
        self.buffers.lock().unwrap().get(path).cloned()
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        Box::pin(async move {
            self.writes.lock().unwrap().push(write.clone());
            let typed = self.typed_before_write.lock().unwrap().take();
            if let Some((path, text)) = typed {
                self.type_text(&path, &text);
            }
            {
                let mut buffers = self.buffers.lock().unwrap();
                if let Some(buffer) = buffers.get_mut(&write.path) {
                    if write.version != Some(buffer.version) {
                        return Err(WriteError::Stale);
                    }
                    buffer.text = write.new_text;
                    buffer.version += 1;
                    return Ok(Written::Buffer);
                }
            }
            write_to_disk(&write.path, write.new_text.as_bytes()).await
        })
    }

    fn sync_to_disk(&self) -> BoxFuture<'_, tandem_sandbox::editor::DiskSync> {
        Box::pin(async { Default::default() })
    }
}

/// `SessionState`'s view of files, against the disk and against buffers.
#[cfg(test)]
mod session_state {
    use super::*;

    fn setup() -> (TestWorkspace, PathBuf, SessionState, MemoryEditor) {
        let ws = TestWorkspace::new(&[("a.txt", "one\n")]);
        let path = ws.root.join("a.txt");
        (ws, path, SessionState::default(), MemoryEditor::default())
    }

    #[test]
    fn freshness_on_disk() {
        let (_ws, path, session, editor) = setup();
        assert_eq!(session.freshness(&path, &editor), Freshness::Unseen);
        session.mark_read(&path);
        assert_eq!(session.freshness(&path, &editor), Freshness::Current);
        std::fs::write(&path, "two, longer\n").unwrap();
        assert_eq!(session.freshness(&path, &editor), Freshness::Changed);
        session.mark_seen(&path, b"two, longer\n", None);
        assert_eq!(session.freshness(&path, &editor), Freshness::Current);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(session.freshness(&path, &editor), Freshness::Changed);
    }

    #[test]
    fn freshness_in_a_buffer() {
        let (_ws, path, session, editor) = setup();
        editor.set(&path, "unsaved\n", 3);
        assert_eq!(session.freshness(&path, &editor), Freshness::Unseen);
        session.mark_seen(&path, b"unsaved\n", Some(3));
        assert_eq!(session.freshness(&path, &editor), Freshness::Current);
        // Typed and undone: the version moved, the text is what the model saw.
        editor.type_text(&path, "unsaved!\n");
        editor.type_text(&path, "unsaved\n");
        assert_eq!(session.freshness(&path, &editor), Freshness::Current);
        editor.type_text(&path, "typed\n");
        assert_eq!(session.freshness(&path, &editor), Freshness::Changed);
        // Seen on disk, then opened unchanged in the editor.
        let session = SessionState::default();
        let editor = MemoryEditor::default();
        session.mark_read(&path);
        editor.set(&path, "one\n", 1);
        assert_eq!(session.freshness(&path, &editor), Freshness::Current);
    }

    #[test]
    fn a_buffer_reopened_with_the_same_version_is_compared_by_text() {
        let (_ws, path, session, editor) = setup();
        editor.set(&path, "first\n", 1);
        session.mark_seen(&path, b"first\n", Some(1));
        editor.set(&path, "other\n", 1);
        assert_eq!(session.freshness(&path, &editor), Freshness::Changed);
    }

    /// The model wrote into an unsaved buffer, so the disk still holds the old text with
    /// its old stamp: when the user closes the buffer without saving, the stamp must not
    /// vouch for the text the model wrote.
    #[test]
    fn a_write_left_unsaved_is_changed_once_the_buffer_is_dropped() {
        let (_ws, path, session, editor) = setup();
        editor.set(&path, "one\n", 1);
        session.mark_seen(&path, b"ONE\n", None);
        editor.buffers.lock().unwrap().clear();
        assert_eq!(session.freshness(&path, &editor), Freshness::Changed);
    }

    #[test]
    fn changed_files_lists_a_change_until_the_model_reads_it_again() {
        let (ws, path, session, editor) = setup();
        let other = ws.root.join("b.txt");
        std::fs::write(&other, "unchanged\n").unwrap();
        let buffered = ws.root.join("c.txt");
        editor.set(&buffered, "buffer\n", 1);
        session.mark_read(&path);
        session.mark_read(&other);
        session.mark_seen(&buffered, b"buffer\n", Some(1));
        assert!(session.changed_files(&editor).is_empty());

        std::fs::write(&path, "two, longer\n").unwrap();
        editor.type_text(&buffered, "typed\n");
        let both = vec![path.clone(), buffered.clone()];
        assert_eq!(session.changed_files(&editor), both);
        assert_eq!(session.changed_files(&editor), both);

        // Back to what the model saw: no longer listed.
        editor.type_text(&buffered, "buffer\n");
        assert_eq!(session.changed_files(&editor), vec![path.clone()]);

        // Reading it again makes it current; deleting it is a change.
        session.mark_read(&path);
        assert!(session.changed_files(&editor).is_empty());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(session.changed_files(&editor), vec![path.clone()]);
    }
}
