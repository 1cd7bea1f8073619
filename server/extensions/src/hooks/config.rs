//! The `hooks` settings key, in Claude Code's shape: per event, groups of commands with an
//! optional matcher. Gemini CLI's event names are read as the Claude Code events they match,
//! and the groups under them are Gemini CLI's hooks (`Dialect::Gemini`: its tool names and
//! input shapes, timeouts in milliseconds, its optional `name`, `description` and
//! `sequential`); names Tandem cannot honour (Gemini CLI's model-level events) and unknown
//! names are errors that say what is accepted.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::dialect::Dialect;

/// The seconds a hook may run when its settings do not say.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The events a hook can be attached to, by their Claude Code names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PreCompact,
    Stop,
    SessionEnd,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PreCompact,
        HookEvent::Stop,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// Gemini CLI's names for the same events.
    const GEMINI: [(&'static str, HookEvent); 5] = [
        ("BeforeTool", HookEvent::PreToolUse),
        ("AfterTool", HookEvent::PostToolUse),
        ("BeforeAgent", HookEvent::UserPromptSubmit),
        ("AfterAgent", HookEvent::Stop),
        ("PreCompress", HookEvent::PreCompact),
    ];

    /// Gemini CLI events with no counterpart in Tandem: hooks see requests and tools, not
    /// model requests or the choice of tools.
    const UNSUPPORTED: [&'static str; 3] = ["BeforeModel", "AfterModel", "BeforeToolSelection"];

    /// The Claude Code name, which hooks receive as `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Stop => "Stop",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    /// Gemini CLI's name for the event, which its hooks receive as `hook_event_name`.
    pub fn gemini_name(self) -> &'static str {
        HookEvent::GEMINI
            .iter()
            .find(|(_, event)| *event == self)
            .map_or(self.name(), |(name, _)| name)
    }

    /// The event named `name` (a Claude Code or a Gemini CLI name). `Err` says why not.
    pub fn from_name(name: &str) -> Result<HookEvent, String> {
        if let Some(event) = HookEvent::ALL
            .into_iter()
            .find(|event| event.name() == name)
        {
            return Ok(event);
        }
        if let Some((_, event)) = HookEvent::GEMINI.iter().find(|(alias, _)| *alias == name) {
            return Ok(*event);
        }
        let known = HookEvent::ALL.map(HookEvent::name).join(", ");
        if HookEvent::UNSUPPORTED.contains(&name) {
            return Err(format!(
                "the hook event `{name}` (Gemini CLI's) is not supported by Tandem, whose hooks \
                 do not see model requests; the events are: {known} (or Gemini CLI's BeforeTool, \
                 AfterTool, BeforeAgent, AfterAgent, PreCompress)"
            ));
        }
        Err(format!(
            "unknown hook event `{name}`; expected one of: {known} (or Gemini CLI's BeforeTool, \
             AfterTool, BeforeAgent, AfterAgent, PreCompress)"
        ))
    }

    /// When the event's hooks run, for the settings' schema.
    fn description(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "At a session's first prompt (matcher: startup or resume).",
            HookEvent::UserPromptSubmit => "Before a prompt goes to the model.",
            HookEvent::PreToolUse => "Before a tool call, after its arguments are checked.",
            HookEvent::PostToolUse => "After a tool call ran.",
            HookEvent::PreCompact => {
                "Before the conversation is compressed (matcher: manual or auto)."
            }
            HookEvent::Stop => "When the model answers without calling tools.",
            HookEvent::SessionEnd => "When the session ends.",
            HookEvent::Notification => "When a tool call waits for the user's approval.",
        }
    }

    /// Every name a settings file may use, Claude Code's first.
    fn accepted_names() -> impl Iterator<Item = &'static str> {
        HookEvent::ALL
            .into_iter()
            .map(HookEvent::name)
            .chain(HookEvent::GEMINI.iter().map(|(alias, _)| *alias))
    }
}

/// Hooks by event (the `hooks` settings key).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HooksSettings(pub BTreeMap<HookEvent, Vec<MatcherGroup>>);

impl HooksSettings {
    pub fn is_empty(&self) -> bool {
        self.0.values().all(Vec::is_empty)
    }

    /// What the types cannot say: every matcher is a valid regular expression, every command
    /// has words and a timeout of at least a second.
    pub fn validate(&self) -> Result<(), String> {
        for (event, groups) in &self.0 {
            for (index, group) in groups.iter().enumerate() {
                let place = format!("hooks.{}[{index}]", group.dialect.event_name(*event));
                if let Some(matcher) = &group.matcher {
                    crate::hooks::matcher::compile(matcher).map_err(|error| {
                        format!("`{place}.matcher` is not a valid regular expression: {error}")
                    })?;
                }
                for (number, hook) in group.hooks.iter().enumerate() {
                    if hook.command.trim().is_empty() {
                        return Err(format!("`{place}.hooks[{number}].command` is empty"));
                    }
                    if hook.timeout == Some(0) {
                        let unit = match group.dialect {
                            Dialect::Claude => "seconds",
                            Dialect::Gemini => "milliseconds",
                        };
                        return Err(format!(
                            "`{place}.hooks[{number}].timeout` must be at least 1 ({unit})"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for HooksSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let by_name = BTreeMap::<String, Vec<MatcherGroup>>::deserialize(deserializer)?;
        let mut by_event: BTreeMap<HookEvent, Vec<MatcherGroup>> = BTreeMap::new();
        // Claude Code's names first, so that their groups run (and report) first.
        let (claude, gemini): (Vec<_>, Vec<_>) = by_name
            .into_iter()
            .partition(|(name, _)| HookEvent::ALL.iter().any(|event| event.name() == name));
        for (name, mut groups) in claude.into_iter().chain(gemini) {
            let event = HookEvent::from_name(&name).map_err(serde::de::Error::custom)?;
            if event.name() != name {
                for group in &mut groups {
                    group.dialect = Dialect::Gemini;
                }
            }
            // A file that names one event both ways gets both lists.
            by_event.entry(event).or_default().extend(groups);
        }
        Ok(HooksSettings(by_event))
    }
}

impl JsonSchema for HooksSettings {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HooksSettings".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let groups = generator.subschema_for::<Vec<MatcherGroup>>();
        let properties: Map<String, Value> = HookEvent::accepted_names()
            .map(|name| {
                let mut schema = groups.clone();
                let description = match HookEvent::from_name(name) {
                    Ok(event) if event.name() == name => event.description().to_owned(),
                    Ok(event) => format!("Gemini CLI's name for {}.", event.name()),
                    Err(_) => String::new(),
                };
                schema.insert("description".into(), description.into());
                (name.to_owned(), schema.to_value())
            })
            .collect();
        schemars::json_schema!({
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        })
    }
}

/// Commands run for an event, when the matcher matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatcherGroup {
    /// For `PreToolUse` and `PostToolUse`, a regular expression the whole tool name must match
    /// (`edit|write_file`, `Bash`, `mcp__github__.*`); Claude Code's and Gemini CLI's tool
    /// names match too. For `PreCompact` `manual` or `auto`, for `SessionStart` `startup` or
    /// `resume`. Empty, `*` or missing: always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands, run in parallel.
    pub hooks: Vec<HookCommand>,
    /// Gemini CLI's: run this group's commands one after another instead of in parallel.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
    /// Whose hooks these are: Gemini CLI's when listed under one of its event names.
    #[serde(skip)]
    #[schemars(skip)]
    pub dialect: Dialect,
    /// The plugin that brought these hooks (`tandem plugins`), whose folder its commands get as
    /// `CLAUDE_PLUGIN_ROOT` (and `extensionPath`); `None` for the settings' own.
    #[serde(skip)]
    #[schemars(skip)]
    pub plugin: Option<PluginOrigin>,
}

/// Where a plugin's hooks come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginOrigin {
    pub name: String,
    pub root: std::path::PathBuf,
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookCommand {
    /// Always `command`.
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// A shell command line, run in the workspace root with the event as JSON on stdin.
    pub command: String,
    /// Seconds before the command and every process it started are killed (default 60); under
    /// Gemini CLI's event names, milliseconds, as Gemini CLI reads it (default 60000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub timeout: Option<u64>,
    /// Gemini CLI's name for the hook, shown in its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the hook is for (Gemini CLI's field; not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl HookCommand {
    /// How long it may run: `timeout` in the unit of the tool it was written for.
    pub fn timeout(&self, dialect: Dialect) -> Duration {
        match (dialect, self.timeout) {
            (Dialect::Claude, timeout) => {
                Duration::from_secs(timeout.unwrap_or(DEFAULT_TIMEOUT_SECS))
            }
            (Dialect::Gemini, Some(millis)) => Duration::from_millis(millis),
            (Dialect::Gemini, None) => Duration::from_secs(DEFAULT_TIMEOUT_SECS),
        }
    }
}

/// What kind of hook it is: only commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HookKind {
    /// A shell command.
    Command,
}
