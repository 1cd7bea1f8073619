//! STUB (helper C fills it): the workspace symbol index and the repo map.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a file's current text comes from.
#[derive(Debug, Clone)]
pub enum FileSource {
    /// The disk: re-read and re-parsed only when its modification time or length changed.
    Disk,
    /// An open editor buffer: re-parsed only when its version (or text) changed.
    Buffer { version: i32, text: Arc<str> },
}

/// What an [`SymbolIndex::update`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Files in the index after the update.
    pub files: usize,
    /// Files (re)parsed by this update.
    pub parsed: usize,
    /// Lines in the files parsed.
    pub lines_parsed: usize,
    /// Files dropped (gone, or no longer listed).
    pub removed: usize,
    /// False when the deadline came first: some changed files were left unparsed (their old
    /// tags, if any, are kept) and the next update goes on with them.
    pub complete: bool,
}

/// A definition or reference found in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolHit {
    pub path: PathBuf,
    /// 0-based.
    pub line: u32,
    pub kind: &'static str,
    pub name: String,
    /// The line's text, trimmed and cut to 200 characters.
    pub line_text: String,
}

/// Who the repo map is for: what to rank toward, and how much it may take.
#[derive(Debug, Clone, Default)]
pub struct MapRequest {
    /// The file the user is looking at.
    pub active: Option<PathBuf>,
    /// Other open files, most recent first.
    pub open: Vec<PathBuf>,
    /// Files the agent edited recently.
    pub edited: Vec<PathBuf>,
    /// Identifiers the user's prompt mentions.
    pub mentioned: Vec<String>,
    /// The map's size limit, in estimated tokens (4 bytes a token).
    pub max_tokens: usize,
}

/// A rendered repo map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepoMap {
    pub text: String,
    /// Files shown, in rank order.
    pub files: Vec<PathBuf>,
    pub definitions: usize,
    pub estimated_tokens: usize,
}

/// Tags of every indexed file, cached per file, with the ranking that turns them into a map.
#[derive(Default)]
pub struct SymbolIndex {}

impl SymbolIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// The source files under `roots` in a language Tandem parses, honouring `.gitignore`
    /// (and `.ignore`), skipping files over `max_file_bytes`, at most `max_files` of them.
    pub fn walk(roots: &[PathBuf], max_files: usize, max_file_bytes: u64) -> Vec<PathBuf> {
        let _ = (roots, max_files, max_file_bytes);
        unimplemented!()
    }

    /// Brings the index to exactly `files`: parses those new or changed since the last update
    /// (in parallel), keeps the rest, drops files no longer listed. Stops parsing at
    /// `deadline`, if given (see [`IndexStats::complete`]).
    pub fn update(
        &self,
        files: Vec<(PathBuf, FileSource)>,
        deadline: Option<std::time::Instant>,
    ) -> IndexStats {
        let _ = (files, deadline);
        unimplemented!()
    }

    /// Definitions named `name` (exactly), of `kind` when given, sorted by path and line.
    pub fn definitions(&self, name: &str, kind: Option<&str>) -> Vec<SymbolHit> {
        let _ = (name, kind);
        unimplemented!()
    }

    /// References to `name` (exactly) found by the tags queries, sorted by path and line.
    pub fn references(&self, name: &str) -> Vec<SymbolHit> {
        let _ = name;
        unimplemented!()
    }

    /// The ranked map, within `request.max_tokens`; `display` shows a path as the model knows
    /// it (relative to the workspace).
    pub fn repo_map(&self, request: &MapRequest, display: &dyn Fn(&Path) -> String) -> RepoMap {
        let _ = (request, display);
        unimplemented!()
    }

    /// Files parsed since the index was made (a test counter: a warm update parses nothing).
    pub fn parse_count(&self) -> usize {
        unimplemented!()
    }
}
