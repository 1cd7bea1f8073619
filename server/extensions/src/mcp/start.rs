//! Starting one server, in its own task: expand its settings, start its program or connect,
//! run the `initialize` handshake and the first listing, all within the start limit; then
//! record the outcome, if this start is still the server's current one (a newer start or a
//! stop makes it moot), and watch the connection until it closes.

use std::path::PathBuf;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use super::client::{ClientState, ListChanged};
use super::config::McpServerSettings;
use super::connect::{self, Connection};
use super::error::seconds;
use super::expand::expand_settings;
use super::manager::{failure, McpManager, DEFAULT_TIMEOUT, EXIT_WAIT};
use super::process::Process;
use super::types::{McpServerState, McpStartContext};

/// Starts one server: expand its settings, connect, initialize, list; then record the outcome
/// if the start is still current.
pub(super) async fn start(
    manager: Weak<McpManager>,
    server: String,
    generation: u64,
    settings: McpServerSettings,
    context: McpStartContext,
    roots: Arc<RwLock<Vec<PathBuf>>>,
) {
    let (expanded, mut warnings) =
        expand_settings(&server, &settings, &|name| std::env::var(name).ok());
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let timeout = settings
        .timeout
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    let limit = settings.start_limit();
    let on_list_changed = {
        let manager = manager.clone();
        let server = server.clone();
        Box::new(move |list: ListChanged| {
            if let Some(manager) = manager.upgrade() {
                let server = server.clone();
                tokio::spawn(async move { manager.relist(&server, generation, list).await });
            }
        })
    };
    let state = ClientState::new(&server, roots, on_list_changed);
    // (what happened, the program's watch and the program, how long to wait for its exit)
    let outcome = match connect::prepare(&server, &expanded, &context) {
        Err(what) => Err((
            format!("could not start: {what}"),
            None,
            None,
            Duration::ZERO,
        )),
        Ok((pending, process)) => {
            let process_watch = process.as_ref().map(Process::watch);
            let started = tokio::time::timeout(limit, async {
                let (service, transport) = connect::initialize(&server, pending, state).await?;
                let catalog = connect::list(&server, service.peer(), &mut warnings).await?;
                Ok::<_, String>((service, transport, catalog))
            })
            .await;
            match started {
                Ok(Ok((service, transport, catalog))) => Ok((service, transport, catalog, process)),
                Ok(Err(what)) => Err((
                    format!("could not start: {what}"),
                    process_watch,
                    process,
                    EXIT_WAIT,
                )),
                Err(_) => Err((
                    format!(
                        "did not finish starting within {} (connecting, `initialize` and \
                         listing its tools); check that it is an MCP server, or raise `timeout`",
                        seconds(limit)
                    ),
                    process_watch,
                    process,
                    // It is still running: no exit to wait for.
                    Duration::ZERO,
                )),
            }
        }
    };
    let Some(manager) = manager.upgrade() else {
        return;
    };
    match outcome {
        Ok((service, transport, catalog, process)) => {
            let connection = Arc::new(Connection::new(&service, process, timeout, transport));
            let recorded = {
                let mut inner = manager.lock();
                match inner.servers_mut().get_mut(&server) {
                    Some(entry) if entry.generation == generation => {
                        tracing::info!(
                            server = %server,
                            tools = catalog.tools.len(),
                            prompts = catalog.prompts.len(),
                            resources = catalog.resources.len(),
                            "MCP server ready"
                        );
                        entry.state = McpServerState::Ready;
                        entry.catalog = catalog;
                        entry.warnings = warnings;
                        entry.connection = Some(Arc::clone(&connection));
                        entry.task = None;
                        true
                    }
                    _ => false,
                }
            };
            if !recorded {
                connection.stop().await;
                return;
            }
            manager.changed();
            let watcher = Arc::downgrade(&manager);
            drop(manager);
            drop(connection);
            // The service runs until the connection closes or is cancelled.
            let _ = service.waiting().await;
            if let Some(manager) = watcher.upgrade() {
                manager.connection_lost(&server, generation).await;
            }
        }
        Err((what, process_watch, process, exit_wait)) => {
            let (what, stderr) = match &process_watch {
                Some(process_watch) => {
                    let exit = process_watch.exit(exit_wait).await;
                    let command = expanded.command.as_deref().unwrap_or_default();
                    let what = match exit {
                        Some(exit) => format!("{what} (`{command}` {exit})"),
                        None => what,
                    };
                    (what, Some(process_watch.stderr()))
                }
                None => (what, None),
            };
            let message = failure(&server, &what, stderr);
            tracing::warn!(server = %server, "{message}");
            {
                let mut inner = manager.lock();
                if let Some(entry) = inner.servers_mut().get_mut(&server) {
                    if entry.generation == generation {
                        entry.state = McpServerState::Failed { message };
                        entry.restart_on_use = false;
                        entry.warnings = warnings;
                        entry.task = None;
                    }
                }
            }
            manager.changed();
            if let Some(process) = process {
                process.stop().await;
            }
        }
    }
}
