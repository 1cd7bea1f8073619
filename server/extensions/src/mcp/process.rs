//! The program of a stdio server: started in its own process group (so that stopping it stops
//! whatever it started, `npx` and the node behind it), with Tandem's environment minus the
//! model keys plus the configured `env`, its stderr read line by line into the log and kept as
//! a short tail for failure messages, and its exit noticed. Dropping the `Process` stops the
//! whole group: SIGTERM, then SIGKILL after a short grace.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{oneshot, watch};

use tandem_sandbox::confine::{Escalation, Plan};
use tandem_tools::shell::ShellEnvironment;

/// Lines of stderr kept for failure messages.
const STDERR_LINES: usize = 20;
/// Bytes of one stderr line kept (the log gets the same); the rest of a longer line is dropped.
const MAX_STDERR_LINE: usize = 1000;
/// How long a stopped server has to exit on SIGTERM before its group is killed.
const GRACE: Duration = Duration::from_secs(2);

/// A running (or exited) server program.
pub(crate) struct Process {
    pid: Option<u32>,
    stderr: Arc<StderrTail>,
    /// How the program ended, once it has.
    exit: watch::Receiver<Option<String>>,
    /// Asks the task that waits on the child to kill it (where there are no process groups).
    kill: Option<oneshot::Sender<()>>,
}

/// The last lines a program printed on stderr, and whether its stderr has closed.
#[derive(Default)]
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    closed: Mutex<Option<watch::Receiver<bool>>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn lines(&self) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().cloned().collect()
    }
}

/// A program's end and its stderr, watched without owning it.
#[derive(Clone)]
pub(crate) struct ProcessWatch {
    exit: watch::Receiver<Option<String>>,
    stderr: Arc<StderrTail>,
}

impl ProcessWatch {
    /// How the program ended ("exited with status 1"), waiting up to `wait` for it to end and
    /// for the rest of its stderr; `None` while it runs.
    pub(crate) async fn exit(&self, wait: Duration) -> Option<String> {
        let mut exit = self.exit.clone();
        let ended = tokio::time::timeout(wait, exit.wait_for(Option::is_some))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|status| status.clone());
        if ended.is_some() {
            let closed = self
                .stderr
                .closed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(mut closed) = closed {
                let _ = tokio::time::timeout(wait, closed.wait_for(|closed| *closed)).await;
            }
        }
        ended
    }

    /// The last lines the program printed on stderr.
    pub(crate) fn stderr(&self) -> Vec<String> {
        self.stderr.lines()
    }
}

/// What to start.
pub(crate) struct Launch<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    /// Already resolved against the workspace root.
    pub cwd: Option<PathBuf>,
    pub environment: &'a ShellEnvironment,
    /// Whether it has the network in the OS sandbox.
    pub network: bool,
}

impl Process {
    /// Starts the program; `Err` says, for the user, why it could not be started.
    pub(crate) fn spawn(launch: Launch<'_>) -> Result<(Process, ChildStdout, ChildStdin), String> {
        let Launch {
            server,
            command: program,
            args,
            env,
            cwd,
            environment,
            network,
        } = launch;
        if let Some(cwd) = &cwd {
            if !cwd.is_dir() {
                return Err(format!(
                    "cannot start `{program}`: its working directory {} does not exist (check \
                     `cwd`)",
                    cwd.display()
                ));
            }
        }
        let escalation = network.then_some(Escalation::Network);
        let plan = environment.sandbox().plan(escalation, false);
        if let Plan::Refused(why) = &plan {
            return Err(format!("cannot start `{program}`: {why}"));
        }
        if plan.is_confined() && !on_path(program, cwd.as_deref()) {
            // Through the launcher a missing program would show only as an early exit.
            let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
            return Err(spawn_error(program, &missing));
        }
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        // The model keys stay out, unless the settings pass one explicitly (`env` wins), and
        // git keeps to `.git` repositories (`ShellEnvironment::apply`).
        let mut command = environment.command(Path::new(program), &args, &plan);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        command.envs(env);
        if let Some(cwd) = &cwd {
            command.current_dir(cwd);
        }
        let mut child = command
            .spawn()
            .map_err(|error| spawn_error(program, &error))?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!(
                "cannot start `{program}`: its pipes were not set up"
            ));
        };
        let tail = Arc::new(StderrTail::default());
        let (closed_tx, closed_rx) = watch::channel(false);
        *tail.closed.lock().unwrap_or_else(PoisonError::into_inner) = Some(closed_rx);
        tokio::spawn(read_stderr(
            server.to_owned(),
            stderr,
            Arc::clone(&tail),
            closed_tx,
        ));
        let (exit_tx, exit_rx) = watch::channel(None);
        let (kill_tx, kill_rx) = oneshot::channel::<()>();
        let name = server.to_owned();
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                _ = kill_rx => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let described = match status {
                Ok(status) => describe_exit(status),
                Err(error) => format!("could not be waited for ({error})"),
            };
            tracing::debug!(server = %name, "MCP server process {described}");
            let _ = exit_tx.send(Some(described));
        });
        let process = Process {
            pid,
            stderr: tail,
            exit: exit_rx,
            kill: Some(kill_tx),
        };
        Ok((process, stdout, stdin))
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Where to learn how the program ended, for as long as anyone needs to.
    pub(crate) fn watch(&self) -> ProcessWatch {
        ProcessWatch {
            exit: self.exit.clone(),
            stderr: Arc::clone(&self.stderr),
        }
    }

    /// Stops the program and what it started: SIGTERM to its group, then SIGKILL once it
    /// exited or the grace period is over (anything left in the group goes too).
    pub(crate) async fn stop(mut self) {
        self.signal_terminate();
        let mut exit = self.exit.clone();
        let _ = tokio::time::timeout(GRACE, exit.wait_for(Option::is_some)).await;
        self.kill_now();
    }

    fn signal_terminate(&self) {
        #[cfg(unix)]
        signal_group(self.pid, nix::sys::signal::Signal::SIGTERM);
    }

    fn kill_now(&mut self) {
        #[cfg(unix)]
        signal_group(self.pid, nix::sys::signal::Signal::SIGKILL);
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if self.kill.is_none() {
            return; // Stopped already.
        }
        self.signal_terminate();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let mut exit = self.exit.clone();
                let pid = self.pid;
                let kill = self.kill.take();
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(GRACE, exit.wait_for(Option::is_some)).await;
                    #[cfg(unix)]
                    signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                    #[cfg(not(unix))]
                    let _ = pid;
                    if let Some(kill) = kill {
                        let _ = kill.send(());
                    }
                });
            }
            // No runtime to wait in (the process is ending): kill at once.
            Err(_) => self.kill_now(),
        }
    }
}

/// Sends `signal` to the process group `pid` leads. A group that is gone is not an error.
#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: nix::sys::signal::Signal) {
    let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) else {
        return;
    };
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
}

/// Whether `program` names an existing file: on the `PATH` when it is a bare name, else from
/// `cwd` (or Tandem's own directory).
fn on_path(program: &str, cwd: Option<&Path>) -> bool {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return match cwd {
            Some(cwd) => cwd.join(path).is_file(),
            None => path.is_file(),
        };
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn spawn_error(program: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "cannot start `{program}`: no such program{} (check `command`, and that it is \
             installed)",
            if Path::new(program).components().count() > 1 {
                String::new()
            } else {
                " on PATH".to_owned()
            }
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot start `{program}`: permission denied (is it an executable file?)")
        }
        _ => format!("cannot start `{program}`: {error}"),
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map_or_else(|_| signal.to_string(), |signal| signal.to_string());
            return format!("was killed by signal {name}");
        }
    }
    format!("ended ({status})")
}

/// Reads stderr a chunk at a time, line by line into the log and the tail. A line longer than
/// `MAX_STDERR_LINE` keeps its start; memory stays bounded whatever the program prints.
async fn read_stderr(
    server: String,
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<StderrTail>,
    closed: watch::Sender<bool>,
) {
    let mut chunk = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let emit = |line: &mut Vec<u8>| {
        let text = String::from_utf8_lossy(line).trim_end().to_owned();
        line.clear();
        if !text.is_empty() {
            tracing::info!(target: "tandem::mcp::stderr", server = %server, "{text}");
            tail.push(text);
        }
    };
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        for &byte in &chunk[..read] {
            if byte == b'\n' {
                emit(&mut line);
            } else if line.len() < MAX_STDERR_LINE {
                line.push(byte);
            }
        }
    }
    emit(&mut line);
    let _ = closed.send(true);
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn launch<'a>(
        script: &'a [String],
        env: &'a BTreeMap<String, String>,
        environment: &'a ShellEnvironment,
    ) -> Launch<'a> {
        Launch {
            server: "test",
            command: "sh",
            args: script,
            env,
            cwd: None,
            environment,
            network: false,
        }
    }

    #[tokio::test]
    async fn stderr_is_kept_as_a_tail_and_the_exit_is_described() {
        let script = vec![
            "-c".to_owned(),
            "i=0; while [ $i -lt 25 ]; do echo line $i >&2; i=$((i+1)); done; exit 3".to_owned(),
        ];
        let env = BTreeMap::new();
        let environment = ShellEnvironment::default();
        let (process, _stdout, _stdin) =
            Process::spawn(launch(&script, &env, &environment)).unwrap();
        let exit = process.watch().exit(Duration::from_secs(10)).await;
        assert_eq!(exit.as_deref(), Some("exited with status 3"));
        let lines = process.watch().stderr();
        assert_eq!(lines.len(), STDERR_LINES);
        assert_eq!(lines.first().map(String::as_str), Some("line 5"));
        assert_eq!(lines.last().map(String::as_str), Some("line 24"));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn stopping_kills_the_whole_group() {
        // The shell starts a child that ignores SIGTERM; both must go.
        let script = vec![
            "-c".to_owned(),
            "sh -c 'trap \"\" TERM; while :; do sleep 1; done' & echo $! >&2; wait".to_owned(),
        ];
        let env = BTreeMap::new();
        let environment = ShellEnvironment::default();
        let (process, _stdout, _stdin) =
            Process::spawn(launch(&script, &env, &environment)).unwrap();
        let tail = process.watch();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let grandchild = loop {
            if let Some(pid) = tail.stderr().first().and_then(|l| l.parse::<i32>().ok()) {
                break pid;
            }
            assert!(tokio::time::Instant::now() < deadline, "no pid printed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        process.stop().await;
        // A killed process answers signals until it is reaped (a zombie), so its state says.
        let dead = || {
            let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).ok();
            stat.is_none_or(|stat| stat.contains(") Z"))
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !dead() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{grandchild} survived"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[test]
    fn spawn_errors_say_what_to_check() {
        let error = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(spawn_error("no-such-server", &error).contains("no such program on PATH"));
        assert!(!spawn_error("./bin/server", &error).contains("PATH"));
    }
}
