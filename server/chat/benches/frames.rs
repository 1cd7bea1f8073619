//! The chat's drawing speed while an answer streams: frames per second, and the time from a
//! keystroke to the frame that shows it (`tandem_chat::bench`: a 120×40 screen on ratatui's
//! test backend, one frame per streamed chunk, a key every 10 chunks).
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem-chat --bench frames
//! ```
//!
//! Without `--bench` (under `cargo test --all-targets`) it streams 400 chunks instead of 4,000
//! and only checks that every frame was drawn.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tandem_chat::bench::{percentile, stream_long_answer};

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let chunks = if full { 4_000 } else { 400 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("could not start the tokio runtime");
    let report = runtime.block_on(stream_long_answer(chunks)).unwrap();
    assert_eq!(report.frames.len(), chunks);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "streamed {} chunks ({} KB of Markdown) into a 120x40 chat",
        report.chunks,
        report.answer_bytes / 1024
    );
    println!(
        "frames: {:.0} per second drawn (p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms a frame)",
        report.frames_per_second(),
        ms(percentile(&report.frames, 50)),
        ms(percentile(&report.frames, 99)),
        ms(percentile(&report.frames, 100)),
    );
    println!(
        "keystroke to frame: p50 {:.2} ms, p99 {:.2} ms over {} keys (plus at most one 16 ms frame interval on a terminal)",
        ms(percentile(&report.keys, 50)),
        ms(percentile(&report.keys, 99)),
        report.keys.len()
    );
}
