//! Slash commands and @-mentions in a session, driven by replay scripts with the real tools:
//! the built-ins Tandem answers itself, `/init`, custom commands from Gemini CLI's and Claude
//! Code's formats whose `!{…}` run through the approval policy (allowed, refused) and whose
//! `@{…}`, `@path` and arguments end up in what the model receives, and files mentioned in a
//! plain prompt attached and counted as read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Duration;

use tandem_agent::slash::CommandDirs;
use tandem_agent::tools::{self, ToolContext};
use tandem_agent::{
    AgentConfig, ApprovalDecision, ApprovalMode, ApprovalPolicy, Event, Prompt, Session,
    StopReason, ToolCallStatus, TurnIo,
};
use tandem_providers::{CancellationToken, Model, ModelConfig, Part, ProviderKind, Role};
use tokio::sync::mpsc;

struct Harness {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
    session: Session,
}

/// A session over a workspace of `files` (paths relative to the root; `~/` for the user's
/// configuration directory), whose model answers every prompt with "ok", in `mode`.
fn harness(files: &[(&str, &str)], mode: ApprovalMode) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (root, user) = (base.join("ws"), base.join("config"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&user).unwrap();
    for (path, text) in files {
        let path = match path.strip_prefix("~/") {
            Some(rest) => user.join(rest),
            None => root.join(path),
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let script = base.join("script.jsonl");
    std::fs::write(&script, "{\"text\": \"ok\"}\n".repeat(10)).unwrap();
    let mut model = ModelConfig::new(ProviderKind::Replay, "replay", "");
    model.script = Some(script);
    model.idle_timeout = Duration::from_secs(30);
    let ctx = ToolContext {
        user_memory_file: Some(user.join("AGENTS.md")),
        ..ToolContext::on_disk(vec![root.clone()])
    };
    let config = AgentConfig {
        approval: ApprovalPolicy {
            mode,
            ..ApprovalPolicy::default()
        },
        command_dirs: CommandDirs::standard(None, Some(&user), Some(&root)),
        ..AgentConfig::default()
    };
    let session = Session::new(Model::new(model).unwrap(), tools::all(), ctx, config);
    Harness {
        _dir: dir,
        root,
        user,
        session,
    }
}

/// Runs `text`, answering every approval question with `answer`; returns how it ended and its
/// events.
async fn turn(
    session: &mut Session,
    text: &str,
    answer: Option<ApprovalDecision>,
) -> (StopReason, Vec<Event>) {
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let (approve_tx, mut approvals) = mpsc::unbounded_channel();
    let mut io = TurnIo {
        events: &events_tx,
        approvals: &mut approvals,
        cancel: CancellationToken::new(),
    };
    let mut received = Vec::new();
    let reason = {
        let mut run = std::pin::pin!(session.run_turn(Prompt::text(text), &mut io));
        loop {
            tokio::select! {
                reason = &mut run => break reason,
                Some(event) = events_rx.recv() => {
                    if let (Event::ToolCall(update), Some(answer)) = (&event, &answer) {
                        if update.status == ToolCallStatus::AwaitingApproval {
                            approve_tx.send((update.call_id.clone(), answer.clone())).unwrap();
                        }
                    }
                    received.push(event);
                }
            }
        }
    };
    drop(io);
    drop(events_tx);
    while let Ok(event) = events_rx.try_recv() {
        received.push(event);
    }
    (reason, received)
}

fn answer_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TextChunk { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The texts of the first user message the model received.
fn prompt_sent(session: &Session) -> String {
    let message = session
        .history()
        .iter()
        .find(|message| message.role == Role::User)
        .expect("no user message");
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn help_lists_built_in_and_custom_commands_without_asking_the_model() {
    let mut h = harness(
        &[
            (
                ".tandem/commands/git/commit.toml",
                "description = \"Commit the staged changes\"\nprompt = \"Commit: {{args}}\"\n",
            ),
            (
                "~/commands/review.md",
                "---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $1.\n",
            ),
            (".tandem/commands/broken.toml", "prompt = \n"),
        ],
        ApprovalMode::Default,
    );
    let (reason, events) = turn(&mut h.session, "/help", None).await;
    assert_eq!(reason, StopReason::EndTurn);
    let help = answer_text(&events);
    for expected in [
        "/help",
        "/init",
        "/memory show | add <text> | reload",
        "/clear",
        "/compress",
        "/restore [turn]",
        "/git:commit",
        "Commit the staged changes",
        "/review <path>",
        "Review a file",
        "broken.toml",
    ] {
        assert!(help.contains(expected), "{expected:?} is not in:\n{help}");
    }
    assert!(h.session.history().is_empty(), "the model was asked");
    assert!(h.session.answers_itself("/help"));
    assert!(!h.session.answers_itself("/git:commit x"));
    assert!(!h.session.answers_itself("/usr/bin/ls is slow"));
}

#[tokio::test]
async fn a_gemini_command_runs_its_shell_blocks_and_injects_files_and_arguments() {
    let mut h = harness(
        &[
            (
                ".gemini/commands/explain.toml",
                "prompt = \"\"\"Branch: !{printf main}\nNotes: @{notes.txt}\nTask: {{args}}\nQuoted: !{printf '%s' {{args}}}\"\"\"\n",
            ),
            ("notes.txt", "remember the tests\n"),
        ],
        ApprovalMode::Yolo,
    );
    let (reason, events) = turn(&mut h.session, "/explain it's $(odd)", None).await;
    assert_eq!(reason, StopReason::EndTurn);
    let sent = prompt_sent(&h.session);
    assert!(sent.contains("Branch: main"), "{sent}");
    assert!(sent.contains("remember the tests"), "{sent}");
    assert!(sent.contains("Task: it's $(odd)"), "{sent}");
    // Inside a shell block the arguments are quoted: printed as typed, not run.
    assert!(sent.contains("Quoted: it's $(odd)"), "{sent}");
    // The command's shell blocks were calls the front end saw.
    let ran: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            Event::ToolCall(update) if update.status == ToolCallStatus::Success => {
                update.raw_input["command"].as_str()
            }
            _ => None,
        })
        .collect();
    assert_eq!(ran.len(), 2, "{events:#?}");
}

#[tokio::test]
async fn a_refused_shell_block_is_said_in_the_prompt_not_dropped() {
    let mut h = harness(
        &[(
            ".claude/commands/status.md",
            "---\ndescription: Summarise the status\n---\nStatus: !`echo secret-status`\nSummarise it.\n",
        )],
        ApprovalMode::Default,
    );
    let reject = ApprovalDecision::Reject { feedback: None };
    let (reason, events) = turn(&mut h.session, "/status", Some(reject)).await;
    assert_eq!(reason, StopReason::EndTurn);
    let sent = prompt_sent(&h.session);
    assert!(!sent.contains("secret-status\n"), "{sent}");
    assert!(sent.contains("was not run"), "{sent}");
    assert!(sent.contains("Summarise it."), "{sent}");
    assert!(events.iter().any(|event| matches!(event,
        Event::ToolCall(update) if update.status == ToolCallStatus::AwaitingApproval)));
}

#[tokio::test]
async fn a_claude_command_fills_positional_arguments_and_attaches_mentioned_files() {
    let mut h = harness(
        &[
            (
                ".claude/commands/fix.md",
                "Fix issue $1 in @src/lib.rs (priority $2).\n",
            ),
            ("src/lib.rs", "pub fn answer() -> u32 { 41 }\n"),
        ],
        ApprovalMode::Default,
    );
    let (reason, _) = turn(&mut h.session, "/fix 42 \"very high\"", None).await;
    assert_eq!(reason, StopReason::EndTurn);
    let sent = prompt_sent(&h.session);
    assert!(
        sent.contains("Fix issue 42 in @src/lib.rs (priority very high)."),
        "{sent}"
    );
    assert!(
        sent.contains("<context label=\"File src/lib.rs\">"),
        "{sent}"
    );
    assert!(sent.contains("pub fn answer() -> u32 { 41 }"), "{sent}");
}

#[tokio::test]
async fn files_mentioned_in_a_prompt_are_attached_and_count_as_read() {
    let mut h = harness(
        &[
            ("src/lib.rs", "pub fn answer() -> u32 { 41 }\n"),
            ("src/util.rs", "pub fn helper() {}\n"),
        ],
        ApprovalMode::Default,
    );
    let (reason, _) = turn(
        &mut h.session,
        "Look at @src/ and @../outside.txt, mail me at a@b.com, \\@ is literal",
        None,
    )
    .await;
    assert_eq!(reason, StopReason::EndTurn);
    let sent = prompt_sent(&h.session);
    assert!(sent.contains("File src/lib.rs"), "{sent}");
    assert!(sent.contains("File src/util.rs"), "{sent}");
    assert!(sent.contains("mail me at a@b.com, @ is literal"), "{sent}");
    // Mentioned files count as read: the model may edit them without reading them first.
    let lib = h.root.join("src/lib.rs");
    assert_eq!(
        h.session
            .tool_context()
            .session
            .freshness(&lib, h.session.tool_context().editor.as_ref()),
        tandem_agent::tools::Freshness::Current
    );
}

#[tokio::test]
async fn clear_starts_a_fresh_conversation_and_init_asks_for_an_agents_file() {
    let mut h = harness(&[], ApprovalMode::Default);
    let (reason, _) = turn(&mut h.session, "hello", None).await;
    assert_eq!(reason, StopReason::EndTurn);
    assert_eq!(h.session.history().len(), 2);
    let (reason, events) = turn(&mut h.session, "/clear", None).await;
    assert_eq!(reason, StopReason::EndTurn);
    assert!(answer_text(&events).contains("Started a fresh conversation"));
    assert!(h.session.history().is_empty());
    let (_, events) = turn(&mut h.session, "/clear now", None).await;
    assert!(
        answer_text(&events).starts_with("Usage: /clear"),
        "{events:?}"
    );

    let (reason, _) = turn(&mut h.session, "/init", None).await;
    assert_eq!(reason, StopReason::EndTurn);
    assert!(prompt_sent(&h.session).contains("write an `AGENTS.md` file"));
}

#[tokio::test]
async fn memory_shows_adds_and_reloads() {
    let mut h = harness(
        &[("AGENTS.md", "Use tabs.\n"), ("~/AGENTS.md", "Be brief.\n")],
        ApprovalMode::Default,
    );
    h.session.set_config(AgentConfig {
        memory: tandem_agent::memory::MemoryConfig {
            user_dir: Some(h.user.clone()),
            ..tandem_agent::memory::MemoryConfig::default()
        },
        ..h.session.config().clone()
    });
    let (_, events) = turn(&mut h.session, "/memory", None).await;
    let shown = answer_text(&events);
    assert!(
        shown.contains("Use tabs.") && shown.contains("Be brief."),
        "{shown}"
    );

    let (_, events) = turn(&mut h.session, "/memory add Run the linter first", None).await;
    assert!(answer_text(&events).contains("AGENTS.md"), "{events:?}");
    let agents = std::fs::read_to_string(h.root.join("AGENTS.md")).unwrap();
    assert!(agents.contains("- Run the linter first"), "{agents}");

    let (_, events) = turn(&mut h.session, "/memory reload", None).await;
    assert!(
        answer_text(&events).starts_with("Reloaded the memory from"),
        "{events:?}"
    );
    assert!(h
        .session
        .config()
        .system_prompt
        .contains("Run the linter first"));
    // The model hears of the new memory with the next prompt.
    let (_, _) = turn(&mut h.session, "go on", None).await;
    assert!(prompt_sent(&h.session).contains("The user added this to the project's memory"));

    let (_, events) = turn(&mut h.session, "/memory forget", None).await;
    assert!(
        answer_text(&events).starts_with("Usage: /memory"),
        "{events:?}"
    );
}
