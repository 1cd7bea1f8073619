//! How long the diagnostics of an edit take, from a warm pyright, clangd and
//! typescript-language-server: the time
//! from sending the edited text to having the problems published for it (what an edit's result
//! would wait for, the 150 ms quiet period for a second publish included), median and p95 over
//! alternating edits that add and remove an error, and the cold start (start, initialize, first
//! diagnostics), for a small and a large file.
//!
//! `cargo bench -p tandem-lsp-client --bench diagnostics` (pyright and typescript-language-server
//! from `npm ci --prefix tests/lsp`, clangd on PATH; a missing server is skipped). `-- --quick` runs 5
//! edits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tandem_lsp_client::{find_program, LanguageServer, ServerCommand};

const SETTLE: Duration = Duration::from_secs(60);

/// A module of `functions` small functions, the last one broken when `broken`.
fn python(functions: usize, broken: bool) -> String {
    let mut text = String::from("from typing import List\n\n\n");
    for index in 0..functions {
        text.push_str(&format!(
            "def total_{index}(items: List[int]) -> int:\n    return sum(items) + {index}\n\n\n"
        ));
    }
    let argument = if broken { "\"3\"" } else { "[3]" };
    text.push_str(&format!("result = total_0({argument})\n"));
    text
}

fn c(functions: usize, broken: bool) -> String {
    let mut text = String::new();
    for index in 0..functions {
        text.push_str(&format!(
            "int total_{index}(int a, int b) {{ return a + b + {index}; }}\n"
        ));
    }
    let call = if broken {
        "total_0(1)"
    } else {
        "total_0(1, 2)"
    };
    text.push_str(&format!("int main(void) {{ return {call}; }}\n"));
    text
}

fn typescript(functions: usize, broken: bool) -> String {
    let mut text = String::new();
    for index in 0..functions {
        text.push_str(&format!(
            "export function total{index}(items: number[]): number {{\n  return items.reduce((a, b) => a + b, {index});\n}}\n\n"
        ));
    }
    let argument = if broken { "\"3\"" } else { "[3]" };
    text.push_str(&format!("export const result = total0({argument});\n"));
    text
}

fn percentile(sorted: &[Duration], share: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * share).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn measure(
    command: &ServerCommand,
    file: &str,
    text: fn(usize, bool) -> String,
    functions: usize,
    edits: usize,
) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let path = root.join(file);
    std::fs::write(&path, text(functions, false)).unwrap();
    let cold = Instant::now();
    let server = LanguageServer::start(command, &root).await.unwrap();
    server
        .diagnostics(&path, &text(functions, false), SETTLE)
        .await
        .unwrap();
    let cold = cold.elapsed();
    let mut times = Vec::new();
    for edit in 0..edits {
        let started = Instant::now();
        server
            .diagnostics(&path, &text(functions, edit % 2 == 0), SETTLE)
            .await
            .unwrap();
        times.push(started.elapsed());
    }
    server.shutdown().await;
    times.sort();
    println!(
        "{:<8} {:>3} functions ({:>4} lines): cold start {:>5.0} ms; warm edit p50 {:>5.0} ms, p95 {:>5.0} ms ({} edits)",
        command.name,
        functions,
        text(functions, false).lines().count(),
        cold.as_secs_f64() * 1000.0,
        percentile(&times, 0.5).as_secs_f64() * 1000.0,
        percentile(&times, 0.95).as_secs_f64() * 1000.0,
        times.len()
    );
}

/// `program` as a path, or found on `PATH`.
fn find(program: &Path) -> Option<PathBuf> {
    if program.is_absolute() {
        return program.is_file().then(|| program.to_owned());
    }
    find_program(program.to_str()?, None)
}

#[tokio::main]
async fn main() {
    let edits = if std::env::args().any(|arg| arg == "--quick") {
        5
    } else {
        40
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match find(&root.join("tests/lsp/node_modules/.bin/pyright-langserver")) {
        Some(program) => {
            let command = ServerCommand {
                name: "pyright".into(),
                program,
                args: vec!["--stdio".into()],
                language_id: "python".into(),
            };
            for functions in [10, 200] {
                measure(&command, "module.py", python, functions, edits).await;
            }
        }
        None => println!("pyright   skipped: npm ci --prefix tests/lsp"),
    }
    match find(Path::new("clangd")) {
        Some(program) => {
            let command = ServerCommand {
                name: "clangd".into(),
                program,
                args: Vec::new(),
                language_id: "c".into(),
            };
            for functions in [10, 200] {
                measure(&command, "module.c", c, functions, edits).await;
            }
        }
        None => println!("clangd    skipped: no clangd on PATH"),
    }
    match find(&root.join("tests/lsp/node_modules/.bin/typescript-language-server")) {
        Some(program) => {
            let command = ServerCommand {
                name: "typescript-language-server".into(),
                program,
                args: vec!["--stdio".into()],
                language_id: "typescript".into(),
            };
            for functions in [10, 200] {
                measure(&command, "module.ts", typescript, functions, edits).await;
            }
        }
        None => println!("typescript-language-server skipped: npm ci --prefix tests/lsp"),
    }
}
