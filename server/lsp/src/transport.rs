//! The server's main loop: reads frames, decodes JSON-RPC, applies document sync in arrival order,
//! hands everything else to tower-lsp's `LspService`, and writes responses and server-to-client
//! messages.
//!
//! Why our own loop rather than `tower_lsp::Server`:
//! - a frame that cannot be decoded must cost one error response, not the connection
//!   (see `framing`);
//! - `didOpen`/`didChange`/`didClose` are applied here, synchronously and in the order they
//!   arrived, while requests run concurrently in spawned tasks. A handler can therefore never see
//!   (or apply) changes out of order, whatever the scheduler does;
//! - after `exit` the loop stops at once instead of waiting for the client to close stdin;
//! - a handler that panics answers its request with an internal error; the server lives on.

use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::{FutureExt, SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tower::Service;
use tower_lsp::jsonrpc::{Error, Id, Request, Response};
use tower_lsp::LspService;
use tracing::instrument::WithSubscriber;
use tracing::{debug, error, warn};

use crate::framing::{write_frame, Frame, FrameReader};
use crate::logging::ClientLogReceiver;
use crate::server::Backend;
use crate::sync;

/// Outgoing messages queue here; the writer drains them one frame at a time.
const OUTGOING_QUEUE: usize = 256;
/// Requests being handled at once, at most: past it the server reads no more input until one
/// is answered. A client that sends requests without reading the answers (whose handlers then
/// wait to send them) would otherwise make the server hold every one of them, for good: 50,000
/// such requests took it from 16 MB to 194 MB. Far above what an editor keeps in flight, and
/// handlers that wait on the client's answers (approvals) are few.
const MAX_IN_FLIGHT: usize = 512;

/// How the server should be run. `Default` is right for tests; the binary adds a log channel.
#[derive(Default)]
pub struct ServeOptions {
    /// Warnings and errors to forward to the client as `window/logMessage`.
    pub client_log: Option<ClientLogReceiver>,
    /// The user's settings file (the binary passes the platform's; `None` reads none, which is
    /// what tests want).
    pub user_settings: Option<std::path::PathBuf>,
    /// Where sessions are saved (the binary passes the platform's state directory; `None` saves
    /// none, which is what tests want unless they test saving).
    pub state_dir: Option<std::path::PathBuf>,
    /// The language servers Tandem starts itself, for what the editor does not report
    /// (`None`: only the editor's diagnostics, which is what tests want unless they test these).
    pub language_servers: Option<std::sync::Arc<dyn tandem_agent::diagnostics::LanguageServers>>,
    /// Called once, when the client reports `initialized` (the workspace folders known): what
    /// composes another front end on this server's sessions (the binary's attach socket, which
    /// serves ACP; this crate knows nothing of it). With it set, the server also follows the
    /// turns other front ends queue on its host and shows them to the editor.
    pub on_initialized: Option<OnInitialized>,
}

/// See [`ServeOptions::on_initialized`].
pub type OnInitialized = Arc<dyn Fn(Initialized) + Send + Sync>;

/// What [`ServeOptions::on_initialized`] is given: the server's session host and its front end
/// (the editor's buffers and edits, IDE state and diagnostics), to serve sessions with.
pub struct Initialized {
    pub host: Arc<tandem_agent::host::Host>,
    pub frontend: Arc<dyn tandem_agent::host::Frontend>,
    /// The workspace folders (local, canonical), now and as they change.
    pub roots: tokio::sync::watch::Receiver<Vec<std::path::PathBuf>>,
    /// The editor: `clientInfo.name` from `initialize`.
    pub editor: Option<String>,
}

/// Why [`serve`] returned, and the process exit code that follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerExit {
    /// The client sent `shutdown` (and it succeeded) before the connection ended.
    pub shutdown_requested: bool,
    /// The connection ended with an `exit` notification rather than by closing the input.
    pub exit_notified: bool,
}

impl ServerExit {
    /// 0 when `shutdown` came first, 1 otherwise, as the LSP specification asks of `exit`.
    pub fn code(self) -> i32 {
        if self.shutdown_requested {
            0
        } else {
            1
        }
    }
}

enum Incoming {
    Request(Request),
    Response(Response),
}

/// Runs a language server over `input`/`output` until `exit` or until the input closes.
///
/// Every task the server spawns logs to the tracing dispatcher that is current when this is
/// called, so in-process tests can give each server its own subscriber.
pub async fn serve<I, O>(input: I, output: O, options: ServeOptions) -> ServerExit
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let dispatch = tracing::dispatcher::get_default(|current| current.clone());
    let (user_settings, state_dir, language_servers, on_initialized) = (
        options.user_settings,
        options.state_dir,
        options.language_servers,
        options.on_initialized,
    );
    let (mut service, socket) = LspService::build(move |client| {
        let backend = Backend::new(client, user_settings, state_dir, language_servers);
        backend.set_on_initialized(on_initialized);
        backend
    })
    .custom_method("tandem/debug/document", Backend::debug_document)
    .custom_method("tandem/debug/status", Backend::debug_status)
    .custom_method(
        "tandem/didChangeUserSettings",
        Backend::did_change_user_settings,
    )
    .custom_method(
        "tandem/didChangeDiagnostics",
        Backend::did_change_diagnostics,
    )
    .custom_method("tandem/newSession", Backend::new_session)
    .custom_method("tandem/prompt", Backend::prompt)
    .custom_method("tandem/cancel", Backend::cancel)
    .custom_method("tandem/addNote", Backend::add_note)
    .custom_method("tandem/sessions", Backend::sessions)
    .custom_method("tandem/commands", Backend::commands)
    .custom_method("tandem/mcpServers", Backend::mcp_servers)
    .custom_method("tandem/skills", Backend::skills)
    .custom_method("tandem/resumeSession", Backend::resume_session)
    .custom_method("tandem/deleteSession", Backend::delete_session)
    .custom_method("tandem/compress", Backend::compress)
    .custom_method("tandem/restore", Backend::restore)
    .custom_method("tandem/inlineChat", Backend::inline_chat)
    .custom_method("textDocument/inlineCompletion", Backend::inline_completion)
    .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
    .finish();
    let (client_requests, mut client_responses) = socket.split();
    let (outgoing, outgoing_rx) = mpsc::channel::<Value>(OUTGOING_QUEUE);

    let writer = tokio::spawn(write_loop(output, outgoing_rx).with_subscriber(dispatch.clone()));
    // Background tasks that end when the server does; request handlers live here too.
    let mut tasks = JoinSet::new();
    tasks.spawn(
        forward_client_requests(client_requests, outgoing.clone())
            .with_subscriber(dispatch.clone()),
    );
    if let Some(log) = options.client_log {
        tasks.spawn(
            log.forward_to(service.inner().client())
                .with_subscriber(dispatch.clone()),
        );
    }

    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut frames = FrameReader::new(input);
    let mut exit_notified = false;
    loop {
        let frame = match frames.next().await {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                debug!("input closed");
                break;
            }
            Err(err) => {
                error!("reading from the client failed: {err}");
                break;
            }
        };
        let message = match frame {
            Frame::Body(body) => decode(&body),
            Frame::Malformed(reason) => {
                warn!("skipped a malformed message: {reason}");
                Err(Response::from_error(Id::Null, Error::parse_error()))
            }
        };
        let request = match message {
            Ok(Incoming::Request(request)) => request,
            Ok(Incoming::Response(response)) => {
                if client_responses.send(response).await.is_err() {
                    debug!("dropped a client response: the server is shutting down");
                }
                continue;
            }
            Err(error_response) => {
                send(&outgoing, error_response).await;
                continue;
            }
        };

        if request.id().is_none() && sync::is_document_sync(request.method()) {
            sync::apply(service.inner(), request);
            continue;
        }
        // `LspService` only reports "not ready" while `initialize` runs, which we await inline
        // below, and it registers no waker for that case, so one poll is all it takes.
        if let Poll::Ready(Err(_exited)) = poll_fn(|cx| Poll::Ready(service.poll_ready(cx))).await {
            break;
        }
        let method = request.method().to_owned();
        let id = request.id().cloned();
        let initialize_params = if method == "initialize" {
            request.params().cloned().unwrap_or_default()
        } else {
            Value::Null
        };
        let call = service.call(request);
        if method == "exit" {
            exit_notified = true;
            break;
        }
        let is_initialize = method == "initialize";
        if is_initialize {
            // The client may send nothing else until it has the answer, and capabilities
            // (such as the position encoding) must be settled before any document arrives.
            service.inner().set_client_has_inline_completion(
                initialize_declares_inline_completion(&initialize_params),
            );
            let (patched, patched_rx) = mpsc::channel(1);
            answer(call, method, id, patched).await;
            if let Some(response) = { patched_rx }.recv().await {
                let _ = outgoing.send(with_inline_completion(response)).await;
            }
        } else {
            let Ok(permit) = in_flight.clone().acquire_owned().await else {
                break;
            };
            let respond = answer(call, method, id, outgoing.clone());
            tasks.spawn(
                async move {
                    respond.await;
                    drop(permit);
                }
                .with_subscriber(dispatch.clone()),
            );
        }
        // A finished task stays in the set until joined: editors send a request on every
        // cursor move, so an unreaped set grows for as long as the server runs.
        while let Some(finished) = tasks.try_join_next() {
            if let Err(failure) = finished {
                error!("a server task failed: {failure}");
            }
        }
    }

    let exit = ServerExit {
        shutdown_requested: service.inner().shutdown_requested(),
        exit_notified,
    };
    tasks.shutdown().await;
    drop(outgoing);
    drop(service);
    if writer.await.is_err() {
        error!("the output writer task failed");
    }
    exit
}

/// Whether `initialize`'s params declare `textDocument.inlineCompletion` (LSP 3.18).
fn initialize_declares_inline_completion(params: &Value) -> bool {
    params
        .pointer("/capabilities/textDocument/inlineCompletion")
        .is_some_and(|value| !value.is_null())
}

/// The `initialize` answer with `inlineCompletionProvider` among the capabilities (lsp-types
/// 0.94's `ServerCapabilities` has no such field).
fn with_inline_completion(mut response: Value) -> Value {
    if let Some(Value::Object(capabilities)) = response.pointer_mut("/result/capabilities") {
        capabilities.insert("inlineCompletionProvider".to_owned(), Value::Bool(true));
    }
    response
}

/// Awaits one handler and sends its response. A handler that panics answers its request with an
/// internal error instead of taking the server down.
async fn answer(
    call: impl std::future::Future<Output = Result<Option<Response>, tower_lsp::ExitedError>>,
    method: String,
    id: Option<Id>,
    outgoing: mpsc::Sender<Value>,
) {
    match AssertUnwindSafe(call).catch_unwind().await {
        Ok(Ok(Some(response))) => send(&outgoing, response).await,
        Ok(Ok(None) | Err(_)) => {}
        Err(panic) => {
            let what = panic_message(panic.as_ref());
            error!("handler for {method} panicked: {what}");
            if let Some(id) = id {
                let mut error = Error::internal_error();
                error.message = format!("internal error in {method}: {what}").into();
                send(&outgoing, Response::from_error(id, error)).await;
            }
        }
    }
}

// The error is the answer to a malformed message, sent at once; with serde_json's ordered maps
// (see the workspace's Cargo.toml) a `Response` is larger, but boxing it would buy nothing.
#[allow(clippy::result_large_err)]
fn decode(body: &[u8]) -> Result<Incoming, Response> {
    let value: Value = serde_json::from_slice(body).map_err(|err| {
        warn!("received a message that is not JSON ({err}); answered with a parse error");
        Response::from_error(Id::Null, Error::parse_error())
    })?;
    let invalid = |value: &Value, err: &dyn std::fmt::Display| {
        let id = value
            .get("id")
            .and_then(|id| serde_json::from_value::<Id>(id.clone()).ok())
            .unwrap_or(Id::Null);
        warn!("received an invalid JSON-RPC message ({err})");
        let mut error = Error::invalid_request();
        error.message = format!("invalid JSON-RPC message: {err}").into();
        Response::from_error(id, error)
    };
    let is_response = value.get("method").is_none()
        && (value.get("result").is_some() || value.get("error").is_some());
    if is_response {
        return serde_json::from_value::<Response>(value.clone())
            .map(Incoming::Response)
            .map_err(|err| invalid(&value, &err));
    }
    if !value.get("method").is_some_and(Value::is_string) {
        return Err(invalid(
            &value,
            &"expected an object with a \"method\" string",
        ));
    }
    // `"params": null` means no params (some clients send it with `shutdown`), and so does an
    // empty object for the methods that take none (lsp-mode sends `shutdown` with `{}`);
    // tower-lsp would refuse either.
    let mut value = value;
    if let Some(object) = value.as_object_mut() {
        let takes_none = object
            .get("method")
            .and_then(Value::as_str)
            .is_some_and(|method| matches!(method, "shutdown" | "exit"));
        let empty = object
            .get("params")
            .is_some_and(|params| params.as_object().is_some_and(serde_json::Map::is_empty));
        if object.get("params").is_some_and(Value::is_null) || (takes_none && empty) {
            object.remove("params");
        }
        // Tandem's own methods all take an object, and treat a missing one as empty, so that
        // `tandem/sessions` needs no `{}`.
        let ours = object
            .get("method")
            .and_then(Value::as_str)
            .is_some_and(|method| method.starts_with("tandem/"));
        if ours && !object.contains_key("params") {
            object.insert("params".to_owned(), Value::Object(serde_json::Map::new()));
        }
    }
    // Keep the id for the error answer without cloning the (possibly huge) params.
    let id = value.get("id").cloned();
    serde_json::from_value::<Request>(value)
        .map(Incoming::Request)
        .map_err(|err| {
            let mut stub = serde_json::Map::new();
            if let Some(id) = id {
                stub.insert("id".into(), id);
            }
            invalid(&Value::Object(stub), &err)
        })
}

async fn send(outgoing: &mpsc::Sender<Value>, response: Response) {
    match serde_json::to_value(response) {
        Ok(value) => {
            if outgoing.send(value).await.is_err() {
                debug!("dropped a response: the output is closed");
            }
        }
        Err(err) => error!("could not serialise a response: {err}"),
    }
}

async fn forward_client_requests(
    mut requests: impl futures::Stream<Item = Request> + Unpin,
    outgoing: mpsc::Sender<Value>,
) {
    while let Some(request) = requests.next().await {
        match serde_json::to_value(&request) {
            Ok(value) => {
                if outgoing.send(value).await.is_err() {
                    return;
                }
            }
            Err(err) => error!("could not serialise a message to the client: {err}"),
        }
    }
}

async fn write_loop<O: AsyncWrite + Unpin>(mut output: O, mut outgoing: mpsc::Receiver<Value>) {
    while let Some(message) = outgoing.recv().await {
        let body = match serde_json::to_vec(&message) {
            Ok(body) => body,
            Err(err) => {
                error!("could not encode a message: {err}");
                continue;
            }
        };
        if let Err(err) = write_frame(&mut output, &body).await {
            // The client is gone; the reader will see the input close.
            error!("writing to the client failed: {err}");
            return;
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(body: &str) -> Result<String, Value> {
        match decode(body.as_bytes()) {
            Ok(Incoming::Request(r)) => Ok(format!("request {}", r.method())),
            Ok(Incoming::Response(_)) => Ok("response".into()),
            Err(response) => Err(serde_json::to_value(response).unwrap()),
        }
    }

    #[tokio::test]
    async fn panicking_handler_answers_with_an_internal_error() {
        let (outgoing, mut sent) = mpsc::channel(1);
        let call = async { panic!("boom") };
        answer(call, "tandem/x".into(), Some(Id::Number(3)), outgoing).await;
        let response = sent.recv().await.unwrap();
        assert_eq!(response["id"], 3);
        assert_eq!(response["error"]["code"], -32603);
        assert!(
            response["error"]["message"]
                .as_str()
                .unwrap()
                .contains("boom"),
            "{response}"
        );
    }

    #[test]
    fn not_json_is_a_parse_error_with_null_id() {
        let err = decoded("{nope").unwrap_err();
        assert_eq!(err["error"]["code"], -32700);
        assert_eq!(err["id"], Value::Null);
    }

    #[test]
    fn object_without_method_is_invalid_request_keeping_id() {
        let err = decoded(r#"{"jsonrpc":"2.0","id":7}"#).unwrap_err();
        assert_eq!(err["error"]["code"], -32600);
        assert_eq!(err["id"], 7);
    }

    #[test]
    fn wrong_jsonrpc_version_is_invalid_request() {
        let err = decoded(r#"{"jsonrpc":"1.0","id":"a","method":"x"}"#).unwrap_err();
        assert_eq!(err["error"]["code"], -32600);
        assert_eq!(err["id"], "a");
    }

    #[test]
    fn null_params_count_as_no_params() {
        let Ok(Incoming::Request(request)) =
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown","params":null}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(request.params(), None);
    }

    /// Found with Emacs's lsp-mode, whose `shutdown` carries `"params": {}`: tower-lsp refused
    /// it ("Unexpected params"), so the server never shut down cleanly.
    #[test]
    fn empty_params_of_shutdown_count_as_no_params() {
        let Ok(Incoming::Request(request)) =
            decode(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown","params":{}}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(request.params(), None);
        let Ok(Incoming::Request(other)) =
            decode(br#"{"jsonrpc":"2.0","id":2,"method":"tandem/sessions","params":{}}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(other.params(), Some(&serde_json::json!({})));
    }

    #[test]
    fn requests_and_responses_are_told_apart() {
        assert_eq!(
            decoded(r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#).unwrap(),
            "request m"
        );
        assert_eq!(
            decoded(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap(),
            "response"
        );
    }
}
