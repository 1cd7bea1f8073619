//! Latency of one `didChange` keystroke: a single-character edit at a random `(line, character)`
//! applied with [`Document::apply_change`] (position conversion plus rope edit, exactly what
//! `DocumentStore::change` does under its lock) to source-like documents of 10 KB, 1 MB and 10 MB.
//!
//! Positions are UTF-16 (LSP's default encoding); the 10 MB document is also measured with UTF-8,
//! and once more (informational, no target) while a reader holds a snapshot of it, which makes
//! ropey copy the path to the edited leaf. Edits alternate between inserting one char and deleting
//! one char, so the size stays stable.
//! Each edit is timed on its own; the table gives median, p99 and max in microseconds and checks
//! the targets: p99 at 10 MB under 100 µs, and p99(10 MB) at most 2× p99(10 KB).
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem-text --bench apply_change
//! ```
//!
//! Set `TANDEM_BENCH_QUICK=1` for a smoke run with about a tenth of the iterations.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use fastrand::Rng;
use tandem_text::{Change, Document, LineCol, PositionEncoding, Range};

const SEED: u64 = 0x7A4D_E3B1_5EED_0001;
const FULL_EDITS: usize = 20_000;
const FULL_WARMUP: usize = 2_000;

/// Code-like ASCII: identifiers, digits, spaces and punctuation.
const ASCII: &[u8] = b"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz\
ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789____        (){}[]<>;:,.=+-*/&|!?\"'#";
/// Multi-byte chars sprinkled in: 2-byte/1-unit, 3-byte/1-unit and 4-byte/2-unit (surrogate pair).
const MULTI_BYTE: [char; 3] = ['é', '中', '😀'];

/// One char as an editor might type it: mostly ASCII, now and then a multi-byte one.
fn random_char(rng: &mut Rng) -> char {
    if rng.u32(0..40) == 0 {
        MULTI_BYTE[rng.usize(..MULTI_BYTE.len())]
    } else {
        char::from(ASCII[rng.usize(..ASCII.len())])
    }
}

/// Deterministic source-like text of at least `target_bytes` bytes: indented lines of 20–100
/// chars, `\n` line breaks.
fn source_text(rng: &mut Rng, target_bytes: usize) -> String {
    let mut text = String::with_capacity(target_bytes + 512);
    while text.len() < target_bytes {
        let line_chars = rng.usize(20..=100);
        let indent = 4 * rng.usize(0..4);
        text.push_str(&" ".repeat(indent));
        for _ in indent..line_chars {
            text.push(random_char(rng));
        }
        text.push('\n');
    }
    text
}

/// Offset of the `char_in_line`-th char of `line`, in `encoding` units (what an editor would send).
fn encoded_offset(
    doc: &Document,
    line: usize,
    char_in_line: usize,
    encoding: PositionEncoding,
) -> u32 {
    let slice = doc.rope().line(line);
    let units = match encoding {
        PositionEncoding::Utf8 => slice.char_to_byte(char_in_line),
        PositionEncoding::Utf16 => slice.char_to_utf16_cu(char_in_line),
        PositionEncoding::Utf32 => char_in_line,
    };
    units as u32
}

/// Chars of a line without its `\n` (the generated text has no other line breaks).
fn content_chars(doc: &Document, line: usize) -> usize {
    let slice = doc.rope().line(line);
    let len = slice.len_chars();
    if len > 0 && slice.char(len - 1) == '\n' {
        len - 1
    } else {
        len
    }
}

/// The `i`-th edit: even ones insert one char at a random position (end of line included), odd
/// ones delete one random char of a non-empty line.
fn random_edit(rng: &mut Rng, doc: &Document, i: usize, encoding: PositionEncoding) -> Change {
    let lines = doc.line_count();
    if i.is_multiple_of(2) {
        let line = rng.usize(..lines);
        let at = rng.usize(..=content_chars(doc, line));
        let pos = LineCol::new(line as u32, encoded_offset(doc, line, at, encoding));
        Change {
            range: Some(Range {
                start: pos,
                end: pos,
            }),
            text: random_char(rng).to_string(),
        }
    } else {
        // Only the (empty) last line after the trailing `\n` has no chars; redraw on it.
        let (line, chars) = loop {
            let line = rng.usize(..lines);
            let chars = content_chars(doc, line);
            if chars > 0 {
                break (line, chars);
            }
        };
        let at = rng.usize(..chars);
        let line_u32 = line as u32;
        Change {
            range: Some(Range {
                start: LineCol::new(line_u32, encoded_offset(doc, line, at, encoding)),
                end: LineCol::new(line_u32, encoded_offset(doc, line, at + 1, encoding)),
            }),
            text: String::new(),
        }
    }
}

struct Stats {
    label: String,
    bytes: usize,
    lines: usize,
    median: Duration,
    p99: Duration,
    max: Duration,
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// What else is alive while the timed document is edited.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Readers {
    /// The document's rope is not shared: ropey edits its nodes in place.
    None,
    /// A reader holds a snapshot (`DocumentStore::get` clones the document), so the edit must
    /// copy the path to the changed leaf first.
    SnapshotHeld,
}

fn measure(
    label: &str,
    target_bytes: usize,
    encoding: PositionEncoding,
    readers: Readers,
    edits: usize,
    warmup: usize,
) -> Stats {
    // The same seed for every row: rows of one size edit the same text at the same places.
    let mut rng = Rng::with_seed(SEED ^ target_bytes as u64);
    let text = source_text(&mut rng, target_bytes);
    let mut doc = Document::new(&text, 1, "rust");
    // Positions are drawn from a shadow copy with its own nodes, edited in step but untimed, so
    // that drawing a position does not pull the timed document's path into the cache just before
    // the edit (a server parses JSON between keystrokes; the editor's position arrives cold).
    let mut shadow = Document::new(&text, 1, "rust");
    drop(text);
    let (bytes, lines) = (doc.len_bytes(), doc.line_count());

    let mut samples = Vec::with_capacity(edits);
    for i in 0..warmup + edits {
        let change = random_edit(&mut rng, &shadow, i, encoding);
        shadow.apply_change(&change, encoding);
        let snapshot = (readers == Readers::SnapshotHeld).then(|| doc.clone());
        // Only the call is timed: drawing the change, cloning and dropping the snapshot are not.
        let started = Instant::now();
        let applied = doc.apply_change(black_box(&change), encoding);
        let elapsed = started.elapsed();
        black_box(applied);
        drop(snapshot);
        if i >= warmup {
            samples.push(elapsed);
        }
    }
    assert!(
        doc.rope() == shadow.rope(),
        "the timed document drifted from its shadow copy: the bench's edits are wrong"
    );
    samples.sort_unstable();

    Stats {
        label: label.to_owned(),
        bytes,
        lines,
        median: percentile(&samples, 0.50),
        p99: percentile(&samples, 0.99),
        max: percentile(&samples, 1.0),
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

fn main() {
    let quick = std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let (edits, warmup) = if quick {
        (FULL_EDITS / 10, FULL_WARMUP / 10)
    } else {
        (FULL_EDITS, FULL_WARMUP)
    };

    const KB: usize = 1_000;
    const MB: usize = 1_000_000;
    let (utf8, utf16) = (PositionEncoding::Utf8, PositionEncoding::Utf16);
    let none = Readers::None;
    let rows = [
        measure("10 KB  utf-16", 10 * KB, utf16, none, edits, warmup),
        measure("1 MB   utf-16", MB, utf16, none, edits, warmup),
        measure("10 MB  utf-16", 10 * MB, utf16, none, edits, warmup),
        measure("10 MB  utf-8", 10 * MB, utf8, none, edits, warmup),
        // Not part of the targets: the cost a reader's live snapshot adds to an edit.
        measure(
            "10 MB  utf-16*",
            10 * MB,
            utf16,
            Readers::SnapshotHeld,
            edits,
            warmup,
        ),
    ];

    println!(
        "apply_change: one-char edit at a random position, {edits} edits per row (warm-up {warmup}){}",
        if quick { ", QUICK" } else { "" }
    );
    println!(
        "{:<14} {:>10} {:>8} {:>11} {:>11} {:>11}",
        "document", "bytes", "lines", "median µs", "p99 µs", "max µs"
    );
    for row in &rows {
        println!(
            "{:<14} {:>10} {:>8} {:>11.3} {:>11.3} {:>11.3}",
            row.label,
            row.bytes,
            row.lines,
            micros(row.median),
            micros(row.p99),
            micros(row.max)
        );
    }

    println!(
        "* a reader's snapshot is alive during each edit (rope path copied on write); no target"
    );

    let p99_small = micros(rows[0].p99);
    let p99_large = micros(rows[2].p99);
    let ratio = p99_large / p99_small;
    println!();
    println!(
        "target p99(10 MB, utf-16) < 100 µs:              {p99_large:>8.3} µs  {}",
        verdict(p99_large < 100.0)
    );
    println!(
        "target p99(10 MB) / p99(10 KB) <= 2× (utf-16):   {ratio:>8.2}×     {}",
        verdict(ratio <= 2.0)
    );
}
