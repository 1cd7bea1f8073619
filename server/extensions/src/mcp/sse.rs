//! The older HTTP+SSE transport (protocol 2024-11-05), which rmcp has no client for: Tandem
//! GETs the server's URL as an event stream; the first `endpoint` event names the URL to POST
//! each client message to (resolved against the stream's URL, and only accepted on the same
//! origin, so configured headers never go elsewhere); the server's messages arrive as `message`
//! events on the stream.

use std::future::Future;

use futures::stream::BoxStream;
use futures::StreamExt;
use reqwest::header::{HeaderMap, ACCEPT};
use reqwest::Url;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::{Sse, SseByteStream};

/// Bytes of an error response quoted in a message.
const QUOTED_BODY: usize = 300;

/// A connected SSE transport.
pub(crate) struct SseTransport {
    server: String,
    client: reqwest::Client,
    headers: HeaderMap,
    post_url: Url,
    events: Option<BoxStream<'static, Result<Sse, sse_stream::Error>>>,
}

/// A message that could not be sent.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SseError(String);

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event; `Err` says what went wrong,
    /// for the user.
    pub(crate) async fn connect(
        server: &str,
        client: reqwest::Client,
        url: &str,
        headers: HeaderMap,
    ) -> Result<SseTransport, String> {
        let base = Url::parse(url).map_err(|error| format!("`url` {url} is not a URL: {error}"))?;
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|error| format!("cannot connect to {url}: {}", chain(&error)))?;
        let status = response.status();
        if !status.is_success() {
            let body = quoted_body(response).await;
            return Err(format!(
                "{url} answered {status} to the request for its event stream{body}"
            ));
        }
        let mut events = SseByteStream::new(response.bytes_stream()).boxed();
        loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let post_url = endpoint_url(&base, event.data.as_deref().unwrap_or(""))?;
                    tracing::debug!(%server, %post_url, "MCP server's SSE message endpoint");
                    return Ok(SseTransport {
                        server: server.to_owned(),
                        client,
                        headers,
                        post_url,
                        events: Some(events),
                    });
                }
                // Keep-alives and anything else the server sends first.
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    return Err(format!(
                        "the event stream from {url} broke before it named the URL for \
                         messages: {error}"
                    ))
                }
                None => {
                    return Err(format!(
                        "the event stream from {url} ended before it named the URL for messages \
                         (an `endpoint` event); is it an SSE server? For a streamable HTTP \
                         server, drop `type: sse`"
                    ))
                }
            }
        }
    }
}

/// Where the `endpoint` event says to POST messages: `data` resolved against the stream's URL,
/// on the same origin.
pub(crate) fn endpoint_url(base: &Url, data: &str) -> Result<Url, String> {
    let data = data.trim();
    if data.is_empty() {
        return Err("the server's `endpoint` event names no URL".to_owned());
    }
    let url = base
        .join(data)
        .map_err(|error| format!("the server's `endpoint` event ({data}) is no URL: {error}"))?;
    if url.origin() != base.origin() {
        return Err(format!(
            "the server asked for messages to go to {url}, which is not where its event stream \
             is ({}); Tandem sends them only to the server it connected to",
            base.origin().ascii_serialization()
        ));
    }
    Ok(url)
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .client
            .post(self.post_url.clone())
            .headers(self.headers.clone())
            .json(&item);
        let url = self.post_url.clone();
        async move {
            let response = request
                .send()
                .await
                .map_err(|error| SseError(format!("cannot post to {url}: {}", chain(&error))))?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                let body = quoted_body(response).await;
                Err(SseError(format!(
                    "{url} answered {status} to a message{body}"
                )))
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let next = self.events.as_mut()?.next().await;
            match next {
                Some(Ok(event)) => {
                    if !matches!(event.event.as_deref(), None | Some("message")) {
                        continue;
                    }
                    let Some(data) = event.data else { continue };
                    match serde_json::from_str(&data) {
                        Ok(message) => return Some(message),
                        Err(error) => tracing::warn!(
                            server = %self.server,
                            "ignored an SSE message that is not JSON-RPC: {error}"
                        ),
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(server = %self.server, "the SSE event stream broke: {error}");
                    self.events = None;
                    return None;
                }
                None => {
                    tracing::debug!(server = %self.server, "the SSE event stream ended");
                    self.events = None;
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.events = None;
        Ok(())
    }
}

/// An error with its causes ("error sending request: connection refused").
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = cause(error);
    while let Some(next) = source {
        let next_text = next.to_string();
        if !text.contains(&next_text) {
            text.push_str(": ");
            text.push_str(&next_text);
        }
        source = cause(next);
    }
    text
}

/// What caused `error`. rmcp's HTTP transport keeps the client's error without giving it as
/// the source, and that error is the one that says "connection refused".
fn cause<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(client)) => Some(client),
        _ => error.source(),
    }
}

/// The start of an error response's body, as `: <text>`, reading no more than needed.
async fn quoted_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= QUOTED_BODY {
            break;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let mut end = text.len().min(QUOTED_BODY);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(": {}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_resolved_against_the_stream_and_kept_on_its_origin() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let cases = [
            (
                "/message?sessionId=abc",
                "http://127.0.0.1:3001/message?sessionId=abc",
            ),
            (
                "message?sessionId=abc\n",
                "http://127.0.0.1:3001/message?sessionId=abc",
            ),
            (
                "http://127.0.0.1:3001/mcp/messages/",
                "http://127.0.0.1:3001/mcp/messages/",
            ),
        ];
        for (data, expected) in cases {
            assert_eq!(endpoint_url(&base, data).unwrap().as_str(), expected);
        }
        let nested = Url::parse("https://example.com/api/sse").unwrap();
        assert_eq!(
            endpoint_url(&nested, "messages?id=1").unwrap().as_str(),
            "https://example.com/api/messages?id=1"
        );
        assert!(endpoint_url(&base, "  ").unwrap_err().contains("no URL"));
        let elsewhere = endpoint_url(&base, "http://attacker.example/collect").unwrap_err();
        assert!(
            elsewhere.contains("not where its event stream is"),
            "{elsewhere}"
        );
        assert!(endpoint_url(&base, "https://127.0.0.1:3001/message").is_err());
    }
}
