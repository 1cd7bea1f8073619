//! Running one hook command: the shell's invocation in its own process group, in the workspace
//! root, in the OS sandbox (`ShellEnvironment::sandbox`), with the shell tool's environment (no
//! model keys) plus `TANDEM_PROJECT_DIR` and `CLAUDE_PROJECT_DIR` (and a plugin's hook its
//! folder as `CLAUDE_PLUGIN_ROOT`, given by the caller); the event as JSON on stdin;
//! stdout and stderr kept up to a cap each; past the timeout the whole group is killed.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use tandem_sandbox::confine::Plan;
use tandem_tools::shell::{shell_command, signal_group, Kill, ShellEnvironment};

/// The most of stdout, and of stderr, a hook's run keeps.
pub const OUTPUT_CAP: usize = 64 * 1024;
/// How long output is still read after the hook exited: processes it left in the background
/// may hold its pipes open.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How long a killed group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// How a hook command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited; `None` when a signal ended it.
    Exited(Option<i32>),
    TimedOut(Duration),
    /// It could not be started: why.
    NotStarted(String),
}

/// What one run of a hook command gave.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ending: Ending,
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

/// Runs `command` in `root` with `input` on stdin, for at most `timeout`, with the variables
/// `extra` set beside the environment's.
pub async fn run(
    command: &str,
    input: &[u8],
    root: &Path,
    environment: &ShellEnvironment,
    timeout: Duration,
    extra: &[(&str, &Path)],
) -> Finished {
    let started = Instant::now();
    let finished = |ending, stdout: String, stderr: String| Finished {
        ending,
        stdout,
        stderr,
        duration: started.elapsed(),
    };
    let plan = environment.sandbox().plan(None, false);
    if let Plan::Refused(why) = &plan {
        let why = format!("did not start `{command}`: {why}");
        return finished(Ending::NotStarted(why), String::new(), String::new());
    }
    let mut cmd = shell_command(command, environment, &plan);
    cmd.current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .env("TANDEM_PROJECT_DIR", root)
        .env("CLAUDE_PROJECT_DIR", root);
    for (name, value) in extra {
        cmd.env(name, value);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(error) => {
            let why = format!("could not start `{command}` in {}: {error}", root.display());
            return finished(Ending::NotStarted(why), String::new(), String::new());
        }
    };
    let mut guard = GroupGuard { pid: child.id() };
    let stdout = Arc::new(Mutex::new(Capture::default()));
    let stderr = Arc::new(Mutex::new(Capture::default()));
    let readers = [
        child
            .stdout
            .take()
            .map(|pipe| tokio::spawn(read_capped(pipe, Arc::clone(&stdout)))),
        child
            .stderr
            .take()
            .map(|pipe| tokio::spawn(read_capped(pipe, Arc::clone(&stderr)))),
    ];
    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A hook that does not read its input closes the pipe: that is no error.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let ending = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => Ending::Exited(status.code()),
        Ok(Err(error)) => Ending::NotStarted(format!("waiting for `{command}` failed: {error}")),
        Err(_) => {
            signal_group(guard.pid, Kill::Terminate);
            let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
            signal_group(guard.pid, Kill::Kill);
            let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
            Ending::TimedOut(timeout)
        }
    };
    guard.pid = None;
    for reader in readers.into_iter().flatten() {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN_GRACE, reader).await.is_err() {
            abort.abort();
        }
    }
    let text = |capture: &Arc<Mutex<Capture>>| {
        capture
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .text()
    };
    finished(ending, text(&stdout), text(&stderr))
}

/// Output kept up to `OUTPUT_CAP`, and whether more was cut.
#[derive(Default)]
struct Capture {
    kept: Vec<u8>,
    cut: bool,
}

impl Capture {
    fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.cut {
            text.push_str(&format!("\n[output cut at {} KiB]", OUTPUT_CAP / 1024));
        }
        text
    }
}

/// Reads `pipe` to its end, keeping the first `OUTPUT_CAP` bytes (the rest is read and
/// dropped, so the hook is never stuck on a full pipe).
async fn read_capped(mut pipe: impl AsyncRead + Unpin, capture: Arc<Mutex<Capture>>) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let mut capture = capture.lock().unwrap_or_else(PoisonError::into_inner);
                let room = OUTPUT_CAP.saturating_sub(capture.kept.len());
                if read > room {
                    capture.cut = true;
                }
                capture.kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
    }
}

/// Kills the hook's process group when the run is dropped (a cancelled turn) before it ended.
struct GroupGuard {
    pid: Option<u32>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.pid, Kill::Kill);
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    async fn run_here(command: &str, timeout: Duration) -> (tempfile::TempDir, Finished) {
        let dir = tempfile::tempdir().unwrap();
        let environment = ShellEnvironment::default();
        let finished = run(
            command,
            b"{\"a\": 1}",
            dir.path(),
            &environment,
            timeout,
            &[("CLAUDE_PLUGIN_ROOT", Path::new("/plugins/p"))],
        )
        .await;
        (dir, finished)
    }

    #[tokio::test]
    async fn a_hook_reads_its_input_and_its_output_and_exit_code_are_kept() {
        let (dir, finished) = run_here(
            "cat; echo; echo \"$TANDEM_PROJECT_DIR $CLAUDE_PROJECT_DIR $PWD $CLAUDE_PLUGIN_ROOT\" >&2; exit 3",
            Duration::from_secs(10),
        )
        .await;
        let root = dir.path().display().to_string();
        assert_eq!(finished.ending, Ending::Exited(Some(3)));
        assert_eq!(finished.stdout, "{\"a\": 1}\n");
        let pwd = std::fs::canonicalize(dir.path())
            .unwrap()
            .display()
            .to_string();
        assert_eq!(finished.stderr, format!("{root} {root} {pwd} /plugins/p\n"));
    }

    #[tokio::test]
    async fn output_past_the_cap_is_cut_with_a_note() {
        let (_dir, finished) = run_here(
            "head -c 200000 /dev/zero | tr '\\0' x",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(finished.ending, Ending::Exited(Some(0)));
        assert!(finished.stdout.starts_with(&"x".repeat(OUTPUT_CAP)));
        assert!(
            finished.stdout.ends_with("\n[output cut at 64 KiB]"),
            "{}",
            &finished.stdout[OUTPUT_CAP..]
        );
    }

    #[tokio::test]
    async fn a_command_that_cannot_start_is_reported() {
        let environment = ShellEnvironment::default();
        let finished = run(
            "true",
            b"",
            Path::new("/nonexistent/tandem-hooks"),
            &environment,
            Duration::from_secs(1),
            &[],
        )
        .await;
        assert!(
            matches!(finished.ending, Ending::NotStarted(_)),
            "{finished:?}"
        );
    }
}
