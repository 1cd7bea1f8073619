//! One attempt over HTTP: send the wire format's request with its credentials (`auth.rs`: a
//! key header, a SigV4 signature, a Google token, added once the body is final), turn an error
//! status into a typed error, decode the body (SSE, or Bedrock's event stream). Credentials are
//! added here and nowhere else, and every error leaving this module has been scrubbed of them.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::stream::BoxStream;
use futures::StreamExt;
use reqwest::header::HeaderMap;

use crate::auth::Auth;
use crate::config::ModelConfig;
use crate::error::{from_status, ProviderError, Result};
use crate::history::{Issuer, SIGNATURES};
use crate::model::ChatRequest;
use crate::retry::{Backend, Progress};
use crate::sse::error_chain;
use crate::wire::Wire;

/// A `reqwest` client builder for every HTTP client Tandem makes (providers, MCP servers):
/// rustls with the ring crypto provider, installed for the process the first time.
pub fn http_client() -> reqwest::ClientBuilder {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Fails only when another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
}

/// One JSON `POST` to `config`'s server that is not a chat request (fill-in-the-middle): the
/// key and the configured headers added, the answer's body returned, an error status typed.
/// Every error leaving here is scrubbed of the key, as for chat requests.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    config: &ModelConfig,
    url: &str,
    body: &serde_json::Value,
    timeout: Duration,
) -> Result<String> {
    let mut builder = client.post(url).timeout(timeout).json(body);
    if let Some(key) = &config.api_key {
        builder = builder.header("authorization", format!("Bearer {}", key.expose()));
    }
    for (name, value) in &config.headers {
        builder = builder.header(name, value);
    }
    let secret = config.api_key.as_ref().map_or("", |key| key.expose());
    let response = builder
        .send()
        .await
        .map_err(|error| crate::ollama::connection_error(config, &error).redact(secret))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|error| {
        ProviderError::Network {
            message: error_chain(&error),
        }
        .redact(secret)
    })?;
    if !(200..300).contains(&status) {
        let message: String = text.chars().take(500).collect();
        let error = match status {
            401 | 403 => ProviderError::Authentication { message },
            429 => ProviderError::RateLimited {
                retry_after: None,
                message,
            },
            500.. => ProviderError::Server { status, message },
            _ => ProviderError::BadRequest { status, message },
        };
        return Err(error.redact(secret));
    }
    Ok(text)
}

pub(crate) struct HttpBackend {
    client: reqwest::Client,
    wire: Wire,
    config: Arc<ModelConfig>,
    auth: Arc<Auth>,
}

/// The HTTP client for requests to `config`'s server.
pub(crate) fn model_client(config: &ModelConfig) -> Result<reqwest::Client> {
    let mut builder = http_client()
        .connect_timeout(config.connect_timeout)
        .tcp_nodelay(true)
        .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")));
    // `HTTP(S)_PROXY` applies to hosted APIs; a model on this machine (Ollama, llama.cpp)
    // is never behind the proxy, whatever `NO_PROXY` says.
    if crate::ollama::is_local(&config.base_url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|error| ProviderError::Config {
        message: format!("cannot set up the HTTP client: {}", error_chain(&error)),
    })
}

impl HttpBackend {
    pub(crate) fn new(wire: Wire, config: Arc<ModelConfig>) -> Result<Self> {
        let client = model_client(&config)?;
        let key = config.api_key.as_ref().map(|key| key.expose());
        let auth = Arc::new(Auth::for_model(wire, &config, key)?);
        Ok(HttpBackend {
            client,
            wire,
            config,
            auth,
        })
    }
}

impl Backend for HttpBackend {
    fn attempt(&self, request: Arc<ChatRequest>) -> BoxStream<'static, Result<Progress>> {
        let wire = self.wire;
        let config = Arc::clone(&self.config);
        let client = self.client.clone();
        let auth = Arc::clone(&self.auth);
        Box::pin(async_stream::stream! {
            // What the request carries that errors must not show: the key, and whatever the
            // authorisation adds (a token, an access key id).
            let mut secrets: Vec<String> = config.api_key.iter().map(|key| key.expose().to_owned()).collect();
            let wire_request = wire.request(&config, &request);
            tracing::debug!(
                provider = %config.provider,
                model = %config.model,
                url = %wire_request.url,
                messages = request.messages.len(),
                "model request"
            );
            // The body as the bytes sent, which a signature covers. A JSON value always
            // serialises.
            let body = serde_json::to_vec(&wire_request.body).unwrap_or_default();
            let mut builder = client
                .post(&wire_request.url)
                .header("content-type", "application/json")
                .body(body);
            if !wire_request.headers.iter().any(|(name, _)| *name == "accept") {
                builder = builder.header("accept", "text/event-stream");
            }
            for (name, value) in &wire_request.headers {
                builder = builder.header(*name, value);
            }
            for (name, value) in &config.headers {
                builder = builder.header(name, value);
            }
            let mut http_request = match builder.build() {
                Ok(http_request) => http_request,
                Err(error) => {
                    yield Err(redact_all(crate::ollama::connection_error(&config, &error), &secrets));
                    return;
                }
            };
            match auth.apply(&mut http_request).await {
                Ok(added) => secrets.extend(added),
                Err(error) => {
                    yield Err(redact_all(error, &secrets));
                    return;
                }
            }
            let response = match client.execute(http_request).await {
                Ok(response) => response,
                Err(error) => {
                    // Nothing listening on this machine is not worth retrying.
                    yield Err(redact_all(crate::ollama::connection_error(&config, &error), &secrets));
                    return;
                }
            };
            let status = response.status();
            if !status.is_success() {
                let retry_after = retry_after(response.headers());
                let headers = response.headers().clone();
                let mut response = response;
                // Only the first `ERROR_BODY_LIMIT` bytes are read: an error body is a message
                // (or a proxy's HTML page), and one that never ends must not hold the attempt.
                let mut body = Vec::new();
                loop {
                    match response.chunk().await {
                        Ok(Some(chunk)) => {
                            yield Ok(Progress::Received(chunk.len()));
                            let room = ERROR_BODY_LIMIT - body.len();
                            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                            if body.len() == ERROR_BODY_LIMIT {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(error) => {
                            yield Err(redact_all(ProviderError::Network { message: error_chain(&error) }, &secrets));
                            return;
                        }
                    }
                }
                let body = String::from_utf8_lossy(&body);
                let error = from_status(status.as_u16(), retry_after, wire.error_response(&headers, &body));
                let error = match error {
                    ProviderError::Authentication { message } => ProviderError::Authentication {
                        message: refusal(&config, &wire_request.url, &message),
                    },
                    other => other,
                };
                yield Err(redact_all(error, &secrets));
                return;
            }
            let mut progress = wire.decode(response.bytes_stream());
            // Signatures go back only to the model that issued them (`history.rs`).
            let issuer = Issuer::of(wire, &config);
            while let Some(item) = progress.next().await {
                if let Ok(Progress::Event(event)) = &item {
                    SIGNATURES.record(issuer, event);
                }
                let failed = item.is_err();
                yield item.map_err(|error| redact_all(error, &secrets));
                if failed {
                    return;
                }
            }
        })
    }
}

/// A GET of `url` carrying what a model request to `config`'s server carries: the key, the
/// configured headers, the wire format's version header (`tandem models`' check, `ollama.rs`).
pub(crate) fn authenticated_get(
    client: &reqwest::Client,
    config: &ModelConfig,
    url: &str,
) -> reqwest::RequestBuilder {
    let mut request = client.get(url);
    if config.provider == crate::config::ProviderKind::Anthropic {
        request = request.header("anthropic-version", crate::anthropic::API_VERSION);
    }
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    if let (Some(key), Some(wire)) = (&config.api_key, config.wire()) {
        let (name, value) = wire.auth_header(config, key.expose());
        request = request.header(name, value);
    }
    request
}

/// `error` with every one of `secrets` scrubbed from its messages.
fn redact_all(error: ProviderError, secrets: &[String]) -> ProviderError {
    secrets
        .iter()
        .fold(error, |error, secret| error.redact(secret))
}

/// `error` with `config`'s key scrubbed from its messages.
pub(crate) fn redact_key(error: ProviderError, config: &ModelConfig) -> ProviderError {
    match &config.api_key {
        Some(key) => error.redact(key.expose()),
        None => error,
    }
}

/// How much of an error response's body is read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The message of an authentication failure: which model, provider and endpoint refused which
/// key (named by its variable, never shown), the provider's own `message`, and what to do.
pub(crate) fn refusal(config: &ModelConfig, url: &str, message: &str) -> String {
    let cloud = match (config.provider, &config.api_key) {
        (crate::config::ProviderKind::Bedrock, None) => Some((
            "refused the request signed with the AWS credentials the standard chain found",
            "Check which credentials are in use (AWS_PROFILE, `aws sso login`, \
             AWS_ACCESS_KEY_ID…) and that they may call bedrock:InvokeModelWithResponseStream \
             on this model in this region.",
        )),
        (crate::config::ProviderKind::Vertex, _) => Some((
            "refused the Google access token from Application Default Credentials",
            "Check the credentials (`gcloud auth application-default login`, or \
             GOOGLE_APPLICATION_CREDENTIALS) and that their account may use Vertex AI in the \
             model's project (the Vertex AI User role).",
        )),
        _ => None,
    };
    let (what, advice) = match (cloud, &config.api_key, &config.api_key_env) {
        (Some((what, advice)), _, _) => (what.to_owned(), advice.to_owned()),
        (None, key, variable) => refusal_of_key(key.is_some(), variable.as_deref()),
    };
    format!(
        "{} model {} at {} {what}: {}. {advice}",
        config.provider,
        config.model,
        endpoint(url),
        message.trim_end().trim_end_matches('.')
    )
}

/// What refused a key, and what to do, by whether a key was sent and where it came from.
fn refusal_of_key(has_key: bool, variable: Option<&str>) -> (String, String) {
    match (has_key, variable) {
        (true, Some(variable)) => (
            format!("refused the key in {variable}"),
            "Check the key, or set apiKeyEnv in the model's settings.".to_owned(),
        ),
        (true, None) => (
            "refused the key given in the model's configuration (not read from an environment \
             variable)"
                .to_owned(),
            "Check the key, or set apiKeyEnv in the model's settings to read it from a variable."
                .to_owned(),
        ),
        (false, Some(variable)) => (
            format!("refused the request, which carried no key because {variable} is not set"),
            format!(
                "Set {variable} in the environment Tandem runs in, or set apiKeyEnv in the \
                 model's settings."
            ),
        ),
        (false, None) => (
            "refused the request, which carried no key".to_owned(),
            "Set apiKeyEnv in the model's settings to the variable that holds the key.".to_owned(),
        ),
    }
}

/// `url` without its query and credentials: the endpoint as a user would recognise it, with
/// nothing secret that a base URL might carry.
pub(crate) fn endpoint(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut url) => {
            url.set_query(None);
            url.set_fragment(None);
            // Only fails for URLs that cannot have credentials, which then have none to hide.
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        Err(_) => url.to_owned(),
    }
}

/// The delay a response asks for: `retry-after-ms` (OpenAI, Anthropic), else `Retry-After` in
/// seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn a_refusal_names_model_endpoint_and_where_the_key_came_from() {
        let url = "https://user:pass@api.example.com/v1/chat/completions?api-version=2&key=k";
        let mut config = ModelConfig::new(
            crate::config::ProviderKind::OpenAi,
            "gpt-4o",
            "https://api.example.com/v1",
        );
        let prefix = "openai model gpt-4o at https://api.example.com/v1/chat/completions";
        let cases = [
            (
                Some("OPENAI_API_KEY"),
                true,
                "refused the key in OPENAI_API_KEY: bad key. Check the key, or set apiKeyEnv in \
                 the model's settings.",
            ),
            (
                None,
                true,
                "refused the key given in the model's configuration (not read from an \
                 environment variable): bad key. Check the key, or set apiKeyEnv in the model's \
                 settings to read it from a variable.",
            ),
            (
                Some("MY_KEY"),
                false,
                "refused the request, which carried no key because MY_KEY is not set: bad key. \
                 Set MY_KEY in the environment Tandem runs in, or set apiKeyEnv in the model's \
                 settings.",
            ),
            (
                None,
                false,
                "refused the request, which carried no key: bad key. Set apiKeyEnv in the \
                 model's settings to the variable that holds the key.",
            ),
        ];
        for (variable, has_key, expected) in cases {
            config.api_key_env = variable.map(str::to_owned);
            config.api_key = has_key.then(|| crate::config::ApiKey::new("sk-literal"));
            assert_eq!(
                refusal(&config, url, "bad key."),
                format!("{prefix} {expected}")
            );
        }
    }

    #[test]
    fn retry_after_headers() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")])),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        let past = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH);
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
