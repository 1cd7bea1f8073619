//! Which document has focus, where the cursor and selection are, and which documents were used
//! most recently — learnt from didOpen/didChange/didClose, `tandem/didChangeActiveEditor` and
//! `textDocument/didFocus` — turned into the agent's `IdeState` when a turn starts.
//!
//! Positions are kept as the client sent them (in the negotiated encoding) and converted only in
//! [`IdeTracker::snapshot`], against the text as it is then. The snapshot also names the symbol
//! around the cursor, from the active document's syntax tree.

use std::path::PathBuf;

use tandem_agent::ide::{ActiveEditor, Cursor, CursorSymbol, Selection};
use tandem_agent::IdeState;
use tandem_text::{Document, DocumentStore, LineCol, PositionEncoding, Range};
use url::Url;

use crate::trees::OpenTrees;

/// The most text of the symbol at the cursor told to the model; the rest is a read away.
const SYMBOL_CAP_BYTES: usize = 4_000;

#[derive(Debug, Default)]
pub(crate) struct IdeTracker {
    /// Open documents, most recently used first.
    mru: Vec<Url>,
    active: Option<Focus>,
    /// The client tells us which document has focus. From then on opening or changing a document
    /// no longer implies focus: such clients open documents in the background, and the agent's
    /// own edits arrive as didChange of files the user is not looking at.
    explicit_focus: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Focus {
    uri: Url,
    cursor: Option<LineCol>,
    /// Non-empty.
    selection: Option<Range>,
}

impl IdeTracker {
    pub(crate) fn did_open(&mut self, uri: &Url) {
        self.touch(uri);
        if !self.explicit_focus {
            self.active = Some(Focus {
                uri: uri.clone(),
                cursor: None,
                selection: None,
            });
        }
    }

    /// `end` is where the last change of the notification ended (the cursor's best guess).
    pub(crate) fn did_change(&mut self, uri: &Url, end: Option<LineCol>) {
        self.touch(uri);
        match &mut self.active {
            // Typing replaces the selection and leaves the cursor after the text typed; being
            // newer than any focus notification, that is the best guess there is.
            Some(focus) if focus.uri == *uri => {
                focus.cursor = end.or(focus.cursor);
                focus.selection = None;
            }
            _ if !self.explicit_focus => {
                self.active = Some(Focus {
                    uri: uri.clone(),
                    cursor: end,
                    selection: None,
                });
            }
            _ => {}
        }
    }

    pub(crate) fn did_close(&mut self, uri: &Url) {
        self.mru.retain(|open| open != uri);
        // The editor shows some other document now, but which one only the client knows; telling
        // the model a guess would be worse than telling it nothing.
        if self.active.as_ref().is_some_and(|focus| focus.uri == *uri) {
            self.active = None;
        }
    }

    /// The client says which document has focus (`None`: none does).
    pub(crate) fn did_focus(
        &mut self,
        uri: Option<Url>,
        cursor: Option<LineCol>,
        selection: Option<Range>,
    ) {
        self.explicit_focus = true;
        self.active = uri.map(|uri| {
            if self.mru.contains(&uri) {
                self.touch(&uri);
            }
            Focus {
                uri,
                cursor,
                selection: selection.filter(|range| range.start != range.end),
            }
        });
    }

    /// Open documents, most recently used first.
    pub(crate) fn recent(&self) -> &[Url] {
        &self.mru
    }

    /// What the editor shows now. `path_for_uri` maps a document to the file the agent knows.
    pub(crate) fn snapshot(
        &self,
        documents: &DocumentStore,
        trees: &OpenTrees,
        encoding: PositionEncoding,
        path_for_uri: &dyn Fn(&Url) -> Option<PathBuf>,
    ) -> IdeState {
        let active = self.active.as_ref().and_then(|focus| {
            let path = path_for_uri(&focus.uri)?;
            // A focused document the client never synced (its language is not ours, say):
            // without its text the positions cannot be converted, but the path still helps.
            let Some(document) = documents.get(&focus.uri) else {
                return Some(ActiveEditor {
                    path,
                    language: None,
                    cursor: None,
                    selection: None,
                    symbol: None,
                });
            };
            let offset = |position| document.char_offset(position, encoding);
            let selection = focus.selection.map(|range| {
                let (start, end) = {
                    let (a, b) = (offset(range.start), offset(range.end));
                    (a.min(b), a.max(b))
                };
                Selection {
                    start: cursor(&document, start),
                    end: cursor(&document, end),
                    text: document.rope().slice(start..end).to_string(),
                }
            });
            let symbol = focus.cursor.and_then(|position| {
                let symbol =
                    trees.symbol_at(&focus.uri, documents, position, encoding, SYMBOL_CAP_BYTES)?;
                Some(CursorSymbol {
                    path: symbol.path(),
                    start_line: symbol.start_line.saturating_add(1),
                    end_line: symbol.end_line.saturating_add(1),
                    text: symbol.text,
                })
            });
            Some(ActiveEditor {
                path,
                language: Some(document.language_id().to_owned()).filter(|id| !id.is_empty()),
                cursor: focus
                    .cursor
                    .map(|position| cursor(&document, offset(position))),
                selection: selection.filter(|selection| !selection.text.is_empty()),
                symbol,
            })
        });
        let active_uri = self.active.as_ref().map(|focus| &focus.uri);
        let open = self
            .mru
            .iter()
            .filter(|uri| Some(*uri) != active_uri)
            .filter_map(path_for_uri)
            .collect();
        IdeState { active, open }
    }

    /// Moves `uri` to the front of the most-recently-used list.
    fn touch(&mut self, uri: &Url) {
        self.mru.retain(|open| open != uri);
        self.mru.insert(0, uri.clone());
    }
}

/// The 1-based line and character column of a char offset.
fn cursor(document: &Document, char_offset: usize) -> Cursor {
    let position = document.position(char_offset, PositionEncoding::Utf32);
    Cursor {
        line: position.line.saturating_add(1),
        column: position.character.saturating_add(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(name: &str) -> Url {
        Url::parse(&format!("file:///w/{name}")).unwrap()
    }

    fn at(line: u32, character: u32) -> LineCol {
        LineCol::new(line, character)
    }

    fn range(start: LineCol, end: LineCol) -> Option<Range> {
        Some(Range { start, end })
    }

    /// Maps `file:///w/x` to `x`; anything else (untitled:) has no path.
    fn path_for_uri(uri: &Url) -> Option<PathBuf> {
        uri.path()
            .strip_prefix("/w/")
            .filter(|_| uri.scheme() == "file")
            .map(PathBuf::from)
    }

    struct Fixture {
        store: DocumentStore,
        trees: OpenTrees,
        ide: IdeTracker,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                store: DocumentStore::new(),
                trees: OpenTrees::default(),
                ide: IdeTracker::default(),
            }
        }

        fn open(&mut self, name: &str, text: &str) {
            self.open_as(name, text, "rust");
        }

        /// Opens a document as `sync` does: the tree, then the store, then the tracker.
        fn open_as(&mut self, name: &str, text: &str, language_id: &str) {
            let uri = Url::parse(name).unwrap_or_else(|_| uri(name));
            let document = Document::new(text, 1, language_id);
            self.trees.lock().opened(&uri, &document);
            self.store.open(uri.clone(), document);
            self.ide.did_open(&uri);
        }

        /// Replaces `range` of a document as `sync` does, the tree told under its lock.
        fn change(&mut self, name: &str, range: Option<Range>, text: &str) {
            let uri = uri(name);
            let mut trees = self.trees.lock();
            let change = tandem_text::Change {
                range,
                text: text.to_owned(),
            };
            let applied = self
                .store
                .change(&uri, 2, &[change], PositionEncoding::Utf16)
                .unwrap();
            trees.changed(&uri, &applied, &self.store.get(&uri).unwrap());
        }

        fn snapshot(&self, encoding: PositionEncoding) -> IdeState {
            self.ide
                .snapshot(&self.store, &self.trees, encoding, &path_for_uri)
        }

        /// The symbol at the cursor as the model is told it: path, lines, then the text.
        fn symbol(&self) -> String {
            self.active()
                .and_then(|active| active.symbol)
                .map_or("<none>".to_owned(), |symbol| {
                    format!(
                        "{} ({}-{})\n{}",
                        symbol.path, symbol.start_line, symbol.end_line, symbol.text
                    )
                })
        }

        fn active(&self) -> Option<ActiveEditor> {
            self.snapshot(PositionEncoding::Utf16).active
        }

        fn open_paths(&self) -> Vec<PathBuf> {
            self.snapshot(PositionEncoding::Utf16).open
        }
    }

    fn cursor_at(line: u32, column: u32) -> Option<Cursor> {
        Some(Cursor { line, column })
    }

    #[test]
    fn did_open_infers_focus_and_mru_order() {
        let mut f = Fixture::new();
        f.open("a.rs", "a");
        f.open("b.rs", "b");
        let active = f.active().unwrap();
        assert_eq!(active.path, PathBuf::from("b.rs"));
        assert_eq!(active.language.as_deref(), Some("rust"));
        assert_eq!(active.cursor, None);
        assert_eq!(f.open_paths(), vec![PathBuf::from("a.rs")]);
    }

    #[test]
    fn did_change_infers_focus_and_cursor_without_explicit_focus() {
        let mut f = Fixture::new();
        f.open("a.rs", "one\ntwo");
        f.open("b.rs", "b");
        f.ide.did_change(&uri("a.rs"), Some(at(1, 2)));
        let active = f.active().unwrap();
        assert_eq!(active.path, PathBuf::from("a.rs"));
        assert_eq!(active.cursor, cursor_at(2, 3));
        assert_eq!(f.open_paths(), vec![PathBuf::from("b.rs")]);
    }

    #[test]
    fn cursor_column_counts_characters_in_every_encoding() {
        // "é" is 2 UTF-8 bytes, "😀" 2 UTF-16 units: the column after them is 3 in characters.
        let mut f = Fixture::new();
        f.open("a.rs", "x\né😀y");
        for (encoding, character) in [
            (PositionEncoding::Utf8, 6),
            (PositionEncoding::Utf16, 3),
            (PositionEncoding::Utf32, 2),
        ] {
            f.ide
                .did_focus(Some(uri("a.rs")), Some(at(1, character)), None);
            let active = f.snapshot(encoding).active.unwrap();
            assert_eq!(active.cursor, cursor_at(2, 3), "{encoding}");
        }
    }

    #[test]
    fn selection_text_comes_from_the_rope() {
        let mut f = Fixture::new();
        f.open("a.rs", "fn main() {\r\n    let 😀 = 1;\r\n}\r\n");
        f.ide.did_focus(
            Some(uri("a.rs")),
            Some(at(1, 12)),
            range(at(1, 4), at(1, 12)),
        );
        let selection = f.active().unwrap().selection.unwrap();
        assert_eq!(selection.text, "let 😀 =");
        assert_eq!(selection.start, Cursor { line: 2, column: 5 });
        assert_eq!(
            selection.end,
            Cursor {
                line: 2,
                column: 12
            }
        );
    }

    #[test]
    fn reversed_selection_is_ordered_and_empty_selection_is_none() {
        let mut f = Fixture::new();
        f.open("a.rs", "abcdef");
        f.ide
            .did_focus(Some(uri("a.rs")), None, range(at(0, 4), at(0, 1)));
        assert_eq!(f.active().unwrap().selection.unwrap().text, "bcd");
        f.ide
            .did_focus(Some(uri("a.rs")), None, range(at(0, 2), at(0, 2)));
        assert_eq!(f.active().unwrap().selection, None);
    }

    #[test]
    fn positions_past_the_end_clamp() {
        let mut f = Fixture::new();
        f.open("a.rs", "ab\ncd");
        f.ide.did_focus(
            Some(uri("a.rs")),
            Some(at(0, 99)),
            range(at(1, 1), at(9, 9)),
        );
        let active = f.active().unwrap();
        assert_eq!(active.cursor, cursor_at(1, 3));
        assert_eq!(active.selection.unwrap().text, "d");
    }

    #[test]
    fn explicit_focus_wins_over_inference_from_sync() {
        let mut f = Fixture::new();
        f.open("a.rs", "a");
        f.ide.did_focus(Some(uri("a.rs")), Some(at(0, 0)), None);
        // A background open and an edit elsewhere (the agent's) do not move focus...
        f.open("b.rs", "b");
        f.ide.did_change(&uri("b.rs"), Some(at(0, 1)));
        assert_eq!(f.active().unwrap().path, PathBuf::from("a.rs"));
        // ...but typing in the focused document moves its cursor and drops its selection.
        f.ide
            .did_focus(Some(uri("a.rs")), Some(at(0, 0)), range(at(0, 0), at(0, 1)));
        f.ide.did_change(&uri("a.rs"), Some(at(0, 1)));
        let active = f.active().unwrap();
        assert_eq!(active.cursor, cursor_at(1, 2));
        assert_eq!(active.selection, None);
    }

    #[test]
    fn focus_on_nothing_clears_the_active_document() {
        let mut f = Fixture::new();
        f.open("a.rs", "a");
        f.ide.did_focus(None, None, None);
        let state = f.snapshot(PositionEncoding::Utf16);
        assert_eq!(state.active, None);
        assert_eq!(state.open, vec![PathBuf::from("a.rs")]);
    }

    #[test]
    fn closing_the_active_document_leaves_none_active() {
        let mut f = Fixture::new();
        f.open("a.rs", "a");
        f.open("b.rs", "b");
        f.ide.did_close(&uri("b.rs"));
        let state = f.snapshot(PositionEncoding::Utf16);
        assert_eq!(state.active, None);
        assert_eq!(state.open, vec![PathBuf::from("a.rs")]);
    }

    #[test]
    fn focus_moves_a_document_to_the_front_of_the_mru_list() {
        let mut f = Fixture::new();
        f.open("a.rs", "a");
        f.open("b.rs", "b");
        f.open("c.rs", "c");
        f.ide.did_focus(Some(uri("a.rs")), None, None);
        f.ide.did_focus(None, None, None);
        assert_eq!(
            f.open_paths(),
            vec![
                PathBuf::from("a.rs"),
                PathBuf::from("c.rs"),
                PathBuf::from("b.rs")
            ]
        );
    }

    #[test]
    fn documents_without_a_path_are_skipped() {
        let mut f = Fixture::new();
        f.open("a.rs", "a");
        f.open("untitled:Untitled-1", "scratch");
        let state = f.snapshot(PositionEncoding::Utf16);
        assert_eq!(state.active, None);
        assert_eq!(state.open, vec![PathBuf::from("a.rs")]);
    }

    const PARSER: &str = "struct Parser;\n\nimpl Parser {\n    fn parse(&self) -> u32 {\n        // é😀\n        1\n    }\n}\n";

    #[test]
    fn snapshot_names_the_symbol_at_the_cursor() {
        let mut f = Fixture::new();
        f.open("a.rs", PARSER);
        // After "// é😀" (UTF-16: 8 spaces, 2 slashes, a space, é, and a surrogate pair).
        f.ide.did_focus(Some(uri("a.rs")), Some(at(4, 14)), None);
        expect_test::expect![[r#"
            impl Parser › fn parse (4-7)
                fn parse(&self) -> u32 {
                    // é😀
                    1
                }"#]]
        .assert_eq(&f.symbol());
        // Between the items: no symbol.
        f.ide.did_focus(Some(uri("a.rs")), Some(at(1, 0)), None);
        assert_eq!(f.symbol(), "<none>");
    }

    #[test]
    fn symbol_at_a_utf16_cursor_after_multibyte_chars() {
        // `fn a() {}` spans UTF-16 units 26-35 and bytes 32-41; `fn b() {}` units 36-45.
        let mut f = Fixture::new();
        f.open("a.rs", "const S: &str = \"é😀é😀\"; fn a() {} fn b() {}\n");
        let symbol_at = |f: &mut Fixture, character| {
            f.ide
                .did_focus(Some(uri("a.rs")), Some(at(0, character)), None);
            f.active().unwrap().symbol.map(|symbol| symbol.path)
        };
        // Read as chars, 34 would be in `fn b`; read as bytes, 36 would be in `fn a`.
        assert_eq!(symbol_at(&mut f, 34).as_deref(), Some("fn a"));
        assert_eq!(symbol_at(&mut f, 36).as_deref(), Some("fn b"));
    }

    #[test]
    fn symbol_follows_the_edits_told_to_the_tree() {
        let mut f = Fixture::new();
        f.open("a.rs", PARSER);
        f.ide.did_focus(Some(uri("a.rs")), Some(at(4, 0)), None);
        // Parsed once here; the edits below are then reparsed incrementally.
        assert!(f.symbol().starts_with("impl Parser › fn parse (4-7)"));
        f.change("a.rs", range(at(3, 7), at(3, 12)), "tokens");
        f.change("a.rs", range(at(0, 0), at(0, 0)), "// The parser.\n");
        f.ide.did_change(&uri("a.rs"), Some(at(5, 0)));
        assert!(
            f.symbol().starts_with("impl Parser › fn tokens (5-8)"),
            "{}",
            f.symbol()
        );
        // A whole-text change too.
        f.change("a.rs", None, "fn main() {\n    run();\n}\n");
        f.ide.did_change(&uri("a.rs"), Some(at(1, 4)));
        assert_eq!(f.symbol(), "fn main (1-3)\nfn main() {\n    run();\n}");
    }

    #[test]
    fn no_symbol_without_a_cursor_or_outside_a_parsed_language() {
        let mut f = Fixture::new();
        f.open("a.rs", PARSER);
        assert_eq!(f.symbol(), "<none>");
        f.open_as("notes.txt", "fn parse() {}\n", "plaintext");
        f.ide
            .did_focus(Some(uri("notes.txt")), Some(at(0, 5)), None);
        assert_eq!(f.active().unwrap().cursor, cursor_at(1, 6));
        assert_eq!(f.symbol(), "<none>");
    }

    #[test]
    fn symbol_text_is_capped() {
        let mut f = Fixture::new();
        let body = "        let x = 1;\n".repeat(400);
        f.open("a.rs", &format!("fn long() {{\n{body}}}\n"));
        f.ide.did_focus(Some(uri("a.rs")), Some(at(200, 0)), None);
        let symbol = f.active().unwrap().symbol.unwrap();
        assert_eq!((symbol.start_line, symbol.end_line), (1, 402));
        assert!(
            symbol.text.len() <= SYMBOL_CAP_BYTES + 40,
            "{}",
            symbol.text.len()
        );
        assert!(symbol.text.ends_with(" more lines)\n"), "{}", symbol.text);
    }

    #[test]
    fn focused_document_that_was_never_synced_keeps_its_path() {
        let mut f = Fixture::new();
        f.ide.did_focus(
            Some(uri("notes.txt")),
            Some(at(3, 3)),
            range(at(0, 0), at(1, 0)),
        );
        let active = f.active().unwrap();
        assert_eq!(active.path, PathBuf::from("notes.txt"));
        assert_eq!((active.cursor, active.selection), (None, None));
    }
}
