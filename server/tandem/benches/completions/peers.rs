//! The burst of the completions bench against another AI language server, run the way Tandem
//! is: the same file, 30 keystrokes 20 ms apart with a request after each, the same scripted
//! model taking 300 ms. Only lsp-ai can be had here (`cargo install lsp-ai`); llm-ls is
//! published only as GitHub release binaries. Name the binary in `TANDEM_BENCH_LSP_AI`.
//!
//! lsp-ai answers `textDocument/completion` (it has no inline completions) and has no debounce:
//! it sends the first request after a quiet spell to the model at once and keeps only the
//! newest of those that arrive within 1 / `max_requests_per_second` seconds of it (the others
//! get no answer at all); the kept one goes out when that time is over.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_test_support::{ModelServer, TestClient};

use super::Burst;

/// The burst against lsp-ai at `binary`, its model on `model` (OpenAI-compatible
/// `/completions`), allowed `rate` model requests a second.
pub async fn lsp_ai_burst(binary: &str, model: &ModelServer, rate: f32) -> Burst {
    let mut child = tokio::process::Command::new(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{binary}: {error}"));
    let mut client = TestClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    client
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": "file:///project",
                "capabilities": {},
                "initializationOptions": {
                    "memory": {"file_store": {}},
                    "models": {"small": {
                        "type": "open_ai",
                        "completions_endpoint": format!("{}/v1/completions", model.url()),
                        "model": "coder",
                        "auth_token": "none",
                        "max_requests_per_second": rate,
                    }},
                    "completion": {"model": "small", "parameters": {
                        "max_tokens": 128,
                        "fim": {"start": "<fim_prefix>", "middle": "<fim_suffix>", "end": "<fim_middle>"},
                    }},
                },
            }),
        )
        .await
        .expect("lsp-ai refused to initialize");
    client.notify("initialized", json!({})).await;
    let uri = "file:///project/src/main.rs";
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": super::BURST_TEXT}}),
        )
        .await;
    // lsp-ai leaves a second between model requests: start the burst in a quiet one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut last_keystroke = Instant::now();
    let mut last_id = 0;
    for n in 0..30u32 {
        let at = json!({"line": 1, "character": 12 + n});
        client
            .notify(
                "textDocument/didChange",
                json!({
                    "textDocument": {"uri": uri, "version": 2 + n},
                    "contentChanges": [{"range": {"start": at, "end": at}, "text": "a"}],
                }),
            )
            .await;
        last_keystroke = Instant::now();
        last_id = 1000 + n;
        client
            .send(json!({
                "jsonrpc": "2.0",
                "id": last_id,
                "method": "textDocument/completion",
                "params": {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 13 + n}},
            }))
            .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = client
        .expect_message("lsp-ai's answer to the last request", |message| {
            message["id"] == json!(last_id)
        })
        .await;
    let latency = last_keystroke.elapsed();
    let items = answer["result"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        items.iter().any(|item| item != &Value::Null),
        "lsp-ai had no suggestion for the last keystroke: {answer}"
    );
    let _ = client.request("shutdown", Value::Null).await;
    client.notify("exit", Value::Null).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Burst {
        model_requests: model.request_count(),
        cancelled: model.disconnect_count(),
        latency,
        gaps: Vec::new(),
    }
}
