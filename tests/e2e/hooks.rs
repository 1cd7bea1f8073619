//! Hooks end to end: real `sh` scripts in temporary folders, run by the built `tandem ask` (and
//! the language server) against the scripted model server. What the model was sent and what
//! the user was shown are checked for every event, for exit 0, 2 and other codes, for the JSON
//! decisions of `PreToolUse`, for a timeout whose processes must be gone, for a workspace's
//! hooks with and without trust, and for model keys kept from the hooks' environment.

use std::path::Path;

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};

use super::headless::{Folders, Run};

/// The user settings folder, state folder and workspace of a hook test (`hooks` in the user
/// settings).
type Setup = Folders;

/// What the hook tests do with their folders.
trait HookFolders {
    /// Writes an executable script into the workspace; returns its path as a command.
    fn script(&self, name: &str, body: &str) -> String;
    /// `tandem ask PROMPT ARGS` with the variables `env`.
    async fn ask(&self, prompt: &str, args: &[&str], env: &[(&str, &str)]) -> Run;
}

impl HookFolders for Folders {
    fn script(&self, name: &str, body: &str) -> String {
        write_script(&self.root(), name, body)
    }

    async fn ask(&self, prompt: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = self.command(&["ask", prompt]);
        command.args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        Run::of(command.spawn().unwrap()).await
    }
}

/// Writes an executable `sh` script `name` into `dir`; returns its path as a command.
fn write_script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn hooks(event: &str, matcher: Option<&str>, command: &str, timeout: Option<u64>) -> Value {
    let mut hook = json!({"type": "command", "command": command});
    if let Some(timeout) = timeout {
        hook["timeout"] = json!(timeout);
    }
    let mut group = json!({"hooks": [hook]});
    if let Some(matcher) = matcher {
        group["matcher"] = json!(matcher);
    }
    json!({ event: [group] })
}

/// The model writes `a.txt`, then answers "Done.".
fn write_then_done(model: &ModelServer) {
    model.respond_with(|request| {
        if request.json()["messages"]
            .to_string()
            .contains("tool_call_id")
        {
            Reply::openai_text("Done.")
        } else {
            Reply::openai_tool_calls(&[(
                "c1",
                "write_file",
                json!({"path": "a.txt", "content": "hello\n"}),
            )])
        }
    });
}

/// The tool result the model was sent for `c1`.
fn tool_result(model: &ModelServer) -> String {
    model
        .chat_requests()
        .iter()
        .flat_map(|request| request["messages"].as_array().cloned().unwrap_or_default())
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == "c1")
        .map(|message| message["content"].to_string())
        .unwrap_or_default()
}

fn hook_events(run: &Run) -> Vec<Value> {
    run.json_lines()
        .into_iter()
        .filter(|event| event["type"] == "hook")
        .collect()
}

/// `PreToolUse` decisions, each row: mode, event name, matcher, script, whether `a.txt` is
/// written, what the tool result says, the hook event's outcome.
#[tokio::test]
async fn pre_tool_use_hooks_deny_allow_ask_and_rewrite_calls() {
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        &'a str,
        Option<&'a str>,
        &'a str,
        &'a str,
    );
    let cases: &[Case] = &[
        (
            "yolo",
            "PreToolUse",
            Some("edit|write_file"),
            r#"echo '{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no new files"}}'"#,
            None,
            "A PreToolUse hook refused this call: no new files",
            "denied",
        ),
        (
            "yolo",
            "PreToolUse",
            Some("Write"),
            "echo 'lockfiles are generated' >&2; exit 2",
            None,
            "A PreToolUse hook refused this call: lockfiles are generated",
            "blocked",
        ),
        (
            "yolo",
            "BeforeTool",
            Some("write_file"),
            "echo 'gemini says no' >&2; exit 2",
            None,
            "gemini says no",
            "blocked",
        ),
        (
            "yolo",
            "PreToolUse",
            Some("shell"),
            "exit 2",
            Some("hello\n"),
            "Created a.txt",
            "none",
        ),
        (
            "yolo",
            "PreToolUse",
            None,
            "echo broken >&2; exit 1",
            Some("hello\n"),
            "Created a.txt",
            "warned",
        ),
        (
            "default",
            "PreToolUse",
            None,
            r#"echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'"#,
            Some("hello\n"),
            "Created a.txt",
            "allowed",
        ),
        (
            "default",
            "PreToolUse",
            None,
            "true",
            None,
            "needs the user's approval",
            "continued",
        ),
        (
            "yolo",
            "PreToolUse",
            None,
            r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check it"}}'"#,
            None,
            "needs the user's approval",
            "asked",
        ),
        (
            "yolo",
            "PreToolUse",
            None,
            r#"echo '{"hookSpecificOutput": {"updatedInput": {"path": "a.txt", "content": "rewritten"}}}'"#,
            Some("rewritten"),
            "Created a.txt",
            "rewrote",
        ),
        (
            "yolo",
            "PreToolUse",
            None,
            r#"echo '{"hookSpecificOutput": {"updatedInput": {"file": "a.txt"}}}'"#,
            None,
            "a PreToolUse hook rewrote the arguments into ones the tool refuses",
            "rewrote",
        ),
    ];
    for &(mode, event, matcher, script, written, result, outcome) in cases {
        let model = ModelServer::start().await;
        write_then_done(&model);
        let probe = Setup::new(&model, json!({}));
        let command = probe.script("hook.sh", script);
        let setup = probe;
        std::fs::write(
            setup.config.path().join("settings.json"),
            scripted_settings(
                &model,
                json!({"approval": {"mode": mode}, "hooks": hooks(event, matcher, &command, None)}),
            )
            .to_string(),
        )
        .unwrap();
        let run = setup.ask("write a.txt", &["--json"], &[]).await;
        let row = format!("{event} {matcher:?} {script}");
        assert_eq!(
            std::fs::read_to_string(setup.root().join("a.txt"))
                .ok()
                .as_deref(),
            written,
            "{row}: {run:#?}"
        );
        let sent = tool_result(&model);
        assert!(sent.contains(result), "{row}: the model got {sent}");
        let runs = hook_events(&run);
        match outcome {
            "none" => assert!(runs.is_empty(), "{row}: {runs:#?}"),
            outcome => {
                assert_eq!(runs.len(), 1, "{row}: {runs:#?}");
                assert_eq!(runs[0]["outcome"], outcome, "{row}: {runs:#?}");
                assert_eq!(runs[0]["event"], "PreToolUse");
            }
        }
        if outcome == "asked" {
            let asked = run
                .json_lines()
                .into_iter()
                .find(|event| event["type"] == "toolCall" && event["status"] == "awaitingApproval");
            let reason = asked.map(|event| event["approvalReason"].to_string());
            assert!(
                reason
                    .as_deref()
                    .unwrap_or_default()
                    .contains("a PreToolUse hook asks: check it"),
                "{row}: {reason:?}"
            );
        }
        if outcome == "rewrote" && written.is_some() {
            // The history the model sees next holds the arguments that ran.
            let history = model.chat_requests().last().unwrap()["messages"].to_string();
            assert!(history.contains("rewritten"), "{row}: {history}");
        }
    }
}

/// The text of request `index`'s messages past the first `from` (the system instruction left
/// out).
fn told(requests: &[Value], index: usize, from: usize) -> String {
    requests[index]["messages"].as_array().unwrap()[from..]
        .iter()
        .filter(|message| message["role"] != "system")
        .filter_map(|message| message["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What request `index` told the model anew: its messages past those of the request before.
fn new_messages(requests: &[Value], index: usize) -> String {
    let from = index.checked_sub(1).map_or(0, |previous| {
        requests[previous]["messages"].as_array().unwrap().len()
    });
    told(requests, index, from)
}

/// Each row: event, script, prompt, how many requests the model got, what the hook added for
/// the model and the first request that carries it (told in that request, in none before), a
/// text of the hook's that must reach no request, and what stderr shows. Every text is the
/// hook's own, found nowhere else, so a hook whose output were dropped (or sent where it
/// should not go) fails its row.
#[tokio::test]
async fn every_event_reaches_its_hook_and_its_answer_reaches_the_model_or_the_user() {
    type Row<'a> = (
        &'a str,
        &'a str,
        &'a str,
        usize,
        Option<(usize, &'a str)>,
        Option<&'a str>,
        &'a str,
    );
    const HELLO: &str = "Say hello to Ada.";
    const WRITE: &str = "Write a.txt for Ada.";
    let cases: &[Row] = &[
        ("UserPromptSubmit", "echo 'the build is green'", HELLO, 1,
         Some((0, "the build is green")), None, "hook UserPromptSubmit"),
        ("UserPromptSubmit", "echo 'no secrets in prompts' >&2; exit 2", HELLO, 0,
         None, Some("no secrets in prompts"), "UserPromptSubmit `HOOK` blocked"),
        ("UserPromptSubmit", "echo 'flaky hook' >&2; exit 1", HELLO, 1,
         None, Some("flaky hook"), "UserPromptSubmit `HOOK` warned"),
        ("BeforeAgent", r#"echo '{"hookSpecificOutput": {"additionalContext": "from gemini"}}'"#, HELLO, 1,
         Some((0, "from gemini")), Some("hookSpecificOutput"), "hook UserPromptSubmit"),
        ("SessionStart", "echo 'on branch main'", HELLO, 1,
         Some((0, "on branch main")), None, "hook SessionStart"),
        ("SessionStart", "cat > start.json", HELLO, 1, None, None, "SessionStart"),
        ("PostToolUse", "echo 'run the formatter' >&2; exit 2", WRITE, 2,
         Some((1, "A PostToolUse hook says: run the formatter")), None, "blocked"),
        ("PostToolUse", r#"echo '{"hookSpecificOutput": {"additionalContext": "42 lines"}}'"#, WRITE, 2,
         Some((1, "42 lines")), Some("hookSpecificOutput"), "PostToolUse"),
        // A failed hook leaves the tool's own result as it was.
        ("PostToolUse", "echo 'nope, not formatted' >&2; exit 3", WRITE, 2,
         Some((1, "Created a.txt")), Some("nope, not formatted"),
         "failed (exit code 3): nope, not formatted"),
        // The first Stop blocks (the model goes on), the second lets it end.
        ("Stop", "if [ -e stopped ]; then exit 0; fi; touch stopped; echo 'the tests were not run' >&2; exit 2",
         HELLO, 2, Some((1, "A Stop hook asks you to continue:\nthe tests were not run")), None, "hook Stop"),
        ("AfterAgent", r#"echo '{"continue": false, "stopReason": "enough for today"}'"#, HELLO, 1,
         None, Some("enough for today"), "enough for today"),
        ("PreCompact", "cat > compact.json; echo 'saving notes' >&2; exit 2", "/compress", 0,
         None, Some("saving notes"), "PreCompact `HOOK` warned"),
        ("SessionEnd", "cat > end.json", HELLO, 1, None, None, ""),
    ];
    for &(event, script, prompt, count, sent, kept, shown) in cases {
        let model = ModelServer::start().await;
        write_then_done(&model);
        if !prompt.starts_with("Write") {
            model.respond_with(|_| Reply::openai_text("Done."));
        }
        let setup = Setup::new(&model, json!({}));
        let command = setup.script("hook.sh", script);
        std::fs::write(
            setup.config.path().join("settings.json"),
            scripted_settings(
                &model,
                json!({"approval": {"mode": "yolo"}, "hooks": hooks(event, None, &command, None)}),
            )
            .to_string(),
        )
        .unwrap();
        let run = setup.ask(prompt, &[], &[]).await;
        let row = format!("{event}: {script}");
        let requests = model.chat_requests();
        assert_eq!(requests.len(), count, "{row}: {requests:#?}\n{run:#?}");
        if count > 0 {
            let first = new_messages(&requests, 0);
            assert!(
                first.contains(prompt),
                "{row}: the prompt was not sent: {first}"
            );
        }
        if let Some((index, text)) = sent {
            let anew = new_messages(&requests, index);
            assert!(
                anew.contains(text),
                "{row}: request {index} lacks {text:?}: {anew}"
            );
            for earlier in 0..index {
                let body = told(&requests, earlier, 0);
                assert!(
                    !body.contains(text),
                    "{row}: request {earlier} has {text:?} already"
                );
            }
        }
        if let Some(text) = kept {
            for (index, request) in requests.iter().enumerate() {
                let body = request["messages"].to_string();
                assert!(
                    !body.contains(text),
                    "{row}: request {index} has {text:?}: {body}"
                );
            }
        }
        let shown = shown.replace("HOOK", &command);
        assert!(
            run.stderr.contains(&shown),
            "{row}: stderr lacks {shown:?}:\n{}",
            run.stderr
        );
        let read = |name: &str| -> Value {
            serde_json::from_str(&std::fs::read_to_string(setup.root().join(name)).unwrap())
                .unwrap()
        };
        match event {
            "SessionStart" if script.starts_with("cat") => {
                let input = read("start.json");
                assert_eq!(input["hook_event_name"], "SessionStart");
                assert_eq!(input["source"], "startup");
                assert_eq!(input["cwd"], json!(setup.root()));
                assert!(
                    input["session_id"]
                        .as_str()
                        .is_some_and(|id| !id.is_empty()),
                    "{input}"
                );
            }
            "PreCompact" => assert_eq!(read("compact.json")["trigger"], "manual"),
            "SessionEnd" => assert_eq!(read("end.json")["hook_event_name"], "SessionEnd"),
            _ => {}
        }
    }
}

/// A hook past its timeout is killed with everything it started; the call goes on.
#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_process_group() {
    let model = ModelServer::start().await;
    write_then_done(&model);
    let setup = Setup::new(&model, json!({}));
    let command = setup.script("slow.sh", "sleep 30 & echo $! > sleeper.pid; wait");
    std::fs::write(
        setup.config.path().join("settings.json"),
        scripted_settings(
            &model,
            json!({"approval": {"mode": "yolo"}, "hooks": hooks("PreToolUse", None, &command, Some(1))}),
        )
        .to_string(),
    )
    .unwrap();
    let run = setup.ask("write a.txt", &["--json"], &[]).await;
    let runs = hook_events(&run);
    assert_eq!(runs.len(), 1, "{run:#?}");
    assert_eq!(runs[0]["outcome"], "timedOut");
    assert_eq!(runs[0]["exitCode"], Value::Null);
    assert!(
        runs[0]["durationMs"].as_u64().unwrap() < 10_000,
        "{runs:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(setup.root().join("a.txt")).unwrap(),
        "hello\n"
    );
    let pid: i32 = std::fs::read_to_string(setup.root().join("sleeper.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .map(|(_, rest)| &rest[..1])
        .unwrap_or("gone");
    assert!(
        ["gone", "Z", "X"].contains(&state),
        "the sleep still runs: {stat}"
    );
}

/// Hooks get the shell tool's environment: no model keys; `CLAUDE_PROJECT_DIR` is the root.
#[tokio::test]
async fn hooks_do_not_see_model_keys() {
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Done."));
    let setup = Setup::new(&model, json!({}));
    let command = setup.script("env.sh", "env > env.txt");
    std::fs::write(
        setup.config.path().join("settings.json"),
        scripted_settings(
            &model,
            json!({"hooks": hooks("UserPromptSubmit", None, &command, None)}),
        )
        .to_string(),
    )
    .unwrap();
    let run = setup
        .ask(
            "hi",
            &[],
            &[
                ("OPENAI_API_KEY", "sk-hook-secret"),
                ("GEMINI_API_KEY", "g-secret"),
            ],
        )
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    let env = std::fs::read_to_string(setup.root().join("env.txt")).unwrap();
    assert!(!env.contains("secret"), "{env}");
    assert!(
        env.contains(&format!("CLAUDE_PROJECT_DIR={}", setup.root().display())),
        "{env}"
    );
}

/// A workspace's own hooks run only once the user trusts the folder.
#[tokio::test]
async fn a_workspace_runs_its_hooks_only_when_trusted() {
    for trusted in [false, true] {
        let model = ModelServer::start().await;
        model.respond_with(|_| Reply::openai_text("Done."));
        let setup = Setup::new(&model, json!({}));
        let command = setup.script("mark.sh", "touch ran");
        std::fs::create_dir_all(setup.root().join(".tandem")).unwrap();
        std::fs::write(
            setup.root().join(".tandem/settings.json"),
            json!({"hooks": hooks("UserPromptSubmit", None, &command, None)}).to_string(),
        )
        .unwrap();
        let trust = if trusted {
            json!([setup.root()])
        } else {
            json!([])
        };
        std::fs::write(
            setup.config.path().join("settings.json"),
            scripted_settings(&model, json!({"trustedFolders": trust})).to_string(),
        )
        .unwrap();
        let run = setup.ask("hi", &[], &[]).await;
        assert_eq!(run.code, 0, "{run:#?}");
        assert_eq!(
            setup.root().join("ran").exists(),
            trusted,
            "trusted: {trusted}: {run:#?}"
        );
        if !trusted {
            run.assert_stderr_has(&["ignored `hooks` because this workspace is not trusted"]);
        }
    }
}

/// The language server sends every hook run as a `tandem/event`.
#[tokio::test]
async fn the_editor_gets_hook_runs_as_events() {
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Done."));
    let script = tempfile::tempdir().unwrap();
    let command = write_script(script.path(), "context.sh", "echo 'the build is green'");
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            &model,
            json!({"hooks": hooks("UserPromptSubmit", None, &command, None)}),
        ))
        .start()
        .await;
    let started = editor
        .request("tandem/prompt", json!({"text": "hi"}))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let runs: Vec<Value> = editor
        .events_for_turn(&turn)
        .into_iter()
        .filter(|event| event["type"] == "hook")
        .collect();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["event"], "UserPromptSubmit");
    assert_eq!(runs[0]["command"], json!(command));
    assert_eq!(runs[0]["outcome"], "continued");
    assert_eq!(runs[0]["exitCode"], 0);
    assert_eq!(runs[0]["message"], "the build is green");
    let sent = model.chat_requests()[0]["messages"].to_string();
    assert!(sent.contains("the build is green"), "{sent}");
}

/// In the editor, a call that waits for approval runs the `Notification` hooks (with the
/// question's message), and the server's `shutdown` runs every live session's `SessionEnd`
/// hooks before it answers (regression: they ran only when `tandem ask` ended its session).
#[tokio::test]
async fn the_editor_runs_notification_hooks_and_session_end_hooks_at_shutdown() {
    let model = ModelServer::start().await;
    write_then_done(&model);
    let out = tempfile::tempdir().unwrap();
    let notified = out.path().join("notified.json");
    let ended = out.path().join("ended.json");
    let mut hook_settings = hooks(
        "Notification",
        None,
        // Written aside and renamed: the test polls for the file, which `cat >` would create
        // before writing it (regression: a loaded machine read it empty).
        &format!(
            "cat > '{0}.part' && mv '{0}.part' '{0}'",
            notified.display()
        ),
        None,
    );
    hook_settings["SessionEnd"] = hooks(
        "SessionEnd",
        None,
        &format!("sleep 1; cat > '{}'", ended.display()),
        None,
    )["SessionEnd"]
        .clone();
    let editor = FakeEditor::rich()
        .settings(scripted_settings(&model, json!({"hooks": hook_settings})))
        .start()
        .await;
    editor.push_approval(json!({"type": "allowOnce"}));
    let started = editor
        .request("tandem/prompt", json!({"text": "write a.txt"}))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    let finished = editor.wait_turn_finished(&turn).await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    // The Notification hook runs beside the question, not before it: wait for its file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !notified.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&notified).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification", "{input}");
    assert_eq!(input["notification_type"], "permission_prompt", "{input}");
    assert_eq!(
        input["message"], "Tandem needs your permission to use write_file",
        "{input}"
    );
    assert!(!ended.exists(), "SessionEnd ran before the session ended");
    editor.shutdown().await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&ended).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "SessionEnd", "{input}");
}

/// The result the model was sent for the call `id`.
fn result_of(model: &ModelServer, id: &str) -> String {
    model
        .chat_requests()
        .iter()
        .flat_map(|request| request["messages"].as_array().cloned().unwrap_or_default())
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == id)
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

/// Writes an executable Python script `name` into `dir`; returns its path as a command.
fn write_python(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/usr/bin/env python3\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Issue 41: hooks written for Claude Code got `tool_name: "shell"` and `tool_input.path`, so
/// Claude Code's Bash validator did nothing, the hooks guide's formatter never formatted, and
/// its file-protection hook let a write to `.env` through. Each is written here in the exact
/// form Claude Code's example and guide give it (reading `tool_name`, `tool_input.command`,
/// `tool_input.file_path`), beside a Gemini CLI hook that reads and rewrites
/// `run_shell_command`'s input, and a `Stop` hook that reads the last answer from the
/// transcript as the ralph-wiggum plugin does. All run in the OS sandbox as hooks do.
#[tokio::test]
async fn hooks_written_for_claude_code_and_gemini_cli_see_their_own_tools() {
    let model = ModelServer::start().await;
    model.respond_with(|request| {
        if request.json()["messages"]
            .to_string()
            .contains("tool_call_id")
        {
            Reply::openai_text("All done, see <promise>DONE</promise>.")
        } else {
            Reply::openai_tool_calls(&[
                ("c1", "shell", json!({"command": "grep -r needle ."})),
                (
                    "c2",
                    "write_file",
                    json!({"path": ".env", "content": "TOKEN=1\n"}),
                ),
                (
                    "c3",
                    "write_file",
                    json!({"path": "src/app.py", "content": "def f():\n\treturn 1\n"}),
                ),
                ("c4", "shell", json!({"command": "echo original"})),
            ])
        }
    });
    let setup = Setup::new(&model, json!({}));
    let hooks_dir = setup.config.path();
    // Claude Code's examples/hooks/bash_command_validator_example.py, in its shape: rules on
    // `tool_input.command` for `tool_name == "Bash"`, exit 2 with the reasons on stderr.
    let validator = write_python(
        hooks_dir,
        "bash_command_validator.py",
        r#"import json, re, sys
RULES = [(r"^grep\b(?!.*\|)", "Use 'rg' (ripgrep) instead of 'grep' for better performance and features")]
data = json.load(sys.stdin)
if data.get("tool_name", "") != "Bash":
    sys.exit(0)
command = data.get("tool_input", {}).get("command", "")
issues = [message for pattern, message in RULES if re.search(pattern, command)]
for message in issues:
    print(f"• {message}", file=sys.stderr)
sys.exit(2 if issues else 0)"#,
    );
    // The hooks guide's file protection: any of the paths in `tool_input.file_path` blocks.
    let protection = write_python(
        hooks_dir,
        "protect.py",
        r#"import json, sys
data = json.load(sys.stdin)
file_path = data.get("tool_input", {}).get("file_path", "")
sys.exit(2 if any(p in file_path for p in [".env", "package-lock.json", ".git/"]) else 0)"#,
    );
    // The hooks guide's formatter, keyed on `Edit|Write`: it formats the file named by
    // `tool_input.file_path` (tabs to four spaces here) and records what it was told.
    let formatter = write_python(
        hooks_dir,
        "format.py",
        r#"import json, os, sys
data = json.load(sys.stdin)
path = data["tool_input"]["file_path"]
with open(path) as f:
    text = f.read()
with open(path, "w") as f:
    f.write(text.replace("\t", "    "))
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "formatted.json"), "a") as f:
    f.write(json.dumps(data) + "\n")"#,
    );
    // A Gemini CLI BeforeTool hook: its tool name, its `tool_input`, merged back.
    let gemini = write_python(
        hooks_dir,
        "gemini_shell.py",
        r#"import json, sys
data = json.load(sys.stdin)
if data["hook_event_name"] == "BeforeTool" and data["tool_input"]["command"] == "echo original":
    print(json.dumps({"hookSpecificOutput": {"tool_input": {"command": "echo rewritten"}}}))"#,
    );
    // The ralph-wiggum Stop hook's reading of the transcript: the last line with
    // `"role":"assistant"`, its text blocks joined.
    let stop = write_python(
        hooks_dir,
        "stop.py",
        r#"import json, os, sys
data = json.load(sys.stdin)
lines = [l for l in open(data["transcript_path"]) if '"role":"assistant"' in l]
last = json.loads(lines[-1])
text = "\n".join(b["text"] for b in last["message"]["content"] if b["type"] == "text")
with open(os.path.join(data["cwd"], "last_answer.txt"), "w") as f:
    f.write(text)"#,
    );
    let group = |matcher: &str, command: &str| json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]});
    std::fs::write(
        setup.config.path().join("settings.json"),
        scripted_settings(
            &model,
            json!({"approval": {"mode": "yolo"}, "hooks": {
                "PreToolUse": [group("Bash", &validator), group("Edit|MultiEdit|Write", &protection)],
                "PostToolUse": [group("Edit|Write", &formatter)],
                "BeforeTool": [group("run_shell_command", &gemini)],
                "Stop": [{"hooks": [{"type": "command", "command": stop}]}],
            }}),
        )
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(setup.root().join("src")).unwrap();
    let run = setup.ask("tidy up", &["--json"], &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");

    let grep = result_of(&model, "c1");
    assert!(
        grep.contains("Use 'rg' (ripgrep) instead of 'grep'"),
        "the validator did not block grep: {grep}"
    );
    assert!(
        !setup.root().join(".env").exists(),
        "the protection hook let .env through: {}",
        result_of(&model, "c2")
    );
    assert_eq!(
        std::fs::read_to_string(setup.root().join("src/app.py")).unwrap(),
        "def f():\n    return 1\n",
        "the formatter did not run: {run:#?}"
    );
    let formatted: Value = serde_json::from_str(
        std::fs::read_to_string(setup.root().join("formatted.json"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let app = setup.root().join("src/app.py");
    assert_eq!(formatted["tool_name"], "Write");
    assert_eq!(formatted["hook_event_name"], "PostToolUse");
    assert_eq!(formatted["tool_input"]["file_path"], json!(app));
    assert_eq!(formatted["tool_response"]["filePath"], json!(app));
    assert_eq!(formatted["tool_response"]["success"], true);
    let echoed = result_of(&model, "c4");
    assert!(
        echoed.contains("rewritten") && !echoed.contains("original"),
        "the Gemini hook's tool_input did not run: {echoed}"
    );
    assert_eq!(
        std::fs::read_to_string(setup.root().join("last_answer.txt")).unwrap(),
        "All done, see <promise>DONE</promise>.",
        "the Stop hook could not read the transcript: {run:#?}"
    );
}
