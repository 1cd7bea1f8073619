//! The chat's ACP client side: it connects to an agent (Tandem's own, in this process, or the
//! editor's `tandem lsp` over its attach socket) and turns what the agent sends into
//! [`FromAgent`] messages for the app, answering permission requests when the user has.
//!
//! Handlers never wait on the user: a permission request is handed to the app with a
//! one-shot reply, and a spawned task answers it, so the dispatch loop keeps reading the
//! stream (and the turn's updates keep coming) while the question is on the screen.

use std::path::PathBuf;

use agent_client_protocol::v1::{self, schema as acp};
use agent_client_protocol::{on_receive_notification, on_receive_request, Agent, Client};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::{ChatError, Result};

/// What the agent sent, in order.
pub enum FromAgent {
    Update(acp::SessionNotification),
    /// The agent asks before a tool call; `reply` takes the user's answer (dropped: cancelled).
    Permission {
        request: acp::RequestPermissionRequest,
        reply: oneshot::Sender<Answer>,
    },
}

/// The user's answer to a permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The option chosen (one of the request's `option_id`s).
    pub option_id: String,
    /// Why the call was rejected, for the model (Tandem reads it from `_meta.tandem.feedback`).
    pub feedback: Option<String>,
}

/// The agent's end of the connection, as the app uses it.
pub type Connection = v1::ConnectionTo<Agent>;

/// Runs `main` on a connection to the agent at the other end of `transport`; what the agent
/// sends arrives on the receiver `main` is given.
pub async fn run<T, F, R>(transport: T, main: F) -> Result<R>
where
    T: agent_client_protocol::ConnectTo<Client> + 'static,
    F: AsyncFnOnce(Connection, mpsc::UnboundedReceiver<FromAgent>) -> Result<R>,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let updates = tx.clone();
    Client
        .v1()
        .name("tandem-chat")
        .on_receive_notification(
            async move |notification: acp::SessionNotification, _cx| {
                let _ = updates.send(FromAgent::Update(notification));
                Ok(())
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: acp::RequestPermissionRequest, responder, cx| {
                let (reply, answer) = oneshot::channel();
                let _ = tx.send(FromAgent::Permission { request, reply });
                cx.spawn(async move {
                    let response = match answer.await {
                        Ok(answer) => permission_response(answer),
                        Err(_) => acp::RequestPermissionResponse::new(
                            acp::RequestPermissionOutcome::Cancelled,
                        ),
                    };
                    responder.respond(response)
                })
            },
            on_receive_request!(),
        )
        .connect_with(transport, async |connection: Connection| {
            Ok(main(connection, rx).await)
        })
        .await
        .map_err(|error| ChatError::Connection(error.to_string()))?
}

/// The answer in ACP's terms, the feedback in Tandem's `_meta`.
fn permission_response(answer: Answer) -> acp::RequestPermissionResponse {
    let selected = acp::SelectedPermissionOutcome::new(answer.option_id);
    let response =
        acp::RequestPermissionResponse::new(acp::RequestPermissionOutcome::Selected(selected));
    match answer.feedback {
        Some(feedback) => response.meta(
            json!({"tandem": {"feedback": feedback}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
        None => response,
    }
}

/// The agent's answer to `initialize`, the protocol version and what the chat can do (nothing
/// of the client's files or terminal: the agent reads the disk or the editor's buffers).
pub async fn initialize(connection: &Connection) -> Result<acp::InitializeResponse> {
    let request = acp::InitializeRequest::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .client_info(acp::Implementation::new(
            "tandem-chat",
            env!("CARGO_PKG_VERSION"),
        ));
    connection
        .send_request(request)
        .block_task()
        .await
        .map_err(|error| ChatError::Agent(error.to_string()))
}

/// A new session in `cwd`.
pub async fn new_session(connection: &Connection, cwd: PathBuf) -> Result<acp::NewSessionResponse> {
    connection
        .send_request(acp::NewSessionRequest::new(cwd))
        .block_task()
        .await
        .map_err(|error| ChatError::Agent(error.to_string()))
}
