//! `tandem ask`: one prompt answered headless, for scripts, CI and quick questions from a
//! terminal. It runs on the session host the editor uses (`tandem_agent::host`), so the agent
//! is set up exactly as an editor session would be (settings, sandbox, memory, system prompt,
//! environment); it runs one turn and translates the agent's events: the
//! answer streams to stdout, tool activity goes to stderr, and `--json` prints every event as a
//! JSON line instead. Nobody is there to approve a call, so calls that need approval are refused
//! and the model is told why. The exit code says how the turn ended.
//!
//! The session is saved as it runs (unless `sessions.persist` is off), so `--resume ID` and
//! `--continue` can pick it up in a later run; `/compress` and `/restore` prompts pass through to
//! the agent, which handles them. The settings, sandbox and tool context are shared with
//! `tandem tool`, so a tool run by hand sees the same workspace the agent does.

use std::collections::HashSet;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{anyhow, bail, Context, Result};
use tandem_agent::host::{
    Frontend, Host, HostError, HostOptions, Overrides, SessionSpec, TurnEvent, TurnHandle,
    TurnRequest,
};
use tandem_agent::protocol::{CompressionReport, CompressionStatus, RestoreReport};
use tandem_agent::settings::{AgentSettings, EditSettings};
use tandem_agent::store::{SessionStore, StoreError};
use tandem_agent::tools::{ToolContext, ToolKind};
use tandem_agent::{
    setup, ApprovalDecision, ApprovalMode, ApprovalPolicy, DiskEditor, Editor, Event, Prompt,
    Session, StopReason, ToolCallStatus, ToolCallUpdate, TurnIo,
};
use tandem_providers::settings::{user_settings_path, Loaded};
use tandem_providers::CancellationToken;
use tokio::sync::mpsc;

/// Why nobody could approve a call, as the model is told.
const CANNOT_ASK: &str = "Tandem runs non-interactively (tandem ask), so nobody can be asked";

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
    let (reason, output) = result?;
    match &output.write_error {
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
                eprintln!("tandem: {why}");
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
    let hold_answer = !io::stdout().is_terminal();
    let mode = settings.approval.mode;
    let mut output = Output::new(
        args.json,
        hold_answer,
        mode,
        root.clone(),
        Box::new(io::stdout()),
    );
    let TurnHandle {
        mut events,
        approvals,
        ..
    } = handle;
    let mut reason = StopReason::Error;
    while let Some(event) = events.recv().await {
        if let TurnEvent::Agent(event) = event {
            if let Event::TurnFinished { stop_reason, .. } = &event {
                reason = *stop_reason;
            }
            output.event(event, &approvals);
        }
    }
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
            eprintln!("session {id} saved; continue it with: tandem ask --resume {id} \"…\"");
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

/// Runs one turn of `session` on `prompt` and prints its events as `tandem ask` does (`json`:
/// as JSON lines); Ctrl-C cancels the turn. Returns how the turn ended and the first failure to
/// write stdout. `tandem demo` plays its recording through this: it runs a bare session, since
/// the user's settings, memory and saved sessions must play no part in it.
pub(crate) fn run_printed_turn(
    session: &mut Session,
    prompt: String,
    root: PathBuf,
    json: bool,
) -> Result<(StopReason, Option<io::Error>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    let hold_answer = !io::stdout().is_terminal();
    let mode = session.config().approval.mode;
    let mut output = Output::new(json, hold_answer, mode, root, Box::new(io::stdout()));
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
        let print = async {
            while let Some(event) = events_rx.recv().await {
                output.event(event, &approvals_tx);
            }
        };
        tokio::join!(turn, print).0
    });
    runtime.shutdown_background();
    Ok((reason, output.write_error))
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

/// A subagent's tool call, indented under the parent's `subagent` call on stderr. Its
/// approval questions were answered in the child (subagents cannot ask), its text is its
/// report, which the parent reads.
fn subagent_line(nested: &tandem_agent::SubagentEvent) {
    let Event::ToolCall(update) = nested.event.as_ref() else {
        return;
    };
    let title = &update.title;
    let line = match update.status {
        ToolCallStatus::Executing if update.progress.is_none() => format!("→ {title}"),
        ToolCallStatus::Success => format!("✓ {title}"),
        ToolCallStatus::Error | ToolCallStatus::Cancelled => {
            let why = update
                .output
                .as_deref()
                .and_then(|output| output.lines().map(str::trim).find(|line| !line.is_empty()))
                .unwrap_or("failed");
            format!("✗ {title}: {why}")
        }
        _ => return,
    };
    eprintln!("    {}: {line}", nested.agent);
}

/// Prints the turn's events: plain (the answer on stdout, activity on stderr) or as JSON lines.
///
/// A model request that fails mid-answer and is retried starts its answer again. What reaches
/// stdout must still be the answer exactly once: to a terminal the text streams, and a restart
/// goes on a new line with a note on stderr; to a pipe or file, each response's text is held
/// until the response is complete (a tool call starts, or the turn ends) and a retry discards
/// it. `--json` prints every event, the `retrying` one included, and leaves the rest to its
/// reader.
struct Output {
    json: bool,
    /// A model answered or a tool call ran: the session holds a turn worth resuming. A turn
    /// without either (`/help`, a model that cannot be used, a refused key) is not saved, so
    /// that `--continue` resumes the session that did something.
    worth_resuming: bool,
    /// Hold each response's text until it is complete (stdout is not a terminal).
    hold_answer: bool,
    /// The current response's text, held.
    held: String,
    /// Text of the current response reached the terminal.
    streamed: bool,
    /// The workspace root, which restored paths are shown relative to.
    root: PathBuf,
    /// Whether any answer text was printed.
    wrote_text: bool,
    /// Whether the printed answer ends with a line break.
    ends_with_newline: bool,
    /// A tool call came after the last text: the next text is a new paragraph.
    new_paragraph: bool,
    /// The approval mode the turn runs in, which the refusals' advice depends on.
    mode: ApprovalMode,
    /// Calls refused here for want of approval: their `error` update was already explained.
    refused: HashSet<String>,
    /// How many calls were refused for want of approval.
    refusals: usize,
    /// The mode that asks most among those that would have run every refused call that the
    /// mode decides on; `None` while every refusal was of a call Tandem asks about in every mode.
    needed: Option<ApprovalMode>,
    /// A call that can change something (not a read, search or plan) started running.
    changed: bool,
    /// Where the answer goes: stdout, or a buffer in tests.
    out: Box<dyn Write>,
    /// The first failure to write stdout; later writes are skipped, the turn goes on.
    write_error: Option<io::Error>,
}

impl Output {
    fn new(
        json: bool,
        hold_answer: bool,
        mode: ApprovalMode,
        root: PathBuf,
        out: Box<dyn Write>,
    ) -> Self {
        Output {
            json,
            worth_resuming: false,
            hold_answer,
            held: String::new(),
            streamed: false,
            root,
            wrote_text: false,
            ends_with_newline: false,
            new_paragraph: false,
            mode,
            refused: HashSet::new(),
            refusals: 0,
            needed: None,
            changed: false,
            out,
            write_error: None,
        }
    }

    fn event(
        &mut self,
        event: Event,
        approvals: &mpsc::UnboundedSender<(String, ApprovalDecision)>,
    ) {
        if matches!(event, Event::Usage(_) | Event::ToolCall(_)) {
            self.worth_resuming = true;
        }
        if self.json {
            let line = serde_json::to_string(&event).map_err(io::Error::from);
            self.stdout(|out| writeln!(out, "{}", line?));
        }
        match &event {
            Event::TextChunk { .. } | Event::ThoughtChunk { .. } | Event::Usage(_) => {}
            Event::Retrying { .. } => self.held.clear(),
            // The failed request's partial answer is not the answer: the agent dropped it too.
            Event::TurnFinished {
                stop_reason: StopReason::Error,
                ..
            } => self.held.clear(),
            _ => {
                self.streamed = false;
                if !self.held.is_empty() {
                    let held = std::mem::take(&mut self.held);
                    self.print_text(&held);
                }
            }
        }
        match event {
            Event::TextChunk { text } if !self.json && !text.is_empty() => {
                if self.hold_answer {
                    self.held.push_str(&text);
                } else {
                    self.print_text(&text);
                    self.streamed = true;
                }
            }
            Event::Retrying { error, .. } => {
                eprintln!("model request failed, retrying: {error}");
                if self.streamed && !self.json {
                    eprintln!("tandem: the answer so far was cut off; it starts again below");
                    if !self.ends_with_newline {
                        self.stdout(|out| writeln!(out));
                        self.ends_with_newline = true;
                    }
                    self.new_paragraph = true;
                    self.streamed = false;
                }
            }
            Event::ToolCall(update) => {
                self.new_paragraph = self.wrote_text;
                self.tool_call(update, approvals);
            }
            Event::Compression(report) if !self.json => eprintln!("{}", compression_line(&report)),
            Event::Restored(report) if !self.json => self.restored(&report),
            Event::Hook(run) if !self.json => eprintln!("{}", hook_line(&run)),
            Event::Subagent(nested) if !self.json => subagent_line(&nested),
            Event::TurnFinished {
                stop_reason,
                message,
            } => {
                if !self.json && self.wrote_text && !self.ends_with_newline {
                    self.stdout(|out| writeln!(out));
                }
                let message = message.unwrap_or_else(|| match stop_reason {
                    StopReason::EndTurn => String::new(),
                    StopReason::Cancelled => "the turn was cancelled".to_owned(),
                    StopReason::Error
                    | StopReason::MaxTurns
                    | StopReason::LoopDetected
                    | StopReason::ResponseLimit => {
                        format!("the turn ended early ({stop_reason:?})")
                    }
                });
                if stop_reason != StopReason::EndTurn {
                    eprintln!("tandem: {message}");
                }
            }
            // Thoughts, the plan and token counts are for interactive front ends (and --json).
            _ => {}
        }
    }

    /// Answer text on stdout, a blank line before it when a tool call came between.
    fn print_text(&mut self, text: &str) {
        let separator = match (self.new_paragraph, self.ends_with_newline) {
            (false, _) => "",
            (true, true) => "\n",
            (true, false) => "\n\n",
        };
        self.stdout(|out| write!(out, "{separator}{text}"));
        self.wrote_text = true;
        self.new_paragraph = false;
        self.ends_with_newline = text.ends_with('\n');
    }

    fn tool_call(
        &mut self,
        update: ToolCallUpdate,
        approvals: &mpsc::UnboundedSender<(String, ApprovalDecision)>,
    ) {
        let title = &update.title;
        let line = match update.status {
            ToolCallStatus::AwaitingApproval => {
                let decision = ApprovalDecision::CannotAsk {
                    reason: CANNOT_ASK.to_owned(),
                };
                // The session waits for this answer; it cannot be gone before the turn is over.
                let _ = approvals.send((update.call_id.clone(), decision));
                self.refused.insert(update.call_id);
                self.refusals += 1;
                // Shown in --json mode too: it says how to let the call run next time.
                match &update.approval_reason {
                    Some(why) => eprintln!(
                        "✗ {title}: not run: Tandem always asks before it, because {why}, and \
                         tandem ask cannot ask; do it yourself, or in an editor"
                    ),
                    None => {
                        let needed = ApprovalMode::least_allowing(update.kind);
                        self.needed = self.needed.max(Some(needed));
                        let rerun = if needed > self.mode {
                            format!("rerun with --approval-mode {}, or ", needed.name())
                        } else {
                            String::new()
                        };
                        // The narrowest rule (for `shell`, this very command line), as JSON:
                        // quotes and line breaks in a command come out escaped.
                        let rule = ApprovalPolicy::rule_for(&update.tool, &update.raw_input);
                        let rule = serde_json::Value::String(rule.0);
                        eprintln!(
                            "✗ {title}: needs approval (mode {}); {rerun}allow it with \
                             \"approval\": {{\"allow\": [{rule}]}} in settings.json",
                            self.mode.name()
                        );
                    }
                }
                return;
            }
            ToolCallStatus::Executing => {
                self.changed |= match update.kind {
                    ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch => false,
                    ToolKind::Edit | ToolKind::Execute | ToolKind::Other => true,
                };
                format!("→ {title}")
            }
            ToolCallStatus::Success => format!("✓ {title}"),
            ToolCallStatus::Error | ToolCallStatus::Cancelled => {
                if self.refused.remove(&update.call_id) {
                    return;
                }
                let why = update
                    .output
                    .as_deref()
                    .and_then(|output| output.lines().map(str::trim).find(|line| !line.is_empty()))
                    .unwrap_or("failed");
                format!("✗ {title}: {why}")
            }
            ToolCallStatus::Validating | ToolCallStatus::Scheduled => return,
        };
        if !self.json {
            eprintln!("{line}");
        }
    }

    /// Why a turn that ended normally did nothing: some calls were refused for want of
    /// approval and no call that could change anything ran. `None` when that is not so.
    fn nothing_changed(&self) -> Option<String> {
        if self.refusals == 0 || self.changed {
            return None;
        }
        let actions = match self.refusals {
            1 => "1 action".to_owned(),
            n => format!("{n} actions"),
        };
        let them = if self.refusals == 1 { "it" } else { "them" };
        let next = match self.needed {
            Some(needed) if needed > self.mode => format!(
                "rerun with --approval-mode {}, or allow {them} in settings.json as shown above",
                needed.name()
            ),
            Some(_) => format!("allow {them} in settings.json as shown above"),
            None => format!("do {them} yourself, or in an editor"),
        };
        Some(format!(
            "nothing was changed: {actions} needed approval, which tandem ask cannot give; {next}"
        ))
    }

    /// One line per file a restore put back or left alone.
    fn restored(&self, report: &RestoreReport) {
        if report.restored.is_empty() && report.skipped.is_empty() {
            // The answer on stdout says why.
            eprintln!("restored no files");
            return;
        }
        let show = |path: &Path| {
            path.strip_prefix(&self.root)
                .unwrap_or(path)
                .display()
                .to_string()
        };
        for path in &report.restored {
            eprintln!("restored {}", show(path));
        }
        for skipped in &report.skipped {
            eprintln!("not restored {}: {}", show(&skipped.path), skipped.reason);
        }
    }

    /// Writes and flushes stdout, so the answer appears as it streams.
    fn stdout(&mut self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) {
        if self.write_error.is_some() {
            return;
        }
        let out = &mut self.out;
        if let Err(error) = write(out).and_then(|()| out.flush()) {
            self.write_error = Some(error);
        }
    }
}

/// What a compression did, for a person: "compressed the history: 12,345 → 2,345 tokens".
fn compression_line(report: &CompressionReport) -> String {
    let before = thousands(report.tokens_before);
    let after = thousands(report.tokens_after);
    let why = report.message.as_deref();
    match report.status {
        CompressionStatus::Compressed => {
            format!("compressed the history: {before} → {after} tokens")
        }
        CompressionStatus::Skipped => format!(
            "history not compressed ({before} tokens): {}",
            why.unwrap_or("there is too little to compress")
        ),
        CompressionStatus::Inflated => format!(
            "history not compressed ({before} tokens): {}",
            why.unwrap_or("the summary would have been larger than what it replaced")
        ),
        CompressionStatus::Failed => format!(
            "could not compress the history ({before} tokens): {}",
            why.unwrap_or("the summary request failed")
        ),
    }
}

/// `12345` as `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// One line per hook run: `hook PreToolUse `./check.sh` denied (12 ms): no edits to lockfiles`.
fn hook_line(run: &tandem_agent::protocol::HookRun) -> String {
    let outcome = serde_json::to_value(run.outcome)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default();
    let command = tandem_agent::approval::shown::visible(&run.command);
    let mut line = format!(
        "hook {} `{command}` {outcome} ({} ms)",
        run.event, run.duration_ms
    );
    if let Some(message) = &run.message {
        line.push_str(": ");
        line.push_str(&tandem_agent::approval::shown::visible(message));
    }
    line
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// What `Output` wrote to its stdout.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Stdout after `events`, printed for a terminal (`hold_answer` false) or a pipe.
    fn printed(hold_answer: bool, events: Vec<Event>) -> String {
        let captured = Captured::default();
        let mut output = Output::new(
            false,
            hold_answer,
            ApprovalMode::Default,
            PathBuf::from("/w"),
            Box::new(captured.clone()),
        );
        let (approvals, _) = mpsc::unbounded_channel();
        for event in events {
            output.event(event, &approvals);
        }
        let bytes = captured.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    fn text(text: &str) -> Event {
        Event::TextChunk {
            text: text.to_owned(),
        }
    }

    fn retrying() -> Event {
        Event::Retrying {
            attempt: 1,
            delay_ms: 1,
            error: "connection reset".to_owned(),
        }
    }

    fn finished(stop_reason: StopReason) -> Event {
        Event::TurnFinished {
            stop_reason,
            message: None,
        }
    }

    #[test]
    fn a_retried_answer_reaches_stdout_once() {
        let events = || {
            vec![
                text("PART-ONE "),
                retrying(),
                text("PART-ONE "),
                retrying(),
                text("PART-ONE "),
                text("PART-TWO"),
                finished(StopReason::EndTurn),
            ]
        };
        // A pipe gets the completed answer only.
        assert_eq!(printed(true, events()), "PART-ONE PART-TWO\n");
        // A terminal sees the text as it streams, each restart on a fresh paragraph.
        assert_eq!(
            printed(false, events()),
            "PART-ONE \n\nPART-ONE \n\nPART-ONE PART-TWO\n"
        );
    }

    #[test]
    fn a_pipe_gets_each_response_once_it_is_complete_and_never_a_failed_one() {
        let call = Event::ToolCall(
            serde_json::from_value(serde_json::json!({"callId": "c1", "tool": "read_file",
                "title": "Read a.txt", "kind": "read", "status": "executing"}))
            .unwrap(),
        );
        assert_eq!(
            printed(
                true,
                vec![
                    text("Reading."),
                    call,
                    text("Half an ans"),
                    finished(StopReason::Error)
                ]
            ),
            "Reading.\n"
        );
    }

    #[test]
    fn compression_is_reported_with_grouped_token_counts() {
        let report = CompressionReport {
            status: CompressionStatus::Compressed,
            tokens_before: 12_345,
            tokens_after: 2_345,
            message: None,
        };
        assert_eq!(
            compression_line(&report),
            "compressed the history: 12,345 → 2,345 tokens"
        );
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
