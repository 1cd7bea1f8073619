//! The release archive as a user gets it (docs/install.md, "The release archives, by hand"):
//! `.github/release/archive.sh`, the script the release workflow runs, packs this build's
//! `tandem` and `tandem-confine` for this machine's target; the test checks the archive's
//! checksum and contents, unpacks it into `~/.local/bin` of an empty home, and runs it from
//! there with nothing of the developer's environment (no cargo, no settings): `--version`, then
//! `tandem ask` with a recorded model whose turn edits a file and runs a command in the OS
//! sandbox, through the `tandem-confine` that came in the archive.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The built binary, and the sandbox launcher Cargo builds beside it.
fn binaries() -> [PathBuf; 2] {
    let tandem = PathBuf::from(env!("CARGO_BIN_EXE_tandem"));
    let confine = tandem.with_file_name("tandem-confine");
    [tandem, confine]
}

/// Copies of this build's `tandem` and `tandem-confine` in `dir`, stripped as a release's are:
/// the debug build's symbols would only make the archive, `.vsix` or npm package bigger and
/// slower to pack. Without `strip` a copy stays as it is, and a line on stderr says so.
pub(super) fn stripped_binaries(dir: &Path) -> std::io::Result<[PathBuf; 2]> {
    let copies = binaries().map(|binary| dir.join(binary.file_name().unwrap_or_default()));
    for (binary, copy) in binaries().iter().zip(&copies) {
        std::fs::copy(binary, copy)?;
        let stripped = Command::new("strip").arg(copy).status();
        if !stripped.as_ref().is_ok_and(|status| status.success()) {
            let _ = writeln!(
                std::io::stderr(),
                "`strip {}` failed ({stripped:?}); it goes in unstripped",
                copy.display()
            );
        }
    }
    Ok(copies)
}

/// What `tandem --version` prints, and the target it names: `tandem X.Y.Z (commit, target)`.
fn version_and_target(tandem: &Path, env: &[(&str, &Path)]) -> (String, String) {
    let output = Command::new(tandem)
        .arg("--version")
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let version = String::from_utf8(output.stdout).unwrap().trim().to_owned();
    let target = version
        .rsplit_once(", ")
        .and_then(|(_, target)| target.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no target in {version:?}"))
        .to_owned();
    (version, target)
}

fn run(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_release_archive_runs_from_an_empty_home_with_its_own_sandbox_launcher() {
    let [tandem, confine] = binaries();
    assert!(confine.is_file(), "{} is not built", confine.display());
    let (built_version, target) = version_and_target(&tandem, &[]);
    let scratch = tempfile::tempdir().unwrap();
    let dist = scratch.path().join("dist");

    // The workflow's own step, archive.sh TARGET BIN_DIR OUT_DIR.
    let bin_dir = scratch.path().join("built");
    std::fs::create_dir(&bin_dir).unwrap();
    stripped_binaries(&bin_dir).unwrap();
    run(Command::new("bash")
        .arg(repo_root().join(".github/release/archive.sh"))
        .args([Path::new(&target), &bin_dir, &dist]));
    let name = format!("tandem-{}-{target}.tar.gz", env!("CARGO_PKG_VERSION"));
    let archive = dist.join(&name);
    assert!(archive.is_file(), "archive.sh wrote no {name}");
    run(Command::new("sha256sum")
        .args(["--check", &format!("{name}.sha256")])
        .current_dir(&dist));
    let listing = run(Command::new("tar").arg("-tzf").arg(&archive));
    let mut names: Vec<&str> = listing.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "LICENSE-APACHE",
            "LICENSE-MIT",
            "README.md",
            "tandem",
            "tandem-confine"
        ]
    );

    // docs/install.md's steps, in an empty home.
    let home = scratch.path().join("home");
    let local_bin = home.join(".local/bin");
    std::fs::create_dir_all(&local_bin).unwrap();
    run(Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&local_bin)
        .args(["tandem", "tandem-confine"]));
    let path = std::env::join_paths([
        local_bin.as_path(),
        Path::new("/usr/bin"),
        Path::new("/bin"),
    ])
    .unwrap();
    let path = PathBuf::from(path);
    let installed = local_bin.join("tandem");
    let env = [("HOME", home.as_path()), ("PATH", path.as_path())];
    assert_eq!(version_and_target(&installed, &env).0, built_version);

    // A model recorded in the user's settings, found where a user's are (~/.config/tandem).
    let config = home.join(".config/tandem");
    std::fs::create_dir_all(&config).unwrap();
    let settings = json!({"model": "demo", "models": {"demo": {"provider": "replay", "script": "script.jsonl"}}});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    let script = [
        json!({"toolCalls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hello\n"}}]}),
        json!({"toolCalls": [{"name": "shell", "arguments": {"command": "cat hello.txt > copied.txt"}}]}),
        json!({"text": "Wrote hello.txt and copied it."}),
    ];
    let lines: Vec<String> = script.iter().map(|line| line.to_string()).collect();
    std::fs::write(config.join("script.jsonl"), lines.join("\n") + "\n").unwrap();
    let workspace = scratch.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();

    let answer = run(Command::new("tandem")
        .args([
            "ask",
            "--approval-mode",
            "yolo",
            "write hello.txt and copy it",
        ])
        .env_clear()
        .envs(env)
        .current_dir(&workspace));
    assert!(
        answer.contains("Wrote hello.txt and copied it."),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("copied.txt")).unwrap(),
        "hello\n",
        "the shell command did not run"
    );
}
