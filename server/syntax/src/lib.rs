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
pub mod highlight;
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
pub use language::{parse, Error, Language, Result};
pub use outline::{outline_items, render_outline, OutlineItem};
pub use symbol::{symbol_at, SymbolAtCursor};
pub use tags::{tags, Tag, TagRole};
pub use tree_sitter::Tree;
pub use window::{prefix_start, suffix_end};
