//! initialize → initialized → shutdown → exit, and the ways a client can get it wrong.

use serde_json::{json, Value};
use tandem_test_support::start_in_process;

#[tokio::test]
async fn initialize_prefers_utf8_and_advertises_sync_and_plumbing() {
    let mut server = start_in_process();
    let result = server.client.initialize(&["utf-16", "utf-8"]).await;
    let caps = &result["capabilities"];
    assert_eq!(caps["positionEncoding"], "utf-8");
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental sync");
    assert_eq!(caps["textDocumentSync"]["openClose"], true);
    assert_eq!(caps["workspace"]["workspaceFolders"]["supported"], true);
    assert_eq!(caps["codeActionProvider"]["workDoneProgress"], true);
    assert!(caps["executeCommandProvider"]["commands"].is_array());
    assert_eq!(result["serverInfo"]["name"], "tandem");
}

#[tokio::test]
async fn initialize_falls_back_to_utf32_then_utf16() {
    for (offered, expected) in [
        (&["utf-16", "utf-32"][..], "utf-32"),
        (&[][..], "utf-16"),
        (&["utf-7"][..], "utf-16"),
    ] {
        let mut server = start_in_process();
        let result = server.client.initialize(offered).await;
        assert_eq!(
            result["capabilities"]["positionEncoding"], expected,
            "{offered:?}"
        );
    }
}

#[tokio::test]
async fn shutdown_then_exit_stops_with_code_zero() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    server.client.shutdown_and_exit().await;
    let exit = server.server.await.unwrap();
    assert!(exit.exit_notified);
    assert_eq!(exit.code(), 0);
}

#[tokio::test]
async fn exit_without_shutdown_stops_with_code_one() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    server.client.notify("exit", Value::Null).await;
    let exit = server.server.await.unwrap();
    assert!(exit.exit_notified);
    assert_eq!(exit.code(), 1);
}

#[tokio::test]
async fn closed_input_without_shutdown_stops_with_code_one() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    server.client.close().await;
    let exit = server.server.await.unwrap();
    assert!(!exit.exit_notified);
    assert_eq!(exit.code(), 1);
}

#[tokio::test]
async fn requests_after_shutdown_are_invalid() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    server
        .client
        .request("shutdown", Value::Null)
        .await
        .unwrap();
    let err = server
        .client
        .request("tandem/debug/status", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32600);
}

#[tokio::test]
async fn requests_before_initialize_are_refused_and_notifications_dropped() {
    let mut server = start_in_process();
    let err = server
        .client
        .request("tandem/debug/status", Value::Null)
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32002, "server not initialized");
    server
        .client
        .did_open("file:///early.txt", 1, "too early")
        .await;
    server.client.initialize(&[]).await;
    let err = server
        .client
        .document("file:///early.txt")
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32602);
}

#[tokio::test]
async fn second_initialize_is_refused() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    let err = server
        .client
        .request("initialize", json!({"capabilities": {}}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32600);
}

#[tokio::test]
async fn workspace_folders_follow_the_client() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    server
        .client
        .notify(
            "workspace/didChangeWorkspaceFolders",
            json!({"event": {
                "added": [{"uri": "file:///other", "name": "other"}],
                "removed": [{"uri": "file:///project", "name": "project"}],
            }}),
        )
        .await;
    let status = server
        .client
        .request("tandem/debug/status", Value::Null)
        .await
        .unwrap();
    assert_eq!(
        status["workspaceFolders"],
        json!([{"uri": "file:///other", "name": "other"}])
    );
    assert_eq!(status["client"]["name"], "tandem-test-client");
}

#[tokio::test]
async fn code_action_and_unknown_command_are_answered() {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    let actions = server
        .client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": "file:///a.txt"},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": []},
            }),
        )
        .await
        .unwrap();
    assert_eq!(actions, Value::Null);
    let err = server
        .client
        .request(
            "workspace/executeCommand",
            json!({"command": "no.such.command"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    assert!(err["message"].as_str().unwrap().contains("no.such.command"));
}
