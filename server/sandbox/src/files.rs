//! Creating and writing files without following symbolic links. The sandbox checks a path
//! (`Workspace::resolve` follows every link and returns the canonical path), and then the path is
//! opened: if a link is swapped into it in between, a plain `open` would follow it out of the
//! workspace. On unix these functions walk the path one directory at a time from `/` with
//! `openat(O_NOFOLLOW)` (and `mkdirat` for missing directories), so a path that contains a
//! symbolic link is refused rather than followed, whenever the link appeared. Callers pass
//! canonical paths, which contain no links. Elsewhere they fall back to the standard library.
//! Files and folders that hold conversation text (saved sessions, transcripts, shell logs, the
//! log) are the user's alone: `0600` and `0700`, and tightened when found wider.

use std::fs::File;
use std::io;
use std::path::Path;

/// How a file is opened for writing. Every mode creates the file when it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Replace the contents.
    Truncate,
    /// Write at the end.
    Append,
    /// Only a new file; an existing one is an error (`AlreadyExists`).
    CreateNew,
}

/// Opens `path` for writing as `how` says, creating it with permissions `mode` (before the
/// umask) when missing. Missing parent directories are created with `dir_mode`.
pub fn open(path: &Path, how: Open, mode: u32, dir_mode: u32) -> io::Result<File> {
    imp::open(path, how, mode, dir_mode)
}

/// Creates `dir` and its missing parents with permissions `mode` (before the umask).
pub fn create_dir_all(dir: &Path, mode: u32) -> io::Result<()> {
    imp::create_dir_all(dir, mode)
}

/// Replaces the contents of `path` with `bytes` (creating it and its parents when missing), in
/// place, so the file keeps its permissions, owner and hard links.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    open(path, Open::Truncate, 0o666, 0o777)?.write_all(bytes)
}

/// Creates `dir` (and its parents) readable by the user alone (`0700` on unix), tightening it
/// if it exists. For Tandem's own state (saved sessions hold the conversation and tool output),
/// which lives outside any workspace, under directories the user may well have linked
/// elsewhere, so links are followed here.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Creates `dir` readable by the user alone (`0700` on unix), tightening it if it exists,
/// without following symbolic links; its missing parents are created with ordinary permissions
/// (`0777` before the umask). For Tandem's own folders inside a workspace (`.tandem/tmp`,
/// `.tandem/transcripts`), which hold conversation text, while their parent `.tandem/` is the
/// project's.
pub fn create_private_subdir(dir: &Path) -> io::Result<()> {
    imp::create_private_subdir(dir)
}

/// Drops the group's and others' permissions of `file` (an open file, so no path is followed)
/// where it is a regular file that has any: a file an earlier version wrote readable by
/// everyone becomes the user's alone when it is opened again. Anything else (a terminal,
/// `/dev/null`, a pipe) is left as it is. Fails where the user cannot change the file's mode
/// (someone else's file): conversation text must not go into it then.
pub fn make_private(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    if file.metadata()?.is_file() {
        tighten(file)?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Drops the group's and others' permissions of an open file or folder that has any.
#[cfg(unix)]
fn tighten(file: &File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = file.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}

/// Options that create a file readable by the user alone (`0600` on unix); add how to open it.
pub fn private_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

#[cfg(unix)]
mod imp {
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io;
    use std::os::fd::OwnedFd;
    use std::path::{Component, Path};

    use nix::errno::Errno;
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::{mkdirat, Mode};

    use super::Open;

    fn refused(path: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} goes through a symbolic link that appeared after the path was checked; \
                 nothing was written",
                path.display()
            ),
        )
    }

    /// The directory holding `path`'s last component, opened without following links (its
    /// missing parts created when `create` is set), and that last component.
    fn parent_fd(path: &Path, create: Option<u32>) -> io::Result<(OwnedFd, &OsStr)> {
        if !path.is_absolute() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not an absolute path", path.display()),
            ));
        }
        let mut names = Vec::new();
        for component in path.components() {
            match component {
                Component::RootDir | Component::CurDir => {}
                Component::Normal(name) => names.push(name),
                Component::ParentDir | Component::Prefix(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{} is not a canonical path", path.display()),
                    ))
                }
            }
        }
        let Some((last, dirs)) = names.split_last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the root directory is not a file",
            ));
        };
        let directory = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        let mut dir = nix::fcntl::open("/", directory, Mode::empty())?;
        for name in dirs {
            dir = match openat(&dir, *name, directory, Mode::empty()) {
                Ok(next) => next,
                Err(Errno::ENOENT) if create.is_some() => {
                    let mode = Mode::from_bits_truncate(create.unwrap_or(0o777) as _);
                    match mkdirat(&dir, *name, mode) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(error) => return Err(error.into()),
                    }
                    openat(&dir, *name, directory, Mode::empty()).map_err(|error| match error {
                        Errno::ELOOP | Errno::ENOTDIR => refused(path),
                        error => error.into(),
                    })?
                }
                Err(Errno::ELOOP | Errno::ENOTDIR) => return Err(refused(path)),
                Err(error) => return Err(error.into()),
            };
        }
        Ok((dir, last))
    }

    pub fn open(path: &Path, how: Open, mode: u32, dir_mode: u32) -> io::Result<File> {
        let (dir, name) = parent_fd(path, Some(dir_mode))?;
        let flags = OFlag::O_WRONLY
            | OFlag::O_CREAT
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | match how {
                Open::Truncate => OFlag::O_TRUNC,
                Open::Append => OFlag::O_APPEND,
                Open::CreateNew => OFlag::O_EXCL,
            };
        match openat(&dir, name, flags, Mode::from_bits_truncate(mode as _)) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::ELOOP) => Err(refused(path)),
            Err(error) => Err(error.into()),
        }
    }

    pub fn create_dir_all(dir: &Path, mode: u32) -> io::Result<()> {
        make_dir(dir, mode, mode).map(drop)
    }

    pub fn create_private_subdir(dir: &Path) -> io::Result<()> {
        super::tighten(&File::from(make_dir(dir, 0o777, 0o700)?))
    }

    /// Creates `dir` with `mode` (its missing parents with `parents_mode`) unless it exists,
    /// and opens it, all without following links.
    fn make_dir(dir: &Path, parents_mode: u32, mode: u32) -> io::Result<OwnedFd> {
        let (parent, name) = parent_fd(dir, Some(parents_mode))?;
        match mkdirat(&parent, name, Mode::from_bits_truncate(mode as _)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(error) => return Err(error.into()),
        }
        let directory = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        openat(&parent, name, directory, Mode::empty()).map_err(|error| match error {
            Errno::ELOOP | Errno::ENOTDIR => refused(dir),
            error => error.into(),
        })
    }
}

#[cfg(not(unix))]
mod imp {
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::path::Path;

    use super::Open;

    pub fn open(path: &Path, how: Open, _mode: u32, _dir_mode: u32) -> io::Result<File> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut options = OpenOptions::new();
        options.write(true);
        match how {
            Open::Truncate => options.create(true).truncate(true),
            Open::Append => options.create(true).append(true),
            Open::CreateNew => options.create_new(true),
        };
        options.open(path)
    }

    pub fn create_dir_all(dir: &Path, _mode: u32) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    pub fn create_private_subdir(dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
}

/// The permission bits of `path` (`0o600`), for the tests that check what is private (the
/// agent's among them, so it is compiled outside this crate's tests too).
#[cfg(unix)]
#[doc(hidden)]
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|metadata| metadata.permissions().mode() & 0o777)
        .unwrap_or_default()
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::{symlink, PermissionsExt};

    use super::*;

    fn base() -> (tempfile::TempDir, std::path::PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(temp.path()).unwrap();
        (temp, base)
    }

    #[test]
    fn writes_create_parents_and_keep_the_file() {
        let (_temp, base) = base();
        let path = base.join("a/b/c.txt");
        write(&path, b"one").unwrap();
        write(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        let mut log = open(&base.join("a/log"), Open::Append, 0o600, 0o700).unwrap();
        std::io::Write::write_all(&mut log, b"x").unwrap();
        let mode = std::fs::metadata(base.join("a/log"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let error = open(&base.join("a/log"), Open::CreateNew, 0o600, 0o700).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
        create_dir_all(&base.join("d/e"), 0o700).unwrap();
        let mode = std::fs::metadata(base.join("d/e"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    /// Issue 35, finding 5: transcripts and shell logs were created readable by everyone. A
    /// private subfolder is `0700` whether it is new or was made wider before, its parents
    /// keep ordinary permissions, and a wider file is tightened when opened again.
    #[test]
    fn private_subfolders_and_files_are_made_and_tightened() {
        let (_temp, base) = base();
        // (folder that exists before, with its mode)
        std::fs::create_dir_all(base.join("w/.tandem")).unwrap();
        std::fs::set_permissions(
            base.join("w/.tandem"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let cases = [
            (None, "w/.tandem/new"),
            (Some(0o755), "w/.tandem/old"),
            (None, "w/.tandem/deeper/still"),
        ];
        for (before, dir) in cases {
            let dir = base.join(dir);
            if let Some(before) = before {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(before)).unwrap();
            }
            create_private_subdir(&dir).unwrap();
            assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        }
        // The project's folder is left as it was.
        assert_eq!(mode(&base.join("w/.tandem")), 0o755);

        // (mode before, after)
        for (before, after) in [
            (0o644, 0o600),
            (0o666, 0o600),
            (0o755, 0o700),
            (0o600, 0o600),
        ] {
            let path = base.join(format!("w/.tandem/new/{before:o}.md"));
            std::fs::write(&path, "earlier\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(before)).unwrap();
            let file = open(&path, Open::Append, 0o600, 0o700).unwrap();
            make_private(&file).unwrap();
            assert_eq!(mode(&path), after, "{before:o}");
        }
        // What is not a regular file is left alone.
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        make_private(&null).unwrap();
        assert_eq!(mode(Path::new("/dev/null")), 0o666);

        // A link where the folder should be is refused, not followed or tightened.
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
        symlink(&outside, base.join("w/.tandem/linked")).unwrap();
        let error = create_private_subdir(&base.join("w/.tandem/linked")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(mode(&outside), 0o755);
    }

    /// The review's suspicion: a symlink swapped in between the sandbox's check and the open
    /// would be followed out of the workspace.
    #[test]
    fn a_symlink_anywhere_in_the_path_is_refused_not_followed() {
        let (_temp, base) = base();
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(base.join("w")).unwrap();
        std::fs::write(outside.join("target.txt"), "secret").unwrap();
        symlink(&outside, base.join("w/dir")).unwrap();
        symlink(outside.join("target.txt"), base.join("w/file.txt")).unwrap();
        for path in [
            "w/dir/new.txt",
            "w/dir/target.txt",
            "w/file.txt",
            "w/dir/sub/new.txt",
        ] {
            let error = write(&base.join(path), b"x").unwrap_err();
            assert_eq!(
                error.kind(),
                std::io::ErrorKind::PermissionDenied,
                "{path}: {error}"
            );
            assert!(error.to_string().contains("symbolic link"), "{error}");
        }
        assert!(create_dir_all(&base.join("w/dir/sub"), 0o700).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.join("target.txt")).unwrap(),
            "secret"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        assert!(write(Path::new("relative.txt"), b"x").is_err());
    }
}
