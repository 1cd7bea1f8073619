//! Model servers on this machine, and Ollama in particular.
//!
//! A refused connection to a local address (localhost, 127.0.0.0/8, ::1) means nothing listens
//! there, and retrying cannot change that: `connection_error` makes it a `NotSetUp` error that
//! names what was tried and how to set Tandem up. A refused connection to another machine stays
//! a retryable network error (a server restarting behind a load balancer).
//!
//! Ollama runs a model with a context window of its own choosing, not the model family's
//! maximum that `known.rs` lists: 4096 tokens unless `OLLAMA_CONTEXT_LENGTH`, the model's
//! `num_ctx` parameter or (in recent versions) a large GPU says otherwise, and it silently cuts
//! a prompt that does not fit. So for a model Ollama serves — at its port, 11434, or at the
//! address `OLLAMA_HOST` gives — whose settings give no `contextWindow`, the window is asked of
//! the server before the first request (`context_window`): `/api/ps` for the loaded model
//! (loading it first, as the request would have), else the model's `num_ctx` (`/api/show`),
//! else `OLLAMA_CONTEXT_LENGTH` in Tandem's environment, else 4096. A request that does not fit
//! is refused with the fix (`check_fits`) instead of being sent to be cut.
//!
//! `check_server` is the quick look `tandem models` takes: is anything there, does it have the
//! model (and, for Ollama, with what window does it run it), and, for any other server, does it
//! accept the key.

use std::time::Duration;

use serde_json::{json, Value};

use crate::config::{ContextSource, ModelConfig, OllamaContext, Origin};
use crate::error::{ProviderError, Result};
use crate::model::{ChatRequest, Part};
use crate::sse::error_chain;

/// Ollama's port, unless `OLLAMA_HOST` moves it.
pub const DEFAULT_PORT: u16 = 11434;
/// The context window Ollama gives a model when nothing sets one: its default in older
/// versions, and in recent ones on a GPU with less than 24 GiB of memory.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 4096;
/// Below this Tandem cannot work: its first request alone (system prompt, tool declarations,
/// environment, repository map) is about 7,000 tokens, and a conversation grows from there.
pub const MIN_CONTEXT_WINDOW: u64 = 16_384;
/// The window the fixes suggest.
pub const SUGGESTED_CONTEXT_WINDOW: u64 = 32_768;
/// How long each question before a session's first request may take (the model's loading
/// excepted, which takes as long as it takes).
pub(crate) const QUICK: Duration = Duration::from_secs(5);

/// Whether `base_url`'s host is this machine: `localhost`, a loopback address, or the
/// unspecified address (0.0.0.0, ::), which reaches the loopback.
pub fn is_local(base_url: &str) -> bool {
    reqwest::Url::parse(base_url).is_ok_and(|url| is_local_url(&url))
}

fn is_local_url(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback() || address.is_unspecified(),
        Some(url::Host::Ipv6(address)) => address.is_loopback() || address.is_unspecified(),
        None => false,
    }
}

/// Ollama's address as `OLLAMA_HOST` gives it, read as Ollama reads it: `host`, `host:port` or
/// `scheme://host:port`, the port 11434 unless a scheme is given, and the unspecified address
/// (which a server listens on) reached on the loopback. `None` for an empty or unreadable value.
fn host_url(value: &str) -> Option<reqwest::Url> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    let has_scheme = value.contains("://");
    let mut text = if has_scheme {
        value.to_owned()
    } else {
        format!("http://{value}")
    };
    // `:8080` is the loopback at that port for Ollama; a URL needs the host.
    if let Some(rest) = text.strip_prefix("http://:") {
        text = format!("http://127.0.0.1:{rest}");
    }
    let mut url = reqwest::Url::parse(&text).ok()?;
    if url.port().is_none() && !has_scheme {
        url.set_port(Some(DEFAULT_PORT)).ok()?;
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(address)) if address.is_unspecified() => Some("127.0.0.1"),
        Some(url::Host::Ipv6(address)) if address.is_unspecified() => Some("[::1]"),
        _ => None,
    };
    if let Some(loopback) = loopback {
        url.set_host(Some(loopback)).ok()?;
    }
    url.set_path("");
    url.set_query(None);
    Some(url)
}

/// The base URL of Ollama's OpenAI-compatible API at the address `OLLAMA_HOST` gives, or `None`
/// when it gives none (then Tandem's fallback is `http://localhost:11434/v1`).
pub(crate) fn base_url_from_host(ollama_host: Option<&str>) -> Option<String> {
    let url = host_url(ollama_host?)?;
    Some(format!("{}/v1", url.as_str().trim_end_matches('/')))
}

/// Whether the server at `base_url` is Ollama: at Ollama's port, or at the address
/// `ollama_host` (`OLLAMA_HOST`) gives. Tandem asks nothing of a server to decide: a llama.cpp
/// or vLLM server must not see requests it was not meant to get.
pub(crate) fn is_ollama(base_url: &str, ollama_host: Option<&str>) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let port = url.port_or_known_default();
    if port == Some(DEFAULT_PORT) {
        return true;
    }
    let Some(host) = ollama_host.and_then(host_url) else {
        return false;
    };
    port == host.port_or_known_default()
        && (url.host_str() == host.host_str() || is_local_url(&url) && is_local_url(&host))
}

/// The server's root, where Ollama's own API lives: the base URL without its `/v1`.
fn root(base_url: &str) -> String {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_owned()
}

/// The typed error for a request to `config`'s server that could not be sent: `NotSetUp` when
/// a local server refused the connection, else a retryable network error.
pub(crate) fn connection_error(config: &ModelConfig, error: &reqwest::Error) -> ProviderError {
    if is_local(&config.base_url) && refused(error) {
        return nothing_answers(config);
    }
    ProviderError::Network {
        message: error_chain(error),
    }
}

fn refused(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|error| error.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// What to do when nothing answers at `config`'s local address.
fn nothing_answers(config: &ModelConfig) -> ProviderError {
    let url = crate::http::endpoint(&config.base_url);
    let model = &config.model;
    let message = match config.origin {
        Origin::LocalFallback => {
            let start = start_ollama();
            let settings = crate::settings::user_settings_path().map_or_else(
                || "the user settings file".to_owned(),
                |path| path.display().to_string(),
            );
            format!(
                "nothing answers at {url} (connection refused). Tandem looks for Ollama there \
                 because no model is configured and no API key is set. To set Tandem up, do one \
                 of these: set ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENAI_API_KEY in the \
                 environment Tandem runs in; start Ollama ({start}) and fetch the model \
                 (`ollama pull {model}`); or choose a model in {settings} (see \
                 docs/configuration.md). Then run `tandem models` to check."
            )
        }
        Origin::Chosen | Origin::KeyInEnvironment => {
            let start = if config.ollama.is_some() {
                format!(
                    "Start Ollama ({}) and fetch the model (`ollama pull {model}`)",
                    start_ollama()
                )
            } else {
                "Start the server".to_owned()
            };
            format!(
                "nothing answers at {url} (connection refused), the address of model `{}` ({} \
                 {model}). {start}, or correct the model's `baseUrl` in the settings (see \
                 docs/configuration.md). Then run `tandem models` to check.",
                config.id, config.provider
            )
        }
    };
    let message = match &config.setup_note {
        Some(note) => format!("{message} Note: {note}"),
        None => message,
    };
    ProviderError::NotSetUp { message }
}

/// How to start Ollama for Tandem: with a context window Tandem can work in (Ollama's default
/// of 4096 tokens is too small), and where to get it for whoever has not yet.
fn start_ollama() -> String {
    format!(
        "`OLLAMA_CONTEXT_LENGTH={SUGGESTED_CONTEXT_WINDOW} ollama serve`: Tandem needs a context \
         window of {MIN_CONTEXT_WINDOW} tokens or more; get Ollama at https://ollama.com/download"
    )
}

fn client(config: &ModelConfig, timeout: Duration) -> Result<reqwest::Client> {
    let mut builder = crate::http::http_client()
        .connect_timeout(timeout.min(config.connect_timeout))
        .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")));
    if is_local(&config.base_url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|error| ProviderError::Config {
        message: format!("cannot set up the HTTP client: {}", error_chain(&error)),
    })
}

/// Sends `request` within `timeout`; the status and the body as JSON (`null` when it is not).
async fn ask(
    config: &ModelConfig,
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<(u16, Value)> {
    let response = request
        .timeout(timeout)
        .send()
        .await
        .map_err(|error| connection_error(config, &error))?;
    let status = response.status().as_u16();
    let body = response
        .bytes()
        .await
        .map_err(|error| connection_error(config, &error))?;
    Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

/// The context window Ollama runs `config`'s model with, and how that was found. `load`: when
/// the model is not loaded, load it (as the first request would) so that `/api/ps` can say.
/// `timeout` bounds each question; loading takes up to the idle timeout. Fails with `NotSetUp`
/// when nothing answers or Ollama lacks the model.
pub(crate) async fn context_window(
    config: &ModelConfig,
    load: bool,
    timeout: Duration,
) -> Result<(u64, OllamaContext)> {
    let client = client(config, timeout)?;
    let root = root(&config.base_url);
    if let Some(tokens) = loaded_window(&client, config, &root, timeout).await? {
        return Ok((tokens, OllamaContext::Loaded));
    }
    let num_ctx = num_ctx(&client, config, &root, timeout).await?;
    if load {
        let loading = client
            .post(format!("{root}/api/generate"))
            .json(&json!({"model": config.model}));
        match ask(config, loading, config.idle_timeout).await {
            Ok((200..=299, _)) => {
                if let Some(tokens) = loaded_window(&client, config, &root, timeout).await? {
                    return Ok((tokens, OllamaContext::Loaded));
                }
            }
            Ok((status, body)) => tracing::warn!(
                model = %config.model,
                "Ollama could not load the model (HTTP {status}: {body}); its context window \
                 is taken from its parameters"
            ),
            Err(error) => return Err(error),
        }
    }
    if let Some(tokens) = num_ctx {
        return Ok((tokens, OllamaContext::NumCtx));
    }
    if let Some(tokens) = config
        .ollama
        .as_ref()
        .and_then(|ollama| ollama.context_length)
    {
        return Ok((tokens, OllamaContext::Environment));
    }
    Ok((DEFAULT_CONTEXT_LENGTH, OllamaContext::Default))
}

/// `/api/ps`: the context length the loaded model runs with; `None` when it is not loaded, or
/// the server is too old to say.
async fn loaded_window(
    client: &reqwest::Client,
    config: &ModelConfig,
    root: &str,
    timeout: Duration,
) -> Result<Option<u64>> {
    let (status, body) = ask(config, client.get(format!("{root}/api/ps")), timeout).await?;
    if !(200..300).contains(&status) {
        return Ok(None);
    }
    let models = body["models"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    Ok(models
        .iter()
        .find(|running| {
            ["name", "model"].iter().any(|field| {
                running[field]
                    .as_str()
                    .is_some_and(|name| same_model(name, &config.model))
            })
        })
        .and_then(|running| running["context_length"].as_u64())
        .filter(|tokens| *tokens > 0))
}

/// `/api/show`: the model's `num_ctx` parameter, if it has one. Fails with `NotSetUp` when
/// Ollama does not have the model.
async fn num_ctx(
    client: &reqwest::Client,
    config: &ModelConfig,
    root: &str,
    timeout: Duration,
) -> Result<Option<u64>> {
    let show = client
        .post(format!("{root}/api/show"))
        .json(&json!({"model": config.model}));
    let (status, body) = ask(config, show, timeout).await?;
    if status == 404 {
        let model = &config.model;
        return Err(ProviderError::NotSetUp {
            message: format!(
                "Ollama at {root} does not have the model {model}: fetch it with `ollama pull \
                 {model}` (`ollama list` shows the models it has), or choose another model in \
                 the settings (see docs/configuration.md)"
            ),
        });
    }
    Ok(body["parameters"].as_str().and_then(parameter_num_ctx))
}

/// `num_ctx N` in the parameters `/api/show` lists, one `name value` a line.
fn parameter_num_ctx(parameters: &str) -> Option<u64> {
    parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse().ok())
            .flatten()
    })
}

/// Whether two Ollama model names are the same model: `qwen3-coder` is `qwen3-coder:latest`.
fn same_model(a: &str, b: &str) -> bool {
    fn tagged(name: &str) -> String {
        let last = name.rsplit('/').next().unwrap_or(name);
        let name = name.to_ascii_lowercase();
        if last.contains(':') {
            name
        } else {
            format!("{name}:latest")
        }
    }
    tagged(a) == tagged(b)
}

/// Tokens of `request`, estimated as the agent does: about four bytes of UTF-8 a token, which
/// errs high for non-ASCII text.
fn estimate_tokens(request: &ChatRequest) -> u64 {
    let bytes = |text: &str| text.len() as u64;
    let tools: u64 = request
        .tools
        .iter()
        .map(|tool| {
            bytes(&tool.name) + bytes(&tool.description) + bytes(&tool.parameters.to_string())
        })
        .sum();
    let parts: u64 = request
        .messages
        .iter()
        .flat_map(|message| &message.parts)
        .map(|part| match part {
            Part::Text { text } | Part::Thought { text, .. } => bytes(text),
            Part::RedactedThought { data } => bytes(data),
            Part::ToolCall(call) => bytes(&call.name) + bytes(&call.arguments.to_string()),
            Part::ToolResult(result) => bytes(&result.name) + bytes(&result.content),
            Part::Image(image) => image.estimated_tokens() * 4,
        })
        .sum();
    (bytes(&request.system) + tools + parts).div_ceil(4)
}

/// How to give an Ollama model a larger context window.
pub fn larger_window_fix() -> String {
    format!(
        "Give the model a larger window: start Ollama with `OLLAMA_CONTEXT_LENGTH=\
         {SUGGESTED_CONTEXT_WINDOW} ollama serve`, or create a variant whose Modelfile has \
         `PARAMETER num_ctx {SUGGESTED_CONTEXT_WINDOW}` (`ollama create`); then set \
         `contextWindow` to the same number for the model in the settings (see \
         docs/configuration.md), unless `tandem models` already shows the new window"
    )
}

/// Refuses a request that does not fit the window Ollama runs the model with, which Ollama
/// would cut without a word. A window below `MIN_CONTEXT_WINDOW` is a setup problem
/// (`NotSetUp`); a larger one has room that compressing the conversation can make
/// (`ContextWindowExceeded`). Models whose window Tandem did not get from Ollama pass.
pub(crate) fn check_fits(config: &ModelConfig, request: &ChatRequest) -> Result<()> {
    let ContextSource::Ollama(_) = config.context_source else {
        return Ok(());
    };
    let need = estimate_tokens(request);
    let window = config.context_window;
    if need <= window {
        return Ok(());
    }
    let message = format!(
        "this request is about {need} tokens, but Ollama runs {} with a context window of \
         {window} tokens ({}) and would silently cut it. {}.",
        config.model,
        config.context_source,
        larger_window_fix()
    );
    Err(if window < MIN_CONTEXT_WINDOW {
        ProviderError::NotSetUp { message }
    } else {
        ProviderError::ContextWindowExceeded { message }
    })
}

/// What `check_server` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCheck {
    /// What answered, in words: `Ollama 0.12.6 answers at http://localhost:11434`.
    pub answered: String,
    /// The context window Ollama runs the model with and how that was found, when Tandem asked:
    /// for an Ollama model whose settings give no `contextWindow`. The model is not loaded for
    /// this, so a model that is not loaded yet may get more than this says.
    pub window: Option<(u64, OllamaContext)>,
}

/// A quick look at `config`'s server, each question within `timeout`: for Ollama, its version,
/// whether it has the model, and the window it runs the model with; for any other server, the
/// cheapest authenticated request there is (`GET …/models`, with the key and headers a model
/// request carries), which tells whether the key is accepted and, where the server lists its
/// models, whether it has this one. Fails when nothing answers (`NotSetUp` for a local
/// address), the key is refused (`Authentication`), or the server lacks the model (`Config`).
pub async fn check_server(config: &ModelConfig, timeout: Duration) -> Result<ServerCheck> {
    let client = client(config, timeout)?;
    if config.ollama.is_none() {
        return check_models_endpoint(&client, config, timeout)
            .await
            .map_err(|error| crate::http::redact_key(error, config));
    }
    let root = root(&config.base_url);
    let (_, version) = ask(config, client.get(format!("{root}/api/version")), timeout).await?;
    let answered = match version["version"].as_str() {
        Some(version) => format!("Ollama {version} answers at {root}"),
        None => format!("The server answers at {root}"),
    };
    let window = match config.context_source {
        ContextSource::Settings => {
            num_ctx(&client, config, &root, timeout).await?;
            None
        }
        _ => Some(context_window(config, false, timeout).await?),
    };
    Ok(ServerCheck { answered, window })
}

/// `GET path` under `config`'s base URL, as a model request is sent: the key, the configured
/// headers, the wire format's own (`anthropic-version`). The status, and the body (`null` when
/// it is not JSON) with its text for an error message.
async fn get_authenticated(
    client: &reqwest::Client,
    config: &ModelConfig,
    path: &str,
    timeout: Duration,
) -> Result<(u16, Value, String)> {
    let url = crate::wire::join(&config.base_url, path);
    let response = crate::http::authenticated_get(client, config, &url)
        .timeout(timeout)
        .send()
        .await
        .map_err(|error| unanswered(config, &error))?;
    let status = response.status().as_u16();
    let body = response
        .bytes()
        .await
        .map_err(|error| unanswered(config, &error))?;
    let text = String::from_utf8_lossy(&body).into_owned();
    Ok((
        status,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
        text,
    ))
}

/// `tandem models`' check of a server that is not Ollama: the key (refused with 401 or 403)
/// and the model (for Anthropic and Gemini, `GET models/{model}`, which knows aliases and is
/// not cut by paging; for OpenAI-compatible servers, the `GET /models` list, when the server
/// has one).
async fn check_models_endpoint(
    client: &reqwest::Client,
    config: &ModelConfig,
    timeout: Duration,
) -> Result<ServerCheck> {
    let where_ = crate::http::endpoint(&config.base_url)
        .trim_end_matches('/')
        .to_owned();
    let one_model = config.provider != crate::config::ProviderKind::OpenAi;
    // Anthropic's base URL is the host (requests go to `{baseUrl}/v1/messages`); the others'
    // include the version.
    let list = match config.provider {
        crate::config::ProviderKind::Anthropic => "v1/models",
        _ => "models",
    };
    let path = if one_model {
        format!("{list}/{}", config.model)
    } else {
        list.to_owned()
    };
    let (status, body, text) = get_authenticated(client, config, &path, timeout).await?;
    if status == 401 || status == 403 {
        let message = match config.wire() {
            Some(wire) => wire.error_body(&text).message,
            None => text,
        };
        let url = crate::wire::join(&config.base_url, &path);
        return Err(ProviderError::Authentication {
            message: crate::http::refusal(config, &url, &format!("HTTP {status}: {message}")),
        });
    }
    let model = &config.model;
    let lacks_model = |known: &[String]| {
        let mut message = format!("the server at {where_} has no model `{model}`");
        let names: Vec<&str> = known.iter().map(String::as_str).collect();
        if let Some(best) = crate::settings::closest(model, &names) {
            message.push_str(&format!("; did you mean `{best}`?"));
        } else if !known.is_empty() && known.len() <= 20 {
            message.push_str(&format!(" (it has: {})", names.join(", ")));
        }
        message.push_str(
            " Correct the model's `model` in the settings (see docs/configuration.md), then run \
             `tandem models` again",
        );
        ProviderError::Config { message }
    };
    let answered = format!("The server at {where_} accepts the key");
    if one_model {
        if status == 404 {
            // A 404 for the model is about the model only when the server has a list at all
            // (a proxy may have neither).
            let (status, body, _) = get_authenticated(client, config, list, timeout).await?;
            if (200..300).contains(&status) {
                return Err(lacks_model(&model_names(&body)));
            }
        }
    } else if (200..300).contains(&status) {
        let known = model_names(&body);
        if !known.is_empty() && !known.iter().any(|name| name == model) {
            return Err(lacks_model(&known));
        }
    }
    let answered = if (200..300).contains(&status) {
        format!("{answered} and has the model {model}")
    } else {
        format!("{answered} (HTTP {status} for GET /{path})")
    };
    Ok(ServerCheck {
        answered,
        window: None,
    })
}

/// The model names a `GET /models` answer lists: OpenAI's and Anthropic's `data[].id`,
/// Gemini's `models[].name` (less `models/`).
fn model_names(body: &Value) -> Vec<String> {
    let openai = body["data"].as_array().into_iter().flatten();
    let gemini = body["models"].as_array().into_iter().flatten();
    openai
        .filter_map(|entry| entry["id"].as_str())
        .chain(gemini.filter_map(|entry| entry["name"].as_str()))
        .map(|name| name.strip_prefix("models/").unwrap_or(name).to_owned())
        .collect()
}

/// A request to `config`'s server that got no answer: as `connection_error`, but saying what
/// happened when the name of a remote server could not be resolved (offline, or a typo), which
/// fails at once, rather than leaving the user to read it in the error chain.
fn unanswered(config: &ModelConfig, error: &reqwest::Error) -> ProviderError {
    let chain = error_chain(error);
    let host = reqwest::Url::parse(&config.base_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned));
    match host {
        Some(host) if chain.contains("dns error") || chain.contains("failed to lookup address") => {
            ProviderError::Network {
                message: format!(
                    "the name {host} could not be resolved (no network, or a typo in the \
                     model's `baseUrl`): {chain}"
                ),
            }
        }
        _ if error.is_timeout() => ProviderError::Network {
            message: format!("no answer in time: {chain}"),
        },
        _ => connection_error(config, error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;
    use crate::model::{Message, ToolDeclaration};

    #[test]
    fn local_hosts() {
        for (url, local) in [
            ("http://localhost:11434/v1", true),
            ("http://LOCALHOST/v1", true),
            ("http://127.0.0.1:8080/v1", true),
            ("http://127.1.2.3:8080/v1", true),
            ("http://[::1]:8000/v1", true),
            ("http://0.0.0.0:11434/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://192.168.1.5:11434/v1", false),
            ("not a url", false),
        ] {
            assert_eq!(is_local(url), local, "{url}");
        }
    }

    #[test]
    fn ollama_host_is_read_as_ollama_reads_it() {
        for (host, base_url) in [
            ("0.0.0.0", Some("http://127.0.0.1:11434/v1")),
            ("127.0.0.1:8080", Some("http://127.0.0.1:8080/v1")),
            (":9000", Some("http://127.0.0.1:9000/v1")),
            ("gpu-box", Some("http://gpu-box:11434/v1")),
            (
                "https://ollama.example.com",
                Some("https://ollama.example.com/v1"),
            ),
            ("http://[::]:11500/", Some("http://[::1]:11500/v1")),
            ("  ", None),
        ] {
            assert_eq!(
                base_url_from_host(Some(host)).as_deref(),
                base_url,
                "{host:?}"
            );
        }
        assert_eq!(base_url_from_host(None), None);
    }

    #[test]
    fn ollama_is_its_port_or_the_address_ollama_host_gives() {
        for (base_url, host, ollama) in [
            ("http://localhost:11434/v1", None, true),
            ("http://192.168.1.5:11434/v1", None, true),
            ("http://localhost:8080/v1", None, false),
            ("http://localhost:8080/v1", Some("127.0.0.1:8080"), true),
            ("http://127.0.0.1:8080/v1", Some("0.0.0.0:8080"), true),
            ("http://127.0.0.1:8081/v1", Some("127.0.0.1:8080"), false),
            ("http://gpu-box:9000/v1", Some("gpu-box:9000"), true),
            ("https://api.openai.com/v1", Some("gpu-box"), false),
        ] {
            assert_eq!(is_ollama(base_url, host), ollama, "{base_url} {host:?}");
        }
        let config = ModelConfig::new(ProviderKind::OpenAi, "m", "http://localhost:11434/v1");
        assert!(config.ollama.is_some());
        let config = ModelConfig::new(ProviderKind::Anthropic, "m", "http://localhost:11434");
        assert!(config.ollama.is_none());
    }

    /// Retries are for servers that are there: a refused connection means nothing listens only
    /// on this machine; another machine's may be restarting.
    #[tokio::test]
    async fn a_refused_connection_is_not_set_up_only_on_this_machine() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = crate::http::http_client().no_proxy().build().unwrap();
        let error = client
            .get(format!("http://127.0.0.1:{port}/v1/models"))
            .send()
            .await
            .unwrap_err();
        assert!(refused(&error), "{error:?}");

        let mut local = ModelConfig::new(
            ProviderKind::OpenAi,
            "m",
            format!("http://127.0.0.1:{port}/v1"),
        );
        local.id = "local".into();
        let not_set_up = connection_error(&local, &error);
        assert_eq!(not_set_up.kind(), "not_set_up");
        assert!(!not_set_up.is_retryable());
        assert_eq!(
            not_set_up.to_string(),
            format!(
                "Tandem is not set up: nothing answers at http://127.0.0.1:{port}/v1 (connection \
                 refused), the address of model `local` (openai m). Start the server, or correct \
                 the model's `baseUrl` in the settings (see docs/configuration.md). Then run \
                 `tandem models` to check."
            )
        );

        let remote = ModelConfig::new(ProviderKind::OpenAi, "m", "http://192.0.2.7:8080/v1");
        let network = connection_error(&remote, &error);
        assert_eq!(network.kind(), "network");
        assert!(network.is_retryable());
    }

    #[test]
    fn names_parameters_and_roots() {
        assert!(same_model("qwen3-coder", "qwen3-coder:latest"));
        assert!(same_model("Qwen3-Coder:30B", "qwen3-coder:30b"));
        assert!(!same_model("qwen3-coder", "qwen3-coder:30b"));
        assert!(same_model(
            "hf.co/org/model:Q4_K_M",
            "hf.co/org/model:q4_k_m"
        ));
        assert_eq!(
            parameter_num_ctx(
                "stop \"<|im_end|>\"\nnum_ctx                        32768\ntemperature 0.7"
            ),
            Some(32768)
        );
        assert_eq!(parameter_num_ctx("temperature 0.7"), None);
        assert_eq!(root("http://localhost:11434/v1/"), "http://localhost:11434");
        assert_eq!(root("http://h:1/ollama/v1"), "http://h:1/ollama");
    }

    #[test]
    fn only_a_request_larger_than_the_window_ollama_runs_is_refused() {
        let mut config = ModelConfig::new(
            ProviderKind::OpenAi,
            "qwen3-coder",
            "http://localhost:11434/v1",
        );
        let request = |bytes: usize| ChatRequest {
            system: "s".repeat(bytes / 2),
            messages: vec![Message::user("u".repeat(bytes / 2))],
            tools: vec![ToolDeclaration {
                name: String::new(),
                description: String::new(),
                parameters: Value::Null,
            }],
            ..ChatRequest::default()
        };
        // The family's maximum from the table: nothing is checked.
        assert_eq!(check_fits(&config, &request(4_000_000)), Ok(()));

        config.context_window = 4096;
        config.context_source = ContextSource::Ollama(OllamaContext::Default);
        assert_eq!(check_fits(&config, &request(16_000)), Ok(()));
        let refused = check_fits(&config, &request(26_000)).unwrap_err();
        assert_eq!(refused.kind(), "not_set_up");
        assert!(!refused.is_retryable());
        let message = refused.to_string();
        for needle in [
            "Tandem is not set up: this request is about 6501 tokens, but Ollama runs \
             qwen3-coder with a context window of 4096 tokens (Ollama's default when nothing \
             sets it) and would silently cut it.",
            "`OLLAMA_CONTEXT_LENGTH=32768 ollama serve`",
            "`PARAMETER num_ctx 32768`",
            "`contextWindow`",
        ] {
            assert!(message.contains(needle), "{message}");
        }

        config.context_window = 32768;
        config.context_source = ContextSource::Ollama(OllamaContext::Loaded);
        let over = check_fits(&config, &request(140_000)).unwrap_err();
        assert_eq!(over.kind(), "context_window_exceeded", "{over}");
    }
}
