//! The sampling loop. `prompt_turn` turns the user's prompt into a user message (the
//! environment on a history's first prompt, notes, the IDE context, attachments) and runs
//! `turn` under a checkpoint recorder: request the model, stream its answer to the front end,
//! run the calls it made (`scheduler`), send the results, and repeat until it answers without
//! tools or the turn must stop. No request is sent over the model's context window: tool outputs
//! are shortened and the conversation compressed first (`fit_window`), and a request the
//! provider still refuses as too long is retried once after a compression.

use std::sync::Arc;

use futures::StreamExt;
use tandem_providers::{
    ChatRequest, Message, Part, ProviderError, Response, Role, StreamEvent, ToolCall, ToolResult,
};

use super::commands::save_output;
use super::loop_detection::{repeating, TextLoopDetector};
use super::recording::lock;
use super::{Prompt, Session, Stop, TurnIo};
use crate::checkpoint::{CheckpointEditor, TurnCheckpoint};
use crate::next_speaker::{self, Announcement, NextSpeakerCheck};
use crate::store::Record;
use crate::tokens;
use tandem_protocol::{CompressionStatus, Event, StopReason, UsageReport};

/// How long the model may take to say who speaks next before the turn just ends.
const NEXT_SPEAKER_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

impl Session {
    pub(super) async fn prompt_turn(
        &mut self,
        prompt: Prompt,
        turn_id: &str,
        io: &mut TurnIo<'_>,
    ) -> Stop {
        self.stop_continuations = 0;
        if !prompt.images.is_empty() && !self.model.config().images {
            // Refused before anything is added to the history: the prompt can be sent again
            // without the images, or to a model that sees.
            let message = tandem_tools::view_image::cannot_see(&self.model.config().model);
            return Stop(
                StopReason::Error,
                Some(format!("The prompt has an image, but {message}.")),
            );
        }
        self.turn_prompt.clone_from(&prompt.text);
        let hook_context = match self.prompt_hooks(&prompt.text, io).await {
            Ok(context) => context,
            Err(stop) => return stop,
        };
        // A model whose window is its server's to say (Ollama) is asked now, so that the
        // compression check below uses the window the model really runs with (a resumed
        // session's history may not fit it). A failure is the first request's to report.
        tokio::select! {
            _ = self.model.resolve_context_window() => {}
            _ = io.cancel.cancelled() => {}
        }
        // Compressing before the prompt is added means the prompt, sent after it, carries the
        // whole IDE context again.
        self.compress_if_full(io).await;
        // What repo maps (the first prompt's, the repo_map tool's) rank toward.
        if let Some(state) = &prompt.ide {
            let active = state.active.as_ref().map(|active| active.path.clone());
            self.ctx
                .session
                .set_editor_focus(active, state.open.clone());
        }
        self.ctx
            .session
            .set_mentioned(tandem_tools::symbols::identifiers_in(&prompt.text));
        let mut parts = Vec::new();
        if self.history.is_empty() {
            // The MCP servers get time to start, so that the first request declares their
            // tools: in one-shot use until they started, in an editor a moment, after which a
            // slower one joins later (the reminder says so).
            if let Some(mcp) = self.mcp.clone() {
                tokio::select! {
                    _ = mcp.wait_started(self.config.mcp_start_wait) => {}
                    _ = io.cancel.cancelled() => {}
                }
            }
            parts.extend(self.environment_parts(&io.cancel).await);
        }
        parts.extend(self.pending_notes.drain(..).map(|text| Part::Text { text }));
        if let Some(state) = &prompt.ide {
            let workspace = self.ctx.workspace.clone();
            if let Some(text) = self.ide.render(state, &|path| workspace.display(path)) {
                parts.push(Part::Text { text });
            }
        }
        parts.extend(hook_context.into_iter().map(|text| Part::Text { text }));
        let mut text = prompt.text;
        for attachment in prompt.context {
            if let Some(shown) = &attachment.shown {
                self.ctx.session.mark_shown(
                    &shown.path,
                    shown.content.as_bytes(),
                    shown.version,
                    shown.lines,
                );
            }
            text.push_str(&format!(
                "\n\n<context label=\"{}\">\n{}\n</context>",
                attachment.label, attachment.text
            ));
        }
        parts.push(Part::Text { text });
        parts.extend(prompt.images.into_iter().map(Part::Image));
        // After a turn that ended on a failed model request the last message is the user's;
        // the new prompt joins it so that roles keep alternating.
        let last = self.history.len().checked_sub(1);
        match self.history.last_mut() {
            Some(message) if message.role == Role::User => {
                message.parts.extend(parts);
                if let Some(last) = last {
                    self.prefix.lengths.truncate(last);
                    if last < self.logged {
                        self.save_history();
                    }
                }
            }
            _ => self.history.push(Message {
                role: Role::User,
                parts,
            }),
        }
        self.save_new_messages();
        self.last_call = None;
        self.repeat_note = None;

        // Every write of the turn goes through a recorder, so `/restore` can take it back.
        let recorder = Arc::new(CheckpointEditor::new(self.ctx.editor.clone()));
        let editor = std::mem::replace(&mut self.ctx.editor, recorder.clone());
        let stop = self.turn(io).await;
        self.ctx.editor = editor;
        let files = recorder.files();
        if !files.is_empty() {
            let checkpoint = TurnCheckpoint {
                turn_id: turn_id.to_owned(),
                files,
            };
            self.save(&Record::Checkpoint(checkpoint.clone()));
            self.checkpoints.push(checkpoint);
        }
        stop
    }

    async fn turn(&mut self, io: &mut TurnIo<'_>) -> Stop {
        let mut continuations = 0;
        for request in 0..self.config.max_turns {
            if request > 0 {
                self.compress_if_full(io).await;
            }
            let (response, stop) = self.model_request(io).await;
            let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
            if !response.message.parts.is_empty() {
                self.history.push(response.message);
                if let Some(usage) = response.usage {
                    self.usage_mark =
                        Some((usage.input_tokens + usage.output_tokens, self.history.len()));
                }
            }
            self.save_new_messages();
            if let Some(stop) = stop {
                // The model was cut off: its calls (if any) are answered as not run.
                self.answer_unrun(&calls, "not run: the turn ended before it could run");
                return stop;
            }
            if calls.is_empty() {
                if continuations < next_speaker::MAX_CONTINUATIONS && self.model_goes_on(io).await {
                    continuations += 1;
                    self.history.push(Message {
                        role: Role::User,
                        parts: vec![Part::Text {
                            text: next_speaker::CONTINUE_PROMPT.to_owned(),
                        }],
                    });
                    self.save_new_messages();
                    continue;
                }
                if let Some(reason) = self.stop_hooks(io).await {
                    self.continue_after_stop_hook(&reason);
                    continue;
                }
                return Stop(StopReason::EndTurn, None);
            }
            if let Some(stop) = self.detect_repeated_call(&calls) {
                self.answer_unrun(
                    &calls,
                    "not run: you repeated the same call; try something different",
                );
                return stop;
            }
            // Half of what the window leaves after the fixed prefix, for one call's output.
            let room = self.request_budget().saturating_sub(self.frozen().tokens);
            self.ctx.output_limit = Some(
                usize::try_from(room)
                    .unwrap_or(usize::MAX)
                    .saturating_mul(tokens::BYTES_PER_TOKEN)
                    / 2,
            );
            let (mut results, images, stop) = self.run_calls(&calls, io).await;
            self.fit_outputs(&mut results);
            self.history.push(Message {
                role: Role::User,
                parts: results
                    .into_iter()
                    .map(Part::ToolResult)
                    .chain(images.into_iter().map(Part::Image))
                    .collect(),
            });
            self.save_new_messages();
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

    /// Whether the model's answer, just added to the history without tool calls, announced an
    /// action it has not taken (`next_speaker`): then the turn goes on instead of ending.
    async fn model_goes_on(&self, io: &TurnIo<'_>) -> bool {
        let mode = self.config.next_speaker;
        if mode == NextSpeakerCheck::Off || io.cancel.is_cancelled() {
            return false;
        }
        let Some(answer) = self
            .history
            .last()
            .filter(|message| message.role == Role::Assistant)
        else {
            return false;
        };
        let text = answer.text();
        match next_speaker::announcement(&text) {
            Announcement::Clear => {
                tracing::info!("the answer announced an action; the model goes on");
                true
            }
            Announcement::Possible if mode == NextSpeakerCheck::Model => {
                let request = next_speaker::check_request(&text);
                let verdict = tokio::time::timeout(
                    NEXT_SPEAKER_CHECK_TIMEOUT,
                    self.model.complete(request, io.cancel.clone()),
                )
                .await;
                match verdict {
                    Ok(Ok(response)) => {
                        let goes_on = next_speaker::parse_verdict(&response) == Some(true);
                        tracing::info!(goes_on, "asked the model who speaks next");
                        goes_on
                    }
                    Ok(Err(error)) => {
                        tracing::warn!("the next-speaker check failed ({error}); the turn ends");
                        false
                    }
                    Err(_) => {
                        tracing::warn!("the next-speaker check timed out; the turn ends");
                        false
                    }
                }
            }
            Announcement::Possible | Announcement::None => false,
        }
    }

    /// One model request, streamed to the front end. Returns the (possibly partial) response
    /// and, when the turn must end, why. A request the provider refuses as too long for the
    /// context window is retried once after a compression.
    async fn model_request(&mut self, io: &mut TurnIo<'_>) -> (Response, Option<Stop>) {
        loop {
            let request = match self.fit_window(io).await {
                Ok(request) => request,
                Err(stop) => return (Response::default(), Some(stop)),
            };
            match self.stream_response(request, io).await {
                Streamed::Done(response, stop) => return (response, stop),
                Streamed::Overflow(error) => {
                    if !self.overflow_retried {
                        self.overflow_retried = true;
                        self.compress_paused_until = None;
                        let report = self.compress_history(io).await;
                        if report.status == CompressionStatus::Compressed {
                            continue;
                        }
                    }
                    return (
                        Response::default(),
                        Some(Stop(
                            StopReason::Error,
                            Some(format!(
                                "{error}; compressing the conversation did not make it fit. \
                                 Start a new session, or use a model with a larger context window"
                            )),
                        )),
                    );
                }
            }
        }
    }

    /// The next request, made to fit the model's window with room for the answer: when it
    /// would not, tool outputs are shortened (oldest first, head and tail kept, the full output
    /// saved for `read_file`), then the conversation is compressed, then outputs are shortened
    /// further. A request that still does not fit is not sent: the turn ends saying why.
    async fn fit_window(&mut self, io: &mut TurnIo<'_>) -> Result<ChatRequest, Stop> {
        self.sync_tools();
        let budget = self.request_budget();
        let mut compressed = false;
        loop {
            let mut request = self.next_request();
            let size = tokens::estimate_request(&request);
            if size <= budget {
                self.limit_answer(&mut request, size);
                return Ok(request);
            }
            // The system instruction, tools and reminder: what shortening cannot touch.
            let fixed = size.saturating_sub(tokens::estimate_history(&self.history));
            let mut history = self.history.clone();
            let (changed, fits) = self.fit_messages(&mut history, fixed, budget);
            if changed {
                tracing::info!(
                    "a request of about {size} tokens would not fit the {budget} tokens the \
                     window leaves; tool outputs were shortened"
                );
                // Only tool outputs changed: what the model was told (reminders, the editor)
                // and the frozen prefix still hold, so they are kept across the replacement.
                let told = std::mem::take(&mut self.told);
                let ide = std::mem::take(&mut self.ide);
                let frozen = self.frozen.take();
                self.replace_history(history);
                (self.told, self.ide, self.frozen) = (told, ide, frozen);
            }
            if fits {
                continue;
            }
            if !compressed {
                compressed = true;
                if self.compress_history(io).await.status == CompressionStatus::Compressed {
                    continue;
                }
            }
            let window = self.model.config().context_window;
            return Err(Stop(
                StopReason::Error,
                Some(format!(
                    "the next request would take about {size} tokens, more than the model's \
                     context window of {window} tokens leaves with room for the answer, even \
                     after shortening tool outputs and summarising the conversation; shorten \
                     the prompt, start a new session, or use a model with a larger context \
                     window"
                )),
            ));
        }
    }

    /// The most a request may take, in estimated tokens: the model's context window less room
    /// for the answer: its output limit, but at most an eighth of the window (or 1,024 tokens,
    /// if that is more, up to a quarter): small windows spend most of themselves on the system
    /// instruction and tool declarations, and an answer is a few hundred tokens. Estimated
    /// tokens are scaled by what the provider's counts showed them to be worth.
    pub(super) fn request_budget(&self) -> u64 {
        let config = self.model.config();
        let window = config.context_window;
        let room = (window / 8).max(1024.min(window / 4));
        let budget = window.saturating_sub(u64::from(config.max_output_tokens).min(room));
        (budget as f64 / self.tokens_per_estimate) as u64
    }

    /// Lowers the answer's token limit for `request` (of `size` estimated tokens) to what the
    /// window leaves, when the model's own limit would not fit beside it: some providers refuse
    /// a request whose input and output limit together pass the window, rather than stopping
    /// the answer when it fills up.
    pub(super) fn limit_answer(&self, request: &mut ChatRequest, size: u64) {
        let config = self.model.config();
        let input = (size as f64 * self.tokens_per_estimate).ceil() as u64;
        // An estimate is not a count: a little slack for what it misses.
        let slack = config.context_window / 64;
        let left = config.context_window.saturating_sub(input + slack);
        let limit = request
            .settings
            .max_output_tokens
            .unwrap_or(config.max_output_tokens);
        if left < u64::from(limit) {
            request.settings.max_output_tokens = Some(u32::try_from(left).unwrap_or(limit).max(1));
        }
    }

    /// Learns from the provider's count of a request's input tokens how many of its tokens one
    /// estimated token is worth (at least 1, at most 4: a count far off is more likely a
    /// provider's quirk than a tokenizer).
    fn calibrate(&mut self, counted: u64, estimated: u64) {
        if counted > 0 && estimated > 0 {
            self.tokens_per_estimate = (counted as f64 / estimated as f64).clamp(1.0, 4.0);
        }
    }

    /// Shortens each output over what one call may return in this window (head and tail kept,
    /// the full output saved for `read_file`): the reading tools size themselves, but any other
    /// tool's output could still take more than the window leaves.
    fn fit_outputs(&self, results: &mut [ToolResult]) {
        if self.ctx.output_limit.is_none() {
            return;
        }
        let limit = self.ctx.output_budget(usize::MAX);
        let outputs = lock(&self.log)
            .as_ref()
            .map(|state| state.log.outputs_dir());
        for result in results
            .iter_mut()
            .filter(|result| result.content.len() > limit)
        {
            crate::compress::shorten_output(result, limit, &mut |result| {
                save_output(outputs.as_deref(), result)
            });
        }
    }

    /// Shortens the tool outputs of `messages` (oldest first, in rounds that keep less of each)
    /// until they and `fixed` tokens fit `budget`. Full outputs are saved next to the session,
    /// where `read_file` can read them. Returns whether anything changed and whether it fits.
    pub(super) fn fit_messages(
        &self,
        messages: &mut [Message],
        fixed: u64,
        budget: u64,
    ) -> (bool, bool) {
        let outputs = lock(&self.log)
            .as_ref()
            .map(|state| state.log.outputs_dir());
        let mut save = |result: &ToolResult| save_output(outputs.as_deref(), result);
        let budget_bytes = usize::try_from(budget)
            .unwrap_or(usize::MAX)
            .saturating_mul(tokens::BYTES_PER_TOKEN);
        let mut changed = false;
        for keep in [budget_bytes / 8, budget_bytes / 32, 0] {
            let size = fixed + tokens::estimate_history(messages);
            if size <= budget {
                return (changed, true);
            }
            changed |=
                crate::compress::shorten_outputs(messages, size - budget, keep, &mut save) > 0;
        }
        (
            changed,
            fixed + tokens::estimate_history(messages) <= budget,
        )
    }

    async fn stream_response(&mut self, request: ChatRequest, io: &mut TurnIo<'_>) -> Streamed {
        let estimated = tokens::estimate_request(&request);
        // The provider's count of the request's input tokens, once it reports one.
        let mut counted = 0;
        let mut stream = self.model.stream(request, io.cancel.clone());
        let mut response = Response::default();
        let mut repetition = TextLoopDetector::default();
        // Reasoning can loop as well as the answer, and a model stuck there streams it forever.
        let mut thought_repetition = TextLoopDetector::default();
        let window = self.context_window();
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(ProviderError::Cancelled) => {
                    return Streamed::Done(response, Some(Stop(StopReason::Cancelled, None)));
                }
                Err(error @ ProviderError::ContextWindowExceeded { .. }) => {
                    return Streamed::Overflow(error.to_string());
                }
                // A runaway response (thinking or repeating without end): what it streamed is
                // too large to keep, and not an answer.
                Err(error @ ProviderError::ResponseLimitExceeded { .. }) => {
                    return Streamed::Done(
                        Response::default(),
                        Some(Stop(StopReason::ResponseLimit, Some(error.to_string()))),
                    );
                }
                Err(error) => {
                    // The partial answer is dropped: it may end mid-sentence or mid-call.
                    return Streamed::Done(
                        Response::default(),
                        Some(Stop(StopReason::Error, Some(error.to_string()))),
                    );
                }
            };
            response.push(&event);
            match event {
                StreamEvent::TextDelta { text } => {
                    let stuck = repetition.push(&text);
                    self.emit(io.events, Event::TextChunk { text });
                    if stuck {
                        return Streamed::Done(response, Some(repeating("text")));
                    }
                }
                StreamEvent::ThoughtDelta { text } => {
                    let stuck = thought_repetition.push(&text);
                    self.emit(io.events, Event::ThoughtChunk { text });
                    if stuck {
                        return Streamed::Done(response, Some(repeating("reasoning")));
                    }
                }
                StreamEvent::Usage(usage) => {
                    counted = counted.max(usage.input_tokens);
                    self.emit(
                        io.events,
                        Event::Usage(UsageReport {
                            usage,
                            context_tokens: usage.input_tokens + usage.output_tokens,
                            context_window: window,
                            estimated: false,
                        }),
                    );
                }
                StreamEvent::Retrying {
                    attempt,
                    delay,
                    error,
                } => {
                    repetition = TextLoopDetector::default();
                    thought_repetition = TextLoopDetector::default();
                    self.emit(
                        io.events,
                        Event::Retrying {
                            attempt,
                            delay_ms: delay.as_millis() as u64,
                            error,
                        },
                    );
                }
                _ => {}
            }
        }
        self.calibrate(counted, estimated);
        if response.usage.is_none() {
            // No count from the provider: the figure is Tandem's estimate, history included.
            let (tokens, _) = self.context_tokens();
            let answer = tokens::estimate_message(&response.message);
            self.emit(
                io.events,
                Event::Usage(UsageReport {
                    usage: tandem_providers::Usage::default(),
                    context_tokens: tokens + answer,
                    context_window: window,
                    estimated: true,
                }),
            );
        }
        Streamed::Done(response, None)
    }
}

/// How a streamed response ended.
enum Streamed {
    Done(Response, Option<Stop>),
    /// The provider said the request does not fit the context window.
    Overflow(String),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use tandem_providers::{Model, ModelConfig, ProviderKind};
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::super::{AgentConfig, ContextSettings};
    use super::*;
    use tandem_protocol::CompressionReport;
    use tandem_tools::ToolContext;

    /// A session with a 1,000-token compression window whose model answers from `script`.
    fn session(script: &[serde_json::Value]) -> (tempfile::TempDir, Session) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let lines: Vec<String> = script.iter().map(|line| line.to_string()).collect();
        let path = dir.path().join("script.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let mut model = ModelConfig::new(ProviderKind::Replay, "replay", "");
        model.script = Some(path);
        model.idle_timeout = Duration::from_secs(30);
        let config = AgentConfig {
            context: ContextSettings {
                context_window: Some(1_000),
                ..ContextSettings::default()
            },
            ..AgentConfig::default()
        };
        let ctx = ToolContext::on_disk(vec![root]);
        let session = Session::new(Model::new(model).unwrap(), Vec::new(), ctx, config);
        (dir, session)
    }

    /// Runs one prompt; returns the compression reports it sent.
    async fn compressions(session: &mut Session, text: &str) -> Vec<CompressionReport> {
        let (sender, mut events) = mpsc::unbounded_channel();
        let (_approve, mut approvals) = mpsc::unbounded_channel();
        let mut io = TurnIo {
            events: &sender,
            approvals: &mut approvals,
            cancel: CancellationToken::new(),
        };
        let reason = session
            .run_turn(super::super::Prompt::text(text), &mut io)
            .await;
        assert_eq!(reason, StopReason::EndTurn);
        let mut reports = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let Event::Compression(report) = event {
                reports.push(report);
            }
        }
        reports
    }

    #[tokio::test]
    async fn an_inflated_summary_pauses_automatic_compression_only_until_the_history_grows() {
        let snapshot = "<state_snapshot><overall_goal>Answer.</overall_goal></state_snapshot>";
        let inflated = format!("<state_snapshot>{}</state_snapshot>", "x".repeat(4_000));
        let usage = |tokens: u64| json!({"inputTokens": tokens, "outputTokens": 10});
        // About 170 tokens of text that does not repeat (a repeating answer is a stuck model).
        let long = |word: &str| -> String { (1..=100).map(|n| format!("{word}{n} ")).collect() };
        let (_dir, mut session) = session(&[
            json!({"text": long("short"), "usage": usage(900)}),
            json!({"text": inflated}),
            json!({"text": "answer two", "usage": usage(950)}),
            // No compression before this one: the history has hardly grown.
            json!({"text": long("long"), "usage": usage(990)}),
            // It has grown by more than a tenth of the window: compression is tried again.
            json!({"text": snapshot}),
            json!({"text": "answer four"}),
        ]);
        assert!(compressions(&mut session, "one").await.is_empty());

        let reports = compressions(&mut session, "two").await;
        assert_eq!(reports.len(), 1, "{reports:#?}");
        assert_eq!(reports[0].status, CompressionStatus::Inflated);
        let message = reports[0].message.as_deref().unwrap_or_default();
        assert!(
            message.contains("so it was thrown away and the conversation was kept as it was")
                && message
                    .contains("try again once the conversation has grown by about 100 tokens")
                && message.contains("/compress"),
            "{message}"
        );

        assert!(compressions(&mut session, "three").await.is_empty());

        let reports = compressions(&mut session, "four").await;
        assert_eq!(reports.len(), 1, "{reports:#?}");
        assert_eq!(reports[0].status, CompressionStatus::Compressed);
        assert!(session.history()[0].text().contains(snapshot));
        assert_eq!(session.history().last().unwrap().text(), "answer four");
    }
}
