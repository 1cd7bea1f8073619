//! `tandem acp` driven by a real third-party ACP client: the official TypeScript SDK
//! (`@agentclientprotocol/sdk`, pinned in `tests/acp/package.json`), run by
//! `node tests/acp/client.mjs <scenario>`, which spawns the built binary, plays the scenario and
//! prints what it saw. The model is the scripted model server; each test has its own user
//! settings, workspace and state directory. Needs Node.js and `npm ci --prefix tests/acp`; a
//! machine without them fails these tests with that fix, never skips them.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};
use tandem_test_support::{ModelServer, Reply, TIMEOUT};
use tempfile::TempDir;
use tokio::process::Command;

use super::headless;

/// The npm package holding the client.
fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/acp")
}

struct Acp {
    server: ModelServer,
    config: TempDir,
    workspace: TempDir,
    state: TempDir,
}

/// What the client saw: `wire`, every message tandem wrote, in order (with `{"mark": …}` where
/// a new tandem process started), and `notes`, the answers it got and what it observed.
#[derive(Debug)]
struct Transcript {
    wire: Vec<Value>,
    notes: Vec<Value>,
    /// The client's stderr (tandem's own stderr goes there too) and tandem's log.
    stderr: String,
    log: String,
}

impl Acp {
    /// Two models on the model server (`local`, the default, and `second`) and a workspace
    /// holding `files`.
    async fn new(files: &[(&str, &str)]) -> Acp {
        let server = ModelServer::start().await;
        let model = |name: &str| json!({"provider": "openai", "model": name, "baseUrl": format!("{}/v1", server.url())});
        let mut vision = model("test-vision");
        vision["images"] = json!(true);
        let settings = json!({"model": "local", "models": {
            "local": model("test-model"),
            "second": model("test-model-2"),
            "vision": vision,
        }});
        let config = tempfile::tempdir().unwrap();
        std::fs::write(config.path().join("settings.json"), settings.to_string()).unwrap();
        let workspace = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = workspace.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Acp {
            server,
            config,
            workspace,
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// The workspace as tandem's tools name it.
    fn root(&self) -> PathBuf {
        self.workspace.path().canonicalize().unwrap()
    }

    /// Runs a scenario of `client.mjs` and returns its transcript.
    async fn run(&self, scenario: &str) -> Transcript {
        self.run_with_env(scenario, &[]).await
    }

    /// Runs a scenario with `env` set for the client and tandem.
    async fn run_with_env(&self, scenario: &str, env: &[(&str, String)]) -> Transcript {
        let dir = client_dir();
        if let Err(why) = install_client(&dir) {
            panic!(
                "the ACP client's packages are not installed and `npm ci` failed ({why}): run \
                 `npm ci --prefix tests/acp` (needs Node.js 20 or later and the npm registry)"
            );
        }
        let mut command = Command::new("node");
        command
            .arg(dir.join("client.mjs"))
            .arg(scenario)
            .env("TANDEM_BIN", env!("CARGO_BIN_EXE_tandem"))
            .env("ACP_WORKSPACE", self.root())
            .env("ACP_LOG", self.config.path().join("tandem.log"))
            .env("TANDEM_CONFIG_DIR", self.config.path())
            // Gemini CLI's and Claude Code's user commands are read from the home directory.
            .env("HOME", self.config.path())
            .env("TANDEM_STATE_DIR", self.state.path())
            .env("ACP_MCP_SERVER", super::mcp::everything_script())
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        headless::without_model_choice(&mut command);
        let child = command.spawn().unwrap_or_else(|error| {
            panic!("cannot run `node` ({error}): these tests need Node.js 20 or later on PATH")
        });
        let out = tokio::time::timeout(TIMEOUT * 2, child.wait_with_output())
            .await
            .expect("the ACP client did not finish")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let log =
            std::fs::read_to_string(self.config.path().join("tandem.log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "scenario {scenario} broke ({}):\nstderr:\n{stderr}\nstdout:\n{stdout}\ntandem's log:\n{log}",
            out.status
        );
        let transcript: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
            panic!("the client printed no transcript ({error}):\n{stdout}\nstderr:\n{stderr}")
        });
        let transcript = Transcript {
            wire: transcript["wire"].as_array().unwrap().clone(),
            notes: transcript["notes"].as_array().unwrap().clone(),
            stderr: stderr.into_owned(),
            log,
        };
        transcript.assert_exited_cleanly();
        transcript
    }
}

impl Transcript {
    /// The answers (results) to `method`, in order.
    fn answers(&self, method: &str) -> Vec<&Value> {
        self.notes
            .iter()
            .filter(|note| note["what"] == "answer" && note["method"] == method)
            .map(|note| &note["result"])
            .collect()
    }

    fn answer(&self, method: &str) -> &Value {
        match self.answers(method).as_slice() {
            [one] => one,
            other => panic!("{} answers to {method}: {other:?}\n{self:#?}", other.len()),
        }
    }

    /// The errors to `method`, in order: `(code, message)`.
    fn errors(&self, method: &str) -> Vec<(i64, String)> {
        self.notes
            .iter()
            .filter(|note| note["what"] == "error" && note["method"] == method)
            .map(|note| {
                (
                    note["code"].as_i64().unwrap(),
                    note["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Every tandem process the scenario started exited with status 0.
    fn assert_exited_cleanly(&self) {
        for exit in self
            .notes
            .iter()
            .filter(|note| note["what"] == "agent exited")
        {
            assert_eq!(
                exit["code"], 0,
                "tandem exited with {exit}\nstderr:\n{}\nlog:\n{}",
                self.stderr, self.log
            );
        }
    }

    fn note(&self, what: &str) -> &Value {
        self.notes
            .iter()
            .find(|note| note["what"] == what)
            .unwrap_or_else(|| panic!("no note {what:?}: {self:#?}"))
    }

    /// The `session/update`s of kind `kind`, as their `update` objects.
    fn updates(&self, kind: &str) -> Vec<&Value> {
        self.wire
            .iter()
            .filter(|message| {
                message["method"] == "session/update"
                    && message["params"]["update"]["sessionUpdate"] == kind
            })
            .map(|message| &message["params"]["update"])
            .collect()
    }

    /// The requests tandem made of the client with `method`, as their params.
    fn requests(&self, method: &str) -> Vec<&Value> {
        self.wire
            .iter()
            .filter(|message| message["method"] == method && message.get("id").is_some())
            .map(|message| &message["params"])
            .collect()
    }

    /// The agent's message chunks joined.
    fn agent_text(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .map(|update| update["content"]["text"].as_str().unwrap())
            .collect()
    }

    /// The position in `wire` of the answer whose result has a `stopReason`, the `nth` one.
    fn stop_at(&self, nth: usize) -> usize {
        self.wire
            .iter()
            .enumerate()
            .filter(|(_, message)| message["result"]["stopReason"].is_string())
            .nth(nth)
            .unwrap_or_else(|| panic!("no prompt answer #{nth}: {self:#?}"))
            .0
    }

    /// Every tool call update (the first `tool_call` included) of `id`, in order.
    fn tool_call(&self, id: &str) -> Vec<&Value> {
        self.wire
            .iter()
            .filter(|message| message["method"] == "session/update")
            .map(|message| &message["params"]["update"])
            .filter(|update| update["toolCallId"] == id)
            .collect()
    }
}

/// An OpenAI chat-completions stream that answers `parts` as separate deltas, one SSE chunk each.
fn streamed_text(parts: &[&str]) -> Reply {
    let mut chunks: Vec<Vec<u8>> = parts
        .iter()
        .map(|part| {
            let chunk = json!({"id": "c", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": part}, "finish_reason": null}]});
            format!("data: {chunk}\n\n").into_bytes()
        })
        .collect();
    let stop = json!({"id": "c", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    chunks.push(format!("data: {stop}\n\ndata: [DONE]\n\n").into_bytes());
    Reply::sse_chunks(chunks)
}

fn shell(id: &str, command: &str) -> Reply {
    Reply::openai_tool_calls(&[(id, "shell", json!({"command": command}))])
}

/// The text of every message of a model request, joined: what the model was shown.
fn shown(request: &Value) -> String {
    request["messages"].to_string()
}

#[tokio::test]
async fn initialize_a_session_and_a_prompt_with_a_linked_file_streamed_back() {
    let acp = Acp::new(&[
        ("notes.txt", "Kumquats are small citrus fruits.\n"),
        (
            ".claude/commands/review.md",
            "---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $1.\n",
        ),
    ])
    .await;
    acp.server.push(streamed_text(&[
        "The notes ",
        "say kumquats ",
        "are small.",
    ]));
    let t = acp.run("basic").await;

    let init = t.answer("initialize");
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentInfo"]["name"], "tandem");
    let capabilities = &init["agentCapabilities"];
    assert_eq!(capabilities["loadSession"], true);
    assert_eq!(capabilities["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(capabilities["promptCapabilities"]["image"], true);
    for method in ["list", "resume", "close"] {
        assert!(
            capabilities["sessionCapabilities"][method].is_object(),
            "{capabilities}"
        );
    }
    let auth = init["authMethods"].as_array().unwrap();
    assert!(
        auth[0]["description"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{auth:?}"
    );

    let session = t.answer("session/new");
    assert_eq!(session["modes"]["currentModeId"], "default");
    let modes: Vec<&str> = session["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|mode| mode["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["default", "auto_edit", "yolo"]);
    let model = session["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["category"] == "model")
        .unwrap();
    assert_eq!(model["currentValue"], "local");
    assert_eq!(model["options"].as_array().unwrap().len(), 3);
    let available = t.updates("available_commands_update")[0]["availableCommands"].clone();
    let commands: Vec<&str> = available
        .as_array()
        .unwrap()
        .iter()
        .map(|command| command["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        commands,
        ["clear", "compress", "help", "init", "memory", "restore", "review"]
    );
    let review = &available[6];
    assert_eq!(review["description"], "Review a file");
    assert_eq!(review["input"]["hint"], "<path>");

    // The mode and the model chosen apply to the turn.
    assert_eq!(
        t.updates("current_mode_update")[0]["currentModeId"],
        "auto_edit"
    );
    let options = &t.answer("session/set_config_option")["configOptions"];
    assert!(
        options
            .as_array()
            .unwrap()
            .iter()
            .any(|option| option["id"] == "model" && option["currentValue"] == "second"),
        "{options}"
    );
    let requests = acp.server.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "test-model-2");
    // The linked file is attached.
    let prompt = shown(&requests[0]);
    assert!(prompt.contains("Summarise the notes."), "{prompt}");
    assert!(prompt.contains("File notes.txt"), "{prompt}");
    assert!(
        prompt.contains("Kumquats are small citrus fruits."),
        "{prompt}"
    );

    // The answer streams as chunks, titled by the prompt; the prompt is answered after them.
    assert_eq!(t.agent_text(), "The notes say kumquats are small.");
    assert!(t.updates("agent_message_chunk").len() >= 3);
    assert_eq!(
        t.updates("session_info_update")[0]["title"],
        "Summarise the notes."
    );
    let usage = t.updates("usage_update");
    assert!(
        usage.iter().all(|u| u["size"].as_u64().unwrap() > 0),
        "{usage:?}"
    );
    assert_eq!(t.answer("session/prompt")["stopReason"], "end_turn");
    let answered = t.stop_at(0);
    let last_chunk = t
        .wire
        .iter()
        .rposition(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .unwrap();
    assert!(last_chunk < answered);
    // Listed live, under the title the client was told.
    let listed = &t.answer("session/list")["sessions"];
    assert_eq!(listed[0]["sessionId"], session["sessionId"]);
    assert_eq!(listed[0]["title"], "Summarise the notes.");
}

#[tokio::test]
async fn an_edit_goes_through_the_clients_files_and_shows_as_a_diff() {
    let acp = Acp::new(&[("lib.txt", "alpha\n")]).await;
    acp.server.push(Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "lib.txt", "old_string": "alpha", "new_string": "ALPHA"}),
    )]));
    acp.server.push(Reply::openai_text("Capitalised."));
    let t = acp.run("edit").await;
    let lib = acp.root().join("lib.txt");
    let lib = lib.to_str().unwrap();

    // The model saw the editor's unsaved text, not the disk's.
    let requests = acp.server.chat_requests();
    assert!(
        shown(&requests[0]).contains("unsaved line"),
        "{}",
        shown(&requests[0])
    );
    assert!(!t.requests("fs/read_text_file").is_empty());
    let writes = t.requests("fs/write_text_file");
    assert_eq!(writes.len(), 1, "{t:#?}");
    assert_eq!(writes[0]["path"], lib);
    assert_eq!(writes[0]["content"], "ALPHA\nunsaved line\n");
    assert_eq!(
        t.note("file on disk")["text"],
        "ALPHA\nunsaved line\n",
        "the client saved what it was sent"
    );

    let updates = t.tool_call("call_edit");
    assert_eq!(updates[0]["sessionUpdate"], "tool_call");
    assert_eq!(updates[0]["kind"], "edit");
    let last = updates.last().unwrap();
    assert_eq!(last["status"], "completed", "{updates:?}");
    let diff = last["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|content| content["type"] == "diff")
        .unwrap();
    assert_eq!(
        diff,
        &json!({"type": "diff", "path": lib, "oldText": "alpha\nunsaved line\n", "newText": "ALPHA\nunsaved line\n"})
    );
    assert_eq!(last["locations"][0]["path"], lib);
    assert_eq!(t.answer("session/prompt")["stopReason"], "end_turn");
}

/// Issue 38's Zed items through the SDK: an @-mentioned file (embedded, as Zed sends it) counts
/// as read, so the edit right after it is asked about with its diff and succeeds once allowed;
/// the diff stays on the card while the edit runs; an edit certain to be refused is refused
/// without asking; the file is read through the client once per version; a `session/load` of
/// the live session replays it.
#[tokio::test]
async fn an_edit_right_after_an_embedded_mention_is_asked_with_its_diff_and_succeeds() {
    let acp = Acp::new(&[
        ("src/util.py", "def add(a, b):\n    return a + b\n"),
        ("other.py", "x = 1\n"),
    ])
    .await;
    acp.server.push(Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "src/util.py", "old_string": "def add", "new_string": "def plus"}),
    )]));
    acp.server.push(Reply::openai_text("Renamed."));
    acp.server.push(Reply::openai_tool_calls(&[(
        "call_unread",
        "edit",
        json!({"path": "other.py", "old_string": "x = 1", "new_string": "x = 2"}),
    )]));
    acp.server.push(Reply::openai_text("I must read it first."));
    let t = acp.run("mention_edit").await;
    let util = acp.root().join("src/util.py");

    // Asked once, about the mentioned file's edit, with its diff; allowed, it was written.
    let asked = t.requests("session/request_permission");
    assert_eq!(asked.len(), 1, "{t:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_edit");
    let content = asked[0]["toolCall"]["content"].as_array().unwrap();
    assert!(content.iter().any(|c| c["type"] == "diff"), "{content:?}");
    assert_eq!(
        t.note("file on disk")["text"],
        "def plus(a, b):\n    return a + b\n"
    );
    let edit = t.tool_call("call_edit");
    assert_eq!(edit.last().unwrap()["status"], "completed", "{edit:?}");
    // While it runs, the card keeps its diff and place: no update sends them empty.
    for update in &edit {
        assert_ne!(update["content"], json!([]), "{edit:?}");
        assert_ne!(update["locations"], json!([]), "{edit:?}");
    }
    let running = edit
        .iter()
        .find(|update| update["status"] == "in_progress")
        .unwrap();
    assert!(running["content"].to_string().contains("diff"), "{running}");

    // The unread file's edit is refused without asking, and the model is told why.
    let unread = t.tool_call("call_unread");
    assert_eq!(unread.last().unwrap()["status"], "failed", "{unread:?}");
    let requests = acp.server.chat_requests();
    assert_eq!(requests.len(), 4);
    assert!(
        shown(&requests[3]).contains("you have not read other.py"),
        "{}",
        shown(&requests[3])
    );

    // The mentioned file is read for the mention and checked before the write (ten round trips
    // before); the next prompt reads it at most once more.
    let first = t.note("reads after the first turn")["count"]
        .as_u64()
        .unwrap();
    let second = t.note("reads after the second turn")["count"]
        .as_u64()
        .unwrap();
    let reads: Vec<&Value> = t.requests("fs/read_text_file");
    assert_eq!(first, 2, "{reads:?}");
    assert!(second <= first + 1, "{reads:?}");
    assert!(reads
        .iter()
        .all(|read| read["path"] == util.to_str().unwrap()));

    // Loaded while live, the session replays both turns before the answer.
    let load = t.wire.iter().position(|m| m["mark"] == "load").unwrap();
    let answered = t.wire[load..]
        .iter()
        .position(|m| m["result"].get("modes").is_some())
        .unwrap()
        + load;
    let replayed: Vec<String> = t.wire[load..answered]
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| {
            let update = &m["params"]["update"];
            format!(
                "{} {}",
                update["sessionUpdate"].as_str().unwrap(),
                update["content"]["text"]
                    .as_str()
                    .or(update["toolCallId"].as_str())
                    .unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            "user_message_chunk Rename add to plus in",
            "tool_call call_edit",
            "agent_message_chunk Renamed.",
            "user_message_chunk Now other.py.",
            "tool_call call_unread",
            "agent_message_chunk I must read it first.",
            "session_info_update ",
        ],
        "{t:#?}"
    );
}

/// `authenticate` answers what is true: an id Tandem never offered is an error, and a model
/// that cannot answer (an Ollama that does not run) is `auth_required`, not `{}`.
#[tokio::test]
async fn authenticate_fails_for_an_unknown_method_and_an_ollama_that_does_not_run() {
    let acp = Acp::new(&[]).await;
    // A port nothing listens on, named as Ollama's.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = json!({"model": "llama", "models": {"llama": {
        "provider": "openai", "model": "llama3.2", "baseUrl": format!("http://127.0.0.1:{port}/v1")
    }}});
    std::fs::write(
        acp.config.path().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let t = acp
        .run_with_env(
            "authenticate",
            &[("OLLAMA_HOST", format!("127.0.0.1:{port}"))],
        )
        .await;
    let errors = t.errors("authenticate");
    assert_eq!(errors.len(), 2, "{t:#?}");
    assert_eq!(errors[0].0, -32602, "{errors:?}");
    assert!(errors[0].1.contains("\"settings\""), "{errors:?}");
    assert_eq!(errors[1].0, -32000, "{errors:?}");
    assert!(errors[1].1.contains("Tandem is not set up"), "{errors:?}");
    assert!(t.answers("authenticate").is_empty());
}

#[tokio::test]
async fn a_rejected_command_does_not_run_and_one_allowed_always_is_not_asked_again() {
    let acp = Acp::new(&[]).await;
    let command = "echo ran >> ran.txt";
    acp.server.push(shell("call_1", command));
    acp.server.push(Reply::openai_text("Understood."));
    acp.server.push(shell("call_2", command));
    acp.server.push(shell("call_3", command));
    acp.server.push(Reply::openai_text("Ran it twice."));
    let t = acp.run("permissions").await;

    let asked = t.requests("session/request_permission");
    assert_eq!(asked.len(), 2, "{t:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_1");
    assert_eq!(asked[1]["toolCall"]["toolCallId"], "call_2");
    let options: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["reject_once", "reject_always", "allow_once", "allow_always"]
    );
    // The request shows exactly what would run.
    let shown_to_user = asked[0]["toolCall"]["content"].to_string();
    assert!(shown_to_user.contains(command), "{shown_to_user}");
    assert_eq!(asked[0]["toolCall"]["rawInput"]["command"], command);

    assert_eq!(t.note("ran.txt after the rejected turn")["exists"], false);
    assert_eq!(t.note("ran.txt at the end")["text"], "ran\nran\n");
    let rejected = t.tool_call("call_1");
    assert_eq!(rejected.last().unwrap()["status"], "failed");
    let prompts = t.answers("session/prompt");
    assert_eq!(prompts.len(), 2);
    assert!(prompts
        .iter()
        .all(|answer| answer["stopReason"] == "end_turn"));
}

#[tokio::test]
async fn a_command_rejected_always_is_refused_again_without_asking() {
    let acp = Acp::new(&[]).await;
    let command = "echo ran >> ran.txt";
    acp.server.push(shell("call_1", command));
    acp.server.push(shell("call_2", command));
    acp.server.push(Reply::openai_text("I will not run it."));
    let t = acp.run("reject_always").await;

    let asked = t.requests("session/request_permission");
    assert_eq!(asked.len(), 1, "{t:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_1");
    assert_eq!(t.note("ran.txt at the end")["exists"], false);
    for id in ["call_1", "call_2"] {
        assert_eq!(t.tool_call(id).last().unwrap()["status"], "failed", "{id}");
    }
    assert_eq!(t.answer("session/prompt")["stopReason"], "end_turn");
}

#[cfg(unix)]
#[tokio::test]
async fn cancel_answers_cancelled_with_a_question_open_and_kills_a_running_command() {
    let acp = Acp::new(&[]).await;
    acp.server.push(shell("call_ask", "echo hi"));
    acp.server
        .push(shell("call_sleep", "echo $$ > pid.txt; exec sleep 30"));
    let t = acp.run("cancel").await;

    let prompts = t.answers("session/prompt");
    assert_eq!(prompts.len(), 2, "{t:#?}");
    assert!(
        prompts
            .iter()
            .all(|answer| answer["stopReason"] == "cancelled"),
        "{prompts:?}"
    );
    assert!(t.errors("session/prompt").is_empty());
    // The unanswered question was withdrawn when the turn ended.
    assert_eq!(t.note("permission request withdrawn")["aborted"], true);
    assert_eq!(t.tool_call("call_ask").last().unwrap()["status"], "failed");
    // The command was killed, well before its 30 seconds.
    let sleep = t.note("sleep after cancel");
    assert_eq!(sleep["alive"], false, "{sleep}");
    assert!(sleep["secondsToAnswer"].as_f64().unwrap() < 20.0, "{sleep}");
    assert_eq!(acp.server.chat_requests().len(), 2);
}

#[tokio::test]
async fn a_saved_session_is_listed_loaded_with_a_replay_continued_resumed_and_deleted() {
    let acp = Acp::new(&[]).await;
    acp.server.push(Reply::openai_text("Noted: kumquat."));
    acp.server.push(Reply::openai_text("The word was kumquat."));
    let t = acp.run("sessions").await;
    let saved = t.answers("session/new")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    let listed = t.answers("session/list")[0]["sessions"].as_array().unwrap();
    let entry = listed
        .iter()
        .find(|session| session["sessionId"] == saved.as_str())
        .unwrap_or_else(|| panic!("{saved} not listed: {listed:?}"));
    assert_eq!(entry["title"], "Remember the word kumquat.");
    assert_eq!(entry["cwd"], acp.root().to_str().unwrap());
    assert!(
        entry["updatedAt"].as_str().unwrap().ends_with('Z'),
        "{entry}"
    );

    // The second process replays the saved turn before answering session/load.
    let second = t
        .wire
        .iter()
        .position(|m| m["mark"] == "second process")
        .unwrap();
    let third = t
        .wire
        .iter()
        .position(|m| m["mark"] == "third process")
        .unwrap();
    let loaded = t.wire[second..]
        .iter()
        .position(|m| m["result"].get("modes").is_some())
        .unwrap()
        + second;
    let replayed: Vec<(&str, &str)> = t.wire[second..loaded]
        .iter()
        .filter(|m| m["method"] == "session/update")
        .filter_map(|m| {
            let update = &m["params"]["update"];
            Some((
                update["sessionUpdate"].as_str()?,
                update["content"]["text"].as_str()?,
            ))
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user_message_chunk", "Remember the word kumquat."),
            ("agent_message_chunk", "Noted: kumquat.")
        ]
    );
    // Continued with its history.
    let requests = acp.server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(shown(&requests[1]).contains("Noted: kumquat."));
    assert_eq!(t.answers("session/prompt").len(), 2);
    // Closed, it is no longer there.
    assert_eq!(t.errors("session/prompt")[0].0, -32002);
    // The third process resumes it without a replay.
    assert!(!t.wire[third..]
        .iter()
        .any(|m| m["params"]["update"]["sessionUpdate"] == "user_message_chunk"));
    assert_eq!(t.answers("session/resume").len(), 1);
    assert_eq!(t.answers("session/close").len(), 2);
    // Deleted, it is listed no more.
    assert_eq!(
        t.answers("session/delete").len(),
        1,
        "{:?}",
        t.errors("session/delete")
    );
    assert_eq!(t.note("listed after delete")["ids"], json!([]));
}

#[cfg(unix)]
#[tokio::test]
async fn a_command_runs_in_the_clients_terminal_when_it_offers_one() {
    let acp = Acp::new(&[]).await;
    acp.server.push(shell("call_term", "echo from-terminal"));
    acp.server.push(Reply::openai_text("Greeted."));
    let t = acp.run("terminal").await;

    let created = t.requests("terminal/create");
    assert_eq!(created.len(), 1, "{t:#?}");
    // The client starts Tandem's sandbox launcher, which confines itself and runs the shell.
    let args = created[0]["args"].as_array().unwrap();
    assert_eq!(args[0], "__sandbox", "{created:?}");
    assert_eq!(args.last().unwrap(), "echo from-terminal");
    assert_eq!(args[args.len() - 2], "-c");
    assert_eq!(created[0]["cwd"], acp.root().to_str().unwrap());
    let embedded = t.tool_call("call_term").iter().any(|update| {
        update["content"]
            .as_array()
            .is_some_and(|content| content.iter().any(|c| c["type"] == "terminal"))
    });
    assert!(embedded, "{:?}", t.tool_call("call_term"));
    assert_eq!(t.note("terminal released")["terminalId"], "term-1");
    // The model reads the command's output as from a local run.
    let requests = acp.server.chat_requests();
    assert!(
        shown(&requests[1]).contains("from-terminal"),
        "{}",
        shown(&requests[1])
    );
    assert_eq!(t.answer("session/prompt")["stopReason"], "end_turn");
}

#[tokio::test]
async fn bad_input_gets_clear_errors_and_the_process_keeps_serving() {
    let acp = Acp::new(&[]).await;
    acp.server.push(Reply::openai_text("one"));
    acp.server.push(Reply::openai_text("two"));
    let t = acp.run("bad").await;

    assert!(
        t.wire
            .iter()
            .any(|m| m["error"]["code"] == -32700 && m["id"].is_null()),
        "{t:#?}"
    );
    assert_eq!(t.errors("tandem/nonsense")[0].0, -32601);
    assert_eq!(t.errors("session/cancel-not-a-method")[0].0, -32601);
    let new = t.errors("session/new");
    assert_eq!(new.len(), 2, "{new:?}");
    assert_eq!(new[0].0, -32602);
    assert!(new[0].1.contains("not an absolute path"), "{new:?}");
    assert!(new[1].1.contains("not a directory"), "{new:?}");
    assert_eq!(t.errors("session/set_mode")[0].0, -32602);
    assert!(t.errors("session/set_mode")[0]
        .1
        .contains("default, auto_edit, yolo"));
    assert!(t.errors("session/set_config_option")[0]
        .1
        .contains("there is no model \"nope\""));
    let prompts = t.errors("session/prompt");
    assert_eq!(prompts.len(), 4, "{prompts:?}");
    assert_eq!(prompts[0].0, -32002);
    assert!(
        prompts[1]
            .1
            .contains("the model in use (test-model) does not take images"),
        "{prompts:?}"
    );
    assert_eq!(prompts[2].0, -32602);
    assert!(prompts[2].1.contains("cannot be decoded"), "{prompts:?}");
    assert!(prompts[3].1.contains("cannot attach"), "{prompts:?}");
    // Two prompts at once run one after the other.
    let answered = t.answers("session/prompt");
    assert_eq!(answered.len(), 2);
    assert!(answered.iter().all(|a| a["stopReason"] == "end_turn"));
    let requests = acp.server.chat_requests();
    assert!(shown(&requests[0]).contains("First."));
    assert!(shown(&requests[1]).contains("Second."));
    assert!(t.note("still serving")["sessionId"].is_string());
}

/// An image block from the npm ACP SDK's client reaches a model that takes images, in its API's
/// shape.
#[tokio::test]
async fn an_image_block_reaches_a_model_that_takes_images() {
    let acp = Acp::new(&[]).await;
    acp.server.push(Reply::openai_text("A single pixel."));
    let t = acp.run("image").await;
    assert_eq!(
        t.answer("session/prompt")["stopReason"],
        "end_turn",
        "{t:#?}"
    );
    let requests = acp.server.chat_requests();
    assert_eq!(requests[0]["model"], "test-vision");
    let user = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .unwrap();
    let content = user["content"].as_array().unwrap();
    assert!(content[0]["text"]
        .as_str()
        .unwrap()
        .contains("What is in the screenshot?"));
    assert_eq!(content[1]["type"], "image_url");
    assert!(content[1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .starts_with("data:image/png;base64,iVBORw0KGgo"));
}

/// Installs the pinned client packages (`npm ci`) once per test run when they are missing, so
/// that `cargo test --workspace` works on a fresh clone; CI installs them beforehand.
fn install_client(dir: &std::path::Path) -> Result<(), String> {
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            if dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
                return Ok(());
            }
            let output = std::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--prefix"])
                .arg(dir)
                .stdin(Stdio::null())
                .output()
                .map_err(|error| format!("cannot run npm: {error}"))?;
            if output.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
            }
        })
        .clone()
}

/// A server the client offers with `session/new` joins the session: a prompt attaches one of
/// its resources (which waits for it to start), its prompts are announced as commands, and the
/// model's call of its tool is asked about (naming the server), runs once allowed, and its
/// result reaches the model.
#[tokio::test]
async fn an_mcp_server_the_client_offers_serves_the_session() {
    if super::mcp::everything().is_none() {
        return;
    }
    let acp = Acp::new(&[]).await;
    acp.server.push(Reply::openai_text("Noted."));
    acp.server.push(Reply::openai_tool_calls(&[(
        "call_sum",
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 3}),
    )]));
    acp.server.push(Reply::openai_text("It is 5."));
    let t = acp.run("mcp").await;
    let answers = t.answers("session/prompt");
    assert_eq!(answers.len(), 2, "{t:#?}");
    for answer in answers {
        assert_eq!(answer["stopReason"], "end_turn", "{t:#?}");
    }
    let asked = t.requests("session/request_permission");
    assert_eq!(asked.len(), 1, "{t:#?}");
    assert!(
        asked[0]["toolCall"].to_string().contains("everything"),
        "{}",
        asked[0]
    );
    let requests = acp.server.chat_requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let attached = requests[0]["messages"].to_string();
    assert!(
        attached.contains("Resource everything:demo://resource/static/document/features.md"),
        "{attached}"
    );
    for request in &requests {
        let declared = request["tools"].to_string();
        assert!(declared.contains("mcp__everything__get-sum"), "{declared}");
    }
    let announced = t.updates("available_commands_update");
    let last = announced.last().unwrap().to_string();
    assert!(
        last.contains("everything:args-prompt") && last.contains("<city> [state]"),
        "{last}"
    );
    let result = requests[2]["messages"].to_string();
    assert!(result.contains("The sum of 2 and 3 is 5."), "{result}");
}

/// The second security review's finding 1 through ACP: with `shell:git status` allowed, a
/// `git status` run in a folder the checkout committed as a repository (whose `core.fsmonitor`
/// names a program) is asked about, not run on the rule's word.
#[cfg(unix)]
#[tokio::test]
async fn an_allowed_git_command_in_a_repository_the_checkout_committed_is_asked_about() {
    let acp = Acp::new(&[]).await;
    super::security::git_repositories::plant_repositories(acp.workspace.path());
    let settings_file = acp.config.path().join("settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_file).unwrap()).unwrap();
    settings["approval"] = json!({"allow": ["shell:git status"]});
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    acp.server.push(Reply::openai_tool_calls(&[(
        "call_git",
        "shell",
        json!({"command": "git status", "cwd": "vendor/lib"}),
    )]));
    acp.server.push(Reply::openai_text("I will not run it."));
    let t = acp.run("reject_always").await;

    let asked = t.requests("session/request_permission");
    assert_eq!(asked.len(), 1, "{t:#?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_git");
    assert!(!acp.workspace.path().join("pwned").exists());
    assert_eq!(t.tool_call("call_git").last().unwrap()["status"], "failed");
}
