//! Tandem's model providers: one chat model (`model.rs`) spoken over three streaming wire
//! formats (OpenAI-compatible Chat Completions, Anthropic Messages, Gemini), plus a `replay`
//! provider that plays a script. Retries, timeouts, cancellation and typed errors are common to
//! all of them.
//!
//! Knows nothing of LSP or of the agent; the agent knows nothing of wire formats.

mod anthropic;
mod config;
mod error;
mod gemini;
pub mod known;
mod model;
mod openai;
mod sse;
mod wire;

pub use config::{ApiKey, ModelConfig, ProviderKind, RetryPolicy, DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT};
pub use error::{ProviderError, Result};
pub use model::{
    CacheBreakpoint, ChatRequest, FinishReason, GenerationSettings, Message, Part, Response, Role,
    StreamEvent, ToolCall, ToolDeclaration, ToolResult, Usage,
};
