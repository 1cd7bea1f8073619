//! Protected paths: files whose contents are code or policy that something runs or obeys
//! without asking — git's configuration and hooks (`core.fsmonitor`, `diff.external` and hooks
//! run on the next `git status`), Tandem's own settings (which choose the approval mode), other
//! editors' and agents' project settings, tasks and hooks, direnv and exrc files, and dotfiles
//! in the home directory. Writing one is how an allowed harmless command becomes an arbitrary
//! one, so every write to them is asked about, whatever the mode and the allow rules.
//!
//! The class, beyond the project's own code: configuration that a tool reads by itself from
//! the folder it runs in (no argument names it) and that can name a program for the tool to
//! run — a wrapper, a runner, a hook, a task, a toolchain, a shell for scripts. Writing one turns
//! an allowed command of that tool (`cargo check`, `npm test`, `git status`, opening the folder
//! in an editor) into whatever program it names. The project's code itself (`build.rs`, a test,
//! `package.json`'s scripts) is not in the class: an allowed build or test runs it by design.
//! `paths.rs` places the paths a call names; this module says which of them are protected.

use std::path::{Component, Path, PathBuf};

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
    (
        ".cargo",
        "cargo runs the wrappers, runners and linkers its config.toml names",
    ),
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
    (
        "rust-toolchain",
        "rustup runs the toolchain it names for every cargo and rustc command here",
    ),
    (
        "rust-toolchain.toml",
        "rustup runs the toolchain it names for every cargo and rustc command here",
    ),
    (
        ".npmrc",
        "npm runs scripts with the shell and programs it names",
    ),
    (".yarnrc", "yarn runs the program its yarn-path names"),
    (".yarnrc.yml", "yarn runs the program its yarnPath names"),
    (".pnpmfile.cjs", "pnpm runs it on every install"),
    (
        ".tool-versions",
        "asdf and mise run the tool versions it names, paths included",
    ),
    ("mise.toml", "mise runs the tasks, hooks and tools it names"),
    (
        ".mise.toml",
        "mise runs the tasks, hooks and tools it names",
    ),
    (
        "mise.local.toml",
        "mise runs the tasks, hooks and tools it names",
    ),
    (".bazelrc", "Bazel runs the commands its options name"),
    (".pylintrc", "pylint runs its init-hook"),
    ("pylintrc", "pylint runs its init-hook"),
    (".pdbrc", "pdb runs the commands in it"),
    (".vimrc", "Vim may run it when it starts here (exrc)"),
    ("_vimrc", "Vim may run it when it starts here (exrc)"),
    ("_exrc", "Vim may run it when it starts here (exrc)"),
    (".gvimrc", "gVim may run it when it starts here (exrc)"),
    ("lefthook-local.yml", "lefthook runs the git hooks it names"),
    (
        ".lefthook-local.yml",
        "lefthook runs the git hooks it names",
    ),
    (".overcommit.yml", "overcommit runs the git hooks it names"),
];

/// File name endings that are protected wherever they are.
const SUFFIXES: &[(&str, &str)] = &[(
    ".code-workspace",
    "VS Code runs the tasks a workspace file names, some as soon as the folder opens",
)];

/// Whether an entry named `name` (any case) is protected wherever it is: a protected folder, a
/// protected file, or a protected file name ending. The OS sandbox makes those at a workspace
/// root read-only (`confine`).
pub fn protected_name(name: &str) -> bool {
    let name = name.to_lowercase();
    DIRECTORIES.iter().any(|(dir, _)| name == *dir)
        || FILES.iter().any(|(file, _)| name == *file)
        || SUFFIXES.iter().any(|(suffix, _)| name.ends_with(suffix))
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
                if let Some((suffix, why)) =
                    SUFFIXES.iter().find(|(suffix, _)| name.ends_with(suffix))
                {
                    return Some(format!("a `{suffix}` file: {why}"));
                }
            }
        }
        None
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("/w/.cargo/config.toml", true),
            ("/w/crates/x/.cargo/config", true),
            ("/w/rust-toolchain.toml", true),
            ("/w/app.code-workspace", true),
            ("/w/web/.npmrc", true),
            ("/w/.yarnrc.yml", true),
            ("/w/Cargo.toml", false),
            ("/w/package.json", false),
            ("/w/build.rs", false),
            ("/w/code-workspace.md", false),
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
