//! The agent inside the language server: sessions, their turns, and how a turn's events reach
//! the editor.
//!
//! Each session is a task that runs its turns one after another (a prompt sent while a turn runs
//! waits its turn). A turn's events go out as `tandem/event` notifications to clients that asked
//! for them; other clients see a `$/progress` work-done progress and get the answer through
//! `window/showMessage` and `window/logMessage`. Approvals go to `tandem/requestApproval`, else
//! `window/showMessageRequest`, else the call is refused and the user told why. Every turn is also
//! written to a markdown transcript under the workspace's `.tandem/transcripts/`.
//!
//! Sessions are saved as they run when the server has a state directory (see
//! `tandem_agent::store`): `tandem/sessions` lists the saved ones beside the live ones,
//! `tandem/resumeSession` brings one back (replaying its turns to clients with events) and
//! `tandem/deleteSession` removes one. `tandem/compress` and `tandem/restore` are turns whose
//! text is the slash command the session understands.
//!
//! Nothing here blocks the transport: requests that start a turn answer at once, and waiting
//! for the model, a tool or the user happens in the session's task.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{json, Value};
use tandem_agent::settings::{AgentSettings, EditSettings, InlineApply};
use tandem_agent::store::{self, LoadedSession, SessionLog, SessionStore, StoreError};
use tandem_agent::{
    setup, tools, ApprovalDecision, Attachment, Editor, Event, Prompt, Session, StopReason,
    ToolCallStatus, ToolCallUpdate, TurnIo,
};
use tandem_providers::settings::Loaded;
use tandem_providers::{CancellationToken, Model};
use tandem_text::{Document, DocumentStore, LineCol, PositionEncoding};
use tokio::sync::mpsc;
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::notification::Notification;
use tower_lsp::lsp_types::{
    self as lsp, ApplyWorkspaceEditParams, MessageType, NumberOrString, ProgressParams,
    ProgressParamsValue, ProgressToken, ShowDocumentParams, WorkDoneProgress,
    WorkDoneProgressBegin, WorkDoneProgressCreateParams, WorkDoneProgressEnd,
    WorkDoneProgressReport,
};
use tower_lsp::Client;
use tracing::{debug, info, warn};
use url::Url;

use crate::actions::{self, InstructionComment};
use crate::approvals;
use crate::bridge::{self, LspEditor, Revisions};
use crate::capabilities::ClientSupport;
use crate::ide_state::IdeTracker;
use crate::inline::{self, ScopedEditor};
use crate::trees::OpenTrees;

/// How much of the answer `window/showMessage` shows; the log has all of it.
const SHORT_ANSWER_CHARS: usize = 300;
/// How long a turn waits for the client to accept a progress token before going on without.
const PROGRESS_CREATE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// `tandem/event`: a session's event, for clients that declared `events`.
enum EventNotification {}

impl Notification for EventNotification {
    type Params = Value;
    const METHOD: &'static str = "tandem/event";
}

/// What the host is told once `initialize` has run.
struct Setup {
    support: ClientSupport,
    encoding: PositionEncoding,
}

/// The sessions of one server and what they share.
pub(crate) struct AgentHost {
    client: Client,
    documents: Arc<DocumentStore>,
    /// Document notifications applied so far, for writes that wait for a `didChange`.
    revisions: Arc<Revisions>,
    ide: Arc<Mutex<IdeTracker>>,
    /// The open documents' syntax trees, for the symbol at the cursor.
    trees: Arc<OpenTrees>,
    /// Tags of the workspace's files, shared by every session so that each file is parsed once.
    index: Arc<tandem_syntax::SymbolIndex>,
    user_settings: Option<PathBuf>,
    /// Where sessions are saved; `None` saves none.
    state_dir: Option<PathBuf>,
    setup: OnceLock<Setup>,
    roots: RwLock<Vec<PathBuf>>,
    /// Settings from the editor: `initializationOptions.settings`, then `workspace/configuration`.
    editor_settings: RwLock<(Value, Value)>,
    /// Bumped whenever the editor's settings change; sessions reload when they see a new one.
    settings_generation: AtomicU64,
    sessions: Mutex<Vec<SessionEntry>>,
    /// Progress tokens of running turns, so that cancelling the progress cancels the turn.
    progress: Mutex<HashMap<String, (String, String)>>,
    next_session: AtomicU64,
    next_turn: AtomicU64,
    /// Distinguishes this server's transcripts from earlier ones in the same workspace.
    started: u64,
    /// The "Tandem is not set up" messages a plain client was shown: every turn fails the same
    /// way until the user acts, so each pops up once per server and goes to the log after that.
    told_not_set_up: Mutex<std::collections::HashSet<String>>,
}

#[derive(Clone)]
struct SessionEntry {
    /// The saved session's id too (`store::new_session_id`).
    id: String,
    title: String,
    queue: mpsc::UnboundedSender<QueuedTurn>,
    status: Arc<Mutex<SessionStatus>>,
    transcript: Option<PathBuf>,
}

#[derive(Default)]
struct SessionStatus {
    running: Option<(String, CancellationToken)>,
    queued: Vec<(String, CancellationToken)>,
    turns: usize,
}

/// A turn waiting for its session.
struct QueuedTurn {
    turn_id: String,
    prompt: PendingPrompt,
    cancel: CancellationToken,
    progress: Option<ProgressToken>,
}

/// What a turn was asked to do, before the IDE state is taken (at its start).
pub(crate) struct PendingPrompt {
    pub text: String,
    pub context: Vec<Attachment>,
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

/// A saved session to build on the runner's first turn.
type SavedSession = (LoadedSession, SessionLog);

impl AgentHost {
    pub(crate) fn new(
        client: Client,
        documents: Arc<DocumentStore>,
        revisions: Arc<Revisions>,
        ide: Arc<Mutex<IdeTracker>>,
        trees: Arc<OpenTrees>,
        user_settings: Option<PathBuf>,
        state_dir: Option<PathBuf>,
    ) -> Self {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        AgentHost {
            client,
            documents,
            revisions,
            ide,
            trees,
            index: Arc::default(),
            user_settings,
            state_dir,
            setup: OnceLock::new(),
            roots: RwLock::new(Vec::new()),
            editor_settings: RwLock::new((Value::Null, Value::Null)),
            settings_generation: AtomicU64::new(0),
            sessions: Mutex::new(Vec::new()),
            progress: Mutex::new(HashMap::new()),
            next_session: AtomicU64::new(1),
            next_turn: AtomicU64::new(1),
            started,
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
        write(&self.editor_settings).0 = init_settings;
    }

    pub(crate) fn support(&self) -> ClientSupport {
        self.setup
            .get()
            .map(|setup| setup.support)
            .unwrap_or_default()
    }

    fn encoding(&self) -> PositionEncoding {
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
            .collect();
        *write(&self.roots) = roots;
    }

    /// Settings from `workspace/configuration` (or a `didChangeConfiguration` that carried them).
    pub(crate) fn set_configuration(&self, settings: Value) {
        write(&self.editor_settings).1 = settings;
        self.settings_generation.fetch_add(1, Ordering::SeqCst);
        info!("settings changed; sessions use them from their next turn");
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

    /// The user's file, the workspace's file, then the editor's settings on top.
    fn load_settings(&self, root: &Path) -> std::result::Result<Loaded, String> {
        let mut loaded = Loaded::load(self.user_settings.as_deref(), Some(root))
            .map_err(|error| error.to_string())?;
        for warning in &loaded.warnings {
            warn!("{warning}");
        }
        let (init, configured) = read(&self.editor_settings).clone();
        // `initializationOptions` come from where the user starts the server; the configuration
        // section may come from the project's own files (see `overlay_from_project`).
        loaded.overlay(init).map_err(|error| error.to_string())?;
        let before = loaded.warnings.len();
        loaded
            .overlay_from_project(configured, "the editor's `tandem` settings section")
            .map_err(|error| error.to_string())?;
        for warning in &loaded.warnings[before..] {
            warn!("{warning}");
        }
        Ok(loaded)
    }

    /// The first workspace folder: where sessions run and are saved.
    fn root(&self) -> Result<PathBuf> {
        read(&self.roots).first().cloned().ok_or_else(|| {
            Error::invalid_params(
                "Tandem needs a workspace folder on disk: open a folder (not a lone file) and try again",
            )
        })
    }

    pub(crate) fn new_session(self: &Arc<Self>, title: Option<String>) -> Result<String> {
        self.root()?;
        let number = self.next_session.fetch_add(1, Ordering::SeqCst);
        let id = store::new_session_id();
        let title = title.unwrap_or_else(|| format!("Session {number}"));
        let entry = self.start_runner(id.clone(), title, 0, None);
        lock(&self.sessions).push(entry);
        info!(session = id, "new session");
        Ok(id)
    }

    /// Starts the task of a session (`saved`: built from a saved session on its first turn).
    /// The caller lists the entry.
    fn start_runner(
        self: &Arc<Self>,
        id: String,
        title: String,
        turns: usize,
        saved: Option<SavedSession>,
    ) -> SessionEntry {
        let roots = read(&self.roots).clone();
        let root = roots.first().cloned().unwrap_or_default();
        let transcript = transcript_path(&root, self.started, &id);
        let (queue, queued) = mpsc::unbounded_channel();
        let status = Arc::new(Mutex::new(SessionStatus {
            turns,
            ..SessionStatus::default()
        }));
        let entry = SessionEntry {
            id: id.clone(),
            title,
            queue,
            status: status.clone(),
            transcript: Some(transcript.clone()),
        };
        let runner = SessionRunner {
            host: self.clone(),
            id,
            roots,
            status,
            transcript,
            session: None,
            saved,
            settings_seen: None,
            editor: None,
            inline_propose: true,
        };
        tokio::spawn(runner.run(queued));
        entry
    }

    /// Where this workspace's sessions are saved; `None` when they are not (the server has no
    /// state directory, or `sessions.persist` is off).
    fn store(&self, root: &Path) -> std::result::Result<Option<SessionStore>, String> {
        let Some(state_dir) = self.state_dir.as_deref() else {
            return Ok(None);
        };
        let loaded = self.load_settings(root)?;
        let settings = AgentSettings::from_loaded(&loaded)?;
        Ok(setup::session_store(&settings, root, Some(state_dir)))
    }

    /// The live sessions, then the saved ones that are not live, most recently updated first.
    pub(crate) async fn sessions(&self) -> Vec<SessionInfo> {
        let mut infos: Vec<SessionInfo> = lock(&self.sessions)
            .iter()
            .map(|entry| {
                let status = lock(&entry.status);
                SessionInfo {
                    session_id: entry.id.clone(),
                    title: entry.title.clone(),
                    live: true,
                    running: status.running.is_some(),
                    turns: status.turns,
                    transcript_uri: entry
                        .transcript
                        .as_ref()
                        .and_then(|path| Url::from_file_path(path).ok()),
                    updated_ms: None,
                }
            })
            .collect();
        let Ok(root) = self.root() else {
            return infos;
        };
        let store = match self.store(&root) {
            Ok(Some(store)) => store,
            Ok(None) => return infos,
            Err(message) => {
                warn!("cannot list the saved sessions: {message}");
                return infos;
            }
        };
        let saved = match tokio::task::spawn_blocking(move || store.list()).await {
            Ok(Ok(saved)) => saved,
            Ok(Err(error)) => {
                warn!("cannot list the saved sessions: {error}");
                return infos;
            }
            Err(error) => {
                warn!("listing the saved sessions failed: {error}");
                return infos;
            }
        };
        for summary in saved {
            if infos.iter().any(|info| info.session_id == summary.id) {
                continue;
            }
            infos.push(SessionInfo {
                session_id: summary.id,
                title: summary.title,
                live: false,
                running: false,
                turns: summary.turns,
                transcript_uri: None,
                updated_ms: Some(summary.updated_ms),
            });
        }
        infos
    }

    /// `tandem/resumeSession`: a live session as it is, else the saved one brought back. Its
    /// turns are replayed to clients with events before the answer.
    pub(crate) async fn resume(self: &Arc<Self>, id: &str) -> Result<Resumed> {
        if let Some(entry) = self.session(Some(id)) {
            let turns = lock(&entry.status).turns;
            return Ok(Resumed {
                session_id: entry.id,
                turns,
                warnings: Vec::new(),
            });
        }
        let root = self.root()?;
        let store = self
            .store(&root)
            .map_err(|message| {
                Error::invalid_params(format!("cannot read the saved sessions: {message}"))
            })?
            .ok_or_else(|| Error::invalid_params(not_saved(self.state_dir.is_some())))?;
        let wanted = id.to_owned();
        let (loaded, log) = tokio::task::spawn_blocking(move || store.open(&wanted))
            .await
            .map_err(|error| internal(format!("reading the saved session failed: {error}")))?
            .map_err(|error| Error::invalid_params(error.to_string()))?;
        log_warnings(&loaded.warnings);
        // Turn ids name checkpoints (`/restore <turnId>`), so new turns must not reuse the
        // saved ones.
        let last_turn = loaded
            .turns
            .iter()
            .filter_map(|turn| turn.turn_id.strip_prefix('t')?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        self.next_turn.fetch_max(last_turn + 1, Ordering::SeqCst);
        if self.support().tandem.events {
            for turn in &loaded.turns {
                self.replay(&loaded.id, turn).await;
            }
        }
        let resumed = Resumed {
            session_id: loaded.id.clone(),
            turns: loaded.turns.len(),
            warnings: loaded.warnings.clone(),
        };
        let title = loaded.turns.first().map_or_else(
            || format!("Session {}", loaded.id),
            |turn| first_line(&turn.text, 80),
        );
        let mut sessions = lock(&self.sessions);
        // Another request may have resumed it meanwhile; one runner per session.
        if !sessions.iter().any(|entry| entry.id == resumed.session_id) {
            let entry = self.start_runner(
                resumed.session_id.clone(),
                title,
                resumed.turns,
                Some((loaded, log)),
            );
            sessions.push(entry);
            info!(session = resumed.session_id, "resumed a saved session");
        }
        Ok(resumed)
    }

    /// One saved turn as `tandem/event` notifications marked `replay`.
    async fn replay(&self, session_id: &str, turn: &store::ReplayTurn) {
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
        let was_live = {
            let mut sessions = lock(&self.sessions);
            match sessions.iter().position(|entry| entry.id == id) {
                Some(index) => {
                    let busy = {
                        let status = lock(&sessions[index].status);
                        status.running.is_some() || !status.queued.is_empty()
                    };
                    if busy {
                        return Err(Error::invalid_params(format!(
                            "session {id:?} is running a turn: cancel it first (tandem/cancel), \
                             then delete it"
                        )));
                    }
                    // Its runner stops once the queue's last sender (this entry) is gone.
                    sessions.remove(index);
                    true
                }
                None => false,
            }
        };
        let store = match self.root().map(|root| self.store(&root)) {
            Ok(Ok(store)) => store,
            Ok(Err(message)) => {
                warn!("cannot read the saved sessions: {message}");
                None
            }
            Err(_) => None,
        };
        let Some(store) = store else {
            return if was_live {
                Ok(())
            } else {
                Err(no_session(id))
            };
        };
        let wanted = id.to_owned();
        let deleted = tokio::task::spawn_blocking(move || store.delete(&wanted))
            .await
            .map_err(|error| internal(format!("deleting the saved session failed: {error}")))?;
        match deleted {
            Ok(()) => {}
            // A live session that has not run a turn yet has no file.
            Err(StoreError::NotFound(_)) if was_live => {}
            Err(StoreError::NotFound(_)) => return Err(no_session(id)),
            Err(error) => return Err(internal(error.to_string())),
        }
        info!(session = id, "deleted a session");
        Ok(())
    }

    fn session(&self, id: Option<&str>) -> Option<SessionEntry> {
        let sessions = lock(&self.sessions);
        match id {
            Some(id) => sessions.iter().find(|entry| entry.id == id).cloned(),
            None => sessions.last().cloned(),
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
            return Err(Error::invalid_params("the prompt is empty"));
        }
        let entry = match self.session(session_id) {
            Some(entry) => entry,
            None if session_id.is_some() => return Err(no_session(session_id.unwrap_or_default())),
            None => {
                let id = self.new_session(None)?;
                self.session(Some(&id)).ok_or_else(Error::internal_error)?
            }
        };
        let turn_id = format!("t{}", self.next_turn.fetch_add(1, Ordering::SeqCst));
        let cancel = CancellationToken::new();
        lock(&entry.status)
            .queued
            .push((turn_id.clone(), cancel.clone()));
        let queued = QueuedTurn {
            turn_id: turn_id.clone(),
            prompt,
            cancel,
            progress,
        };
        if entry.queue.send(queued).is_err() {
            return Err(Error::internal_error());
        }
        Ok(TurnStarted {
            session_id: entry.id,
            turn_id,
        })
    }

    /// `tandem/compress` and `tandem/restore`: a turn whose text is the session's slash command,
    /// in an existing session (the most recent one without `session_id`).
    pub(crate) fn command_turn(
        self: &Arc<Self>,
        session_id: Option<&str>,
        command: String,
        progress: Option<ProgressToken>,
    ) -> Result<TurnStarted> {
        let entry = match (self.session(session_id), session_id) {
            (Some(entry), _) => entry,
            (None, Some(id)) => return Err(no_session(id)),
            (None, None) => {
                return Err(Error::invalid_params(
                    "there is no session yet: ask Tandem something first, or resume a saved \
                     session with tandem/resumeSession",
                ))
            }
        };
        self.prompt(
            Some(&entry.id),
            PendingPrompt {
                text: command,
                context: Vec::new(),
                comment: None,
                inline: None,
            },
            progress,
        )
    }

    /// Cancels the running turn (or the given one, running or queued). Whether anything was.
    pub(crate) fn cancel(&self, session_id: Option<&str>, turn_id: Option<&str>) -> Result<bool> {
        let Some(entry) = self.session(session_id) else {
            return match session_id {
                Some(id) => Err(Error::invalid_params(format!("there is no session {id:?}"))),
                None => Ok(false),
            };
        };
        let status = lock(&entry.status);
        let mut cancelled = false;
        for (id, token) in status.running.iter().chain(&status.queued) {
            let chosen = match turn_id {
                Some(turn_id) => id == turn_id,
                None => true,
            };
            if chosen && !token.is_cancelled() {
                token.cancel();
                cancelled = true;
            }
        }
        Ok(cancelled)
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

    /// `tandem.showTranscript`: opens a session's transcript in the editor.
    pub(crate) async fn show_transcript(&self, session_id: Option<&str>) -> Result<Value> {
        let entry = self.session(session_id).ok_or_else(|| {
            Error::invalid_params("there is no session yet: ask Tandem something first")
        })?;
        let path = entry
            .transcript
            .ok_or_else(|| Error::invalid_params("this session has no transcript"))?;
        if !path.exists() {
            return Err(Error::invalid_params(
                "the transcript is written when the session's first turn starts",
            ));
        }
        let uri = Url::from_file_path(&path).map_err(|()| Error::internal_error())?;
        if !self.support().show_document {
            return Ok(json!({ "uri": uri }));
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

    fn char_range(&self, document: &Document, range: lsp::Range) -> (usize, usize) {
        let encoding = self.encoding();
        let start = document.char_offset(from_position(range.start), encoding);
        let end = document.char_offset(from_position(range.end), encoding);
        (start.min(end), start.max(end))
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

    fn lsp_editor(&self, settings: EditSettings) -> LspEditor {
        LspEditor::new(
            self.documents.clone(),
            self.revisions.clone(),
            self.client.clone(),
            self.support(),
            self.encoding(),
            settings,
        )
    }

    fn ide_state(&self) -> tandem_agent::IdeState {
        lock(&self.ide).snapshot(
            &self.documents,
            &self.trees,
            self.encoding(),
            &bridge::path_for_uri,
        )
    }
}

/// One session's task: runs its turns in order.
struct SessionRunner {
    host: Arc<AgentHost>,
    id: String,
    roots: Vec<PathBuf>,
    status: Arc<Mutex<SessionStatus>>,
    transcript: PathBuf,
    session: Option<Session>,
    /// A resumed session's saved state, until `prepare` builds the session from it.
    saved: Option<SavedSession>,
    /// The settings the session was configured with (see `SettingsVersion`).
    settings_seen: Option<SettingsVersion>,
    editor: Option<Arc<dyn Editor>>,
    /// `inlineChat.apply`: propose inline chat's edit for confirmation (else apply it).
    inline_propose: bool,
}

/// What a turn sends where, decided once per turn from the client's capabilities.
struct TurnOutput {
    host: Arc<AgentHost>,
    session_id: String,
    turn_id: String,
    events: bool,
    progress: Option<ProgressToken>,
    approvals: mpsc::UnboundedSender<(String, ApprovalDecision)>,
    answer: String,
    transcript: String,
    /// Set once the user was told that this editor could not show an approval prompt.
    told_cannot_ask: Arc<std::sync::atomic::AtomicBool>,
}

impl SessionRunner {
    async fn run(mut self, mut turns: mpsc::UnboundedReceiver<QueuedTurn>) {
        while let Some(turn) = turns.recv().await {
            let turn_id = turn.turn_id.clone();
            {
                let mut status = lock(&self.status);
                status.queued.retain(|(id, _)| *id != turn_id);
                status.running = Some((turn_id.clone(), turn.cancel.clone()));
            }
            self.turn(turn).await;
            let mut status = lock(&self.status);
            status.running = None;
            status.turns += 1;
        }
    }

    /// Builds the session on its first turn, and reconfigures it when the settings changed.
    fn prepare(&mut self) -> std::result::Result<(), String> {
        let root = self.roots.first().cloned().unwrap_or_default();
        let version = self.host.settings_version(&root);
        if self.session.is_some() && self.settings_seen.as_ref() == Some(&version) {
            return Ok(());
        }
        let loaded = self.host.load_settings(&root)?;
        let settings = AgentSettings::from_loaded(&loaded)?;
        let edit_settings = settings.edits;
        let inline_propose = settings.inline_chat.apply == InlineApply::Propose;
        let env = |name: &str| std::env::var(name).ok();
        let model = loaded
            .resolve_model(None, &env)
            .and_then(Model::new)
            .map_err(|error| error.to_string())?;
        let model_name = model.config().model.clone();
        let editor: Arc<dyn Editor> = Arc::new(self.host.lsp_editor(edit_settings));
        match &mut self.session {
            Some(session) => {
                let (config, warnings) = setup::agent_config(session.tool_context(), &settings)?;
                log_warnings(&warnings);
                session.set_model(model);
                session.set_config(config);
                session.set_editor(editor.clone());
            }
            None => {
                let user_dir = self.host.user_settings.as_deref().and_then(Path::parent);
                let mut ctx =
                    setup::tool_context(self.roots.clone(), &settings, editor.clone(), user_dir);
                ctx.index = self.host.index.clone();
                let (config, warnings) = setup::agent_config(&ctx, &settings)?;
                log_warnings(&warnings);
                let session = match self.saved.take() {
                    Some((loaded, log)) => {
                        Session::resume(model, tools::all(), ctx, config, &loaded, log)
                    }
                    None => {
                        let mut session = Session::new(model, tools::all(), ctx, config);
                        self.start_log(&mut session, &settings, &root, &model_name);
                        session
                    }
                };
                self.session = Some(session);
            }
        }
        self.editor = Some(editor);
        self.inline_propose = inline_propose;
        self.settings_seen = Some(version);
        Ok(())
    }

    async fn turn(&mut self, queued: QueuedTurn) {
        let QueuedTurn {
            turn_id,
            prompt,
            cancel,
            progress,
        } = queued;
        let host = self.host.clone();
        let support = host.support();
        let (approvals_tx, mut approvals_rx) = mpsc::unbounded_channel();
        let mut output = TurnOutput {
            host: host.clone(),
            session_id: self.id.clone(),
            turn_id: turn_id.clone(),
            events: support.tandem.events,
            progress: None,
            approvals: approvals_tx,
            answer: String::new(),
            transcript: format!("## You\n\n{}\n\n## Tandem\n\n", prompt.text.trim()),
            told_cannot_ask: Arc::default(),
        };
        output.start_progress(progress, &prompt.text).await;
        output
            .send_event(json!({"type": "turnStarted", "text": prompt.text}))
            .await;
        self.append_transcript(&output.transcript);
        output.transcript.clear();

        if cancel.is_cancelled() {
            output.finish(StopReason::Cancelled, None).await;
            return;
        }
        if let Err(message) = self.prepare() {
            warn!(session = self.id, "cannot start the turn: {message}");
            output
                .finish(
                    StopReason::Error,
                    Some(format!("{}: {message}", tandem_providers::NOT_SET_UP)),
                )
                .await;
            self.append_transcript(&output.transcript);
            return;
        }
        let (Some(session), Some(editor)) = (self.session.as_mut(), self.editor.clone()) else {
            return;
        };

        // Inline chat: this turn's writes go to an overlay limited to the range.
        let mut scoped: Option<(Arc<ScopedEditor>, Url, Document, String)> = None;
        let mut prompt_context = prompt.context;
        let mut text = prompt.text;
        if let Some(target) = &prompt.inline {
            match scope_for(&host, &editor, target) {
                Ok((scoped_editor, document, shown_range, attachment)) => {
                    session.set_editor(scoped_editor.clone());
                    text = format!(
                        "{text}\n\n(Inline edit: change only {shown_range}. Edits elsewhere are refused. \
                         Read the file first if you need more of it.)"
                    );
                    prompt_context.push(attachment);
                    scoped = Some((scoped_editor, target.uri.clone(), document, shown_range));
                }
                Err(message) => {
                    output.finish(StopReason::Error, Some(message)).await;
                    self.append_transcript(&output.transcript);
                    return;
                }
            }
        }

        let ide = host.ide_state();
        let (events_tx, mut events_rx) = mpsc::unbounded_channel();
        let run = async {
            let mut io = TurnIo {
                events: &events_tx,
                approvals: &mut approvals_rx,
                cancel: cancel.clone(),
            };
            let reason = session
                .run_turn(
                    Prompt {
                        text,
                        context: prompt_context,
                        ide: Some(ide),
                        turn_id: Some(turn_id.clone()),
                    },
                    &mut io,
                )
                .await;
            drop(io);
            drop(events_tx);
            reason
        };
        let forward = async {
            let mut finished = None;
            while let Some(event) = events_rx.recv().await {
                if let Event::TurnFinished {
                    stop_reason,
                    message,
                } = event
                {
                    finished = Some((stop_reason, message));
                    continue;
                }
                output.event(event).await;
            }
            finished
        };
        let (_, finished) = tokio::join!(run, forward);
        let (reason, mut message) = finished.unwrap_or((StopReason::Error, None));

        if let Some((scoped_editor, uri, document, shown_range)) = scoped {
            session.set_editor(editor.clone());
            if reason == StopReason::EndTurn {
                if let Some(problem) = deliver_inline(
                    &host,
                    &scoped_editor,
                    &uri,
                    &document,
                    &shown_range,
                    self.inline_propose,
                )
                .await
                {
                    message = Some(problem);
                }
            }
        }
        if let (Some(comment), StopReason::EndTurn) = (&prompt.comment, reason) {
            remove_instruction_comment(&host, comment).await;
        }
        output.finish(reason, message).await;
        self.append_transcript(&output.transcript);
    }

    /// Saves a new session from now on, when this workspace's sessions are saved. A session that
    /// cannot be saved still runs.
    fn start_log(
        &self,
        session: &mut Session,
        settings: &AgentSettings,
        root: &Path,
        model_name: &str,
    ) {
        let Some(state_dir) = self.host.state_dir.as_deref() else {
            return;
        };
        let Some(store) = setup::session_store(settings, root, Some(state_dir)) else {
            return;
        };
        match store.create(&self.id, root, model_name) {
            Ok(log) => session.set_log(log),
            Err(error) => warn!(
                session = self.id,
                "this session is not saved, so it cannot be resumed later: {error}"
            ),
        }
    }

    fn append_transcript(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let root = self
            .roots
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new(""));
        if let Err(error) = append_file(root, &self.transcript, text) {
            debug!(
                "cannot write the transcript {}: {error}",
                self.transcript.display()
            );
        }
    }
}

impl TurnOutput {
    async fn send_event(&self, event: Value) {
        if !self.events {
            return;
        }
        let params = json!({
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "event": event,
        });
        self.host
            .client
            .send_notification::<EventNotification>(params)
            .await;
    }

    async fn start_progress(&mut self, token: Option<ProgressToken>, prompt: &str) {
        let support = self.host.support();
        if self.events || !support.work_done_progress && token.is_none() {
            return;
        }
        let token = match token {
            Some(token) => token,
            None => {
                let token = NumberOrString::String(format!("tandem/{}", self.turn_id));
                let create = self
                    .host
                    .client
                    .send_request::<lsp::request::WorkDoneProgressCreate>(
                        WorkDoneProgressCreateParams {
                            token: token.clone(),
                        },
                    );
                // A client that loses the request (lsp-mode before its fix for #4323) would
                // hold the turn for ever; progress is not worth more than a moment's wait.
                match tokio::time::timeout(PROGRESS_CREATE_WAIT, create).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => {
                        debug!("the client refused a progress token: {error}");
                        return;
                    }
                    Err(_) => {
                        warn!(
                            "the client did not answer window/workDoneProgress/create within \
                             {PROGRESS_CREATE_WAIT:?}; the turn goes on without progress"
                        );
                        return;
                    }
                }
                token
            }
        };
        lock(&self.host.progress).insert(
            token_key(&token),
            (self.session_id.clone(), self.turn_id.clone()),
        );
        self.progress(
            &token,
            WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "Tandem".to_owned(),
                cancellable: Some(true),
                message: Some(first_line(prompt, 80)),
                percentage: None,
            }),
        )
        .await;
        self.progress = Some(token);
    }

    async fn progress(&self, token: &ProgressToken, value: WorkDoneProgress) {
        self.host
            .client
            .send_notification::<lsp::notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(value),
            })
            .await;
    }

    async fn event(&mut self, event: Event) {
        match &event {
            Event::TextChunk { text } => self.answer.push_str(text),
            Event::Retrying { .. } => self.answer.clear(),
            Event::ToolCall(update) => self.tool_call(update).await,
            _ => {}
        }
        if let Ok(mut value) = serde_json::to_value(&event) {
            add_uris(&mut value);
            self.send_event(value).await;
        }
    }

    async fn tool_call(&mut self, update: &ToolCallUpdate) {
        match update.status {
            ToolCallStatus::Executing => {
                if let Some(token) = &self.progress {
                    let report = WorkDoneProgress::Report(WorkDoneProgressReport {
                        message: Some(update.title.clone()),
                        cancellable: Some(true),
                        percentage: None,
                    });
                    self.progress(token, report).await;
                }
            }
            ToolCallStatus::AwaitingApproval => self.ask_approval(update.clone()),
            ToolCallStatus::Success | ToolCallStatus::Error | ToolCallStatus::Cancelled => {
                self.flush_answer_to_transcript();
                let mark = match update.status {
                    ToolCallStatus::Success => "✓",
                    ToolCallStatus::Cancelled => "⊘",
                    _ => "✗",
                };
                let detail = match update.status {
                    ToolCallStatus::Success => String::new(),
                    _ => update
                        .output
                        .as_deref()
                        .map(|output| format!(": {}", first_line(output, 200)))
                        .unwrap_or_default(),
                };
                self.transcript
                    .push_str(&format!("- {mark} {}{detail}\n", update.title));
            }
            _ => {}
        }
    }

    /// The answer streamed so far goes into the transcript before the next tool call.
    fn flush_answer_to_transcript(&mut self) {
        if !self.answer.trim().is_empty() {
            self.end_tool_list();
            self.transcript.push_str(self.answer.trim());
            self.transcript.push_str("\n\n");
        }
        self.answer.clear();
    }

    /// Ends a run of tool bullets with a blank line, so that what follows (a paragraph, the
    /// outcome, the next turn's heading) starts a block of its own: without it Markdown reads a
    /// paragraph as the last bullet's continuation. Bullets are the only lines that end in a
    /// single newline.
    fn end_tool_list(&mut self) {
        if !self.transcript.is_empty() && !self.transcript.ends_with("\n\n") {
            self.transcript.push('\n');
        }
    }

    /// Asks the user about a call, in the background so that events keep flowing.
    fn ask_approval(&mut self, update: ToolCallUpdate) {
        let client = self.host.client.clone();
        let answers = self.approvals.clone();
        if self.host.support().tandem.request_approval {
            let mut tool_call = serde_json::to_value(&update).unwrap_or(Value::Null);
            add_uris(&mut tool_call);
            if let Value::Object(fields) = &mut tool_call {
                fields.insert("type".to_owned(), json!("toolCall"));
            }
            let params = approvals::request_params(&self.session_id, &self.turn_id, tool_call);
            approvals::ask_rich(client, params, update.call_id, answers);
        } else {
            approvals::ask_plain(client, &update, answers, Arc::clone(&self.told_cannot_ask));
        }
    }

    async fn finish(&mut self, reason: StopReason, message: Option<String>) {
        let final_answer = self.answer.trim().to_owned();
        self.flush_answer_to_transcript();
        self.end_tool_list();
        let outcome = outcome_line(reason, message.as_deref());
        if reason != StopReason::EndTurn {
            self.transcript.push_str(&format!("_{outcome}_\n\n"));
        }
        let event = Event::TurnFinished {
            stop_reason: reason,
            message: message.clone(),
        };
        if let Ok(value) = serde_json::to_value(&event) {
            self.send_event(value).await;
        }
        if let Some(token) = self.progress.take() {
            lock(&self.host.progress).remove(&token_key(&token));
            self.progress(
                &token,
                WorkDoneProgress::End(WorkDoneProgressEnd {
                    message: Some(outcome.clone()),
                }),
            )
            .await;
        }
        if !self.events {
            match message.as_deref() {
                Some(text)
                    if reason == StopReason::Error
                        && text.starts_with(tandem_providers::NOT_SET_UP) =>
                {
                    self.show_not_set_up(text).await;
                }
                _ => self.show_answer(reason, &outcome, &final_answer).await,
            }
        }
    }

    /// Plain clients: a model that cannot be used yet ("Tandem is not set up: …", from the
    /// settings or from the provider) in a message the first time, in the log after that.
    async fn show_not_set_up(&self, text: &str) {
        let client = &self.host.client;
        if lock(&self.host.told_not_set_up).insert(text.to_owned()) {
            client.show_message(MessageType::WARNING, text).await;
        } else {
            client.log_message(MessageType::WARNING, text).await;
        }
    }

    /// Plain clients: the answer in a message (short) and in the log (whole).
    async fn show_answer(&self, reason: StopReason, outcome: &str, full: &str) {
        let client = &self.host.client;
        if !full.is_empty() {
            client
                .log_message(MessageType::INFO, format!("Tandem:\n{full}"))
                .await;
        }
        let (kind, text) = match reason {
            StopReason::EndTurn if full.is_empty() => (MessageType::INFO, outcome.to_owned()),
            StopReason::EndTurn => {
                let short = shorten(full, SHORT_ANSWER_CHARS);
                let more = if short.len() < full.len() {
                    " (the whole answer is in the output log; the command tandem.showTranscript opens the transcript)"
                } else {
                    ""
                };
                (MessageType::INFO, format!("Tandem: {short}{more}"))
            }
            StopReason::Cancelled => (MessageType::INFO, format!("Tandem: {outcome}")),
            _ => (MessageType::WARNING, format!("Tandem: {outcome}")),
        };
        client.show_message(kind, text).await;
    }
}

/// Sets up inline chat's overlay: the open document, the byte range, how to name it, and the
/// selection as an attachment.
fn scope_for(
    host: &AgentHost,
    editor: &Arc<dyn Editor>,
    target: &InlineTarget,
) -> std::result::Result<(Arc<ScopedEditor>, Document, String, Attachment), String> {
    let document = host.documents.get(&target.uri).ok_or_else(|| {
        format!(
            "inline chat works on open documents; {} is not open",
            target.uri
        )
    })?;
    let path = bridge::path_for_uri(&target.uri)
        .ok_or_else(|| format!("{} is not a local file", target.uri))?;
    let (start, end) = host.char_range(&document, target.range);
    let rope = document.rope();
    let bytes = rope.char_to_byte(start)..rope.char_to_byte(end);
    let shown = host.display(&target.uri);
    let first = rope.char_to_line(start) + 1;
    let last = rope.char_to_line(end) + 1;
    let shown_range = format!("lines {first}-{last} of {shown}");
    let scoped = Arc::new(ScopedEditor::new(
        editor.clone(),
        path,
        document.text(),
        Some(document.version()),
        bytes,
        shown_range.clone(),
    ));
    let text = rope.slice(start..end).to_string();
    let attachment = Attachment {
        label: format!("Selection in {shown} (lines {first}-{last})"),
        shown: bridge::shown_file(
            &target.uri,
            &document,
            Some(document.version()),
            Some((first, last)),
            &text,
        ),
        text: cap_text(text),
    };
    Ok((scoped, document, shown_range, attachment))
}

/// Sends inline chat's result as one workspace edit. `Some(problem)` when it did not land.
async fn deliver_inline(
    host: &AgentHost,
    scoped: &ScopedEditor,
    uri: &Url,
    document: &Document,
    shown_range: &str,
    propose: bool,
) -> Option<String> {
    let new_text = scoped.proposed_text()?;
    if !host.support().apply_edit || !host.support().document_changes {
        return Some(
            "this editor does not accept versioned workspace edits, so the inline change was \
             not applied"
                .to_owned(),
        );
    }
    let label = format!("Tandem: inline edit of {shown_range}");
    let edit = inline::final_edit(
        uri,
        document,
        &new_text,
        host.encoding(),
        &host.support(),
        &label,
        propose,
    );
    let params = ApplyWorkspaceEditParams {
        label: Some(label),
        edit,
    };
    match host
        .client
        .send_request::<lsp::request::ApplyWorkspaceEdit>(params)
        .await
    {
        Ok(response) if response.applied => None,
        Ok(response) => Some(format!(
            "the inline edit was not applied ({}); the document may have changed while Tandem worked — run it again",
            response
                .failure_reason
                .unwrap_or_else(|| "the editor gave no reason".to_owned())
        )),
        Err(error) => Some(format!("the inline edit could not be sent: {error}")),
    }
}

/// Removes a `tandem:` instruction comment once its turn is done, if it is still there. A
/// removal the editor refuses because the user typed meanwhile is worked out again on their
/// text, a few times.
async fn remove_instruction_comment(host: &AgentHost, comment: &InstructionComment) {
    if !host.support().apply_edit || !host.support().document_changes {
        return;
    }
    for _ in 0..tandem_agent::tools::MAX_STALE_RETRIES {
        let Some(document) = host.documents.get(&comment.uri) else {
            return;
        };
        let Some(edit) = actions::remove_comment(&document, comment, host.encoding()) else {
            return;
        };
        let version = document.version();
        let change = lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                uri: comment.uri.clone(),
                version: Some(version),
            },
            edits: vec![lsp::OneOf::Left(edit)],
        };
        let edit = lsp::WorkspaceEdit {
            document_changes: Some(lsp::DocumentChanges::Edits(vec![change])),
            ..lsp::WorkspaceEdit::default()
        };
        let params = ApplyWorkspaceEditParams {
            label: Some("Tandem: remove the instruction comment".to_owned()),
            edit,
        };
        let response = host
            .client
            .send_request::<lsp::request::ApplyWorkspaceEdit>(params)
            .await;
        let moved_on = || host.documents.get(&comment.uri).map(|d| d.version()) != Some(version);
        let arrived = host
            .revisions
            .wait_until(bridge::PENDING_CHANGE_WAIT, moved_on)
            .await;
        match response {
            Ok(response) if response.applied => return,
            Ok(_) if arrived => {
                debug!("the user typed before the instruction comment's removal; trying again")
            }
            Ok(_) => return debug!("the editor kept the instruction comment"),
            Err(error) => return debug!("could not remove the instruction comment: {error}"),
        }
    }
}

/// Which settings a session runs with: the editor's (by generation) and the two files (by
/// modification time), so that editing either file takes effect from the next turn.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SettingsVersion {
    editor: u64,
    user_file: Option<SystemTime>,
    workspace_file: Option<SystemTime>,
}

impl AgentHost {
    fn settings_version(&self, root: &Path) -> SettingsVersion {
        let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
        SettingsVersion {
            editor: self.settings_generation.load(Ordering::SeqCst),
            user_file: self.user_settings.as_deref().and_then(modified),
            workspace_file: modified(&tandem_providers::settings::workspace_settings_path(root)),
        }
    }
}

/// Gives the event's paths a `uri` beside them, for editors.
fn add_uris(value: &mut Value) {
    let with_uri = |item: &mut Value| {
        let uri = item
            .get("path")
            .and_then(Value::as_str)
            .and_then(|path| Url::from_file_path(path).ok());
        if let (Some(uri), Value::Object(fields)) = (uri, item) {
            fields.insert("uri".to_owned(), json!(uri));
        }
    };
    if let Some(Value::Array(locations)) = value.get_mut("locations") {
        locations.iter_mut().for_each(with_uri);
    }
    if let Some(diff) = value.get_mut("diff") {
        with_uri(diff);
    }
}

fn no_session(id: &str) -> Error {
    Error::invalid_params(format!(
        "there is no session {id:?}; tandem/sessions lists them (resume a saved one with \
         tandem/resumeSession)"
    ))
}

/// Why there are no saved sessions to use.
fn not_saved(has_state_dir: bool) -> String {
    if has_state_dir {
        "sessions are not saved in this workspace (the setting sessions.persist is false), so \
         there is none to resume"
            .to_owned()
    } else {
        "this server saves no sessions (it has no state directory; set TANDEM_STATE_DIR), so \
         there is none to resume"
            .to_owned()
    }
}

fn internal(message: String) -> Error {
    let mut error = Error::internal_error();
    error.message = message.into();
    error
}

fn outcome_line(reason: StopReason, message: Option<&str>) -> String {
    let detail = message.map(|m| format!(": {m}")).unwrap_or_default();
    match reason {
        StopReason::EndTurn => {
            message.map_or_else(|| "Done".to_owned(), |m| format!("Done, but {m}"))
        }
        StopReason::Cancelled => format!("Cancelled{detail}"),
        StopReason::MaxTurns => format!("Stopped{detail}"),
        StopReason::LoopDetected | StopReason::ResponseLimit => format!("Stopped{detail}"),
        StopReason::Error => format!("Failed{detail}"),
    }
}

fn transcript_path(root: &Path, started: u64, session: &str) -> PathBuf {
    root.join(".tandem")
        .join("transcripts")
        .join(format!("{started}-{session}.md"))
}

/// Appends to a file under `root`'s `.tandem/`, resolved through the sandbox and opened without
/// following symbolic links, so a `.tandem` that links out of the workspace gets nothing.
fn append_file(root: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use tandem_agent::files::{self, Open};
    let workspace = tandem_agent::Workspace::new(vec![root.to_path_buf()], Vec::new());
    let resolved = workspace
        .resolve(&path.to_string_lossy())
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::PermissionDenied, error))?;
    if let Some(dir) = resolved.parent() {
        if !dir.exists() {
            files::create_dir_all(dir, 0o777)?;
            // Transcripts are the user's, not the project's.
            match files::open(&dir.join(".gitignore"), Open::CreateNew, 0o666, 0o777) {
                Ok(mut gitignore) => gitignore.write_all(b"*\n")?,
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
    }
    files::open(&resolved, Open::Append, 0o666, 0o777)?.write_all(text.as_bytes())
}

fn token_key(token: &ProgressToken) -> String {
    match token {
        NumberOrString::Number(number) => format!("n:{number}"),
        NumberOrString::String(text) => format!("s:{text}"),
    }
}

fn from_position(position: lsp::Position) -> LineCol {
    LineCol::new(position.line, position.character)
}

fn cap_text(text: String) -> String {
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

fn first_line(text: &str, max_chars: usize) -> String {
    shorten(
        text.lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or(""),
        max_chars,
    )
}

fn shorten(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

fn log_warnings(warnings: &[String]) {
    for warning in warnings {
        warn!("{warning}");
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
    fn event_paths_get_uris_beside_them() {
        let mut event = json!({
            "type": "toolCall",
            "locations": [{"path": "/ws/src/lib.rs", "line": 3}],
            "diff": {"path": "/ws/src/lib.rs", "newText": "x"},
        });
        add_uris(&mut event);
        assert_eq!(event["locations"][0]["uri"], "file:///ws/src/lib.rs");
        assert_eq!(event["diff"]["uri"], "file:///ws/src/lib.rs");
        let mut relative = json!({"locations": [{"path": "src/lib.rs"}]});
        add_uris(&mut relative);
        assert_eq!(relative["locations"][0].get("uri"), None);
    }

    #[test]
    fn outcomes_and_caps_read_well() {
        assert_eq!(outcome_line(StopReason::EndTurn, None), "Done");
        assert_eq!(
            outcome_line(StopReason::Error, Some("no key")),
            "Failed: no key"
        );
        assert_eq!(outcome_line(StopReason::Cancelled, None), "Cancelled");
        let capped = cap_text("é".repeat(actions::MAX_ATTACHMENT_BYTES));
        assert!(capped.len() < actions::MAX_ATTACHMENT_BYTES + 100);
        assert!(capped.ends_with("more bytes not shown; read the file for the rest]"));
        assert_eq!(first_line("\n\n  hello\nworld", 3), "hel…");
    }
}
