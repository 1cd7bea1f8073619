//! The language server proper: capability negotiation, lifecycle, workspace folders, and the
//! `tandem/debug/*` requests. Document sync notifications never reach this type's
//! `LanguageServer` methods; the transport applies them in order through [`crate::sync`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tandem_agent::diagnostics::LanguageServers;
use tandem_agent::host::HostOptions;
use tandem_text::{DocumentStore, PositionEncoding};
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer};
use tracing::{debug, info, warn};

use crate::actions::{self, CommandRequest};
use crate::bridge::Revisions;
use crate::capabilities::{self, ClientSupport};
use crate::diagnostics::{DidChangeDiagnostics, EditorDiagnostics};
use crate::from_proto;
use crate::host::{AgentHost, InlineTarget, PendingPrompt, TurnStarted};
use crate::ide_state::IdeTracker;
use crate::trees::OpenTrees;

pub(crate) struct Backend {
    client: Client,
    documents: Arc<DocumentStore>,
    /// Focus, cursor, selection and recently used documents, for the agent's IDE context.
    ide: Arc<Mutex<IdeTracker>>,
    /// Syntax trees of the open documents, edited with them (see `trees`).
    trees: Arc<OpenTrees>,
    /// Counts the document notifications applied, for writes that wait for a `didChange`.
    revisions: Arc<Revisions>,
    host: Arc<AgentHost>,
    /// The editor's diagnostics as the client forwards them, for the agent.
    diagnostics: Arc<EditorDiagnostics>,
    /// Settled by a successful `initialize`, so it also tells whether that has happened.
    encoding: OnceLock<PositionEncoding>,
    workspace_folders: RwLock<Vec<WorkspaceFolder>>,
    client_info: OnceLock<ClientInfo>,
    shutdown_requested: AtomicBool,
    /// Whether the client declared `textDocument.inlineCompletion` (seen by the transport in
    /// the raw `initialize`: lsp-types 0.94 predates it); then completion items stay empty.
    client_has_inline_completion: AtomicBool,
    /// `ServeOptions::on_initialized`, until `initialized` calls it.
    on_initialized: Mutex<Option<crate::OnInitialized>>,
}

impl Backend {
    pub(crate) fn new(
        client: Client,
        user_settings: Option<PathBuf>,
        state_dir: Option<PathBuf>,
        own_language_servers: Option<Arc<dyn LanguageServers>>,
    ) -> Self {
        let documents = Arc::new(DocumentStore::new());
        let diagnostics = Arc::new(EditorDiagnostics::new(
            documents.clone(),
            own_language_servers,
        ));
        let ide = Arc::new(Mutex::new(IdeTracker::default()));
        let trees = Arc::new(OpenTrees::default());
        let revisions = Arc::new(Revisions::default());
        let host = Arc::new(AgentHost::new(
            client.clone(),
            documents.clone(),
            revisions.clone(),
            ide.clone(),
            trees.clone(),
            HostOptions {
                user_settings,
                state_dir,
                transcripts: true,
                language_servers: Some(diagnostics.clone()),
                one_shot: false,
            },
        ));
        Backend {
            diagnostics,
            client,
            documents,
            ide,
            trees,
            revisions,
            host,
            encoding: OnceLock::new(),
            workspace_folders: RwLock::new(Vec::new()),
            client_info: OnceLock::new(),
            shutdown_requested: AtomicBool::new(false),
            client_has_inline_completion: AtomicBool::new(false),
            on_initialized: Mutex::default(),
        }
    }

    pub(crate) fn set_on_initialized(&self, hook: Option<crate::OnInitialized>) {
        *self
            .on_initialized
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = hook;
    }

    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    pub(crate) fn documents(&self) -> &Arc<DocumentStore> {
        &self.documents
    }

    pub(crate) fn ide(&self) -> &Mutex<IdeTracker> {
        &self.ide
    }

    pub(crate) fn revisions(&self) -> &Revisions {
        &self.revisions
    }

    pub(crate) fn trees(&self) -> &OpenTrees {
        &self.trees
    }

    /// The negotiated encoding; UTF-16, the specification's default, before `initialize`.
    pub(crate) fn encoding(&self) -> PositionEncoding {
        self.encoding.get().copied().unwrap_or_default()
    }

    /// Whether `initialize` has succeeded; before that, notifications are dropped (LSP §initialize).
    pub(crate) fn is_initialized(&self) -> bool {
        self.encoding.get().is_some()
    }

    pub(crate) fn shutdown_requested(&self) -> bool {
        self.shutdown_requested.load(Ordering::SeqCst)
    }

    /// Records whether the client shows inline completions itself (`initialize`'s raw params).
    pub(crate) fn set_client_has_inline_completion(&self, has: bool) {
        self.client_has_inline_completion
            .store(has, Ordering::SeqCst);
    }

    /// `textDocument/inlineCompletion`.
    pub(crate) async fn inline_completion(
        &self,
        params: crate::completion::InlineCompletionParams,
    ) -> Result<Option<crate::completion::InlineCompletionList>> {
        self.host.inline_completion(params).await
    }

    /// `tandem/debug/document`: exactly what the server holds for one open document.
    pub(crate) async fn debug_document(
        &self,
        params: DebugDocumentParams,
    ) -> Result<DebugDocument> {
        let document = self.documents.get(&params.uri).ok_or_else(|| {
            Error::invalid_params(format!(
                "{} is not open in this server (open documents: {})",
                params.uri,
                self.documents.len()
            ))
        })?;
        Ok(DebugDocument {
            version: document.version(),
            text: document.text(),
            position_encoding: self.encoding().as_str().to_owned(),
            line_count: document.line_count(),
            language_id: document.language_id().to_owned(),
        })
    }

    /// `tandem/debug/status`: the negotiated session and the documents held, without their text.
    pub(crate) async fn debug_status(&self, _: Value) -> Result<DebugStatus> {
        let mut documents: Vec<DebugDocumentSummary> = self
            .documents
            .snapshot()
            .into_iter()
            .map(|(uri, document)| DebugDocumentSummary {
                uri,
                version: document.version(),
                language_id: document.language_id().to_owned(),
                line_count: document.line_count(),
                len_bytes: document.len_bytes(),
            })
            .collect();
        documents.sort_by(|a, b| a.uri.cmp(&b.uri));
        Ok(DebugStatus {
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            position_encoding: self.encoding().as_str().to_owned(),
            client: self.client_info.get().cloned(),
            workspace_folders: self
                .workspace_folders
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            documents,
            index: self.host.index_status(),
            mcp_servers: self.host.running_mcp_statuses(),
            skills: self.host.skills().map(|set| set.skills).unwrap_or_default(),
        })
    }
}

/// The agent's requests (`tandem/*`, see docs/protocol.md).
impl Backend {
    fn folder_uris(&self) -> Vec<Url> {
        self.workspace_folders
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|folder| folder.uri.clone())
            .collect()
    }

    /// `tandem/didChangeUserSettings`: the user's own editor settings changed. They replace
    /// `initializationOptions.settings` and are trusted like them: they come from the same
    /// place (the plugin that started the server), not from the project's files.
    pub(crate) async fn did_change_user_settings(&self, params: UserSettingsParams) {
        if params.settings.is_object() {
            self.host.set_user_settings(params.settings);
        } else {
            warn!("tandem/didChangeUserSettings without a settings object; ignored");
        }
    }

    /// `tandem/didChangeDiagnostics`: the editor's diagnostics changed (see `diagnostics`).
    pub(crate) async fn did_change_diagnostics(&self, params: DidChangeDiagnostics) {
        self.diagnostics.forwarded(params);
    }

    /// `tandem/newSession`.
    pub(crate) async fn new_session(&self, params: NewSessionParams) -> Result<Value> {
        let id = self.host.new_session(params.title)?;
        Ok(serde_json::json!({ "sessionId": id }))
    }

    /// `tandem/prompt`: queues a turn and answers at once.
    pub(crate) async fn prompt(&self, params: PromptParams) -> Result<TurnStarted> {
        let mut context = Vec::new();
        let mut images = Vec::new();
        for item in params.context {
            context.push(match item {
                ContextItem::Text { label, text } => tandem_agent::Attachment {
                    label,
                    text,
                    shown: None,
                },
                ContextItem::Document { uri, range, label } => {
                    self.host.attachment(&uri, range, label)?
                }
                ContextItem::Image { mime_type, data } => {
                    let image =
                        tandem_agent::tools::view_image::from_base64(&data).map_err(|error| {
                            Error::invalid_params(format!(
                                "context image {} ({mime_type}): {error}",
                                images.len() + 1
                            ))
                        })?;
                    images.push(image);
                    continue;
                }
            });
        }
        self.host.prompt(
            params.session_id.as_deref(),
            PendingPrompt {
                text: params.text,
                context,
                images,
                comment: None,
                inline: None,
            },
            params.work_done_token,
        )
    }

    /// `tandem/cancel`.
    pub(crate) async fn cancel(&self, params: CancelParams) -> Result<Value> {
        let cancelled = self
            .host
            .cancel(Some(&params.session_id), params.turn_id.as_deref())?;
        Ok(serde_json::json!({ "cancelled": cancelled }))
    }

    /// `tandem/addNote`: something for the model to hear with the session's next prompt.
    pub(crate) async fn add_note(&self, params: AddNoteParams) -> Result<Value> {
        let label = params
            .label
            .unwrap_or_else(|| "A note from the editor".to_owned());
        self.host.add_note(&params.session_id, label, params.text)?;
        Ok(serde_json::json!({}))
    }

    /// `tandem/sessions`: the live sessions, then the saved ones.
    pub(crate) async fn sessions(&self, _: Value) -> Result<Value> {
        Ok(serde_json::json!({ "sessions": self.host.sessions().await }))
    }

    /// `tandem/commands`: the slash commands a prompt may start with, for completion and
    /// command lists; `warnings` names the command files that could not be used.
    pub(crate) async fn commands(&self, _: Value) -> Result<Value> {
        let (commands, warnings) = self.host.commands();
        Ok(serde_json::json!({ "commands": commands, "warnings": warnings }))
    }

    /// `tandem/skills`: the skills a session would offer (the project's only in a trusted
    /// folder), sorted by name; `warnings` names the skills that could not be used.
    pub(crate) async fn skills(&self, _: Value) -> Result<Value> {
        let set = self.host.skills()?;
        Ok(serde_json::json!({ "skills": set.skills, "warnings": set.warnings }))
    }

    /// `tandem/mcpServers`: the workspace's MCP servers (started now if no session has), after
    /// a short wait for those still starting.
    pub(crate) async fn mcp_servers(&self, _: Value) -> Result<Value> {
        let servers = self.host.mcp_servers().await?;
        Ok(serde_json::json!({ "servers": servers }))
    }

    /// `tandem/resumeSession`.
    pub(crate) async fn resume_session(&self, params: SessionIdParams) -> Result<Value> {
        to_value(self.host.resume(&params.session_id).await?)
    }

    /// `tandem/deleteSession`.
    pub(crate) async fn delete_session(&self, params: SessionIdParams) -> Result<Value> {
        self.host.delete_session(&params.session_id).await?;
        Ok(serde_json::json!({ "deleted": true }))
    }

    /// `tandem/compress`: queues a turn that compresses the session's history.
    pub(crate) async fn compress(&self, params: CompressParams) -> Result<TurnStarted> {
        self.host.command_turn(
            params.session_id.as_deref(),
            "/compress".to_owned(),
            params.work_done_token,
        )
    }

    /// `tandem/restore`: queues a turn that puts back the files of a turn and the later ones.
    pub(crate) async fn restore(&self, params: RestoreParams) -> Result<TurnStarted> {
        let command = restore_command(params.turn_id.as_deref())?;
        self.host.command_turn(
            params.session_id.as_deref(),
            command,
            params.work_done_token,
        )
    }

    /// `tandem/inlineChat`.
    pub(crate) async fn inline_chat(&self, params: InlineChatParams) -> Result<TurnStarted> {
        self.start_inline_chat(params, None)
    }

    fn start_inline_chat(
        &self,
        params: InlineChatParams,
        progress: Option<ProgressToken>,
    ) -> Result<TurnStarted> {
        if self.documents.get(&params.uri).is_none() {
            return Err(Error::invalid_params(format!(
                "inline chat works on open documents; {} is not open",
                params.uri
            )));
        }
        self.host.prompt(
            params.session_id.as_deref(),
            PendingPrompt {
                text: params.instruction,
                context: Vec::new(),
                images: Vec::new(),
                comment: None,
                inline: Some(InlineTarget {
                    uri: params.uri,
                    range: params.range,
                }),
            },
            progress,
        )
    }

    /// `window/workDoneProgress/cancel` (tower-lsp 0.20 has no method for it).
    pub(crate) async fn progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        self.host.cancel_progress(&params.token);
    }
}

fn to_value(value: impl Serialize) -> Result<Value> {
    serde_json::to_value(value).map_err(|error| {
        let mut failure = Error::internal_error();
        failure.message = error.to_string().into();
        failure
    })
}

/// `/restore`, or `/restore <turnId>`.
pub(crate) fn restore_command(turn_id: Option<&str>) -> Result<String> {
    match turn_id.map(str::trim) {
        None | Some("") => Ok("/restore".to_owned()),
        Some(turn) if turn.contains(char::is_whitespace) => Err(Error::invalid_params(format!(
            "{turn:?} is not a turn id (turn ids have no spaces, e.g. \"t3\")"
        ))),
        Some(turn) => Ok(format!("/restore {turn}")),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionIdParams {
    session_id: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct CompressParams {
    session_id: Option<String>,
    work_done_token: Option<ProgressToken>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct RestoreParams {
    session_id: Option<String>,
    turn_id: Option<String>,
    work_done_token: Option<ProgressToken>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AddNoteParams {
    session_id: String,
    label: Option<String>,
    text: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct UserSettingsParams {
    settings: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct NewSessionParams {
    title: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptParams {
    #[serde(default)]
    session_id: Option<String>,
    text: String,
    #[serde(default)]
    context: Vec<ContextItem>,
    #[serde(default)]
    work_done_token: Option<ProgressToken>,
}

/// Context attached to a prompt: a document (or part of it), or text the client supplies.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ContextItem {
    #[serde(rename_all = "camelCase")]
    Document {
        uri: Url,
        #[serde(default)]
        range: Option<Range>,
        #[serde(default)]
        label: Option<String>,
    },
    Text {
        label: String,
        text: String,
    },
    /// An image (a pasted screenshot): its bytes in base64, PNG, JPEG, GIF or WebP.
    #[serde(rename_all = "camelCase")]
    Image {
        mime_type: String,
        data: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelParams {
    session_id: String,
    #[serde(default)]
    turn_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InlineChatParams {
    uri: Url,
    range: Range,
    instruction: String,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DebugDocumentParams {
    uri: Url,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DebugDocument {
    version: i32,
    text: String,
    position_encoding: String,
    line_count: usize,
    language_id: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DebugStatus {
    server_version: String,
    position_encoding: String,
    client: Option<ClientInfo>,
    workspace_folders: Vec<WorkspaceFolder>,
    documents: Vec<DebugDocumentSummary>,
    /// The workspace's symbol index and its background indexing.
    index: tandem_agent::host::IndexStatus,
    /// The MCP servers sessions started, as they are now.
    mcp_servers: Vec<tandem_agent::mcp::McpServerStatus>,
    /// The skills a session in the workspace would offer.
    skills: Vec<tandem_agent::skills::Skill>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DebugDocumentSummary {
    uri: Url,
    version: i32,
    language_id: String,
    line_count: usize,
    len_bytes: usize,
}

#[tower_lsp::async_trait]
impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let offered = params
            .capabilities
            .general
            .as_ref()
            .and_then(|general| general.position_encodings.as_deref())
            .unwrap_or_default();
        let encoding = from_proto::negotiate_encoding(offered);
        // A duplicate `initialize` never reaches us (tower-lsp refuses it), so these are unset.
        let _ = self.encoding.set(encoding);
        *self
            .workspace_folders
            .write()
            .unwrap_or_else(PoisonError::into_inner) = from_proto::workspace_folders(&params);
        let support = ClientSupport::from_initialize(&params);
        self.diagnostics.set_forwarding(support.tandem.diagnostics);
        self.host.initialize(
            support,
            encoding,
            capabilities::initialization_settings(&params),
        );
        self.host.set_roots(&self.folder_uris());
        if let Some(client_info) = params.client_info {
            let _ = self.client_info.set(client_info);
        }
        info!(
            client = ?self.client_info.get().map(|c| &c.name),
            %encoding,
            "initialize"
        );

        let work_done = WorkDoneProgressOptions {
            work_done_progress: Some(true),
        };
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "tandem".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            capabilities: ServerCapabilities {
                position_encoding: Some(PositionEncodingKind::new(encoding.as_str())),
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                            include_text: Some(false),
                        })),
                        will_save: None,
                        will_save_wait_until: None,
                    },
                )),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![
                            CodeActionKind::QUICKFIX,
                            CodeActionKind::REFACTOR_REWRITE,
                        ]),
                        work_done_progress_options: work_done,
                        resolve_provider: Some(true),
                    },
                )),
                // The suggestion as a completion item, for editors without ghost text (see
                // `completion.rs`; `inlineCompletionProvider` is added by the transport).
                completion_provider: Some(CompletionOptions::default()),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: actions::COMMANDS.iter().map(|c| (*c).to_owned()).collect(),
                    work_done_progress_options: work_done,
                }),
                ..ServerCapabilities::default()
            },
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        debug!("client reports initialized");
        // Before anything awaits: the first prompt should find the index warm.
        self.host.index_in_background();
        let hook = self
            .on_initialized
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(hook) = hook {
            // Another front end may now queue turns on this host: the editor sees them too.
            self.host.follow_foreign_turns();
            hook(crate::Initialized {
                host: self.host.core().clone(),
                frontend: self.host.clone(),
                roots: self.host.roots_watch(),
                editor: self.client_info.get().map(|info| info.name.clone()),
            });
        }
        self.host.pull_configuration().await;
    }

    async fn shutdown(&self) -> Result<()> {
        info!("shutdown requested");
        self.shutdown_requested.store(true, Ordering::SeqCst);
        self.host.end_sessions().await;
        Ok(())
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let has_inline = self.client_has_inline_completion.load(Ordering::SeqCst);
        self.host.completion_items(params, has_inline).await
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        debug!(uri = %params.text_document.uri, "didSave");
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        let mut folders = self
            .workspace_folders
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        folders.retain(|folder| {
            !params
                .event
                .removed
                .iter()
                .any(|gone| gone.uri == folder.uri)
        });
        for added in params.event.added {
            if !folders.iter().any(|folder| folder.uri == added.uri) {
                folders.push(added);
            }
        }
        info!(count = folders.len(), "workspace folders changed");
        drop(folders);
        self.host.set_roots(&self.folder_uris());
        self.host.index_in_background();
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        // Push-style clients send the settings; pull-style ones send null and expect a pull.
        match params.settings.get("tandem") {
            Some(settings) if settings.is_object() => self.host.set_configuration(settings.clone()),
            _ => self.host.pull_configuration().await,
        }
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        // Every action works on the editor's text; a document it has not opened has none here.
        let Some(document) = self.documents.get(&params.text_document.uri) else {
            return Ok(None);
        };
        self.diagnostics.seen_in_code_action(
            &params.text_document.uri,
            document.version(),
            &params.context.diagnostics,
        );
        let actions = actions::code_actions(&params, Some(&document), self.encoding());
        Ok((!actions.is_empty()).then_some(actions))
    }

    async fn code_action_resolve(&self, action: CodeAction) -> Result<CodeAction> {
        actions::resolve(action)
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let result = self.run_command(params).await;
        if let Err(error) = &result {
            // Clients without Tandem's own UI may not show a command's error anywhere but their
            // log (Helix); the user ran it from a menu and must learn why nothing happened.
            if !self.host.support().tandem.events {
                self.client
                    .show_message(MessageType::WARNING, format!("Tandem: {}", error.message))
                    .await;
            }
        }
        result
    }
}

impl Backend {
    /// `workspace/executeCommand`, its error not yet shown.
    async fn run_command(&self, mut params: ExecuteCommandParams) -> Result<Option<Value>> {
        actions::typed_arguments(&mut params, &|path| self.host.locate(path))?;
        let documents = self.documents.clone();
        let request = actions::parse_command(
            &params,
            &|uri| documents.get(uri),
            self.encoding(),
            &|uri| self.host.display(uri),
        )?;
        let progress = params.work_done_progress_params.work_done_token.clone();
        let answer = match request {
            CommandRequest::Turn(turn) => {
                let started = self.host.prompt(
                    turn.session_id.as_deref(),
                    PendingPrompt {
                        text: turn.text,
                        context: turn.context,
                        images: Vec::new(),
                        comment: turn.comment,
                        inline: None,
                    },
                    progress,
                )?;
                to_value(started)?
            }
            CommandRequest::InlineChat {
                uri,
                range,
                instruction,
                session_id,
            } => to_value(self.start_inline_chat(
                InlineChatParams {
                    uri,
                    range,
                    instruction,
                    session_id,
                },
                progress,
            )?)?,
            CommandRequest::ShowTranscript { session_id } => {
                self.host.show_transcript(session_id.as_deref()).await?
            }
            CommandRequest::Cancel { session_id } => {
                let cancelled = self.host.cancel(session_id.as_deref(), None)?;
                serde_json::json!({ "cancelled": cancelled })
            }
            CommandRequest::Compress { session_id } => to_value(self.host.command_turn(
                session_id.as_deref(),
                "/compress".to_owned(),
                progress,
            )?)?,
            CommandRequest::Restore {
                session_id,
                turn_id,
            } => to_value(self.host.command_turn(
                session_id.as_deref(),
                restore_command(turn_id.as_deref())?,
                progress,
            )?)?,
        };
        Ok(Some(answer))
    }
}
