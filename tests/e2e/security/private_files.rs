//! Issue: transcripts and the log, which hold conversation text, were written readable by everyone.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use serde_json::json;
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};

use super::{one_by_one, shell, walk, Setup};

/// A command whose output holds a secret and is long enough (about 24 KB) to be saved whole
/// under `.tandem/tmp/`.
const PRINTS_A_SECRET: &str = "echo SECRET-35-hunter2; seq 1 5000";

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Gives `path` the mode an earlier version left it with.
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Everything below `dir`, and `dir` itself where Tandem made it: folders `0700`, files `0600`.
fn assert_private_tree(dir: &Path, made_by_tandem: bool) {
    let mut paths: Vec<PathBuf> = walk(dir);
    if made_by_tandem {
        paths.push(dir.to_path_buf());
    }
    assert!(!paths.is_empty(), "nothing in {}", dir.display());
    for path in &paths {
        let expected = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(path), expected, "{}", path.display());
    }
}

/// The text of every file below `dir`.
fn texts(dir: &Path) -> String {
    walk(dir)
        .into_iter()
        .filter(|path| path.is_file())
        .map(|path| String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned())
        .collect()
}

/// Finding 5 of the second review: a language server session's transcript (the prompt, the
/// answer, what `env` printed) was created `0644` in a `0755` folder, and so were the log and a
/// long command's saved output, while the saved session of the same conversation was `0600`.
/// Everything Tandem writes that holds the conversation — transcripts, the shell's saved
/// output, the log, a recording, saved sessions and the outputs they keep — is now the user's
/// alone, and what an earlier version left readable is tightened when Tandem writes to it.
#[tokio::test]
async fn transcripts_logs_and_saved_output_were_readable_by_everyone() {
    // The language server: the transcript, the shell's saved output, the saved session.
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_shell",
        "shell",
        json!({"command": PRINTS_A_SECRET}),
    )]));
    model.push(Reply::openai_text("It printed SECRET-35-hunter2."));
    let workspace = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let transcripts = workspace.path().join(".tandem/transcripts");
    std::fs::create_dir_all(&transcripts).unwrap();
    set_mode(&workspace.path().join(".tandem"), 0o755);
    set_mode(&transcripts, 0o755);
    let editor = FakeEditor::rich()
        .workspace(workspace.path())
        .state_dir(state.path())
        .settings(scripted_settings(
            &model,
            json!({"approval": {"mode": "yolo"}}),
        ))
        .start()
        .await;
    let finished = editor.prompt_and_finish("print the secret").await;
    assert_eq!(finished["stopReason"], "end_turn");
    assert!(texts(&transcripts).contains("## You\n\nprint the secret"));
    let tmp = workspace.path().join(".tandem/tmp");
    assert!(texts(&tmp).contains("SECRET-35-hunter2"));
    assert_private_tree(&transcripts, true);
    assert_private_tree(&tmp, true);
    // The state folder is the user's choice (`TANDEM_STATE_DIR`); what Tandem puts in it is
    // the saved session and its outputs.
    assert_private_tree(state.path(), false);
    // The project's own folder is left as the user has it.
    assert_eq!(mode(&workspace.path().join(".tandem")), 0o755);

    // `tandem ask`: the log file, a recording, the shell's saved output, the saved session.
    let setup = Setup::replay_with(
        &one_by_one(&[shell(PRINTS_A_SECRET)]),
        json!({"approval": {"mode": "yolo"}, "record": "recordings/session.jsonl"}),
        &[],
    );
    let log = setup.config.path().join("tandem.log");
    std::fs::write(&log, "an earlier run's lines\n").unwrap();
    set_mode(&log, 0o644);
    let tmp = setup.path(".tandem/tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    set_mode(&tmp, 0o755);
    let run = setup
        .ask("print the secret", &["--json", "--log-level", "debug"])
        .await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .starts_with("an earlier run's lines\n"));
    assert_eq!(mode(&log), 0o600);
    let recordings = setup.config.path().join("recordings");
    assert!(texts(&recordings).contains("Done."));
    assert!(texts(&tmp).contains("SECRET-35-hunter2"));
    assert_private_tree(&recordings, true);
    assert_private_tree(&tmp, true);
    assert_private_tree(setup.state.path(), false);
}
