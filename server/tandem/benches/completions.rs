//! Inline completions: what the server adds to a suggestion's latency, and what a fast typist
//! costs the model. The language server runs in process, driven like an editor drives it, with
//! the scripted model server on 127.0.0.1 as the completion model.
//!
//! 1. **Assembly**: the text around the cursor taken from the rope, the context comments (the
//!    definitions of names near the cursor are not looked up here), the prefix and suffix, the
//!    request body, and the answer shaped and checked by the syntax guard — the server's own
//!    work for a request, model and transport excluded — on a 10 MB file. Target: p99 under
//!    5 ms.
//! 2. **Round trip**: `textDocument/inlineCompletion` answered through LSP with a model that
//!    answers at once (`debounceMs` 0), on a 10 MB file (too large for a syntax tree), on a
//!    256 KB file with its tree and a keystroke before each request (the request starts the
//!    tree's incremental reparse in the background), and in a workspace of 20,000 files whose symbol index
//!    is built (so the definitions are looked up in it). This is the overhead plus one HTTP
//!    exchange on 127.0.0.1. Target: p99 under 5 ms.
//! 3. **Burst**: 30 keystrokes 20 ms apart, each followed by a request (as an editor that asks
//!    on every keystroke does), against a model that takes 300 ms: the model requests started,
//!    and the time from the last keystroke to its suggestion, with the default debounce (75 ms)
//!    and without one.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem --bench completions
//! ```
//!
//! With `TANDEM_BENCH_LSP_AI` naming an lsp-ai binary, the burst also runs against it
//! (`peers.rs`).
//!
//! Without `--bench` (under `cargo test --benches`) or with `TANDEM_BENCH_QUICK=1`: a 1 MB file,
//! 2,000 files and fewer samples, on the debug build, whose timings mean nothing; the run fails
//! if a request gets no suggestion or the debounce lets more than one model request through.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_agent::completion::shape::{self, Around, DEFAULT_PREFIX_CHARS, DEFAULT_SUFFIX_CHARS};
use tandem_agent::completion::{context, Neighbour};
use tandem_providers::fim::{FimApi, FimModel, FimRequest};
use tandem_test_support::reference::Pos;
use tandem_test_support::{completion_settings, FakeEditor, ModelServer, Reply, Step};

#[path = "completions/peers.rs"]
mod peers;

const TARGET_P99: Duration = Duration::from_millis(5);
/// The file whose tree each request brings up to date (the largest such: `MAX_CATCH_UP_BYTES`
/// in the language server's `completion.rs`).
const TREE_FILE_BYTES: usize = 256 << 10;
/// The file of the burst; the keystrokes type after `let x = `.
const BURST_TEXT: &str = "fn main() {\n    let x = \n}\n";

fn main() {
    let quick = !std::env::args().any(|arg| arg == "--bench")
        || std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let (file_bytes, files, samples) = if quick {
        (1 << 20, 2_000, 50)
    } else {
        (10 << 20, 20_000, 500)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let big = big_file(file_bytes);
    let mut over = Vec::new();

    println!("| measure | samples | p50 | p99 | target |");
    println!("| --- | --- | --- | --- | --- |");
    let assembly = assembly_times(&big, samples * 4);
    report(
        &format!("assembly, {} file", size(file_bytes)),
        &assembly,
        Some(TARGET_P99),
        &mut over,
    );
    let [big_file_trip, tree_file_trip, workspace_trip] =
        runtime.block_on(round_trips(&big, files, samples));
    report(
        &format!("round trip, {} file", size(file_bytes)),
        &big_file_trip,
        Some(TARGET_P99),
        &mut over,
    );
    report(
        &format!(
            "round trip, {} file with its syntax tree, a keystroke before each",
            size(TREE_FILE_BYTES.min(file_bytes))
        ),
        &tree_file_trip,
        Some(TARGET_P99),
        &mut over,
    );
    report(
        &format!("round trip, {files} files indexed"),
        &workspace_trip,
        Some(TARGET_P99),
        &mut over,
    );

    println!();
    println!("| burst of 30 keystrokes, 20 ms apart, model 300 ms | model requests started | of them cancelled | last keystroke → suggestion |");
    println!("| --- | --- | --- | --- |");
    for debounce in [75, 0] {
        let burst = runtime.block_on(burst(debounce));
        if debounce > 0 {
            // A pause between keystrokes longer than the debounce (a loaded machine stalling
            // the typing) rightly lets one more request through; nothing else may.
            let allowed = 1 + burst.pauses_over(Duration::from_millis(debounce));
            assert!(
                (1..=allowed).contains(&burst.model_requests),
                "the debounce let {} requests through (at most {allowed} for the typing's pauses)",
                burst.model_requests
            );
        }
        print_burst(&format!("Tandem, `debounceMs` {debounce}"), &burst);
    }
    if let Ok(binary) = std::env::var("TANDEM_BENCH_LSP_AI") {
        // lsp-ai's default is one model request a second; 50 is as good as no limit here.
        for rate in [1.0, 50.0] {
            let burst = runtime.block_on(async {
                let model = slow_model().await;
                peers::lsp_ai_burst(&binary, &model, rate).await
            });
            print_burst(
                &format!("lsp-ai 0.7.0, `max_requests_per_second` {rate}"),
                &burst,
            );
        }
    }
    // Debug-build timings say nothing about the targets: the quick run checks what happened.
    if !quick && !over.is_empty() {
        println!("\npast the target: {}", over.join(", "));
    }
}

/// A Rust file of about `bytes`, with a function per 13 lines, each with a statement to finish
/// (`let total = `, line 3 of 13).
fn big_file(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 1024);
    let mut n = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "/// Adds the {n}th pair.\npub fn add_{n}(left: u64, right: u64) -> u64 {{\n    let sum = left + right;\n    let total = \n    if sum > {n} {{\n        return sum - {n};\n    }}\n    sum\n}}\n\n#[test]\nfn adds_{n}() {{ assert_eq!(add_{n}(1, 2), 3); }}\n\n"
        ));
        n += 1;
    }
    text
}

fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MB", bytes >> 20)
    } else {
        format!("{} KB", bytes >> 10)
    }
}

/// The server's own work for one request in the middle of `text`, timed `samples` times.
fn assembly_times(text: &str, samples: usize) -> Vec<Duration> {
    let rope = ropey::Rope::from_str(text);
    let neighbour = Neighbour {
        path: "src/other.rs".to_owned(),
        text: text.chars().take(100_000).collect(),
    };
    let config = tandem_providers::settings::Settings::default()
        .resolve_model(Some("openai:coder"), &|_| None)
        .map(|mut config| {
            config.base_url = "http://127.0.0.1:9/v1".to_owned();
            config
        })
        .unwrap();
    let model = FimModel::new(config, FimApi::Completions).unwrap();
    let mut times = Vec::with_capacity(samples);
    for sample in 0..samples {
        // A different cursor each time, so nothing is cached by accident.
        let cursor = rope.len_chars() / 3 + sample * 97;
        let start = Instant::now();
        let from = cursor.saturating_sub(DEFAULT_PREFIX_CHARS);
        let to = (cursor + DEFAULT_SUFFIX_CHARS).min(rope.len_chars());
        let around = Around {
            before: rope.slice(from..cursor).to_string(),
            after: rope.slice(cursor..to).to_string(),
            starts_at_boundary: from == 0,
            ends_at_boundary: to == rope.len_chars(),
        };
        let snippets = context::similar_snippets(&around.before, std::slice::from_ref(&neighbour));
        let comments = context::render("//", &snippets, &[]);
        let (prefix, suffix) = shape::fim_parts(&around, "src/big.rs", "rust", &comments);
        let request = FimRequest {
            prefix,
            suffix,
            max_tokens: 128,
            stop: vec!["\n".to_owned()],
            path: "src/big.rs".to_owned(),
            language: "rust".to_owned(),
        };
        let body = serde_json::to_vec(&model.http_request(&request).unwrap().body).unwrap();
        let multiline = shape::multiline_allowed(&around);
        let shaped = shape::shape("left.saturating_add(right);\n}", &around, multiline)
            .filter(|text| !shape::adds_syntax_errors(text, &around, "rust", "src/big.rs"));
        std::hint::black_box((body, shaped));
        times.push(start.elapsed());
    }
    times
}

fn settings(model: &ModelServer, debounce_ms: u64) -> Value {
    completion_settings(
        model,
        json!({"api": "completions", "debounceMs": debounce_ms}),
    )
}

fn answer() -> Reply {
    Reply::json(200, &json!({"choices": [{"text": "sum;"}]}).to_string())
}

/// Round trips on the big file, then in a workspace of `files` files with its index built.
async fn round_trips(big: &str, files: usize, samples: usize) -> [Vec<Duration>; 3] {
    let model = ModelServer::start().await;
    model.respond_with(|_| answer());
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .settings(settings(&model, 0))
        .start()
        .await;
    let uri = editor.open("src/big.rs", big).await;
    let lines = big.lines().count() as u32;
    let mut big_file = Vec::with_capacity(samples);
    for sample in 0..samples as u32 {
        // After `    let total = `.
        let line = (lines / 3 + sample * 13) / 13 * 13 + 3;
        let start = Instant::now();
        let result = editor.request_inline_completion(&uri, line, 16).await;
        big_file.push(start.elapsed());
        assert!(!result.is_null(), "no suggestion at line {line}");
    }
    drop(editor);

    // A file small enough to have a syntax tree: a keystroke before each request, so each
    // request finds the tree behind and starts its incremental reparse in the background.
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .settings(settings(&model, 0))
        .start()
        .await;
    let parsed = &big[..big.len().min(TREE_FILE_BYTES)];
    let parsed = &parsed[..parsed.rfind("\n\n").unwrap() + 2];
    let uri = editor.open("src/parsed.rs", parsed).await;
    let lines = parsed.lines().count() as u32;
    // The first request starts the first (full) parse, in the background: it takes tens of
    // milliseconds, and is left to finish before the samples.
    editor.request_inline_completion(&uri, 3, 16).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut tree_file = Vec::with_capacity(samples);
    for sample in 0..samples as u32 {
        let line = (lines / 3 + sample * 13) / 13 * 13 + 3;
        editor
            .type_at(
                &uri,
                Pos {
                    line,
                    character: 16,
                },
                "x",
            )
            .await;
        let start = Instant::now();
        let result = editor.request_inline_completion(&uri, line, 17).await;
        tree_file.push(start.elapsed());
        assert!(!result.is_null(), "no suggestion at line {line}");
        // The next keystroke comes a fast typist's interval later; the reparse this one
        // started runs meanwhile, as it does between real keystrokes.
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    drop(editor);

    let workspace = tempfile::tempdir().unwrap();
    for n in 0..files {
        let dir = workspace.path().join(format!("src/m{}", n / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{n}.rs")),
            format!("pub fn helper_{n}(left: u64, right: u64) -> u64 {{\n    left * right + {n}\n}}\n\npub struct Thing{n} {{ pub value: u64 }}\n"),
        )
        .unwrap();
    }
    let editor = FakeEditor::rich()
        .inline_completion(true)
        .workspace(workspace.path())
        .settings(settings(&model, 0))
        .start()
        .await;
    let indexed = Instant::now();
    loop {
        let status = editor
            .request("tandem/debug/status", json!({}))
            .await
            .unwrap();
        if status["index"]["files"].as_u64().unwrap_or(0) >= files as u64
            && status["index"]["background"]["running"] == 0
        {
            break;
        }
        assert!(
            indexed.elapsed() < Duration::from_secs(600),
            "the index never filled: {status}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "<!-- {files} files indexed in {:.1} s -->",
        indexed.elapsed().as_secs_f64()
    );
    // Two documents in turn: a request right after one for the same place would be answered
    // from the last suggestion, without the work measured here.
    let text = "fn main() {\n    let product = helper_7(Thing3 { value: 2 }.value, 4);\n    let x = product + \n}\n";
    let uris = [
        editor.open("src/main.rs", text).await,
        editor.open("src/other.rs", text).await,
    ];
    let mut workspace_trip = Vec::with_capacity(samples);
    for sample in 0..samples {
        let start = Instant::now();
        let result = editor
            .request_inline_completion(&uris[sample % 2], 2, 22)
            .await;
        workspace_trip.push(start.elapsed());
        assert!(!result.is_null());
    }
    [big_file, tree_file, workspace_trip]
}

/// A model that takes 300 ms to answer.
async fn slow_model() -> ModelServer {
    let model = ModelServer::start().await;
    model.respond_with(|_| {
        let mut reply = answer();
        reply
            .steps
            .insert(0, Step::Pause(Duration::from_millis(300)));
        reply
    });
    model
}

/// What one burst cost: model requests started, how many of them the server cancelled (closed
/// before the model answered), and the time from the last keystroke to the answer to the last
/// request.
struct Burst {
    model_requests: usize,
    cancelled: usize,
    latency: Duration,
    /// The time between each keystroke and the next, as typed.
    gaps: Vec<Duration>,
}

impl Burst {
    /// How many pauses between keystrokes were longer than `debounce`.
    fn pauses_over(&self, debounce: Duration) -> usize {
        self.gaps.iter().filter(|gap| **gap > debounce).count()
    }
}

fn print_burst(name: &str, burst: &Burst) {
    println!(
        "| {name} | {} | {} | {:.0} ms |",
        burst.model_requests,
        burst.cancelled,
        burst.latency.as_secs_f64() * 1000.0
    );
}

/// 30 keystrokes 20 ms apart against a 300 ms model: model requests started, and the time from
/// the last keystroke to its suggestion.
async fn burst(debounce_ms: u64) -> Burst {
    let model = slow_model().await;
    let editor = std::sync::Arc::new(
        FakeEditor::rich()
            .inline_completion(true)
            .settings(settings(&model, debounce_ms))
            .start()
            .await,
    );
    let uri = editor.open("src/main.rs", BURST_TEXT).await;
    let mut pending = Vec::new();
    let mut last_keystroke = Instant::now();
    let mut gaps = Vec::new();
    for n in 0..30u32 {
        editor
            .type_at(
                &uri,
                Pos {
                    line: 1,
                    character: 12 + n,
                },
                "a",
            )
            .await;
        if n > 0 {
            gaps.push(last_keystroke.elapsed());
        }
        last_keystroke = Instant::now();
        let editor = std::sync::Arc::clone(&editor);
        let uri = uri.clone();
        pending.push(tokio::spawn(async move {
            let result = editor.request_inline_completion(&uri, 1, 13 + n).await;
            (Instant::now(), result)
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut results = Vec::new();
    for task in pending {
        results.push(task.await.unwrap());
    }
    let (answered, last) = results.last().cloned().unwrap();
    assert!(!last.is_null(), "the last keystroke got no suggestion");
    Burst {
        model_requests: model.request_count(),
        cancelled: model.disconnect_count(),
        latency: answered.duration_since(last_keystroke),
        gaps,
    }
}

fn percentile(times: &mut [Duration], fraction: f64) -> Duration {
    times.sort_unstable();
    let index = ((times.len() as f64 * fraction).ceil() as usize).saturating_sub(1);
    times[index.min(times.len() - 1)]
}

fn report(name: &str, times: &[Duration], target: Option<Duration>, over: &mut Vec<String>) {
    let mut times = times.to_vec();
    let p50 = percentile(&mut times, 0.5);
    let p99 = percentile(&mut times, 0.99);
    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    println!(
        "| {name} | {} | {} | {} | {} |",
        times.len(),
        ms(p50),
        ms(p99),
        target.map_or("-".to_owned(), ms)
    );
    if target.is_some_and(|target| p99 > target) {
        over.push(format!("{name} p99 {}", ms(p99)));
    }
}
