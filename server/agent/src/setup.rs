//! Setting up a session the same way in every front end: the sandbox and tool context from the
//! settings, and the agent's configuration (system prompt with memory, environment, approvals).
//! `tandem ask`, `tandem tool` and the language server all start here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::editor::Editor;
use crate::environment::environment_context;
use crate::memory::{Memory, MemoryConfig};
use crate::prompt::{system_prompt, PromptConfig};
use crate::settings::AgentSettings;
use crate::skills::{SkillDirs, SkillSet};
use crate::slash::CommandDirs;
use crate::tools::shell::ShellEnvironment;
use crate::tools::{Tool, ToolContext};
use crate::workspace::Workspace;
use crate::{memory, AgentConfig};

/// The sandbox (the roots plus the settings' `extraDirectories`, and the skills' folders, read
/// only) and what the tools share, the skills found included. `user_dir` is the user's
/// settings directory, where the global memory file and the user's skills live.
pub fn tool_context(
    roots: Vec<PathBuf>,
    settings: &AgentSettings,
    editor: Arc<dyn Editor>,
    user_dir: Option<&Path>,
) -> ToolContext {
    let home = dirs::home_dir();
    let base = roots.first().cloned().unwrap_or_default();
    // Settings name directories as a person writes them: `~/notes`, or relative to the project.
    let extra = settings
        .extra_directories
        .iter()
        .map(|dir| match (dir.strip_prefix("~"), &home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => base.join(dir),
        })
        .collect();
    let skills = skills(user_dir, roots.first().map(PathBuf::as_path), settings);
    let skill_folders = skills.skills.iter().map(|skill| skill.path.clone());
    ToolContext {
        workspace: Arc::new(Workspace::new(roots, extra).with_read_only(skill_folders)),
        user_memory_file: user_dir.map(|dir| dir.join("AGENTS.md")),
        editor,
        syntax: settings.syntax.clone(),
        shell_environment: Arc::new(ShellEnvironment::new(
            &settings.key_variables,
            &settings.shell.hide_env,
            &settings.shell.pass_env,
        )),
        skills: Arc::new(skills),
        web_fetch: settings.web_fetch.clone(),
        diagnostics: settings.diagnostics.clone(),
        ..ToolContext::on_disk(Vec::new())
    }
}

/// The agent's configuration for a session in `ctx`'s workspace: the system prompt (with the
/// memory files found from the roots), the environment for the first prompt, the turn limit, the
/// approval policy and where custom commands are found. The skills `ctx` found are named at the
/// end of the system prompt. `Err` when the system prompt cannot be built (a missing
/// replacement file); the strings beside the config are warnings for the user.
pub fn agent_config(
    ctx: &ToolContext,
    settings: &AgentSettings,
) -> Result<(AgentConfig, Vec<String>), String> {
    let memory = settings.memory.config();
    let (mut system_prompt, memory) =
        system_prompt_with_memory(&ctx.workspace, &settings.system_prompt, &memory)?;
    if let Some(section) = ctx.skills.prompt_section() {
        system_prompt = format!("{}\n\n{section}", system_prompt.trim_end());
    }
    let user_dir = ctx.user_memory_file.as_deref().and_then(Path::parent);
    let config = AgentConfig {
        system_prompt,
        max_turns: settings.max_turns,
        approval: settings.approval.clone(),
        environment: Some(environment_context(ctx.workspace.roots(), &today())),
        context: settings.context.clone(),
        protected: crate::approval::protected::ProtectedPaths::for_user(),
        command_dirs: command_dirs(
            user_dir,
            ctx.workspace.roots().first().map(PathBuf::as_path),
        ),
        memory: settings.memory.config(),
        prompt: settings.system_prompt.clone(),
        next_speaker: settings.next_speaker_check,
        hooks: crate::hooks::Hooks::new(settings.hooks.clone()),
    };
    let mut warnings = memory.warnings;
    warnings.extend(ctx.skills.warnings.iter().cloned());
    Ok((config, warnings))
}

/// The tools a session in `ctx`'s workspace offers with `settings`: the built-in ones, and
/// those whose choices come from files and settings. MCP servers' tools join later
/// (`Session::set_mcp`). What could not be used is logged; see `session_tools_and_warnings`.
pub fn session_tools(ctx: &ToolContext, settings: &AgentSettings) -> Vec<Arc<dyn Tool>> {
    let (tools, warnings) = session_tools_and_warnings(ctx, settings);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    tools
}

/// `session_tools`, with the warnings for the user: agent files that could not be used, or
/// were skipped in an untrusted workspace.
pub fn session_tools_and_warnings(
    ctx: &ToolContext,
    settings: &AgentSettings,
) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let diagnostics = ctx.diagnostics.enabled
        && ctx
            .language_servers
            .as_ref()
            .is_some_and(|servers| servers.available());
    let mut tools: Vec<Arc<dyn Tool>> = crate::tools::all()
        .into_iter()
        .filter(|tool| diagnostics || tool.name() != "diagnostics")
        .collect();
    if !ctx.skills.is_empty() {
        tools.push(Arc::new(crate::tools::activate_skill::ActivateSkill::new(
            ctx.skills.clone(),
        )));
    }
    // The subagent tool comes last: its agents choose among the tools before it.
    let user_dir = ctx.user_memory_file.as_deref().and_then(Path::parent);
    let root = ctx.workspace.roots().first().map(PathBuf::as_path);
    let agents =
        crate::subagents::AgentSet::load(&agent_dirs(user_dir, root), settings.workspace_trusted);
    let env = |name: &str| std::env::var(name).ok();
    let models = |name: &str| {
        settings
            .model_settings
            .resolve_model(Some(name), &env)
            .and_then(tandem_providers::Model::new)
            .map_err(|error| error.to_string())
    };
    let (subagent, tool_warnings) =
        crate::tools::subagent::Subagent::new(agents.agents, &tools, settings.subagents, &models);
    tools.push(Arc::new(subagent));
    let mut warnings = agents.warnings;
    warnings.extend(tool_warnings);
    (tools, warnings)
}

/// Where the custom agents of a session in `root` are found (see `subagents::AgentDirs`).
pub fn agent_dirs(user_dir: Option<&Path>, root: Option<&Path>) -> crate::subagents::AgentDirs {
    crate::subagents::AgentDirs::standard(dirs::home_dir().as_deref(), user_dir, root)
}

/// Where the custom commands of a session in `root` are found: the user's home (Gemini CLI's
/// and Claude Code's folders), Tandem's user configuration directory `user_dir`, and the
/// project.
pub fn command_dirs(user_dir: Option<&Path>, root: Option<&Path>) -> CommandDirs {
    CommandDirs::standard(dirs::home_dir().as_deref(), user_dir, root)
}

/// Where the skills of a session in `root` are found: the project's folders, Tandem's user
/// configuration directory `user_dir`, and the user's home (Claude Code's and Gemini CLI's
/// folders).
pub fn skill_dirs(user_dir: Option<&Path>, root: Option<&Path>) -> SkillDirs {
    SkillDirs::standard(dirs::home_dir().as_deref(), user_dir, root)
}

/// The skills a session in `root` with `settings` would find, with the problems met.
pub fn skills(user_dir: Option<&Path>, root: Option<&Path>, settings: &AgentSettings) -> SkillSet {
    crate::skills::discover(&skill_dirs(user_dir, root), settings.workspace_trusted)
}

/// The system instruction for `workspace` with the memory files `memory` finds (returned too,
/// for what it read and its warnings). `Err` when the prompt cannot be built (a missing
/// replacement file).
pub fn system_prompt_with_memory(
    workspace: &Workspace,
    prompt: &PromptConfig,
    memory: &MemoryConfig,
) -> Result<(String, Memory), String> {
    let memory = memory::load(memory, workspace.roots(), None);
    // The model sees where each memory file came from; absolute paths would only add noise
    // (and the user's name) to every request.
    let home = dirs::home_dir().map(|home| std::fs::canonicalize(&home).unwrap_or(home));
    let rendered = memory.render(|path| {
        if workspace.roots().iter().any(|root| path.starts_with(root)) {
            return workspace.display(path);
        }
        match home
            .as_deref()
            .and_then(|home| path.strip_prefix(home).ok())
        {
            Some(relative) => format!("~/{}", relative.display()),
            None => path.display().to_string(),
        }
    });
    Ok((system_prompt(prompt, rendered.as_deref())?, memory))
}

/// Where the sessions of the workspace whose first root is `root` are saved: under `state_dir`
/// (a front end's override, for tests), else `SessionStore::default_state_dir()`. `None` when
/// the `sessions.persist` setting is off or there is no state directory.
pub fn session_store(
    settings: &AgentSettings,
    root: &Path,
    state_dir: Option<&Path>,
) -> Option<crate::store::SessionStore> {
    if !settings.sessions.persist {
        return None;
    }
    let state_dir = match state_dir {
        Some(dir) => dir.to_path_buf(),
        None => crate::store::SessionStore::default_state_dir()?,
    };
    Some(crate::store::SessionStore::for_workspace(&state_dir, root))
}

/// Today's date (UTC) as `YYYY-MM-DD`, for the environment context.
pub fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() / 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day): Howard Hinnant's
/// `civil_from_days`, which counts in 400-year eras that start on March 1st so that leap days
/// fall at the end of a year.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_from_unix_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(today().len(), "2025-01-01".len());
    }
}
