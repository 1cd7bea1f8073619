//! A real editor (headless Neovim, batch Emacs) as the end-to-end tests run it: the directories
//! of a scenario (a workspace, user settings choosing a replay model, a state directory and a
//! home of its own, so nothing touches the user's), and the editor's process, started without
//! model keys in its environment, with both pipes read while it runs (so a killed editor still
//! shows what it printed), killed after a time limit, and failing the test with its output
//! unless it exits 0.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// The Python file the scenarios work on.
pub(super) const CALC: &str =
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

/// The model reads `calc.py` (`CALC`).
pub(super) fn read_calc() -> Value {
    json!({"toolCalls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]})
}

/// The model gives `add` a docstring.
pub(super) fn document_add() -> Value {
    json!({"toolCalls": [{"name": "edit", "arguments": {
        "path": "calc.py",
        "old_string": "def add(a, b):\n    return a + b",
        "new_string": "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n    return a + b"
    }}]})
}

/// "Fix it and run the tests": calc.py with `add` subtracting, and the test that catches it.
pub(super) const BROKEN_CALC: &str =
    "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
pub(super) const TEST_CALC: &str = "import unittest\n\nfrom calc import add\n\n\n\
    class CalcTest(unittest.TestCase):\n    def test_add(self):\n        \
    self.assertEqual(add(2, 3), 5)\n";
pub(super) const UNITTEST: &str = "python3 -m unittest";

/// The model reads `BROKEN_CALC`, fixes `add` (in the editor's buffer), runs `UNITTEST` and
/// answers.
pub(super) fn fix_add_then_unittest() -> Vec<Value> {
    vec![
        read_calc(),
        json!({"toolCalls": [{"name": "edit", "arguments": {
            "path": "calc.py",
            "old_string": "def add(a, b):\n    return a - b",
            "new_string": "def add(a, b):\n    return a + b"
        }}]}),
        json!({"toolCalls": [{"name": "shell", "arguments": {"command": UNITTEST}}]}),
        json!({"text": "Fixed add; the tests pass."}),
    ]
}

/// The directories of one scenario.
pub(super) struct Scenario {
    pub workspace: TempDir,
    pub config: TempDir,
    pub state: TempDir,
    /// Where the editor, its packages and the server keep their own files (`XDG_*`).
    pub home: TempDir,
}

impl Scenario {
    /// A workspace holding `files`, and user settings (not the workspace's: `approval` in an
    /// untrusted workspace file is ignored) choosing a replay model that plays `script` under
    /// approval `mode`.
    pub fn new(mode: &str, files: &[(&str, &str)], script: &[Value]) -> Scenario {
        let config = TempDir::new().unwrap();
        let settings = json!({
            "model": "demo",
            "models": {"demo": {"provider": "replay", "script": "script.jsonl"}},
            "approval": {"mode": mode},
        });
        std::fs::write(config.path().join("settings.json"), settings.to_string()).unwrap();
        let lines: Vec<String> = script.iter().map(Value::to_string).collect();
        std::fs::write(config.path().join("script.jsonl"), lines.join("\n") + "\n").unwrap();
        let workspace = TempDir::new().unwrap();
        for (path, content) in files {
            std::fs::write(workspace.path().join(path), content).unwrap();
        }
        Scenario {
            workspace,
            config,
            state: TempDir::new().unwrap(),
            home: TempDir::new().unwrap(),
        }
    }

    /// The variables that point Tandem at the scenario's settings and state, its log at `log`,
    /// and the editor at its own home.
    pub fn env(&self, log: &Path) -> Vec<(&'static str, PathBuf)> {
        let home = self.home.path().to_path_buf();
        vec![
            ("TANDEM_CONFIG_DIR", self.config.path().to_path_buf()),
            ("TANDEM_STATE_DIR", self.state.path().to_path_buf()),
            // The server's attach socket, in the scenario's state, not the user's runtime folder.
            ("TANDEM_RUNTIME_DIR", self.state.path().join("run")),
            ("TANDEM_LOG_FILE", log.to_path_buf()),
            ("XDG_CONFIG_HOME", home.clone()),
            ("XDG_DATA_HOME", home.clone()),
            ("XDG_STATE_HOME", home.clone()),
            ("XDG_CACHE_HOME", home),
        ]
    }
}

/// `program` ready to run in `cwd` with `envs`: no model keys or model choice inherited, no
/// stdin, both outputs piped, killed if the test drops it.
pub(super) fn command(program: &str, cwd: &Path, envs: &[(&'static str, PathBuf)]) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    super::headless::without_model_choice(&mut command);
    for (key, value) in envs {
        command.env(key, value);
    }
    command
}

/// Runs `command` (the scenario `name`) to its end, killing it after `limit`. Panics with what
/// it printed (and the server's `log`) unless it exits 0; returns its stdout.
pub(super) async fn run(
    mut command: Command,
    name: &str,
    limit: Duration,
    log: Option<&Path>,
) -> String {
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start the editor for {name}: {error}"));
    let stdout = tokio::spawn(read_all(child.stdout.take().unwrap()));
    let stderr = tokio::spawn(read_all(child.stderr.take().unwrap()));
    let status = match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => Some(status.unwrap()),
        Err(_) => {
            child.kill().await.unwrap();
            None
        }
    };
    let stdout = stdout.await.unwrap();
    let stderr = stderr.await.unwrap();
    let Some(status) = status else {
        let log = log
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        panic!(
            "{name} did not finish within {limit:?} and was killed\n--- stderr ---\n{stderr}\n\
             --- stdout ---\n{stdout}\n--- server log ---\n{log}"
        );
    };
    assert!(
        status.success(),
        "{name} failed ({status}):\n--- stderr ---\n{stderr}\n--- stdout ---\n{stdout}"
    );
    stdout
}

/// All of `pipe`, however the read ends.
pub(super) async fn read_all(mut pipe: impl AsyncRead + Unpin) -> String {
    let mut bytes = Vec::new();
    // A read error only shortens the diagnostics; the exit status decides the test.
    let _ = pipe.read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}
