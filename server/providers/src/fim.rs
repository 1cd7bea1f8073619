//! Fill-in-the-middle: the text a model would put between a prefix and a suffix, for inline
//! completions. Four HTTP endpoints that take the suffix themselves — OpenAI-compatible
//! `/completions` with `suffix`, Ollama's `/api/generate` with `suffix`, llama.cpp's `/infill`
//! and Mistral's `/fim/completions` — and, for chat models, a prompt that asks for the middle
//! (`Model::complete` underneath). One attempt, no streaming and no retries: a completion is
//! worth something only now, and the next keystroke asks again. Dropping the future closes the
//! connection, which is how a superseded request is cancelled.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::{ModelConfig, ProviderKind};
use crate::error::{ProviderError, Result};
use crate::model::{ChatRequest, GenerationSettings, Message};
use crate::wire::join;
use crate::{CancellationToken, Model};

/// Which endpoint a completion model is asked through (the `completion.api` setting).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FimApi {
    /// Chosen from the model: Ollama's endpoint for a model Ollama serves, Mistral's for
    /// `api.mistral.ai`, the chat prompt for Anthropic, Gemini and `api.openai.com`, else
    /// OpenAI-compatible `/completions`.
    #[default]
    Auto,
    /// OpenAI-compatible `POST {baseUrl}/completions` with `prompt` and `suffix` (vLLM, LM
    /// Studio, DeepSeek, llama.cpp's OpenAI endpoint with a FIM model…).
    Completions,
    /// Ollama's `POST /api/generate` with `suffix` (the model's template adds its FIM tokens).
    Ollama,
    /// llama.cpp's `POST /infill` with `input_prefix` and `input_suffix`.
    Llamacpp,
    /// Mistral's `POST {baseUrl}/fim/completions` (Codestral).
    Mistral,
    /// Any chat model, asked for the middle with a prompt.
    Chat,
}

impl FimApi {
    /// `Auto` made concrete for `config`.
    pub fn resolve(self, config: &ModelConfig) -> FimApi {
        if self != FimApi::Auto {
            return self;
        }
        match config.provider {
            ProviderKind::Anthropic
            | ProviderKind::Gemini
            | ProviderKind::Bedrock
            | ProviderKind::Vertex
            | ProviderKind::Replay => FimApi::Chat,
            ProviderKind::OpenAi if config.ollama.is_some() => FimApi::Ollama,
            ProviderKind::OpenAi if config.base_url.contains("mistral.ai") => FimApi::Mistral,
            ProviderKind::OpenAi if config.base_url.contains("api.openai.com") => FimApi::Chat,
            ProviderKind::OpenAi => FimApi::Completions,
        }
    }
}

/// What to fill in: the text before and after the cursor, and the answer's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct FimRequest {
    pub prefix: String,
    pub suffix: String,
    pub max_tokens: u32,
    /// Strings that end the answer where the model writes them (not included).
    pub stop: Vec<String>,
    /// The file's path and language, for the chat prompt (the FIM endpoints see the path as the
    /// prefix's first line, if the caller put it there).
    pub path: String,
    pub language: String,
}

/// A completion model: its configuration, the endpoint it is asked through, and the HTTP
/// client (kept, so that consecutive requests reuse the connection).
#[derive(Debug, Clone)]
pub struct FimModel {
    config: Arc<ModelConfig>,
    api: FimApi,
    client: reqwest::Client,
    /// The chat model behind `FimApi::Chat`.
    chat: Option<Model>,
}

/// One HTTP request as it will be sent: for tests and benchmarks.
#[derive(Debug, Clone, PartialEq)]
pub struct FimHttpRequest {
    pub url: String,
    pub body: Value,
}

impl FimModel {
    /// Sets up the model for `api` (`Auto` resolved here). Fails as `Model::new` does (a hosted
    /// API without its key).
    pub fn new(config: ModelConfig, api: FimApi) -> Result<FimModel> {
        let api = api.resolve(&config);
        let chat = match api {
            FimApi::Chat => Some(Model::new(config.clone())?),
            _ => None,
        };
        if config.api_key.is_none() && config.provider.needs_key(&config.base_url) {
            let variable = config
                .api_key_env
                .as_deref()
                .unwrap_or("its API key variable");
            return Err(ProviderError::Config {
                message: format!(
                    "completion model `{}` has no API key: set {variable} in the environment \
                     Tandem runs in",
                    config.id
                ),
            });
        }
        let client = crate::http::model_client(&config)?;
        Ok(FimModel {
            config: Arc::new(config),
            api,
            client,
            chat,
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The endpoint this model is asked through (never `Auto`).
    pub fn api(&self) -> FimApi {
        self.api
    }

    /// The HTTP request `request` becomes; `None` for `FimApi::Chat`, which goes through the
    /// chat model's own wire format.
    pub fn http_request(&self, request: &FimRequest) -> Option<FimHttpRequest> {
        let config = &self.config;
        let (url, body) = match self.api {
            // The same body; Mistral's endpoint has its own path.
            FimApi::Completions | FimApi::Mistral => (
                join(
                    &config.base_url,
                    if self.api == FimApi::Mistral {
                        "fim/completions"
                    } else {
                        "completions"
                    },
                ),
                json!({
                    "model": config.model,
                    "prompt": request.prefix,
                    "suffix": request.suffix,
                    "max_tokens": request.max_tokens,
                    "temperature": 0,
                    "stop": request.stop,
                    "stream": false,
                }),
            ),
            FimApi::Ollama => (
                join(&server_root(&config.base_url), "api/generate"),
                json!({
                    "model": config.model,
                    "prompt": request.prefix,
                    "suffix": request.suffix,
                    "stream": false,
                    "options": {
                        "num_predict": request.max_tokens,
                        "temperature": 0,
                        "stop": request.stop,
                    },
                }),
            ),
            FimApi::Llamacpp => (
                join(&server_root(&config.base_url), "infill"),
                json!({
                    "input_prefix": request.prefix,
                    "input_suffix": request.suffix,
                    "n_predict": request.max_tokens,
                    "temperature": 0,
                    "stop": request.stop,
                    "stream": false,
                }),
            ),
            FimApi::Chat | FimApi::Auto => return None,
        };
        Some(FimHttpRequest { url, body })
    }

    /// The text to insert between `request.prefix` and `request.suffix`, as the model wrote
    /// it (the caller trims it to what fits). `cancel` (or dropping the future) closes the
    /// connection at once.
    pub async fn fill(&self, request: &FimRequest, cancel: CancellationToken) -> Result<String> {
        if let Some(chat) = &self.chat {
            return fill_by_chat(chat, request, cancel).await;
        }
        let Some(http) = self.http_request(request) else {
            return Err(ProviderError::Config {
                message: "no endpoint for this completion model".to_owned(),
            });
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            result = self.send(http) => result,
        }
    }

    async fn send(&self, http: FimHttpRequest) -> Result<String> {
        let timeout = self.config.idle_timeout.max(Duration::from_secs(1));
        let body =
            crate::http::post_json(&self.client, &self.config, &http.url, &http.body, timeout)
                .await?;
        parse_answer(self.api, &body)
    }
}

/// The text of an endpoint's JSON answer.
fn parse_answer(api: FimApi, body: &str) -> Result<String> {
    let invalid = |what: &str| ProviderError::InvalidStream {
        message: format!(
            "{what} in the completion answer: {}",
            first_chars(body, 200)
        ),
    };
    let value: Value = serde_json::from_str(body).map_err(|_| invalid("not JSON"))?;
    let text = match api {
        FimApi::Completions => value.pointer("/choices/0/text"),
        FimApi::Mistral => value
            .pointer("/choices/0/message/content")
            .or_else(|| value.pointer("/choices/0/text")),
        FimApi::Ollama => value.get("response"),
        FimApi::Llamacpp => value.get("content"),
        FimApi::Chat | FimApi::Auto => None,
    };
    match text {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Null) => Ok(String::new()),
        _ => Err(invalid("no text")),
    }
}

/// What a chat model is told to do with the prefix and suffix.
const CHAT_INSTRUCTION: &str = "You are a code completion engine. The user sends a file with \
the marker <CURSOR> where the cursor is. Answer with exactly the text to insert at the cursor \
so that the file reads well and compiles: no explanations, no Markdown fences, nothing that \
repeats the text before or after the cursor. Answer with nothing when nothing fits.";

async fn fill_by_chat(
    chat: &Model,
    request: &FimRequest,
    cancel: CancellationToken,
) -> Result<String> {
    let file = format!(
        "File: {} ({})\n\n{}<CURSOR>{}",
        request.path, request.language, request.prefix, request.suffix
    );
    let chat_request = ChatRequest {
        system: CHAT_INSTRUCTION.to_owned(),
        messages: vec![Message::user(file)],
        settings: GenerationSettings {
            max_output_tokens: Some(request.max_tokens),
            temperature: Some(0.0),
            ..GenerationSettings::default()
        },
        ..ChatRequest::default()
    };
    let response = chat.complete(chat_request, cancel).await?;
    Ok(strip_fences(&response.message.text()))
}

/// A chat model's answer without the Markdown fence some models put around code anyway.
fn strip_fences(text: &str) -> String {
    let trimmed = text.trim_matches('\n');
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text.to_owned();
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.strip_suffix("```")
        .unwrap_or(body)
        .trim_end_matches('\n')
        .to_owned()
}

/// The server's root under an OpenAI-compatible base URL (`http://host:11434/v1` → the host).
fn server_root(base_url: &str) -> String {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_owned()
}

fn first_chars(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_answers_lose_their_fences() {
        assert_eq!(strip_fences("```rust\nlet x = 1;\n```"), "let x = 1;");
        assert_eq!(strip_fences("let x = 1;"), "let x = 1;");
        assert_eq!(strip_fences("\n```\na\nb\n```\n"), "a\nb");
    }

    #[test]
    fn each_endpoint_answer_is_read() {
        let cases = [
            (
                FimApi::Completions,
                r#"{"choices":[{"text":"x + 1"}]}"#,
                "x + 1",
            ),
            (
                FimApi::Mistral,
                r#"{"choices":[{"message":{"content":"x + 1"}}]}"#,
                "x + 1",
            ),
            (
                FimApi::Ollama,
                r#"{"response":"x + 1","done":true}"#,
                "x + 1",
            ),
            (FimApi::Llamacpp, r#"{"content":"x + 1"}"#, "x + 1"),
        ];
        for (api, body, text) in cases {
            assert_eq!(parse_answer(api, body).unwrap(), text, "{api:?}");
        }
        assert!(parse_answer(FimApi::Ollama, "not json").is_err());
        assert!(parse_answer(FimApi::Llamacpp, r#"{"text":"x"}"#).is_err());
    }
}
