//! MCP servers the user already configured for Claude Code or Gemini CLI, read from those
//! tools' own files so that nobody has to paste them: Claude Code's `~/.claude.json` (its
//! `mcpServers`, and `projects.<workspace>.mcpServers`, the "local" scope) and a project's
//! `.mcp.json`; Gemini CLI's `~/.gemini/settings.json` and a project's `.gemini/settings.json`.
//! A project's files act only in a trusted workspace (they would start programs by being
//! cloned); untrusted, they are ignored with a warning, as Tandem's own workspace settings are.
//!
//! Entries are read as their tool means them: Gemini CLI's `url` is an SSE server (its
//! streamable HTTP address is `httpUrl`). Keys Tandem does not know are dropped with a warning
//! rather than failing the entry (the files are not Tandem's); an entry that names no server
//! is left out with a warning. Each server remembers where it came from (`source`), for
//! `tandem mcp list`. Tandem's own `mcpServers` win over any of these of the same name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::{McpServerSettings, McpTransport};

/// Whose configuration files to read (the `importMcpServers` setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ImportFrom {
    /// Claude Code's `~/.claude.json` and a trusted project's `.mcp.json`.
    Claude,
    /// Gemini CLI's `~/.gemini/settings.json` and a trusted project's `.gemini/settings.json`.
    Gemini,
}

/// The servers found, and what could not be used.
#[derive(Debug, Default)]
pub struct Imported {
    pub servers: BTreeMap<String, McpServerSettings>,
    pub warnings: Vec<String>,
}

/// The tools whose servers are read when the settings do not say.
pub const DEFAULT_IMPORTS: [ImportFrom; 2] = [ImportFrom::Claude, ImportFrom::Gemini];

/// Whose keys an entry is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Claude,
    Gemini,
}

/// Reads the servers of `from`'s files under `home` and the workspace `root` (the project's
/// only when `trusted`), lowest precedence first: Gemini CLI's user file, Claude Code's user
/// scope, its local scope, Gemini CLI's project file, then `.mcp.json`.
pub fn imported(
    home: Option<&Path>,
    root: Option<&Path>,
    trusted: bool,
    from: &[ImportFrom],
) -> Imported {
    let mut found = Imported::default();
    let gemini = from.contains(&ImportFrom::Gemini);
    let claude = from.contains(&ImportFrom::Claude);
    if let (true, Some(home)) = (gemini, home) {
        let path = home.join(".gemini/settings.json");
        read_file(&path, Format::Gemini, &["mcpServers"], &mut found);
    }
    if let (true, Some(home)) = (claude, home) {
        let path = home.join(".claude.json");
        read_file(&path, Format::Claude, &["mcpServers"], &mut found);
        if let Some(root) = root {
            let key = root.to_string_lossy().into_owned();
            read_file(
                &path,
                Format::Claude,
                &["projects", &key, "mcpServers"],
                &mut found,
            );
        }
    }
    let Some(root) = root else {
        return found;
    };
    let project: Vec<(PathBuf, Format)> = [
        (gemini, root.join(".gemini/settings.json"), Format::Gemini),
        (claude, root.join(".mcp.json"), Format::Claude),
    ]
    .into_iter()
    .filter(|(wanted, _, _)| *wanted)
    .map(|(_, path, format)| (path, format))
    .collect();
    for (path, format) in project {
        if !trusted {
            if has_servers(&path) {
                found.warnings.push(format!(
                    "ignored the MCP servers of {} because this workspace is not trusted; add \
                     it to `trustedFolders` in your settings to use them",
                    path.display()
                ));
            }
            continue;
        }
        read_file(&path, format, &["mcpServers"], &mut found);
    }
    found
}

/// Whether `path` is a file with a non-empty `mcpServers`.
fn has_servers(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| tandem_providers::settings::parse_jsonc(&text).ok())
        .and_then(|value| value.get("mcpServers").cloned())
        .is_some_and(|servers| servers.as_object().is_some_and(|map| !map.is_empty()))
}

/// Adds the servers at `keys` in the JSON file `path` (none when it does not exist).
fn read_file(path: &Path, format: Format, keys: &[&str], found: &mut Imported) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let value = match tandem_providers::settings::parse_jsonc(&text) {
        Ok(value) => value,
        Err(error) => {
            found.warnings.push(format!(
                "{}: not valid JSON ({error}); its MCP servers were not read",
                path.display()
            ));
            return;
        }
    };
    let mut servers = &value;
    for key in keys {
        match servers.get(*key) {
            Some(inner) => servers = inner,
            None => return,
        }
    }
    let Value::Object(servers) = servers else {
        found.warnings.push(format!(
            "{}: `{}` is not an object; its MCP servers were not read",
            path.display(),
            keys.join(".")
        ));
        return;
    };
    let source = shown(path);
    for (name, entry) in servers {
        let place = format!("{}: MCP server \"{name}\"", path.display());
        match server_entry(entry, format == Format::Gemini, &mut found.warnings, &place) {
            Ok(mut settings) => {
                settings.source = Some(source.clone());
                found.servers.insert(name.clone(), settings);
            }
            Err(problem) => found.warnings.push(format!("{place}: {problem}; left out")),
        }
    }
}

/// How `tandem mcp list` names a file: under the home folder as `~/…`.
fn shown(path: &Path) -> String {
    match dirs::home_dir().and_then(|home| path.strip_prefix(home).ok().map(Path::to_path_buf)) {
        Some(relative) => format!("~/{}", relative.display()),
        None => path.display().to_string(),
    }
}

/// The keys `McpServerSettings` reads, from its schema.
fn known_keys() -> &'static [String] {
    static KEYS: OnceLock<Vec<String>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let schema = schemars::schema_for!(McpServerSettings);
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default()
    })
}

/// One entry of another tool's `mcpServers` as Tandem's settings: unknown keys dropped (each
/// named in a warning under `place`), Gemini CLI's `url` read as SSE when `gemini`. `Err` says
/// why the entry cannot be used.
pub(crate) fn server_entry(
    entry: &Value,
    gemini: bool,
    warnings: &mut Vec<String>,
    place: &str,
) -> Result<McpServerSettings, String> {
    let Value::Object(entry) = entry else {
        return Err("not an object".to_owned());
    };
    let known = known_keys();
    let (kept, dropped): (Map<String, Value>, Map<String, Value>) = entry
        .clone()
        .into_iter()
        .partition(|(key, _)| known.iter().any(|name| name == key));
    if !dropped.is_empty() {
        let names: Vec<String> = dropped.keys().map(|key| format!("`{key}`")).collect();
        warnings.push(format!(
            "{place}: {} not used by Tandem; ignored",
            names.join(", ")
        ));
    }
    let mut settings: McpServerSettings = serde_json::from_value(Value::Object(kept))
        .map_err(|error| format!("cannot be read: {error}"))?;
    if gemini && settings.transport.is_none() && settings.url.is_some() {
        settings.transport = Some(McpTransport::Sse);
    }
    settings.endpoint()?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mcp::config::Endpoint;

    fn write(path: &Path, value: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    }

    #[test]
    fn other_tools_servers_are_read_with_their_meaning_and_trust() {
        let home = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let key = root.path().to_string_lossy().into_owned();
        write(
            &home.path().join(".claude.json"),
            &json!({
                "numStartups": 12,
                "mcpServers": {"memory": {"type": "stdio", "command": "npx", "args": ["-y", "m"]}},
                "projects": {key: {"mcpServers": {
                    "local-db": {"command": "db-mcp", "alwaysAllow": ["query"]}
                }}}
            }),
        );
        write(
            &home.path().join(".gemini/settings.json"),
            &json!({"theme": "x", "mcpServers": {
                "events": {"url": "http://127.0.0.1:9/sse"},
                "memory": {"command": "gemini-memory"}
            }}),
        );
        write(
            &root.path().join(".mcp.json"),
            &json!({"mcpServers": {"project": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}),
        );
        let untrusted = imported(
            Some(home.path()),
            Some(root.path()),
            false,
            &DEFAULT_IMPORTS,
        );
        let names: Vec<&str> = untrusted.servers.keys().map(String::as_str).collect();
        assert_eq!(names, ["events", "local-db", "memory"]);
        // Claude Code's user scope wins over Gemini CLI's of the same name.
        assert_eq!(untrusted.servers["memory"].command.as_deref(), Some("npx"));
        assert!(untrusted.servers["memory"]
            .source
            .as_deref()
            .unwrap()
            .ends_with(".claude.json"));
        // Gemini CLI's `url` is SSE.
        assert!(matches!(
            untrusted.servers["events"].endpoint(),
            Ok(Endpoint::Sse { .. })
        ));
        assert!(
            untrusted
                .warnings
                .iter()
                .any(|w| w.contains("`alwaysAllow` not used by Tandem")),
            "{:?}",
            untrusted.warnings
        );
        assert!(
            untrusted
                .warnings
                .iter()
                .any(|w| w.contains(".mcp.json because this workspace is not trusted")),
            "{:?}",
            untrusted.warnings
        );
        let trusted = imported(Some(home.path()), Some(root.path()), true, &DEFAULT_IMPORTS);
        assert!(trusted.servers.contains_key("project"));
        assert!(trusted.servers["project"]
            .source
            .as_deref()
            .unwrap()
            .ends_with(".mcp.json"));
        let only_gemini = imported(
            Some(home.path()),
            Some(root.path()),
            true,
            &[ImportFrom::Gemini],
        );
        assert_eq!(
            only_gemini.servers["memory"].command.as_deref(),
            Some("gemini-memory")
        );
        assert!(!only_gemini.servers.contains_key("project"));
        let none = imported(Some(home.path()), Some(root.path()), true, &[]);
        assert!(none.servers.is_empty() && none.warnings.is_empty());
    }

    #[test]
    fn broken_files_and_entries_are_warnings() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".claude.json"), "{ not json").unwrap();
        write(
            &home.path().join(".gemini/settings.json"),
            &json!({"mcpServers": {"nothing": {"args": []}, "odd": 3}}),
        );
        let found = imported(Some(home.path()), None, true, &DEFAULT_IMPORTS);
        assert!(found.servers.is_empty());
        let text = found.warnings.join("\n");
        assert!(text.contains(".claude.json: not valid JSON"), "{text}");
        assert!(text.contains("\"nothing\": set `command`"), "{text}");
        assert!(text.contains("\"odd\": not an object"), "{text}");
    }
}
