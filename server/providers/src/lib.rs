//! Tandem's model providers: one chat model (`model.rs`) spoken over five streaming wire
//! formats (OpenAI-compatible Chat Completions, OpenAI's Responses API, Anthropic Messages,
//! Gemini, Amazon Bedrock's Converse), plus a `replay`
//! provider that plays a script. Retries, timeouts, cancellation and typed errors are common to
//! all of them.
//!
//! The enterprise endpoints authorise requests with their cloud's credentials rather than a
//! key (`auth.rs`): Bedrock with AWS SigV4 (`aws.rs`) and its binary event stream
//! (`eventstream.rs`), Vertex AI with a Google token (`google.rs`) and Gemini's or Anthropic's
//! format (`vertex.rs`).
//!
//! A model Ollama serves gets its context window from the server before its first request
//! (`ollama.rs`), since Ollama runs models with far less than their family's maximum.
//!
//! A history may hold what several providers wrote (the model was switched mid-session):
//! `history.rs` makes it valid for the provider each request goes to.
//!
//! Tool schemas from elsewhere (MCP servers) are brought to what each provider takes by
//! `schema.rs`.
//!
//! Knows nothing of LSP or of the agent; the agent knows nothing of wire formats.

mod anthropic;
mod auth;
mod aws;
mod bedrock;
mod config;
mod error;
mod eventstream;
pub mod fim;
mod gemini;
mod google;
mod history;
mod http;
pub mod known;
mod model;
pub mod ollama;
mod openai;
mod replay;
mod responses;
mod retry;
pub mod schema;
pub mod settings;
mod sse;
mod vertex;
mod wire;

use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;

pub use config::{
    ApiKey, ContextSource, Effort, ModelConfig, Ollama, OllamaContext, OpenAiApi, Origin,
    ProviderKind, Reasoning, ReasoningSource, RetryPolicy, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RESPONSE_TIME,
};
pub use error::{ProviderError, ResponseLimit, Result, NOT_SET_UP};
pub use http::http_client;
pub use model::{
    CacheBreakpoint, ChatRequest, FinishReason, GenerationSettings, Image, ImageData, Message,
    Part, Response, Role, StreamEvent, ToolCall, ToolDeclaration, ToolResult, Usage,
};
pub use replay::{Chunks, Script, ScriptError, ScriptLine, ScriptToolCall};
pub use sse::error_chain;
pub use tokio_util::sync::CancellationToken;

use crate::retry::Backend;

/// The events of one streamed response; see `StreamEvent` for the order they come in.
pub type ResponseStream = BoxStream<'static, Result<StreamEvent>>;

/// A model ready to be called. Cheap to clone; clones share the HTTP connection pool (and, for
/// `replay`, the script's position, and for Ollama, the context window it was asked).
#[derive(Clone)]
pub struct Model {
    config: Arc<ModelConfig>,
    backend: Arc<dyn Backend>,
    /// `config` with the context window Ollama runs the model with, once it was asked.
    served: Arc<tokio::sync::OnceCell<ModelConfig>>,
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
    let wire = config.wire()?;
    serde_json::to_vec(&wire.request(config, request).body).ok()
}

impl Model {
    /// Sets up the model: the HTTP client, or the replay script (read and checked now), and the
    /// recorder when `config.record` is set. Fails when a provider that needs a key has none.
    pub fn new(config: ModelConfig) -> Result<Model> {
        let config = Arc::new(config);
        let backend: Arc<dyn Backend> = match config.wire() {
            Some(wire) => {
                if config.api_key.is_none() && config.provider.needs_key(&config.base_url) {
                    let variable = config
                        .api_key_env
                        .as_deref()
                        .unwrap_or("its API key variable");
                    let note = config
                        .setup_note
                        .as_ref()
                        .map(|note| format!(". Note: {note}"))
                        .unwrap_or_default();
                    return Err(ProviderError::Config {
                        message: format!(
                            "model `{}` ({} {}) has no API key: set {variable} in the environment Tandem runs in{note}",
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
        Ok(Model {
            config,
            backend,
            served: Arc::default(),
        })
    }

    /// The model's configuration; for a model Ollama serves, with the context window the
    /// server was found to run it with (from the first request on, or after
    /// `resolve_context_window`).
    pub fn config(&self) -> &ModelConfig {
        self.served.get().unwrap_or(&self.config)
    }

    /// Whether the context window is to be asked of Ollama: an Ollama model whose settings give
    /// none.
    fn asks_ollama(&self) -> bool {
        self.config.ollama.is_some() && self.config.context_source != ContextSource::Settings
    }

    /// For a model Ollama serves whose settings give no `contextWindow`: asks the server what
    /// context window it runs the model with (loading the model first, as a request would),
    /// once — clones share the answer — and from then on `config()` says it. Other models have
    /// nothing to ask. `stream` does this before the first request; a front end may call it
    /// sooner, so that the window is right from the start. Fails with `NotSetUp` when nothing
    /// answers or Ollama lacks the model (and then asks again next time).
    pub async fn resolve_context_window(&self) -> Result<&ModelConfig> {
        if !self.asks_ollama() {
            return Ok(self.config());
        }
        self.served
            .get_or_try_init(|| async {
                let (tokens, source) =
                    ollama::context_window(&self.config, true, ollama::QUICK).await?;
                tracing::info!(
                    model = %self.config.model,
                    tokens,
                    ?source,
                    "the context window Ollama runs the model with"
                );
                let mut config = (*self.config).clone();
                config.context_window = tokens;
                config.context_source = ContextSource::Ollama(source);
                Ok(config)
            })
            .await
    }

    /// Streams the response to `request`, retrying as the model's `RetryPolicy` says. The
    /// stream ends after `Finished`, or with an error. Cancelling `cancel` (or dropping the
    /// stream) drops the connection at once. A model Ollama serves first gets its context
    /// window (`resolve_context_window`), and a request that does not fit it is refused rather
    /// than cut by Ollama.
    pub fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> ResponseStream {
        if !self.asks_ollama() {
            return retry::with_retries(
                Arc::clone(&self.backend),
                Arc::new(request),
                self.config.retry,
                retry::Limits::of(&self.config),
                cancel,
            );
        }
        let model = self.clone();
        Box::pin(async_stream::stream! {
            let resolved = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(ProviderError::Cancelled),
                resolved = model.resolve_context_window() => resolved.map(|_| ()),
            };
            match resolved {
                Ok(()) => {}
                Err(error @ (ProviderError::Cancelled | ProviderError::NotSetUp { .. })) => {
                    yield Err(error);
                    return;
                }
                // Not knowing the window is no reason to fail the request.
                Err(error) => tracing::warn!(
                    model = %model.config.model,
                    "could not ask Ollama for the model's context window: {error}"
                ),
            }
            let config = model.config();
            if let Err(error) = ollama::check_fits(config, &request) {
                yield Err(error);
                return;
            }
            let mut attempts = retry::with_retries(
                Arc::clone(&model.backend),
                Arc::new(request),
                config.retry,
                retry::Limits::of(config),
                cancel,
            );
            while let Some(item) = attempts.next().await {
                yield item;
            }
        })
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
