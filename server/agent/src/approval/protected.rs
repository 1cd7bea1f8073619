//! Protected paths: files whose contents are code or policy that something runs or obeys
//! without asking — git's configuration and hooks (`core.fsmonitor`, `diff.external` and hooks
//! run on the next `git status`), Tandem's own settings (which choose the approval mode), other
//! editors' and agents' project settings, tasks and hooks, direnv and exrc files, and dotfiles
//! in the home directory. Writing one is how an allowed harmless command becomes an arbitrary
//! one, so every write to them is asked about, whatever the mode and the allow rules.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::workspace::{canonicalize_existing_prefix, normalize, Workspace};

/// Directory names that protect everything below them, with the reason shown to the user.
const DIRECTORIES: &[(&str, &str)] = &[
    (
        ".git",
        "git runs the programs its configuration and hooks name",
    ),
    (
        ".tandem",
        "Tandem's project settings decide what runs without asking",
    ),
    (".githooks", "it holds git hooks, which git runs"),
    (".husky", "it holds git hooks, which git runs"),
    (
        ".vscode",
        "VS Code runs the tasks and tools its settings name",
    ),
    (".idea", "JetBrains IDEs run the configurations stored here"),
    (
        ".zed",
        "Zed's project settings name language servers and tasks to run",
    ),
    (
        ".helix",
        "Helix's project settings name language servers to run",
    ),
    (".nvim", "Neovim may run project configuration from here"),
    (".devcontainer", "dev containers run the commands it names"),
    (".claude", "another agent's settings and hooks live here"),
    (".gemini", "another agent's settings and hooks live here"),
    (".codex", "another agent's settings live here"),
    (".cursor", "another agent's settings and rules live here"),
    (".continue", "another agent's settings live here"),
];

/// File names that are protected wherever they are.
const FILES: &[(&str, &str)] = &[
    (".envrc", "direnv runs it when you enter the directory"),
    (".exrc", "Vim and Neovim may run it when they start here"),
    (".nvimrc", "Neovim may run it when it starts here"),
    (".nvim.lua", "Neovim may run it when it starts here"),
    (
        ".dir-locals.el",
        "Emacs evaluates it when it opens files here",
    ),
    (
        ".dir-locals-2.el",
        "Emacs evaluates it when it opens files here",
    ),
    (
        ".pre-commit-config.yaml",
        "pre-commit runs the hooks it names",
    ),
    ("lefthook.yml", "lefthook runs the git hooks it names"),
    (".lefthook.yml", "lefthook runs the git hooks it names"),
    (".mcp.json", "agents start the MCP servers it names"),
    (".gitmodules", "git fetches and checks out what it names"),
];

/// Whether `name` is one of the protected folder names (`.git`, `.vscode`, …).
pub fn is_protected_folder_name(name: &str) -> bool {
    let name = name.to_lowercase();
    DIRECTORIES.iter().any(|(dir, _)| *dir == name)
}

/// Where protection applies beyond the names above.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    /// The user's home directory: its dotfiles and dot-directories (`~/.bashrc`, `~/.ssh`,
    /// `~/.config`) are protected.
    pub home: Option<PathBuf>,
    /// Tandem's user settings folder (`~/.config/tandem`, or `TANDEM_CONFIG_DIR`).
    pub user_config: Option<PathBuf>,
}

impl ProtectedPaths {
    /// The current user's home and settings folder.
    pub fn for_user() -> Self {
        ProtectedPaths {
            home: dirs::home_dir().map(|home| canonical(&home)),
            user_config: tandem_providers::settings::user_settings_path()
                .and_then(|file| file.parent().map(canonical)),
        }
    }

    /// Why `path` (canonical, as the sandbox resolved it) is protected, or `None`. `roots` are
    /// the workspace roots: names are looked for below the root that holds the path (a project
    /// that itself lives under `~/.vscode/` is not protected whole), and home dotfiles only
    /// outside the roots (a workspace opened on `~/.config/nvim` is the user's to edit).
    pub fn reason(&self, path: &Path, roots: &[PathBuf]) -> Option<String> {
        if let Some(config) = &self.user_config {
            if path.starts_with(config) {
                return Some(format!(
                    "{} is in Tandem's user settings folder, which decides what runs without \
                     asking",
                    path.display()
                ));
            }
        }
        let root = roots
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.components().count());
        if root.is_none() {
            if let Some(home) = &self.home {
                if let Some(Component::Normal(name)) = path
                    .strip_prefix(home)
                    .ok()
                    .and_then(|below| below.components().next())
                {
                    if name.to_string_lossy().starts_with('.') {
                        return Some(format!(
                            "{} is a dotfile in your home directory, where shells, git and \
                             other programs read configuration they act on",
                            path.display()
                        ));
                    }
                }
            }
        }
        let below = root
            .and_then(|root| path.strip_prefix(root).ok())
            .unwrap_or(path);
        let names: Vec<String> = below
            .components()
            .filter_map(|component| match component {
                Component::Normal(name) => Some(name.to_string_lossy().to_lowercase()),
                _ => None,
            })
            .collect();
        let last = names.len().saturating_sub(1);
        for (index, name) in names.iter().enumerate() {
            // Case-insensitive, since `.GIT/config` is `.git/config` on macOS and Windows.
            if let Some((dir, why)) = DIRECTORIES.iter().find(|(dir, _)| name == dir) {
                return Some(format!("it is inside {dir}/: {why}"));
            }
            if index == last {
                if let Some((file, why)) = FILES.iter().find(|(file, _)| name == file) {
                    return Some(format!("{file}: {why}"));
                }
            }
        }
        None
    }
}

/// The paths one call's arguments name, judged against the workspace and the protected paths:
/// relative paths start at the call's `cwd` (resolved in the workspace) or the workspace root,
/// `~/` at the home directory.
pub struct PathCheck<'a> {
    workspace: &'a Workspace,
    protected: &'a ProtectedPaths,
    cwd: Option<PathBuf>,
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
            cwd,
            scripts_run: Vec::new(),
        };
        if let Some(command) = args.get("command").and_then(Value::as_str) {
            check.scripts_run = check.skill_scripts_run(command);
        }
        check
    }

    /// The files of the workspace's read-only folders (skills' folders, which lie in
    /// protected places: `.claude/`, `~/.config/tandem/`) that `command` only runs — as a
    /// command's program, or as the script an interpreter (`sh`, `python3`…) is given. Running
    /// a skill's script is not writing it, so it is asked about as any command is, not in every
    /// mode. Only a plain line qualifies (no redirection, substitution or compound command),
    /// and only when no other word of it names anything in those folders: otherwise every
    /// path is checked as usual.
    fn skill_scripts_run(&self, command: &str) -> Vec<PathBuf> {
        let read_only = self.workspace.read_only();
        if read_only.is_empty() {
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
                let Some(absolute) = word.literal().and_then(|text| self.absolute(text)) else {
                    continue;
                };
                if !in_read_only(&absolute) {
                    continue;
                }
                if index == 0 || (index == 1 && interpreter) {
                    run.push(absolute);
                } else {
                    return Vec::new();
                }
            }
        }
        run.retain(|path| path.is_file());
        run
    }

    /// Where `path` leads, symlinks followed as far as they exist; `None` when that cannot be
    /// known (another user's home, no directory to start from).
    fn absolute(&self, path: &str) -> Option<PathBuf> {
        let joined = if let Some(rest) = path.strip_prefix("~/").or((path == "~").then_some("")) {
            self.protected.home.as_ref()?.join(rest)
        } else if path.starts_with('~') {
            return None;
        } else if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.cwd.as_ref()?.join(path)
        };
        let normal = normalize(&joined);
        Some(canonicalize_existing_prefix(&normal).unwrap_or(normal))
    }

    /// Why writing `path` must be asked about, if it must.
    pub fn protected(&self, path: &str) -> Option<String> {
        let absolute = self.absolute(path)?;
        if self.scripts_run.contains(&absolute) {
            return None;
        }
        self.protected.reason(&absolute, self.workspace.roots())
    }

    /// Whether an allow rule may not let a command reach `path`: it lies outside the workspace
    /// (or cannot be placed), or it is protected. `/dev/null` is fine.
    pub fn out_of_reach(&self, path: &str) -> bool {
        if path == "/dev/null" {
            return false;
        }
        match self.absolute(path) {
            Some(absolute) => {
                !self.workspace.contains(&absolute)
                    || self
                        .protected
                        .reason(&absolute, self.workspace.roots())
                        .is_some()
            }
            None => true,
        }
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_paths_are_placed_from_the_cwd_and_home() {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let root = base.join("w");
        let home = base.join("home");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join(".git"), root.join("src/innocent")).unwrap();
        let workspace = Workspace::new(vec![root.clone()], Vec::new());
        let protected = ProtectedPaths {
            home: Some(home),
            user_config: None,
        };
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

    #[test]
    fn a_skill_script_that_a_line_only_runs_is_not_protected() {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let root = base.join("w");
        let skill = base.join("home/.claude/skills/notes");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
        let workspace = Workspace::new(vec![root], Vec::new()).with_read_only([skill.clone()]);
        let protected = ProtectedPaths {
            home: Some(base.join("home")),
            user_config: None,
        };
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
        ];
        for (command, expected) in cases {
            let args = serde_json::json!({ "command": command });
            let check = PathCheck::new(&workspace, &protected, &args);
            let words = crate::tools::Tool::paths_written(&crate::tools::shell::Shell, &args);
            let asked = words.iter().any(|word| check.protected(word).is_some());
            assert_eq!(asked, expected, "{command}: {words:?}");
        }
        // Without read-only folders nothing changes.
        let plain = Workspace::new(vec![base.join("w")], Vec::new());
        let args = serde_json::json!({ "command": script });
        assert!(PathCheck::new(&plain, &protected, &args)
            .protected(&script)
            .is_some());
    }

    #[test]
    fn code_and_policy_paths_are_protected_and_others_are_not() {
        let protected = ProtectedPaths {
            home: Some("/home/u".into()),
            user_config: Some("/home/u/.config/tandem".into()),
        };
        let cases = [
            ("/w/.git/config", true),
            ("/w/.git/hooks/pre-commit", true),
            ("/w/.GIT/config", true),
            ("/w/vendor/lib/.git/config", true),
            ("/w/.tandem/settings.json", true),
            ("/w/.vscode/tasks.json", true),
            ("/w/.claude/settings.json", true),
            ("/w/sub/.envrc", true),
            ("/w/.pre-commit-config.yaml", true),
            ("/home/u/.bashrc", true),
            ("/home/u/.ssh/authorized_keys", true),
            ("/home/u/.config/tandem/settings.json", true),
            ("/w/src/lib.rs", false),
            ("/w/.gitignore", false),
            ("/w/docs/.git-notes.md", false),
            ("/w/AGENTS.md", false),
            ("/w/.envrc.example", false),
            ("/home/u/src/app/main.rs", false),
            ("/home/u/.vscode/extensions/mine/src/main.ts", false),
            ("/home/u/.config/nvim/init.lua", false),
            ("/home/u/.config/nvim/.git/config", true),
            ("/home/u/.vscode/extensions/mine/.vscode/tasks.json", true),
        ];
        let roots = [
            PathBuf::from("/w"),
            PathBuf::from("/home/u/src/app"),
            PathBuf::from("/home/u/.vscode/extensions/mine"),
            PathBuf::from("/home/u/.config/nvim"),
        ];
        for (path, expected) in cases {
            assert_eq!(
                protected.reason(Path::new(path), &roots).is_some(),
                expected,
                "{path}"
            );
        }
        assert_eq!(
            protected
                .reason(Path::new("/w/.git/config"), &roots)
                .unwrap(),
            "it is inside .git/: git runs the programs its configuration and hooks name"
        );
    }
}
