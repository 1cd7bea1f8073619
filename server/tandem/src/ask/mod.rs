//! `tandem ask`: one prompt answered headless, for scripts, CI and quick questions from a
//! terminal. It runs on the session host the editor uses (`tandem_agent::host`), so the agent
//! is set up exactly as an editor session would be (settings, sandbox, memory, system prompt,
//! environment); it runs one turn and translates the agent's events (`output`): the
//! answer streams to stdout, tool activity goes to stderr, and `--json` prints every event as a
//! JSON line instead. On a terminal the two are laid out together (`screen`), coloured, with a
//! spinner while the model thinks and the diff of what changed at the end (`changes`). Nobody is there to approve a call, so calls that need approval are refused
//! and the model is told why. The exit code says how the turn ended.
//!
//! The session is saved as it runs (unless `sessions.persist` is off), so `--resume ID` and
//! `--continue` can pick it up in a later run; `/compress` and `/restore` prompts pass through to
//! the agent, which handles them. The settings, sandbox and tool context are shared with
//! `tandem tool`, so a tool run by hand sees the same workspace the agent does.

mod changes;
mod output;
mod screen;

use std::collections::HashSet;
use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tandem_agent::host::{
    Frontend, Host, HostError, HostOptions, Overrides, SessionSpec, TurnEvent, TurnHandle,
    TurnRequest,
};
use tandem_agent::settings::{AgentSettings, EditSettings};
use tandem_agent::store::{SessionStore, StoreError};
use tandem_agent::tools::ToolContext;
use tandem_agent::{
    setup, ApprovalMode, DiskEditor, Editor, Event, Prompt, Session, StopReason, TurnIo,
};
use tandem_providers::settings::{user_settings_path, Loaded};
use tandem_providers::CancellationToken;
use tokio::sync::mpsc;

pub(crate) use changes::{plain, Changes};
use output::{Options, Output};
use screen::{Screen, Style, Tty};

/// How often the spinner turns.
const SPINNER_TICK: Duration = Duration::from_millis(100);

/// Why `--continue` has nothing to continue.
const NO_SESSION: &str = "no saved session for this workspace; start one with tandem ask \"…\"";

#[derive(Debug, clap::Args)]
pub struct AskArgs {
    /// The prompt. `-` reads it from standard input, as does leaving it out when standard input
    /// is not a terminal; a prompt given here leaves standard input unread.
    prompt: Option<String>,
    /// The model: a name from the settings' `models`, or `provider:model`. Overrides
    /// TANDEM_MODEL and the `model` setting.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Print every agent event as one JSON line on stdout (and nothing else there).
    #[arg(long)]
    json: bool,
    /// Which tool calls run without approval; overrides the settings' `approval.mode`. Calls
    /// that would need approval are refused, since nobody can approve them.
    #[arg(long, value_enum, value_name = "MODE")]
    approval_mode: Option<ApprovalModeArg>,
    /// The workspace the agent works in. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The most model requests for the prompt; overrides the `maxTurns` setting.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_turns: Option<u32>,
    /// Append every model response to FILE in the replay format (see docs/replay.md).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Continue the saved session ID (`tandem sessions` lists them) with this prompt.
    #[arg(long, value_name = "ID", conflicts_with = "continue_latest")]
    resume: Option<String>,
    /// Continue this workspace's most recently updated saved session with this prompt.
    #[arg(long = "continue")]
    continue_latest: bool,
    /// On a terminal, do not show the diff of what the turn changed at its end.
    #[arg(long)]
    no_diff: bool,
}

/// `ApprovalMode` as the command line spells it (the settings' spelling, underscores and all).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ApprovalModeArg {
    /// Ask before edits, writes and shell commands (so headless, refuse them).
    Default,
    /// Edits and writes run; shell commands need approval.
    #[value(name = "auto_edit")]
    AutoEdit,
    /// Everything runs.
    Yolo,
}

impl From<ApprovalModeArg> for ApprovalMode {
    fn from(mode: ApprovalModeArg) -> Self {
        match mode {
            ApprovalModeArg::Default => ApprovalMode::Default,
            ApprovalModeArg::AutoEdit => ApprovalMode::AutoEdit,
            ApprovalModeArg::Yolo => ApprovalMode::Yolo,
        }
    }
}

/// Runs `tandem ask`; the exit code (3 when the turn ended normally but every action it tried
/// was refused and nothing changed), or an error for a usage or configuration problem (exit 2).
pub fn run(args: AskArgs) -> Result<i32> {
    let prompt = read_prompt(args.prompt.clone())?;
    let root = workspace_root(args.workspace.clone())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    let result = runtime.block_on(ask(args, prompt, root));
    // Tools may have left processes or blocking readers behind; they must not keep us alive.
    runtime.shutdown_background();
    let (reason, mut output) = result?;
    match &output.take_write_error() {
        // The reader has gone (`tandem ask … | head`) but the turn ran to its end, its edits
        // made: its exit code still says how it went, and there is nothing more to report.
        Some(error) if error.kind() == io::ErrorKind::BrokenPipe => {}
        Some(error) => {
            eprintln!("tandem: could not write to standard output: {error}");
            return Ok(1);
        }
        None => {}
    }
    Ok(match reason {
        StopReason::EndTurn => match output.nothing_changed() {
            Some(why) => {
                output.note(&format!("tandem: {why}"), Style::Red);
                3
            }
            None => 0,
        },
        StopReason::Error
        | StopReason::MaxTurns
        | StopReason::LoopDetected
        | StopReason::ResponseLimit => 1,
        StopReason::Cancelled => 130,
    })
}

/// The session (new, or the one `--resume`/`--continue` names) on the shared session host,
/// one turn of it printed, and what is left to say about the saved session.
async fn ask(args: AskArgs, prompt: String, root: PathBuf) -> Result<(StopReason, Output)> {
    let host = Host::new(HostOptions {
        user_settings: user_settings_path(),
        state_dir: SessionStore::default_state_dir(),
        transcripts: false,
        // The errors an edit adds, from the language servers on PATH.
        language_servers: Some(Arc::new(crate::language_servers::OnPath::default())),
        one_shot: true,
    });
    // The first thing known is the workspace: its index is warming while the settings load.
    host.index_in_background(std::slice::from_ref(&root));
    let frontend: Arc<dyn Frontend> = Arc::new(Headless::default());
    let spec = SessionSpec {
        roots: vec![root.clone()],
        title: None,
        frontend: frontend.clone(),
        overrides: Overrides {
            model: args.model,
            approval_mode: args.approval_mode.map(ApprovalMode::from),
            max_turns: args.max_turns,
            record: args.record,
        },
        mcp_servers: Default::default(),
    };
    // Settings and model problems are usage errors, reported before anything runs.
    let settings = host.check(&spec).map_err(|error| anyhow!("{error}"))?;
    let resume = match (args.resume, args.continue_latest) {
        (Some(id), _) => Some(id),
        (None, true) => Some(
            host.latest_saved(&spec.roots, frontend.as_ref())
                .map_err(cannot_resume)?
                .ok_or_else(|| anyhow!(NO_SESSION))?,
        ),
        (None, false) => None,
    };
    let resumed = resume.is_some();
    let id = match resume {
        Some(id) => {
            let resumed = host.resume(&id, spec).await.map_err(cannot_resume)?;
            resumed.session_id
        }
        None => host.new_session(spec).map_err(|error| anyhow!("{error}"))?,
    };
    let handle = host
        .prompt(&id, TurnRequest::text(prompt))
        .map_err(|error| anyhow!("{error}"))?;
    // Ctrl-C cancels the turn rather than killing the process: shell commands run in their
    // own process groups, which the terminal's SIGINT does not reach, and only a cancelled
    // tool kills them.
    let on_interrupt = host.clone();
    let interrupted = id.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = on_interrupt.cancel(&interrupted, None);
        }
    });
    let options = Options {
        json: args.json,
        mode: settings.approval.mode,
        root: root.clone(),
        diff: !args.no_diff,
    };
    let mut output = Output::new(options, stdio(args.json));
    let TurnHandle {
        mut events,
        approvals,
        ..
    } = handle;
    let mut reason = StopReason::Error;
    print_events(&mut output, &mut events, |output, event| {
        if let TurnEvent::Agent(event) = event {
            if let Event::TurnFinished { stop_reason, .. } = &event {
                reason = *stop_reason;
            }
            output.event(event, &approvals);
        }
    })
    .await;
    if host.is_saved(&id) {
        // A new session whose turn reached no model and ran nothing (`/help`, a model that
        // cannot be used, a refused key) holds nothing worth resuming: kept, it would be the
        // one `--continue` picks instead of the last that did something.
        if !output.worth_resuming && !resumed {
            if let Err(error) = host.delete(&id, &[root], frontend.as_ref()).await {
                tracing::warn!("cannot delete the unused session {id}: {error}");
            }
        } else {
            // On stderr in both modes: stdout is the answer (or, with --json, only events).
            let line =
                format!("session {id} saved; continue it with: tandem ask --resume {id} \"…\"");
            output.note(&line, Style::Dim);
        }
    }
    // The session ends with its `SessionEnd` hooks (bounded: a hook's own timeout is longer),
    // and the tags indexed so far are saved for the next run.
    host.end_sessions(std::time::Duration::from_secs(10)).await;
    // MCP servers' programs are stopped (their whole process groups) before Tandem exits.
    host.shutdown_mcp().await;
    Ok((reason, output))
}

/// `--resume`/`--continue` failed: why, and what to do.
fn cannot_resume(error: HostError) -> anyhow::Error {
    match error {
        HostError::NotSaved {
            has_state_dir: true,
        } => anyhow!(
            "cannot resume: saving sessions is off (`sessions.persist` is false in the settings), \
             so there is no saved session; set it to true to save the next ones"
        ),
        HostError::NotSaved {
            has_state_dir: false,
        } => anyhow!(
            "cannot resume: there is no state directory for saved sessions; set TANDEM_STATE_DIR"
        ),
        HostError::Store(error @ (StoreError::NotFound(_) | StoreError::BadId(_))) => {
            anyhow!("{error}; `tandem sessions` lists the saved ones")
        }
        error => anyhow!("{error}"),
    }
}

/// `tandem ask`'s side of a session: files on disk, no IDE, warnings on stderr (each once:
/// the settings are read again when the session starts).
#[derive(Default)]
pub(crate) struct Headless {
    warned: Mutex<HashSet<String>>,
}

impl Frontend for Headless {
    fn editor(&self, _: &EditSettings) -> Arc<dyn Editor> {
        Arc::new(DiskEditor)
    }

    fn warning(&self, message: &str) {
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if warned.insert(message.to_owned()) {
            eprintln!("warning: {message}");
        }
    }
}

/// How a printed turn went.
pub(crate) struct Printed {
    pub reason: StopReason,
    /// The first failure to write stdout.
    pub write_error: Option<io::Error>,
    /// What the turn's edits and writes changed.
    pub changes: Changes,
    /// The diff summary of `changes` was printed (stdout is a terminal).
    pub summary_shown: bool,
}

/// Runs one turn of `session` on `prompt` and prints its events as `tandem ask` does (`json`:
/// as JSON lines), the diff summary included; Ctrl-C cancels the turn. `tandem demo` plays its
/// recording through this: it runs a bare session, since the user's settings, memory and saved
/// sessions must play no part in it.
pub(crate) fn run_printed_turn(
    session: &mut Session,
    prompt: String,
    root: PathBuf,
    json: bool,
) -> Result<Printed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    let options = Options {
        json,
        mode: session.config().approval.mode,
        root,
        diff: true,
    };
    let mut output = Output::new(options, stdio(json));
    let reason = runtime.block_on(async {
        let (events_tx, mut events_rx) = mpsc::unbounded_channel();
        let (approvals_tx, mut approvals_rx) = mpsc::unbounded_channel();
        // The turn owns the event sender, so the printer below stops once the turn is over.
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        let turn = async move {
            let mut io = TurnIo {
                events: &events_tx,
                approvals: &mut approvals_rx,
                cancel,
            };
            session.run_turn(Prompt::text(prompt), &mut io).await
        };
        let print = print_events(&mut output, &mut events_rx, |output, event| {
            output.event(event, &approvals_tx);
        });
        tokio::join!(turn, print).0
    });
    runtime.shutdown_background();
    Ok(Printed {
        reason,
        write_error: output.take_write_error(),
        summary_shown: output.summary_shown,
        changes: std::mem::take(&mut output.changes),
    })
}

/// Stdout and stderr as they are (with `--json`, taken as pipes: its output is unchanged
/// wherever it goes).
fn stdio(json: bool) -> Screen {
    let tty = |terminal: bool| match json {
        true => Tty::PIPE,
        false => Tty::detect(terminal),
    };
    Screen::new(
        Box::new(io::stdout()),
        tty(io::stdout().is_terminal()),
        Box::new(io::stderr()),
        tty(io::stderr().is_terminal()),
    )
}

/// Hands each of `events` to `each` until there are no more; meanwhile, while the turn waits,
/// the spinner turns. It is drawn from here, between events, so no frame can land inside
/// other output, and it is gone before this returns.
async fn print_events<T>(
    output: &mut Output,
    events: &mut mpsc::UnboundedReceiver<T>,
    mut each: impl FnMut(&mut Output, T),
) {
    let mut ticks = tokio::time::interval(SPINNER_TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => each(output, event),
                None => break,
            },
            _ = ticks.tick(), if output.spins() => output.tick(Instant::now()),
        }
    }
    output.stop_spinner();
}

/// The prompt from the argument or, for `-` or no argument with piped input, from stdin.
fn read_prompt(prompt: Option<String>) -> Result<String> {
    let prompt = match prompt {
        Some(prompt) if prompt != "-" => prompt,
        None if io::stdin().is_terminal() => bail!(
            "give the prompt as an argument (tandem ask \"…\"), or `-` to read it from standard input"
        ),
        _ => {
            let mut prompt = String::new();
            io::stdin()
                .read_to_string(&mut prompt)
                .context("cannot read the prompt from standard input")?;
            prompt
        }
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty");
    }
    Ok(prompt)
}

/// The workspace root, canonical: `dir` or the current directory.
pub(crate) fn workspace_root(dir: Option<PathBuf>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = std::fs::canonicalize(&dir)
        .with_context(|| format!("cannot use {} as the workspace", dir.display()))?;
    if !root.is_dir() {
        bail!("the workspace {} is not a directory", dir.display());
    }
    Ok(root)
}

/// The user's and the workspace's settings, merged; what could not be applied is reported on
/// stderr, which is where a headless user looks.
pub(crate) fn load_settings(root: &Path) -> Result<(Loaded, AgentSettings)> {
    let loaded = Loaded::load(user_settings_path().as_deref(), Some(root))?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let settings = AgentSettings::from_loaded(&loaded).map_err(|error| anyhow!("{error}"))?;
    Ok((loaded, settings))
}

/// The sandbox (the root plus the settings' `extraDirectories`) and what the tools share;
/// files are read from and written to the disk.
pub(crate) fn tool_context(root: &Path, settings: &AgentSettings) -> ToolContext {
    let user_dir = user_settings_path().and_then(|path| path.parent().map(Path::to_path_buf));
    setup::tool_context(
        vec![root.to_path_buf()],
        settings,
        Arc::new(DiskEditor),
        user_dir.as_deref(),
    )
}
