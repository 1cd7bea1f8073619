//! Hooks: the user's commands, run at points of a session's life (the `hooks` settings key, in
//! Claude Code's shape, so hook scripts written for Claude Code or Gemini CLI run unchanged).
//! See docs/hooks.md.
//!
//! - `config`: the settings, the events and their Gemini CLI names.
//! - `matcher`: which of an event's hooks run (tool names and their aliases).
//! - `process`: running one command (process group, timeout, output caps, environment).
//! - `decision`: what a run decided, and how the decisions of one event's hooks combine.
//!
//! The session calls `Hooks::run` where each event happens (`session/hooks.rs`).

pub mod config;
pub mod decision;
pub mod matcher;
pub mod process;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

pub use config::{HookEvent, HooksSettings};
pub use decision::{Effect, Permission};

use tandem_protocol::HookRun;
use tandem_tools::shell::ShellEnvironment;

/// A session's hooks: the settings and what every hook is told about the session.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub settings: Arc<HooksSettings>,
    /// The session's id, as the front end knows it.
    pub session_id: String,
    /// The saved session's file, when it is saved.
    pub transcript_path: Option<PathBuf>,
}

/// What an event's subject is, for matchers: a tool (matched by its names), or a word
/// (`manual`, `startup`). Events without one run all their hooks.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    Tool(&'a str),
    Word(&'a str),
    None,
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

    /// Runs the hooks of `event` that match `subject`, in parallel, in `root` with
    /// `environment`; `fields` are the event's own stdin fields. Returns each run and what it
    /// decided, in the settings' order.
    pub async fn run(
        &self,
        event: HookEvent,
        subject: Subject<'_>,
        fields: Map<String, Value>,
        root: &Path,
        environment: &ShellEnvironment,
    ) -> Vec<(HookRun, Effect)> {
        let names = match subject {
            Subject::Tool(tool) => matcher::tool_names(tool),
            Subject::Word(word) => vec![word],
            Subject::None => Vec::new(),
        };
        let commands: Vec<_> = self
            .settings
            .0
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|group| {
                matches!(subject, Subject::None)
                    || matcher::matches(group.matcher.as_deref(), &names)
            })
            .flat_map(|group| {
                group
                    .hooks
                    .iter()
                    .map(move |hook| (group.matcher.as_deref(), hook))
            })
            .collect();
        if commands.is_empty() {
            return Vec::new();
        }
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.session_id));
        input.insert("transcript_path".into(), json!(self.transcript_path));
        input.insert("cwd".into(), json!(root));
        input.insert("hook_event_name".into(), json!(event.name()));
        input.extend(fields);
        let input = Value::Object(input).to_string();
        let runs = commands.into_iter().map(|(matcher, hook)| {
            let input = input.as_bytes();
            async move {
                let finished =
                    process::run(&hook.command, input, root, environment, hook.timeout()).await;
                decision::interpret(event, &hook.command, matcher, finished)
            }
        });
        futures::future::join_all(runs).await
    }
}

/// The decisions of `runs` together.
pub fn combined(runs: &[(HookRun, Effect)]) -> Effect {
    let mut effect = Effect::default();
    for (_, one) in runs {
        effect.combine(one.clone());
    }
    effect
}
