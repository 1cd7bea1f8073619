//! The agent's side of the symbol index: indexing a workspace in the background as soon as a
//! front end knows it (with its tags kept on disk between processes), bringing the index up to
//! date with the workspace as the user sees it (open buffers before the disk) before a tool or
//! the first prompt's repo map reads it, and picking out of a prompt the identifiers the repo
//! map should rank toward.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use tandem_syntax::{FileSource, IndexStats, SymbolIndex};

use crate::tool::{ToolContext, ToolError};

/// Files larger than this are left out of the index: generated or vendored code, mostly, whose
/// definitions would crowd the repo map.
pub const MAX_INDEXED_FILE_BYTES: u64 = 1024 * 1024;

/// How long a tool waits for the index to catch up before it answers from what is parsed.
pub(crate) const INDEX_TIME_LIMIT: Duration = Duration::from_secs(10);

/// Where the tags of the workspace `roots` are kept between processes, under the state
/// directory: one file per set of roots, named after them.
pub fn tags_path(state_dir: &Path, roots: &[PathBuf]) -> PathBuf {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for root in roots {
        // Through `components` so that `/a/b` and `/a/b/` name the same workspace.
        let normalised: PathBuf = root.components().collect();
        for byte in normalised.as_os_str().as_encoded_bytes().iter().chain([&0]) {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    let name: String = roots
        .first()
        .and_then(|root| root.file_name())
        .map(|name| name.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(40)
        .collect();
    state_dir
        .join("tags")
        .join(format!("{name}-{hash:016x}.bin"))
}

/// What background indexing has done in this process, for status requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackgroundIndexing {
    /// Runs going on now.
    pub running: usize,
    /// The latest run that finished.
    pub last: Option<IndexRun>,
}

/// One finished run of background indexing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexRun {
    pub roots: Vec<PathBuf>,
    /// Source files found under the roots.
    pub listed: usize,
    /// Files whose tags came from the saved file.
    pub loaded: usize,
    /// Files parsed (new or changed since the tags were saved).
    pub parsed: usize,
    pub elapsed_ms: u64,
}

impl BackgroundIndexing {
    fn update(activity: &Mutex<BackgroundIndexing>, change: impl FnOnce(&mut BackgroundIndexing)) {
        change(&mut activity.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// A run is over: one fewer running, and `last` (when it finished) is the latest.
    fn ended(activity: &Mutex<BackgroundIndexing>, last: Option<IndexRun>) {
        Self::update(activity, |state| {
            state.running = state.running.saturating_sub(1);
            if last.is_some() {
                state.last = last;
            }
        });
    }
}

/// While background indexing runs, what it has parsed is saved this often, so that a process
/// that ends (or is killed) before it finishes leaves the next one those files.
const SAVE_EVERY: Duration = Duration::from_secs(20);

/// Background indexing as it runs: where its stats arrive once it has finished and saved its
/// tags, and a way to save what it has parsed so far.
pub struct Indexing {
    /// The update's stats, sent once the tags are saved (tests wait on it to know it is done).
    pub finished: std::sync::mpsc::Receiver<IndexStats>,
    pub progress: Arc<IndexProgress>,
}

/// The tags of one background indexing, saved as it goes: by the indexing itself when it
/// finishes and every [`SAVE_EVERY`], and by the front end when its process ends first.
pub struct IndexProgress {
    index: Arc<SymbolIndex>,
    tags: Option<PathBuf>,
    state: Mutex<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    /// The saved tags are in the index: before, saving would replace them with less.
    loaded: bool,
    /// The indexing saved its final tags: nothing is left to save.
    finished: bool,
    /// The index's parse count at the last save, to skip saves that would change nothing.
    saved_at_parses: Option<usize>,
}

impl IndexProgress {
    /// Saves what the index holds now, unless the indexing finished (it saved then), has not
    /// yet loaded the saved tags, or parsed nothing since the last save. Returns how many
    /// files the saved tags hold.
    pub fn save_so_far(&self) -> Option<usize> {
        let tags = self.tags.as_deref()?;
        let mut state = self.state();
        let parses = self.index.parse_count();
        if !state.loaded || state.finished || state.saved_at_parses == Some(parses) {
            return None;
        }
        state.saved_at_parses = Some(parses);
        let files = self.write(tags)?;
        tracing::info!(files, "saved the tags indexed so far");
        Some(files)
    }

    fn loaded(&self) {
        self.state().loaded = true;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ProgressState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The index's tags written to `tags`; a failure is logged (the next process indexes anew).
    fn write(&self, tags: &Path) -> Option<usize> {
        self.index
            .save(tags)
            .map_err(|error| {
                tracing::warn!(path = %tags.display(), %error, "cannot save the workspace's tags");
            })
            .ok()
    }

    /// The indexing's last save: when it changed anything (or there was nothing to load).
    fn finish(&self, stats: &IndexStats, loaded: usize) {
        let mut state = self.state();
        state.finished = true;
        let Some(tags) = self.tags.as_deref() else {
            return;
        };
        let changed = stats.parsed > 0 || stats.removed > 0 || loaded == 0;
        // A save while it ran came after its removals and, unless more was parsed since, holds
        // what it would save now.
        if changed && state.saved_at_parses != Some(self.index.parse_count()) {
            self.write(tags);
        }
    }
}

/// Starts indexing the source files under `roots` from disk, on a thread of its own that
/// parses on half the cores at a lower priority: the tags saved at `tags` first (when given),
/// then whatever changed since, then the tags saved again (and every [`SAVE_EVERY`] while it
/// runs). A session's refresh that comes meanwhile joins it with every core rather than
/// parsing the same files beside it, and finds the index warm. What it is doing is kept in
/// `activity`. `None` when the thread could not start.
pub fn index_in_background(
    index: Arc<SymbolIndex>,
    roots: Vec<PathBuf>,
    max_files: usize,
    tags: Option<PathBuf>,
    activity: Arc<Mutex<BackgroundIndexing>>,
) -> Option<Indexing> {
    let (done, finished) = std::sync::mpsc::channel();
    BackgroundIndexing::update(&activity, |state| state.running += 1);
    let running = Arc::clone(&activity);
    let progress = Arc::new(IndexProgress {
        index: Arc::clone(&index),
        tags: tags.clone(),
        state: Mutex::default(),
    });
    let saver = Arc::clone(&progress);
    let work = move || {
        lower_priority();
        let started = Instant::now();
        let roots: Vec<PathBuf> = roots
            .into_iter()
            .map(|root| std::fs::canonicalize(&root).unwrap_or(root))
            .collect();
        let loaded = tags.as_deref().map_or(0, |tags| index.load(tags));
        saver.loaded();
        let files = SymbolIndex::walk(&roots, max_files, MAX_INDEXED_FILE_BYTES);
        let listed = files.len();
        let sources = files
            .into_iter()
            .map(|path| (path, FileSource::Disk))
            .collect();
        let stats = std::thread::scope(|scope| {
            let (updated, update) = std::sync::mpsc::channel();
            let index = &index;
            let updating = scope.spawn(move || {
                let _ = updated.send(index.update_in_background(sources));
            });
            let stats = loop {
                match update.recv_timeout(SAVE_EVERY) {
                    Ok(stats) => break Some(stats),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        saver.save_so_far();
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
                }
            };
            // Joined here, a panic in the update is this `None` rather than the scope's.
            let _ = updating.join();
            stats
        });
        let Some(stats) = stats else {
            tracing::warn!("indexing in the background failed");
            BackgroundIndexing::ended(&activity, None);
            return;
        };
        let elapsed_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            files = listed,
            loaded,
            parsed = stats.parsed,
            elapsed_ms,
            "indexed the workspace in the background"
        );
        saver.finish(&stats, loaded);
        BackgroundIndexing::ended(
            &activity,
            Some(IndexRun {
                roots,
                listed,
                loaded,
                parsed: stats.parsed,
                elapsed_ms,
            }),
        );
        let _ = done.send(stats);
    };
    let spawned = std::thread::Builder::new()
        .name("tandem-index".to_owned())
        .spawn(work);
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start indexing in the background");
        BackgroundIndexing::ended(&running, None);
        return None;
    }
    Some(Indexing { finished, progress })
}

/// Gives the calling thread (and the threads it starts, which inherit it) a lower scheduling
/// priority, so that indexing yields the cores to the editor's requests and the agent's turns.
/// On Linux the nice value is per thread; elsewhere it would apply to the whole process, so it
/// is left alone there.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::process::nice(10) {
        tracing::debug!(%error, "cannot lower the indexing thread's priority");
    }
}

/// Identifiers kept from one prompt at most.
const MAX_IDENTIFIERS: usize = 50;
/// Shorter words are too common to rank by (`id`, `fn`, `db`).
const MIN_IDENTIFIER_CHARS: usize = 3;

/// What a refresh did, with the files it listed (for a text search over the same files).
pub(crate) struct Refreshed {
    pub(crate) stats: IndexStats,
    pub(crate) files: Vec<PathBuf>,
}

/// Brings `ctx.index` up to date with the workspace's source files: the open buffers' text,
/// else the disk. Only files changed since the last refresh are parsed; at `deadline` parsing
/// stops and the stats say the index is incomplete.
pub async fn refresh_index(
    ctx: &ToolContext,
    deadline: Option<Instant>,
) -> Result<IndexStats, ToolError> {
    refresh(ctx, deadline)
        .await
        .map(|refreshed| refreshed.stats)
}

pub(crate) async fn refresh(
    ctx: &ToolContext,
    deadline: Option<Instant>,
) -> Result<Refreshed, ToolError> {
    let roots = ctx.workspace.roots().to_vec();
    let max_files = ctx.syntax.max_indexed_files;
    let editor = Arc::clone(&ctx.editor);
    let index = Arc::clone(&ctx.index);
    tokio::task::spawn_blocking(move || {
        let files = SymbolIndex::walk(&roots, max_files, MAX_INDEXED_FILE_BYTES);
        let sources = files
            .iter()
            .map(|path| {
                let source = match editor.buffer(path) {
                    Some(buffer) => FileSource::Buffer {
                        version: buffer.version,
                        text: Arc::from(buffer.text),
                    },
                    None => FileSource::Disk,
                };
                (path.clone(), source)
            })
            .collect();
        let stats = index.update(sources, deadline);
        Refreshed { stats, files }
    })
    .await
    .map_err(|error| ToolError::Fatal(format!("indexing the workspace failed: {error}")))
}

/// The identifier-like words of a prompt worth ranking the repo map toward: words in backticks,
/// and words shaped like code anywhere (with `_`, joined by `::`, or with an inner capital as in
/// `parseExpr` or `HttpClient`). At least three characters, each once, in the order they first
/// appear, at most 50. Plain prose words are left out: "parser" in a sentence says little about
/// which `Parser` the user means.
pub fn identifiers_in(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    // The length of the backtick run that opened the code span we are in (Markdown's rule: a
    // span closes at a run of the same length). Fences (three or more) hold whole blocks of
    // code, keywords included, so only code-shaped words count inside them.
    let mut open_span: Option<usize> = None;
    let mut at = 0;
    while at < chars.len() && found.len() < MAX_IDENTIFIERS {
        let c = chars[at];
        if c == '`' {
            let run = chars[at..].iter().take_while(|&&c| c == '`').count();
            open_span = match open_span {
                Some(opened) if opened == run => None,
                Some(opened) => Some(opened),
                // A backtick that nothing closes is a literal one.
                None if closes_later(&chars[at + run..], run) => Some(run),
                None => None,
            };
            at += run;
            continue;
        }
        if !is_word_char(c) {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && is_word_char(chars[at]) {
            at += 1;
        }
        let word: String = chars[start..at].iter().collect();
        let before = start.checked_sub(1).map(|i| chars[i]);
        let after = chars.get(at).copied();
        let in_path = before == Some(':') && start >= 2 && chars[start - 2] == ':'
            || after == Some(':') && chars.get(at + 1) == Some(&':');
        let in_code_span = matches!(open_span, Some(1 | 2))
            // A file path in backticks names a file, not a symbol.
            && !matches!(before, Some('/' | '\\'))
            && !matches!(after, Some('/' | '\\'));
        let wanted = word.chars().count() >= MIN_IDENTIFIER_CHARS
            && !word.starts_with(|c: char| c.is_ascii_digit())
            && word.chars().any(char::is_alphabetic)
            && (in_code_span || in_path || looks_like_code(&word));
        if wanted && seen.insert(word.clone()) {
            found.push(word);
        }
    }
    found
}

/// Whether `rest` holds a run of exactly `run` backticks.
fn closes_later(rest: &[char], run: usize) -> bool {
    let mut at = 0;
    while at < rest.len() {
        let length = rest[at..].iter().take_while(|&&c| c == '`').count();
        if length == run {
            return true;
        }
        at += length.max(1);
    }
    false
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `snake_case`, `SCREAMING_CASE`, `camelCase`, `PascalCase`, `IOError`: shapes prose rarely has.
fn looks_like_code(word: &str) -> bool {
    if word.contains('_') {
        return true;
    }
    let has_lower = word.chars().any(char::is_lowercase);
    let inner_capital = word.chars().skip(1).any(char::is_uppercase);
    has_lower && inner_capital
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_in_prompts() {
        let cases: &[(&str, &[&str])] = &[
            ("Why does parse_expr fail on empty input?", &["parse_expr"]),
            (
                "Make HttpClient retry, like parseExpr and IOError do",
                &["HttpClient", "parseExpr", "IOError"],
            ),
            (
                "Rename `Parser` to `Reader` and `new` too, but not `go`",
                &["Parser", "Reader", "new"],
            ),
            ("Call Parser::new from main", &["Parser", "new"]),
            ("Use MAX_LINES and __init__", &["MAX_LINES", "__init__"]),
            ("The parser Reads Words like USA or HTTP", &[]),
            ("Fix `src/lib.rs` and `Session::run_turn`", &["Session", "run_turn"]),
            ("parse_expr then parse_expr again, `parse_expr`", &["parse_expr"]),
            ("Unicode: `größe` and ünïcode_name", &["größe", "ünïcode_name"]),
            ("Digits: 3_000 and x86_64 and `42abc`", &["x86_64"]),
            (
                "A fence:\n```rust\nfn main() { let parser = Parser::new(); run_all(); }\n```\nthen `tail`",
                &["Parser", "new", "run_all", "tail"],
            ),
            ("An unclosed `span with words", &[]),
            ("``abc `def` ghi``", &["abc", "def", "ghi"]),
            ("", &[]),
        ];
        for (prompt, expected) in cases {
            assert_eq!(identifiers_in(prompt), *expected, "{prompt}");
        }
    }

    /// The indexing a front end starts when it learns the workspace leaves nothing for the
    /// first prompt's refresh to parse, and its saved tags make a second process's index warm
    /// without parsing.
    #[tokio::test]
    async fn the_first_refresh_finds_the_background_index_warm_and_a_restart_too() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..20 {
            std::fs::write(
                dir.path().join(format!("mod_{n}.rs")),
                format!("pub fn function_{n}() -> u32 {{ helper_{n}() }}\nfn helper_{n}() -> u32 {{ {n} }}\n"),
            )
            .unwrap();
        }
        let state = tempfile::tempdir().unwrap();
        let roots = vec![dir.path().to_path_buf()];
        let tags = tags_path(state.path(), &roots);

        let ctx = ToolContext::on_disk(roots.clone());
        let stats = index_in_background(
            ctx.index.clone(),
            roots.clone(),
            1_000,
            Some(tags.clone()),
            Arc::default(),
        )
        .unwrap()
        .finished
        .recv()
        .unwrap();
        assert_eq!((stats.parsed, stats.files), (20, 20));
        assert!(tags.is_file());
        let deadline = Instant::now() + Duration::from_secs(3);
        let refreshed = refresh_index(&ctx, Some(deadline)).await.unwrap();
        assert_eq!((refreshed.parsed, refreshed.files), (0, 20));
        assert!(refreshed.complete);
        assert_eq!(ctx.index.parse_count(), 20);

        // A new process: the tags come from the state directory.
        let restarted = ToolContext::on_disk(roots.clone());
        let stats = index_in_background(
            restarted.index.clone(),
            roots,
            1_000,
            Some(tags),
            Arc::default(),
        )
        .unwrap()
        .finished
        .recv()
        .unwrap();
        assert_eq!((stats.parsed, stats.files), (0, 20));
        assert_eq!(restarted.index.parse_count(), 0);
        assert_eq!(restarted.index.definitions("helper_7", None).len(), 1);
    }

    /// A process that ends before its background indexing finishes (a short `tandem ask` in a
    /// large repository) saves what was parsed, so the next one starts from it; but never
    /// before the saved tags are loaded (it would replace them with less), never twice for
    /// nothing, and never after the indexing saved its own.
    #[test]
    fn a_process_that_ends_first_saves_the_tags_indexed_so_far() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = (0..20)
            .map(|n| {
                let path = dir.path().join(format!("mod_{n}.py"));
                std::fs::write(&path, format!("def function_{n}():\n    return {n}\n")).unwrap();
                path
            })
            .collect();
        let state = tempfile::tempdir().unwrap();
        let tags = tags_path(state.path(), &[dir.path().to_path_buf()]);
        let index = Arc::new(SymbolIndex::new());
        let progress = IndexProgress {
            index: Arc::clone(&index),
            tags: Some(tags.clone()),
            state: Mutex::default(),
        };
        let half = |files: &[PathBuf]| -> Vec<(PathBuf, FileSource)> {
            files
                .iter()
                .map(|path| (path.clone(), FileSource::Disk))
                .collect()
        };
        index.update(half(&files[..10]), None);
        assert_eq!(progress.save_so_far(), None, "saved before loading");
        assert!(!tags.exists());

        progress.loaded();
        assert_eq!(progress.save_so_far(), Some(10));
        assert_eq!(progress.save_so_far(), None, "nothing parsed since");

        // The next process loads those ten and parses only the rest.
        let next = SymbolIndex::new();
        assert_eq!(next.load(&tags), 10);
        let stats = next.update(half(&files), None);
        assert_eq!((stats.parsed, stats.files), (10, 20));

        index.update(half(&files), None);
        progress.finish(
            &IndexStats {
                parsed: 10,
                files: 20,
                complete: true,
                ..IndexStats::default()
            },
            0,
        );
        assert_eq!(SymbolIndex::new().load(&tags), 20);
        assert_eq!(progress.save_so_far(), None, "the indexing saved its own");
    }

    /// Indexing must yield the cores to the editor: its thread, and the threads it starts,
    /// run at a lower priority than the rest of the process.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_indexing_thread_runs_at_a_lower_priority() {
        let before = rustix::process::getpriority_process(None).unwrap();
        let (inside, started) = std::thread::spawn(|| {
            lower_priority();
            let inside = rustix::process::getpriority_process(None).unwrap();
            let started =
                std::thread::spawn(|| rustix::process::getpriority_process(None).unwrap())
                    .join()
                    .unwrap();
            (inside, started)
        })
        .join()
        .unwrap();
        assert_eq!(inside, (before + 10).min(19));
        assert_eq!(started, inside);
        // The rest of the process keeps its priority.
        assert_eq!(rustix::process::getpriority_process(None).unwrap(), before);
    }

    #[test]
    fn at_most_fifty_identifiers_are_kept() {
        let prompt: Vec<String> = (0..80).map(|n| format!("name_{n}")).collect();
        let found = identifiers_in(&prompt.join(" "));
        assert_eq!(found.len(), 50);
        assert_eq!(found[49], "name_49");
    }
}
