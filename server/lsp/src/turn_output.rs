//! How a turn's events reach the editor: `tandem/event` notifications for clients that asked
//! for them; for the others a `$/progress` work-done progress, and the answer through
//! `window/showMessage` and `window/logMessage`. Approvals go to `tandem/requestApproval`, else
//! `window/showMessageRequest`, else the call is refused and the user told why.
//!
//! One task per turn follows the turn's `TurnHandle` from the core's session host; answers to
//! approvals go back on the handle. A turn another front end queued (a terminal attached to
//! this server) is followed the same way from the host's watch (`follow_foreign`): only as
//! `tandem/event`s carrying its `origin`, its approvals only through `tandem/requestApproval`,
//! answered through the host.

use std::sync::Arc;

use serde_json::{json, Value};
use tandem_agent::host::{first_line, outcome_line, shorten, TurnEvent, TurnHandle};
use tandem_agent::{ApprovalDecision, Event, StopReason, ToolCallStatus, ToolCallUpdate};
use tokio::sync::mpsc;
use tower_lsp::lsp_types::notification::Notification;
use tower_lsp::lsp_types::{
    self as lsp, MessageType, NumberOrString, ProgressParams, ProgressParamsValue, ProgressToken,
    WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressCreateParams, WorkDoneProgressEnd,
    WorkDoneProgressReport,
};
use tracing::{debug, warn};
use url::Url;

use crate::approvals;
use crate::host::{lock, token_key, AgentHost};

/// How much of the answer `window/showMessage` shows; the log has all of it.
const SHORT_ANSWER_CHARS: usize = 300;
/// How long a turn waits for the client to accept a progress token before going on without.
const PROGRESS_CREATE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `tandem/event`: a session's event, for clients that declared `events`.
pub(crate) enum EventNotification {}

impl Notification for EventNotification {
    type Params = Value;
    const METHOD: &'static str = "tandem/event";
}

/// What a turn sends where, decided once per turn from the client's capabilities.
pub(crate) struct TurnOutput {
    host: Arc<AgentHost>,
    session_id: String,
    turn_id: String,
    events: bool,
    progress: Option<ProgressToken>,
    approvals: mpsc::UnboundedSender<(String, ApprovalDecision)>,
    answer: String,
    /// The calls not run because this editor could not show an approval prompt.
    unasked: Arc<approvals::Unasked>,
    /// Another front end queued the turn (a terminal attached to this server): its origin.
    /// Such a turn goes only to clients with events, marked with it; approvals are asked only
    /// through `tandem/requestApproval` (a client that cannot show one leaves the question to
    /// the front end that queued the turn); no progress, no messages.
    foreign: Option<String>,
}

impl TurnOutput {
    /// Follows a queued turn until it ends, in a task of its own.
    pub(crate) fn follow(
        host: Arc<AgentHost>,
        handle: TurnHandle,
        progress: Option<ProgressToken>,
    ) {
        let TurnHandle {
            session_id,
            turn_id,
            events,
            approvals,
        } = handle;
        let output = TurnOutput {
            events: host.support().tandem.events,
            host,
            session_id,
            turn_id,
            progress: None,
            approvals,
            answer: String::new(),
            unasked: Arc::default(),
            foreign: None,
        };
        tokio::spawn(output.run(events, progress));
    }

    /// Follows a turn another front end queued (`events`: what the host's watch gave of it),
    /// in a task of its own. Answers to its approvals go to the host, where the first answer
    /// from any front end wins.
    pub(crate) fn follow_foreign(
        host: Arc<AgentHost>,
        session_id: String,
        turn_id: String,
        origin: Option<String>,
        events: mpsc::UnboundedReceiver<TurnEvent>,
    ) {
        let (approvals, mut answers) = mpsc::unbounded_channel::<(String, ApprovalDecision)>();
        let core = host.core().clone();
        let (session, turn) = (session_id.clone(), turn_id.clone());
        tokio::spawn(async move {
            while let Some((call_id, decision)) = answers.recv().await {
                let _ = core.approve(&session, &turn, &call_id, decision);
            }
        });
        let output = TurnOutput {
            events: host.support().tandem.events,
            host,
            session_id,
            turn_id,
            progress: None,
            approvals,
            answer: String::new(),
            unasked: Arc::default(),
            foreign: Some(origin.unwrap_or_else(|| "another front end".to_owned())),
        };
        tokio::spawn(output.run(events, None));
    }

    async fn run(
        mut self,
        mut events: mpsc::UnboundedReceiver<TurnEvent>,
        progress: Option<ProgressToken>,
    ) {
        let output = &mut self;
        {
            let mut progress = progress;
            while let Some(event) = events.recv().await {
                match event {
                    TurnEvent::Started { text } => {
                        output.start_progress(progress.take(), &text).await;
                        output
                            .send_event(json!({"type": "turnStarted", "text": text}))
                            .await;
                    }
                    TurnEvent::Agent(Event::TurnFinished {
                        stop_reason,
                        message,
                    }) => output.finish(stop_reason, message).await,
                    TurnEvent::Agent(event) => output.event(event).await,
                }
            }
        }
    }

    async fn send_event(&self, event: Value) {
        if !self.events {
            return;
        }
        let mut params = json!({
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "event": event,
        });
        if let Some(origin) = &self.foreign {
            params["origin"] = json!(origin);
        }
        self.host
            .client
            .send_notification::<EventNotification>(params)
            .await;
    }

    async fn start_progress(&mut self, token: Option<ProgressToken>, prompt: &str) {
        let support = self.host.support();
        if self.events || self.foreign.is_some() || !support.work_done_progress && token.is_none() {
            return;
        }
        let token = match token {
            Some(token) => token,
            None => {
                let token = NumberOrString::String(format!("tandem/{}", self.turn_id));
                let create = self
                    .host
                    .client
                    .send_request::<lsp::request::WorkDoneProgressCreate>(
                        WorkDoneProgressCreateParams {
                            token: token.clone(),
                        },
                    );
                // A client that loses the request (lsp-mode before its fix for #4323) would
                // hold the turn's output for ever; progress is not worth more than a moment's
                // wait.
                match tokio::time::timeout(PROGRESS_CREATE_WAIT, create).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => {
                        debug!("the client refused a progress token: {error}");
                        return;
                    }
                    Err(_) => {
                        warn!(
                            "the client did not answer window/workDoneProgress/create within \
                             {PROGRESS_CREATE_WAIT:?}; the turn goes on without progress"
                        );
                        return;
                    }
                }
                token
            }
        };
        lock(&self.host.progress).insert(
            token_key(&token),
            (self.session_id.clone(), self.turn_id.clone()),
        );
        self.progress(
            &token,
            WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "Tandem".to_owned(),
                cancellable: Some(true),
                message: Some(first_line(prompt, 80)),
                percentage: None,
            }),
        )
        .await;
        self.progress = Some(token);
    }

    async fn progress(&self, token: &ProgressToken, value: WorkDoneProgress) {
        self.host
            .client
            .send_notification::<lsp::notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(value),
            })
            .await;
    }

    async fn event(&mut self, event: Event) {
        match &event {
            Event::TextChunk { text } => self.answer.push_str(text),
            Event::Retrying { .. } => self.answer.clear(),
            Event::ToolCall(update) => self.tool_call(update).await,
            _ => {}
        }
        if let Ok(mut value) = serde_json::to_value(&event) {
            add_uris(&mut value);
            // A subagent's event, nested under the parent's call.
            if let Some(nested) = value.get_mut("event") {
                add_uris(nested);
            }
            self.send_event(value).await;
        }
    }

    async fn tool_call(&mut self, update: &ToolCallUpdate) {
        match update.status {
            ToolCallStatus::Executing => {
                if let Some(token) = &self.progress {
                    let message = match &update.progress {
                        Some(progress) => format!("{}: {progress}", update.title),
                        None => update.title.clone(),
                    };
                    let report = WorkDoneProgress::Report(WorkDoneProgressReport {
                        message: Some(message),
                        cancellable: Some(true),
                        percentage: None,
                    });
                    self.progress(token, report).await;
                }
            }
            ToolCallStatus::AwaitingApproval => self.ask_approval(update.clone()),
            _ => {}
        }
    }

    /// Asks the user about a call, in the background so that events keep flowing.
    fn ask_approval(&mut self, update: ToolCallUpdate) {
        let client = self.host.client.clone();
        let answers = self.approvals.clone();
        let rich = self.host.support().tandem.request_approval;
        if self.foreign.is_some() && !rich {
            return;
        }
        if rich {
            let mut tool_call = serde_json::to_value(&update).unwrap_or(Value::Null);
            add_uris(&mut tool_call);
            if let Value::Object(fields) = &mut tool_call {
                fields.insert("type".to_owned(), json!("toolCall"));
            }
            let mut params = approvals::request_params(&self.session_id, &self.turn_id, tool_call);
            match &self.foreign {
                Some(origin) => {
                    params["origin"] = json!(origin);
                    approvals::ask_rich_for_another(client, params, update.call_id, answers);
                }
                None => approvals::ask_rich(client, params, update.call_id, answers),
            }
        } else {
            approvals::ask_plain(client, &update, answers, Arc::clone(&self.unasked));
        }
    }

    async fn finish(&mut self, reason: StopReason, message: Option<String>) {
        let final_answer = self.answer.trim().to_owned();
        let outcome = outcome_line(reason, message.as_deref());
        let event = Event::TurnFinished {
            stop_reason: reason,
            message: message.clone(),
        };
        if let Ok(value) = serde_json::to_value(&event) {
            self.send_event(value).await;
        }
        if let Some(token) = self.progress.take() {
            lock(&self.host.progress).remove(&token_key(&token));
            self.progress(
                &token,
                WorkDoneProgress::End(WorkDoneProgressEnd {
                    message: Some(outcome.clone()),
                }),
            )
            .await;
        }
        if !self.events && self.foreign.is_none() {
            match message.as_deref() {
                Some(text)
                    if reason == StopReason::Error
                        && text.starts_with(tandem_providers::NOT_SET_UP) =>
                {
                    self.show_not_set_up(text).await;
                }
                _ => self.show_answer(reason, &outcome, &final_answer).await,
            }
        }
    }

    /// Plain clients: a model that cannot be used yet ("Tandem is not set up: …", from the
    /// settings or from the provider) in a message the first time, in the log after that.
    async fn show_not_set_up(&self, text: &str) {
        let client = &self.host.client;
        if lock(&self.host.told_not_set_up).insert(text.to_owned()) {
            client.show_message(MessageType::WARNING, text).await;
        } else {
            client.log_message(MessageType::WARNING, text).await;
        }
    }

    /// Plain clients: the answer in a message (short) and in the log (whole).
    async fn show_answer(&self, reason: StopReason, outcome: &str, full: &str) {
        let client = &self.host.client;
        if !full.is_empty() {
            client
                .log_message(MessageType::INFO, format!("Tandem:\n{full}"))
                .await;
        }
        let (kind, text) = answer_message(reason, outcome, full, self.unasked.summary());
        client.show_message(kind, text).await;
    }
}

/// The message that ends a turn in a plain client: one line, since editors that show messages
/// in a status line (Helix) run the lines together and keep only the newest message. It starts
/// with the calls that were not run for want of an approval prompt (`unasked`), which an
/// earlier message told but this one replaces, then the answer's start.
fn answer_message(
    reason: StopReason,
    outcome: &str,
    full: &str,
    unasked: Option<String>,
) -> (MessageType, String) {
    let (kind, answer) = match reason {
        StopReason::EndTurn if full.is_empty() => (MessageType::INFO, outcome.to_owned()),
        StopReason::EndTurn => {
            let joined = one_line(full);
            let short = shorten(&joined, SHORT_ANSWER_CHARS);
            let more = if short != joined {
                " (the whole answer is in the output log; the command tandem.showTranscript shows the transcript)"
            } else {
                ""
            };
            (MessageType::INFO, format!("Tandem: {short}{more}"))
        }
        StopReason::Cancelled => (MessageType::INFO, format!("Tandem: {outcome}")),
        _ => (
            MessageType::WARNING,
            format!("Tandem: {}", one_line(outcome)),
        ),
    };
    match unasked {
        Some(unasked) => (MessageType::WARNING, format!("{unasked} {answer}")),
        None => (kind, answer),
    }
}

/// `text`'s lines, trimmed, without the blank ones, joined by spaces.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Gives the event's paths a `uri` beside them, for editors.
pub(crate) fn add_uris(value: &mut Value) {
    let with_uri = |item: &mut Value| {
        let uri = item
            .get("path")
            .and_then(Value::as_str)
            .and_then(|path| Url::from_file_path(path).ok());
        if let (Some(uri), Value::Object(fields)) = (uri, item) {
            fields.insert("uri".to_owned(), json!(uri));
        }
    };
    if let Some(Value::Array(locations)) = value.get_mut("locations") {
        locations.iter_mut().for_each(with_uri);
    }
    if let Some(diff) = value.get_mut("diff") {
        with_uri(diff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression test for Helix showing `result.Things to watch` (its status line runs lines
    /// together) and losing the message about a refused call, replaced 4 ms later by this one.
    #[test]
    fn the_last_message_is_one_line_and_keeps_the_refusal() {
        let answer = "Done: it returns the result.\n\nThings to watch:\n- the empty case\n";
        assert_eq!(
            answer_message(StopReason::EndTurn, "done", answer, None),
            (
                MessageType::INFO,
                "Tandem: Done: it returns the result. Things to watch: - the empty case".to_owned()
            )
        );
        let unasked = "Not run, as this editor cannot show approval prompts: Run `make`.";
        assert_eq!(
            answer_message(
                StopReason::EndTurn,
                "done",
                "I could not build it.",
                Some(unasked.to_owned())
            ),
            (
                MessageType::WARNING,
                format!("{unasked} Tandem: I could not build it.")
            )
        );
        let long = "word ".repeat(100);
        let (_, text) = answer_message(StopReason::EndTurn, "done", &long, None);
        assert!(
            text.ends_with("… (the whole answer is in the output log; the command tandem.showTranscript shows the transcript)"),
            "{text}"
        );
    }

    #[test]
    fn event_paths_get_uris_beside_them() {
        let mut event = json!({
            "type": "toolCall",
            "locations": [{"path": "/ws/src/lib.rs", "line": 3}],
            "diff": {"path": "/ws/src/lib.rs", "newText": "x"},
        });
        add_uris(&mut event);
        assert_eq!(event["locations"][0]["uri"], "file:///ws/src/lib.rs");
        assert_eq!(event["diff"]["uri"], "file:///ws/src/lib.rs");
        let mut relative = json!({"locations": [{"path": "src/lib.rs"}]});
        add_uris(&mut relative);
        assert_eq!(relative["locations"][0].get("uri"), None);
    }
}
