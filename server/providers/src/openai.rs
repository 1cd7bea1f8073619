//! The OpenAI-compatible Chat Completions wire format (`POST {base}/chat/completions` with
//! `stream: true`), spoken by OpenAI and by the servers that copy it: Ollama, llama.cpp's
//! server, vLLM, LM Studio, OpenRouter, DeepSeek. The copies differ in details (where usage
//! arrives, what reasoning is called, whether `[DONE]` is sent, what an error looks like), so
//! the decoder reads every chunk leniently and only insists on what it cannot do without.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::config::{Effort, ModelConfig};
use crate::error::{excerpt, from_status, shorten, ErrorBody, ProviderError, Result};
use crate::model::{ChatRequest, FinishReason, Message, Part, Role, StreamEvent, ToolCall, Usage};
use crate::wire::{join, StreamDecoder, WireRequest};

/// The streaming request for `request`. Cache breakpoints have no counterpart here: OpenAI
/// caches prefixes by itself (`prompt_cache_key` routes a session to the same cache), and
/// reasoning is asked for by effort (`reasoning_effort`), never by budget.
pub(crate) fn request(config: &ModelConfig, request: &ChatRequest) -> WireRequest {
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("messages".into(), Value::Array(messages(request)));
    body.insert("stream".into(), json!(true));
    // Without it the stream carries no token counts at all.
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    let settings = &request.settings;
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = settings.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if let Some(max) = settings.max_output_tokens {
        // OpenAI's reasoning models reject `max_tokens`; the compatible servers mostly know
        // only `max_tokens`.
        let key = if is_openai(&config.base_url) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(effort) = reasoning_effort(config, request) {
        body.insert("reasoning_effort".into(), json!(effort.as_str()));
    }
    if let Some(key) = cache_key(config, request) {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    WireRequest {
        url: endpoint(config, "chat/completions"),
        headers: Vec::new(),
        body: Value::Object(body),
    }
}

/// The effort to ask for, if any: a request's own thinking budget (0 turns reasoning off), else
/// the model's reasoning setting.
pub(crate) fn reasoning_effort(config: &ModelConfig, request: &ChatRequest) -> Option<Effort> {
    match request.settings.thinking_budget {
        Some(budget) => Some(Effort::of_budget(budget)),
        None => config.reasoning.effort(),
    }
}

/// The session's cache key, where the model sends one.
pub(crate) fn cache_key<'a>(config: &ModelConfig, request: &'a ChatRequest) -> Option<&'a str> {
    request
        .cache_key
        .as_deref()
        .filter(|key| config.prompt_cache_key && !key.is_empty())
}

/// `path` under the model's base URL, with Azure's `api-version` where it is set.
pub(crate) fn endpoint(config: &ModelConfig, path: &str) -> String {
    let url = join(&config.base_url, path);
    match &config.api_version {
        Some(version) => {
            let separator = if url.contains('?') { '&' } else { '?' };
            format!("{url}{separator}api-version={version}")
        }
        None => url,
    }
}

fn host_of(base_url: &str) -> Option<String> {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
}

/// Whether `base_url` is OpenAI's own API.
pub(crate) fn is_openai(base_url: &str) -> bool {
    host_of(base_url).is_some_and(|host| host == "api.openai.com")
}

/// Whether `base_url` is an Azure OpenAI resource (`<resource>.openai.azure.com`, or the AI
/// Foundry names `<resource>.cognitiveservices.azure.com`, `<resource>.services.ai.azure.com`).
pub(crate) fn is_azure(base_url: &str) -> bool {
    host_of(base_url).is_some_and(|host| {
        [
            ".openai.azure.com",
            ".cognitiveservices.azure.com",
            ".services.ai.azure.com",
        ]
        .iter()
        .any(|suffix| host.ends_with(suffix))
    })
}

fn messages(request: &ChatRequest) -> Vec<Value> {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({ "role": "system", "content": request.system }));
    }
    for message in &request.messages {
        match message.role {
            Role::User => user_messages(message, &mut messages),
            Role::Assistant => messages.extend(assistant_message(message)),
        }
    }
    messages
}

/// Tool results become `role: tool` messages of their own, which the API wants right after the
/// assistant message that made the calls, so they go before the user's text.
fn user_messages(message: &Message, messages: &mut Vec<Value>) {
    for part in &message.parts {
        if let Part::ToolResult(result) = part {
            messages.push(json!({
                "role": "tool",
                "tool_call_id": result.call_id,
                "content": result_text(result),
            }));
        }
    }
    // A user message's texts are blocks (the environment, the editor's state, the prompt, a
    // reminder): a blank line between them keeps them apart in the one string the API takes.
    let texts: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let images: Vec<Value> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Image(image) => Some(json!({
                "type": "image_url",
                "image_url": {"url": image.data_url()},
            })),
            _ => None,
        })
        .collect();
    if images.is_empty() {
        if !texts.is_empty() {
            messages.push(json!({ "role": "user", "content": texts.join("\n\n") }));
        }
        return;
    }
    // Images need the array form of `content`; the texts stay one block, as without them.
    let mut content = Vec::new();
    if !texts.is_empty() {
        content.push(json!({"type": "text", "text": texts.join("\n\n")}));
    }
    content.extend(images);
    messages.push(json!({ "role": "user", "content": content }));
}

/// A tool result as OpenAI's APIs take it: they have no error flag, so the model reads one.
pub(crate) fn result_text(result: &crate::model::ToolResult) -> std::borrow::Cow<'_, str> {
    if result.is_error {
        format!("Error: {}", result.content).into()
    } else {
        result.content.as_str().into()
    }
}

/// Thoughts are dropped: Chat Completions has no field to send them back in. An assistant
/// message left with neither text nor tool calls is dropped too, since the API rejects an
/// assistant message whose content is null and that calls no tools.
fn assistant_message(message: &Message) -> Option<Value> {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": { "name": call.name, "arguments": call.arguments.to_string() },
            })
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    out.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(out))
}

/// Reads an HTTP error body: OpenAI's `{"error": {"message", "type", "param", "code"}}`, which
/// vLLM, llama.cpp and OpenRouter copy (with a numeric `code`), vLLM's older top-level
/// `{"object": "error", "message", …}`, Ollama's `{"error": "text"}`, and anything else (a
/// proxy's HTML page) as text.
pub(crate) fn error_body(body: &str) -> ErrorBody {
    let value = serde_json::from_str::<Value>(body).ok();
    // Google's compatibility endpoint wraps the error object in an array.
    let value = match value {
        Some(Value::Array(items)) => items.into_iter().next(),
        other => other,
    };
    let info = value.as_ref().and_then(|value| match value.get("error") {
        Some(error) if !error.is_null() => Some(ErrorInfo::read(error)),
        _ if value.get("message").is_some_and(Value::is_string) => Some(ErrorInfo::read(value)),
        _ => None,
    });
    match info {
        Some(info) => {
            let message = info.message.clone().unwrap_or_else(|| shorten(body));
            info.body(message)
        }
        None => ErrorInfo::default().body(shorten(body)),
    }
}

/// The error an error object sent in a stream stands for (a mid-stream error arrives after
/// a 200, so its kind is read from its `type` and `code`); a string is taken as the message.
pub(crate) fn stream_error(error: &Value) -> ProviderError {
    let info = ErrorInfo::read(error);
    let message = info
        .message
        .clone()
        .unwrap_or_else(|| excerpt(&error.to_string()));
    from_status(info.status(), None, info.body(message))
}

/// The parts of a provider's error object that say what kind of error it is.
#[derive(Debug, Default)]
struct ErrorInfo {
    message: Option<String>,
    /// `type` and `code` (and Google's `status`) where they are strings, lowercased.
    words: String,
    /// A numeric `code`, which llama.cpp, vLLM, OpenRouter and Azure use for the HTTP status.
    status: Option<u16>,
}

impl ErrorInfo {
    fn read(error: &Value) -> Self {
        match error {
            Value::String(message) => ErrorInfo {
                message: Some(message.clone()),
                ..Self::default()
            },
            Value::Object(fields) => {
                let message = fields
                    .get("message")
                    .and_then(Value::as_str)
                    .filter(|message| !message.trim().is_empty())
                    .map(str::to_owned);
                let words = ["type", "code", "status"]
                    .iter()
                    .filter_map(|key| fields.get(*key).and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_ascii_lowercase();
                // Azure writes the status as a string.
                let status = match fields.get("code") {
                    Some(Value::Number(code)) => {
                        code.as_u64().and_then(|code| u16::try_from(code).ok())
                    }
                    Some(Value::String(code)) => code.parse::<u16>().ok(),
                    _ => None,
                }
                .filter(|code| (400..=599).contains(code));
                ErrorInfo {
                    message,
                    words,
                    status,
                }
            }
            other => ErrorInfo {
                message: Some(excerpt(&other.to_string())),
                ..Self::default()
            },
        }
    }

    fn body(&self, message: String) -> ErrorBody {
        let lower = message.to_lowercase();
        let context_window_exceeded = self.words.contains("context_length_exceeded")
            || self.words.contains("exceed_context_size_error")
            || [
                "maximum context length",
                "exceeds the available context size",
                "context length",
                "context window",
            ]
            .iter()
            .any(|phrase| lower.contains(phrase));
        let overloaded = self.words.contains("overloaded") || lower.contains("overloaded");
        let retry_after = retry_after_in(&lower);
        ErrorBody {
            message,
            context_window_exceeded,
            overloaded,
            retry_after,
        }
    }

    /// The HTTP status the error would have had: a mid-stream error arrives after a 200.
    fn status(&self) -> u16 {
        if let Some(status) = self.status {
            return status;
        }
        let has = |word: &str| self.words.contains(word);
        // OpenAI's rate-limit errors have the type `requests` or `tokens`.
        let rate_limited = has("rate_limit")
            || has("insufficient_quota")
            || has("resource_exhausted")
            || self
                .words
                .split(' ')
                .any(|word| word == "requests" || word == "tokens");
        if has("overloaded") {
            529
        } else if rate_limited {
            429
        } else if has("authentication") || has("invalid_api_key") || has("unauthenticated") {
            401
        } else if has("permission") {
            403
        } else if has("not_found") {
            404
        } else if has("invalid_request") || has("context_length") || has("exceed_context") {
            400
        } else if has("unavailable") {
            503
        } else {
            500
        }
    }
}

/// The delay a rate-limit message asks for: OpenAI's "Please try again in 1m2.5s" / "in 820ms",
/// Azure's "Please retry after 20 seconds". `text` is lowercase.
fn retry_after_in(text: &str) -> Option<Duration> {
    if let Some(start) = text.find("retry after ") {
        let rest = &text[start + "retry after ".len()..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 && rest[digits..].trim_start().starts_with("second") {
            return rest[..digits].parse().ok().map(Duration::from_secs);
        }
    }
    let start = text.find("try again in ")? + "try again in ".len();
    let mut rest = &text[start..];
    let mut seconds = 0.0;
    let mut found = false;
    loop {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Ok(value) = rest[..end].parse::<f64>() else {
            break;
        };
        rest = &rest[end..];
        let (scale, unit) = if rest.starts_with("ms") {
            (0.001, 2)
        } else if rest.starts_with('h') {
            (3600.0, 1)
        } else if rest.starts_with('m') {
            (60.0, 1)
        } else if rest.starts_with('s') {
            (1.0, 1)
        } else {
            break;
        };
        seconds += value * scale;
        found = true;
        rest = &rest[unit..];
    }
    if found {
        Duration::try_from_secs_f64(seconds).ok()
    } else {
        None
    }
}

/// Decodes the chunks of one streamed response.
#[derive(Default)]
pub(crate) struct Decoder {
    /// Tool calls still receiving argument fragments, by the provider's `index`.
    calls: BTreeMap<u64, PartialCall>,
    /// The index the last fragment went to, for servers that send fragments without one.
    last_index: Option<u64>,
    /// One past the highest index seen, for calls that need an index of their own.
    next_index: u64,
    emitted_tool_calls: bool,
    reason: Option<FinishReason>,
    usage: Option<Usage>,
    /// `[DONE]` arrived.
    done: bool,
    finished: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

impl StreamDecoder for Decoder {
    fn event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return self.finish();
        }
        let value = match serde_json::from_str::<Value>(data) {
            Ok(value) => value,
            // An `error` event is an error even when its data is not JSON.
            Err(_) if event == Some("error") => {
                let info = ErrorInfo::default();
                return Err(from_status(info.status(), None, info.body(shorten(data))));
            }
            Err(error) => {
                return Err(ProviderError::invalid_stream(format!(
                    "a chunk is not JSON ({error}): {}",
                    excerpt(data)
                )))
            }
        };
        let Some(chunk) = value.as_object() else {
            return Err(ProviderError::invalid_stream(format!(
                "a chunk is not a JSON object: {}",
                excerpt(data)
            )));
        };
        let error = match chunk.get("error").filter(|error| !error.is_null()) {
            Some(error) => Some(error),
            None if event == Some("error") => Some(&value),
            None => None,
        };
        if let Some(error) = error {
            return Err(stream_error(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(read_usage(usage));
        }
        let mut events = Vec::new();
        // Tandem never asks for more than one choice.
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return Ok(events);
        };
        if let Some(delta) = choice.get("delta") {
            // A server that sends both names sends the same text under each.
            let thought = ["reasoning_content", "reasoning"].iter().find_map(|key| {
                delta
                    .get(*key)
                    .and_then(Value::as_str)
                    .filter(|text| !text.is_empty())
            });
            if let Some(text) = thought {
                events.push(StreamEvent::ThoughtDelta {
                    text: text.to_owned(),
                });
            }
            // A refusal is what the model says instead of an answer; the user should see it.
            for key in ["content", "refusal"] {
                if let Some(text) = delta
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|text| !text.is_empty())
                {
                    events.push(StreamEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
            }
            if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
                for fragment in fragments {
                    self.tool_call_fragment(fragment);
                }
            }
        }
        // Some servers send `""` rather than null on chunks that do not finish.
        let reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty());
        if let Some(reason) = reason {
            events.extend(self.take_calls()?);
            self.reason = Some(match reason {
                "stop" => FinishReason::Stop,
                "tool_calls" | "function_call" => FinishReason::ToolCalls,
                "length" => FinishReason::MaxTokens,
                "content_filter" => FinishReason::ContentFilter,
                other => FinishReason::Other(other.to_owned()),
            });
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
        // Some servers end the body after the finish_reason (and usage) chunks without `[DONE]`;
        // the answer is whole.
        if self.reason.is_some() {
            return self.finish();
        }
        let mut message = "the stream ended without a finish_reason or [DONE]".to_owned();
        if let Some((index, call)) = self.calls.iter().next_back() {
            let name = if call.name.is_empty() {
                format!("#{index}")
            } else {
                call.name.clone()
            };
            message.push_str(&format!(", in the middle of tool call `{name}`"));
        }
        Err(ProviderError::TruncatedStream { message })
    }
}

impl Decoder {
    /// Adds one `delta.tool_calls[]` entry. The first fragment of a call carries its `id` and
    /// name, the later ones pieces of the arguments; they are matched by `index`.
    fn tool_call_fragment(&mut self, fragment: &Value) {
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let function = fragment.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let index = match fragment.get("index").and_then(Value::as_u64) {
            // A different id under a known index is another call: some servers number every
            // call 0.
            Some(index)
                if self
                    .calls
                    .get(&index)
                    .is_some_and(|call| is_other_call(call, id)) =>
            {
                self.next_index
            }
            Some(index) => index,
            // Without an index, a fragment continues the last call unless its id says otherwise.
            None => match self.last_index {
                Some(last)
                    if self
                        .calls
                        .get(&last)
                        .is_some_and(|call| !is_other_call(call, id)) =>
                {
                    last
                }
                _ => self.next_index,
            },
        };
        self.last_index = Some(index);
        self.next_index = self.next_index.max(index.saturating_add(1));
        let call = self.calls.entry(index).or_default();
        if call.id.is_none() {
            call.id = id.map(str::to_owned);
        }
        if call.name.is_empty() {
            if let Some(name) = name {
                call.name = name.to_owned();
            }
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            None | Some(Value::Null) => {}
            // A few servers send the arguments as an object rather than as JSON text.
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
    }

    /// The accumulated tool calls, complete now, in index order.
    fn take_calls(&mut self) -> Result<Vec<StreamEvent>> {
        let calls = std::mem::take(&mut self.calls);
        self.last_index = None;
        let mut events = Vec::with_capacity(calls.len());
        for (index, call) in calls {
            // Some servers give no ids; the id only has to match the result sent back.
            let id = call.id.unwrap_or_else(|| format!("call_{index}"));
            if call.name.is_empty() {
                return Err(ProviderError::invalid_stream(format!(
                    "tool call {id} has no name"
                )));
            }
            let arguments =
                crate::wire::call_arguments(&call.arguments, &format!("`{}`", call.name))?;
            events.push(StreamEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments,
                signature: None,
            }));
        }
        self.emitted_tool_calls |= !events.is_empty();
        Ok(events)
    }

    /// The last events of a complete response: calls not emitted yet, usage, `Finished`.
    fn finish(&mut self) -> Result<Vec<StreamEvent>> {
        let mut events = self.take_calls()?;
        if let Some(usage) = self.usage.take() {
            events.push(StreamEvent::Usage(usage));
        }
        if !self.finished {
            self.finished = true;
            let reason = self.reason.take().unwrap_or(if self.emitted_tool_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            });
            events.push(StreamEvent::Finished { reason });
        }
        Ok(events)
    }
}

/// Whether a fragment with `id` belongs to a call other than `call`.
fn is_other_call(call: &PartialCall, id: Option<&str>) -> bool {
    matches!((&call.id, id), (Some(known), Some(id)) if known != id)
}

/// `prompt_tokens` already counts the cached prompt, and `completion_tokens` the reasoning,
/// as `Usage` wants them.
fn read_usage(usage: &Value) -> Usage {
    let count = |path: &[&str]| {
        path.iter()
            .try_fold(usage, |value, key| value.get(*key))
            .and_then(Value::as_u64)
    };
    Usage {
        input_tokens: count(&["prompt_tokens"]).unwrap_or(0),
        output_tokens: count(&["completion_tokens"]).unwrap_or(0),
        // DeepSeek's own name for it, where `prompt_tokens_details` is missing.
        cached_input_tokens: count(&["prompt_tokens_details", "cached_tokens"])
            .or_else(|| count(&["prompt_cache_hit_tokens"]))
            .unwrap_or(0),
        // OpenRouter reports what it wrote to an Anthropic or Gemini cache.
        cache_write_tokens: count(&["prompt_tokens_details", "cache_write_tokens"]).unwrap_or(0),
        thought_tokens: count(&["completion_tokens_details", "reasoning_tokens"]).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{expect, Expect};
    use serde_json::json;

    use super::*;
    use crate::config::ProviderKind;
    use crate::model::{CacheBreakpoint, GenerationSettings, ToolDeclaration, ToolResult};
    use crate::sse::decode_chunks;

    fn config(base_url: &str) -> ModelConfig {
        ModelConfig::new(ProviderKind::OpenAi, "gpt-4.1", base_url)
    }

    fn canonical() -> ChatRequest {
        ChatRequest {
            system: "You are Tandem, a coding agent.".into(),
            messages: vec![
                Message::user("Why does the café test fail?"),
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Thought {
                            text: "Read the test, then the parser.".into(),
                            signature: Some("sig-abc".into()),
                        },
                        Part::Text {
                            text: "Let me look.".into(),
                        },
                        Part::ToolCall(ToolCall {
                            id: "call_1".into(),
                            name: "read_file".into(),
                            arguments: json!({"path": "tests/cafe.rs"}),
                            signature: None,
                        }),
                        Part::ToolCall(ToolCall {
                            id: "call_2".into(),
                            name: "grep".into(),
                            arguments: json!({"pattern": "café", "path": "src"}),
                            signature: None,
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::ToolResult(ToolResult {
                            call_id: "call_1".into(),
                            name: "read_file".into(),
                            content: "assert_eq!(len(\"café\"), 4);".into(),
                            is_error: false,
                        }),
                        Part::ToolResult(ToolResult {
                            call_id: "call_2".into(),
                            name: "grep".into(),
                            content: "no such directory: src".into(),
                            is_error: true,
                        }),
                        Part::Text {
                            text: "The sources are under lib/.".into(),
                        },
                    ],
                },
            ],
            tools: vec![
                ToolDeclaration {
                    name: "read_file".into(),
                    description: "Reads a file.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    }),
                },
                ToolDeclaration {
                    name: "grep".into(),
                    description: "Searches files for a pattern.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
                        "required": ["pattern"],
                    }),
                },
            ],
            settings: GenerationSettings {
                temperature: Some(0.2),
                top_p: None,
                max_output_tokens: Some(4096),
                thinking_budget: Some(2048),
            },
            cache_breakpoints: vec![
                CacheBreakpoint::System,
                CacheBreakpoint::Tools,
                CacheBreakpoint::Message(1),
            ],
            cache_key: None,
        }
    }

    fn pretty(request: &WireRequest) -> String {
        serde_json::to_string_pretty(&request.body).unwrap()
    }

    #[test]
    fn canonical_request() {
        let wire = request(&config("https://api.openai.com/v1"), &canonical());
        assert_eq!(wire.url, "https://api.openai.com/v1/chat/completions");
        assert!(wire.headers.is_empty(), "{:?}", wire.headers);
        expect![[r#"
            {
              "model": "gpt-4.1",
              "messages": [
                {
                  "role": "system",
                  "content": "You are Tandem, a coding agent."
                },
                {
                  "role": "user",
                  "content": "Why does the café test fail?"
                },
                {
                  "role": "assistant",
                  "content": "Let me look.",
                  "tool_calls": [
                    {
                      "id": "call_1",
                      "type": "function",
                      "function": {
                        "name": "read_file",
                        "arguments": "{\"path\":\"tests/cafe.rs\"}"
                      }
                    },
                    {
                      "id": "call_2",
                      "type": "function",
                      "function": {
                        "name": "grep",
                        "arguments": "{\"pattern\":\"café\",\"path\":\"src\"}"
                      }
                    }
                  ]
                },
                {
                  "role": "tool",
                  "tool_call_id": "call_1",
                  "content": "assert_eq!(len(\"café\"), 4);"
                },
                {
                  "role": "tool",
                  "tool_call_id": "call_2",
                  "content": "Error: no such directory: src"
                },
                {
                  "role": "user",
                  "content": "The sources are under lib/."
                }
              ],
              "stream": true,
              "stream_options": {
                "include_usage": true
              },
              "tools": [
                {
                  "type": "function",
                  "function": {
                    "name": "read_file",
                    "description": "Reads a file.",
                    "parameters": {
                      "type": "object",
                      "properties": {
                        "path": {
                          "type": "string"
                        }
                      },
                      "required": [
                        "path"
                      ]
                    }
                  }
                },
                {
                  "type": "function",
                  "function": {
                    "name": "grep",
                    "description": "Searches files for a pattern.",
                    "parameters": {
                      "type": "object",
                      "properties": {
                        "pattern": {
                          "type": "string"
                        },
                        "path": {
                          "type": "string"
                        }
                      },
                      "required": [
                        "pattern"
                      ]
                    }
                  }
                }
              ],
              "temperature": 0.2,
              "max_completion_tokens": 4096,
              "reasoning_effort": "low"
            }"#]]
        .assert_eq(&pretty(&wire));
    }

    #[test]
    fn compatible_servers_get_max_tokens() {
        for base_url in ["http://localhost:11434/v1/", "https://openrouter.ai/api/v1"] {
            let wire = request(&config(base_url), &canonical());
            assert_eq!(wire.url, join(base_url, "chat/completions"));
            assert_eq!(wire.body["max_tokens"], json!(4096), "{base_url}");
            assert!(
                wire.body.get("max_completion_tokens").is_none(),
                "{base_url}"
            );
        }
        assert_eq!(
            request(&config("http://localhost:11434/v1/"), &canonical()).url,
            "http://localhost:11434/v1/chat/completions"
        );
    }

    #[test]
    fn minimal_request_omits_what_is_not_set() {
        let minimal = ChatRequest {
            messages: vec![
                Message::user("Hi"),
                // Only a thought: nothing Chat Completions could carry.
                Message {
                    role: Role::Assistant,
                    parts: vec![Part::Thought {
                        text: "hmm".into(),
                        signature: None,
                    }],
                },
                Message::user("Still there?"),
            ],
            settings: GenerationSettings {
                top_p: Some(0.9),
                ..GenerationSettings::default()
            },
            ..ChatRequest::default()
        };
        let wire = request(&config("http://127.0.0.1:8080/v1"), &minimal);
        expect![[r#"
            {
              "model": "gpt-4.1",
              "messages": [
                {
                  "role": "user",
                  "content": "Hi"
                },
                {
                  "role": "user",
                  "content": "Still there?"
                }
              ],
              "stream": true,
              "stream_options": {
                "include_usage": true
              },
              "top_p": 0.9
            }"#]]
        .assert_eq(&pretty(&wire));
    }

    #[test]
    fn assistant_tool_calls_without_text_have_null_content() {
        let message = Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall(ToolCall {
                id: "call_9".into(),
                name: "list_files".into(),
                arguments: json!({}),
                signature: None,
            })],
        };
        assert_eq!(
            assistant_message(&message),
            Some(json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"},
                }],
            }))
        );
    }

    #[test]
    fn error_bodies() {
        struct Case {
            body: &'static str,
            message: &'static str,
            context_window_exceeded: bool,
            overloaded: bool,
            retry_after: Option<Duration>,
        }
        let plain = |body, message| Case {
            body,
            message,
            context_window_exceeded: false,
            overloaded: false,
            retry_after: None,
        };
        let cases = [
            // OpenAI, as it sends them (indented by four spaces).
            plain(
                "{\n    \"error\": {\n        \"message\": \"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": null,\n        \"code\": \"invalid_api_key\"\n    }\n}\n",
                "Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.",
            ),
            Case {
                context_window_exceeded: true,
                ..plain(
                    "{\n    \"error\": {\n        \"message\": \"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": \"messages\",\n        \"code\": \"context_length_exceeded\"\n    }\n}\n",
                    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.",
                )
            },
            // Only the code says it.
            Case {
                context_window_exceeded: true,
                ..plain(
                    "{\n    \"error\": {\n        \"message\": \"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 301412 tokens. Please reduce the length of the messages.\",\n        \"type\": \"invalid_request_error\",\n        \"param\": \"messages\",\n        \"code\": \"context_length_exceeded\"\n    }\n}\n",
                    "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 301412 tokens. Please reduce the length of the messages.",
                )
            },
            Case {
                retry_after: Some(Duration::from_millis(6_400)),
                ..plain(
                    "{\n    \"error\": {\n        \"message\": \"Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 27188, Requested 5036. Please try again in 6.4s. Visit https://platform.openai.com/account/rate-limits to learn more.\",\n        \"type\": \"tokens\",\n        \"param\": null,\n        \"code\": \"rate_limit_exceeded\"\n    }\n}\n",
                    "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 27188, Requested 5036. Please try again in 6.4s. Visit https://platform.openai.com/account/rate-limits to learn more.",
                )
            },
            Case {
                retry_after: Some(Duration::from_millis(72_480)),
                ..plain(
                    r#"{"error":{"message":"Rate limit reached for o3 in organization org-abc on requests per day (RPD): Limit 100, Used 100, Requested 1. Please try again in 1m12.48s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
                    "Rate limit reached for o3 in organization org-abc on requests per day (RPD): Limit 100, Used 100, Requested 1. Please try again in 1m12.48s. Visit https://platform.openai.com/account/rate-limits to learn more.",
                )
            },
            Case {
                retry_after: Some(Duration::from_millis(820)),
                ..plain(
                    r#"{"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` on tokens per minute (TPM): Limit 6000, Used 5866, Requested 216. Please try again in 820ms. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing","type":"tokens","code":"rate_limit_exceeded"}}"#,
                    "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` on tokens per minute (TPM): Limit 6000, Used 5866, Requested 216. Please try again in 820ms. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
                )
            },
            // Azure OpenAI.
            Case {
                retry_after: Some(Duration::from_secs(20)),
                ..plain(
                    r#"{"error":{"code":"429","message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 20 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}"#,
                    "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 20 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
                )
            },
            Case {
                overloaded: true,
                ..plain(
                    "{\n    \"error\": {\n        \"message\": \"That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID 4f1c0b6a in your message.)\",\n        \"type\": \"server_error\",\n        \"param\": null,\n        \"code\": null\n    }\n}\n",
                    "That model is currently overloaded with other requests. You can retry your request, or contact us through our help center at help.openai.com if the error persists. (Please include the request ID 4f1c0b6a in your message.)",
                )
            },
            // Ollama's own format, and its OpenAI-shaped one.
            plain(
                r#"{"error":"model \"qwen3-coder\" not found, try pulling it first"}"#,
                r#"model "qwen3-coder" not found, try pulling it first"#,
            ),
            plain(
                r#"{"error":{"message":"model \"qwen3-coder\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
                r#"model "qwen3-coder" not found, try pulling it first"#,
            ),
            // llama.cpp's server.
            Case {
                context_window_exceeded: true,
                ..plain(
                    r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9120,"n_ctx":8192}}"#,
                    "the request exceeds the available context size, try increasing it",
                )
            },
            // vLLM, old (top level) and new (wrapped).
            Case {
                context_window_exceeded: true,
                ..plain(
                    r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 34013 tokens (26013 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
                    "This model's maximum context length is 32768 tokens. However, you requested 34013 tokens (26013 in the messages, 8000 in the completion). Please reduce the length of the messages or completion.",
                )
            },
            plain(
                r#"{"error":{"message":"The model `qwen3` does not exist.","type":"NotFoundError","param":null,"code":404}}"#,
                "The model `qwen3` does not exist.",
            ),
            // OpenRouter.
            Case {
                context_window_exceeded: true,
                ..plain(
                    r#"{"error":{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 231987 tokens (223987 of text input, 8000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}"#,
                    "This endpoint's maximum context length is 200000 tokens. However, you requested about 231987 tokens (223987 of text input, 8000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.",
                )
            },
            // LM Studio.
            Case {
                context_window_exceeded: true,
                ..plain(
                    r#"{"error":"Trying to keep the first 5120 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input"}"#,
                    "Trying to keep the first 5120 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input",
                )
            },
            // Google's compatibility endpoint wraps the error in an array.
            plain(
                r#"[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]"#,
                "Resource has been exhausted (e.g. check quota).",
            ),
            // Not the provider's JSON: a proxy's page, or other JSON.
            plain(
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n",
                "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>",
            ),
            plain(r#"{"detail":"Not Found"}"#, r#"{"detail":"Not Found"}"#),
            plain(r#"{"error":{"type":"server_error"}}"#, r#"{"error":{"type":"server_error"}}"#),
            plain("", ""),
        ];
        for case in cases {
            let body = error_body(case.body);
            let expected = ErrorBody {
                message: case.message.to_owned(),
                context_window_exceeded: case.context_window_exceeded,
                overloaded: case.overloaded,
                retry_after: case.retry_after,
            };
            assert_eq!(body, expected, "{}", case.body);
        }
    }

    /// Decodes an SSE body made of `data:` payloads (or whole events, when one starts with
    /// `event:`), the way the HTTP layer does.
    fn decode(payloads: &[&str]) -> String {
        let body: String = payloads
            .iter()
            .map(|payload| {
                if payload.starts_with("event:") {
                    format!("{payload}\n\n")
                } else {
                    format!("data: {payload}\n\n")
                }
            })
            .collect();
        let events = decode_chunks(Box::<Decoder>::default(), vec![body.into_bytes()]);
        events
            .iter()
            .map(|event| match event {
                Ok(event) => serde_json::to_string(event).unwrap() + "\n",
                Err(error) => format!("error {}: {error}\n", error.kind()),
            })
            .collect()
    }

    fn check(payloads: &[&str], expected: Expect) {
        expected.assert_eq(&decode(payloads));
    }

    #[test]
    fn tool_calls_without_ids_or_arguments() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"list_files","arguments":""}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_c","function":{"name":"now"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"toolCall","id":"call_0","name":"list_files","arguments":{}}
                {"type":"toolCall","id":"call_1","name":"read_file","arguments":{"path":"a.rs"}}
                {"type":"toolCall","id":"call_c","name":"now","arguments":{}}
                {"type":"finished","reason":"toolCalls"}
            "#]],
        );
    }

    #[test]
    fn tool_calls_without_index_are_told_apart_by_id() {
        check(
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":\"a.rs\"}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b.rs\"}"}}]}}]}"#,
                // Every call numbered 0, as some servers do: the id tells them apart.
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_c","type":"function","function":{"name":"grep","arguments":{"pattern":"x"}}}]}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"toolCall","id":"call_a","name":"read_file","arguments":{"path":"a.rs"}}
                {"type":"toolCall","id":"call_b","name":"read_file","arguments":{"path":"b.rs"}}
                {"type":"toolCall","id":"call_c","name":"grep","arguments":{"pattern":"x"}}
                {"type":"finished","reason":"toolCalls"}
            "#]],
        );
    }

    #[test]
    fn unknown_chunks_and_fields_are_ignored() {
        check(
            &[
                // Azure's content-filter preamble has no choices.
                r#"{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}"#,
                r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","audio":{"id":"a"},"annotations":[]},"finish_reason":"","future":1}],"x_groq":{"id":"req_1"}}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"ok","reasoning_content":null,"reasoning":null}}]}"#,
                "event: ping\ndata: {\"type\":\"ping\"}",
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"textDelta","text":"ok"}
                {"type":"finished","reason":"stop"}
            "#]],
        );
    }

    #[test]
    fn reasoning_under_either_name_is_a_thought() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"reasoning":"Ollama thinks."}}]}"#,
                // Both names with the same text (vLLM): one thought, not two.
                r#"{"choices":[{"index":0,"delta":{"reasoning_content":" vLLM thinks.","reasoning":" vLLM thinks."}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"reasoning":"","content":"Answer."}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."}}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"thoughtDelta","text":"Ollama thinks."}
                {"type":"thoughtDelta","text":" vLLM thinks."}
                {"type":"textDelta","text":"Answer."}
                {"type":"textDelta","text":"I can't help with that."}
                {"type":"finished","reason":"stop"}
            "#]],
        );
    }

    #[test]
    fn finish_reasons() {
        let cases = [
            ("stop", "stop"),
            ("length", "maxTokens"),
            ("tool_calls", "toolCalls"),
            ("function_call", "toolCalls"),
            ("content_filter", "contentFilter"),
        ];
        for (wire, reason) in cases {
            let finish =
                format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{wire}"}}]}}"#);
            assert_eq!(
                decode(&[&finish, "[DONE]"]),
                format!("{{\"type\":\"finished\",\"reason\":\"{reason}\"}}\n"),
                "{wire}"
            );
        }
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"eos_token"}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"finished","reason":{"other":"eos_token"}}
            "#]],
        );
    }

    #[test]
    fn done_without_finish_reason() {
        // No finish_reason at all: the reason follows from what was answered.
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"textDelta","text":"Hi"}
                {"type":"finished","reason":"stop"}
            "#]],
        );
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"now","arguments":"{}"}}]}}]}"#,
                "[DONE]",
            ],
            expect![[r#"
                {"type":"toolCall","id":"c","name":"now","arguments":{}}
                {"type":"finished","reason":"toolCalls"}
            "#]],
        );
    }

    #[test]
    fn finish_reason_without_done_is_enough() {
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}"#,
            ],
            expect![[r#"
                {"type":"textDelta","text":"Hi"}
                {"type":"usage","inputTokens":10,"outputTokens":1,"cachedInputTokens":0,"cacheWriteTokens":0,"thoughtTokens":0}
                {"type":"finished","reason":"stop"}
            "#]],
        );
    }

    #[test]
    fn bad_payloads() {
        let long_arguments = format!(r#"{{\"text\":\"{}"#, "x".repeat(500));
        let long = format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"c","function":{{"name":"write_file","arguments":"{long_arguments}"}}}}]}},"finish_reason":"tool_calls"}}]}}"#
        );
        check(
            &[&long],
            expect![[r#"
            error invalid_stream: invalid response stream: the arguments of tool call `write_file` are not JSON (EOF while parsing a string at line 1 column 509): {"text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…
        "#]],
        );
        check(
            &[
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            ],
            expect![[r#"
                error invalid_stream: invalid response stream: tool call c has no name
            "#]],
        );
        check(
            &[r#"[{"choices":[]}]"#],
            expect![[r#"
            error invalid_stream: invalid response stream: a chunk is not a JSON object: [{"choices":[]}]
        "#]],
        );
        check(
            &["{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial"],
            expect![[r#"
                error invalid_stream: invalid response stream: a chunk is not JSON (EOF while parsing a string at line 1 column 50): {"choices":[{"index":0,"delta":{"content":"partial
            "#]],
        );
    }

    #[test]
    fn mid_stream_errors() {
        let cases = [
            // Ollama.
            (
                r#"{"error":"an error was encountered while running the model: unexpected EOF"}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error server: server error (HTTP 500): an error was encountered while running the model: unexpected EOF
                "#]],
            ),
            (
                r#"{"error":{"message":"Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 512. Please try again in 1.024s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error rate_limited: rate limited (retry after 1.024s): Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 512. Please try again in 1.024s.
                "#]],
            ),
            (
                r#"{"error":{"message":"That model is currently overloaded with other requests.","type":"server_error","param":null,"code":null}}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error overloaded: model overloaded: That model is currently overloaded with other requests.
                "#]],
            ),
            // OpenRouter: a chunk with both an error and a choice.
            (
                r#"{"id":"gen-1","object":"chat.completion.chunk","created":1763402000,"model":"anthropic/claude-sonnet-4.5","provider":"Anthropic","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error server: server error (HTTP 502): Provider returned error
                "#]],
            ),
            // llama.cpp.
            (
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9120,"n_ctx":8192}}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error context_window_exceeded: context window exceeded: the request exceeds the available context size, try increasing it
                "#]],
            ),
            // Azure: the status as a string.
            (
                r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 3 seconds."}}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error rate_limited: rate limited (retry after 3s): Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 3 seconds.
                "#]],
            ),
            (
                r#"{"error":{"message":"Invalid API key","type":"authentication_error"}}"#,
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error authentication: authentication failed: Invalid API key
                "#]],
            ),
            (
                "event: error\ndata: upstream connect error or disconnect/reset before headers",
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error server: server error (HTTP 500): upstream connect error or disconnect/reset before headers
                "#]],
            ),
            (
                "event: error\ndata: {\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}",
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    error overloaded: model overloaded: Overloaded
                "#]],
            ),
        ];
        for (payload, expected) in cases {
            check(
                &[
                    r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
                    payload,
                ],
                expected,
            );
        }
    }

    #[test]
    fn nothing_after_done_counts() {
        let mut decoder = Decoder::default();
        assert_eq!(decoder.event(None, "[DONE]").unwrap().len(), 1);
        assert!(decoder.is_done());
        assert_eq!(decoder.event(None, "not json").unwrap(), Vec::new());
        assert_eq!(decoder.end().unwrap(), Vec::new());
    }

    #[test]
    fn retry_after_in_messages() {
        let cases = [
            ("please try again in 20s.", Some(Duration::from_secs(20))),
            (
                "please try again in 2h3m4s.",
                Some(Duration::from_secs(7384)),
            ),
            (
                "please try again in 7m12.5s.",
                Some(Duration::from_millis(432_500)),
            ),
            ("please try again in a moment.", None),
            ("you can retry your request.", None),
            (
                "please retry after 86400 seconds.",
                Some(Duration::from_secs(86400)),
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(retry_after_in(message), expected, "{message}");
        }
    }
}
