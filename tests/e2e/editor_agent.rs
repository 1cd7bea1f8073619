//! The agent inside the language server, driven by a fake editor that keeps its own buffers and
//! answers the server's requests like a real one, against the scripted model server: custom
//! events and approvals for a rich client, progress and messages for a plain one, edits that
//! land in buffers by version (also while the user types), IDE context, code actions, instruction
//! comments, inline chat, cancellation, approvals and sessions.

use std::collections::HashMap;

use serde_json::{json, Value};
use tandem_test_support::editor::range;
use tandem_test_support::reference::Pos;
use tandem_test_support::{
    scripted_settings, FakeEditor, ModelServer, RecordedRequest, Reply, Step, VersionCheck, TIMEOUT,
};

/// The content of the last message with `role` in a chat request.
fn last_content(request: &Value, role: &str) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == role)
        .and_then(|message| message["content"].as_str())
        .unwrap_or_else(|| panic!("no {role} message with text in {request:#}"))
        .to_owned()
}

/// One streamed text delta, without the end of the stream: for replies that stall midway.
fn text_delta(text: &str) -> String {
    let chunk = json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}],
    });
    format!("data: {chunk}\n\n")
}

fn turn_id(started: &Value) -> String {
    assert!(started["sessionId"].is_string(), "{started}");
    started["turnId"]
        .as_str()
        .unwrap_or_else(|| panic!("no turnId in {started}"))
        .to_owned()
}

const GREET: &str = "pub fn greet() -> &'static str {\n    \"Helo\"\n}\n";
const GREET_FIXED: &str = "pub fn greet() -> &'static str {\n    \"Hello\"\n}\n";
const GREET_ANSWER: &str = "Fixed the greeting in src/greet.rs.";

/// Read the file, fix the typo, answer: the task both kinds of client run.
fn script_greeting_fix(model: &ModelServer) {
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "src/greet.rs"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "src/greet.rs", "old_string": "\"Helo\"", "new_string": "\"Hello\""}),
    )]));
    model.push(Reply::openai_text(GREET_ANSWER));
}

#[tokio::test]
async fn rich_client_approves_the_edit_and_follows_the_turn_through_events() {
    let model = ModelServer::start().await;
    script_greeting_fix(&model);
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    editor.push_approval(json!({"type": "allowOnce"}));
    let uri = editor.open("src/greet.rs", GREET).await;

    let started = editor
        .request("tandem/prompt", json!({"text": "Fix the typo in greet"}))
        .await
        .unwrap();
    let turn = turn_id(&started);
    let finished = editor.wait_turn_finished(&turn).await;
    let events = editor.events_for_turn(&turn);
    assert_eq!(finished["stopReason"], "end_turn", "{events:#?}");

    // The edit landed in the unsaved buffer, through a workspace edit at the buffer's version.
    assert_eq!(editor.buffer_text(&uri).await, GREET_FIXED);
    assert_eq!(
        std::fs::read_to_string(editor.root().join("src/greet.rs")).unwrap(),
        GREET
    );
    let applied = editor.apply_edits();
    assert_eq!(applied.len(), 1, "{applied:#?}");
    assert!(applied[0].applied, "{applied:#?}");
    assert_eq!(
        applied[0].versions,
        [VersionCheck {
            uri: uri.clone(),
            sent: Some(1),
            buffer: Some(1),
        }]
    );
    let held = editor.server_document(&uri).await;
    assert_eq!(held["text"], GREET_FIXED);
    assert_eq!(held["version"], 2);

    // Asked once, through the custom request, with the four options and the diff.
    let approvals = editor.received_params("tandem/requestApproval");
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert_eq!(approvals[0]["turnId"], turn.as_str());
    assert_eq!(approvals[0]["toolCall"]["tool"], "edit");
    let kinds: Vec<&Value> = approvals[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| &option["kind"])
        .collect();
    assert_eq!(
        kinds,
        ["reject", "rejectWithFeedback", "allowOnce", "allowAlways"]
    );
    // The user sees the change they are asked to approve.
    assert_eq!(approvals[0]["toolCall"]["status"], "awaitingApproval");
    assert_eq!(approvals[0]["toolCall"]["diff"]["oldText"], GREET);
    assert_eq!(approvals[0]["toolCall"]["diff"]["newText"], GREET_FIXED);
    assert_eq!(approvals[0]["toolCall"]["diff"]["uri"], uri.as_str());

    // The events tell the whole story.
    assert_eq!(events.first().unwrap()["type"], "turnStarted");
    assert_eq!(events.last().unwrap()["type"], "turnFinished");
    let edited = events
        .iter()
        .find(|e| e["type"] == "toolCall" && e["tool"] == "edit" && e["status"] == "success")
        .unwrap_or_else(|| panic!("no successful edit in {events:#?}"));
    assert_eq!(edited["diff"]["newText"], GREET_FIXED);
    assert_eq!(edited["diff"]["uri"], uri.as_str());
    assert!(events
        .iter()
        .any(|e| e["type"] == "toolCall" && e["status"] == "awaitingApproval"));
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "textChunk")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, GREET_ANSWER);

    // What plain clients get instead is not sent to this one.
    assert!(editor.received_params("$/progress").is_empty());
    assert!(!editor
        .received_params("window/showMessage")
        .iter()
        .any(|params| params["message"].as_str().unwrap().contains(GREET_ANSWER)));
}

#[tokio::test]
async fn plain_client_follows_the_turn_through_progress_and_messages() {
    let model = ModelServer::start().await;
    script_greeting_fix(&model);
    let editor = FakeEditor::plain()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("src/greet.rs", GREET).await;

    let started = editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"uri": uri, "range": range(1, 4, 1, 10), "instruction": "Fix the typo in greet"}],
        }))
        .await
        .unwrap();
    let turn = turn_id(&started);
    let end = editor.wait_turn_finished(&turn).await;
    assert_eq!(end["kind"], "end");

    assert_eq!(editor.buffer_text(&uri).await, GREET_FIXED);
    let applied = editor.apply_edits();
    assert_eq!(applied.len(), 1, "{applied:#?}");
    assert_eq!(applied[0].versions[0].sent, Some(1));

    // A work-done progress the server created, from begin to end, with the edit reported.
    let created = editor.received_params("window/workDoneProgress/create");
    assert_eq!(created.len(), 1, "{created:#?}");
    let token = &created[0]["token"];
    let progress: Vec<Value> = editor
        .received_params("$/progress")
        .into_iter()
        .filter(|params| params["token"] == *token)
        .map(|params| params["value"].clone())
        .collect();
    assert_eq!(progress.first().unwrap()["kind"], "begin", "{progress:#?}");
    assert_eq!(progress.first().unwrap()["title"], "Tandem");
    assert_eq!(progress.first().unwrap()["cancellable"], true);
    assert_eq!(progress.last().unwrap()["kind"], "end", "{progress:#?}");
    assert!(
        progress.iter().any(|value| value["kind"] == "report"
            && value["message"]
                .as_str()
                .is_some_and(|m| m.contains("greet.rs"))),
        "{progress:#?}"
    );

    // The answer: short in a message, whole in the log.
    editor
        .wait_for("the answer in window/showMessage", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains(GREET_ANSWER))
        })
        .await;
    editor
        .wait_for("the answer in window/logMessage", |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains(GREET_ANSWER))
        })
        .await;

    // Nothing this client did not ask for.
    for method in [
        "tandem/event",
        "tandem/requestApproval",
        "window/showMessageRequest",
    ] {
        assert!(
            editor.received_params(method).is_empty(),
            "{method} sent to a plain client"
        );
    }
}

/// A standard client is asked through `showMessageRequest`, with the diff and "Reject" first,
/// and the edit runs once the user picks "Allow once".
#[tokio::test]
async fn plain_client_approves_through_show_message_request() {
    let model = ModelServer::start().await;
    script_greeting_fix(&model);
    let editor = FakeEditor::plain()
        .show_message(true)
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/greet.rs", GREET).await;
    let started = editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"uri": uri, "range": range(1, 4, 1, 10), "instruction": "Fix the typo in greet"}],
        }))
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&started)).await;

    let asked = editor.received_params("window/showMessageRequest");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let titles: Vec<&Value> = asked[0]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|action| &action["title"])
        .collect();
    assert_eq!(titles, ["Reject", "Allow once", "Allow always"]);
    let message = asked[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Tandem wants to: Edit src/greet.rs\n\nChange src/greet.rs:\n")
            && message.contains("\n-    \"Helo\"\n+    \"Hello\"\n"),
        "the prompt shows the diff: {message}"
    );
    assert_eq!(editor.buffer_text(&uri).await, GREET_FIXED);
}

const LIB: &str = "pub fn area(width: u32, height: u32) -> u32 {\n    let product = width * height;\n    product\n}\n\npub fn double(x: u32) -> u32 {\n    x * 2\n}\n";
/// `range(1, 4, 2, 11)` of [`LIB`].
const LIB_SELECTION: &str = "let product = width * height;\n    product";

#[tokio::test]
async fn ide_context_is_sent_in_full_then_as_changes_then_not_at_all() {
    let model = ModelServer::start().await;
    for answer in ["One.", "Two.", "Three."] {
        model.push(Reply::openai_text(answer));
    }
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/lib.rs", LIB).await;

    editor.focus(&uri, Some(range(1, 4, 2, 11))).await;
    let turn = prompt(&editor, "First question.").await;
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    editor.focus(&uri, Some(range(5, 7, 5, 7))).await;
    let turn = prompt(&editor, "Second question.").await;
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    let turn = prompt(&editor, "Third question.").await;
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    let first = last_content(&requests[0], "user");
    for needle in [
        "<ide>",
        "src/lib.rs",
        LIB_SELECTION,
        "Symbol at cursor: fn area (lines 1-4):",
    ] {
        assert!(first.contains(needle), "{needle:?} missing from:\n{first}");
    }
    assert!(first.ends_with("First question."), "{first}");

    // Only the change: the cursor moved (line 6, column 8 for people) and the selection is gone.
    let second = last_content(&requests[1], "user");
    assert!(second.contains("line 6"), "{second}");
    assert!(second.contains("column 8"), "{second}");
    assert!(
        second.contains("Symbol at cursor: fn double (lines 6-8):\n```rust\npub fn double"),
        "{second}"
    );
    assert!(!second.contains(LIB_SELECTION), "{second}");
    assert!(!second.contains("Active file"), "{second}");
    assert!(second.ends_with("Second question."), "{second}");

    assert_eq!(last_content(&requests[2], "user"), "Third question.");
}

async fn prompt(editor: &FakeEditor, text: &str) -> String {
    let started = editor
        .request("tandem/prompt", json!({"text": text}))
        .await
        .unwrap();
    turn_id(&started)
}

/// Items the race's model marks done, one edit each.
const RACE_ITEMS: usize = 9;

fn race_text() -> String {
    let mut text = String::from("// race: the agent marks items done while the user types 😀\n");
    for n in 1..=RACE_ITEMS {
        text.push_str(&format!("item {n:03};\n"));
    }
    text.push_str("typed: ");
    text
}

/// The start or the end of a line.
#[derive(Debug, Clone, Copy)]
enum LineEnd {
    Start,
    End,
}

/// Text typed on one line: (the 0-based line, where on it, what is typed). Nothing typed spells
/// `item `, so the agent's intent stays "every `item NNN;` becomes `done NNN;`".
type Keystrokes = (usize, LineEnd, &'static str);

/// Types `text` at the start or end of `line`, in the editor and in `mirror`: the buffer as the
/// user typed it, with the agent's edits left out (they change no line's length).
async fn type_on_line(
    editor: &FakeEditor,
    uri: &str,
    mirror: &mut String,
    (line, at, text): Keystrokes,
) {
    let lines: Vec<&str> = mirror.split('\n').collect();
    let line_start: usize = lines[..line].iter().map(|line| line.len() + 1).sum();
    let (offset, character) = match at {
        LineEnd::Start => (line_start, 0),
        // Past the end clamps to the end, as LSP positions do.
        LineEnd::End => (line_start + lines[line].len(), u32::MAX),
    };
    mirror.insert_str(offset, text);
    let position = Pos {
        line: u32::try_from(line).unwrap(),
        character,
    };
    editor.type_at(uri, position, text).await;
}

/// The first `item NNN;` in a tool's output.
fn first_open_item(text: &str) -> Option<usize> {
    text.match_indices("item ").find_map(|(at, _)| {
        let rest = &text[at + 5..];
        let digits = rest.get(..3)?;
        (rest[3..].starts_with(';') && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse().unwrap())
    })
}

/// A model that marks the items done one by one: it edits the next item after each successful
/// edit, and after a refusal (the user typed on the item's line) reads the item's line again
/// and retries. Reads are small windows, so that the history (sent whole with every request)
/// stays small; a window without an open item, and the end, call for a whole-file read.
/// Decided from the request alone, so it needs no state.
fn race_model(request: &RecordedRequest) -> Reply {
    let body = request.json();
    let messages = body["messages"].as_array().unwrap();
    let id = format!("call_{}", messages.len());
    let read = |args: Value| Reply::openai_tool_calls(&[(&id, "read_file", args)]);
    // Item n is on line n + 1, below the header line, unless the user added lines above.
    let read_item =
        |n: usize| read(json!({"path": "race.txt", "start_line": n + 1, "end_line": n + 4}));
    let read_all = || read(json!({"path": "race.txt"}));
    let edit = |n: usize| {
        Reply::openai_tool_calls(&[(
            &id,
            "edit",
            json!({"path": "race.txt", "old_string": format!("item {n:03};"), "new_string": format!("done {n:03};")}),
        )])
    };
    // A reminder that the file changed may follow the tool results; the result still decides.
    let Some(last_call) = messages.iter().rposition(|m| m["role"] == "assistant") else {
        return read_item(1);
    };
    let Some(result) = messages[last_call..].iter().find(|m| m["role"] == "tool") else {
        return read_all();
    };
    let output = result["content"].as_str().unwrap_or_default();
    let function = &messages[last_call]["tool_calls"][0]["function"];
    let args: Value = serde_json::from_str(function["arguments"].as_str().unwrap()).unwrap();
    match function["name"].as_str() {
        Some("read_file") => match first_open_item(output) {
            Some(n) => edit(n),
            None if args.get("start_line").is_some() => read_all(),
            None => Reply::openai_text("All items are done."),
        },
        Some("edit") => {
            let n = first_open_item(args["old_string"].as_str().unwrap()).unwrap();
            if output.starts_with("Error") {
                read_item(n)
            } else if n < RACE_ITEMS {
                edit(n + 1)
            } else {
                read_all()
            }
        }
        other => panic!("the race model never calls {other:?}"),
    }
}

/// What one race came to.
#[derive(Debug, Default)]
struct RaceCounts {
    /// `workspace/applyEdit`s the editor refused because the user had typed (each one resolved
    /// again by the server, or refused to the model).
    editor_refusals: usize,
    /// Edit results that told the model its edit was refused.
    model_refusals: usize,
    /// Applied edits per item.
    applied: HashMap<usize, usize>,
}

/// Races the agent's edits against the user's keystrokes. Every edit the agent sends is held in
/// the editor while `typing` decides what the user types first, from (the item, the attempt at
/// sending its edit, the line the edit changes, the buffer); only then does the editor look at
/// the edit, which it must refuse as stale whenever anything was typed. Checks that no
/// keystroke is lost, that nothing lands on text it was not computed from, and that the server
/// ends with the editor's text.
async fn race(typing: impl Fn(usize, usize, usize, &str) -> Vec<Keystrokes>) -> RaceCounts {
    let model = ModelServer::start().await;
    model.respond_with(race_model);
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}, "maxTurns": 200}),
        ))
        .start()
        .await;
    let uri = editor.open("race.txt", &race_text()).await;
    editor.hold_apply_edits();
    let turn = prompt(&editor, "Mark every item in race.txt done.").await;

    let mut mirror = race_text();
    let mut attempts: HashMap<usize, usize> = HashMap::new();
    let mut counts = RaceCounts::default();
    let mut next = 0;
    loop {
        let message = editor
            .wait_for_from(next, "the next edit or the end of the turn", |m| {
                m["method"] == "workspace/applyEdit"
                    || (m["method"] == "tandem/event"
                        && m["params"]["turnId"] == turn.as_str()
                        && m["params"]["event"]["type"] == "turnFinished")
            })
            .await;
        next += editor.received()[next..]
            .iter()
            .position(|m| *m == message)
            .unwrap()
            + 1;
        if message["method"] == "tandem/event" {
            assert_eq!(
                message["params"]["event"]["stopReason"], "end_turn",
                "{message}"
            );
            break;
        }
        // The item is named on the line the edit changes, in the text it was computed from:
        // the buffer now, as nothing was typed since the server sent it.
        let edit_line = message["params"]["edit"]["documentChanges"][0]["edits"][0]["range"]
            ["start"]["line"]
            .as_u64()
            .unwrap() as usize;
        let line = mirror.split('\n').nth(edit_line).unwrap();
        let item = first_open_item(line).unwrap_or_else(|| panic!("no open item on {line:?}"));
        let attempt = attempts.entry(item).or_default();
        *attempt += 1;
        let keys = typing(item, *attempt, edit_line, &mirror);
        for &keys in &keys {
            type_on_line(&editor, &uri, &mut mirror, keys).await;
        }
        let record = editor.release_apply_edit().await;
        if keys.is_empty() {
            assert!(record.applied, "item {item}: {record:#?}");
            *counts.applied.entry(item).or_default() += 1;
        } else {
            counts.editor_refusals += 1;
            assert!(
                !record.applied,
                "item {item} landed on stale text: {record:#?}"
            );
            let reason = record.failure_reason.as_deref().unwrap_or_default();
            assert!(reason.contains("the edit was made for version"), "{reason}");
        }
    }

    let expected = mirror.replace("item ", "done ");
    assert_eq!(editor.buffer_text(&uri).await, expected);
    for record in editor.apply_edits().iter().filter(|record| record.applied) {
        for check in &record.versions {
            assert_eq!(
                check.sent,
                check.buffer.map(i64::from),
                "an accepted edit did not carry the buffer's version: {record:#?}"
            );
        }
    }
    let held = editor.server_document(&uri).await;
    assert_eq!(held["text"], expected.as_str());
    assert_eq!(held["version"], editor.buffer_version(&uri).await);
    counts.model_refusals = model
        .chat_requests()
        .iter()
        .filter(|request| {
            let messages = request["messages"].as_array().unwrap();
            let last_call = messages.iter().rposition(|m| m["role"] == "assistant");
            last_call.is_some_and(|at| {
                messages[at]["tool_calls"][0]["function"]["name"] == "edit"
                    && messages[at..]
                        .iter()
                        .find(|m| m["role"] == "tool")
                        .and_then(|m| m["content"].as_str())
                        .is_some_and(|result| result.starts_with("Error"))
            })
        })
        .count();
    counts
}

/// A small deterministic generator (xorshift), so that a failing race can be replayed.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// The user types at random on lines other than the one the agent's held edit changes (the
/// line above and below included), before some of its first two attempts: every refusal the
/// editor makes is resolved again by the server on the user's text, so the model hears of
/// none, and every item's edit lands exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keystrokes_away_from_the_agents_edits_refuse_none_of_them() {
    const TEXTS: [&str; 5] = ["k", " // note", "zq\n", "\n", "é😀"];
    let mut editor_refusals = 0;
    for seed in [0x5eed_u64, 0x00dd_5eed, 0xfeed_beef] {
        let state = std::cell::Cell::new(seed ^ 0x9e37_79b9_7f4a_7c15);
        let counts = race(|_item, attempt, edit_line, mirror| {
            let mut rng = state.get();
            let lines = mirror.split('\n').count();
            let mut keys = Vec::new();
            if attempt <= 2 {
                for _ in 0..xorshift(&mut rng) % 3 {
                    // Any line but the edited one: its neighbours too, and line breaks that move
                    // it.
                    let mut line = (xorshift(&mut rng) % lines as u64) as usize;
                    if line == edit_line {
                        line = (line + 2) % lines;
                    }
                    let at = if xorshift(&mut rng).is_multiple_of(2) {
                        LineEnd::Start
                    } else {
                        LineEnd::End
                    };
                    let text = TEXTS[(xorshift(&mut rng) % TEXTS.len() as u64) as usize];
                    keys.push((line, at, text));
                }
            }
            state.set(rng);
            keys
        })
        .await;
        eprintln!("keystrokes away from the edits, seed {seed:#x}: {counts:?}");
        assert_eq!(counts.model_refusals, 0, "seed {seed:#x}: {counts:?}");
        for item in 1..=RACE_ITEMS {
            assert_eq!(
                counts.applied.get(&item),
                Some(&1),
                "seed {seed:#x}, item {item}: {counts:?}"
            );
        }
        editor_refusals += counts.editor_refusals;
    }
    assert!(
        editor_refusals >= 15,
        "too few races happened: {editor_refusals}"
    );
}

/// The user types on the very line the agent's held edit changes: the editor refuses it, the
/// server cannot place the edit on the user's text, and the model is told with what the user
/// changed; it reads the line again and redoes the edit, and the user's text stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keystrokes_on_the_lines_the_agent_edits_are_kept_and_the_model_told() {
    // (item, attempt): typed on the edited line; at both ends for item 3.
    let counts = race(|item, attempt, edit_line, _mirror| match (item, attempt) {
        (1, 1) => vec![(edit_line, LineEnd::End, " // x")],
        (3, 1) => vec![
            (edit_line, LineEnd::Start, "x"),
            (edit_line, LineEnd::End, " y"),
        ],
        (3, 2) => vec![(edit_line, LineEnd::End, "z")],
        (9, 1) => vec![(edit_line, LineEnd::Start, "w")],
        _ => Vec::new(),
    })
    .await;
    eprintln!("keystrokes on the edited lines: {counts:?}");
    assert_eq!(counts.editor_refusals, 4, "{counts:?}");
    assert_eq!(counts.model_refusals, 4, "{counts:?}");
    for item in 1..=RACE_ITEMS {
        assert_eq!(
            counts.applied.get(&item),
            Some(&1),
            "item {item}: {counts:?}"
        );
    }
}

/// An editor that answers `workspace/applyEdit` before it sends the edit's `didChange` (Emacs's
/// eglot): two edits of one file in one response both land, and the model is never told that
/// the file changed, since only the agent changed it.
#[tokio::test]
async fn edits_answered_before_their_did_change_are_the_agents_own() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "src/lib.rs"}),
    )]));
    model.push(Reply::openai_tool_calls(&[
        (
            "call_one",
            "edit",
            json!({"path": "src/lib.rs", "old_string": "let product = width * height;", "new_string": "let product = height * width;"}),
        ),
        (
            "call_two",
            "edit",
            json!({"path": "src/lib.rs", "old_string": "    x * 2", "new_string": "    x + x"}),
        ),
    ]));
    model.push(Reply::openai_text("Changed both."));
    let editor = FakeEditor::rich()
        .did_change_after_answer()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("src/lib.rs", LIB).await;
    let turn = prompt(&editor, "Change both numbers").await;
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");

    let expected = LIB
        .replace(
            "let product = width * height;",
            "let product = height * width;",
        )
        .replace("    x * 2", "    x + x");
    assert_eq!(editor.buffer_text(&uri).await, expected);
    let applied = editor.apply_edits();
    assert_eq!(applied.len(), 2, "{applied:#?}");
    assert!(applied.iter().all(|record| record.applied), "{applied:#?}");
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    let last = serde_json::to_string(&requests[2]["messages"]).unwrap();
    assert!(
        !last.contains("files changed since you last read"),
        "{last}"
    );
    assert!(!last.contains("changed in the editor"), "{last}");
    let results: Vec<&str> = requests[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(results[1].starts_with("Edited src/lib.rs"), "{results:#?}");
    assert!(results[2].starts_with("Edited src/lib.rs"), "{results:#?}");
    let held = editor.server_document(&uri).await;
    assert_eq!(held["text"], expected.as_str());
}

#[tokio::test]
async fn code_actions_resolve_and_explain_starts_a_turn_at_once() {
    let model = ModelServer::start().await;
    // The model never answers: the command must not wait for it.
    model.push(Reply::sse_chunks(Vec::new()).step(Step::Hang));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/lib.rs", LIB).await;
    let diagnostic = json!({
        "range": range(1, 8, 1, 15),
        "severity": 2,
        "source": "rustc",
        "message": "unused variable: `product`",
    });
    let actions = editor
        .code_actions(&uri, range(1, 4, 2, 11), json!([diagnostic]))
        .await;
    let mut titles: Vec<&str> = actions
        .iter()
        .map(|action| action["title"].as_str().unwrap())
        .collect();
    titles.sort_unstable();
    assert_eq!(
        titles,
        [
            "Ask Tandem…",
            "Document this",
            "Explain this",
            "Fix this diagnostic: unused variable: `product`",
            "Write tests for this",
        ]
    );
    let fix = actions
        .iter()
        .find(|action| action["title"].as_str().unwrap().starts_with("Fix this"))
        .unwrap();
    assert_eq!(fix["kind"], "quickfix");
    assert_eq!(
        fix["diagnostics"][0]["message"],
        "unused variable: `product`"
    );
    // The client resolves commands, and gets them in the list all the same.
    for action in &actions {
        assert!(action["command"]["command"].is_string(), "{action:#}");
    }

    let explain = actions
        .iter()
        .find(|action| action["title"] == "Explain this")
        .unwrap();
    let resolved = editor
        .request("codeAction/resolve", explain.clone())
        .await
        .unwrap();
    assert_eq!(resolved["command"]["command"], "tandem.explain");
    let started = editor.execute(&resolved["command"]).await.unwrap();
    let turn = turn_id(&started);

    tokio::time::timeout(TIMEOUT, model.wait_for_requests(1))
        .await
        .expect("the turn never asked the model");
    let request = &model.chat_requests()[0];
    let asked = last_content(request, "user");
    assert!(asked.contains(LIB_SELECTION), "{asked}");

    let cancelled = editor
        .request(
            "tandem/cancel",
            json!({"sessionId": started["sessionId"], "turnId": turn}),
        )
        .await
        .unwrap();
    assert_eq!(cancelled, json!({"cancelled": true}));
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "cancelled"
    );
}

#[tokio::test]
async fn code_actions_carry_their_command_without_resolve_support() {
    let model = ModelServer::start().await;
    let editor = FakeEditor::plain()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/lib.rs", LIB).await;
    let actions = editor
        .code_actions(&uri, range(1, 4, 2, 11), json!([]))
        .await;
    assert_eq!(actions.len(), 4, "{actions:#?}");
    for action in &actions {
        let command = action["command"]["command"].as_str().unwrap_or_default();
        assert!(command.starts_with("tandem."), "{action:#}");
        assert_eq!(action["command"]["arguments"][0]["uri"], uri.as_str());
    }
}

const INSTRUCTED: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    // tandem: saturate instead of overflowing\n    a + b\n}\n";
const SATURATING: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a.saturating_add(b)\n}\n";

#[tokio::test]
async fn instruction_comment_runs_and_is_removed_after_the_edit() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "src/math.rs"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "src/math.rs", "old_string": "    a + b", "new_string": "    a.saturating_add(b)"}),
    )]));
    model.push(Reply::openai_text("`add` saturates now."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("src/math.rs", INSTRUCTED).await;

    let actions = editor
        .code_actions(&uri, range(1, 8, 1, 8), json!([]))
        .await;
    let run = actions
        .iter()
        .find(|action| action["title"] == "Run Tandem instruction: saturate instead of overflowing")
        .unwrap_or_else(|| panic!("no instruction action in {actions:#?}"));
    let resolved = editor
        .request("codeAction/resolve", run.clone())
        .await
        .unwrap();
    assert_eq!(resolved["command"]["command"], "tandem.runInstruction");
    let started = editor.execute(&resolved["command"]).await.unwrap();
    let turn = turn_id(&started);
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    let asked = last_content(&model.chat_requests()[0], "user");
    assert!(asked.contains("saturate instead of overflowing"), "{asked}");
    assert_eq!(editor.buffer_text(&uri).await, SATURATING);
    assert_eq!(
        editor.server_document(&uri).await["text"],
        SATURATING,
        "the server lost track of the buffer"
    );
}

const TWO_FNS: &str = "fn one() -> i32 {\n    1\n}\n\nfn two() -> i32 {\n    2\n}\n";

#[tokio::test]
async fn inline_chat_changes_only_its_range_in_one_annotated_edit() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "src/nums.rs"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "call_inside",
        "edit",
        json!({"path": "src/nums.rs", "old_string": "    2", "new_string": "    22"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "call_outside",
        "edit",
        json!({"path": "src/nums.rs", "old_string": "    1", "new_string": "    11"}),
    )]));
    model.push(Reply::openai_text("`two` returns 22 now."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("src/nums.rs", TWO_FNS).await;

    let started = editor
        .request(
            "tandem/inlineChat",
            json!({"uri": uri, "range": range(4, 0, 7, 0), "instruction": "return 22"}),
        )
        .await
        .unwrap();
    let turn = turn_id(&started);
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 4);
    let inside = last_content(&requests[2], "tool");
    assert!(!inside.starts_with("Error"), "{inside}");
    let outside = last_content(&requests[3], "tool");
    assert!(
        outside.starts_with("Error") && outside.contains("outside"),
        "{outside}"
    );

    // One workspace edit at the end, proposed for confirmation.
    let applied = editor.apply_edits();
    assert_eq!(applied.len(), 1, "{applied:#?}");
    assert!(applied[0].applied);
    assert_eq!(applied[0].versions[0].sent, Some(1));
    // The label names the range and the file (the range's last line is left open: a range
    // ending at a line's start is shown as including that line).
    let label = applied[0].label.clone().unwrap_or_default();
    assert!(
        label.starts_with("Tandem: inline edit of lines 5-") && label.ends_with(" of src/nums.rs"),
        "{label}"
    );
    // The whole edit, not a check over its annotations: `all` holds for an empty map, so an
    // edit that lost its annotation (applied without asking) passed the check this replaces.
    // The one change is the `2` added after `    2`, and it carries the one annotation, which
    // asks for confirmation.
    assert_eq!(
        applied[0].edit,
        json!({
            "documentChanges": [{
                "textDocument": {"uri": uri, "version": 1},
                "edits": [{
                    "range": range(5, 5, 5, 5),
                    "newText": "2",
                    "annotationId": "tandem.inlineChat",
                }],
            }],
            "changeAnnotations": {"tandem.inlineChat": {
                "label": label,
                "needsConfirmation": true,
                "description": "Proposed by Tandem's inline chat",
            }},
        })
    );
    assert_eq!(
        editor.buffer_text(&uri).await,
        "fn one() -> i32 {\n    1\n}\n\nfn two() -> i32 {\n    22\n}\n"
    );
}

#[tokio::test]
async fn tandem_cancel_stops_a_turn_during_a_slow_reply() {
    let model = ModelServer::start().await;
    model.push(Reply::sse(text_delta("Let me think")).step(Step::Pause(TIMEOUT * 2)));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let started = editor
        .request("tandem/prompt", json!({"text": "Take your time."}))
        .await
        .unwrap();
    let turn = turn_id(&started);
    editor
        .wait_event(&turn, "the first text chunk", |event| {
            event["type"] == "textChunk"
        })
        .await;

    let cancelled = editor
        .request(
            "tandem/cancel",
            json!({"sessionId": started["sessionId"], "turnId": turn}),
        )
        .await
        .unwrap();
    assert_eq!(cancelled, json!({"cancelled": true}));
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "cancelled"
    );
    tokio::time::timeout(TIMEOUT, model.wait_for_disconnects(1))
        .await
        .expect("the model request was not dropped");
}

/// Found with Emacs's lsp-mode, which before its fix for #4323 loses a request that arrives in
/// the same read as the answer it waits for: the turn waited for ever on
/// `window/workDoneProgress/create`. It now goes on without progress after a moment.
#[tokio::test]
async fn a_turn_goes_on_when_the_client_never_answers_the_progress_request() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_text("Summarised."));
    let editor = FakeEditor::plain()
        .ignore_progress_create()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("notes.md", "# Notes\n\nSome text.\n").await;
    editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"uri": uri, "range": range(2, 0, 2, 10), "instruction": "Summarise"}],
        }))
        .await
        .unwrap();
    editor
        .wait_for("the answer in window/showMessage", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains("Summarised."))
        })
        .await;
    assert!(editor.received_params("$/progress").is_empty());
}

#[tokio::test]
async fn cancelling_the_progress_cancels_a_plain_clients_turn() {
    let model = ModelServer::start().await;
    model.push(Reply::sse(text_delta("Let me think")).step(Step::Pause(TIMEOUT * 2)));
    let editor = FakeEditor::plain()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("notes.md", "# Notes\n\nSome text.\n").await;
    let started = editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"uri": uri, "range": range(2, 0, 2, 10), "instruction": "Summarise"}],
        }))
        .await
        .unwrap();
    turn_id(&started);
    let created = editor
        .wait_for("window/workDoneProgress/create", |m| {
            m["method"] == "window/workDoneProgress/create"
        })
        .await;
    let token = created["params"]["token"].clone();
    tokio::time::timeout(TIMEOUT, model.wait_for_requests(1))
        .await
        .expect("the turn never asked the model");

    editor
        .notify("window/workDoneProgress/cancel", json!({"token": token}))
        .await;
    let end = editor.wait_progress_end(&token).await;
    let message = end["message"].as_str().unwrap_or_default();
    assert!(message.contains("Cancelled"), "{end}");
    editor
        .wait_for("the cancellation in window/showMessage", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains("Cancelled"))
        })
        .await;
}

#[tokio::test]
async fn approvals_allow_once_allow_always_and_reject_with_feedback() {
    let model = ModelServer::start().await;
    for (id, command) in [
        ("call_1", "echo one"),
        ("call_2", "echo two"),
        ("call_3", "echo two"),
        ("call_4", "echo three"),
    ] {
        model.push(Reply::openai_tool_calls(&[(
            id,
            "shell",
            json!({"command": command}),
        )]));
    }
    model.push(Reply::openai_text("Done."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    editor.push_approval(json!({"type": "allowOnce"}));
    editor.push_approval(json!({"type": "allowAlways"}));
    editor.push_approval(json!({"type": "reject", "feedback": "Use printf, not echo."}));

    let turn = prompt(&editor, "Say one, two, two, three.").await;
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    // Asked about the first three distinct commands; the repeated one was allowed always.
    let asked: Vec<String> = editor
        .received_params("tandem/requestApproval")
        .iter()
        .map(|params| params["toolCall"]["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:#?}");
    for (title, word) in asked.iter().zip(["one", "two", "three"]) {
        assert!(title.contains(&format!("echo {word}")), "{asked:#?}");
    }

    let results: Vec<String> = model.chat_requests()[1..]
        .iter()
        .map(|request| last_content(request, "tool"))
        .collect();
    assert!(
        results[0].contains("one") && !results[0].starts_with("Error"),
        "{results:#?}"
    );
    assert!(
        results[1].contains("two") && !results[1].starts_with("Error"),
        "{results:#?}"
    );
    assert!(
        results[2].contains("two") && !results[2].starts_with("Error"),
        "{results:#?}"
    );
    assert!(
        results[3].starts_with("Error") && results[3].contains("Use printf, not echo."),
        "{results:#?}"
    );
}

#[tokio::test]
async fn sessions_are_listed_and_prompts_go_to_the_most_recent() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_text("Hi."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let listed = editor.request("tandem/sessions", json!({})).await.unwrap();
    assert_eq!(listed, json!({"sessions": []}));

    let first = editor
        .request("tandem/newSession", json!({"title": "Refactor"}))
        .await
        .unwrap()["sessionId"]
        .clone();
    let second = editor
        .request("tandem/newSession", json!({}))
        .await
        .unwrap()["sessionId"]
        .clone();
    assert_ne!(first, second);
    let listed = editor.request("tandem/sessions", json!({})).await.unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed:#}");
    assert_eq!(sessions[0]["sessionId"], first);
    assert_eq!(sessions[0]["title"], "Refactor");
    assert_eq!(sessions[1]["sessionId"], second);
    for session in sessions {
        assert_eq!(session["running"], false, "{listed:#}");
        assert_eq!(session["turns"], 0, "{listed:#}");
    }

    let started = editor
        .request("tandem/prompt", json!({"text": "Hello?"}))
        .await
        .unwrap();
    assert_eq!(started["sessionId"], second);
    let turn = turn_id(&started);
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );

    let unknown = editor
        .request(
            "tandem/prompt",
            json!({"sessionId": "no-such-session", "text": "Hello?"}),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown["code"], -32602, "{unknown}");
}

/// Every turn is written to a markdown transcript in the workspace's state dir (kept out of git),
/// and `tandem.showTranscript` opens it in the editor.
#[tokio::test]
async fn the_transcript_records_the_turn_and_opens_in_the_editor() {
    let model = ModelServer::start().await;
    script_greeting_fix(&model);
    let editor = FakeEditor::plain()
        .show_document(true)
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    editor.open("src/greet.rs", GREET).await;
    let started = editor
        .request("tandem/prompt", json!({"text": "Fix the typo in greet"}))
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&started)).await;

    let shown = editor
        .execute(&json!({"command": "tandem.showTranscript", "arguments": []}))
        .await
        .unwrap();
    assert_eq!(shown["shown"], true, "{shown}");
    let documents = editor.shown_documents();
    assert_eq!(documents.len(), 1, "{documents:#?}");
    assert_eq!(documents[0]["uri"], shown["uri"]);
    assert_eq!(documents[0]["takeFocus"], true);

    let path = url::Url::parse(shown["uri"].as_str().unwrap())
        .unwrap()
        .to_file_path()
        .unwrap();
    assert!(path.starts_with(editor.root().join(".tandem/transcripts")));
    let transcript = std::fs::read_to_string(&path).unwrap();
    expect_test::expect![[r#"
        ## You

        Fix the typo in greet

        ## Tandem

        - ✓ Read src/greet.rs
        - ✓ Edit src/greet.rs

        Fixed the greeting in src/greet.rs.

    "#]]
    .assert_eq(&transcript);
    let ignore = std::fs::read_to_string(path.parent().unwrap().join(".gitignore")).unwrap();
    assert_eq!(ignore, "*\n");
}

/// A model that edits what it was shown without reading the file first: `inside` (a change in
/// the attached lines) and then `outside` (a change elsewhere, when given), then an answer.
fn script_edits_without_reading(
    model: &ModelServer,
    path: &str,
    inside: (&str, &str),
    outside: Option<(&str, &str)>,
) {
    model.push(Reply::openai_tool_calls(&[(
        "call_inside",
        "edit",
        json!({"path": path, "old_string": inside.0, "new_string": inside.1}),
    )]));
    if let Some((old, new)) = outside {
        model.push(Reply::openai_tool_calls(&[(
            "call_outside",
            "edit",
            json!({"path": path, "old_string": old, "new_string": new}),
        )]));
    }
    model.push(Reply::openai_text("Done."));
}

/// Inline chat on the second function of `TWO_FNS` (lines 5-7), in auto_edit, run to its end
/// with the scripted `model`: the editor and the document's URI.
async fn inline_chat_on_the_second_function(model: &ModelServer) -> (FakeEditor, String) {
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("src/nums.rs", TWO_FNS).await;
    let started = editor
        .request(
            "tandem/inlineChat",
            json!({"uri": uri, "range": range(4, 0, 6, 1), "instruction": "return 22"}),
        )
        .await
        .unwrap();
    let turn = turn_id(&started);
    assert_eq!(
        editor.wait_turn_finished(&turn).await["stopReason"],
        "end_turn"
    );
    (editor, uri)
}

/// Regression: an edit inside text the prompt attached was refused with "you have not read …
/// read it with read_file before editing" (twice, and inline chat ended with nothing applied).
/// Text the model was shown, at its version, counts as read for those lines.
#[tokio::test]
async fn inline_chat_edits_its_selection_without_reading_the_file() {
    let model = ModelServer::start().await;
    script_edits_without_reading(&model, "src/nums.rs", ("    2", "    22"), None);
    let (editor, uri) = inline_chat_on_the_second_function(&model).await;
    let requests = model.chat_requests();
    let inside = last_content(&requests[1], "tool");
    assert!(inside.starts_with("Edited src/nums.rs"), "{inside}");
    assert_eq!(
        editor.buffer_text(&uri).await,
        TWO_FNS.replace("    2\n", "    22\n")
    );
}

/// Regression: inline chat refused an edit outside its selection first with "read those lines
/// with read_file before editing them"; the model read them and was refused again, now for the
/// real reason. The range is the rule whatever was read, so it is the first refusal.
#[tokio::test]
async fn inline_chat_refuses_an_edit_outside_its_selection_for_that_reason_first() {
    let model = ModelServer::start().await;
    script_edits_without_reading(
        &model,
        "src/nums.rs",
        ("    2", "    22"),
        Some(("    1", "    11")),
    );
    let (editor, uri) = inline_chat_on_the_second_function(&model).await;
    let requests = model.chat_requests();
    let outside = last_content(&requests[2], "tool");
    assert!(
        outside.starts_with("Error")
            && outside.contains("touches text outside lines 5-7 of src/nums.rs")
            && !outside.contains("read_file"),
        "{outside}"
    );
    assert_eq!(
        editor.buffer_text(&uri).await,
        TWO_FNS.replace("    2\n", "    22\n")
    );
}

/// A code action's selection counts as read for its lines only: an edit there needs no read,
/// an edit elsewhere in the file still asks for one.
#[tokio::test]
async fn a_code_actions_selection_counts_as_read_for_its_lines() {
    let model = ModelServer::start().await;
    script_edits_without_reading(
        &model,
        "src/greet.rs",
        ("\"Helo\"", "\"Hello\""),
        Some(("pub fn greet()", "pub fn greeting()")),
    );
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("src/greet.rs", GREET).await;
    let started = editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"uri": uri, "range": range(1, 4, 1, 10), "instruction": "Fix the typo"}],
        }))
        .await
        .unwrap();
    let turn = turn_id(&started);
    editor.wait_turn_finished(&turn).await;
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    let inside = last_content(&requests[1], "tool");
    assert!(inside.starts_with("Edited src/greet.rs"), "{inside}");
    let outside = last_content(&requests[2], "tool");
    assert!(
        outside.contains("you were shown only lines 2-2 of src/greet.rs")
            && outside.contains("read those lines with read_file"),
        "{outside}"
    );
    assert_eq!(editor.buffer_text(&uri).await, GREET_FIXED);
}

/// A document attached to `tandem/prompt` counts as read: whole, or the lines of its range.
#[tokio::test]
async fn a_prompt_attachment_counts_as_read() {
    let model = ModelServer::start().await;
    script_edits_without_reading(&model, "src/nums.rs", ("    1", "    11"), None);
    script_edits_without_reading(&model, "src/greet.rs", ("\"Helo\"", "\"Hello\""), None);
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let nums = editor.open("src/nums.rs", TWO_FNS).await;
    // A file on disk only: attached whole, from the disk.
    editor.write_file("src/greet.rs", GREET);
    let greet = editor.uri("src/greet.rs");

    let started = editor
        .request(
            "tandem/prompt",
            json!({"text": "Make one return 11", "context": [{"uri": nums, "range": range(0, 0, 2, 1)}]}),
        )
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&started)).await;
    let started = editor
        .request(
            "tandem/prompt",
            json!({"text": "Fix the typo", "context": [{"uri": greet}]}),
        )
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&started)).await;

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 4);
    let first = last_content(&requests[1], "tool");
    assert!(first.starts_with("Edited src/nums.rs"), "{first}");
    let second = last_content(&requests[3], "tool");
    assert!(second.starts_with("Edited src/greet.rs"), "{second}");
    assert_eq!(
        editor.buffer_text(&nums).await,
        TWO_FNS.replace("    1\n", "    11\n")
    );
    assert_eq!(
        std::fs::read_to_string(editor.root().join("src/greet.rs")).unwrap(),
        GREET_FIXED
    );
}

/// A plugin sends the user's own settings again when they change (`tandem/didChangeUserSettings`,
/// as the VS Code extension does): they are trusted like `initializationOptions`, so the next
/// turn runs under the approval mode they set.
#[tokio::test]
async fn user_settings_sent_after_initialize_apply_from_the_next_turn() {
    let model = ModelServer::start().await;
    script_greeting_fix(&model);
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/greet.rs", GREET).await;
    editor
        .notify(
            "tandem/didChangeUserSettings",
            json!({"settings": scripted_settings(&model, json!({"approval": {"mode": "auto_edit"}}))}),
        )
        .await;

    let started = editor
        .request("tandem/prompt", json!({"text": "Fix the typo in greet"}))
        .await
        .unwrap();
    let finished = editor.wait_turn_finished(&turn_id(&started)).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    // Without the new settings the edit would have been asked about, and rejected.
    assert!(editor.received_params("tandem/requestApproval").is_empty());
    assert_eq!(editor.buffer_text(&uri).await, GREET_FIXED);
}

/// `tandem/addNote` (what the VS Code extension sends when the user rejects a hunk of the
/// agent's): the session's next prompt that reaches the model carries it, even one a code-action
/// command starts, and only that one; `/compress` leaves it waiting.
#[tokio::test]
async fn a_note_reaches_the_model_with_the_next_prompt_whatever_starts_it() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_text("It returns a greeting."));
    model.push(Reply::openai_text("Nothing else."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/greet.rs", GREET).await;
    let created = editor
        .request("tandem/newSession", json!({}))
        .await
        .unwrap();
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let note = "In src/greet.rs the user rejected your change to line 2.";
    let answer = editor
        .request(
            "tandem/addNote",
            json!({"sessionId": session, "label": "Changes the user rejected", "text": note}),
        )
        .await
        .unwrap();
    assert_eq!(answer, json!({}));

    // Nothing to compress yet, and no model request: the note waits for a real prompt.
    let compress = editor
        .request("tandem/compress", json!({"sessionId": session}))
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&compress)).await;
    let explain = editor
        .execute(&json!({"command": "tandem.explain", "arguments": [
            {"uri": uri, "range": range(0, 0, 2, 1), "sessionId": session}
        ]}))
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&explain)).await;
    let again = editor
        .request(
            "tandem/prompt",
            json!({"sessionId": session, "text": "Anything else?"}),
        )
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&again)).await;

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let first = last_content(&requests[0], "user");
    assert!(
        first.contains("Changes the user rejected") && first.contains(note),
        "{first}"
    );
    let second = last_content(&requests[1], "user");
    assert!(!second.contains(note), "{second}");

    for (params, reason) in [
        (
            json!({"sessionId": "nope", "text": "x"}),
            "there is no session",
        ),
        (
            json!({"sessionId": session, "text": " "}),
            "a note needs text",
        ),
    ] {
        let error = editor.request("tandem/addNote", params).await.unwrap_err();
        assert_eq!(error["code"], -32602, "{error}");
        assert!(
            error["message"].as_str().unwrap().contains(reason),
            "{error}"
        );
    }
}
