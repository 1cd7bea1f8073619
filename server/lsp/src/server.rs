//! The language server proper: capability negotiation, lifecycle, workspace folders, and the
//! `tandem/debug/*` requests. Document sync notifications never reach this type's
//! `LanguageServer` methods; the transport applies them in order through [`crate::sync`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tandem_text::{DocumentStore, PositionEncoding};
use tower_lsp::jsonrpc::{Error, Result};
use tower_lsp::lsp_types::*;
use tower_lsp::{Client, LanguageServer};
use tracing::{debug, info};

use crate::from_proto;

/// Commands `workspace/executeCommand` accepts. Later features register theirs here.
const COMMANDS: &[&str] = &[];

pub(crate) struct Backend {
    client: Client,
    documents: DocumentStore,
    /// Settled by a successful `initialize`, so it also tells whether that has happened.
    encoding: OnceLock<PositionEncoding>,
    workspace_folders: RwLock<Vec<WorkspaceFolder>>,
    client_info: OnceLock<ClientInfo>,
    shutdown_requested: AtomicBool,
}

impl Backend {
    pub(crate) fn new(client: Client) -> Self {
        Backend {
            client,
            documents: DocumentStore::new(),
            encoding: OnceLock::new(),
            workspace_folders: RwLock::new(Vec::new()),
            client_info: OnceLock::new(),
            shutdown_requested: AtomicBool::new(false),
        }
    }

    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }

    pub(crate) fn documents(&self) -> &DocumentStore {
        &self.documents
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
    pub(crate) async fn debug_status(&self) -> Result<DebugStatus> {
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
        })
    }
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
                        resolve_provider: Some(false),
                    },
                )),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: COMMANDS.iter().map(|c| (*c).to_owned()).collect(),
                    work_done_progress_options: work_done,
                }),
                ..ServerCapabilities::default()
            },
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        debug!("client reports initialized");
    }

    async fn shutdown(&self) -> Result<()> {
        info!("shutdown requested");
        self.shutdown_requested.store(true, Ordering::SeqCst);
        Ok(())
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
    }

    async fn did_change_configuration(&self, _: DidChangeConfigurationParams) {
        debug!("didChangeConfiguration (no settings yet)");
    }

    async fn code_action(&self, _: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        Ok(None)
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        Err(Error::invalid_params(format!(
            "unknown command {:?}; this server offers: {}",
            params.command,
            if COMMANDS.is_empty() {
                "none yet".to_owned()
            } else {
                COMMANDS.join(", ")
            }
        )))
    }
}
