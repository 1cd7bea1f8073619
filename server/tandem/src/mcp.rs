//! `tandem mcp list`: the MCP servers the settings configure for a workspace, started as a
//! session would start them, with their state, their tools and prompts, and for a server that
//! failed, what happened (`--json` for scripts and bug reports).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use tandem_agent::host::{Frontend, Host, HostOptions};
use tandem_agent::mcp::{McpServerState, McpServerStatus, StartWait};
use tandem_agent::store::SessionStore;

use tandem_providers::settings::user_settings_path;

use crate::ask::{workspace_root, Headless};

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, clap::Subcommand)]
enum McpCommand {
    /// Start the configured servers and list them: state, transport, tools and prompts.
    List {
        /// The workspace whose settings apply. Default: the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Print the servers as one JSON array.
        #[arg(long)]
        json: bool,
        /// Wait at most this long for servers still starting, in seconds. Default: until each
        /// has started or its `startTimeout` (30 s unless set) passed.
        #[arg(long, value_name = "SECONDS")]
        wait: Option<u64>,
    },
}

/// Runs `tandem mcp`; settings that cannot be read are an error (exit 2).
pub fn run(args: McpArgs) -> Result<i32> {
    let McpCommand::List {
        workspace,
        json,
        wait,
    } = args.command;
    let root = workspace_root(workspace)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let host = Host::new(HostOptions {
            user_settings: user_settings_path(),
            state_dir: SessionStore::default_state_dir(),
            transcripts: false,
            language_servers: None,
            one_shot: true,
        });
        let frontend: Arc<dyn Frontend> = Arc::new(Headless::default());
        let statuses = host
            .mcp_statuses(
                std::slice::from_ref(&root),
                frontend.as_ref(),
                wait.map_or(StartWait::UntilStarted, |seconds| {
                    StartWait::AtMost(Duration::from_secs(seconds))
                }),
            )
            .await
            .map_err(|error| anyhow!("{error}"));
        host.shutdown_mcp().await;
        let statuses = statuses?;
        let mut out = io::stdout().lock();
        if json {
            writeln!(out, "{}", serde_json::to_string_pretty(&statuses)?)?;
        } else if statuses.is_empty() {
            eprintln!(
                "no MCP servers are configured for {} (`mcpServers` in settings.json; see \
                 docs/mcp.md)",
                root.display()
            );
        } else {
            write!(out, "{}", render(&statuses))?;
        }
        let failed = statuses
            .iter()
            .any(|status| matches!(status.state, McpServerState::Failed { .. }));
        Ok(i32::from(failed))
    })
}

/// The listing: one block per server, its tools and prompts indented under it.
fn render(statuses: &[McpServerStatus]) -> String {
    let mut text = String::new();
    for status in statuses {
        let transport = status
            .transport
            .map(|transport| format!("{transport:?}").to_lowercase())
            .unwrap_or_else(|| "?".to_owned());
        let state = match &status.state {
            McpServerState::Starting => "still starting".to_owned(),
            McpServerState::Ready => format!(
                "ready: {} tool{}, {} prompt{}, {} resource{}",
                status.tools.len(),
                plural(status.tools.len()),
                status.prompts.len(),
                plural(status.prompts.len()),
                status.resources,
                plural(status.resources),
            ),
            McpServerState::Failed { .. } => "failed".to_owned(),
            McpServerState::Disabled => "disabled".to_owned(),
        };
        let trusted = if status.trusted { ", trusted" } else { "" };
        let source = match status.source.as_deref() {
            Some(plugin) if plugin.starts_with("plugin ") => format!(", {plugin}"),
            Some(file) => format!(", from {file}"),
            None => String::new(),
        };
        text.push_str(&format!(
            "{} ({transport}{trusted}{source}): {state}\n",
            status.name
        ));
        if let Some(description) = &status.description {
            text.push_str(&format!("  {description}\n"));
        }
        if let McpServerState::Failed { message } = &status.state {
            for line in message.lines() {
                text.push_str(&format!("  {line}\n"));
            }
        }
        for warning in &status.warnings {
            text.push_str(&format!("  warning: {warning}\n"));
        }
        for tool in &status.tools {
            text.push_str(&format!("  tool   {}\n", tool.name));
        }
        for prompt in &status.prompts {
            text.push_str(&format!("  prompt /{}:{prompt}\n", status.name));
        }
    }
    text
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}
