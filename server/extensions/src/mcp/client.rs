//! Tandem's side of one MCP connection (rmcp's `ClientHandler`): who it says it is (`tandem`,
//! this version, the `roots` capability), what it answers the server (`roots/list`: the
//! workspace roots as `file://` URIs), and where the server's notifications go (progress to
//! the call that asked for it, list changes to the manager, log messages to the log).
//!
//! The handshake asks for protocol 2025-11-25, the newest with an `initialize` handshake, which
//! every server in use speaks; roots are current there (later revisions deprecate them).

// Roots and logging are deprecated by SEP-2577 (protocol 2026-07-28), not in the revision this
// client negotiates.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ErrorData, Implementation, InitializeRequestParams,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, Root,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::ClientHandler;

/// Receives a call's progress notifications.
pub(crate) type ProgressCallback = Arc<dyn Fn(&ProgressNotificationParam) + Send + Sync>;

/// A list the server says has changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListChanged {
    Tools,
    Prompts,
    Resources,
}

/// What the handler shares with the manager.
pub(crate) struct ClientState {
    server: String,
    roots: Arc<RwLock<Vec<PathBuf>>>,
    progress: Mutex<HashMap<ProgressToken, ProgressCallback>>,
    on_list_changed: Box<dyn Fn(ListChanged) + Send + Sync>,
}

impl ClientState {
    pub(crate) fn new(
        server: &str,
        roots: Arc<RwLock<Vec<PathBuf>>>,
        on_list_changed: Box<dyn Fn(ListChanged) + Send + Sync>,
    ) -> Arc<ClientState> {
        Arc::new(ClientState {
            server: server.to_owned(),
            roots,
            progress: Mutex::default(),
            on_list_changed,
        })
    }

    /// Sends the progress notifications for `token` to `callback` until the returned guard is
    /// dropped.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        token: ProgressToken,
        callback: ProgressCallback,
    ) -> ProgressSubscription {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), callback);
        ProgressSubscription {
            state: Arc::clone(self),
            token,
        }
    }
}

/// Ends a progress subscription when dropped.
pub(crate) struct ProgressSubscription {
    state: Arc<ClientState>,
    token: ProgressToken,
}

impl Drop for ProgressSubscription {
    fn drop(&mut self) {
        self.state
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}

/// The rmcp handler: a thin shell around the shared state.
pub(crate) struct Client(pub(crate) Arc<ClientState>);

/// How Tandem introduces itself.
pub(crate) fn client_config() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    let mut roots = rmcp::model::RootsCapabilities::default();
    roots.list_changed = Some(true);
    capabilities.roots = Some(roots);
    InitializeRequestParams::new(
        capabilities,
        Implementation::new("tandem", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// The workspace roots as MCP roots.
pub(crate) fn roots(paths: &[PathBuf]) -> Vec<Root> {
    paths
        .iter()
        .filter_map(|path| {
            let url = reqwest::Url::from_directory_path(path).ok()?;
            let mut root = Root::new(url.as_str().trim_end_matches('/'));
            root.name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            Some(root)
        })
        .collect()
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        client_config()
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let paths = self
            .0
            .roots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok(ListRootsResult::new(roots(&paths)))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let callback = self
            .0
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let Some(callback) = callback {
            callback(&params);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.0.on_list_changed)(ListChanged::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.0.on_list_changed)(ListChanged::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.0.on_list_changed)(ListChanged::Resources);
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let server = &self.0.server;
        let data = match &params.data {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let logger = params.logger.as_deref().unwrap_or("");
        match params.level {
            LoggingLevel::Debug => {
                tracing::debug!(target: "tandem::mcp::log", %server, logger, "{data}")
            }
            LoggingLevel::Info | LoggingLevel::Notice => {
                tracing::info!(target: "tandem::mcp::log", %server, logger, "{data}")
            }
            LoggingLevel::Warning => {
                tracing::warn!(target: "tandem::mcp::log", %server, logger, "{data}")
            }
            _ => tracing::error!(target: "tandem::mcp::log", %server, logger, "{data}"),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_uris_named_after_their_folder() {
        let roots = roots(&[PathBuf::from("/srv/my project"), PathBuf::from("relative")]);
        assert_eq!(roots.len(), 1, "a relative path is no URI");
        assert_eq!(roots[0].uri, "file:///srv/my%20project");
        assert_eq!(roots[0].name.as_deref(), Some("my project"));
    }

    #[test]
    fn tandem_introduces_itself_with_roots() {
        let config = serde_json::to_value(client_config()).unwrap();
        assert_eq!(config["clientInfo"]["name"], "tandem");
        assert_eq!(config["clientInfo"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(config["capabilities"]["roots"]["listChanged"], true);
        assert_eq!(config["protocolVersion"], "2025-11-25");
    }
}
