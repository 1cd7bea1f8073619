//! The one chat model every provider speaks: a request (system instruction, messages, tools,
//! generation settings) and the events of a streamed response. Wire formats convert to and from
//! these types; the agent never sees a wire format.
//!
//! Everything here is plain data and serialises with serde (camelCase), because the replay
//! provider's scripts and saved sessions are written in it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One request to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ChatRequest {
    /// The system instruction. Empty means none.
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDeclaration>,
    pub settings: GenerationSettings,
    /// Where prompt caching may cut the prefix (Anthropic's `cache_control`). Providers that
    /// cache automatically (OpenAI, Gemini) ignore them. Anthropic allows at most four.
    pub cache_breakpoints: Vec<CacheBreakpoint>,
    /// The same for every request of a session (its id): servers that route by it
    /// (`prompt_cache_key`, OpenAI) send a session's requests to the same prompt cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}

/// A point after which the provider may cache the prefix of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CacheBreakpoint {
    /// After the tool declarations.
    Tools,
    /// After the system instruction.
    System,
    /// After the last part of `messages[i]`.
    Message(usize),
}

/// Who wrote a message. Tool results travel in user messages, as Anthropic and Gemini require;
/// the OpenAI wire format turns them into `role: tool` messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// The text parts joined, without thoughts.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|part| match part {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Part {
    Text {
        text: String,
    },
    /// The model's reasoning. `signature` is the provider's opaque token that must be sent back
    /// unchanged with the thought (Anthropic `signature`, Gemini `thoughtSignature`).
    Thought {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted (Anthropic `redacted_thinking`); sent back as is.
    RedactedThought {
        data: String,
    },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    /// An image the model is shown: one the user attached to a prompt, or one a tool
    /// (`view_image`) brings, right after that tool's result.
    Image(Image),
}

/// An image, ready to send: a format every provider takes, within every provider's limits
/// (the front ends and tools bring images to that before they become parts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The image's bytes, base64. Empty in a saved session's file, which names the image's own
    /// file instead (`file`); filled when the session is read.
    #[serde(default, skip_serializing_if = "ImageData::is_empty")]
    pub data: ImageData,
    pub width: u32,
    pub height: u32,
    /// Where a saved session keeps the bytes: a file name in the session's image folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl Image {
    /// `data:<media type>;base64,<data>`, as OpenAI takes an image.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data.as_str())
    }

    /// About what the image costs in tokens: Anthropic's measure (width × height / 750), which
    /// OpenAI's and Gemini's come near for the sizes images are brought to.
    pub fn estimated_tokens(&self) -> u64 {
        (u64::from(self.width) * u64::from(self.height) / 750).max(85)
    }

    /// The format's short name (`png`, `jpeg`, `gif`, `webp`), as Bedrock names it.
    pub fn format(&self) -> &str {
        self.media_type
            .strip_prefix("image/")
            .unwrap_or(&self.media_type)
    }
}

/// Base64 text, shared between clones: every request repeats the history, and an image is
/// large.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageData(std::sync::Arc<str>);

impl ImageData {
    pub fn new(base64: impl Into<std::sync::Arc<str>>) -> Self {
        ImageData(base64.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for ImageData {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ImageData {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ImageData(String::deserialize(deserializer)?.into()))
    }
}

/// A tool call the model made. `arguments` is the parsed JSON the model produced (an object
/// for well-behaved models).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's id, or one Tandem made up where the provider gives none (Gemini).
    pub id: String,
    pub name: String,
    pub arguments: Value,
    /// Gemini's `thoughtSignature` on a `functionCall` part; must be sent back with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// The answer to a tool call, matched by `call_id` (and by `name`, which Gemini needs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDeclaration {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GenerationSettings {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Overrides the model's configured output limit for this request.
    pub max_output_tokens: Option<u32>,
    /// Overrides the model's reasoning setting for this request: a token budget (Anthropic
    /// `thinking`, Gemini `thinkingConfig`; OpenAI gets the effort nearest to it). 0 asks for no
    /// reasoning.
    pub thinking_budget: Option<u32>,
}

/// One event of a streamed response, in order. A successful stream ends with exactly one
/// `Finished`; a failed one ends with an error instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    ThoughtDelta {
        text: String,
    },
    /// The opaque signature closing the current thought.
    ThoughtSignature {
        signature: String,
    },
    RedactedThought {
        data: String,
    },
    /// A complete tool call: emitted once its arguments have fully arrived.
    ToolCall(ToolCall),
    Usage(Usage),
    Finished {
        reason: FinishReason,
    },
    /// The attempt failed with a retryable error and will be retried after `delay`. Anything
    /// received since the request started (or since the previous `Retrying`) is void: a consumer
    /// must discard it, since the next attempt starts the response again.
    Retrying {
        attempt: u32,
        #[serde(with = "millis")]
        delay: Duration,
        error: String,
    },
}

/// Token counts, normalised across providers: `input_tokens` counts the whole prompt including
/// the cached part; `cached_input_tokens` is the part read from cache; `output_tokens` includes
/// thought tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// Tokens written to the cache by this request (Anthropic).
    pub cache_write_tokens: u64,
    pub thought_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The model stopped to have tools called.
    ToolCalls,
    /// The output limit was reached; the answer is cut.
    MaxTokens,
    /// The provider withheld or stopped the answer (safety, recitation, refusal).
    ContentFilter,
    /// Anything else, with the provider's word for it.
    Other(String),
}

/// An assistant message assembled from stream events, with what the stream said about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub message: Message,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
}

impl Default for Response {
    fn default() -> Self {
        Response {
            message: Message {
                role: Role::Assistant,
                parts: Vec::new(),
            },
            usage: None,
            finish_reason: None,
        }
    }
}

impl Response {
    /// Folds one event into the response. Deltas extend the last part when it is of the same
    /// kind, so the parts keep the order the model produced them in; `Retrying` starts over.
    pub fn push(&mut self, event: &StreamEvent) {
        let parts = &mut self.message.parts;
        match event {
            StreamEvent::TextDelta { text } => match parts.last_mut() {
                Some(Part::Text { text: last }) => last.push_str(text),
                _ => parts.push(Part::Text { text: text.clone() }),
            },
            StreamEvent::ThoughtDelta { text } => match parts.last_mut() {
                Some(Part::Thought {
                    text: last,
                    signature: None,
                }) => last.push_str(text),
                _ => parts.push(Part::Thought {
                    text: text.clone(),
                    signature: None,
                }),
            },
            StreamEvent::ThoughtSignature { signature } => match parts.last_mut() {
                Some(Part::Thought {
                    signature: slot @ None,
                    ..
                }) => *slot = Some(signature.clone()),
                // A signature with no thought before it (Gemini may sign an empty thought).
                _ => parts.push(Part::Thought {
                    text: String::new(),
                    signature: Some(signature.clone()),
                }),
            },
            StreamEvent::RedactedThought { data } => {
                parts.push(Part::RedactedThought { data: data.clone() })
            }
            StreamEvent::ToolCall(call) => parts.push(Part::ToolCall(call.clone())),
            StreamEvent::Usage(usage) => self.usage = Some(*usage),
            StreamEvent::Finished { reason } => self.finish_reason = Some(reason.clone()),
            StreamEvent::Retrying { .. } => *self = Response::default(),
        }
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(deserializer)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_keeps_part_order_and_joins_deltas() {
        let mut response = Response::default();
        for event in [
            StreamEvent::ThoughtDelta {
                text: "Let me ".into(),
            },
            StreamEvent::ThoughtDelta {
                text: "think.".into(),
            },
            StreamEvent::ThoughtSignature {
                signature: "sig".into(),
            },
            StreamEvent::TextDelta {
                text: "Hello".into(),
            },
            StreamEvent::TextDelta {
                text: ", world".into(),
            },
            StreamEvent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "a"}),
                signature: None,
            }),
            StreamEvent::Usage(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            }),
            StreamEvent::Finished {
                reason: FinishReason::ToolCalls,
            },
        ] {
            response.push(&event);
        }
        assert_eq!(
            response.message.parts,
            vec![
                Part::Thought {
                    text: "Let me think.".into(),
                    signature: Some("sig".into())
                },
                Part::Text {
                    text: "Hello, world".into()
                },
                Part::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: serde_json::json!({"path": "a"}),
                    signature: None,
                }),
            ]
        );
        assert_eq!(response.usage.map(|usage| usage.output_tokens), Some(4));
        assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn retrying_discards_the_partial_response() {
        let mut response = Response::default();
        response.push(&StreamEvent::TextDelta {
            text: "partial".into(),
        });
        response.push(&StreamEvent::Retrying {
            attempt: 1,
            delay: Duration::from_millis(5),
            error: "connection reset".into(),
        });
        response.push(&StreamEvent::TextDelta {
            text: "whole".into(),
        });
        assert_eq!(response.message.text(), "whole");
    }

    #[test]
    fn a_second_thought_after_a_signed_one_is_a_new_part() {
        let mut response = Response::default();
        response.push(&StreamEvent::ThoughtDelta { text: "one".into() });
        response.push(&StreamEvent::ThoughtSignature {
            signature: "s1".into(),
        });
        response.push(&StreamEvent::ThoughtDelta { text: "two".into() });
        assert_eq!(response.message.parts.len(), 2);
    }
}
