//! The host's API types: what front ends give it (`Frontend`, `SessionSpec`, `Overrides`,
//! `TurnRequest`, `TurnHooks`), what they get back (`TurnHandle`, `TurnEvent`, `SessionInfo`,
//! `Resumed`, `ModelChoices`) and `HostError`. Plain data and traits; the behaviour is in
//! `mod.rs` and `runner.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use tokio::sync::mpsc;
use tracing::warn;

use crate::approval::ApprovalMode;
use crate::editor::Editor;
use crate::ide::IdeState;
use crate::protocol::{ApprovalDecision, Attachment, Event, StopReason};
use crate::settings::{AgentSettings, EditSettings};
use crate::store::{ReplayTurn, StoreError};

pub type Result<T> = std::result::Result<T, HostError>;

/// What went wrong, for the front end to word in its own terms.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("there is no session {0:?}")]
    NoSession(String),
    #[error("a session needs a workspace folder on disk")]
    NoWorkspace,
    #[error("the prompt is empty")]
    EmptyPrompt,
    /// The session is running or has queued turns.
    #[error("session {0:?} is running a turn: cancel it first")]
    Busy(String),
    /// Sessions are not saved here; `has_state_dir` tells why.
    #[error("{}", not_saved(*has_state_dir))]
    NotSaved { has_state_dir: bool },
    /// The settings or the model cannot be used; the message names the file or the model.
    #[error("{0}")]
    Settings(String),
    /// A saved session that cannot be read (missing, a bad id, damaged).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A request the front end should refuse with this message.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Internal(String),
}

/// Why there are no saved sessions to use.
fn not_saved(has_state_dir: bool) -> &'static str {
    if has_state_dir {
        "sessions are not saved in this workspace (the setting sessions.persist is false), so \
         there is none to resume"
    } else {
        "sessions are not saved (there is no state directory; set TANDEM_STATE_DIR), so there \
         is none to resume"
    }
}

/// What a host is given once, by the front end that starts it.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// The user's settings file (`None`: only the workspace's and the front end's).
    pub user_settings: Option<PathBuf>,
    /// Where sessions are saved; `None` saves none.
    pub state_dir: Option<PathBuf>,
    /// Write each session's Markdown transcript under the workspace's `.tandem/transcripts/`.
    pub transcripts: bool,
    /// Language servers that tell `edit` and `write_file` the errors a change added (`None`:
    /// the front end gives none).
    pub language_servers: Option<Arc<dyn crate::diagnostics::LanguageServers>>,
    /// One prompt and done (`tandem ask`): a session's first prompt waits for the MCP servers
    /// to finish starting (each within its `startTimeout`), since a tool missing from that one
    /// request is missing for good. Otherwise (an editor, ACP) it waits at most 2 s and slower
    /// servers join later requests.
    pub one_shot: bool,
}

/// How a front end serves its sessions.
pub trait Frontend: Send + Sync {
    /// What the session's tools read and write files through, with the settings' edit options.
    fn editor(&self, settings: &EditSettings) -> Arc<dyn Editor>;
    /// The editor's state at a turn's start (open files, cursor, selection), if it has one.
    fn ide_state(&self) -> Option<IdeState> {
        None
    }
    /// The client's terminal, where `shell` runs foreground commands (ACP clients that offer
    /// `terminal`); `None` runs them here.
    fn terminal(&self) -> Option<Arc<dyn crate::tools::shell::Terminal>> {
        None
    }
    /// A problem the user should see that does not stop anything (a settings key ignored).
    fn warning(&self, message: &str) {
        warn!("{message}");
    }
}

/// Per-session choices that win over the settings, from the next turn on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// A model name (a key of `models`, or `provider:model`).
    pub model: Option<String>,
    pub approval_mode: Option<ApprovalMode>,
    pub max_turns: Option<u32>,
    /// Record the model's responses to this file (replay format).
    pub record: Option<PathBuf>,
}

/// What a new (or resumed) session is made of.
#[derive(Clone)]
pub struct SessionSpec {
    /// The workspace roots; the first is where the session runs and is saved.
    pub roots: Vec<PathBuf>,
    pub title: Option<String>,
    pub frontend: Arc<dyn Frontend>,
    pub overrides: Overrides,
    /// MCP servers the front end brings for this session (ACP's `session/new`), beside the
    /// settings' `mcpServers` (winning over one of the same name).
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::McpServerSettings>,
}

/// A prompt for a session's queue.
pub struct TurnRequest {
    pub text: String,
    pub context: Vec<Attachment>,
    /// Images attached to the prompt, ready to send (`tandem_tools::view_image::prepare`).
    pub images: Vec<tandem_providers::Image>,
    /// What the front end does at the turn's start and end (`None`: nothing).
    pub hooks: Option<Box<dyn TurnHooks>>,
}

impl TurnRequest {
    pub fn text(text: impl Into<String>) -> Self {
        TurnRequest {
            text: text.into(),
            context: Vec::new(),
            images: Vec::new(),
            hooks: None,
        }
    }
}

/// A front end's part in one turn.
pub trait TurnHooks: Send {
    /// At the turn's start, once the session is ready (`settings`: what it runs with): may
    /// change the prompt and return the editor this turn's tools use instead of the session's.
    /// An error ends the turn with it.
    fn start(
        &mut self,
        settings: &AgentSettings,
        editor: &Arc<dyn Editor>,
        text: &mut String,
        context: &mut Vec<Attachment>,
    ) -> std::result::Result<Option<Arc<dyn Editor>>, String>;

    /// After the agent's turn, before `TurnFinished` goes out: a problem that replaces the
    /// turn's message (the result did not land).
    fn finish(&mut self, reason: StopReason) -> BoxFuture<'_, Option<String>>;
}

/// A queued turn, as the front end follows it.
pub struct TurnHandle {
    pub session_id: String,
    pub turn_id: String,
    /// `Started` when the turn begins, then its events; the last is `Event::TurnFinished`.
    pub events: mpsc::UnboundedReceiver<TurnEvent>,
    /// Answers to the turn's approval requests: (call id, decision).
    pub approvals: mpsc::UnboundedSender<(String, ApprovalDecision)>,
}

/// What a turn tells its front end.
// Like `Event` itself: made one at a time and moved, never stored in bulk.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The turn left the queue and started.
    Started {
        text: String,
    },
    Agent(Event),
}

/// One event of a turn, as a front end watching the session sees it (`Host::watch`).
#[derive(Debug, Clone, PartialEq)]
pub struct WatchedEvent {
    pub session_id: String,
    pub turn_id: String,
    /// Who queued the turn (`Host::prompt_from`); `None` for `Host::prompt`.
    pub origin: Option<String>,
    pub event: TurnEvent,
}

/// A session, live or saved.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    pub title: String,
    /// Whether this host runs it now (else it is only saved; `resume` brings it back).
    pub live: bool,
    pub running: bool,
    pub turns: usize,
    /// Its workspace root (live sessions; saved ones are listed per workspace).
    pub root: Option<PathBuf>,
    pub transcript: Option<PathBuf>,
    /// When a saved session's file last changed, in milliseconds since the Unix epoch.
    pub updated_ms: Option<u64>,
}

/// A session brought back by `resume`.
#[derive(Debug, Clone)]
pub struct Resumed {
    pub session_id: String,
    pub title: String,
    pub turns: usize,
    /// The saved turns, for the front end to replay (empty when the session was live).
    pub replay: Vec<ReplayTurn>,
    /// What was wrong with the saved file (skipped lines, a turn lost in flight).
    pub warnings: Vec<String>,
    pub was_live: bool,
}

/// The models a session can be switched to.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoices {
    /// The `models` the settings configure, by name.
    pub names: Vec<String>,
    /// The model in use when nothing overrides it (the `model` setting or the only one).
    pub default: Option<String>,
}

/// The symbol index as a status request shows it (`Host::index_status`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexStatus {
    /// Files whose tags the index holds.
    pub files: usize,
    /// Whether the latest update parsed every file that changed (false while a prompt's map
    /// was made from an index still being built).
    pub complete: bool,
    pub background: crate::symbols::BackgroundIndexing,
}

/// A slash command as front ends list it (`Host::commands`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    /// Without the slash (`git:commit`).
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// `builtIn`, `project`, `user`, `plugin` or `mcp`.
    pub source: &'static str,
    /// The MCP server a prompt comes from, or the plugin a command comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

impl From<&crate::slash::Command> for CommandInfo {
    fn from(command: &crate::slash::Command) -> Self {
        use crate::slash::CommandSource;
        let (source, server) = match &command.source {
            CommandSource::BuiltIn => ("builtIn", None),
            CommandSource::Project { .. } => ("project", None),
            CommandSource::User { .. } => ("user", None),
            CommandSource::Mcp { server } => ("mcp", Some(server.clone())),
            CommandSource::Plugin { plugin, .. } => ("plugin", Some(plugin.clone())),
        };
        CommandInfo {
            name: command.name.clone(),
            description: command.description.clone(),
            argument_hint: command.argument_hint.clone(),
            source,
            server,
        }
    }
}
