//! The command line as a newcomer meets it: `tandem lsp` typed into a terminal, `tandem tool`'s
//! usage, the logging options every subcommand checks, and a standard output closed early
//! (`| head`). Each test runs the built binary.

use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use tandem_test_support::TIMEOUT;
use tokio::process::Command;

use super::ask::Setup;
use super::headless::{self, Run};

/// Regression: `tandem lsp` started in a terminal printed nothing until Ctrl-C. With a terminal
/// on stdin (a pseudo-terminal `script` sets up) it says on stderr what it waits for and what
/// to run instead; stdout stays the protocol's, so it has nothing on it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn lsp_started_in_a_terminal_says_what_it_waits_for() {
    let dir = tempfile::tempdir().unwrap();
    // script gives the command a terminal and, its own stdin being empty, then an end of file,
    // which ends the server.
    let child = Command::new("script")
        .args([
            "-qec",
            r#""$TANDEM" lsp --log-file "$DIR/log" 2>"$DIR/stderr" >"$DIR/stdout""#,
            "/dev/null",
        ])
        .env("TANDEM", env!("CARGO_BIN_EXE_tandem"))
        .env("DIR", dir.path())
        .env("SHELL", "/bin/sh")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .expect("tandem lsp did not exit")
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(
        read("stderr"),
        "tandem lsp: waiting for an editor to speak LSP on stdin/stdout (Ctrl-C quits). To try \
         Tandem in a terminal, run `tandem ask \"…\"` or `tandem demo`; docs/editors.md sets it \
         up in your editor.\n",
        "{out:?}"
    );
    assert_eq!(read("stdout"), "");

    // An editor's pipe gets no such line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("lsp")
        .arg("--log-file")
        .arg(dir.path().join("log"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let run = Run::of(child).await;
    assert_eq!(run.stderr, "", "{run:#?}");
}

/// Regression: `tandem tool`'s usage showed `[NAME]` as optional, and leaving it out failed
/// with a message that did not mention `--list`.
#[tokio::test]
async fn tool_usage_says_a_name_or_list_is_needed() {
    let setup = Setup::replay(&[], &[]);
    let usage = "Usage: tandem tool <NAME> [--args <JSON>] [--workspace <DIR>]\n       \
                 tandem tool <NAME> --schema\n       \
                 tandem tool --list\n";
    for args in [
        &["tool"][..],
        &["tool", "--schema"],
        &["tool", "--args", "{}"],
    ] {
        let run = setup.tandem(args, None).await;
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        assert_eq!(run.stdout, "", "{args:?}");
        run.assert_stderr_has(&[
            "error: the following required arguments were not provided:\n  <NAME|--list>\n",
            usage,
        ]);
    }
    let run = setup.tandem(&["tool", "--help"], None).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains(usage), "{}", run.stdout);
    assert!(
        run.stdout.contains("required unless `--list`"),
        "{}",
        run.stdout
    );

    let run = setup.tandem(&["tool", "--list", "grep"], None).await;
    assert_eq!(run.code, 2, "{run:#?}");
}

/// The command line for `args`, with the settings and state directories of `setup` but no log
/// option, so a test can give its own.
fn tandem_without_log(setup: &Setup, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .args(args)
        .env("TANDEM_CONFIG_DIR", setup.config.path())
        .env("TANDEM_STATE_DIR", setup.state.path())
        .env_remove("TANDEM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    headless::without_model_choice(&mut command);
    command
}

/// Every subcommand checks `--log-level` and `--log-file` before it does anything: a bad one
/// exits 2 with the reason, and nothing on stdout. A bare word that is not a level is refused
/// too: tracing would have read `verbose` as a module's name and logged nothing.
#[tokio::test]
async fn every_subcommand_refuses_a_bad_log_level_or_log_file() {
    let setup = Setup::replay(&[json!({"text": "never asked"})], &[]);
    let workspace = setup.workspace.path().to_str().unwrap();
    // A file where the log file's directory would be.
    let not_a_dir = setup.config.path().join("settings.json").join("tandem.log");
    let not_a_dir = not_a_dir.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["lsp"],
        &["ask", "hi", "--workspace", workspace],
        &["sessions", "--workspace", workspace],
        &["tool", "--list"],
        &["models", "--workspace", workspace],
    ];
    for command in commands {
        let cases = [
            (
                ["--log-level", "verbose"],
                "tandem: invalid log level \"verbose\": `verbose` is not a level; expected a \
                 level (error, warn, info, debug, trace or off)",
            ),
            (
                ["--log-level", "loud[x"],
                "tandem: invalid log level \"loud[x\"; expected a level",
            ),
            (["--log-file", not_a_dir], "tandem: cannot open log file "),
        ];
        for (option, expected) in cases {
            let mut args = option.to_vec();
            args.extend(command);
            let child = tandem_without_log(&setup, &args).spawn().unwrap();
            let run = Run::of(child).await;
            assert_eq!(run.code, 2, "{args:?}: {run:#?}");
            assert!(run.stderr.starts_with(expected), "{args:?}: {run:#?}");
            assert_eq!(run.stdout, "", "{args:?}");
        }
    }
    // Nothing ran: not even a session was saved.
    let saved: Vec<_> = std::fs::read_dir(setup.state.path()).unwrap().collect();
    assert!(saved.is_empty(), "{saved:?}");
}

/// `args` run with a standard output whose reader is already gone, as `| head` leaves it once
/// head has read its lines.
async fn with_stdout_closed(setup: &Setup, args: &[&str]) -> Run {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut command = headless::tandem(setup.config.path(), setup.state.path());
    command.args(args).stdout(Stdio::from(writer));
    Run::of(command.spawn().unwrap()).await
}

/// Regression: `tandem tool … | head -2` ended with `tandem: Broken pipe (os error 32)`. A
/// command whose reader has gone ends quietly with 0, as ripgrep does; `ask` finishes its turn
/// (its edits are made) and exits as the turn ended.
#[tokio::test]
async fn a_closed_stdout_ends_each_command_quietly() {
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "x\n"}}]}),
            json!({"text": "Created new.txt."}),
        ],
        &[("a.txt", "alpha\n")],
    );
    let workspace = setup.workspace.path().to_str().unwrap();
    let read = json!({"path": "a.txt"}).to_string();
    let commands: [&[&str]; 4] = [
        &["tool", "--list"],
        &[
            "tool",
            "read_file",
            "--args",
            &read,
            "--workspace",
            workspace,
        ],
        &["models", "--workspace", workspace],
        &["sessions", "--json", "--workspace", workspace],
    ];
    for args in commands {
        let run = with_stdout_closed(&setup, args).await;
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{args:?}");
    }

    let run = with_stdout_closed(
        &setup,
        &[
            "ask",
            "create new.txt",
            "--approval-mode",
            "auto_edit",
            "--workspace",
            workspace,
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&["✓ Write new.txt\n"]);
    assert!(!run.stderr.contains("tandem:"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(Path::new(workspace).join("new.txt")).unwrap(),
        "x\n"
    );
}

/// `tandem settings-schema` prints the settings' JSON Schema, the one committed as
/// docs/settings.schema.json (which `settings_schema_file_is_up_to_date` keeps current), and
/// nothing else.
#[tokio::test]
async fn settings_schema_prints_the_committed_schema() {
    let child = Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("settings-schema")
        .env_remove("TANDEM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let run = Run::of(child).await;
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:#?}");
    assert_eq!(run.stdout, include_str!("../../docs/settings.schema.json"));
    let printed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed, tandem_agent::settings::settings_schema());
}

/// Issue 38: `tandem models --workspace /nonexistent` exited 0 while `ask` exited 2; and a
/// settings file with comments and trailing commas (as VS Code, Zed and Gemini CLI accept) was
/// an error, as was an empty one ("EOF while parsing a value at line 1 column 0").
#[tokio::test]
async fn models_accepted_a_missing_workspace_and_refused_commented_settings() {
    let setup = Setup::replay(&[json!({"text": "never asked"})], &[]);
    let missing = setup.workspace.path().join("nonexistent");
    let missing = missing.to_str().unwrap();
    for command in [
        &["models", "--workspace", missing][..],
        &["ask", "hi", "--workspace", missing],
    ] {
        let run = setup.tandem(command, None).await;
        assert_eq!(run.code, 2, "{command:?}: {run:#?}");
        run.assert_stderr_has(&["cannot use ", "nonexistent as the workspace"]);
    }

    let settings = setup.config.path().join("settings.json");
    let workspace = setup.workspace.path().to_str().unwrap();
    let commented = "{\n  // the replay model\n  \"model\": \"demo\",\n  /* its script */\n  \
                     \"models\": {\"demo\": {\"provider\": \"replay\", \"script\": \"script.jsonl\",},},\n}\n";
    for text in [commented, "", "\n  \n"] {
        std::fs::write(&settings, text).unwrap();
        let run = setup
            .tandem(&["models", "--workspace", workspace], None)
            .await;
        // An empty file is no settings at all: the fallback model, whether or not it runs here.
        if text == commented {
            assert_eq!(run.code, 0, "{run:#?}");
        }
        assert!(
            !run.stdout.contains("The settings cannot be used"),
            "{text:?}: {run:#?}"
        );
    }
}
