//! Skills: folders holding a `SKILL.md` (YAML front matter `name`, `description`, optional
//! `allowed-tools`; then the instructions) and whatever files the instructions refer to, as
//! Claude Code and Gemini CLI read them. Only each skill's name and description reach the
//! model up front (`prompt_section`); the `activate_skill` tool hands it the instructions and
//! the folder's file list when a task matches (progressive disclosure).
//!
//! The folders, in order of precedence (the first one holding a name wins; the others are
//! warned about as shadowed): the project's `.tandem/skills/`, `.claude/skills/` and
//! `.gemini/skills/`, then the user's `skills/` in Tandem's configuration directory,
//! `~/.claude/skills/` and `~/.gemini/skills/`, then installed plugins' `skills/` (named
//! `<plugin>:<skill>`). The project's folders are read only when the
//! user trusts the workspace: a cloned repository must not put instructions in front of the
//! model, nor scripts in its reach, unasked.
//!
//! A skill that cannot be used (no front matter, no description, a bad name, not UTF-8, too
//! large) is left out with a warning naming its file, and never stops the others from loading.
//! Discovery reads files only: nothing here runs.

pub mod activate_skill;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::slash::{split_front_matter, FrontMatter, Meta};

/// A `SKILL.md` larger than this is left out: instructions are not a megabyte, and the model
/// reads the rest of a skill's material from its other files.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;
/// Characters of a description the system prompt shows; the rest is cut with `…`.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Characters a skill's name may have (Claude Code's limit).
const MAX_NAME_CHARS: usize = 64;

/// Whose folder a skill comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SkillScope {
    /// The user's configuration or home folder: every workspace sees it.
    User,
    /// The workspace's first root: loaded only in a trusted workspace.
    Project,
}

/// Which tool's folder convention a skill was found under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SkillSource {
    Tandem,
    Claude,
    Gemini,
    /// An installed plugin's (`tandem plugins`).
    Plugin,
}

/// One folder skills are looked for in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    pub path: PathBuf,
    pub scope: SkillScope,
    pub source: SkillSource,
    /// The installed plugin whose folder it is: its skills are named `<plugin>:<skill>`.
    pub plugin: Option<String>,
}

/// Where skills are looked for, highest precedence first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillDirs(pub Vec<SkillDir>);

impl SkillDirs {
    /// The usual folders: under the project's `root` (`.tandem/skills`, `.claude/skills`,
    /// `.gemini/skills`), Tandem's user configuration directory `config` (`skills`), and
    /// `home` (`.claude/skills`, `.gemini/skills`). A `None` leaves its folders out.
    pub fn standard(home: Option<&Path>, config: Option<&Path>, root: Option<&Path>) -> Self {
        let mut dirs = Vec::new();
        let mut add = |path: PathBuf, scope, source| {
            dirs.push(SkillDir {
                path,
                scope,
                source,
                plugin: None,
            })
        };
        if let Some(root) = root {
            add(
                root.join(".tandem/skills"),
                SkillScope::Project,
                SkillSource::Tandem,
            );
            add(
                root.join(".claude/skills"),
                SkillScope::Project,
                SkillSource::Claude,
            );
            add(
                root.join(".gemini/skills"),
                SkillScope::Project,
                SkillSource::Gemini,
            );
        }
        if let Some(config) = config {
            add(config.join("skills"), SkillScope::User, SkillSource::Tandem);
        }
        if let Some(home) = home {
            add(
                home.join(".claude/skills"),
                SkillScope::User,
                SkillSource::Claude,
            );
            add(
                home.join(".gemini/skills"),
                SkillScope::User,
                SkillSource::Gemini,
            );
        }
        SkillDirs(dirs)
    }

    /// Adds installed plugins' skill folders, below every other folder.
    pub fn with_plugins(mut self, plugins: &[crate::plugins::PluginDir]) -> Self {
        self.0.extend(plugins.iter().map(|dir| SkillDir {
            path: dir.path.clone(),
            scope: SkillScope::User,
            source: SkillSource::Plugin,
            plugin: Some(dir.plugin.clone()),
        }));
        self
    }
}

/// A skill as discovery found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    pub name: String,
    /// As the front matter gives it, whitespace runs made single spaces.
    pub description: String,
    /// The skill's folder, canonical (a linked folder's target).
    pub path: PathBuf,
    pub scope: SkillScope,
    pub source: SkillSource,
    /// `allowed-tools`, informational: Tandem does not pre-approve them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// The plugin that brought it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
}

impl Skill {
    /// The skill's instructions file.
    pub fn file(&self) -> PathBuf {
        self.path.join("SKILL.md")
    }
}

/// The skills a session offers, sorted by name, and the problems met finding them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillSet {
    pub skills: Vec<Skill>,
    pub warnings: Vec<String>,
}

impl SkillSet {
    pub fn find(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The system prompt's section naming every skill, or `None` without skills. Sorted by
    /// name, so the same skills give the same bytes (the prompt is part of the cached prefix).
    pub fn prompt_section(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut section = String::from(
            "# Skills\n\nSkills are instructions, with scripts and reference files, for \
             particular kinds of task. When the task at hand matches a skill's description, \
             call `activate_skill` with its name before you start, and follow what it \
             returns.\n\n",
        );
        for skill in &self.skills {
            let description = shorten(&skill.description, MAX_DESCRIPTION_CHARS);
            section.push_str(&format!("- {}: {description}\n", skill.name));
        }
        Some(section.trim_end().to_owned())
    }
}

/// The skills in `dirs`; the project's folders only when `trusted`.
pub fn discover(dirs: &SkillDirs, trusted: bool) -> SkillSet {
    let mut set = SkillSet::default();
    // Name → the SKILL.md that won it, for the shadowing warnings.
    let mut chosen: BTreeMap<String, (PathBuf, Skill)> = BTreeMap::new();
    let mut untrusted = 0;
    for dir in &dirs.0 {
        let folders = skill_folders(&dir.path, &mut set.warnings);
        if dir.scope == SkillScope::Project && !trusted {
            untrusted += folders.len();
            continue;
        }
        for (shown, folder) in folders {
            let file = shown.join("SKILL.md");
            let skill = match read_skill(&folder, dir, &mut set.warnings) {
                Ok(skill) => skill,
                Err(problem) => {
                    set.warnings.push(format!("{}: {problem}", file.display()));
                    continue;
                }
            };
            match chosen.get(&skill.name) {
                // The same folder reached twice (the project is the home folder): no clash.
                Some((_, winner)) if winner.path == skill.path => {}
                Some((winner_file, _)) => set.warnings.push(format!(
                    "{}: the skill `{}` is shadowed by {}, which takes precedence",
                    file.display(),
                    skill.name,
                    winner_file.display()
                )),
                None => {
                    chosen.insert(skill.name.clone(), (file, skill));
                }
            }
        }
    }
    if untrusted > 0 {
        let plural = if untrusted == 1 { "" } else { "s" };
        set.warnings.push(format!(
            "{untrusted} skill{plural} in this workspace (.tandem/skills, .claude/skills, \
             .gemini/skills) not loaded because the folder is not trusted; to use them, add the \
             folder to `trustedFolders` in the user settings file"
        ));
    }
    set.skills = chosen.into_values().map(|(_, skill)| skill).collect();
    set
}

/// The folders under `dir` that hold a `SKILL.md`, in name order: (as shown, canonical).
/// Hidden folders are skipped; a linked folder is followed (skills are often linked in from a
/// shared checkout). A `dir` that does not exist has none, without a warning.
fn skill_folders(dir: &Path, warnings: &mut Vec<String>) -> Vec<(PathBuf, PathBuf)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            if dir.exists() {
                warnings.push(format!("{}: cannot read it: {error}", dir.display()));
            }
            return Vec::new();
        }
    };
    let mut folders: Vec<(PathBuf, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|entry| {
            let shown = entry.path();
            let canonical = std::fs::canonicalize(&shown).ok()?;
            (canonical.is_dir() && canonical.join("SKILL.md").is_file())
                .then_some((shown, canonical))
        })
        .collect();
    folders.sort();
    folders
}

/// Reads the skill in `folder` (canonical), found in `dir`; what it had to work around goes to
/// `warnings`.
fn read_skill(folder: &Path, dir: &SkillDir, warnings: &mut Vec<String>) -> Result<Skill, String> {
    let (meta, _) = read_skill_file(&folder.join("SKILL.md"))?;
    let folder_name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Claude Code requires a name; Gemini CLI and older skills go by the folder's. A name the
    // model could not call (`Agent Development`, as some of Claude Code's own plugins write
    // it) gives way to the folder's, as Claude Code's plugins name their skills by folder.
    let name = match meta.name.map(|name| name.trim().to_owned()) {
        Some(name) => match check_name(&name) {
            Ok(()) => name,
            Err(problem) if check_name(&folder_name).is_ok() => {
                // A plugin's skills go by their folders anyway; only the user's own hear of it.
                if dir.plugin.is_none() {
                    warnings.push(format!(
                        "{}: {}; it is called `{folder_name}`, after its folder",
                        folder.join("SKILL.md").display(),
                        problem.trim_end_matches("; not loaded")
                    ));
                }
                folder_name
            }
            Err(problem) => return Err(problem),
        },
        None => {
            check_name(&folder_name)?;
            folder_name
        }
    };
    let name = match &dir.plugin {
        Some(plugin) => format!("{plugin}:{name}"),
        None => name,
    };
    let description = meta
        .description
        .map(|description| description.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|description| !description.is_empty())
        .ok_or(
            "there is no `description` in the front matter (the model chooses a skill by its \
             description); not loaded",
        )?;
    Ok(Skill {
        name,
        description,
        path: folder.to_path_buf(),
        scope: dir.scope,
        source: dir.source,
        allowed_tools: split_allowed_tools(meta.allowed_tools),
        plugin: dir.plugin.clone(),
    })
}

/// A `SKILL.md`'s front matter and its body (the instructions), read afresh. `Err` says why
/// it cannot be used.
pub(crate) fn read_skill_file(file: &Path) -> Result<(Meta, String), String> {
    let size = std::fs::metadata(file)
        .map_err(|error| format!("cannot read it: {error}"))?
        .len();
    if size > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "{} KiB is larger than a SKILL.md may be ({} KiB); not loaded",
            size.div_ceil(1024),
            MAX_SKILL_FILE_BYTES / 1024
        ));
    }
    let bytes = std::fs::read(file).map_err(|error| format!("cannot read it: {error}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let (yaml, body) = match split_front_matter(text) {
        Some(FrontMatter::Closed { yaml, body }) => (yaml, body),
        Some(FrontMatter::Unclosed) => {
            return Err(
                "the front matter that starts with `---` has no closing `---` line; not loaded"
                    .to_owned(),
            )
        }
        None => {
            return Err(
                "there is no front matter (a first line `---`, then `name:` and \
                 `description:` lines, then `---`); not loaded"
                    .to_owned(),
            )
        }
    };
    let mut problems = Vec::new();
    let meta = Meta::parse(yaml, &mut |problem| problems.push(problem));
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem.replace("; ignored", "; not loaded"));
    }
    Ok((meta, body.trim().to_owned()))
}

/// Names are what the model calls `activate_skill` with: lowercase letters, digits, `-` and
/// `_` (Claude Code's rule, with `_` for older skills), at most 64 characters.
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "the name `{name}` is not usable: a skill's name has at most {MAX_NAME_CHARS} \
             lowercase letters, digits, `-` and `_`; not loaded"
        ))
    }
}

/// `allowed-tools` as a list: YAML's list or a comma-separated string arrive split already; a
/// space-separated string (the Agent Skills form, `Bash(git:*) Read`) is split at the spaces
/// outside parentheses.
pub(crate) fn split_allowed_tools(tools: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for tool in tools {
        let mut depth = 0usize;
        let mut current = String::new();
        for c in tool.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                c if c.is_whitespace() && depth == 0 => {
                    out.extend((!current.is_empty()).then(|| std::mem::take(&mut current)));
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        out.extend((!current.is_empty()).then_some(current));
    }
    out
}

/// `text` cut to `max` characters, at a word where there is one, with `…`.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let head = &text[..cut];
            let head = head.rfind(' ').map_or(head, |space| &head[..space]);
            format!("{}…", head.trim_end())
        }
    }
}

#[cfg(test)]
mod tests;
