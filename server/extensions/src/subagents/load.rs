//! Finding the custom agents: Markdown files with YAML front matter (`name`, `description`,
//! `tools`, `model`; the body is the system prompt), Claude Code's format. The folders, lowest
//! precedence first: the user's `~/.claude/agents/` and `agents/` in Tandem's user config
//! directory, then the project's `.claude/agents/` and `.tandem/agents/`. A later definition
//! of a name replaces an earlier one (the built-in agent's too) with a warning. The project's
//! folders are read only in a trusted workspace; otherwise one warning says how many files
//! were skipped. A file that cannot be used is left out with a warning naming it.

use std::path::{Path, PathBuf};

use super::definition::{codebase_investigator, tool_names, AgentDefinition, AgentSource};
use crate::slash::load::{split_front_matter, FrontMatter, Meta};

/// Agent files larger than this are skipped: a system prompt is not a megabyte.
pub const MAX_AGENT_FILE_BYTES: u64 = 256 * 1024;

/// Where custom agents are looked for, lowest precedence first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentDirs {
    pub user: Vec<PathBuf>,
    pub project: Vec<PathBuf>,
    /// Installed plugins' agent folders, below the user's: their agents are named
    /// `<plugin>:<agent>`.
    pub plugins: Vec<crate::plugins::PluginDir>,
}

impl AgentDirs {
    /// Under `home` (`.claude/agents`), Tandem's user configuration directory `config`
    /// (`agents`) and the project's `root` (`.claude/agents`, `.tandem/agents`).
    pub fn standard(home: Option<&Path>, config: Option<&Path>, root: Option<&Path>) -> Self {
        let user = [
            home.map(|home| home.join(".claude/agents")),
            config.map(|config| config.join("agents")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let project = root.map_or_else(Vec::new, |root| {
            vec![root.join(".claude/agents"), root.join(".tandem/agents")]
        });
        AgentDirs {
            user,
            project,
            plugins: Vec::new(),
        }
    }
}

/// The agents a session offers (the built-in one first), and what could not be used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentSet {
    pub agents: Vec<AgentDefinition>,
    pub warnings: Vec<String>,
}

impl AgentSet {
    /// The built-in agent and those of `dirs`; the project's only when `trusted`.
    pub fn load(dirs: &AgentDirs, trusted: bool) -> AgentSet {
        let mut set = AgentSet {
            agents: vec![codebase_investigator()],
            warnings: Vec::new(),
        };
        for dir in &dirs.plugins {
            // Loaded apart and then named, so that no plugin's agent replaces another's.
            let mut own = AgentSet::default();
            let files = if dir.path.is_file() {
                vec![dir.path.clone()]
            } else {
                agent_files(&dir.path)
            };
            own.load_files(files, AgentSource::Plugin);
            for mut agent in own.agents {
                agent.name = format!("{}:{}", dir.plugin, agent.name);
                set.agents.push(agent);
            }
            set.warnings.extend(own.warnings);
        }
        for dir in &dirs.user {
            set.load_dir(dir, AgentSource::User);
        }
        if trusted {
            for dir in &dirs.project {
                set.load_dir(dir, AgentSource::Project);
            }
        } else {
            let skipped: usize = dirs.project.iter().map(|dir| agent_files(dir).len()).sum();
            if skipped > 0 {
                set.warnings.push(format!(
                    "{skipped} agent file(s) of this workspace were not loaded because the folder \
                     is not trusted; add it to `trustedFolders` in the user settings to use them"
                ));
            }
        }
        set
    }

    fn load_dir(&mut self, dir: &Path, source: AgentSource) {
        self.load_files(agent_files(dir), source);
    }

    fn load_files(&mut self, files: Vec<PathBuf>, source: AgentSource) {
        for path in files {
            match read_agent(&path, source) {
                Ok(agent) => {
                    if let Some(old) = self.agents.iter_mut().find(|old| old.name == agent.name) {
                        let old_place = old.path.as_ref().map_or_else(
                            || "the built-in agent".to_owned(),
                            |p| p.display().to_string(),
                        );
                        self.warnings.push(format!(
                            "{}: the agent `{}` replaces the one of {old_place}",
                            path.display(),
                            agent.name
                        ));
                        *old = agent;
                    } else {
                        self.agents.push(agent);
                    }
                }
                Err(problem) => self
                    .warnings
                    .push(format!("{}: agent not loaded: {problem}", path.display())),
            }
        }
    }
}

/// The `.md` files directly in `dir`, in name order; hidden ones skipped.
fn agent_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("");
            !name.starts_with('.') && name.ends_with(".md") && path.is_file()
        })
        .collect();
    files.sort();
    files
}

fn read_agent(path: &Path, source: AgentSource) -> Result<AgentDefinition, String> {
    let size = std::fs::metadata(path)
        .map_err(|error| error.to_string())?
        .len();
    if size > MAX_AGENT_FILE_BYTES {
        return Err(format!(
            "it has {size} bytes, more than the {MAX_AGENT_FILE_BYTES} an agent file may have"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let (yaml, body) = match split_front_matter(&text) {
        Some(FrontMatter::Closed { yaml, body }) => (yaml, body),
        Some(FrontMatter::Unclosed) => {
            return Err("the front matter that starts with `---` has no closing `---` line".into())
        }
        None => {
            return Err("it has no front matter (`---` lines with `name` and `description`)".into())
        }
    };
    let mut problems = Vec::new();
    let meta = Meta::parse(yaml, &mut |problem| problems.push(problem));
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem);
    }
    let stem = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("");
    let name = meta.name.unwrap_or_else(|| stem.to_owned());
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return Err(format!(
            "the name {name:?} must be letters, digits, `-` and `_` only"
        ));
    }
    let description = meta
        .description
        .filter(|description| !description.trim().is_empty())
        .ok_or("it has no `description`, which the agent choosing it reads")?;
    let system_prompt = body.trim();
    if system_prompt.is_empty() {
        return Err("its body, the agent's system prompt, is empty".into());
    }
    let tools = meta.tools.map(|entries| {
        let mut names: Vec<String> = Vec::new();
        for entry in entries {
            let mapped = tool_names(&entry).map_or_else(
                || vec![entry.clone()],
                |names| names.iter().map(|&n| n.to_owned()).collect(),
            );
            for name in mapped {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    });
    // Claude Code's aliases of its own models mean "whatever the parent runs on" here.
    let model = meta
        .model
        .filter(|model| !["inherit", "sonnet", "opus", "haiku", ""].contains(&model.trim()));
    Ok(AgentDefinition {
        name,
        description: description.trim().to_owned(),
        system_prompt: system_prompt.to_owned(),
        tools,
        model,
        source,
        path: Some(path.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (`(path, text)`) under a temporary directory; returns it and the dirs
    /// rooted there: `home`, `config` and the project `ws`.
    fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, AgentDirs) {
        let temp = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = temp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let root = temp.path();
        let dirs = AgentDirs::standard(
            Some(&root.join("home")),
            Some(&root.join("config")),
            Some(&root.join("ws")),
        );
        (temp, dirs)
    }

    fn agent(name: &str, description: &str, extra: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n{extra}---\nYou are {name}.\n")
    }

    /// (name, description, tools) of each agent, and the warnings with the temp path cut.
    fn summary(set: &AgentSet, temp: &Path) -> (Vec<String>, Vec<String>) {
        let agents = set
            .agents
            .iter()
            .map(|agent| {
                format!(
                    "{} ({:?}): {} tools={:?} model={:?}",
                    agent.name, agent.source, agent.description, agent.tools, agent.model
                )
            })
            .collect();
        let prefix = format!("{}/", temp.display());
        let warnings = set
            .warnings
            .iter()
            .map(|warning| warning.replace(&prefix, ""))
            .collect();
        (agents, warnings)
    }

    #[test]
    fn agents_from_every_folder_with_precedence_and_claude_tool_names() {
        let reviewer = agent("reviewer", "user's reviewer", "tools: Read, Grep\n");
        let project_reviewer = agent(
            "reviewer",
            "project's reviewer",
            "tools:\n  - Bash(git diff:*)\n  - grep\n",
        );
        let (temp, dirs) = setup(&[
            ("home/.claude/agents/reviewer.md", &reviewer),
            (
                "config/agents/writer.md",
                &agent("writer", "writes", "model: sonnet\n"),
            ),
            (
                "ws/.claude/agents/tester.md",
                &agent("tester", "tests", "model: fast\n"),
            ),
            ("ws/.tandem/agents/reviewer.md", &project_reviewer),
            ("ws/.tandem/agents/notes.txt", "not an agent"),
        ]);
        let set = AgentSet::load(&dirs, true);
        let (agents, warnings) = summary(&set, temp.path());
        assert_eq!(agents[0].split(' ').next(), Some("codebase_investigator"));
        assert_eq!(
            agents[1..],
            [
                "reviewer (Project): project's reviewer tools=Some([\"shell\", \"grep\"]) model=None",
                "writer (User): writes tools=None model=None",
                "tester (Project): tests tools=None model=Some(\"fast\")",
            ]
        );
        assert_eq!(
            warnings,
            ["ws/.tandem/agents/reviewer.md: the agent `reviewer` replaces the one of home/.claude/agents/reviewer.md"]
        );
        assert_eq!(set.agents[1].system_prompt, "You are reviewer.");
    }

    #[test]
    fn an_untrusted_workspace_brings_no_agents_and_one_warning() {
        let (temp, dirs) = setup(&[
            ("ws/.tandem/agents/a.md", &agent("a", "first", "")),
            ("ws/.claude/agents/b.md", &agent("b", "second", "")),
            ("config/agents/mine.md", &agent("mine", "mine", "")),
        ]);
        let (agents, warnings) = summary(&AgentSet::load(&dirs, false), temp.path());
        assert_eq!(agents.len(), 2, "{agents:?}");
        assert!(agents[1].starts_with("mine (User)"), "{agents:?}");
        assert_eq!(
            warnings,
            ["2 agent file(s) of this workspace were not loaded because the folder is not trusted; add it to `trustedFolders` in the user settings to use them"]
        );
    }

    #[test]
    fn bad_files_are_skipped_with_a_warning_naming_them() {
        let (temp, dirs) = setup(&[
            ("config/agents/a_no_front.md", "Just a prompt.\n"),
            ("config/agents/b_unclosed.md", "---\nname: x\n"),
            (
                "config/agents/c_no_description.md",
                "---\nname: c\n---\nPrompt.\n",
            ),
            ("config/agents/d_bad_name.md", &agent("bad name!", "d", "")),
            (
                "config/agents/e_empty_body.md",
                "---\ndescription: e\n---\n\n",
            ),
            (
                "config/agents/f_not_mapping.md",
                "---\n- a\n- b\n---\nPrompt.\n",
            ),
            (
                "config/agents/g_named_by_file.md",
                "---\ndescription: g\n---\nPrompt.\n",
            ),
            (
                "config/agents/h_huge.md",
                &"x".repeat(MAX_AGENT_FILE_BYTES as usize + 1),
            ),
        ]);
        let (agents, warnings) = summary(&AgentSet::load(&dirs, true), temp.path());
        assert_eq!(agents.len(), 2, "{agents:?}");
        assert!(
            agents[1].starts_with("g_named_by_file (User): g"),
            "{agents:?}"
        );
        let expected = [
            "config/agents/a_no_front.md: agent not loaded: it has no front matter (`---` lines with `name` and `description`)",
            "config/agents/b_unclosed.md: agent not loaded: the front matter that starts with `---` has no closing `---` line",
            "config/agents/c_no_description.md: agent not loaded: it has no `description`, which the agent choosing it reads",
            "config/agents/d_bad_name.md: agent not loaded: the name \"bad name!\" must be letters, digits, `-` and `_` only",
            "config/agents/e_empty_body.md: agent not loaded: its body, the agent's system prompt, is empty",
            "config/agents/f_not_mapping.md: agent not loaded: the front matter is not a list of `key: value` lines; ignored",
            "config/agents/h_huge.md: agent not loaded: it has 262145 bytes, more than the 262144 an agent file may have",
        ];
        assert_eq!(warnings, expected);
    }
}
