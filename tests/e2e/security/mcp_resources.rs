//! Issue: `read_mcp_resource` read whatever a server offered (a `file:///{path}` template: ~/.ssh) without asking.
//!
//! Through the built binary (`tandem ask --json`), with the probe MCP server configured in the
//! user settings (`tests/mcp/probe-server.mjs files`: it reads any file through the template
//! `file:///{path}`, as filesystem servers do) and the scripted model server as the model. The
//! user attaches a note of the workspace with `@files:uri`; the model then asks
//! `read_mcp_resource` for a key outside the workspace.

use serde_json::{json, Value};
use tandem_test_support::{ModelServer, RecordedRequest, Reply};

use super::super::ask::Setup;
use super::super::mcp::{declared, probe, tool_results};
use super::{calls_with_status, scripted_user_settings, told};

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- tandem-test-key-5f0c1e";

/// The model: reads `uri` through the `files` server once the tool is offered, then answers.
fn model(uri: String) -> impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static {
    move |request| {
        let body = request.json();
        let offered = declared(&body)
            .iter()
            .any(|tool| tool == "read_mcp_resource");
        if offered && tool_results(&body).is_empty() {
            Reply::openai_tool_calls(&[(
                "call_key",
                "read_mcp_resource",
                json!({"server": "files", "uri": uri}),
            )])
        } else {
            Reply::openai_text("Done.")
        }
    }
}

/// Finding 11 (second review): `read_mcp_resource` counted as read-only, so it ran without
/// asking and the key reached the model. A read now asks as the server's tools do: headless,
/// it is not run and the key never reaches the model server, unless the server is trusted, a
/// rule allows the read, or the mode asks nothing. The user's own `@server:uri` mention is
/// their choice and is read without asking.
#[tokio::test]
async fn a_resource_read_the_model_asks_for_follows_the_servers_approval() {
    let Some(probe) = probe() else { return };
    let outside = tempfile::tempdir().unwrap();
    let key = std::fs::canonicalize(outside.path())
        .unwrap()
        .join("id_rsa");
    std::fs::write(&key, format!("{KEY}\n")).unwrap();
    let key_uri = format!("file://{}", key.display());
    // (what, the server's extra settings, extra user settings, extra arguments, whether it runs)
    let cases = [
        ("default mode", json!({}), json!({}), &[][..], false),
        (
            "auto_edit",
            json!({}),
            json!({"approval": {"mode": "auto_edit"}}),
            &[],
            false,
        ),
        (
            "a trusted server",
            json!({"trust": true}),
            json!({}),
            &[],
            true,
        ),
        (
            "a rule for the tool",
            json!({}),
            json!({"approval": {"allow": ["read_mcp_resource"]}}),
            &[],
            true,
        ),
        (
            "yolo",
            json!({}),
            json!({}),
            &["--approval-mode", "yolo"],
            true,
        ),
        (
            "a deny rule for the tool, on a trusted server",
            json!({"trust": true}),
            json!({"approval": {"deny": ["read_mcp_resource"]}}),
            &[],
            false,
        ),
        (
            "a rule for the server",
            json!({}),
            json!({"approval": {"allow": ["mcp__files"]}}),
            &[],
            true,
        ),
        (
            "a deny rule for the server, on a trusted server",
            json!({"trust": true}),
            json!({"approval": {"deny": ["mcp__files"]}}),
            &[],
            false,
        ),
    ];
    for (what, server, extra, args, runs) in cases {
        let model_server = ModelServer::start().await;
        model_server.respond_with(model(key_uri.clone()));
        let mut files = json!({"command": "node", "args": [probe, "files"]});
        if let (Value::Object(files), Value::Object(server)) = (&mut files, server) {
            files.extend(server);
        }
        let mut settings = scripted_user_settings(&model_server, extra);
        settings["mcpServers"] = json!({ "files": files });
        let setup = Setup::with_settings(settings, &[("notes.txt", "Keys are in ~/.ssh.\n")]);
        // The note is read through the server (the user's choice: nothing asks), which waits for
        // the server to start, so the first request offers its resource tools.
        let note = format!("@files:file://{}", setup.path("notes.txt").display());
        let mut all = vec!["--json"];
        all.extend(args);
        let run = setup.ask(&format!("Summarise {note}"), &all).await;

        let requests = model_server.chat_requests();
        let first = requests
            .first()
            .unwrap_or_else(|| panic!("{what}: {run:#?}"));
        assert!(
            first["messages"]
                .to_string()
                .contains("Keys are in ~/.ssh."),
            "{what}: the user's mention was not attached: {first:#}"
        );
        let asked = calls_with_status(&run, "awaitingApproval");
        let told = told(&run);
        assert_eq!(told.len(), 1, "{what}: {}", run.stdout);
        let sent: Vec<String> = model_server
            .requests()
            .iter()
            .map(|request| String::from_utf8_lossy(&request.body).into_owned())
            .collect();
        let leaked = sent.iter().any(|body| body.contains(KEY));
        if runs {
            assert_eq!(run.code, 0, "{what}: {run:#?}");
            assert!(asked.is_empty(), "{what}: {asked:#?}");
            assert_eq!(told[0], format!("{KEY}\n"), "{what}");
            assert!(leaked, "{what}: the key read did not reach the model");
        } else {
            assert!(!leaked, "{what}: the key reached the model server");
            if what.starts_with("a deny rule") {
                // Refused by the user's own rule: nothing was left undone for want of approval.
                assert_eq!(run.code, 0, "{what}: {run:#?}");
                assert!(asked.is_empty(), "{what}: {asked:#?}");
                assert!(
                    told[0].contains("settings refuse this call"),
                    "{what}: {told:?}"
                );
            } else {
                // 3: the turn ended, but what it tried needed an approval nobody could give.
                assert_eq!(run.code, 3, "{what}: {run:#?}");
                assert_eq!(asked.len(), 1, "{what}: {}", run.stdout);
                assert_eq!(
                    asked[0]["rawInput"],
                    json!({"server": "files", "uri": key_uri}),
                    "{what}"
                );
                let details = asked[0]["details"].as_str().unwrap();
                assert!(
                    details.starts_with(&format!(
                        "The MCP server \"files\" reads its resource {key_uri}, and the model \
                         gets what it returns"
                    )),
                    "{what}: {details}"
                );
                assert!(
                    told[0].starts_with("Not run: this call needs the user's approval"),
                    "{what}: {told:?}"
                );
            }
        }
    }

    // The user's own mention of the key is theirs to make: attached without asking.
    let model_server = ModelServer::start().await;
    model_server.respond_with(|_| Reply::openai_text("Noted."));
    let mut settings = scripted_user_settings(&model_server, json!({}));
    settings["mcpServers"] = json!({"files": {"command": "node", "args": [probe, "files"]}});
    let setup = Setup::with_settings(settings, &[]);
    let run = setup
        .ask(&format!("Check @files:{key_uri}"), &["--json"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(calls_with_status(&run, "awaitingApproval").is_empty());
    let sent = model_server.chat_requests()[0]["messages"].to_string();
    assert!(sent.contains(KEY), "{sent}");
}
