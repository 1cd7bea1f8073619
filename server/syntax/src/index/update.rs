//! Bringing the index up to date: listing the workspace's source files, stamping them, and
//! parsing those that changed on a pool of threads pulling from one queue.
//!
//! One update runs at a time. A caller that comes while one runs (a prompt's refresh while the
//! background indexing parses) does not sit idle: it joins the running update's queue with
//! every core, on its own threads (the background ones run at a lower priority, on half the
//! cores), until the queue is empty or its deadline comes, then waits for the update to end and
//! runs its own, which finds those files parsed.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tree_sitter::QueryCursor;

use super::{FileEntry, FileSource, IndexStats, Stamp, SymbolIndex};
use crate::Language;

/// Held while an update runs; lets the next one in when dropped (a panic included).
pub(super) struct UpdateSlot<'a>(&'a SymbolIndex);

impl Drop for UpdateSlot<'_> {
    fn drop(&mut self) {
        *lock(&self.0.updating) = false;
        self.0.updated.notify_all();
    }
}

/// A helper at work on a [`Job`]: counted out when dropped, a panic included.
struct Helping<'a>(&'a Job);

impl Drop for Helping<'_> {
    fn drop(&mut self) {
        lock(&self.0.helpers).active -= 1;
        self.0.helpers_left.notify_all();
    }
}

/// The running update's queue published in the index: taken down when dropped.
struct Running<'a>(&'a SymbolIndex);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        *lock(&self.0.running) = None;
    }
}

/// Parse results are put into the index in batches of this many files.
const PUBLISH_BATCH: usize = 16;
/// Below this many files an update stats them on the calling thread: threads would cost more.
const PARALLEL_STAT_MIN: usize = 512;
/// How often a caller waiting for a running update looks for a queue to help with: the update
/// it waited for may have ended and another waiter's begun.
const HELP_POLL: Duration = Duration::from_millis(50);

/// What the workers of one update, or its helpers, did.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Parsed {
    /// Files taken from the queue.
    taken: usize,
    parsed: usize,
    lines: usize,
    /// Files the index had that could not be read or parsed now.
    dropped: usize,
}

impl Parsed {
    fn add(self, other: Parsed) -> Parsed {
        Parsed {
            taken: self.taken + other.taken,
            parsed: self.parsed + other.parsed,
            lines: self.lines + other.lines,
            dropped: self.dropped + other.dropped,
        }
    }
}

/// The changed files of the running update: the queue its workers, and any helpers, take from.
pub(super) struct Job {
    listed: Vec<(PathBuf, FileSource)>,
    /// Indexes into `listed`, with the stamps their texts are to be parsed as.
    work: Vec<(usize, Stamp)>,
    next: AtomicUsize,
    /// No worker takes a file after this.
    deadline: Option<Instant>,
    helpers: Mutex<Helpers>,
    helpers_left: Condvar,
}

#[derive(Default)]
struct Helpers {
    /// Helpers parsing now: the update ends only once they have put in what they took.
    active: usize,
    /// What the helpers that left parsed.
    parsed: Parsed,
    /// Set when the update's own workers are done: no helper joins after.
    closed: bool,
}

impl SymbolIndex {
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
        builder.threads(cores()).build_parallel().run(|| {
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
        self.update_on(files, deadline, cores())
    }

    /// [`SymbolIndex::update`] without a deadline, on half the cores (at least one): for the
    /// indexing a front end starts as soon as it knows the workspace, which should leave room
    /// for the editor's requests.
    pub fn update_in_background(&self, files: Vec<(PathBuf, FileSource)>) -> IndexStats {
        self.update_on(files, None, (cores() / 2).max(1))
    }

    /// Waits until no other update runs (until `deadline`, if given) and takes the slot,
    /// helping the running update parse its queue meanwhile. Returns the slot (`None` when the
    /// deadline came first) and what the helping parsed.
    pub(super) fn slot(&self, deadline: Option<Instant>) -> (Option<UpdateSlot<'_>>, Parsed) {
        let mut helped = Parsed::default();
        loop {
            {
                let mut updating = lock(&self.updating);
                if !*updating {
                    *updating = true;
                    return (Some(UpdateSlot(self)), helped);
                }
            }
            let running = lock(&self.running).clone();
            if let Some(job) = running {
                helped = helped.add(self.help(&job, deadline));
            }
            let updating = lock(&self.updating);
            if !*updating {
                continue;
            }
            let wait = match deadline {
                None => HELP_POLL,
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) => left.min(HELP_POLL),
                    None => return (None, helped),
                },
            };
            drop(
                self.updated
                    .wait_timeout(updating, wait)
                    .unwrap_or_else(PoisonError::into_inner),
            );
        }
    }

    /// Parses files from the running update's queue on every core of this caller's own, until
    /// the queue is empty or the earlier of the two deadlines.
    fn help(&self, job: &Job, deadline: Option<Instant>) -> Parsed {
        {
            let mut helpers = lock(&job.helpers);
            if helpers.closed || job.next.load(Ordering::Relaxed) >= job.work.len() {
                return Parsed::default();
            }
            helpers.active += 1;
        }
        // Leaves even if parsing panics: the update waits for its helpers to leave.
        let _helping = Helping(job);
        let deadline = match (deadline, job.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let done = self.parse_all(job, deadline, cores());
        let mut helpers = lock(&job.helpers);
        helpers.parsed = helpers.parsed.add(done);
        done
    }

    fn update_on(
        &self,
        files: Vec<(PathBuf, FileSource)>,
        deadline: Option<Instant>,
        workers: usize,
    ) -> IndexStats {
        let (slot, helped) = self.slot(deadline);
        let Some(_slot) = slot else {
            self.incomplete.store(true, Ordering::Relaxed);
            return IndexStats {
                files: self.len(),
                helped: helped.parsed,
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

        let job = Arc::new(Job {
            listed,
            work,
            next: AtomicUsize::new(0),
            deadline,
            helpers: Mutex::default(),
            helpers_left: Condvar::new(),
        });
        *lock(&self.running) = Some(Arc::clone(&job));
        let own = {
            // Taken down even if parsing panics, so that no caller helps a queue nobody runs.
            let _running = Running(self);
            self.parse_all(&job, deadline, workers)
        };
        let by_helpers = {
            let mut helpers = lock(&job.helpers);
            helpers.closed = true;
            while helpers.active > 0 {
                helpers = job
                    .helpers_left
                    .wait(helpers)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            helpers.parsed
        };
        let done = own.add(by_helpers);
        let complete = own.taken + by_helpers.taken == job.work.len();
        self.incomplete.store(!complete, Ordering::Relaxed);
        IndexStats {
            files: self.len(),
            parsed: done.parsed,
            lines_parsed: done.lines,
            removed: removed + done.dropped,
            helped: helped.parsed,
            complete,
        }
    }

    /// Parses files from `job`'s queue on up to `workers` threads, putting each batch of
    /// results into the index; after `deadline` no worker takes a new file. A file that could
    /// not be read or parsed leaves the index.
    fn parse_all(&self, job: &Job, deadline: Option<Instant>, workers: usize) -> Parsed {
        // Returns how many files it dropped that the index had.
        let publish = |batch: &mut Vec<(usize, Option<FileEntry>)>| {
            if batch.is_empty() {
                return 0;
            }
            let mut dropped = 0;
            let mut indexed = self.files.write().unwrap_or_else(PoisonError::into_inner);
            for (at, entry) in batch.drain(..) {
                let path = &job.listed[at].0;
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
                let Some((at, stamp)) = job.work.get(job.next.fetch_add(1, Ordering::Relaxed))
                else {
                    break;
                };
                let (path, source) = &job.listed[*at];
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
        let left = job
            .work
            .len()
            .saturating_sub(job.next.load(Ordering::Relaxed));
        let workers = workers.min(left);
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
                .fold(Parsed::default(), Parsed::add)
        })
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
