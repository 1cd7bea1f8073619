//! The ACP methods on the core's session host. Each handler answers from the dispatch loop
//! without waiting on anything slow: work that waits (a turn, a replay, reading saved
//! sessions) runs in a spawned task that answers the request when it is done, so the loop keeps
//! reading — `session/cancel` included — while a turn runs or a permission request waits for
//! the user. Sessions, turns, settings and saved sessions are the host's
//! (`tandem_agent::host`); this front end keeps only what ACP needs of each session
//! (`turn::SessionEntry`): its roots, the client's side of it, whether it was cancelled, and
//! its turns as a `session/load` replays them. Attached to an editor's host
//! (`ServeOptions::attach`), the sessions are the editor's: see `Attached`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::{self, schema as acp};
use agent_client_protocol::{Client, Error, ErrorCode};
use serde_json::json;
use tandem_agent::host::{
    CommandInfo, Frontend, Host, HostError, HostOptions, Overrides, SessionSpec,
};
use tandem_agent::mcp::McpServerSettings;
use tandem_agent::store::StoreError;
use tandem_agent::ApprovalMode;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::client::{AcpFrontend, ClientSide};
use crate::translate::{self, ModelOption};
use crate::turn::{self, SessionEntry};

/// How long a closing connection waits for its turns to stop (their commands killed) before
/// the process goes on exiting.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// What `serve` is given by the binary.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Serve the sessions of an existing host with its own front end (`tandem lsp`'s, for a
    /// front end attached to it: see `attach.rs`) instead of a host of this connection's with
    /// the client's files and terminal. The other fields are then unused: the host has its
    /// settings.
    pub attach: Option<Attached>,
    /// The user's settings file.
    pub user_settings: Option<PathBuf>,
    /// Where sessions are saved (and listed, loaded and resumed from); `None` saves none.
    pub state_dir: Option<PathBuf>,
    /// Write each session's Markdown transcript under the workspace's `.tandem/transcripts/`.
    pub transcripts: bool,
    /// Language servers that tell the agent's edits the errors they added (the client gives
    /// no diagnostics over ACP).
    pub language_servers: Option<Arc<dyn tandem_agent::diagnostics::LanguageServers>>,
}

/// The host and front end an attached connection serves (`ServeOptions::attach`).
///
/// Its sessions are the host's: `session/new` makes one with `frontend` (the tools write
/// through the editor, the turns see its IDE state), `session/list` marks the live ones, and
/// `session/load` / `session/resume` of a live one joins it: the connection then also sees
/// the turns other front ends queue there, and may answer their permission requests. Closing
/// the connection (or `session/close`) leaves the sessions running; only the turns this
/// connection queued are cancelled.
#[derive(Clone)]
pub struct Attached {
    pub host: Arc<Host>,
    pub frontend: Arc<dyn Frontend>,
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached").finish_non_exhaustive()
    }
}

/// Numbers the attached connections of a process, to tell their turns apart.
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// Shared by every handler of one connection.
pub(crate) struct Server {
    host: Arc<Host>,
    /// The host's own front end, when this connection is attached to it.
    attached: Option<Arc<dyn Frontend>>,
    /// This connection's number, in the origin its turns carry.
    number: u64,
    /// The client's name, from `initialize`.
    client_name: Mutex<Option<String>>,
    /// The tasks following the turns others queue in each joined session (attached only).
    following: Mutex<HashMap<String, JoinHandle<()>>>,
    /// The user's settings file, which `authenticate` reads to find the model to ask after.
    user_settings: Option<PathBuf>,
    /// The client's capabilities, from `initialize`.
    client: Mutex<acp::ClientCapabilities>,
    sessions: Mutex<HashMap<String, SessionEntry>>,
    /// The workspace of every session this connection has made, loaded, resumed or listed, so
    /// `session/delete` finds its store after the session was closed.
    known_roots: Mutex<HashMap<String, PathBuf>>,
    /// The tasks answering prompts, awaited when the connection closes.
    turns: Mutex<Vec<JoinHandle<()>>>,
    /// The commands last announced per session, so a change (an MCP server's prompts, a new
    /// command file) is announced again after a turn.
    announced: Mutex<HashMap<String, Vec<CommandInfo>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A JSON-RPC error with `code` and `message`.
fn error(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

pub(crate) fn invalid_params(message: impl Into<String>) -> Error {
    error(ErrorCode::INVALID_PARAMS, message)
}

fn session_not_found(id: &str) -> Error {
    error(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("there is no session {id:?} on this connection"),
    )
    .data(json!({"sessionId": id}))
}

/// The host's errors in JSON-RPC terms: an unknown session is `-32002` (ACP's resource not
/// found), settings or a model that cannot be used `-32000` (ACP's auth required, so clients
/// offer the auth method that says how to set Tandem up; the message says what is wrong), a bug
/// `-32603`, the rest `-32602`.
pub(crate) fn host_error(host_error: HostError) -> Error {
    let message = host_error.to_string();
    match host_error {
        HostError::NoSession(id) => session_not_found(&id),
        HostError::Store(StoreError::NotFound(id) | StoreError::BadId(id)) => {
            error(ErrorCode::RESOURCE_NOT_FOUND, message).data(json!({"sessionId": id}))
        }
        HostError::Settings(_) => error(ErrorCode::AUTH_REQUIRED, message),
        HostError::Internal(_) => error(ErrorCode::INTERNAL_ERROR, message),
        HostError::NoWorkspace
        | HostError::EmptyPrompt
        | HostError::Busy(_)
        | HostError::NotSaved { .. }
        | HostError::Store(_)
        | HostError::Invalid(_) => invalid_params(message),
    }
}

/// The id of the one auth method Tandem offers: it says how to set up a model.
const AUTH_METHOD: &str = "settings";

/// Why the default model, when Ollama serves it, cannot answer (`Tandem is not set up: …`): an
/// Ollama that does not run, or lacks the model. Nothing is asked of other servers: a hosted
/// one costs a request to find out, and the first prompt says soon enough.
async fn local_model_problem(
    user_settings: Option<&Path>,
    root: Option<&PathBuf>,
) -> Option<String> {
    let loaded =
        tandem_providers::settings::Loaded::load(user_settings, root.map(PathBuf::as_path)).ok()?;
    let env = |name: &str| std::env::var(name).ok();
    let config = loaded.resolve_model(None, &env).ok()?;
    config.ollama.as_ref()?;
    match tandem_providers::ollama::check_server(&config, AUTH_CHECK_WAIT).await {
        Err(error @ tandem_providers::ProviderError::NotSetUp { .. }) => Some(error.to_string()),
        Err(error) => {
            debug!("authenticate: could not ask Ollama: {error}");
            None
        }
        Ok(_) => None,
    }
}

/// How long `authenticate` waits for each answer of a local model server.
const AUTH_CHECK_WAIT: Duration = Duration::from_secs(5);

/// Sends `update` for `session`; a closed connection only loses it.
pub(crate) fn notify(
    cx: &v1::ConnectionTo<Client>,
    session: &acp::SessionId,
    update: acp::SessionUpdate,
) {
    if let Err(error) = cx.send_notification(acp::SessionNotification::new(session.clone(), update))
    {
        debug!("a session/update was not sent: {error}");
    }
}

/// Answers a request; an answer the connection cannot take any more is only logged.
fn respond<T: agent_client_protocol::JsonRpcResponse>(
    responder: v1::Responder<T>,
    result: Result<T, Error>,
) {
    if let Err(error) = responder.respond_with_result(result) {
        debug!("an answer was not sent: {error}");
    }
}

impl Server {
    pub(crate) fn new(options: ServeOptions) -> Arc<Server> {
        let user_settings = options.user_settings.clone();
        let (host, attached) = match options.attach {
            Some(attached) => (attached.host, Some(attached.frontend)),
            None => (
                Host::new(HostOptions {
                    user_settings: options.user_settings,
                    state_dir: options.state_dir,
                    transcripts: options.transcripts,
                    language_servers: options.language_servers,
                    one_shot: false,
                }),
                None,
            ),
        };
        Arc::new(Server {
            host,
            attached,
            number: CONNECTIONS.fetch_add(1, Ordering::SeqCst),
            client_name: Mutex::default(),
            following: Mutex::default(),
            user_settings,
            client: Mutex::new(acp::ClientCapabilities::new()),
            sessions: Mutex::default(),
            known_roots: Mutex::default(),
            turns: Mutex::default(),
            announced: Mutex::default(),
        })
    }

    fn entry(&self, id: &str) -> Result<SessionEntry, Error> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| session_not_found(id))
    }

    /// Keeps `task` to await when the connection closes (and forgets finished ones).
    fn track(&self, task: JoinHandle<()>) {
        let mut turns = lock(&self.turns);
        turns.retain(|turn| !turn.is_finished());
        turns.push(task);
    }

    pub(crate) fn initialize(
        &self,
        request: acp::InitializeRequest,
        responder: v1::Responder<acp::InitializeResponse>,
    ) {
        let capabilities = request.client_capabilities;
        info!(
            client = ?request.client_info.as_ref().map(|info| &info.name),
            read = capabilities.fs.read_text_file,
            write = capabilities.fs.write_text_file,
            terminal = capabilities.terminal,
            "ACP client connected"
        );
        *lock(&self.client) = capabilities;
        *lock(&self.client_name) = request.client_info.as_ref().map(|info| info.name.clone());
        let agent = acp::AgentCapabilities::new()
            .load_session(true)
            .mcp_capabilities(acp::McpCapabilities::new().http(true).sse(true))
            .prompt_capabilities(
                acp::PromptCapabilities::new()
                    .embedded_context(true)
                    // A model that takes no images refuses a prompt with one, saying so.
                    .image(true)
                    .audio(false),
            )
            .session_capabilities(
                acp::SessionCapabilities::new()
                    .list(acp::SessionListCapabilities::new())
                    .delete(acp::SessionDeleteCapabilities::new())
                    .resume(acp::SessionResumeCapabilities::new())
                    .close(acp::SessionCloseCapabilities::new())
                    .additional_directories(acp::SessionAdditionalDirectoriesCapabilities::new()),
            );
        let response = acp::InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(agent)
            .auth_methods(vec![acp::AuthMethod::Agent(
                acp::AuthMethodAgent::new(AUTH_METHOD, "Set up a model").description(
                    "Tandem uses the model its settings choose (`model` and `models` in its user \
                     settings file, ~/.config/tandem/settings.json on Linux; `tandem models` \
                     lists them and checks the one in use), with its key from the environment \
                     this client starts Tandem with (ANTHROPIC_API_KEY, GEMINI_API_KEY, \
                     OPENAI_API_KEY, or the variable a model's `apiKeyEnv` names; in Zed, the \
                     agent server's `env`), or a local Ollama. Set one up, then start a new \
                     session."
                        .to_owned(),
                ),
            )])
            .agent_info(
                acp::Implementation::new("tandem", env!("CARGO_PKG_VERSION"))
                    .title("Tandem".to_owned()),
            );
        respond(responder, Ok(response));
    }

    /// Nothing to log in to: the key comes from the environment or the settings. Answers
    /// whether a model can be set up in the current directory, and if not, what to do. Only
    /// the one method `initialize` offered is known; another id is an error, not a success.
    pub(crate) fn authenticate(
        self: &Arc<Self>,
        request: acp::AuthenticateRequest,
        responder: v1::Responder<acp::AuthenticateResponse>,
    ) {
        if *request.method_id.0 != *AUTH_METHOD {
            return respond(
                responder,
                Err(invalid_params(format!(
                    "there is no auth method {:?}; Tandem offers only {AUTH_METHOD:?}",
                    request.method_id.0
                ))),
            );
        }
        let roots: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
        let spec = SessionSpec {
            roots: roots.clone(),
            title: None,
            frontend: AcpFrontend::disk(),
            overrides: Overrides::default(),
            mcp_servers: BTreeMap::new(),
        };
        if let Err(error) = self.host.check(&spec) {
            return respond(responder, Err(host_error(error)));
        }
        // The settings are fine; a model on this machine must also be there to answer, or the
        // first prompt fails just the same. Asked in a task: it waits on the network.
        let user_settings = self.user_settings.clone();
        tokio::spawn(async move {
            let result = match local_model_problem(user_settings.as_deref(), roots.first()).await {
                Some(problem) => Err(error(ErrorCode::AUTH_REQUIRED, problem)),
                None => Ok(acp::AuthenticateResponse::new()),
            };
            respond(responder, result);
        });
    }

    /// The client's side of a new session of this connection, and its frontend.
    /// Attached, the sessions use the host's own front end (the editor's buffers, IDE state
    /// and diagnostics), and this connection's linked files are read from the disk.
    fn client_side(
        &self,
        cx: &v1::ConnectionTo<Client>,
    ) -> (Arc<ClientSide>, Arc<AcpFrontend>, Arc<dyn Frontend>) {
        let side = ClientSide::new(cx.clone());
        if let Some(shared) = &self.attached {
            return (side, AcpFrontend::disk(), shared.clone());
        }
        let frontend = Arc::new(AcpFrontend::new(&side, &lock(&self.client)));
        (side, frontend.clone(), frontend)
    }

    /// Who queues this connection's turns, as watchers see it: `acp:<n>:<client name>`.
    pub(crate) fn origin(&self) -> String {
        let name = lock(&self.client_name).clone();
        format!(
            "acp:{}:{}",
            self.number,
            name.as_deref().unwrap_or("unnamed client")
        )
    }

    /// Attached: follows the turns others queue in session `id` (once per session), sending
    /// them to this client as `session/update`s and their permission requests.
    fn follow_others(self: &Arc<Self>, cx: &v1::ConnectionTo<Client>, id: &str) {
        if self.attached.is_none() {
            return;
        }
        let mut following = lock(&self.following);
        if following.get(id).is_some_and(|task| !task.is_finished()) {
            return;
        }
        let events = match self.host.watch(Some(id)) {
            Ok(events) => events,
            Err(error) => return warn!(session = id, "cannot follow the session: {error}"),
        };
        let task = tokio::spawn(turn::follow_others(
            self.host.clone(),
            cx.clone(),
            acp::SessionId::new(id.to_owned()),
            self.origin(),
            events,
        ));
        following.insert(id.to_owned(), task);
    }

    /// The session's roots: `cwd`, then the additional directories; all absolute directories.
    fn roots(cwd: &Path, additional: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
        let mut roots = Vec::with_capacity(1 + additional.len());
        for dir in std::iter::once(cwd).chain(additional.iter().map(PathBuf::as_path)) {
            if !dir.is_absolute() {
                return Err(invalid_params(format!(
                    "{} is not an absolute path; ACP session roots must be absolute",
                    dir.display()
                )));
            }
            if !dir.is_dir() {
                return Err(invalid_params(format!(
                    "{} is not a directory on this machine",
                    dir.display()
                )));
            }
            roots.push(dir.to_path_buf());
        }
        Ok(roots)
    }

    /// The approval mode a session runs with: its override, else the settings' mode.
    fn mode(&self, id: &str, entry: &SessionEntry) -> ApprovalMode {
        let overrides = self.host.overrides(id).unwrap_or_default();
        if let Some(mode) = overrides.approval_mode {
            return mode;
        }
        let spec = SessionSpec {
            roots: entry.roots.clone(),
            title: None,
            frontend: entry.session_frontend.clone(),
            overrides,
            mcp_servers: BTreeMap::new(),
        };
        self.host
            .check(&spec)
            .map(|settings| settings.approval.mode)
            .unwrap_or_default()
    }

    /// The model choice: the configured models, and the override or the settings' default.
    fn model_option(&self, id: &str, entry: &SessionEntry) -> Option<ModelOption> {
        let choices = match self.host.models(&entry.roots, entry.frontend.as_ref()) {
            Ok(choices) => choices,
            Err(error) => {
                warn!("cannot list the configured models: {error}");
                return None;
            }
        };
        let first = choices.names.first()?.clone();
        let current = self
            .host
            .overrides(id)
            .ok()
            .and_then(|overrides| overrides.model)
            .or(choices.default)
            .unwrap_or(first);
        Some(ModelOption {
            names: choices.names,
            current,
        })
    }

    fn config_options(&self, id: &str, entry: &SessionEntry) -> Vec<acp::SessionConfigOption> {
        translate::config_options(self.mode(id, entry), self.model_option(id, entry).as_ref())
    }

    /// Tells the client what a session offers once it knows the session: its commands (the
    /// built-ins, the user's and the project's command files).
    fn announce(&self, cx: &v1::ConnectionTo<Client>, id: &acp::SessionId) {
        self.announce_commands(cx, id, true);
    }

    /// Announces the session's commands again when they changed since the last announcement
    /// (`always`: whether or not they did).
    fn announce_commands(&self, cx: &v1::ConnectionTo<Client>, id: &acp::SessionId, always: bool) {
        let roots = lock(&self.sessions)
            .get(&id.to_string())
            .map(|entry| entry.roots.clone())
            .unwrap_or_default();
        let (commands, warnings) = self.host.commands(&roots);
        if !always && lock(&self.announced).get(&id.to_string()) == Some(&commands) {
            return;
        }
        if always {
            for warning in warnings {
                warn!(session = %id, "{warning}");
            }
        }
        lock(&self.announced).insert(id.to_string(), commands.clone());
        notify(
            cx,
            id,
            acp::SessionUpdate::AvailableCommandsUpdate(acp::AvailableCommandsUpdate::new(
                translate::commands(&commands),
            )),
        );
    }

    pub(crate) fn new_session(
        self: &Arc<Self>,
        request: acp::NewSessionRequest,
        responder: v1::Responder<acp::NewSessionResponse>,
        cx: v1::ConnectionTo<Client>,
    ) {
        let roots = match Self::roots(&request.cwd, &request.additional_directories) {
            Ok(roots) => roots,
            Err(error) => return respond(responder, Err(error)),
        };
        let (side, frontend, session_frontend) = self.client_side(&cx);
        let spec = SessionSpec {
            roots: roots.clone(),
            title: None,
            frontend: session_frontend.clone(),
            overrides: Overrides::default(),
            mcp_servers: translate::mcp_servers(&request.mcp_servers),
        };
        // Settings or a model that cannot be used are `auth_required` now, so the client can
        // say how to set Tandem up, rather than an error at the first prompt.
        let mode = match self.host.check(&spec) {
            Ok(settings) => settings.approval.mode,
            Err(error) => return respond(responder, Err(host_error(error))),
        };
        let id = match self.host.new_session(spec) {
            Ok(id) => id,
            Err(error) => return respond(responder, Err(host_error(error))),
        };
        let session = acp::SessionId::new(id.clone());
        side.set_session(session.clone());
        let entry = SessionEntry {
            roots,
            frontend,
            session_frontend,
            side,
            cancels: Arc::default(),
            titled: Arc::new(AtomicBool::new(false)),
            title: Arc::default(),
            played: Arc::default(),
            own_turns: Arc::default(),
        };
        lock(&self.sessions).insert(id.clone(), entry.clone());
        self.follow_others(&cx, &id);
        lock(&self.known_roots).insert(id.clone(), request.cwd.clone());
        info!(session = id, cwd = %request.cwd.display(), "new ACP session");
        let response = acp::NewSessionResponse::new(session.clone())
            .modes(translate::modes(mode))
            .config_options(translate::config_options(
                mode,
                self.model_option(&id, &entry).as_ref(),
            ));
        respond(responder, Ok(response));
        self.announce(&cx, &session);
    }

    /// `session/load` (`replay`: the saved turns are sent as updates first) and
    /// `session/resume`: the saved session is made live (a live one is taken as it is).
    async fn restore(
        self: Arc<Self>,
        cx: v1::ConnectionTo<Client>,
        id: acp::SessionId,
        cwd: PathBuf,
        additional: Vec<PathBuf>,
        mcp_servers: BTreeMap<String, McpServerSettings>,
        replay: bool,
    ) -> Result<(SessionEntry, String), Error> {
        let roots = Self::roots(&cwd, &additional)?;
        let (side, frontend, session_frontend) = self.client_side(&cx);
        side.set_session(id.clone());
        let spec = SessionSpec {
            roots: roots.clone(),
            title: None,
            frontend: session_frontend.clone(),
            overrides: Overrides::default(),
            mcp_servers,
        };
        let resumed = self.host.resume(&id.0, spec).await.map_err(host_error)?;
        for warning in &resumed.warnings {
            warn!(session = %id.0, "{warning}");
        }
        lock(&self.known_roots).insert(resumed.session_id.clone(), cwd.clone());
        let entry = {
            let mut sessions = lock(&self.sessions);
            sessions
                .entry(resumed.session_id.clone())
                .or_insert_with(|| SessionEntry {
                    roots,
                    frontend,
                    session_frontend,
                    side,
                    cancels: Arc::default(),
                    titled: Arc::new(AtomicBool::new(true)),
                    title: Arc::new(Mutex::new(Some(resumed.title.clone()))),
                    played: Arc::new(Mutex::new(resumed.replay.clone())),
                    own_turns: Arc::default(),
                })
                .clone()
        };
        // Attached, a live session is joined: what others do in it from now on shows here
        // too (its earlier turns are not replayed: the host keeps no events of a live turn).
        self.follow_others(&cx, &resumed.session_id);
        // A session live in this process comes back without its saved turns; what this
        // connection kept of them is replayed instead, as ACP says a load does.
        if replay {
            let played = lock(&entry.played).clone();
            for turn in &played {
                for update in translate::replay(turn) {
                    notify(&cx, &id, update);
                }
            }
        }
        notify(
            &cx,
            &id,
            acp::SessionUpdate::SessionInfoUpdate(
                acp::SessionInfoUpdate::new().title(resumed.title.clone()),
            ),
        );
        info!(session = %id.0, turns = resumed.turns, replay, "ACP session restored");
        Ok((entry, resumed.session_id))
    }

    pub(crate) fn load_session(
        self: &Arc<Self>,
        request: acp::LoadSessionRequest,
        responder: v1::Responder<acp::LoadSessionResponse>,
        cx: v1::ConnectionTo<Client>,
    ) {
        let restore = (
            request.session_id,
            request.cwd,
            request.additional_directories,
            translate::mcp_servers(&request.mcp_servers),
        );
        self.restore_and_answer(cx, restore, true, responder, |modes, options| {
            acp::LoadSessionResponse::new()
                .modes(modes)
                .config_options(options)
        });
    }

    pub(crate) fn resume_session(
        self: &Arc<Self>,
        request: acp::ResumeSessionRequest,
        responder: v1::Responder<acp::ResumeSessionResponse>,
        cx: v1::ConnectionTo<Client>,
    ) {
        let restore = (
            request.session_id,
            request.cwd,
            request.additional_directories,
            translate::mcp_servers(&request.mcp_servers),
        );
        self.restore_and_answer(cx, restore, false, responder, |modes, options| {
            acp::ResumeSessionResponse::new()
                .modes(modes)
                .config_options(options)
        });
    }

    /// `session/load` (`replay`) and `session/resume`: restores the session in a task of its
    /// own, answers with its modes and config options, then announces its commands and title.
    fn restore_and_answer<T: agent_client_protocol::JsonRpcResponse + Send + 'static>(
        self: &Arc<Self>,
        cx: v1::ConnectionTo<Client>,
        (session_id, cwd, additional_directories, mcp_servers): (
            acp::SessionId,
            PathBuf,
            Vec<PathBuf>,
            BTreeMap<String, McpServerSettings>,
        ),
        replay: bool,
        responder: v1::Responder<T>,
        answer: impl FnOnce(acp::SessionModeState, Vec<acp::SessionConfigOption>) -> T + Send + 'static,
    ) {
        let server = self.clone();
        tokio::spawn(async move {
            let id = session_id.clone();
            let restored = server
                .clone()
                .restore(
                    cx.clone(),
                    session_id,
                    cwd,
                    additional_directories,
                    mcp_servers,
                    replay,
                )
                .await;
            let result = restored.map(|(entry, id)| {
                answer(
                    translate::modes(server.mode(&id, &entry)),
                    server.config_options(&id, &entry),
                )
            });
            let ok = result.is_ok();
            respond(responder, result);
            if ok {
                server.announce(&cx, &id);
            }
        });
    }

    /// The sessions of `cwd` (live and saved), or without `cwd` the live sessions and the saved
    /// ones of every workspace this connection has a session in. One page: no cursor.
    pub(crate) fn list_sessions(
        self: &Arc<Self>,
        request: acp::ListSessionsRequest,
        responder: v1::Responder<acp::ListSessionsResponse>,
    ) {
        if request.cursor.is_some() {
            return respond(
                responder,
                Err(invalid_params(
                    "Tandem lists every session in one page; it gave no cursor to continue from",
                )),
            );
        }
        let server = self.clone();
        tokio::spawn(async move {
            let workspaces: Vec<PathBuf> = match &request.cwd {
                Some(cwd) => vec![cwd.clone()],
                None => {
                    let mut roots: Vec<PathBuf> = lock(&server.sessions)
                        .values()
                        .filter_map(|entry| entry.roots.first().cloned())
                        .collect();
                    roots.sort();
                    roots.dedup();
                    roots
                }
            };
            let frontend = AcpFrontend::disk();
            let mut seen = HashSet::new();
            let mut sessions = Vec::new();
            // Live sessions come first in every listing; with no workspace, they are all there is.
            let lists = if workspaces.is_empty() {
                vec![(None, server.host.sessions(&[], frontend.as_ref()).await)]
            } else {
                let mut lists = Vec::new();
                for root in &workspaces {
                    let list = server
                        .host
                        .sessions(std::slice::from_ref(root), frontend.as_ref())
                        .await;
                    lists.push((Some(root.clone()), list));
                }
                lists
            };
            for (root, list) in lists {
                for info in list {
                    let cwd = match (&info.root, &root) {
                        (Some(session_root), _) => session_root.clone(),
                        (None, Some(root)) => root.clone(),
                        (None, None) => continue,
                    };
                    // Attached, a live session also shows to a client in a folder inside its
                    // workspace (a terminal in `src/`).
                    let attached_live = server.attached.is_some() && info.live;
                    let listed_here = request.cwd.as_ref().is_none_or(|wanted| {
                        *wanted == cwd || attached_live && wanted.starts_with(&cwd)
                    });
                    if !listed_here {
                        continue;
                    }
                    if !seen.insert(info.session_id.clone()) {
                        continue;
                    }
                    lock(&server.known_roots).insert(info.session_id.clone(), cwd.clone());
                    // A live session is called what the client was told.
                    let title = lock(&server.sessions)
                        .get(&info.session_id)
                        .and_then(|entry| lock(&entry.title).clone())
                        .unwrap_or(info.title);
                    let mut listed =
                        acp::SessionInfo::new(info.session_id.clone(), cwd).title(title);
                    if let Some(ms) = info.updated_ms {
                        listed = listed.updated_at(translate::rfc3339(ms));
                    }
                    if attached_live {
                        let mut meta = serde_json::Map::new();
                        meta.insert(
                            "tandem".to_owned(),
                            json!({"live": true, "running": info.running, "turns": info.turns}),
                        );
                        listed.meta = Some(meta);
                    }
                    sessions.push(listed);
                }
            }
            respond(responder, Ok(acp::ListSessionsResponse::new(sessions)));
        });
    }

    pub(crate) fn close_session(
        &self,
        request: acp::CloseSessionRequest,
        responder: v1::Responder<acp::CloseSessionResponse>,
    ) {
        let id = request.session_id.0.to_string();
        let result = match lock(&self.sessions).remove(&id) {
            // Attached, closing leaves the session: it is the editor's, and goes on there.
            Some(entry) if self.attached.is_some() => {
                self.detach(&id, &entry);
                Ok(acp::CloseSessionResponse::new())
            }
            Some(entry) => {
                entry.cancels.fetch_add(1, Ordering::SeqCst);
                self.host
                    .close(&id)
                    .map(|()| acp::CloseSessionResponse::new())
                    .map_err(host_error)
            }
            None => Err(session_not_found(&id)),
        };
        respond(responder, result);
    }

    pub(crate) fn delete_session(
        self: &Arc<Self>,
        request: acp::DeleteSessionRequest,
        responder: v1::Responder<acp::DeleteSessionResponse>,
    ) {
        let id = request.session_id.0.to_string();
        if self.attached.is_some() && self.host.is_live(&id) {
            return respond(
                responder,
                Err(invalid_params(format!(
                    "session {id:?} is live in the editor; it can be deleted once the editor has                      closed it"
                ))),
            );
        }
        let roots = match lock(&self.sessions).get(&id) {
            Some(entry) => entry.roots.clone(),
            None => lock(&self.known_roots)
                .get(&id)
                .cloned()
                .into_iter()
                .collect(),
        };
        if roots.is_empty() {
            return respond(
                responder,
                Err(invalid_params(format!(
                    "Tandem does not know where session {id:?} is saved; list the sessions of its \
                     workspace (session/list with its cwd) first"
                ))),
            );
        }
        let server = self.clone();
        tokio::spawn(async move {
            let frontend = AcpFrontend::disk();
            let result = server
                .host
                .delete(&id, &roots, frontend.as_ref())
                .await
                .map(|()| {
                    lock(&server.sessions).remove(&id);
                    lock(&server.known_roots).remove(&id);
                    acp::DeleteSessionResponse::new()
                })
                .map_err(host_error);
            respond(responder, result);
        });
    }

    fn set_mode_override(&self, id: &str, mode_id: &str) -> Result<ApprovalMode, Error> {
        let mode = translate::parse_mode(mode_id).ok_or_else(|| {
            let known: Vec<&str> = translate::MODES
                .into_iter()
                .map(translate::mode_id)
                .collect();
            invalid_params(format!(
                "there is no mode {mode_id:?}; the modes are {}",
                known.join(", ")
            ))
        })?;
        self.host
            .set_overrides(id, |overrides| overrides.approval_mode = Some(mode))
            .map_err(host_error)?;
        info!(
            session = id,
            mode = mode.name(),
            "approval mode set (from the next turn)"
        );
        Ok(mode)
    }

    pub(crate) fn set_mode(
        &self,
        request: acp::SetSessionModeRequest,
        responder: v1::Responder<acp::SetSessionModeResponse>,
        cx: v1::ConnectionTo<Client>,
    ) {
        let id = request.session_id.0.to_string();
        let set = self
            .entry(&id)
            .and_then(|entry| Ok((entry, self.set_mode_override(&id, &request.mode_id.0)?)));
        match set {
            Ok((entry, mode)) => {
                respond(responder, Ok(acp::SetSessionModeResponse::new()));
                notify(
                    &cx,
                    &request.session_id,
                    acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(
                        translate::mode_id(mode),
                    )),
                );
                notify(
                    &cx,
                    &request.session_id,
                    acp::SessionUpdate::ConfigOptionUpdate(acp::ConfigOptionUpdate::new(
                        self.config_options(&id, &entry),
                    )),
                );
            }
            Err(error) => respond(responder, Err(error)),
        }
    }

    pub(crate) fn set_config_option(
        &self,
        request: acp::SetSessionConfigOptionRequest,
        responder: v1::Responder<acp::SetSessionConfigOptionResponse>,
        cx: v1::ConnectionTo<Client>,
    ) {
        let id = request.session_id.0.to_string();
        let entry = match self.entry(&id) {
            Ok(entry) => entry,
            Err(error) => return respond(responder, Err(error)),
        };
        let Some(value) = request.value.as_value_id().map(|value| value.0.to_string()) else {
            return respond(
                responder,
                Err(invalid_params(format!(
                    "{} takes one of its listed values, not a boolean",
                    request.config_id.0
                ))),
            );
        };
        let changed = match &*request.config_id.0 {
            translate::MODE_OPTION => self.set_mode_override(&id, &value).map(Some),
            translate::MODEL_OPTION => {
                let names = self
                    .model_option(&id, &entry)
                    .map(|option| option.names)
                    .unwrap_or_default();
                if names.contains(&value) {
                    self.host
                        .set_overrides(&id, |overrides| overrides.model = Some(value.clone()))
                        .map_err(host_error)
                        .map(|()| {
                            info!(
                                session = id,
                                model = value,
                                "model set (from the next turn)"
                            );
                            None
                        })
                } else {
                    Err(invalid_params(format!(
                        "there is no model {value:?} in the settings' `models`; they are {}",
                        names.join(", ")
                    )))
                }
            }
            other => Err(invalid_params(format!(
                "there is no config option {other:?}; the options are {} and {}",
                translate::MODE_OPTION,
                translate::MODEL_OPTION
            ))),
        };
        match changed {
            Ok(mode) => {
                let options = self.config_options(&id, &entry);
                respond(
                    responder,
                    Ok(acp::SetSessionConfigOptionResponse::new(options)),
                );
                if let Some(mode) = mode {
                    notify(
                        &cx,
                        &request.session_id,
                        acp::SessionUpdate::CurrentModeUpdate(acp::CurrentModeUpdate::new(
                            translate::mode_id(mode),
                        )),
                    );
                }
            }
            Err(error) => respond(responder, Err(error)),
        }
    }

    /// Stops the session's turn (and any queued after it). The prompt is answered `cancelled`
    /// once the turn has sent its last updates; a permission request still open is withdrawn.
    pub(crate) fn cancel(&self, notification: acp::CancelNotification) {
        let id = notification.session_id.0.to_string();
        match lock(&self.sessions).get(&id) {
            Some(entry) => {
                entry.cancels.fetch_add(1, Ordering::SeqCst);
                match self.host.cancel(&id, None) {
                    Ok(cancelled) => info!(session = id, cancelled, "session/cancel"),
                    Err(error) => warn!(session = id, "session/cancel: {error}"),
                }
            }
            None => warn!(
                session = id,
                "session/cancel for a session this connection does not have"
            ),
        }
    }

    pub(crate) fn prompt(
        self: &Arc<Self>,
        request: acp::PromptRequest,
        responder: v1::Responder<acp::PromptResponse>,
        cx: v1::ConnectionTo<Client>,
    ) {
        let id = request.session_id.0.to_string();
        let entry = match self.entry(&id) {
            Ok(entry) => entry,
            Err(error) => return respond(responder, Err(error)),
        };
        let parts = match translate::prompt_parts(&request.prompt) {
            Ok(parts) => parts,
            Err(message) => return respond(responder, Err(invalid_params(message))),
        };
        let server = self.clone();
        let origin = self.origin();
        let task = tokio::spawn(async move {
            let result = turn::run(
                &server.host,
                &cx,
                &request.session_id,
                &entry,
                parts,
                origin,
            )
            .await;
            respond(responder, result);
            // The turn may have started MCP servers whose prompts are commands.
            server.announce_commands(&cx, &request.session_id, false);
        });
        self.track(task);
    }

    /// The connection is gone: every session's turns are cancelled (their commands killed), and
    /// the prompts' tasks and the sessions' `SessionEnd` hooks are given a while to see it
    /// through.
    pub(crate) async fn shutdown(&self) {
        if self.attached.is_some() {
            return self.shutdown_attached().await;
        }
        let ids: Vec<String> = lock(&self.sessions).drain().map(|(id, _)| id).collect();
        for id in &ids {
            if let Err(error) = self.host.close(id) {
                debug!(session = id, "closing: {error}");
            }
        }
        let turns: Vec<JoinHandle<()>> = lock(&self.turns).drain(..).collect();
        let all = futures::future::join_all(turns);
        if tokio::time::timeout(SHUTDOWN_WAIT, all).await.is_err() {
            warn!(
                "some turns did not stop within {} s of the client leaving",
                SHUTDOWN_WAIT.as_secs()
            );
        }
        // The sessions' runners end after their turns, with their `SessionEnd` hooks.
        self.host.end_sessions(SHUTDOWN_WAIT).await;
    }

    /// Attached, this connection leaves session `id`: it stops following it and cancels the
    /// turns it queued there (nobody is left to read their answers or answer for them; the
    /// editor sees them end `cancelled`). The session itself goes on.
    fn detach(&self, id: &str, entry: &SessionEntry) {
        if let Some(task) = lock(&self.following).remove(id) {
            task.abort();
        }
        let own: Vec<String> = lock(&entry.own_turns).iter().cloned().collect();
        for turn_id in own {
            if let Err(error) = self.host.cancel(id, Some(&turn_id)) {
                debug!(session = id, "leaving: {error}");
            }
        }
    }

    /// The attached client is gone: it leaves every session it joined (`detach`), and its
    /// prompts' tasks are given a while to end. The host and its sessions are the editor's and
    /// stay as they are.
    async fn shutdown_attached(&self) {
        let sessions: Vec<(String, SessionEntry)> = lock(&self.sessions).drain().collect();
        for (id, entry) in &sessions {
            self.detach(id, entry);
        }
        for (_, task) in lock(&self.following).drain() {
            task.abort();
        }
        let turns: Vec<JoinHandle<()>> = lock(&self.turns).drain(..).collect();
        if tokio::time::timeout(SHUTDOWN_WAIT, futures::future::join_all(turns))
            .await
            .is_err()
        {
            warn!(
                "some turns of an attached client did not stop within {} s",
                SHUTDOWN_WAIT.as_secs()
            );
        }
        info!(origin = self.origin(), "an attached client left");
    }
}
