//! What the agent runs sees what the agent wrote: its edits land unsaved in open buffers, and
//! before a shell command, a search or an MCP tool reads the disk, an editor that can save
//! (`saveDocuments`) is asked to save those buffers. A plain client cannot be asked: the command
//! reads the disk as it is and the model is told which of its changes it did not see.

use serde_json::{json, Value};
use tandem_test_support::reference::Pos;
use tandem_test_support::{scripted_settings, FakeEditor, ModelServer, Reply};

use super::mcp::tool_results;

const NOTES: &str = "total: 4\n";
const FIXED: &str = "total: 5\n";

/// The model reads notes.txt and fixes it in the buffer.
fn script_fix(model: &ModelServer) {
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "notes.txt"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "notes.txt", "old_string": "total: 4", "new_string": "total: 5"}),
    )]));
}

/// The model fixes notes.txt, then has the shell print it.
fn script_fix_then_cat(model: &ModelServer) {
    script_fix(model);
    model.push(Reply::openai_tool_calls(&[(
        "call_cat",
        "shell",
        json!({"command": "cat notes.txt"}),
    )]));
    model.push(Reply::openai_text("Checked."));
}

/// The shell's result, as the model read it.
fn shell_result(model: &ModelServer) -> String {
    let request = model.chat_requests().pop().unwrap();
    tool_results(&request).pop().unwrap()
}

async fn run_turn(editor: &FakeEditor, text: &str) {
    let end = editor.prompt_and_finish(text).await;
    assert!(
        end["stopReason"] == "end_turn" || end["kind"] == "end",
        "{end}"
    );
}

fn yolo(model: &ModelServer, extra: Value) -> Value {
    let mut settings = scripted_settings(model, json!({"approval": {"mode": "yolo"}}));
    if let (Value::Object(settings), Value::Object(extra)) = (&mut settings, extra) {
        settings.extend(extra);
    }
    settings
}

/// Regression test for "fix it and run the tests" failing in the editor: the agent's edit sat
/// unsaved in the buffer while the command read the old file from disk.
#[tokio::test]
async fn a_command_sees_the_agents_edit_once_the_editor_saved_it() {
    let model = ModelServer::start().await;
    script_fix_then_cat(&model);
    let editor = FakeEditor::rich()
        .settings(yolo(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("notes.txt", NOTES).await;
    // The user's unsaved typing in another buffer is not saved behind their back.
    let other = editor.open("other.txt", "draft\n").await;
    editor
        .type_at(
            &other,
            Pos {
                line: 0,
                character: 5,
            },
            " more",
        )
        .await;

    run_turn(&editor, "fix the total and show the file").await;
    let result = shell_result(&model);
    assert!(result.contains(FIXED), "{result}");
    assert!(!result.contains("not saved"), "{result}");
    assert_eq!(
        std::fs::read_to_string(editor.root().join("notes.txt")).unwrap(),
        FIXED
    );
    assert_eq!(editor.buffer_text(&uri).await, FIXED);
    assert_eq!(
        std::fs::read_to_string(editor.root().join("other.txt")).unwrap(),
        "draft\n"
    );
    let asked = editor.received_params("tandem/saveDocuments");
    assert_eq!(asked, vec![json!({"uris": [uri]})]);
}

/// A client that cannot save keeps the buffer unsaved, and the model is told what the command
/// did not see.
#[tokio::test]
async fn a_plain_client_keeps_the_buffer_and_the_model_is_told() {
    let model = ModelServer::start().await;
    script_fix_then_cat(&model);
    let editor = FakeEditor::plain()
        .settings(yolo(&model, json!({})))
        .start()
        .await;
    let uri = editor.open("notes.txt", NOTES).await;

    run_turn(&editor, "fix the total and show the file").await;
    let result = shell_result(&model);
    assert!(result.contains(NOTES), "{result}");
    assert!(
        result.contains("your changes to ")
            && result.contains("notes.txt are in the editor's open buffer, not saved"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(editor.root().join("notes.txt")).unwrap(),
        NOTES
    );
    assert_eq!(editor.buffer_text(&uri).await, FIXED);
    assert!(editor.received_params("tandem/saveDocuments").is_empty());
}

/// `edits.saveBeforeCommands: false` leaves every buffer for the user to save.
#[tokio::test]
async fn the_setting_turns_saving_off() {
    let model = ModelServer::start().await;
    script_fix_then_cat(&model);
    let editor = FakeEditor::rich()
        .settings(yolo(
            &model,
            json!({"edits": {"saveBeforeCommands": false}}),
        ))
        .start()
        .await;
    editor.open("notes.txt", NOTES).await;

    run_turn(&editor, "fix the total and show the file").await;
    assert!(shell_result(&model).contains("not saved"));
    assert_eq!(
        std::fs::read_to_string(editor.root().join("notes.txt")).unwrap(),
        NOTES
    );
    assert!(editor.received_params("tandem/saveDocuments").is_empty());
}

/// Searching reads the disk too; a buffer the agent did not change is never saved.
#[tokio::test]
async fn grep_sees_the_edit_and_untouched_buffers_stay_unsaved() {
    let model = ModelServer::start().await;
    script_fix(&model);
    model.push(Reply::openai_tool_calls(&[(
        "call_grep",
        "grep",
        json!({"pattern": "total: 5"}),
    )]));
    model.push(Reply::openai_text("Found it."));
    let editor = FakeEditor::rich()
        .settings(yolo(&model, json!({})))
        .start()
        .await;
    editor.open("notes.txt", NOTES).await;
    let draft = editor.open("draft.txt", "total: 4\n").await;
    editor
        .type_at(
            &draft,
            Pos {
                line: 1,
                character: 0,
            },
            "typed\n",
        )
        .await;

    run_turn(&editor, "fix the total and find it").await;
    let result = shell_result(&model);
    assert!(result.contains("notes.txt"), "{result}");
    assert_eq!(
        std::fs::read_to_string(editor.root().join("draft.txt")).unwrap(),
        "total: 4\n"
    );
}

/// A hook is a command too: a PostToolUse hook after an edit (a formatter, a linter) reads the
/// file with the edit in it.
#[tokio::test]
async fn a_hook_after_an_edit_sees_the_edit() {
    let model = ModelServer::start().await;
    script_fix(&model);
    model.push(Reply::openai_text("Done."));
    let hooks = json!({"hooks": {"PostToolUse": [{
        "matcher": "edit",
        "hooks": [{"type": "command", "command": "cat notes.txt >&2; exit 2"}],
    }]}});
    let editor = FakeEditor::rich()
        .settings(yolo(&model, hooks))
        .start()
        .await;
    editor.open("notes.txt", NOTES).await;

    run_turn(&editor, "fix the total").await;
    let result = shell_result(&model);
    assert!(
        result.contains("A PostToolUse hook says: total: 5"),
        "{result}"
    );
}
