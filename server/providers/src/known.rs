//! Limits of well-known models, used when the settings don't give them. Matched by prefix of
//! the model name, most specific first; unknown models get conservative figures.
//!
//! A context window here is the model family's maximum, which is what a hosted API serves. A
//! local server may run the model with far less: Ollama's window is its own setting, asked of
//! the server instead (`ollama.rs`).

use crate::config::Effort;

/// A model family's context window and output limit, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub context_window: u64,
    pub max_output_tokens: u32,
}

const KNOWN: &[(&str, Limits)] = &[
    ("claude-opus-4", limits(200_000, 32_000)),
    ("claude-sonnet-4", limits(200_000, 64_000)),
    ("claude-haiku-4", limits(200_000, 64_000)),
    ("claude-3-5", limits(200_000, 8_192)),
    ("claude-3-7", limits(200_000, 64_000)),
    ("claude", limits(200_000, 8_192)),
    ("gemini-2.5", limits(1_048_576, 65_536)),
    ("gemini-3", limits(1_048_576, 65_536)),
    ("gemini-2.0", limits(1_048_576, 8_192)),
    ("gemini", limits(1_048_576, 8_192)),
    ("gpt-5", limits(400_000, 128_000)),
    ("gpt-4.1", limits(1_047_576, 32_768)),
    ("gpt-4o", limits(128_000, 16_384)),
    ("o3", limits(200_000, 100_000)),
    ("o4-mini", limits(200_000, 100_000)),
    ("qwen3-coder", limits(262_144, 65_536)),
    ("qwen2.5-coder", limits(32_768, 8_192)),
];

/// The reasoning effort Tandem asks of model families that reason, when the settings say
/// nothing: OpenAI's own default effort, and the middle budget for Claude and Gemini (whose
/// APIs think only when asked, or think without showing it). Most specific first; a family
/// with no entry is sent no reasoning field.
const REASONING: &[(&str, Option<Effort>)] = &[
    ("claude-opus-4", Some(Effort::Medium)),
    ("claude-sonnet-4", Some(Effort::Medium)),
    ("claude-haiku-4", Some(Effort::Medium)),
    ("claude-3-7", Some(Effort::Medium)),
    ("gemini-2.5", Some(Effort::Medium)),
    ("gemini-3", Some(Effort::Medium)),
    // The chat models of the GPT-5 family do not reason.
    ("gpt-5-chat", None),
    ("gpt-5", Some(Effort::Medium)),
    ("o1", Some(Effort::Medium)),
    ("o3", Some(Effort::Medium)),
    ("o4-mini", Some(Effort::Medium)),
];

/// The reasoning effort Tandem asks of `model` by default; `None` for a model not known to
/// reason.
pub fn reasoning(model: &str) -> Option<Effort> {
    let name = family_name(model);
    REASONING
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .and_then(|(_, effort)| *effort)
}

/// Families that take images, by name prefix: the hosted ones Tandem knows, and the local
/// vision models Ollama serves under these names.
const SEES_IMAGES: &[&str] = &[
    "claude-3",
    "claude-opus-4",
    "claude-sonnet-4",
    "claude-haiku-4",
    "gemini",
    "gpt-4o",
    "gpt-4.1",
    "gpt-5",
    "o1",
    "o3",
    "o4-mini",
    "llava",
    "llama3.2-vision",
    "llama4",
    "qwen2.5vl",
    "qwen2.5-vl",
    "qwen3-vl",
    "gemma3",
    "minicpm-v",
    "mistral-small3",
];

/// Whether `model` is known to take images (the `images` setting says so for others).
pub fn sees_images(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    // Bedrock's ids put the vendor before a dot (`anthropic.claude-…`, `us.anthropic.claude-…`).
    let name = name
        .rsplit_once("anthropic.")
        .map_or(name, |(_, rest)| rest);
    // The small o1 and the GPT-5 chat model's text-only sibling take none.
    if name.starts_with("o1-mini") || name.starts_with("gpt-4o-audio") {
        return false;
    }
    SEES_IMAGES.iter().any(|prefix| name.starts_with(prefix))
}

/// What is assumed of a model nobody told us about (small local models are common).
pub const UNKNOWN: Limits = limits(32_768, 8_192);

const fn limits(context_window: u64, max_output_tokens: u32) -> Limits {
    Limits {
        context_window,
        max_output_tokens,
    }
}

/// The limits for `model`; a name with a vendor prefix (`anthropic/claude-…`) or an Ollama tag
/// (`qwen3-coder:30b`) still matches.
pub fn lookup(model: &str) -> Limits {
    find(model).unwrap_or(UNKNOWN)
}

/// Whether `model` is in the table (else `lookup` gives `UNKNOWN`).
pub fn is_known(model: &str) -> bool {
    find(model).is_some()
}

/// The part of `model` that names its family: without a vendor prefix (`anthropic/…`), and
/// without Bedrock's vendor and region (`us.anthropic.claude-…-v1:0`, an ARN's last part).
fn family_name(model: &str) -> &str {
    let name = model.rsplit('/').next().unwrap_or(model);
    name.rsplit_once("anthropic.")
        .map_or(name, |(_, rest)| rest)
}

fn find(model: &str) -> Option<Limits> {
    let name = family_name(model);
    KNOWN
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, limits)| *limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_vendors_and_tags_match() {
        assert_eq!(lookup("claude-sonnet-4-5").context_window, 200_000);
        assert_eq!(
            lookup("anthropic/claude-sonnet-4-5").max_output_tokens,
            64_000
        );
        assert_eq!(lookup("qwen3-coder:30b").context_window, 262_144);
        // Bedrock's model ids and inference profiles, Vertex's versioned names.
        assert_eq!(
            lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0").max_output_tokens,
            64_000
        );
        assert_eq!(
            lookup("anthropic.claude-3-5-haiku-20241022-v1:0").max_output_tokens,
            8_192
        );
        assert_eq!(lookup("claude-opus-4-1@20250805").max_output_tokens, 32_000);
        assert_eq!(
            reasoning("global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(Effort::Medium)
        );
        assert_eq!(lookup("gemini-2.5-pro").context_window, 1_048_576);
        assert_eq!(lookup("my-finetune"), UNKNOWN);
        assert!(is_known("qwen3-coder:30b") && !is_known("my-finetune"));
    }

    #[test]
    fn vision_families_take_images_and_others_do_not() {
        assert!(sees_images("claude-sonnet-4-5"));
        assert!(sees_images("us.anthropic.claude-sonnet-4-5-20250929-v1:0"));
        assert!(sees_images("gpt-5-mini") && sees_images("openai/gpt-4.1"));
        assert!(sees_images("qwen2.5vl:7b") && sees_images("gemini-2.5-flash"));
        assert!(!sees_images("qwen3-coder:30b") && !sees_images("o1-mini"));
        assert!(!sees_images("my-finetune"));
    }

    #[test]
    fn reasoning_families_get_a_default_effort_and_others_none() {
        assert_eq!(reasoning("gpt-5-codex"), Some(Effort::Medium));
        assert_eq!(reasoning("openai/o3"), Some(Effort::Medium));
        assert_eq!(reasoning("gpt-5-chat-latest"), None);
        assert_eq!(reasoning("claude-sonnet-4-5"), Some(Effort::Medium));
        assert_eq!(reasoning("claude-3-5-haiku"), None);
        assert_eq!(reasoning("gpt-4.1"), None);
        assert_eq!(reasoning("qwen3-coder:30b"), None);
    }
}
