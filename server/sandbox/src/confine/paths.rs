//! Which paths a confined process may write, may only read, and cannot read, found on the disk
//! when it starts (Landlock rules and mounts need paths that exist).
//!
//! Writable: the workspace roots and extra directories, the `.git` folder of a repository a
//! root lies inside, the temp folder, `/dev/shm`, the settings' `writableDirectories`, and with
//! the network the package managers' caches (fetching is why a command gets the network).
//! Read-only inside them: at each root, the protected entries that exist (`approval::protected`'s
//! list, less `.git` itself, which git must write: its `hooks` and `config` instead), with
//! `.tandem` and `.git/hooks` made first when missing, so a command cannot create Tandem's
//! project settings or a hook. Hidden: `DEFAULT_HIDDEN` under the home directory, Tandem's own
//! folders and the settings' `hiddenPaths`.

use std::path::{Path, PathBuf};

use super::{Confinement, Rights, SandboxSettings};
use crate::approval::protected;

/// Secret stores under the home directory, hidden from confined processes: keys, cloud and
/// cluster credentials, tokens of package registries and of other tools.
pub const DEFAULT_HIDDEN: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/gh",
    ".config/hub",
    ".local/share/keyrings",
    ".password-store",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".claude.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
];

/// Package managers' caches, under the home directory: writable when a command has the network.
pub const PACKAGE_CACHES: &[&str] = &[
    ".cargo/registry",
    ".cargo/git",
    ".cargo/.package-cache",
    ".cargo/.package-cache-mutate",
    ".cargo/.global-cache",
    ".npm",
    ".cache/pip",
    ".cache/go-build",
    "go/pkg/mod",
    ".cache/yarn",
    ".m2/repository",
    ".gradle/caches",
];

/// Files cargo locks on every build, even offline: writable always (a lock file holds no code).
const BUILD_LOCKS: &[&str] = &[
    ".cargo/.package-cache",
    ".cargo/.package-cache-mutate",
    ".cargo/.global-cache",
];

/// The protected folders of `approval::protected` that a confined process may write, because
/// the tools it runs must: git writes its objects, refs and index in `.git`.
const WRITABLE_PROTECTED: &[&str] = &[".git"];
/// Inside `.git`, what stays read-only: what git runs (hooks) and what names programs for it
/// to run (config).
const GIT_READ_ONLY: &[&str] = &["hooks", "config", "info"];

/// The confinement of one process that starts now.
pub(super) fn confinement(
    settings: &SandboxSettings,
    workspace: &[PathBuf],
    hidden: &[PathBuf],
    Rights {
        network,
        namespaces,
    }: Rights,
) -> Confinement {
    let home = dirs::home_dir();
    let under_home = |relative: &str| home.as_ref().map(|home| home.join(relative));
    let cargo_home = std::env::var_os("CARGO_HOME").map(PathBuf::from);
    let in_cargo_home = |relative: &str| match (&cargo_home, relative.strip_prefix(".cargo/")) {
        (Some(cargo), Some(below)) => Some(cargo.join(below)),
        _ => under_home(relative),
    };

    let mut writable: Vec<PathBuf> = workspace.to_vec();
    let mut read_only = Vec::new();
    let mut pinned = Vec::new();
    for root in workspace {
        protect_root(root, &mut read_only, &mut pinned);
        if let Some(git) = enclosing_git_dir(root) {
            for name in GIT_READ_ONLY {
                let path = git.join(name);
                if path.exists() {
                    read_only.push(path);
                }
            }
            pinned.push(git.clone());
            writable.push(git);
        }
    }
    writable.push(canonical(&std::env::temp_dir()));
    writable.push(PathBuf::from("/dev/shm"));
    writable.extend(
        settings
            .writable_directories
            .iter()
            .map(|dir| canonical(&expand_home(dir, home.as_deref()))),
    );
    writable.extend(BUILD_LOCKS.iter().filter_map(|lock| in_cargo_home(lock)));
    if network {
        writable.extend(
            PACKAGE_CACHES
                .iter()
                .filter_map(|cache| in_cargo_home(cache)),
        );
    }
    writable.retain(|path| path.exists());
    dedup(&mut writable);

    let mut hidden_paths: Vec<PathBuf> = DEFAULT_HIDDEN
        .iter()
        .filter_map(|relative| in_cargo_home(relative))
        .chain(hidden.iter().cloned())
        .chain(
            settings
                .hidden_paths
                .iter()
                .map(|path| expand_home(path, home.as_deref())),
        )
        .map(|path| canonical(&path))
        // A secret store that holds a writable folder would hide the workspace with it.
        .filter(|path| path.exists() && !writable.iter().any(|dir| dir.starts_with(path)))
        .collect();
    dedup(&mut hidden_paths);
    read_only.retain(|path| !hidden_paths.iter().any(|hidden| path.starts_with(hidden)));
    dedup(&mut read_only);
    dedup(&mut pinned);

    Confinement {
        writable,
        read_only,
        pinned,
        hidden: hidden_paths,
        network,
        namespaces,
    }
}

/// Adds `root`'s protected entries: every protected name at the root that exists, `.tandem`
/// and `.git/hooks` made when missing (empty folders, which git does not show).
fn protect_root(root: &Path, read_only: &mut Vec<PathBuf>, pinned: &mut Vec<PathBuf>) {
    let tandem = root.join(".tandem");
    if !tandem.exists() {
        let _ = std::fs::create_dir(&tandem);
    }
    let git = root.join(".git");
    if git.is_dir() {
        let hooks = git.join("hooks");
        if !hooks.exists() {
            let _ = std::fs::create_dir(&hooks);
        }
        for name in GIT_READ_ONLY {
            let path = git.join(name);
            if path.exists() {
                read_only.push(path);
            }
        }
        pinned.push(git);
    } else if git.exists() {
        // A worktree's or submodule's `.git` file names the repository git uses.
        read_only.push(git);
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if WRITABLE_PROTECTED.contains(&name) {
            continue;
        }
        let path = entry.path();
        if protected::protected_name(name) && !entry.path().is_symlink() {
            read_only.push(path);
        }
    }
}

/// The `.git` folder of the repository `root` lies inside, when that is above the root (a
/// workspace opened on a project's subfolder): git there must write it too.
fn enclosing_git_dir(root: &Path) -> Option<PathBuf> {
    if root.join(".git").exists() {
        return None;
    }
    root.ancestors()
        .skip(1)
        .map(|dir| dir.join(".git"))
        .find(|git| git.exists())
        .filter(|git| git.is_dir())
}

fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(below), Some(home)) => home.join(below),
        _ if path == "~" => home.map_or_else(|| PathBuf::from(path), Path::to_path_buf),
        _ => PathBuf::from(path),
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Sorts shorter paths first (a mount over a folder before those inside it) and drops repeats.
fn dedup(paths: &mut Vec<PathBuf>) {
    paths.sort_by(|a, b| {
        a.components()
            .count()
            .cmp(&b.components().count())
            .then_with(|| a.cmp(b))
    });
    paths.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_s_protected_entries_are_read_only_and_tandem_s_folder_is_made_first() {
        let root = tempfile::tempdir().unwrap();
        let root = canonical(root.path());
        for dir in [".git/objects", ".vscode", "src"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [".git/config", ".envrc", "main.rs", "x.code-workspace"] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let confinement = confinement(
            &SandboxSettings::default(),
            std::slice::from_ref(&root),
            &[],
            Rights {
                network: false,
                namespaces: true,
            },
        );
        let relative: Vec<String> = confinement
            .read_only
            .iter()
            .map(|path| path.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        assert_eq!(
            relative,
            [
                ".envrc",
                ".tandem",
                ".vscode",
                "x.code-workspace",
                ".git/config",
                ".git/hooks"
            ]
        );
        assert_eq!(confinement.pinned, [root.join(".git")]);
        assert!(confinement.writable.contains(&root));
        assert!(root.join(".git/hooks").is_dir());
    }

    #[test]
    fn home_and_workspace_relative_settings() {
        let home = Path::new("/home/u");
        assert_eq!(expand_home("~/x", Some(home)), home.join("x"));
        assert_eq!(expand_home("~", Some(home)), home);
        assert_eq!(expand_home("/abs", Some(home)), Path::new("/abs"));
    }
}
