//! The HTTP wire formats (OpenAI's Chat Completions and Responses, Anthropic, Gemini) against a
//! scripted model server on 127.0.0.1: real TCP, real
//! HTTP/1.1, real SSE. Each provider answers the recorded responses in
//! `tests/fixtures/providers/<provider>/`, and goes through the same fault matrix: error statuses,
//! resets, malformed and truncated streams, silence and cancellation, each checked for the typed
//! error (or the successful retry) and for the number of requests the retry policy allows.
//! Then the caps on a response (bytes, time, error bodies), slow fragments that must not time
//! out, and what a refused key tells the user, through the API and through `tandem ask`.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tandem_providers::{
    ApiKey, CancellationToken, ChatRequest, Message, Model, ModelConfig, OpenAiApi, Part,
    ProviderError, ProviderKind, Response, ResponseLimit, Result, RetryPolicy, Role, StreamEvent,
    ToolCall, ToolDeclaration, ToolResult,
};
use tandem_test_support::{ModelServer, Reply, Step, TIMEOUT};

use super::ask::Setup;
use super::headless::{self, Run};

/// The wire format an API speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wire {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

/// What differs between the APIs, for the tests.
#[derive(Clone, Copy)]
struct Api {
    name: &'static str,
    provider: ProviderKind,
    wire: Wire,
    /// Appended to the server's URL to make the base URL.
    base_path: &'static str,
    /// The path a request for model `test-model` goes to.
    endpoint: &'static str,
    key_header: &'static str,
    key_prefix: &'static str,
    bad_request: &'static str,
    context_exceeded: &'static str,
    /// The provider's "overloaded" answer: status and body.
    overloaded: (u16, &'static str),
    /// The kind of error the provider's recorded mid-stream error event is.
    error_event: &'static str,
}

const OPENAI: Api = Api {
    name: "openai",
    provider: ProviderKind::OpenAi,
    wire: Wire::Chat,
    base_path: "/v1",
    endpoint: "/v1/chat/completions",
    key_header: "authorization",
    key_prefix: "Bearer ",
    bad_request: r#"{"error": {"message": "Invalid value for 'temperature'.", "type": "invalid_request_error", "param": "temperature", "code": null}}"#,
    context_exceeded: r#"{"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}"#,
    overloaded: (
        503,
        r#"{"error": {"message": "The server is overloaded, please try again later.", "type": "server_error", "code": null}}"#,
    ),
    error_event: "server",
};

const RESPONSES: Api = Api {
    name: "responses",
    provider: ProviderKind::OpenAi,
    wire: Wire::Responses,
    base_path: "/v1",
    endpoint: "/v1/responses",
    key_header: "authorization",
    key_prefix: "Bearer ",
    bad_request: r#"{"error": {"message": "Unsupported parameter: 'temperature' is not supported with this model.", "type": "invalid_request_error", "param": "temperature", "code": "unsupported_parameter"}}"#,
    context_exceeded: r#"{"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}"#,
    overloaded: (
        503,
        r#"{"error": {"message": "The server is overloaded, please try again later.", "type": "server_error", "code": null}}"#,
    ),
    error_event: "server",
};

const ANTHROPIC: Api = Api {
    name: "anthropic",
    provider: ProviderKind::Anthropic,
    wire: Wire::Anthropic,
    base_path: "",
    endpoint: "/v1/messages",
    key_header: "x-api-key",
    key_prefix: "",
    bad_request: r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "temperature: range: 0..1"}}"#,
    context_exceeded: r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}"#,
    overloaded: (
        529,
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
    ),
    error_event: "overloaded",
};

const GEMINI: Api = Api {
    name: "gemini",
    provider: ProviderKind::Gemini,
    wire: Wire::Gemini,
    base_path: "/v1beta",
    endpoint: "/v1beta/models/test-model:streamGenerateContent?alt=sse",
    key_header: "x-goog-api-key",
    key_prefix: "",
    bad_request: r#"{"error": {"code": 400, "message": "Invalid value at 'generation_config.temperature'", "status": "INVALID_ARGUMENT"}}"#,
    context_exceeded: r#"{"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}"#,
    overloaded: (
        503,
        r#"{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}"#,
    ),
    error_event: "overloaded",
};

const APIS: [Api; 4] = [OPENAI, RESPONSES, ANTHROPIC, GEMINI];

fn key(api: Api) -> String {
    format!("sk-test-{}-5ecret-k3y", api.name)
}

fn fixture(api: Api, case: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/providers/{}/{case}.sse",
        env!("CARGO_MANIFEST_DIR"),
        api.name
    );
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn expected_events(api: Api, case: &str) -> String {
    let path = format!(
        "{}/../../tests/fixtures/providers/{}/{case}.events",
        env!("CARGO_MANIFEST_DIR"),
        api.name
    );
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn config(api: Api, server: &ModelServer) -> ModelConfig {
    let mut config = ModelConfig::new(
        api.provider,
        "test-model",
        format!("{}{}", server.url(), api.base_path),
    );
    config.id = format!("{}-test", api.name);
    if api.wire == Wire::Responses {
        config.api = OpenAiApi::Responses;
    }
    config.api_key = Some(ApiKey::new(key(api)));
    config.retry = RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(2),
    };
    config.idle_timeout = Duration::from_secs(10);
    config
}

/// The request every test sends: it has history with a tool round trip, so the recorded
/// bodies show how each API pairs calls and results.
fn request() -> ChatRequest {
    ChatRequest {
        system: "You are Tandem.".into(),
        messages: vec![
            Message::user("What is in a.txt?"),
            Message {
                role: Role::Assistant,
                parts: vec![Part::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "a.txt"}),
                    signature: None,
                })],
            },
            Message {
                role: Role::User,
                parts: vec![Part::ToolResult(ToolResult {
                    call_id: "call_1".into(),
                    name: "read_file".into(),
                    content: "hello".into(),
                    is_error: false,
                })],
            },
        ],
        tools: vec![ToolDeclaration {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }],
        ..ChatRequest::default()
    }
}

/// `future`'s output, or a failure naming `what` if it takes longer than `TIMEOUT`: a test that
/// waits for something that never happens fails instead of hanging.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(TIMEOUT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing after {TIMEOUT:?}"))
}

async fn run(model: &Model) -> Vec<Result<StreamEvent>> {
    within(
        "the model's response stream never ended",
        model.stream(request(), CancellationToken::new()).collect(),
    )
    .await
}

fn render(events: &[Result<StreamEvent>]) -> String {
    events
        .iter()
        .map(|event| match event {
            Ok(event) => serde_json::to_string(event).unwrap() + "\n",
            Err(error) => format!("error {}: {error}\n", error.kind()),
        })
        .collect()
}

fn outcome(events: &[Result<StreamEvent>]) -> std::result::Result<Response, ProviderError> {
    let mut response = Response::default();
    for event in events {
        response.push(event.as_ref().map_err(Clone::clone)?);
    }
    Ok(response)
}

#[tokio::test]
async fn recorded_responses_stream_through_the_internal_model() {
    for api in APIS {
        for case in ["text", "tool_call", "parallel_tool_calls", "thoughts"] {
            let server = ModelServer::start().await;
            server.push(Reply::sse(fixture(api, case)));
            let events = run(&Model::new(config(api, &server)).unwrap()).await;
            assert_eq!(
                render(&events),
                expected_events(api, case),
                "{} {case}",
                api.name
            );
            let response = outcome(&events).unwrap();
            match case {
                "text" => {
                    assert!(
                        response.message.text().contains('🦀'),
                        "{} {case}",
                        api.name
                    );
                    let usage = response.usage.unwrap();
                    assert!(
                        usage.input_tokens > 0 && usage.output_tokens > 0,
                        "{} {case}",
                        api.name
                    );
                    assert!(
                        usage.cached_input_tokens > 0,
                        "{} reports cached tokens",
                        api.name
                    );
                }
                "tool_call" => assert_eq!(response.message.tool_calls().count(), 1, "{}", api.name),
                "parallel_tool_calls" => {
                    assert!(response.message.tool_calls().count() >= 2, "{}", api.name)
                }
                _ => assert!(
                    response
                        .message
                        .parts
                        .iter()
                        .any(|part| matches!(part, Part::Thought { .. })),
                    "{} thoughts",
                    api.name
                ),
            }

            let requests = server.requests();
            assert_eq!(requests.len(), 1);
            let sent = &requests[0];
            assert_eq!(
                (sent.method.as_str(), sent.path.as_str()),
                ("POST", api.endpoint),
                "{}",
                api.name
            );
            assert_eq!(
                sent.header(api.key_header),
                Some(format!("{}{}", api.key_prefix, key(api)).as_str())
            );
            assert_eq!(sent.header("accept"), Some("text/event-stream"));
            if api.provider == ProviderKind::Anthropic {
                assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
            }
        }
    }
}

#[tokio::test]
async fn a_tool_result_round_trip_is_paired_the_way_each_api_wants() {
    for api in APIS {
        let server = ModelServer::start().await;
        server.push(Reply::sse(fixture(api, "text")));
        run(&Model::new(config(api, &server)).unwrap()).await;
        let body = server.requests()[0].json();
        match api.wire {
            Wire::Responses => {
                let input = body["input"].as_array().unwrap();
                assert_eq!(body["instructions"], "You are Tandem.");
                assert_eq!(
                    input[1],
                    json!({"type": "function_call", "call_id": "call_1", "name": "read_file",
                           "arguments": r#"{"path":"a.txt"}"#})
                );
                assert_eq!(
                    input[2],
                    json!({"type": "function_call_output", "call_id": "call_1", "output": "hello"})
                );
                assert_eq!(body["store"], false);
            }
            Wire::Chat => {
                let messages = body["messages"].as_array().unwrap();
                assert_eq!(
                    messages[0],
                    json!({"role": "system", "content": "You are Tandem."})
                );
                assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
                assert_eq!(
                    messages[2]["tool_calls"][0]["function"]["arguments"],
                    r#"{"path":"a.txt"}"#
                );
                assert_eq!(
                    messages[3],
                    json!({"role": "tool", "tool_call_id": "call_1", "content": "hello"})
                );
                assert_eq!(body["stream_options"], json!({"include_usage": true}));
            }
            Wire::Anthropic => {
                let messages = body["messages"].as_array().unwrap();
                assert_eq!(messages[1]["content"][0]["type"], "tool_use");
                assert_eq!(messages[1]["content"][0]["id"], "call_1");
                assert_eq!(messages[2]["content"][0]["type"], "tool_result");
                assert_eq!(messages[2]["content"][0]["tool_use_id"], "call_1");
                assert_eq!(body["stream"], true);
            }
            Wire::Gemini => {
                let contents = body["contents"].as_array().unwrap();
                assert_eq!(contents[1]["role"], "model");
                assert_eq!(contents[1]["parts"][0]["functionCall"]["name"], "read_file");
                assert_eq!(
                    contents[2]["parts"][0]["functionResponse"]["name"],
                    "read_file"
                );
                assert_eq!(
                    body["systemInstruction"]["parts"][0]["text"],
                    "You are Tandem."
                );
            }
        }
    }
}

/// What a fault case should end in.
#[derive(Debug)]
enum Expect {
    /// The stream finishes (after retries) with this text.
    Success,
    /// The stream fails with this error kind.
    Fails(&'static str),
}

/// One row of the fault matrix: the replies the server gives, in order, what the stream should
/// end in, and how many requests it takes (retry policy: 2 retries).
struct Fault {
    name: &'static str,
    replies: Vec<Reply>,
    expect: Expect,
    requests: usize,
}

fn reset_mid_stream(api: Api) -> Reply {
    let body = fixture(api, "text");
    Reply::sse(body[..body.len() / 2].to_vec()).step(Step::Reset)
}

fn faults(api: Api) -> Vec<Fault> {
    let ok = || Reply::sse(fixture(api, "text"));
    let (overloaded_status, overloaded_body) = api.overloaded;
    vec![
        Fault {
            name: "401",
            replies: vec![Reply::json(
                401,
                r#"{"error": {"message": "invalid x-api-key"}}"#,
            )],
            expect: Expect::Fails("authentication"),
            requests: 1,
        },
        Fault {
            name: "400 with the provider's error body",
            replies: vec![Reply::json(400, api.bad_request)],
            expect: Expect::Fails("bad_request"),
            requests: 1,
        },
        Fault {
            name: "400 context window exceeded",
            replies: vec![Reply::json(400, api.context_exceeded)],
            expect: Expect::Fails("context_window_exceeded"),
            requests: 1,
        },
        Fault {
            name: "429 without Retry-After, then success",
            replies: vec![
                Reply::json(429, r#"{"error": {"message": "slow down"}}"#),
                ok(),
            ],
            expect: Expect::Success,
            requests: 2,
        },
        Fault {
            name: "429 until the retries run out",
            replies: (0..3)
                .map(|_| Reply::json(429, r#"{"error": {"message": "slow down"}}"#))
                .collect(),
            expect: Expect::Fails("rate_limited"),
            requests: 3,
        },
        Fault {
            name: "429 with a Retry-After longer than the policy allows",
            replies: vec![Reply::json(429, "{}").header("retry-after", "3600")],
            expect: Expect::Fails("rate_limited"),
            requests: 1,
        },
        Fault {
            name: "500, then success",
            replies: vec![
                Reply::json(500, r#"{"error": {"message": "internal"}}"#),
                ok(),
            ],
            expect: Expect::Success,
            requests: 2,
        },
        Fault {
            name: "overloaded until the retries run out",
            replies: (0..3)
                .map(|_| Reply::json(overloaded_status, overloaded_body))
                .collect(),
            expect: Expect::Fails("overloaded"),
            requests: 3,
        },
        Fault {
            name: "connection reset mid-stream, then success",
            replies: vec![reset_mid_stream(api), ok()],
            expect: Expect::Success,
            requests: 2,
        },
        Fault {
            name: "connection reset every time",
            replies: (0..3).map(|_| reset_mid_stream(api)).collect(),
            expect: Expect::Fails("network"),
            requests: 3,
        },
        Fault {
            name: "mid-stream error event",
            replies: (0..3)
                .map(|_| Reply::sse(fixture(api, "error_event")))
                .collect(),
            expect: Expect::Fails(api.error_event),
            requests: 3,
        },
        Fault {
            name: "malformed SSE data",
            replies: (0..3)
                .map(|_| Reply::sse(fixture(api, "malformed")))
                .collect(),
            expect: Expect::Fails("invalid_stream"),
            requests: 3,
        },
        Fault {
            name: "truncated tool-call JSON",
            replies: (0..3)
                .map(|_| Reply::sse(fixture(api, "truncated_tool_call")))
                .collect(),
            expect: Expect::Fails("truncated_stream"),
            requests: 3,
        },
        Fault {
            name: "stream stops without its final event, then success",
            replies: vec![Reply::sse(fixture(api, "no_final_event")), ok()],
            expect: Expect::Success,
            requests: 2,
        },
    ]
}

#[tokio::test]
async fn fault_matrix() {
    for api in APIS {
        for fault in faults(api) {
            let server = ModelServer::start().await;
            for reply in fault.replies {
                server.push(reply);
            }
            let events = run(&Model::new(config(api, &server)).unwrap()).await;
            let context = format!("{} / {}:\n{}", api.name, fault.name, render(&events));
            match (&fault.expect, outcome(&events)) {
                (Expect::Success, Ok(response)) => {
                    assert!(response.message.text().contains('🦀'), "{context}");
                    let retries = events
                        .iter()
                        .filter(|e| matches!(e, Ok(StreamEvent::Retrying { .. })))
                        .count();
                    assert_eq!(retries, fault.requests - 1, "{context}");
                }
                (Expect::Fails(kind), Err(error)) => assert_eq!(error.kind(), *kind, "{context}"),
                (expect, outcome) => panic!("{context}\nexpected {expect:?}, got {outcome:?}"),
            }
            assert_eq!(server.request_count(), fault.requests, "{context}");
        }
    }
}

#[tokio::test]
async fn a_bad_request_carries_the_providers_message() {
    for api in APIS {
        let server = ModelServer::start().await;
        server.push(Reply::json(400, api.bad_request));
        let error = outcome(&run(&Model::new(config(api, &server)).unwrap()).await).unwrap_err();
        assert!(
            error.to_string().contains("temperature"),
            "{}: {error}",
            api.name
        );
    }
}

#[tokio::test]
async fn retry_after_is_honoured() {
    // The three providers wait their second concurrently.
    futures::future::join_all(APIS.map(|api| async move {
        let server = ModelServer::start().await;
        server.push(
            Reply::json(429, r#"{"error": {"message": "slow down"}}"#).header("retry-after", "1"),
        );
        server.push(Reply::sse(fixture(api, "text")));
        let started = std::time::Instant::now();
        let events = run(&Model::new(config(api, &server)).unwrap()).await;
        assert!(started.elapsed() >= Duration::from_secs(1), "{}", api.name);
        let delays: Vec<Duration> = events
            .iter()
            .filter_map(|event| match event {
                Ok(StreamEvent::Retrying { delay, .. }) => Some(*delay),
                _ => None,
            })
            .collect();
        assert_eq!(delays, vec![Duration::from_secs(1)], "{}", api.name);
        assert!(outcome(&events).is_ok());
    }))
    .await;
}

#[tokio::test]
async fn a_silent_server_times_out() {
    for api in APIS {
        let server = ModelServer::start().await;
        let mut config = config(api, &server);
        config.idle_timeout = Duration::from_millis(200);
        config.retry.max_retries = 1;
        let body = fixture(api, "text");
        for _ in 0..2 {
            server.push(Reply::sse(body[..20].to_vec()).step(Step::Hang));
        }
        let events = run(&Model::new(config).unwrap()).await;
        let error = outcome(&events).unwrap_err();
        assert_eq!(error.kind(), "idle_timeout", "{}", api.name);
        // The retry's request may have left before the server finished reading it (under load
        // the client's 200 ms ran out first): it is counted once it is read.
        within(
            &format!("{}: the retry's request never arrived", api.name),
            server.wait_for_requests(2),
        )
        .await;
        assert_eq!(server.request_count(), 2, "{}", api.name);
        // The abandoned connections were closed, not left hanging.
        within(
            &format!("{}: the timed-out connections were not closed", api.name),
            server.wait_for_disconnects(2),
        )
        .await;
    }
}

#[tokio::test]
async fn cancelling_mid_stream_drops_the_connection() {
    for api in APIS {
        let server = ModelServer::start().await;
        let body = fixture(api, "text");
        // The response without its last two events (so with text, without the end), then
        // silence. Gemini ends its SSE lines with CRLF.
        let boundaries: Vec<usize> = (0..body.len())
            .filter_map(|i| {
                let rest = &body[i..];
                (rest.starts_with(b"\n\n") && !body[..i].ends_with(b"\r"))
                    .then_some(i + 2)
                    .or_else(|| rest.starts_with(b"\r\n\r\n").then_some(i + 4))
            })
            .collect();
        let cut = boundaries[boundaries.len() - 3];
        server.push(Reply::sse(body[..cut].to_vec()).step(Step::Hang));
        let model = Model::new(config(api, &server)).unwrap();
        let cancel = CancellationToken::new();
        let mut stream = model.stream(request(), cancel.clone());
        // Wait until the response is under way, then cancel.
        let first = within("no first event", stream.next()).await;
        assert!(
            matches!(first, Some(Ok(StreamEvent::TextDelta { .. }))),
            "{}: {first:?}",
            api.name
        );
        cancel.cancel();
        let rest: Vec<_> = within("the cancelled stream never ended", stream.collect()).await;
        assert_eq!(
            rest.last(),
            Some(&Err(ProviderError::Cancelled)),
            "{}",
            api.name
        );
        within(
            &format!("{}: the cancelled connection was not closed", api.name),
            server.wait_for_disconnects(1),
        )
        .await;
        assert_eq!(server.request_count(), 1);
    }
}

/// Captures every log line at every level.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_api_key_appears_in_no_log_line_error_or_event() {
    let logs = LogBuffer::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut seen = String::new();
    for api in APIS {
        let secret = key(api);
        let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {secret}"}}}}"#);
        let server = ModelServer::start().await;
        server.push(Reply::json(401, &echo));
        server.push(Reply::json(500, &echo));
        server.push(Reply::json(429, &echo));
        server.push(reset_mid_stream(api));
        server.push(Reply::json(400, &echo));
        let model = Model::new(config(api, &server)).unwrap();
        for _ in 0..3 {
            // A callsite that another test's thread registered while this thread's subscriber
            // was being set may be cached as never logged (tracing's interest cache races with
            // scoped subscribers): the cache is rebuilt before each run, so its lines come here.
            tracing::callsite::rebuild_interest_cache();
            let events = run(&model).await;
            seen.push_str(&format!("{events:?}\n{}\n", render(&events)));
        }
        seen.push_str(&format!("{model:?}\n"));
        // The key did go out, so finding it nowhere else means something.
        assert!(server
            .requests()
            .iter()
            .all(|r| r.header(api.key_header).unwrap().contains(&secret)));
    }
    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("model request failed"),
        "the run logged its failures:\n{logs}"
    );
    for api in APIS {
        let secret = key(api);
        assert!(!logs.contains(&secret), "key in logs:\n{logs}");
        assert!(!seen.contains(&secret), "key in events or errors:\n{seen}");
    }
}

/// One SSE event in `api`'s format, `data` and all.
fn sse_event(api: Api, name: &str, data: serde_json::Value) -> String {
    match api.wire {
        Wire::Anthropic | Wire::Responses => format!("event: {name}\ndata: {data}\n\n"),
        Wire::Chat | Wire::Gemini => format!("data: {data}\n\n"),
    }
}

/// The start of a response that then calls `write_file`, with its arguments streamed as
/// `fragments`, and the end of it: what OpenAI and Anthropic send for a large tool call.
fn tool_call_in_fragments(api: Api, fragments: &[&str]) -> (String, Vec<String>, String) {
    let openai_chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        sse_event(
            api,
            "",
            json!({"id": "c", "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    match api.wire {
        Wire::Responses => (
            sse_event(
                api,
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0, "item":
                       {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "write_file", "arguments": ""}}),
            ),
            fragments
                .iter()
                .map(|part| {
                    sse_event(
                        api,
                        "response.function_call_arguments.delta",
                        json!({"type": "response.function_call_arguments.delta",
                               "output_index": 0, "item_id": "fc_1", "delta": part}),
                    )
                })
                .collect(),
            sse_event(
                api,
                "response.completed",
                json!({"type": "response.completed", "response": {"status": "completed"}}),
            ),
        ),
        Wire::Chat => (
            openai_chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
                       "type": "function", "function": {"name": "write_file", "arguments": ""}}]}),
                json!(null),
            ),
            fragments
                .iter()
                .map(|part| {
                    openai_chunk(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                        json!(null),
                    )
                })
                .collect(),
            openai_chunk(json!({}), json!("tool_calls")) + "data: [DONE]\n\n",
        ),
        Wire::Anthropic => (
            anthropic_start(api)
                + &sse_event(
                    api,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block":
                           {"type": "tool_use", "id": "call_1", "name": "write_file", "input": {}}}),
                ),
            fragments
                .iter()
                .map(|part| {
                    sse_event(
                        api,
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "input_json_delta", "partial_json": part}}),
                    )
                })
                .collect(),
            [
                sse_event(
                    api,
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                sse_event(
                    api,
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 10}}),
                ),
                sse_event(api, "message_stop", json!({"type": "message_stop"})),
            ]
            .concat(),
        ),
        Wire::Gemini => unreachable!("Gemini sends a tool call whole"),
    }
}

fn anthropic_start(api: Api) -> String {
    sse_event(
        api,
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
               "role": "assistant", "model": "test-model", "content": [], "stop_reason": null,
               "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

/// The start of a response that thinks without end, and one more thought of it.
fn endless_thoughts(api: Api) -> (String, String) {
    let thought = "Let me reconsider the whole approach once more. ";
    match api.wire {
        Wire::Responses => (
            String::new(),
            sse_event(
                api,
                "response.reasoning_summary_text.delta",
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
                       "summary_index": 0, "item_id": "rs_1", "delta": thought}),
            ),
        ),
        Wire::Chat => (
            String::new(),
            sse_event(
                api,
                "",
                json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0,
                       "delta": {"reasoning_content": thought}, "finish_reason": null}]}),
            ),
        ),
        Wire::Anthropic => (
            anthropic_start(api)
                + &sse_event(
                    api,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0,
                           "content_block": {"type": "thinking", "thinking": ""}}),
                ),
            sse_event(
                api,
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "thinking_delta", "thinking": thought}}),
            ),
        ),
        Wire::Gemini => (
            String::new(),
            sse_event(
                api,
                "",
                json!({"candidates": [{"content": {"parts": [{"text": thought, "thought": true}],
                       "role": "model"}, "index": 0}]}),
            ),
        ),
    }
}

/// Issue 16, item 2: the idle timeout counted only decoded events, so a tool call whose
/// arguments came in fragments (which decode to nothing until the call is whole) failed with
/// "no data from the model" and was retried from scratch.
#[tokio::test]
async fn tool_call_fragments_slower_than_nothing_but_faster_than_idle_do_not_time_out() {
    futures::future::join_all([OPENAI, RESPONSES, ANTHROPIC].map(|api| async move {
        let server = ModelServer::start().await;
        let mut config = config(api, &server);
        config.idle_timeout = Duration::from_secs(1);
        // Eight fragments 300 ms apart: 2.4 s without an event, never 1 s without bytes.
        let fragments = [
            r#"{"path": "#,
            r#""notes.md", "#,
            r#""content": "#,
            r##""# Notes\n"##,
            r#"\nOne"#,
            r#"\nTwo"#,
            r#"\nThree"#,
            r#"\n"}"#,
        ];
        let (start, parts, end) = tool_call_in_fragments(api, &fragments);
        let mut reply = Reply::sse(start);
        for part in parts {
            reply = reply
                .step(Step::Pause(Duration::from_millis(300)))
                .step(Step::Bytes(part.into_bytes()));
        }
        server.push(reply.step(Step::Bytes(end.into_bytes())));
        let events = run(&Model::new(config).unwrap()).await;
        let context = format!("{}:\n{}", api.name, render(&events));
        let response = outcome(&events).unwrap_or_else(|error| panic!("{context}{error}"));
        let call = response.message.tool_calls().next().expect(&context);
        assert_eq!(
            call.arguments,
            json!({"path": "notes.md", "content": "# Notes\n\nOne\nTwo\nThree\n"}),
            "{context}"
        );
        assert!(
            !events
                .iter()
                .any(|event| matches!(event, Ok(StreamEvent::Retrying { .. }))),
            "{context}"
        );
        assert_eq!(server.request_count(), 1, "{context}");
    }))
    .await;
}

/// Issue 16, item 3: a model streaming thoughts without end grew memory without bound. The
/// response is stopped at `maxResponseBytes`, through `complete` too (what compression uses),
/// is not retried, and its connection is dropped.
#[tokio::test]
async fn a_response_that_never_ends_is_stopped_at_the_byte_cap_without_retrying() {
    for api in APIS {
        let server = ModelServer::start().await;
        let mut config = config(api, &server);
        config.max_response_bytes = 64 * 1024;
        let (start, thought) = endless_thoughts(api);
        // A megabyte of thoughts, then silence: far past the cap, never finished.
        let mut reply = Reply::sse(start);
        for _ in 0..(1024 * 1024 / thought.len()) {
            reply = reply.step(Step::Bytes(thought.clone().into_bytes()));
        }
        server.push(reply.step(Step::Hang));
        let model = Model::new(config).unwrap();
        let error = within(
            "complete() never returned",
            model.complete(request(), CancellationToken::new()),
        )
        .await
        .unwrap_err();
        assert_eq!(
            error,
            ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Bytes(64 * 1024)
            },
            "{}",
            api.name
        );
        assert!(
            error.to_string().contains("network.maxResponseBytes"),
            "{error}"
        );
        assert_eq!(server.request_count(), 1, "{}: retried", api.name);
        within(
            &format!(
                "{}: the stopped response's connection was not closed",
                api.name
            ),
            server.wait_for_disconnects(1),
        )
        .await;
    }
}

/// Issue 16, item 3: a runaway too slow to reach the byte cap, and steady enough never to be
/// idle, is stopped at `maxResponseSecs`.
#[tokio::test]
async fn a_slow_response_that_never_ends_is_stopped_at_the_time_cap() {
    futures::future::join_all(APIS.map(|api| async move {
        let server = ModelServer::start().await;
        let mut config = config(api, &server);
        config.idle_timeout = Duration::from_secs(2);
        config.max_response_time = Duration::from_millis(800);
        let (start, thought) = endless_thoughts(api);
        let mut reply = Reply::sse(start);
        for _ in 0..200 {
            reply = reply
                .step(Step::Pause(Duration::from_millis(100)))
                .step(Step::Bytes(thought.clone().into_bytes()));
        }
        server.push(reply);
        let started = std::time::Instant::now();
        let events = run(&Model::new(config).unwrap()).await;
        let context = format!("{}:\n{}", api.name, render(&events));
        assert_eq!(
            events.last(),
            Some(&Err(ProviderError::ResponseLimitExceeded {
                limit: ResponseLimit::Time(Duration::from_millis(800))
            })),
            "{context}"
        );
        assert!(
            events
                .iter()
                .any(|event| matches!(event, Ok(StreamEvent::ThoughtDelta { .. }))),
            "the thoughts did stream: {context}"
        );
        assert!(started.elapsed() < Duration::from_secs(10), "{context}");
        assert_eq!(server.request_count(), 1, "{context}");
    }))
    .await;
}

/// Issue 16, item 3: an error status's body was read whole, so one that never ends held the
/// attempt until the idle timeout (and was retried). Its first 64 KiB are read, and the error
/// reports what they say.
#[tokio::test]
async fn an_error_body_that_never_ends_is_read_only_in_part() {
    for api in APIS {
        let server = ModelServer::start().await;
        let mut config = config(api, &server);
        config.idle_timeout = Duration::from_secs(2);
        config.retry.max_retries = 0;
        let page = "<html><body>Bad gateway</body></html>".repeat(3000);
        server.push(
            Reply::json(502, &page)
                .header("content-type", "text/html")
                .step(Step::Hang),
        );
        let events = run(&Model::new(config).unwrap()).await;
        let error = outcome(&events).unwrap_err();
        assert_eq!(error.kind(), "server", "{}: {error}", api.name);
        let message = error.to_string();
        assert!(message.contains("Bad gateway"), "{message}");
        assert!(
            message.len() < 4096,
            "{}: the message is cut: {} bytes",
            api.name,
            message.len()
        );
        within(
            &format!(
                "{}: the error response's connection was not closed",
                api.name
            ),
            server.wait_for_disconnects(1),
        )
        .await;
    }
}

/// Issue 16, item 6: a refused key read `authentication failed: <provider message>`, which
/// says neither which model nor which key. It names the provider, model, endpoint and the
/// variable the key came from, and never the key.
#[tokio::test]
async fn a_refused_key_names_the_model_endpoint_and_variable_but_not_the_key() {
    for api in APIS {
        let server = ModelServer::start().await;
        let secret = key(api);
        server.push(Reply::json(
            401,
            &format!(r#"{{"error": {{"message": "Incorrect API key provided: {secret}."}}}}"#),
        ));
        let mut config = config(api, &server);
        config.api_key_env = Some("TANDEM_TEST_KEY".into());
        let error = outcome(&run(&Model::new(config).unwrap()).await).unwrap_err();
        let endpoint = format!("{}{}", server.url(), api.endpoint);
        // Gemini's `?alt=sse` is no part of what the user recognises as the endpoint.
        let endpoint = endpoint.split('?').next().unwrap();
        assert_eq!(
            error.to_string(),
            format!(
                "authentication failed: {} model test-model at {endpoint} refused the key in \
                 TANDEM_TEST_KEY: Incorrect API key provided: [redacted]. Check the key, or set \
                 apiKeyEnv in the model's settings.",
                api.provider
            )
        );
    }
}

/// Issue 16, item 6, as a user meets it: `tandem ask` against a server that refuses the key.
#[tokio::test]
async fn ask_with_a_refused_key_says_which_model_and_variable_without_the_key() {
    let server = ModelServer::start().await;
    let secret = "sk-e2e-refused-5ecret";
    server.push(Reply::json(
        401,
        &format!(r#"{{"error": {{"message": "Incorrect API key provided: {secret}"}}}}"#),
    ));
    let base_url = format!("{}/v1", server.url());
    let setup = Setup::with_settings(
        json!({"model": "work", "models": {"work": {
            "provider": "openai", "model": "gpt-4o", "baseUrl": base_url,
            "apiKeyEnv": "TANDEM_E2E_WORK_KEY"
        }}}),
        &[],
    );
    let mut command = headless::tandem(setup.config.path(), setup.state.path());
    command
        .args(["ask", "hello", "--workspace"])
        .arg(setup.workspace.path())
        .env("TANDEM_E2E_WORK_KEY", secret);
    let run = Run::of(command.spawn().unwrap()).await;
    assert_ne!(run.code, 0, "{run:#?}");
    run.assert_stderr_has(&[&format!(
        "authentication failed: openai model gpt-4o at {base_url}/chat/completions refused the \
         key in TANDEM_E2E_WORK_KEY: Incorrect API key provided: [redacted]. Check the key, or \
         set apiKeyEnv in the model's settings."
    )]);
    assert_eq!(server.request_count(), 1, "{run:#?}");
    let log = std::fs::read_to_string(setup.config.path().join("tandem.log")).unwrap_or_default();
    for (place, text) in [
        ("stdout", &run.stdout),
        ("stderr", &run.stderr),
        ("log", &log),
    ] {
        assert!(!text.contains(secret), "the key is in {place}:\n{text}");
    }
}

/// Azure OpenAI, as its documentation describes a deployment's endpoint: the key in `api-key`
/// (never `Authorization`), `api-version` in the query, Chat Completions under the deployment's
/// URL and the Responses API under the v1 URL. (A model with an `apiVersion` is taken for Azure
/// whatever its host, which is how the scripted server on 127.0.0.1 stands in for it.)
#[tokio::test]
async fn azure_gets_its_key_in_api_key_and_its_api_version_in_the_query() {
    for (api, path, endpoint) in [
        (
            OPENAI,
            "/openai/deployments/gpt-4o-prod",
            "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21",
        ),
        (
            RESPONSES,
            "/openai/v1",
            "/openai/v1/responses?api-version=2024-10-21",
        ),
    ] {
        let server = ModelServer::start().await;
        server.push(Reply::sse(fixture(api, "text")));
        let mut config = config(api, &server);
        config.base_url = format!("{}{path}", server.url());
        config.api_version = Some("2024-10-21".into());
        let events = run(&Model::new(config).unwrap()).await;
        assert!(
            outcome(&events).is_ok(),
            "{}: {}",
            api.name,
            render(&events)
        );
        let sent = &server.requests()[0];
        assert_eq!(sent.path, endpoint, "{}", api.name);
        assert_eq!(
            sent.header("api-key"),
            Some(key(api).as_str()),
            "{}",
            api.name
        );
        assert_eq!(sent.header("authorization"), None, "{}", api.name);
    }
}
