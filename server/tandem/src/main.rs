//! The `tandem` binary: command-line parsing, logging setup, and the front ends it can run.
//!
//! Only `tandem lsp` exists today; `ask`, `tool` and `acp` will join it as further subcommands.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Tandem: a coding agent inside every editor that speaks LSP.
#[derive(Debug, Parser)]
#[command(name = "tandem", version, about, long_about = None)]
struct Cli {
    /// Where to write the log. `-` means standard error. Default: tandem.log in the user's state
    /// directory (e.g. ~/.local/state/tandem/tandem.log).
    #[arg(long, global = true, value_name = "PATH")]
    log_file: Option<PathBuf>,

    /// What to log: a level (error, warn, info, debug, trace) or tracing directives such as
    /// `info,tandem_lsp=debug`. Overrides the TANDEM_LOG environment variable. Default: info.
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the language server over standard input and output (what an editor starts).
    Lsp {
        /// Accepted for editors that always pass it (vscode-languageclient); stdio is the only
        /// transport.
        #[arg(long)]
        stdio: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            // stdout belongs to the protocol; errors go to stderr, which editors show in their logs.
            eprintln!("tandem: {err:#}");
            std::process::exit(2);
        }
    }
}

fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Lsp { stdio: _ } => {
            let (client_layer, client_log) = tandem_lsp::client_log_channel();
            init_logging(
                cli.log_file.as_deref(),
                cli.log_level.as_deref(),
                Some(client_layer),
            )?;
            tracing::info!(
                version = env!("CARGO_PKG_VERSION"),
                pid = std::process::id(),
                "tandem lsp starting"
            );
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("could not start the async runtime")?;
            let options = tandem_lsp::ServeOptions {
                client_log: Some(client_log),
            };
            let exit = runtime.block_on(tandem_lsp::serve(
                tokio::io::stdin(),
                tokio::io::stdout(),
                options,
            ));
            tracing::info!(?exit, "tandem lsp stopped");
            // Don't wait for the blocking stdin reader thread: it may sit in read() forever.
            runtime.shutdown_background();
            Ok(exit.code())
        }
    }
}

fn init_logging(
    log_file: Option<&Path>,
    log_level: Option<&str>,
    client_layer: Option<tandem_lsp::ClientLogLayer>,
) -> Result<()> {
    let directives = match log_level {
        Some(level) => level.to_owned(),
        None => std::env::var("TANDEM_LOG").unwrap_or_else(|_| "info".to_owned()),
    };
    let filter = EnvFilter::try_new(&directives).with_context(|| {
        format!("invalid log level {directives:?} (try error, warn, info, debug or trace)")
    })?;

    // `None` means no log file: an unwritable default location must not stop the server.
    let writer: Option<BoxMakeWriter> = match log_file {
        Some(path) if path == Path::new("-") => Some(BoxMakeWriter::new(io::stderr)),
        Some(path) => Some(BoxMakeWriter::new(Mutex::new(
            open_log(path).with_context(|| format!("cannot open log file {}", path.display()))?,
        ))),
        None => default_log_path().and_then(|path| match open_log(&path) {
            Ok(file) => Some(BoxMakeWriter::new(Mutex::new(file))),
            Err(err) => {
                eprintln!("tandem: not logging to {}: {err}", path.display());
                None
            }
        }),
    };
    let file_layer = writer.map(|writer| {
        tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .with_filter(filter)
    });
    tracing_subscriber::registry()
        .with(file_layer)
        .with(client_layer.map(|layer| layer.with_filter(LevelFilter::WARN)))
        .try_init()
        .context("could not install the logger")?;
    Ok(())
}

fn default_log_path() -> Option<PathBuf> {
    let base = dirs::state_dir().or_else(dirs::cache_dir)?;
    Some(base.join("tandem").join("tandem.log"))
}

fn open_log(path: &Path) -> io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}
