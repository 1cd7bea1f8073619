//! The agent over real HTTP: a session whose model is the scripted model server, with the real
//! tools in a temporary workspace. What the server receives after a cancelled turn proves the
//! history stayed valid: every tool call of the cancelled turn is answered.

use serde_json::json;
use tandem_agent::tools::{self, ToolContext};
use tandem_agent::{
    AgentConfig, ApprovalMode, ApprovalPolicy, Event, Session, StopReason, ToolCallStatus, TurnIo,
};
use tandem_providers::{ApiKey, CancellationToken, Model, ModelConfig, ProviderKind};
use tandem_test_support::{ModelServer, Reply};
use tokio::sync::mpsc;

#[tokio::test]
async fn after_a_cancelled_tool_the_next_request_answers_every_call() {
    let server = ModelServer::start().await;
    server.push(Reply::openai_tool_calls(&[
        ("call_read", "read_file", json!({"path": "a.txt"})),
        ("call_sleep", "shell", json!({"command": "sleep 30"})),
    ]));
    server.push(Reply::openai_text("Stopped as asked."));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let mut config = ModelConfig::new(
        ProviderKind::OpenAi,
        "test-model",
        format!("{}/v1", server.url()),
    );
    config.api_key = Some(ApiKey::new("sk-test"));
    let ctx = ToolContext::on_disk(vec![dir.path().to_owned()]);
    let agent_config = AgentConfig {
        approval: ApprovalPolicy {
            mode: ApprovalMode::Yolo,
            ..ApprovalPolicy::default()
        },
        ..AgentConfig::default()
    };
    let mut session = Session::new(Model::new(config).unwrap(), tools::all(), ctx, agent_config);

    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (_approvals_tx, mut approvals) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    // Cancel once the shell command is running.
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            if let Event::ToolCall(update) = &event {
                if update.call_id == "call_sleep" && update.status == ToolCallStatus::Executing {
                    trigger.cancel();
                }
            }
            seen.push(event);
        }
        seen
    });
    let mut io = TurnIo {
        events: &events_tx,
        approvals: &mut approvals,
        cancel,
    };
    let started = std::time::Instant::now();
    let reason = session
        .run_turn(tandem_agent::Prompt::text("Read a.txt, then wait"), &mut io)
        .await;
    assert_eq!(reason, StopReason::Cancelled);
    assert!(
        started.elapsed().as_secs() < 20,
        "the sleep was not cut short"
    );

    let mut io = TurnIo {
        events: &events_tx,
        approvals: &mut approvals,
        cancel: CancellationToken::new(),
    };
    assert_eq!(
        session
            .run_turn(tandem_agent::Prompt::text("Stop there."), &mut io)
            .await,
        StopReason::EndTurn
    );
    drop(io);
    drop(events_tx);
    let seen = watcher.await.unwrap();
    assert!(seen.contains(&Event::TextChunk {
        text: "Stopped as asked.".into()
    }));

    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "user"],
        "{second:#}"
    );
    assert_eq!(messages[2]["tool_call_id"], "call_read");
    assert!(
        messages[2]["content"].as_str().unwrap().contains("hello"),
        "{second:#}"
    );
    assert_eq!(messages[3]["tool_call_id"], "call_sleep");
    // The shell stopped its command itself and said so, with the output it had.
    let cancelled = messages[3]["content"].as_str().unwrap();
    assert!(cancelled.starts_with("Error: $ sleep 30"), "{cancelled}");
    assert!(
        cancelled.contains("cancelled by the user after"),
        "{cancelled}"
    );
    // The prompt alone: the approval mode was said once, with the first prompt, and stays there.
    assert_eq!(messages[4]["content"], "Stop there.", "{second:#}");
    let first = messages[0]["content"].as_str().unwrap();
    assert!(
        first.contains("<system-reminder>\nApproval mode: yolo"),
        "{first}"
    );
}
