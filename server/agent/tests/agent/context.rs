//! Context management driven by replay scripts: the context figure in usage events, automatic
//! and forced compression (with the inflation guard), compress-and-retry when the provider says
//! the window is exceeded, reminders that ride only on the request being sent, saved sessions
//! read back and resumed, and checkpoints restored after edits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use tandem_agent::settings::ContextSettings;
use tandem_agent::store::SessionStore;
use tandem_agent::tools::{self, Todo, TodoStatus, Tool, ToolContext};
use tandem_agent::{
    AgentConfig, ApprovalMode, ApprovalPolicy, CompressionStatus, Event, Prompt, Session,
    StopReason, TurnIo, UsageReport,
};
use tandem_providers::{CancellationToken, Message, Model, ModelConfig, Part, ProviderKind, Role};
use tokio::sync::mpsc;

const SNAPSHOT: &str =
    "<state_snapshot><overall_goal>Fix the parser.</overall_goal></state_snapshot>";

struct Harness {
    dir: tempfile::TempDir,
    session: Session,
}

fn root(dir: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(dir.path()).unwrap().join("ws")
}

/// A session in an empty workspace whose model plays `script`, with the real tools in yolo mode
/// and a context window of `window` tokens.
fn harness(script: &[serde_json::Value], window: u64) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let lines: Vec<String> = script.iter().map(|line| line.to_string()).collect();
    let script_path = dir.path().join("script.jsonl");
    std::fs::write(&script_path, lines.join("\n") + "\n").unwrap();
    let mut model_config = ModelConfig::new(ProviderKind::Replay, "replay", "");
    model_config.script = Some(script_path);
    model_config.idle_timeout = Duration::from_secs(30);
    let ctx = ToolContext::on_disk(vec![root(&dir)]);
    let config = AgentConfig {
        approval: ApprovalPolicy {
            mode: ApprovalMode::Yolo,
            ..ApprovalPolicy::default()
        },
        context: ContextSettings {
            context_window: Some(window),
            ..ContextSettings::default()
        },
        ..AgentConfig::default()
    };
    let session = Session::new(Model::new(model_config).unwrap(), tools::all(), ctx, config);
    Harness { dir, session }
}

/// Runs one prompt; returns how it ended and its events.
async fn turn(session: &mut Session, text: &str) -> (StopReason, Vec<Event>) {
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (_approve, mut approvals) = mpsc::unbounded_channel();
    let mut io = TurnIo {
        events: &events_tx,
        approvals: &mut approvals,
        cancel: CancellationToken::new(),
    };
    let reason = session.run_turn(Prompt::text(text), &mut io).await;
    drop(io);
    drop(events_tx);
    let mut received = Vec::new();
    while let Some(event) = events.recv().await {
        received.push(event);
    }
    (reason, received)
}

fn compressions(events: &[Event]) -> Vec<CompressionStatus> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Compression(report) => Some(report.status),
            _ => None,
        })
        .collect()
}

fn usages(events: &[Event]) -> Vec<UsageReport> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Usage(report) => Some(*report),
            _ => None,
        })
        .collect()
}

/// Every tool call is answered by the next message, roles alternate, and the history starts
/// with the user.
fn assert_valid(history: &[Message]) {
    assert_eq!(history.first().map(|m| m.role), Some(Role::User));
    for pair in history.windows(2) {
        assert_ne!(pair[0].role, pair[1].role, "{history:#?}");
        let calls: Vec<&str> = pair[0].tool_calls().map(|call| call.id.as_str()).collect();
        let results: Vec<&str> = pair[1]
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some(result.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(calls, results, "{history:#?}");
    }
}

fn all_text(history: &[Message]) -> String {
    serde_json::to_string(history).unwrap()
}

#[tokio::test]
async fn usage_events_carry_the_reported_context_figure_or_an_estimate() {
    let mut h = harness(
        &[
            json!({"text": "one", "usage": {"inputTokens": 300, "outputTokens": 20, "cachedInputTokens": 100}}),
            json!({"text": "two"}),
        ],
        10_000,
    );
    let (_, events) = turn(&mut h.session, "first").await;
    let reported = usages(&events);
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0].context_tokens, 320);
    assert_eq!(reported[0].context_window, 10_000);
    assert_eq!(reported[0].usage.cached_input_tokens, 100);
    assert!(!reported[0].estimated);

    let (_, events) = turn(&mut h.session, "second").await;
    let estimated = usages(&events);
    assert_eq!(estimated.len(), 1);
    assert!(estimated[0].estimated);
    // The provider's 320 plus an estimate of what came after it.
    assert!(estimated[0].context_tokens > 320, "{estimated:?}");
}

#[tokio::test]
async fn a_full_window_is_compressed_before_the_next_prompt() {
    let mut h = harness(
        &[
            json!({"text": format!("I read the parser. {}", (0..150).map(|i| format!("Line {i} looks fine. ")).collect::<String>()), "usage": {"inputTokens": 600, "outputTokens": 10}}),
            json!({"text": SNAPSHOT}),
            json!({"text": "Continuing.", "usage": {"inputTokens": 100, "outputTokens": 5}}),
            json!({"text": "Still fine.", "usage": {"inputTokens": 150, "outputTokens": 5}}),
        ],
        1_000,
    );
    let (reason, events) = turn(&mut h.session, "Look at the parser").await;
    assert_eq!(reason, StopReason::EndTurn);
    assert!(compressions(&events).is_empty());

    // 610 of 1000 tokens is over the 0.5 threshold.
    let (reason, events) = turn(&mut h.session, "Now fix it").await;
    assert_eq!(reason, StopReason::EndTurn);
    assert_eq!(compressions(&events), [CompressionStatus::Compressed]);
    let history = h.session.history();
    assert_valid(history);
    assert!(history[0].text().contains(SNAPSHOT), "{history:#?}");
    assert!(!all_text(history).contains("Look at the parser"));
    // The new history is told the approval mode again, after the prompt.
    assert!(
        matches!(&history[2].parts[0], Part::Text { text } if text == "Now fix it"),
        "{history:#?}"
    );

    // 155 tokens: below the threshold, no compression.
    let (_, events) = turn(&mut h.session, "Thanks").await;
    assert!(compressions(&events).is_empty());
}

#[tokio::test]
async fn a_snapshot_that_saves_nothing_is_discarded_until_the_user_forces_one() {
    let big = format!("<state_snapshot>{}</state_snapshot>", "x".repeat(4_000));
    let mut h = harness(
        &[
            json!({"text": "short ".repeat(100), "usage": {"inputTokens": 900, "outputTokens": 10}}),
            json!({"text": big}),
            json!({"text": "answer two", "usage": {"inputTokens": 950, "outputTokens": 10}}),
            // No compression is attempted before this one: the next line is its answer.
            json!({"text": "answer three", "usage": {"inputTokens": 990, "outputTokens": 10}}),
            json!({"text": SNAPSHOT}),
        ],
        1_000,
    );
    turn(&mut h.session, "one").await;
    let before = h.session.history().to_vec();
    let (_, events) = turn(&mut h.session, "two").await;
    assert_eq!(compressions(&events), [CompressionStatus::Inflated]);
    assert_eq!(h.session.history()[..2], before[..]);

    let (_, events) = turn(&mut h.session, "three").await;
    assert!(compressions(&events).is_empty());
    assert_eq!(h.session.history().last().unwrap().text(), "answer three");

    let (reason, events) = turn(&mut h.session, "/compress").await;
    assert_eq!(reason, StopReason::EndTurn);
    assert_eq!(compressions(&events), [CompressionStatus::Compressed]);
    let summary: String = events
        .iter()
        .filter_map(|event| match event {
            Event::TextChunk { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        summary.starts_with("Compressed the conversation"),
        "{summary}"
    );
    assert_valid(h.session.history());
}

#[tokio::test]
async fn an_exceeded_window_compresses_and_retries_once() {
    let overflow =
        json!({"error": {"kind": "context_window_exceeded", "message": "prompt is too long"}});
    let mut h = harness(
        &[
            json!({"text": format!("first answer {}", "details ".repeat(300))}),
            overflow.clone(),
            json!({"text": SNAPSHOT}),
            json!({"text": "second answer"}),
            overflow.clone(),
            json!({"text": SNAPSHOT}),
            overflow,
        ],
        1_000_000,
    );
    turn(&mut h.session, "first").await;
    let (reason, events) = turn(&mut h.session, "second").await;
    assert_eq!(reason, StopReason::EndTurn, "{events:#?}");
    assert_eq!(compressions(&events), [CompressionStatus::Compressed]);
    assert_eq!(h.session.history().last().unwrap().text(), "second answer");
    assert!(!all_text(h.session.history()).contains("details details"));
    assert_valid(h.session.history());

    // A second overflow in the same turn ends it with the error.
    let (reason, events) = turn(&mut h.session, "third").await;
    assert_eq!(reason, StopReason::Error);
    let Some(Event::TurnFinished { message, .. }) = events.last() else {
        panic!("{events:#?}");
    };
    assert!(
        message.as_deref().unwrap().contains("did not make it fit"),
        "{message:?}"
    );
}

#[tokio::test]
async fn a_reminder_joins_the_newest_message_once_and_stays_in_the_history() {
    let mut h = harness(&[json!({"text": "ok"})], 10_000);
    turn(&mut h.session, "hello").await;
    let path = root(&h.dir).join("notes.txt");
    std::fs::write(&path, "old\n").unwrap();
    let ctx = h.session.tool_context().clone();
    ctx.session.mark_read(&path);
    std::fs::write(&path, "new, longer\n").unwrap();
    ctx.session.set_todos(vec![Todo {
        description: "Fix the parser".into(),
        status: TodoStatus::InProgress,
    }]);

    // The state right before a request: the history ends with the user's message.
    let mut history = h.session.history().to_vec();
    history.push(Message::user("What changed?"));
    h.session.replace_history(history.clone());
    let request = h.session.next_request();
    assert_eq!(
        request.messages[..history.len() - 1],
        history[..history.len() - 1]
    );
    let last = request.messages.last().unwrap();
    let Some(Part::Text { text }) = last.parts.last() else {
        panic!("{last:#?}");
    };
    assert!(text.starts_with("<system-reminder>"), "{text}");
    assert!(text.contains("1. [~] Fix the parser"), "{text}");
    assert!(text.contains("notes.txt"), "{text}");
    assert!(text.contains("Approval mode: yolo"), "{text}");
    // It is in the history now, where it was sent.
    assert_eq!(h.session.history(), request.messages.as_slice());

    // Nothing new to say: the next request is the same, the reminder not repeated.
    let again = h.session.next_request();
    assert_eq!(again.system, request.system);
    assert_eq!(again.tools, request.tools);
    assert_eq!(again.messages, request.messages);

    // A changed plan is said again, as new content on the newest message.
    ctx.session.set_todos(vec![
        Todo {
            description: "Fix the parser".into(),
            status: TodoStatus::Completed,
        },
        Todo {
            description: "Test it".into(),
            status: TodoStatus::InProgress,
        },
    ]);
    let changed = h.session.next_request();
    assert!(changed
        .messages
        .starts_with(&request.messages[..request.messages.len() - 1]));
    let Some(Part::Text { text }) = changed.messages.last().unwrap().parts.last() else {
        panic!("{changed:#?}");
    };
    assert!(text.contains("2. [~] Test it"), "{text}");
    assert!(
        !text.contains("notes.txt") && !text.contains("Approval mode"),
        "{text}"
    );
}

#[tokio::test]
async fn a_saved_session_resumes_from_its_last_finished_turn() {
    let state = tempfile::tempdir().unwrap();
    let script = [
        json!({"text": "Reading.", "toolCalls": [{"id": "c1", "name": "list_directory", "arguments": {"path": "."}}]}),
        json!({"text": "Nothing here."}),
        json!({"text": "Second answer."}),
        json!({"text": "Third answer."}),
    ];
    let mut h = harness(&script, 10_000);
    let store = SessionStore::for_workspace(state.path(), &root(&h.dir));
    let id = tandem_agent::store::new_session_id();
    h.session
        .set_log(store.create(&id, &root(&h.dir), "replay").unwrap());
    assert_eq!(h.session.log_id().as_deref(), Some(id.as_str()));
    turn(&mut h.session, "What is here?").await;
    turn(&mut h.session, "And now?").await;
    let history = h.session.history().to_vec();

    let (loaded, log) = store.open(&id).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.history, history);
    assert_eq!(loaded.turns.len(), 2);
    assert_eq!(loaded.turns[0].text, "What is here?");
    let texts: Vec<&Event> = loaded.turns[0].events.iter().collect();
    assert!(
        texts
            .iter()
            .any(|event| matches!(event, Event::TextChunk { text } if text == "Reading.")),
        "{texts:#?}"
    );

    let mut resumed = Session::resume(
        Model::new({
            let mut config = ModelConfig::new(ProviderKind::Replay, "replay", "");
            let script_path = h.dir.path().join("rest.jsonl");
            std::fs::write(&script_path, json!({"text": "Third answer."}).to_string()).unwrap();
            config.script = Some(script_path);
            config
        })
        .unwrap(),
        tools::all(),
        h.session.tool_context().clone(),
        AgentConfig::default(),
        &loaded,
        log,
    );
    turn(&mut resumed, "Once more").await;
    assert_valid(resumed.history());
    assert_eq!(resumed.history()[..history.len()], history[..]);
    let (reloaded, _) = store.open(&id).unwrap();
    assert_eq!(reloaded.turns.len(), 3);
    assert_eq!(reloaded.history, resumed.history());
}

#[tokio::test]
async fn restore_takes_back_a_turns_edits_and_spares_a_file_the_user_changed() {
    let mut h = harness(
        &[
            json!({"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}),
            json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "agent one\n"}}]}),
            json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "agent two\n"}}, {"name": "write_file", "arguments": {"path": "new.txt", "content": "created\n"}}]}),
            json!({"text": "Done."}),
            json!({"toolCalls": [{"name": "read_file", "arguments": {"path": "a.txt"}}, {"name": "read_file", "arguments": {"path": "b.txt"}}]}),
            json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "agent three\n"}}, {"name": "write_file", "arguments": {"path": "b.txt", "content": "agent b\n"}}]}),
            json!({"text": "Done again."}),
        ],
        1_000_000,
    );
    let ws = root(&h.dir);
    std::fs::write(ws.join("a.txt"), "original\n").unwrap();
    std::fs::write(ws.join("b.txt"), "b original\n").unwrap();
    let (reason, events) = turn(&mut h.session, "Edit a twice").await;
    assert_eq!(reason, StopReason::EndTurn, "{events:#?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "agent two\n"
    );
    assert_eq!(h.session.checkpoints().len(), 1);

    let (_, events) = turn(&mut h.session, "/restore").await;
    let Some(Event::Restored(report)) = events.iter().find(|e| matches!(e, Event::Restored(_)))
    else {
        panic!("{events:#?}");
    };
    assert_eq!(report.turn_id.as_deref(), Some("t1"));
    assert_eq!(report.restored.len(), 2, "{report:#?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "original\n"
    );
    assert!(!ws.join("new.txt").exists());

    let (reason, events) = turn(&mut h.session, "Edit a and b").await;
    assert_eq!(reason, StopReason::EndTurn, "{events:#?}");
    std::fs::write(ws.join("b.txt"), "the user's b\n").unwrap();
    let (_, events) = turn(&mut h.session, "/restore t3").await;
    let Some(Event::Restored(report)) = events.iter().find(|e| matches!(e, Event::Restored(_)))
    else {
        panic!("{events:#?}");
    };
    assert_eq!(report.restored, [ws.join("a.txt")], "{report:#?}");
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].path, ws.join("b.txt"));
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "the user's b\n"
    );

    // A turn that changed nothing: the answer names the turns that did.
    let (_, events) = turn(&mut h.session, "/restore t2").await;
    let said: String = events
        .iter()
        .filter_map(|event| match event {
            Event::TextChunk { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        "Turn t2 has no changes to restore; the turns that do: t3."
    );
}

#[tokio::test]
async fn an_old_large_output_becomes_a_note_pointing_at_a_copy_the_model_can_read() {
    let state = tempfile::tempdir().unwrap();
    let mut h = harness(
        &[
            json!({"text": "Noted."}),
            json!({"toolCalls": [{"id": "big", "name": "read_file", "arguments": {"path": "big.txt"}}]}),
            json!({"text": "It is long."}),
            json!({"text": SNAPSHOT}),
        ],
        1_000_000,
    );
    let ws = root(&h.dir);
    let big: String = (0..200)
        .map(|i| format!("line {i} of the big file\n"))
        .collect();
    std::fs::write(ws.join("big.txt"), &big).unwrap();
    let store = SessionStore::for_workspace(state.path(), &ws);
    let id = tandem_agent::store::new_session_id();
    h.session.set_log(store.create(&id, &ws, "replay").unwrap());
    let mut config = h.session.config().clone();
    config.context.kept_output_tokens = 10;
    config.context.output_note_over_bytes = 100;
    h.session.set_config(config);

    // A long first prompt, so that the split falls after it and the read stays in the kept part.
    let long: String = (0..1500).map(|i| format!("Requirement {i}. ")).collect();
    turn(&mut h.session, &long).await;
    turn(&mut h.session, "Read big.txt").await;
    let (_, events) = turn(&mut h.session, "/compress").await;
    assert_eq!(compressions(&events), [CompressionStatus::Compressed]);

    let history = h.session.history();
    assert_valid(history);
    let note = history
        .iter()
        .flat_map(|message| &message.parts)
        .find_map(|part| match part {
            Part::ToolResult(result) if result.call_id == "big" => Some(result.content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(note.starts_with("[read_file output ("), "{note}");
    let path = note
        .split("saved at ")
        .nth(1)
        .and_then(|rest| rest.split(" — ").next())
        .unwrap();
    let ctx = h.session.tool_context().clone();
    let read = tandem_agent::tools::read_file::ReadFile
        .run(json!({"path": path}), &ctx)
        .await
        .unwrap();
    assert!(
        read.text.contains("line 199 of the big file"),
        "{}",
        read.text
    );
}

#[tokio::test]
async fn after_a_compression_the_next_prompt_carries_the_whole_editor_context() {
    let mut h = harness(
        &[
            json!({"text": format!("First. {}", (0..200).map(|i| format!("Point {i}. ")).collect::<String>())}),
            json!({"text": "Second."}),
            json!({"text": SNAPSHOT}),
            json!({"text": "Third."}),
        ],
        1_000_000,
    );
    let ws = root(&h.dir);
    std::fs::write(ws.join("main.rs"), "fn main() {}\n").unwrap();
    let ide = tandem_agent::IdeState {
        active: Some(tandem_agent::ide::ActiveEditor {
            path: ws.join("main.rs"),
            language: Some("rust".into()),
            cursor: None,
            selection: None,
            symbol: None,
        }),
        open: Vec::new(),
    };
    let ask = |text: &str| Prompt {
        text: text.to_owned(),
        ide: Some(ide.clone()),
        ..Prompt::default()
    };
    let (events_tx, _events) = mpsc::unbounded_channel();
    let (_approve, mut approvals) = mpsc::unbounded_channel();
    let mut io = TurnIo {
        events: &events_tx,
        approvals: &mut approvals,
        cancel: CancellationToken::new(),
    };
    let last_prompt = |session: &Session| {
        let user = session
            .history()
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .unwrap();
        all_text(std::slice::from_ref(user))
    };
    h.session.run_turn(ask("one"), &mut io).await;
    assert!(last_prompt(&h.session).contains("Active file: main.rs"));
    h.session.run_turn(ask("two"), &mut io).await;
    // Nothing changed in the editor: nothing is repeated.
    assert!(!last_prompt(&h.session).contains("<ide>"));
    assert_eq!(
        h.session.compress(&mut io).await.status,
        CompressionStatus::Compressed
    );
    h.session.run_turn(ask("three"), &mut io).await;
    assert!(last_prompt(&h.session).contains("Active file: main.rs"));
}
