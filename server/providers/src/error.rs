//! Provider errors: typed by what the caller should do next (retry, compress, fix the
//! configuration, give up), each with a message that says what happened.

use std::time::Duration;

/// What went wrong talking to a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider refused the credentials (HTTP 401/403), or none were configured.
    #[error("authentication failed: {message}")]
    Authentication { message: String },
    /// HTTP 429. `retry_after` is what the provider asked for, if it said.
    #[error("rate limited{}: {message}", after(*retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The provider is overloaded (Anthropic 529 `overloaded_error`, HTTP 503).
    #[error("model overloaded{}: {message}", after(*retry_after))]
    Overloaded {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The prompt does not fit the model's context window; compress the history and retry.
    #[error("context window exceeded: {message}")]
    ContextWindowExceeded { message: String },
    /// The provider rejected the request (HTTP 4xx); `message` is the provider's.
    #[error("bad request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    /// The provider failed (HTTP 5xx other than overload).
    #[error("server error (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    /// Connecting, sending or receiving failed.
    #[error("network error: {message}")]
    Network { message: String },
    /// Nothing arrived for longer than the idle timeout.
    #[error("no data from the model for {}s (idle timeout)", idle.as_secs_f64())]
    IdleTimeout { idle: Duration },
    /// The stream carried something that is not the provider's format (bad JSON, an event out
    /// of place, a tool call whose arguments are not JSON).
    #[error("invalid response stream: {message}")]
    InvalidStream { message: String },
    /// The stream ended before the provider's completion event.
    #[error("response stream ended early: {message}")]
    TruncatedStream { message: String },
    /// The response passed `network.maxResponseBytes` or `network.maxResponseSecs`: most likely
    /// a model that does not stop (thinking or repeating itself without end). Not retried: the
    /// same request would most likely run away again.
    #[error("{limit}")]
    ResponseLimitExceeded { limit: ResponseLimit },
    /// The caller cancelled the request.
    #[error("request cancelled")]
    Cancelled,
    /// The model is configured in a way that cannot work (missing key, unknown provider, a
    /// replay script that cannot be read or has run out).
    #[error("configuration error: {message}")]
    Config { message: String },
    /// A settings file or the editor's settings cannot be used: unreadable, not JSON, or a key
    /// or value Tandem does not know. The message starts with where the settings came from.
    #[error("{message}")]
    Settings { message: String },
    /// The model's server is not there to talk to: nothing listens at a local address (the
    /// connection was refused), the local Ollama lacks the model, or runs it with a context
    /// window too small for Tandem. Not retried: someone has to start or set something up, and
    /// `message` says what. It reads "Tandem is not set up: …" (see `NOT_SET_UP`).
    #[error("{NOT_SET_UP}: {message}")]
    NotSetUp { message: String },
}

/// How every message about a model that cannot be used yet begins, so that a front end can tell
/// the user once rather than on every turn (the agent passes errors on as text).
pub const NOT_SET_UP: &str = "Tandem is not set up";

pub type Result<T, E = ProviderError> = std::result::Result<T, E>;

/// Which cap on a single response was passed, with the cap's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseLimit {
    /// `network.maxResponseBytes`: body bytes received.
    Bytes(u64),
    /// `network.maxResponseSecs`: time since the request was sent.
    Time(Duration),
}

impl std::fmt::Display for ResponseLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (passed, setting) = match self {
            ResponseLimit::Bytes(bytes) => (format!("{bytes} bytes"), "maxResponseBytes"),
            ResponseLimit::Time(time) => (format!("{}s", time.as_secs_f64()), "maxResponseSecs"),
        };
        write!(
            f,
            "the model's response was stopped after {passed}, the most `network.{setting}` \
             allows; the model may be stuck thinking or repeating itself. If its answers really \
             are this long, raise `network.{setting}` in settings.json"
        )
    }
}

fn after(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(delay) => format!(" (retry after {}s)", delay.as_secs_f64()),
        None => String::new(),
    }
}

impl ProviderError {
    /// Whether trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::RateLimited { .. }
            | ProviderError::Overloaded { .. }
            | ProviderError::Server { .. }
            | ProviderError::Network { .. }
            | ProviderError::IdleTimeout { .. }
            | ProviderError::InvalidStream { .. }
            | ProviderError::TruncatedStream { .. } => true,
            ProviderError::Authentication { .. }
            | ProviderError::ContextWindowExceeded { .. }
            | ProviderError::BadRequest { .. }
            | ProviderError::ResponseLimitExceeded { .. }
            | ProviderError::Cancelled
            | ProviderError::Config { .. }
            | ProviderError::Settings { .. }
            | ProviderError::NotSetUp { .. } => false,
        }
    }

    /// The delay the provider asked for before a retry.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. }
            | ProviderError::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short machine-readable name, used in replay scripts and event payloads.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::Authentication { .. } => "authentication",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Overloaded { .. } => "overloaded",
            ProviderError::ContextWindowExceeded { .. } => "context_window_exceeded",
            ProviderError::BadRequest { .. } => "bad_request",
            ProviderError::Server { .. } => "server",
            ProviderError::Network { .. } => "network",
            ProviderError::IdleTimeout { .. } => "idle_timeout",
            ProviderError::InvalidStream { .. } => "invalid_stream",
            ProviderError::TruncatedStream { .. } => "truncated_stream",
            ProviderError::ResponseLimitExceeded { .. } => "response_limit_exceeded",
            ProviderError::Cancelled => "cancelled",
            ProviderError::Config { .. } | ProviderError::Settings { .. } => "config",
            ProviderError::NotSetUp { .. } => "not_set_up",
        }
    }

    pub(crate) fn invalid_stream(message: impl Into<String>) -> Self {
        ProviderError::InvalidStream {
            message: message.into(),
        }
    }

    /// The message of the errors that carry one.
    pub(crate) fn message_mut(&mut self) -> Option<&mut String> {
        match self {
            ProviderError::Authentication { message }
            | ProviderError::RateLimited { message, .. }
            | ProviderError::Overloaded { message, .. }
            | ProviderError::ContextWindowExceeded { message }
            | ProviderError::BadRequest { message, .. }
            | ProviderError::Server { message, .. }
            | ProviderError::Network { message }
            | ProviderError::InvalidStream { message }
            | ProviderError::TruncatedStream { message }
            | ProviderError::Config { message }
            | ProviderError::Settings { message }
            | ProviderError::NotSetUp { message } => Some(message),
            ProviderError::IdleTimeout { .. }
            | ProviderError::ResponseLimitExceeded { .. }
            | ProviderError::Cancelled => None,
        }
    }

    /// Replaces every occurrence of `secret` in the message this error carries. Provider error
    /// bodies sometimes quote the key they were sent.
    pub(crate) fn redact(mut self, secret: &str) -> Self {
        if let Some(message) = self.message_mut() {
            if !secret.is_empty() && message.contains(secret) {
                *message = message.replace(secret, "[redacted]");
            }
        }
        self
    }
}

/// What a provider's error body says, read by that provider's wire format.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ErrorBody {
    /// The provider's message, or the raw body when it could not be read.
    pub message: String,
    /// The provider says the prompt is too long for the model.
    pub context_window_exceeded: bool,
    /// The provider says it is overloaded (whatever the HTTP status).
    pub overloaded: bool,
    /// A delay the body asks for (Gemini's `RetryInfo.retryDelay`).
    pub retry_after: Option<Duration>,
}

/// The typed error for an HTTP error response. `header_retry_after` comes from the
/// `retry-after-ms` / `Retry-After` headers and wins over a delay in the body.
pub(crate) fn from_status(
    status: u16,
    header_retry_after: Option<Duration>,
    body: ErrorBody,
) -> ProviderError {
    let retry_after = header_retry_after.or(body.retry_after);
    let message = if body.message.trim().is_empty() {
        format!("HTTP {status} with no message")
    } else {
        body.message
    };
    if body.context_window_exceeded {
        return ProviderError::ContextWindowExceeded { message };
    }
    if body.overloaded || status == 503 || status == 529 {
        return ProviderError::Overloaded {
            retry_after,
            message,
        };
    }
    match status {
        401 | 403 => ProviderError::Authentication { message },
        429 => ProviderError::RateLimited {
            retry_after,
            message,
        },
        // 408 Request Timeout and 409 (Anthropic: lock contention) are worth retrying.
        408 | 409 => ProviderError::Server { status, message },
        400..=499 => ProviderError::BadRequest { status, message },
        _ => ProviderError::Server { status, message },
    }
}

/// At most 200 characters of `text` (trimmed), for messages that quote what a provider sent: a
/// bad payload, unparsable tool arguments.
pub(crate) fn excerpt(text: &str) -> String {
    const LIMIT: usize = 200;
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// Cuts a provider message that is unreasonably long (an HTML error page from a proxy).
pub(crate) fn shorten(text: &str) -> String {
    const LIMIT: usize = 2000;
    let text = text.trim();
    if text.len() <= LIMIT {
        return text.to_owned();
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(message: &str) -> ErrorBody {
        ErrorBody {
            message: message.into(),
            ..ErrorBody::default()
        }
    }

    #[test]
    fn statuses_map_to_kinds() {
        let cases = [
            (401, "authentication"),
            (403, "authentication"),
            (400, "bad_request"),
            (404, "bad_request"),
            (408, "server"),
            (429, "rate_limited"),
            (500, "server"),
            (502, "server"),
            (503, "overloaded"),
            (529, "overloaded"),
        ];
        for (status, kind) in cases {
            assert_eq!(
                from_status(status, None, body("m")).kind(),
                kind,
                "HTTP {status}"
            );
        }
    }

    #[test]
    fn body_flags_win_over_status() {
        let exceeded = ErrorBody {
            context_window_exceeded: true,
            ..body("too long")
        };
        assert_eq!(
            from_status(400, None, exceeded).kind(),
            "context_window_exceeded"
        );
        let overloaded = ErrorBody {
            overloaded: true,
            ..body("busy")
        };
        assert_eq!(from_status(500, None, overloaded).kind(), "overloaded");
    }

    #[test]
    fn header_retry_after_wins_over_body() {
        let with_body_delay = ErrorBody {
            retry_after: Some(Duration::from_secs(9)),
            ..body("m")
        };
        let error = from_status(429, Some(Duration::from_secs(2)), with_body_delay.clone());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            from_status(429, None, with_body_delay).retry_after(),
            Some(Duration::from_secs(9))
        );
    }

    #[test]
    fn redact_removes_the_secret_from_messages() {
        let error = from_status(
            401,
            None,
            body("Incorrect API key provided: sk-secret-123."),
        );
        assert_eq!(
            error.redact("sk-secret-123").to_string(),
            "authentication failed: Incorrect API key provided: [redacted]."
        );
    }

    #[test]
    fn shorten_cuts_on_a_char_boundary() {
        let long = "é".repeat(1500);
        let short = shorten(&long);
        assert!(short.ends_with("more bytes]"));
        assert!(short.len() < long.len());
    }
}
