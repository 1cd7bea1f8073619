//! One attempt over HTTP: send the wire format's request with the key header, turn an error
//! status into a typed error, decode the SSE body. The key is added here and nowhere else, and
//! every error leaving this module has been scrubbed of it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::stream::BoxStream;
use futures::StreamExt;
use reqwest::header::HeaderMap;

use crate::config::ModelConfig;
use crate::error::{from_status, ProviderError, Result};
use crate::model::{ChatRequest, StreamEvent};
use crate::retry::Backend;
use crate::sse::{decode, error_chain};
use crate::wire::Wire;

pub(crate) struct HttpBackend {
    client: reqwest::Client,
    wire: Wire,
    config: Arc<ModelConfig>,
}

impl HttpBackend {
    pub(crate) fn new(wire: Wire, config: Arc<ModelConfig>) -> Result<Self> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .user_agent(concat!("tandem/", env!("CARGO_PKG_VERSION")));
        // `HTTP(S)_PROXY` applies to hosted APIs; a model on this machine (Ollama, llama.cpp)
        // is never behind the proxy, whatever `NO_PROXY` says.
        if is_loopback(&config.base_url) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|error| ProviderError::Config {
            message: format!("cannot set up the HTTP client: {}", error_chain(&error)),
        })?;
        Ok(HttpBackend {
            client,
            wire,
            config,
        })
    }
}

impl Backend for HttpBackend {
    fn attempt(&self, request: Arc<ChatRequest>) -> BoxStream<'static, Result<StreamEvent>> {
        let wire = self.wire;
        let config = Arc::clone(&self.config);
        let client = self.client.clone();
        Box::pin(async_stream::stream! {
            let secret = config.api_key.as_ref().map_or("", |key| key.expose()).to_owned();
            let wire_request = wire.request(&config, &request);
            tracing::debug!(
                provider = %config.provider,
                model = %config.model,
                url = %wire_request.url,
                messages = request.messages.len(),
                "model request"
            );
            let mut builder = client
                .post(&wire_request.url)
                .header("accept", "text/event-stream")
                .json(&wire_request.body);
            for (name, value) in &wire_request.headers {
                builder = builder.header(*name, value);
            }
            for (name, value) in &config.headers {
                builder = builder.header(name, value);
            }
            if let Some(key) = &config.api_key {
                let (name, value) = wire.auth_header(key.expose());
                builder = builder.header(name, value);
            }
            let response = match builder.send().await {
                Ok(response) => response,
                Err(error) => {
                    yield Err(ProviderError::Network { message: error_chain(&error) }.redact(&secret));
                    return;
                }
            };
            let status = response.status();
            if !status.is_success() {
                let retry_after = retry_after(response.headers());
                let body = match response.text().await {
                    Ok(body) => body,
                    Err(error) => {
                        yield Err(ProviderError::Network { message: error_chain(&error) }.redact(&secret));
                        return;
                    }
                };
                yield Err(from_status(status.as_u16(), retry_after, wire.error_body(&body)).redact(&secret));
                return;
            }
            let mut events = std::pin::pin!(decode(wire.decoder(), response.bytes_stream()));
            while let Some(event) = events.next().await {
                let failed = event.is_err();
                yield event.map_err(|error| error.redact(&secret));
                if failed {
                    return;
                }
            }
        })
    }
}

fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(address)) => address.is_loopback(),
        Some(url::Host::Ipv6(address)) => address.is_loopback(),
        None => false,
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
    fn loopback_hosts_bypass_the_proxy() {
        for (url, loopback) in [
            ("http://localhost:11434/v1", true),
            ("http://127.0.0.1:8080/v1", true),
            ("http://[::1]:8000/v1", true),
            ("https://api.openai.com/v1", false),
            ("http://192.168.1.5:11434/v1", false),
            ("not a url", false),
        ] {
            assert_eq!(is_loopback(url), loopback, "{url}");
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
