//! Connecting to one server, by its transport: a program over stdio (`process.rs`), streamable
//! HTTP (rmcp's transport on Tandem's reqwest client), or HTTP+SSE (`sse.rs`); then the
//! `initialize` handshake and the first listing of what it offers (only what its capabilities
//! declare, every page). Failures come back as words for the user; the manager adds the
//! server's name and its stderr.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{Prompt, Resource, ResourceTemplate, ServerPeerInfo, Tool};
use rmcp::service::{
    ClientInitializeError, Peer, RoleClient, RunningService, RunningServiceCancellationToken,
    ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use tokio::process::{ChildStdin, ChildStdout};

use super::client::{Client, ClientState};
use super::config::{Endpoint, McpServerSettings, McpTransport};
use super::process::{Launch, Process, ProcessWatch};
use super::sse::{chain, SseTransport};
use super::types::McpStartContext;

/// What a server offers, as it listed it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Catalog {
    pub tools: Vec<Tool>,
    pub prompts: Vec<Prompt>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
}

/// A transport on its way: the program is started (synchronously, so that its stderr and exit
/// can be reported whatever happens next), the network ones connect in `initialize`.
pub(crate) enum Pending {
    Stdio(ChildStdout, ChildStdin),
    Http {
        client: reqwest::Client,
        url: String,
        headers: HeaderMap,
        /// Try SSE at the same address when the server refuses streamable HTTP.
        fallback: bool,
    },
    Sse {
        client: reqwest::Client,
        url: String,
        headers: HeaderMap,
    },
}

/// Starts what `settings` (expanded) describe: the program for stdio, the HTTP client for the
/// others. `Err` says what is wrong with the settings or why the program did not start.
pub(crate) fn prepare(
    server: &str,
    settings: &McpServerSettings,
    context: &McpStartContext,
) -> Result<(Pending, Option<Process>), String> {
    match settings.endpoint()? {
        Endpoint::Stdio { command } => {
            let root = context.roots.first();
            let cwd = match (&settings.cwd, root) {
                (Some(cwd), Some(root)) => Some(root.join(cwd)),
                (Some(cwd), None) => Some(cwd.clone()),
                (None, root) => root.cloned(),
            };
            let (process, stdout, stdin) = Process::spawn(Launch {
                server,
                command,
                args: &settings.args,
                env: &settings.env,
                cwd,
                environment: &context.environment,
                network: settings.network,
            })?;
            Ok((Pending::Stdio(stdout, stdin), Some(process)))
        }
        endpoint @ (Endpoint::Http { url } | Endpoint::HttpOrSse { url }) => Ok((
            Pending::Http {
                client: http_client()?,
                url: url.to_owned(),
                headers: headers(settings)?,
                fallback: matches!(endpoint, Endpoint::HttpOrSse { .. }),
            },
            None,
        )),
        Endpoint::Sse { url } => Ok((
            Pending::Sse {
                client: http_client()?,
                url: url.to_owned(),
                headers: headers(settings)?,
            },
            None,
        )),
    }
}

fn http_client() -> Result<reqwest::Client, String> {
    tandem_providers::http_client()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| format!("cannot set up the HTTP client: {}", chain(&error)))
}

fn headers(settings: &McpServerSettings) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (name, value) in &settings.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`headers` has `{name}`, which is not an HTTP header name"))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            format!("the value of header `{name}` has characters HTTP headers cannot carry")
        })?;
        headers.insert(header, value);
    }
    Ok(headers)
}

/// Connects (for the network transports) and runs the `initialize` handshake; the service
/// and the transport it runs on (an untyped `url` may end up on SSE).
pub(crate) async fn initialize(
    server: &str,
    pending: Pending,
    state: Arc<ClientState>,
) -> Result<(RunningService<RoleClient, Client>, McpTransport), String> {
    match pending {
        Pending::Stdio(stdout, stdin) => Client(state)
            .serve((stdout, stdin))
            .await
            .map(|service| (service, McpTransport::Stdio))
            .map_err(|error| explain(&error, false)),
        Pending::Http {
            client: http,
            url,
            headers,
            fallback,
        } => {
            let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(
                headers
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect(),
            );
            let attempt = Client(Arc::clone(&state))
                .serve(StreamableHttpClientTransport::with_client(
                    http.clone(),
                    config,
                ))
                .await;
            match attempt {
                Ok(service) => Ok((service, McpTransport::Http)),
                Err(error) => {
                    let text = explain(&error, !fallback);
                    if !fallback || !refused_as_older(&text) {
                        return Err(text);
                    }
                    // An older server: the spec's fallback is a GET for its event stream.
                    tracing::info!(
                        server,
                        "the server refused streamable HTTP ({text}); trying HTTP+SSE"
                    );
                    let sse = async {
                        let transport = SseTransport::connect(server, http, &url, headers).await?;
                        Client(state)
                            .serve(transport)
                            .await
                            .map_err(|error| explain(&error, false))
                    };
                    match sse.await {
                        Ok(service) => Ok((service, McpTransport::Sse)),
                        Err(sse) => Err(format!(
                            "{text}; and as an HTTP+SSE server: {sse} (set `type` to `http` or                              `sse` if you know which it is)"
                        )),
                    }
                }
            }
        }
        Pending::Sse {
            client: http,
            url,
            headers,
        } => {
            let transport = SseTransport::connect(server, http, &url, headers).await?;
            Client(state)
                .serve(transport)
                .await
                .map(|service| (service, McpTransport::Sse))
                .map_err(|error| explain(&error, false))
        }
    }
}

/// Whether a streamable HTTP handshake failed the way an older HTTP+SSE server fails it.
fn refused_as_older(text: &str) -> bool {
    ["HTTP 400", "HTTP 404", "HTTP 405"]
        .iter()
        .any(|status| text.contains(status))
}

/// A failed handshake in words, with what to do about it; `hint_sse` for a streamable HTTP
/// server that may be an older one.
fn explain(error: &ClientInitializeError, hint_sse: bool) -> String {
    let mut text = describe_initialize_error(error);
    if error.is_authorization_required() {
        text.push_str(
            "; the server wants authorization: give a token in `headers` (`Authorization: \
             Bearer ${TOKEN}`), since Tandem does not sign in with OAuth",
        );
    } else if hint_sse && (text.contains("HTTP 404") || text.contains("HTTP 405")) {
        text.push_str("; if it is an older HTTP+SSE server, set `type: sse`");
    }
    text
}

fn describe_initialize_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => {
            "the connection closed before it answered `initialize`".to_owned()
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("it refused `initialize`: {}", data.message)
        }
        ClientInitializeError::TransportError { error, context } => {
            // The transport's error without rmcp's wrapper, which names the transport's type.
            format!("{context}: {}", chain(error.error.as_ref()))
        }
        other => format!("the `initialize` handshake failed: {}", chain(other)),
    }
}

/// A service error as words: what the server said, or what happened to the connection.
pub(crate) fn describe_service_error(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => data.message.to_string(),
        ServiceError::TransportClosed => "the connection closed".to_owned(),
        ServiceError::TransportSend(error) => {
            format!("sending failed: {}", chain(error.error.as_ref()))
        }
        other => chain(other),
    }
}

/// Lists what the server's capabilities declare, every page. A server without a tool list is
/// of no use to the model, so failing to list tools fails the start; prompts and resources
/// that cannot be listed are left out, with a warning.
pub(crate) async fn list(
    server: &str,
    peer: &Peer<RoleClient>,
    warnings: &mut Vec<String>,
) -> Result<Catalog, String> {
    let capabilities = peer
        .peer_info()
        .map(|info| info.capabilities.clone())
        .unwrap_or_default();
    let mut catalog = Catalog::default();
    if capabilities.tools.is_some() {
        catalog.tools = peer.list_all_tools().await.map_err(|error| {
            format!(
                "listing its tools failed: {}",
                describe_service_error(&error)
            )
        })?;
    }
    if capabilities.prompts.is_some() {
        match peer.list_all_prompts().await {
            Ok(prompts) => catalog.prompts = prompts,
            Err(error) => warnings.push(format!(
                "MCP server \"{server}\": listing its prompts failed: {}",
                describe_service_error(&error)
            )),
        }
    }
    if capabilities.resources.is_some() {
        match peer.list_all_resources().await {
            Ok(resources) => catalog.resources = resources,
            Err(error) => warnings.push(format!(
                "MCP server \"{server}\": listing its resources failed: {}",
                describe_service_error(&error)
            )),
        }
        // Templates are optional even for servers with resources.
        if let Ok(templates) = peer.list_all_resource_templates().await {
            catalog.templates = templates;
        }
    }
    Ok(catalog)
}

/// A live connection: the peer to send requests through, and what to stop when it goes.
pub(crate) struct Connection {
    pub peer: Peer<RoleClient>,
    /// The transport it runs on.
    pub transport: McpTransport,
    pub state: Arc<ClientState>,
    pub info: Option<Arc<ServerPeerInfo>>,
    pub timeout: Duration,
    pub pid: Option<u32>,
    /// The program's exit and stderr (stdio servers).
    pub watch: Option<ProcessWatch>,
    process: Mutex<Option<Process>>,
    cancel: Mutex<Option<RunningServiceCancellationToken>>,
}

impl Connection {
    pub(crate) fn new(
        service: &RunningService<RoleClient, Client>,
        process: Option<Process>,
        timeout: Duration,
        transport: McpTransport,
    ) -> Connection {
        Connection {
            peer: service.peer().clone(),
            transport,
            state: Arc::clone(&service.service().0),
            info: service.peer().peer_info(),
            timeout,
            pid: process.as_ref().and_then(Process::pid),
            watch: process.as_ref().map(Process::watch),
            process: Mutex::new(process),
            cancel: Mutex::new(Some(service.cancellation_token())),
        }
    }

    /// Closes the connection and stops the program, waiting for it to exit (within a grace
    /// period, then it is killed).
    pub(crate) async fn stop(&self) {
        self.close();
        let process = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(process) = process {
            process.stop().await;
        }
    }

    fn close(&self) {
        let cancel = self
            .cancel
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(cancel) = cancel {
            cancel.cancel();
        }
    }
}

impl Drop for Connection {
    /// The service ends and the program's group is stopped (`Process`'s own drop).
    fn drop(&mut self) {
        self.close();
    }
}
