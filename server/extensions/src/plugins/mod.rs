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

use serde::Serialize;

use crate::hooks::{HookEvent, HooksSettings};
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
    /// (none without one). Every part of a session's setup asks, and so do front ends' command
    /// lists, so what was read is kept while the registry stays as it was: every install,
    /// removal and switch rewrites it, and the installed copies change only then.
    pub fn load(config: Option<&Path>) -> PluginSet {
        let Some(config) = config else {
            return PluginSet::default();
        };
        type Stamp = (std::time::SystemTime, u64, u64);
        type Cached = Option<(PathBuf, Option<Stamp>, PluginSet)>;
        static CACHE: std::sync::Mutex<Cached> = std::sync::Mutex::new(None);
        // The registry is replaced by a rename at each save: a new file, whatever the clock.
        #[cfg(unix)]
        let file = |meta: &std::fs::Metadata| std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let file = |_: &std::fs::Metadata| 0;
        let stamp = std::fs::metadata(install::plugins_dir(config).join(install::REGISTRY))
            .ok()
            .and_then(|meta| Some((meta.modified().ok()?, meta.len(), file(&meta))));
        let mut cache = CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((dir, seen, set)) = cache.as_ref() {
            if dir == config && *seen == stamp && stamp.is_some() {
                return set.clone();
            }
        }
        let set = PluginSet::read(config);
        *cache = Some((config.to_path_buf(), stamp, set.clone()));
        set
    }

    fn read(config: &Path) -> PluginSet {
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
            .flat_map(|plugin| plugin.dirs(of(plugin)))
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

/// What one plugin brings, by the names sessions give it (`tandem plugins` shows it).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contents {
    /// `/<plugin>:<command>`.
    pub commands: Vec<String>,
    pub agents: Vec<String>,
    pub skills: Vec<String>,
    /// Each event with hooks, and how many: `SessionStart (1)`.
    pub hooks: Vec<String>,
    pub mcp_servers: Vec<String>,
    pub context_files: Vec<PathBuf>,
    pub deny_rules: Vec<String>,
    /// The plugin's files that could not be used (a command, an agent, a skill).
    pub warnings: Vec<String>,
}

impl Plugin {
    /// `paths` of this plugin as the folders sessions read, under its name.
    fn dirs(&self, paths: &[PathBuf]) -> Vec<PluginDir> {
        paths
            .iter()
            .map(|path| PluginDir {
                path: path.clone(),
                plugin: self.name.clone(),
                root: self.root.clone(),
            })
            .collect()
    }

    /// What the plugin brings, read as a session reads it.
    pub fn contents(&self) -> Contents {
        let commands = crate::slash::CommandSet::load(&crate::slash::CommandDirs {
            plugins: self.dirs(&self.commands),
            ..crate::slash::CommandDirs::default()
        });
        let mut warnings = commands.warnings.clone();
        let commands = commands
            .iter()
            .filter(|command| matches!(command.source, crate::slash::CommandSource::Plugin { .. }))
            .map(|command| format!("/{}", command.name))
            .collect();
        let agents = crate::subagents::AgentSet::load(
            &crate::subagents::AgentDirs {
                plugins: self.dirs(&self.agents),
                ..crate::subagents::AgentDirs::default()
            },
            false,
        );
        warnings.extend(agents.warnings);
        let agents = agents
            .agents
            .into_iter()
            .filter(|agent| agent.source == crate::subagents::AgentSource::Plugin)
            .map(|agent| agent.name)
            .collect();
        let skills = crate::skills::discover(
            &crate::skills::SkillDirs::default().with_plugins(&self.dirs(&self.skills)),
            false,
        );
        warnings.extend(skills.warnings);
        let hooks = HookEvent::ALL
            .iter()
            .filter_map(|event| {
                let count: usize = self.hooks.0.get(event).map_or(0, |groups| {
                    groups.iter().map(|group| group.hooks.len()).sum()
                });
                (count > 0).then(|| format!("{} ({count})", event.name()))
            })
            .collect();
        Contents {
            commands,
            agents,
            skills: skills.skills.into_iter().map(|skill| skill.name).collect(),
            hooks,
            mcp_servers: self
                .mcp_servers
                .keys()
                .map(|server| Plugin::server_name(&self.name, server))
                .collect(),
            context_files: self.context_files.clone(),
            deny_rules: self.deny_rules.clone(),
            warnings,
        }
    }
}

/// Writes `text` to `path` under `root`, making the folders on the way (the plugin tests' files).
#[cfg(test)]
pub(crate) fn write_test_file(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
