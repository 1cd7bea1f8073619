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
mod http;
pub mod known;
mod model;
mod openai;
mod replay;
mod retry;
pub mod settings;
mod sse;
mod wire;

use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;

pub use config::{
    ApiKey, ModelConfig, ProviderKind, RetryPolicy, DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RESPONSE_TIME,
};
pub use error::{ProviderError, ResponseLimit, Result};
pub use model::{
    CacheBreakpoint, ChatRequest, FinishReason, GenerationSettings, Message, Part, Response, Role,
    StreamEvent, ToolCall, ToolDeclaration, ToolResult, Usage,
};
pub use replay::{Chunks, Script, ScriptError, ScriptLine, ScriptToolCall};
pub use tokio_util::sync::CancellationToken;

use crate::retry::Backend;

/// The events of one streamed response; see `StreamEvent` for the order they come in.
pub type ResponseStream = BoxStream<'static, Result<StreamEvent>>;

/// A model ready to be called. Cheap to clone; clones share the HTTP connection pool (and, for
/// `replay`, the script's position).
#[derive(Clone)]
pub struct Model {
    config: Arc<ModelConfig>,
    backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The JSON body `config`'s wire format sends for `request` (benchmarks measure request
/// assembly with it); `None` for the replay provider, which sends nothing.
pub fn encode_request(config: &ModelConfig, request: &ChatRequest) -> Option<Vec<u8>> {
    let wire = config.provider.wire()?;
    serde_json::to_vec(&wire.request(config, request).body).ok()
}

impl Model {
    /// Sets up the model: the HTTP client, or the replay script (read and checked now), and the
    /// recorder when `config.record` is set. Fails when a provider that needs a key has none.
    pub fn new(config: ModelConfig) -> Result<Model> {
        let config = Arc::new(config);
        let backend: Arc<dyn Backend> = match config.provider.wire() {
            Some(wire) => {
                if config.api_key.is_none() && config.provider.needs_key(&config.base_url) {
                    let variable = config
                        .api_key_env
                        .as_deref()
                        .unwrap_or("its API key variable");
                    return Err(ProviderError::Config {
                        message: format!(
                            "model `{}` ({} {}) has no API key: set {variable} in the environment Tandem runs in",
                            config.id, config.provider, config.model
                        ),
                    });
                }
                Arc::new(http::HttpBackend::new(wire, Arc::clone(&config))?)
            }
            None => {
                let Some(path) = &config.script else {
                    return Err(ProviderError::Config {
                        message: format!(
                            "model `{}` uses the replay provider but names no `script`",
                            config.id
                        ),
                    });
                };
                let script = replay::Script::load(path)?;
                Arc::new(replay::ReplayBackend::new(
                    script,
                    path.display().to_string(),
                ))
            }
        };
        let backend = match &config.record {
            Some(path) => Arc::new(replay::Recorder::new(backend, path)?),
            None => backend,
        };
        Ok(Model { config, backend })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Streams the response to `request`, retrying as the model's `RetryPolicy` says. The
    /// stream ends after `Finished`, or with an error. Cancelling `cancel` (or dropping the
    /// stream) drops the connection at once.
    pub fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> ResponseStream {
        retry::with_retries(
            Arc::clone(&self.backend),
            Arc::new(request),
            self.config.retry,
            retry::Limits::of(&self.config),
            cancel,
        )
    }

    /// Streams the response and assembles it. The same caps as `stream`'s apply (a runaway
    /// response fails with `ResponseLimitExceeded` here too).
    pub async fn complete(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<Response> {
        let mut response = Response::default();
        let mut events = self.stream(request, cancel);
        while let Some(event) = events.next().await {
            response.push(&event?);
        }
        Ok(response)
    }
}
