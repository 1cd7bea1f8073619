//! Latency of one keystroke in a large open document: a one-character edit at a random
//! `(line, character)` through the path a `didChange` takes — `Document::apply_change` (position
//! conversion and rope edit), `SyntaxDocument::edit` (the tree told about it) — followed by the
//! incremental reparse a reader triggers with `SyntaxDocument::tree`. Each of those three steps
//! together is timed on its own; the table gives median, p99 and max in microseconds.
//!
//! The documents are real-looking code of at least 5,000 lines per language: the fixture sample
//! (`tests/fixtures/<language>/sample.*`) repeated, each copy with its definitions renamed so
//! that no two copies are the same code. Edits alternate between typing a code-like character at
//! a random position and deleting it again (a backspace), so the text stays the size it was and
//! mostly free of errors, as a file being worked on is. Positions are UTF-16, LSP's default.
//!
//! Target: median under 1 ms for every language.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem-syntax --bench reparse
//! ```
//!
//! Set `TANDEM_BENCH_QUICK=1` for a smoke run with a tenth of the iterations.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use fastrand::Rng;
use tandem_syntax::{tags, Language, SyntaxDocument, TagRole};
use tandem_text::{Change, Document, LineCol, PositionEncoding, Range};

const SEED: u64 = 0x8E9A_85E0_0000_0005;
const MIN_LINES: usize = 5_000;
const FULL_EDITS: usize = 2_000;
const FULL_WARMUP: usize = 200;
const TARGET_MEDIAN: Duration = Duration::from_millis(1);

/// What gets typed: identifier characters, digits, spaces and punctuation.
const TYPED: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_    \
(){}[]<>;:,.=+-*/&|!?\"'#";

/// The fixture sample of `language` (without its `$0` cursor marker), if it has one.
fn sample(language: Language) -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(language.name());
    let path = std::fs::read_dir(&dir)
        .ok()?
        .map(|entry| entry.unwrap().path())
        .find(|path| path.file_stem().is_some_and(|stem| stem == "sample"))?;
    let text = std::fs::read_to_string(path).unwrap();
    Some(text.replacen("$0", "", 1))
}

/// `word` replaced by `with` wherever it stands as a whole identifier.
fn rename(text: &str, word: &str, with: &str) -> String {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(is_ident) || after.is_some_and(is_ident) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// At least [`MIN_LINES`] lines: copies of `sample`, the `n`th with its definitions (the names
/// the tags query finds, four bytes or longer, so that keywords stay keywords) suffixed `_n`.
/// Only the last copy keeps its unindented `return` lines (a Lua module's `return M` must end
/// the file).
fn large_source(language: Language, sample: &str) -> String {
    let tree = tandem_syntax::parse(language, sample).unwrap();
    let mut names: Vec<String> = tags(language, &tree, sample)
        .unwrap()
        .into_iter()
        .filter(|tag| tag.role == TagRole::Definition && tag.name.len() >= 4)
        .map(|tag| tag.name)
        .collect();
    names.sort();
    names.dedup();
    let lines_per_copy = sample.lines().count().max(1);
    let copies = MIN_LINES.div_ceil(lines_per_copy);
    let mut text = String::new();
    for n in 1..=copies {
        let mut copy = if n < copies {
            sample
                .split_inclusive('\n')
                .filter(|line| !line.starts_with("return"))
                .collect()
        } else {
            sample.to_owned()
        };
        for name in &names {
            copy = rename(&copy, name, &format!("{name}_{n}"));
        }
        text.push_str(&copy);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}

/// Chars of `line` without its line break.
fn content_chars(doc: &Document, line: usize) -> usize {
    let slice = doc.rope().line(line);
    let text = slice.to_string();
    text.trim_end_matches(['\n', '\r']).chars().count()
}

fn utf16(doc: &Document, line: usize, chars: usize) -> LineCol {
    let units = doc.rope().line(line).char_to_utf16_cu(chars);
    LineCol::new(line as u32, units as u32)
}

struct Stats {
    language: Language,
    lines: usize,
    bytes: usize,
    has_errors: bool,
    full_parse: Duration,
    median: Duration,
    p99: Duration,
    max: Duration,
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn measure(language: Language, sample: &str, edits: usize, warmup: usize) -> Stats {
    let mut rng = Rng::with_seed(SEED);
    let text = large_source(language, sample);
    let mut doc = Document::new(&text, 1, language.name());
    let mut syntax = SyntaxDocument::new(language);
    let started = Instant::now();
    let has_errors = syntax.tree(doc.rope()).unwrap().root_node().has_error();
    let full_parse = started.elapsed();

    let mut samples = Vec::with_capacity(edits);
    // Where the last typed character went, for the backspace that follows it.
    let mut typed: Option<(usize, usize)> = None;
    for i in 0..warmup + edits {
        let change = match typed.take() {
            None => {
                let line = rng.usize(..doc.line_count());
                let at = rng.usize(..=content_chars(&doc, line));
                typed = Some((line, at));
                let position = utf16(&doc, line, at);
                Change {
                    range: Some(Range {
                        start: position,
                        end: position,
                    }),
                    text: char::from(TYPED[rng.usize(..TYPED.len())]).to_string(),
                }
            }
            Some((line, at)) => Change {
                range: Some(Range {
                    start: utf16(&doc, line, at),
                    end: utf16(&doc, line, at + 1),
                }),
                text: String::new(),
            },
        };
        let started = Instant::now();
        let applied = doc.apply_change(black_box(&change), PositionEncoding::Utf16);
        syntax.edit(&applied);
        let tree = syntax.tree(doc.rope()).unwrap();
        black_box(tree);
        let elapsed = started.elapsed();
        if i >= warmup {
            samples.push(elapsed);
        }
    }
    assert_eq!(doc.text(), text, "the backspaces did not undo the typing");
    samples.sort_unstable();
    Stats {
        language,
        lines: doc.line_count(),
        bytes: doc.len_bytes(),
        has_errors,
        full_parse,
        median: percentile(&samples, 0.50),
        p99: percentile(&samples, 0.99),
        max: percentile(&samples, 1.0),
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let quick = std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let (edits, warmup) = if quick {
        (FULL_EDITS / 10, FULL_WARMUP / 10)
    } else {
        (FULL_EDITS, FULL_WARMUP)
    };
    let rows: Vec<Stats> = Language::ALL
        .into_iter()
        .filter_map(|language| sample(language).map(|sample| (language, sample)))
        .map(|(language, sample)| measure(language, &sample, edits, warmup))
        .collect();
    for required in [Language::Rust, Language::Python, Language::TypeScript] {
        assert!(
            rows.iter().any(|row| row.language == required),
            "no fixture sample for {required}"
        );
    }

    println!(
        "reparse: apply_change + edit + incremental reparse per keystroke, {edits} keystrokes per \
         language (warm-up {warmup}){}",
        if quick { ", QUICK" } else { "" }
    );
    println!(
        "{:<11} {:>7} {:>8} {:>7} {:>13} {:>11} {:>11} {:>11}",
        "language", "lines", "bytes", "errors", "full parse µs", "median µs", "p99 µs", "max µs"
    );
    for row in &rows {
        println!(
            "{:<11} {:>7} {:>8} {:>7} {:>13.0} {:>11.1} {:>11.1} {:>11.1}",
            row.language.name(),
            row.lines,
            row.bytes,
            if row.has_errors { "yes" } else { "no" },
            micros(row.full_parse),
            micros(row.median),
            micros(row.p99),
            micros(row.max)
        );
    }
    let worst = rows.iter().map(|row| row.median).max().unwrap_or_default();
    println!();
    println!(
        "target median < {} µs for every language: worst {:.1} µs  {}",
        micros(TARGET_MEDIAN),
        micros(worst),
        if worst < TARGET_MEDIAN {
            "PASS"
        } else {
            "FAIL"
        }
    );
}
