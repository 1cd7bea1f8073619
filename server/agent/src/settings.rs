//! The agent's settings, read from the same merged settings files as the models
//! (`tandem_providers::settings::Loaded::raw`): turn limit, approvals, extra directories,
//! memory files, system prompt, and how a front end with an editor places edits. Documented in
//! `docs/configuration.md`.
//!
//! Between them, `AgentSettings` and `tandem_providers::settings::Settings` read every key a
//! settings file may hold, so every key is checked here, in each file on its own (`check`),
//! and a mistake is reported with the file it is in, the key's place, and the likely meaning.

use std::path::PathBuf;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tandem_providers::settings::{parse_section, Loaded, Settings, MODEL_KEYS, SCHEMA_KEY};

use crate::approval::ApprovalPolicy;
use crate::memory;
use crate::prompt::PromptConfig;

// Each section's type lives with what it configures; named here too, where the settings are
// assembled, read and checked.
pub use crate::compress::ContextSettings;
pub use crate::confine::SandboxSettings;
pub use crate::diagnostics::{DiagnosticsSettings, LanguageServerSettings};
pub use crate::editor::{ClosedFiles, EditSettings, NewFiles};
pub use crate::memory::MemorySettings;
pub use crate::store::SessionSettings;
pub use crate::subagent::SubagentSettings;
pub use crate::tools::shell::environment::ShellSettings;
pub use crate::tools::SyntaxSettings;

/// The agent's settings: every key of a settings file that is not the models' (`MODEL_KEYS`).
/// The doc comments of the settings types are the descriptions in the settings' JSON Schema
/// (`settings_schema`), so they speak to the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AgentSettings {
    /// Model requests per prompt before the turn stops.
    pub max_turns: u32,
    /// Which tool calls run without asking: `mode`, and `allow` and `deny` rules.
    pub approval: ApprovalPolicy,
    /// Directories outside the workspace that tools may read and write.
    pub extra_directories: Vec<PathBuf>,
    /// Which memory files (`AGENTS.md`…) are read, and how much of them.
    pub memory: MemorySettings,
    /// Which sections of the built-in system prompt to use, or a file that replaces them.
    pub system_prompt: PromptConfig,
    /// How code is outlined, indexed and checked before an edit.
    pub syntax: SyntaxSettings,
    /// When and how the conversation is compressed to fit the model's context window.
    pub context: ContextSettings,
    /// Whether sessions are saved, to be resumed later.
    pub sessions: SessionSettings,
    /// What shell commands inherit from Tandem's environment.
    pub shell: ShellSettings,
    /// Where the agent's changes to files the editor does not have open go (`tandem lsp`).
    pub edits: EditSettings,
    /// Whether an inline chat's edit is proposed or applied (`tandem lsp`).
    pub inline_chat: InlineChatSettings,
    /// Whether an edit's result tells the model the errors it added, from the editor's
    /// diagnostics or from language servers Tandem starts, and how long it waits for them.
    pub diagnostics: DiagnosticsSettings,
    /// MCP servers whose tools, prompts and resources the agent may use, by name. A
    /// workspace's settings file may declare them only once the folder is trusted.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::McpServerSettings>,
    /// Whose own configuration files to read MCP servers from as well: `claude` (Claude Code's
    /// `~/.claude.json` and a project's `.mcp.json`), `gemini` (`~/.gemini/settings.json` and a
    /// project's `.gemini/settings.json`). A project's files are read only in a trusted
    /// workspace; `mcpServers` wins over a server of the same name. `[]` reads none. Default:
    /// both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import_mcp_servers: Option<Vec<crate::mcp::imported::ImportFrom>>,
    /// Whether the agent goes on by itself when its answer ends by announcing what it does
    /// next ("Now I'll run the tests."): `off`, `heuristic` (when the last sentence plainly
    /// says so) or `model` (also when it may say so, decided by a short model request).
    pub next_speaker_check: crate::next_speaker::NextSpeakerCheck,
    /// The `apiKeyEnv` variables of every configured model (read from `models`), which shell
    /// commands do not inherit.
    #[serde(skip)]
    pub key_variables: Vec<String>,
    /// Whether the user trusts the workspace (`trustedFolders`; `true` without a workspace):
    /// what a cloned repository brings beyond settings (skills, agents) acts only then.
    #[serde(skip)]
    pub workspace_trusted: bool,
    /// Commands run at points of a session's life, in Claude Code's shape: per event
    /// (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `SessionStart`, `Stop`, `PreCompact`,
    /// `Notification`, `SessionEnd`, or Gemini CLI's names), groups of `{"matcher", "hooks":
    /// [{"type": "command", "command", "timeout"}]}`. A workspace's settings file may set them
    /// only once the folder is trusted. See docs/hooks.md.
    #[serde(skip_serializing_if = "crate::hooks::HooksSettings::is_empty")]
    pub hooks: crate::hooks::HooksSettings,
    /// Limits of the child sessions the `subagent` tool runs (see docs/subagents.md).
    pub subagents: SubagentSettings,
    /// What web_fetch may reach besides public addresses, and its caps.
    pub web_fetch: crate::tools::web_fetch::WebFetchSettings,
    /// Inline completions as you type: the model, how it is asked, per-language switches,
    /// debounce and limits (see docs/completions.md).
    pub completion: crate::completion::CompletionSettings,
    /// The OS sandbox shell commands, hooks and MCP servers run in: `mode` (`auto`,
    /// `required`, `off`), `network`, `networkCommands`, `writableDirectories`, `hiddenPaths`
    /// and `autoAllow`. Read from the user settings file only. See docs/agent.md.
    pub sandbox: SandboxSettings,
    /// The models' settings (read by the providers), for the custom agents that name a model.
    #[serde(skip)]
    pub model_settings: tandem_providers::settings::Settings,
}

/// Inline chat (the `inlineChat` settings key).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct InlineChatSettings {
    /// What an inline chat does with the agent's change.
    pub apply: InlineApply,
}

/// What an inline edit does with the agent's change (`inlineChat.apply`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InlineApply {
    /// Shown for the user to accept or discard.
    #[default]
    Propose,
    /// Applied at once, like any other agent edit.
    Apply,
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
            edits: EditSettings::default(),
            inline_chat: InlineChatSettings::default(),
            diagnostics: DiagnosticsSettings::default(),
            mcp_servers: std::collections::BTreeMap::new(),
            import_mcp_servers: None,
            next_speaker_check: crate::next_speaker::NextSpeakerCheck::default(),
            key_variables: Vec::new(),
            workspace_trusted: true,
            hooks: crate::hooks::HooksSettings::default(),
            subagents: SubagentSettings::default(),
            sandbox: SandboxSettings::default(),
            model_settings: tandem_providers::settings::Settings::default(),
            web_fetch: crate::tools::web_fetch::WebFetchSettings::default(),
            completion: crate::completion::CompletionSettings::default(),
        }
    }
}

impl AgentSettings {
    /// Checks every settings source on its own, naming the one a mistake is in, then reads the
    /// agent's keys from the merged settings.
    pub fn from_loaded(loaded: &Loaded) -> Result<Self, String> {
        for layer in &loaded.layers {
            check(&layer.value).map_err(|error| format!("{}: {error}", layer.origin))?;
        }
        let mut settings =
            Self::from_raw(&loaded.raw).map_err(|error| format!("settings: {error}"))?;
        settings.workspace_trusted = loaded.trusted;
        settings.diagnostics.workspace_binaries = loaded.trusted;
        settings.model_settings = loaded.settings.clone();
        Ok(settings)
    }

    /// Reads the agent's keys from merged settings; the model keys are the providers' to read.
    /// Any other key is an error.
    pub fn from_raw(raw: &Value) -> Result<Self, String> {
        let mine: Map<String, Value> = match raw {
            Value::Object(all) => all
                .iter()
                .filter(|(key, _)| {
                    key.as_str() != SCHEMA_KEY && !MODEL_KEYS.contains(&key.as_str())
                })
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
            _ => Map::new(),
        };
        let mut settings: AgentSettings = parse_section(Value::Object(mine), MODEL_KEYS)?;
        if let Some(Value::Object(models)) = raw.get("models") {
            settings.key_variables = models
                .values()
                .filter_map(|model| model.get("apiKeyEnv").and_then(Value::as_str))
                .map(str::to_owned)
                .collect();
        }
        settings.validate()?;
        Ok(settings)
    }

    /// What the types cannot say.
    fn validate(&self) -> Result<(), String> {
        if let Some(names) = &self.memory.file_names {
            if let Some(bad) = names.iter().find(|name| !memory::is_plain_file_name(name)) {
                return Err(format!(
                    "`memory.fileNames` must be plain file names such as \"AGENTS.md\", \
                     looked for in each directory; {bad:?} is a path"
                ));
            }
        }
        let context = &self.context;
        if !(context.compression_threshold > 0.0 && context.compression_threshold <= 1.0) {
            return Err(format!(
                "`context.compressionThreshold` must be above 0 and at most 1, not {}",
                context.compression_threshold
            ));
        }
        if !(context.preserve_fraction > 0.0 && context.preserve_fraction < 1.0) {
            return Err(format!(
                "`context.preserveFraction` must be between 0 and 1, not {}",
                context.preserve_fraction
            ));
        }
        self.hooks.validate()?;
        let diagnostics = &self.diagnostics;
        if !(1..=60_000).contains(&diagnostics.settle_ms) {
            return Err(format!(
                "`diagnostics.settleMs` must be from 1 to 60000, not {}",
                diagnostics.settle_ms
            ));
        }
        if let Some(server) = diagnostics.servers.iter().find(|server| {
            server
                .command
                .first()
                .is_none_or(|program| program.is_empty())
                || server.extensions.is_empty()
        }) {
            return Err(format!(
                "each of `diagnostics.servers` needs a `command` (the program, then its \
                 arguments) and the `extensions` it checks; {server:?} lacks one"
            ));
        }
        if self.web_fetch.max_bytes == 0 || self.web_fetch.timeout_secs == 0 {
            return Err(
                "`webFetch.maxBytes` and `webFetch.timeoutSecs` must be above 0".to_owned(),
            );
        }
        Ok(())
    }
}

/// Checks one settings source (a file, or what an editor sent): every key is one Tandem
/// reads, and every value fits its key. The model keys were checked when the file was read.
pub fn check(layer: &Value) -> Result<(), String> {
    AgentSettings::from_raw(layer).map(drop)
}

/// The JSON Schema of a whole settings file (the user's or a workspace's), from the settings
/// types: the models' keys (`Settings`), the agent's (`AgentSettings`) and `$schema`, and no
/// other. Editors use it to check and complete settings files; `tandem settings-schema` prints
/// it and `docs/settings.schema.json` is a copy of it.
pub fn settings_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        // An unset optional setting's default is decided at run time (the provider's model, the
        // model family's window), so a `null` default would mislead: leave it out.
        .with_transform(RecursiveTransform(|schema: &mut Schema| {
            if schema.get("default").is_some_and(Value::is_null) {
                schema.remove("default");
            }
            // Descriptions come from doc comments wrapped at 100 columns; editors show a line
            // break where the comment had one, so keep only paragraph breaks.
            if let Some(Value::String(text)) = schema.get("description") {
                let joined = text
                    .split("\n\n")
                    .map(|paragraph| paragraph.replace('\n', " "))
                    .collect::<Vec<_>>()
                    .join("\n\n");
                schema.insert("description".to_owned(), joined.into());
            }
        }))
        .into_generator();
    let mut properties = Map::new();
    properties.insert(
        SCHEMA_KEY.to_owned(),
        json!({
            "description": "The JSON Schema of this file, for editors; Tandem ignores it.",
            "type": "string"
        }),
    );
    for layer in [
        generator.root_schema_for::<Settings>(),
        generator.root_schema_for::<AgentSettings>(),
    ] {
        if let Some(Value::Object(keys)) = layer.get("properties") {
            properties.extend(keys.clone());
        }
    }
    json!({
        "$schema": generator.settings().meta_schema.as_deref(),
        "title": "Tandem settings",
        "description": "Tandem's settings.json: the user's (<config dir>/tandem/settings.json) \
                        or a workspace's (.tandem/settings.json). See docs/configuration.md.",
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        // Settings files are JSON with comments (`parse_jsonc`); VS Code's JSON language
        // service reads these two keywords to accept them in a file this schema validates.
        "allowComments": true,
        "allowTrailingCommas": true,
        "$defs": generator.take_definitions(true),
    })
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
        assert!(error.contains("unknown value \"sometimes\""), "{error}");
    }

    /// The newcomer's review: top-level typos were ignored without a word, and nested ones
    /// failed only `tandem ask`, without the file. Every key is checked, in every section.
    #[test]
    fn misspelled_settings_are_errors_that_say_what_was_meant() {
        let cases = [
            (json!({"aproval": {"mode": "yolo"}}), "unknown setting `aproval`; did you mean `approval`?"),
            (json!({"maxTurn": 5}), "unknown setting `maxTurn`; did you mean `maxTurns`?"),
            (json!({"modle": "x"}), "unknown setting `modle`; did you mean `model`?"),
            (json!({"approval": {"allows": ["shell:ls"]}}), "unknown setting `approval.allows`; did you mean `allow`?"),
            (json!({"approval": {"mode": "autoEdit"}}), "`approval.mode`: unknown value \"autoEdit\"; did you mean `auto_edit`?"),
            (json!({"sessions": {"persit": false}}), "unknown setting `sessions.persit`; did you mean `persist`?"),
            (json!({"edits": {"closedFiles": "buffer"}}), "`edits.closedFiles`: unknown value \"buffer\"; expected one of: disk, editor"),
            (json!({"edits": "disk"}), "`edits`: invalid type: string \"disk\", expected struct EditSettings"),
            (json!({"inlineChat": {"apply": "propse"}}), "`inlineChat.apply`: unknown value \"propse\"; did you mean `propose`?"),
            (json!({"context": {"compressionThreshold": 2.0}}), "`context.compressionThreshold` must be above 0 and at most 1, not 2"),
            (json!({"webFetch": {"allowAddresses": ["localhost"]}}), "`webFetch.allowAddresses[0]`: \"localhost\" is not an address or a range: write an IP address (\"127.0.0.1\", \"::1\") or a CIDR range (\"10.0.0.0/8\", \"fd00::/8\")"),
            (json!({"webFetch": {"maxBytes": 0}}), "`webFetch.maxBytes` and `webFetch.timeoutSecs` must be above 0"),
            (json!({"xyzzy": 1}), "unknown setting `xyzzy`; expected one of: maxTurns, approval, extraDirectories, memory, systemPrompt, syntax, context, sessions, shell, edits, inlineChat, diagnostics, mcpServers, importMcpServers, nextSpeakerCheck, hooks, subagents, webFetch, completion, sandbox, model, models, network, record, trustedFolders"),
        ];
        for (raw, expected) in cases {
            assert_eq!(check(&raw).unwrap_err(), expected, "{raw}");
        }
        let editor = AgentSettings::from_raw(&json!({
            "edits": {"closedFiles": "editor", "newFiles": "disk", "saveBeforeCommands": false},
            "inlineChat": {"apply": "apply"}
        }))
        .unwrap();
        assert_eq!(
            (editor.edits, editor.inline_chat.apply),
            (
                EditSettings {
                    closed_files: ClosedFiles::Editor,
                    new_files: NewFiles::Disk,
                    save_before_commands: false,
                },
                InlineApply::Apply
            )
        );
        check(&json!({"model": "a", "models": {"a": {"provider": "gemini"}}, "maxTurns": 3}))
            .unwrap();
    }

    /// A mistake is reported with the file it is in, whichever file that is.
    #[test]
    fn errors_name_the_settings_file() {
        let temp = tempfile::tempdir().unwrap();
        let user = temp.path().join("settings.json");
        let root = temp.path().join("project");
        std::fs::create_dir_all(root.join(".tandem")).unwrap();
        std::fs::write(&user, r#"{"maxTurns": 5}"#).unwrap();
        let workspace_file = root.join(".tandem/settings.json");
        std::fs::write(&workspace_file, r#"{"syntax": {"checkEdit": false}}"#).unwrap();
        let loaded = Loaded::load(Some(&user), Some(&root)).unwrap();
        assert_eq!(
            AgentSettings::from_loaded(&loaded).unwrap_err(),
            format!(
                "{}: unknown setting `syntax.checkEdit`; did you mean `checkEdits`?",
                workspace_file.display()
            )
        );
        std::fs::write(&workspace_file, "{}").unwrap();
        std::fs::write(&user, r#"{"sessions": {"persit": false}}"#).unwrap();
        let loaded = Loaded::load(Some(&user), Some(&root)).unwrap();
        let error = AgentSettings::from_loaded(&loaded).unwrap_err();
        assert!(
            error.starts_with(&format!(
                "{}: unknown setting `sessions.persit`",
                user.display()
            )),
            "{error}"
        );

        std::fs::write(&user, "{}").unwrap();
        let mut loaded = Loaded::load(Some(&user), Some(&root)).unwrap();
        loaded.overlay(json!({"maxTurnz": 3})).unwrap();
        assert_eq!(
            AgentSettings::from_loaded(&loaded).unwrap_err(),
            "editor settings: unknown setting `maxTurnz`; did you mean `maxTurns`?"
        );
    }

    /// The newcomer's review found the README's settings at odds with the program: every
    /// settings example in the README and in docs/configuration.md must be one Tandem accepts.
    #[test]
    fn settings_examples_in_the_docs_are_valid_settings() {
        let docs = [
            ("README.md", include_str!("../../../README.md")),
            (
                "docs/configuration.md",
                include_str!("../../../docs/configuration.md"),
            ),
            ("docs/agent.md", include_str!("../../../docs/agent.md")),
            ("docs/context.md", include_str!("../../../docs/context.md")),
            ("docs/replay.md", include_str!("../../../docs/replay.md")),
            ("docs/skills.md", include_str!("../../../docs/skills.md")),
        ];
        let schema = jsonschema::validator_for(&settings_schema()).unwrap();
        let mut checked = 0;
        for (name, text) in docs {
            for block in text.split("```json\n").skip(1) {
                let block = block.split("```").next().unwrap_or_default();
                let value: Value = serde_json::from_str(block)
                    .unwrap_or_else(|error| panic!("{name}: not JSON ({error}):\n{block}"));
                // Protocol messages and editor configuration are examples of something else.
                let is_settings = value.as_object().is_some_and(|object| {
                    !object.contains_key("initializationOptions")
                        && !object.contains_key("items")
                        && !object.contains_key("jsonrpc")
                        && !object.contains_key("type")
                });
                if is_settings {
                    check(&value).unwrap_or_else(|error| panic!("{name}: {error}:\n{block}"));
                    let problems: Vec<String> =
                        schema.iter_errors(&value).map(|e| e.to_string()).collect();
                    assert!(problems.is_empty(), "{name}: {problems:?}:\n{block}");
                    checked += 1;
                }
            }
        }
        assert!(checked >= 5, "only {checked} examples found");
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
                error.contains("`memory.fileNames` must be plain file names"),
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

    /// A settings file may name its schema (`"$schema"`) for the editor: every check accepts
    /// the key and nothing reads it, in the user's file, an untrusted workspace's, and the
    /// editor's settings.
    #[test]
    fn a_schema_key_is_accepted_in_settings_files() {
        let temp = tempfile::tempdir().unwrap();
        let user = temp.path().join("settings.json");
        let root = temp.path().join("project");
        std::fs::create_dir_all(root.join(".tandem")).unwrap();
        let schema = r#""$schema": "../docs/settings.schema.json""#;
        std::fs::write(&user, format!(r#"{{{schema}, "maxTurns": 5}}"#)).unwrap();
        std::fs::write(
            root.join(".tandem/settings.json"),
            format!(r#"{{{schema}, "syntax": {{"checkEdits": false}}}}"#),
        )
        .unwrap();
        let mut loaded = Loaded::load(Some(&user), Some(&root)).unwrap();
        loaded.overlay(json!({"$schema": "x"})).unwrap();
        loaded
            .overlay_from_project(json!({"$schema": "x"}), "section")
            .unwrap();
        assert_eq!(loaded.warnings, Vec::<String>::new());
        let settings = AgentSettings::from_loaded(&loaded).unwrap();
        assert_eq!(
            (settings.max_turns, settings.syntax.check_edits),
            (5, false)
        );
        check(&json!({"$schema": "x"})).unwrap();
    }

    /// `docs/settings.schema.json` is what `settings_schema` gives (and `tandem settings-schema`
    /// prints). `UPDATE_EXPECT=1 cargo test -p tandem-agent settings_schema` rewrites it.
    #[test]
    fn settings_schema_file_is_up_to_date() {
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&settings_schema()).unwrap()
        );
        expect_test::expect_file!["../../../docs/settings.schema.json"].assert_eq(&text);
    }

    /// The schema accepts docs/configuration.md's complete example, and rejects what Tandem
    /// rejects: a misspelt key, a value that is not one of a setting's choices.
    #[test]
    fn settings_schema_accepts_the_docs_example_and_rejects_mistakes() {
        let schema = settings_schema();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["title"], "Tandem settings");
        let validator = jsonschema::validator_for(&schema).unwrap();
        let example = json!({
          "model": "claude",
          "models": {
            "claude": { "provider": "anthropic", "model": "claude-sonnet-4-5" },
            "flash": { "provider": "gemini", "model": "gemini-2.5-flash" },
            "local": {
              "provider": "openai",
              "model": "qwen3-coder:30b",
              "baseUrl": "http://localhost:11434/v1",
              "contextWindow": 65536
            },
            "router": {
              "provider": "openai",
              "model": "anthropic/claude-sonnet-4.5",
              "baseUrl": "https://openrouter.ai/api/v1",
              "apiKeyEnv": "OPENROUTER_API_KEY",
              "headers": { "X-Title": "Tandem" }
            }
          },
          "network": { "maxRetries": 5, "idleTimeoutSecs": 300 },
          "trustedFolders": ["~/src"]
        });
        check(&example).unwrap();
        let problems: Vec<String> = validator
            .iter_errors(&example)
            .map(|e| e.to_string())
            .collect();
        assert!(problems.is_empty(), "{problems:?}");
        for mistake in [
            json!({"aproval": {"mode": "yolo"}}),
            json!({"approval": {"mode": "autoEdit"}}),
        ] {
            assert!(check(&mistake).is_err(), "{mistake}");
            assert!(!validator.is_valid(&mistake), "{mistake}");
        }
    }

    /// The schema accepts exactly what the settings reader accepts, value by value: each of
    /// these is accepted by both or refused by both.
    #[test]
    fn settings_schema_agrees_with_the_settings_reader() {
        let validator = jsonschema::validator_for(&settings_schema()).unwrap();
        let every_key = json!({
            "$schema": "https://example.com/settings.schema.json",
            "model": "local",
            "models": {"local": {
                "provider": "openai-compatible", "model": "m", "baseUrl": "http://x/v1",
                "apiKeyEnv": "K", "headers": {"a": "b"}, "contextWindow": 1,
                "maxOutputTokens": 2, "script": "s.jsonl"
            }},
            "network": {
                "maxRetries": 0, "retryInitialDelayMs": 1, "retryMaxDelayMs": 2,
                "idleTimeoutSecs": 0.5, "connectTimeoutSecs": 3, "maxResponseBytes": 4,
                "maxResponseSecs": 5
            },
            "record": "r.jsonl",
            "trustedFolders": ["~/src"],
            "maxTurns": 3,
            "approval": {"mode": "auto_edit", "allow": ["edit"], "deny": ["shell:git push"]},
            "extraDirectories": ["/tmp"],
            "memory": {"fileNames": ["AGENTS.md", ".agents.md"], "maxBytes": 10},
            "systemPrompt": {"disabledSections": ["git", "final_reminder"], "replaceWith": "p.md"},
            "syntax": {"checkEdits": false, "repoMapTokens": 0, "outlineOverLines": 1, "maxIndexedFiles": 2},
            "context": {"compressionThreshold": 1, "preserveFraction": 0.5, "keptOutputTokens": 0,
                        "outputNoteOverBytes": 0, "contextWindow": 9},
            "sessions": {"persist": false},
            "shell": {"hideEnv": ["AWS_*"], "passEnv": ["GITHUB_TOKEN"]},
            "edits": {"closedFiles": "editor", "newFiles": "disk"},
            "inlineChat": {"apply": "apply"},
            "hooks": {
                "PreToolUse": [{"matcher": "edit|write_file", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}],
                "AfterAgent": [{"hooks": [{"type": "command", "command": "y"}]}]
            },
            "webFetch": {"allowAddresses": ["127.0.0.1", "10.0.0.0/8", "fd00::/8"], "maxBytes": 1, "timeoutSecs": 1},
            "subagents": {"maxTurns": 1, "timeoutSecs": 1},
            "completion": {"enabled": false, "model": "small", "api": "ollama", "languages": {"markdown": false},
                           "debounceMs": 0, "maxTokens": 64, "stop": ["\n\n"], "completionItems": false},
            "nextSpeakerCheck": "model"
        });
        let cases = [
            (every_key, true),
            (json!({}), true),
            (json!({"$schema": "x"}), true),
            (
                json!({"model": null, "record": null, "memory": {"fileNames": null}}),
                true,
            ),
            (json!({"models": {"a": {}}}), true),
            (
                json!({"models": {"a": {"provider": "replay"}, "b": {"provider": "gemini"}}}),
                true,
            ),
            (json!({"models": {"a": {"provider": "mistral"}}}), false),
            (json!({"models": {"a": {"baseURL": "x"}}}), false),
            (json!({"network": {"maxRetries": -1}}), false),
            (json!({"network": {"maxRetries": "two"}}), false),
            (json!({"maxTurns": 2.5}), false),
            (json!({"approval": {"mode": "sometimes"}}), false),
            (json!({"approval": {"allows": []}}), false),
            (json!({"approval": {"allow": "edit"}}), false),
            (
                json!({"systemPrompt": {"disabledSections": ["intro"]}}),
                false,
            ),
            (json!({"edits": "disk"}), false),
            (json!({"edits": {"closedFiles": "buffer"}}), false),
            (json!({"inlineChat": {"apply": "propse"}}), false),
            (json!({"sessions": {"persist": "yes"}}), false),
            (json!({"context": {"compressionThreshold": 2.0}}), false),
            (json!({"context": {"compressionThreshold": 0}}), false),
            (json!({"context": {"preserveFraction": 1}}), false),
            (
                json!({"memory": {"fileNames": ["/home/u/secret.txt"]}}),
                false,
            ),
            (json!({"memory": {"fileNames": ["a\\b"]}}), false),
            (json!({"memory": {"fileNames": ["C:x"]}}), false),
            (json!({"memory": {"fileNames": [".."]}}), false),
            (json!({"memory": {"fileNames": ["  "]}}), false),
            (json!({"memory": {"fileNames": ["a\u{0}b"]}}), false),
            (json!({"keyVariables": ["X"]}), false),
            (json!({"hooks": {"BeforeModel": []}}), false),
            (
                json!({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}),
                false,
            ),
            (
                json!({"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}),
                false,
            ),
            (
                json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
                false,
            ),
            (
                json!({"webFetch": {"allowAddresses": ["localhost"]}}),
                false,
            ),
            (json!({"webFetch": {"maxBytes": 0}}), false),
            (json!({"webFetch": {"timeoutSecs": 0}}), false),
            (json!({"xyzzy": 1}), false),
        ];
        for (value, valid) in cases {
            // What the editor's settings go through: the models' reader, then the agent's.
            let mut loaded = Loaded::default();
            let read = loaded
                .overlay(value.clone())
                .map_err(|error| error.to_string())
                .and_then(|()| AgentSettings::from_loaded(&loaded));
            assert_eq!(read.is_ok(), valid, "the reader on {value}: {read:?}");
            let problems: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert_eq!(
                problems.is_empty(),
                valid,
                "the schema on {value}: {problems:?}"
            );
        }
    }

    /// The agent's and the models' keys, `$schema`, and nothing else, with a description each.
    #[test]
    fn settings_schema_describes_every_key() {
        let schema = settings_schema();
        assert_eq!(schema["additionalProperties"], false);
        let properties = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = properties.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = vec![
            "$schema",
            "approval",
            "completion",
            "context",
            "diagnostics",
            "edits",
            "extraDirectories",
            "hooks",
            "importMcpServers",
            "inlineChat",
            "maxTurns",
            "mcpServers",
            "memory",
            "nextSpeakerCheck",
            "sandbox",
            "systemPrompt",
            "sessions",
            "shell",
            "subagents",
            "syntax",
            "webFetch",
        ];
        expected.extend(MODEL_KEYS);
        expected.sort_unstable();
        assert_eq!(keys, expected);
        for (key, property) in properties {
            let description = property["description"].as_str().unwrap_or_default();
            assert!(!description.is_empty(), "{key} has no description");
        }
        for (name, definition) in schema["$defs"].as_object().unwrap() {
            for (key, property) in definition["properties"].as_object().into_iter().flatten() {
                assert!(
                    property.get("description").is_some(),
                    "{name}.{key} has no description"
                );
            }
        }
        assert_eq!(schema["properties"]["maxTurns"]["default"], 100);
        assert_eq!(
            schema["$defs"]["MemorySettings"]["properties"]["fileNames"]["default"],
            json!(["AGENTS.md", "GEMINI.md", "CLAUDE.md"])
        );
    }

    /// A mistyped exclusion is a settings error naming the key, not a pattern quietly dropped.
    #[test]
    fn exclude_documents_must_be_globs() {
        let settings = AgentSettings::from_raw(
            &serde_json::json!({"completion": {"excludeDocuments": ["*.sql", "secrets/**"]}}),
        )
        .unwrap();
        assert_eq!(
            settings.completion.exclude_documents,
            ["*.sql", "secrets/**"]
        );
        let error = AgentSettings::from_raw(
            &serde_json::json!({"completion": {"excludeDocuments": ["src/[abc"]}}),
        )
        .unwrap_err();
        assert!(
            error.contains("completion.excludeDocuments")
                && error.contains("invalid glob pattern `src/[abc`"),
            "{error}"
        );
    }

    #[test]
    fn hook_events_by_claude_and_gemini_names_are_read_as_the_same_events() {
        use std::time::Duration;

        use crate::hooks::HookEvent;

        let settings = AgentSettings::from_raw(&json!({"hooks": {
            "PreToolUse": [{"matcher": "edit", "hooks": [{"type": "command", "command": "a"}]}],
            "BeforeTool": [{"hooks": [{"type": "command", "command": "b", "timeout": 5}]}],
            "AfterAgent": [{"hooks": [{"type": "command", "command": "c"}]}],
            "PreCompress": [{"matcher": "auto", "hooks": [{"type": "command", "command": "d"}]}]
        }}))
        .unwrap();
        let hooks = &settings.hooks.0;
        let commands = |event| -> Vec<&str> {
            hooks[&event]
                .iter()
                .flat_map(|group| group.hooks.iter().map(|hook| hook.command.as_str()))
                .collect()
        };
        assert_eq!(commands(HookEvent::PreToolUse), ["a", "b"]);
        assert_eq!(commands(HookEvent::Stop), ["c"]);
        assert_eq!(commands(HookEvent::PreCompact), ["d"]);
        // Under Gemini CLI's names a hook is Gemini CLI's: its timeout is milliseconds.
        let gemini = &hooks[&HookEvent::PreToolUse][1];
        assert_eq!(gemini.dialect, crate::hooks::Dialect::Gemini);
        assert_eq!(
            gemini.hooks[0].timeout(gemini.dialect),
            Duration::from_millis(5)
        );
        let claude = &hooks[&HookEvent::PreToolUse][0];
        assert_eq!(claude.dialect, crate::hooks::Dialect::Claude);
        assert_eq!(
            claude.hooks[0].timeout(claude.dialect),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn hook_mistakes_are_errors_that_name_the_key() {
        let command = json!([{"hooks": [{"type": "command", "command": "x"}]}]);
        let cases = [
            (json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}),
             "`hooks.PreToolUse[0].hooks[0].type`: unknown value \"prompt\"; expected one of: command"),
            (json!({"hooks": {"BeforeModel": command}}),
             "`hooks`: the hook event `BeforeModel` (Gemini CLI's) is not supported by Tandem"),
            (json!({"hooks": {"PreToolUze": command}}),
             "`hooks`: unknown hook event `PreToolUze`; expected one of: SessionStart, UserPromptSubmit, PreToolUse"),
            (json!({"hooks": {"Stop": [{"matcher": "(", "hooks": []}]}}),
             "`hooks.Stop[0].matcher` is not a valid regular expression"),
            (json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}}),
             "`hooks.Stop[0].hooks[0].command` is empty"),
            (json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
             "`hooks.Stop[0].hooks[0].timeout` must be at least 1"),
            (json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "comand": "x"}]}]}}),
             "unknown setting `hooks.Stop[0].hooks[0].comand`; did you mean `command`?"),
        ];
        for (raw, expected) in cases {
            let error = check(&raw).unwrap_err();
            assert!(
                error.starts_with(expected),
                "{raw}:\n{error}\nexpected: {expected}"
            );
        }
    }
}
