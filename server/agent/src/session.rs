//! The agent loop. A `Session` holds a conversation; `run_turn` answers one prompt: call the
//! model, validate and run the tool calls it makes (read-only ones in parallel, the others one
//! at a time in order, asking for approval where the policy says so), send the results back,
//! and repeat until the model answers without tools — or the turn is cancelled, runs out of
//! turns, loops, or fails. Whatever happens, the history stays valid: every tool call gets a
//! result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tandem_providers::{
    ChatRequest, Message, Model, Part, ProviderError, Response, Role, StreamEvent, ToolCall,
    ToolDeclaration, ToolResult,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalPolicy, Rule, Verdict};
use crate::ide::{IdeContext, IdeState};
use crate::protocol::{
    ApprovalDecision, Attachment, Event, StopReason, ToolCallStatus, ToolCallUpdate,
};
use crate::tools::{Location, Tool, ToolContext, ToolError, ToolOutput};

/// How a session behaves.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub system_prompt: String,
    /// Model requests per prompt before the turn stops with `max_turns`.
    pub max_turns: u32,
    pub approval: ApprovalPolicy,
    /// Sent ahead of the first prompt of the session (`environment::environment_context`).
    pub environment: Option<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system_prompt: String::new(),
            max_turns: 100,
            approval: ApprovalPolicy::default(),
            environment: None,
        }
    }
}

/// How long a cancelled tool may take to stop by itself (and report) before it is dropped.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// How long the first prompt waits for the symbol index before its repo map is built from
/// what is parsed by then (the rest is parsed by later calls).
const REPO_MAP_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The same call (tool and arguments) this many times in a row is a loop.
const REPEATED_CALL_LIMIT: usize = 5;

/// What a front end hands a turn: where events go, where approvals come from, and the token
/// that cancels it.
pub struct TurnIo<'a> {
    pub events: &'a mpsc::UnboundedSender<Event>,
    pub approvals: &'a mut mpsc::UnboundedReceiver<(String, ApprovalDecision)>,
    pub cancel: CancellationToken,
}

impl TurnIo<'_> {
    fn emit(&self, event: Event) {
        // A front end that stopped listening loses events, not the turn.
        let _ = self.events.send(event);
    }
}

pub struct Session {
    model: Model,
    tools: Vec<Arc<dyn Tool>>,
    ctx: ToolContext,
    config: AgentConfig,
    history: Vec<Message>,
    /// "Allow always" answers, for the rest of the session.
    session_allow: Vec<Rule>,
    /// The last call and how many times in a row it was made.
    last_call: Option<(String, usize)>,
    /// What the model has been told about the editor.
    ide: IdeContext,
    /// The repo map sent with the environment, once computed (`Some(None)`: there is none).
    /// Computed once per session: the first request is the prefix every later one repeats, and
    /// a provider's prompt cache only helps while that prefix stays the same.
    repo_map: Option<Option<String>>,
}

/// One prompt from the user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Context the front end attaches (a selection, a file, a diagnostic).
    pub context: Vec<Attachment>,
    /// What the editor shows now; `None` from front ends without an editor.
    pub ide: Option<IdeState>,
    /// The front end's id for the turn (checkpoints and saved sessions name turns by it); the
    /// session numbers turns itself when it is `None`.
    pub turn_id: Option<String>,
}

impl Prompt {
    pub fn text(text: impl Into<String>) -> Self {
        Prompt {
            text: text.into(),
            ..Prompt::default()
        }
    }
}

/// How a turn ended, with what to tell the user.
struct Stop(StopReason, Option<String>);

impl Session {
    pub fn new(
        model: Model,
        tools: Vec<Arc<dyn Tool>>,
        ctx: ToolContext,
        config: AgentConfig,
    ) -> Self {
        Session {
            model,
            tools,
            ctx,
            config,
            history: Vec::new(),
            session_allow: Vec::new(),
            last_call: None,
            ide: IdeContext::default(),
            repo_map: None,
        }
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    fn declarations(&self) -> Vec<ToolDeclaration> {
        self.tools
            .iter()
            .map(|tool| ToolDeclaration {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect()
    }

    /// Uses `model` from the next request on (the user changed settings).
    pub fn set_model(&mut self, model: Model) {
        self.model = model;
    }

    /// Uses `config` from the next turn on. The environment is only sent on a session's first
    /// prompt, so changing it later has no effect.
    pub fn set_config(&mut self, config: AgentConfig) {
        self.config = config;
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Reads and writes through `editor` from the next tool call on (inline chat scopes a turn's
    /// writes; the language server swaps in a reconfigured editor).
    pub fn set_editor(&mut self, editor: Arc<dyn crate::editor::Editor>) {
        self.ctx.editor = editor;
    }

    pub fn tool_context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Replaces the conversation (after compression, or to start over). The model no longer
    /// has what it was told about the editor, so the next prompt tells it all again.
    pub fn replace_history(&mut self, history: Vec<Message>) {
        self.history = history;
        self.ide.reset();
    }

    /// Builds a session from a saved one (`SessionStore::open`): its history, checkpoints and
    /// turn count, appending to `log` from now on.
    pub fn resume(
        model: Model,
        tools: Vec<Arc<dyn Tool>>,
        ctx: ToolContext,
        config: AgentConfig,
        loaded: &crate::store::LoadedSession,
        log: crate::store::SessionLog,
    ) -> Self {
        let mut session = Session::new(model, tools, ctx, config);
        session.history = loaded.history.clone();
        session.set_log(log);
        session
    }

    /// Appends the session to `log` from now on (a new session's file, from
    /// `SessionStore::create`).
    pub fn set_log(&mut self, log: crate::store::SessionLog) {
        let _ = log;
    }

    /// The saved session's id, when the session is saved.
    pub fn log_id(&self) -> Option<&str> {
        None
    }

    /// The checkpoints of the turns that changed files, oldest first.
    pub fn checkpoints(&self) -> &[crate::checkpoint::TurnCheckpoint] {
        &[]
    }

    /// Compresses the history now, whatever its size (`/compress`, `tandem/compress`); sends
    /// and returns the report. Re-enables automatic compression after an inflated attempt.
    pub async fn compress(&mut self, io: &mut TurnIo<'_>) -> crate::protocol::CompressionReport {
        let _ = io;
        crate::protocol::CompressionReport {
            status: crate::protocol::CompressionStatus::Skipped,
            tokens_before: 0,
            tokens_after: 0,
            message: None,
        }
    }

    /// Puts back the files changed by turn `turn_id` (the latest turn that changed files when
    /// `None`) and by every later turn, as they were before it (`/restore`, `tandem/restore`);
    /// sends and returns the report.
    pub async fn restore(
        &mut self,
        turn_id: Option<&str>,
        io: &mut TurnIo<'_>,
    ) -> crate::protocol::RestoreReport {
        let _ = (turn_id, io);
        crate::protocol::RestoreReport::default()
    }

    /// Answers one prompt. Returns how the turn ended (also sent as `TurnFinished`).
    pub async fn run_turn(&mut self, prompt: Prompt, io: &mut TurnIo<'_>) -> StopReason {
        // What repo maps (the first prompt's, the repo_map tool's) rank toward.
        if let Some(state) = &prompt.ide {
            let active = state.active.as_ref().map(|active| active.path.clone());
            self.ctx
                .session
                .set_editor_focus(active, state.open.clone());
        }
        self.ctx
            .session
            .set_mentioned(crate::symbols::identifiers_in(&prompt.text));
        let mut parts = Vec::new();
        if let Some(environment) = self.config.environment.clone() {
            if self.history.is_empty() {
                parts.push(Part::Text { text: environment });
                if let Some(text) = self.first_repo_map(&io.cancel).await {
                    parts.push(Part::Text { text });
                }
            }
        }
        if let Some(state) = &prompt.ide {
            let workspace = self.ctx.workspace.clone();
            if let Some(text) = self.ide.render(state, &|path| workspace.display(path)) {
                parts.push(Part::Text { text });
            }
        }
        let mut text = prompt.text;
        for attachment in prompt.context {
            text.push_str(&format!(
                "\n\n<context label=\"{}\">\n{}\n</context>",
                attachment.label, attachment.text
            ));
        }
        parts.push(Part::Text { text });
        // After a turn that ended on a failed model request the last message is the user's;
        // the new prompt joins it so that roles keep alternating.
        match self.history.last_mut() {
            Some(last) if last.role == Role::User => last.parts.extend(parts),
            _ => self.history.push(Message {
                role: Role::User,
                parts,
            }),
        }
        self.last_call = None;
        let Stop(reason, message) = self.turn(io).await;
        io.emit(Event::TurnFinished {
            stop_reason: reason,
            message,
        });
        reason
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
            crate::symbols::refresh_index(&ctx, Some(deadline)).await?;
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

    /// Tells the model, at the end of the newest user message (so never between a tool call and
    /// its result), which files it has seen that changed since.
    fn remind_of_changed_files(&mut self) {
        let changed = self
            .ctx
            .session
            .take_changed_files(self.ctx.editor.as_ref());
        if changed.is_empty() {
            return;
        }
        let list: Vec<String> = changed
            .iter()
            .map(|path| format!("- {}", self.ctx.workspace.display(path)))
            .collect();
        let text = format!(
            "<system-reminder>\nThese files changed since you last read them (the user or a \
             command edited them); what you saw of them is out of date. Read them again before \
             you rely on or edit them:\n{}\n</system-reminder>",
            list.join("\n")
        );
        if let Some(last) = self.history.last_mut().filter(|m| m.role == Role::User) {
            last.parts.push(Part::Text { text });
        }
    }

    async fn turn(&mut self, io: &mut TurnIo<'_>) -> Stop {
        for _ in 0..self.config.max_turns {
            let (response, stop) = self.model_request(io).await;
            let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
            if !response.message.parts.is_empty() {
                self.history.push(response.message);
            }
            if let Some(stop) = stop {
                // The model was cut off: its calls (if any) are answered as not run.
                self.answer_unrun(&calls, "not run: the turn ended before it could run");
                return stop;
            }
            if calls.is_empty() {
                return Stop(StopReason::EndTurn, None);
            }
            if let Some(stop) = self.detect_repeated_call(&calls) {
                self.answer_unrun(
                    &calls,
                    "not run: you repeated the same call; try something different",
                );
                return stop;
            }
            let (results, stop) = self.run_calls(&calls, io).await;
            self.history.push(Message {
                role: Role::User,
                parts: results.into_iter().map(Part::ToolResult).collect(),
            });
            if let Some(stop) = stop {
                return stop;
            }
        }
        Stop(
            StopReason::MaxTurns,
            Some(format!(
                "stopped after {} model requests (the `maxTurns` setting)",
                self.config.max_turns
            )),
        )
    }

    /// One model request, streamed to the front end. Returns the (possibly partial) response
    /// and, when the turn must end, why.
    async fn model_request(&mut self, io: &mut TurnIo<'_>) -> (Response, Option<Stop>) {
        self.remind_of_changed_files();
        let request = ChatRequest {
            system: self.config.system_prompt.clone(),
            messages: self.history.clone(),
            tools: self.declarations(),
            ..ChatRequest::default()
        };
        let mut stream = self.model.stream(request, io.cancel.clone());
        let mut response = Response::default();
        let mut repetition = TextLoopDetector::default();
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(ProviderError::Cancelled) => {
                    return (response, Some(Stop(StopReason::Cancelled, None)));
                }
                Err(error) => {
                    // The partial answer is dropped: it may end mid-sentence or mid-call.
                    return (
                        Response::default(),
                        Some(Stop(StopReason::Error, Some(error.to_string()))),
                    );
                }
            };
            response.push(&event);
            match event {
                StreamEvent::TextDelta { text } => {
                    io.emit(Event::TextChunk { text: text.clone() });
                    if repetition.push(&text) {
                        return (
                            response,
                            Some(Stop(
                                StopReason::LoopDetected,
                                Some(
                                    "the model kept repeating the same text; the turn was stopped"
                                        .into(),
                                ),
                            )),
                        );
                    }
                }
                StreamEvent::ThoughtDelta { text } => io.emit(Event::ThoughtChunk { text }),
                StreamEvent::Usage(usage) => io.emit(Event::Usage(crate::protocol::UsageReport {
                    usage,
                    ..Default::default()
                })),
                StreamEvent::Retrying {
                    attempt,
                    delay,
                    error,
                } => {
                    repetition = TextLoopDetector::default();
                    io.emit(Event::Retrying {
                        attempt,
                        delay_ms: delay.as_millis() as u64,
                        error,
                    });
                }
                _ => {}
            }
        }
        (response, None)
    }

    fn answer_unrun(&mut self, calls: &[ToolCall], why: &str) {
        if calls.is_empty() {
            return;
        }
        let parts = calls
            .iter()
            .map(|call| {
                Part::ToolResult(ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: why.to_owned(),
                    is_error: true,
                })
            })
            .collect();
        self.history.push(Message {
            role: Role::User,
            parts,
        });
    }

    fn detect_repeated_call(&mut self, calls: &[ToolCall]) -> Option<Stop> {
        for call in calls {
            let key = format!("{}\u{0}{}", call.name, call.arguments);
            let count = match &self.last_call {
                Some((last, count)) if *last == key => count + 1,
                _ => 1,
            };
            self.last_call = Some((key, count));
            if count >= REPEATED_CALL_LIMIT {
                return Some(Stop(
                    StopReason::LoopDetected,
                    Some(format!(
                        "the model called {} with the same arguments {count} times in a row; the turn was stopped",
                        call.name
                    )),
                ));
            }
        }
        None
    }

    /// Runs the calls: each is validated and scheduled first; then consecutive read-only calls
    /// run together and each mutating call on its own, in the order given, after the approval
    /// policy allows it (deny rules apply to every tool). Every call gets a result, in order.
    async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        io: &mut TurnIo<'_>,
    ) -> (Vec<ToolResult>, Option<Stop>) {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for (slot, call) in results.iter_mut().zip(calls) {
            self.update(io.events, call, ToolCallStatus::Validating, None);
            match self.validate(call) {
                Ok(_) => self.update(io.events, call, ToolCallStatus::Scheduled, None),
                Err(message) => {
                    self.update(
                        io.events,
                        call,
                        ToolCallStatus::Error,
                        Some(message.clone()),
                    );
                    *slot = Some(Outcome::error(call, message).result);
                }
            }
        }
        let mut stop = None;
        let mut index = 0;
        while index < calls.len() {
            if io.cancel.is_cancelled() || stop.is_some() {
                break;
            }
            let parallel = self.is_read_only(&calls[index]);
            let end = if parallel {
                index
                    + calls[index..]
                        .iter()
                        .take_while(|call| self.is_read_only(call))
                        .count()
            } else {
                index + 1
            };
            let mut to_run = Vec::new();
            for offset in index..end {
                if results[offset].is_some() {
                    continue;
                }
                let call = &calls[offset];
                match self.approve(call, io).await {
                    Approval::Run => to_run.push(offset),
                    Approval::Refused(message) => {
                        self.update(
                            io.events,
                            call,
                            ToolCallStatus::Error,
                            Some(message.clone()),
                        );
                        results[offset] = Some(Outcome::error(call, message).result);
                    }
                    Approval::Cancelled => break,
                }
            }
            let outcomes = futures::future::join_all(
                to_run
                    .iter()
                    .map(|&offset| self.run_call(&calls[offset], io.events, io.cancel.clone())),
            )
            .await;
            for (offset, outcome) in to_run.into_iter().zip(outcomes) {
                if outcome.fatal && stop.is_none() {
                    stop = Some(Stop(
                        StopReason::Error,
                        Some(outcome.result.content.clone()),
                    ));
                }
                results[offset] = Some(outcome.result);
            }
            index = end;
        }
        let cancelled = io.cancel.is_cancelled();
        let results = results
            .into_iter()
            .zip(calls)
            .map(|(result, call)| {
                result.unwrap_or_else(|| {
                    let why = if cancelled {
                        "cancelled by the user before it ran"
                    } else {
                        "not run: the turn ended"
                    };
                    self.update(
                        io.events,
                        call,
                        ToolCallStatus::Cancelled,
                        Some(why.to_owned()),
                    );
                    Outcome::error(call, why.to_owned()).result
                })
            })
            .collect();
        if cancelled && stop.is_none() {
            stop = Some(Stop(StopReason::Cancelled, None));
        }
        (results, stop)
    }

    fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    fn is_read_only(&self, call: &ToolCall) -> bool {
        self.tool(&call.name).is_some_and(|tool| !tool.mutates())
    }

    fn update(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        status: ToolCallStatus,
        output: Option<String>,
    ) {
        self.send_update(events, call, status, output, ToolOutput::default());
    }

    fn send_update(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        status: ToolCallStatus,
        output: Option<String>,
        details: ToolOutput,
    ) {
        let (title, kind) = match self.tool(&call.name) {
            Some(tool) => (tool.title(&call.arguments), tool.kind()),
            None => (call.name.clone(), crate::tools::ToolKind::Other),
        };
        let _ = events.send(Event::ToolCall(ToolCallUpdate {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            title,
            kind,
            status,
            locations: details.locations,
            diff: details.diff,
            output,
        }));
    }

    /// Checks the call against the tool's schema. `Err` is the message for the model.
    fn validate(&self, call: &ToolCall) -> Result<&Arc<dyn Tool>, String> {
        let Some(tool) = self.tool(&call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|tool| tool.name()).collect();
            return Err(format!(
                "there is no tool named `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            ));
        };
        crate::tools::check_args(tool.as_ref(), &call.arguments)?;
        Ok(tool)
    }

    /// What the approval policy (and the user, when it asks) says about a validated call.
    async fn approve(&mut self, call: &ToolCall, io: &mut TurnIo<'_>) -> Approval {
        let Some(tool) = self.tool(&call.name).cloned() else {
            return Approval::Refused(format!("there is no tool named `{}`", call.name));
        };
        let mut policy = self.config.approval.clone();
        policy.allow.extend(self.session_allow.iter().cloned());
        match policy.verdict(tool.name(), tool.kind(), tool.mutates(), &call.arguments) {
            Verdict::Allow => Approval::Run,
            Verdict::Deny(why) => Approval::Refused(format!(
                "The user's settings refuse this call ({why}). Do not retry it; find another way or ask the user."
            )),
            Verdict::Ask => {
                // The user approves what they can see: an edit's prompt carries its diff.
                let preview = tokio::select! {
                    biased;
                    () = io.cancel.cancelled() => return Approval::Cancelled,
                    preview = AssertUnwindSafe(tool.preview(&call.arguments, &self.ctx))
                        .catch_unwind() => preview.unwrap_or_else(|_| {
                            tracing::error!(tool = call.name, "preview panicked; asking without it");
                            None
                        }),
                };
                let locations = preview
                    .iter()
                    .map(|diff| {
                        // The first line the change touches, so "follow the agent" shows it.
                        let line = diff.old_text.as_deref().map(|old| {
                            let breaks = old
                                .bytes()
                                .zip(diff.new_text.bytes())
                                .take_while(|(old, new)| old == new)
                                .filter(|(byte, _)| *byte == b'\n')
                                .count();
                            u32::try_from(breaks + 1).unwrap_or(u32::MAX)
                        });
                        Location { path: diff.path.clone(), line }
                    })
                    .collect();
                let details = ToolOutput {
                    text: String::new(),
                    locations,
                    diff: preview,
                };
                let status = ToolCallStatus::AwaitingApproval;
                self.send_update(io.events, call, status, None, details);
                loop {
                    let answer = tokio::select! {
                        biased;
                        () = io.cancel.cancelled() => return Approval::Cancelled,
                        answer = io.approvals.recv() => answer,
                    };
                    let Some((call_id, decision)) = answer else {
                        return Approval::Refused("No one could approve this call (the front end is gone).".into());
                    };
                    if call_id != call.id {
                        tracing::warn!(call_id, expected = call.id, "approval for a call that is not waiting");
                        continue;
                    }
                    return match decision {
                        ApprovalDecision::AllowOnce => Approval::Run,
                        ApprovalDecision::AllowAlways => {
                            self.session_allow.push(ApprovalPolicy::rule_for(tool.name(), &call.arguments));
                            Approval::Run
                        }
                        ApprovalDecision::Reject { feedback } => Approval::Refused(match feedback {
                            Some(feedback) if !feedback.trim().is_empty() => format!(
                                "The user rejected this call and said: {feedback}. Do not retry it as it was."
                            ),
                            _ => "The user rejected this call. Do not retry it; ask the user how to proceed or try something else.".to_owned(),
                        }),
                    };
                }
            }
        }
    }

    /// Runs one validated, approved call, reporting its lifecycle from `executing` on.
    async fn run_call(
        &self,
        call: &ToolCall,
        events: &mpsc::UnboundedSender<Event>,
        cancel: CancellationToken,
    ) -> Outcome {
        let Some(tool) = self.tool(&call.name).cloned() else {
            return Outcome::error(call, format!("there is no tool named `{}`", call.name));
        };
        self.update(events, call, ToolCallStatus::Executing, None);
        let ctx = ToolContext {
            cancel: cancel.clone(),
            ..self.ctx.clone()
        };
        let mut run =
            std::pin::pin!(AssertUnwindSafe(tool.run(call.arguments.clone(), &ctx)).catch_unwind());
        let finished = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            result = &mut run => Some(result),
        };
        let result = match finished {
            Some(result) => result,
            None => {
                // A tool that watches the token (the shell kills its process group) stops and
                // says what it got done; one that doesn't is dropped after the grace period.
                let message = match tokio::time::timeout(CANCEL_GRACE, run).await {
                    Ok(Ok(Err(ToolError::Respond(message)))) => message,
                    Ok(Ok(Ok(output))) => format!(
                        "cancelled by the user; it finished anyway with:\n{}",
                        output.text
                    ),
                    _ => "cancelled by the user while it ran".to_owned(),
                };
                self.update(
                    events,
                    call,
                    ToolCallStatus::Cancelled,
                    Some(message.clone()),
                );
                return Outcome::error(call, message);
            }
        };
        match result {
            Ok(Ok(output)) => {
                if call.name == "write_todos" {
                    let _ = events.send(Event::Plan {
                        todos: self.ctx.session.todos(),
                    });
                }
                let text = output.text.clone();
                self.send_update(
                    events,
                    call,
                    ToolCallStatus::Success,
                    Some(text.clone()),
                    output,
                );
                Outcome {
                    result: result_for(call, text, false),
                    fatal: false,
                }
            }
            Ok(Err(ToolError::Respond(message))) => {
                self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
                Outcome::error(call, message)
            }
            Ok(Err(error @ ToolError::Fatal(_))) => {
                let message = error.to_string();
                tracing::error!(tool = call.name, "{message}");
                self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
                Outcome {
                    result: result_for(call, message, true),
                    fatal: true,
                }
            }
            Err(panic) => {
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".to_owned());
                tracing::error!(tool = call.name, "tool panicked: {detail}");
                let message = format!(
                    "the {} tool crashed ({detail}); this is a bug in Tandem, not in your call",
                    call.name
                );
                self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
                Outcome::error(call, message)
            }
        }
    }
}

enum Approval {
    Run,
    Refused(String),
    Cancelled,
}

struct Outcome {
    result: ToolResult,
    /// A bug, not the model's doing: the turn ends after the batch.
    fatal: bool,
}

impl Outcome {
    fn error(call: &ToolCall, message: String) -> Self {
        Outcome {
            result: result_for(call, message, true),
            fatal: false,
        }
    }
}

fn result_for(call: &ToolCall, content: String, is_error: bool) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    }
}

/// Gemini CLI's heuristic: the same 50-character chunk of an answer ten times, close together,
/// means the model is stuck.
#[derive(Default)]
struct TextLoopDetector {
    text: String,
    checked_to: usize,
}

impl TextLoopDetector {
    const CHUNK: usize = 50;
    const REPEATS: usize = 10;
    /// How far back repeats count: the repeats must be close together.
    const WINDOW: usize = Self::CHUNK * Self::REPEATS * 2;

    /// Adds streamed text; true when the newest chunk has repeated too often.
    fn push(&mut self, text: &str) -> bool {
        self.text.push_str(text);
        while self.text.len() >= self.checked_to + Self::CHUNK {
            let mut end = self.checked_to + Self::CHUNK;
            while !self.text.is_char_boundary(end) {
                end += 1;
            }
            let mut start = end - Self::CHUNK;
            while !self.text.is_char_boundary(start) {
                start -= 1;
            }
            self.checked_to = end;
            let chunk = &self.text[start..end];
            // A rule of `=====` or a run of spaces is layout, not a loop.
            let distinct = chunk
                .chars()
                .collect::<std::collections::HashSet<_>>()
                .len();
            if distinct < 5 {
                continue;
            }
            let mut window_start = end.saturating_sub(Self::WINDOW);
            while !self.text.is_char_boundary(window_start) {
                window_start += 1;
            }
            if self.text[window_start..end].matches(chunk).count() >= Self::REPEATS {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use tandem_providers::{ModelConfig, ProviderKind};

    use super::*;
    use crate::ide::ActiveEditor;
    use crate::tools::SessionState;
    use crate::workspace::Workspace;

    /// A session in a workspace of `files`, whose model answers every prompt with "ok".
    fn new_session(
        files: &[(&str, &str)],
        environment: Option<&str>,
    ) -> (tempfile::TempDir, Session) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(&root).unwrap();
        let script = dir.path().join("script.jsonl");
        std::fs::write(&script, "{\"text\": \"ok\"}\n".repeat(5)).unwrap();
        let mut model = ModelConfig::new(ProviderKind::Replay, "replay", "");
        model.script = Some(script);
        let ctx = ToolContext {
            workspace: Arc::new(Workspace::new(vec![root], Vec::new())),
            cancel: CancellationToken::new(),
            session: Arc::new(SessionState::default()),
            user_memory_file: None,
            editor: Arc::new(crate::editor::DiskEditor),
            index: Arc::default(),
            syntax: crate::settings::SyntaxSettings::default(),
        };
        let config = AgentConfig {
            environment: environment.map(str::to_owned),
            ..AgentConfig::default()
        };
        let session = Session::new(Model::new(model).unwrap(), Vec::new(), ctx, config);
        (dir, session)
    }

    async fn turn(session: &mut Session, prompt: Prompt) {
        let (events, _received) = mpsc::unbounded_channel();
        let (_approve, mut approvals) = mpsc::unbounded_channel();
        let mut io = TurnIo {
            events: &events,
            approvals: &mut approvals,
            cancel: CancellationToken::new(),
        };
        assert_eq!(session.run_turn(prompt, &mut io).await, StopReason::EndTurn);
    }

    /// The texts of the user message at `index` of the history.
    fn texts(session: &Session, index: usize) -> Vec<String> {
        session.history()[index]
            .parts
            .iter()
            .map(|part| match part {
                Part::Text { text } => text.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

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

    #[test]
    fn text_loops_are_detected_and_prose_is_not() {
        let mut detector = TextLoopDetector::default();
        let prose = "The parser reads tokens one by one. When it meets an operator it compares \
                     precedence with the one on the stack, and pops while the stack's is higher.";
        assert!(!detector.push(prose));
        let mut detector = TextLoopDetector::default();
        let repeated = "I will now read the file again to check the code. ".repeat(12);
        let stuck = repeated
            .as_bytes()
            .chunks(7)
            .any(|piece| detector.push(std::str::from_utf8(piece).unwrap_or("")));
        assert!(stuck);
        let mut detector = TextLoopDetector::default();
        assert!(!detector.push(&"=".repeat(2000)));
    }
}
