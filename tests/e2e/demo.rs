//! `tandem demo` as a newcomer runs it: no settings, no key, no model. The built binary writes
//! the sample project, plays the bundled script through the real agent and tools, and must leave
//! the sample's test passing. Home, settings, state and temporary directories are all temporary
//! and checked empty afterwards, so the demo is seen to write nowhere but its project. That the
//! demo succeeds is also what shows the bundled script still matches the sample it edits.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tempfile::TempDir;
use tokio::process::Command;

use super::headless::{without_model_choice, Run};
use super::terminal::{quoted, Terminal};

/// The answer's last sentence in the bundled script.
const ANSWER_END: &str = "It now uses `-gt`, and `sh test.sh` passes all 4 checks.\n";

/// Every place a program would write outside its working directory, each empty and temporary.
struct Sandbox {
    home: TempDir,
    config: TempDir,
    state: TempDir,
    tmp: TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            config: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    /// `tandem demo ARGS…` with nothing configured, writing (if anywhere) only in here.
    async fn demo(&self, args: &[&Path]) -> Run {
        let home = self.home.path();
        let mut command = Command::new(env!("CARGO_BIN_EXE_tandem"));
        command
            .arg("demo")
            .args(args)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("TMPDIR", self.tmp.path())
            .env("TANDEM_CONFIG_DIR", self.config.path())
            .env("TANDEM_STATE_DIR", self.state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        without_model_choice(&mut command);
        Run::of(command.spawn().unwrap()).await
    }

    /// Asserts that the demo wrote nothing in home, settings and state (and, unless the project
    /// went there, the temporary directory).
    fn assert_untouched(&self, tmp_too: bool) {
        let mut places = vec![&self.home, &self.config, &self.state];
        if tmp_too {
            places.push(&self.tmp);
        }
        for place in places {
            let entries: Vec<_> = std::fs::read_dir(place.path())
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            assert!(entries.is_empty(), "the demo wrote {entries:?}");
        }
    }
}

/// The sample project's directory, as the banner names it.
fn project_of(run: &Run) -> PathBuf {
    let line = run
        .stderr
        .lines()
        .find_map(|line| line.strip_prefix("Sample project: "))
        .unwrap_or_else(|| panic!("no `Sample project:` line:\n{run:#?}"));
    PathBuf::from(line)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Asserts that the sample's own test passes in `dir`.
fn assert_test_passes(dir: &Path) {
    let test = std::process::Command::new("sh")
        .arg("test.sh")
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&test.stdout);
    assert!(
        test.status.success() && stdout.ends_with("all 4 passed\n"),
        "{test:?}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn demo_fixes_the_sample_projects_failing_test_and_writes_nowhere_else() {
    let sandbox = Sandbox::new();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("sample");
    let run = sandbox.demo(&[&dir]).await;
    assert_eq!(run.code, 0, "{run:#?}");

    assert!(
        run.stderr
            .starts_with("This is a recorded demo: no model is called"),
        "{}",
        run.stderr
    );
    // The narration and the answer on stdout, as `tandem ask` prints them; tools on stderr.
    assert!(
        run.stdout.starts_with("I'll run the tests first") && run.stdout.ends_with(ANSWER_END),
        "{}",
        run.stdout
    );
    run.assert_stderr_has(&[
        "→ Run `sh test.sh`\n✓ Run `sh test.sh`\n",
        "✓ Read math.sh\n",
        "✓ Search for `-lt|-gt`\n",
        "✓ Edit math.sh\n",
        "End of the recorded demo. The sample project is kept in ",
        // What changed, as `tandem ask` shows it on a terminal (here, without colour).
        "Changed 1 file:\nmath.sh +1 -1\n@@ ",
        "-        if [ \"$n\" -lt \"$best\" ]; then best=$n; fi\n\
         +        if [ \"$n\" -gt \"$best\" ]; then best=$n; fi\n",
        "tandem models",
        "docs/editors.md",
    ]);
    assert!(!run.stderr.contains('✗'), "{}", run.stderr);
    assert!(!run.stderr.contains("saved"), "{}", run.stderr);

    let dir = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(project_of(&run), dir);
    // The script it played from is gone; the project is what the agent left.
    // `.tandem`, empty, is the sandbox's: made read-only before the first command ran.
    assert_eq!(names(&dir), [".tandem", "README.md", "math.sh", "test.sh"]);
    assert_eq!(names(&dir.join(".tandem")), Vec::<String>::new());
    assert_test_passes(&dir);
    assert_eq!(names(parent.path()), ["sample"]);
    sandbox.assert_untouched(true);
}

#[cfg(unix)]
#[tokio::test]
async fn demo_without_a_directory_keeps_the_project_in_a_new_temporary_one() {
    let sandbox = Sandbox::new();
    let run = sandbox.demo(&[]).await;
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.ends_with(ANSWER_END), "{}", run.stdout);

    let dir = project_of(&run);
    let tmp = std::fs::canonicalize(sandbox.tmp.path()).unwrap();
    assert_eq!(dir.parent(), Some(tmp.as_path()), "{run:#?}");
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("tandem-demo-"),
        "{dir:?}"
    );
    assert_eq!(names(&tmp).len(), 1);
    assert_test_passes(&dir);
    sandbox.assert_untouched(false);
}

#[cfg(unix)]
#[tokio::test]
async fn demo_refuses_a_directory_that_has_files() {
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("math.sh"), "mine\n").unwrap();
    let run = sandbox.demo(&[dir.path()]).await;
    assert_eq!(run.code, 2, "{run:#?}");
    run.assert_stderr_has(&["is not empty; give a new or empty directory"]);
    assert_eq!(names(dir.path()), ["math.sh"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("math.sh")).unwrap(),
        "mine\n"
    );
    sandbox.assert_untouched(true);
}

/// On a terminal the demo prints as `tandem ask` does there: each tool line on its own line, a
/// blank line between the narration and the tool lines, and the diff of what changed (once)
/// before the closing banner.
#[cfg(unix)]
#[tokio::test]
async fn demo_on_a_terminal_lays_out_its_turn_as_ask_does_and_ends_with_the_diff() {
    let sandbox = Sandbox::new();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("sample");
    let home = sandbox.home.path();
    let path = |path: &Path| quoted(path.to_str().unwrap());
    let command = format!(
        "env -u TANDEM_MODEL -u ANTHROPIC_API_KEY -u GEMINI_API_KEY -u OPENAI_API_KEY NO_COLOR=1 \
         TERM=xterm-256color HOME={} XDG_CONFIG_HOME={} XDG_STATE_HOME={} TMPDIR={} \
         TANDEM_CONFIG_DIR={} TANDEM_STATE_DIR={} {} demo {}",
        path(home),
        path(&home.join(".config")),
        path(&home.join(".local/state")),
        path(sandbox.tmp.path()),
        path(sandbox.config.path()),
        path(sandbox.state.path()),
        path(Path::new(env!("CARGO_BIN_EXE_tandem"))),
        path(&dir),
    );
    let terminal = Terminal::run(&command);
    let (code, screen) = terminal.wait_exit(false).await;
    assert_eq!(code, 0, "{screen}");
    for needle in [
        "I'll run the tests first, to see what fails.\n\n→ Run `sh test.sh`\n✓ Run `sh test.sh`\n\n`max 3 9 4`",
        "and find every comparison in it.\n\n→ Read math.sh\n",
        "passes all 4 checks.\n\nChanged 1 file:\nmath.sh +1 -1\n@@ ",
        "+        if [ \"$n\" -gt \"$best\" ]; then best=$n; fi\n",
    ] {
        assert!(screen.contains(needle), "no {needle:?} in the screen:\n{screen}");
    }
    assert!(!screen.contains("\n\n\n"), "{screen}");
    assert_eq!(screen.matches("Changed 1 file").count(), 1, "{screen}");
    let end = screen.find("End of the recorded demo").unwrap();
    assert!(screen.find("Changed 1 file").unwrap() < end, "{screen}");
}
