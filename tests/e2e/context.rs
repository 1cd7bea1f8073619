//! Context management seen from the editor: the reminder that joins the newest message when it
//! has something new to say and stays there, append-only requests with Anthropic cache breakpoints, `tandem/restore` putting
//! files back through the editor, sessions saved and resumed across servers, and
//! `tandem/compress` replacing the history with the model's state snapshot.

use serde_json::{json, Value};
use tandem_test_support::{
    scripted_settings, FakeEditor, ModelServer, RecordedRequest, Reply, Step, TIMEOUT,
};

/// The text of an OpenAI message (its content is a string, or absent for tool calls).
fn content(message: &Value) -> &str {
    message["content"].as_str().unwrap_or_default()
}

fn turn_id(started: &Value) -> String {
    started["turnId"]
        .as_str()
        .unwrap_or_else(|| panic!("no turnId in {started}"))
        .to_owned()
}

fn session_id(started: &Value) -> String {
    started["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no sessionId in {started}"))
        .to_owned()
}

/// Sends a prompt (to `session`, or the most recent session) and waits for the turn to end.
async fn ask(editor: &FakeEditor, session: Option<&str>, text: &str) -> Value {
    let mut params = json!({ "text": text });
    if let Some(session) = session {
        params["sessionId"] = json!(session);
    }
    let started = editor.request("tandem/prompt", params).await.unwrap();
    finish(editor, &started).await;
    started
}

/// Waits for the end of a turn and checks that it ended normally.
async fn finish(editor: &FakeEditor, started: &Value) {
    let turn = turn_id(started);
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(
        finished["stopReason"],
        "end_turn",
        "{:#?}",
        editor.events_for_turn(&turn)
    );
}

/// The `<system-reminder>` blocks in `text`.
fn reminders(text: &str) -> Vec<&str> {
    text.match_indices("<system-reminder>")
        .map(|(start, _)| {
            let end = text[start..]
                .find("</system-reminder>")
                .map_or(text.len(), |end| start + end);
            &text[start..end]
        })
        .collect()
}

#[tokio::test]
async fn reminders_ride_only_on_the_last_message_and_name_the_file_the_user_edited() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "src/notes.txt"}),
    )]));
    model.push(Reply::openai_text("The notes list two items."));
    model.push(Reply::openai_text("Noted."));
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("src/notes.txt", "one\ntwo\n").await;

    ask(&editor, None, "What is in src/notes.txt?").await;
    editor.insert_at_end(&uri, "three\n").await;
    ask(&editor, None, "I added an item.").await;

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    // Turn 1: the model had just read the file, so nothing about it was out of date.
    for request in &requests[..2] {
        for message in request["messages"].as_array().unwrap() {
            for reminder in reminders(content(message)) {
                assert!(
                    !reminder.contains("src/notes.txt"),
                    "turn 1 was told the file is stale: {reminder}"
                );
            }
        }
    }
    // Turn 2: the user's typing is reported on the last message, and only there.
    let messages = requests[2]["messages"].as_array().unwrap();
    let (last, earlier) = messages.split_last().unwrap();
    assert_eq!(last["role"], "user");
    let on_last = reminders(content(last));
    assert_eq!(on_last.len(), 1, "{last:#}");
    assert!(
        on_last[0].contains("changed since you last read them"),
        "{}",
        on_last[0]
    );
    assert!(on_last[0].contains("src/notes.txt"), "{}", on_last[0]);
    for message in earlier {
        assert!(
            reminders(content(message)).is_empty(),
            "an older message carries a reminder: {message:#}"
        );
    }
    assert!(content(last).contains("I added an item."), "{last:#}");
}

/// A body up to the end of its last message (the `messages` array without its closing `]`).
fn messages_prefix(body: &str) -> &str {
    let parsed: Value = serde_json::from_str(body).unwrap();
    let messages = serde_json::to_string(&parsed["messages"]).unwrap();
    let start = body.find(r#""messages":["#).unwrap() + r#""messages":"#.len();
    assert!(
        body[start..].starts_with(&messages),
        "the messages do not serialise as sent: {body}"
    );
    // Up to the end of the last message: without the array's closing `]`.
    &body[..start + messages.len() - 1]
}

/// Anthropic's cache breakpoint marker, as the provider writes it into a content block.
const CACHE_CONTROL: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// Ten prompts in one session, with `tool_calls` and `text` building the model's replies: turns
/// 1, 4 and 7 read notes.txt, and after turn 4 the user changes it, so turn 5's prompt carries a
/// reminder (kept in the history from then on) and the read in turn 7 clears it. Returns the 13 request bodies the model received.
async fn ten_turns(
    editor: &FakeEditor,
    model: &ModelServer,
    tool_calls: fn(&[(&str, &str, Value)]) -> Reply,
    text: fn(&str) -> Reply,
) -> Vec<String> {
    let uri = editor.open("notes.txt", "alpha\nbeta\n").await;
    for turn in 0..10 {
        if turn % 3 == 1 {
            model.push(tool_calls(&[(
                &format!("call_{turn}"),
                "read_file",
                json!({"path": "notes.txt"}),
            )]));
        }
        model.push(text(&format!("Answer number {turn}.")));
        ask(editor, None, &format!("Question number {turn}?")).await;
        if turn == 4 {
            editor.insert_at_end(&uri, "gamma\n").await;
        }
    }
    let requests: Vec<String> = model
        .requests()
        .iter()
        .map(|request| String::from_utf8(request.body.clone()).unwrap())
        .collect();
    assert_eq!(requests.len(), 13);
    assert!(
        requests
            .iter()
            .any(|body| body.contains("<system-reminder>")),
        "no request carried a reminder"
    );
    requests
}

#[tokio::test]
async fn ten_turn_session_is_prefix_stable_and_anthropic_requests_carry_cache_control() {
    // A made-up key for the local model server; the variable is this test's alone.
    std::env::set_var("TANDEM_E2E_CONTEXT_ANTHROPIC_KEY", "sk-test-not-a-key");
    let model = ModelServer::start().await;
    let settings = json!({
        "model": "claude",
        "models": {"claude": {
            "provider": "anthropic",
            "model": "m",
            "baseUrl": model.url(),
            "apiKeyEnv": "TANDEM_E2E_CONTEXT_ANTHROPIC_KEY",
        }},
        "network": {"maxRetries": 0},
    });
    let editor = FakeEditor::rich().settings(settings).start().await;
    let requests = ten_turns(
        &editor,
        &model,
        Reply::anthropic_tool_calls,
        Reply::anthropic_text,
    )
    .await;
    for (index, body) in requests.iter().enumerate() {
        let parsed: Value = serde_json::from_str(body).unwrap();
        assert!(
            parsed["system"][0].get("cache_control").is_some(),
            "request {index}: no cache_control on the system block: {body}"
        );
        let marked = parsed["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|message| message["content"].as_array().unwrap())
            .filter(|block| block.get("cache_control").is_some())
            .count();
        // The newest message, and from the second request on the previous request's too.
        assert_eq!(
            marked,
            index.min(1) + 1,
            "request {index}: not the newest (and the previous) message marked: {body}"
        );
    }
    // The byte-for-byte check, with one exception that no serialisation avoids: a request
    // marks its newest message (`cache_control`) and a later request marks newer ones, so the
    // marker moves. Anthropic matches cached prefixes by content, markers aside. Keys keep
    // their insertion order, so the body reads `model`, `max_tokens`, `stream`, `system`,
    // `messages`, `tools`: the byte prefix covers the system block and all the messages of
    // the request before (reminders included: they stay where they were sent), and the tools
    // are compared below.
    for (index, pair) in requests.windows(2).enumerate() {
        let this = pair[0].replace(CACHE_CONTROL, "");
        let next = pair[1].replace(CACHE_CONTROL, "");
        let prefix = messages_prefix(&this);
        assert!(
            next.starts_with(prefix),
            "request {} does not start with all of request {index} (less the cache markers).\n\
             request {index}:\n{this}\nrequest {}:\n{next}",
            index + 1,
            index + 1
        );
    }
    // The frozen head: the same system prompt and tools in every request.
    let head = |body: &String| {
        let parsed: Value = serde_json::from_str(body).unwrap();
        (parsed["system"][0]["text"].clone(), parsed["tools"].clone())
    };
    assert!(requests.iter().all(|body| head(body) == head(&requests[0])));
}

#[tokio::test]
async fn ten_turn_openai_session_is_prefix_stable_byte_for_byte() {
    let model = ModelServer::start().await;
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let requests = ten_turns(
        &editor,
        &model,
        Reply::openai_tool_calls,
        Reply::openai_text,
    )
    .await;
    // No exception here: OpenAI caches on its own, with no markers in the body.
    let mut shortest = 0;
    for (index, pair) in requests.windows(2).enumerate() {
        let prefix = messages_prefix(&pair[0]);
        // Each stable prefix covers the one before and more: the history only grows.
        assert!(prefix.len() > shortest, "request {index}'s prefix shrank");
        shortest = prefix.len();
        assert!(
            pair[1].starts_with(prefix),
            "request {} does not start with all of request {index}'s messages.\nrequest \
             {index}:\n{}\nrequest {}:\n{}",
            index + 1,
            pair[0],
            index + 1,
            pair[1]
        );
    }
}

const ORIGINAL_A: &str = "one\ntwo\nthree\n";
const ORIGINAL_B: &str = "alpha\nbeta\n";

#[tokio::test]
async fn restore_puts_back_two_edits_and_refuses_a_file_the_user_changed() {
    let model = ModelServer::start().await;
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri_a = editor.open("a.txt", ORIGINAL_A).await;
    editor.write_file("b.txt", ORIGINAL_B);
    let read_both = || {
        Reply::openai_tool_calls(&[
            ("read_a", "read_file", json!({"path": "a.txt"})),
            ("read_b", "read_file", json!({"path": "b.txt"})),
        ])
    };
    let edit = |id: &str, path: &str, old: &str, new: &str| {
        Reply::openai_tool_calls(&[(
            id,
            "edit",
            json!({"path": path, "old_string": old, "new_string": new}),
        )])
    };

    // One turn: two edits of the open a.txt, one of b.txt, which is closed (so on disk).
    model.push(read_both());
    model.push(edit("edit_1", "a.txt", "one", "ONE"));
    model.push(edit("edit_2", "a.txt", "two", "TWO"));
    model.push(edit("edit_3", "b.txt", "alpha", "ALPHA"));
    model.push(Reply::openai_text("Shouted."));
    let started = ask(&editor, None, "Capitalise the first words").await;
    let session = session_id(&started);
    assert_eq!(editor.buffer_text(&uri_a).await, "ONE\nTWO\nthree\n");
    let b_path = editor.root().join("b.txt");
    assert_eq!(std::fs::read_to_string(&b_path).unwrap(), "ALPHA\nbeta\n");

    let applied_before = editor.apply_edits().len();
    let restore = editor
        .request("tandem/restore", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(session_id(&restore), session);
    finish(&editor, &restore).await;
    let restore_turn = turn_id(&restore);
    let restored = editor
        .wait_event(&restore_turn, "the restored event", |event| {
            event["type"] == "restored"
        })
        .await;
    // The open buffer came back through a workspace edit; the closed file on disk.
    assert_eq!(editor.buffer_text(&uri_a).await, ORIGINAL_A);
    let applied = editor.apply_edits();
    assert!(
        applied[applied_before..]
            .iter()
            .any(|record| record.applied && record.versions.iter().any(|check| check.uri == uri_a)),
        "{applied:#?}"
    );
    assert_eq!(std::fs::read_to_string(&b_path).unwrap(), ORIGINAL_B);
    let names = |list: &Value| -> Vec<String> {
        let mut names: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|path| {
                let path = path.as_str().or(path["path"].as_str()).unwrap();
                path.rsplit('/').next().unwrap().to_owned()
            })
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&restored["restored"]),
        ["a.txt", "b.txt"],
        "{restored:#}"
    );
    assert_eq!(restored["skipped"], json!([]), "{restored:#}");

    // Another turn edits both again; the user then types in a.txt, so only b.txt comes back.
    model.push(read_both());
    model.push(edit("edit_4", "a.txt", "three", "THREE"));
    model.push(edit("edit_5", "b.txt", "beta", "BETA"));
    model.push(Reply::openai_text("Shouted again."));
    ask(&editor, Some(&session), "Capitalise the last words").await;
    editor.insert_at_end(&uri_a, "four\n").await;
    let restore = editor
        .request("tandem/restore", json!({"sessionId": session}))
        .await
        .unwrap();
    finish(&editor, &restore).await;
    let restored = editor
        .wait_event(&turn_id(&restore), "the restored event", |event| {
            event["type"] == "restored"
        })
        .await;
    assert_eq!(names(&restored["restored"]), ["b.txt"], "{restored:#}");
    assert_eq!(names(&restored["skipped"]), ["a.txt"], "{restored:#}");
    let reason = restored["skipped"][0]["reason"].as_str().unwrap();
    assert!(!reason.trim().is_empty(), "{restored:#}");
    assert_eq!(editor.buffer_text(&uri_a).await, "one\ntwo\nTHREE\nfour\n");
    assert_eq!(std::fs::read_to_string(&b_path).unwrap(), ORIGINAL_B);
}

#[tokio::test]
async fn saved_sessions_list_resume_replay_and_delete() {
    let state = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let model = ModelServer::start().await;
    let start = || {
        FakeEditor::rich()
            .settings(scripted_settings(&model, json!({})))
            .state_dir(state.path())
            .workspace(workspace.path())
            .start()
    };

    let editor = start().await;
    model.push(Reply::openai_text("The first answer."));
    model.push(Reply::openai_text("The second answer."));
    let first = ask(&editor, None, "The first question").await;
    let id = session_id(&first);
    let second = turn_id(&ask(&editor, Some(&id), "The second question").await);
    let listed = editor.request("tandem/sessions", json!({})).await.unwrap();
    let live = &listed["sessions"][0];
    assert_eq!(live["sessionId"], id.as_str(), "{listed:#}");
    assert_eq!(live["live"], true, "{listed:#}");
    assert_eq!(live["turns"], 2, "{listed:#}");
    assert_eq!(
        listed["sessions"].as_array().unwrap().len(),
        1,
        "{listed:#}"
    );
    editor.shutdown().await;

    // A new server in the same workspace lists it as saved, and brings it back.
    let editor = start().await;
    let listed = editor.request("tandem/sessions", json!({})).await.unwrap();
    let saved = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|session| session["sessionId"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} is not listed: {listed:#}"));
    assert_eq!(saved["live"], false, "{saved:#}");
    assert_eq!(saved["running"], false, "{saved:#}");
    assert_eq!(saved["turns"], 2, "{saved:#}");
    assert!(saved["updatedMs"].as_u64().is_some(), "{saved:#}");
    assert!(
        saved["title"]
            .as_str()
            .unwrap()
            .contains("The first question"),
        "{saved:#}"
    );

    let resumed = editor
        .request("tandem/resumeSession", json!({"sessionId": id}))
        .await
        .unwrap();
    assert_eq!(
        resumed,
        json!({"sessionId": id, "turns": 2, "warnings": []}),
        "{resumed:#}"
    );
    // The replay: each saved turn from turnStarted to turnFinished, marked as such.
    editor
        .wait_for("the replay of the second turn", |message| {
            message["params"]["replay"] == true
                && message["params"]["turnId"] == second.as_str()
                && message["params"]["event"]["type"] == "turnFinished"
        })
        .await;
    let replayed: Vec<Value> = editor
        .received_params("tandem/event")
        .into_iter()
        .filter(|params| params["sessionId"] == id.as_str())
        .collect();
    assert!(replayed.iter().all(|params| params["replay"] == true));
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    for params in &replayed {
        let turn = params["turnId"].as_str().unwrap().to_owned();
        match turns.last_mut() {
            Some((last, events)) if *last == turn => events.push(params["event"].clone()),
            _ => turns.push((turn, vec![params["event"].clone()])),
        }
    }
    assert_eq!(turns.len(), 2, "{replayed:#?}");
    assert_eq!(turns[0].0, turn_id(&first));
    assert_eq!(turns[1].0, second);
    for ((_, events), (question, answer)) in turns.iter().zip([
        ("The first question", "The first answer."),
        ("The second question", "The second answer."),
    ]) {
        assert_eq!(
            events.first().unwrap(),
            &json!({"type": "turnStarted", "text": question})
        );
        assert!(
            events
                .iter()
                .any(|event| event["type"] == "textChunk" && event["text"] == answer),
            "{events:#?}"
        );
        assert_eq!(
            events.last().unwrap(),
            &json!({"type": "turnFinished", "stopReason": "end_turn"})
        );
    }
    // Resuming a live session answers it as it is.
    let again = editor
        .request("tandem/resumeSession", json!({"sessionId": id}))
        .await
        .unwrap();
    assert_eq!(again, json!({"sessionId": id, "turns": 2, "warnings": []}));

    // The third prompt continues the saved conversation.
    model.push(Reply::openai_text("The third answer."));
    let third = ask(&editor, Some(&id), "The third question").await;
    assert_eq!(session_id(&third), id);
    let request = model.chat_requests().pop().unwrap();
    let texts: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] != "system")
        .map(content)
        .collect();
    assert_eq!(texts.len(), 5, "{request:#}");
    assert!(texts[0].contains("The first question"), "{request:#}");
    assert_eq!(texts[1], "The first answer.");
    assert!(texts[2].contains("The second question"), "{request:#}");
    assert_eq!(texts[3], "The second answer.");
    assert!(texts[4].contains("The third question"), "{request:#}");

    // A running session is not deleted; once its turn is over it is, file and all.
    model.push(Reply::sse(String::new()).step(Step::Hang));
    let requests_before = model.request_count();
    let running = editor
        .request(
            "tandem/prompt",
            json!({"sessionId": id, "text": "Take your time"}),
        )
        .await
        .unwrap();
    tokio::time::timeout(TIMEOUT, model.wait_for_requests(requests_before + 1))
        .await
        .expect("the hanging turn never reached the model");
    let refused = editor
        .request("tandem/deleteSession", json!({"sessionId": id}))
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32602, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("cancel it first"),
        "{refused}"
    );
    editor
        .request(
            "tandem/cancel",
            json!({"sessionId": id, "turnId": running["turnId"]}),
        )
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&running)).await;
    let deleted = editor
        .request("tandem/deleteSession", json!({"sessionId": id}))
        .await
        .unwrap();
    assert_eq!(deleted, json!({"deleted": true}));
    let listed = editor.request("tandem/sessions", json!({})).await.unwrap();
    assert_eq!(listed["sessions"], json!([]), "{listed:#}");
    for method in ["tandem/resumeSession", "tandem/deleteSession"] {
        let error = editor
            .request(method, json!({"sessionId": id}))
            .await
            .unwrap_err();
        assert_eq!(error["code"], -32602, "{method}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(&id),
            "{method}: {error}"
        );
    }
}

/// Whether an OpenAI request is the snapshot request compression sends.
fn is_snapshot_request(request: &RecordedRequest) -> bool {
    let body = request.json();
    body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| content(last).contains(tandem_agent::compress::SNAPSHOT_INSTRUCTION))
}

const SNAPSHOT: &str =
    "<state_snapshot>\n<overall_goal>Answer the three questions.</overall_goal>\n</state_snapshot>";

#[tokio::test]
async fn compress_request_compresses_the_history() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        if is_snapshot_request(request) {
            Reply::openai_text(SNAPSHOT)
        } else {
            // Long enough that the snapshot is smaller than what it replaces.
            let answer: String = (1..=20)
                .map(|point| format!("Point {point} of the answer covers detail number {point}. "))
                .collect();
            Reply::openai_text(&answer)
        }
    });
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({})))
        .start()
        .await;
    let first = ask(&editor, None, "Question one?").await;
    let session = session_id(&first);
    ask(&editor, Some(&session), "Question two?").await;
    ask(&editor, Some(&session), "Question three?").await;
    assert!(!model.requests().iter().any(is_snapshot_request));

    let compress = editor
        .request("tandem/compress", json!({"sessionId": session}))
        .await
        .unwrap();
    assert_eq!(session_id(&compress), session);
    finish(&editor, &compress).await;
    let report = editor
        .wait_event(&turn_id(&compress), "the compression event", |event| {
            event["type"] == "compression"
        })
        .await;
    assert_eq!(report["status"], "compressed", "{report:#}");
    assert!(
        report["tokensAfter"].as_u64().unwrap() < report["tokensBefore"].as_u64().unwrap(),
        "{report:#}"
    );
    assert_eq!(
        model
            .requests()
            .iter()
            .filter(|request| is_snapshot_request(request))
            .count(),
        1
    );

    ask(&editor, Some(&session), "Question four?").await;
    let request = model.chat_requests().pop().unwrap();
    let messages: Vec<&Value> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] != "system")
        .collect();
    assert!(content(messages[0]).contains(SNAPSHOT), "{request:#}");
    assert!(
        !serde_json::to_string(&request)
            .unwrap()
            .contains("Question one?"),
        "{request:#}"
    );
    assert!(
        content(messages.last().unwrap()).contains("Question four?"),
        "{request:#}"
    );
}

#[tokio::test]
async fn restore_command_tells_a_plain_client_what_it_put_back() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "read_a",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "edit_a",
        "edit",
        json!({"path": "a.txt", "old_string": "one", "new_string": "ONE"}),
    )]));
    model.push(Reply::openai_text("Shouted."));
    let editor = FakeEditor::plain()
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await;
    let uri = editor.open("a.txt", ORIGINAL_A).await;
    let started = editor
        .request("tandem/prompt", json!({"text": "Capitalise one"}))
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&started)).await;
    assert_eq!(editor.buffer_text(&uri).await, "ONE\ntwo\nthree\n");

    let restore = editor
        .execute(&json!({"command": "tandem.restore"}))
        .await
        .unwrap();
    let end = editor.wait_turn_finished(&turn_id(&restore)).await;
    assert_eq!(end["message"], "Done");
    assert_eq!(editor.buffer_text(&uri).await, ORIGINAL_A);
    let shown = editor
        .wait_for("the restore's message", |message| {
            message["method"] == "window/showMessage"
                && message["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains("Restored"))
        })
        .await;
    assert_eq!(
        shown["params"]["message"],
        format!(
            "Tandem: Restored as they were before turn {}: a.txt.",
            turn_id(&started)
        )
    );
    assert_eq!(shown["params"]["type"], 3);

    // A second restore finds nothing left, and says so.
    let again = editor
        .execute(&json!({"command": "tandem.restore", "arguments": [{"sessionId": restore["sessionId"]}]}))
        .await
        .unwrap();
    editor.wait_turn_finished(&turn_id(&again)).await;
    editor
        .wait_for("the nothing-to-restore message", |message| {
            message["method"] == "window/showMessage"
                && message["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains("nothing to restore"))
        })
        .await;
}
