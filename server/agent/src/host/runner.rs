//! One session's task: takes its queued turns in order, builds the `Session` on the first one
//! (new, or from a saved session), reconfigures it when the settings or the overrides changed,
//! runs each turn with the front end's hooks and sends its events to the turn's handle.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tandem_providers::CancellationToken;
use tokio::sync::mpsc;
use tracing::warn;

use crate::editor::Editor;
use crate::protocol::{ApprovalDecision, Attachment, Event, StopReason};
use crate::session::{Prompt, Session, TurnIo};
use crate::settings::AgentSettings;
use crate::setup;
use crate::skills::SkillSet;
use crate::store::{LoadedSession, SessionLog};

use super::transcript::TurnTranscript;
use super::{lock, Host, Overrides, SessionSpec, TurnEvent, TurnRequest};

/// A saved session to build on the runner's first turn.
pub(crate) type SavedSession = (LoadedSession, SessionLog);

/// What the host and the runner both see of a session.
#[derive(Default)]
pub(crate) struct SessionStatus {
    pub running: Option<(String, CancellationToken)>,
    pub queued: Vec<(String, CancellationToken)>,
    pub turns: usize,
    /// Its log file was made: the session can be resumed.
    pub saved: bool,
    /// What the front end asked to tell the model with the next prompt that goes to it
    /// (`Host::add_note`), whatever starts that turn.
    pub notes: Vec<Attachment>,
    /// Where the answers to each queued or running turn's approval requests go, by turn id,
    /// for `Host::approve` (any front end may answer); removed when the turn ends.
    pub approvals: HashMap<String, mpsc::UnboundedSender<(String, ApprovalDecision)>>,
}

impl SessionStatus {
    pub fn busy(&self) -> bool {
        self.running.is_some() || !self.queued.is_empty()
    }

    /// Cancels the running and queued turns, or only `turn_id`. Whether anything was.
    pub fn cancel(&self, turn_id: Option<&str>) -> bool {
        let mut cancelled = false;
        for (id, token) in self.running.iter().chain(&self.queued) {
            let chosen = turn_id.is_none_or(|turn_id| id == turn_id);
            if chosen && !token.is_cancelled() {
                token.cancel();
                cancelled = true;
            }
        }
        cancelled
    }
}

/// A turn waiting for its session.
pub(crate) struct QueuedTurn {
    pub turn_id: String,
    /// Who queued it (`Host::prompt_from`), for the watchers.
    pub origin: Option<String>,
    pub request: TurnRequest,
    pub cancel: CancellationToken,
    pub events: mpsc::UnboundedSender<TurnEvent>,
    pub approvals: mpsc::UnboundedReceiver<(String, ApprovalDecision)>,
}

/// Where a turn's events go: its handle, and every front end watching its session.
struct TurnSink {
    host: Arc<Host>,
    session_id: String,
    turn_id: String,
    origin: Option<String>,
    events: mpsc::UnboundedSender<TurnEvent>,
}

impl TurnSink {
    fn send(&self, event: TurnEvent) {
        self.host.broadcast(
            &self.session_id,
            &self.turn_id,
            self.origin.as_deref(),
            &event,
        );
        // The front end that queued it may have gone; the turn goes on for the others.
        let _ = self.events.send(event);
    }
}

/// Which settings a session runs with: the front end's (by generation), the two files (by
/// modification time) and the session's overrides, so that a change to any of them takes
/// effect from the next turn.
#[derive(Debug, Clone, PartialEq)]
struct SettingsVersion {
    front_end: u64,
    user_file: Option<SystemTime>,
    workspace_file: Option<SystemTime>,
    overrides: Overrides,
}

pub(crate) struct SessionRunner {
    host: Arc<Host>,
    id: String,
    spec: SessionSpec,
    status: Arc<Mutex<SessionStatus>>,
    overrides: Arc<Mutex<Overrides>>,
    transcript: Option<PathBuf>,
    session: Option<Session>,
    /// The skills the session found when it was built: named in its system prompt, which a
    /// reload of the settings builds again.
    skills: Arc<SkillSet>,
    /// A resumed session's saved state, until `prepare` builds the session from it.
    saved: Option<SavedSession>,
    /// The settings the session was configured with.
    settings_seen: Option<SettingsVersion>,
    editor: Option<Arc<dyn Editor>>,
    settings: Option<AgentSettings>,
}

impl SessionRunner {
    pub(crate) fn new(
        host: Arc<Host>,
        id: String,
        spec: SessionSpec,
        status: Arc<Mutex<SessionStatus>>,
        overrides: Arc<Mutex<Overrides>>,
        transcript: Option<PathBuf>,
        saved: Option<SavedSession>,
    ) -> Self {
        SessionRunner {
            host,
            id,
            spec,
            status,
            overrides,
            transcript,
            session: None,
            skills: Arc::default(),
            saved,
            settings_seen: None,
            editor: None,
            settings: None,
        }
    }

    pub(crate) async fn run(mut self, mut turns: mpsc::UnboundedReceiver<QueuedTurn>) {
        while let Some(turn) = turns.recv().await {
            let turn_id = turn.turn_id.clone();
            {
                let mut status = lock(&self.status);
                status.queued.retain(|(id, _)| *id != turn_id);
                status.running = Some((turn_id.clone(), turn.cancel.clone()));
            }
            let events = self.turn(turn).await;
            {
                let mut status = lock(&self.status);
                status.running = None;
                status.turns += 1;
                status.approvals.remove(&turn_id);
            }
            // The handle's stream ends once the session is idle again, so a front end that
            // read it to its end finds the session ready for its next request.
            drop(events);
        }
        // The queue closed: the session was closed or the host is going away.
        if let Some(session) = &self.session {
            session.end_hooks("exit").await;
        }
    }

    fn root(&self) -> PathBuf {
        self.spec.roots.first().cloned().unwrap_or_default()
    }

    fn settings_version(&self, root: &Path) -> SettingsVersion {
        let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
        SettingsVersion {
            front_end: self.host.settings_generation.load(Ordering::SeqCst),
            user_file: self
                .host
                .options
                .user_settings
                .as_deref()
                .and_then(modified),
            workspace_file: modified(&tandem_providers::settings::workspace_settings_path(root)),
            overrides: lock(&self.overrides).clone(),
        }
    }

    /// Builds the session on its first turn, and reconfigures it when the settings changed.
    fn prepare(&mut self) -> std::result::Result<(), String> {
        let root = self.root();
        let version = self.settings_version(&root);
        if self.session.is_some() && self.settings_seen.as_ref() == Some(&version) {
            return Ok(());
        }
        let frontend = self.spec.frontend.clone();
        let (settings, model) =
            self.host
                .configure(&root, frontend.as_ref(), &version.overrides)?;
        let model_name = model.config().model.clone();
        let editor = frontend.editor(&settings.edits);
        let mcp = self.host.mcp(
            &self.spec.roots,
            &settings,
            &self.spec.mcp_servers,
            frontend.as_ref(),
        );
        match &mut self.session {
            Some(session) => {
                let (mut config, warnings) = setup::agent_config(
                    session.tool_context(),
                    &self.skills,
                    &settings,
                    Some(model.config()),
                )?;
                config.hooks.session_id = self.id.clone();
                config.mcp_start_wait = self.host.mcp_start_wait();
                warnings
                    .iter()
                    .for_each(|warning| frontend.warning(warning));
                session.set_model(model);
                session.set_config(config);
                session.set_editor(editor.clone());
                session.set_mcp(mcp);
            }
            None => {
                let user_dir = self
                    .host
                    .options
                    .user_settings
                    .as_deref()
                    .and_then(Path::parent);
                let (mut ctx, skills) = setup::session_context(
                    self.spec.roots.clone(),
                    &settings,
                    editor.clone(),
                    user_dir,
                );
                ctx.index = self.host.index.clone();
                ctx.terminal = frontend.terminal();
                ctx.language_servers = self.host.options.language_servers.clone();
                let (mut config, warnings) =
                    setup::agent_config(&ctx, &skills, &settings, Some(model.config()))?;
                config.hooks.session_id = self.id.clone();
                config.mcp_start_wait = self.host.mcp_start_wait();
                warnings
                    .iter()
                    .for_each(|warning| frontend.warning(warning));
                let (tools, tool_warnings) =
                    setup::session_tools_and_warnings(&ctx, &skills, &settings);
                tool_warnings
                    .iter()
                    .for_each(|warning| frontend.warning(warning));
                let mut session = match self.saved.take() {
                    Some((loaded, log)) => {
                        lock(&self.status).saved = true;
                        Session::resume(model, tools, ctx, config, &loaded, log)
                    }
                    None => {
                        let mut session = Session::new(model, tools, ctx, config);
                        self.start_log(&mut session, &settings, &root, &model_name);
                        session
                    }
                };
                session.set_mcp(mcp);
                self.session = Some(session);
                self.skills = skills;
            }
        }
        self.editor = Some(editor);
        self.settings = Some(settings);
        self.settings_seen = Some(version);
        Ok(())
    }

    /// Runs one turn; returns its event sender, for the caller to close once the session's
    /// status says the turn is over.
    async fn turn(&mut self, queued: QueuedTurn) -> mpsc::UnboundedSender<TurnEvent> {
        let QueuedTurn {
            turn_id,
            origin,
            request,
            cancel,
            events,
            approvals,
        } = queued;
        let sink = TurnSink {
            host: self.host.clone(),
            session_id: self.id.clone(),
            turn_id: turn_id.clone(),
            origin,
            events,
        };
        self.play(turn_id, request, cancel, &sink, approvals).await;
        sink.events
    }

    async fn play(
        &mut self,
        turn_id: String,
        request: TurnRequest,
        cancel: CancellationToken,
        events: &TurnSink,
        mut approvals: mpsc::UnboundedReceiver<(String, ApprovalDecision)>,
    ) {
        let TurnRequest {
            mut text,
            mut context,
            images,
            mut hooks,
        } = request;
        events.send(TurnEvent::Started { text: text.clone() });
        let root = self.root();
        let mut transcript = self
            .transcript
            .as_deref()
            .map(|path| TurnTranscript::start(&root, path, &text));
        let finish =
            |reason: StopReason, message: Option<String>, transcript: Option<TurnTranscript>| {
                if let Some(transcript) = transcript {
                    transcript.finish(reason, message.as_deref());
                }
                events.send(TurnEvent::Agent(Event::TurnFinished {
                    stop_reason: reason,
                    message,
                }));
            };

        if cancel.is_cancelled() {
            return finish(StopReason::Cancelled, None, transcript);
        }
        if let Err(message) = self.prepare() {
            warn!(session = self.id, "cannot start the turn: {message}");
            let message = format!("{}: {message}", tandem_providers::NOT_SET_UP);
            return finish(StopReason::Error, Some(message), transcript);
        }
        let (Some(session), Some(editor), Some(settings)) = (
            self.session.as_mut(),
            self.editor.clone(),
            self.settings.as_ref(),
        ) else {
            return;
        };
        let mut narrowed = false;
        if let Some(hooks) = hooks.as_mut() {
            match hooks.start(settings, &editor, &mut text, &mut context) {
                Ok(Some(turn_editor)) => {
                    session.set_editor(turn_editor);
                    narrowed = true;
                }
                Ok(None) => {}
                Err(message) => return finish(StopReason::Error, Some(message), transcript),
            }
        }

        // A prompt Tandem answers itself (`/compress`) never reaches the model: the notes wait.
        if !session.answers_itself(&text) {
            context.append(&mut lock(&self.status).notes);
        }

        let ide = self.spec.frontend.ide_state();
        let (agent_tx, mut agent_rx) = mpsc::unbounded_channel();
        let run = async {
            let mut io = TurnIo {
                events: &agent_tx,
                approvals: &mut approvals,
                cancel: cancel.clone(),
            };
            let reason = session
                .run_turn(
                    Prompt {
                        text,
                        context,
                        images,
                        ide,
                        turn_id: Some(turn_id.clone()),
                    },
                    &mut io,
                )
                .await;
            drop(io);
            drop(agent_tx);
            reason
        };
        let forward = async {
            let mut finished = None;
            while let Some(event) = agent_rx.recv().await {
                if let Event::TurnFinished {
                    stop_reason,
                    message,
                } = event
                {
                    finished = Some((stop_reason, message));
                    continue;
                }
                if let Some(transcript) = transcript.as_mut() {
                    transcript.event(&event);
                }
                events.send(TurnEvent::Agent(event));
            }
            finished
        };
        let (_, finished) = tokio::join!(run, forward);
        let (reason, mut message) = finished.unwrap_or((StopReason::Error, None));
        if narrowed {
            session.set_editor(editor);
        }
        if let Some(hooks) = hooks.as_mut() {
            if let Some(problem) = hooks.finish(reason).await {
                message = Some(problem);
            }
        }
        finish(reason, message, transcript);
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
        let Some(state_dir) = self.host.options.state_dir.as_deref() else {
            return;
        };
        let Some(store) = setup::session_store(settings, root, Some(state_dir)) else {
            return;
        };
        match store.create(&self.id, root, model_name) {
            Ok(log) => {
                session.set_log(log);
                lock(&self.status).saved = true;
            }
            Err(error) => self.spec.frontend.warning(&format!(
                "this session is not saved, so it cannot be resumed later: {error}"
            )),
        }
    }
}
