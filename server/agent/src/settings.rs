//! The agent's settings, read from the same merged settings files as the models
//! (`tandem_providers::settings::Loaded::raw`): turn limit, approvals, extra directories,
//! memory files and system prompt. Documented in `docs/configuration.md`.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::approval::ApprovalPolicy;
use crate::memory::{self, MemoryConfig};
use crate::prompt::PromptConfig;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSettings {
    /// Model requests per prompt.
    pub max_turns: u32,
    pub approval: ApprovalPolicy,
    /// Directories outside the workspace that tools may read and write.
    pub extra_directories: Vec<PathBuf>,
    pub memory: MemorySettings,
    pub system_prompt: PromptConfig,
    pub syntax: SyntaxSettings,
    pub context: ContextSettings,
    pub sessions: SessionSettings,
    pub shell: ShellSettings,
    /// The `apiKeyEnv` variables of every configured model (read from `models`), which shell
    /// commands do not inherit.
    #[serde(skip)]
    pub key_variables: Vec<String>,
}

/// What shell commands inherit (the `shell` settings key). See docs/agent.md.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ShellSettings {
    /// More variables to keep from commands, beyond the model keys: names or `*` patterns.
    pub hide_env: Vec<String>,
    /// Variables passed to commands although Tandem would keep them back: names or patterns.
    pub pass_env: Vec<String>,
}

/// Context management (the `context` settings key): when and how the history is compressed.
/// See `docs/context.md`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ContextSettings {
    /// Compress before a turn when the last request used more than this fraction of the
    /// model's context window. 0 < threshold ≤ 1; 1 compresses only when the window overflows.
    pub compression_threshold: f64,
    /// The most recent fraction of the history (by size) kept word for word.
    pub preserve_fraction: f64,
    /// Estimated tokens of tool output kept word for word after a compression, newest first;
    /// older outputs over `outputNoteOverBytes` become a one-line note.
    pub kept_output_tokens: u64,
    /// Tool outputs at most this long are always kept.
    pub output_note_over_bytes: usize,
    /// The model's context window, overriding the model's known or configured figure.
    pub context_window: Option<u64>,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            compression_threshold: 0.5,
            preserve_fraction: 0.3,
            kept_output_tokens: 20_000,
            output_note_over_bytes: 2_048,
            context_window: None,
        }
    }
}

/// Saved sessions (the `sessions` settings key).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SessionSettings {
    /// Append every session to a JSON Lines file under the user's state directory.
    pub persist: bool,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings { persist: true }
    }
}

/// Syntax-aware behaviour (the `syntax` settings key).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SyntaxSettings {
    /// Refuse agent edits that add syntax errors to the region they change.
    pub check_edits: bool,
    /// Estimated tokens of repo map in the first prompt's environment context; 0 leaves it out.
    pub repo_map_tokens: usize,
    /// `read_file` without a range shows the outline of a file longer than this many lines.
    pub outline_over_lines: usize,
    /// Files the symbol index covers at most (the repo map, find_symbol, references).
    pub max_indexed_files: usize,
}

impl Default for SyntaxSettings {
    fn default() -> Self {
        SyntaxSettings {
            check_edits: true,
            repo_map_tokens: 1024,
            outline_over_lines: 400,
            max_indexed_files: 20_000,
        }
    }
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            max_turns: 100,
            approval: ApprovalPolicy::default(),
            extra_directories: Vec::new(),
            memory: MemorySettings::default(),
            system_prompt: PromptConfig::default(),
            syntax: SyntaxSettings::default(),
            context: ContextSettings::default(),
            sessions: SessionSettings::default(),
            shell: ShellSettings::default(),
            key_variables: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct MemorySettings {
    /// Memory file names, in the order they are read in each directory.
    pub file_names: Option<Vec<String>>,
    /// The most memory text loaded, in bytes.
    pub max_bytes: Option<usize>,
}

impl MemorySettings {
    pub fn config(&self) -> MemoryConfig {
        let mut config = MemoryConfig::default();
        if let Some(names) = &self.file_names {
            config.file_names = names.clone();
        }
        if let Some(max_bytes) = self.max_bytes {
            config.max_bytes = max_bytes;
        }
        config
    }
}

const KEYS: &[&str] = &[
    "maxTurns",
    "approval",
    "extraDirectories",
    "memory",
    "systemPrompt",
    "syntax",
    "context",
    "sessions",
    "shell",
];

impl AgentSettings {
    /// Reads the agent's keys from the merged settings; other keys belong to other layers.
    pub fn from_raw(raw: &Value) -> Result<Self, String> {
        let mut mine = serde_json::Map::new();
        if let Value::Object(all) = raw {
            for key in KEYS {
                if let Some(value) = all.get(*key) {
                    mine.insert((*key).to_owned(), value.clone());
                }
            }
        }
        let mut settings: AgentSettings = serde_json::from_value(Value::Object(mine))
            .map_err(|error| format!("settings: {error}"))?;
        if let Some(Value::Object(models)) = raw.get("models") {
            settings.key_variables = models
                .values()
                .filter_map(|model| model.get("apiKeyEnv").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
        }
        if let Some(names) = &settings.memory.file_names {
            if let Some(bad) = names.iter().find(|name| !memory::is_plain_file_name(name)) {
                return Err(format!(
                    "settings: memory.fileNames must be plain file names such as \"AGENTS.md\", \
                     looked for in each directory; {bad:?} is a path"
                ));
            }
        }
        let context = &settings.context;
        if !(context.compression_threshold > 0.0 && context.compression_threshold <= 1.0) {
            return Err(format!(
                "settings: context.compressionThreshold must be above 0 and at most 1, not {}",
                context.compression_threshold
            ));
        }
        if !(context.preserve_fraction > 0.0 && context.preserve_fraction < 1.0) {
            return Err(format!(
                "settings: context.preserveFraction must be between 0 and 1, not {}",
                context.preserve_fraction
            ));
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approval::{ApprovalMode, Rule};

    #[test]
    fn agent_keys_are_read_and_others_left_alone() {
        let raw = json!({
            "model": "x",
            "maxTurns": 20,
            "approval": {"mode": "auto_edit", "allow": ["shell:cargo test"], "deny": ["shell:git push"]},
            "memory": {"fileNames": ["AGENTS.md"]},
            "systemPrompt": {"disabledSections": ["git"]}
        });
        let settings = AgentSettings::from_raw(&raw).unwrap();
        assert_eq!(settings.max_turns, 20);
        assert_eq!(settings.approval.mode, ApprovalMode::AutoEdit);
        assert_eq!(
            settings.approval.allow,
            vec![Rule("shell:cargo test".into())]
        );
        assert_eq!(settings.memory.config().file_names, vec!["AGENTS.md"]);
        let keys = AgentSettings::from_raw(&json!({"models": {
            "a": {"provider": "openai", "apiKeyEnv": "OPENROUTER_API_KEY"}, "b": {"provider": "gemini"}
        }}))
        .unwrap();
        assert_eq!(keys.key_variables, ["OPENROUTER_API_KEY"]);
        assert_eq!(
            AgentSettings::from_raw(&json!({})).unwrap(),
            AgentSettings::default()
        );
        let error =
            AgentSettings::from_raw(&json!({"approval": {"mode": "sometimes"}})).unwrap_err();
        assert!(error.contains("unknown variant `sometimes`"), "{error}");
    }

    /// The review's finding: `memory.fileNames` with an absolute path (or `../..`) was read as
    /// memory and sent to the model.
    #[test]
    fn memory_file_names_must_be_plain_names() {
        for bad in [
            "/home/u/secret.txt",
            "../../secret.txt",
            "sub/AGENTS.md",
            "..",
            "",
            "C:x",
            "a\\b",
        ] {
            let error =
                AgentSettings::from_raw(&json!({"memory": {"fileNames": ["AGENTS.md", bad]}}))
                    .unwrap_err();
            assert!(
                error.contains("memory.fileNames must be plain file names"),
                "{bad}: {error}"
            );
        }
        for good in ["AGENTS.md", ".agents.md", "CONVENTIONS.md"] {
            assert!(
                AgentSettings::from_raw(&json!({"memory": {"fileNames": [good]}})).is_ok(),
                "{good}"
            );
        }
    }
}
