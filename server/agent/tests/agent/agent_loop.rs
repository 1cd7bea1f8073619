//! The agent loop driven by scripted model turns (the `replay` provider) and scripted tools:
//! tool round trips, parallel and sequential execution, validation, approvals in every mode,
//! cancellation mid-stream and mid-tool, max turns, both loop detections, panics and bugs in
//! tools. After every turn the history must be valid: each tool call answered, in order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tandem_agent::approval::Rule;
use tandem_agent::tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use tandem_agent::{
    AgentConfig, ApprovalDecision, ApprovalMode, ApprovalPolicy, Event, Session, StopReason,
    ToolCallStatus, TurnIo,
};
use tandem_providers::{CancellationToken, Message, Model, ModelConfig, Part, ProviderKind, Role};
use tokio::sync::{mpsc, Barrier};

type Behaviour = Arc<
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync,
>;

/// A tool whose behaviour the test decides.
struct Scripted {
    name: &'static str,
    mutates: bool,
    behaviour: Behaviour,
}

impl Tool for Scripted {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "A scripted tool for tests."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false})
    }
    fn kind(&self) -> ToolKind {
        if self.mutates {
            ToolKind::Edit
        } else {
            ToolKind::Read
        }
    }
    fn mutates(&self) -> bool {
        self.mutates
    }
    fn paths_written(&self, _args: &Value, _ctx: &ToolContext) -> Vec<String> {
        Vec::new()
    }
    fn title(&self, args: &Value) -> String {
        format!("{} {}", self.name, args["path"].as_str().unwrap_or("?"))
    }
    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (self.behaviour)(args, ctx.clone())
    }
}

fn tool(name: &'static str, mutates: bool, behaviour: Behaviour) -> Arc<dyn Tool> {
    Arc::new(Scripted {
        name,
        mutates,
        behaviour,
    })
}

/// A tool that answers `<name> <path>`.
fn echo(name: &'static str, mutates: bool) -> Arc<dyn Tool> {
    tool(
        name,
        mutates,
        Arc::new(move |args, _| {
            Box::pin(async move {
                Ok(ToolOutput::text(format!(
                    "{name} {}",
                    args["path"].as_str().unwrap_or("")
                )))
            })
        }),
    )
}

struct Harness {
    _dir: tempfile::TempDir,
    session: Session,
    events_tx: mpsc::UnboundedSender<Event>,
    events: mpsc::UnboundedReceiver<Event>,
    approvals_tx: mpsc::UnboundedSender<(String, ApprovalDecision)>,
    approvals: mpsc::UnboundedReceiver<(String, ApprovalDecision)>,
}

fn harness(script: &str, tools: Vec<Arc<dyn Tool>>, config: AgentConfig) -> Harness {
    harness_with(script, tools, config, |_| {})
}

/// `harness`, with the model's configuration adjusted by `model`.
fn harness_with(
    script: &str,
    tools: Vec<Arc<dyn Tool>>,
    config: AgentConfig,
    model: impl FnOnce(&mut ModelConfig),
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let script_path = dir.path().join("script.jsonl");
    std::fs::write(&script_path, script).unwrap();
    let mut model_config = ModelConfig::new(ProviderKind::Replay, "replay", "");
    model_config.script = Some(script_path);
    model_config.idle_timeout = Duration::from_secs(30);
    model(&mut model_config);
    let ctx = ToolContext::on_disk(vec![dir.path().to_owned()]);
    let session = Session::new(Model::new(model_config).unwrap(), tools, ctx, config);
    let (events_tx, events) = mpsc::unbounded_channel();
    let (approvals_tx, approvals) = mpsc::unbounded_channel();
    Harness {
        _dir: dir,
        session,
        events_tx,
        events,
        approvals_tx,
        approvals,
    }
}

fn yolo() -> AgentConfig {
    AgentConfig {
        approval: ApprovalPolicy {
            mode: ApprovalMode::Yolo,
            ..ApprovalPolicy::default()
        },
        ..AgentConfig::default()
    }
}

impl Harness {
    async fn turn(&mut self, prompt: &str) -> StopReason {
        self.turn_with(prompt, CancellationToken::new()).await
    }

    async fn turn_with(&mut self, prompt: &str, cancel: CancellationToken) -> StopReason {
        let mut io = TurnIo {
            events: &self.events_tx,
            approvals: &mut self.approvals,
            cancel,
        };
        let reason = tokio::time::timeout(
            Duration::from_secs(10),
            self.session
                .run_turn(tandem_agent::Prompt::text(prompt), &mut io),
        )
        .await
        .expect("the turn did not end");
        assert_valid_history(self.session.history());
        reason
    }

    fn drain(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Ok(event) = self.events.try_recv() {
            events.push(event);
        }
        events
    }

    /// The statuses each call went through, by call id.
    fn statuses(events: &[Event]) -> Vec<(String, ToolCallStatus)> {
        events
            .iter()
            .filter_map(|event| match event {
                Event::ToolCall(update) => Some((update.call_id.clone(), update.status)),
                _ => None,
            })
            .collect()
    }

    fn results(&self) -> Vec<(String, String, bool)> {
        self.session
            .history()
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some((
                    result.call_id.clone(),
                    result.content.clone(),
                    result.is_error,
                )),
                _ => None,
            })
            .collect()
    }
}

/// Every assistant tool call is answered by the next message, in order, and roles alternate.
fn assert_valid_history(history: &[Message]) {
    for (index, message) in history.iter().enumerate() {
        let calls: Vec<&str> = message.tool_calls().map(|call| call.id.as_str()).collect();
        if calls.is_empty() {
            continue;
        }
        assert_eq!(message.role, Role::Assistant);
        let next = history
            .get(index + 1)
            .unwrap_or_else(|| panic!("calls {calls:?} have no results:\n{history:#?}"));
        let answered: Vec<&str> = next
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some(result.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(answered, calls, "{history:#?}");
    }
    for pair in history.windows(2) {
        assert_ne!(
            pair[0].role, pair[1].role,
            "roles must alternate:\n{history:#?}"
        );
    }
}

#[tokio::test]
async fn a_text_answer_ends_the_turn() {
    let mut h = harness(r#"{"text": ["Hello", ", world"]}"#, vec![], yolo());
    assert_eq!(h.turn("hi").await, StopReason::EndTurn);
    let events = h.drain();
    assert_eq!(
        events[0],
        Event::TextChunk {
            text: "Hello".into()
        }
    );
    assert_eq!(
        events.last(),
        Some(&Event::TurnFinished {
            stop_reason: StopReason::EndTurn,
            message: None
        })
    );
    assert_eq!(h.session.history().len(), 2);
}

#[tokio::test]
async fn tool_results_go_back_to_the_model_until_it_answers() {
    let script = concat!(
        r#"{"text": "Reading.", "toolCalls": [{"id": "a", "name": "read", "arguments": {"path": "x"}}]}"#,
        "\n",
        r#"{"text": "Done."}"#,
    );
    let mut h = harness(script, vec![echo("read", false)], yolo());
    assert_eq!(h.turn("go").await, StopReason::EndTurn);
    assert_eq!(h.results(), vec![("a".into(), "read x".into(), false)]);
    let statuses = Harness::statuses(&h.drain());
    use ToolCallStatus::*;
    assert_eq!(
        statuses.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        vec![Validating, Scheduled, Executing, Success]
    );
    assert_eq!(h.session.history().len(), 4);
}

/// A tool that sizes nothing to the window (an MCP server's, a long listing) still cannot
/// hand the model more than its share of it: the output keeps its head and tail.
#[tokio::test]
async fn an_output_larger_than_the_window_leaves_is_shortened_before_the_model_sees_it() {
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "dump", "arguments": {"path": "x"}}]}"#,
        "\n",
        r#"{"text": "Done."}"#,
    );
    let huge: String = (1..=5000).map(|n| format!("line {n}\n")).collect();
    let dump = tool(
        "dump",
        false,
        Arc::new(move |_, _| {
            let huge = huge.clone();
            Box::pin(async move { Ok(ToolOutput::text(huge)) })
        }),
    );
    let mut h = harness_with(script, vec![dump], yolo(), |model| {
        model.context_window = 4_000;
    });
    assert_eq!(h.turn("go").await, StopReason::EndTurn);
    let (_, output, _) = h.results().remove(0);
    // Half of what a 4,000-token window leaves after the answer's room, at four bytes a token.
    assert!(output.len() < 6_500, "{}", output.len());
    assert!(output.starts_with("line 1\nline 2\n"), "{output}");
    assert!(output.ends_with("line 5000\n"), "{output}");
    assert!(
        output.contains(
            "(48893 bytes, 5000 lines in all) is left out here to fit the context window"
        ),
        "{output}"
    );
}

/// A long-running call's reports (an MCP server's progress notifications) reach the front end
/// as executing updates carrying the latest message, before the call's result.
#[tokio::test]
async fn progress_a_tool_reports_is_sent_as_executing_updates() {
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "slow", "arguments": {"path": "x"}}]}"#,
        "\n",
        r#"{"text": "Done."}"#,
    );
    let slow = tool(
        "slow",
        false,
        Arc::new(|_, ctx: ToolContext| {
            Box::pin(async move {
                let progress = ctx
                    .progress
                    .expect("the session gives every call a progress sink");
                progress("step 1 of 2".to_owned());
                progress("step 2 of 2".to_owned());
                Ok(ToolOutput::text("finished"))
            })
        }),
    );
    let mut h = harness(script, vec![slow], yolo());
    assert_eq!(h.turn("go").await, StopReason::EndTurn);
    let updates: Vec<(ToolCallStatus, Option<String>)> = h
        .drain()
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolCall(update) => Some((update.status, update.progress)),
            _ => None,
        })
        .skip_while(|(status, _)| *status != ToolCallStatus::Executing)
        .collect();
    use ToolCallStatus::*;
    assert_eq!(
        updates,
        vec![
            (Executing, None),
            (Executing, Some("step 1 of 2".into())),
            (Executing, Some("step 2 of 2".into())),
            (Success, None),
        ]
    );
}

#[tokio::test]
async fn read_only_calls_run_concurrently() {
    // Each call waits until both are running: run one at a time, they would never finish.
    let barrier = Arc::new(Barrier::new(2));
    let waiting = tool(
        "read",
        false,
        Arc::new(move |_, _| {
            let barrier = Arc::clone(&barrier);
            Box::pin(async move {
                match tokio::time::timeout(Duration::from_secs(5), barrier.wait()).await {
                    Ok(_) => Ok(ToolOutput::text("met")),
                    Err(_) => Err(ToolError::Respond("ran alone".into())),
                }
            })
        }),
    );
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "read", "arguments": {"path": "1"}}, {"id": "b", "name": "read", "arguments": {"path": "2"}}]}"#,
        "\n",
        r#"{"text": "ok"}"#,
    );
    let mut h = harness(script, vec![waiting], yolo());
    h.turn("go").await;
    assert_eq!(
        h.results(),
        vec![
            ("a".into(), "met".into(), false),
            ("b".into(), "met".into(), false)
        ]
    );
}

#[tokio::test]
async fn mutating_calls_run_one_at_a_time_in_order() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let writer = {
        let log = Arc::clone(&log);
        tool(
            "write",
            true,
            Arc::new(move |args, _| {
                let log = Arc::clone(&log);
                let running = Arc::clone(&running);
                Box::pin(async move {
                    assert_eq!(
                        running.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two writes at once"
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    log.lock()
                        .unwrap()
                        .push(args["path"].as_str().unwrap().to_owned());
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(ToolOutput::text("written"))
                })
            }),
        )
    };
    let calls: Vec<String> = (1..=3)
        .map(|i| format!(r#"{{"id": "w{i}", "name": "write", "arguments": {{"path": "{i}"}}}}"#))
        .collect();
    let script = format!(
        "{{\"toolCalls\": [{}]}}\n{{\"text\": \"ok\"}}",
        calls.join(", ")
    );
    let mut h = harness(&script, vec![writer], yolo());
    h.turn("go").await;
    assert_eq!(*log.lock().unwrap(), vec!["1", "2", "3"]);
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_go_back_to_the_model() {
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "read", "arguments": {"pth": "x"}}, {"id": "b", "name": "nope", "arguments": {}}]}"#,
        "\n",
        r#"{"text": "sorry"}"#,
    );
    let mut h = harness(script, vec![echo("read", false)], yolo());
    assert_eq!(h.turn("go").await, StopReason::EndTurn);
    let results = h.results();
    assert!(
        results[0].1.starts_with("invalid arguments for read:"),
        "{results:?}"
    );
    assert!(
        results[0].1.contains("\"path\" is a required property"),
        "{results:?}"
    );
    assert_eq!(
        results[1].1,
        "there is no tool named `nope`; the tools are: read"
    );
    assert!(results.iter().all(|(_, _, is_error)| *is_error));
}

fn write_call(id: &str) -> String {
    format!(r#"{{"toolCalls": [{{"id": "{id}", "name": "write", "arguments": {{"path": "f"}}}}]}}"#)
}

/// Runs a turn where the model makes one `write` call, answering the approval prompt (if one
/// comes) with `decision`. Returns whether a prompt came and the result the model got.
async fn approval_case(config: AgentConfig, decision: Option<ApprovalDecision>) -> (bool, String) {
    let script = format!("{}\n{{\"text\": \"ok\"}}", write_call("w"));
    let mut h = harness(&script, vec![echo("write", true)], config);
    let events_tx = h.events_tx.clone();
    let (watch_tx, mut watch) = mpsc::unbounded_channel();
    h.events_tx = watch_tx;
    let approvals = h.approvals_tx.clone();
    let forward = tokio::spawn(async move {
        let mut asked = false;
        while let Some(event) = watch.recv().await {
            if let Event::ToolCall(update) = &event {
                if update.status == ToolCallStatus::AwaitingApproval {
                    asked = true;
                    if let Some(decision) = &decision {
                        approvals
                            .send((update.call_id.clone(), decision.clone()))
                            .unwrap();
                    }
                }
            }
            let _ = events_tx.send(event);
        }
        asked
    });
    h.turn("go").await;
    let result = h.results()[0].1.clone();
    drop(h);
    (forward.await.unwrap(), result)
}

#[tokio::test]
async fn approvals_in_every_mode() {
    let mode = |mode| AgentConfig {
        approval: ApprovalPolicy {
            mode,
            ..ApprovalPolicy::default()
        },
        ..AgentConfig::default()
    };
    assert_eq!(
        approval_case(
            mode(ApprovalMode::Default),
            Some(ApprovalDecision::AllowOnce)
        )
        .await,
        (true, "write f".into())
    );
    assert_eq!(
        approval_case(mode(ApprovalMode::AutoEdit), None).await,
        (false, "write f".into())
    );
    assert_eq!(
        approval_case(mode(ApprovalMode::Yolo), None).await,
        (false, "write f".into())
    );
    let (asked, result) = approval_case(
        mode(ApprovalMode::Default),
        Some(ApprovalDecision::Reject {
            feedback: Some("use a branch".into()),
        }),
    )
    .await;
    assert!(asked);
    assert_eq!(
        result,
        "The user rejected this call and said: use a branch. Do not retry it as it was."
    );
    let denied = AgentConfig {
        approval: ApprovalPolicy {
            mode: ApprovalMode::Yolo,
            deny: vec![Rule("write".into())],
            ..ApprovalPolicy::default()
        },
        ..AgentConfig::default()
    };
    let (asked, result) = approval_case(denied, None).await;
    assert!(!asked);
    assert!(
        result.starts_with(
            "The user's settings refuse this call (denied by the rule `write` in the settings)"
        ),
        "{result}"
    );
    let allowed = AgentConfig {
        approval: ApprovalPolicy {
            allow: vec![Rule("write".into())],
            ..ApprovalPolicy::default()
        },
        ..AgentConfig::default()
    };
    assert_eq!(
        approval_case(allowed, None).await,
        (false, "write f".into())
    );
}

#[tokio::test]
async fn deny_rules_apply_to_read_only_tools_too() {
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "read", "arguments": {"path": "secret"}}]}"#,
        "\n",
        r#"{"text": "ok"}"#,
    );
    let config = AgentConfig {
        approval: ApprovalPolicy {
            deny: vec![Rule("read".into())],
            ..ApprovalPolicy::default()
        },
        ..AgentConfig::default()
    };
    let mut h = harness(script, vec![echo("read", false)], config);
    h.turn("go").await;
    let result = &h.results()[0];
    assert!(
        result.1.starts_with("The user's settings refuse this call"),
        "{result:?}"
    );
    use ToolCallStatus::*;
    let statuses: Vec<_> = Harness::statuses(&h.drain())
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(statuses, vec![Validating, Scheduled, Error]);
}

#[tokio::test]
async fn allow_always_stops_asking_for_the_session() {
    let script = format!(
        "{}\n{}\n{{\"text\": \"ok\"}}",
        write_call("w1"),
        write_call("w2")
    );
    let mut h = harness(&script, vec![echo("write", true)], AgentConfig::default());
    let approvals = h.approvals_tx.clone();
    // Approve the first prompt "always" before the turn starts: it is read when the prompt comes.
    approvals
        .send(("w1".into(), ApprovalDecision::AllowAlways))
        .unwrap();
    h.turn("go").await;
    let prompts = Harness::statuses(&h.drain())
        .into_iter()
        .filter(|(_, s)| *s == ToolCallStatus::AwaitingApproval)
        .count();
    assert_eq!(prompts, 1);
    assert_eq!(h.results().len(), 2);
}

#[tokio::test]
async fn reject_always_refuses_calls_like_it_for_the_session_without_asking() {
    let script = format!(
        "{}\n{}\n{{\"text\": \"ok\"}}",
        write_call("w1"),
        write_call("w2")
    );
    let mut h = harness(&script, vec![echo("write", true)], AgentConfig::default());
    h.approvals_tx
        .send((
            "w1".into(),
            ApprovalDecision::RejectAlways { feedback: None },
        ))
        .unwrap();
    h.turn("go").await;
    let prompts = Harness::statuses(&h.drain())
        .into_iter()
        .filter(|(_, s)| *s == ToolCallStatus::AwaitingApproval)
        .count();
    assert_eq!(prompts, 1);
    let results = h.results();
    assert_eq!(results.len(), 2);
    assert!(
        results[0].1.starts_with("The user rejected this call."),
        "{results:?}"
    );
    assert!(
        results[1]
            .1
            .starts_with("The user refused calls like this one for the rest of the session."),
        "{results:?}"
    );
    assert!(
        results.iter().all(|(_, _, is_error)| *is_error),
        "{results:?}"
    );
}

#[tokio::test]
async fn cancelling_mid_tool_answers_every_call() {
    let started = Arc::new(tokio::sync::Notify::new());
    let forever = {
        let started = Arc::clone(&started);
        tool(
            "read",
            false,
            Arc::new(move |_, _| {
                let started = Arc::clone(&started);
                Box::pin(async move {
                    started.notify_one();
                    futures::future::pending::<()>().await;
                    Ok(ToolOutput::text("never"))
                })
            }),
        )
    };
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "read", "arguments": {"path": "1"}}, {"id": "b", "name": "write", "arguments": {"path": "2"}}]}"#,
        "\n",
        r#"{"text": "after cancel"}"#,
    );
    let mut h = harness(script, vec![forever, echo("write", true)], yolo());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        started.notified().await;
        trigger.cancel();
    });
    assert_eq!(h.turn_with("go", cancel).await, StopReason::Cancelled);
    assert_eq!(
        h.results(),
        vec![
            (
                "a".into(),
                "cancelled by the user while it ran".into(),
                true
            ),
            (
                "b".into(),
                "cancelled by the user before it ran".into(),
                true
            ),
        ]
    );
    // The session goes on: the next prompt sees a valid history.
    assert_eq!(h.turn("again").await, StopReason::EndTurn);
}

#[tokio::test]
async fn cancelling_mid_stream_keeps_the_partial_answer() {
    let script = r#"{"text": ["Part one. ", "Part two."], "delayMs": 300}"#;
    let mut h = harness(script, vec![], yolo());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let forward_to = h.events_tx.clone();
    h.events_tx = tx;
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if matches!(event, Event::TextChunk { .. }) {
                trigger.cancel();
            }
            let _ = forward_to.send(event);
        }
    });
    assert_eq!(h.turn_with("go", cancel).await, StopReason::Cancelled);
    let history = h.session.history();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].text(), "Part one. ");
}

#[tokio::test]
async fn max_turns_stops_the_turn() {
    let line = r#"{"toolCalls": [{"name": "read", "arguments": {"path": "x"}}]}"#;
    let script = [line, line, line].join("\n");
    let config = AgentConfig {
        max_turns: 2,
        ..yolo()
    };
    let mut h = harness(&script, vec![echo("read", false)], config);
    assert_eq!(h.turn("go").await, StopReason::MaxTurns);
    assert_eq!(h.results().len(), 2);
}

/// The message the turn ended with (its last event, `TurnFinished`).
fn finished_message(events: &[Event]) -> &str {
    match events.last() {
        Some(Event::TurnFinished {
            message: Some(message),
            ..
        }) => message,
        _ => panic!("the turn did not end with a message: {events:?}"),
    }
}

#[tokio::test]
async fn the_same_call_five_times_in_a_row_is_a_loop() {
    let line = r#"{"toolCalls": [{"name": "read", "arguments": {"path": "same"}}]}"#;
    let script = [line; 6].join("\n");
    let mut h = harness(&script, vec![echo("read", false)], yolo());
    assert_eq!(h.turn("go").await, StopReason::LoopDetected);
    assert_eq!(
        h.results().len(),
        5,
        "four ran, the fifth was answered as not run"
    );
    let events = h.drain();
    let message = finished_message(&events);
    assert!(
        message.contains("called read with the same arguments 5 times in a row"),
        "{message}"
    );
}

#[tokio::test]
async fn repeated_text_is_a_loop() {
    let text = "I will now read the file again to check the code. ".repeat(15);
    let script = serde_json::to_string(&json!({"text": text})).unwrap();
    let mut h = harness(&script, vec![], yolo());
    assert_eq!(h.turn("go").await, StopReason::LoopDetected);
}

/// Regression: loop detection looked only at the answer, so a model stuck in its reasoning
/// streamed it until the connection gave out.
#[tokio::test]
async fn repeated_reasoning_is_a_loop() {
    let thought = "Wait, let me reconsider whether the parser handles this case. ".repeat(15);
    let script = serde_json::to_string(&json!({"thought": thought, "text": "Done."})).unwrap();
    let mut h = harness(&script, vec![], yolo());
    assert_eq!(h.turn("go").await, StopReason::LoopDetected);
    let events = h.drain();
    let message = finished_message(&events);
    assert!(
        message.contains("repeating the same reasoning"),
        "{message}"
    );
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_not_a_dead_agent() {
    let crashing = tool(
        "read",
        false,
        Arc::new(|_, _| Box::pin(async { panic!("index out of bounds") })),
    );
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "read", "arguments": {"path": "x"}}]}"#,
        "\n",
        r#"{"text": "ok"}"#,
    );
    let mut h = harness(script, vec![crashing], yolo());
    assert_eq!(h.turn("go").await, StopReason::EndTurn);
    assert_eq!(
        h.results()[0].1,
        "the read tool crashed (index out of bounds); this is a bug in Tandem, not in your call"
    );
}

#[tokio::test]
async fn a_fatal_tool_error_ends_the_turn_with_an_error() {
    let broken = tool(
        "read",
        false,
        Arc::new(|_, _| Box::pin(async { Err(ToolError::Fatal("disk on fire".into())) })),
    );
    let script = concat!(
        r#"{"toolCalls": [{"id": "a", "name": "read", "arguments": {"path": "x"}}]}"#,
        "\n",
        r#"{"text": "never"}"#,
    );
    let mut h = harness(script, vec![broken], yolo());
    assert_eq!(h.turn("go").await, StopReason::Error);
}

#[tokio::test]
async fn a_model_error_ends_the_turn_and_says_why() {
    let script = r#"{"error": {"kind": "authentication", "message": "bad key"}}"#;
    let mut h = harness(script, vec![], yolo());
    assert_eq!(h.turn("go").await, StopReason::Error);
    let events = h.drain();
    assert_eq!(
        events.last(),
        Some(&Event::TurnFinished {
            stop_reason: StopReason::Error,
            message: Some("authentication failed: bad key".into())
        })
    );
    assert_eq!(h.session.history().len(), 1);
    assert_eq!(h.session.history()[0].role, Role::User);
}

/// Regression: nothing bounded a response, so a model thinking without end grew the server
/// (151 to 497 MB in 20 s). The providers now stop it at a cap; the turn ends saying which, the
/// runaway text is not kept, and the request is not retried.
#[tokio::test]
async fn a_response_past_its_cap_ends_the_turn_with_response_limit() {
    let script = concat!(
        r#"{"thought": "Let me think about this very carefully.", "error": {"kind": "response_limit_exceeded", "message": "65536 bytes"}}"#,
        "\n",
        r#"{"text": "never sent"}"#,
    );
    let mut h = harness(script, vec![], yolo());
    assert_eq!(h.turn("go").await, StopReason::ResponseLimit);
    let events = h.drain();
    let message = finished_message(&events);
    assert!(message.contains("network.maxResponseBytes"), "{message}");
    assert!(!events
        .iter()
        .any(|event| matches!(event, Event::Retrying { .. })));
    assert_eq!(h.session.history().len(), 1, "only the prompt is kept");
}

#[tokio::test]
async fn a_file_changed_after_the_model_read_it_is_named_in_the_next_reminder() {
    // A command the model runs changes the file it read, as a formatter or a script would.
    let touch = tool(
        "touch",
        true,
        Arc::new(|args, ctx| {
            Box::pin(async move {
                let path = ctx.workspace.resolve(args["path"].as_str().unwrap())?;
                std::fs::write(path, "changed by a command, longer than before\n").unwrap();
                Ok(ToolOutput::text("touched"))
            })
        }),
    );
    let script = [
        r#"{"toolCalls": [{"id": "r", "name": "read_file", "arguments": {"path": "notes.txt"}}]}"#,
        r#"{"toolCalls": [{"id": "t", "name": "touch", "arguments": {"path": "notes.txt"}}]}"#,
        r#"{"toolCalls": [{"id": "e", "name": "echo", "arguments": {"path": "x"}}]}"#,
        r#"{"text": "done"}"#,
    ]
    .join("\n");
    let tools = vec![
        Arc::new(tandem_agent::tools::read_file::ReadFile) as Arc<dyn Tool>,
        touch,
        echo("echo", false),
    ];
    let mut h = harness(&script, tools, yolo());
    let root = h.session.tool_context().workspace.roots()[0].clone();
    std::fs::write(root.join("notes.txt"), "as read\n").unwrap();
    assert_eq!(h.turn("go").await, StopReason::EndTurn);

    // The reminder went out once, with the result of the command that changed the file, and
    // stays in the history where it was sent: later requests repeat it, never resend it.
    let history = h.session.history().to_vec();
    let naming: Vec<usize> = (0..history.len())
        .filter(|&index| {
            let text = serde_json::to_string(&history[index]).unwrap();
            text.contains("<system-reminder>") && text.contains("notes.txt")
        })
        .collect();
    assert_eq!(naming, [4], "{history:#?}");
    // A new history (after a compression) is told again.
    let mut asking = history.clone();
    asking.push(Message::user("next"));
    h.session.replace_history(asking);
    let request = h.session.next_request();
    let Some(Part::Text { text }) = request.messages.last().unwrap().parts.last() else {
        panic!("{request:#?}");
    };
    assert!(text.starts_with("<system-reminder>"), "{text}");
    assert!(text.contains("notes.txt"), "{text}");
}

/// The user was asked to approve an edit they could not see: the diff came only after it ran.
#[tokio::test]
async fn an_edit_awaiting_approval_shows_its_diff() {
    let script = concat!(
        r#"{"toolCalls": [{"id": "e", "name": "edit", "arguments": {"path": "notes.txt", "old_string": "two", "new_string": "TWO"}}]}"#,
        "\n",
        r#"{"text": "ok"}"#,
    );
    let tools = vec![Arc::new(tandem_agent::tools::edit::Edit) as Arc<dyn Tool>];
    let mut h = harness(script, tools, AgentConfig::default());
    let root = h.session.tool_context().workspace.roots()[0].clone();
    let path = root.join("notes.txt");
    std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
    h.session.tool_context().session.mark_read(&path);
    // Read when the prompt comes, before anything is written.
    h.approvals_tx
        .send(("e".into(), ApprovalDecision::AllowOnce))
        .unwrap();
    assert_eq!(h.turn("go").await, StopReason::EndTurn);

    let updates: Vec<_> = h
        .drain()
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolCall(update) => Some(update),
            _ => None,
        })
        .collect();
    let asked = updates
        .iter()
        .find(|update| update.status == ToolCallStatus::AwaitingApproval)
        .expect("no approval prompt");
    let diff = asked.diff.as_ref().expect("the prompt carries no diff");
    assert_eq!(diff.path, path);
    assert_eq!(diff.old_text.as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(diff.new_text, "one\nTWO\nthree\n");
    assert_eq!(asked.locations.len(), 1);
    assert_eq!(asked.locations[0].path, path);
    assert_eq!(asked.locations[0].line, Some(2));
    let done = updates
        .iter()
        .find(|update| update.status == ToolCallStatus::Success)
        .expect("the edit did not succeed");
    assert_eq!(done.diff, asked.diff, "approved one change, made another");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\nTWO\nthree\n");
}
