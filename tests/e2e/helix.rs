//! Tandem in Helix, through the stand-in that declares what Helix 25.07.1 declares and does
//! what it does (`FakeEditor::helix`): code actions run the command they were listed with,
//! completion items are filtered by the word being typed, and every message lands in a one-line
//! status bar that keeps only the newest. The real Helix was checked with the same scenarios
//! (docs/editors.md says how).

use serde_json::{json, Value};
use tandem_test_support::reference::Pos;
use tandem_test_support::{completion_settings, scripted_settings, FakeEditor, ModelServer, Reply};

const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const DOCUMENTED: &str =
    "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

/// Helix with Tandem's settings (edits run without asking, as clients/helix/languages.toml
/// sets) on `model`.
async fn helix(model: &ModelServer) -> FakeEditor {
    FakeEditor::helix()
        .settings(scripted_settings(
            model,
            json!({"approval": {"mode": "auto_edit"}}),
        ))
        .start()
        .await
}

/// The action titled `title` among those offered for line `line` (0-based) of `uri`.
async fn action(editor: &FakeEditor, uri: &str, line: u32, title: &str) -> Value {
    action_with(editor, uri, line, json!([]), title).await
}

/// The same, with `diagnostics` under the cursor.
async fn action_with(
    editor: &FakeEditor,
    uri: &str,
    line: u32,
    diagnostics: Value,
    title: &str,
) -> Value {
    let range = tandem_test_support::editor::range(line, 0, line, 1);
    let actions = editor.code_actions(uri, range, diagnostics).await;
    actions
        .into_iter()
        .find(|action| {
            action["title"]
                .as_str()
                .is_some_and(|shown| shown.starts_with(title))
        })
        .unwrap_or_else(|| panic!("no action {title:?}"))
}

/// Runs `action` as Helix does and waits for the end of the turn it started.
async fn run(editor: &FakeEditor, action: &Value) -> Value {
    let started = editor
        .run_code_action_as_helix(action)
        .await
        .expect("Helix executed no command: the action was listed without one")
        .unwrap_or_else(|error| panic!("the command failed: {error}"));
    let turn = started["turnId"].as_str().unwrap_or_default().to_owned();
    editor.wait_turn_finished(&turn).await
}

/// The message Helix's status line shows last.
fn status_line(editor: &FakeEditor) -> String {
    let shown = editor.received_params("window/showMessage");
    let last = shown.last().unwrap_or_else(|| panic!("no message shown"));
    last["message"].as_str().unwrap_or_default().to_owned()
}

/// The model reads calc.py, replaces `old` with `new` in it, then answers `answer`.
fn script_edit(model: &ModelServer, old: &str, new: &str, answer: &str) {
    model.push(Reply::openai_tool_calls(&[(
        "call_read",
        "read_file",
        json!({"path": "calc.py"}),
    )]));
    model.push(Reply::openai_tool_calls(&[(
        "call_edit",
        "edit",
        json!({"path": "calc.py", "old_string": old, "new_string": new}),
    )]));
    model.push(Reply::openai_text(answer));
}

/// The model gives `add` a docstring.
fn script_docstring(model: &ModelServer) {
    script_edit(
        model,
        "def add(a, b):\n",
        "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n",
        "Documented add.\n\nThings to watch: nothing.",
    );
}

/// Regression test for every code action being a silent no-op in Helix 25.07.1: it declares
/// `resolveSupport` for `command`, so the actions were listed without one, and it runs the
/// command of the action as listed.
#[tokio::test]
async fn code_actions_were_a_silent_no_op_in_helix() {
    let model = ModelServer::start().await;
    script_docstring(&model);
    let editor = helix(&model).await;
    let uri = editor.open("calc.py", CALC).await;

    let document = action(&editor, &uri, 0, "Document this").await;
    assert_eq!(run(&editor, &document).await["kind"], "end");
    assert_eq!(editor.buffer_text(&uri).await, DOCUMENTED);
    // The answer in the status line, on one line: Helix runs lines together.
    assert_eq!(
        status_line(&editor),
        "Tandem: Documented add. Things to watch: nothing."
    );
}

/// "Fix this diagnostic" on a diagnostic from another server (ruff, in the real Helix).
#[tokio::test]
async fn fix_this_diagnostic_runs_in_helix() {
    let model = ModelServer::start().await;
    script_edit(&model, "import os\n", "", "Removed the unused import.");
    let editor = helix(&model).await;
    let uri = editor.open("calc.py", &format!("import os\n{CALC}")).await;
    let unused = json!([{
        "range": tandem_test_support::editor::range(0, 7, 0, 9),
        "severity": 2,
        "code": "F401",
        "source": "Ruff",
        "message": "`os` imported but unused",
    }]);

    let fix = action_with(&editor, &uri, 0, unused, "Fix this diagnostic: `os`").await;
    assert_eq!(run(&editor, &fix).await["kind"], "end");
    assert_eq!(editor.buffer_text(&uri).await, CALC);
    let asked = model.chat_requests()[0]["messages"].to_string();
    assert!(asked.contains("imported but unused"), "{asked}");
}

/// The `tandem:` comment: its action runs the instruction and the comment goes once the
/// edit has landed.
#[tokio::test]
async fn an_instruction_comment_runs_in_helix() {
    let model = ModelServer::start().await;
    script_edit(
        &model,
        "def sub(a, b):",
        "def subtract(a, b):",
        "Renamed sub to subtract.",
    );
    let editor = helix(&model).await;
    let uri = editor
        .open(
            "calc.py",
            &CALC.replace("def sub", "# tandem: rename to subtract\ndef sub"),
        )
        .await;

    let instruction = action(&editor, &uri, 5, "Run Tandem instruction: rename").await;
    assert_eq!(run(&editor, &instruction).await["kind"], "end");
    assert_eq!(
        editor.buffer_text(&uri).await,
        CALC.replace("def sub", "def subtract")
    );
}

/// Regression test for completions never appearing while typing in Helix: the item's
/// `filterText` was empty, which no typed prefix matches, so each keystroke cost a model call
/// and showed nothing.
#[tokio::test]
async fn completions_were_never_shown_while_typing_in_helix() {
    let model = ModelServer::start().await;
    model.respond_with(|_| {
        Reply::json(
            200,
            &json!({"choices": [{"text": "turn a * b"}]}).to_string(),
        )
    });
    let editor = FakeEditor::helix()
        .settings(completion_settings(
            &model,
            json!({"api": "completions", "debounceMs": 0}),
        ))
        .start()
        .await;
    let uri = editor.open("calc.py", "def mul(a, b):\n    \n").await;
    editor
        .type_at(
            &uri,
            Pos {
                line: 1,
                character: 4,
            },
            "re",
        )
        .await;

    let shown = editor
        .completion_menu_as_helix(
            &uri,
            Pos {
                line: 1,
                character: 6,
            },
        )
        .await;
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert_eq!(shown[0]["label"], "return a * b");
    assert_eq!(model.requests().len(), 1);
    editor.accept_completion_as_helix(&uri, &shown[0]).await;
    assert_eq!(
        editor.buffer_text(&uri).await,
        "def mul(a, b):\n    return a * b\n"
    );
    let held = editor.server_document(&uri).await;
    assert_eq!(held["text"], "def mul(a, b):\n    return a * b\n");
}

/// "Ask Tandem…" cannot prompt in Helix: the hint used to reach only Helix's log.
#[tokio::test]
async fn ask_in_helix_shows_how_to_ask_instead_of_failing_silently() {
    let model = ModelServer::start().await;
    let editor = helix(&model).await;
    let uri = editor.open("calc.py", CALC).await;

    let ask = action(&editor, &uri, 0, "Ask Tandem…").await;
    let answer = editor.run_code_action_as_helix(&ask).await;
    assert!(matches!(answer, Some(Err(_))), "{answer:?}");
    let shown = status_line(&editor);
    assert!(
        shown.starts_with("Tandem: this editor cannot prompt for a question: write `# tandem: "),
        "{shown}"
    );
    assert!(model.requests().is_empty());
}

/// Free text from Helix's command line: `:lsp-workspace-command tandem.ask {"path":
/// "%{buffer_name}", "lines": [%{selection_line_start}, %{selection_line_end}]} "…"` (the
/// documented key binding pre-fills all but the question).
#[tokio::test]
async fn ask_from_the_helix_command_line() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_text("It adds a and b."));
    let editor = helix(&model).await;
    editor.open("calc.py", CALC).await;

    let started = editor
        .execute(&json!({
            "command": "tandem.ask",
            "arguments": [{"path": "calc.py", "lines": [1, 2]}, "What does add do?"],
        }))
        .await
        .unwrap();
    let turn = started["turnId"].as_str().unwrap().to_owned();
    editor.wait_turn_finished(&turn).await;
    let request = model.chat_requests().pop().unwrap();
    let asked = request["messages"].to_string();
    assert!(asked.contains("What does add do?"), "{asked}");
    assert!(
        asked.contains("Selection in calc.py (lines 1-2)"),
        "{asked}"
    );
    assert_eq!(status_line(&editor), "Tandem: It adds a and b.");
}

/// `tandem.showTranscript` did nothing in Helix, which declares no `window/showDocument`.
#[tokio::test]
async fn show_transcript_in_helix_shows_its_path() {
    let model = ModelServer::start().await;
    script_docstring(&model);
    let editor = helix(&model).await;
    let uri = editor.open("calc.py", CALC).await;
    run(&editor, &action(&editor, &uri, 0, "Document this").await).await;

    let answer = editor
        .execute(&json!({"command": "tandem.showTranscript"}))
        .await
        .unwrap();
    assert_eq!(answer["shown"], false);
    let path = answer["uri"]
        .as_str()
        .and_then(|uri| url::Url::parse(uri).ok())
        .and_then(|uri| uri.to_file_path().ok())
        .unwrap();
    assert_eq!(
        status_line(&editor),
        format!("Tandem's transcript: {}", path.display())
    );
    assert!(editor.received_params("window/showDocument").is_empty());
}

/// Helix cannot show approval prompts. The message saying so was replaced 4 ms later by the
/// answer, so the user never learnt how to let the call run; the last message now says it
/// first.
#[tokio::test]
async fn a_refused_call_stays_in_helix_status_line() {
    let model = ModelServer::start().await;
    model.push(Reply::openai_tool_calls(&[(
        "call_shell",
        "shell",
        json!({"command": "python3 -m unittest"}),
    )]));
    model.push(Reply::openai_text(
        "I could not run the tests.\nThey need your approval.",
    ));
    let editor = helix(&model).await;
    let uri = editor.open("calc.py", CALC).await;
    run(
        &editor,
        &action(&editor, &uri, 0, "Write tests for this").await,
    )
    .await;

    let last = editor.received_params("window/showMessage").pop().unwrap();
    assert_eq!(last["type"], 2, "a warning: {last}");
    assert_eq!(
        last["message"],
        "Not run, as this editor cannot show approval prompts: Run `python3 -m unittest` \
         (approval.mode or an approval.allow rule lets such calls run). Tandem: I could not run \
         the tests. They need your approval."
    );
}
