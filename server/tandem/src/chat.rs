//! `tandem chat`, and `tandem` with no command: the interactive terminal chat
//! (`tandem-chat`), on Tandem's agent in this process or attached to the session of an
//! editor's `tandem lsp` (`--attach`; by default when exactly one such server runs for the
//! workspace). This file only turns the command line into `tandem_chat::ChatOptions`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};

#[derive(Debug, Default, clap::Args)]
pub struct ChatArgs {
    /// A first prompt to send (then the chat goes on).
    prompt: Option<String>,
    /// Continue the saved session ID (`tandem sessions` lists them; `/resume` picks one).
    #[arg(long, value_name = "ID", conflicts_with = "continue_latest")]
    resume: Option<String>,
    /// Continue this workspace's most recently updated saved session.
    #[arg(long = "continue")]
    continue_latest: bool,
    /// Join the live session of the editor's Tandem server (`tandem lsp`) for this workspace,
    /// or of the server with process id PID: the chat sees the editor's open files, cursor and
    /// selection, and the agent's edits go to the editor's buffers.
    #[arg(long, value_name = "PID", num_args = 0..=1, conflicts_with = "no_attach")]
    attach: Option<Option<u32>>,
    /// Run the agent here even when an editor's Tandem server runs for this workspace.
    #[arg(long)]
    no_attach: bool,
    /// The workspace. Default: the current directory.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

pub fn run(args: ChatArgs) -> Result<i32> {
    let workspace = crate::ask::workspace_root(args.workspace)?;
    let attach = match (args.attach, args.no_attach) {
        (Some(pid), _) => tandem_chat::Attach::Required(pid),
        (None, true) => tandem_chat::Attach::Never,
        // A resumed or continued session is this workspace's saved one, not the editor's.
        (None, false) if args.resume.is_some() || args.continue_latest => {
            tandem_chat::Attach::Never
        }
        (None, false) => tandem_chat::Attach::Auto,
    };
    let options = tandem_chat::ChatOptions {
        workspace,
        resume: args.resume,
        continue_latest: args.continue_latest,
        attach,
        serve: tandem_acp::ServeOptions {
            attach: None,
            user_settings: tandem_providers::settings::user_settings_path(),
            state_dir: tandem_agent::store::SessionStore::default_state_dir(),
            transcripts: false,
            language_servers: Some(Arc::new(crate::language_servers::OnPath::default())),
        },
        prompt: args.prompt,
    };
    // Multi-threaded: the agent's reads through ACP wait with `block_in_place` (tandem-acp).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")?;
    let result = runtime.block_on(tandem_chat::run(options));
    // Tools may have left processes or blocking readers behind (stdin's included).
    runtime.shutdown_background();
    result.map_err(|error| anyhow!("{error}"))
}
