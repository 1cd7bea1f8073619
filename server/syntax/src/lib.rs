//! Tandem's knowledge of syntax: tree-sitter grammars and the queries in `queries/` (compiled
//! into the binary), incremental parsing of open documents, tags (definitions and references),
//! outlines, the symbol under the cursor, the workspace symbol index with its ranked repo map,
//! and the guardrail that refuses edits which break the syntax.
//!
//! Pure computation and file reads: no network, no async. Callers with an async runtime run the
//! heavier calls (indexing a workspace) on a blocking thread.

pub mod comments;
pub mod document;
pub mod guard;
pub mod index;
pub mod language;
pub mod outline;
pub mod shell;
pub mod symbol;
pub mod tags;
pub mod window;

pub use comments::comment_syntax;
pub use document::{PendingParse, SyntaxDocument, TreeSnapshot};
pub use guard::{
    check_edit, check_edit_from, AfterTree, Checked, DeferredParse, GuardReport, ParsedText,
    SyntaxError,
};
pub use index::{FileSource, IndexStats, IndexedFile, MapRequest, RepoMap, SymbolHit, SymbolIndex};
pub use language::Language;
pub use outline::{outline_items, render_outline, OutlineItem};
pub use symbol::{symbol_at, SymbolAtCursor};
pub use tags::{tags, Tag, TagRole};
pub use tree_sitter::Tree;
pub use window::{prefix_start, suffix_end};

/// Parses `source` from scratch. `None` only if tree-sitter gives up (it does not, without a
/// timeout or cancellation flag, on any input).
pub fn parse(language: Language, source: &str) -> Result<tree_sitter::Tree> {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| Error::Grammar {
            language,
            message: error.to_string(),
        })?;
    parser
        .parse(source, None)
        .ok_or(Error::ParseFailed { language })
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the {language} grammar cannot be loaded: {message}")]
    Grammar { language: Language, message: String },
    #[error("the {language} query {file} does not compile: {message}")]
    Query {
        language: Language,
        file: &'static str,
        message: String,
    },
    #[error("tree-sitter could not parse the {language} source")]
    ParseFailed { language: Language },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
