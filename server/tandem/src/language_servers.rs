//! The language servers `tandem ask` starts so that `edit` and `write_file` tell the model the
//! errors its change added: pyright (or basedpyright) for Python, clangd for C and C++,
//! typescript-language-server for TypeScript and JavaScript, gopls for Go, each found on `PATH`
//! when a file of its language is first edited, started once per workspace root and reused.
//!
//! Only absolute `PATH` entries outside the file's workspace count: a server a repository
//! carries (`node_modules/.bin`, a virtualenv, `.` on `PATH`) would be the repository's code
//! running, which only a trusted folder may allow. What the servers say about the text before
//! the edit is kept, so an edit usually costs one round trip, not two.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tandem_agent::diagnostics::{EditProblems, LanguageServers, Problem};
use tandem_agent::tools::content_hash;
use tandem_lsp_client::{find_program, new_problems, LanguageServer, ServerCommand, Severity};

/// How long an edit's result waits for a server's diagnostics (a cold start included).
const SETTLE: Duration = Duration::from_secs(20);

/// The servers a file's extension may be checked by, in order of preference: (program, args,
/// language id).
fn candidates(path: &Path) -> &'static [(&'static str, &'static [&'static str], &'static str)] {
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or_default();
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
        "go" => &[("gopls", &[], "go")],
        _ => &[],
    }
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

/// Servers found on `PATH`, started on demand.
#[derive(Default)]
pub(crate) struct OnPath {
    servers: tokio::sync::Mutex<HashMap<Key, Arc<LanguageServer>>>,
    /// Servers that would not start or answer: not tried again by this process.
    broken: Mutex<HashSet<Key>>,
    /// Per file, the last text a server checked and its problems.
    known: Mutex<HashMap<PathBuf, (u64, Vec<tandem_lsp_client::Problem>)>>,
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
    async fn server(&self, path: &Path) -> Option<(Key, Arc<LanguageServer>)> {
        let root = root_of(path)?;
        let (program, args, language_id) =
            candidates(path).iter().find_map(|(name, args, language)| {
                Some((find_program(name, Some(&root))?, args, language))
            })?;
        let key = (program.clone(), root.clone());
        if lock(&self.broken).contains(&key) {
            return None;
        }
        let mut servers = self.servers.lock().await;
        if let Some(server) = servers.get(&key) {
            return Some((key, server.clone()));
        }
        let command = ServerCommand {
            name: program
                .file_name()
                .map(|name| {
                    name.to_string_lossy()
                        .trim_end_matches("-langserver")
                        .to_owned()
                })
                .unwrap_or_default(),
            program,
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            language_id: (*language_id).to_owned(),
        };
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
    async fn problems(
        &self,
        server: &LanguageServer,
        path: &Path,
        text: &str,
    ) -> tandem_lsp_client::Result<Vec<tandem_lsp_client::Problem>> {
        let hash = content_hash(text.as_bytes());
        if let Some((known, problems)) = lock(&self.known).get(path) {
            if *known == hash {
                return Ok(problems.clone());
            }
        }
        let problems = server.diagnostics(path, text, SETTLE).await?;
        lock(&self.known).insert(path.to_owned(), (hash, problems.clone()));
        Ok(problems)
    }

    async fn check(
        &self,
        path: &Path,
        before: Option<&str>,
        after: &str,
        warnings: bool,
    ) -> Option<EditProblems> {
        let (key, server) = self.server(path).await?;
        let shown = |problem: &tandem_lsp_client::Problem| {
            problem.severity == Severity::Error
                || (warnings && problem.severity == Severity::Warning)
        };
        let checked = async {
            let before = match before {
                Some(before) => self.problems(&server, path, before).await?,
                None => Vec::new(),
            };
            let after = self.problems(&server, path, after).await?;
            let added = new_problems(&before, &after);
            Ok::<_, tandem_lsp_client::Error>(added.into_iter().filter(shown).collect::<Vec<_>>())
        };
        match checked.await {
            Ok(added) => Some(EditProblems {
                server: server.name().to_owned(),
                added: added
                    .into_iter()
                    .map(|problem| Problem {
                        warning: problem.severity == Severity::Warning,
                        line: problem.line,
                        column: problem.column,
                        source: problem.source,
                        message: problem.message,
                    })
                    .collect(),
            }),
            Err(error) => {
                tracing::warn!("no diagnostics for {}: {error}", path.display());
                if matches!(error, tandem_lsp_client::Error::Stopped(_)) {
                    self.servers.lock().await.remove(&key);
                    lock(&self.broken).insert(key);
                }
                None
            }
        }
    }
}

impl LanguageServers for OnPath {
    fn edit_problems<'a>(
        &'a self,
        path: &'a Path,
        before: Option<&'a str>,
        after: &'a str,
        warnings: bool,
    ) -> Pin<Box<dyn Future<Output = Option<EditProblems>> + Send + 'a>> {
        Box::pin(self.check(path, before, after, warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_by_extension_and_roots_by_git() {
        assert_eq!(
            candidates(Path::new("a/calc.py"))[0].0,
            "pyright-langserver"
        );
        assert_eq!(candidates(Path::new("main.cpp"))[0].2, "cpp");
        assert!(candidates(Path::new("notes.txt")).is_empty());
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/src")).unwrap();
        assert_eq!(
            root_of(&dir.path().join("repo/src/calc.py")),
            Some(dir.path().join("repo"))
        );
        assert_eq!(
            root_of(&dir.path().join("loose/calc.py")),
            Some(dir.path().join("loose"))
        );
    }
}
