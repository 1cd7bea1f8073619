//! [`TestClient`]: frames JSON-RPC like an editor, matches responses to requests, answers the
//! server's own requests, and queues everything else for the test to inspect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
    ReadHalf, WriteHalf,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::instrument::WithSubscriber;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

/// How long a test waits for an answer before failing. Only a safety net against hangs: tests
/// await the message itself and never sleep.
pub const TIMEOUT: Duration = Duration::from_secs(60);

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

pub struct TestClient {
    writer: Box<dyn AsyncWrite + Unpin + Send>,
    pending: Pending,
    /// Notifications, server requests and responses nobody waited for (e.g. parse errors).
    incoming: mpsc::UnboundedReceiver<Value>,
    next_id: i64,
    _reader: JoinHandle<()>,
}

/// A server running in this process, and the client connected to it.
pub struct InProcessServer {
    pub client: TestClient,
    pub server: JoinHandle<tandem_lsp::ServerExit>,
}

/// Starts `tandem_lsp::serve` on an in-memory pipe, with warnings forwarded to the client as
/// `window/logMessage` just as the binary does, and no user settings file.
pub fn start_in_process() -> InProcessServer {
    start_in_process_with(tandem_lsp::ServeOptions::default())
}

/// [`start_in_process`] with these options; without a `client_log`, warnings are forwarded as
/// the binary forwards them.
pub fn start_in_process_with(options: tandem_lsp::ServeOptions) -> InProcessServer {
    let (client_read, client_write, server) = serve_in_process(options);
    InProcessServer {
        client: TestClient::new(client_read, client_write),
        server,
    }
}

/// The client's ends of an in-memory pipe to a freshly started server.
pub(crate) fn serve_in_process(
    mut options: tandem_lsp::ServeOptions,
) -> (
    ReadHalf<DuplexStream>,
    WriteHalf<DuplexStream>,
    JoinHandle<tandem_lsp::ServerExit>,
) {
    let (client_side, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    let (layer, receiver) = tandem_lsp::client_log_channel();
    let dispatch = tracing::Dispatch::new(
        tracing_subscriber::registry().with(layer.with_filter(LevelFilter::WARN)),
    );
    if options.client_log.is_none() {
        options.client_log = Some(receiver);
    }
    let server = tokio::spawn(
        tandem_lsp::serve(server_read, server_write, options).with_subscriber(dispatch),
    );
    let (client_read, client_write) = tokio::io::split(client_side);
    (client_read, client_write, server)
}

impl TestClient {
    pub fn new<R, W>(read: R, write: W) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let pending: Pending = Arc::default();
        let (incoming_tx, incoming) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_loop(
            BufReader::new(read),
            pending.clone(),
            incoming_tx,
        ));
        TestClient {
            writer: Box::new(write),
            pending,
            incoming,
            next_id: 0,
            _reader: reader,
        }
    }

    /// Sends a request and waits for its response: `Ok(result)` or `Err(error object)`.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let response = self.request_raw(method, params).await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"].clone()),
        }
    }

    /// Sends a request and returns the whole response message.
    pub async fn request_raw(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        tokio::time::timeout(TIMEOUT, rx)
            .await
            .unwrap_or_else(|_| panic!("no response to {method} within {TIMEOUT:?}"))
            .unwrap_or_else(|_| panic!("connection closed before the response to {method}"))
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    pub async fn send(&mut self, message: Value) {
        self.send_body(&serde_json::to_vec(&message).unwrap()).await;
    }

    /// One correctly framed message with an arbitrary body.
    pub async fn send_body(&mut self, body: &[u8]) {
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body);
        self.send_raw(&frame).await;
    }

    /// Bytes exactly as given: for malformed frames.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// Closes the client's side of the connection (as an editor that quits does).
    pub async fn close(&mut self) {
        self.writer.shutdown().await.unwrap();
    }

    /// Waits for the next unsolicited message that `matches`, dropping others on the way.
    pub async fn expect_message(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let wait = async {
            loop {
                match self.incoming.recv().await {
                    Some(message) if matches(&message) => return message,
                    Some(_) => continue,
                    None => panic!("connection closed while waiting for {what}"),
                }
            }
        };
        tokio::time::timeout(TIMEOUT, wait)
            .await
            .unwrap_or_else(|_| panic!("no {what} within {TIMEOUT:?}"))
    }

    /// Waits for a `window/logMessage` whose text contains `needle`.
    pub async fn expect_log(&mut self, needle: &str) -> Value {
        self.expect_message(&format!("window/logMessage containing {needle:?}"), |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|s| s.contains(needle))
        })
        .await
    }

    /// `initialize` offering `encodings` (in the client's order of preference), then
    /// `initialized`. Returns the initialize result.
    pub async fn initialize(&mut self, encodings: &[&str]) -> Value {
        let result = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": null,
                    "clientInfo": {"name": "tandem-test-client", "version": "1"},
                    "capabilities": {
                        "general": {"positionEncodings": encodings},
                        "window": {"workDoneProgress": true},
                    },
                    "workspaceFolders": [{"uri": "file:///project", "name": "project"}],
                }),
            )
            .await
            .expect("initialize failed");
        self.notify("initialized", json!({})).await;
        result
    }

    pub async fn did_open(&mut self, uri: &str, version: i32, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "plaintext", "version": version, "text": text}}),
        )
        .await;
    }

    pub async fn did_change(&mut self, uri: &str, version: i32, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        )
        .await;
    }

    /// What the server holds for `uri` (`tandem/debug/document`).
    pub async fn document(&mut self, uri: &str) -> Result<Value, Value> {
        self.request("tandem/debug/document", json!({"uri": uri}))
            .await
    }

    /// `shutdown` then `exit`.
    pub async fn shutdown_and_exit(&mut self) {
        self.request("shutdown", Value::Null)
            .await
            .expect("shutdown failed");
        self.notify("exit", Value::Null).await;
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: BufReader<R>,
    pending: Pending,
    incoming: mpsc::UnboundedSender<Value>,
) {
    while let Some(message) = read_message(&mut reader).await {
        let id = message.get("id").and_then(Value::as_i64);
        let is_response = message.get("method").is_none();
        if is_response {
            if let Some(waiter) = id.and_then(|id| pending.lock().unwrap().remove(&id)) {
                let _ = waiter.send(message);
                continue;
            }
        }
        let _ = incoming.send(message);
    }
}

/// One framed message from the server; `None` once the connection is closed.
pub(crate) async fn read_message<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .trim()
                        .parse::<usize>()
                        .expect("bad Content-Length from server"),
                );
            }
        }
    }
    let mut body = vec![0; length.expect("server sent a message without Content-Length")];
    reader.read_exact(&mut body).await.ok()?;
    Some(serde_json::from_slice(&body).expect("server sent a body that is not JSON"))
}
