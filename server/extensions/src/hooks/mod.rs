//! Hooks: the user's commands, run at points of a session's life (the `hooks` settings key, in
//! Claude Code's shape, so hook scripts written for Claude Code or Gemini CLI run unchanged).
//! See docs/hooks.md.
//!
//! - `config`: the settings, the events and their Gemini CLI names.
//! - `dialect`: whose hooks they are (Claude Code's or Gemini CLI's), and each one's names and
//!   shapes for Tandem's tools.
//! - `matcher`: which of an event's hooks run (tool names and their aliases).
//! - `process`: running one command (process group, timeout, output caps, environment).
//! - `decision`: what a run decided, and how the decisions of one event's hooks combine.
//! - `transcript`: the conversation in Claude Code's transcript shape, for hooks that read it.
//!
//! The session calls `Hooks::run` where each event happens (`session/hooks.rs`).

pub mod config;
pub mod decision;
pub mod dialect;
pub mod matcher;
pub mod process;
pub mod transcript;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

pub use config::{HookCommand, HookEvent, HooksSettings, MatcherGroup, PluginOrigin};
pub use decision::{Effect, Permission};
pub use dialect::Dialect;

use tandem_protocol::HookRun;
use tandem_tools::shell::ShellEnvironment;

/// A session's hooks: the settings and what every hook is told about the session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub settings: Arc<HooksSettings>,
    /// The session's id, as the front end knows it.
    pub session_id: String,
    /// The conversation so far in Claude Code's JSON Lines shape (`transcript.rs`), which the
    /// session writes before hooks run; `None` when it has none to offer.
    pub transcript_path: Option<PathBuf>,
}

/// What an event's subject is, for matchers: a tool call (matched by its names, and shown to
/// each hook in its dialect), or a word (`manual`, `startup`). Events without one run all
/// their hooks.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    Tool(ToolSubject<'a>),
    Word(&'a str),
    None,
}

/// A tool call as hooks are told of it.
#[derive(Debug, Clone, Copy)]
pub struct ToolSubject<'a> {
    pub id: &'a str,
    /// Tandem's name for the tool.
    pub name: &'a str,
    /// Tandem's arguments.
    pub arguments: &'a Value,
    /// After it ran: its output for the model, and whether it failed.
    pub result: Option<(&'a str, bool)>,
}

/// One hook command to run, with what it was listed under.
struct Planned<'a> {
    group: &'a MatcherGroup,
    hook: &'a HookCommand,
}

impl Hooks {
    pub fn new(settings: HooksSettings) -> Self {
        Hooks {
            settings: Arc::new(settings),
            ..Hooks::default()
        }
    }

    /// Whether any hook is attached to `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.settings
            .0
            .get(&event)
            .is_some_and(|groups| groups.iter().any(|group| !group.hooks.is_empty()))
    }

    /// Runs the hooks of `event` that match `subject`, in parallel (a `sequential` group's one
    /// after another), in `root` with `environment`; `fields` are the event's own stdin fields.
    /// Returns each run and what it decided, in the settings' order; a rewritten tool input is
    /// in Tandem's terms.
    pub async fn run(
        &self,
        event: HookEvent,
        subject: Subject<'_>,
        fields: Map<String, Value>,
        root: &Path,
        environment: &ShellEnvironment,
    ) -> Vec<(HookRun, Effect)> {
        let names = match subject {
            Subject::Tool(tool) => matcher::tool_names(tool.name),
            Subject::Word(word) => vec![word.to_owned()],
            Subject::None => Vec::new(),
        };
        let groups: Vec<Vec<Planned<'_>>> = self
            .settings
            .0
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|group| {
                matches!(subject, Subject::None)
                    || matcher::matches(group.matcher.as_deref(), &names)
            })
            .map(|group| {
                group
                    .hooks
                    .iter()
                    .map(|hook| Planned { group, hook })
                    .collect()
            })
            .collect();
        if groups.iter().all(Vec::is_empty) {
            return Vec::new();
        }
        let mut inputs: BTreeMap<Dialect, String> = BTreeMap::new();
        for planned in groups.iter().flatten() {
            let dialect = planned.group.dialect;
            inputs
                .entry(dialect)
                .or_insert_with(|| self.input(event, dialect, subject, &fields, root));
        }
        let inputs = &inputs;
        let one = |planned| run_one(event, planned, subject, inputs, root, environment);
        let units = groups.iter().map(|group| {
            let sequential = group.first().is_some_and(|first| first.group.sequential);
            async move {
                if sequential {
                    let mut runs = Vec::new();
                    for planned in group {
                        runs.push(one(planned).await);
                    }
                    runs
                } else {
                    futures::future::join_all(group.iter().map(one)).await
                }
            }
        });
        futures::future::join_all(units)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// The JSON a `dialect` hook of `event` reads on stdin.
    fn input(
        &self,
        event: HookEvent,
        dialect: Dialect,
        subject: Subject<'_>,
        fields: &Map<String, Value>,
        root: &Path,
    ) -> String {
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session_id));
        input.insert("transcript_path".into(), json!(self.transcript_path));
        input.insert("cwd".into(), json!(root));
        input.insert("hook_event_name".into(), json!(dialect.event_name(event)));
        if dialect == Dialect::Gemini {
            input.insert("timestamp".into(), json!(crate::date::now_rfc3339()));
        }
        if let Subject::Tool(tool) = subject {
            input.insert("tool_name".into(), json!(dialect.tool_name(tool.name)));
            input.insert(
                "tool_input".into(),
                dialect.tool_input(tool.name, tool.arguments, root),
            );
            if dialect == Dialect::Claude {
                input.insert("tool_use_id".into(), json!(tool.id));
            }
            if let Some((output, is_error)) = tool.result {
                input.insert(
                    "tool_response".into(),
                    dialect.tool_response(tool.name, tool.arguments, output, is_error, root),
                );
            }
        }
        for (key, value) in fields {
            let value = match (dialect, event, key.as_str()) {
                (Dialect::Gemini, HookEvent::Notification, "notification_type") => {
                    json!("ToolPermission")
                }
                _ => value.clone(),
            };
            input.insert(key.clone(), value);
        }
        Value::Object(input).to_string()
    }
}

/// Runs one planned hook with its dialect's input and reads what it decided.
async fn run_one(
    event: HookEvent,
    planned: &Planned<'_>,
    subject: Subject<'_>,
    inputs: &BTreeMap<Dialect, String>,
    root: &Path,
    environment: &ShellEnvironment,
) -> (HookRun, Effect) {
    let Planned { group, hook } = *planned;
    let dialect = group.dialect;
    let input = inputs.get(&dialect).map_or(&[][..], |text| text.as_bytes());
    let plugin_root = group.plugin.as_ref().map(|plugin| plugin.root.as_path());
    let extra: Vec<(&str, &Path)> = plugin_root
        .map(|root| vec![("CLAUDE_PLUGIN_ROOT", root), ("extensionPath", root)])
        .unwrap_or_default();
    let command = match dialect {
        // Gemini CLI writes `${/}` for the path separator in extensions' commands.
        Dialect::Gemini => hook.command.replace("${/}", "/"),
        Dialect::Claude => hook.command.clone(),
    };
    let finished = process::run(
        &command,
        input,
        root,
        environment,
        hook.timeout(dialect),
        &extra,
    )
    .await;
    let (mut run, mut effect) = decision::interpret(
        event,
        dialect,
        &hook.command,
        group.matcher.as_deref(),
        finished,
    );
    if let Some(plugin) = &group.plugin {
        run.command = format!("{} (plugin {})", run.command, plugin.name);
    }
    if let (Some(given), Subject::Tool(tool)) = (effect.updated_input.take(), subject) {
        let given = match (dialect, given) {
            // Gemini CLI merges what the hook gave into the input it was shown.
            (Dialect::Gemini, Value::Object(given)) => {
                let mut shown = dialect.tool_input(tool.name, tool.arguments, root);
                if let Value::Object(shown) = &mut shown {
                    shown.extend(given);
                }
                shown
            }
            (_, given) => given,
        };
        effect.updated_input =
            Some(dialect.tool_input_back(tool.name, &given, tool.arguments, root));
    }
    (run, effect)
}

/// The decisions of `runs` together.
pub fn combined(runs: &[(HookRun, Effect)]) -> Effect {
    let mut effect = Effect::default();
    for (_, one) in runs {
        effect.combine(one.clone());
    }
    effect
}
