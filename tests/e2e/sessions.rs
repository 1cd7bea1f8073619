//! Saved sessions from the command line: `tandem ask` saves its session under the state
//! directory, `--continue` and `--resume ID` pick it up in a later process (also after the
//! previous one was killed mid-turn, or left a half-written line), and `tandem sessions` lists
//! and deletes them. Each test spawns the built binary against the scripted model server, with
//! its own user settings, workspace and state directory.

use std::io::Write as _;

use serde_json::{json, Value};
use tandem_test_support::{ModelServer, Reply, Step, TIMEOUT};
use tempfile::TempDir;
use tokio::io::AsyncReadExt;
use tokio::process::Child;

use super::headless::{self, Run};

/// User settings choosing the model server, a workspace and a state directory, all temporary.
struct Setup {
    server: ModelServer,
    config: TempDir,
    workspace: TempDir,
    state: TempDir,
}

impl Setup {
    async fn new() -> Setup {
        Setup::with_settings(json!({})).await
    }

    /// `extra` is merged into user settings that choose the model server's OpenAI endpoint.
    async fn with_settings(extra: Value) -> Setup {
        let server = ModelServer::start().await;
        let mut settings = json!({"model": "local", "models": {"local": {
            "provider": "openai", "model": "test-model", "baseUrl": format!("{}/v1", server.url())
        }}});
        for (key, value) in extra.as_object().unwrap() {
            settings[key] = value.clone();
        }
        let config = tempfile::tempdir().unwrap();
        std::fs::write(config.path().join("settings.json"), settings.to_string()).unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("a.txt"), "alpha\n").unwrap();
        Setup {
            server,
            config,
            workspace,
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// `tandem ARGS… --workspace WS`, started with this setup's directories.
    fn spawn(&self, args: &[&str]) -> Child {
        headless::tandem(self.config.path(), self.state.path())
            .args(args)
            .arg("--workspace")
            .arg(self.workspace.path())
            .spawn()
            .unwrap()
    }

    async fn tandem(&self, args: &[&str]) -> Run {
        Run::of(self.spawn(args)).await
    }

    /// `tandem ask` that must succeed; returns the id of the session it saved.
    async fn ask_ok(&self, args: &[&str]) -> String {
        let mut all = vec!["ask"];
        all.extend(args);
        let run = self.tandem(&all).await;
        assert_eq!(run.code, 0, "{run:#?}");
        run.saved_id()
    }

    /// `tandem sessions --json`, parsed.
    async fn sessions(&self) -> Vec<Value> {
        let run = self.tandem(&["sessions", "--json"]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        match serde_json::from_str(&run.stdout) {
            Ok(Value::Array(sessions)) => sessions,
            other => panic!("not a JSON array ({other:?}):\n{run:#?}"),
        }
    }

    /// The messages of the `n`th model request (from 1).
    fn messages(&self, n: usize) -> Vec<Value> {
        let requests = self.server.requests();
        assert!(requests.len() >= n, "only {} requests", requests.len());
        requests[n - 1].json()["messages"]
            .as_array()
            .unwrap()
            .clone()
    }
}

/// What a model request carried, as one string, for `contains` checks.
fn text_of(messages: &[Value]) -> String {
    Value::Array(messages.to_vec()).to_string()
}

/// The history a provider accepts: no two user or two assistant messages in a row, and every
/// tool call answered by a tool message before the conversation moves on.
fn assert_well_formed(messages: &[Value]) {
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    for pair in roles.windows(2) {
        assert!(
            !(pair[0] == pair[1] && matches!(pair[0], "user" | "assistant")),
            "two {} messages in a row: {roles:?}\n{}",
            pair[0],
            text_of(messages)
        );
    }
    for (index, message) in messages.iter().enumerate() {
        let Some(calls) = message["tool_calls"].as_array() else {
            continue;
        };
        let answered: Vec<&str> = messages[index + 1..]
            .iter()
            .take_while(|next| next["role"] == "tool")
            .map(|next| next["tool_call_id"].as_str().unwrap())
            .collect();
        for call in calls {
            let id = call["id"].as_str().unwrap();
            assert!(
                answered.contains(&id),
                "tool call {id} has no result: {roles:?}\n{}",
                text_of(messages)
            );
        }
    }
}

/// An OpenAI stream that starts an answer, then sends nothing more and never ends.
fn stalled_answer(partial: &str) -> Reply {
    let chunk = json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": partial}, "finish_reason": null}],
    });
    Reply::sse(format!("data: {chunk}\n\n")).step(Step::Hang)
}

#[tokio::test]
async fn a_killed_turn_is_lost_and_the_session_resumes_from_the_last_finished_one() {
    let setup = Setup::new().await;
    let server = &setup.server;
    // Turn one: a tool call, then the answer.
    server.push(Reply::openai_tool_calls(&[(
        "call_1",
        "list_directory",
        json!({}),
    )]));
    server.push(Reply::openai_text("first answer"));
    // Turn two: a tool call that finishes, then an answer that stalls mid-stream.
    server.push(Reply::openai_tool_calls(&[(
        "call_2",
        "list_directory",
        json!({}),
    )]));
    server.push(stalled_answer("half an answ"));
    // Turn three.
    server.push(Reply::openai_text("third answer"));

    let first = setup.ask_ok(&["one: alpha question"]).await;

    // `--json`, whose events stream to a pipe (plain text to a pipe waits for the whole answer).
    let mut killed = setup.spawn(&["ask", "--continue", "--json", "two: bravo question"]);
    tokio::time::timeout(TIMEOUT, server.wait_for_requests(4))
        .await
        .expect("the second turn never reached its second request");
    // Mid-stream: the partial answer's event has been printed.
    let mut stdout = killed.stdout.take().unwrap();
    let mut printed = Vec::new();
    while !String::from_utf8_lossy(&printed).contains("half an answ") {
        let read = tokio::time::timeout(TIMEOUT, stdout.read_buf(&mut printed))
            .await
            .expect("the partial answer was never printed")
            .unwrap();
        assert!(
            read > 0,
            "stdout closed: {:?}",
            String::from_utf8_lossy(&printed)
        );
    }
    killed.kill().await.unwrap();

    let run = setup
        .tandem(&["ask", "--continue", "three: charlie question"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "third answer\n");
    assert_eq!(run.saved_id(), first);
    assert!(
        run.stderr
            .lines()
            .any(|line| line.starts_with("warning: ") && line.contains("bravo question")),
        "no warning naming the lost turn:\n{}",
        run.stderr
    );

    assert_eq!(server.request_count(), 5);
    let messages = setup.messages(5);
    let sent = text_of(&messages);
    for needle in [
        "alpha question",
        "first answer",
        "charlie question",
        "call_1",
    ] {
        assert!(sent.contains(needle), "{needle:?} not sent: {sent}");
    }
    for lost in ["bravo question", "call_2", "half an answ"] {
        assert!(
            !sent.contains(lost),
            "{lost:?} from the killed turn was sent: {sent}"
        );
    }
    assert_well_formed(&messages);

    let sessions = setup.sessions().await;
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["turns"], 2, "{sessions:?}");
}

#[tokio::test]
async fn a_truncated_last_line_is_skipped_with_a_warning() {
    let setup = Setup::new().await;
    setup.server.push(Reply::openai_text("first answer"));
    setup.server.push(Reply::openai_text("second answer"));
    setup.server.push(Reply::openai_text("third answer"));

    let id = setup.ask_ok(&["one: alpha question"]).await;
    let sessions = setup.sessions().await;
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let path = sessions[0]["path"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with(setup.state.path().to_str().unwrap()),
        "{path}"
    );
    // What a process killed while writing leaves behind: half a line, no line break.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(br#"{"type":"message","message":{"role":"us"#)
        .unwrap();
    drop(file);

    let run = setup
        .tandem(&["ask", "--continue", "two: bravo question"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "second answer\n");
    assert!(
        run.stderr
            .lines()
            .any(|line| line.starts_with("warning: ") && line.contains("cut off")),
        "no warning about the cut-off line:\n{}",
        run.stderr
    );
    assert_eq!(run.saved_id(), id);
    let sent = text_of(&setup.messages(2));
    for needle in ["alpha question", "first answer", "bravo question"] {
        assert!(sent.contains(needle), "{needle:?} not sent: {sent}");
    }
    assert_well_formed(&setup.messages(2));

    // The turn after the cut-off line was saved whole: it did not run into the half line.
    setup
        .ask_ok(&["--resume", &id, "three: charlie question"])
        .await;
    let sent = text_of(&setup.messages(3));
    for needle in [
        "alpha question",
        "first answer",
        "bravo question",
        "second answer",
    ] {
        assert!(sent.contains(needle), "{needle:?} not sent: {sent}");
    }
    assert_well_formed(&setup.messages(3));
}

#[tokio::test]
async fn sessions_are_listed_and_deleted() {
    let setup = Setup::new().await;
    assert_eq!(setup.sessions().await, Vec::<Value>::new());
    for answer in ["first answer", "second answer", "third answer"] {
        setup.server.push(Reply::openai_text(answer));
    }
    let older = setup
        .ask_ok(&["Why does the parser fail?\nMore detail."])
        .await;
    let newer = setup.ask_ok(&["Add a test for the lexer"]).await;
    assert_ne!(older, newer);
    // Continuing the older session makes it the most recently updated.
    let resumed = setup.ask_ok(&["--resume", &older, "and now?"]).await;
    assert_eq!(resumed, older);

    let sessions = setup.sessions().await;
    let ids: Vec<&str> = sessions.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [older.as_str(), newer.as_str()], "{sessions:?}");
    assert_eq!(sessions[0]["title"], "Why does the parser fail?");
    assert_eq!(sessions[0]["turns"], 2);
    assert_eq!(sessions[1]["title"], "Add a test for the lexer");
    assert_eq!(sessions[1]["turns"], 1);
    assert!(sessions[0]["updatedMs"].as_u64() >= sessions[1]["updatedMs"].as_u64());

    let run = setup.tandem(&["sessions"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{run:#?}");
    assert!(lines[0].starts_with("ID "), "{run:#?}");
    assert!(lines[1].starts_with(&older) && lines[1].ends_with("  Why does the parser fail?"));
    assert!(lines[2].starts_with(&newer) && lines[2].ends_with("  Add a test for the lexer"));
    let listed = setup.tandem(&["sessions", "list"]).await;
    assert_eq!(listed.stdout, run.stdout, "{listed:#?}");

    let run = setup.tandem(&["sessions", "delete", &older]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, format!("deleted session {older}\n"));
    let sessions = setup.sessions().await;
    let ids: Vec<&str> = sessions.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [newer.as_str()], "{sessions:?}");

    // Deleted means gone: neither deleted again nor resumed.
    let run = setup.tandem(&["sessions", "delete", &older]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains(&older), "{run:#?}");
    let run = setup.tandem(&["ask", "--resume", &older, "hello?"]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(setup.server.request_count(), 3);
}

#[tokio::test]
async fn resume_of_an_unknown_session_is_a_clear_error() {
    let setup = Setup::new().await;
    let run = setup
        .tandem(&["ask", "--resume", "20240101-000000-dead", "hello?"])
        .await;
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.starts_with("tandem: ") && run.stderr.contains("20240101-000000-dead"),
        "{run:#?}"
    );
    assert!(run.stderr.contains("tandem sessions"), "{run:#?}");

    let run = setup.tandem(&["ask", "--continue", "hello?"]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr
            .contains("no saved session for this workspace; start one with tandem ask \"…\""),
        "{run:#?}"
    );

    let run = setup
        .tandem(&["ask", "--continue", "--resume", "x", "hello?"])
        .await;
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("cannot be used with"), "{run:#?}");
    assert_eq!(setup.server.request_count(), 0);
}

#[tokio::test]
async fn with_saving_off_nothing_is_saved_and_resuming_says_why() {
    let setup = Setup::with_settings(json!({"sessions": {"persist": false}})).await;
    setup.server.push(Reply::openai_text("an answer"));
    let run = setup.tandem(&["ask", "hello?"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("saved"), "{run:#?}");
    assert_eq!(
        std::fs::read_dir(setup.state.path()).unwrap().count(),
        0,
        "the state directory was written"
    );

    let run = setup.tandem(&["ask", "--continue", "hello?"]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("`sessions.persist`"), "{run:#?}");
    let run = setup.tandem(&["sessions", "--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "[]\n");
    assert!(run.stderr.contains("`sessions.persist`"), "{run:#?}");
}

/// `/restore` and `/compress` are prompts like any other for `tandem ask`; the session handles
/// them and stderr says what they did.
#[tokio::test]
async fn slash_commands_pass_through_to_the_saved_session() {
    let setup = Setup::new().await;
    // An existing file is only overwritten once the model has read it.
    setup.server.push(Reply::openai_tool_calls(&[(
        "call_0",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    setup.server.push(Reply::openai_tool_calls(&[
        (
            "call_1",
            "write_file",
            json!({"path": "a.txt", "content": "changed\n"}),
        ),
        (
            "call_2",
            "write_file",
            json!({"path": "new.txt", "content": "new\n"}),
        ),
    ]));
    setup.server.push(Reply::openai_text("wrote them"));
    let id = setup
        .ask_ok(&["--approval-mode", "yolo", "change a.txt, add new.txt"])
        .await;
    let a = setup.workspace.path().join("a.txt");
    let new = setup.workspace.path().join("new.txt");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "changed\n");
    assert!(new.exists());

    let run = setup.tandem(&["ask", "--continue", "/restore t1"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.saved_id(), id);
    let mut restored: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("restored "))
        .collect();
    restored.sort_unstable();
    assert_eq!(restored, ["restored a.txt", "restored new.txt"], "{run:#?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "alpha\n");
    assert!(!new.exists());

    // `/restore` asked the model nothing; `/compress` asks it for the summary.
    assert_eq!(setup.server.request_count(), 3);
    setup.server.push(Reply::openai_text(
        "<state_snapshot>Wrote a.txt and new.txt, then put both back.</state_snapshot>",
    ));
    let run = setup.tandem(&["ask", "--continue", "/compress"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("compressed the history: "), "{run:#?}");
    assert_eq!(setup.server.request_count(), 4);
}
