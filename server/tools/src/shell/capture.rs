//! What a shell command printed, as the model will see it: all of it while it is small; past
//! `INLINE_MAX`, its head, a rolling tail and the full text in a log file under `.tandem/tmp/`
//! in the workspace, where `read_file` and `grep` can reach it. The log directory is resolved
//! through the sandbox and files are created without following symbolic links, so a
//! `.tandem/tmp` that links out of the workspace gets no logs (and the model is told why).
//! Command output is conversation text (a command may print a secret): the folder is the
//! user's alone (`0700`, tightened if an earlier version left it wider) and each log `0600`.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tandem_sandbox::files::Open;
use tandem_sandbox::workspace::Workspace;

/// Output up to this size goes to the model whole (less when the model's context window
/// leaves less: see `Capture::new`). Beyond it, the model sees a quarter of this from the
/// start and three quarters from the end: the end of a build or test log is where the
/// verdict is.
pub(super) const INLINE_MAX: usize = 16 * 1024;
/// The full-output log stops growing here, so a runaway command cannot fill the disk.
const LOG_MAX: u64 = 64 * 1024 * 1024;
/// Where logs go, relative to the primary root: inside the workspace so `read_file` can read them.
pub(super) const LOG_DIR: &str = ".tandem/tmp";

/// The output of a command as the model will see it: all of it while it is small; past
/// `INLINE_MAX`, its head, a rolling tail and the full text in a log file.
pub(super) struct Capture {
    /// Where a long output's log goes, or why it cannot go anywhere.
    log_dir: Result<PathBuf, String>,
    /// `INLINE_MAX` and the head and tail shown beyond it, scaled down for a small window.
    inline_max: usize,
    head_max: usize,
    tail_max: usize,
    /// All output while it fits in `inline_max`; after that, its first `head_max` bytes.
    head: Vec<u8>,
    /// The last `tail_max` bytes (and the one before them), once the output has outgrown
    /// `inline_max`.
    tail: VecDeque<u8>,
    total: u64,
    log: Option<Log>,
    /// Set when the call is over.
    pub(super) closed: bool,
}

/// The full-output file of a long output.
pub(super) struct Log {
    path: PathBuf,
    /// `None` once writing failed or the log reached `LOG_MAX`.
    file: Option<File>,
    written: u64,
    error: Option<String>,
}

impl Capture {
    /// A capture that shows the model at most `inline_max` bytes (capped at `INLINE_MAX`)
    /// before it keeps only a head and a tail.
    pub(super) fn new(log_dir: Result<PathBuf, String>, inline_max: usize) -> Self {
        let inline_max = inline_max.min(INLINE_MAX);
        let head_max = inline_max / 4;
        Capture {
            log_dir,
            inline_max,
            head_max,
            tail_max: inline_max - head_max,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            log: None,
            closed: false,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let log = match &mut self.log {
            Some(log) => log,
            None if self.head.len() + chunk.len() <= self.inline_max => {
                self.head.extend_from_slice(chunk);
                return;
            }
            None => {
                // Outgrown: from now on keep the head, a rolling tail, and everything on disk.
                let created = match &self.log_dir {
                    Ok(dir) => create_log(dir).map_err(|error| error.to_string()),
                    Err(why) => Err(why.clone()),
                };
                let mut log = match created {
                    Ok((path, file)) => Log {
                        path,
                        file: Some(file),
                        written: 0,
                        error: None,
                    },
                    Err(error) => Log {
                        path: PathBuf::new(),
                        file: None,
                        written: 0,
                        error: Some(error),
                    },
                };
                log.write(&self.head);
                self.tail
                    .extend(self.head.drain(self.head_max.min(self.head.len())..));
                self.log.insert(log)
            }
        };
        log.write(chunk);
        // The head fills up first (the first chunk alone may outgrow `inline_max`), the tail
        // takes the rest.
        let to_head = self
            .head_max
            .saturating_sub(self.head.len())
            .min(chunk.len());
        self.head.extend_from_slice(&chunk[..to_head]);
        self.tail.extend(&chunk[to_head..]);
        let excess = self.tail.len().saturating_sub(self.tail_max + 1);
        self.tail.drain(..excess);
    }

    /// The output for the model, with a marker where the middle was cut.
    pub(super) fn render(&self, workspace: &Workspace) -> String {
        let Some(log) = &self.log else {
            return String::from_utf8_lossy(&self.head).into_owned();
        };
        // Cut at line boundaries where a line ends near the cut, so the model sees whole lines.
        let mut head = self.head.as_slice();
        if let Some(newline) = head.iter().rposition(|&byte| byte == b'\n') {
            if newline >= self.head_max / 2 {
                head = &head[..=newline];
            }
        }
        let (tail_front, tail_back) = self.tail.as_slices();
        let tail_bytes = [tail_front, tail_back].concat();
        // The tail keeps one byte more than it shows, to tell whether it starts a line.
        let (before, mut tail) = match tail_bytes.split_first() {
            Some((&before, tail)) if tail_bytes.len() > self.tail_max => (Some(before), tail),
            _ => (None, tail_bytes.as_slice()),
        };
        if before != Some(b'\n') {
            if let Some(newline) = tail.iter().position(|&byte| byte == b'\n') {
                if newline < self.tail_max / 2 {
                    tail = &tail[newline + 1..];
                }
            }
        }
        let omitted = self.total - head.len() as u64 - tail.len() as u64;
        let total = self.total;
        let shown_log = workspace.display(&log.path);
        let where_ = match &log.error {
            Some(error) => format!(
                "the full output could not be saved ({error}); rerun the command with its output \
                 filtered (`| grep PATTERN`, `| tail -n 200`) to see other parts"
            ),
            None if log.written < total => format!(
                "the first {} bytes of the output are in {shown_log}; read it with read_file or \
                 search it with grep",
                log.written
            ),
            None => format!(
                "the full output ({total} bytes) is in {shown_log}; read it with read_file or \
                 search it with grep"
            ),
        };
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[... {omitted} bytes omitted: {where_} ...]\n"));
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

impl Log {
    fn write(&mut self, bytes: &[u8]) {
        let Some(file) = &mut self.file else {
            return;
        };
        let room = usize::try_from(LOG_MAX - self.written).unwrap_or(usize::MAX);
        let bytes = &bytes[..bytes.len().min(room)];
        if let Err(error) = file.write_all(bytes) {
            self.error = Some(format!("writing {} failed: {error}", self.path.display()));
            self.file = None;
            return;
        }
        self.written += bytes.len() as u64;
        if self.written >= LOG_MAX {
            self.file = None;
        }
    }
}

/// Where logs go in `workspace`: `.tandem/tmp` under the primary root, resolved through the
/// sandbox, so a `.tandem` or `.tandem/tmp` that links out of the workspace is refused.
pub(super) fn log_dir(workspace: &Workspace) -> Result<PathBuf, String> {
    workspace
        .resolve(LOG_DIR)
        .map_err(|error| format!("{LOG_DIR} cannot hold it: {error}"))
}

/// Creates a new, uniquely named log file in `dir` (made ignored by git with a `.gitignore` of
/// `*`, so logs never show up as changes), private, without following symbolic links.
pub(super) fn create_log(dir: &Path) -> std::io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    tandem_sandbox::files::create_private_subdir(dir)?;
    match tandem_sandbox::files::open(&dir.join(".gitignore"), Open::CreateNew, 0o600, 0o700) {
        Ok(mut gitignore) => gitignore.write_all(b"*\n")?,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("shell-{millis}-{}-{count}.log", std::process::id()));
    let file = tandem_sandbox::files::open(&path, Open::CreateNew, 0o600, 0o700)?;
    Ok((path, file))
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use tandem_sandbox::files::mode;

    /// Issue 35, finding 5: the full output of a long command (`env` printed a secret) was
    /// saved readable by everyone. The log and its folder are private, and a folder an earlier
    /// version made readable is tightened when the next log goes into it.
    #[test]
    fn long_outputs_are_saved_privately() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let workspace = Workspace::new(vec![root.clone()], Vec::new());
        let dir = root.join(LOG_DIR);
        // (the folder before: none, or as an earlier version left it)
        for before in [None, Some(0o755)] {
            if let Some(before) = before {
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(before)).unwrap();
            }
            let mut capture = Capture::new(log_dir(&workspace), INLINE_MAX);
            capture.push(&b"SECRET=hunter2\n".repeat(INLINE_MAX / 10));
            let log = capture.log.as_ref().unwrap();
            assert_eq!(log.error, None);
            assert!(std::fs::read_to_string(&log.path)
                .unwrap()
                .starts_with("SECRET=hunter2\n"));
            assert_eq!(mode(&log.path), 0o600, "{before:?}");
            assert_eq!(mode(&dir), 0o700, "{before:?}");
            assert_eq!(mode(&dir.join(".gitignore")), 0o600, "{before:?}");
        }
    }
}
