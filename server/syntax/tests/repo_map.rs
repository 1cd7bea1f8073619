//! The symbol index and the repo map on real files: the fixture workspace in
//! `fixtures/repo_map/` (Rust, Python and JavaScript files, where `src/main.rs` uses one function
//! of `src/config.rs` and `src/util.rs` is the helper module everything else uses) is copied to
//! a temporary directory, walked and indexed, then edited to check what an update re-parses.

// The helpers outside `#[test]` functions unwrap too: a failed fixture copy is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use expect_test::expect;
use tandem_syntax::{FileSource, IndexStats, MapRequest, SymbolIndex};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/repo_map");

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

struct Workspace {
    dir: tempfile::TempDir,
    index: SymbolIndex,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(Path::new(FIXTURE), dir.path());
        let workspace = Workspace {
            dir,
            index: SymbolIndex::new(),
        };
        let stats = workspace.refresh();
        assert_eq!(stats.files, 13, "{stats:?}");
        assert_eq!(stats.parsed, 13, "{stats:?}");
        workspace
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn files(&self) -> Vec<PathBuf> {
        SymbolIndex::walk(&[self.dir.path().to_path_buf()], 1_000, 1 << 20)
    }

    /// Walks the workspace and updates the index from the disk.
    fn refresh(&self) -> IndexStats {
        self.refresh_with(Vec::new())
    }

    /// Like [`Self::refresh`], with editor buffers listed after the disk files.
    fn refresh_with(&self, buffers: Vec<(PathBuf, FileSource)>) -> IndexStats {
        let mut files: Vec<(PathBuf, FileSource)> = self
            .files()
            .into_iter()
            .map(|path| (path, FileSource::Disk))
            .collect();
        files.extend(buffers);
        self.index.update(files, None)
    }

    fn map(&self, request: &MapRequest) -> tandem_syntax::RepoMap {
        let root = self.dir.path().to_path_buf();
        self.index.repo_map(request, &move |path: &Path| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
    }

    fn relative(&self, paths: &[PathBuf]) -> Vec<String> {
        paths
            .iter()
            .map(|path| {
                path.strip_prefix(self.dir.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect()
    }
}

#[test]
fn the_file_the_active_file_uses_ranks_first() {
    let workspace = Workspace::new();
    let request = MapRequest {
        active: Some(workspace.path("src/main.rs")),
        max_tokens: 48,
        ..MapRequest::default()
    };
    let map = workspace.map(&request);
    assert_eq!(
        workspace.relative(&map.files)[0],
        "src/config.rs",
        "{}",
        map.text
    );
    expect![[r#"
        src/config.rs:
             3	pub struct Config {
             8	pub fn parse_config_file(path: &str) -> Config {
        src/main.rs:
             3	fn main() {
             9	fn start(settings: config::Config, port: u16) {
    "#]]
    .assert_eq(&map.text);

    let unfocused = workspace.map(&MapRequest {
        max_tokens: 48,
        ..MapRequest::default()
    });
    assert_ne!(unfocused.files, map.files, "{}", unfocused.text);
    assert_eq!(
        workspace.relative(&unfocused.files)[0],
        "src/util.rs",
        "{}",
        unfocused.text
    );
}

#[test]
fn a_method_is_shown_under_the_first_line_of_its_impl() {
    let workspace = Workspace::new();
    let map = workspace.map(&MapRequest {
        active: Some(workspace.path("src/server.rs")),
        max_tokens: 128,
        ..MapRequest::default()
    });
    expect![[r#"
        src/util.rs:
             3	pub fn format_duration(seconds: u64) -> String {
             7	pub fn clamp_value(value: i64, low: i64, high: i64) -> i64 {
            11	pub fn retry_with_backoff(attempts: u32) -> u32 {
            15	pub fn hash_bytes(bytes: &[u8]) -> u64 {
            23	impl Stopwatch {
            24	    pub fn start_timer() -> Stopwatch {
            28	    pub fn elapsed_seconds(&self) -> u64 {
        src/log.rs:
             3	pub fn log_event(name: &str) {
        src/model.rs:
             8	pub struct SessionRecord {
        src/server.rs:
             3	pub struct RequestHandler {
    "#]]
    .assert_eq(&map.text);
}

#[test]
fn open_files_and_mentioned_identifiers_pull_their_definitions_up() {
    let workspace = Workspace::new();
    let open = workspace.map(&MapRequest {
        open: vec![workspace.path("web/app.js")],
        max_tokens: 64,
        ..MapRequest::default()
    });
    assert_eq!(
        workspace.relative(&open.files)[0],
        "web/api.js",
        "{}",
        open.text
    );

    let mentioned = workspace.map(&MapRequest {
        mentioned: vec!["build_report".to_owned()],
        max_tokens: 64,
        ..MapRequest::default()
    });
    assert_eq!(
        workspace.relative(&mentioned.files)[0],
        "scripts/report.py",
        "{}",
        mentioned.text
    );
}

#[test]
fn the_map_fits_its_budget() {
    let workspace = Workspace::new();
    let mut shown = 0;
    for budget in [64, 256, 1024, 4096] {
        let map = workspace.map(&MapRequest {
            active: Some(workspace.path("src/main.rs")),
            max_tokens: budget,
            ..MapRequest::default()
        });
        assert!(map.estimated_tokens <= budget, "{budget}: {map:?}");
        assert!(map.text.len() / 4 <= budget, "{budget}: {map:?}");
        assert_eq!(map.estimated_tokens, map.text.len().div_ceil(4));
        assert!(map.definitions >= shown, "{budget}: fewer than {shown}");
        if budget == 256 {
            assert!(map.definitions > shown, "{budget}: no more than {shown}");
        }
        shown = map.definitions;
    }
    // 4096 tokens hold the whole workspace: every file with a definition is shown.
    let all = workspace.map(&MapRequest {
        max_tokens: 4096,
        ..MapRequest::default()
    });
    assert_eq!(all.files.len(), 13, "{}", all.text);
}

#[test]
fn an_empty_index_or_budget_makes_an_empty_map() {
    let empty = SymbolIndex::new();
    let request = MapRequest {
        max_tokens: 1024,
        ..MapRequest::default()
    };
    assert_eq!(
        empty.repo_map(&request, &|path: &Path| path.display().to_string()),
        tandem_syntax::RepoMap::default()
    );
    let workspace = Workspace::new();
    assert_eq!(
        workspace.map(&MapRequest::default()),
        tandem_syntax::RepoMap::default()
    );
    // A budget too small for the first definition shows nothing rather than too much.
    let tiny = workspace.map(&MapRequest {
        max_tokens: 2,
        ..MapRequest::default()
    });
    assert_eq!(tiny, tandem_syntax::RepoMap::default());
}

#[test]
fn an_update_parses_only_what_changed() {
    let workspace = Workspace::new();
    let parsed = workspace.index.parse_count();
    assert_eq!(parsed, 13);

    let stats = workspace.refresh();
    assert_eq!(
        stats,
        IndexStats {
            files: 13,
            parsed: 0,
            lines_parsed: 0,
            removed: 0,
            helped: 0,
            complete: true
        }
    );
    assert_eq!(workspace.index.parse_count(), parsed);

    std::fs::write(
        workspace.path("src/log.rs"),
        "pub fn log_event(name: &str) {}\n\npub fn flush_log_buffer() {}\n",
    )
    .unwrap();
    let stats = workspace.refresh();
    assert_eq!((stats.parsed, stats.lines_parsed), (1, 3), "{stats:?}");
    assert_eq!(workspace.index.parse_count(), parsed + 1);
    assert_eq!(
        workspace.index.definitions("flush_log_buffer", None).len(),
        1
    );
}

#[test]
fn a_buffer_overrides_the_disk_and_is_reparsed_only_when_its_version_changes() {
    let workspace = Workspace::new();
    let path = workspace.path("src/log.rs");
    let buffer = |version: i32, text: &str| {
        vec![(
            path.clone(),
            FileSource::Buffer {
                version,
                text: Arc::from(text),
            },
        )]
    };
    let parsed = workspace.index.parse_count();

    let stats = workspace.refresh_with(buffer(1, "pub fn unsaved_helper() {}\n"));
    assert_eq!((stats.files, stats.parsed), (13, 1), "{stats:?}");
    let hits = workspace
        .index
        .definitions("unsaved_helper", Some("function"));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].line_text, "pub fn unsaved_helper() {}");
    assert!(workspace.index.definitions("log_event", None).is_empty());

    workspace.refresh_with(buffer(1, "pub fn unsaved_helper() {}\n"));
    assert_eq!(workspace.index.parse_count(), parsed + 1);

    workspace.refresh_with(buffer(2, "pub fn renamed_helper() {}\n"));
    assert_eq!(workspace.index.parse_count(), parsed + 2);
    assert!(workspace
        .index
        .definitions("unsaved_helper", None)
        .is_empty());

    // The buffer closed: the disk's text comes back.
    workspace.refresh();
    assert_eq!(workspace.index.parse_count(), parsed + 3);
    assert_eq!(workspace.index.definitions("log_event", None).len(), 1);
}

#[test]
fn removed_and_unlisted_files_are_dropped() {
    let workspace = Workspace::new();
    std::fs::remove_file(workspace.path("src/cache.rs")).unwrap();
    let stats = workspace.refresh();
    assert_eq!((stats.files, stats.removed, stats.parsed), (12, 1, 0));
    assert!(workspace.index.definitions("SessionCache", None).is_empty());

    // Listed but gone (deleted between the walk and the update): dropped too.
    std::fs::remove_file(workspace.path("src/log.rs")).unwrap();
    let mut files: Vec<(PathBuf, FileSource)> = workspace
        .files()
        .into_iter()
        .map(|path| (path, FileSource::Disk))
        .collect();
    files.push((workspace.path("src/log.rs"), FileSource::Disk));
    let stats = workspace.index.update(files, None);
    assert_eq!((stats.files, stats.removed), (11, 1));
    assert!(workspace
        .index
        .file(&workspace.path("src/log.rs"))
        .is_none());

    let stats = workspace.index.update(Vec::new(), None);
    assert_eq!((stats.files, stats.removed), (0, 11));
    assert!(workspace.index.is_empty());
}

#[test]
fn a_deadline_leaves_the_rest_for_the_next_update() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(Path::new(FIXTURE), dir.path());
    let index = SymbolIndex::new();
    let files = || -> Vec<(PathBuf, FileSource)> {
        SymbolIndex::walk(&[dir.path().to_path_buf()], 1_000, 1 << 20)
            .into_iter()
            .map(|path| (path, FileSource::Disk))
            .collect()
    };
    let stats = index.update(files(), Some(std::time::Instant::now()));
    assert_eq!((stats.files, stats.parsed, stats.complete), (0, 0, false));
    let stats = index.update(files(), None);
    assert_eq!((stats.files, stats.parsed, stats.complete), (13, 13, true));
}

#[test]
fn a_file_that_is_not_utf8_is_not_indexed() {
    let workspace = Workspace::new();
    std::fs::write(workspace.path("src/latin1.rs"), b"fn caf\xe9() {}\n").unwrap();
    let stats = workspace.refresh();
    assert_eq!((stats.files, stats.parsed), (13, 0), "{stats:?}");
    assert!(workspace
        .index
        .file(&workspace.path("src/latin1.rs"))
        .is_none());
}

#[test]
fn definitions_and_references_by_name_and_kind() {
    let workspace = Workspace::new();
    let show = |hits: Vec<tandem_syntax::SymbolHit>| -> String {
        hits.iter()
            .map(|hit| {
                let path = hit.path.strip_prefix(workspace.dir.path()).unwrap();
                format!(
                    "{}:{} {} {} | {}\n",
                    path.display(),
                    hit.line + 1,
                    hit.kind,
                    hit.name,
                    hit.line_text
                )
            })
            .collect()
    };
    expect![[r#"
        src/util.rs:15 function hash_bytes | pub fn hash_bytes(bytes: &[u8]) -> u64 {
    "#]]
    .assert_eq(&show(workspace.index.definitions("hash_bytes", None)));
    expect![[r#"
        src/util.rs:15 function hash_bytes | pub fn hash_bytes(bytes: &[u8]) -> u64 {
    "#]]
    .assert_eq(&show(
        workspace.index.definitions("hash_bytes", Some("function")),
    ));
    assert!(workspace
        .index
        .definitions("hash_bytes", Some("class"))
        .is_empty());
    assert!(workspace.index.definitions("hash", None).is_empty());
    expect![[r#"
        src/util.rs:24 method start_timer | pub fn start_timer() -> Stopwatch {
    "#]]
    .assert_eq(&show(workspace.index.definitions("start_timer", None)));
    expect![[r#"
        src/cache.rs:9 call hash_bytes | let key = util::hash_bytes(record.user.name.as_bytes());
        src/server.rs:10 call hash_bytes | let key = util::hash_bytes(body);
    "#]]
    .assert_eq(&show(workspace.index.references("hash_bytes")));
    expect![[r#"
        web/app.js:7 call fetchUsers | const users = await fetchUsers({ active: true });
        web/app.js:8 call fetchUsers | const admins = await fetchUsers({ admin: true });
    "#]]
    .assert_eq(&show(workspace.index.references("fetchUsers")));
}

#[test]
fn the_walk_honours_gitignore_and_the_size_cap() {
    let dir = tempfile::tempdir().unwrap();
    let write = |relative: &str, text: &str| {
        let path = dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(".gitignore", "target/\n*.generated.rs\n");
    write("src/lib.rs", "fn a() {}\n");
    write("src/big.rs", &"// padding\n".repeat(100));
    write("src/out.generated.rs", "fn b() {}\n");
    write("target/debug/build.rs", "fn c() {}\n");
    write(".hidden/secret.rs", "fn d() {}\n");
    write("notes/README.md", "# not code\n");
    write("notes/.ignore", "skipped.py\n");
    write("notes/skipped.py", "def e(): pass\n");
    write("notes/tool.py", "def f(): pass\n");
    write("web/a.js", "function g() {}\n");

    let walk = |max_files: usize, max_bytes: u64| -> Vec<String> {
        SymbolIndex::walk(&[dir.path().to_path_buf()], max_files, max_bytes)
            .iter()
            .map(|path| path.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect()
    };
    assert_eq!(
        walk(100, 1 << 20),
        ["notes/tool.py", "src/big.rs", "src/lib.rs", "web/a.js"]
    );
    assert_eq!(walk(100, 500), ["notes/tool.py", "src/lib.rs", "web/a.js"]);
    assert_eq!(walk(2, 1 << 20), ["notes/tool.py", "src/big.rs"]);
    assert!(SymbolIndex::walk(&[], 100, 1 << 20).is_empty());
}

#[test]
fn a_tree_far_over_the_cap_keeps_the_first_files_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    for at in 0..30 {
        let path = dir.path().join(format!("m{}/f{at:02}.rs", at % 3));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "fn f() {}\n").unwrap();
    }
    let root = [dir.path().to_path_buf()];
    let all = SymbolIndex::walk(&root, 100, 1 << 20);
    assert_eq!(all.len(), 30);
    // 30 files are over 4 × 5: the ordered walk that stops at the cap gives the same files
    // as cutting the full list.
    assert_eq!(SymbolIndex::walk(&root, 5, 1 << 20), all[..5]);
    assert_eq!(SymbolIndex::walk(&root, 10, 1 << 20), all[..10]);
    assert!(SymbolIndex::walk(&root, 0, 1 << 20).is_empty());
}

/// A map made while files are still to be parsed (the deadline came first) says it is
/// incomplete; the next complete update takes the note away.
#[test]
fn a_map_made_before_indexing_finished_says_so() {
    let workspace = Workspace::new();
    let request = MapRequest {
        max_tokens: 1024,
        ..MapRequest::default()
    };
    let display = |path: &Path| path.display().to_string();
    let complete = workspace.index.repo_map(&request, &display);
    assert!(!complete.text.contains("Incomplete"), "{}", complete.text);
    assert!(!workspace.index.is_incomplete());

    let util = workspace.path("src/util.rs");
    let text = std::fs::read_to_string(&util).unwrap();
    std::fs::write(&util, format!("{text}\npub fn added_later() {{}}\n")).unwrap();
    let listing: Vec<(PathBuf, FileSource)> = workspace
        .files()
        .into_iter()
        .map(|path| (path, FileSource::Disk))
        .collect();
    let past = std::time::Instant::now();
    let stats = workspace.index.update(listing.clone(), Some(past));
    assert!(!stats.complete);
    let partial = workspace.index.repo_map(&request, &display);
    assert!(
        partial.text.ends_with(
            "(Incomplete: the workspace was still being indexed, so this map covers only the 13 \
             files parsed by then. The repo_map tool gives a fuller one later.)\n"
        ),
        "{}",
        partial.text
    );

    assert!(workspace.index.update(listing, None).complete);
    assert!(!workspace
        .index
        .repo_map(&request, &display)
        .text
        .contains("Incomplete"));
}

/// An update that comes while another runs (the background one) waits for it instead of
/// parsing the same files beside it: every file is parsed once.
#[test]
fn an_update_during_another_waits_and_parses_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..200 {
        std::fs::write(
            dir.path().join(format!("module_{n}.py")),
            format!("def function_{n}(value):\n    return helper(value) + {n}\n"),
        )
        .unwrap();
    }
    let index = Arc::new(SymbolIndex::new());
    let listing: Vec<(PathBuf, FileSource)> =
        SymbolIndex::walk(&[dir.path().to_path_buf()], 1_000, 1 << 20)
            .into_iter()
            .map(|path| (path, FileSource::Disk))
            .collect();
    let background = {
        let (index, listing) = (Arc::clone(&index), listing.clone());
        std::thread::spawn(move || index.update_in_background(listing))
    };
    let foreground = index.update(listing, None);
    let background = background.join().unwrap();
    assert!(foreground.complete && background.complete);
    assert_eq!(foreground.parsed + background.parsed, 200);
    assert_eq!(index.parse_count(), 200);
    assert_eq!(index.len(), 200);
}

/// A prompt's update that comes while the background indexing runs joins its queue with every
/// core (its own threads, at its own priority) rather than sitting idle until it ends: it parses
/// some of the background update's files, and still no file is parsed twice.
#[test]
fn an_update_during_another_helps_it() {
    const FILES: usize = 6_000;
    let listing: Vec<(PathBuf, FileSource)> = (0..FILES)
        .map(|n| {
            let text = format!(
                "class Model_{n}:\n    def method_{n}(self, value):\n        return helper(value) + {n}\n"
            );
            (
                PathBuf::from(format!("/workspace/module_{n}.py")),
                FileSource::Buffer {
                    version: 1,
                    text: text.into(),
                },
            )
        })
        .collect();
    let index = Arc::new(SymbolIndex::new());
    let background = {
        let (index, listing) = (Arc::clone(&index), listing.clone());
        std::thread::spawn(move || index.update_in_background(listing))
    };
    // Running: its first results are in.
    while index.is_empty() {
        std::thread::yield_now();
    }
    let foreground = index.update(listing, None);
    let background = background.join().unwrap();
    assert!(foreground.complete && background.complete);
    assert!(foreground.helped > 0, "{foreground:?} {background:?}");
    assert_eq!(background.parsed + foreground.parsed, FILES);
    assert_eq!(foreground.parsed, 0);
    assert_eq!(index.parse_count(), FILES);
    assert_eq!(index.len(), FILES);
}
