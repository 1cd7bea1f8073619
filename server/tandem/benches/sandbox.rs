//! What the OS sandbox adds to each command: the time from spawning to exit of `bash -c CMD`
//! run directly and run as Tandem runs it confined (`tandem-confine __sandbox POLICY bash -c
//! CMD`: the launcher's exec, the namespaces, the mounts, Landlock), for `true` and for
//! `git status` in a small repository, median and 90th percentile of many runs each,
//! alternating; and through `tandem __sandbox`, the launcher used when `tandem-confine` is not
//! installed. The policy is the one `tandem sandbox check --json` gives for the workspace.
//!
//! Run with:
//!
//! ```text
//! cargo bench -p tandem --bench sandbox
//! ```
//!
//! Under `cargo test` it makes five runs of each and checks that every confined run succeeds.
//! Results are recorded in docs/benchmarks.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_tandem");
const LAUNCHER: &str = env!("CARGO_BIN_EXE_tandem-confine");

fn main() {
    let bench = std::env::args().any(|arg| arg == "--bench");
    let runs = if bench { 400 } else { 5 };
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sandbox-bench");
    let _ = std::fs::remove_dir_all(&scratch);
    let workspace = scratch.join("workspace");
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    for index in 0..50 {
        std::fs::write(
            workspace.join(format!("src/file{index}.rs")),
            "fn main() {}\n",
        )
        .unwrap();
    }
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(&workspace)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.com")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.com")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "files"]);

    let check = Command::new(BIN)
        .args(["sandbox", "check", "--json", "--workspace"])
        .arg(&workspace)
        .env("TANDEM_CONFIG_DIR", scratch.join("config"))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "the sandbox is not whole here: {}",
        String::from_utf8_lossy(&check.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let policy = report["plan"]["confined"].to_string();

    println!("OS sandbox overhead per command ({runs} runs each, alternating)");
    println!(
        "{:<12} {:>20} {:>20} {:>12} {:>20}",
        "command", "direct p50/p90", "confined p50/p90", "added (p50)", "via tandem p50/p90"
    );
    for command in ["true", "git status"] {
        let confine = |launcher: &str| {
            let mut line = Command::new(launcher);
            line.args(["__sandbox", &policy, "bash", "-c", command]);
            line
        };
        let mut direct = Vec::with_capacity(runs);
        let mut confined = Vec::with_capacity(runs);
        let mut via_tandem = Vec::with_capacity(runs);
        for _ in 0..runs {
            direct.push(time(Command::new("bash").args(["-c", command]), &workspace));
            confined.push(time(&mut confine(LAUNCHER), &workspace));
            via_tandem.push(time(&mut confine(BIN), &workspace));
        }
        let (direct_p50, direct_p90) = percentiles(&mut direct);
        let (confined_p50, confined_p90) = percentiles(&mut confined);
        let (tandem_p50, tandem_p90) = percentiles(&mut via_tandem);
        println!(
            "{command:<12} {:>20} {:>20} {:>12} {:>20}",
            format!("{} / {}", ms(direct_p50), ms(direct_p90)),
            format!("{} / {}", ms(confined_p50), ms(confined_p90)),
            ms(confined_p50.saturating_sub(direct_p50)),
            format!("{} / {}", ms(tandem_p50), ms(tandem_p90)),
        );
    }
}

/// Runs `command` in `dir` to its exit, which must be a success; how long it took.
fn time(command: &mut Command, dir: &Path) -> Duration {
    let started = Instant::now();
    let status = command
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(status.success(), "{command:?} failed: {status}");
    elapsed
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |fraction: f64| samples[((samples.len() - 1) as f64 * fraction).round() as usize];
    (at(0.5), at(0.9))
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}
