//! Events to the front end, and what is saved of them and of the history to the session log
//! (`store.rs`) so that a resumed session can replay its turns. Streamed text is saved in one
//! event per stretch, tool calls once they end; history messages are saved as they are added,
//! and the whole history when it is replaced. A failed write leaves the session unsaved
//! (said once), never the turn broken.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::Session;
use crate::store::{Record, SessionLog};
use tandem_protocol::{Event, ToolCallStatus};

/// The session file and the text streamed since the last saved event (text is saved in one
/// event per stretch, not per chunk).
pub(super) struct LogState {
    pub(super) log: SessionLog,
    pub(super) turn_id: String,
    pub(super) text: String,
}

impl Session {
    /// Saves to `log` from now on. The folder where compression keeps the tool outputs it takes
    /// out of the history joins the workspace, so that the model can read them back.
    pub(super) fn attach_log(&mut self, log: SessionLog) {
        let outputs = log.outputs_dir();
        // The folder is made on first use; its parent exists, so canonicalise that.
        let outputs = match (outputs.parent(), outputs.file_name()) {
            (Some(parent), Some(name)) => std::fs::canonicalize(parent)
                .map_or_else(|_| outputs.clone(), |parent| parent.join(name)),
            _ => outputs,
        };
        self.ctx.workspace = Arc::new(self.ctx.workspace.with_extra(outputs));
        *lock(&self.log) = Some(LogState {
            log,
            turn_id: String::new(),
            text: String::new(),
        });
    }

    /// Sends an event to the front end and saves what a resumed session replays.
    pub(super) fn emit(&self, events: &mpsc::UnboundedSender<Event>, event: Event) {
        self.save_event(&event);
        // A front end that stopped listening loses events, not the turn.
        let _ = events.send(event);
    }

    /// Saves an event for replay: text is gathered into one event per stretch, tool calls are
    /// saved once they end, and streaming noise (thoughts, retries, usage) is not saved.
    fn save_event(&self, event: &Event) {
        let turn_id = {
            let mut guard = lock(&self.log);
            let Some(state) = guard.as_mut() else {
                return;
            };
            match event {
                Event::TextChunk { text } => {
                    state.text.push_str(text);
                    return;
                }
                Event::Retrying { .. } => {
                    state.text.clear();
                    return;
                }
                Event::ThoughtChunk { .. } | Event::Usage(_) => return,
                Event::ToolCall(update)
                    if !matches!(
                        update.status,
                        ToolCallStatus::Success | ToolCallStatus::Error | ToolCallStatus::Cancelled
                    ) =>
                {
                    return
                }
                _ => state.turn_id.clone(),
            }
        };
        self.save(&Record::Event {
            turn_id,
            event: event.clone(),
        });
    }

    /// Saves the text streamed since the last saved event.
    pub(super) fn flush_saved_text(&self) {
        let mut guard = lock(&self.log);
        let Some(state) = guard.as_mut() else {
            return;
        };
        if state.text.is_empty() {
            return;
        }
        let record = Record::Event {
            turn_id: state.turn_id.clone(),
            event: Event::TextChunk {
                text: std::mem::take(&mut state.text),
            },
        };
        append_or_stop(&mut guard, &record);
    }

    pub(super) fn save(&self, record: &Record) {
        self.flush_saved_text();
        append_or_stop(&mut lock(&self.log), record);
    }

    /// Saves the messages added to the history since the last save.
    pub(super) fn save_new_messages(&mut self) {
        let start = self.logged.min(self.history.len());
        if lock(&self.log).is_some() {
            for message in &self.history[start..] {
                self.save(&Record::Message {
                    message: message.clone(),
                });
            }
        }
        self.logged = self.history.len();
    }

    /// Saves the whole history (it was replaced, or a saved message changed).
    pub(super) fn save_history(&mut self) {
        if lock(&self.log).is_some() {
            self.save(&Record::History {
                messages: self.history.clone(),
            });
        }
        self.logged = self.history.len();
    }
}

/// Appends to the session file; after a failure the session goes on unsaved (said once).
fn append_or_stop(log: &mut Option<LogState>, record: &Record) {
    let Some(state) = log.as_mut() else {
        return;
    };
    if let Err(error) = state.log.append(record) {
        tracing::warn!("the session is no longer saved: {error}");
        *log = None;
    }
}

/// A poisoned lock still holds a usable log: every critical section is one append.
pub(super) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
