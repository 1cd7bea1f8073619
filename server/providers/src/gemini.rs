//! The Gemini API wire format (`models/{model}:streamGenerateContent?alt=sse`): the request body
//! for a `ChatRequest`, a decoder for its streamed `GenerateContentResponse` chunks, and a reader
//! for its error bodies. Gemini sends each function call whole and often without an id, caches
//! prompts implicitly, and has no end-of-stream event: a chunk with a `finishReason` is the only
//! sign that a response is complete.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::config::{Effort, ModelConfig};
use crate::error::{excerpt, from_status, shorten, ErrorBody, ProviderError, Result};
use crate::model::{
    ChatRequest, FinishReason, Message, Part, Role, StreamEvent, ToolCall, ToolDeclaration, Usage,
};
use crate::wire::{join, StreamDecoder, WireRequest};

pub(crate) fn request(config: &ModelConfig, request: &ChatRequest) -> WireRequest {
    let url = join(
        &config.base_url,
        &format!("models/{}:streamGenerateContent?alt=sse", config.model),
    );
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        request.messages.iter().filter_map(content).collect(),
    );
    if !request.system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": request.system}]}),
        );
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    body.insert(
        "generationConfig".into(),
        generation_config(config, request),
    );
    // Cache breakpoints are ignored: Gemini caches shared prompt prefixes implicitly.
    WireRequest {
        url,
        headers: Vec::new(),
        body: Value::Object(body),
    }
}

/// One `contents[]` entry, or none when every part of the message is dropped (Gemini rejects
/// a content with no parts).
fn content(message: &Message) -> Option<Value> {
    let parts: Vec<Value> = message.parts.iter().filter_map(part).collect();
    if parts.is_empty() {
        return None;
    }
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "model",
    };
    Some(json!({"role": role, "parts": parts}))
}

fn part(part: &Part) -> Option<Value> {
    match part {
        // Gemini rejects empty text parts.
        Part::Text { text } if text.is_empty() => None,
        Part::Text { text } => Some(json!({"text": text})),
        Part::Thought { text, signature } => {
            if text.is_empty() && signature.is_none() {
                return None;
            }
            let mut thought = json!({"text": text, "thought": true});
            if let Some(signature) = signature {
                thought["thoughtSignature"] = json!(signature);
            }
            Some(thought)
        }
        // Anthropic's encrypted reasoning means nothing to Gemini.
        Part::RedactedThought { .. } => None,
        Part::ToolCall(call) => {
            // Gemini wants an object; a call recorded without arguments has none.
            let args = if call.arguments.is_null() {
                json!({})
            } else {
                call.arguments.clone()
            };
            // Ids are not sent: Gemini pairs calls and responses by name and order.
            let mut value = json!({"functionCall": {"name": call.name, "args": args}});
            if let Some(signature) = &call.signature {
                value["thoughtSignature"] = json!(signature);
            }
            Some(value)
        }
        Part::Image(image) => Some(json!({
            "inlineData": {"mimeType": image.media_type, "data": image.data.as_str()}
        })),
        Part::ToolResult(result) => {
            let key = if result.is_error { "error" } else { "output" };
            Some(json!({
                "functionResponse": {"name": result.name, "response": {key: result.content}}
            }))
        }
    }
}

fn declaration(tool: &ToolDeclaration) -> Value {
    // `parametersJsonSchema` takes JSON Schema, but only a subset of it (no `const`, `allOf`,
    // `$schema`, schemas in `additionalProperties`…): an MCP server's schema is brought to that
    // subset; the built-in tools' schemas already fit and pass unchanged.
    json!({
        "name": tool.name,
        "description": tool.description,
        "parametersJsonSchema": crate::schema::for_gemini(&tool.parameters),
    })
}

fn generation_config(config: &ModelConfig, request: &ChatRequest) -> Value {
    let settings = &request.settings;
    let mut generation = Map::new();
    if let Some(temperature) = settings.temperature {
        generation.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = settings.top_p {
        generation.insert("topP".into(), json!(top_p));
    }
    let max_output_tokens = settings
        .max_output_tokens
        .unwrap_or(config.max_output_tokens);
    generation.insert("maxOutputTokens".into(), json!(max_output_tokens));
    if let Some(thinking) = thinking_config(config, settings.thinking_budget) {
        generation.insert("thinkingConfig".into(), thinking);
    }
    Value::Object(generation)
}

/// `thinkingConfig`: a request's own budget, else the model's reasoning setting — a budget
/// where one is given, else the effort as Gemini 3's `thinkingLevel` or Gemini 2.5's budget.
/// Thoughts are included whenever the model thinks, so that they stream to the user.
fn thinking_config(config: &ModelConfig, request_budget: Option<u32>) -> Option<Value> {
    let reasoning = &config.reasoning;
    let name = config.model.rsplit('/').next().unwrap_or(&config.model);
    let levels = name.starts_with("gemini-3");
    if let Some(budget) = request_budget.or(reasoning.budget_tokens) {
        let budget = thinking_budget(name, budget);
        return Some(json!({"thinkingBudget": budget, "includeThoughts": budget != 0}));
    }
    let effort = reasoning.effort?;
    if levels {
        // Gemini 3 Pro knows two levels; it cannot stop thinking.
        let level = match effort {
            Effort::None | Effort::Minimal | Effort::Low => "low",
            Effort::Medium | Effort::High => "high",
        };
        return Some(json!({"thinkingLevel": level, "includeThoughts": true}));
    }
    let budget = thinking_budget(name, effort.budget());
    Some(json!({"thinkingBudget": budget, "includeThoughts": budget != 0}))
}

/// A budget Gemini 2.5 accepts: Pro cannot think less than 128 tokens nor more than 32768,
/// Flash no more than 24576.
fn thinking_budget(name: &str, budget: u32) -> u32 {
    if name.starts_with("gemini-2.5-pro") {
        budget.clamp(128, 32_768)
    } else if name.starts_with("gemini-2.5-flash") {
        budget.min(24_576)
    } else {
        budget
    }
}

/// Reads `{"error": {"code", "message", "status", "details"}}`, or the same wrapped in an array
/// (the streaming endpoint answers errors that way).
pub(crate) fn error_body(body: &str) -> ErrorBody {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let error = match &parsed {
        Some(Value::Array(items)) => items.iter().find_map(|item| item.get("error")),
        Some(value) => value.get("error"),
        None => None,
    };
    match error.and_then(read_error) {
        Some((_, error_body)) => error_body,
        None => ErrorBody {
            message: shorten(body),
            ..ErrorBody::default()
        },
    }
}

/// A Google API error object: its HTTP status (from `code`, else from the `status` name) and
/// what it says. `None` when it has no message.
fn read_error(error: &Value) -> Option<(u16, ErrorBody)> {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())?;
    let status_name = error
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..=599).contains(code))
        .unwrap_or_else(|| http_status(status_name));
    let lower = message.to_lowercase();
    let retry_after = error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|detail| {
            detail.get("@type").and_then(Value::as_str)
                == Some("type.googleapis.com/google.rpc.RetryInfo")
        })
        .find_map(|detail| {
            detail
                .get("retryDelay")
                .and_then(Value::as_str)
                .and_then(duration)
        });
    let body = ErrorBody {
        message: shorten(message),
        context_window_exceeded: lower.contains("input token count")
            && lower.contains("exceeds the maximum"),
        overloaded: status_name == "UNAVAILABLE" || lower.contains("overloaded"),
        retry_after,
    };
    Some((status, body))
}

/// The HTTP status Google maps each `google.rpc.Code` name to.
fn http_status(status: &str) -> u16 {
    match status {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => 400,
        "UNAUTHENTICATED" => 401,
        "PERMISSION_DENIED" => 403,
        "NOT_FOUND" => 404,
        "ABORTED" | "ALREADY_EXISTS" => 409,
        "RESOURCE_EXHAUSTED" => 429,
        "NOT_IMPLEMENTED" => 501,
        "UNAVAILABLE" => 503,
        "DEADLINE_EXCEEDED" => 504,
        _ => 500,
    }
}

/// A protobuf `Duration` in its JSON form: seconds with an `s` suffix (`"30s"`, `"1.5s"`).
fn duration(text: &str) -> Option<Duration> {
    let seconds = text.trim().strip_suffix('s')?.parse::<f64>().ok()?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// One streamed `GenerateContentResponse`. Only what Tandem reads; the rest is ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    candidates: Option<Vec<Candidate>>,
    usage_metadata: Option<UsageMetadata>,
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    parts: Option<Vec<ResponsePart>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponsePart {
    text: Option<String>,
    thought: Option<bool>,
    thought_signature: Option<String>,
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    id: Option<String>,
    name: String,
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
}

/// How the response ended, as far as the stream has said.
enum Finish {
    /// The candidate's `finishReason`, as Gemini spells it.
    Candidate(String),
    /// The prompt was blocked: no candidate at all.
    PromptBlocked,
}

#[derive(Default)]
pub(crate) struct Decoder {
    /// Function calls so far: numbers the ids Tandem makes up, and turns `STOP` into
    /// `ToolCalls`.
    calls: usize,
    usage: Option<Usage>,
    finish: Option<Finish>,
    /// `end` has run; nothing more is emitted.
    ended: bool,
}

impl Decoder {
    fn chunk(&mut self, chunk: Chunk) -> Result<Vec<StreamEvent>> {
        let mut events = Vec::new();
        // Gemini reports usage in several chunks, each time with the totals so far.
        if let Some(metadata) = chunk.usage_metadata {
            let output = metadata.candidates_token_count.unwrap_or(0);
            let thoughts = metadata.thoughts_token_count.unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: metadata.prompt_token_count.unwrap_or(0),
                cached_input_tokens: metadata.cached_content_token_count.unwrap_or(0),
                output_tokens: output.saturating_add(thoughts),
                thought_tokens: thoughts,
                cache_write_tokens: 0,
            });
        }
        let candidate = chunk
            .candidates
            .and_then(|candidates| candidates.into_iter().next());
        let Some(candidate) = candidate else {
            if chunk
                .prompt_feedback
                .and_then(|feedback| feedback.block_reason)
                .is_some()
            {
                self.finish = Some(Finish::PromptBlocked);
            }
            return Ok(events);
        };
        for part in candidate
            .content
            .and_then(|content| content.parts)
            .into_iter()
            .flatten()
        {
            self.part(part, &mut events);
        }
        if let Some(reason) = candidate.finish_reason {
            if reason == "MALFORMED_FUNCTION_CALL" {
                let mut message = "the model produced a malformed function call".to_owned();
                if let Some(detail) = candidate.finish_message.filter(|m| !m.is_empty()) {
                    message.push_str(&format!(": {}", excerpt(&detail)));
                }
                return Err(ProviderError::invalid_stream(message));
            }
            self.finish = Some(Finish::Candidate(reason));
        }
        Ok(events)
    }

    fn part(&mut self, part: ResponsePart, events: &mut Vec<StreamEvent>) {
        if let Some(call) = part.function_call {
            let id = call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{}", self.calls));
            self.calls += 1;
            let arguments = match call.args {
                None | Some(Value::Null) => json!({}),
                Some(args) => args,
            };
            events.push(StreamEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments,
                signature: part.thought_signature,
            }));
        } else if part.thought == Some(true) {
            if let Some(text) = part.text.filter(|text| !text.is_empty()) {
                events.push(StreamEvent::ThoughtDelta { text });
            }
            if let Some(signature) = part.thought_signature.filter(|s| !s.is_empty()) {
                events.push(StreamEvent::ThoughtSignature { signature });
            }
        } else if let Some(text) = part.text.filter(|text| !text.is_empty()) {
            // A signature on a plain text part (a response without calls) need not be sent
            // back, and the model has no part to keep it in.
            events.push(StreamEvent::TextDelta { text });
        }
    }

    fn finish_reason(&self, finish: &Finish) -> FinishReason {
        match finish {
            Finish::PromptBlocked => FinishReason::ContentFilter,
            Finish::Candidate(reason) => match reason.as_str() {
                "STOP" if self.calls > 0 => FinishReason::ToolCalls,
                "STOP" => FinishReason::Stop,
                "MAX_TOKENS" => FinishReason::MaxTokens,
                "SAFETY"
                | "RECITATION"
                | "BLOCKLIST"
                | "PROHIBITED_CONTENT"
                | "SPII"
                | "IMAGE_SAFETY"
                | "IMAGE_PROHIBITED_CONTENT"
                | "IMAGE_RECITATION" => FinishReason::ContentFilter,
                other => FinishReason::Other(other.to_owned()),
            },
        }
    }
}

impl StreamDecoder for Decoder {
    fn event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>> {
        // Gemini names no events; a named one is something newer that Tandem does not read.
        if event.is_some_and(|name| name != "message") || data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(data).map_err(|error| {
            ProviderError::invalid_stream(format!(
                "a chunk is not JSON ({error}): {}",
                excerpt(data)
            ))
        })?;
        if !value.is_object() {
            return Err(ProviderError::invalid_stream(format!(
                "a chunk is not a JSON object: {}",
                excerpt(data)
            )));
        }
        if let Some(error) = value.get("error") {
            return Err(match read_error(error) {
                Some((status, body)) => from_status(status, None, body),
                None => from_status(
                    500,
                    None,
                    ErrorBody {
                        message: shorten(data),
                        ..ErrorBody::default()
                    },
                ),
            });
        }
        let chunk: Chunk = serde_json::from_value(value).map_err(|error| {
            ProviderError::invalid_stream(format!(
                "a chunk is not a GenerateContentResponse ({error}): {}",
                excerpt(data)
            ))
        })?;
        self.chunk(chunk)
    }

    /// Always false: usage may follow the chunk with the `finishReason`, and nothing says when
    /// it has, so the body is read to its end.
    fn is_done(&self) -> bool {
        false
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>> {
        if self.ended {
            return Ok(Vec::new());
        }
        let Some(finish) = &self.finish else {
            return Err(ProviderError::TruncatedStream {
                message: "the stream ended without a chunk carrying a finishReason".into(),
            });
        };
        let reason = self.finish_reason(finish);
        self.ended = true;
        let mut events: Vec<StreamEvent> = self.usage.map(StreamEvent::Usage).into_iter().collect();
        events.push(StreamEvent::Finished { reason });
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ApiKey, ProviderKind};
    use crate::model::{CacheBreakpoint, GenerationSettings, ToolResult};
    use crate::sse::{decode_chunks, render};
    use expect_test::expect;

    fn config() -> ModelConfig {
        let mut config = ModelConfig::new(
            ProviderKind::Gemini,
            "gemini-2.5-pro",
            "https://generativelanguage.googleapis.com/v1beta/",
        );
        config.api_key = Some(ApiKey::new("AIza-secret-key"));
        config.headers = vec![("x-proxy-token".into(), "proxy-secret".into())];
        config
    }

    fn canonical() -> ChatRequest {
        ChatRequest {
            system: "You are Tandem, a coding agent.".into(),
            messages: vec![
                Message::user("Why does `cargo test` fail?"),
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Thought {
                            text: "I should look at the test first.".into(),
                            signature: Some("c2lnLXRob3VnaHQ=".into()),
                        },
                        Part::Text {
                            text: "Let me read the code.".into(),
                        },
                        Part::ToolCall(ToolCall {
                            id: "call_0".into(),
                            name: "read_file".into(),
                            arguments: json!({"path": "src/lib.rs"}),
                            signature: Some("c2lnLWNhbGw=".into()),
                        }),
                        Part::ToolCall(ToolCall {
                            id: "call_1".into(),
                            name: "read_file".into(),
                            arguments: json!({"path": "tests/add.rs"}),
                            signature: None,
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::ToolResult(ToolResult {
                            call_id: "call_0".into(),
                            name: "read_file".into(),
                            content: "pub fn add(a: i32, b: i32) -> i32 { a - b }".into(),
                            is_error: false,
                        }),
                        Part::ToolResult(ToolResult {
                            call_id: "call_1".into(),
                            name: "read_file".into(),
                            content: "no such file: tests/add.rs".into(),
                            is_error: true,
                        }),
                        Part::Text {
                            text: "The tests are in src/lib.rs.".into(),
                        },
                    ],
                },
            ],
            tools: vec![
                ToolDeclaration {
                    name: "read_file".into(),
                    description: "Reads a file of the workspace.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                        "additionalProperties": false
                    }),
                },
                ToolDeclaration {
                    name: "run_command".into(),
                    description: "Runs a shell command.".into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {
                            "command": {"type": "string"},
                            "timeout": {"type": ["integer", "null"]}
                        },
                        "required": ["command"]
                    }),
                },
            ],
            settings: GenerationSettings {
                temperature: Some(0.2),
                max_output_tokens: Some(8192),
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
    fn canonical_request() {
        let wire = request(&config(), &canonical());
        assert_eq!(
            wire.url,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
        assert_eq!(wire.headers, Vec::<(&str, String)>::new());
        let body = pretty(&wire.body);
        assert!(!body.contains("secret"), "credentials leaked into the body");
        expect![[r#"
            {
              "contents": [
                {
                  "role": "user",
                  "parts": [
                    {
                      "text": "Why does `cargo test` fail?"
                    }
                  ]
                },
                {
                  "role": "model",
                  "parts": [
                    {
                      "text": "I should look at the test first.",
                      "thought": true,
                      "thoughtSignature": "c2lnLXRob3VnaHQ="
                    },
                    {
                      "text": "Let me read the code."
                    },
                    {
                      "functionCall": {
                        "name": "read_file",
                        "args": {
                          "path": "src/lib.rs"
                        }
                      },
                      "thoughtSignature": "c2lnLWNhbGw="
                    },
                    {
                      "functionCall": {
                        "name": "read_file",
                        "args": {
                          "path": "tests/add.rs"
                        }
                      }
                    }
                  ]
                },
                {
                  "role": "user",
                  "parts": [
                    {
                      "functionResponse": {
                        "name": "read_file",
                        "response": {
                          "output": "pub fn add(a: i32, b: i32) -> i32 { a - b }"
                        }
                      }
                    },
                    {
                      "functionResponse": {
                        "name": "read_file",
                        "response": {
                          "error": "no such file: tests/add.rs"
                        }
                      }
                    },
                    {
                      "text": "The tests are in src/lib.rs."
                    }
                  ]
                }
              ],
              "systemInstruction": {
                "parts": [
                  {
                    "text": "You are Tandem, a coding agent."
                  }
                ]
              },
              "tools": [
                {
                  "functionDeclarations": [
                    {
                      "name": "read_file",
                      "description": "Reads a file of the workspace.",
                      "parametersJsonSchema": {
                        "type": "object",
                        "properties": {
                          "path": {
                            "type": "string"
                          }
                        },
                        "required": [
                          "path"
                        ],
                        "additionalProperties": false
                      }
                    },
                    {
                      "name": "run_command",
                      "description": "Runs a shell command.",
                      "parametersJsonSchema": {
                        "type": "object",
                        "properties": {
                          "command": {
                            "type": "string"
                          },
                          "timeout": {
                            "type": [
                              "integer",
                              "null"
                            ]
                          }
                        },
                        "required": [
                          "command"
                        ]
                      }
                    }
                  ]
                }
              ],
              "generationConfig": {
                "temperature": 0.2,
                "maxOutputTokens": 8192,
                "thinkingConfig": {
                  "thinkingBudget": 10000,
                  "includeThoughts": true
                }
              }
            }"#]]
        .assert_eq(&body);
    }

    /// No system instruction and no tools: both fields are left out. Also: the configured
    /// output limit, thinking, dropped parts and a message left with no parts.
    /// An MCP server's schema (zod's `const` and `$defs`) is brought to Gemini's subset; the
    /// canonical request above shows a schema that fits passing unchanged.
    #[test]
    fn declarations_take_the_schema_subset_gemini_accepts() {
        let tool = ToolDeclaration {
            name: "mcp__github__create_issue".into(),
            description: "Creates an issue.".into(),
            parameters: json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"kind": {"const": "bug"}, "owner": {"$ref": "#/$defs/User"}},
                "$defs": {"User": {"type": "string"}}
            }),
        };
        assert_eq!(
            declaration(&tool)["parametersJsonSchema"],
            json!({
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["bug"]},
                    "owner": {"type": "string"}
                }
            })
        );
    }

    #[test]
    fn minimal_request() {
        let request = ChatRequest {
            messages: vec![
                Message::user("Hi"),
                Message {
                    role: Role::Assistant,
                    parts: vec![Part::RedactedThought {
                        data: "opaque".into(),
                    }],
                },
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::RedactedThought {
                            data: "opaque".into(),
                        },
                        Part::Thought {
                            text: String::new(),
                            signature: Some("c2ln".into()),
                        },
                        Part::Text {
                            text: String::new(),
                        },
                        Part::Text {
                            text: "Hello!".into(),
                        },
                    ],
                },
            ],
            settings: GenerationSettings {
                top_p: Some(0.95),
                thinking_budget: Some(2048),
                ..GenerationSettings::default()
            },
            ..ChatRequest::default()
        };
        let body = pretty(&super::request(&config(), &request).body);
        expect![[r#"
            {
              "contents": [
                {
                  "role": "user",
                  "parts": [
                    {
                      "text": "Hi"
                    }
                  ]
                },
                {
                  "role": "model",
                  "parts": [
                    {
                      "text": "",
                      "thought": true,
                      "thoughtSignature": "c2ln"
                    },
                    {
                      "text": "Hello!"
                    }
                  ]
                }
              ],
              "generationConfig": {
                "topP": 0.95,
                "maxOutputTokens": 65536,
                "thinkingConfig": {
                  "thinkingBudget": 2048,
                  "includeThoughts": true
                }
              }
            }"#]]
        .assert_eq(&body);
    }

    #[test]
    fn base_url_without_trailing_slash() {
        let mut config = config();
        config.base_url = "http://localhost:8080/v1beta".into();
        config.model = "gemini-2.5-flash".into();
        assert_eq!(
            request(&config, &ChatRequest::default()).url,
            "http://localhost:8080/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
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
            Case {
                body: r#"{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
          {
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            "quotaDimensions": {
              "location": "global",
              "model": "gemini-2.5-pro"
            },
            "quotaValue": "5"
          }
        ]
      },
      {
        "@type": "type.googleapis.com/google.rpc.Help",
        "links": [
          {
            "description": "Learn more about Gemini API quotas",
            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"
          }
        ]
      },
      {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "32s"
      }
    ]
  }
}
"#,
                message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
                context_window_exceeded: false,
                overloaded: false,
                retry_after: Some(Duration::from_secs(32)),
            },
            Case {
                body: r#"[{
  "error": {
    "code": 429,
    "message": "Resource has been exhausted (e.g. check quota).",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "1.5s"
      }
    ]
  }
}
]"#,
                message: "Resource has been exhausted (e.g. check quota).",
                context_window_exceeded: false,
                overloaded: false,
                retry_after: Some(Duration::from_millis(1500)),
            },
            Case {
                body: r#"{
  "error": {
    "code": 503,
    "message": "The model is overloaded. Please try again later.",
    "status": "UNAVAILABLE"
  }
}
"#,
                message: "The model is overloaded. Please try again later.",
                context_window_exceeded: false,
                overloaded: true,
                retry_after: None,
            },
            Case {
                body: r#"{
  "error": {
    "code": 400,
    "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    "status": "INVALID_ARGUMENT"
  }
}
"#,
                message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                context_window_exceeded: true,
                overloaded: false,
                retry_after: None,
            },
            plain(
                r#"{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {
          "service": "generativelanguage.googleapis.com"
        }
      },
      {
        "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
        "locale": "en-US",
        "message": "API key not valid. Please pass a valid API key."
      }
    ]
  }
}
"#,
                "API key not valid. Please pass a valid API key.",
            ),
            plain(
                r#"{
  "error": {
    "code": 404,
    "message": "models/gemini-9-pro is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
    "status": "NOT_FOUND"
  }
}
"#,
                "models/gemini-9-pro is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
            ),
            plain(
                r#"{
  "error": {
    "code": 500,
    "message": "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    "status": "INTERNAL"
  }
}
"#,
                "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
            ),
            plain(
                "<html><body><h1>502 Bad Gateway</h1></body></html>\n",
                "<html><body><h1>502 Bad Gateway</h1></body></html>",
            ),
            plain(r#"{"error": "quota"}"#, r#"{"error": "quota"}"#),
            plain("", ""),
        ];
        for case in cases {
            let body = error_body(case.body);
            assert_eq!(body.message, case.message, "{}", case.body);
            assert_eq!(
                body.context_window_exceeded, case.context_window_exceeded,
                "{}",
                case.body
            );
            assert_eq!(body.overloaded, case.overloaded, "{}", case.body);
            assert_eq!(body.retry_after, case.retry_after, "{}", case.body);
        }
    }

    /// Decodes SSE `data:` payloads, one event each, CRLF-framed as Gemini frames them.
    fn decode(payloads: &[&str]) -> String {
        let body: String = payloads
            .iter()
            .map(|data| format!("data: {data}\r\n\r\n"))
            .collect();
        render(&decode_chunks(
            Box::<Decoder>::default(),
            vec![body.into_bytes()],
        ))
    }

    #[test]
    fn decoder_edge_cases() {
        let cases: &[(&str, &[&str], expect_test::Expect)] = &[
            (
                "given ids are kept, missing ones numbered, missing args are {}",
                &[
                    r#"{"candidates": [{"content": {"parts": [{"functionCall": {"id": "fc-7","name": "a","args": {"x": 1}}},{"functionCall": {"name": "b"}},{"functionCall": {"name": "c","args": null}}],"role": "model"},"finishReason": "STOP","index": 0}]}"#,
                ],
                expect![[r#"
                    {"type":"toolCall","id":"fc-7","name":"a","arguments":{"x":1}}
                    {"type":"toolCall","id":"call_1","name":"b","arguments":{}}
                    {"type":"toolCall","id":"call_2","name":"c","arguments":{}}
                    {"type":"finished","reason":"toolCalls"}
                "#]],
            ),
            (
                "unknown fields, parts and named events are ignored; empty text skipped",
                &[
                    r#"{"candidates": [{"content": {"parts": [{"executableCode": {"language": "PYTHON","code": "1"}},{"text": ""},{"text": "ok","thoughtSignature": "c2ln"},{"thoughtSignature": "c2ln"}],"role": "model"},"index": 0,"groundingMetadata": {}}],"modelVersion": "gemini-3-pro","newField": [1]}"#,
                    r#"{"candidates": [{"content": {"parts": [{"text": "","thought": true,"thoughtSignature": "c2lnLTI="}],"role": "model"},"finishReason": "STOP","index": 0}]}"#,
                ],
                expect![[r#"
                    {"type":"textDelta","text":"ok"}
                    {"type":"thoughtSignature","signature":"c2lnLTI="}
                    {"type":"finished","reason":"stop"}
                "#]],
            ),
            (
                "the latest usage wins and may come after the finishReason",
                &[
                    r#"{"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 10,"totalTokenCount": 10}}"#,
                    r#"{"candidates": [{"content": {"parts": [{"text": "."}],"role": "model"},"finishReason": "MAX_TOKENS","index": 0}]}"#,
                    r#"{"usageMetadata": {"promptTokenCount": 10,"candidatesTokenCount": 2,"thoughtsTokenCount": 5,"totalTokenCount": 17}}"#,
                ],
                expect![[r#"
                    {"type":"textDelta","text":"Hi"}
                    {"type":"textDelta","text":"."}
                    {"type":"usage","inputTokens":10,"outputTokens":7,"cachedInputTokens":0,"cacheWriteTokens":0,"thoughtTokens":5}
                    {"type":"finished","reason":"maxTokens"}
                "#]],
            ),
            (
                "a blocked prompt completes the response with contentFilter",
                &[
                    r#"{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 8},"modelVersion": "gemini-2.5-flash"}"#,
                ],
                expect![[r#"
                    {"type":"usage","inputTokens":8,"outputTokens":0,"cachedInputTokens":0,"cacheWriteTokens":0,"thoughtTokens":0}
                    {"type":"finished","reason":"contentFilter"}
                "#]],
            ),
            (
                "safety stops are contentFilter, unknown reasons are kept",
                &[
                    r#"{"candidates": [{"content": {"parts": [{"text": "Sure"}],"role": "model"},"finishReason": "SAFETY","index": 0}]}"#,
                ],
                expect![[r#"
                    {"type":"textDelta","text":"Sure"}
                    {"type":"finished","reason":"contentFilter"}
                "#]],
            ),
            (
                "an unknown finish reason",
                &[r#"{"candidates": [{"finishReason": "LANGUAGE","index": 0}]}"#],
                expect![[r#"
                    {"type":"finished","reason":{"other":"LANGUAGE"}}
                "#]],
            ),
            (
                "a malformed function call fails the chunk that reports it",
                &[
                    r#"{"candidates": [{"content": {"parts": [{"text": "Calling"}],"role": "model"},"finishReason": "MALFORMED_FUNCTION_CALL","finishMessage": "Malformed function call: print(default_api.read_file(path=))","index": 0}]}"#,
                ],
                expect![[r#"
                    error invalid_stream: invalid response stream: the model produced a malformed function call: Malformed function call: print(default_api.read_file(path=))
                "#]],
            ),
            (
                "a mid-stream rate limit",
                &[
                    r#"{"error": {"code": 429,"message": "Resource has been exhausted (e.g. check quota).","status": "RESOURCE_EXHAUSTED"}}"#,
                ],
                expect![[r#"
                    error rate_limited: rate limited: Resource has been exhausted (e.g. check quota).
                "#]],
            ),
            (
                "a mid-stream internal error without a code",
                &[
                    r#"{"error": {"message": "An internal error has occurred.","status": "INTERNAL"}}"#,
                ],
                expect![[r#"
                    error server: server error (HTTP 500): An internal error has occurred.
                "#]],
            ),
            (
                "a chunk of the wrong shape",
                &[r#"{"candidates": {"content": "text"}}"#],
                expect![[r#"
                    error invalid_stream: invalid response stream: a chunk is not a GenerateContentResponse (invalid type: map, expected a sequence): {"candidates": {"content": "text"}}
                "#]],
            ),
            (
                "a chunk that is not an object",
                &[r#"["text"]"#],
                expect![[r#"
                    error invalid_stream: invalid response stream: a chunk is not a JSON object: ["text"]
                "#]],
            ),
            (
                "an empty body",
                &[],
                expect![[r#"
                    error truncated_stream: response stream ended early: the stream ended without a chunk carrying a finishReason
                "#]],
            ),
        ];
        for (name, payloads, expected) in cases {
            eprintln!("case: {name}");
            expected.assert_eq(&decode(payloads));
        }
    }

    #[test]
    fn bad_data_is_quoted_briefly() {
        let long = format!("{{\"candidates\": [{}", "x".repeat(1000));
        let rendered = decode(&[&long]);
        assert!(rendered.starts_with("error invalid_stream:"), "{rendered}");
        assert!(rendered.len() < 500, "{rendered}");
    }

    #[test]
    fn end_emits_its_events_once() {
        let mut decoder = Decoder::default();
        let data = r#"{"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"},"finishReason": "STOP","index": 0}]}"#;
        assert_eq!(
            decoder.event(None, data).unwrap(),
            vec![StreamEvent::TextDelta { text: "Hi".into() }]
        );
        assert!(!decoder.is_done());
        assert_eq!(
            decoder.end().unwrap(),
            vec![StreamEvent::Finished {
                reason: FinishReason::Stop
            }]
        );
        assert_eq!(decoder.end().unwrap(), Vec::new());
    }

    #[test]
    fn retry_delays() {
        assert_eq!(duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(duration("0.250s"), Some(Duration::from_millis(250)));
        assert_eq!(duration("30"), None);
        assert_eq!(duration("-1s"), None);
    }
}
