//! The built `tandem` binary over real stdio: what an editor actually launches.

use std::process::Stdio;

use serde_json::{json, Value};
use tandem_test_support::{TestClient, TIMEOUT};
use tokio::process::{Child, Command};

fn spawn(args: &[&str]) -> (TestClient, Child) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (TestClient::new(stdout, stdin), child)
}

async fn exit_code(mut child: Child) -> i32 {
    tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .expect("tandem did not exit")
        .unwrap()
        .code()
        .expect("tandem was killed by a signal")
}

#[tokio::test]
async fn editor_session_over_stdio_exits_zero() {
    let (mut client, child) = spawn(&["lsp", "--stdio", "--log-file", "-", "--log-level", "debug"]);
    let result = client.initialize(&["utf-8"]).await;
    assert_eq!(result["capabilities"]["positionEncoding"], "utf-8");
    client.did_open("file:///x.rs", 1, "fn main() {}\n").await;
    client
        .did_change(
            "file:///x.rs",
            2,
            serde_json::json!([{"range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 7}}, "text": "start"}]),
        )
        .await;
    let held = client.document("file:///x.rs").await.unwrap();
    assert_eq!(held["text"], "fn start() {}\n");
    // The client reads stdout strictly as LSP frames: any stray output would have failed above.
    client.shutdown_and_exit().await;
    assert_eq!(exit_code(child).await, 0);
}

#[tokio::test]
async fn exit_without_shutdown_exits_one() {
    let (mut client, child) = spawn(&["lsp", "--log-file", "-"]);
    client.initialize(&[]).await;
    client.notify("exit", Value::Null).await;
    assert_eq!(exit_code(child).await, 1);
}

#[tokio::test]
async fn version_and_help_describe_the_binary() {
    let version = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("--version")
        .output()
        .await
        .unwrap();
    assert!(version.status.success());
    let version = String::from_utf8(version.stdout).unwrap();
    let expected = format!("tandem {} (", env!("CARGO_PKG_VERSION"));
    assert!(version.starts_with(&expected), "{version}");
    assert_eq!(version.lines().count(), 1, "{version}");
    // The commit this checkout is at (the test's build is of it), and the host's target.
    let commit = std::process::Command::new("git")
        .args(["log", "-1", "--format=%h %cs", "--abbrev=9"])
        .output()
        .unwrap();
    let commit = String::from_utf8(commit.stdout).unwrap();
    let target = format!(", {}-", std::env::consts::ARCH);
    assert!(version.contains(commit.trim()), "{version} lacks {commit}");
    assert!(version.contains(&target), "{version} lacks the target");
    let help = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("--help")
        .output()
        .await
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for needle in ["lsp", "--log-file", "--log-level"] {
        assert!(help.contains(needle), "--help lacks {needle}:\n{help}");
    }
}

#[tokio::test]
async fn log_file_receives_the_log() {
    let dir = std::env::temp_dir().join(format!("tandem-log-test-{}", std::process::id()));
    let log = dir.join("nested").join("tandem.log");
    let (mut client, child) = spawn(&["lsp", "--log-file", log.to_str().unwrap()]);
    client.initialize(&[]).await;
    client.shutdown_and_exit().await;
    assert_eq!(exit_code(child).await, 0);
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains("tandem lsp starting"), "{written}");
    assert!(written.contains("shutdown requested"), "{written}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn invalid_log_level_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .args(["lsp", "--log-level", "loud[x"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("invalid log level"));
}

/// The resident set of process `pid`, in bytes, from `/proc`.
#[cfg(target_os = "linux")]
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .unwrap();
    let kib: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

/// Sends `count` requests in batches, as an editor sends a code action request on every cursor
/// move, and waits for every answer.
#[cfg(target_os = "linux")]
async fn flood(client: &mut TestClient, uri: &str, first_id: i64, count: i64) {
    const BATCH: i64 = 500;
    let mut id = first_id;
    while id < first_id + count {
        let batch_end = (id + BATCH).min(first_id + count);
        let mut frames = Vec::new();
        for n in id..batch_end {
            // The three kinds the review measured: a Tandem request, an unknown method, and the
            // standard request editors send most.
            let message = match n % 3 {
                0 => json!({"jsonrpc": "2.0", "id": n, "method": "tandem/debug/status"}),
                1 => {
                    json!({"jsonrpc": "2.0", "id": n, "method": "tandem/noSuchMethod", "params": {}})
                }
                _ => {
                    json!({"jsonrpc": "2.0", "id": n, "method": "textDocument/codeAction", "params": {
                        "textDocument": {"uri": uri},
                        "range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 3}},
                        "context": {"diagnostics": []},
                    }})
                }
            };
            let body = serde_json::to_vec(&message).unwrap();
            frames.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            frames.extend_from_slice(&body);
        }
        client.send_raw(&frames).await;
        for _ in id..batch_end {
            client
                .expect_message("a response", |message| {
                    message.get("id").is_some() && message.get("method").is_none()
                })
                .await;
        }
        id = batch_end;
    }
}

/// Regression: every request handler was kept in a task set that was never drained, so the
/// server grew by about 1.6 KB a request (200,000 requests: 9 MB to 333 MB).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn finished_request_handlers_are_reaped_and_memory_stays_flat() {
    let (mut client, child) = spawn(&["lsp"]);
    let pid = child.id().unwrap();
    client.initialize(&[]).await;
    let uri = "file:///soak.rs";
    client.did_open(uri, 1, "fn main() {}\n").await;
    // Warm up allocator pools and lazily built state before taking the baseline.
    flood(&mut client, uri, 1_000_000, 10_000).await;
    let before = resident_bytes(pid);
    flood(&mut client, uri, 2_000_000, 100_000).await;
    let after = resident_bytes(pid);
    // Generous: the leak added about 160 MB over this many requests.
    let grown = after.saturating_sub(before);
    assert!(
        grown < 24 << 20,
        "the server grew by {} KiB over 100,000 requests ({} KiB to {} KiB)",
        grown >> 10,
        before >> 10,
        after >> 10
    );
    client.shutdown_and_exit().await;
    assert_eq!(exit_code(child).await, 0);
}
