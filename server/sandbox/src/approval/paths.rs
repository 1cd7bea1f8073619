//! Placing the paths one call names, the way the program that gets them will open them. A
//! relative path starts in the call's `cwd` (or the workspace root) — and, for a shell command,
//! in every directory a `cd` or `pushd` on the line may move to; symbolic links are followed
//! where the kernel meets them (`link/../x` is next to the link's target, not to the link:
//! `workspace::physical`), dangling ones to where their target would be created. Every word of
//! a command counts, not only those that look like paths: `cat notes` opens whatever the link
//! `notes` points to, and `printf x >> config` run in `.git` writes `.git/config`.
//!
//! `PathCheck` answers the approval step's three questions about a call: does it write a
//! protected path (`protected`, asked in every mode), does an argument reach beyond what an
//! allow rule may let a command reach (`out_of_reach`), and would git, run where the command
//! runs, use a repository whose configuration nobody chose (`foreign_repository`, see
//! `repository.rs`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::protected::ProtectedPaths;
use super::repository;
use crate::workspace::{normalize, physical, Workspace};

/// The most directories a command line's `cd`s are followed into; past them the directory is
/// taken to be unknown.
const MAX_DIRECTORIES: usize = 16;

/// Why an allow rule does not hold for a command whose directory cannot be known.
const UNKNOWN_DIRECTORY: &str = "the command runs in a directory known only when it runs, where \
    git may find a repository the checkout brought";

/// Options whose value is a pattern of names to leave out or match (`find -path ./.git
/// -prune`, `grep --exclude-dir=.git`, `tree -I .git`), not a path the command writes: their
/// value is not checked as one.
const PATTERN_OPTIONS: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "--exclude",
    "--exclude-dir",
    "--include",
    "--include-dir",
    "--ignore",
    "--ignore-dir",
    "--hide",
    "--glob",
    "--iglob",
    "-g",
    "-I",
];

/// The paths one call's arguments name, judged against the workspace and the protected paths.
pub struct PathCheck<'a> {
    workspace: &'a Workspace,
    protected: &'a ProtectedPaths,
    /// Where the call's relative paths may start: its `cwd` (or the primary root) first, then
    /// each directory a `cd`/`pushd` of its command may move to; `None` for one known only when
    /// the line runs (`cd -`, `cd "$DIR"`, `popd`) or a `cwd` the sandbox refuses.
    directories: Vec<Option<PathBuf>>,
    /// Skills' scripts the call's command line only runs (see `skill_scripts_run`).
    scripts_run: Vec<PathBuf>,
}

/// Programs that run the script named as their first argument without writing it.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "python", "python3", "node", "ruby", "perl", "deno", "bun",
];

impl<'a> PathCheck<'a> {
    pub fn new(workspace: &'a Workspace, protected: &'a ProtectedPaths, args: &Value) -> Self {
        let cwd = match args.get("cwd").and_then(Value::as_str) {
            Some(cwd) => workspace.resolve(cwd).ok(),
            None => workspace.primary_root().map(Path::to_path_buf),
        };
        let mut check = PathCheck {
            workspace,
            protected,
            directories: vec![cwd],
            scripts_run: Vec::new(),
        };
        if let Some(command) = args.get("command").and_then(Value::as_str) {
            check.follow_directory_changes(command);
            check.scripts_run = check.skill_scripts_run(command);
        }
        check
    }

    /// Adds the directories the command's `cd`s and `pushd`s may move to. Each target is placed
    /// from every directory known so far, both as bash's `cd` goes (`..` first, the default)
    /// and as `cd -P` goes (links first), since a line may hold either.
    fn follow_directory_changes(&mut self, command: &str) {
        for change in directory_changes(command) {
            let mut found: Vec<Option<PathBuf>> = Vec::new();
            match change {
                DirectoryChange::Unknown => found.push(None),
                DirectoryChange::To(target) => {
                    for base in self.directories.iter().flatten() {
                        let Some(joined) = self.join(base, &target) else {
                            found.push(None);
                            continue;
                        };
                        found.push(physical(&normalize(&joined)));
                        found.push(physical(&joined));
                    }
                }
            }
            for directory in found {
                if self.directories.len() >= MAX_DIRECTORIES {
                    if !self.directories.contains(&None) {
                        self.directories.push(None);
                    }
                    return;
                }
                if !self.directories.contains(&directory) {
                    self.directories.push(directory);
                }
            }
        }
    }

    /// `path` from `base` as a program would take it: `~/…` from the home directory, absolute
    /// as is. `None` for `~user/…`, or `~` without a known home.
    fn join(&self, base: &Path, path: &str) -> Option<PathBuf> {
        if let Some(rest) = path.strip_prefix("~/").or((path == "~").then_some("")) {
            return Some(self.protected.home.as_ref()?.join(rest));
        }
        if path.starts_with('~') {
            return None;
        }
        Some(base.join(path))
    }

    /// Everywhere `path` may lead, one place per directory the call may be in (an absolute or
    /// `~/` path has one); `None` where that cannot be known.
    fn places(&self, path: &str) -> Vec<Option<PathBuf>> {
        if Path::new(path).is_absolute() || path.starts_with('~') {
            return vec![self
                .join(Path::new(""), path)
                .and_then(|joined| physical(&joined))];
        }
        self.directories
            .iter()
            .map(|base| physical(&self.join(base.as_ref()?, path)?))
            .collect()
    }

    /// The files of the workspace's read-only folders (skills' folders, which lie in
    /// protected places: `.claude/`, `~/.config/tandem/`) that `command` only runs — as a
    /// command's program, or as the script an interpreter (`sh`, `python3`…) is given. Running
    /// a skill's script is not writing it, so it is asked about as any command is, not in every
    /// mode. Only a plain line qualifies (no redirection, substitution, compound command or
    /// change of directory), and only when no other word of it names anything in those
    /// folders: otherwise every path is checked as usual.
    fn skill_scripts_run(&self, command: &str) -> Vec<PathBuf> {
        let read_only = self.workspace.read_only();
        if read_only.is_empty() || self.directories.len() > 1 {
            return Vec::new();
        }
        let Ok(line) = tandem_syntax::shell::parse_line(command) else {
            return Vec::new();
        };
        if line.has_error || !line.simple {
            return Vec::new();
        }
        let in_read_only = |path: &Path| read_only.iter().any(|dir| path.starts_with(dir));
        let mut run = Vec::new();
        for simple in &line.commands {
            let interpreter = simple
                .words
                .first()
                .and_then(|word| word.literal())
                .and_then(|program| program.rsplit('/').next())
                .is_some_and(|program| INTERPRETERS.contains(&program));
            for (index, word) in simple.words.iter().enumerate() {
                let Some(text) = word.literal() else {
                    continue;
                };
                let places: Vec<PathBuf> = self.places(text).into_iter().flatten().collect();
                let Some(absolute) = places.first() else {
                    continue;
                };
                if !in_read_only(absolute) {
                    continue;
                }
                if index == 0 || (index == 1 && interpreter) {
                    run.push(absolute.clone());
                } else {
                    return Vec::new();
                }
            }
        }
        run.retain(|path| path.is_file());
        run
    }

    /// Why writing `path` must be asked about, if it must: the first place it may lead that is
    /// protected.
    pub fn protected(&self, path: &str) -> Option<String> {
        self.places(path)
            .into_iter()
            .flatten()
            .filter(|place| !self.scripts_run.contains(place))
            .find_map(|place| self.protected.reason(&place, self.workspace.roots()))
    }

    /// Whether an allow rule may not let a command reach `path`: a place it may lead lies
    /// outside the workspace (or cannot be known), or is protected. `/dev/null` is fine.
    pub fn out_of_reach(&self, path: &str) -> bool {
        if path == "/dev/null" {
            return false;
        }
        self.places(path).into_iter().any(|place| match place {
            Some(place) => {
                !self.workspace.contains(&place)
                    || self
                        .protected
                        .reason(&place, self.workspace.roots())
                        .is_some()
            }
            None => true,
        })
    }

    /// Why git, run in a directory the call may be in, would read a repository's configuration
    /// that no one chose (a folder of the checkout that is a repository itself): an allow rule
    /// does not hold then. `None` when every such directory is known and git would use the
    /// workspace's own repository, a `.git` folder of one, or none.
    pub fn foreign_repository(&self) -> Option<String> {
        if std::env::var_os("GIT_DIR").is_some() {
            return None;
        }
        self.directories.iter().find_map(|directory| {
            let Some(directory) = directory else {
                return Some(UNKNOWN_DIRECTORY.to_owned());
            };
            let found = repository::embedded(directory)?;
            Some(format!(
                "git would use the repository in `{}`, a folder of the checkout rather than a \
                 `.git` folder, whose configuration can name programs that git runs",
                self.workspace.display(&found)
            ))
        })
    }
}

/// Where a `cd` or `pushd` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DirectoryChange {
    /// This path (`~/…` and `~` included), from the directory the line is in.
    To(String),
    /// Somewhere known only when the line runs: `cd -`, `cd "$DIR"`, `popd`.
    Unknown,
}

/// One piece of a command line as `words` cuts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    /// An operator (`;`, `&`, `|`, `(`, `)`, `<`, `>`, a line break) ends a command's words.
    Break,
}

/// The command line cut at blanks, quotes and `=`, with operators (backquotes too) as `Break`s. It
/// is cruder than bash's reading on purpose: quoted strings (`sh -c '…'`) and substitutions
/// are cut into their words too, so a path inside them is seen.
fn tokens(command: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut start = None;
    for (index, char) in command.char_indices() {
        let operator = ";&|()<>`\n".contains(char);
        if operator || char.is_whitespace() || "'\"=".contains(char) {
            if let Some(from) = start.take() {
                tokens.push(Token::Word(&command[from..index]));
            }
            if operator {
                tokens.push(Token::Break);
            }
        } else if start.is_none() {
            start = Some(index);
        }
    }
    if let Some(from) = start {
        tokens.push(Token::Word(&command[from..]));
    }
    tokens
}

/// The words of a command line that may name a path it writes, for `Tool::paths_written`:
/// every word that is not an option, but the value of an option that only takes a pattern of
/// names ([`PATTERN_OPTIONS`]), which is how commands leave `.git` alone.
pub fn written_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut previous: Option<&str> = None;
    for token in tokens(command) {
        match token {
            Token::Break => previous = None,
            Token::Word(word) => {
                let pattern = previous.is_some_and(|option| PATTERN_OPTIONS.contains(&option));
                if !word.starts_with('-') && !pattern {
                    words.push(word.to_owned());
                }
                previous = Some(word);
            }
        }
    }
    words
}

/// The `cd`s and `pushd`s of a command line, wherever they are (in `sh -c '…'`, `$(…)` too),
/// and the `popd`s.
fn directory_changes(command: &str) -> Vec<DirectoryChange> {
    let tokens = tokens(command);
    let mut changes = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        let Token::Word(word) = token else {
            continue;
        };
        match *word {
            "popd" => changes.push(DirectoryChange::Unknown),
            "cd" | "pushd" => {
                let target = tokens[index + 1..]
                    .iter()
                    .map_while(|token| match token {
                        Token::Word(word) => Some(*word),
                        Token::Break => None,
                    })
                    .find(|word| !word.starts_with('-') || *word == "-");
                changes.push(match target {
                    None => DirectoryChange::To("~".to_owned()),
                    Some(target) if target == "-" || target.contains('$') => {
                        DirectoryChange::Unknown
                    }
                    Some(target) => DirectoryChange::To(target.to_owned()),
                });
            }
            _ => {}
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _temp: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
        workspace: Workspace,
        protected: ProtectedPaths,
    }

    /// A workspace `w` with `src/` and `.git/hooks/`, and a home beside it holding `.ssh/id_rsa`.
    fn fixture() -> Fixture {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let root = base.join("home/w");
        let home = base.join("home");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
        let workspace = Workspace::new(vec![root.clone()], Vec::new());
        let protected = ProtectedPaths {
            home: Some(home),
            user_config: None,
        };
        Fixture {
            _temp: temp,
            base,
            root,
            workspace,
            protected,
        }
    }

    #[test]
    fn call_paths_are_placed_from_the_cwd_and_home() {
        let Fixture {
            _temp,
            root,
            workspace,
            protected,
            ..
        } = fixture();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join(".git"), root.join("src/innocent")).unwrap();
        let check = PathCheck::new(&workspace, &protected, &serde_json::json!({"cwd": "src"}));
        assert!(check.protected("../.git/config").is_some());
        assert!(check.protected("lib.rs").is_none());
        assert!(check.protected("~/.bashrc").is_some());
        #[cfg(unix)]
        assert!(
            check.protected("innocent/config").is_some(),
            "a symlink into .git"
        );
        assert!(!check.out_of_reach("lib.rs"));
        assert!(!check.out_of_reach("/dev/null"));
        assert!(check.out_of_reach("../../secrets"));
        assert!(check.out_of_reach("~/.aws/credentials"));
        assert!(check.out_of_reach("~other/x"));
        assert!(check.out_of_reach("../.git/hooks/pre-commit"));
    }

    /// The second review's finding 2: a committed link was judged by its name (`notes`, no
    /// `/`, never checked) or with `..` applied before the link (`k/../.ssh/id_rsa` "inside").
    #[cfg(unix)]
    #[test]
    fn links_are_followed_where_the_program_meets_them() {
        let Fixture {
            _temp,
            root,
            workspace,
            protected,
            ..
        } = fixture();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).unwrap();
        };
        link("../.ssh/id_rsa", "notes");
        link("/proc/self/environ", "env");
        link("../.ssh", "k");
        link(".git/hooks", "h");
        link("../.bashrc", "dangling");
        link("loop", "loop");
        let check = PathCheck::new(&workspace, &protected, &serde_json::json!({}));
        // (word, out of an allow rule's reach, protected)
        let cases = [
            ("notes", true, true),
            ("env", true, false),
            ("k/../.ssh/id_rsa", true, true),
            ("h/../config", true, true),
            ("dangling", true, true),
            ("loop", true, false),
            ("src/../README.md", false, false),
            ("plain-word", false, false),
        ];
        for (word, out_of_reach, protected) in cases {
            assert_eq!(check.out_of_reach(word), out_of_reach, "{word}");
            assert_eq!(check.protected(word).is_some(), protected, "{word}");
        }
    }

    /// The second review's finding 8: `cd .git && printf … >> config` and `cp -r hooks .git`
    /// ran in `yolo` without asking.
    #[test]
    fn a_change_of_directory_places_the_words_after_it() {
        let Fixture {
            _temp,
            workspace,
            protected,
            ..
        } = fixture();
        let protected_words = |command: &str| {
            let args = serde_json::json!({ "command": command });
            let check = PathCheck::new(&workspace, &protected, &args);
            written_words(command)
                .into_iter()
                .filter(|word| check.protected(word).is_some())
                .collect::<Vec<_>>()
        };
        let cases: [(&str, &[&str]); 9] = [
            (
                "cd .git && printf x >> config",
                &["cd", ".git", "printf", "x", "config"],
            ),
            ("cp -r hooks .git", &[".git"]),
            (
                "bash -c 'cd .git/hooks; cat > pre-commit'",
                &["bash", "cd", ".git/hooks", "cat", "pre-commit"],
            ),
            ("cd src && cp a b", &[]),
            ("cd && printf x >> .bashrc", &[".bashrc"]),
            ("grep -rn x . --exclude-dir=.git", &[]),
            ("find . -path ./.git -prune -o -print", &[]),
            ("tar -C .git -xf x.tar", &[".git"]),
            ("cargo test -p foo", &[]),
        ];
        for (command, expected) in cases {
            assert_eq!(protected_words(command), expected, "{command}");
        }
        // A directory known only when the line runs reaches beyond any allow rule.
        let args = serde_json::json!({ "command": "cd - && git status" });
        assert!(PathCheck::new(&workspace, &protected, &args).out_of_reach("x"));
    }

    #[test]
    fn commands_are_cut_into_words_and_directory_changes() {
        assert_eq!(
            written_words("echo x>.git/config"),
            ["echo", "x", ".git/config"]
        );
        assert_eq!(
            written_words("cp hook .git/hooks/pre-commit && ls ~/x"),
            ["cp", "hook", ".git/hooks/pre-commit", "ls", "~/x"]
        );
        let cases: [(&str, &[DirectoryChange]); 6] = [
            ("cd a && cd b", &[to("a"), to("b")]),
            ("cd; ls", &[to("~")]),
            ("cd -P ../x", &[to("../x")]),
            (
                "cd - ; popd",
                &[DirectoryChange::Unknown, DirectoryChange::Unknown],
            ),
            ("pushd \"$DIR\"", &[DirectoryChange::Unknown]),
            ("sh -c 'cd .git && ls'", &[to(".git")]),
        ];
        for (command, expected) in cases {
            assert_eq!(directory_changes(command), expected, "{command}");
        }
    }

    fn to(path: &str) -> DirectoryChange {
        DirectoryChange::To(path.to_owned())
    }

    #[test]
    fn a_skill_script_that_a_line_only_runs_is_not_protected() {
        let Fixture {
            _temp,
            base,
            workspace,
            protected,
            ..
        } = fixture();
        let skill = base.join("home/.claude/skills/notes");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
        let workspace = workspace.with_read_only([skill.clone()]);
        let script = skill.join("scripts/run.sh").display().to_string();
        let folder = skill.display().to_string();
        // (command line, whether running the script is still asked about as protected)
        let cases = [
            (script.clone(), false),
            (format!("{script} --since v1 | head -5"), false),
            (format!("sh {script} && python3 {script}"), false),
            (format!("{script} > {script}"), true),
            (format!("cp /tmp/evil {script} && {script}"), true),
            (format!("mv /tmp/run.sh {folder}/scripts/ ; {script}"), true),
            (format!("cat {script}; {script} $(rm -rf x)"), true),
            (format!("{folder}/scripts/missing.sh"), true),
            (format!("cd {folder} && {script}"), true),
        ];
        for (command, expected) in cases {
            let args = serde_json::json!({ "command": command });
            let check = PathCheck::new(&workspace, &protected, &args);
            // What the shell tool's `paths_written` gives the check for this command.
            let words = written_words(&command);
            let asked = words.iter().any(|word| check.protected(word).is_some());
            assert_eq!(asked, expected, "{command}: {words:?}");
        }
    }
}
