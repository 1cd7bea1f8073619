//! The second review's findings 2 and 8: the shell's path checks read words as text, not as
//! the program opens them. A committed link was never checked when its name had no `/`
//! (`cat notes` with `notes -> ~/.ssh/id_rsa` under `shell:cat`; `cat env` with `env ->
//! /proc/self/environ`), `..` was applied before links (`cat k/../.ssh/id_rsa` with `k` a link
//! out of the workspace was judged inside it; `cp payload h/../config` with `h -> .git/hooks`
//! replaced `.git/config`), and a word naming a protected folder itself was skipped (`cp -r
//! hooks .git`, `cd .git && printf … >> config` ran in `yolo` without asking).

use serde_json::{json, Value};

use super::super::ask::Setup;
use super::{calls_with_status, git, one_by_one, shell, told};

const SECRET: &str = "PRIVATE-KEY-MATERIAL";

#[cfg(unix)]
#[tokio::test]
async fn an_allowed_cat_does_not_follow_committed_links_out_of_the_workspace() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), SECRET).unwrap();
    let attempts = [
        "cat notes",
        "cat env",
        "cat k/../.ssh/id_rsa",
        "cat README.md",
    ];
    let calls: Vec<(&str, Value)> = attempts.iter().map(|command| shell(command)).collect();
    let setup = Setup::replay_with(
        &one_by_one(&calls),
        json!({"approval": {"allow": ["shell:cat"]}}),
        &[("README.md", "read me\n")],
    );
    let link = |target: &std::path::Path, name: &str| {
        std::os::unix::fs::symlink(target, setup.path(name)).unwrap();
    };
    link(&home.path().join(".ssh/id_rsa"), "notes");
    link(std::path::Path::new("/proc/self/environ"), "env");
    link(&home.path().join(".ssh"), "k");
    let run = setup.ask("read the notes", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let asked: Vec<Value> = calls_with_status(&run, "awaitingApproval")
        .into_iter()
        .map(|call| call["rawInput"]["command"].clone())
        .collect();
    assert_eq!(asked, attempts[..3], "{}", run.stdout);
    let told = told(&run);
    assert!(told[3].contains("read me"), "{told:?}");
    assert!(!run.stdout.contains(SECRET));
}

/// Writes through a link and `..`, and to a protected folder named by itself, ask in `yolo`.
#[cfg(unix)]
#[tokio::test]
async fn shell_writes_into_git_through_links_or_by_the_folders_own_name_ask_even_in_yolo() {
    let attempts = [
        "cp payload h/../config",
        "cp -r hooks .git",
        "cd .git && printf '[core]\\n\\tfsmonitor = \"touch pwned\"\\n' >> config",
        "ls",
    ];
    let calls: Vec<(&str, Value)> = attempts.iter().map(|command| shell(command)).collect();
    let setup = Setup::replay_with(
        &one_by_one(&calls),
        json!({"approval": {"mode": "yolo"}}),
        &[
            ("payload", "[core]\n\tfsmonitor = \"touch pwned\"\n"),
            ("hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"),
        ],
    );
    let root = setup.workspace.path();
    git(root, &["init", "-q"]);
    std::os::unix::fs::symlink(".git/hooks", setup.path("h")).unwrap();
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    let run = setup.ask("install the hooks", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let asked = calls_with_status(&run, "awaitingApproval");
    let asked: Vec<&str> = asked
        .iter()
        .map(|call| call["rawInput"]["command"].as_str().unwrap())
        .collect();
    assert_eq!(asked, attempts[..3], "{}", run.stdout);
    for call in calls_with_status(&run, "awaitingApproval") {
        let reason = call["approvalReason"].as_str().unwrap();
        assert!(reason.starts_with("it writes a protected path"), "{reason}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        config
    );
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join(".git/pre-commit").exists());
}
