//! A model as the providers use it, resolved from settings: which provider, which model, where,
//! with which key, and how patient to be. (`settings.rs` reads the files this comes from.)

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::wire::Wire;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProviderKind {
    /// OpenAI's APIs (Chat Completions or Responses, as `OpenAiApi` says), and every server
    /// that copies them (Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter, Azure OpenAI…).
    #[serde(rename = "openai", alias = "openai-compatible")]
    OpenAi,
    Anthropic,
    Gemini,
    /// Amazon Bedrock's Converse API, signed with AWS credentials (`bedrock.rs`, `aws.rs`).
    Bedrock,
    /// Google Vertex AI: Gemini models in Gemini's format, Claude models in Anthropic's, with
    /// Google's Application Default Credentials (`vertex.rs`, `google.rs`).
    Vertex,
    /// Plays a recorded or hand-written script; no network.
    Replay,
}

impl ProviderKind {
    /// Whether calling the provider at `base_url` without a key is surely a mistake: the
    /// hosted APIs need one; a local or proxy OpenAI-compatible server often doesn't.
    pub fn needs_key(self, base_url: &str) -> bool {
        match self {
            ProviderKind::Anthropic | ProviderKind::Gemini => true,
            ProviderKind::OpenAi => base_url.contains("api.openai.com"),
            // Their credentials are the cloud's own (AWS's chain, Google's ADC), found when a
            // request is signed; a key is one way among others.
            ProviderKind::Bedrock | ProviderKind::Vertex | ProviderKind::Replay => false,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Bedrock => "bedrock",
            ProviderKind::Vertex => "vertex",
            ProviderKind::Replay => "replay",
        }
    }
}

/// Written by hand because schemars does not see serde's `alias`: the schema must accept
/// `openai-compatible` as the deserializer does.
impl schemars::JsonSchema for ProviderKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProviderKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The API the model speaks.",
            "oneOf": [
                {"const": "openai", "description": "OpenAI's APIs (Chat Completions or Responses, see `api`), and every server that copies them (Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter, Azure OpenAI…)."},
                {"const": "openai-compatible", "description": "A synonym of `openai`."},
                {"const": "anthropic", "description": "Anthropic's Messages API."},
                {"const": "gemini", "description": "Google's Gemini API."},
                {"const": "bedrock", "description": "Amazon Bedrock's Converse API, with AWS credentials (`region`)."},
                {"const": "vertex", "description": "Google Vertex AI (Gemini and Claude models), with Google's Application Default Credentials (`project`, `location`)."},
                {"const": "replay", "description": "Plays a recorded or hand-written script (`script`); no network."}
            ],
            "type": "string"
        })
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of OpenAI's two APIs an `openai` model is spoken to with.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum OpenAiApi {
    /// The Responses API on OpenAI's own endpoint (`api.openai.com`), Chat Completions
    /// everywhere else (the servers that copy OpenAI copy Chat Completions).
    #[default]
    Auto,
    /// Chat Completions (`POST /chat/completions`).
    Chat,
    /// The Responses API (`POST /responses`): reasoning carried across turns, which OpenAI's
    /// newest models need for tool calls with reasoning on.
    Responses,
}

/// How hard a model thinks before it answers: the setting every provider has in its own terms
/// (OpenAI's `reasoning.effort`; a token budget for Anthropic and Gemini 2.5; Gemini 3's
/// `thinkingLevel`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Effort {
    /// No reasoning (where the model can turn it off; else the least it allows).
    #[serde(alias = "off")]
    None,
    Minimal,
    Low,
    Medium,
    High,
}

impl Effort {
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::None => "none",
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// A thinking budget as the effort it is nearest to (for OpenAI, which takes no budget).
    pub fn of_budget(tokens: u32) -> Effort {
        match tokens {
            0 => Effort::None,
            1..=2047 => Effort::Minimal,
            2048..=6143 => Effort::Low,
            6144..=20479 => Effort::Medium,
            _ => Effort::High,
        }
    }

    /// The effort as a thinking budget (Anthropic, Gemini 2.5).
    pub fn budget(self) -> u32 {
        match self {
            Effort::None => 0,
            Effort::Minimal => 1024,
            Effort::Low => 4096,
            Effort::Medium => 10_000,
            Effort::High => 32_000,
        }
    }
}

/// What a model is asked to reason: an effort, a token budget, or both (the budget wins where
/// the provider takes one). Neither means the provider's own default, with no field sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reasoning {
    pub effort: Option<Effort>,
    pub budget_tokens: Option<u32>,
    pub source: ReasoningSource,
}

/// Where a model's reasoning setting comes from, for `tandem models`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReasoningSource {
    /// The model's `reasoning` setting.
    Settings,
    /// Tandem's default for the model family (`known.rs`).
    KnownModel,
    /// Nothing: the provider's default, no field sent.
    #[default]
    Unset,
}

impl Reasoning {
    /// Whether reasoning is asked for at all (an effort other than `none`, or a budget above 0).
    pub fn is_on(&self) -> bool {
        match (self.budget_tokens, self.effort) {
            (Some(budget), _) => budget > 0,
            (None, Some(effort)) => effort != Effort::None,
            (None, None) => false,
        }
    }

    /// The effort in OpenAI's terms: the effort given, else the budget's nearest.
    pub fn effort(&self) -> Option<Effort> {
        self.effort
            .or_else(|| self.budget_tokens.map(Effort::of_budget))
    }

    /// The budget in Anthropic's and Gemini 2.5's terms: the budget given, else the effort's.
    pub fn budget(&self) -> Option<u32> {
        self.budget_tokens
            .or_else(|| self.effort.map(Effort::budget))
    }
}

impl fmt::Display for Reasoning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match self.source {
            ReasoningSource::Settings => "the `reasoning` setting",
            ReasoningSource::KnownModel => "the model family's default",
            ReasoningSource::Unset => return f.write_str("the provider's default"),
        };
        match (self.effort, self.budget_tokens) {
            (_, Some(0)) | (Some(Effort::None), None) => write!(f, "off ({source})"),
            (Some(effort), Some(budget)) => {
                write!(f, "{} effort, {budget} tokens ({source})", effort.as_str())
            }
            (Some(effort), None) => write!(f, "{} effort ({source})", effort.as_str()),
            (None, Some(budget)) => write!(f, "{budget} tokens ({source})"),
            (None, None) => f.write_str("the provider's default"),
        }
    }
}

/// An API key. It prints as `[redacted]` in `Debug` and has no `Display`, so it cannot end up in
/// a log line or an error message by accident; `expose` is for the one place that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// A model, ready to be called.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The name the settings know it by (`"default"` for an unconfigured default).
    pub id: String,
    pub provider: ProviderKind,
    /// The provider's model name (`claude-sonnet-4-5`, `gpt-4.1`, `qwen3-coder`…).
    pub model: String,
    /// The API root: `https://api.openai.com/v1`, `https://api.anthropic.com`,
    /// `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    /// `openai` only: Chat Completions or Responses.
    pub api: OpenAiApi,
    /// How hard the model is asked to think.
    pub reasoning: Reasoning,
    /// Whether requests carry `prompt_cache_key` (the session's id), which routes a session's
    /// requests to the same cache on servers that accept it (OpenAI's own).
    pub prompt_cache_key: bool,
    /// Azure OpenAI's `api-version` query parameter, where the endpoint needs one.
    pub api_version: Option<String>,
    /// Whether the model takes images (from the model name, or the `images` setting).
    pub images: bool,
    pub api_key: Option<ApiKey>,
    /// The environment variable the key was read from, for messages that say where to set it.
    pub api_key_env: Option<String>,
    /// Extra request headers (a proxy's, an organisation id…).
    pub headers: Vec<(String, String)>,
    /// Bedrock: the AWS region requests are signed for (and sent to, unless `base_url` names
    /// another endpoint).
    pub region: Option<String>,
    /// Vertex AI: the Google Cloud project the model is called in.
    pub project: Option<String>,
    /// Vertex AI: the location (`us-central1`, `europe-west4`, `global`…).
    pub location: Option<String>,
    pub context_window: u64,
    /// Where `context_window` comes from, for messages and `tandem models`.
    pub context_source: ContextSource,
    pub max_output_tokens: u32,
    /// Set when the model is served by Ollama (see `ollama.rs`): then, unless the settings give
    /// a `contextWindow`, the window is what the server runs the model with, asked of it before
    /// the first request.
    pub ollama: Option<Ollama>,
    /// Why Tandem uses this model: chosen, or a fallback because nothing was configured.
    pub origin: Origin,
    /// Why this may not be the model the user meant (the folder's settings chose another, which
    /// was ignored for want of trust): told with every error that says the model cannot be set
    /// up.
    pub setup_note: Option<String>,
    /// The replay provider's script.
    pub script: Option<PathBuf>,
    /// Append every response to this file, in the replay format.
    pub record: Option<PathBuf>,
    pub retry: RetryPolicy,
    /// A response that sends nothing for this long fails with `IdleTimeout` (waiting for the
    /// response headers included).
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// An attempt whose response body passes this many bytes is stopped with
    /// `ProviderError::ResponseLimitExceeded` (error bodies included): a model that never stops
    /// would otherwise grow memory without bound.
    pub max_response_bytes: u64,
    /// An attempt still running this long after its request was sent is stopped the same way,
    /// for a runaway too slow to reach `max_response_bytes`.
    pub max_response_time: Duration,
}

impl ModelConfig {
    /// A model with the defaults for everything but what identifies it.
    pub fn new(
        provider: ProviderKind,
        model: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        let model = model.into();
        let base_url = base_url.into();
        let known = crate::known::lookup(&model);
        let ollama = (provider == ProviderKind::OpenAi
            && crate::ollama::is_ollama(&base_url, None))
        .then(Ollama::default);
        let reasoning = match crate::known::reasoning(&model) {
            Some(effort) => Reasoning {
                effort: Some(effort),
                budget_tokens: None,
                source: ReasoningSource::KnownModel,
            },
            None => Reasoning::default(),
        };
        ModelConfig {
            id: "default".into(),
            provider,
            api: OpenAiApi::Auto,
            reasoning,
            prompt_cache_key: crate::openai::is_openai(&base_url),
            api_version: None,
            images: crate::known::sees_images(&model),
            base_url,
            api_key: None,
            api_key_env: None,
            headers: Vec::new(),
            region: None,
            project: None,
            location: None,
            context_window: known.context_window,
            context_source: if crate::known::is_known(&model) {
                ContextSource::KnownModel
            } else {
                ContextSource::Unknown
            },
            max_output_tokens: known.max_output_tokens,
            ollama,
            origin: Origin::Chosen,
            setup_note: None,
            script: None,
            record: None,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_response_time: DEFAULT_MAX_RESPONSE_TIME,
            model,
        }
    }
}

impl ModelConfig {
    /// The wire format requests go out in; `None` for the replay provider.
    pub(crate) fn wire(&self) -> Option<Wire> {
        match self.provider {
            ProviderKind::OpenAi => Some(if self.uses_responses() {
                Wire::Responses
            } else {
                Wire::OpenAi
            }),
            ProviderKind::Anthropic => Some(Wire::Anthropic),
            ProviderKind::Gemini => Some(Wire::Gemini),
            ProviderKind::Bedrock => Some(Wire::Bedrock),
            // Vertex serves each publisher's models in the publisher's own format.
            ProviderKind::Vertex if crate::vertex::is_claude(&self.model) => Some(Wire::Anthropic),
            ProviderKind::Vertex => Some(Wire::Gemini),
            ProviderKind::Replay => None,
        }
    }

    /// Whether an `openai` model is spoken to with the Responses API.
    pub fn uses_responses(&self) -> bool {
        self.provider == ProviderKind::OpenAi
            && match self.api {
                OpenAiApi::Responses => true,
                OpenAiApi::Chat => false,
                OpenAiApi::Auto => crate::openai::is_openai(&self.base_url),
            }
    }

    /// The API's name as `tandem models` shows it.
    pub fn api_name(&self) -> &'static str {
        match self.wire() {
            Some(Wire::OpenAi) => "Chat Completions",
            Some(Wire::Responses) => "Responses",
            Some(Wire::Anthropic) => "Messages",
            Some(Wire::Gemini) => "generateContent",
            Some(Wire::Bedrock) => "Converse",
            None => "replay",
        }
    }

    /// Whether the endpoint is Azure OpenAI's, which takes the key in an `api-key` header: an
    /// Azure host, or an `api-version`, which only Azure asks for (a proxy in front of Azure).
    pub(crate) fn is_azure(&self) -> bool {
        self.provider == ProviderKind::OpenAi
            && (self.api_version.is_some() || crate::openai::is_azure(&self.base_url))
    }
}

/// Why Tandem uses a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Origin {
    /// Named in the settings, by `--model` or by `TANDEM_MODEL` (or built by code).
    #[default]
    Chosen,
    /// No model is configured: the provider whose key variable is set.
    KeyInEnvironment,
    /// No model is configured and no key is set: Ollama on this machine.
    LocalFallback,
}

/// Where a model's context window figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextSource {
    /// The model's `contextWindow` setting.
    Settings,
    /// Tandem's table of well-known models (`known.rs`): the model family's maximum.
    KnownModel,
    /// A model Tandem does not know: a conservative figure.
    Unknown,
    /// What the Ollama server runs the model with.
    Ollama(OllamaContext),
}

/// How the context window of a model served by Ollama was found, most reliable first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OllamaContext {
    /// The model is loaded, and `/api/ps` says with how many tokens of context.
    Loaded,
    /// The model's `num_ctx` parameter (`/api/show`, from its Modelfile).
    NumCtx,
    /// `OLLAMA_CONTEXT_LENGTH` in the environment Tandem runs in.
    Environment,
    /// Nothing says: Ollama's default for small GPUs and older versions.
    Default,
}

impl fmt::Display for ContextSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ContextSource::Settings => "the `contextWindow` setting",
            ContextSource::KnownModel => "the model family's maximum",
            ContextSource::Unknown => "a guess for a model Tandem does not know",
            ContextSource::Ollama(OllamaContext::Loaded) => "the loaded model's, from Ollama",
            ContextSource::Ollama(OllamaContext::NumCtx) => "the model's num_ctx parameter",
            ContextSource::Ollama(OllamaContext::Environment) => {
                "OLLAMA_CONTEXT_LENGTH in Tandem's environment"
            }
            ContextSource::Ollama(OllamaContext::Default) => {
                "Ollama's default when nothing sets it"
            }
        })
    }
}

/// What Tandem knows of an Ollama server before asking it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ollama {
    /// `OLLAMA_CONTEXT_LENGTH` as Tandem's environment has it: the window a server started from
    /// the same environment gives models that set none, when the server cannot tell.
    pub context_length: Option<u64>,
}

/// Long enough for a reasoning model that streams nothing while it thinks.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// 64 MiB of received body bytes. What arrives is SSE framing around a few characters: an
/// OpenAI-compatible server (vLLM, llama.cpp) sends one ~300-byte event per token, so the largest
/// output limits in use (128k tokens, thoughts included) come to about 40 MB. No real answer
/// reaches this; a model that streams thoughts without end reaches it in seconds to minutes.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;
/// 30 minutes: a local model at 10 tokens a second writing an 8k-token answer takes under
/// 15, and reasoning models that think for ten minutes and more fit; a runaway that streams too
/// slowly to reach the byte cap is stopped here.
pub const DEFAULT_MAX_RESPONSE_TIME: Duration = Duration::from_secs(30 * 60);

/// How retryable errors are retried: exponential backoff from `initial_delay`, doubling up to
/// `max_delay`, with ±25 % jitter that never takes a delay past `max_delay`; a provider's
/// `Retry-After` replaces the computed delay, and one longer than `max_delay` is not waited for
/// (the error is returned at once). So no wait is ever longer than `max_delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 5,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}
