//! The agent inside the language server: the core's session host (`tandem_agent::host`), seen
//! through LSP. This file translates `tandem/*` requests into the host's calls and its errors
//! into JSON-RPC errors; `turn_output.rs` sends each turn's events to the editor and
//! `turn_hooks.rs` does what inline chat and `tandem:` comments need around a turn.
//!
//! Sessions run in the first workspace folder, and are saved as they run when the server has a
//! state directory (see `tandem_agent::store`): `tandem/sessions` lists the saved ones beside the
//! live ones, `tandem/resumeSession` brings one back (replaying its turns to clients with events)
//! and `tandem/deleteSession` removes one. `tandem/compress` and `tandem/restore` are turns whose
//! text is the slash command the session understands. Every turn is also written to a Markdown
//! transcript under the workspace's `.tandem/transcripts/`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use serde::Serialize;
use serde_json::{json, Value};
use tandem_agent::host::{
    Frontend, Host, HostError, HostOptions, Overrides, SessionSpec, TurnEvent, TurnRequest,
};
use tandem_agent::settings::EditSettings;
use tandem_agent::store::ReplayTurn;
use tandem_agent::{Attachment, Editor, Event};
use tandem_text::{Document, DocumentStore, LineCol, PositionEncoding};
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::{
    self as lsp, MessageType, NumberOrString, ProgressToken, ShowDocumentParams,
};
use tower_lsp::Client;
use tracing::{debug, info};
use url::Url;

use crate::actions;
use crate::bridge::{self, LspEditor, Revisions};
use crate::capabilities::ClientSupport;
use crate::ide_state::IdeTracker;
use crate::instruction::InstructionComment;
use crate::save::AgentEdits;
use crate::trees::OpenTrees;
use crate::turn_hooks::LspTurnHooks;
use crate::turn_output::{add_uris, EventNotification, TurnOutput};

/// The origin of the editor's own turns (`Host::prompt_from`): the turns of every other
/// origin are another front end's.
pub(crate) const LSP_ORIGIN: &str = "lsp";

/// What the host is told once `initialize` has run.
struct Setup {
    support: ClientSupport,
    encoding: PositionEncoding,
}

/// How long `shutdown` waits for the sessions' `SessionEnd` hooks.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long `tandem/mcpServers` waits for servers still starting before it answers.
const MCP_LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The agent side of one language server.
pub(crate) struct AgentHost {
    pub(crate) client: Client,
    pub(crate) documents: Arc<DocumentStore>,
    /// Document notifications applied so far, for writes that wait for a `didChange`.
    pub(crate) revisions: Arc<Revisions>,
    /// The documents the agent changed in the editor, saved before commands read the disk.
    agent_edits: Arc<AgentEdits>,
    pub(crate) ide: Arc<Mutex<IdeTracker>>,
    /// The open documents' syntax trees: the symbol at the cursor, completion windows.
    pub(crate) trees: Arc<OpenTrees>,
    core: Arc<Host>,
    setup: OnceLock<Setup>,
    roots: RwLock<Vec<PathBuf>>,
    /// The roots again, for whoever follows them (`ServeOptions::on_initialized`).
    roots_watch: tokio::sync::watch::Sender<Vec<PathBuf>>,
    /// Progress tokens of running turns, so that cancelling the progress cancels the turn.
    pub(crate) progress: Mutex<HashMap<String, (String, String)>>,
    /// The "Tandem is not set up" messages a plain client was shown: every turn fails the same
    /// way until the user acts, so each pops up once per server and goes to the log after that.
    pub(crate) told_not_set_up: Mutex<HashSet<String>>,
}

/// What a turn was asked to do, before the IDE state is taken (at its start).
pub(crate) struct PendingPrompt {
    pub text: String,
    pub context: Vec<Attachment>,
    /// Pasted screenshots, ready to send.
    pub images: Vec<tandem_providers::Image>,
    pub comment: Option<InstructionComment>,
    pub inline: Option<InlineTarget>,
}

/// Inline chat: the document and range the turn may change.
pub(crate) struct InlineTarget {
    pub uri: Url,
    pub range: lsp::Range,
}

/// The answer to a request that starts a turn.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnStarted {
    pub session_id: String,
    pub turn_id: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionInfo {
    session_id: String,
    title: String,
    /// Whether this server runs it now (else it is only saved; `tandem/resumeSession` brings it
    /// back).
    live: bool,
    running: bool,
    turns: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    transcript_uri: Option<Url>,
    /// When a saved session's file last changed, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_ms: Option<u64>,
}

/// The answer to `tandem/resumeSession`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resumed {
    session_id: String,
    turns: usize,
    /// What was wrong with the saved file (skipped lines, a turn lost in flight).
    warnings: Vec<String>,
}

impl AgentHost {
    pub(crate) fn new(
        client: Client,
        documents: Arc<DocumentStore>,
        revisions: Arc<Revisions>,
        ide: Arc<Mutex<IdeTracker>>,
        trees: Arc<OpenTrees>,
        options: HostOptions,
    ) -> Self {
        AgentHost {
            client,
            documents,
            revisions,
            agent_edits: Arc::default(),
            ide,
            trees,
            core: Host::new(options),
            setup: OnceLock::new(),
            roots: RwLock::new(Vec::new()),
            roots_watch: tokio::sync::watch::Sender::new(Vec::new()),
            progress: Mutex::new(HashMap::new()),
            told_not_set_up: Mutex::default(),
        }
    }

    pub(crate) fn initialize(
        &self,
        support: ClientSupport,
        encoding: PositionEncoding,
        init_settings: Value,
    ) {
        let _ = self.setup.set(Setup { support, encoding });
        // `initializationOptions` come from where the user starts the server; the configuration
        // section may come from the project's own files.
        self.core.set_trusted_settings(init_settings);
    }

    pub(crate) fn support(&self) -> ClientSupport {
        self.setup
            .get()
            .map(|setup| setup.support)
            .unwrap_or_default()
    }

    pub(crate) fn encoding(&self) -> PositionEncoding {
        self.setup
            .get()
            .map(|setup| setup.encoding)
            .unwrap_or_default()
    }

    /// The workspace folders that are local directories, canonical.
    pub(crate) fn set_roots(&self, folders: &[Url]) {
        let roots = folders
            .iter()
            .filter_map(|uri| uri.to_file_path().ok())
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .filter(|path| path.is_dir())
            .collect::<Vec<_>>();
        *write(&self.roots) = roots.clone();
        self.roots_watch.send_if_modified(|old| {
            let changed = *old != roots;
            *old = roots;
            changed
        });
    }

    /// The workspace folders, now and as they change.
    pub(crate) fn roots_watch(&self) -> tokio::sync::watch::Receiver<Vec<PathBuf>> {
        self.roots_watch.subscribe()
    }

    /// Follows the turns other front ends (a terminal attached to this server) queue on the
    /// host, in every session, and sends each to the editor as its own turns go, marked with
    /// their origin (`turn_output.rs`). The task ends with the server.
    pub(crate) fn follow_foreign_turns(self: &Arc<Self>) {
        let Ok(mut watched) = self.core.watch(None) else {
            return;
        };
        let host = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut turns: HashMap<String, tokio::sync::mpsc::UnboundedSender<TurnEvent>> =
                HashMap::new();
            while let Some(watched) = watched.recv().await {
                if watched.origin.as_deref() == Some(LSP_ORIGIN) {
                    continue;
                }
                let Some(host) = host.upgrade() else {
                    return;
                };
                let finished =
                    matches!(watched.event, TurnEvent::Agent(Event::TurnFinished { .. }));
                let turn = turns.entry(watched.turn_id.clone()).or_insert_with(|| {
                    let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
                    TurnOutput::follow_foreign(
                        host,
                        watched.session_id.clone(),
                        watched.turn_id.clone(),
                        watched.origin.clone(),
                        receiver,
                    );
                    events
                });
                let _ = turn.send(watched.event);
                if finished {
                    turns.remove(&watched.turn_id);
                }
            }
        });
    }

    /// Starts indexing the workspace folders in the background (once per set of folders), so
    /// that the first prompt finds the symbol index warm.
    pub(crate) fn index_in_background(&self) {
        let roots = read(&self.roots).clone();
        if !roots.is_empty() {
            self.core.index_in_background(&roots);
        }
    }

    /// The symbol index, for `tandem/debug/status`.
    pub(crate) fn index_status(&self) -> tandem_agent::host::IndexStatus {
        self.core.index_status()
    }

    /// The user's own editor settings, sent again after `initialize` (trusted like them).
    pub(crate) fn set_user_settings(&self, settings: Value) {
        self.core.set_trusted_settings(settings);
        info!("the editor's user settings changed; sessions use them from their next turn");
    }

    /// Settings from `workspace/configuration` (or a `didChangeConfiguration` that carried them).
    pub(crate) fn set_configuration(&self, settings: Value) {
        self.core.set_project_settings(settings);
    }

    /// Pulls the `tandem` section with `workspace/configuration`, when the client has it.
    pub(crate) async fn pull_configuration(&self) {
        if !self.support().configuration {
            return;
        }
        let item = lsp::ConfigurationItem {
            scope_uri: None,
            section: Some("tandem".to_owned()),
        };
        match self.client.configuration(vec![item]).await {
            Ok(mut values) if !values.is_empty() => {
                let value = values.swap_remove(0);
                if value.is_object() {
                    self.set_configuration(value);
                }
            }
            Ok(_) => {}
            Err(error) => debug!("workspace/configuration failed: {error}"),
        }
    }

    pub(crate) fn roots(&self) -> Vec<PathBuf> {
        read(&self.roots).clone()
    }

    fn spec(self: &Arc<Self>, title: Option<String>) -> Result<SessionSpec> {
        let roots = self.roots();
        if roots.is_empty() {
            return Err(rpc_error(HostError::NoWorkspace));
        }
        Ok(SessionSpec {
            roots,
            title,
            frontend: self.clone(),
            overrides: Overrides::default(),
            mcp_servers: Default::default(),
        })
    }

    pub(crate) fn new_session(self: &Arc<Self>, title: Option<String>) -> Result<String> {
        let spec = self.spec(title)?;
        self.core.new_session(spec).map_err(rpc_error)
    }

    /// The live sessions, then the saved ones that are not live, most recently updated first.
    pub(crate) async fn sessions(&self) -> Vec<SessionInfo> {
        self.core
            .sessions(&self.roots(), self)
            .await
            .into_iter()
            .map(|info| SessionInfo {
                session_id: info.session_id,
                title: info.title,
                live: info.live,
                running: info.running,
                turns: info.turns,
                transcript_uri: info
                    .transcript
                    .as_ref()
                    .and_then(|path| Url::from_file_path(path).ok()),
                updated_ms: info.updated_ms,
            })
            .collect()
    }

    /// `tandem/mcpServers`: the workspace's MCP servers, started if no session has.
    pub(crate) async fn mcp_servers(&self) -> Result<Vec<tandem_agent::mcp::McpServerStatus>> {
        self.core
            .mcp_statuses(
                &self.roots(),
                self,
                tandem_agent::mcp::StartWait::AtMost(MCP_LIST_WAIT),
            )
            .await
            .map_err(rpc_error)
    }

    /// The MCP servers sessions started, for `tandem/debug/status`.
    pub(crate) fn running_mcp_statuses(&self) -> Vec<tandem_agent::mcp::McpServerStatus> {
        self.core.running_mcp_statuses(&self.roots())
    }

    /// `tandem/skills`: the skills a session in the workspace would offer.
    pub(crate) fn skills(&self) -> Result<tandem_agent::skills::SkillSet> {
        self.core.skills(&self.roots(), self).map_err(rpc_error)
    }

    /// `tandem/commands`: the workspace's slash commands.
    pub(crate) fn commands(&self) -> (Vec<tandem_agent::host::CommandInfo>, Vec<String>) {
        self.core.commands(&self.roots())
    }

    /// `tandem/resumeSession`: a live session as it is, else the saved one brought back. Its
    /// turns are replayed to clients with events before the answer.
    pub(crate) async fn resume(self: &Arc<Self>, id: &str) -> Result<Resumed> {
        let spec = self.spec(None)?;
        let resumed = self.core.resume(id, spec).await.map_err(rpc_error)?;
        if self.support().tandem.events {
            for turn in &resumed.replay {
                self.replay(&resumed.session_id, turn).await;
            }
        }
        Ok(Resumed {
            session_id: resumed.session_id,
            turns: resumed.turns,
            warnings: resumed.warnings,
        })
    }

    /// One saved turn as `tandem/event` notifications marked `replay`.
    async fn replay(&self, session_id: &str, turn: &ReplayTurn) {
        let mut events = vec![json!({"type": "turnStarted", "text": turn.text})];
        for event in &turn.events {
            if matches!(event, Event::TurnFinished { .. }) {
                continue;
            }
            if let Ok(mut value) = serde_json::to_value(event) {
                add_uris(&mut value);
                events.push(value);
            }
        }
        events.push(json!({"type": "turnFinished", "stopReason": turn.stop_reason}));
        for event in events {
            let params = json!({
                "sessionId": session_id,
                "turnId": turn.turn_id,
                "replay": true,
                "event": event,
            });
            self.client
                .send_notification::<EventNotification>(params)
                .await;
        }
    }

    /// `tandem/deleteSession`: forgets a live session that is not running and deletes its file.
    pub(crate) async fn delete_session(&self, id: &str) -> Result<()> {
        self.core
            .delete(id, &self.roots(), self)
            .await
            .map_err(rpc_error)
    }

    /// The session a request names, else the most recent one.
    fn session_id(&self, id: Option<&str>) -> Option<String> {
        match id {
            Some(id) => self.core.is_live(id).then(|| id.to_owned()),
            None => self.core.latest(),
        }
    }

    /// Queues a turn; answers at once with its ids. No `session_id`: the most recent session,
    /// created if there is none.
    pub(crate) fn prompt(
        self: &Arc<Self>,
        session_id: Option<&str>,
        prompt: PendingPrompt,
        progress: Option<ProgressToken>,
    ) -> Result<TurnStarted> {
        if prompt.text.trim().is_empty() {
            return Err(rpc_error(HostError::EmptyPrompt));
        }
        let id = match (self.session_id(session_id), session_id) {
            (Some(id), _) => id,
            (None, Some(id)) => return Err(rpc_error(HostError::NoSession(id.to_owned()))),
            (None, None) => self.new_session(None)?,
        };
        let hooks = (prompt.inline.is_some() || prompt.comment.is_some()).then(|| {
            Box::new(LspTurnHooks::new(
                self.clone(),
                prompt.inline,
                prompt.comment,
            )) as Box<dyn tandem_agent::host::TurnHooks>
        });
        let request = TurnRequest {
            text: prompt.text,
            context: prompt.context,
            images: prompt.images,
            hooks,
        };
        let handle = self
            .core
            .prompt_from(&id, request, Some(LSP_ORIGIN.to_owned()))
            .map_err(rpc_error)?;
        let started = TurnStarted {
            session_id: handle.session_id.clone(),
            turn_id: handle.turn_id.clone(),
        };
        TurnOutput::follow(self.clone(), handle, progress);
        Ok(started)
    }

    /// `tandem/compress` and `tandem/restore`: a turn whose text is the session's slash command,
    /// in an existing session (the most recent one without `session_id`).
    pub(crate) fn command_turn(
        self: &Arc<Self>,
        session_id: Option<&str>,
        command: String,
        progress: Option<ProgressToken>,
    ) -> Result<TurnStarted> {
        let id = match (self.session_id(session_id), session_id) {
            (Some(id), _) => id,
            (None, Some(id)) => return Err(rpc_error(HostError::NoSession(id.to_owned()))),
            (None, None) => {
                return Err(Error::invalid_params(
                    "there is no session yet: ask Tandem something first, or resume a saved \
                     session with tandem/resumeSession",
                ))
            }
        };
        self.prompt(
            Some(&id),
            PendingPrompt {
                text: command,
                context: Vec::new(),
                images: Vec::new(),
                comment: None,
                inline: None,
            },
            progress,
        )
    }

    /// Cancels the running turn (or the given one, running or queued). Whether anything was.
    /// The core's session host.
    pub(crate) fn core(&self) -> &Arc<Host> {
        &self.core
    }

    /// The first workspace folder, where the settings of completions are read.
    pub(crate) fn first_root(&self) -> Option<PathBuf> {
        read(&self.roots).first().cloned()
    }

    /// Ends every session before the server goes: running turns are cancelled and the
    /// sessions' `SessionEnd` hooks run, for at most `SHUTDOWN_WAIT`.
    pub(crate) async fn end_sessions(&self) {
        self.core.end_sessions(SHUTDOWN_WAIT).await;
    }

    pub(crate) fn cancel(&self, session_id: Option<&str>, turn_id: Option<&str>) -> Result<bool> {
        let Some(id) = self.session_id(session_id) else {
            return match session_id {
                Some(id) => Err(Error::invalid_params(format!("there is no session {id:?}"))),
                None => Ok(false),
            };
        };
        self.core.cancel(&id, turn_id).map_err(rpc_error)
    }

    /// `tandem/addNote`: told to the model with the session's next prompt.
    pub(crate) fn add_note(&self, session_id: &str, label: String, text: String) -> Result<()> {
        self.core
            .add_note(
                session_id,
                tandem_agent::Attachment {
                    label,
                    text,
                    shown: None,
                },
            )
            .map_err(rpc_error)
    }

    /// `window/workDoneProgress/cancel`: the user cancelled a turn's progress.
    pub(crate) fn cancel_progress(&self, token: &ProgressToken) {
        let key = token_key(token);
        let turn = lock(&self.progress).get(&key).cloned();
        if let Some((session, turn)) = turn {
            info!(session, turn, "progress cancelled by the user");
            let _ = self.cancel(Some(&session), Some(&turn));
        }
    }

    /// `tandem.showTranscript`: opens a session's transcript in the editor, or shows its path
    /// where the editor cannot open documents for a server.
    pub(crate) async fn show_transcript(&self, session_id: Option<&str>) -> Result<Value> {
        let id = self.session_id(session_id).ok_or_else(|| {
            Error::invalid_params("there is no session yet: ask Tandem something first")
        })?;
        let path = self
            .core
            .transcript(&id)
            .map_err(rpc_error)?
            .ok_or_else(|| Error::invalid_params("this session has no transcript"))?;
        if !path.exists() {
            return Err(Error::invalid_params(
                "the transcript is written when the session's first turn starts",
            ));
        }
        let uri = Url::from_file_path(&path).map_err(|()| Error::internal_error())?;
        if !self.support().show_document {
            // The editor cannot be asked to open it (Helix 25.07 declares no showDocument), so
            // the user gets its path to open.
            self.client
                .show_message(
                    MessageType::INFO,
                    format!("Tandem's transcript: {}", path.display()),
                )
                .await;
            return Ok(json!({ "uri": uri, "shown": false }));
        }
        let shown = self
            .client
            .show_document(ShowDocumentParams {
                uri: uri.clone(),
                external: Some(false),
                take_focus: Some(true),
                selection: None,
            })
            .await
            .unwrap_or(false);
        Ok(json!({ "uri": uri, "shown": shown }))
    }

    /// The text of an open document (or a file) for an attachment, with its label.
    pub(crate) fn attachment(
        &self,
        uri: &Url,
        range: Option<lsp::Range>,
        label: Option<String>,
    ) -> Result<Attachment> {
        let (document, version) = match self.documents.get(uri) {
            Some(document) => {
                let version = document.version();
                (document, Some(version))
            }
            None => {
                let path = bridge::path_for_uri(uri).ok_or_else(|| {
                    Error::invalid_params(format!("{uri} is not open and is not a local file"))
                })?;
                let text = std::fs::read_to_string(&path).map_err(|error| {
                    Error::invalid_params(format!("cannot read {}: {error}", path.display()))
                })?;
                (Document::new(&text, 0, ""), None)
            }
        };
        let shown = self.display(uri);
        let (text, label, lines) = match range {
            Some(range) => {
                let (start, end) = self.char_range(&document, range);
                let first = document.rope().char_to_line(start) + 1;
                let last = document.rope().char_to_line(end) + 1;
                let text = document.rope().slice(start..end).to_string();
                let label =
                    label.unwrap_or_else(|| format!("Selection in {shown} (lines {first}-{last})"));
                (text, label, Some((first, last)))
            }
            None => (
                document.text(),
                label.unwrap_or_else(|| format!("File {shown}")),
                None,
            ),
        };
        let shown = bridge::shown_file(uri, &document, version, lines, &text);
        Ok(Attachment {
            label,
            text: cap_text(text),
            shown,
        })
    }

    pub(crate) fn char_range(&self, document: &Document, range: lsp::Range) -> (usize, usize) {
        let encoding = self.encoding();
        let start = document.char_offset(from_position(range.start), encoding);
        let end = document.char_offset(from_position(range.end), encoding);
        (start.min(end), start.max(end))
    }

    /// The document a path typed by the user names: an absolute path; else the path from a
    /// workspace folder, if that document is open or the file exists; else the one open
    /// document whose path ends with it (an editor's command line gives paths from its own
    /// folder, which need not be the workspace's).
    pub(crate) fn locate(&self, typed: &str) -> Option<Url> {
        let typed_path = Path::new(typed);
        if typed_path.is_absolute() {
            return Url::from_file_path(typed_path).ok();
        }
        for root in read(&self.roots).iter() {
            let path = root.join(typed_path);
            if let Some(uri) = bridge::open_uri(&self.documents, &path) {
                return Some(uri);
            }
            if path.is_file() {
                return Url::from_file_path(&path).ok();
            }
        }
        let open = self.documents.snapshot();
        let mut ends_with = open.iter().filter(|(uri, _)| {
            bridge::path_for_uri(uri).is_some_and(|path| path.ends_with(typed_path))
        });
        match (ends_with.next(), ends_with.next()) {
            (Some((uri, _)), None) => Some(uri.clone()),
            _ => None,
        }
    }

    /// How a document is named to the model and the user: relative to its workspace folder.
    pub(crate) fn display(&self, uri: &Url) -> String {
        let Some(path) = bridge::path_for_uri(uri) else {
            return uri.to_string();
        };
        for root in read(&self.roots).iter() {
            if let Ok(relative) = path.strip_prefix(root) {
                return relative.to_string_lossy().replace('\\', "/");
            }
        }
        path.display().to_string()
    }
}

/// The language server's sessions read and write through the editor's buffers and see its
/// cursor, selection and open files.
impl Frontend for AgentHost {
    fn editor(&self, settings: &EditSettings) -> Arc<dyn Editor> {
        Arc::new(LspEditor::new(
            self.documents.clone(),
            self.revisions.clone(),
            self.client.clone(),
            self.support(),
            self.encoding(),
            *settings,
            self.agent_edits.clone(),
        ))
    }

    fn ide_state(&self) -> Option<tandem_agent::IdeState> {
        Some(lock(&self.ide).snapshot(
            &self.documents,
            &self.trees,
            self.encoding(),
            &bridge::path_for_uri,
        ))
    }
}

/// The host's error as the client sees it, in this protocol's words.
fn rpc_error(error: HostError) -> Error {
    match error {
        HostError::NoSession(id) => Error::invalid_params(format!(
            "there is no session {id:?}; tandem/sessions lists them (resume a saved one with \
             tandem/resumeSession)"
        )),
        HostError::NoWorkspace => Error::invalid_params(
            "Tandem needs a workspace folder on disk: open a folder (not a lone file) and try again",
        ),
        HostError::Busy(id) => Error::invalid_params(format!(
            "session {id:?} is running a turn: cancel it first (tandem/cancel), then delete it"
        )),
        HostError::NotSaved {
            has_state_dir: false,
        } => Error::invalid_params(
            "this server saves no sessions (it has no state directory; set TANDEM_STATE_DIR), so \
             there is none to resume",
        ),
        HostError::Internal(message) => {
            let mut error = Error::internal_error();
            error.message = message.into();
            error
        }
        error => Error::invalid_params(error.to_string()),
    }
}

pub(crate) fn token_key(token: &ProgressToken) -> String {
    match token {
        NumberOrString::Number(number) => format!("n:{number}"),
        NumberOrString::String(text) => format!("s:{text}"),
    }
}

fn from_position(position: lsp::Position) -> LineCol {
    LineCol::new(position.line, position.character)
}

pub(crate) fn cap_text(text: String) -> String {
    if text.len() <= actions::MAX_ATTACHMENT_BYTES {
        return text;
    }
    let mut end = actions::MAX_ATTACHMENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more bytes not shown; read the file for the rest]",
        &text[..end],
        text.len() - end
    )
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_are_capped_on_a_character_boundary() {
        let capped = cap_text("é".repeat(actions::MAX_ATTACHMENT_BYTES));
        assert!(capped.len() < actions::MAX_ATTACHMENT_BYTES + 100);
        assert!(capped.ends_with("more bytes not shown; read the file for the rest]"));
    }
}
