//! A Claude Code plugin marketplace's folder layout: `.claude-plugin/marketplace.json` with
//! `name`, `plugins` (each `name`, `source`, and perhaps `description`, `version` and, with
//! `strict: false`, the manifest's own fields), and `metadata.pluginRoot` (the folder relative
//! sources are under). A source that is a `./` path is a folder of the marketplace; one that is
//! a GitHub repository or a git URL needs the network, which `install` does not reach for.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where a marketplace lists its plugins.
pub const MARKETPLACE_FILE: &str = ".claude-plugin/marketplace.json";

/// A marketplace folder, read.
#[derive(Debug, Clone)]
pub struct Marketplace {
    pub name: String,
    pub root: PathBuf,
    pub entries: Vec<Entry>,
}

/// One plugin a marketplace lists.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub description: Option<String>,
    /// The plugin's folder, or why it cannot be had here.
    pub source: Result<PathBuf, String>,
    /// The entry itself, which stands in for the plugin's manifest when it has none.
    pub raw: Value,
}

impl Marketplace {
    /// Whether `root` is a marketplace folder.
    pub fn is_one(root: &Path) -> bool {
        root.join(MARKETPLACE_FILE).is_file()
    }

    pub fn read(root: &Path) -> Result<Marketplace, String> {
        let path = root.join(MARKETPLACE_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("{}: cannot read it: {error}", path.display()))?;
        let value = tandem_providers::settings::parse_jsonc(&text)
            .map_err(|error| format!("{}: not valid JSON: {error}", path.display()))?;
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("marketplace")
            .to_owned();
        let base = value
            .pointer("/metadata/pluginRoot")
            .and_then(Value::as_str)
            .map_or_else(|| root.to_path_buf(), |relative| root.join(relative));
        let Some(Value::Array(plugins)) = value.get("plugins") else {
            return Err(format!("{}: there is no `plugins` list", path.display()));
        };
        let entries = plugins
            .iter()
            .filter_map(|raw| {
                let name = raw.get("name")?.as_str()?.to_owned();
                Some(Entry {
                    description: raw
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    source: source(raw.get("source"), root, &base),
                    name,
                    raw: raw.clone(),
                })
            })
            .collect();
        Ok(Marketplace {
            name,
            root: root.to_path_buf(),
            entries,
        })
    }
}

/// An entry's `source` as a folder, or why it is not one here.
fn source(source: Option<&Value>, root: &Path, base: &Path) -> Result<PathBuf, String> {
    match source {
        Some(Value::String(path)) if !looks_remote(path) => {
            let relative = Path::new(path);
            if relative.is_absolute()
                || relative
                    .components()
                    .any(|part| part == std::path::Component::ParentDir)
            {
                return Err(format!("its source `{path}` is outside the marketplace"));
            }
            // `./plugins/x` is relative to the marketplace's folder; a bare name to
            // `pluginRoot`.
            let folder = if path.starts_with("./") {
                root.join(relative)
            } else {
                base.join(relative)
            };
            Ok(folder)
        }
        Some(Value::String(url)) => Err(needs_network(url)),
        Some(Value::Object(object)) => {
            let kind = object.get("source").and_then(Value::as_str).unwrap_or("");
            let place = object
                .get("repo")
                .or_else(|| object.get("url"))
                .and_then(Value::as_str)
                .unwrap_or("");
            Err(match kind {
                "github" => needs_network(&format!("https://github.com/{place}")),
                _ => needs_network(place),
            })
        }
        _ => Err("it has no `source`".to_owned()),
    }
}

/// Whether `text` names something to fetch rather than a folder.
pub fn looks_remote(text: &str) -> bool {
    text.starts_with("https://")
        || text.starts_with("http://")
        || text.starts_with("git@")
        || text.starts_with("ssh://")
        || text.starts_with("git://")
        || text.starts_with("github:")
        || text.ends_with(".git")
}

/// What to do with a plugin that lives in a repository.
pub fn needs_network(url: &str) -> String {
    format!(
        "it lives at {url}, and installing from a repository needs the network, which `tandem \
         plugins install` does not use: clone it first (`git clone {url}`) and install the \
         folder"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_marketplace_lists_folders_and_says_which_need_the_network() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(MARKETPLACE_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            json!({"name": "team", "owner": {"name": "Ada"}, "plugins": [
                {"name": "local", "source": "./plugins/local", "description": "Here"},
                {"name": "remote", "source": {"source": "github", "repo": "ada/remote"}},
                {"name": "escape", "source": "../elsewhere"}
            ]})
            .to_string(),
        )
        .unwrap();
        let market = Marketplace::read(dir.path()).unwrap();
        assert_eq!(market.name, "team");
        assert_eq!(
            market.entries[0].source.as_deref().unwrap(),
            dir.path().join("./plugins/local")
        );
        let remote = market.entries[1].source.as_ref().unwrap_err();
        assert!(
            remote.contains("git clone https://github.com/ada/remote"),
            "{remote}"
        );
        assert!(market.entries[2].source.is_err());
    }
}
