//! Amazon Bedrock's Converse API (`POST /model/{modelId}/converse-stream`): the request body for
//! a `ChatRequest`, the decoder for its stream events (`messageStart`, `contentBlockStart`,
//! `contentBlockDelta`, `contentBlockStop`, `messageStop`, `metadata`), and the reader for its
//! errors, whether an error response (`x-amzn-errortype` and a JSON `{"message"}`) or an
//! exception inside the stream. The stream's binary framing is `eventstream.rs`'s; the request
//! is signed by `aws.rs`.
//!
//! Converse is one format for every model Bedrock serves. What only Claude takes (extended
//! thinking, the interleaved-thinking beta, cache points) goes to Claude models alone, in
//! `additionalModelRequestFields` as Anthropic's API names it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::config::ModelConfig;
use crate::error::{excerpt, from_status, shorten, ErrorBody, ProviderError, Result};
use crate::model::{
    CacheBreakpoint, ChatRequest, FinishReason, Message, Part, Role, StreamEvent, ToolCall, Usage,
};
use crate::wire::{join, StreamDecoder, WireRequest};

/// The content type Bedrock streams in, asked for with `accept`.
pub(crate) const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

pub(crate) fn request(config: &ModelConfig, request: &ChatRequest) -> WireRequest {
    let settings = &request.settings;
    let breakpoints = &request.cache_breakpoints;
    let claude = is_claude(&config.model);
    // Cache points are Claude's (and Nova's) on Bedrock; other models refuse the block.
    let caches = |point: CacheBreakpoint| claude && breakpoints.contains(&point);
    let max_tokens = settings
        .max_output_tokens
        .unwrap_or(config.max_output_tokens);
    let mut body = Map::new();

    if !request.system.is_empty() {
        let mut system = vec![json!({"text": request.system})];
        if caches(CacheBreakpoint::System) {
            system.push(CACHE_POINT.clone());
        }
        body.insert("system".into(), Value::Array(system));
    }

    let mut messages = Vec::new();
    for (index, message) in request.messages.iter().enumerate() {
        let mut blocks = content_blocks(message);
        if blocks.is_empty() {
            // Bedrock refuses a message without content.
            continue;
        }
        if caches(CacheBreakpoint::Message(index)) {
            blocks.push(CACHE_POINT.clone());
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(json!({"role": role, "content": blocks}));
    }
    body.insert("messages".into(), Value::Array(messages));

    let thinking_budget = claude
        .then(|| {
            settings
                .thinking_budget
                .or_else(|| config.reasoning.budget())
        })
        .flatten()
        .filter(|budget| *budget > 0 && max_tokens > crate::anthropic::MIN_THINKING_BUDGET)
        .map(|budget| budget.clamp(crate::anthropic::MIN_THINKING_BUDGET, max_tokens - 1));

    let mut inference = Map::new();
    inference.insert("maxTokens".into(), json!(max_tokens));
    match thinking_budget {
        Some(budget) => {
            // As on Anthropic's own API: with thinking on, Claude refuses `temperature` and a
            // `topP` below 0.95, so the sampling settings are left to it.
            let mut fields = json!({"thinking": {"type": "enabled", "budget_tokens": budget}});
            if crate::anthropic::interleaves_thinking(&config.model) {
                fields["anthropic_beta"] = json!([crate::anthropic::INTERLEAVED_THINKING]);
            }
            body.insert("additionalModelRequestFields".into(), fields);
        }
        // Claude Sonnet 4.5 and later refuse `temperature` and `topP` together; the temperature
        // wins, as on Anthropic's API.
        None if claude => {
            if let Some(temperature) = settings.temperature {
                inference.insert("temperature".into(), json!(temperature));
            } else if let Some(top_p) = settings.top_p {
                inference.insert("topP".into(), json!(top_p));
            }
        }
        None => {
            if let Some(temperature) = settings.temperature {
                inference.insert("temperature".into(), json!(temperature));
            }
            if let Some(top_p) = settings.top_p {
                inference.insert("topP".into(), json!(top_p));
            }
        }
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));

    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"toolSpec": {
                    "name": tool.name,
                    "description": tool.description,
                    "inputSchema": {"json": tool.parameters},
                }})
            })
            .collect();
        if caches(CacheBreakpoint::Tools) {
            tools.push(CACHE_POINT.clone());
        }
        body.insert("toolConfig".into(), json!({"tools": tools}));
    }

    WireRequest {
        url: join(
            &config.base_url,
            &format!("model/{}/converse-stream", path_label(&config.model)),
        ),
        headers: vec![("accept", EVENT_STREAM.to_owned())],
        body: Value::Object(body),
    }
}

/// Bedrock's runtime endpoint in `region`.
pub(crate) fn base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// A cache point: the prefix up to the block before it may be cached.
static CACHE_POINT: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| json!({"cachePoint": {"type": "default"}}));

/// Whether `model` (a model id, an inference profile, or an ARN naming one) is a Claude model.
pub(crate) fn is_claude(model: &str) -> bool {
    model.contains("anthropic.claude") || model.starts_with("claude")
}

/// `value` as one percent-encoded path segment: model ids carry `:` (`…-v1:0`) and ARNs `/`,
/// which AWS's SDKs encode, and the signature is computed over the path as sent.
fn path_label(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The message's parts as Converse content blocks, tool results first (Claude requires it, and
/// every model takes it). Parts Bedrock would refuse are dropped: blank text, and a thought
/// without a signature (another provider's, which Claude cannot verify).
fn content_blocks(message: &Message) -> Vec<Value> {
    let mut tool_results = Vec::new();
    let mut blocks = Vec::new();
    for part in &message.parts {
        match (message.role, part) {
            (_, Part::Text { text }) if !text.trim().is_empty() => {
                blocks.push(json!({"text": text}));
            }
            (Role::User, Part::ToolResult(result)) => {
                // Bedrock refuses a blank text block, in a tool result too.
                let content = match (result.content.trim().is_empty(), result.is_error) {
                    (false, _) => result.content.as_str(),
                    (true, true) => "error (no output)",
                    (true, false) => "(no output)",
                };
                let mut block = json!({
                    "toolUseId": result.call_id,
                    "content": [{"text": content}],
                });
                if result.is_error {
                    block["status"] = json!("error");
                }
                tool_results.push(json!({"toolResult": block}));
            }
            (_, Part::Image(image)) => {
                blocks.push(json!({"image": {
                    "format": image.format(),
                    "source": {"bytes": image.data.as_str()},
                }}));
            }
            (
                Role::Assistant,
                Part::Thought {
                    text,
                    signature: Some(signature),
                },
            ) => {
                blocks.push(json!({"reasoningContent": {
                    "reasoningText": {"text": text, "signature": signature},
                }}));
            }
            (Role::Assistant, Part::RedactedThought { data }) => {
                blocks.push(json!({"reasoningContent": {"redactedContent": data}}));
            }
            (Role::Assistant, Part::ToolCall(call)) => {
                // Bedrock wants an object; a call recorded without arguments has none.
                let input = if call.arguments.is_null() {
                    json!({})
                } else {
                    call.arguments.clone()
                };
                blocks.push(json!({"toolUse": {
                    "toolUseId": call.id,
                    "name": call.name,
                    "input": input,
                }}));
            }
            _ => {}
        }
    }
    tool_results.extend(blocks);
    tool_results
}

/// An error response: the type AWS names in `x-amzn-errortype` (`ValidationException:http://…`)
/// and the body's `message`.
pub(crate) fn error_body(kind: Option<&str>, body: &str) -> ErrorBody {
    let kind = kind.map(|kind| kind.split(':').next().unwrap_or(kind));
    let message = aws_message(body);
    let (message, context_window_exceeded, overloaded) = read_error(kind, message);
    ErrorBody {
        message,
        context_window_exceeded,
        overloaded,
        retry_after: None,
    }
}

/// The typed error for an exception inside the stream (`:exception-type`, or an `error`
/// frame's `:error-code`), whose payload is a JSON `{"message"}` (or the message itself).
pub(crate) fn exception(kind: &str, payload: &str) -> ProviderError {
    let (message, context_window_exceeded, overloaded) =
        read_error(Some(kind), aws_message(payload));
    let status = exception_status(kind);
    from_status(
        status,
        None,
        ErrorBody {
            message,
            context_window_exceeded,
            overloaded,
            retry_after: None,
        },
    )
}

/// The message of an AWS JSON error body (`message`, or `Message` in some services' shape);
/// the body itself, shortened, when it has none.
fn aws_message(body: &str) -> String {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        ["message", "Message"]
            .iter()
            .find_map(|key| value.get(*key).and_then(Value::as_str))
    });
    match message {
        Some(message) => message.to_owned(),
        None => shorten(body),
    }
}

/// The message with its error type in front (what AWS's own tools show), and whether it says
/// the prompt is too long, or that Bedrock is overloaded.
fn read_error(kind: Option<&str>, message: String) -> (String, bool, bool) {
    let Some(kind) = kind.filter(|kind| !kind.is_empty()) else {
        return (message, false, false);
    };
    let lower = message.to_lowercase();
    let folded = kind.to_ascii_lowercase();
    let context_window_exceeded = folded == "validationexception"
        && (lower.contains("too long")
            || lower.contains("context limit")
            || lower.contains("context length")
            || lower.contains("context window")
            || lower.contains("maximum context"));
    // Not ready (the model is being loaded): AWS's SDKs retry it as a throttle.
    let overloaded = matches!(
        folded.as_str(),
        "serviceunavailableexception" | "modelnotreadyexception"
    );
    let message = if message.trim().is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {message}")
    };
    (message, context_window_exceeded, overloaded)
}

/// The HTTP status AWS documents for each Converse error type, so that an exception inside a
/// 200 stream is typed like the same error as a response.
fn exception_status(kind: &str) -> u16 {
    match kind.to_ascii_lowercase().as_str() {
        "validationexception" => 400,
        "accessdeniedexception" | "unrecognizedclientexception" | "expiredtokenexception" => 403,
        "resourcenotfoundexception" => 404,
        "modeltimeoutexception" => 408,
        "modelerrorexception" => 424,
        "throttlingexception" => 429,
        "serviceunavailableexception" | "modelnotreadyexception" => 503,
        // `modelStreamErrorException` ("a streaming error occurred; retry your request"), an
        // internal error, and what AWS adds later: worth a retry.
        _ => 500,
    }
}

/// A `contentBlockStart` payload: only tool use blocks announce themselves.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    content_block_index: u64,
    #[serde(default)]
    start: BlockStartKind,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BlockStartKind {
    #[serde(default)]
    tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    #[serde(default)]
    tool_use_id: Option<String>,
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    content_block_index: u64,
    delta: Delta,
}

/// A delta is a union: one of its fields is set.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<ToolUseDelta>,
    #[serde(default)]
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Deserialize)]
struct ToolUseDelta {
    #[serde(default)]
    input: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningDelta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    /// Base64, as JSON carries Converse's blobs.
    #[serde(default)]
    redacted_content: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStop {
    content_block_index: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    usage: Option<RawUsage>,
}

/// Converse's usage: `inputTokens` is only the part of the prompt read neither from nor into
/// the cache (as Anthropic counts it).
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
}

impl RawUsage {
    fn normalise(self) -> Usage {
        Usage {
            input_tokens: self
                .input_tokens
                .saturating_add(self.cache_read_input_tokens)
                .saturating_add(self.cache_write_input_tokens),
            output_tokens: self.output_tokens,
            cached_input_tokens: self.cache_read_input_tokens,
            cache_write_tokens: self.cache_write_input_tokens,
            thought_tokens: 0,
        }
    }
}

/// A tool use block between its start and its stop.
struct OpenCall {
    id: String,
    name: String,
    input: String,
}

/// Bedrock's events in order: `messageStart`, content blocks (text and reasoning deltas come
/// without a start), `messageStop` with the stop reason, then `metadata` with the usage. The
/// response is complete at `metadata`, or at the end of the body once `messageStop` came.
#[derive(Default)]
pub(crate) struct Decoder {
    calls: BTreeMap<u64, OpenCall>,
    stop_reason: Option<String>,
    done: bool,
}

impl Decoder {
    fn finish(&mut self, usage: Option<RawUsage>) -> Vec<StreamEvent> {
        self.done = true;
        let mut events = Vec::new();
        if let Some(usage) = usage {
            events.push(StreamEvent::Usage(usage.normalise()));
        }
        events.push(StreamEvent::Finished {
            reason: finish_reason(self.stop_reason.as_deref()),
        });
        events
    }
}

fn parse<'a, T: Deserialize<'a>>(event: &str, data: &'a str) -> Result<T> {
    serde_json::from_str(data).map_err(|error| {
        let what = if error.is_data() {
            "an unexpected payload"
        } else {
            "a payload that is not JSON"
        };
        ProviderError::invalid_stream(format!("{what} in {event} ({error}): {}", excerpt(data)))
    })
}

impl StreamDecoder for Decoder {
    fn event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>> {
        if self.done {
            return Ok(Vec::new());
        }
        let mut events = Vec::new();
        match event.unwrap_or_default() {
            "contentBlockStart" => {
                let start: BlockStart = parse("contentBlockStart", data)?;
                if let Some(tool_use) = start.start.tool_use {
                    let index = start.content_block_index;
                    // Bedrock always sends an id; one without still needs its call and result
                    // matched, and the index is unique in the response.
                    let id = tool_use
                        .tool_use_id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| format!("tooluse_{index}"));
                    self.calls.insert(
                        index,
                        OpenCall {
                            id,
                            name: tool_use.name,
                            input: String::new(),
                        },
                    );
                }
            }
            "contentBlockDelta" => {
                let delta: BlockDelta = parse("contentBlockDelta", data)?;
                let index = delta.content_block_index;
                let delta = delta.delta;
                if let Some(text) = delta.text.filter(|text| !text.is_empty()) {
                    events.push(StreamEvent::TextDelta { text });
                }
                if let Some(reasoning) = delta.reasoning_content {
                    if let Some(text) = reasoning.text.filter(|text| !text.is_empty()) {
                        events.push(StreamEvent::ThoughtDelta { text });
                    }
                    if let Some(signature) = reasoning.signature.filter(|s| !s.is_empty()) {
                        events.push(StreamEvent::ThoughtSignature { signature });
                    }
                    if let Some(data) = reasoning.redacted_content.filter(|d| !d.is_empty()) {
                        events.push(StreamEvent::RedactedThought { data });
                    }
                }
                if let Some(tool_use) = delta.tool_use {
                    let Some(call) = self.calls.get_mut(&index) else {
                        return Err(ProviderError::invalid_stream(format!(
                            "tool input for content block {index}, which was never started"
                        )));
                    };
                    call.input.push_str(&tool_use.input);
                }
            }
            "contentBlockStop" => {
                let stop: BlockStop = parse("contentBlockStop", data)?;
                if let Some(call) = self.calls.remove(&stop.content_block_index) {
                    events.push(tool_call(call)?);
                }
            }
            "messageStop" => {
                let stop: MessageStop = parse("messageStop", data)?;
                // A tool use block the stream never closed is complete all the same once the
                // message is.
                for call in std::mem::take(&mut self.calls).into_values() {
                    events.push(tool_call(call)?);
                }
                self.stop_reason = Some(stop.stop_reason.unwrap_or_default());
            }
            "metadata" => {
                let metadata: Metadata = parse("metadata", data)?;
                if self.stop_reason.is_none() {
                    return Err(ProviderError::invalid_stream(
                        "metadata before messageStop: the response has no stop reason",
                    ));
                }
                events.extend(self.finish(metadata.usage));
            }
            // `messageStart` (the role) and event types added later.
            _ => {}
        }
        Ok(events)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.stop_reason.is_some() {
            // `metadata` (the usage) is all that is missing: the answer itself is whole.
            return Ok(self.finish(None));
        }
        let open_call = self
            .calls
            .values()
            .next()
            .map(|call| format!(", inside tool call {} ({})", call.name, call.id));
        Err(ProviderError::TruncatedStream {
            message: format!(
                "the stream ended without messageStop{}",
                open_call.unwrap_or_default()
            ),
        })
    }
}

fn tool_call(call: OpenCall) -> Result<StreamEvent> {
    let arguments =
        crate::wire::call_arguments(&call.input, &format!("{} ({})", call.name, call.id))?;
    Ok(StreamEvent::ToolCall(ToolCall {
        id: call.id,
        name: call.name,
        arguments,
        signature: None,
    }))
}

fn finish_reason(stop_reason: Option<&str>) -> FinishReason {
    match stop_reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::MaxTokens,
        Some("guardrail_intervened" | "content_filtered") => FinishReason::ContentFilter,
        Some("") | None => FinishReason::Other("unspecified".to_owned()),
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;
    use crate::config::{ProviderKind, Reasoning};
    use crate::model::{GenerationSettings, Image, ImageData, ToolDeclaration, ToolResult};

    const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

    /// A Claude model with no reasoning setting, so that each test says what it asks for.
    fn config(model: &str) -> ModelConfig {
        let mut config = ModelConfig::new(ProviderKind::Bedrock, model, base_url("us-west-2"));
        config.region = Some("us-west-2".into());
        config.reasoning = Reasoning::default();
        config
    }

    fn call(id: &str, name: &str, arguments: Value) -> Part {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: None,
        })
    }

    fn result(call_id: &str, content: &str, is_error: bool) -> Part {
        Part::ToolResult(ToolResult {
            call_id: call_id.into(),
            name: "grep".into(),
            content: content.into(),
            is_error,
        })
    }

    fn canonical() -> ChatRequest {
        ChatRequest {
            system: "You are Tandem, a coding agent.".into(),
            messages: vec![
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text {
                            text: "Where is `parse` defined? Here is the screen.".into(),
                        },
                        Part::Image(Image {
                            media_type: "image/png".into(),
                            data: ImageData::new("iVBORw0KGgo="),
                            width: 2,
                            height: 1,
                            file: None,
                        }),
                    ],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Thought {
                            text: "I should search for it.".into(),
                            signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA".into()),
                        },
                        Part::RedactedThought {
                            data: "RW5jcnlwdGVk".into(),
                        },
                        // Another provider's thought, which Claude cannot verify.
                        Part::Thought {
                            text: "unsigned".into(),
                            signature: None,
                        },
                        Part::Text {
                            text: "Let me look.".into(),
                        },
                        call("tooluse_01A", "grep", json!({"pattern": "fn parse"})),
                        call("tooluse_01B", "list_files", Value::Null),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text {
                            text: "Keep it short.".into(),
                        },
                        result("tooluse_01A", "src/parse.rs:12: pub fn parse(", false),
                        result("tooluse_01B", "", true),
                    ],
                },
            ],
            tools: vec![ToolDeclaration {
                name: "grep".into(),
                description: "Search the workspace.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"pattern": {"type": "string"}},
                    "required": ["pattern"],
                }),
            }],
            cache_breakpoints: vec![
                CacheBreakpoint::Tools,
                CacheBreakpoint::System,
                CacheBreakpoint::Message(2),
            ],
            ..ChatRequest::default()
        }
    }

    #[test]
    fn request_for_the_canonical_chat() {
        let request = request(&config(MODEL), &canonical());
        assert_eq!(
            request.url,
            "https://bedrock-runtime.us-west-2.amazonaws.com/model/\
             us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
        );
        assert_eq!(request.headers, [("accept", EVENT_STREAM.to_owned())]);
        expect![[r#"
            {
              "system": [
                {
                  "text": "You are Tandem, a coding agent."
                },
                {
                  "cachePoint": {
                    "type": "default"
                  }
                }
              ],
              "messages": [
                {
                  "role": "user",
                  "content": [
                    {
                      "text": "Where is `parse` defined? Here is the screen."
                    },
                    {
                      "image": {
                        "format": "png",
                        "source": {
                          "bytes": "iVBORw0KGgo="
                        }
                      }
                    }
                  ]
                },
                {
                  "role": "assistant",
                  "content": [
                    {
                      "reasoningContent": {
                        "reasoningText": {
                          "text": "I should search for it.",
                          "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"
                        }
                      }
                    },
                    {
                      "reasoningContent": {
                        "redactedContent": "RW5jcnlwdGVk"
                      }
                    },
                    {
                      "text": "Let me look."
                    },
                    {
                      "toolUse": {
                        "toolUseId": "tooluse_01A",
                        "name": "grep",
                        "input": {
                          "pattern": "fn parse"
                        }
                      }
                    },
                    {
                      "toolUse": {
                        "toolUseId": "tooluse_01B",
                        "name": "list_files",
                        "input": {}
                      }
                    }
                  ]
                },
                {
                  "role": "user",
                  "content": [
                    {
                      "toolResult": {
                        "toolUseId": "tooluse_01A",
                        "content": [
                          {
                            "text": "src/parse.rs:12: pub fn parse("
                          }
                        ]
                      }
                    },
                    {
                      "toolResult": {
                        "toolUseId": "tooluse_01B",
                        "content": [
                          {
                            "text": "error (no output)"
                          }
                        ],
                        "status": "error"
                      }
                    },
                    {
                      "text": "Keep it short."
                    },
                    {
                      "cachePoint": {
                        "type": "default"
                      }
                    }
                  ]
                }
              ],
              "inferenceConfig": {
                "maxTokens": 64000
              },
              "toolConfig": {
                "tools": [
                  {
                    "toolSpec": {
                      "name": "grep",
                      "description": "Search the workspace.",
                      "inputSchema": {
                        "json": {
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
                      }
                    }
                  },
                  {
                    "cachePoint": {
                      "type": "default"
                    }
                  }
                ]
              }
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&request.body).unwrap());
    }

    /// Claude 4 thinks by default (the model family's effort, as a budget, with the
    /// interleaved-thinking beta); the sampling settings are then left out, as Anthropic's API
    /// requires. A budget too large for the output limit is brought under it.
    #[test]
    fn thinking_goes_in_additional_model_request_fields_for_claude() {
        let chat = ChatRequest {
            messages: vec![Message::user("Hi")],
            settings: GenerationSettings {
                temperature: Some(0.2),
                top_p: Some(0.9),
                ..GenerationSettings::default()
            },
            ..ChatRequest::default()
        };
        let sonnet = ModelConfig::new(ProviderKind::Bedrock, MODEL, base_url("us-east-1"));
        let body = request(&sonnet, &chat).body;
        assert_eq!(
            body["additionalModelRequestFields"],
            json!({
                "thinking": {"type": "enabled", "budget_tokens": 10_000},
                "anthropic_beta": ["interleaved-thinking-2025-05-14"],
            })
        );
        assert_eq!(body["inferenceConfig"], json!({"maxTokens": 64_000}));

        let mut small = config("anthropic.claude-3-7-sonnet-20250219-v1:0");
        small.max_output_tokens = 4096;
        small.reasoning.budget_tokens = Some(50_000);
        let body = request(&small, &chat).body;
        assert_eq!(
            body["additionalModelRequestFields"],
            json!({"thinking": {"type": "enabled", "budget_tokens": 4095}}),
            "Claude 3.7 thinks without the beta"
        );

        // Without thinking, Claude takes the temperature alone; other models take both.
        let body = request(&config(MODEL), &chat).body;
        assert!(body.get("additionalModelRequestFields").is_none());
        assert_eq!(
            body["inferenceConfig"],
            json!({"maxTokens": 64_000, "temperature": 0.2})
        );
        let mut nova = config("amazon.nova-pro-v1:0");
        nova.reasoning.budget_tokens = Some(2048);
        let mut cached = chat.clone();
        cached.cache_breakpoints = vec![CacheBreakpoint::Message(0)];
        let body = request(&nova, &cached).body;
        assert!(
            body.get("additionalModelRequestFields").is_none(),
            "thinking is Claude's"
        );
        assert_eq!(
            body["inferenceConfig"],
            json!({"maxTokens": 8192, "temperature": 0.2, "topP": 0.9})
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"text": "Hi"}]}]),
            "cache points are Claude's"
        );
    }

    #[test]
    fn model_ids_and_arns_are_one_encoded_path_segment() {
        let arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0";
        let mut config = config(arn);
        config.base_url = "http://127.0.0.1:9/".into();
        assert_eq!(
            request(&config, &ChatRequest::default()).url,
            "http://127.0.0.1:9/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3A\
             inference-profile%2Fus.anthropic.claude-opus-4-1-20250805-v1%3A0/converse-stream"
        );
        assert!(
            is_claude(arn) && is_claude(MODEL) && !is_claude("meta.llama3-3-70b-instruct-v1:0")
        );
    }

    /// Error responses: the type in `x-amzn-errortype` (with the URL AWS appends), the message
    /// in the body; too long a prompt, however Bedrock words it, is `ContextWindowExceeded`.
    #[test]
    fn error_responses_are_typed() {
        // (x-amzn-errortype, status, body, kind, message)
        let cases = [
            (
                Some("ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
                400,
                r#"{"message":"Input is too long for requested model."}"#,
                "context_window_exceeded",
                "ValidationException: Input is too long for requested model.",
            ),
            (
                Some("ValidationException"),
                400,
                r#"{"message":"The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum"}"#,
                "context_window_exceeded",
                "ValidationException: The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum",
            ),
            (
                Some("ValidationException"),
                400,
                r#"{"message":"The provided model identifier is invalid."}"#,
                "bad_request",
                "ValidationException: The provided model identifier is invalid.",
            ),
            (
                Some("ThrottlingException"),
                429,
                r#"{"message":"Too many requests, please wait before trying again."}"#,
                "rate_limited",
                "ThrottlingException: Too many requests, please wait before trying again.",
            ),
            (
                Some("AccessDeniedException"),
                403,
                r#"{"Message":"User: arn:aws:iam::123456789012:user/ada is not authorized to perform: bedrock:InvokeModelWithResponseStream"}"#,
                "authentication",
                "AccessDeniedException: User: arn:aws:iam::123456789012:user/ada is not authorized to perform: bedrock:InvokeModelWithResponseStream",
            ),
            (
                Some("ServiceUnavailableException"),
                503,
                r#"{"message":"Bedrock is unable to process your request."}"#,
                "overloaded",
                "ServiceUnavailableException: Bedrock is unable to process your request.",
            ),
            (
                Some("ModelNotReadyException"),
                429,
                r#"{"message":"Model is not ready."}"#,
                "overloaded",
                "ModelNotReadyException: Model is not ready.",
            ),
            (
                Some("ResourceNotFoundException"),
                404,
                r#"{"message":"Model not found."}"#,
                "bad_request",
                "ResourceNotFoundException: Model not found.",
            ),
            // A proxy's page, without AWS's header.
            (None, 502, "<html>Bad Gateway</html>", "server", "<html>Bad Gateway</html>"),
        ];
        for (kind, status, body, expected_kind, message) in cases {
            let error = from_status(status, None, error_body(kind, body));
            assert_eq!(error.kind(), expected_kind, "{body}");
            assert_eq!(
                error.to_string().split_once(": ").map(|(_, m)| m),
                Some(message),
                "{body}"
            );
        }
    }

    #[test]
    fn exceptions_inside_the_stream_are_typed_like_responses() {
        let cases = [
            ("throttlingException", "rate_limited", true),
            ("validationException", "bad_request", false),
            ("modelStreamErrorException", "server", true),
            ("internalServerException", "server", true),
            ("serviceUnavailableException", "overloaded", true),
            ("modelTimeoutException", "server", true),
            ("accessDeniedException", "authentication", false),
            ("somethingNewException", "server", true),
        ];
        for (kind, expected, retryable) in cases {
            let error = exception(kind, r#"{"message": "m"}"#);
            assert_eq!(
                (error.kind(), error.is_retryable()),
                (expected, retryable),
                "{kind}"
            );
            assert_eq!(
                error.to_string().rsplit_once(": ").map(|(_, m)| m),
                Some("m")
            );
        }
        let too_long = exception(
            "validationException",
            r#"{"message": "Input is too long for requested model."}"#,
        );
        assert_eq!(too_long.kind(), "context_window_exceeded");
    }

    #[test]
    fn stop_reasons() {
        let cases = [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("tool_use", FinishReason::ToolCalls),
            ("max_tokens", FinishReason::MaxTokens),
            ("model_context_window_exceeded", FinishReason::MaxTokens),
            ("guardrail_intervened", FinishReason::ContentFilter),
            ("content_filtered", FinishReason::ContentFilter),
            ("new_reason", FinishReason::Other("new_reason".into())),
        ];
        for (reason, expected) in cases {
            assert_eq!(finish_reason(Some(reason)), expected, "{reason}");
        }
    }

    #[test]
    fn metadata_before_message_stop_or_input_for_an_unknown_block_is_invalid() {
        let mut decoder = Decoder::default();
        let error = decoder
            .event(Some("metadata"), r#"{"usage": {"inputTokens": 1}}"#)
            .unwrap_err();
        assert_eq!(error.kind(), "invalid_stream");
        let mut decoder = Decoder::default();
        let error = decoder
            .event(
                Some("contentBlockDelta"),
                r#"{"contentBlockIndex": 3, "delta": {"toolUse": {"input": "{}"}}}"#,
            )
            .unwrap_err();
        assert!(error.to_string().contains("content block 3"), "{error}");
        // Events Bedrock adds later are ignored.
        assert_eq!(
            Decoder::default()
                .event(Some("somethingNew"), "{}")
                .unwrap(),
            []
        );
    }
}
