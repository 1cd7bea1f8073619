//! Google Vertex AI: each publisher's models in the publisher's own format, under a project and
//! a location. Gemini models (`publishers/google/models/{model}:streamGenerateContent?alt=sse`)
//! take Gemini's body and stream Gemini's SSE; Claude models
//! (`publishers/anthropic/models/{model}:streamRawPredict`) take Anthropic's body without
//! `model` and with Vertex's `anthropic_version`, and stream Anthropic's SSE. So the request is
//! `gemini.rs`'s or `anthropic.rs`'s with its URL and those fields changed, and the history is
//! made valid as for those wires (`config.wire()` names them). Requests carry a Google access
//! token (`google.rs`).

use serde_json::{json, Value};

use crate::config::ModelConfig;
use crate::model::ChatRequest;
use crate::wire::{join, Wire, WireRequest};

/// The `anthropic_version` Vertex AI takes in the body (in place of Anthropic's header).
const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The location used when neither the settings nor the environment name one.
pub(crate) const DEFAULT_LOCATION: &str = "us-central1";

/// Whether Vertex serves `model` as Anthropic's publisher does (`claude-sonnet-4-5@20250929`).
pub(crate) fn is_claude(model: &str) -> bool {
    model.starts_with("claude")
}

/// The API's host for `location`: regional, or the global endpoint.
pub(crate) fn base_url(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com".to_owned(),
        location => format!("https://{location}-aiplatform.googleapis.com"),
    }
}

/// The project and location a model is called in: its settings, else the environment as
/// Google's tools (and Claude Code, for the last of each) read it; the location defaults to
/// `DEFAULT_LOCATION`. No project is an error when the model is set up (`auth.rs`).
pub(crate) fn placement(
    project: Option<String>,
    location: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Option<String>, String) {
    let first = |setting: Option<String>, variables: &[&str]| {
        setting
            .into_iter()
            .chain(variables.iter().filter_map(|name| env(name)))
            .map(|value| value.trim().to_owned())
            .find(|value| !value.is_empty())
    };
    let project = first(
        project,
        &[
            "GOOGLE_CLOUD_PROJECT",
            "CLOUDSDK_CORE_PROJECT",
            "ANTHROPIC_VERTEX_PROJECT_ID",
        ],
    );
    let location = first(location, &["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"])
        .unwrap_or_else(|| DEFAULT_LOCATION.to_owned());
    (project, location)
}

/// The request to Vertex for `wire` (Anthropic for Claude models, else Gemini).
pub(crate) fn request(wire: Wire, config: &ModelConfig, request: &ChatRequest) -> WireRequest {
    let project = config.project.as_deref().unwrap_or_default();
    let location = config.location.as_deref().unwrap_or(DEFAULT_LOCATION);
    let models = format!("v1/projects/{project}/locations/{location}/publishers");
    let model = &config.model;
    match wire {
        Wire::Anthropic => {
            let mut anthropic = crate::anthropic::request(config, request);
            anthropic.url = join(
                &config.base_url,
                &format!("{models}/anthropic/models/{model}:streamRawPredict"),
            );
            // The version travels in the body; the beta header (interleaved thinking) stays.
            anthropic
                .headers
                .retain(|(name, _)| *name != "anthropic-version");
            if let Value::Object(body) = &mut anthropic.body {
                body.shift_remove("model");
                body.insert("anthropic_version".into(), json!(ANTHROPIC_VERSION));
            }
            anthropic
        }
        _ => {
            let mut gemini = crate::gemini::request(config, request);
            gemini.url = join(
                &config.base_url,
                &format!("{models}/google/models/{model}:streamGenerateContent?alt=sse"),
            );
            gemini
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::config::ProviderKind;
    use crate::model::Message;

    fn config(model: &str, location: &str) -> ModelConfig {
        let mut config = ModelConfig::new(ProviderKind::Vertex, model, base_url(location));
        config.project = Some("my-project".into());
        config.location = Some(location.into());
        config.reasoning = crate::config::Reasoning::default();
        config
    }

    fn chat() -> ChatRequest {
        ChatRequest {
            system: "You are Tandem.".into(),
            messages: vec![Message::user("Hi")],
            ..ChatRequest::default()
        }
    }

    #[test]
    fn claude_models_get_anthropics_body_at_the_anthropic_publisher() {
        let config = config("claude-sonnet-4-5@20250929", "europe-west1");
        let wire = config.wire().unwrap();
        assert_eq!(wire, Wire::Anthropic);
        let request = wire.request(&config, &chat());
        assert_eq!(
            request.url,
            "https://europe-west1-aiplatform.googleapis.com/v1/projects/my-project/locations/\
             europe-west1/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert_eq!(request.headers, []);
        expect![[r#"
            {
              "max_tokens": 64000,
              "stream": true,
              "system": [
                {
                  "type": "text",
                  "text": "You are Tandem."
                }
              ],
              "messages": [
                {
                  "role": "user",
                  "content": [
                    {
                      "type": "text",
                      "text": "Hi"
                    }
                  ]
                }
              ],
              "anthropic_version": "vertex-2023-10-16"
            }"#]]
        .assert_eq(&serde_json::to_string_pretty(&request.body).unwrap());
    }

    #[test]
    fn claude_4s_interleaved_thinking_beta_stays_a_header() {
        let mut config = config("claude-opus-4-1@20250805", "us-east5");
        config.reasoning.budget_tokens = Some(2048);
        let request = config.wire().unwrap().request(&config, &chat());
        assert_eq!(
            request.headers,
            [(
                "anthropic-beta",
                crate::anthropic::INTERLEAVED_THINKING.to_owned()
            )]
        );
        assert_eq!(
            request.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
    }

    #[test]
    fn gemini_models_get_geminis_body_at_the_google_publisher_and_global_its_own_host() {
        let config = config("gemini-2.5-flash", "global");
        let wire = config.wire().unwrap();
        assert_eq!(wire, Wire::Gemini);
        let request = wire.request(&config, &chat());
        assert_eq!(
            request.url,
            "https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/\
             publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        let direct = ModelConfig {
            provider: ProviderKind::Gemini,
            ..config.clone()
        };
        assert_eq!(
            request.body,
            Wire::Gemini.request(&direct, &chat()).body,
            "the body is Gemini's own"
        );
    }
}
