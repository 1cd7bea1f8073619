//! The workspace symbol index and the repo map built from it.
//!
//! The index keeps, per file, only what the map and the symbol tools show: its definitions
//! (name, kind, line, the first lines of the outline items around them), its references grouped
//! by name, and the texts of the lines a map or a hit may print. Whole texts are not kept, so
//! a workspace of tens of thousands of files stays small. A file is re-read and re-parsed only
//! when its stamp (modification time and length on disk; version and text hash for an editor
//! buffer) changed, so refreshing the index each turn costs a `stat` per file.
//!
//! The map ranks files with a personalised PageRank over the graph "file A references an
//! identifier file B defines" (see `rank.rs`), the approach Aider showed works.

mod disk;
mod parse;
mod rank;
mod update;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::time::SystemTime;

use crate::Language;

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
    /// Files (re)parsed by this update, by its own threads or by callers that helped it.
    pub parsed: usize,
    /// Lines in the files parsed.
    pub lines_parsed: usize,
    /// Files dropped (gone, or no longer listed).
    pub removed: usize,
    /// Files this call parsed for the update that was running when it came (counted in that
    /// update's `parsed`), while it waited for its turn.
    pub helped: usize,
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

/// What the index knows of one file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexedFile {
    pub language: Language,
    pub lines: u32,
}

/// Tags of every indexed file, cached per file, with the ranking that turns them into a map.
#[derive(Default)]
pub struct SymbolIndex {
    /// Written only to put in an update's results as they come (in batches): parsing happens
    /// outside the lock, so readers see a partial index while a long update runs.
    files: RwLock<HashMap<PathBuf, FileEntry>>,
    parses: AtomicUsize,
    /// Whether an update is running: one at a time, so that a prompt's update arriving while
    /// the background one parses waits for it (and finds the files parsed) instead of parsing
    /// the same files again beside it.
    updating: Mutex<bool>,
    updated: Condvar,
    /// The running update's queue, which a caller waiting for it helps with.
    running: Mutex<Option<Arc<update::Job>>>,
    /// Set when the latest update stopped at its deadline, or a caller gave up waiting for a
    /// running one: the index lacks files still to parse, and a map says so.
    incomplete: AtomicBool,
}

/// When a file's text was seen: equal stamps mean the same text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    Disk {
        modified: Option<SystemTime>,
        len: u64,
    },
    Buffer {
        version: i32,
        hash: u64,
    },
}

/// What the index keeps of a file. A large index holds millions of definitions and references,
/// so their strings and lists live end to end in a few allocations per file (spans point in).
struct FileEntry {
    stamp: Stamp,
    language: Language,
    line_count: u32,
    /// Names (each once) and the kept lines' texts.
    strings: Box<str>,
    /// Sorted by key, then line.
    definitions: Box<[Definition]>,
    /// The definitions' scope lines.
    scopes: Box<[u32]>,
    /// Sorted by name and kind.
    references: Box<[References]>,
    /// The references' lines.
    reference_lines: Box<[u32]>,
    /// The lines a map or a definition hit may show (definition lines and the first lines of
    /// the items around them), sorted by line, trimmed at the end and cut to 200 characters.
    lines: Box<[(u32, Span)]>,
    /// An editor buffer's text (shared with the editor's copy): reference hits read their line
    /// texts from it, where a disk file is read again.
    buffer: Option<Arc<str>>,
}

/// A run of a [`FileEntry`]'s `strings`, `scopes` or `reference_lines`.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    fn of<T>(items: &[T], start: usize) -> Span {
        Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            len: u32::try_from(items.len() - start).unwrap_or(0),
        }
    }

    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

struct Definition {
    /// See [`rank::name_key`].
    key: u64,
    name: Span,
    kind: &'static str,
    line: u32,
    /// First lines of the outline items enclosing the definition, outermost first.
    scopes: Span,
}

/// Every reference of one kind to one name in a file.
struct References {
    key: u64,
    name: Span,
    kind: &'static str,
    lines: Span,
}

impl FileEntry {
    fn text(&self, span: Span) -> &str {
        self.strings.get(span.range()).unwrap_or("")
    }

    fn scopes(&self, definition: &Definition) -> &[u32] {
        self.scopes.get(definition.scopes.range()).unwrap_or(&[])
    }

    fn reference_lines(&self, references: &References) -> &[u32] {
        self.reference_lines
            .get(references.lines.range())
            .unwrap_or(&[])
    }

    fn line_text(&self, line: u32) -> Option<&str> {
        self.lines
            .binary_search_by_key(&line, |(number, _)| *number)
            .ok()
            .map(|at| self.text(self.lines[at].1))
    }
}

/// Hit and map lines are cut to this many characters.
const MAX_HIT_CHARS: usize = 200;

impl SymbolIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the latest update left changed files unparsed (or a caller stopped waiting for
    /// one that was still running).
    pub fn is_incomplete(&self) -> bool {
        self.incomplete.load(Ordering::Relaxed)
    }

    /// Definitions named `name` (exactly), of `kind` when given, sorted by path and line.
    pub fn definitions(&self, name: &str, kind: Option<&str>) -> Vec<SymbolHit> {
        let indexed = self.files.read().unwrap_or_else(PoisonError::into_inner);
        // A file's definitions are sorted by key, so each file is a binary search, not a scan
        // of its names: completions look names up on every keystroke in large workspaces.
        let mut keys: Vec<(Language, u64)> = Vec::new();
        let mut hits: Vec<SymbolHit> = indexed
            .iter()
            .flat_map(|(path, entry)| {
                let key = match keys
                    .iter()
                    .find(|(language, _)| *language == entry.language)
                {
                    Some((_, key)) => *key,
                    None => {
                        let key = rank::name_key(entry.language, name);
                        keys.push((entry.language, key));
                        key
                    }
                };
                let first = entry
                    .definitions
                    .partition_point(|definition| definition.key < key);
                entry.definitions[first..]
                    .iter()
                    .take_while(move |definition| definition.key == key)
                    .filter(|definition| {
                        entry.text(definition.name) == name
                            && kind.is_none_or(|kind| definition.kind == kind)
                    })
                    .map(|definition| SymbolHit {
                        path: path.clone(),
                        line: definition.line,
                        kind: definition.kind,
                        name: name.to_owned(),
                        line_text: entry
                            .line_text(definition.line)
                            .map(|text| cut_chars(text.trim(), MAX_HIT_CHARS))
                            .unwrap_or_default(),
                    })
            })
            .collect();
        drop(indexed);
        hits.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        hits
    }

    /// References to `name` (exactly) found by the tags queries, sorted by path and line.
    /// Their line texts are not kept in the index: they are read from the file as it is now
    /// (an editor buffer's text as it was indexed).
    pub fn references(&self, name: &str) -> Vec<SymbolHit> {
        let indexed = self.files.read().unwrap_or_else(PoisonError::into_inner);
        // Per file with hits: its buffer's text, if it is one, and the hits' lines and kinds.
        type FileHits = (PathBuf, Option<Arc<str>>, Vec<(u32, &'static str)>);
        let mut found: Vec<FileHits> = indexed
            .iter()
            .filter_map(|(path, entry)| {
                let lines: Vec<(u32, &'static str)> = entry
                    .references
                    .iter()
                    .filter(|group| entry.text(group.name) == name)
                    .flat_map(|group| {
                        entry
                            .reference_lines(group)
                            .iter()
                            .map(|line| (*line, group.kind))
                    })
                    .collect();
                (!lines.is_empty()).then(|| (path.clone(), entry.buffer.clone(), lines))
            })
            .collect();
        drop(indexed);
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut hits = Vec::new();
        for (path, buffer, mut lines) in found {
            lines.sort_unstable();
            let text: Option<Arc<str>> = buffer.or_else(|| match std::fs::read(&path) {
                Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into()),
                Err(error) => {
                    tracing::debug!(path = %path.display(), %error, "reference line unreadable");
                    None
                }
            });
            let text_lines: Vec<&str> = text
                .as_deref()
                .map_or_else(Vec::new, |text| text.split('\n').collect());
            for (line, kind) in lines {
                let line_text = text_lines
                    .get(line as usize)
                    .map(|text| cut_chars(text.trim(), MAX_HIT_CHARS))
                    .unwrap_or_default();
                hits.push(SymbolHit {
                    path: path.clone(),
                    line,
                    kind,
                    name: name.to_owned(),
                    line_text,
                });
            }
        }
        hits
    }

    /// The ranked map, within `request.max_tokens`; `display` shows a path as the model knows
    /// it (relative to the workspace).
    /// A map made while the index lacks files still to parse ends with a line saying so.
    pub fn repo_map(&self, request: &MapRequest, display: &dyn Fn(&Path) -> String) -> RepoMap {
        let indexed = self.files.read().unwrap_or_else(PoisonError::into_inner);
        let mut map = rank::repo_map(&indexed, request, display);
        let files = indexed.len();
        drop(indexed);
        if self.is_incomplete() && !map.text.trim().is_empty() {
            let note = format!(
                "(Incomplete: the workspace was still being indexed, so this map covers only the \
                 {files} files parsed by then. The repo_map tool gives a fuller one later.)\n"
            );
            map.estimated_tokens += note.len().div_ceil(4);
            if !map.text.ends_with('\n') {
                map.text.push('\n');
            }
            map.text.push_str(&note);
        }
        map
    }

    /// Files parsed since the index was made (a test counter: a warm update parses nothing).
    pub fn parse_count(&self) -> usize {
        self.parses.load(Ordering::Relaxed)
    }

    /// Files in the index.
    pub fn len(&self) -> usize {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The language and line count of an indexed file, without reading it.
    pub fn file(&self, path: &Path) -> Option<IndexedFile> {
        let indexed = self.files.read().unwrap_or_else(PoisonError::into_inner);
        indexed.get(path).map(|entry| IndexedFile {
            language: entry.language,
            lines: entry.line_count,
        })
    }
}

fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
