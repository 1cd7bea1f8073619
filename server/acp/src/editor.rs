//! The agent's `Editor` for a client that offers its file system (`fs/read_text_file`,
//! `fs/write_text_file`): writes go through the client, so they land in the editor's buffers
//! (Zed edits the buffer and saves it) and the user sees them there; reads see the client's
//! text, unsaved changes included, for the files this session is about.
//!
//! Which files are read through the client: ACP cannot say which buffers are open, and a read
//! makes the client load the file (Zed opens a buffer for it), so the tools' walks over the
//! workspace (the repo map, `references`, `grep`) must not each become a request. The client
//! is asked only about the files the session has *in play*: those the user attached to a
//! prompt, those written through the client, and those a write found changed in the editor.
//! Everything else is read from the disk, as `tandem ask` does. Before every write the file is
//! read through the client and compared with the text the change was computed from, so a
//! change is never written over unsaved text it was not computed from: the write is refused as
//! stale, the file comes into play, and the core works the change out again on the editor's
//! text (`tools::user_edits`). Between those checks a file's text is read through the client
//! once per prompt (`ClientFs::forget_reads`), however many tools look at it, and a write's
//! text is taken as the client's: ACP tells nothing of the client's versions, so a new prompt,
//! which may follow the user's typing, is when a file is read again.
//!
//! `Editor::buffer` is synchronous and the client answers asynchronously. The bridge is
//! `tokio::task::block_in_place` plus `Handle::block_on` on the multi-thread runtime. It cannot
//! deadlock the connection: the thread it blocks runs a tool in a session's task, never the
//! connection's dispatch loop (which runs on the task driving `serve` and never waits for a
//! session), and `block_in_place` hands that worker's other tasks to the rest of the pool; the
//! request is only pushed onto the connection's outgoing queue, and its answer is routed by the
//! dispatch loop. A client that never answers costs `READ_TIMEOUT` and the disk's text. On a
//! current-thread runtime (where blocking would stall everything) the disk is read instead.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tandem_agent::editor::{write_to_disk, BufferText, DiskSync, FileWrite, WriteError, Written};
use tandem_agent::Editor;
use tokio::runtime::{Handle, RuntimeFlavor};

/// How long a read through the client may take before the disk is read instead.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write through the client may take before it is reported as failed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Files larger than this on disk are read from the disk: a client round trip of megabytes of
/// JSON for a file the user is unlikely to have unsaved changes in is not worth it.
pub const MAX_CLIENT_READ_BYTES: u64 = 8 * 1024 * 1024;

/// The client's file system, as the editor uses it (the connection in the server, a fake in
/// tests). Errors are the client's words.
pub trait ClientFiles: Send + Sync + 'static {
    fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<String, String>>;
    fn write(&self, path: PathBuf, text: String) -> BoxFuture<'static, Result<(), String>>;
}

/// One session's view of the client's files: what the client offers, which files are in play
/// and the versions handed out for their text. Shared by the session's editors (one per
/// settings change) and by the prompt's attachments.
pub struct ClientFs {
    files: Arc<dyn ClientFiles>,
    can_read: bool,
    can_write: bool,
    read_timeout: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    in_play: HashSet<PathBuf>,
    /// The client's text of each file as last read or written, reused by the tools' reads
    /// until the next prompt: one edit reads a file many times (its preview, its run, the
    /// syntax and diagnostics checks, the context), and each was a round trip. The check before
    /// a write always asks the client, so a change the user typed meanwhile is still never
    /// written over.
    cache: HashMap<PathBuf, String>,
    /// The hash of the client's text of a file and the version that text was given: the
    /// version grows whenever the text seen changes.
    versions: HashMap<PathBuf, (u64, i32)>,
}

impl ClientFs {
    pub fn new(files: Arc<dyn ClientFiles>, can_read: bool, can_write: bool) -> Arc<ClientFs> {
        Arc::new(ClientFs {
            files,
            can_read,
            can_write,
            read_timeout: READ_TIMEOUT,
            state: Mutex::default(),
        })
    }

    /// Whether the client offers anything: without, the session uses the disk.
    pub fn offers_anything(&self) -> bool {
        self.can_read || self.can_write
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// From now on `path` is read through the client.
    pub fn put_in_play(&self, path: &Path) {
        self.state().in_play.insert(path.to_path_buf());
    }

    fn in_play(&self, path: &Path) -> bool {
        self.state().in_play.contains(path)
    }

    /// Forgets the texts read so far: a new prompt may follow the user's typing, so each file
    /// is read once again, when it is next needed.
    pub fn forget_reads(&self) {
        self.state().cache.clear();
    }

    fn remember(&self, path: &Path, text: Option<&str>) {
        let mut state = self.state();
        match text {
            Some(text) => state.cache.insert(path.to_path_buf(), text.to_owned()),
            None => state.cache.remove(path),
        };
    }

    /// The version of `text` as the client's text of `path`.
    fn version(&self, path: &Path, text: &str) -> i32 {
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        let hash = hasher.finish();
        let mut state = self.state();
        let entry = state
            .versions
            .entry(path.to_path_buf())
            .or_insert((hash, 1));
        if entry.0 != hash {
            *entry = (hash, entry.1.saturating_add(1));
        }
        entry.1
    }

    /// The client's text of `path` for a prompt's attachment (which puts it in play), with its
    /// version when it differs from the disk; `None` when the client cannot read or did not
    /// answer, and the caller reads the disk.
    pub async fn read_for_prompt(&self, path: &Path) -> Option<(String, Option<i32>)> {
        if !self.can_read {
            return None;
        }
        self.put_in_play(path);
        let text = tokio::time::timeout(self.read_timeout, self.files.read(path.to_path_buf()))
            .await
            .ok()?
            .map_err(|error| {
                tracing::warn!("the client could not read {}: {error}", path.display())
            })
            .ok()?;
        self.remember(path, Some(&text));
        let on_disk = std::fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes());
        let version = (!on_disk).then(|| self.version(path, &text));
        Some((text, version))
    }

    /// The client's text of `path`, as last read since the prompt or else waited for from
    /// synchronous code; `None` when it cannot be had (see the module's notes on why this
    /// cannot deadlock).
    fn read_blocking(&self, path: &Path) -> Option<String> {
        if let Some(text) = self.state().cache.get(path) {
            return Some(text.clone());
        }
        let handle = Handle::try_current().ok()?;
        if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
            return None;
        }
        let read = self.files.read(path.to_path_buf());
        let answer = tokio::task::block_in_place(|| {
            handle.block_on(tokio::time::timeout(self.read_timeout, read))
        });
        match answer {
            Ok(Ok(text)) => {
                self.remember(path, Some(&text));
                Some(text)
            }
            Ok(Err(error)) => {
                tracing::debug!("the client could not read {}: {error}", path.display());
                None
            }
            Err(_) => {
                tracing::warn!(
                    "the client did not answer fs/read_text_file for {} within {} s; reading the \
                     disk",
                    path.display(),
                    self.read_timeout.as_secs()
                );
                None
            }
        }
    }
}

/// The `Editor` a session's tools use when the client offers its file system.
pub struct ClientEditor {
    fs: Arc<ClientFs>,
}

impl ClientEditor {
    pub fn new(fs: Arc<ClientFs>) -> ClientEditor {
        ClientEditor { fs }
    }
}

fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

impl Editor for ClientEditor {
    /// The client's text of a file in play when it differs from the disk (unsaved changes);
    /// otherwise `None`, and the tools read the disk.
    fn buffer(&self, path: &Path) -> Option<BufferText> {
        if !self.fs.can_read || !self.fs.in_play(path) {
            return None;
        }
        let disk = match std::fs::metadata(path) {
            Ok(metadata) if metadata.len() > MAX_CLIENT_READ_BYTES => return None,
            Ok(_) => std::fs::read(path).ok(),
            Err(_) => None,
        };
        let text = self.fs.read_blocking(path)?;
        if disk.as_deref() == Some(text.as_bytes()) {
            return None;
        }
        let version = self.fs.version(path, &text);
        Some(BufferText { text, version })
    }

    fn write<'a>(&'a self, write: FileWrite) -> BoxFuture<'a, Result<Written, WriteError>> {
        Box::pin(async move {
            let fs = &self.fs;
            if !fs.can_write {
                return write_to_disk(&write.path, write.new_text.as_bytes()).await;
            }
            // The change was computed from `old_text`: if the editor holds something else now
            // (the user typed, unsaved), refuse, and let the core redo it on the editor's text.
            if let (true, Some(old)) = (fs.can_read, &write.old_text) {
                let current =
                    tokio::time::timeout(fs.read_timeout, fs.files.read(write.path.clone())).await;
                if let Ok(Ok(current)) = current {
                    fs.remember(&write.path, Some(&current));
                    if without_bom(&current) != without_bom(old) {
                        fs.put_in_play(&write.path);
                        return Err(WriteError::Stale);
                    }
                }
            }
            fs.put_in_play(&write.path);
            let written = tokio::time::timeout(
                WRITE_TIMEOUT,
                fs.files.write(write.path.clone(), write.new_text.clone()),
            )
            .await;
            match written {
                Ok(Ok(())) => {
                    fs.remember(&write.path, Some(&write.new_text));
                    fs.version(&write.path, &write.new_text);
                    // The client writes the file (Zed edits its buffer and saves it), so what
                    // reads the disk sees the change too.
                    Ok(Written::Disk)
                }
                Ok(Err(error)) => {
                    fs.remember(&write.path, None);
                    Err(WriteError::Failed(format!(
                        "the editor could not write {}: {error}",
                        write.path.display()
                    )))
                }
                Err(_) => {
                    fs.remember(&write.path, None);
                    Err(WriteError::Failed(format!(
                        "the editor did not answer the write of {} within {} s; it may or may not \
                     have been made, so read the file again before changing it",
                        write.path.display(),
                        WRITE_TIMEOUT.as_secs()
                    )))
                }
            }
        })
    }

    /// ACP has no way to delete through the client: the file is deleted on disk.
    fn delete<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<(), WriteError>> {
        Box::pin(async move {
            tokio::fs::remove_file(path).await.map_err(|error| {
                WriteError::Failed(format!("cannot delete {}: {error}", path.display()))
            })
        })
    }

    /// Nothing to do: `fs/write_text_file` writes the file (Zed saves the buffer it edits), so
    /// every change is on disk once written.
    fn sync_to_disk(&self) -> BoxFuture<'_, DiskSync> {
        Box::pin(async { DiskSync::default() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client holding `buffers` (path → text) that logs every request.
    #[derive(Default)]
    struct FakeClient {
        buffers: Mutex<HashMap<PathBuf, String>>,
        log: Mutex<Vec<String>>,
    }

    impl ClientFiles for Arc<FakeClient> {
        fn read(&self, path: PathBuf) -> BoxFuture<'static, Result<String, String>> {
            let client = self.clone();
            Box::pin(async move {
                client
                    .log
                    .lock()
                    .unwrap()
                    .push(format!("read {}", path.display()));
                match client.buffers.lock().unwrap().get(&path) {
                    Some(text) => Ok(text.clone()),
                    None => std::fs::read_to_string(&path).map_err(|error| error.to_string()),
                }
            })
        }

        fn write(&self, path: PathBuf, text: String) -> BoxFuture<'static, Result<(), String>> {
            let client = self.clone();
            Box::pin(async move {
                client
                    .log
                    .lock()
                    .unwrap()
                    .push(format!("write {}", path.display()));
                std::fs::write(&path, &text).map_err(|error| error.to_string())?;
                client.buffers.lock().unwrap().insert(path, text);
                Ok(())
            })
        }
    }

    fn setup() -> (tempfile::TempDir, PathBuf, Arc<FakeClient>, ClientEditor) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "disk\n").unwrap();
        let client = Arc::new(FakeClient::default());
        let fs = ClientFs::new(Arc::new(client.clone()), true, true);
        (dir, path, client, ClientEditor::new(fs))
    }

    fn log(client: &FakeClient) -> Vec<String> {
        std::mem::take(&mut *client.log.lock().unwrap())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn files_not_in_play_are_read_from_disk_without_asking_the_client() {
        let (_dir, path, client, editor) = setup();
        client
            .buffers
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved\n".into());
        assert_eq!(editor.buffer(&path), None);
        assert!(log(&client).is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_in_play_shows_its_unsaved_text_with_a_version_that_follows_it() {
        let (_dir, path, client, editor) = setup();
        editor.fs.put_in_play(&path);
        // The same text as the disk is no buffer: the tools read the disk.
        assert_eq!(editor.buffer(&path), None);
        client
            .buffers
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved\n".into());
        editor.fs.forget_reads();
        let first = editor.buffer(&path).unwrap();
        assert_eq!(first.text, "unsaved\n");
        assert_eq!(editor.buffer(&path).unwrap().version, first.version);
        client
            .buffers
            .lock()
            .unwrap()
            .insert(path.clone(), "typed more\n".into());
        editor.fs.forget_reads();
        assert!(editor.buffer(&path).unwrap().version > first.version);
        // Read from a blocking thread too, as the tools that walk files do.
        let blocking = {
            let path = path.clone();
            let fs = editor.fs.clone();
            tokio::task::spawn_blocking(move || ClientEditor::new(fs).buffer(&path))
                .await
                .unwrap()
        };
        assert_eq!(blocking.unwrap().text, "typed more\n");
    }

    /// One edit of one file cost ten `fs/read_text_file` round trips: a file's text is read
    /// once until the next prompt, while the check before a write always asks.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_is_read_through_the_client_once_per_prompt_and_before_each_write() {
        let (_dir, path, client, editor) = setup();
        editor.fs.put_in_play(&path);
        client
            .buffers
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved\n".into());
        for _ in 0..3 {
            assert_eq!(editor.buffer(&path).unwrap().text, "unsaved\n");
        }
        let read = format!("read {}", path.display());
        assert_eq!(log(&client), std::slice::from_ref(&read));
        let written = editor
            .write(FileWrite {
                path: path.clone(),
                old_text: Some("unsaved\n".into()),
                new_text: "agent\n".into(),
                version: None,
            })
            .await;
        assert_eq!(written, Ok(Written::Disk));
        // The write's own text is what the client holds now: no read after it.
        assert_eq!(editor.buffer(&path), None);
        assert_eq!(
            log(&client),
            [read.clone(), format!("write {}", path.display())]
        );
        // A new prompt reads again.
        editor.fs.forget_reads();
        assert_eq!(editor.buffer(&path), None);
        assert_eq!(log(&client), [read]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_current_thread_runtime_reads_the_disk_rather_than_block() {
        let (_dir, path, client, editor) = setup();
        editor.fs.put_in_play(&path);
        client
            .buffers
            .lock()
            .unwrap()
            .insert(path.clone(), "unsaved\n".into());
        assert_eq!(editor.buffer(&path), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_go_through_the_client_after_checking_its_text() {
        let (_dir, path, client, editor) = setup();
        let written = editor
            .write(FileWrite {
                path: path.clone(),
                old_text: Some("disk\n".into()),
                new_text: "agent\n".into(),
                version: None,
            })
            .await;
        assert_eq!(written, Ok(Written::Disk));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "agent\n");
        let path_shown = path.display();
        assert_eq!(
            log(&client),
            [format!("read {path_shown}"), format!("write {path_shown}")]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_over_unsaved_text_is_refused_as_stale_and_the_file_comes_into_play() {
        let (_dir, path, client, editor) = setup();
        client
            .buffers
            .lock()
            .unwrap()
            .insert(path.clone(), "user typed\n".into());
        let written = editor
            .write(FileWrite {
                path: path.clone(),
                old_text: Some("disk\n".into()),
                new_text: "agent\n".into(),
                version: None,
            })
            .await;
        assert_eq!(written, Err(WriteError::Stale));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "disk\n");
        // What the core reads next is the editor's text, with a version to write against.
        let buffer = editor.buffer(&path).unwrap();
        assert_eq!(buffer.text, "user typed\n");
        let written = editor
            .write(FileWrite {
                path: path.clone(),
                old_text: Some(buffer.text),
                new_text: "user typed\nagent\n".into(),
                version: Some(buffer.version),
            })
            .await;
        assert_eq!(written, Ok(Written::Disk));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_the_write_capability_writes_go_to_disk() {
        let (_dir, path, client, _) = setup();
        let editor = ClientEditor::new(ClientFs::new(Arc::new(client.clone()), true, false));
        let written = editor
            .write(FileWrite {
                path: path.clone(),
                old_text: Some("disk\n".into()),
                new_text: "agent\n".into(),
                version: None,
            })
            .await;
        assert_eq!(written, Ok(Written::Disk));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "agent\n");
        assert!(log(&client).is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_never_answers_costs_the_timeout_then_the_disk() {
        struct Silent;
        impl ClientFiles for Silent {
            fn read(&self, _: PathBuf) -> BoxFuture<'static, Result<String, String>> {
                Box::pin(futures::future::pending())
            }
            fn write(&self, _: PathBuf, _: String) -> BoxFuture<'static, Result<(), String>> {
                Box::pin(futures::future::pending())
            }
        }
        let (_dir, path, _, _) = setup();
        let mut fs = ClientFs::new(Arc::new(Silent), true, true);
        Arc::get_mut(&mut fs).unwrap().read_timeout = Duration::from_millis(50);
        let editor = ClientEditor::new(fs);
        editor.fs.put_in_play(&path);
        let path_for_read = path.clone();
        let read = tokio::task::spawn_blocking(move || editor.buffer(&path_for_read));
        assert_eq!(read.await.unwrap(), None);
    }
}
