//! `tandem chat` (and plain `tandem`): the terminal front end. An interactive chat that is an
//! ACP client of Tandem's own agent: in this process (`tandem_acp::serve` over an in-memory
//! pipe), or the session of the `tandem lsp` an editor runs, over that server's attach socket
//! (`tandem_acp::attach`), where it sees the editor's buffers, cursor and selection and its
//! edits land in the editor. No agent logic lives here: what it shows comes from ACP's
//! `session/update`s and what it does goes out as ACP requests.
//!
//! - `client.rs` — the ACP connection: updates and permission requests in, answers out.
//! - `app.rs` — the chat's state and what keys, updates and finished requests do to it.
//! - `ui.rs` — the screen, drawn with ratatui. `render.rs` — an entry as lines (tool calls,
//!   diffs); `markdown.rs` — the answer's Markdown; `highlight.rs` — code colours (tree-sitter);
//!   `wrap.rs` — styled text wrapped to a width; `theme.rs` — colours, and none for `NO_COLOR`.
//! - `transcript.rs` — the conversation as data, updated from ACP.
//! - `composer.rs` — the prompt being written; `complete.rs` — `/` and `@` completion.
//! - `terminal.rs` — the event loop on a real terminal (raw mode, alternate screen, frames).
//! - `lines.rs` — line output when stdout is not a terminal.
//!
//! What a user sees and types is documented in `docs/chat.md`.

mod app;
mod client;
mod complete;
mod composer;
mod highlight;
mod lines;
mod markdown;
mod render;
mod terminal;
mod theme;
mod transcript;
mod ui;
mod wrap;

#[doc(hidden)]
pub mod bench;

use std::io::IsTerminal;
use std::path::PathBuf;

use agent_client_protocol::v1::schema as acp;
use tandem_acp::attach::{self, Endpoint};

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("{0}")]
    Connection(String),
    /// The agent refused a request (the message is its error's).
    #[error("{0}")]
    Agent(String),
    #[error("{0}")]
    Usage(String),
    #[error("the terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, ChatError>;

/// Whether to join an editor's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    /// Never: Tandem's agent runs in this process.
    Never,
    /// When exactly one `tandem lsp` serves this workspace (the default).
    Auto,
    /// Required: the one server for this workspace, or the one with this process id.
    Required(Option<u32>),
}

/// What `tandem chat` is asked to do.
pub struct ChatOptions {
    /// The workspace (canonical).
    pub workspace: PathBuf,
    pub resume: Option<String>,
    pub continue_latest: bool,
    pub attach: Attach,
    /// How the in-process agent is served (settings, state directory, language servers).
    pub serve: tandem_acp::ServeOptions,
    /// A first prompt to send.
    pub prompt: Option<String>,
}

/// Runs the chat; the process's exit code.
pub async fn run(options: ChatOptions) -> Result<i32> {
    let endpoint = find_endpoint(&options)?;
    let interactive = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    match endpoint {
        Some(endpoint) => {
            let stream = attach::connect(&endpoint).await.map_err(|error| {
                ChatError::Connection(format!(
                    "cannot attach to the Tandem server (pid {}) at {}: {error}",
                    endpoint.pid,
                    endpoint.socket.display()
                ))
            })?;
            let (read, write) = stream.into_split();
            let transport = tandem_acp::line_transport(read, write);
            let editor = endpoint
                .editor
                .clone()
                .unwrap_or_else(|| format!("the editor (pid {})", endpoint.pid));
            client::run(transport, async |connection, agent| {
                let code = session(connection, agent, &options, Some(editor), interactive).await;
                code
            })
            .await
            .map_err(|error| match error {
                ChatError::Connection(message) => ChatError::Connection(format!(
                    "the editor's Tandem server closed the connection ({message})"
                )),
                error => error,
            })
        }
        None => {
            let (ours, theirs) = tokio::io::duplex(1 << 20);
            let (agent_read, agent_write) = tokio::io::split(theirs);
            let serve = options.serve.clone();
            let agent = tokio::spawn(async move {
                if let Err(error) = tandem_acp::serve(agent_read, agent_write, serve).await {
                    tracing::warn!("the in-process agent stopped: {error}");
                }
            });
            let (read, write) = tokio::io::split(ours);
            let transport = tandem_acp::line_transport(read, write);
            let code = client::run(transport, async |connection, agent| {
                session(connection, agent, &options, None, interactive).await
            })
            .await;
            // The agent's turns are cancelled and its sessions end once its input closes.
            let _ = agent.await;
            code
        }
    }
}

/// The editor's server to attach to, as `options.attach` asks.
fn find_endpoint(options: &ChatOptions) -> Result<Option<Endpoint>> {
    let found = || attach::endpoints_for(&options.workspace);
    match options.attach {
        Attach::Never => Ok(None),
        Attach::Auto => {
            let mut found = found();
            Ok((found.len() == 1).then(|| found.remove(0)))
        }
        Attach::Required(Some(pid)) => attach::endpoints()
            .into_iter()
            .find(|endpoint| endpoint.pid == pid)
            .map(Some)
            .ok_or_else(|| {
                ChatError::Usage(format!(
                    "no Tandem server with pid {pid} offers its sessions here{}",
                    list(&attach::endpoints())
                ))
            }),
        Attach::Required(None) => {
            let mut found = found();
            match found.len() {
                1 => Ok(Some(found.remove(0))),
                0 => Err(ChatError::Usage(format!(
                    "no editor's Tandem server runs for {}: open the workspace in an editor \
                     with Tandem (tandem lsp), or leave out --attach{}",
                    options.workspace.display(),
                    list(&attach::endpoints())
                ))),
                _ => Err(ChatError::Usage(format!(
                    "several Tandem servers run for {}; choose one with --attach PID:{}",
                    options.workspace.display(),
                    list(&found)
                ))),
            }
        }
    }
}

fn list(endpoints: &[Endpoint]) -> String {
    let mut text = String::new();
    for endpoint in endpoints {
        let roots: Vec<String> = endpoint
            .roots
            .iter()
            .map(|root| root.display().to_string())
            .collect();
        text.push_str(&format!(
            "\n  pid {} ({}): {}",
            endpoint.pid,
            endpoint.editor.as_deref().unwrap_or("an editor"),
            roots.join(", ")
        ));
    }
    text
}

/// Sets the session up (new, resumed, continued or the editor's live one) and runs the chat
/// on it, on the terminal or as lines.
async fn session(
    connection: client::Connection,
    agent: tokio::sync::mpsc::UnboundedReceiver<client::FromAgent>,
    options: &ChatOptions,
    attached: Option<String>,
    interactive: bool,
) -> Result<i32> {
    client::initialize(&connection).await?;
    let start =
        if let Some(id) = &options.resume {
            Start::Load(acp::SessionId::new(id.clone()))
        } else if options.continue_latest || attached.is_some() {
            let sessions = connection
                .send_request(acp::ListSessionsRequest::new().cwd(options.workspace.clone()))
                .block_task()
                .await
                .map_err(|error| ChatError::Agent(error.to_string()))?
                .sessions;
            // Attached, the editor's live session; else (and `--continue`) the latest saved one.
            let live = sessions.iter().find(|session| is_live(session));
            match (attached.is_some(), live, sessions.first()) {
                (true, Some(live), _) => Start::Load(live.session_id.clone()),
                (false, _, Some(latest)) if options.continue_latest => {
                    Start::Load(latest.session_id.clone())
                }
                (false, _, None) => return Err(ChatError::Usage(
                    "no saved session for this workspace to continue; start one with tandem chat"
                        .into(),
                )),
                _ => Start::New,
            }
        } else {
            Start::New
        };
    if interactive {
        terminal::run(connection, agent, options, start, attached).await
    } else {
        lines::run(connection, agent, options, start).await
    }
}

/// How the chat's session begins.
pub(crate) enum Start {
    New,
    Load(acp::SessionId),
}

/// Whether a listed session is live in the server (Tandem marks them in `_meta`).
fn is_live(session: &acp::SessionInfo) -> bool {
    session
        .meta
        .as_ref()
        .and_then(|meta| meta.get("tandem"))
        .and_then(|tandem| tandem.get("live"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}
