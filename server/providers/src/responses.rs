//! OpenAI's Responses API (`POST {base}/responses` with `stream: true`): the request body, the
//! decoder for its typed SSE events (`response.output_item.*`, `response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.*`,
//! `response.completed` / `incomplete` / `failed`, `error`), and, shared with Chat Completions,
//! the reader for its error bodies.
//!
//! Requests are stateless (`store: false`): the whole history goes in `input` every time, as
//! on the other wires, so the append-only prefix and the prompt cache work the same way. The
//! model's reasoning comes back as `reasoning` items whose `encrypted_content` (asked for with
//! `include`) must be sent back with the next request for the model to keep its train of
//! thought across tool calls; it travels as the signature of a `Part::Thought` whose text is the
//! reasoning summary, so `history.rs` sends it back only to the model that issued it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::config::{Effort, ModelConfig};
use crate::error::{excerpt, shorten, ProviderError, Result};
use crate::model::{ChatRequest, FinishReason, Message, Part, Role, StreamEvent, ToolCall, Usage};
use crate::openai::{cache_key, endpoint, reasoning_effort, result_text, stream_error};
use crate::wire::{StreamDecoder, WireRequest};

pub(crate) fn request(config: &ModelConfig, request: &ChatRequest) -> WireRequest {
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    if !request.system.is_empty() {
        body.insert("instructions".into(), json!(request.system));
    }
    body.insert("input".into(), Value::Array(input(&request.messages)));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    // Strict mode needs every property required and no free-form objects,
                    // which MCP servers' schemas do not promise.
                    "strict": false,
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
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(effort) = reasoning_effort(config, request) {
        let mut reasoning = json!({"effort": effort.as_str()});
        if effort != Effort::None {
            // A summary of the reasoning is what the user sees of it.
            reasoning["summary"] = json!("auto");
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        body.insert("reasoning".into(), reasoning);
    }
    // Nothing is kept on OpenAI's side: the history travels whole, reasoning encrypted.
    body.insert("store".into(), json!(false));
    body.insert("stream".into(), json!(true));
    if let Some(key) = cache_key(config, request) {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    WireRequest {
        url: endpoint(config, "responses"),
        headers: Vec::new(),
        body: Value::Object(body),
    }
}

/// The history as input items, in order. A user message's tool results come first (each a
/// `function_call_output` after the calls of the message before), then its texts as one
/// message. An assistant message's parts keep their order: reasoning, text, calls.
fn input(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        match message.role {
            Role::User => user_items(message, &mut items),
            Role::Assistant => assistant_items(message, &mut items),
        }
    }
    items
}

fn user_items(message: &Message, items: &mut Vec<Value>) {
    for part in &message.parts {
        if let Part::ToolResult(result) = part {
            items.push(json!({
                "type": "function_call_output",
                "call_id": result.call_id,
                "output": result_text(result),
            }));
        }
    }
    let content: Vec<Value> = message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } if !text.is_empty() => {
                Some(json!({"type": "input_text", "text": text}))
            }
            Part::Image(image) => {
                Some(json!({"type": "input_image", "image_url": image.data_url()}))
            }
            _ => None,
        })
        .collect();
    if !content.is_empty() {
        items.push(json!({"type": "message", "role": "user", "content": content}));
    }
}

/// A thought goes back only with its encrypted reasoning: without it (another provider's
/// thought, or one whose token was not issued here) the API has nothing to read.
fn assistant_items(message: &Message, items: &mut Vec<Value>) {
    let mut text: Vec<Value> = Vec::new();
    let flush = |text: &mut Vec<Value>, items: &mut Vec<Value>| {
        if !text.is_empty() {
            items.push(json!({
                "type": "message",
                "role": "assistant",
                "content": std::mem::take(text),
            }));
        }
    };
    for part in &message.parts {
        match part {
            Part::Text { text: piece } if !piece.is_empty() => {
                text.push(json!({"type": "output_text", "text": piece}));
            }
            Part::Thought {
                text: summary,
                signature: Some(encrypted),
            } => {
                flush(&mut text, items);
                let summary: Vec<Value> = if summary.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "summary_text", "text": summary})]
                };
                items.push(json!({
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": encrypted,
                }));
            }
            Part::ToolCall(call) => {
                flush(&mut text, items);
                items.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments.to_string(),
                }));
            }
            Part::Text { .. }
            | Part::Thought { .. }
            | Part::RedactedThought { .. }
            | Part::ToolResult(_)
            | Part::Image(_) => {}
        }
    }
    flush(&mut text, items);
}

/// Decodes the events of one streamed response.
#[derive(Default)]
pub(crate) struct Decoder {
    /// Function calls still receiving arguments, by `output_index`.
    calls: BTreeMap<u64, PartialCall>,
    /// Output items that streamed deltas (text or summary), so that their `done` item does
    /// not repeat them.
    streamed: BTreeSet<u64>,
    /// The reasoning item and summary part the last summary delta belonged to: a new part of
    /// the same item starts a new paragraph.
    summary_at: Option<(u64, u64)>,
    emitted_tool_calls: bool,
    refused: bool,
    done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    call_id: String,
    name: String,
    arguments: String,
}

impl StreamDecoder for Decoder {
    fn event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>> {
        let data = data.trim();
        if self.done || data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let value = match serde_json::from_str::<Value>(data) {
            Ok(value) => value,
            Err(_) if event == Some("error") => {
                return Err(stream_error(&Value::String(shorten(data))))
            }
            Err(error) => {
                return Err(ProviderError::invalid_stream(format!(
                    "an event is not JSON ({error}): {}",
                    excerpt(data)
                )))
            }
        };
        // The event's type is in its data; the SSE `event:` name repeats it.
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event)
            .unwrap_or_default();
        let index = value.get("output_index").and_then(Value::as_u64);
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        let mut events = Vec::new();
        match kind {
            "response.output_item.added" => {
                let item = &value["item"];
                if let (Some(index), Some("function_call")) = (index, item["type"].as_str()) {
                    self.calls.insert(
                        index,
                        PartialCall {
                            call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                            name: item["name"].as_str().unwrap_or_default().to_owned(),
                            arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
                        },
                    );
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = text("delta") {
                    let index = index.unwrap_or_default();
                    let part = value
                        .get("summary_index")
                        .or_else(|| value.get("content_index"))
                        .and_then(Value::as_u64)
                        .unwrap_or_default();
                    let mut text = String::new();
                    if matches!(self.summary_at, Some((item, at)) if item == index && at != part) {
                        text.push_str("\n\n");
                    }
                    text.push_str(delta);
                    self.summary_at = Some((index, part));
                    self.streamed.insert(index);
                    events.push(StreamEvent::ThoughtDelta { text });
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = text("delta") {
                    self.refused |= kind == "response.refusal.delta";
                    self.streamed.insert(index.unwrap_or_default());
                    events.push(StreamEvent::TextDelta {
                        text: delta.to_owned(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(call), Some(delta)) = (
                    index.and_then(|index| self.calls.get_mut(&index)),
                    text("delta"),
                ) {
                    call.arguments.push_str(delta);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(call), Some(arguments)) = (
                    index.and_then(|index| self.calls.get_mut(&index)),
                    value.get("arguments").and_then(Value::as_str),
                ) {
                    arguments.clone_into(&mut call.arguments);
                }
            }
            "response.output_item.done" => {
                events.extend(self.item_done(index.unwrap_or_default(), &value["item"])?);
            }
            "response.completed" | "response.incomplete" => {
                let response = &value["response"];
                events.extend(self.take_calls()?);
                if let Some(usage) = response.get("usage").filter(|usage| usage.is_object()) {
                    events.push(StreamEvent::Usage(read_usage(usage)));
                }
                let reason = if kind == "response.incomplete" {
                    match response["incomplete_details"]["reason"].as_str() {
                        Some("max_output_tokens") => FinishReason::MaxTokens,
                        Some("content_filter") => FinishReason::ContentFilter,
                        Some(other) => FinishReason::Other(other.to_owned()),
                        None => FinishReason::Other("incomplete".to_owned()),
                    }
                } else if self.refused {
                    FinishReason::ContentFilter
                } else if self.emitted_tool_calls {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                self.done = true;
                events.push(StreamEvent::Finished { reason });
            }
            "response.failed" => {
                let error = &value["response"]["error"];
                let error = if error.is_object() { error } else { &value };
                return Err(stream_error(error));
            }
            "error" => {
                // `{"type": "error", "code", "message", "param"}`, or the same under `error`.
                let error = value.get("error").filter(|error| error.is_object());
                return Err(stream_error(error.unwrap_or(&value)));
            }
            // `response.created`, `…in_progress`, `…content_part.*`, `…output_text.done`,
            // summary part events and any the API adds later carry nothing new.
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
        let mut message = "the stream ended before response.completed".to_owned();
        if let Some(call) = self.calls.values().next_back() {
            message.push_str(&format!(", in the middle of tool call `{}`", call.name));
        }
        Err(ProviderError::TruncatedStream { message })
    }
}

impl Decoder {
    /// A finished output item: a function call is complete now; a reasoning item brings its
    /// encrypted content (and its summary, when none was streamed); a message its text, when
    /// none was streamed.
    fn item_done(&mut self, index: u64, item: &Value) -> Result<Vec<StreamEvent>> {
        let mut events = Vec::new();
        let streamed = self.streamed.contains(&index);
        match item["type"].as_str() {
            Some("function_call") => {
                let mut call = self.calls.remove(&index).unwrap_or_default();
                for (key, slot) in [
                    ("call_id", &mut call.call_id),
                    ("name", &mut call.name),
                    ("arguments", &mut call.arguments),
                ] {
                    if let Some(value) = item[key].as_str().filter(|value| !value.is_empty()) {
                        value.clone_into(slot);
                    }
                }
                events.push(tool_call(index, call)?);
                self.emitted_tool_calls = true;
            }
            Some("reasoning") => {
                if !streamed {
                    let summary: Vec<&str> = item["summary"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part["text"].as_str())
                        .filter(|text| !text.is_empty())
                        .collect();
                    if !summary.is_empty() {
                        events.push(StreamEvent::ThoughtDelta {
                            text: summary.join("\n\n"),
                        });
                    }
                }
                if let Some(encrypted) = item["encrypted_content"]
                    .as_str()
                    .filter(|encrypted| !encrypted.is_empty())
                {
                    events.push(StreamEvent::ThoughtSignature {
                        signature: encrypted.to_owned(),
                    });
                }
                self.summary_at = None;
            }
            Some("message") if !streamed => {
                for part in item["content"].as_array().into_iter().flatten() {
                    let text = part["text"].as_str().or_else(|| part["refusal"].as_str());
                    if let Some(text) = text.filter(|text| !text.is_empty()) {
                        self.refused |= part["type"] == "refusal";
                        events.push(StreamEvent::TextDelta {
                            text: text.to_owned(),
                        });
                    }
                }
            }
            _ => {}
        }
        Ok(events)
    }

    /// Calls whose item never finished (a server that sends only `response.completed`).
    fn take_calls(&mut self) -> Result<Vec<StreamEvent>> {
        let calls = std::mem::take(&mut self.calls);
        let events = calls
            .into_iter()
            .map(|(index, call)| tool_call(index, call))
            .collect::<Result<Vec<_>>>()?;
        self.emitted_tool_calls |= !events.is_empty();
        Ok(events)
    }
}

fn tool_call(index: u64, call: PartialCall) -> Result<StreamEvent> {
    if call.name.is_empty() {
        return Err(ProviderError::invalid_stream(format!(
            "function call #{index} has no name"
        )));
    }
    let arguments = crate::wire::call_arguments(&call.arguments, &format!("`{}`", call.name))?;
    let id = if call.call_id.is_empty() {
        format!("call_{index}")
    } else {
        call.call_id
    };
    Ok(StreamEvent::ToolCall(ToolCall {
        id,
        name: call.name,
        arguments,
        signature: None,
    }))
}

/// `input_tokens` counts the cached part, `output_tokens` the reasoning, as `Usage` wants them.
fn read_usage(usage: &Value) -> Usage {
    let count = |path: &[&str]| {
        path.iter()
            .try_fold(usage, |value, key| value.get(*key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: count(&["input_tokens"]),
        output_tokens: count(&["output_tokens"]),
        cached_input_tokens: count(&["input_tokens_details", "cached_tokens"]),
        cache_write_tokens: 0,
        thought_tokens: count(&["output_tokens_details", "reasoning_tokens"]),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::config::{ProviderKind, Reasoning, ReasoningSource};
    use crate::model::{GenerationSettings, ToolDeclaration, ToolResult};

    fn config(model: &str) -> ModelConfig {
        let mut config = ModelConfig::new(ProviderKind::OpenAi, model, "https://api.openai.com/v1");
        config.api_key = None;
        config
    }

    fn conversation() -> ChatRequest {
        ChatRequest {
            system: "You are terse.".into(),
            messages: vec![
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text {
                            text: "<environment>…</environment>".into(),
                        },
                        Part::Text {
                            text: "Fix the test".into(),
                        },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Thought {
                            text: "**Reading the test**".into(),
                            signature: Some("gAAAAB-encrypted".into()),
                        },
                        Part::Thought {
                            text: "from another provider".into(),
                            signature: None,
                        },
                        Part::Text {
                            text: "Reading it.".into(),
                        },
                        Part::ToolCall(ToolCall {
                            id: "call_a".into(),
                            name: "read_file".into(),
                            arguments: json!({"path": "t.rs"}),
                            signature: None,
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![Part::ToolResult(ToolResult {
                        call_id: "call_a".into(),
                        name: "read_file".into(),
                        content: "no such file".into(),
                        is_error: true,
                    })],
                },
            ],
            tools: vec![ToolDeclaration {
                name: "read_file".into(),
                description: "Reads a file.".into(),
                parameters: json!({"type": "object"}),
            }],
            settings: GenerationSettings {
                max_output_tokens: Some(1000),
                ..GenerationSettings::default()
            },
            cache_breakpoints: Vec::new(),
            cache_key: Some("session-1".into()),
        }
    }

    #[test]
    fn request_sends_the_history_as_items_with_reasoning_carried_and_nothing_stored() {
        let wire = request(&config("gpt-5"), &conversation());
        assert_eq!(wire.url, "https://api.openai.com/v1/responses");
        expect![[r#"
            {
              "model": "gpt-5",
              "instructions": "You are terse.",
              "input": [
                {
                  "type": "message",
                  "role": "user",
                  "content": [
                    {
                      "type": "input_text",
                      "text": "<environment>…</environment>"
                    },
                    {
                      "type": "input_text",
                      "text": "Fix the test"
                    }
                  ]
                },
                {
                  "type": "reasoning",
                  "summary": [
                    {
                      "type": "summary_text",
                      "text": "**Reading the test**"
                    }
                  ],
                  "encrypted_content": "gAAAAB-encrypted"
                },
                {
                  "type": "message",
                  "role": "assistant",
                  "content": [
                    {
                      "type": "output_text",
                      "text": "Reading it."
                    }
                  ]
                },
                {
                  "type": "function_call",
                  "call_id": "call_a",
                  "name": "read_file",
                  "arguments": "{\"path\":\"t.rs\"}"
                },
                {
                  "type": "function_call_output",
                  "call_id": "call_a",
                  "output": "Error: no such file"
                }
              ],
              "tools": [
                {
                  "type": "function",
                  "name": "read_file",
                  "description": "Reads a file.",
                  "parameters": {
                    "type": "object"
                  },
                  "strict": false
                }
              ],
              "max_output_tokens": 1000,
              "include": [
                "reasoning.encrypted_content"
              ],
              "reasoning": {
                "effort": "medium",
                "summary": "auto"
              },
              "store": false,
              "stream": true,
              "prompt_cache_key": "session-1"
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&wire.body).unwrap());
    }

    #[test]
    fn a_model_that_does_not_reason_gets_no_reasoning_fields_and_effort_none_no_summary() {
        let mut request_ = conversation();
        request_.cache_key = None;
        let body = request(&config("gpt-4.1"), &request_).body;
        assert!(body.get("reasoning").is_none() && body.get("include").is_none());
        assert!(body.get("prompt_cache_key").is_none());
        let mut off = config("gpt-5.1");
        off.reasoning = Reasoning {
            effort: Some(Effort::None),
            budget_tokens: None,
            source: ReasoningSource::Settings,
        };
        let body = request(&off, &conversation()).body;
        assert_eq!(body["reasoning"], json!({"effort": "none"}));
        assert!(body.get("include").is_none());
        // A request's own budget wins over the model's setting; 0 turns reasoning off.
        let mut quick = conversation();
        quick.settings.thinking_budget = Some(0);
        assert_eq!(
            request(&config("gpt-5"), &quick).body["reasoning"]["effort"],
            "none"
        );
    }

    #[test]
    fn azure_gets_its_api_version_and_servers_that_route_no_cache_key() {
        let mut azure = ModelConfig::new(
            ProviderKind::OpenAi,
            "gpt-5",
            "https://contoso.openai.azure.com/openai/v1",
        );
        azure.api_version = Some("preview".into());
        let wire = request(&azure, &conversation());
        assert_eq!(
            wire.url,
            "https://contoso.openai.azure.com/openai/v1/responses?api-version=preview"
        );
        assert!(wire.body.get("prompt_cache_key").is_none());
        assert!(azure.is_azure());
        assert_eq!(
            crate::wire::Wire::Responses.auth_header(&azure, "k"),
            ("api-key", "k".to_owned())
        );
    }

    fn decode(events: &[Value]) -> Result<Vec<StreamEvent>> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for event in events {
            out.extend(decoder.event(event["type"].as_str(), &event.to_string())?);
        }
        out.extend(decoder.end()?);
        Ok(out)
    }

    #[test]
    fn a_summary_of_two_parts_is_two_paragraphs_and_the_encrypted_reasoning_signs_it() {
        let events = decode(&[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "First."}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "Second."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}], "encrypted_content": "enc"}}),
            json!({"type": "response.completed", "response": {"status": "completed"}}),
        ])
        .unwrap();
        let mut response = crate::model::Response::default();
        for event in &events {
            response.push(event);
        }
        assert_eq!(
            response.message.parts,
            vec![Part::Thought {
                text: "First.\n\nSecond.".into(),
                signature: Some("enc".into())
            }]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    }

    #[test]
    fn a_server_that_streams_no_deltas_still_gives_text_summary_and_calls() {
        let events = decode(&[
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan."}]}}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}}),
            json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "call_id": "call_9", "name": "grep", "arguments": "{\"pattern\":\"x\"}"}}),
            json!({"type": "response.completed", "response": {"usage": {"input_tokens": 10, "output_tokens": 3}}}),
        ])
        .unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::ThoughtDelta {
                    text: "Plan.".into()
                },
                StreamEvent::TextDelta {
                    text: "Done.".into()
                },
                StreamEvent::ToolCall(ToolCall {
                    id: "call_9".into(),
                    name: "grep".into(),
                    arguments: json!({"pattern": "x"}),
                    signature: None,
                }),
                StreamEvent::Usage(Usage {
                    input_tokens: 10,
                    output_tokens: 3,
                    ..Usage::default()
                }),
                StreamEvent::Finished {
                    reason: FinishReason::ToolCalls
                },
            ]
        );
    }

    #[test]
    fn failures_are_typed_by_their_code() {
        let failed = decode(&[
            json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}),
        ]);
        assert!(
            matches!(failed, Err(ProviderError::ContextWindowExceeded { .. })),
            "{failed:?}"
        );
        let limited = decode(&[
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached. Please try again in 1.5s.", "param": null}),
        ]);
        assert!(
            matches!(&limited, Err(error) if error.is_retryable()),
            "{limited:?}"
        );
        let cut = decode(&[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c", "name": "edit", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"pa"}),
        ]);
        assert!(
            matches!(&cut, Err(ProviderError::TruncatedStream { message }) if message.contains("`edit`")),
            "{cut:?}"
        );
    }
}
