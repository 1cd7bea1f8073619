//! [`ModelServer`]: a scripted HTTP/1.1 model endpoint for provider tests. It speaks real TCP and
//! hand-rolled HTTP so a test controls every byte of a reply and every fault (a reset, silence),
//! and it records each request for the test to assert on. Replies are queued in order, or decided
//! per request by a responder (a programmable model); [`Reply::openai_text`] and
//! [`Reply::openai_tool_calls`] build OpenAI-style streams, [`Reply::anthropic_text`] and
//! [`Reply::anthropic_tool_calls`] Anthropic Messages streams.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// Decides the reply to a request when no pushed reply is queued: a programmable model.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync + 'static>;

/// The body of the `500` served when a test forgot to script a reply, phrased like the providers'
/// own errors so the failure surfaces as a readable provider error.
const UNSCRIPTED_BODY: &str =
    r#"{"error":{"message":"model server: no reply scripted for this request"}}"#;

/// A running server. Clones share it; the server stops when the last clone is dropped.
#[derive(Clone)]
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _accept: Arc<AbortOnDrop>,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    /// The request target as sent, query string included.
    pub path: String,
    /// Names are lowercased; order and repeats are kept as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A scripted response: the status and headers, then the body as a sequence of steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub steps: Vec<Step>,
}

/// One step of a reply body. The header block is always written before the first step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// One body chunk, written and flushed at once.
    Bytes(Vec<u8>),
    /// Wait before the next step; a client that closes meanwhile counts as a disconnect.
    Pause(Duration),
    /// Abort the connection with a TCP RST, so the client sees "connection reset".
    Reset,
    /// Send nothing more and hold the connection until the client closes it, which counts as a
    /// disconnect.
    Hang,
    /// Hold the reply until the server has received `count` requests in all (this one
    /// included), to prove that requests overlap; if they do not arrive `within`, abort the
    /// connection as `Reset` does, so that the client sees a failure.
    AwaitRequests { count: usize, within: Duration },
}

impl ModelServer {
    /// Binds `127.0.0.1` on a port the OS picks and starts accepting connections.
    pub async fn start() -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("model server: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("model server: local address");
        let (disconnects, _) = watch::channel(0);
        let (received, _) = watch::channel(0);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            disconnects,
            received,
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        ModelServer {
            addr,
            shared,
            _accept: Arc::new(AbortOnDrop(accept)),
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues one reply; replies are served in order, one per request.
    pub fn push(&self, reply: Reply) {
        self.shared.state.lock().unwrap().replies.push_back(reply);
    }

    /// Answers every request that finds the queue of pushed replies empty with `f(request)`, so a
    /// test can decide the next reply from what the client sent (e.g. the last tool result).
    pub fn respond_with(&self, f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) {
        self.shared.state.lock().unwrap().responder = Some(Arc::new(f));
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.state.lock().unwrap().requests.clone()
    }

    /// The bodies of the chat requests received so far (OpenAI's `/chat/completions` and
    /// `/responses`, Anthropic's `/messages`), as JSON, in arrival order.
    pub fn chat_requests(&self) -> Vec<serde_json::Value> {
        self.requests()
            .iter()
            .filter(|request| {
                ["/chat/completions", "/responses", "/messages"]
                    .iter()
                    .any(|path| request.path.ends_with(path))
            })
            .map(RecordedRequest::json)
            .collect()
    }

    pub fn request_count(&self) -> usize {
        self.shared.state.lock().unwrap().requests.len()
    }

    /// Connections the client closed while the server was still sending or holding a response.
    pub fn disconnect_count(&self) -> usize {
        *self.shared.disconnects.borrow()
    }

    /// Resolves once `count` requests have been received (and recorded).
    pub async fn wait_for_requests(&self, count: usize) {
        let mut seen = self.shared.received.subscribe();
        // The sender lives in `self.shared`, so the channel cannot close while we wait.
        seen.wait_for(|n| *n >= count)
            .await
            .expect("model server: request counter closed");
    }

    /// Resolves once `count` connections were closed by the client while the server was still
    /// sending or holding a response.
    pub async fn wait_for_disconnects(&self, count: usize) {
        let mut seen = self.shared.disconnects.subscribe();
        // The sender lives in `self.shared`, so the channel cannot close while we wait.
        seen.wait_for(|n| *n >= count)
            .await
            .expect("model server: disconnect counter closed");
    }
}

impl RecordedRequest {
    /// The first value of the header `name`, matched case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON; panics, showing the body, if it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "model server: body of {} {} is not JSON ({err}): {:?}",
                self.method,
                self.path,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

impl Reply {
    /// `200` with `content-type: text/event-stream` and the whole body in one chunk.
    pub fn sse(body: impl Into<Vec<u8>>) -> Reply {
        Reply::sse_chunks(vec![body.into()])
    }

    /// `200` with `content-type: text/event-stream`, one chunk per element.
    pub fn sse_chunks(chunks: Vec<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            steps: chunks.into_iter().map(Step::Bytes).collect(),
        }
    }

    /// `status` with `content-type: application/json` and `body` in one chunk.
    pub fn json(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            steps: vec![Step::Bytes(body.as_bytes().to_vec())],
        }
    }

    /// `status` with an empty body.
    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// An OpenAI chat-completions stream that answers with `text` and stops.
    pub fn openai_text(text: &str) -> Reply {
        Reply::sse(openai_sse(&[
            openai_delta(
                serde_json::json!({"role": "assistant", "content": text}),
                serde_json::Value::Null,
            ),
            openai_delta(serde_json::json!({}), serde_json::json!("stop")),
        ]))
    }

    /// An OpenAI chat-completions stream that calls the tools `calls` (`(id, name, arguments)`),
    /// in parallel when there are several, and stops for their results.
    pub fn openai_tool_calls(calls: &[(&str, &str, serde_json::Value)]) -> Reply {
        let calls: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(index, (id, name, arguments))| {
                serde_json::json!({
                    "index": index,
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                })
            })
            .collect();
        Reply::sse(openai_sse(&[
            openai_delta(
                serde_json::json!({"role": "assistant", "tool_calls": calls}),
                serde_json::Value::Null,
            ),
            openai_delta(serde_json::json!({}), serde_json::json!("tool_calls")),
        ]))
    }

    /// An Anthropic Messages stream that answers with `text` and ends the turn.
    pub fn anthropic_text(text: &str) -> Reply {
        let block = serde_json::json!({"type": "text", "text": ""});
        let delta = serde_json::json!({"type": "text_delta", "text": text});
        Reply::sse(anthropic_sse(&[(block, delta)], "end_turn"))
    }

    /// An Anthropic Messages stream that calls the tools `calls` (`(id, name, input)`), one
    /// `tool_use` block each, and stops for their results.
    pub fn anthropic_tool_calls(calls: &[(&str, &str, serde_json::Value)]) -> Reply {
        let blocks: Vec<_> = calls
            .iter()
            .map(|(id, name, input)| {
                (
                    serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    serde_json::json!({"type": "input_json_delta", "partial_json": input.to_string()}),
                )
            })
            .collect();
        Reply::sse(anthropic_sse(&blocks, "tool_use"))
    }

    /// An OpenAI Responses stream that answers with `text`.
    pub fn responses_text(text: &str) -> Reply {
        Reply::responses(&[serde_json::json!({
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        })])
    }

    /// An OpenAI Responses stream that calls the tools `calls` (`(call_id, name, arguments)`),
    /// one `function_call` item each.
    pub fn responses_tool_calls(calls: &[(&str, &str, serde_json::Value)]) -> Reply {
        let items: Vec<serde_json::Value> = calls
            .iter()
            .map(|(id, name, arguments)| {
                serde_json::json!({
                    "type": "function_call", "call_id": id, "name": name,
                    "arguments": arguments.to_string(),
                })
            })
            .collect();
        Reply::responses(&items)
    }

    /// An OpenAI Responses stream of the output items `items`, as the API streams them: each
    /// added empty, its text, summary or arguments in deltas, then done whole; then
    /// `response.completed` with usage.
    pub fn responses(items: &[serde_json::Value]) -> Reply {
        Reply::responses_with_usage(items, 10, 5)
    }

    /// `responses`, reporting `input_tokens` and `output_tokens` as the request's usage.
    pub fn responses_with_usage(
        items: &[serde_json::Value],
        input_tokens: u64,
        output_tokens: u64,
    ) -> Reply {
        Reply::sse(responses_sse(items, input_tokens, output_tokens))
    }

    /// This OpenAI stream with a usage chunk before its `[DONE]`, as servers send when asked
    /// with `stream_options.include_usage`.
    pub fn openai_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Reply {
        let usage = serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        });
        const DONE: &[u8] = b"data: [DONE]\n\n";
        for step in self.steps.iter_mut().rev() {
            if let Step::Bytes(bytes) = step {
                if bytes.ends_with(DONE) {
                    bytes.truncate(bytes.len() - DONE.len());
                    bytes.extend_from_slice(format!("data: {usage}\n\n").as_bytes());
                    bytes.extend_from_slice(DONE);
                    return self;
                }
            }
        }
        panic!("openai_usage: no OpenAI stream ending with [DONE] to add usage to");
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn step(mut self, step: Step) -> Reply {
        self.steps.push(step);
        self
    }
}

/// `data:` events for `chunks`, then the `[DONE]` marker OpenAI ends its streams with.
fn responses_sse(items: &[serde_json::Value], input_tokens: u64, output_tokens: u64) -> String {
    use serde_json::json;
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": "resp_test", "status": "in_progress", "output": []}}),
    ];
    for (index, item) in items.iter().enumerate() {
        let mut added = item.clone();
        let id = format!("item_{index}");
        added["id"] = json!(id);
        match item["type"].as_str() {
            Some("message") => added["content"] = json!([]),
            Some("reasoning") => added["summary"] = json!([]),
            Some("function_call") => added["arguments"] = json!(""),
            _ => {}
        }
        if let Some(object) = added.as_object_mut() {
            object.remove("encrypted_content");
        }
        events.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        );
        match item["type"].as_str() {
            Some("message") => {
                for (part, content) in item["content"].as_array().into_iter().flatten().enumerate()
                {
                    events.push(json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": part, "delta": content["text"]}));
                }
            }
            Some("reasoning") => {
                for (part, summary) in item["summary"].as_array().into_iter().flatten().enumerate()
                {
                    events.push(json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": index, "summary_index": part, "delta": summary["text"]}));
                }
            }
            Some("function_call") => {
                events.push(json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": item["arguments"]}));
                events.push(json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "arguments": item["arguments"]}));
            }
            _ => {}
        }
        let mut done = item.clone();
        done["id"] = json!(id);
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": done}),
        );
    }
    events.push(json!({"type": "response.completed", "response": {
        "id": "resp_test", "status": "completed", "output": items,
        "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input_tokens + output_tokens},
    }}));
    events
        .iter()
        .enumerate()
        .map(|(sequence, event)| {
            let mut event = event.clone();
            event["sequence_number"] = json!(sequence);
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn openai_sse(chunks: &[serde_json::Value]) -> String {
    let mut body: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// `message_start`, then each content block (start, one delta, stop), then `message_delta` with
/// `stop_reason` and the output usage, and `message_stop`.
fn anthropic_sse(blocks: &[(serde_json::Value, serde_json::Value)], stop_reason: &str) -> String {
    let mut events = vec![serde_json::json!({
        "type": "message_start",
        "message": {
            "id": "msg_test", "type": "message", "role": "assistant", "model": "m",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1},
        },
    })];
    for (index, (block, delta)) in blocks.iter().enumerate() {
        events.push(serde_json::json!({"type": "content_block_start", "index": index, "content_block": block}));
        events.push(
            serde_json::json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        events.push(serde_json::json!({"type": "content_block_stop", "index": index}));
    }
    events.push(serde_json::json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": 10},
    }));
    events.push(serde_json::json!({"type": "message_stop"}));
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn openai_delta(delta: serde_json::Value, finish_reason: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

struct Shared {
    state: Mutex<State>,
    disconnects: watch::Sender<usize>,
    /// How many requests were recorded, for tests that wait for the next one.
    received: watch::Sender<usize>,
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    responder: Option<Responder>,
    requests: Vec<RecordedRequest>,
}

impl Shared {
    fn count_disconnect(&self) {
        self.disconnects.send_modify(|n| *n += 1);
    }
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Connection tasks live in a `JoinSet` owned by this task, so aborting it on drop also tears
/// down every open connection instead of leaving hung ones behind.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                // Headers and body chunks go out as separate writes; without this, Nagle's
                // algorithm meets the client's delayed ACK and every response waits ~40 ms.
                let _ = stream.set_nodelay(true);
                connections.spawn(serve_connection(stream, Arc::clone(&shared)));
            }
            // Accept errors are per-connection (e.g. the peer gave up); the listener still works.
            Err(_) => continue,
        }
        while connections.try_join_next().is_some() {}
    }
}

/// How a connection stands after a reply.
enum After {
    KeepAlive,
    Close,
    Reset,
}

async fn serve_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    // Bytes read past the end of one request belong to the next one on this connection.
    let mut buf = Vec::new();
    loop {
        let request = match read_request(&mut stream, &mut buf).await {
            Ok(Some(request)) => request,
            Ok(None) | Err(_) => return,
        };
        let wants_close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        // Recorded before replying, so a test that has its reply also sees its request.
        let (reply, responder) = {
            let mut state = shared.state.lock().unwrap();
            state.requests.push(request.clone());
            let count = state.requests.len();
            shared.received.send_replace(count);
            (state.replies.pop_front(), state.responder.clone())
        };
        // The responder runs outside the lock: it may well look at `requests()` itself.
        let reply = match (reply, responder) {
            (Some(reply), _) => reply,
            (None, Some(responder)) => responder(&request),
            (None, None) => Reply::json(500, UNSCRIPTED_BODY),
        };
        match write_reply(&mut stream, &mut buf, reply, &shared).await {
            After::KeepAlive if !wants_close => {}
            After::KeepAlive | After::Close => return,
            After::Reset => {
                // A zero linger makes the close below send RST instead of FIN.
                let _ = stream.set_zero_linger();
                drop(stream);
                return;
            }
        }
    }
}

/// Reads one request; `None` when the client closed the connection before a complete one.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Result<Option<RecordedRequest>, String> {
    loop {
        if !buf.is_empty() {
            if let Some((request, used)) = parse_request(buf)? {
                buf.drain(..used);
                return Ok(Some(request));
            }
        }
        match stream.read_buf(buf).await {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(err) => return Err(err.to_string()),
        }
    }
}

/// Parses a complete request from the front of `buf`, returning it and the bytes it used, or
/// `None` if more bytes are needed.
fn parse_request(buf: &[u8]) -> Result<Option<(RecordedRequest, usize)>, String> {
    let mut header_slots = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut header_slots);
    let head_len = match parsed.parse(buf).map_err(|err| err.to_string())? {
        httparse::Status::Complete(len) => len,
        httparse::Status::Partial => return Ok(None),
    };
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let mut request = RecordedRequest {
        method: parsed.method.unwrap_or_default().to_owned(),
        path: parsed.path.unwrap_or_default().to_owned(),
        headers,
        body: Vec::new(),
    };
    let rest = &buf[head_len..];
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body_len = if chunked {
        match decode_chunked(rest)? {
            Some((body, used)) => {
                request.body = body;
                used
            }
            None => return Ok(None),
        }
    } else {
        let len = match request.header("content-length") {
            Some(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|err| format!("bad content-length {v:?}: {err}"))?,
            None => 0,
        };
        if rest.len() < len {
            return Ok(None);
        }
        request.body = rest[..len].to_vec();
        len
    };
    Ok(Some((request, head_len + body_len)))
}

/// Decodes a chunked body from the front of `buf`, returning it and the bytes it used (trailers
/// included, and dropped), or `None` if more bytes are needed.
fn decode_chunked(buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let mut body = Vec::new();
    let mut pos = 0;
    loop {
        let Some(line_len) = find_crlf(&buf[pos..]) else {
            return Ok(None);
        };
        let line = String::from_utf8_lossy(&buf[pos..pos + line_len]);
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|err| format!("bad chunk size {size_text:?}: {err}"))?;
        pos += line_len + 2;
        if size == 0 {
            // Trailer lines, if any, end at an empty line.
            loop {
                let Some(line_len) = find_crlf(&buf[pos..]) else {
                    return Ok(None);
                };
                pos += line_len + 2;
                if line_len == 0 {
                    return Ok(Some((body, pos)));
                }
            }
        }
        if buf.len() < pos + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size + 2;
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

async fn write_reply(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    reply: Reply,
    shared: &Shared,
) -> After {
    // These statuses have no body by definition; a chunked terminator after one would be read
    // as garbage at the start of the next response on the connection.
    let bodiless = matches!(reply.status, 100..=199 | 204 | 304);
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !bodiless {
        head.push_str("transfer-encoding: chunked\r\n");
    }
    head.push_str("\r\n");
    if write_flushed(stream, head.as_bytes()).await.is_err() {
        shared.count_disconnect();
        return After::Close;
    }

    for step in reply.steps {
        match step {
            // An empty chunk would be the terminator and end the body early.
            Step::Bytes(bytes) if bytes.is_empty() || bodiless => {}
            Step::Bytes(bytes) => {
                let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                chunk.extend_from_slice(&bytes);
                chunk.extend_from_slice(b"\r\n");
                if write_flushed(stream, &chunk).await.is_err() {
                    shared.count_disconnect();
                    return After::Close;
                }
            }
            Step::Pause(duration) => {
                if !pause(stream, buf, duration).await {
                    shared.count_disconnect();
                    return After::Close;
                }
            }
            Step::Reset => return After::Reset,
            Step::AwaitRequests { count, within } => {
                let mut seen = shared.received.subscribe();
                let arrived = tokio::time::timeout(within, seen.wait_for(|n| *n >= count)).await;
                if !matches!(arrived, Ok(Ok(_))) {
                    return After::Reset;
                }
            }
            Step::Hang => {
                wait_for_close(stream).await;
                shared.count_disconnect();
                return After::Close;
            }
        }
    }

    if !bodiless && write_flushed(stream, b"0\r\n\r\n").await.is_err() {
        shared.count_disconnect();
        return After::Close;
    }
    After::KeepAlive
}

async fn write_flushed(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Waits `duration` while watching the socket, so a client that gives up mid-pause is noticed
/// then rather than at the next write. Returns `false` if the client closed the connection.
async fn pause(stream: &mut TcpStream, buf: &mut Vec<u8>, duration: Duration) -> bool {
    let sleep = tokio::time::sleep(duration);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            () = &mut sleep => return true,
            // `read_buf` is cancel-safe, and anything the client sends early is kept for the next
            // request.
            read = stream.read_buf(buf) => match read {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            },
        }
    }
}

/// Returns once the client closed the connection; whatever it sends meanwhile is discarded, since
/// this connection will not serve another request.
async fn wait_for_close(stream: &mut TcpStream) {
    let mut scratch = [0u8; 4096];
    loop {
        match stream.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TIMEOUT;

    async fn connect(server: &ModelServer) -> TcpStream {
        TcpStream::connect(server.addr).await.unwrap()
    }

    fn post(path: &str, body: &str) -> String {
        format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Authorization: Bearer sk-test\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    /// Reads one complete chunked response (the server always ends bodies with `0\r\n\r\n`).
    async fn read_response(stream: &mut TcpStream) -> String {
        let mut buf = Vec::new();
        tokio::time::timeout(TIMEOUT, async {
            while !buf.ends_with(b"0\r\n\r\n") {
                let n = stream.read_buf(&mut buf).await.unwrap();
                assert!(n > 0, "server closed mid-response: {buf:?}");
            }
        })
        .await
        .expect("timed out reading a response");
        String::from_utf8(buf).unwrap()
    }

    #[tokio::test]
    async fn sse_reply_is_chunked_and_request_is_recorded() {
        let server = ModelServer::start().await;
        server.push(
            Reply::sse_chunks(vec![
                b"data: one\n\n".to_vec(),
                b"data: [DONE]\n\n".to_vec(),
            ])
            .header("x-request-id", "req-1"),
        );
        let mut stream = connect(&server).await;
        let body = r#"{"model":"m","stream":true}"#;
        stream
            .write_all(post("/v1/chat/completions?beta=1", body).as_bytes())
            .await
            .unwrap();

        let response = read_response(&mut stream).await;
        assert_eq!(
            response,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-request-id: req-1\r\n\
             transfer-encoding: chunked\r\n\r\n\
             b\r\ndata: one\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/chat/completions?beta=1");
        assert_eq!(request.header("AUTHORIZATION"), Some("Bearer sk-test"));
        assert!(request.headers.iter().any(|(n, _)| n == "content-type"));
        assert_eq!(
            request.json(),
            serde_json::json!({"model": "m", "stream": true})
        );
    }

    #[tokio::test]
    async fn keep_alive_connection_gets_replies_in_order() {
        let server = ModelServer::start().await;
        server.push(Reply::json(200, r#"{"n":1}"#));
        server.push(Reply::json(429, r#"{"n":2}"#).header("retry-after", "0"));
        let mut stream = connect(&server).await;

        stream
            .write_all(post("/first", "{}").as_bytes())
            .await
            .unwrap();
        let first = read_response(&mut stream).await;
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(first.contains("7\r\n{\"n\":1}\r\n"), "{first}");

        stream
            .write_all(post("/second", "{}").as_bytes())
            .await
            .unwrap();
        let second = read_response(&mut stream).await;
        assert!(
            second.starts_with("HTTP/1.1 429 Too Many Requests\r\n"),
            "{second}"
        );
        assert!(second.contains("retry-after: 0\r\n"), "{second}");
        assert!(second.contains("7\r\n{\"n\":2}\r\n"), "{second}");

        let paths: Vec<_> = server.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/first", "/second"]);
        assert_eq!(server.request_count(), 2);
    }

    #[tokio::test]
    async fn chunked_request_body_is_decoded() {
        let server = ModelServer::start().await;
        server.push(Reply::status(204));
        server.push(Reply::status(200));
        let mut stream = connect(&server).await;
        stream
            .write_all(
                b"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
                  4;ext=1\r\n{\"a\"\r\n4\r\n:1}\n\r\n0\r\nx-trailer: t\r\n\r\n",
            )
            .await
            .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            assert!(stream.read_buf(&mut head).await.unwrap() > 0);
        }
        // No body framing on a 204, so the next response starts right after the head.
        assert_eq!(head, b"HTTP/1.1 204 No Content\r\n\r\n");
        stream
            .write_all(b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let next = read_response(&mut stream).await;
        assert!(next.starts_with("HTTP/1.1 200 OK\r\n"), "{next}");

        let requests = server.requests();
        assert_eq!(requests[0].json(), serde_json::json!({"a": 1}));
        assert_eq!(requests[1].method, "GET");
        assert!(requests[1].body.is_empty());
    }

    #[tokio::test]
    async fn unscripted_request_gets_500() {
        let server = ModelServer::start().await;
        let mut stream = connect(&server).await;
        stream
            .write_all(post("/v1/messages", "{}").as_bytes())
            .await
            .unwrap();
        let response = read_response(&mut stream).await;
        assert!(
            response.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
            "{response}"
        );
        assert!(response.contains(UNSCRIPTED_BODY), "{response}");
        assert_eq!(server.request_count(), 1);
    }

    #[tokio::test]
    async fn responder_answers_once_the_queue_is_empty() {
        let server = ModelServer::start().await;
        server.push(Reply::json(200, r#"{"queued":true}"#));
        server
            .respond_with(|request| Reply::json(200, &format!(r#"{{"path":"{}"}}"#, request.path)));
        let mut stream = connect(&server).await;
        for path in ["/a", "/b", "/c"] {
            stream.write_all(post(path, "{}").as_bytes()).await.unwrap();
            let response = read_response(&mut stream).await;
            let expected = if path == "/a" {
                r#"{"queued":true}"#.to_owned()
            } else {
                format!(r#"{{"path":"{path}"}}"#)
            };
            assert!(response.contains(&expected), "{response}");
        }
        tokio::time::timeout(TIMEOUT, server.wait_for_requests(3))
            .await
            .expect("three requests were recorded");
    }

    /// The payloads of the `data:` events of an SSE body, `[DONE]` included.
    fn sse_data(reply: &Reply) -> Vec<String> {
        let Step::Bytes(bytes) = &reply.steps[0] else {
            panic!("not a one-chunk reply: {reply:?}");
        };
        String::from_utf8(bytes.clone())
            .unwrap()
            .split("\n\n")
            .filter_map(|event| event.strip_prefix("data: "))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn openai_helpers_stream_text_and_tool_calls() {
        let text = sse_data(&Reply::openai_text("Hi"));
        assert_eq!(text.len(), 3);
        let first: serde_json::Value = serde_json::from_str(&text[0]).unwrap();
        assert_eq!(first["choices"][0]["delta"]["content"], "Hi");
        let last: serde_json::Value = serde_json::from_str(&text[1]).unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(text[2], "[DONE]");

        let calls = sse_data(&Reply::openai_tool_calls(&[
            ("c1", "read_file", serde_json::json!({"path": "a"})),
            ("c2", "grep", serde_json::json!({"pattern": "x"})),
        ]));
        let first: serde_json::Value = serde_json::from_str(&calls[0]).unwrap();
        let tool_calls = &first["choices"][0]["delta"]["tool_calls"];
        assert_eq!(tool_calls[1]["index"], 1);
        assert_eq!(tool_calls[1]["id"], "c2");
        assert_eq!(tool_calls[0]["function"]["name"], "read_file");
        assert_eq!(tool_calls[0]["function"]["arguments"], r#"{"path":"a"}"#);
        let last: serde_json::Value = serde_json::from_str(&calls[1]).unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");

        let counted = sse_data(&Reply::openai_text("Hi").openai_usage(1200, 7));
        assert_eq!(counted.len(), 4);
        let usage: serde_json::Value = serde_json::from_str(&counted[2]).unwrap();
        assert_eq!(usage["usage"]["prompt_tokens"], 1200);
        assert_eq!(usage["usage"]["completion_tokens"], 7);
        assert_eq!(counted[3], "[DONE]");
    }

    #[test]
    fn anthropic_helpers_stream_named_events_with_usage() {
        let Step::Bytes(bytes) = &Reply::anthropic_tool_calls(&[(
            "toolu_1",
            "read_file",
            serde_json::json!({"path": "a"}),
        )])
        .steps[0] else {
            panic!("not a one-chunk reply");
        };
        let body = String::from_utf8(bytes.clone()).unwrap();
        let names: Vec<&str> = body
            .lines()
            .filter_map(|line| line.strip_prefix("event: "))
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let data: Vec<serde_json::Value> = body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap())
            .collect();
        assert_eq!(data[1]["content_block"]["name"], "read_file");
        assert_eq!(data[2]["delta"]["partial_json"], r#"{"path":"a"}"#);
        assert_eq!(data[4]["delta"]["stop_reason"], "tool_use");
        assert_eq!(data[4]["usage"]["output_tokens"], 10);
        let Step::Bytes(text) = &Reply::anthropic_text("Hi").steps[0] else {
            panic!("not a one-chunk reply");
        };
        let text = String::from_utf8(text.clone()).unwrap();
        assert!(
            text.contains(r#""delta":{"type":"text_delta","text":"Hi"}"#),
            "{text}"
        );
        assert!(text.contains(r#""stop_reason":"end_turn""#), "{text}");
    }

    #[tokio::test]
    async fn hang_counts_a_disconnect_when_the_client_drops() {
        let server = ModelServer::start().await;
        server.push(Reply::sse("data: partial\n\n").step(Step::Hang));
        let mut stream = connect(&server).await;
        stream
            .write_all(post("/hang", "{}").as_bytes())
            .await
            .unwrap();
        let mut buf = Vec::new();
        while !buf.ends_with(b"data: partial\n\n\r\n") {
            assert!(stream.read_buf(&mut buf).await.unwrap() > 0);
        }
        drop(stream);
        tokio::time::timeout(TIMEOUT, server.wait_for_disconnects(1))
            .await
            .expect("the dropped client was never counted");
    }

    #[tokio::test]
    async fn pause_counts_a_disconnect_when_the_client_drops() {
        let server = ModelServer::start().await;
        server.push(
            Reply::sse("data: first\n\n")
                .step(Step::Pause(TIMEOUT * 10))
                .step(Step::Bytes(b"data: never\n\n".to_vec())),
        );
        let mut stream = connect(&server).await;
        stream
            .write_all(post("/pause", "{}").as_bytes())
            .await
            .unwrap();
        let mut buf = Vec::new();
        while !buf.ends_with(b"data: first\n\n\r\n") {
            assert!(stream.read_buf(&mut buf).await.unwrap() > 0);
        }
        drop(stream);
        tokio::time::timeout(TIMEOUT, server.wait_for_disconnects(1))
            .await
            .expect("the dropped client was never counted");
    }

    #[tokio::test]
    async fn reset_makes_the_client_read_fail() {
        let server = ModelServer::start().await;
        server.push(Reply::sse("data: partial\n\n").step(Step::Reset));
        let mut stream = connect(&server).await;
        stream
            .write_all(post("/reset", "{}").as_bytes())
            .await
            .unwrap();
        let mut buf = Vec::new();
        let err = tokio::time::timeout(TIMEOUT, async {
            loop {
                match stream.read_buf(&mut buf).await {
                    Ok(0) => panic!("clean close instead of a reset after {buf:?}"),
                    Ok(_) => {}
                    Err(err) => return err,
                }
            }
        })
        .await
        .expect("timed out waiting for the reset");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    }
}
