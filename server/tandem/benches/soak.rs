//! Soak: a 1,000-turn session with automatic compression over real HTTP, to show that a long
//! session neither fails nor keeps growing. Each turn is one `Session::run_turn` with a short
//! prompt; the model (the test-support `ModelServer`, scripted by a responder) answers a prompt
//! with a `read_file` or `grep` call (alternately), the tool's result with a few hundred bytes of
//! text, and the compression request (recognised by `compress::SNAPSHOT_INSTRUCTION` in the body)
//! with a `<state_snapshot>` of about 1.5 KB. Every answer reports usage, `prompt_tokens` being a
//! quarter of the request body's bytes, so the session sees its 32k-token window fill and
//! compresses (at the default threshold, half the window).
//!
//! The session is set up as a front end sets one up: the real tools and system prompt, the
//! environment context with its repo map, yolo approval, an OpenAI-compatible model, and a saved
//! session (`SessionLog` under a temporary state directory). The workspace holds a few generated
//! Rust files of 80–200 lines.
//!
//! The model server runs in a child process (this binary again, with `--model-server`): it
//! records every request it receives, which would otherwise be counted as the session's memory.
//! Memory is measured in this process only: live and peak heap bytes from a counting global
//! allocator (peak since the last reset) and `VmRSS`/`VmHWM` from `/proc/self/status` (the
//! high-water mark is reset through `/proc/self/clear_refs` where the kernel allows it), after
//! turn 100 (peaks over turns 1–100) and after the last turn (peaks over turns 101–1,000).
//!
//! Target: no turn ends other than `end_turn`, and the heap peak over turns 101–1,000 within
//! 1.5× of the peak over turns 1–100.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem --bench soak
//! ```
//!
//! Without `--bench` on the command line (that is, under `cargo test --all-targets`) or with
//! `TANDEM_BENCH_QUICK=1`, it runs 300 turns and fails unless they all end well, at least one
//! compression happened, and the heap peak over turns 41–300 is within 1.5× of the peak over
//! turns 11–40. Its baseline starts after ten turns of warm-up (the first turn builds the repo
//! map; tables are built on first use) and spans several compressions, so it holds the largest
//! history the window allows. The 260 turns after it are enough for a leak of what one turn
//! adds to the history (about 7 KB) to fail the check (2.1×; over 110 turns it showed as 1.48×);
//! without a leak the ratio is 1.00–1.01×. Heap bytes are counted, not timed, so a loaded
//! machine changes nothing but how long it takes (about 8 s unloaded, in the test profile).

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fastrand::Rng;
use peak_alloc::PeakAlloc;
use serde_json::json;
use tandem_agent::settings::{AgentSettings, ContextSettings};
use tandem_agent::store::{new_session_id, SessionStore};
use tandem_agent::{
    AgentConfig, ApprovalMode, CompressionStatus, DiskEditor, Event, Prompt, Session, StopReason,
    TurnIo,
};
use tandem_providers::{CancellationToken, Model, ModelConfig, ProviderKind};
use tandem_test_support::{ModelServer, RecordedRequest, Reply};
use tokio::sync::mpsc;

#[global_allocator]
static HEAP: PeakAlloc = PeakAlloc;

const SEED: u64 = 0x50A4_0000_7E57_0007;
/// What a run measures: its turns, the turns before the baseline (whose memory is not
/// measured), and the last turn of the baseline, where the first memory figures are taken.
struct Plan {
    turns: usize,
    warm_up: usize,
    early: usize,
}

const FULL: Plan = Plan {
    turns: 1_000,
    warm_up: 0,
    early: 100,
};
const QUICK: Plan = Plan {
    turns: 300,
    warm_up: 10,
    early: 40,
};
const CONTEXT_WINDOW: u64 = 32_000;
const PEAK_RATIO_TARGET: f64 = 1.5;
/// The argument that makes this binary the model server.
const SERVE_ARG: &str = "--model-server";

const WORDS: [&str; 24] = [
    "buffer", "count", "index", "state", "value", "result", "offset", "line", "token", "cache",
    "request", "handle", "config", "entry", "node", "range", "text", "input", "output", "error",
    "parser", "writer", "limit", "update",
];
const FILES: [&str; 5] = [
    "src/lib.rs",
    "src/parser.rs",
    "src/cache.rs",
    "src/writer.rs",
    "src/config.rs",
];

fn main() {
    if std::env::args().any(|arg| arg == SERVE_ARG) {
        serve();
        return;
    }
    let quick = !std::env::args().any(|arg| arg == "--bench")
        || std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let plan = if quick { QUICK } else { FULL };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("could not start the tokio runtime");
    let report = runtime.block_on(soak(&plan));
    print_report(&report, &plan, quick);
    if quick {
        assert!(
            report.errors.is_empty(),
            "turns that did not end with end_turn: {:?}",
            report.errors
        );
        assert!(
            report.compressed > 0,
            "no compression in {} turns: the window never filled",
            plan.turns
        );
        let ratio = report
            .peak_ratio()
            .expect("the quick run measures a baseline");
        assert!(
            ratio <= PEAK_RATIO_TARGET,
            "the heap peak over turns {}-{} is {ratio:.2}x the peak over turns {}-{} (target: \
             within {PEAK_RATIO_TARGET}x): the session keeps growing",
            plan.early + 1,
            plan.turns,
            plan.warm_up + 1,
            plan.early
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The model server (child process)

/// Serves the scripted model on 127.0.0.1 until stdin closes; prints its URL first.
fn serve() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("could not start the model server's runtime");
    runtime.block_on(async {
        let server = ModelServer::start().await;
        let requests = AtomicUsize::new(0);
        let calls = AtomicUsize::new(0);
        server.respond_with(move |request| {
            respond(request, requests.fetch_add(1, Ordering::Relaxed), &calls)
        });
        println!("{}", server.url());
        std::io::stdout().flush().unwrap();
        // The parent closes our stdin when it is done (or dies).
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
    });
}

/// The model: a snapshot for the compression request, a text answer to tool results, a tool
/// call (alternately `read_file` and `grep`; `calls` counts them) to anything else.
fn respond(request: &RecordedRequest, n: usize, calls: &AtomicUsize) -> Reply {
    let mut rng = Rng::with_seed(SEED ^ n as u64);
    let prompt_tokens = request.body.len() / 4;
    // The instruction's first sentence has nothing JSON would escape, so it appears verbatim.
    let marker = tandem_agent::compress::SNAPSHOT_INSTRUCTION
        .split('.')
        .next()
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&request.body);
    if body.contains(marker) {
        return openai_sse(
            json!({"content": snapshot(&mut rng)}),
            "stop",
            prompt_tokens,
        );
    }
    let json = request.json();
    // The reminder (yolo mode is named in every one) follows tool results as a user message, so
    // what the request answers is told by the last message that is not the user's.
    let answers_tools = json["messages"]
        .as_array()
        .and_then(|messages| {
            messages
                .iter()
                .rev()
                .find(|message| message["role"] != "user")
        })
        .is_some_and(|message| message["role"] == "tool");
    if answers_tools {
        let words = rng.usize(40..90);
        return openai_sse(
            json!({"content": sentence(&mut rng, words)}),
            "stop",
            prompt_tokens,
        );
    }
    let call = calls.fetch_add(1, Ordering::Relaxed);
    let (name, arguments) = if call.is_multiple_of(2) {
        ("read_file", json!({"path": FILES[call / 2 % FILES.len()]}))
    } else {
        (
            "grep",
            json!({"pattern": format!("fn {}", WORDS[call % WORDS.len()]), "path": "src"}),
        )
    };
    let call = json!({
        "index": 0,
        "id": format!("call_{call}"),
        "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()},
    });
    openai_sse(json!({"tool_calls": [call]}), "tool_calls", prompt_tokens)
}

/// An OpenAI chat-completions stream: `delta`, the finish reason, then the usage chunk that
/// `stream_options.include_usage` asks for.
fn openai_sse(delta: serde_json::Value, finish: &str, prompt_tokens: usize) -> Reply {
    let mut delta = delta;
    delta["role"] = json!("assistant");
    let chunk = |choices: serde_json::Value| json!({"id": "chatcmpl-soak", "object": "chat.completion.chunk", "choices": choices});
    let mut usage = chunk(json!([]));
    usage["usage"] = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 50,
        "total_tokens": prompt_tokens + 50,
    });
    let events = [
        chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}])),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}])),
        usage,
    ];
    let mut body: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    body.push_str("data: [DONE]\n\n");
    Reply::sse(body)
}

/// A state snapshot of about 1.5 KB in the structure the instruction asks for.
fn snapshot(rng: &mut Rng) -> String {
    let bullets = |rng: &mut Rng, count: usize| -> String {
        (0..count)
            .map(|_| {
                let words = rng.usize(8..16);
                format!("- {}\n", sentence(rng, words))
            })
            .collect()
    };
    format!(
        "<state_snapshot>\n<overall_goal>Keep the parser, cache and writer modules consistent \
         while the user asks about them.</overall_goal>\n<key_knowledge>\n{}</key_knowledge>\n\
         <file_system_state>\n{}</file_system_state>\n<recent_actions>\n{}</recent_actions>\n\
         <current_plan>\n1. [DONE] Read the modules.\n2. [IN PROGRESS] Answer the questions.\n\
         3. [TODO] Summarise.\n</current_plan>\n</state_snapshot>",
        bullets(rng, 5),
        FILES
            .iter()
            .map(|file| format!("- {file}: read, unchanged.\n"))
            .collect::<String>(),
        bullets(rng, 5),
    )
}

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut text: Vec<&str> = (0..words)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect();
    text.push("done.");
    text.join(" ")
}

// ---------------------------------------------------------------------------------------------
// The session

struct Memory {
    /// Live heap bytes now, and the heap's peak since the last reset.
    live: usize,
    peak: usize,
    /// `VmRSS` and `VmHWM` in KiB, where `/proc` has them.
    rss_kib: Option<(u64, u64)>,
}

struct Report {
    turns: usize,
    wall: Duration,
    /// One per turn.
    turn_times: Vec<Duration>,
    compressed: usize,
    /// Compressions that ended otherwise (skipped, failed, inflated).
    not_compressed: Vec<String>,
    /// (turn, stop reason, message) of each turn that did not end with `end_turn`.
    errors: Vec<(usize, StopReason, Option<String>)>,
    setup: Memory,
    early: Option<Memory>,
    last: Memory,
    /// Whether `VmHWM` could be reset, so that it is a peak over the same turns as the heap's.
    hwm_reset: bool,
    history_messages: usize,
    session_file_bytes: u64,
}

impl Report {
    /// The heap peak over the turns after the baseline, against the baseline's.
    fn peak_ratio(&self) -> Option<f64> {
        let early = self.early.as_ref()?;
        Some(self.last.peak as f64 / early.peak.max(1) as f64)
    }
}

async fn soak(plan: &Plan) -> Report {
    let turns = plan.turns;
    let mut server = Command::new(std::env::current_exe().expect("no path to this binary"))
        .arg(SERVE_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("could not start the model server process");
    let mut url = String::new();
    BufReader::new(server.stdout.take().expect("piped stdout"))
        .read_line(&mut url)
        .expect("no URL from the model server process");
    let url = url.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");

    let dir = tempfile::tempdir().expect("no temporary directory");
    let root = std::fs::canonicalize(dir.path()).unwrap().join("ws");
    write_workspace(&root);

    let mut session = session(&root, &url);
    let store = SessionStore::for_workspace(&dir.path().join("state"), &root);
    let log = store
        .create(&new_session_id(), &root, "soak-model")
        .expect("could not create the session file");
    let log_path = log.path().to_owned();
    session.set_log(log);

    let (events_tx, mut events) = mpsc::unbounded_channel();
    let (_approve, mut approvals) = mpsc::unbounded_channel();
    let mut turn_times = Vec::with_capacity(turns);
    let mut compressed = 0;
    let mut not_compressed = Vec::new();
    let mut errors = Vec::new();
    let mut early = None;
    let hwm_reset = reset_peaks();
    let setup = memory();
    let started = Instant::now();
    for turn in 1..=turns {
        let prompt = format!(
            "Turn {turn}: what does {} do with its {}?",
            FILES[turn % FILES.len()],
            WORDS[turn % WORDS.len()]
        );
        let mut io = TurnIo {
            events: &events_tx,
            approvals: &mut approvals,
            cancel: CancellationToken::new(),
        };
        let turn_started = Instant::now();
        let reason = session.run_turn(Prompt::text(prompt), &mut io).await;
        turn_times.push(turn_started.elapsed());
        let mut message = None;
        while let Ok(event) = events.try_recv() {
            match event {
                Event::Compression(report) => match report.status {
                    CompressionStatus::Compressed => compressed += 1,
                    status => not_compressed.push(format!(
                        "turn {turn}: {status:?}: {}",
                        report.message.unwrap_or_default()
                    )),
                },
                Event::TurnFinished {
                    message: finished, ..
                } => message = finished,
                _ => {}
            }
        }
        if reason != StopReason::EndTurn {
            errors.push((turn, reason, message));
        }
        if turn == plan.warm_up {
            reset_peaks();
        }
        if turn == plan.early && turns > plan.early {
            early = Some(memory());
            reset_peaks();
        }
    }
    let wall = started.elapsed();
    let last = memory();
    let history_messages = session.history().len();
    drop(session);
    let session_file_bytes = std::fs::metadata(&log_path).map_or(0, |meta| meta.len());

    // Closing its stdin ends the server process.
    drop(server.stdin.take());
    server
        .wait()
        .expect("the model server process did not exit");
    Report {
        turns,
        wall,
        turn_times,
        compressed,
        not_compressed,
        errors,
        setup,
        early,
        last,
        hwm_reset,
        history_messages,
        session_file_bytes,
    }
}

/// A session as a front end sets one up, with yolo approval and a 32k-token window.
fn session(root: &Path, url: &str) -> Session {
    let mut config = ModelConfig::new(ProviderKind::OpenAi, "soak-model", format!("{url}/v1"));
    config.idle_timeout = Duration::from_secs(30);
    let settings = AgentSettings::default();
    let ctx = tandem_agent::setup::tool_context(
        vec![root.to_owned()],
        &settings,
        Arc::new(DiskEditor),
        None,
    );
    let mut agent = AgentConfig {
        system_prompt: tandem_agent::prompt::system_prompt(&settings.system_prompt, None).unwrap(),
        environment: Some(tandem_agent::environment::environment_context(
            ctx.workspace.roots(),
            &tandem_agent::setup::today(),
            Some(&config),
        )),
        context: ContextSettings {
            context_window: Some(CONTEXT_WINDOW),
            ..ContextSettings::default()
        },
        ..AgentConfig::default()
    };
    agent.approval.mode = ApprovalMode::Yolo;
    Session::new(
        Model::new(config).expect("the model config is valid"),
        tandem_agent::tools::all(),
        ctx,
        agent,
    )
}

/// A few Rust files of 80–200 lines, the same on every run.
fn write_workspace(root: &Path) {
    let rng = &mut Rng::with_seed(SEED);
    for (index, file) in FILES.iter().enumerate() {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let lines = rng.usize(80..=200);
        let mut text = format!("//! Module {index} of the soak workspace.\n\n");
        let mut depth = 0usize;
        for _ in 0..lines {
            let indent = "    ".repeat(depth);
            let (a, b) = (
                WORDS[rng.usize(..WORDS.len())],
                WORDS[rng.usize(..WORDS.len())],
            );
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
            text.push_str(&line);
            text.push('\n');
        }
        while depth > 0 {
            depth -= 1;
            text.push_str(&format!("{}}}\n", "    ".repeat(depth)));
        }
        std::fs::write(path, text).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Memory

fn memory() -> Memory {
    Memory {
        live: HEAP.current_usage(),
        peak: HEAP.peak_usage(),
        rss_kib: proc_status(),
    }
}

/// Starts a new peak for the heap and, where the kernel allows it, for `VmHWM`.
fn reset_peaks() -> bool {
    HEAP.reset_peak_usage();
    // "5" resets the peak resident set size (Linux 4.0 and later).
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `(VmRSS, VmHWM)` of this process in KiB.
fn proc_status() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    };
    Some((field("VmRSS")?, field("VmHWM")?))
}

// ---------------------------------------------------------------------------------------------
// Report

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

fn row(metric: &str, value: &str, target: &str, result: &str) {
    let line = format!("{metric:<44} {value:>14}  {target:<12} {result}");
    println!("{}", line.trim_end());
}

fn memory_rows(label: &str, memory: &Memory, hwm_reset: bool) {
    row(
        &format!("heap live / peak, {label}"),
        &format!("{:.1}/{:.1} MiB", mib(memory.live), mib(memory.peak)),
        "",
        "",
    );
    if let Some((rss, hwm)) = memory.rss_kib {
        row(
            &format!(
                "VmRSS / VmHWM{}, {label}",
                if hwm_reset { "" } else { " (since start)" }
            ),
            &format!("{:.1}/{:.1} MiB", rss as f64 / 1024.0, hwm as f64 / 1024.0),
            "",
            "",
        );
    }
}

fn print_report(report: &Report, plan: &Plan, quick: bool) {
    let mut times = report.turn_times.clone();
    times.sort_unstable();
    let at = |p: f64| {
        let rank = ((p * times.len() as f64).ceil() as usize).clamp(1, times.len());
        times[rank - 1]
    };
    println!(
        "soak: {} turns, compression on, context window {CONTEXT_WINDOW} tokens, real HTTP{}",
        report.turns,
        if quick { ", QUICK" } else { "" }
    );
    row("metric", "value", "target", "result");
    row(&"-".repeat(44), &"-".repeat(14), &"-".repeat(12), "------");
    row(
        "turns not ending with end_turn",
        &report.errors.len().to_string(),
        "0",
        verdict(report.errors.is_empty()),
    );
    row("compressions", &report.compressed.to_string(), "", "");
    row(
        "compressions skipped, failed or inflated",
        &report.not_compressed.len().to_string(),
        "",
        "",
    );
    row(
        "wall time",
        &format!("{:.2} s", report.wall.as_secs_f64()),
        "",
        "",
    );
    row(
        "turn time, median / p95 / max",
        &format!(
            "{:.1}/{:.1}/{:.0} ms",
            ms(at(0.5)),
            ms(at(0.95)),
            ms(at(1.0))
        ),
        "",
        "",
    );
    memory_rows("after setup", &report.setup, report.hwm_reset);
    let baseline = format!("turns {}-{}", plan.warm_up + 1, plan.early);
    match (&report.early, report.peak_ratio()) {
        (Some(early), Some(ratio)) => {
            memory_rows(&baseline, early, report.hwm_reset);
            memory_rows(
                &format!("turns {}-{}", plan.early + 1, report.turns),
                &report.last,
                report.hwm_reset,
            );
            row(
                &format!("heap peak, later turns / {baseline}"),
                &format!("{ratio:.2}x"),
                &format!("<= {PEAK_RATIO_TARGET}x"),
                verdict(ratio <= PEAK_RATIO_TARGET),
            );
        }
        _ => memory_rows(
            &format!("turns {}-{}", plan.warm_up + 1, report.turns),
            &report.last,
            report.hwm_reset,
        ),
    }
    row(
        "history messages at the end",
        &report.history_messages.to_string(),
        "",
        "",
    );
    row(
        "session file size",
        &format!(
            "{:.1} MiB",
            report.session_file_bytes as f64 / (1024.0 * 1024.0)
        ),
        "",
        "",
    );
    for (turn, reason, message) in report.errors.iter().take(5) {
        println!(
            "turn {turn} ended {reason:?}: {}",
            message.as_deref().unwrap_or("")
        );
    }
    for line in report.not_compressed.iter().take(5) {
        println!("compression at {line}");
    }
}
