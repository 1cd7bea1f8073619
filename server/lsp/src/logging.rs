//! Forwards warnings and errors from `tracing` to the editor as `window/logMessage`, so a user
//! sees problems in the editor's own log view without hunting for Tandem's log file.

use std::fmt::Write as _;

use tokio::sync::mpsc;
use tower_lsp::lsp_types::MessageType;
use tower_lsp::Client;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// Messages waiting for the client. When the client is slow the newest are dropped rather than
/// letting logging block the server or grow without bound.
const QUEUE: usize = 256;

/// A `tracing` layer that queues WARN and ERROR events for the client.
pub struct ClientLogLayer {
    queue: mpsc::Sender<(MessageType, String)>,
}

/// The receiving end, handed to [`crate::serve`] through `ServeOptions::client_log`.
pub struct ClientLogReceiver {
    queue: mpsc::Receiver<(MessageType, String)>,
}

/// A connected layer and receiver.
pub fn client_log_channel() -> (ClientLogLayer, ClientLogReceiver) {
    let (queue, receiver) = mpsc::channel(QUEUE);
    (
        ClientLogLayer { queue },
        ClientLogReceiver { queue: receiver },
    )
}

impl ClientLogReceiver {
    pub(crate) async fn forward_to(mut self, client: Client) {
        while let Some((kind, message)) = self.queue.recv().await {
            // tower-lsp drops these until the client is initialized, as the protocol requires.
            client.log_message(kind, message).await;
        }
    }
}

impl<S: Subscriber> Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        let kind = match *metadata.level() {
            Level::ERROR => MessageType::ERROR,
            Level::WARN => MessageType::WARNING,
            _ => return,
        };
        let mut text = MessageText::default();
        event.record(&mut text);
        // Dropping on a full queue is deliberate: see QUEUE.
        let _ = self.queue.try_send((kind, text.finish()));
    }
}

#[derive(Default)]
struct MessageText {
    message: String,
    fields: String,
}

impl MessageText {
    fn finish(self) -> String {
        if self.fields.is_empty() {
            self.message
        } else {
            format!("{} ({})", self.message, self.fields.trim_start())
        }
    }
}

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}
