//! The seam through which `shell` runs a foreground command in the client's own terminal (ACP's
//! `terminal/*` methods: the user watches it live, embedded in the tool call) instead of a local
//! process. The tool stays the same for the model: the same arguments, the same limits, the same
//! answer (head and tail of the output, the full text saved under `.tandem/tmp/`, how it ended).
//! Background commands always run locally.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// Runs commands in a terminal the front end's client owns.
///
/// The implementation owns the command's lifetime: it kills it when `timeout` passes or
/// `cancel` fires (and answers with that ending), and it releases the terminal when the future
/// completes or is dropped.
pub trait Terminal: Send + Sync {
    fn run<'a>(&'a self, command: TerminalCommand) -> BoxFuture<'a, Result<TerminalRun, String>>;
}

/// One command for the client's terminal.
#[derive(Debug, Clone)]
pub struct TerminalCommand {
    /// The tool call it runs for, so the client can show the terminal inside that call.
    pub call_id: Option<String>,
    /// The command line as the model wrote it, for display.
    pub command_line: String,
    /// The shell and its arguments (`bash -c <command line>`).
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Variables to set: pagers, prompts and colours off, the model keys Tandem knows of set
    /// empty, so the command sees none of them even if the client's environment has them, and
    /// git's guard (`ShellEnvironment::assignments`).
    pub env: Vec<(String, String)>,
    /// The most output the client keeps (from the end, as ACP's `outputByteLimit`).
    pub output_limit: usize,
    /// How long the command may run in total.
    pub timeout: Duration,
    pub cancel: CancellationToken,
}

/// What a terminal command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRun {
    pub output: String,
    /// The client dropped the start of the output to stay within `output_limit`.
    pub truncated: bool,
    pub ending: TerminalEnding,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalEnding {
    Exited {
        code: Option<u32>,
        signal: Option<String>,
    },
    /// Killed when `timeout` passed.
    TimedOut,
    /// Killed because the turn was cancelled.
    Cancelled,
}
