//! One language server process: started and initialized for a workspace root, documents kept
//! open in it by path, and the diagnostics it publishes matched to the version of the text they
//! were computed for.
//!
//! A request from the server is answered at once with what a minimal client says
//! (`workspace/configuration`: no settings, so the server's defaults; anything else: `null`),
//! so that a server never waits on us. Diagnostics count for a text when the server published
//! them for its version (servers that echo versions: pyright, clangd), or, from a server that
//! sends none, when they came after the text was sent; a short quiet period then lets a second
//! publish for the same version (a fast syntax pass, then the full analysis) replace the first.
//! From a server that sends no versions the quiet period is longer (at least 500 ms, and as long
//! as the first publish took), since nothing else tells its passes apart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use url::Url;

use crate::framing::{read_message, write_message};
use crate::{Error, Problem, Result, Severity};

/// How long `initialize` and `shutdown` may take.
const REQUEST_WAIT: Duration = Duration::from_secs(60);
/// After the diagnostics of a version arrive, how long a second publish for it may take to
/// replace them.
const QUIET: Duration = Duration::from_millis(150);
/// The least `QUIET` for a server that does not say which version it published for.
const QUIET_UNVERSIONED: Duration = Duration::from_millis(500);

/// How to start a server and which documents it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// The name it is known by in messages (`pyright`).
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The `languageId` its documents are opened with.
    pub language_id: String,
}

/// The latest diagnostics published for one document.
#[derive(Debug, Clone, Default)]
struct Published {
    version: Option<i64>,
    /// Which publish this was, counting every publish of the server.
    sequence: u64,
    problems: Vec<Problem>,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<i64, oneshot::Sender<std::result::Result<Value, String>>>>,
    published: Mutex<HashMap<Url, Published>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running language server.
pub struct LanguageServer {
    name: String,
    language_id: String,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    child: tokio::sync::Mutex<Child>,
    next_id: AtomicI64,
    shared: Arc<Shared>,
    /// Bumped with every publish (its value is the publish's sequence number).
    publishes: watch::Receiver<u64>,
    /// Open documents and the version last sent for each.
    open: tokio::sync::Mutex<HashMap<Url, i64>>,
    reader: JoinHandle<()>,
}

impl LanguageServer {
    /// Starts `command` in `root` and initializes it for that workspace folder.
    pub async fn start(command: &ServerCommand, root: &Path) -> Result<LanguageServer> {
        let root_uri = Url::from_directory_path(root)
            .map_err(|()| Error::NotAFile(root.display().to_string()))?;
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| Error::Start {
                program: command.program.display().to_string(),
                source,
            })?;
        let stopped = || Error::Stopped(command.name.clone());
        let stdin = child.stdin.take().ok_or_else(stopped)?;
        let stdout = child.stdout.take().ok_or_else(stopped)?;
        let shared = Arc::new(Shared::default());
        let (publish_sender, publishes) = watch::channel(0);
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let server = LanguageServer {
            name: command.name.clone(),
            language_id: command.language_id.clone(),
            reader: tokio::spawn(read_loop(
                BufReader::new(stdout),
                shared.clone(),
                publish_sender,
                stdin.clone(),
            )),
            stdin,
            child: tokio::sync::Mutex::new(child),
            next_id: AtomicI64::new(1),
            shared,
            publishes,
            open: tokio::sync::Mutex::default(),
        };
        server
            .request(
                "initialize",
                json!({
                    "processId": std::process::id(),
                    "clientInfo": {"name": "tandem"},
                    "rootUri": root_uri.as_str(),
                    "workspaceFolders": [{"uri": root_uri.as_str(), "name": "workspace"}],
                    "capabilities": {
                        "textDocument": {
                            "synchronization": {"didSave": false},
                            "publishDiagnostics": {"versionSupport": true},
                        },
                        "workspace": {"configuration": true, "workspaceFolders": true},
                    },
                }),
            )
            .await?;
        server.notify("initialized", json!({})).await?;
        Ok(server)
    }

    /// The name it is known by (`pyright`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The problems the server finds in `text` as the content of `path`: the document is opened
    /// (or changed) to that text, and the diagnostics published for it are awaited, up to
    /// `settle`.
    pub async fn diagnostics(
        &self,
        path: &Path,
        text: &str,
        settle: Duration,
    ) -> Result<Vec<Problem>> {
        let uri =
            Url::from_file_path(path).map_err(|()| Error::NotAFile(path.display().to_string()))?;
        let sent_at = Instant::now();
        let deadline = sent_at + settle;
        let sent_after = *self.publishes.borrow();
        let version = {
            let mut open = self.open.lock().await;
            match open.get_mut(&uri) {
                Some(version) => {
                    *version += 1;
                    self.notify(
                        "textDocument/didChange",
                        json!({
                            "textDocument": {"uri": uri.as_str(), "version": *version},
                            "contentChanges": [{"text": text}],
                        }),
                    )
                    .await?;
                    *version
                }
                None => {
                    self.notify(
                        "textDocument/didOpen",
                        json!({"textDocument": {
                            "uri": uri.as_str(),
                            "languageId": self.language_id,
                            "version": 1,
                            "text": text,
                        }}),
                    )
                    .await?;
                    open.insert(uri.clone(), 1);
                    1
                }
            }
        };
        let mut publishes = self.publishes.clone();
        let for_this_text = |published: &Published| match published.version {
            Some(published) => published == version,
            None => published.sequence > sent_after,
        };
        let mut found: Option<Published> = None;
        // How long another publish may take to follow the first one for this text.
        let mut quiet = QUIET;
        loop {
            let latest = lock(&self.shared.published).get(&uri).cloned();
            if let Some(latest) = latest.filter(for_this_text) {
                if found.is_none() && latest.version.is_none() {
                    // An unversioned server (typescript-language-server) publishes a fast
                    // syntax pass, then the full analysis, without saying which is which: the
                    // second may take as long again as the first did.
                    quiet = QUIET_UNVERSIONED.max(sent_at.elapsed());
                }
                found = Some(latest);
            }
            let wait_until = match &found {
                // A later publish for the same text may still come; not past the deadline.
                Some(_) => (Instant::now() + quiet).min(deadline),
                None => deadline,
            };
            match tokio::time::timeout_at(wait_until, publishes.changed()).await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => return Err(Error::Stopped(self.name.clone())),
                Err(_) => break,
            }
        }
        match found {
            Some(published) => Ok(published.problems),
            None => Err(Error::Timeout {
                server: self.name.clone(),
                path: path.display().to_string(),
                after: settle,
            }),
        }
    }

    /// Asks the server to exit, and ends it if it does not.
    pub async fn shutdown(self) {
        let asked = tokio::time::timeout(Duration::from_secs(5), async {
            self.request("shutdown", Value::Null).await?;
            self.notify("exit", Value::Null).await
        })
        .await;
        let mut child = self.child.lock().await;
        if !matches!(asked, Ok(Ok(()))) {
            let _ = child.start_kill();
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        let _ = child.start_kill();
        self.reader.abort();
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        lock(&self.shared.pending).insert(id, sender);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        match tokio::time::timeout(REQUEST_WAIT, receiver).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(message))) => Err(Error::Request {
                server: self.name.clone(),
                method: method.to_owned(),
                message,
            }),
            Ok(Err(_)) | Err(_) => Err(Error::Stopped(self.name.clone())),
        }
    }

    async fn notify(&self, method: &str, params: Value) -> Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    async fn send(&self, message: &Value) -> Result<()> {
        let mut stdin = self.stdin.lock().await;
        write_message(&mut *stdin, message)
            .await
            .map_err(|_| Error::Stopped(self.name.clone()))
    }
}

impl Drop for LanguageServer {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Reads the server's messages until its output ends: answers to our requests go to their
/// waiters, diagnostics are kept, and the server's own requests are answered on `stdin`.
async fn read_loop(
    mut reader: BufReader<tokio::process::ChildStdout>,
    shared: Arc<Shared>,
    publishes: watch::Sender<u64>,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
) {
    let mut sequence = 0;
    while let Ok(Some(message)) = read_message(&mut reader).await {
        let method = message.get("method").and_then(Value::as_str);
        match (message.get("id"), method) {
            (Some(id), None) => {
                let waiter = id.as_i64().and_then(|id| lock(&shared.pending).remove(&id));
                if let Some(waiter) = waiter {
                    let answer = match message.get("error") {
                        Some(error) => Err(error["message"]
                            .as_str()
                            .unwrap_or("unknown error")
                            .to_owned()),
                        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = waiter.send(answer);
                }
            }
            (Some(id), Some(method)) => {
                let result = match method {
                    // No settings: the server's defaults, one `null` per item asked about.
                    "workspace/configuration" => {
                        let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                        Value::Array(vec![Value::Null; items])
                    }
                    _ => Value::Null,
                };
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                let mut stdin = stdin.lock().await;
                if write_message(&mut *stdin, &answer).await.is_err() {
                    break;
                }
            }
            (None, Some("textDocument/publishDiagnostics")) => {
                let params = &message["params"];
                let Some(uri) = params["uri"].as_str().and_then(|uri| Url::parse(uri).ok()) else {
                    continue;
                };
                sequence += 1;
                let problems = params["diagnostics"]
                    .as_array()
                    .map(|diagnostics| diagnostics.iter().filter_map(problem).collect())
                    .unwrap_or_default();
                lock(&shared.published).insert(
                    uri,
                    Published {
                        version: params["version"].as_i64(),
                        sequence,
                        problems,
                    },
                );
                publishes.send_replace(sequence);
            }
            _ => {}
        }
    }
    // The server is gone: whoever waits learns it.
    lock(&shared.pending).clear();
    drop(publishes);
}

/// One LSP `Diagnostic` as a `Problem`.
fn problem(diagnostic: &Value) -> Option<Problem> {
    let start = &diagnostic["range"]["start"];
    let number = |value: &Value| u32::try_from(value.as_u64()?).ok();
    let code = match &diagnostic["code"] {
        Value::String(code) => Some(code.clone()),
        Value::Number(code) => Some(code.to_string()),
        _ => None,
    };
    Some(Problem {
        line: number(&start["line"])?.saturating_add(1),
        column: number(&start["character"])?.saturating_add(1),
        severity: Severity::from_lsp(diagnostic["severity"].as_u64()),
        source: diagnostic["source"].as_str().map(str::to_owned),
        code,
        message: diagnostic["message"].as_str()?.to_owned(),
    })
}
