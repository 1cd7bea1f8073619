//! The headless commands as a user runs them: `tandem ask` driving the real agent over a replay
//! script (or the scripted model server) in a real temporary repository, and `tandem tool`
//! running one tool. Each test spawns the built binary with its own user settings directory.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};
use tandem_test_support::{ModelServer, Reply, Step, TIMEOUT};
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

use super::headless::{self, Run};
use super::terminal::{quoted, Terminal};

/// User settings choosing a replay model that plays `script.jsonl`, with `extra` top-level keys.
fn replay_settings(extra: Value) -> Value {
    let mut settings = json!({"model": "demo", "models": {"demo": {"provider": "replay", "script": "script.jsonl"}}});
    if let (Value::Object(settings), Value::Object(extra)) = (&mut settings, extra) {
        settings.extend(extra);
    }
    settings
}

/// A user settings directory, a workspace and a state directory (where saved sessions go, so
/// tests never write the real one), all temporary.
pub(super) struct Setup {
    pub config: TempDir,
    pub workspace: TempDir,
    pub state: TempDir,
}

impl Setup {
    /// User settings that choose a replay model playing `script` (one response a line), and a
    /// workspace holding `files`.
    pub(super) fn replay(script: &[Value], files: &[(&str, &str)]) -> Setup {
        Setup::replay_with(script, json!({}), files)
    }

    /// `replay`, with `extra` top-level settings added to the user file.
    pub(super) fn replay_with(script: &[Value], extra: Value, files: &[(&str, &str)]) -> Setup {
        let setup = Setup::with_settings(replay_settings(extra), files);
        setup.write_script(script);
        setup
    }

    /// Replaces the user settings with the replay model's and `extra` (for settings that name
    /// the workspace's paths).
    pub(super) fn write_settings(&self, extra: Value) {
        std::fs::write(
            self.config.path().join("settings.json"),
            replay_settings(extra).to_string(),
        )
        .unwrap();
    }

    /// Replaces the replay model's script (for a script that names the workspace's paths).
    pub(super) fn write_script(&self, script: &[Value]) {
        let lines: Vec<String> = script.iter().map(Value::to_string).collect();
        std::fs::write(
            self.config.path().join("script.jsonl"),
            lines.join("\n") + "\n",
        )
        .unwrap();
    }

    pub(super) fn with_settings(settings: Value, files: &[(&str, &str)]) -> Setup {
        let config = tempfile::tempdir().unwrap();
        std::fs::write(config.path().join("settings.json"), settings.to_string()).unwrap();
        let workspace = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = workspace.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let state = tempfile::tempdir().unwrap();
        Setup {
            config,
            workspace,
            state,
        }
    }

    pub(super) fn path(&self, relative: &str) -> PathBuf {
        self.workspace.path().join(relative)
    }

    /// `tandem ask PROMPT ARGS… --workspace WS`.
    pub(super) async fn ask(&self, prompt: &str, args: &[&str]) -> Run {
        let mut all = vec!["ask", prompt, "--workspace"];
        let workspace = self.workspace.path().to_str().unwrap();
        all.push(workspace);
        all.extend(args);
        self.tandem(&all, None).await
    }

    /// `tandem tool NAME --args ARGS --workspace WS`.
    pub(super) async fn tool(&self, name: &str, args: Value) -> Run {
        let workspace = self.workspace.path().to_str().unwrap();
        let args = args.to_string();
        self.tandem(
            &["tool", name, "--args", &args, "--workspace", workspace],
            None,
        )
        .await
    }

    /// Runs the binary with these user settings and state directory, feeding `stdin` (or
    /// nothing) to it.
    pub(super) async fn tandem(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let mut command = headless::tandem(self.config.path(), self.state.path());
        command.args(args);
        if stdin.is_some() {
            command.stdin(Stdio::piped());
        }
        let mut child = command.spawn().unwrap();
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().unwrap();
            pipe.write_all(text.as_bytes()).await.unwrap();
            // Closing it is what ends the prompt.
            drop(pipe);
        }
        Run::of(child).await
    }
}

const LIB: &str = "greet() {\n  echo \"Helo, $1!\"\n}\n";
const CHECK: &str = ". ./lib.sh\n\
    if [ \"$(greet world)\" = \"Hello, world!\" ]; then\n  echo 'check passed'\n\
    else\n  echo \"check failed: $(greet world)\"\n  exit 1\nfi\n";
const ANSWER: &str = "Fixed the typo in `greet` (lib.sh); `sh check.sh` passes now.";

/// A shell project whose check fails on a typo, and the model session that fixes it: read and
/// search (in parallel), edit, run the check, answer.
fn typo_fix() -> Setup {
    Setup::replay(
        &[
            json!({"thought": "Look at the greeting and find every copy of the typo.", "toolCalls": [
                {"name": "read_file", "arguments": {"path": "lib.sh"}},
                {"name": "grep", "arguments": {"pattern": "Helo"}}
            ]}),
            json!({"toolCalls": [{"name": "edit", "arguments": {
                "path": "lib.sh", "old_string": "echo \"Helo, $1!\"", "new_string": "echo \"Hello, $1!\""
            }}]}),
            json!({"toolCalls": [{"name": "shell", "arguments": {"command": "sh check.sh"}}]}),
            json!({"text": ["Fixed the typo in `greet` ", "(lib.sh); `sh check.sh` passes now."]}),
        ],
        &[("lib.sh", LIB), ("check.sh", CHECK)],
    )
}

#[cfg(unix)]
#[tokio::test]
async fn ask_fixes_a_failing_check_in_a_real_repository() {
    let setup = typo_fix();
    let run = setup
        .ask("check.sh fails; fix it", &["--approval-mode", "yolo"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    // Only the answer: no thoughts, no tool output.
    assert_eq!(run.stdout, format!("{ANSWER}\n"));
    run.assert_stderr_has(&[
        "→ Read lib.sh\n",
        "✓ Read lib.sh\n",
        "→ Search for `Helo`\n",
        "✓ Search for `Helo`\n",
        "→ Edit lib.sh\n",
        "✓ Edit lib.sh\n",
        "→ Run `sh check.sh`\n",
        "✓ Run `sh check.sh`\n",
    ]);
    assert!(!run.stderr.contains('✗'), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(setup.path("lib.sh")).unwrap(),
        "greet() {\n  echo \"Hello, $1!\"\n}\n"
    );
    let check = std::process::Command::new("sh")
        .arg("check.sh")
        .current_dir(setup.workspace.path())
        .output()
        .unwrap();
    assert!(check.status.success(), "{check:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn ask_json_prints_every_event_as_a_json_line() {
    let setup = typo_fix();
    let run = setup
        .ask(
            "check.sh fails; fix it",
            &["--approval-mode", "yolo", "--json"],
        )
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    let events = run.json_lines();
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "turnFinished", "stopReason": "end_turn"})
    );
    let text: String = events
        .iter()
        .filter(|event| event["type"] == "textChunk")
        .map(|event| event["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, ANSWER);
    assert!(events.iter().any(|event| event["type"] == "thoughtChunk"));
    // What the model read back from the check: it passed.
    let check = events
        .iter()
        .find(|event| {
            event["type"] == "toolCall" && event["tool"] == "shell" && event["status"] == "success"
        })
        .unwrap_or_else(|| panic!("no successful shell call:\n{}", run.stdout));
    let output = check["output"].as_str().unwrap();
    assert!(
        output.contains("check passed") && output.contains("exit code: 0"),
        "{output}"
    );
    // Tool activity lines are for people reading plain output.
    assert!(!run.stderr.contains('→'), "{}", run.stderr);
}

#[tokio::test]
async fn ask_refuses_calls_that_need_approval() {
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}]}),
            json!({"text": "I was not allowed to create new.txt."}),
        ],
        &[],
    );
    let needs_approval = "✗ Write new.txt: needs approval (mode default); rerun with \
        --approval-mode auto_edit, or allow it with \"approval\": {\"allow\": [\"write_file\"]} in \
        settings.json\n";
    let nothing_changed = "tandem: nothing was changed: 1 action needed approval, which tandem \
        ask cannot give; rerun with --approval-mode auto_edit, or allow it in settings.json as \
        shown above\n";

    let run = setup.ask("create new.txt", &[]).await;
    assert_eq!(run.code, 3, "{run:#?}");
    assert_eq!(run.stdout, "I was not allowed to create new.txt.\n");
    run.assert_stderr_has(&[needs_approval]);
    assert!(run.stderr.ends_with(nothing_changed), "{}", run.stderr);
    // One line for the refused call, not a second for its error.
    assert_eq!(
        run.stderr.matches("Write new.txt").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(!setup.path("new.txt").exists());

    // The model was told why, and not to try again as it was.
    let run = setup.ask("create new.txt", &["--json"]).await;
    assert_eq!(run.code, 3, "{run:#?}");
    run.assert_stderr_has(&[needs_approval, nothing_changed]);
    let refusal = run
        .json_lines()
        .into_iter()
        .find(|event| event["type"] == "toolCall" && event["status"] == "error")
        .unwrap_or_else(|| panic!("no refused call:\n{}", run.stdout));
    let told = refusal["output"].as_str().unwrap();
    assert!(
        told.starts_with(
            "Not run: this call needs the user's approval, and Tandem runs non-interactively \
             (tandem ask), so nobody can be asked. Do not retry it;"
        ),
        "{told}"
    );
    assert!(!setup.path("new.txt").exists());

    // auto_edit lets writes through.
    let run = setup
        .ask("create new.txt", &["--approval-mode", "auto_edit"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&["✓ Write new.txt\n"]);
    assert!(
        !run.stderr.contains("nothing was changed"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(setup.path("new.txt")).unwrap(),
        "x\n"
    );
}

/// The model reads the check, then tries to fix it and run it in one response: an edit and a
/// shell command, both of which need approval under the default mode.
fn fix_and_check(extra_settings: Value) -> Setup {
    Setup::replay_with(
        &[
            json!({"toolCalls": [{"name": "read_file", "arguments": {"path": "lib.sh"}}]}),
            json!({"toolCalls": [
                {"name": "edit", "arguments": {
                    "path": "lib.sh", "old_string": "Helo", "new_string": "Hello"
                }},
                {"name": "shell", "arguments": {"command": "sh check.sh"}}
            ]}),
            json!({"text": "I could not fix it: I was not allowed to."}),
        ],
        extra_settings,
        &[("lib.sh", LIB), ("check.sh", CHECK)],
    )
}

/// Regression: a turn whose every action was refused exited 0 like a turn that did its work,
/// and each refusal advised `--approval-mode auto_edit or yolo` whatever the mode (under
/// auto_edit, a shell command needs yolo). Each refusal now names the mode that would run it
/// and the allow rule that would, and a turn that changed nothing says so and exits 3.
#[tokio::test]
async fn a_turn_whose_every_action_was_refused_says_so_and_exits_3() {
    let setup = fix_and_check(json!({}));
    let run = setup.ask("check.sh fails; fix it", &[]).await;
    assert_eq!(run.code, 3, "{run:#?}");
    assert_eq!(run.stdout, "I could not fix it: I was not allowed to.\n");
    run.assert_stderr_has(&[
        "✓ Read lib.sh\n",
        "✗ Edit lib.sh: needs approval (mode default); rerun with --approval-mode auto_edit, or \
         allow it with \"approval\": {\"allow\": [\"edit\"]} in settings.json\n",
        "✗ Run `sh check.sh`: needs approval (mode default); rerun with --approval-mode yolo, or \
         allow it with \"approval\": {\"allow\": [\"shell:sh check.sh\"]} in settings.json\n",
    ]);
    // The last word, after the `session … saved` line.
    assert!(
        run.stderr.ends_with(
            "tandem: nothing was changed: 2 actions needed approval, which tandem ask cannot \
             give; rerun with --approval-mode yolo, or allow them in settings.json as shown \
             above\n"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(setup.path("lib.sh")).unwrap(), LIB);

    // Under auto_edit the edit runs, so something changed; the shell command needs yolo.
    let run = setup
        .ask("check.sh fails; fix it", &["--approval-mode", "auto_edit"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&[
        "✓ Edit lib.sh\n",
        "✗ Run `sh check.sh`: needs approval (mode auto_edit); rerun with --approval-mode yolo, \
         or allow it with \"approval\": {\"allow\": [\"shell:sh check.sh\"]} in settings.json\n",
    ]);
    assert!(
        !run.stderr.contains("nothing was changed"),
        "{}",
        run.stderr
    );
    assert_ne!(std::fs::read_to_string(setup.path("lib.sh")).unwrap(), LIB);

    // The rules named are the ones that let the calls run.
    let setup = fix_and_check(json!({"approval": {"allow": ["edit", "shell:sh check.sh"]}}));
    let run = setup.ask("check.sh fails; fix it", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&["✓ Edit lib.sh\n", "✓ Run `sh check.sh`\n"]);
    assert!(!run.stderr.contains('✗'), "{}", run.stderr);
}

/// A write Tandem asks about in every mode (a protected path) is refused even under yolo, and
/// no mode or rule is offered for it.
#[tokio::test]
async fn a_refused_protected_write_names_no_mode() {
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "write_file", "arguments": {
                "path": ".git/hooks/pre-commit", "content": "echo hi\n"
            }}]}),
            json!({"text": "Not allowed."}),
        ],
        &[],
    );
    let run = setup.ask("add a hook", &["--approval-mode", "yolo"]).await;
    assert_eq!(run.code, 3, "{run:#?}");
    run.assert_stderr_has(&["tandem ask cannot ask; do it yourself, or in an editor\n"]);
    assert!(
        run.stderr.ends_with(
            "tandem: nothing was changed: 1 action needed approval, which tandem ask cannot \
             give; do it yourself, or in an editor\n"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("--approval-mode"), "{}", run.stderr);
    assert!(!setup.path(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn ask_exit_codes_say_how_the_turn_ended() {
    let setup = Setup::replay(
        &[json!({"error": {"kind": "authentication", "message": "bad key"}})],
        &[],
    );
    let run = setup.ask("hi", &[]).await;
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stderr_has(&["tandem: authentication failed: bad key\n"]);
    assert_eq!(run.stdout, "");

    let run = setup.ask("hi", &["--model", "nope"]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["no model named `nope`"]);

    let run = setup.ask("hi", &["--approval-mode", "sometimes"]).await;
    assert_eq!(run.code, 2, "{run:#?}");

    let setup = Setup::replay(
        &[json!({"toolCalls": [{"name": "list_directory", "arguments": {}}]})],
        &[],
    );
    let run = setup.ask("look around", &["--max-turns", "1"]).await;
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stderr_has(&["tandem: stopped after 1 model requests"]);

    // No prompt at all (stdin is empty, not a terminal).
    let run = setup.tandem(&["ask"], None).await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["the prompt is empty"]);
}

/// Issue 38: `tandem ask /help`, and every failed `ask`, saved a session, so `--continue` then
/// resumed that one: `tandem ask --continue /restore` answered "nothing to restore" while the
/// previous session's edit was still there. Only a turn that reached a model or ran a tool is
/// worth resuming.
#[tokio::test]
async fn help_and_failed_asks_saved_a_session_that_continue_resumed() {
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "new\n"}}]}),
            json!({"text": "wrote it"}),
        ],
        &[("a.txt", "alpha\n")],
    );
    let run = setup.ask("add new.txt", &["--approval-mode", "yolo"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&["saved; continue it with"]);
    assert!(setup.path("new.txt").exists());

    let run = setup.ask("/help", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("saved"), "{run:#?}");

    setup.write_script(&[json!({"error": {"kind": "authentication", "message": "bad key"}})]);
    let run = setup.ask("hi", &[]).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(!run.stderr.contains("saved"), "{run:#?}");

    let run = setup.ask("/restore", &["--continue"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&["restored new.txt"]);
    assert!(!setup.path("new.txt").exists());
}

/// `-` reads the prompt from stdin; what reaches the model is checked on the wire, with the
/// memory file and the environment the first request carries.
#[tokio::test]
async fn ask_reads_the_prompt_from_stdin_and_sends_memory_and_environment() {
    let server = ModelServer::start().await;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/providers/openai/text.sse");
    server.push(Reply::sse(std::fs::read(fixture).unwrap()));
    let setup = Setup::with_settings(
        json!({"model": "local", "models": {"local": {
            "provider": "openai", "model": "qwen3-coder", "baseUrl": format!("{}/v1", server.url())
        }}}),
        &[
            ("AGENTS.md", "Answer in French.\n"),
            ("src/main.rs", "fn main() {}\n"),
        ],
    );
    let recording = setup.config.path().join("recording.jsonl");
    let workspace = setup.workspace.path().to_str().unwrap();
    let run = setup
        .tandem(
            &[
                "ask",
                "-",
                "--workspace",
                workspace,
                "--record",
                recording.to_str().unwrap(),
            ],
            Some("What does the café example do?\n"),
        )
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stdout,
        "The café example now compiles — crème brûlée for every crab 🦀.\n"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json();
    let messages = body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are Tandem"), "{system}");
    assert!(
        system.contains("## From AGENTS.md (workspace)\nAnswer in French."),
        "{system}"
    );
    let user = messages[1]["content"].to_string();
    for needle in [
        "<environment>",
        "Today's date: 2",
        "src/",
        "What does the café example do?",
    ] {
        assert!(user.contains(needle), "{needle:?} not in {user}");
    }
    let recorded = std::fs::read_to_string(&recording).unwrap();
    assert_eq!(recorded.lines().count(), 1, "{recorded}");
}

#[tokio::test]
async fn tool_runs_one_tool_as_the_model_would() {
    let setup = Setup::replay(&[], &[("a.txt", "alpha\nbeta\n")]);

    let run = setup.tool("read_file", json!({"path": "a.txt"})).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "a.txt (2 lines)\n     1\talpha\n     2\tbeta\n");

    let run = setup
        .tool("grep", json!({"pattern": "x", "path": "../outside"}))
        .await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stdout.starts_with("error: "), "{}", run.stdout);
    assert!(
        run.stdout.contains("outside the workspace"),
        "{}",
        run.stdout
    );

    // A fresh session has read nothing; `tandem tool` counts the named file as read.
    let run = setup
        .tool(
            "edit",
            json!({"path": "a.txt", "old_string": "beta", "new_string": "gamma"}),
        )
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        std::fs::read_to_string(setup.path("a.txt")).unwrap(),
        "alpha\ngamma\n"
    );

    let run = setup.tool("nope", json!({})).await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["no tool named `nope`", "read_file, "]);

    let workspace = setup.workspace.path().to_str().unwrap();
    let run = setup
        .tandem(
            &[
                "tool",
                "read_file",
                "--args",
                "{oops",
                "--workspace",
                workspace,
            ],
            None,
        )
        .await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["--args is not valid JSON"]);

    let run = setup.tandem(&["tool", "--list"], None).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let listed: Vec<&str> = run
        .stdout
        .lines()
        .map(|line| line.split_whitespace().next().unwrap())
        .collect();
    let tools = tandem_agent::tools::all();
    let all: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(listed, all);

    let run = setup.tandem(&["tool", "grep", "--schema"], None).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let schema: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["pattern"].is_object(), "{schema}");
}

/// A model server that fails four ways before it answers: 429, 500, a stream cut after
/// "PART-ONE ", a malformed chunk after it; then "PART-ONE PART-TWO".
async fn flaky_model() -> (ModelServer, Setup) {
    let server = ModelServer::start().await;
    let chunk = |text: &str| {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
        format!("data: {chunk}\n\n")
    };
    server.push(Reply::status(429));
    server.push(Reply::status(500));
    server.push(Reply::sse(chunk("PART-ONE ")).step(Step::Reset));
    server.push(Reply::sse(format!(
        "{}data: {{\"choices\": [{{\"delta\"\n\n",
        chunk("PART-ONE ")
    )));
    server.push(Reply::openai_text("PART-ONE PART-TWO"));
    let setup = Setup::with_settings(
        json!({
            "model": "local",
            "models": {"local": {"provider": "openai", "model": "m", "baseUrl": format!("{}/v1", server.url())}},
            "network": {"retryInitialDelayMs": 1, "retryMaxDelayMs": 10},
        }),
        &[],
    );
    (server, setup)
}

/// Regression: a request that failed mid-answer and was retried printed its partial text
/// again, so a script capturing stdout read `PART-ONE PART-ONE PART-ONE PART-TWO`. Written to
/// a pipe, the answer is printed once it is complete; `--json` reports each retry.
#[tokio::test]
async fn ask_prints_the_answer_once_when_the_request_is_retried() {
    let (server, setup) = flaky_model().await;
    let run = setup.ask("Say both parts.", &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "PART-ONE PART-TWO\n");
    assert_eq!(
        run.stderr.matches("model request failed, retrying").count(),
        4,
        "{run:#?}"
    );
    assert_eq!(server.request_count(), 5);

    let (_server, setup) = flaky_model().await;
    let run = setup.ask("Say both parts.", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let events = run.json_lines();
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .filter(|kind| ["retrying", "textChunk", "turnFinished"].contains(kind))
        .collect();
    assert_eq!(
        kinds,
        [
            "retrying",
            "retrying",
            "textChunk",
            "retrying",
            "textChunk",
            "retrying",
            "textChunk",
            "turnFinished"
        ],
        "{events:#?}"
    );
}

/// Regression: `read_file` and `grep` held a whole line in memory, so a file without line
/// breaks cost its size (300 MB: 599 MB and 433 MB at their peaks). Here each runs with its
/// heap limited (`ulimit -d`) to well under the file's size: holding the line would abort it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn tools_read_a_file_that_is_one_huge_line_in_bounded_memory() {
    let setup = Setup::replay(&[], &[]);
    // Larger than the 64 MiB read_file holds whole (to record what the model saw).
    let size = 80 << 20;
    std::fs::write(setup.path("dump.json"), vec![b'7'; size]).unwrap();
    let cases = [
        (
            "read_file",
            json!({"path": "dump.json"}),
            format!("… [line truncated, {} more characters]", size - 2000),
        ),
        (
            "grep",
            json!({"pattern": "needle"}),
            "searched only up to a line longer than 4 MiB in dump.json".to_owned(),
        ),
    ];
    for (tool, args, expected) in cases {
        let child = tokio::process::Command::new("bash")
            .args(["-c", "ulimit -d 49152 && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_tandem"))
            .args(["--log-file", "-", "tool", tool, "--args"])
            .arg(args.to_string())
            .arg("--workspace")
            .arg(setup.workspace.path())
            .env("TANDEM_CONFIG_DIR", setup.config.path())
            .env("TANDEM_STATE_DIR", setup.state.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let run = Run::of(child).await;
        assert!(run.stdout.contains(&expected), "{tool}: {run:#?}");
    }
}

/// Ctrl-C cancels the turn instead of killing Tandem outright: the shell command, which runs
/// in its own process group out of the terminal's reach, is killed with it, and the exit code
/// is 130.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn ctrl_c_cancels_the_turn_and_kills_the_running_command() {
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "shell", "arguments": {"command": "echo $$ > pid.fifo; exec sleep 30"}}]}),
        ],
        &[],
    );
    let fifo = setup.path("pid.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let workspace = setup.workspace.path().to_str().unwrap();
    let child = headless::tandem(setup.config.path(), setup.state.path())
        .args([
            "ask",
            "wait",
            "--approval-mode",
            "yolo",
            "--workspace",
            workspace,
        ])
        .spawn()
        .unwrap();
    // Opening the FIFO waits until the command has started and written its pid.
    let sleep_pid = tokio::time::timeout(TIMEOUT, tokio::fs::read_to_string(&fifo))
        .await
        .expect("the command did not start")
        .unwrap();
    let sleep_pid = sleep_pid.trim().to_owned();
    let tandem_pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &tandem_pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .expect("tandem did not exit")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "stderr:\n{stderr}");
    // The tool waited for the command to die before the turn ended.
    assert!(
        !Path::new(&format!("/proc/{sleep_pid}")).exists(),
        "sleep {sleep_pid} outlived the cancelled turn"
    );
}

/// `tandem ask PROMPT --approval-mode yolo --workspace WS` as a shell command line, with this
/// setup's settings and state and nothing else choosing a model; `colour` unsets `NO_COLOR`,
/// otherwise it is `1`.
fn ask_command(setup: &Setup, prompt: &str, colour: bool) -> String {
    let path = |path: &Path| quoted(path.to_str().unwrap());
    let no_color = if colour {
        "-u NO_COLOR".to_owned()
    } else {
        "NO_COLOR=1".to_owned()
    };
    format!(
        "env -u TANDEM_MODEL -u ANTHROPIC_API_KEY -u GEMINI_API_KEY -u OPENAI_API_KEY {no_color} \
         TERM=xterm-256color TANDEM_CONFIG_DIR={} TANDEM_STATE_DIR={} {} --log-file {} ask {} \
         --approval-mode yolo --workspace {}",
        path(setup.config.path()),
        path(setup.state.path()),
        path(Path::new(env!("CARGO_BIN_EXE_tandem"))),
        path(&setup.config.path().join("tandem.log")),
        quoted(prompt),
        path(setup.workspace.path()),
    )
}

/// A turn that says something before each tool call (a read, an edit, the check), then answers.
fn narrated_typo_fix() -> Setup {
    Setup::replay(
        &[
            json!({"text": "Let me read the greeting.",
                "toolCalls": [{"name": "read_file", "arguments": {"path": "lib.sh"}}]}),
            json!({"text": "It says Helo.", "toolCalls": [{"name": "edit", "arguments": {
                "path": "lib.sh", "old_string": "echo \"Helo, $1!\"", "new_string": "echo \"Hello, $1!\""
            }}]}),
            json!({"thought": "Now run it.", "text": "Now the check.",
                "toolCalls": [{"name": "shell", "arguments": {"command": "sh check.sh"}}]}),
            json!({"text": ["Fixed the typo in `greet` ", "(lib.sh); `sh check.sh` passes now."]}),
        ],
        &[("lib.sh", LIB), ("check.sh", CHECK)],
    )
}

/// Regression (issue 43): on a terminal, where stdout and stderr share one screen, tool lines
/// were glued onto the answer's line (`Let me read the greeting.→ Read lib.sh`), every `✓`
/// was followed by a blank line, and nothing showed what the turn changed.
#[cfg(unix)]
#[tokio::test]
async fn ask_on_a_terminal_puts_tool_lines_on_their_own_lines_and_ends_with_the_diff() {
    let setup = narrated_typo_fix();
    let terminal = Terminal::run(&ask_command(&setup, "check.sh fails; fix it", false));
    let (code, screen) = terminal.wait_exit(true).await;
    assert_eq!(code, 0, "{screen}");
    assert!(!screen.contains('\u{1b}'), "NO_COLOR=1, yet:\n{screen:?}");
    let (shown, rest) = screen.split_once("session ").unwrap_or((&screen, ""));
    assert_eq!(
        shown,
        "Let me read the greeting.\n\
         \n\
         → Read lib.sh\n\
         ✓ Read lib.sh\n\
         \n\
         It says Helo.\n\
         \n\
         → Edit lib.sh\n\
         ✓ Edit lib.sh\n\
         \n\
         Now the check.\n\
         \n\
         → Run `sh check.sh`\n\
         ✓ Run `sh check.sh`\n\
         \n\
         Fixed the typo in `greet` (lib.sh); `sh check.sh` passes now.\n\
         \n\
         Changed 1 file:\n\
         lib.sh +1 -1\n\
         @@ -1,3 +1,3 @@\n \
         greet() {\n\
         -  echo \"Helo, $1!\"\n\
         +  echo \"Hello, $1!\"\n \
         }\n\
         \n",
        "the whole screen:\n{screen}"
    );
    assert!(
        rest.contains(" saved; continue it with: tandem ask --resume "),
        "{screen}"
    );
    assert!(rest.ends_with("\"…\"\n[exit 0]\n"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(setup.path("lib.sh")).unwrap(),
        "greet() {\n  echo \"Hello, $1!\"\n}\n"
    );

    // Without NO_COLOR the same screen is coloured: the marks, the diff's lines.
    let setup = narrated_typo_fix();
    let terminal = Terminal::run(&ask_command(&setup, "check.sh fails; fix it", true));
    let (code, coloured) = terminal.wait_exit(true).await;
    assert_eq!(code, 0, "{coloured}");
    assert!(coloured.contains("\u{1b}["), "no colour:\n{coloured}");
    let plain = terminal.screen(false);
    assert!(plain.starts_with(shown), "{plain}");
    // The lines themselves are the same with colour, and `--no-diff` leaves out the summary.
    let setup = narrated_typo_fix();
    let command = ask_command(&setup, "check.sh fails; fix it", false) + " --no-diff";
    let terminal = Terminal::run(&command);
    let (code, screen) = terminal.wait_exit(false).await;
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("passes now.\n\nsession ") && !screen.contains("Changed"),
        "{screen}"
    );
}
