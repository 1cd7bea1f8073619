//! The environment context the first message of a session carries: date, operating system,
//! the shell commands run with, the model, workspace folders, each folder's git state (branch,
//! short status, last commits) when it is in a git work tree, and a folder tree that respects
//! .gitignore and is cut breadth-first, with counts of what was left out
//! (`[+4 files (2 *.rs, …) & 1 dir]`).
//!
//! The git state comes from running git in the workspace, which a cloned repository must not
//! be able to turn into running its own programs: git is found in the `PATH`'s absolute folders
//! only, and runs with `safe.bareRepository=explicit` (a committed folder that is a repository,
//! with a `core.fsmonitor` program in its `config`, is refused; see tandem-tools'
//! `shell/environment.rs`), `core.fsmonitor` off, no optional locks, no prompts and no
//! signature checks. Everything git does here shares one short deadline; when git is missing,
//! slow or fails, the git lines are left out.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tandem_providers::ModelConfig;

/// Entries shown per workspace folder before the rest is summarised.
pub const TREE_BUDGET: usize = 200;
/// How long git may take for all workspace folders together; the session waits for it.
const GIT_DEADLINE: Duration = Duration::from_secs(2);
/// `git status` lines shown per folder before the rest is counted.
const STATUS_LINES: usize = 20;
/// Commits shown per folder.
const COMMITS: usize = 5;
/// Commit subjects are cut to this many characters.
const SUBJECT_CHARS: usize = 80;

/// The context block; `today` is the date as the front end wants it shown, `model` the model
/// the session talks to (no line without one).
pub fn environment_context(roots: &[PathBuf], today: &str, model: Option<&ModelConfig>) -> String {
    let mut text = format!(
        "<environment>\nToday's date: {today}\nOperating system: {}\n{}",
        std::env::consts::OS,
        shell_line(std::env::var_os("SHELL").as_deref().map(Path::new))
    );
    if let Some(model) = model {
        text.push_str(&format!(
            "Model: {} ({})\n",
            model.model,
            model.provider.as_str()
        ));
    }
    match roots {
        [] => text.push_str("No workspace folder is open.\n"),
        [root] => text.push_str(&format!("Workspace folder: {}\n", root.display())),
        _ => {
            text.push_str("Workspace folders (relative paths resolve against the first):\n");
            for root in roots {
                text.push_str(&format!("- {}\n", root.display()));
            }
        }
    }
    let git = find_git().map(|program| Git {
        program,
        env: &[],
        deadline: Instant::now() + GIT_DEADLINE,
    });
    if git.is_none() && !roots.is_empty() {
        tracing::debug!("no git on the PATH: the environment has no git state");
    }
    for root in roots {
        if let Some(state) = git.as_ref().and_then(|git| git_state(git, root)) {
            match roots {
                [_] => text.push_str(&format!("Git: {state}")),
                _ => text.push_str(&format!("Git in {}: {state}", root.display())),
            }
        }
        text.push_str(&format!(
            "\nFiles in {} (respecting .gitignore):\n",
            root.display()
        ));
        text.push_str(&folder_tree(root, TREE_BUDGET));
    }
    text.push_str("</environment>");
    text
}

/// `Shell (commands run with): bash -c`, and the user's own shell (`$SHELL`) when it is
/// another: the model would otherwise write zsh or fish syntax for a shell that is not used.
fn shell_line(login_shell: Option<&Path>) -> String {
    let invocation = tandem_tools::shell::shell_invocation();
    let program = invocation.split(' ').next().unwrap_or_default();
    let login = login_shell
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy())
        .filter(|name| !name.is_empty() && name != program);
    match login {
        Some(login) => {
            format!("Shell (commands run with): {invocation}; the user's login shell is {login}\n")
        }
        None => format!("Shell (commands run with): {invocation}\n"),
    }
}

/// git from the `PATH`'s absolute folders: git runs in the workspace, where a relative entry
/// (`.`, `bin`) would find a `git` the checkout brought.
fn find_git() -> Option<PathBuf> {
    let name = if cfg!(windows) { "git.exe" } else { "git" };
    std::env::split_paths(&std::env::var_os("PATH")?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// How git is run, and when it must be done by.
struct Git<'a> {
    program: PathBuf,
    /// Set on every git command (tests make git ignore the user's configuration).
    env: &'a [(&'a str, &'a str)],
    deadline: Instant,
}

impl Git<'_> {
    /// The first `keep` lines git writes for `args`, run in `dir`, and how many more it wrote;
    /// `None` when it cannot start, fails or is not done by the deadline (it is then killed).
    fn lines(&self, dir: &Path, args: &[&str], keep: usize) -> Option<(Vec<String>, usize)> {
        let mut child = Command::new(&self.program)
            .args([
                "-c",
                "safe.bareRepository=explicit",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.untrackedCache=false",
                // Names as they are, not octal escapes of their UTF-8.
                "-c",
                "core.quotePath=false",
                "--no-optional-locks",
                "--no-pager",
            ])
            .args(args)
            .current_dir(dir)
            // The repository is the one found from `dir`, not one Tandem's environment names.
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .envs(self.env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| {
                tracing::debug!("cannot run {} {args:?}: {error}", self.program.display());
            })
            .ok()?;
        let stdout = child.stdout.take()?;
        // Read on a thread, so that a long output never fills the pipe and stalls git, and the
        // wait below can give up at the deadline.
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(first_lines(stdout, keep));
        });
        let output = receiver
            .recv_timeout(self.deadline.saturating_duration_since(Instant::now()))
            .ok();
        // Its output ends when git exits, or nearly: wait for the exit up to the deadline too.
        let status = match output {
            Some(_) => loop {
                match child.try_wait() {
                    Ok(Some(status)) => break Some(status),
                    Ok(None) if Instant::now() < self.deadline => {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    Ok(None) | Err(_) => break None,
                }
            },
            None => None,
        };
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        match status {
            Some(status) if status.success() => output,
            Some(status) => {
                tracing::debug!("git {args:?} in {} failed: {status}", dir.display());
                None
            }
            None => {
                tracing::debug!("git {args:?} in {} took too long", dir.display());
                None
            }
        }
    }
}

/// The first `keep` lines of `output`, and how many more it has.
fn first_lines(output: impl Read, keep: usize) -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let mut more = 0;
    for line in BufReader::new(output).split(b'\n') {
        let Ok(line) = line else { break };
        if lines.len() < keep {
            let line = String::from_utf8_lossy(&line);
            lines.push(line.trim_end_matches('\r').to_owned());
        } else {
            more += 1;
        }
    }
    (lines, more)
}

/// `root`'s git state, as the lines after `Git: `: the branch, the short status (at most
/// `STATUS_LINES`) and the last commits. `None` outside a git work tree, or when git fails.
fn git_state(git: &Git, root: &Path) -> Option<String> {
    let (status, more) = git.lines(
        root,
        &["status", "--porcelain=v1", "--branch"],
        // The `## branch` line, then the changes.
        STATUS_LINES + 1,
    )?;
    let (header, changes) = status.split_first()?;
    let header = header.strip_prefix("## ")?;
    let unborn = header
        .strip_prefix("No commits yet on ")
        .or_else(|| header.strip_prefix("Initial commit on "));
    let commits = match unborn {
        Some(_) => Vec::new(),
        None => git
            .lines(
                root,
                &[
                    "log",
                    "--no-color",
                    "--no-show-signature",
                    "--format=%h %s",
                    "-n",
                    &COMMITS.to_string(),
                ],
                COMMITS,
            )
            .map(|(commits, _)| commits)
            .unwrap_or_default(),
    };
    let mut text = match unborn {
        Some(name) => format!("branch {name} (no commits yet)\n"),
        None if header.starts_with("HEAD (no branch)") => {
            match commits.first().and_then(|commit| commit.split(' ').next()) {
                Some(hash) => format!("detached at {hash}\n"),
                None => "detached HEAD\n".to_owned(),
            }
        }
        None => match header.split_once("...") {
            Some((name, upstream)) => format!("branch {name}, upstream {upstream}\n"),
            None => format!("branch {header}\n"),
        },
    };
    if changes.is_empty() {
        text.push_str("git status --porcelain: clean\n");
    } else {
        text.push_str("git status --porcelain:\n");
        for line in changes {
            text.push_str(&format!("{line}\n"));
        }
        if more > 0 {
            text.push_str(&format!("… and {more} more\n"));
        }
    }
    if !commits.is_empty() {
        text.push_str(&format!("git log --oneline -n {COMMITS}:\n"));
        for commit in &commits {
            let (hash, subject) = commit.split_once(' ').unwrap_or((commit, ""));
            // A subject is the committer's text: no control characters reach the model.
            let subject: String = subject.chars().filter(|c| !c.is_control()).collect();
            if subject.chars().count() > SUBJECT_CHARS {
                let cut: String = subject.chars().take(SUBJECT_CHARS - 1).collect();
                text.push_str(&format!("{hash} {}…\n", cut.trim_end()));
            } else {
                text.push_str(&format!("{hash} {subject}\n"));
            }
        }
    }
    Some(text)
}

struct Dir {
    path: PathBuf,
    depth: usize,
    /// Shown children: (name, is_dir), dirs first.
    shown: Vec<(String, bool)>,
    /// Files and directories left out.
    hidden_files: Vec<String>,
    hidden_dirs: usize,
    expanded: bool,
}

/// The tree under `root`, at most `budget` entries, filled breadth-first.
pub fn folder_tree(root: &Path, budget: usize) -> String {
    let mut dirs: Vec<Dir> = Vec::new();
    let mut queue = VecDeque::from([(root.to_path_buf(), 0usize)]);
    let mut left = budget;
    while let Some((path, depth)) = queue.pop_front() {
        let children = list(&path);
        let mut dir = Dir {
            path,
            depth,
            shown: Vec::new(),
            hidden_files: Vec::new(),
            hidden_dirs: 0,
            expanded: left > 0,
        };
        for (name, is_dir) in children {
            if left > 0 {
                left -= 1;
                if is_dir {
                    queue.push_back((dir.path.join(&name), depth + 1));
                }
                dir.shown.push((name, is_dir));
            } else if is_dir {
                dir.hidden_dirs += 1;
            } else {
                dir.hidden_files.push(name);
            }
        }
        dirs.push(dir);
    }
    let by_path: BTreeMap<&Path, &Dir> = dirs.iter().map(|dir| (dir.path.as_path(), dir)).collect();
    let mut out = String::new();
    render(root, &by_path, &mut out);
    if out.is_empty() {
        out.push_str("(empty)\n");
    }
    out
}

fn render(path: &Path, dirs: &BTreeMap<&Path, &Dir>, out: &mut String) {
    let Some(dir) = dirs.get(path) else { return };
    let indent = "  ".repeat(dir.depth);
    for (name, is_dir) in &dir.shown {
        if *is_dir {
            out.push_str(&format!("{indent}{name}/\n"));
            render(&path.join(name), dirs, out);
        } else {
            out.push_str(&format!("{indent}{name}\n"));
        }
    }
    if !dir.expanded || !dir.hidden_files.is_empty() || dir.hidden_dirs > 0 {
        let summary = summary(&dir.hidden_files, dir.hidden_dirs);
        if !summary.is_empty() {
            out.push_str(&format!("{indent}{summary}\n"));
        }
    }
}

/// `[+4 files (2 *.rs, 1 *.md, 1 other) & 1 dir]`.
fn summary(files: &[String], dirs: usize) -> String {
    if files.is_empty() && dirs == 0 {
        return String::new();
    }
    let mut by_extension: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let key = match Path::new(file).extension() {
            Some(extension) => format!("*.{}", extension.to_string_lossy()),
            None => "other".to_owned(),
        };
        *by_extension.entry(key).or_default() += 1;
    }
    let mut kinds: Vec<(String, usize)> = by_extension.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let kinds: Vec<String> = kinds
        .iter()
        .take(4)
        .map(|(kind, count)| format!("{count} {kind}"))
        .collect();
    let plural = |count: usize, word: &str| {
        if count == 1 {
            format!("{count} {word}")
        } else {
            format!("{count} {word}s")
        }
    };
    let files_part = if files.is_empty() {
        String::new()
    } else {
        let more = if kinds.len() < 4 { "" } else { ", …" };
        format!(
            "{} ({}{more})",
            plural(files.len(), "file"),
            kinds.join(", ")
        )
    };
    match (files.is_empty(), dirs) {
        (true, dirs) => format!("[+{}]", plural(dirs, "dir")),
        (false, 0) => format!("[+{files_part}]"),
        (false, dirs) => format!("[+{files_part} & {}]", plural(dirs, "dir")),
    }
}

/// A directory's entries, ignore rules applied, directories first, each sorted by name.
fn list(dir: &Path) -> Vec<(String, bool)> {
    let walker = ignore::WalkBuilder::new(dir)
        .max_depth(Some(1))
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut entries: Vec<(String, bool)> = walker
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() == 1)
        .map(|entry| {
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            (entry.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        dir
    }

    #[test]
    fn small_trees_are_shown_whole_and_ignored_files_are_not() {
        let dir = workspace(&[
            "Cargo.toml",
            "src/lib.rs",
            "src/parser/mod.rs",
            "target/debug/x",
            ".gitignore",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        expect_test::expect![[r#"
            src/
              parser/
                mod.rs
              lib.rs
            .gitignore
            Cargo.toml
        "#]]
        .assert_eq(&folder_tree(dir.path(), 100));
    }

    #[test]
    fn large_trees_are_cut_breadth_first_with_counts() {
        let mut files = vec!["README.md".to_owned(), "docs/guide.md".to_owned()];
        files.extend((0..6).map(|i| format!("src/m{i}.rs")));
        files.extend(["src/deep/a.rs".to_owned(), "src/notes.txt".to_owned()]);
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let dir = workspace(&refs);
        expect_test::expect![[r#"
            docs/
              guide.md
            src/
              deep/
                [+1 file (1 *.rs)]
              m0.rs
              m1.rs
              [+5 files (4 *.rs, 1 *.txt)]
            README.md
        "#]]
        .assert_eq(&folder_tree(dir.path(), 7));
    }

    #[test]
    fn the_context_names_the_date_os_shell_model_and_folders() {
        let dir = workspace(&["a.txt"]);
        let model = ModelConfig::new(
            tandem_providers::ProviderKind::Anthropic,
            "claude-sonnet-4-5",
            "",
        );
        let text = environment_context(
            &[dir.path().to_owned()],
            "Sunday, 22 November 2026",
            Some(&model),
        );
        assert!(text.starts_with("<environment>\nToday's date: Sunday, 22 November 2026\n"));
        let shell = format!(
            "Shell (commands run with): {}",
            tandem_tools::shell::shell_invocation()
        );
        assert!(text.contains(&shell), "{text}");
        assert!(
            text.contains("\nModel: claude-sonnet-4-5 (anthropic)\n"),
            "{text}"
        );
        assert!(text.contains(&format!("Workspace folder: {}", dir.path().display())));
        assert!(text.contains("a.txt\n") && text.ends_with("</environment>"));
        let text = environment_context(&[dir.path().to_owned()], "today", None);
        assert!(!text.contains("Model:"), "{text}");
    }

    #[test]
    fn the_shell_line_names_the_login_shell_only_when_commands_use_another() {
        let invocation = tandem_tools::shell::shell_invocation();
        let program = invocation.split(' ').next().unwrap();
        assert_eq!(
            shell_line(Some(Path::new("/opt/bin/fish"))),
            format!("Shell (commands run with): {invocation}; the user's login shell is fish\n")
        );
        let same = format!("/usr/bin/{program}");
        for login in [None, Some(Path::new(&same))] {
            assert_eq!(
                shell_line(login),
                format!("Shell (commands run with): {invocation}\n")
            );
        }
    }

    /// Runs the test's own git commands without the user's or the system's configuration, with
    /// fixed names and dates.
    fn git(dir: &Path, args: &[&str]) {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.com"])
            .args(args)
            .current_dir(dir)
            .envs(HERMETIC)
            .env("GIT_AUTHOR_DATE", "2026-11-22T10:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-11-22T10:00:00Z")
            .output()
            .unwrap();
        assert!(output.status.success(), "git {args:?}: {output:?}");
    }

    const HERMETIC: [(&str, &str); 2] = [
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ];

    fn test_git(program: &str) -> Git<'static> {
        Git {
            program: PathBuf::from(program),
            env: &HERMETIC,
            deadline: Instant::now() + GIT_DEADLINE,
        }
    }

    /// `dir`'s git state with hashes (words of 7 or more hex digits) masked: their length
    /// follows the repository's size.
    fn masked_state(dir: &Path) -> Option<String> {
        let git = test_git(find_git()?.to_str()?);
        let state = git_state(&git, dir)?;
        let mask = |word: &str| {
            if word.len() >= 7 && word.chars().all(|c| c.is_ascii_hexdigit()) {
                "<hash>".to_owned()
            } else {
                word.to_owned()
            }
        };
        let lines: Vec<String> = state
            .lines()
            .map(|line| line.split(' ').map(mask).collect::<Vec<_>>().join(" "))
            .collect();
        Some(lines.join("\n") + "\n")
    }

    fn repository(files: &[&str]) -> tempfile::TempDir {
        let dir = workspace(files);
        git(dir.path(), &["-c", "init.defaultBranch=main", "init", "-q"]);
        dir
    }

    #[test]
    fn a_git_workspace_shows_its_branch_changes_and_last_commits() {
        let dir = repository(&["README.md", "src/lib.rs"]);
        git(dir.path(), &["add", "."]);
        git(dir.path(), &["commit", "-q", "-m", "First commit"]);
        for i in 0..5 {
            std::fs::write(dir.path().join("src/lib.rs"), format!("// {i}\n")).unwrap();
            git(
                dir.path(),
                &["commit", "-q", "-a", "-m", &format!("Change {i}")],
            );
        }
        let long = format!("Explain why the parser {} stops here", "really ".repeat(12));
        git(dir.path(), &["commit", "-q", "--allow-empty", "-m", &long]);
        std::fs::write(dir.path().join("README.md"), "# changed\n").unwrap();
        std::fs::write(dir.path().join("notes é.txt"), "").unwrap();
        expect_test::expect![[r#"
            branch main
            git status --porcelain:
             M README.md
            ?? "notes é.txt"
            git log --oneline -n 5:
            <hash> Explain why the parser really really really really really really really really…
            <hash> Change 4
            <hash> Change 3
            <hash> Change 2
            <hash> Change 1
        "#]]
        .assert_eq(&masked_state(dir.path()).unwrap());

        git(dir.path(), &["checkout", "-q", "--detach", "HEAD~2"]);
        std::fs::remove_file(dir.path().join("notes é.txt")).unwrap();
        git(dir.path(), &["checkout", "-q", "--", "README.md"]);
        expect_test::expect![[r#"
            detached at <hash>
            git status --porcelain: clean
            git log --oneline -n 5:
            <hash> Change 3
            <hash> Change 2
            <hash> Change 1
            <hash> Change 0
            <hash> First commit
        "#]]
        .assert_eq(&masked_state(dir.path()).unwrap());
    }

    #[test]
    fn a_repository_without_commits_shows_its_branch_and_status() {
        let dir = repository(&["a.txt"]);
        expect_test::expect![[r#"
            branch main (no commits yet)
            git status --porcelain:
            ?? a.txt
        "#]]
        .assert_eq(&masked_state(dir.path()).unwrap());
    }

    #[test]
    fn a_long_status_is_cut_with_a_count() {
        let files: Vec<String> = (0..25).map(|i| format!("f{i:02}.txt")).collect();
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let dir = repository(&refs);
        let state = masked_state(dir.path()).unwrap();
        let shown: Vec<&str> = state.lines().collect();
        assert_eq!(shown.len(), 1 + 1 + STATUS_LINES + 1, "{state}");
        assert_eq!(shown[2], "?? f00.txt");
        assert_eq!(shown[STATUS_LINES + 1], "?? f19.txt");
        assert_eq!(shown[STATUS_LINES + 2], "… and 5 more");
    }

    #[test]
    fn a_folder_outside_git_has_no_git_lines() {
        let dir = workspace(&["a.txt"]);
        // Git looks no higher than the temporary folder, which could be in a repository.
        let ceiling = [
            HERMETIC[0],
            HERMETIC[1],
            (
                "GIT_CEILING_DIRECTORIES",
                dir.path().parent().unwrap().to_str().unwrap(),
            ),
        ];
        let git = Git {
            program: find_git().unwrap(),
            env: &ceiling,
            deadline: Instant::now() + GIT_DEADLINE,
        };
        assert_eq!(git_state(&git, dir.path()), None);
        // And nothing is said when git cannot be run.
        let repository = repository(&["a.txt"]);
        let missing = test_git("/nonexistent/git");
        assert_eq!(git_state(&missing, repository.path()), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_git_that_does_not_finish_in_time_is_killed_and_left_out() {
        use std::os::unix::fs::PermissionsExt;
        let dir = workspace(&[]);
        let slow = dir.path().join("git");
        std::fs::write(&slow, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A script just written may fail to start with ETXTBSY while another test's fork
        // still holds it open: such a try ends at once, and is tried again.
        let waited = (0..5).any(|_| {
            let git = Git {
                program: slow.clone(),
                env: &[],
                deadline: Instant::now() + Duration::from_millis(300),
            };
            let before = Instant::now();
            assert_eq!(git_state(&git, dir.path()), None);
            let elapsed = before.elapsed();
            assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
            elapsed >= Duration::from_millis(300)
        });
        assert!(waited);
    }

    #[test]
    fn git_state_does_not_run_the_fsmonitor_of_a_repository_the_checkout_committed_as_a_folder() {
        let temp = tempfile::tempdir().unwrap();
        let lib = temp.path().join("vendor/lib");
        std::fs::create_dir_all(&lib).unwrap();
        git(&lib, &["init", "-q", "--bare", "."]);
        let marker = temp.path().join("pwned");
        std::fs::write(
            lib.join("config"),
            format!(
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\t\
                 fsmonitor = \"touch {}\"\n",
                marker.display()
            ),
        )
        .unwrap();
        // Without the guards git runs the configured program (the attack is real here)…
        let output = std::process::Command::new("git")
            .arg("status")
            .current_dir(&lib)
            .envs(HERMETIC)
            .output()
            .unwrap();
        assert!(
            marker.exists(),
            "this git does not run core.fsmonitor: {output:?}"
        );
        std::fs::remove_file(&marker).unwrap();
        // …and the environment block's git refuses the repository.
        let git = test_git(find_git().unwrap().to_str().unwrap());
        assert_eq!(git_state(&git, &lib), None);
        let text = environment_context(std::slice::from_ref(&lib), "today", None);
        assert!(!text.contains("Git:"), "{text}");
        assert!(!marker.exists());
    }
}
