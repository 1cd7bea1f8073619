//! Installing plugins: a copy of the plugin's folder under the user's configuration directory
//! (`<config>/plugins/<name>/`, so that what runs is what the user installed, whatever later
//! happens to the source) and its entry in `<config>/plugins/installed.json` (kind, version,
//! where it came from, whether it is enabled). Installing is the user's explicit trust in the
//! plugin: its hooks and MCP servers run as the user's own, in every workspace.
//!
//! Files are copied without following links (a link is left out, with a warning) and without
//! `.git`; the copy is made beside its place and renamed into it, so a failed install leaves
//! the old one as it was. The registry is written to a temporary file and renamed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::{Plugin, PluginKind, CLAUDE_MANIFEST};
use super::marketplace::{looks_remote, needs_network, Marketplace};

/// The registry's file name, in the plugins folder.
pub(crate) const REGISTRY: &str = "installed.json";

/// What can go wrong installing, removing or switching a plugin.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("{0}")]
    Invalid(String),
    #[error("a plugin named `{name}` is installed already (from {from}); `--force` replaces it")]
    Exists { name: String, from: String },
    #[error("no plugin named `{name}` is installed{}", installed(.known))]
    Unknown { name: String, known: Vec<String> },
    #[error(
        "the marketplace `{marketplace}` lists {}; name the ones to install (`--plugin NAME`, or \
         NAME@{path}) or install all of them (`--all`)",
        .names.join(", ")
    )]
    Choose {
        marketplace: String,
        path: String,
        names: Vec<String>,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

fn installed(known: &[String]) -> String {
    if known.is_empty() {
        "; none is".to_owned()
    } else {
        format!("; installed: {}", known.join(", "))
    }
}

pub type Result<T> = std::result::Result<T, PluginError>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> PluginError {
    let what = what.into();
    move |source| PluginError::Io { what, source }
}

/// One installed plugin, as the registry records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Installed {
    pub kind: PluginKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The folder it was installed from.
    pub source: PathBuf,
    /// The marketplace that listed it, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marketplace: Option<String>,
    pub installed_at: String,
    pub enabled: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Registry {
    #[serde(default)]
    plugins: BTreeMap<String, Installed>,
}

/// The folder plugins live in under the user's configuration directory.
pub fn plugins_dir(config: &Path) -> PathBuf {
    config.join("plugins")
}

fn load(config: &Path) -> Result<Registry> {
    let path = plugins_dir(config).join(REGISTRY);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|error| {
            PluginError::Invalid(format!(
                "{}: cannot be read ({error}); fix or delete it",
                path.display()
            ))
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Registry::default()),
        Err(error) => Err(io(format!("reading {}", path.display()))(error)),
    }
}

fn save(config: &Path, registry: &Registry) -> Result<()> {
    let dir = plugins_dir(config);
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
    let path = dir.join(REGISTRY);
    let temporary = dir.join(format!(".{REGISTRY}.{}", std::process::id()));
    let text = serde_json::to_string_pretty(registry).unwrap_or_default() + "\n";
    std::fs::write(&temporary, text).map_err(io(format!("writing {}", temporary.display())))?;
    std::fs::rename(&temporary, &path).map_err(io(format!("writing {}", path.display())))
}

/// The installed plugins, by name, as the registry has them.
pub fn list(config: &Path) -> Result<BTreeMap<String, Installed>> {
    Ok(load(config)?.plugins)
}

/// Which plugins of a marketplace to install.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Choice {
    /// By name; empty means the only one, or (with `all`) every one.
    pub names: Vec<String>,
    pub all: bool,
    /// Replace a plugin of the same name.
    pub force: bool,
}

/// What one install did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub plugin: Plugin,
    /// It replaced an installed plugin of the same name.
    pub replaced: bool,
    /// Files left out of the copy (links), and the plugin's own warnings.
    pub warnings: Vec<String>,
}

/// Installs the plugin folder, or the plugins of the marketplace folder, at `source` (a path,
/// or `NAME@PATH` for one plugin of a marketplace) into `config`'s plugins folder.
pub fn install(config: &Path, source: &str, choice: &Choice) -> Result<Vec<Outcome>> {
    let (source, mut choice) = match source.split_once('@') {
        Some((name, path)) if !name.is_empty() && !looks_remote(source) && !name.contains('/') => {
            let mut choice = choice.clone();
            choice.names.push(name.to_owned());
            (path, choice)
        }
        _ => (source, choice.clone()),
    };
    if looks_remote(source) {
        return Err(PluginError::Invalid(format!(
            "cannot install {source}: {}",
            needs_network(source)
        )));
    }
    let folder = std::fs::canonicalize(source)
        .map_err(io(format!("cannot install {source}: reading it")))?;
    if Plugin::kind_of(&folder).is_some() && choice.names.is_empty() {
        return Ok(vec![install_one(
            config,
            &folder,
            None,
            None,
            choice.force,
        )?]);
    }
    if !Marketplace::is_one(&folder) {
        // Not a marketplace: say why it is not a plugin either.
        return Err(PluginError::Invalid(
            Plugin::read(&folder, None)
                .err()
                .unwrap_or_else(|| format!("{} is not a plugin", folder.display())),
        ));
    }
    let market = Marketplace::read(&folder).map_err(PluginError::Invalid)?;
    let listed: Vec<String> = market.entries.iter().map(|e| e.name.clone()).collect();
    if choice.names.is_empty() && !choice.all {
        if listed.len() == 1 {
            choice.names = listed.clone();
        } else {
            return Err(PluginError::Choose {
                marketplace: market.name.clone(),
                path: source.to_owned(),
                names: listed,
            });
        }
    }
    let wanted: Vec<&super::marketplace::Entry> = if choice.all && choice.names.is_empty() {
        market.entries.iter().collect()
    } else {
        let mut wanted = Vec::new();
        for name in &choice.names {
            match market.entries.iter().find(|entry| &entry.name == name) {
                Some(entry) => wanted.push(entry),
                None => {
                    return Err(PluginError::Invalid(format!(
                        "the marketplace `{}` lists no plugin `{name}`; it lists {}",
                        market.name,
                        listed.join(", ")
                    )))
                }
            }
        }
        wanted
    };
    let mut outcomes = Vec::new();
    for entry in wanted {
        let folder = entry.source.as_ref().map_err(|why| {
            PluginError::Invalid(format!("cannot install `{}`: {why}", entry.name))
        })?;
        outcomes.push(install_one(
            config,
            folder,
            Some(&entry.raw),
            Some(&market.name),
            choice.force,
        )?);
    }
    Ok(outcomes)
}

fn install_one(
    config: &Path,
    folder: &Path,
    entry: Option<&serde_json::Value>,
    marketplace: Option<&str>,
    force: bool,
) -> Result<Outcome> {
    let plugin = Plugin::read(folder, entry).map_err(PluginError::Invalid)?;
    let mut registry = load(config)?;
    let replaced = match registry.plugins.get(&plugin.name) {
        Some(old) if !force => {
            return Err(PluginError::Exists {
                name: plugin.name.clone(),
                from: old.source.display().to_string(),
            })
        }
        Some(_) => true,
        None => false,
    };
    let dir = plugins_dir(config);
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
    let target = dir.join(&plugin.name);
    let staging = dir.join(format!(
        ".installing-{}-{}",
        plugin.name,
        std::process::id()
    ));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io(format!("clearing {}", staging.display())))?;
    }
    let mut warnings = Vec::new();
    copy_tree(&plugin.root, &staging, &plugin.root, &mut warnings)
        .map_err(io(format!("copying {}", plugin.root.display())))?;
    if Plugin::kind_of(&staging).is_none() {
        // A marketplace entry was the manifest: the copy carries it, so it reads the same.
        if let Some(entry) = entry {
            let manifest = staging.join(CLAUDE_MANIFEST);
            if let Some(parent) = manifest.parent() {
                std::fs::create_dir_all(parent).map_err(io("writing the manifest"))?;
            }
            let text = serde_json::to_string_pretty(entry).unwrap_or_default();
            std::fs::write(&manifest, text).map_err(io("writing the manifest"))?;
        }
    }
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(io(format!("removing {}", target.display())))?;
    }
    std::fs::rename(&staging, &target).map_err(io(format!("moving into {}", target.display())))?;
    let installed = Plugin::read(&target, None).map_err(PluginError::Invalid)?;
    warnings.extend(installed.warnings.iter().cloned());
    registry.plugins.insert(
        installed.name.clone(),
        Installed {
            kind: installed.kind.unwrap_or(PluginKind::Claude),
            version: installed.version.clone(),
            description: installed.description.clone(),
            source: folder.to_path_buf(),
            marketplace: marketplace.map(str::to_owned),
            installed_at: crate::date::now_rfc3339(),
            enabled: true,
        },
    );
    save(config, &registry)?;
    Ok(Outcome {
        plugin: installed,
        replaced,
        warnings,
    })
}

/// Copies the tree at `from` into `to`, files with their permissions (hooks are scripts),
/// without `.git` and without links (each named in `warnings`).
fn copy_tree(
    from: &Path,
    to: &Path,
    root: &Path,
    warnings: &mut Vec<String>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<std::io::Result<_>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let kind = entry.file_type()?;
        let name = entry.file_name();
        let path = entry.path();
        if name == ".git" {
            continue;
        }
        if kind.is_symlink() {
            let shown = path.strip_prefix(root).unwrap_or(&path);
            warnings.push(format!(
                "{} is a symbolic link; not copied",
                shown.display()
            ));
        } else if kind.is_dir() {
            copy_tree(&path, &to.join(&name), root, warnings)?;
        } else if kind.is_file() {
            std::fs::copy(&path, to.join(&name))?;
        }
    }
    Ok(())
}

/// Removes the plugin `name`: its copy and its entry.
pub fn remove(config: &Path, name: &str) -> Result<Installed> {
    let mut registry = load(config)?;
    let Some(entry) = registry.plugins.remove(name) else {
        return Err(PluginError::Unknown {
            name: name.to_owned(),
            known: registry.plugins.keys().cloned().collect(),
        });
    };
    let folder = plugins_dir(config).join(name);
    if folder.exists() {
        std::fs::remove_dir_all(&folder).map_err(io(format!("removing {}", folder.display())))?;
    }
    save(config, &registry)?;
    Ok(entry)
}

/// Turns the plugin `name` on or off, keeping it installed. Returns whether it changed.
pub fn set_enabled(config: &Path, name: &str, enabled: bool) -> Result<bool> {
    let mut registry = load(config)?;
    let known: Vec<String> = registry.plugins.keys().cloned().collect();
    let Some(entry) = registry.plugins.get_mut(name) else {
        return Err(PluginError::Unknown {
            name: name.to_owned(),
            known,
        });
    };
    if entry.enabled == enabled {
        return Ok(false);
    }
    entry.enabled = enabled;
    save(config, &registry)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    use crate::plugins::write_test_file as write;

    fn plugin(root: &Path, name: &str) {
        write(
            root,
            CLAUDE_MANIFEST,
            &json!({"name": name, "version": "1.0.0"}).to_string(),
        );
        write(root, "commands/go.md", "Go.");
        write(root, ".git/HEAD", "ref: refs/heads/main");
    }

    #[test]
    fn install_copies_records_and_refuses_a_second_of_the_same_name() {
        let config = tempfile::tempdir().unwrap();
        let source = tempfile::tempdir().unwrap();
        plugin(source.path(), "kit");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", source.path().join("commands/link.md")).unwrap();
        let outcomes = install(
            config.path(),
            &source.path().display().to_string(),
            &Choice::default(),
        )
        .unwrap();
        let copy = plugins_dir(config.path()).join("kit");
        assert_eq!(
            outcomes[0].plugin.root,
            std::fs::canonicalize(&copy).unwrap()
        );
        assert!(copy.join("commands/go.md").is_file());
        assert!(!copy.join(".git").exists());
        #[cfg(unix)]
        {
            assert!(!copy.join("commands/link.md").exists());
            assert!(
                outcomes[0].warnings[0].contains("symbolic link"),
                "{:?}",
                outcomes[0].warnings
            );
        }
        let listed = list(config.path()).unwrap();
        assert!(listed["kit"].enabled);
        assert_eq!(listed["kit"].version.as_deref(), Some("1.0.0"));

        let again = install(
            config.path(),
            &source.path().display().to_string(),
            &Choice::default(),
        )
        .unwrap_err();
        assert!(again.to_string().contains("installed already"), "{again}");
        let forced = install(
            config.path(),
            &source.path().display().to_string(),
            &Choice {
                force: true,
                ..Choice::default()
            },
        )
        .unwrap();
        assert!(forced[0].replaced);

        assert!(set_enabled(config.path(), "kit", false).unwrap());
        assert!(!list(config.path()).unwrap()["kit"].enabled);
        assert!(!set_enabled(config.path(), "kit", false).unwrap());
        remove(config.path(), "kit").unwrap();
        assert!(!copy.exists());
        let unknown = remove(config.path(), "kit").unwrap_err().to_string();
        assert!(unknown.contains("no plugin named `kit`"), "{unknown}");
    }

    #[test]
    fn a_marketplace_installs_the_named_plugins() {
        let config = tempfile::tempdir().unwrap();
        let market = tempfile::tempdir().unwrap();
        plugin(&market.path().join("plugins/one"), "one");
        plugin(&market.path().join("plugins/two"), "two");
        write(
            market.path(),
            ".claude-plugin/marketplace.json",
            &json!({"name": "team", "plugins": [
                {"name": "one", "source": "./plugins/one"},
                {"name": "two", "source": "./plugins/two"}
            ]})
            .to_string(),
        );
        let path = market.path().display().to_string();
        let choose = install(config.path(), &path, &Choice::default()).unwrap_err();
        assert!(choose.to_string().contains("lists one, two"), "{choose}");
        let one = install(config.path(), &format!("two@{path}"), &Choice::default()).unwrap();
        assert_eq!(one[0].plugin.name, "two");
        assert_eq!(
            list(config.path()).unwrap()["two"].marketplace.as_deref(),
            Some("team")
        );
        let all = install(
            config.path(),
            &path,
            &Choice {
                all: true,
                force: true,
                ..Choice::default()
            },
        )
        .unwrap();
        assert_eq!(all.len(), 2);
        let remote = install(
            config.path(),
            "https://github.com/ada/kit",
            &Choice::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(remote.contains("needs the network"), "{remote}");
    }
}
