//! STUB (helper B fills it): an open document's syntax tree, kept up to date incrementally.

use ropey::Rope;
use tandem_text::AppliedChange;
use tree_sitter::Tree;

use crate::{Language, Result};

/// The syntax tree of one open document. Each `didChange` is told to the tree with [`edit`]
/// (cheap: no parsing); the next [`tree`] call reparses incrementally, reusing what the edits
/// left untouched.
///
/// [`edit`]: SyntaxDocument::edit
/// [`tree`]: SyntaxDocument::tree
pub struct SyntaxDocument {
    language: Language,
    tree: Option<Tree>,
}

impl SyntaxDocument {
    /// A document not parsed yet: the first [`Self::tree`] call parses it in full (so opening a
    /// huge file costs nothing until someone asks about its syntax).
    pub fn new(language: Language) -> Self {
        SyntaxDocument {
            language,
            tree: None,
        }
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// Tells the tree about one change already applied to the text.
    pub fn edit(&mut self, change: &AppliedChange) {
        let _ = (change, &self.tree);
        unimplemented!()
    }

    /// The tree of `rope`, which must be the text after every change told to [`Self::edit`].
    pub fn tree(&mut self, rope: &Rope) -> Result<&Tree> {
        let _ = rope;
        unimplemented!()
    }
}
