//! The language servers Tandem starts itself (`tandem ask`, `tandem acp`, and `tandem lsp` for
//! editors that do not forward their diagnostics) so that `edit` and `write_file` tell the model
//! the errors its change added and the `diagnostics` tool can answer: the servers configured in
//! `diagnostics.servers`, then pyright (or basedpyright) for Python, clangd for C and C++,
//! typescript-language-server for TypeScript and JavaScript, rust-analyzer for Rust, gopls for
//! Go, each found when a file of its language is first checked, started once per workspace root
//! and reused until the process ends.
//!
//! Only absolute `PATH` entries outside the file's workspace count, unless the folder is
//! trusted: a server a repository carries (`node_modules/.bin`, a virtualenv, `.` on `PATH`)
//! would be the repository's code running. What the servers say about the text before the edit
//! is kept, so an edit usually costs one round trip, not two.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tandem_agent::diagnostics::{EditProblems, FileProblems, LanguageServers};
use tandem_agent::settings::DiagnosticsSettings;
use tandem_agent::tools::content_hash;
use tandem_lsp::errors_first;
use tandem_lsp_client::{find_program, new_problems, LanguageServer, ServerCommand};

/// What a server's first check may take on top of the settle time: starting and indexing.
const STARTUP: Duration = Duration::from_secs(30);

/// Where a trusted workspace keeps the servers it installs for itself.
const WORKSPACE_BIN_DIRS: &[&str] = &["node_modules/.bin", ".venv/bin", "venv/bin"];

/// The built-in servers a file's extension may be checked by, in order of preference:
/// (program, args, language id).
fn candidates(extension: &str) -> &'static [(&'static str, &'static [&'static str], &'static str)] {
    match extension {
        "py" | "pyi" => &[
            ("pyright-langserver", &["--stdio"], "python"),
            ("basedpyright-langserver", &["--stdio"], "python"),
        ],
        "c" | "h" => &[("clangd", &[], "c")],
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => &[("clangd", &[], "cpp")],
        "ts" | "mts" | "cts" => &[("typescript-language-server", &["--stdio"], "typescript")],
        "tsx" => &[(
            "typescript-language-server",
            &["--stdio"],
            "typescriptreact",
        )],
        "js" | "mjs" | "cjs" => &[("typescript-language-server", &["--stdio"], "javascript")],
        "jsx" => &[(
            "typescript-language-server",
            &["--stdio"],
            "javascriptreact",
        )],
        "rs" => &[("rust-analyzer", &[], "rust")],
        "go" => &[("gopls", &[], "go")],
        _ => &[],
    }
}

/// Where `program` (a name, or a path) is, for a file in `root`: a name on `PATH`; a binary
/// inside the workspace (its `node_modules/.bin`, its virtualenv, a `PATH` entry or a path in
/// it) only when `workspace_binaries` (a trusted folder), since running it runs the
/// repository's code.
fn resolve(program: &str, root: &Path, workspace_binaries: bool) -> Option<PathBuf> {
    let named = Path::new(program);
    if named.components().count() > 1 || named.is_absolute() {
        let path = root.join(named);
        let inside = path.starts_with(root);
        return (path.is_file() && (workspace_binaries || !inside)).then_some(path);
    }
    if workspace_binaries {
        if let Some(found) = WORKSPACE_BIN_DIRS
            .iter()
            .map(|dir| root.join(dir).join(program))
            .find(|candidate| candidate.is_file())
        {
            return Some(found);
        }
    }
    find_program(program, (!workspace_binaries).then_some(root))
}

/// The server to check `path` with: a configured one for its extension, else a built-in one.
fn choose(path: &Path, root: &Path, settings: &DiagnosticsSettings) -> Option<ServerCommand> {
    let extension = path.extension()?.to_str()?;
    let trusted = settings.workspace_binaries;
    let configured = settings.servers.iter().filter_map(|server| {
        if !server.extensions.iter().any(|listed| listed == extension) {
            return None;
        }
        let (program, args) = server.command.split_first()?;
        let language_id = server
            .language_id
            .clone()
            .unwrap_or_else(|| extension.to_owned());
        Some((resolve(program, root, trusted)?, args.to_vec(), language_id))
    });
    let built_in = candidates(extension)
        .iter()
        .filter_map(|(name, args, language)| {
            Some((
                resolve(name, root, trusted)?,
                args.iter().map(|arg| (*arg).to_owned()).collect(),
                (*language).to_owned(),
            ))
        });
    let (program, args, language_id) = configured.chain(built_in).next()?;
    let name = program
        .file_name()
        .map(|name| {
            name.to_string_lossy()
                .trim_end_matches("-langserver")
                .to_owned()
        })
        .unwrap_or_default();
    Some(ServerCommand {
        name,
        program,
        args,
        language_id,
    })
}

/// The workspace a file belongs to for its server: the nearest folder above it that holds
/// `.git`, else its own folder.
fn root_of(path: &Path) -> Option<PathBuf> {
    let parent = path.parent()?;
    let root = parent
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(parent);
    Some(root.to_owned())
}

type Key = (PathBuf, PathBuf);

/// What a server said about one text of a file.
#[derive(Debug, Clone)]
struct Known {
    hash: u64,
    server: String,
    problems: Vec<tandem_lsp_client::Problem>,
}

/// Servers found on `PATH` (or configured), started on demand.
#[derive(Default)]
pub(crate) struct OnPath {
    servers: tokio::sync::Mutex<HashMap<Key, Arc<LanguageServer>>>,
    /// Servers that answered once: later checks wait only the settle time.
    warm: Mutex<HashSet<Key>>,
    /// Servers that would not start or answer: not tried again by this process.
    broken: Mutex<HashSet<Key>>,
    /// Per file, the last text a server checked and its problems.
    known: Mutex<HashMap<PathBuf, Known>>,
}

impl std::fmt::Debug for OnPath {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("OnPath").finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl OnPath {
    async fn server(
        &self,
        path: &Path,
        settings: &DiagnosticsSettings,
    ) -> Option<(Key, Arc<LanguageServer>)> {
        let root = root_of(path)?;
        let command = choose(path, &root, settings)?;
        let key = (command.program.clone(), root.clone());
        if lock(&self.broken).contains(&key) {
            return None;
        }
        let mut servers = self.servers.lock().await;
        if let Some(server) = servers.get(&key) {
            return Some((key, server.clone()));
        }
        match LanguageServer::start(&command, &root).await {
            Ok(server) => {
                let server = Arc::new(server);
                servers.insert(key.clone(), server.clone());
                Some((key, server))
            }
            Err(error) => {
                tracing::warn!("no diagnostics from {}: {error}", command.name);
                lock(&self.broken).insert(key);
                None
            }
        }
    }

    /// The problems of `text`, from what is known or from the server.
    async fn problems_of(
        &self,
        (key, server): &(Key, Arc<LanguageServer>),
        path: &Path,
        text: &str,
        settle: Duration,
    ) -> tandem_lsp_client::Result<Vec<tandem_lsp_client::Problem>> {
        let hash = content_hash(text.as_bytes());
        if let Some(known) = lock(&self.known).get(path) {
            if known.hash == hash && known.server == server.name() {
                return Ok(known.problems.clone());
            }
        }
        let wait = if lock(&self.warm).contains(key) {
            settle
        } else {
            settle + STARTUP
        };
        let checked = server.diagnostics(path, text, wait).await;
        let problems = match checked {
            Ok(problems) => problems,
            Err(error) => {
                if matches!(error, tandem_lsp_client::Error::Stopped(_)) {
                    self.servers.lock().await.remove(key);
                    lock(&self.broken).insert(key.clone());
                }
                return Err(error);
            }
        };
        lock(&self.warm).insert(key.clone());
        lock(&self.known).insert(
            path.to_owned(),
            Known {
                hash,
                server: server.name().to_owned(),
                problems: problems.clone(),
            },
        );
        Ok(problems)
    }

    async fn check(
        &self,
        path: &Path,
        before: Option<&str>,
        after: &str,
        settings: &DiagnosticsSettings,
    ) -> Option<EditProblems> {
        let server = self.server(path, settings).await?;
        let settle = settings.settle();
        let checked = async {
            let before = match before {
                Some(before) => self.problems_of(&server, path, before, settle).await?,
                None => Vec::new(),
            };
            let after = self.problems_of(&server, path, after, settle).await?;
            Ok::<_, tandem_lsp_client::Error>(new_problems(&before, &after))
        };
        match checked.await {
            Ok(added) => Some(EditProblems {
                server: server.1.name().to_owned(),
                added: errors_first(&added)
                    .into_iter()
                    .filter(|problem| settings.warnings || !problem.warning)
                    .collect(),
            }),
            Err(error) => {
                tracing::warn!("no diagnostics for {}: {error}", path.display());
                None
            }
        }
    }

    async fn current(
        &self,
        file: Option<(&Path, &str)>,
        settings: &DiagnosticsSettings,
    ) -> Vec<FileProblems> {
        if let Some((path, text)) = file {
            let Some(server) = self.server(path, settings).await else {
                return Vec::new();
            };
            return match self
                .problems_of(&server, path, text, settings.settle())
                .await
            {
                Ok(problems) => vec![FileProblems {
                    path: path.to_owned(),
                    server: server.1.name().to_owned(),
                    problems: errors_first(&problems),
                }],
                Err(error) => {
                    tracing::warn!("no diagnostics for {}: {error}", path.display());
                    Vec::new()
                }
            };
        }
        let mut files: Vec<FileProblems> = lock(&self.known)
            .iter()
            .map(|(path, known)| FileProblems {
                path: path.clone(),
                server: known.server.clone(),
                problems: errors_first(&known.problems),
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    }
}

impl LanguageServers for OnPath {
    fn edit_problems<'a>(
        &'a self,
        path: &'a Path,
        before: Option<&'a str>,
        after: &'a str,
        settings: &'a DiagnosticsSettings,
    ) -> Pin<Box<dyn Future<Output = Option<EditProblems>> + Send + 'a>> {
        Box::pin(self.check(path, before, after, settings))
    }

    fn problems<'a>(
        &'a self,
        file: Option<(&'a Path, &'a str)>,
        settings: &'a DiagnosticsSettings,
    ) -> Pin<Box<dyn Future<Output = Vec<FileProblems>> + Send + 'a>> {
        Box::pin(self.current(file, settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_by_extension_and_roots_by_git() {
        assert_eq!(candidates("py")[0].0, "pyright-langserver");
        assert_eq!(candidates("cpp")[0].2, "cpp");
        assert!(candidates("txt").is_empty());
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/src")).unwrap();
        assert_eq!(
            root_of(&dir.path().join("repo/src/calc.py")),
            Some(dir.path().join("repo"))
        );
        // Outside any repository a file's root is its folder; the temporary folder may itself
        // sit in one (a checkout's `target/`), whose root is then the answer.
        let enclosing = dir
            .path()
            .ancestors()
            .find(|folder| folder.join(".git").exists());
        assert_eq!(
            root_of(&dir.path().join("loose/calc.py")),
            Some(enclosing.map_or_else(|| dir.path().join("loose"), Path::to_path_buf))
        );
    }

    /// A server the repository carries runs only in a trusted folder; a configured server
    /// comes before the built-in one, and a missing one falls back to it.
    #[test]
    fn workspace_binaries_run_only_in_a_trusted_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let bin = root.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("typescript-language-server"), "").unwrap();
        std::fs::write(root.join("my-server"), "").unwrap();
        let mut settings = DiagnosticsSettings::default();
        let file = root.join("main.ts");
        let chosen = |settings: &DiagnosticsSettings| {
            choose(&file, root, settings).map(|command| (command.program, command.language_id))
        };
        let on_path = chosen(&settings);
        assert!(
            on_path
                .as_ref()
                .is_none_or(|(program, _)| !program.starts_with(root)),
            "{on_path:?}"
        );
        assert!(resolve("./my-server", root, false).is_none());
        settings.workspace_binaries = true;
        assert_eq!(
            chosen(&settings),
            Some((
                bin.join("typescript-language-server"),
                "typescript".to_owned()
            ))
        );
        settings.servers = vec![
            tandem_agent::settings::LanguageServerSettings {
                command: vec!["no-such-server-anywhere".into()],
                extensions: vec!["ts".into()],
                language_id: None,
            },
            tandem_agent::settings::LanguageServerSettings {
                command: vec!["./my-server".into(), "--stdio".into()],
                extensions: vec!["ts".into()],
                language_id: None,
            },
        ];
        let command = choose(&file, root, &settings).unwrap();
        assert_eq!(
            (command.program, command.args, command.language_id),
            (
                root.join("./my-server"),
                vec!["--stdio".to_owned()],
                "ts".to_owned()
            )
        );
    }
}
