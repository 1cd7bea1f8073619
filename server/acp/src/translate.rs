//! Tandem's agent protocol in the Agent Client Protocol's terms, as pure functions: events to
//! `session/update`s (tool calls with their kind, status, locations, diffs and output; plans;
//! usage), stop reasons, approval modes and models as modes and config options, permission
//! options and the decision an answer means, a prompt's content blocks to text and
//! attachments, and a saved session's turns to the updates that replay them. No I/O: the
//! server (`agent.rs`) sends what these build.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use tandem_agent::host::CommandInfo;
use tandem_agent::mcp::{McpServerSettings, McpTransport};
use tandem_agent::protocol::{
    CompressionReport, CompressionStatus, Event, RestoreReport, ShownFile, StopReason,
    SubagentEvent, ToolCallStatus, ToolCallUpdate, UsageReport,
};
use tandem_agent::store::ReplayTurn;
use tandem_agent::tools::{Todo, TodoStatus, ToolKind};
use tandem_agent::{ApprovalDecision, ApprovalMode, Attachment};

/// What an attachment shows of a file at most; the rest is left to `read_file` (as in the
/// language server).
pub const MAX_ATTACHMENT_BYTES: usize = 16 * 1024;

/// The approval modes, in the order a client lists them (the one that asks most first).
pub const MODES: [ApprovalMode; 3] = [
    ApprovalMode::Default,
    ApprovalMode::AutoEdit,
    ApprovalMode::Yolo,
];

/// The config option that chooses the approval mode (the same choice as `session/set_mode`).
pub const MODE_OPTION: &str = "mode";
/// The config option that chooses the model.
pub const MODEL_OPTION: &str = "model";

/// Turns a turn's events into updates, remembering which tool calls the client has been told
/// of (the first update of a call is a `tool_call`, every later one a `tool_call_update`) and
/// which run in a client terminal (shown in every later update of the call).
#[derive(Debug, Default)]
pub struct Translator {
    announced: HashSet<String>,
    terminals: HashMap<String, String>,
    /// Per `subagent` call: its child's tool calls (id, line shown), in order.
    children: HashMap<String, Vec<(String, String)>>,
    /// The diff each call last showed (an edit's preview while it waits for approval), shown
    /// again while it runs: the core's `executing` update carries none, and ACP replaces
    /// `content` whole, so sending nothing would be wrong and sending `[]` would blank the card.
    diffs: HashMap<String, tandem_agent::tools::FileDiff>,
}

impl Translator {
    /// Call `call_id` runs its command in the client's terminal `terminal_id`.
    pub fn note_terminal(&mut self, call_id: &str, terminal_id: &str) {
        self.terminals
            .insert(call_id.to_owned(), terminal_id.to_owned());
    }

    /// The updates `event` becomes; none for `turnFinished`, which answers the prompt instead.
    pub fn event(&mut self, event: &Event) -> Vec<acp::SessionUpdate> {
        match event {
            Event::TextChunk { text } => vec![message_chunk(text)],
            Event::ThoughtChunk { text } => vec![thought_chunk(text)],
            // ACP cannot take back text already streamed: say that the attempt failed, as a
            // thought, so the user knows why the answer may start again.
            Event::Retrying {
                attempt,
                delay_ms,
                error,
            } => vec![thought_chunk(&format!(
                "\n\nThe model request failed ({error}); retrying in {:.1} s (attempt {}). Text \
                 streamed since the request started is void.\n\n",
                *delay_ms as f64 / 1000.0,
                attempt + 1
            ))],
            Event::ToolCall(update) => {
                let terminal = self.terminals.get(&update.call_id).map(String::as_str);
                let remembered;
                let update = match (&update.diff, self.diffs.get(&update.call_id)) {
                    (Some(diff), _) => {
                        self.diffs.insert(update.call_id.clone(), diff.clone());
                        update
                    }
                    (None, Some(diff)) if update.status == ToolCallStatus::Executing => {
                        remembered = ToolCallUpdate {
                            diff: Some(diff.clone()),
                            ..update.clone()
                        };
                        &remembered
                    }
                    (None, _) => update,
                };
                if self.announced.insert(update.call_id.clone()) {
                    vec![acp::SessionUpdate::ToolCall(tool_call(update, terminal))]
                } else {
                    vec![acp::SessionUpdate::ToolCallUpdate(tool_call_update(
                        update, terminal,
                    ))]
                }
            }
            Event::Plan { todos } => vec![acp::SessionUpdate::Plan(plan(todos))],
            Event::Usage(report) => vec![acp::SessionUpdate::UsageUpdate(usage(report))],
            Event::Compression(report) => vec![message_chunk(&compression_note(report))],
            Event::Restored(report) => vec![message_chunk(&restore_note(report))],
            Event::TurnFinished { .. } => Vec::new(),
            Event::Subagent(nested) => self.subagent(nested).into_iter().collect(),
            // `Event` is non-exhaustive: a new kind of event is shown once a translation is
            // written for it, and is otherwise only logged.
            other => {
                tracing::debug!(?other, "an event ACP has no update for");
                Vec::new()
            }
        }
    }
}

impl Translator {
    /// A subagent's tool call becomes a line of the parent call's content (ACP has no nested
    /// calls): the whole list of the child's calls so far, with their status. Its other events
    /// (text, usage) stay inside: the parent's call reports the child's answer when it ends.
    fn subagent(&mut self, nested: &SubagentEvent) -> Option<acp::SessionUpdate> {
        let Event::ToolCall(update) = nested.event.as_ref() else {
            return None;
        };
        let mark = match update.status {
            ToolCallStatus::Executing if update.progress.is_none() => "→",
            ToolCallStatus::Success => "✓",
            ToolCallStatus::Error | ToolCallStatus::Cancelled => "✗",
            _ => return None,
        };
        let line = format!("{}: {mark} {}", nested.agent, update.title);
        let calls = self
            .children
            .entry(nested.parent_call_id.clone())
            .or_default();
        match calls.iter_mut().find(|(id, _)| *id == update.call_id) {
            Some((_, shown)) => *shown = line,
            None => calls.push((update.call_id.clone(), line)),
        }
        let text: Vec<&str> = calls.iter().map(|(_, line)| line.as_str()).collect();
        Some(acp::SessionUpdate::ToolCallUpdate(
            acp::ToolCallUpdate::new(
                nested.parent_call_id.clone(),
                acp::ToolCallUpdateFields::new().content(vec![text_content(text.join("\n"))]),
            ),
        ))
    }
}

/// The updates that show a saved turn again on `session/load`: the user's prompt, then what
/// was saved of the answer (its text, each tool call's final state, the plan, compressions and
/// restores).
pub fn replay(turn: &ReplayTurn) -> Vec<acp::SessionUpdate> {
    let mut updates = vec![acp::SessionUpdate::UserMessageChunk(
        acp::ContentChunk::new(acp::ContentBlock::from(turn.text.clone())),
    )];
    let mut translator = Translator::default();
    for event in &turn.events {
        updates.extend(translator.event(event));
    }
    updates
}

/// A turn's events as a saved session keeps them for replay (`session/load` of a session live
/// in this process replays these): the text gathered into one event per stretch (a retry voids
/// what streamed before it), each tool call once, in its final state, where it was first
/// announced, and the rest but streaming noise (thoughts, usage, a subagent's inner events).
pub fn replay_events(events: &[Event]) -> Vec<Event> {
    let mut kept: Vec<Event> = Vec::new();
    let mut text = String::new();
    let flush = |kept: &mut Vec<Event>, text: &mut String| {
        if !text.is_empty() {
            kept.push(Event::TextChunk {
                text: std::mem::take(text),
            });
        }
    };
    for event in events {
        match event {
            Event::TextChunk { text: chunk } => text.push_str(chunk),
            Event::Retrying { .. } => text.clear(),
            Event::ThoughtChunk { .. }
            | Event::Usage(_)
            | Event::Subagent(_)
            | Event::TurnFinished { .. } => {}
            Event::ToolCall(update) => {
                flush(&mut kept, &mut text);
                let earlier = kept.iter_mut().find(|kept| {
                    matches!(kept, Event::ToolCall(earlier) if earlier.call_id == update.call_id)
                });
                match earlier {
                    Some(earlier) => *earlier = event.clone(),
                    None => kept.push(event.clone()),
                }
            }
            other => {
                flush(&mut kept, &mut text);
                kept.push(other.clone());
            }
        }
    }
    flush(&mut kept, &mut text);
    kept
}

pub fn message_chunk(text: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(acp::ContentBlock::from(
        text.to_owned(),
    )))
}

pub fn thought_chunk(text: &str) -> acp::SessionUpdate {
    acp::SessionUpdate::AgentThoughtChunk(acp::ContentChunk::new(acp::ContentBlock::from(
        text.to_owned(),
    )))
}

/// ACP has `delete`, `move` and `switch_mode` kinds too; no Tandem tool is one.
pub fn tool_kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Think => acp::ToolKind::Think,
        ToolKind::Other => acp::ToolKind::Other,
        ToolKind::Fetch => acp::ToolKind::Fetch,
    }
}

/// Tandem's lifecycle folded into ACP's four states: everything before the call runs is
/// `pending`, a cancelled call `failed` (it did not do what it was for).
pub fn tool_status(status: ToolCallStatus) -> acp::ToolCallStatus {
    match status {
        ToolCallStatus::Validating
        | ToolCallStatus::Scheduled
        | ToolCallStatus::AwaitingApproval => acp::ToolCallStatus::Pending,
        ToolCallStatus::Executing => acp::ToolCallStatus::InProgress,
        ToolCallStatus::Success => acp::ToolCallStatus::Completed,
        ToolCallStatus::Error | ToolCallStatus::Cancelled => acp::ToolCallStatus::Failed,
    }
}

/// What a tool call shows: while it waits for approval, everything the user is asked to allow
/// (`details`, complete, and why it is asked whatever the mode); the client terminal its command
/// runs in; the proposed or made change as a diff; once finished, what the model was told.
pub fn tool_content(update: &ToolCallUpdate, terminal: Option<&str>) -> Vec<acp::ToolCallContent> {
    let mut content = Vec::new();
    if update.status == ToolCallStatus::AwaitingApproval {
        if let Some(reason) = &update.approval_reason {
            content.push(text_content(format!("Asked whatever the mode: {reason}")));
        }
        if let Some(details) = &update.details {
            content.push(text_content(fenced(details)));
        }
    }
    if let Some(terminal) = terminal {
        content.push(acp::ToolCallContent::Terminal(acp::Terminal::new(
            terminal.to_owned(),
        )));
    }
    if let Some(diff) = &update.diff {
        content.push(acp::ToolCallContent::Diff(
            acp::Diff::new(diff.path.clone(), diff.new_text.clone())
                .old_text(diff.old_text.clone()),
        ));
    }
    if let Some(output) = &update.output {
        content.push(text_content(fenced(output)));
    }
    if let Some(progress) = update.progress.as_ref().filter(|_| update.output.is_none()) {
        content.push(text_content(progress.clone()));
    }
    content
}

fn text_content(text: String) -> acp::ToolCallContent {
    acp::ToolCallContent::from(acp::ContentBlock::from(text))
}

fn locations(update: &ToolCallUpdate) -> Vec<acp::ToolCallLocation> {
    update
        .locations
        .iter()
        .map(|location| acp::ToolCallLocation::new(location.path.clone()).line(location.line))
        .collect()
}

fn raw_input(update: &ToolCallUpdate) -> Option<serde_json::Value> {
    (!update.raw_input.is_null()).then(|| update.raw_input.clone())
}

/// A call's first update: everything known of it.
pub fn tool_call(update: &ToolCallUpdate, terminal: Option<&str>) -> acp::ToolCall {
    acp::ToolCall::new(update.call_id.clone(), update.title.clone())
        .name(update.tool.clone())
        .kind(tool_kind(update.kind))
        .status(tool_status(update.status))
        .content(tool_content(update, terminal))
        .locations(locations(update))
        .raw_input(raw_input(update))
}

/// A later update of a call. ACP replaces `content` and `locations` whole, so an update with
/// nothing in one of them leaves it out rather than send it empty: the call's `executing`
/// update has no content or locations of its own, and an empty list would wipe the diff and
/// the place the card showed until the call completes.
pub fn tool_call_update(update: &ToolCallUpdate, terminal: Option<&str>) -> acp::ToolCallUpdate {
    let content = tool_content(update, terminal);
    let locations = locations(update);
    acp::ToolCallUpdate::new(
        update.call_id.clone(),
        acp::ToolCallUpdateFields::new()
            .title(update.title.clone())
            .name(update.tool.clone())
            .kind(tool_kind(update.kind))
            .status(tool_status(update.status))
            .content((!content.is_empty()).then_some(content))
            .locations((!locations.is_empty()).then_some(locations))
            .raw_input(raw_input(update)),
    )
}

/// The plan, whole (ACP replaces it on every update). ACP has no `cancelled` entries: a
/// cancelled item is shown completed, and says so.
pub fn plan(todos: &[Todo]) -> acp::Plan {
    acp::Plan::new(
        todos
            .iter()
            .map(|todo| {
                let (content, status) = match todo.status {
                    TodoStatus::Pending => {
                        (todo.description.clone(), acp::PlanEntryStatus::Pending)
                    }
                    TodoStatus::InProgress => {
                        (todo.description.clone(), acp::PlanEntryStatus::InProgress)
                    }
                    TodoStatus::Completed => {
                        (todo.description.clone(), acp::PlanEntryStatus::Completed)
                    }
                    TodoStatus::Cancelled => (
                        format!("{} (cancelled)", todo.description),
                        acp::PlanEntryStatus::Completed,
                    ),
                };
                acp::PlanEntry::new(content, acp::PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// How full the context window is: `used` of `size` tokens.
pub fn usage(report: &UsageReport) -> acp::UsageUpdate {
    acp::UsageUpdate::new(report.context_tokens, report.context_window)
}

fn compression_note(report: &CompressionReport) -> String {
    let what = match report.status {
        CompressionStatus::Compressed => format!(
            "Compressed the conversation: about {} tokens of history became {}.",
            report.tokens_before, report.tokens_after
        ),
        CompressionStatus::Skipped => "Nothing to compress yet.".to_owned(),
        CompressionStatus::Inflated => {
            "Compression would not have made the history smaller; it is unchanged.".to_owned()
        }
        CompressionStatus::Failed => "Compression failed; the history is unchanged.".to_owned(),
    };
    match &report.message {
        Some(message) => format!("\n\n_{what} {message}_\n\n"),
        None => format!("\n\n_{what}_\n\n"),
    }
}

fn restore_note(report: &RestoreReport) -> String {
    let mut note = match &report.turn_id {
        None => "Nothing to restore: no turn has changed files.".to_owned(),
        Some(turn) => {
            let files: Vec<String> = report
                .restored
                .iter()
                .map(|path| format!("`{}`", path.display()))
                .collect();
            if files.is_empty() {
                format!("Restored no file to how it was before turn {turn}.")
            } else {
                format!(
                    "Restored {} to how they were before turn {turn}.",
                    files.join(", ")
                )
            }
        }
    };
    for skipped in &report.skipped {
        note.push_str(&format!(
            " Left `{}` alone: {}.",
            skipped.path.display(),
            skipped.reason
        ));
    }
    format!("\n\n_{note}_\n\n")
}

/// How a turn ends for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// The prompt is answered with this stop reason; `note` (why it stopped early) is sent
    /// first as the agent's words.
    Stop {
        reason: acp::StopReason,
        note: Option<String>,
    },
    /// The prompt is answered with a JSON-RPC error carrying this message.
    Failed(String),
    /// The model cannot be used (no key, nothing answering): the prompt is answered with ACP's
    /// `auth_required` and this message, so the client offers the way to set Tandem up.
    NotSetUp(String),
}

/// The answer to a prompt whose turn ended with `reason` and `message`. A failed turn, or one
/// the model stopped by repeating itself, is an error the user reads; a response cut at its
/// cap (`network.maxResponseBytes`, `maxResponseSecs`) is ACP's `max_tokens`.
pub fn turn_end(reason: StopReason, message: Option<&str>) -> TurnEnd {
    let note = message.map(|message| format!("\n\n_{message}_\n\n"));
    let stop = |reason| TurnEnd::Stop { reason, note };
    match reason {
        StopReason::EndTurn => stop(acp::StopReason::EndTurn),
        StopReason::MaxTurns => stop(acp::StopReason::MaxTurnRequests),
        StopReason::ResponseLimit => stop(acp::StopReason::MaxTokens),
        StopReason::Cancelled => TurnEnd::Stop {
            reason: acp::StopReason::Cancelled,
            note: None,
        },
        StopReason::Error => match message {
            Some(message) if message.starts_with(tandem_providers::NOT_SET_UP) => {
                TurnEnd::NotSetUp(message.to_owned())
            }
            Some(message) => TurnEnd::Failed(message.to_owned()),
            None => TurnEnd::Failed("the turn failed; the log says why".to_owned()),
        },
        StopReason::LoopDetected => TurnEnd::Failed(match message {
            Some(message) => format!("Stopped: {message}"),
            None => "Stopped: the model kept repeating itself".to_owned(),
        }),
    }
}

/// A mode's id: its name in the settings and in `--approval-mode`.
pub fn mode_id(mode: ApprovalMode) -> &'static str {
    mode.name()
}

pub fn parse_mode(id: &str) -> Option<ApprovalMode> {
    MODES.into_iter().find(|mode| mode.name() == id)
}

fn mode_name(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Default => "Ask",
        ApprovalMode::AutoEdit => "Auto-edit",
        ApprovalMode::Yolo => "Yolo",
    }
}

fn mode_description(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Default => "Ask before edits, writes and shell commands",
        ApprovalMode::AutoEdit => "Edits and writes run; shell commands ask",
        ApprovalMode::Yolo => {
            "Nothing asks, except writes to protected paths and shell lines a deny rule cannot see \
             through"
        }
    }
}

pub fn modes(current: ApprovalMode) -> acp::SessionModeState {
    acp::SessionModeState::new(
        mode_id(current),
        MODES
            .into_iter()
            .map(|mode| {
                acp::SessionMode::new(mode_id(mode), mode_name(mode))
                    .description(mode_description(mode).to_owned())
            })
            .collect(),
    )
}

/// The models a session can switch to, and the one it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOption {
    pub names: Vec<String>,
    pub current: String,
}

/// The session's config options: the approval mode (category `mode`, the same choice as the
/// modes, for clients that prefer config options) and, when the settings configure models, the
/// model (category `model`).
pub fn config_options(
    mode: ApprovalMode,
    models: Option<&ModelOption>,
) -> Vec<acp::SessionConfigOption> {
    let mut options = vec![acp::SessionConfigOption::select(
        MODE_OPTION,
        "Approval mode",
        mode_id(mode),
        MODES
            .into_iter()
            .map(|mode| {
                acp::SessionConfigSelectOption::new(mode_id(mode), mode_name(mode))
                    .description(mode_description(mode).to_owned())
            })
            .collect::<Vec<_>>(),
    )
    .description("Which tool calls ask for permission first".to_owned())
    .category(acp::SessionConfigOptionCategory::Mode)];
    if let Some(models) = models {
        options.push(
            acp::SessionConfigOption::select(
                MODEL_OPTION,
                "Model",
                models.current.clone(),
                models
                    .names
                    .iter()
                    .map(|name| acp::SessionConfigSelectOption::new(name.clone(), name.clone()))
                    .collect::<Vec<_>>(),
            )
            .description("The model from the settings' `models` that answers".to_owned())
            .category(acp::SessionConfigOptionCategory::Model),
        );
    }
    options
}

/// The slash commands a session offers, as ACP lists them: name, description, and the
/// argument hint as unstructured input.
pub fn commands(commands: &[CommandInfo]) -> Vec<acp::AvailableCommand> {
    commands
        .iter()
        .map(|command| {
            let description = match &command.server {
                Some(server) => format!("{} (MCP server {server})", command.description),
                None => command.description.clone(),
            };
            let available = acp::AvailableCommand::new(command.name.clone(), description);
            match &command.argument_hint {
                Some(hint) => available.input(acp::AvailableCommandInput::Unstructured(
                    acp::UnstructuredCommandInput::new(hint.clone()),
                )),
                None => available,
            }
        })
        .collect()
}

/// The MCP servers a client offers with a session (`session/new`, `load`, `resume`), as
/// Tandem's settings say them: they join the settings' `mcpServers` for that session.
pub fn mcp_servers(servers: &[acp::McpServer]) -> BTreeMap<String, McpServerSettings> {
    // HTTP and SSE servers differ only in their transport.
    let remote = |url: &str, headers: &[acp::HttpHeader], transport| McpServerSettings {
        url: Some(url.to_owned()),
        transport: Some(transport),
        headers: headers
            .iter()
            .map(|header| (header.name.clone(), header.value.clone()))
            .collect(),
        ..McpServerSettings::default()
    };
    servers
        .iter()
        .filter_map(|server| {
            let (name, settings) = match server {
                acp::McpServer::Stdio(server) => (
                    &server.name,
                    McpServerSettings {
                        command: Some(server.command.display().to_string()),
                        args: server.args.clone(),
                        env: server
                            .env
                            .iter()
                            .map(|var| (var.name.clone(), var.value.clone()))
                            .collect(),
                        ..McpServerSettings::default()
                    },
                ),
                acp::McpServer::Http(server) => (
                    &server.name,
                    remote(&server.url, &server.headers, McpTransport::Http),
                ),
                acp::McpServer::Sse(server) => (
                    &server.name,
                    remote(&server.url, &server.headers, McpTransport::Sse),
                ),
                _ => {
                    tracing::warn!(
                        "the client offered an MCP server of a kind Tandem does not know; ignored"
                    );
                    return None;
                }
            };
            Some((name.clone(), settings))
        })
        .collect()
}

pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT_ONCE: &str = "reject_once";
pub const REJECT_ALWAYS: &str = "reject_always";

/// The answers a permission request offers, the safe one first (as everywhere in Tandem).
pub fn permission_options(update: &ToolCallUpdate) -> Vec<acp::PermissionOption> {
    let always = if update.tool == "shell" {
        "Always allow this command".to_owned()
    } else {
        format!("Always allow {}", update.tool)
    };
    vec![
        acp::PermissionOption::new(REJECT_ONCE, "Reject", acp::PermissionOptionKind::RejectOnce),
        acp::PermissionOption::new(
            REJECT_ALWAYS,
            "Always reject",
            acp::PermissionOptionKind::RejectAlways,
        ),
        acp::PermissionOption::new(
            ALLOW_ONCE,
            "Allow once",
            acp::PermissionOptionKind::AllowOnce,
        ),
        acp::PermissionOption::new(ALLOW_ALWAYS, always, acp::PermissionOptionKind::AllowAlways),
    ]
}

/// What the user's answer means. A cancelled request, and any answer Tandem did not offer,
/// reject. `reject_always` also refuses calls like it, without asking, for the rest of the
/// session.
pub fn decision(outcome: &acp::RequestPermissionOutcome) -> ApprovalDecision {
    let reject = ApprovalDecision::Reject { feedback: None };
    match outcome {
        acp::RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => ApprovalDecision::AllowOnce,
            ALLOW_ALWAYS => ApprovalDecision::AllowAlways,
            REJECT_ALWAYS => ApprovalDecision::RejectAlways { feedback: None },
            _ => reject,
        },
        _ => reject,
    }
}

/// The user's answer, with the feedback a rejection carries: ACP has no field for it, so a
/// client that lets the user say why (`tandem chat`'s "reject with feedback") puts it in the
/// response's `_meta` as `{"tandem": {"feedback": "…"}}`, and the model is told it with the
/// refusal. An allowing answer ignores it.
pub fn answer(response: &acp::RequestPermissionResponse) -> ApprovalDecision {
    let feedback = response
        .meta
        .as_ref()
        .and_then(|meta| meta.get("tandem"))
        .and_then(|tandem| tandem.get("feedback"))
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|feedback| !feedback.is_empty())
        .map(str::to_owned);
    match decision(&response.outcome) {
        ApprovalDecision::Reject { .. } => ApprovalDecision::Reject { feedback },
        ApprovalDecision::RejectAlways { .. } => ApprovalDecision::RejectAlways { feedback },
        decision => decision,
    }
}

/// `text` in a Markdown code fence longer than any run of backticks in it, so that it shows
/// exactly as it is.
pub fn fenced(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}\n{text}{newline}{fence}")
}

/// `ms` since the Unix epoch as an RFC 3339 UTC time (`2026-11-25T01:40:25Z`), what ACP's
/// `updatedAt` holds.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (year, month, day) =
        tandem_agent::setup::civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0));
    let rest = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A prompt's content blocks, sorted out.
#[derive(Debug, Default, PartialEq)]
pub struct PromptParts {
    /// The text blocks, joined.
    pub text: String,
    /// Embedded resources, ready to attach.
    pub attachments: Vec<Attachment>,
    /// Links to files, to read and attach (the server reads them).
    pub files: Vec<FileLink>,
    /// Image blocks, ready to send.
    pub images: Vec<tandem_providers::Image>,
}

/// A `resource_link` to a local file, or a `resource` embedding one (Zed's @-mentions), and
/// the lines it points at (`#L3:9`, `#L3-9`, `#L3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLink {
    pub path: PathBuf,
    pub lines: Option<(usize, usize)>,
    /// The text the client embedded: what the model is shown. It counts as read when it is
    /// the file's current text (those lines of it, for a selection).
    pub embedded: Option<String>,
}

/// Sorts a prompt's blocks: text, embedded text resources (attached as they are; those of local
/// files go with the links, so the caller can tell whether they are the file's current text),
/// links to files (read by the caller), links that are not files (named in an attachment), images
/// (brought to what every provider takes; a model that takes none refuses the prompt). Audio and
/// binary resources are refused: Tandem's model path cannot carry them.
pub fn prompt_parts(blocks: &[acp::ContentBlock]) -> Result<PromptParts, String> {
    let mut parts = PromptParts::default();
    let mut texts = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(text) => texts.push(text.text.clone()),
            acp::ContentBlock::ResourceLink(link) => match file_link(&link.uri) {
                Some(file) => parts.files.push(file),
                None => parts.attachments.push(Attachment {
                    label: format!("Link {}", link.title.as_deref().unwrap_or(&link.name)),
                    text: match &link.description {
                        Some(description) => format!("{}\n{description}", link.uri),
                        None => link.uri.clone(),
                    },
                    shown: None,
                }),
            },
            acp::ContentBlock::Resource(resource) => match &resource.resource {
                acp::EmbeddedResourceResource::TextResourceContents(contents) => {
                    match file_link(&contents.uri) {
                        Some(file) => parts.files.push(FileLink {
                            embedded: Some(contents.text.clone()),
                            ..file
                        }),
                        None => parts.attachments.push(Attachment {
                            label: format!("Resource {}", contents.uri),
                            text: cap(&contents.text, &contents.uri),
                            shown: None,
                        }),
                    }
                }
                acp::EmbeddedResourceResource::BlobResourceContents(contents) => {
                    return Err(format!(
                        "{} is binary; Tandem can attach only text resources",
                        contents.uri
                    ));
                }
                _ => return Err("a resource of a kind Tandem does not know".to_owned()),
            },
            acp::ContentBlock::Image(image) => {
                let prepared = tandem_agent::tools::view_image::from_base64(&image.data)
                    .map_err(|error| format!("image ({}): {error}", image.mime_type))?;
                parts.images.push(prepared);
            }
            acp::ContentBlock::Audio(_) => {
                return Err(
                    "Tandem cannot send audio to the model (promptCapabilities.audio is false)"
                        .to_owned(),
                );
            }
            _ => return Err("a content block of a kind Tandem does not know".to_owned()),
        }
    }
    parts.text = texts.join("\n");
    Ok(parts)
}

fn lines(first: usize, last: usize) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    }
}

/// The local file a `file://` URI names, with the lines of a `#L…` fragment.
pub fn file_link(uri: &str) -> Option<FileLink> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///path` (empty host) or `file://localhost/path`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let (path, fragment) = match rest.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (rest, None),
    };
    let path = percent_decode(path.split('?').next().unwrap_or(path))?;
    let lines = fragment.and_then(|fragment| {
        let range = fragment.strip_prefix('L')?;
        let (first, last) = match range.split_once([':', '-']) {
            Some((first, last)) => (first, last.trim_start_matches('L')),
            None => (range, range),
        };
        let first: usize = first.parse().ok()?;
        let last: usize = last.parse().ok()?;
        (first >= 1 && last >= first).then_some((first, last))
    });
    Some(FileLink {
        path: PathBuf::from(path),
        lines,
        embedded: None,
    })
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `text` cut at [`MAX_ATTACHMENT_BYTES`], with a note saying where the rest is.
fn cap(text: &str, source: &str) -> String {
    if text.len() <= MAX_ATTACHMENT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_ATTACHMENT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more bytes not shown; read {source} for the rest]",
        &text[..end],
        text.len() - end
    )
}

/// The attachment for a file the client embedded as `embedded` in a prompt: the file as
/// [`file_attachment`] attaches it when `current` (its whole text now, with its version) holds
/// the same text there, so that it counts as read; else the embedded text as given, which does
/// not (the model has not seen the file as it is).
pub fn embedded_attachment(
    shown_path: &str,
    path: &Path,
    embedded: &str,
    current: Option<(String, Option<i32>)>,
    lines_wanted: Option<(usize, usize)>,
) -> Attachment {
    // Editors may drop or add the last line break of a selection.
    let same =
        |a: &str, b: &str| a.trim_end_matches(['\r', '\n']) == b.trim_end_matches(['\r', '\n']);
    if let Some((content, version)) = current {
        let attachment = file_attachment(shown_path, path, content, version, lines_wanted);
        let shown_text = attachment.shown.as_ref().map(|shown| match shown.lines {
            Some((first, last)) => shown
                .content
                .split_inclusive('\n')
                .skip(first - 1)
                .take(last + 1 - first)
                .collect::<String>(),
            None => shown.content.clone(),
        });
        if shown_text.is_some_and(|text| same(&text, embedded)) {
            return attachment;
        }
    }
    let label = match lines_wanted {
        Some((first, last)) => format!("Selection in {shown_path} ({})", lines(first, last)),
        None => format!("File {shown_path}"),
    };
    Attachment {
        label,
        text: cap(embedded, shown_path),
        shown: None,
    }
}

/// The attachment for a linked file whose whole text is `content`: the lines linked, or the
/// whole file, cut at [`MAX_ATTACHMENT_BYTES`]. What is shown whole counts as read (the model
/// may edit it without reading it first), so it carries the file as `shown`.
pub fn file_attachment(
    shown_path: &str,
    path: &Path,
    content: String,
    version: Option<i32>,
    lines_wanted: Option<(usize, usize)>,
) -> Attachment {
    let (label, text, lines_shown) = match lines_wanted {
        Some((first, last)) => {
            let all: Vec<&str> = content.split_inclusive('\n').collect();
            let last = last.min(all.len()).max(first);
            let text: String = all
                .get(first - 1..last.min(all.len()))
                .map(|slice| slice.concat())
                .unwrap_or_default();
            (
                format!("Selection in {shown_path} ({})", lines(first, last)),
                text,
                Some((first, last)),
            )
        }
        None => (format!("File {shown_path}"), content.clone(), None),
    };
    let whole = text.len() <= MAX_ATTACHMENT_BYTES;
    Attachment {
        label,
        text: cap(&text, shown_path),
        shown: whole.then(|| ShownFile {
            path: path.to_path_buf(),
            content,
            version,
            lines: lines_shown,
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use expect_test::{expect, Expect};
    use serde_json::{json, Value};
    use tandem_agent::tools::{FileDiff, Location};
    use tandem_agent::{CompressionReport, SkippedFile};

    use super::*;

    fn call(status: ToolCallStatus) -> ToolCallUpdate {
        ToolCallUpdate {
            call_id: "c1".into(),
            tool: "edit".into(),
            title: "Edit src/lib.rs".into(),
            kind: ToolKind::Edit,
            status,
            raw_input: json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"}),
            details: None,
            approval_reason: None,
            locations: vec![Location {
                path: PathBuf::from("/w/src/lib.rs"),
                line: Some(3),
            }],
            diff: None,
            output: None,
            progress: None,
        }
    }

    /// Each case: the events of one turn, and the updates they become, as JSON lines.
    fn check(events: Vec<Event>, expect: Expect) {
        let mut translator = Translator::default();
        let lines: Vec<String> = events
            .iter()
            .flat_map(|event| translator.event(event))
            .map(|update| serde_json::to_string(&update).unwrap())
            .collect();
        expect.assert_eq(&lines.join("\n"));
    }

    #[test]
    fn text_and_thoughts_stream_as_chunks() {
        check(
            vec![
                Event::ThoughtChunk {
                    text: "Look first.".into(),
                },
                Event::TextChunk { text: "Hel".into() },
                Event::TextChunk { text: "lo".into() },
                Event::TurnFinished {
                    stop_reason: StopReason::EndTurn,
                    message: None,
                },
            ],
            expect![[r#"
                {"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Look first."}}
                {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}
                {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}"#]],
        );
    }

    #[test]
    fn a_tool_call_is_announced_once_then_updated_through_its_lifecycle() {
        let mut asking = call(ToolCallStatus::AwaitingApproval);
        asking.details = Some("--- a/src/lib.rs\n+++ b/src/lib.rs\n-a\n+b\n".into());
        asking.approval_reason = Some("it writes a protected path".into());
        asking.diff = Some(FileDiff {
            path: PathBuf::from("/w/src/lib.rs"),
            old_text: Some("a\n".into()),
            new_text: "b\n".into(),
        });
        // The core's `executing` update has no content or locations of its own: the card
        // keeps the diff and the place (the diff vanished from Zed's card until `completed`).
        let running = ToolCallUpdate {
            locations: Vec::new(),
            ..call(ToolCallStatus::Executing)
        };
        let mut done = asking.clone();
        done.status = ToolCallStatus::Success;
        done.details = None;
        done.approval_reason = None;
        done.output = Some("Edited src/lib.rs with ``` in it".into());
        check(
            vec![
                Event::ToolCall(call(ToolCallStatus::Validating)),
                Event::ToolCall(asking),
                Event::ToolCall(running),
                Event::ToolCall(done),
            ],
            expect![[r#"
                {"sessionUpdate":"tool_call","toolCallId":"c1","title":"Edit src/lib.rs","name":"edit","kind":"edit","locations":[{"path":"/w/src/lib.rs","line":3}],"rawInput":{"path":"src/lib.rs","old_string":"a","new_string":"b"}}
                {"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"edit","status":"pending","title":"Edit src/lib.rs","name":"edit","content":[{"type":"content","content":{"type":"text","text":"Asked whatever the mode: it writes a protected path"}},{"type":"content","content":{"type":"text","text":"```\n--- a/src/lib.rs\n+++ b/src/lib.rs\n-a\n+b\n```"}},{"type":"diff","path":"/w/src/lib.rs","oldText":"a\n","newText":"b\n"}],"locations":[{"path":"/w/src/lib.rs","line":3}],"rawInput":{"path":"src/lib.rs","old_string":"a","new_string":"b"}}
                {"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"edit","status":"in_progress","title":"Edit src/lib.rs","name":"edit","content":[{"type":"diff","path":"/w/src/lib.rs","oldText":"a\n","newText":"b\n"}],"rawInput":{"path":"src/lib.rs","old_string":"a","new_string":"b"}}
                {"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"edit","status":"completed","title":"Edit src/lib.rs","name":"edit","content":[{"type":"diff","path":"/w/src/lib.rs","oldText":"a\n","newText":"b\n"},{"type":"content","content":{"type":"text","text":"````\nEdited src/lib.rs with ``` in it\n````"}}],"locations":[{"path":"/w/src/lib.rs","line":3}],"rawInput":{"path":"src/lib.rs","old_string":"a","new_string":"b"}}"#]],
        );
    }

    #[test]
    fn a_command_in_the_clients_terminal_shows_it_in_every_later_update() {
        let mut shell = call(ToolCallStatus::Executing);
        shell.tool = "shell".into();
        shell.title = "Run `make`".into();
        shell.kind = ToolKind::Execute;
        shell.raw_input = json!({"command": "make"});
        shell.locations.clear();
        let mut done = shell.clone();
        done.status = ToolCallStatus::Success;
        done.output = Some("$ make\nexit code: 0".into());
        let mut translator = Translator::default();
        let first = translator.event(&Event::ToolCall(shell));
        translator.note_terminal("c1", "term-1");
        let lines: Vec<String> = first
            .into_iter()
            .chain(translator.event(&Event::ToolCall(done)))
            .map(|update| serde_json::to_string(&update).unwrap())
            .collect();
        expect![[r#"
            {"sessionUpdate":"tool_call","toolCallId":"c1","title":"Run `make`","name":"shell","kind":"execute","status":"in_progress","rawInput":{"command":"make"}}
            {"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"execute","status":"completed","title":"Run `make`","name":"shell","content":[{"type":"terminal","terminalId":"term-1"},{"type":"content","content":{"type":"text","text":"```\n$ make\nexit code: 0\n```"}}],"rawInput":{"command":"make"}}"#]].assert_eq(&lines.join("\n"));
    }

    #[test]
    fn a_long_calls_progress_is_its_content_until_it_finishes() {
        let mut running = call(ToolCallStatus::Executing);
        running.locations.clear();
        running.raw_input = Value::Null;
        let mut reported = running.clone();
        reported.progress = Some("2/5: fetching".into());
        let mut done = reported.clone();
        done.status = ToolCallStatus::Success;
        done.output = Some("fetched".into());
        let mut translator = Translator::default();
        let lines: Vec<String> = [running, reported, done]
            .into_iter()
            .flat_map(|update| translator.event(&Event::ToolCall(update)))
            .map(|update| serde_json::to_string(&update).unwrap())
            .collect();
        expect![[r#"
            {"sessionUpdate":"tool_call","toolCallId":"c1","title":"Edit src/lib.rs","name":"edit","kind":"edit","status":"in_progress"}
            {"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"edit","status":"in_progress","title":"Edit src/lib.rs","name":"edit","content":[{"type":"content","content":{"type":"text","text":"2/5: fetching"}}]}
            {"sessionUpdate":"tool_call_update","toolCallId":"c1","kind":"edit","status":"completed","title":"Edit src/lib.rs","name":"edit","content":[{"type":"content","content":{"type":"text","text":"```\nfetched\n```"}}]}"#]].assert_eq(&lines.join("\n"));
    }

    #[test]
    fn a_clients_mcp_servers_become_settings() {
        let offered: Vec<acp::McpServer> = serde_json::from_value(json!([
            {"name": "files", "command": "/usr/bin/files-mcp", "args": ["--root", "/w"],
             "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "http", "name": "docs", "url": "https://docs.example/mcp",
             "headers": [{"name": "Authorization", "value": "Bearer x"}]},
            {"type": "sse", "name": "old", "url": "https://old.example/sse", "headers": []}
        ]))
        .unwrap();
        let servers = mcp_servers(&offered);
        expect![[r#"
            {"docs":{"url":"https://docs.example/mcp","type":"http","headers":{"Authorization":"Bearer x"}},"files":{"command":"/usr/bin/files-mcp","args":["--root","/w"],"env":{"TOKEN":"t"}},"old":{"url":"https://old.example/sse","type":"sse"}}"#]]
        .assert_eq(&serde_json::to_string(&servers).unwrap());
    }

    #[test]
    fn statuses_and_kinds_map_onto_acp() {
        let statuses: Vec<Value> = [
            ToolCallStatus::Validating,
            ToolCallStatus::Scheduled,
            ToolCallStatus::AwaitingApproval,
            ToolCallStatus::Executing,
            ToolCallStatus::Success,
            ToolCallStatus::Error,
            ToolCallStatus::Cancelled,
        ]
        .into_iter()
        .map(|status| serde_json::to_value(tool_status(status)).unwrap())
        .collect();
        assert_eq!(
            statuses,
            [
                "pending",
                "pending",
                "pending",
                "in_progress",
                "completed",
                "failed",
                "failed"
            ]
        );
        let kinds: Vec<Value> = [
            ToolKind::Read,
            ToolKind::Search,
            ToolKind::Edit,
            ToolKind::Execute,
            ToolKind::Think,
            ToolKind::Other,
            ToolKind::Fetch,
        ]
        .into_iter()
        .map(|kind| serde_json::to_value(tool_kind(kind)).unwrap())
        .collect();
        assert_eq!(
            kinds,
            ["read", "search", "edit", "execute", "think", "other", "fetch"]
        );
    }

    /// A subagent's calls become the lines of its parent call's content; its other events
    /// stay inside.
    #[test]
    fn a_subagents_calls_are_listed_in_the_parent_call() {
        let nested = |event: Event| {
            Event::Subagent(SubagentEvent {
                parent_call_id: "s1".into(),
                agent: "codebase_investigator".into(),
                event: Box::new(event),
            })
        };
        let read = |status| ToolCallUpdate {
            call_id: "r1".into(),
            title: "Read src/lib.rs".into(),
            ..call(status)
        };
        check(
            vec![
                nested(Event::ToolCall(read(ToolCallStatus::Scheduled))),
                nested(Event::ToolCall(read(ToolCallStatus::Executing))),
                nested(Event::ToolCall(read(ToolCallStatus::Success))),
                nested(Event::TextChunk {
                    text: "Found.".into(),
                }),
                nested(Event::ToolCall(ToolCallUpdate {
                    call_id: "r2".into(),
                    title: "shell".into(),
                    ..call(ToolCallStatus::Error)
                })),
            ],
            expect![[r#"
                {"sessionUpdate":"tool_call_update","toolCallId":"s1","content":[{"type":"content","content":{"type":"text","text":"codebase_investigator: → Read src/lib.rs"}}]}
                {"sessionUpdate":"tool_call_update","toolCallId":"s1","content":[{"type":"content","content":{"type":"text","text":"codebase_investigator: ✓ Read src/lib.rs"}}]}
                {"sessionUpdate":"tool_call_update","toolCallId":"s1","content":[{"type":"content","content":{"type":"text","text":"codebase_investigator: ✓ Read src/lib.rs\ncodebase_investigator: ✗ shell"}}]}"#]],
        );
    }

    #[test]
    fn plans_usage_compression_and_restores() {
        check(
            vec![
                Event::Plan {
                    todos: vec![
                        Todo {
                            description: "Read".into(),
                            status: TodoStatus::Completed,
                        },
                        Todo {
                            description: "Fix".into(),
                            status: TodoStatus::InProgress,
                        },
                        Todo {
                            description: "Test".into(),
                            status: TodoStatus::Pending,
                        },
                        Todo {
                            description: "Docs".into(),
                            status: TodoStatus::Cancelled,
                        },
                    ],
                },
                Event::Usage(UsageReport {
                    context_tokens: 1200,
                    context_window: 200_000,
                    ..UsageReport::default()
                }),
                Event::Compression(CompressionReport {
                    status: CompressionStatus::Compressed,
                    tokens_before: 9000,
                    tokens_after: 1000,
                    message: None,
                }),
                Event::Restored(RestoreReport {
                    turn_id: Some("t2".into()),
                    restored: vec![PathBuf::from("src/a.rs")],
                    skipped: vec![SkippedFile {
                        path: PathBuf::from("src/b.rs"),
                        reason: "you changed it since".into(),
                    }],
                }),
                Event::Retrying {
                    attempt: 1,
                    delay_ms: 1500,
                    error: "503".into(),
                },
            ],
            expect![[r#"
                {"sessionUpdate":"plan","entries":[{"content":"Read","priority":"medium","status":"completed"},{"content":"Fix","priority":"medium","status":"in_progress"},{"content":"Test","priority":"medium","status":"pending"},{"content":"Docs (cancelled)","priority":"medium","status":"completed"}]}
                {"sessionUpdate":"usage_update","used":1200,"size":200000}
                {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\n\n_Compressed the conversation: about 9000 tokens of history became 1000._\n\n"}}
                {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\n\n_Restored `src/a.rs` to how they were before turn t2. Left `src/b.rs` alone: you changed it since._\n\n"}}
                {"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"\n\nThe model request failed (503); retrying in 1.5 s (attempt 2). Text streamed since the request started is void.\n\n"}}"#]],
        );
    }

    #[test]
    fn stop_reasons() {
        let end = |reason, message| format!("{:?}", turn_end(reason, message));
        expect![[r#"
            Stop { reason: EndTurn, note: None }
            Stop { reason: MaxTurnRequests, note: Some("\n\n_used the most model requests allowed (50)_\n\n") }
            Stop { reason: MaxTokens, note: Some("\n\n_the response passed 8 MiB_\n\n") }
            Stop { reason: Cancelled, note: None }
            Failed("no key for the model")
            NotSetUp("Tandem is not set up: nothing answers at http://localhost:11434/v1")
            Failed("Stopped: the same call five times")"#]]
        .assert_eq(
            &[
                end(StopReason::EndTurn, None),
                end(
                    StopReason::MaxTurns,
                    Some("used the most model requests allowed (50)"),
                ),
                end(StopReason::ResponseLimit, Some("the response passed 8 MiB")),
                end(StopReason::Cancelled, Some("cancelled by the user")),
                end(StopReason::Error, Some("no key for the model")),
                end(
                    StopReason::Error,
                    Some("Tandem is not set up: nothing answers at http://localhost:11434/v1"),
                ),
                end(StopReason::LoopDetected, Some("the same call five times")),
            ]
            .join("\n"),
        );
    }

    #[test]
    fn permission_answers_become_decisions() {
        let selected = |id: &str| {
            decision(&acp::RequestPermissionOutcome::Selected(
                acp::SelectedPermissionOutcome::new(id.to_owned()),
            ))
        };
        assert_eq!(selected(ALLOW_ONCE), ApprovalDecision::AllowOnce);
        assert_eq!(selected(ALLOW_ALWAYS), ApprovalDecision::AllowAlways);
        let reject = ApprovalDecision::Reject { feedback: None };
        assert_eq!(selected(REJECT_ONCE), reject);
        assert_eq!(
            selected(REJECT_ALWAYS),
            ApprovalDecision::RejectAlways { feedback: None }
        );
        assert_eq!(selected("something else"), reject);
        assert_eq!(decision(&acp::RequestPermissionOutcome::Cancelled), reject);
        // Feedback travels in `_meta`, for rejections only.
        let response = |option: &str, meta: serde_json::Value| {
            acp::RequestPermissionResponse::new(acp::RequestPermissionOutcome::Selected(
                acp::SelectedPermissionOutcome::new(option.to_owned()),
            ))
            .meta(meta.as_object().cloned().unwrap())
        };
        let why = json!({"tandem": {"feedback": " keep the build folder "}});
        assert_eq!(
            answer(&response(REJECT_ONCE, why.clone())),
            ApprovalDecision::Reject {
                feedback: Some("keep the build folder".into())
            }
        );
        assert_eq!(
            answer(&response(ALLOW_ONCE, why)),
            ApprovalDecision::AllowOnce
        );
        let ids: Vec<String> = permission_options(&call(ToolCallStatus::AwaitingApproval))
            .iter()
            .map(|option| format!("{} ({})", option.option_id.0, option.name))
            .collect();
        assert_eq!(
            ids,
            [
                "reject_once (Reject)",
                "reject_always (Always reject)",
                "allow_once (Allow once)",
                "allow_always (Always allow edit)"
            ]
        );
    }

    #[test]
    fn modes_and_config_options() {
        for mode in MODES {
            assert_eq!(parse_mode(mode_id(mode)), Some(mode));
        }
        assert_eq!(parse_mode("ask"), None);
        let models = ModelOption {
            names: vec!["fast".into(), "smart".into()],
            current: "smart".into(),
        };
        expect![[r#"
            [{"id":"mode","name":"Approval mode","description":"Which tool calls ask for permission first","category":"mode","type":"select","currentValue":"auto_edit","options":[{"value":"default","name":"Ask","description":"Ask before edits, writes and shell commands"},{"value":"auto_edit","name":"Auto-edit","description":"Edits and writes run; shell commands ask"},{"value":"yolo","name":"Yolo","description":"Nothing asks, except writes to protected paths and shell lines a deny rule cannot see through"}]},{"id":"model","name":"Model","description":"The model from the settings' `models` that answers","category":"model","type":"select","currentValue":"smart","options":[{"value":"fast","name":"fast"},{"value":"smart","name":"smart"}]}]"#]]
        .assert_eq(
            &serde_json::to_string(&config_options(ApprovalMode::AutoEdit, Some(&models)))
                .unwrap(),
        );
    }

    #[test]
    fn fences_outlast_the_backticks_inside() {
        assert_eq!(fenced("ls"), "```\nls\n```");
        assert_eq!(fenced("a\n"), "```\na\n```");
        assert_eq!(fenced("x ```` y"), "`````\nx ```` y\n`````");
    }

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_570_825_123), "2026-11-25T01:40:25Z");
    }

    #[test]
    fn prompt_blocks_become_text_attachments_and_links() {
        let blocks: Vec<acp::ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "Fix the bug in"},
            {"type": "resource_link", "name": "lib.rs", "uri": "file:///w/src/lib%20x.rs#L3:9"},
            {"type": "resource_link", "name": "docs", "uri": "https://example.com/docs", "description": "The API"},
            {"type": "resource", "resource": {"uri": "file:///w/notes.md", "text": "remember"}},
            {"type": "resource", "resource": {"uri": "zed:///agent/rules", "text": "be brief"}},
            {"type": "text", "text": "please"}
        ]))
        .unwrap();
        let parts = prompt_parts(&blocks).unwrap();
        assert_eq!(parts.text, "Fix the bug in\nplease");
        assert_eq!(
            parts.files,
            [
                FileLink {
                    path: PathBuf::from("/w/src/lib x.rs"),
                    lines: Some((3, 9)),
                    embedded: None,
                },
                FileLink {
                    path: PathBuf::from("/w/notes.md"),
                    lines: None,
                    embedded: Some("remember".into()),
                }
            ]
        );
        let attached: Vec<(&str, &str)> = parts
            .attachments
            .iter()
            .map(|a| (a.label.as_str(), a.text.as_str()))
            .collect();
        assert_eq!(
            attached,
            [
                ("Link docs", "https://example.com/docs\nThe API"),
                ("Resource zed:///agent/rules", "be brief"),
            ]
        );
        // A 1×1 PNG goes through; what is no image is refused, saying so.
        const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
        let image: Vec<acp::ContentBlock> = serde_json::from_value(
            json!([{"type": "image", "data": PIXEL, "mimeType": "image/png"}]),
        )
        .unwrap();
        let parts = prompt_parts(&image).unwrap();
        assert_eq!(
            (parts.images[0].width, parts.images[0].media_type.as_str()),
            (1, "image/png")
        );
        let not_an_image: Vec<acp::ContentBlock> = serde_json::from_value(
            json!([{"type": "image", "data": "AAAA", "mimeType": "image/png"}]),
        )
        .unwrap();
        assert_eq!(
            prompt_parts(&not_an_image).unwrap_err(),
            "image (image/png): not a PNG, JPEG, GIF or WebP image"
        );
    }

    #[test]
    fn file_links_and_their_lines() {
        let link = |uri| file_link(uri).map(|link| (link.path, link.lines));
        assert_eq!(
            link("file:///a/b.rs#L4"),
            Some((PathBuf::from("/a/b.rs"), Some((4, 4))))
        );
        assert_eq!(
            link("file://localhost/a/b.rs#L4-L6"),
            Some((PathBuf::from("/a/b.rs"), Some((4, 6))))
        );
        assert_eq!(
            link("file:///a/b.rs#L9:2"),
            Some((PathBuf::from("/a/b.rs"), None))
        );
        assert_eq!(link("zed:///agent/thread/1"), None);
        assert_eq!(link("file://server/share/x"), None);
    }

    #[test]
    fn file_attachments_show_the_lines_linked_and_count_as_read() {
        let text = "one\ntwo\nthree\n".to_owned();
        let whole = file_attachment("a.txt", Path::new("/w/a.txt"), text.clone(), None, None);
        assert_eq!(whole.label, "File a.txt");
        assert_eq!(whole.text, text);
        assert_eq!(whole.shown.as_ref().map(|shown| shown.lines), Some(None));
        let some = file_attachment(
            "a.txt",
            Path::new("/w/a.txt"),
            text.clone(),
            Some(4),
            Some((2, 9)),
        );
        assert_eq!(some.label, "Selection in a.txt (lines 2-3)");
        assert_eq!(some.text, "two\nthree\n");
        assert_eq!(
            some.shown
                .map(|shown| (shown.lines, shown.version, shown.content)),
            Some((Some((2, 3)), Some(4), text))
        );
        let big = "x".repeat(MAX_ATTACHMENT_BYTES + 10);
        let capped = file_attachment("big.txt", Path::new("/w/big.txt"), big, None, None);
        assert!(capped
            .text
            .ends_with("[… 10 more bytes not shown; read big.txt for the rest]"));
        assert!(capped.shown.is_none());
    }

    /// `session/load` of a live session replays what this process saw of its turns, kept as
    /// the saved file keeps them.
    #[test]
    fn a_live_turn_is_kept_for_replay_as_a_saved_one_is() {
        let mut running = call(ToolCallStatus::Executing);
        running.output = None;
        let mut done = call(ToolCallStatus::Success);
        done.output = Some("ok".into());
        let chunk = |text: &str| Event::TextChunk { text: text.into() };
        let kept = replay_events(&[
            Event::ThoughtChunk { text: "hmm".into() },
            chunk("lost"),
            Event::Retrying {
                attempt: 0,
                delay_ms: 10,
                error: "503".into(),
            },
            chunk("Let me "),
            chunk("edit."),
            Event::ToolCall(call(ToolCallStatus::Validating)),
            Event::Usage(UsageReport::default()),
            Event::ToolCall(running),
            Event::ToolCall(done.clone()),
            chunk("Done."),
            Event::TurnFinished {
                stop_reason: StopReason::EndTurn,
                message: None,
            },
        ]);
        assert_eq!(
            kept,
            [chunk("Let me edit."), Event::ToolCall(done), chunk("Done.")]
        );
    }

    /// Zed sends @-mentioned files embedded: what the model is shown counts as read when it
    /// is the file's text now (an edit right after the mention failed as unread).
    #[test]
    fn an_embedded_file_counts_as_read_when_it_is_the_files_current_text() {
        let file = "one\ntwo\nthree\n";
        let attach = |embedded: &str, current: Option<&str>, lines| {
            let attachment = embedded_attachment(
                "a.txt",
                Path::new("/w/a.txt"),
                embedded,
                current.map(|text| (text.to_owned(), Some(7))),
                lines,
            );
            let shown = attachment
                .shown
                .map(|shown| format!(" shown {:?} v{:?}", shown.lines, shown.version))
                .unwrap_or_default();
            format!("{} = {:?}{shown}", attachment.label, attachment.text)
        };
        let cases = [
            attach(file, Some(file), None),
            attach("one\ntwo\nthree", Some(file), None),
            attach("one\nTWO\nthree\n", Some(file), None),
            attach(file, None, None),
            attach("two\nthree", Some(file), Some((2, 3))),
            attach("two\n", Some(file), Some((2, 3))),
        ];
        expect![[r#"
            File a.txt = "one\ntwo\nthree\n" shown None vSome(7)
            File a.txt = "one\ntwo\nthree\n" shown None vSome(7)
            File a.txt = "one\nTWO\nthree\n"
            File a.txt = "one\ntwo\nthree\n"
            Selection in a.txt (lines 2-3) = "two\nthree\n" shown Some((2, 3)) vSome(7)
            Selection in a.txt (lines 2-3) = "two\n""#]]
        .assert_eq(&cases.join("\n"));
    }

    #[test]
    fn a_saved_turn_replays_as_the_prompt_then_its_events() {
        let mut done = call(ToolCallStatus::Success);
        done.output = Some("ok".into());
        let turn = ReplayTurn {
            turn_id: "t1".into(),
            text: "Fix it".into(),
            events: vec![
                Event::ToolCall(done),
                Event::TextChunk {
                    text: "Fixed.".into(),
                },
            ],
            stop_reason: StopReason::EndTurn,
        };
        let lines: Vec<String> = replay(&turn)
            .iter()
            .map(|update| serde_json::to_string(update).unwrap())
            .collect();
        expect![[r#"
            {"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Fix it"}}
            {"sessionUpdate":"tool_call","toolCallId":"c1","title":"Edit src/lib.rs","name":"edit","kind":"edit","status":"completed","content":[{"type":"content","content":{"type":"text","text":"```\nok\n```"}}],"locations":[{"path":"/w/src/lib.rs","line":3}],"rawInput":{"path":"src/lib.rs","old_string":"a","new_string":"b"}}
            {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Fixed."}}"#]]
        .assert_eq(&lines.join("\n"));
    }
}
