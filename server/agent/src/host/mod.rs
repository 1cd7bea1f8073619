//! The session host every front end shares: `tandem lsp`, `tandem acp` and `tandem ask` each
//! translate their wire protocol to and from this API and keep no session management of their
//! own.
//!
//! A `Host` holds the live sessions. Each session is a task (`runner.rs`) that runs its turns
//! one after another: a prompt sent while a turn runs waits its turn. Sessions are built on
//! their first turn from the settings (the user's file, the workspace's file, then what the
//! front end sent, `set_editor_settings`), and rebuilt from the next turn whenever any of those
//! change. A turn's events come back on its `TurnHandle`, approvals go back on the same handle,
//! and cancelling is by session (and turn) id. Several front ends may share a session (a
//! terminal attached to `tandem lsp`): `watch` shows each of them the turns the others queued
//! (`prompt_from` says who), and `approve` takes an approval from any of them, the first
//! answer winning. Sessions are saved as they run where the
//! settings allow it (`store.rs`); `resume` brings a saved one back and hands its turns over for
//! the front end to replay. Front ends plug in through `Frontend` (how a session's tools see
//! files, what the IDE shows) and, per turn, `TurnHooks` (inline chat narrows the editor and
//! delivers the result).
//!
//! Nothing here blocks the caller: `prompt` queues and answers at once; waiting for the model,
//! a tool or the user happens in the session's task.

mod completion;
mod runner;
mod text;
mod transcript;
mod types;

pub use text::{first_line, outcome_line, shorten};

pub use types::*;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tandem_providers::settings::Loaded;
use tandem_providers::{CancellationToken, Model};
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::mcp::{McpManager, McpServerSettings, McpServerStatus, McpStartContext};
use crate::protocol::{ApprovalDecision, Attachment};
use crate::settings::AgentSettings;
use crate::setup;
use crate::store::{self, SessionStore, StoreError};

use runner::{QueuedTurn, SessionRunner, SessionStatus};

/// Which MCP manager a session uses: its roots, and the servers its front end added.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct McpKey {
    roots: Vec<PathBuf>,
    /// `SessionSpec::mcp_servers`, serialised.
    extra: String,
}

#[derive(Clone)]
struct SessionEntry {
    id: String,
    title: String,
    roots: Vec<PathBuf>,
    queue: mpsc::UnboundedSender<QueuedTurn>,
    status: Arc<Mutex<SessionStatus>>,
    overrides: Arc<Mutex<Overrides>>,
    transcript: Option<PathBuf>,
}

/// The sessions of one process and what they share.
pub struct Host {
    options: HostOptions,
    /// Tags of the workspace's files, shared by every session so that each file is parsed once.
    index: Arc<tandem_syntax::SymbolIndex>,
    /// The sets of roots indexed in the background so far (once each: sessions' refreshes keep
    /// the index current after that).
    indexed_roots: Mutex<Vec<Vec<PathBuf>>>,
    /// What background indexing is doing, for `index_status`.
    indexing: Arc<Mutex<crate::symbols::BackgroundIndexing>>,
    /// The background indexings started, whose tags are saved as they stand when the front
    /// end ends before they finish.
    index_progress: Mutex<Vec<Arc<crate::symbols::IndexProgress>>>,
    /// MCP servers, by workspace roots and the servers a front end added (ACP's
    /// `session/new`): started when the first session needs them and shared by every session
    /// with the same key.
    mcp: Mutex<HashMap<McpKey, Arc<McpManager>>>,
    /// Settings from the front end: trusted ones (where the user starts it), then ones that may
    /// come from the project's own files (an editor's workspace configuration).
    front_end_settings: RwLock<(Value, Value)>,
    /// Bumped whenever the front end's settings change; sessions reload when they see a new one.
    settings_generation: AtomicU64,
    sessions: Mutex<Vec<SessionEntry>>,
    next_session: AtomicU64,
    next_turn: AtomicU64,
    /// Distinguishes this process's transcripts from earlier ones in the same workspace.
    started: u64,
    /// The sessions' runner tasks, for `end_sessions` to wait for (their `SessionEnd` hooks).
    runners: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Inline completions: the model, the running request per document, the last suggestion.
    completions: crate::completion::Completions,
    /// The settings completions were last served with.
    completion_config: Mutex<Option<completion::CompletionConfig>>,
    /// Front ends following turns (`watch`): of one session, or of every session (`None`).
    watchers: Mutex<Vec<(Option<String>, mpsc::UnboundedSender<WatchedEvent>)>>,
}

impl Host {
    pub fn new(options: HostOptions) -> Arc<Host> {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        Arc::new(Host {
            options,
            index: Arc::default(),
            indexed_roots: Mutex::default(),
            indexing: Arc::default(),
            index_progress: Mutex::default(),
            mcp: Mutex::default(),
            front_end_settings: RwLock::new((Value::Null, Value::Null)),
            settings_generation: AtomicU64::new(0),
            sessions: Mutex::new(Vec::new()),
            next_session: AtomicU64::new(1),
            next_turn: AtomicU64::new(1),
            started,
            runners: Mutex::default(),
            completions: crate::completion::Completions::default(),
            completion_config: Mutex::default(),
            watchers: Mutex::default(),
        })
    }

    /// Follows the turns of session `session_id` (`None`: of every session, those started
    /// later included), whoever queued them: each event of each turn, with the turn's id and
    /// origin (`prompt_from`), from the next event on. A watcher joining mid-turn sees the rest
    /// of that turn without its `Started`. Dropping the receiver stops it. This is how a front
    /// end shows what another one attached to the same session asked (`tandem lsp`'s attach).
    pub fn watch(&self, session_id: Option<&str>) -> Result<mpsc::UnboundedReceiver<WatchedEvent>> {
        if let Some(id) = session_id {
            if self.entry(id).is_none() {
                return Err(HostError::NoSession(id.to_owned()));
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let mut watchers = lock(&self.watchers);
        watchers.retain(|(_, watcher)| !watcher.is_closed());
        watchers.push((session_id.map(str::to_owned), tx));
        Ok(rx)
    }

    /// Sends one event of a turn to the watchers of its session.
    pub(crate) fn broadcast(
        &self,
        session_id: &str,
        turn_id: &str,
        origin: Option<&str>,
        event: &TurnEvent,
    ) {
        let mut watchers = lock(&self.watchers);
        if watchers.is_empty() {
            return;
        }
        watchers.retain(|(session, watcher)| {
            if session
                .as_deref()
                .is_some_and(|session| session != session_id)
            {
                return !watcher.is_closed();
            }
            watcher
                .send(WatchedEvent {
                    session_id: session_id.to_owned(),
                    turn_id: turn_id.to_owned(),
                    origin: origin.map(str::to_owned),
                    event: event.clone(),
                })
                .is_ok()
        });
    }

    /// Answers an approval request of a running turn from any front end, not only the one that
    /// queued it (its `TurnHandle`): the first answer for a call is the one the turn takes, a
    /// later one is ignored. Whether the turn was there to take it (`false`: it has ended).
    pub fn approve(
        &self,
        session_id: &str,
        turn_id: &str,
        call_id: &str,
        decision: ApprovalDecision,
    ) -> Result<bool> {
        let entry = self
            .entry(session_id)
            .ok_or_else(|| HostError::NoSession(session_id.to_owned()))?;
        let sender = lock(&entry.status).approvals.get(turn_id).cloned();
        Ok(sender.is_some_and(|sender| sender.send((call_id.to_owned(), decision)).is_ok()))
    }

    /// Starts indexing the workspace `roots` in the background, once per set of roots: front
    /// ends call it as soon as they know the workspace (the editor's `initialized`, a session's
    /// start), so that the first prompt's repo map finds the index warm. The tags are kept in
    /// the state directory, so a new process starts from them. Returns where the indexing's
    /// stats arrive once its tags are saved; `None` when it was started before or the settings
    /// turn the map off.
    pub fn index_in_background(
        &self,
        roots: &[PathBuf],
    ) -> Option<std::sync::mpsc::Receiver<tandem_syntax::IndexStats>> {
        // As the sessions' workspaces name them.
        let roots: Vec<PathBuf> = roots
            .iter()
            .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()))
            .collect();
        let root = roots.first()?;
        {
            let mut indexed = lock(&self.indexed_roots);
            if indexed.contains(&roots) {
                return None;
            }
            indexed.push(roots.clone());
        }
        // Warnings about the settings are the session's to report, when it starts.
        let settings = Loaded::load(self.options.user_settings.as_deref(), Some(root))
            .ok()
            .and_then(|mut loaded| {
                let (trusted, from_project) = read(&self.front_end_settings).clone();
                loaded.overlay(trusted).ok()?;
                loaded
                    .overlay_from_project(from_project, "the editor's `tandem` settings section")
                    .ok()?;
                AgentSettings::from_loaded(&loaded).ok()
            })
            .unwrap_or_default();
        let (syntax, persist) = (settings.syntax, settings.sessions.persist);
        if syntax.repo_map_tokens == 0 {
            return None;
        }
        // `sessions.persist: false` means nothing of the workspace is written to the state
        // directory, its tags included.
        let tags = self
            .options
            .state_dir
            .as_deref()
            .filter(|_| persist)
            .map(|state_dir| crate::symbols::tags_path(state_dir, &roots));
        let indexing = crate::symbols::index_in_background(
            self.index.clone(),
            roots.clone(),
            syntax.max_indexed_files,
            tags,
            Arc::clone(&self.indexing),
        )?;
        lock(&self.index_progress).push(indexing.progress);
        Some(indexing.finished)
    }

    /// The symbol index as it stands: how many files it holds, whether the latest update
    /// parsed everything that changed, and what background indexing is doing.
    pub fn index_status(&self) -> IndexStatus {
        IndexStatus {
            files: self.index.len(),
            complete: !self.index.is_incomplete(),
            background: lock(&self.indexing).clone(),
        }
    }

    fn has_state_dir(&self) -> bool {
        self.options.state_dir.is_some()
    }

    /// Settings where the user starts the front end (an editor's `initializationOptions`):
    /// trusted like the user's file.
    pub fn set_trusted_settings(&self, settings: Value) {
        write(&self.front_end_settings).0 = settings;
        self.settings_generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Settings that may come from the project's own files (an editor's workspace
    /// configuration): they may not choose endpoints or keys outside a trusted folder.
    pub fn set_project_settings(&self, settings: Value) {
        write(&self.front_end_settings).1 = settings;
        self.settings_generation.fetch_add(1, Ordering::SeqCst);
        info!("settings changed; sessions use them from their next turn");
    }

    /// The user's file, the workspace's file, then the front end's settings on top.
    fn load_settings(
        &self,
        root: &Path,
        frontend: &dyn Frontend,
    ) -> std::result::Result<Loaded, String> {
        let mut loaded = Loaded::load(self.options.user_settings.as_deref(), Some(root))
            .map_err(|error| error.to_string())?;
        for warning in &loaded.warnings {
            frontend.warning(warning);
        }
        let (trusted, from_project) = read(&self.front_end_settings).clone();
        loaded.overlay(trusted).map_err(|error| error.to_string())?;
        let before = loaded.warnings.len();
        loaded
            .overlay_from_project(from_project, "the editor's `tandem` settings section")
            .map_err(|error| error.to_string())?;
        for warning in &loaded.warnings[before..] {
            frontend.warning(warning);
        }
        Ok(loaded)
    }

    /// Settings and model as a session in `root` with `overrides` would run with them.
    fn configure(
        &self,
        root: &Path,
        frontend: &dyn Frontend,
        overrides: &Overrides,
    ) -> std::result::Result<(AgentSettings, Model), String> {
        let loaded = self.load_settings(root, frontend)?;
        let mut settings = AgentSettings::from_loaded(&loaded)?;
        if let Some(mode) = overrides.approval_mode {
            settings.approval.mode = mode;
        }
        if let Some(max_turns) = overrides.max_turns {
            settings.max_turns = max_turns;
        }
        let env = |name: &str| std::env::var(name).ok();
        let model = loaded
            .resolve_model(overrides.model.as_deref(), &env)
            .and_then(|mut config| {
                if let Some(record) = &overrides.record {
                    config.record = Some(record.clone());
                }
                Model::new(config)
            })
            .map_err(|error| error.to_string())?;
        Ok((settings, model))
    }

    /// Whether a session with `spec` could run a turn: its settings (returned, overrides
    /// applied) and model, checked as its first turn will check them. For front ends that
    /// report set-up problems before starting.
    pub fn check(&self, spec: &SessionSpec) -> Result<AgentSettings> {
        let root = spec.roots.first().ok_or(HostError::NoWorkspace)?;
        self.configure(root, spec.frontend.as_ref(), &spec.overrides)
            .map(|(settings, _)| settings)
            .map_err(HostError::Settings)
    }

    /// The slash commands a session in the workspace `roots` offers (first root): the
    /// built-ins, the user's and the project's command files; with the files that could not be
    /// used, for the front end to show.
    pub fn commands(&self, roots: &[PathBuf]) -> (Vec<CommandInfo>, Vec<String>) {
        let user_dir = self.options.user_settings.as_deref().and_then(Path::parent);
        let dirs = setup::command_dirs(user_dir, roots.first().map(PathBuf::as_path));
        let mut set = crate::slash::CommandSet::load(&dirs);
        let managers: Vec<Arc<McpManager>> = lock(&self.mcp)
            .iter()
            .filter(|(key, _)| key.roots == roots)
            .map(|(_, manager)| manager.clone())
            .collect();
        for manager in managers {
            for prompt in manager.prompts() {
                set.add(crate::slash::McpPromptCommand::command(&prompt));
            }
        }
        (set.iter().map(CommandInfo::from).collect(), set.warnings)
    }

    /// The skills a session in the workspace `roots` would offer (first root; the project's
    /// only in a trusted workspace), sorted by name, with the problems met finding them.
    pub fn skills(
        &self,
        roots: &[PathBuf],
        frontend: &dyn Frontend,
    ) -> Result<crate::skills::SkillSet> {
        let root = roots.first().ok_or(HostError::NoWorkspace)?;
        let loaded = self
            .load_settings(root, frontend)
            .map_err(HostError::Settings)?;
        let settings = AgentSettings::from_loaded(&loaded).map_err(HostError::Settings)?;
        let user_dir = self.options.user_settings.as_deref().and_then(Path::parent);
        Ok(setup::skills(user_dir, Some(root), &settings))
    }

    /// The MCP servers of a session in `roots` with `settings`, started (in the background)
    /// if they are not running yet: the settings' `mcpServers` and `extra` (a front end's own,
    /// which win over a setting of the same name). `None` when there are none.
    pub(crate) fn mcp(
        &self,
        roots: &[PathBuf],
        settings: &AgentSettings,
        extra: &BTreeMap<String, McpServerSettings>,
        frontend: &dyn Frontend,
    ) -> Option<Arc<McpManager>> {
        let user_dir = self.options.user_settings.as_deref().and_then(Path::parent);
        let (mut servers, warnings) =
            setup::mcp_servers(user_dir, roots.first().map(PathBuf::as_path), settings);
        for warning in &warnings {
            frontend.warning(warning);
        }
        servers.extend(extra.iter().map(|(name, server)| {
            let mut server = server.clone();
            server
                .source
                .get_or_insert_with(|| "the front end".to_owned());
            (name.clone(), server)
        }));
        let key = McpKey {
            roots: roots.to_vec(),
            extra: serde_json::to_string(extra).unwrap_or_default(),
        };
        let manager = {
            let mut managers = lock(&self.mcp);
            match managers.get(&key) {
                Some(manager) => manager.clone(),
                None if servers.is_empty() => return None,
                None => {
                    let manager = McpManager::new();
                    managers.insert(key, manager.clone());
                    manager
                }
            }
        };
        let environment = crate::setup::shell_environment(
            settings,
            &crate::Workspace::new(roots.to_vec(), Vec::new()),
        );
        manager.apply(
            &servers,
            McpStartContext {
                roots: roots.to_vec(),
                environment: Arc::new(environment),
            },
        );
        Some(manager)
    }

    /// How a session's first prompt waits for MCP servers still starting, for this host's
    /// front end (`HostOptions::one_shot`).
    pub(crate) fn mcp_start_wait(&self) -> crate::mcp::StartWait {
        if self.options.one_shot {
            crate::mcp::StartWait::UntilStarted
        } else {
            crate::mcp::StartWait::AtMost(crate::session::MCP_FIRST_PROMPT_WAIT)
        }
    }

    /// The MCP servers of the workspace `roots` (those its settings configure, started now if
    /// no session started them), after waiting as `wait` says for those still starting.
    pub async fn mcp_statuses(
        &self,
        roots: &[PathBuf],
        frontend: &dyn Frontend,
        wait: crate::mcp::StartWait,
    ) -> Result<Vec<McpServerStatus>> {
        let root = roots.first().ok_or(HostError::NoWorkspace)?;
        let loaded = self
            .load_settings(root, frontend)
            .map_err(HostError::Settings)?;
        let settings = AgentSettings::from_loaded(&loaded).map_err(HostError::Settings)?;
        let Some(manager) = self.mcp(roots, &settings, &BTreeMap::new(), frontend) else {
            return Ok(Vec::new());
        };
        manager.wait_started(wait).await;
        Ok(manager.statuses())
    }

    /// The MCP servers sessions in `roots` started, as they are now (nothing is started).
    pub fn running_mcp_statuses(&self, roots: &[PathBuf]) -> Vec<McpServerStatus> {
        let managers: Vec<Arc<McpManager>> = lock(&self.mcp)
            .iter()
            .filter(|(key, _)| key.roots == roots)
            .map(|(_, manager)| manager.clone())
            .collect();
        managers
            .iter()
            .flat_map(|manager| manager.statuses())
            .collect()
    }

    /// Stops every MCP server this host started, and waits for their programs to exit.
    pub async fn shutdown_mcp(&self) {
        let managers: Vec<Arc<McpManager>> = lock(&self.mcp).drain().map(|(_, m)| m).collect();
        for manager in managers {
            manager.shutdown().await;
        }
    }

    /// The models configured for the workspace `roots` (first root).
    pub fn models(&self, roots: &[PathBuf], frontend: &dyn Frontend) -> Result<ModelChoices> {
        let root = roots.first().ok_or(HostError::NoWorkspace)?;
        let loaded = self
            .load_settings(root, frontend)
            .map_err(HostError::Settings)?;
        let names: Vec<String> = loaded.settings.models.keys().cloned().collect();
        let default = loaded
            .settings
            .model
            .clone()
            .or_else(|| match names.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            });
        Ok(ModelChoices { names, default })
    }

    /// Where the sessions of `root` are saved; `None` when they are not (no state directory,
    /// or `sessions.persist` is off).
    fn store(
        &self,
        root: &Path,
        frontend: &dyn Frontend,
    ) -> std::result::Result<Option<SessionStore>, String> {
        let Some(state_dir) = self.options.state_dir.as_deref() else {
            return Ok(None);
        };
        let loaded = self.load_settings(root, frontend)?;
        let settings = AgentSettings::from_loaded(&loaded)?;
        Ok(setup::session_store(&settings, root, Some(state_dir)))
    }

    /// The store for `roots`, or why there is none.
    fn required_store(&self, roots: &[PathBuf], frontend: &dyn Frontend) -> Result<SessionStore> {
        let root = roots.first().ok_or(HostError::NoWorkspace)?;
        self.store(root, frontend)
            .map_err(|message| {
                HostError::Invalid(format!("cannot read the saved sessions: {message}"))
            })?
            .ok_or(HostError::NotSaved {
                has_state_dir: self.has_state_dir(),
            })
    }

    pub fn new_session(self: &Arc<Self>, spec: SessionSpec) -> Result<String> {
        if spec.roots.is_empty() {
            return Err(HostError::NoWorkspace);
        }
        let number = self.next_session.fetch_add(1, Ordering::SeqCst);
        let id = store::new_session_id();
        let title = spec
            .title
            .clone()
            .unwrap_or_else(|| format!("Session {number}"));
        let entry = self.start_runner(id.clone(), title, 0, spec, None);
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
        spec: SessionSpec,
        saved: Option<runner::SavedSession>,
    ) -> SessionEntry {
        self.index_in_background(&spec.roots);
        let root = spec.roots.first().cloned().unwrap_or_default();
        let transcript = self
            .options
            .transcripts
            .then(|| transcript::transcript_path(&root, self.started, &id));
        let (queue, queued) = mpsc::unbounded_channel();
        let status = Arc::new(Mutex::new(SessionStatus {
            turns,
            ..SessionStatus::default()
        }));
        let overrides = Arc::new(Mutex::new(spec.overrides.clone()));
        let entry = SessionEntry {
            id: id.clone(),
            title,
            roots: spec.roots.clone(),
            queue,
            status: status.clone(),
            overrides: overrides.clone(),
            transcript: transcript.clone(),
        };
        let runner =
            SessionRunner::new(self.clone(), id, spec, status, overrides, transcript, saved);
        let task = tokio::spawn(runner.run(queued));
        let mut runners = lock(&self.runners);
        runners.retain(|task| !task.is_finished());
        runners.push(task);
        drop(runners);
        entry
    }

    /// The live sessions, then the saved ones of `roots`' workspace that are not live, most
    /// recently updated first.
    pub async fn sessions(&self, roots: &[PathBuf], frontend: &dyn Frontend) -> Vec<SessionInfo> {
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
                    root: entry.roots.first().cloned(),
                    transcript: entry.transcript.clone(),
                    updated_ms: None,
                }
            })
            .collect();
        let Some(root) = roots.first() else {
            return infos;
        };
        let store = match self.store(root, frontend) {
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
                root: Some(root.clone()),
                transcript: None,
                updated_ms: Some(summary.updated_ms),
            });
        }
        infos
    }

    /// The most recently saved session of `roots`' workspace.
    pub fn latest_saved(
        &self,
        roots: &[PathBuf],
        frontend: &dyn Frontend,
    ) -> Result<Option<String>> {
        let store = self.required_store(roots, frontend)?;
        store
            .latest()
            .map(|latest| latest.map(|summary| summary.id))
            .map_err(|error| HostError::Internal(error.to_string()))
    }

    /// A live session as it is, else the saved one brought back with its turns to replay.
    pub async fn resume(self: &Arc<Self>, id: &str, spec: SessionSpec) -> Result<Resumed> {
        if let Some(entry) = self.entry(id) {
            let turns = lock(&entry.status).turns;
            return Ok(Resumed {
                session_id: entry.id,
                title: entry.title,
                turns,
                replay: Vec::new(),
                warnings: Vec::new(),
                was_live: true,
            });
        }
        let store = self.required_store(&spec.roots, spec.frontend.as_ref())?;
        let wanted = id.to_owned();
        let (loaded, log) = tokio::task::spawn_blocking(move || store.open(&wanted))
            .await
            .map_err(|error| {
                HostError::Internal(format!("reading the saved session failed: {error}"))
            })??;
        for warning in &loaded.warnings {
            spec.frontend.warning(warning);
        }
        // Turn ids name checkpoints (`/restore <turnId>`), so new turns must not reuse the
        // saved ones.
        let last_turn = loaded
            .turns
            .iter()
            .filter_map(|turn| turn.turn_id.strip_prefix('t')?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        self.next_turn.fetch_max(last_turn + 1, Ordering::SeqCst);
        let title = spec.title.clone().unwrap_or_else(|| {
            loaded.turns.first().map_or_else(
                || format!("Session {}", loaded.id),
                |turn| first_line(&turn.text, 80),
            )
        });
        let resumed = Resumed {
            session_id: loaded.id.clone(),
            title: title.clone(),
            turns: loaded.turns.len(),
            replay: loaded.turns.clone(),
            warnings: loaded.warnings.clone(),
            was_live: false,
        };
        let mut sessions = lock(&self.sessions);
        // Another request may have resumed it meanwhile; one runner per session.
        if !sessions.iter().any(|entry| entry.id == resumed.session_id) {
            let entry = self.start_runner(
                resumed.session_id.clone(),
                title,
                resumed.turns,
                spec,
                Some((loaded, log)),
            );
            sessions.push(entry);
            info!(session = resumed.session_id, "resumed a saved session");
        }
        Ok(resumed)
    }

    /// Forgets a live session that is not running and deletes its saved file.
    pub async fn delete(&self, id: &str, roots: &[PathBuf], frontend: &dyn Frontend) -> Result<()> {
        let was_live = {
            let mut sessions = lock(&self.sessions);
            match sessions.iter().position(|entry| entry.id == id) {
                Some(index) => {
                    if lock(&sessions[index].status).busy() {
                        return Err(HostError::Busy(id.to_owned()));
                    }
                    // Its runner stops once the queue's last sender (this entry) is gone.
                    sessions.remove(index);
                    true
                }
                None => false,
            }
        };
        let store = match roots.first().map(|root| self.store(root, frontend)) {
            Some(Ok(store)) => store,
            Some(Err(message)) => {
                warn!("cannot read the saved sessions: {message}");
                None
            }
            None => None,
        };
        let Some(store) = store else {
            return if was_live {
                Ok(())
            } else {
                Err(HostError::NoSession(id.to_owned()))
            };
        };
        let wanted = id.to_owned();
        let deleted = tokio::task::spawn_blocking(move || store.delete(&wanted))
            .await
            .map_err(|error| {
                HostError::Internal(format!("deleting the saved session failed: {error}"))
            })?;
        match deleted {
            Ok(()) => {}
            // A live session that has not run a turn yet has no file.
            Err(StoreError::NotFound(_)) if was_live => {}
            Err(StoreError::NotFound(_) | StoreError::BadId(_)) => {
                return Err(HostError::NoSession(id.to_owned()))
            }
            Err(error) => return Err(HostError::Internal(error.to_string())),
        }
        info!(session = id, "deleted a session");
        Ok(())
    }

    /// Ends every live session (as `close` does) and waits for their runners to finish, with
    /// their `SessionEnd` hooks, up to `limit`: what a front end does before the process exits.
    /// Background indexing still running is not waited for: the tags it has so far are saved,
    /// and the next process goes on from them.
    pub async fn end_sessions(&self, limit: std::time::Duration) {
        let ids: Vec<String> = lock(&self.sessions)
            .iter()
            .map(|entry| entry.id.clone())
            .collect();
        for id in ids {
            let _ = self.close(&id);
        }
        let runners = std::mem::take(&mut *lock(&self.runners));
        let _ = tokio::time::timeout(limit, futures::future::join_all(runners)).await;
        let unfinished = lock(&self.index_progress).clone();
        let _ = tokio::task::spawn_blocking(move || {
            for progress in unfinished {
                progress.save_so_far();
            }
        })
        .await;
    }

    /// Stops serving a live session: its running and queued turns are cancelled and it leaves
    /// the list (its saved file stays, to resume).
    pub fn close(&self, id: &str) -> Result<()> {
        let entry = {
            let mut sessions = lock(&self.sessions);
            let index = sessions
                .iter()
                .position(|entry| entry.id == id)
                .ok_or_else(|| HostError::NoSession(id.to_owned()))?;
            sessions.remove(index)
        };
        lock(&entry.status).cancel(None);
        info!(session = id, "closed a session");
        Ok(())
    }

    fn entry(&self, id: &str) -> Option<SessionEntry> {
        lock(&self.sessions)
            .iter()
            .find(|entry| entry.id == id)
            .cloned()
    }

    /// The most recently started live session.
    pub fn latest(&self) -> Option<String> {
        lock(&self.sessions).last().map(|entry| entry.id.clone())
    }

    /// Whether `id` is a live session.
    pub fn is_live(&self, id: &str) -> bool {
        self.entry(id).is_some()
    }

    /// A live session's transcript file, once written.
    pub fn transcript(&self, id: &str) -> Result<Option<PathBuf>> {
        let entry = self
            .entry(id)
            .ok_or_else(|| HostError::NoSession(id.to_owned()))?;
        Ok(entry.transcript)
    }

    /// Whether a live session is being saved (its first turn started and its file was made).
    pub fn is_saved(&self, id: &str) -> bool {
        self.entry(id)
            .is_some_and(|entry| lock(&entry.status).saved)
    }

    /// Queues a turn; answers at once with its handle.
    pub fn prompt(self: &Arc<Self>, session_id: &str, turn: TurnRequest) -> Result<TurnHandle> {
        self.prompt_from(session_id, turn, None)
    }

    /// `prompt`, saying who queued the turn: watchers (`watch`) see `origin` on its events, so
    /// each front end can leave out the turns it follows through their handles.
    pub fn prompt_from(
        self: &Arc<Self>,
        session_id: &str,
        turn: TurnRequest,
        origin: Option<String>,
    ) -> Result<TurnHandle> {
        if turn.text.trim().is_empty() {
            return Err(HostError::EmptyPrompt);
        }
        let entry = self
            .entry(session_id)
            .ok_or_else(|| HostError::NoSession(session_id.to_owned()))?;
        let turn_id = format!("t{}", self.next_turn.fetch_add(1, Ordering::SeqCst));
        let cancel = CancellationToken::new();
        let (events_tx, events) = mpsc::unbounded_channel();
        let (approvals, approvals_rx) = mpsc::unbounded_channel();
        {
            let mut status = lock(&entry.status);
            status.queued.push((turn_id.clone(), cancel.clone()));
            status.approvals.insert(turn_id.clone(), approvals.clone());
        }
        let queued = QueuedTurn {
            turn_id: turn_id.clone(),
            origin,
            request: turn,
            cancel,
            events: events_tx,
            approvals: approvals_rx,
        };
        if entry.queue.send(queued).is_err() {
            lock(&entry.status).approvals.remove(&turn_id);
            return Err(HostError::Internal(format!(
                "session {session_id:?} has stopped"
            )));
        }
        Ok(TurnHandle {
            session_id: entry.id,
            turn_id,
            events,
            approvals,
        })
    }

    /// Keeps `note` for the session's next prompt that goes to the model, whatever starts it
    /// (the user rejected part of an edit in the editor, say); notes are attached after the
    /// turn's own context, in the order they came.
    pub fn add_note(&self, session_id: &str, note: Attachment) -> Result<()> {
        if note.text.trim().is_empty() {
            return Err(HostError::Invalid("a note needs text".to_owned()));
        }
        let entry = self
            .entry(session_id)
            .ok_or_else(|| HostError::NoSession(session_id.to_owned()))?;
        lock(&entry.status).notes.push(note);
        Ok(())
    }

    /// Cancels the session's running and queued turns, or only `turn_id`. Whether anything was.
    pub fn cancel(&self, session_id: &str, turn_id: Option<&str>) -> Result<bool> {
        let entry = self
            .entry(session_id)
            .ok_or_else(|| HostError::NoSession(session_id.to_owned()))?;
        let cancelled = lock(&entry.status).cancel(turn_id);
        Ok(cancelled)
    }

    /// Changes a live session's overrides; they apply from its next turn.
    pub fn set_overrides(
        &self,
        session_id: &str,
        change: impl FnOnce(&mut Overrides),
    ) -> Result<()> {
        let entry = self
            .entry(session_id)
            .ok_or_else(|| HostError::NoSession(session_id.to_owned()))?;
        change(&mut lock(&entry.overrides));
        Ok(())
    }

    /// A live session's overrides.
    pub fn overrides(&self, session_id: &str) -> Result<Overrides> {
        let entry = self
            .entry(session_id)
            .ok_or_else(|| HostError::NoSession(session_id.to_owned()))?;
        let overrides = lock(&entry.overrides).clone();
        Ok(overrides)
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
    fn the_index_status_says_what_background_indexing_did() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..3 {
            std::fs::write(
                dir.path().join(format!("m{n}.py")),
                format!("def f{n}():\n    return {n}\n"),
            )
            .unwrap();
        }
        let host = Host::new(HostOptions {
            user_settings: None,
            state_dir: None,
            transcripts: false,
            language_servers: None,
            one_shot: false,
        });
        assert_eq!(host.index_status().files, 0);
        assert_eq!(host.index_status().background.last, None);
        let roots = [dir.path().to_path_buf()];
        let stats = host.index_in_background(&roots).unwrap().recv().unwrap();
        assert_eq!(stats.parsed, 3);
        // Once per set of roots.
        assert!(host.index_in_background(&roots).is_none());

        let status = host.index_status();
        assert_eq!((status.files, status.complete), (3, true));
        assert_eq!(status.background.running, 0);
        let run = status.background.last.unwrap();
        assert_eq!((run.listed, run.loaded, run.parsed), (3, 0, 3));
        assert_eq!(run.roots, [std::fs::canonicalize(dir.path()).unwrap()]);
    }
}
