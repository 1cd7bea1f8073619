//! The Anthropic Messages API (`POST /v1/messages` with `stream: true`): the request body, the
//! decoder for its SSE events (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `error`) and the reader for its error bodies.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::config::ModelConfig;
use crate::error::{excerpt, ErrorBody, ProviderError, Result};
use crate::model::{
    CacheBreakpoint, ChatRequest, FinishReason, Message, Part, Role, StreamEvent, ToolCall, Usage,
};
use crate::wire::{StreamDecoder, WireRequest};

pub(crate) const API_VERSION: &str = "2023-06-01";

/// The smallest `thinking.budget_tokens` the API accepts.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

pub(crate) fn request(config: &ModelConfig, request: &ChatRequest) -> WireRequest {
    let settings = &request.settings;
    let breakpoints = &request.cache_breakpoints;
    let max_tokens = settings
        .max_output_tokens
        .unwrap_or(config.max_output_tokens);
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));

    if !request.system.is_empty() {
        let mut block = json!({"type": "text", "text": request.system});
        if breakpoints.contains(&CacheBreakpoint::System) {
            mark_cached(&mut block);
        }
        body.insert("system".into(), json!([block]));
    }

    let mut messages = Vec::new();
    for (index, message) in request.messages.iter().enumerate() {
        let mut blocks = content_blocks(message);
        if blocks.is_empty() {
            // The API refuses a message without content.
            continue;
        }
        if breakpoints.contains(&CacheBreakpoint::Message(index)) {
            // Thinking blocks take no `cache_control`; the last block that does ends the prefix.
            if let Some(last) = blocks.iter_mut().rev().find(|block| {
                !matches!(
                    block["type"].as_str(),
                    Some("thinking" | "redacted_thinking")
                )
            }) {
                mark_cached(last);
            }
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(json!({"role": role, "content": blocks}));
    }
    body.insert("messages".into(), Value::Array(messages));

    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                })
            })
            .collect();
        if breakpoints.contains(&CacheBreakpoint::Tools) {
            if let Some(last) = tools.last_mut() {
                mark_cached(last);
            }
        }
        body.insert("tools".into(), Value::Array(tools));
    }

    // The API refuses a budget below 1024 tokens or not below `max_tokens`: a budget outside
    // that range is brought inside it, and an output limit too small for any budget leaves
    // thinking off. A budget of 0 asks for no thinking. The request's own budget wins over the
    // model's reasoning setting.
    let thinking_budget = settings
        .thinking_budget
        .or_else(|| config.reasoning.budget())
        .filter(|budget| *budget > 0 && max_tokens > MIN_THINKING_BUDGET)
        .map(|budget| budget.clamp(MIN_THINKING_BUDGET, max_tokens - 1));
    let mut headers = vec![("anthropic-version", API_VERSION.to_owned())];
    if thinking_budget.is_some() && interleaves_thinking(&config.model) {
        // Thinking between tool calls, not only before the first: Claude 4 models do it
        // behind this header.
        headers.push(("anthropic-beta", INTERLEAVED_THINKING.to_owned()));
    }
    match thinking_budget {
        Some(budget) => {
            // With thinking enabled the API refuses `temperature` and a `top_p` below 0.95, so
            // the sampling settings are left to it.
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        None => {
            // Claude Sonnet 4.5 and later refuse `temperature` and `top_p` together; the
            // temperature wins.
            if let Some(temperature) = settings.temperature {
                body.insert("temperature".into(), json!(temperature));
            } else if let Some(top_p) = settings.top_p {
                body.insert("top_p".into(), json!(top_p));
            }
        }
    }

    WireRequest {
        url: crate::wire::join(&config.base_url, "v1/messages"),
        headers,
        body: Value::Object(body),
    }
}

/// The beta that lets Claude 4 models think between tool calls.
pub(crate) const INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";

/// Whether `model` thinks between tool calls with `INTERLEAVED_THINKING` (Claude 4 and later;
/// a vendor prefix, as Bedrock and proxies write it, still matches).
pub(crate) fn interleaves_thinking(model: &str) -> bool {
    let name = model.rsplit(['/', '.']).next().unwrap_or(model);
    ["claude-opus-4", "claude-sonnet-4", "claude-haiku-4"]
        .iter()
        .any(|family| name.starts_with(family))
}

/// The message's parts as Anthropic content blocks. Parts the API would refuse in this role are
/// dropped: a thought without a signature came from another provider and cannot be verified, an
/// empty or whitespace-only text block is rejected outright.
fn content_blocks(message: &Message) -> Vec<Value> {
    let mut tool_results = Vec::new();
    let mut blocks = Vec::new();
    for part in &message.parts {
        match (message.role, part) {
            (_, Part::Text { text }) if !text.trim().is_empty() => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            (Role::User, Part::ToolResult(result)) => {
                // The API refuses an error result with empty content.
                let content = if result.is_error && result.content.trim().is_empty() {
                    "error (no output)"
                } else {
                    result.content.as_str()
                };
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": content,
                });
                if result.is_error {
                    block["is_error"] = json!(true);
                }
                tool_results.push(block);
            }
            (
                Role::Assistant,
                Part::Thought {
                    text,
                    signature: Some(signature),
                },
            ) => {
                blocks.push(json!({"type": "thinking", "thinking": text, "signature": signature}));
            }
            (Role::User, Part::Image(image)) => {
                blocks.push(json!({
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": image.media_type,
                        "data": image.data.as_str(),
                    },
                }));
            }
            (Role::Assistant, Part::RedactedThought { data }) => {
                blocks.push(json!({"type": "redacted_thinking", "data": data}));
            }
            (Role::Assistant, Part::ToolCall(call)) => {
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.arguments,
                }));
            }
            _ => {}
        }
    }
    // The API requires a user message's tool results to come before anything else in it.
    tool_results.extend(blocks);
    tool_results
}

fn mark_cached(block: &mut Value) {
    if let Value::Object(fields) = block {
        fields.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// `{"type":"error","error":{"type":"…","message":"…"},"request_id":"…"}`, the body of every
/// Anthropic error response and the data of a mid-stream `error` event.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiError,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

impl ApiError {
    /// What the error says; an error without a message is named by its type.
    fn body(self) -> ErrorBody {
        let lower = self.message.to_lowercase();
        let context_window_exceeded = match self.kind.as_str() {
            "request_too_large" => true,
            "invalid_request_error" => {
                lower.contains("prompt is too long")
                    || lower.contains("context window")
                    || lower.contains("context limit")
                    || lower.contains("context length")
            }
            _ => false,
        };
        let overloaded = self.kind == "overloaded_error";
        let message = if self.message.trim().is_empty() {
            self.kind
        } else {
            self.message
        };
        ErrorBody {
            message,
            context_window_exceeded,
            overloaded,
            retry_after: None,
        }
    }

    /// The HTTP status Anthropic documents for each error type, so that an error inside a 200
    /// stream is typed like the same error as a response.
    fn status(&self) -> u16 {
        match self.kind.as_str() {
            "invalid_request_error" => 400,
            "authentication_error" => 401,
            "billing_error" => 402,
            "permission_error" => 403,
            "not_found_error" => 404,
            "request_too_large" => 413,
            "rate_limit_error" => 429,
            "timeout_error" => 504,
            "overloaded_error" => 529,
            _ => 500,
        }
    }

    fn into_error(self) -> ProviderError {
        let status = self.status();
        crate::error::from_status(status, None, self.body())
    }
}

pub(crate) fn error_body(body: &str) -> ErrorBody {
    match serde_json::from_str::<ErrorEnvelope>(body) {
        Ok(envelope)
            if !(envelope.error.message.trim().is_empty() && envelope.error.kind.is_empty()) =>
        {
            envelope.error.body()
        }
        _ => ErrorBody {
            message: crate::error::shorten(body),
            ..ErrorBody::default()
        },
    }
}

/// One SSE data payload, told apart by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Payload {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: BlockStart,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<RawUsage>,
    },
    MessageStop,
    Error {
        error: ApiError,
    },
    /// `ping` and whatever event types Anthropic adds later.
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        name: String,
    },
    /// Server tools, citations and block types added later: nothing Tandem reads.
    #[serde(other)]
    Other,
}

/// A `content_block_delta`'s `delta`, named by its `type` (`text_delta`, …).
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Anthropic's usage figures. Any of them may be absent or null; `message_delta` repeats the
/// cumulative values, so the latest one present wins.
#[derive(Deserialize, Default, Clone, Copy)]
struct RawUsage {
    input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl RawUsage {
    fn merge(&mut self, newer: RawUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
    }

    fn normalise(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            // Anthropic's `input_tokens` is only the part after the last cache breakpoint.
            input_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(written),
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: read,
            cache_write_tokens: written,
            thought_tokens: 0,
        }
    }
}

/// A content block between its `content_block_start` and `content_block_stop`.
enum Block {
    ToolUse {
        id: String,
        name: String,
        arguments: String,
    },
    /// Text, thinking and every other kind: their deltas are emitted as they come.
    Streamed,
}

#[derive(Default)]
pub(crate) struct Decoder {
    /// Open blocks by index; a tool_use block leaves at its `content_block_stop`.
    blocks: BTreeMap<u64, Block>,
    usage: Option<RawUsage>,
    stop_reason: Option<String>,
    done: bool,
}

impl Decoder {
    fn payload(&mut self, payload: Payload) -> Result<Vec<StreamEvent>> {
        let mut events = Vec::new();
        match payload {
            Payload::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.merge_usage(usage);
                }
            }
            Payload::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    BlockStart::ToolUse { id, name } => {
                        // Anthropic always sends an id; a compatible server that does not still
                        // needs its call and result matched, and the index is unique in the
                        // response.
                        let id = id
                            .filter(|id| !id.is_empty())
                            .unwrap_or_else(|| format!("toolu_{index}"));
                        Block::ToolUse {
                            id,
                            name,
                            arguments: String::new(),
                        }
                    }
                    BlockStart::Text { text } => {
                        push_text(&mut events, text, |text| StreamEvent::TextDelta { text });
                        Block::Streamed
                    }
                    BlockStart::Thinking { thinking } => {
                        push_text(&mut events, thinking, |text| StreamEvent::ThoughtDelta {
                            text,
                        });
                        Block::Streamed
                    }
                    BlockStart::RedactedThinking { data } => {
                        events.push(StreamEvent::RedactedThought { data });
                        Block::Streamed
                    }
                    BlockStart::Other => Block::Streamed,
                };
                self.blocks.insert(index, block);
            }
            Payload::ContentBlockDelta { index, delta } => match delta {
                Delta::Text { text } => {
                    push_text(&mut events, text, |text| StreamEvent::TextDelta { text });
                }
                Delta::Thinking { thinking } => {
                    push_text(&mut events, thinking, |text| StreamEvent::ThoughtDelta {
                        text,
                    });
                }
                Delta::Signature { signature } => {
                    if !signature.is_empty() {
                        events.push(StreamEvent::ThoughtSignature { signature });
                    }
                }
                Delta::InputJson { partial_json } => match self.blocks.get_mut(&index) {
                    Some(Block::ToolUse { arguments, .. }) => arguments.push_str(&partial_json),
                    // Server tools stream their input too; Tandem does not run them.
                    Some(Block::Streamed) => {}
                    None => {
                        return Err(ProviderError::invalid_stream(format!(
                            "input_json_delta for content block {index}, which was never started"
                        )));
                    }
                },
                Delta::Other => {}
            },
            Payload::ContentBlockStop { index } => {
                if let Some(Block::ToolUse {
                    id,
                    name,
                    arguments,
                }) = self.blocks.remove(&index)
                {
                    events.push(tool_call(id, name, &arguments)?);
                }
            }
            Payload::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.merge_usage(usage);
                }
            }
            Payload::MessageStop => {
                // A tool_use block the server never closed is complete all the same once the
                // message is.
                for block in std::mem::take(&mut self.blocks).into_values() {
                    if let Block::ToolUse {
                        id,
                        name,
                        arguments,
                    } = block
                    {
                        events.push(tool_call(id, name, &arguments)?);
                    }
                }
                if let Some(usage) = self.usage {
                    events.push(StreamEvent::Usage(usage.normalise()));
                }
                let reason = finish_reason(self.stop_reason.as_deref());
                events.push(StreamEvent::Finished { reason });
                self.done = true;
            }
            Payload::Error { error } => return Err(error.into_error()),
            Payload::Ignored => {}
        }
        Ok(events)
    }

    fn merge_usage(&mut self, usage: RawUsage) {
        self.usage
            .get_or_insert_with(RawUsage::default)
            .merge(usage);
    }
}

impl StreamDecoder for Decoder {
    fn event(&mut self, _event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>> {
        if self.done {
            return Ok(Vec::new());
        }
        // The payload's own `type` says what it is; the SSE `event:` line repeats it, and
        // Anthropic-compatible servers do not always send it.
        let payload = serde_json::from_str::<Payload>(data).map_err(|error| {
            let what = if error.is_data() {
                "an unexpected event payload"
            } else {
                "a payload that is not JSON"
            };
            ProviderError::invalid_stream(format!("{what} ({error}): {}", excerpt(data)))
        })?;
        self.payload(payload)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>> {
        if self.done {
            return Ok(Vec::new());
        }
        let open_call = self.blocks.values().find_map(|block| match block {
            Block::ToolUse { id, name, .. } => Some(format!(", inside tool call {name} ({id})")),
            Block::Streamed => None,
        });
        Err(ProviderError::TruncatedStream {
            message: format!(
                "the stream ended without message_stop{}",
                open_call.unwrap_or_default()
            ),
        })
    }
}

fn push_text(
    events: &mut Vec<StreamEvent>,
    text: String,
    event: impl FnOnce(String) -> StreamEvent,
) {
    if !text.is_empty() {
        events.push(event(text));
    }
}

fn tool_call(id: String, name: String, arguments: &str) -> Result<StreamEvent> {
    let arguments = crate::wire::call_arguments(arguments, &format!("{name} ({id})"))?;
    Ok(StreamEvent::ToolCall(ToolCall {
        id,
        name,
        arguments,
        signature: None,
    }))
}

fn finish_reason(stop_reason: Option<&str>) -> FinishReason {
    match stop_reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        // The output limit, or the context window, cut the answer.
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::MaxTokens,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
        // message_stop without a stop_reason: not Anthropic's behaviour, but not worth failing
        // a finished response over.
        None => FinishReason::Other("unspecified".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::ProviderKind;
    use crate::model::{GenerationSettings, ToolDeclaration, ToolResult};
    use crate::sse::{decode_chunks, render};

    /// A Claude model with no reasoning setting, so that each test says what it asks for.
    fn config() -> ModelConfig {
        let mut config = ModelConfig::new(
            ProviderKind::Anthropic,
            "claude-sonnet-4-5",
            "https://api.anthropic.com/",
        );
        config.reasoning = crate::config::Reasoning::default();
        config
    }

    #[test]
    fn claude_4_thinks_by_default_between_tool_calls_and_older_models_do_not() {
        let chat = ChatRequest {
            messages: vec![Message::user("Hi")],
            ..ChatRequest::default()
        };
        let sonnet = ModelConfig::new(
            ProviderKind::Anthropic,
            "claude-sonnet-4-5",
            "https://api.anthropic.com",
        );
        let wire = request(&sonnet, &chat);
        assert_eq!(
            wire.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 10_000})
        );
        assert!(wire
            .headers
            .contains(&("anthropic-beta", INTERLEAVED_THINKING.to_owned())));
        // The settings' budget wins over the effort.
        let mut high = sonnet.clone();
        high.reasoning = crate::config::Reasoning {
            effort: Some(crate::config::Effort::Low),
            budget_tokens: Some(20_000),
            source: crate::config::ReasoningSource::Settings,
        };
        assert_eq!(
            request(&high, &chat).body["thinking"]["budget_tokens"],
            json!(20_000)
        );
        let haiku = ModelConfig::new(
            ProviderKind::Anthropic,
            "claude-3-5-haiku-latest",
            "https://api.anthropic.com",
        );
        let wire = request(&haiku, &chat);
        assert!(wire.body.get("thinking").is_none());
        assert_eq!(wire.headers.len(), 1);
    }

    fn call(id: &str, name: &str, arguments: Value) -> Part {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: None,
        })
    }

    fn result(call_id: &str, name: &str, content: &str, is_error: bool) -> Part {
        Part::ToolResult(ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error,
        })
    }

    fn canonical() -> ChatRequest {
        ChatRequest {
            system: "You are Tandem, a coding agent.".into(),
            messages: vec![
                Message::user("Where is `parse` defined?"),
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Thought {
                            text: "I should search for it.".into(),
                            signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA".into()),
                        },
                        Part::Text {
                            text: "Let me look.".into(),
                        },
                        call("toolu_01A", "grep", json!({"pattern": "fn parse"})),
                        call("toolu_01B", "read_file", json!({"path": "src/lib.rs"})),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        result("toolu_01A", "grep", "src/parse.rs:12: pub fn parse(", false),
                        result("toolu_01B", "read_file", "no such file: src/lib.rs", true),
                        Part::Text {
                            text: "Keep it short.".into(),
                        },
                    ],
                },
            ],
            tools: vec![
                ToolDeclaration {
                    name: "grep".into(),
                    description: "Search the workspace.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {"pattern": {"type": "string"}},
                        "required": ["pattern"],
                    }),
                },
                ToolDeclaration {
                    name: "read_file".into(),
                    description: "Read a file.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    }),
                },
            ],
            settings: GenerationSettings {
                temperature: Some(0.2),
                max_output_tokens: Some(4096),
                ..GenerationSettings::default()
            },
            cache_breakpoints: vec![
                CacheBreakpoint::System,
                CacheBreakpoint::Tools,
                CacheBreakpoint::Message(1),
            ],
            cache_key: None,
        }
    }

    fn pretty(value: &Value) -> String {
        serde_json::to_string_pretty(value).unwrap()
    }

    #[test]
    fn request_for_the_canonical_chat() {
        let wire = request(&config(), &canonical());
        assert_eq!(wire.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(
            wire.headers,
            vec![("anthropic-version", "2023-06-01".to_owned())]
        );
        expect_test::expect![[r#"
            {
              "model": "claude-sonnet-4-5",
              "max_tokens": 4096,
              "stream": true,
              "system": [
                {
                  "type": "text",
                  "text": "You are Tandem, a coding agent.",
                  "cache_control": {
                    "type": "ephemeral"
                  }
                }
              ],
              "messages": [
                {
                  "role": "user",
                  "content": [
                    {
                      "type": "text",
                      "text": "Where is `parse` defined?"
                    }
                  ]
                },
                {
                  "role": "assistant",
                  "content": [
                    {
                      "type": "thinking",
                      "thinking": "I should search for it.",
                      "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"
                    },
                    {
                      "type": "text",
                      "text": "Let me look."
                    },
                    {
                      "type": "tool_use",
                      "id": "toolu_01A",
                      "name": "grep",
                      "input": {
                        "pattern": "fn parse"
                      }
                    },
                    {
                      "type": "tool_use",
                      "id": "toolu_01B",
                      "name": "read_file",
                      "input": {
                        "path": "src/lib.rs"
                      },
                      "cache_control": {
                        "type": "ephemeral"
                      }
                    }
                  ]
                },
                {
                  "role": "user",
                  "content": [
                    {
                      "type": "tool_result",
                      "tool_use_id": "toolu_01A",
                      "content": "src/parse.rs:12: pub fn parse("
                    },
                    {
                      "type": "tool_result",
                      "tool_use_id": "toolu_01B",
                      "content": "no such file: src/lib.rs",
                      "is_error": true
                    },
                    {
                      "type": "text",
                      "text": "Keep it short."
                    }
                  ]
                }
              ],
              "tools": [
                {
                  "name": "grep",
                  "description": "Search the workspace.",
                  "input_schema": {
                    "type": "object",
                    "properties": {
                      "pattern": {
                        "type": "string"
                      }
                    },
                    "required": [
                      "pattern"
                    ]
                  }
                },
                {
                  "name": "read_file",
                  "description": "Read a file.",
                  "input_schema": {
                    "type": "object",
                    "properties": {
                      "path": {
                        "type": "string"
                      }
                    },
                    "required": [
                      "path"
                    ]
                  },
                  "cache_control": {
                    "type": "ephemeral"
                  }
                }
              ],
              "temperature": 0.2
            }"#]]
        .assert_eq(&pretty(&wire.body));
    }

    #[test]
    fn request_without_system_or_tools_omits_them() {
        let chat = ChatRequest {
            messages: vec![Message::user("Hi")],
            ..ChatRequest::default()
        };
        let wire = request(&config(), &chat);
        expect_test::expect![[r#"
            {
              "model": "claude-sonnet-4-5",
              "max_tokens": 64000,
              "stream": true,
              "messages": [
                {
                  "role": "user",
                  "content": [
                    {
                      "type": "text",
                      "text": "Hi"
                    }
                  ]
                }
              ]
            }"#]]
        .assert_eq(&pretty(&wire.body));
    }

    #[test]
    fn thinking_replaces_the_sampling_settings() {
        let chat = ChatRequest {
            messages: vec![Message::user("Hi")],
            settings: GenerationSettings {
                temperature: Some(0.7),
                top_p: Some(0.9),
                thinking_budget: Some(2048),
                max_output_tokens: None,
            },
            ..ChatRequest::default()
        };
        let body = request(&config(), &chat).body;
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(body["max_tokens"], json!(config().max_output_tokens));
        assert!(
            body.get("temperature").is_none() && body.get("top_p").is_none(),
            "{body}"
        );

        let sampled = ChatRequest {
            settings: GenerationSettings {
                top_p: Some(0.9),
                ..GenerationSettings::default()
            },
            ..chat
        };
        let body = request(&config(), &sampled).body;
        assert_eq!(body["top_p"], json!(0.9));
        assert!(body.get("thinking").is_none(), "{body}");

        // Newer models refuse both at once.
        let both = ChatRequest {
            settings: GenerationSettings {
                temperature: Some(0.7),
                top_p: Some(0.9),
                ..GenerationSettings::default()
            },
            ..sampled
        };
        let body = request(&config(), &both).body;
        assert_eq!(body["temperature"], json!(0.7));
        assert!(body.get("top_p").is_none(), "{body}");
    }

    /// The API wants `1024 <= budget_tokens < max_tokens`.
    #[test]
    fn the_thinking_budget_is_kept_within_what_the_api_accepts() {
        // (max_output_tokens, thinking_budget) -> (max_tokens, budget_tokens)
        let cases = [
            ((4096, 2048), (4096, Some(2048))),
            ((4096, 4096), (4096, Some(4095))),
            ((4096, 32_000), (4096, Some(4095))),
            ((4096, 100), (4096, Some(1024))),
            ((1025, 2048), (1025, Some(1024))),
            // No room for the smallest budget, or no thinking asked for: thinking stays off.
            ((1024, 2048), (1024, None)),
            ((512, 2048), (512, None)),
            ((4096, 0), (4096, None)),
        ];
        for ((max_output_tokens, budget), (max_tokens, budget_tokens)) in cases {
            let chat = ChatRequest {
                messages: vec![Message::user("Hi")],
                settings: GenerationSettings {
                    temperature: Some(0.7),
                    max_output_tokens: Some(max_output_tokens),
                    thinking_budget: Some(budget),
                    ..GenerationSettings::default()
                },
                ..ChatRequest::default()
            };
            let body = request(&config(), &chat).body;
            let case = format!("max {max_output_tokens}, budget {budget}: {body}");
            assert_eq!(body["max_tokens"], json!(max_tokens), "{case}");
            match budget_tokens {
                Some(budget_tokens) => {
                    assert_eq!(
                        body["thinking"],
                        json!({"type": "enabled", "budget_tokens": budget_tokens}),
                        "{case}"
                    );
                    assert!(body.get("temperature").is_none(), "{case}");
                }
                None => {
                    assert!(body.get("thinking").is_none(), "{case}");
                    assert_eq!(body["temperature"], json!(0.7), "{case}");
                }
            }
        }
    }

    #[test]
    fn parts_the_api_would_refuse_are_dropped_and_tool_results_go_first() {
        let chat = ChatRequest {
            messages: vec![
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        // From another provider: no signature to send back.
                        Part::Thought {
                            text: "hmm".into(),
                            signature: None,
                        },
                        Part::Text {
                            text: String::new(),
                        },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::RedactedThought {
                            data: "EmwKAhgBEgy3va3pzix".into(),
                        },
                        call("toolu_01", "list_files", json!({})),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text {
                            text: "Also:".into(),
                        },
                        result("toolu_01", "list_files", "a.rs", false),
                        // Whitespace only: refused like an empty block.
                        Part::Text {
                            text: " \n\n".into(),
                        },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Text {
                            text: "\n\n".into(),
                        },
                        call("toolu_02", "run", json!({"command": "false"})),
                    ],
                },
                Message {
                    role: Role::User,
                    // An error result must have content.
                    parts: vec![result("toolu_02", "run", "", true)],
                },
                // Thinking blocks take no cache_control: the breakpoint goes on the block
                // before them.
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Text {
                            text: "Done.".into(),
                        },
                        Part::Thought {
                            text: "Anything else?".into(),
                            signature: Some("EqQBCgIYAhIM".into()),
                        },
                        Part::RedactedThought {
                            data: "EmwKAhgB".into(),
                        },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![Part::Thought {
                        text: "Only thinking.".into(),
                        signature: Some("EqQBCgIYAhIN".into()),
                    }],
                },
            ],
            // Message(0) lost all its blocks, Message(7) does not exist: both ignored; nothing
            // in Message(6) can carry the breakpoint.
            cache_breakpoints: vec![
                CacheBreakpoint::Message(0),
                CacheBreakpoint::Message(7),
                CacheBreakpoint::Message(5),
                CacheBreakpoint::Message(6),
                CacheBreakpoint::System,
                CacheBreakpoint::Tools,
            ],
            ..ChatRequest::default()
        };
        let body = request(&config(), &chat).body;
        assert_eq!(
            body["messages"],
            json!([
                {"role": "assistant", "content": [
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                    {"type": "tool_use", "id": "toolu_01", "name": "list_files", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.rs"},
                    {"type": "text", "text": "Also:"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_02", "name": "run", "input": {"command": "false"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_02", "content": "error (no output)", "is_error": true},
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Done.", "cache_control": {"type": "ephemeral"}},
                    {"type": "thinking", "thinking": "Anything else?", "signature": "EqQBCgIYAhIM"},
                    {"type": "redacted_thinking", "data": "EmwKAhgB"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Only thinking.", "signature": "EqQBCgIYAhIN"},
                ]},
            ])
        );
        assert!(
            body.get("system").is_none() && body.get("tools").is_none(),
            "{body}"
        );
    }

    #[test]
    fn error_bodies() {
        // (body, message, context_window_exceeded, overloaded)
        let cases = [
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CV4kSjH5JcNqW4i8Xr1mE"}"#,
                "prompt is too long: 208310 tokens > 200000 maximum",
                true,
                false,
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197050 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#,
                "input length and `max_tokens` exceed context limit: 197050 + 8192 > 200000, decrease input length or `max_tokens` and try again",
                true,
                false,
            ),
            (
                r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
                "Request exceeds the maximum allowed number of bytes.",
                true,
                false,
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":null}"#,
                "Overloaded",
                false,
                true,
            ),
            (
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CV4m2sAWkQ3yGJ8ZrTn5P"}"#,
                "invalid x-api-key",
                false,
                false,
            ),
            (
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 30,000 input tokens per minute."}}"#,
                "This request would exceed the rate limit for your organization of 30,000 input tokens per minute.",
                false,
                false,
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929"}}"#,
                "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929",
                false,
                false,
            ),
            (
                r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-sonet-4-5"}}"#,
                "model: claude-sonet-4-5",
                false,
                false,
            ),
            (r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#, "Internal server error", false, false),
            // A proxy's page, not Anthropic's JSON.
            ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n</html>\r\n", "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n</html>", false, false),
            ("", "", false, false),
        ];
        for (body, message, context_window_exceeded, overloaded) in cases {
            let read = error_body(body);
            assert_eq!(read.message, message, "{body}");
            assert_eq!(
                read.context_window_exceeded, context_window_exceeded,
                "{body}"
            );
            assert_eq!(read.overloaded, overloaded, "{body}");
            assert_eq!(read.retry_after, None, "{body}");
        }
    }

    /// Decodes data payloads sent without `event:` lines, as some compatible servers do.
    fn decode(payloads: &[&str]) -> String {
        let body: String = payloads
            .iter()
            .map(|data| format!("data: {data}\n\n"))
            .collect();
        render(&decode_chunks(
            Box::<Decoder>::default(),
            vec![body.into_bytes()],
        ))
    }

    const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"output_tokens":1}}}"#;
    const STOP: &str = r#"{"type":"message_stop"}"#;

    #[test]
    fn mid_stream_errors_are_typed_by_their_type() {
        let cases = [
            ("overloaded_error", "overloaded"),
            ("rate_limit_error", "rate_limited"),
            ("api_error", "server"),
            ("timeout_error", "server"),
            ("authentication_error", "authentication"),
            ("permission_error", "authentication"),
            ("not_found_error", "bad_request"),
            ("invalid_request_error", "bad_request"),
            ("request_too_large", "context_window_exceeded"),
            ("some_future_error", "server"),
        ];
        for (kind, expected) in cases {
            let data =
                format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"boom"}}}}"#);
            let mut decoder = Decoder::default();
            let error = decoder.event(Some("error"), &data).unwrap_err();
            assert_eq!(error.kind(), expected, "{kind}");
        }
        let long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 201000 tokens > 200000 maximum"}}"#;
        let error = Decoder::default().event(Some("error"), long).unwrap_err();
        assert_eq!(error.kind(), "context_window_exceeded");
        let bare =
            Decoder::default().event(None, r#"{"type":"error","error":{"type":"api_error"}}"#);
        assert_eq!(
            bare.unwrap_err().to_string(),
            "server error (HTTP 500): api_error"
        );
    }

    #[test]
    fn stop_reasons() {
        let cases = [
            ("\"end_turn\"", r#"{"type":"finished","reason":"stop"}"#),
            (
                "\"stop_sequence\"",
                r#"{"type":"finished","reason":"stop"}"#,
            ),
            (
                "\"tool_use\"",
                r#"{"type":"finished","reason":"toolCalls"}"#,
            ),
            (
                "\"max_tokens\"",
                r#"{"type":"finished","reason":"maxTokens"}"#,
            ),
            (
                "\"refusal\"",
                r#"{"type":"finished","reason":"contentFilter"}"#,
            ),
            (
                "\"model_context_window_exceeded\"",
                r#"{"type":"finished","reason":"maxTokens"}"#,
            ),
            (
                "\"pause_turn\"",
                r#"{"type":"finished","reason":{"other":"pause_turn"}}"#,
            ),
            (
                "null",
                r#"{"type":"finished","reason":{"other":"unspecified"}}"#,
            ),
        ];
        for (stop_reason, finished) in cases {
            let delta =
                format!(r#"{{"type":"message_delta","delta":{{"stop_reason":{stop_reason}}}}}"#);
            let rendered = decode(&[&delta, STOP]);
            assert_eq!(rendered, format!("{finished}\n"), "{stop_reason}");
        }
    }

    #[test]
    fn tool_calls_without_id_or_arguments() {
        let rendered = decode(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","name":"list_files","input":{}}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"","name":"status","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            STOP,
        ]);
        expect_test::expect![[r#"
            {"type":"toolCall","id":"toolu_0","name":"list_files","arguments":{}}
            {"type":"toolCall","id":"toolu_1","name":"status","arguments":{}}
            {"type":"usage","inputTokens":10,"outputTokens":1,"cachedInputTokens":0,"cacheWriteTokens":0,"thoughtTokens":0}
            {"type":"finished","reason":{"other":"unspecified"}}
        "#]].assert_eq(&rendered);
    }

    #[test]
    fn unknown_events_blocks_and_fields_are_ignored() {
        let rendered = decode(&[
            START,
            r#"{"type":"future_event","payload":[1,2,3]}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"rust\"}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":[]}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"cited_text":"x"}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"","extra":true}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok","extra":true}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","container":null},"usage":{"output_tokens":7,"server_tool_use":{"web_search_requests":1}},"context_management":{"applied_edits":[]}}"#,
            STOP,
        ]);
        expect_test::expect![[r#"
            {"type":"textDelta","text":"ok"}
            {"type":"redactedThought","data":"EmwKAhgB"}
            {"type":"usage","inputTokens":10,"outputTokens":7,"cachedInputTokens":0,"cacheWriteTokens":0,"thoughtTokens":0}
            {"type":"finished","reason":"stop"}
        "#]].assert_eq(&rendered);
    }

    #[test]
    fn usage_takes_the_latest_figures() {
        let rendered = decode(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_creation_input_tokens":100,"cache_read_input_tokens":null,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20,"cache_read_input_tokens":50}}"#,
            r#"{"type":"message_delta","delta":{},"usage":{"output_tokens":30}}"#,
            STOP,
        ]);
        expect_test::expect![[r#"
            {"type":"usage","inputTokens":155,"outputTokens":30,"cachedInputTokens":50,"cacheWriteTokens":100,"thoughtTokens":0}
            {"type":"finished","reason":"stop"}
        "#]].assert_eq(&rendered);
    }

    #[test]
    fn a_tool_call_left_open_is_emitted_at_message_stop() {
        let rendered = decode(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a\"}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
            STOP,
            // The caller stops reading at message_stop; anything after it changes nothing.
            r#"{"type":"message_stop"}"#,
        ]);
        expect_test::expect![[r#"
            {"type":"toolCall","id":"toolu_1","name":"read_file","arguments":{"path":"a"}}
            {"type":"usage","inputTokens":10,"outputTokens":1,"cachedInputTokens":0,"cacheWriteTokens":0,"thoughtTokens":0}
            {"type":"finished","reason":"toolCalls"}
        "#]].assert_eq(&rendered);
    }

    #[test]
    fn invalid_streams() {
        let long_arguments = format!("{{\"content\": \"{}", "x".repeat(1000));
        let long_arguments_delta = json!({
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": long_arguments},
        })
        .to_string();
        let cases: [&[&str]; 4] = [
            &[
                START,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"write_file","input":{}}}"#,
                &long_arguments_delta,
                r#"{"type":"content_block_stop","index":0}"#,
            ],
            &[
                START,
                r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            ],
            &[
                START,
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"no index"}}"#,
            ],
            &[START, "[1, 2, 3]"],
        ];
        let rendered: Vec<String> = cases.iter().map(|payloads| decode(payloads)).collect();
        assert!(
            rendered.iter().all(|text| text.len() < 800),
            "{rendered:#?}"
        );
        expect_test::expect![[r#"
            [
                "error invalid_stream: invalid response stream: the arguments of tool call write_file (toolu_9) are not JSON (EOF while parsing a string at line 1 column 1013): {\"content\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…\n",
                "error invalid_stream: invalid response stream: input_json_delta for content block 3, which was never started\n",
                "error invalid_stream: invalid response stream: an unexpected event payload (missing field `index`): {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"no index\"}}\n",
                "error invalid_stream: invalid response stream: an unexpected event payload (invalid type: integer `1`, expected variant identifier at line 1 column 2): [1, 2, 3]\n",
            ]
        "#]].assert_debug_eq(&rendered);
    }

    #[test]
    fn end_says_what_was_missing() {
        let mut decoder = Decoder::default();
        assert_eq!(
            decoder.end().unwrap_err(),
            ProviderError::TruncatedStream {
                message: "the stream ended without message_stop".into()
            }
        );
        let mut decoder = Decoder::default();
        decoder.event(None, STOP).unwrap();
        assert!(decoder.is_done());
        assert_eq!(decoder.end().unwrap(), Vec::new());
    }
}
