//! Slash commands and @-mentions through the front ends, against the scripted model server:
//! `tandem/commands` lists what an editor may complete; a project command typed as a prompt
//! (in the editor and in `tandem ask`) reaches the model expanded, its shell block's output
//! and its arguments in place; a prompt's `@file` reaches it attached; `/help` never reaches it.

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};

use super::headless::{self, Run};

/// The text of every message of a model request, joined.
fn shown(request: &Value) -> String {
    request["messages"].to_string()
}

async fn editor(model: &ModelServer) -> FakeEditor {
    let editor = FakeEditor::rich()
        .settings(scripted_settings(
            model,
            json!({"approval": {"mode": "yolo"}}),
        ))
        .start()
        .await;
    editor.write_file(
        ".gemini/commands/git/commit.toml",
        "description = \"Commit with a message\"\n\
         prompt = \"On branch !{printf main}, commit the staged changes: {{args}}\"\n",
    );
    editor.write_file(
        ".claude/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: <path>\n---\nReview @$1 for bugs.\n",
    );
    editor.write_file(".tandem/commands/broken.toml", "prompt = [\n");
    editor.write_file("notes.txt", "Kumquats are small citrus fruits.\n");
    editor
}

async fn prompt(editor: &FakeEditor, text: &str) -> Value {
    let started = editor
        .request("tandem/prompt", json!({ "text": text }))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    editor.wait_turn_finished(&turn).await
}

#[tokio::test]
async fn the_editor_lists_commands_and_a_typed_command_reaches_the_model_expanded() {
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Done."));
    let editor = editor(&model).await;

    let listed = editor.request("tandem/commands", json!({})).await.unwrap();
    let commands = listed["commands"].as_array().unwrap();
    let find = |name: &str| {
        commands
            .iter()
            .find(|command| command["name"] == name)
            .unwrap_or_else(|| panic!("no /{name} in {listed:#}"))
    };
    assert_eq!(find("help")["source"], "builtIn");
    assert_eq!(find("git:commit")["source"], "project");
    assert_eq!(find("git:commit")["description"], "Commit with a message");
    assert_eq!(find("review")["argumentHint"], "<path>");
    let warnings = listed["warnings"].to_string();
    assert!(warnings.contains("broken.toml"), "{warnings}");

    let finished = prompt(&editor, "/git:commit fix the typo").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let sent = shown(&model.chat_requests()[0]);
    assert!(
        sent.contains("On branch main, commit the staged changes: fix the typo"),
        "{sent}"
    );

    let finished = prompt(&editor, "/review notes.txt").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    let sent = shown(model.chat_requests().last().unwrap());
    assert!(sent.contains("Review @notes.txt for bugs."), "{sent}");
    assert!(sent.contains("Kumquats are small citrus fruits."), "{sent}");

    // Help is Tandem's own answer: the model is not asked.
    let before = model.chat_requests().len();
    let finished = prompt(&editor, "/help").await;
    assert_eq!(finished["stopReason"], "end_turn", "{finished}");
    assert_eq!(model.chat_requests().len(), before);
}

#[tokio::test]
async fn ask_runs_a_user_command_and_attaches_mentioned_files() {
    let model = ModelServer::start().await;
    model.respond_with(|_| Reply::openai_text("Looked."));
    let config = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        config.path().join("settings.json"),
        scripted_settings(&model, json!({})).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(config.path().join("commands")).unwrap();
    std::fs::write(
        config.path().join("commands/explain.toml"),
        "prompt = \"Explain {{args}} simply.\"\n",
    )
    .unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "Kumquats are small.\n").unwrap();
    let ask = |prompt: &str| {
        let mut command = headless::tandem(config.path(), state.path());
        command
            .current_dir(workspace.path())
            .env("HOME", config.path())
            .args(["ask", prompt]);
        command
    };

    let run = Run::of(ask("/explain @notes.txt").spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    let sent = shown(&model.chat_requests()[0]);
    assert!(sent.contains("Explain @notes.txt simply."), "{sent}");
    assert!(sent.contains("Kumquats are small."), "{sent}");

    let run = Run::of(ask("/help").spawn().unwrap()).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("/explain"), "{run:#?}");
    assert!(
        run.stdout.contains("/memory show | add <text> | reload"),
        "{run:#?}"
    );
    assert_eq!(model.chat_requests().len(), 1);
}
