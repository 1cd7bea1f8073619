//! Running the tool calls of one response. Each call is validated against its tool's schema
//! first; then consecutive read-only calls run together and each mutating call on its own, in
//! the order given, once the approval policy (or the user, when it asks) allows it. Every call
//! gets a result, in order — also the calls a cancelled or stopped turn never ran — and its
//! lifecycle is reported to the front end as `ToolCallUpdate`s. A tool's panic or fatal error
//! becomes an error result; a fatal one ends the turn after the batch.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tandem_providers::{Image, Message, Part, Role, ToolCall, ToolResult};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Approval, Session, Stop, TurnIo};
use tandem_extensions::hooks::Permission;
use tandem_protocol::{ApprovalDecision, Event, StopReason, ToolCallStatus, ToolCallUpdate};
use tandem_sandbox::approval::paths::PathCheck;
use tandem_sandbox::approval::{shown, ApprovalPolicy, Call, SandboxVerdict, Verdict};
use tandem_sandbox::editor::DiskSync;
use tandem_tools::{Location, Tool, ToolContext, ToolError, ToolOutput};

/// How long a cancelled tool may take to stop by itself (and report) before it is dropped.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

impl Session {
    /// Runs the calls: each is validated and scheduled first; then consecutive read-only calls
    /// run together and each mutating call on its own, in the order given, after the approval
    /// policy allows it (deny rules apply to every tool). Every call gets a result, in order.
    pub(super) async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        io: &mut TurnIo<'_>,
    ) -> (Vec<ToolResult>, Vec<Image>, Option<Stop>) {
        // `PreToolUse` hooks may rewrite a call's arguments.
        let mut calls = calls.to_vec();
        let calls = &mut calls[..];
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        // What the calls showed (`view_image`), by call, sent after every result.
        let mut images: Vec<Vec<Image>> = vec![Vec::new(); calls.len()];
        for (slot, call) in results.iter_mut().zip(calls.iter()) {
            self.update(io.events, call, ToolCallStatus::Validating, None);
            match self.validate(call) {
                Ok(_) => self.update(io.events, call, ToolCallStatus::Scheduled, None),
                Err(message) => {
                    *slot = Some(self.refuse(io.events, call, message));
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
                let hooks = self.pre_tool_use(&calls[offset], io).await;
                if let Some(reason) = hooks.stop {
                    stop = Some(Stop(StopReason::EndTurn, Some(reason.clone())));
                    let message = format!("not run: a PreToolUse hook stopped the turn: {reason}");
                    results[offset] = Some(self.refuse(io.events, &calls[offset], message));
                    break;
                }
                if let Some((Permission::Deny, reason)) = &hooks.permission {
                    let why = reason.as_deref().unwrap_or("no reason given");
                    let message = format!("A PreToolUse hook refused this call: {why}");
                    results[offset] = Some(self.refuse(io.events, &calls[offset], message));
                    continue;
                }
                if let Some(arguments) = hooks.updated_input {
                    let original = std::mem::replace(&mut calls[offset].arguments, arguments);
                    if let Err(problem) = self.validate(&calls[offset]) {
                        calls[offset].arguments = original;
                        let message = format!(
                            "not run: a PreToolUse hook rewrote the arguments into ones the tool \
                             refuses: {problem}"
                        );
                        results[offset] = Some(self.refuse(io.events, &calls[offset], message));
                        continue;
                    }
                    self.record_rewritten_call(&calls[offset]);
                    self.update(io.events, &calls[offset], ToolCallStatus::Scheduled, None);
                }
                let call = &calls[offset];
                match self.approve(call, io, hooks.permission.as_ref()).await {
                    Approval::Run => to_run.push(offset),
                    Approval::Refused(message) => {
                        results[offset] = Some(self.refuse(io.events, call, message));
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
            let cancel = io.cancel.clone();
            let after = futures::future::join_all(to_run.iter().zip(&outcomes).map(
                |(&offset, outcome)| {
                    self.post_tool_use(&calls[offset], &outcome.result, io.events, &cancel)
                },
            ))
            .await;
            for ((offset, mut outcome), hooks) in to_run.into_iter().zip(outcomes).zip(after) {
                if let Some(replacement) = hooks.replace_result {
                    // A Gemini CLI hook hid what the tool gave (secrets in an output).
                    outcome.result.content = replacement;
                }
                if let Some(reason) = hooks.block {
                    outcome
                        .result
                        .content
                        .push_str(&format!("\n\nA PostToolUse hook says: {reason}"));
                }
                if let Some(context) = hooks.context {
                    outcome.result.content.push_str(&format!(
                        "\n\n{}",
                        super::hooks::hook_context("PostToolUse", &context)
                    ));
                }
                if let Some(reason) = hooks.stop {
                    stop.get_or_insert(Stop(StopReason::EndTurn, Some(reason)));
                }
                if outcome.fatal && stop.is_none() {
                    stop = Some(Stop(
                        StopReason::Error,
                        Some(outcome.result.content.clone()),
                    ));
                }
                images[offset] = outcome.images;
                results[offset] = Some(outcome.result);
            }
            index = end;
        }
        let cancelled = io.cancel.is_cancelled();
        let results = results
            .into_iter()
            .zip(calls.iter())
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
        (results, images.into_iter().flatten().collect(), stop)
    }

    fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.name() == name)
    }

    fn is_read_only(&self, call: &ToolCall) -> bool {
        self.tool(&call.name)
            .is_some_and(|tool| !tool.mutates_call(&call.arguments))
    }

    pub(super) fn update(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        status: ToolCallStatus,
        output: Option<String>,
    ) {
        self.send_update(events, call, status, output, ToolOutput::default(), None);
    }

    /// Ends a call that will not run: its update says why, and so does its result.
    fn refuse(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        message: String,
    ) -> ToolResult {
        self.update(events, call, ToolCallStatus::Error, Some(message.clone()));
        Outcome::error(call, message).result
    }

    /// `approval` is what an approval prompt shows, and why the call is asked about whatever the
    /// settings say (`ToolCallUpdate::details`, `approval_reason`).
    fn send_update(
        &self,
        events: &mpsc::UnboundedSender<Event>,
        call: &ToolCall,
        status: ToolCallStatus,
        output: Option<String>,
        details: ToolOutput,
        approval: Option<(String, Option<String>)>,
    ) {
        let (approval, approval_reason) = approval.unzip();
        let (title, kind) = match self.tool(&call.name) {
            Some(tool) => (tool.title(&call.arguments), tool.kind()),
            None => (call.name.clone(), tandem_tools::ToolKind::Other),
        };
        // Titles reach terminals (`tandem ask`) and menus: the model's text must not carry an
        // escape sequence or a padding run into them.
        let title = shown::visible(&title);
        self.emit(
            events,
            Event::ToolCall(ToolCallUpdate {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                title,
                kind,
                status,
                raw_input: call.arguments.clone(),
                details: approval,
                approval_reason: approval_reason.flatten(),
                locations: details.locations,
                diff: details.diff,
                output,
                progress: None,
            }),
        );
    }

    /// Checks the call against the tool's schema. `Err` is the message for the model.
    pub(super) fn validate(&self, call: &ToolCall) -> Result<&Arc<dyn Tool>, String> {
        let Some(tool) = self.tool(&call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|tool| tool.name()).collect();
            return Err(format!(
                "there is no tool named `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            ));
        };
        tandem_tools::check_args(tool.as_ref(), &call.arguments)?;
        Ok(tool)
    }

    /// What the approval policy (and the user, when it asks) says about a validated call.
    /// `hook` is what `PreToolUse` hooks said: `allow` asks nothing (the settings' deny rules
    /// and protected paths still apply), `ask` asks even where the policy would not.
    pub(super) async fn approve(
        &mut self,
        call: &ToolCall,
        io: &mut TurnIo<'_>,
        hook: Option<&(Permission, Option<String>)>,
    ) -> Approval {
        let Some(tool) = self.tool(&call.name).cloned() else {
            return Approval::Refused(format!("there is no tool named `{}`", call.name));
        };
        let rule = ApprovalPolicy::rule_for(tool.name(), &call.arguments);
        if self.session_deny.contains(&rule) {
            return Approval::Refused(
                "The user refused calls like this one for the rest of the session. Do not retry \
                 it; find another way or ask the user."
                    .to_owned(),
            );
        }
        let mut policy = self.config.approval.clone();
        policy.allow.extend(self.session_allow.iter().cloned());
        let paths = PathCheck::new(&self.ctx.workspace, &self.config.protected, &call.arguments);
        let protected = tool
            .paths_written(&call.arguments, &self.ctx)
            .iter()
            .find_map(|path| paths.protected(path));
        let sandboxed = tool.sandbox_plan(&call.arguments, &self.ctx);
        let sandbox_verdict = match &sandboxed {
            Some(sandboxed) => SandboxVerdict {
                escalation: sandboxed
                    .escalation
                    .map(|escalation| escalation.asks_for().to_owned()),
                auto_allow: sandboxed.plan.is_confined()
                    && sandboxed.escalation.is_none()
                    && self.ctx.shell_environment.sandbox().settings().auto_allow,
            },
            None => SandboxVerdict::default(),
        };
        let verdict = policy.verdict(&Call {
            tool: tool.name(),
            kind: tool.kind(),
            mutates: tool.mutates_call(&call.arguments),
            args: &call.arguments,
            protected,
            refuses_path: &|path| paths.out_of_reach(path),
            trusted: tool.trusted() || matches!(hook, Some((Permission::Allow, _))),
            foreign_repository: (tool.name() == "shell")
                .then(|| paths.foreign_repository())
                .flatten(),
            aliases: &tool.approval_aliases(&call.arguments),
            sandbox: sandbox_verdict,
        });
        let verdict = match (verdict, hook) {
            (Verdict::Allow, Some((Permission::Ask, reason))) => Verdict::Ask {
                why: Some(match reason {
                    Some(reason) => format!("a PreToolUse hook asks: {reason}"),
                    None => "a PreToolUse hook asks".to_owned(),
                }),
            },
            (verdict, _) => verdict,
        };
        match verdict {
            Verdict::Allow => Approval::Run,
            Verdict::Deny(why) => Approval::Refused(format!(
                "The user's settings refuse this call ({why}). Do not retry it; find another way or ask the user."
            )),
            Verdict::Ask { why } => {
                // The user approves what they can see: an edit's prompt carries its diff. A call
                // certain to be refused (an edit of a file the model has not read) is refused
                // now: asking would have the user approve a call that then fails.
                let preview = tokio::select! {
                    biased;
                    () = io.cancel.cancelled() => return Approval::Cancelled,
                    preview = AssertUnwindSafe(tool.preview(&call.arguments, &self.ctx))
                        .catch_unwind() => preview.unwrap_or_else(|_| {
                            tracing::error!(tool = call.name, "preview panicked; asking without it");
                            Ok(None)
                        }),
                };
                let preview = match preview {
                    Ok(preview) => preview,
                    Err(refusal) => return Approval::Refused(refusal),
                };
                let shown = match &preview {
                    Some(diff) => shown::diff(diff, &self.ctx.workspace.display(&diff.path)),
                    None => tool.approval_details(&call.arguments),
                };
                let shown = match &sandboxed {
                    Some(sandboxed) => format!(
                        "{shown}\n\n{}",
                        self.ctx.shell_environment.sandbox().describe(&sandboxed.plan)
                    ),
                    None => shown,
                };
                let details = match &why {
                    Some(why) => format!("Tandem asks whatever the settings say, because {why}.\n\n{shown}"),
                    None => shown,
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
                let output = ToolOutput {
                    text: String::new(),
                    locations,
                    diff: preview,
                    images: Vec::new(),
                };
                let status = ToolCallStatus::AwaitingApproval;
                self.send_update(io.events, call, status, None, output, Some((details, why)));
                self.notify_approval(call, io.events);
                loop {
                    let answer = tokio::select! {
                        biased;
                        () = io.cancel.cancelled() => return Approval::Cancelled,
                        answer = io.approvals.recv() => answer,
                    };
                    let Some((call_id, decision)) = answer else {
                        return Approval::Refused(
                            "Not run: this call needs the user's approval, and nobody can be asked (the \
                             front end is gone). Do not retry it."
                                .into(),
                        );
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
                        ApprovalDecision::RejectAlways { feedback } => {
                            self.session_deny.push(rule);
                            Approval::Refused(rejected(feedback))
                        }
                        ApprovalDecision::Reject { feedback } => Approval::Refused(rejected(feedback)),
                        ApprovalDecision::CannotAsk { reason } => Approval::Refused(format!(
                            "Not run: this call needs the user's approval, and {reason}. Do not retry it; \
                             tell the user what you wanted to run and why, so they can run it or allow it."
                        )),
                    };
                }
            }
        }
    }

    /// Runs one validated, approved call, reporting its lifecycle from `executing` on.
    pub(super) async fn run_call(
        &self,
        call: &ToolCall,
        events: &mpsc::UnboundedSender<Event>,
        cancel: CancellationToken,
    ) -> Outcome {
        let Some(tool) = self.tool(&call.name).cloned() else {
            return Outcome::error(call, format!("there is no tool named `{}`", call.name));
        };
        self.update(events, call, ToolCallStatus::Executing, None);
        // Progress reports repeat the executing update with the call's latest message.
        let executing = ToolCallUpdate {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            title: shown::visible(&tool.title(&call.arguments)),
            kind: tool.kind(),
            status: ToolCallStatus::Executing,
            raw_input: call.arguments.clone(),
            details: None,
            approval_reason: None,
            locations: Vec::new(),
            diff: None,
            output: None,
            progress: None,
        };
        let progress_events = events.clone();
        let progress: tandem_tools::ProgressSink = Arc::new(move |message: String| {
            let update = ToolCallUpdate {
                progress: Some(shown::visible(&message)),
                ..executing.clone()
            };
            let _ = progress_events.send(Event::ToolCall(update));
        });
        // A child session's events go straight to the front end, unsaved: the parent's log
        // keeps the call and its report, as for any tool.
        let nested_events = events.clone();
        let parent = tandem_tools::ParentSession {
            model: self.model.clone(),
            approval: self.config.approval.clone(),
            protected: self.config.protected.clone(),
            events: Arc::new(move |event: Event| {
                let _ = nested_events.send(event);
            }),
        };
        let ctx = ToolContext {
            cancel: cancel.clone(),
            call_id: Some(call.id.clone()),
            progress: Some(progress),
            parent: Some(parent),
            ..self.ctx.clone()
        };
        // What reads the disk must see the agent's changes that sit unsaved in the editor.
        let synced = if tool.reads_disk() {
            ctx.editor.sync_to_disk().await
        } else {
            DiskSync::default()
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
            Ok(Ok(mut output)) => {
                let images = std::mem::take(&mut output.images);
                if call.name == "write_todos" {
                    self.emit(
                        events,
                        Event::Plan {
                            todos: self.ctx.session.todos(),
                        },
                    );
                }
                let text = format!("{}{}", output.text, synced.note());
                self.send_update(
                    events,
                    call,
                    ToolCallStatus::Success,
                    Some(text.clone()),
                    output,
                    None,
                );
                Outcome {
                    result: result_for(call, text, false),
                    images,
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
                    images: Vec::new(),
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

    pub(super) fn answer_unrun(&mut self, calls: &[ToolCall], why: &str) {
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
}

pub(super) struct Outcome {
    pub(super) result: ToolResult,
    /// What the call shows the model beside its result.
    pub(super) images: Vec<Image>,
    /// A bug, not the model's doing: the turn ends after the batch.
    fatal: bool,
}

impl Outcome {
    fn error(call: &ToolCall, message: String) -> Self {
        Outcome {
            result: result_for(call, message, true),
            images: Vec::new(),
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

/// What the model is told when the user rejected a call.
fn rejected(feedback: Option<String>) -> String {
    match feedback {
        Some(feedback) if !feedback.trim().is_empty() => {
            format!("The user rejected this call and said: {feedback}. Do not retry it as it was.")
        }
        _ => "The user rejected this call. Do not retry it; ask the user how to proceed or try \
              something else."
            .to_owned(),
    }
}
