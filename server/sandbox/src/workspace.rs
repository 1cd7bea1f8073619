//! The workspace sandbox: every path a tool touches resolves against the workspace roots, and
//! anything that lands outside them — through `..`, an absolute path or a symlink — is refused
//! with a message the model can act on. Extra directories the user configured are allowed too.
//! Read-only directories (the folders of the skills a session loaded) can be read through
//! `resolve_for_reading` but never written: `resolve`, which every writing path goes through,
//! refuses them like any other outside path.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused. The message is written for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "`{requested}` is outside the workspace ({roots}). Tools can only read and write inside \
         the workspace; use a path inside it, or ask the user to add the directory to \
         `extraDirectories` in the settings"
    )]
    Outside { requested: String, roots: String },
    #[error(
        "`{requested}` is in a read-only folder ({folder}): it can be read, but not written, \
         and commands cannot run with it as their working directory"
    )]
    ReadOnly { requested: String, folder: String },
    #[error("`{requested}` is not a usable path: {reason}")]
    Invalid { requested: String, reason: String },
}

/// The folders the agent may work in. Roots are stored canonical (symlinks resolved), so a
/// comparison with a canonical path is a plain prefix check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    roots: Vec<PathBuf>,
    extra: Vec<PathBuf>,
    /// Folders the reading tools may read and nothing may write (skills' folders).
    read_only: Vec<PathBuf>,
}

impl Workspace {
    /// A workspace of `roots` (the first is where relative paths start) and `extra` directories
    /// the user allowed. Roots that don't exist are kept as given.
    pub fn new(roots: Vec<PathBuf>, extra: Vec<PathBuf>) -> Self {
        let canonical = |path: PathBuf| std::fs::canonicalize(&path).unwrap_or(path);
        Workspace {
            roots: roots.into_iter().map(canonical).collect(),
            extra: extra.into_iter().map(canonical).collect(),
            read_only: Vec::new(),
        }
    }

    /// This workspace plus folders that may be read but not written (a skill's folder, which
    /// may lie outside the workspace). A folder that does not exist is left out.
    pub fn with_read_only(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Workspace {
        for dir in dirs {
            if let Ok(canonical) = std::fs::canonicalize(&dir) {
                if !self.read_only.contains(&canonical) {
                    self.read_only.push(canonical);
                }
            }
        }
        self
    }

    /// The read-only folders (see `with_read_only`).
    pub fn read_only(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// This workspace plus one more directory the tools may use (a saved session's folder of
    /// tool outputs, which compression's notes point the model at).
    pub fn with_extra(&self, dir: PathBuf) -> Workspace {
        let mut extra = self.extra.clone();
        extra.push(dir);
        Workspace {
            roots: self.roots.clone(),
            extra,
            read_only: self.read_only.clone(),
        }
    }

    /// The extra directories (`extraDirectories`), canonical.
    pub fn extra(&self) -> &[PathBuf] {
        &self.extra
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The root relative paths are resolved against.
    pub fn primary_root(&self) -> Option<&Path> {
        self.roots.first().map(PathBuf::as_path)
    }

    /// Resolves `requested` (relative to the primary root, or absolute) to a canonical path
    /// inside the workspace. The path need not exist (a file about to be written): its nearest
    /// existing ancestor is canonicalised, so a symlinked directory on the way is followed and
    /// checked too.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf, SandboxError> {
        self.resolve_in(requested, false)
    }

    /// `resolve` for a path that is only read: a read-only folder's files are accepted too.
    /// Every tool that only reads (`read_file`, `list_directory`, `grep`…) resolves this way;
    /// anything that writes, or runs a command in a folder, uses `resolve`.
    pub fn resolve_for_reading(&self, requested: &str) -> Result<PathBuf, SandboxError> {
        self.resolve_in(requested, true)
    }

    fn resolve_in(&self, requested: &str, reading: bool) -> Result<PathBuf, SandboxError> {
        let invalid = |reason: &str| SandboxError::Invalid {
            requested: requested.to_owned(),
            reason: reason.to_owned(),
        };
        if requested.trim().is_empty() {
            return Err(invalid("the path is empty"));
        }
        if requested.contains('\0') {
            return Err(invalid("it contains a NUL character"));
        }
        let path = Path::new(requested);
        let joined = if path.is_absolute() {
            path.to_path_buf()
        } else {
            let Some(root) = self.primary_root() else {
                return Err(invalid(
                    "there is no workspace folder to resolve it against",
                ));
            };
            root.join(path)
        };
        let normal = normalize(&joined);
        let resolved = canonicalize_existing_prefix(&normal).map_err(|_| {
            invalid("it is, or goes through, a symbolic link whose target does not exist")
        })?;
        if self.contains(&resolved) || (reading && self.readable(&resolved)) {
            Ok(resolved)
        } else if let Some(folder) = self.read_only.iter().find(|dir| resolved.starts_with(dir)) {
            Err(SandboxError::ReadOnly {
                requested: requested.to_owned(),
                folder: folder.display().to_string(),
            })
        } else {
            Err(SandboxError::Outside {
                requested: requested.to_owned(),
                roots: self
                    .roots
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }

    /// Whether a canonical path lies in a root or an extra directory.
    pub fn contains(&self, canonical: &Path) -> bool {
        self.roots
            .iter()
            .chain(&self.extra)
            .any(|dir| canonical.starts_with(dir))
    }

    /// Whether a canonical path may be read: `contains`, or in a read-only folder.
    pub fn readable(&self, canonical: &Path) -> bool {
        self.contains(canonical) || self.read_only.iter().any(|dir| canonical.starts_with(dir))
    }

    /// How a path is shown to the model: relative to the primary root when inside it.
    pub fn display(&self, path: &Path) -> String {
        for root in &self.roots {
            if let Ok(relative) = path.strip_prefix(root) {
                let shown = relative.to_string_lossy().replace('\\', "/");
                return if shown.is_empty() {
                    ".".to_owned()
                } else {
                    shown
                };
            }
        }
        path.display().to_string()
    }
}

/// Removes `.` and resolves `..` lexically (never above the filesystem root).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalises the longest existing prefix of `path` and appends the rest. A dangling
/// symlink on the way is an error (its path): writing through it would create its target,
/// wherever that is.
pub fn canonicalize_existing_prefix(path: &Path) -> Result<PathBuf, PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(&existing) {
            let mut out = canonical;
            out.extend(rest.iter().rev());
            return Ok(out);
        }
        if std::fs::symlink_metadata(&existing)
            .is_ok_and(|metadata| metadata.file_type().is_symlink())
        {
            return Err(existing);
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return Ok(path.to_path_buf()),
        }
    }
}

/// How many symbolic links [`physical`] follows in one path, as Linux's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// Where a program that opens `path` (absolute) lands: each component is taken in turn and a
/// symbolic link is followed where it is met, so `link/..` is the parent of the link's target,
/// as the kernel reads it, not the folder holding the link (which is what lexical
/// normalisation gives, and what `bash`'s own `cd` does). A dangling link leads to where its
/// target would be created; from the first component that does not exist on, the rest is
/// applied as written. `None` past [`MAX_LINKS`] links (the kernel's `ELOOP`: nothing opens).
pub(crate) fn physical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut pending = VecDeque::new();
    queue(&mut pending, &mut out, path);
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&name);
        match std::fs::symlink_metadata(&next) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                // A relative target starts in the link's folder, `out`; an absolute one
                // starts over from its root.
                queue(&mut pending, &mut out, &std::fs::read_link(&next).ok()?);
            }
            _ => out = next,
        }
    }
    Some(out)
}

/// Puts `path`'s components at the front of `pending` (names and `..`; `.` dropped); a root
/// (or a Windows prefix) in it restarts `out` there.
fn queue(pending: &mut VecDeque<OsString>, out: &mut PathBuf, path: &Path) {
    let mut names = Vec::new();
    let mut after_prefix = false;
    for component in path.components() {
        match component {
            Component::Prefix(_) => {
                *out = PathBuf::from(component.as_os_str());
                names.clear();
                after_prefix = true;
                continue;
            }
            Component::RootDir => {
                // `\\x` on Windows keeps the drive `out` is on.
                if !after_prefix {
                    let prefix = out
                        .components()
                        .next()
                        .filter(|first| matches!(first, Component::Prefix(_)));
                    *out =
                        prefix.map_or_else(PathBuf::new, |first| PathBuf::from(first.as_os_str()));
                }
                out.push(component.as_os_str());
                names.clear();
            }
            Component::CurDir => {}
            Component::ParentDir | Component::Normal(_) => {
                names.push(component.as_os_str().to_owned());
            }
        }
        after_prefix = false;
    }
    for name in names.into_iter().rev() {
        pending.push_front(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _temp: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
        workspace: Workspace,
    }

    fn fixture() -> Fixture {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let root = base.join("project");
        let outside = base.join("secrets");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(outside.join("key.txt"), "").unwrap();
        let workspace = Workspace::new(vec![root.clone()], Vec::new());
        Fixture {
            _temp: temp,
            root,
            outside,
            workspace,
        }
    }

    #[test]
    fn paths_inside_resolve_whether_or_not_they_exist() {
        let f = fixture();
        assert_eq!(
            f.workspace.resolve("src/lib.rs").unwrap(),
            f.root.join("src/lib.rs")
        );
        assert_eq!(
            f.workspace.resolve("./src/../src/new.rs").unwrap(),
            f.root.join("src/new.rs")
        );
        assert_eq!(
            f.workspace.resolve("a/b/c.txt").unwrap(),
            f.root.join("a/b/c.txt")
        );
        let absolute = f.root.join("src/lib.rs");
        assert_eq!(
            f.workspace.resolve(absolute.to_str().unwrap()).unwrap(),
            absolute
        );
        assert_eq!(
            f.workspace.display(&f.root.join("src/lib.rs")),
            "src/lib.rs"
        );
        assert_eq!(f.workspace.display(&f.root), ".");
    }

    #[test]
    fn escapes_are_refused() {
        let f = fixture();
        let outside_key = f.outside.join("key.txt");
        for requested in [
            "../secrets/key.txt",
            "src/../../secrets/key.txt",
            outside_key.to_str().unwrap(),
            "/etc/passwd",
        ] {
            let error = f.workspace.resolve(requested).unwrap_err();
            assert!(
                matches!(error, SandboxError::Outside { .. }),
                "{requested}: {error}"
            );
            assert!(
                error.to_string().contains("is outside the workspace"),
                "{error}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_pointing_outside_are_refused() {
        let f = fixture();
        std::os::unix::fs::symlink(f.outside.join("key.txt"), f.root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&f.outside, f.root.join("linked_dir")).unwrap();
        for requested in ["link.txt", "linked_dir/key.txt", "linked_dir/new.txt"] {
            let error = f.workspace.resolve(requested).unwrap_err();
            assert!(
                matches!(error, SandboxError::Outside { .. }),
                "{requested}: {error}"
            );
        }
        // A dangling link could point anywhere once its target is created.
        std::os::unix::fs::symlink(f.outside.join("new.txt"), f.root.join("dangling.txt")).unwrap();
        let error = f.workspace.resolve("dangling.txt").unwrap_err().to_string();
        assert!(
            error.contains("a symbolic link whose target does not exist"),
            "{error}"
        );
        // A symlink that stays inside is fine.
        std::os::unix::fs::symlink(f.root.join("src"), f.root.join("source")).unwrap();
        assert_eq!(
            f.workspace.resolve("source/lib.rs").unwrap(),
            f.root.join("src/lib.rs")
        );
    }

    #[test]
    fn extra_directories_are_allowed() {
        let f = fixture();
        let workspace = Workspace::new(vec![f.root.clone()], vec![f.outside.clone()]);
        assert_eq!(
            workspace.resolve("../secrets/key.txt").unwrap(),
            f.outside.join("key.txt")
        );
    }

    #[test]
    fn read_only_folders_are_readable_but_never_writable() {
        let f = fixture();
        let skill = f.outside.join("skill");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&f.root, skill.join("back_to_project")).unwrap();
        let workspace =
            Workspace::new(vec![f.root.clone()], Vec::new()).with_read_only([skill.clone()]);
        let skill_file = skill.join("SKILL.md");
        let escape = format!("{}/../key.txt", skill.display());
        // (requested, what reading resolves to, whether writing is refused as read-only)
        let cases: Vec<(String, Result<PathBuf, &str>, &str)> = vec![
            (
                skill_file.display().to_string(),
                Ok(skill_file.clone()),
                "in a read-only folder",
            ),
            (
                "../secrets/skill/new.txt".to_owned(),
                Ok(skill.join("new.txt")),
                "in a read-only folder",
            ),
            (
                escape,
                Err("is outside the workspace"),
                "is outside the workspace",
            ),
            (
                "../secrets/key.txt".to_owned(),
                Err("is outside the workspace"),
                "is outside the workspace",
            ),
        ];
        for (requested, reading, writing) in cases {
            match (workspace.resolve_for_reading(&requested), reading) {
                (Ok(got), Ok(expected)) => assert_eq!(got, expected, "{requested}"),
                (Err(error), Err(expected)) => {
                    assert!(error.to_string().contains(expected), "{requested}: {error}")
                }
                (got, expected) => panic!("{requested}: {got:?}, expected {expected:?}"),
            }
            let error = workspace.resolve(&requested).unwrap_err().to_string();
            assert!(error.contains(writing), "{requested}: {error}");
        }
        // A link inside the read-only folder leads where it leads: back into the workspace
        // that is writable anyway.
        #[cfg(unix)]
        assert_eq!(
            workspace
                .resolve_for_reading(&format!("{}/back_to_project/src/lib.rs", skill.display()))
                .unwrap(),
            f.root.join("src/lib.rs")
        );
        assert_eq!(workspace.read_only(), std::slice::from_ref(&skill));
        assert!(workspace.readable(&skill_file) && !workspace.contains(&skill_file));
        // A folder that does not exist is left out.
        let none = Workspace::new(vec![f.root.clone()], Vec::new())
            .with_read_only([f.outside.join("missing")]);
        assert!(none.read_only().is_empty());
    }

    #[test]
    fn bad_paths_say_why() {
        let f = fixture();
        assert!(f
            .workspace
            .resolve("")
            .unwrap_err()
            .to_string()
            .contains("the path is empty"));
        assert!(f
            .workspace
            .resolve("a\0b")
            .unwrap_err()
            .to_string()
            .contains("NUL"));
        let empty = Workspace::new(Vec::new(), Vec::new());
        assert!(empty
            .resolve("a.txt")
            .unwrap_err()
            .to_string()
            .contains("no workspace folder"));
    }
}
