//! The built `tandem` binary run headless, as a user's shell runs it: its own user settings and
//! state directories (so no test reads the user's settings or writes their saved sessions), no
//! model chosen by the environment and no API keys.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use tandem_test_support::TIMEOUT;
use tokio::process::{Child, Command};

/// `tandem` with a log file in `config`, ready for its arguments; nothing on stdin, stdout and
/// stderr captured, killed if the test drops it.
pub(super) fn tandem(config: &Path, state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
    command
        .arg("--log-file")
        .arg(config.join("tandem.log"))
        .env("TANDEM_CONFIG_DIR", config)
        .env("TANDEM_STATE_DIR", state)
        // No editor's server of the user's is attached to (`tandem chat`), nor offered to.
        .env("TANDEM_RUNTIME_DIR", state.join("run"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    without_model_choice(&mut command);
    command
}

/// Takes away the variables that choose a model or hold a key, so a test uses only the model
/// its settings name, whatever the developer's shell exports.
pub(super) fn without_model_choice(command: &mut Command) {
    for name in [
        "TANDEM_MODEL",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OPENAI_API_KEY",
    ] {
        command.env_remove(name);
    }
}

/// A user settings folder (which is also the home folder, so that no test reads the user's
/// own `~/.claude` or `~/.gemini`), a state folder and a workspace, for running the built
/// `tandem` as a user would.
pub(super) struct Folders {
    pub config: tempfile::TempDir,
    pub state: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
}

impl Folders {
    /// The folders, with the scripted model's settings and `extra` in the user settings.
    pub fn new(model: &tandem_test_support::ModelServer, extra: Value) -> Folders {
        let folders = Folders {
            config: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        };
        folders.settings(&tandem_test_support::scripted_settings(model, extra));
        folders
    }

    /// Replaces the user settings file.
    pub fn settings(&self, settings: &Value) {
        std::fs::write(
            self.config.path().join("settings.json"),
            settings.to_string(),
        )
        .unwrap();
    }

    /// The workspace, as Tandem names it (canonical).
    pub fn root(&self) -> std::path::PathBuf {
        std::fs::canonicalize(self.workspace.path()).unwrap()
    }

    /// `tandem ARGS` in the workspace.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = tandem(self.config.path(), self.state.path());
        command
            .current_dir(self.workspace.path())
            .env("HOME", self.config.path())
            .args(args);
        command
    }

    pub async fn run(&self, args: &[&str]) -> Run {
        Run::of(self.command(args).spawn().unwrap()).await
    }
}

/// How a run ended and what it printed.
#[derive(Debug)]
pub(super) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Waits for `child` to exit.
    pub async fn of(child: Child) -> Run {
        let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
            .await
            .expect("tandem did not exit")
            .unwrap();
        Run {
            code: out.status.code().expect("tandem was killed by a signal"),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    pub fn assert_stderr_has(&self, needles: &[&str]) {
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}:\n{}\nstdout:\n{}",
                self.stderr,
                self.stdout
            );
        }
    }

    /// Every stdout line as JSON; panics on a line that is not.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|error| {
                    panic!("not JSON ({error}): {line}\nstdout:\n{}", self.stdout)
                })
            })
            .collect()
    }

    /// The id in `session ID saved; continue it with: tandem ask --resume ID "…"`.
    pub fn saved_id(&self) -> String {
        let line = self
            .stderr
            .lines()
            .find(|line| line.starts_with("session ") && line.contains(" saved; "))
            .unwrap_or_else(|| panic!("no `session … saved` line:\n{self:#?}"));
        let id = line["session ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .to_owned();
        assert!(
            line.ends_with(&format!("tandem ask --resume {id} \"…\"")),
            "{line}"
        );
        id
    }
}
