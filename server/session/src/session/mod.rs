//! The agent loop. A `Session` holds a conversation; `run_turn` answers one prompt: call the
//! model, validate and run the tool calls it makes (read-only ones in parallel, the others one
//! at a time in order, asking for approval where the policy says so), send the results back,
//! and repeat until the model answers without tools — or the turn is cancelled, runs out of
//! turns, loops, or fails. Whatever happens, the history stays valid: every tool call gets a
//! result.
//!
//! This file holds the `Session` itself (its state, construction, resume, accessors) and
//! `run_turn`, the entry of a turn. The loop's parts live in the sibling modules, each an
//! `impl Session` block of its own:
//!
//! - `turn`: the prompt's user message and the sampling loop — request, stream, run the calls,
//!   repeat — with the overflow retry.
//! - `scheduler`: running one response's tool calls: validation, approvals, read-only calls in
//!   parallel and the others in order, and a result for every call.
//! - `context`: what each request carries: the frozen system instruction and tools, the
//!   environment and first repo map, the reminder (stored where it is first sent), and how
//!   much of the previous request it repeats.
//! - `recording`: events to the front end and what is saved of them, and of the history, to
//!   the session log.
//! - `commands`: the slash commands (`/compress`, `/restore`) and history compression.
//! - `loop_detection`: the same call made again and again, and streamed text that repeats.
//!
//! A turn's path: `run_turn` → `slash::slash` (a command Tandem answers itself ends there; a
//! custom command becomes a prompt; mentions are attached) → `turn::prompt_turn` → `turn` → per request `model_request` (the request from
//! `context::next_request`) → `stream_response` → `scheduler::run_calls`, with `recording`
//! emitting and saving along the way.

mod commands;
mod context;
mod hooks;
mod loop_detection;
mod recording;
mod scheduler;
mod slash;
mod turn;

use std::sync::Arc;

use tandem_providers::{Message, Model};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::checkpoint::TurnCheckpoint;
use crate::compress::ContextSettings;
use crate::ide::{IdeContext, IdeState};
use crate::memory::MemoryConfig;
use crate::next_speaker::NextSpeakerCheck;
use crate::prompt::PromptConfig;
use crate::store::{now_ms, LoadedSession, Record, SessionLog};
use crate::tokens;
use tandem_extensions::mcp::{McpManager, StartWait};
use tandem_extensions::slash::CommandDirs;
use tandem_protocol::{ApprovalDecision, Attachment, Event, StopReason};
use tandem_sandbox::approval::protected::ProtectedPaths;
use tandem_sandbox::approval::{ApprovalPolicy, Rule};
use tandem_tools::{Tool, ToolContext};

use context::{declarations, Frozen, PrefixTracker, Told};
use recording::{lock, LogState};

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
    /// Where custom slash commands are found (none by default).
    pub command_dirs: CommandDirs,
    /// The memory files `system_prompt` was built with, and the prompt's settings, so that
    /// `/memory reload` can build it again.
    pub memory: MemoryConfig,
    pub prompt: PromptConfig,
    /// Whether an answer that announces an action lets the model go on (`next_speaker`).
    pub next_speaker: NextSpeakerCheck,
    /// The `hooks` settings, and what they are told of the session.
    pub hooks: tandem_extensions::hooks::Hooks,
    /// How long a history's first prompt (and a prompt naming a command not known yet) waits
    /// for MCP servers still starting: until they started in one-shot use, 2 s in an editor.
    pub mcp_start_wait: StartWait,
}

/// An editor's first prompt waits this long for MCP servers; slower ones join later requests.
pub const MCP_FIRST_PROMPT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system_prompt: String::new(),
            max_turns: 100,
            approval: ApprovalPolicy::default(),
            environment: None,
            context: ContextSettings::default(),
            protected: ProtectedPaths::default(),
            command_dirs: CommandDirs::default(),
            // No user file: a session built without settings reads only the workspace's.
            memory: MemoryConfig {
                user_dir: None,
                ..MemoryConfig::default()
            },
            prompt: PromptConfig::default(),
            next_speaker: NextSpeakerCheck::default(),
            hooks: tandem_extensions::hooks::Hooks::default(),
            mcp_start_wait: StartWait::AtMost(MCP_FIRST_PROMPT_WAIT),
        }
    }
}

/// What a front end hands a turn: where events go, where approvals come from, and the token
/// that cancels it.
pub struct TurnIo<'a> {
    pub events: &'a mpsc::UnboundedSender<Event>,
    pub approvals: &'a mut mpsc::UnboundedReceiver<(String, ApprovalDecision)>,
    pub cancel: CancellationToken,
}

pub struct Session {
    model: Model,
    /// What the next request declares: `builtin_tools`, then the MCP servers' tools that are
    /// ready (`context::sync_tools`).
    tools: Vec<Arc<dyn Tool>>,
    builtin_tools: Vec<Arc<dyn Tool>>,
    /// The MCP servers of the session's workspace, shared with the host's other sessions.
    mcp: Option<Arc<McpManager>>,
    ctx: ToolContext,
    config: AgentConfig,
    history: Vec<Message>,
    /// "Allow always" answers, for the rest of the session.
    session_allow: Vec<Rule>,
    /// "Reject always" answers: calls like these are refused without asking, for the rest of
    /// the session.
    session_deny: Vec<Rule>,
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
    /// How many of the provider's tokens one estimated token turned out to be, from the
    /// latest request the provider counted (never below 1): requests are fitted to the window
    /// by this measure, so a tokenizer that cuts finer than four bytes a token cannot push a
    /// request over the window.
    tokens_per_estimate: f64,
    /// After a snapshot that would not have saved anything, automatic compression waits until
    /// the history's estimate passes this many tokens (or the user forces a compression).
    compress_paused_until: Option<u64>,
    /// Whether this turn already compressed to recover from a context-window overflow.
    overflow_retried: bool,
    /// The warning about a repeated identical call, for the next reminder.
    repeat_note: Option<String>,
    /// What reminders have told the model since the history started; they say what changed.
    told: Told,
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
    /// Whether the `SessionStart` hooks ran.
    hooks_started: bool,
    /// How many times in a row `Stop` hooks sent the model back to work this turn.
    stop_continuations: u32,
    /// The prompt of the turn running, as typed (what `Stop` hooks are told it answers).
    turn_prompt: String,
    /// The conversation in Claude Code's transcript shape, for hooks (`hooks.rs`); made when
    /// hooks first run.
    hook_transcript: std::sync::Mutex<Option<tandem_extensions::hooks::transcript::Transcript>>,
    /// What routes the session's requests to one prompt cache (`ChatRequest::cache_key`) until
    /// it is saved, when its id does.
    cache_key: String,
}

/// One prompt from the user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Context the front end attaches (a selection, a file, a diagnostic).
    pub context: Vec<Attachment>,
    /// Images the user attached (a pasted screenshot), already brought to what providers take
    /// (`tandem_tools::view_image::prepare`). A model that takes no images refuses the prompt.
    pub images: Vec<tandem_providers::Image>,
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
            builtin_tools: tools.clone(),
            tools,
            mcp: None,
            ctx,
            config,
            history: Vec::new(),
            session_allow: Vec::new(),
            session_deny: Vec::new(),
            last_call: None,
            ide: IdeContext::default(),
            repo_map: None,
            frozen: None,
            usage_mark: None,
            tokens_per_estimate: 1.0,
            compress_paused_until: None,
            overflow_retried: false,
            repeat_note: None,
            told: Told::default(),
            pending_notes: Vec::new(),
            turn_count: 0,
            checkpoints: Vec::new(),
            prefix: PrefixTracker::default(),
            log: std::sync::Mutex::new(None),
            logged: 0,
            hooks_started: false,
            stop_continuations: 0,
            turn_prompt: String::new(),
            hook_transcript: std::sync::Mutex::new(None),
            cache_key: format!("tandem-{:016x}", fastrand::u64(..)),
        }
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The text of the model's latest answer (its text parts, joined); empty before one.
    pub fn last_answer(&self) -> String {
        self.history
            .iter()
            .rev()
            .find(|message| message.role == tandem_providers::Role::Assistant)
            .map(|message| {
                message
                    .parts
                    .iter()
                    .filter_map(|part| match part {
                        tandem_providers::Part::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("")
            })
            .unwrap_or_default()
    }

    /// Uses `model` from the next request on (the user changed settings).
    pub fn set_model(&mut self, model: Model) {
        self.model = model;
        // Another model may count with another tokenizer.
        self.tokens_per_estimate = 1.0;
    }

    /// Offers the tools, prompts and resources of `mcp`'s servers from the next request on (a
    /// server still starting joins when it is ready).
    pub fn set_mcp(&mut self, mcp: Option<Arc<McpManager>>) {
        self.mcp = mcp;
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
    pub fn set_editor(&mut self, editor: Arc<dyn tandem_sandbox::editor::Editor>) {
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
        self.told = Told::default();
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

    /// The key that keeps the session's requests on one prompt cache: the saved session's id,
    /// else one made when the session started.
    pub(crate) fn cache_key(&self) -> String {
        self.log_id().unwrap_or_else(|| self.cache_key.clone())
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
        let Stop(reason, message) = match self.slash(prompt, &turn_id, io).await {
            slash::Slash::Done(stop) => stop,
            slash::Slash::Prompt(prompt) => self.prompt_turn(*prompt, &turn_id, io).await,
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
}

/// What the approval of a tool call (or a `/` command's shell line) came to.
pub(super) enum Approval {
    Run,
    Refused(String),
    Cancelled,
}

#[cfg(test)]
mod test_support {
    //! Sessions and turns for the tests of the sibling modules.

    use tandem_providers::{ModelConfig, Part, ProviderKind};

    use super::*;

    /// A session in a workspace of `files`, whose model answers every prompt with "ok".
    pub(super) fn new_session(
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

    pub(super) async fn turn(session: &mut Session, prompt: Prompt) {
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
    pub(super) fn texts(session: &Session, index: usize) -> Vec<String> {
        session.history()[index]
            .parts
            .iter()
            .map(|part| match part {
                Part::Text { text } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }
}
