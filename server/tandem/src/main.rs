//! The `tandem` binary: command-line parsing, logging setup, and the front ends it can run.
//!
//! `tandem lsp` is the language server; `tandem models` shows which models the settings give
//! and whether the one in use can be set up (`models.rs`); `tandem ask` answers one prompt
//! headless (`ask.rs`), `tandem demo` plays a recorded session in a sample project (`demo.rs`),
//! `tandem sessions` lists and deletes the saved sessions (`sessions.rs`) and `tandem tool` runs
//! one agent tool by hand (`tool.rs`). `tandem acp` is the Agent Client Protocol agent
//! (`tandem-acp`). `tandem settings-schema` prints the JSON Schema of `settings.json`
//! (`tandem_agent::settings::settings_schema`). `tandem sandbox check` says how commands are
//! confined here (`sandbox.rs`); `tandem __sandbox`, first of all, is the OS sandbox's launcher
//! (`tandem_agent::confine::launch`), which confines itself and executes a command: the one
//! used when `tandem-confine` (`src/bin/`, the same launcher alone) is not installed beside it.

mod ask;
mod attach;
mod chat;
mod demo;
mod language_servers;
mod mcp;
mod models;
mod plugins;
mod sandbox;
mod sessions;
mod skills;
mod tool;

use std::fs::{self, File};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The static musl builds' allocator: musl's own is many times slower when threads allocate at
/// once, and glibc's is already fast (docs/benchmarks.md, "The release binary"). This covers
/// Rust's allocations; the C code's `malloc` (tree-sitter's parsers and trees) is mimalloc's too,
/// through the crate's `override` feature (Cargo.toml).
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What `tandem --version` prints after the name: the version, then the commit (hash and date)
/// and the target the binary was built from and for (`build.rs`), so that a bug report says
/// exactly which build it is about.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("TANDEM_COMMIT"),
    ", ",
    env!("TANDEM_TARGET"),
    ")"
);

/// Tandem: a coding agent inside every editor that speaks LSP.
#[derive(Debug, Parser)]
#[command(name = "tandem", version = VERSION, about, long_about = None)]
struct Cli {
    /// Where to write the log. `-` means standard error. Default: tandem.log in the user's state
    /// directory (e.g. ~/.local/state/tandem/tandem.log).
    #[arg(long, global = true, value_name = "PATH")]
    log_file: Option<PathBuf>,

    /// What to log: a level (error, warn, info, debug, trace) or tracing directives such as
    /// `info,tandem_lsp=debug`. Overrides the TANDEM_LOG environment variable. Default: info.
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,

    /// What to run; none opens the chat (`tandem chat`).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the language server over standard input and output (what an editor starts).
    Lsp {
        /// Accepted for editors that always pass it (vscode-languageclient); stdio is the only
        /// transport.
        #[arg(long)]
        stdio: bool,
        /// Do not offer this server's sessions to front ends on this machine (`tandem chat
        /// --attach`): no attach socket in the user's runtime directory.
        #[arg(long)]
        no_attach: bool,
    },
    /// Run as an Agent Client Protocol agent over standard input and output (what Zed's agent
    /// panel and other ACP clients start).
    Acp,
    /// List the models the settings files define, with the one Tandem would use marked `*`.
    Models {
        /// The workspace whose `.tandem/settings.json` applies. Default: the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Chat with the agent in the terminal (what `tandem` alone opens); `--attach` joins the
    /// session of an editor's Tandem server.
    Chat(chat::ChatArgs),
    /// Answer one prompt without an editor: the answer on stdout, tool activity on stderr.
    Ask(ask::AskArgs),
    /// List the workspace's saved sessions (`sessions list`, the default) or delete one
    /// (`sessions delete ID`).
    Sessions(sessions::SessionsArgs),
    /// Run one agent tool and print what the model would see (`--list` names the tools).
    Tool(tool::ToolArgs),
    /// The MCP servers the settings configure: `mcp list` starts them and shows their state,
    /// tools and prompts (exit 1 when one failed).
    Mcp(mcp::McpArgs),
    /// List the skills a session in the workspace would offer (the project's only in a
    /// trusted folder), and those that could not be used.
    Skills(skills::SkillsArgs),
    /// Claude Code plugins and Gemini CLI extensions: `plugins install FOLDER`, `list`,
    /// `remove`, `enable`, `disable`.
    Plugins(plugins::PluginsArgs),
    /// Watch the agent fix a failing test in a sample project, with a recorded model: no key,
    /// no settings.
    Demo(demo::DemoArgs),
    /// Print the JSON Schema of settings.json
    SettingsSchema,
    /// How shell commands, hooks and MCP servers are confined on this system (`sandbox check`).
    Sandbox(sandbox::SandboxArgs),
}

fn main() {
    // The sandbox's launcher runs before anything else: it is on the path of every command.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|arg| arg == tandem_agent::confine::LAUNCH_ARG)
    {
        std::process::exit(tandem_agent::confine::launch(&args[2..]));
    }
    if let Ok(program) = std::env::current_exe() {
        // The small launcher installed beside this binary starts faster; without it, this one.
        // Beside the file itself, not a link to it: mason, npm and `~/.local/bin` installs run
        // `tandem` through a symbolic link, which macOS's `current_exe` does not resolve.
        let program = std::fs::canonicalize(&program).unwrap_or(program);
        let small =
            program.with_file_name(format!("tandem-confine{}", std::env::consts::EXE_SUFFIX));
        tandem_agent::confine::use_launcher(if small.is_file() { small } else { program });
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => std::process::exit(code),
        // The reader stopped reading (`tandem tool --list | head -2`): it has what it wanted,
        // so end quietly, as a Unix tool does, and with 0 (as ripgrep does) rather than the 141
        // of a SIGPIPE death, which a `set -o pipefail` script would take for a failure. Rust
        // ignores SIGPIPE, so the write returned EPIPE. No command passes up the error of any
        // other write to a pipe, so a broken pipe here is stdout's. (`ask` finishes its turn
        // and keeps its exit code: see ask.rs.)
        Err(err) if stdout_closed(&err) => std::process::exit(0),
        Err(err) => {
            // stdout belongs to the protocol; errors go to stderr, which editors show in their logs.
            eprintln!("tandem: {err:#}");
            std::process::exit(2);
        }
    }
}

/// Whether `err` comes from writing to a standard output whose reader has gone.
fn stdout_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|error| error.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<i32> {
    let command = cli
        .command
        .unwrap_or_else(|| Command::Chat(chat::ChatArgs::default()));
    match command {
        Command::Lsp {
            stdio: _,
            no_attach,
        } => {
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
            if io::stdin().is_terminal() {
                // Someone typed `tandem lsp` to try Tandem: without this it sits silent until
                // Ctrl-C. stderr, because stdout belongs to the protocol even here.
                eprintln!(
                    "tandem lsp: waiting for an editor to speak LSP on stdin/stdout (Ctrl-C \
                     quits). To try Tandem in a terminal, run `tandem ask \"…\"` or `tandem \
                     demo`; docs/editors.md sets it up in your editor."
                );
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("could not start the async runtime")?;
            let attach = std::sync::Arc::new(attach::Attach::default());
            let options = tandem_lsp::ServeOptions {
                client_log: Some(client_log),
                user_settings: tandem_providers::settings::user_settings_path(),
                state_dir: tandem_agent::store::SessionStore::default_state_dir(),
                language_servers: Some(std::sync::Arc::new(language_servers::OnPath::default())),
                on_initialized: (!no_attach).then(|| attach.hook()),
            };
            let exit = runtime.block_on(tandem_lsp::serve(
                tokio::io::stdin(),
                tokio::io::stdout(),
                options,
            ));
            attach.close();
            tracing::info!(?exit, "tandem lsp stopped");
            // Don't wait for the blocking stdin reader thread: it may sit in read() forever.
            runtime.shutdown_background();
            Ok(exit.code())
        }
        Command::Acp => {
            // The log goes to its file (or stderr with `--log-file -`), never stdout: stdout is
            // the protocol's.
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            tracing::info!(
                version = env!("CARGO_PKG_VERSION"),
                pid = std::process::id(),
                "tandem acp starting"
            );
            if io::stdin().is_terminal() {
                eprintln!(
                    "tandem acp: waiting for an ACP client (Zed's agent panel, …) to speak on \
                     stdin/stdout (Ctrl-C quits); docs/acp.md sets it up."
                );
            }
            // Multi-threaded: reads through the client wait with `block_in_place`
            // (tandem-acp's editor.rs).
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("could not start the async runtime")?;
            let options = tandem_acp::ServeOptions {
                attach: None,
                user_settings: tandem_providers::settings::user_settings_path(),
                state_dir: tandem_agent::store::SessionStore::default_state_dir(),
                transcripts: false,
                language_servers: Some(std::sync::Arc::new(language_servers::OnPath::default())),
            };
            let served = runtime.block_on(tandem_acp::serve(
                tokio::io::stdin(),
                tokio::io::stdout(),
                options,
            ));
            tracing::info!(?served, "tandem acp stopped");
            // Don't wait for the blocking stdin reader thread: it may sit in read() forever.
            runtime.shutdown_background();
            served?;
            Ok(0)
        }
        Command::Models { workspace } => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            models::run(workspace)
        }
        Command::Chat(args) => {
            // The log goes to its file: the terminal is the chat's.
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            chat::run(args)
        }
        Command::Ask(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            ask::run(args)
        }
        Command::Sessions(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            sessions::run(args)
        }
        Command::Tool(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            tool::run(args)
        }
        Command::Mcp(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            mcp::run(args)
        }
        Command::Skills(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            skills::run(args)
        }
        Command::Plugins(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            plugins::run(args)
        }
        Command::Demo(args) => {
            // A demo leaves nothing behind but its sample project: no log unless asked for.
            if cli.log_file.is_some() {
                init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            } else {
                // Still a usage error, as for every other command.
                log_filter(cli.log_level.as_deref())?;
            }
            demo::run(args)
        }
        Command::Sandbox(args) => {
            init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            sandbox::run(args)
        }
        Command::SettingsSchema => {
            // Nothing to log, as for `demo`: a log only when asked for, a bad level an error.
            if cli.log_file.is_some() {
                init_logging(cli.log_file.as_deref(), cli.log_level.as_deref(), None)?;
            } else {
                log_filter(cli.log_level.as_deref())?;
            }
            // Formatted first, so that a closed stdout is an `io::Error` (see `stdout_closed`).
            let schema = serde_json::to_string_pretty(&tandem_agent::settings::settings_schema())?;
            let mut stdout = io::stdout().lock();
            writeln!(stdout, "{schema}")?;
            stdout.flush()?;
            Ok(0)
        }
    }
}

fn init_logging(
    log_file: Option<&Path>,
    log_level: Option<&str>,
    client_layer: Option<tandem_lsp::ClientLogLayer>,
) -> Result<()> {
    let filter = log_filter(log_level)?;

    // `None` means no log file: an unwritable default location must not stop the server.
    let writer: Option<BoxMakeWriter> = match log_file {
        Some(path) if path == Path::new("-") => Some(BoxMakeWriter::new(io::stderr)),
        Some(path) => Some(BoxMakeWriter::new(Mutex::new(
            open_log(path, false)
                .with_context(|| format!("cannot open log file {}", path.display()))?,
        ))),
        None => default_log_path().and_then(|path| match open_log(&path, true) {
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

/// The filter `--log-level` asks for, else TANDEM_LOG, else `info`; `init_logging` checks it
/// first, so a bad one ends the command before it does anything. A bare word must be a level:
/// tracing would take `verbose` or `warning` for the name of a module and log nothing at all.
fn log_filter(log_level: Option<&str>) -> Result<EnvFilter> {
    let (directives, source) = match (log_level, std::env::var("TANDEM_LOG")) {
        (Some(level), _) => (level.to_owned(), ""),
        (None, Ok(variable)) => (variable, " (from TANDEM_LOG)"),
        (None, Err(_)) => ("info".to_owned(), ""),
    };
    let expected = "expected a level (error, warn, info, debug, trace or off) or tracing \
                    directives such as `info,tandem_lsp=debug`";
    let not_a_level = directives.split(',').map(str::trim).find(|directive| {
        !directive.is_empty()
            && !directive.contains(['=', '['])
            && directive.parse::<LevelFilter>().is_err()
    });
    if let Some(word) = not_a_level {
        bail!(
            "invalid log level {directives:?}{source}: `{word}` is not a level; {expected} \
             (`{word}=debug` logs the module {word})"
        );
    }
    EnvFilter::try_new(&directives)
        .with_context(|| format!("invalid log level {directives:?}{source}; {expected}"))
}

fn default_log_path() -> Option<PathBuf> {
    let base = dirs::state_dir().or_else(dirs::cache_dir)?;
    Some(base.join("tandem").join("tandem.log"))
}

/// Opens the log to append to it. At `debug` and below it holds prompts, answers and tool
/// output, so it is the user's alone, like saved sessions: the file `0600` (tightened if it
/// was wider) and the folders created for it `0700`. Tandem's own folder (the default
/// location's) is tightened too; a folder the user named is theirs and left as it is.
fn open_log(path: &Path, own_folder: bool) -> io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if own_folder {
            tandem_agent::files::create_private_dir(parent)?;
        } else {
            let mut folders = fs::DirBuilder::new();
            folders.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut folders, 0o700);
            folders.create(parent)?;
        }
    }
    let file = tandem_agent::files::private_options()
        .create(true)
        .append(true)
        .open(path)?;
    tandem_agent::files::make_private(&file)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 35, finding 5: the log (prompts, answers and tool output at `debug`) was created
    /// readable by everyone. New logs and the folders made for them are private; a log an
    /// earlier version left readable is tightened; a folder the user named is left alone.
    #[cfg(unix)]
    #[test]
    fn the_log_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let temp = tempfile::tempdir().unwrap();
        let named = temp.path().join("logs");
        fs::create_dir(&named).unwrap();
        fs::set_permissions(&named, fs::Permissions::from_mode(0o755)).unwrap();
        // (path, Tandem's own folder, the log's mode before)
        let cases = [
            ("logs/new/tandem.log", false, None),
            ("logs/old.log", false, Some(0o644)),
            ("state/tandem/tandem.log", true, Some(0o664)),
        ];
        for (path, own_folder, before) in cases {
            let path = temp.path().join(path);
            if let Some(before) = before {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(&path, "earlier\n").unwrap();
                fs::set_permissions(&path, fs::Permissions::from_mode(before)).unwrap();
                fs::set_permissions(path.parent().unwrap(), fs::Permissions::from_mode(0o755))
                    .unwrap();
            }
            open_log(&path, own_folder).unwrap();
            assert_eq!(mode(&path), 0o600, "{}", path.display());
            let folder = mode(path.parent().unwrap());
            let expected = if own_folder || before.is_none() {
                0o700
            } else {
                0o755
            };
            assert_eq!(folder, expected, "{}", path.display());
        }
        assert_eq!(mode(&named), 0o755);
    }

    #[test]
    fn a_log_level_is_a_level_or_tracing_directives() {
        for good in [
            "debug",
            "WARN",
            "off",
            "info,tandem_lsp=debug",
            "tandem_agent=trace",
        ] {
            assert!(log_filter(Some(good)).is_ok(), "{good}");
        }
        let error = |level| format!("{:#}", log_filter(Some(level)).unwrap_err());
        // tracing alone would read these as module names and log nothing.
        for word in ["verbose", "warning"] {
            let message = error(word);
            assert!(
                message.starts_with(&format!(
                    "invalid log level \"{word}\": `{word}` is not a level"
                )),
                "{message}"
            );
        }
        assert!(error("info,loud").contains("`loud` is not a level"));
        let message = error("x[");
        assert!(
            message.starts_with("invalid log level \"x[\"; expected a level"),
            "{message}"
        );
    }
}
