//! Bad input never kills the server or corrupts what it holds: each case is followed by proof that
//! the server still answers and still holds the right text.

use serde_json::{json, Value};
use tandem_test_support::{start_in_process, InProcessServer};

const URI: &str = "file:///project/a.txt";

async fn ready() -> InProcessServer {
    let mut server = start_in_process();
    server.client.initialize(&[]).await;
    server.client.did_open(URI, 1, "intact").await;
    server
}

async fn still_intact(server: &mut InProcessServer) {
    let held = server.client.document(URI).await.unwrap();
    assert_eq!(held["text"], "intact");
}

async fn expect_error_response(server: &mut InProcessServer, code: i64) -> Value {
    server
        .client
        .expect_message(&format!("an error response with code {code}"), |m| {
            m.get("method").is_none() && m["error"]["code"] == code
        })
        .await
}

#[tokio::test]
async fn malformed_json_gets_a_parse_error_and_the_server_keeps_running() {
    let mut server = ready().await;
    server
        .client
        .send_body(b"{\"jsonrpc\": \"2.0\", \"method\": ")
        .await;
    let response = expect_error_response(&mut server, -32700).await;
    assert_eq!(response["id"], Value::Null);
    server.client.expect_log("not JSON").await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn content_length_too_short_is_recovered_from() {
    let mut server = ready().await;
    let body = br#"{"jsonrpc":"2.0","id":999,"method":"tandem/debug/status"}"#;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len() - 10).into_bytes();
    frame.extend_from_slice(body);
    server.client.send_raw(&frame).await;
    expect_error_response(&mut server, -32700).await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn content_length_too_long_is_recovered_from() {
    let mut server = ready().await;
    let body = br#"{"jsonrpc":"2.0","method":"$/ping"}"#;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len() + 40).into_bytes();
    frame.extend_from_slice(body);
    server.client.send_raw(&frame).await;
    // The oversized frame swallows the start of the next message; the server answers with a parse
    // error, skips the remains and serves the message after that.
    server.client.notify("$/ping", Value::Null).await;
    expect_error_response(&mut server, -32700).await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn garbage_headers_are_skipped() {
    let mut server = ready().await;
    server
        .client
        .send_raw(b"Content-Length: lots\r\n\r\n")
        .await;
    server
        .client
        .send_raw(b"this is not a header at all\r\n\r\n")
        .await;
    expect_error_response(&mut server, -32700).await;
    server
        .client
        .expect_log("skipped a malformed message")
        .await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn unknown_method_is_method_not_found_and_unknown_notification_is_ignored() {
    let mut server = ready().await;
    let err = server
        .client
        .request("tandem/noSuchThing", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32601);
    server
        .client
        .notify("tandem/noSuchNotification", json!({}))
        .await;
    server
        .client
        .notify("$/setTrace", json!({"value": "off"}))
        .await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn not_an_rpc_message_is_an_invalid_request() {
    let mut server = ready().await;
    server
        .client
        .send_body(br#"{"jsonrpc":"2.0","id":41}"#)
        .await;
    let response = expect_error_response(&mut server, -32600).await;
    assert_eq!(response["id"], 41);
    server.client.send_body(b"[1, 2, 3]").await;
    expect_error_response(&mut server, -32600).await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn invalid_utf8_never_reaches_the_store() {
    let mut server = ready().await;
    let mut body = br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///bad.txt","languageId":"plaintext","version":1,"text":"bad "#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0xc0]);
    body.extend_from_slice(br#""}}}"#);
    server.client.send_body(&body).await;
    expect_error_response(&mut server, -32700).await;
    // A lone surrogate escape cannot become a Rust string either.
    server
        .client
        .send_body(br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///bad.txt","languageId":"plaintext","version":1,"text":"\ud800"}}}"#)
        .await;
    expect_error_response(&mut server, -32700).await;
    assert_eq!(
        server.client.document("file:///bad.txt").await.unwrap_err()["code"],
        -32602
    );
    still_intact(&mut server).await;
}

#[tokio::test]
async fn malformed_notification_params_are_logged_and_ignored() {
    let mut server = ready().await;
    server
        .client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI}, "contentChanges": "nope"}),
        )
        .await;
    server
        .client
        .expect_log("ignored malformed textDocument/didChange")
        .await;
    server
        .client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "x"}]}),
        )
        .await;
    server
        .client
        .expect_log("ignored malformed textDocument/didChange")
        .await;
    still_intact(&mut server).await;
}

#[tokio::test]
async fn malformed_request_params_are_invalid_params() {
    let mut server = ready().await;
    let err = server
        .client
        .request("tandem/debug/document", json!({"uri": 42}))
        .await
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    still_intact(&mut server).await;
}
