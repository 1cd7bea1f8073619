//! The repo map on a large corpus: a cold build (walk, index every file, render one map) and a
//! warm rebuild after one file changed (walk, update — which re-parses that file only — and
//! render), the work the agent does at the start of each turn.
//!
//! The corpus is `TANDEM_BENCH_CORPUS` (directories separated by `:`), by default the Rust
//! sources of the cargo registry (`$CARGO_HOME/registry/src`, `~/.cargo` without it) and the
//! Python standard library. Nothing in it is written: the changed file is an extra one in a
//! temporary directory, walked as part of the corpus.
//!
//! Targets: cold build at least 100k lines/s per core; warm rebuild median under 100 ms.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem-syntax --bench repo_map
//! ```
//!
//! Set `TANDEM_BENCH_QUICK=1` for a smoke run (at most 2,000 files, 3 warm rebuilds), and
//! `TANDEM_BENCH_MAX_FILES` to cap the corpus (default: no cap).

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tandem_syntax::{FileSource, MapRequest, SymbolIndex};

const MAX_FILE_BYTES: u64 = 1 << 20;
const MAP_TOKENS: usize = 1024;
const FULL_WARM_RUNS: usize = 11;
const QUICK_WARM_RUNS: usize = 3;
const QUICK_MAX_FILES: usize = 2_000;

/// The file rewritten before each warm rebuild: a module of ordinary size that uses and defines
/// names, so the rebuild re-parses real code and its definitions enter the graph.
const EDITED: &str = r#"//! The bench's edited file.
use std::collections::HashMap;

pub struct Registry {
    entries: HashMap<String, usize>,
}

impl Registry {
    pub fn new() -> Self {
        Registry { entries: HashMap::new() }
    }

    pub fn insert(&mut self, name: &str, value: usize) -> Option<usize> {
        self.entries.insert(name.to_owned(), value)
    }

    pub fn get(&self, name: &str) -> Option<&usize> {
        self.entries.get(name)
    }
}
"#;

fn corpus() -> Vec<PathBuf> {
    if let Ok(paths) = std::env::var("TANDEM_BENCH_CORPUS") {
        return std::env::split_paths(&paths).collect();
    }
    let mut roots = Vec::new();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
    if let Some(cargo_home) = cargo_home {
        roots.push(cargo_home.join("registry/src"));
    }
    let stdlib = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()[\"stdlib\"])",
        ])
        .output();
    match stdlib {
        Ok(output) if output.status.success() => {
            let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if !path.is_empty() {
                roots.push(PathBuf::from(path));
            }
        }
        _ => println!("python3 not found: the corpus has no Python standard library"),
    }
    roots.retain(|root| root.is_dir());
    roots
}

/// CPU time of the whole process (all threads, finished ones too) from `/proc/self/stat`, where
/// there is one: on a shared machine wall time also counts other processes' turns.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces, so cut at its closing paren):
    // utime and stime are the 12th and 13th, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// Walk, update and map once; the time of each phase.
struct Build {
    walk: Duration,
    update: Duration,
    map: Duration,
    stats: tandem_syntax::IndexStats,
    map_files: usize,
    map_definitions: usize,
}

impl Build {
    fn total(&self) -> Duration {
        self.walk + self.update + self.map
    }
}

fn build(index: &SymbolIndex, roots: &[PathBuf], max_files: usize, active: &Path) -> Build {
    let started = Instant::now();
    let files = SymbolIndex::walk(roots, max_files, MAX_FILE_BYTES);
    let walked = Instant::now();
    let stats = index.update(
        files
            .into_iter()
            .map(|path| (path, FileSource::Disk))
            .collect(),
        None,
    );
    let updated = Instant::now();
    let request = MapRequest {
        active: Some(active.to_path_buf()),
        max_tokens: MAP_TOKENS,
        ..MapRequest::default()
    };
    let map = index.repo_map(&request, &|path: &Path| path.display().to_string());
    let mapped = Instant::now();
    assert!(map.definitions > 0, "the map is empty");
    Build {
        walk: walked - started,
        update: updated - walked,
        map: mapped - updated,
        stats,
        map_files: map.files.len(),
        map_definitions: map.definitions,
    }
}

fn main() {
    let quick = std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let max_files = std::env::var("TANDEM_BENCH_MAX_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { QUICK_MAX_FILES } else { usize::MAX });
    let warm_runs = if quick {
        QUICK_WARM_RUNS
    } else {
        FULL_WARM_RUNS
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    let scratch = tempfile::tempdir().unwrap();
    let edited = scratch.path().join("edited.rs");
    std::fs::write(&edited, EDITED).unwrap();
    let mut roots = vec![scratch.path().to_path_buf()];
    roots.extend(corpus());
    println!(
        "repo_map: corpus {}{}",
        roots[1..]
            .iter()
            .map(|root| root.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
        if quick { ", QUICK" } else { "" }
    );

    let index = SymbolIndex::new();
    let cpu_before = cpu_seconds();
    let cold = build(&index, &roots, max_files, &edited);
    let cpu = cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let lines = cold.stats.lines_parsed;
    let seconds = cold.total().as_secs_f64();
    let per_core = lines as f64 / seconds / cores as f64;
    println!(
        "files {}  lines {lines}  cores {cores}  map {} files, {} definitions",
        cold.stats.files, cold.map_files, cold.map_definitions
    );
    println!(
        "cold build  {seconds:>8.3} s  (walk {:.3} s, update {:.3} s, map {:.3} s)",
        cold.walk.as_secs_f64(),
        cold.update.as_secs_f64(),
        cold.map.as_secs_f64()
    );
    if let Some(cpu) = cpu {
        println!(
            "cold build CPU time {cpu:.2} s: {:.0} lines per CPU second",
            lines as f64 / cpu
        );
    }

    let mut totals = Vec::with_capacity(warm_runs);
    let (mut walks, mut updates, mut maps) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..warm_runs {
        std::fs::write(&edited, format!("{EDITED}\n// rebuild {run}\n")).unwrap();
        let warm = build(&index, &roots, max_files, &edited);
        assert_eq!(warm.stats.parsed, 1, "{:?}", warm.stats);
        totals.push(warm.total());
        walks.push(warm.walk);
        updates.push(warm.update);
        maps.push(warm.map);
    }
    let warm = median(&mut totals);
    println!(
        "warm rebuild median {:>8.2} ms over {warm_runs}  (walk {:.2} ms, update {:.2} ms, map {:.2} ms; medians)",
        millis(warm),
        millis(median(&mut walks)),
        millis(median(&mut updates)),
        millis(median(&mut maps))
    );
    println!();
    println!(
        "target cold build >= 100k lines/s/core:  {per_core:>10.0}  {}",
        verdict(per_core >= 100_000.0)
    );
    println!(
        "target warm rebuild < 100 ms:            {:>10.2}  {}",
        millis(warm),
        verdict(millis(warm) < 100.0)
    );
}
