//! Where a session runs the `hooks` settings' commands (see `tandem_extensions::hooks` and docs/hooks.md):
//! `SessionStart` and `UserPromptSubmit` as a prompt becomes a message (`turn.rs`),
//! `PreToolUse`, `PostToolUse` and `Notification` around a call (`scheduler.rs`), `Stop` when
//! the model answers without calls, `PreCompact` before a compression (`commands.rs`), and
//! `SessionEnd` when the session's runner ends (`host/runner.rs`). Every run is an
//! `Event::Hook` for the front end; `SessionEnd`'s, after the last turn, only go to the log.
//! Before hooks run, the conversation is written in Claude Code's transcript shape under
//! `.tandem/tmp/transcripts/` (where a sandboxed hook can read it; the saved session file is
//! hidden from it), and that is the `transcript_path` they get.

use serde_json::{json, Map, Value};
use tandem_providers::{Message, Part, Role, ToolCall, ToolResult};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::recording::lock;
use super::{Session, Stop, TurnIo};
use tandem_extensions::hooks::transcript::Transcript;
use tandem_extensions::hooks::{combined, Effect, HookEvent, Hooks, Subject, ToolSubject};
use tandem_protocol::{Event, StopReason};

/// How many times in a row `Stop` hooks may send the model back to work.
const MAX_STOP_CONTINUATIONS: u32 = 3;

/// Where the hooks' transcripts go: beside the shell's logs, in a folder git ignores.
const TRANSCRIPT_DIR: &str = ".tandem/tmp/transcripts";

impl Session {
    /// The hooks, with what they are told of this session: its id, and its transcript, brought
    /// up to date.
    fn hooks(&self) -> Hooks {
        let mut hooks = self.config.hooks.clone();
        if hooks.session_id.is_empty() {
            if let Some(state) = lock(&self.log).as_ref() {
                hooks.session_id = state.log.id().to_owned();
            }
        }
        hooks.transcript_path = self.sync_hook_transcript(&hooks.session_id);
        hooks
    }

    /// Writes the history to the hooks' transcript (made on first use); its path, or `None`
    /// when it cannot be written (no workspace, a `.tandem` that links out of it, a full disk:
    /// logged, and the hooks run without it).
    fn sync_hook_transcript(&self, session_id: &str) -> Option<std::path::PathBuf> {
        let mut transcript = lock(&self.hook_transcript);
        if transcript.is_none() {
            let root = self.ctx.workspace.roots().first()?;
            let name = if session_id.is_empty() {
                format!("unsaved-{}", std::process::id())
            } else {
                session_id.replace(['/', '\\'], "_")
            };
            let dir = match self.ctx.workspace.resolve(TRANSCRIPT_DIR) {
                Ok(dir) => dir,
                Err(error) => {
                    tracing::warn!("hooks get no transcript: {TRANSCRIPT_DIR}: {error}");
                    return None;
                }
            };
            *transcript = Some(Transcript::new(
                dir.join(format!("{name}.jsonl")),
                session_id,
                root,
            ));
        }
        let transcript = transcript.as_mut()?;
        let model = self.model.config().model.clone();
        match transcript.sync(&self.history, &model) {
            Ok(()) => Some(transcript.path().to_path_buf()),
            Err(error) => {
                tracing::warn!(
                    "hooks get no transcript: writing {} failed: {error}",
                    transcript.path().display()
                );
                None
            }
        }
    }

    /// Runs `event`'s hooks that match `subject` with the event's `fields`, each run reported
    /// as an event; what they decided together. Cancelling the turn kills them and decides
    /// nothing.
    pub(super) async fn run_hooks(
        &self,
        event: HookEvent,
        subject: Subject<'_>,
        fields: Value,
        events: &mpsc::UnboundedSender<Event>,
        cancel: &CancellationToken,
    ) -> Effect {
        if !self.config.hooks.has(event) {
            return Effect::default();
        }
        let Some(root) = self.ctx.workspace.roots().first() else {
            return Effect::default();
        };
        let fields = match fields {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        let hooks = self.hooks();
        let environment = self.ctx.shell_environment.clone();
        // A hook is a command: it reads the disk, which must hold the agent's changes (a
        // formatter after an edit), as for the shell tool.
        self.ctx.editor.sync_to_disk().await;
        let runs = tokio::select! {
            runs = hooks.run(event, subject, fields, root, &environment) => runs,
            () = cancel.cancelled() => return Effect::default(),
        };
        for (run, _) in &runs {
            self.emit(events, Event::Hook(run.clone()));
        }
        combined(&runs)
    }

    /// `SessionStart` (once, at the session's first prompt that reaches the model) and
    /// `UserPromptSubmit`: the context they add for the model, or the stop that ends the turn
    /// before the prompt joins the history.
    pub(super) async fn prompt_hooks(
        &mut self,
        prompt: &str,
        io: &mut TurnIo<'_>,
    ) -> Result<Vec<String>, Stop> {
        let mut context = Vec::new();
        if !self.hooks_started {
            self.hooks_started = true;
            let source = if self.history.is_empty() {
                "startup"
            } else {
                "resume"
            };
            let effect = self
                .run_hooks(
                    HookEvent::SessionStart,
                    Subject::Word(source),
                    json!({"source": source}),
                    io.events,
                    &io.cancel,
                )
                .await;
            if let Some(reason) = effect.stop {
                return Err(Stop(StopReason::EndTurn, Some(reason)));
            }
            context.extend(
                effect
                    .context
                    .map(|text| hook_context("SessionStart", &text)),
            );
        }
        let effect = self
            .run_hooks(
                HookEvent::UserPromptSubmit,
                Subject::None,
                json!({"prompt": prompt}),
                io.events,
                &io.cancel,
            )
            .await;
        if let Some(reason) = effect.stop {
            return Err(Stop(StopReason::EndTurn, Some(reason)));
        }
        if let Some(reason) = effect.block {
            return Err(Stop(
                StopReason::EndTurn,
                Some(format!(
                    "a UserPromptSubmit hook blocked the prompt: {reason}"
                )),
            ));
        }
        context.extend(
            effect
                .context
                .map(|text| hook_context("UserPromptSubmit", &text)),
        );
        Ok(context)
    }

    /// `Stop`, when the model answered without calls: the reason to go on with, which the
    /// caller sends as the next user message (at most `MAX_STOP_CONTINUATIONS` times in a row).
    pub(super) async fn stop_hooks(&mut self, io: &mut TurnIo<'_>) -> Option<String> {
        let active = self.stop_continuations > 0;
        // Gemini CLI's `AfterAgent` also gets the answer it follows, and the prompt.
        let answer = self.last_answer();
        let effect = self
            .run_hooks(
                HookEvent::Stop,
                Subject::None,
                json!({
                    "stop_hook_active": active,
                    "prompt": self.turn_prompt,
                    "prompt_response": answer,
                }),
                io.events,
                &io.cancel,
            )
            .await;
        if effect.stop.is_some() || self.stop_continuations >= MAX_STOP_CONTINUATIONS {
            return None;
        }
        let reason = effect.block?;
        self.stop_continuations += 1;
        Some(reason)
    }

    /// Sends the model back to work with a `Stop` hook's reason as the user's next words.
    pub(super) fn continue_after_stop_hook(&mut self, reason: &str) {
        let text = format!("A Stop hook asks you to continue:\n{reason}");
        match self.history.last_mut() {
            Some(message) if message.role == Role::User => message.parts.push(Part::Text { text }),
            _ => self.history.push(Message {
                role: Role::User,
                parts: vec![Part::Text { text }],
            }),
        }
        self.save_new_messages();
    }

    /// `PreToolUse` for a validated call.
    pub(super) async fn pre_tool_use(&self, call: &ToolCall, io: &mut TurnIo<'_>) -> Effect {
        self.run_hooks(
            HookEvent::PreToolUse,
            Subject::Tool(ToolSubject {
                id: &call.id,
                name: &call.name,
                arguments: &call.arguments,
                result: None,
            }),
            json!({}),
            io.events,
            &io.cancel,
        )
        .await
    }

    /// `PostToolUse` for a call that ran: what the hooks add to its result for the model.
    pub(super) async fn post_tool_use(
        &self,
        call: &ToolCall,
        result: &ToolResult,
        events: &mpsc::UnboundedSender<Event>,
        cancel: &CancellationToken,
    ) -> Effect {
        self.run_hooks(
            HookEvent::PostToolUse,
            Subject::Tool(ToolSubject {
                id: &call.id,
                name: &call.name,
                arguments: &call.arguments,
                result: Some((&result.content, result.is_error)),
            }),
            json!({}),
            events,
            cancel,
        )
        .await
    }

    /// Replaces a call's arguments in the history's last model message (a `PreToolUse` hook
    /// rewrote them), so the model sees what ran.
    pub(super) fn record_rewritten_call(&mut self, call: &ToolCall) {
        let Some(message) = self
            .history
            .iter_mut()
            .rev()
            .find(|message| message.role == Role::Assistant)
        else {
            return;
        };
        for part in &mut message.parts {
            if let Part::ToolCall(recorded) = part {
                if recorded.id == call.id {
                    recorded.arguments = call.arguments.clone();
                }
            }
        }
        self.save_history();
    }

    /// `Notification` when a call awaits the user's approval: run in the background, so the
    /// question is not held up; its run is reported while the turn still listens.
    pub(super) fn notify_approval(&self, call: &ToolCall, events: &mpsc::UnboundedSender<Event>) {
        if !self.config.hooks.has(HookEvent::Notification) {
            return;
        }
        let Some(root) = self.ctx.workspace.roots().first().cloned() else {
            return;
        };
        let hooks = self.hooks();
        let environment = self.ctx.shell_environment.clone();
        let events = events.downgrade();
        let fields = json!({
            "message": format!("Tandem needs your permission to use {}", call.name),
            "notification_type": "permission_prompt",
        });
        let Value::Object(fields) = fields else {
            return;
        };
        tokio::spawn(async move {
            let runs = hooks
                .run(
                    HookEvent::Notification,
                    Subject::None,
                    fields,
                    &root,
                    &environment,
                )
                .await;
            for (run, _) in runs {
                match events.upgrade() {
                    Some(events) => {
                        let _ = events.send(Event::Hook(run));
                    }
                    None => tracing::info!(?run, "a Notification hook ran after its turn"),
                }
            }
        });
    }

    /// `PreCompact`, before the history is compressed (`manual` or `auto`).
    pub(super) async fn pre_compact_hooks(&self, trigger: &str, io: &mut TurnIo<'_>) {
        self.run_hooks(
            HookEvent::PreCompact,
            Subject::Word(trigger),
            json!({"trigger": trigger, "custom_instructions": ""}),
            io.events,
            &io.cancel,
        )
        .await;
    }

    /// `SessionEnd`, when the session's runner ends (the session closed, the process shutting
    /// down); bounded by the hooks' timeouts. There is no turn to report to: runs are logged.
    pub async fn end_hooks(&self, reason: &str) {
        if !self.config.hooks.has(HookEvent::SessionEnd) {
            return;
        }
        let Some(root) = self.ctx.workspace.roots().first() else {
            return;
        };
        let mut fields = Map::new();
        fields.insert("reason".into(), json!(reason));
        let runs = self
            .hooks()
            .run(
                HookEvent::SessionEnd,
                Subject::None,
                fields,
                root,
                &self.ctx.shell_environment,
            )
            .await;
        for (run, _) in runs {
            tracing::info!(?run, "SessionEnd hook");
        }
    }
}

/// Context a hook added, as the model sees it.
pub(super) fn hook_context(event: &str, text: &str) -> String {
    format!("<hook_context event=\"{event}\">\n{text}\n</hook_context>")
}
