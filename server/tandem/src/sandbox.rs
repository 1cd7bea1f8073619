//! `tandem sandbox check`: how shell commands, hooks and MCP servers would be confined in a
//! workspace on this system (what the kernel supports, then what a command may write, cannot
//! read, and whether it has the network), exit 0 when fully confined and 1 otherwise.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use serde_json::json;
use tandem_agent::confine::{self, Plan};

use crate::ask::{load_settings, tool_context, workspace_root};

#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    #[command(subcommand)]
    command: SandboxCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SandboxCommand {
    /// Say whether commands run confined here, and with which rights (exit 1 when not fully).
    Check {
        /// The workspace a command would run in. Default: the current directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Print `{"support", "plan"}` as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: SandboxArgs) -> Result<i32> {
    let SandboxCommand::Check { workspace, json } = args.command;
    let root = workspace_root(workspace)?;
    let (_, settings) = load_settings(&root)?;
    let ctx = tool_context(&root, &settings);
    let sandbox = ctx.shell_environment.sandbox();
    let support = confine::support();
    let plan = sandbox.plan(None, false);
    let full = plan.is_confined() && support.full();
    let mut out = io::stdout().lock();
    if json {
        let plan = match &plan {
            Plan::Confined(rights) => json!({ "confined": sandbox.confinement(*rights) }),
            Plan::Unconfined(why) => json!({ "unconfined": why }),
            Plan::Refused(why) => json!({ "refused": why }),
        };
        let report = json!({ "support": support, "plan": plan });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(if full { 0 } else { 1 });
    }
    match &support.landlock {
        Ok(version) => writeln!(out, "Landlock: ABI {version}")?,
        Err(why) => writeln!(out, "Landlock: no ({why})")?,
    }
    match &support.namespaces {
        Ok(()) => writeln!(out, "user, mount and network namespaces: yes")?,
        Err(why) => writeln!(out, "user, mount and network namespaces: no ({why})")?,
    }
    if let Some(shortfall) = support.shortfall() {
        writeln!(out, "warning: {shortfall}")?;
    }
    let mode = serde_json::to_value(sandbox.settings().mode)?;
    writeln!(out, "mode: {}", mode.as_str().unwrap_or_default())?;
    writeln!(out, "{}", sandbox.describe(&plan))?;
    if let Plan::Confined(rights) = &plan {
        let confinement = sandbox.confinement(*rights);
        let list = |out: &mut dyn Write, title: &str, paths: &[PathBuf]| -> io::Result<()> {
            writeln!(out, "{title}:")?;
            for path in paths {
                writeln!(out, "  {}", path.display())?;
            }
            Ok(())
        };
        list(&mut out, "writable", &confinement.writable)?;
        list(&mut out, "read-only inside them", &confinement.read_only)?;
        list(&mut out, "hidden", &confinement.hidden)?;
    }
    Ok(if full { 0 } else { 1 })
}
