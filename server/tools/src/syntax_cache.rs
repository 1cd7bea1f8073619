//! The syntax trees the edit guard starts from: for a few files, the tree of the text the model
//! last read (read_file's outline parses it) or changed (the guard's check makes it), so that
//! the file's next edit reparses only what it changes instead of parsing the whole file twice.
//!
//! An entry is keyed by path and content hash, and only a lookup with the same path, hash and
//! language finds it: a tree of other content (the user typed, a command rewrote the file) is
//! never used, and simply misses. A tree still being made (the reparse after an edit the quick
//! check accepted, which runs on its own thread) is waited for by the lookup that needs it.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use tandem_syntax::{Language, ParsedText};

/// How many files keep a tree. The agent edits one file at a time, and often goes back and
/// forth between two or three.
const MAX_ENTRIES: usize = 4;
/// The most source bytes whose trees are kept, all entries together. A tree-sitter tree takes
/// about 40 bytes of memory per byte of source (measured: 148 MB for 3.6 MB of Python), so this
/// holds the cache near 350 MB at worst, and still fits one file of 200,000 lines. A larger
/// text is not kept: its edits are checked from scratch.
const MAX_SOURCE_BYTES: usize = 8 << 20;

/// Shared by every session of the process rather than held by each session's `ToolContext`:
/// entries are keyed by path and content, so a tree is right for whoever has that text, and
/// one bound caps the memory of all sessions together.
static CACHE: LazyLock<TreeCache> = LazyLock::new(|| TreeCache::new(MAX_ENTRIES, MAX_SOURCE_BYTES));

/// The process's cache.
pub(crate) fn cache() -> &'static TreeCache {
    &CACHE
}

/// Makes a tree on first access: at once when it is already made, or by running the reparse
/// that another thread may be running already (then the access waits for it).
type Make = Box<dyn FnOnce() -> Option<ParsedText> + Send>;
/// A tree, or the parse that makes it; `None` when that parse failed.
pub(crate) type Slot = Arc<LazyLock<Option<ParsedText>, Make>>;

/// A slot holding a tree already made.
pub(crate) fn ready(parsed: ParsedText) -> Slot {
    Arc::new(LazyLock::new(Box::new(move || Some(parsed))))
}

/// A slot whose tree `make` makes, on whichever thread first needs it.
pub(crate) fn deferred(make: impl FnOnce() -> Option<ParsedText> + Send + 'static) -> Slot {
    // A panic would poison the slot, and every later lookup of it would panic in turn.
    Arc::new(LazyLock::new(Box::new(move || {
        std::panic::catch_unwind(AssertUnwindSafe(make))
            .ok()
            .flatten()
    })))
}

/// Bounded by entry count and source bytes, least recently used first out.
pub(crate) struct TreeCache {
    /// Oldest first.
    entries: Mutex<VecDeque<Entry>>,
    max_entries: usize,
    max_bytes: usize,
}

struct Entry {
    path: PathBuf,
    hash: u64,
    /// Of the source text: what the bound counts.
    len: usize,
    language: Language,
    slot: Slot,
}

impl TreeCache {
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        TreeCache {
            entries: Mutex::default(),
            max_entries,
            max_bytes,
        }
    }

    /// The tree of `path` when it holds the text hashing to `hash` (`tools::content_hash`), as
    /// `language`. Waits for a tree still being made, outside the lock.
    pub(crate) fn get(&self, path: &Path, hash: u64, language: Language) -> Option<ParsedText> {
        let slot = {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let index = entries.iter().position(|entry| {
                entry.path == path && entry.hash == hash && entry.language == language
            })?;
            let entry = entries.remove(index)?;
            let slot = Arc::clone(&entry.slot);
            entries.push_back(entry);
            slot
        };
        LazyLock::force(&slot).clone()
    }

    /// Keeps `slot` as the tree of `path` holding the `len` bytes hashing to `hash`, in place of
    /// the path's previous tree (its text is gone, or about to be), evicting the least recently
    /// used trees beyond the bounds.
    pub(crate) fn insert(
        &self,
        path: &Path,
        hash: u64,
        len: usize,
        language: Language,
        slot: Slot,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let mut dropped: Vec<Entry> = Vec::new();
        if let Some(index) = entries.iter().position(|entry| entry.path == path) {
            dropped.extend(entries.remove(index));
        }
        if len <= self.max_bytes {
            entries.push_back(Entry {
                path: path.to_owned(),
                hash,
                len,
                language,
                slot,
            });
        }
        let mut bytes: usize = entries.iter().map(|entry| entry.len).sum();
        while entries.len() > self.max_entries || bytes > self.max_bytes {
            let Some(evicted) = entries.pop_front() else {
                break;
            };
            bytes -= evicted.len;
            dropped.push(evicted);
        }
        drop(entries);
        if !dropped.is_empty() {
            // Freeing a large tree takes tens of milliseconds (up to 150 ms measured, for
            // 200,000 lines of Python), which the edit that evicts it should not wait for.
            // Without a thread, it is freed here.
            let _ = std::thread::Builder::new()
                .name("tandem-tree-drop".to_owned())
                .spawn(move || drop(dropped));
        }
    }

    /// The tree of `text`, the content of `path` (without a byte-order mark): the kept one, or
    /// parsed now and kept.
    pub(crate) fn parse(
        &self,
        path: &Path,
        language: Language,
        text: &str,
    ) -> Result<ParsedText, tandem_syntax::Error> {
        let hash = crate::content_hash(text.as_bytes());
        if let Some(parsed) = self.get(path, hash, language) {
            return Ok(parsed);
        }
        let parsed = ParsedText::parse(language, text)?;
        self.insert(path, hash, text.len(), language, ready(parsed.clone()));
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn parsed(text: &str) -> ParsedText {
        ParsedText::parse(Language::Rust, text).unwrap()
    }

    fn source(parsed: &ParsedText) -> String {
        parsed.tree().root_node().to_sexp()
    }

    #[test]
    fn a_tree_of_other_content_is_never_used() {
        let cache = TreeCache::new(4, 1 << 20);
        let path = Path::new("/w/src/lib.rs");
        let old = "fn a() {}\n";
        let new = "fn a() {}\nfn b() {}\n";
        let old_hash = crate::content_hash(old.as_bytes());
        let new_hash = crate::content_hash(new.as_bytes());
        cache.insert(
            path,
            old_hash,
            old.len(),
            Language::Rust,
            ready(parsed(old)),
        );
        assert!(cache.get(path, new_hash, Language::Rust).is_none());
        assert!(cache
            .get(Path::new("/w/src/other.rs"), old_hash, Language::Rust)
            .is_none());
        assert!(cache.get(path, old_hash, Language::C).is_none());
        let kept = cache.get(path, old_hash, Language::Rust).unwrap();
        assert_eq!(source(&kept), source(&parsed(old)));
        // `parse` of the new content parses it, and the new tree replaces the old one.
        let tree = cache.parse(path, Language::Rust, new).unwrap();
        assert_eq!(source(&tree), source(&parsed(new)));
        assert!(cache.get(path, old_hash, Language::Rust).is_none());
        assert!(cache.get(path, new_hash, Language::Rust).is_some());
    }

    #[test]
    fn the_bounds_evict_the_least_recently_used_tree() {
        let text = "fn a() {}\n";
        let tree = parsed(text);
        let hash = crate::content_hash(text.as_bytes());
        let path = |n: usize| PathBuf::from(format!("/w/{n}.rs"));
        let kept =
            |cache: &TreeCache, n: usize| cache.get(&path(n), hash, Language::Rust).is_some();

        let cache = TreeCache::new(3, 1 << 20);
        for n in 0..3 {
            cache.insert(
                &path(n),
                hash,
                text.len(),
                Language::Rust,
                ready(tree.clone()),
            );
        }
        // Reading 0 makes 1 the least recently used.
        assert!(kept(&cache, 0));
        cache.insert(
            &path(3),
            hash,
            text.len(),
            Language::Rust,
            ready(tree.clone()),
        );
        assert_eq!(
            (0..4).map(|n| kept(&cache, n)).collect::<Vec<_>>(),
            [true, false, true, true]
        );

        // By bytes: 100 + 100 fit in 250, a third evicts the oldest; a text over the bound
        // is not kept at all, and takes its path's older tree with it.
        let cache = TreeCache::new(10, 250);
        for n in 0..3 {
            cache.insert(&path(n), hash, 100, Language::Rust, ready(tree.clone()));
        }
        assert_eq!(
            (0..3).map(|n| kept(&cache, n)).collect::<Vec<_>>(),
            [false, true, true]
        );
        cache.insert(&path(2), hash, 300, Language::Rust, ready(tree.clone()));
        assert!(!kept(&cache, 2));
        assert!(kept(&cache, 1));
    }

    #[test]
    fn a_tree_being_made_is_made_once_and_waited_for() {
        let cache = TreeCache::new(4, 1 << 20);
        let path = Path::new("/w/src/lib.rs");
        let text = "fn a() {}\n";
        let hash = crate::content_hash(text.as_bytes());
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let slot = deferred(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Some(parsed("fn a() {}\n"))
        });
        cache.insert(path, hash, text.len(), Language::Rust, Arc::clone(&slot));
        let maker = std::thread::spawn(move || LazyLock::force(&slot).is_some());
        let found = cache.get(path, hash, Language::Rust).unwrap();
        assert!(maker.join().unwrap());
        assert_eq!(source(&found), source(&parsed(text)));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
