//! Which repository git would use for a command run in a directory, found the way git finds it
//! (from the directory up: a `.git` folder or file, else the directory itself when it is a
//! repository), and whether that repository is one a checkout can smuggle in.
//!
//! A commit can hold any folder but one named `.git`: git refuses that name in a tree, and a
//! `.git` file too. So a repository found through a `.git` entry was made by git (a clone, an
//! init, a worktree, a submodule), and its configuration is the user's. A repository found as
//! the directory itself — a folder holding `HEAD`, `objects/`, `refs/` and a `config` — can be
//! committed by anyone, and its `config` can set `core.fsmonitor`, `core.pager`,
//! `diff.external`, `gpg.program` with `log.showSignature`, and other keys whose programs git
//! runs on `git status`, `git diff`, `git log`. Git's own answer to this is
//! `safe.bareRepository=explicit`, which the shell's environment sets
//! (`tools/shell/environment.rs`); this module lets the approval step refuse an allow rule there
//! too, where a git too old for that setting would still run the configured program.

use std::path::{Path, PathBuf};

/// The repository git would find by itself from `directory`, when it is an embedded one (the
/// directory or an ancestor is a repository whose folder is not named `.git`); `None` when git
/// would find a `.git` folder or file first, or no repository at all.
pub fn embedded(directory: &Path) -> Option<PathBuf> {
    for candidate in directory.ancestors() {
        if std::fs::symlink_metadata(candidate.join(".git")).is_ok() {
            return None;
        }
        if is_repository(candidate) {
            let named_git = candidate
                .file_name()
                .is_some_and(|name| name.eq_ignore_ascii_case(".git"));
            // A command run inside `.git` (a hook's directory) finds the `.git` folder itself.
            return (!named_git).then(|| candidate.to_path_buf());
        }
    }
    None
}

/// Whether git would take `directory` for a repository. Looser than git's own check (which also
/// wants a valid `HEAD` and a `refs/`), so that anything git might use is found.
fn is_repository(directory: &Path) -> bool {
    let exists = |name: &str| std::fs::symlink_metadata(directory.join(name)).is_ok();
    exists("HEAD") && (exists("objects") || exists("commondir"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_committed_as_folders_are_found_and_git_s_own_are_not() {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let make_repository = |dir: &Path| {
            std::fs::create_dir_all(dir.join("objects")).unwrap();
            std::fs::create_dir_all(dir.join("refs")).unwrap();
            std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        };
        // A checkout without `.git` (unpacked from an archive) whose `vendor/lib` is a
        // repository, with a clone below it and a repository inside the clone's `.git`.
        make_repository(&root.join("vendor/lib"));
        std::fs::create_dir_all(root.join("vendor/lib/src")).unwrap();
        make_repository(&root.join("deps/clone/.git"));
        std::fs::create_dir_all(root.join("deps/clone/.git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../vendor/lib\n").unwrap();
        let lib = root.join("vendor/lib");
        let cases = [
            (root.join("vendor/lib"), Some(lib.clone())),
            (root.join("vendor/lib/src"), Some(lib)),
            (root.join("deps/clone"), None),
            (root.join("deps/clone/.git/hooks"), None),
            (root.join("src"), None),
            // A `.git` file is git's making: a worktree or a submodule.
            (root.join("sub"), None),
        ];
        for (directory, expected) in cases {
            assert_eq!(embedded(&directory), expected, "{}", directory.display());
        }
    }
}
