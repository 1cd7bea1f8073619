//! The set of documents the editor has open, shared between the LSP front end (which applies the
//! editor's notifications in order) and readers that take snapshots.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use url::Url;

use crate::{AppliedChange, Change, Document, PositionEncoding};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    #[error("{uri} is not open: the editor must send textDocument/didOpen before changing or closing it")]
    UnknownDocument { uri: Url },
    #[error(
        "change to {uri} has version {received}, older than the stored version {stored}; \
         the change was not applied (reopen the file if the editor and server disagree)"
    )]
    StaleVersion {
        uri: Url,
        stored: i32,
        received: i32,
    },
}

/// Open documents by URI. Every method takes the lock briefly and never across an `.await`.
#[derive(Debug, Default)]
pub struct DocumentStore {
    documents: RwLock<HashMap<Url, Document>>,
}

impl DocumentStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens (or, if the editor reopens it, replaces) a document. Returns the replaced one.
    pub fn open(&self, uri: Url, document: Document) -> Option<Document> {
        self.write().insert(uri, document)
    }

    /// Applies a `didChange`: all changes in order, then the new version.
    ///
    /// A version older than the stored one is refused whole, so a stale or replayed notification
    /// cannot corrupt the text.
    pub fn change(
        &self,
        uri: &Url,
        version: i32,
        changes: &[Change],
        encoding: PositionEncoding,
    ) -> crate::Result<Vec<AppliedChange>> {
        let mut documents = self.write();
        let document = documents
            .get_mut(uri)
            .ok_or_else(|| StoreError::UnknownDocument { uri: uri.clone() })?;
        if version < document.version() {
            return Err(StoreError::StaleVersion {
                uri: uri.clone(),
                stored: document.version(),
                received: version,
            });
        }
        let applied = changes
            .iter()
            .map(|change| document.apply_change(change, encoding))
            .collect();
        document.set_version(version);
        Ok(applied)
    }

    pub fn close(&self, uri: &Url) -> crate::Result<Document> {
        self.write()
            .remove(uri)
            .ok_or_else(|| StoreError::UnknownDocument { uri: uri.clone() })
    }

    /// A snapshot of one document (cheap: the rope is shared, not copied).
    pub fn get(&self, uri: &Url) -> Option<Document> {
        self.read().get(uri).cloned()
    }

    /// Snapshots of every open document, in no particular order.
    pub fn snapshot(&self) -> Vec<(Url, Document)> {
        self.read()
            .iter()
            .map(|(uri, document)| (uri.clone(), document.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    // A panic while holding the lock cannot leave a document half-edited in a way later readers
    // could misread (ropey edits are atomic per call), so a poisoned lock is still usable.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Url, Document>> {
        self.documents
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Url, Document>> {
        self.documents
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LineCol, Range};

    fn uri() -> Url {
        Url::parse("file:///project/a.rs").unwrap()
    }

    fn insert(at: u32, text: &str) -> Change {
        Change {
            range: Some(Range {
                start: LineCol::new(0, at),
                end: LineCol::new(0, at),
            }),
            text: text.into(),
        }
    }

    #[test]
    fn stale_version_is_refused_and_leaves_text_alone() {
        let store = DocumentStore::new();
        store.open(uri(), Document::new("abc", 5, "rust"));
        let err = store
            .change(&uri(), 4, &[insert(0, "X")], PositionEncoding::Utf16)
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::StaleVersion {
                stored: 5,
                received: 4,
                ..
            }
        ));
        let doc = store.get(&uri()).unwrap();
        assert_eq!((doc.text().as_str(), doc.version()), ("abc", 5));
    }

    #[test]
    fn changes_apply_in_order_and_set_version() {
        let store = DocumentStore::new();
        store.open(uri(), Document::new("", 1, "rust"));
        store
            .change(
                &uri(),
                2,
                &[insert(0, "b"), insert(0, "a"), insert(9, "c")],
                PositionEncoding::Utf8,
            )
            .unwrap();
        let doc = store.get(&uri()).unwrap();
        assert_eq!((doc.text().as_str(), doc.version()), ("abc", 2));
    }

    #[test]
    fn change_or_close_of_unknown_document_is_an_error() {
        let store = DocumentStore::new();
        assert!(matches!(
            store.change(&uri(), 1, &[], PositionEncoding::Utf16),
            Err(StoreError::UnknownDocument { .. })
        ));
        assert!(store.close(&uri()).is_err());
        assert!(store.is_empty());
    }
}
