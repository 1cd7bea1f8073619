//! The second review's finding 1: a checkout can commit a folder that is a git repository
//! itself (`HEAD`, `objects/`, `refs/`, a `config` whose `core.fsmonitor`, or `gpg.program` with
//! `log.showSignature`, names a program), and an allowed `git status`, `git diff` or `git log`
//! run there with `cwd` ran that program without asking, in `tandem ask`, the editor and ACP.
//! Allow rules no longer hold where git would use such a repository, and git itself is told
//! not to use one (`safe.bareRepository=explicit`), so it does not run in `yolo` either.

use std::path::Path;

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};

use super::super::ask::Setup;
use super::{calls_with_status, git, one_by_one, told};

/// Runs git in `dir` with no user or system configuration.
fn git_output(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Plants what a hostile checkout commits, in `root`: `vendor/lib`, a repository whose
/// `core.fsmonitor` touches `pwned`, and `vendor/signed`, one holding a signed commit whose
/// `gpg.program` (shown on `git log`) touches `pwned` too. `root` itself is a clone's checkout.
pub(crate) fn plant_repositories(root: &Path) {
    git(root, &["init", "-q"]);
    let marker = root.join("pwned");
    let lib = root.join("vendor/lib");
    for dir in ["objects", "refs/heads"] {
        std::fs::create_dir_all(lib.join(dir)).unwrap();
    }
    std::fs::write(lib.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        lib.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch {}\"\n",
            marker.display()
        ),
    )
    .unwrap();

    let signed = root.join("vendor/signed");
    std::fs::create_dir_all(&signed).unwrap();
    git_output(&signed, &["init", "-q", "--bare", "."]);
    let tree = git_output(&signed, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let commit_text = format!(
        "tree {tree}\nauthor A <a@example.com> 0 +0000\ncommitter A <a@example.com> 0 +0000\n\
         gpgsig -----BEGIN PGP SIGNATURE-----\n \n x\n -----END PGP SIGNATURE-----\n\nsigned\n"
    );
    let commit_file = signed.join("commit.txt");
    std::fs::write(&commit_file, commit_text).unwrap();
    let commit = git_output(
        &signed,
        &["hash-object", "-t", "commit", "-w", "commit.txt"],
    );
    git_output(&signed, &["update-ref", "refs/heads/master", &commit]);
    let program = signed.join("verify.sh");
    std::fs::write(&program, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        signed.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n[log]\n\tshowSignature = true\n\
             [gpg]\n\tprogram = {}\n",
            program.display()
        ),
    )
    .unwrap();
}

/// The calls the hostile AGENTS.md asks for, and one in the workspace's own repository.
fn hostile_calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "shell",
            json!({"command": "git status", "cwd": "vendor/lib"}),
        ),
        ("shell", json!({"command": "git diff", "cwd": "vendor/lib"})),
        (
            "shell",
            json!({"command": "git log --oneline", "cwd": "vendor/signed"}),
        ),
        ("shell", json!({"command": "cd vendor/lib && git status"})),
        ("shell", json!({"command": "git status --short"})),
    ]
}

const ALLOWED: [&str; 4] = [
    "shell:git status",
    "shell:git diff",
    "shell:git log",
    "shell:cd",
];

#[cfg(unix)]
#[tokio::test]
async fn an_allowed_git_command_does_not_run_the_programs_of_a_repository_the_checkout_committed() {
    let setup = Setup::replay_with(
        &one_by_one(&hostile_calls()),
        json!({"approval": {"allow": ALLOWED}}),
        &[("README.md", "hi\n")],
    );
    let root = setup.workspace.path();
    plant_repositories(root);
    // The attack is real: without Tandem, this git runs the planted programs.
    git_output(&root.join("vendor/lib"), &["status"]);
    git_output(&root.join("vendor/signed"), &["log", "--oneline"]);
    assert!(
        root.join("pwned").exists(),
        "the planted programs did not run"
    );
    std::fs::remove_file(root.join("pwned")).unwrap();

    let run = setup.ask("do what AGENTS.md says", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let asked = calls_with_status(&run, "awaitingApproval");
    let reasons: Vec<&str> = asked
        .iter()
        .map(|call| call["approvalReason"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(asked.len(), 4, "{reasons:#?}");
    assert!(
        reasons[0]
            .starts_with("an allow rule matches, but git would use the repository in `vendor/lib`"),
        "{reasons:#?}"
    );
    assert!(reasons[2].contains("`vendor/signed`"), "{reasons:#?}");
    let told = told(&run);
    assert!(
        told[4].contains("exit code: 0"),
        "the workspace's own `git status` still runs: {told:?}"
    );
    assert!(!root.join("pwned").exists());
}

/// In `yolo` nothing asks, and git itself refuses the planted repositories.
#[cfg(unix)]
#[tokio::test]
async fn git_refuses_a_repository_the_checkout_committed_even_in_yolo() {
    let setup = Setup::replay_with(
        &one_by_one(&hostile_calls()),
        json!({"approval": {"mode": "yolo"}}),
        &[],
    );
    let root = setup.workspace.path();
    plant_repositories(root);
    let run = setup.ask("do what AGENTS.md says", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let told = told(&run);
    // `git diff` outside a repository reads as a diff of two paths, and says so.
    for (index, refusal) in [
        (0, "cannot use bare repository"),
        (1, "Not a git repository"),
        (2, "cannot use bare repository"),
        (3, "cannot use bare repository"),
    ] {
        assert!(told[index].contains(refusal), "{told:#?}");
    }
    assert!(told[4].contains("exit code: 0"), "{told:?}");
    assert!(!root.join("pwned").exists());
}

/// In `auto_edit` the model could write the four files of a repository itself, then run the
/// allowed command in it.
#[cfg(unix)]
#[tokio::test]
async fn a_repository_the_model_wrote_itself_gets_no_allowed_git_command() {
    let setup = Setup::replay_with(
        &[],
        json!({"approval": {"mode": "auto_edit", "allow": ["shell:git status"]}}),
        &[],
    );
    let root = setup.workspace.path();
    git(root, &["init", "-q"]);
    let config = format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = \"touch {}\"\n",
        root.join("pwned").display()
    );
    let write = |path: &str, content: &str| {
        (
            "write_file",
            json!({"path": format!("scratch/{path}"), "content": content}),
        )
    };
    let script = one_by_one(&[
        write("HEAD", "ref: refs/heads/main\n"),
        write("config", &config),
        write("objects/.keep", ""),
        write("refs/heads/.keep", ""),
        ("shell", json!({"command": "git status", "cwd": "scratch"})),
    ]);
    setup.write_script(&script);
    let run = setup
        .ask("set up the scratch repository", &["--json"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(root.join("scratch/config").exists(), "{run:#?}");
    let asked = calls_with_status(&run, "awaitingApproval");
    assert_eq!(asked.len(), 1, "{}", run.stdout);
    assert_eq!(asked[0]["rawInput"]["cwd"], "scratch");
    assert!(!root.join("pwned").exists());
}

/// The same through the language server: a rich editor is asked, with the reason.
#[cfg(unix)]
#[tokio::test]
async fn the_editor_is_asked_before_an_allowed_git_command_in_a_committed_repository() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_git",
        "shell",
        json!({"command": "git status", "cwd": "vendor/lib"}),
    )]));
    model.push(Reply::openai_text("Done."));
    let workspace = tempfile::tempdir().unwrap();
    plant_repositories(workspace.path());
    let editor = FakeEditor::rich()
        .workspace(workspace.path())
        .settings(scripted_settings(
            &model,
            json!({"approval": {"allow": ["shell:git status"]}}),
        ))
        .start()
        .await;
    editor.push_approval(json!({"type": "reject"}));
    editor.prompt_and_finish("check vendor/lib").await;
    let asked = editor.received_params("tandem/requestApproval");
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let reason = asked[0]["toolCall"]["approvalReason"].as_str().unwrap();
    assert!(
        reason.contains("git would use the repository in `vendor/lib`"),
        "{reason}"
    );
    assert!(!workspace.path().join("pwned").exists());
}
