//! The prompt cache seen from the model server: every request of a session is the previous
//! request plus new content, byte for byte on the wire (OpenAI's Chat Completions and Responses,
//! Anthropic and Gemini), across
//! tool calls, an edit, a plan change, an approval-mode change, a file the user changes during a
//! turn and a resumed session, and it starts over cleanly after a compression. Also the cost
//! report: what a prefix cache would serve and what is sent fresh, per request.

use serde_json::{json, Value};
use tandem_test_support::{FakeEditor, ModelServer, Reply};

/// One wire format: its settings and its scripted replies.
#[derive(Clone, Copy)]
struct Wire {
    name: &'static str,
    /// The key of the conversation array in a request body.
    array: &'static str,
    settings: fn(&ModelServer, &str) -> Value,
    tool_call: fn(&str, &str, Value) -> Reply,
    text: fn(&str) -> Reply,
}

/// A made-up key for the local model server; the variable is this module's alone.
const KEY_ENV: &str = "TANDEM_E2E_PROMPT_CACHE_KEY";

fn settings(provider: &str, base: String, mode: &str) -> Value {
    std::env::set_var(KEY_ENV, "sk-test-not-a-key");
    json!({
        "model": "m",
        "models": {"m": {
            "provider": provider,
            "model": "test-model",
            "baseUrl": base,
            "apiKeyEnv": KEY_ENV,
        }},
        "network": {"maxRetries": 0},
        "approval": {"mode": mode},
    })
}

const OPENAI: Wire = Wire {
    name: "openai",
    array: "messages",
    settings: |model, mode| settings("openai", format!("{}/v1", model.url()), mode),
    tool_call: |id, name, args| Reply::openai_tool_calls(&[(id, name, args)]),
    text: Reply::openai_text,
};

const RESPONSES: Wire = Wire {
    name: "responses",
    array: "input",
    settings: |model, mode| {
        let mut settings = settings("openai", format!("{}/v1", model.url()), mode);
        settings["models"]["m"]["api"] = json!("responses");
        settings
    },
    tool_call: |id, name, args| Reply::responses_tool_calls(&[(id, name, args)]),
    text: Reply::responses_text,
};

const ANTHROPIC: Wire = Wire {
    name: "anthropic",
    array: "messages",
    settings: |model, mode| settings("anthropic", model.url(), mode),
    tool_call: |id, name, args| Reply::anthropic_tool_calls(&[(id, name, args)]),
    text: Reply::anthropic_text,
};

const GEMINI: Wire = Wire {
    name: "gemini",
    array: "contents",
    settings: |model, mode| settings("gemini", format!("{}/v1beta", model.url()), mode),
    tool_call: |_, name, args| gemini(json!({"functionCall": {"name": name, "args": args}})),
    text: |text| gemini(json!({"text": text})),
};

/// A Gemini stream of one part.
fn gemini(part: Value) -> Reply {
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    });
    Reply::sse(format!("data: {chunk}\n\n"))
}

/// Anthropic's cache breakpoint marker, as the provider writes it into a content block.
const CACHE_CONTROL: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// The conversation array of a request body exactly as sent (`messages` or `contents`), less
/// Anthropic's cache markers, which move from request to request by design.
fn conversation(wire: Wire, body: &str) -> String {
    let key = format!("\"{}\":", wire.array);
    let start = body
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in {body}"))
        + key.len();
    let mut values = serde_json::Deserializer::from_str(&body[start..]).into_iter::<Value>();
    values.next().unwrap().unwrap();
    let end = start + values.byte_offset();
    body[start..end].replace(CACHE_CONTROL, "")
}

/// What comes before the conversation in every request: the system instruction and tools,
/// markers aside.
fn head(wire: Wire, body: &str) -> Value {
    let parsed: Value = serde_json::from_str(&body.replace(CACHE_CONTROL, "")).unwrap();
    match wire.name {
        "openai" => json!([parsed["messages"][0], parsed["tools"]]),
        "responses" => json!([parsed["instructions"], parsed["tools"]]),
        "anthropic" => json!([parsed["system"], parsed["tools"]]),
        _ => json!([parsed["systemInstruction"], parsed["tools"]]),
    }
}

/// Whether request `next` repeats all of `previous`'s conversation: the array up to its
/// closing bracket is where `next`'s starts.
fn extends(previous: &str, next: &str) -> bool {
    let open = previous.strip_suffix(']').unwrap();
    next.starts_with(open) && next.len() > open.len()
}

async fn ask(editor: &FakeEditor, session: Option<&str>, text: &str) -> String {
    let mut params = json!({ "text": text });
    if let Some(session) = session {
        params["sessionId"] = json!(session);
    }
    let started = editor.request("tandem/prompt", params).await.unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(
        finished["stopReason"],
        "end_turn",
        "{:#?}",
        editor.events_for_turn(&turn)
    );
    started["sessionId"].as_str().unwrap().to_owned()
}

/// A file worth caching: about 12 KB.
fn notes() -> String {
    (1..=200)
        .map(|line| format!("note {line}: the parser keeps state between calls\n"))
        .collect()
}

/// The scenario on one wire. Returns the request bodies, and the index of the first request
/// after the compression.
async fn session(wire: Wire) -> (Vec<String>, usize) {
    let state = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let model = ModelServer::start().await;
    let start = |mode: &'static str| {
        FakeEditor::rich()
            .settings((wire.settings)(&model, mode))
            .state_dir(state.path())
            .workspace(workspace.path())
            .start()
    };
    let editor = start("default").await;
    editor.write_file("notes.txt", &notes());
    editor.write_file("a.txt", "one\ntwo\n");
    let notes_path = editor.root().join("notes.txt");
    // The user approves the edit and, while it waits, changes notes.txt (which the model read).
    editor.on_approval(move |_| {
        std::fs::write(&notes_path, format!("{}changed by the user\n", notes())).unwrap();
        json!({"type": "allowOnce"})
    });
    let todos = |second: &str| {
        json!({"todos": [
            {"description": "Read the notes", "status": "completed"},
            {"description": "Fix a.txt", "status": second},
        ]})
    };

    // Turn 1: a plan, a read, an edit (the user changes a file meanwhile), an answer.
    model.push((wire.tool_call)("c1", "write_todos", todos("in_progress")));
    // a.txt is read too: an edit of an unread file is refused without asking, and the approval
    // is where the user changes notes.txt.
    model.push((wire.tool_call)(
        "c2",
        "read_many_files",
        json!({"paths": ["notes.txt", "a.txt"]}),
    ));
    model.push((wire.tool_call)(
        "c3",
        "edit",
        json!({"path": "a.txt", "old_string": "one", "new_string": "ONE"}),
    ));
    model.push((wire.text)("Fixed a.txt."));
    let id = ask(&editor, None, "Read the notes and fix a.txt").await;

    // Turn 2, in auto_edit: a plan change and an answer.
    editor
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"tandem": (wire.settings)(&model, "auto_edit")}}),
        )
        .await;
    model.push((wire.tool_call)("c4", "write_todos", todos("completed")));
    model.push((wire.text)("All done."));
    ask(&editor, Some(&id), "Finish the plan").await;
    editor.shutdown().await;

    // Turn 3, in a new server that resumes the saved session.
    let editor = start("auto_edit").await;
    editor
        .request("tandem/resumeSession", json!({"sessionId": id}))
        .await
        .unwrap();
    model.push((wire.tool_call)(
        "c5",
        "read_file",
        json!({"path": "a.txt"}),
    ));
    model.push((wire.text)("a.txt starts with ONE."));
    ask(&editor, Some(&id), "What does a.txt say now?").await;

    // A compression, then two more turns.
    model.push((wire.text)(
        "<state_snapshot>\n<overall_goal>Fix a.txt.</overall_goal>\n</state_snapshot>",
    ));
    let compress = editor
        .request("tandem/compress", json!({"sessionId": id}))
        .await
        .unwrap();
    editor
        .wait_turn_finished(compress["turnId"].as_str().unwrap())
        .await;
    let after = model.request_count();
    model.push((wire.text)("Still fixed."));
    ask(&editor, Some(&id), "Is it still fixed?").await;
    model.push((wire.tool_call)(
        "c6",
        "read_file",
        json!({"path": "a.txt"}),
    ));
    model.push((wire.text)("Yes."));
    ask(&editor, Some(&id), "Check again").await;

    let bodies = model
        .requests()
        .iter()
        .map(|request| String::from_utf8(request.body.clone()).unwrap())
        .collect();
    (bodies, after)
}

async fn append_only(wire: Wire) {
    let (bodies, after) = session(wire).await;
    // 8 requests, the snapshot request, 3 after it.
    assert_eq!(bodies.len(), 12, "{}", wire.name);
    let snapshot = after - 1;
    let all = bodies.join("\n");
    for expected in [
        "Approval mode: auto_edit",
        "These files changed since you last read them",
    ] {
        assert!(
            all.contains(expected),
            "{}: no reminder said {expected:?}",
            wire.name
        );
    }
    if wire.name == "anthropic" {
        // At most four markers: the system block, the previous request's newest message and
        // this one's last block, which the next request repeats.
        // The snapshot request is compression's own, not the session's.
        for (index, body) in bodies
            .iter()
            .enumerate()
            .filter(|(index, _)| *index != snapshot)
        {
            let parsed: Value = serde_json::from_str(body).unwrap();
            assert!(body.matches(CACHE_CONTROL).count() <= 4, "{index}: {body}");
            assert!(
                parsed["system"][0].get("cache_control").is_some(),
                "{index}: {body}"
            );
            let last = parsed["messages"].as_array().unwrap().last().unwrap();
            let block = last["content"].as_array().unwrap().last().unwrap();
            assert!(block.get("cache_control").is_some(), "{index}: {body}");
        }
    }
    let conversations: Vec<String> = bodies.iter().map(|body| conversation(wire, body)).collect();
    for index in 1..bodies.len() {
        if index == snapshot || index == after {
            continue;
        }
        assert!(
            extends(&conversations[index - 1], &conversations[index]),
            "{}: request {index} does not start with request {}.\nrequest {}:\n{}\nrequest \
             {index}:\n{}",
            wire.name,
            index - 1,
            index - 1,
            conversations[index - 1],
            conversations[index]
        );
        assert_eq!(
            head(wire, &bodies[index]),
            head(wire, &bodies[0]),
            "{}: request {index}'s system instruction or tools changed",
            wire.name
        );
    }
    // The snapshot request is the history so far plus the instruction; the history after it
    // starts over (the snapshot), and the requests after it are append-only again.
    assert!(!conversations[after].starts_with(conversations[snapshot - 1].trim_end_matches(']')));
    assert!(conversations[after].contains("Fix a.txt."), "{}", wire.name);
    // Each reminder reached the model once: later requests repeat it in place, never anew.
    let last = &conversations[snapshot - 1];
    assert_eq!(
        last.matches("These files changed since you last read them")
            .count(),
        1,
        "{}: {last}",
        wire.name
    );
}

#[tokio::test]
async fn openai_requests_are_append_only_across_tools_edits_plans_modes_and_a_resume() {
    append_only(OPENAI).await;
}

#[tokio::test]
async fn responses_requests_are_append_only_across_tools_edits_plans_modes_and_a_resume() {
    append_only(RESPONSES).await;
}

#[tokio::test]
async fn anthropic_requests_are_append_only_across_tools_edits_plans_modes_and_a_resume() {
    append_only(ANTHROPIC).await;
}

#[tokio::test]
async fn gemini_requests_are_append_only_across_tools_edits_plans_modes_and_a_resume() {
    append_only(GEMINI).await;
}

/// What a prefix cache would serve of `body` after `previous`, in bytes of the prompt as a
/// provider reads it (system instruction and tools, then the conversation). OpenAI and Gemini
/// cache automatically: the longest prefix the previous request shares. Anthropic reads only up
/// to a breakpoint the previous request wrote: the longest prefix of the previous conversation
/// ending at one of its markers that this request repeats (the system block is marked in both).
fn cached(wire: Wire, previous: &str, body: &str) -> usize {
    let (head_before, head_now) = (
        head(wire, previous).to_string(),
        head(wire, body).to_string(),
    );
    if head_before != head_now {
        return 0;
    }
    let now = conversation(wire, body);
    let served = if wire.name == "anthropic" {
        let key = format!("\"{}\":", wire.array);
        let start = previous.find(&key).unwrap() + key.len();
        let marked = &previous[start..];
        let stripped = conversation(wire, previous);
        // Marker positions in the conversation without markers.
        marked
            .match_indices(CACHE_CONTROL)
            .enumerate()
            .map(|(count, (at, _))| at - count * CACHE_CONTROL.len())
            .filter(|&at| at <= stripped.len() && now.starts_with(&stripped[..at]))
            .max()
            .unwrap_or(0)
    } else {
        let before = conversation(wire, previous);
        before
            .bytes()
            .zip(now.bytes())
            .take_while(|(a, b)| a == b)
            .count()
    };
    head_now.len() + served
}

/// One line of the cost report per request: what a prefix cache serves, what is sent fresh,
/// and how much of that is content the previous request did not have.
#[tokio::test]
async fn cost_report_a_twenty_request_session_sends_only_its_new_content_fresh() {
    const FILES: usize = 18;
    let mut report = String::new();
    for wire in [OPENAI, RESPONSES, ANTHROPIC, GEMINI] {
        let model = ModelServer::start().await;
        let mut settings = (wire.settings)(&model, "yolo");
        // A window the session stays well inside: nothing is compressed or shortened.
        settings["models"]["m"]["contextWindow"] = json!(1_000_000);
        let editor = FakeEditor::rich().settings(settings).start().await;
        // Sizable tool outputs: 18 files of 150 numbered lines (about 9 KB each as read).
        for file in 0..FILES {
            let text: String = (1..=150)
                .map(|line| format!("file {file} line {line}: some code that the model reads\n"))
                .collect();
            editor.write_file(&format!("src/f{file}.txt"), &text);
        }
        // A plan left unfinished, as in a long task: the old reminder repeated it every request.
        model.push((wire.tool_call)(
            "plan",
            "write_todos",
            json!({"todos": [
                {"description": "Read every file", "status": "in_progress"},
                {"description": "Summarise them", "status": "pending"},
            ]}),
        ));
        for file in 0..FILES {
            model.push((wire.tool_call)(
                &format!("read{file}"),
                "read_file",
                json!({"path": format!("src/f{file}.txt")}),
            ));
        }
        model.push((wire.text)("They all hold code."));
        ask(
            &editor,
            None,
            "Read every file under src and summarise them",
        )
        .await;
        let bodies: Vec<String> = model
            .requests()
            .iter()
            .map(|request| String::from_utf8(request.body.clone()).unwrap())
            .collect();
        assert_eq!(bodies.len(), FILES + 2);

        report.push_str(&format!(
            "\n{}: request, prompt bytes, served from a prefix cache, sent fresh, new content\n",
            wire.name
        ));
        let (mut total, mut served_total, mut new_total) = (0, 0, 0);
        for (index, body) in bodies.iter().enumerate() {
            let size = head(wire, body).to_string().len() + conversation(wire, body).len();
            let (served, new) = match index.checked_sub(1).map(|at| &bodies[at]) {
                Some(previous) => (
                    cached(wire, previous, body),
                    size.saturating_sub(
                        head(wire, previous).to_string().len() + conversation(wire, previous).len(),
                    ),
                ),
                None => (0, size),
            };
            report.push_str(&format!(
                "{index:>3} {size:>8} {served:>8} {:>8} {new:>8}\n",
                size - served
            ));
            total += size;
            served_total += served;
            new_total += new;
        }
        let fresh = total - served_total;
        report.push_str(&format!(
            "total {total} bytes: {served_total} served from the cache, {fresh} sent fresh \
             ({:.1} %), {new_total} of it new content\n",
            fresh as f64 * 100.0 / total as f64
        ));
        // Append-only: all that is sent fresh is what is new, give or take the bytes of the
        // closing brackets (and, on Anthropic, the block the marker moved past).
        assert!(
            fresh <= new_total + 64 * bodies.len(),
            "{}: {fresh} bytes sent fresh for {new_total} of new content{report}",
            wire.name
        );
    }
    println!("{report}");
}

/// Issue 42's measure: the first request of a session on each wire, for a model of a family
/// Tandem knows (so that its defaults apply: reasoning, the Responses API on OpenAI's own
/// models), against the same model with reasoning turned off (`"reasoning": {}` sends no
/// reasoning field). The defaults may add at most 5 % to the first request.
#[tokio::test]
async fn first_request_bytes_with_each_wires_defaults() {
    let mut report =
        String::from("\nwire, model: first request bytes with defaults, without reasoning\n");
    for (wire, model_name) in [
        (OPENAI, "gpt-4.1"),
        (RESPONSES, "gpt-5"),
        (ANTHROPIC, "claude-sonnet-4-5"),
        (GEMINI, "gemini-2.5-pro"),
    ] {
        let mut sizes = Vec::new();
        for reasoning in [None, Some(json!({}))] {
            let model = ModelServer::start().await;
            let mut settings = (wire.settings)(&model, "default");
            settings["models"]["m"]["model"] = json!(model_name);
            if let Some(reasoning) = reasoning {
                settings["models"]["m"]["reasoning"] = reasoning;
            }
            let editor = FakeEditor::rich().settings(settings).start().await;
            editor.write_file(
                "src/lib.rs",
                "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
            );
            model.push((wire.text)("Done."));
            ask(&editor, None, "Rename add to sum").await;
            let requests = model.requests();
            sizes.push(requests[0].body.len());
            editor.shutdown().await;
        }
        report.push_str(&format!(
            "{}, {model_name}: {} bytes, {} bytes (+{:.2} %)\n",
            wire.name,
            sizes[0],
            sizes[1],
            (sizes[0] as f64 / sizes[1] as f64 - 1.0) * 100.0
        ));
        assert!(
            sizes[0] as f64 <= sizes[1] as f64 * 1.05,
            "{}: the defaults add more than 5 %{report}",
            wire.name
        );
    }
    println!("{report}");
}
