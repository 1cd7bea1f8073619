//! How long the first prompt of a session waits before its request reaches the model, on a
//! large workspace whose repo map has to be built from the symbol index: the real `tandem`
//! binary against a scripted model server on 127.0.0.1 that notes when each request arrives.
//!
//! Scenarios, each a fresh process with its own state directory (where the index keeps its
//! tags between processes):
//!
//! 1. **lsp, up 2 s**: `initialize` + `initialized`, then 2 s idle, then `tandem/prompt`;
//!    measured from writing the prompt to the model receiving the request. Target: under 50 ms.
//! 2. **lsp, fresh, warm tags**: the state directory holds the tags a previous process saved;
//!    `tandem/prompt` right after `initialized`. Target: under 300 ms.
//! 3. **lsp, fresh, no tags**: the same with an empty state directory (the first start ever in
//!    a workspace): the prompt waits for the index to be built.
//! 4. **ask, warm tags** / 5. **ask, no tags**: `tandem ask hi`, measured from spawning the
//!    process to the model receiving the request. Target with warm tags: under 300 ms.
//! 6. **ask, no tags, to exit**: the same, measured to the process's exit: the answer is
//!    instant, so this is what indexing holds it for. Target: within 300 ms of the request.
//! 7. **ask, after a cold ask**: a second `tandem ask hi` in a state directory where one ran
//!    with no tags (whatever the first saved, finished or not). Target: under 300 ms.
//!
//! The corpus is the Python standard library as installed (`/usr/lib/python3.11`, every `.py`
//! file, copied under the target directory), or the folder `TANDEM_BENCH_CORPUS` names. With
//! `TANDEM_BENCH_HUGE=1` the corpus is eight copies of it side by side (millions of lines).
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem --bench first_request
//! ```
//!
//! `TANDEM_BENCH_QUICK=1`, and `cargo test --benches`, run each scenario twice instead of five
//! times.

// A harness-less bench binary reports its results on stdout; that is its whole job.
#![allow(clippy::print_stdout)]
// A benchmark that cannot do its job should stop loudly, right where it happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tandem_test_support::{scripted_settings, ModelServer, Reply, TestClient};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_tandem");
const PYTHON: &str = "/usr/lib/python3.11";
const RUNS: usize = 5;
const RUNS_QUICK: usize = 2;
const HUGE_COPIES: usize = 8;

fn main() {
    // `cargo test --benches` (CI's smoke run) passes no `--bench`: a quick run there.
    let quick = !std::env::args().any(|arg| arg == "--bench")
        || std::env::var("TANDEM_BENCH_QUICK").is_ok_and(|v| v == "1");
    let huge = std::env::var("TANDEM_BENCH_HUGE").is_ok_and(|v| v == "1");
    let runs = if quick { RUNS_QUICK } else { RUNS };
    let corpus = corpus(huge);
    let (files, lines) = count(&corpus);
    println!(
        "corpus: {} ({files} Python files, {lines} lines)",
        corpus.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("could not start the tokio runtime");
    runtime.block_on(async {
        let model = ModelServer::start().await;
        model.respond_with(|_| Reply::openai_text("ok"));
        let config = tempfile::tempdir().unwrap();
        std::fs::write(
            config.path().join("settings.json"),
            scripted_settings(&model, json!({})).to_string(),
        )
        .unwrap();
        let setup = Setup {
            model,
            config: config.path().to_owned(),
            corpus: corpus.clone(),
        };
        // The tags a previous process saved, shared by the warm scenarios.
        let warm = tempfile::tempdir().unwrap();
        setup.lsp(warm.path(), None, true).await;

        println!("\n| scenario | runs | median ms | max ms | target ms |");
        println!("| --- | --- | --- | --- | --- |");
        let scenarios: [(&str, Option<f64>); 7] = [
            ("lsp, up 2 s", Some(50.0)),
            ("lsp, fresh, warm tags", Some(300.0)),
            ("lsp, fresh, no tags", None),
            ("ask, warm tags", Some(300.0)),
            ("ask, no tags", None),
            ("ask, no tags, to exit", None),
            ("ask, after a cold ask", Some(300.0)),
        ];
        for (name, target) in scenarios {
            let mut times = Vec::new();
            for _ in 0..runs {
                let cold = tempfile::tempdir().unwrap();
                let elapsed = match name {
                    "lsp, up 2 s" => {
                        setup
                            .lsp(cold.path(), Some(Duration::from_secs(2)), false)
                            .await
                    }
                    "lsp, fresh, warm tags" => setup.lsp(warm.path(), None, false).await,
                    "lsp, fresh, no tags" => setup.lsp(cold.path(), None, false).await,
                    "ask, warm tags" => setup.ask(warm.path()).await.0,
                    "ask, no tags" => setup.ask(cold.path()).await.0,
                    "ask, no tags, to exit" => setup.ask(cold.path()).await.1,
                    _ => {
                        setup.ask(cold.path()).await;
                        setup.ask(cold.path()).await.0
                    }
                };
                times.push(elapsed.as_secs_f64() * 1000.0);
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let max = times[times.len() - 1];
            let target = target.map_or_else(|| "-".to_owned(), |t| format!("{t:.0}"));
            println!(
                "| {name} | {} | {median:.1} | {max:.1} | {target} |",
                times.len()
            );
        }
    });
}

struct Setup {
    model: ModelServer,
    config: PathBuf,
    corpus: PathBuf,
}

impl Setup {
    fn command(&self, state: &Path) -> Command {
        let mut command = Command::new(BIN);
        command
            .env("TANDEM_CONFIG_DIR", &self.config)
            .env("TANDEM_STATE_DIR", state)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Waits for the model's next request (after `seen` so far); when it arrived.
    async fn next_request(&self, seen: usize) -> Instant {
        tokio::time::timeout(
            Duration::from_secs(60),
            self.model.wait_for_requests(seen + 1),
        )
        .await
        .expect("no model request within 60 s");
        Instant::now()
    }

    /// `tandem lsp`: initialized, idle for `up` (if given), then a prompt; the time from the
    /// prompt to its model request. With `save`, the process is ended only once its indexing
    /// has finished and saved the workspace's tags.
    async fn lsp(&self, state: &Path, up: Option<Duration>, save: bool) -> Duration {
        let mut child = self.command(state).arg("lsp").spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut client = TestClient::new(stdout, stdin);
        let root = url::Url::from_directory_path(&self.corpus).unwrap();
        client
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": root,
                    "capabilities": {},
                    "workspaceFolders": [{"uri": root, "name": "corpus"}],
                }),
            )
            .await
            .expect("initialize failed");
        client.notify("initialized", json!({})).await;
        if let Some(up) = up {
            tokio::time::sleep(up).await;
        }
        let seen = self.model.request_count();
        let start = Instant::now();
        let arrived = tokio::spawn({
            let setup = self.model.clone();
            async move {
                tokio::time::timeout(Duration::from_secs(60), setup.wait_for_requests(seen + 1))
                    .await
                    .expect("no model request within 60 s");
                Instant::now()
            }
        });
        let answer: Value = client
            .request("tandem/prompt", json!({"text": "hi"}))
            .await
            .expect("tandem/prompt failed");
        assert!(answer.is_object(), "{answer}");
        let elapsed = arrived.await.unwrap() - start;
        if save {
            wait_for_indexing(&mut client).await;
        }
        client.shutdown_and_exit().await;
        finish(child).await;
        elapsed
    }

    /// `tandem ask hi`: from the spawn to its model request, and to its exit.
    async fn ask(&self, state: &Path) -> (Duration, Duration) {
        let seen = self.model.request_count();
        let start = Instant::now();
        let child = self
            .command(state)
            .args(["ask", "hi", "--workspace"])
            .arg(&self.corpus)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let request = self.next_request(seen).await - start;
        finish(child).await;
        (request, start.elapsed())
    }
}

/// Waits until the background indexing has finished (and so saved the workspace's tags), as
/// `tandem/debug/status` tells.
async fn wait_for_indexing(client: &mut TestClient) {
    let started = Instant::now();
    loop {
        let status: Value = client
            .request("tandem/debug/status", json!({}))
            .await
            .expect("tandem/debug/status failed");
        let background = &status["index"]["background"];
        if background["running"] == 0 && !background["last"].is_null() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "indexing unfinished after 300 s: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn finish(mut child: Child) {
    match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
        Ok(status) => {
            status.unwrap();
        }
        Err(_) => {
            child.kill().await.unwrap();
        }
    }
}

/// The corpus folder: `TANDEM_BENCH_CORPUS`, else a copy of the Python standard library's
/// `.py` files under the target directory (made once), eight times over when `huge`.
fn corpus(huge: bool) -> PathBuf {
    if let Some(dir) = std::env::var_os("TANDEM_BENCH_CORPUS") {
        return PathBuf::from(dir);
    }
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("first-request-corpus");
    let stdlib = base.join("python-stdlib");
    if !stdlib.exists() {
        let partial = base.join("python-stdlib.partial");
        let _ = std::fs::remove_dir_all(&partial);
        copy_python(Path::new(PYTHON), &partial);
        std::fs::rename(&partial, &stdlib).unwrap();
    }
    if !huge {
        return stdlib;
    }
    let copies = base.join(format!("python-stdlib-x{HUGE_COPIES}"));
    if !copies.exists() {
        let partial = base.join("copies.partial");
        let _ = std::fs::remove_dir_all(&partial);
        for copy in 0..HUGE_COPIES {
            copy_python(&stdlib, &partial.join(format!("copy{copy}")));
        }
        std::fs::rename(&partial, &copies).unwrap();
    }
    copies
}

fn copy_python(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", from.display()))
    {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let name = entry.file_name();
        if kind.is_dir() && !matches!(name.to_str(), Some("__pycache__" | "site-packages")) {
            copy_python(&entry.path(), &to.join(&name));
        } else if kind.is_file() && entry.path().extension().is_some_and(|ext| ext == "py") {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

fn count(dir: &Path) -> (usize, usize) {
    let mut totals = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            let (files, lines) = count(&entry.path());
            totals = (totals.0 + files, totals.1 + lines);
        } else if entry.path().extension().is_some_and(|ext| ext == "py") {
            let text = std::fs::read(entry.path()).unwrap();
            totals = (
                totals.0 + 1,
                totals.1 + text.iter().filter(|byte| **byte == b'\n').count(),
            );
        }
    }
    totals
}
