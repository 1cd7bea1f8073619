//! What a hook's run means, with Claude Code's rules: exit 0 goes on (its stdout, when JSON,
//! may stop the turn, block, decide a tool call's permission, rewrite its arguments or add
//! context; plain stdout is context for `UserPromptSubmit` and `SessionStart` and otherwise
//! only shown); exit 2 blocks, with stderr as the reason; anything else is a warning. The
//! decisions of the hooks of one event combine: deny over ask over allow. A Gemini CLI hook is
//! read with Gemini CLI's words where they differ: `decision: "deny"` (its `"block"`),
//! `hookSpecificOutput.tool_input` (merged into the call's input), and an `AfterTool` that
//! denies (or exits 2) replaces the call's result instead of adding to it.

use serde::Deserialize;
use serde_json::Value;

use super::config::HookEvent;
use super::dialect::Dialect;
use super::process::{Ending, Finished};
use tandem_protocol::{HookOutcome, HookRun};

/// The most of a hook's message an event carries.
const MESSAGE_CAP: usize = 4 * 1024;

/// A `PreToolUse` hook's say on a call's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

/// What the hooks of one event decided, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effect {
    /// The event is blocked, with the reasons (exit 2's stderr, `decision: "block"`'s reason).
    pub block: Option<String>,
    /// `PreToolUse`: the strongest permission decision, with its reason.
    pub permission: Option<(Permission, Option<String>)>,
    /// `PreToolUse`: the arguments to run the call with instead (the first hook's), as the
    /// hook wrote them (`Hooks::run` maps them to Tandem's names).
    pub updated_input: Option<Value>,
    /// `PostToolUse` of a Gemini CLI hook that denied the result: what the model reads instead.
    pub replace_result: Option<String>,
    /// Context for the model.
    pub context: Option<String>,
    /// `continue: false`: the turn stops, with this reason for the user.
    pub stop: Option<String>,
}

impl Effect {
    /// Adds another hook's decision to this one's.
    pub fn combine(&mut self, other: Effect) {
        join(&mut self.block, other.block);
        join(&mut self.context, other.context);
        join(&mut self.replace_result, other.replace_result);
        if self.stop.is_none() {
            self.stop = other.stop;
        }
        if self.updated_input.is_none() {
            self.updated_input = other.updated_input;
        }
        self.permission = match (self.permission.take(), other.permission) {
            (Some(mine), Some(theirs)) => Some(if theirs.0 > mine.0 { theirs } else { mine }),
            (mine, theirs) => mine.or(theirs),
        };
    }
}

fn join(into: &mut Option<String>, more: Option<String>) {
    match (into.as_mut(), more) {
        (Some(text), Some(more)) => {
            text.push('\n');
            text.push_str(&more);
        }
        (None, more) => *into = more,
        (Some(_), None) => {}
    }
}

/// Claude Code's JSON output (the fields Tandem acts on; others are ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Output {
    #[serde(rename = "continue")]
    go_on: Option<bool>,
    stop_reason: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    system_message: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    /// Gemini CLI's `updatedInput`: merged into the call's input.
    #[serde(rename = "tool_input")]
    tool_input: Option<Value>,
}

/// The event a run becomes and what it decided.
pub fn interpret(
    event: HookEvent,
    dialect: Dialect,
    command: &str,
    matcher: Option<&str>,
    finished: Finished,
) -> (HookRun, Effect) {
    let mut effect = Effect::default();
    let (exit_code, outcome, message) = match &finished.ending {
        Ending::TimedOut(after) => (
            None,
            HookOutcome::TimedOut,
            Some(format!(
                "timed out after {}s; it and the processes it started were killed",
                after.as_secs()
            )),
        ),
        Ending::NotStarted(why) => (None, HookOutcome::Failed, Some(why.clone())),
        Ending::Exited(Some(0)) => {
            let (outcome, message) = exit_zero(event, dialect, &finished.stdout, &mut effect);
            (Some(0), outcome, message)
        }
        Ending::Exited(Some(2)) => {
            let stderr = finished.stderr.trim();
            let reason = if stderr.is_empty() {
                format!("blocked by the {} hook `{command}`", event.name())
            } else {
                stderr.to_owned()
            };
            let blocks = matches!(
                event,
                HookEvent::PreToolUse
                    | HookEvent::PostToolUse
                    | HookEvent::UserPromptSubmit
                    | HookEvent::Stop
            );
            if event == HookEvent::PostToolUse && dialect == Dialect::Gemini {
                effect.replace_result = Some(reason.clone());
                (Some(2), HookOutcome::Blocked, Some(reason))
            } else if blocks {
                effect.block = Some(reason.clone());
                if event == HookEvent::PreToolUse {
                    effect.permission = Some((Permission::Deny, Some(reason.clone())));
                }
                (Some(2), HookOutcome::Blocked, Some(reason))
            } else {
                // Nothing to block: what it said is shown.
                (Some(2), HookOutcome::Warned, Some(reason))
            }
        }
        Ending::Exited(code) => {
            let stderr = finished.stderr.trim();
            let message = match code {
                Some(code) => format!("the hook failed (exit code {code}): {stderr}"),
                None => format!("the hook was killed by a signal: {stderr}"),
            };
            (
                *code,
                HookOutcome::Warned,
                Some(message.trim_end_matches(": ").to_owned()),
            )
        }
    };
    let run = HookRun {
        event: event.name().to_owned(),
        command: command.to_owned(),
        matcher: matcher.map(str::to_owned),
        duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
        exit_code,
        outcome,
        message: message.filter(|text| !text.is_empty()).map(cap),
    };
    (run, effect)
}

/// Exit 0: what its stdout says.
fn exit_zero(
    event: HookEvent,
    dialect: Dialect,
    stdout: &str,
    effect: &mut Effect,
) -> (HookOutcome, Option<String>) {
    let trimmed = stdout.trim();
    let output = match serde_json::from_str::<Value>(trimmed) {
        Ok(value @ Value::Object(_)) => serde_json::from_value::<Output>(value).ok(),
        _ => None,
    };
    let Some(output) = output else {
        if trimmed.is_empty() {
            return (HookOutcome::Continued, None);
        }
        // Plain output: context where Claude Code makes it so, else only shown.
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) {
            effect.context = Some(trimmed.to_owned());
        }
        return (HookOutcome::Continued, Some(trimmed.to_owned()));
    };
    let mut outcome = HookOutcome::Continued;
    let mut message = output.system_message.clone();
    let specific = output.hook_specific_output.unwrap_or_default();
    if let Some(context) = specific
        .additional_context
        .filter(|text| !text.trim().is_empty())
    {
        if matches!(
            event,
            HookEvent::UserPromptSubmit | HookEvent::SessionStart | HookEvent::PostToolUse
        ) {
            effect.context = Some(context);
        }
    }
    if event == HookEvent::PreToolUse {
        // Claude Code's older `decision: approve | block` means allow or deny, and so does
        // Gemini CLI's `decision: allow | deny`.
        let decision =
            specific
                .permission_decision
                .as_deref()
                .or(match output.decision.as_deref() {
                    Some("approve" | "allow") => Some("allow"),
                    Some("block" | "deny") => Some("deny"),
                    _ => None,
                });
        let reason = specific
            .permission_decision_reason
            .or(output.reason.clone());
        let permission = match decision {
            Some("allow") => Some((Permission::Allow, HookOutcome::Allowed)),
            Some("ask") => Some((Permission::Ask, HookOutcome::Asked)),
            Some("deny") => Some((Permission::Deny, HookOutcome::Denied)),
            _ => None,
        };
        if let Some((permission, shown)) = permission {
            effect.permission = Some((permission, reason.clone()));
            outcome = shown;
            if message.is_none() {
                message = reason;
            }
        }
        let input = match dialect {
            Dialect::Claude => specific.updated_input,
            Dialect::Gemini => specific.tool_input.or(specific.updated_input),
        };
        if let Some(input) = input {
            if permission.is_none_or(|(permission, _)| permission != Permission::Deny) {
                effect.updated_input = Some(input);
                if outcome == HookOutcome::Continued {
                    outcome = HookOutcome::Rewrote;
                }
            }
        }
    } else if (output.decision.as_deref() == Some("block")
        || (dialect == Dialect::Gemini && output.decision.as_deref() == Some("deny")))
        && matches!(
            event,
            HookEvent::PostToolUse | HookEvent::UserPromptSubmit | HookEvent::Stop
        )
    {
        let reason = output
            .reason
            .clone()
            .unwrap_or_else(|| format!("blocked by a {} hook", dialect.event_name(event)));
        if event == HookEvent::PostToolUse && dialect == Dialect::Gemini {
            effect.replace_result = Some(reason.clone());
        } else {
            effect.block = Some(reason.clone());
        }
        outcome = HookOutcome::Blocked;
        if message.is_none() {
            message = Some(reason);
        }
    }
    if output.go_on == Some(false) {
        let reason = output
            .stop_reason
            .unwrap_or_else(|| format!("a {} hook stopped the turn", event.name()));
        effect.stop = Some(reason.clone());
        outcome = HookOutcome::Stopped;
        message = Some(reason);
    }
    (outcome, message)
}

fn cap(mut text: String) -> String {
    if text.len() > MESSAGE_CAP {
        let mut end = MESSAGE_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(" […]");
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn exited(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished {
            ending: Ending::Exited(Some(code)),
            stdout: stdout.to_owned(),
            stderr: stderr.to_owned(),
            duration: Duration::from_millis(5),
        }
    }

    /// Each row: event, exit code, stdout, stderr → outcome, message, effect.
    #[test]
    fn runs_are_read_as_claude_code_reads_them() {
        use HookEvent::*;
        use HookOutcome as O;
        let deny = Permission::Deny;
        type Case<'a> = (HookEvent, i32, &'a str, &'a str, O, Option<&'a str>, Effect);
        let cases: Vec<Case> = vec![
            (PreToolUse, 0, "", "", O::Continued, None, Effect::default()),
            (
                PreToolUse,
                0,
                "checked",
                "",
                O::Continued,
                Some("checked"),
                Effect::default(),
            ),
            (
                UserPromptSubmit,
                0,
                "today is Monday",
                "",
                O::Continued,
                Some("today is Monday"),
                Effect {
                    context: Some("today is Monday".into()),
                    ..Effect::default()
                },
            ),
            (
                SessionStart,
                0,
                "branch main\n",
                "",
                O::Continued,
                Some("branch main"),
                Effect {
                    context: Some("branch main".into()),
                    ..Effect::default()
                },
            ),
            (
                PreToolUse,
                2,
                "",
                "no edits to lockfiles\n",
                O::Blocked,
                Some("no edits to lockfiles"),
                Effect {
                    block: Some("no edits to lockfiles".into()),
                    permission: Some((deny, Some("no edits to lockfiles".into()))),
                    ..Effect::default()
                },
            ),
            (
                PostToolUse,
                2,
                "",
                "lint failed",
                O::Blocked,
                Some("lint failed"),
                Effect {
                    block: Some("lint failed".into()),
                    ..Effect::default()
                },
            ),
            (
                Stop,
                2,
                "",
                "tests fail",
                O::Blocked,
                Some("tests fail"),
                Effect {
                    block: Some("tests fail".into()),
                    ..Effect::default()
                },
            ),
            (
                PreCompact,
                2,
                "",
                "not now",
                O::Warned,
                Some("not now"),
                Effect::default(),
            ),
            (
                Notification,
                1,
                "",
                "no notifier",
                O::Warned,
                Some("the hook failed (exit code 1): no notifier"),
                Effect::default(),
            ),
            (
                SessionEnd,
                7,
                "",
                "",
                O::Warned,
                Some("the hook failed (exit code 7)"),
                Effect::default(),
            ),
            (
                PreToolUse,
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "secrets"}}"#,
                "",
                O::Denied,
                Some("secrets"),
                Effect {
                    permission: Some((deny, Some("secrets".into()))),
                    ..Effect::default()
                },
            ),
            (
                PreToolUse,
                0,
                r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#,
                "",
                O::Asked,
                None,
                Effect {
                    permission: Some((Permission::Ask, None)),
                    ..Effect::default()
                },
            ),
            (
                PreToolUse,
                0,
                r#"{"decision": "approve", "reason": "safe"}"#,
                "",
                O::Allowed,
                Some("safe"),
                Effect {
                    permission: Some((Permission::Allow, Some("safe".into()))),
                    ..Effect::default()
                },
            ),
            (
                PreToolUse,
                0,
                r#"{"hookSpecificOutput": {"updatedInput": {"command": "ls -a"}}}"#,
                "",
                O::Rewrote,
                None,
                Effect {
                    updated_input: Some(json!({"command": "ls -a"})),
                    ..Effect::default()
                },
            ),
            (
                PostToolUse,
                0,
                r#"{"decision": "block", "reason": "fix the types", "hookSpecificOutput": {"additionalContext": "see tsc"}}"#,
                "",
                O::Blocked,
                Some("fix the types"),
                Effect {
                    block: Some("fix the types".into()),
                    context: Some("see tsc".into()),
                    ..Effect::default()
                },
            ),
            (
                Stop,
                0,
                r#"{"continue": false, "stopReason": "budget spent", "systemMessage": "bye"}"#,
                "",
                O::Stopped,
                Some("budget spent"),
                Effect {
                    stop: Some("budget spent".into()),
                    ..Effect::default()
                },
            ),
            (
                Notification,
                0,
                r#"{"systemMessage": "pinged"}"#,
                "",
                O::Continued,
                Some("pinged"),
                Effect::default(),
            ),
        ];
        for (event, code, stdout, stderr, outcome, message, effect) in cases {
            let (run, got) = interpret(
                event,
                Dialect::Claude,
                "hook.sh",
                None,
                exited(code, stdout, stderr),
            );
            assert_eq!(
                (run.outcome, run.message.as_deref(), &got),
                (outcome, message, &effect),
                "{event:?} exit {code} {stdout:?}"
            );
            assert_eq!(
                (run.exit_code, run.event.as_str()),
                (Some(code), event.name())
            );
        }
    }

    /// Each row: event, exit code, stdout, stderr → what a Gemini CLI hook decided.
    #[test]
    fn gemini_cli_hooks_are_read_in_gemini_cli_words() {
        use HookEvent::*;
        let cases: Vec<(HookEvent, i32, &str, &str, Effect)> = vec![
            (
                PreToolUse,
                0,
                r#"{"decision": "deny", "reason": "not here"}"#,
                "",
                Effect {
                    permission: Some((Permission::Deny, Some("not here".into()))),
                    ..Effect::default()
                },
            ),
            (
                PreToolUse,
                0,
                r#"{"hookSpecificOutput": {"tool_input": {"command": "ls"}}}"#,
                "",
                Effect {
                    updated_input: Some(json!({"command": "ls"})),
                    ..Effect::default()
                },
            ),
            (
                PostToolUse,
                0,
                r#"{"decision": "deny", "reason": "[redacted]"}"#,
                "",
                Effect {
                    replace_result: Some("[redacted]".into()),
                    ..Effect::default()
                },
            ),
            (
                PostToolUse,
                2,
                "",
                "hidden",
                Effect {
                    replace_result: Some("hidden".into()),
                    ..Effect::default()
                },
            ),
            (
                Stop,
                0,
                r#"{"decision": "deny", "reason": "run the tests"}"#,
                "",
                Effect {
                    block: Some("run the tests".into()),
                    ..Effect::default()
                },
            ),
        ];
        for (event, code, stdout, stderr, effect) in cases {
            let (_, got) = interpret(
                event,
                Dialect::Gemini,
                "hook.sh",
                None,
                exited(code, stdout, stderr),
            );
            assert_eq!(got, effect, "{event:?} exit {code} {stdout:?}");
        }
        // The same `deny` from a Claude Code hook's PostToolUse is no decision of Claude Code's.
        let (_, got) = interpret(
            PostToolUse,
            Dialect::Claude,
            "hook.sh",
            None,
            exited(0, r#"{"decision": "deny", "reason": "x"}"#, ""),
        );
        assert_eq!(got, Effect::default());
    }

    #[test]
    fn decisions_combine_deny_over_ask_over_allow() {
        let with = |permission| Effect {
            permission: Some((permission, None)),
            ..Effect::default()
        };
        let mut combined = with(Permission::Allow);
        combined.combine(with(Permission::Ask));
        assert_eq!(combined.permission, Some((Permission::Ask, None)));
        combined.combine(with(Permission::Deny));
        combined.combine(with(Permission::Allow));
        assert_eq!(combined.permission, Some((Permission::Deny, None)));
        let mut blocks = Effect {
            block: Some("a".into()),
            ..Effect::default()
        };
        blocks.combine(Effect {
            block: Some("b".into()),
            ..Effect::default()
        });
        assert_eq!(blocks.block.as_deref(), Some("a\nb"));
    }

    #[test]
    fn timeouts_and_failures_to_start_have_no_exit_code() {
        let timed_out = Finished {
            ending: Ending::TimedOut(Duration::from_secs(1)),
            stdout: String::new(),
            stderr: String::new(),
            duration: Duration::from_secs(1),
        };
        let (run, effect) = interpret(
            HookEvent::PreToolUse,
            Dialect::Claude,
            "sleep 30",
            Some("shell"),
            timed_out,
        );
        assert_eq!((run.exit_code, run.outcome), (None, HookOutcome::TimedOut));
        assert_eq!(effect, Effect::default());
        assert_eq!(run.matcher.as_deref(), Some("shell"));
        let long = exited(1, "", &"e".repeat(10_000));
        let (run, _) = interpret(HookEvent::Stop, Dialect::Claude, "x", None, long);
        assert!(run.message.unwrap().len() < 4200);
    }
}
