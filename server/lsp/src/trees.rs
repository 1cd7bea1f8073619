//! The syntax trees of open documents, kept in step with the document store.
//!
//! Sync notifications only tell the trees about edits (cheap: no parsing, so the transport that
//! applies them synchronously is never held up by a parse); a reader that wants a tree reparses
//! then, incrementally. For that to be right, the rope a reader parses must match exactly the
//! edits told to the tree, so both sides take the trees lock first: writers hold it across
//! `DocumentStore::change` and the tree edits, readers while they take the tree's snapshot and
//! the document's together. Readers parse after letting the lock go, and keep the new tree only
//! if no edit arrived meanwhile (`SyntaxDocument::finish`); `catch_up` does the same on a
//! blocking thread, for completions, which only use a tree that is current (`current_tree`).
//! Lock order: the IDE tracker's (readers come through its snapshot), then the trees', then the
//! store's, then `catching_up`; `sync` lets the trees lock go before it takes the tracker's.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use tandem_syntax::{Language, SymbolAtCursor, SyntaxDocument, Tree, TreeSnapshot};
use tandem_text::{AppliedChange, Document, DocumentStore, LineCol, PositionEncoding};
use tracing::warn;
use url::Url;

/// Documents larger than this get no tree: parsing them (in full, the first time) would hold
/// the lock, and with it the editor's notifications, too long.
pub(crate) const MAX_TREE_BYTES: usize = 8 * 1024 * 1024;

#[derive(Default)]
pub(crate) struct OpenTrees {
    trees: Mutex<HashMap<Url, SyntaxDocument>>,
    /// Documents whose tree a background parse is bringing up to date (`catch_up`).
    catching_up: Mutex<HashSet<Url>>,
}

/// The trees, locked: what sync notifications update while they change the document store.
pub(crate) struct LockedTrees<'a>(MutexGuard<'a, HashMap<Url, SyntaxDocument>>);

impl OpenTrees {
    pub(crate) fn lock(&self) -> LockedTrees<'_> {
        let trees = self.trees.lock().unwrap_or_else(|poisoned| {
            // A writer panicked, perhaps between changing a document and telling its tree: no
            // tree can be trusted to match its text, so each starts over with a full parse.
            let mut trees = poisoned.into_inner();
            for syntax in trees.values_mut() {
                *syntax = SyntaxDocument::new(syntax.language());
            }
            self.trees.clear_poison();
            trees
        });
        LockedTrees(trees)
    }

    /// The definitions around `position` in an open document in a language we parse, with the
    /// innermost one's text cut to `max_bytes`. The tree is reparsed first if edits arrived since
    /// the last read. `None` for other documents, outside every definition, and (with a warning)
    /// if parsing fails.
    pub(crate) fn symbol_at(
        &self,
        uri: &Url,
        documents: &DocumentStore,
        position: LineCol,
        encoding: PositionEncoding,
        max_bytes: usize,
    ) -> Option<SymbolAtCursor> {
        // The snapshot and the text are taken together under the lock (no change can land in
        // between), and any parsing happens after it is let go, so the editor's notifications
        // never wait for a parse.
        let (language, snapshot, document) = {
            let trees = self.lock();
            let syntax = trees.0.get(uri)?;
            (syntax.language(), syntax.snapshot(), documents.get(uri)?)
        };
        let tree = match snapshot {
            TreeSnapshot::Current(tree) => tree,
            TreeSnapshot::Stale(pending) => {
                let tree = pending
                    .parse(document.rope())
                    .map_err(|error| warn!(%uri, "no syntax tree: {error}"))
                    .ok()?;
                if let Some(syntax) = self.lock().0.get_mut(uri) {
                    syntax.finish(&pending, tree.clone());
                }
                tree
            }
        };
        let rope = document.rope();
        let offset = rope.char_to_byte(document.char_offset(position, encoding));
        tandem_syntax::symbol_at(language, &tree, &document.text(), offset, max_bytes)
            .map_err(|error| warn!(%uri, "no symbol at the cursor: {error}"))
            .ok()
            .flatten()
    }

    /// Brings `uri`'s tree up to date on a blocking thread, if it is behind its text and no
    /// such parse is running: readers that can wait a little (a completion past its debounce)
    /// then find it current without parsing themselves.
    pub(crate) fn catch_up(self: &Arc<Self>, uri: &Url, documents: &DocumentStore) {
        let (pending, document) = {
            let trees = self.lock();
            let Some(syntax) = trees.0.get(uri) else {
                return;
            };
            let TreeSnapshot::Stale(pending) = syntax.snapshot() else {
                return;
            };
            let Some(document) = documents.get(uri) else {
                return;
            };
            if !lock_set(&self.catching_up).insert(uri.clone()) {
                return;
            }
            (pending, document)
        };
        let trees = Arc::clone(self);
        let uri = uri.clone();
        tokio::task::spawn_blocking(move || {
            match pending.parse(document.rope()) {
                Ok(tree) => {
                    if let Some(syntax) = trees.lock().0.get_mut(&uri) {
                        syntax.finish(&pending, tree);
                    }
                }
                Err(error) => warn!(%uri, "no syntax tree: {error}"),
            }
            lock_set(&trees.catching_up).remove(&uri);
        });
    }

    /// `uri`'s tree, if it is current and the document is still at `version`: the tree of
    /// exactly the text a reader copied at that version. Never parses.
    pub(crate) fn current_tree(
        &self,
        uri: &Url,
        version: i32,
        documents: &DocumentStore,
    ) -> Option<Tree> {
        let trees = self.lock();
        let TreeSnapshot::Current(tree) = trees.0.get(uri)?.snapshot() else {
            return None;
        };
        (documents.get(uri)?.version() == version).then_some(tree)
    }
}

fn lock_set(set: &Mutex<HashSet<Url>>) -> MutexGuard<'_, HashSet<Url>> {
    set.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LockedTrees<'_> {
    /// `didOpen`: a tree (parsed on first read) if the language is one we parse.
    pub(crate) fn opened(&mut self, uri: &Url, document: &Document) {
        self.0.remove(uri);
        let language = Language::detect(Some(document.language_id()), Path::new(uri.path()));
        if let Some(language) = language.filter(|_| document.len_bytes() <= MAX_TREE_BYTES) {
            self.0.insert(uri.clone(), SyntaxDocument::new(language));
        }
    }

    /// `didChange`: tells the tree about the changes applied to `document` (the text after them).
    /// A document that grew past [`MAX_TREE_BYTES`] loses its tree; one that shrank below gets
    /// it back.
    pub(crate) fn changed(&mut self, uri: &Url, applied: &[AppliedChange], document: &Document) {
        if document.len_bytes() > MAX_TREE_BYTES {
            self.0.remove(uri);
            return;
        }
        match self.0.get_mut(uri) {
            Some(syntax) => applied.iter().for_each(|change| syntax.edit(change)),
            None => self.opened(uri, document),
        }
    }

    pub(crate) fn closed(&mut self, uri: &Url) {
        self.0.remove(uri);
    }

    #[cfg(test)]
    pub(crate) fn contains(&self, uri: &Url) -> bool {
        self.0.contains_key(uri)
    }
}

#[cfg(test)]
mod tests {
    use tandem_text::{Change, Range};

    use super::*;

    fn uri(name: &str) -> Url {
        Url::parse(&format!("file:///w/{name}")).unwrap()
    }

    #[test]
    fn only_documents_in_a_parsed_language_and_within_the_size_limit_get_a_tree() {
        let trees = OpenTrees::default();
        let mut locked = trees.lock();
        locked.opened(&uri("a.rs"), &Document::new("fn a() {}", 1, "rust"));
        // The language id wins; without one we know, the extension decides.
        locked.opened(&uri("b.txt"), &Document::new("def b(): pass", 1, "python"));
        locked.opened(
            &uri("c.py"),
            &Document::new("def c(): pass", 1, "plaintext"),
        );
        locked.opened(&uri("d.txt"), &Document::new("text", 1, "plaintext"));
        let huge = "x".repeat(MAX_TREE_BYTES + 1);
        locked.opened(&uri("e.rs"), &Document::new(&huge, 1, "rust"));
        let have: Vec<bool> = ["a.rs", "b.txt", "c.py", "d.txt", "e.rs"]
            .iter()
            .map(|name| locked.contains(&uri(name)))
            .collect();
        assert_eq!(have, [true, true, true, false, false]);
        locked.closed(&uri("a.rs"));
        assert!(!locked.contains(&uri("a.rs")));
    }

    #[test]
    fn a_document_loses_its_tree_past_the_size_limit_and_gets_it_back_below() {
        let (trees, documents) = (OpenTrees::default(), DocumentStore::new());
        let a = uri("a.rs");
        let document = Document::new("fn a() {}\n", 1, "rust");
        trees.lock().opened(&a, &document);
        documents.open(a.clone(), document);
        let change = |text: String| {
            let mut locked = trees.lock();
            let change = Change { range: None, text };
            let applied = documents
                .change(&a, 2, &[change], PositionEncoding::Utf16)
                .unwrap();
            locked.changed(&a, &applied, &documents.get(&a).unwrap());
            locked.contains(&a)
        };
        assert!(!change(format!(
            "fn a() {{}}\n{}",
            " ".repeat(MAX_TREE_BYTES)
        )));
        assert!(change("fn b() {}\n".to_owned()));
        let symbol = trees.symbol_at(
            &a,
            &documents,
            LineCol::new(0, 8),
            PositionEncoding::Utf16,
            100,
        );
        assert_eq!(symbol.map(|symbol| symbol.path()).as_deref(), Some("fn b"));
    }

    #[test]
    fn a_poisoned_lock_parses_every_tree_again() {
        let (trees, documents) = (OpenTrees::default(), DocumentStore::new());
        let a = uri("a.rs");
        let document = Document::new("fn a() {}\n", 1, "rust");
        trees.lock().opened(&a, &document);
        documents.open(a.clone(), document);
        let at = |character| {
            trees
                .symbol_at(
                    &a,
                    &documents,
                    LineCol::new(0, character),
                    PositionEncoding::Utf16,
                    100,
                )
                .map(|symbol| symbol.path())
        };
        assert_eq!(at(3).as_deref(), Some("fn a"));
        // A writer panics after changing the document, before telling the tree.
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _locked = trees.lock();
            let change = Change {
                range: Some(Range {
                    start: LineCol::new(0, 0),
                    end: LineCol::new(0, 0),
                }),
                text: "fn zz() {}\n".to_owned(),
            };
            documents
                .change(&a, 2, &[change], PositionEncoding::Utf16)
                .unwrap();
            panic!("between the document and its tree");
        }));
        assert!(panicked.is_err());
        assert_eq!(at(3).as_deref(), Some("fn zz"));
        assert_eq!(
            trees
                .symbol_at(
                    &a,
                    &documents,
                    LineCol::new(1, 3),
                    PositionEncoding::Utf16,
                    100
                )
                .map(|symbol| symbol.path())
                .as_deref(),
            Some("fn a")
        );
    }
}
