//! Reading the custom command files. The directories, in order of precedence (a later one
//! overrides an earlier one's command of the same name, with a warning): installed plugins'
//! (their commands named `<plugin>:<command>`), the user's
//! `~/.gemini/commands/`, `~/.claude/commands/` and Tandem's `commands/` in its user config
//! directory, then the project's `.gemini/commands/`, `.claude/commands/` and
//! `.tandem/commands/`. Within one directory files are read in path order, so a clash there
//! (`a.md` and `a.toml`) is settled the same way every time.
//!
//! A command's name is its path in the directory without the extension, `/` written `:`
//! (`git/commit.toml` is `git:commit`), kept exactly as the file names it. Hidden files and
//! directories are skipped, and files other than `.toml` and `.md` ignored. A symbolic link is
//! followed only to a file inside the same directory tree; a directory link is not followed.
//! A file that cannot be used (unreadable, too large, malformed) is left out with a warning
//! naming it and the problem, and never stops the others from loading.
//!
//! `.toml` (Gemini CLI): `prompt` (a string, required) and `description` (optional); other
//! keys are ignored. `.md` (Claude Code): optional YAML front matter between `---` lines
//! (`description`, `argument-hint`, `allowed-tools`, `model`; other keys ignored), the rest is
//! the prompt. Claude Code reads front matter leniently (`argument-hint: [pr] [priority]` is
//! not valid YAML), so a key YAML cannot give is taken from its `key: value` line as written.
//! Without a description, the prompt's first line that is not blank stands for one, shortened.

use std::path::{Path, PathBuf};

use super::template::Template;
use super::{Command, CommandKind, CommandSet, CommandSource, CustomCommand};

/// Command files larger than this are skipped: a prompt is not a megabyte.
pub const MAX_COMMAND_FILE_BYTES: u64 = 256 * 1024;
/// Characters of a description made from a prompt's first line.
const DESCRIPTION_CHARS: usize = 80;

/// Where custom commands are looked for; see the module's documentation for the order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandDirs {
    /// Installed plugins' command folders (or files), below the user's: their commands are
    /// named `<plugin>:<command>`.
    pub plugins: Vec<crate::plugins::PluginDir>,
    /// In order of precedence, lowest first.
    pub user: Vec<PathBuf>,
    /// In order of precedence, lowest first; all above the user's.
    pub project: Vec<PathBuf>,
}

impl CommandDirs {
    /// The usual directories: under `home` (`.gemini/commands`, `.claude/commands`), under
    /// Tandem's user configuration directory `config` (`commands`), and under the project's
    /// `root` (`.gemini/commands`, `.claude/commands`, `.tandem/commands`). A `None` leaves its
    /// directories out.
    pub fn standard(home: Option<&Path>, config: Option<&Path>, root: Option<&Path>) -> Self {
        let mut user = Vec::new();
        if let Some(home) = home {
            user.push(home.join(".gemini/commands"));
            user.push(home.join(".claude/commands"));
        }
        if let Some(config) = config {
            user.push(config.join("commands"));
        }
        let project = root.map_or_else(Vec::new, |root| {
            [".gemini", ".claude", ".tandem"]
                .iter()
                .map(|dir| root.join(dir).join("commands"))
                .collect()
        });
        CommandDirs {
            plugins: Vec::new(),
            user,
            project,
        }
    }
}

/// Adds the commands of every directory of `dirs` to `set`, in order of precedence.
pub(super) fn load(dirs: &CommandDirs, set: &mut CommandSet) {
    for dir in &dirs.plugins {
        let files = if dir.path.is_file() {
            single_file(&dir.path)
        } else {
            command_files(&dir.path, &mut set.warnings)
        };
        for mut file in files {
            file.name = format!("{}:{}", dir.plugin, file.name);
            file.plugin_root = Some(dir.root.clone());
            let source = CommandSource::Plugin {
                plugin: dir.plugin.clone(),
                path: file.shown.clone(),
            };
            add_file(set, &file, source);
        }
    }
    let user = dirs.user.iter().map(|dir| (dir, false));
    let project = dirs.project.iter().map(|dir| (dir, true));
    for (dir, is_project) in user.chain(project) {
        for file in command_files(dir, &mut set.warnings) {
            let source = if is_project {
                CommandSource::Project {
                    path: file.shown.clone(),
                }
            } else {
                CommandSource::User {
                    path: file.shown.clone(),
                }
            };
            add_file(set, &file, source);
        }
    }
}

/// Adds the command in `file`, or a warning saying why it cannot be used.
fn add_file(set: &mut CommandSet, file: &CommandFile, source: CommandSource) {
    match read_command(file, source, &mut set.warnings) {
        Ok(command) => set.add(command),
        Err(problem) => set
            .warnings
            .push(format!("{}: {problem}", file.shown.display())),
    }
}

/// A command file found in a directory.
struct CommandFile {
    /// Where to read it (a link's target).
    read: PathBuf,
    /// How to name it to the user: in the directory as it was given.
    shown: PathBuf,
    name: String,
    /// A plugin's folder, which `${CLAUDE_PLUGIN_ROOT}` (`${extensionPath}`) in its text names.
    plugin_root: Option<PathBuf>,
}

/// A plugin's manifest may name one command file rather than a folder.
fn single_file(path: &Path) -> Vec<CommandFile> {
    let is_command = matches!(
        path.extension().and_then(|extension| extension.to_str()),
        Some("toml" | "md")
    );
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !is_command || name.is_empty() {
        return Vec::new();
    }
    vec![CommandFile {
        read: path.to_path_buf(),
        shown: path.to_path_buf(),
        name,
        plugin_root: None,
    }]
}

/// The command files under `dir`, in path order. A directory that does not exist has none,
/// without a warning: most users have only some of them.
fn command_files(dir: &Path, warnings: &mut Vec<String>) -> Vec<CommandFile> {
    let Ok(root) = std::fs::canonicalize(dir) else {
        return Vec::new();
    };
    if !root.is_dir() {
        warnings.push(format!(
            "{}: not a directory; no commands read from it",
            dir.display()
        ));
        return Vec::new();
    }
    let walker = ignore::WalkBuilder::new(&root)
        .standard_filters(false)
        .hidden(true)
        .follow_links(false)
        .build();
    let mut files = Vec::new();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                warnings.push(format!("{}: {error}", dir.display()));
                continue;
            }
        };
        let path = entry.path();
        let Ok(relative) = path.strip_prefix(&root) else {
            continue;
        };
        if !matches!(
            path.extension().and_then(|extension| extension.to_str()),
            Some("toml" | "md")
        ) {
            continue;
        }
        let shown = dir.join(relative);
        // The name comes from the path in the directory, whatever a link points at; a link
        // is read only when it stays in the tree and leads to a file.
        let read = match entry.file_type() {
            Some(kind) if kind.is_symlink() => match std::fs::canonicalize(path) {
                Ok(target) if !target.starts_with(&root) => {
                    warnings.push(format!(
                        "{}: a symbolic link to outside {}; not read",
                        shown.display(),
                        dir.display()
                    ));
                    continue;
                }
                Ok(target) if target.is_file() => target,
                Ok(_) => continue,
                Err(error) => {
                    warnings.push(format!(
                        "{}: a broken symbolic link ({error}); not read",
                        shown.display()
                    ));
                    continue;
                }
            },
            Some(kind) if kind.is_file() => path.to_path_buf(),
            _ => continue,
        };
        let name = relative
            .with_extension("")
            .components()
            .map(|part| part.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join(":");
        if name.contains(char::is_whitespace) {
            warnings.push(format!(
                "{}: a command name cannot contain whitespace (it is typed as /name); rename \
                 the file",
                shown.display()
            ));
            continue;
        }
        files.push(CommandFile {
            read,
            shown,
            name,
            plugin_root: None,
        });
    }
    files.sort_by(|a, b| a.shown.cmp(&b.shown));
    files
}

/// The command in `file`; warnings about parts of it that were left out go to `warnings`,
/// and a file that gives no usable command is an error (the problem, for the user).
fn read_command(
    file: &CommandFile,
    source: CommandSource,
    warnings: &mut Vec<String>,
) -> Result<Command, String> {
    let size = std::fs::metadata(&file.read)
        .map_err(|error| format!("cannot read it: {error}"))?
        .len();
    if size > MAX_COMMAND_FILE_BYTES {
        return Err(format!(
            "{} KiB is larger than a command file may be ({} KiB); not read",
            size.div_ceil(1024),
            MAX_COMMAND_FILE_BYTES / 1024
        ));
    }
    let bytes = std::fs::read(&file.read).map_err(|error| format!("cannot read it: {error}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    // A plugin's command names the plugin's files by its folder (Claude Code substitutes
    // `${CLAUDE_PLUGIN_ROOT}`, Gemini CLI `${extensionPath}`).
    let text = match &file.plugin_root {
        Some(root) => {
            let root = root.to_string_lossy();
            text.replace("${CLAUDE_PLUGIN_ROOT}", &root)
                .replace("${extensionPath}", &root)
        }
        None => text.to_owned(),
    };
    let text = text.as_str();
    let mut warn = |problem: String| warnings.push(format!("{}: {problem}", file.shown.display()));
    let is_toml = file
        .read
        .extension()
        .is_some_and(|extension| extension == "toml");
    let (custom, description, argument_hint) = if is_toml {
        gemini_command(text, &mut warn)?
    } else {
        claude_command(text, &mut warn)
    };
    let description = description
        .filter(|description| !description.trim().is_empty())
        .or_else(|| custom.template.first_line().map(|line| shorten(&line)))
        .unwrap_or_else(|| format!("Custom command from {}", file.shown.display()));
    Ok(Command {
        name: file.name.clone(),
        description,
        argument_hint,
        source,
        kind: CommandKind::Custom(custom),
    })
}

type Parts = (CustomCommand, Option<String>, Option<String>);

/// A Gemini CLI command file: `prompt` and `description`.
fn gemini_command(text: &str, warn: &mut dyn FnMut(String)) -> Result<Parts, String> {
    let table: toml::Table = toml::from_str(text).map_err(|error| {
        let line = error
            .span()
            .and_then(|span| text.as_bytes().get(..span.start))
            .map(|before| before.iter().filter(|&&byte| byte == b'\n').count() + 1);
        match line {
            Some(line) => format!("not valid TOML (line {line}): {}", error.message().trim()),
            None => format!("not valid TOML: {}", error.message().trim()),
        }
    })?;
    let prompt = match table.get("prompt") {
        Some(toml::Value::String(prompt)) => prompt,
        Some(_) => return Err("`prompt` must be a string".to_owned()),
        None => {
            return Err("there is no `prompt` (the text the command sends to the model)".to_owned())
        }
    };
    let description = match table.get("description") {
        Some(toml::Value::String(description)) => Some(description.clone()),
        Some(_) => {
            warn("`description` must be a string; ignored".to_owned());
            None
        }
        None => None,
    };
    let template = Template::gemini(prompt)?;
    let custom = CustomCommand {
        template,
        allowed_tools: Vec::new(),
        model: None,
    };
    Ok((custom, description, None))
}

/// A Claude Code command file: front matter, if any, and the prompt.
fn claude_command(text: &str, warn: &mut dyn FnMut(String)) -> Parts {
    let (front, body) = match split_front_matter(text) {
        Some(FrontMatter::Closed { yaml, body }) => (Some(yaml), body),
        Some(FrontMatter::Unclosed) => {
            warn(
                "the front matter that starts with `---` has no closing `---` line; the whole \
                 file is the prompt"
                    .to_owned(),
            );
            (None, text)
        }
        None => (None, text),
    };
    let meta = front
        .map(|yaml| Meta::parse(yaml, warn))
        .unwrap_or_default();
    let custom = CustomCommand {
        template: Template::claude(body.trim()),
        allowed_tools: meta.allowed_tools,
        model: meta.model,
    };
    (custom, meta.description, meta.argument_hint)
}

/// A Markdown file's front matter, as `split_front_matter` finds it (shared with skills'
/// `SKILL.md`).
pub(crate) enum FrontMatter<'a> {
    Closed { yaml: &'a str, body: &'a str },
    Unclosed,
}

/// The front matter of a Markdown file: between a first line `---` and the next line `---`.
pub(crate) fn split_front_matter(text: &str) -> Option<FrontMatter<'_>> {
    let first_break = text.find('\n')?;
    if text[..first_break].trim_end() != "---" {
        return None;
    }
    let rest = &text[first_break + 1..];
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(FrontMatter::Closed {
                yaml: &rest[..at],
                body: &rest[at + line.len()..],
            });
        }
        at += line.len();
    }
    Some(FrontMatter::Unclosed)
}

/// What a command's (or a skill's, or a subagent definition's) front matter says.
#[derive(Default)]
pub(crate) struct Meta {
    /// A skill's or an agent's name; commands are named by their file.
    pub(crate) name: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) argument_hint: Option<String>,
    pub(crate) allowed_tools: Vec<String>,
    /// A subagent's `tools`; `None` when the key is absent.
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) model: Option<String>,
}

impl Meta {
    pub(crate) fn parse(yaml: &str, warn: &mut dyn FnMut(String)) -> Meta {
        let parsed = yaml_serde::from_str::<yaml_serde::Value>(yaml);
        let lines = raw_lines(yaml);
        let mapping = match &parsed {
            Ok(yaml_serde::Value::Mapping(mapping)) => Some(mapping),
            Ok(yaml_serde::Value::Null) => None,
            Ok(_) => {
                warn("the front matter is not a list of `key: value` lines; ignored".to_owned());
                return Meta::default();
            }
            Err(error) if lines.is_empty() => {
                warn(format!(
                    "the front matter is not valid YAML ({error}); ignored"
                ));
                return Meta::default();
            }
            // Read line by line instead, as Claude Code does.
            Err(_) => None,
        };
        // A string YAML gives, else the line as written (`[message]` is a YAML list).
        let text = |key: &str| -> Option<String> {
            match mapping.and_then(|mapping| mapping.get(key)) {
                Some(yaml_serde::Value::String(value)) => Some(value.clone()),
                Some(yaml_serde::Value::Null) => None,
                _ => lines
                    .iter()
                    .find(|(name, _)| *name == key)
                    .map(|(_, value)| value.clone())
                    .filter(|value| !value.is_empty()),
            }
        };
        // A YAML list, or one comma-separated string.
        let list = |key: &str| -> Option<Vec<String>> {
            match mapping.and_then(|mapping| mapping.get(key)) {
                Some(yaml_serde::Value::Sequence(items)) => Some(
                    items
                        .iter()
                        .filter_map(|item| match item {
                            yaml_serde::Value::String(tool) => Some(tool.trim().to_owned()),
                            _ => None,
                        })
                        .collect(),
                ),
                _ => text(key).map(|list| split_tools(&list)),
            }
        };
        Meta {
            name: text("name"),
            description: text("description"),
            argument_hint: text("argument-hint"),
            allowed_tools: list("allowed-tools").unwrap_or_default(),
            tools: list("tools"),
            model: text("model"),
        }
    }
}

/// `key: value` lines at the start of a line, the value as written (surrounding quotes
/// removed); a key without a value followed by `- item` lines gets the items, joined with
/// commas.
fn raw_lines(yaml: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in yaml.lines() {
        if let Some(item) = line.trim_start().strip_prefix("- ") {
            if let Some((_, value)) = out.last_mut() {
                if !value.is_empty() {
                    value.push_str(", ");
                }
                value.push_str(unquote(item.trim()));
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let valid_key = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if valid_key {
            out.push((key, unquote(value.trim()).to_owned()));
        }
    }
    out
}

/// `value` without the quotes around it, if it has matching ones.
fn unquote(value: &str) -> &str {
    ['"', '\'']
        .iter()
        .find_map(|&quote| {
            value
                .strip_prefix(quote)
                .and_then(|inner| inner.strip_suffix(quote))
        })
        .unwrap_or(value)
}

/// `Bash(git add:*), Bash(git status:*), Read` as its tools: split at the commas outside
/// parentheses.
fn split_tools(list: &str) -> Vec<String> {
    let mut tools = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                tools.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    tools.push(current);
    tools
        .into_iter()
        .map(|tool| tool.trim().to_owned())
        .filter(|tool| !tool.is_empty())
        .collect()
}

/// `line` cut to `DESCRIPTION_CHARS` characters, at a word where there is one, with `…`.
fn shorten(line: &str) -> String {
    match line.char_indices().nth(DESCRIPTION_CHARS) {
        None => line.to_owned(),
        Some((cut, _)) => {
            let head = &line[..cut];
            let head = head.rfind(' ').map_or(head, |space| &head[..space]);
            format!("{}…", head.trim_end())
        }
    }
}

#[cfg(test)]
mod tests;
