//! MCP servers through the front ends, against a real server no one here wrote: the npm
//! package `@modelcontextprotocol/server-everything` (pinned in `tests/mcp`), started over stdio
//! and over streamable HTTP, with the scripted model server as the model. A turn calls
//! `get-sum` (after the user's approval) and the result reaches the next request; a
//! long-running call reports progress and is cancelled; a server prompt runs as a slash command;
//! a resource is attached with `@server:uri`; `tandem/mcpServers` and `tandem mcp list` show the
//! servers; a cloned repository's settings cannot start one; `tandem ask` runs a tool and stops
//! the server when it exits.
//!
//! A history's first prompt waits only 2 s for servers still starting, and the reference server
//! can take longer than that on a loaded machine: a test that needs the server's tools in its
//! first request waits for the server first (`wait_until_ready`, or in `tandem ask` a prompt
//! that attaches one of its resources, whose read waits for the server).
//!
//! Needs `node` and `npm ci --prefix tests/mcp`; without them the tests say so loudly and pass,
//! except under CI, which installs them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, RecordedRequest, Reply};

use super::headless::{self, Folders, Run};

/// Where `npm ci --prefix tests/mcp` puts the reference server's entry point.
pub(super) fn everything_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The reference server's entry point, or `None` (after saying so loudly) when it or `node` is
/// missing; under CI, a missing server fails the test.
pub(super) fn everything() -> Option<PathBuf> {
    let script = everything_script();
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if node && script.is_file() {
        return Some(std::fs::canonicalize(script).unwrap());
    }
    let what = "the MCP tests need `node` and `npm ci --prefix tests/mcp`";
    if std::env::var_os("CI").is_some() {
        panic!("{what}");
    }
    // Straight to stderr: libtest captures `eprintln!` of passing tests, and a skip must be seen.
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "*** skipped: {what} ***");
    None
}

/// `tests/mcp/probe-server.mjs`, which needs only `node`, or `None` (after saying so loudly)
/// without it; under CI, a missing `node` fails the test.
pub(super) fn probe() -> Option<PathBuf> {
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if node {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/probe-server.mjs");
        return Some(std::fs::canonicalize(script).unwrap());
    }
    let what = "the MCP tests need `node`";
    if std::env::var_os("CI").is_some() {
        panic!("{what}");
    }
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "*** skipped: {what} ***");
    None
}

/// The reference server over stdio, as `mcpServers.everything`.
fn stdio(script: &Path, extra: Value) -> Value {
    let mut server = json!({"command": "node", "args": [script, "stdio"]});
    if let (Value::Object(server), Value::Object(extra)) = (&mut server, extra) {
        server.extend(extra);
    }
    server
}

pub(super) fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .filter_map(|message| message["content"].as_str().map(str::to_owned))
        .collect()
}

pub(super) fn declared(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// Calls `get-sum` with 2 and 3 until a tool result comes back, then says what it was.
fn sum_model(request: &RecordedRequest) -> Reply {
    let body = request.json();
    match tool_results(&body).last() {
        Some(result) => Reply::openai_text(&format!("The server said: {result}")),
        None => Reply::openai_tool_calls(&[(
            "call_sum",
            "mcp__everything__get-sum",
            json!({"a": 2, "b": 3}),
        )]),
    }
}

async fn editor(model: &ModelServer, servers: Value) -> FakeEditor {
    FakeEditor::rich()
        .settings(scripted_settings(model, json!({ "mcpServers": servers })))
        .start()
        .await
}

/// Waits until the workspace's MCP servers have started, through the front end's own status
/// request, and says that all of them are ready. `tandem/mcpServers` starts the servers the
/// sessions of the workspace share and waits a little for those still starting, so asking
/// again until none is starting is bounded (a start fails after 30 s).
async fn wait_until_ready(editor: &FakeEditor) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let servers = editor
            .request("tandem/mcpServers", json!({}))
            .await
            .unwrap();
        let states: Vec<&Value> = servers["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|server| &server["state"])
            .collect();
        if !states.iter().any(|state| *state == "starting") {
            assert!(
                !states.is_empty() && states.iter().all(|state| *state == "ready"),
                "{servers:#}"
            );
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{servers:#}");
    }
}

async fn prompt(editor: &FakeEditor, text: &str) -> (String, Value) {
    let started = editor
        .request("tandem/prompt", json!({ "text": text }))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    (turn, finished)
}

#[tokio::test]
async fn a_turn_calls_a_server_tool_after_approval_and_the_result_reaches_the_model() {
    let Some(script) = everything() else { return };
    let model = ModelServer::start().await;
    model.respond_with(sum_model);
    let editor = editor(&model, json!({ "everything": stdio(&script, json!({})) })).await;
    editor.push_approval(json!({"type": "allowOnce"}));
    wait_until_ready(&editor).await;

    let (_, finished) = prompt(&editor, "What is 2 + 3? Ask the server.").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let tools = declared(&requests[0]);
    assert!(
        tools.iter().any(|tool| tool == "mcp__everything__get-sum"),
        "{tools:?}"
    );
    assert!(tools.iter().any(|tool| tool == "read_file"), "{tools:?}");
    let results = tool_results(&requests[1]);
    assert_eq!(results, ["The sum of 2 and 3 is 5."]);
    // The user was asked, and saw the server, the tool and the arguments.
    let asked = editor.received_params("tandem/requestApproval");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let details = asked[0].to_string();
    assert!(
        details.contains("everything") && details.contains("get-sum"),
        "{details}"
    );

    let servers = editor
        .request("tandem/mcpServers", json!({}))
        .await
        .unwrap();
    let server = &servers["servers"][0];
    assert_eq!(server["name"], "everything");
    assert_eq!(server["state"], "ready", "{servers:#}");
    assert_eq!(server["transport"], "stdio");
    let status = editor
        .request("tandem/debug/status", json!({}))
        .await
        .unwrap();
    assert_eq!(status["mcpServers"][0]["state"], "ready", "{status:#}");
}

#[tokio::test]
async fn a_trusted_servers_long_call_reports_progress_and_is_cancelled() {
    let Some(script) = everything() else { return };
    let model = ModelServer::start().await;
    model.respond_with(|_| {
        Reply::openai_tool_calls(&[(
            "call_long",
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 60, "steps": 60}),
        )])
    });
    let editor = editor(
        &model,
        json!({ "everything": stdio(&script, json!({"trust": true})) }),
    )
    .await;
    wait_until_ready(&editor).await;
    let started = editor
        .request(
            "tandem/prompt",
            json!({ "text": "Run the long operation." }),
        )
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    // No approval is asked: the server is trusted. Its progress reaches the editor.
    let progress = editor
        .wait_for("a progress report of the long call", |message| {
            message["method"] == "tandem/event"
                && message["params"]["event"]["type"] == "toolCall"
                && message["params"]["event"]["progress"].is_string()
        })
        .await;
    let report = progress["params"]["event"]["progress"].as_str().unwrap();
    assert!(report.contains("/60"), "{report}");
    let cancelled_at = std::time::Instant::now();
    editor
        .request(
            "tandem/cancel",
            json!({"sessionId": started["sessionId"].clone()}),
        )
        .await
        .unwrap();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "cancelled", "{finished}");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(10),
        "{:?}",
        cancelled_at.elapsed()
    );
    assert!(editor.received_params("tandem/requestApproval").is_empty());
}

#[tokio::test]
async fn a_server_prompt_runs_as_a_slash_command_and_a_resource_is_attached() {
    let Some(script) = everything() else { return };
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Noted."));
    let editor = editor(&model, json!({ "everything": stdio(&script, json!({})) })).await;

    // Once the server is ready, its prompts are commands.
    wait_until_ready(&editor).await;
    let commands = editor.request("tandem/commands", json!({})).await.unwrap();
    let args_prompt = commands["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|command| command["name"] == "everything:args-prompt")
        .unwrap_or_else(|| panic!("{commands:#}"))
        .clone();
    assert_eq!(args_prompt["source"], "mcp");
    assert_eq!(args_prompt["argumentHint"], "<city> [state]");

    let (_, finished) = prompt(&editor, "/everything:args-prompt Paris").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let sent = model.chat_requests().last().unwrap()["messages"].to_string();
    assert!(sent.contains("Paris"), "{sent}");

    let (_, finished) = prompt(&editor, "/everything:args-prompt").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let before = model.chat_requests().len();
    assert_eq!(
        before, 1,
        "a prompt without its required argument reached the model"
    );

    let (_, finished) = prompt(
        &editor,
        "Summarise @everything:demo://resource/static/document/features.md please.",
    )
    .await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let sent = model.chat_requests().last().unwrap()["messages"].to_string();
    assert!(
        sent.contains("Resource everything:demo://resource/static/document/features.md"),
        "{sent}"
    );
    assert!(sent.contains("get-sum"), "{sent}");
}

/// The reference server over HTTP (`streamableHttp` or `sse`) on a free port, once it accepts
/// connections.
async fn over_http(script: &Path, transport: &str) -> (tokio::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = tokio::process::Command::new("node")
        .arg(script)
        .arg(transport)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Bounded: the server accepts connections within moments of starting.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the {transport} server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (server, port)
}

#[tokio::test]
async fn a_streamable_http_server_answers_a_turn() {
    let Some(script) = everything() else { return };
    let (mut server, port) = over_http(&script, "streamableHttp").await;
    let model = ModelServer::start().await;
    model.respond_with(sum_model);
    let editor = editor(
        &model,
        json!({ "everything": {"httpUrl": format!("http://127.0.0.1:{port}/mcp"), "trust": true} }),
    )
    .await;
    wait_until_ready(&editor).await;
    let (_, finished) = prompt(&editor, "What is 2 + 3?").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let requests = model.chat_requests();
    let results = tool_results(requests.last().unwrap());
    assert_eq!(results, ["The sum of 2 and 3 is 5."]);
    let servers = editor
        .request("tandem/mcpServers", json!({}))
        .await
        .unwrap();
    assert_eq!(servers["servers"][0]["transport"], "http", "{servers:#}");
    server.kill().await.unwrap();
}

/// A server slower than the first prompt's wait does not hold it up: the model hears it is
/// still starting, and once it is ready its tools join the next request, with a word saying so.
#[tokio::test]
async fn a_slow_server_joins_a_later_request_and_the_model_is_told() {
    let Some(script) = everything() else { return };
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Ok."));
    let slow = json!({
        "command": "sh",
        "args": ["-c", format!("sleep 4 && exec node '{}' stdio", script.display())],
    });
    let editor = editor(&model, json!({ "slow": slow })).await;
    let (_, finished) = prompt(&editor, "Hello.").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let first = model.chat_requests()[0].clone();
    assert!(
        !declared(&first)
            .iter()
            .any(|tool| tool.starts_with("mcp__")),
        "{:?}",
        declared(&first)
    );
    // The whole reminder, word for word: a broken string continuation once sent the model a run
    // of 30 spaces inside it.
    let reminder = |request: &Value| {
        let texts: Vec<String> = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|message| message["content"].as_str())
            .flat_map(|content| content.split("<system-reminder>\n").skip(1))
            .map(|reminder| {
                reminder
                    .split("\n</system-reminder>")
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        texts
    };
    assert_eq!(
        reminder(&first),
        ["The MCP server `slow` is still starting; its tools are not available yet and join when \
          it is ready."],
        "{first:#}"
    );

    wait_until_ready(&editor).await;
    let (_, finished) = prompt(&editor, "And now?").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let second = model.chat_requests()[1].clone();
    assert!(
        declared(&second)
            .iter()
            .any(|tool| tool == "mcp__slow__get-sum"),
        "{:?}",
        declared(&second)
    );
    assert_eq!(
        reminder(&second).last().map(String::as_str),
        Some("The MCP server `slow` is ready; its tools are available now."),
        "{second:#}"
    );
}

#[tokio::test]
async fn a_cloned_repositorys_settings_start_no_server() {
    let Some(script) = everything() else { return };
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Hi."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    // The repository asks for a server; the folder is not trusted.
    editor.write_file(
        ".tandem/settings.json",
        &json!({"mcpServers": {"everything": stdio(&script, json!({}))}}).to_string(),
    );
    let (_, finished) = prompt(&editor, "Hello.").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let servers = editor
        .request("tandem/mcpServers", json!({}))
        .await
        .unwrap();
    assert_eq!(servers["servers"], json!([]), "{servers:#}");
    let tools = declared(&model.chat_requests()[0]);
    assert!(
        !tools.iter().any(|tool| tool.starts_with("mcp__")),
        "{tools:?}"
    );
}

#[tokio::test]
async fn ask_runs_a_server_tool_and_mcp_list_shows_the_server() {
    let Some(script) = everything() else { return };
    let model = ModelServer::start().await;
    model.respond_with(sum_model);
    let config = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let settings = scripted_settings(
        &model,
        json!({"mcpServers": {"everything": stdio(&script, json!({"trust": true}))}}),
    );
    std::fs::write(config.path().join("settings.json"), settings.to_string()).unwrap();
    let tandem = |args: &[&str]| {
        let mut command = headless::tandem(config.path(), state.path());
        command.current_dir(workspace.path()).args(args);
        command
    };

    // `tandem ask` is its own process, with its own server: no status request can wait for
    // it. The prompt attaches one of the server's resources, and reading it waits for the
    // server, so the first request declares its tools however long the start takes.
    let question = "What is 2 + 3? @everything:demo://resource/static/document/features.md";
    let run = Run::of(tandem(&["ask", question]).spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("The server said:"), "{run:#?}");
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let results = tool_results(&requests[1]);
    assert_eq!(results, ["The sum of 2 and 3 is 5."]);

    let run = Run::of(tandem(&["mcp", "list"]).spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout.contains("everything (stdio, trusted): ready"),
        "{run:#?}"
    );
    assert!(
        run.stdout.contains("tool   mcp__everything__get-sum"),
        "{run:#?}"
    );
    assert!(
        run.stdout.contains("prompt /everything:args-prompt"),
        "{run:#?}"
    );

    // A server that cannot start makes `mcp list` say why, and exit 1.
    let broken = scripted_settings(
        &model,
        json!({"mcpServers": {"broken": {"command": "tandem-no-such-program"}}}),
    );
    std::fs::write(config.path().join("settings.json"), broken.to_string()).unwrap();
    let run = Run::of(tandem(&["mcp", "list", "--wait", "10"]).spawn().unwrap()).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stdout.contains("broken (stdio): failed"), "{run:#?}");
    assert!(run.stdout.contains("tandem-no-such-program"), "{run:#?}");
}

/// Where `npm ci --prefix tests/mcp` puts the filesystem server's entry point, or `None` (after
/// saying so loudly) when it or `node` is missing; under CI, a missing server fails the test.
fn filesystem() -> Option<PathBuf> {
    everything()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    Some(std::fs::canonicalize(script).unwrap())
}

/// The text of the user's messages of `request`.
fn user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 41: `tandem ask` waited at most 2 s for MCP servers, so a server slower to start
/// (`npx -y …` took 6.8 s, Python servers usually more) was missing from the one request that
/// matters, and `tandem ask "/server:prompt"` sent the text verbatim because the command list
/// was built before the server answered. A server that takes 5 s to start now has its tools in
/// the first request, and its prompt runs as the first prompt.
#[tokio::test]
async fn one_shot_ask_waits_for_a_slow_server_its_tools_and_its_prompts() {
    let Some(probe) = probe() else { return };
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        let body = request.json();
        match tool_results(&body).last() {
            Some(result) => Reply::openai_text(&format!("The probe runs in {result}")),
            None if declared(&body).iter().any(|tool| tool == "mcp__probe__cwd") => {
                Reply::openai_tool_calls(&[("call_cwd", "mcp__probe__cwd", json!({}))])
            }
            None => Reply::openai_text("I have no such tool."),
        }
    });
    let server = json!({"command": "node", "args": [probe, "prompts", "--start-delay=5000"],
                        "trust": true});
    let setup = Folders::new(&model, json!({"mcpServers": {"probe": server}}));

    let run = setup.run(&["ask", "Where does the probe run?"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model.chat_requests();
    assert!(
        declared(&requests[0])
            .iter()
            .any(|tool| tool == "mcp__probe__cwd"),
        "the first request lacks the slow server's tools: {:?}",
        declared(&requests[0])
    );
    assert!(
        run.stdout
            .contains(&format!("The probe runs in {}", setup.root().display())),
        "{run:#?}"
    );

    let run = setup.run(&["ask", "/probe:greet Ada"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let first = model.chat_requests()[requests.len()].clone();
    let sent = user_text(&first);
    assert!(
        sent.contains("Say hello to Ada from the probe.") && !sent.contains("/probe:greet"),
        "the prompt was not run: {sent}"
    );
}

/// A server's `startTimeout` bounds how long `tandem ask` waits for it: one that needs longer
/// is reported failed rather than waited for without end.
#[tokio::test]
async fn a_server_slower_than_its_start_timeout_is_not_waited_for() {
    let Some(probe) = probe() else { return };
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Done."));
    let server = json!({"command": "node", "args": [probe, "--start-delay=60000"],
                        "startTimeout": 1000});
    let setup = Folders::new(&model, json!({"mcpServers": {"probe": server}}));
    let started = std::time::Instant::now();
    let run = setup.run(&["mcp", "list"]).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stdout.contains("probe (stdio): failed"), "{run:#?}");
    assert!(run.stdout.contains("within 1 s"), "{run:#?}");
    assert!(started.elapsed() < Duration::from_secs(50), "{run:#?}");
}

/// Issue 41: the filesystem server's `read_text_file` sends the file as text and again as
/// structured content (`{"content": file}`), and both reached the model: a 43 KB file became
/// 87 KB and was cut. It reaches the model once.
#[tokio::test]
async fn a_filesystem_servers_read_reaches_the_model_once() {
    let Some(filesystem) = filesystem() else {
        return;
    };
    let model = ModelServer::start().await;
    let setup = Folders::new(&model, json!({}));
    let root = setup.root();
    let file = root.join("notes.txt");
    let text: String = (0..1_000)
        .map(|line| format!("line {line:04} of the notes, with some words ok\n"))
        .collect();
    assert_eq!(text.len(), 43_000);
    std::fs::write(&file, &text).unwrap();
    let path = file.display().to_string();
    model.respond_with(move |request| {
        let body = request.json();
        match tool_results(&body).last() {
            Some(_) => Reply::openai_text("Read it."),
            None => Reply::openai_tool_calls(&[(
                "call_read",
                "mcp__fs__read_text_file",
                json!({"path": path}),
            )]),
        }
    });
    let server = json!({"command": "node", "args": [filesystem, root], "trust": true});
    let mut settings = scripted_settings(&model, json!({"mcpServers": {"fs": server}}));
    // A window the file fits in whole, so that nothing but the doubling could cut it.
    settings["models"]["scripted"]["contextWindow"] = json!(1_000_000);
    setup.settings(&settings);
    let run = setup
        .run(&["ask", "Read notes.txt through the server."])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    let requests = model.chat_requests();
    let result = tool_results(requests.last().unwrap()).pop().unwrap();
    assert_eq!(
        result.matches("line 0500 of the notes").count(),
        1,
        "the file was sent more than once ({} bytes for a {}-byte file)",
        result.len(),
        text.len()
    );
    assert!(
        result.contains("line 0999 of the notes"),
        "it was cut: {result}"
    );
}

/// Issue 41: Claude Code users keep their servers in `~/.claude.json` and a project's
/// `.mcp.json`, Gemini CLI users in `~/.gemini/settings.json`, and Tandem read none of them.
/// They are used as those tools mean them (Gemini CLI's `url` is SSE), a project's file only
/// in a trusted workspace (ignored with a warning otherwise), and `tandem mcp list` says where
/// each came from.
#[tokio::test]
async fn servers_other_tools_configure_are_used_where_they_should_be() {
    let Some(script) = everything() else { return };
    let Some(probe) = probe() else { return };
    let (_sse, port) = over_http(&script, "sse").await;
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Done."));
    let setup = Folders::new(&model, json!({}));
    let home = setup.config.path();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"mcpServers": {"events": {"url": format!("http://127.0.0.1:{port}/sse")}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.join(".claude.json"),
        json!({"projects": {setup.root().display().to_string(): {"mcpServers": {
            "local": {"type": "stdio", "command": "node", "args": [probe]}
        }}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        setup.workspace.path().join(".mcp.json"),
        json!({"mcpServers": {"project": {"command": "node", "args": [probe]}}}).to_string(),
    )
    .unwrap();

    let run = setup.run(&["mcp", "list"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("events (sse, from ~/.gemini/settings.json): ready"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("local (stdio, from ~/.claude.json): ready"),
        "{run:#?}"
    );
    assert!(!run.stdout.contains("project ("), "{run:#?}");
    run.assert_stderr_has(&[".mcp.json because this workspace is not trusted"]);

    setup.settings(&scripted_settings(
        &model,
        json!({"trustedFolders": [setup.root()]}),
    ));
    let run = setup.run(&["mcp", "list"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("project (stdio, from "), "{run:#?}");
    assert!(run.stdout.contains(".mcp.json): ready"), "{run:#?}");

    // Tandem's own entry of the same name wins, and `importMcpServers: []` reads none.
    setup.settings(&scripted_settings(
        &model,
        json!({"importMcpServers": [], "mcpServers": {"mine": {"command": "node", "args": [probe]}}}),
    ));
    let run = setup.run(&["mcp", "list"]).await;
    assert!(run.stdout.contains("mine (stdio): ready"), "{run:#?}");
    assert!(!run.stdout.contains("events"), "{run:#?}");
}
