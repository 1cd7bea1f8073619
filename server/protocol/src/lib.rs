//! The agent's protocol with its front ends: operations in, events out, tool-call updates with
//! their diffs and locations, plans, attachments. Plain data, serde tagged (camelCase), no I/O
//! and no async. The LSP server, `tandem ask` and the Agent Client Protocol each translate
//! between their wire format and these types.
//!
//! At the bottom of the agent's crates: it may use serde, schemars (a plan's items are a tool's
//! arguments too) and `tandem-providers` only for the token counts of `Usage`; nothing of the
//! agent may be used here.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tandem_providers::Usage;

/// What a front end asks of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Op {
    /// Start a turn: the user's words plus context the front end attaches (a selection, files).
    Prompt {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        context: Vec<Attachment>,
    },
    /// Cancel the turn in progress.
    Cancel,
    /// Answer an `awaitingApproval` tool call.
    Approval {
        call_id: String,
        decision: ApprovalDecision,
    },
}

/// Context attached to a prompt, shown to the model under its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    /// What it is: "Selection in src/lib.rs (lines 3-9)", "File src/main.rs".
    pub label: String,
    pub text: String,
    /// The file the text was taken from, when it was whole lines of one (set by front ends in
    /// process; not part of the wire format).
    #[serde(skip)]
    pub shown: Option<ShownFile>,
}

/// A file as an attachment showed it to the model. What the model was shown counts as read:
/// it may edit those lines (or the whole file, when it was shown whole) without reading the
/// file first, as long as the file has not changed since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShownFile {
    /// Canonical, as the tools resolve paths.
    pub path: PathBuf,
    /// The whole file when it was attached: the open buffer at `version`, else the disk.
    pub content: String,
    pub version: Option<i32>,
    /// 1-based first and last line shown; `None` when the attachment is the whole file.
    pub lines: Option<(usize, usize)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ApprovalDecision {
    AllowOnce,
    /// Allow this call and, for the rest of the session, calls like it (the same tool; for
    /// `shell`, the same command).
    AllowAlways,
    /// Refuse; `feedback` goes to the model with the refusal.
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Refuse this call and, for the rest of the session, calls like it (the same tool; for
    /// `shell`, the same command) without asking again.
    RejectAlways {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Nobody could be asked (headless, or an editor that cannot show the question); the call
    /// is not run. `reason` says why, in words the model can pass on to the user.
    CannotAsk {
        reason: String,
    },
}

/// What a session tells its front end, in order.
// A tool call update (with its arguments and approval text) is the big variant; events are made
// one at a time and moved, never stored in bulk, so boxing it would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Event {
    TextChunk {
        text: String,
    },
    ThoughtChunk {
        text: String,
    },
    /// The model request failed and is being retried; text and thoughts streamed since the
    /// request started are void and should be cleared from the display.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        error: String,
    },
    /// A tool call was created or changed status. Every update repeats the whole state.
    ToolCall(ToolCallUpdate),
    /// The agent's plan (from `write_todos`).
    Plan {
        todos: Vec<Todo>,
    },
    /// Token counts of the latest model request and how full the context window is.
    Usage(UsageReport),
    /// The history was compressed (or compression was tried and given up); see
    /// `docs/context.md`.
    Compression(CompressionReport),
    /// Files put back as they were before a turn (`/restore`, `tandem/restore`).
    Restored(RestoreReport),
    /// The turn is over. `message` says why when it did not end normally.
    TurnFinished {
        stop_reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A hook from the `hooks` settings ran (see `docs/hooks.md`).
    Hook(HookRun),
    /// An event of a child session (`subagent` tool), nested under the parent's call.
    Subagent(SubagentEvent),
}

/// One run of a hook command: which, how long, and what it decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    /// The event's Claude Code name (`PreToolUse`…).
    pub event: String,
    pub command: String,
    /// The hook's matcher, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub duration_ms: u64,
    /// `None` when it timed out or could not start.
    pub exit_code: Option<i32>,
    pub outcome: HookOutcome,
    /// What the user should see (the hook's reason, message or error output), capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What a hook run decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HookOutcome {
    /// Nothing to decide: things go on.
    Continued,
    /// It blocked the prompt, the tool's result or the stop (exit 2 or `decision: "block"`).
    Blocked,
    /// `PreToolUse`: the call runs without asking (the settings' deny rules still apply).
    Allowed,
    /// `PreToolUse`: the call is refused.
    Denied,
    /// `PreToolUse`: the user is asked about the call.
    Asked,
    /// `PreToolUse`: the call's arguments were replaced.
    Rewrote,
    /// `continue: false`: the turn stops.
    Stopped,
    /// It failed (an exit code other than 0 and 2): a warning, and things go on.
    Warned,
    /// It ran past its timeout; its process group was killed.
    TimedOut,
    /// It could not be started.
    Failed,
}

/// What a subagent's session reported, and under which of the parent's tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentEvent {
    /// The parent's `subagent` call the child runs for.
    pub parent_call_id: String,
    /// The agent's name (`codebase_investigator`, or a custom agent's).
    pub agent: String,
    /// The child's event as it would be at the top level; its tool call ids are the child's.
    pub event: Box<Event>,
}

/// A model request's token counts (the provider's, flattened in) and the context window's fill:
/// `context_tokens` of `context_window` are in use, `estimated` when the provider reported no
/// usage and Tandem counted itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    #[serde(flatten)]
    pub usage: Usage,
    pub context_tokens: u64,
    pub context_window: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

/// What a compression did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressionReport {
    pub status: CompressionStatus,
    /// Estimated tokens of history before and after (equal unless `compressed`).
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Why it was skipped or failed, for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompressionStatus {
    /// The older history was replaced by a state snapshot.
    Compressed,
    /// Nothing worth compressing (too little history, or no place to split).
    Skipped,
    /// The snapshot would not have made the history smaller; it was discarded, and automatic
    /// compression is off until the user forces one.
    Inflated,
    /// The summary request failed; the history is unchanged.
    Failed,
}

/// The outcome of restoring a turn's checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReport {
    /// The turn whose prior state was restored; `None` when there was nothing to restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    pub restored: Vec<std::path::PathBuf>,
    pub skipped: Vec<SkippedFile>,
}

/// A file a restore left alone, and why (usually: the user changed it since).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedFile {
    pub path: std::path::PathBuf,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// A human title: "Read src/lib.rs", "Run `cargo test`".
    pub title: String,
    pub kind: ToolKind,
    pub status: ToolCallStatus,
    /// The call's arguments exactly as the model sent them.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub raw_input: serde_json::Value,
    /// While `awaitingApproval`: everything the user is asked to allow, complete, with control
    /// and invisible characters made visible (for `shell`, the whole command line and where it
    /// runs; for an edit, its unified diff). A front end shows all of it, or offers no way to
    /// allow the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// While `awaitingApproval`, when the call is asked about whatever the mode and the allow
    /// rules say: why (it writes a protected path; a deny rule cannot see what it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    /// For edits and writes: the proposed change while awaiting approval, then the change made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<FileDiff>,
    /// What the model was told, once the call finished (success, error or cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// While `executing`: how far a long-running call got, as it reported it ("step 3 of 5").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// The lifecycle of a tool call: `validating → scheduled → (awaitingApproval →) executing →
/// success | error | cancelled`. A call can end in `error` or `cancelled` from any state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolCallStatus {
    Validating,
    Scheduled,
    AwaitingApproval,
    Executing,
    Success,
    Error,
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling tools.
    EndTurn,
    /// The turn used the most model requests allowed.
    MaxTurns,
    Cancelled,
    Error,
    /// The model repeated itself; see the message.
    LoopDetected,
    /// The model's response passed a cap on its size or duration (`network.maxResponseBytes`,
    /// `network.maxResponseSecs`); see the message. The partial response is dropped.
    ResponseLimit,
}

/// What a tool does, for the UI (icons, grouping) and for approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolKind {
    Read,
    Search,
    Edit,
    Execute,
    Think,
    Other,
    /// Sends requests out (web_fetch): changes nothing here, but asks for approval.
    Fetch,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    pub path: PathBuf,
    /// 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: PathBuf,
    /// `None` for a new file.
    pub old_text: Option<String>,
    pub new_text: String,
}

/// One item of the agent's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Todo {
    /// What to do, in a few words.
    pub description: String,
    /// `pending`, `in_progress` (at most one item), `completed` or `cancelled`.
    pub status: TodoStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shapes() {
        let op: Op = serde_json::from_str(
            r#"{"type": "approval", "callId": "c1", "decision": {"type": "reject", "feedback": "no"}}"#,
        )
        .unwrap();
        assert_eq!(
            op,
            Op::Approval {
                call_id: "c1".into(),
                decision: ApprovalDecision::Reject {
                    feedback: Some("no".into())
                }
            }
        );
        let event = Event::TurnFinished {
            stop_reason: StopReason::LoopDetected,
            message: None,
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"turnFinished","stopReason":"loop_detected"}"#
        );
        let nested = Event::Subagent(SubagentEvent {
            parent_call_id: "c1".into(),
            agent: "codebase_investigator".into(),
            event: Box::new(Event::TextChunk { text: "hi".into() }),
        });
        let wire = r#"{"type":"subagent","parentCallId":"c1","agent":"codebase_investigator","event":{"type":"textChunk","text":"hi"}}"#;
        assert_eq!(serde_json::to_string(&nested).unwrap(), wire);
        assert_eq!(serde_json::from_str::<Event>(wire).unwrap(), nested);
    }
}
