//! The agent's changes that sit unsaved in open buffers, put on disk before a tool that reads
//! the disk runs (a shell command, `grep`, an MCP tool), so that what the agent runs sees what it
//! wrote. Only the editor may save its buffers: a client that declared `saveDocuments` is asked
//! with `tandem/saveDocuments`; any other client keeps them unsaved (writing the disk under an
//! open buffer would leave the editor with a "file changed on disk" conflict), and the model is
//! told which files the command saw without its changes.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tandem_agent::editor::DiskSync;
use tandem_text::DocumentStore;
use tower_lsp::lsp_types::request::Request;
use tower_lsp::Client;
use tracing::warn;
use url::Url;

use crate::bridge;

/// How long the editor may take to save; past it, the files count as unsaved.
const SAVE_WAIT: Duration = Duration::from_secs(10);

/// `tandem/saveDocuments`: save these open documents as they are.
pub(crate) enum SaveDocuments {}

impl Request for SaveDocuments {
    type Params = serde_json::Value;
    type Result = SavedDocuments;
    const METHOD: &'static str = "tandem/saveDocuments";
}

/// The answer to `tandem/saveDocuments`: the documents the editor saved.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct SavedDocuments {
    #[serde(default)]
    pub saved: Vec<Url>,
}

/// The documents the agent changed in the editor, shared by the sessions of a server: a change
/// may be saved by another turn's command or by the user, so what is unsaved is worked out
/// again from the disk each time.
#[derive(Debug, Default)]
pub(crate) struct AgentEdits {
    uris: Mutex<HashSet<Url>>,
}

impl AgentEdits {
    pub(crate) fn record(&self, uri: Url) {
        self.lock().insert(uri);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Url>> {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recorded documents that are open and whose text is not what the disk holds; the
    /// others are forgotten (closed, saved, or changed back).
    async fn unsaved(&self, documents: &DocumentStore) -> Vec<(Url, PathBuf)> {
        let recorded: Vec<Url> = self.lock().iter().cloned().collect();
        let mut unsaved = Vec::new();
        for uri in recorded {
            let on_disk = match (documents.get(&uri), bridge::path_for_uri(&uri)) {
                (Some(document), Some(path)) => match tokio::fs::read(&path).await {
                    Ok(bytes) if bytes == document.text().as_bytes() => None,
                    _ => Some(path),
                },
                _ => None,
            };
            match on_disk {
                Some(path) => unsaved.push((uri, path)),
                None => {
                    self.lock().remove(&uri);
                }
            }
        }
        unsaved
    }
}

/// Puts the agent's unsaved changes on disk where the client can be asked to save them; see the
/// module docs. `ask` is false when the settings turn saving off or the client cannot save.
pub(crate) async fn sync_to_disk(
    client: &Client,
    ask: bool,
    documents: &DocumentStore,
    edits: &AgentEdits,
) -> DiskSync {
    let unsaved = edits.unsaved(documents).await;
    if unsaved.is_empty() || !ask {
        return DiskSync {
            unsaved: unsaved.into_iter().map(|(_, path)| path).collect(),
        };
    }
    let uris: Vec<&Url> = unsaved.iter().map(|(uri, _)| uri).collect();
    let request = client.send_request::<SaveDocuments>(json!({ "uris": uris }));
    let answered = match tokio::time::timeout(SAVE_WAIT, request).await {
        Ok(Ok(answer)) => answer.saved,
        Ok(Err(error)) => {
            warn!("tandem/saveDocuments failed: {error}");
            Vec::new()
        }
        Err(_) => {
            warn!("the editor did not answer tandem/saveDocuments within {SAVE_WAIT:?}");
            Vec::new()
        }
    };
    // Saved: the disk holds the buffer's text, or the editor says it saved it (an editor may
    // add a final line break as it saves).
    let still = edits.unsaved(documents).await;
    let (saved, unsaved): (Vec<_>, Vec<_>) = unsaved
        .into_iter()
        .partition(|(uri, _)| answered.contains(uri) || !still.iter().any(|(left, _)| left == uri));
    for (uri, _) in &saved {
        edits.lock().remove(uri);
    }
    DiskSync {
        unsaved: unsaved.into_iter().map(|(_, path)| path).collect(),
    }
}
