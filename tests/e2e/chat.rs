//! `tandem chat` in a real terminal (tmux), on the real agent with a replayed or scripted
//! model: a prompt and its streamed answer, each answer to a permission question, an edit's
//! diff, `/` and `@` completion, cancelling a turn, resuming a session; and the chat as lines
//! when its output is not a terminal.

use std::path::Path;

use serde_json::json;
use tandem_test_support::{scripted_settings, ModelServer, Reply};

use super::ask::Setup;
use super::terminal::{quoted, Terminal};

const LIB: &str = "greet() {\n  echo \"Helo, $1!\"\n}\n";

/// `tandem chat ARGS` in the workspace as a shell command line: this setup's settings and
/// state, no colour, and a runtime directory of its own (so no editor's server is attached).
fn chat_command(setup: &Setup, args: &str) -> String {
    let path = |path: &Path| quoted(path.to_str().unwrap());
    let runtime = setup.state.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    format!(
        "cd {} && env -u TANDEM_MODEL -u ANTHROPIC_API_KEY -u GEMINI_API_KEY -u OPENAI_API_KEY \
         NO_COLOR=1 TERM=xterm-256color TANDEM_CONFIG_DIR={} TANDEM_STATE_DIR={} \
         TANDEM_RUNTIME_DIR={} {} --log-file {} chat {args}",
        path(setup.workspace.path()),
        path(setup.config.path()),
        path(setup.state.path()),
        path(&runtime),
        path(Path::new(env!("CARGO_BIN_EXE_tandem"))),
        path(&setup.config.path().join("tandem.log")),
    )
}

/// The chat open and ready for a prompt.
async fn open(setup: &Setup, args: &str) -> Terminal {
    let terminal = Terminal::sized(&chat_command(setup, args), 100, 40);
    terminal.wait_text("ask anything").await;
    terminal
}

async fn prompt(terminal: &Terminal, text: &str) {
    terminal.type_text(text);
    terminal.wait_text(&format!("› {text}")).await;
    terminal.keys(&["Enter"]);
}

#[tokio::test]
async fn the_chat_streams_an_answer_asks_before_an_edit_and_shows_its_diff() {
    let setup = Setup::replay(
        &[
            json!({"text": ["Let me read ", "the greeting."],
                "toolCalls": [{"name": "read_file", "arguments": {"path": "lib.sh"}}]}),
            json!({"toolCalls": [{"name": "edit", "arguments": {
                "path": "lib.sh", "old_string": "echo \"Helo, $1!\"", "new_string": "echo \"Hello, $1!\""
            }}]}),
            json!({"text": ["Fixed ", "the **typo** in `greet`."]}),
        ],
        &[("lib.sh", LIB)],
    );
    // A plain 80×24 terminal holds it all.
    let terminal = Terminal::sized(&chat_command(&setup, ""), 80, 24);
    terminal.wait_text("ask anything").await;
    prompt(&terminal, "fix the typo").await;
    let question = terminal.wait_text("Allow Edit lib.sh?").await;
    // The whole change, and the answers, the safe ones first.
    assert!(question.contains(r#"-  echo "Helo, $1!""#), "{question}");
    assert!(question.contains(r#"+  echo "Hello, $1!""#), "{question}");
    assert!(
        question.contains("1 Reject   2 Reject with feedback   3 Always reject   4 Allow once"),
        "{question}"
    );
    assert_eq!(std::fs::read_to_string(setup.path("lib.sh")).unwrap(), LIB);
    terminal.keys(&["4"]);
    let screen = terminal.wait_text("Fixed the typo in greet.").await;
    for line in [
        "› fix the typo",
        "Let me read the greeting.",
        "✓ Read lib.sh",
        "✓ Edit lib.sh",
        "┌ lib.sh +1 -1",
        r#"│ -   echo "Helo, $1!""#,
        r#"│ +   echo "Hello, $1!""#,
    ] {
        assert!(screen.contains(line), "no {line:?} in\n{screen}");
    }
    assert!(std::fs::read_to_string(setup.path("lib.sh"))
        .unwrap()
        .contains("Hello"));
}

#[tokio::test]
async fn allow_always_is_not_asked_again_and_reject_runs_nothing() {
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "shell", "arguments": {"command": "echo one > one.txt"}}]}),
            json!({"toolCalls": [{"name": "shell", "arguments": {"command": "echo one > one.txt"}}]}),
            json!({"text": "Ran it twice."}),
            json!({"toolCalls": [{"name": "shell", "arguments": {"command": "echo two > two.txt"}}]}),
            json!({"text": "Not run."}),
        ],
        &[],
    );
    let terminal = open(&setup, "").await;
    prompt(&terminal, "run one twice").await;
    let question = terminal.wait_text("Allow Run `echo one > one.txt`?").await;
    assert!(question.contains("echo one > one.txt"), "{question}");
    assert!(
        question.contains("5 Always allow this command"),
        "{question}"
    );
    terminal.keys(&["5"]);
    let screen = terminal.wait_text("Ran it twice.").await;
    assert_eq!(
        screen.matches("✓ Run `echo one > one.txt`").count(),
        2,
        "{screen}"
    );
    prompt(&terminal, "run two").await;
    terminal.wait_text("Allow Run `echo two > two.txt`?").await;
    terminal.keys(&["1"]);
    let screen = terminal.wait_text("Not run.").await;
    assert!(screen.contains("✗ Run `echo two > two.txt`"), "{screen}");
    assert!(setup.path("one.txt").exists());
    assert!(!setup.path("two.txt").exists());
}

#[tokio::test]
async fn rejecting_with_feedback_tells_the_model_why() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_1",
        "shell",
        json!({"command": "rm -rf build"}),
    )]));
    model.push(Reply::openai_text("Understood: the build folder stays."));
    let setup = Setup::with_settings(scripted_settings(&model, json!({})), &[("build/x", "x")]);
    let terminal = open(&setup, "").await;
    prompt(&terminal, "clean up").await;
    terminal.wait_text("Allow Run `rm -rf build`?").await;
    terminal.keys(&["2"]);
    terminal
        .wait_text("What should the agent do instead?")
        .await;
    terminal.type_text("keep the build folder");
    terminal.keys(&["Enter"]);
    terminal
        .wait_text("Understood: the build folder stays.")
        .await;
    assert!(setup.path("build/x").exists());
    let requests = model.chat_requests();
    let told = requests[1].to_string();
    assert!(told.contains("keep the build folder"), "{told}");
}

#[tokio::test]
async fn slash_and_at_complete_in_the_composer() {
    let setup = Setup::replay(&[], &[("lib.sh", LIB), ("src/main.rs", "fn main() {}\n")]);
    let terminal = open(&setup, "").await;
    terminal.type_text("/comp");
    let screen = terminal.wait_text("/compress").await;
    assert!(screen.contains("summary"), "{screen}");
    terminal.keys(&["Tab"]);
    terminal
        .wait_for("the command completed", |screen| {
            screen.contains("› /compress") && !screen.contains("summary")
        })
        .await;
    terminal.keys(&["C-u"]);
    terminal.type_text("look at @mai");
    terminal.wait_text("@src/main.rs").await;
    terminal.keys(&["Tab"]);
    terminal.wait_text("› look at @src/main.rs").await;
}

#[tokio::test]
async fn esc_cancels_the_running_turn() {
    let setup = Setup::replay_with(
        &[json!({"toolCalls": [{"name": "shell", "arguments": {"command": "sleep 30"}}]})],
        json!({"approval": {"mode": "yolo"}}),
        &[],
    );
    let terminal = open(&setup, "").await;
    prompt(&terminal, "wait a while").await;
    terminal.wait_text("running Run `sleep 30`").await;
    terminal.keys(&["Escape"]);
    let screen = terminal.wait_text("cancelled").await;
    assert!(screen.contains("✗ Run `sleep 30`"), "{screen}");
    // The chat takes the next prompt.
    terminal.wait_text("ask anything").await;
}

#[tokio::test]
async fn a_session_is_resumed_with_its_conversation() {
    let setup = Setup::replay(&[json!({"text": "Hello there."})], &[]);
    let terminal = open(&setup, "").await;
    prompt(&terminal, "hi").await;
    terminal.wait_text("Hello there.").await;
    terminal.keys(&["C-c"]);
    terminal.wait_text("press ctrl-c again to quit").await;
    terminal.keys(&["C-c"]);
    let (code, screen) = terminal.wait_exit(false).await;
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("continue it with: tandem chat --resume "),
        "{screen}"
    );
    drop(terminal);

    // The replay model starts its script again in the new process.
    setup.write_script(&[json!({"text": "Still here."})]);
    let terminal = Terminal::sized(&chat_command(&setup, "--continue"), 100, 40);
    // The notice comes first, the replayed conversation after it.
    let screen = terminal
        .wait_for("the conversation replayed", |screen| {
            screen.contains("› hi") && screen.contains("Hello there.")
        })
        .await;
    assert!(screen.contains("resumed session"), "{screen}");
    prompt(&terminal, "again").await;
    terminal.wait_text("Still here.").await;
    drop(terminal);

    // `/resume` in a new chat lists the saved sessions by their first prompt.
    let terminal = open(&setup, "").await;
    terminal.type_text("/resume");
    terminal.wait_text("pick a saved session").await;
    terminal.keys(&["Enter"]);
    let picker = terminal.wait_text("Resume a session").await;
    assert!(picker.contains(" hi "), "{picker}");
    terminal.keys(&["Enter"]);
    let screen = terminal.wait_text("Still here.").await;
    assert!(screen.contains("› again"), "{screen}");
}

#[tokio::test]
async fn without_a_terminal_the_chat_is_lines() {
    let setup = Setup::replay(
        &[
            json!({"text": "Reading.", "toolCalls": [{"name": "read_file", "arguments": {"path": "lib.sh"}}]}),
            json!({"text": "It greets."}),
        ],
        &[("lib.sh", LIB)],
    );
    let workspace = setup.workspace.path().to_str().unwrap().to_owned();
    let run = setup
        .tandem(
            &["chat", "--workspace", &workspace],
            Some("what does lib.sh do?\n"),
        )
        .await;
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    assert_eq!(run.stdout, "Reading.\nIt greets.\n");
    assert!(run.stderr.contains("✓ Read lib.sh"), "{}", run.stderr);
}
