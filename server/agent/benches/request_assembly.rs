//! Request assembly: the agent's own work between the model's last byte and the next request
//! leaving, tool execution excluded, with 10k and 100k estimated tokens of history
//! (`tokens::estimate_history`). Each sample times, in order:
//!
//! 1. `Session::next_request()`: the frozen system prompt and tool declarations, a clone of the
//!    history, the reminder on the last message, cache breakpoints and the shared-prefix
//!    measure;
//! 2. `tandem_providers::encode_request()`: the provider's wire body, serialised to bytes, as
//!    the HTTP backend builds it;
//! 3. two `SessionLog::append(&Record::Message { .. })` calls: the session file receiving the
//!    assistant message and its tool results, the pair a turn adds before its next request.
//!
//! The session has no public way to append to its history (`replace_history` starts a new
//! prefix generation, which a real turn does not), so every sample assembles the same history;
//! its last pair is the one appended to the log. In a real turn the two new messages would also
//! be serialised once each for the prefix measure (their size is cached after that): about the
//! cost of step 3's encoding, which this bench does include.
//!
//! The history is built to look like a working session: user prompts with an `<ide>` block,
//! assistant text with `read_file` and `grep` calls, tool results of 1–8 KB of numbered
//! source-like lines, every call answered, ending on tool results (where a turn sends its next
//! request). The session has the real tools and the real system prompt; one model config per
//! provider (OpenAI Chat Completions and Anthropic Messages); nothing is sent.
//!
//! Target: median under 2 ms at 100k tokens.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem-agent --bench request_assembly
//! ```
//!
//! Without `--bench` on the command line (that is, under `cargo test --all-targets`) or with
//! `TANDEM_BENCH_QUICK=1`, it is a smoke run of a few samples per row.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fastrand::Rng;
use serde_json::json;
use tandem_agent::settings::AgentSettings;
use tandem_agent::store::{new_session_id, Record, SessionStore};
use tandem_agent::{AgentConfig, DiskEditor, Session};
use tandem_providers::{
    encode_request, ApiKey, Message, Model, ModelConfig, Part, ProviderKind, Role, ToolCall,
    ToolResult,
};

const SEED: u64 = 0x5EED_A55E_0B1E_0006;
const SIZES: [u64; 2] = [10_000, 100_000];
const ITERATIONS: [usize; 2] = [500, 300];
const WARMUP: usize = 20;
const QUICK_ITERATIONS: usize = 10;
const QUICK_WARMUP: usize = 2;
const TARGET_TOKENS: u64 = 100_000;
const TARGET_MEDIAN: Duration = Duration::from_millis(2);

const WORDS: [&str; 24] = [
    "buffer", "count", "index", "state", "value", "result", "offset", "line", "token", "cache",
    "request", "handle", "config", "entry", "node", "range", "text", "input", "output", "error",
    "parser", "writer", "limit", "update",
];
const PROMPTS: [&str; 6] = [
    "Why does `parse_expr` return None on an empty input? Fix it and add a test.",
    "Rename `handle_entry` to `apply_entry` everywhere and keep the docs in step.",
    "The cache is never evicted when the limit is reached; find out why.",
    "Add a `--dry-run` flag to the writer that prints what it would change.",
    "Explain how a request flows from the handler to the parser, briefly.",
    "The offsets are off by one after a CRLF line; write a failing test first.",
];

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench")
        || std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let dir = tempfile::tempdir().expect("no temporary directory");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let store = SessionStore::for_workspace(&dir.path().join("state"), &root);

    let mut rows = Vec::new();
    for (size, iterations) in SIZES.into_iter().zip(ITERATIONS) {
        let (iterations, warmup) = if quick {
            (QUICK_ITERATIONS, QUICK_WARMUP)
        } else {
            (iterations, WARMUP)
        };
        let history = history(size, &mut Rng::with_seed(SEED ^ size));
        for provider in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
            rows.push(measure(
                &root, &store, &history, size, provider, iterations, warmup,
            ));
        }
    }

    println!(
        "request assembly: next_request + encode_request + session-file append of a message pair{}",
        if quick { ", QUICK" } else { "" }
    );
    println!(
        "{:<8} {:<10} {:>5} {:>9} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "history",
        "provider",
        "msgs",
        "body KiB",
        "n",
        "median ms",
        "p95 ms",
        "max ms",
        "next_req",
        "encode",
        "append"
    );
    for row in &rows {
        println!(
            "{:<8} {:<10} {:>5} {:>9.0} {:>6} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
            format!("{}k", row.tokens / 1000),
            row.provider.as_str(),
            row.messages,
            row.body_bytes as f64 / 1024.0,
            row.samples,
            ms(row.total.0),
            ms(row.total.1),
            ms(row.total.2),
            ms(row.next_request),
            ms(row.encode),
            ms(row.append),
        );
    }
    println!("(next_req, encode, append: median of each step alone)");
    let worst = rows
        .iter()
        .filter(|row| row.tokens >= TARGET_TOKENS)
        .map(|row| row.total.0)
        .max()
        .unwrap_or_default();
    println!();
    println!(
        "target median < {:.1} ms at {}k tokens: worst {:.3} ms  {}",
        ms(TARGET_MEDIAN),
        TARGET_TOKENS / 1000,
        ms(worst),
        if worst < TARGET_MEDIAN {
            "PASS"
        } else {
            "FAIL"
        }
    );
}

struct Row {
    tokens: u64,
    provider: ProviderKind,
    messages: usize,
    body_bytes: usize,
    samples: usize,
    /// Median, p95 and max of the whole sample.
    total: (Duration, Duration, Duration),
    /// Medians of the steps alone.
    next_request: Duration,
    encode: Duration,
    append: Duration,
}

fn measure(
    root: &std::path::Path,
    store: &SessionStore,
    history: &[Message],
    tokens: u64,
    provider: ProviderKind,
    iterations: usize,
    warmup: usize,
) -> Row {
    let mut config = ModelConfig::new(provider, "m", "http://127.0.0.1:9");
    // Anthropic's format requires a key; nothing is ever sent with it.
    config.api_key = Some(ApiKey::new("bench-key"));
    let settings = AgentSettings::default();
    let ctx = tandem_agent::setup::tool_context(
        vec![root.to_owned()],
        &settings,
        Arc::new(DiskEditor),
        None,
    );
    let agent = AgentConfig {
        system_prompt: tandem_agent::prompt::system_prompt(&settings.system_prompt, None).unwrap(),
        ..AgentConfig::default()
    };
    let mut session = Session::new(
        Model::new(config.clone()).unwrap(),
        tandem_agent::tools::all(),
        ctx,
        agent,
    );
    session.replace_history(history.to_vec());
    let mut log = store
        .create(&new_session_id(), root, "m")
        .expect("could not create the session file");
    let pair = [
        Record::Message {
            message: history[history.len() - 2].clone(),
        },
        Record::Message {
            message: history[history.len() - 1].clone(),
        },
    ];

    let mut totals = Vec::with_capacity(iterations);
    let mut next_requests = Vec::with_capacity(iterations);
    let mut encodes = Vec::with_capacity(iterations);
    let mut appends = Vec::with_capacity(iterations);
    let mut body_bytes = 0;
    for i in 0..warmup + iterations {
        let started = Instant::now();
        let request = session.next_request();
        let built = Instant::now();
        let body = encode_request(&config, black_box(&request)).expect("an HTTP provider");
        let encoded = Instant::now();
        for record in &pair {
            log.append(record)
                .expect("could not append to the session file");
        }
        let appended = Instant::now();
        body_bytes = black_box(body).len();
        drop(request);
        if i >= warmup {
            totals.push(appended - started);
            next_requests.push(built - started);
            encodes.push(encoded - built);
            appends.push(appended - encoded);
        }
    }
    for samples in [&mut totals, &mut next_requests, &mut encodes, &mut appends] {
        samples.sort_unstable();
    }
    Row {
        tokens,
        provider,
        messages: history.len(),
        body_bytes,
        samples: totals.len(),
        total: (
            percentile(&totals, 0.50),
            percentile(&totals, 0.95),
            percentile(&totals, 1.0),
        ),
        next_request: percentile(&next_requests, 0.50),
        encode: percentile(&encodes, 0.50),
        append: percentile(&appends, 0.50),
    }
}

/// A working session's history of at least `target` estimated tokens: prompts, then rounds of
/// assistant text with tool calls and their results, then an answer; it ends on tool results.
fn history(target: u64, rng: &mut Rng) -> Vec<Message> {
    let mut history = Vec::new();
    let mut tokens = 0;
    let mut calls = 0usize;
    let mut push = |history: &mut Vec<Message>, message: Message| {
        tokens += tandem_agent::tokens::estimate_message(&message);
        history.push(message);
        tokens
    };
    loop {
        push(&mut history, prompt(rng));
        for _ in 0..rng.usize(1..=4) {
            let words = rng.usize(8..30);
            let mut parts = vec![Part::Text {
                text: sentence(rng, words),
            }];
            let mut results = Vec::new();
            for _ in 0..rng.usize(1..=3) {
                calls += 1;
                let id = format!("call_{calls:05}");
                let module = format!("src/{}_{}.rs", pick(rng, &WORDS), rng.u8(..20));
                let (name, arguments) = if rng.bool() {
                    let start = rng.usize(1..300);
                    (
                        "read_file",
                        json!({"path": module, "start_line": start, "end_line": start + 120}),
                    )
                } else {
                    (
                        "grep",
                        json!({"pattern": format!("fn {}_\\w+", pick(rng, &WORDS)), "include": "*.rs"}),
                    )
                };
                parts.push(Part::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.to_owned(),
                    arguments,
                    signature: None,
                }));
                let bytes = rng.usize(1024..=8192);
                results.push(Part::ToolResult(ToolResult {
                    call_id: id,
                    name: name.to_owned(),
                    content: numbered_source(rng, &module, bytes),
                    is_error: false,
                }));
            }
            push(
                &mut history,
                Message {
                    role: Role::Assistant,
                    parts,
                },
            );
            if push(
                &mut history,
                Message {
                    role: Role::User,
                    parts: results,
                },
            ) >= target
            {
                return history;
            }
        }
        let words = rng.usize(40..100);
        push(&mut history, Message::assistant(sentence(rng, words)));
    }
}

/// A user prompt as a front end with an editor sends it: the `<ide>` block, then the text.
fn prompt(rng: &mut Rng) -> Message {
    let line = rng.u32(1..400);
    let ide = format!(
        "<ide>\nActive file: src/{}_{}.rs (rust), cursor at line {line}, column {}\n\
         Symbol at cursor: impl {} › fn {}_{} (lines {line}-{})\n\
         Other open files (most recent first): src/{}.rs, src/{}.rs\n</ide>",
        pick(rng, &WORDS),
        rng.u8(..20),
        rng.u8(1..40),
        pick(rng, &WORDS),
        pick(rng, &WORDS),
        pick(rng, &WORDS),
        line + rng.u32(3..30),
        pick(rng, &WORDS),
        pick(rng, &WORDS),
    );
    Message {
        role: Role::User,
        parts: vec![
            Part::Text { text: ide },
            Part::Text {
                text: pick(rng, &PROMPTS).to_owned(),
            },
        ],
    }
}

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.usize(..from.len())]
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut text: Vec<&str> = (0..words).map(|_| pick(rng, &WORDS)).collect();
    text.push("done.");
    text.join(" ")
}

/// About `bytes` bytes of numbered Rust-like lines under a `read_file`-style header.
fn numbered_source(rng: &mut Rng, path: &str, bytes: usize) -> String {
    let first = rng.usize(1..300);
    let mut text = String::with_capacity(bytes + 128);
    let mut number = first;
    let mut depth = 0usize;
    let mut body = String::new();
    while body.len() < bytes {
        let indent = "    ".repeat(depth);
        let (a, b) = (pick(rng, &WORDS), pick(rng, &WORDS));
        let line = match rng.u8(..8) {
            0 if depth == 0 => {
                depth = 1;
                format!("pub fn {a}_{b}(&mut self, {a}: usize) -> Result<usize, Error> {{")
            }
            1 if depth > 0 && depth < 3 => {
                depth += 1;
                format!("{indent}if self.{a} > {b} {{")
            }
            2 if depth > 0 => {
                depth -= 1;
                format!("{}}}", "    ".repeat(depth))
            }
            3 => format!("{indent}// Keep the {a} in step with the {b}."),
            _ => format!(
                "{indent}let {a} = self.{b}.get({}).copied().unwrap_or_default();",
                rng.u32(..1000)
            ),
        };
        body.push_str(&format!("{number:>6}\t{line}\n"));
        number += 1;
    }
    text.push_str(&format!("{path} (lines {first}-{})\n", number - 1));
    text.push_str(&body);
    text
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
