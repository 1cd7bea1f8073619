//! What the manager offers the session and the front ends while servers run: their tools (as
//! `Tool`s), prompts and resources, and the requests behind them. Every request is bounded by
//! the server's `timeout`, can be cancelled (the server is sent `notifications/cancelled`),
//! carries a progress token whose notifications go to the caller, and restarts a server whose
//! connection dropped, once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, GetPromptRequest, GetPromptRequestParams, ReadResourceRequest,
    ReadResourceRequestParams, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client::ProgressCallback;
use super::connect::{describe_service_error, Connection};
use super::content;
use super::error::{McpError, Result};
use super::manager::{allowed, closing, tool_names, McpManager, EXIT_WAIT, START_LIMIT};
use super::tool::McpTool;
use super::types::{
    McpPrompt, McpPromptArgument, McpPromptMessage, McpResource, McpResourceTemplate,
    McpServerState,
};
use super::{list_resources, read_resource};
use tandem_tools::Tool;

/// How long a request that found the connection gone waits to learn why.
const LOSS_WAIT: Duration = Duration::from_secs(3);

impl McpManager {
    /// Every tool the model is offered: the tools of ready servers (and of servers whose
    /// connection dropped, which their next call restarts) after `includeTools`/`excludeTools`,
    /// named `mcp__<server>__<tool>`; plus `list_mcp_resources` and `read_mcp_resource` when
    /// some ready server has resources (or resource templates), and only then. Sorted by name.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let (named, has_resources) = {
            let inner = self.lock();
            let has_resources = inner.servers().values().any(|entry| {
                entry.state == McpServerState::Ready
                    && !(entry.catalog.resources.is_empty() && entry.catalog.templates.is_empty())
            });
            let named: Vec<(String, rmcp::model::Tool, String, bool)> = tool_names(&inner)
                .into_iter()
                .map(|(server, tool, name)| {
                    let trusted = inner
                        .servers()
                        .get(&server)
                        .is_some_and(|entry| entry.settings.trust);
                    (server, tool, name, trusted)
                })
                .collect();
            (named, has_resources)
        };
        let manager = self.weak();
        let mut tools: Vec<Arc<dyn Tool>> = named
            .into_iter()
            .map(|(server, tool, name, trusted)| {
                Arc::new(McpTool::new(manager.clone(), server, &tool, name, trusted))
                    as Arc<dyn Tool>
            })
            .collect();
        if has_resources {
            tools.push(Arc::new(list_resources::ListMcpResources::new(
                manager.clone(),
            )));
            tools.push(Arc::new(read_resource::ReadMcpResource::new(manager)));
        }
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools
    }

    /// The prompts of the ready servers, by server and name.
    pub fn prompts(&self) -> Vec<McpPrompt> {
        let inner = self.lock();
        inner
            .servers()
            .iter()
            .filter(|(_, entry)| entry.state == McpServerState::Ready)
            .flat_map(|(server, entry)| {
                entry.catalog.prompts.iter().map(move |prompt| McpPrompt {
                    server: server.clone(),
                    name: prompt.name.clone(),
                    title: prompt.title.clone(),
                    description: prompt.description.clone(),
                    arguments: prompt
                        .arguments
                        .iter()
                        .flatten()
                        .map(|argument| McpPromptArgument {
                            name: argument.name.clone(),
                            description: argument.description.clone(),
                            required: argument.required == Some(true),
                        })
                        .collect(),
                })
            })
            .collect()
    }

    /// The resources the ready servers list, by server.
    pub fn resources(&self) -> Vec<McpResource> {
        let inner = self.lock();
        inner
            .servers()
            .iter()
            .filter(|(_, entry)| entry.state == McpServerState::Ready)
            .flat_map(|(server, entry)| {
                entry
                    .catalog
                    .resources
                    .iter()
                    .map(move |resource| McpResource {
                        server: server.clone(),
                        uri: resource.uri.clone(),
                        name: resource.name.clone(),
                        description: resource.description.clone(),
                        mime_type: resource.mime_type.clone(),
                        size: resource.size,
                    })
            })
            .collect()
    }

    /// The resource templates of the ready servers: resources they read without listing them.
    pub fn resource_templates(&self) -> Vec<McpResourceTemplate> {
        let inner = self.lock();
        inner
            .servers()
            .iter()
            .filter(|(_, entry)| entry.state == McpServerState::Ready)
            .flat_map(|(server, entry)| {
                entry
                    .catalog
                    .templates
                    .iter()
                    .map(move |template| McpResourceTemplate {
                        server: server.clone(),
                        uri_template: template.uri_template.clone(),
                        name: template.name.clone(),
                        description: template.description.clone(),
                        mime_type: template.mime_type.clone(),
                    })
            })
            .collect()
    }

    /// Renders `server`'s prompt `name` with `arguments`, as text per message. Checked first
    /// against the prompt's declared arguments: a missing required one, or one it does not
    /// take, is an error that names it.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<Vec<McpPromptMessage>> {
        self.connection(server).await?;
        let declared = {
            let inner = self.lock();
            let entry = inner.servers().get(server);
            let prompts = entry.map(|entry| entry.catalog.prompts.clone());
            prompts.unwrap_or_default()
        };
        let Some(prompt) = declared.iter().find(|prompt| prompt.name == name) else {
            let known: Vec<&str> = declared.iter().map(|p| p.name.as_str()).collect();
            return Err(McpError::Invalid {
                server: server.to_owned(),
                message: format!(
                    "the MCP server \"{server}\" has no prompt \"{name}\"; its prompts are: {}",
                    if known.is_empty() {
                        "(none)".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        };
        let parameters = prompt.arguments.clone().unwrap_or_default();
        for parameter in &parameters {
            if parameter.required == Some(true) && !arguments.contains_key(&parameter.name) {
                let about = parameter
                    .description
                    .as_deref()
                    .map_or(String::new(), |d| format!(" ({d})"));
                return Err(McpError::Invalid {
                    server: server.to_owned(),
                    message: format!(
                        "the prompt \"{name}\" of MCP server \"{server}\" needs the argument \
                         `{}`{about}",
                        parameter.name
                    ),
                });
            }
        }
        if let Some(unknown) = arguments
            .keys()
            .find(|given| !parameters.iter().any(|p| &p.name == *given))
        {
            let known: Vec<&str> = parameters.iter().map(|p| p.name.as_str()).collect();
            return Err(McpError::Invalid {
                server: server.to_owned(),
                message: format!(
                    "the prompt \"{name}\" of MCP server \"{server}\" takes no argument \
                     `{unknown}`; it takes: {}",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        }
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(
                arguments
                    .into_iter()
                    .map(|(key, value)| (key, Value::String(value)))
                    .collect(),
            );
        }
        let what = format!("the prompt {name}");
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        match self.request(server, &what, request, None, None).await? {
            ServerResult::GetPromptResult(result) => {
                Ok(content::prompt_messages(server, &result.messages))
            }
            other => Err(unexpected(server, &what, &other)),
        }
    }

    /// Reads `uri` from `server`, as text (binary parts described), capped at 64 KiB.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<String> {
        let what = format!("the read of {uri}");
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        match self
            .request(server, &what, request, Some(cancel), None)
            .await?
        {
            ServerResult::ReadResourceResult(result) => Ok(content::read_result(&result.contents)),
            other => Err(unexpected(server, &what, &other)),
        }
    }

    /// Calls `tool` (the server's name for it) with `arguments`; progress notifications go to
    /// `progress`. A tool `includeTools`/`excludeTools` keep from the model is refused.
    pub(crate) async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
        progress: Option<ProgressCallback>,
    ) -> Result<CallToolResult> {
        let excluded = {
            let inner = self.lock();
            inner
                .servers()
                .get(server)
                .is_some_and(|entry| !allowed(&entry.settings, tool))
        };
        if excluded {
            return Err(McpError::Invalid {
                server: server.to_owned(),
                message: format!(
                    "the tool \"{tool}\" of MCP server \"{server}\" is not offered \
                     (`includeTools`/`excludeTools`)"
                ),
            });
        }
        let what = format!("the call of {tool}");
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        match self
            .request(server, &what, request, Some(cancel), progress)
            .await?
        {
            ServerResult::CallToolResult(result) => Ok(result),
            other => Err(unexpected(server, &what, &other)),
        }
    }

    /// The server's connection for a request: waits while it starts; restarts it once when
    /// its connection dropped.
    pub(super) async fn connection(&self, server: &str) -> Result<(Arc<Connection>, u64)> {
        let mut deadline = Instant::now() + START_LIMIT;
        let mut changes = self.changes();
        loop {
            {
                let mut inner = self.lock();
                let known = inner.servers().keys().cloned().collect();
                let Some(entry) = inner.servers_mut().get_mut(server) else {
                    return Err(McpError::UnknownServer {
                        server: server.to_owned(),
                        known,
                    });
                };
                match (&entry.state, &entry.connection) {
                    (McpServerState::Ready, Some(connection)) => {
                        return Ok((Arc::clone(connection), entry.generation))
                    }
                    (McpServerState::Disabled, _) => {
                        return Err(McpError::Disabled {
                            server: server.to_owned(),
                        })
                    }
                    (McpServerState::Failed { .. }, _) if entry.restart_on_use => {
                        tracing::info!(server, "restarting the MCP server for its next use");
                        self.start_locked(&mut inner, server);
                        drop(inner);
                        self.changed();
                    }
                    (McpServerState::Failed { message }, _) => {
                        return Err(McpError::Failed {
                            server: server.to_owned(),
                            message: message.clone(),
                        })
                    }
                    (McpServerState::Starting | McpServerState::Ready, _) => {
                        // A server allowed a longer start is waited for as long.
                        deadline = deadline
                            .max(entry.started_at + entry.settings.start_limit() + EXIT_WAIT);
                    }
                }
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return Err(McpError::Starting {
                    server: server.to_owned(),
                });
            }
        }
    }

    /// Sends `request` and waits for the answer, the server's `timeout`, or `cancel`.
    async fn request(
        &self,
        server: &str,
        what: &str,
        request: ClientRequest,
        cancel: Option<&CancellationToken>,
        progress: Option<ProgressCallback>,
    ) -> Result<ServerResult> {
        // A server still starting (or restarting) is waited for, unless the call is cancelled.
        let (connection, generation) = tokio::select! {
            connection = self.connection(server) => connection?,
            () = cancelled(cancel) => {
                return Err(McpError::Cancelled {
                    server: server.to_owned(),
                    what: capitalized(what),
                })
            }
        };
        let handle = match connection
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(error) => {
                return Err(self
                    .lost(server, generation, &connection, what, &error)
                    .await)
            }
        };
        let id = handle.id.clone();
        // Every request carries a progress token (rmcp adds one); notifications for it go to
        // the caller until the request ends.
        let _subscription = progress.map(|callback| {
            connection
                .state
                .subscribe(handle.progress_token.clone(), callback)
        });
        tokio::select! {
            result = handle.await_response() => match result {
                Ok(result) => Ok(result),
                Err(ServiceError::McpError(error)) => Err(McpError::Server {
                    server: server.to_owned(),
                    what: capitalized(what),
                    message: error.message.to_string(),
                }),
                Err(error) => Err(self.lost(server, generation, &connection, what, &error).await),
            },
            () = cancelled(cancel) => {
                send_cancelled(&connection, id, "the user cancelled the request").await;
                Err(McpError::Cancelled { server: server.to_owned(), what: capitalized(what) })
            }
            () = tokio::time::sleep(connection.timeout) => {
                send_cancelled(&connection, id, "timed out").await;
                Err(McpError::Timeout {
                    server: server.to_owned(),
                    what: what.to_owned(),
                    limit: connection.timeout,
                })
            }
        }
    }

    /// The error for a request whose connection went away: the server's failure message once
    /// the manager has learned what happened (within `LOSS_WAIT`). A network server that
    /// cannot be reached is marked failed at once, to be reconnected on its next use.
    async fn lost(
        &self,
        server: &str,
        generation: u64,
        connection: &Connection,
        what: &str,
        error: &ServiceError,
    ) -> McpError {
        let failed = |message: String| McpError::Failed {
            server: server.to_owned(),
            message: format!("{} failed: {message}", capitalized(what)),
        };
        let reason = describe_service_error(error);
        let network = connection.watch.is_none();
        if network && matches!(error, ServiceError::TransportSend(_)) {
            if let Some(message) = self.connection_failed(server, generation, &reason) {
                return failed(message);
            }
        }
        let deadline = Instant::now() + LOSS_WAIT;
        let mut changes = self.changes();
        loop {
            let message = {
                let inner = self.lock();
                match inner.servers().get(server) {
                    Some(entry) if entry.generation == generation => match &entry.state {
                        McpServerState::Failed { message } => Some(message.clone()),
                        _ => None,
                    },
                    _ => Some(format!(
                        "MCP server \"{server}\" was stopped or restarted meanwhile."
                    )),
                }
            };
            // The first message only says the connection closed; wait for the full one.
            if let Some(message) = message.filter(|m| *m != closing(server)) {
                return failed(message);
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                let message = self
                    .connection_failed(server, generation, &reason)
                    .unwrap_or_else(|| format!("MCP server \"{server}\": {reason}"));
                return failed(message);
            }
        }
    }
}

/// Resolves when `cancel` is cancelled; never without one.
async fn cancelled(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Tells the server to stop working on request `id`. Waits until the message is handed to the
/// transport (so the next request goes after it), but not for long: a stuck connection must
/// not hold up a cancelled call.
async fn send_cancelled(connection: &Connection, id: RequestId, reason: &str) {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    let sent = connection.peer.notify_cancelled(params);
    let _ = tokio::time::timeout(Duration::from_secs(1), sent).await;
}

fn unexpected(server: &str, what: &str, result: &ServerResult) -> McpError {
    let kind = serde_json::to_value(result)
        .ok()
        .and_then(|value| {
            value
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
        })
        .unwrap_or_default();
    McpError::Server {
        server: server.to_owned(),
        what: what.to_owned(),
        message: format!(
            "it answered with something else (fields: {})",
            kind.join(", ")
        ),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
