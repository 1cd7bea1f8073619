//! `McpManager`: the configured MCP servers of one session host, and their lifecycle. `apply`
//! starts what is configured and not running (each in a background task, all at once; the
//! caller never waits), stops what is no longer configured and restarts what changed. A server
//! whose process dies or whose connection drops is marked failed, keeps its tools offered, and
//! is restarted once on its next use (a call, a prompt, a resource read).
//!
//! State lives behind one lock that is never held across an await; every change bumps a
//! counter (`changes`) that waiters and front ends watch. Background tasks hold the manager
//! weakly, so dropping the last `Arc` stops every server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::client::ListChanged;
use super::config::{Endpoint, McpServerSettings};
use super::connect::{self, Catalog, Connection};
use super::error::{seconds, McpError, Result};
use super::names;
use super::types::{McpServerState, McpServerStatus, McpStartContext, McpToolStatus};

/// A request's limit when the settings give none (`timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Starting (connect, initialize, first listing) takes at most this, or `timeout` if shorter,
/// unless the server's `startTimeout` says otherwise.
pub const START_LIMIT: Duration = Duration::from_secs(30);

/// How long a prompt waits for servers still starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartWait {
    /// Until each has started or failed, each within its own start limit (`startTimeout`):
    /// one-shot use, where a tool that is not there now is not there at all.
    UntilStarted,
    /// At most this long (an editor's first prompt; slower servers join later requests).
    AtMost(Duration),
}
/// How long a failure waits to learn how the program ended and what it printed last (it
/// exits right after closing its output, or is still running and the wait is over soon).
pub(super) const EXIT_WAIT: Duration = Duration::from_secs(1);

/// The MCP servers of a session host. Shared (`Arc`); see the module documentation.
pub struct McpManager {
    this: Weak<McpManager>,
    inner: Mutex<Inner>,
    /// The workspace roots, which servers may ask for at any time.
    roots: Arc<RwLock<Vec<PathBuf>>>,
    changes: watch::Sender<u64>,
}

#[derive(Default)]
pub(super) struct Inner {
    servers: BTreeMap<String, Entry>,
    context: McpStartContext,
    generation: u64,
}

/// One configured server.
pub(super) struct Entry {
    pub(super) settings: McpServerSettings,
    /// The workspace root it was started in (a stdio server is restarted when it changes).
    root: Option<PathBuf>,
    /// Bumped at every start: what a task learns about an older start is dropped.
    pub(super) generation: u64,
    /// When the latest start began.
    pub(super) started_at: Instant,
    pub(super) state: McpServerState,
    /// Its connection dropped while it was ready: the next use restarts it, once.
    pub(super) restart_on_use: bool,
    pub(super) warnings: Vec<String>,
    pub(super) catalog: Catalog,
    pub(super) connection: Option<Arc<Connection>>,
    pub(super) task: Option<JoinHandle<()>>,
}

impl Entry {
    /// Whether its tools are offered: ready, or dropped and due for a restart on first use (so
    /// that a call can restart it).
    pub(super) fn offered(&self) -> bool {
        match self.state {
            McpServerState::Ready => true,
            McpServerState::Failed { .. } => self.restart_on_use,
            McpServerState::Starting | McpServerState::Disabled => false,
        }
    }

    /// Takes what runs (the start task, the connection), for stopping.
    fn take_running(&mut self) -> Option<Arc<Connection>> {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.connection.take()
    }
}

impl McpManager {
    /// A manager with no servers; `apply` configures them.
    pub fn new() -> Arc<McpManager> {
        Arc::new_cyclic(|this| McpManager {
            this: this.clone(),
            inner: Mutex::default(),
            roots: Arc::default(),
            changes: watch::Sender::new(0),
        })
    }

    pub(super) fn weak(&self) -> Weak<McpManager> {
        self.this.clone()
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bumped at every change of a server's state or lists: front ends watch it to refresh
    /// what they show (and the session, to know the tool list changed).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub(super) fn changed(&self) {
        self.changes
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Makes the running servers match `servers`: starts every enabled server that is not
    /// running (a new one, one that failed, one whose settings changed), stops those no longer
    /// configured or changed, and tells the others when the workspace roots changed. Returns
    /// at once; starting happens in background tasks (`wait_settled` waits for them), so it
    /// must be called within a Tokio runtime.
    pub fn apply(&self, servers: &BTreeMap<String, McpServerSettings>, context: McpStartContext) {
        let roots_changed = {
            let mut roots = self.roots.write().unwrap_or_else(PoisonError::into_inner);
            let changed = *roots != context.roots;
            *roots = context.roots.clone();
            changed
        };
        let root = context.roots.first().cloned();
        let mut stopped = Vec::new();
        let mut notify = Vec::new();
        {
            let mut inner = self.lock();
            inner.context = context;
            let removed: Vec<String> = inner
                .servers
                .keys()
                .filter(|name| !servers.contains_key(*name))
                .cloned()
                .collect();
            for name in removed {
                if let Some(mut entry) = inner.servers.remove(&name) {
                    tracing::info!(server = %name, "MCP server no longer configured; stopping it");
                    stopped.extend(entry.take_running());
                }
            }
            for (name, settings) in servers {
                if let Some(entry) = inner.servers.get(name) {
                    let stdio = matches!(settings.endpoint(), Ok(Endpoint::Stdio { .. }));
                    let same = entry.settings == *settings && (!stdio || entry.root == root);
                    let running = matches!(
                        entry.state,
                        McpServerState::Starting | McpServerState::Ready | McpServerState::Disabled
                    );
                    if same && (running || entry.restart_on_use) {
                        if roots_changed {
                            notify.extend(entry.connection.clone());
                        }
                        continue;
                    }
                }
                if let Some(mut old) = inner.servers.remove(name) {
                    stopped.extend(old.take_running());
                }
                let entry = Entry {
                    settings: settings.clone(),
                    root: root.clone(),
                    generation: 0,
                    started_at: Instant::now(),
                    state: McpServerState::Disabled,
                    restart_on_use: false,
                    warnings: Vec::new(),
                    catalog: Catalog::default(),
                    connection: None,
                    task: None,
                };
                inner.servers.insert(name.clone(), entry);
                if !settings.disabled {
                    self.start_locked(&mut inner, name);
                }
            }
        }
        for connection in notify {
            tokio::spawn(async move {
                let _ = connection.peer.notify_roots_list_changed().await;
            });
        }
        for connection in stopped {
            tokio::spawn(async move { connection.stop().await });
        }
        self.changed();
    }

    /// Stops and starts `server` again (for a front end's "restart" command).
    pub fn restart(&self, server: &str) -> Result<()> {
        let stopped = {
            let mut inner = self.lock();
            let known = inner.servers.keys().cloned().collect();
            let Some(entry) = inner.servers.get_mut(server) else {
                return Err(McpError::UnknownServer {
                    server: server.to_owned(),
                    known,
                });
            };
            if entry.settings.disabled {
                return Err(McpError::Disabled {
                    server: server.to_owned(),
                });
            }
            let stopped = entry.take_running();
            self.start_locked(&mut inner, server);
            stopped
        };
        if let Some(connection) = stopped {
            tokio::spawn(async move { connection.stop().await });
        }
        self.changed();
        Ok(())
    }

    /// Marks `server` starting under a new generation and starts it in the background.
    pub(super) fn start_locked(&self, inner: &mut Inner, server: &str) {
        inner.generation += 1;
        let generation = inner.generation;
        let context = inner.context.clone();
        let Some(entry) = inner.servers.get_mut(server) else {
            return;
        };
        entry.generation = generation;
        entry.started_at = Instant::now();
        entry.state = McpServerState::Starting;
        entry.restart_on_use = false;
        entry.connection = None;
        let settings = entry.settings.clone();
        let this = self.this.clone();
        let roots = Arc::clone(&self.roots);
        let name = server.to_owned();
        entry.task = Some(tokio::spawn(async move {
            super::start::start(this, name, generation, settings, context, roots).await;
        }));
    }

    /// Whether some server is still starting.
    pub fn starting(&self) -> bool {
        self.lock()
            .servers
            .values()
            .any(|entry| entry.state == McpServerState::Starting)
    }

    /// Waits until no server is starting, or `timeout` passed; `true` when all have settled.
    pub async fn wait_settled(&self, timeout: Duration) -> bool {
        self.wait_started(StartWait::AtMost(timeout)).await
    }

    /// Waits as `wait` says for the servers still starting; `true` when all have settled.
    /// With `UntilStarted` a server is waited for until its start limit from when it began
    /// starting (by then its start has failed, so the wait is never longer than starting).
    pub async fn wait_started(&self, wait: StartWait) -> bool {
        let now = Instant::now();
        let mut changes = self.changes();
        loop {
            // The latest deadline among the servers still starting.
            let deadline = self
                .lock()
                .servers
                .values()
                .filter(|entry| entry.state == McpServerState::Starting)
                .map(|entry| match wait {
                    StartWait::UntilStarted => {
                        entry.started_at + entry.settings.start_limit() + EXIT_WAIT
                    }
                    StartWait::AtMost(timeout) => now + timeout,
                })
                .max();
            let Some(deadline) = deadline else {
                return true;
            };
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return false;
            }
        }
    }

    /// Whether the user trusts `server` (`trust: true`) to run its tools, and read its
    /// resources, without asking. A server not configured is not trusted.
    pub fn trusts(&self, server: &str) -> bool {
        self.lock()
            .servers
            .get(server)
            .is_some_and(|entry| entry.settings.trust)
    }

    /// Every configured server, by name, with its state, tools, prompts and resources.
    pub fn statuses(&self) -> Vec<McpServerStatus> {
        let inner = self.lock();
        let named = tool_names(&inner);
        inner
            .servers
            .iter()
            .map(|(name, entry)| {
                let mut tools: Vec<McpToolStatus> = named
                    .iter()
                    .filter(|(server, _, _)| server == name)
                    .map(|(_, tool, exposed)| McpToolStatus {
                        name: exposed.clone(),
                        original_name: tool.name.to_string(),
                        read_only_hint: tool.annotations.as_ref().and_then(|a| a.read_only_hint),
                        destructive_hint: tool
                            .annotations
                            .as_ref()
                            .and_then(|a| a.destructive_hint),
                    })
                    .collect();
                tools.sort_by(|a, b| a.name.cmp(&b.name));
                let filtered_tools = entry
                    .catalog
                    .tools
                    .iter()
                    .filter(|tool| !allowed(&entry.settings, &tool.name))
                    .map(|tool| tool.name.to_string())
                    .collect();
                let connection = entry.connection.as_ref();
                McpServerStatus {
                    name: name.clone(),
                    state: entry.state.clone(),
                    transport: connection.map(|c| c.transport).or_else(|| {
                        entry
                            .settings
                            .endpoint()
                            .ok()
                            .map(|endpoint| match endpoint {
                                Endpoint::Stdio { .. } => super::McpTransport::Stdio,
                                Endpoint::Http { .. } | Endpoint::HttpOrSse { .. } => {
                                    super::McpTransport::Http
                                }
                                Endpoint::Sse { .. } => super::McpTransport::Sse,
                            })
                    }),
                    description: entry.settings.description.clone(),
                    source: entry.settings.source.clone(),
                    trusted: entry.settings.trust,
                    server_info: connection
                        .and_then(|c| c.info.as_ref())
                        .and_then(|info| info.server_info.as_ref())
                        .map(|info| format!("{} {}", info.name, info.version)),
                    tools,
                    filtered_tools,
                    prompts: entry
                        .catalog
                        .prompts
                        .iter()
                        .map(|p| p.name.clone())
                        .collect(),
                    resources: entry.catalog.resources.len(),
                    pid: connection.and_then(|c| c.pid),
                    warnings: entry.warnings.clone(),
                }
            })
            .collect()
    }

    /// Stops every server and waits for their programs to exit (each within a short grace,
    /// then killed). The manager can be configured again with `apply`.
    pub async fn shutdown(&self) {
        let stopped: Vec<Arc<Connection>> = {
            let mut inner = self.lock();
            let stopped = inner
                .servers
                .values_mut()
                .filter_map(Entry::take_running)
                .collect();
            inner.servers.clear();
            stopped
        };
        self.changed();
        futures::future::join_all(stopped.iter().map(|connection| connection.stop())).await;
    }

    /// The connection was lost (the program exited, the stream closed): the server is marked
    /// failed, with what happened, and restarted on its next use.
    pub(super) async fn connection_lost(&self, server: &str, generation: u64) {
        let connection = {
            let mut inner = self.lock();
            let Some(entry) = inner.servers.get_mut(server) else {
                return;
            };
            if entry.generation != generation || entry.state != McpServerState::Ready {
                return;
            }
            entry.state = McpServerState::Failed {
                message: closing(server),
            };
            entry.restart_on_use = true;
            entry.connection.take()
        };
        self.changed();
        let Some(connection) = connection else {
            return;
        };
        let command = self.command(server);
        let (what, stderr) = match &connection.watch {
            Some(watch) => {
                let exit = watch.exit(EXIT_WAIT).await;
                let what = match exit {
                    Some(exit) => format!("stopped: `{command}` {exit}"),
                    None => "stopped: it closed its output".to_owned(),
                };
                (what, Some(watch.stderr()))
            }
            None => ("stopped: the connection closed".to_owned(), None),
        };
        let what = format!("{what}; Tandem starts it again on its next use");
        let message = failure(server, &what, stderr);
        tracing::warn!(server, "{message}");
        {
            let mut inner = self.lock();
            if let Some(entry) = inner.servers.get_mut(server) {
                if entry.generation == generation {
                    entry.state = McpServerState::Failed { message };
                }
            }
        }
        self.changed();
        connection.stop().await;
    }

    /// A request found the connection unusable while the server still counts as ready (a
    /// network server that went away, a connection that closed without the service noticing):
    /// it is marked failed, to be restarted on its next use. The failure message, or `None`
    /// when the server was restarted or stopped meanwhile.
    pub(super) fn connection_failed(
        &self,
        server: &str,
        generation: u64,
        reason: &str,
    ) -> Option<String> {
        let (message, connection) = {
            let mut inner = self.lock();
            let entry = inner.servers.get_mut(server)?;
            if entry.generation != generation || entry.state != McpServerState::Ready {
                return None;
            }
            let stderr = entry
                .connection
                .as_ref()
                .and_then(|connection| connection.watch.as_ref())
                .map(super::process::ProcessWatch::stderr);
            let what = format!("stopped: {reason}; Tandem starts it again on its next use");
            let message = failure(server, &what, stderr);
            entry.state = McpServerState::Failed {
                message: message.clone(),
            };
            entry.restart_on_use = true;
            (message, entry.connection.take())
        };
        tracing::warn!(server, "{message}");
        self.changed();
        if let Some(connection) = connection {
            tokio::spawn(async move { connection.stop().await });
        }
        Some(message)
    }

    fn command(&self, server: &str) -> String {
        let inner = self.lock();
        inner
            .servers
            .get(server)
            .and_then(|entry| entry.settings.command.clone())
            .unwrap_or_default()
    }

    /// The server said a list changed: list it again.
    pub(super) async fn relist(&self, server: &str, generation: u64, list: ListChanged) {
        // A change announced while starting is picked up once it is ready.
        let deadline = Instant::now() + START_LIMIT;
        let mut changes = self.changes();
        let connection = loop {
            let (state, connection) = {
                let inner = self.lock();
                match inner.servers.get(server) {
                    Some(entry) if entry.generation == generation => {
                        (entry.state.clone(), entry.connection.clone())
                    }
                    _ => return,
                }
            };
            match (state, connection) {
                (McpServerState::Ready, Some(connection)) => break connection,
                (McpServerState::Starting, _) => {
                    if tokio::time::timeout_at(deadline, changes.changed())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                _ => return,
            }
        };
        let peer = &connection.peer;
        let described = connect::describe_service_error;
        let listing = async {
            match list {
                ListChanged::Tools => peer
                    .list_all_tools()
                    .await
                    .map(|tools| Box::new(move |c: &mut Catalog| c.tools = tools) as Update)
                    .map_err(|e| described(&e)),
                ListChanged::Prompts => peer
                    .list_all_prompts()
                    .await
                    .map(|prompts| Box::new(move |c: &mut Catalog| c.prompts = prompts) as Update)
                    .map_err(|e| described(&e)),
                ListChanged::Resources => match peer.list_all_resources().await {
                    Ok(resources) => {
                        let templates = peer.list_all_resource_templates().await.ok();
                        Ok(Box::new(move |c: &mut Catalog| {
                            c.resources = resources;
                            if let Some(templates) = templates {
                                c.templates = templates;
                            }
                        }) as Update)
                    }
                    Err(e) => Err(described(&e)),
                },
            }
        };
        let result = tokio::time::timeout(connection.timeout, listing)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {}", seconds(connection.timeout))));
        match result {
            Ok(update) => {
                let mut inner = self.lock();
                if let Some(entry) = inner.servers.get_mut(server) {
                    if entry.generation == generation {
                        update(&mut entry.catalog);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(server, "listing its {list:?} again failed: {error}");
                return;
            }
        }
        tracing::debug!(server, "MCP server's {list:?} list changed");
        self.changed();
    }
}

type Update = Box<dyn FnOnce(&mut Catalog) + Send>;

impl Drop for McpManager {
    /// Every server's program is stopped (`Connection`'s and `Process`'s drops); starts in
    /// progress are abandoned, which stops their programs too.
    fn drop(&mut self) {
        let mut inner = self.lock();
        for entry in inner.servers.values_mut() {
            entry.take_running();
        }
    }
}

/// The failure message of a server whose connection just closed, until the manager learned
/// why.
pub(super) fn closing(server: &str) -> String {
    failure(server, "stopped: the connection closed", None)
}

/// A failure as the user reads it: the server, what happened, and what it printed last.
pub(super) fn failure(server: &str, what: &str, stderr: Option<Vec<String>>) -> String {
    let mut message = format!("MCP server \"{server}\" {what}.");
    match stderr {
        Some(lines) if !lines.is_empty() => {
            message.push_str(" Its last lines on stderr:");
            for line in lines {
                message.push_str("\n    ");
                message.push_str(&line);
            }
        }
        Some(_) => message.push_str(" It printed nothing on stderr."),
        None => {}
    }
    message
}

/// Whether `includeTools`/`excludeTools` let the model see `tool` (exclude wins).
pub(super) fn allowed(settings: &McpServerSettings, tool: &str) -> bool {
    let included =
        settings.include_tools.is_empty() || settings.include_tools.iter().any(|name| name == tool);
    included && !settings.exclude_tools.iter().any(|name| name == tool)
}

/// The offered tools of every server, with the names the model calls them by: (server, tool,
/// name), in the order names were given (by server, then tool).
pub(super) fn tool_names(inner: &Inner) -> Vec<(String, rmcp::model::Tool, String)> {
    let mut offered: Vec<(&str, &rmcp::model::Tool)> = inner
        .servers
        .iter()
        .filter(|(_, entry)| entry.offered())
        .flat_map(|(name, entry)| {
            entry
                .catalog
                .tools
                .iter()
                .filter(|tool| allowed(&entry.settings, &tool.name))
                .map(move |tool| (name.as_str(), tool))
        })
        .collect();
    offered.sort_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
    let pairs: Vec<(&str, &str)> = offered
        .iter()
        .map(|(server, tool)| (*server, tool.name.as_ref()))
        .collect();
    let assigned = names::assign(&pairs);
    offered
        .into_iter()
        .zip(assigned)
        .map(|((server, tool), name)| (server.to_owned(), tool.clone(), name))
        .collect()
}

impl Inner {
    pub(super) fn servers(&self) -> &BTreeMap<String, Entry> {
        &self.servers
    }

    pub(super) fn servers_mut(&mut self) -> &mut BTreeMap<String, Entry> {
        &mut self.servers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_and_exclude_tools() {
        let settings = |include: &[&str], exclude: &[&str]| McpServerSettings {
            include_tools: include.iter().map(|s| (*s).to_owned()).collect(),
            exclude_tools: exclude.iter().map(|s| (*s).to_owned()).collect(),
            ..McpServerSettings::default()
        };
        assert!(allowed(&settings(&[], &[]), "echo"));
        assert!(allowed(&settings(&["echo"], &[]), "echo"));
        assert!(!allowed(&settings(&["echo"], &[]), "get-sum"));
        assert!(!allowed(&settings(&[], &["echo"]), "echo"));
        assert!(!allowed(&settings(&["echo"], &["echo"]), "echo"));
    }

    #[test]
    fn failure_messages_show_the_last_stderr_lines() {
        let message = failure(
            "github",
            "could not start: the connection closed",
            Some(vec!["Error: GITHUB_TOKEN is not set".to_owned()]),
        );
        assert_eq!(
            message,
            "MCP server \"github\" could not start: the connection closed. Its last lines on \
             stderr:\n    Error: GITHUB_TOKEN is not set"
        );
        assert!(failure("x", "stopped", Some(Vec::new())).ends_with("printed nothing on stderr."));
        assert_eq!(failure("x", "stopped", None), "MCP server \"x\" stopped.");
    }
}
