//! Plugins: Claude Code plugins (`.claude-plugin/plugin.json`) and Gemini CLI extensions
//! (`gemini-extension.json`), installed as they are with `tandem plugins install`. A plugin
//! brings slash commands, subagents, skills, hooks, MCP servers and (Gemini CLI's) memory
//! files; everything it brings is namespaced by its name: `/<plugin>:<command>` (also plain
//! `/<command>` while no other command has that name), agents and skills `<plugin>:<name>`,
//! servers `plugin_<plugin>_<server>` (Claude Code's names, so its hooks' and rules' matchers
//! work).
//!
//! - `manifest.rs` — reading a plugin's folder, as each tool lays it out.
//! - `marketplace.rs` — a Claude Code marketplace folder (`.claude-plugin/marketplace.json`).
//! - `install.rs` — the installed copies under the user's configuration directory, and the
//!   registry that says which are enabled.
//!
//! Plugins are the user's: installing one is trusting it, so they act in every workspace,
//! trusted or not (as the user's own settings do). `PluginSet::load` reads the enabled ones;
//! `setup.rs` in `tandem-agent` gives what they bring to each part of a session.

pub mod install;
pub mod manifest;
pub mod marketplace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use install::{Choice, Installed, Outcome, PluginError};
pub use manifest::{Plugin, PluginKind};

use crate::hooks::HooksSettings;
use crate::mcp::McpServerSettings;

/// A folder a plugin brings (its commands, agents or skills), with whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDir {
    pub path: PathBuf,
    /// The plugin's name, which namespaces what the folder holds.
    pub plugin: String,
    /// The plugin's folder (`${CLAUDE_PLUGIN_ROOT}`).
    pub root: PathBuf,
}

/// The enabled plugins, and what could not be read of them.
#[derive(Debug, Clone, Default)]
pub struct PluginSet {
    pub plugins: Vec<Plugin>,
    pub warnings: Vec<String>,
}

impl PluginSet {
    /// The enabled plugins installed under the user's configuration directory `config`
    /// (none without one).
    pub fn load(config: Option<&Path>) -> PluginSet {
        let Some(config) = config else {
            return PluginSet::default();
        };
        let mut set = PluginSet::default();
        let installed = match install::list(config) {
            Ok(installed) => installed,
            Err(error) => {
                set.warnings.push(error.to_string());
                return set;
            }
        };
        for (name, entry) in installed.iter().filter(|(_, entry)| entry.enabled) {
            let folder = install::plugins_dir(config).join(name);
            match Plugin::read(&folder, None) {
                Ok(plugin) => {
                    set.warnings.extend(
                        plugin
                            .warnings
                            .iter()
                            .map(|warning| format!("plugin {name}: {warning}")),
                    );
                    set.plugins.push(plugin);
                }
                Err(problem) => set.warnings.push(format!(
                    "plugin {name} (installed from {}) cannot be used: {problem}; reinstall or \
                     remove it (`tandem plugins remove {name}`)",
                    entry.source.display()
                )),
            }
        }
        set
    }

    fn dirs(&self, of: impl Fn(&Plugin) -> &[PathBuf]) -> Vec<PluginDir> {
        self.plugins
            .iter()
            .flat_map(|plugin| {
                of(plugin).iter().map(|path| PluginDir {
                    path: path.clone(),
                    plugin: plugin.name.clone(),
                    root: plugin.root.clone(),
                })
            })
            .collect()
    }

    pub fn command_dirs(&self) -> Vec<PluginDir> {
        self.dirs(|plugin| &plugin.commands)
    }

    pub fn agent_dirs(&self) -> Vec<PluginDir> {
        self.dirs(|plugin| &plugin.agents)
    }

    pub fn skill_dirs(&self) -> Vec<PluginDir> {
        self.dirs(|plugin| &plugin.skills)
    }

    /// Every plugin's hooks, appended to `base` (the settings' own run first).
    pub fn hooks(&self, base: &HooksSettings) -> HooksSettings {
        let mut hooks = base.clone();
        for plugin in &self.plugins {
            for (event, groups) in &plugin.hooks.0 {
                hooks
                    .0
                    .entry(*event)
                    .or_default()
                    .extend(groups.iter().cloned());
            }
        }
        hooks
    }

    /// Every plugin's MCP servers, by the names sessions give them.
    pub fn mcp_servers(&self) -> BTreeMap<String, McpServerSettings> {
        self.plugins
            .iter()
            .flat_map(|plugin| {
                plugin.mcp_servers.iter().map(|(server, settings)| {
                    (Plugin::server_name(&plugin.name, server), settings.clone())
                })
            })
            .collect()
    }

    /// Memory files for the system prompt.
    pub fn context_files(&self) -> Vec<PathBuf> {
        self.plugins
            .iter()
            .flat_map(|plugin| plugin.context_files.iter().cloned())
            .collect()
    }

    /// Deny rules the plugins ask for (a Gemini CLI extension's `excludeTools`).
    pub fn deny_rules(&self) -> Vec<String> {
        self.plugins
            .iter()
            .flat_map(|plugin| plugin.deny_rules.iter().cloned())
            .collect()
    }
}

/// Writes `text` to `path` under `root`, making the folders on the way (the plugin tests' files).
#[cfg(test)]
pub(crate) fn write_test_file(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
