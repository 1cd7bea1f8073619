//! The `shell` tool: runs a command line with the user's shell in the workspace and answers with
//! its combined output and how it ended. The command runs in its own process group with stdin
//! closed and pagers, prompts and colours switched off, so it can neither hang on input nor leave
//! children behind: on timeout, silence or cancellation the whole group is killed. Long output is
//! cut to its head and tail for the model, with the full text saved under `.tandem/tmp/` in the
//! workspace, where `read_file` and `grep` can reach it. `background: true` starts a command
//! (a server, a watcher) detached, with its output going to such a file.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

mod capture;
pub mod environment;
pub mod terminal;

pub use environment::ShellEnvironment;
pub use terminal::{Terminal, TerminalCommand, TerminalEnding, TerminalRun};

use capture::{create_log, log_dir, Capture, INLINE_MAX, LOG_DIR};

use crate::tool::{parse_args, schema_for, SandboxCall, Tool, ToolContext, ToolError, ToolOutput};
use tandem_protocol::ToolKind;
use tandem_sandbox::approval::shown::visible;
use tandem_sandbox::confine::{Escalation, Plan};

/// The total time a command may run when the call gives no `timeout_ms`.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The most `timeout_ms` may be; longer jobs belong in the background.
const MAX_TIMEOUT_MS: u64 = 600_000;
/// A command that prints nothing for this long is taken to be stuck (waiting on a prompt it
/// cannot get, a lock, the network) and killed.
const SILENCE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a killed group gets to exit after SIGTERM before it gets SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long to keep reading after the shell exits, for output still in the pipe. Processes the
/// command left running in the background may hold the pipe open for ever; they are not waited
/// for.
const DRAIN_GRACE: Duration = Duration::from_millis(250);
pub struct Shell;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The command line to run, e.g. `cargo test -p foo 2>&1 | tail -n 50`. Runs with `bash -c`
    /// (`sh -c` where bash is missing; `cmd /C` on Windows), so pipes, `&&`, redirections and
    /// globs work. Stdin is closed: pass any input in the command itself.
    command: String,
    /// The directory to run in, relative to the workspace root (or absolute inside the
    /// workspace). Default: the workspace root.
    #[serde(default)]
    cwd: Option<String>,
    /// How long the command may run in total, in milliseconds, before it and every process it
    /// started are killed. Default 120000 (2 minutes), at most 600000 (10 minutes). Not allowed
    /// with `background`.
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Start the command detached (for servers, watchers, long builds) and return at once with
    /// its pid and the workspace file its output goes to. It keeps running after the turn.
    #[serde(default)]
    background: bool,
    /// `network` or `unsandboxed`, to rerun what the sandbox stopped; asks the user.
    #[serde(default)]
    escalate: Option<String>,
}

impl Tool for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn description(&self) -> &'static str {
        "Runs a shell command line in the workspace (`bash -c`, or `sh -c` without bash; `cmd /C` \
         on Windows) and returns `$ command`, its stdout and stderr interleaved in the order they \
         were written, and a last line saying how it ended: `exit code: N` (a non-zero code is a \
         normal result, not an error), `killed by signal NAME`, `timed out …` or `cancelled …`. \
         Prefer read_file, \
         list_directory, glob, grep and edit for reading, finding and changing files. Stdin is \
         closed and pagers and colours are off, so interactive programs fail at once: pass flags \
         such as `--yes` or `--no-edit` instead. The command and everything it starts are killed \
         after `timeout_ms` (default 120000, max 600000) or after 60 s without any output. \
         Output over 16 KiB is cut to its first 4 KiB and last 12 KiB; the full output is saved \
         to a file under .tandem/tmp/ whose path the cut names, for read_file or grep. Filter \
         noisy output in the command itself (`| tail -n 100`, `| grep error`). For servers and \
         watchers that never exit, set `background: true`: the call returns at once with the \
         pid and a log file to read later; stop the job with `kill -- -PID`."
    }

    fn parameters(&self) -> Value {
        schema_for::<Args>()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn mutates(&self) -> bool {
        true
    }

    /// Yes: the command reads whatever it reads from the disk.
    fn reads_disk(&self) -> bool {
        true
    }

    fn title(&self, args: &Value) -> String {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            return "Run a shell command".to_owned();
        };
        // The title is one line of at most 80 characters: "Run `" + command + "`".
        const MAX_COMMAND_CHARS: usize = 80 - "Run ``".len();
        let first_line = command.trim().lines().next().unwrap_or_default();
        let cut = first_line.chars().count() > MAX_COMMAND_CHARS
            || first_line.len() < command.trim().len();
        let shown: String = if cut {
            let mut shown: String = first_line.chars().take(MAX_COMMAND_CHARS - 1).collect();
            shown.push('…');
            shown
        } else {
            first_line.to_owned()
        };
        format!("Run `{shown}`")
    }

    fn approval_details(&self, args: &Value) -> String {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            return "Run a shell command (the call names none)".to_owned();
        };
        let place = match args.get("cwd").and_then(Value::as_str) {
            Some(cwd) => format!("in `{}`", visible(cwd)),
            None => "in the workspace root".to_owned(),
        };
        let how = if args.get("background") == Some(&Value::Bool(true)) {
            ", in the background (it keeps running after the turn)".to_owned()
        } else {
            match args.get("timeout_ms").and_then(Value::as_u64) {
                Some(ms) => format!(", for at most {}", seconds(Duration::from_millis(ms))),
                None => String::new(),
            }
        };
        let lines: Vec<String> = visible(command)
            .split('\n')
            .map(|line| format!("    {line}"))
            .collect();
        format!(
            "Run this command with `{}` {place}{how}:\n{}",
            shell_invocation(),
            lines.join("\n")
        )
    }

    fn sandbox_plan(&self, args: &Value, ctx: &ToolContext) -> Option<SandboxCall> {
        let command = args.get("command").and_then(Value::as_str)?;
        let escalation = args
            .get("escalate")
            .and_then(Value::as_str)
            .and_then(escalation);
        let sandbox = ctx.shell_environment.sandbox();
        let plan = sandbox.plan(escalation, sandbox.network_rule(command));
        Some(SandboxCall { plan, escalation })
    }

    fn paths_written(&self, args: &Value, _ctx: &ToolContext) -> Vec<String> {
        // Any word may be a path the command writes (`> .git/config`, `cp x .git/hooks/`, a
        // link named `notes`, `config` after `cd .git`): every word but options is checked.
        args.get("command")
            .and_then(Value::as_str)
            .map(tandem_sandbox::approval::paths::written_words)
            .unwrap_or_default()
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(self.name(), args)?;
            if args.command.trim().is_empty() {
                return Err(ToolError::Respond(
                    "`command` is empty: pass the command line to run, e.g. `cargo test`"
                        .to_owned(),
                ));
            }
            let root = ctx
                .workspace
                .primary_root()
                .map(Path::to_path_buf)
                .ok_or_else(|| {
                    ToolError::Respond(
                    "there is no workspace folder to run the command in; ask the user to open one"
                        .to_owned(),
                )
                })?;
            let cwd = match &args.cwd {
                Some(cwd) => {
                    let resolved = ctx.workspace.resolve(cwd)?;
                    if !resolved.exists() {
                        return Err(ToolError::Respond(format!(
                            "`cwd` `{cwd}` does not exist; pass an existing directory relative \
                             to the workspace root, or leave `cwd` out to run in the root"
                        )));
                    }
                    if !resolved.is_dir() {
                        return Err(ToolError::Respond(format!(
                            "`cwd` `{cwd}` is a file, not a directory; pass the directory to \
                             run in, or leave `cwd` out to run in the workspace root"
                        )));
                    }
                    resolved
                }
                None => root.clone(),
            };
            let escalation = match args.escalate.as_deref() {
                None => None,
                Some(name) => Some(escalation(name).ok_or_else(|| {
                    ToolError::Respond(format!(
                        "`escalate` is `{name}`; it takes `network` (sandboxed, with the \
                         network) or `unsandboxed` (with the user's full rights)"
                    ))
                })?),
            };
            let sandbox = ctx.shell_environment.sandbox();
            let plan = sandbox.plan(escalation, sandbox.network_rule(&args.command));
            if let Plan::Refused(why) = &plan {
                return Err(ToolError::Respond(format!(
                    "not run: {why}. Tell the user; they can change `sandbox.mode` in their \
                     settings"
                )));
            }
            if args.background {
                if args.timeout_ms.is_some() {
                    return Err(ToolError::Respond(
                        "`timeout_ms` does not apply to background commands, which run until \
                         they exit or are killed; leave `timeout_ms` out, or set `background` to \
                         false to wait for the command"
                            .to_owned(),
                    ));
                }
                return start_background(ctx, &args.command, &cwd, &plan);
            }
            let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
            if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
                return Err(ToolError::Respond(format!(
                    "`timeout_ms` is {timeout_ms} but must be between 1 and {MAX_TIMEOUT_MS} \
                     (10 minutes); for longer jobs set `background` to true and read the log \
                     file later"
                )));
            }
            let limits = Limits {
                total: Duration::from_millis(timeout_ms),
                silence: SILENCE_TIMEOUT,
            };
            let run = Run {
                command: &args.command,
                cwd: &cwd,
                root: &root,
                limits,
                plan: &plan,
            };
            let output = match ctx.terminal.clone() {
                Some(terminal) => run_in_terminal(ctx, terminal.as_ref(), &run).await,
                None => run_foreground(ctx, &run).await,
            };
            output.map(|output| with_sandbox_note(output, &plan))
        })
    }
}

/// The escalation `escalate` names.
fn escalation(name: &str) -> Option<Escalation> {
    serde_json::from_value(Value::String(name.to_owned())).ok()
}

/// One foreground command to run.
struct Run<'a> {
    command: &'a str,
    cwd: &'a Path,
    root: &'a Path,
    limits: Limits,
    plan: &'a Plan,
}

/// The last line of a sandboxed command that failed: what the sandbox refuses and how to ask
/// for more, so the model can tell a sandbox refusal from a bug.
const SANDBOX_NOTE: &str = "[it ran in Tandem's sandbox: writes outside the workspace and the \
     temp folder fail, the network is off, secret stores read as empty; if that is why it \
     failed, call shell again with `escalate: \"network\"` (or `\"unsandboxed\"`), which asks \
     the user]";

/// Adds `SANDBOX_NOTE` to the answer of a confined command that exited with an error.
fn with_sandbox_note(mut output: ToolOutput, plan: &Plan) -> ToolOutput {
    let failed = output
        .text
        .lines()
        .last()
        .and_then(|line| line.strip_prefix("exit code: "))
        .is_some_and(|code| code != "0");
    if failed && plan.is_confined() {
        output.text.push('\n');
        output.text.push_str(SANDBOX_NOTE);
    }
    output
}

/// When a foreground command is given up on.
#[derive(Debug, Clone, Copy)]
struct Limits {
    total: Duration,
    silence: Duration,
}

/// How a foreground command ended.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Silent,
    Cancelled,
}

/// Runs `command` in `cwd`, waits for it within `limits`, and renders what it printed.
async fn run_foreground(ctx: &ToolContext, run: &Run<'_>) -> Result<ToolOutput, ToolError> {
    let Run {
        command,
        cwd,
        root,
        limits,
        plan,
    } = *run;
    let started = Instant::now();
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Respond(
            "cancelled by the user before the command started".to_owned(),
        ));
    }

    // One pipe for both stdout and stderr, so the output interleaves exactly as it was
    // written; two pipes read concurrently can only approximate that.
    let (reader, writer) = std::io::pipe()
        .map_err(|error| ToolError::Fatal(format!("could not create a pipe: {error}")))?;
    let writer_for_stderr = writer
        .try_clone()
        .map_err(|error| ToolError::Fatal(format!("could not duplicate a pipe: {error}")))?;
    let capture = Arc::new(Mutex::new(Capture::new(
        log_dir(&ctx.workspace),
        ctx.output_budget(INLINE_MAX),
    )));
    let (activity, mut activity_rx) = mpsc::unbounded_channel();
    spawn_reader(reader, Arc::clone(&capture), activity)?;

    let mut child = {
        // The command (and with it the pipe's write ends) is dropped right after the spawn: a
        // write end left open here would keep the reader from ever seeing the end of output.
        let mut cmd = shell_command(command, &ctx.shell_environment, plan);
        cmd.current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer_for_stderr)
            .kill_on_drop(true)
            .envs(QUIET_ENVIRONMENT.iter().copied());
        cmd.spawn()
            .map_err(|error| spawn_error(&ctx.workspace.display(cwd), &error))?
    };
    let pid = child.id();
    // Kills the group if this future is dropped before the command is done with.
    let mut guard = GroupGuard { pid };

    let deadline = started + limits.total;
    let mut last_output = Instant::now();
    let mut eof = false;
    let ending = loop {
        tokio::select! {
            status = child.wait() => match status {
                Ok(status) => break Ending::Exited(status),
                Err(error) => {
                    return Err(ToolError::Fatal(format!("waiting for the command failed: {error}")))
                }
            },
            ping = activity_rx.recv(), if !eof => match ping {
                Some(()) => last_output = Instant::now(),
                None => eof = true,
            },
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            () = tokio::time::sleep_until(last_output + limits.silence) => break Ending::Silent,
            () = ctx.cancel.cancelled() => break Ending::Cancelled,
        }
    };
    let elapsed = started.elapsed();

    let status_line = match ending {
        Ending::Exited(status) => describe_exit(status),
        Ending::TimedOut => {
            terminate(&mut child, pid, &mut activity_rx, &mut eof).await;
            format!(
                "timed out after {} (timeout_ms={}): the command and the processes it started \
                 were killed. Raise timeout_ms (max {MAX_TIMEOUT_MS}) or set background=true for \
                 long-running commands",
                seconds(limits.total),
                limits.total.as_millis()
            )
        }
        Ending::Silent => {
            terminate(&mut child, pid, &mut activity_rx, &mut eof).await;
            format!(
                "timed out after {} without output: the command and the processes it started \
                 were killed. If it was waiting for input, pass the input or a non-interactive \
                 flag in the command; set background=true for long silent jobs",
                seconds(limits.silence)
            )
        }
        Ending::Cancelled => {
            terminate(&mut child, pid, &mut activity_rx, &mut eof).await;
            let elapsed = elapsed.as_secs_f64();
            format!(
                "cancelled by the user after {elapsed:.1}s: the command and the processes it \
                 started were killed"
            )
        }
    };
    guard.pid = None;

    // Read what is still in the pipe. Whatever holds it open after that is a process the command
    // put in the background; its later output is not waited for.
    let drained = eof
        || tokio::time::timeout(DRAIN_GRACE, async {
            while activity_rx.recv().await.is_some() {}
        })
        .await
        .is_ok();

    let mut capture = capture.lock().unwrap_or_else(PoisonError::into_inner);
    // The reader thread may go on draining the pipe for leftover processes; stop recording.
    capture.closed = true;
    let mut text = command_and_output(ctx, command, cwd, root, None, &capture);
    if !drained {
        text.push_str(
            "[processes the command started in the background still hold its output open; \
             their later output is not shown. Use background=true for servers and watchers]\n",
        );
    }
    text.push_str(&status_line);
    match ending {
        Ending::Exited(_) => Ok(ToolOutput::text(text)),
        Ending::TimedOut | Ending::Silent | Ending::Cancelled => Err(ToolError::Respond(text)),
    }
}

/// The answer's head: where it ran (when not the root), the command, a note on the output, and
/// the output (its head and tail when long), ending with a line break.
fn command_and_output(
    ctx: &ToolContext,
    command: &str,
    cwd: &Path,
    root: &Path,
    note: Option<&str>,
    capture: &Capture,
) -> String {
    let mut text = String::new();
    if cwd != root {
        text.push_str(&format!("(cwd: {})\n", ctx.workspace.display(cwd)));
    }
    text.push_str(&format!("$ {command}\n"));
    if let Some(note) = note {
        text.push_str(note);
        text.push('\n');
    }
    let output = capture.render(&ctx.workspace);
    if output.is_empty() {
        text.push_str("(no output)\n");
    } else {
        text.push_str(&output);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

/// How much output a client's terminal keeps for the answer; the model sees its head and tail.
const TERMINAL_OUTPUT_LIMIT: usize = 1 << 20;

/// Runs a foreground command in the client's terminal (`ToolContext::terminal`), answering as
/// `run_foreground` does.
async fn run_in_terminal(
    ctx: &ToolContext,
    terminal: &dyn Terminal,
    run: &Run<'_>,
) -> Result<ToolOutput, ToolError> {
    let Run {
        command,
        cwd,
        root,
        limits,
        plan,
    } = *run;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Respond(
            "cancelled by the user before the command started".to_owned(),
        ));
    }
    let mut env: Vec<(String, String)> = QUIET_ENVIRONMENT
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    env.extend(ctx.shell_environment.assignments());
    let flag = if cfg!(windows) { "/C" } else { "-c" };
    // The client starts the process; through the launcher, it starts confined all the same.
    let (program, args) =
        ctx.shell_environment
            .sandbox()
            .wrap(plan, shell_program(), &[flag.into(), command.into()]);
    let run = terminal
        .run(TerminalCommand {
            call_id: ctx.call_id.clone(),
            command_line: command.to_owned(),
            program,
            args: args
                .into_iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect(),
            cwd: cwd.to_path_buf(),
            env,
            output_limit: TERMINAL_OUTPUT_LIMIT,
            timeout: limits.total,
            cancel: ctx.cancel.clone(),
        })
        .await
        .map_err(|error| {
            ToolError::Respond(format!(
                "the editor's terminal could not run the command: {error}"
            ))
        })?;
    let mut capture = Capture::new(log_dir(&ctx.workspace), ctx.output_budget(INLINE_MAX));
    capture.push(run.output.as_bytes());
    capture.closed = true;
    let truncated = run
        .truncated
        .then_some("[the start of the output was dropped by the editor's terminal]");
    let mut text = command_and_output(ctx, command, cwd, root, truncated, &capture);
    match run.ending {
        TerminalEnding::Exited { code, signal } => {
            text.push_str(&match (code, signal) {
                (Some(code), _) => format!("exit code: {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => "ended without an exit code".to_owned(),
            });
            Ok(ToolOutput::text(text))
        }
        TerminalEnding::TimedOut => {
            text.push_str(&format!(
                "timed out after {} (timeout_ms={}): the command was killed. Raise timeout_ms \
                 (max {MAX_TIMEOUT_MS}) or set background=true for long-running commands",
                seconds(limits.total),
                limits.total.as_millis()
            ));
            Err(ToolError::Respond(text))
        }
        TerminalEnding::Cancelled => {
            text.push_str("cancelled by the user: the command was killed");
            Err(ToolError::Respond(text))
        }
    }
}

/// Kills the command's process group: SIGTERM, a grace period for the shell to exit and every
/// process holding the output pipe to close it, then SIGKILL for whatever is left.
async fn terminate(
    child: &mut tokio::process::Child,
    pid: Option<u32>,
    activity_rx: &mut mpsc::UnboundedReceiver<()>,
    eof: &mut bool,
) {
    signal_group(pid, Kill::Terminate);
    // Without process groups, kill the shell itself (its children may survive).
    #[cfg(windows)]
    let _ = child.start_kill();
    let _ = tokio::time::timeout(KILL_GRACE, async {
        let _ = child.wait().await;
        while !*eof {
            *eof = activity_rx.recv().await.is_none();
        }
    })
    .await;
    signal_group(pid, Kill::Kill);
    let _ = tokio::time::timeout(KILL_GRACE, child.wait()).await;
}

/// Starts `command` detached with its output going to a log file in the workspace, and returns
/// at once.
fn start_background(
    ctx: &ToolContext,
    command: &str,
    cwd: &Path,
    plan: &Plan,
) -> Result<ToolOutput, ToolError> {
    let (log_path, log) = log_dir(&ctx.workspace)
        .and_then(|dir| create_log(&dir).map_err(|error| error.to_string()))
        .map_err(|error| {
            ToolError::Respond(format!(
                "could not create a log file in {LOG_DIR} for the background command, so it was \
                 not started: {error}"
            ))
        })?;
    let shown_log = ctx.workspace.display(&log_path);
    let log_for_stderr = log
        .try_clone()
        .map_err(|error| ToolError::Fatal(format!("could not duplicate a file handle: {error}")))?;
    let mut child = {
        let mut cmd = shell_command(command, &ctx.shell_environment, plan);
        // No kill_on_drop: a background job outlives the call and the turn by design.
        cmd.current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_for_stderr)
            .envs(QUIET_ENVIRONMENT.iter().copied());
        cmd.spawn()
            .map_err(|error| spawn_error(&ctx.workspace.display(cwd), &error))?
    };
    let pid = child
        .id()
        .map_or_else(|| "?".to_owned(), |pid| pid.to_string());
    // Reap the job when it exits and note how it ended at the end of its log, so a later read
    // tells whether it is done.
    tokio::spawn(async move {
        let Ok(status) = child.wait().await else {
            return;
        };
        let line = describe_exit(status);
        let _ = tokio::task::spawn_blocking(move || append_status(&log_path, &line)).await;
    });
    Ok(ToolOutput::text(format!(
        "$ {command}\nStarted in background (pid {pid}); output goes to {shown_log}; read it \
         with read_file. When it exits, its last line says how. Stop it with `kill -- -{pid}`."
    )))
}

/// Appends `[status]` on its own line to a background job's log.
fn append_status(log_path: &Path, status: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).append(true);
    // The command may have put a link where its log was: the status goes nowhere else.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits());
    }
    let mut file = options.open(log_path)?;
    let len = file.metadata()?.len();
    let mut needs_newline = false;
    if len > 0 {
        use std::io::{Seek, SeekFrom};
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        needs_newline = last[0] != b'\n';
    }
    let newline = if needs_newline { "\n" } else { "" };
    file.write_all(format!("{newline}[background command ended: {status}]\n").as_bytes())
}

/// The shell commands run with: bash where it is on the `PATH`, else `sh`.
#[cfg(unix)]
fn shell_program() -> &'static Path {
    static SHELL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
            .map(|dir| dir.join("bash"))
            .find(|bash| bash.is_file())
            .unwrap_or_else(|| PathBuf::from("sh"))
    })
}

#[cfg(windows)]
fn shell_program() -> &'static Path {
    Path::new("cmd")
}

/// How commands are run, as approval prompts and the session's environment block name it:
/// `bash -c`, `sh -c` or `cmd /C`.
pub fn shell_invocation() -> String {
    let program = shell_program();
    let name = program
        .file_name()
        .unwrap_or(program.as_os_str())
        .to_string_lossy();
    if cfg!(windows) {
        format!("{name} /C")
    } else {
        format!("{name} -c")
    }
}

/// The shell invocation for `command` with `environment`, run as `plan` says, in a new process
/// group on unix.
#[cfg(unix)]
pub fn shell_command(
    command: &str,
    environment: &ShellEnvironment,
    plan: &Plan,
) -> tokio::process::Command {
    let mut cmd = environment.command(shell_program(), &["-c".into(), command.into()], plan);
    cmd.process_group(0);
    cmd
}

/// The shell invocation for `command`: `cmd /C`, with the command passed as is (cmd does its
/// own parsing, which the usual argument quoting would break). No sandbox on Windows yet.
#[cfg(windows)]
pub fn shell_command(
    command: &str,
    environment: &ShellEnvironment,
    _plan: &Plan,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(shell_program());
    cmd.arg("/C").raw_arg(command);
    environment.apply(&mut cmd);
    cmd
}

/// Pagers (which would wait for a key), prompts (for a password) and colours (escape codes in
/// the output) turned off.
const QUIET_ENVIRONMENT: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("TERM", "dumb"),
    ("NO_COLOR", "1"),
];

fn spawn_error(cwd: &str, error: &std::io::Error) -> ToolError {
    let shell = shell_program().display();
    ToolError::Respond(format!(
        "could not start the shell `{shell}` in `{cwd}` to run the command: {error}"
    ))
}

/// `exit code: N`, or the signal that killed the process.
fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code: {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return match nix::sys::signal::Signal::try_from(signal) {
                Ok(signal) => format!("killed by signal {}", signal.as_str()),
                Err(_) => format!("killed by signal {signal}"),
            };
        }
    }
    format!("ended without an exit code ({status})")
}

/// `120s`, or `0.3s` below whole seconds.
fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Kill {
    /// SIGTERM (and SIGCONT, so stopped processes get it).
    Terminate,
    /// SIGKILL.
    Kill,
}

/// Signals the process group led by `pid` (the shell's, since it was started with
/// `process_group(0)`). Errors are ignored: the group may be gone already.
#[cfg(unix)]
pub fn signal_group(pid: Option<u32>, kill: Kill) {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    let Some(pgid) = pid.and_then(|pid| i32::try_from(pid).ok()) else {
        return;
    };
    let pgid = Pid::from_raw(pgid);
    match kill {
        Kill::Terminate => {
            let _ = killpg(pgid, Signal::SIGTERM);
            let _ = killpg(pgid, Signal::SIGCONT);
        }
        Kill::Kill => {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Without process groups, only the shell itself is killed (by `kill_on_drop` and the final
/// wait); its children may survive.
#[cfg(windows)]
pub fn signal_group(_pid: Option<u32>, _kill: Kill) {}

/// Kills a foreground command's process group when dropped while armed (`pid` set): the tool's
/// future was dropped mid-run. `kill_on_drop` alone would kill only the shell.
struct GroupGuard {
    pid: Option<u32>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.pid, Kill::Kill);
    }
}

/// Reads the command's output on a thread of its own (a blocking pipe read; not a
/// `spawn_blocking` task, since processes the command leaves behind may hold the pipe open
/// after the call and that would hold up runtime shutdown) and pings `activity` per chunk. The
/// thread ends when every writer has closed the pipe, which drops `activity`.
fn spawn_reader(
    mut reader: std::io::PipeReader,
    capture: Arc<Mutex<Capture>>,
    activity: mpsc::UnboundedSender<()>,
) -> Result<(), ToolError> {
    std::thread::Builder::new()
        .name("shell-output".to_owned())
        .spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut capture = capture.lock().unwrap_or_else(PoisonError::into_inner);
                        // After the call is over, keep draining (so leftover processes don't die
                        // of SIGPIPE) but record nothing.
                        if !capture.closed {
                            capture.push(&buffer[..n]);
                        }
                        drop(capture);
                        let _ = activity.send(());
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
        .map(drop)
        .map_err(|error| ToolError::Fatal(format!("could not start a thread: {error}")))
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use crate::testing::TestWorkspace;
    use expect_test::{expect, Expect};
    use serde_json::json;

    /// Replaces the unique part of log file names, which differs per run.
    fn normalize(text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("shell-") {
            let after = &rest[start + "shell-".len()..];
            let Some(end) = after.find(".log") else {
                break;
            };
            out.push_str(&rest[..start]);
            out.push_str("shell-N.log");
            rest = &after[end + ".log".len()..];
        }
        out.push_str(rest);
        out
    }

    /// Whether `pid` is a live process. A process that has begun to exit counts as gone: it
    /// closes its files (ending the output the tool waits for) before it becomes a zombie, so
    /// right after the call it may still show as running, with its exit code already set (the
    /// last field of `/proc/PID/stat`). A zombie waiting to be reaped counts as gone too.
    fn is_running(pid: i32) -> bool {
        if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return !cfg!(target_os = "linux");
        };
        // The fields after the command name (in parentheses): state first, exit code last.
        let fields: Vec<&str> = stat
            .rsplit_once(") ")
            .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
        let zombie = fields
            .first()
            .is_some_and(|state| ["Z", "X"].contains(state));
        let exiting = fields.last().is_some_and(|code| *code != "0");
        !zombie && !exiting
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[tokio::test]
    async fn runs_commands_and_reports_how_they_ended() {
        let ws = TestWorkspace::new(&[("sub/file.txt", "in sub\n"), ("a.txt", "")]);
        let cases: Vec<(Value, Expect)> = vec![
            (
                json!({"command": "echo one; echo two >&2; echo three; echo four >&2"}),
                expect![[r#"
                    $ echo one; echo two >&2; echo three; echo four >&2
                    one
                    two
                    three
                    four
                    exit code: 0"#]],
            ),
            (
                json!({"command": "echo failing >&2; exit 3"}),
                expect![[r#"
                    $ echo failing >&2; exit 3
                    failing
                    exit code: 3"#]],
            ),
            (
                json!({"command": "true"}),
                expect![[r#"
                    $ true
                    (no output)
                    exit code: 0"#]],
            ),
            (
                json!({"command": "printf 'no newline'"}),
                expect![[r#"
                    $ printf 'no newline'
                    no newline
                    exit code: 0"#]],
            ),
            (
                json!({"command": "kill -TERM $$"}),
                expect![[r#"
                    $ kill -TERM $$
                    (no output)
                    killed by signal SIGTERM"#]],
            ),
            (
                json!({"command": "cat file.txt; pwd | sed 's|.*/||'", "cwd": "sub"}),
                expect![[r#"
                    (cwd: sub)
                    $ cat file.txt; pwd | sed 's|.*/||'
                    in sub
                    sub
                    exit code: 0"#]],
            ),
            (
                json!({"command": "read x; echo \"got:$x\""}),
                expect![[r#"
                    $ read x; echo "got:$x"
                    got:
                    exit code: 0"#]],
            ),
            (
                json!({"command": "echo \"$PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $TERM $NO_COLOR\""}),
                expect![[r#"
                    $ echo "$PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $TERM $NO_COLOR"
                    cat cat 0 dumb 1
                    exit code: 0"#]],
            ),
            (
                json!({"command": "printf 'caf\\303\\251 \\377\\n'"}),
                expect![[r#"
                    $ printf 'caf\303\251 \377\n'
                    café �
                    exit code: 0"#]],
            ),
            (
                json!({"command": "ls", "cwd": "../elsewhere"}),
                expect![[
                    r#"error: `../elsewhere` is outside the workspace (ROOT). Tools can only read and write inside the workspace; use a path inside it, or ask the user to add the directory to `extraDirectories` in the settings"#
                ]],
            ),
            (
                json!({"command": "ls", "cwd": "missing"}),
                expect![[
                    r#"error: `cwd` `missing` does not exist; pass an existing directory relative to the workspace root, or leave `cwd` out to run in the root"#
                ]],
            ),
            (
                json!({"command": "ls", "cwd": "a.txt"}),
                expect![[
                    r#"error: `cwd` `a.txt` is a file, not a directory; pass the directory to run in, or leave `cwd` out to run in the workspace root"#
                ]],
            ),
            (
                json!({"command": "  "}),
                expect![[
                    r#"error: `command` is empty: pass the command line to run, e.g. `cargo test`"#
                ]],
            ),
            (
                json!({"command": "ls", "timeout_ms": 600_001}),
                expect![[
                    r#"error: `timeout_ms` is 600001 but must be between 1 and 600000 (10 minutes); for longer jobs set `background` to true and read the log file later"#
                ]],
            ),
            (
                json!({"command": "ls", "timeout_ms": 0}),
                expect![[
                    r#"error: `timeout_ms` is 0 but must be between 1 and 600000 (10 minutes); for longer jobs set `background` to true and read the log file later"#
                ]],
            ),
            (
                json!({"command": "ls", "background": true, "timeout_ms": 1000}),
                expect![[
                    r#"error: `timeout_ms` does not apply to background commands, which run until they exit or are killed; leave `timeout_ms` out, or set `background` to false to wait for the command"#
                ]],
            ),
            (
                json!({"cmd": "ls"}),
                expect!["error: invalid arguments for shell: unknown field `cmd`, expected one of `command`, `cwd`, `timeout_ms`, `background`, `escalate`"],
            ),
        ];
        let root = ws.root.display().to_string();
        for (args, expected) in cases {
            let output = ws.call(&Shell, args).await;
            expected.assert_eq(&output.replace(&root, "ROOT"));
        }
    }

    #[tokio::test]
    async fn refuses_to_start_when_cancelled_or_without_a_workspace() {
        let ws = TestWorkspace::new(&[]);
        let mut ctx = ws.ctx.clone();
        ctx.workspace = Arc::new(tandem_sandbox::workspace::Workspace::new(
            Vec::new(),
            Vec::new(),
        ));
        let error = Shell
            .run(json!({"command": "echo hi"}), &ctx)
            .await
            .unwrap_err();
        expect![[
            r#"there is no workspace folder to run the command in; ask the user to open one"#
        ]]
        .assert_eq(&error.to_string());

        ws.ctx.cancel.cancel();
        expect![[r#"error: cancelled by the user before the command started"#]]
            .assert_eq(&ws.call(&Shell, json!({"command": "touch ran"})).await);
        assert!(!ws.root.join("ran").exists());
    }

    /// A client terminal that answers with a fixed run and remembers what it was asked.
    struct ScriptedTerminal {
        run: TerminalRun,
        asked: Mutex<Vec<TerminalCommand>>,
    }

    impl Terminal for ScriptedTerminal {
        fn run<'a>(
            &'a self,
            command: TerminalCommand,
        ) -> BoxFuture<'a, Result<TerminalRun, String>> {
            self.asked.lock().unwrap().push(command);
            Box::pin(async move { Ok(self.run.clone()) })
        }
    }

    #[tokio::test]
    async fn foreground_commands_run_in_the_clients_terminal_when_there_is_one() {
        let ws = TestWorkspace::new(&[("sub/a.txt", "")]);
        let terminal = Arc::new(ScriptedTerminal {
            run: TerminalRun {
                output: "hello\n".to_owned(),
                truncated: false,
                ending: TerminalEnding::Exited {
                    code: Some(0),
                    signal: None,
                },
            },
            asked: Mutex::default(),
        });
        let mut ctx = ws.ctx.clone();
        ctx.terminal = Some(terminal.clone());
        ctx.call_id = Some("call_1".to_owned());
        ctx.shell_environment = Arc::new(ShellEnvironment::new(
            &["TANDEM_TEST_KEY".to_owned()],
            &[],
            &[],
        ));
        let output = Shell
            .run(json!({"command": "echo hello", "cwd": "sub"}), &ctx)
            .await
            .unwrap();
        expect![[r#"
            (cwd: sub)
            $ echo hello
            hello
            exit code: 0"#]]
        .assert_eq(&output.text);
        {
            let asked = terminal.asked.lock().unwrap();
            assert_eq!(asked.len(), 1);
            assert_eq!(asked[0].call_id.as_deref(), Some("call_1"));
            assert_eq!(
                asked[0].args,
                vec!["-c".to_owned(), "echo hello".to_owned()]
            );
            assert_eq!(asked[0].cwd, ws.root.join("sub"));
            assert!(asked[0]
                .env
                .contains(&("PAGER".to_owned(), "cat".to_owned())));
        }
        // Background commands do not go to the client's terminal.
        let background = Shell
            .run(json!({"command": "true", "background": true}), &ctx)
            .await
            .unwrap();
        assert!(
            background.text.contains("Started in background"),
            "{}",
            background.text
        );
        assert_eq!(terminal.asked.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_terminal_command_that_timed_out_or_was_cancelled_is_an_error_with_its_output() {
        let ws = TestWorkspace::new(&[]);
        for (ending, expected) in [
            (
                TerminalEnding::TimedOut,
                expect![[r#"
                    $ sleep 30
                    [the start of the output was dropped by the editor's terminal]
                    partial
                    timed out after 1s (timeout_ms=1000): the command was killed. Raise timeout_ms (max 600000) or set background=true for long-running commands"#]],
            ),
            (
                TerminalEnding::Cancelled,
                expect![[r#"
                    $ sleep 30
                    [the start of the output was dropped by the editor's terminal]
                    partial
                    cancelled by the user: the command was killed"#]],
            ),
        ] {
            let mut ctx = ws.ctx.clone();
            ctx.terminal = Some(Arc::new(ScriptedTerminal {
                run: TerminalRun {
                    output: "partial".to_owned(),
                    truncated: true,
                    ending,
                },
                asked: Mutex::default(),
            }));
            let error = Shell
                .run(json!({"command": "sleep 30", "timeout_ms": 1000}), &ctx)
                .await
                .unwrap_err();
            expected.assert_eq(&error.to_string());
        }
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_process_group() {
        let ws = TestWorkspace::new(&[]);
        let output = ws
            .call(
                &Shell,
                json!({
                    "command": "echo started; sh -c 'sleep 30 & echo $! > grandchild.pid; sleep 30; wait'",
                    "timeout_ms": 300,
                }),
            )
            .await;
        expect![[r#"
            error: $ echo started; sh -c 'sleep 30 & echo $! > grandchild.pid; sleep 30; wait'
            started
            timed out after 0.3s (timeout_ms=300): the command and the processes it started were killed. Raise timeout_ms (max 600000) or set background=true for long-running commands"#]]
        .assert_eq(&output);
        let grandchild: i32 = ws.read("grandchild.pid").trim().parse().unwrap();
        assert!(!is_running(grandchild), "pid {grandchild} survived");
    }

    #[tokio::test]
    async fn a_silent_command_is_killed() {
        let ws = TestWorkspace::new(&[]);
        let limits = Limits {
            total: Duration::from_secs(30),
            silence: Duration::from_millis(300),
        };
        let started = std::time::Instant::now();
        let plan = Plan::Unconfined("a test".to_owned());
        let run = Run {
            command: "echo hello; sleep 30",
            cwd: &ws.root,
            root: &ws.root,
            limits,
            plan: &plan,
        };
        let result = run_foreground(&ws.ctx, &run).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        expect![[r#"
            $ echo hello; sleep 30
            hello
            timed out after 0.3s without output: the command and the processes it started were killed. If it was waiting for input, pass the input or a non-interactive flag in the command; set background=true for long silent jobs"#]]
        .assert_eq(&result.to_string());
    }

    #[tokio::test]
    async fn cancelling_kills_the_command_and_returns_the_output_so_far() {
        let ws = TestWorkspace::new(&[]);
        let fifo = ws.root.join("ready.fifo");
        mkfifo(&fifo);
        let cancel = ws.ctx.cancel.clone();
        let canceller = tokio::spawn(async move {
            // Opening the fifo for reading blocks until the command opens it for writing: then
            // it is running.
            tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap())
                .await
                .unwrap();
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let output = tokio::time::timeout(
            Duration::from_secs(10),
            ws.call(
                &Shell,
                json!({"command": "echo partial; echo > ready.fifo; sleep 30"}),
            ),
        )
        .await
        .unwrap();
        canceller.await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        let (output, elapsed) = output.rsplit_once(" after ").unwrap();
        expect![[r#"
            error: $ echo partial; echo > ready.fifo; sleep 30
            partial
            cancelled by the user"#]]
        .assert_eq(output);
        assert!(elapsed.ends_with("s: the command and the processes it started were killed"));
    }

    #[tokio::test]
    async fn long_output_keeps_head_and_tail_and_saves_the_rest() {
        let ws = TestWorkspace::new(&[]);
        let output = ws.call(&Shell, json!({"command": "seq 1 20000"})).await;
        let expected_full: String = (1..=20000).map(|n| format!("{n}\n")).collect();
        let marker = output
            .lines()
            .find(|line| line.starts_with("[... "))
            .unwrap();
        expect![[r#"[... 92513 bytes omitted: the full output (108894 bytes) is in .tandem/tmp/shell-N.log; read it with read_file or search it with grep ...]"#]]
            .assert_eq(&normalize(marker));
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(&lines[..3], ["$ seq 1 20000", "1", "2"]);
        assert_eq!(&lines[lines.len() - 2..], ["20000", "exit code: 0"]);
        // Whole lines on both sides of the cut, and nothing else left out.
        let (head, tail) = output.split_once(marker).unwrap();
        let head = head.strip_prefix("$ seq 1 20000\n").unwrap();
        let tail = tail
            .strip_prefix('\n')
            .unwrap()
            .strip_suffix("exit code: 0")
            .unwrap();
        assert!(head.len() <= INLINE_MAX / 4 && tail.len() <= INLINE_MAX * 3 / 4);
        assert!(expected_full.starts_with(head) && expected_full.ends_with(tail));
        assert_eq!(head.len() + tail.len() + 92513, expected_full.len());

        let log_name = marker
            .split_whitespace()
            .find_map(|word| word.strip_suffix(".log;"))
            .unwrap();
        assert_eq!(ws.read(&format!("{log_name}.log")), expected_full);
        assert_eq!(ws.read(".tandem/tmp/.gitignore"), "*\n");
    }

    #[tokio::test]
    async fn a_small_window_shows_a_smaller_head_and_tail() {
        let mut ws = TestWorkspace::new(&[]);
        ws.ctx.output_limit = Some(2048);
        let output = ws.call(&Shell, json!({"command": "seq 1 20000"})).await;
        let (head, tail) = output.split_once("[... ").unwrap();
        let (_, tail) = tail.split_once(" ...]\n").unwrap();
        assert!(head.len() <= 512 + "$ seq 1 20000\n".len(), "{head}");
        assert!(tail.len() <= 1536 + "exit code: 0".len(), "{tail}");
        assert!(tail.ends_with("20000\nexit code: 0"), "{tail}");
    }

    /// The review's finding: Tandem's own writes under `.tandem/` followed a symlinked
    /// `.tandem/tmp` out of the workspace, and the model was told to read a log the sandbox
    /// then refused.
    #[tokio::test]
    async fn a_log_directory_that_links_outside_gets_no_log() {
        let ws = TestWorkspace::new(&[]);
        let outside = ws.root.parent().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(ws.root.join(".tandem")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.root.join(".tandem/tmp")).unwrap();
        let output = ws.call(&Shell, json!({"command": "seq 1 20000"})).await;
        let marker = output
            .lines()
            .find(|line| line.starts_with("[... "))
            .unwrap();
        assert!(
            marker.contains("the full output could not be saved (.tandem/tmp cannot hold it:")
                && marker.contains("is outside the workspace"),
            "{marker}"
        );
        let background = ws
            .call(&Shell, json!({"command": "echo hi", "background": true}))
            .await;
        assert!(
            background.starts_with("error: could not create a log file in .tandem/tmp"),
            "{background}"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    /// The review's finding: `env | grep KEY` sent the model key to the model.
    #[tokio::test]
    async fn commands_do_not_inherit_model_keys() {
        let mut ws = TestWorkspace::new(&[]);
        ws.ctx.shell_environment = Arc::new(ShellEnvironment::new(
            &["TANDEM_TEST_ROUTER_KEY".to_owned()],
            &[],
            &["TANDEM_TEST_PASSED_KEY".to_owned()],
        ));
        // Set for this process, as a user's shell sets them for Tandem; the names are unique
        // to this test.
        std::env::set_var("TANDEM_TEST_ROUTER_KEY", "sk-router");
        std::env::set_var("TANDEM_TEST_PASSED_KEY", "sk-passed");
        let output = ws
            .call(
                &Shell,
                json!({"command": "echo router=$TANDEM_TEST_ROUTER_KEY passed=$TANDEM_TEST_PASSED_KEY"}),
            )
            .await;
        assert!(output.contains("router= passed=sk-passed"), "{output}");
    }

    #[tokio::test]
    async fn processes_left_running_do_not_hold_up_the_call() {
        let ws = TestWorkspace::new(&[]);
        let output = tokio::time::timeout(
            Duration::from_secs(10),
            ws.call(
                &Shell,
                json!({"command": "sleep 30 & echo $! > left.pid; echo hi"}),
            ),
        )
        .await
        .unwrap();
        let left = nix::unistd::Pid::from_raw(ws.read("left.pid").trim().parse().unwrap());
        nix::sys::signal::kill(left, nix::sys::signal::Signal::SIGKILL).unwrap();
        expect![[r#"
            $ sleep 30 & echo $! > left.pid; echo hi
            hi
            [processes the command started in the background still hold its output open; their later output is not shown. Use background=true for servers and watchers]
            exit code: 0"#]]
        .assert_eq(&output);
    }

    #[tokio::test]
    async fn background_commands_return_at_once_and_log_their_output() {
        let ws = TestWorkspace::new(&[]);
        let fifo = ws.root.join("done.fifo");
        mkfifo(&fifo);
        // The command cannot finish before the test opens the fifo, so the call returning proves
        // it did not wait for the command.
        let output = tokio::time::timeout(
            Duration::from_secs(10),
            ws.call(
                &Shell,
                json!({
                    "command": "echo one; echo two >&2; echo done > done.fifo",
                    "background": true,
                }),
            ),
        )
        .await
        .unwrap();
        let pid = output
            .split_once("(pid ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(pid, _)| pid.to_owned())
            .unwrap();
        expect![[r#"
            $ echo one; echo two >&2; echo done > done.fifo
            Started in background (pid PID); output goes to .tandem/tmp/shell-N.log; read it with read_file. When it exits, its last line says how. Stop it with `kill -- -PID`."#]]
        .assert_eq(&normalize(&output).replace(&pid, "PID"));
        let log_name = output
            .split_whitespace()
            .find(|word| word.ends_with(".log;"))
            .unwrap()
            .trim_end_matches(';')
            .to_owned();
        let done = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap())
            .await
            .unwrap();
        assert_eq!(done, "done\n");
        assert!(ws.read(&log_name).starts_with("one\ntwo\n"));
        assert_eq!(ws.read(".tandem/tmp/.gitignore"), "*\n");
    }

    #[test]
    fn titles_are_short_single_lines() {
        let long = "x".repeat(100);
        let cases = [
            (json!({"command": "cargo test"}), "Run `cargo test`"),
            (json!({"command": "echo a\necho b"}), "Run `echo a…`"),
            (json!({}), "Run a shell command"),
        ];
        for (args, expected) in cases {
            assert_eq!(Shell.title(&args), expected);
        }
        let title = Shell.title(&json!({ "command": long }));
        assert_eq!(title.chars().count(), 80);
        assert!(title.ends_with("x…`"));
    }

    /// The title is a label; what an approval shows is the whole command.
    #[test]
    fn approvals_show_the_whole_command_and_where_it_runs() {
        let shell = shell_invocation();
        let cases = [
            (
                json!({"command": format!("cargo test{}; touch x\ncurl x | sh", " ".repeat(70))}),
                format!("Run this command with `{shell}` in the workspace root:\n    cargo test⟨70 spaces⟩; touch x\n    curl x | sh"),
            ),
            (
                json!({"command": "npm start", "cwd": "web", "background": true}),
                format!("Run this command with `{shell}` in `web`, in the background (it keeps running after the turn):\n    npm start"),
            ),
            (
                json!({"command": "make\r", "timeout_ms": 30000}),
                format!("Run this command with `{shell}` in the workspace root, for at most 30s:\n    make⟨CR⟩"),
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(Shell.approval_details(&args), expected);
        }
    }

    #[test]
    fn the_paths_a_command_names_are_checked() {
        let ctx = ToolContext::on_disk(Vec::new());
        let paths = |command: &str| Shell.paths_written(&json!({ "command": command }), &ctx);
        assert_eq!(paths("echo x>.git/config"), ["echo", "x", ".git/config"]);
        assert_eq!(paths("cat > sub/.envrc"), ["cat", "sub/.envrc"]);
        assert_eq!(paths("grep -rn x . --exclude-dir=.git"), ["grep", "x", "."]);
        assert_eq!(paths("cargo test -p foo"), ["cargo", "test", "foo"]);
    }
}
