//! Attach: a terminal front end joins the live session of the `tandem lsp` an editor runs, over
//! ACP on the server's Unix socket (`tandem_acp::attach`). The editor is a plain LSP client
//! driving the built binary over stdio; the terminal is a raw ACP client (JSON lines) on the
//! socket found through the endpoint file, or `tandem chat --attach` itself on a real terminal
//! (tmux); the model is the scripted model server.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tandem_acp::attach::{self, Endpoint};
use tandem_test_support::{scripted_settings, ModelServer, Reply, TestClient, TIMEOUT};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::OwnedWriteHalf;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};

use super::headless;
use super::real_editor::{self, Scenario, CALC};
use super::terminal::{self, quoted};

const LIB: &str = "pub fn area(w: u32, h: u32) -> u32 {\n    w + h\n}\n";
const LIB_FIXED: &str = "pub fn area(w: u32, h: u32) -> u32 {\n    w * h\n}\n";
const LIB_DOUBLED: &str = "pub fn area(w: u32, h: u32) -> u32 {\n    2 * w * h\n}\n";

/// An editor running the real `tandem lsp`, with its folders.
struct Editor {
    client: TestClient,
    /// Every message the server sent that a wait went past, in order.
    seen: Vec<Value>,
    /// The `workspace/applyEdit` requests answered, by id.
    answered: Vec<Value>,
    child: Child,
    workspace: PathBuf,
    runtime: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

impl Editor {
    /// Starts `tandem lsp` with its runtime directory in a fresh temporary folder, initializes
    /// it as a rich editor (events and approval prompts) with `model`'s settings, and opens
    /// `src/lib.rs` with a selection.
    async fn start(model: &ModelServer) -> Editor {
        let (config, state, workspace, run) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let root = workspace.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), LIB).unwrap();
        // Made by the server, 0700.
        let runtime = run.path().join("tandem");
        let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
        command
            .args(["lsp", "--log-file"])
            .arg(config.path().join("tandem.log"))
            .args(["--log-level", "debug"])
            .env("TANDEM_CONFIG_DIR", config.path())
            .env("HOME", config.path())
            .env("TANDEM_STATE_DIR", state.path())
            .env("TANDEM_RUNTIME_DIR", &runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        headless::without_model_choice(&mut command);
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut client = TestClient::new(stdout, stdin);
        let root_uri = url::Url::from_file_path(&root).unwrap().to_string();
        let settings = json!({
            "model": "scripted",
            "models": {"scripted": {
                "provider": "openai",
                "model": "m",
                "baseUrl": format!("{}/v1", model.url()),
            }},
            "network": {"maxRetries": 0},
        });
        client
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "clientInfo": {"name": "attach-test-editor", "version": "1"},
                    "rootUri": root_uri,
                    "workspaceFolders": [{"uri": root_uri, "name": "project"}],
                    "capabilities": {
                        "general": {"positionEncodings": ["utf-8"]},
                        "workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}},
                        "experimental": {"tandem": {"events": true, "requestApproval": true}},
                    },
                    "initializationOptions": {"settings": settings},
                }),
            )
            .await
            .unwrap();
        client.notify("initialized", json!({})).await;
        let editor = Editor {
            client,
            seen: Vec::new(),
            answered: Vec::new(),
            child,
            workspace: root,
            runtime,
            _dirs: vec![config, state, workspace, run],
        };
        let uri = editor.uri();
        let mut editor = editor;
        editor.client.did_open(&uri, 1, LIB).await;
        // The selection: `w + h`, line 2.
        editor
            .client
            .notify(
                "tandem/didChangeActiveEditor",
                json!({"textDocument": {"uri": uri}, "selection": {
                    "start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}
                }}),
            )
            .await;
        editor
    }

    /// `tandem chat --attach` as a shell command line, in the workspace with the server's
    /// settings, state and runtime folders (so it finds the server's endpoint), no colour.
    fn chat_command(&self) -> String {
        let path = |path: &Path| quoted(path.to_str().unwrap());
        let (config, state) = (self._dirs[0].path(), self._dirs[1].path());
        format!(
            "cd {} && env -u TANDEM_MODEL -u ANTHROPIC_API_KEY -u GEMINI_API_KEY -u OPENAI_API_KEY \
             NO_COLOR=1 TERM=xterm-256color HOME={} TANDEM_CONFIG_DIR={} TANDEM_STATE_DIR={} \
             TANDEM_RUNTIME_DIR={} {} --log-file {} chat --attach",
            path(&self.workspace),
            path(config),
            path(config),
            path(state),
            path(&self.runtime),
            path(Path::new(env!("CARGO_BIN_EXE_tandem"))),
            path(&config.join("chat.log")),
        )
    }

    fn uri(&self) -> String {
        url::Url::from_file_path(self.workspace.join("src/lib.rs"))
            .unwrap()
            .to_string()
    }

    /// The server's endpoint for the workspace, once its file is there.
    async fn endpoint(&self) -> Endpoint {
        let wait = async {
            loop {
                if let Some(endpoint) = attach::endpoints_for_in(&self.runtime, &self.workspace)
                    .into_iter()
                    .next()
                {
                    return endpoint;
                }
                // Polling for the file the server writes once initialized.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(TIMEOUT, wait)
            .await
            .expect("the server wrote no endpoint file")
    }

    /// The first message from the server that `matches`, among those seen or the next ones
    /// (each kept in `seen`).
    async fn wait(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.seen.iter().find(|m| matches(m)) {
            return found.clone();
        }
        let passed = Mutex::new(Vec::new());
        let found = self
            .client
            .expect_message(what, |m| {
                passed.lock().unwrap().push(m.clone());
                matches(m)
            })
            .await;
        self.seen.extend(passed.into_inner().unwrap());
        found
    }

    /// Answers the next `workspace/applyEdit` as an editor that applies it does: the buffer
    /// becomes `text` (version `version`), the answer says applied, the change is sent.
    async fn apply_next_edit(&mut self, version: i32, text: &str) -> Value {
        let answered = self.answered.clone();
        let request = self
            .wait("workspace/applyEdit", |m| {
                m["method"] == "workspace/applyEdit" && !answered.contains(&m["id"])
            })
            .await;
        self.answered.push(request["id"].clone());
        self.client
            .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"applied": true}}))
            .await;
        self.client
            .did_change(&self.uri(), version, json!([{"text": text}]))
            .await;
        request["params"].clone()
    }

    /// Waits for the `tandem/event` of `turn` whose event is of `kind`.
    async fn event(&mut self, turn: &str, kind: &str) -> Value {
        self.wait(&format!("tandem/event {kind} of {turn}"), |m| {
            m["method"] == "tandem/event"
                && m["params"]["turnId"] == turn
                && m["params"]["event"]["type"] == kind
        })
        .await["params"]
            .clone()
    }

    /// `shutdown` and `exit`, and the exit status.
    async fn exit(&mut self) -> (i32, PathBuf) {
        self.client.shutdown_and_exit().await;
        let status = tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .expect("tandem lsp did not exit")
            .unwrap();
        (status.code().unwrap_or(-1), self.runtime.clone())
    }
}

impl Drop for Editor {
    /// A failing test shows what the editor saw and the server's log.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self._dirs[0].path().join("tandem.log"));
            eprintln!(
                "the editor saw: {:#?}\ntandem's log:\n{}",
                self.seen,
                log.unwrap_or_default()
            );
        }
    }
}

/// A terminal front end: ACP as JSON lines on the attach socket. Permission requests are
/// answered with "allow once"; everything the server sends is kept in order.
struct Terminal {
    writer: Arc<tokio::sync::Mutex<Option<OwnedWriteHalf>>>,
    next_id: i64,
    pending: Pending,
    received: Arc<Mutex<Vec<Value>>>,
    count: watch::Receiver<usize>,
    closed: mpsc::UnboundedReceiver<()>,
}

type Pending = Arc<Mutex<Vec<(i64, oneshot::Sender<Value>)>>>;

async fn write_line(writer: &tokio::sync::Mutex<Option<OwnedWriteHalf>>, message: &Value) {
    let mut line = serde_json::to_vec(message).unwrap();
    line.push(b'\n');
    if let Some(writer) = writer.lock().await.as_mut() {
        writer.write_all(&line).await.unwrap();
    }
}

impl Terminal {
    async fn connect(endpoint: &Endpoint) -> Terminal {
        let stream = attach::connect(endpoint).await.unwrap();
        let (read, writer) = stream.into_split();
        let writer = Arc::new(tokio::sync::Mutex::new(Some(writer)));
        let pending: Pending = Arc::default();
        let received: Arc<Mutex<Vec<Value>>> = Arc::default();
        let (count_tx, count) = watch::channel(0);
        let (closed_tx, closed) = mpsc::unbounded_channel();
        let (pending_r, received_r, writer_r) = (pending.clone(), received.clone(), writer.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let message: Value = serde_json::from_str(&line).unwrap();
                if message.get("method").is_none() {
                    let id = message["id"].as_i64().unwrap();
                    let waiter = {
                        let mut pending = pending_r.lock().unwrap();
                        pending
                            .iter()
                            .position(|(waiting, _)| *waiting == id)
                            .map(|at| pending.remove(at).1)
                    };
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(message);
                    }
                    continue;
                }
                if message["method"] == "session/request_permission" {
                    let option = message["params"]["options"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|option| option["kind"] == "allow_once")
                        .unwrap()["optionId"]
                        .clone();
                    let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "outcome": {"outcome": "selected", "optionId": option}
                    }});
                    write_line(&writer_r, &answer).await;
                }
                let len = {
                    let mut received = received_r.lock().unwrap();
                    received.push(message);
                    received.len()
                };
                count_tx.send_replace(len);
            }
            let _ = closed_tx.send(());
        });
        Terminal {
            writer,
            next_id: 0,
            pending,
            received,
            count,
            closed,
        }
    }

    /// A request, and its whole response.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().push((self.next_id, tx));
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        write_line(&self.writer, &message).await;
        tokio::time::timeout(TIMEOUT, rx)
            .await
            .unwrap_or_else(|_| panic!("no answer to {method}"))
            .unwrap()
    }

    /// Sends a request, for its answer later.
    async fn send_request(&mut self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        self.next_id += 1;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().push((self.next_id, tx));
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        write_line(&self.writer, &message).await;
        rx
    }

    async fn initialize(&mut self) {
        let answer = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": 1,
                    "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
                    "clientInfo": {"name": "attach-test-terminal", "version": "1"},
                }),
            )
            .await;
        assert_eq!(answer["result"]["protocolVersion"], 1, "{answer}");
    }

    /// Waits until something the server sent `matches`, and returns it.
    async fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let wait = async {
            loop {
                if let Some(found) = self.received.lock().unwrap().iter().find(|m| matches(m)) {
                    return found.clone();
                }
                self.count.changed().await.unwrap_or_else(|_| {
                    panic!(
                        "the connection closed before {what}: {:#?}",
                        self.received()
                    )
                });
            }
        };
        match tokio::time::timeout(TIMEOUT, wait).await {
            Ok(found) => found,
            Err(_) => panic!("no {what}: {:#?}", self.received()),
        }
    }

    fn received(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }

    /// The `session/update`s of kind `kind`.
    fn updates(&self, kind: &str) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|m| {
                m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == kind
            })
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Closes the connection, as a terminal that quits does.
    async fn close(&mut self) {
        if let Some(mut writer) = self.writer.lock().await.take() {
            writer.shutdown().await.unwrap();
        }
    }

    /// Waits for the server to close the connection.
    async fn closed(&mut self) {
        tokio::time::timeout(TIMEOUT, self.closed.recv())
            .await
            .expect("the server did not close the attach connection");
    }
}

/// The text of an update's content block.
fn chunk_text(update: &Value) -> String {
    update["content"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The content of the last user message of a chat request.
fn last_user_message(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn read_call() -> Reply {
    Reply::openai_tool_calls(&[("call_read", "read_file", json!({"path": "src/lib.rs"}))])
}

fn edit_call(old: &str, new: &str) -> Reply {
    Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "src/lib.rs", "old_string": old, "new_string": new}),
    )])
}

/// The whole story: a terminal joins the editor's session, asks about the selection (which the
/// model sees, the edit landing in the editor's buffer), sees the editor's own turn and answers
/// its approval; leaving, it leaves the session working; the server exiting closes the socket
/// and removes its files.
#[tokio::test]
async fn a_terminal_joins_the_editors_session_and_each_survives_the_other() {
    let model = ModelServer::start().await;
    let mut editor = Editor::start(&model).await;
    let endpoint = editor.endpoint().await;
    assert_eq!(endpoint.editor.as_deref(), Some("attach-test-editor"));
    assert_eq!(endpoint.roots, [editor.workspace.clone()]);
    assert_eq!(
        std::fs::metadata(&endpoint.socket)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&editor.runtime)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );

    // The editor's session, before any turn.
    let session = editor
        .client
        .request("tandem/newSession", json!({}))
        .await
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    let mut terminal = Terminal::connect(&endpoint).await;
    terminal.initialize().await;
    // From a folder inside the editor's workspace: its live session is listed, marked.
    let listed = terminal
        .request("session/list", json!({"cwd": editor.workspace.join("src")}))
        .await;
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    let live = sessions
        .iter()
        .find(|listed| listed["sessionId"] == session.as_str())
        .unwrap_or_else(|| panic!("the editor's session is not listed: {listed}"));
    assert_eq!(live["_meta"]["tandem"]["live"], true, "{live}");
    let loaded = terminal
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": editor.workspace, "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("error").is_none(), "{loaded}");

    // The terminal asks about the selection; the edit needs an approval, which the terminal
    // gives (the editor is asked too, and does not answer).
    model.push(read_call());
    model.push(edit_call("w + h", "w * h"));
    model.push(Reply::openai_text("It added; now it multiplies."));
    let answer = terminal
        .send_request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "What does the selection do? Fix it."}]}),
        )
        .await;
    let edit = editor.apply_next_edit(2, LIB_FIXED).await;
    let change = &edit["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], editor.uri(), "{edit}");
    assert_eq!(change["edits"][0]["newText"], "*", "{edit}");
    let answer = tokio::time::timeout(TIMEOUT, answer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let asked = model.chat_requests();
    let first = last_user_message(&asked[0]);
    // The selection's own block: `w + h` is also in the symbol-at-cursor context.
    assert!(
        first.contains("Selected text (line 2):\n```plaintext\nw + h\n```"),
        "the selection is not in the request:\n{first}"
    );
    assert!(first.contains("src/lib.rs"), "{first}");
    assert!(
        first.ends_with("What does the selection do? Fix it."),
        "{first}"
    );
    // The editor's plugin saw the terminal's turn, marked as another front end's.
    let started = editor
        .wait("tandem/event of the terminal's turn", |m| {
            m["method"] == "tandem/event" && m["params"]["event"]["type"] == "turnStarted"
        })
        .await;
    assert_eq!(started["params"]["sessionId"], session.as_str());
    let origin = started["params"]["origin"].as_str().unwrap_or_default();
    assert!(
        origin.starts_with("acp:") && origin.ends_with("attach-test-terminal"),
        "{started}"
    );
    let terminal_turn = started["params"]["turnId"].as_str().unwrap().to_owned();
    assert_eq!(
        editor.event(&terminal_turn, "turnFinished").await["event"]["stopReason"],
        "end_turn"
    );

    // The editor's own turn reaches the terminal: its prompt, its answer, its approval, which
    // the terminal answers.
    model.push(read_call());
    model.push(edit_call("w * h", "2 * w * h"));
    model.push(Reply::openai_text("Doubled it."));
    let started = editor
        .client
        .request(
            "tandem/prompt",
            json!({"sessionId": session, "text": "Double the area."}),
        )
        .await
        .unwrap();
    let editor_turn = started["turnId"].as_str().unwrap().to_owned();
    let edit = editor.apply_next_edit(3, LIB_DOUBLED).await;
    let change = &edit["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], editor.uri(), "{edit}");
    assert!(
        change["edits"][0]["newText"]
            .as_str()
            .unwrap()
            .contains('2'),
        "{edit}"
    );
    assert_eq!(
        editor.event(&editor_turn, "turnFinished").await["event"]["stopReason"],
        "end_turn"
    );
    terminal
        .wait_for("the editor's answer", |m| {
            m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
                && chunk_text(&m["params"]["update"]).contains("Doubled")
        })
        .await;
    let prompts: Vec<String> = terminal
        .updates("user_message_chunk")
        .iter()
        .map(chunk_text)
        .collect();
    assert_eq!(
        prompts,
        ["Double the area."],
        "only the editor's prompt comes as a user message"
    );
    let permissions: Vec<Value> = terminal
        .received()
        .into_iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect();
    assert_eq!(permissions.len(), 2, "{permissions:#?}");

    // The terminal leaves; the editor's session goes on.
    terminal.close().await;
    model.push(Reply::openai_text("Still here."));
    let started = editor
        .client
        .request(
            "tandem/prompt",
            json!({"sessionId": session, "text": "Still there?"}),
        )
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    assert_eq!(
        editor.event(&turn, "turnFinished").await["event"]["stopReason"],
        "end_turn"
    );

    // A second terminal is connected when the editor exits: its connection closes, and the
    // files go.
    let mut second = Terminal::connect(&endpoint).await;
    second.initialize().await;
    let (code, runtime) = editor.exit().await;
    assert_eq!(code, 0);
    second.closed().await;
    let left: Vec<PathBuf> = std::fs::read_dir(&runtime)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(attach::endpoints_for_in(&runtime, &endpoint.roots[0]).is_empty());
}

/// `tandem chat --attach` on a real terminal (tmux) joins the editor's live session: the model
/// sees the editor's selection, the chat asks before the edit and the edit arrives in the
/// editor as `workspace/applyEdit`; when the editor's server exits, the chat ends with 1.
#[tokio::test]
async fn the_chat_attached_in_a_terminal_asks_about_the_editors_selection() {
    let model = ModelServer::start().await;
    let mut editor = Editor::start(&model).await;
    let session = editor
        .client
        .request("tandem/newSession", json!({}))
        .await
        .unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The chat finds the server by its endpoint file, written once the server is initialized.
    editor.endpoint().await;
    let chat = terminal::Terminal::sized(&editor.chat_command(), 100, 40);
    chat.wait_text("attached to attach-test-editor").await;
    chat.wait_text("ask anything").await;

    model.push(read_call());
    model.push(edit_call("w + h", "w * h"));
    model.push(Reply::openai_text("It added; now it multiplies."));
    chat.type_text("explain the selection");
    chat.wait_text("› explain the selection").await;
    chat.keys(&["Enter"]);
    let question = chat.wait_text("Allow Edit src/lib.rs?").await;
    assert!(question.contains("4 Allow once"), "{question}");
    let asked = model.chat_requests();
    let first = last_user_message(&asked[0]);
    // The selection's own block (the symbol at the cursor shows `w + h` too).
    assert!(
        first.contains("Selected text (line 2):\n```plaintext\nw + h\n```"),
        "the selection is not in the request:\n{first}"
    );
    assert!(first.contains("Active file: src/lib.rs"), "{first}");
    assert!(first.ends_with("explain the selection"), "{first}");
    chat.keys(&["4"]);

    let edit = editor.apply_next_edit(2, LIB_FIXED).await;
    let change = &edit["edit"]["documentChanges"][0];
    assert_eq!(change["textDocument"]["uri"], editor.uri(), "{edit}");
    assert_eq!(change["edits"][0]["newText"], "*", "{edit}");
    chat.wait_text("It added; now it multiplies.").await;
    // The chat's turn ran in the editor's session.
    let started = editor
        .wait("tandem/event of the chat's turn", |m| {
            m["method"] == "tandem/event" && m["params"]["event"]["type"] == "turnStarted"
        })
        .await;
    assert_eq!(
        started["params"]["sessionId"],
        session.as_str(),
        "{started}"
    );
    // The edit is on disk only once the editor saves: the buffer changed, not the file.
    assert_eq!(
        std::fs::read_to_string(editor.workspace.join("src/lib.rs")).unwrap(),
        LIB
    );

    let (code, _) = editor.exit().await;
    assert_eq!(code, 0);
    let (code, screen) = chat.wait_exit(false).await;
    assert_eq!(code, 1, "{screen}");
    assert!(
        screen.contains(
            "attach-test-editor's Tandem server has gone (the editor closed?); the chat ended"
        ),
        "{screen}"
    );
}

/// Only the user may connect: when the tests run as root, a process of another user (uid
/// 65534) is refused; otherwise the modes that make it so are checked.
#[tokio::test]
async fn another_user_cannot_connect() {
    let model = ModelServer::start().await;
    let mut editor = Editor::start(&model).await;
    let endpoint = editor.endpoint().await;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&endpoint.socket), 0o600);
    assert_eq!(mode(&editor.runtime), 0o700);
    if is_root() {
        refused_to_another_user(&endpoint.socket).await;
    }
    let (code, _) = editor.exit().await;
    assert_eq!(code, 0);
}

async fn refused_to_another_user(socket: &Path) {
    // perl's connect, as uid and gid 65534 with no groups; it prints the errno.
    let script = "use Socket; socket(S, PF_UNIX, SOCK_STREAM, 0) or die \"socket: $!\"; \
                  if (connect(S, pack_sockaddr_un($ARGV[0]))) { print \"connected\"; exit 0 } \
                  print 0 + $!; exit 1";
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "perl",
            "-e",
            script,
        ])
        .arg(socket)
        .output()
        .await
        .unwrap_or_else(|error| {
            panic!("this test, as root, needs setpriv (util-linux) and perl: {error}")
        });
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said,
        "13",
        "expected EACCES (13); stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this process runs as root (`id -u` is 0).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("Uid:"))
                .and_then(|line| line.split_whitespace().nth(2).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

/// The Neovim scenario of the test below: the plugin on the built server, `calc.py` open with
/// `a + b` on its line 2 selected in visual mode; once the plugin has sent that selection it creates
/// `$TANDEM_TEST_READY`, and it quits when `$TANDEM_TEST_DONE` appears.
const NVIM_SELECTS: &str = r#"
local h = dofile(os.getenv('TANDEM_TEST_HELPERS'))
local function exists(path)
  local file = io.open(path, 'r')
  if file then
    file:close()
  end
  return file ~= nil
end
local sent = {}
local steps = {
  function()
    h.setup()
    local _, client = h.open('calc.py')
    local notify = client.notify
    client.notify = function(method, params)
      if method == 'tandem/didChangeActiveEditor' then
        table.insert(sent, params)
      end
      return notify(method, params)
    end
    -- Charwise, `a + b` from the `a`: Vim includes the character under the cursor, so the
    -- range's exclusive end is one past the `b` (the plugin once sent the cursor's column and
    -- the model saw `a + `).
    vim.api.nvim_win_set_cursor(0, { 2, 11 })
    vim.api.nvim_feedkeys('v4l', 'n', false)
  end,
  function()
    h.wait_for('visual mode on line 2', function()
      return vim.api.nvim_get_mode().mode == 'v'
    end)
    h.wait_for('the plugin to send the selection', function()
      local last = sent[#sent]
      return last and last.selection.start.line == 1 and last.selection['end'].line == 1
        and last.selection.start.character == 11 and last.selection['end'].character == 16
    end)
    local ready = assert(io.open(os.getenv('TANDEM_TEST_READY'), 'w'))
    ready:close()
    h.wait_for('the test to end', function()
      return exists(os.getenv('TANDEM_TEST_DONE'))
    end, 120000)
  end,
}
local function run_step(index)
  vim.defer_fn(function()
    local ok, err = xpcall(steps[index], debug.traceback)
    if not ok then
      h.fail(err)
      return
    end
    if index == #steps then
      io.stdout:write('ok\n')
      io.stdout:flush()
      vim.cmd('qall!')
      return
    end
    run_step(index + 1)
  end, 30)
end
run_step(1)
"#;

/// Waits until `path` exists.
async fn file_appears(path: &Path, what: &str) {
    let wait = async {
        while !path.exists() {
            // Polling for a file another process writes.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(TIMEOUT, wait)
        .await
        .unwrap_or_else(|_| panic!("waited for {what}"));
}

/// With headless Neovim and its plugin as the editor: `tandem chat --attach` in tmux asks about
/// the visual selection made in Neovim, and the model's request carries it; when Neovim quits,
/// the chat ends.
#[tokio::test]
async fn the_chat_attached_to_neovim_asks_about_its_visual_selection() {
    if !super::nvim::nvim_available() {
        return;
    }
    let model = ModelServer::start().await;
    model.push(Reply::openai_text("It returns the sum of a and b."));
    let dirs = Scenario::new("default", &[("calc.py", CALC)], &[]);
    std::fs::write(
        dirs.config.path().join("settings.json"),
        scripted_settings(&model, json!({})).to_string(),
    )
    .unwrap();
    let workspace = dirs.workspace.path().canonicalize().unwrap();
    let run = tempfile::tempdir().unwrap();
    let runtime = run.path().join("tandem");
    let (script, ready, done) = (
        run.path().join("selects.lua"),
        run.path().join("ready"),
        run.path().join("done"),
    );
    std::fs::write(&script, NVIM_SELECTS).unwrap();
    let log = dirs.config.path().join("tandem.log");
    let clients = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/nvim");
    let mut envs = dirs.env(&log);
    envs.extend([
        ("TANDEM_BIN", PathBuf::from(env!("CARGO_BIN_EXE_tandem"))),
        ("TANDEM_RUNTIME_DIR", runtime.clone()),
        ("TANDEM_TEST_HELPERS", clients.join("tests/e2e/helpers.lua")),
        ("TANDEM_TEST_READY", ready.clone()),
        ("TANDEM_TEST_DONE", done.clone()),
    ]);
    let mut command = real_editor::command("nvim", &workspace, &envs);
    command
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd"])
        .arg(format!("set rtp^={}", clients.display()))
        .arg("-c")
        .arg(format!("luafile {}", script.display()));
    let nvim = real_editor::run(command, "the Neovim editor", 4 * TIMEOUT, Some(&log));

    let chat = async {
        file_appears(&ready, "Neovim to send its selection").await;
        tokio::time::timeout(TIMEOUT, async {
            while attach::endpoints_for_in(&runtime, &workspace).is_empty() {
                // Polling for the endpoint file the server writes once initialized.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("Neovim's tandem lsp wrote no endpoint file");
        let path = |path: &Path| quoted(path.to_str().unwrap());
        let command = format!(
            "cd {} && env -u TANDEM_MODEL -u ANTHROPIC_API_KEY -u GEMINI_API_KEY -u OPENAI_API_KEY \
             NO_COLOR=1 TERM=xterm-256color HOME={} TANDEM_CONFIG_DIR={} TANDEM_STATE_DIR={} \
             TANDEM_RUNTIME_DIR={} {} --log-file {} chat --attach",
            path(&workspace),
            path(dirs.home.path()),
            path(dirs.config.path()),
            path(dirs.state.path()),
            path(&runtime),
            path(Path::new(env!("CARGO_BIN_EXE_tandem"))),
            path(&dirs.config.path().join("chat.log")),
        );
        let chat = terminal::Terminal::sized(&command, 100, 40);
        chat.wait_text("attached to ").await;
        chat.wait_text("ask anything").await;
        chat.type_text("explain the selection");
        chat.wait_text("› explain the selection").await;
        chat.keys(&["Enter"]);
        chat.wait_text("It returns the sum of a and b.").await;
        let asked = model.chat_requests();
        let first = last_user_message(&asked[0]);
        assert!(
            first.contains("```python\na + b\n```"),
            "the selection is not in the request:\n{first}"
        );
        assert!(first.contains("Active file: calc.py"), "{first}");
        assert!(first.ends_with("explain the selection"), "{first}");
        std::fs::write(&done, "").unwrap();
        chat
    };
    let (stdout, chat) = tokio::join!(nvim, chat);
    assert_eq!(stdout.trim(), "ok", "{stdout}");
    let (code, screen) = chat.wait_exit(false).await;
    assert_eq!(code, 1, "{screen}");
    assert!(screen.contains("has gone (the editor closed?)"), "{screen}");
}
