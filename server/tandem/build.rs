//! Build facts for `tandem --version`: the commit the binary was built from and the target it was
//! built for. The commit is `TANDEM_COMMIT` when set (a build from a source archive, which has no
//! Git history, can name its commit that way), else what `git` says of the checkout, else
//! "unknown commit". Cargo reruns this when the checked-out commit changes, so a new commit does
//! not leave an old hash in the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TANDEM_COMMIT");
    let commit = match std::env::var("TANDEM_COMMIT") {
        Ok(commit) if !commit.trim().is_empty() => commit.trim().to_owned(),
        _ => git_commit().unwrap_or_else(|| "unknown commit".to_owned()),
    };
    println!("cargo:rustc-env=TANDEM_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown target".to_owned());
    println!("cargo:rustc-env=TANDEM_TARGET={target}");
}

/// The checkout's commit as `<short hash> <commit date>`, when this is built from a Git checkout.
fn git_commit() -> Option<String> {
    let described = git(&["log", "-1", "--format=%h %cs", "--abbrev=9"])?;
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        // A worktree has its own HEAD but keeps the branches in the repository's common folder.
        let common_dir = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .unwrap_or_else(|| git_dir.clone());
        watch_head(Path::new(&git_dir), Path::new(&common_dir));
    }
    Some(described)
}

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_owned())
}

/// Tells Cargo which files move when the commit does: HEAD, the branch it points at, and the
/// packed refs (where a branch's ref can live instead of its own file).
fn watch_head(git_dir: &Path, common_dir: &Path) {
    let head = git_dir.join("HEAD");
    let mut watched: Vec<PathBuf> = vec![head.clone(), common_dir.join("packed-refs")];
    if let Ok(text) = std::fs::read_to_string(&head) {
        if let Some(reference) = text.trim().strip_prefix("ref: ") {
            watched.push(common_dir.join(reference));
        }
    }
    for path in watched.iter().filter(|path| path.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
