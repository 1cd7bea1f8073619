//! Document synchronisation: `didOpen`, `didChange` and `didClose` applied to the store.
//!
//! The transport calls [`apply`] synchronously, in the order the notifications arrived, before it
//! reads the next message; nothing here awaits. That is what keeps the store identical to the
//! editor's buffer even though requests are handled concurrently.

use serde::de::DeserializeOwned;
use tandem_text::Document;
use tower_lsp::jsonrpc::Request;
use tower_lsp::lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification,
};
use tracing::{debug, warn};

use crate::from_proto;
use crate::server::Backend;

pub(crate) fn is_document_sync(method: &str) -> bool {
    matches!(
        method,
        DidOpenTextDocument::METHOD | DidChangeTextDocument::METHOD | DidCloseTextDocument::METHOD
    )
}

pub(crate) fn apply(backend: &Backend, notification: Request) {
    let (method, _, params) = notification.into_parts();
    if !backend.is_initialized() {
        debug!("dropped {method}: the server is not initialized");
        return;
    }
    match method.as_ref() {
        DidOpenTextDocument::METHOD => {
            let Some(params) = parse::<DidOpenTextDocument>(params) else {
                return;
            };
            let item = params.text_document;
            let document = Document::new(&item.text, item.version, item.language_id);
            debug!(uri = %item.uri, version = item.version, bytes = item.text.len(), "didOpen");
            if backend
                .documents()
                .open(item.uri.clone(), document)
                .is_some()
            {
                warn!(uri = %item.uri, "didOpen for a document that is already open; replaced it");
            }
        }
        DidChangeTextDocument::METHOD => {
            let Some(params) = parse::<DidChangeTextDocument>(params) else {
                return;
            };
            let uri = params.text_document.uri;
            let version = params.text_document.version;
            let changes: Vec<_> = params
                .content_changes
                .into_iter()
                .map(from_proto::change)
                .collect();
            debug!(%uri, version, changes = changes.len(), "didChange");
            match backend
                .documents()
                .change(&uri, version, &changes, backend.encoding())
            {
                Ok(applied) => {
                    if applied.iter().any(|change| change.range_was_reversed) {
                        warn!(%uri, version, "didChange had a range whose end precedes its start; applied it with the ends swapped");
                    }
                }
                Err(err) => warn!("ignored textDocument/didChange: {err}"),
            }
        }
        DidCloseTextDocument::METHOD => {
            let Some(params) = parse::<DidCloseTextDocument>(params) else {
                return;
            };
            debug!(uri = %params.text_document.uri, "didClose");
            if let Err(err) = backend.documents().close(&params.text_document.uri) {
                warn!("ignored textDocument/didClose: {err}");
            }
        }
        other => debug!("{other} is not a document sync notification"),
    }
}

fn parse<N: Notification>(params: Option<serde_json::Value>) -> Option<N::Params>
where
    N::Params: DeserializeOwned,
{
    let params = params.unwrap_or_default();
    serde_json::from_value(params)
        .map_err(|err| warn!("ignored malformed {}: {err}", N::METHOD))
        .ok()
}
