//! Memory of the reading tools on a file that is one huge line (minified code, a one-line data
//! dump): `read_file` (which also records what the model saw, hashing the file) and `grep`, run
//! as the agent runs them, with the heap measured by a counting global allocator (peak since
//! the last reset).
//!
//! Target: each tool's heap peak stays under 16 MiB however large the file; before the tools
//! streamed, a 300 MB line cost 599 MB (`read_file`) and 433 MB (`grep`) of resident memory.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem --bench huge_files
//! ```
//!
//! That reads a 300 MB file. Without `--bench` on the command line (that is, under `cargo test
//! --all-targets`) or with `TANDEM_BENCH_QUICK=1`, the file is 80 MB (still past the 64 MiB that
//! `read_file` holds whole), and the run fails if a peak passes the target.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use peak_alloc::PeakAlloc;
use serde_json::json;
use tandem_agent::settings::AgentSettings;
use tandem_agent::{setup, DiskEditor};

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

const FULL_BYTES: usize = 300 << 20;
const QUICK_BYTES: usize = 80 << 20;
const PEAK_TARGET: usize = 16 << 20;

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench")
        || std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let size = if quick { QUICK_BYTES } else { FULL_BYTES };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // Written in pieces, so that making the file costs no heap to speak of.
    {
        use std::io::Write;
        let mut file =
            std::io::BufWriter::new(std::fs::File::create(root.join("dump.json")).unwrap());
        let piece = vec![b'7'; 1 << 20];
        for _ in 0..size >> 20 {
            file.write_all(&piece).unwrap();
        }
    }
    let ctx = setup::tool_context(
        vec![root.clone()],
        &AgentSettings::default(),
        Arc::new(DiskEditor),
        None,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = tandem_agent::tools::all();
    println!("one line of {} MiB", size >> 20);
    println!("{:<10} {:>14} {:>10}", "tool", "heap peak", "time");
    let mut over = Vec::new();
    for (name, args) in [
        ("read_file", json!({"path": "dump.json"})),
        ("grep", json!({"pattern": "needle"})),
    ] {
        let tool = tools.iter().find(|tool| tool.name() == name).unwrap();
        let start = Instant::now();
        HEAP.reset_peak_usage();
        let before = HEAP.current_usage();
        let output = runtime.block_on(tool.run(args, &ctx)).unwrap();
        let peak = HEAP.peak_usage().saturating_sub(before);
        let elapsed = start.elapsed();
        assert!(
            output.text.len() < 8 << 10,
            "{name}: {} bytes of output",
            output.text.len()
        );
        println!(
            "{name:<10} {:>10.1} MiB {:>8.2} s",
            peak as f64 / f64::from(1 << 20),
            elapsed.as_secs_f64()
        );
        if peak > PEAK_TARGET {
            over.push(format!("{name}: {} MiB", peak >> 20));
        }
    }
    assert!(
        over.is_empty(),
        "heap peaks over the {} MiB target: {over:?}",
        PEAK_TARGET >> 20
    );
}
