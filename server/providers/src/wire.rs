//! What every wire format provides: the HTTP request for a `ChatRequest`, a decoder that turns
//! the SSE events of the response into `StreamEvent`s, and a reader for its error bodies.
//!
//! Decoders are plain state machines (no I/O, no async), so tests feed them bytes split at
//! every position and compare.

use std::borrow::Cow;

use crate::config::ModelConfig;
use crate::error::{ErrorBody, Result};
use crate::history::{self, SIGNATURES};
use crate::model::{ChatRequest, StreamEvent};

/// An HTTP request, without credentials: `http.rs` adds the key header itself so that no
/// wire format ever handles the key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WireRequest {
    pub url: String,
    /// Extra headers (`anthropic-version`, …). Never the API key.
    pub headers: Vec<(&'static str, String)>,
    pub body: serde_json::Value,
}

/// Turns one response's SSE events into stream events.
pub(crate) trait StreamDecoder: Send {
    /// Decodes one SSE event (`event` is the SSE `event:` field, `data` its data) and returns
    /// the stream events it completes, in order. An `Err` ends the stream.
    fn event(&mut self, event: Option<&str>, data: &str) -> Result<Vec<StreamEvent>>;

    /// Whether the provider's completion event has arrived; the caller stops reading then.
    fn is_done(&self) -> bool;

    /// The byte stream ended. Returns the last events (`Usage`, `Finished`) when the response
    /// was complete, `ProviderError::TruncatedStream` when it was not.
    fn end(&mut self) -> Result<Vec<StreamEvent>>;
}

/// The wire formats. The replay provider has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Wire {
    /// OpenAI's Chat Completions, and its copies.
    OpenAi,
    /// OpenAI's Responses API.
    Responses,
    Anthropic,
    Gemini,
}

impl Wire {
    /// The HTTP request for `request`, its history first made valid for this wire format and
    /// model (`history.rs`): other providers' signatures removed, tool-call ids unique.
    pub(crate) fn request(self, config: &ModelConfig, request: &ChatRequest) -> WireRequest {
        let prepared;
        let request = match history::prepare(self, config, &request.messages, &SIGNATURES) {
            Cow::Borrowed(_) => request,
            Cow::Owned(messages) => {
                prepared = ChatRequest {
                    system: request.system.clone(),
                    messages,
                    tools: request.tools.clone(),
                    settings: request.settings.clone(),
                    cache_breakpoints: request.cache_breakpoints.clone(),
                    cache_key: request.cache_key.clone(),
                };
                &prepared
            }
        };
        match self {
            Wire::OpenAi => crate::openai::request(config, request),
            Wire::Responses => crate::responses::request(config, request),
            Wire::Anthropic => crate::anthropic::request(config, request),
            Wire::Gemini => crate::gemini::request(config, request),
        }
    }

    pub(crate) fn decoder(self) -> Box<dyn StreamDecoder> {
        match self {
            Wire::OpenAi => Box::<crate::openai::Decoder>::default(),
            Wire::Responses => Box::<crate::responses::Decoder>::default(),
            Wire::Anthropic => Box::<crate::anthropic::Decoder>::default(),
            Wire::Gemini => Box::<crate::gemini::Decoder>::default(),
        }
    }

    pub(crate) fn error_body(self, body: &str) -> ErrorBody {
        match self {
            // The Responses API's error bodies are Chat Completions' shape.
            Wire::OpenAi | Wire::Responses => crate::openai::error_body(body),
            Wire::Anthropic => crate::anthropic::error_body(body),
            Wire::Gemini => crate::gemini::error_body(body),
        }
    }

    /// The header that carries the API key, and its value for `key`: Azure OpenAI takes it as
    /// `api-key`.
    pub(crate) fn auth_header(self, config: &ModelConfig, key: &str) -> (&'static str, String) {
        match self {
            Wire::OpenAi | Wire::Responses if config.is_azure() => ("api-key", key.to_owned()),
            Wire::OpenAi | Wire::Responses => ("authorization", format!("Bearer {key}")),
            Wire::Anthropic => ("x-api-key", key.to_owned()),
            Wire::Gemini => ("x-goog-api-key", key.to_owned()),
        }
    }
}

/// The endpoint under a base URL, whatever trailing slashes the user wrote.
pub(crate) fn join(base_url: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base_url.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Every recorded response under `tests/fixtures/providers/<wire>/*.sse` decodes to what its
/// `.events` file says, and decodes the same whatever the chunk boundaries: split at every byte
/// position (UTF-8 characters included) and delivered one byte at a time.
/// `UPDATE_EXPECT=1 cargo test -p tandem-providers` rewrites the `.events` files.
#[cfg(test)]
mod fixture_tests {
    use std::path::{Path, PathBuf};

    use super::Wire;
    use crate::sse::{decode_chunks, render};

    fn fixtures(wire: &str) -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/providers")
            .join(wire);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no fixtures in {}", dir.display());
        files
    }

    fn check(wire: Wire, name: &str) {
        for path in fixtures(name) {
            let body = std::fs::read(&path).unwrap();
            let whole = decode_chunks(wire.decoder(), vec![body.clone()]);
            expect_test::expect_file![path.with_extension("events")].assert_eq(&render(&whole));
            for split in 0..=body.len() {
                let (head, tail) = body.split_at(split);
                let parts = decode_chunks(wire.decoder(), vec![head.to_vec(), tail.to_vec()]);
                assert_eq!(parts, whole, "{} split at byte {split}", path.display());
            }
            let bytewise = decode_chunks(
                wire.decoder(),
                body.iter().map(|byte| vec![*byte]).collect(),
            );
            assert_eq!(bytewise, whole, "{} one byte at a time", path.display());
        }
    }

    #[test]
    fn openai_fixtures() {
        check(Wire::OpenAi, "openai");
    }

    #[test]
    fn responses_fixtures() {
        check(Wire::Responses, "responses");
    }

    #[test]
    fn anthropic_fixtures() {
        check(Wire::Anthropic, "anthropic");
    }

    #[test]
    fn gemini_fixtures() {
        check(Wire::Gemini, "gemini");
    }
}
