//! Checkpoints: what each file a turn changed held before the turn's first write to it, and
//! what the turn left in it. `/restore` puts the files back, through the same `Editor` the
//! tools write with (so open buffers change by workspace edit and the user can undo), and
//! leaves alone every file the user changed since the turn, saying so.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use tandem_protocol::{RestoreReport, SkippedFile};
use tandem_sandbox::editor::{
    current_text, BufferText, DiskSync, Editor, FileWrite, WriteError, Written,
};

/// One file a turn changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCheckpoint {
    pub path: PathBuf,
    /// The text before the turn's first write; `None` when the turn created the file (or when
    /// `cannot_restore` says why the earlier text is unknown).
    pub before: Option<String>,
    /// The text the turn's last write left.
    pub after: String,
    /// Why the text before the turn could not be kept (it was not UTF-8, or could not be read).
    /// A restore skips the file with this reason rather than guess what to put back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cannot_restore: Option<String>,
}

/// The files one turn changed, in the order it first wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCheckpoint {
    pub turn_id: String,
    pub files: Vec<FileCheckpoint>,
}

/// A path's record while the turn runs. `after` stays `None` until a write to it succeeds, so
/// a path whose every write failed never shows up in the checkpoint.
struct Entry {
    path: PathBuf,
    before: Option<String>,
    cannot_restore: Option<String>,
    after: Option<String>,
    /// Writes to this path passed on and not yet answered; parallel tool calls may write the
    /// same file, and the record may only be dropped once none of them can still succeed.
    in_flight: usize,
}

/// An `Editor` that records a checkpoint as it passes writes through to `inner`: before the
/// first successful write to a path it reads the current text (buffer or disk), and after each
/// successful write it notes the text written.
pub struct CheckpointEditor {
    inner: Arc<dyn Editor>,
    files: Mutex<Vec<Entry>>,
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
        self.entries()
            .iter()
            .filter_map(|entry| {
                Some(FileCheckpoint {
                    path: entry.path.clone(),
                    before: entry.before.clone(),
                    after: entry.after.clone()?,
                    cannot_restore: entry.cannot_restore.clone(),
                })
            })
            .collect()
    }

    fn entries(&self) -> MutexGuard<'_, Vec<Entry>> {
        // A panic elsewhere while holding the lock leaves the records consistent (every
        // update is a single assignment), so keep using them.
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a write to `path` about to be passed on, recording the text before it when this
    /// is the first.
    fn begin_write(&self, path: &Path) {
        if let Some(entry) = self.entries().iter_mut().find(|entry| entry.path == path) {
            entry.in_flight += 1;
            return;
        }
        // Read outside the lock: the inner editor has its own locks, and the disk is slow.
        let (before, cannot_restore) = match current_text(&*self.inner, path) {
            Ok(None) => (None, None),
            Ok(Some(current)) => match String::from_utf8(current.bytes) {
                Ok(text) => (Some(text), None),
                Err(_) => (
                    None,
                    Some("it is not UTF-8 text; Tandem cannot restore it".to_owned()),
                ),
            },
            Err(error) => (
                None,
                Some(format!(
                    "Tandem could not read it before changing it ({error}), so it does not know \
                     what to put back"
                )),
            ),
        };
        let mut entries = self.entries();
        // Another write to the same path may have recorded it while this one read.
        if let Some(entry) = entries.iter_mut().find(|entry| entry.path == path) {
            entry.in_flight += 1;
            return;
        }
        entries.push(Entry {
            path: path.to_owned(),
            before,
            cannot_restore,
            after: None,
            in_flight: 1,
        });
    }

    fn end_write(&self, path: &Path, written: Option<String>) {
        let mut entries = self.entries();
        let Some(index) = entries.iter().position(|entry| entry.path == path) else {
            return;
        };
        let entry = &mut entries[index];
        entry.in_flight = entry.in_flight.saturating_sub(1);
        match written {
            Some(text) => entry.after = Some(text),
            // Nothing changed, so the text read before may be stale by the next write (the
            // user may be typing): drop it and read again then.
            None if entry.after.is_none() && entry.in_flight == 0 => {
                entries.remove(index);
            }
            None => {}
        }
    }
}

impl Editor for CheckpointEditor {
    fn buffer(&self, path: &Path) -> Option<BufferText> {
        self.inner.buffer(path)
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        Box::pin(async move {
            let path = write.path.clone();
            let new_text = write.new_text.clone();
            self.begin_write(&path);
            let result = self.inner.write(write).await;
            // `Written::Proposed` counts too: the user sees the change as made.
            self.end_write(&path, result.is_ok().then_some(new_text));
            result
        })
    }

    fn delete<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<(), WriteError>> {
        self.inner.delete(path)
    }

    fn refusal(&self, path: &Path, new_text: Option<&str>) -> Option<String> {
        self.inner.refusal(path, new_text)
    }

    fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync> {
        self.inner.sync_to_disk()
    }
}

/// Puts back the files of `checkpoints` (the turn to restore, then every later turn, oldest
/// first) as they were before the first of them: a file whose current text is what the last of
/// these turns left gets its earliest `before` back (a file the turns created is deleted); any
/// other file is skipped with the reason. The report's `turn_id` is the first checkpoint's.
pub async fn restore(editor: &dyn Editor, checkpoints: &[TurnCheckpoint]) -> RestoreReport {
    let mut report = RestoreReport {
        turn_id: checkpoints.first().map(|turn| turn.turn_id.clone()),
        ..RestoreReport::default()
    };
    let mut paths: Vec<&Path> = Vec::new();
    for file in checkpoints.iter().flat_map(|turn| &turn.files) {
        if !paths.contains(&file.path.as_path()) {
            paths.push(&file.path);
        }
    }
    for path in paths {
        let mut files = checkpoints
            .iter()
            .flat_map(|turn| &turn.files)
            .filter(|file| file.path == path);
        let Some(earliest) = files.next() else {
            continue;
        };
        let latest = files.next_back().unwrap_or(earliest);
        match restore_file(editor, path, earliest, &latest.after).await {
            Ok(()) => report.restored.push(path.to_owned()),
            Err(reason) => report.skipped.push(SkippedFile {
                path: path.to_owned(),
                reason,
            }),
        }
    }
    report
}

/// Puts `earliest.before` back into `path` if it still holds `expected`; the error is the
/// reason it was left alone.
async fn restore_file(
    editor: &dyn Editor,
    path: &Path,
    earliest: &FileCheckpoint,
    expected: &str,
) -> Result<(), String> {
    if let Some(reason) = &earliest.cannot_restore {
        return Err(reason.clone());
    }
    let target = earliest.before.as_deref();
    let current = current_text(editor, path)
        .map_err(|error| format!("Tandem could not read it ({error}); it was left as it is"))?;
    let Some(current) = current else {
        return match target {
            None => Ok(()),
            Some(_) => Err("it was deleted since Tandem changed it".to_owned()),
        };
    };
    if target.is_some_and(|target| target.as_bytes() == current.bytes) {
        return Ok(());
    }
    if current.bytes != expected.as_bytes() {
        return Err("you changed it after Tandem did; it was left as it is".to_owned());
    }
    let result = match target {
        Some(text) => editor
            .write(FileWrite {
                path: path.to_owned(),
                old_text: Some(expected.to_owned()),
                new_text: text.to_owned(),
                version: current.version,
            })
            .await
            .map(|_| ()),
        None => editor.delete(path).await,
    };
    result.map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use tandem_sandbox::editor::DiskEditor;

    /// An editor with open buffers: writes to an open file change the buffer (refused when the
    /// version is stale), other writes go to disk; every write is recorded.
    #[derive(Default)]
    struct FakeEditor {
        buffers: Mutex<HashMap<PathBuf, BufferText>>,
        writes: Mutex<Vec<FileWrite>>,
    }

    impl FakeEditor {
        fn open(&self, path: &Path, text: &str, version: i32) {
            self.buffers.lock().unwrap().insert(
                path.to_owned(),
                BufferText {
                    text: text.to_owned(),
                    version,
                },
            );
        }
    }

    impl Editor for FakeEditor {
        fn buffer(&self, path: &Path) -> Option<BufferText> {
            self.buffers.lock().unwrap().get(path).cloned()
        }

        fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
            Box::pin(async move {
                self.writes.lock().unwrap().push(write.clone());
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
                tandem_sandbox::editor::write_to_disk(&write.path, write.new_text.as_bytes()).await
            })
        }

        fn sync_to_disk(&self) -> BoxFuture<'_, tandem_sandbox::editor::DiskSync> {
            Box::pin(async { Default::default() })
        }
    }

    fn file_write(path: &Path, old: Option<&str>, new: &str, version: Option<i32>) -> FileWrite {
        FileWrite {
            path: path.to_owned(),
            old_text: old.map(str::to_owned),
            new_text: new.to_owned(),
            version,
        }
    }

    fn file_checkpoint(path: &Path, before: Option<&str>, after: &str) -> FileCheckpoint {
        FileCheckpoint {
            path: path.to_owned(),
            before: before.map(str::to_owned),
            after: after.to_owned(),
            cannot_restore: None,
        }
    }

    fn turn(id: &str, files: Vec<FileCheckpoint>) -> TurnCheckpoint {
        TurnCheckpoint {
            turn_id: id.to_owned(),
            files,
        }
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    /// Runs one turn's writes through a `CheckpointEditor` over `inner`, as the session does.
    async fn run_turn(inner: Arc<dyn Editor>, id: &str, writes: Vec<FileWrite>) -> TurnCheckpoint {
        let editor = CheckpointEditor::new(inner);
        for write in writes {
            editor.write(write).await.unwrap();
        }
        turn(id, editor.files())
    }

    #[tokio::test]
    async fn records_first_before_and_last_after_and_created_files() {
        let dir = tempfile::tempdir().unwrap();
        let edited = dir.path().join("edited.txt");
        let created = dir.path().join("new/created.txt");
        std::fs::write(&edited, "one\n").unwrap();
        let editor = CheckpointEditor::new(Arc::new(DiskEditor));

        let writes = [
            file_write(&edited, Some("one\n"), "two\n", None),
            file_write(&created, None, "fresh\n", None),
            file_write(&edited, Some("two\n"), "three\n", None),
        ];
        for write in writes {
            assert_eq!(editor.write(write).await, Ok(Written::Disk));
        }

        assert_eq!(
            editor.files(),
            vec![
                file_checkpoint(&edited, Some("one\n"), "three\n"),
                file_checkpoint(&created, None, "fresh\n"),
            ]
        );
        assert_eq!(read(&edited), "three\n");
    }

    #[tokio::test]
    async fn failed_first_write_leaves_no_record_and_the_next_rereads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("open.txt");
        let fake = Arc::new(FakeEditor::default());
        fake.open(&path, "typed\n", 4);
        let editor = CheckpointEditor::new(fake.clone());

        let stale = editor
            .write(file_write(&path, Some("old\n"), "agent\n", Some(3)))
            .await;
        assert_eq!(stale, Err(WriteError::Stale));
        assert_eq!(editor.files(), vec![]);

        // The user typed between the two writes; `before` must be what the write replaced.
        fake.open(&path, "typed more\n", 5);
        let written = editor
            .write(file_write(&path, Some("typed more\n"), "agent\n", Some(5)))
            .await;
        assert_eq!(written, Ok(Written::Buffer));
        assert_eq!(
            editor.files(),
            vec![file_checkpoint(&path, Some("typed more\n"), "agent\n")]
        );
    }

    #[tokio::test]
    async fn failed_later_write_keeps_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("open.txt");
        let fake = Arc::new(FakeEditor::default());
        fake.open(&path, "a\n", 1);
        let editor = CheckpointEditor::new(fake);

        editor
            .write(file_write(&path, Some("a\n"), "b\n", Some(1)))
            .await
            .unwrap();
        let stale = editor
            .write(file_write(&path, Some("b\n"), "c\n", Some(1)))
            .await;
        assert_eq!(stale, Err(WriteError::Stale));
        assert_eq!(
            editor.files(),
            vec![file_checkpoint(&path, Some("a\n"), "b\n")]
        );
    }

    #[tokio::test]
    async fn concurrent_writes_to_one_path_record_it_once_with_the_first_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.txt");
        std::fs::write(&path, "original\n").unwrap();
        let editor = CheckpointEditor::new(Arc::new(DiskEditor));

        let results = futures::future::join_all([
            editor.write(file_write(&path, Some("original\n"), "first\n", None)),
            editor.write(file_write(&path, Some("original\n"), "second\n", None)),
        ])
        .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");

        let files = editor.files();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].before.as_deref(), Some("original\n"));
        // Which write reaches the disk last is the blocking pool's choice (the session never
        // runs two mutating calls at once); `after` is one of them either way.
        assert!(
            ["first\n", "second\n"].contains(&files[0].after.as_str()),
            "{files:?}"
        );
    }

    #[tokio::test]
    async fn restore_after_two_edits_puts_the_original_back_and_deletes_created_files() {
        let dir = tempfile::tempdir().unwrap();
        let edited = dir.path().join("edited.txt");
        let created = dir.path().join("created.txt");
        std::fs::write(&edited, "one\n").unwrap();
        let checkpoint = run_turn(
            Arc::new(DiskEditor),
            "t1",
            vec![
                file_write(&edited, Some("one\n"), "two\n", None),
                file_write(&edited, Some("two\n"), "three\n", None),
                file_write(&created, None, "fresh\n", None),
            ],
        )
        .await;

        let report = restore(&DiskEditor, &[checkpoint]).await;

        assert_eq!(
            report,
            RestoreReport {
                turn_id: Some("t1".to_owned()),
                restored: vec![edited.clone(), created.clone()],
                skipped: vec![],
            }
        );
        assert_eq!(read(&edited), "one\n");
        assert!(!created.exists());
    }

    #[tokio::test]
    async fn restore_across_two_turns_puts_back_each_files_earliest_before() {
        let dir = tempfile::tempdir().unwrap();
        let x = dir.path().join("x.txt");
        let y = dir.path().join("y.txt");
        std::fs::write(&x, "x0\n").unwrap();
        std::fs::write(&y, "y0\n").unwrap();
        let turn_a = run_turn(
            Arc::new(DiskEditor),
            "a",
            vec![file_write(&x, Some("x0\n"), "x1\n", None)],
        )
        .await;
        let turn_b = run_turn(
            Arc::new(DiskEditor),
            "b",
            vec![
                file_write(&x, Some("x1\n"), "x2\n", None),
                file_write(&y, Some("y0\n"), "y1\n", None),
            ],
        )
        .await;
        assert_eq!(turn_b.files[0], file_checkpoint(&x, Some("x1\n"), "x2\n"));

        let report = restore(&DiskEditor, &[turn_a, turn_b]).await;

        assert_eq!(report.turn_id.as_deref(), Some("a"));
        assert_eq!(report.restored, vec![x.clone(), y.clone()]);
        assert_eq!(report.skipped, vec![]);
        assert_eq!(read(&x), "x0\n");
        assert_eq!(read(&y), "y0\n");
    }

    #[tokio::test]
    async fn restore_skips_a_file_the_user_changed_and_restores_the_other() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("mine.txt");
        let other = dir.path().join("other.txt");
        std::fs::write(&mine, "m0\n").unwrap();
        std::fs::write(&other, "o0\n").unwrap();
        let checkpoint = run_turn(
            Arc::new(DiskEditor),
            "t",
            vec![
                file_write(&mine, Some("m0\n"), "m1\n", None),
                file_write(&other, Some("o0\n"), "o1\n", None),
            ],
        )
        .await;
        std::fs::write(&mine, "m1 and the user's line\n").unwrap();

        let report = restore(&DiskEditor, &[checkpoint]).await;

        assert_eq!(report.restored, vec![other.clone()]);
        assert_eq!(
            report.skipped,
            vec![SkippedFile {
                path: mine.clone(),
                reason: "you changed it after Tandem did; it was left as it is".to_owned(),
            }]
        );
        assert_eq!(read(&mine), "m1 and the user's line\n");
        assert_eq!(read(&other), "o0\n");
    }

    #[tokio::test]
    async fn restore_skips_a_file_deleted_since() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.txt");
        std::fs::write(&path, "before\n").unwrap();
        let checkpoint = run_turn(
            Arc::new(DiskEditor),
            "t",
            vec![file_write(&path, Some("before\n"), "after\n", None)],
        )
        .await;
        std::fs::remove_file(&path).unwrap();

        let report = restore(&DiskEditor, &[checkpoint]).await;

        assert_eq!(report.restored, Vec::<PathBuf>::new());
        assert_eq!(
            report.skipped,
            vec![SkippedFile {
                path: path.clone(),
                reason: "it was deleted since Tandem changed it".to_owned(),
            }]
        );
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn restore_counts_files_already_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let edited = dir.path().join("edited.txt");
        let created = dir.path().join("created.txt");
        std::fs::write(&edited, "back\n").unwrap();
        let checkpoints = [turn(
            "t",
            vec![
                file_checkpoint(&edited, Some("back\n"), "changed\n"),
                file_checkpoint(&created, None, "fresh\n"),
            ],
        )];

        let report = restore(&DiskEditor, &checkpoints).await;

        assert_eq!(report.restored, vec![edited.clone(), created.clone()]);
        assert_eq!(report.skipped, vec![]);
        assert_eq!(read(&edited), "back\n");
    }

    #[tokio::test]
    async fn restore_of_no_checkpoints_is_the_default_report() {
        assert_eq!(restore(&DiskEditor, &[]).await, RestoreReport::default());
    }

    #[tokio::test]
    async fn restore_writes_open_buffers_through_the_editor_with_their_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("open.txt");
        std::fs::write(&path, "saved\n").unwrap();
        let fake = Arc::new(FakeEditor::default());
        fake.open(&path, "unsaved\n", 7);
        let checkpoint = run_turn(
            fake.clone(),
            "t",
            vec![file_write(&path, Some("unsaved\n"), "agent\n", Some(7))],
        )
        .await;
        assert_eq!(
            checkpoint.files,
            vec![file_checkpoint(&path, Some("unsaved\n"), "agent\n")]
        );

        let report = restore(&*fake, &[checkpoint]).await;

        assert_eq!(report.restored, vec![path.clone()]);
        assert_eq!(
            fake.writes.lock().unwrap().last(),
            Some(&file_write(&path, Some("agent\n"), "unsaved\n", Some(8)))
        );
        assert_eq!(
            fake.buffer(&path).map(|buffer| buffer.text).as_deref(),
            Some("unsaved\n")
        );
        assert_eq!(read(&path), "saved\n");
    }

    #[tokio::test]
    async fn restore_reports_a_refused_delete_as_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("created.txt");
        let fake = Arc::new(FakeEditor::default());
        let checkpoint = run_turn(
            fake.clone(),
            "t",
            vec![file_write(&path, None, "new\n", None)],
        )
        .await;
        // The user opened the created file; the default delete refuses open files.
        fake.open(&path, "new\n", 1);

        let report = restore(&*fake, &[checkpoint]).await;

        assert_eq!(report.restored, Vec::<PathBuf>::new());
        assert_eq!(report.skipped.len(), 1);
        assert!(
            report.skipped[0].reason.contains("is open in the editor"),
            "{:?}",
            report.skipped
        );
        assert!(path.exists());
    }

    #[tokio::test]
    async fn a_file_that_was_not_utf8_is_recorded_and_skipped_on_restore() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.txt");
        std::fs::write(&path, b"caf\xe9\n").unwrap();
        let checkpoint = run_turn(
            Arc::new(DiskEditor),
            "t",
            vec![file_write(&path, None, "café\n", None)],
        )
        .await;
        let reason = "it is not UTF-8 text; Tandem cannot restore it";
        assert_eq!(checkpoint.files[0].cannot_restore.as_deref(), Some(reason));

        let report = restore(&DiskEditor, &[checkpoint]).await;

        assert_eq!(
            report.skipped,
            vec![SkippedFile {
                path: path.clone(),
                reason: reason.to_owned(),
            }]
        );
        assert_eq!(read(&path), "café\n");
    }

    #[test]
    fn checkpoints_without_cannot_restore_deserialize_and_omit_it() {
        let json = r#"{"path":"a.txt","before":null,"after":"x"}"#;
        let file: FileCheckpoint = serde_json::from_str(json).unwrap();
        assert_eq!(file, file_checkpoint(Path::new("a.txt"), None, "x"));
        assert_eq!(serde_json::to_string(&file).unwrap(), json);
    }
}
