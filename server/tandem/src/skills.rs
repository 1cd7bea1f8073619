//! `tandem skills`: the skills a session in a workspace would offer (the user's, and the
//! project's when the folder is trusted), with where each comes from, and the skills that
//! could not be used (`--json` for scripts and editors).

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use serde_json::json;
use tandem_agent::host::{Host, HostOptions};
use tandem_agent::skills::Skill;
use tandem_agent::store::SessionStore;
use tandem_providers::settings::user_settings_path;

use crate::ask::{workspace_root, Headless};

#[derive(Debug, clap::Args)]
pub struct SkillsArgs {
    /// The workspace whose skills (and trust) apply. Default: the current directory.
    #[arg(long, alias = "dir", value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print `{"skills": [...], "warnings": [...]}` as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tandem skills`; settings that cannot be read are an error (exit 2).
pub fn run(args: SkillsArgs) -> Result<i32> {
    let root = workspace_root(args.workspace)?;
    let host = Host::new(HostOptions {
        user_settings: user_settings_path(),
        state_dir: SessionStore::default_state_dir(),
        transcripts: false,
        language_servers: None,
        one_shot: false,
    });
    let set = host
        .skills(std::slice::from_ref(&root), &Headless::default())
        .map_err(|error| anyhow!("{error}"))?;
    let mut out = io::stdout().lock();
    if args.json {
        let listing = json!({ "skills": set.skills, "warnings": set.warnings });
        writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
        return Ok(0);
    }
    for warning in &set.warnings {
        eprintln!("warning: {warning}");
    }
    if set.skills.is_empty() {
        eprintln!(
            "no skills found for {} (folders with a SKILL.md under .tandem/skills, \
             .claude/skills or .gemini/skills, in the project or the user's folders; see \
             docs/skills.md)",
            root.display()
        );
    }
    write!(out, "{}", render(&set.skills))?;
    Ok(0)
}

/// One line per skill (name, scope, source, description), its folder indented under it.
fn render(skills: &[Skill]) -> String {
    let mut text = String::new();
    for skill in skills {
        let origin = match &skill.plugin {
            Some(plugin) => format!("plugin {plugin}"),
            None => format!(
                "{}, {}",
                format!("{:?}", skill.scope).to_lowercase(),
                format!("{:?}", skill.source).to_lowercase()
            ),
        };
        text.push_str(&format!(
            "{} ({origin}): {}\n  {}\n",
            skill.name,
            skill.description,
            skill.path.display()
        ));
    }
    text
}
