//! Document synchronisation: `didOpen`, `didChange` and `didClose` applied to the store, and
//! with them the focus notifications (`tandem/didChangeActiveEditor`, Copilot's
//! `textDocument/didFocus`) fed to the IDE tracker.
//!
//! The transport calls [`apply`] synchronously, in the order the notifications arrived, before it
//! reads the next message; nothing here awaits. That is what keeps the store identical to the
//! editor's buffer even though requests are handled concurrently, and the tracker's idea of focus
//! in step with the text its positions refer to.
//!
//! The open documents' syntax trees are told about each change here, under the trees lock held
//! across the store's change, but never parsed here: readers reparse when they need a tree (see
//! `trees`). The trees lock is let go before the tracker's is taken, as readers take the
//! tracker's first.

use std::sync::PoisonError;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tandem_text::Document;
use tower_lsp::jsonrpc::Request;
use tower_lsp::lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification,
};
use tower_lsp::lsp_types::{self, TextDocumentIdentifier};
use tracing::{debug, warn};

use crate::from_proto;
use crate::server::Backend;

pub(crate) fn is_document_sync(method: &str) -> bool {
    matches!(
        method,
        DidOpenTextDocument::METHOD
            | DidChangeTextDocument::METHOD
            | DidCloseTextDocument::METHOD
            | DidChangeActiveEditor::METHOD
            | DidFocus::METHOD
    )
}

/// `tandem/didChangeActiveEditor`: the editor with focus (`null`: none) and its selection, whose
/// end is the cursor (an empty selection is just the cursor).
enum DidChangeActiveEditor {}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct ActiveEditorParams {
    text_document: Option<TextDocumentIdentifier>,
    #[serde(default)]
    selection: Option<lsp_types::Range>,
}

impl Notification for DidChangeActiveEditor {
    type Params = ActiveEditorParams;
    const METHOD: &'static str = "tandem/didChangeActiveEditor";
}

/// Copilot's `textDocument/didFocus`: which document has focus, nothing about the cursor.
enum DidFocus {}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct DidFocusParams {
    text_document: TextDocumentIdentifier,
}

impl Notification for DidFocus {
    type Params = DidFocusParams;
    const METHOD: &'static str = "textDocument/didFocus";
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
            {
                let mut trees = backend.trees().lock();
                trees.opened(&item.uri, &document);
                if backend
                    .documents()
                    .open(item.uri.clone(), document)
                    .is_some()
                {
                    warn!(uri = %item.uri, "didOpen for a document that is already open; replaced it");
                }
            }
            backend.revisions().bump();
            ide(backend).did_open(&item.uri);
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
            let changed = {
                let mut trees = backend.trees().lock();
                let changed =
                    backend
                        .documents()
                        .change(&uri, version, &changes, backend.encoding());
                let document = backend.documents().get(&uri);
                if let (Ok(applied), Some(document)) = (&changed, &document) {
                    trees.changed(&uri, applied, document);
                }
                changed.map(|applied| (applied, document))
            };
            backend.revisions().bump();
            match changed {
                Ok((applied, document)) => {
                    if applied.iter().any(|change| change.range_was_reversed) {
                        warn!(%uri, version, "didChange had a range whose end precedes its start; applied it with the ends swapped");
                    }
                    // The last change is the last the user typed: its end is where the cursor is
                    // most likely to be. Its byte offset is into the final text, as nothing
                    // changed after it.
                    let end = applied.last().zip(document).map(|(change, document)| {
                        let rope = document.rope();
                        let char_offset =
                            rope.byte_to_char(change.new_end_byte.min(rope.len_bytes()));
                        document.position(char_offset, backend.encoding())
                    });
                    ide(backend).did_change(&uri, end);
                }
                Err(err) => warn!("ignored textDocument/didChange: {err}"),
            }
        }
        DidCloseTextDocument::METHOD => {
            let Some(params) = parse::<DidCloseTextDocument>(params) else {
                return;
            };
            debug!(uri = %params.text_document.uri, "didClose");
            {
                let mut trees = backend.trees().lock();
                trees.closed(&params.text_document.uri);
                if let Err(err) = backend.documents().close(&params.text_document.uri) {
                    warn!("ignored textDocument/didClose: {err}");
                }
            }
            backend.revisions().bump();
            ide(backend).did_close(&params.text_document.uri);
        }
        DidChangeActiveEditor::METHOD => {
            let Some(params) = parse::<DidChangeActiveEditor>(params) else {
                return;
            };
            let selection = params.selection.map(|range| tandem_text::Range {
                start: from_proto::position(range.start),
                end: from_proto::position(range.end),
            });
            let uri = params.text_document.map(|document| document.uri);
            debug!(uri = ?uri.as_ref().map(|uri| uri.as_str()), ?selection, "didChangeActiveEditor");
            let cursor = selection.map(|range| range.end);
            ide(backend).did_focus(uri, cursor, selection);
        }
        DidFocus::METHOD => {
            let Some(params) = parse::<DidFocus>(params) else {
                return;
            };
            debug!(uri = %params.text_document.uri, "didFocus");
            ide(backend).did_focus(Some(params.text_document.uri), None, None);
        }
        other => debug!("{other} is not a document sync notification"),
    }
}

/// The tracker, locked for one call. A panic elsewhere while it was held leaves it usable: every
/// method keeps it consistent.
fn ide(backend: &Backend) -> std::sync::MutexGuard<'_, crate::ide_state::IdeTracker> {
    backend.ide().lock().unwrap_or_else(PoisonError::into_inner)
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{json, Value};
    use tandem_agent::ide::Cursor;
    use tandem_agent::IdeState;
    use tower_lsp::lsp_types::InitializeParams;
    use tower_lsp::{LanguageServer, LspService};

    use super::*;

    const A: &str = "file:///w/a.rs";
    const B: &str = "file:///w/b.rs";

    fn notify(backend: &Backend, method: &str, params: Value) {
        apply(
            backend,
            Request::build(method.to_owned()).params(params).finish(),
        );
    }

    fn open(backend: &Backend, uri: &str, text: &str) {
        notify(
            backend,
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": text}}),
        );
    }

    fn ide_state(backend: &Backend) -> IdeState {
        ide(backend).snapshot(
            backend.documents(),
            backend.trees(),
            backend.encoding(),
            &|uri| uri.path().strip_prefix("/w/").map(PathBuf::from),
        )
    }

    fn active(backend: &Backend) -> Option<(PathBuf, Option<Cursor>, Option<String>)> {
        ide_state(backend).active.map(|active| {
            let selection = active.selection.map(|selection| selection.text);
            (active.path, active.cursor, selection)
        })
    }

    fn cursor(line: u32, column: u32) -> Option<Cursor> {
        Some(Cursor { line, column })
    }

    async fn initialized() -> LspService<Backend> {
        let (service, _socket) = LspService::new(|client| Backend::new(client, None, None, None));
        let result = service
            .inner()
            .initialize(InitializeParams::default())
            .await;
        assert!(result.is_ok(), "{result:?}");
        service
    }

    #[tokio::test]
    async fn did_change_puts_the_cursor_after_the_last_change_in_utf16() {
        let service = initialized().await;
        let backend = service.inner();
        open(backend, A, "a😀b\ncd");
        let change = |range: Value, text: &str| {
            json!({"textDocument": {"uri": A, "version": 2},
                   "contentChanges": [{"range": range, "text": text}]})
        };
        // After "a😀" (3 UTF-16 units, 2 characters): typing "😀!" ends at character 4 (column 5).
        notify(
            backend,
            "textDocument/didChange",
            change(
                json!({"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 3}}),
                "😀!",
            ),
        );
        assert_eq!(
            active(backend),
            Some((PathBuf::from("a.rs"), cursor(1, 5), None))
        );
        // A multi-line insertion ends on its last line.
        notify(
            backend,
            "textDocument/didChange",
            change(
                json!({"start": {"line": 1, "character": 1}, "end": {"line": 1, "character": 2}}),
                "x\nyz",
            ),
        );
        assert_eq!(
            active(backend),
            Some((PathBuf::from("a.rs"), cursor(3, 3), None))
        );
    }

    #[tokio::test]
    async fn the_symbol_at_the_cursor_follows_did_change() {
        let service = initialized().await;
        let backend = service.inner();
        open(backend, A, "fn one() {\n    1\n}\n");
        let focus = |line: u32, character: u32| {
            let at = json!({"line": line, "character": character});
            notify(
                backend,
                "tandem/didChangeActiveEditor",
                json!({"textDocument": {"uri": A}, "selection": {"start": at, "end": at}}),
            );
            ide_state(backend)
                .active
                .and_then(|active| active.symbol)
                .map(|symbol| (symbol.path, symbol.start_line, symbol.end_line))
        };
        assert_eq!(focus(1, 4), Some(("fn one".to_owned(), 1, 3)));
        // Rename `one` and add a function above it: two changes in one notification.
        notify(
            backend,
            "textDocument/didChange",
            json!({"textDocument": {"uri": A, "version": 2}, "contentChanges": [
                {"range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 6}},
                 "text": "two"},
                {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                 "text": "fn zero() {}\n"},
            ]}),
        );
        assert_eq!(focus(2, 4), Some(("fn two".to_owned(), 2, 4)));
        assert_eq!(focus(0, 4), Some(("fn zero".to_owned(), 1, 1)));
        notify(
            backend,
            "textDocument/didClose",
            json!({"textDocument": {"uri": A}}),
        );
        open(backend, A, "fn three() {}\n");
        assert_eq!(focus(0, 4), Some(("fn three".to_owned(), 1, 1)));
    }

    #[tokio::test]
    async fn did_change_active_editor_sets_focus_cursor_and_selection() {
        let service = initialized().await;
        let backend = service.inner();
        open(backend, A, "fn main() {}\n");
        open(backend, B, "b");
        notify(
            backend,
            "tandem/didChangeActiveEditor",
            json!({"textDocument": {"uri": A},
                   "selection": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 7}}}),
        );
        assert_eq!(
            active(backend),
            Some((PathBuf::from("a.rs"), cursor(1, 8), Some("main".to_owned())))
        );
        assert_eq!(ide_state(backend).open, vec![PathBuf::from("b.rs")]);
        notify(
            backend,
            "tandem/didChangeActiveEditor",
            json!({"textDocument": null}),
        );
        assert_eq!(active(backend), None);
    }

    #[tokio::test]
    async fn did_focus_sets_focus_without_a_cursor() {
        let service = initialized().await;
        let backend = service.inner();
        open(backend, A, "a");
        open(backend, B, "b");
        notify(
            backend,
            "textDocument/didFocus",
            json!({"textDocument": {"uri": A}}),
        );
        assert_eq!(active(backend), Some((PathBuf::from("a.rs"), None, None)));
        notify(
            backend,
            "textDocument/didClose",
            json!({"textDocument": {"uri": A}}),
        );
        assert_eq!(active(backend), None);
        assert_eq!(ide_state(backend).open, vec![PathBuf::from("b.rs")]);
    }

    #[tokio::test]
    async fn malformed_focus_notifications_are_ignored() {
        let service = initialized().await;
        let backend = service.inner();
        open(backend, A, "a");
        for (method, params) in [
            (
                "tandem/didChangeActiveEditor",
                json!({"textDocument": {"uri": 7}}),
            ),
            ("tandem/didChangeActiveEditor", json!([1, 2])),
            ("textDocument/didFocus", json!({})),
            ("textDocument/didFocus", Value::Null),
        ] {
            assert!(is_document_sync(method));
            notify(backend, method, params);
        }
        assert_eq!(active(backend), Some((PathBuf::from("a.rs"), None, None)));
    }
}
