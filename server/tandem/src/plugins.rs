//! `tandem plugins`: install Claude Code plugins and Gemini CLI extensions from a folder (or a
//! Claude Code marketplace's folder), list them with what each brings, remove them, and turn
//! them on and off. The work is `tandem_agent::plugins`'; this file is the command line.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde_json::json;
use tandem_agent::plugins::{install, Choice, Contents, Plugin, PluginKind};
use tandem_providers::settings::user_settings_path;

#[derive(Debug, clap::Args)]
pub struct PluginsArgs {
    #[command(subcommand)]
    command: PluginsCommand,
}

#[derive(Debug, clap::Subcommand)]
enum PluginsCommand {
    /// Install a plugin folder (`.claude-plugin/plugin.json` or `gemini-extension.json`), or
    /// plugins of a marketplace folder (`.claude-plugin/marketplace.json`; `NAME@PATH` for one).
    /// The plugin's hooks and MCP servers then run as your own commands, in every workspace.
    Install {
        /// The folder (or `NAME@FOLDER` for one plugin of a marketplace).
        source: String,
        /// A plugin of the marketplace to install; repeat for several.
        #[arg(long = "plugin", value_name = "NAME")]
        plugins: Vec<String>,
        /// Install every plugin the marketplace lists.
        #[arg(long)]
        all: bool,
        /// Replace an installed plugin of the same name.
        #[arg(long)]
        force: bool,
    },
    /// List the installed plugins with what each brings.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed plugin.
    Remove { name: String },
    /// Turn an installed plugin on.
    Enable { name: String },
    /// Turn an installed plugin off, keeping it installed.
    Disable { name: String },
}

/// Runs `tandem plugins`; a failure is an error (exit 2), with what to do.
pub fn run(args: PluginsArgs) -> Result<i32> {
    let config = user_settings_path()
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .context("there is no configuration folder for plugins (set TANDEM_CONFIG_DIR)")?;
    let mut out = io::stdout().lock();
    match args.command {
        PluginsCommand::Install {
            source,
            plugins,
            all,
            force,
        } => {
            let choice = Choice {
                names: plugins,
                all,
                force,
            };
            let outcomes =
                install::install(&config, &source, &choice).map_err(|error| anyhow!("{error}"))?;
            for outcome in outcomes {
                let plugin = &outcome.plugin;
                let verb = if outcome.replaced {
                    "Replaced"
                } else {
                    "Installed"
                };
                writeln!(
                    out,
                    "{verb} {} ({}) into {}",
                    title(plugin),
                    kind(plugin),
                    plugin.root.display()
                )?;
                let parts = plugin.contents();
                write!(out, "{}", brings(&parts))?;
                if !plugin.hooks.is_empty() || !plugin.mcp_servers.is_empty() {
                    writeln!(
                        out,
                        "  Its hooks and MCP servers are programs: they run as your own \
                         commands, in every workspace (`tandem plugins disable {}` stops them).",
                        plugin.name
                    )?;
                }
                for warning in outcome.warnings.iter().chain(&parts.warnings) {
                    eprintln!("warning: {}: {warning}", plugin.name);
                }
            }
            Ok(0)
        }
        PluginsCommand::List { json } => {
            let installed = install::list(&config).map_err(|error| anyhow!("{error}"))?;
            if json {
                let listing: Vec<_> = installed
                    .iter()
                    .map(|(name, entry)| {
                        let folder = install::plugins_dir(&config).join(name);
                        let parts = Plugin::read(&folder, None).map(|plugin| plugin.contents());
                        json!({
                            "name": name,
                            "kind": entry.kind,
                            "version": entry.version,
                            "description": entry.description,
                            "enabled": entry.enabled,
                            "source": entry.source,
                            "marketplace": entry.marketplace,
                            "installedAt": entry.installed_at,
                            "path": folder,
                            "brings": parts.as_ref().ok(),
                            "error": parts.err(),
                        })
                    })
                    .collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
                return Ok(0);
            }
            if installed.is_empty() {
                eprintln!(
                    "no plugins are installed (`tandem plugins install FOLDER`; see docs/plugins.md)"
                );
            }
            for (name, entry) in &installed {
                let folder = install::plugins_dir(&config).join(name);
                let state = if entry.enabled { "enabled" } else { "disabled" };
                let version = entry
                    .version
                    .as_deref()
                    .map(|version| format!(" {version}"))
                    .unwrap_or_default();
                let kind = match entry.kind {
                    PluginKind::Claude => "Claude Code plugin",
                    PluginKind::Gemini => "Gemini CLI extension",
                };
                writeln!(out, "{name}{version} ({kind}, {state})")?;
                if let Some(description) = &entry.description {
                    writeln!(out, "  {description}")?;
                }
                writeln!(out, "  from {}", entry.source.display())?;
                match Plugin::read(&folder, None) {
                    Ok(plugin) => write!(out, "{}", brings(&plugin.contents()))?,
                    Err(problem) => writeln!(out, "  cannot be read: {problem}")?,
                }
            }
            Ok(0)
        }
        PluginsCommand::Remove { name } => {
            install::remove(&config, &name).map_err(|error| anyhow!("{error}"))?;
            writeln!(out, "Removed {name}")?;
            Ok(0)
        }
        PluginsCommand::Enable { name } => switch(&config, &name, true, &mut out),
        PluginsCommand::Disable { name } => switch(&config, &name, false, &mut out),
    }
}

fn switch(config: &Path, name: &str, enabled: bool, out: &mut impl Write) -> Result<i32> {
    let changed =
        install::set_enabled(config, name, enabled).map_err(|error| anyhow!("{error}"))?;
    let state = if enabled { "enabled" } else { "disabled" };
    if changed {
        writeln!(out, "{name} is {state}")?;
    } else {
        writeln!(out, "{name} was {state} already")?;
    }
    Ok(0)
}

fn title(plugin: &Plugin) -> String {
    match &plugin.version {
        Some(version) => format!("{} {version}", plugin.name),
        None => plugin.name.clone(),
    }
}

fn kind(plugin: &Plugin) -> &'static str {
    plugin.kind.map_or("plugin", PluginKind::describe)
}

/// The indented lines saying what a plugin brings.
fn brings(parts: &Contents) -> String {
    let mut text = String::new();
    let mut line = |label: &str, items: &[String]| {
        if !items.is_empty() {
            text.push_str(&format!("  {label}: {}\n", items.join(", ")));
        }
    };
    line("commands", &parts.commands);
    line("agents", &parts.agents);
    line("skills", &parts.skills);
    line("hooks", &parts.hooks);
    line("MCP servers", &parts.mcp_servers);
    let memory: Vec<String> = parts
        .context_files
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    line("memory", &memory);
    line("deny rules", &parts.deny_rules);
    if text.is_empty() {
        text.push_str("  (nothing Tandem can use)\n");
    }
    text
}
