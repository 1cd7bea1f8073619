//! The second review's finding 9: files that tools read by themselves and that name programs
//! to run were not protected, so in `auto_edit` the agent could write `.cargo/config.toml`
//! (`rustc-wrapper`, `runner`) or a `.code-workspace` file (a task run when the folder opens)
//! and a later allowed command, or opening the folder, ran its program. Writing one now asks, in
//! every mode.

use serde_json::json;

use super::super::ask::Setup;
use super::{calls_with_status, one_by_one, shell};

#[tokio::test]
async fn configuration_that_names_programs_for_tools_is_protected() {
    let files = [
        (
            ".cargo/config.toml",
            "[build]\nrustc-wrapper = \"./wrap.sh\"\n",
        ),
        (
            "app.code-workspace",
            r#"{"tasks": {"version": "2.0.0", "tasks": [{"label": "x", "type": "shell", "command": "./x.sh", "runOptions": {"runOn": "folderOpen"}}]}}"#,
        ),
        (
            "rust-toolchain.toml",
            "[toolchain]\npath = \"./toolchain\"\n",
        ),
        ("web/.npmrc", "script-shell=./x.sh\n"),
        (".yarnrc.yml", "yarnPath: ./x.cjs\n"),
    ];
    let mut calls: Vec<(&str, serde_json::Value)> = files
        .iter()
        .map(|(path, content)| ("write_file", json!({"path": path, "content": content})))
        .collect();
    calls.push(shell(
        "printf '[target.x]\\nrunner = \"./x.sh\"\\n' > .cargo/config",
    ));
    calls.push((
        "write_file",
        json!({"path": "src/main.rs", "content": "fn main() {}\n"}),
    ));
    let setup = Setup::replay_with(
        &one_by_one(&calls),
        json!({"approval": {"mode": "yolo"}}),
        &[],
    );
    let run = setup.ask("speed up the build", &["--json"]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let asked = calls_with_status(&run, "awaitingApproval");
    assert_eq!(asked.len(), files.len() + 1, "{}", run.stdout);
    for call in &asked {
        let reason = call["approvalReason"].as_str().unwrap();
        assert!(reason.starts_with("it writes a protected path"), "{reason}");
    }
    for (path, _) in files {
        assert!(!setup.path(path).exists(), "{path} was written");
    }
    assert!(!setup.path(".cargo/config").exists());
    // The project's code is not configuration: it is written.
    assert!(setup.path("src/main.rs").exists());
}
