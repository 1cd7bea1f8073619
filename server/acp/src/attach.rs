//! Attach: a running `tandem lsp` offers its live sessions to local front ends (the terminal
//! chat, `tandem chat --attach`) as ACP over a Unix socket, so that they join the editor's
//! session: same IDE state, same edits through the editor, same approvals.
//!
//! Each server listens on `lsp-<pid>.sock` in the user's runtime directory ([`runtime_dir`]),
//! with `lsp-<pid>.json` beside it saying what it serves ([`Endpoint`]). Front ends find them
//! with [`endpoints`] / [`endpoints_for`] and [`connect`]; the server side is [`Listener`].
//! Only the user may connect: the directory is theirs and not writable by anyone else (0700
//! when Tandem makes it), the socket is 0600 (bound under a temporary name, made 0600, then
//! renamed, so it is never reachable with wider modes). Nothing listens on a network port.
//!
//! The protocol on the socket is `tandem acp`'s, newline-delimited JSON-RPC, served by
//! [`crate::serve`] with `ServeOptions::attach` (see `docs/acp.md`, "Attaching to an editor's
//! session").

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::{debug, info, warn};

/// A running `tandem lsp` that offers its sessions (the JSON file beside its socket).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The Unix socket to connect to.
    pub socket: PathBuf,
    /// The server's process id.
    pub pid: u32,
    /// Its workspace folders, canonical.
    pub roots: Vec<PathBuf>,
    /// When it started listening, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// The editor that runs it: the LSP client's `clientInfo.name`.
    pub editor: Option<String>,
}

/// Why a server cannot listen for attaching front ends.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "there is no runtime directory for the attach socket: set TANDEM_RUNTIME_DIR, \
         XDG_RUNTIME_DIR or TANDEM_STATE_DIR"
    )]
    NoRuntimeDir,
    #[error(
        "the attach socket's directory {} is not safe: {why}; make it the user's own with mode \
         0700, or set TANDEM_RUNTIME_DIR to such a directory",
        path.display()
    )]
    UnsafeDir { path: PathBuf, why: String },
    #[error(
        "the attach socket's path {} is {len} bytes, over the {MAX_SOCKET_PATH} a Unix socket \
         allows; set TANDEM_RUNTIME_DIR to a shorter directory",
        path.display()
    )]
    PathTooLong { path: PathBuf, len: usize },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

pub type Result<T> = std::result::Result<T, AttachError>;

/// The longest socket path: `sun_path` holds 108 bytes with the terminating NUL.
pub const MAX_SOCKET_PATH: usize = 107;

/// Where sockets live: `$TANDEM_RUNTIME_DIR` if set, else `$XDG_RUNTIME_DIR/tandem`, else
/// `<the state dir>/run` (`$TANDEM_STATE_DIR`, else the platform's state directory), else
/// `None`. Created 0700 when listening.
pub fn runtime_dir() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(dir) = set("TANDEM_RUNTIME_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = set("XDG_RUNTIME_DIR") {
        return Some(PathBuf::from(dir).join("tandem"));
    }
    tandem_agent::store::SessionStore::default_state_dir().map(|dir| dir.join("run"))
}

/// The live endpoints of this user, newest first; files of dead servers (pid gone, socket
/// refusing) are skipped and removed.
pub fn endpoints() -> Vec<Endpoint> {
    runtime_dir().map_or_else(Vec::new, |dir| endpoints_in(&dir))
}

/// Those whose roots contain (or equal) `workspace` (canonicalized), newest first.
pub fn endpoints_for(workspace: &Path) -> Vec<Endpoint> {
    runtime_dir().map_or_else(Vec::new, |dir| endpoints_for_in(&dir, workspace))
}

/// [`endpoints_for`] in the runtime directory `dir`.
pub fn endpoints_for_in(dir: &Path, workspace: &Path) -> Vec<Endpoint> {
    let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned());
    endpoints_in(dir)
        .into_iter()
        .filter(|endpoint| serves(endpoint, &workspace))
        .collect()
}

/// Connects to an endpoint's socket.
pub async fn connect(endpoint: &Endpoint) -> io::Result<tokio::net::UnixStream> {
    tokio::net::UnixStream::connect(&endpoint.socket).await
}

/// Whether `workspace` is one of the endpoint's roots or inside one.
fn serves(endpoint: &Endpoint, workspace: &Path) -> bool {
    endpoint
        .roots
        .iter()
        .any(|root| workspace.starts_with(root))
}

/// [`endpoints`] in the runtime directory `dir`.
pub fn endpoints_in(dir: &Path) -> Vec<Endpoint> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("lsp-") && name.ends_with(".json")) {
            continue;
        }
        let Some(endpoint) = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Endpoint>(&bytes).ok())
        else {
            debug!(file = %path.display(), "not an endpoint file; skipped");
            continue;
        };
        match liveness(&endpoint) {
            Liveness::Live => found.push(endpoint),
            Liveness::Dead => {
                info!(
                    pid = endpoint.pid,
                    "removing the attach files of a server that is gone"
                );
                let _ = std::fs::remove_file(&endpoint.socket);
                let _ = std::fs::remove_file(&path);
            }
            Liveness::Unreachable(error) => {
                debug!(socket = %endpoint.socket.display(), "cannot reach the endpoint: {error}");
            }
        }
    }
    found.sort_by_key(|endpoint| std::cmp::Reverse(endpoint.started_ms));
    found
}

enum Liveness {
    Live,
    Dead,
    /// Running, perhaps, but not ours to connect to (another user's, say): left alone.
    Unreachable(io::Error),
}

/// A server is gone when its process is, or when its socket refuses connections (a new process
/// with a reused pid does not listen on it).
fn liveness(endpoint: &Endpoint) -> Liveness {
    let pid = i32::try_from(endpoint.pid).unwrap_or(i32::MAX);
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => {}
        Err(_) => return Liveness::Dead,
    }
    match std::os::unix::net::UnixStream::connect(&endpoint.socket) {
        // The server sees a connection that ends before `initialize`, and serves nothing.
        Ok(_) => Liveness::Live,
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) =>
        {
            Liveness::Dead
        }
        Err(error) => Liveness::Unreachable(error),
    }
}

/// The server side: the socket bound and its endpoint file written; both removed when it is
/// closed or dropped.
pub struct Listener {
    listener: tokio::net::UnixListener,
    endpoint: std::sync::Mutex<Endpoint>,
    file: PathBuf,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Listens in [`runtime_dir`] for this process. Needs a tokio runtime.
    pub fn bind(roots: Vec<PathBuf>, editor: Option<String>) -> Result<Listener> {
        let dir = runtime_dir().ok_or(AttachError::NoRuntimeDir)?;
        Listener::bind_in(&dir, roots, editor)
    }

    /// Listens in `dir` (made 0700 if missing; refused when it is not the user's or others
    /// may write to it) as `lsp-<pid>.sock`, described by `lsp-<pid>.json`.
    pub fn bind_in(dir: &Path, roots: Vec<PathBuf>, editor: Option<String>) -> Result<Listener> {
        private_dir(dir)?;
        let pid = std::process::id();
        let socket = dir.join(format!("lsp-{pid}.sock"));
        let temporary = dir.join(format!(".lsp-{pid}.sock.tmp"));
        for path in [&socket, &temporary] {
            let len = path.as_os_str().len();
            if len > MAX_SOCKET_PATH {
                return Err(AttachError::PathTooLong {
                    path: path.clone(),
                    len,
                });
            }
        }
        let io_error = |what, path: &Path| {
            let path = path.to_owned();
            move |source| AttachError::Io { what, path, source }
        };
        // A file of this pid is an earlier process's (pids are reused): it is gone.
        for path in [&socket, &temporary] {
            match std::fs::remove_file(path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    return Err(io_error("cannot remove the old socket", path)(error));
                }
                _ => {}
            }
        }
        let listener = tokio::net::UnixListener::bind(&temporary)
            .map_err(io_error("cannot listen on", &temporary))?;
        let made_private = std::fs::set_permissions(&temporary, PermissionsExt::from_mode(0o600))
            .and_then(|()| std::fs::rename(&temporary, &socket));
        if let Err(error) = made_private {
            let _ = std::fs::remove_file(&temporary);
            return Err(io_error("cannot make the socket private", &socket)(error));
        }
        let started_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        let endpoint = Endpoint {
            socket,
            pid,
            roots,
            started_ms,
            editor,
        };
        let file = dir.join(format!("lsp-{pid}.json"));
        let listener = Listener {
            listener,
            endpoint: std::sync::Mutex::new(endpoint.clone()),
            file,
        };
        listener.write_file(&endpoint)?;
        info!(socket = %endpoint.socket.display(), "listening for attaching front ends");
        Ok(listener)
    }

    /// The endpoint as its file says it.
    pub fn endpoint(&self) -> Endpoint {
        self.lock().clone()
    }

    /// Says the workspace folders changed (the file is written again).
    pub fn set_roots(&self, roots: Vec<PathBuf>) -> Result<()> {
        let endpoint = {
            let mut endpoint = self.lock();
            endpoint.roots = roots;
            endpoint.clone()
        };
        self.write_file(&endpoint)
    }

    /// The next front end that connects.
    pub async fn accept(&self) -> io::Result<tokio::net::UnixStream> {
        self.listener.accept().await.map(|(stream, _)| stream)
    }

    /// Removes the socket and its file: no one new can find or reach this server (those
    /// connected stay until their connection closes). Done again on drop.
    pub fn close(&self) {
        let socket = self.lock().socket.clone();
        for path in [&socket, &self.file] {
            if let Err(error) = std::fs::remove_file(path) {
                if error.kind() != io::ErrorKind::NotFound {
                    warn!("cannot remove {}: {error}", path.display());
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Endpoint> {
        self.endpoint
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes the endpoint file atomically (a private temporary file, renamed), 0600.
    fn write_file(&self, endpoint: &Endpoint) -> Result<()> {
        use std::io::Write;
        let temporary = self.file.with_extension("json.tmp");
        let io_error = |source| AttachError::Io {
            what: "cannot write the endpoint file",
            path: self.file.clone(),
            source,
        };
        let bytes = serde_json::to_vec_pretty(endpoint).map_err(|error| io_error(error.into()))?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut file| file.write_all(&bytes))
            .and_then(|()| std::fs::rename(&temporary, &self.file));
        written.map_err(|error| {
            let _ = std::fs::remove_file(&temporary);
            io_error(error)
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.close();
    }
}

/// Makes `dir` (0700) if it is missing, and refuses one that is not the user's or that
/// others may write to.
fn private_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| AttachError::Io {
                what: "cannot create",
                path: dir.to_owned(),
                source,
            })?;
        // `mode` applies only to the last component, and through the umask.
        std::fs::set_permissions(dir, PermissionsExt::from_mode(0o700)).map_err(|source| {
            AttachError::Io {
                what: "cannot make private",
                path: dir.to_owned(),
                source,
            }
        })?;
    }
    let metadata = std::fs::metadata(dir).map_err(|source| AttachError::Io {
        what: "cannot read",
        path: dir.to_owned(),
        source,
    })?;
    let unsafe_dir = |why: String| AttachError::UnsafeDir {
        path: dir.to_owned(),
        why,
    };
    if !metadata.is_dir() {
        return Err(unsafe_dir("it is not a directory".to_owned()));
    }
    let uid = nix::unistd::geteuid().as_raw();
    if metadata.uid() != uid {
        return Err(unsafe_dir(format!(
            "it belongs to uid {}, not to this user (uid {uid})",
            metadata.uid()
        )));
    }
    let mode = metadata.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "others may write to it (mode {mode:o})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(dir: &Path, pid: u32, roots: &[&str], started_ms: u64) -> Endpoint {
        Endpoint {
            socket: dir.join(format!("lsp-{pid}.sock")),
            pid,
            roots: roots.iter().map(PathBuf::from).collect(),
            started_ms,
            editor: Some("helix".to_owned()),
        }
    }

    #[tokio::test]
    async fn a_listener_is_found_until_it_closes_and_its_files_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let listener =
            Listener::bind_in(&run, vec![PathBuf::from("/ws")], Some("helix".to_owned())).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().mode() & 0o777;
        assert_eq!(mode(&run), 0o700);
        let found = endpoints_in(&run);
        assert_eq!(found, [listener.endpoint()]);
        assert_eq!(mode(&found[0].socket), 0o600);
        assert_eq!(
            mode(&run.join(format!("lsp-{}.json", std::process::id()))),
            0o600
        );
        assert_eq!(found[0].editor.as_deref(), Some("helix"));
        drop(listener);
        assert!(std::fs::read_dir(&run).unwrap().next().is_none());
        assert!(endpoints_in(&run).is_empty());
    }

    #[test]
    fn files_of_dead_servers_are_skipped_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        // A pid no process has (above the kernel's pid_max), and this process with a socket
        // nobody listens on (a pid reused by a process that is not the server).
        let gone = endpoint(dir.path(), 99_999_999, &["/ws"], 1);
        let refusing = endpoint(dir.path(), std::process::id(), &["/ws"], 2);
        drop(std::os::unix::net::UnixListener::bind(&refusing.socket).unwrap());
        for endpoint in [&gone, &refusing] {
            std::fs::write(
                dir.path().join(format!("lsp-{}.json", endpoint.pid)),
                serde_json::to_vec(endpoint).unwrap(),
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("lsp-1.json"), "not json").unwrap();
        assert!(endpoints_in(dir.path()).is_empty());
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["lsp-1.json"]);
    }

    #[test]
    fn a_workspace_matches_the_roots_that_contain_it() {
        let dir = Path::new("/run");
        let endpoint = endpoint(dir, 1, &["/home/me/project", "/home/me/lib"], 1);
        assert!(serves(&endpoint, Path::new("/home/me/project")));
        assert!(serves(&endpoint, Path::new("/home/me/project/src")));
        assert!(serves(&endpoint, Path::new("/home/me/lib")));
        assert!(!serves(&endpoint, Path::new("/home/me")));
        assert!(!serves(&endpoint, Path::new("/home/me/project-two")));
    }

    #[test]
    fn a_directory_others_may_write_to_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o777)).unwrap();
        let refused = private_dir(dir.path()).unwrap_err();
        assert!(
            matches!(&refused, AttachError::UnsafeDir { why, .. } if why.contains("777")),
            "{refused}"
        );
        std::fs::set_permissions(dir.path(), PermissionsExt::from_mode(0o755)).unwrap();
        private_dir(dir.path()).unwrap();
    }

    #[test]
    fn a_socket_path_too_long_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("d".repeat(100));
        let refused = Listener::bind_in(&deep, Vec::new(), None).unwrap_err();
        assert!(
            matches!(refused, AttachError::PathTooLong { .. }),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("TANDEM_RUNTIME_DIR"),
            "{refused}"
        );
    }
}
