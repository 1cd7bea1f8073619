//! The agent loop. A `Session` holds a conversation; `run_turn` answers one prompt: call the
//! model, validate and run the tool calls it makes (read-only ones in parallel, the others one
//! at a time in order, asking for approval where the policy says so), send the results back,
//! and repeat until the model answers without tools — or the turn is cancelled, runs out of
//! turns, loops, or fails. Whatever happens, the history stays valid: every tool call gets a
//! result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tandem_providers::{
    CacheBreakpoint, ChatRequest, Message, Model, Part, ProviderError, Response, Role, StreamEvent,
    ToolCall, ToolDeclaration, ToolResult,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::approval::protected::{PathCheck, ProtectedPaths};
use crate::approval::{shown, ApprovalMode, ApprovalPolicy, Call, Rule, Verdict};
use crate::checkpoint::{CheckpointEditor, TurnCheckpoint};
use crate::ide::{IdeContext, IdeState};
use crate::protocol::{
    ApprovalDecision, Attachment, CompressionReport, CompressionStatus, Event, RestoreReport,
    StopReason, ToolCallStatus, ToolCallUpdate, UsageReport,
};
use crate::settings::ContextSettings;
use crate::store::{now_ms, LoadedSession, Record, SessionLog};
use crate::tokens;
use crate::tools::{Location, Tool, ToolContext, ToolError, ToolOutput};

/// How a session behaves.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub system_prompt: String,
    /// Model requests per prompt before the turn stops with `max_turns`.
    pub max_turns: u32,
    pub approval: ApprovalPolicy,
    /// Sent ahead of the first prompt of the session (`environment::environment_context`).
    pub environment: Option<String>,
    /// When and how the history is compressed.
    pub context: ContextSettings,
    /// Paths every write to is asked about, beyond the names always protected.
    pub protected: ProtectedPaths,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system_prompt: String::new(),
            max_turns: 100,
            approval: ApprovalPolicy::default(),
            environment: None,
            context: ContextSettings::default(),
            protected: ProtectedPaths::default(),
        }
    }
}

/// How long a cancelled tool may take to stop by itself (and report) before it is dropped.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// How long the first prompt waits for the symbol index before its repo map is built from
/// what is parsed by then (the rest is parsed by later calls).
const REPO_MAP_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The same call (tool and arguments) this many times in a row is a loop.
const REPEATED_CALL_LIMIT: usize = 5;

/// Files the reminder names at most; it says how many more there are.
const REMINDER_MAX_FILES: usize = 10;

/// What a front end hands a turn: where events go, where approvals come from, and the token
/// that cancels it.
pub struct TurnIo<'a> {
    pub events: &'a mpsc::UnboundedSender<Event>,
    pub approvals: &'a mut mpsc::UnboundedReceiver<(String, ApprovalDecision)>,
    pub cancel: CancellationToken,
}

pub struct Session {
    model: Model,
    tools: Vec<Arc<dyn Tool>>,
    ctx: ToolContext,
    config: AgentConfig,
    history: Vec<Message>,
    /// "Allow always" answers, for the rest of the session.
    session_allow: Vec<Rule>,
    /// The last call and how many times in a row it was made.
    last_call: Option<(String, usize)>,
    /// What the model has been told about the editor.
    ide: IdeContext,
    /// The repo map sent with the environment, once computed (`Some(None)`: there is none).
    /// Computed once per session: the first request is the prefix every later one repeats, and
    /// a provider's prompt cache only helps while that prefix stays the same.
    repo_map: Option<Option<String>>,
    /// The system instruction and tool declarations, fixed at the first request after the
    /// session starts or its history is replaced: a request's prefix must not change under a
    /// provider's prompt cache.
    frozen: Option<Frozen>,
    /// Tokens in use per the provider's latest report, and the history length it covered.
    usage_mark: Option<(u64, usize)>,
    /// Automatic compression is off after a snapshot that would not have saved anything, until
    /// the user forces a compression.
    auto_compress: bool,
    /// Whether this turn already compressed to recover from a context-window overflow.
    overflow_retried: bool,
    /// The warning about a repeated identical call, for the next reminder.
    repeat_note: Option<String>,
    /// The approval mode of the session's first request; the reminder mentions a change.
    initial_mode: Option<ApprovalMode>,
    /// For the first prompt after a restore: what the user put back.
    pending_notes: Vec<String>,
    /// Turns started, for turn ids the front end does not give.
    turn_count: u64,
    checkpoints: Vec<TurnCheckpoint>,
    prefix: PrefixTracker,
    /// Where the session is saved; shared with the parallel tool calls that report events.
    log: std::sync::Mutex<Option<LogState>>,
    /// History messages already saved.
    logged: usize,
}

/// What stays fixed in every request between compressions.
struct Frozen {
    system: String,
    tools: Vec<ToolDeclaration>,
    /// Estimated tokens of the system instruction and declarations.
    tokens: u64,
    /// Bytes of the two, serialised.
    bytes: usize,
}

impl Frozen {
    fn new(system: String, tools: Vec<ToolDeclaration>) -> Self {
        let bytes = serde_json::to_string(&(&system, &tools)).map_or(0, |text| text.len());
        let head = ChatRequest {
            system,
            tools,
            ..ChatRequest::default()
        };
        Frozen {
            tokens: tokens::estimate_request(&head),
            bytes,
            system: head.system,
            tools: head.tools,
        }
    }
}

fn declarations(tools: &[Arc<dyn Tool>]) -> Vec<ToolDeclaration> {
    tools
        .iter()
        .map(|tool| ToolDeclaration {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: tool.parameters(),
        })
        .collect()
}

/// The session file and the text streamed since the last saved event (text is saved in one
/// event per stretch, not per chunk).
struct LogState {
    log: SessionLog,
    turn_id: String,
    text: String,
}

/// How much of each request repeats the previous one, measured on Tandem's own serialisation
/// of the request (system, tools, messages). Logged per request; a provider's prompt cache
/// only pays off when this stays high.
#[derive(Default)]
struct PrefixTracker {
    /// Serialised size of each history message, computed once (history is append-only
    /// between compressions).
    lengths: Vec<usize>,
    /// Bumped whenever the history is replaced.
    generation: u64,
    previous: Option<PreviousRequest>,
    /// The latest measure: shared leading bytes, and the request's size.
    measured: (usize, usize),
}

struct PreviousRequest {
    generation: u64,
    head: usize,
    /// Messages it had, and its last one serialised (reminder included).
    messages: usize,
    last: String,
}

/// One prompt from the user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Context the front end attaches (a selection, a file, a diagnostic).
    pub context: Vec<Attachment>,
    /// What the editor shows now; `None` from front ends without an editor.
    pub ide: Option<IdeState>,
    /// The front end's id for the turn (checkpoints and saved sessions name turns by it); the
    /// session numbers turns itself when it is `None`.
    pub turn_id: Option<String>,
}

impl Prompt {
    pub fn text(text: impl Into<String>) -> Self {
        Prompt {
            text: text.into(),
            ..Prompt::default()
        }
    }
}

/// How a turn ended, with what to tell the user.
struct Stop(StopReason, Option<String>);

impl Session {
    pub fn new(
        model: Model,
        tools: Vec<Arc<dyn Tool>>,
        ctx: ToolContext,
        config: AgentConfig,
    ) -> Self {
        Session {
            model,
            tools,
            ctx,
            config,
            history: Vec::new(),
            session_allow: Vec::new(),
            last_call: None,
            ide: IdeContext::default(),
            repo_map: None,
            frozen: None,
            usage_mark: None,
            auto_compress: true,
            overflow_retried: false,
            repeat_note: None,
            initial_mode: None,
            pending_notes: Vec::new(),
            turn_count: 0,
            checkpoints: Vec::new(),
            prefix: PrefixTracker::default(),
            log: std::sync::Mutex::new(None),
            logged: 0,
        }
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The system instruction and tool declarations every request of this history starts
    /// with, fixed on first use.
    fn frozen(&mut self) -> &Frozen {
        let (config, tools) = (&self.config, &self.tools);
        self.frozen
            .get_or_insert_with(|| Frozen::new(config.system_prompt.clone(), declarations(tools)))
    }

    /// Uses `model` from the next request on (the user changed settings).
    pub fn set_model(&mut self, model: Model) {
        self.model = model;
    }

    /// Uses `config` from the next turn on. The environment is only sent on a session's first
    /// prompt, so changing it later has no effect.
    pub fn set_config(&mut self, config: AgentConfig) {
        self.config = config;
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Reads and writes through `editor` from the next tool call on (inline chat scopes a turn's
    /// writes; the language server swaps in a reconfigured editor).
    pub fn set_editor(&mut self, editor: Arc<dyn crate::editor::Editor>) {
        self.ctx.editor = editor;
    }

    pub fn tool_context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Replaces the conversation (after compression, or to start over). The model no longer
    /// has what it was told about the editor, so the next prompt tells it all again; the
    /// request prefix starts over, so the system instruction and tools may be taken afresh.
    pub fn replace_history(&mut self, history: Vec<Message>) {
        self.history = history;
        self.ide.reset();
        self.frozen = None;
        self.usage_mark = None;
        self.prefix.generation += 1;
        self.prefix.lengths.clear();
        self.save_history();
    }

    /// Builds a session from a saved one (`SessionStore::open`): its history, checkpoints and
    /// turn count, appending to `log` from now on.
    pub fn resume(
        model: Model,
        tools: Vec<Arc<dyn Tool>>,
        ctx: ToolContext,
        config: AgentConfig,
        loaded: &LoadedSession,
        log: SessionLog,
    ) -> Self {
        let mut session = Session::new(model, tools, ctx, config);
        session.history = loaded.history.clone();
        session.logged = session.history.len();
        session.checkpoints = loaded.checkpoints.clone();
        session.turn_count = loaded.started_turns.max(loaded.turns.len()) as u64;
        session.attach_log(log);
        session
    }

    /// Appends the session to `log` from now on (a new session's file, from
    /// `SessionStore::create`).
    pub fn set_log(&mut self, log: SessionLog) {
        self.attach_log(log);
        if !self.history.is_empty() {
            self.save_history();
        }
    }

    /// Saves to `log` from now on. The folder where compression keeps the tool outputs it takes
    /// out of the history joins the workspace, so that the model can read them back.
    fn attach_log(&mut self, log: SessionLog) {
        let outputs = log.outputs_dir();
        // The folder is made on first use; its parent exists, so canonicalise that.
        let outputs = match (outputs.parent(), outputs.file_name()) {
            (Some(parent), Some(name)) => std::fs::canonicalize(parent)
                .map_or_else(|_| outputs.clone(), |parent| parent.join(name)),
            _ => outputs,
        };
        self.ctx.workspace = Arc::new(self.ctx.workspace.with_extra(outputs));
        *lock(&self.log) = Some(LogState {
            log,
            turn_id: String::new(),
            text: String::new(),
        });
    }

    /// The saved session's id, when the session is saved.
    pub fn log_id(&self) -> Option<String> {
        lock(&self.log)
            .as_ref()
            .map(|state| state.log.id().to_owned())
    }

    /// The checkpoints of the turns that changed files, oldest first.
    pub fn checkpoints(&self) -> &[TurnCheckpoint] {
        &self.checkpoints
    }

    /// Tokens the history takes now: the provider's latest count plus an estimate of what was
    /// added since, or (with no count yet) an estimate of the whole request. `true` when it is
    /// all estimated.
    pub fn context_tokens(&self) -> (u64, bool) {
        match self.usage_mark {
            Some((tokens, covered)) if covered <= self.history.len() => (
                tokens + tokens::estimate_history(&self.history[covered..]),
                false,
            ),
            _ => {
                let head = match &self.frozen {
                    Some(frozen) => frozen.tokens,
                    None => {
                        Frozen::new(self.config.system_prompt.clone(), declarations(&self.tools))
                            .tokens
                    }
                };
                (head + tokens::estimate_history(&self.history), true)
            }
        }
    }

    /// The model's context window: the `context.contextWindow` setting, else the model's.
    pub fn context_window(&self) -> u64 {
        self.config
            .context
            .context_window
            .unwrap_or(self.model.config().context_window)
    }

    /// Compresses the history now, whatever its size (`/compress`, `tandem/compress`); sends
    /// and returns the report. Re-enables automatic compression after an inflated attempt.
    pub async fn compress(&mut self, io: &mut TurnIo<'_>) -> CompressionReport {
        self.auto_compress = true;
        self.compress_history(io).await
    }

    /// Puts back the files changed by turn `turn_id` (the latest turn that changed files when
    /// `None`) and by every later turn, as they were before it (`/restore`, `tandem/restore`);
    /// sends and returns the report.
    pub async fn restore(&mut self, turn_id: Option<&str>, io: &mut TurnIo<'_>) -> RestoreReport {
        let start = match turn_id {
            Some(id) => self.checkpoints.iter().rposition(|c| c.turn_id == id),
            None => self.checkpoints.len().checked_sub(1),
        };
        let report = match start {
            Some(start) => {
                let report = crate::checkpoint::restore(
                    self.ctx.editor.as_ref(),
                    &self.checkpoints[start..],
                )
                .await;
                if report.skipped.is_empty() {
                    self.checkpoints.truncate(start);
                }
                if !report.restored.is_empty() {
                    let files: Vec<String> = report
                        .restored
                        .iter()
                        .map(|path| self.ctx.workspace.display(path))
                        .collect();
                    self.pending_notes.push(format!(
                        "<system-reminder>\nThe user restored these files to how they were \
                         before turn {} (undoing your changes to them); read them again before \
                         you rely on them: {}\n</system-reminder>",
                        report.turn_id.as_deref().unwrap_or("?"),
                        files.join(", ")
                    ));
                }
                report
            }
            None => RestoreReport::default(),
        };
        self.emit(io.events, Event::Restored(report.clone()));
        report
    }

    /// Answers one prompt. Returns how the turn ended (also sent as `TurnFinished`). The prompt
    /// `/compress` compresses the history and `/restore [turn id]` restores a checkpoint
    /// instead of asking the model.
    pub async fn run_turn(&mut self, prompt: Prompt, io: &mut TurnIo<'_>) -> StopReason {
        self.turn_count += 1;
        let turn_id = prompt
            .turn_id
            .clone()
            .unwrap_or_else(|| format!("t{}", self.turn_count));
        self.save(&Record::TurnStarted {
            turn_id: turn_id.clone(),
            text: prompt.text.clone(),
            at_ms: now_ms(),
        });
        if let Some(state) = lock(&self.log).as_mut() {
            state.turn_id = turn_id.clone();
            state.text.clear();
        }
        self.overflow_retried = false;
        let Stop(reason, message) = match SlashCommand::parse(&prompt.text) {
            Some(command) => self.run_command(command, io).await,
            None => self.prompt_turn(prompt, &turn_id, io).await,
        };
        self.save_new_messages();
        self.save(&Record::TurnFinished {
            turn_id,
            stop_reason: reason,
            at_ms: now_ms(),
        });
        let _ = io.events.send(Event::TurnFinished {
            stop_reason: reason,
            message,
        });
        reason
    }

    async fn run_command(&mut self, command: SlashCommand, io: &mut TurnIo<'_>) -> Stop {
        let summary = match command {
            SlashCommand::Compress => {
                let report = self.compress(io).await;
                match report.status {
                    CompressionStatus::Compressed => format!(
                        "Compressed the conversation from about {} to about {} tokens.",
                        report.tokens_before, report.tokens_after
                    ),
                    _ => format!(
                        "The conversation was not compressed: {}.",
                        report.message.as_deref().unwrap_or("nothing to compress")
                    ),
                }
            }
            SlashCommand::Restore(turn_id) => {
                let with_changes: Vec<String> =
                    self.checkpoints.iter().map(|c| c.turn_id.clone()).collect();
                let report = self.restore(turn_id.as_deref(), io).await;
                match (&turn_id, &report.turn_id) {
                    (Some(asked), None) if !with_changes.is_empty() => format!(
                        "Turn {asked} has no changes to restore; the turns that do: {}.",
                        with_changes.join(", ")
                    ),
                    _ => restore_summary(&report, &|path| self.ctx.workspace.display(path)),
                }
            }
        };
        self.emit(io.events, Event::TextChunk { text: summary });
        self.flush_saved_text();
        Stop(StopReason::EndTurn, None)
    }

    async fn prompt_turn(&mut self, prompt: Prompt, turn_id: &str, io: &mut TurnIo<'_>) -> Stop {
        // A model whose window is its server's to say (Ollama) is asked now, so that the
        // compression check below uses the window the model really runs with (a resumed
        // session's history may not fit it). A failure is the first request's to report.
        tokio::select! {
            _ = self.model.resolve_context_window() => {}
            _ = io.cancel.cancelled() => {}
        }
        // Compressing before the prompt is added means the prompt, sent after it, carries the
        // whole IDE context again.
        self.compress_if_full(io).await;
        // What repo maps (the first prompt's, the repo_map tool's) rank toward.
        if let Some(state) = &prompt.ide {
            let active = state.active.as_ref().map(|active| active.path.clone());
            self.ctx
                .session
                .set_editor_focus(active, state.open.clone());
        }
        self.ctx
            .session
            .set_mentioned(crate::symbols::identifiers_in(&prompt.text));
        let mut parts = Vec::new();
        if self.history.is_empty() {
            parts.extend(self.environment_parts(&io.cancel).await);
        }
        parts.extend(self.pending_notes.drain(..).map(|text| Part::Text { text }));
        if let Some(state) = &prompt.ide {
            let workspace = self.ctx.workspace.clone();
            if let Some(text) = self.ide.render(state, &|path| workspace.display(path)) {
                parts.push(Part::Text { text });
            }
        }
        let mut text = prompt.text;
        for attachment in prompt.context {
            if let Some(shown) = &attachment.shown {
                self.ctx.session.mark_shown(
                    &shown.path,
                    shown.content.as_bytes(),
                    shown.version,
                    shown.lines,
                );
            }
            text.push_str(&format!(
                "\n\n<context label=\"{}\">\n{}\n</context>",
                attachment.label, attachment.text
            ));
        }
        parts.push(Part::Text { text });
        // After a turn that ended on a failed model request the last message is the user's;
        // the new prompt joins it so that roles keep alternating.
        let last = self.history.len().checked_sub(1);
        match self.history.last_mut() {
            Some(message) if message.role == Role::User => {
                message.parts.extend(parts);
                if let Some(last) = last {
                    self.prefix.lengths.truncate(last);
                    if last < self.logged {
                        self.save_history();
                    }
                }
            }
            _ => self.history.push(Message {
                role: Role::User,
                parts,
            }),
        }
        self.save_new_messages();
        self.last_call = None;
        self.repeat_note = None;

        // Every write of the turn goes through a recorder, so `/restore` can take it back.
        let recorder = Arc::new(CheckpointEditor::new(self.ctx.editor.clone()));
        let editor = std::mem::replace(&mut self.ctx.editor, recorder.clone());
        let stop = self.turn(io).await;
        self.ctx.editor = editor;
        let files = recorder.files();
        if !files.is_empty() {
            let checkpoint = TurnCheckpoint {
                turn_id: turn_id.to_owned(),
                files,
            };
            self.save(&Record::Checkpoint(checkpoint.clone()));
            self.checkpoints.push(checkpoint);
        }
        stop
    }

    /// The environment context and repo map that open a history.
    async fn environment_parts(&mut self, cancel: &CancellationToken) -> Vec<Part> {
        let mut parts = Vec::new();
        if let Some(environment) = self.config.environment.clone() {
            parts.push(Part::Text { text: environment });
            if let Some(text) = self.first_repo_map(cancel).await {
                parts.push(Part::Text { text });
            }
        }
        parts
    }

    /// Compresses when the last request filled more than the threshold of the window (and
    /// automatic compression is on).
    async fn compress_if_full(&mut self, io: &mut TurnIo<'_>) {
        if !self.auto_compress || self.history.is_empty() {
            return;
        }
        let (tokens, _) = self.context_tokens();
        let limit = self.config.context.compression_threshold * self.context_window() as f64;
        if tokens as f64 > limit {
            self.compress_history(io).await;
        }
    }

    /// Replaces the older part of the history with the model's state snapshot; see
    /// `compress.rs`. Sends the report as an event.
    async fn compress_history(&mut self, io: &mut TurnIo<'_>) -> CompressionReport {
        let before = tokens::estimate_history(&self.history);
        let report = |status, after, message: Option<String>| CompressionReport {
            status,
            tokens_before: before,
            tokens_after: after,
            message,
        };
        let split =
            crate::compress::split_point(&self.history, self.config.context.preserve_fraction);
        let report = if split == 0 {
            report(
                CompressionStatus::Skipped,
                before,
                Some("there is no earlier part of the conversation to summarise yet".into()),
            )
        } else {
            let frozen = self.frozen();
            let (system, tools) = (frozen.system.clone(), frozen.tools.clone());
            let request = crate::compress::snapshot_request(&system, tools, &self.history[..split]);
            let answer = self.model.complete(request, io.cancel.clone()).await;
            match answer
                .map_err(|error| format!("the summary request failed: {error}"))
                .and_then(|response| crate::compress::parse_snapshot(&response))
            {
                Err(message) => report(CompressionStatus::Failed, before, Some(message)),
                Ok(snapshot) => {
                    let mut history =
                        crate::compress::rebuild(&snapshot, self.history[split..].to_vec());
                    let environment = self.environment_parts(&io.cancel).await;
                    if let Some(first) = history.first_mut() {
                        first.parts.splice(0..0, environment);
                    }
                    let outputs = lock(&self.log)
                        .as_ref()
                        .map(|state| state.log.outputs_dir());
                    let mut save = |result: &ToolResult| save_output(outputs.as_deref(), result);
                    crate::compress::bound_outputs(
                        &mut history,
                        self.config.context.kept_output_tokens,
                        self.config.context.output_note_over_bytes,
                        &mut save,
                    );
                    let after = tokens::estimate_history(&history);
                    if after >= before {
                        self.auto_compress = false;
                        report(
                            CompressionStatus::Inflated,
                            before,
                            Some(format!(
                                "the summary (about {after} tokens) was not smaller than what it \
                                 summarised; it was discarded, and automatic compression is off \
                                 until you run /compress"
                            )),
                        )
                    } else {
                        self.replace_history(history);
                        report(CompressionStatus::Compressed, after, None)
                    }
                }
            }
        };
        if let Some(message) = &report.message {
            tracing::info!("compression {:?}: {message}", report.status);
        }
        self.emit(io.events, Event::Compression(report.clone()));
        report
    }

    /// The `<repo_map>` block for the environment context, computed on first use and the same
    /// for the rest of the session; `None` when the settings leave it out, the workspace has
    /// nothing to map, the turn is cancelled first, or indexing fails (logged: the prompt goes
    /// on without a map).
    async fn first_repo_map(&mut self, cancel: &CancellationToken) -> Option<String> {
        if let Some(map) = &self.repo_map {
            return map.clone();
        }
        let tokens = self.ctx.syntax.repo_map_tokens;
        if tokens == 0 {
            self.repo_map = Some(None);
            return None;
        }
        let ctx = self.ctx.clone();
        let build = async move {
            let deadline = std::time::Instant::now() + REPO_MAP_TIME_LIMIT;
            crate::symbols::refresh_index(&ctx, Some(deadline)).await?;
            let request = ctx.session.map_request(tokens);
            let (index, workspace) = (ctx.index.clone(), ctx.workspace.clone());
            tokio::task::spawn_blocking(move || {
                index.repo_map(&request, &|path| workspace.display(path))
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("the repo map task failed: {error}")))
        };
        let built = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            built = build => built,
        };
        let map = match built {
            Ok(map) if !map.text.trim().is_empty() => Some(format!(
                "<repo_map>\nThe workspace's most relevant definitions, ranked by how the code \
                 uses them (a map, not whole files):\n{}\n</repo_map>",
                map.text.trim_end()
            )),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!("the first prompt goes without a repo map: {error}");
                None
            }
        };
        self.repo_map = Some(map.clone());
        map
    }

    /// The block attached to the last message of a request (and never stored): the plan,
    /// files that changed under the model, a repeated call, a changed approval mode. `None`
    /// when there is nothing to say.
    fn reminder(&mut self) -> Option<String> {
        let mut lines = Vec::new();
        let todos = self.ctx.session.todos();
        let unfinished = todos.iter().any(|todo| {
            matches!(
                todo.status,
                crate::tools::TodoStatus::Pending | crate::tools::TodoStatus::InProgress
            )
        });
        if unfinished {
            lines.push(format!(
                "Your todo list (keep it current with write_todos):\n{}",
                crate::tools::write_todos::render(&todos)
            ));
        }
        let changed = self.ctx.session.changed_files(self.ctx.editor.as_ref());
        if !changed.is_empty() {
            let mut names: Vec<String> = changed
                .iter()
                .take(REMINDER_MAX_FILES)
                .map(|path| self.ctx.workspace.display(path))
                .collect();
            if changed.len() > REMINDER_MAX_FILES {
                names.push(format!("and {} more", changed.len() - REMINDER_MAX_FILES));
            }
            lines.push(format!(
                "These files changed since you last read them (the user or a command edited \
                 them); what you saw of them is out of date, so read them again before you rely \
                 on or edit them: {}",
                names.join(", ")
            ));
        }
        if let Some(note) = &self.repeat_note {
            lines.push(note.clone());
        }
        let mode = self.config.approval.mode;
        let initial = *self.initial_mode.get_or_insert(mode);
        if mode != initial || mode != ApprovalMode::Default {
            lines.push(match mode {
                ApprovalMode::Default => {
                    "Approval mode: default (the user approves each edit and shell command)."
                }
                ApprovalMode::AutoEdit => {
                    "Approval mode: auto_edit (edits run without asking; shell commands need approval)."
                }
                ApprovalMode::Yolo => "Approval mode: yolo (every tool call runs without asking).",
            }
            .to_owned());
        }
        if lines.is_empty() {
            return None;
        }
        Some(format!(
            "<system-reminder>\n{}\n</system-reminder>",
            lines.join("\n")
        ))
    }

    /// The next request: the frozen prefix, the history, and the reminder on the last
    /// message. Also measures how much of it repeats the previous request (logged).
    pub fn next_request(&mut self) -> ChatRequest {
        let frozen = self.frozen();
        let (system, tools, head) = (frozen.system.clone(), frozen.tools.clone(), frozen.bytes);
        let reminder = self.reminder();
        let mut messages = self.history.clone();
        let mut breakpoints = vec![CacheBreakpoint::System];
        match (&reminder, messages.last_mut()) {
            (Some(text), Some(last)) if last.role == Role::User => {
                last.parts.push(Part::Text { text: text.clone() });
                if let Some(before) = messages.len().checked_sub(2) {
                    breakpoints.push(CacheBreakpoint::Message(before));
                }
            }
            _ => {
                if let Some(last) = messages.len().checked_sub(1) {
                    breakpoints.push(CacheBreakpoint::Message(last));
                }
            }
        }
        self.measure_prefix(head, &messages);
        ChatRequest {
            system,
            messages,
            tools,
            cache_breakpoints: breakpoints,
            ..ChatRequest::default()
        }
    }

    /// Logs how many leading bytes `messages` (with the frozen head) share with the previous
    /// request. Each history message is serialised once; only the previous request's last
    /// message is compared byte by byte.
    fn measure_prefix(&mut self, head: usize, messages: &[Message]) {
        let size = |message: &Message| serde_json::to_string(message).map_or(0, |text| text.len());
        let lengths = &mut self.prefix.lengths;
        lengths.truncate(self.history.len());
        for message in &self.history[lengths.len()..] {
            lengths.push(size(message));
        }
        let last = messages
            .last()
            .and_then(|message| serde_json::to_string(message).ok())
            .unwrap_or_default();
        let total = head
            + lengths[..messages.len().saturating_sub(1)]
                .iter()
                .sum::<usize>()
            + last.len();
        let shared = match &self.prefix.previous {
            Some(previous) if previous.generation == self.prefix.generation => {
                let whole = previous.messages.saturating_sub(1).min(messages.len());
                let compared = messages
                    .get(whole)
                    .and_then(|message| serde_json::to_string(message).ok())
                    .unwrap_or_default();
                let common = previous
                    .last
                    .bytes()
                    .zip(compared.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                previous.head.min(head) + lengths[..whole].iter().sum::<usize>() + common
            }
            _ => 0,
        };
        tracing::debug!(
            shared,
            total,
            "request shares {shared} of {total} leading bytes with the previous one"
        );
        self.prefix.measured = (shared, total);
        self.prefix.previous = Some(PreviousRequest {
            generation: self.prefix.generation,
            head,
            messages: messages.len(),
            last,
        });
    }

    async fn turn(&mut self, io: &mut TurnIo<'_>) -> Stop {
        for request in 0..self.config.max_turns {
            if request > 0 {
                self.compress_if_full(io).await;
            }
            let (response, stop) = self.model_request(io).await;
            let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
            if !response.message.parts.is_empty() {
                self.history.push(response.message);
                if let Some(usage) = response.usage {
                    self.usage_mark =
                        Some((usage.input_tokens + usage.output_tokens, self.history.len()));
                }
            }
            self.save_new_messages();
            if let Some(stop) = stop {
                // The model was cut off: its calls (if any) are answered as not run.
                self.answer_unrun(&calls, "not run: the turn ended before it could run");
                return stop;
            }
            if calls.is_empty() {
                return Stop(StopReason::EndTurn, None);
            }
            if let Some(stop) = self.detect_repeated_call(&calls) {
                self.answer_unrun(
                    &calls,
                    "not run: you repeated the same call; try something different",
                );
                return stop;
            }
            let (results, stop) = self.run_calls(&calls, io).await;
            self.history.push(Message {
                role: Role::User,
                parts: results.into_iter().map(Part::ToolResult).collect(),
            });
            self.save_new_messages();
            if let Some(stop) = stop {
                return stop;
            }
        }
        Stop(
            StopReason::MaxTurns,
            Some(format!(
                "stopped after {} model requests (the `maxTurns` setting)",
                self.config.max_turns
            )),
        )
    }

    /// One model request, streamed to the front end. Returns the (possibly partial) response
    /// and, when the turn must end, why. A request the provider refuses as too long for the
    /// context window is retried once after a compression.
    async fn model_request(&mut self, io: &mut TurnIo<'_>) -> (Response, Option<Stop>) {
        loop {
            let request = self.next_request();
            match self.stream_response(request, io).await {
                Streamed::Done(response, stop) => return (response, stop),
                Streamed::Overflow(error) => {
                    if !self.overflow_retried {
                        self.overflow_retried = true;
                        let report = self.compress(io).await;
                        if report.status == CompressionStatus::Compressed {
                            continue;
                        }
                    }
                    return (
                        Response::default(),
                        Some(Stop(
                            StopReason::Error,
                            Some(format!(
                                "{error}; compressing the conversation did not make it fit. \
                                 Start a new session, or use a model with a larger context window"
                            )),
                        )),
                    );
                }
            }
        }
    }

    async fn stream_response(&mut self, request: ChatRequest, io: &mut TurnIo<'_>) -> Streamed {
        let mut stream = self.model.stream(request, io.cancel.clone());
        let mut response = Response::default();
        let mut repetition = TextLoopDetector::default();
        // Reasoning can loop as well as the answer, and a model stuck there streams it forever.
        let mut thought_repetition = TextLoopDetector::default();
        let window = self.context_window();
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(ProviderError::Cancelled) => {
                    return Streamed::Done(response, Some(Stop(StopReason::Cancelled, None)));
                }
                Err(error @ ProviderError::ContextWindowExceeded { .. }) => {
                    return Streamed::Overflow(error.to_string());
                }
                // A runaway response (thinking or repeating without end): what it streamed is
                // too large to keep, and not an answer.
                Err(error @ ProviderError::ResponseLimitExceeded { .. }) => {
                    return Streamed::Done(
                        Response::default(),
                        Some(Stop(StopReason::ResponseLimit, Some(error.to_string()))),
                    );
                }
                Err(error) => {
                    // The partial answer is dropped: it may end mid-sentence or mid-call.
                    return Streamed::Done(
                        Response::default(),
                        Some(Stop(StopReason::Error, Some(error.to_string()))),
                    );
                }
            };
            response.push(&event);
            match event {
                StreamEvent::TextDelta { text } => {
                    let stuck = repetition.push(&text);
                    self.emit(io.events, Event::TextChunk { text });
                    if stuck {
                        return Streamed::Done(response, Some(repeating("text")));
                    }
                }
                StreamEvent::ThoughtDelta { text } => {
                    let stuck = thought_repetition.push(&text);
                    self.emit(io.events, Event::ThoughtChunk { text });
                    if stuck {
                        return Streamed::Done(response, Some(repeating("reasoning")));
                    }
                }
                StreamEvent::Usage(usage) => self.emit(
                    io.events,
                    Event::Usage(UsageReport {
                        usage,
                        context_tokens: usage.input_tokens + usage.output_tokens,
                        context_window: window,
                        estimated: false,
                    }),
                ),
                StreamEvent::Retrying {
                    attempt,
                    delay,
                    error,
                } => {
                    repetition = TextLoopDetector::default();
                    thought_repetition = TextLoopDetector::default();
                    self.emit(
                        io.events,
                        Event::Retrying {
                            attempt,
                            delay_ms: delay.as_millis() as u64,
                            error,
                        },
                    );
                }
                _ => {}
            }
        }
        if response.usage.is_none() {
            // No count from the provider: the figure is Tandem's estimate, history included.
            let (tokens, _) = self.context_tokens();
            let answer = tokens::estimate_message(&response.message);
            self.emit(
                io.events,
                Event::Usage(UsageReport {
                    usage: tandem_providers::Usage::default(),
                    context_tokens: tokens + answer,
                    context_window: window,
                    estimated: true,
                }),
            );
        }
        Streamed::Done(response, None)
    }

    /// Sends an event to the front end and saves what a resumed session replays.
    fn emit(&self, events: &mpsc::UnboundedSender<Event>, event: Event) {
        self.save_event(&event);
        // A front end that stopped listening loses events, not the turn.
        let _ = events.send(event);
    }

    /// Saves an event for replay: text is gathered into one event per stretch, tool calls are
    /// saved once they end, and streaming noise (thoughts, retries, usage) is not saved.
    fn save_event(&self, event: &Event) {
        let turn_id = {
            let mut guard = lock(&self.log);
            let Some(state) = guard.as_mut() else {
                return;
            };
            match event {
                Event::TextChunk { text } => {
                    state.text.push_str(text);
                    return;
                }
                Event::Retrying { .. } => {
                    state.text.clear();
                    return;
                }
                Event::ThoughtChunk { .. } | Event::Usage(_) => return,
                Event::ToolCall(update)
                    if !matches!(
                        update.status,
                        ToolCallStatus::Success | ToolCallStatus::Error | ToolCallStatus::Cancelled
                    ) =>
                {
                    return
                }
                _ => state.turn_id.clone(),
            }
        };
        self.save(&Record::Event {
            turn_id,
            event: event.clone(),
        });
    }

    /// Saves the text streamed since the last saved event.
    fn flush_saved_text(&self) {
        let mut guard = lock(&self.log);
        let Some(state) = guard.as_mut() else {
            return;
        };
        if state.text.is_empty() {
            return;
        }
        let record = Record::Event {
            turn_id: state.turn_id.clone(),
            event: Event::TextChunk {
                text: std::mem::take(&mut state.text),
            },
        };
        append_or_stop(&mut guard, &record);
    }

    fn save(&self, record: &Record) {
        self.flush_saved_text();
        append_or_stop(&mut lock(&self.log), record);
    }

    /// Saves the messages added to the history since the last save.
    fn save_new_messages(&mut self) {
        let start = self.logged.min(self.history.len());
        if lock(&self.log).is_some() {
            for message in &self.history[start..] {
                self.save(&Record::Message {
                    message: message.clone(),
                });
            }
        }
        self.logged = self.history.len();
    }

    /// Saves the whole history (it was replaced, or a saved message changed).
    fn save_history(&mut self) {
        if lock(&self.log).is_some() {
            self.save(&Record::History {
                messages: self.history.clone(),
            });
        }
        self.logged = self.history.len();
    }

    fn answer_unrun(&mut self, calls: &[ToolCall], why: &str) {
        if calls.is_empty() {
            return;
        }
        let parts = calls
            .iter()
            .map(|call| {
                Part::ToolResult(ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: why.to_owned(),
                    is_error: true,
                })
            })
            .collect();
        self.history.push(Message {
            role: Role::User,
            parts,
        });
    }

    fn detect_repeated_call(&mut self, calls: &[ToolCall]) -> Option<Stop> {
        for call in calls {
            let key = format!("{}\u{0}{}", call.name, call.arguments);
            let count = match &self.last_call {
                Some((last, count)) if *last == key => count + 1,
                _ => 1,
            };
            self.last_call = Some((key, count));
            self.repeat_note = (count >= 2).then(|| {
                format!(
                    "You have called {} with the same arguments {count} times in a row; the \
                     result will not change. Use what you have or try something different \
                     (the turn stops at {REPEATED_CALL_LIMIT}).",
                    call.name
                )
            });
            if count >= REPEATED_CALL_LIMIT {
                return Some(Stop(
                    StopReason::LoopDetected,
                    Some(format!(
                        "the model called {} with the same arguments {count} times in a row; the turn was stopped",
                        call.name
                    )),
                ));
            }
        }
        None
    }

    /// Runs the calls: each is validated and scheduled first; then consecutive read-only calls
    /// run together and each mutating call on its own, in the order given, after the approval
    /// policy allows it (deny rules apply to every tool). Every call gets a result, in order.
    async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        io: &mut TurnIo<'_>,
    ) -> (Vec<ToolResult>, Option<Stop>) {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for (slot, call) in results.iter_mut().zip(calls) {
            self.update(io.events, call, ToolCallStatus::Validating, None);
            match self.validate(call) {
                Ok(_) => self.update(io.events, call, ToolCallStatus::Scheduled, None),
                Err(message) => {
                    self.update(
                        io.events,
                        call,
                        ToolCallStatus::Error,
                        Some(message.clone()),
                    );
                    *slot = Some(Outcome::error(call, message).result);
                }
            }
        }
        let mut stop = None;
        let mut index = 0;
        while index < calls.len() {
            if io.cancel.is_cancelled() || stop.is_some() {
                break;
            }
            let parallel = self.is_read_only(&calls[index]);
            let end = if parallel {
                index
                    + calls[index..]
                        .iter()
                        .take_while(|call| self.is_read_only(call))
                        .count()
            } else {
                index + 1
            };
            let mut to_run = Vec::new();
            for offset in index..end {
                if results[offset].is_some() {
                    continue;
                }
                let call = &calls[offset];
                match self.approve(call, io).await {
                    Approval::Run => to_run.push(offset),
                    Approval::Refused(message) => {
                        self.update(
                            io.events,
                            call,
                            ToolCallStatus::Error,
                            Some(message.clone()),
                        );
                        results[offset] = Some(Outcome::error(call, message).result);
                    }
                    Approval::Cancelled => break,
                }
            }
            let outcomes = futures::future::join_all(
                to_run
                    .iter()
                    .map(|&offset| self.run_call(&calls[offset], io.events, io.cancel.clone())),
            )
            .await;
            for (offset, outcome) in to_run.into_iter().zip(outcomes) {
                if outcome.fatal && stop.is_none() {
                    stop = Some(Stop(
                        StopReason::Error,
                        Some(outcome.result.content.clone()),
                    ));
                }
                results[offset] = Some(outcome.result);
            }
            index = end;
        }
        let cancelled = io.cancel.is_cancelled();
        let results = results
            .into_iter()
            .zip(calls)
            .map(|(result, call)| {
                result.unwrap_or_else(|| {
                    let why = if cancelled {
                        "cancelled by the user before it ran"
                    } else {
                        "not run: the turn ended"
                    };
                    self.update(
                        io.events,
                        call,
                        ToolCallStatus::Cancelled,
                        Some(why.to_owned()),
                    );
                    Outcome::error(call, why.to_owned()).result
                })
            })
            .collect();
        if cancelled && stop.is_none() {
            stop = Some(Stop(StopReason::Cancelled, None));
        }
        (results, stop)
    }

    fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    fn is_read_only(&self, call: &ToolCall) -> bool {
        self.tool(&call.name).is_some_and(|tool| !tool.mutates())
    }

    fn update(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        status: ToolCallStatus,
        output: Option<String>,
    ) {
        self.send_update(events, call, status, output, ToolOutput::default(), None);
    }

    /// `approval` is what an approval prompt shows, and why the call is asked about whatever the
    /// settings say (`ToolCallUpdate::details`, `approval_reason`).
    fn send_update(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        status: ToolCallStatus,
        output: Option<String>,
        details: ToolOutput,
        approval: Option<(String, Option<String>)>,
    ) {
        let (approval, approval_reason) = approval.unzip();
        let (title, kind) = match self.tool(&call.name) {
            Some(tool) => (tool.title(&call.arguments), tool.kind()),
            None => (call.name.clone(), crate::tools::ToolKind::Other),
        };
        // Titles reach terminals (`tandem ask`) and menus: the model's text must not carry an
        // escape sequence or a padding run into them.
        let title = shown::visible(&title);
        self.emit(
            events,
            Event::ToolCall(ToolCallUpdate {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                title,
                kind,
                status,
                raw_input: call.arguments.clone(),
                details: approval,
                approval_reason: approval_reason.flatten(),
                locations: details.locations,
                diff: details.diff,
                output,
            }),
        );
    }

    /// Checks the call against the tool's schema. `Err` is the message for the model.
    fn validate(&self, call: &ToolCall) -> Result<&Arc<dyn Tool>, String> {
        let Some(tool) = self.tool(&call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|tool| tool.name()).collect();
            return Err(format!(
                "there is no tool named `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            ));
        };
        crate::tools::check_args(tool.as_ref(), &call.arguments)?;
        Ok(tool)
    }

    /// What the approval policy (and the user, when it asks) says about a validated call.
    async fn approve(&mut self, call: &ToolCall, io: &mut TurnIo<'_>) -> Approval {
        let Some(tool) = self.tool(&call.name).cloned() else {
            return Approval::Refused(format!("there is no tool named `{}`", call.name));
        };
        let mut policy = self.config.approval.clone();
        policy.allow.extend(self.session_allow.iter().cloned());
        let paths = PathCheck::new(&self.ctx.workspace, &self.config.protected, &call.arguments);
        let protected = tool
            .paths_written(&call.arguments)
            .iter()
            .find_map(|path| paths.protected(path));
        let verdict = policy.verdict(&Call {
            tool: tool.name(),
            kind: tool.kind(),
            mutates: tool.mutates(),
            args: &call.arguments,
            protected,
            refuses_path: &|path| paths.out_of_reach(path),
        });
        match verdict {
            Verdict::Allow => Approval::Run,
            Verdict::Deny(why) => Approval::Refused(format!(
                "The user's settings refuse this call ({why}). Do not retry it; find another way or ask the user."
            )),
            Verdict::Ask { why } => {
                // The user approves what they can see: an edit's prompt carries its diff.
                let preview = tokio::select! {
                    biased;
                    () = io.cancel.cancelled() => return Approval::Cancelled,
                    preview = AssertUnwindSafe(tool.preview(&call.arguments, &self.ctx))
                        .catch_unwind() => preview.unwrap_or_else(|_| {
                            tracing::error!(tool = call.name, "preview panicked; asking without it");
                            None
                        }),
                };
                let shown = match &preview {
                    Some(diff) => shown::diff(diff, &self.ctx.workspace.display(&diff.path)),
                    None => tool.approval_details(&call.arguments),
                };
                let details = match &why {
                    Some(why) => format!("Tandem asks whatever the settings say, because {why}.\n\n{shown}"),
                    None => shown,
                };
                let locations = preview
                    .iter()
                    .map(|diff| {
                        // The first line the change touches, so "follow the agent" shows it.
                        let line = diff.old_text.as_deref().map(|old| {
                            let breaks = old
                                .bytes()
                                .zip(diff.new_text.bytes())
                                .take_while(|(old, new)| old == new)
                                .filter(|(byte, _)| *byte == b'\n')
                                .count();
                            u32::try_from(breaks + 1).unwrap_or(u32::MAX)
                        });
                        Location { path: diff.path.clone(), line }
                    })
                    .collect();
                let output = ToolOutput {
                    text: String::new(),
                    locations,
                    diff: preview,
                };
                let status = ToolCallStatus::AwaitingApproval;
                self.send_update(io.events, call, status, None, output, Some((details, why)));
                loop {
                    let answer = tokio::select! {
                        biased;
                        () = io.cancel.cancelled() => return Approval::Cancelled,
                        answer = io.approvals.recv() => answer,
                    };
                    let Some((call_id, decision)) = answer else {
                        return Approval::Refused(
                            "Not run: this call needs the user's approval, and nobody can be asked (the \
                             front end is gone). Do not retry it."
                                .into(),
                        );
                    };
                    if call_id != call.id {
                        tracing::warn!(call_id, expected = call.id, "approval for a call that is not waiting");
                        continue;
                    }
                    return match decision {
                        ApprovalDecision::AllowOnce => Approval::Run,
                        ApprovalDecision::AllowAlways => {
                            self.session_allow.push(ApprovalPolicy::rule_for(tool.name(), &call.arguments));
                            Approval::Run
                        }
                        ApprovalDecision::Reject { feedback } => Approval::Refused(match feedback {
                            Some(feedback) if !feedback.trim().is_empty() => format!(
                                "The user rejected this call and said: {feedback}. Do not retry it as it was."
                            ),
                            _ => "The user rejected this call. Do not retry it; ask the user how to proceed or try something else.".to_owned(),
                        }),
                        ApprovalDecision::CannotAsk { reason } => Approval::Refused(format!(
                            "Not run: this call needs the user's approval, and {reason}. Do not retry it; \
                             tell the user what you wanted to run and why, so they can run it or allow it."
                        )),
                    };
                }
            }
        }
    }

    /// Runs one validated, approved call, reporting its lifecycle from `executing` on.
    async fn run_call(
        &self,
        call: &ToolCall,
        events: &mpsc::UnboundedSender<Event>,
        cancel: CancellationToken,
    ) -> Outcome {
        let Some(tool) = self.tool(&call.name).cloned() else {
            return Outcome::error(call, format!("there is no tool named `{}`", call.name));
        };
        self.update(events, call, ToolCallStatus::Executing, None);
        let ctx = ToolContext {
            cancel: cancel.clone(),
            ..self.ctx.clone()
        };
        let mut run =
            std::pin::pin!(AssertUnwindSafe(tool.run(call.arguments.clone(), &ctx)).catch_unwind());
        let finished = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            result = &mut run => Some(result),
        };
        let result = match finished {
            Some(result) => result,
            None => {
                // A tool that watches the token (the shell kills its process group) stops and
                // says what it got done; one that doesn't is dropped after the grace period.
                let message = match tokio::time::timeout(CANCEL_GRACE, run).await {
                    Ok(Ok(Err(ToolError::Respond(message)))) => message,
                    Ok(Ok(Ok(output))) => format!(
                        "cancelled by the user; it finished anyway with:\n{}",
                        output.text
                    ),
                    _ => "cancelled by the user while it ran".to_owned(),
                };
                self.update(
                    events,
                    call,
                    ToolCallStatus::Cancelled,
                    Some(message.clone()),
                );
                return Outcome::error(call, message);
            }
        };
        match result {
            Ok(Ok(output)) => {
                if call.name == "write_todos" {
                    self.emit(
                        events,
                        Event::Plan {
                            todos: self.ctx.session.todos(),
                        },
                    );
                }
                let text = output.text.clone();
                self.send_update(
                    events,
                    call,
                    ToolCallStatus::Success,
                    Some(text.clone()),
                    output,
                    None,
                );
                Outcome {
                    result: result_for(call, text, false),
                    fatal: false,
                }
            }
            Ok(Err(ToolError::Respond(message))) => {
                self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
                Outcome::error(call, message)
            }
            Ok(Err(error @ ToolError::Fatal(_))) => {
                let message = error.to_string();
                tracing::error!(tool = call.name, "{message}");
                self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
                Outcome {
                    result: result_for(call, message, true),
                    fatal: true,
                }
            }
            Err(panic) => {
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                tracing::error!(tool = call.name, "tool panicked: {detail}");
                let message = format!(
                    "the {} tool crashed ({detail}); this is a bug in Tandem, not in your call",
                    call.name
                );
                self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
                Outcome::error(call, message)
            }
        }
    }
}

/// How a streamed response ended.
enum Streamed {
    Done(Response, Option<Stop>),
    /// The provider said the request does not fit the context window.
    Overflow(String),
}

/// A prompt Tandem answers itself instead of asking the model.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SlashCommand {
    Compress,
    /// `/restore` with the turn to restore from, if given.
    Restore(Option<String>),
}

impl SlashCommand {
    fn parse(text: &str) -> Option<SlashCommand> {
        let mut words = text.split_whitespace();
        let command = match words.next()? {
            "/compress" => SlashCommand::Compress,
            "/restore" => SlashCommand::Restore(words.next().map(str::to_owned)),
            _ => return None,
        };
        // Anything more is not one of ours: it goes to the model as written.
        words.next().is_none().then_some(command)
    }
}

/// What `/restore` did, in a sentence or two for the user.
fn restore_summary(report: &RestoreReport, display: &dyn Fn(&std::path::Path) -> String) -> String {
    let Some(turn) = &report.turn_id else {
        return "There is nothing to restore: no turn of this session changed files.".to_owned();
    };
    let mut text = if report.restored.is_empty() {
        format!("Restored no files from before turn {turn}.")
    } else {
        let names: Vec<String> = report.restored.iter().map(|path| display(path)).collect();
        format!(
            "Restored as they were before turn {turn}: {}.",
            names.join(", ")
        )
    };
    for skipped in &report.skipped {
        text.push_str(&format!(
            "\nNot restored: {} ({}).",
            display(&skipped.path),
            skipped.reason
        ));
    }
    text
}

/// Saves a tool output compression takes out of the history; where, for the note that
/// replaces it. `None` when the session is not saved or the write fails.
fn save_output(dir: Option<&std::path::Path>, result: &ToolResult) -> Option<std::path::PathBuf> {
    let dir = dir?;
    let name: String = result
        .call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{}-{name}.txt", result.name));
    let written = crate::files::create_private_dir(dir).and_then(|()| {
        use std::io::Write as _;
        crate::files::private_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?
            .write_all(result.content.as_bytes())
    });
    match written {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!("cannot save a tool output to {}: {error}", path.display());
            None
        }
    }
}

/// Appends to the session file; after a failure the session goes on unsaved (said once).
fn append_or_stop(log: &mut Option<LogState>, record: &Record) {
    let Some(state) = log.as_mut() else {
        return;
    };
    if let Err(error) = state.log.append(record) {
        tracing::warn!("the session is no longer saved: {error}");
        *log = None;
    }
}

/// A poisoned lock still holds a usable log: every critical section is one append.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

enum Approval {
    Run,
    Refused(String),
    Cancelled,
}

struct Outcome {
    result: ToolResult,
    /// A bug, not the model's doing: the turn ends after the batch.
    fatal: bool,
}

impl Outcome {
    fn error(call: &ToolCall, message: String) -> Self {
        Outcome {
            result: result_for(call, message, true),
            fatal: false,
        }
    }
}

fn result_for(call: &ToolCall, content: String, is_error: bool) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    }
}

/// The stop for a stream that kept repeating its `what` (text, reasoning).
fn repeating(what: &str) -> Stop {
    Stop(
        StopReason::LoopDetected,
        Some(format!(
            "the model kept repeating the same {what}; the turn was stopped"
        )),
    )
}

/// Gemini CLI's heuristic: the same 50-character chunk of an answer ten times, close together,
/// means the model is stuck.
#[derive(Default)]
struct TextLoopDetector {
    text: String,
    checked_to: usize,
}

impl TextLoopDetector {
    const CHUNK: usize = 50;
    const REPEATS: usize = 10;
    /// How far back repeats count: the repeats must be close together.
    const WINDOW: usize = Self::CHUNK * Self::REPEATS * 2;

    /// Adds streamed text; true when the newest chunk has repeated too often.
    fn push(&mut self, text: &str) -> bool {
        self.text.push_str(text);
        while self.text.len() >= self.checked_to + Self::CHUNK {
            let mut end = self.checked_to + Self::CHUNK;
            while !self.text.is_char_boundary(end) {
                end += 1;
            }
            let mut start = end - Self::CHUNK;
            while !self.text.is_char_boundary(start) {
                start -= 1;
            }
            self.checked_to = end;
            let chunk = &self.text[start..end];
            // A rule of `=====` or a run of spaces is layout, not a loop.
            let distinct = chunk
                .chars()
                .collect::<std::collections::HashSet<_>>()
                .len();
            if distinct < 5 {
                continue;
            }
            let mut window_start = end.saturating_sub(Self::WINDOW);
            while !self.text.is_char_boundary(window_start) {
                window_start += 1;
            }
            if self.text[window_start..end].matches(chunk).count() >= Self::REPEATS {
                return true;
            }
        }
        // Only the last window is ever looked at: keep no more of a long stream than that.
        if self.checked_to > Self::WINDOW * 2 {
            let mut cut = self.checked_to - Self::WINDOW;
            while !self.text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.drain(..cut);
            self.checked_to -= cut;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use tandem_providers::{ModelConfig, ProviderKind};

    use super::*;
    use crate::ide::ActiveEditor;

    /// A session in a workspace of `files`, whose model answers every prompt with "ok".
    fn new_session(
        files: &[(&str, &str)],
        environment: Option<&str>,
    ) -> (tempfile::TempDir, Session) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(&root).unwrap();
        let script = dir.path().join("script.jsonl");
        std::fs::write(&script, "{\"text\": \"ok\"}\n".repeat(5)).unwrap();
        let mut model = ModelConfig::new(ProviderKind::Replay, "replay", "");
        model.script = Some(script);
        let ctx = ToolContext::on_disk(vec![root]);
        let config = AgentConfig {
            environment: environment.map(str::to_owned),
            ..AgentConfig::default()
        };
        let session = Session::new(Model::new(model).unwrap(), Vec::new(), ctx, config);
        (dir, session)
    }

    async fn turn(session: &mut Session, prompt: Prompt) {
        let (events, _received) = mpsc::unbounded_channel();
        let (_approve, mut approvals) = mpsc::unbounded_channel();
        let mut io = TurnIo {
            events: &events,
            approvals: &mut approvals,
            cancel: CancellationToken::new(),
        };
        assert_eq!(session.run_turn(prompt, &mut io).await, StopReason::EndTurn);
    }

    /// The texts of the user message at `index` of the history.
    fn texts(session: &Session, index: usize) -> Vec<String> {
        session.history()[index]
            .parts
            .iter()
            .map(|part| match part {
                Part::Text { text } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    const FILES: &[(&str, &str)] = &[
        (
            "src/parser.rs",
            "pub struct Parser;\n\nimpl Parser {\n    pub fn parse_expr(&self) {}\n}\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    parser::Parser.parse_expr();\n}\n",
        ),
    ];

    #[tokio::test]
    async fn the_first_prompt_carries_a_repo_map_computed_once() {
        let (_dir, mut session) = new_session(FILES, Some("<environment>"));
        let root = session.ctx.workspace.roots()[0].clone();
        let prompt = Prompt {
            text: "Why does `parse_expr` fail?".to_owned(),
            ide: Some(IdeState {
                active: Some(ActiveEditor {
                    path: root.join("src/main.rs"),
                    language: None,
                    cursor: None,
                    selection: None,
                    symbol: None,
                }),
                open: vec![root.join("src/parser.rs")],
            }),
            ..Prompt::default()
        };
        turn(&mut session, prompt).await;
        let first = texts(&session, 0);
        assert_eq!(first.len(), 4, "{first:#?}");
        assert_eq!(first[0], "<environment>");
        let map = &first[1];
        assert!(
            map.starts_with(
                "<repo_map>\nThe workspace's most relevant definitions, ranked by how the code \
                 uses them (a map, not whole files):\nsrc/"
            ),
            "{map}"
        );
        assert!(map.ends_with("\n</repo_map>"), "{map}");
        assert!(map.contains("pub fn parse_expr(&self)"), "{map}");
        assert!(first[2].starts_with("<ide>"), "{first:#?}");
        assert_eq!(first[3], "Why does `parse_expr` fail?");
        let focus = session.ctx.session.focus();
        assert_eq!(focus.mentioned, ["parse_expr"]);
        assert_eq!(focus.active, Some(root.join("src/main.rs")));
        assert_eq!(focus.open, [root.join("src/parser.rs")]);

        // Later prompts carry no map; the prompt's identifiers still steer the repo_map tool.
        turn(&mut session, Prompt::text("And `Parser`?")).await;
        assert_eq!(texts(&session, 2), ["And `Parser`?"]);
        assert_eq!(session.ctx.session.focus().mentioned, ["Parser"]);

        // A new history starts with the same prefix, even though the code changed since.
        std::fs::write(root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
        session.replace_history(Vec::new());
        turn(&mut session, Prompt::text("Again")).await;
        let again = texts(&session, 0);
        assert_eq!(again[..2], first[..2]);
    }

    #[tokio::test]
    async fn no_repo_map_without_an_environment_a_budget_or_source_files() {
        let (_dir, mut session) = new_session(FILES, None);
        turn(&mut session, Prompt::text("hi")).await;
        assert_eq!(texts(&session, 0), ["hi"]);

        let (_dir, mut session) = new_session(FILES, Some("<environment>"));
        session.ctx.syntax.repo_map_tokens = 0;
        turn(&mut session, Prompt::text("hi")).await;
        assert_eq!(texts(&session, 0), ["<environment>", "hi"]);

        let (_dir, mut session) = new_session(&[("README.md", "# Hi\n")], Some("<environment>"));
        turn(&mut session, Prompt::text("hi")).await;
        assert_eq!(texts(&session, 0), ["<environment>", "hi"]);
    }

    #[tokio::test]
    async fn a_request_shares_all_of_the_previous_one_and_none_after_a_new_history() {
        let (_dir, mut session) = new_session(FILES, None);
        turn(&mut session, Prompt::text("one")).await;
        let (_, first) = session.prefix.measured;
        turn(&mut session, Prompt::text("two")).await;
        let (shared, total) = session.prefix.measured;
        assert_eq!(shared, first);
        assert!(total > first);

        session.replace_history(Vec::new());
        turn(&mut session, Prompt::text("three")).await;
        let (shared, _) = session.prefix.measured;
        assert_eq!(shared, 0);
    }

    #[test]
    fn slash_commands_are_whole_prompts_only() {
        assert_eq!(
            SlashCommand::parse(" /compress\n"),
            Some(SlashCommand::Compress)
        );
        assert_eq!(
            SlashCommand::parse("/restore"),
            Some(SlashCommand::Restore(None))
        );
        assert_eq!(
            SlashCommand::parse("/restore t3"),
            Some(SlashCommand::Restore(Some("t3".into())))
        );
        for prompt in [
            "/restore t3 and explain",
            "please /compress",
            "/compressed",
            "/help",
        ] {
            assert_eq!(SlashCommand::parse(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn text_loops_are_detected_and_prose_is_not() {
        let mut detector = TextLoopDetector::default();
        let prose = "The parser reads tokens one by one. When it meets an operator it compares \
                     precedence with the one on the stack, and pops while the stack's is higher.";
        assert!(!detector.push(prose));
        let mut detector = TextLoopDetector::default();
        let repeated = "I will now read the file again to check the code. ".repeat(12);
        let stuck = repeated
            .as_bytes()
            .chunks(7)
            .any(|piece| detector.push(std::str::from_utf8(piece).unwrap_or("")));
        assert!(stuck);
        let mut detector = TextLoopDetector::default();
        assert!(!detector.push(&"=".repeat(2000)));
    }

    #[test]
    fn a_long_stream_is_checked_to_its_end_holding_only_the_last_window() {
        let mut detector = TextLoopDetector::default();
        for n in 0..2_000u64 {
            let line = format!(
                "step {n}: é{} then {}\n",
                n * 7919 % 1000,
                n * 104_729 % 997
            );
            assert!(!detector.push(&line), "{line}");
            assert!(
                detector.text.len() <= (TextLoopDetector::WINDOW + TextLoopDetector::CHUNK) * 2
            );
        }
        let repeated = "I will now read the file again to check the code. ".repeat(12);
        assert!(repeated
            .as_bytes()
            .chunks(7)
            .any(|piece| detector.push(std::str::from_utf8(piece).unwrap_or(""))));
    }
}
