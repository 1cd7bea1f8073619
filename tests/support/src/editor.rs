//! [`FakeEditor`]: an in-process editor for end-to-end tests of the agent inside the language
//! server. It declares capabilities like a real client (a "rich" one that speaks Tandem's custom
//! protocol, or a "plain" one that knows only standard LSP), keeps its own buffers, and answers
//! the server's requests by itself in a background task the way an editor's main loop does:
//! `workspace/applyEdit` is checked against the buffer's version, applied all-or-nothing, and
//! followed by `didChange` *before* the answer (or, in the manner of Emacs's eglot, a moment
//! *after* it: [`EditorBuilder::did_change_after_answer`]). Keystrokes take the same lock as applied edits,
//! so an edit and a keystroke are ordered exactly as they would be in a real editor; a test can
//! also hold the server's edits and type before the editor looks at them, to force that race.
//! Every message the server sends is logged, and tests await the one they need instead of
//! sleeping.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use url::Url;

use crate::client::{read_message, serve_in_process};
use crate::reference::{Encoding, Pos, ReferenceDoc};
use crate::{ModelServer, TIMEOUT};

mod helix;

/// JSON-RPC "method not found": what an editor answers to a request it does not know.
const METHOD_NOT_FOUND: i64 = -32601;

/// Answers a server request from its params (approvals, `showMessageRequest`).
pub type Answer = Arc<dyn Fn(&Value) -> Value + Send + Sync + 'static>;

/// Settings that make the `openai` provider talk to `model` (and never retry, so that a
/// scripting mistake fails fast), with `extra`'s top-level keys added or replacing these.
pub fn scripted_settings(model: &ModelServer, extra: Value) -> Value {
    let mut settings = json!({
        "model": "scripted",
        "models": {"scripted": {
            "provider": "openai",
            "model": "m",
            "baseUrl": format!("{}/v1", model.url()),
        }},
        "network": {"maxRetries": 0},
    });
    if let (Value::Object(settings), Value::Object(extra)) = (&mut settings, extra) {
        settings.extend(extra);
    }
    settings
}

/// Settings with a completion model named `small` (OpenAI-compatible, model `coder`) on `model`,
/// and `completion` as the `completion` key, its `model` set to `small`.
pub fn completion_settings(model: &ModelServer, mut completion: Value) -> Value {
    completion["model"] = json!("small");
    json!({
        "models": {"small": {
            "provider": "openai",
            "model": "coder",
            "baseUrl": format!("{}/v1", model.url()),
        }},
        "network": {"maxRetries": 0},
        "completion": completion,
    })
}

/// An LSP range as JSON.
pub fn range(start_line: u32, start_character: u32, end_line: u32, end_character: u32) -> Value {
    json!({
        "start": {"line": start_line, "character": start_character},
        "end": {"line": end_line, "character": end_character},
    })
}

/// How the editor presents itself in `initialize`. Start from [`FakeEditor::rich`] or
/// [`FakeEditor::plain`], adjust, then [`EditorBuilder::start`].
#[derive(Debug, Clone)]
pub struct EditorBuilder {
    rich: bool,
    apply_edit: bool,
    document_changes: bool,
    create_files: bool,
    change_annotations: bool,
    resolve_support: bool,
    show_message: bool,
    show_document: bool,
    configuration: Option<Value>,
    ignore_progress_create: bool,
    settings: Value,
    encodings: Vec<String>,
    state_dir: Option<PathBuf>,
    workspace: Option<PathBuf>,
    did_change_after_answer: bool,
    user_settings: Option<PathBuf>,
    inline_completion: bool,
    /// What a real editor declared in `initialize` (`capabilities` and `clientInfo`), sent
    /// instead of the capabilities the other fields describe.
    declared: Option<Value>,
    /// Answers `window/showMessageRequest` with "method not found" and this message.
    refuse_message_requests: Option<String>,
    /// A rich editor declares `saveDocuments` and saves when asked.
    save_documents: bool,
}

impl EditorBuilder {
    /// Declares `textDocument.inlineCompletion` (LSP 3.18), as editors with ghost text do.
    pub fn inline_completion(mut self, on: bool) -> Self {
        self.inline_completion = on;
        self
    }

    /// Answers `workspace/applyEdit` first and sends the `didChange`s the edit caused about
    /// 20 ms later, as Emacs's eglot does from an idle timer. Keystrokes in between send the
    /// queued changes first, so the server still sees every change in order.
    pub fn did_change_after_answer(mut self) -> Self {
        self.did_change_after_answer = true;
        self
    }

    /// Saves sessions under `dir` (`ServeOptions.state_dir`); by default nothing is saved.
    pub fn state_dir(mut self, dir: &Path) -> Self {
        self.state_dir = Some(dir.to_owned());
        self
    }

    /// Reads `file` as the user's settings file (`ServeOptions.user_settings`; its folder is
    /// the user's configuration folder); by default there is none.
    pub fn user_settings(mut self, file: &Path) -> Self {
        self.user_settings = Some(file.to_owned());
        self
    }

    /// Uses `dir` (which the test keeps) as the workspace folder instead of a fresh temporary
    /// one, so that a second server can open the same workspace.
    pub fn workspace(mut self, dir: &Path) -> Self {
        self.workspace = Some(dir.to_owned());
        self
    }

    /// `workspace.applyEdit`.
    pub fn apply_edit(mut self, on: bool) -> Self {
        self.apply_edit = on;
        self
    }

    /// `workspaceEdit.documentChanges`.
    pub fn document_changes(mut self, on: bool) -> Self {
        self.document_changes = on;
        self
    }

    /// `workspaceEdit.resourceOperations: ["create"]`.
    pub fn create_files(mut self, on: bool) -> Self {
        self.create_files = on;
        self
    }

    /// `workspaceEdit.changeAnnotationSupport`.
    pub fn change_annotations(mut self, on: bool) -> Self {
        self.change_annotations = on;
        self
    }

    /// `codeAction.resolveSupport.properties: ["command"]`.
    pub fn resolve_support(mut self, on: bool) -> Self {
        self.resolve_support = on;
        self
    }

    /// `window.showMessage` (extra fields in `window/showMessageRequest`'s action items; the
    /// request itself goes to every client).
    pub fn show_message(mut self, on: bool) -> Self {
        self.show_message = on;
        self
    }

    /// Never answer `window/workDoneProgress/create`.
    pub fn ignore_progress_create(mut self) -> Self {
        self.ignore_progress_create = true;
        self
    }

    /// Declares (rich editors) `saveDocuments`: the editor saves the buffers
    /// `tandem/saveDocuments` lists, as the Neovim plugin and the VS Code extension do.
    pub fn save_documents(mut self, on: bool) -> Self {
        self.save_documents = on;
        self
    }

    /// `window.showDocument`.
    pub fn show_document(mut self, on: bool) -> Self {
        self.show_document = on;
        self
    }

    /// Declares `workspace.configuration` and answers every item with `value`.
    pub fn configuration(mut self, value: Value) -> Self {
        self.configuration = Some(value);
        self
    }

    /// `initializationOptions.settings` (the shape of settings.json).
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    /// The position encodings offered, in order of preference (default: UTF-16 only).
    pub fn encodings(mut self, encodings: &[&str]) -> Self {
        self.encodings = encodings.iter().map(|e| (*e).to_owned()).collect();
        self
    }

    /// Creates the workspace folder, starts the server and initializes it.
    pub async fn start(self) -> FakeEditor {
        let (dir, root) = match &self.workspace {
            Some(root) => (None, root.clone()),
            None => {
                let dir = tempfile::tempdir().expect("fake editor: create the workspace folder");
                let root = dir.path().to_owned();
                (Some(dir), root)
            }
        };
        // The server canonicalizes roots; so do we, so that URIs compare equal (macOS /var).
        let root = std::fs::canonicalize(root).expect("fake editor: canonicalize root");
        let options = tandem_lsp::ServeOptions {
            user_settings: self.user_settings.clone(),
            state_dir: self.state_dir.clone(),
            ..tandem_lsp::ServeOptions::default()
        };
        let (read, write, server) = serve_in_process(options);
        let (received_count, _) = watch::channel(0);
        let (apply_releases, apply_released) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            writer: tokio::sync::Mutex::new(write),
            next_id: AtomicI64::new(1),
            pending: Mutex::default(),
            buffers: tokio::sync::Mutex::default(),
            encoding: OnceLock::new(),
            received: Mutex::default(),
            received_count,
            closed: Mutex::new(false),
            applied: Mutex::default(),
            shown: Mutex::default(),
            approvals: Mutex::default(),
            on_approval: Mutex::default(),
            on_message_request: Mutex::default(),
            message_request_error: Mutex::new(self.refuse_message_requests.clone()),
            configuration: self.configuration.clone(),
            ignore_progress_create: self.ignore_progress_create,
            hold_apply_edits: AtomicBool::new(false),
            did_change_after_answer: self.did_change_after_answer,
            queued_changes: Mutex::default(),
            apply_releases,
            apply_released: tokio::sync::Mutex::new(apply_released),
            server_capabilities: OnceLock::new(),
        });
        let reader = tokio::spawn(reader_loop(BufReader::new(read), inner.clone()));
        let editor = FakeEditor {
            inner,
            rich: self.rich,
            root,
            _dir: dir,
            reader,
            server: Some(server),
        };
        let result = editor
            .request("initialize", self.initialize_params(&editor.root_uri()))
            .await
            .unwrap_or_else(|error| panic!("initialize failed: {error}"));
        let encoding = match result["capabilities"]["positionEncoding"].as_str() {
            None | Some("utf-16") => Encoding::Utf16,
            Some("utf-8") => Encoding::Utf8,
            Some("utf-32") => Encoding::Utf32,
            Some(other) => panic!("the server chose an unknown position encoding {other:?}"),
        };
        let _ = editor.inner.encoding.set(encoding);
        let _ = editor
            .inner
            .server_capabilities
            .set(result["capabilities"].clone());
        editor.notify("initialized", json!({})).await;
        editor
    }

    fn initialize_params(&self, root_uri: &str) -> Value {
        let mut window = json!({"workDoneProgress": true});
        if self.show_message {
            window["showMessage"] =
                json!({"messageActionItem": {"additionalPropertiesSupport": false}});
        }
        if self.show_document {
            window["showDocument"] = json!({"support": true});
        }
        let mut workspace_edit = json!({"documentChanges": self.document_changes});
        if self.create_files {
            workspace_edit["resourceOperations"] = json!(["create"]);
        }
        if self.change_annotations {
            workspace_edit["changeAnnotationSupport"] = json!({"groupsOnLabel": false});
        }
        let mut code_action = json!({
            "dataSupport": true,
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "", "quickfix", "refactor", "refactor.rewrite", "source"
            ]}},
        });
        if self.resolve_support {
            code_action["resolveSupport"] = json!({"properties": ["command"]});
        }
        let mut capabilities = json!({
            "general": {"positionEncodings": self.encodings},
            "window": window,
            "workspace": {
                "applyEdit": self.apply_edit,
                "workspaceEdit": workspace_edit,
                "configuration": self.configuration.is_some(),
                "workspaceFolders": true,
            },
            "textDocument": {
                "synchronization": {"dynamicRegistration": false},
                "codeAction": code_action,
            },
        });
        if self.inline_completion {
            capabilities["textDocument"]["inlineCompletion"] =
                json!({"dynamicRegistration": false});
        }
        if self.rich {
            capabilities["experimental"] = json!({"tandem": {
                "events": true,
                "requestApproval": true,
                "saveDocuments": self.save_documents,
            }});
        }
        let mut params = json!({
            "processId": null,
            "clientInfo": {"name": "fake-editor", "version": "1"},
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "project"}],
            "capabilities": capabilities,
        });
        if let Some(declared) = &self.declared {
            params["capabilities"] = declared["capabilities"].clone();
            params["clientInfo"] = declared["clientInfo"].clone();
        }
        if !self.settings.is_null() {
            params["initializationOptions"] = json!({"settings": self.settings});
        }
        params
    }
}

/// One `workspace/applyEdit` as the editor saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyRecord {
    pub label: Option<String>,
    /// The `WorkspaceEdit` as sent.
    pub edit: Value,
    pub applied: bool,
    pub failure_reason: Option<String>,
    /// One per text document edit: the version it carried against the buffer's.
    pub versions: Vec<VersionCheck>,
}

/// The version a text document edit carried, and the buffer's version when it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionCheck {
    pub uri: String,
    /// `None`: the edit said `version: null` (or came in `changes`, which has no versions).
    pub sent: Option<i64>,
    /// `None`: the editor did not have the document open.
    pub buffer: Option<i32>,
}

/// An editor connected to a real in-process server. See the module documentation.
pub struct FakeEditor {
    inner: Arc<Inner>,
    rich: bool,
    root: PathBuf,
    /// The workspace folder, when the editor made it (else the test owns it).
    _dir: Option<tempfile::TempDir>,
    reader: JoinHandle<()>,
    server: Option<JoinHandle<tandem_lsp::ServerExit>>,
}

#[derive(Debug, Clone)]
struct Buffer {
    text: String,
    version: i32,
}

struct Inner {
    writer: tokio::sync::Mutex<WriteHalf<DuplexStream>>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Value>>>,
    /// The lock keystrokes and applied edits share: whoever holds it also sends its `didChange`.
    buffers: tokio::sync::Mutex<HashMap<String, Buffer>>,
    encoding: OnceLock<Encoding>,
    /// Every message from the server that has a method (notifications and requests), in order.
    received: Mutex<Vec<Value>>,
    received_count: watch::Sender<usize>,
    closed: Mutex<bool>,
    applied: Mutex<Vec<ApplyRecord>>,
    shown: Mutex<Vec<Value>>,
    approvals: Mutex<VecDeque<Value>>,
    on_approval: Mutex<Option<Answer>>,
    on_message_request: Mutex<Option<Answer>>,
    /// Answers `window/showMessageRequest` with "method not found" and this message (an editor
    /// that cannot show such a prompt).
    message_request_error: Mutex<Option<String>>,
    configuration: Option<Value>,
    /// Never answers `window/workDoneProgress/create`, as lsp-mode before its fix for #4323
    /// loses a request that arrives with the answer it waits for.
    ignore_progress_create: bool,
    /// Whether each `workspace/applyEdit` waits for a release (see
    /// [`FakeEditor::hold_apply_edits`]).
    hold_apply_edits: AtomicBool,
    /// See [`EditorBuilder::did_change_after_answer`].
    did_change_after_answer: bool,
    /// Document notifications an applied edit caused that are not sent yet; only touched with
    /// the buffers' lock held, which keeps them in order with keystrokes.
    queued_changes: Mutex<Vec<Value>>,
    /// One release per held `workspace/applyEdit`, carrying where its record goes once answered.
    apply_releases: mpsc::UnboundedSender<oneshot::Sender<ApplyRecord>>,
    apply_released: tokio::sync::Mutex<mpsc::UnboundedReceiver<oneshot::Sender<ApplyRecord>>>,
    /// The `capabilities` of the server's `initialize` answer.
    server_capabilities: OnceLock<Value>,
}

impl FakeEditor {
    /// A client that declares `experimental.tandem {events, requestApproval}` and every workspace
    /// edit feature (applyEdit, documentChanges, create, change annotations), resolves code
    /// actions, and can show messages and documents.
    pub fn rich() -> EditorBuilder {
        EditorBuilder {
            rich: true,
            apply_edit: true,
            document_changes: true,
            create_files: true,
            change_annotations: true,
            resolve_support: true,
            show_message: true,
            show_document: true,
            configuration: None,
            ignore_progress_create: false,
            settings: Value::Null,
            encodings: vec!["utf-16".to_owned()],
            state_dir: None,
            workspace: None,
            did_change_after_answer: false,
            user_settings: None,
            inline_completion: false,
            declared: None,
            refuse_message_requests: None,
            save_documents: true,
        }
    }

    /// A standard-LSP client: no Tandem capabilities, work-done progress, versioned workspace
    /// edits without annotations, no `window.showMessage`, no code action resolving. It answers
    /// `showMessageRequest` like any client (see `on_show_message_request`). Helix itself is
    /// [`FakeEditor::helix`].
    pub fn plain() -> EditorBuilder {
        EditorBuilder {
            rich: false,
            apply_edit: true,
            document_changes: true,
            create_files: true,
            change_annotations: false,
            resolve_support: false,
            show_message: false,
            show_document: false,
            configuration: None,
            ignore_progress_create: false,
            settings: Value::Null,
            encodings: vec!["utf-16".to_owned()],
            state_dir: None,
            workspace: None,
            did_change_after_answer: false,
            user_settings: None,
            inline_completion: false,
            declared: None,
            refuse_message_requests: None,
            save_documents: false,
        }
    }

    /// The workspace folder (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn root_uri(&self) -> String {
        Url::from_directory_path(&self.root)
            .expect("fake editor: root is absolute")
            .to_string()
    }

    /// The URI of `relative` (a path under the root).
    pub fn uri(&self, relative: &str) -> String {
        Url::from_file_path(self.root.join(relative))
            .expect("fake editor: path is absolute")
            .to_string()
    }

    /// The negotiated position encoding.
    pub fn encoding(&self) -> Encoding {
        self.inner.encoding()
    }

    /// Writes a file in the workspace (on disk only; the editor does not open it).
    pub fn write_file(&self, relative: &str, text: &str) {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    /// Writes `relative` to disk with `text` and opens it (`didOpen`, version 1). Returns its URI.
    pub async fn open(&self, relative: &str, text: &str) -> String {
        self.write_file(relative, text);
        let uri = self.uri(relative);
        let mut buffers = self.inner.buffers.lock().await;
        buffers.insert(
            uri.clone(),
            Buffer {
                text: text.to_owned(),
                version: 1,
            },
        );
        self.inner.send_did_open(&uri, 1, text).await;
        uri
    }

    /// `didClose`; the buffer is forgotten (the disk keeps what was last written there).
    pub async fn close(&self, uri: &str) {
        let mut buffers = self.inner.buffers.lock().await;
        buffers.remove(uri);
        self.inner
            .notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            )
            .await;
    }

    /// `textDocument/inlineCompletion` at `line`, `character` of `uri`, as typing asks it
    /// (`triggerKind` 2); the answer's result.
    pub async fn request_inline_completion(&self, uri: &str, line: u32, character: u32) -> Value {
        self.request(
            "textDocument/inlineCompletion",
            json!({
                "textDocument": {"uri": uri},
                "position": {"line": line, "character": character},
                "context": {"triggerKind": 2},
            }),
        )
        .await
        .unwrap_or_else(|error| panic!("textDocument/inlineCompletion failed: {error}"))
    }

    /// The `capabilities` the server answered `initialize` with.
    pub fn server_capabilities(&self) -> Value {
        self.inner
            .server_capabilities
            .get()
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// `tandem/didChangeActiveEditor`: `uri` has focus, with `selection` (an LSP range; an empty
    /// one is the cursor).
    pub async fn focus(&self, uri: &str, selection: Option<Value>) {
        let mut params = json!({"textDocument": {"uri": uri}});
        if let Some(selection) = selection {
            params["selection"] = selection;
        }
        self.notify("tandem/didChangeActiveEditor", params).await;
    }

    /// Types `text` at `position` (clamped as LSP clamps): the buffer changes, its version grows
    /// and `didChange` goes out, all under the buffers' lock. Returns the new version.
    pub async fn type_at(&self, uri: &str, position: Pos, text: &str) -> i32 {
        let mut buffers = self.inner.buffers.lock().await;
        let encoding = self.inner.encoding();
        let buffer = buffers
            .get_mut(uri)
            .unwrap_or_else(|| panic!("typing into {uri}, which is not open"));
        let offset = ReferenceDoc::new(buffer.text.clone()).offset(position, encoding);
        self.inner
            .insert_locked(uri, buffer, offset, text, encoding)
            .await
    }

    /// Types `text` at the end of the buffer. Returns the new version.
    pub async fn insert_at_end(&self, uri: &str, text: &str) -> i32 {
        let mut buffers = self.inner.buffers.lock().await;
        let encoding = self.inner.encoding();
        let buffer = buffers
            .get_mut(uri)
            .unwrap_or_else(|| panic!("typing into {uri}, which is not open"));
        let offset = buffer.text.len();
        self.inner
            .insert_locked(uri, buffer, offset, text, encoding)
            .await
    }

    /// The editor's text of an open document.
    pub async fn buffer_text(&self, uri: &str) -> String {
        self.buffer(uri).await.0
    }

    /// The editor's version of an open document.
    pub async fn buffer_version(&self, uri: &str) -> i32 {
        self.buffer(uri).await.1
    }

    async fn buffer(&self, uri: &str) -> (String, i32) {
        let buffers = self.inner.buffers.lock().await;
        let buffer = buffers
            .get(uri)
            .unwrap_or_else(|| panic!("{uri} is not open in the editor"));
        (buffer.text.clone(), buffer.version)
    }

    /// Whether the editor has `uri` open.
    pub async fn is_open(&self, uri: &str) -> bool {
        self.inner.buffers.lock().await.contains_key(uri)
    }

    /// Sends a request and waits for its answer: `Ok(result)` or `Err(error object)`.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.inner.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().unwrap().insert(id, tx);
        self.inner
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let response = tokio::time::timeout(TIMEOUT, rx)
            .await
            .unwrap_or_else(|_| panic!("no response to {method} within {TIMEOUT:?}"))
            .unwrap_or_else(|_| panic!("connection closed before the response to {method}"));
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"].clone()),
        }
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.inner.notify(method, params).await;
    }

    /// What the server holds for `uri` (`tandem/debug/document`).
    pub async fn server_document(&self, uri: &str) -> Value {
        self.request("tandem/debug/document", json!({"uri": uri}))
            .await
            .unwrap_or_else(|error| panic!("tandem/debug/document {uri}: {error}"))
    }

    /// `textDocument/codeAction` for `range` of `uri` with these diagnostics in the context.
    pub async fn code_actions(&self, uri: &str, range: Value, diagnostics: Value) -> Vec<Value> {
        let result = self
            .request(
                "textDocument/codeAction",
                json!({
                    "textDocument": {"uri": uri},
                    "range": range,
                    "context": {"diagnostics": diagnostics, "triggerKind": 1},
                }),
            )
            .await
            .unwrap_or_else(|error| panic!("textDocument/codeAction failed: {error}"));
        match result {
            Value::Null => Vec::new(),
            Value::Array(actions) => actions,
            other => panic!("textDocument/codeAction answered {other}"),
        }
    }

    /// `workspace/executeCommand` with a `Command` object (`{title, command, arguments}`).
    pub async fn execute(&self, command: &Value) -> Result<Value, Value> {
        let mut params = json!({"command": command["command"]});
        if let Some(arguments) = command.get("arguments") {
            params["arguments"] = arguments.clone();
        }
        self.request("workspace/executeCommand", params).await
    }

    /// Queues the answer (`{"type": "allowOnce"}`, …) to the next `tandem/requestApproval`.
    pub fn push_approval(&self, decision: Value) {
        self.inner.approvals.lock().unwrap().push_back(decision);
    }

    /// Decides approvals (from the request's params) once the queue is empty. Without either,
    /// the editor rejects, saying that the test scripted no decision.
    pub fn on_approval(&self, decide: impl Fn(&Value) -> Value + Send + Sync + 'static) {
        *self.inner.on_approval.lock().unwrap() = Some(Arc::new(decide));
    }

    /// Answers `window/showMessageRequest` (the result: an action item or null). By default the
    /// editor picks "Allow once" when offered, else nothing.
    pub fn on_show_message_request(
        &self,
        answer: impl Fn(&Value) -> Value + Send + Sync + 'static,
    ) {
        *self.inner.on_message_request.lock().unwrap() = Some(Arc::new(answer));
    }

    /// Answers every `window/showMessageRequest` from now on with a "method not found" error
    /// carrying `message`, as an editor that cannot show such prompts does.
    pub fn fail_show_message_requests(&self, message: &str) {
        *self.inner.message_request_error.lock().unwrap() = Some(message.to_owned());
    }

    /// Every message from the server that has a method (notifications and its requests).
    pub fn received(&self) -> Vec<Value> {
        self.inner.received.lock().unwrap().clone()
    }

    pub fn received_count(&self) -> usize {
        self.inner.received.lock().unwrap().len()
    }

    /// The params of every received message with this method.
    pub fn received_params(&self, method: &str) -> Vec<Value> {
        self.inner
            .received
            .lock()
            .unwrap()
            .iter()
            .filter(|message| message["method"] == method)
            .map(|message| message["params"].clone())
            .collect()
    }

    /// From now on each `workspace/applyEdit` waits, once it is logged and before the editor
    /// checks it against its buffers, until [`FakeEditor::release_apply_edit`] lets it through,
    /// as an editor busy elsewhere would. A test awaits the request, types (the server then holds
    /// an edit computed from a version the user has left), and releases it: the race between an
    /// agent's edit and a keystroke, made to happen every time rather than by luck.
    pub fn hold_apply_edits(&self) {
        self.inner.hold_apply_edits.store(true, Ordering::SeqCst);
    }

    /// Lets the oldest held `workspace/applyEdit` through and waits until the editor has
    /// answered it (its `didChange`s, if applied, went out first); returns its record.
    pub async fn release_apply_edit(&self) -> ApplyRecord {
        let (done, record) = oneshot::channel();
        self.inner
            .apply_releases
            .send(done)
            .expect("the editor's reader has stopped");
        tokio::time::timeout(TIMEOUT, record)
            .await
            .unwrap_or_else(|_| panic!("no held workspace/applyEdit answered within {TIMEOUT:?}"))
            .expect("the editor's reader stopped before answering the edit")
    }

    /// Every `workspace/applyEdit`, accepted or refused, in order.
    pub fn apply_edits(&self) -> Vec<ApplyRecord> {
        self.inner.applied.lock().unwrap().clone()
    }

    /// The params of every `window/showDocument`.
    pub fn shown_documents(&self) -> Vec<Value> {
        self.inner.shown.lock().unwrap().clone()
    }

    /// Waits for the first received message (since the start) that `matches`.
    pub async fn wait_for(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_from(0, what, matches).await
    }

    /// Waits for the first message at index `start` or later of [`FakeEditor::received`] that
    /// `matches`.
    pub async fn wait_for_from(
        &self,
        start: usize,
        what: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut count = self.inner.received_count.subscribe();
        let mut next = start;
        let wait = async {
            loop {
                count.borrow_and_update();
                {
                    let received = self.inner.received.lock().unwrap();
                    if let Some(found) = received.iter().skip(next).find(|m| matches(m)) {
                        return found.clone();
                    }
                    next = next.max(received.len());
                }
                if *self.inner.closed.lock().unwrap() {
                    panic!("the connection closed while waiting for {what}");
                }
                // The sender lives in `self.inner`, so this cannot fail while we wait.
                let _ = count.changed().await;
            }
        };
        match tokio::time::timeout(TIMEOUT, wait).await {
            Ok(found) => found,
            Err(_) => {
                let methods: Vec<String> = self
                    .received()
                    .iter()
                    .rev()
                    .take(20)
                    .map(|m| format!("{} {}", m["method"], m["params"]))
                    .collect();
                panic!(
                    "no {what} within {TIMEOUT:?}; the last messages, newest first:\n{}",
                    methods.join("\n")
                )
            }
        }
    }

    /// The events of one turn (`tandem/event` params' `event`), so far, in order.
    pub fn events_for_turn(&self, turn_id: &str) -> Vec<Value> {
        self.received_params("tandem/event")
            .into_iter()
            .filter(|params| params["turnId"] == turn_id)
            .map(|params| params["event"].clone())
            .collect()
    }

    /// Waits for an event of `turn_id` that `matches`; returns the event.
    pub async fn wait_event(
        &self,
        turn_id: &str,
        what: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let found = self
            .wait_for(what, |m| {
                m["method"] == "tandem/event"
                    && m["params"]["turnId"] == turn_id
                    && matches(&m["params"]["event"])
            })
            .await;
        found["params"]["event"].clone()
    }

    /// Waits for the end of a turn. A rich editor returns its `turnFinished` event; a plain one
    /// the `end` value of the turn's `$/progress` (the server names its tokens `…/<turnId>`; a
    /// test that passed its own `workDoneToken` uses [`FakeEditor::wait_progress_end`]).
    pub async fn wait_turn_finished(&self, turn_id: &str) -> Value {
        if self.rich {
            return self
                .wait_event(turn_id, &format!("turnFinished of {turn_id}"), |event| {
                    event["type"] == "turnFinished"
                })
                .await;
        }
        let suffix = format!("/{turn_id}");
        let found = self
            .wait_for(&format!("the progress end of {turn_id}"), |m| {
                m["method"] == "$/progress"
                    && m["params"]["value"]["kind"] == "end"
                    && m["params"]["token"]
                        .as_str()
                        .is_some_and(|token| token == turn_id || token.ends_with(&suffix))
            })
            .await;
        found["params"]["value"].clone()
    }

    /// Sends `text` as a `tandem/prompt` and waits for the end of its turn, as
    /// [`FakeEditor::wait_turn_finished`] returns it.
    pub async fn prompt_and_finish(&self, text: &str) -> Value {
        let started = self
            .request("tandem/prompt", json!({ "text": text }))
            .await
            .unwrap_or_else(|error| panic!("tandem/prompt failed: {error}"));
        let turn = started["turnId"].as_str().unwrap_or_default().to_owned();
        self.wait_turn_finished(&turn).await
    }

    /// Waits for the `end` of the work-done progress `token`; returns its value.
    pub async fn wait_progress_end(&self, token: &Value) -> Value {
        let found = self
            .wait_for(&format!("the progress end of {token}"), |m| {
                m["method"] == "$/progress"
                    && m["params"]["token"] == *token
                    && m["params"]["value"]["kind"] == "end"
            })
            .await;
        found["params"]["value"].clone()
    }

    /// `shutdown`, `exit`, and the server's own verdict on how it ended.
    pub async fn shutdown(mut self) -> tandem_lsp::ServerExit {
        self.request("shutdown", Value::Null)
            .await
            .unwrap_or_else(|error| panic!("shutdown failed: {error}"));
        self.notify("exit", Value::Null).await;
        let server = self.server.take().expect("the server handle is taken once");
        tokio::time::timeout(TIMEOUT, server)
            .await
            .expect("the server did not stop after exit")
            .expect("the server task panicked")
    }
}

impl Drop for FakeEditor {
    fn drop(&mut self) {
        self.reader.abort();
        if let Some(server) = &self.server {
            server.abort();
        }
    }
}

impl Inner {
    fn encoding(&self) -> Encoding {
        self.encoding.get().copied().unwrap_or(Encoding::Utf16)
    }

    async fn send(&self, message: &Value) {
        let body = serde_json::to_vec(message).unwrap();
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        let mut writer = self.writer.lock().await;
        writer.write_all(&frame).await.unwrap();
        writer.flush().await.unwrap();
    }

    async fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    async fn send_did_open(&self, uri: &str, version: i32, text: &str) {
        self.send(&did_open(uri, version, text)).await;
    }

    /// Sends the document notifications queued by applied edits; the caller holds the buffers'
    /// lock.
    async fn send_queued_changes(&self) {
        let queued = std::mem::take(&mut *self.queued_changes.lock().unwrap());
        for notification in queued {
            self.send(&notification).await;
        }
    }

    /// Inserts at a byte offset of a buffer whose lock the caller holds, and sends `didChange`.
    async fn insert_locked(
        &self,
        uri: &str,
        buffer: &mut Buffer,
        offset: usize,
        text: &str,
        encoding: Encoding,
    ) -> i32 {
        self.send_queued_changes().await;
        let at = position_at(&buffer.text, offset, encoding);
        buffer.text.insert_str(offset, text);
        buffer.version += 1;
        let change = json!({"range": {"start": pos_json(at), "end": pos_json(at)}, "text": text});
        self.notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": buffer.version},
                "contentChanges": [change],
            }),
        )
        .await;
        buffer.version
    }

    fn log(&self, message: &Value) {
        let count = {
            let mut received = self.received.lock().unwrap();
            received.push(message.clone());
            received.len()
        };
        self.received_count.send_replace(count);
    }

    /// Answers one request from the server.
    async fn answer(&self, method: &str, params: &Value) -> Result<Value, (i64, String)> {
        match method {
            "workspace/applyEdit" => Ok(self.apply_edit(params).await),
            "window/workDoneProgress/create"
            | "client/registerCapability"
            | "client/unregisterCapability" => Ok(Value::Null),
            "workspace/configuration" => {
                let Some(value) = &self.configuration else {
                    return Err((
                        METHOD_NOT_FOUND,
                        "this editor did not declare workspace.configuration".to_owned(),
                    ));
                };
                let items = params["items"].as_array().map_or(0, Vec::len);
                Ok(Value::Array(vec![value.clone(); items]))
            }
            "tandem/requestApproval" => {
                let queued = self.approvals.lock().unwrap().pop_front();
                let decision = match queued {
                    Some(decision) => decision,
                    None => match self.on_approval.lock().unwrap().clone() {
                        Some(decide) => decide(params),
                        None => json!({
                            "type": "reject",
                            "feedback": "the test scripted no approval decision",
                        }),
                    },
                };
                Ok(json!({ "decision": decision }))
            }
            "window/showMessageRequest" => {
                if let Some(message) = self.message_request_error.lock().unwrap().clone() {
                    return Err((METHOD_NOT_FOUND, message));
                }
                let answer = self.on_message_request.lock().unwrap().clone();
                Ok(match answer {
                    Some(answer) => answer(params),
                    None => params["actions"]
                        .as_array()
                        .and_then(|actions| {
                            actions
                                .iter()
                                .find(|action| action["title"] == "Allow once")
                                .cloned()
                        })
                        .unwrap_or(Value::Null),
                })
            }
            "window/showDocument" => {
                self.shown.lock().unwrap().push(params.clone());
                Ok(json!({"success": true}))
            }
            "tandem/saveDocuments" => Ok(self.save_documents(params).await),
            _ => Err((
                METHOD_NOT_FOUND,
                format!("the fake editor does not handle {method}"),
            )),
        }
    }

    /// `tandem/saveDocuments`: each listed open buffer is written to its file as it is, and
    /// `didSave` sent; answers the ones saved.
    async fn save_documents(&self, params: &Value) -> Value {
        let uris: Vec<String> = params["uris"]
            .as_array()
            .map(|uris| {
                uris.iter()
                    .filter_map(|uri| uri.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let buffers = self.buffers.lock().await;
        let mut saved = Vec::new();
        for uri in uris {
            let (Some(buffer), Some(path)) = (buffers.get(&uri), file_path(&uri)) else {
                continue;
            };
            if std::fs::write(&path, &buffer.text).is_ok() {
                self.notify(
                    "textDocument/didSave",
                    json!({"textDocument": {"uri": uri}}),
                )
                .await;
                saved.push(uri);
            }
        }
        json!({ "saved": saved })
    }

    /// `workspace/applyEdit`: checked and staged in full first, so that a refused edit changes
    /// nothing; then every change is sent (`didOpen`/`didChange`) before the answer.
    async fn apply_edit(&self, params: &Value) -> Value {
        let encoding = self.encoding();
        let mut buffers = self.buffers.lock().await;
        let mut versions = Vec::new();
        let staged = stage(&buffers, &params["edit"], encoding, &mut versions);
        let record = |applied: bool, failure_reason: Option<String>| ApplyRecord {
            label: params["label"].as_str().map(str::to_owned),
            edit: params["edit"].clone(),
            applied,
            failure_reason,
            versions: versions.clone(),
        };
        let staged = match staged {
            Ok(staged) => staged,
            Err(reason) => {
                self.applied
                    .lock()
                    .unwrap()
                    .push(record(false, Some(reason.clone())));
                return json!({"applied": false, "failureReason": reason});
            }
        };
        for document in staged {
            let mut notifications = Vec::new();
            if let Some(initial) = &document.opened {
                notifications.push(did_open(&document.uri, 1, initial));
            }
            for (version, changes) in &document.changes {
                notifications.push(json!({
                    "jsonrpc": "2.0",
                    "method": "textDocument/didChange",
                    "params": {
                        "textDocument": {"uri": document.uri, "version": version},
                        "contentChanges": changes,
                    },
                }));
            }
            if self.did_change_after_answer {
                self.queued_changes.lock().unwrap().extend(notifications);
            } else {
                for notification in notifications {
                    self.send(&notification).await;
                }
            }
            buffers.insert(
                document.uri.clone(),
                Buffer {
                    text: document.text,
                    version: document.version,
                },
            );
        }
        drop(buffers);
        self.applied.lock().unwrap().push(record(true, None));
        json!({"applied": true})
    }
}

/// A document as one workspace edit leaves it, with what the server must be told.
struct Staged {
    uri: String,
    /// `Some(text)`: the editor opens it with this text (version 1) first.
    opened: Option<String>,
    /// `didChange`s to send: the new version and its content changes.
    changes: Vec<(i32, Vec<Value>)>,
    text: String,
    version: i32,
}

fn stage(
    buffers: &HashMap<String, Buffer>,
    edit: &Value,
    encoding: Encoding,
    versions: &mut Vec<VersionCheck>,
) -> Result<Vec<Staged>, String> {
    let mut staged: Vec<Staged> = Vec::new();
    if let Some(operations) = edit.get("documentChanges").and_then(Value::as_array) {
        for operation in operations {
            match operation.get("kind").and_then(Value::as_str) {
                Some("create") => create(buffers, &mut staged, operation)?,
                Some(kind) => {
                    return Err(format!(
                        "the fake editor does not support {kind} operations"
                    ))
                }
                None => {
                    let uri = operation["textDocument"]["uri"]
                        .as_str()
                        .ok_or("a text document edit without a uri")?;
                    let sent = operation["textDocument"]["version"].as_i64();
                    edit_document(
                        buffers,
                        &mut staged,
                        uri,
                        sent,
                        &operation["edits"],
                        encoding,
                        versions,
                    )?;
                }
            }
        }
    } else if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            edit_document(buffers, &mut staged, uri, None, edits, encoding, versions)?;
        }
    }
    Ok(staged)
}

fn create(
    buffers: &HashMap<String, Buffer>,
    staged: &mut Vec<Staged>,
    operation: &Value,
) -> Result<(), String> {
    let uri = operation["uri"]
        .as_str()
        .ok_or("a create operation without a uri")?;
    let on_disk = file_path(uri).is_some_and(|path| path.exists());
    let exists = on_disk || buffers.contains_key(uri) || staged.iter().any(|s| s.uri == uri);
    if exists {
        if operation["options"]["ignoreIfExists"] == true {
            return Ok(());
        }
        return Err(format!("cannot create {uri}: it already exists"));
    }
    staged.push(Staged {
        uri: uri.to_owned(),
        opened: Some(String::new()),
        changes: Vec::new(),
        text: String::new(),
        version: 1,
    });
    Ok(())
}

fn edit_document(
    buffers: &HashMap<String, Buffer>,
    staged: &mut Vec<Staged>,
    uri: &str,
    sent: Option<i64>,
    edits: &Value,
    encoding: Encoding,
    versions: &mut Vec<VersionCheck>,
) -> Result<(), String> {
    let open = buffers.get(uri);
    versions.push(VersionCheck {
        uri: uri.to_owned(),
        sent,
        buffer: open.map(|buffer| buffer.version),
    });
    let index = match staged.iter().position(|s| s.uri == uri) {
        Some(index) => index,
        None => {
            let document = match open {
                Some(buffer) => Staged {
                    uri: uri.to_owned(),
                    opened: None,
                    changes: Vec::new(),
                    text: buffer.text.clone(),
                    version: buffer.version,
                },
                // An editor opens a closed file to edit it, as VS Code does in the background.
                None => {
                    let text = file_path(uri)
                        .and_then(|path| std::fs::read_to_string(path).ok())
                        .ok_or_else(|| format!("{uri} is neither open nor a readable file"))?;
                    Staged {
                        uri: uri.to_owned(),
                        opened: Some(text.clone()),
                        changes: Vec::new(),
                        text,
                        version: 1,
                    }
                }
            };
            staged.push(document);
            staged.len() - 1
        }
    };
    let document = &mut staged[index];
    if let Some(sent) = sent {
        match open {
            Some(buffer) if i64::from(buffer.version) == sent => {}
            Some(buffer) => {
                return Err(format!(
                    "{uri} is at version {}, the edit was made for version {sent}",
                    buffer.version
                ))
            }
            None => return Err(format!("{uri} is not open, the edit names version {sent}")),
        }
    }
    let edits = edits
        .as_array()
        .ok_or_else(|| format!("the edits for {uri} are not an array"))?;
    let (text, changes) = apply_text_edits(&document.text, edits, encoding)?;
    document.text = text;
    document.version += 1;
    document.changes.push((document.version, changes));
    Ok(())
}

/// Applies LSP text edits (ranges relative to `original`) all at once. Returns the new text and
/// the same change as `didChange` content changes, last edit first so that each range still
/// holds when it is applied.
fn apply_text_edits(
    original: &str,
    edits: &[Value],
    encoding: Encoding,
) -> Result<(String, Vec<Value>), String> {
    let doc = ReferenceDoc::new(original);
    let mut spans = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        let start = pos_from_json(&edit["range"]["start"])?;
        let end = pos_from_json(&edit["range"]["end"])?;
        let (from, to) = (doc.offset(start, encoding), doc.offset(end, encoding));
        if from > to {
            return Err(format!("edit {index} has a reversed range: {edit}"));
        }
        let new_text = edit["newText"]
            .as_str()
            .ok_or_else(|| format!("edit {index} has no newText: {edit}"))?;
        spans.push((from, to, index, new_text));
    }
    spans.sort_by_key(|&(from, to, index, _)| (from, to, index));
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            return Err(format!("edits {} and {} overlap", pair[0].2, pair[1].2));
        }
    }
    let mut text = original.to_owned();
    let mut changes = Vec::new();
    for &(from, to, _, new_text) in spans.iter().rev() {
        let start = position_at(original, from, encoding);
        let end = position_at(original, to, encoding);
        text.replace_range(from..to, new_text);
        changes.push(json!({
            "range": {"start": pos_json(start), "end": pos_json(end)},
            "text": new_text,
        }));
    }
    Ok((text, changes))
}

/// The LSP position of a byte offset (a character boundary) in `text`.
fn position_at(text: &str, offset: usize, encoding: Encoding) -> Pos {
    let bytes = text.as_bytes();
    let mut line = 0;
    let mut line_start = 0;
    let mut i = 0;
    while i < offset {
        match bytes[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            // A CRLF is one break; an offset between its two bytes is not a position at all.
            b'\r' if bytes.get(i + 1) == Some(&b'\n') && i + 1 < offset => {
                i += 1;
                line += 1;
                line_start = i + 1;
            }
            b'\r' if bytes.get(i + 1) != Some(&b'\n') => {
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let before = &text[line_start.min(offset)..offset];
    let character = match encoding {
        Encoding::Utf8 => before.len(),
        Encoding::Utf16 => before.encode_utf16().count(),
        Encoding::Utf32 => before.chars().count(),
    };
    Pos {
        line,
        character: u32::try_from(character).unwrap(),
    }
}

fn pos_json(pos: Pos) -> Value {
    json!({"line": pos.line, "character": pos.character})
}

fn pos_from_json(value: &Value) -> Result<Pos, String> {
    let field = |name: &str| {
        value[name]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("not an LSP position: {value}"))
    };
    Ok(Pos {
        line: field("line")?,
        character: field("character")?,
    })
}

/// A `didOpen` notification.
fn did_open(uri: &str, version: i32, text: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {"textDocument": {
            "uri": uri,
            "languageId": language_id(uri),
            "version": version,
            "text": text,
        }},
    })
}

fn file_path(uri: &str) -> Option<PathBuf> {
    Url::parse(uri).ok()?.to_file_path().ok()
}

fn language_id(uri: &str) -> &'static str {
    match uri.rsplit('.').next() {
        Some("rs") => "rust",
        Some("py") => "python",
        Some("js") => "javascript",
        Some("ts") => "typescript",
        Some("md") => "markdown",
        Some("sh") => "shellscript",
        _ => "plaintext",
    }
}

/// Reads the server's messages: responses go to their waiters, everything else is logged, and
/// the server's requests are answered here, one after another, as an editor's main loop does.
async fn reader_loop(mut reader: BufReader<tokio::io::ReadHalf<DuplexStream>>, inner: Arc<Inner>) {
    while let Some(message) = read_message(&mut reader).await {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            let waiter = message
                .get("id")
                .and_then(Value::as_i64)
                .and_then(|id| inner.pending.lock().unwrap().remove(&id));
            match waiter {
                Some(waiter) => {
                    let _ = waiter.send(message);
                }
                None => inner.log(&message),
            }
            continue;
        };
        let method = method.to_owned();
        inner.log(&message);
        let Some(id) = message.get("id").cloned() else {
            continue;
        };
        if inner.ignore_progress_create && method == "window/workDoneProgress/create" {
            continue;
        }
        // A held edit waits here, before anything looks at the buffers, so the test can type.
        let held =
            if method == "workspace/applyEdit" && inner.hold_apply_edits.load(Ordering::SeqCst) {
                inner.apply_released.lock().await.recv().await
            } else {
                None
            };
        let response = match inner.answer(&method, &message["params"]).await {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, text)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
            }
        };
        inner.send(&response).await;
        if method == "workspace/applyEdit" && inner.did_change_after_answer {
            let inner = inner.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                let _buffers = inner.buffers.lock().await;
                inner.send_queued_changes().await;
            });
        }
        if let Some(done) = held {
            let record = inner.applied.lock().unwrap().last().cloned();
            let _ = done.send(record.expect("an answered workspace/applyEdit leaves a record"));
        }
    }
    *inner.closed.lock().unwrap() = true;
    // Wakes the waiters, who then see `closed`.
    inner.received_count.send_modify(|_| {});
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(l1: u32, c1: u32, l2: u32, c2: u32, text: &str) -> Value {
        json!({"range": range(l1, c1, l2, c2), "newText": text})
    }

    #[test]
    fn text_edits_apply_to_the_original_text_all_at_once() {
        let original = "a😀b\r\ncd\nef";
        let edits = [
            edit(2, 0, 2, 1, "E"),
            edit(0, 3, 0, 4, "B"),
            edit(1, 0, 1, 0, "<"),
            edit(1, 0, 1, 0, ">"),
        ];
        let (text, changes) = apply_text_edits(original, &edits, Encoding::Utf16).unwrap();
        assert_eq!(text, "a😀B\r\n<>cd\nEf");
        // Replaying the content changes in order, as the server does, gives the same text.
        let mut doc = ReferenceDoc::new(original);
        for change in &changes {
            let edit = crate::reference::Edit {
                range: Some((
                    pos_from_json(&change["range"]["start"]).unwrap(),
                    pos_from_json(&change["range"]["end"]).unwrap(),
                )),
                text: change["text"].as_str().unwrap().to_owned(),
            };
            doc.apply(&edit, Encoding::Utf16);
        }
        assert_eq!(doc.text, text);
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let edits = [edit(0, 0, 0, 3, "x"), edit(0, 2, 0, 4, "y")];
        let error = apply_text_edits("abcdef", &edits, Encoding::Utf8).unwrap_err();
        assert_eq!(error, "edits 0 and 1 overlap");
    }

    #[test]
    fn positions_count_lines_and_units_like_lsp() {
        let text = "a\r\nb\rc😀d";
        assert_eq!(
            position_at(text, 0, Encoding::Utf16),
            Pos {
                line: 0,
                character: 0
            }
        );
        assert_eq!(
            position_at(text, 3, Encoding::Utf16),
            Pos {
                line: 1,
                character: 0
            }
        );
        assert_eq!(
            position_at(text, 5, Encoding::Utf16),
            Pos {
                line: 2,
                character: 0
            }
        );
        let end = text.len();
        assert_eq!(
            position_at(text, end, Encoding::Utf16),
            Pos {
                line: 2,
                character: 4
            }
        );
        assert_eq!(
            position_at(text, end, Encoding::Utf8),
            Pos {
                line: 2,
                character: 6
            }
        );
        assert_eq!(
            position_at(text, end, Encoding::Utf32),
            Pos {
                line: 2,
                character: 3
            }
        );
    }

    #[test]
    fn created_files_open_empty_then_take_their_text() {
        let workspace_edit = json!({"documentChanges": [
            {"kind": "create", "uri": "file:///nowhere/new.txt", "options": {"ignoreIfExists": false}},
            {"textDocument": {"uri": "file:///nowhere/new.txt", "version": null},
             "edits": [edit(0, 0, 0, 0, "hello\n")]},
        ]});
        let mut versions = Vec::new();
        let staged = stage(
            &HashMap::new(),
            &workspace_edit,
            Encoding::Utf16,
            &mut versions,
        )
        .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(staged.len(), 1);
        assert_eq!(staged[0].opened.as_deref(), Some(""));
        assert_eq!(staged[0].text, "hello\n");
        assert_eq!(staged[0].version, 2);
        assert_eq!(
            staged[0].changes,
            [(
                2,
                vec![json!({"range": range(0, 0, 0, 0), "text": "hello\n"})]
            )]
        );
        assert_eq!(versions[0].sent, None);
    }

    #[test]
    fn stale_versions_refuse_the_whole_edit() {
        let mut buffers = HashMap::new();
        buffers.insert(
            "file:///a.txt".to_owned(),
            Buffer {
                text: "one".into(),
                version: 4,
            },
        );
        let workspace_edit = json!({"documentChanges": [{
            "textDocument": {"uri": "file:///a.txt", "version": 3},
            "edits": [edit(0, 0, 0, 3, "two")],
        }]});
        let mut versions = Vec::new();
        let error = stage(&buffers, &workspace_edit, Encoding::Utf16, &mut versions)
            .err()
            .unwrap();
        assert_eq!(
            error,
            "file:///a.txt is at version 4, the edit was made for version 3"
        );
        assert_eq!(
            versions,
            [VersionCheck {
                uri: "file:///a.txt".into(),
                sent: Some(3),
                buffer: Some(4),
            }]
        );
    }
}
