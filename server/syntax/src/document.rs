//! An open document's syntax tree, kept up to date incrementally: each change the editor sends
//! is told to the tree at once (cheap: no parsing), and the tree is reparsed only when someone
//! asks for it, reusing every node the edits left untouched.
//!
//! The parser reads the text straight from the rope, chunk by chunk, so a keystroke in a large
//! file costs neither a copy of the file nor a full parse.

use ropey::Rope;
use tandem_text::{AppliedChange, TextPoint};
use tree_sitter::{InputEdit, Parser, Point, Tree};

use crate::{Error, Language, Result};

/// The syntax tree of one open document. Each `didChange` is told to the tree with [`edit`]
/// (cheap: no parsing); the next [`tree`] call reparses incrementally, reusing what the edits
/// left untouched.
///
/// [`edit`]: SyntaxDocument::edit
/// [`tree`]: SyntaxDocument::tree
pub struct SyntaxDocument {
    language: Language,
    /// Made (and given its grammar) by the first parse; kept, as each parse reuses its buffers.
    parser: Option<Parser>,
    tree: Option<Tree>,
    /// Edits were told to `tree` since it was parsed: the next read reparses.
    stale: bool,
    /// Edits told so far: a parse run outside the document is kept only if none came since.
    generation: u64,
}

/// What a parse run away from its document needs: the tree as edited so far (none before the
/// first parse) and the edit count it matches. See [`SyntaxDocument::snapshot`].
pub struct PendingParse {
    language: Language,
    old_tree: Option<Tree>,
    generation: u64,
}

/// A document's tree as of now, or the parse that would bring it up to date.
pub enum TreeSnapshot {
    Current(Tree),
    Stale(PendingParse),
}

impl SyntaxDocument {
    /// A document not parsed yet: the first [`Self::tree`] call parses it in full (so opening a
    /// huge file costs nothing until someone asks about its syntax).
    pub fn new(language: Language) -> Self {
        SyntaxDocument {
            language,
            parser: None,
            tree: None,
            stale: false,
            generation: 0,
        }
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// Tells the tree about one change already applied to the text.
    pub fn edit(&mut self, change: &AppliedChange) {
        self.generation += 1;
        // Before the first parse there is nothing to adjust: that parse reads the text as it is.
        let Some(tree) = &mut self.tree else {
            return;
        };
        tree.edit(&InputEdit {
            start_byte: change.start_byte,
            old_end_byte: change.old_end_byte,
            new_end_byte: change.new_end_byte,
            start_position: point(change.start_point),
            old_end_position: point(change.old_end_point),
            new_end_position: point(change.new_end_point),
        });
        self.stale = true;
    }

    /// Whether the next [`Self::tree`] call parses (in full the first time, else incrementally).
    pub fn needs_parse(&self) -> bool {
        self.tree.is_none() || self.stale
    }

    /// The tree of `rope`, which must be the text after every change told to [`Self::edit`].
    pub fn tree(&mut self, rope: &Rope) -> Result<&Tree> {
        if self.needs_parse() {
            let parser = match &mut self.parser {
                Some(parser) => parser,
                None => self.parser.insert(new_parser(self.language)?),
            };
            let parsed = parse_rope(parser, rope, self.tree.as_ref(), self.language)?;
            self.tree = Some(parsed);
            self.stale = false;
        }
        self.tree.as_ref().ok_or(Error::ParseFailed {
            language: self.language,
        })
    }

    /// The tree if it is up to date (a cheap copy: nodes are shared), else what a parse needs,
    /// so that a caller holding a lock around the document can parse after letting it go: take
    /// the snapshot and the text under the lock, [`PendingParse::parse`] without it, and hand the
    /// tree back with [`Self::finish`].
    pub fn snapshot(&self) -> TreeSnapshot {
        match &self.tree {
            Some(tree) if !self.stale => TreeSnapshot::Current(tree.clone()),
            _ => TreeSnapshot::Stale(PendingParse {
                language: self.language,
                old_tree: self.tree.clone(),
                generation: self.generation,
            }),
        }
    }

    /// Keeps `tree`, parsed for `pending`, unless edits arrived since the snapshot (then it
    /// describes older text and the next read parses again). Returns whether it was kept.
    pub fn finish(&mut self, pending: &PendingParse, tree: Tree) -> bool {
        if pending.generation != self.generation {
            return false;
        }
        self.tree = Some(tree);
        self.stale = false;
        true
    }
}

impl PendingParse {
    /// Parses `rope` (the text the snapshot was taken with), incrementally when there is an
    /// edited tree to start from, with a parser kept per thread and language.
    pub fn parse(&self, rope: &Rope) -> Result<Tree> {
        thread_local! {
            static PARSERS: std::cell::RefCell<std::collections::HashMap<Language, Parser>> =
                std::cell::RefCell::default();
        }
        PARSERS.with(|parsers| {
            let mut parsers = parsers.borrow_mut();
            let parser = match parsers.entry(self.language) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(new_parser(self.language)?)
                }
            };
            parse_rope(parser, rope, self.old_tree.as_ref(), self.language)
        })
    }
}

/// Parses the rope chunk by chunk (no copy of the text).
fn parse_rope(
    parser: &mut Parser,
    rope: &Rope,
    old_tree: Option<&Tree>,
    language: Language,
) -> Result<Tree> {
    let len = rope.len_bytes();
    let mut read = |byte: usize, _: Point| -> &[u8] {
        if byte >= len {
            return &[];
        }
        let (chunk, chunk_start, _, _) = rope.chunk_at_byte(byte);
        chunk
            .as_bytes()
            .get(byte - chunk_start..)
            .unwrap_or_default()
    };
    match parser.parse_with_options(&mut read, old_tree, None) {
        Some(parsed) => Ok(parsed),
        None => {
            // Only a cancelled or timed-out parse stops half way, and neither is set; should one
            // ever be, the parser must not resume from its half-built state.
            parser.reset();
            Err(Error::ParseFailed { language })
        }
    }
}

fn new_parser(language: Language) -> Result<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| Error::Grammar {
            language,
            message: error.to_string(),
        })?;
    Ok(parser)
}

fn point(point: TextPoint) -> Point {
    Point {
        row: point.row,
        column: point.column,
    }
}

#[cfg(test)]
mod tests {
    use tandem_text::{Change, Document, LineCol, PositionEncoding, Range};

    use super::*;

    fn type_at(doc: &mut Document, line: u32, character: u32, text: &str) -> AppliedChange {
        let at = LineCol::new(line, character);
        doc.apply_change(
            &Change {
                range: Some(Range { start: at, end: at }),
                text: text.to_owned(),
            },
            PositionEncoding::Utf16,
        )
    }

    #[test]
    fn a_parse_run_outside_is_dropped_when_an_edit_lands_meanwhile() {
        let mut doc = Document::new("fn a() {}\n", 1, "rust");
        let mut syntax = SyntaxDocument::new(Language::Rust);
        let TreeSnapshot::Stale(first) = syntax.snapshot() else {
            panic!("an unparsed document is not current");
        };
        let tree = first.parse(doc.rope()).unwrap();
        assert!(syntax.finish(&first, tree));
        assert!(matches!(syntax.snapshot(), TreeSnapshot::Current(_)));

        syntax.edit(&type_at(&mut doc, 1, 0, "fn b() {}\n"));
        let TreeSnapshot::Stale(pending) = syntax.snapshot() else {
            panic!("an edited document is stale");
        };
        let older = pending.parse(doc.rope()).unwrap();
        // The user types on while that parse runs: its tree is for older text.
        syntax.edit(&type_at(&mut doc, 2, 0, "fn c() {}\n"));
        assert!(!syntax.finish(&pending, older));
        let sexp = syntax.tree(doc.rope()).unwrap().root_node().to_sexp();
        assert_eq!(sexp.matches("function_item").count(), 3, "{sexp}");
    }

    #[test]
    fn edits_before_the_first_parse_are_read_from_the_text() {
        let mut doc = Document::new("fn a() {}\n", 1, "rust");
        let mut syntax = SyntaxDocument::new(Language::Rust);
        assert!(syntax.needs_parse());
        let change = type_at(&mut doc, 1, 0, "fn b() {}\n");
        syntax.edit(&change);
        let sexp = syntax.tree(doc.rope()).unwrap().root_node().to_sexp();
        assert_eq!(sexp.matches("function_item").count(), 2, "{sexp}");
        assert!(!syntax.needs_parse());
    }

    #[test]
    fn a_read_after_edits_reparses_and_only_then() {
        let mut doc = Document::new("fn a() {}\n", 1, "rust");
        let mut syntax = SyntaxDocument::new(Language::Rust);
        syntax.tree(doc.rope()).unwrap();
        let change = type_at(&mut doc, 0, 9, " struct S;");
        syntax.edit(&change);
        assert!(syntax.needs_parse());
        let root = syntax.tree(doc.rope()).unwrap().root_node();
        assert_eq!(root.named_child_count(), 2, "{}", root.to_sexp());
        assert!(!syntax.needs_parse());
    }
}
