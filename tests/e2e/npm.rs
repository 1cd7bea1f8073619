//! The npm packages (`clients/npm`) as a user gets them: `clients/npm/pack.mjs` packs the main
//! package `@tandem-lsp/tandem` and this machine's platform package from the test's own
//! binaries (`tandem` and `tandem-confine`, stripped copies), and npm installs them from the
//! tarballs into a clean prefix with a clean home, an empty cache, `--offline` and a registry
//! address where nothing listens, so nothing is fetched (the other platforms' optional dependencies
//! included) and nothing of the developer's is used; the `PATH` is node's and npm's folders, the
//! prefix's `bin` and the system's, none of which holds a `tandem` before the install. What is
//! covered:
//!
//! - `npm install -g` of the tarballs: `tandem --version` is the built binary's, and `tandem
//!   ask` through the installed command answers from a replay script (no network, no key) after
//!   running a sandboxed shell command (which `tandem-confine` from the package launches);
//!   the binary's exit code is the command's;
//! - `npx` with the tarballs runs the same `tandem --version`;
//! - installed with `--omit=optional`, the `tandem` command says the binary is missing, why, and
//!   what else installs it; `TANDEM_BINARY` then runs a binary of the user's;
//! - the launcher alone (`clients/npm/bin/tandem.js` with `TANDEM_BINARY`): stdin and stdout go
//!   straight through, exit codes are kept, a signal sent to it reaches the binary, and a binary
//!   killed by a signal kills it with the same signal;
//! - `pack.mjs` refuses a version other than the templates' and binaries of another target.
//!
//! Run: `cargo test -p tandem --test all -- e2e::npm::`. Node.js 18 or later and npm must be on
//! the `PATH` (CI's machine has them); without them the tests say so and pass, except under CI,
//! where they fail. The tarballs go to `target/npm-e2e/tarballs/`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tandem_test_support::TIMEOUT;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// npm on a loaded machine takes seconds per command; this only catches a hang.
const NPM_TIMEOUT: Duration = Duration::from_secs(240);

const MAIN_PACKAGE: &str = "@tandem-lsp/tandem";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Cargo's target folder (of the tandem binary).
fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_tandem"));
    bin.parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("target"))
        .to_path_buf()
}

/// This machine's platform in npm's words (`process.platform`-`process.arch`), if Tandem ships
/// a package for it.
fn npm_platform() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("linux-x64"),
        ("linux", "aarch64") => Some("linux-arm64"),
        ("macos", "x86_64") => Some("darwin-x64"),
        ("macos", "aarch64") => Some("darwin-arm64"),
        _ => None,
    }
}

/// The folder on the test's `PATH` holding `program`.
fn folder_of(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|dir| dir.join(program).is_file())
}

/// Node's and npm's folders. Under CI a missing one fails the test; elsewhere it is skipped
/// loudly.
fn node_and_npm() -> Option<Vec<PathBuf>> {
    let folders: Vec<Option<PathBuf>> = ["node", "npm"].map(folder_of).into();
    let missing: Vec<&str> = ["node", "npm"]
        .into_iter()
        .zip(&folders)
        .filter(|(_, folder)| folder.is_none())
        .map(|(name, _)| name)
        .collect();
    let platform_missing = npm_platform().is_none();
    if missing.is_empty() && !platform_missing {
        let mut folders: Vec<PathBuf> = folders.into_iter().flatten().collect();
        folders.dedup();
        return Some(folders);
    }
    let why = if platform_missing {
        format!(
            "Tandem ships no npm package for {}-{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        )
    } else {
        format!("{} not on the PATH", missing.join(" and "))
    };
    if std::env::var_os("CI").is_some() {
        panic!("the npm tests need Node.js and npm under CI: {why}");
    }
    // Straight to stderr: libtest captures `eprintln!` of passing tests, and a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "*** skipped: {why}; install Node.js 18 or later with npm to run the npm package tests ***"
    );
    None
}

/// A clean npm user: an empty home (no `.npmrc`), an empty cache, no global config, offline,
/// and a registry on a closed local port, so that any request it still made would fail at once
/// rather than reach the internet.
struct NpmUser {
    home: TempDir,
    /// `PATH`: node's and npm's folders, `prefix/bin`, then the system's.
    path: std::ffi::OsString,
    prefix: PathBuf,
}

impl NpmUser {
    fn new(node_and_npm: &[PathBuf]) -> NpmUser {
        let home = tempfile::tempdir().unwrap();
        let prefix = home.path().join("prefix");
        let mut folders = node_and_npm.to_vec();
        folders.push(prefix.join("bin"));
        for system in ["/usr/bin", "/bin"] {
            if !folders.iter().any(|folder| folder == Path::new(system)) {
                folders.push(PathBuf::from(system));
            }
        }
        for folder in &folders {
            assert!(
                !folder.join("tandem").exists(),
                "{} holds a tandem already: the test could not tell it from the installed one",
                folder.display()
            );
        }
        let path = std::env::join_paths(&folders).unwrap();
        NpmUser { home, path, prefix }
    }

    /// `program ARGS` in this user's environment, and no other: no cargo folders, no model
    /// choice or key, no npm settings but these.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Command {
        let home = self.home.path();
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", home)
            .env("npm_config_cache", home.join("npm-cache"))
            .env("npm_config_globalconfig", home.join("global-npmrc"))
            .env("npm_config_prefix", &self.prefix)
            .env("npm_config_offline", "true")
            .env("npm_config_registry", "http://127.0.0.1:9/")
            .env("npm_config_update_notifier", "false")
            .env("npm_config_audit", "false")
            .env("npm_config_fund", "false")
            .current_dir(home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// `npm install -g TARBALLS… EXTRA…` into the prefix; panics with npm's output if it fails.
    async fn install(&self, tarballs: &[&Path], extra: &[&str]) {
        let mut args = vec!["install", "--global"];
        args.extend(tarballs.iter().map(|path| path.to_str().unwrap()));
        args.extend(extra);
        let out = output(self.command("npm", &args)).await;
        assert!(out.status.success(), "npm {args:?}: {}", describe(&out));
    }

    /// The installed package `name`'s folder.
    fn installed(&self, name: &str) -> PathBuf {
        self.prefix.join("lib/node_modules").join(name)
    }

    /// The packages installed under `@tandem-lsp`, sorted.
    fn installed_packages(&self) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(self.prefix.join("lib/node_modules/@tandem-lsp"))
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        names.sort();
        names
    }
}

/// Runs `command` to its end (killing it after `NPM_TIMEOUT`).
async fn output(mut command: Command) -> Output {
    let child = command.spawn().unwrap();
    tokio::time::timeout(NPM_TIMEOUT, child.wait_with_output())
        .await
        .expect("the command did not exit")
        .unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The tarballs `pack.mjs` made from the test's binaries, once per test process.
struct Packed {
    main: PathBuf,
    platform: PathBuf,
    node_and_npm: Vec<PathBuf>,
}

async fn packed() -> Option<&'static Packed> {
    static PACKED: tokio::sync::OnceCell<Option<Packed>> = tokio::sync::OnceCell::const_new();
    PACKED
        .get_or_init(|| async {
            let node_and_npm = node_and_npm()?;
            Some(pack(node_and_npm).await)
        })
        .await
        .as_ref()
}

async fn pack(node_and_npm: Vec<PathBuf>) -> Packed {
    let started = Instant::now();
    let work = target_dir().join("npm-e2e");
    if work.exists() {
        std::fs::remove_dir_all(&work).unwrap();
    }
    // The stripped copies, gone once packed (CI's disk is not large).
    let binaries = tempfile::tempdir().unwrap();
    super::release::stripped_binaries(binaries.path()).unwrap();
    let out = work.join("tarballs");
    let user = NpmUser::new(&node_and_npm);
    let pack = repo_root().join("clients/npm/pack.mjs");
    let binaries_arg = binaries.path().to_str().unwrap();
    let out_arg = out.to_str().unwrap();
    let platform = npm_platform().unwrap();
    let args = [
        pack.to_str().unwrap(),
        "--version",
        VERSION,
        "--target",
        platform,
        "--binaries",
        binaries_arg,
        "--out",
        out_arg,
    ];
    let run = output(user.command("node", &args)).await;
    assert!(run.status.success(), "pack.mjs: {}", describe(&run));
    let stdout = String::from_utf8(run.stdout).unwrap();
    let tarballs: Vec<PathBuf> = stdout.lines().map(PathBuf::from).collect();
    let main = out.join(format!("tandem-lsp-tandem-{VERSION}.tgz"));
    let platform_tarball = out.join(format!("tandem-lsp-tandem-{platform}-{VERSION}.tgz"));
    assert_eq!(
        tarballs,
        [main.clone(), platform_tarball.clone()],
        "{stdout}"
    );
    let size = |path: &Path| std::fs::metadata(path).unwrap().len();
    let _ = writeln!(
        std::io::stderr(),
        "npm tests: packed {} ({} bytes) and {} ({} bytes) in {:.1} s",
        main.display(),
        size(&main),
        platform_tarball.display(),
        size(&platform_tarball),
        started.elapsed().as_secs_f64()
    );
    Packed {
        main,
        platform: platform_tarball,
        node_and_npm,
    }
}

/// What the built binary says to `--version`.
fn built_version() -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tandem"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let version = String::from_utf8(out.stdout).unwrap();
    assert!(
        version.starts_with(&format!("tandem {VERSION}")),
        "{version}"
    );
    version
}

/// A user settings folder choosing a replay model that plays `script`, a state folder and a
/// workspace, for `tandem ask` run through the npm command.
struct AskFolders {
    config: TempDir,
    state: TempDir,
    workspace: TempDir,
}

impl AskFolders {
    fn new(script: &[serde_json::Value]) -> AskFolders {
        let folders = AskFolders {
            config: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
        };
        let settings = json!({
            "model": "demo",
            "models": {"demo": {"provider": "replay", "script": "script.jsonl"}},
        });
        std::fs::write(
            folders.config.path().join("settings.json"),
            settings.to_string(),
        )
        .unwrap();
        let lines: Vec<String> = script.iter().map(|line| line.to_string()).collect();
        std::fs::write(
            folders.config.path().join("script.jsonl"),
            lines.join("\n") + "\n",
        )
        .unwrap();
        folders
    }

    /// `tandem ARGS` by name, as the user's shell finds it, in the workspace.
    fn tandem(&self, user: &NpmUser, args: &[&str]) -> Command {
        let mut command = user.command("tandem", args);
        command
            .current_dir(self.workspace.path())
            .env("TANDEM_CONFIG_DIR", self.config.path())
            .env("TANDEM_STATE_DIR", self.state.path())
            .env("TANDEM_RUNTIME_DIR", self.state.path().join("run"));
        command
    }
}

#[tokio::test]
async fn npm_install_global_from_the_tarballs_runs_tandem_ask() {
    let Some(packed) = packed().await else { return };
    let user = NpmUser::new(&packed.node_and_npm);
    user.install(&[&packed.platform, &packed.main], &[]).await;

    // Only this platform's package, its binaries executable; the others skipped, not fetched.
    let platform = npm_platform().unwrap();
    assert_eq!(
        user.installed_packages(),
        ["tandem".to_owned(), format!("tandem-{platform}")]
    );
    for binary in ["tandem", "tandem-confine"] {
        let path = user
            .installed(&format!("{MAIN_PACKAGE}-{platform}"))
            .join("bin")
            .join(binary);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "{}", path.display());
    }

    let folders = AskFolders::new(&[
        json!({"toolCalls": [{"name": "shell", "arguments": {"command": "echo installed with npm > note.txt"}}]}),
        json!({"text": "Wrote note.txt."}),
    ]);
    let version = output(folders.tandem(&user, &["--version"])).await;
    assert!(version.status.success(), "{}", describe(&version));
    assert_eq!(String::from_utf8(version.stdout).unwrap(), built_version());

    let ask =
        output(folders.tandem(&user, &["ask", "--approval-mode", "yolo", "write a note"])).await;
    assert!(ask.status.success(), "{}", describe(&ask));
    assert_eq!(String::from_utf8_lossy(&ask.stdout), "Wrote note.txt.\n");
    let stderr = String::from_utf8_lossy(&ask.stderr);
    assert!(
        stderr.contains("✓ Run `echo installed with npm > note.txt`"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(folders.workspace.path().join("note.txt")).unwrap(),
        "installed with npm\n"
    );

    // The binary's exit code is the command's: 2 for a usage error.
    let usage = output(folders.tandem(&user, &["--no-such-flag"])).await;
    assert_eq!(usage.status.code(), Some(2), "{}", describe(&usage));
}

#[tokio::test]
async fn npx_with_the_tarballs_runs_the_same_tandem() {
    let Some(packed) = packed().await else { return };
    let user = NpmUser::new(&packed.node_and_npm);
    let platform = format!("--package={}", packed.platform.display());
    let main = format!("--package={}", packed.main.display());
    let out = output(user.command(
        "npx",
        &["--yes", &platform, &main, "--", "tandem", "--version"],
    ))
    .await;
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), built_version());
}

#[tokio::test]
async fn without_the_platform_package_the_command_says_why_and_tandem_binary_runs_one() {
    let Some(packed) = packed().await else { return };
    let user = NpmUser::new(&packed.node_and_npm);
    user.install(&[&packed.main], &["--omit=optional"]).await;
    assert_eq!(user.installed_packages(), ["tandem"]);

    let missing = output(user.command("tandem", &["--version"])).await;
    assert_eq!(missing.status.code(), Some(1), "{}", describe(&missing));
    assert!(missing.stdout.is_empty(), "{}", describe(&missing));
    let said = String::from_utf8(missing.stderr).unwrap();
    let platform = npm_platform().unwrap();
    for needle in [
        format!(
            "tandem: the binary for this platform ({platform}) is missing: \
             {MAIN_PACKAGE}-{platform} is not installed."
        ),
        "--omit=optional".to_owned(),
        "--no-optional".to_owned(),
        format!("npm install {MAIN_PACKAGE}-{platform}@{VERSION}"),
        format!(
            "{MAIN_PACKAGE} ships binaries for darwin-arm64, darwin-x64, linux-arm64, linux-x64."
        ),
        "cargo install --locked --git https://github.com/tandem-lsp/tandem tandem".to_owned(),
        format!("https://github.com/tandem-lsp/tandem/releases/tag/v{VERSION}"),
        "TANDEM_BINARY".to_owned(),
    ] {
        assert!(said.contains(&needle), "lacks {needle:?}:\n{said}");
    }

    // TANDEM_BINARY runs a binary of the user's instead.
    let mut command = user.command("tandem", &["--version"]);
    command.env("TANDEM_BINARY", env!("CARGO_BIN_EXE_tandem"));
    let overridden = output(command).await;
    assert!(overridden.status.success(), "{}", describe(&overridden));
    assert_eq!(
        String::from_utf8(overridden.stdout).unwrap(),
        built_version()
    );

    let nowhere = user.home.path().join("no-such-tandem");
    let mut command = user.command("tandem", &["--version"]);
    command.env("TANDEM_BINARY", &nowhere);
    let wrong = output(command).await;
    assert_eq!(wrong.status.code(), Some(1), "{}", describe(&wrong));
    assert_eq!(
        String::from_utf8(wrong.stderr).unwrap(),
        format!(
            "tandem: TANDEM_BINARY is set to {}, which does not exist.\n",
            nowhere.display()
        )
    );
}

/// `node clients/npm/bin/tandem.js ARGS` running `script` (a shell script) as the binary.
fn launcher(user: &NpmUser, script: &str, args: &[&str]) -> Command {
    let binary = user.home.path().join("binary.sh");
    std::fs::write(&binary, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let launcher = repo_root().join("clients/npm/bin/tandem.js");
    let mut all = vec![launcher.to_str().unwrap()];
    all.extend(args);
    let mut command = user.command("node", &all);
    command.env("TANDEM_BINARY", &binary);
    command
}

#[tokio::test]
async fn the_launcher_passes_on_stdio_exit_codes_and_signals() {
    let Some(node_and_npm) = node_and_npm() else {
        return;
    };
    let user = NpmUser::new(&node_and_npm);

    // Arguments and stdin reach the binary, its stdout and stderr come back, its code is kept.
    let mut command = launcher(
        &user,
        "echo \"args: $*\" >&2; cat; exit 7",
        &["ask", "two words"],
    );
    command.stdin(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"from stdin\n").await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(TIMEOUT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from stdin\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "args: ask two words\n"
    );

    // A binary killed by a signal: the launcher dies of the same signal.
    let killed = output(launcher(&user, "kill -TERM $$", &[])).await;
    assert_eq!(killed.status.signal(), Some(15), "{}", describe(&killed));

    // A signal sent to the launcher reaches the binary, which here ends with its own code.
    let mut child = launcher(
        &user,
        "trap 'echo got TERM; exit 5' TERM\necho ready\nwhile :; do sleep 1 & wait $!; done",
        &[],
    )
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(TIMEOUT, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ready.as_deref(), Some("ready"));
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let said = tokio::time::timeout(TIMEOUT, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(said.as_deref(), Some("got TERM"));
    let status = tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(5), "{status:?}");
}

#[tokio::test]
async fn pack_refuses_another_version_and_binaries_of_another_target() {
    let Some(node_and_npm) = node_and_npm() else {
        return;
    };
    let user = NpmUser::new(&node_and_npm);
    let pack = repo_root().join("clients/npm/pack.mjs");
    let pack = pack.to_str().unwrap();
    let out = user.home.path().join("out");
    let out = out.to_str().unwrap();

    let refused =
        output(user.command("node", &[pack, "--version", "0.0.1-other", "--out", out])).await;
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.starts_with(&format!(
            "pack.mjs: clients/npm/package.json is not at version 0.0.1-other: version is {VERSION}, "
        )),
        "{said}"
    );

    // A script where a binary should be, and this machine's binaries for another Linux CPU.
    let scripts = tempfile::tempdir().unwrap();
    for name in ["tandem", "tandem-confine"] {
        std::fs::write(scripts.path().join(name), "#!/bin/sh\n").unwrap();
    }
    let (other, other_format) = match npm_platform() {
        Some("linux-arm64") => (
            "linux-x64",
            "ELF x86-64 as linux-x64 (x86_64-unknown-linux-musl)",
        ),
        _ => (
            "linux-arm64",
            "ELF aarch64 as linux-arm64 (aarch64-unknown-linux-musl)",
        ),
    };
    let tandem = Path::new(env!("CARGO_BIN_EXE_tandem"));
    let wrong_cpu = format!(", not {other_format} needs");
    for (target, binaries, expected) in [
        (
            "linux-x64",
            scripts.path(),
            "is not an ELF or 64-bit Mach-O executable, not ELF x86-64",
        ),
        (other, tandem.parent().unwrap(), wrong_cpu.as_str()),
    ] {
        let binaries = binaries.to_str().unwrap();
        let args = [
            pack,
            "--version",
            VERSION,
            "--target",
            target,
            "--binaries",
            binaries,
            "--out",
            out,
        ];
        let refused = output(user.command("node", &args)).await;
        assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains(expected), "{target}: {said}");
    }
    assert!(!Path::new(out).exists(), "nothing is packed");
}
