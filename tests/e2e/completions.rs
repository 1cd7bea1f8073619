//! Inline completions end to end: the real server, an editor that asks
//! `textDocument/inlineCompletion` (or `textDocument/completion`, as Helix does), and the
//! scripted model server answering on each fill-in-the-middle endpoint. What the model was sent
//! (prefix, suffix, path, stop), what the editor got back (text, range in its encoding),
//! superseded requests (the model sees its connection close), the debounce under a burst of
//! keystrokes, and typing through a suggestion without a new model request.

use std::time::Duration;

use serde_json::{json, Value};
use tandem_providers::fim::{FimApi, FimModel, FimRequest};
use tandem_providers::{ApiKey, CancellationToken, ModelConfig, ProviderKind};
use tandem_test_support::reference::Pos;
use tandem_test_support::{
    completion_settings, FakeEditor, ModelServer, RecordedRequest, Reply, Step,
};

/// Settings with a `small` completion model on `model`, asked through `api`.
pub(super) fn settings(model: &ModelServer, api: &str, extra: Value) -> Value {
    let mut completion = json!({"api": api, "debounceMs": 0});
    if let (Value::Object(completion), Value::Object(extra)) = (&mut completion, extra) {
        completion.extend(extra);
    }
    completion_settings(model, completion)
}

/// The model's answer `text` in the shape of `api`'s endpoint.
pub(super) fn answer(api: &str, text: &str) -> Reply {
    let body = match api {
        "completions" => json!({"choices": [{"text": text}]}),
        "mistral" => json!({"choices": [{"message": {"content": text}}]}),
        "ollama" => json!({"response": text, "done": true}),
        "llamacpp" => json!({"content": text}),
        _ => return Reply::openai_text(text),
    };
    Reply::json(200, &body.to_string())
}

/// An editor with ghost text, its completion model on `model` through `/completions`, with the
/// `completion` settings `extra`.
async fn ghost_text_editor(model: &ModelServer, extra: Value) -> FakeEditor {
    FakeEditor::rich()
        .inline_completion(true)
        .settings(settings(model, "completions", extra))
        .start()
        .await
}

const SOURCE: &str = "fn add(a: i32, b: i32) -> i32 {\n    a + \n}\n";

/// Each endpoint: the request's path and the fields that carry the prefix and suffix, and the
/// suggestion the editor gets.
#[tokio::test]
async fn each_endpoint_gets_the_prefix_and_suffix_and_the_editor_the_middle() {
    // (api, path, the prefix's field, the suffix's field)
    let cases = [
        ("completions", "/v1/completions", "/prompt", "/suffix"),
        ("mistral", "/v1/fim/completions", "/prompt", "/suffix"),
        ("ollama", "/api/generate", "/prompt", "/suffix"),
        ("llamacpp", "/infill", "/input_prefix", "/input_suffix"),
        ("chat", "/v1/chat/completions", "", ""),
    ];
    for (api, path, prefix_field, suffix_field) in cases {
        let model = ModelServer::start().await;
        // A second line to cut: the cursor is mid-expression, so one line is wanted.
        model.push(answer(api, "b\n    // done"));
        let editor = FakeEditor::rich()
            .inline_completion(true)
            .settings(settings(&model, api, json!({})))
            .start()
            .await;
        let uri = editor.open("src/add.rs", SOURCE).await;
        let result = editor.request_inline_completion(&uri, 1, 8).await;
        assert_eq!(
            result,
            json!({"items": [{
                "insertText": "b",
                "range": {"start": {"line": 1, "character": 8}, "end": {"line": 1, "character": 8}},
            }]}),
            "{api}"
        );
        let requests = model.requests();
        assert_eq!(requests.len(), 1, "{api}");
        let request: &RecordedRequest = &requests[0];
        assert_eq!(request.path, path, "{api}");
        let body = request.json();
        if api == "chat" {
            let sent = body["messages"].to_string();
            assert!(sent.contains("    a + <CURSOR>\\n}"), "{sent}");
            assert!(sent.contains("src/add.rs"), "{sent}");
            continue;
        }
        let prefix = body.pointer(prefix_field).and_then(Value::as_str).unwrap();
        let suffix = body.pointer(suffix_field).and_then(Value::as_str).unwrap();
        assert_eq!(
            prefix, "// Path: src/add.rs\nfn add(a: i32, b: i32) -> i32 {\n    a + ",
            "{api}"
        );
        assert_eq!(suffix, "\n}\n", "{api}");
        assert!(
            body.to_string().contains(r#""stop":["\n"]"#),
            "{api}: {body}"
        );
    }
}

/// A block may be suggested on an empty line; the closing brace the file already has is not
/// suggested again.
#[tokio::test]
async fn a_block_on_an_empty_line_without_the_closing_brace_the_file_has() {
    let model = ModelServer::start().await;
    model.push(answer("completions", "let sum = a + b;\n    sum\n}"));
    let editor = ghost_text_editor(&model, json!({})).await;
    let uri = editor
        .open("src/add.rs", "fn add(a: i32, b: i32) -> i32 {\n    \n}\n")
        .await;
    let result = editor.request_inline_completion(&uri, 1, 4).await;
    assert_eq!(
        result["items"][0]["insertText"],
        "let sum = a + b;\n    sum"
    );
    let body = model.requests()[0].json();
    assert_eq!(body["stop"], json!([]), "a block may span lines: {body}");
}

/// Positions count in the client's encoding: emoji are two UTF-16 units, and CRLF line breaks
/// are not text.
#[tokio::test]
async fn positions_in_utf16_with_emoji_and_crlf() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "1;"));
    let editor = ghost_text_editor(&model, json!({})).await;
    let text = "let smile = \"😀😀\";\r\nlet n = \r\nlet after = 2;\r\n";
    let uri = editor.open("src/emoji.rs", text).await;
    // `let n = ` is 8 units long on line 1.
    let result = editor.request_inline_completion(&uri, 1, 8).await;
    assert_eq!(result["items"][0]["insertText"], "1;");
    assert_eq!(
        result["items"][0]["range"]["start"],
        json!({"line": 1, "character": 8})
    );
    let body = model.requests()[0].json();
    assert!(
        body["prompt"]
            .as_str()
            .unwrap()
            .ends_with("let smile = \"😀😀\";\r\nlet n = "),
        "{body}"
    );
    assert!(
        body["suffix"]
            .as_str()
            .unwrap()
            .starts_with("\r\nlet after"),
        "{body}"
    );
    // After the emoji, on their own line: 4 units for two emoji.
    let uri = editor.open("src/emoji2.rs", "let s = \"😀😀\n").await;
    editor.request_inline_completion(&uri, 0, 13).await;
    let body = model.requests()[1].json();
    assert!(
        body["prompt"].as_str().unwrap().ends_with("let s = \"😀😀"),
        "{body}"
    );
}

/// A newer request for the same document supersedes a slower one: it answers nothing, and the
/// model sees its connection close.
#[tokio::test]
async fn a_newer_request_cancels_the_older_one_and_its_connection() {
    let model = ModelServer::start().await;
    model.push(Reply::json(200, "{}").step(Step::Hang));
    model.push(answer("completions", "b"));
    let editor = ghost_text_editor(&model, json!({})).await;
    let uri = editor.open("src/add.rs", SOURCE).await;
    let first = editor.request_inline_completion(&uri, 1, 8);
    let second = async {
        model.wait_for_requests(1).await;
        editor.request_inline_completion(&uri, 1, 8).await
    };
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first, Value::Null);
    assert_eq!(second["items"][0]["insertText"], "b");
    tokio::time::timeout(Duration::from_secs(10), model.wait_for_disconnects(1))
        .await
        .expect("the superseded request's connection stayed open");
}

/// Ten keystrokes 10 ms apart with a 50 ms debounce: one model request, for the last.
#[tokio::test]
async fn a_burst_of_keystrokes_makes_one_model_request() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "b"));
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .settings(settings(&model, "completions", json!({"debounceMs": 50})))
        .start()
        .await;
    let uri = editor.open("src/add.rs", SOURCE).await;
    let requests = (0..10u64).map(|n| {
        let editor = &editor;
        let uri = &uri;
        async move {
            tokio::time::sleep(Duration::from_millis(10 * n)).await;
            editor.request_inline_completion(uri, 1, 8).await
        }
    });
    let results = futures::future::join_all(requests).await;
    assert_eq!(model.requests().len(), 1, "{results:?}");
    assert_eq!(results[9]["items"][0]["insertText"], "b");
    assert!(results[..9].iter().all(Value::is_null), "{results:?}");
}

/// Typing what the suggestion starts with keeps its rest, without asking the model again.
#[tokio::test]
async fn typing_through_a_suggestion_reuses_it() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "compute(a, b);"));
    let editor = ghost_text_editor(&model, json!({})).await;
    let uri = editor.open("src/a.rs", "fn f() {\n    let x = \n}\n").await;
    let result = editor.request_inline_completion(&uri, 1, 12).await;
    assert_eq!(result["items"][0]["insertText"], "compute(a, b);");
    editor
        .type_at(
            &uri,
            Pos {
                line: 1,
                character: 12,
            },
            "comp",
        )
        .await;
    let result = editor.request_inline_completion(&uri, 1, 16).await;
    assert_eq!(result["items"][0]["insertText"], "ute(a, b);");
    assert_eq!(model.requests().len(), 1);
    // Typing something else asks again.
    editor
        .type_at(
            &uri,
            Pos {
                line: 1,
                character: 16,
            },
            "X",
        )
        .await;
    editor.request_inline_completion(&uri, 1, 17).await;
    assert_eq!(model.requests().len(), 2);
}

/// Editors without ghost text get the suggestion as a completion item; those with it do not,
/// and learn of `inlineCompletionProvider` from `initialize`.
#[tokio::test]
async fn completion_items_for_editors_without_inline_completions() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "b"));
    let plain = FakeEditor::plain()
        .settings(settings(&model, "completions", json!({})))
        .start()
        .await;
    assert_eq!(
        plain.server_capabilities()["inlineCompletionProvider"],
        true
    );
    let uri = plain.open("src/add.rs", SOURCE).await;
    let params = json!({
        "textDocument": {"uri": uri},
        "position": {"line": 1, "character": 8},
        "context": {"triggerKind": 1},
    });
    let result = plain
        .request("textDocument/completion", params.clone())
        .await
        .unwrap();
    let item = &result["items"][0];
    assert_eq!(item["label"], "b");
    assert_eq!(item["insertTextFormat"], 1);
    assert_eq!(
        item["textEdit"],
        json!({"range": {"start": {"line": 1, "character": 8}, "end": {"line": 1, "character": 8}}, "newText": "b"})
    );
    assert_eq!(result["isIncomplete"], true);

    let ghost = FakeEditor::rich()
        .inline_completion(true)
        .settings(settings(&model, "completions", json!({})))
        .start()
        .await;
    let uri = ghost.open("src/add.rs", SOURCE).await;
    let mut params = params;
    params["textDocument"]["uri"] = json!(uri);
    let result = ghost
        .request("textDocument/completion", params)
        .await
        .unwrap();
    assert_eq!(result, Value::Null);
}

/// Without a completion model, or for a language switched off, there is nothing to suggest
/// and no model request.
#[tokio::test]
async fn no_model_or_a_language_switched_off_means_no_request() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "b"));
    let cases = [
        json!({"network": {"maxRetries": 0}}),
        settings(&model, "completions", json!({"languages": {"rust": false}})),
        settings(&model, "completions", json!({"enabled": false})),
    ];
    for settings in cases {
        let editor = FakeEditor::rich()
            .inline_completion(true)
            .settings(settings.clone())
            .start()
            .await;
        let uri = editor.open("src/add.rs", SOURCE).await;
        assert_eq!(
            editor.request_inline_completion(&uri, 1, 8).await,
            Value::Null,
            "{settings}"
        );
    }
    assert_eq!(model.requests().len(), 0);
}

/// The model is shown where the names used near the cursor are defined (from the workspace's
/// symbol index) and the code most like the lines before the cursor in another recently used
/// document, as comments above the path line.
#[tokio::test]
async fn the_model_sees_definitions_and_similar_code_from_recent_documents() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", "total"));
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.path().join("src")).unwrap();
    std::fs::write(
        workspace.path().join("src/math.rs"),
        "/// Sums the prices.\npub fn sum_prices(items: &[Item]) -> u64 {\n    items.iter().map(|item| item.price).sum()\n}\n",
    )
    .unwrap();
    // The definitions are looked up during the debounce.
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .workspace(workspace.path())
        .settings(settings(&model, "completions", json!({"debounceMs": 100})))
        .start()
        .await;
    // The background index knows math.rs once it has run.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let status = editor
            .request("tandem/debug/status", json!({}))
            .await
            .unwrap();
        if status["index"]["files"].as_u64().unwrap_or(0) >= 1
            && status["index"]["background"]["running"] == 0
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the index never filled: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    editor
        .open(
            "src/report.rs",
            "fn print_report(orders: &[Order]) {\n    for order in orders {\n        println!(\"{} {}\", order.id, order.amount);\n    }\n}\n",
        )
        .await;
    let uri = editor
        .open(
            "src/invoice.rs",
            "fn print_invoice(orders: &[Order]) {\n    for order in orders {\n        let cost = sum_prices(&order.items);\n        \n    }\n}\n",
        )
        .await;
    let result = editor.request_inline_completion(&uri, 3, 8).await;
    assert_eq!(result["items"][0]["insertText"], "total");
    let prompt = model.requests()[0].json()["prompt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.starts_with(
            "// Compare this snippet from src/report.rs:\n// fn print_report(orders: &[Order]) {\n"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "// Definitions of names used below:\n// src/math.rs:2: pub fn sum_prices(items: &[Item]) -> u64 {\n// Path: src/invoice.rs\n"
        ),
        "{prompt}"
    );
}

/// A suggestion that would add a syntax error the file did not have is not offered.
#[tokio::test]
async fn a_suggestion_that_breaks_the_syntax_is_not_offered() {
    let model = ModelServer::start().await;
    model.push(answer("completions", "compute(1;"));
    model.push(answer("completions", "compute(1);"));
    let editor = ghost_text_editor(&model, json!({})).await;
    let uri = editor
        .open("src/a.rs", "fn f() {\n    let x = 1;\n    \n}\n")
        .await;
    assert_eq!(
        editor.request_inline_completion(&uri, 2, 4).await,
        Value::Null
    );
    let result = editor.request_inline_completion(&uri, 2, 4).await;
    assert_eq!(result["items"][0]["insertText"], "compute(1);");
}

/// `prefixChars` and `suffixChars` bound what the model is shown, cut at whole nodes or lines.
#[tokio::test]
async fn the_model_is_shown_at_most_prefix_chars_and_suffix_chars() {
    let model = ModelServer::start().await;
    model.push(answer("completions", "b"));
    let editor = ghost_text_editor(&model, json!({"prefixChars": 45, "suffixChars": 12})).await;
    let uri = editor
        .open(
            "src/add.rs",
            "// first line, out of reach\nfn add(a: i32, b: i32) -> i32 {\n    a + \n}\n// last line, out of reach\n",
        )
        .await;
    let result = editor.request_inline_completion(&uri, 2, 8).await;
    assert_eq!(result["items"][0]["insertText"], "b");
    let body = model.requests()[0].json();
    // 45 characters before the cursor reach into the comment, which is left out whole.
    assert_eq!(
        body["prompt"], "// Path: src/add.rs\nfn add(a: i32, b: i32) -> i32 {\n    a + ",
        "{body}"
    );
    // 12 after it end in the comment line, which is cut off whole too.
    assert_eq!(body["suffix"], "\n}", "{body}");
}

/// The completion model's key (`apiKeyEnv`) goes to its server as `Authorization`, on every
/// fill-in-the-middle endpoint, and an error that quotes it shows `[redacted]` instead.
#[tokio::test]
async fn the_completion_model_gets_its_key_and_errors_never_show_it() {
    const KEY_ENV: &str = "TANDEM_E2E_COMPLETION_KEY";
    let secret = "sk-e2e-completion-5ecret";
    std::env::set_var(KEY_ENV, secret);
    let model = ModelServer::start().await;
    model.push(answer("completions", "b"));
    let mut settings = settings(&model, "completions", json!({}));
    settings["models"]["small"]["apiKeyEnv"] = json!(KEY_ENV);
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .settings(settings)
        .start()
        .await;
    let uri = editor.open("src/add.rs", SOURCE).await;
    let result = editor.request_inline_completion(&uri, 1, 8).await;
    assert_eq!(result["items"][0]["insertText"], "b");
    assert_eq!(
        model.requests()[0].header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );

    for api in [
        FimApi::Completions,
        FimApi::Mistral,
        FimApi::Ollama,
        FimApi::Llamacpp,
    ] {
        let server = ModelServer::start().await;
        server.push(Reply::json(
            401,
            &format!(r#"{{"error": {{"message": "Incorrect API key provided: {secret}."}}}}"#),
        ));
        let mut config = ModelConfig::new(
            ProviderKind::OpenAi,
            "coder",
            format!("{}/v1", server.url()),
        );
        config.api_key = Some(ApiKey::new(secret.to_owned()));
        let fim = FimModel::new(config, api).unwrap();
        let request = FimRequest {
            prefix: "fn main() {\n    let x = ".to_owned(),
            suffix: "\n}\n".to_owned(),
            max_tokens: 16,
            stop: vec!["\n".to_owned()],
            path: "src/main.rs".to_owned(),
            language: "rust".to_owned(),
        };
        let error = fim
            .fill(&request, CancellationToken::new())
            .await
            .unwrap_err();
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(secret), "{api:?}: {shown}");
        assert!(shown.contains("[redacted]"), "{api:?}: {shown}");
        assert_eq!(
            server.requests()[0].header("authorization"),
            Some(format!("Bearer {secret}").as_str()),
            "{api:?}"
        );
    }
}

/// Two functions; the cursor goes after `let x = ` (line 7, character 12). Within 55 characters
/// of it, the window reaches back into `one`'s last statement.
const TWO_ITEMS: &str = "fn one() -> u32 {\n    let total = compute(1);\n    total + 1\n}\n\nfn two() {\n    let emoji = \"🦀🦀\";\n    let x = ;\n}\n";

/// Where the server has the document's syntax tree (brought up to date in the background while
/// a request waits out its debounce), the window starts at a syntax boundary: here the item
/// after the one it reaches back into, rather than that item's last lines.
#[tokio::test]
async fn the_window_starts_at_a_syntax_boundary_once_the_document_is_parsed() {
    let model = ModelServer::start().await;
    // No suggestion, so that none is kept to reuse: every request goes to the model.
    model.respond_with(|_| answer("completions", ""));
    let editor = ghost_text_editor(&model, json!({"prefixChars": 55})).await;
    let uri = editor.open("src/two.rs", TWO_ITEMS).await;
    let line_cut = "// Path: src/two.rs\n}\n\nfn two() {\n    let emoji = \"🦀🦀\";\n    let x = ";
    let syntax_cut = "// Path: src/two.rs\nfn two() {\n    let emoji = \"🦀🦀\";\n    let x = ";
    let mut prompts = Vec::new();
    for _ in 0..100 {
        editor.request_inline_completion(&uri, 7, 12).await;
        let prompt = model.requests().last().unwrap().json()["prompt"].clone();
        prompts.push(prompt.as_str().unwrap().to_owned());
        if prompt == syntax_cut {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Without `debounceMs` a request that finds the tree behind its text is cut at lines.
    assert!(
        prompts
            .iter()
            .all(|prompt| prompt == line_cut || prompt == syntax_cut),
        "{prompts:#?}"
    );
    assert_eq!(prompts.last().unwrap(), syntax_cut, "{prompts:#?}");
}

/// With a debounce (the default), the keystroke's reparse runs while the request waits, so the
/// request right after a keystroke is cut at a syntax boundary.
#[tokio::test]
async fn the_request_after_a_keystroke_is_cut_at_a_syntax_boundary_after_its_debounce() {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer("completions", ""));
    let editor = ghost_text_editor(&model, json!({"prefixChars": 55, "debounceMs": 500})).await;
    let uri = editor.open("src/two.rs", TWO_ITEMS).await;
    editor
        .type_at(
            &uri,
            Pos {
                line: 7,
                character: 12,
            },
            "y",
        )
        .await;
    editor.request_inline_completion(&uri, 7, 13).await;
    let prompt = model.requests()[0].json()["prompt"].clone();
    assert_eq!(
        prompt,
        "// Path: src/two.rs\nfn two() {\n    let emoji = \"🦀🦀\";\n    let x = y"
    );
}
