//! The errors an edit causes, from real language servers, in `tandem ask`: pyright and
//! typescript-language-server (from `npm ci --prefix tests/lsp`) and clangd (Debian's) on `PATH`. An edit that adds an error gets
//! it in its result, an edit that fixes one is not blamed for anything, and the error the user
//! already had is never reported as the edit's. Without a server the test says so and passes,
//! except under CI, which installs both.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use tandem_test_support::{scripted_settings, ModelServer, Reply};

use super::ask::Setup;
use super::headless::{self, Run};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The folder `program` is in, from `extra` or `PATH`; `None` after saying so (a failure under
/// CI).
fn folder_of(program: &str, extra: Option<PathBuf>, install: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = extra
        .into_iter()
        .chain(std::env::split_paths(&path))
        .find(|dir| dir.join(program).is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is needed under CI ({install})"
        );
        let _ = writeln!(std::io::stderr(), "SKIPPED: no {program} ({install})");
    }
    found
}

/// `tandem ask` with `folder` first on `PATH`, its result as JSON lines.
async fn ask(setup: &Setup, folder: &Path) -> Run {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(folder.to_owned()).chain(std::env::split_paths(&path)),
    )
    .unwrap();
    let mut command = headless::tandem(setup.config.path(), setup.state.path());
    command.env("PATH", path).args([
        "ask",
        "fix it",
        "--workspace",
        setup.workspace.path().to_str().unwrap(),
        "--approval-mode",
        "yolo",
        "--json",
    ]);
    Run::of(command.spawn().unwrap()).await
}

/// The outputs of the run's successful calls of `tool`, in order.
fn outputs(run: &Run, tool: &str) -> Vec<String> {
    assert_eq!(run.code, 0, "{run:#?}");
    run.json_lines()
        .iter()
        .filter(|event| {
            event["type"] == "toolCall" && event["tool"] == tool && event["status"] == "success"
        })
        .map(|event| event["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Runs the turn and returns the two edits' results as the model read them, each split into
/// what came before the language server's note and the note's lines after its heading.
async fn edit_notes(setup: &Setup, folder: &Path) -> Vec<(String, Vec<String>)> {
    let run = ask(setup, folder).await;
    let results: Vec<(String, Vec<String>)> = outputs(&run, "edit")
        .iter()
        .map(|output| match output.split_once(" since this change:\n") {
            Some((before, note)) => (before.to_owned(), note.lines().map(str::to_owned).collect()),
            None => (output.to_owned(), Vec::new()),
        })
        .collect();
    assert_eq!(results.len(), 2, "{run:#?}");
    results
}

/// The model reads `file`, makes `first` (adds an error), then `second` (fixes it), and answers.
fn script(file: &str, first: (&str, &str), second: (&str, &str)) -> Vec<Value> {
    let edit = |(old, new): (&str, &str)| json!({"toolCalls": [{"name": "edit", "arguments": {"path": file, "old_string": old, "new_string": new}}]});
    vec![
        json!({"toolCalls": [{"name": "read_file", "arguments": {"path": file}}]}),
        edit(first),
        edit(second),
        json!({"text": "Done."}),
    ]
}

/// The folder of `program` from `npm ci --prefix tests/lsp` (or `PATH`).
fn npm_server(program: &str) -> Option<PathBuf> {
    folder_of(
        program,
        Some(repo_root().join("tests/lsp/node_modules/.bin")),
        "npm ci --prefix tests/lsp",
    )
}

/// With `folder` on `PATH`, the model edits `file` (holding `text`, which has an error of the
/// user's own) with `broken` and then with `fixed`: the first edit is told exactly one new error
/// by `server`, starting `line L, column C: …` as `added` begins and holding `words`; the fix is
/// told nothing.
async fn told_its_error_only(
    folder: &Path,
    server: &str,
    (file, text): (&str, &str),
    broken: (&str, &str),
    fixed: (&str, &str),
    (added, words): (&str, &str),
) {
    let setup = Setup::replay(
        &script(file, broken, fixed),
        &[(file, text), (".git/HEAD", "ref: refs/heads/main\n")],
    );
    let notes = edit_notes(&setup, folder).await;
    let (result, told) = &notes[0];
    assert!(
        result.ends_with(&format!("{server} reports a new error in {file}")),
        "{result}"
    );
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].starts_with(&format!("  {added}")) && told[0].contains(words),
        "{told:?}"
    );
    assert!(notes[1].1.is_empty(), "{:?}", notes[1]);
}

#[tokio::test]
async fn pyright_tells_the_edit_which_errors_it_added() {
    let Some(folder) = npm_server("pyright-langserver") else {
        return;
    };
    // `label` is the user's own error (line 5): an int where a str is declared.
    let calc = "def add(a: int, b: int) -> int:\n    return a + b\n\n\nlabel: str = add(1, 2)\ntotal = add(1, 2)\n";
    told_its_error_only(
        &folder,
        "pyright",
        ("calc.py", calc),
        ("total = add(1, 2)", "total = add(1, \"2\")"),
        ("total = add(1, \"2\")", "total = add(1, 2)"),
        ("line 6, column 16: ", "Argument of type \"Literal['2']\""),
    )
    .await;
}

#[tokio::test]
async fn clangd_tells_the_edit_which_errors_it_added() {
    let Some(folder) = folder_of("clangd", None, "apt-get install clangd") else {
        return;
    };
    // The undeclared `undefined_value` on line 3 is the user's own error.
    let calc = "int add(int a, int b) { return a + b; }\nint twice(void) { return add(1, 2); }\nint main(void) { return undefined_value; }\n";
    told_its_error_only(
        &folder,
        "clangd",
        ("calc.c", calc),
        ("add(1, 2)", "add(1)"),
        ("add(1)", "add(1, 2)"),
        ("line 2, column", "oo few arguments"),
    )
    .await;
}

#[tokio::test]
async fn typescript_language_server_tells_the_edit_which_errors_it_added() {
    let Some(folder) = npm_server("typescript-language-server") else {
        return;
    };
    // `label` is the user's own error (line 5): a number where a string is declared.
    let calc = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const label: string = add(1, 2);\nexport const total = add(1, 2);\n";
    told_its_error_only(
        &folder,
        "typescript-language-server",
        ("calc.ts", calc),
        ("total = add(1, 2)", "total = add(1, \"2\")"),
        ("total = add(1, \"2\")", "total = add(1, 2)"),
        ("line 6, column 29: ", "Argument of type 'string'"),
    )
    .await;
}

/// The `diagnostics` tool lists a file's current problems, the user's own included, and, without
/// a path, those of every file checked in the session.
#[tokio::test]
async fn the_diagnostics_tool_lists_what_pyright_reports() {
    let Some(folder) = npm_server("pyright-langserver") else {
        return;
    };
    let calc = "def add(a: int, b: int) -> int:\n    return a + b\n\n\nlabel: str = add(1, 2)\n";
    let setup = Setup::replay(
        &[
            json!({"toolCalls": [{"name": "diagnostics", "arguments": {"path": "calc.py"}}]}),
            json!({"toolCalls": [{"name": "diagnostics", "arguments": {}}]}),
            json!({"toolCalls": [{"name": "diagnostics", "arguments": {"path": "notes.txt"}}]}),
            json!({"text": "Done."}),
        ],
        &[
            ("calc.py", calc),
            ("notes.txt", "notes\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
        ],
    );
    let run = ask(&setup, &folder).await;
    let listed = outputs(&run, "diagnostics");
    let [one, all] = listed.as_slice() else {
        panic!("expected two successful diagnostics calls: {run:#?}");
    };
    assert!(
        one.starts_with("calc.py (pyright): 1 error, 0 warnings\n  line 5, column 14: error: Type \"int\" is not assignable"),
        "{one}"
    );
    assert_eq!(one, all);
    let refused: Vec<Value> = run
        .json_lines()
        .into_iter()
        .filter(|event| event["tool"] == "diagnostics" && event["status"] == "error")
        .collect();
    assert_eq!(refused.len(), 1, "{run:#?}");
    assert!(
        refused[0]["output"]
            .as_str()
            .is_some_and(|output| output.contains("no language server checks notes.txt")),
        "{refused:?}"
    );
}

/// `diagnostics.enabled: false` starts no server and adds nothing to the result.
#[tokio::test]
async fn the_setting_turns_diagnostics_off() {
    let Some(folder) = folder_of("clangd", None, "apt-get install clangd") else {
        return;
    };
    let calc = "int add(int a, int b) { return a + b; }\nint twice(void) { return add(1, 2); }\n";
    let setup = Setup::replay_with(
        &script("calc.c", ("add(1, 2)", "add(1)"), ("add(1)", "add(1, 2)")),
        json!({"diagnostics": {"enabled": false}}),
        &[("calc.c", calc), (".git/HEAD", "ref: refs/heads/main\n")],
    );
    let notes = edit_notes(&setup, &folder).await;
    assert!(notes.iter().all(|(_, added)| added.is_empty()), "{notes:?}");
    assert!(!notes[0].0.contains("reports"), "{notes:?}");
}

/// A model that reads calc.py, breaks `total` by calling `add` with one argument, and then does what a model
/// does with what it reads: fixes the error an edit's result reports, runs the tests after a
/// clean edit, fixes the code when they fail, and stops when they pass.
fn careful_model(model: &ModelServer) {
    model.respond_with(|request| {
        let body = request.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tool_results = messages
            .iter()
            .filter(|message| message["role"] == "tool")
            .count();
        let last = messages.last().cloned().unwrap_or_default();
        let id = last["tool_call_id"].as_str().unwrap_or_default().to_owned();
        let result = last["content"].as_str().unwrap_or_default().to_owned();
        let edit = |id: &str, old: &str, new: &str| {
            Reply::openai_tool_calls(&[(
                id,
                "edit",
                json!({"path": "calc.py", "old_string": old, "new_string": new}),
            )])
        };
        let fix = || {
            edit(
                &format!("call_fix_{tool_results}"),
                "add(items)",
                "sum(items)",
            )
        };
        let test = || {
            Reply::openai_tool_calls(&[(
                &format!("call_test_{tool_results}") as &str,
                "shell",
                json!({"command": "python3 -m unittest"}),
            )])
        };
        if last["role"] != "tool" {
            return Reply::openai_tool_calls(&[(
                "call_read",
                "read_file",
                json!({"path": "calc.py"}),
            )]);
        }
        if id == "call_read" {
            return edit("call_edit", "return 0", "return add(items)");
        }
        if id.starts_with("call_test") {
            return if result.contains("\nOK") {
                Reply::openai_text("Done: total sums the items; the tests pass.")
            } else {
                fix()
            };
        }
        if result.contains("reports a new error") {
            fix()
        } else {
            test()
        }
    });
}

/// The model requests and test runs a task takes when the model breaks what it changes, with the
/// errors in the edit's result and without them (docs/benchmarks.md reports both).
#[tokio::test]
async fn diagnostics_save_a_test_run_when_the_model_breaks_its_change() {
    let Some(folder) = npm_server("pyright-langserver") else {
        return;
    };
    let calc = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ndef total(items: list[int]) -> int:\n    return 0\n";
    let test = "import unittest\n\nfrom calc import total\n\n\nclass CalcTest(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([1, 2, 3]), 6)\n";
    let mut counts = Vec::new();
    for enabled in [true, false] {
        let model = ModelServer::start().await;
        careful_model(&model);
        let settings = scripted_settings(&model, json!({"diagnostics": {"enabled": enabled}}));
        let setup = Setup::with_settings(
            settings,
            &[
                ("calc.py", calc),
                ("test_calc.py", test),
                (".git/HEAD", "ref: refs/heads/main\n"),
            ],
        );
        let run = ask(&setup, &folder).await;
        let tests_run = outputs(&run, "shell").len();
        assert!(
            run.stdout.contains("the tests pass"),
            "diagnostics {enabled}: {run:#?}"
        );
        counts.push((model.chat_requests().len(), tests_run));
    }
    let _ = writeln!(
        std::io::stdout(),
        "with diagnostics: {:?} (requests, test runs); without: {:?}",
        counts[0],
        counts[1]
    );
    assert_eq!(counts, vec![(5, 1), (6, 2)]);
}
