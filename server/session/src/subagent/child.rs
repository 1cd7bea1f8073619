//! Running one child session for a `subagent` call: a fresh `Session` with the agent's system
//! prompt and tools, the parent's workspace, editor, index and shell environment, but its own
//! history and file state; its own turn limit, and a deadline that cancels it. Its events go to
//! the parent's front end nested under the call; an approval it would need is answered
//! `CannotAsk`, since nobody watches a child to answer. The result is its final answer.

use std::sync::Arc;
use std::time::Duration;

use tandem_providers::Model;
use tokio::sync::mpsc;

use crate::environment::environment_context;
use crate::session::{AgentConfig, Prompt, Session, TurnIo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tandem_extensions::subagents::AgentDefinition;
use tandem_protocol::{ApprovalDecision, Event, StopReason, SubagentEvent, ToolCallStatus};
use tandem_tools::{ParentSession, SessionState, Tool, ToolContext};

/// What a child session came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildReport {
    pub stop_reason: StopReason,
    /// Its last answer (possibly partial, when it stopped early).
    pub answer: String,
    /// Titles of the tool calls it made, in order.
    pub calls: Vec<String>,
    /// The deadline stopped it.
    pub timed_out: bool,
}

/// Why a child's approval question gets no answer from the user.
const CANNOT_ASK: &str = "subagents cannot ask for approval; report back what you need done";

/// Runs `definition` with `tools` on `task` for the call `call_id`, with the parent's `ctx`
/// (its workspace, editor, index, shell environment and cancel token) and `parent`.
#[allow(clippy::too_many_arguments)]
pub async fn run_child(
    definition: &AgentDefinition,
    tools: Vec<Arc<dyn Tool>>,
    model: Model,
    limits: SubagentSettings,
    task: &str,
    call_id: &str,
    ctx: &ToolContext,
    parent: &ParentSession,
) -> ChildReport {
    let cancel = ctx.cancel.child_token();
    let child_ctx = ToolContext {
        cancel: cancel.clone(),
        session: Arc::new(SessionState::default()),
        call_id: None,
        output_limit: None,
        progress: None,
        parent: None,
        ..ctx.clone()
    };
    // Off the runtime's threads: git and the folder walk may take a moment, and subagents run
    // beside other calls.
    let roots = ctx.workspace.roots().to_vec();
    let model_config = model.config().clone();
    let environment = tokio::task::spawn_blocking(move || {
        environment_context(&roots, &crate::date::today(), Some(&model_config))
    })
    .await
    .ok();
    let config = AgentConfig {
        system_prompt: definition.system_prompt.clone(),
        max_turns: limits.max_turns,
        approval: parent.approval.clone(),
        environment,
        protected: parent.protected.clone(),
        ..AgentConfig::default()
    };
    let mut session = Session::new(model, tools, child_ctx, config);
    // A task that starts with `/` is a task, not a slash command for the child.
    let text = if task.trim_start().starts_with('/') {
        format!("Task: {task}")
    } else {
        task.to_owned()
    };
    let (events, mut received) = mpsc::unbounded_channel();
    let (answers, mut approvals) = mpsc::unbounded_channel();
    let mut timed_out = false;
    let run = async {
        // Owned here, so that the child's event stream ends when its turn does.
        let events = events;
        let reason = {
            let mut io = TurnIo {
                events: &events,
                approvals: &mut approvals,
                cancel: cancel.clone(),
            };
            let mut turn = std::pin::pin!(session.run_turn(Prompt::text(text), &mut io));
            let deadline = tokio::time::sleep(Duration::from_secs(limits.timeout_secs));
            tokio::select! {
                reason = &mut turn => reason,
                () = deadline => {
                    timed_out = true;
                    cancel.cancel();
                    turn.await
                }
            }
        };
        drop(events);
        reason
    };
    let mut calls = Vec::new();
    let forward = async {
        while let Some(event) = received.recv().await {
            if let Event::ToolCall(update) = &event {
                match update.status {
                    ToolCallStatus::AwaitingApproval => {
                        let decision = ApprovalDecision::CannotAsk {
                            reason: CANNOT_ASK.to_owned(),
                        };
                        let _ = answers.send((update.call_id.clone(), decision));
                    }
                    ToolCallStatus::Executing if update.progress.is_none() => {
                        calls.push(update.title.clone());
                        if let Some(progress) = &ctx.progress {
                            progress(update.title.clone());
                        }
                    }
                    _ => {}
                }
            }
            (parent.events)(Event::Subagent(SubagentEvent {
                parent_call_id: call_id.to_owned(),
                agent: definition.name.clone(),
                event: Box::new(event),
            }));
        }
    };
    let (stop_reason, ()) = tokio::join!(run, forward);
    let answer = session.last_answer();
    ChildReport {
        stop_reason,
        answer: answer.trim().to_owned(),
        calls,
        timed_out,
    }
}

/// Limits of a subagent's child session (the `subagents` settings key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SubagentSettings {
    /// Model requests one subagent call may make before it stops and reports what it has.
    pub max_turns: u32,
    /// Seconds one subagent call may run before it is stopped and reports what it has.
    pub timeout_secs: u64,
}

impl Default for SubagentSettings {
    fn default() -> Self {
        SubagentSettings {
            max_turns: 25,
            timeout_secs: 300,
        }
    }
}
