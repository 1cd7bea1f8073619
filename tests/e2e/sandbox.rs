//! The OS sandbox end to end: the built `tandem` (through `tandem ask`, `tandem mcp list` and
//! `tandem lsp` under real Neovim) runs a probe command that tries everything the sandbox
//! forbids — write outside the workspace (an unrelated folder, the home directory), write
//! `.git/hooks` inside it, read `~/.ssh/id_rsa` and Tandem's settings, connect to a TCP server
//! the test listens with on 127.0.0.1 — and the test checks that none of it happened, while the
//! probe's own marker in the workspace proves it ran. The same probe runs as the program a
//! committed repository's config makes git run, as a hook, and as an MCP server. Each run has
//! its own home (holding the key), temp folder and settings.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tempfile::TempDir;

use super::ask::Setup;
use super::headless::{self, Run};

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test-key";

/// A home with an SSH key, a temp folder, an unrelated folder, and a listening TCP server.
struct Probe {
    home: TempDir,
    tmp: TempDir,
    elsewhere: TempDir,
    listener: TcpListener,
}

impl Probe {
    fn new() -> Probe {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_rsa"), KEY).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Probe {
            home,
            tmp: tempfile::tempdir().unwrap(),
            elsewhere: tempfile::tempdir().unwrap(),
            listener,
        }
    }

    /// The variables that give Tandem (and so the commands) this home and temp folder.
    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.home.path().to_path_buf()),
            ("TMPDIR", self.tmp.path().to_path_buf()),
        ]
    }

    /// A command line that tries each forbidden thing, leaving what it got in `workspace`
    /// (`ran` first, so a probe that did not run is told from one that was stopped).
    fn command(&self, workspace: &Path, config: &Path) -> String {
        let port = self.listener.local_addr().unwrap().port();
        let out = workspace.display();
        format!(
            "echo ran > {out}/ran; \
             echo pwned > {elsewhere}/pwned; \
             echo pwned > $HOME/pwned; \
             g=.gi; echo pwned > {out}/${{g}}t/hooks/pre-commit; \
             cat $HOME/.ssh/id_rsa > {out}/leaked-key; \
             cat {config_glob}/settings.json > {out}/leaked-settings; \
             (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected > {out}/connected; \
             true",
            elsewhere = self.elsewhere.path().display(),
            // A glob, so that the approval step does not see Tandem's settings folder named.
            config_glob = {
                let config = config.display().to_string();
                format!("{}?", &config[..config.len() - 1])
            },
        )
    }

    /// The probe ran in `workspace` and achieved nothing it tried.
    fn assert_confined(&self, workspace: &Path, context: &dyn std::fmt::Debug) {
        assert!(
            workspace.join("ran").exists(),
            "the probe never ran: {context:?}"
        );
        assert!(
            !self.elsewhere.path().join("pwned").exists(),
            "wrote outside: {context:?}"
        );
        assert!(
            !self.home.path().join("pwned").exists(),
            "wrote home: {context:?}"
        );
        assert!(
            !workspace.join(".git/hooks/pre-commit").exists(),
            "wrote a hook: {context:?}"
        );
        let key = std::fs::read_to_string(workspace.join("leaked-key")).unwrap_or_default();
        assert!(!key.contains(KEY), "read the key: {context:?}");
        let settings =
            std::fs::read_to_string(workspace.join("leaked-settings")).unwrap_or_default();
        assert!(
            !settings.contains("models"),
            "read the settings: {context:?}"
        );
        assert!(
            !workspace.join("connected").exists(),
            "connected: {context:?}"
        );
        assert_eq!(
            self.listener
                .accept()
                .map(|_| ())
                .map_err(|error| error.kind()),
            Err(ErrorKind::WouldBlock),
            "the server was reached: {context:?}"
        );
    }
}

/// `git init` in `dir`, as a user's clone would have it.
fn git_init(dir: &Path) {
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
}

/// `tandem ARGS…` with the probe's home and temp folder.
async fn tandem(setup: &Setup, probe: &Probe, args: &[&str]) -> Run {
    let mut command = headless::tandem(setup.config.path(), setup.state.path());
    command.args(args).envs(probe.env());
    Run::of(command.spawn().unwrap()).await
}

/// `tandem ask probe --workspace ROOT ARGS…` with the probe's home and temp folder.
async fn ask(setup: &Setup, probe: &Probe, args: &[&str]) -> Run {
    let root = setup.workspace.path().to_str().unwrap().to_owned();
    let mut all = vec!["ask", "probe", "--workspace", &root];
    all.extend(args);
    tandem(setup, probe, &all).await
}

/// A workspace that is a git repository holding `files`, with the replay model's user settings
/// and `extra`; and the workspace's path, canonical (as the commands see it).
fn repository(extra: Value, files: &[(&str, &str)]) -> (Setup, PathBuf) {
    let setup = Setup::replay_with(&[], extra, files);
    git_init(setup.workspace.path());
    let root = std::fs::canonicalize(setup.workspace.path()).unwrap();
    (setup, root)
}

fn shell_then_done(command: &str) -> Vec<Value> {
    vec![
        json!({"toolCalls": [{"name": "shell", "arguments": {"command": command}}]}),
        json!({"text": "Probed."}),
    ]
}

#[tokio::test]
async fn tandem_sandbox_check_says_commands_are_confined_here() {
    let setup = Setup::replay(&[], &[]);
    let probe = Probe::new();
    let workspace = setup.workspace.path().to_str().unwrap().to_owned();
    let run = tandem(
        &setup,
        &probe,
        &["sandbox", "check", "--workspace", &workspace, "--json"],
    )
    .await;
    // This machine's kernel has Landlock and user namespaces; the sandbox must be whole here.
    assert_eq!(run.code, 0, "{run:#?}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(report["support"]["landlock"]["Ok"].as_u64().unwrap() >= 1);
    let confined = &report["plan"]["confined"];
    assert_eq!(confined["network"], false);
    let hidden: Vec<&str> = confined["hidden"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let key_folder = std::fs::canonicalize(probe.home.path().join(".ssh")).unwrap();
    assert!(hidden.contains(&key_folder.to_str().unwrap()), "{hidden:?}");
}

#[tokio::test]
async fn a_sandboxed_command_writes_only_the_workspace_reads_no_secret_and_reaches_no_server() {
    let probe = Probe::new();
    let (setup, root) = repository(json!({"approval": {"mode": "yolo"}}), &[]);
    setup.write_script(&shell_then_done(&probe.command(&root, setup.config.path())));
    let run = ask(&setup, &probe, &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    probe.assert_confined(&root, &run);
    assert!(run.stdout.contains("Probed."), "{}", run.stdout);
}

#[tokio::test]
async fn the_network_setting_lets_commands_connect() {
    let probe = Probe::new();
    let (setup, _) = repository(
        json!({"approval": {"mode": "yolo"}, "sandbox": {"network": true}}),
        &[],
    );
    let port = probe.listener.local_addr().unwrap().port();
    let command = format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected > connected");
    setup.write_script(&shell_then_done(&command));
    let run = ask(&setup, &probe, &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(setup.path("connected").exists(), "{run:#?}");
}

/// A checkout can commit a folder that is a repository whose `config` names a program for git
/// to run (`core.fsmonitor`); here the command even lets git use it. The program runs — inside
/// the sandbox, where it achieves nothing.
#[tokio::test]
async fn a_committed_repository_config_runs_its_program_inside_the_sandbox() {
    let probe = Probe::new();
    let (setup, root) = repository(json!({"approval": {"mode": "yolo"}}), &[]);
    let lib = root.join("vendor/lib");
    std::fs::create_dir_all(&lib).unwrap();
    let status = std::process::Command::new("git")
        .args(["init", "-q", "--bare", "."])
        .current_dir(&lib)
        .status()
        .unwrap();
    assert!(status.success());
    let payload = root.join("payload.sh");
    std::fs::write(
        &payload,
        format!("#!/bin/sh\n{}\n", probe.command(&root, setup.config.path())),
    )
    .unwrap();
    std::fs::set_permissions(
        &payload,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(
        lib.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\t\
             fsmonitor = \"{}\"\n",
            payload.display()
        ),
    )
    .unwrap();
    setup.write_script(&shell_then_done(
        "git -c safe.bareRepository=all -C vendor/lib status",
    ));
    let run = ask(&setup, &probe, &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    probe.assert_confined(&root, &run);
}

#[tokio::test]
async fn a_hook_runs_in_the_sandbox() {
    let probe = Probe::new();
    let (setup, root) = repository(json!({}), &[]);
    let command = probe.command(&root, setup.config.path());
    setup.write_settings(json!({
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]},
    }));
    setup.write_script(&[json!({"text": "Probed."})]);
    let run = ask(&setup, &probe, &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    probe.assert_confined(&root, &run);
}

#[tokio::test]
async fn an_mcp_server_runs_in_the_sandbox() {
    let probe = Probe::new();
    let (setup, root) = repository(json!({}), &[]);
    let command = probe.command(&root, setup.config.path());
    setup.write_settings(json!({
        "mcpServers": {"probe": {"command": "sh", "args": ["-c", command]}},
    }));
    let workspace_arg = root.to_str().unwrap().to_owned();
    let run = tandem(
        &setup,
        &probe,
        &["mcp", "list", "--workspace", &workspace_arg],
    )
    .await;
    // The probe is no MCP server: it exits, and the listing says the server failed.
    assert_eq!(run.code, 1, "{run:#?}");
    probe.assert_confined(&root, &run);
}

#[tokio::test]
async fn a_c_project_builds_and_runs_in_the_sandbox() {
    let probe = Probe::new();
    let (setup, _) = repository(
        json!({"approval": {"mode": "yolo"}}),
        &[(
            "hello.c",
            "#include <stdio.h>\nint main(void) { puts(\"hello from the sandbox\"); return 0; }\n",
        )],
    );
    setup.write_script(&shell_then_done(
        "mkdir -p build && cc -o build/hello hello.c && ./build/hello > build/said.txt",
    ));
    let run = ask(&setup, &probe, &[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let said = std::fs::read_to_string(setup.path("build/said.txt")).unwrap_or_default();
    assert_eq!(said, "hello from the sandbox\n", "{run:#?}");
}

/// The approval prompt says the command runs sandboxed; `autoAllow` runs it without asking; a
/// call asking for the network asks even then, and says why.
#[tokio::test]
async fn approvals_show_the_sandbox_and_escalations_always_ask() {
    let probe = Probe::new();
    let script = vec![
        json!({"toolCalls": [{"name": "shell", "arguments": {"command": "echo inside > inside"}}]}),
        json!({"toolCalls": [{"name": "shell", "arguments": {
            "command": "echo fetched > fetched",
            "escalate": "network"
        }}]}),
        json!({"text": "Probed."}),
    ];
    // Default mode: both ask (headless, asking refuses), and the prompt names the sandbox.
    let (setup, _) = repository(json!({}), &[]);
    setup.write_script(&script);
    let run = ask(&setup, &probe, &["--json"]).await;
    let asked: Vec<String> = run
        .json_lines()
        .into_iter()
        .filter(|event| event["type"] == "toolCall" && event["status"] == "awaitingApproval")
        .map(|event| event["details"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(asked.len(), 2, "{}", run.stdout);
    assert!(
        asked[0].contains("Sandboxed: it can write only in"),
        "{}",
        asked[0]
    );
    assert!(asked[0].contains("the network is off"), "{}", asked[0]);
    assert!(
        asked[1].contains("because the call asks to run with the network."),
        "{}",
        asked[1]
    );
    assert!(asked[1].contains("the network is on"), "{}", asked[1]);
    assert!(!setup.path("inside").exists());

    // autoAllow: the sandboxed command runs, the escalation still asks.
    let (setup, _) = repository(json!({"sandbox": {"autoAllow": true}}), &[]);
    setup.write_script(&script);
    let run = ask(&setup, &probe, &["--json"]).await;
    assert!(setup.path("inside").exists(), "{run:#?}");
    assert!(!setup.path("fetched").exists(), "{run:#?}");
}

/// `tandem lsp` under real Neovim: the agent's shell command is confined the same way.
#[tokio::test]
async fn a_command_the_agent_runs_from_neovim_is_sandboxed() {
    use super::nvim::{nvim_available, run_scenario};
    use super::real_editor::Scenario;
    if !nvim_available() {
        return;
    }
    let probe = Probe::new();
    let scenario = Scenario::new("yolo", &[("notes.txt", "notes\n")], &[]);
    git_init(scenario.workspace.path());
    let root = std::fs::canonicalize(scenario.workspace.path()).unwrap();
    std::fs::create_dir(scenario.home.path().join(".ssh")).unwrap();
    std::fs::write(scenario.home.path().join(".ssh/id_rsa"), KEY).unwrap();
    let command = probe.command(&root, scenario.config.path());
    let lines: Vec<String> = shell_then_done(&command)
        .iter()
        .map(Value::to_string)
        .collect();
    std::fs::write(
        scenario.config.path().join("script.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    run_scenario(
        "sandbox",
        &scenario,
        &[
            ("TANDEM_BIN", PathBuf::from(env!("CARGO_BIN_EXE_tandem"))),
            ("HOME", scenario.home.path().to_path_buf()),
            ("TMPDIR", probe.tmp.path().to_path_buf()),
        ],
    )
    .await;
    probe.assert_confined(&root, &"nvim");
    assert!(!scenario.home.path().join("pwned").exists());
}
