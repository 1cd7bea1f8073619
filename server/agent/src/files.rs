//! Creating and writing files without following symbolic links. The sandbox checks a path
//! (`Workspace::resolve` follows every link and returns the canonical path), and then the path is
//! opened: if a link is swapped into it in between, a plain `open` would follow it out of the
//! workspace. On unix these functions walk the path one directory at a time from `/` with
//! `openat(O_NOFOLLOW)` (and `mkdirat` for missing directories), so a path that contains a
//! symbolic link is refused rather than followed, whenever the link appeared. Callers pass
//! canonical paths, which contain no links. Elsewhere they fall back to the standard library.

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
        let (parent, name) = parent_fd(dir, Some(mode))?;
        match mkdirat(&parent, name, Mode::from_bits_truncate(mode as _)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(error) => return Err(error.into()),
        }
        let directory = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        match openat(&parent, name, directory, Mode::empty()) {
            Ok(_) => Ok(()),
            Err(Errno::ELOOP | Errno::ENOTDIR) => Err(refused(dir)),
            Err(error) => Err(error.into()),
        }
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
