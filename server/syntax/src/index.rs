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
mod rank;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::time::{Instant, SystemTime};

use streaming_iterator::StreamingIterator;
use tree_sitter::QueryCursor;

use crate::{tags, Language, TagRole};

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
    /// Set when the latest update stopped at its deadline, or a caller gave up waiting for a
    /// running one: the index lacks files still to parse, and a map says so.
    incomplete: AtomicBool,
}

/// Held while an update runs; lets the next one in when dropped (a panic included).
struct UpdateSlot<'a>(&'a SymbolIndex);

impl Drop for UpdateSlot<'_> {
    fn drop(&mut self) {
        *self
            .0
            .updating
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = false;
        self.0.updated.notify_all();
    }
}

/// Parse results are put into the index in batches of this many files.
const PUBLISH_BATCH: usize = 16;

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

/// What the workers of one update did.
#[derive(Default)]
struct Parsed {
    /// Files taken from the queue.
    taken: usize,
    parsed: usize,
    lines: usize,
    /// Files the index had that could not be read or parsed now.
    dropped: usize,
}

/// Hit and map lines are cut to this many characters.
const MAX_HIT_CHARS: usize = 200;
/// Below this many files an update stats them on the calling thread: threads would cost more.
const PARALLEL_STAT_MIN: usize = 512;

impl SymbolIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// The source files under `roots` in a language Tandem parses, honouring `.gitignore`
    /// (and `.ignore`), skipping files over `max_file_bytes`, at most `max_files` of them.
    ///
    /// Sorted, and the same files from call to call: past the cap, the first in path order
    /// (a different set each turn would re-parse the difference each turn).
    pub fn walk(roots: &[PathBuf], max_files: usize, max_file_bytes: u64) -> Vec<PathBuf> {
        let Some(mut builder) = walker(roots) else {
            return Vec::new();
        };
        // Reading directories dominates, and parallelises well. Which files are the first
        // `max_files` is known only once all are found, so a tree far over the cap is walked
        // again, in order, stopping at the cap.
        let ceiling = max_files.saturating_mul(4);
        let found = std::sync::Mutex::new(Vec::new());
        let overflowed = std::sync::atomic::AtomicBool::new(false);
        builder
            .threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
            .build_parallel()
            .run(|| {
                let (found, overflowed) = (&found, &overflowed);
                Box::new(move |entry| {
                    let Some(path) = source_file(entry, max_file_bytes) else {
                        return ignore::WalkState::Continue;
                    };
                    let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
                    found.push(path);
                    if found.len() > ceiling {
                        overflowed.store(true, Ordering::Relaxed);
                        return ignore::WalkState::Quit;
                    }
                    ignore::WalkState::Continue
                })
            });
        let mut files = found.into_inner().unwrap_or_else(PoisonError::into_inner);
        if overflowed.into_inner() {
            files.clear();
            let Some(mut builder) = walker(roots) else {
                return Vec::new();
            };
            builder.sort_by_file_name(|a, b| a.cmp(b));
            for entry in builder.build() {
                if files.len() >= max_files {
                    break;
                }
                files.extend(source_file(entry, max_file_bytes));
            }
        }
        files.sort_unstable();
        files.dedup();
        files.truncate(max_files);
        files
    }

    /// Brings the index to exactly `files`: parses those new or changed since the last update
    /// (in parallel), keeps the rest, drops files no longer listed. Stops parsing at
    /// `deadline`, if given (see [`IndexStats::complete`]). An update already running (the
    /// background one) is waited for, until `deadline`; past it, this one gives up and reports
    /// the index as it is, incomplete.
    pub fn update(
        &self,
        files: Vec<(PathBuf, FileSource)>,
        deadline: Option<std::time::Instant>,
    ) -> IndexStats {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.update_on(files, deadline, workers)
    }

    /// [`SymbolIndex::update`] without a deadline, on half the cores (at least one): for the
    /// indexing a front end starts as soon as it knows the workspace, which should leave room
    /// for the editor's requests.
    pub fn update_in_background(&self, files: Vec<(PathBuf, FileSource)>) -> IndexStats {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.update_on(files, None, (cores / 2).max(1))
    }

    /// Whether the latest update left changed files unparsed (or a caller stopped waiting for
    /// one that was still running).
    pub fn is_incomplete(&self) -> bool {
        self.incomplete.load(Ordering::Relaxed)
    }

    /// Waits until no other update runs (until `deadline`, if given) and takes the slot.
    fn slot(&self, deadline: Option<Instant>) -> Option<UpdateSlot<'_>> {
        let mut updating = self.updating.lock().unwrap_or_else(PoisonError::into_inner);
        while *updating {
            updating = match deadline {
                None => self
                    .updated
                    .wait(updating)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(deadline) => {
                    let left = deadline.checked_duration_since(Instant::now())?;
                    self.updated
                        .wait_timeout(updating, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        *updating = true;
        Some(UpdateSlot(self))
    }

    fn update_on(
        &self,
        files: Vec<(PathBuf, FileSource)>,
        deadline: Option<Instant>,
        workers: usize,
    ) -> IndexStats {
        let Some(_slot) = self.slot(deadline) else {
            self.incomplete.store(true, Ordering::Relaxed);
            return IndexStats {
                files: self.len(),
                complete: false,
                ..IndexStats::default()
            };
        };
        let listed = last_listing_wins(files);

        // Stamps first, the texts later: a file written between the two is stamped older than
        // its text and so is read again next time, never missed.
        let stamps: Vec<Option<Stamp>> = if listed.len() < PARALLEL_STAT_MIN || workers == 1 {
            listed
                .iter()
                .map(|(path, source)| stamp(path, source))
                .collect()
        } else {
            let chunk = listed.len().div_ceil(workers);
            std::thread::scope(|scope| {
                let handles: Vec<_> = listed
                    .chunks(chunk)
                    .map(|part| {
                        scope.spawn(move || {
                            part.iter()
                                .map(|(path, source)| stamp(path, source))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|handle| {
                        handle
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            })
        };

        let work: Vec<(usize, Stamp)> = {
            let indexed = self.files.read().unwrap_or_else(PoisonError::into_inner);
            listed
                .iter()
                .zip(&stamps)
                .enumerate()
                .filter_map(|(at, ((path, _), stamp))| {
                    let stamp = (*stamp)?;
                    let unchanged = indexed.get(path).is_some_and(|entry| entry.stamp == stamp);
                    (!unchanged).then_some((at, stamp))
                })
                .collect()
        };

        // Files gone or no longer listed leave first; parsed files come in as they are done.
        let removed = {
            let keep: HashSet<&Path> = listed
                .iter()
                .zip(&stamps)
                .filter(|(_, stamp)| stamp.is_some())
                .map(|((path, _), _)| path.as_path())
                .collect();
            let mut indexed = self.files.write().unwrap_or_else(PoisonError::into_inner);
            let before = indexed.len();
            indexed.retain(|path, _| keep.contains(path.as_path()));
            before - indexed.len()
        };

        let done = self.parse_all(&listed, &work, deadline, workers);
        let complete = done.taken == work.len();
        self.incomplete.store(!complete, Ordering::Relaxed);
        IndexStats {
            files: self.len(),
            parsed: done.parsed,
            lines_parsed: done.lines,
            removed: removed + done.dropped,
            complete,
        }
    }

    /// Parses the `work` items of `listed` on up to `workers` threads pulling from one queue,
    /// putting each batch of results into the index; after `deadline` no worker takes a new
    /// file. A file that could not be read or parsed leaves the index.
    fn parse_all(
        &self,
        listed: &[(PathBuf, FileSource)],
        work: &[(usize, Stamp)],
        deadline: Option<Instant>,
        workers: usize,
    ) -> Parsed {
        let next = AtomicUsize::new(0);
        // Returns how many files it dropped that the index had.
        let publish = |batch: &mut Vec<(usize, Option<FileEntry>)>| {
            if batch.is_empty() {
                return 0;
            }
            let mut dropped = 0;
            let mut indexed = self.files.write().unwrap_or_else(PoisonError::into_inner);
            for (at, entry) in batch.drain(..) {
                let path = &listed[at].0;
                match entry {
                    Some(entry) => {
                        indexed.insert(path.clone(), entry);
                    }
                    None => {
                        dropped += usize::from(indexed.remove(path).is_some());
                    }
                }
            }
            dropped
        };
        let worker = || {
            let mut parsers: HashMap<Language, tree_sitter::Parser> = HashMap::new();
            let mut cursor = QueryCursor::new();
            let mut batch = Vec::new();
            let mut done = Parsed::default();
            loop {
                if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    break;
                }
                let Some((at, stamp)) = work.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                let (path, source) = &listed[*at];
                let entry = self.parse_file(path, source, *stamp, &mut parsers, &mut cursor);
                done.taken += 1;
                if let Some(entry) = &entry {
                    done.parsed += 1;
                    done.lines += entry.line_count as usize;
                }
                batch.push((*at, entry));
                if batch.len() >= PUBLISH_BATCH {
                    done.dropped += publish(&mut batch);
                }
            }
            done.dropped += publish(&mut batch);
            done
        };
        let workers = workers.min(work.len());
        if workers <= 1 {
            return worker();
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers).map(|_| scope.spawn(worker)).collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .fold(Parsed::default(), |sum, part| Parsed {
                    taken: sum.taken + part.taken,
                    parsed: sum.parsed + part.parsed,
                    lines: sum.lines + part.lines,
                    dropped: sum.dropped + part.dropped,
                })
        })
    }

    fn parse_file(
        &self,
        path: &Path,
        source: &FileSource,
        stamp: Stamp,
        parsers: &mut HashMap<Language, tree_sitter::Parser>,
        cursor: &mut QueryCursor,
    ) -> Option<FileEntry> {
        let Some(language) = Language::from_path(path) else {
            tracing::debug!(path = %path.display(), "not indexed: no language for this file");
            return None;
        };
        let (text, buffer): (std::borrow::Cow<'_, str>, _) = match source {
            FileSource::Disk => {
                let bytes = std::fs::read(path)
                    .map_err(|error| {
                        tracing::debug!(path = %path.display(), %error, "not indexed: unreadable");
                    })
                    .ok()?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| {
                        tracing::debug!(path = %path.display(), "not indexed: not UTF-8");
                    })
                    .ok()?;
                (text.into(), None)
            }
            FileSource::Buffer { text, .. } => ((&**text).into(), Some(text.clone())),
        };
        let parser = match parsers.entry(language) {
            std::collections::hash_map::Entry::Occupied(slot) => slot.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let mut parser = tree_sitter::Parser::new();
                if let Err(error) = parser.set_language(&language.grammar()) {
                    tracing::debug!(%language, %error, "not indexed: the grammar does not load");
                    return None;
                }
                slot.insert(parser)
            }
        };
        let tree = parser.parse(&*text, None)?;
        self.parses.fetch_add(1, Ordering::Relaxed);
        let extracted = tags(language, &tree, &text)
            .and_then(|tags| Ok((tags, item_ranges(language, &tree, &text, cursor)?)));
        let (tags, items) = match extracted {
            Ok(found) => found,
            Err(error) => {
                tracing::debug!(path = %path.display(), %error, "not indexed");
                return None;
            }
        };

        // Definitions by start, outer first, swept against the outline items (sorted the same
        // way, properly nested: they are syntax nodes) with a stack of the items open at each
        // definition.
        let mut found: Vec<&crate::Tag> = tags
            .iter()
            .filter(|tag| tag.role == TagRole::Definition)
            .collect();
        found.sort_by(|a, b| {
            (a.range.start, std::cmp::Reverse(a.range.end))
                .cmp(&(b.range.start, std::cmp::Reverse(b.range.end)))
        });
        let mut strings = String::new();
        let mut names: HashMap<&str, Span> = HashMap::new();
        // Each name once per file: a file repeats the names it uses.
        fn intern<'a>(
            names: &mut HashMap<&'a str, Span>,
            strings: &mut String,
            name: &'a str,
        ) -> Span {
            *names.entry(name).or_insert_with(|| {
                let start = strings.len();
                strings.push_str(name);
                Span::of(strings.as_bytes(), start)
            })
        }
        let mut open: Vec<&Item> = Vec::new();
        let mut next_item = 0;
        let mut shown_lines: BTreeSet<u32> = BTreeSet::new();
        let mut definitions = Vec::with_capacity(found.len());
        let mut scopes: Vec<u32> = Vec::new();
        for tag in found {
            while let Some(item) = items
                .get(next_item)
                .filter(|item| item.range.start <= tag.range.start)
            {
                while open
                    .last()
                    .is_some_and(|outer| outer.range.end <= item.range.start)
                {
                    open.pop();
                }
                open.push(item);
                next_item += 1;
            }
            let start = scopes.len();
            for item in &open {
                let encloses = item.range.start <= tag.range.start
                    && tag.range.end <= item.range.end
                    && item.range != tag.range
                    && item.start_line < tag.line;
                if encloses && scopes[start..].last() != Some(&item.start_line) {
                    scopes.push(item.start_line);
                }
            }
            shown_lines.extend(&scopes[start..]);
            shown_lines.insert(tag.line);
            definitions.push(Definition {
                key: rank::name_key(language, &tag.name),
                name: intern(&mut names, &mut strings, &tag.name),
                kind: tag.kind,
                line: tag.line,
                scopes: Span::of(&scopes, start),
            });
        }
        // By key: the ranking looks a file's definitions of a name up by key.
        definitions.sort_by_key(|definition| (definition.key, definition.line));

        let mut found: Vec<(&str, &'static str, u32)> = tags
            .iter()
            .filter(|tag| tag.role == TagRole::Reference)
            .map(|tag| (tag.name.as_str(), tag.kind, tag.line))
            .collect();
        found.sort_unstable();
        let mut references: Vec<References> = Vec::new();
        let mut reference_lines: Vec<u32> = Vec::with_capacity(found.len());
        for chunk in found.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
            let start = reference_lines.len();
            reference_lines.extend(chunk.iter().map(|(_, _, line)| *line));
            references.push(References {
                key: rank::name_key(language, chunk[0].0),
                name: intern(&mut names, &mut strings, chunk[0].0),
                kind: chunk[0].1,
                lines: Span::of(&reference_lines, start),
            });
        }

        let mut lines = Vec::with_capacity(shown_lines.len());
        let mut wanted = shown_lines.iter().copied().peekable();
        let mut line_count = 0u32;
        for (number, line) in text.split('\n').enumerate() {
            let number = u32::try_from(number).unwrap_or(u32::MAX);
            line_count = number + 1;
            if wanted.peek() == Some(&number) {
                wanted.next();
                let start = strings.len();
                strings.push_str(&cut_chars(line.trim_end(), MAX_HIT_CHARS));
                lines.push((number, Span::of(strings.as_bytes(), start)));
            }
        }
        if text.ends_with('\n') {
            line_count -= 1;
        }

        Some(FileEntry {
            stamp,
            language,
            line_count,
            strings: strings.into_boxed_str(),
            definitions: definitions.into(),
            scopes: scopes.into(),
            references: references.into(),
            reference_lines: reference_lines.into(),
            lines: lines.into(),
            buffer,
        })
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

/// The walker both walks share: `.gitignore` applies outside a git repository too (a workspace
/// need not be one), hidden files are skipped, symbolic links not followed.
fn walker(roots: &[PathBuf]) -> Option<ignore::WalkBuilder> {
    let (first, rest) = roots.split_first()?;
    let mut builder = ignore::WalkBuilder::new(first);
    for root in rest {
        builder.add(root);
    }
    builder.hidden(true).follow_links(false).require_git(false);
    Some(builder)
}

/// The entry's path if it is a file in a language Tandem parses, within the size cap.
fn source_file(
    entry: Result<ignore::DirEntry, ignore::Error>,
    max_file_bytes: u64,
) -> Option<PathBuf> {
    let entry = entry
        .map_err(|error| tracing::debug!(%error, "skipped while walking the workspace"))
        .ok()?;
    if !entry.file_type().is_some_and(|kind| kind.is_file())
        || Language::from_path(entry.path()).is_none()
    {
        return None;
    }
    let metadata = entry
        .metadata()
        .map_err(|error| tracing::debug!(%error, "skipped while walking the workspace"))
        .ok()?;
    (metadata.len() <= max_file_bytes).then(|| entry.into_path())
}

/// An outline item, as far as scopes need it.
struct Item {
    range: std::ops::Range<usize>,
    start_line: u32,
}

/// Outline items start at most this deep. Items nest a few levels (a method in an impl in a
/// module; a method of a nested class in a namespace), while most of a file's nodes lie deeper,
/// in bodies, where the outline query then need not look (a third of the indexing time before).
const MAX_ITEM_DEPTH: u32 = 8;

/// The outline items of a file (their ranges and first lines only: no labels), by start and
/// outer first.
fn item_ranges(
    language: Language,
    tree: &tree_sitter::Tree,
    source: &str,
    cursor: &mut QueryCursor,
) -> crate::Result<Vec<Item>> {
    let queries = language.queries()?;
    cursor.set_max_start_depth(Some(MAX_ITEM_DEPTH));
    let mut matches = cursor.matches(&queries.outline, tree.root_node(), source.as_bytes());
    let mut items = Vec::new();
    while let Some(found) = matches.next() {
        for capture in found.captures() {
            if capture.index == queries.outline_item {
                items.push(Item {
                    range: capture.node.byte_range(),
                    start_line: u32::try_from(capture.node.start_position().row)
                        .unwrap_or(u32::MAX),
                });
            }
        }
    }
    items.sort_by(|a, b| {
        (a.range.start, std::cmp::Reverse(a.range.end))
            .cmp(&(b.range.start, std::cmp::Reverse(b.range.end)))
    });
    items.dedup_by(|a, b| a.range == b.range);
    Ok(items)
}

/// The listing without repeated paths, each keeping its last source (a buffer listed after the
/// disk file it edits overrides it).
fn last_listing_wins(files: Vec<(PathBuf, FileSource)>) -> Vec<(PathBuf, FileSource)> {
    let mut last: HashMap<&Path, usize> = HashMap::with_capacity(files.len());
    for (at, (path, _)) in files.iter().enumerate() {
        last.insert(path, at);
    }
    if last.len() == files.len() {
        return files;
    }
    let keep: HashSet<usize> = last.into_values().collect();
    files
        .into_iter()
        .enumerate()
        .filter(|(at, _)| keep.contains(at))
        .map(|(_, listing)| listing)
        .collect()
}

/// The stamp of a file's current text; `None` when a disk file is gone.
fn stamp(path: &Path, source: &FileSource) -> Option<Stamp> {
    match source {
        FileSource::Disk => {
            let metadata = std::fs::metadata(path).ok()?;
            metadata.is_file().then(|| Stamp::Disk {
                modified: metadata.modified().ok(),
                len: metadata.len(),
            })
        }
        FileSource::Buffer { version, text } => {
            let mut hasher = DefaultHasher::new();
            text.hash(&mut hasher);
            Some(Stamp::Buffer {
                version: *version,
                hash: hasher.finish(),
            })
        }
    }
}

fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
