//! What every wire format provides: the HTTP request for a `ChatRequest`, a decoder that turns
//! the events of the response (SSE, or Bedrock's AWS event stream) into `StreamEvent`s, and a
//! reader for its error bodies.
//!
//! Decoders are plain state machines (no I/O, no async), so tests feed them bytes split at
//! every position and compare.

use std::borrow::Cow;
use std::error::Error as StdError;

use bytes::Buf;
use futures::stream::BoxStream;
use futures::TryStream;

use crate::config::{ModelConfig, ProviderKind};
use crate::error::{ErrorBody, Result};
use crate::history::{self, SIGNATURES};
use crate::model::{ChatRequest, StreamEvent};
use crate::retry::Progress;

/// An HTTP request, without credentials: `http.rs` adds the key header itself so that no
/// wire format ever handles the key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireRequest {
    pub url: String,
    /// Extra headers (`anthropic-version`, …). Never the API key.
    pub headers: Vec<(&'static str, String)>,
    pub body: serde_json::Value,
}

/// Turns one response's events into stream events.
pub(crate) trait StreamDecoder: Send {
    /// Decodes one event (`event` is the SSE `event:` field, or the AWS event stream's
    /// `:event-type` header; `data` its data) and returns the stream events it completes, in
    /// order. An `Err` ends the stream.
    fn event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>>;

    /// Whether the provider's completion event has arrived; the caller stops reading then.
    fn is_done(&self) -> bool;

    /// The byte stream ended. Returns the last events (`Usage`, `Finished`) when the response
    /// was complete, `ProviderError::TruncatedStream` when it was not.
    fn end(&mut self) -> Result<Vec<StreamEvent>>;
}

/// The wire formats. The replay provider has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Wire {
    /// OpenAI's Chat Completions, and its copies.
    OpenAi,
    /// OpenAI's Responses API.
    Responses,
    Anthropic,
    Gemini,
    /// Amazon Bedrock's Converse API.
    Bedrock,
}

impl Wire {
    /// The HTTP request for `request`, its history first made valid for this wire format and
    /// model (`history.rs`): other providers' signatures removed, tool-call ids unique.
    pub(crate) fn request(self, config: &ModelConfig, request: &ChatRequest) -> WireRequest {
        let prepared;
        let request = match history::prepare(self, config, &request.messages, &SIGNATURES) {
            Cow::Borrowed(_) => request,
            Cow::Owned(messages) => {
                prepared = ChatRequest {
                    system: request.system.clone(),
                    messages,
                    tools: request.tools.clone(),
                    settings: request.settings.clone(),
                    cache_breakpoints: request.cache_breakpoints.clone(),
                    cache_key: request.cache_key.clone(),
                };
                &prepared
            }
        };
        match self {
            Wire::Anthropic | Wire::Gemini if config.provider == ProviderKind::Vertex => {
                crate::vertex::request(self, config, request)
            }
            Wire::OpenAi => crate::openai::request(config, request),
            Wire::Responses => crate::responses::request(config, request),
            Wire::Anthropic => crate::anthropic::request(config, request),
            Wire::Gemini => crate::gemini::request(config, request),
            Wire::Bedrock => crate::bedrock::request(config, request),
        }
    }

    pub(crate) fn decoder(self) -> Box<dyn StreamDecoder> {
        match self {
            Wire::OpenAi => Box::<crate::openai::Decoder>::default(),
            Wire::Responses => Box::<crate::responses::Decoder>::default(),
            Wire::Anthropic => Box::<crate::anthropic::Decoder>::default(),
            Wire::Gemini => Box::<crate::gemini::Decoder>::default(),
            Wire::Bedrock => Box::<crate::bedrock::Decoder>::default(),
        }
    }

    /// Decodes a response body: SSE, or for Bedrock the AWS event stream's binary frames. Each
    /// chunk is reported as it arrives (`Progress::Received`), so the idle timeout and the byte
    /// cap count bytes, whatever the framing.
    pub(crate) fn decode<S>(self, bytes: S) -> BoxStream<'static, Result<Progress>>
    where
        S: TryStream + Send + Unpin + 'static,
        S::Ok: Buf + Send,
        S::Error: StdError + Send + Sync + 'static,
    {
        match self {
            Wire::Bedrock => Box::pin(crate::eventstream::decode(self.decoder(), bytes)),
            Wire::OpenAi | Wire::Responses | Wire::Anthropic | Wire::Gemini => {
                Box::pin(crate::sse::decode(self.decoder(), bytes))
            }
        }
    }

    pub(crate) fn error_body(self, body: &str) -> ErrorBody {
        match self {
            // The Responses API's error bodies are Chat Completions' shape.
            Wire::OpenAi | Wire::Responses => crate::openai::error_body(body),
            Wire::Anthropic => crate::anthropic::error_body(body),
            Wire::Gemini => crate::gemini::error_body(body),
            Wire::Bedrock => crate::bedrock::error_body(None, body),
        }
    }

    /// What an error response says: its body, and for Bedrock the error type AWS sends in the
    /// `x-amzn-errortype` header (the body holds only the message).
    pub(crate) fn error_response(
        self,
        headers: &reqwest::header::HeaderMap,
        body: &str,
    ) -> ErrorBody {
        match self {
            Wire::Bedrock => {
                let kind = headers
                    .get("x-amzn-errortype")
                    .and_then(|value| value.to_str().ok());
                crate::bedrock::error_body(kind, body)
            }
            _ => self.error_body(body),
        }
    }

    /// The header that carries the API key, and its value for `key`: Azure OpenAI takes it as
    /// `api-key`.
    pub(crate) fn auth_header(self, config: &ModelConfig, key: &str) -> (&'static str, String) {
        match self {
            Wire::OpenAi | Wire::Responses if config.is_azure() => ("api-key", key.to_owned()),
            Wire::OpenAi | Wire::Responses => ("authorization", format!("Bearer {key}")),
            Wire::Anthropic => ("x-api-key", key.to_owned()),
            Wire::Gemini => ("x-goog-api-key", key.to_owned()),
            // A Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`), in place of SigV4.
            Wire::Bedrock => ("authorization", format!("Bearer {key}")),
        }
    }
}

/// A streamed tool call's arguments as JSON: `{}` when none came, an `InvalidStream` naming
/// `call` (as each wire names it in its messages) when they are not JSON.
pub(crate) fn call_arguments(arguments: &str, call: &str) -> Result<serde_json::Value> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(arguments).map_err(|error| {
        crate::error::ProviderError::invalid_stream(format!(
            "the arguments of tool call {call} are not JSON ({error}): {}",
            crate::error::excerpt(arguments)
        ))
    })
}

/// The endpoint under a base URL, whatever trailing slashes the user wrote.
pub(crate) fn join(base_url: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base_url.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Every recorded response under `tests/fixtures/providers/<wire>/*.sse` decodes to what its
/// `.events` file says, and decodes the same whatever the chunk boundaries: split at every byte
/// position (UTF-8 characters included) and delivered one byte at a time.
/// `UPDATE_EXPECT=1 cargo test -p tandem-providers` rewrites the `.events` files.
#[cfg(test)]
mod fixture_tests {
    use std::path::{Path, PathBuf};

    use super::Wire;
    use crate::sse::{decode_chunks, render};

    fn fixtures(wire: &str) -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/providers")
            .join(wire);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no fixtures in {}", dir.display());
        files
    }

    fn check(wire: Wire, name: &str) {
        for path in fixtures(name) {
            let body = std::fs::read(&path).unwrap();
            let whole = decode_chunks(wire.decoder(), vec![body.clone()]);
            expect_test::expect_file![path.with_extension("events")].assert_eq(&render(&whole));
            for split in 0..=body.len() {
                let (head, tail) = body.split_at(split);
                let parts = decode_chunks(wire.decoder(), vec![head.to_vec(), tail.to_vec()]);
                assert_eq!(parts, whole, "{} split at byte {split}", path.display());
            }
            let bytewise = decode_chunks(
                wire.decoder(),
                body.iter().map(|byte| vec![*byte]).collect(),
            );
            assert_eq!(bytewise, whole, "{} one byte at a time", path.display());
        }
    }

    #[test]
    fn openai_fixtures() {
        check(Wire::OpenAi, "openai");
    }

    #[test]
    fn responses_fixtures() {
        check(Wire::Responses, "responses");
    }

    #[test]
    fn anthropic_fixtures() {
        check(Wire::Anthropic, "anthropic");
    }

    #[test]
    fn gemini_fixtures() {
        check(Wire::Gemini, "gemini");
    }
}

/// An image after a tool's result (what `view_image` brings) and one in a prompt, on every
/// wire: each in its API's shape, the tool results still where the API wants them.
#[cfg(test)]
mod image_tests {
    use expect_test::expect;
    use serde_json::{json, Value};

    use super::Wire;
    use crate::config::{ModelConfig, OpenAiApi, ProviderKind};
    use crate::model::{ChatRequest, Image, ImageData, Message, Part, Role, ToolCall, ToolResult};

    fn image() -> Part {
        Part::Image(Image {
            media_type: "image/png".into(),
            data: ImageData::new("iVBORw0KGgo="),
            width: 2,
            height: 1,
            file: None,
        })
    }

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text {
                            text: "What is in this screenshot?".into(),
                        },
                        image(),
                    ],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![Part::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "view_image".into(),
                        arguments: json!({"path": "a.png"}),
                        signature: None,
                    })],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::ToolResult(ToolResult {
                            call_id: "call_1".into(),
                            name: "view_image".into(),
                            content: "a.png (2×1 PNG) is shown below.".into(),
                            is_error: false,
                        }),
                        image(),
                    ],
                },
            ],
            ..ChatRequest::default()
        }
    }

    fn conversation(provider: ProviderKind, api: OpenAiApi) -> String {
        let mut config = ModelConfig::new(provider, "m", "http://127.0.0.1:1/v1");
        config.api = api;
        let wire = config.wire().unwrap();
        let body = wire.request(&config, &request()).body;
        let key = match wire {
            Wire::Gemini => "contents",
            Wire::Responses => "input",
            Wire::OpenAi | Wire::Anthropic | Wire::Bedrock => "messages",
        };
        body[key]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn images_reach_every_wire_in_its_own_shape() {
        expect![[r#"
            {"role":"user","content":[{"type":"text","text":"What is in this screenshot?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}
            {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"view_image","arguments":"{\"path\":\"a.png\"}"}}]}
            {"role":"tool","tool_call_id":"call_1","content":"a.png (2×1 PNG) is shown below."}
            {"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}"#]]
        .assert_eq(&conversation(ProviderKind::OpenAi, OpenAiApi::Chat));
        expect![[r#"
            {"type":"message","role":"user","content":[{"type":"input_text","text":"What is in this screenshot?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}
            {"type":"function_call","call_id":"call_1","name":"view_image","arguments":"{\"path\":\"a.png\"}"}
            {"type":"function_call_output","call_id":"call_1","output":"a.png (2×1 PNG) is shown below."}
            {"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}"#]]
        .assert_eq(&conversation(ProviderKind::OpenAi, OpenAiApi::Responses));
        expect![[r#"
            {"role":"user","content":[{"type":"text","text":"What is in this screenshot?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}
            {"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"view_image","input":{"path":"a.png"}}]}
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"a.png (2×1 PNG) is shown below."},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}"#]]
        .assert_eq(&conversation(ProviderKind::Anthropic, OpenAiApi::Auto));
        expect![[r#"
            {"role":"user","parts":[{"text":"What is in this screenshot?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}
            {"role":"model","parts":[{"functionCall":{"name":"view_image","args":{"path":"a.png"}}}]}
            {"role":"user","parts":[{"functionResponse":{"name":"view_image","response":{"output":"a.png (2×1 PNG) is shown below."}}},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}"#]]
        .assert_eq(&conversation(ProviderKind::Gemini, OpenAiApi::Auto));
    }
}
