//! One small `edit` of a large Python file, through the real tool as the agent runs it (the
//! file on disk, `DiskEditor`), with the syntax guard on (`syntax.checkEdits`, the default) and
//! off. The guard checks from the tree the syntax cache keeps (`syntax_cache.rs`), so what an
//! edit costs depends on what came before it:
//!
//! - **cold**: the file was read with a range only (no outline, so no tree kept): the guard
//!   parses the text before the edit in full, then checks the edit from that tree;
//! - **after read_file**: the file was read without a range first, whose outline parse keeps
//!   the tree;
//! - **warm**: the edit before it on the same file was accepted, and the model's next turn
//!   (stood in for by a 1 s pause) gave the reparse after that edit time to finish;
//! - **back to back**: the same without the pause, so the edit waits for that reparse;
//! - **refused**: an edit that leaves a bracket open, from a warm tree (the report included);
//! - **guard off**: the same edit with `syntax.checkEdits` off.
//!
//! Each edit flips `first + second` to `first - second` (and back) in one function in the
//! middle of the file. The files are generated (classes and functions, 23 bytes a line on
//! average) in a temporary directory; each cold or after-read sample edits a fresh copy, as the
//! cache is keyed by path. Times are medians, in milliseconds, of the samples noted.
//!
//! Target: under 100 ms for the warm edit of the 200,000-line file.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem-agent --bench edit_large_files
//! ```
//!
//! Without `--bench` on the command line (that is, under `cargo test --all-targets`) or with
//! `TANDEM_BENCH_QUICK=1`, it is a smoke run on a 2,000-line file with one sample a row.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_agent::settings::AgentSettings;
use tandem_agent::tools::{Tool, ToolContext};
use tandem_agent::{setup, DiskEditor};
use tokio::runtime::Runtime;

const SIZES: [usize; 3] = [10_000, 40_000, 200_000];
const QUICK_SIZES: [usize; 1] = [2_000];
/// Stands for the model's turn between two edits.
const MODEL_TURN: Duration = Duration::from_secs(1);

/// Python source of `lines` lines: a class and a function, over and over.
fn python(lines: usize) -> String {
    let mut text = String::new();
    let mut count = 0;
    for n in 0.. {
        let piece = format!(
            "class Shape{n}:\n    \"\"\"A shape with a size.\"\"\"\n\n    def __init__(self, size, \
             label=\"shape\"):\n        self.size = size\n        self.label = label\n\n    def \
             area(self, scale=1.0):\n        if self.size > {n}:\n            return self.size * \
             scale * 2\n        return [x * scale for x in range(self.size)]\n\n\ndef \
             helper_{n}(first, second):\n    total = first + second  # the sum\n    for index in \
             range(second):\n        total += index * {n}\n    return total\n\n\n"
        );
        for line in piece.split_inclusive('\n') {
            if count == lines {
                return text;
            }
            text.push_str(line);
            count += 1;
        }
    }
    text
}

/// The `edit` arguments that flip the sign in `helper_{function}`, from `+` when `plus`.
fn flip(path: &str, function: usize, plus: bool) -> Value {
    let (from, to) = if plus { ('+', '-') } else { ('-', '+') };
    let head = format!("def helper_{function}(first, second):\n    total = first ");
    json!({
        "path": path,
        "old_string": format!("{head}{from} second"),
        "new_string": format!("{head}{to} second"),
    })
}

struct Bench {
    runtime: Runtime,
    tools: Vec<Arc<dyn Tool>>,
    on: ToolContext,
    off: ToolContext,
}

impl Bench {
    fn run(&self, ctx: &ToolContext, name: &str, args: Value) -> Result<String, String> {
        let tool = self.tools.iter().find(|tool| tool.name() == name).unwrap();
        self.runtime
            .block_on(tool.run(args, ctx))
            .map(|output| output.text)
            .map_err(|error| format!("{error:?}"))
    }

    /// Times one edit, which must be accepted (or refused, when `refused`).
    fn edit(&self, ctx: &ToolContext, args: Value, refused: bool) -> f64 {
        let start = Instant::now();
        let result = self.run(ctx, "edit", args);
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        match (&result, refused) {
            (Ok(_), false) => {}
            (Err(error), true) if error.contains("NOT applied") => {}
            _ => panic!("unexpected edit result: {result:?}"),
        }
        elapsed
    }

    /// Marks `path` as read, the way the model reads a window of it (no outline, no tree).
    fn read_window(&self, ctx: &ToolContext, path: &str) {
        self.run(
            ctx,
            "read_file",
            json!({"path": path, "start_line": 1, "end_line": 20}),
        )
        .unwrap();
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench")
        || std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let sizes: &[usize] = if quick { &QUICK_SIZES } else { &SIZES };
    let (few, many) = if quick { (1, 1) } else { (5, 9) };
    let pause = if quick { Duration::ZERO } else { MODEL_TURN };

    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let context = |check_edits: bool| {
        let mut settings = AgentSettings::default();
        settings.syntax.check_edits = check_edits;
        setup::tool_context(vec![root.clone()], &settings, Arc::new(DiskEditor), None)
    };
    let bench = Bench {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap(),
        tools: tandem_agent::tools::all(),
        on: context(true),
        off: context(false),
    };

    println!(
        "{:>8} {:>7} {:>9} {:>8} {:>11} {:>8} {:>12} {:>8}",
        "lines", "MB", "guard off", "cold", "after read", "warm", "back to back", "refused"
    );
    for &lines in sizes {
        let text = python(lines);
        let functions = text.matches("\ndef helper_").count();
        let middle = functions / 2;
        let write = |name: &str| std::fs::write(root.join(name), &text).unwrap();
        let mut copies = 0;
        let mut fresh_copy = || {
            copies += 1;
            let name = format!("lines_{lines}_{copies}.py");
            write(&name);
            name
        };

        // Guard off: consecutive edits of one file.
        let name = fresh_copy();
        bench.read_window(&bench.off, &name);
        let off = median(
            (0..many)
                .map(|i| bench.edit(&bench.off, flip(&name, middle, i % 2 == 0), false))
                .collect(),
        );

        // Each sample waits out the reparse the one before left running.
        let cold = median(
            (0..few)
                .map(|_| {
                    std::thread::sleep(pause);
                    let name = fresh_copy();
                    bench.read_window(&bench.on, &name);
                    bench.edit(&bench.on, flip(&name, middle, true), false)
                })
                .collect(),
        );
        let after_read = median(
            (0..few)
                .map(|_| {
                    std::thread::sleep(pause);
                    let name = fresh_copy();
                    let outline = bench.run(&bench.on, "read_file", json!({"path": name}));
                    assert!(quick || outline.unwrap().contains("outline"));
                    bench.read_window(&bench.on, &name);
                    bench.edit(&bench.on, flip(&name, middle, true), false)
                })
                .collect(),
        );

        // Warm: one file, each edit after the one before, with and without the model's turn.
        let name = fresh_copy();
        bench.read_window(&bench.on, &name);
        // Whether the file has `first + second` in the edited function now.
        let mut plus = true;
        let mut flip_timed = |wait: Duration| {
            std::thread::sleep(wait);
            let elapsed = bench.edit(&bench.on, flip(&name, middle, plus), false);
            plus = !plus;
            elapsed
        };
        // The first edit is cold.
        flip_timed(Duration::ZERO);
        let warm = median((0..many).map(|_| flip_timed(pause)).collect());
        let back_to_back = median((0..many).map(|_| flip_timed(Duration::ZERO)).collect());
        std::thread::sleep(pause);
        let open = |plus: bool| {
            let sign = if plus { '+' } else { '-' };
            let head = format!("def helper_{middle}(first, second):\n    total = ");
            json!({
                "path": name,
                "old_string": format!("{head}first {sign} second"),
                "new_string": format!("{head}(first {sign} second"),
            })
        };
        let refused = median(
            (0..few)
                .map(|_| bench.edit(&bench.on, open(plus), true))
                .collect(),
        );

        println!(
            "{lines:>8} {:>7.2} {off:>9.1} {cold:>8.1} {after_read:>11.1} {warm:>8.1} \
             {back_to_back:>12.1} {refused:>8.1}",
            text.len() as f64 / 1e6
        );
        for copy in 1..=copies {
            let _ = std::fs::remove_file(root.join(format!("lines_{lines}_{copy}.py")));
        }
    }
    println!(
        "\nmilliseconds, medians of {many} samples (cold, after read and refused: {few}); \
         warm edits follow a {} ms pause",
        pause.as_millis()
    );
}
