//! `tandem ask`: one prompt answered headless, for scripts, CI and quick questions from a
//! terminal. It sets the agent up exactly as an editor session would (settings, sandbox,
//! memory, system prompt, environment), runs one turn, and translates the agent's events: the
//! answer streams to stdout, tool activity goes to stderr, and `--json` prints every event as a
//! JSON line instead. Nobody is there to approve a call, so calls that need approval are refused
//! and the model is told why. The exit code says how the turn ended.
//!
//! The settings, sandbox and tool context are shared with `tandem tool`, so a tool run by hand
//! sees the same workspace the agent does.

use std::collections::HashSet;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use tandem_agent::environment::environment_context;
use tandem_agent::prompt::system_prompt;
use tandem_agent::settings::AgentSettings;
use tandem_agent::tools::{self, SessionState, ToolContext};
use tandem_agent::{
    memory, AgentConfig, ApprovalDecision, ApprovalMode, Event, Session, StopReason,
    ToolCallStatus, ToolCallUpdate, TurnIo, Workspace,
};
use tandem_providers::settings::{user_settings_path, Loaded};
use tandem_providers::{CancellationToken, Model};
use tokio::sync::mpsc;

/// What the model is told when a call needed approval that headless mode cannot ask for.
const REFUSAL: &str =
    "Tandem runs non-interactively (tandem ask) and this call needs approval; it was not run";

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

/// Runs `tandem ask`; the exit code, or an error for a usage or configuration problem (exit 2).
pub fn run(args: AskArgs) -> Result<i32> {
    let prompt = read_prompt(args.prompt)?;
    let root = workspace_root(args.workspace)?;
    let (loaded, mut settings) = load_settings(&root)?;

    let env = |name: &str| std::env::var(name).ok();
    let mut config = loaded.settings.resolve_model(args.model.as_deref(), &env)?;
    if let Some(record) = args.record {
        config.record = Some(record);
    }
    let model = Model::new(config)?;

    let ctx = tool_context(&root, &settings);
    let memory = memory::load(&settings.memory.config(), ctx.workspace.roots(), None);
    for warning in &memory.warnings {
        eprintln!("warning: {warning}");
    }
    // The model sees where each memory file came from; absolute paths would only add noise
    // (and the user's name) to every request.
    let home = dirs::home_dir().map(|home| std::fs::canonicalize(&home).unwrap_or(home));
    let memory = memory.render(|path| match path.strip_prefix(&root) {
        Ok(relative) => relative.display().to_string(),
        Err(_) => match home
            .as_deref()
            .and_then(|home| path.strip_prefix(home).ok())
        {
            Some(relative) => format!("~/{}", relative.display()),
            None => path.display().to_string(),
        },
    });
    let system_prompt = system_prompt(&settings.system_prompt, memory.as_deref())
        .map_err(|error| anyhow!("{error}"))?;
    if let Some(mode) = args.approval_mode {
        settings.approval.mode = mode.into();
    }
    let config = AgentConfig {
        system_prompt,
        max_turns: args.max_turns.unwrap_or(settings.max_turns),
        approval: settings.approval,
        environment: Some(environment_context(ctx.workspace.roots(), &today())),
    };
    let mut session = Session::new(model, tools::all(), ctx, config);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    let mut output = Output::new(args.json);
    let reason = runtime.block_on(async {
        let (events_tx, mut events_rx) = mpsc::unbounded_channel();
        let (approvals_tx, mut approvals_rx) = mpsc::unbounded_channel();
        // The turn owns the event sender, so the printer below stops once the turn is over.
        // Ctrl-C cancels the turn rather than killing the process: shell commands run in their
        // own process groups, which the terminal's SIGINT does not reach, and only a cancelled
        // tool kills them.
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
            session.run_turn(prompt, Vec::new(), &mut io).await
        };
        let print = async {
            while let Some(event) = events_rx.recv().await {
                output.event(event, &approvals_tx);
            }
        };
        tokio::join!(turn, print).0
    });
    // Tools may have left processes or blocking readers behind; they must not keep us alive.
    runtime.shutdown_background();
    if let Some(error) = output.write_error {
        eprintln!("tandem: could not write to standard output: {error}");
        return Ok(1);
    }
    Ok(match reason {
        StopReason::EndTurn => 0,
        StopReason::Error | StopReason::MaxTurns | StopReason::LoopDetected => 1,
        StopReason::Cancelled => 130,
    })
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
    let settings = AgentSettings::from_raw(&loaded.raw).map_err(|error| anyhow!("{error}"))?;
    Ok((loaded, settings))
}

/// The sandbox (the root plus the settings' `extraDirectories`) and what the tools share.
pub(crate) fn tool_context(root: &Path, settings: &AgentSettings) -> ToolContext {
    let home = dirs::home_dir();
    // Settings name directories as a person writes them: `~/notes`, or relative to the project.
    let extra = settings
        .extra_directories
        .iter()
        .map(|dir| match (dir.strip_prefix("~"), &home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => root.join(dir),
        })
        .collect();
    let user_dir = user_settings_path().and_then(|path| path.parent().map(Path::to_path_buf));
    ToolContext {
        workspace: Arc::new(Workspace::new(vec![root.to_path_buf()], extra)),
        cancel: CancellationToken::new(),
        session: Arc::new(SessionState::default()),
        user_memory_file: user_dir.map(|dir| dir.join("AGENTS.md")),
    }
}

/// Prints the turn's events: plain (the answer on stdout, activity on stderr) or as JSON lines.
struct Output {
    json: bool,
    /// Whether any answer text was printed.
    wrote_text: bool,
    /// Whether the printed answer ends with a line break.
    ends_with_newline: bool,
    /// A tool call came after the last text: the next text is a new paragraph.
    new_paragraph: bool,
    /// Calls refused here for want of approval: their `error` update was already explained.
    refused: HashSet<String>,
    /// The first failure to write stdout; later writes are skipped, the turn goes on.
    write_error: Option<io::Error>,
}

impl Output {
    fn new(json: bool) -> Self {
        Output {
            json,
            wrote_text: false,
            ends_with_newline: false,
            new_paragraph: false,
            refused: HashSet::new(),
            write_error: None,
        }
    }

    fn event(
        &mut self,
        event: Event,
        approvals: &mpsc::UnboundedSender<(String, ApprovalDecision)>,
    ) {
        if self.json {
            let line = serde_json::to_string(&event).map_err(io::Error::from);
            self.stdout(|out| writeln!(out, "{}", line?));
        }
        match event {
            Event::TextChunk { text } if !self.json && !text.is_empty() => {
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
            Event::Retrying { error, .. } => {
                eprintln!("model request failed, retrying: {error}");
            }
            Event::ToolCall(update) => {
                self.new_paragraph = self.wrote_text;
                self.tool_call(update, approvals);
            }
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
                    StopReason::Error | StopReason::MaxTurns | StopReason::LoopDetected => {
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

    fn tool_call(
        &mut self,
        update: ToolCallUpdate,
        approvals: &mpsc::UnboundedSender<(String, ApprovalDecision)>,
    ) {
        let title = &update.title;
        let line = match update.status {
            ToolCallStatus::AwaitingApproval => {
                let decision = ApprovalDecision::Reject {
                    feedback: Some(REFUSAL.to_owned()),
                };
                // The session waits for this answer; it cannot be gone before the turn is over.
                let _ = approvals.send((update.call_id.clone(), decision));
                self.refused.insert(update.call_id);
                // Shown in --json mode too: it says how to let the call run next time.
                eprintln!(
                    "✗ {title}: needs approval; rerun with --approval-mode auto_edit or yolo, or \
                     allow it in the settings"
                );
                return;
            }
            ToolCallStatus::Executing => format!("→ {title}"),
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

    /// Writes and flushes stdout, so the answer appears as it streams.
    fn stdout(&mut self, write: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>) {
        if self.write_error.is_some() {
            return;
        }
        let mut out = io::stdout().lock();
        if let Err(error) = write(&mut out).and_then(|()| out.flush()) {
            self.write_error = Some(error);
        }
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`, for the environment context.
fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() / 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day): Howard Hinnant's
/// `civil_from_days`, which counts in 400-year eras that start on March 1st so that leap days
/// fall at the end of a year.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_from_unix_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(today().len(), "2025-01-01".len());
    }
}
