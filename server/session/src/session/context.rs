//! What each request carries besides the history. The system instruction and tool
//! declarations are frozen at a history's first request, and the environment and repo map
//! open its first message, computed once: a provider's prompt cache only helps while the
//! request prefix stays the same. The history is append-only between compressions: what
//! changes during a session (the plan, files changed under the model, a repeated call, the
//! approval mode) is said in a reminder only when it changed since the model last heard it, as
//! a new part of the newest message, and stays there. `next_request` puts a request together
//! (every request is the previous one plus new content) and measures how much of it repeats
//! the previous one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tandem_providers::{CacheBreakpoint, ChatRequest, Message, Part, Role, ToolDeclaration};
use tokio_util::sync::CancellationToken;

use super::Session;
use crate::store::Record;
use crate::tokens;
use tandem_extensions::mcp::McpServerState;
use tandem_sandbox::approval::ApprovalMode;
use tandem_tools::{Tool, ToolError};

/// How long the first prompt waits for the symbol index before its repo map is built from
/// what is parsed by then (the rest is parsed by later calls).
const REPO_MAP_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Files the reminder names at most; it says how many more there are.
const REMINDER_MAX_FILES: usize = 10;

/// What the reminders have told the model since its history started (reset with it): a
/// reminder says only what changed since.
#[derive(Default)]
pub(super) struct Told {
    /// The unfinished plan it last saw (`None`: none, or finished).
    plan: Option<String>,
    /// The files last reported as changed under it, still unread.
    changed: Vec<PathBuf>,
    /// The approval mode it last heard of; `None` before the first request.
    mode: Option<ApprovalMode>,
    /// The MCP servers it was told are not ready (starting, or failed with this message).
    mcp_not_ready: BTreeMap<String, Option<String>>,
}

/// What stays fixed in every request between compressions.
pub(super) struct Frozen {
    pub(super) system: String,
    pub(super) tools: Vec<ToolDeclaration>,
    /// Estimated tokens of the system instruction and declarations.
    pub(super) tokens: u64,
    /// Bytes of the two, serialised.
    bytes: usize,
}

impl Frozen {
    pub(super) fn new(system: String, tools: Vec<ToolDeclaration>) -> Self {
        let bytes = serde_json::to_string(&(&system, &tools)).map_or(0, |text| text.len());
        let head = ChatRequest {
            system,
            tools,
            ..ChatRequest::default()
        };
        Frozen {
            tokens: tokens::estimate_request(&head),
            bytes,
            system: head.system,
            tools: head.tools,
        }
    }
}

pub(super) fn declarations(tools: &[Arc<dyn Tool>]) -> Vec<ToolDeclaration> {
    tools
        .iter()
        .map(|tool| ToolDeclaration {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            parameters: tool.parameters(),
        })
        .collect()
}

/// How much of each request repeats the previous one, measured on Tandem's own serialisation
/// of the request (system, tools, messages). Logged per request; a provider's prompt cache
/// only pays off when this stays high.
#[derive(Default)]
pub(super) struct PrefixTracker {
    /// Serialised size of each history message, computed once (history is append-only
    /// between compressions).
    pub(super) lengths: Vec<usize>,
    /// Bumped whenever the history is replaced.
    pub(super) generation: u64,
    previous: Option<PreviousRequest>,
    /// The latest measure: shared leading bytes, and the request's size.
    measured: (usize, usize),
}

struct PreviousRequest {
    generation: u64,
    head: usize,
    /// Messages it had, and its last one serialised (reminder included).
    messages: usize,
    last: String,
}

impl Session {
    /// Brings the tools the next request declares up to date with the MCP servers: a server
    /// that became ready adds its tools, one that stopped takes them away. A change unfreezes
    /// the prefix, so the provider's prompt cache starts over from the tool declarations once;
    /// the reminder tells the model.
    pub(super) fn sync_tools(&mut self) {
        let Some(mcp) = &self.mcp else {
            return;
        };
        let mut tools = self.builtin_tools.clone();
        tools.extend(mcp.tools());
        if declarations(&tools) != declarations(&self.tools) {
            self.tools = tools;
            self.frozen = None;
        }
    }

    /// What the model should hear about the MCP servers: those that are not ready (still
    /// starting, or failed), and those it was told of that are ready now.
    fn mcp_reminder(&mut self) -> Vec<String> {
        let Some(mcp) = &self.mcp else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        let mut not_ready = BTreeMap::new();
        for status in mcp.statuses() {
            let told = self.told.mcp_not_ready.get(&status.name);
            match status.state {
                McpServerState::Starting => {
                    if told != Some(&None) {
                        lines.push(format!(
                            "The MCP server `{}` is still starting; its tools are not available \
                             yet and join when it is ready.",
                            status.name
                        ));
                    }
                    not_ready.insert(status.name, None);
                }
                McpServerState::Failed { message } => {
                    let first = message.lines().next().unwrap_or_default().to_owned();
                    if told != Some(&Some(first.clone())) {
                        lines.push(format!(
                            "The MCP server `{}` is not available: {first}",
                            status.name
                        ));
                    }
                    not_ready.insert(status.name, Some(first));
                }
                McpServerState::Ready if told.is_some() => {
                    lines.push(format!(
                        "The MCP server `{}` is ready; its tools are available now.",
                        status.name
                    ));
                }
                McpServerState::Ready | McpServerState::Disabled => {}
            }
        }
        self.told.mcp_not_ready = not_ready;
        lines
    }

    /// The system instruction and tool declarations every request of this history starts
    /// with, fixed on first use.
    pub(super) fn frozen(&mut self) -> &Frozen {
        let (config, tools) = (&self.config, &self.tools);
        let model = self.model.config();
        let (window, sees) = (model.context_window, model.images);
        self.frozen.get_or_insert_with(|| {
            // A model that takes no images is not offered the tools that show it some.
            let offered: Vec<Arc<dyn Tool>> = tools
                .iter()
                .filter(|tool| sees || !tool.needs_images())
                .cloned()
                .collect();
            let declarations = fit_declarations(declarations(&offered), window);
            Frozen::new(config.system_prompt.clone(), declarations)
        })
    }

    /// The environment context and repo map that open a history.
    pub(super) async fn environment_parts(&mut self, cancel: &CancellationToken) -> Vec<Part> {
        let mut parts = Vec::new();
        if let Some(environment) = self.config.environment.clone() {
            parts.push(Part::Text { text: environment });
            if let Some(text) = self.first_repo_map(cancel).await {
                parts.push(Part::Text { text });
            }
        }
        parts
    }

    /// The `<repo_map>` block for the environment context, computed on first use and the same
    /// for the rest of the session; `None` when the settings leave it out, the workspace has
    /// nothing to map, the turn is cancelled first, or indexing fails (logged: the prompt goes
    /// on without a map).
    async fn first_repo_map(&mut self, cancel: &CancellationToken) -> Option<String> {
        if let Some(map) = &self.repo_map {
            return map.clone();
        }
        let tokens = self.ctx.syntax.repo_map_tokens;
        if tokens == 0 {
            self.repo_map = Some(None);
            return None;
        }
        let ctx = self.ctx.clone();
        let build = async move {
            let deadline = std::time::Instant::now() + REPO_MAP_TIME_LIMIT;
            tandem_tools::symbols::refresh_index(&ctx, Some(deadline)).await?;
            let request = ctx.session.map_request(tokens);
            let (index, workspace) = (ctx.index.clone(), ctx.workspace.clone());
            tokio::task::spawn_blocking(move || {
                index.repo_map(&request, &|path| workspace.display(path))
            })
            .await
            .map_err(|error| ToolError::Fatal(format!("the repo map task failed: {error}")))
        };
        let built = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            built = build => built,
        };
        let map = match built {
            Ok(map) if !map.text.trim().is_empty() => Some(format!(
                "<repo_map>\nThe workspace's most relevant definitions, ranked by how the code \
                 uses them (a map, not whole files):\n{}\n</repo_map>",
                map.text.trim_end()
            )),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!("the first prompt goes without a repo map: {error}");
                None
            }
        };
        self.repo_map = Some(map.clone());
        map
    }

    /// What the model needs to hear now and was not told yet: a plan it has not seen, files
    /// that changed under it since the last report, a repeated call, an approval mode other
    /// than the one it knows. `None` when there is nothing new. Updates what the model has been
    /// told: the caller must send it.
    fn reminder(&mut self) -> Option<String> {
        let mut lines = Vec::new();
        let todos = self.ctx.session.todos();
        let unfinished = todos.iter().any(|todo| {
            matches!(
                todo.status,
                tandem_tools::TodoStatus::Pending | tandem_tools::TodoStatus::InProgress
            )
        });
        let plan = unfinished.then(|| tandem_tools::write_todos::render(&todos));
        // A plan the model just wrote is in its write_todos result: nothing to repeat.
        let wrote_plan = self.history.last().is_some_and(|message| {
            message.parts.iter().any(|part| {
                matches!(part, Part::ToolResult(result)
                    if result.name == "write_todos" && !result.is_error)
            })
        });
        match &plan {
            Some(text) if !wrote_plan && self.told.plan.as_ref() != Some(text) => {
                lines.push(format!(
                    "Your todo list (keep it current with write_todos):\n{text}"
                ));
            }
            _ => {}
        }
        self.told.plan = plan;
        let changed = self.ctx.session.changed_files(self.ctx.editor.as_ref());
        let new: Vec<&PathBuf> = changed
            .iter()
            .filter(|path| !self.told.changed.contains(path))
            .collect();
        if !new.is_empty() {
            let mut names: Vec<String> = new
                .iter()
                .take(REMINDER_MAX_FILES)
                .map(|path| self.ctx.workspace.display(path))
                .collect();
            if new.len() > REMINDER_MAX_FILES {
                names.push(format!("and {} more", new.len() - REMINDER_MAX_FILES));
            }
            lines.push(format!(
                "These files changed since you last read them (the user or a command edited \
                 them); what you saw of them is out of date, so read them again before you rely \
                 on or edit them: {}",
                names.join(", ")
            ));
        }
        // A file read again drops out, so a later change is reported again.
        self.told.changed = changed;
        if let Some(note) = self.repeat_note.take() {
            lines.push(note);
        }
        let mode = self.config.approval.mode;
        // A session starts in the default mode as far as the model knows.
        if mode != self.told.mode.unwrap_or(ApprovalMode::Default) {
            lines.push(match mode {
                ApprovalMode::Default => {
                    "Approval mode: default (the user approves each edit and shell command)."
                }
                ApprovalMode::AutoEdit => {
                    "Approval mode: auto_edit (edits run without asking; shell commands need approval)."
                }
                ApprovalMode::Yolo => "Approval mode: yolo (every tool call runs without asking).",
            }
            .to_owned());
        }
        self.told.mode = Some(mode);
        lines.extend(self.mcp_reminder());
        if lines.is_empty() {
            return None;
        }
        Some(format!(
            "<system-reminder>\n{}\n</system-reminder>",
            lines.join("\n")
        ))
    }

    /// The next request: the frozen prefix and the history, nothing else. A reminder with
    /// something new joins the newest message (a prompt or tool results, not sent yet) in the
    /// history itself, and is saved with it, so every later request repeats it byte for byte
    /// and a resumed session rebuilds the same bytes. Also measures how much of the request
    /// repeats the previous one (logged).
    pub fn next_request(&mut self) -> ChatRequest {
        let frozen = self.frozen();
        let (system, tools, head) = (frozen.system.clone(), frozen.tools.clone(), frozen.bytes);
        let newest = self.history.len().checked_sub(1);
        if let Some(index) = newest.filter(|&index| self.history[index].role == Role::User) {
            if let Some(text) = self.reminder() {
                let part = Part::Text { text };
                self.history[index].parts.push(part.clone());
                self.prefix.lengths.truncate(index);
                if index < self.logged {
                    self.save(&Record::Appended { parts: vec![part] });
                }
            }
        }
        let messages = self.history.clone();
        // The system block (after the tools, in Anthropic's order) and the newest message: the
        // next request repeats both. The previous request's newest message keeps its marker
        // too, so that a response with many blocks stays within reach of a cached prefix.
        let mut breakpoints = vec![CacheBreakpoint::System];
        if let Some(previous) = &self.prefix.previous {
            let last = previous.messages.checked_sub(1);
            if let Some(last) = last.filter(|&last| {
                previous.generation == self.prefix.generation && last + 1 < messages.len()
            }) {
                breakpoints.push(CacheBreakpoint::Message(last));
            }
        }
        if let Some(last) = newest {
            breakpoints.push(CacheBreakpoint::Message(last));
        }
        self.measure_prefix(head, &messages);
        ChatRequest {
            system,
            messages,
            tools,
            cache_breakpoints: breakpoints,
            cache_key: Some(self.cache_key()),
            ..ChatRequest::default()
        }
    }

    /// Logs how many leading bytes `messages` (with the frozen head) share with the previous
    /// request. Each history message is serialised once; only the previous request's last
    /// message is compared byte by byte.
    fn measure_prefix(&mut self, head: usize, messages: &[Message]) {
        let size = |message: &Message| serde_json::to_string(message).map_or(0, |text| text.len());
        let lengths = &mut self.prefix.lengths;
        lengths.truncate(self.history.len());
        for message in &self.history[lengths.len()..] {
            lengths.push(size(message));
        }
        let last = messages
            .last()
            .and_then(|message| serde_json::to_string(message).ok())
            .unwrap_or_default();
        let total = head
            + lengths[..messages.len().saturating_sub(1)]
                .iter()
                .sum::<usize>()
            + last.len();
        let shared = match &self.prefix.previous {
            Some(previous) if previous.generation == self.prefix.generation => {
                let whole = previous.messages.saturating_sub(1).min(messages.len());
                let compared = messages
                    .get(whole)
                    .and_then(|message| serde_json::to_string(message).ok())
                    .unwrap_or_default();
                let common = previous
                    .last
                    .bytes()
                    .zip(compared.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                previous.head.min(head) + lengths[..whole].iter().sum::<usize>() + common
            }
            _ => 0,
        };
        tracing::debug!(
            shared,
            total,
            "request shares {shared} of {total} leading bytes with the previous one"
        );
        self.prefix.measured = (shared, total);
        self.prefix.previous = Some(PreviousRequest {
            generation: self.prefix.generation,
            head,
            messages: messages.len(),
            last,
        });
    }
}

/// The tool declarations a model with `window` tokens of context gets: as written, unless they
/// would take more than a quarter of the window; then each description is cut to its first
/// sentence and the schemas keep only what constrains a call (names, types, required fields,
/// enums and bounds; descriptions, formats and defaults go), so that a small local model still
/// has room for the conversation.
pub(crate) fn fit_declarations(
    declarations: Vec<tandem_providers::ToolDeclaration>,
    window: u64,
) -> Vec<tandem_providers::ToolDeclaration> {
    let size: u64 = declarations
        .iter()
        .map(|tool| {
            crate::tokens::estimate_text(&tool.description)
                + crate::tokens::estimate_text(&tool.parameters.to_string())
        })
        .sum();
    if size <= window / 4 {
        return declarations;
    }
    declarations
        .into_iter()
        .map(|mut tool| {
            let end = tool.description.match_indices(". ").find(|(at, _)| {
                let before = &tool.description[..*at];
                !(before.ends_with("e.g") || before.ends_with("i.e"))
            });
            if let Some((end, _)) = end {
                tool.description.truncate(end + 1);
            }
            strip_schema(&mut tool.parameters);
            tool
        })
        .collect()
}

/// Removes from a JSON schema, at every depth, the keywords that only explain or annotate.
/// The maps of `properties` (and of definitions) are keyed by names, not keywords: a
/// parameter named `description` stays (regression: `write_todos` lost its items'
/// `description` field in small windows while still requiring it).
fn strip_schema(schema: &mut Value) {
    const ANNOTATIONS: &[&str] = &[
        "description",
        "examples",
        "title",
        "format",
        "default",
        "$schema",
    ];
    const NAMED: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];
    match schema {
        Value::Object(fields) => {
            fields.retain(|key, _| !ANNOTATIONS.contains(&key.as_str()));
            for (key, value) in fields.iter_mut() {
                match (key.as_str(), value) {
                    // Literal values, not schemas.
                    ("enum" | "const", _) => {}
                    (key, Value::Object(named)) if NAMED.contains(&key) => {
                        named.values_mut().for_each(strip_schema);
                    }
                    (_, value) => strip_schema(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_schema),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::fit_declarations;
    use crate::ide::{ActiveEditor, IdeState};
    use crate::session::test_support::{new_session, texts, turn};
    use crate::session::Prompt;
    use tandem_tools::all;

    const FILES: &[(&str, &str)] = &[
        (
            "src/parser.rs",
            "pub struct Parser;\n\nimpl Parser {\n    pub fn parse_expr(&self) {}\n}\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    parser::Parser.parse_expr();\n}\n",
        ),
    ];

    #[tokio::test]
    async fn the_first_prompt_carries_a_repo_map_computed_once() {
        let (_dir, mut session) = new_session(FILES, Some("<environment>"));
        let root = session.ctx.workspace.roots()[0].clone();
        let prompt = Prompt {
            text: "Why does `parse_expr` fail?".to_owned(),
            ide: Some(IdeState {
                active: Some(ActiveEditor {
                    path: root.join("src/main.rs"),
                    language: None,
                    cursor: None,
                    selection: None,
                    symbol: None,
                }),
                open: vec![root.join("src/parser.rs")],
            }),
            ..Prompt::default()
        };
        turn(&mut session, prompt).await;
        let first = texts(&session, 0);
        assert_eq!(first.len(), 4, "{first:#?}");
        assert_eq!(first[0], "<environment>");
        let map = &first[1];
        assert!(
            map.starts_with(
                "<repo_map>\nThe workspace's most relevant definitions, ranked by how the code \
                 uses them (a map, not whole files):\nsrc/"
            ),
            "{map}"
        );
        assert!(map.ends_with("\n</repo_map>"), "{map}");
        assert!(map.contains("pub fn parse_expr(&self)"), "{map}");
        assert!(first[2].starts_with("<ide>"), "{first:#?}");
        assert_eq!(first[3], "Why does `parse_expr` fail?");
        let focus = session.ctx.session.focus();
        assert_eq!(focus.mentioned, ["parse_expr"]);
        assert_eq!(focus.active, Some(root.join("src/main.rs")));
        assert_eq!(focus.open, [root.join("src/parser.rs")]);

        // Later prompts carry no map; the prompt's identifiers still steer the repo_map tool.
        turn(&mut session, Prompt::text("And `Parser`?")).await;
        assert_eq!(texts(&session, 2), ["And `Parser`?"]);
        assert_eq!(session.ctx.session.focus().mentioned, ["Parser"]);

        // A new history starts with the same prefix, even though the code changed since.
        std::fs::write(root.join("src/extra.rs"), "pub fn extra() {}\n").unwrap();
        session.replace_history(Vec::new());
        turn(&mut session, Prompt::text("Again")).await;
        let again = texts(&session, 0);
        assert_eq!(again[..2], first[..2]);
    }

    #[tokio::test]
    async fn no_repo_map_without_an_environment_a_budget_or_source_files() {
        let (_dir, mut session) = new_session(FILES, None);
        turn(&mut session, Prompt::text("hi")).await;
        assert_eq!(texts(&session, 0), ["hi"]);

        let (_dir, mut session) = new_session(FILES, Some("<environment>"));
        session.ctx.syntax.repo_map_tokens = 0;
        turn(&mut session, Prompt::text("hi")).await;
        assert_eq!(texts(&session, 0), ["<environment>", "hi"]);

        let (_dir, mut session) = new_session(&[("README.md", "# Hi\n")], Some("<environment>"));
        turn(&mut session, Prompt::text("hi")).await;
        assert_eq!(texts(&session, 0), ["<environment>", "hi"]);
    }

    #[tokio::test]
    async fn a_request_shares_all_of_the_previous_one_and_none_after_a_new_history() {
        let (_dir, mut session) = new_session(FILES, None);
        turn(&mut session, Prompt::text("one")).await;
        let (_, first) = session.prefix.measured;
        turn(&mut session, Prompt::text("two")).await;
        let (shared, total) = session.prefix.measured;
        assert_eq!(shared, first);
        assert!(total > first);

        session.replace_history(Vec::new());
        turn(&mut session, Prompt::text("three")).await;
        let (shared, _) = session.prefix.measured;
        assert_eq!(shared, 0);
    }

    #[test]
    fn declarations_are_compacted_only_for_a_small_window() {
        let declarations: Vec<tandem_providers::ToolDeclaration> = all()
            .iter()
            .map(|tool| tandem_providers::ToolDeclaration {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect();
        let size = |declarations: &[tandem_providers::ToolDeclaration]| -> usize {
            declarations
                .iter()
                .map(|tool| tool.description.len() + tool.parameters.to_string().len())
                .sum()
        };
        assert_eq!(
            fit_declarations(declarations.clone(), 200_000),
            declarations
        );
        let compact = fit_declarations(declarations.clone(), 4_000);
        assert!(size(&compact) * 3 < size(&declarations), "{compact:#?}");
        for (small, full) in compact.iter().zip(&declarations) {
            assert_eq!(small.name, full.name);
            assert!(full.description.starts_with(&small.description));
            // Every parameter keeps its name, and the required ones stay required.
            assert_eq!(
                small.parameters["properties"]
                    .as_object()
                    .map(|properties| properties.keys().collect::<Vec<_>>()),
                full.parameters["properties"]
                    .as_object()
                    .map(|properties| properties.keys().collect::<Vec<_>>()),
            );
            assert_eq!(small.parameters["required"], full.parameters["required"]);
        }
        let todos = compact
            .iter()
            .find(|tool| tool.name == "write_todos")
            .unwrap();
        let item = &todos.parameters["properties"]["todos"]["items"];
        assert!(
            item["properties"]["description"]["type"] == "string",
            "a parameter named description stays: {item}"
        );
        assert_eq!(
            item["properties"]["status"]["enum"]
                .as_array()
                .map(Vec::len),
            Some(4)
        );
        let read = compact
            .iter()
            .find(|tool| tool.name == "read_file")
            .unwrap();
        assert_eq!(
            read.parameters["properties"]["start_line"]["type"],
            full_type(&declarations, "read_file", "start_line")
        );
    }

    fn full_type(
        declarations: &[tandem_providers::ToolDeclaration],
        tool: &str,
        parameter: &str,
    ) -> Value {
        let tool = declarations.iter().find(|t| t.name == tool).unwrap();
        tool.parameters["properties"][parameter]["type"].clone()
    }
}
