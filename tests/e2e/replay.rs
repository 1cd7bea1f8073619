//! The replay provider end to end: a session recorded from a real HTTP provider (the scripted
//! model server) plays back through `replay` with the same result, retries included, and the
//! recording holds no key.

use std::time::Duration;

use futures::StreamExt;
use tandem_providers::{
    ApiKey, CancellationToken, ChatRequest, Message, Model, ModelConfig, ProviderKind, Response,
    RetryPolicy, StreamEvent,
};
use tandem_test_support::{ModelServer, Reply};

const KEY: &str = "sk-recorded-session-5ecret";

fn fixture(api: &str, case: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/providers/{api}/{case}.sse",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn fast_retries(config: &mut ModelConfig) {
    config.retry = RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(10),
    };
}

/// Every attempt's events, and the assembled response (or error) of each request.
async fn session(model: &Model, requests: usize) -> Vec<(Vec<String>, Result<Response, String>)> {
    let mut results = Vec::new();
    for turn in 0..requests {
        let request = ChatRequest {
            messages: vec![Message::user(format!("turn {turn}"))],
            ..ChatRequest::default()
        };
        let events: Vec<_> = model
            .stream(request, CancellationToken::new())
            .collect()
            .await;
        // A retry's delay is drawn at random; compare what was retried, not how long it waited.
        let kinds = events
            .iter()
            .map(|event| match event {
                Ok(StreamEvent::Retrying { error, .. }) => format!("retrying: {error}"),
                Ok(event) => serde_json::to_string(event).unwrap(),
                Err(error) => format!("error: {error}"),
            })
            .collect();
        let mut response = Response::default();
        let mut outcome = Ok(());
        for event in &events {
            match event {
                Ok(event) => response.push(event),
                Err(error) => outcome = Err(error.to_string()),
            }
        }
        results.push((kinds, outcome.map(|()| response)));
    }
    results
}

#[tokio::test]
async fn a_recorded_session_replays_identically() {
    for (api, provider, base_path) in [
        ("openai", ProviderKind::OpenAi, "/v1"),
        ("anthropic", ProviderKind::Anthropic, ""),
        ("gemini", ProviderKind::Gemini, "/v1beta"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let recording = dir.path().join("session.jsonl");
        let server = ModelServer::start().await;
        server.push(Reply::sse(fixture(api, "tool_call")));
        server.push(Reply::json(500, r#"{"error": {"message": "try again"}}"#));
        server.push(Reply::sse(fixture(api, "thoughts")));
        server.push(Reply::sse(fixture(api, "text")));
        server.push(Reply::json(401, r#"{"error": {"message": "key revoked"}}"#));

        let mut live = ModelConfig::new(
            provider,
            "test-model",
            format!("{}{base_path}", server.url()),
        );
        live.api_key = Some(ApiKey::new(KEY));
        live.record = Some(recording.clone());
        fast_retries(&mut live);
        let recorded = session(&Model::new(live).unwrap(), 4).await;
        assert_eq!(server.request_count(), 5);
        assert!(
            recorded[3].1.is_err(),
            "{api}: the last turn failed: {recorded:?}"
        );

        let script = std::fs::read_to_string(&recording).unwrap();
        assert_eq!(script.lines().count(), 5, "one line per attempt:\n{script}");
        assert!(!script.contains(KEY), "{api}: the recording holds the key");

        let mut replay = ModelConfig::new(ProviderKind::Replay, "replay", "");
        replay.script = Some(recording.clone());
        fast_retries(&mut replay);
        let replayed = session(&Model::new(replay).unwrap(), 4).await;
        assert_eq!(replayed, recorded, "{api}");
    }
}

#[tokio::test]
async fn a_replay_script_that_runs_out_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("short.jsonl");
    std::fs::write(&script, "{\"text\": \"only answer\"}\n").unwrap();
    let mut config = ModelConfig::new(ProviderKind::Replay, "replay", "");
    config.script = Some(script);
    let model = Model::new(config).unwrap();
    let first = model
        .complete(ChatRequest::default(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(first.message.text(), "only answer");
    let error = model
        .complete(ChatRequest::default(), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "config");
    assert!(
        error
            .to_string()
            .contains("has no more responses (it had 1)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_hosted_provider_without_a_key_is_refused_with_the_variable_to_set() {
    let mut config = ModelConfig::new(
        ProviderKind::Anthropic,
        "claude-sonnet-4-5",
        "https://api.anthropic.com",
    );
    config.api_key_env = Some("ANTHROPIC_API_KEY".into());
    let error = Model::new(config).unwrap_err().to_string();
    assert!(error.contains("set ANTHROPIC_API_KEY"), "{error}");
}
