//! The real `tandem` binary as an editor launches it: how fast `tandem lsp` answers `initialize`,
//! and how much memory it holds once many documents are open.
//!
//! 1. **Startup**: the time from spawning `tandem lsp --log-file -` (stderr to null) to reading
//!    the `initialize` response on its stdout. The request is written on the child's stdin right
//!    after the spawn and the response frame is read by hand, so the interval holds nothing but
//!    the process start (exec, dynamic loading, argument parsing, logging and runtime setup) and
//!    the first round trip. Every run is a fresh process, ended with `shutdown` + `exit` and
//!    waited for after the measurement; one unmeasured run warms the page cache first. The table
//!    gives median, p90 and max in milliseconds; target: median under 30 ms. For scale it also
//!    shows how long `spawn()` itself takes and how long `tandem --version` takes to run to exit
//!    (process start without any server).
//! 2. **Memory** (Linux only, it reads `/proc/<pid>/status`): one `tandem lsp` is initialized,
//!    then given 200 distinct source-like documents of 50 KB each (ASCII with a few multi-byte
//!    chars, deterministic from a fixed seed) by `didOpen`; a `tandem/debug/status` request must
//!    list all 200 before `VmRSS` and `VmHWM` are read. The resident size right after
//!    `initialize` is the baseline, so the per-document cost shows. Target: RSS after the 200
//!    documents under 80 MiB.
//! 3. **A flood of requests nobody reads** (Linux only): 50,000 `tandem/debug/status` requests
//!    written back to back while the answers are left unread, as a stuck client would. Once the
//!    writing stops (all written, or the server stopped reading: no progress for half a second)
//!    `VmRSS` is read, then every answer, then `VmRSS` again. Target: under 40 MiB while flooded
//!    (the server bounds the requests it handles at once and stops reading past it).
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem --bench lsp_process
//! ```
//!
//! Set `TANDEM_BENCH_QUICK=1` for a smoke run with 5 startup iterations instead of 50.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use fastrand::Rng;
use serde_json::{json, Value};
use tandem_test_support::{TestClient, TIMEOUT};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const BIN: &str = env!("CARGO_BIN_EXE_tandem");
const SEED: u64 = 0x7A4D_E3B1_5EED_0002;

const STARTUP_RUNS: usize = 50;
const STARTUP_RUNS_QUICK: usize = 5;
const STARTUP_TARGET_MS: f64 = 30.0;

const DOCUMENTS: usize = 200;
const DOCUMENT_BYTES: usize = 50 * 1024;
const RSS_TARGET_MIB: f64 = 80.0;

const FLOOD: usize = 50_000;
const FLOOD_QUICK: usize = 5_000;
const FLOOD_TARGET_MIB: f64 = 40.0;

fn main() {
    let quick = std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let runs = if quick {
        STARTUP_RUNS_QUICK
    } else {
        STARTUP_RUNS
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("could not start the tokio runtime");
    runtime.block_on(async {
        println!("tandem lsp process benchmark");
        println!("binary: {BIN}");
        println!();
        let startup = startup(runs).await;
        let memory = memory().await;
        print_table(runs, &startup, memory.as_ref());
        let requests = if quick { FLOOD_QUICK } else { FLOOD };
        match flood(requests).await {
            None => println!("flood: not measured (needs /proc)"),
            Some(flood) => {
                let mib = |kib: u64| kib as f64 / 1024.0;
                let flooded = mib(flood.flooded_rss_kib);
                row(
                    &format!(
                        "RSS with {} of {requests} requests unread ({})",
                        flood.written,
                        if flood.written == requests {
                            "all written"
                        } else {
                            "server stopped reading"
                        }
                    ),
                    &format!("{flooded:.1} MiB"),
                    &format!("< {FLOOD_TARGET_MIB:.0} MiB"),
                    verdict(flooded < FLOOD_TARGET_MIB),
                );
                row(
                    "RSS after every answer was read",
                    &format!("{:.1} MiB", mib(flood.after_rss_kib)),
                    "",
                    "",
                );
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Startup

struct Startup {
    /// Spawn to `initialize` response, one per run.
    to_initialize: Vec<Duration>,
    /// How long the `spawn()` call itself took, one per run.
    spawn_call: Vec<Duration>,
    /// `tandem --version` from spawn to exit, one per run.
    version: Vec<Duration>,
}

async fn startup(runs: usize) -> Startup {
    // Warm-up: the first exec of a freshly linked binary pays for reading it from disk.
    measure_startup_once().await;
    let mut to_initialize = Vec::with_capacity(runs);
    let mut spawn_call = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (spawned, answered) = measure_startup_once().await;
        spawn_call.push(spawned);
        to_initialize.push(answered);
    }
    let mut version = Vec::with_capacity(runs);
    for _ in 0..runs {
        version.push(measure_version_once().await);
    }
    Startup {
        to_initialize,
        spawn_call,
        version,
    }
}

/// One fresh `tandem lsp`: (time spent in `spawn()`, time from spawn to the `initialize`
/// response). The process is shut down cleanly after the measurement, outside the interval.
async fn measure_startup_once() -> (Duration, Duration) {
    let request = frame(&initialize_request(1));
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(["lsp", "--log-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("could not spawn tandem");
    let spawned = start.elapsed();
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    stdin.write_all(&request).await.expect("write initialize");
    stdin.flush().await.expect("flush initialize");
    let response = tokio::time::timeout(TIMEOUT, read_response(&mut stdout, 1))
        .await
        .expect("no initialize response in time");
    let answered = start.elapsed();
    assert!(
        response
            .get("result")
            .is_some_and(|r| r["capabilities"].is_object()),
        "initialize failed: {response}"
    );

    // Not measured: finish the session like an editor and reap the process. The buffered reader
    // goes to the client as is, so nothing already read from stdout is lost.
    let mut client = TestClient::new(stdout, stdin);
    client.notify("initialized", json!({})).await;
    client.shutdown_and_exit().await;
    wait_for_exit(child).await;
    (spawned, answered)
}

/// `tandem --version` from spawn to exit: the cost of starting the process at all.
async fn measure_version_once() -> Duration {
    let start = Instant::now();
    let status = Command::new(BIN)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .expect("could not run tandem --version");
    let elapsed = start.elapsed();
    assert!(status.success(), "tandem --version failed: {status}");
    elapsed
}

fn initialize_request(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "processId": std::process::id(),
            "rootUri": null,
            "clientInfo": {"name": "tandem-bench", "version": "1"},
            "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
            "workspaceFolders": [{"uri": "file:///project", "name": "project"}],
        },
    })
}

fn frame(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("serialize request");
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    bytes.extend_from_slice(&body);
    bytes
}

/// Reads frames until the response to `id`, skipping anything else the server sends first.
async fn read_response<R: AsyncRead + Unpin>(reader: &mut BufReader<R>, id: i64) -> Value {
    loop {
        let message = read_frame(reader).await;
        if message.get("method").is_none() && message["id"] == id {
            return message;
        }
    }
}

async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Value {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        let read = reader.read_line(&mut line).await.expect("read header");
        assert!(read > 0, "tandem closed stdout before answering");
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.trim().parse::<usize>().expect("bad Content-Length"));
            }
        }
    }
    let mut body = vec![0; length.expect("frame without Content-Length")];
    reader.read_exact(&mut body).await.expect("read body");
    serde_json::from_slice(&body).expect("body is not JSON")
}

async fn wait_for_exit(mut child: Child) {
    let status = tokio::time::timeout(TIMEOUT, child.wait())
        .await
        .expect("tandem did not exit after shutdown + exit")
        .expect("wait for tandem");
    assert!(status.success(), "tandem exited with {status}");
}

// ---------------------------------------------------------------------------------------------
// Memory

struct Memory {
    baseline_rss_kib: u64,
    rss_kib: u64,
    hwm_kib: u64,
    open_time: Duration,
}

/// `tandem lsp` with piped stdin and stdout, and its pid.
fn spawn_lsp() -> (Child, u32) {
    let child = Command::new(BIN)
        .args(["lsp", "--log-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("could not spawn tandem");
    let pid = child.id().expect("tandem has a pid while running");
    (child, pid)
}

/// `None` where there is no `/proc` to read.
async fn memory() -> Option<Memory> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let documents = documents();
    let (mut child, pid) = spawn_lsp();
    let stdin: ChildStdin = child.stdin.take().expect("piped stdin");
    let stdout: ChildStdout = child.stdout.take().expect("piped stdout");
    let mut client = TestClient::new(stdout, stdin);
    client.initialize(&["utf-16"]).await;
    // A round trip after `initialized`, so the baseline is taken with the server idle.
    let status = client
        .request("tandem/debug/status", Value::Null)
        .await
        .expect("tandem/debug/status failed");
    assert_eq!(status["documents"].as_array().map(Vec::len), Some(0));
    let (baseline_rss_kib, _) = proc_status(pid)?;

    let start = Instant::now();
    for (i, text) in documents.iter().enumerate() {
        client
            .did_open(&format!("file:///project/src/module_{i:03}.rs"), 1, text)
            .await;
    }
    let status = client
        .request("tandem/debug/status", Value::Null)
        .await
        .expect("tandem/debug/status failed");
    let open_time = start.elapsed();
    let held = status["documents"]
        .as_array()
        .expect("status has a documents array");
    assert_eq!(held.len(), DOCUMENTS, "not every didOpen was applied");
    for (summary, text) in held.iter().zip(&documents) {
        // Sorted by URI, which sorts like the zero-padded index.
        assert_eq!(summary["lenBytes"], text.len(), "{summary}");
    }
    let (rss_kib, hwm_kib) = proc_status(pid)?;

    client.shutdown_and_exit().await;
    wait_for_exit(child).await;
    Some(Memory {
        baseline_rss_kib,
        rss_kib,
        hwm_kib,
        open_time,
    })
}

// ---------------------------------------------------------------------------------------------
// Flood

struct Flood {
    written: usize,
    flooded_rss_kib: u64,
    after_rss_kib: u64,
}

async fn flood(requests: usize) -> Option<Flood> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let (mut child, pid) = spawn_lsp();
    let mut stdin: ChildStdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    stdin
        .write_all(&frame(&initialize_request(0)))
        .await
        .unwrap();
    read_response(&mut stdout, 0).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "initialized", "params": {}});
    stdin.write_all(&frame(&initialized)).await.unwrap();
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = written.clone();
    let writer = tokio::spawn(async move {
        for id in 1..=requests {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tandem/debug/status"});
            stdin.write_all(&frame(&request)).await.unwrap();
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        stdin
    });
    // Until everything is written, or the writing made no progress for half a second.
    let mut last = 0;
    let mut still = 0;
    while !writer.is_finished() && still < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = written.load(std::sync::atomic::Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    let flooded_written = written.load(std::sync::atomic::Ordering::Relaxed);
    let (flooded_rss_kib, _) = proc_status(pid)?;
    for _ in 0..requests {
        read_frame(&mut stdout).await;
    }
    let mut stdin = writer.await.unwrap();
    let (after_rss_kib, _) = proc_status(pid)?;
    let shutdown = json!({"jsonrpc": "2.0", "id": requests + 1, "method": "shutdown"});
    stdin.write_all(&frame(&shutdown)).await.unwrap();
    read_response(&mut stdout, (requests + 1) as i64).await;
    let exit = json!({"jsonrpc": "2.0", "method": "exit"});
    stdin.write_all(&frame(&exit)).await.unwrap();
    drop(stdin);
    wait_for_exit(child).await;
    Some(Flood {
        written: flooded_written,
        flooded_rss_kib,
        after_rss_kib,
    })
}

/// `(VmRSS, VmHWM)` of `pid` in KiB.
fn proc_status(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()
        })
    };
    Some((field("VmRSS")?, field("VmHWM")?))
}

/// Multi-byte chars sprinkled into comments and strings: 2-, 3- and 4-byte UTF-8.
const MULTI_BYTE: [&str; 5] = ["é", "λ", "中", "→", "🦀"];
const WORDS: [&str; 24] = [
    "buffer", "count", "index", "state", "value", "result", "offset", "line", "token", "cache",
    "request", "handle", "config", "entry", "node", "range", "text", "input", "output", "error",
    "parser", "writer", "limit", "update",
];
const TYPES: [&str; 8] = [
    "usize",
    "u32",
    "i64",
    "String",
    "Vec<u8>",
    "Option<usize>",
    "&str",
    "bool",
];

/// `DOCUMENTS` distinct documents of exactly `DOCUMENT_BYTES` bytes, the same on every run.
fn documents() -> Vec<String> {
    (0..DOCUMENTS)
        .map(|i| source_like(&mut Rng::with_seed(SEED ^ i as u64), i))
        .collect()
}

fn source_like(rng: &mut Rng, index: usize) -> String {
    let mut text = format!("//! Module {index}: generated for the tandem lsp_process bench.\n\n");
    let mut depth = 0usize;
    while text.len() < DOCUMENT_BYTES {
        let indent = "    ".repeat(depth);
        let a = WORDS[rng.usize(..WORDS.len())];
        let b = WORDS[rng.usize(..WORDS.len())];
        let line = match rng.u8(..10) {
            0 if depth == 0 => {
                depth = 1;
                let ty = TYPES[rng.usize(..TYPES.len())];
                format!("pub fn {a}_{b}_{index}(input: {ty}) -> Result<{ty}, Error> {{\n")
            }
            1 if depth > 0 && depth < 4 => {
                depth += 1;
                format!("{indent}if {a} > {b} + {} {{\n", rng.u32(..1000))
            }
            2 if depth > 0 => {
                depth -= 1;
                format!("{}}}\n", "    ".repeat(depth))
            }
            3 => {
                let mark = MULTI_BYTE[rng.usize(..MULTI_BYTE.len())];
                format!("{indent}// {a} {mark} {b}: keep the {a} in step with {b}.\n")
            }
            4 => {
                let mark = if rng.u8(..4) == 0 {
                    MULTI_BYTE[rng.usize(..MULTI_BYTE.len())]
                } else {
                    ""
                };
                format!("{indent}log::debug!(\"{a}{mark} = {{}}\", {a}.{b}());\n")
            }
            5 => "\n".to_owned(),
            _ => {
                let ty = TYPES[rng.usize(..TYPES.len())];
                format!(
                    "{indent}let {a}_{}: {ty} = self.{b}.get({}).unwrap_or_default();\n",
                    rng.u16(..),
                    rng.u32(..10_000)
                )
            }
        };
        text.push_str(&line);
    }
    // Cut back to exactly DOCUMENT_BYTES, on a char boundary, padding with spaces.
    let mut cut = DOCUMENT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    while text.len() < DOCUMENT_BYTES {
        text.push(' ');
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Report

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// (median, p90, max) in milliseconds.
fn summary(samples: &[Duration]) -> (f64, f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let n = sorted.len();
    let median = if n % 2 == 1 {
        ms(sorted[n / 2])
    } else {
        (ms(sorted[n / 2 - 1]) + ms(sorted[n / 2])) / 2.0
    };
    // Nearest rank: the smallest sample with at least 90% of the samples at or below it.
    let p90 = ms(sorted[(n * 9).div_ceil(10) - 1]);
    (median, p90, ms(sorted[n - 1]))
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

fn row(metric: &str, value: &str, target: &str, result: &str) {
    let line = format!("{metric:<40} {value:>12}  {target:<10} {result}");
    println!("{}", line.trim_end());
}

fn print_table(runs: usize, startup: &Startup, memory: Option<&Memory>) {
    let (median, p90, max) = summary(&startup.to_initialize);
    row("metric", "value", "target", "result");
    row(&"-".repeat(40), &"-".repeat(12), &"-".repeat(10), "------");
    row(
        &format!("startup to initialize, median ({runs} runs)"),
        &format!("{median:.2} ms"),
        &format!("< {STARTUP_TARGET_MS:.0} ms"),
        verdict(median < STARTUP_TARGET_MS),
    );
    row(
        "startup to initialize, p90",
        &format!("{p90:.2} ms"),
        "",
        "",
    );
    row(
        "startup to initialize, max",
        &format!("{max:.2} ms"),
        "",
        "",
    );
    let (spawn_median, _, spawn_max) = summary(&startup.spawn_call);
    row(
        "  of which spawn() call, median / max",
        &format!("{spawn_median:.2}/{spawn_max:.2} ms"),
        "",
        "",
    );
    let (version_median, version_p90, _) = summary(&startup.version);
    row(
        "tandem --version to exit, median / p90",
        &format!("{version_median:.2}/{version_p90:.2} ms"),
        "",
        "",
    );
    match memory {
        None => println!("memory: not measured (needs /proc)"),
        Some(memory) => {
            let mib = |kib: u64| kib as f64 / 1024.0;
            let rss = mib(memory.rss_kib);
            let text_mib = (DOCUMENTS * DOCUMENT_BYTES) as f64 / (1024.0 * 1024.0);
            row(
                "RSS after initialize (baseline)",
                &format!("{:.1} MiB", mib(memory.baseline_rss_kib)),
                "",
                "",
            );
            row(
                &format!(
                    "RSS after {DOCUMENTS} x {} KiB didOpen",
                    DOCUMENT_BYTES / 1024
                ),
                &format!("{rss:.1} MiB"),
                &format!("< {RSS_TARGET_MIB:.0} MiB"),
                verdict(rss < RSS_TARGET_MIB),
            );
            row(
                "peak RSS (VmHWM)",
                &format!("{:.1} MiB", mib(memory.hwm_kib)),
                "",
                "",
            );
            let per_document =
                memory.rss_kib.saturating_sub(memory.baseline_rss_kib) as f64 / DOCUMENTS as f64;
            row(
                &format!("RSS per document ({} KiB of text)", DOCUMENT_BYTES / 1024),
                &format!("{per_document:.1} KiB"),
                "",
                "",
            );
            row(
                &format!("text held ({text_mib:.1} MiB) vs RSS growth"),
                &format!(
                    "{:.2}x",
                    mib(memory.rss_kib.saturating_sub(memory.baseline_rss_kib)) / text_mib
                ),
                "",
                "",
            );
            row(
                &format!("{DOCUMENTS} didOpen + status round trip"),
                &format!("{:.1} ms", ms(memory.open_time)),
                "",
                "",
            );
        }
    }
}
