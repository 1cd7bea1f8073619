//! The MCP client against real servers: the reference server
//! (`@modelcontextprotocol/server-everything`, pinned in `tests/mcp/package.json`) over stdio,
//! streamable HTTP and SSE, and `tests/mcp/probe-server.mjs`, a small server that shows what
//! the reference one cannot (the cancellations it received, a call that never ends, a crash).
//!
//! Install the reference server with `npm ci --prefix tests/mcp`. Without it (or without
//! `node`) these tests are skipped with a loud line on stderr, except under CI, where they fail.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_agent::mcp::{
    McpManager, McpRole, McpServerSettings, McpServerState, McpServerStatus, McpStartContext,
    McpTransport,
};
use tandem_agent::tools::shell::ShellEnvironment;
use tandem_agent::tools::{Tool, ToolContext, ToolError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every wait in these tests is bounded by this.
const WAIT: Duration = Duration::from_secs(20);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The reference server's entry point, or `None` (after saying so) when it is not installed.
fn everything_script(test: &str) -> Option<PathBuf> {
    let script = repo_root()
        .join("tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    (node_available(test) && installed(test, &script)).then_some(script)
}

/// The probe server, or `None` when there is no `node`.
fn probe_script(test: &str) -> Option<PathBuf> {
    node_available(test).then(|| repo_root().join("tests/mcp/probe-server.mjs"))
}

fn node_available(test: &str) -> bool {
    let found = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        missing(test, "`node` is not on PATH; install Node.js 20 or later");
    }
    found
}

fn installed(test: &str, script: &Path) -> bool {
    let found = script.is_file();
    if !found {
        missing(
            test,
            "the reference MCP server is not installed; run `npm ci --prefix tests/mcp`",
        );
    }
    found
}

fn missing(test: &str, what: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {what}");
    }
    // Straight to stderr: the test harness captures `eprintln!` of passing tests.
    let _ = writeln!(std::io::stderr(), "*** skipped {test}: {what} ***");
}

macro_rules! require {
    ($script:expr) => {
        match $script {
            Some(script) => script,
            None => return,
        }
    };
}

fn node(script: &Path, args: &[&str]) -> McpServerSettings {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|arg| (*arg).to_owned()));
    McpServerSettings {
        command: Some("node".to_owned()),
        args: all,
        ..McpServerSettings::default()
    }
}

/// A manager with `servers` applied in a fresh workspace, once they have settled.
struct Setup {
    manager: Arc<McpManager>,
    ctx: ToolContext,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

async fn setup(servers: Vec<(&str, McpServerSettings)>) -> Setup {
    setup_with(servers, ShellEnvironment::default()).await
}

async fn setup_with(
    servers: Vec<(&str, McpServerSettings)>,
    environment: ShellEnvironment,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let manager = McpManager::new();
    let servers: BTreeMap<String, McpServerSettings> = servers
        .into_iter()
        .map(|(name, settings)| (name.to_owned(), settings))
        .collect();
    manager.apply(
        &servers,
        McpStartContext {
            roots: vec![root.clone()],
            environment: Arc::new(environment),
        },
    );
    assert!(
        manager.wait_settled(WAIT).await,
        "{:#?}",
        manager.statuses()
    );
    Setup {
        manager,
        ctx: ToolContext::on_disk(vec![root.clone()]),
        root,
        _dir: dir,
    }
}

impl Setup {
    fn tool(&self, name: &str) -> Arc<dyn Tool> {
        let tools = self.manager.tools();
        let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
        tools
            .iter()
            .find(|tool| tool.name() == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool {name}; the tools are {names:?}"))
    }

    async fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        self.tool(name)
            .run(args, &self.ctx)
            .await
            .map(|output| output.text)
    }

    fn status(&self, server: &str) -> McpServerStatus {
        self.manager
            .statuses()
            .into_iter()
            .find(|status| status.name == server)
            .unwrap()
    }

    /// Waits until `server`'s status satisfies `done`.
    async fn wait_for(&self, server: &str, done: impl Fn(&McpServerStatus) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut changes = self.manager.changes();
        while !done(&self.status(server)) {
            let changed = tokio::time::timeout_at(deadline, changes.changed()).await;
            assert!(
                changed.is_ok(),
                "gave up waiting: {:#?}",
                self.status(server)
            );
        }
    }
}

fn ready(status: &McpServerStatus) -> bool {
    status.state == McpServerState::Ready
}

fn failure(status: &McpServerStatus) -> String {
    match &status.state {
        McpServerState::Failed { message } => message.clone(),
        other => panic!("{} is {other:?}, not failed", status.name),
    }
}

/// Polls (with a deadline) until process `pid` is gone (or a zombie, where /proc tells).
async fn wait_until_dead(pid: u32) {
    let deadline = Instant::now() + WAIT;
    loop {
        let alive = if Path::new("/proc/self").exists() {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z"))
        } else {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
            nix::sys::signal::kill(pid, None).is_ok()
        };
        if !alive {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} is still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn stdio_server_starts_and_its_tools_answer() {
    let script = require!(everything_script(
        "stdio_server_starts_and_its_tools_answer"
    ));
    let setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let status = setup.status("everything");
    assert!(ready(&status), "{status:#?}");
    assert_eq!(status.transport, Some(McpTransport::Stdio));
    assert!(status.pid.is_some());
    assert!(!status.trusted);
    let info = status.server_info.unwrap_or_default();
    assert!(info.starts_with("mcp-servers/everything"), "{info}");
    let names: Vec<String> = setup
        .manager
        .tools()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    for expected in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
        "mcp__everything__trigger-long-running-operation",
    ] {
        assert!(names.iter().any(|name| name == expected), "{names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let echo = status
        .tools
        .iter()
        .find(|tool| tool.original_name == "echo")
        .unwrap();
    assert_eq!(echo.name, "mcp__everything__echo");

    let tool = setup.tool("mcp__everything__get-sum");
    assert!(tool.mutates());
    assert!(tool.description().contains("MCP server \"everything\""));
    assert_eq!(tool.parameters()["type"], "object");
    assert_eq!(tool.title(&json!({})), "everything: get-sum");

    let echoed = setup
        .call("mcp__everything__echo", json!({"message": "hello MCP"}))
        .await;
    assert_eq!(echoed.unwrap(), "Echo: hello MCP");
    let sum = setup
        .call("mcp__everything__get-sum", json!({"a": 2, "b": 40}))
        .await;
    assert_eq!(sum.unwrap(), "The sum of 2 and 40 is 42.");
    // The server validates the arguments; its error reaches the model.
    let bad = setup
        .call("mcp__everything__get-sum", json!({"a": "two"}))
        .await;
    assert!(matches!(bad, Err(ToolError::Respond(_))), "{bad:?}");

    // roots/list answers the workspace root.
    let roots = setup
        .manager
        .tools()
        .iter()
        .any(|tool| tool.name() == "mcp__everything__get-roots-list");
    if roots {
        let listed = setup
            .call("mcp__everything__get-roots-list", json!({}))
            .await
            .unwrap();
        let uri = reqwest::Url::from_directory_path(&setup.root).unwrap();
        assert!(
            listed.contains(uri.as_str().trim_end_matches('/')),
            "{listed}"
        );
    }
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn results_with_structured_content_images_and_resources() {
    let script = require!(everything_script(
        "results_with_structured_content_images_and_resources"
    ));
    let setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let weather = setup
        .call(
            "mcp__everything__get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await
        .unwrap();
    let parsed: Value = serde_json::from_str(&weather).unwrap();
    assert_eq!(parsed["conditions"], "Light rain / drizzle");

    let image = setup
        .call("mcp__everything__get-tiny-image", json!({}))
        .await
        .unwrap();
    assert!(image.contains("[image: image/png"), "{image}");
    assert!(!image.contains("iVBORw0KGgo"), "base64 reached the model");

    let links = setup
        .call("mcp__everything__get-resource-links", json!({"count": 2}))
        .await
        .unwrap();
    assert!(links.contains("demo://resource/dynamic/blob/1"), "{links}");
    assert!(links.contains("demo://resource/dynamic/text/2"), "{links}");
    assert!(
        links.contains("read_mcp_resource {\"server\":\"everything\""),
        "{links}"
    );

    let text = setup
        .call(
            "mcp__everything__get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 3}),
        )
        .await
        .unwrap();
    assert!(
        text.contains("[resource demo://resource/dynamic/text/3 (text/plain)]"),
        "{text}"
    );
    assert!(
        text.contains("Resource 3: This is a plaintext resource"),
        "{text}"
    );
    let blob = setup
        .call(
            "mcp__everything__get-resource-reference",
            json!({"resourceType": "Blob", "resourceId": 4}),
        )
        .await
        .unwrap();
    assert!(
        blob.contains("[resource demo://resource/dynamic/blob/4: binary"),
        "{blob}"
    );
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_reach_the_call() {
    let script = require!(everything_script("progress_notifications_reach_the_call"));
    let mut setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let messages = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&messages);
    setup.ctx.progress = Some(Arc::new(move |message: String| {
        sink.lock().unwrap().push(message);
    }));
    let done = setup
        .call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 0.4, "steps": 4}),
        )
        .await
        .unwrap();
    assert!(done.contains("Long running operation completed"), "{done}");
    assert_eq!(*messages.lock().unwrap(), ["1/4", "2/4", "3/4", "4/4"]);
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_call_returns_at_once_and_the_server_is_told() {
    let script = require!(everything_script(
        "a_cancelled_call_returns_at_once_and_the_server_is_told"
    ));
    let probe = require!(probe_script(
        "a_cancelled_call_returns_at_once_and_the_server_is_told"
    ));
    let mut setup = setup(vec![
        ("everything", node(&script, &["stdio"])),
        ("probe", node(&probe, &[])),
    ])
    .await;
    // The reference server's operation: cancelled after its first progress step of twenty.
    let (first, mut progressed) = tokio::sync::mpsc::unbounded_channel();
    setup.ctx.progress = Some(Arc::new(move |message: String| {
        let _ = first.send(message);
    }));
    let cancel = setup.ctx.cancel.clone();
    let started = Instant::now();
    let tool = setup.tool("mcp__everything__trigger-long-running-operation");
    let call = tool.run(json!({"duration": 20, "steps": 20}), &setup.ctx);
    let canceller = async {
        assert_eq!(progressed.recv().await.as_deref(), Some("1/20"));
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    let error = result.unwrap_err();
    assert!(
        matches!(&error, ToolError::Respond(message) if message.contains("cancelled")),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The server is still there for the next call.
    setup.ctx.cancel = tokio_util::sync::CancellationToken::new();
    setup.ctx.progress = None;
    let echoed = setup
        .call("mcp__everything__echo", json!({"message": "still here"}))
        .await;
    assert_eq!(echoed.unwrap(), "Echo: still here");

    // The probe shows the notification it received.
    let cancel = tokio_util::sync::CancellationToken::new();
    setup.ctx.cancel = cancel.clone();
    let wait = setup.tool("mcp__probe__wait");
    let call = wait.run(json!({}), &setup.ctx);
    let canceller = async {
        tokio::task::yield_now().await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert!(matches!(result, Err(ToolError::Respond(_))));
    // The notification went before the call returned, so before this next request.
    setup.ctx.cancel = tokio_util::sync::CancellationToken::new();
    let seen = setup
        .call("mcp__probe__cancelled", json!({}))
        .await
        .unwrap();
    let seen: Vec<Value> = serde_json::from_str(&seen).unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["reason"], "the user cancelled the request");
    assert!(seen[0]["requestId"].is_number(), "{seen:?}");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_request_past_the_timeout_is_cancelled_with_a_message_naming_the_limit() {
    let probe = require!(probe_script(
        "a_request_past_the_timeout_is_cancelled_with_a_message_naming_the_limit"
    ));
    let settings = McpServerSettings {
        timeout: Some(1500),
        ..node(&probe, &[])
    };
    let setup = setup(vec![("probe", settings)]).await;
    let started = Instant::now();
    let error = setup.call("mcp__probe__wait", json!({})).await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("MCP server \"probe\""), "{message}");
    assert!(message.contains("within 1.5 s"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let seen = setup
        .call("mcp__probe__cancelled", json!({}))
        .await
        .unwrap();
    assert!(seen.contains("timed out"), "{seen}");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    let probe = require!(probe_script("a_changed_tool_list_is_listed_again"));
    let setup = setup(vec![("probe", node(&probe, &[]))]).await;
    let has_added = |setup: &Setup| {
        setup
            .manager
            .tools()
            .iter()
            .any(|tool| tool.name() == "mcp__probe__added")
    };
    assert!(!has_added(&setup));
    let mut changes = setup.manager.changes();
    assert_eq!(
        setup.call("mcp__probe__add-tool", json!({})).await.unwrap(),
        "added"
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    while !has_added(&setup) {
        let changed = tokio::time::timeout_at(deadline, changes.changed()).await;
        assert!(changed.is_ok(), "the new tool never appeared");
    }
    let answer = setup.call("mcp__probe__added", json!({})).await;
    assert_eq!(answer.unwrap(), "the added tool answers");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn prompts_are_listed_and_rendered() {
    let script = require!(everything_script("prompts_are_listed_and_rendered"));
    let setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let prompts = setup.manager.prompts();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"simple-prompt"), "{names:?}");
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    assert_eq!(args.server, "everything");
    let city = args.arguments.iter().find(|a| a.name == "city").unwrap();
    assert!(city.required);
    let state = args.arguments.iter().find(|a| a.name == "state").unwrap();
    assert!(!state.required);
    assert_eq!(setup.status("everything").prompts.len(), prompts.len());

    let simple = setup
        .manager
        .get_prompt("everything", "simple-prompt", BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(simple.len(), 1);
    assert_eq!(simple[0].role, McpRole::User);
    assert_eq!(simple[0].text, "This is a simple prompt without arguments.");

    let arguments = BTreeMap::from([
        ("city".to_owned(), "Lyon".to_owned()),
        ("state".to_owned(), "Rhône".to_owned()),
    ]);
    let rendered = setup
        .manager
        .get_prompt("everything", "args-prompt", arguments)
        .await
        .unwrap();
    assert_eq!(rendered[0].text, "What's weather in Lyon, Rhône?");

    let missing = setup
        .manager
        .get_prompt("everything", "args-prompt", BTreeMap::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("needs the argument `city`"), "{missing}");
    assert!(missing.contains("MCP server \"everything\""), "{missing}");
    let unknown = setup
        .manager
        .get_prompt("everything", "no-such-prompt", BTreeMap::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("simple-prompt"), "{unknown}");

    let embedded = setup
        .manager
        .get_prompt(
            "everything",
            "resource-prompt",
            BTreeMap::from([
                ("resourceType".to_owned(), "Text".to_owned()),
                ("resourceId".to_owned(), "2".to_owned()),
            ]),
        )
        .await
        .unwrap();
    assert!(
        embedded[1]
            .text
            .starts_with("[resource demo://resource/dynamic/text/2"),
        "{embedded:?}"
    );
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn resources_are_listed_and_read() {
    let script = require!(everything_script("resources_are_listed_and_read"));
    let setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let resources = setup.manager.resources();
    let document = resources
        .iter()
        .find(|r| r.uri.starts_with("demo://resource/static/document/"))
        .unwrap_or_else(|| panic!("{resources:#?}"));
    assert_eq!(setup.status("everything").resources, resources.len());
    let cancel = tokio_util::sync::CancellationToken::new();
    let text = setup
        .manager
        .read_resource("everything", &document.uri, &cancel)
        .await
        .unwrap();
    assert!(text.len() > 20, "{text}");
    assert!(!text.starts_with("[resource"), "{text}");
    let blob = setup
        .manager
        .read_resource("everything", "demo://resource/dynamic/blob/1", &cancel)
        .await
        .unwrap();
    assert!(
        blob.starts_with("[resource demo://resource/dynamic/blob/1: binary, text/plain"),
        "{blob}"
    );
    let unknown = setup
        .manager
        .read_resource("everything", "demo://resource/dynamic/text/0", &cancel)
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("MCP server \"everything\""), "{unknown}");

    // The two tools built on them.
    let listed = setup.call("list_mcp_resources", json!({})).await.unwrap();
    assert!(listed.contains(&document.uri), "{listed}");
    assert!(
        listed.contains("demo://resource/dynamic/text/{resourceId}"),
        "{listed}"
    );
    let read = setup
        .call(
            "read_mcp_resource",
            json!({"server": "everything", "uri": "demo://resource/dynamic/text/5"}),
        )
        .await
        .unwrap();
    assert!(
        read.starts_with("Resource 5: This is a plaintext resource"),
        "{read}"
    );
    // A read asks as the server's tools do (the server decides what a read does), unless
    // the server is trusted.
    let tool = setup.tool("read_mcp_resource");
    let args = json!({"server": "everything", "uri": "demo://resource/dynamic/text/5"});
    assert!(tool.mutates_call(&args));
    assert_eq!(tool.approval_aliases(&args), ["mcp__everything"]);
    let none = setup
        .call("list_mcp_resources", json!({"server": "nobody"}))
        .await
        .unwrap_err();
    assert!(none.to_string().contains("everything"), "{none}");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn include_and_exclude_tools_choose_what_the_model_sees() {
    let script = require!(everything_script(
        "include_and_exclude_tools_choose_what_the_model_sees"
    ));
    let settings = McpServerSettings {
        include_tools: vec!["echo".to_owned(), "get-sum".to_owned()],
        exclude_tools: vec!["get-sum".to_owned()],
        trust: true,
        ..node(&script, &["stdio"])
    };
    let setup = setup(vec![("everything", settings)]).await;
    let names: Vec<String> = setup
        .manager
        .tools()
        .iter()
        .map(|tool| tool.name().to_owned())
        .filter(|name| name.starts_with("mcp__"))
        .collect();
    assert_eq!(names, ["mcp__everything__echo"]);
    let status = setup.status("everything");
    assert!(status.filtered_tools.contains(&"get-sum".to_owned()));
    assert!(status.trusted);
    assert!(setup.tool("mcp__everything__echo").trusted());
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_killed_server_is_reported_and_restarted_on_its_next_call() {
    let script = require!(everything_script(
        "a_killed_server_is_reported_and_restarted_on_its_next_call"
    ));
    let setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let pid = setup.status("everything").pid.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    setup
        .wait_for("everything", |status| {
            matches!(&status.state, McpServerState::Failed { message }
                if message.contains("killed by signal SIGKILL"))
        })
        .await;
    let message = failure(&setup.status("everything"));
    assert!(
        message.starts_with("MCP server \"everything\" stopped"),
        "{message}"
    );
    assert!(
        message.contains("starts it again on its next use"),
        "{message}"
    );
    // Its tools stay offered, and the next call starts it again.
    let echoed = setup
        .call("mcp__everything__echo", json!({"message": "again"}))
        .await;
    assert_eq!(echoed.unwrap(), "Echo: again");
    let status = setup.status("everything");
    assert!(ready(&status), "{status:#?}");
    assert_ne!(status.pid, Some(pid));
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_fails_the_call_with_its_stderr() {
    let probe = require!(probe_script(
        "a_server_that_crashes_mid_call_fails_the_call_with_its_stderr"
    ));
    let setup = setup(vec![("probe", node(&probe, &[]))]).await;
    let error = setup
        .call("mcp__probe__crash", json!({}))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("The call of crash failed"), "{message}");
    assert!(
        message.contains("MCP server \"probe\" stopped"),
        "{message}"
    );
    assert!(message.contains("exited with status 7"), "{message}");
    assert!(message.contains("probe: crashing as asked"), "{message}");
    // Restarted once for the next use.
    let seen = setup.call("mcp__probe__cancelled", json!({})).await;
    assert_eq!(seen.unwrap(), "[]");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn servers_that_cannot_start_say_why() {
    require!(probe_script("servers_that_cannot_start_say_why"));
    let missing = McpServerSettings {
        command: Some("tandem-test-no-such-mcp-server".to_owned()),
        ..McpServerSettings::default()
    };
    let dies = McpServerSettings {
        command: Some("node".to_owned()),
        args: vec![
            "-e".to_owned(),
            "console.error('cannot open the database'); process.exit(3)".to_owned(),
        ],
        ..McpServerSettings::default()
    };
    let nowhere = McpServerSettings {
        args: vec!["x".to_owned()],
        ..McpServerSettings::default()
    };
    let silent = McpServerSettings {
        command: Some("node".to_owned()),
        args: vec!["-e".to_owned(), "setInterval(() => {}, 1000)".to_owned()],
        timeout: Some(1000),
        ..McpServerSettings::default()
    };
    let started = Instant::now();
    let setup = setup(vec![
        ("missing", missing),
        ("dies", dies),
        ("nowhere", nowhere),
        ("silent", silent),
    ])
    .await;
    // All four started at once: the slowest took its one-second limit.
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let message = failure(&setup.status("missing"));
    assert!(
        message.starts_with("MCP server \"missing\" could not start"),
        "{message}"
    );
    assert!(message.contains("no such program on PATH"), "{message}");
    let message = failure(&setup.status("dies"));
    assert!(
        message.starts_with("MCP server \"dies\" could not start"),
        "{message}"
    );
    assert!(message.contains("exited with status 3"), "{message}");
    assert!(
        message.contains("\n    cannot open the database"),
        "{message}"
    );
    let message = failure(&setup.status("nowhere"));
    assert!(message.contains("set `command`"), "{message}");
    assert_eq!(setup.status("nowhere").transport, None);
    let message = failure(&setup.status("silent"));
    assert!(
        message.contains("did not finish starting within 1 s"),
        "{message}"
    );
    // A failed server offers nothing, and using it says why.
    assert!(setup.manager.tools().is_empty());
    let error = setup
        .manager
        .get_prompt("dies", "any", BTreeMap::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("exited with status 3"), "{error}");
}

#[tokio::test]
async fn model_keys_do_not_reach_the_server_but_explicit_env_does() {
    let script = require!(everything_script(
        "model_keys_do_not_reach_the_server_but_explicit_env_does"
    ));
    // Set once, for this test binary: no other test reads these.
    std::env::set_var("GEMINI_API_KEY", "gemini-secret-for-tests");
    std::env::set_var("TANDEM_MCP_TEST_KEY", "configured-secret-for-tests");
    let environment = ShellEnvironment::new(&["TANDEM_MCP_TEST_KEY".to_owned()], &[], &[]);
    let settings = McpServerSettings {
        env: BTreeMap::from([("PASSED_ON".to_owned(), "${TANDEM_MCP_TEST_KEY}".to_owned())]),
        ..node(&script, &["stdio"])
    };
    let setup = setup_with(vec![("everything", settings)], environment).await;
    let env = setup
        .call("mcp__everything__get-env", json!({}))
        .await
        .unwrap();
    let env: Value = serde_json::from_str(&env).unwrap();
    assert!(env.get("GEMINI_API_KEY").is_none(), "the model key leaked");
    assert!(
        env.get("TANDEM_MCP_TEST_KEY").is_none(),
        "the apiKeyEnv leaked"
    );
    assert_eq!(env["PASSED_ON"], "configured-secret-for-tests");
    assert!(env.get("PATH").is_some());
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn programs_run_in_the_workspace_root_or_their_cwd_under_it() {
    let probe = require!(probe_script(
        "programs_run_in_the_workspace_root_or_their_cwd_under_it"
    ));
    let above = McpServerSettings {
        cwd: Some(PathBuf::from("..")),
        ..node(&probe, &[])
    };
    let setup = setup(vec![("root", node(&probe, &[])), ("above", above)]).await;
    let cwd = setup.call("mcp__root__cwd", json!({})).await.unwrap();
    assert_eq!(Path::new(&cwd), setup.root);
    let cwd = setup.call("mcp__above__cwd", json!({})).await.unwrap();
    assert_eq!(
        Path::new(&cwd),
        std::fs::canonicalize(setup.root.join("..")).unwrap()
    );
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn reapplying_restarts_changed_servers_and_stops_removed_ones() {
    let script = require!(everything_script(
        "reapplying_restarts_changed_servers_and_stops_removed_ones"
    ));
    let setup = setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let first = setup.status("everything").pid.unwrap();
    let context = McpStartContext {
        roots: vec![setup.root.clone()],
        environment: Arc::default(),
    };
    // Unchanged: nothing happens.
    let same = BTreeMap::from([("everything".to_owned(), node(&script, &["stdio"]))]);
    setup.manager.apply(&same, context.clone());
    assert_eq!(setup.status("everything").pid, Some(first));
    // Changed: restarted.
    let changed = McpServerSettings {
        exclude_tools: vec!["echo".to_owned()],
        ..node(&script, &["stdio"])
    };
    let changed = BTreeMap::from([("everything".to_owned(), changed)]);
    setup.manager.apply(&changed, context.clone());
    assert!(setup.manager.wait_settled(WAIT).await);
    let second = setup.status("everything");
    assert!(ready(&second), "{second:#?}");
    assert_ne!(second.pid, Some(first));
    wait_until_dead(first).await;
    // Removed: stopped.
    setup.manager.apply(&BTreeMap::new(), context);
    assert!(setup.manager.statuses().is_empty());
    wait_until_dead(second.pid.unwrap()).await;
    // Dropping the manager stops what runs.
    let setup = self::setup(vec![("everything", node(&script, &["stdio"]))]).await;
    let pid = setup.status("everything").pid.unwrap();
    drop(setup.manager);
    wait_until_dead(pid).await;
}

/// Starts the reference server over HTTP (`streamableHttp` or `sse`) on `port` (a free one
/// when `None`) and waits until it accepts connections.
async fn http_server(
    script: &Path,
    transport: &str,
    port: Option<u16>,
) -> (tokio::process::Child, u16) {
    let port = port.unwrap_or_else(|| {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    });
    let child = tokio::process::Command::new("node")
        .arg(script)
        .arg(transport)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "the {transport} server did not listen"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (child, port)
}

async fn over_http(test: &str, transport: &str, kind: McpTransport, path: &str) {
    let script = require!(everything_script(test));
    let (_server, port) = http_server(&script, transport, None).await;
    let settings = McpServerSettings {
        url: Some(format!("http://127.0.0.1:{port}{path}")),
        transport: Some(kind),
        ..McpServerSettings::default()
    };
    let setup = setup(vec![("remote", settings)]).await;
    let status = setup.status("remote");
    assert!(ready(&status), "{status:#?}");
    assert_eq!(status.transport, Some(kind));
    assert!(status
        .tools
        .iter()
        .any(|t| t.name == "mcp__remote__get-sum"));
    let sum = setup
        .call("mcp__remote__get-sum", json!({"a": 1.5, "b": 2}))
        .await;
    assert_eq!(sum.unwrap(), "The sum of 1.5 and 2 is 3.5.");
    let text = setup
        .manager
        .get_prompt("remote", "simple-prompt", BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(text[0].text, "This is a simple prompt without arguments.");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn streamable_http_server() {
    over_http(
        "streamable_http_server",
        "streamableHttp",
        McpTransport::Http,
        "/mcp",
    )
    .await;
}

#[tokio::test]
async fn sse_server() {
    over_http("sse_server", "sse", McpTransport::Sse, "/sse").await;
}

/// Issue 41: Gemini CLI's `{"url": ".../sse"}` means an SSE server, which Tandem took for
/// streamable HTTP and failed. An untyped `url` tries streamable HTTP, then SSE, as the MCP
/// specification advises, and says which one it is on.
#[tokio::test]
async fn an_untyped_url_reaches_an_sse_server() {
    let script = require!(everything_script("an_untyped_url_reaches_an_sse_server"));
    let (_server, port) = http_server(&script, "sse", None).await;
    let settings = McpServerSettings {
        url: Some(format!("http://127.0.0.1:{port}/sse")),
        ..McpServerSettings::default()
    };
    let setup = setup(vec![("gemini-style", settings)]).await;
    let status = setup.status("gemini-style");
    assert!(ready(&status), "{status:#?}");
    assert_eq!(status.transport, Some(McpTransport::Sse));
    let sum = setup
        .call("mcp__gemini-style__get-sum", json!({"a": 2, "b": 3}))
        .await;
    assert_eq!(sum.unwrap(), "The sum of 2 and 3 is 5.");
    setup.manager.shutdown().await;
}

#[tokio::test]
async fn an_http_server_that_went_away_is_reconnected_on_its_next_call() {
    let script = require!(everything_script(
        "an_http_server_that_went_away_is_reconnected_on_its_next_call"
    ));
    let (mut server, port) = http_server(&script, "streamableHttp", None).await;
    let settings = McpServerSettings {
        http_url: Some(format!("http://127.0.0.1:{port}/mcp")),
        ..McpServerSettings::default()
    };
    let setup = setup(vec![("remote", settings)]).await;
    assert!(ready(&setup.status("remote")));
    server.kill().await.unwrap();
    let error = setup
        .call("mcp__remote__get-sum", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("The call of get-sum failed"), "{error}");
    assert!(error.contains("MCP server \"remote\""), "{error}");
    let message = failure(&setup.status("remote"));
    assert!(
        message.contains("starts it again on its next use"),
        "{message}"
    );
    // Back on the same port: the next call connects again.
    let (_server, _) = http_server(&script, "streamableHttp", Some(port)).await;
    let sum = setup
        .call("mcp__remote__get-sum", json!({"a": 1, "b": 1}))
        .await;
    assert_eq!(sum.unwrap(), "The sum of 1 and 1 is 2.");
    setup.manager.shutdown().await;
}

/// A local HTTP server that records each request's head and answers 404 (401 asking for a
/// bearer token on `/auth`).
async fn recording_server() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let recorded = Arc::clone(&recorded);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
                    match stream.read(&mut byte).await {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let head = String::from_utf8_lossy(&head).to_lowercase();
                let answer: &[u8] = if head.contains(" /auth ") {
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"test\"\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\n\
                      no server"
                };
                recorded.lock().unwrap().push(head);
                let _ = stream.write_all(answer).await;
            });
        }
    });
    (port, heads)
}

#[tokio::test]
async fn configured_headers_are_sent_with_variables_expanded() {
    let (port, heads) = recording_server().await;
    let headers = BTreeMap::from([
        (
            "Authorization".to_owned(),
            "Bearer ${TANDEM_MCP_TEST_UNSET_TOKEN:-fallback-token}".to_owned(),
        ),
        ("X-Team".to_owned(), "tandem".to_owned()),
    ]);
    let http = McpServerSettings {
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        headers: headers.clone(),
        ..McpServerSettings::default()
    };
    let sse = McpServerSettings {
        url: Some(format!("http://127.0.0.1:{port}/sse")),
        transport: Some(McpTransport::Sse),
        headers,
        ..McpServerSettings::default()
    };
    let auth = McpServerSettings {
        url: Some(format!("http://127.0.0.1:{port}/auth")),
        ..McpServerSettings::default()
    };
    let setup = setup(vec![
        ("web-http", http),
        ("web-sse", sse),
        ("web-auth", auth),
    ])
    .await;
    let heads = heads.lock().unwrap().clone();
    for path in ["post /mcp ", "get /sse "] {
        let head = heads
            .iter()
            .find(|head| head.starts_with(path))
            .unwrap_or_else(|| panic!("no {path}request: {heads:#?}"));
        assert!(
            head.contains("authorization: bearer fallback-token\r\n"),
            "{head}"
        );
        assert!(head.contains("x-team: tandem\r\n"), "{head}");
    }
    for server in ["web-http", "web-sse"] {
        let message = failure(&setup.status(server));
        assert!(
            message.starts_with(&format!("MCP server \"{server}\"")),
            "{message}"
        );
        assert!(message.contains("404"), "{message}");
    }
    // Without `type`, a refused streamable HTTP handshake is tried again as HTTP+SSE.
    let message = failure(&setup.status("web-http"));
    assert!(message.contains("and as an HTTP+SSE server"), "{message}");
    assert!(
        heads.iter().any(|head| head.starts_with("get /mcp ")),
        "{heads:#?}"
    );
    let message = failure(&setup.status("web-auth"));
    assert!(message.contains("give a token in `headers`"), "{message}");
}
