//! Reading one plugin folder as the tool it was written for reads it.
//!
//! A **Claude Code plugin** has `.claude-plugin/plugin.json` (`name` required; `version`,
//! `description`; `commands`, `agents`, `skills` as a `./` path or a list of them, which add
//! to the default `commands/`, `agents/`, `skills/` folders; `hooks` and `mcpServers` as a
//! `./` path to a JSON file or the object itself, by default `hooks/hooks.json` and
//! `.mcp.json`). A marketplace entry with `strict: false` may stand in for a missing manifest.
//!
//! A **Gemini CLI extension** has `gemini-extension.json` (`name`, `version`, `description`,
//! `mcpServers`, `contextFileName`, `excludeTools`) and the folders `commands/` (TOML),
//! `skills/`, `agents/` and `hooks/hooks.json`.
//!
//! Paths a manifest names must stay inside the plugin's folder. `${CLAUDE_PLUGIN_ROOT}` (and
//! Gemini CLI's `${extensionPath}`, `${/}`) in the MCP servers' settings become the folder's
//! path here; hooks get it as a variable when they run, commands when they are read.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::hooks::config::{HooksSettings, PluginOrigin};
use crate::hooks::dialect::Dialect;
use crate::mcp::McpServerSettings;

/// The manifest files that make a folder a plugin.
pub const CLAUDE_MANIFEST: &str = ".claude-plugin/plugin.json";
pub const GEMINI_MANIFEST: &str = "gemini-extension.json";

/// Whose format a plugin is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PluginKind {
    /// A Claude Code plugin (`.claude-plugin/plugin.json`).
    Claude,
    /// A Gemini CLI extension (`gemini-extension.json`).
    Gemini,
}

impl PluginKind {
    pub fn describe(self) -> &'static str {
        match self {
            PluginKind::Claude => "Claude Code plugin",
            PluginKind::Gemini => "Gemini CLI extension",
        }
    }
}

/// A plugin as its folder says, with what it brings.
#[derive(Debug, Clone, Default)]
pub struct Plugin {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    pub kind: Option<PluginKind>,
    /// The folder (canonical).
    pub root: PathBuf,
    /// Folders (or files) of slash commands.
    pub commands: Vec<PathBuf>,
    /// Folders (or files) of subagent definitions.
    pub agents: Vec<PathBuf>,
    /// Folders holding skill folders.
    pub skills: Vec<PathBuf>,
    /// Its hooks, each group marked as the plugin's.
    pub hooks: HooksSettings,
    /// Its MCP servers by their names in the plugin (`plugin_<name>_<server>` in sessions).
    pub mcp_servers: BTreeMap<String, McpServerSettings>,
    /// Memory files for the system prompt (a Gemini CLI extension's `GEMINI.md`).
    pub context_files: Vec<PathBuf>,
    /// Deny rules in Tandem's terms, from a Gemini CLI extension's `excludeTools`.
    pub deny_rules: Vec<String>,
    /// What could not be used.
    pub warnings: Vec<String>,
}

impl Plugin {
    /// The MCP server `server` of plugin `plugin` as a session names it (Claude Code's name:
    /// its tools are `mcp__plugin_<plugin>_<server>__<tool>`).
    pub fn server_name(plugin: &str, server: &str) -> String {
        format!("plugin_{plugin}_{server}")
    }

    /// The kind of plugin `root` holds, if any.
    pub fn kind_of(root: &Path) -> Option<PluginKind> {
        if root.join(CLAUDE_MANIFEST).is_file() {
            Some(PluginKind::Claude)
        } else if root.join(GEMINI_MANIFEST).is_file() {
            Some(PluginKind::Gemini)
        } else {
            None
        }
    }

    /// Reads the plugin in `root`; `fallback` is a marketplace entry to use as the manifest
    /// (Claude Code's `strict: false`) when the folder has none. `Err` says why it is no
    /// plugin Tandem can use.
    pub fn read(root: &Path, fallback: Option<&Value>) -> Result<Plugin, String> {
        let root = std::fs::canonicalize(root)
            .map_err(|error| format!("{}: cannot read it: {error}", root.display()))?;
        match Plugin::kind_of(&root) {
            Some(PluginKind::Claude) => {
                let manifest = read_json(&root.join(CLAUDE_MANIFEST))?;
                claude(&root, &manifest)
            }
            Some(PluginKind::Gemini) => {
                let manifest = read_json(&root.join(GEMINI_MANIFEST))?;
                gemini(&root, &manifest)
            }
            None => match fallback {
                Some(entry) => claude(&root, entry),
                None => Err(format!(
                    "{} is not a plugin: it has neither {CLAUDE_MANIFEST} (a Claude Code plugin) \
                     nor {GEMINI_MANIFEST} (a Gemini CLI extension)",
                    root.display()
                )),
            },
        }
    }
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{}: cannot read it: {error}", path.display()))?;
    tandem_providers::settings::parse_jsonc(&text)
        .map_err(|error| format!("{}: not valid JSON: {error}", path.display()))
}

/// Plugin names are what commands and servers are namespaced by, and a folder's name: letters,
/// digits, `-`, `_` and `.`, not first (Claude Code asks for kebab-case; Gemini CLI's own
/// examples have `excludeTools`).
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with(['-', '.', '_']);
    if valid {
        Ok(())
    } else {
        Err(format!(
            "the plugin name {name:?} must be letters, digits, `-`, `_` and `.` (kebab-case, \
             such as `review-kit`, is usual)"
        ))
    }
}

/// The common manifest fields.
fn identity(manifest: &Value, kind: PluginKind, root: &Path) -> Result<Plugin, String> {
    let name = manifest
        .get("name")
        .and_then(Value::as_str)
        .ok_or("the manifest has no `name`")?
        .to_owned();
    check_name(&name)?;
    let text = |key: &str| manifest.get(key).and_then(Value::as_str).map(str::to_owned);
    Ok(Plugin {
        name,
        version: text("version"),
        description: text("description"),
        kind: Some(kind),
        root: root.to_path_buf(),
        ..Plugin::default()
    })
}

/// `relative` (a manifest's path, `./` first) inside `root`, or why not.
fn inside(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let path = Path::new(relative);
    if path.is_absolute() {
        return Err(format!(
            "`{relative}` is an absolute path; a plugin names its files relative to its folder (`./…`)"
        ));
    }
    if path
        .components()
        .any(|component| component == Component::ParentDir)
    {
        return Err(format!("`{relative}` leaves the plugin's folder"));
    }
    let joined = path
        .components()
        .filter(|component| *component != Component::CurDir)
        .fold(root.to_path_buf(), |joined, component| {
            joined.join(component)
        });
    // A link may still lead out: the path must resolve inside the folder.
    match std::fs::canonicalize(&joined) {
        Ok(real) if !real.starts_with(root) => {
            Err(format!("`{relative}` is a link out of the plugin's folder"))
        }
        _ => Ok(joined),
    }
}

/// A manifest field that is a path or a list of paths, each inside `root`.
fn paths(manifest: &Value, key: &str, root: &Path, warnings: &mut Vec<String>) -> Vec<PathBuf> {
    let listed: Vec<&str> = match manifest.get(key) {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        Some(_) => {
            warnings.push(format!(
                "`{key}` must be a path or a list of paths; ignored"
            ));
            Vec::new()
        }
        None => Vec::new(),
    };
    listed
        .into_iter()
        .filter_map(|relative| match inside(root, relative) {
            Ok(path) => Some(path),
            Err(problem) => {
                warnings.push(format!("`{key}`: {problem}; ignored"));
                None
            }
        })
        .collect()
}

/// `default` under `root` when it exists, then the manifest's `key` paths.
fn folders(
    manifest: &Value,
    key: &str,
    default: &str,
    root: &Path,
    warnings: &mut Vec<String>,
) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let standard = root.join(default);
    if standard.exists() {
        found.push(standard);
    }
    for path in paths(manifest, key, root, warnings) {
        if !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// A field that is a path to a JSON file or the JSON itself; the default file when unset.
fn inline_or_file(
    manifest: &Value,
    key: &str,
    default: &str,
    root: &Path,
    warnings: &mut Vec<String>,
) -> Option<Value> {
    let file = match manifest.get(key) {
        Some(Value::String(relative)) => match inside(root, relative) {
            Ok(path) => path,
            Err(problem) => {
                warnings.push(format!("`{key}`: {problem}; ignored"));
                return None;
            }
        },
        Some(Value::Object(_)) => return manifest.get(key).cloned(),
        Some(_) => {
            warnings.push(format!("`{key}` must be a path or an object; ignored"));
            return None;
        }
        None => root.join(default),
    };
    if !file.is_file() {
        if manifest.get(key).is_some() {
            warnings.push(format!(
                "`{key}`: {} does not exist; ignored",
                file.display()
            ));
        }
        return None;
    }
    match read_json(&file) {
        Ok(value) => Some(value),
        Err(problem) => {
            warnings.push(format!("{problem}; ignored"));
            None
        }
    }
}

fn claude(root: &Path, manifest: &Value) -> Result<Plugin, String> {
    let mut plugin = identity(manifest, PluginKind::Claude, root)?;
    let mut warnings = Vec::new();
    plugin.commands = folders(manifest, "commands", "commands", root, &mut warnings);
    plugin.agents = folders(manifest, "agents", "agents", root, &mut warnings);
    plugin.skills = folders(manifest, "skills", "skills", root, &mut warnings);
    if let Some(hooks) = inline_or_file(manifest, "hooks", "hooks/hooks.json", root, &mut warnings)
    {
        plugin.hooks = hooks_of(&plugin, &hooks, &mut warnings);
    }
    if let Some(servers) = inline_or_file(manifest, "mcpServers", ".mcp.json", root, &mut warnings)
    {
        plugin.mcp_servers = servers_of(&plugin, &servers, false, &mut warnings);
    }
    plugin.warnings = warnings;
    Ok(plugin)
}

fn gemini(root: &Path, manifest: &Value) -> Result<Plugin, String> {
    let mut plugin = identity(manifest, PluginKind::Gemini, root)?;
    let mut warnings = Vec::new();
    plugin.commands = folders(&Value::Null, "", "commands", root, &mut warnings);
    plugin.agents = folders(&Value::Null, "", "agents", root, &mut warnings);
    plugin.skills = folders(&Value::Null, "", "skills", root, &mut warnings);
    let hooks_file = root.join("hooks/hooks.json");
    if hooks_file.is_file() {
        match read_json(&hooks_file) {
            Ok(hooks) => plugin.hooks = hooks_of(&plugin, &hooks, &mut warnings),
            Err(problem) => warnings.push(format!("{problem}; ignored")),
        }
    }
    if let Some(servers) = manifest.get("mcpServers") {
        plugin.mcp_servers = servers_of(&plugin, servers, true, &mut warnings);
    }
    let context: Vec<&str> = match manifest.get("contextFileName") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => vec!["GEMINI.md"],
    };
    for name in context {
        match inside(root, name) {
            Ok(path) if path.is_file() => plugin.context_files.push(path),
            Ok(path) if manifest.get("contextFileName").is_some() => warnings.push(format!(
                "`contextFileName`: {} does not exist; ignored",
                path.display()
            )),
            Ok(_) => {}
            Err(problem) => warnings.push(format!("`contextFileName`: {problem}; ignored")),
        }
    }
    if let Some(Value::Array(excluded)) = manifest.get("excludeTools") {
        plugin.deny_rules = excluded
            .iter()
            .filter_map(Value::as_str)
            .map(deny_rule)
            .collect();
    }
    plugin.warnings = warnings;
    Ok(plugin)
}

/// A Gemini CLI `excludeTools` entry (`run_shell_command(rm -rf)`, `write_file`) as a Tandem
/// deny rule (`shell:rm -rf`, `write_file`).
fn deny_rule(excluded: &str) -> String {
    let (tool, argument) = match excluded.split_once('(') {
        Some((tool, rest)) => (tool.trim(), rest.strip_suffix(')').map(str::trim)),
        None => (excluded.trim(), None),
    };
    let tandem = [
        "shell",
        "edit",
        "write_file",
        "read_file",
        "read_many_files",
        "grep",
        "glob",
        "list_directory",
        "write_todos",
        "web_fetch",
        "save_memory",
        "activate_skill",
    ]
    .into_iter()
    .find(|name| Dialect::Gemini.tool_name(name) == tool)
    .unwrap_or(tool);
    match argument {
        Some(argument) if tandem == "shell" && !argument.is_empty() => format!("shell:{argument}"),
        _ => tandem.to_owned(),
    }
}

/// A hooks file's hooks (`{"hooks": {...}}`, or the events at the top), each group marked as
/// `plugin`'s. What Tandem cannot run (an event it does not have, a `prompt` hook) is left out
/// with a warning, one group at a time, so the plugin's other hooks still run.
fn hooks_of(plugin: &Plugin, value: &Value, warnings: &mut Vec<String>) -> HooksSettings {
    let events = value.get("hooks").unwrap_or(value);
    let Value::Object(events) = events else {
        warnings.push("`hooks` is not an object of events; ignored".to_owned());
        return HooksSettings::default();
    };
    let origin = PluginOrigin {
        name: plugin.name.clone(),
        root: plugin.root.clone(),
    };
    let mut hooks = HooksSettings::default();
    for (name, groups) in events {
        if name == "description" {
            continue;
        }
        let Value::Array(groups) = groups else {
            warnings.push(format!("its `{name}` hooks are not a list; ignored"));
            continue;
        };
        for (index, group) in groups.iter().enumerate() {
            // One event, one group: read as the settings read them (Gemini CLI's names too).
            let one = serde_json::json!({ name.clone(): [group] });
            let parsed = serde_json::from_value::<HooksSettings>(one)
                .map_err(|error| error.to_string())
                .and_then(|parsed| parsed.validate().map(|()| parsed));
            match parsed {
                Ok(parsed) => {
                    for (event, mut groups) in parsed.0 {
                        for group in &mut groups {
                            group.plugin = Some(origin.clone());
                        }
                        hooks.0.entry(event).or_default().extend(groups);
                    }
                }
                Err(problem) => {
                    warnings.push(format!("its hook `{name}[{index}]` is not used: {problem}"))
                }
            }
        }
    }
    hooks
}

/// The servers of a `.mcp.json` (`{"mcpServers": {...}}`, or the servers at the top), read as
/// `gemini` or Claude Code entries, the plugin's folder put in for its variables.
fn servers_of(
    plugin: &Plugin,
    value: &Value,
    gemini: bool,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, McpServerSettings> {
    let servers = value.get("mcpServers").unwrap_or(value);
    let Value::Object(servers) = servers else {
        warnings.push("`mcpServers` is not an object; ignored".to_owned());
        return BTreeMap::new();
    };
    let root = plugin.root.to_string_lossy().into_owned();
    let fill = |text: &str| {
        text.replace("${CLAUDE_PLUGIN_ROOT}", &root)
            .replace("${extensionPath}", &root)
            .replace("${/}", "/")
            .replace("${pathSeparator}", "/")
    };
    let mut found = BTreeMap::new();
    for (name, entry) in servers {
        // Comments some example files carry (`"_comment": "…"`).
        if name.starts_with('_') && !entry.is_object() {
            continue;
        }
        let place = format!("MCP server \"{name}\"");
        match crate::mcp::imported::server_entry(entry, gemini, warnings, &place) {
            Ok(mut settings) => {
                settings.command = settings.command.as_deref().map(fill);
                settings.args = settings.args.iter().map(|arg| fill(arg)).collect();
                settings.url = settings.url.as_deref().map(fill);
                settings.http_url = settings.http_url.as_deref().map(fill);
                settings.cwd = settings
                    .cwd
                    .as_ref()
                    .map(|cwd| PathBuf::from(fill(&cwd.to_string_lossy())));
                for value in settings
                    .env
                    .values_mut()
                    .chain(settings.headers.values_mut())
                {
                    *value = fill(value);
                }
                settings
                    .env
                    .insert("CLAUDE_PLUGIN_ROOT".to_owned(), root.clone());
                // Gemini CLI does not let an extension trust its own servers.
                settings.trust = false;
                settings.source = Some(format!("plugin {}", plugin.name));
                found.insert(name.clone(), settings);
            }
            Err(problem) => warnings.push(format!("{place}: {problem}; left out")),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hooks::HookEvent;

    use crate::plugins::write_test_file as write;

    #[test]
    fn a_claude_code_plugin_brings_its_parts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            CLAUDE_MANIFEST,
            &json!({"name": "review-kit", "version": "1.2.0", "description": "Reviews",
                    "commands": ["./extra-commands"], "agents": "../../etc"})
            .to_string(),
        );
        write(root, "commands/review.md", "Review the code.");
        write(root, "extra-commands/fix.md", "Fix it.");
        write(
            root,
            "agents/checker.md",
            "---\nname: checker\ndescription: x\n---\nCheck.",
        );
        write(
            root,
            "skills/style/SKILL.md",
            "---\nname: style\ndescription: House style\n---\nUse tabs.",
        );
        write(
            root,
            "hooks/hooks.json",
            &json!({"description": "format", "hooks": {"PostToolUse": [{"matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/fmt.sh"}]}]}})
            .to_string(),
        );
        write(
            root,
            ".mcp.json",
            &json!({"db": {"command": "${CLAUDE_PLUGIN_ROOT}/server.js",
                           "args": ["--config", "${CLAUDE_PLUGIN_ROOT}/db.json"]},
                    "_comment": "examples"})
            .to_string(),
        );
        let plugin = Plugin::read(root, None).unwrap();
        let real = std::fs::canonicalize(root).unwrap();
        assert_eq!(plugin.name, "review-kit");
        assert_eq!(plugin.kind, Some(PluginKind::Claude));
        assert_eq!(
            plugin.commands,
            [real.join("commands"), real.join("extra-commands")]
        );
        assert_eq!(plugin.agents, [real.join("agents")]);
        assert!(
            plugin
                .warnings
                .iter()
                .any(|w| w.contains("leaves the plugin's folder")),
            "{:?}",
            plugin.warnings
        );
        assert_eq!(plugin.skills, [real.join("skills")]);
        let group = &plugin.hooks.0[&HookEvent::PostToolUse][0];
        assert_eq!(group.plugin.as_ref().unwrap().root, real);
        let db = &plugin.mcp_servers["db"];
        let root_text = real.display().to_string();
        assert_eq!(
            db.command.as_deref(),
            Some(&*format!("{root_text}/server.js"))
        );
        assert_eq!(db.args[1], format!("{root_text}/db.json"));
        assert_eq!(db.env["CLAUDE_PLUGIN_ROOT"], root_text);
        assert_eq!(db.source.as_deref(), Some("plugin review-kit"));
        assert_eq!(
            Plugin::server_name("review-kit", "db"),
            "plugin_review-kit_db"
        );
    }

    #[test]
    fn a_gemini_cli_extension_brings_its_parts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            GEMINI_MANIFEST,
            &json!({"name": "gcp", "version": "0.3.0",
                    "mcpServers": {"events": {"url": "http://127.0.0.1:9/sse"},
                                   "tool": {"command": "node", "args": ["${extensionPath}${/}run.js"]}},
                    "excludeTools": ["run_shell_command(rm -rf)", "write_file"]})
            .to_string(),
        );
        write(root, "GEMINI.md", "Use gcloud.");
        write(root, "commands/deploy.toml", "prompt = \"Deploy\"");
        let plugin = Plugin::read(root, None).unwrap();
        let real = std::fs::canonicalize(root).unwrap();
        assert_eq!(plugin.kind, Some(PluginKind::Gemini));
        assert_eq!(plugin.context_files, [real.join("GEMINI.md")]);
        assert_eq!(plugin.commands, [real.join("commands")]);
        assert_eq!(plugin.deny_rules, ["shell:rm -rf", "write_file"]);
        assert!(matches!(
            plugin.mcp_servers["events"].endpoint(),
            Ok(crate::mcp::Endpoint::Sse { .. })
        ));
        assert_eq!(
            plugin.mcp_servers["tool"].args,
            [format!("{}/run.js", real.display())]
        );
    }

    /// A plugin's hooks that Tandem cannot run are left out one by one; the rest run.
    #[test]
    fn hooks_tandem_cannot_run_are_left_out_alone() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), CLAUDE_MANIFEST, r#"{"name": "guard"}"#);
        let command = json!({"type": "command", "command": "true"});
        write(
            dir.path(),
            "hooks/hooks.json",
            &json!({"hooks": {
                "SubagentStop": [{"hooks": [command]}],
                "Stop": [{"hooks": [{"type": "prompt", "prompt": "check"}]}, {"hooks": [command]}],
                "BeforeTool": [{"matcher": "write_file", "hooks": [command]}]
            }})
            .to_string(),
        );
        let plugin = Plugin::read(dir.path(), None).unwrap();
        assert_eq!(plugin.hooks.0[&HookEvent::Stop].len(), 1);
        let gemini = &plugin.hooks.0[&HookEvent::PreToolUse][0];
        assert_eq!(gemini.dialect, Dialect::Gemini);
        let warnings = plugin.warnings.join("\n");
        assert!(
            warnings.contains("`SubagentStop[0]` is not used"),
            "{warnings}"
        );
        assert!(warnings.contains("`Stop[0]` is not used"), "{warnings}");
    }

    #[test]
    fn folders_that_are_no_plugin_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let error = Plugin::read(dir.path(), None).unwrap_err();
        assert!(error.contains("is not a plugin"), "{error}");
        write(dir.path(), CLAUDE_MANIFEST, r#"{"name": "Bad Name"}"#);
        // (Gemini CLI's example `excludeTools` is a name.)
        let error = Plugin::read(dir.path(), None).unwrap_err();
        assert!(error.contains("must be letters, digits"), "{error}");
        // A marketplace entry may be the manifest.
        let other = tempfile::tempdir().unwrap();
        write(other.path(), "commands/a.md", "A");
        let plugin = Plugin::read(
            other.path(),
            Some(&json!({"name": "inline", "strict": false})),
        )
        .unwrap();
        assert_eq!(plugin.name, "inline");
        assert_eq!(plugin.commands.len(), 1);
    }
}
